"""Forward-mode AD (rgrad.autograd.forward_ad) against torch: the same programs run on
both print the same primals and tangents, raise the same errors; plus what torch's
semantics require of levels, views, in-place ops, grad mode and forward-over-reverse.
Every op's forward derivative is gradchecked in tests/test_ops_gradcheck.py."""

from __future__ import annotations

import threading

import pytest

import rgrad

torch = pytest.importorskip("torch")


def _program(lib):
    fw = lib.autograd.forward_ad
    x = lib.tensor([0.5, 1.5, -0.3], dtype=lib.float64)
    t = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)
    w = lib.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], dtype=lib.float64)
    out = []
    with fw.dual_level() as level:
        out.append(level)
        d = fw.make_dual(x, t)
        fns = [
            lambda a: a.exp(), lambda a: a * a + 3 * a, lambda a: a.sin() / (2 + a.cos()), lambda a: a.sum(),
            lambda a: w @ a, lambda a: a.softmax(0), lambda a: a ** 3, lambda a: lib.tanh(a),
            lambda a: a.reshape(3, 1).t(), lambda a: a.mean(), lambda a: lib.cat([a, a * 2]), lambda a: a.max(),
            lambda a: a[1:], lambda a: lib.where(a > 0, a, a * a), lambda a: a.log_softmax(0),
            lambda a: (a.unsqueeze(1) * a).sum(1), lambda a: lib.stack([a, a.sigmoid()]).prod(0),
        ]
        for f in fns:
            p, tan = fw.unpack_dual(f(d))
            out.append((p.tolist(), tan.tolist()))
        with lib.no_grad():
            out.append(fw.unpack_dual(d * 3).tangent.tolist())
        c = d.clone()
        c.mul_(2)
        out.append(fw.unpack_dual(c).tangent.tolist())
        y = d.clone()
        v = y[1:]
        y.mul_(2)
        out.append(fw.unpack_dual(v).tangent.tolist())  # a view's tangent follows its base's
        y = x.clone()
        y[1] = fw.make_dual(lib.tensor(2.0, dtype=lib.float64), lib.tensor(1.0, dtype=lib.float64))
        out.append(fw.unpack_dual(y).tangent.tolist())
        out.append((d.requires_grad, (d * 2).requires_grad, (d * 2).grad_fn))
        out.append(fw.unpack_dual((d > 0)).tangent)
        xr = x.clone().requires_grad_()
        dr = fw.make_dual(xr, t)
        g, = lib.autograd.grad((dr.exp() * dr).sum(), xr)  # forward-over-reverse: H t
        out.append(fw.unpack_dual(g).tangent.tolist())
        g, = lib.autograd.grad((dr * dr.tanh()).sum(), xr, create_graph=True)
        out.append(fw.unpack_dual(g).tangent.tolist())
        # reverse-over-forward: the tangent is differentiable w.r.t. the primal
        jvp = fw.unpack_dual((dr.sin() * dr).sum()).tangent
        out.append(lib.autograd.grad(jvp, xr)[0].tolist())
    out.append(fw.unpack_dual(d).tangent)
    return out


def _rounded(v):
    if isinstance(v, float):
        return round(v, 10)
    if isinstance(v, (list, tuple)):
        return [_rounded(e) for e in v]
    return v


# torch's make_dual loads its jvp decompositions, which warn about torch.jit.script
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_program_matches_torch():
    assert _rounded(_program(rgrad)) == _rounded(_program(torch))


def _errors(lib):
    fw = lib.autograd.forward_ad
    x = lib.ones(2)
    calls = [
        lambda: fw.make_dual(x, lib.ones(2)),
        lambda: fw.make_dual(lib.ones(2, dtype=lib.int64), lib.ones(2)),
        lambda: fw.make_dual(x, lib.ones(2, dtype=lib.int64)),
    ]
    msgs = []
    for call in calls:
        with pytest.raises(Exception) as e:
            call()
        msgs.append((type(e.value).__name__, str(e.value)))
    with fw.dual_level():
        d = fw.make_dual(x, lib.ones(2))
        for call in [fw.enter_dual_level, lambda: fw.make_dual(x, lib.ones(3)), lambda: fw.make_dual(d, lib.ones(2)),
                     lambda: fw.exit_dual_level(level=3), lambda: fw.unpack_dual(d, level=1)]:
            with pytest.raises(Exception) as e:
                call()
            msgs.append((type(e.value).__name__, str(e.value)))
    return msgs


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_errors_match_torch():
    assert _errors(rgrad) == _errors(torch)


def test_tangents_die_with_the_level_and_cost_nothing_after():
    fw = rgrad.autograd.forward_ad
    x = rgrad.ones(3)
    with fw.dual_level():
        d = fw.make_dual(x, rgrad.ones(3))
        y = d * 2
        assert fw.unpack_dual(y).tangent is not None
    assert fw.unpack_dual(y).tangent is None and fw.unpack_dual(d).tangent is None
    with fw.dual_level():  # a new level: the old tangents are gone for good
        assert fw.unpack_dual(y, level=0).tangent is None
    assert fw.unpack_dual(x * 2).tangent is None


def test_fwd_grad_switch_is_per_thread():
    fw = rgrad.autograd.forward_ad
    seen = []
    with fw.dual_level():
        d = fw.make_dual(rgrad.ones(2), rgrad.ones(2))
        with fw._set_fwd_grad_enabled(False):
            assert fw.unpack_dual(d * 2).tangent is None
            th = threading.Thread(target=lambda: seen.append(fw.unpack_dual(d * 2).tangent))
            th.start()
            th.join()
        assert fw.unpack_dual(d * 2).tangent.tolist() == [2.0, 2.0]
    assert seen[0].tolist() == [2.0, 2.0]


def test_many_threads_propagate_their_own_tangents():
    """Tangents are per tensor: threads computing JVPs of their own inputs at once all
    get their own results (a race in the registry or the saved-tangent table would lose
    or mix them)."""
    fw = rgrad.autograd.forward_ad
    errors = []

    def work(k):
        try:
            for _ in range(50):
                x = rgrad.full((4,), float(k), dtype=rgrad.float64)
                d = fw.make_dual(x, rgrad.ones(4, dtype=rgrad.float64))
                xr = x.clone().requires_grad_()
                dr = fw.make_dual(xr, rgrad.ones(4, dtype=rgrad.float64))
                t = fw.unpack_dual((d * d).exp().sum()).tangent.item()
                g, = rgrad.autograd.grad((dr * dr * dr).sum(), xr)
                h = fw.unpack_dual(g).tangent.tolist()
                expect = 4 * 2 * k * __import__("math").exp(k * k)
                assert abs(t - expect) <= 1e-9 * max(1.0, abs(expect)), (t, expect)
                assert h == [6.0 * k] * 4, h
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    with fw.dual_level():
        threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    assert not errors, errors[0]


def _custom_function(lib):
    fw = lib.autograd.forward_ad
    seen = []

    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, k):
            ctx.save_for_forward(x)
            return x * y * k

        @staticmethod
        def jvp(ctx, tx, ty, tk):
            seen.append((tx.tolist(), ty.tolist(), tk, [t.tolist() for t in ctx.saved_tensors]))
            return tx * 2 + ty

    class G(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    out = []
    with fw.dual_level():
        d = fw.make_dual(lib.ones(2), lib.ones(2))
        out.append(fw.unpack_dual(F.apply(d, lib.ones(2), 3)).tangent.tolist())
        with pytest.raises(NotImplementedError) as e:
            G.apply(d)
        out.append(str(e.value))
        out.append(fw.unpack_dual(G.apply(lib.ones(2))).tangent)
    return out, seen


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_custom_function_jvp_matches_torch():
    assert _custom_function(rgrad) == _custom_function(torch)


def _printed(lib):
    fw = lib.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(lib.ones(2), lib.tensor([1.0, 0.0]))
        return [
            str(d),
            repr(d * lib.tensor([[1.0], [2.0]])),
            repr(fw.make_dual(lib.ones(2, requires_grad=True), lib.ones(2, dtype=lib.float64))),
            str(fw.unpack_dual(d).primal),
        ]


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_dual_tensors_print_their_tangent_as_torch():
    assert _printed(rgrad) == [s.replace("torch.", "rgrad.") for s in _printed(torch)]


def _reverse_over_forward_through_views(lib):
    """A view's tangent keeps the tangent's graph: differentiating a tangent w.r.t. the
    primal and the tangent goes through views (helper-found: an alias dropped it)."""
    fw = lib.autograd.forward_ad
    x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    t = lib.tensor([1.0, 0.5, 2.0], dtype=lib.float64, requires_grad=True)
    out = []
    with fw.dual_level():
        d = fw.make_dual(x, t)
        for f in [lambda a: (a ** 3 * a[0]).sum(), lambda a: (a * 2).view(3, 1).sum() * a[1],
                  lambda a: ((a * a).t() * a.split(1)[1]).sum()]:
            tan = fw.unpack_dual(f(d)).tangent
            out.append([g.tolist() for g in lib.autograd.grad(tan, (x, t))])
    return out


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_reverse_over_forward_through_views_matches_torch():
    assert _rounded(_reverse_over_forward_through_views(rgrad)) == _rounded(_reverse_over_forward_through_views(torch))


def _packs_under_forward_ad(lib):
    """Saved-tensor hooks see the nodes reverse mode keeps, not those made for a tangent
    alone (torch makes none then)."""
    fw = lib.autograd.forward_ad
    packed = []
    with lib.autograd.graph.saved_tensors_hooks(lambda t: packed.append(tuple(t.shape)) or t, lambda t: t):
        with fw.dual_level():
            d = fw.make_dual(lib.ones(3), lib.ones(3))
            y = (d.exp() * d).sum()
            n_dual_only = len(packed)
            x = lib.ones(3, requires_grad=True)
            z = (fw.make_dual(x, lib.ones(3)).exp() * 2).sum()
            tangent = fw.unpack_dual(z).tangent.item()
    return n_dual_only, len(packed) > 0, tangent, fw.unpack_dual(y).tangent


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_saved_tensor_hooks_skip_nodes_made_for_tangents_alone():
    r, t = _packs_under_forward_ad(rgrad), _packs_under_forward_ad(torch)
    assert r[0] == t[0] == 0 and r[1] == t[1] is True
    assert abs(r[2] - t[2]) < 1e-5


def test_forward_over_reverse_is_exact_under_the_parallel_engine():
    """A backward whose branches run on several workers, where a tangent is computed by
    transposition (a nested backward on a worker, with forward AD off on that thread):
    a worker that steals the outer task's nodes meanwhile must run them with the outer
    task's switch (once a race: about 1 run in 200 lost part of the tangent)."""
    fw = rgrad.autograd.forward_ad
    x0 = rgrad.tensor([0.3, -0.7, 1.2, 0.5], dtype=rgrad.float64)

    def g(a):
        return (a.sin() * a.tanh().sum() * a[1:].prod()).sum()

    seen = set()
    for _ in range(400):
        with fw.dual_level():
            xl = x0.detach().requires_grad_()
            d = fw.make_dual(xl, rgrad.tensor([0.0, 1.0, 0.0, 0.0], dtype=rgrad.float64))
            (gr,) = rgrad.autograd.grad(g(d), d)
            seen.add(tuple(fw.unpack_dual(gr).tangent.tolist()))
    assert len(seen) == 1, seen
    got = list(next(iter(seen)))
    expected = [0.598184909, 0.695286139, 0.236600471, 0.587614403]  # torch's H[1]
    assert all(abs(a - b) < 1e-8 for a, b in zip(got, expected))
