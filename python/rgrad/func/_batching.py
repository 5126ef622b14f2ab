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
from rgrad.func._batched_tensor import INPLACE, PLAIN, RULES, dispatch, fallback, inplace_error, wrap_dim
from rgrad.func._batching_common import (
    BT,
    _at,
    _final,
    _is_tensor,
    _logical_errors,
    _lrank,
    _numel,
    _other_batched,
    _pad,
)
from rgrad.func._batching_ops_b import RULES_B
from rgrad.func._batching_nn import _addmm, _addr, _class_loss, _linear, _matmul, _mse_loss, _outer
from rgrad.func._batching_random import RANDOM_INPLACE, RANDOM_OPS, _random_rule, random_entry
from rgrad.func._batching_ops_a import RULES_A
from rgrad.func._batching_shape import (
    _cat_stack,
    _dim_shifted,
    _expand_rule,
    _flatten,
    _gather,
    _getitem,
    _index_put,
    _index_select,
    _per_sample_errors,
    _permute,
    _repeat,
    _setitem,
    _inplace_view,
    _squeeze,
    _transpose,
    _unsqueeze,
    _view,
)

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
_DIM_POS = {"sum": 0, "nansum": 0, "mean": 0, "prod": 0, "var": 0, "std": 0, "norm": 1, "amax": 0, "amin": 0, "argmax": 0,
            "argmin": 0, "logsumexp": 0, "max": 0, "min": 0, "all": 0, "any": 0, "softmax": 0, "log_softmax": 0}
# reductions whose dim must be an int: with dim=None they reduce the flattened sample
_FLATTEN_WHEN_NONE = {"prod", "argmax", "argmin", "norm", "max", "min"}
_KEEPDIM_POS = {"sum": 1, "nansum": 1, "mean": 1, "prod": 1, "var": 2, "std": 2, "norm": 2, "amax": 1, "amin": 1, "argmax": 1,
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
        kwargs.pop("dim", None)  # (given by keyword or by position: passed on by position)
        if r == 0:
            return BT(dispatch(name, (v.unsqueeze(1), 1, *rest[1:]), kwargs).squeeze(1), level)
        return BT(dispatch(name, (v, d + 1, *rest[1:]), kwargs), level)

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



def _front(x: Any, level: int) -> Any:
    """``x``'s physical value with this level's batch dim in front (a size-1 dim added for
    an operand not batched here, so that it broadcasts against the batch)."""
    return x._value if _at(x, level) else x.unsqueeze(0)


def _linalg_cross_rule(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    """``a._linalg_cross(b, dim)``: both operands with the batch dim in front, ``dim``
    shifted past it (torch's check that the ranks agree sees the logical ranks)."""
    a, b = args[0], args[1]
    dim = args[2] if len(args) > 2 else kwargs["dim"]
    ra = a.dim()
    rb = b.dim()
    if ra != rb:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    d = wrap_dim(dim, ra)
    return BT(dispatch(name, (_front(a, level), _front(b, level), d + 1), {}), level)


def _decomposition_rule(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    """``A._linalg_eigh(UPLO, compute_v)``, ``A._linalg_svd(full_matrices, compute_uv)``,
    ``A._linalg_qr(mode)``: the decompositions run over any leading dims, so the batch dim
    goes in front and each result is batched there (an empty result, a vector the flags
    left uncomputed, stays as it is). A logical input of rank < 2 raises what the op
    raises on the logical shape."""
    x = args[0]
    v = x._value
    if v.dim() - 1 < 2:
        from rgrad.func._batching_common import _probe

        PLAIN[name](_probe(x), *args[1:], **kwargs)
    outs = dispatch(name, (v, *args[1:]), kwargs)
    return tuple(BT(o, level) if o.dim() >= 2 else o for o in outs)


def _pinv_rule(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    """``A._linalg_pinv(atol, rtol, hermitian)``: the batch dim in front; a tolerance
    batched here too (its logical dims padded to the input's logical batch dims), an
    unbatched one broadcasts as given."""
    x = args[0]
    v = x._value
    if v.dim() - 1 < 2:
        from rgrad.func._batching_common import _probe

        PLAIN[name](_probe(x), *args[1:], **kwargs)
    rest = list(args[1:])
    for key, pos in (("atol", 0), ("rtol", 1)):
        t = rest[pos] if pos < len(rest) else kwargs.get(key)
        if t is not None and _is_tensor(t) and _at(t, level):
            # its logical dims align with the input's logical batch dims, from the right:
            # pad them after the batch dim (an unbatched tolerance broadcasts as it is)
            t = t._value
            lb = v.dim() - 3
            while t.dim() - 1 < lb:
                t = t.unsqueeze(1)
            if pos < len(rest):
                rest[pos] = t
            else:
                kwargs = {**kwargs, key: t}
    return BT(dispatch(name, (v, *rest), kwargs), level)


def _matrix_rule(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    """The factorizations and solves (``_linalg_det``, ``_linalg_solve_ex``, ...): each
    works on its operands' last dims (two for a matrix, one for pivots or a vector) and
    broadcasts the dims before them, so each tensor operand gets this level's batch dim
    in front (size 1 for one not batched here) and size-1 dims after it up to the
    operands' longest logical batch (so that the batch dims line up as the logical ones
    do); a vector right-hand side of ``_linalg_solve_ex`` (judged on the logical shapes)
    is solved as a one-column matrix."""
    if not any(_at(a, level) for a in args):
        return fallback(name, level, args, kwargs)
    vector = False
    if name == "_linalg_solve_ex":
        a, b = args[0], args[1]
        vector = b.dim() == 1 or (b.dim() == a.dim() - 1 and tuple(b.shape) == tuple(a.shape[:-1]))
    # the dims each tensor operand's op works on (pivots: one; the rest: two)
    core = {i: (1 if (i == 1 and name in ("_linalg_lu_solve", "_lu_unpack")) else 2)
            for i, x in enumerate(args) if isinstance(x, (Tensor, BT))}
    if vector:
        core[1] = 1
    longest = max(args[i].dim() - c for i, c in core.items())
    phys = list(args)
    for i, c in core.items():
        p = _front(args[i], level)
        for _ in range(longest - (args[i].dim() - c)):
            p = p.unsqueeze(1)
        phys[i] = p
    if vector:
        phys[1] = phys[1].unsqueeze(-1)
    out = dispatch(name, tuple(phys), kwargs)
    if vector:
        out = (out[0].squeeze(-1), *out[1:])
    if isinstance(out, tuple):
        return tuple(BT(o, level) for o in out)
    return BT(out, level)


_MATRIX_OPS = (
    "_linalg_det", "_linalg_slogdet", "_linalg_inv_ex", "_linalg_solve_ex", "_linalg_lu_factor_ex",
    "_linalg_lu_solve", "_linalg_solve_triangular", "_linalg_cholesky_ex", "_cholesky_solve", "_cholesky_inverse",
    "_linalg_matrix_exp", "_linalg_lu", "_lu_unpack",
)


def _aminmax_rule(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    """``x._aminmax(dim, keepdim)``: per sample, over the logical dims."""
    x = args[0]
    if not _at(x, level):
        return fallback(name, level, args, kwargs)
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
    v = x._value
    r = v.dim() - 1
    if dim is None:
        if r == 0:
            lo, hi = dispatch(name, (v.unsqueeze(1), 1, False), {})
        else:
            lo, hi = dispatch(name, (v.reshape(v.shape[0], _numel(v.shape[1:])), 1, False), {})
        if keepdim:
            lo, hi = (t.reshape(v.shape[0], *([1] * r)) for t in (lo, hi))
        return BT(lo, level), BT(hi, level)
    d = wrap_dim(dim, r) if r > 0 else 0
    if r == 0:
        lo, hi = dispatch(name, (v.unsqueeze(1), 1, False), {})
    else:
        lo, hi = dispatch(name, (v, d + 1, keepdim), {})
    return BT(lo, level), BT(hi, level)


def _dist_rule(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    """``a.dist(b, p)``: the p-norm of the difference over each sample's logical dims."""
    a, b = args[0], args[1]
    p = args[2] if len(args) > 2 else kwargs.get("p", 2)
    diff = a - b
    r = diff.dim()
    v = _front(diff, level)
    if r == 0:
        return BT(v.abs() if p != 0 else (v != 0).to(v.dtype), level)
    return BT(v.norm(p, tuple(range(1, r + 1))), level)


# ---------------------------------------------------------------------------------------
# Factories that take a tensor
# ---------------------------------------------------------------------------------------

def _like(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    x = args[0]
    if not _at(x, level):
        return fallback(name, level, args, kwargs)
    return BT(dispatch(name, (x._value, *args[1:]), kwargs), level)



# ---------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------

UNARY_METHODS = (*_C._UNARY_OPS, "sign", "logical_not", "isnan", "isinf", "isfinite", "bool", "float", "double",
                 "long", "int", "polygamma", "clone", "detach", "contiguous", "square", "__neg__", "__abs__",
                 "__invert__", "__pos__", "zero_", "detach_", "relu", "sigmoid", "tanh", "nan_to_num")
UNARY_INPLACE = tuple(f"{n}_" for n in (*_C._UNARY_OPS, "sign", "polygamma", "square", "nan_to_num")
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
for _n in BINARY_METHODS + BINARY_INPLACE + ("clamp", "clip", "clamp_", "addcmul", "addcmul_", "addcdiv",
                                          "addcdiv_", "lerp", "lerp_"):
    TABLE[_n] = _broadcast
TABLE.update({n: _reduce for n in REDUCTIONS})
TABLE.update({n: _cast for n in CASTS})
TABLE.update({
    "where": _where, "masked_fill": _masked_fill, "masked_fill_": _masked_fill, "fill_": _fill_,
    "expand_as": _as_other, "view_as": _as_other, "reshape_as": _as_other,
    "view": _logical_errors(_view), "reshape": _logical_errors(_view), "flatten": _flatten,
    "transpose": _transpose, "t": _transpose, "permute": _permute, "unsqueeze": _unsqueeze, "squeeze": _squeeze,
    **{n: _inplace_view for n in ("squeeze_", "unsqueeze_", "transpose_", "swapdims_", "swapaxes_", "t_")},
    "expand": _logical_errors(_expand_rule), "repeat": _repeat,
    "select": _logical_errors(_dim_shifted), "narrow": _logical_errors(_dim_shifted),
    "split": _logical_errors(_dim_shifted), "chunk": _logical_errors(_dim_shifted), "unbind": _dim_shifted,
    "matmul": _logical_errors(_matmul), "__matmul__": _logical_errors(_matmul),
    "__rmatmul__": _logical_errors(_matmul), "mm": _logical_errors(_matmul), "bmm": _logical_errors(_matmul),
    "mv": _logical_errors(_matmul), "dot": _logical_errors(_matmul), "outer": _outer,
    "addmm": _logical_errors(_addmm), "addr": _logical_errors(_addr), "linear": _logical_errors(_linear),
    "gather": _logical_errors(_gather), "index_select": _logical_errors(_index_select),
    "__getitem__": _logical_errors(_getitem), "__setitem__": _logical_errors(_setitem),
    "index_put": _per_sample_errors(_index_put), "index_put_": _per_sample_errors(_index_put),
    "cat": _logical_errors(_cat_stack), "stack": _logical_errors(_cat_stack),
    "zeros_like": _like, "ones_like": _like, "full_like": _like,
    "cross_entropy": _logical_errors(_class_loss), "nll_loss": _logical_errors(_class_loss),
    "mse_loss": _logical_errors(_mse_loss),
    "_linalg_cross": _linalg_cross_rule, "_aminmax": _aminmax_rule, "dist": _dist_rule,
    "_linalg_eigh": _decomposition_rule, "_linalg_svd": _decomposition_rule, "_linalg_qr": _decomposition_rule,
    "_linalg_pinv": _pinv_rule,
})
TABLE.update({n: _matrix_rule for n in _MATRIX_OPS})
TABLE.update({n: _random_rule for n in RANDOM_OPS})
TABLE.update(RULES_A)
TABLE.update(RULES_B)
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
# natives behind Python methods (cross, aminmax) that the Python method calls on a BatchedTensor
for _n in ("_linalg_cross", "_aminmax", *_MATRIX_OPS, "_linalg_eigh", "_linalg_svd", "_linalg_qr", "_linalg_pinv"):
    setattr(BT, _n, _make_method(_n))
del _n


def _setitem_method(self: Any, key: Any, value: Any) -> None:
    dispatch("__setitem__", (self, key, value), {})


BT.__setitem__ = _setitem_method
BT.where = _where_method

# (helper-41) natives behind rgrad.cdist, pdist, searchsorted and bucketize: they have no
# rule (the loop fallback runs them per sample)
for _n in ("_cdist_forward", "_euclidean_dist", "_pdist_forward", "_searchsorted", "_unique", "_bincount", "_histc",
           "_norm_dim"):
    setattr(BT, _n, _make_method(_n))
del _n


def _searchsorted_rule(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    """``boundaries._searchsorted(values, right, sorter)``: every operand given the batch
    dim (an unbatched one expanded); 1-D boundaries search the values flattened per
    sample, N-D ones line up with the values' leading dims as they are."""
    from rgrad.func._batching_common import _physical

    bd, values, *rest = args
    sorter = rest[1] if len(rest) > 1 else kwargs.get("sorter")
    right = rest[0] if rest else kwargs.get("right", False)
    if _lrank(bd, level) == 0 or _lrank(values, level) == 0 and _lrank(bd, level) != 1:
        return fallback(name, level, args, kwargs)  # (torch's errors, per sample)
    b, v = _physical(bd, level), _physical(values, level)
    s = None if sorter is None else _physical(sorter, level)
    if b.dim() == 2:
        n = v.shape[0]
        out = dispatch(name, (b, v.reshape(n, -1), right, s), {})
        return BT(out.reshape(v.shape), level)
    return BT(dispatch(name, (b, v, right, s), {}), level)


TABLE["_searchsorted"] = _searchsorted_rule
RULES["_searchsorted"] = _searchsorted_rule


# (helper-45) the natives behind the activations, mvlgamma and angle (``_C._activation``,
# ``_C._activation_``: elementwise, the parameters unbatched) and prelu (``_C._prelu_kernel``:
# the input and the weight broadcast); python/rgrad/_composite5.py dispatches a
# BatchedTensor to them
TABLE.update({"_activation": _unary, "_activation_": _unary, "_prelu_kernel": _broadcast})
INPLACE.add("_activation_")
PLAIN.update({"_activation": _C._activation, "_activation_": _C._activation_, "_prelu_kernel": _C._prelu_kernel})
RULES.update({n: TABLE[n] for n in ("_activation", "_activation_", "_prelu_kernel")})
