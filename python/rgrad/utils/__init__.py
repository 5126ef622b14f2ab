"""Utilities (hook handles, activation checkpointing)."""

import importlib

from rgrad.utils import hooks  # noqa: F401


def __getattr__(name: str):
    # rgrad.utils.checkpoint on first use: it needs rgrad.autograd, which needs hooks
    if name == "checkpoint":
        return importlib.import_module("rgrad.utils.checkpoint")
    raise AttributeError(f"module 'rgrad.utils' has no attribute '{name}'")
