"""rgrad.cuda: torch.cuda's API over rgrad's CUDA backend (driver, NVRTC and cuBLAS are
loaded at run time; without a driver ``is_available()`` is False and everything that
needs a device raises torch's RuntimeError)."""

from __future__ import annotations

import contextlib

from rgrad import _C
from rgrad._C import OutOfMemoryError
from rgrad._tensor import device as _device
from rgrad.cuda import profiler  # noqa: F401

__all__ = [
    "is_available", "is_initialized", "device_count", "current_device", "set_device", "device",
    "get_device_name", "get_device_properties", "get_device_capability", "synchronize", "Stream",
    "Event", "current_stream", "default_stream", "stream", "manual_seed", "manual_seed_all",
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "reset_peak_memory_stats", "empty_cache", "memory_stats", "OutOfMemoryError", "AcceleratorError", "profiler",
]


class AcceleratorError(RuntimeError):
    """Exception raised while executing on device (torch.AcceleratorError: a CUDA runtime
    error; ``error_code`` is the cudaError_t)."""

    def __init__(self, *args, error_code: int | None = None):
        super().__init__(*args)
        if error_code is not None:
            self.error_code = error_code


AcceleratorError.__module__ = "rgrad"

_DSA_NOTE = ("Device-side assertions were explicitly omitted for this error check; the error probably arose while "
             "initializing the DSA handlers.")


def _runtime_api_error() -> AcceleratorError:
    """What torch's CUDA runtime calls raise where CUDA cannot be used (they skip the
    driver check of ``_lazy_init``): no driver library, or no device."""
    try:
        _C._cuda_init()
        why = ""
    except RuntimeError as e:
        why = str(e)
    if why.startswith("No CUDA GPUs"):
        code, name, text = 100, "cudaErrorNoDevice", "no CUDA-capable device is detected"
    else:
        code, name, text = 35, "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version"
    return AcceleratorError(
        f"CUDA error: {text}\nSearch for `{name}' in "
        f"https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.\n{_DSA_NOTE}",
        error_code=code)

_initialized = False


def is_available() -> bool:
    """Whether a CUDA driver and at least one GPU are present (never raises)."""
    return _C._cuda_is_available()


def is_initialized() -> bool:
    """Whether rgrad has set CUDA up in this process."""
    return _initialized


def _lazy_init() -> None:
    global _initialized
    if not _initialized:
        _C._cuda_init()
        _initialized = True


def device_count() -> int:
    """The number of GPUs (0 without a driver)."""
    return _C._cuda_device_count()


def _index(device=None, optional=True) -> int:
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    d = _device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return current_device() if d.index is None else d.index


def current_device() -> int:
    """The index of the current device."""
    _lazy_init()
    return _C._cuda_current_device()


def set_device(device) -> None:
    """Sets the current device (a negative index does nothing, as in torch)."""
    idx = _index(device)
    if idx >= 0:
        _lazy_init()
        _C._cuda_set_device(idx)


class device:  # noqa: N801  (torch's name)
    """Context manager that changes the current device."""

    def __init__(self, device):
        self.idx = _index(device) if device is not None else -1
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            self.prev_idx = current_device()
            if self.prev_idx != self.idx:
                set_device(self.idx)

    def __exit__(self, *exc):
        if self.idx >= 0 and self.prev_idx != self.idx:
            set_device(self.prev_idx)
        return False


class _CudaDeviceProperties:
    def __init__(self, d: dict):
        self.__dict__.update(d)
        self.is_integrated = False
        self.is_multi_gpu_board = False

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1024 * 1024)}MB, "
                f"multi_processor_count={self.multi_processor_count}, uuid={self.uuid}, "
                f"L2_cache_size={self.L2_cache_size // (1024 * 1024)}MB)")


def get_device_properties(device=None) -> _CudaDeviceProperties:
    """The properties of a device (name, capability, memory, SM count)."""
    _lazy_init()
    idx = _index(device)
    if idx < 0 or idx >= device_count():
        raise AssertionError("Invalid device id")
    return _CudaDeviceProperties(_C._cuda_get_device_properties(idx))


def get_device_name(device=None) -> str:
    """The name of a device."""
    return get_device_properties(device).name


def get_device_capability(device=None) -> tuple[int, int]:
    """The (major, minor) compute capability of a device."""
    p = get_device_properties(device)
    return p.major, p.minor


def synchronize(device=None) -> None:
    """Waits for all work on every stream of a device."""
    _lazy_init()
    _C._cuda_synchronize(_index(device))


class Stream:
    """A CUDA stream: work queued on it runs in order; streams run concurrently."""

    def __init__(self, device=None, priority: int = 0, **kwargs):
        if "_native" in kwargs:
            self._s = kwargs["_native"]
            return
        if device is None and not is_available():
            # torch makes a device-less stream with the runtime API directly (no _lazy_init)
            raise _runtime_api_error()
        idx = _index(device)  # (torch checks the device argument before setting CUDA up)
        _lazy_init()
        self._s = _C._CudaStream(idx if idx >= 0 else current_device(), priority)

    @property
    def device(self):
        return _device("cuda", self._s.device_index)

    @property
    def stream_id(self) -> int:
        return self._s.stream_id

    @property
    def cuda_stream(self) -> int:
        return self._s.cuda_stream

    @property
    def priority(self) -> int:
        return self._s.priority

    def synchronize(self) -> None:
        self._s.synchronize()

    def query(self) -> bool:
        return self._s.query()

    def wait_event(self, event: "Event") -> None:
        event._ensure(self._s.device_index)
        self._s.wait_event(event._e)

    def wait_stream(self, stream: "Stream") -> None:
        self.wait_event(stream.record_event())

    def record_event(self, event: "Event | None" = None) -> "Event":
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and self._s == other._s

    def __hash__(self) -> int:
        return hash(self._s)

    def __repr__(self) -> str:
        return f"<rgrad.cuda.Stream device={self.device} cuda_stream={self.cuda_stream:#x}>"


class Event:
    """A CUDA event: a point in a stream's work to wait for or to time from."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        self.enable_timing, self.blocking = enable_timing, blocking
        self._e = None

    def _ensure(self, idx: int) -> None:
        if self._e is None:
            self._e = _C._CudaEvent(idx, self.enable_timing, self.blocking)

    def record(self, stream: Stream | None = None) -> None:
        stream = current_stream() if stream is None else stream
        self._ensure(stream._s.device_index)
        self._e.record(stream._s)

    def wait(self, stream: Stream | None = None) -> None:
        (current_stream() if stream is None else stream).wait_event(self)

    @property
    def cuda_event(self) -> int:
        """The CUevent handle (0 until the event is first recorded)."""
        return 0 if self._e is None else self._e.cuda_event

    def query(self) -> bool:
        return True if self._e is None else self._e.query()

    def synchronize(self) -> None:
        if self._e is not None:
            self._e.synchronize()

    def elapsed_time(self, end_event: "Event") -> float:
        """Milliseconds between this event and `end_event` (both recorded and completed)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._e is None or end_event._e is None:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        return self._e.elapsed_time(end_event._e)

    def __repr__(self) -> str:
        if self.cuda_event:
            return f"<rgrad.cuda.Event {self.cuda_event:#x}>"
        return "<rgrad.cuda.Event uninitialized>"


def current_stream(device=None) -> Stream:
    """The calling thread's current stream on a device."""
    _lazy_init()
    return Stream(_native=_C._cuda_current_stream(_index(device)))


def default_stream(device=None) -> Stream:
    """The default stream of a device."""
    _lazy_init()
    idx = _index(device)
    cur = current_stream(idx)
    _C._cuda_set_stream(idx, None)
    try:
        return current_stream(idx)
    finally:
        _C._cuda_set_stream(idx, cur._s)


@contextlib.contextmanager
def stream(stream: Stream | None):
    """Makes `stream` the current stream inside the block (None: no change)."""
    if stream is None:
        yield
        return
    idx = stream._s.device_index
    prev = current_stream(idx)
    _C._cuda_set_stream(idx, stream._s)
    try:
        yield
    finally:
        _C._cuda_set_stream(idx, prev._s)


def manual_seed(seed: int) -> None:
    """Accepted for torch compatibility and does nothing yet: rgrad has no CUDA generator
    (a CUDA tensor's random numbers are drawn by the CPU generator and copied up, so
    ``rgrad.manual_seed`` seeds them)."""
    int(seed)  # (torch's type check of the argument)


def manual_seed_all(seed: int) -> None:
    """As `manual_seed`, for every device."""
    int(seed)


def memory_stats(device=None) -> dict:
    """The caching allocator's statistics (torch's keys)."""
    if not is_available():
        return _C._cuda_memory_stats(0)
    return _C._cuda_memory_stats(_index(device))


def _stat(key: str, device=None) -> int:
    return memory_stats(device).get(key, 0)


def memory_allocated(device=None) -> int:
    """Bytes held by tensors on a device."""
    return _stat("allocated_bytes.all.current", device)


def max_memory_allocated(device=None) -> int:
    """The peak of `memory_allocated` since the start or the last reset."""
    return _stat("allocated_bytes.all.peak", device)


def memory_reserved(device=None) -> int:
    """Bytes the caching allocator holds from the driver (in use or cached)."""
    return _stat("reserved_bytes.all.current", device)


def max_memory_reserved(device=None) -> int:
    """The peak of `memory_reserved` since the start or the last reset."""
    return _stat("reserved_bytes.all.peak", device)


def reset_peak_memory_stats(device=None) -> None:
    """Starts the peak statistics again from the current values."""
    if not is_available():  # torch's words where the allocator has no devices
        if device is None:
            raise RuntimeError("invalid argument to reset_peak_memory_stats")
        raise RuntimeError(f"Invalid device argument {_index(device)}: did you call init?")
    _lazy_init()
    _C._cuda_reset_peak_memory_stats(_index(device))


def empty_cache() -> None:
    """Gives the allocator's cached free blocks back to the driver."""
    if is_available():
        _C._cuda_empty_cache()
