"""Helpers shared by the batching rules (``_batching*.py``): what a rule asks of its arguments
at its vmap level (batched or not, logical rank, physical value) and of shapes."""

from __future__ import annotations

from typing import Any

from rgrad import _C
from rgrad._C import Tensor
from rgrad.func._batched_tensor import PLAIN, BatchedTensor, batch_size, max_level

BT = BatchedTensor



def _at(x: Any, level: int) -> bool:
    return type(x) is BT and x._level == level


def _is_tensor(x: Any) -> bool:
    return type(x) is BT or isinstance(x, Tensor)


def _lrank(x: Any, level: int) -> int:
    """The logical rank of ``x`` at ``level``."""
    if type(x) is BT and x._level == level:
        return x._value.dim() - 1
    return x.dim()


def _pad(v: Any, k: int) -> Any:
    """``k`` size-1 dims inserted right after the batch dim of the physical value ``v``."""
    for _ in range(k):
        v = v.unsqueeze(1)
    return v


def _expand(x: Any, n: int) -> Any:
    """The unbatched ``x`` as a physical value of a batch of ``n`` (a stride-0 view)."""
    return x.unsqueeze(0).expand(n, *x.shape)


def _physical(x: Any, level: int) -> Any:
    """The physical value of ``x`` at ``level``: its value, or ``x`` expanded to the batch."""
    if type(x) is BT and x._level == level:
        return x._value
    return _expand(x, batch_size(level))


def _shape_arg(args: tuple) -> tuple:
    """``view(2, 3)`` and ``view((2, 3))`` alike: the sizes as a tuple."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def _numel(shape: Any) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _probe(x: Any) -> Any:
    """A plain stand-in for ``x`` with its logical shape and dtype (a stride-0 view: no memory)."""
    if type(x) is BT:
        shape = tuple(x.shape)
        return _C.zeros((), dtype=x.dtype).expand(*shape) if shape else _C.zeros((), dtype=x.dtype)
    if isinstance(x, (list, tuple)):
        return type(x)(_probe(i) for i in x)
    return x


def _logical_errors(rule):
    """A rule whose shape errors are reported as the op on the logical shapes reports them.

    When the physical computation raises, the op is run on plain stand-ins with the
    logical shapes; its error (torch's text about the shapes the user sees) replaces the
    physical one. Nothing is run on the success path.
    """
    def checked(name: str, level: int, args: tuple, kwargs: dict) -> Any:
        try:
            return rule(name, level, args, kwargs)
        except (RuntimeError, IndexError) as e:
            if getattr(e, "_vmap_final", False):
                raise
            try:
                PLAIN[name](*(_probe(a) for a in args), **{k: _probe(v) for k, v in kwargs.items()})
            except type(e) as logical:
                logical._vmap_final = True
                raise logical from None
            except Exception:  # noqa: BLE001  (a different failure: keep the original)
                pass
            raise

    return checked


def _final(e: Exception) -> Exception:
    e._vmap_final = True
    return e


def _other_batched(args: tuple, kwargs: dict, level: int) -> bool:
    return max_level(args[1:], kwargs) == level
