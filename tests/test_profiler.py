"""The profiler on real recordings: rgrad.autograd.profiler.profile, record_function,
rgrad.profiler's schedule, and, where torch is installed, the same programs on torch
(event names, counts, table columns, sequence-number links, trace schema).

The result classes' formatting against torch's own classes is tests/test_profiler_util.py.
"""

from __future__ import annotations

import gzip
import json
import re
import threading
import warnings

import pytest

import rgrad
from rgrad.autograd import Function

profiler = rgrad.autograd.profiler


def _torch():
    return pytest.importorskip("torch")


def _square_backward(lib):
    x = lib.randn(1, 1, requires_grad=True) if lib is rgrad else lib.randn(1, 1, requires_grad=True)
    with lib.autograd.profiler.profile() as prof:
        y = x**2
        y.backward()
    return prof


def _top_level_names(prof) -> list[str]:
    return [e.name for e in prof.function_events if e.cpu_parent is None]


def test_seed_example_events_and_table():
    prof = _square_backward(rgrad)
    names = _top_level_names(prof)
    assert names[0] == "aten::pow"
    assert "autograd::engine::evaluate_function: PowBackward0" in names
    # (rgrad accumulates a leaf's gradient as soon as the node that sends it is done with
    # it, inside that node's evaluation; torch's engine queues an AccumulateGrad node)
    acc = [e for e in prof.function_events if e.name == "torch::autograd::AccumulateGrad"]
    assert len(acc) == 1
    assert acc[0].cpu_parent.name == "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"
    text = str(prof)
    lines = text.splitlines()
    assert re.fullmatch(r"-+(  -+)+  ", lines[0])
    assert lines[1].split() == ["Name", "Self", "CPU", "%", "Self", "CPU", "CPU", "total", "%", "CPU", "total",
                                "CPU", "time", "avg", "#", "of", "Calls"]
    assert lines[-1].startswith("Self CPU time total: ")
    # the backward node sits inside the engine's evaluation of it
    ev = {e.name: e for e in prof.function_events}
    node = ev["PowBackward0"]
    assert node.cpu_parent.name == "autograd::engine::evaluate_function: PowBackward0"


def test_same_top_level_events_and_columns_as_torch():
    torch = _torch()
    ours, theirs = _square_backward(rgrad), _square_backward(torch)
    # rgrad has no aten::ones_like for the implicit root gradient (it makes the ones directly)
    strip = lambda names: [  # noqa: E731
        n
        for n in names
        if n not in ("aten::ones_like", "aten::ones", "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad")
    ]
    assert strip(_top_level_names(ours)) == strip(_top_level_names(theirs))
    header = lambda p: p.key_averages().table().splitlines()[1].split()  # noqa: E731
    assert header(ours) == header(theirs)


def test_self_time_within_total_and_children_nest():
    x = rgrad.randn(64, 64, requires_grad=True)
    with profiler.profile() as prof:
        for _ in range(3):
            (x.tanh() @ x).sum().backward()
    for e in prof.function_events:
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total + 1e-9
        for c in e.cpu_children:
            assert c.cpu_parent is e
            assert e.time_range.start <= c.time_range.start and c.time_range.end <= e.time_range.end
            assert c.thread == e.thread
    for a in prof.key_averages():
        assert a.self_cpu_time_total <= a.cpu_time_total + 1e-9
    total = prof.key_averages()
    assert sum(a.count for a in total) == len(prof.function_events)


def test_sequence_numbers_link_forward_ops_to_their_backward_nodes():
    x = rgrad.randn(3, requires_grad=True)
    with profiler.profile() as prof:
        y = (x * 2).exp().sum()
        y.backward()
    fwd = {e.name: e for e in prof.function_events if e.name.startswith("aten::") and e.sequence_nr >= 0}
    bwd = {e.name: e for e in prof.function_events if e.name.endswith("Backward0") and not e.name.startswith("auto")}
    for op, node in [("aten::mul", "MulBackward0"), ("aten::exp", "ExpBackward0"), ("aten::sum", "SumBackward0")]:
        assert fwd[op].sequence_nr == bwd[node].sequence_nr
        assert bwd[node].fwd_thread == fwd[op].thread
    assert y.grad_fn._sequence_nr() == fwd["aten::sum"].sequence_nr


def test_sequence_numbers_as_torch():
    torch = _torch()

    def run(lib):
        x = lib.ones(3, requires_grad=True)
        with lib.autograd.profiler.profile() as prof:
            y = (x * 2).exp().sum()
            y.backward()
        nodes = sorted((e.name, e.sequence_nr) for e in prof.function_events if e.name.endswith("Backward0"))
        return nodes, y.grad_fn._sequence_nr() - (x * 1).grad_fn._sequence_nr()

    (ours, _), (theirs, _) = run(rgrad), run(torch)
    # each node's number relative to the first one of the run
    rel = lambda nodes: [(n, s - min(s for _, s in nodes)) for n, s in nodes]  # noqa: E731
    assert rel(ours) == rel(theirs)


def test_custom_function_forward_and_backward_names():
    class Twice(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = rgrad.ones(2, requires_grad=True)
    with profiler.profile() as prof:
        Twice.apply(x).sum().backward()
    names = [e.name for e in prof.function_events]
    assert "Twice" in names
    assert "TwiceBackward" in names
    assert "autograd::engine::evaluate_function: TwiceBackward" in names
    fwd = next(e for e in prof.function_events if e.name == "Twice")
    bwd = next(e for e in prof.function_events if e.name == "TwiceBackward")
    assert fwd.sequence_nr == bwd.sequence_nr >= 0


def test_record_function_covers_its_ops_and_their_backward():
    x = rgrad.randn(8, requires_grad=True)
    with profiler.profile() as prof:
        with profiler.record_function("my_layer"):
            y = x.sin() * 3
        y.sum().backward()
    ev = prof.function_events
    layer = next(e for e in ev if e.name == "my_layer")
    assert {c.name for c in layer.cpu_children} >= {"aten::sin", "aten::mul"}
    # each node made inside the range is evaluated inside a "my_layer (backward)" range
    inside = {c.name for e in ev if e.name == "my_layer (backward)" for c in e.cpu_children}
    assert inside == {
        "autograd::engine::evaluate_function: MulBackward0",
        "autograd::engine::evaluate_function: SinBackward0",
    }
    sum_node = next(e for e in ev if e.name == "autograd::engine::evaluate_function: SumBackward0")
    assert sum_node.cpu_parent is None
    # as a decorator
    @profiler.record_function("decorated")
    def f(t):
        return t + 1

    with profiler.profile() as prof:
        f(x)
    assert [e.name for e in prof.function_events][:2] == ["decorated", "aten::add"]
    # outside a session it does nothing
    with profiler.record_function("idle"):
        x + 1


def test_backward_worker_threads_get_their_own_lanes(tmp_path):
    rgrad.set_num_threads(2)
    x = rgrad.randn(256, requires_grad=True)
    with profiler.profile() as prof:
        branches = [(x * (i + 1)).exp() for i in range(16)]
        total = branches[0]
        for b in branches[1:]:
            total = total + b
        total.sum().backward()
    threads = {e.thread for e in prof.function_events}
    assert len(threads) >= 1
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    complete = [e for e in events if e.get("ph") == "X"]
    assert len(complete) == len(prof.function_events)
    for e in complete:
        assert {"name", "ph", "ts", "dur", "pid", "tid"} <= set(e)
    assert len({e["tid"] for e in complete}) == len(threads)
    gz = tmp_path / "trace.json.gz"
    prof.export_chrome_trace(str(gz))
    with gzip.open(gz, "rt") as f:
        assert json.load(f)


def test_shapes_memory_and_flops():
    a = rgrad.randn(16, 32)
    b = rgrad.randn(32, 8)
    with profiler.profile(record_shapes=True, profile_memory=True, with_flops=True) as prof:
        c = a.mm(b)
        del c
    mm = next(e for e in prof.function_events if e.name == "aten::mm")
    assert mm.input_shapes == [[16, 32], [32, 8]]
    assert mm.cpu_memory_usage == 16 * 8 * 4
    assert mm.flops == 2 * 16 * 32 * 8
    table = prof.key_averages(group_by_input_shape=True).table()
    assert "Input Shapes" in table and "[[16, 32], [32, 8]]" in table
    assert "CPU Mem" in table


def test_with_stack_and_export_stacks(tmp_path):
    x = rgrad.randn(4)

    def inner(t):
        return t.exp()

    with profiler.profile(with_stack=True) as prof:
        inner(x)
    exp = next(e for e in prof.function_events if e.name == "aten::exp")
    assert exp.stack[0].endswith(": inner") and "test_profiler.py(" in exp.stack[0]
    out = tmp_path / "stacks.txt"
    prof.export_stacks(str(out), "self_cpu_time_total")
    line = out.read_text().splitlines()[0]
    assert re.fullmatch(r".+ \d+", line)


def test_not_reentrant_and_one_session_at_a_time():
    p = profiler.profile()
    with p:
        with pytest.raises(RuntimeError, match="Profiler context manager is not reentrant"):
            p.__enter__()
        with pytest.raises(RuntimeError):
            profiler.profile().__enter__()
    with profiler.profile(enabled=False) as q:
        assert q is None


def test_use_cuda_warns_and_profiles_the_cpu():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        p = profiler.profile(use_cuda=True)
    assert [(type(m.message), str(m.message)) for m in w] == [
        (FutureWarning, "The attribute `use_cuda` will be deprecated soon, please use ``use_device = 'cuda'`` instead."),
        (UserWarning, "CUDA is not available, disabling CUDA profiling"),
    ]
    with p:
        rgrad.ones(2) + 1
    assert [e.name for e in p.function_events][-1] == "aten::add"


def test_profiling_from_many_threads_at_once():
    """Ops of several Python threads land in their own lanes, none lost."""
    n_threads, n_ops = 4, 200

    def work():
        t = rgrad.ones(3)
        for _ in range(n_ops):
            t = t + 1

    with profiler.profile() as prof:
        threads = [threading.Thread(target=work) for _ in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    adds = [e for e in prof.function_events if e.name == "aten::add"]
    assert len(adds) == n_threads * n_ops
    assert len({e.thread for e in adds}) == n_threads


def test_torch_profiler_schedule_and_trace_handler(tmp_path):
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sched = rgrad.profiler.schedule(wait=1, warmup=1, active=2, repeat=2)
    with rgrad.profiler.profile(
        activities=[rgrad.profiler.ProfilerActivity.CPU],
        schedule=sched,
        on_trace_ready=lambda p: seen.append([e.name for e in p.events()]),
    ) as p:
        x = rgrad.ones(2)
        for _ in range(10):
            x = x + 1
            p.step()
    assert len(seen) == 2
    for names in seen:
        assert names.count("aten::add") == 2
    # (each recorded step is a ProfilerStep#N range, named ProfilerStep* as torch names it)
    assert seen[0].count("ProfilerStep*") == 2
    handler = rgrad.profiler.tensorboard_trace_handler(str(tmp_path), worker_name="w0")
    with rgrad.profiler.profile(on_trace_ready=handler):
        rgrad.ones(2) * 2
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and re.fullmatch(r"w0\.\d+\.pt\.trace\.json", files[0].name)
    json.loads(files[0].read_text())


def test_schedule_matches_torch():
    torch = _torch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kw in [dict(wait=1, warmup=1, active=2), dict(wait=2, warmup=0, active=1, repeat=3, skip_first=2)]:
            ours = rgrad.profiler.schedule(**kw)
            theirs = torch.profiler.schedule(**kw)
            assert [ours(i).name for i in range(20)] == [theirs(i).name for i in range(20)]


def test_emit_nvtx_ranges_carry_torchs_names_and_sequence_numbers():
    """The ranges emit_nvtx sends (captured here instead of going to NVTX): one push/pop
    per op and per backward node, ``seq = N`` linking a forward op to its node."""
    x = rgrad.ones(2, 3, requires_grad=True)
    _ = rgrad._C._nvtx_capture(True)
    try:
        with profiler.emit_nvtx(record_shapes=True):
            y = (x * 2).sum()
            y.backward()
    finally:
        ranges = rgrad._C._nvtx_capture(False)
    pushes = [r[len("push ") :] for r in ranges if r.startswith("push ")]
    assert ranges.count("pop") == len(pushes)
    mul_seq = y.grad_fn._sequence_nr() - 1
    assert f"aten::mul, seq = {mul_seq}, sizes = [[2, 3]]" in pushes
    assert f"aten::sum, seq = {mul_seq + 1}, sizes = [[2, 3]]" in pushes
    assert f"MulBackward0, seq = {mul_seq}" in pushes
    assert f"SumBackward0, seq = {mul_seq + 1}" in pushes
    # ops inside another op, and ops without grad mode, carry no number
    with rgrad.no_grad():
        rgrad._C._nvtx_capture(True)
        with profiler.emit_nvtx():
            x * 2
        assert rgrad._C._nvtx_capture(False) == ["push aten::mul", "pop"]
    # off: nothing
    rgrad._C._nvtx_capture(True)
    x * 2
    assert rgrad._C._nvtx_capture(False) == []
    with profiler.emit_nvtx() as e:
        with pytest.raises(RuntimeError, match="NVTX annotation context manager is not reentrant"):
            e.__enter__()


def test_chrome_trace_schema_as_torchs(tmp_path):
    """The trace's structure is torch's (Kineto's): its top-level keys, the keys of complete
    events and of their args, and forward→backward flow events."""
    torch = _torch()

    def trace(lib, path):
        x = lib.ones(2, 3, requires_grad=True)
        with lib.autograd.profiler.profile(record_shapes=True) as prof:
            (x * 2).sum().backward()
        prof.export_chrome_trace(str(path))
        return json.loads(path.read_text())

    ours, theirs = trace(rgrad, tmp_path / "r.json"), trace(torch, tmp_path / "t.json")
    assert set(ours) <= set(theirs)
    assert {"traceEvents", "schemaVersion", "deviceProperties", "displayTimeUnit"} <= set(ours)

    def complete(t):
        return [e for e in t["traceEvents"] if e.get("ph") == "X"]

    keys = lambda t: set().union(*(set(e) for e in complete(t)))  # noqa: E731
    args = lambda t: set().union(*(set(e.get("args", {})) for e in complete(t)))  # noqa: E731
    assert keys(ours) == keys(theirs)
    assert {"Input Dims", "Sequence number", "Fwd thread id", "External id"} <= args(ours) <= args(theirs)
    flows = lambda t: [e for e in t["traceEvents"] if e.get("cat") == "fwdbwd"]  # noqa: E731
    assert {e["ph"] for e in flows(ours)} == {"s", "f"}
    flow_keys = lambda t, ph: {frozenset(e) for e in flows(t) if e["ph"] == ph}  # noqa: E731
    assert flow_keys(ours, "s") == flow_keys(theirs, "s")
    # one flow pair per node the backward ran: MulBackward0 and SumBackward0
    assert len([e for e in flows(ours) if e["ph"] == "s"]) == 2


def test_key_averages_in_rust_equal_the_event_lists():
    """``profile.key_averages()`` averages in Rust before any event object exists; the same
    figures come from the FunctionEvents built one by one (``function_events.key_averages``)."""
    x = rgrad.randn(32, 32, requires_grad=True)
    with profiler.profile(record_shapes=True, profile_memory=True, with_flops=True) as prof:
        with profiler.record_function("block"):
            y = (x @ x).tanh() * 2
        y.sum().backward()
    for by_shapes in (False, True):
        fast = prof.key_averages(group_by_input_shape=by_shapes)
        prof._function_events = None
        slow = prof.function_events.key_averages(by_shapes)
        prof._function_events = None
        assert [a.key for a in fast] == [a.key for a in slow]
        for a, b in zip(fast, slow):
            assert (a.count, a.cpu_memory_usage, a.self_cpu_memory_usage, a.flops) == (
                b.count,
                b.cpu_memory_usage,
                b.self_cpu_memory_usage,
                b.flops,
            ), a.key
            assert a.cpu_time_total == pytest.approx(b.cpu_time_total, rel=1e-9, abs=1e-9), a.key
            assert a.self_cpu_time_total == pytest.approx(b.self_cpu_time_total, rel=1e-9, abs=1e-6), a.key
            assert str(a.input_shapes) == str(b.input_shapes), a.key
        assert fast.table() == slow.table()
