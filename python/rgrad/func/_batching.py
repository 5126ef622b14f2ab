"""The batching rules of ``rgrad.func.vmap``: one table (``RULES``), keyed by op name.

A rule ``rule(name, level, args, kwargs)`` runs op ``name`` at vmap level ``level``: the
BatchedTensors of that level among ``args`` are replaced by their physical values (batch
dim 0), the other tensors (plain ones, or BatchedTensors of lower levels) are unbatched
values at this level; the rule calls the op on those with the ordinary Tensor API (through
``dispatch``, so lower levels recurse) and wraps the result as a BatchedTensor of ``level``.

The rule *kind* of most rows comes from rgrad's own op tables, so a new row gets its rule
without an edit here: every ``rgrad._C._UNARY_OPS`` row (and its in-place form) is
elementwise, every ``rgrad._C._BINARY_OPS`` row and arithmetic/comparison operator
broadcasts. Broadcasting pads each batched operand's logical rank up to the largest
logical rank right after the batch dim, so that unbatched operands line up (a value
physically ``[B, 3]``, logically ``[3]``, against a plain ``[2, 3]`` becomes ``[B, 1, 3]``).
Reductions, softmax, matrix products, shape and indexing ops, cat/stack, losses, casts,
``*_like`` factories and random ops have rules written here. Any other op runs
``_batched_tensor.fallback`` (a loop over the batch).
"""

from __future__ import annotations

from typing import Any

from rgrad import _C, _tensor, return_types
from rgrad._C import Tensor
from rgrad.func._batched_tensor import (
    INPLACE,
    PLAIN,
    RULES,
    BatchedTensor,
    batch_size,
    current_layers,
    dispatch,
    fallback,
    inplace_error,
    max_level,
    wrap_dim,
)

BT = BatchedTensor

# ---------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------
# Elementwise ops
# ---------------------------------------------------------------------------------------

def _unary(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    self = args[0]
    if not _at(self, level):
        if name in INPLACE:
            raise _final(inplace_error(name))
        return fallback(name, level, args, kwargs)
    if (len(args) > 1 or kwargs) and _other_batched(args, kwargs, level):
        return fallback(name, level, args, kwargs)
    out = dispatch(name, (self._value,) + args[1:], kwargs)
    if name in INPLACE:
        return self
    return BT(out, level)


_DTYPE_ORDER = {"bool": 0, "int64": 1, "float32": 2, "float64": 3}
_CATEGORY = {"bool": 0, "int64": 1, "float32": 2, "float64": 2}


def _dtype_name(dtype: Any) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def _promote(dtypes: list) -> Any:
    return max(dtypes, key=lambda d: _DTYPE_ORDER.get(_dtype_name(d), 0))


def _result_type(pairs: list) -> Any:
    """torch's result_type over ``(dtype, has_dims)`` operands (0-dim tensors rank below dimensioned ones)."""
    dims = [d for d, has_dims in pairs if has_dims]
    zeros = [d for d, has_dims in pairs if not has_dims]
    if not dims:
        return _promote(zeros)
    if not zeros:
        return _promote(dims)
    dd, zd = _promote(dims), _promote(zeros)
    return zd if _CATEGORY.get(_dtype_name(zd), 0) > _CATEGORY.get(_dtype_name(dd), 0) else dd


def _fix_promotion(operands: list, level: int) -> Any:
    """The dtype to cast floating operands to, or None.

    A batched operand with no logical dims is physically 1-D, so the op would promote it
    like a dimensioned tensor (float32 ``[3]`` + batched float64 scalar: float64, where
    torch gives float32); the common dtype of the logical operands is computed instead.
    """
    if not any(_at(x, level) and x._value.dim() == 1 for x in operands):
        return None
    dtypes = {_dtype_name(x.dtype) for x in operands}
    if len(dtypes) < 2:
        return None
    logical = _result_type([(x.dtype, _lrank(x, level) > 0) for x in operands])
    physical = _result_type([(x.dtype, _at(x, level) or x.dim() > 0) for x in operands])
    if logical == physical:
        return None
    return logical


def _broadcast(name: str, level: int, args: tuple, kwargs: dict, skip: int = -1) -> Any:
    """An elementwise op of several tensors with broadcasting (``skip``: a position left out
    of dtype promotion, where's condition)."""
    inplace = name in INPLACE
    if inplace and not _at(args[0], level):
        raise _final(inplace_error(name))
    rank = -1
    operands = []
    for i, a in enumerate(args):
        if _is_tensor(a):
            r = _lrank(a, level)
            if r > rank:
                rank = r
            if i != skip:
                operands.append(a)
    for a in kwargs.values():
        if _is_tensor(a):
            r = _lrank(a, level)
            if r > rank:
                rank = r
            operands.append(a)
    cast = _fix_promotion(operands, level) if len(operands) > 1 else None

    def physical(i: Any, a: Any) -> Any:
        if type(a) is BT and a._level == level:
            v = a._value
            k = rank - (v.dim() - 1)
            if k:
                v = _pad(v, k)
        else:
            v = a
        if cast is not None and i != skip and _is_tensor(v) and v.is_floating_point() and v.dtype != cast:
            v = v.to(cast)
        return v

    new_args = tuple(physical(i, a) for i, a in enumerate(args))
    new_kwargs = {k: physical(None, v) for k, v in kwargs.items()} if kwargs else kwargs
    out = dispatch(name, new_args, new_kwargs)
    if inplace:
        return args[0]
    return BT(out, level)


def _where(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    return _broadcast(name, level, args, kwargs, skip=0)


def _where_method(self: Any, condition: Any, y: Any) -> Any:
    return dispatch("where", (condition, self, y), {})


def _masked_fill(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    self = args[0]
    mask = args[1] if len(args) > 1 else kwargs["mask"]
    value = args[2] if len(args) > 2 else kwargs["value"]
    if not _at(value, level):
        return _broadcast(name, level, (self, mask, value), {})
    # a batched fill value (a 0-dim tensor per sample): where(mask, value, self)
    if name.endswith("_") and not _at(self, level):
        raise _final(inplace_error(name))
    n_rank = max(_lrank(self, level), _lrank(mask, level))
    v = _pad(value._value, n_rank).to(self.dtype)
    filled = dispatch("where", (mask, BT(v, level), self), {})
    if name.endswith("_"):
        self._value.copy_(filled._value)
        return self
    return filled


def _fill_(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    self, value = args[0], (args[1] if len(args) > 1 else kwargs["value"])
    if not _at(value, level):
        return _unary(name, level, (self, value), {})
    if not _at(self, level):
        raise _final(inplace_error("fill_"))
    self._value.copy_(_pad(value._value, self._value.dim() - 1))
    return self


def _clamp(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    return _broadcast(name, level, args, kwargs)


# ---------------------------------------------------------------------------------------
# Casts and metadata-driven ops
# ---------------------------------------------------------------------------------------

def _dtype_args(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """Tensor arguments of a cast replaced by their dtype (only the dtype is read)."""
    return (tuple(a.dtype if (_is_tensor(a) and i > 0) else a for i, a in enumerate(args)),
            {k: (v.dtype if _is_tensor(v) else v) for k, v in kwargs.items()})


def _cast(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    args, kwargs = _dtype_args(args, kwargs)
    if name == "type_as":
        name, args = "to", (args[0], args[1])
    if not _at(args[0], level):
        return dispatch(name, args, kwargs)
    return _unary(name, level, args, kwargs)


def _as_other(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    """expand_as / view_as / reshape_as: the other tensor's logical shape."""
    self, other = args[0], (args[1] if len(args) > 1 else kwargs["other"])
    return dispatch(name[:-3], (self, tuple(other.shape)), {})


# ---------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------

# position of ``dim`` among the arguments after self
_DIM_POS = {"sum": 0, "mean": 0, "prod": 0, "var": 0, "std": 0, "norm": 1, "amax": 0, "amin": 0, "argmax": 0,
            "argmin": 0, "logsumexp": 0, "max": 0, "min": 0, "all": 0, "any": 0, "softmax": 0, "log_softmax": 0}
# reductions whose dim must be an int: with dim=None they reduce the flattened sample
_FLATTEN_WHEN_NONE = {"prod", "argmax", "argmin", "norm", "max", "min"}
_KEEPDIM_POS = {"sum": 1, "mean": 1, "prod": 1, "var": 2, "std": 2, "norm": 2, "amax": 1, "amin": 1, "argmax": 1,
                "argmin": 1, "logsumexp": 1, "max": 1, "min": 1, "all": 1, "any": 1}


def _reduce(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    self = args[0]
    if name in ("max", "min") and len(args) > 1 and _is_tensor(args[1]):
        return _broadcast(name, level, args, kwargs)  # elementwise max(self, other)
    if not _at(self, level) or _other_batched(args, kwargs, level):
        return fallback(name, level, args, kwargs)
    v = self._value
    r = v.dim() - 1
    rest = list(args[1:])
    kwargs = dict(kwargs)
    pos = _DIM_POS[name]
    if len(rest) > pos:
        dim, where = rest[pos], "arg"
    else:
        dim, where = kwargs.get("dim"), "kw"
    if name in ("softmax", "log_softmax"):
        d = wrap_dim(dim, r)
        if r == 0:
            return BT(dispatch(name, (v.unsqueeze(1), 1, *rest[1:]), kwargs).squeeze(1), level)
        rest[0] = d + 1
        return BT(dispatch(name, (v, *rest), kwargs), level)

    keep_pos = _KEEPDIM_POS[name]
    keepdim = rest[keep_pos] if len(rest) > keep_pos else kwargs.get("keepdim", False)

    def put_dim(new_dim: Any, new_v: Any, drop_keepdim: bool = False) -> Any:
        new_rest = list(rest)
        new_kw = dict(kwargs)
        if where == "arg":
            new_rest[pos] = new_dim
        else:
            new_kw["dim"] = new_dim
        if drop_keepdim:
            if len(new_rest) > keep_pos:
                new_rest[keep_pos] = False
            else:
                new_kw["keepdim"] = False
        out = dispatch(name, (new_v, *new_rest), new_kw)
        if name in ("max", "min") and isinstance(out, tuple):
            nt = return_types.max if name == "max" else return_types.min
            return nt(BT(out[0], level), BT(out[1], level))
        return BT(out, level)

    if dim is None:
        if r == 0:
            if name in ("max", "min"):
                return BT(v.unsqueeze(1).amax(1) if name == "max" else v.unsqueeze(1).amin(1), level)
            return put_dim(1, v.unsqueeze(1), drop_keepdim=True)
        if name in _FLATTEN_WHEN_NONE:
            flat = v.reshape(v.shape[0], _numel(v.shape[1:]))
            if name in ("max", "min"):
                out = flat.amax(1) if name == "max" else flat.amin(1)
                return BT(out, level)
            out = put_dim(1, flat, drop_keepdim=True)
            if keepdim:
                out = BT(out._value.reshape(v.shape[0], *([1] * r)), level)
            return out
        return put_dim(tuple(range(1, r + 1)), v)
    if isinstance(dim, (tuple, list)):
        dims = [wrap_dim(d, r) for d in dim]
        if r == 0:
            return put_dim(1 if name in _FLATTEN_WHEN_NONE else (1,), v.unsqueeze(1), drop_keepdim=True)
        return put_dim(tuple(d + 1 for d in dims), v)
    d = wrap_dim(dim, r)
    if r == 0:
        return put_dim(1, v.unsqueeze(1), drop_keepdim=True)
    return put_dim(d + 1, v)


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
# Matrix products
# ---------------------------------------------------------------------------------------

def _matmul_batched(a: Any, b: Any, level: int) -> Any:
    """``a @ b`` with torch's matmul rules on the logical operands; one of them is batched at ``level``."""
    ab, bb = _at(a, level), _at(b, level)
    ra, rb = _lrank(a, level), _lrank(b, level)
    if ra == 0 or rb == 0:
        raise _final(RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {ra}D and {rb}D"))
    if ab and not bb and (rb == 2 or rb == 1):
        # [B, ..., k] @ [k, m] or [k]: the batch dims broadcast as matmul's own
        return BT(dispatch("matmul", (a._value, b), {}), level)
    if bb and not ab and ra == 1:
        if rb == 1:
            return BT(dispatch("matmul", (b._value, a), {}), level)
        return BT(dispatch("matmul", (a, b._value), {}), level)
    if bb and not ab and ra == 2 and rb == 1:
        return BT(dispatch("matmul", (b._value, a.t()), {}), level)
    av = a._value if ab else a
    bv = b._value if bb else b
    squeeze_a = ra == 1
    squeeze_b = rb == 1
    if squeeze_a:
        av = av.unsqueeze(-2)
        ra = 2
    if squeeze_b:
        bv = bv.unsqueeze(-1)
        rb = 2
    batch_rank = max(ra, rb) - 2
    if ab:
        av = _pad(av, batch_rank - (ra - 2))
    if bb:
        bv = _pad(bv, batch_rank - (rb - 2))
    out = dispatch("matmul", (av, bv), {})
    if squeeze_a:
        out = out.squeeze(-2)
    if squeeze_b:
        out = out.squeeze(-1)
    return BT(out, level)


def _check_ranks(name: str, level: int, a: Any, b: Any) -> None:
    ra, rb = _lrank(a, level), _lrank(b, level)
    if name == "mm":
        if ra != 2 or rb != 2:
            raise _final(RuntimeError(f"Shape mismatch: Got incorrect dims for mm(a, b). a has dim {ra}and b has dim "
                                      f"{rb}but expected them to have dim 2 and dim 2"))  # torch's text, spaces too
    elif name == "bmm":
        if ra != 3:
            raise _final(RuntimeError("batch1 must be a 3D tensor"))
        if rb != 3:
            raise _final(RuntimeError("batch2 must be a 3D tensor"))
    elif name == "mv":
        if ra != 2 or rb != 1:
            raise _final(RuntimeError(f"vector + matrix @ vector expected, got 1, {ra}, {rb}"))
    elif name == "dot" and (ra != 1 or rb != 1):
        raise _final(RuntimeError("Got wrong shapes for dot"))


def _matmul(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    a, b = args[0], (args[1] if len(args) > 1 else next(iter(kwargs.values())))
    if name == "__rmatmul__":
        a, b = b, a
    _check_ranks(name, level, a, b)
    if name == "bmm" and _lrank(a, level) == 3 and _lrank(b, level) == 3:
        if a.shape[0] != b.shape[0]:
            raise _final(RuntimeError("batch1 and batch2 must have same number of batches, got "
                                      f"{a.shape[0]} and {b.shape[0]}"))
    return _matmul_batched(a, b, level)


def _outer(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    a, b = args[0], (args[1] if len(args) > 1 else next(iter(kwargs.values())))
    ra, rb = _lrank(a, level), _lrank(b, level)
    if ra != 1 or rb != 1:
        raise _final(RuntimeError(f"outer: Expected 1-D argument self, but got {ra}-D" if ra != 1 else
                                  f"outer: Expected 1-D argument vec2, but got {rb}-D"))
    return dispatch("mul", (a.unsqueeze(-1), b.unsqueeze(0)), {})


def _addmm(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    self, m1, m2 = args[:3]
    beta = kwargs.get("beta", 1) if kwargs.get("beta") is not None else 1
    alpha = kwargs.get("alpha", 1) if kwargs.get("alpha") is not None else 1
    _check_ranks("mm", level, m1, m2)
    out = _matmul_batched(m1, m2, level) if (_at(m1, level) or _at(m2, level)) else BT(
        _expand(dispatch("matmul", (m1, m2), {}), batch_size(level)), level)
    if alpha != 1:
        out = out * alpha
    if beta == 0:
        return out
    return out + (self if beta == 1 else self * beta)


def _linear(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    x = args[0]
    weight = args[1] if len(args) > 1 else kwargs["weight"]
    bias = args[2] if len(args) > 2 else kwargs.get("bias")
    if _at(x, level) and not _at(weight, level) and not _at(bias, level):
        # the batch dim is one more leading dim for linear
        return BT(dispatch("linear", (x._value, weight, bias), {}), level)
    out = dispatch("matmul", (x, weight.t()), {})
    if bias is not None:
        out = out + bias
    return out


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
    self, key, value = args
    if not _at(self, level):
        raise _final(inplace_error(name))
    items = _index_items(key)
    v = self._value
    if any(_at(k, level) for k in items) or (
            _at(value, level) and any(_is_tensor(k) for k in items)
            and not _advanced_layout(items, v.dim() - 1, level)[0]):
        return fallback(name, level, args, kwargs)
    if _at(value, level):
        target_rank = _probe(self)[key].dim()
        val = _pad(value._value, target_rank - (value._value.dim() - 1))
    else:
        val = value
    dispatch("__setitem__", (v, (slice(None), *items), val), {})
    return None


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


# ---------------------------------------------------------------------------------------
# Factories that take a tensor
# ---------------------------------------------------------------------------------------

def _like(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    x = args[0]
    if not _at(x, level):
        return fallback(name, level, args, kwargs)
    return BT(dispatch(name, (x._value, *args[1:]), kwargs), level)


# ---------------------------------------------------------------------------------------
# Losses
# ---------------------------------------------------------------------------------------

def _class_loss(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    """cross_entropy / nll_loss: one loss per sample (each sample's own reduction)."""
    x, target = args[0], args[1]
    reduction = args[2] if len(args) > 2 else kwargs.get("reduction", "mean")
    ignore_index = args[3] if len(args) > 3 else kwargs.get("ignore_index", -100)
    r = _lrank(x, level)
    if r not in (1, 2) or reduction not in ("none", "mean", "sum"):
        return fallback(name, level, args, kwargs)
    xv, tv = _physical(x, level), _physical(target, level)
    n = xv.shape[0]
    if r == 1:
        per = dispatch(name, (xv, tv, "none", ignore_index), {})
        if reduction == "mean":
            per = per / (tv != ignore_index).to(per.dtype)
        return BT(per, level)
    rows, classes = xv.shape[1], xv.shape[2]
    per = dispatch(name, (xv.reshape(n * rows, classes), tv.reshape(n * rows), "none", ignore_index), {})
    per = per.view(n, rows)
    if reduction == "none":
        return BT(per, level)
    total = per.sum(1)
    if reduction == "mean":
        total = total / (tv != ignore_index).sum(1).to(total.dtype)
    return BT(total, level)


def _mse_loss(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    x, target = args[0], args[1]
    reduction = args[2] if len(args) > 2 else kwargs.get("reduction", "mean")
    rank = max(_lrank(x, level), _lrank(target, level))
    xv = _pad(x._value, rank - _lrank(x, level)) if _at(x, level) else x
    tv = _pad(target._value, rank - _lrank(target, level)) if _at(target, level) else target
    per = dispatch("mse_loss", (xv, tv, "none"), {})
    if not (type(per) is BT and per._level == level) and not _at(x, level) and not _at(target, level):
        return fallback(name, level, args, kwargs)
    out = BT(per, level)
    if reduction == "none" or rank == 0:
        return out
    if reduction == "sum":
        return out.sum()
    if reduction == "mean":
        return out.mean()
    raise ValueError(f"{reduction} is not a valid value for reduction")


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


# ---------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------

UNARY_METHODS = (*_C._UNARY_OPS, "sign", "logical_not", "isnan", "isinf", "isfinite", "bool", "float", "double",
                 "long", "int", "polygamma", "clone", "detach", "contiguous", "square", "__neg__", "__abs__",
                 "__invert__", "__pos__", "zero_", "detach_", "relu", "sigmoid", "tanh")
UNARY_INPLACE = tuple(f"{n}_" for n in (*_C._UNARY_OPS, "sign", "polygamma", "square")
                      if f"{n}_" in Tensor.__dict__)
BINARY_METHODS = (*_C._BINARY_OPS, "add", "sub", "mul", "div", "pow", "remainder", "fmod", "floor_divide", "eq",
                  "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "__add__", "__radd__", "__sub__",
                  "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__", "__floordiv__",
                  "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__and__", "__rand__", "__or__",
                  "__ror__", "__xor__", "__rxor__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")
BINARY_INPLACE = (*(f"{n}_" for n in _C._BINARY_OPS if f"{n}_" in Tensor.__dict__), "add_", "sub_", "mul_",
                  "div_", "pow_", "copy_", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ipow__")
REDUCTIONS = tuple(_DIM_POS)
CASTS = ("to", "type", "type_as", "_to_dtype")

#: op name -> rule; every name here has a batching rule (the rest run the fallback loop)
TABLE: dict[str, Any] = {}
for _n in UNARY_METHODS + UNARY_INPLACE:
    TABLE[_n] = _unary
for _n in BINARY_METHODS + BINARY_INPLACE + ("clamp", "clip", "clamp_"):
    TABLE[_n] = _broadcast
TABLE.update({n: _reduce for n in REDUCTIONS})
TABLE.update({n: _cast for n in CASTS})
TABLE.update({
    "where": _where, "masked_fill": _masked_fill, "masked_fill_": _masked_fill, "fill_": _fill_,
    "expand_as": _as_other, "view_as": _as_other, "reshape_as": _as_other,
    "view": _logical_errors(_view), "reshape": _logical_errors(_view), "flatten": _flatten,
    "transpose": _transpose, "t": _transpose, "permute": _permute, "unsqueeze": _unsqueeze, "squeeze": _squeeze,
    "expand": _logical_errors(_expand_rule), "repeat": _repeat,
    "select": _logical_errors(_dim_shifted), "narrow": _logical_errors(_dim_shifted),
    "split": _logical_errors(_dim_shifted), "chunk": _logical_errors(_dim_shifted), "unbind": _dim_shifted,
    "matmul": _logical_errors(_matmul), "__matmul__": _logical_errors(_matmul),
    "__rmatmul__": _logical_errors(_matmul), "mm": _logical_errors(_matmul), "bmm": _logical_errors(_matmul),
    "mv": _logical_errors(_matmul), "dot": _logical_errors(_matmul), "outer": _outer,
    "addmm": _logical_errors(_addmm), "linear": _logical_errors(_linear),
    "gather": _logical_errors(_gather), "index_select": _logical_errors(_index_select),
    "__getitem__": _logical_errors(_getitem), "__setitem__": _logical_errors(_setitem),
    "cat": _logical_errors(_cat_stack), "stack": _logical_errors(_cat_stack),
    "zeros_like": _like, "ones_like": _like, "full_like": _like,
    "cross_entropy": _logical_errors(_class_loss), "nll_loss": _logical_errors(_class_loss),
    "mse_loss": _logical_errors(_mse_loss),
})
TABLE.update({n: _random_rule for n in RANDOM_OPS})
del _n

INPLACE.update(n for n in (*UNARY_INPLACE, *BINARY_INPLACE, "zero_", "detach_", "fill_", "masked_fill_",
                           "clamp_", "__setitem__", "index_put_", *RANDOM_INPLACE))
INPLACE.update(n for n in Tensor.__dict__ if n.endswith("_") and not n.startswith("_"))

# the unbatched ops: Tensor methods (as they are before any swap), and the functions
PLAIN.update({n: f for n, f in Tensor.__dict__.items() if callable(f) and not isinstance(f, type)})
PLAIN.update({n: getattr(_C, n) for n in _C._BINARY_OPS})
PLAIN.update({
    "cat": _C.cat, "stack": _C.stack, "where": _C.where, "linear": _C.linear, "cross_entropy": _C.cross_entropy,
    "nll_loss": _C.nll_loss, "mse_loss": _C.mse_loss, "zeros_like": _tensor.zeros_like,
    "ones_like": _tensor.ones_like, "full_like": _tensor.full_like, "rand_like": _tensor.rand_like,
    "randn_like": _tensor.randn_like, "randint_like": _tensor.randint_like, "rand": _C.rand, "randn": _C.randn,
    "randint": _tensor.randint, "randperm": _C.randperm, "normal": _tensor.normal, "bernoulli": _tensor.bernoulli,
    "multinomial": _C.multinomial,
})
RULES.update(TABLE)


# ---------------------------------------------------------------------------------------
# BatchedTensor's methods: every Tensor method, dispatched
# ---------------------------------------------------------------------------------------

_OPERATOR_DUNDERS = (
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
    "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__",
    "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__neg__", "__pos__", "__abs__",
    "__invert__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__getitem__", "__setitem__",
    "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ipow__",
)


def _make_method(name: str):
    def method(self, *args: Any, **kwargs: Any) -> Any:
        return dispatch(name, (self, *args), kwargs)

    method.__name__ = method.__qualname__ = name
    return method


def _make_random_method(name: str):
    def method(self, *args: Any, **kwargs: Any) -> Any:
        return random_entry(name, (self, *args), kwargs)

    method.__name__ = method.__qualname__ = name
    return method


def method_names() -> list:
    """The Tensor methods a BatchedTensor gets as dispatching methods."""
    names = [n for n, f in Tensor.__dict__.items()
             if not n.startswith("_") and callable(f) and not isinstance(f, (property, type))
             and n not in BT.__dict__]
    return names + ["_to_dtype"] + [n for n in _OPERATOR_DUNDERS if n in Tensor.__dict__ and n != "__setitem__"]


for _n in method_names():
    setattr(BT, _n, _make_random_method(_n) if _n in RANDOM_OPS else _make_method(_n))
del _n


def _setitem_method(self: Any, key: Any, value: Any) -> None:
    dispatch("__setitem__", (self, key, value), {})


BT.__setitem__ = _setitem_method
BT.where = _where_method
