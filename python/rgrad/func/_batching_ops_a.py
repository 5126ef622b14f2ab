"""Batching rules of flip / fliplr / flipud / roll / rot90, tril / triu (and in place),
diagonal / diag_embed / diag / trace and cumsum / cumprod; see ``_batching.py``.

Each moves the op's dims one place right of the batch dim; an argument that is itself
batched runs the loop fallback; arguments the op refuses for the logical shape raise the
op's own error, found by running it on a stand-in of that shape (``_refuse``).
"""

from __future__ import annotations

from typing import Any

from rgrad.func._batched_tensor import INPLACE, PLAIN, dispatch, fallback, inplace_error, wrap_dim
from rgrad.func._batching_common import BT, _at, _final, _logical_errors, _other_batched, _probe


def _arg(args: tuple, kwargs: dict, pos: int, name: str, default: Any) -> Any:
    """Argument ``name`` (positional index ``pos``, self being 0), or ``default``."""
    if len(args) > pos:
        return args[pos]
    return kwargs.get(name, default)


def _ints(v: Any) -> list:
    return [v] if isinstance(v, int) else list(v)


def _refuse(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    """The op's error for arguments it refuses on the logical shape (run on a stand-in of
    that shape); the loop fallback if the stand-in is accepted after all."""
    try:
        PLAIN[name](*(_probe(a) for a in args), **{k: _probe(v) for k, v in kwargs.items()})
    except (RuntimeError, IndexError, TypeError, NotImplementedError) as e:
        raise _final(e) from None
    return fallback(name, level, args, kwargs)


def _batched_self(name: str, level: int, args: tuple, kwargs: dict) -> bool:
    """Only self is batched at ``level`` (anything else runs the fallback)."""
    if not _at(args[0], level):
        if name in INPLACE:
            raise _final(inplace_error(name))
        return False
    return not ((len(args) > 1 or kwargs) and _other_batched(args, kwargs, level))


def _flip(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    if not _batched_self(name, level, args, kwargs):
        return fallback(name, level, args, kwargs)
    v = args[0]._value
    r = v.dim() - 1
    if name == "fliplr":
        if r < 2:
            raise _final(RuntimeError("Input must be >= 2-d."))
        dims = [1]
    elif name == "flipud":
        if r < 1:
            raise _final(RuntimeError("Input must be >= 1-d."))
        dims = [0]
    elif "dims" in kwargs:
        dims = _ints(kwargs["dims"])
    elif len(args) == 2:
        dims = _ints(args[1])
    else:
        dims = list(args[1:])
    wrapped = [wrap_dim(d, r) for d in dims]
    if len(set(wrapped)) != len(wrapped):
        dup = next(d for i, d in enumerate(wrapped) if d in wrapped[:i])
        raise _final(RuntimeError(f"dim {dup} appears multiple times in the list of dims"))
    if r == 0:
        return BT(dispatch("flip", (v, []), {}), level)
    return BT(dispatch("flip", (v, [d + 1 for d in wrapped]), {}), level)


def _roll(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    if not _batched_self(name, level, args, kwargs):
        return fallback(name, level, args, kwargs)
    v = args[0]._value
    r = v.dim() - 1
    shifts = _arg(args, kwargs, 1, "shifts", None)
    dims = _arg(args, kwargs, 2, "dims", None)
    if shifts is None:
        return _refuse(name, level, args, kwargs)
    shifts = _ints(shifts)
    dims = [] if dims is None else _ints(dims)
    if not dims and len(shifts) == 1:
        flat = v.reshape(v.shape[0], -1)
        return BT(dispatch("roll", (flat, shifts, [1]), {}).reshape(v.shape), level)
    if r == 0 or not shifts or len(shifts) != len(dims):
        return _refuse(name, level, args, kwargs)
    return BT(dispatch("roll", (v, shifts, [wrap_dim(d, r) + 1 for d in dims]), {}), level)


def _rot90(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    if not _batched_self(name, level, args, kwargs):
        return fallback(name, level, args, kwargs)
    v = args[0]._value
    r = v.dim() - 1
    k = _arg(args, kwargs, 1, "k", 1)
    dims = list(_arg(args, kwargs, 2, "dims", (0, 1)))
    if len(dims) != 2 or r < 2:
        return _refuse(name, level, args, kwargs)
    d0, d1 = wrap_dim(dims[0], r), wrap_dim(dims[1], r)
    if d0 == d1:
        return _refuse(name, level, args, kwargs)
    return BT(dispatch("rot90", (v, k, [d0 + 1, d1 + 1]), {}), level)


def _triangle(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    if not _batched_self(name, level, args, kwargs):
        return fallback(name, level, args, kwargs)
    self = args[0]
    if self._value.dim() - 1 < 2:
        raise _final(RuntimeError(f"{name.rstrip('_')}: input tensor must have at least 2 dimensions"))
    out = dispatch(name, (self._value, *args[1:]), kwargs)
    return self if name in INPLACE else BT(out, level)


def _diagonal(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    if not _batched_self(name, level, args, kwargs):
        return fallback(name, level, args, kwargs)
    v = args[0]._value
    r = v.dim() - 1
    offset = _arg(args, kwargs, 1, "offset", 0)
    if name == "diagonal":
        d1, d2 = wrap_dim(_arg(args, kwargs, 2, "dim1", 0), r), wrap_dim(_arg(args, kwargs, 3, "dim2", 1), r)
        if d1 == d2:
            return _refuse(name, level, args, kwargs)
        return BT(dispatch("diagonal", (v, offset, d1 + 1, d2 + 1), {}), level)
    if r == 0:
        return _refuse(name, level, args, kwargs)
    d1 = wrap_dim(_arg(args, kwargs, 2, "dim1", -2), r + 1)
    d2 = wrap_dim(_arg(args, kwargs, 3, "dim2", -1), r + 1)
    if d1 == d2:
        return _refuse(name, level, args, kwargs)
    return BT(dispatch("diag_embed", (v, offset, d1 + 1, d2 + 1), {}), level)


def _diag(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    if not _batched_self(name, level, args, kwargs):
        return fallback(name, level, args, kwargs)
    v = args[0]._value
    r = v.dim() - 1
    if name == "trace":
        if r != 2 or str(v.dtype).endswith("bool"):
            return _refuse(name, level, args, kwargs)
        return BT(dispatch("diagonal", (v, 0, 1, 2), {}).sum(-1), level)
    diagonal = _arg(args, kwargs, 1, "diagonal", 0)
    if r == 1:
        return BT(dispatch("diag_embed", (v, diagonal, 1, 2), {}), level)
    if r == 2:
        return BT(dispatch("diagonal", (v, diagonal, 1, 2), {}).contiguous(), level)
    return _refuse(name, level, args, kwargs)


def _cumulative(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    if not _batched_self(name, level, args, kwargs) or len(args) > 2:
        return fallback(name, level, args, kwargs)
    v = args[0]._value
    r = v.dim() - 1
    dim = _arg(args, kwargs, 1, "dim", None)
    if dim is None:
        return _refuse(name, level, args, kwargs)
    d = wrap_dim(dim, r)
    extra = {"dtype": kwargs["dtype"]} if "dtype" in kwargs else {}
    if r == 0:
        out = dispatch(name, (v.unsqueeze(1), 1), extra)
        if isinstance(out, tuple):  # cummax / cummin: (values, indices)
            return type(out)(*(BT(o.squeeze(1), level) for o in out))
        return BT(out.squeeze(1), level)
    out = dispatch(name, (v, d + 1), extra)
    if isinstance(out, tuple):
        return type(out)(*(BT(o, level) for o in out))
    return BT(out, level)


#: op name -> rule (merged into ``_batching.TABLE``)
RULES_A: dict[str, Any] = {
    "flip": _logical_errors(_flip), "fliplr": _flip, "flipud": _flip,
    "roll": _logical_errors(_roll), "rot90": _logical_errors(_rot90),
    "tril": _triangle, "triu": _triangle, "tril_": _triangle, "triu_": _triangle,
    "diagonal": _logical_errors(_diagonal), "diag_embed": _logical_errors(_diagonal),
    "diag": _logical_errors(_diag), "trace": _diag,
    "cumsum": _logical_errors(_cumulative), "cumprod": _logical_errors(_cumulative),
    "cummax": _logical_errors(_cumulative), "cummin": _logical_errors(_cumulative),
    "logcumsumexp": _logical_errors(_cumulative),
}
