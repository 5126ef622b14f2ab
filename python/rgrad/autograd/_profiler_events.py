"""The profiler's result rows: torch's FunctionEvent, FunctionEventAvg and the table they print.

Everything here follows torch 2.15's ``torch/autograd/profiler_util.py``: attribute
names, properties, ``__repr__``s, the time and memory formats and ``_build_table``'s
columns, widths and footer, including its oddities (kept on purpose so that output is
identical: ``FunctionEvent.__repr__`` prints ``None_time`` when no device is profiled,
and with both ``with_stack`` and ``with_flops`` the FLOPs value and the source line
swap columns). ``EventList`` and the constructors from the recorder's raw data live in
``profiler_util``, which re-exports this module.

Where rgrad differs: ``DeviceType`` is a small Python enum (torch's is a pybind11 enum
from ``torch._C``); events carry no Kineto metadata (``event_metadata``, ``kernels``
from a GPU trace), since rgrad records only CPU ranges; the table counts the
``[memory]`` events' ``flops`` (None) as 0 where torch's raises TypeError.
"""

from __future__ import annotations

import bisect
import ctypes
import enum
import functools
import math
import warnings
from collections import defaultdict, namedtuple
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = [
    "DeviceType",
    "FormattedTimesMixin",
    "Interval",
    "Kernel",
    "FunctionEvent",
    "FunctionEventAvg",
    "StringTable",
    "MemRecordsAcc",
]


class DeviceType(enum.Enum):
    """torch.autograd.DeviceType: ``str()`` gives ``DeviceType.CPU``, ``repr()`` ``<DeviceType.CPU: 0>``."""

    CPU = 0
    CUDA = 1
    MKLDNN = 2
    OPENGL = 3
    OPENCL = 4
    IDEEP = 5
    HIP = 6
    FPGA = 7
    MAIA = 8
    XLA = 9
    Vulkan = 10
    Metal = 11
    XPU = 12
    MPS = 13
    Meta = 14
    HPU = 15
    VE = 16
    Lazy = 17
    IPU = 18
    MTIA = 19
    PrivateUse1 = 20

    def __int__(self) -> int:
        return self.value


# The device types whose time torch counts as device time (FunctionEvent.device_time_total).
_DEVICE_TIME_TYPES = (DeviceType.CUDA, DeviceType.PrivateUse1, DeviceType.MTIA, DeviceType.HPU, DeviceType.XPU)
# at::RecordScope values that FunctionEvent.scope carries.
SCOPE_FUNCTION = 0
SCOPE_BACKWARD_FUNCTION = 1
SCOPE_USER = 7


# ---------------------------------------------------------------------------------------
# names
# ---------------------------------------------------------------------------------------


@functools.cache
def _load_cxa_demangle() -> tuple[Any, Any] | None:
    """The C++ runtime's ``__cxa_demangle`` and the C library's ``free``, or None where either is missing.
    Looked up on the first demangling, not at import: ``ctypes.util.find_library`` runs
    ``ldconfig`` in a subprocess (and imports subprocess, tempfile and shutil), about a
    third of ``import rgrad``."""
    import ctypes.util

    try:
        free = ctypes.CDLL(None).free
    except (OSError, AttributeError, TypeError):
        return None
    free.argtypes = [ctypes.c_void_p]
    for lib_name in ("stdc++", "c++abi", "c++"):
        path = ctypes.util.find_library(lib_name)
        if path is None:
            continue
        try:
            fn = ctypes.CDLL(path).__cxa_demangle
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        return fn, free
    return None


def demangle(name: str) -> str:
    """torch._C._demangle: the C++ ABI demangling of ``name``, or ``name`` itself when it is not
    a mangled name (``'aten::mul'`` stays, ``'_Z3foov'`` becomes ``'foo()'``).

    torch calls ``abi::__cxa_demangle``; so does rgrad, through ctypes. Without a
    loadable C++ runtime names are returned unchanged.
    """
    found = _load_cxa_demangle()
    if found is None:
        return name
    cxa_demangle, free = found
    status = ctypes.c_int(-1)
    ptr = cxa_demangle(name.encode(), None, None, ctypes.byref(status))
    if status.value != 0 or not ptr:
        return name
    try:
        return ctypes.string_at(ptr).decode(errors="replace")
    finally:
        free(ptr)


class StringTable(defaultdict):
    """A dict that demangles each key on first lookup (torch's ``StringTable``).

    One-character keys are kept as they are: ``'t'`` would demangle to ``unsigned short``.
    """

    def __missing__(self, key: str) -> str:
        self[key] = demangle(key) if len(key) > 1 else key
        return self[key]


# ---------------------------------------------------------------------------------------
# formatting helpers (torch's _format_time, _format_time_share, _format_memory)
# ---------------------------------------------------------------------------------------

_US_IN_SECOND = 1000.0 * 1000.0
_US_IN_MS = 1000.0


def _format_time(time_us: float) -> str:
    """Microseconds as torch prints them: ``1.234s``, ``1.234ms`` or ``1.234us``."""
    if time_us >= _US_IN_SECOND:
        return f"{time_us / _US_IN_SECOND:.3f}s"
    if time_us >= _US_IN_MS:
        return f"{time_us / _US_IN_MS:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_in_unit(time_us: float, default: str, time_unit: str | None) -> str:
    """``table(time_unit=...)``: the time in ``s``, ``ms`` or ``us``; anything else keeps ``default``."""
    if time_unit == "s":
        return f"{time_us / _US_IN_SECOND:.3f}s"
    if time_unit == "ms":
        return f"{time_us / _US_IN_MS:.3f}ms"
    if time_unit == "us":
        return f"{time_us:.3f}us"
    return default


def _format_time_share(time_us: float, total_time_us: float) -> str:
    if total_time_us == 0:
        if time_us != 0:
            raise AssertionError(f"Expected time_us == 0 but got {time_us}")
        return "NaN"
    return f"{time_us * 100.0 / total_time_us:.2f}%"


def _format_memory(nbytes: int) -> str:
    """Bytes as torch prints them: ``1.50 KB``, ``-2.00 MB``, ``12 B``."""
    for unit, size in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if abs(nbytes) >= size:
            return f"{nbytes * 1.0 / size:.2f} {unit}"
    return str(nbytes) + " B"


def _time_str(name: str) -> property:
    return property(lambda self: _format_time(getattr(self, name)))


def _deprecated_alias(new: str, old: str, message: str) -> property:
    """A read-only alias that warns as torch's ``@deprecated(..., category=FutureWarning)`` does."""

    def getter(self: Any) -> Any:
        warnings.warn(message, FutureWarning, stacklevel=2)
        return getattr(self, new)

    getter.__name__ = old
    return property(getter)


class FormattedTimesMixin:
    """The ``*_str`` time properties and per-call averages shared by FunctionEvent and FunctionEventAvg.

    Subclasses define ``cpu_time_total``, ``device_time_total``, their ``self_`` forms and ``count``.
    """

    cpu_time_str = _time_str("cpu_time")
    device_time_str = _time_str("device_time")
    cpu_time_total_str = _time_str("cpu_time_total")
    device_time_total_str = _time_str("device_time_total")
    self_cpu_time_total_str = _time_str("self_cpu_time_total")
    self_device_time_total_str = _time_str("self_device_time_total")

    @property
    def cpu_time(self) -> float:
        """Average CPU time of one call, in microseconds."""
        return 0.0 if self.count == 0 else 1.0 * self.cpu_time_total / self.count  # type: ignore[attr-defined]

    @property
    def device_time(self) -> float:
        """Average device time of one call, in microseconds."""
        return 0.0 if self.count == 0 else 1.0 * self.device_time_total / self.count  # type: ignore[attr-defined]

    cuda_time = _deprecated_alias(
        "device_time", "cuda_time", "`cuda_time` is deprecated, please use `device_time` instead."
    )


class Interval:
    """A time range ``[start, end]`` in microseconds."""

    def __init__(self, start: float, end: float) -> None:
        self.start = start
        self.end = end

    def elapsed_us(self) -> float:
        """Returns the length of the interval."""
        return self.end - self.start


Kernel = namedtuple("Kernel", ["name", "device", "duration"])


# ---------------------------------------------------------------------------------------
# FunctionEvent
# ---------------------------------------------------------------------------------------


class FunctionEvent(FormattedTimesMixin):
    """Profiling information about a single function call (torch's ``FunctionEvent``).

    Times are microseconds since the profiler started; ``cpu_children``/``cpu_parent``
    are set when the event list's tree is built. rgrad's recorder gives
    ``thread`` as a small number (1 = first thread seen), ``fwd_thread`` (the thread of
    the forward op whose backward node this is, 0 for none) and ``sequence_nr`` (-1 for
    none) as torch's Kineto events do, and ``input_shapes``/``stack`` as empty lists when
    shapes or stacks were not recorded.
    """

    def __init__(
        self,
        id: int,
        name: str,
        thread: int,
        start_us: float,
        end_us: float,
        overload_name: str | None = None,
        fwd_thread: int | None = None,
        input_shapes: Any = None,
        stack: list[str] | None = None,
        scope: int = 0,
        use_device: str | None = None,
        cpu_memory_usage: int = 0,
        device_memory_usage: int = 0,
        is_async: bool = False,
        is_remote: bool = False,
        sequence_nr: int = -1,
        node_id: int = -1,
        device_type: DeviceType = DeviceType.CPU,
        device_index: int = 0,
        device_resource_id: int | None = None,
        is_legacy: bool = False,
        flops: int | None = None,
        trace_name: str | None = None,
        concrete_inputs: list[Any] | None = None,
        kwinputs: dict[str, Any] | None = None,
        is_user_annotation: bool = False,
        is_python_function: bool = False,
        activity_type: str | None = None,
        flow_id: int | None = None,
        flow_type: int | None = None,
        flow_start: bool | None = None,
        external_id: int = 0,
        linked_correlation_id: int = 0,
        structured_input_shapes: list | None = None,
        structured_input_strides: list | None = None,
        input_dtypes: list[str] | None = None,
        python_id: int = -1,
        python_parent_id: int = -1,
        python_module_id: int = -1,
        typed_metadata: dict[str, Any] | None = None,
    ) -> None:
        self.id = id
        self.node_id = node_id
        self.name = name
        self.overload_name = overload_name
        self.trace_name = trace_name
        self.time_range = Interval(start_us, end_us)
        self.thread = thread
        self.fwd_thread = fwd_thread
        self.kernels: list[Kernel] = []
        self.count = 1
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.input_shapes = input_shapes
        self.concrete_inputs = concrete_inputs
        self.kwinputs = kwinputs
        self.stack = stack
        self.scope = scope
        self.use_device = use_device
        self.cpu_memory_usage = cpu_memory_usage
        self.device_memory_usage = device_memory_usage
        self.is_async = is_async
        self.is_remote = is_remote
        self.sequence_nr = sequence_nr
        self.device_type = device_type
        self.device_index = device_index
        self.device_resource_id = thread if device_resource_id is None else device_resource_id
        self.is_legacy = is_legacy
        self.flops = flops
        self.is_user_annotation = is_user_annotation
        self.is_python_function = is_python_function
        self.activity_type = activity_type
        # filled in by EventList.table()
        self.self_cpu_percent: Any = -1
        self.total_cpu_percent: Any = -1
        self.total_device_percent: Any = -1
        self.flow_id = flow_id
        self.flow_type = flow_type
        self.flow_start = flow_start
        self.external_id = external_id
        self.linked_correlation_id = linked_correlation_id
        self.metadata = typed_metadata
        self.structured_input_shapes = structured_input_shapes
        self.structured_input_strides = structured_input_strides
        self.input_dtypes = input_dtypes
        self.python_id = python_id
        self.python_parent_id = python_parent_id
        self.python_module_id = python_module_id

    def append_kernel(self, name: str, device: int, duration: float) -> None:
        """Record a device kernel launched by this (CPU) event."""
        if self.device_type != DeviceType.CPU:
            raise AssertionError("Expected device_type to be CPU")
        self.kernels.append(Kernel(name, device, duration))

    def append_cpu_child(self, child: FunctionEvent) -> None:
        """Append a direct CPU child (only direct children, so that self times are right)."""
        if self.device_type != DeviceType.CPU:
            raise AssertionError("Expected device_type to be CPU")
        if not isinstance(child, FunctionEvent):
            raise AssertionError("Expected child to be a FunctionEvent")
        if child.device_type != DeviceType.CPU:
            raise AssertionError("Expected child device_type to be CPU")
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent: FunctionEvent) -> None:
        """Set the immediate CPU parent, the event whose range contains this one's."""
        if self.device_type != DeviceType.CPU:
            raise AssertionError("Expected device_type to be CPU")
        if not isinstance(parent, FunctionEvent):
            raise AssertionError("Expected parent to be a FunctionEvent")
        if parent.device_type != DeviceType.CPU:
            raise AssertionError("Expected parent device_type to be CPU")
        self.cpu_parent = parent

    # Async events have no children, count only in their own total, not in others' self values.
    @property
    def self_cpu_memory_usage(self) -> int:
        """CPU memory allocated inside this event minus what its children allocated."""
        if self.is_async or self.device_type != DeviceType.CPU:
            return 0
        return self.cpu_memory_usage - sum(child.cpu_memory_usage for child in self.cpu_children)

    @property
    def self_device_memory_usage(self) -> int:
        """Device memory allocated inside this event minus what its children allocated."""
        if self.is_async or self.device_type != DeviceType.CPU:
            return 0
        return self.device_memory_usage - sum(child.device_memory_usage for child in self.cpu_children)

    self_cuda_memory_usage = _deprecated_alias(
        "self_device_memory_usage",
        "self_cuda_memory_usage",
        "`self_cuda_memory_usage` is deprecated. Use `self_device_memory_usage` instead.",
    )

    @property
    def cpu_time_total(self) -> float:
        """Wall time of the call, in microseconds (0 for a device event)."""
        return self.time_range.elapsed_us() if self.device_type == DeviceType.CPU else 0

    @property
    def self_cpu_time_total(self) -> float:
        """``cpu_time_total`` minus the children's."""
        if self.is_async or self.device_type != DeviceType.CPU:
            return 0
        return self.cpu_time_total - sum(child.cpu_time_total for child in self.cpu_children)

    @property
    def device_time_total(self) -> float:
        """Kernel time of this event and its children; 0 when no device is profiled (always, on rgrad)."""
        if self.is_async or not self.use_device:
            return 0
        if self.device_type == DeviceType.CPU:
            kernels = sum(kinfo.duration for kinfo in self.kernels)
            if self.is_legacy:  # a legacy CPU event carries one (fake) kernel with its device time
                return kernels
            return kernels + sum(ch.device_time_total for ch in self.cpu_children)
        if self.device_type not in _DEVICE_TIME_TYPES:
            raise AssertionError(
                f"Expected device_type to be CUDA, PrivateUse1, MTIA, HPU or XPU, but got {self.device_type}"
            )
        return self.time_range.elapsed_us()

    cuda_time_total = _deprecated_alias(
        "device_time_total", "cuda_time_total", "`cuda_time_total` is deprecated. Use `device_time_total` instead."
    )

    @property
    def self_device_time_total(self) -> float:
        """``device_time_total`` minus the children's."""
        if self.is_async or not self.use_device:
            return 0
        if self.device_type == DeviceType.CPU:
            return self.device_time_total - sum(child.device_time_total for child in self.cpu_children)
        if self.device_type not in _DEVICE_TIME_TYPES:
            raise AssertionError(
                f"Expected device_type to be CUDA, PrivateUse1, MTIA, HPU or XPU, but got {self.device_type}"
            )
        return self.device_time_total

    self_cuda_time_total = _deprecated_alias(
        "self_device_time_total",
        "self_cuda_time_total",
        "`self_cuda_time_total` is deprecated. Use `self_device_time_total` instead.",
    )

    @property
    def key(self) -> str:
        """The name events are grouped by in ``key_averages``."""
        return self.name

    def __repr__(self) -> str:
        device_name = self.use_device
        return (
            f"<FunctionEvent id={self.id} name={self.name} overload_name={self.overload_name} "
            f"device_type={self.device_type} node_id={self.node_id} cpu_time={self.cpu_time_str} "
            f"start_us={self.time_range.start} end_us={self.time_range.end} "
            f"cpu_children={[child.id for child in self.cpu_children]} {device_name}_time={self.device_time_str} "
            f"name={self.name} thread={self.thread} input_shapes={self.input_shapes} "
            f"cpu_memory_usage={self.cpu_memory_usage} {device_name}_memory_usage={self.device_memory_usage} "
            f"is_async={self.is_async} is_remote={self.is_remote} seq_nr={self.sequence_nr} is_legacy={self.is_legacy}>"
        )


# ---------------------------------------------------------------------------------------
# FunctionEventAvg
# ---------------------------------------------------------------------------------------


class FunctionEventAvg(FormattedTimesMixin):
    """Statistics summed over the events of one key (torch's ``FunctionEventAvg``).

    The first event added gives the descriptive fields (node_id, cpu_parent,
    cpu_children, input_shapes, stack, scope, ...); times, memory, flops and count are
    sums. ``cpu_time`` is the average per call.
    """

    # set by the first add(), as in torch (a fresh FunctionEventAvg has no such attribute)
    is_user_annotation: bool

    def __init__(self) -> None:
        self.key: str | None = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.use_device: str | None = None
        self.cpu_time_total: float = 0
        self.device_time_total: float = 0
        self.self_cpu_time_total: float = 0
        self.self_device_time_total: float = 0
        self.input_shapes: Any = None
        self.overload_name: str | None = None
        self.stack: list[str] | None = None
        self.scope: int | None = None
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.self_device_memory_usage = 0
        self.cpu_children: list[FunctionEvent] | None = None
        self.cpu_parent: FunctionEvent | None = None
        self.device_type = DeviceType.CPU
        self.is_legacy = False
        self.flops: int | None = 0

    def add(self, other: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        """Add ``other``'s statistics; the first one added also gives the descriptive fields."""
        if self.key is None:
            self.key = other.key
            self.node_id = other.node_id
            self.is_async = other.is_async
            self.is_remote = other.is_remote
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
            self.overload_name = other.overload_name
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.scope = other.scope
            self.device_type = other.device_type
            self.is_legacy = other.is_legacy
            self.use_device = other.use_device
            self.is_user_annotation = other.is_user_annotation
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise AssertionError("Expected other to be a FunctionEvent or FunctionEventAvg")
        if other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {other.key} vs {self.key}")
        self.cpu_time_total += other.cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.self_device_time_total += other.self_device_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.device_memory_usage += other.device_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.self_device_memory_usage += other.self_device_memory_usage
        self.count += other.count
        if self.flops is None:
            self.flops = other.flops
        elif other.flops is not None:
            self.flops += other.flops
        return self

    def __iadd__(self, other: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        return self.add(other)

    def __repr__(self) -> str:
        device_name = self.use_device or "cuda"
        return (
            f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
            f"cpu_time={self.cpu_time_str}  self_{device_name}_time={self.self_device_time_total_str} "
            f"{device_name}_time={self.device_time_str} input_shapes={self.input_shapes} "
            f"cpu_memory_usage={self.cpu_memory_usage} {device_name}_memory_usage={self.device_memory_usage}>"
        )


class MemRecordsAcc:
    """Finds the memory records inside a time interval (torch's ``MemRecordsAcc``).

    ``mem_records`` is rgrad's recorder list of ``(ts_ns, nbytes, thread)`` (torch's holds
    ``[kineto_event, used]`` pairs); records are kept sorted by time, ties in list order.
    """

    def __init__(self, mem_records: Sequence[tuple[int, int, int]]) -> None:
        self._mem_records = mem_records
        order = sorted(range(len(mem_records)), key=lambda i: mem_records[i][0])
        self._start_nses = [mem_records[i][0] for i in order]
        self._indices = order

    def index_range(self, start_ns: int, end_ns: int) -> range:
        """Positions (in time order) of the records with ``start_ns <= ts <= end_ns``."""
        return range(bisect.bisect_left(self._start_nses, start_ns), bisect.bisect_right(self._start_nses, end_ns))

    def in_interval(self, start_ns: int, end_ns: int) -> Iterator[tuple[int, int, int]]:
        """Return all records in the given interval (both ends included, any thread)."""
        for i in self.index_range(start_ns, end_ns):
            yield self._mem_records[self._indices[i]]


# ---------------------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------------------

_SPACING = 2
_DEFAULT_COLUMN_WIDTH = 12
_FLOP_UNITS = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]


def _device_attr(sort_by: str) -> str:
    """torch reads the ``device`` form of a ``cuda``/``xpu``/``privateuse1`` sort key."""
    return sort_by.replace("cuda", "device").replace("xpu", "device").replace("privateuse1", "device")


def _flops_scale(flops: int) -> tuple[float, str]:
    """The factor and unit that print ``flops`` (the smallest positive value) with 1 to 3 integer digits."""
    if flops <= 0:
        raise AssertionError(f"Expected flops to be positive, but got {flops}")
    log_flops = max(0, min(math.log10(flops) / 3, float(len(_FLOP_UNITS) - 1)))
    return pow(10, math.floor(log_flops) * -3.0), _FLOP_UNITS[int(log_flops)]


def _trim_path(path: str, width: int) -> str:
    """Keep the end of a source location that is wider than its column, marked by ``...``."""
    if len(path) > width:
        path = path[len(path) - width :]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


def _build_table(
    events: Sequence[Any],
    sort_by: str | None = None,
    header: str | None = None,
    row_limit: int = 100,
    max_src_column_width: int | None = 75,
    max_name_column_width: int | None = 55,
    max_shapes_column_width: int | None = 80,
    with_flops: bool = False,
    profile_memory: bool = False,
    top_level_events_only: bool = False,
    time_unit: str | None = None,
) -> str:
    """torch's summary table of FunctionEvents or FunctionEventAvgs, column for column."""
    if len(events) == 0:
        return ""
    has_device_time = any(event.self_device_time_total > 0 for event in events)
    has_device_mem = any(event.self_device_memory_usage > 0 for event in events)
    use_device = events[0].use_device
    if not use_device and has_device_time:
        raise RuntimeError("use_device is None, but there is device performance data.")
    has_input_shapes = any(event.input_shapes is not None and len(event.input_shapes) > 0 for event in events)
    has_overload_names = any(event.overload_name is not None and len(event.overload_name) > 0 for event in events)
    if sort_by is not None:
        attr = _device_attr(sort_by)
        events = sorted(events, key=lambda evt: getattr(evt, attr), reverse=True)

    name_width = max(len(evt.key) for evt in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    shapes_width = max(len(str(evt.input_shapes)) for evt in events) + 4
    if max_shapes_column_width is not None:
        shapes_width = min(shapes_width, max_shapes_column_width)
    stacks = [evt.stack for evt in events if evt.stack is not None and len(evt.stack) > 0]
    has_stack = len(stacks) > 0
    src_width = 0
    if has_stack:
        src_width = max(max(len(entry) for entry in stack) for stack in stacks) + 4
        if max_src_column_width is not None:
            src_width = min(src_width, max_src_column_width)

    device_name = use_device.upper() if use_device is not None else "None"
    headers = ["Name"] + (["Overload Name"] if has_overload_names else [])
    headers += ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if has_device_time:
        headers += [f"Self {device_name}", f"Self {device_name} %", f"{device_name} total", f"{device_name} time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
        if use_device and has_device_mem:
            headers += [f"{device_name} Mem", f"Self {device_name} Mem"]
    headers.append("# of Calls")
    append_node_id = any(evt.node_id != -1 for evt in events)
    if append_node_id:
        headers.append("Node ID")

    widths: list[tuple[int, str]] = [(name_width, ">")] * (1 + has_overload_names)
    widths += [(_DEFAULT_COLUMN_WIDTH, ">")] * (len(headers) - len(widths))
    if has_input_shapes:
        headers.append("Input Shapes")
        widths.append((shapes_width, ">"))
    if has_stack:
        headers.append("Source Location")
        widths.append((src_width, "<"))
    flops_scale = 1.0
    if with_flops:
        # torch compares ``evt.flops > 0`` and so raises TypeError on the [memory] events,
        # whose flops are None; rgrad counts them as 0 instead.
        raw_flops = [evt.flops for evt in events if (evt.flops or 0) > 0]
        if raw_flops:
            flops_scale, flops_unit = _flops_scale(min(raw_flops))
            headers.append(f"Total {flops_unit}")
            widths.append((_DEFAULT_COLUMN_WIDTH, ">"))
        else:
            with_flops = False  # no event has flops: no column
    row_format = "".join("{: " + align + str(width) + "}" + " " * _SPACING for width, align in widths)
    header_sep = "".join("-" * width + " " * _SPACING for width, _ in widths)
    line_length = sum(width + _SPACING for width, _ in widths) - _SPACING

    sum_self_cpu = 0
    sum_self_device = 0
    for evt in events:
        sum_self_cpu += evt.self_cpu_time_total
        if evt.device_type == DeviceType.CPU and evt.is_legacy:
            sum_self_device += evt.self_device_time_total  # legacy events keep kernel time on the CPU event
        elif (
            evt.device_type in (DeviceType.CUDA, DeviceType.PrivateUse1, DeviceType.MTIA, DeviceType.XPU)
            and not evt.is_user_annotation
        ):
            sum_self_device += evt.self_device_time_total

    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [header_sep, row_format.format(*headers), header_sep]

    def fmt(time_us: float, default: str) -> str:
        return _format_time_in_unit(time_us, default, time_unit)

    def truncate(name: str) -> str:
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            return name[: max_name_column_width - 3] + "..."
        return name

    shown = 0
    for evt in events:
        if shown == row_limit:
            break
        if top_level_events_only and evt.cpu_parent is not None:
            continue
        shown += 1
        evt.self_cpu_percent = _format_time_share(evt.self_cpu_time_total, sum_self_cpu)
        evt.total_cpu_percent = 0 if evt.is_async else _format_time_share(evt.cpu_time_total, sum_self_cpu)
        row: list[Any] = [truncate(evt.key)]
        if has_overload_names:
            row.append(truncate(evt.overload_name))
        row += [
            evt.self_cpu_percent,
            fmt(evt.self_cpu_time_total, evt.self_cpu_time_total_str),
            evt.total_cpu_percent,
            fmt(evt.cpu_time_total, evt.cpu_time_total_str),
            fmt(evt.cpu_time, evt.cpu_time_str),
        ]
        if has_device_time:
            evt.total_device_percent = _format_time_share(evt.self_device_time_total, sum_self_device)
            row += [
                fmt(evt.self_device_time_total, evt.self_device_time_total_str),
                evt.total_device_percent,
                fmt(evt.device_time_total, evt.device_time_total_str),
                fmt(evt.device_time, evt.device_time_str),
            ]
        if profile_memory:
            row += [_format_memory(evt.cpu_memory_usage), _format_memory(evt.self_cpu_memory_usage)]
            if use_device and has_device_mem:
                row += [_format_memory(evt.device_memory_usage), _format_memory(evt.self_device_memory_usage)]
        row.append(evt.count)
        if append_node_id:
            row.append(evt.node_id)
        if has_input_shapes:
            row.append(str(evt.input_shapes)[:shapes_width])
        # torch fills the FLOPs value before the source location although their headers
        # come in the other order; kept so that tables are identical.
        if with_flops:
            row.append("--" if (evt.flops or 0) <= 0 else f"{evt.flops * flops_scale:8.3f}")
        if has_stack:
            row.append(_trim_path(evt.stack[0], src_width) if len(evt.stack) > 0 else "")
        lines.append(row_format.format(*row))
        if has_stack:
            blanks = [""] * (len(headers) - 1)
            lines += [row_format.format(*blanks, _trim_path(entry, src_width)) for entry in evt.stack[1:]]
            lines.append(row_format.format(*blanks, ""))

    lines += [header_sep, f"Self CPU time total: {fmt(sum_self_cpu, _format_time(sum_self_cpu))}"]
    if has_device_time:
        lines.append(f"Self {device_name} time total: {fmt(sum_self_device, _format_time(sum_self_device))}")
    return "".join(line + "\n" for line in lines)
