"""The Python-side part of ``rgrad.Tensor``: methods off the hot path (printing,
backward, hooks, NumPy exchange, argument-juggling overloads) are attached here to the
native class, so hot ops stay one native call."""

from __future__ import annotations

import builtins
import warnings

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


_DEVICE_TYPES = ("cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, vulkan, "
                 "mps, meta, hpu, mtia, privateuseone")
# c10::DeviceType's numbers (torch.device's hash is `type << 16 | (uint8) index`).
_DEVICE_TYPE_IDS = {"cpu": 0, "cuda": 1, "mkldnn": 2, "opengl": 3, "opencl": 4, "ideep": 5, "hip": 6, "fpga": 7,
                    "maia": 8, "xla": 9, "vulkan": 10, "xpu": 12, "mps": 13, "meta": 14, "hpu": 15, "ve": 16,
                    "lazy": 17, "ipu": 18, "mtia": 19, "privateuseone": 20}
_NO_INDEX = object()  # `index` not passed (torch tells it from an explicit None)
_BAD_DEVICE_ARGS = ("device() received an invalid combination of arguments - got ({}), but expected one of:\n"
                    " * (rgrad.device device)\n{} * (str type, int index = -1)\n")


def _parse_device_string(s: str) -> tuple[str, int | None]:
    """torch's c10::Device(string): ``[a-zA-Z_]+(:(0|[1-9][0-9]*))?`` and a known type."""
    if not s:
        raise RuntimeError("Device string must not be empty")
    name, sep, idx = s.partition(":")
    ok = bool(name) and all(c.isascii() and (c.isalpha() or c == "_") for c in name)
    if sep:
        ok = ok and idx.isascii() and idx.isdigit() and (idx == "0" or idx[0] != "0")
    if not ok:
        raise RuntimeError(f"Invalid device string: '{s}'")
    index = None
    if sep:
        index = builtins.int(idx)
        if index > 2**31 - 1:  # (std::stoi)
            raise RuntimeError(f"Could not parse device index '{idx}' in device string '{s}'")
    if name not in _DEVICE_TYPE_IDS:
        raise RuntimeError(f"Expected one of {_DEVICE_TYPES} device type at start of device string: {s}")
    return name, index


class layout:  # noqa: N801  (torch's name)
    """How a tensor's elements are laid out in memory: ``rgrad.strided`` (dense, with
    strides) for every rgrad tensor; the sparse layouts exist as names, as torch's, for
    code that compares against them."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"rgrad.{self._name}"

    def __reduce__(self):
        return self._name


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
_mkldnn = layout("_mkldnn")
jagged = layout("jagged")


class device:  # noqa: N801  (torch's name)
    """Where a tensor's data lives: ``device('cpu')``, ``device('cuda:0')``, ``device('cuda', 1)``
    or ``device(1)`` (a CUDA ordinal), parsed as torch parses them. Every device type torch
    names can be described; rgrad's tensors live on ``cpu`` or ``cuda`` only. As a
    context manager, factories called in the block (on this thread) allocate there, as
    with ``rgrad.set_default_device``."""

    __slots__ = ("type", "index")

    def __init__(self, type: "str | int | device", index: "int | None" = _NO_INDEX) -> None:  # type: ignore[assignment]  # noqa: A002
        def kind(v) -> str:
            return "rgrad.device" if isinstance(v, device) else builtins.type(v).__name__

        if index is _NO_INDEX:  # torch's first overload: device(Device device)
            if isinstance(type, device):
                type, index = type.type, type.index
            elif isinstance(type, builtins.int) and not isinstance(type, builtins.bool):
                if type < 0:
                    raise RuntimeError("Device index must not be negative")
                type, index = "cuda", type
            elif isinstance(type, str):
                type, index = _parse_device_string(type)
            else:
                name = kind(type)
                raise TypeError(_BAD_DEVICE_ARGS.format(
                    name, f"      didn't match because some of the arguments have invalid types: (!{name}!)\n"))
        else:  # device(str type, int? index): an explicit index, even None
            if not isinstance(type, str):
                raise TypeError(f"device(): argument 'type' (position 1) must be str, not {kind(type)}")
            if index is not None and (not isinstance(index, builtins.int) or isinstance(index, builtins.bool)):
                raise TypeError(f"device(): argument 'index' (position 2) must be int, not {kind(index)}")
            name, own = _parse_device_string(type)
            if own is not None:
                raise RuntimeError(
                    f"type (string) must not include an index because index was passed explicitly: {type}")
            if index is not None and index < 0:
                raise RuntimeError("Device index must not be negative")
            type = name
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "index", index)

    def __setattr__(self, name, value):
        if name in device.__slots__:
            raise AttributeError(f"attribute '{name}' of 'rgrad.device' objects is not writable")
        raise AttributeError(f"'rgrad.device' object has no attribute '{name}'")

    __delattr__ = lambda self, name: device.__setattr__(self, name, None)  # noqa: E731

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: object) -> builtins.bool:
        if not isinstance(other, device):
            return False
        return self.type == other.type and self.index == other.index

    def __ne__(self, other: object) -> builtins.bool:
        return not self == other

    def _unordered(self, other):
        raise TypeError("comparison not implemented")

    __lt__ = __le__ = __gt__ = __ge__ = _unordered

    def __hash__(self) -> int:
        return (_DEVICE_TYPE_IDS[self.type] << 16) | ((-1 if self.index is None else self.index) & 0xFF)

    def __reduce__(self):
        return (device, (self.type,) if self.index is None else (self.type, self.index))

    def __enter__(self) -> "device":
        _default_stack().append(_C._get_default_device())
        _C._set_default_device(str(self))
        return self

    def __exit__(self, *exc) -> None:
        _C._set_default_device(_default_stack().pop())


_DEFAULTS = __import__("threading").local()


def _default_stack() -> list:
    """The default devices `with device(...)` blocks replaced, on this thread."""
    if not hasattr(_DEFAULTS, "stack"):
        _DEFAULTS.stack = []
    return _DEFAULTS.stack


def set_default_device(device_: "str | int | device | None") -> None:
    """Sets the device factories allocate on when given none, on this thread (None: the
    CPU), as torch.set_default_device."""
    _C._set_default_device(None if device_ is None else str(device(device_)))


def get_default_device() -> device:
    """The device factories allocate on when given none (torch.get_default_device)."""
    d = device(_C._get_default_device())
    if d.type == "cuda":
        _C._cuda_init()  # (torch's error where there is no driver)
    return d


device.__module__ = "rgrad"
_DeviceType = device  # (for functions whose torch signature has a `device` parameter)

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


def _register_post_accumulate_grad_hook(self: Tensor, hook):
    """Registers a hook called with this leaf (``hook(tensor)``, returning None) each time
    backward has accumulated a gradient into its ``.grad`` (not by ``autograd.grad``).

    Returns:
        A handle with ``remove()``.
    """
    from rgrad.utils.hooks import RemovableHandle

    return RemovableHandle(self, self._register_post_accumulate_grad_hook(hook))


def _numpy(self: Tensor, *, force: builtins.bool = False):
    """Returns the tensor as a NumPy ``ndarray``.

    The array and the tensor share their memory: changes to one are seen in the other.
    Refused for a tensor that is not on the CPU, and for one that requires grad while
    grad mode is on (inside ``no_grad`` or ``Function.forward`` it is allowed), as in torch.

    Args:
        force: If True, returns a copy instead, made from ``self.detach().cpu()``, whatever
            the tensor's device and ``requires_grad`` (torch's ``force=True`` shares the
            memory of a CPU tensor; rgrad copies, as its issue 19 asks).
    """
    import numpy as np

    if force:
        t = self.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        return np.array(_C._host_memory(t), copy=True)
    if self.device.type != "cpu":
        raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy the "
                        "tensor to host memory first.")
    if self.requires_grad and _C.is_grad_enabled():
        raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
    if _numpy_reads_dlpack():
        # (NumPy's own DLPack import makes the array fastest: 0.3 µs against 2.4 through
        # __array_interface__)
        return np.from_dlpack(self.detach() if self.requires_grad else self)
    return np.asarray(_C._host_memory(self))


_NUMPY_READS_DLPACK = None


def _numpy_reads_dlpack() -> builtins.bool:
    """Whether NumPy's ``from_dlpack`` takes every rgrad dtype (bool since NumPy 2.0) and
    the versioned protocol (2.1)."""
    global _NUMPY_READS_DLPACK
    if _NUMPY_READS_DLPACK is None:
        import numpy as np

        _NUMPY_READS_DLPACK = np.lib.NumpyVersion(np.__version__) >= "2.1.0"
    return _NUMPY_READS_DLPACK


def _array(self: Tensor, dtype=None, copy=None):
    """NumPy's ``__array__``: ``self.numpy()`` (shared memory), cast to `dtype` if given;
    a copy when `copy` is True."""
    import numpy as np

    arr = _numpy(self)
    if dtype is not None and np.dtype(dtype) != arr.dtype:
        if copy is False:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        return arr.astype(dtype)
    return arr.copy() if copy else arr


def _iter(self: Tensor):
    if self.dim() == 0:
        raise TypeError("iteration over a 0-d tensor")
    return iter(self.unbind(0))


def _to(self: Tensor, *args, **kwargs) -> Tensor:
    """Returns a tensor with the given dtype and/or on the given device; `self` when
    nothing changes and `copy` is False."""
    dtype = kwargs.pop("dtype", None)
    dev = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for a in args:
        if isinstance(a, _C.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype, dev = a.dtype, a.device
        elif isinstance(a, (str, device, builtins.int)) and not isinstance(a, builtins.bool):
            dev = device(a)
        elif a is not None:
            raise TypeError(f"to() received an invalid combination of arguments: {type(a).__name__}")
    out = self
    if dev is not None:
        target = _device_str_of(device(dev))
        if target != self._device_str:
            out = out._to_device(target)
    if dtype is not None and (dtype != out.dtype or (copy and out is self)):
        return out._to_dtype(dtype, copy and out is self)
    if copy and out is self:
        return self.clone()
    return out


def _device_of(self: Tensor) -> device:
    s = self._device_str
    return _CPU if s == "cpu" else device(s)


def _device_str_of(d: device) -> str:
    """A device as tensors name theirs (``_device_str``): ``cpu`` (any index), ``cuda:N``
    (no index: the current device)."""
    if d.type == "cuda":
        return f"cuda:{_C._cuda_current_device() if d.index is None else d.index}"
    return d.type


def _cuda(self: Tensor, device=None, non_blocking=False, memory_format=None) -> Tensor:
    """Returns a copy of this tensor on a CUDA device (the current one by default); the
    tensor itself when it is there already."""
    d = _DeviceType("cuda" if device is None else device)
    if d.type != "cuda":
        raise RuntimeError("Invalid device, must be cuda device")
    target = _device_str_of(d)
    return self if self._device_str == target else self._to_device(target)


def _cpu(self: Tensor, memory_format=None) -> Tensor:
    """Returns a copy of this tensor in CPU memory; the tensor itself when it is there."""
    return self if self._device_str == "cpu" else self._to_device("cpu")


def _get_device(self: Tensor) -> int:
    s = self._device_str
    return -1 if s == "cpu" else builtins.int(s.split(":")[1])


def _isnan(self: Tensor) -> Tensor:
    """Returns a bool tensor telling which elements are NaN."""
    return self != self


def _isinf(self: Tensor) -> Tensor:
    """Returns a bool tensor telling which elements are positive or negative infinity."""
    if not self.dtype.is_floating_point:
        return _C.zeros(tuple(self._shape), dtype=_C.bool, device=self._device_str)
    return self.abs() == float("inf")


def _isfinite(self: Tensor) -> Tensor:
    """Returns a bool tensor telling which elements are finite (neither NaN nor infinite)."""
    if not self.dtype.is_floating_point:
        return _C.ones(tuple(self._shape), dtype=_C.bool, device=self._device_str)
    return (self == self) & (self.abs() != float("inf"))


_SCALAR_TYPE_NAMES = {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}


def _scalar_type_name(dtype) -> str:
    return _SCALAR_TYPE_NAMES.get(str(dtype).rsplit(".", 1)[-1], str(dtype))


def _check_tensor_arg(fn: str, other, name: str = "other", pos: int = 2) -> None:
    if not isinstance(other, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not {type(other).__name__}")


def _isclose(self: Tensor, other: Tensor, rtol: builtins.float = 1e-05, atol: builtins.float = 1e-08,
             equal_nan: builtins.bool = False) -> Tensor:
    r"""isclose(other, rtol=1e-05, atol=1e-08, equal_nan=False) -> Tensor

    Returns a new tensor with boolean elements representing if each element of ``self`` is
    "close" to the corresponding element of ``other``: ``|self - other| <= atol + rtol *
    |other|``, where equal elements (infinities of one sign included) are always close and
    NaNs are close to each other only with ``equal_nan=True``. Both must have one dtype;
    they broadcast. As torch's (its ATen algorithm: equality, then the finite error test).
    """
    _check_tensor_arg("isclose", self, "input", 1)
    _check_tensor_arg("isclose", other)
    if self.dtype != other.dtype:
        raise RuntimeError(f"{_scalar_type_name(self.dtype)} did not match {_scalar_type_name(other.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {_number_text(rtol)}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {_number_text(atol)}")
    from rgrad.autograd.grad_mode import no_grad  # (rgrad.autograd loads after this module)

    with no_grad():
        close = self == other
        if equal_nan and self.dtype.is_floating_point:
            close = close | (_isnan(self) & _isnan(other))
        if rtol == 0 and atol == 0:
            return close
        a, b = self, other
        if a.dtype == _C.bool:
            a, b = a.to(_C.float32), b.to(_C.float32)
        allowed = (b * rtol).abs() + atol
        actual = (a - b).abs()
        return close | (_isfinite(actual) & (actual <= allowed))


def _number_text(v) -> str:
    """A number as torch's C++ prints it in messages (-1 for -1.0)."""
    if isinstance(v, builtins.float) and v.is_integer():
        return str(builtins.int(v))
    return str(v)


def _allclose(self: Tensor, other: Tensor, rtol: builtins.float = 1e-05, atol: builtins.float = 1e-08,
              equal_nan: builtins.bool = False) -> builtins.bool:
    r"""allclose(other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool

    Whether every element of ``self`` is close to ``other``'s (see :meth:`isclose`).
    """
    _check_tensor_arg("allclose", self, "input", 1)
    _check_tensor_arg("allclose", other)
    return builtins.bool(_isclose(self, other, rtol, atol, equal_nan).all().item())


def _equal(self: Tensor, other: Tensor) -> builtins.bool:
    r"""equal(other) -> bool

    ``True`` if the two tensors have the same size and elements (compared after type
    promotion; NaN is equal to nothing), ``False`` otherwise.
    """
    _check_tensor_arg("equal", self, "input", 1)
    _check_tensor_arg("equal", other)
    if tuple(self.shape) != tuple(other.shape):
        return False
    from rgrad.autograd.grad_mode import no_grad  # (rgrad.autograd loads after this module)

    with no_grad():
        return builtins.bool((self == other).all().item())


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


def _new_tensor(self: Tensor, data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Returns a new tensor with `data`, by default of this tensor's dtype."""
    return _C.tensor(data, dtype=dtype or self.dtype, device=device or self._device_str,
                     requires_grad=requires_grad)


def _new_zeros(self: Tensor, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Returns a tensor of zeros of the given size, by default of this tensor's dtype."""
    return _C.zeros(*size, dtype=dtype or self.dtype, device=device or self._device_str,
                  requires_grad=requires_grad)


def _new_ones(self: Tensor, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Returns a tensor of ones of the given size, by default of this tensor's dtype."""
    return _C.ones(*size, dtype=dtype or self.dtype, device=device or self._device_str,
                  requires_grad=requires_grad)


def _where(self: Tensor, condition, y) -> Tensor:
    """``rgrad.where(condition, self, y)``."""
    return _C.where(condition, self, y)


def _square(self: Tensor) -> Tensor:
    """Returns a new tensor with the square of the elements (``self ** 2``, as torch)."""
    return self.pow(2)


def _square_(self: Tensor) -> Tensor:
    """In-place version of `square()`. Returns this tensor."""
    return self.pow_(2)


_round_table = Tensor.round  # the op table's row: decimals=0
_round_table_ = Tensor.round_


def _round(self: Tensor, *, decimals: int = 0) -> Tensor:
    """Rounds elements to the nearest integer (halves to even), or with ``decimals`` to
    that many decimal places (a negative number: to the left of the point). Integer
    tensors are returned as a copy (decimals=0 only)."""
    if decimals == 0 and type(decimals) is int:
        return _round_table(self)
    return self._round_decimals(decimals)


def _round_(self: Tensor, *, decimals: int = 0) -> Tensor:
    """In-place version of `round()`. Returns this tensor."""
    if decimals == 0 and type(decimals) is int:
        return _round_table_(self)
    return self._round_decimals_(decimals)


def _is_view(self: Tensor) -> bool:
    """Whether this tensor is a view of another (it has a ``_base``)."""
    return self._base is not None


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
    "register_post_accumulate_grad_hook": _register_post_accumulate_grad_hook,
    "numpy": _numpy,
    "size": _size,
    "to": _to,
    "cpu": _cpu,
    "max": _make_max(True),
    "min": _make_max(False),
    "new_tensor": _new_tensor,
    "new_zeros": _new_zeros,
    "new_ones": _new_ones,
    "where": _where,
    "type_as": _type_as,
    "isnan": _isnan,
    "isinf": _isinf,
    "isfinite": _isfinite,
    "isclose": _isclose,
    "allclose": _allclose,
    "equal": _equal,
    "square": _square,
    "square_": _square_,
    "round": _round,
    "_is_view": _is_view,
    "round_": _round_,
}.items():
    setattr(Tensor, _name, _fn)
Tensor.type = _legacy.tensor_type
Tensor.shape = property(_shape, doc="The shape of the tensor (an rgrad.Size).")
Tensor.device = property(_device_of, doc="The device the tensor's data is on.")
Tensor.is_cuda = property(lambda self: self._device_str != "cpu", doc="Whether the tensor is on a CUDA device.")
Tensor.is_cpu = property(lambda self: self._device_str == "cpu", doc="Whether the tensor is in CPU memory.")
Tensor.layout = property(lambda self: strided, doc="The memory layout of the tensor (always rgrad.strided).")
# torch's queries of other layouts and device kinds: an rgrad tensor is none of them
for _name, _what in {"is_sparse": "a sparse COO tensor", "is_sparse_csr": "a sparse CSR tensor",
                     "is_quantized": "a quantized tensor", "is_meta": "a meta tensor (no data)",
                     "is_mkldnn": "an MKL-DNN tensor", "is_nested": "a nested tensor", "is_xpu": "on an XPU",
                     "is_mps": "on an MPS device", "is_ipu": "on an IPU", "is_xla": "on an XLA device",
                     "is_vulkan": "on a Vulkan device", "is_maia": "on a MAIA device",
                     "is_mtia": "on an MTIA device"}.items():
    setattr(Tensor, _name, property(lambda self: False, doc=f"Whether the tensor is {_what} (never, in rgrad)."))
Tensor.cuda = _cuda
Tensor.cpu = _cpu
Tensor.get_device = _get_device
Tensor.__array_priority__ = 1000  # NumPy defers binary operators to Tensor
Tensor.__module__ = "rgrad"


# ---- factories that take a tensor or NumPy array --------------------------------------------

def zeros_like(input: Tensor, *, dtype=None, device=None, requires_grad=False, **_) -> Tensor:
    """Returns a tensor of zeros with the shape (and by default the dtype) of `input`."""
    return _C.zeros(input._shape, dtype=dtype or input.dtype, device=device or input._device_str,
                  requires_grad=requires_grad)


def ones_like(input: Tensor, *, dtype=None, device=None, requires_grad=False, **_) -> Tensor:
    """Returns a tensor of ones with the shape (and by default the dtype) of `input`."""
    return _C.ones(input._shape, dtype=dtype or input.dtype, device=device or input._device_str,
                  requires_grad=requires_grad)


def full_like(input: Tensor, fill_value, *, dtype=None, device=None, requires_grad=False, **_) -> Tensor:
    """Returns a tensor filled with `fill_value`, shaped like `input`."""
    return _C.full(input._shape, fill_value, dtype=dtype or input.dtype, device=device or input._device_str,
                   requires_grad=requires_grad)


def _empty_like(input: Tensor, dtype) -> Tensor:
    """``empty_like(input)`` with torch's preserve_format: a non-contiguous input gives a
    dense output whose dims are laid out in the order of the input's strides (its own
    strides when it is dense; ``infer_dense_strides`` otherwise), so random fills visit
    the elements in the order torch's do."""
    dtype = dtype or input.dtype
    shape = input._shape
    if input.is_contiguous() or input.dim() < 2:
        return _C.empty(shape, dtype=dtype)
    strides = input.stride()
    nd = len(shape)

    def should_swap(d0, d1):  # ATen's infer_dense_strides / TensorIterator comparator
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return -1 if s0 < s1 else 1
        return 1 if shape[d0] > shape[d1] else 0

    perm = list(range(nd - 1, -1, -1))  # innermost first
    for i in range(1, nd):
        dim1 = i
        for dim0 in range(i - 1, -1, -1):
            c = should_swap(perm[dim0], perm[dim1])
            if c > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif c < 0:
                break
    outer = perm[::-1]
    inverse = [0] * nd
    for i, d in enumerate(outer):
        inverse[d] = i
    return _C.empty([shape[d] for d in outer], dtype=dtype).permute(*inverse)


def _finish(t: Tensor, requires_grad) -> Tensor:
    if requires_grad:
        t.requires_grad_(True)
    return t


def rand_like(input: Tensor, *, generator=None, dtype=None, device=None, requires_grad=False, **_) -> Tensor:
    """Uniform [0, 1) random numbers shaped like `input` (``empty_like(input).uniform_()``)."""
    out = _empty_like(input, dtype)
    _C._uniform_(out, 0.0, 1.0, generator)
    return _finish(out.to(device or input.device), requires_grad)


def randn_like(input: Tensor, *, generator=None, dtype=None, device=None, requires_grad=False, **_) -> Tensor:
    """Standard normal random numbers shaped like `input` (``empty_like(input).normal_()``)."""
    out = _empty_like(input, dtype)
    _C._normal_(out, 0.0, 1.0, generator)
    return _finish(out.to(device or input.device), requires_grad)


def randint_like(input: Tensor, *args, low=None, high=None, generator=None, dtype=None, device=None,
                 requires_grad=False, **_) -> Tensor:
    """``randint_like(input, high)`` or ``randint_like(input, low, high)``: integers in [low, high)."""
    if high is None and len(args) == 1:
        low, high = (0 if low is None else low), args[0]
    elif len(args) == 2:
        low, high = args
    elif high is not None and not args:
        low = 0 if low is None else low
    else:
        raise TypeError("randint_like() received an invalid combination of arguments")
    out = _empty_like(input, dtype)
    _C._random_(out, int(low), int(high), generator)
    return _finish(out.to(device or input.device), requires_grad)


def randint(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False, **_) -> Tensor:
    """``randint(high, size)`` or ``randint(low, high, size)``: uniform integers in [low, high)."""
    if size is not None:
        args = (*args, size)
    if len(args) == 2:
        low, (high, size) = 0, args
    elif len(args) == 3:
        low, high, size = args
    else:
        raise TypeError("randint() received an invalid combination of arguments")
    return _C._randint(int(low), int(high), list(size), generator=generator, dtype=dtype, device=device,
                       requires_grad=requires_grad)


def bernoulli(input: Tensor, p=None, *, generator=None) -> Tensor:
    """Draws binary random numbers (0 or 1) from a Bernoulli distribution.

    Args:
        input: The probabilities (float tensor), or, with `p`, the tensor whose shape and dtype the result takes.
        p: A probability used for every element instead of `input`'s values.
        generator: The generator to draw from.

    Returns:
        A tensor shaped and typed like `input`.
    """
    if p is None:
        return _C._bernoulli(input, generator)
    out = _C.empty(input._shape, dtype=input.dtype)
    if isinstance(p, Tensor):
        _C._bernoulli_tensor_(out, p, generator)
    else:
        _C._bernoulli_scalar_(out, float(p), generator)
    return out


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, requires_grad=False, **_) -> Tensor:
    """Returns random numbers drawn from normal distributions with the given means and standard deviations.

    Args:
        mean: A tensor of means, or one mean.
        std: A tensor of standard deviations, or one standard deviation.
        size: The output shape when `mean` and `std` are both numbers.
        generator: The generator to draw from.

    Returns:
        ``empty.normal_(0, 1) * std + mean`` as torch computes it (broadcast shapes).
    """
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mt and not st:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments")
        out = _C._normal_sized(float(mean), float(std), list(size), generator=generator, dtype=dtype)
        return _finish(out, requires_grad)
    if st:
        _C._check_normal_std(std)
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    if mt and st:
        shape = (mean.detach() + std.detach())._shape  # the broadcast shape (and its error)
        out = _C.empty(shape, dtype=mean.dtype)
        _C._normal_(out, 0.0, 1.0, generator)
        return out.mul_(std).add_(mean)
    if mt:
        out = _C.empty(mean._shape, dtype=mean.dtype)
        _C._normal_(out, 0.0, float(std), generator)
        return out.add_(mean)
    out = _C.empty(std._shape, dtype=std.dtype)
    _C._normal_(out, 0.0, 1.0, generator)
    return out.mul_(std).add_(float(mean))


def _normal_(self: Tensor, mean=0.0, std=1.0, *, generator=None) -> Tensor:
    """Fills `self` with numbers from the normal distribution N(mean, std^2)."""
    _C._normal_(self, float(mean), float(std), generator)
    return self


def _uniform_(self: Tensor, from_=0.0, to=1.0, *, generator=None, **kwargs) -> Tensor:
    """Fills `self` with numbers from the uniform distribution on [from, to)."""
    from_ = kwargs.pop("from", from_)
    if kwargs:
        raise TypeError(f"uniform_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    _C._uniform_(self, float(from_), float(to), generator)
    return self


def _random_(self: Tensor, from_=None, to=None, *, generator=None, **kwargs) -> Tensor:
    """Fills `self` with integers from [from, to) (``random_(to)``: [0, to))."""
    from_ = kwargs.pop("from", from_)
    if to is None:
        if from_ is None:
            _C._random_full_(self, generator)
            return self
        from_, to = 0, from_
    _C._random_(self, int(from_ or 0), int(to), generator)
    return self


def _exponential_(self: Tensor, lambd=1.0, *, generator=None) -> Tensor:
    """Fills `self` with draws from the exponential distribution of rate `lambd`."""
    _C._sample_(self, "exponential", float(lambd), 0.0, generator)
    return self


def _cauchy_(self: Tensor, median=0.0, sigma=1.0, *, generator=None) -> Tensor:
    """Fills `self` with draws from the Cauchy distribution."""
    _C._sample_(self, "cauchy", float(median), float(sigma), generator)
    return self


def _geometric_(self: Tensor, p, *, generator=None) -> Tensor:
    """Fills `self` with draws from the geometric distribution of success probability `p`."""
    _C._sample_(self, "geometric", float(p), 0.0, generator)
    return self


def _log_normal_(self: Tensor, mean=1.0, std=2.0, *, generator=None) -> Tensor:
    """Fills `self` with draws from the log-normal distribution exp(N(mean, std^2))."""
    _C._sample_(self, "log_normal", float(mean), float(std), generator)
    return self


def _bernoulli_(self: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Fills `self` with Bernoulli draws: 1 with probability `p` (a number or a tensor)."""
    if isinstance(p, Tensor):
        _C._bernoulli_tensor_(self, p, generator)
    else:
        _C._bernoulli_scalar_(self, float(p), generator)
    return self


def _bernoulli_method(self: Tensor, p=None, *, generator=None) -> Tensor:
    """Returns Bernoulli draws with probabilities `self` (or `p` for every element)."""
    return bernoulli(self, p, generator=generator)


def _multinomial(self: Tensor, num_samples, replacement=False, *, generator=None) -> Tensor:
    """Samples `num_samples` category indices from the distribution(s) in `self`."""
    return _C.multinomial(self, num_samples, replacement, generator=generator)


for _name, _fn in {
    "normal_": _normal_,
    "uniform_": _uniform_,
    "random_": _random_,
    "exponential_": _exponential_,
    "cauchy_": _cauchy_,
    "geometric_": _geometric_,
    "log_normal_": _log_normal_,
    "bernoulli_": _bernoulli_,
    "bernoulli": _bernoulli_method,
    "multinomial": _multinomial,
}.items():
    setattr(Tensor, _name, _fn)


_NUMPY_NOT_WRITABLE_WARNED = False


def _numpy_dtypes():
    import numpy as np

    return {np.float32: _C.float32, np.float64: _C.float64, np.int64: _C.int64, np.bool_: _C.bool,
            np.int32: _C.int64}


def _from_numpy_copy(ndarray, dtype) -> Tensor:
    """A tensor with a copy of `ndarray`'s data (int32 becomes int64)."""
    import numpy as np

    arr = ndarray.astype(np.int64) if ndarray.dtype == np.int32 else ndarray
    # tobytes() is C-ordered whatever the strides (np.ascontiguousarray would turn 0-d into 1-d)
    return _C._from_bytes(arr.tobytes(order="C"), dtype, list(ndarray.shape))


def _numpy_dtype(dt):
    """rgrad's dtype for the NumPy dtype `dt` (TypeError, torch's, when there is none)."""
    dtype = _numpy_dtypes().get(dt.type) if dt.fields is None else None
    if dtype is None:
        raise TypeError(
            f"can't convert np.ndarray of type {dt.type.__module__}.{dt.type.__name__}. The only supported types "
            "are: float64, float32, int64, int32 and bool."
        )
    return dtype


def _copy_from_numpy(ndarray) -> Tensor:
    """``rgrad.tensor``'s NumPy path: a contiguous copy of the data, whatever its strides
    and byte order."""
    dtype = _numpy_dtype(ndarray.dtype)
    if not ndarray.dtype.isnative:
        ndarray = ndarray.astype(ndarray.dtype.newbyteorder("="))
    return _from_numpy_copy(ndarray, dtype)


def from_numpy(ndarray) -> Tensor:
    """Creates a Tensor from a ``numpy.ndarray``.

    The returned tensor and `ndarray` share the same memory: modifications to the tensor
    are reflected in the ndarray and vice versa, and the tensor keeps the array alive.
    Supported dtypes: float64, float32, int64 and bool; an int32 array is copied into an
    int64 tensor (rgrad has no int32), and an array whose data is not aligned to its
    elements is copied (with a warning). A non-writable array is shared with a warning,
    as in torch: writing to the tensor is then undefined behaviour.
    """
    import numpy as np

    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    t = _C._share_numpy(ndarray)
    if t is None:
        return _from_numpy_unshared(ndarray)
    if not _NUMPY_NOT_WRITABLE_WARNED and not ndarray.flags.writeable:
        _warn_not_writable()
    return t


def _warn_not_writable():
    global _NUMPY_NOT_WRITABLE_WARNED
    _NUMPY_NOT_WRITABLE_WARNED = True
    warnings.warn("The given NumPy array is not writable, and rgrad does not support non-writable tensors. This "
                  "means writing to this tensor will result in undefined behavior. You may want to copy the array "
                  "to protect its data or make it writable before converting it to a tensor. This type of warning "
                  "will be suppressed for the rest of this program.", UserWarning, stacklevel=3)


def _from_numpy_unshared(ndarray) -> Tensor:
    """`from_numpy` of an array that `_C._share_numpy` did not share: torch's error for it,
    or a copy (an int32 array, or data not aligned to its elements)."""
    import numpy as np

    dt = ndarray.dtype
    item = dt.itemsize
    strides = ndarray.strides
    if item and any(s % item for s in strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. Copy the numpy array to "
                         "reallocate the memory.")
    if any(s < 0 for s in strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative strides "
                         "are not currently supported. (You can probably work around this by making a copy of your "
                         "array  with array.copy().) ")
    if not dt.isnative:
        raise ValueError("given numpy array has byte order different from the native byte order. Conversion between "
                         "byte orders is currently not supported.")
    if not _NUMPY_NOT_WRITABLE_WARNED and not ndarray.flags.writeable:
        _warn_not_writable()
    dtype = _numpy_dtype(dt)
    if dt.type is not np.int32:
        why = "its data is not aligned to its elements" if ndarray.ctypes.data % item else "it has no buffer"
        warnings.warn(f"rgrad.from_numpy: the array's memory could not be shared ({why}), so it was copied: the "
                      "tensor does not share the array's memory.", UserWarning, stacklevel=3)
    return _from_numpy_copy(ndarray, dtype)