"""rgrad.backends: switches of the compute backends (as torch.backends)."""

from rgrad.backends import cuda  # noqa: F401
