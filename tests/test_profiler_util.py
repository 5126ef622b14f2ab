"""rgrad.autograd.profiler_util: results built from the recorder's tuples, checked against torch's own code.

The torch comparisons feed the same synthetic recording to torch 2.15 as fake Kineto
events through ``torch.autograd.profiler.profile._parse_kineto_results`` (torch's
attribution of memory, ``[memory]`` events, name rewriting, sorting) and
``EventList._build_tree``, then compare every printed and computed result. The
rgrad-only checks (tree invariants, Chrome trace, stacks file, nvprof) run without torch.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
import types
import warnings

import pytest
from rgrad.autograd import profiler_util as pu

MS = 1_000_000  # ns
US = 1_000

# Frames as rgrad's recorder gives them (innermost first); the backward frame is one torch filters out.
STACK_F = ["train.py(12): f", "train.py(40): <module>"]
STACK_G = ["/a/very/long/path/" + "x" * 90 + "/model.py(7): g", "train.py(41): <module>"]
STACK_BW = ["rgrad/autograd/__init__.py(200): backward", "train.py(50): <module>"]
LONG_NAME = "aten::a_really_long_operator_name_that_does_not_fit_in_the_column"


def recording(shapes: bool = True, stacks: bool = True, flops: bool = True, memory: bool = True):
    """A forward on thread 1 (user ranges, nested ops, a filtered op, a duplicate nested
    range, ProfilerStep#N) and its backward on worker thread 2, times from ns to s."""
    s = (lambda v: v) if shapes else (lambda v: None)
    k = (lambda v: v) if stacks else (lambda v: None)
    f = (lambda v: v) if flops else (lambda v: None)
    ev = [
        # id, parent, name, thread, start, end, seq, fwd_thread, scope, shapes, stack, flops
        (1, 0, "ProfilerStep#1", 1, 0, 1_600 * MS, -1, 0, 2, s([]), k(None), f(None)),
        (2, 1, "myblock", 1, 10 * US, 900 * US, -1, 0, 2, s([]), k(None), f(None)),
        (3, 2, "aten::mul", 1, 20 * US, 300 * US + 7, 0, 0, 0, s([[3, 4], []]), k(STACK_F), f(24)),
        (4, 3, "aten::to", 1, 30 * US, 200 * US, -1, 0, 0, s([[], [], []]), k(STACK_F), f(None)),
        (5, 4, "aten::_to_copy", 1, 31 * US, 150 * US + 1, -1, 0, 0, s([[]]), k(STACK_F), f(None)),
        (6, 2, "aten::is_leaf", 1, 310 * US, 320 * US, -1, 0, 0, s([[3, 4]]), k(STACK_F), f(None)),
        (7, 6, "aten::detach", 1, 311 * US, 319 * US, -1, 0, 0, s([[3, 4]]), k(STACK_F), f(None)),
        (8, 2, "aten::sin", 1, 330 * US, 400 * US, 1, 0, 0, s([[3, 4]]), k(STACK_G), f(None)),
        (9, 2, "aten::add", 1, 410 * US, 600 * US, 2, 0, 0, s([[3, 4], [3, 4]]), k(STACK_G), f(12)),
        (10, 9, "aten::add", 1, 420 * US, 590 * US, -1, 0, 0, s([[3, 4], [3, 4]]), k(STACK_G), f(12)),
        (11, 10, "aten::empty", 1, 430 * US, 431 * US, -1, 0, 0, s([[]]), k(STACK_G), f(None)),
        (12, 1, LONG_NAME, 1, 1 * MS, 3 * MS, -1, 0, 0, s([[2, 2] * 30]), k(STACK_F), f(2_000_000)),
        (13, 1, "aten::mm", 1, 4 * MS, 1_200 * MS, 3, 0, 0, s([[3, 4], [4, 5]]), k(STACK_F), f(120)),
        (14, 1, "aten::sum", 1, 1_201 * MS, 1_202 * MS, 4, 0, 0, s([[3, 5]]), k(STACK_F), f(None)),
        (15, 0, "ProfilerStep#2", 1, 1_700 * MS, 1_700 * MS + 500, -1, 0, 2, s([]), k(None), f(None)),
        (16, 0, "aten::mul", 1, 1_800 * MS, 1_800 * MS + 333, -1, 0, 2, s([]), k(None), f(None)),
        # backward on a worker thread
        (20, 0, "autograd::engine::evaluate_function: SumBackward0", 2, 1_300 * MS, 1_301 * MS, 4, 1, 0, s([]),
         k(STACK_BW), f(None)),
        (21, 20, "SumBackward0", 2, 1_300 * MS + 10, 1_301 * MS - 10, 4, 1, 1, s([[]]), k(STACK_BW), f(None)),
        (22, 21, "aten::expand", 2, 1_300 * MS + 20, 1_300 * MS + 90, -1, 0, 0, s([[3, 5]]), k(STACK_BW), f(None)),
        (23, 0, "myblock (backward)", 2, 1_302 * MS, 1_310 * MS, -1, 0, 2, s([]), k(STACK_BW), f(None)),
        (24, 23, "autograd::engine::evaluate_function: SinBackward0", 2, 1_303 * MS, 1_304 * MS, 1, 1, 0, s([]),
         k(STACK_BW), f(None)),
        (25, 24, "SinBackward0", 2, 1_303 * MS + 5, 1_304 * MS - 5, 1, 1, 1, s([[3, 4]]), k(STACK_BW), f(None)),
        (26, 25, "aten::cos", 2, 1_303 * MS + 9, 1_303 * MS + 99, -1, 0, 0, s([[3, 4]]), k(STACK_BW), f(None)),
        (27, 25, "aten::mul", 2, 1_303 * MS + 100, 1_303 * MS + 200, -1, 0, 0, s([[3, 4], [3, 4]]), k(STACK_BW),
         f(12)),
        (28, 23, "autograd::engine::evaluate_function: MulBackward0", 2, 1_305 * MS, 1_306 * MS, 0, 1, 0, s([]),
         k(STACK_BW), f(None)),
        (29, 28, "MulBackward0", 2, 1_305 * MS + 1, 1_306 * MS - 1, 0, 1, 1, s([[3, 4]]), k(STACK_BW), f(None)),
        (30, 29, "aten::mul", 2, 1_305 * MS + 2, 1_305 * MS + 50, -1, 0, 0, s([[3, 4], []]), k(STACK_BW), f(12)),
        (31, 0, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 2, 1_311 * MS,
         1_312 * MS, -1, 0, 0, s([]), k(STACK_BW), f(None)),
        (32, 31, "torch::autograd::AccumulateGrad", 2, 1_311 * MS + 3, 1_312 * MS - 3, -1, 0, 1, s([[3, 4]]),
         k(STACK_BW), f(None)),
    ]  # fmt: skip
    mem = []
    if memory:
        mem = [
            (25 * US, 48, 1),  # in aten::mul
            (31 * US, 4, 1),  # at aten::_to_copy's start: both ends count
            (150 * US + 1, -4, 1),  # at its end
            (315 * US, 1024 * 1024 * 3, 1),  # in aten::detach, under the dropped aten::is_leaf
            (430 * US, 2048, 1),  # in aten::empty, under the duplicate aten::add
            (1_600 * MS + 5, 16, 1),  # outside every range: a [memory] event
            (1_303 * MS + 50, 48, 2),  # in aten::cos on the worker thread
            (1_305 * MS + 3, 1024**3 * 2, 2),  # in the backward aten::mul
            (1_650 * MS, -48, 2),  # outside: another [memory] event
            (1_303 * MS + 150, -48, 1),  # thread 1's free inside thread 2's aten::mul: torch counts it there
        ]
    return ev, mem


CONFIGS = {
    "plain": dict(shapes=False, stacks=False, flops=False, memory=False),
    "shapes_memory": dict(shapes=True, stacks=False, flops=False, memory=True),
    "everything": dict(shapes=True, stacks=True, flops=True, memory=True),
    "stacks": dict(shapes=False, stacks=True, flops=False, memory=False),
    "flops": dict(shapes=True, stacks=False, flops=True, memory=False),
}


def build(config: str, use_device=None):
    opts = CONFIGS[config]
    raw, mem = recording(**opts)
    return pu.build_event_list(raw, mem, use_device=use_device, profile_memory=opts["memory"], with_flops=opts["flops"])


# ---------------------------------------------------------------------------------------
# torch's side: the same recording as Kineto events
# ---------------------------------------------------------------------------------------


class _FakeKinetoEvent:
    """The KinetoEvent methods torch's _parse_kineto_results calls."""

    def __init__(self, torch, name, start_ns, end_ns, thread, **fields):
        self._name, self._start, self._end, self._thread, self._f = name, start_ns, end_ns, thread, fields
        self._cpu = torch.autograd.DeviceType.CPU

    def name(self):
        return self._name

    def start_ns(self):
        return self._start

    def end_ns(self):
        return self._end

    def start_thread_id(self):
        return self._thread

    end_thread_id = start_thread_id
    device_resource_id = start_thread_id

    def device_type(self):
        return self._cpu

    def __getattr__(self, attr):
        defaults = dict(
            correlation_id=0, overload_name="", fwd_thread_id=0, shapes=[], concrete_inputs=[], kwinputs={},
            stack=[], scope=0, sequence_nr=-1, device_index=0, flops=0, is_user_annotation=False,
            is_python_function=False, is_async=False, activity_type="cpu_op", extra_meta={}, typed_metadata={},
            flow_id=0, flow_type=0, flow_start=False, external_id=0, linked_correlation_id=0,
            structured_input_shapes=[], structured_input_strides=[], dtypes=[], python_id=-1,
            python_parent_id=-1, python_module_id=-1, cuda_elapsed_us=0, privateuse1_elapsed_us=0, nbytes=0,
        )  # fmt: skip
        if attr not in defaults:
            raise AttributeError(attr)
        value = self._f.get(attr, defaults[attr])
        return lambda: value


def torch_event_list(config: str, use_device=None):
    torch = pytest.importorskip("torch")
    from torch.autograd import profiler as tprof
    from torch.autograd import profiler_util as tpu

    opts = CONFIGS[config]
    raw, mem = recording(**opts)
    trace_start = 10**12
    events = []
    for rid, _parent, name, thread, start, end, seq, fwd, scope, shapes, stack, flops in raw:
        scope = 7 if scope == 2 else scope
        events.append(
            _FakeKinetoEvent(
                torch, name, trace_start + start, trace_start + end, thread, correlation_id=rid, external_id=rid,
                fwd_thread_id=fwd, shapes=shapes or [], stack=stack or [], scope=scope, sequence_nr=seq,
                flops=flops or 0, is_user_annotation=scope == 7,
            )
        )  # fmt: skip
    for ts, nbytes, thread in mem:
        events.append(_FakeKinetoEvent(torch, "[memory]", trace_start + ts, trace_start + ts, thread, nbytes=nbytes))
    result = types.SimpleNamespace(events=lambda: events, trace_start_ns=lambda: trace_start)
    fake_profile = types.SimpleNamespace(use_device=use_device)
    parsed = tprof.profile._parse_kineto_results(fake_profile, result)
    out = tpu.EventList(parsed, use_device=use_device, profile_memory=opts["memory"], with_flops=opts["flops"])
    out._build_tree()
    return out


EVENT_ATTRS = [
    "id", "name", "trace_name", "overload_name", "thread", "fwd_thread", "sequence_nr", "scope", "input_shapes",
    "stack", "node_id", "count", "cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage",
    "self_device_memory_usage", "cpu_time_total", "self_cpu_time_total", "device_time_total",
    "self_device_time_total", "cpu_time", "device_time", "cpu_time_str", "cpu_time_total_str",
    "self_cpu_time_total_str", "device_time_str", "flops", "is_user_annotation", "is_async", "is_remote",
    "is_legacy", "device_index", "device_resource_id", "use_device", "kernels", "is_python_function",
]  # fmt: skip
AVG_ATTRS = [
    "key", "count", "node_id", "is_async", "is_remote", "use_device", "cpu_time_total", "device_time_total",
    "self_cpu_time_total", "self_device_time_total", "input_shapes", "overload_name", "stack", "scope",
    "cpu_memory_usage", "device_memory_usage", "self_cpu_memory_usage", "self_device_memory_usage", "is_legacy",
    "flops", "is_user_annotation", "cpu_time", "cpu_time_str", "self_cpu_time_total_str", "cpu_time_total_str",
]  # fmt: skip


def same(ours, theirs, attrs):
    for attr in attrs:
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    assert str(ours.device_type) == str(theirs.device_type)
    assert repr(ours) == repr(theirs)


def same_tree(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        same(a, b, EVENT_ATTRS)
        assert [c.id for c in a.cpu_children] == [c.id for c in b.cpu_children]
        assert (a.cpu_parent and a.cpu_parent.id) == (b.cpu_parent and b.cpu_parent.id)


def same_averages(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        same(a, b, AVG_ATTRS)
        assert (a.cpu_parent is None) == (b.cpu_parent is None)


TABLE_ARGS = [
    {},
    {"sort_by": "cpu_time_total"},
    {"sort_by": "self_cpu_time_total", "row_limit": 5},
    {"sort_by": "cpu_time"},
    {"sort_by": "count"},
    {"sort_by": "cpu_memory_usage"},
    {"sort_by": "self_cpu_memory_usage", "header": "A header"},
    {"sort_by": "cuda_time_total"},
    {"sort_by": "self_device_time_total"},
    {"top_level_events_only": True},
    {"top_level_events_only": True, "row_limit": 2, "header": "Top"},
    {"time_unit": "ms"},
    {"time_unit": "s", "sort_by": "cpu_time_total"},
    {"time_unit": "us"},
    {"max_name_column_width": 20, "max_shapes_column_width": 15, "max_src_column_width": 30},
    {"row_limit": 0},
]


# ---------------------------------------------------------------------------------------
# against torch
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("use_device", [None, "cuda"])
@pytest.mark.parametrize("config", list(CONFIGS))
def test_events_match_torch(config, use_device):
    theirs = torch_event_list(config, use_device)
    ours = build(config, use_device)
    same_tree(ours, theirs)
    assert ours.self_cpu_time_total == theirs.self_cpu_time_total
    for evt in theirs:  # torch's table raises TypeError on the [memory] events' None flops (rgrad prints --)
        if evt.flops is None:
            evt.flops = 0
    assert str(ours) == str(theirs)
    for kwargs in TABLE_ARGS:
        assert ours.table(**kwargs) == theirs.table(**kwargs), kwargs
    # table() stores the percentages on the events, as torch's does
    assert [e.self_cpu_percent for e in ours] == [e.self_cpu_percent for e in theirs]


@pytest.mark.parametrize("group", [{}, {"group_by_input_shapes": True}, {"group_by_stack_n": 1},
                                   {"group_by_stack_n": 5, "group_by_input_shapes": True},
                                   {"group_by_overload_name": True}])  # fmt: skip
@pytest.mark.parametrize("config", list(CONFIGS))
def test_key_averages_match_torch(config, group):
    theirs = torch_event_list(config).key_averages(**group)
    ours = build(config).key_averages(**group)
    same_averages(ours, theirs)
    assert str(ours) == str(theirs)
    for kwargs in TABLE_ARGS:
        assert ours.table(**kwargs) == theirs.table(**kwargs), kwargs
    same(ours.total_average(), theirs.total_average(), AVG_ATTRS)


@pytest.mark.parametrize("config", list(CONFIGS))
def test_total_average_matches_torch(config):
    theirs = torch_event_list(config).total_average()
    ours = build(config).total_average()
    same(ours, theirs, AVG_ATTRS)
    assert ours.cpu_parent is None and theirs.cpu_parent is None  # the last event's, a [memory] or top-level one


@pytest.mark.parametrize("group_by_stack_n", [0, 1, 3])
@pytest.mark.parametrize("group_by_input_shape", [False, True])
@pytest.mark.parametrize("config", list(CONFIGS))
def test_averages_from_rows_match_torch(config, group_by_input_shape, group_by_stack_n):
    opts = CONFIGS[config]
    raw, mem = recording(**opts)
    rows = pu.rows_from_raw_events(
        raw, mem, group_by_input_shape=group_by_input_shape, group_by_stack_n=group_by_stack_n
    )
    ours = pu.averages_from_rows(rows, profile_memory=opts["memory"], with_flops=opts["flops"])
    theirs = torch_event_list(config).key_averages(group_by_input_shape, group_by_stack_n)
    same_averages(ours, theirs)
    for kwargs in TABLE_ARGS:
        assert ours.table(**kwargs) == theirs.table(**kwargs), kwargs
    same(ours.total_average(), theirs.total_average(), AVG_ATTRS)


def test_hand_built_event_list_matches_torch():
    """FunctionEvents made by hand and nested by time, as torch's EventList._build_tree does."""
    torch = pytest.importorskip("torch")
    from torch.autograd import profiler_util as tpu

    def make(mod):
        evts = [
            mod.FunctionEvent(id=1, name="outer", thread=1, start_us=0.0, end_us=100.5, input_shapes=[[2]], stack=[]),
            mod.FunctionEvent(id=2, name="inner", thread=1, start_us=1.0, end_us=50.25, stack=["a.py(1): f"]),
            mod.FunctionEvent(id=3, name="inner", thread=1, start_us=2.0, end_us=40.0, stack=["a.py(2): g"]),
            mod.FunctionEvent(id=4, name="Bw", thread=2, start_us=200.0, end_us=300.0, scope=1, sequence_nr=7,
                              fwd_thread=1, stack=[]),
            mod.FunctionEvent(id=5, name="leaf", thread=2, start_us=210.0, end_us=220.0, stack=[]),
            mod.FunctionEvent(id=6, name="fwd", thread=1, start_us=60.0, end_us=70.0, sequence_nr=7,
                              stack=["a.py(3): h"]),
        ]  # fmt: skip
        out = mod.EventList(evts)
        out._build_tree()
        return out

    ours, theirs = make(pu), make(tpu)
    same_tree(ours, theirs)
    assert ours.table() == theirs.table()
    same_averages(ours.key_averages(), theirs.key_averages())
    assert torch.autograd.DeviceType.CPU.name == pu.DeviceType.CPU.name


def test_export_stacks_matches_torch(tmp_path):
    pytest.importorskip("torch")
    ours, theirs = build("everything"), torch_event_list("everything")
    ours.export_stacks(str(tmp_path / "ours.txt"), "self_cpu_time_total")
    theirs.export_stacks(str(tmp_path / "theirs.txt"), "self_cpu_time_total")
    assert (tmp_path / "ours.txt").read_text() == (tmp_path / "theirs.txt").read_text()


def test_deprecated_aliases_warn_like_torch():
    ours, theirs = build("plain", "cuda")[0], torch_event_list("plain", "cuda")[0]
    for attr in ["cuda_time_total", "self_cuda_time_total", "self_cuda_memory_usage", "cuda_time"]:
        with pytest.warns(FutureWarning) as ours_warnings:
            ours_value = getattr(ours, attr)
        with pytest.warns(FutureWarning) as theirs_warnings:
            theirs_value = getattr(theirs, attr)
        assert ours_value == theirs_value
        assert str(ours_warnings[0].message) == str(theirs_warnings[0].message)


# ---------------------------------------------------------------------------------------
# rgrad only
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("config", list(CONFIGS))
def test_tree_invariants(config):
    events = build(config)
    ids = [e.id for e in events]
    assert len(set(ids)) == len(ids)
    assert "aten::is_leaf" not in {e.name for e in events}
    starts = [(e.time_range.start, -e.time_range.end) for e in events]
    assert starts == sorted(starts)
    for e in events:
        assert e.self_cpu_time_total <= e.cpu_time_total
        for child in e.cpu_children:
            assert child.cpu_parent is e
            assert child.thread == e.thread
            assert e.time_range.start <= child.time_range.start <= child.time_range.end <= e.time_range.end
        assert e.self_cpu_memory_usage == e.cpu_memory_usage - sum(c.cpu_memory_usage for c in e.cpu_children)
    by_id = {e.id: e for e in events}
    # the detach under the dropped aten::is_leaf belongs to myblock; the duplicate aten::add is gone
    assert by_id[7].cpu_parent is by_id[2]
    assert 10 not in by_id and by_id[11].cpu_parent is by_id[9]
    assert by_id[1].name == "ProfilerStep*" and by_id[1].trace_name == "ProfilerStep#1"
    assert by_id[2].scope == 7 and by_id[2].is_user_annotation and not by_id[3].is_user_annotation


def test_recorder_order_does_not_matter():
    """Events are sorted by start (longer first); the averages' rows follow that order, not the recorder's."""
    raw, mem = recording()
    forward = build("everything")
    backward = pu.build_event_list(raw[::-1], mem, profile_memory=True, with_flops=True)
    assert [e.id for e in backward] == [e.id for e in forward]
    assert str(backward) == str(forward)
    assert str(backward.key_averages()) == str(forward.key_averages())
    assert pu.rows_from_raw_events(raw[::-1], mem) == pu.rows_from_raw_events(raw, mem)


def test_memory_attribution_and_memory_events():
    events = build("shapes_memory")
    by_id = {e.id: e for e in events}
    assert by_id[5].cpu_memory_usage == 0  # +4 at its start, -4 at its end
    assert by_id[3].cpu_memory_usage == 48 and by_id[3].self_cpu_memory_usage == 48
    assert by_id[2].cpu_memory_usage == 48 + 3 * 1024 * 1024 + 2048
    memory = [e for e in events if e.name == "[memory]"]
    assert [(e.id, e.thread, e.cpu_memory_usage, e.trace_name, e.cpu_parent) for e in memory] == [
        (33, 1, 16, None, None),
        (34, 2, -48, None, None),
    ]
    assert "CPU Mem" in events.table() and "3.00 MB" in events.table() and "2.00 GB" in events.table()
    assert "CPU Mem" not in build("plain").table()


def test_key_averages_needs_tree():
    with pytest.raises(AssertionError, match="Expected tree to be built"):
        pu.EventList([]).key_averages()
    assert pu.EventList([]).table() == ""


def test_device_type_prints_like_torch():
    assert str(pu.DeviceType.CPU) == "DeviceType.CPU"
    assert f"{pu.DeviceType.CUDA}" == "DeviceType.CUDA"
    assert repr(pu.DeviceType.CPU) == "<DeviceType.CPU: 0>"
    assert int(pu.DeviceType.PrivateUse1) == 20


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_chrome_trace(tmp_path, suffix):
    path = tmp_path / ("trace" + suffix)
    events = build("everything")
    events.export_chrome_trace(str(path))
    text = gzip.decompress(path.read_bytes()).decode() if suffix.endswith(".gz") else path.read_text()
    trace = json.loads(text)
    assert trace["schemaVersion"] == 1 and trace["traceName"] == str(path)
    evs = trace["traceEvents"]
    complete = [e for e in evs if e["ph"] == "X"]
    assert len(complete) == len([e for e in events if e.name != "[memory]"])
    for e in complete:
        assert set(e) == {"ph", "cat", "name", "pid", "tid", "ts", "dur", "args"}
        assert e["cat"] in ("cpu_op", "user_annotation") and e["dur"] >= 0 and e["tid"] in (1, 2)
    by_id = {e["args"]["External id"]: e for e in complete}
    assert by_id[1]["name"] == "ProfilerStep#1" and by_id[1]["cat"] == "user_annotation"
    assert by_id[3]["args"]["Input Dims"] == [[3, 4], []]
    assert by_id[3]["args"]["Sequence number"] == 0 and by_id[3]["args"]["Fwd thread id"] == 0
    assert by_id[3]["args"]["Call stack"] == ";".join(STACK_F)
    lanes = {(e["tid"], e["args"]["name"]) for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    assert lanes == {(1, "thread 1"), (2, "thread 2")}
    # one flow per backward node, from the forward op with the same (seq_nr, thread) to the node itself
    starts = {e["id"]: e for e in evs if e["ph"] == "s"}
    ends = {e["id"]: e for e in evs if e["ph"] == "f"}
    assert set(starts) == set(ends) == {1, 2, 3}
    pairs = set()
    for fid, s in starts.items():
        f = ends[fid]
        assert s["cat"] == f["cat"] == "fwdbwd" and f["bp"] == "e"
        src = next(e for e in complete if e["tid"] == s["tid"] and e["ts"] == s["ts"])
        dst = next(e for e in complete if e["tid"] == f["tid"] and e["ts"] == f["ts"])
        pairs.add((src["name"], dst["name"]))
    assert pairs == {("aten::sum", "SumBackward0"), ("aten::sin", "SinBackward0"), ("aten::mul", "MulBackward0")}
    memory = [e for e in evs if e["ph"] == "i"]
    assert len(memory) == len(recording()[1])
    assert [e["args"]["Bytes"] for e in memory][:3] == [48, 4, -4]
    assert memory[-1]["args"]["Total Allocated"] == sum(nbytes for _, nbytes, _ in recording()[1])


def test_export_stacks_format(tmp_path):
    events = build("everything")
    with pytest.raises(ValueError, match="metric should be one of"):
        events.export_stacks(str(tmp_path / "x"), "cpu_time")
    path = tmp_path / "stacks.txt"
    events.export_stacks(str(path), "self_cpu_time_total")
    lines = path.read_text().splitlines()
    assert lines and all(len(line.rsplit(" ", 1)) == 2 for line in lines)
    # outermost frame first; spaces in frames become underscores
    assert lines[0].startswith("train.py(40):_<module>;train.py(12):_f ")
    # backward ops carry the stack of the forward op that made their node
    sin_stack = ";".join(f.replace(" ", "_") for f in reversed(STACK_G))
    by_id = {e.id: e for e in events}
    assert by_id[26].stack == STACK_G and any(line.startswith(sin_stack + " ") for line in lines)
    assert by_id[32].stack == []  # AccumulateGrad has no forward op
    assert all(int(line.rsplit(" ", 1)[1]) > 0 for line in lines)
    assert not (tmp_path / "empty.txt").exists()
    build("plain").export_stacks(str(tmp_path / "empty.txt"), "self_cuda_time_total")
    assert (tmp_path / "empty.txt").read_text() == ""


def test_averages_from_rows_equal_key_averages_without_torch():
    for config, opts in CONFIGS.items():
        raw, mem = recording(**opts)
        for shapes in (False, True):
            rows = pu.rows_from_raw_events(raw, mem, group_by_input_shape=shapes, group_by_stack_n=2)
            fast = pu.averages_from_rows(rows, profile_memory=opts["memory"], with_flops=opts["flops"])
            slow = build(config).key_averages(shapes, 2)
            same_averages(fast, slow)
            assert fast.table() == slow.table(), config
            assert fast.table(top_level_events_only=True) == slow.table(top_level_events_only=True)
    # rows are plain tuples for the Rust side; an AverageRow names the fields
    row = pu.rows_from_raw_events(*recording())[0]
    assert row.key == "ProfilerStep*" and row.calls == 2 and row.parent is None
    assert pu.averages_from_rows([tuple(row)])[0].count == 2


def test_memory_events_have_no_flops_in_flops_table():
    # torch's table raises TypeError comparing the [memory] events' None flops; rgrad prints "--"
    table = build("everything").table()
    assert "Total KFLOPs" not in table and "Total FLOPs" in table
    memory_rows = [line for line in table.splitlines() if line.lstrip().startswith("[memory]")]
    assert memory_rows and all("--" in line for line in memory_rows)


NVPROF_SCHEMA = """
CREATE TABLE StringTable (_id_ INTEGER PRIMARY KEY, value TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_MARKER (_id_ INTEGER PRIMARY KEY, flags INT, timestamp INT, id INT,
    objectKind INT, objectId BLOB, name INT, domain INT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (_id_ INTEGER PRIMARY KEY, cbid INT, start INT, end INT,
    processId INT, threadId INT, correlationId INT, returnValue INT);
CREATE TABLE CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL (_id_ INTEGER PRIMARY KEY, start INT, end INT,
    deviceId INT, contextId INT, streamId INT, correlationId INT, name INT);
"""


def _nvprof_file(path, runtime_cbid=211):
    conn = sqlite3.connect(path)
    conn.executescript(NVPROF_SCHEMA)
    conn.executemany("INSERT INTO StringTable VALUES (?, ?)", [(1, "aten::mul"), (2, "_Z3foov"), (3, "kernel_a")])
    conn.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_MARKER (timestamp, id, name) VALUES (?, ?, ?)",
        [(500, 2, 2), (100, 1, 1), (900, 1, 0), (800, 2, 0)],
    )
    conn.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1, {runtime_cbid}, 150, 160, 0, 0, 7, 0)")
    conn.execute("INSERT INTO CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL VALUES (1, 170, 230, 0, 0, 0, 7, 3)")
    conn.commit()
    conn.close()


def test_load_nvprof(tmp_path):
    path = str(tmp_path / "trace.nvvp")
    _nvprof_file(path)
    events = pu.load_nvprof(path)
    assert [(e.id, e.name, e.time_range.start, e.time_range.end, e.thread, e.node_id) for e in events] == [
        (1, "aten::mul", 100, 900, 0, 0),
        (2, "foo()", 500, 800, 0, 0),
    ]
    assert events[0].kernels == [pu.Kernel(3, 0, 60)] and events[1].kernels == []
    assert "Node ID" in events.table()
    bad = str(tmp_path / "bad.nvvp")
    _nvprof_file(bad, runtime_cbid=13)
    with pytest.raises(AssertionError, match="Expected cbid to be 211, but got 13"):
        pu.load_nvprof(bad)


def test_load_nvprof_matches_torch(tmp_path):
    torch = pytest.importorskip("torch")
    path = str(tmp_path / "trace.nvvp")
    _nvprof_file(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch deprecates load_nvprof
        theirs = torch.autograd.profiler.load_nvprof(path)
    ours = pu.load_nvprof(path)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        same(a, b, EVENT_ATTRS)
    assert ours.table() == theirs.table()
