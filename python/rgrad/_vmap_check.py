"""Whether an argument is one of vmap's BatchedTensors, for the Python-side ops that
dispatch them to their batching rule.

``rgrad.func`` imports this package, so the ops cannot import it at module load; an
``import`` statement in the op itself costs 2-3 µs a call (the import machinery runs
even when the module is loaded), more than a small op's kernel. The class is looked up
once, on the first call.
"""

from __future__ import annotations

from typing import Any

_cls: Any = None


def batched_tensor_class() -> Any:
    """``rgrad.func._batched_tensor.BatchedTensor``."""
    global _cls
    if _cls is None:
        from rgrad.func._batched_tensor import BatchedTensor

        _cls = BatchedTensor
    return _cls


def is_batched(*args: Any) -> bool:
    """Whether any of ``args`` is a BatchedTensor."""
    cls = _cls if _cls is not None else batched_tensor_class()
    for a in args:
        if isinstance(a, cls):
            return True
    return False
