"""rgrad.nn: the functional layer (``rgrad.nn.functional``)."""

from rgrad.nn import functional  # noqa: F401
