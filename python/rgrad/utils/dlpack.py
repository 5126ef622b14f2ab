"""DLPack exchange, as ``torch.utils.dlpack``: tensors shared with other libraries (NumPy,
torch, CuPy, JAX, ...) without copying their memory.

``rgrad.from_dlpack`` is :func:`from_dlpack`; ``Tensor.__dlpack__`` and
``Tensor.__dlpack_device__`` are the producer side of the protocol.
"""

from __future__ import annotations

import enum
from typing import Any

import rgrad
from rgrad import _C

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    # Enums as in DLPack specification (aten/src/ATen/dlpack.h)
    kDLCPU = (1,)
    kDLCUDA = (2,)
    kDLCUDAHost = (3,)
    kDLOpenCL = (4,)
    kDLVulkan = (7,)
    kDLMetal = (8,)
    kDLVPI = (9,)
    kDLROCM = (10,)
    kDLROCMHost = (11,)
    kDLExtDev = (12,)
    kDLCUDAManaged = (13,)
    kDLOneAPI = (14,)
    kDLWebGPU = (15,)
    kDLHexagon = (16,)
    kDLMAIA = (17,)


def to_dlpack(tensor) -> Any:
    """Returns an opaque object (a "DLPack capsule") representing the tensor.

    The capsule shares the tensor's memory. It can be consumed only once (by another
    library's ``from_dlpack``); this is the legacy form of the protocol: prefer passing the
    tensor itself to ``from_dlpack``, which uses ``tensor.__dlpack__``.

    Args:
        tensor: A tensor to be exported.
    """
    return _C._to_dlpack(tensor)


def _dl_device(device) -> tuple[int, int]:
    if device.type == "cuda":
        return (int(DLDeviceType.kDLCUDA), device.index if device.index is not None else 0)
    return (int(DLDeviceType.kDLCPU), 0)


def from_dlpack(ext_tensor: Any, *, device=None, copy: bool | None = None) -> rgrad.Tensor:
    """Converts a tensor from an external library into an ``rgrad.Tensor``.

    The returned tensor shares the memory of the input (which may have come from another
    library): in-place operations on it change the input's data too.

    Args:
        ext_tensor: An object with a ``__dlpack__`` method (a NumPy array, a torch, CuPy or
            JAX array, an rgrad tensor), or a DLPack capsule from a ``to_dlpack`` function.
            A capsule can be consumed only once.
        device: Where to place the new tensor; the input's device when None.
        copy: True copies the data; False never copies (an error if a copy is needed);
            None copies only if necessary.
    """
    if hasattr(ext_tensor, "__dlpack__"):
        kwargs: dict[str, Any] = {"max_version": (1, 0)}
        requested_copy = copy
        producer_handled_copy = True
        cross_device_transfer = False
        if copy is not None:
            kwargs["copy"] = copy
        ext_device = ext_tensor.__dlpack_device__()
        if device is not None:
            if isinstance(device, str):
                device = rgrad.device(device)
            if not isinstance(device, rgrad.device):
                raise AssertionError(f"from_dlpack: unsupported device type: {type(device)}")
            target_dl_device = _dl_device(device)
            cross_device_transfer = tuple(ext_device) != target_dl_device
            if not cross_device_transfer:
                kwargs["dl_device"] = target_dl_device
            if cross_device_transfer and copy is False:
                raise ValueError(
                    f"cannot move DLPack tensor from device {ext_device} to {target_dl_device} "
                    "without copying. Set copy=None or copy=True."
                )
        if ext_device[0] == DLDeviceType.kDLCUDA:
            # the consumer's stream: the current one (1 is the legacy default stream)
            stream = rgrad.cuda.current_stream(f"cuda:{ext_device[1]}")
            kwargs["stream"] = 1 if stream.cuda_stream == 0 else stream.cuda_stream
        # producers that predate a keyword refuse it with a TypeError: retry without it
        dlpack = None
        try:
            dlpack = ext_tensor.__dlpack__(**kwargs)
        except TypeError:
            pass
        if dlpack is None:
            kwargs.pop("max_version", None)
            try:
                dlpack = ext_tensor.__dlpack__(**kwargs)
            except TypeError:
                pass
        if dlpack is None:
            kwargs.pop("copy", None)
            producer_handled_copy = False
            try:
                dlpack = ext_tensor.__dlpack__(**kwargs)
            except TypeError:
                pass
        if dlpack is None:
            kwargs.pop("dl_device", None)
            dlpack = ext_tensor.__dlpack__(**kwargs)
        tensor = _C._from_dlpack(dlpack)
        if requested_copy is True and not producer_handled_copy and not cross_device_transfer:
            tensor = tensor.clone()
        if cross_device_transfer:
            tensor = tensor.to(device)
        return tensor
    if device is not None or copy is not None:
        raise AssertionError("device and copy kwargs not supported when ext_tensor is already a DLPack capsule.")
    return _C._from_dlpack(ext_tensor)
