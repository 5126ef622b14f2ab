"""torch.profiler's API on rgrad's recorder (see rgrad.autograd.profiler).

``profile(activities=..., schedule=..., on_trace_ready=...)`` drives
``rgrad.autograd.profiler.profile`` through torch's schedule: each step is NONE, WARMUP,
RECORD or RECORD_AND_SAVE, and the transitions between them start, stop and hand a
finished cycle to ``on_trace_ready`` exactly as torch's state machine does. With a
schedule, each step is a ``ProfilerStep#N`` range. ``tensorboard_trace_handler(dir)``
writes each cycle's trace as ``<worker>.<time_ns>.pt.trace.json`` (optionally gzipped),
the file names TensorBoard's profiler plugin reads.

rgrad records only the CPU: ``ProfilerActivity.CUDA`` is accepted and records nothing
until rgrad has a CUDA backend (``supported_activities()`` says so).
"""

from __future__ import annotations

import enum
import os
import socket
import time
import warnings
from functools import partial
from typing import Any, Callable, Iterable

from rgrad.autograd import profiler as _legacy
from rgrad.autograd.profiler import record_function
from rgrad.autograd.profiler_util import DeviceType

__all__ = [
    "profile",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
    "ProfilerAction",
    "ProfilerActivity",
    "kineto_available",
    "DeviceType",
    "record_function",
]


class ProfilerActivity(enum.IntEnum):
    """The kinds of activity a profiler can record (torch's values)."""

    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5

    def __str__(self) -> str:
        return f"ProfilerActivity.{self.name}"


class ProfilerAction(enum.Enum):
    """Profiler actions that can be taken at the specified intervals."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


def supported_activities() -> set[ProfilerActivity]:
    """The activities rgrad can record: the CPU."""
    return {ProfilerActivity.CPU}


def kineto_available() -> bool:
    """rgrad's recorder is its own, not Kineto."""
    return False


def schedule(
    *, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0, skip_first_wait: int = 0
) -> Callable[[int], ProfilerAction]:
    """Returns a callable that can be used as profiler ``schedule`` argument: skip the first
    ``skip_first`` steps, then wait ``wait`` steps, warm up ``warmup`` steps, record
    ``active`` steps, and start over, ``repeat`` times (0: until the profiler stops)."""

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0)."
        )
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    return schedule_fn


def _default_schedule_fn(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(
    dir_name: str, worker_name: str | None = None, use_gzip: bool = False
) -> Callable[[Any], None]:
    """Writes each finished cycle's trace into ``dir_name`` for TensorBoard's profiler
    plugin (``tensorboard --logdir dir_name``). ``worker_name`` defaults to
    ``[hostname]_[pid]``."""

    def handler_fn(prof: Any) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name = file_name + ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn


class profile:
    """Profiler context manager (torch.profiler.profile).

    Args:
        activities: ``ProfilerActivity`` values to record (default: the supported ones).
        schedule: step -> ``ProfilerAction`` (default: record every step).
        on_trace_ready: called with this profiler at the end of each recording cycle.
        record_shapes, profile_memory, with_stack, with_flops, with_modules: as in
            ``rgrad.autograd.profiler.profile``.
    """

    def __init__(
        self,
        *,
        activities: Iterable[ProfilerActivity] | None = None,
        schedule: Callable[[int], ProfilerAction] | None = None,
        on_trace_ready: Callable[..., Any] | None = None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_flops: bool = False,
        with_modules: bool = False,
        experimental_config: Any = None,
        execution_trace_observer: Any = None,
        acc_events: bool = False,
        use_cuda: bool | None = None,
        custom_trace_id_callback: Callable[[], str] | None = None,
    ) -> None:
        activities_set = set(activities) if activities is not None else supported_activities()
        if len(activities_set) == 0:
            raise AssertionError("No valid profiler activities found")
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead", FutureWarning, stacklevel=2)
            if use_cuda:
                activities_set.add(ProfilerActivity.CUDA)
            else:
                activities_set.discard(ProfilerActivity.CUDA)
        self.activities = activities_set
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.acc_events = acc_events
        self.profiler: _legacy.profile | None = None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        if schedule:
            self.schedule = schedule
            self.record_steps = True
        else:
            self.schedule = _default_schedule_fn
            self.record_steps = False
        self.current_action = self.schedule(self.step_num)
        self._prev_schedule_action = self.current_action
        self.step_rec_fn: record_function | None = None
        A = ProfilerAction
        warn = partial(warnings.warn, stacklevel=3)
        self.action_map: dict[tuple[ProfilerAction, ProfilerAction | None], list[Callable[[], Any]]] = {
            (A.NONE, A.NONE): [],
            (A.NONE, A.WARMUP): [self.prepare_trace],
            (A.NONE, A.RECORD): [self.prepare_trace, self.start_trace],
            (A.NONE, A.RECORD_AND_SAVE): [self.prepare_trace, self.start_trace],
            (A.WARMUP, A.NONE): [
                partial(warn, "Incorrect schedule: WARMUP followed by NONE"),
                self.start_trace,
                self.stop_trace,
            ],
            (A.WARMUP, A.WARMUP): [],
            (A.WARMUP, A.RECORD): [self.start_trace],
            (A.WARMUP, A.RECORD_AND_SAVE): [self.start_trace],
            (A.RECORD, A.NONE): [partial(warn, "Incorrect schedule: RECORD followed by NONE"), self.stop_trace],
            (A.RECORD, A.WARMUP): [partial(warn, "Incorrect schedule: RECORD followed by WARMUP"), self.stop_trace],
            (A.RECORD, A.RECORD): [],
            (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [self.stop_trace, self._trace_ready, self.prepare_trace],
            (A.RECORD_AND_SAVE, A.RECORD): [
                self.stop_trace,
                self._trace_ready,
                self.prepare_trace,
                self.start_trace,
            ],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [
                self.stop_trace,
                self._trace_ready,
                self.prepare_trace,
                self.start_trace,
            ],
            (A.WARMUP, None): [self.start_trace, self.stop_trace],
            (A.RECORD, None): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, None): [self.stop_trace, self._trace_ready],
        }

    # ---- the recorder, through the legacy profiler

    def prepare_trace(self) -> None:
        if self.profiler is None or not self.acc_events:
            self.profiler = _legacy.profile(
                record_shapes=self.record_shapes,
                with_flops=self.with_flops,
                profile_memory=self.profile_memory,
                with_stack=self.with_stack,
                with_modules=False,
            )

    def start_trace(self) -> None:
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before starting trace")
        self.profiler.__enter__()

    def stop_trace(self) -> None:
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before stopping trace")
        self.profiler.__exit__(None, None, None)

    def _trace_ready(self) -> None:
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def _transit_action(self, prev_action: ProfilerAction, current_action: ProfilerAction | None) -> None:
        for action in self.action_map.get((prev_action, current_action), []):
            action()

    # ---- the schedule

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        self.stop()

    def start(self) -> None:
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def stop(self) -> None:
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit_action(self.current_action, None)
        self.current_action = self._prev_schedule_action

    def step(self) -> None:
        """Signals the profiler that the next profiling step has started."""
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev_action = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        if self.current_action == ProfilerAction.DEVICE_STOPPED:
            raise ValueError(
                "ProfilerAction.DEVICE_STOPPED is set internally by the profiler and must not be returned by a "
                "user-provided schedule"
            )
        self._prev_schedule_action = self.current_action
        self._transit_action(prev_action, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    # ---- results (of the last finished cycle)

    def _results(self) -> _legacy.profile:
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before getting events")
        return self.profiler

    def events(self) -> Any:
        """The events of the last cycle (an EventList)."""
        return self._results().function_events

    def key_averages(
        self, group_by_input_shape: bool = False, group_by_stack_n: int = 0, group_by_overload_name: bool = False
    ) -> Any:
        """Averages the last cycle's events by key (see EventList.key_averages)."""
        return self._results().key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def export_chrome_trace(self, path: str) -> None:
        """Writes the last cycle's trace (gzip when ``path`` ends in .gz)."""
        self._results().export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Writes the last cycle's stacks in FlameGraph's collapsed format."""
        self._results().export_stacks(path, metric)
