"""Batching rules of the ordering ops (sort, argsort, msort, topk, kthvalue, median,
nanmedian and mode along a dim): the op runs once on the physical value with its dim moved past the batch dim."""

from __future__ import annotations

from typing import Any

from rgrad._C import stack
from rgrad.func._batched_tensor import dispatch, fallback, inplace_error, wrap_dim
from rgrad.func._batching_common import BT, _at, _final, _other_batched

# op -> (position of dim among the arguments after self, its default; None: required)
_DIM = {"sort": (0, -1), "argsort": (0, -1), "topk": (1, -1), "kthvalue": (1, -1), "median": (0, None),
        "nanmedian": (0, None), "mode": (0, -1)}


def _ordering(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    self = args[0]
    if not _at(self, level) or _other_batched(args, kwargs, level):
        return fallback(name, level, args, kwargs)
    v = self._value
    r = v.dim() - 1
    if r == 0:
        return fallback(name, level, args, kwargs)  # (0-d samples: as the loop does)
    if name == "msort":
        return BT(dispatch("sort", (v, 1), {})[0], level)
    rest = list(args[1:])
    kwargs = dict(kwargs)
    pos, default = _DIM[name]
    if len(rest) > pos:
        rest[pos] = wrap_dim(rest[pos], r) + 1
    elif "dim" in kwargs:
        kwargs["dim"] = wrap_dim(kwargs["dim"], r) + 1
    elif default is None:
        # median() of each whole sample: its own op per sample (MedianBackward0 shares a
        # gradient among ties as median along a dim would not)
        return BT(stack([dispatch(name, (v[b], *rest), kwargs) for b in range(v.shape[0])]), level)
    else:
        kwargs["dim"] = wrap_dim(default, r) + 1
    out = dispatch(name, (v, *rest), kwargs)
    if isinstance(out, tuple):
        return type(out)(*(BT(o, level) for o in out))
    return BT(out, level)


RULES_B = {n: _ordering for n in ("sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode")}


# ---- the scatter family: every tensor operand given the batch dim (an unbatched one
# expanded), the dim moved past it; the op then runs once per call


def _phys(t: Any, level: int, b: int) -> Any:
    """``t``'s physical value at ``level`` (batch dim 0), an unbatched ``t`` expanded."""
    if _at(t, level):
        return t._value
    return t.unsqueeze(0).expand(b, *t.shape)


def _scatter_like(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    from rgrad.func._batching_common import _is_tensor, _lrank

    tensors = [a for a in (*args, *kwargs.values()) if _is_tensor(a)]
    batched = [t for t in tensors if _at(t, level)]
    self = args[0]
    inplace = name.endswith("_")
    if inplace and batched and not _at(self, level):
        raise _final(inplace_error(name))
    if len(args) < 3 or not batched or (inplace and not _at(self, level)) or _lrank(self, level) == 0:
        return fallback(name, level, args, kwargs)
    b = batched[0]._value.shape[0]
    r = _lrank(self, level)
    d = wrap_dim(args[1], r) + 1
    index = args[2]
    rest = list(args[3:])
    if name.rstrip("_") in ("scatter", "scatter_add", "scatter_reduce"):
        if _lrank(index, level) != r:
            return fallback(name, level, args, kwargs)  # (the op's own rank error, per sample)
        index = _phys(index, level, b)
        if rest and _is_tensor(rest[0]):
            if _lrank(rest[0], level) != r:
                return fallback(name, level, args, kwargs)
            rest[0] = _phys(rest[0], level, b)
    else:  # index_add / index_copy / index_fill: a 1-D index shared by the samples
        if _at(index, level) or any(_at(v, level) for v in kwargs.values()):
            return fallback(name, level, args, kwargs)
        if rest and _is_tensor(rest[0]) and name.rstrip("_") != "index_fill":
            if _lrank(rest[0], level) != r:
                return fallback(name, level, args, kwargs)
            rest[0] = _phys(rest[0], level, b)
        elif rest and _at(rest[0], level):
            return fallback(name, level, args, kwargs)  # (a batched fill value)
    out = dispatch(name, (_phys(self, level, b), d, index, *rest), kwargs)
    return self if inplace else BT(out, level)


def _take_along_dim_rule(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    # the composite itself (expand / view + gather), each op batched by its own rule
    from rgrad._ops_b import _take_along_dim

    return _take_along_dim(*args, **kwargs)


_SCATTER_NAMES = ("scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy", "index_fill")
RULES_B.update({n: _scatter_like for base in _SCATTER_NAMES for n in (base, f"{base}_")})
RULES_B["take_along_dim"] = _take_along_dim_rule
