"""Utilities (hook handles)."""

from rgrad.utils import hooks  # noqa: F401
