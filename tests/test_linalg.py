"""rgrad.linalg (cross, vector_norm, matrix_norm, norm, vecdot), torch.cross, dist and
aminmax against torch: values (cross bit for bit: torch's fused multiply-add), nodes and
saved fields, gradients, forward AD, vmap and errors.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")

INF = math.inf


def _bits(t):
    return np.ascontiguousarray(t.detach().numpy()).tobytes()


def _pair(shape, seed, dtype="float64", grad=False):
    a = np.random.default_rng(seed).standard_normal(shape)
    r = rgrad.tensor(a.tolist(), dtype=getattr(rgrad, dtype), requires_grad=grad)
    t = torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=grad)
    return r, t


def _saved(fn):
    return sorted(f for f in dir(fn) if f.startswith("_saved"))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("sa, sb, dim", [((5, 3), (5, 3), -1), ((3, 7), (3, 7), 0), ((4, 3, 6), (1, 3, 1), 1),
                                         ((2, 1, 3), (1, 4, 3), -1)])
def test_cross_is_torchs_bits(sa, sb, dim, dtype):
    a, ta = _pair(sa, 1, dtype)
    b, tb = _pair(sb, 2, dtype)
    got, want = rgrad.linalg.cross(a, b, dim=dim), torch.linalg.cross(ta, tb, dim=dim)
    assert tuple(got.shape) == tuple(want.shape)
    assert _bits(got) == _bits(want)
    assert _bits(rgrad.cross(a, b, dim=dim)) == _bits(torch.cross(ta, tb, dim=dim))
    assert _bits(a.cross(b, dim)) == _bits(want)


def test_cross_of_integers_and_torchs_errors():
    a, b = rgrad.tensor([[1, 2, 3]]), rgrad.tensor([[4, 5, 6]])
    assert rgrad.linalg.cross(a, b).tolist() == torch.linalg.cross(torch.tensor([[1, 2, 3]]),
                                                                   torch.tensor([[4, 5, 6]])).tolist()
    cases = [
        lambda m: m.linalg.cross(m.ones(2, 3), m.ones(3)),
        lambda m: m.linalg.cross(m.ones(4), m.ones(4)),
        lambda m: m.cross(m.ones(2, 4), m.ones(2, 4)),
        lambda m: m.linalg.cross(m.ones(2, 3), m.ones(4, 3)),
        lambda m: m.linalg.cross(m.ones(3), m.ones(3, dtype=m.float64)),
        lambda m: m.linalg.cross(m.ones(3), [1.0, 2.0, 3.0]),
    ]
    for case in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (torch.cross without a dim warns)
            with pytest.raises(Exception) as want:
                case(torch)
            with pytest.raises(type(want.value)) as got:
                case(rgrad)
        assert str(got.value) == str(want.value).replace("torch.", "rgrad.")


def test_cross_without_dim_takes_the_first_size_3_dim_and_warns_once():
    import rgrad._composite as comp

    comp._CROSS_WARNED = False
    a, ta = _pair((3, 3), 3)
    b, tb = _pair((3, 3), 4)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = rgrad.cross(a, b)
        rgrad.cross(a, b)
    assert len(w) == 1 and "Using torch.cross without specifying the dim arg is deprecated" in str(w[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.cross(ta, tb)
    assert _bits(got) == _bits(want)
    assert got.grad_fn is None


def test_cross_node_gradients_double_backward_and_forward_ad():
    a, ta = _pair((4, 3), 5, grad=True)
    b, tb = _pair((4, 3), 6, grad=True)
    y, ty = rgrad.linalg.cross(a, b), torch.linalg.cross(ta, tb)
    assert y.grad_fn.name() == ty.grad_fn.name() == "LinalgCrossBackward0"
    assert _saved(y.grad_fn) == _saved(ty.grad_fn) == ["_saved_dim", "_saved_other", "_saved_self"]
    g, tg = _pair((4, 3), 7)
    (ga, gb), (tga, tgb) = (rgrad.autograd.grad(y, (a, b), g, create_graph=True),
                            torch.autograd.grad(ty, (ta, tb), tg, create_graph=True))
    np.testing.assert_allclose(ga.detach().numpy(), tga.detach().numpy(), rtol=1e-14)
    np.testing.assert_allclose(gb.detach().numpy(), tgb.detach().numpy(), rtol=1e-14)
    (gga,) = rgrad.autograd.grad((ga * ga).sum() + gb.sum(), (b,))
    (tgga,) = torch.autograd.grad((tga * tga).sum() + tgb.sum(), (tb,))
    np.testing.assert_allclose(gga.numpy(), tgga.numpy(), rtol=1e-13)
    assert rgrad.autograd.gradcheck(lambda x, z: rgrad.linalg.cross(x, z), (a, b))
    assert rgrad.autograd.gradgradcheck(lambda x, z: rgrad.linalg.cross(x, z), (a, b))
    # broadcast operands: the gradient is summed back to each shape
    c, tc = _pair((1, 3), 8, grad=True)
    rgrad.linalg.cross(a, c).sum().backward()
    torch.linalg.cross(ta, tc).sum().backward()
    np.testing.assert_allclose(c.grad.numpy(), tc.grad.numpy(), rtol=1e-14)
    fa, tfa = rgrad.autograd.forward_ad, torch.autograd.forward_ad
    t1, tt1 = _pair((4, 3), 9)
    with fa.dual_level():
        out = fa.unpack_dual(rgrad.linalg.cross(fa.make_dual(a.detach(), t1), b.detach())).tangent
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tfa.dual_level():
            want = tfa.unpack_dual(torch.linalg.cross(tfa.make_dual(ta.detach(), tt1), tb.detach())).tangent
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-14)


@pytest.mark.parametrize("p", [2, 1, 3, 0.5, INF, -INF, 0])
def test_dist_is_torchs(p):
    a, ta = _pair((3, 4), 10, grad=True)
    b, tb = _pair((4,), 11, grad=True)
    y, ty = rgrad.dist(a, b, p), torch.dist(ta, tb, p)
    np.testing.assert_allclose(y.item(), ty.item(), rtol=1e-14)
    assert y.grad_fn.name() == ty.grad_fn.name() == "DistBackward0"
    assert _saved(y.grad_fn) == _saved(ty.grad_fn)
    assert y.grad_fn._saved_p == ty.grad_fn._saved_p
    if p == 0:
        # a count: no gradient (torch's norm_backward gives none; its dist then fails
        # negating it for other, rgrad gives none to both)
        y.backward()
        assert a.grad is None and b.grad is None
        return
    y.backward()
    ty.backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-13, atol=1e-15)
    assert a.dist(b, p).item() == y.item()


def test_dist_of_equal_tensors_has_a_zero_gradient():
    a = rgrad.tensor([1.0, 2.0], requires_grad=True)
    rgrad.dist(a, a.detach()).backward()
    assert a.grad.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("kw", [{}, {"dim": 0}, {"dim": -1, "keepdim": True}, {"dim": 1}])
def test_aminmax_is_torchs(kw):
    x, tx = _pair((4, 5), 12, grad=True)
    with rgrad.no_grad():
        x[1, 2] = x[0, 2]  # a tie along dim 0
    with torch.no_grad():
        tx[1, 2] = tx[0, 2]
    r, tr = rgrad.aminmax(x, **kw), torch.aminmax(tx, **kw)
    assert type(r).__name__ == "aminmax" and r._fields == ("min", "max")
    assert _bits(r.min) == _bits(tr.min) and _bits(r.max) == _bits(tr.max)
    assert r.min.grad_fn is r.max.grad_fn or r.min.grad_fn.name() == r.max.grad_fn.name()
    assert r.min.grad_fn.name() == tr.min.grad_fn.name() == "AminmaxBackward0"
    assert _saved(r.min.grad_fn) == _saved(tr.min.grad_fn)
    assert r.min.grad_fn._saved_keepdim == tr.min.grad_fn._saved_keepdim
    gl, tgl = _pair(tuple(r.min.shape), 13)
    gh, tgh = _pair(tuple(r.max.shape), 14)
    (r.min * gl).sum().backward(retain_graph=True)
    (tr.min * tgl).sum().backward(retain_graph=True)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-14)
    (r.min * gl + r.max * gh).sum().backward()
    (tr.min * tgl + tr.max * tgh).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-14)
    m = x.aminmax(**kw)
    assert _bits(m.max) == _bits(tr.max)


def test_aminmax_prints_as_torch_and_takes_integers_and_bools():
    for vals in ([1, 5, 2], [True, False]):
        r, t = rgrad.aminmax(rgrad.tensor(vals)), torch.aminmax(torch.tensor(vals))
        assert repr(r) == repr(t).replace("torch.", "rgrad.")
    with pytest.raises(RuntimeError, match="cannot compute aminmax over an empty dimension"):
        rgrad.aminmax(rgrad.zeros(0))
    assert rgrad.aminmax(rgrad.zeros(0, 3), dim=1).min.shape == (0,)


def test_aminmax_forward_ad_and_gradcheck():
    x, tx = _pair((3, 4), 15)
    t, tt = _pair((3, 4), 16)
    fa, tfa = rgrad.autograd.forward_ad, torch.autograd.forward_ad
    with fa.dual_level():
        r = rgrad.aminmax(fa.make_dual(x, t), dim=1)
        got = (fa.unpack_dual(r.min).tangent, fa.unpack_dual(r.max).tangent)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tfa.dual_level():
            r = torch.aminmax(tfa.make_dual(tx, tt), dim=1)
            want = (tfa.unpack_dual(r.min).tangent, tfa.unpack_dual(r.max).tangent)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-14)
    xg = x.clone().requires_grad_()
    assert rgrad.autograd.gradcheck(lambda v: rgrad.aminmax(v, dim=0), (xg,))
    assert rgrad.autograd.gradgradcheck(lambda v: rgrad.aminmax(v, dim=0), (xg,))


@pytest.mark.parametrize("call", [
    lambda m, x: m.linalg.vector_norm(x),
    lambda m, x: m.linalg.vector_norm(x, 0),
    lambda m, x: m.linalg.vector_norm(x, 1, dim=1),
    lambda m, x: m.linalg.vector_norm(x, -INF, dim=(0, 1), keepdim=True),
    lambda m, x: m.linalg.vector_norm(x, 3.5),
    lambda m, x: m.linalg.vector_norm(x, dtype=m.float64),
    lambda m, x: m.linalg.matrix_norm(x),
    lambda m, x: m.linalg.matrix_norm(x, 1),
    lambda m, x: m.linalg.matrix_norm(x, -1),
    lambda m, x: m.linalg.matrix_norm(x, INF, keepdim=True),
    lambda m, x: m.linalg.matrix_norm(x, -INF),
    lambda m, x: m.linalg.norm(x),
    lambda m, x: m.linalg.norm(x, "fro"),
    lambda m, x: m.linalg.norm(x, INF),
    lambda m, x: m.linalg.norm(x, dim=1),
    lambda m, x: m.linalg.norm(x, 3, dim=0),
    lambda m, x: m.linalg.norm(x[0], 1),
    lambda m, x: m.linalg.vecdot(x, x),
    lambda m, x: m.linalg.vecdot(x, x[0], dim=-1),
])
def test_norms_and_vecdot_are_torchs(call):
    x, tx = _pair((3, 4), 17, "float32", grad=True)
    y, ty = call(rgrad, x), call(torch, tx)
    assert y.dtype.is_floating_point and str(y.dtype)[6:] == str(ty.dtype)[6:]
    assert tuple(y.shape) == tuple(ty.shape)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-6)
    assert y.grad_fn.name() == ty.grad_fn.name()
    y.sum().backward()
    ty.sum().backward()
    if tx.grad is None:  # (ord 0, a count: no gradient)
        assert x.grad is None
        return
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("call", [
    lambda m, x: m.linalg.vector_norm(x.long()),
    lambda m, x: m.linalg.vector_norm(x, "fro"),
    lambda m, x: m.linalg.matrix_norm(x[0]),
    lambda m, x: m.linalg.norm(x[0], "fro"),
    lambda m, x: m.linalg.norm(x.reshape(1, 3, 4), 1),
    lambda m, x: m.linalg.vecdot(x, x.double()),
])
def test_norm_errors_are_torchs(call):
    x, tx = _pair((3, 4), 18, "float32")
    with pytest.raises(Exception) as want:
        call(torch, tx)
    with pytest.raises(type(want.value)) as got:
        call(rgrad, x)
    assert str(got.value) == str(want.value)


def test_norms_that_need_singular_values_match_torch():
    # (rgrad.linalg's SVD: tests/test_linalg_spectral.py checks their nodes and gradients)
    x, tx = _pair((3, 4), 21)
    for o in ("nuc", 2, -2):
        assert np.allclose(rgrad.linalg.matrix_norm(x, o).item(), torch.linalg.matrix_norm(tx, o).item(),
                           rtol=1e-12, atol=0)


def test_vmap_and_per_sample_grads_through_cross_dist_and_aminmax():
    from rgrad.func import grad, vmap

    a, ta = _pair((5, 3), 19)
    b, tb = _pair((3,), 20)
    assert _bits(vmap(lambda v: rgrad.linalg.cross(v, b))(a)) == _bits(rgrad.linalg.cross(a, b.expand(5, 3)))
    assert _bits(vmap(lambda v: b.cross(v, 0))(a)) == _bits(rgrad.linalg.cross(b.expand(5, 3), a))
    r = vmap(lambda v: rgrad.aminmax(v))(a)
    assert _bits(r[0]) == _bits(a.amin(1)) and _bits(r[1]) == _bits(a.amax(1))
    assert _bits(vmap(lambda v: v.dist(b))(a)) == _bits((a - b).norm(2, 1))

    def loss(w, x):
        return rgrad.dist(rgrad.linalg.cross(x, w), x) + rgrad.aminmax(x * w).max

    def tloss(w, x):
        return torch.dist(torch.linalg.cross(x, w), x) + torch.aminmax(x * w).max

    got = vmap(grad(loss), in_dims=(None, 0))(b, a)
    want = torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0))(tb, ta)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
