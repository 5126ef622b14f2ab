"""The autograd profiler (torch.autograd.profiler's API).

``profile`` records, in Rust, every op's forward (``aten::mul``), every backward node the
engine evaluates (``autograd::engine::evaluate_function: MulBackward0`` around
``MulBackward0``), each gradient accumulation (``torch::autograd::AccumulateGrad``) and
each ``record_function`` range, with thread ids and the sequence numbers that link a
forward op to its backward node. Results are torch's: ``print(prof)``, ``table()``,
``key_averages()``, ``total_average()``, ``function_events``, ``export_chrome_trace()``,
``export_stacks()`` (see ``profiler_util``).

Beyond torch: a backward node made inside a ``record_function("name")`` range is
reported inside a ``"name (backward)"`` range when the engine runs it, so that the
table says what the backward of that block cost.

Differences: ops are recorded at rgrad's granularity, not ATen's (rgrad's ``pow`` has no
``aten::result_type`` child); there is no CUDA yet, so ``use_cuda=True`` /
``use_device='cuda'`` warn that CUDA is not available and profile the CPU, as torch does
on a machine without a GPU, and ``emit_nvtx`` names its ranges but has nowhere to send
them.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, TypeVar

from rgrad import _C
from rgrad.autograd.profiler_util import (
    EventList,
    FunctionEvent,
    FunctionEventAvg,
    averages_from_rows,
    build_event_list,
    load_nvprof,
)

__all__ = [
    "profile",
    "record_function",
    "emit_nvtx",
    "emit_itt",
    "load_nvprof",
    "EventList",
    "FunctionEvent",
    "FunctionEventAvg",
]

_F = TypeVar("_F", bound=Callable[..., Any])


class profile:
    """Context manager that manages autograd profiler state and holds a summary of results.

    Args:
        enabled (bool, optional): Setting this to False makes this context manager a no-op.
        use_cuda (bool, optional): deprecated (torch 2.15 removed it; rgrad keeps it):
            the same as ``use_device='cuda'``.
        use_device (str, optional): Enables timing of device events ('cuda').
        record_shapes (bool, optional): records the shapes of each op's tensor inputs.
        with_flops (bool, optional): estimates the FLOPs of ops with a formula (matrix
            products, mul, add); implies ``record_shapes``.
        profile_memory (bool, optional): tracks tensor memory allocation and deallocation.
        with_stack (bool, optional): records the Python source location of each forward op.
        with_modules, use_kineto, use_cpu: accepted for torch's signature.

    Example:
        >>> x = rgrad.randn((1, 1), requires_grad=True)
        >>> with rgrad.autograd.profiler.profile() as prof:
        ...     y = x ** 2
        ...     y.backward()
        >>> print(prof)
    """

    def __init__(
        self,
        enabled: bool = True,
        *,
        use_cuda: bool = False,
        use_device: str | None = None,
        record_shapes: bool = False,
        with_flops: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_modules: bool = False,
        use_kineto: bool = False,
        use_cpu: bool = True,
        experimental_config: Any = None,
        acc_events: bool = False,
        custom_trace_id_callback: Any = None,
    ) -> None:
        self.enabled = enabled
        if not self.enabled:
            return
        if use_cuda:
            warnings.warn(
                "The attribute `use_cuda` will be deprecated soon, please use ``use_device = 'cuda'`` instead.",
                FutureWarning,
                stacklevel=2,
            )
            use_device = "cuda"
        self.use_device = use_device
        self._function_events: EventList | None = None
        self._recording: Any = None
        self.entered = False
        self.record_shapes = record_shapes or with_flops
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.use_cpu = use_cpu
        self.acc_events = acc_events
        if not self.use_cpu and not use_kineto:
            raise AssertionError("Device-only events supported only with Kineto (use_kineto=True)")
        if self.use_device is not None:
            if self.use_device not in ("cuda", "xpu", "mtia", "hpu"):
                warnings.warn(f"The {self.use_device} is not a valid device option.", stacklevel=2)
                self.use_device = None
            elif self.use_device == "cuda":
                warnings.warn("CUDA is not available, disabling CUDA profiling", stacklevel=2)
                self.use_device = None
            else:
                raise AssertionError(
                    f"Legacy {self.use_device.upper()} profiling is not supported. Requires use_kineto=True on "
                    f"{self.use_device.upper()} devices."
                )

    def __enter__(self) -> profile | None:
        if not self.enabled:
            return None
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._function_events = None
        _C._profiler_start(self.record_shapes, self.profile_memory, self.with_flops, self.with_stack)
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> bool:
        if not self.enabled:
            return False
        self._recording = _C._profiler_stop()
        self._function_events = None
        return False

    def __repr__(self) -> str:
        if self._recording is None:
            return "<unfinished rgrad.autograd.profile>"
        return repr(self.function_events)

    def __str__(self) -> str:
        if self._recording is None:
            return "<unfinished rgrad.autograd.profile>"
        return str(self.function_events)

    def _ensure_function_events(self) -> EventList:
        if self._function_events is None:
            if self._recording is None:
                raise AssertionError("Expected profiling results")
            self._function_events = build_event_list(
                self._recording.events(),
                self._recording.memory(),
                use_device=self.use_device,
                profile_memory=self.profile_memory,
                with_flops=self.with_flops,
            )
        return self._function_events


    @property
    def function_events(self) -> EventList:
        return self._ensure_function_events()

    def events(self) -> EventList:
        return self._ensure_function_events()

    def table(
        self,
        sort_by: str | None = None,
        row_limit: int = 100,
        max_src_column_width: int = 75,
        max_name_column_width: int = 55,
        max_shapes_column_width: int = 80,
        header: str | None = None,
        top_level_events_only: bool = False,
    ) -> str:
        return self._ensure_function_events().table(
            sort_by=sort_by,
            row_limit=row_limit,
            max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width,
            header=header,
            top_level_events_only=top_level_events_only,
        )

    def export_chrome_trace(self, path: str) -> None:
        """Exports the events as a Chrome / Perfetto trace (gzip when ``path`` ends in .gz)."""
        self._ensure_function_events().export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Writes the stacks of the recorded ops in FlameGraph's collapsed format."""
        events = self._ensure_function_events()
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        events.export_stacks(path, metric)

    def key_averages(
        self,
        group_by_input_shape: bool = False,
        group_by_stack_n: int = 0,
        group_by_overload_name: bool = False,
    ) -> EventList:
        """Averages all function events over their keys (see EventList.key_averages).

        Without stacks to group by, and before the events were built one by one, the
        averaging is done in Rust over the recording (a million events in well under a
        second)."""
        if self._recording is None:
            raise AssertionError("Expected profiling results")
        if self._function_events is None and group_by_stack_n == 0:
            return averages_from_rows(
                self._recording.averages(group_by_input_shape),
                use_device=self.use_device,
                profile_memory=self.profile_memory,
                with_flops=self.with_flops,
            )
        return self._ensure_function_events().key_averages(
            group_by_input_shape, group_by_stack_n, group_by_overload_name
        )

    def total_average(self) -> FunctionEventAvg:
        return self._ensure_function_events().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """Total time spent on CPU: the sum of all self times across all the events."""
        return self._ensure_function_events().self_cpu_time_total


class record_function:
    """Context manager/function decorator that adds a label to a code block/function
    when running the autograd profiler.

    Args:
        name (str): Label assigned to the block of code.
        args: Optional arguments (accepted for torch's signature).

    Example:
        >>> with rgrad.autograd.profiler.profile() as prof:
        ...     with rgrad.autograd.profiler.record_function("label-z"):
        ...         y = x * 2 + 1
    """

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self._open = False

    def __enter__(self) -> record_function:
        self._open = _C._record_function_enter(self.name)
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        if self._open:
            self._open = False
            _C._record_function_exit()

    def __call__(self, func: _F) -> _F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with record_function(self.name, self.args):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class _RangeEmitter:
    """What emit_nvtx and emit_itt share: torch's enabled/entered protocol around a switch."""

    _what = ""

    def __init__(self, enabled: bool = True, record_shapes: bool = False) -> None:
        self.enabled = enabled
        self.entered = False
        self.record_shapes = record_shapes

    def _switch(self, on: bool) -> None:
        raise NotImplementedError

    def __enter__(self) -> Any:
        if not self.enabled:
            return None
        if self.entered:
            raise RuntimeError(f"{self._what} annotation context manager is not reentrant")
        self.entered = True
        self._switch(True)
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> bool:
        if not self.enabled:
            return False
        self._switch(False)
        self.entered = False
        return False


class emit_nvtx(_RangeEmitter):
    """Context manager that makes every autograd operation emit an NVTX range.

    Each op's range reads ``aten::mul, seq = N`` (N: the sequence number of the node it
    records), each backward node's ``MulBackward0, seq = N`` with its forward op's N, and
    ``, sizes = [[...], ...]`` follows with ``record_shapes=True``: torch's names, so
    nvprof / Nsight timelines and ``load_nvprof`` read the same. The ranges go to NVTX
    through rgrad's CUDA backend; on a machine without CUDA nothing is emitted (torch
    raises there), so the same script runs everywhere.
    """

    _what = "NVTX"

    def _switch(self, on: bool) -> None:
        _C._nvtx_enable(on, self.record_shapes)


class emit_itt(_RangeEmitter):
    """Context manager that makes every autograd operation emit an ITT range (a no-op in
    rgrad, which has no ITT support)."""

    _what = "ITT"

    def _switch(self, on: bool) -> None:
        pass
