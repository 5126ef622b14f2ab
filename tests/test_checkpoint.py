"""rgrad.utils.checkpoint against torch.utils.checkpoint: both implementations
(reentrant and not), checkpoint_sequential, the use_reentrant warning, the determinism
check and its errors, RNG state restored for the recomputation, early stop, nesting,
grad() and backward(inputs=) support, finite-difference checks of checkpointed gradients
in float64, the memory a checkpoint keeps (the graph keeps no intermediate result), and
backward of checkpointed graphs from 8 threads.

Each program runs on rgrad and on torch (``both``); every test also checks rgrad's
result on its own.
"""

from __future__ import annotations

import gc
import importlib
import os
import threading

import numpy as np
import pytest
from _differential import both, caught, recorded_warnings
from fdcheck import numerical_jacobian

import rgrad
from rgrad.autograd import gradcheck, gradgradcheck
from rgrad.utils import checkpoint as rgrad_checkpoint

TRIALS = int(os.environ.get("RGRAD_STRESS_TRIALS", "10"))
MODES = [True, False]


def ck(T):
    return importlib.import_module(T.__name__ + ".utils.checkpoint")


def _f(T):
    def f(x, y):
        h = x.sin() * y
        return (h.exp() * x).sum(0)

    return f


def _inputs(T):
    x = T.tensor([[0.1, 0.2], [0.3, 0.4]], dtype=T.float64, requires_grad=True)
    y = T.tensor([[0.5, 0.6], [0.7, 0.8]], dtype=T.float64, requires_grad=True)
    return x, y


@pytest.mark.parametrize("reentrant", MODES)
def test_values_and_gradients_equal_the_plain_computation(reentrant):
    def program(T):
        x, y = _inputs(T)
        out = ck(T).checkpoint(_f(T), x, y, use_reentrant=reentrant)
        out.sum().backward()
        got = (out, x.grad, y.grad)
        x2, y2 = _inputs(T)
        plain = _f(T)(x2, y2)
        plain.sum().backward()
        return got, (plain, x2.grad, y2.grad)

    got, plain = both(program)
    assert got == plain


@pytest.mark.parametrize("reentrant", MODES)
def test_finite_difference_check_of_checkpointed_gradients(reentrant):
    x, y = _inputs(rgrad)

    def fn(a, b):
        return rgrad_checkpoint.checkpoint(_f(rgrad), a, b, use_reentrant=reentrant)

    if not reentrant:
        assert gradcheck(fn, (x, y))
        # the recomputed graph is differentiable again (reentrant's backward is not)
        assert gradgradcheck(fn, (x, y))
        return
    # a reentrant checkpoint refuses grad() (gradcheck's tool): its Jacobian row by row
    # with backward(), against central differences
    numerical = numerical_jacobian(fn, [x.detach().numpy(), y.detach().numpy()])
    n_out = fn(x, y).numel()
    rows = []
    for i in range(n_out):
        a = x.detach().requires_grad_()
        b = y.detach().requires_grad_()
        one_hot = rgrad.zeros(n_out, dtype=rgrad.float64)
        one_hot[i] = 1.0
        fn(a, b).backward(one_hot)
        rows.append(np.concatenate([a.grad.numpy().ravel(), b.grad.numpy().ravel()]))
    analytical = np.stack(rows)
    np.testing.assert_allclose(analytical, np.concatenate(numerical, axis=1), rtol=1e-6, atol=1e-8)


def test_use_reentrant_warning():
    def program(T):
        x, y = _inputs(T)
        with recorded_warnings() as w:
            ck(T).checkpoint(_f(T), x, y)
            ck(T).checkpoint_sequential([lambda t: t * 2, lambda t: t.sin()], 2, x)
        return [m for m in w if "use_reentrant" in str(m.message)]

    w = both(program)
    assert len(w) == 2
    assert w[0][1] == "UserWarning"
    # (messages are compared with torch's `torch.` prefixes read as `rgrad.`)
    assert w[0][2].startswith("rgrad.utils.checkpoint: the use_reentrant parameter should be passed explicitly.")


def test_argument_errors():
    def program(T):
        c = ck(T)
        x, y = _inputs(T)
        f = _f(T)
        return (
            caught(lambda: c.checkpoint(lambda a, b=1: a * b, x, b=2, use_reentrant=True)),
            caught(lambda: c.checkpoint(f, x, y, use_reentrant=True, context_fn=lambda: (None, None))),
            caught(lambda: c.checkpoint(f, x, y, use_reentrant=True, debug=True)),
            caught(lambda: c.checkpoint(f, x, y, use_reentrant=False, determinism_check="full")),
            caught(lambda: c.checkpoint(f, x, y, use_reentrant=False, debug=True, context_fn=c.noop_context_fn)),
            caught(lambda: c.checkpoint_sequential([f], 1, x, use_reentrant=False, foo=1)),
            caught(lambda: c.checkpoint(use_reentrant=False, foo=1)),
        )

    r = both(program)
    assert r[0] == ("E", "ValueError", "Unexpected keyword arguments: b")
    assert r[3][2].startswith("determinism_check should be one of ['default', 'none'], but got full")


def test_keyword_arguments_and_decorator_form():
    def program(T):
        c = ck(T)
        x, y = _inputs(T)

        def f(a, *, scale):
            return (a.sin() * scale).sum()

        out = c.checkpoint(f, x, scale=y, use_reentrant=False)
        out.backward()

        @c.checkpoint(use_reentrant=False)
        def g(a):
            return (a * a).exp().sum()

        out2 = g(y)
        out2.backward()
        return out, x.grad, y.grad, g.__name__

    r = both(program)
    assert r[3] == "g"


def test_determinism_check_errors():
    def program(T):
        c = ck(T)
        state = {"n": 2}

        def f(x):
            return x[: state["n"]].exp().sum()

        def g(x):
            h = x.exp()
            if state["n"] == 2:
                h = h.sin()
            return h.sum()

        x = T.tensor([1.0, 2.0, 3.0], dtype=T.float64, requires_grad=True)
        out = c.checkpoint(f, x, use_reentrant=False)
        out2 = c.checkpoint(g, x, use_reentrant=False)
        out3 = c.checkpoint(f, x, use_reentrant=False, determinism_check="none")
        state["n"] = 3
        return (
            caught(lambda: out.backward()),
            caught(lambda: out2.backward()),
            caught(lambda: out3.backward()),
        )

    meta, count, unchecked = both(program)
    assert meta[1] == "CheckpointError"
    assert "have different metadata than during the forward pass.\ntensor at position 0:\n" in meta[2]
    assert count[2].startswith(
        "rgrad.utils.checkpoint: A different number of tensors was saved during the original forward and "
        "recomputation.\nNumber of tensors saved during forward: 2\nNumber of tensors saved during recomputation: 1."
    )
    # unchecked, the mismatch surfaces later, in the formula that reads the recomputed tensor
    assert unchecked == (
        "E",
        "RuntimeError",
        "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0",
    )


def test_rng_state_is_restored_for_the_recomputation():
    def program(T):
        c = ck(T)

        def noisy(x):
            return (x * T.rand_like(x)).sin().sum()

        out = []
        for reentrant in MODES:
            for preserve in (True, False):
                T.manual_seed(0)
                x = T.tensor([0.5, 1.0, 1.5], dtype=T.float64, requires_grad=True)
                y = c.checkpoint(noisy, x, use_reentrant=reentrant, preserve_rng_state=preserve)
                T.rand(1)  # moves the generator on between forward and backward
                y.backward()
                out.append(x.grad)
        T.manual_seed(0)
        x = T.tensor([0.5, 1.0, 1.5], dtype=T.float64, requires_grad=True)
        noisy(x).backward()
        out.append(x.grad)
        return out

    r = both(program)
    assert r[0] == r[4] and r[2] == r[4]  # preserved: the plain gradient
    assert r[1] != r[4]  # not preserved: other random numbers in the recomputation


def test_reentrant_refuses_grad_and_inputs_non_reentrant_supports_them():
    def program(T):
        c = ck(T)
        x, y = _inputs(T)
        out = c.checkpoint(_f(T), x, y, use_reentrant=True)
        err = caught(lambda: T.autograd.grad(out.sum(), x))
        x2, y2 = _inputs(T)
        out2 = c.checkpoint(_f(T), x2, y2, use_reentrant=False)
        g = T.autograd.grad(out2.sum(), (x2,), retain_graph=True)
        out2.sum().backward(inputs=[y2])
        return err, g, y2.grad, x2.grad

    err, *_ = both(program)
    assert err[2].startswith("When use_reentrant=True, rgrad.utils.checkpoint is incompatible with .grad()")


def test_early_stop_and_recompute_count():
    def program(T):
        c = ck(T)
        calls = []

        def f(x):
            calls.append("start")
            h = x.sin()
            calls.append("sin")
            h = h.exp()
            calls.append("exp")
            h = h * 2  # saves nothing that needs x's history
            calls.append("mul")
            return h.sum()

        log = []
        for early in (True, False):
            calls.clear()
            x = T.tensor([1.0, 2.0], requires_grad=True)
            with c.set_checkpoint_early_stop(early):
                y = c.checkpoint(f, x, use_reentrant=False)
            y.backward()
            log.append(list(calls))
        return log

    early, full = both(program)
    assert full == ["start", "sin", "exp", "mul"] * 2
    assert len(early) < len(full)


def test_nested_checkpoints_and_backward_inside():
    def program(T):
        c = ck(T)

        def inner(x):
            return x.sin().exp()

        def outer(x):
            h = c.checkpoint(inner, x, use_reentrant=False)
            return (c.checkpoint(inner, h * 2, use_reentrant=False) * h).sum()

        def with_grad(x):
            y = x.sin()
            z = y.cos()
            (gx,) = T.autograd.grad(z.sum(), x, create_graph=True)
            return (x.cos() * gx).sum()

        x = T.tensor([0.2, 0.9], dtype=T.float64, requires_grad=True)
        c.checkpoint(outer, x, use_reentrant=False).backward()
        g1 = x.grad.clone()
        x.grad = None
        c.checkpoint(with_grad, x, use_reentrant=False).backward()
        return g1, x.grad

    g1, g2 = both(program)
    assert g1[1] == "float64"


def test_unpacking_a_saved_tensor_twice_is_an_error():
    def program(T):
        c = ck(T)

        class Twice(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                ctx.saved_tensors
                ctx.saved_tensors
                return g * 2

        x = T.ones(2, requires_grad=True)
        y = c.checkpoint(lambda t: Twice.apply(t.sin()), x, use_reentrant=False)
        return caught(lambda: y.sum().backward())

    err = both(program)
    assert err[1] == "CheckpointError"
    assert "Unpack is being triggered for a tensor that was already unpacked once." in err[2]


def test_checkpoint_sequential():
    def program(T):
        c = ck(T)
        fns = [lambda t: t * 2, lambda t: t.sin(), lambda t: t.exp(), lambda t: t * t, lambda t: t.cos()]
        out = []
        for reentrant in MODES:
            for segments in (1, 2, 3):
                x = T.tensor([0.3, 0.6], dtype=T.float64, requires_grad=True)
                y = c.checkpoint_sequential(fns, segments, x, use_reentrant=reentrant)
                y.sum().backward()
                out.append((y, x.grad))
        return out

    r = both(program)
    assert all(e == r[0] for e in r)

    class Seq:  # an nn.Sequential-like container (rgrad has no nn.Module yet)
        def __init__(self, *mods):
            self.mods = mods

        def children(self):
            return iter(self.mods)

    fns = [lambda t: t * 2, lambda t: t.sin(), lambda t: t.exp()]
    x = rgrad.tensor([0.3, 0.6], dtype=rgrad.float64, requires_grad=True)
    y = rgrad_checkpoint.checkpoint_sequential(Seq(*fns), 2, x, use_reentrant=False, preserve_rng_state=False)
    y.sum().backward()
    x2 = rgrad.tensor([0.3, 0.6], dtype=rgrad.float64, requires_grad=True)
    fns[2](fns[1](fns[0](x2))).sum().backward()
    assert x.grad.tolist() == x2.grad.tolist()


def test_debug_mode_dumps_the_ops_of_forward_and_recomputation():
    state = {"n": 2}

    def f(x):
        h = x.exp()
        if state["n"] == 2:
            h = h.sin()
        return h.sum()

    x = rgrad.tensor([1.0, 2.0], requires_grad=True)
    out = rgrad_checkpoint.checkpoint(f, x, use_reentrant=False, debug=True)
    state["n"] = 3
    with pytest.raises(rgrad_checkpoint.CheckpointError) as e:
        out.backward()
    msg = str(e.value)
    assert msg.startswith(" An error happened while unpacking tensors; dumping logs of latest computation")
    forward, recompute = msg.split("Operations executed during the original forward:")[1].split(
        "Operations executed during recomputation:"
    )
    assert "aten::sin" in forward and "aten::sin" not in recompute.split("+---")[0]
    assert "test_checkpoint.py" in msg  # the stacks of the ops


@pytest.mark.parametrize("reentrant", MODES)
def test_a_checkpoint_keeps_no_intermediate_result(reentrant):
    # what the graph holds after forward, counted as live storage bytes by the profiler:
    # ten float64 intermediates of 1000 elements without checkpoint, the output alone with
    def f(x):
        for _ in range(10):
            x = x.sin() * 1.5
        return x

    def live_bytes(run):
        x = rgrad.ones(1000, dtype=rgrad.float64, requires_grad=True)
        with rgrad.autograd.profiler.profile(profile_memory=True) as prof:
            out = run(x)
        gc.collect()
        return sum(e.self_cpu_memory_usage for e in prof.function_events), out

    plain, _ = live_bytes(f)
    kept, out = live_bytes(lambda x: rgrad_checkpoint.checkpoint(f, x, use_reentrant=reentrant, preserve_rng_state=False))
    assert plain >= 10 * 8000
    assert kept == 8000  # the output
    out.sum().backward()


@pytest.mark.parametrize("reentrant", MODES)
def test_the_kept_rng_state_is_no_tensor(reentrant):
    """preserve_rng_state keeps the generator's 5056 bytes as bytes (torch keeps a uint8
    tensor of 5 KB), not get_rng_state()'s int64 tensor (40 KB of storage per checkpoint),
    and the recomputation still draws what the forward drew."""
    def f(x):
        return x * rgrad.rand(1000, dtype=rgrad.float64)

    x = rgrad.ones(1000, dtype=rgrad.float64, requires_grad=True)
    rgrad.manual_seed(3)
    with rgrad.autograd.profiler.profile(profile_memory=True) as prof:
        out = rgrad_checkpoint.checkpoint(f, x, use_reentrant=reentrant)
    gc.collect()
    assert sum(e.self_cpu_memory_usage for e in prof.function_events) == 8000  # the output alone
    draws = (out / x).detach()
    out.sum().backward()
    assert (x.grad == draws).all()
    with rgrad.random.fork_rng():
        state = rgrad.get_rng_state()
        rgrad.rand(3)
    assert (rgrad.get_rng_state() == state).all()  # fork_rng restores what it kept as bytes


@pytest.mark.parametrize("trial", range(TRIALS))
def test_checkpointed_backward_from_eight_threads(trial):
    barrier = threading.Barrier(8)
    errors = []
    results = {}

    def body(i):
        try:
            barrier.wait()
            for k in range(10):
                x = rgrad.full((3,), float(i + 1), dtype=rgrad.float64, requires_grad=True)
                reentrant = bool(k % 2)
                y = rgrad_checkpoint.checkpoint(
                    lambda t: (t * t * 3 + t).sum(), x, use_reentrant=reentrant, preserve_rng_state=False
                )
                y.backward()
                results[(i, k)] = x.grad.tolist()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    if errors:
        raise errors[0]
    for (i, _), g in results.items():
        assert g == [6.0 * (i + 1) + 1] * 3


def test_graph_exec_group_and_an_exception_in_forward():
    def program(T):
        c = ck(T)
        calls = []

        def f(x):
            calls.append(1)
            return x.sin().sum(), x.cos().sum()

        x = T.tensor([0.1, 0.2], requires_grad=True)
        a, b = c.checkpoint(f, x, use_reentrant=False)
        with c.GraphExecGroup() as group:
            a.backward(retain_graph=True)
            b.backward(retain_graph=True)
            nested = caught(lambda: c.GraphExecGroup().__enter__())
        outside = c.GraphExecGroup._get_current_group()

        def bad(x):
            raise ValueError("inside")

        C = T._C if T is rgrad else T._C._autograd
        return (
            len(calls),
            x.grad,
            str(nested).split(" <")[0],
            group is not None and outside is None,
            caught(lambda: c.checkpoint(bad, x, use_reentrant=False)),
            caught(lambda: c.checkpoint(bad, x, use_reentrant=True)),
            C._top_saved_tensors_default_hooks(False),
        )

    r = both(program)
    assert r[0] == 2  # the forward, and one recomputation for both backward calls
    assert r[2] == "GraphExecGroup contexts cannot be nested. Already inside group"
    assert r[4] == ("E", "ValueError", "inside") and r[6] is None
