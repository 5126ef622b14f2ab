"""The Python-side part of ``rgrad.Tensor``: methods off the hot path (printing,
backward, hooks, NumPy exchange, argument-juggling overloads) are attached here to the
native class, so hot ops stay one native call."""

from __future__ import annotations

import builtins

from rgrad import _C, _legacy
from rgrad._C import Tensor
from rgrad._tensor_str import tensor_repr


class Size(tuple):
    """The shape of a tensor: a tuple of ints (``rgrad.Size([2, 3])``)."""

    def __repr__(self) -> str:
        return f"rgrad.Size([{', '.join(str(d) for d in self)}])"

    def numel(self) -> int:
        """Returns the number of elements a tensor of this shape has."""
        n = 1
        for d in self:
            n *= d
        return n


class device:  # noqa: N801  (torch's name)
    """Where a tensor's data lives. rgrad runs on the CPU."""

    def __init__(self, type: "str | device" = "cpu", index: int | None = None) -> None:  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index
        if type != "cpu":
            raise RuntimeError(f"rgrad was built without support for device '{type}'")
        self.type, self.index = type, index

    def __repr__(self) -> str:
        return "device(type='cpu')"

    def __str__(self) -> str:
        return "cpu"

    def __eq__(self, other: object) -> builtins.bool:
        return str(other) == "cpu" if isinstance(other, (str, device)) else NotImplemented

    def __hash__(self) -> int:
        return hash("cpu")


_CPU = device("cpu")


def _shape(self: Tensor) -> Size:
    return Size(self._shape)


def _size(self: Tensor, dim: int | None = None):
    """Returns the shape, or the size of dimension `dim`."""
    s = self._shape
    if dim is None:
        return Size(s)
    n = len(s)
    if not -max(n, 1) <= dim < max(n, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(n, 1)}, {max(n, 1) - 1}], but got {dim})")
    return s[dim] if n else 1


def _backward(self: Tensor, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
    """Computes the gradient of this tensor w.r.t. graph leaves (see rgrad.autograd.backward)."""
    from rgrad import autograd

    autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)


# torch's message for a bad keyword names the method: "Tensor.backward() got an unexpected ..."
_backward.__qualname__ = "Tensor.backward"


def _register_hook(self: Tensor, hook):
    """Registers a backward hook, called with the gradient; it may return a replacement.

    Returns:
        A handle with ``remove()``.
    """
    from rgrad.utils.hooks import RemovableHandle

    return RemovableHandle(self, self._register_hook(hook))


def _numpy(self: Tensor, *, force: builtins.bool = False):
    """Returns the data as a NumPy array (a copy)."""
    import numpy as np

    if self.requires_grad and not force:
        raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
    np_dtype = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "bool": np.bool_}[repr(self.dtype)[6:]]
    return np.frombuffer(self._bytes(), dtype=np_dtype).reshape(self._shape).copy()


def _array(self: Tensor, dtype=None, copy=None):
    arr = _numpy(self.detach())
    return arr if dtype is None else arr.astype(dtype, copy=False)


def _iter(self: Tensor):
    if self.dim() == 0:
        raise TypeError("iteration over a 0-d tensor")
    return iter(self.unbind(0))


def _to(self: Tensor, *args, **kwargs) -> Tensor:
    """Returns a tensor with the given dtype (device 'cpu' is accepted and ignored)."""
    dtype = kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for a in args:
        if isinstance(a, _C.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype = a.dtype
        elif isinstance(a, (str, device)):
            device(a)
        elif a is not None:
            raise TypeError(f"to() received an invalid combination of arguments: {type(a).__name__}")
    if dtype is None or (dtype == self.dtype and not copy):
        return self.clone() if copy else self
    return self._to_dtype(dtype, copy)


def _all(self: Tensor, dim=None, keepdim: builtins.bool = False) -> Tensor:
    """Tests if all elements evaluate to True (along `dim`, when given).

    Args:
        dim: The dimension or dimensions to reduce; all of them when None.
        keepdim: Whether the output keeps the reduced dimensions with size 1.

    Returns:
        A bool tensor.
    """
    zero = self == 0
    return (zero.sum() if dim is None else zero.sum(dim, keepdim=keepdim)) == 0


def _any(self: Tensor, dim=None, keepdim: builtins.bool = False) -> Tensor:
    """Tests if any element evaluates to True (along `dim`, when given).

    Args:
        dim: The dimension or dimensions to reduce; all of them when None.
        keepdim: Whether the output keeps the reduced dimensions with size 1.

    Returns:
        A bool tensor.
    """
    nonzero = self != 0
    return (nonzero.sum() if dim is None else nonzero.sum(dim, keepdim=keepdim)) > 0


def _make_max(is_max: builtins.bool):
    from rgrad import return_types

    nt = return_types.max if is_max else return_types.min
    native = Tensor._max if is_max else Tensor._min

    def reduction(self, dim=None, keepdim=False):
        r = native(self, dim, keepdim)
        return nt(*r) if isinstance(r, tuple) else r

    reduction.__name__ = "max" if is_max else "min"
    reduction.__doc__ = f"Returns the {'maximum' if is_max else 'minimum'} (and its index along `dim` when given)."
    return reduction


def _new_tensor(self: Tensor, data, dtype=None, requires_grad=False) -> Tensor:
    """Returns a new tensor with `data`, by default of this tensor's dtype."""
    return _C.tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)


def _new_zeros(self: Tensor, *size, dtype=None, requires_grad=False) -> Tensor:
    """Returns a tensor of zeros of the given size, by default of this tensor's dtype."""
    return _C.zeros(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)


def _new_ones(self: Tensor, *size, dtype=None, requires_grad=False) -> Tensor:
    """Returns a tensor of ones of the given size, by default of this tensor's dtype."""
    return _C.ones(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)


def _where(self: Tensor, condition, y) -> Tensor:
    """``rgrad.where(condition, self, y)``."""
    return _C.where(condition, self, y)


def _square(self: Tensor) -> Tensor:
    """Returns a new tensor with the square of the elements (``self ** 2``, as torch)."""
    return self.pow(2)


def _square_(self: Tensor) -> Tensor:
    """In-place version of `square()`. Returns this tensor."""
    return self.pow_(2)


def _type_as(self: Tensor, other: Tensor) -> Tensor:
    """Returns this tensor cast to `other`'s dtype."""
    if not isinstance(other, Tensor):
        raise TypeError(f"type_as(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
    return self.to(other.dtype)


for _name, _fn in {
    "__repr__": tensor_repr,
    "__str__": tensor_repr,
    "__iter__": _iter,
    "__array__": _array,
    "backward": _backward,
    "register_hook": _register_hook,
    "numpy": _numpy,
    "size": _size,
    "to": _to,
    "max": _make_max(True),
    "min": _make_max(False),
    "new_tensor": _new_tensor,
    "new_zeros": _new_zeros,
    "new_ones": _new_ones,
    "where": _where,
    "type_as": _type_as,
    "all": _all,
    "any": _any,
    "square": _square,
    "square_": _square_,
}.items():
    setattr(Tensor, _name, _fn)
Tensor.type = _legacy.tensor_type
Tensor.shape = property(_shape, doc="The shape of the tensor (an rgrad.Size).")
Tensor.device = property(lambda self: _CPU, doc="The device of the tensor (always cpu).")
Tensor.is_cuda = property(lambda self: False)
Tensor.__array_priority__ = 1000  # NumPy defers binary operators to Tensor
Tensor.__module__ = "rgrad"


# ---- factories that take a tensor or NumPy array --------------------------------------------

def zeros_like(input: Tensor, *, dtype=None, requires_grad=False, **_) -> Tensor:
    """Returns a tensor of zeros with the shape (and by default the dtype) of `input`."""
    return _C.zeros(input._shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def ones_like(input: Tensor, *, dtype=None, requires_grad=False, **_) -> Tensor:
    """Returns a tensor of ones with the shape (and by default the dtype) of `input`."""
    return _C.ones(input._shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def full_like(input: Tensor, fill_value, *, dtype=None, requires_grad=False, **_) -> Tensor:
    """Returns a tensor filled with `fill_value`, shaped like `input`."""
    return _C.full(input._shape, fill_value, dtype=dtype or input.dtype, requires_grad=requires_grad)


def rand_like(input: Tensor, *, dtype=None, requires_grad=False, **_) -> Tensor:
    """Uniform [0, 1) random numbers shaped like `input`."""
    return _C.rand(input._shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def randn_like(input: Tensor, *, dtype=None, requires_grad=False, **_) -> Tensor:
    """Standard normal random numbers shaped like `input`."""
    return _C.randn(input._shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def randint(*args, size=None, dtype=None, requires_grad=False, **_) -> Tensor:
    """``randint(high, size)`` or ``randint(low, high, size)``: uniform integers in [low, high)."""
    if size is not None:
        args = (*args, size)
    if len(args) == 2:
        low, (high, size) = 0, args
    elif len(args) == 3:
        low, high, size = args
    else:
        raise TypeError("randint() received an invalid combination of arguments")
    return _C._randint(int(low), int(high), list(size), dtype=dtype, requires_grad=requires_grad)


def from_numpy(ndarray) -> Tensor:
    """Creates a tensor from a NumPy array (the data is copied)."""
    import numpy as np

    dtypes = {np.dtype(np.float32): _C.float32, np.dtype(np.float64): _C.float64, np.dtype(np.int64): _C.int64,
              np.dtype(np.bool_): _C.bool, np.dtype(np.int32): _C.int64}
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if ndarray.dtype not in dtypes:
        raise TypeError(
            f"can't convert np.ndarray of type {ndarray.dtype}. The only supported types are: float64, float32, int64, "
            "int32 and bool."
        )
    arr = ndarray.astype(np.int64) if ndarray.dtype == np.int32 else ndarray
    # tobytes() is C-ordered whatever the strides (np.ascontiguousarray would turn 0-d into 1-d)
    return _C._from_bytes(arr.tobytes(order="C"), dtypes[arr.dtype], list(ndarray.shape))
