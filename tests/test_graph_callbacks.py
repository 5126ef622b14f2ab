"""torch.autograd.graph's node_creation_hook and queue_callback, and
torch.autograd.set_multithreading_enabled, against torch 2.15.

Each program runs on rgrad and on torch (``both``): the nodes a hook saw (by name, in
order), what callbacks saw, errors. Every test also checks rgrad's result on its own.
Threads: hooks and callbacks from 8 threads running backward at once, and with
multithreading on and off.
"""

from __future__ import annotations

import gc
import os
import threading

import pytest
from _differential import both, caught

import rgrad

TRIALS = int(os.environ.get("RGRAD_STRESS_TRIALS", "10"))


def _names(log):
    return [type(n).__name__ for n in log]


# ---- node_creation_hook ------------------------------------------------------------------


def test_node_creation_hook_sees_accumulate_grad_then_each_node_in_order():
    def program(T):
        nch = T.autograd.graph.node_creation_hook
        a = T.ones(5, requires_grad=True)
        seen = []
        with nch(seen.append):
            b = a * 2
            c = b.sum()
            d = a * 3  # the leaf's AccumulateGrad is alive: not shown again
        first = _names(seen)
        seen.clear()
        del b, c, d
        gc.collect()
        with nch(seen.append):
            e = (a * 2).exp()  # the graph was freed: shown again
        second = _names(seen)
        return first, second, e.grad_fn.name()

    first, second, _ = both(program)
    assert first == ["AccumulateGrad", "MulBackward0", "SumBackward0", "MulBackward0"]
    assert second == ["AccumulateGrad", "MulBackward0", "ExpBackward0"]


def test_node_creation_hook_objects_are_the_graphs_nodes():
    def program(T):
        a = T.ones(3, requires_grad=True)
        seen = []
        with T.autograd.graph.node_creation_hook(seen.append):
            y = a * a
        acc, mul = seen
        return (
            mul is y.grad_fn,
            acc is y.grad_fn.next_functions[0][0],
            acc.variable is a,
            [(type(f).__name__, i) for f, i in mul.next_functions],
        )

    assert both(program) == (True, True, True, [("AccumulateGrad", 0), ("AccumulateGrad", 0)])


def test_nested_node_creation_hooks_run_outermost_first():
    def program(T):
        a = T.ones(2, requires_grad=True)
        out = []
        nch = T.autograd.graph.node_creation_hook
        with nch(lambda n: out.append(("o", n.name()))):
            with nch(lambda n: out.append(("i", n.name()))):
                a.sin()
            a.cos()
        a.tan()  # no hook any more
        return out

    assert both(program) == [
        ("o", "torch::autograd::AccumulateGrad"),
        ("i", "torch::autograd::AccumulateGrad"),
        ("o", "SinBackward0"),
        ("i", "SinBackward0"),
        # (sin's graph was dropped, and with it the AccumulateGrad)
        ("o", "torch::autograd::AccumulateGrad"),
        ("o", "CosBackward0"),
    ]


def test_node_creation_hook_may_not_make_nodes_and_its_errors_propagate():
    def program(T):
        a = T.ones(2, requires_grad=True)
        (a * 1).sum()  # keep no graph: nothing
        nch = T.autograd.graph.node_creation_hook

        def makes(n):
            a * 2

        def raises(n):
            raise ValueError("hook failed")

        out = []
        for hook in (makes, raises):
            try:
                with nch(hook):
                    a.cos()
            except Exception as e:  # noqa: BLE001 - the error is the observation
                out.append(e)
        # the stack was popped: the hooks above would raise if they ran
        out.append((a * 2).sum())
        return out

    res = both(program)
    assert res[0][:2] == ("E", "RuntimeError")
    assert "Creating a new autograd node from inside a node creation hook is not supported" in res[0][2]
    assert res[1] == ("E", "ValueError", "hook failed")
    assert res[2][3] == 4.0


def test_node_creation_hook_skips_no_grad_and_detach_and_sees_views_and_inplace():
    def program(T):
        a = T.ones(4, requires_grad=True)
        keep = (a * 1).grad_fn.next_functions[0][0]  # a's AccumulateGrad, held: not shown again
        seen = []
        with T.autograd.graph.node_creation_hook(lambda n: seen.append(n.name())):
            with T.no_grad():
                a * 2
            T.ones(3) * 2
            a.detach()
            g = a.clone()
            g.mul_(2)
            a.view(2, 2)
            a.double()
            T.nn.functional.mse_loss(a, T.zeros(4))
            a.softmax(0)
        return seen, keep.name()

    seen, _ = both(program)
    assert seen == [
        "CloneBackward0",
        "MulBackward0",
        "ViewBackward0",
        "ToCopyBackward0",
        "MseLossBackward0",
        "SoftmaxBackward0",
    ]


def test_node_creation_hook_sees_custom_functions_whole():
    def program(T):
        class Twice(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 2

        a = T.ones(3, requires_grad=True)
        seen = []

        def hook(n):
            saved = len(n.saved_tensors) if hasattr(n, "saved_tensors") else None
            seen.append((n.name(), [type(f).__name__ for f, _ in n.next_functions], saved))

        with T.autograd.graph.node_creation_hook(hook):
            y = Twice.apply(a)
        y.sum().backward()
        return seen, a.grad

    seen, grad = both(program)
    assert seen == [("torch::autograd::AccumulateGrad", [], None), ("TwiceBackward", ["AccumulateGrad"], 1)]
    assert grad[3] == [2.0, 2.0, 2.0]


def test_node_creation_hook_registers_backward_hooks_and_metadata():
    def program(T):
        a = T.ones(3, requires_grad=True)
        ran = []

        def hook(n):
            n.metadata["made"] = n.name()
            n.register_prehook(lambda go: ran.append(n.metadata["made"]))

        with T.autograd.graph.node_creation_hook(hook):
            y = (a.exp() * 2).sum()
        y.backward()
        return ran, y.grad_fn.metadata

    ran, meta = both(program)
    assert ran == ["SumBackward0", "MulBackward0", "ExpBackward0", "torch::autograd::AccumulateGrad"]
    assert meta == {"made": "SumBackward0"}


def test_node_creation_hook_follows_backward_onto_the_engine_threads():
    def program(T):
        a = T.ones(3, requires_grad=True)
        b = T.ones(3, requires_grad=True)
        z = ((a * a).sum() + (b * b).sum()) * 1
        # (the leaves' AccumulateGrad objects held: torch's graph holds its nodes; rgrad
        # makes the objects when asked)
        accs = [T.autograd.graph.get_gradient_edge(v).node for v in (a, b)]
        seen = []
        with T.autograd.graph.node_creation_hook(lambda n: seen.append(n.name())):
            T.autograd.grad(z, (a, b), create_graph=True)
        # another Python thread does not have the hook
        other = []
        with T.autograd.graph.node_creation_hook(lambda n: other.append(n.name())):
            t = threading.Thread(target=lambda: a * 5)
            t.start()
            t.join()
        return sorted(seen), other, len(accs)

    seen, other, _ = both(program)
    assert seen == ["AddBackward0", "AddBackward0", "MulBackward0", "MulBackward0", "MulBackward0", "MulBackward0"]
    assert other == []


def test_node_creation_hook_sees_nodes_after_saved_tensor_hooks_packed_them():
    def program(T):
        a = T.ones(2, requires_grad=True)
        log = []
        keep = (a * 1).grad_fn.next_functions[0][0]

        def pack(x):
            log.append("pack")
            return x

        def unpack(x):
            return x

        with T.autograd.graph.saved_tensors_hooks(pack, unpack):
            with T.autograd.graph.node_creation_hook(lambda n: log.append(n.name())):
                a.exp()
        return log, keep.name()

    log, _ = both(program)
    assert log == ["pack", "ExpBackward0"]


def test_pop_without_push_is_an_error():
    with pytest.raises(RuntimeError):
        rgrad._C._pop_node_creation_hook()


@pytest.mark.parametrize("trial", range(TRIALS))
def test_node_creation_hooks_from_eight_threads(trial):
    counts = {}
    errors = []

    def work(i):
        try:
            x = rgrad.full((4,), float(i), requires_grad=True)
            seen = []
            with rgrad.autograd.graph.node_creation_hook(lambda n: seen.append(n.name())):
                for _ in range(20):
                    y = (x * x).exp().sum()
                    y.backward()
            counts[i] = seen
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(8):
        names = counts[i]
        assert names.count("MulBackward0") == 20
        assert names.count("ExpBackward0") == 20
        assert names.count("SumBackward0") == 20
        # each iteration's graph is freed by the next assignment, so the leaf's
        # AccumulateGrad is shown at least once (again whenever the last graph died)
        assert 1 <= names.count("torch::autograd::AccumulateGrad") <= 20


# ---- queue_callback -----------------------------------------------------------------------


def _callback_program(create_graph: bool, use_grad: bool):
    def program(T):
        queue = T.autograd.graph.queue_callback
        t = T.rand(3, requires_grad=True)
        log = []

        def hook(g):
            log.append(("hook", T.is_grad_enabled()))

            def cb():
                log.append(("cb", T.is_grad_enabled(), t.grad is not None))
                queue(lambda: log.append("nested"))

            queue(cb)
            queue(cb)

        t.register_hook(hook)
        if use_grad:
            T.autograd.grad((t * 2).sum(), t, create_graph=create_graph)
        else:
            (t * 2).sum().backward(create_graph=create_graph)
            t.grad = None  # (a create_graph backward's cycle)
        return log

    return program


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("use_grad", [False, True])
def test_queue_callback_runs_after_the_pass_in_order(create_graph, use_grad):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log = both(_callback_program(create_graph, use_grad))
    cg = create_graph
    leaf_done = not use_grad
    assert log == [("hook", cg), ("cb", cg, leaf_done), ("cb", cg, leaf_done), "nested", "nested"]


def test_queue_callback_outside_backward_is_an_error():
    def program(T):
        return [
            caught(lambda: T.autograd.graph.queue_callback(lambda: None)),
            caught(lambda: T.autograd.Variable._execution_engine.queue_callback(lambda: None)),
        ]

    msg = ("E", "RuntimeError", "Final callbacks can only be installed during backward pass.")
    assert both(program) == [msg, msg]


def test_queue_callback_not_run_when_backward_fails_and_its_errors_propagate():
    def program(T):
        queue = T.autograd.graph.queue_callback
        t = T.ones(3, requires_grad=True)
        log = []

        def fails(g):
            queue(lambda: log.append("should not run"))
            raise ValueError("boom")

        def bad_callbacks(g):
            queue(lambda: 1 / 0)
            queue(lambda: log.append("after the raising one"))

        def not_callable(g):
            queue(5)

        out = []
        for hook in (fails, bad_callbacks, not_callable):
            h = t.register_hook(hook)
            out.append(caught(lambda: (t * 2).sum().backward()))
            h.remove()
        out.append(log)
        return out

    res = both(program)
    assert res[0] == ("E", "ValueError", "boom")
    assert res[1][:2] == ("E", "ZeroDivisionError")
    assert res[2] == ("E", "TypeError", "'int' object is not callable")
    assert res[3] == []


def test_queue_callback_goes_to_the_innermost_backward():
    def program(T):
        log = []
        queue = T.autograd.graph.queue_callback

        class F(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                with T.enable_grad():
                    y = T.ones(2, requires_grad=True)
                    y.register_hook(lambda gg: queue(lambda: log.append("inner cb")))
                    (y * 2).sum().backward()
                    log.append("inner done")
                queue(lambda: log.append("outer cb"))
                return g

        t = T.ones(3, requires_grad=True)
        F.apply(t).sum().backward()
        return log

    assert both(program) == ["inner cb", "inner done", "outer cb"]


@pytest.mark.parametrize("trial", range(TRIALS))
def test_queue_callback_from_eight_threads_and_branch_workers(trial):
    # callbacks queued from hooks that run on the pool's workers (a wide graph) go to the
    # pass of the thread that started it, each exactly once
    errors = []
    results = {}

    def work(i):
        try:
            leaves = [rgrad.full((8,), float(i + k), requires_grad=True) for k in range(6)]
            got = []
            for leaf in leaves:
                leaf.register_hook(lambda g, leaf=leaf: rgrad.autograd.graph.queue_callback(
                    lambda: got.append((threading.get_ident(), leaf.grad is not None))))
            for _ in range(10):
                sum((v * v).sum() for v in leaves).backward()
            results[i] = got
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i, t in enumerate(threads):
        got = results[i]
        assert len(got) == 60
        assert all(ident == t.ident and done for ident, done in got)


# ---- set_multithreading_enabled -------------------------------------------------------------


def test_set_multithreading_enabled_is_thread_local_and_restores():
    def program(T):
        A = T.autograd
        out = [A.is_multithreading_enabled()]
        with A.set_multithreading_enabled(False):
            out.append(A.is_multithreading_enabled())
            seen = []
            th = threading.Thread(target=lambda: seen.append(A.is_multithreading_enabled()))
            th.start()
            th.join()
            out.append(seen[0])
        out.append(A.is_multithreading_enabled())
        A.set_multithreading_enabled(False)  # a plain call takes effect
        out.append(A.is_multithreading_enabled())
        A.set_multithreading_enabled(True)
        out.append(A.is_multithreading_enabled())

        @A.set_multithreading_enabled(False)
        def f():
            return A.is_multithreading_enabled()

        # (as torch's: the decorator's instance turned it off when made, and each call
        # restores what was on when it was made)
        out.append((A.is_multithreading_enabled(), f(), A.is_multithreading_enabled()))
        A.set_multithreading_enabled(True)
        return out

    assert both(program) == [True, False, True, True, False, True, (False, False, False)]


def test_backward_without_multithreading_runs_every_node_on_the_calling_thread():
    x = rgrad.randn(64, 64, requires_grad=True)
    idents = set()
    me = threading.get_ident()

    def branch(k):
        y = (x * float(k)).tanh()
        y.register_hook(lambda g: idents.add(threading.get_ident()))
        return y.sum()

    for mode in (False, True):
        idents.clear()
        x.grad = None
        with rgrad.autograd.set_multithreading_enabled(mode):
            sum(branch(k) for k in range(16)).backward()
        if not mode:
            assert idents == {me}
        expected = sum((1 - (x.detach() * k).tanh() ** 2) * k for k in range(16))
        assert (x.grad - expected).abs().max().item() < 1e-4


@pytest.mark.parametrize("trial", range(TRIALS))
def test_backward_with_and_without_multithreading_gives_the_same_bits(trial):
    rgrad.manual_seed(trial)
    ws = [rgrad.randn(32, 32, dtype=rgrad.float64, requires_grad=True) for _ in range(4)]
    x = rgrad.randn(8, 32, dtype=rgrad.float64)

    def loss():
        h = [(x @ w).tanh() for w in ws]
        return sum((a * b).sum() for a in h for b in h)

    grads = []
    for mode in (True, False, True):
        with rgrad.autograd.set_multithreading_enabled(mode):
            grads.append(rgrad.autograd.grad(loss(), ws))
    for g in grads[1:]:
        for a, b in zip(grads[0], g):
            assert a.tolist() == b.tolist()


# ---- enforce_grad_layout_policy -------------------------------------------------------------


def test_enforce_grad_layout_policy_relaxed_steals_any_sole_gradient():
    def program(T):
        A = T.autograd
        out = [T._C._is_grad_layout_enforcement_enabled()]
        q = T.zeros(4, 2, 3, requires_grad=True)
        w = T.ones(3, 2, 4)
        (q.permute(2, 1, 0) * w).sum().backward()
        out.append(q.grad.stride())  # enforced: laid out as q
        q.grad = None
        with A.enforce_grad_layout_policy(False):
            out.append(T._C._is_grad_layout_enforcement_enabled())
            seen = []
            th = threading.Thread(target=lambda: seen.append(T._C._is_grad_layout_enforcement_enabled()))
            th.start()
            th.join()
            out.append(seen[0])  # thread-local
            (q.permute(2, 1, 0) * w).sum().backward()
            out.append(q.grad.stride())  # stolen as it came
            # a gradient the caller holds is not stealable: still cloned, into q's layout
            q.grad = None
            g = T.ones(3, 2, 4).permute(2, 1, 0)
            q.backward(g)
            out.append((q.grad.stride(), q.grad.data_ptr() == g.data_ptr()))
            # an expanded gradient is stolen too, and the next accumulation into it fails
            # (rgrad steals a view only when nothing holds its base either: here a fresh
            # product, not the implicit gradient of the root, which Python holds)
            r = T.zeros(4, 3, requires_grad=True)
            (r.sum() * 2).backward()
            out.append(r.grad.stride())
            out.append(caught(lambda: (r.sum() * 2).backward()))
            # a permuted parameter keeps the gradient's own (row-major) layout
            p = T.zeros(2, 3, 4).permute(2, 0, 1).requires_grad_()
            (p * 2).sum().backward()
            out.append(p.grad.stride())
        out.append(T._C._is_grad_layout_enforcement_enabled())
        return out

    res = both(program)
    assert res[0] is True and res[1] == (6, 3, 1) and res[2] is False and res[3] is True
    assert res[4] == (1, 4, 8)
    assert res[5] == ((6, 3, 1), False)
    assert res[6] == (0, 0)
    assert res[7][:2] == ("E", "RuntimeError")
    assert res[9] is True


def test_enforce_grad_layout_policy_applies_on_the_engine_threads():
    # the leaf's gradient arrives from two branches: the sum is made (and accumulated) by
    # whichever thread finishes the leaf, under the caller's policy
    q = rgrad.zeros(64, 32, requires_grad=True)
    w = rgrad.ones(32, 64)
    for _ in range(TRIALS):
        q.grad = None
        with rgrad.autograd.enforce_grad_layout_policy(False):
            branches = [(q.t() * (w * k)).tanh().sum() for k in range(1, 5)]
            sum(branches).backward()
        assert q.grad.shape == (64, 32)
        q.grad = None
        sum((q.t() * (w * k)).tanh().sum() for k in range(1, 5)).backward()
        assert q.grad.stride() == (32, 1)


def test_accumulating_into_an_expanded_grad_is_refused():
    # (rgrad wrote the sum into the one shared element before: silently wrong values)
    def program(T):
        x = T.zeros(4, 3, requires_grad=True)
        x.grad = T.zeros(1).expand(4, 3)
        err = caught(lambda: (x * 2).sum().backward())
        return err, x.grad

    err, grad = both(program)
    assert err[:2] == ("E", "RuntimeError") and "more than one element of the written-to tensor" in err[2]
    assert grad[3] == [[0.0] * 3] * 4
