"""The legacy ``Variable`` API: since torch 0.4 a Variable *is* a Tensor, and
``Variable(data, requires_grad)`` just returns a tensor."""

from __future__ import annotations

import warnings
from typing import Any

from rgrad import _C
from rgrad._C import Tensor

__all__ = ["Variable"]


class VariableMeta(type):
    """Makes ``isinstance(t, Variable)`` true for every tensor, as in torch."""

    def __instancecheck__(cls, other: Any) -> bool:
        return isinstance(other, Tensor)


class _EngineBase:
    """``Variable._execution_engine``: the backward executor as torch's ``_EngineBase``
    shows it (what hooks of distributed wrappers call)."""

    def queue_callback(self, callback: Any) -> None:
        """Queues ``callback`` to run once the backward pass running on this thread is
        done (see :func:`rgrad.autograd.graph.queue_callback`)."""
        _C._queue_callback(callback)

    def is_checkpoint_valid(self) -> bool:
        """False inside a backward given ``inputs`` (``grad()``, ``backward(inputs=...)``)."""
        return _C._is_checkpoint_valid()


class Variable(metaclass=VariableMeta):
    """``Variable(data=None, requires_grad=False, volatile=False)``: a tensor sharing
    ``data``'s storage, detached from its history, with ``requires_grad`` set.
    ``volatile`` was removed and only warns (use ``with rgrad.no_grad():``)."""

    _execution_engine = _EngineBase()

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = False, volatile: bool = False) -> Any:  # type: ignore[misc]
        if volatile:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                UserWarning,
                stacklevel=2,
            )
        if data is None:
            var = _C.empty(0)
        elif isinstance(data, Tensor):
            var = data.detach()
        else:
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if requires_grad:
            var.requires_grad_(True)
        return var
