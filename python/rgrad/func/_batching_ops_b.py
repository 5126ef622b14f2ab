"""Batching rules of the ordering ops (sort, argsort, msort, topk, kthvalue, median along
a dim): the op runs once on the physical value with its dim moved past the batch dim."""

from __future__ import annotations

from typing import Any

from rgrad._C import stack
from rgrad.func._batched_tensor import dispatch, fallback, wrap_dim
from rgrad.func._batching_common import BT, _at, _other_batched

# op -> (position of dim among the arguments after self, its default; None: required)
_DIM = {"sort": (0, -1), "argsort": (0, -1), "topk": (1, -1), "kthvalue": (1, -1), "median": (0, None)}


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


RULES_B = {n: _ordering for n in ("sort", "argsort", "msort", "topk", "kthvalue", "median")}
