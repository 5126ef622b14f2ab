"""torch's other names for rgrad's ops, the ``torch.*`` function forms of in-place Tensor
methods, and torch's small queries on tensors and dtypes.

An alias is the op it names: ``rgrad.arccos(x)`` records ``AcosBackward0`` as
``torch.arccos`` does. The function forms check their first argument as torch's argument
parser does (``exp_(): argument 'input' (position 1) must be Tensor, not list``).
``install`` makes the Tensor methods (and their vmap ``BatchedTensor`` forms where the op
they name is batched).
"""

from __future__ import annotations

import builtins
from typing import Any, Callable

from rgrad import _C
from rgrad._C import Tensor
from rgrad._vmap_check import is_batched

__all__: list[str] = []  # filled below, as the functions are made

_MISSING: Any = object()


def _type_name(obj) -> str:
    return type(obj).__name__


def _check_tensor(fn: str, value, name: str = "input", pos: int = 1) -> None:
    """torch's argument parser's TypeError for a non-Tensor where a Tensor is expected."""
    if value is _MISSING:
        raise TypeError(f'{fn}() missing 1 required positional arguments: "{name}"')
    if not isinstance(value, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not {_type_name(value)}")


def _function_form(fn: str, method: str) -> Callable[..., Any]:
    """``rgrad.<fn>(input, *args, **kwargs)``: ``input.<method>(*args, **kwargs)``."""

    def function(input=_MISSING, *args, **kwargs):  # noqa: A002
        _check_tensor(fn, input)
        return getattr(input, method)(*args, **kwargs)

    function.__name__ = function.__qualname__ = fn
    function.__doc__ = f"``input.{method}(...)``: see `Tensor.{method}`."
    return function


# ---- 1. aliases ---------------------------------------------------------------------------

# torch's alias -> the op it names (both as Tensor methods, in-place forms with a trailing _)
_UNARY_ALIASES = {
    "arccos": "acos", "arcsin": "asin", "arctan": "atan", "arccosh": "acosh", "arcsinh": "asinh",
    "arctanh": "atanh", "absolute": "abs", "negative": "neg", "fix": "trunc",
}
# method aliases whose in-place form torch also has as a method
_BINARY_ALIASES = {
    "multiply": "mul", "subtract": "sub", "divide": "div", "true_divide": "div",
    "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le", "not_equal": "ne",
    "arctan2": "atan2",
}
# the function forms torch has (module-level names) for each alias
_FUNCTION_ALIASES = {
    **{a: t for a, t in _UNARY_ALIASES.items()},
    **{f"{a}_": f"{t}_" for a, t in _UNARY_ALIASES.items() if a != "absolute"},
    "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le", "not_equal": "ne",
    "ger": "outer", "clip_": "clamp_",
}
# (multiply, subtract, divide, true_divide and absolute already are rgrad functions: the
# method descriptors, kept as they are.)
for _alias, _target in _FUNCTION_ALIASES.items():
    globals()[_alias] = _function_form(_alias, _target)
    __all__.append(_alias)


def arctan2(input=_MISSING, other=_MISSING) -> Tensor:  # noqa: A002
    """Alias for `rgrad.atan2`: the element-wise arctangent of ``input / other`` (both Tensors)."""
    _check_tensor("arctan2", input)
    _check_tensor("arctan2", other, "other", 2)
    return _C.atan2(input, other)


def _arctan2_method(self: Tensor, other=_MISSING) -> Tensor:
    _check_tensor("arctan2", other, "other", 1)
    return self.atan2(other)


def _arctan2_method_(self: Tensor, other=_MISSING) -> Tensor:
    _check_tensor("arctan2_", other, "other", 1)
    return self.atan2_(other)


def positive(input=_MISSING) -> Tensor:  # noqa: A002
    """Returns `input` itself (torch's unary plus), or torch's error for a bool tensor."""
    _check_tensor("positive", input)
    if input.dtype == _C.bool:
        raise NotImplementedError("The `+` operator, on a bool tensor is not supported.")
    return input


__all__ += ["arctan2", "positive"]


# ---- 2. function forms of in-place methods -------------------------------------------------

_INPLACE_FUNCTIONS = (
    "abs_ acos_ acosh_ asin_ asinh_ atan_ atanh_ ceil_ clamp_ cos_ cosh_ deg2rad_ erf_ erfc_ exp2_ "
    "exp_ expm1_ fill_ floor_ frac_ log10_ log1p_ log2_ log_ neg_ rad2deg_ reciprocal_ relu_ round_ "
    "rsqrt_ sigmoid_ sin_ sinh_ sqrt_ square_ tan_ tanh_ trunc_ xlogy_ zero_ detach_"
).split()
for _name in _INPLACE_FUNCTIONS:
    if hasattr(Tensor, _name):
        globals()[_name] = _function_form(_name, _name)
        __all__.append(_name)


def fill(input=_MISSING, value=_MISSING) -> Tensor:  # noqa: A002
    """A new tensor of `input`'s shape and dtype filled with `value` (a number or a 0-d tensor):
    FillBackward0 / FillBackward1, as torch records them."""
    _check_tensor("fill", input)
    if value is _MISSING:
        return input.clone().fill_()  # (fill_'s missing-argument error)
    if is_batched(input, value):
        return input.clone().fill_(value)  # (vmap's fill_ rule)
    return _C._fill(input, value)


__all__.append("fill")


# ---- 3. in-place comparisons, logical ops, fmod_, remainder_, floor_divide_, cumsum_, cumprod_

_CUMOP_DTYPE_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "bool": "bool"}


def _dtype_key(d) -> str:
    return str(d).rsplit(".", 1)[-1]


def _inplace_function(node_name: str, backward: Callable[..., Any]) -> Any:
    """A custom Function writing ``out`` into ``self`` whose node is named as torch's
    (``EqBackward1``): forward(self, other, out) -> self, marked dirty."""
    from rgrad.autograd import Function

    def forward(ctx, self_, other, payload):
        out, saved = payload  # (a tuple: not inputs of the node, as in torch's)
        ctx.other = other
        ctx.save_for_backward(*saved)
        ctx.mark_dirty(self_)
        return self_.copy_(out)

    def backward_all(ctx, grad):
        g_self, g_other = backward(ctx, grad)
        return g_self, g_other, None

    cls: Any = type(f"_Inplace{node_name}", (Function,), {"forward": staticmethod(forward),
                                                       "backward": staticmethod(backward_all)})
    cls._backward_cls.__name__ = cls._backward_cls.__qualname__ = node_name
    return cls


def _zero_grads(ctx, grad):
    """A comparison's derivative: zeros for each tensor input."""
    self_like, other_like = ctx.saved_tensors
    return (grad.new_zeros(self_like.shape) if ctx.needs_input_grad[0] else None,
            other_like.new_zeros(other_like.shape) if ctx.needs_input_grad[1] else None)


def _recompute_grads(op: Callable[..., Tensor]) -> Callable[..., Any]:
    """The derivative of the out-of-place ``op`` at the saved original input (a copy made
    before the write, attached to the input's history): under ``create_graph`` the
    gradients are recorded from it, so that higher derivatives are the op's."""

    def backward(ctx, grad):
        import rgrad

        create = rgrad.is_grad_enabled()  # (the engine's create_graph)
        orig, *rest = ctx.saved_tensors
        need_x, need_o = bool(ctx.needs_input_grad[0]), bool(rest) and bool(ctx.needs_input_grad[1])
        if not (need_x or need_o):
            return None, None
        with rgrad.enable_grad():
            if create:
                x, other = orig, (rest[0] if rest else ctx.other)
            else:
                x = orig.detach().requires_grad_(need_x)
                other = rest[0].detach().requires_grad_(need_o) if rest else ctx.other
            y = op(x, other)
            inputs = ([x] if need_x else []) + ([other] if need_o else [])
            grads = list(rgrad.autograd.grad(y, inputs, grad, create_graph=create, allow_unused=True))
        return (grads.pop(0) if need_x else None), (grads.pop(0) if need_o else None)

    return backward


def _floor_divide_backward(ctx, grad):
    raise RuntimeError("derivative for aten::floor_divide_ is not implemented")


def _check_leaf(self: Tensor) -> None:
    if self.requires_grad and self.is_leaf:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def _write_inplace(self: Tensor, other, out: Tensor, nodes: tuple[Any, Any], saved: Callable[[], tuple]) -> Tensor:
    """Writes ``out`` (already checked) into ``self``, recorded as torch's node when autograd
    records (``nodes``: the Functions for a number and for a tensor ``other``; ``saved()``:
    what the derivative reads, made before the write)."""
    import rgrad

    other_grad = isinstance(other, Tensor) and other.requires_grad
    if not rgrad.is_grad_enabled() or not (self.requires_grad or other_grad):
        return self.copy_(out)
    _check_leaf(self)
    fn = nodes[1] if isinstance(other, Tensor) else nodes[0]
    return fn.apply(self, other, (out.detach(), saved()))


def _check_out_shape(self: Tensor, out: Tensor) -> None:
    if tuple(out.shape) != tuple(self.shape):
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(out.shape)}")


def _check_cast(result_dtype, self: Tensor) -> None:
    from rgrad._tensor import _scalar_type_name

    if not can_cast(result_dtype, self.dtype):
        raise RuntimeError(f"result type {_scalar_type_name(result_dtype)} can't be cast to the desired output type "
                           f"{_scalar_type_name(self.dtype)}")


def _make_comparison_(op: str) -> Callable[..., Tensor]:
    node = op.capitalize() + "Backward"
    nodes = (_inplace_function(node + "0", _zero_grads), _inplace_function(node + "1", _zero_grads))

    def method(self: Tensor, other) -> Tensor:
        out = getattr(self, op)(other)
        _check_out_shape(self, out)
        if isinstance(other, Tensor):
            return _write_inplace(self, other, out, nodes, lambda: (self.detach(), other.detach()))
        return _write_inplace(self, other, out, nodes, lambda: (self.detach(), self.new_zeros(())))

    method.__name__ = method.__qualname__ = op + "_"
    method.__doc__ = (f"In-place version of `Tensor.{op}`: writes 1 where the comparison holds, 0 elsewhere, in "
                      "this tensor's dtype.")
    return method


def _make_arith_(op: str, node: str | None) -> Callable[..., Tensor]:
    def op_fn(x, other):
        return getattr(x, op)(other)

    if node is None:  # floor_divide_: torch's NotImplemented node
        nodes = (_inplace_function("NotImplemented", _floor_divide_backward),) * 2
    else:
        backward = _recompute_grads(op_fn)
        nodes = (_inplace_function(node + "0", backward), _inplace_function(node + "1", backward))

    def method(self: Tensor, other) -> Tensor:
        out = op_fn(self, other)
        _check_cast(out.dtype, self)
        _check_out_shape(self, out)
        return _write_inplace(self, other, out, nodes,
                              lambda: (self.clone(), other) if isinstance(other, Tensor) else (self.clone(),))

    method.__name__ = method.__qualname__ = op + "_"
    method.__doc__ = f"In-place version of `Tensor.{op}`. Returns this tensor."
    return method


def _make_cum_(op: str, node: str) -> Callable[..., Tensor]:
    backward = _recompute_grads(lambda x, dim: getattr(x, op)(dim))
    fn = _inplace_function(node, backward)

    def method(self: Tensor, dim, *, dtype=None) -> Tensor:
        import rgrad

        out = getattr(self, op)(dim)  # (its errors first: the dim's)
        if dtype is not None and dtype != self.dtype:
            raise RuntimeError(f"Bad in-place call: input tensor dtype {_CUMOP_DTYPE_NAMES[_dtype_key(self.dtype)]} "
                               f"and output tensor dtype {_CUMOP_DTYPE_NAMES[_dtype_key(dtype)]} should match")
        if self.dtype == _C.bool:
            raise NotImplementedError(f"\"{op}_out_cpu\" not implemented for 'Bool'")
        if not rgrad.is_grad_enabled() or not self.requires_grad:
            return self.copy_(out)
        _check_leaf(self)
        return fn.apply(self, dim, (out.detach(), (self.clone(),)))

    method.__name__ = method.__qualname__ = op + "_"
    method.__doc__ = f"In-place version of `Tensor.{op}` (dtype, if given, must be this tensor's). Returns this tensor."
    return method


def _make_logical_(op: str) -> Callable[..., Tensor]:
    """torch's in-place logical ops write without recording (the tensor keeps its node)."""

    def method(self: Tensor, *other) -> Tensor:
        import rgrad

        out = getattr(self, op)(*other)
        _check_out_shape(self, out)
        with rgrad.no_grad():
            return self.copy_(out)

    method.__name__ = method.__qualname__ = op + "_"
    method.__doc__ = f"In-place version of `Tensor.{op}`: 1 where true, 0 elsewhere, in this tensor's dtype."
    return method


def _logical_xor_method(self: Tensor, other=_MISSING) -> Tensor:
    _check_tensor("logical_xor", other, "other", 1)
    return self.ne(0).ne(other.ne(0))


def logical_xor(input=_MISSING, other=_MISSING) -> Tensor:  # noqa: A002
    """Element-wise logical XOR of `input` and `other` (non-zero is True), a bool tensor."""
    _check_tensor("logical_xor", input)
    _check_tensor("logical_xor", other, "other", 2)
    return input.ne(0).ne(other.ne(0))


__all__.append("logical_xor")


def _group3_methods() -> dict[str, Any]:
    methods: dict[str, Any] = {op + "_": _make_comparison_(op) for op in ("eq", "ne", "lt", "le", "gt", "ge")}
    methods["fmod_"] = _make_arith_("fmod", "FmodBackward")
    methods["remainder_"] = _make_arith_("remainder", "RemainderBackward")
    methods["floor_divide_"] = _make_arith_("floor_divide", None)
    methods["cumsum_"] = _make_cum_("cumsum", "CumsumBackward0")
    methods["cumprod_"] = _make_cum_("cumprod", "CumprodBackward0")
    methods["logical_xor"] = _logical_xor_method
    for op in ("logical_and", "logical_or", "logical_not", "logical_xor"):
        methods[op + "_"] = _make_logical_(op)
    return methods

# ---- 4. queries and small functions ------------------------------------------------------


def _query(fn: str, query: Callable[[Tensor], Any], doc: str) -> Callable[..., Any]:
    def function(input=_MISSING):  # noqa: A002
        _check_tensor(fn, input)
        return query(input)

    function.__name__ = function.__qualname__ = fn
    function.__doc__ = doc
    return function


is_floating_point = _query("is_floating_point", lambda t: t.is_floating_point(),
                           "Whether `input`'s dtype is a floating-point type (float32, float64).")
is_complex = _query("is_complex", lambda t: False,
                    "Whether `input`'s dtype is complex: always False (rgrad has no complex dtypes).")
is_conj = _query("is_conj", lambda t: False,
                 "Whether `input` is a lazily conjugated view: always False (no complex dtypes).")
is_neg = _query("is_neg", lambda t: False,
                "Whether `input` is a lazily negated view: always False (no complex dtypes).")
is_inference = _query("is_inference", lambda t: False,
                      "Whether `input` is an inference tensor: always False (rgrad's inference mode makes "
                      "ordinary tensors).")


def _is_nonzero(t: Tensor) -> bool:
    n = t.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return t.item() != 0


is_nonzero = _query("is_nonzero", _is_nonzero,
                    "Whether the single element of `input` is not zero (torch's error for more or fewer elements).")


def is_same_size(input=_MISSING, other=_MISSING) -> bool:  # noqa: A002
    """Whether `input` and `other` have the same shape."""
    _check_tensor("is_same_size", input)
    _check_tensor("is_same_size", other, "other", 2)
    return tuple(input.shape) == tuple(other.shape)


def _is_signed(self: Tensor) -> bool:
    """Whether the dtype is signed (every dtype but bool here)."""
    return self.dtype != _C.bool


def _is_same_size_method(self: Tensor, other=_MISSING) -> bool:
    _check_tensor("is_same_size", other, "other", 1)
    return tuple(self.shape) == tuple(other.shape)


__all__ += ["is_floating_point", "is_complex", "is_conj", "is_neg", "is_inference", "is_nonzero", "is_same_size"]

# ---- dtypes: torch's promotion lattice over rgrad's dtypes

_RANK = {"bool": 0, "int64": 1, "float32": 2, "float64": 3}


def _rank(d) -> int:
    return _RANK[str(d).rsplit(".", 1)[-1]]


def _dtype_by_rank(r: int):
    return (_C.bool, _C.int64, _C.float32, _C.float64)[r]


def _check_dtype(fn: str, value, name: str, pos: int) -> None:
    if not isinstance(value, _C.dtype):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be rgrad.dtype, not {_type_name(value)}")


def promote_types(type1=_MISSING, type2=_MISSING):
    """The smallest dtype to which both `type1` and `type2` can be cast (bool < int64 <
    float32 < float64)."""
    _check_dtype("promote_types", type1, "type1", 1)
    _check_dtype("promote_types", type2, "type2", 2)
    return _dtype_by_rank(builtins.max(_rank(type1), _rank(type2)))


def can_cast(from_=_MISSING, to=_MISSING) -> bool:
    """Whether a cast from `from_` to `to` is allowed by torch's casting rule (no float to
    an integral type, nothing but bool to bool)."""
    _check_dtype("can_cast", from_, "from_", 1)
    _check_dtype("can_cast", to, "to", 2)
    f, t = _rank(from_), _rank(to)
    if f >= 2 and t < 2:
        return False
    return not (t == 0 and f != 0)


def _default_float():
    import rgrad

    get = getattr(rgrad, "get_default_dtype", None)
    return get() if get is not None else _C.float32


def _category(r: int | None) -> int:
    return -1 if r is None else builtins.min(r, 2)  # bool, integral, floating


def _combine(higher: int | None, lower: int | None) -> int | None:
    """ATen's combine_categories over ranks (None: no operand of that kind)."""
    if higher is not None and higher >= 2:
        return higher
    if higher == 0 or (lower is not None and lower >= 2):
        if higher is None:
            return lower
        if lower is None:
            return higher
        return builtins.max(higher, lower)
    return higher if higher is not None else lower


def result_type(tensor1=_MISSING, tensor2=_MISSING):
    """The dtype of an arithmetic op's result on `tensor1` and `tensor2` (tensors or
    numbers), by torch's promotion: tensors with dims outrank 0-d tensors, which outrank
    Python numbers, except that a higher category (bool < integral < floating) of a
    lower-ranked operand promotes."""
    groups: list[int | None] = [None, None, None]  # dim > 0 tensors, 0-d tensors, numbers
    for i, v in enumerate((tensor1, tensor2)):
        if v is _MISSING:
            raise TypeError(f'result_type() missing 1 required positional arguments: "{("tensor", "other")[i]}"')
        if isinstance(v, Tensor):
            g, r = (0 if v.dim() > 0 else 1), _rank(v.dtype)
        elif isinstance(v, builtins.bool):
            g, r = 2, 0
        elif isinstance(v, int):
            g, r = 2, 1
        elif isinstance(v, float):
            g, r = 2, _rank(_default_float())
        else:
            names = ", ".join(type(x).__name__ if not isinstance(x, Tensor) else "Tensor" for x in (tensor1, tensor2))
            raise TypeError(f"result_type() received an invalid combination of arguments - got ({names}), but "
                            "expected one of:\n * (Tensor tensor, Tensor other)\n * (Number scalar, Tensor tensor)\n"
                            " * (Tensor tensor, Number other)\n * (Number scalar1, Number scalar2)\n")
        groups[g] = r if groups[g] is None else builtins.max(groups[g], r)  # type: ignore[type-var]
    out = _combine(groups[0], _combine(groups[1], groups[2]))
    assert out is not None
    return _dtype_by_rank(out)


def typename(obj) -> str:
    """The type name of `obj`: ``Tensor.type()`` for a tensor (``rgrad.FloatTensor``), else
    the module-qualified name of `obj` (a class or function) or of its type."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


__all__ += ["promote_types", "can_cast", "result_type", "typename"]

# ---- shapes and transposes


def _ndimension(self: Tensor) -> int:
    """Alias for `Tensor.dim()`."""
    return self.dim()


def _nbytes(self: Tensor) -> int:
    return self.numel() * self.element_size()


def _itemsize(self: Tensor) -> int:
    return self.element_size()


_ZERO_D_ADVICE = {"mT": "This function is the identity in these cases.", "mH": "Consider using x.conj().",
                  "adjoint": "Consider using x.conj()."}


_WARNED: set[str] = set()


def _warn_once(message: str) -> None:
    """A UserWarning the first time only, as torch's TORCH_WARN_ONCE."""
    if message not in _WARNED:
        import warnings

        _WARNED.add(message)
        warnings.warn(message, UserWarning, stacklevel=3)


def _matrix_transpose(what: str, call: str = "") -> Callable[[Tensor], Tensor]:
    def transpose(self: Tensor) -> Tensor:
        if self.dim() == 0:
            name = "adjoint()" if call else f"Tensor.{what}"
            _warn_once(f"{name} is deprecated on 0-D tensors. {_ZERO_D_ADVICE[what]}")
            return self
        if self.dim() < 2:
            raise RuntimeError(f"tensor.{what}{call} is only supported on matrices or batches of matrices. "
                               f"Got {self.dim()}-D tensor.")
        return self.transpose(-2, -1)

    return transpose


def _H(self: Tensor) -> Tensor:
    nd = self.dim()
    if nd == 0:
        _warn_once("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().")
        return self
    if nd != 2:
        more = " For batches of matrices, consider using tensor.mH" if nd > 2 else ""
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {nd}-D tensor.{more}")
    return self.transpose(0, 1)


_adjoint_method = _matrix_transpose("adjoint", "()")


def adjoint(input=_MISSING) -> Tensor:  # noqa: A002
    """The conjugate transpose of the last two dims of `input` (a view; the transpose for
    real dtypes)."""
    _check_tensor("adjoint", input)
    return _adjoint_method(input)


def _sizes_arg(size) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)) or len(size) == 1 and type(size[0]).__name__ == "Size":
        return tuple(int(s) for s in size[0])
    return tuple(int(s) for s in size)


def _sum_to_size(self: Tensor, *size) -> Tensor:
    """``self`` summed to the shape ``size`` (to which it must be expandable), as ATen's
    sum_to: the leading dims and the dims of size 1 in ``size`` are summed."""
    if not size:
        raise TypeError('sum_to_size() missing 1 required positional arguments: "size"')
    shape = _sizes_arg(size)
    sizes = tuple(self.shape)
    expandable = len(shape) <= len(sizes) and all(
        t == s or t == 1 for t, s in zip(reversed(shape), reversed(sizes))
    )
    if not expandable:
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(sizes)}}}.")
    if not shape:
        return self.sum()
    leading = len(sizes) - len(shape)
    reduce = list(range(leading)) + [i for i in range(leading, len(sizes)) if shape[i - leading] == 1 and sizes[i] != 1]
    out = self.sum(reduce, keepdim=True) if reduce else self
    return out.view(list(shape)) if leading > 0 else out


def _new_full(self: Tensor, size, fill_value, *, dtype=None, device=None, requires_grad=False, **_) -> Tensor:
    """A tensor of shape `size` filled with `fill_value`, of this tensor's dtype and device by default."""
    t = _C.full(list(size), fill_value, dtype=dtype or self.dtype, device=device or self._device_str)
    return t.requires_grad_() if requires_grad else t


def _new_empty(self: Tensor, *size, dtype=None, device=None, requires_grad=False, **_) -> Tensor:
    """An uninitialized tensor of shape `size`, of this tensor's dtype and device by default."""
    t = _C.empty(list(_sizes_arg(size)), dtype=dtype or self.dtype, device=device or self._device_str)
    return t.requires_grad_() if requires_grad else t


def empty_like(input=_MISSING, *, dtype=None, layout=None, device=None, requires_grad=False,  # noqa: A002
               memory_format=None) -> Tensor:
    """An uninitialized tensor shaped like `input` (with its dtype and device unless given)."""
    _check_tensor("empty_like", input)
    from rgrad._tensor import _empty_like

    dev = device if device is not None else input._device_str
    if str(dev) == "cpu":
        t = _empty_like(input, dtype)
    else:
        t = _C.empty(list(input.shape), dtype=dtype or input.dtype, device=dev)
    return t.requires_grad_() if requires_grad else t


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """A 0-d tensor holding the number `s` (of the default float dtype unless given)."""
    return _C.tensor(s, dtype=dtype or _default_float(), device=device, requires_grad=requires_grad)


def _is_numpy(obj) -> bool:
    return type(obj).__module__ == "numpy" and hasattr(obj, "__array_interface__")


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """`data` as a tensor, sharing memory where it can: a tensor of the same dtype and
    device is returned itself (else converted, recorded by autograd), a NumPy array is
    shared (``from_numpy``), other data is copied."""
    import rgrad

    if isinstance(data, Tensor):
        if dtype is not None:
            data = data.to(dtype)
        return data.to(device) if device is not None else data
    if _is_numpy(data):
        t = rgrad.from_numpy(data)
        if dtype is not None:
            t = t.to(dtype)
        return t.to(device) if device is not None else t
    return rgrad.tensor(data, dtype=dtype, device=device)


_ASARRAY_WARNED = False


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=_MISSING) -> Tensor:
    """`obj` as a tensor (its basic forms): a tensor itself unless a copy, a dtype or a
    device is asked for; a NumPy array shared unless ``copy=True``; other data copied."""
    global _ASARRAY_WARNED
    import rgrad

    if isinstance(obj, Tensor):
        if requires_grad is _MISSING:
            if obj.requires_grad and not _ASARRAY_WARNED:
                import warnings

                _ASARRAY_WARNED = True
                warnings.warn("torch.asarray: unspecified requires_grad now defaults to obj.requires_grad instead of "
                              "False. Pass requires_grad=False explicitly to get the old behavior and silence this "
                              "warning.", UserWarning, stacklevel=2)
            t = obj
        else:
            t = obj.detach() if not requires_grad and obj.requires_grad else obj
        if dtype is not None and dtype != t.dtype or device is not None and str(device) != str(t.device):
            if copy is False and dtype is not None and dtype != t.dtype:
                from rgrad._tensor import _scalar_type_name

                raise ValueError(f"can't alias tensor with dtype '{_scalar_type_name(t.dtype)}' into dtype "
                                 f"'{_scalar_type_name(dtype)}'.")
            t = t.to(dtype=dtype or t.dtype, device=device or t.device)
        elif copy:
            t = t.clone()
        if requires_grad is True and not t.requires_grad:
            t.requires_grad_()
        return t
    if _is_numpy(obj):
        t = rgrad.from_numpy(obj) if not copy else rgrad.tensor(obj)
        if dtype is not None:
            t = t.to(dtype)
    else:
        t = rgrad.tensor(obj, dtype=dtype)
    if device is not None:
        t = t.to(device)
    return t.requires_grad_() if requires_grad is True else t


from rgrad._tensor_str import set_printoptions  # noqa: E402  (torch.set_printoptions)

__all__ += ["set_printoptions", "adjoint", "empty_like", "scalar_tensor", "as_tensor", "asarray"]


def install() -> None:
    """The Tensor methods (and the same on vmap's BatchedTensor where it has the op)."""
    from rgrad.func._batched_tensor import BatchedTensor

    group3 = _group3_methods()
    for name, fn in group3.items():
        setattr(Tensor, name, fn)
        setattr(BatchedTensor, name, fn)
    METHODS.extend(group3)
    aliases = {**_UNARY_ALIASES, **{f"{a}_": f"{t}_" for a, t in _UNARY_ALIASES.items()}}
    aliases.update(_BINARY_ALIASES)
    aliases.update({f"{a}_": f"{t}_" for a, t in _BINARY_ALIASES.items() if a != "arctan2"})
    aliases.update({"ger": "outer", "clip_": "clamp_"})
    for alias, target in aliases.items():
        for cls in (Tensor, BatchedTensor):
            fn = getattr(cls, target, None)
            if fn is not None:
                setattr(cls, alias, fn)
    for name, fn in _methods().items():
        setattr(Tensor, name, fn)
        if name not in ("new_full", "new_empty"):  # (factories: the batched tensor's own new_* apply)
            setattr(BatchedTensor, name, fn)
    for name, (getter, doc) in _PROPERTIES.items():
        setattr(Tensor, name, property(getter, doc=doc))
        setattr(BatchedTensor, name, property(getter, doc=doc))
    METHODS.extend(a for a in [*aliases, *_methods()] if hasattr(Tensor, a) and a not in METHODS)


METHODS: list[str] = []  # the Tensor methods ``install`` made (tests/test_op_db_coverage.py)


def _methods() -> dict[str, Any]:
    """The Python-side Tensor methods of this module."""
    return {
        "arctan2": _arctan2_method, "arctan2_": _arctan2_method_, "positive": positive,
        "is_complex": lambda self: False, "is_conj": lambda self: False, "is_neg": lambda self: False,
        "is_inference": lambda self: False, "is_nonzero": _is_nonzero, "is_same_size": _is_same_size_method,
        "is_signed": _is_signed, "ndimension": _ndimension, "adjoint": _adjoint_method, "sum_to_size": _sum_to_size,
        "new_full": _new_full, "new_empty": _new_empty,
    }


_PROPERTIES = {
    "nbytes": (_nbytes, "The number of bytes of the tensor's elements (numel() * element_size())."),
    "itemsize": (_itemsize, "The size of one element in bytes (element_size())."),
    "mT": (_matrix_transpose("mT"), "The transpose of the last two dims (a view)."),
    "mH": (_matrix_transpose("mH"), "The conjugate transpose of the last two dims (mT for real dtypes)."),
    "H": (_H, "The conjugate transpose of a 2-D tensor (its transpose for real dtypes)."),
}
