"""Random ops under vmap: ``randomness`` "error" raises, "same" draws once for the
whole batch, "different" draws per sample, level by level (torch's rules and messages)."""

from __future__ import annotations

from typing import Any

from rgrad.func._batched_tensor import PLAIN, current_layers, dispatch
from rgrad.func._batching_common import (
    BT,
    _at,
    _expand,
    _final,
    _is_tensor,
    _lrank,
    _pad,
    _physical,
    _shape_arg,
)


# ---------------------------------------------------------------------------------------
# Random ops (randomness="error" / "same" / "different", as torch)
# ---------------------------------------------------------------------------------------

_RANDOM_ERROR = (
    "vmap: called random operation while in randomness error mode. Please either use the 'same' or 'different' "
    "randomness flags on vmap or perform the randomness operation out of vmap"
)
_SAME_BATCHED_ERROR = (
    "Vmap does not currently support same randomness with a batched tensor input. Please file an issue with functorch"
)
_INPLACE_DIFFERENT_ERROR = (
    "vmap: Cannot ask for different inplace randomness on an unbatched tensor. This will appear like same "
    "randomness. If this is necessary for your usage, please file an issue with functorch."
)

RANDOM_FACTORIES = ("rand", "randn", "randint", "randperm", "normal")
RANDOM_LIKE = ("rand_like", "randn_like", "randint_like")
RANDOM_INPLACE = ("normal_", "uniform_", "random_", "exponential_", "cauchy_", "geometric_", "log_normal_",
                  "bernoulli_")
RANDOM_INPUT = ("bernoulli", "multinomial")
RANDOM_OPS = RANDOM_FACTORIES + RANDOM_LIKE + RANDOM_INPLACE + RANDOM_INPUT


def random_entry(name: str, args: tuple, kwargs: dict) -> Any:
    """A random op called while this thread is inside vmap (or on a BatchedTensor)."""
    return _random(name, args, kwargs, len(current_layers()))


def _random_rule(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    return _random(name, args, kwargs, len(current_layers()))


def _batched_size_call(name: str, args: tuple, kwargs: dict, n: int, depth: int) -> Any:
    """A factory whose output gets a leading batch dim of ``n`` (its size argument prefixed)."""
    if name in ("rand", "randn"):
        size = _shape_arg(args)
        return _random(name, ((n, *size),), kwargs, depth)
    if name == "randint":
        kwargs = dict(kwargs)
        if "size" in kwargs:
            kwargs["size"] = (n, *kwargs["size"])
            return _random(name, args, kwargs, depth)
        return _random(name, (*args[:-1], (n, *args[-1])), kwargs, depth)
    if name == "normal":
        kwargs = dict(kwargs)
        if "size" in kwargs:
            kwargs["size"] = (n, *kwargs["size"])
            return _random(name, args, kwargs, depth)
        return _random(name, (*args[:2], (n, *args[2])), kwargs, depth)
    # randperm: one permutation per sample
    return dispatch("stack", ([_random(name, args, kwargs, depth) for _ in range(n)],), {})


def _tensor_params(name: str, args: tuple, kwargs: dict) -> list:
    """The tensors a random op reads values of (not only a shape)."""
    if name == "normal":
        return [a for a in (*args[:2], kwargs.get("mean"), kwargs.get("std")) if _is_tensor(a)]
    if name in ("bernoulli", "multinomial"):
        p = args[1] if len(args) > 1 else kwargs.get("p")
        if name == "bernoulli" and p is not None and not _is_tensor(p):
            return []
        return [a for a in (*args[:2], p) if _is_tensor(a)]
    if name == "bernoulli_":
        p = args[1] if len(args) > 1 else kwargs.get("p")
        return [p] if _is_tensor(p) else []
    return []


def _random(name: str, args: tuple, kwargs: dict, depth: int) -> Any:
    if depth == 0:
        return PLAIN[name](*args, **kwargs)
    layer = current_layers()[depth - 1]
    level, n = layer.level, layer.batch_size
    if layer.randomness == "error":
        raise _final(RuntimeError(_RANDOM_ERROR))
    same = layer.randomness == "same"
    params = _tensor_params(name, args, kwargs)
    if same and any(_at(p, level) for p in params):
        raise _final(RuntimeError(_SAME_BATCHED_ERROR))
    if name in RANDOM_INPLACE:
        self = args[0]
        if not _at(self, level):
            if not same:
                raise _final(RuntimeError(_INPLACE_DIFFERENT_ERROR))
            return _random(name, args, kwargs, depth - 1)
        v = self._value
        if same:
            if n:
                sample = dispatch("zeros_like", (v.select(0, 0),), {})
                _random(name, (sample, *args[1:]), kwargs, depth - 1)
                v.copy_(sample)
            return self
        rest = tuple(_pad(a._value, (v.dim() - 1) - (a._value.dim() - 1)) if _at(a, level) else a for a in args[1:])
        _random(name, (v, *rest), kwargs, depth - 1)
        return self
    if same:
        if name in RANDOM_LIKE and _at(args[0], level):
            x = args[0]._value
            sample = _random(name, (x.select(0, 0) if n else x.sum(0), *args[1:]), kwargs, depth - 1)
            return BT(_expand(sample, n).contiguous(), level)
        return _random(name, args, kwargs, depth - 1)
    # different: every sample draws its own numbers
    if name in RANDOM_LIKE:
        return BT(_random(name, (_physical(args[0], level), *args[1:]), kwargs, depth - 1), level)
    if name in RANDOM_FACTORIES and not params:
        return BT(_batched_size_call(name, args, kwargs, n, depth - 1), level)
    # ops that read their tensor arguments' values: those go physical (padded ranks)
    rank = max(_lrank(p, level) for p in params)

    def phys(a: Any) -> Any:
        if not _is_tensor(a):
            return a
        pv = _physical(a, level)
        return _pad(pv, rank - (pv.dim() - 1))

    if name == "multinomial":
        x = phys(args[0])
        if rank == 2:
            rows, classes = x.shape[1], x.shape[2]
            out = _random(name, (x.reshape(n * rows, classes), *args[1:]), kwargs, depth - 1)
            return BT(out.view(n, rows, out.shape[-1]), level)
        return BT(_random(name, (x, *args[1:]), kwargs, depth - 1), level)
    new_args = tuple(phys(a) for a in args)
    new_kwargs = {k: phys(v) for k, v in kwargs.items()}
    return BT(_random(name, new_args, new_kwargs, depth - 1), level)
