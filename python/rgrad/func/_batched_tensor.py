"""vmap's BatchedTensor, the thread's vmap levels, and the dispatch of an op on BatchedTensors.

A ``BatchedTensor`` is what a function under ``rgrad.func.vmap`` sees in place of a batched
input: a Python object (not an ``rgrad.Tensor`` subclass, so that no native method can ever
compute on it as if it were a plain tensor) holding

* ``_value``: the *physical* tensor, whose dim 0 is the batch dimension (moved there when
  the input was wrapped, with a view), the other dims being the *logical* tensor the
  function sees; for nested vmaps the value of a level-k BatchedTensor may itself be a
  BatchedTensor of a lower level;
* ``_level``: the vmap level (1 for the outermost vmap of this thread, 2 for a vmap inside
  it, ...);
* ``_bdim``: only for printing: the dim the user mapped over when the input was wrapped
  (torch prints it; rgrad keeps the batch dim at 0 everywhere else).

``isinstance(b, rgrad.Tensor)`` is True (``__class__`` is a property returning
``rgrad.Tensor``, as torch's BatchedTensor is a Tensor), ``type(b)`` is ``BatchedTensor``.

Every op on a BatchedTensor (its methods, the function forms that ``_vmap`` swaps into
the ``rgrad`` namespace while a vmap runs, and the Tensor methods swapped for calls on a
plain tensor with a batched argument) goes through ``dispatch(name, args, kwargs)``: the
op runs at the highest level among its BatchedTensor arguments (lower-level ones are
unbatched values there); the rule registered for ``name`` in ``_batching.RULES``
computes on the level's physical values with the ordinary Tensor API (so nested levels
recurse through ``dispatch`` again) and wraps the result; an op without a rule runs
``fallback``: a Python loop over the batch, one call per sample, results stacked, with
torch's performance warning once per op.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

from rgrad._C import Tensor

__all__ = ["BatchedTensor", "dispatch", "current_layers", "batch_size", "randomness_of"]


# ---------------------------------------------------------------------------------------
# vmap levels of this thread
# ---------------------------------------------------------------------------------------

class _Layer:
    """One active vmap of this thread: its level, batch size and randomness flag.

    ``copies``: every sample of this level holds the same values (the batch of
    ``jacobian(vectorize=True)``: copies of its inputs, one per output or input element),
    so an op may compute one sample's forward for all (the samples still get their own
    gradients; in forward mode their tangents differ), and reading values (``.item()``,
    ``bool()``) reads sample 0's, as torch's jacobian (which batches only the derivatives)
    lets the function read its inputs' values.

    ``legacy``: the level a batched backward pass runs a custom Function's backward under
    (torch runs it under its legacy vmap, whose errors for reading values differ).
    """

    __slots__ = ("level", "batch_size", "randomness", "copies", "legacy")

    def __init__(self, level: int, batch_size: int, randomness: str, copies: bool = False,
                 legacy: bool = False) -> None:
        self.level = level
        self.batch_size = batch_size
        self.randomness = randomness
        self.copies = copies
        self.legacy = legacy


_tls = threading.local()


def current_layers() -> list:
    """This thread's active vmap layers, outermost first (layer ``i`` has level ``i + 1``)."""
    try:
        return _tls.layers
    except AttributeError:
        _tls.layers = []
        return _tls.layers


def push_layer(batch_size: int, randomness: str, copies: bool = False, legacy: bool = False) -> int:
    layers = current_layers()
    level = len(layers) + 1
    layers.append(_Layer(level, batch_size, randomness, copies, legacy))
    return level


def copies_level(level: int) -> bool:
    """Whether every sample of ``level`` holds the same values (see ``_Layer``)."""
    return _layer(level).copies


def pop_layer(level: int) -> None:
    layers = current_layers()
    if not layers or layers[-1].level != level:
        raise RuntimeError("vmap: levels were exited out of order")
    layers.pop()


def _layer(level: int) -> _Layer:
    layers = current_layers()
    if 0 < level <= len(layers):
        return layers[level - 1]
    raise RuntimeError(
        f"vmap: a BatchedTensor of level {level} was used outside of the vmap that created it. Return tensors "
        "from the vmapped function instead of keeping BatchedTensors (e.g. in a global or a closure)."
    )


def batch_size(level: int) -> int:
    """The batch size of the active vmap of ``level``."""
    return _layer(level).batch_size


def randomness_of(level: int) -> str:
    return _layer(level).randomness


# ---------------------------------------------------------------------------------------
# Errors (torch's messages)
# ---------------------------------------------------------------------------------------

_ITEM_ERROR = (
    "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling .item() on a "
    "Tensor, please try to rewrite what you're doing with other operations. If error is occurring somewhere inside "
    "PyTorch internals, please file a bug report."
)
_CONTROL_FLOW_ERROR = (
    "vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. We don't support "
    "that yet, please file an issue at https://github.com/pytorch/pytorch/issues ."
)
_DATA_ERROR = "Cannot access data pointer of Tensor that doesn't have storage"
# torch's legacy vmap's (a custom Function's backward in a batched backward pass)
_LEGACY_ERRORS = {
    _ITEM_ERROR: "Batching rule not implemented for aten::item. We could not generate a fallback.",
    _CONTROL_FLOW_ERROR: "Batching rule not implemented for aten::is_nonzero. We could not generate a fallback.",
}
_BACKWARD_ERROR = (
    "backward() called inside a functorch transform. This is not supported, please use functorch.grad or "
    "functorch.vjp instead or call backward() outside of functorch transforms."
)


# how torch names the in-place op in that error (its batching rules differ in this)
_INPLACE_ARITHMETIC = {"add_", "sub_", "mul_", "div_", "copy_", "__iadd__", "__isub__", "__imul__", "__itruediv__",
                       "__setitem__", "logical_and_", "logical_or_"}
_INPLACE_BARE = {"fill_", "masked_fill_", "index_put_"}


def inplace_error(op: str) -> RuntimeError:
    """torch's error for an in-place op whose ``self`` is not batched but another argument is."""
    if op in _INPLACE_ARITHMETIC:
        what = "inplace arithmetic"
    elif op in _INPLACE_BARE:
        what = op
    else:
        what = "aten::" + {"__ipow__": "pow_"}.get(op, op)
    return RuntimeError(
        f"vmap: {what}(self, *extra_args) is not possible because there exists a Tensor `other` in extra_args that "
        "has more elements than `self`. This happened due to `other` being vmapped over but `self` not being "
        f"vmapped over in a vmap. Please try to use out-of-place operators instead of {what}. If said operator is "
        "being called inside the PyTorch framework, please file a bug report instead."
    )


def wrap_dim(dim: Any, rank: int) -> int:
    """``dim`` wrapped into ``[0, rank)`` (a 0-d tensor accepts -1 and 0), with torch's IndexError."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        try:
            dim = dim.__index__()
        except AttributeError:
            raise TypeError(f"dim must be an int, got {type(dim).__name__}") from None
    m = max(rank, 1)
    if not -m <= dim < m:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-m}, {m - 1}], but got {dim})")
    return dim + m if dim < 0 else dim


# ---------------------------------------------------------------------------------------
# BatchedTensor
# ---------------------------------------------------------------------------------------

def _size_type():
    from rgrad._tensor import Size

    return Size


class BatchedTensor:
    """A tensor batched by ``rgrad.func.vmap``: what the vmapped function sees (see the module docstring)."""

    __slots__ = ("_value", "_level", "_bdim", "__weakref__")

    def __init__(self, value: Any, level: int, bdim: int = 0) -> None:
        self._value = value
        self._level = level
        self._bdim = bdim

    # isinstance(b, rgrad.Tensor) is True, as for torch's BatchedTensor; type(b) is BatchedTensor
    @property
    def __class__(self):  # noqa: D105
        return Tensor

    __hash__ = object.__hash__

    # ---- logical metadata -------------------------------------------------------------
    @property
    def shape(self):
        return _size_type()(self._value.shape[1:])

    def size(self, dim: int | None = None):
        shape = self._value.shape[1:]
        if dim is None:
            return _size_type()(shape)
        return shape[wrap_dim(dim, len(shape))] if shape else 1

    def dim(self) -> int:
        return self._value.dim() - 1

    ndimension = dim

    @property
    def ndim(self) -> int:
        return self._value.dim() - 1

    def numel(self) -> int:
        n = 1
        for d in self._value.shape[1:]:
            n *= d
        return n

    nelement = numel

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def device(self):
        return self._value.device

    is_cuda = False

    def is_floating_point(self) -> bool:
        return self._value.is_floating_point()

    def element_size(self) -> int:
        return self._value.element_size()

    def stride(self, dim: int | None = None):
        strides = tuple(self._value.stride())[1:]
        if dim is None:
            return strides
        return strides[wrap_dim(dim, len(strides))]

    def storage_offset(self) -> int:
        return self._value.storage_offset()

    def is_contiguous(self, memory_format: Any = None) -> bool:
        expected = 1
        for size, stride in reversed(list(zip(self._value.shape[1:], self.stride()))):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True

    def __len__(self) -> int:
        shape = self._value.shape
        if len(shape) == 1:
            raise TypeError("len() of a 0-d tensor")
        return shape[1]

    def __iter__(self):
        if self._value.dim() == 1:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    @property
    def T(self):  # noqa: N802  (torch's name)
        n = self.dim()
        return self.t() if n <= 2 else self.permute(*range(n - 1, -1, -1))

    # ---- autograd metadata: the physical tensor's (rgrad has no levels; see _vmap) ------
    @property
    def requires_grad(self) -> bool:
        return self._value.requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self._value.requires_grad = flag

    def requires_grad_(self, requires_grad: bool = True):
        self._value.requires_grad_(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return self._value.is_leaf

    @property
    def grad_fn(self):
        return self._value.grad_fn

    @property
    def grad(self):
        g = self._value.grad
        return None if g is None else BatchedTensor(g, self._level)

    @property
    def data(self):
        return BatchedTensor(self._value.data, self._level)

    @property
    def output_nr(self) -> int:
        return self._value.output_nr

    @property
    def _version(self) -> int:
        return self._value._version

    def retain_grad(self) -> None:
        self._value.retain_grad()

    @property
    def retains_grad(self) -> bool:
        return self._value.retains_grad

    def register_hook(self, hook):
        level = self._level

        def physical_hook(grad):
            out = hook(BatchedTensor(grad, level))
            return out._value if type(out) is BatchedTensor else out

        return self._value.register_hook(physical_hook)

    def backward(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(_BACKWARD_ERROR)

    # ---- reading values: what vmap cannot do (torch's errors), except on a level of copies
    # (every sample the same values, see _Layer), where sample 0's values are everyone's
    def _sample(self, error: str) -> Any:
        layer = _layer(self._level)
        if not layer.copies:
            raise RuntimeError(_LEGACY_ERRORS.get(error, error) if layer.legacy else error)
        return self._value.select(0, 0)

    def item(self):
        return self._sample(_ITEM_ERROR).item()

    def __float__(self) -> float:
        return float(self._sample(_ITEM_ERROR))

    def __int__(self) -> int:
        return int(self._sample(_ITEM_ERROR))

    def __index__(self) -> int:
        return self._sample(_ITEM_ERROR).__index__()

    def __complex__(self) -> complex:
        return complex(self._sample(_ITEM_ERROR).item())

    def __bool__(self) -> bool:
        return bool(self._sample(_CONTROL_FLOW_ERROR))

    def tolist(self):
        return self._sample(_DATA_ERROR).tolist()

    def numpy(self, *, force: bool = False):
        return self._sample(_DATA_ERROR).numpy(force=force)

    def __array__(self, dtype: Any = None, copy: Any = None):
        return self._sample(_DATA_ERROR).__array__(dtype)

    def data_ptr(self) -> int:
        raise RuntimeError(_DATA_ERROR)

    # ---- unbatched results ------------------------------------------------------------------
    def new_zeros(self, *size, **kwargs):
        return self._value.new_zeros(*size, **kwargs)

    def new_ones(self, *size, **kwargs):
        return self._value.new_ones(*size, **kwargs)

    def new_tensor(self, data, **kwargs):
        return self._value.new_tensor(data, **kwargs)

    def cpu(self, memory_format: Any = None):
        return self

    def type(self, dtype: Any = None, non_blocking: bool = False, **kwargs: Any):
        if dtype is None:
            return self._value.type()
        return dispatch("type", (self, dtype), {"non_blocking": non_blocking, **kwargs})

    # ---- printing (torch's format) -----------------------------------------------------
    def __repr__(self) -> str:
        value = self._value
        if self._bdim != 0:
            value = movedim(value, 0, self._bdim)
        inner = "\n".join("    " + line if line else line for line in repr(value).split("\n"))
        return f"BatchedTensor(lvl={self._level}, bdim={self._bdim}, value=\n{inner}\n)"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self) if not spec else format(str(self), spec)


def movedim(t: Any, source: int, destination: int) -> Any:
    """``t.movedim(source, destination)`` (rgrad has no movedim): a permute view, or ``t`` itself."""
    n = t.dim()
    source, destination = wrap_dim(source, n), wrap_dim(destination, n)
    if source == destination:
        return t
    perm = list(range(n))
    perm.pop(source)
    perm.insert(destination, source)
    return t.permute(*perm)


# ---------------------------------------------------------------------------------------
# Dispatch
# ---------------------------------------------------------------------------------------

#: name -> the op on unbatched arguments (filled by _batching)
PLAIN: dict[str, Any] = {}
#: name -> rule(name, level, args, kwargs) (filled by _batching)
RULES: dict[str, Any] = {}
#: names of in-place ops (self is written)
INPLACE: set[str] = set()


def _max_level_of(values: Any, level: int) -> int:
    """``level`` raised to the highest vmap level of the BatchedTensors among ``values`` (also one list/tuple deep)."""
    for a in values:
        t = type(a)
        if t is BatchedTensor:
            if a._level > level:
                level = a._level
        elif t is list or t is tuple:
            for x in a:
                if type(x) is BatchedTensor and x._level > level:
                    level = x._level
    return level


def max_level(args: tuple, kwargs: dict | None = None) -> int:
    """The highest vmap level of the BatchedTensors in ``args`` (also one list/tuple deep) and ``kwargs``; -1: none."""
    level = _max_level_of(args, -1)
    return _max_level_of(kwargs.values(), level) if kwargs else level


def dispatch(name: str, args: tuple, kwargs: dict) -> Any:
    """Runs op ``name`` on ``args``: the plain op when nothing is batched, else its rule or the loop fallback."""
    level = max_level(args, kwargs)
    if level < 0:
        return PLAIN[name](*args, **kwargs)
    rule = RULES.get(name)
    if rule is None:
        return fallback(name, level, args, kwargs)
    return rule(name, level, args, kwargs)


# ---------------------------------------------------------------------------------------
# The fallback: a loop over the batch
# ---------------------------------------------------------------------------------------

_warned: set = set()
_warned_lock = threading.Lock()


def warn_fallback(name: str, stacklevel: int = 4, prefix: str = "aten::") -> None:
    """torch's performance warning, once per op per process (``prefix``: how the op is
    named; a backward node looped over by ``grad(is_grads_batched=True)`` has none)."""
    with _warned_lock:
        if prefix + name in _warned:
            return
        _warned.add(prefix + name)
    warnings.warn(
        f"There is a performance drop because we have not yet implemented the batching rule for {prefix}{name}. "
        "Please file us an issue on GitHub so that we can prioritize its implementation.",
        UserWarning,
        stacklevel=stacklevel,
    )


def _select(x: Any, level: int, b: int) -> Any:
    t = type(x)
    if t is BatchedTensor:
        return x._value.select(0, b) if x._level == level else x
    if t is list or t is tuple:
        return t(_select(i, level, b) for i in x)
    return x


def stack_results(results: list, level: int, name: str) -> Any:
    """Per-sample results of an op stacked into batched results (same structure)."""
    first = results[0]
    if isinstance(first, Tensor):
        return BatchedTensor(dispatch("stack", (results,), {"dim": 0}), level)
    if isinstance(first, tuple):
        items = [stack_results([r[i] for r in results], level, name) for i in range(len(first))]
        return type(first)(*items) if hasattr(type(first), "_fields") else tuple(items)
    if isinstance(first, list):
        return [stack_results([r[i] for r in results], level, name) for i in range(len(first))]
    if all(r == first for r in results):
        return first
    raise RuntimeError(f"vmap: {name} returned a non-Tensor value that differs across the batch; this can't be "
                       "batched (compute it with Tensor operations instead)")


def fallback(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    """The op applied to each sample in turn (the batch's values selected at dim 0), results stacked."""
    warn_fallback(name)
    inplace = name in INPLACE
    if inplace and not (type(args[0]) is BatchedTensor and args[0]._level == level):
        raise inplace_error(name)
    n = batch_size(level)
    op = PLAIN[name]
    if n == 0:
        return _fallback_empty(name, level, args, kwargs)
    results = []
    for b in range(n):
        sample_args = tuple(_select(a, level, b) for a in args)
        sample_kwargs = {k: _select(v, level, b) for k, v in kwargs.items()}
        results.append(dispatch(name, sample_args, sample_kwargs) if max_level(sample_args, sample_kwargs) >= 0
                       else op(*sample_args, **sample_kwargs))
    if inplace:
        return args[0]
    return stack_results(results, level, name)


def _fallback_empty(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    """A batch of size 0: the op on zeros shaped as one sample gives the shapes; the result is empty."""
    sample = dispatch(name, tuple(_zero_sample(a, level) for a in args),
                      {k: _zero_sample(v, level) for k, v in kwargs.items()})
    if name in INPLACE:
        return args[0]
    return _empty_batch(sample, level)


# (module-level rather than closures that call themselves, which are reference cycles)
def _zero_sample(x: Any, level: int) -> Any:
    t = type(x)
    if t is BatchedTensor and x._level == level:
        # summing the empty batch dim gives zeros shaped as one sample (any nesting)
        return dispatch("zeros_like", (x._value.sum(0),), {"dtype": x.dtype})
    if t is list or t is tuple:
        return t(_zero_sample(i, level) for i in x)
    return x


def _empty_batch(r: Any, level: int) -> Any:
    if isinstance(r, Tensor):
        return BatchedTensor(r.unsqueeze(0).narrow(0, 0, 0), level)
    if isinstance(r, tuple):
        items = [_empty_batch(i, level) for i in r]
        return type(r)(*items) if hasattr(type(r), "_fields") else tuple(items)
    return r
