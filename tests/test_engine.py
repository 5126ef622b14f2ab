"""The backward executor from Python: hooks and errors on worker threads, nested
backward, graph freeing, and results that do not depend on the thread count."""

import gc
import traceback

import pytest

import rgrad


@pytest.fixture
def threads():
    """Run with a given pool size, restoring the previous one afterwards."""
    before = rgrad.get_num_threads()
    yield rgrad.set_num_threads
    rgrad.set_num_threads(before)


def wide_graph(x, branches=32, depth=20, hook=None):
    total = None
    for i in range(branches):
        t = x * (1.0 + i / branches)
        if hook is not None:
            hook(i, t)
        for j in range(depth):
            t = [t.sin(), t * 1.01, t.tanh(), t + 0.5, t.exp() * 0.1][j % 5]
        s = t.sum()
        total = s if total is None else total + s
    return total


def test_exception_in_hook_on_worker_propagates_with_type_and_traceback(threads):
    threads(2)
    x = rgrad.ones(64, requires_grad=True)

    def bad(g):
        raise ValueError("raised inside a hook")

    out = wide_graph(x, hook=lambda i, t: t.register_hook(bad) if i == 17 else None)
    with pytest.raises(ValueError, match="raised inside a hook") as info:
        out.backward()
    assert "bad" in "".join(traceback.format_tb(info.tb))
    # the failed pass accumulated nothing into x, and the engine still works
    assert x.grad is None
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0] * 64


def test_hooks_on_many_branches_run_on_workers(threads):
    threads(4)
    x = rgrad.ones(8, requires_grad=True)
    seen = []
    out = wide_graph(x, depth=1, hook=lambda i, t: t.register_hook(lambda g: seen.append(i) or g * 2))
    out.backward()
    assert sorted(seen) == list(range(32))
    # d/dx Σ_i sin(c_i x) with the hook doubling: Σ_i 2 c_i cos(c_i)
    import math

    expected = sum(2 * (1 + i / 32) * math.cos(1 + i / 32) for i in range(32))
    assert x.grad[0].item() == pytest.approx(expected, rel=1e-5)


def test_nested_backward_inside_a_hook():
    # torch runs hooks with grad mode = create_graph, so the hook enables grad itself
    a = rgrad.tensor([1.0], requires_grad=True)

    def nested(g):
        with rgrad.enable_grad():
            b = rgrad.tensor([2.0], requires_grad=True)
            (b * b).sum().backward()  # db = 2b = 4
        return g * b.grad

    a.register_hook(nested)
    (a * 5).sum().backward()
    assert a.grad.tolist() == [20.0]


def test_hooks_see_grad_mode_of_create_graph():
    x = rgrad.tensor([1.0], requires_grad=True)
    modes = []
    x.register_hook(lambda g: modes.append(rgrad.is_grad_enabled()))
    (x * 2).sum().backward(retain_graph=True)
    (x * 2).sum().backward(create_graph=True)
    assert modes == [False, True]


@pytest.mark.parametrize("n", [1, 2, 4])
def test_wide_graph_gradients_are_bitwise_identical_across_thread_counts(threads, n):
    rgrad.manual_seed(1)
    x0 = rgrad.randn(4096)
    threads(1)
    x = x0.clone().requires_grad_()
    wide_graph(x).backward()
    reference = x.grad.tolist()
    threads(n)
    x = x0.clone().requires_grad_()
    wide_graph(x).backward()
    assert x.grad.tolist() == reference  # exact, not approximate


def test_mlp_gradients_are_bitwise_identical_across_thread_counts(threads):
    import rgrad.nn.functional as F

    rgrad.manual_seed(0)
    data = rgrad.randn(128, 784)
    target = rgrad.randint(0, 10, (128,))
    w = [rgrad.randn(784, 512) * 0.03, rgrad.randn(512, 512) * 0.04, rgrad.randn(512, 10) * 0.04]

    def grads(n):
        threads(n)
        ws = [p.clone().requires_grad_() for p in w]
        h = F.relu(data @ ws[0])
        h = F.relu(h @ ws[1])
        F.nll_loss(F.log_softmax(h @ ws[2], dim=1), target).backward()
        return [p.grad.tolist() for p in ws]

    assert grads(1) == grads(2)


def test_graph_is_freed_after_backward_and_after_drop():
    gc.collect()  # (earlier tests' reference cycles, such as a caught exception's frames, hold graphs)
    before = rgrad._C._live_nodes()
    x = rgrad.ones(3, requires_grad=True)
    y = x
    for _ in range(1000):
        y = (y * 1.0001).sin()
    assert rgrad._C._live_nodes() >= before + 2000
    y.sum().backward()
    del y
    gc.collect()
    assert rgrad._C._live_nodes() == before


def test_deep_chain_of_100k_nodes_backprops_and_drops():
    gc.collect()
    before = rgrad._C._live_nodes()
    x = rgrad.tensor(0.5, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward()
    assert x.grad.item() == 1.0
    del y
    assert rgrad._C._live_nodes() == before


def test_saved_tensors_are_released_without_retain_graph():
    x = rgrad.tensor([2.0], requires_grad=True)
    y = (x * x).sum()  # MulBackward0 saves x twice
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()
    # nodes that saved nothing can run again, as in torch
    z = (x + 1).sum()
    z.backward()
    z.backward()
    assert x.grad.tolist() == [2 * 2.0 + 2.0]


@pytest.mark.parametrize("fn", [lambda x: x.relu(), lambda x: x.clamp(-0.5, 0.5)], ids=["relu", "clamp"])
def test_second_derivative_through_piecewise_linear_ops_is_zero_not_an_error(fn):
    # torch records relu's/clamp's backward as a function of the input too (zero
    # derivative), so differentiating the gradient again gives zeros
    x = rgrad.tensor([0.7, -0.3, 0.2], requires_grad=True)
    (g,) = rgrad.autograd.grad(fn(x).sum(), x, create_graph=True)
    assert g.requires_grad
    (h,) = rgrad.autograd.grad(g.sum(), x)
    assert h.tolist() == [0.0, 0.0, 0.0]


def test_grad_fn_objects_keep_their_identity_while_alive():
    # torch returns the same Python object for a node: identity checks along the graph work
    a = rgrad.ones(2, requires_grad=True)
    b = a * 2
    c = b + 1
    assert b.grad_fn is b.grad_fn
    assert c.grad_fn.next_functions[0][0] is b.grad_fn
    assert type(c.grad_fn).__name__ == "AddBackward0"


def test_retained_grad_accumulates_without_history_unless_create_graph():
    x = rgrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.sum().backward(retain_graph=True)
    y.sum().backward(retain_graph=True)
    assert y.grad.tolist() == [2.0, 2.0] and not y.grad.requires_grad
    # d Σy²/dy = 2y = [4, 8] carries history under create_graph (same in torch)
    (y * y).sum().backward(create_graph=True)
    assert y.grad.tolist() == [6.0, 10.0] and y.grad.requires_grad



def test_root_gradient_is_cast_to_the_output_dtype():
    """torch's engine casts a gradient to the dtype its edge expects: a float32
    grad_output for a float64 output gives float64 gradients (and the reverse)."""
    x = rgrad.tensor([1.0, 2.0], dtype=rgrad.float64, requires_grad=True)
    (g,) = rgrad.autograd.grad(x * 3, x, rgrad.ones(2, dtype=rgrad.float32))
    assert g.dtype == rgrad.float64 and g.tolist() == [3.0, 3.0]
    (x * 3).sum().backward(rgrad.tensor(1.0, dtype=rgrad.float32))
    assert x.grad.dtype == rgrad.float64
    y = rgrad.tensor([1.0, 2.0], requires_grad=True)
    (g,) = rgrad.autograd.grad(y * 2, y, rgrad.ones(2, dtype=rgrad.float64))
    assert g.dtype == rgrad.float32


def test_accumulate_grad_steals_a_sole_fresh_gradient_and_copies_a_shared_one():
    # torch's AccumulateGrad keeps the incoming gradient itself as .grad when nothing else
    # holds it (no copy of a weight-sized buffer per step); a gradient the caller still
    # holds (passed through unchanged by clone's backward) is copied. (rgrad counted a
    # reference it had just taken itself and copied every first gradient.)
    a = rgrad.randn(64, 32, requires_grad=True)
    seen = []
    a.register_hook(lambda g: seen.append(g.data_ptr()))
    rgrad.relu(a).backward(rgrad.randn(64, 32))
    assert a.grad.data_ptr() == seen[0]
    b = rgrad.randn(4, requires_grad=True)
    g = rgrad.randn(4)
    b.clone().backward(g)
    assert b.grad.data_ptr() != g.data_ptr()
    assert b.grad.tolist() == g.tolist()
    g.add_(1.0)  # the caller's tensor changes; .grad does not
    assert b.grad.tolist() != g.tolist()
    # a hook that keeps the gradient makes it shared: copied, so .grad is not the kept one
    c = rgrad.randn(4, requires_grad=True)
    kept = []
    c.register_hook(lambda t: kept.append(t))
    (c * 2).backward(rgrad.ones(4))
    assert c.grad.data_ptr() != kept[0].data_ptr()
    assert c.grad.tolist() == kept[0].tolist()


def test_accumulate_grad_steals_views_whose_bases_nothing_else_holds():
    # the linear layer's weight gradient is a view of its product and the bias gradient a
    # view of a keepdim sum: torch steals both (no copy of a weight-sized buffer per step);
    # rgrad counted the base's hold on the storage as another owner and copied them
    F = rgrad.nn.functional
    x = rgrad.randn(4, 8)
    w = rgrad.randn(16, 8, requires_grad=True)
    b = rgrad.randn(16, requires_grad=True)
    seen = {}
    w.register_hook(lambda g: seen.__setitem__("w", g.data_ptr()))
    b.register_hook(lambda g: seen.__setitem__("b", g.data_ptr()))
    rgrad.relu(F.linear(x, w, b)).sum().backward()
    assert w.grad.data_ptr() == seen["w"]
    assert b.grad.data_ptr() == seen["b"]
    assert w.grad._base is None and b.grad._base is None
    # a view whose base someone else holds is copied: changing the base leaves .grad alone
    kept = rgrad.ones(2, 4)

    class ViewOfKept(rgrad.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t.clone()

        @staticmethod
        def backward(ctx, g):
            return kept.view(8)

    c = rgrad.randn(8, requires_grad=True)
    ViewOfKept.apply(c).sum().backward()
    assert c.grad.data_ptr() != kept.data_ptr()
    kept.add_(1.0)
    assert c.grad.tolist() == [1.0] * 8
