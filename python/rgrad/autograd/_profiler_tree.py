"""From rgrad's recorder tuples to torch's event tree: what ``profile._parse_kineto_results`` and
``EventList._build_tree`` do, over FunctionEvents or over light records.

``_parse_raw`` makes the events torch would make of the same Kineto events (profiler
internals dropped, names demangled, ``ProfilerStep#N`` shown as ``ProfilerStep*``,
memory attributed to the ranges containing each record, ``[memory]`` events for the
others, sorted by start) and nests them by the recorder's parent ids.
``_remove_dup_nodes`` and ``_set_backward_stacktraces`` are torch's tree passes, and work
on anything with FunctionEvent's attribute names. ``rows_from_raw_events`` runs them on
``_Rec``s (no FunctionEvent objects) to compute ``key_averages``' rows: the
specification of what the Rust side aggregates for ``profiler_util.averages_from_rows``.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
from collections.abc import Iterable, Iterator, Sequence
from operator import attrgetter
from typing import Any, NamedTuple

from rgrad.autograd._profiler_events import (
    SCOPE_BACKWARD_FUNCTION,
    SCOPE_FUNCTION,
    SCOPE_USER,
    DeviceType,
    FunctionEvent,
    Kernel,
    MemRecordsAcc,
    StringTable,
)

# (id, parent_id, name, thread, start_ns, end_ns, seq_nr, fwd_thread, scope, input_shapes, stack, flops)
RawEvent = tuple[
    int, int, str, int, int, int, int, int, int, "list[list[int]] | None", "list[str] | None", "int | None"
]
# (ts_ns, nbytes, thread): one allocation (nbytes > 0) or free (nbytes < 0)
MemRecord = tuple[int, int, int]

MEMORY_EVENT_NAME = "[memory]"
OUT_OF_MEMORY_EVENT_NAME = "[OutOfMemory]"
# Ranges torch's profiler leaves out of its results (profiler bookkeeping, trivial getters).
_FILTERED_NAMES = frozenset(
    {
        MEMORY_EVENT_NAME,
        OUT_OF_MEMORY_EVENT_NAME,
        "profiler::_record_function_enter",
        "profiler::_record_function_enter_new",
        "profiler::_record_function_exit",
        "aten::is_leaf",
        "aten::output_nr",
        "aten::_version",
    }
)
# Stack frames torch drops: its own backward machinery and test harness.
_FILTERED_FRAMES = (
    ("autograd/__init__", "_make_grads"),
    ("autograd/__init__", "backward"),
    ("torch/tensor", "backward"),
    ("_internal/common_utils", "prof_callable"),
    ("_internal/common_utils", "prof_func_call"),
    ("_internal/common_utils", "prof_meth_call"),
)
# rgrad's recorder numbers the user scope 2; torch's at::RecordScope::USER_SCOPE is 7.
_RAW_USER_SCOPE = 2


def _keep_frame(entry: str) -> bool:
    return all(not (a in entry and b in entry) for a, b in _FILTERED_FRAMES)


_strings = StringTable()


def _rewrite_name(name: str, with_wildcard: bool = False) -> str:
    """Demangle ``name``; with ``with_wildcard``, ``ProfilerStep#N`` becomes ``ProfilerStep*``."""
    name = _strings[name]
    if with_wildcard and name.startswith("ProfilerStep#"):
        name = "ProfilerStep*"
    return name


# ---------------------------------------------------------------------------------------
# the event tree (torch's EventList._build_tree), over FunctionEvents or _Recs
# ---------------------------------------------------------------------------------------


def _populate_cpu_children(events: Sequence[FunctionEvent]) -> None:
    """Nest the synchronous CPU events of each (thread, node) by time: a child's range lies inside its parent's."""
    sync_events = sorted(
        (evt for evt in events if not evt.is_async and evt.device_type == DeviceType.CPU), key=attrgetter("thread")
    )
    for _, thread_events in itertools.groupby(sync_events, key=lambda evt: (evt.thread, evt.node_id)):
        open_events: list[FunctionEvent] = []  # each range contains the ones above it
        for evt in sorted(thread_events, key=lambda e: [e.time_range.start, -e.time_range.end]):
            while open_events:
                parent = open_events[-1]
                if evt.time_range.start >= parent.time_range.end or evt.time_range.end > parent.time_range.end:
                    open_events.pop()
                    continue
                parent.append_cpu_child(evt)
                if evt.cpu_parent is not None:
                    raise AssertionError(f"There is already a CPU parent event for {evt.key}")
                evt.set_cpu_parent(parent)
                break
            open_events.append(evt)


def _remove_dup_nodes(events: list[Any]) -> list[Any]:
    """Drop each event that is the only child of an event of the same name, lifting its children up."""
    while True:
        dropped = set()
        for idx, evt in enumerate(events):
            parent = evt.cpu_parent
            if parent is not None and parent.name == evt.name and len(parent.cpu_children) == 1:
                parent.cpu_children = evt.cpu_children
                parent.kernels = evt.kernels
                for child in evt.cpu_children:
                    child.cpu_parent = parent
                dropped.add(idx)
        if not dropped:
            return events
        events = [evt for idx, evt in enumerate(events) if idx not in dropped]


def _backward_ancestor(evt: Any) -> Any:
    """The event itself or its nearest ancestor that is a backward function, or None."""
    while evt is not None and evt.scope != SCOPE_BACKWARD_FUNCTION:
        evt = evt.cpu_parent
    return evt


def _set_backward_stacktraces(events: Sequence[Any]) -> None:
    """Give everything under a backward node the stack of the forward op that made the node."""
    fwd_stacks: dict[tuple[int, int], list[str]] = {}
    backward = [_backward_ancestor(evt) for evt in events]
    for evt, bw in zip(events, backward, strict=True):
        if bw is None and evt.stack is not None:
            fwd_stacks.setdefault((evt.sequence_nr, evt.thread), evt.stack)
    for evt, bw in zip(events, backward, strict=True):
        if bw is not None:
            if bw.fwd_thread is None:
                raise AssertionError("Expected fwd_thread to be set for backward parent")
            evt.stack = fwd_stacks.get((bw.sequence_nr, bw.fwd_thread), [])


class _Rec:
    """The fields of a FunctionEvent that ``key_averages`` reads, for ``rows_from_raw_events``."""

    __slots__ = (
        "id",
        "name",
        "thread",
        "start_us",
        "end_us",
        "fwd_thread",
        "input_shapes",
        "stack",
        "scope",
        "cpu_memory_usage",
        "sequence_nr",
        "flops",
        "is_user_annotation",
        "cpu_parent",
        "cpu_children",
        "kernels",
    )

    def __init__(
        self,
        *,
        id: int,
        name: str,
        thread: int,
        start_us: float,
        end_us: float,
        fwd_thread: int,
        input_shapes: Any,
        stack: list[str],
        scope: int,
        cpu_memory_usage: int,
        sequence_nr: int,
        flops: int | None,
        is_user_annotation: bool,
        **_ignored: Any,
    ) -> None:
        self.id, self.name, self.thread, self.start_us, self.end_us = id, name, thread, start_us, end_us
        self.fwd_thread, self.input_shapes, self.stack, self.scope = fwd_thread, input_shapes, stack, scope
        self.cpu_memory_usage, self.sequence_nr, self.flops = cpu_memory_usage, sequence_nr, flops
        self.is_user_annotation = is_user_annotation
        self.cpu_parent: _Rec | None = None
        self.cpu_children: list[_Rec] = []
        self.kernels: list[Kernel] = []


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while many events (parent/child cycles) are made.

    The collections that the allocations trigger would walk every live object, and a
    profile's raw data is large: this halves the time of ``build_event_list``.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _parse_raw(raw_events: Iterable[RawEvent], mem_records: Sequence[MemRecord], make: Any) -> list[Any]:
    """The events ``profile._parse_kineto_results`` would make of these records, sorted and nested.

    ``make(**fields)`` builds one event (a FunctionEvent or a _Rec). A memory record
    counts for every kept event whose range contains it (both ends included, whatever
    the thread, as in torch); those no event contains become ``[memory]`` events.
    """
    acc = MemRecordsAcc(mem_records)
    prefix = [0, *itertools.accumulate(mem_records[i][1] for i in acc._indices)]  # bytes of the first k by time
    covered = [0] * (len(mem_records) + 1)  # +1/-1 at the ends of each kept event's span of records
    raw_parent: dict[int, int] = {}
    kept: dict[int, Any] = {}
    events: list[Any] = []
    parent_ids: list[int] = []
    sort_keys: list[tuple[float, float]] = []
    for rid, parent_id, name, thread, start_ns, end_ns, seq_nr, fwd_thread, scope, shapes, stack, flops in raw_events:
        raw_parent[rid] = parent_id
        if name in _FILTERED_NAMES:
            continue
        span = acc.index_range(start_ns, end_ns)
        covered[span.start] += 1
        covered[span.stop] -= 1
        if scope == _RAW_USER_SCOPE:
            scope = SCOPE_USER
        start_us, end_us = start_ns / 1000, end_ns / 1000
        evt = make(
            id=rid,
            name=_rewrite_name(name, with_wildcard=True),
            trace_name=_rewrite_name(name),
            thread=thread,
            start_us=start_us,
            end_us=end_us,
            fwd_thread=fwd_thread,
            input_shapes=[] if shapes is None else shapes,
            stack=[entry for entry in stack if _keep_frame(entry)] if stack else [],
            scope=scope,
            cpu_memory_usage=prefix[span.stop] - prefix[span.start],
            sequence_nr=seq_nr,
            flops=flops or 0,
            is_user_annotation=scope == SCOPE_USER,
        )
        kept[rid] = evt
        events.append(evt)
        parent_ids.append(parent_id)
        sort_keys.append((start_us, -end_us))

    next_id = max(kept, default=0)
    used = [False] * len(mem_records)
    depth = 0
    for pos, index in enumerate(acc._indices):
        depth += covered[pos]
        used[index] = depth > 0
    for (ts_ns, nbytes, thread), was_used in zip(mem_records, used, strict=True):
        if was_used:
            continue
        next_id += 1
        ts_us = ts_ns / 1000
        # torch's [memory] events: no trace name (not exported), flops None, fwd_thread = thread
        memory_event = make(
            id=next_id,
            name=MEMORY_EVENT_NAME,
            trace_name=None,
            thread=thread,
            start_us=ts_us,
            end_us=ts_us,
            fwd_thread=thread,
            input_shapes=[],
            stack=[],
            scope=SCOPE_FUNCTION,
            cpu_memory_usage=nbytes,
            sequence_nr=-1,
            flops=None,
            is_user_annotation=False,
        )
        events.append(memory_event)
        parent_ids.append(0)
        sort_keys.append((ts_us, -ts_us))

    order = sorted(range(len(events)), key=sort_keys.__getitem__)  # stable: ties keep the recorder's order
    for i in order:
        parent_id = parent_ids[i]
        while parent_id and parent_id not in kept:  # a dropped range's children go to its parent
            parent_id = raw_parent.get(parent_id, 0)
        if parent_id:
            parent, child = kept[parent_id], events[i]
            parent.cpu_children.append(child)
            child.cpu_parent = parent
    return [events[i] for i in order]


class AverageRow(NamedTuple):
    """One ``key_averages`` row, summed over the events of one key (see ``averages_from_rows``)."""

    key: str
    calls: int
    cpu_time_total: float
    self_cpu_time_total: float
    cpu_memory_usage: int
    self_cpu_memory_usage: int
    flops: int
    is_user_annotation: bool
    scope: int
    input_shapes: list[list[int]] | None
    stack: list[str]
    parent: tuple[int, str] | None


def rows_from_raw_events(
    raw_events: Iterable[RawEvent],
    mem_records: Sequence[MemRecord] = (),
    *,
    group_by_input_shape: bool = False,
    group_by_stack_n: int = 0,
) -> list[AverageRow]:
    """The rows ``averages_from_rows`` expects, computed in Python: the specification of the Rust side's.

    Same events as ``build_event_list`` (filtered names, ``[memory]`` events, duplicate
    nodes dropped, backward stacks replaced), without FunctionEvent objects.
    """
    with _gc_paused():
        events = _remove_dup_nodes(_parse_raw(raw_events, mem_records, _Rec))
        _set_backward_stacktraces(events)
    groups: dict[tuple, list[Any]] = {}
    for evt in events:
        total = evt.end_us - evt.start_us
        children_time = children_memory = 0
        for child in evt.cpu_children:
            children_time += child.end_us - child.start_us
            children_memory += child.cpu_memory_usage
        key: tuple = (evt.name, evt.is_user_annotation)
        if group_by_input_shape:
            key += (str(evt.input_shapes),)
        if group_by_stack_n > 0:
            key += tuple(evt.stack[:group_by_stack_n])
        acc = groups.get(key)
        if acc is None:
            acc = groups[key] = [evt, 0, 0, 0, 0, 0, 0]
        acc[1] += 1
        acc[2] += total
        acc[3] += total - children_time
        acc[4] += evt.cpu_memory_usage
        acc[5] += evt.cpu_memory_usage - children_memory
        acc[6] += evt.flops or 0
    rows = []
    for first, count, cpu_total, self_cpu, memory, self_memory, flops in groups.values():
        parent = first.cpu_parent
        rows.append(
            AverageRow(
                first.name,
                count,
                cpu_total,
                self_cpu,
                memory,
                self_memory,
                flops,
                first.is_user_annotation,
                first.scope,
                first.input_shapes if group_by_input_shape else None,
                first.stack[:group_by_stack_n],
                None if parent is None else (parent.id, parent.name),
            )
        )
    return rows
