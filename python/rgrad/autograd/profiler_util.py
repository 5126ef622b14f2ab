"""Profiler results: torch.autograd.profiler_util's EventList, and its construction from rgrad's recorder.

The Rust recorder hands over plain tuples; this module turns them into torch's objects:

- ``build_event_list(raw_events, mem_records, ...)`` makes one ``FunctionEvent`` per
  recorded range, as torch's ``profile._parse_kineto_results`` does from Kineto events
  (names demangled, ``ProfilerStep#N`` grouped as ``ProfilerStep*``, profiler-internal
  ops dropped, memory records attributed to the ranges that contain them, ``[memory]``
  events for the others, events sorted by start), then builds the tree as
  ``EventList._build_tree`` does, except that nesting comes from the recorder's parent
  ids instead of being re-derived from times;
- ``averages_from_rows(rows, ...)`` makes ``key_averages``' result from rows the Rust side
  aggregated itself, for event counts where FunctionEvent objects would be too slow;
  ``rows_from_raw_events`` computes the same rows in Python and is their specification;
- ``load_nvprof(path)`` reads an nvprof SQLite trace as torch's ``parse_nvprof_trace`` does.

``EventList`` matches torch 2.15's (``table``, ``key_averages``, ``total_average``,
``export_stacks``), except ``export_chrome_trace``: torch's EventList writes the legacy
array format with no categories, arguments or flows; rgrad writes what torch's Kineto
trace (``torch.profiler``'s) holds for CPU ops: categories, "Input Dims", sequence
numbers, forward-to-backward ``fwdbwd`` flows and ``[memory]`` instant events.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
from collections.abc import Iterable, Sequence
from typing import Any

from rgrad.autograd._profiler_events import (
    DeviceType,
    FormattedTimesMixin,
    FunctionEvent,
    FunctionEventAvg,
    Interval,
    Kernel,
    MemRecordsAcc,
    StringTable,
    _build_table,
    _device_attr,
    demangle,
)
from rgrad.autograd._profiler_tree import (
    MEMORY_EVENT_NAME,
    AverageRow,
    MemRecord,
    RawEvent,
    _gc_paused,
    _parse_raw,
    _populate_cpu_children,
    _remove_dup_nodes,
    _set_backward_stacktraces,
    rows_from_raw_events,
)

__all__ = [
    "EventList",
    "FormattedTimesMixin",
    "Interval",
    "Kernel",
    "FunctionEvent",
    "FunctionEventAvg",
    "StringTable",
    "MemRecordsAcc",
    "DeviceType",
    "AverageRow",
    "build_event_list",
    "rows_from_raw_events",
    "averages_from_rows",
    "load_nvprof",
]

# ---------------------------------------------------------------------------------------
# EventList
# ---------------------------------------------------------------------------------------


class EventList(list):
    """A list of FunctionEvents or FunctionEventAvgs with torch's analysis methods.

    Args:
        *args: the list's items.
        use_device (str, optional): the profiled device (``"cuda"``), or None.
        profile_memory (bool): whether memory columns are shown.
        with_flops (bool): whether the FLOPs column is shown.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        use_device = kwargs.pop("use_device", None)
        profile_memory = kwargs.pop("profile_memory", False)
        with_flops = kwargs.pop("with_flops", False)
        super().__init__(*args, **kwargs)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._tree_built = False
        self._with_flops = with_flops
        self._mem_records: list[MemRecord] = []  # rgrad: the raw records, for export_chrome_trace

    def _build_tree(self) -> None:
        _populate_cpu_children(self)
        self[:] = _remove_dup_nodes(list(self))
        _set_backward_stacktraces(self)
        self._tree_built = True

    def __str__(self) -> str:
        return self.table()

    @property
    def self_cpu_time_total(self) -> float:
        """Sum of the events' self CPU times, in microseconds."""
        return sum(event.self_cpu_time_total for event in self)

    def table(
        self,
        sort_by: str | None = None,
        row_limit: int = 100,
        max_src_column_width: int = 75,
        max_name_column_width: int = 55,
        max_shapes_column_width: int = 80,
        header: str | None = None,
        top_level_events_only: bool = False,
        time_unit: str | None = None,
    ) -> str:
        """Print an EventList as a nicely formatted table.

        Args:
            sort_by (str, optional): attribute to sort rows by, largest first (``cpu_time``,
                ``cpu_time_total``, ``self_cpu_time_total``, ``cpu_memory_usage``,
                ``self_cpu_memory_usage``, ``count``, their ``cuda``/``device`` forms, ...);
                by default rows keep the list's order.
            row_limit (int): at most this many rows.
            header (str, optional): a line printed above the table.
            top_level_events_only (bool): only events without a CPU parent.
            time_unit (str, optional): ``s``, ``ms`` or ``us`` for every time; by default
                each time picks its own.

        Returns:
            A string containing the table.
        """
        return _build_table(
            self,
            sort_by=sort_by,
            row_limit=row_limit,
            max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width,
            header=header,
            profile_memory=self._profile_memory,
            with_flops=self._with_flops,
            top_level_events_only=top_level_events_only,
            time_unit=time_unit,
        )

    def export_chrome_trace(self, path: str) -> None:
        """Export the events as a Chrome trace (chrome://tracing, Perfetto); gzipped when ``path`` ends in ``.gz``.

        The file holds what torch's Kineto trace holds for CPU work: one ``X`` event per
        range (``cat`` ``cpu_op`` or ``user_annotation``; ``args`` with "External id",
        "Sequence number", "Fwd thread id", "Input Dims", "Call stack" where known), one
        ``tid`` lane per recorder thread (named ``thread N``), ``s``/``f`` flows of
        category ``fwdbwd`` from each forward op to the backward node it made, and one
        ``[memory]`` instant event per allocation or free with "Bytes" and
        "Total Allocated" (counted from the profiler's start).

        Args:
            path (str): Path where the trace will be written.
        """
        trace = {
            "schemaVersion": 1,
            "deviceProperties": [],
            "displayTimeUnit": "ms",
            "traceEvents": _chrome_trace_events(self, self._mem_records, os.getpid()),
            "traceName": path,
        }
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "wt") as f:
            json.dump(trace, f)

    def supported_export_stacks_metrics(self) -> list[str]:
        """The metrics ``export_stacks`` accepts."""
        return ["self_cpu_time_total", "self_cuda_time_total", "self_xpu_time_total", "self_privateuse1_time_total"]

    def export_stacks(self, path: str, metric: str) -> None:
        """Write each event's stack and metric in FlameGraph's collapsed format (``outer;...;inner value``).

        Args:
            path (str): the output file.
            metric (str): one of ``supported_export_stacks_metrics()``; events whose value
                truncates to 0 are left out.
        """
        if metric not in self.supported_export_stacks_metrics():
            raise ValueError("metric should be one of: " + str(self.supported_export_stacks_metrics()))
        translate_table = str.maketrans(" ;\t\n", "____")
        with open(path, "w") as f:
            for evt in self:
                if evt.stack and len(evt.stack) > 0:
                    value = int(getattr(evt, _device_attr(metric)))
                    if value > 0:
                        frames = ";".join(entry.translate(translate_table) for entry in reversed(evt.stack))
                        f.write(f"{frames} {value}\n")

    def key_averages(
        self,
        group_by_input_shapes: bool = False,
        group_by_stack_n: int = 0,
        group_by_overload_name: bool = False,
        include_python_functions: bool = False,
    ) -> EventList:
        """Averages all function events over their keys.

        Events are grouped by name (and node, device type, legacy flag and whether they
        are user annotations); rows come in the order of each key's first event.

        Args:
            group_by_input_shapes (bool): group by (name, input shapes) instead.
            group_by_stack_n (int): also group by the top ``n`` stack frames.
            group_by_overload_name (bool): also group by overload name.
            include_python_functions (bool): keep Python function events (rgrad records none).

        Returns:
            An EventList containing FunctionEventAvg objects.
        """
        if not self._tree_built:
            raise AssertionError("Expected tree to be built before calling key_averages")
        stats: dict[tuple[str, ...], FunctionEventAvg] = {}
        for evt in self:
            if evt.is_python_function and not include_python_functions:
                continue
            key = [str(evt.key), str(evt.node_id), str(evt.device_type), str(evt.is_legacy)]
            key.append(str(evt.is_user_annotation))
            if group_by_overload_name:
                key.append(evt.overload_name)
            if group_by_input_shapes:
                key.append(str(evt.input_shapes))
            if group_by_stack_n > 0:
                key += evt.stack[:group_by_stack_n]
            group = stats.get(tuple(key))
            if group is None:
                group = stats[tuple(key)] = FunctionEventAvg()
            group.add(evt)
        avg_list = EventList(
            stats.values(),
            use_device=self._use_device,
            profile_memory=self._profile_memory,
            with_flops=self._with_flops,
        )
        for evt in avg_list:
            evt.stack = evt.stack[:group_by_stack_n]
            if not group_by_input_shapes:
                evt.input_shapes = ""
            if not group_by_overload_name:
                evt.overload_name = ""
        return avg_list

    def total_average(self) -> FunctionEventAvg:
        """Sum every event's statistics into one FunctionEventAvg keyed ``"Total"``.

        As in torch, the descriptive fields (input_shapes, stack, cpu_parent, ...) are the last event's.
        """
        total_stat = FunctionEventAvg()
        for evt in self:
            total_stat += evt
            total_stat.key = None
        total_stat.key = "Total"
        return total_stat


# ---------------------------------------------------------------------------------------
# the Chrome trace
# ---------------------------------------------------------------------------------------


def _fwd_bwd_links(events: Iterable[FunctionEvent]) -> list[tuple[FunctionEvent, FunctionEvent]]:
    """Pairs (forward op, backward node) as torch's ``generateForwardBackwardLinks`` finds them.

    Events with a sequence number are visited by end time. A forward op (``fwd_thread``
    0) is remembered under (its thread, seq_nr), the latest-starting one winning; a
    backward event (``fwd_thread`` > 0) takes the forward op remembered under
    (fwd_thread, seq_nr) and removes it, so that only the innermost backward range (the
    node itself, which ends before its ``evaluate_function`` wrapper) is linked.
    """
    with_seq = sorted(
        (evt for evt in events if evt.sequence_nr >= 0 and evt.device_type == DeviceType.CPU),
        key=lambda evt: evt.time_range.end,
    )
    forward: dict[tuple[int, int], FunctionEvent] = {}
    links = []
    for evt in with_seq:
        if evt.fwd_thread:
            fwd = forward.pop((evt.fwd_thread, evt.sequence_nr), None)
            if fwd is not None:
                links.append((fwd, evt))
        elif evt.thread != 0:
            key = (evt.thread, evt.sequence_nr)
            if key not in forward or evt.time_range.start >= forward[key].time_range.start:
                forward[key] = evt
    return links


def _chrome_trace_events(events: Sequence[FunctionEvent], mem_records: Sequence[MemRecord], pid: int) -> list[dict]:
    # metadata events carry a ts too, as Kineto's do: some viewers require one on every event
    out: list[dict] = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": 0, "args": {"name": "python"}}]
    threads = sorted({evt.thread for evt in events} | {thread for _, _, thread in mem_records})
    for thread in threads:
        out.append(
            {"ph": "M", "name": "thread_name", "pid": pid, "tid": thread, "ts": 0, "args": {"name": f"thread {thread}"}}
        )
        out.append(
            {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": thread, "ts": 0, "args": {"sort_index": thread}}
        )
    for evt in events:
        if evt.trace_name is None:  # the [memory] events: written below from the records
            continue
        args: dict[str, Any] = {"External id": evt.id}
        if evt.sequence_nr >= 0:
            args["Sequence number"] = evt.sequence_nr
            args["Fwd thread id"] = evt.fwd_thread
        if evt.input_shapes:
            args["Input Dims"] = evt.input_shapes
        if evt.stack:
            args["Call stack"] = ";".join(evt.stack)
        out.append(
            {
                "ph": "X",
                "cat": "user_annotation" if evt.is_user_annotation else "cpu_op",
                "name": evt.trace_name,
                "pid": pid,
                "tid": evt.thread,
                "ts": evt.time_range.start,
                "dur": evt.time_range.elapsed_us(),
                "args": args,
            }
        )
    for flow_id, (fwd, bwd) in enumerate(_fwd_bwd_links(events), start=1):
        common = {"id": flow_id, "pid": pid, "cat": "fwdbwd", "name": "fwdbwd"}
        out.append({"ph": "s", "tid": fwd.thread, "ts": fwd.time_range.start, **common})
        out.append({"ph": "f", "tid": bwd.thread, "ts": bwd.time_range.start, "bp": "e", **common})
    allocated = 0
    for ts_ns, nbytes, thread in sorted(mem_records, key=lambda r: r[0]):
        allocated += nbytes
        out.append(
            {
                "ph": "i",
                "cat": "cpu_instant_event",
                "s": "t",
                "name": MEMORY_EVENT_NAME,
                "pid": pid,
                "tid": thread,
                "ts": ts_ns / 1000,
                "args": {
                    "Total Reserved": 0,
                    "Total Allocated": allocated,
                    "Bytes": nbytes,
                    "Device Id": -1,
                    "Device Type": 0,
                },
            }
        )
    return out


# ---------------------------------------------------------------------------------------
# from the recorder's tuples
# ---------------------------------------------------------------------------------------


def build_event_list(
    raw_events: Iterable[RawEvent],
    mem_records: Sequence[MemRecord] = (),
    *,
    use_device: str | None = None,
    profile_memory: bool = False,
    with_flops: bool = False,
) -> EventList:
    """The profile's ``function_events``: an EventList of FunctionEvents with its tree built.

    Args:
        raw_events: the recorder's ranges, ``(id, parent_id, name, thread, start_ns, end_ns,
            seq_nr, fwd_thread, scope, input_shapes, stack, flops)``: ``parent_id`` is the
            enclosing range on the same thread (0 for none); ``scope`` is 0 (op), 1
            (backward node) or 2 (user range; torch's USER_SCOPE, 7, is accepted too);
            ``input_shapes``/``stack``/``flops`` are None when not recorded. Ranges should
            come in the recorder's order (outer before inner where two share a start).
        mem_records: ``(ts_ns, nbytes, thread)`` per allocation (> 0) or free (< 0).
        use_device: the profiled device, as given to ``profile``.
        profile_memory: show the memory columns.
        with_flops: show the FLOPs column.

    Returns:
        The EventList, sorted by start time (longer first on ties), as torch's profile gives it.
    """
    make = functools.partial(FunctionEvent, overload_name="", use_device=use_device)
    with _gc_paused():
        events = _remove_dup_nodes(_parse_raw(raw_events, mem_records, make))
        _set_backward_stacktraces(events)
    result = EventList(events, use_device=use_device, profile_memory=profile_memory, with_flops=with_flops)
    result._tree_built = True
    result._mem_records = list(mem_records)
    return result


def averages_from_rows(
    rows: Iterable[Sequence[Any]],
    *,
    use_device: str | None = None,
    profile_memory: bool = False,
    with_flops: bool = False,
) -> EventList:
    """``key_averages()``'s result from rows aggregated elsewhere (the Rust recorder).

    Each row is a tuple (or ``AverageRow``) with, in this order:

    0. ``key`` (str): the event name (demangled, ``ProfilerStep*`` for ``ProfilerStep#N``).
    1. ``calls`` (int): events in the group (the avg's ``count``).
    2. ``cpu_time_total`` (float, us) and 3. ``self_cpu_time_total`` (float, us), summed
       as torch sums them, so that they compare equal: per event, ``total = end_ns / 1000
       - start_ns / 1000`` (two f64 divisions, then the subtraction) and ``self = total -
       (c1 + c2 + ...)`` over its children's totals in start order; the group's values are
       ``((0.0 + e1) + e2) + ...`` over its events in list order.
    4. ``cpu_memory_usage`` (int) and 5. ``self_cpu_memory_usage`` (int): summed bytes;
       an event's are the records with ``start_ns <= ts <= end_ns`` on any thread, its
       self value that minus its children's.
    6. ``flops`` (int): summed, None counting as 0.
    7. ``is_user_annotation`` (bool): a record_function range; part of the key, so a user
       range named like an op is a row of its own.
    8. ``scope`` (int): torch's RecordScope of the group's first event (0, 1 or 7).
    9. ``input_shapes``: the first event's shapes when grouped by input shape, else None.
    10. ``stack`` (list[str]): the first event's first ``group_by_stack_n`` frames.
    11. ``parent``: ``(id, name)`` of the first event's CPU parent, None if top-level.

    The events, and each one's children, are those of ``build_event_list`` (filtered
    names, ``[memory]`` events, duplicate nodes dropped) in its order: sorted by (start, -end), ties in recorder
    order; the groups are keyed by (name, is_user_annotation[, str(input_shapes)][,
    first n frames]) and the rows must come in the order of each group's first event.
    ``rows_from_raw_events`` is the reference implementation.

    What rgrad cannot give without the events: ``cpu_children`` is ``[]`` (torch: the
    first event's children) and ``cpu_parent`` is a FunctionEvent with only the parent's
    id and name (times 0), enough for ``table(top_level_events_only=True)``.

    Returns:
        An EventList of FunctionEventAvg, as ``key_averages`` returns it.
    """
    result = EventList(use_device=use_device, profile_memory=profile_memory, with_flops=with_flops)
    for key, count, cpu_total, self_cpu, memory, self_memory, flops, user, scope, shapes, stack, parent in rows:
        avg = FunctionEventAvg()
        avg.key, avg.count, avg.node_id, avg.use_device = key, count, -1, use_device
        avg.cpu_time_total, avg.self_cpu_time_total = cpu_total, self_cpu
        avg.cpu_memory_usage, avg.self_cpu_memory_usage = memory, self_memory
        avg.input_shapes = "" if shapes is None else shapes
        avg.overload_name, avg.stack, avg.scope, avg.flops = "", list(stack), scope, flops
        avg.is_user_annotation = user
        avg.cpu_children = []
        if parent is not None:
            avg.cpu_parent = FunctionEvent(id=parent[0], name=parent[1], thread=0, start_us=0, end_us=0)
        result.append(avg)
    return result


# ---------------------------------------------------------------------------------------
# nvprof
# ---------------------------------------------------------------------------------------

_MARKER_QUERY = """
SELECT
    start.id AS marker_id, start.name, start.timestamp AS start_time, end.timestamp AS end_time
FROM
    CUPTI_ACTIVITY_KIND_MARKER AS start INNER JOIN CUPTI_ACTIVITY_KIND_MARKER AS end
    ON start.id = end.id
WHERE
    start.name != 0 AND end.name = 0
"""

_KERNEL_QUERY = """
SELECT
    start.id AS marker_id, start.name, start.timestamp, end.timestamp,
    runtime._id_ AS runtime_id, runtime.cbid, runtime.start AS runtime_start, runtime.end AS runtime_end,
    kernel.start AS kernel_start, kernel.end AS kernel_end, kernel.name AS kernel_name
FROM
    CUPTI_ACTIVITY_KIND_MARKER AS start
    INNER JOIN CUPTI_ACTIVITY_KIND_MARKER AS end
        ON start.id = end.id
    INNER JOIN CUPTI_ACTIVITY_KIND_RUNTIME as runtime
        ON (start.timestamp < runtime.start AND runtime.end < end.timestamp)
    INNER JOIN CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL AS kernel
        ON kernel.correlationId = runtime.correlationId
"""

_CUDA_LAUNCH_KERNEL_CBID = 211  # cudaLaunchKernel's callback id, CUDA >= 9.2


def _see_once(seen: set, key: tuple) -> None:
    if key in seen:
        raise RuntimeError("duplicate key: " + str(key))
    seen.add(key)


def load_nvprof(path: str) -> EventList:
    """Open an nvprof trace file and parse autograd annotations (torch's ``load_nvprof``).

    One FunctionEvent per NVTX range (``CUPTI_ACTIVITY_KIND_MARKER`` start/end pairs,
    names from ``StringTable``, demangled; thread 0, node 0), with the kernels whose
    runtime launch lies inside the range (``cbid`` must be 211, cudaLaunchKernel); as in
    torch, a kernel's name is the raw ``kernel.name`` column (a StringTable id) and the
    list is not tree-built. Sorted by start time.

    Args:
        path (str): path to nvprof trace
    """
    import sqlite3  # (on use: it is not needed at import)

    conn = sqlite3.connect(path)
    try:
        conn.row_factory = sqlite3.Row
        strings = {r["id"]: demangle(r["value"]) for r in conn.execute("SELECT _id_ as id, value FROM StringTable")}
        functions = []
        by_id: dict[int, FunctionEvent] = {}
        seen: set = set()
        for row in conn.execute(_MARKER_QUERY):
            _see_once(seen, (row["marker_id"],))
            evt = FunctionEvent(
                id=row["marker_id"],
                node_id=0,
                name=strings[row["name"]],
                start_us=row["start_time"],
                end_us=row["end_time"],
                thread=0,
            )
            functions.append(evt)
            by_id[evt.id] = evt
        seen = set()
        for row in conn.execute(_KERNEL_QUERY):
            _see_once(seen, (row["marker_id"], row["runtime_id"]))
            if row["cbid"] != _CUDA_LAUNCH_KERNEL_CBID:
                raise AssertionError(f"Expected cbid to be 211, but got {row['cbid']}")
            by_id[row["marker_id"]].append_kernel(row["kernel_name"], 0, row["kernel_end"] - row["kernel_start"])
    finally:
        conn.close()
    functions.sort(key=lambda evt: evt.time_range.start)
    return EventList(functions)
