"""``autograd.grad(..., is_grads_batched=True)``: one batched backward pass over a batch of
grad_outputs. Each graph (float64: views, broadcasting, matmul, reductions, indexing,
custom Functions, create_graph) against the loop it stands for (``grad`` once per sample
with ``retain_graph=True``, stacked) and against torch's values and shapes; the nodes
with a batching rule warn nothing (pytest turns warnings into errors), those without one
run once per sample with vmap's performance warning; torch's errors; the graph freed
unless retained; double backward through a batched pass; vmap(vjp) and gradcheck's
check_batched_grad over it; jacobian(vectorize=True) running the function once."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rgrad
import rgrad.autograd.functional as AF
from rgrad.func import _batched_tensor

B = 3


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _data(lib, shape, seed):
    """Deterministic float64 values in [-1, 1), the same in both libraries."""
    rs = np.random.RandomState(seed)
    return lib.tensor(rs.uniform(-1.0, 1.0, size=shape).tolist(), dtype=lib.float64)


class _Square:
    """A custom Function (x * x, backward 2 x g), built for either library."""

    @staticmethod
    def make(lib):
        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a)
                return a * a

            @staticmethod
            def backward(ctx, g):
                (a,) = ctx.saved_tensors
                return 2 * a * g

        return Square


def _inplace(lib, x, y):
    """In-place writes into views of a non-leaf (CopySlices) and a copy_ (CopyBackwards)."""
    h = x * 1.5
    h[1].mul_(y)
    h[:, 2:].add_(h[:, :2].exp())
    h.t()[0].copy_(y[:3] * 2)
    z = lib.zeros(3, 4, dtype=lib.float64)
    z.copy_(h.sin())
    return z * x


# name -> (input shapes, f(lib, *inputs) -> outputs (a tuple), the backward nodes run once per sample)
CASES = {
    "unary_chain": ([(4,)], lambda lib, x: ((x.exp() * x.sin()).tanh().sigmoid(),), ()),
    "unary_ops": ([(2, 3)], lambda lib, x: ((x.abs() + x.relu() + x.cos() + (x * 0.5).atan() + x.exp().log()),), ()),
    "broadcasting": ([(3, 1), (4,)], lambda lib, x, y: (x * y - y / (x.exp() + 1) + 2 * x,), ()),
    "pow_div": ([(2, 3), (3,)], lambda lib, x, y: (x.exp() ** y - 1 / (y.exp() + x),), ()),
    "mm": ([(2, 3), (3, 4)], lambda lib, x, w: (x @ w,), ()),
    "linear_2d": ([(5, 3), (4, 3), (4,)], lambda lib, x, w, b: (lib.nn.functional.linear(x, w, b).tanh(),), ()),
    "linear_1d": ([(3,), (4, 3), (4,)], lambda lib, x, w, b: (lib.nn.functional.linear(x, w, b),), ()),
    "matvec_chain": ([(3,), (3, 3)], lambda lib, x, w: ((w @ (w @ x).tanh()),), ()),
    "reductions": ([(3, 4)], lambda lib, x: (x.sum(), x.sum(0), x.mean(1, keepdim=True), x.sum((0, 1)),
                                              x.mean()), ()),
    "views": ([(2, 3)], lambda lib, x: (x.t() * 2, x.permute(1, 0).reshape(-1), x.view(3, 2), x.unsqueeze(1),
                                         x.transpose(0, 1), x.unsqueeze(0).expand(4, 2, 3),
                                         x.reshape(1, 2, 3).squeeze(0)), ()),
    "indexing": ([(4, 3)], lambda lib, x: (x[1], x[:, 1:3], x[0, ::2], x[1:3, 0], x.narrow(1, 1, 2)), ()),
    "advanced_indexing": ([(4, 3)], lambda lib, x: (x[[0, 2, 2]] * 2, x[:, [1, 1]], x[[0, 1], [2, 0]]), ()),
    "index_not_adjacent": ([(3, 2, 4)], lambda lib, x: (x[[0, 1], :, [2, 3]],), ("IndexBackward0",)),
    "clone_cast": ([(3,)], lambda lib, x: (x.clone() * x.to(lib.float32).to(lib.float64),), ()),
    "softmax": ([(2, 3)], lambda lib, x: (x.softmax(-1), x.log_softmax(0) * x), ()),
    "where_clamp": ([(2, 3), (3,)], lambda lib, x, y: (lib.where(x > 0, x * y, y.exp()), x.clamp(-0.5, 0.5),
                                                       x.clamp(min=y), x.relu()), ()),
    "masked_fill": ([(2, 3)], lambda lib, x: (x.masked_fill(x > 0.2, 1.0), x.exp().masked_fill(x < 0, 0.5)), ()),
    "binary_fns": ([(2, 3), (3,)], lambda lib, x, y: (lib.atan2(x, y), lib.hypot(x, y.exp()), lib.maximum(x, y),
                                                      lib.logaddexp(x, y)), ()),
    "cat_stack": ([(2, 3), (1, 3)], lambda lib, x, y: (lib.cat([x, y, x * 2], 0), lib.stack([x[0], y[0]], 1)), ()),
    "bmm": ([(2, 2, 3), (2, 3, 2)], lambda lib, x, y: (x.bmm(y), x @ y), ()),
    "prod": ([(2, 3)], lambda lib, x: (x.prod(1),), ("ProdBackward1",)),
    "dot": ([(3,), (3,)], lambda lib, x, y: (lib.dot(x, y.exp()),), ()),
    "reduce_formulas": ([(2, 3)], lambda lib, x: (x.logsumexp(1), x.norm(), x.norm(dim=0), x.amax(1), x.var(0),
                                                  x.std(), x.max(1).values, x.min(0, keepdim=True).values), ()),
    "gather_index_select": ([(3, 4)], lambda lib, x: (x.gather(1, lib.tensor([[0, 0], [1, 3], [2, 2]])),
                                                      x.index_select(0, lib.tensor([2, 0, 2])),
                                                      x.index_select(1, lib.tensor([1]))), ()),
    "repeat": ([(2, 3)], lambda lib, x: (x.repeat(2, 1, 2),), ()),
    "mse_loss": ([(2, 3), (2, 3)], lambda lib, x, y: (lib.nn.functional.mse_loss(x, y),
                                                      lib.nn.functional.mse_loss(x * 2, y, reduction="sum"),
                                                      lib.nn.functional.mse_loss(x, y.exp(), reduction="none")), ()),
    "inplace_on_views": ([(3, 4), (4,)], lambda lib, x, y: (_inplace(lib, x, y),), ()),
    "cross_entropy": ([(4, 3)], lambda lib, x: (lib.nn.functional.cross_entropy(x, lib.tensor([0, 2, 1, 2])),
                                                lib.nn.functional.cross_entropy(x * 2, lib.tensor([1, 1, 0, 2]),
                                                                                reduction="none"),
                                                lib.nn.functional.cross_entropy(x.exp(), lib.tensor([0, 1, 1, 2]),
                                                                                reduction="sum")), ()),
    "custom_function": ([(3,)], lambda lib, x: (_Square.make(lib).apply(x.exp()) + x,), ("SquareBackward",)),
    "two_outputs": ([(3,), (3,)], lambda lib, x, y: (x * y, (x + y).sum()), ()),
}


def _leaves(lib, shapes, name):
    return [_data(lib, s, seed=i + 7 * len(name)).requires_grad_() for i, s in enumerate(shapes)]


def _grad_outputs(lib, outs, name):
    return [_data(lib, (B, *o.shape), seed=100 + i + len(name)) for i, o in enumerate(outs)]


@pytest.mark.parametrize("name", list(CASES))
def test_batched_grad_matches_the_loop_and_torch(torch, name):
    shapes, f, fallbacks = CASES[name]
    for key in fallbacks:  # warned once per process: forget earlier warnings
        _batched_tensor._warned.discard(key)
    xs = _leaves(rgrad, shapes, name)
    outs = f(rgrad, *xs)
    gos = _grad_outputs(rgrad, outs, name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batched = rgrad.autograd.grad(outs, xs, gos, retain_graph=True, is_grads_batched=True, allow_unused=True)
    messages = [str(w.message) for w in caught]
    for key in fallbacks:
        assert any(f"batching rule for {key}." in m for m in messages), messages
    assert len(messages) == len(fallbacks), messages
    for k, x in enumerate(xs):
        loop = [rgrad.autograd.grad(outs, xs, [g[b] for g in gos], retain_graph=True, allow_unused=True)[k]
                for b in range(B)]
        if batched[k] is None:
            assert all(r is None for r in loop)
            continue
        expected = rgrad.stack([rgrad.zeros_like(x) if r is None else r for r in loop])
        assert tuple(batched[k].shape) == (B, *x.shape)
        assert np.allclose(batched[k].numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)
    # torch's values and shapes
    txs = _leaves(torch, shapes, name)
    touts = f(torch, *txs)
    tgos = _grad_outputs(torch, touts, name)
    theirs = torch.autograd.grad(touts, txs, tgos, is_grads_batched=True, allow_unused=True)
    for ours, t in zip(batched, theirs):
        assert (ours is None) == (t is None)
        if t is not None:
            assert tuple(ours.shape) == tuple(t.shape)
            assert ours.dtype == getattr(rgrad, str(t.dtype).split(".")[1])
            assert np.allclose(ours.numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_the_fallback_warns_once_per_node():
    _batched_tensor._warned.discard("ProdBackward0")
    x = _data(rgrad, (2, 3), 1).requires_grad_()
    y = x.exp().prod().expand(2, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            rgrad.autograd.grad(y, x, rgrad.ones(B, 2, 3, dtype=rgrad.float64), retain_graph=True,
                                is_grads_batched=True)
    assert [str(w.message) for w in caught] == [
        "There is a performance drop because we have not yet implemented the batching rule for ProdBackward0. "
        "Please file us an issue on GitHub so that we can prioritize its implementation."]
    assert caught[0].category is UserWarning


def test_each_pass_reports_its_own_fallbacks_across_threads():
    """The nodes a pass ran once per sample belong to that pass (not to a process-wide
    list another thread could take): two threads, one graph with a node without a
    batching rule (prod), one without."""
    import threading

    x = _data(rgrad, (2, 3), 2).requires_grad_()
    looping, batched = x.prod(1), x.exp().sum(1)
    g = rgrad.ones(4, 2, dtype=rgrad.float64)
    seen = {"loop": set(), "rule": set()}
    barrier = threading.Barrier(2)

    def run(key, out):
        barrier.wait()
        for _ in range(50):
            _, names = rgrad._C._run_backward_batched([out], [g], True, False, [x], False, 4)
            seen[key].add(tuple(names))

    threads = [threading.Thread(target=run, args=("loop", looping)), threading.Thread(target=run, args=("rule", batched))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"loop": {("ProdBackward1",)}, "rule": {()}}


@pytest.mark.parametrize("name", ["unary_chain", "unary_ops", "broadcasting", "pow_div", "linear_2d", "matvec_chain",
                                  "reductions", "views", "indexing", "advanced_indexing", "softmax", "where_clamp",
                                  "binary_fns", "cat_stack", "bmm", "inplace_on_views", "cross_entropy",
                                  "custom_function"])
def test_create_graph_gives_double_backward(torch, name):
    """create_graph=True: the batched gradients have history, and differentiating them
    again gives what the loop's gradients give."""
    shapes, f, _ = CASES[name]

    def run(lib, batched):
        xs = _leaves(lib, shapes, name)
        outs = f(lib, *xs)
        gos = _grad_outputs(lib, outs, name)
        if batched:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="There is a performance drop")  # (custom_function's)
                gs = lib.autograd.grad(outs, xs, gos, create_graph=True, is_grads_batched=True, allow_unused=True)
        else:
            per = [lib.autograd.grad(outs, xs, [g[b] for g in gos], create_graph=True, allow_unused=True)
                   for b in range(B)]
            gs = [None if per[0][k] is None else lib.stack([p[k] for p in per]) for k in range(len(xs))]
        flags = [None if g is None else g.requires_grad for g in gs]
        terms = [(g * g).sum() * (k + 1) for k, g in enumerate(gs) if g is not None and g.requires_grad]
        if not terms:
            return flags, [None] * len(xs)
        return flags, lib.autograd.grad(sum(terms), xs, allow_unused=True)

    (flags, ours), (loop_flags, loop) = run(rgrad, True), run(rgrad, False)
    their_flags, theirs = run(torch, True)
    assert flags == loop_flags == their_flags
    for a, b, t in zip(ours, loop, theirs):
        assert (a is None) == (t is None)
        if a is not None:
            assert np.allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)
            assert np.allclose(a.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------
# torch's errors and edge cases
# ---------------------------------------------------------------------------------------

def _outcome(lib, call):
    try:
        r = call(lib)
    except Exception as e:  # noqa: BLE001  (the error is the result)
        return (type(e).__name__, str(e).replace("torch.", "LIB.").replace("rgrad.", "LIB."))
    return ("ok", [None if t is None else (tuple(t.shape), t.requires_grad, np.round(np.asarray(
        t.detach().tolist()), 10).tolist()) for t in r])


def _x(lib):
    return lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)


def _ones(lib, *shape, dtype=None):
    return lib.ones(*shape, dtype=dtype or lib.float64)


EDGE_CASES = {
    "identity": lambda lib: (lambda x: lib.autograd.grad(x * 2, x, lib.eye(3, dtype=lib.float64),
                                                         is_grads_batched=True))(_x(lib)),
    "shape_mismatch": lambda lib: (lambda x: lib.autograd.grad(x * 2, x, _ones(lib, 2, 4),
                                                               is_grads_batched=True))(_x(lib)),
    "zero_dim_grad": lambda lib: (lambda x: lib.autograd.grad((x * 2).sum(), x, lib.tensor(1.0, dtype=lib.float64),
                                                              is_grads_batched=True))(_x(lib)),
    "implicit_scalar": lambda lib: (lambda x: lib.autograd.grad((x * x).sum(), x, None,
                                                                is_grads_batched=True))(_x(lib)),
    "implicit_one_element": lambda lib: (lambda x: lib.autograd.grad((x * x).sum().reshape(1), x, None,
                                                                     is_grads_batched=True))(_x(lib)),
    "implicit_not_scalar": lambda lib: (lambda x: lib.autograd.grad(x * x, x, None,
                                                                    is_grads_batched=True))(_x(lib)),
    "scalar_output": lambda lib: (lambda x: lib.autograd.grad((x * x).sum(), x, lib.arange(4.0, dtype=lib.float64),
                                                              is_grads_batched=True))(_x(lib)),
    "unused": lambda lib: (lambda x, z: lib.autograd.grad(x * 2, [x, z], _ones(lib, 2, 3),
                                                          is_grads_batched=True))(_x(lib), _x(lib)),
    "unused_allowed": lambda lib: (lambda x, z: lib.autograd.grad(x * 2, [x, z], _ones(lib, 2, 3),
                                                                  is_grads_batched=True,
                                                                  allow_unused=True))(_x(lib), _x(lib)),
    "materialize_grads": lambda lib: (lambda x, z: lib.autograd.grad(x * 2, [x, z], _ones(lib, 2, 3),
                                                                     is_grads_batched=True,
                                                                     materialize_grads=True))(_x(lib), _x(lib)),
    "batch_sizes_differ": lambda lib: (lambda x: lib.autograd.grad([x * 2, x * 3], x, [_ones(lib, 2, 3),
                                                                                       _ones(lib, 4, 3)],
                                                                   is_grads_batched=True))(_x(lib)),
    "one_implicit_of_two": lambda lib: (lambda x: lib.autograd.grad([x * 2, (x * x).sum()], x,
                                                                    [_ones(lib, 2, 3), None],
                                                                    is_grads_batched=True))(_x(lib)),
    "empty_batch": lambda lib: (lambda x: lib.autograd.grad(x * 2, x, _ones(lib, 0, 3),
                                                            is_grads_batched=True))(_x(lib)),
    "float32_grads": lambda lib: (lambda x: lib.autograd.grad(x.exp(), x, _ones(lib, 2, 3, dtype=lib.float32),
                                                              is_grads_batched=True))(_x(lib)),
    "not_requiring_grad": lambda lib: lib.autograd.grad(lib.ones(3), _x(lib), _ones(lib, 2, 3),
                                                        is_grads_batched=True),
    "leaf_output": lambda lib: (lambda x: lib.autograd.grad(x, x, _ones(lib, 2, 3) * 2,
                                                            is_grads_batched=True))(_x(lib)),
    "batch_of_one": lambda lib: (lambda x: lib.autograd.grad(x.exp(), x, _ones(lib, 1, 3),
                                                             is_grads_batched=True))(_x(lib)),
    "not_a_tensor": lambda lib: (lambda x: lib.autograd.grad(x * 2, x, [1.0], is_grads_batched=True))(_x(lib)),
    "gradient_edge": lambda lib: (lambda x: (lambda y: lib.autograd.grad(
        lib.autograd.graph.get_gradient_edge(y), x, _ones(lib, 5, 3), is_grads_batched=True))(x * 2))(_x(lib)),
    "gradient_edge_bad_shape": lambda lib: (lambda x: (lambda y: lib.autograd.grad(
        lib.autograd.graph.get_gradient_edge(y), x, _ones(lib, 5, 4), is_grads_batched=True))(x * 2))(_x(lib)),
    "create_graph": lambda lib: (lambda x: lib.autograd.grad(x * x, x, _ones(lib, 2, 3), create_graph=True,
                                                             is_grads_batched=True))(_x(lib)),
}


@pytest.mark.parametrize("name", list(EDGE_CASES))
def test_edge_cases_match_torch(torch, name):
    assert _outcome(rgrad, EDGE_CASES[name]) == _outcome(torch, EDGE_CASES[name])


@pytest.mark.parametrize("op", ["mul", "exp"])
def test_the_graph_is_freed_unless_retained(torch, op):
    def run(lib, retain):
        x = _x(lib)
        y = x * x if op == "mul" else x.exp()
        first = lib.autograd.grad(y, x, _ones(lib, 2, 3), retain_graph=retain, is_grads_batched=True)
        return first, _outcome(lib, lambda lib: lib.autograd.grad(y, x, _ones(lib, 2, 3), is_grads_batched=True))

    for retain in (False, True):
        ours, theirs = run(rgrad, retain), run(torch, retain)
        assert ours[1] == theirs[1]
        assert np.allclose(ours[0][0].numpy(), theirs[0][0].detach().numpy())


# ---------------------------------------------------------------------------------------
# What uses it: vmap(vjp), gradcheck's check_batched_grad, jacobian(vectorize=True)
# ---------------------------------------------------------------------------------------

def test_vmap_of_a_vjp_is_one_batched_pass(monkeypatch):
    """vmap over the grad_outputs of a vjp (plain inputs and outputs) runs one batched
    backward pass, not one pass per sample."""
    x = _data(rgrad, (4,), 3).requires_grad_()
    y = (x.exp() * x).tanh()
    calls = []
    real, real_batched = rgrad._C._run_backward, rgrad._C._run_backward_batched

    def counting(*args):
        calls.append(None)
        return real(*args)

    def counting_batched(*args):
        calls.append(args[-1])
        return real_batched(*args)

    monkeypatch.setattr(rgrad._C, "_run_backward", counting)
    monkeypatch.setattr(rgrad._C, "_run_backward_batched", counting_batched)
    vs = _data(rgrad, (5, 4), 4)
    got = rgrad.func.vmap(lambda v: rgrad.autograd.grad(y, x, v, retain_graph=True)[0])(vs)
    assert calls == [5]
    calls.clear()
    expected = rgrad.stack([rgrad.autograd.grad(y, x, vs[b], retain_graph=True)[0] for b in range(5)])
    assert calls == [None] * 5
    assert np.allclose(got.numpy(), expected.numpy(), rtol=1e-13, atol=1e-13)


def test_gradcheck_check_batched_grad_runs_the_batched_pass():
    x = _data(rgrad, (3, 2), 5).requires_grad_()
    w = _data(rgrad, (2, 4), 6).requires_grad_()
    assert rgrad.autograd.gradcheck(lambda a, b: (a @ b).tanh().sum(0) * a.sum(), (x, w), check_batched_grad=True)
    assert rgrad.autograd.gradgradcheck(lambda a, b: (a @ b).sin(), (x, w), check_batched_grad=True)


def test_jacobian_vectorize_runs_the_function_once(torch):
    seen = []

    def f(lib):
        def g(a, b):
            seen.append(tuple(a.shape))
            h = lib.nn.functional.linear(a, b).tanh()
            return h * a.sum(), h[:2].exp()

        return g

    x = _data(rgrad, (3,), 8)
    w = _data(rgrad, (3, 3), 9)
    ours = AF.jacobian(f(rgrad), (x, w), vectorize=True)
    assert seen == [(3,)]
    loop = AF.jacobian(f(rgrad), (x, w))
    theirs = torch.autograd.functional.jacobian(f(torch), (_data(torch, (3,), 8), _data(torch, (3, 3), 9)),
                                                vectorize=True)
    for i in range(2):
        for j in range(2):
            assert np.allclose(ours[i][j].numpy(), loop[i][j].numpy(), rtol=1e-13, atol=1e-13)
            assert np.allclose(ours[i][j].numpy(), theirs[i][j].numpy(), rtol=1e-10, atol=1e-12)
