"""Batching rules of shape ops (views, reshapes, select/narrow/split), indexing
(subscripts, gather, index_select) and cat/stack; see ``_batching.py``."""

from __future__ import annotations

from typing import Any

from rgrad import _C
from rgrad.func._batched_tensor import (
    PLAIN,
    _select,
    batch_size,
    dispatch,
    fallback,
    inplace_error,
    max_level,
    movedim,
    wrap_dim,
)
from rgrad.func._batching_common import (
    BT,
    _at,
    _expand,
    _final,
    _is_tensor,
    _lrank,
    _numel,
    _other_batched,
    _pad,
    _physical,
    _probe,
    _shape_arg,
)


# ---------------------------------------------------------------------------------------
# Shape ops
# ---------------------------------------------------------------------------------------

def _self_only(name: str, level: int, args: tuple, kwargs: dict) -> bool:
    """True when only self is batched at ``level`` (shape ops: anything else falls back)."""
    return _at(args[0], level) and not ((len(args) > 1 or kwargs) and _other_batched(args, kwargs, level))


def _infer_size(shape: tuple, numel: int) -> tuple:
    """``shape`` with its -1 resolved for ``numel`` elements (torch's infer_size and messages)."""
    infer = None
    known = 1
    for i, d in enumerate(shape):
        if d == -1:
            if infer is not None:
                raise _final(RuntimeError("only one dimension can be inferred"))
            infer = i
        elif d >= 0:
            known *= d
        else:
            raise _final(RuntimeError(f"invalid shape dimension {d}"))
    shown = "[" + ", ".join(str(d) for d in shape) + "]"
    if infer is None:
        if known != numel:
            raise _final(RuntimeError(f"shape '{shown}' is invalid for input of size {numel}"))
        return tuple(shape)
    if known == 0 or numel % known != 0:
        if known == 0:
            raise _final(RuntimeError(f"cannot reshape tensor of 0 elements into shape {shown} because the "
                                      "unspecified dimension size -1 can be any value and is ambiguous"))
        raise _final(RuntimeError(f"shape '{shown}' is invalid for input of size {numel}"))
    out = list(shape)
    out[infer] = numel // known
    return tuple(out)


def _view(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    if not _self_only(name, level, args, kwargs):
        return fallback(name, level, args, kwargs)
    v = args[0]._value
    shape = _shape_arg(args[1:]) if len(args) > 1 else tuple(kwargs.get("shape", kwargs.get("size", ())))
    shape = _infer_size(shape, _numel(v.shape[1:]))
    return BT(dispatch(name, (v, (v.shape[0], *shape)), {}), level)


def _flatten(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    if not _self_only(name, level, args, kwargs):
        return fallback(name, level, args, kwargs)
    v = args[0]._value
    r = v.dim() - 1
    start = args[1] if len(args) > 1 else kwargs.get("start_dim", 0)
    end = args[2] if len(args) > 2 else kwargs.get("end_dim", -1)
    s, e = wrap_dim(start, r), wrap_dim(end, r)
    if r == 0:
        return BT(v.reshape(v.shape[0], 1), level)
    if s > e:
        raise _final(RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim"))
    return BT(v.flatten(s + 1, e + 1), level)


def _transpose(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    if not _self_only(name, level, args, kwargs):
        return fallback(name, level, args, kwargs)
    v = args[0]._value
    r = v.dim() - 1
    if name == "t":
        if r > 2:
            raise _final(RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {r}D"))
        return BT(v.transpose(1, 2) if r == 2 else v.transpose(0, 0), level)
    d0 = args[1] if len(args) > 1 else kwargs["dim0"]
    d1 = args[2] if len(args) > 2 else kwargs["dim1"]
    d0, d1 = wrap_dim(d0, r), wrap_dim(d1, r)
    if r == 0:
        return BT(v.transpose(0, 0), level)
    return BT(v.transpose(d0 + 1, d1 + 1), level)


def _permute(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    if not _self_only(name, level, args, kwargs):
        return fallback(name, level, args, kwargs)
    v = args[0]._value
    r = v.dim() - 1
    if len(args) == 1 and "dims" not in kwargs:
        PLAIN[name](_probe(args[0]))  # its TypeError: dims missing
    dims = _shape_arg(args[1:]) if len(args) > 1 else tuple(kwargs["dims"])
    if len(dims) != r:
        raise _final(RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired "
            f"ordering of dimensions i.e. input.dim() = {r} is not equal to len(dims) = {len(dims)}"))
    wrapped = [wrap_dim(d, r) for d in dims]
    if len(set(wrapped)) != len(wrapped):
        raise _final(RuntimeError("permute(): duplicate dims are not allowed."))
    return BT(v.permute(0, *(d + 1 for d in wrapped)), level)


def _unsqueeze(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    if not _self_only(name, level, args, kwargs):
        return fallback(name, level, args, kwargs)
    v = args[0]._value
    d = wrap_dim(args[1] if len(args) > 1 else kwargs["dim"], v.dim())
    return BT(v.unsqueeze(d + 1), level)


def _squeeze(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    if not _self_only(name, level, args, kwargs):
        return fallback(name, level, args, kwargs)
    v = args[0]._value
    shape = tuple(v.shape[1:])
    r = len(shape)
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    if dim is None:
        dims = [i for i, s in enumerate(shape) if s == 1]
    else:
        dims = [wrap_dim(d, r) for d in (dim if isinstance(dim, (tuple, list)) else (dim,))]
        if r == 0:
            return BT(v.transpose(0, 0), level)
        dims = [d for d in dims if shape[d] == 1]
    new = [s for i, s in enumerate(shape) if i not in dims]
    return BT(v.view(v.shape[0], *new), level)


def _inplace_view(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    """``squeeze_``, ``unsqueeze_``, ``transpose_``, ``swapdims_``, ``swapaxes_``, ``t_`` on
    a batched self: the same op in place on the physical value, its dims shifted past the
    batch dim (which stays first); the BatchedTensor, whose shape is its value's, is
    returned as the op's ``self``."""
    if not _self_only(name, level, args, kwargs):
        return fallback(name, level, args, kwargs)
    self = args[0]
    v = self._value
    shape = tuple(v.shape[1:])
    r = len(shape)
    if name == "squeeze_":
        dim = args[1] if len(args) > 1 else kwargs.get("dim")
        if dim is None:
            dims = [i for i, s in enumerate(shape) if s == 1]
        else:
            dims = [wrap_dim(d, r) for d in (dim if isinstance(dim, (tuple, list)) else (dim,))]
        v.squeeze_(tuple(d + 1 for d in dims if r and shape[d] == 1))
    elif name == "unsqueeze_":
        v.unsqueeze_(wrap_dim(args[1] if len(args) > 1 else kwargs["dim"], r + 1) + 1)
    elif name == "t_":
        if r > 2:
            raise _final(RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {r}D"))
        v.transpose_(1, 2) if r == 2 else v.transpose_(0, 0)
    else:  # transpose_, swapdims_, swapaxes_
        names = ("axis0", "axis1") if name == "swapaxes_" else ("dim0", "dim1")
        d0 = args[1] if len(args) > 1 else kwargs[names[0]]
        d1 = args[2] if len(args) > 2 else kwargs[names[1]]
        if r == 0:
            wrap_dim(d0, 0), wrap_dim(d1, 0)
            v.transpose_(0, 0)
        else:
            v.transpose_(wrap_dim(d0, r) + 1, wrap_dim(d1, r) + 1)
    return self


def _expand_rule(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    if not _self_only(name, level, args, kwargs):
        return fallback(name, level, args, kwargs)
    v = args[0]._value
    r = v.dim() - 1
    sizes = _shape_arg(args[1:]) if len(args) > 1 else tuple(kwargs["size"])
    if len(sizes) < r:
        raise _final(RuntimeError(f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to "
                                  f"the number of dimensions in the tensor ({r})"))
    v = _pad(v, len(sizes) - r)
    return BT(v.expand(v.shape[0], *sizes), level)


def _repeat(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    if not _self_only(name, level, args, kwargs):
        return fallback(name, level, args, kwargs)
    v = args[0]._value
    r = v.dim() - 1
    sizes = _shape_arg(args[1:]) if len(args) > 1 else tuple(kwargs["repeats"])
    if len(sizes) < r:
        raise _final(RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions "
                                  "of tensor"))
    return BT(_pad(v, len(sizes) - r).repeat(1, *sizes), level)


def _dim_shifted(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    """select / narrow / split / chunk / unbind: an op with a ``dim`` whose result keeps the batch dim 0."""
    if not _self_only(name, level, args, kwargs):
        return fallback(name, level, args, kwargs)
    v = args[0]._value
    r = v.dim() - 1
    rest = list(args[1:])
    kwargs = dict(kwargs)
    pos = {"select": 0, "narrow": 0, "split": 1, "chunk": 1, "unbind": 0}[name]
    default = {"split": 0, "chunk": 0, "unbind": 0}.get(name)
    if len(rest) > pos:
        rest[pos] = wrap_dim(rest[pos], r) + 1
    elif "dim" in kwargs:
        kwargs["dim"] = wrap_dim(kwargs["dim"], r) + 1
    elif default is not None:
        kwargs["dim"] = wrap_dim(default, r) + 1
    else:
        raise TypeError(f"{name}() missing required argument 'dim'")
    if r == 0:
        raise _final(IndexError(f"{name}() cannot be applied to a 0-dim tensor."))
    out = dispatch(name, (v, *rest), kwargs)
    if isinstance(out, (tuple, list)):
        return tuple(BT(o, level) for o in out)
    return BT(out, level)



# ---------------------------------------------------------------------------------------
# Indexing
# ---------------------------------------------------------------------------------------

def _gather(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    self = args[0]
    dim = args[1] if len(args) > 1 else kwargs["dim"]
    index = args[2] if len(args) > 2 else kwargs["index"]
    r = _lrank(self, level)
    d = wrap_dim(dim, r)
    sv, iv = _physical(self, level), _physical(index, level)
    if r == 0:
        return BT(dispatch("gather", (sv.unsqueeze(1), 1, iv.reshape(iv.shape[0], 1)), {}).squeeze(1), level)
    return BT(dispatch("gather", (sv, d + 1, iv), {}), level)


def _index_select(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    self = args[0]
    dim = args[1] if len(args) > 1 else kwargs["dim"]
    index = args[2] if len(args) > 2 else kwargs["index"]
    r = _lrank(self, level)
    if r == 0:
        return fallback(name, level, args, kwargs)
    d = wrap_dim(dim, r)
    if not _at(index, level):
        return BT(dispatch("index_select", (self._value, d + 1, index), {}), level)
    sv = _physical(self, level)
    iv = index._value
    n = sv.shape[0]
    if iv.dim() == 1:
        iv = iv.unsqueeze(1)
    k = iv.shape[1]
    shape = list(sv.shape)
    shape[d + 1] = k
    idx = iv.view(n, *([1] * d), k, *([1] * (r - d - 1))).expand(*shape)
    return BT(dispatch("gather", (sv, d + 1, idx), {}), level)


def _index_items(key: Any) -> tuple:
    """A subscript as a tuple of items; lists become index tensors."""
    items = key if type(key) is tuple else (key,)
    return tuple(_C.tensor(k) if isinstance(k, list) else k for k in items)


def _advanced_layout(items: tuple, rank: int, level: int) -> tuple[bool, int, int]:
    """For a subscript with tensor items: (adjacent, result dims before them, their broadcast rank).

    As torch: ints select first (they do not separate tensor items), slices, None and
    Ellipsis do; separated tensor items put their broadcast dims first in the result.
    """
    positions = [i for i, k in enumerate(items) if _is_tensor(k)]
    adjacent = all(not (isinstance(items[j], slice) or items[j] is None or items[j] is Ellipsis)
                   for j in range(positions[0], positions[-1] + 1) if j not in positions)
    consumed = sum(_lrank(k, level) if _is_tensor(k) and k.dtype == _C.bool else 1
                   for k in items if k is not None and k is not Ellipsis and not isinstance(k, bool))
    before = 0
    for k in items[:positions[0]]:
        if isinstance(k, slice) or k is None or isinstance(k, bool):
            before += 1
        elif k is Ellipsis:
            before += rank - consumed
    adv_rank = max(1 if k.dtype == _C.bool else _lrank(k, level) for k in items if _is_tensor(k))
    return adjacent, before, adv_rank


def _getitem(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    self, key = args[0], args[1]
    items = _index_items(key)
    batched_items = [k for k in items if _at(k, level)]
    if not batched_items:
        v = self._value
        out = dispatch("__getitem__", (v, (slice(None), *items)), {})
        if any(_is_tensor(k) for k in items):
            adjacent, _, adv_rank = _advanced_layout(items, v.dim() - 1, level)
            if not adjacent:
                out = _movedim_phys(out, adv_rank, 0)
        return BT(out, level)
    if any(k.dtype == _C.bool for k in batched_items):
        return fallback(name, level, args, kwargs)
    # batched integer indices: index the physical value with arange(B) in front
    sv = _physical(self, level)
    n = sv.shape[0]
    adjacent, before, adv_rank = _advanced_layout(items, sv.dim() - 1, level)
    new_items = []
    for k in items:
        if _at(k, level):
            kv = k._value
            new_items.append(_pad(kv, adv_rank - (kv.dim() - 1)))
        else:
            new_items.append(k)
    batch_index = _C.arange(n).view(n, *([1] * adv_rank))
    out = dispatch("__getitem__", (sv, (batch_index, *new_items)), {})
    if adjacent and before > 0:
        # the tensor items' dims belong after the `before` dims: move those up front
        perm = [0, *range(1 + adv_rank, 1 + adv_rank + before), *range(1, 1 + adv_rank),
                *range(1 + adv_rank + before, out.dim())]
        out = out.permute(*perm)
    return BT(out, level)


def _movedim_phys(t: Any, source: int, destination: int) -> Any:
    from rgrad.func._batched_tensor import movedim

    return movedim(t, source, destination)


def _setitem(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    """``t[key] = value`` into a batched ``t``: one write into the physical value, with a full
    slice in front of the key (or, where index tensors are batched, ``arange(B)``: each
    sample's indices into its own slice, as ``_getitem``). A batched value is laid out as
    the batched selection is: ``[B, *selection]``, except where the index tensors are not
    adjacent (their dims come first: ``[*index, B, *rest]``) or, with batched indices,
    where dims come before them (``[B, *index, *before, *after]``)."""
    self, key, value = args
    if not _at(self, level):
        raise _final(inplace_error(name))
    items = _index_items(key)
    v = self._value
    batched_items = [k for k in items if _at(k, level)]
    if any(k.dtype == _C.bool for k in batched_items):
        return fallback(name, level, args, kwargs)
    has_tensors = any(_is_tensor(k) for k in items)
    adjacent, before, adv_rank = _advanced_layout(items, v.dim() - 1, level) if has_tensors else (True, 0, 0)
    moved = bool(batched_items) and adjacent and before > 0  # the batched selection's dims reordered
    if _at(value, level) or (moved and _is_tensor(value)):
        # a sample's selection rank (stand-ins for the batched indices: zeros, in range)
        target_rank = _probe(self)[tuple(_probe(k) if _at(k, level) else k for k in items)].dim()
        val = _physical(value, level)
        val = _pad(val, target_rank - (val.dim() - 1))  # [B, *ones, *value.shape]
        if moved:
            val = val.permute(0, *range(1 + before, 1 + before + adv_rank), *range(1, 1 + before),
                              *range(1 + before + adv_rank, val.dim()))
        elif has_tensors and not adjacent and not batched_items:
            val = movedim(val, 0, adv_rank)  # the selection is [*index, B, *rest]
    else:
        val = value
    if batched_items:
        n = v.shape[0]
        new_items = [_pad(k._value, adv_rank - (k._value.dim() - 1)) if _at(k, level) else k for k in items]
        phys_key = (_C.arange(n).view(n, *([1] * adv_rank)), *new_items)
    else:
        phys_key = (slice(None), *items)
    dispatch("__setitem__", (v, phys_key, val), {})
    return None


def _per_sample_errors(rule):
    """A rule whose errors are the op's on one sample at a time (torch's messages, with the
    logical dims and index values): when the physical computation raises, the samples are
    rerun out of place (writing nothing, warning nothing) until one raises.
    """
    def checked(name: str, level: int, args: tuple, kwargs: dict) -> Any:
        try:
            return rule(name, level, args, kwargs)
        except (RuntimeError, IndexError) as e:
            if getattr(e, "_vmap_final", False):
                raise
            op = name.rstrip("_")
            for b in range(batch_size(level)):
                sample_args = tuple(_select(a, level, b) for a in args)
                sample_kwargs = {k: _select(v, level, b) for k, v in kwargs.items()}
                try:
                    if max_level(sample_args, sample_kwargs) >= 0:
                        dispatch(op, sample_args, sample_kwargs)
                    else:
                        PLAIN[op](*sample_args, **sample_kwargs)
                except type(e) as sample_error:
                    raise _final(sample_error) from None
            raise

    return checked


def _index_put(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    """``index_put`` / ``index_put_``: one put into the physical value.

    The per-sample indices get a leading full slice (unbatched indices) or, when some are
    batched, ``arange(B)`` in front (each sample's indices into its own slice, as
    ``_getitem``); the values are brought to the layout that the batched selection has,
    which is not always ``[B, *selection]`` (torch's rule: index dims that are not
    adjacent go first, before the batch dim). Duplicate indices accumulate (or the last
    write wins) within each sample, as per sample.
    """
    self = args[0]
    indices = args[1] if len(args) > 1 else kwargs["indices"]
    values = args[2] if len(args) > 2 else kwargs["values"]
    accumulate = args[3] if len(args) > 3 else kwargs.get("accumulate", False)
    inplace = name == "index_put_"
    if (type(indices) is not tuple or any(k is not None and not _is_tensor(k) for k in indices)
            or not _is_tensor(values)):
        # arguments the op refuses (a list of indices, a number as values): its TypeError,
        # from stand-ins of one sample (self a copy: nothing of the caller's is written)
        probes = [_probe(a) for a in args]
        probes[0] = probes[0].clone()
        PLAIN[name](*probes, **{k: _probe(v) for k, v in kwargs.items()})
        return fallback(name, level, args, kwargs)
    if inplace and not _at(self, level):
        raise _final(inplace_error(name))
    items = indices
    tensors = [k for k in items if _is_tensor(k)]
    if not tensors or any(k.dtype == _C.bool and (_at(k, level) or k.dim() == 0) for k in tensors):
        # (no index tensor, a batched bool mask (its samples select different counts), a
        # 0-d mask: the loop, and its errors)
        return fallback(name, level, args, kwargs)
    r = _lrank(self, level)
    # index_put's None is a full slice (a subscript's would be a new dim)
    as_subscript = tuple(slice(None) if k is None else k for k in items)
    adjacent, before, adv_rank = _advanced_layout(as_subscript, r, level)
    consumed = sum(_lrank(k, level) if k.dtype == _C.bool else 1 for k in tensors)
    sel_rank = r - consumed + adv_rank  # a sample's selection rank
    vp = _physical(values, level)
    if vp.dim() - 1 > sel_rank:
        return fallback(name, level, args, kwargs)  # (torch's shape error, per sample)
    vp = _pad(vp, sel_rank - (vp.dim() - 1))  # [B, *ones, *values.shape]: aligned with a selection
    batched_index = any(_at(k, level) for k in tensors)
    if batched_index:
        n = batch_size(level)
        new_items = [None if k is None else _pad(k._value, adv_rank - (k._value.dim() - 1)) if _at(k, level) else k
                     for k in items]
        phys_indices = (_C.arange(n).view(n, *([1] * adv_rank)), *new_items)
        if adjacent and before > 0:
            # the selection is [B, *index, *before, *after]: the values' `before` dims after
            # the index dims
            vp = vp.permute(0, *range(1 + before, 1 + before + adv_rank), *range(1, 1 + before),
                            *range(1 + before + adv_rank, vp.dim()))
    else:
        phys_indices = (None, *items)
        if not adjacent:
            vp = movedim(vp, 0, adv_rank)  # the selection is [*index, B, *rest]
    if inplace:
        dispatch("index_put_", (self._value, phys_indices, vp, accumulate), {})
        return self
    sv = _physical(self, level)
    return BT(dispatch("index_put", (sv, phys_indices, vp, accumulate), {}), level)


# ---------------------------------------------------------------------------------------
# cat, stack
# ---------------------------------------------------------------------------------------

def _cat_stack(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    tensors = args[0] if args else kwargs["tensors"]
    dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
    n = batch_size(level)
    tensors = list(tensors)
    if name == "cat":
        # torch's legacy rule: 1-D empty tensors are skipped
        ranks = [_lrank(t, level) for t in tensors]
        shapes = [tuple(t.shape) for t in tensors]
        full = [t for t, s in zip(tensors, shapes) if s != (0,)]
        if full and any(len(s) != 1 for s in shapes if s != (0,)):
            tensors = full
            ranks = [_lrank(t, level) for t in tensors]
        rank = ranks[0] if ranks else 1
        d = wrap_dim(dim, rank)
    else:
        rank = _lrank(tensors[0], level) if tensors else 0
        d = wrap_dim(dim, rank + 1)
    phys = [t._value if _at(t, level) else _expand(t, n) for t in tensors]
    return BT(dispatch(name, (phys, d + 1), {}), level)
