"""torch's legacy typed tensor classes: ``FloatTensor``, ``DoubleTensor``, ``LongTensor``,
``BoolTensor`` (one per dtype rgrad has), and ``Tensor.type()``.

As in torch, they are not subclasses of ``Tensor``: calling one makes an ordinary tensor of
its dtype, and ``isinstance(x, rgrad.FloatTensor)`` asks whether ``x`` is a float32 tensor.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from rgrad import _C
from rgrad._C import Tensor


class tensortype(type):  # noqa: N801 - torch's name for the metaclass
    """The metaclass of the legacy typed tensor classes (torch.tensortype)."""

    dtype: _C.dtype

    def __instancecheck__(cls, obj) -> builtins.bool:
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype

    def __call__(cls, *args, **kwargs) -> Tensor:
        return _legacy_new(cls, args, kwargs)

    def __repr__(cls) -> str:
        return f"<class 'rgrad.{cls.__name__}'>"


def _legacy_new(cls: tensortype, args: tuple, kwargs: dict) -> Tensor:
    """torch's legacy constructor: ``T()``, ``T(*sizes)``, ``T(size)``, ``T(data)`` or ``T(tensor)``."""
    device = kwargs.pop("device", None)
    if kwargs or (device is not None and str(device) != "cpu"):
        got = ", ".join([type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
        raise TypeError(
            f"new() received an invalid combination of arguments - got ({got}), but expected one of:\n"
            " * (*, rgrad.device device = None)\n"
            " * (rgrad.Storage storage)\n"
            " * (Tensor other)\n"
            " * (tuple of ints size, *, rgrad.device device = None)\n"
            " * (object data, *, rgrad.device device = None)\n"
        )
    if not args:
        return _C.zeros(0, dtype=cls.dtype)
    if len(args) == 1:
        (a,) = args
        if isinstance(a, Tensor):
            if a.dtype != cls.dtype:
                raise TypeError(
                    f"expected {_options(cls.dtype)} (got {_options(a.dtype)})"
                )
            return a.detach()
        if isinstance(a, (str, bytes)):
            raise TypeError(f"new(): invalid data type '{type(a).__name__}'")
        from rgrad._tensor import Size  # not at import time: _tensor imports this module

        if isinstance(a, Size):
            return _C.zeros(*a, dtype=cls.dtype)
        if isinstance(a, Sequence) or hasattr(a, "__array__"):
            return _C.tensor(a, dtype=cls.dtype)
    if all(isinstance(a, int) and not isinstance(a, builtins.bool) for a in args):
        # torch leaves the memory uninitialised; rgrad fills it with zeros
        return _C.zeros(*args, dtype=cls.dtype)
    raise TypeError(f"new(): invalid data type '{type(args[0]).__name__}'")


def _options(dtype) -> str:
    c_name = {"float32": "float", "float64": "double", "int64": "long int", "bool": "bool"}[repr(dtype)[6:]]
    return (
        f"TensorOptions(dtype={c_name}, device=cpu, layout=Strided, requires_grad=false (default), "
        "pinned_memory=false (default), memory_format=(nullopt))"
    )


def _make(name: str, dtype) -> tensortype:
    return tensortype(name, (), {"dtype": dtype, "is_cuda": False, "is_sparse": False, "__module__": "rgrad"})


FloatTensor = _make("FloatTensor", _C.float32)
DoubleTensor = _make("DoubleTensor", _C.float64)
LongTensor = _make("LongTensor", _C.int64)
BoolTensor = _make("BoolTensor", _C.bool)

_BY_DTYPE = {t.dtype: t for t in (FloatTensor, DoubleTensor, LongTensor, BoolTensor)}


def tensor_type(self: Tensor, dtype=None, non_blocking: builtins.bool = False, **kwargs):
    """Returns the type if `dtype` is not provided, else casts this object to the specified type.

    Args:
        dtype: The desired type: a dtype, a legacy class (``rgrad.DoubleTensor``) or its name
            (``'rgrad.DoubleTensor'``; torch's ``'torch.DoubleTensor'`` is accepted too).
        non_blocking: Accepted for torch compatibility (rgrad copies synchronously).

    Returns:
        The type name (``'rgrad.FloatTensor'``) when `dtype` is None; otherwise this tensor
        when it already has the type, or a copy cast to it.
    """
    if dtype is None:
        return "rgrad." + _BY_DTYPE[self.dtype].__name__
    if isinstance(dtype, str):
        module, _, name = dtype.rpartition(".")
        cls = next((t for t in _BY_DTYPE.values() if t.__name__ == name), None)
        if cls is None or module not in ("rgrad", "torch"):
            raise ValueError(f"invalid type: '{dtype}'")
        dtype = cls.dtype
    elif isinstance(dtype, tensortype):
        dtype = dtype.dtype
    return self if dtype == self.dtype else self.to(dtype)
