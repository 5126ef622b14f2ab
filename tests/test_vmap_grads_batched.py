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


def _zeros_mask(lib):
    """Zeros among the factors of a product (one in a row, two in another): prod's
    gradient is then the exclusive product, not y / x."""
    return lib.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]], dtype=lib.float64)


def _grad_of(lib, f, x):
    """The gradient of f at x with its graph (its backward nodes are what the batched pass
    then runs: gather's is a scatter_add, index_select's an index_add, max's a scatter_add)."""
    return lib.autograd.grad(f(x), x, create_graph=True)[0]


def _setitem(h, key, value):
    h[key] = value
    return h


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
    "index_not_adjacent": ([(3, 2, 4)], lambda lib, x: (x[[0, 1], :, [2, 3]],
                                                     x[:, [1, 0, 1], :][[2, 0, 1], :, [3, 3, 1]],
                                                     x[[[0], [2]], :, lib.tensor([[1, 3, 3]])]), ()),
    "clone_cast": ([(3,)], lambda lib, x: (x.clone() * x.to(lib.float32).to(lib.float64),), ()),
    "softmax": ([(2, 3)], lambda lib, x: (x.softmax(-1), x.log_softmax(0) * x), ()),
    "where_clamp": ([(2, 3), (3,)], lambda lib, x, y: (lib.where(x > 0, x * y, y.exp()), x.clamp(-0.5, 0.5),
                                                       x.clamp(min=y), x.relu()), ()),
    "masked_fill": ([(2, 3)], lambda lib, x: (x.masked_fill(x > 0.2, 1.0), x.exp().masked_fill(x < 0, 0.5)), ()),
    "binary_fns": ([(2, 3), (3,)], lambda lib, x, y: (lib.atan2(x, y), lib.hypot(x, y.exp()), lib.maximum(x, y),
                                                      lib.logaddexp(x, y)), ()),
    "cat_stack": ([(2, 3), (1, 3)], lambda lib, x, y: (lib.cat([x, y, x * 2], 0), lib.stack([x[0], y[0]], 1)), ()),
    "bmm": ([(2, 2, 3), (2, 3, 2)], lambda lib, x, y: (x.bmm(y), x @ y), ()),
    "prod": ([(2, 3)], lambda lib, x: (x.prod(1), x.prod(0, keepdim=True), x.prod(), x[0, 0].prod()), ()),
    "prod_with_zeros": ([(2, 3)], lambda lib, x: ((x * _zeros_mask(lib)).prod(1), (x * _zeros_mask(lib)).prod(),
                                                  (x * _zeros_mask(lib)).prod(0, keepdim=True)), ()),
    "polygamma": ([(2, 3)], lambda lib, x: (lib.polygamma(1, x.exp()), (x * 0.5 + 2).polygamma(2),
                                            (x + 3).polygamma(0), (x * 2 + 2).polygamma_(1)), ()),
    "scatter_add": ([(3, 4)], lambda lib, x: (_grad_of(lib, lambda t: (t.gather(1, lib.tensor([[0, 0], [1, 3], [2, 2]]))
                                                                       ** 3).sum(), x),
                                              _grad_of(lib, lambda t: t.max(1).values.exp().sum(), x)), ()),
    "index_add": ([(3, 4)], lambda lib, x: (_grad_of(lib, lambda t: (t.index_select(0, lib.tensor([2, 0, 2])) ** 3
                                                                     ).sum(), x),
                                            _grad_of(lib, lambda t: t.index_select(1, lib.tensor([3])).exp().sum(), x)),
                   ()),
    "index_put": ([(4, 3), (2, 3)], lambda lib, x, v: (
        x.index_put((lib.tensor([2, 0]),), v * 2), x.index_put((lib.tensor([3, 3]),), v, accumulate=True),
        _setitem(x * 1, (slice(None), lib.tensor([1, 0])), v[0, :2].exp()),
        x.index_put((lib.tensor([True, False, True, False]),), v[0])), ()),
    # (torch's index_put takes no None among its indices: a subscript puts the full slice)
    "index_put_not_adjacent": ([(3, 2, 4), (2, 2)], lambda lib, x, v: (
        _setitem(x * 1, (lib.tensor([0, 2]), slice(None), lib.tensor([3, 1])), v),
        _setitem(x * 2, (lib.tensor([1, 1]), slice(None), lib.tensor([2, 0])), v[0] * 3)), ()),
    "setitem_on_non_leaf": ([(4, 3), (3,)], lambda lib, x, v: (
        _setitem(x * 2, (lib.tensor([1, 3]),), v.exp()), _setitem(x * 1, (slice(None), lib.tensor([2, 0])), v[:2])),
        ()),
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
    "custom_function": ([(3,)], lambda lib, x: (_Square.make(lib).apply(x.exp()) + x,), ()),
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


def test_the_fallback_warns_once_per_node(monkeypatch):
    """A node that a batched pass ran once per sample (no batching rule: no built-in node
    and no custom Function's is one now; tests/engine.rs runs such a node) is warned about
    once per node name, with vmap's performance warning."""
    monkeypatch.setattr(_batched_tensor, "_warned", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            rgrad.autograd._warn_batched_fallbacks(["SquareBackward"])
    assert [str(w.message) for w in caught] == [
        "There is a performance drop because we have not yet implemented the batching rule for SquareBackward. "
        "Please file us an issue on GitHub so that we can prioritize its implementation."]
    assert caught[0].category is UserWarning


def _functions(lib):
    """Custom Functions whose backward runs under vmap in a batched pass."""
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, k):
            ctx.save_for_backward(a)
            ctx.k = k
            return a ** 3 * k

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            # (shapes read in backward are one sample's)
            assert tuple(g.shape) == tuple(a.shape)
            return 3 * a * a * g * ctx.k, None

    class TwoOutputs(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b, a + b.sum()

        @staticmethod
        def backward(ctx, ga, gb):
            a, b = ctx.saved_tensors
            # b's gradient broadcasts (a leading dim of 2) and is summed down to b
            return ga * b + gb, (ga * a + gb).unsqueeze(0).expand(2, *a.shape)

    class Unbatched(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a.sum()

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return a.cos()  # the same for every sample (not from g)

    class NoMaterialize(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.set_materialize_grads(False)
            return a * 2, a * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 if g2 is None else g1 * 2 + g2 * 3

    return Cube, TwoOutputs, Unbatched, NoMaterialize


def _function_graphs(lib, x, y):
    Cube, TwoOutputs, Unbatched, NoMaterialize = _functions(lib)
    p, q = TwoOutputs.apply(x.exp(), y)
    return (Cube.apply(x, 1.5) * y, p.sin(), q, Unbatched.apply(x * y) * 1.0, NoMaterialize.apply(x)[0])


@pytest.mark.parametrize("create_graph", [False, True])
def test_custom_function_backward_runs_under_vmap(torch, create_graph):
    """A custom Function's backward runs once per batched pass, seeing one sample's shapes,
    as torch's: the values of the loop and torch's, no fallback, double backward."""
    def run(lib, batched):
        x, y = _data(lib, (3,), 60).requires_grad_(), _data(lib, (3,), 61).requires_grad_()
        outs = _function_graphs(lib, x, y)
        gos = [_data(lib, (B, *o.shape), 62 + i) for i, o in enumerate(outs)]
        if batched:
            gs = lib.autograd.grad(outs, (x, y), gos, create_graph=create_graph, is_grads_batched=True)
        else:
            per = [lib.autograd.grad(outs, (x, y), [g[b] for g in gos], create_graph=create_graph,
                                     retain_graph=True) for b in range(B)]
            gs = [lib.stack([p[k] for p in per]) for k in range(2)]
        if not create_graph:
            return list(gs)
        return [*gs, *lib.autograd.grad(sum((g * g).sum() for g in gs), (x, y))]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = run(rgrad, True)
    assert not [str(w.message) for w in caught if "performance drop" in str(w.message)]
    loop, theirs = run(rgrad, False), run(torch, True)
    for a, b, t in zip(ours, loop, theirs):
        assert np.allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-12)
        assert np.allclose(a.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_custom_function_backward_runs_once_per_pass():
    seen = []

    class Count(rgrad.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            seen.append(tuple(g.shape))
            return g * 2

    x = _data(rgrad, (3,), 63).requires_grad_()
    (r,) = rgrad.autograd.grad(Count.apply(x), x, rgrad.eye(3, dtype=rgrad.float64), is_grads_batched=True)
    assert seen == [(3,)]
    assert np.allclose(r.numpy(), 2 * np.eye(3))


def _item_function(lib):
    class Item(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * float(g.sum().item())

    return Item


def _wrong_shape_function(lib):
    class Wrong(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g[:2]

    return Wrong


def _bool_function(lib):
    class Branch(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g if g.sum() > 0 else -g

    return Branch


FUNCTION_ERRORS = {
    "item": lambda lib: (lambda x: lib.autograd.grad(_item_function(lib).apply(x), x, _ones(lib, 2, 3),
                                                     is_grads_batched=True))(_x(lib)),
    "bool": lambda lib: (lambda x: lib.autograd.grad(_bool_function(lib).apply(x), x, _ones(lib, 2, 3),
                                                     is_grads_batched=True))(_x(lib)),
    "wrong_shape": lambda lib: (lambda x: lib.autograd.grad(_wrong_shape_function(lib).apply(x), x,
                                                            _ones(lib, 2, 3), is_grads_batched=True))(_x(lib)),
}


@pytest.mark.parametrize("name", list(FUNCTION_ERRORS))
def test_custom_function_backward_errors_under_vmap_match_torch(torch, name):
    """What torch refuses in a Function's batched backward is refused, with its message:
    reading a value (``.item()``, ``bool()``: torch's legacy vmap's words), a gradient of the
    wrong shape (named by one sample's)."""
    ours, theirs = _outcome(rgrad, FUNCTION_ERRORS[name]), _outcome(torch, FUNCTION_ERRORS[name])
    assert ours[0] == "RuntimeError"
    assert ours == theirs


@pytest.mark.parametrize("name", ["unary_chain", "unary_ops", "broadcasting", "pow_div", "linear_2d", "matvec_chain",
                                  "reductions", "views", "indexing", "advanced_indexing", "softmax", "where_clamp",
                                  "binary_fns", "cat_stack", "bmm", "inplace_on_views", "cross_entropy",
                                  "custom_function", "index_not_adjacent", "prod", "prod_with_zeros", "polygamma",
                                  "scatter_add", "index_add", "index_put", "index_put_not_adjacent",
                                  "setitem_on_non_leaf"])
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


# ---------------------------------------------------------------------------------------
# The ops whose backward nodes got batching rules (prod, polygamma, scatter_add and
# index_add — the backward of gather, max(dim) and index_select —, index_put, indices that
# are not adjacent): per-sample gradients (vmap(grad)), vectorized Jacobians and Hessians
# against the loop and torch, with no fallback
# ---------------------------------------------------------------------------------------

def _z(lib):
    """Zeros among prod's factors (one in a row, two in another, none in the rest)."""
    return lib.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 0.0]], dtype=lib.float64)


def _put(h, key, value):
    h[key] = value
    return h


# name -> f(lib, x, v) with x of shape (4, 3) and v of shape (2, 3)
OPS = {
    "prod_dim": lambda lib, x, v: x.prod(1) * v.sum(),
    "prod_keepdim": lambda lib, x, v: (x * v[0]).prod(0, keepdim=True),
    "prod_all": lambda lib, x, v: (x * v[1]).prod() * v[0],
    "prod_zeros": lambda lib, x, v: (x * _z(lib)).prod(1) + (x * _z(lib)[:, :2].sum(1, keepdim=True) * v[0]).prod(),
    "polygamma": lambda lib, x, v: lib.polygamma(1, x.exp() + v[0].exp()) + (x * 0.5 + 2).polygamma(2) * v[1],
    "gather": lambda lib, x, v: x.gather(1, lib.tensor([[0, 0], [1, 2], [2, 2], [0, 1]])) ** 3 * v[0, :2],
    "max_dim": lambda lib, x, v: x.max(1).values.exp() * v[:, 0].sum(),
    "index_select": lambda lib, x, v: x.index_select(0, lib.tensor([2, 0, 2])) ** 3 * v[0],
    "index_put": lambda lib, x, v: x.index_put((lib.tensor([2, 0]),), v * 2) ** 2,
    "index_put_accumulate": lambda lib, x, v: x.index_put((lib.tensor([3, 3]),), v.exp(), accumulate=True) ** 2,
    "index_put_not_adjacent": lambda lib, x, v: _put(x.reshape(2, 2, 3) * 1, (lib.tensor([0, 1]), slice(None),
                                                                             lib.tensor([2, 2])), v[:, :2]) ** 2,
    "index_put_mask": lambda lib, x, v: x.index_put((lib.tensor([True, False, True, False]),), v[0] * v[1]) ** 2,
    "index_not_adjacent": lambda lib, x, v: x.reshape(2, 2, 3)[[0, 1, 1], :, [2, 0, 2]] ** 2 * v[0, :2],
    "setitem": lambda lib, x, v: _put(x * 2, lib.tensor([1, 3]), v[1].exp()) ** 2,
}


def _no_fallback(caught):
    perf = [str(w.message) for w in caught if "performance drop" in str(w.message)]
    assert not perf, perf


def _close(ours, theirs, rtol=1e-10, atol=1e-12):
    a = np.asarray(ours.detach().tolist(), dtype=np.float64)
    b = np.asarray(theirs.detach().tolist(), dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def _torch_func_fails(name, in_dims):
    """Where torch.func.vmap(grad) raises and rgrad's computes the loop's values: a subscript
    assignment at separated index tensors (torch lays the batched value out as
    [B, *selection], not as the selection's [*index, B, *rest]: a shape error), and an
    in-place write into a tensor computed from an input given no batch dim (rgrad's grad
    batches each input it differentiates, torch's does not: torch's in-place error)."""
    return name == "index_put_not_adjacent" or (name == "setitem" and in_dims[0] is None)


@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 0)], ids=str)
@pytest.mark.parametrize("name", list(OPS))
def test_per_sample_grads_match_the_loop_and_torch_func(torch, name, in_dims):
    f = OPS[name]

    def scalar(lib):
        return lambda x, v: (f(lib, x, v) * 0.5).sum()

    def inputs(lib):
        return [_data(lib, (B, 4, 3) if d == 0 else (4, 3), 40) if k == 0 else
                _data(lib, (B, 2, 3) if d == 0 else (2, 3), 41) for k, d in enumerate(in_dims)]

    x, v = inputs(rgrad)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = rgrad.func.vmap(rgrad.func.grad(scalar(rgrad), argnums=(0, 1)), in_dims=in_dims)(x, v)
    _no_fallback(caught)
    g = rgrad.func.grad(scalar(rgrad), argnums=(0, 1))
    loop = [g(*[a if d is None else a[b] for a, d in zip((x, v), in_dims)]) for b in range(B)]
    for k in range(2):
        _close(ours[k], rgrad.stack([r[k] for r in loop]), rtol=1e-12)
    tx, tv = inputs(torch)
    if _torch_func_fails(name, in_dims):
        with pytest.raises(RuntimeError):
            torch.func.vmap(torch.func.grad(scalar(torch), argnums=(0, 1)), in_dims=in_dims)(tx, tv)
        tg = torch.func.grad(scalar(torch), argnums=(0, 1))
        per = [tg(*[a if d is None else a[b] for a, d in zip((tx, tv), in_dims)]) for b in range(B)]
        theirs = [torch.stack([r[k] for r in per]) for k in range(2)]
    else:
        theirs = torch.func.vmap(torch.func.grad(scalar(torch), argnums=(0, 1)), in_dims=in_dims)(tx, tv)
    for k in range(2):
        _close(ours[k], theirs[k])


@pytest.mark.parametrize("name", list(OPS))
def test_vectorized_jacobian_and_hessian_match_the_loop_and_torch(torch, name):
    """jacobian(vectorize=True) runs each op's backward node batched; hessian(vectorize=True)
    runs the backward of the backward batched (the double backward: prod's and polygamma's
    formulas, the scatter_add of gather's and max's, the index_add of index_select's, the
    index_put of indexing's)."""
    f = OPS[name]

    def run(lib, vectorize):
        x, v = _data(lib, (4, 3), 42), _data(lib, (2, 3), 43)
        jac = lib.autograd.functional.jacobian(lambda a, b: f(lib, a, b), (x, v), vectorize=vectorize)
        hess = lib.autograd.functional.hessian(lambda a, b: (f(lib, a, b) * 0.5).sum(), (x, v),
                                               vectorize=vectorize)
        return [*jac, *(h for row in hess for h in row)]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = run(rgrad, True)
    _no_fallback(caught)
    loop, theirs = run(rgrad, False), run(torch, True)
    for a, b, t in zip(ours, loop, theirs):
        _close(a, b, rtol=1e-12)
        _close(a, t)


@pytest.mark.parametrize("name", ["prod_dim", "prod_all", "prod_zeros", "polygamma", "gather", "index_select",
                                  "index_put_accumulate", "index_put_not_adjacent", "index_not_adjacent"])
def test_batched_grad_with_create_graph_of_a_grad(torch, name):
    """A batched pass over a graph that is itself a gradient (create_graph), differentiated
    once more: third derivatives through the batched formulas, as the loop and torch."""
    f = OPS[name]

    def run(lib, batched):
        x, v = _data(lib, (4, 3), 44).requires_grad_(), _data(lib, (2, 3), 45).requires_grad_()
        gx, gv = lib.autograd.grad((f(lib, x, v) * 0.5).sum(), (x, v), create_graph=True)
        outs = (gx * 1.5, gv.exp())
        gos = [_data(lib, (B, *o.shape), 46 + i) for i, o in enumerate(outs)]
        if batched:
            gs = lib.autograd.grad(outs, (x, v), gos, create_graph=True, is_grads_batched=True)
        else:
            per = [lib.autograd.grad(outs, (x, v), [g[b] for g in gos], create_graph=True) for b in range(B)]
            gs = [lib.stack([p[k] for p in per]) for k in range(2)]
        third = lib.autograd.grad(sum(((g * g).sum() for g in gs), start=x.sum() * 0), (x, v), allow_unused=True)
        return [*gs, *(lib.zeros_like(a) if t is None else t for t, a in zip(third, (x, v)))]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = run(rgrad, True)
    _no_fallback(caught)
    loop, theirs = run(rgrad, False), run(torch, True)
    for a, b, t in zip(ours, loop, theirs):
        _close(a, b, rtol=1e-12)
        _close(a, t)


@pytest.mark.parametrize("create_graph", [False, True])
def test_vmaps_shared_weight_linear_in_a_batched_pass(create_graph):
    """vmap's own Function for linear by a weight expanded over its samples (one product
    forward, per-sample weight gradients): its backward, run under a vmap level by a
    batched pass, gives the loop's values, and (create_graph) their derivatives."""
    from rgrad.func._batching_nn import _SharedWeightLinear

    def run(batched):
        w0 = _data(rgrad, (4, 3), 70).requires_grad_()
        x = _data(rgrad, (2, 5, 3), 71).requires_grad_()
        w = w0.unsqueeze(0).expand(2, 4, 3)
        out = _SharedWeightLinear.apply(x, w, None).tanh()
        gos = _data(rgrad, (B, 2, 5, 4), 72)
        if batched:
            gs = rgrad.autograd.grad(out, (x, w0), gos, create_graph=create_graph, is_grads_batched=True)
        else:
            per = [rgrad.autograd.grad(out, (x, w0), gos[b], create_graph=create_graph, retain_graph=True)
                   for b in range(B)]
            gs = [rgrad.stack([p[k] for p in per]) for k in range(2)]
        if not create_graph:
            return list(gs)
        return [*gs, *rgrad.autograd.grad(sum((g * g).sum() for g in gs), (x, w0))]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = run(True)
    assert not [str(w.message) for w in caught if "performance drop" in str(w.message)]
    for a, b in zip(ours, run(False)):
        assert np.allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-12)


# name -> f(lib, x, v, i): x (5, 3), v (2, 3), i an int64 index of shape (2,) in [0, 3)
INDEXED = {
    "index_put": lambda lib, x, v, i: x.index_put((i,), v * 2) ** 2,
    "index_put_accumulate": lambda lib, x, v, i: x.index_put((i.remainder(2),), v.exp(), accumulate=True) ** 2,
    "index_put_dim1": lambda lib, x, v, i: x.t().index_put((i,), v[:, :1].exp(), accumulate=True).t() ** 2,
    "gather": lambda lib, x, v, i: x.gather(1, i.expand(5, 2)) ** 3 * v[0, 1],
    "index_select": lambda lib, x, v, i: x.index_select(0, i) ** 3 * v,
    "getitem": lambda lib, x, v, i: x[i, :2] ** 2 * v[:, :2],
}


@pytest.mark.parametrize("in_dims", [(0, 0, 0), (None, None, 0), (0, None, 0), (None, 0, 0), (0, 0, None)],
                         ids=str)
@pytest.mark.parametrize("name", list(INDEXED))
def test_per_sample_grads_with_batched_indices(torch, name, in_dims):
    """vmap(grad) where the index (each sample its own, with repeats), the source, the
    values or several are batched: the loop's values and torch.func's, no fallback."""
    f = INDEXED[name]
    rows = [[2, 0], [1, 1], [0, 2]]

    def inputs(lib):
        x = _data(lib, (B, 5, 3) if in_dims[0] == 0 else (5, 3), 80)
        v = _data(lib, (B, 2, 3) if in_dims[1] == 0 else (2, 3), 81)
        i = lib.tensor(rows if in_dims[2] == 0 else rows[0])
        return x, v, i

    def scalar(lib):
        return lambda x, v, i: (f(lib, x, v, i) * 0.5).sum()

    x, v, i = inputs(rgrad)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = rgrad.func.vmap(rgrad.func.grad(scalar(rgrad), argnums=(0, 1)), in_dims=in_dims)(x, v, i)
    _no_fallback(caught)
    g = rgrad.func.grad(scalar(rgrad), argnums=(0, 1))
    loop = [g(*[a if d is None else a[b] for a, d in zip((x, v, i), in_dims)]) for b in range(B)]
    tx, tv, ti = inputs(torch)
    theirs = torch.func.vmap(torch.func.grad(scalar(torch), argnums=(0, 1)), in_dims=in_dims)(tx, tv, ti)
    for k in range(2):
        _close(ours[k], rgrad.stack([r[k] for r in loop]), rtol=1e-12)
        _close(ours[k], theirs[k])


def test_custom_function_in_what_uses_the_batched_pass():
    """A Function's backward under vmap(vjp) (one batched pass, inside a vmap level of the
    caller's, and nested in an outer vmap), gradcheck/gradgradcheck's check_batched_grad and
    hessian(vectorize=True): the loop's values, no fallback."""
    class Cube(rgrad.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(a):
            return a ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 3 * a * a * g

    def f(t):
        return Cube.apply(t).sin()

    x = _data(rgrad, (4,), 90).requires_grad_()
    vs = _data(rgrad, (5, 4), 91)
    xs = _data(rgrad, (3, 4), 92)
    y = f(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = rgrad.func.vmap(lambda v: rgrad.autograd.grad(y, x, v, retain_graph=True)[0])(vs)
        nested = rgrad.func.vmap(lambda xx: rgrad.func.vmap(rgrad.func.vjp(f, xx)[1])(vs)[0])(xs)
        assert rgrad.autograd.gradcheck(f, (x.detach().requires_grad_(),), check_batched_grad=True)
        assert rgrad.autograd.gradgradcheck(f, (x.detach().requires_grad_(),), check_batched_grad=True)
        hess = rgrad.autograd.functional.hessian(lambda a: f(a).sum(), x.detach(), vectorize=True)
    loop = rgrad.stack([rgrad.autograd.grad(y, x, vs[b], retain_graph=True)[0] for b in range(5)])
    nested_loop = rgrad.stack([rgrad.stack([rgrad.func.vjp(f, xs[i])[1](vs[b])[0] for b in range(5)])
                               for i in range(3)])
    hess_loop = rgrad.autograd.functional.hessian(lambda a: f(a).sum(), x.detach())
    for a, b in ((got, loop), (nested, nested_loop), (hess, hess_loop)):
        assert np.allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-12)
