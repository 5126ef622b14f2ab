"""Views, scatters and copies (helper-44): the ``*_scatter`` functions (select, slice,
diagonal, as_strided), ``masked_scatter``, ``index_reduce``, ``put``, ``renorm``,
``split_with_sizes`` and the ``unsafe_*`` splits, and the ``*_copy`` functions torch
exposes for its views (``permute_copy``, ``select_copy``, ...). ``as_strided`` and
``unfold`` are native views (``src/ops/strided.rs``).

Each is computed from the existing ops (a clone written through a view, ``index_put``,
``scatter_reduce``, a norm and a product), which give the gradient, its own gradient,
forward-mode tangents and vmap batching. Where torch records a node of its own
(SelectScatterBackward0, PermuteBackward0_copy, ...), the result is passed through a
custom Function carrying torch's node name and ``_saved_*`` fields, whose derivative is
the identity (backward and forward mode): the node's ``next_functions`` are the last op
of the composite, not torch's.

Some are torch's kernels instead (helper-48): the ``unsafe_*`` splits are native
(``Tensor._unsafe_split``: pieces sharing the input's storage that are not views); the
four region scatters copy the input's storage with its geometry
(``Tensor._clone_preserve_strides``) and ``copy_`` src into the region, recorded by a
custom Function with torch's derivatives and edges (the map of positions stays for
vmap); ``masked_scatter`` and ``put`` write in place into their copy when nothing is
recorded.
"""

from __future__ import annotations

import builtins
import numbers
import threading
from typing import Any

from rgrad import _C
from rgrad._C import Tensor
from rgrad._vmap_check import batched_tensor_class

__all__ = [
    "as_strided", "as_strided_copy", "as_strided_scatter", "select_scatter", "slice_scatter", "diagonal_scatter",
    "masked_scatter", "index_reduce", "put", "renorm", "split_with_sizes", "unsafe_chunk", "unsafe_split",
    "unsafe_split_with_sizes", "alias_copy", "detach_copy", "diagonal_copy", "expand_copy", "permute_copy",
    "select_copy", "slice_copy", "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy", "unfold_copy",
    "unsqueeze_copy", "view_copy", "narrow_copy", "split_copy", "split_with_sizes_copy", "index_put", "index_put_",
]


# ---- torch's nodes over a composite ------------------------------------------------------

_NODES: dict[tuple[str, bool], Any] = {}


def _shown(v: Any) -> Any:
    """A saved int as torch shows it: a negative one as the unsigned 64-bit value torch's
    ``_saved_`` getters give (``-1`` shows as ``2**64 - 1``); tuples element by element."""
    if isinstance(v, bool) or not isinstance(v, (int, tuple, list)):
        return v
    if isinstance(v, int):
        return v % 2**64
    return tuple(_shown(i) for i in v)


def _node(name: str, multi: bool) -> Any:
    """The custom Function named ``name`` passing its tensors through unchanged (one
    result, or a tuple when ``multi``), its ``fields`` shown as ``_saved_<field>``."""
    cls = _NODES.get((name, multi))
    if cls is not None:
        return cls
    from rgrad.autograd import Function

    def forward(ctx, fields, *outs):
        for k, v in fields.items():
            setattr(ctx, "_saved_" + k, v)
        res = tuple(o.detach() for o in outs)
        return res if multi else res[0]

    def backward(ctx, *grads):
        return (None, *grads)

    def jvp(ctx, _fields, *tangents):
        return tuple(tangents) if multi else tangents[0]

    cls = type(f"_{name}", (Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward),
                                        "jvp": staticmethod(jvp)})
    cls._backward_cls.__name__ = cls._backward_cls.__qualname__ = name
    _NODES[(name, multi)] = cls
    return cls


_LAZY: dict[str, Any] = {}


def _autograd_off(*tensors: Tensor) -> bool:
    """Whether an op on `tensors` needs neither a node (no input requires grad, or grad
    mode is off) nor tangents (no forward-AD level is open): then its values are all."""
    fwad = _LAZY.get("fwad")
    if fwad is None:
        from rgrad.autograd import forward_ad as fwad

        _LAZY["fwad"] = fwad
    if fwad._current_level >= 0:
        return False
    return not (_C.is_grad_enabled() and any(t.requires_grad for t in tensors))


def _records(*tensors: Any) -> bool:
    """Whether autograd records an op on ``tensors``: grad mode on, one requires grad
    (vmap's BatchedTensors decompose into their batched ops, recorded there)."""
    if not _C.is_grad_enabled():
        return False
    batched, wanted = batched_tensor_class(), False
    for t in tensors:
        if isinstance(t, Tensor):
            if type(t) is batched:
                return False
            wanted = wanted or t.requires_grad
    return wanted


def _named(name: str, fields, out: Tensor, *inputs: Any) -> Tensor:
    """``out`` (computed from ``inputs``) recorded under torch's node ``name``; `fields`
    is a dict, or a function making it (called only when recording)."""
    if not _records(*inputs):
        return out
    if callable(fields):
        fields = fields()
    return _node(name, False).apply({k: _shown(v) for k, v in fields.items()}, out)


def _named_multi(name: str, fields, outs: tuple, *inputs: Any) -> tuple:
    """A tuple of results recorded under one node ``name`` (torch's split family)."""
    if not _records(*inputs) or not outs:
        return tuple(outs)
    if callable(fields):
        fields = fields()
    return tuple(_node(name, True).apply({k: _shown(v) for k, v in fields.items()}, *outs))


_INPLACE_NODES: dict[str, Any] = {}


def _inplace_node(name: str) -> Any:
    """The custom Function named ``name`` writing ``out`` into ``self`` (marked dirty):
    the gradient goes to ``out``'s history (which already reaches ``self``'s old one
    through the composite), none to the overwritten values."""
    cls = _INPLACE_NODES.get(name)
    if cls is not None:
        return cls
    from rgrad.autograd import Function

    def forward(ctx, fields, self_, out):
        for k, v in fields.items():
            setattr(ctx, "_saved_" + k, v)
        ctx.mark_dirty(self_)
        return self_.copy_(out)

    def backward(ctx, grad):
        return None, None, grad

    def jvp(ctx, _fields, _self_t, out_t):
        return out_t

    cls = type(f"_Inplace{name}", (Function,), {"forward": staticmethod(forward),
                                               "backward": staticmethod(backward), "jvp": staticmethod(jvp)})
    cls._backward_cls.__name__ = cls._backward_cls.__qualname__ = name
    _INPLACE_NODES[name] = cls
    return cls


def _write(self: Tensor, name: str, fields: dict, compute, *others: Any, save_self: bool = False) -> Tensor:
    """``self`` overwritten in place by ``compute(self)`` (the out-of-place op, its checks
    first), recorded as torch's node ``name``; ``compute`` gets a clone when recording, so
    that what its ops save is not the tensor the write changes."""
    import rgrad
    from rgrad._aliases import _check_leaf

    if not _records(self, *others):
        out = compute(self)
        with rgrad.no_grad():
            return self.copy_(out)
    _check_leaf(self)
    orig = self.clone()
    out = compute(orig)
    if save_self:  # (torch's _saved_self of the in-place form: the values before the write)
        fields = {**fields, "self": orig.detach()}
    return _inplace_node(name).apply({k: _shown(v) for k, v in fields.items()}, self, out)


def _dense_copy(t: Tensor) -> Tensor:
    """A row-major copy of ``t`` (never ``t`` itself, nor a view of it)."""
    return t.clone() if t.is_contiguous() else t.contiguous()


def _check_tensor(fn: str, x: Any, name: str, pos: int) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not {type(x).__name__}")


def _int(fn: str, v: Any, name: str, pos: int) -> int:
    if type(v) is int:  # (the common case, before the checks of bool and Integral)
        return v
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be int, not {type(v).__name__}")
    return int(v)


def _ints(fn: str, v: Any, name: str, pos: int) -> list[int]:
    if (type(v) is list or type(v) is tuple) and all(type(i) is int for i in v):  # (the common case)
        return list(v)
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return [int(v)]
    if not isinstance(v, (tuple, list)) or not all(isinstance(i, numbers.Integral) and not isinstance(i, bool)
                                                   for i in v):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be tuple of ints, not "
                        f"{type(v).__name__}")
    return [int(i) for i in v]


def _wrap_dim(d: int, n: int) -> int:
    lo, hi = (-1, 0) if n == 0 else (-n, n - 1)
    if not lo <= d <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {d})")
    return d + n if d < 0 else d


def _dtype_name(dtype) -> str:
    from rgrad._tensor import _scalar_type_name

    return _scalar_type_name(dtype)


# ---- as_strided ------------------------------------------------------------------------


def as_strided(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:  # noqa: A002
    """A view of `input`'s storage with the given `size`, `stride` and `storage_offset`
    (None: `input`'s own offset); see ``Tensor.as_strided``."""
    _check_tensor("as_strided", input, "input", 1)
    return input.as_strided(size, stride, storage_offset)


def as_strided_copy(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:  # noqa: A002
    """A copy of ``input.as_strided(size, stride, storage_offset)`` (AsStridedBackward0_copy)."""
    _check_tensor("as_strided_copy", input, "input", 1)
    out = _dense_copy(input.as_strided(size, stride, storage_offset))
    return _named("AsStridedBackward0_copy", {"size": tuple(size), "stride": tuple(stride),
                                               "storage_offset": storage_offset}, out, input)


def _same_size(src: Tensor, slot: Tensor) -> None:
    if tuple(src.shape) != tuple(slot.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(slot.shape)}")


def _map_like(input: Tensor) -> Tensor:
    """An int64 tensor of -1s of `input`'s shape, its dims in the order of `input`'s strides
    (as the clone torch writes into: an ``as_strided`` region of it is the same elements)."""
    shape = list(input.shape)
    device = input.device
    if type(input) is batched_tensor_class() or input.is_contiguous():
        return _C.full(shape, -1, dtype=_C.int64, device=device)
    order = sorted(range(len(shape)), key=lambda d: -input.stride(d))
    inverse = [order.index(d) for d in range(len(shape))]
    return _C.full([shape[d] for d in order], -1, dtype=_C.int64, device=device).permute(inverse)


def _scatter_into(fn: str, input: Tensor, src: Tensor, view) -> Tensor:  # noqa: A002
    """A copy of `input` with the region ``view(copy)`` set to `src` (torch's ``*_scatter``:
    the region's size must be src's), out of place: each element of the region takes the
    element of `src` a map of positions names (``index_select``), the others `input`'s
    (``where``), so that vmap batches it whichever operand is batched."""
    _check_tensor(fn, input, "input", 1)
    _check_tensor(fn, src, "src", 2)
    positions = _map_like(input)
    region = view(positions)
    _same_size(src, region)
    if src.numel() == 0:
        return input.clone()
    region.copy_(_C.arange(src.numel(), device=positions.device).view(list(src.shape)))
    placed = src.to(input.dtype).reshape(-1).index_select(0, positions.clamp(min=0).reshape(-1))
    return placed.view(list(input.shape)).where(positions >= 0, input)


def _scatter_kernel(input: Tensor, src: Tensor, view) -> Tensor:  # noqa: A002
    """torch's ``*_scatter`` kernel: a copy of `input`'s storage with `input`'s geometry
    (its ``clone_preserve_strides``), its region ``view(copy)`` overwritten by `src`."""
    out = input._clone_preserve_strides()
    region = view(out)
    _same_size(src, region)
    region.copy_(src)
    return out


_SCATTER_NODES: dict[str, Any] = {}
# a scatter's fields and arguments, handed to its Function's forward on this thread (as
# arguments of apply, they would be edges of the node, where torch's has two)
_SCATTER_CALL = threading.local()


def _scatter_node(name: str, fn) -> Any:
    """The custom Function recording the scatter ``fn(input, src, *args)`` (whose region
    of a tensor is ``_REGIONS[name](t, *args)``) as torch's node `name`, with torch's
    derivatives: the input's gradient is the same scatter of zeros into the gradient, the
    source's the gradient's region; tangents scatter as the values do."""
    cls = _SCATTER_NODES.get(name)
    if cls is not None:
        return cls
    from rgrad.autograd import Function

    region = _REGIONS[name]

    def forward(ctx, input, src):  # noqa: A002
        fields, args, ctx.args = _SCATTER_CALL.pending
        for k, v in fields.items():
            setattr(ctx, "_saved_" + k, v)
        ctx.src_shape, ctx.src_dtype, ctx.out_shape = tuple(src.shape), src.dtype, tuple(input.shape)
        return _scatter_kernel(input.detach(), src.detach(), lambda t: region(t, *args))

    def backward(ctx, g):
        gi = gs = None
        if name == _AS_STRIDED:
            g = _own_row_major(g)
        if ctx.needs_input_grad[0]:
            gi = fn(g, g.new_zeros(ctx.src_shape), *ctx.args)
        if ctx.needs_input_grad[1]:
            if name == _AS_STRIDED and type(g) is batched_tensor_class():
                # (vmap over the backward: the region's elements picked by position, as a
                # batched as_strided would read the batch's storage)
                size, stride, offset = ctx.args
                numel = 1
                for n in ctx.out_shape:
                    numel *= n
                at = _C.arange(numel, device=g.device).as_strided(size, stride, offset or 0)
                gs = g.reshape(-1).index_select(0, at.reshape(-1)).view(list(ctx.src_shape))
            else:
                gs = region(g, *ctx.args)
            gs = gs.to(ctx.src_dtype)
        return gi, gs

    def jvp(ctx, ti, ts):
        if name == _AS_STRIDED and ti is not None:
            ti = _own_row_major(ti)
        if ti is None:
            return None if ts is None else fn(ts.new_zeros(ctx.out_shape), ts, *ctx.args)
        return fn(ti, ti.new_zeros(ctx.src_shape) if ts is None else ts, *ctx.args)

    cls = type(f"_{name}", (Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward),
                                        "jvp": staticmethod(jvp)})
    cls._backward_cls.__name__ = cls._backward_cls.__qualname__ = name
    _SCATTER_NODES[name] = cls
    return cls


def _own_row_major(t: Tensor) -> Tensor:
    """`t` copied row-major into a storage of its own, at offset 0: the geometry of
    as_strided_scatter's output when it is recorded, so that a region of its storage is
    the same elements of `t`."""
    return t.clone() if t.is_contiguous() else t.contiguous()


def _scatter(name: str, fn, input: Tensor, src: Tensor, args: tuple, fields: dict,  # noqa: A002
             grad_args: tuple | None = None) -> Tensor:
    """``fn(input, src, *args)``: torch's kernel, recorded as its node `name` when autograd
    asks for one (under vmap, the composite over a map of positions, which batches); the
    node's derivatives are the scatter with `grad_args` (default: `args`)."""
    bt = batched_tensor_class()
    if type(input) is bt or type(src) is bt:
        out = _scatter_into(fn.__name__, input, src, lambda t: _REGIONS[name](t, *args))
        return _named(name, fields, out, input, src)
    if _autograd_off(input, src):
        return _scatter_kernel(input, src, lambda t: _REGIONS[name](t, *args))
    node = _scatter_node(name, fn)
    _SCATTER_CALL.pending = ({k: _shown(v) for k, v in fields.items()}, args, args if grad_args is None else grad_args)
    return node.apply(input, src)


def _strided_region(t: Tensor, size, stride, storage_offset) -> Tensor:
    return t.as_strided(size, stride, storage_offset)


def _row_major_region(input: Tensor, size, stride, storage_offset) -> tuple | None:  # noqa: A002
    """For a recorded as_strided_scatter: the same region's arguments over a row-major
    copy of `input`'s elements at offset 0 (what its derivatives read the gradient and
    tangents as), or None where there is none: `input` is not row-major, the region
    names an element twice (only the last write counts) or storage outside the
    elements. (rgrad then records the composite over a map of positions; torch refuses
    an input not row-major.)"""
    if not isinstance(size, (tuple, list)) or not isinstance(stride, (tuple, list)) or len(size) != len(stride) \
            or not input.is_contiguous():
        return None
    base = input.storage_offset()
    start = base if storage_offset is None else storage_offset
    reach, end = 0, start
    for n, st in sorted(zip(size, stride), key=lambda p: p[1]):
        if n == 0:
            return size, stride, 0  # (an empty region)
        if n > 1:
            if st <= reach:
                return None
            reach += st * (n - 1)
    end = start + reach
    if start < base or end >= base + input.numel():
        return None
    return size, stride, start - base


def as_strided_scatter(input: Tensor, src: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:  # noqa: A002
    """A copy of `input` with the region ``as_strided(size, stride, storage_offset)`` of
    the copy's storage set to `src` (the copy is of `input`'s whole storage, with its
    sizes, strides and offset, as torch's ``clone_preserve_strides``)."""
    _check_tensor("as_strided_scatter", input, "input", 1)
    _check_tensor("as_strided_scatter", src, "src", 2)
    fields = {"size": tuple(size), "stride": tuple(stride), "storage_offset": storage_offset}
    bt = batched_tensor_class()
    args = (size, stride, storage_offset)
    if type(input) is not bt and type(src) is not bt:
        if _autograd_off(input, src):
            return _scatter(_AS_STRIDED, as_strided_scatter, input, src, args, fields)
        shifted = _row_major_region(input, size, stride, storage_offset)
        if shifted is not None:
            return _scatter(_AS_STRIDED, as_strided_scatter, input, src, args, fields, shifted)
    offset = 0 if storage_offset is None else storage_offset
    # (torch's bounds error names the input's itemsize)
    _C.empty([input.numel()], dtype=input.dtype).as_strided(size, stride, offset)
    out = _scatter_into("as_strided_scatter", input, src, lambda t: t.as_strided(size, stride, offset))
    return _named(_AS_STRIDED, fields, out, input, src)


_AS_STRIDED = "AsStridedScatterBackward0"


# ---- select / slice / diagonal scatter -------------------------------------------------


def _select(t: Tensor, dim: int, index: int) -> Tensor:
    """``t.select(dim, index)`` with the message torch's select gives for an index out of
    range."""
    if t.dim() == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    n = t.shape[_wrap_dim(dim, t.dim())]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(t.shape)} at dimension "
                         f"{_wrap_dim(dim, t.dim())}")
    return t.select(dim, index)


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:  # noqa: A002
    """A copy of `input` with ``input.select(dim, index)`` set to `src`."""
    _check_tensor("select_scatter", input, "input", 1)
    _check_tensor("select_scatter", src, "src", 2)
    return _scatter("SelectScatterBackward0", select_scatter, input, src, (dim, index),
                    {"dim": dim, "index": index})


def _slice_view(t: Tensor, dim: int, start, end, step: int) -> Tensor:
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    d = _wrap_dim(dim, t.dim())
    return t[(slice(None),) * d + (slice(start, end, step),)]


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None,  # noqa: A002
                  end: int | None = None, step: int = 1) -> Tensor:
    """A copy of `input` with the slice ``start:end:step`` along `dim` set to `src`."""
    _check_tensor("slice_scatter", input, "input", 1)
    _check_tensor("slice_scatter", src, "src", 2)
    return _scatter("SliceScatterBackward0", slice_scatter, input, src, (dim, start, end, step),
                    {"dim": dim, "start": start, "end": end, "step": step})


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:  # noqa: A002
    """A copy of `input` with ``input.diagonal(offset, dim1, dim2)`` set to `src`."""
    _check_tensor("diagonal_scatter", input, "input", 1)
    _check_tensor("diagonal_scatter", src, "src", 2)
    return _scatter("DiagonalScatterBackward0", diagonal_scatter, input, src, (offset, dim1, dim2),
                    {"dim1": dim1, "dim2": dim2, "offset": offset})


def _diagonal_region(t: Tensor, offset: int, dim1: int, dim2: int) -> Tensor:
    return t.diagonal(offset, dim1, dim2)


# each scatter's region of a tensor, from the scatter's arguments after `src`
_REGIONS = {"SelectScatterBackward0": _select, "SliceScatterBackward0": _slice_view,
            "DiagonalScatterBackward0": _diagonal_region, _AS_STRIDED: _strided_region}


# ---- masked_scatter ----------------------------------------------------------------------


def _masked_scatter_checks(self: Tensor, mask: Tensor, source: Tensor, fn: str) -> None:
    _check_tensor(fn, mask, "mask", 1)
    _check_tensor(fn, source, "source", 2)
    if mask.dtype != _C.bool:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{_dtype_name(mask.dtype)}")
    if self.dtype != source.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{_dtype_name(self.dtype)} and {_dtype_name(source.dtype)}")


def _masked_scatter(x: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of `x` (of the mask's shape) with its masked positions, in row-major order,
    set to `source`'s first elements."""
    bt = batched_tensor_class()
    if bt in (type(x), type(mask), type(source)) or not _autograd_off(x, source):
        n = int(mask.sum())
        if source.numel() < n:
            raise RuntimeError("Number of elements of source < number of ones in mask")
        # (out of place, so that vmap batches it; also when n = 0: source's gradient is zeros)
        return _dense_copy(x).index_put((mask,), source.reshape(-1)[:n])
    # values only: the masked positions of the flattened tensor found once (a boolean
    # index would find them again), written in place into the copy by scatter_
    positions = mask.reshape(-1).nonzero().reshape(-1)
    n = positions.numel()
    if source.numel() < n:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    out = _dense_copy(x)
    # (distinct positions: scatter_'s one pass, 3x index_put_'s here)
    out.view(-1).scatter_(0, positions, source.reshape(-1)[:n])
    return out


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:  # noqa: A002
    """A copy of `input` with the positions where `mask` (broadcast with `input`) is
    True set to the elements of `source`, in order."""
    _check_tensor("masked_scatter", input, "input", 1)
    _check_tensor("masked_scatter", mask, "mask", 2)
    _check_tensor("masked_scatter", source, "source", 3)
    from rgrad._composite3 import broadcast_shapes

    shape = list(broadcast_shapes(mask.shape, input.shape))
    m, x = mask.expand(shape), input.expand(shape)
    _masked_scatter_checks(x, m, source, "masked_scatter_")
    out = _masked_scatter(x, m, source)
    return _named("MaskedScatterBackward0", {"mask": mask, "source_sym_sizes": tuple(source.shape)}, out, input,
                  source)


def _masked_scatter_(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """In-place `masked_scatter` (the mask broadcast to this tensor's shape)."""
    _check_tensor("masked_scatter_", mask, "mask", 1)
    _check_tensor("masked_scatter_", source, "source", 2)
    _masked_scatter_checks(self, mask, source, "masked_scatter_")
    if mask.dim() > self.dim():
        device = "CUDA" if mask.is_cuda else "CPU"
        raise RuntimeError(f"expand({device}BoolType{{{list(mask.shape)}}}, size={list(self.shape)}): the number of "
                           f"sizes provided ({self.dim()}) must be greater or equal to the number of dimensions in "
                           f"the tensor ({mask.dim()})")
    m = mask.expand(list(self.shape))
    return _write(self, "MaskedScatterBackward0", {"mask": mask, "source_sym_sizes": tuple(source.shape)},
                  lambda x: _masked_scatter(x, m, source), source)


# ---- index_reduce ------------------------------------------------------------------------

_INDEX_REDUCE = ("prod", "mean", "amax", "amin")


def _index_reduce(self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str,
                  include_self: bool) -> Tensor:
    """torch's index_reduce as the scatter_reduce it is: the index spread over source's
    other dims (checks and messages as ``index_reduce_``)."""
    _check_tensor("index_reduce", index, "index", 2)
    _check_tensor("index_reduce", source, "source", 3)
    if not isinstance(reduce, str):
        raise TypeError(f"index_reduce(): argument 'reduce' (position 4) must be str, not {type(reduce).__name__}")
    if reduce not in _INDEX_REDUCE:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d = _wrap_dim(_int("index_reduce", dim, "dim", 1), self.dim())
    if index.dim() > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: {index.dim()} with type: "
                         f"{_dtype_name(index.dtype)} and size: {list(index.shape)}")
    if index.dtype != _C.int64:  # (rgrad has no int32)
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: {_dtype_name(index.dtype)}")
    sdim = builtins.max(source.dim(), 1)
    ssize = list(source.shape) or [1]
    if self.dtype != source.dtype:
        raise RuntimeError(f"index_reduce_(): self ({_dtype_name(self.dtype)}) and source "
                           f"({_dtype_name(source.dtype)}) must have the same scalar type")
    n = index.numel()
    if source.dim() and n != ssize[d if d < sdim else 0]:
        raise RuntimeError(f"index_reduce_(): Number of indices ({n}) should be equal to source.size(dim): "
                           f"({ssize[d]}), for dim: {d}")
    own = list(self.shape) or [1]
    if self.dim() != source.dim() or any(own[i] != ssize[i] for i in range(sdim) if i != d):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(self.shape)} source.shape = {list(source.shape)}")
    if n:
        lo, hi = int(index.min()), int(index.max())
        if lo < 0 or hi >= own[d]:
            raise IndexError("index out of range in self")
    x = self.reshape(own) if self.dim() == 0 else self
    src = source.reshape(ssize) if source.dim() == 0 else source
    bt = batched_tensor_class()
    if bt not in (type(x), type(index), type(src)) and _autograd_off(x, src):
        # values only: torch's kernel, whole slices at a time
        out = x._index_reduce_values(d, index.reshape(-1), src, reduce, include_self)
    else:
        # (recorded: as scatter_reduce of every element, whose graph gives the gradient)
        idx = index.reshape([1] * d + [n] + [1] * (sdim - d - 1)).expand(ssize)
        out = x.scatter_reduce(d, idx, src, reduce, include_self=include_self)
    return out.reshape(list(self.shape)) if self.dim() == 0 else out


def _no_forward_ad(op: str, *tensors: Any) -> None:
    """torch's NotImplementedError for an op derivatives.yaml gives no forward formula,
    when one of ``tensors`` has a tangent."""
    from rgrad.autograd import forward_ad

    for t in tensors:
        if isinstance(t, Tensor) and forward_ad.unpack_dual(t).tangent is not None:
            raise NotImplementedError(
                f"Trying to use forward AD with {op} that does not support it because it has not been implemented "
                "yet.\nPlease file an issue to PyTorch at https://github.com/pytorch/pytorch/issues/new?template="
                "feature-request.yml so that we can prioritize its implementation or submit a PR adding the "
                "implementation to derivatives.yaml")


def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,  # noqa: A002
                 include_self: bool = True) -> Tensor:
    """A copy of `input` with ``source``'s slices along `dim` reduced (``'prod'``,
    ``'mean'``, ``'amax'``, ``'amin'``) into the slices `index` names (with the slice's
    own values when `include_self`). No forward-mode derivative (as torch)."""
    _check_tensor("index_reduce", input, "input", 1)
    _no_forward_ad("index_reduce", input, source)
    out = _index_reduce(input, dim, index, source, reduce, include_self)
    fields = {"dim": dim, "include_self": include_self, "index": index, "reduce": reduce, "result": out.detach(),
              "self": input, "source": source}
    return _named("IndexReduceBackward0", fields, out, input, source)


def _index_reduce_(self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """In-place `index_reduce`."""
    _no_forward_ad("index_reduce", self, source)
    _index_reduce(self, dim, index, source, reduce, include_self)  # (the checks, before the write)
    fields = {"dim": dim, "include_self": include_self, "index": index, "reduce": reduce, "source": source}
    return _write(self, "IndexReduceBackward0", fields,
                  lambda x: _index_reduce(x, dim, index, source, reduce, include_self), source)


# ---- put -----------------------------------------------------------------------------------


def _put(self: Tensor, index: Tensor, source: Tensor, accumulate: bool) -> Tensor:
    _check_tensor("put", index, "index", 1)
    _check_tensor("put", source, "source", 2)
    if index.dtype != _C.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {_dtype_name(index.dtype)}")
    if self.dtype != source.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{_dtype_name(self.dtype)} and source.dtype = {_dtype_name(source.dtype)}")
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    n = self.numel()
    if n == 0 and index.numel():
        raise IndexError("put_(): Tried to put elements into an empty tensor")
    flat = index.reshape(-1)
    if flat.numel():
        lo, hi = flat.aminmax()
        for v in (int(lo), int(hi)):
            if not -n <= v < n:
                raise IndexError(f"out of range: tried to access index {v} on a tensor of {n} elements.")
        flat = flat.remainder(n)
    bt = batched_tensor_class()
    if bt not in (type(self), type(index), type(source)) and _autograd_off(self, source):
        # values only: torch's kernel, a clone (in self's memory format) written in place
        out = self.clone()
        if out.is_contiguous():
            out.view(-1).index_put_((flat,), source.reshape(-1), accumulate)
            return out
        out.index_put_(_unravel(flat, list(self.shape)), source.reshape(-1), accumulate)
        return out
    if self.dim() == 0:
        return self.reshape(1).index_put((flat,), source.reshape(-1), accumulate).reshape(())
    # the flat positions as one index per dim (out of place, so that vmap batches it; an
    # empty index too: source's gradient is then zeros)
    return self.index_put(_unravel(flat, list(self.shape)), source.reshape(-1), accumulate)


def _unravel(flat: Tensor, shape: list) -> tuple:
    """Row-major flat positions (in range) as one index tensor per dim of `shape`."""
    indices, step = [], 1
    for size in reversed(shape):
        indices.insert(0, flat.div(step, rounding_mode="floor").remainder(size))
        step *= size
    return tuple(indices)


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:  # noqa: A002
    """A copy of `input` with the elements at `index` (into `input` as if flattened) set
    to `source`'s (added to them when `accumulate`)."""
    _check_tensor("put", input, "input", 1)
    out = _put(input, index, source, accumulate)
    # (torch saves source for its own gradient only)
    fields = {"accumulate": builtins.bool(accumulate), "index": index,
              "source": source if source.requires_grad else None}
    return _named("PutBackward0", fields, out, input, source)


def _put_(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """In-place `put`."""
    _put(self, index, source, accumulate)  # (the checks, before the write)
    fields = {"accumulate": builtins.bool(accumulate), "index": index,
              "source": source if source.requires_grad else None}
    return _write(self, "PutBackward0", fields, lambda x: _put(x, index, source, accumulate), source)


# ---- renorm --------------------------------------------------------------------------------


def _renorm(self: Tensor, p, dim: int, maxnorm) -> Tensor:
    """torch's renorm: each slice along `dim` whose p-norm exceeds `maxnorm` scaled by
    ``maxnorm / (norm + 1e-7)``; the factor's own derivative is part of the gradient, as
    in torch's renorm_backward."""
    for name, v, pos in (("p", p, 1), ("maxnorm", maxnorm, 3)):
        if type(v) is not float and type(v) is not int and (isinstance(v, bool) or not isinstance(v, numbers.Real)):
            raise TypeError(f"renorm(): argument '{name}' (position {pos}) must be Number, not {type(v).__name__}")
    d = _wrap_dim(_int("renorm", dim, "dim", 2), self.dim())
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if self.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {self.dim()} dimensions")
    if not self.is_floating_point():
        raise NotImplementedError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                                  f"Got {_dtype_name(self.dtype)}")
    others = [i for i in range(self.dim()) if i != d]
    norm = self.norm(p, others, True)
    factor = (maxnorm / (norm + 1e-7)).where(norm > maxnorm, 1.0)
    return self * factor


def renorm(input: Tensor, p, dim: int, maxnorm) -> Tensor:  # noqa: A002
    """`input` with each slice along `dim` whose `p`-norm exceeds `maxnorm` scaled down
    to norm `maxnorm`."""
    _check_tensor("renorm", input, "input", 1)
    out = _renorm(input, p, dim, maxnorm)
    return _named("RenormBackward0", {"dim": dim, "maxnorm": maxnorm, "p": p, "self": input}, out, input)


def _renorm_(self: Tensor, p, dim: int, maxnorm) -> Tensor:
    """In-place `renorm`."""
    _renorm(self, p, dim, maxnorm)  # (the checks, before the write)
    return _write(self, "RenormBackward0", {"dim": dim, "maxnorm": maxnorm, "p": p},
                  lambda x: _renorm(x, p, dim, maxnorm), save_self=True)


# ---- splits --------------------------------------------------------------------------------


def split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:  # noqa: A002
    """Views of `input` along `dim` of the given sizes (which must add up to its size)."""
    _check_tensor("split_with_sizes", input, "input", 1)
    return tuple(input.split(_ints("split_with_sizes", split_sizes, "split_sizes", 2), dim))


def unsafe_split(input: Tensor, split_size: int, dim: int = 0) -> tuple:  # noqa: A002
    """The pieces of `split`, sharing `input`'s storage but not views of it (each with a
    version counter of its own, as torch's; UnsafeSplitBackward0)."""
    _check_tensor("unsafe_split", input, "input", 1)
    size = _int("unsafe_split", split_size, "split_size", 2)
    if type(input) is batched_tensor_class():  # (vmap: copies of the batched split's views)
        return tuple(t.clone() for t in input.split(size, dim))
    return input._unsafe_split(size, dim)


def unsafe_split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:  # noqa: A002
    """The pieces of `split_with_sizes`, sharing `input`'s storage but not views of it
    (UnsafeSplitWithSizesBackward0)."""
    _check_tensor("unsafe_split_with_sizes", input, "input", 1)
    sizes = _ints("unsafe_split_with_sizes", split_sizes, "split_sizes", 2)
    if type(input) is batched_tensor_class():
        return tuple(t.clone() for t in input.split(sizes, dim))
    return input._unsafe_split(sizes, dim)


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:  # noqa: A002
    """`chunk`'s pieces, not views: torch's unsafe_split with the chunk size
    (UnsafeSplitBackward0)."""
    _check_tensor("unsafe_chunk", input, "input", 1)
    chunks = _int("unsafe_chunk", chunks, "chunks", 2)
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    if input.dim() == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    n = input.shape[_wrap_dim(dim, input.dim())]
    size = (n + chunks - 1) // chunks
    if size == 0 and n != 0:
        size = 1
    if n == 0:
        return unsafe_split_with_sizes(input, [0] * chunks, dim)
    return unsafe_split(input, size, dim)


# ---- the *_copy functions --------------------------------------------------------------------


def _copy_of(name: str, fields, view: Tensor, input: Tensor) -> Tensor:  # noqa: A002
    """A contiguous copy of `view` (of `input`) recorded as torch's ``name`` node."""
    out = view.clone() if view.is_contiguous() else view.contiguous()
    if not input.requires_grad:  # (nothing to record: the common case, checked first)
        return out
    return _named(name, fields, out, input)


def alias_copy(input: Tensor) -> Tensor:  # noqa: A002
    """A copy of `input` (AliasBackward0_copy)."""
    _check_tensor("alias_copy", input, "input", 1)
    return _copy_of("AliasBackward0_copy", lambda: {}, input, input)


def detach_copy(input: Tensor) -> Tensor:  # noqa: A002
    """A copy of `input` detached from its graph (torch records no derivative for it: its
    backward raises)."""
    _check_tensor("detach_copy", input, "input", 1)
    out = _dense_copy(input.detach())
    if not _records(input):
        return out
    return _not_implemented("detach_copy").apply(input, out)


def _not_implemented(op: str) -> Any:
    """torch's NotImplemented node over an op without a derivative: its backward raises
    "derivative for aten::<op> is not implemented"."""
    cls = _NODES.get(("NotImplemented:" + op, False))
    if cls is not None:
        return cls
    from rgrad.autograd import Function

    def forward(ctx, _input, out):
        return out.detach()

    def backward(ctx, grad):
        raise RuntimeError(f"derivative for aten::{op} is not implemented")

    cls = type(f"_NotImplemented_{op}", (Function,), {"forward": staticmethod(forward),
                                                      "backward": staticmethod(backward)})
    cls._backward_cls.__name__ = cls._backward_cls.__qualname__ = "torch::autograd::NotImplemented"
    _NODES[("NotImplemented:" + op, False)] = cls
    return cls


def diagonal_copy(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:  # noqa: A002
    """A copy of ``input.diagonal(offset, dim1, dim2)``."""
    _check_tensor("diagonal_copy", input, "input", 1)
    return _copy_of("DiagonalBackward0_copy", lambda: {"dim1": dim1, "dim2": dim2, "offset": offset,
                                               "self_sym_sizes": tuple(input.shape)},
                    input.diagonal(offset, dim1, dim2), input)


def expand_copy(input: Tensor, size, *, implicit: bool = False) -> Tensor:  # noqa: A002
    """A copy of ``input.expand(size)``."""
    _check_tensor("expand_copy", input, "input", 1)
    return _copy_of("ExpandBackward0_copy", lambda: {"self_sym_sizes": tuple(input.shape)},
                    input.expand(_ints("expand_copy", size, "size", 2)), input)


def permute_copy(input: Tensor, dims) -> Tensor:  # noqa: A002
    """A copy of ``input.permute(dims)``."""
    _check_tensor("permute_copy", input, "input", 1)
    dims = _ints("permute_copy", dims, "dims", 2)
    return _copy_of("PermuteBackward0_copy", lambda: {"dims": tuple(dims)}, input.permute(dims), input)


def select_copy(input: Tensor, dim: int, index: int) -> Tensor:  # noqa: A002
    """A copy of ``input.select(dim, index)``."""
    _check_tensor("select_copy", input, "input", 1)
    return _copy_of("SelectBackward0_copy", lambda: {"dim": dim, "index": index, "self_sym_sizes": tuple(input.shape)},
                    _select(input, dim, index), input)


def slice_copy(input: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,  # noqa: A002
               step: int = 1) -> Tensor:
    """A copy of the slice ``start:end:step`` of `input` along `dim`."""
    _check_tensor("slice_copy", input, "input", 1)
    return _copy_of("SliceBackward0_copy", lambda: {"dim": dim, "end": end, "self_sym_sizes": tuple(input.shape),
                                            "start": start, "step": step},
                    _slice_view(input, dim, start, end, step), input)


def squeeze_copy(input: Tensor, dim=None) -> Tensor:  # noqa: A002
    """A copy of ``input.squeeze(dim)`` (SqueezeBackward0/1/2_copy: no dim, an int, a
    tuple)."""
    _check_tensor("squeeze_copy", input, "input", 1)
    sizes = tuple(input.shape)
    if dim is None:
        return _copy_of("SqueezeBackward0_copy", lambda: {"self_sym_sizes": sizes}, input.squeeze(), input)
    if isinstance(dim, (tuple, list)):
        dims = _ints("squeeze_copy", dim, "dim", 2)
        return _copy_of("SqueezeBackward2_copy", lambda: {"dim": tuple(dims), "self_sym_sizes": sizes},
                        input.squeeze(tuple(dims)), input)
    return _copy_of("SqueezeBackward1_copy", lambda: {"dim": dim, "self_sym_sizes": sizes}, input.squeeze(dim), input)


def t_copy(input: Tensor) -> Tensor:  # noqa: A002
    """A copy of ``input.t()``."""
    _check_tensor("t_copy", input, "input", 1)
    return _copy_of("TBackward0_copy", lambda: {}, input.t(), input)


def transpose_copy(input: Tensor, dim0: int, dim1: int) -> Tensor:  # noqa: A002
    """A copy of ``input.transpose(dim0, dim1)``."""
    _check_tensor("transpose_copy", input, "input", 1)
    return _copy_of("TransposeBackward0_copy", lambda: {"dim0": dim0, "dim1": dim1}, input.transpose(dim0, dim1), input)


def unsqueeze_copy(input: Tensor, dim: int) -> Tensor:  # noqa: A002
    """A copy of ``input.unsqueeze(dim)``."""
    _check_tensor("unsqueeze_copy", input, "input", 1)
    return _copy_of("UnsqueezeBackward0_copy", lambda: {"dim": dim}, input.unsqueeze(dim), input)


def unfold_copy(input: Tensor, dimension: int, size: int, step: int) -> Tensor:  # noqa: A002
    """A copy of ``input.unfold(dimension, size, step)``."""
    _check_tensor("unfold_copy", input, "input", 1)
    return _copy_of("UnfoldBackward0_copy", lambda: {"dimension": dimension, "self_sym_sizes": tuple(input.shape),
                                             "size": size, "step": step},
                    input.unfold(dimension, size, step), input)


def view_copy(input: Tensor, size) -> Tensor:  # noqa: A002
    """A copy of ``input.view(size)`` (or of ``input.view(dtype)``: no gradient)."""
    _check_tensor("view_copy", input, "input", 1)
    if isinstance(size, _C.dtype):
        return _dense_copy(input.view(size))
    return _copy_of("ViewBackward0_copy", lambda: {"self_sym_sizes": tuple(input.shape)},
                    input.view(_ints("view_copy", size, "size", 2)), input)


def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:  # noqa: A002
    """A copy of ``input.narrow(dim, start, length)`` (NarrowCopyBackward0)."""
    _check_tensor("narrow_copy", input, "input", 1)
    return _copy_of("NarrowCopyBackward0", lambda: {"dim": dim, "length": length, "self_sym_sizes": tuple(input.shape),
                                            "start": start}, input.narrow(dim, start, length), input)


def unbind_copy(input: Tensor, dim: int = 0) -> tuple:  # noqa: A002
    """Copies of ``input.unbind(dim)`` (UnbindBackward0_copy)."""
    _check_tensor("unbind_copy", input, "input", 1)
    outs = tuple(_dense_copy(t) for t in input.unbind(dim))
    return _named_multi("UnbindBackward0_copy", lambda: {"dim": dim}, outs, input)


def split_copy(input: Tensor, split_size: int, dim: int = 0) -> tuple:  # noqa: A002
    """Copies of ``input.split(split_size, dim)`` (SplitBackward0_copy)."""
    _check_tensor("split_copy", input, "input", 1)
    size = _int("split_copy", split_size, "split_size", 2)
    outs = tuple(_dense_copy(t) for t in input.split(size, dim))
    return _named_multi("SplitBackward0_copy", lambda: {"dim": dim, "self_sym_sizes": tuple(input.shape),
                                                "split_size": size}, outs, input)


def split_with_sizes_copy(input: Tensor, split_sizes, dim: int = 0) -> tuple:  # noqa: A002
    """Copies of ``input.split(split_sizes, dim)`` (SplitWithSizesBackward0_copy)."""
    _check_tensor("split_with_sizes_copy", input, "input", 1)
    sizes = _ints("split_with_sizes_copy", split_sizes, "split_sizes", 2)
    outs = tuple(_dense_copy(t) for t in input.split(sizes, dim))
    return _named_multi("SplitWithSizesBackward0_copy", lambda: {"dim": dim, "self_sym_sizes": tuple(input.shape),
                                                         "split_sizes": tuple(sizes)}, outs, input)


# ---- index_put's function forms -------------------------------------------------------------


def index_put(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:  # noqa: A002
    """``input.index_put(indices, values, accumulate)``: a copy of `input` with the
    elements `indices` names set to (added, when `accumulate`) `values`."""
    _check_tensor("index_put", input, "input", 1)
    return input.index_put(indices, values, accumulate)


def index_put_(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:  # noqa: A002
    """``input.index_put_(indices, values, accumulate)``: the in-place form."""
    _check_tensor("index_put_", input, "input", 1)
    return input.index_put_(indices, values, accumulate)


# ---- Tensor methods ------------------------------------------------------------------------


_METHODS = {
    "as_strided_scatter": as_strided_scatter, "select_scatter": select_scatter, "slice_scatter": slice_scatter,
    "diagonal_scatter": diagonal_scatter, "masked_scatter": masked_scatter, "masked_scatter_": _masked_scatter_,
    "index_reduce": index_reduce, "index_reduce_": _index_reduce_, "put": put, "put_": _put_, "renorm": renorm,
    "renorm_": _renorm_, "split_with_sizes": split_with_sizes, "unsafe_chunk": unsafe_chunk,
    "unsafe_split": unsafe_split, "unsafe_split_with_sizes": unsafe_split_with_sizes, "narrow_copy": narrow_copy,
}


def install() -> None:
    """The Tensor methods torch has for these, also on vmap's BatchedTensor (where they
    decompose into the batched ops they are made of)."""
    from rgrad.func._batched_tensor import BatchedTensor

    for name, fn in _METHODS.items():
        setattr(Tensor, name, fn)
        setattr(BatchedTensor, name, fn)
