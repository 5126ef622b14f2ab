"""linalg.lstsq, triangular_solve, geqrf, linalg.householder_product / orgqr, ormqr,
Tensor.fill_diagonal_ and the removed torch.lstsq against torch: values (float32 and
float64, batches, broadcasting), return types, nodes, gradients (and double backward),
errors, warnings and vmap. op_db.py's rows check the same ops against finite differences.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import rgrad
from rgrad import _linalg_more

torch = pytest.importorskip("torch")


def _np(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def _pair(a, dtype="float64", grad=False):
    a = np.asarray(a, dtype=np.float64)
    r = rgrad.from_numpy(a.copy()).to(getattr(rgrad, dtype)).requires_grad_(grad)
    t = torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=grad)
    return r, t


def _close(r, t, tol=1e-10):
    if isinstance(t, torch.Tensor):
        assert tuple(r.shape) == tuple(t.shape), (tuple(r.shape), tuple(t.shape))
        assert str(r.dtype).split(".")[1] == str(t.dtype).split(".")[1]
        np.testing.assert_allclose(np.asarray(r.detach().tolist(), dtype=np.float64).reshape(tuple(t.shape)),
                                   t.detach().double().numpy(), rtol=tol, atol=tol)
    else:
        assert len(r) == len(t)
        for x, y in zip(r, t):
            _close(x, y, tol)


def _outcome(fn):
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001  (the error is what is compared)
        return type(e).__name__, str(e)


def _same_error(rfn, tfn):
    got, want = _outcome(rfn), _outcome(tfn)
    assert want[0] != "ok", want
    assert got[0] == want[0] and got[1] == want[1], (got, want)


def _tri(shape, seed, upper=True):
    a = _np(shape, seed) + 3 * np.eye(shape[-1])
    return np.triu(a) if upper else np.tril(a)


@pytest.fixture(autouse=True)
def _no_deprecation_noise():
    # triangular_solve's once-only deprecation warning: test_triangular_solve_warns checks it
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="torch.triangular_solve is deprecated", category=UserWarning)
        yield


# ---- triangular_solve ----------------------------------------------------------------------

TS_CASES = [
    ((3, 2), (3, 3), {}),
    ((3, 2), (3, 3), {"upper": False}),
    ((3, 4), (3, 3), {"transpose": True}),
    ((3, 2), (3, 3), {"upper": False, "transpose": True, "unitriangular": True}),
    ((2, 1, 3, 2), (4, 3, 3), {}),
    ((3, 1), (2, 3, 3), {"upper": False}),
    ((0, 2), (0, 0), {}),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bshape,ashape,kw", TS_CASES)
def test_triangular_solve_values(bshape, ashape, kw, dtype):
    b, tb = _pair(_np(bshape, 1), dtype)
    a, ta = _pair(_tri(ashape, 2, kw.get("upper", True)) + 0.1 * _np(ashape, 3), dtype)
    r = rgrad.triangular_solve(b, a, **kw)
    t = torch.triangular_solve(tb, ta, **kw)
    assert type(r).__name__ == type(t).__name__ == "triangular_solve"
    assert type(r).__match_args__ == type(t).__match_args__
    tol = 1e-4 if dtype == "float32" else 1e-10
    _close(tuple(r), tuple(t), tol)
    _close(tuple(b.triangular_solve(a, **kw)), tuple(tb.triangular_solve(ta, **kw)), tol)
    assert repr(r).startswith("rgrad.return_types.triangular_solve(\nsolution=")


@pytest.mark.parametrize("bshape,ashape,kw", TS_CASES[:6])
def test_triangular_solve_grad(bshape, ashape, kw):
    b, tb = _pair(_np(bshape, 4), grad=True)
    a, ta = _pair(_tri(ashape, 5, kw.get("upper", True)) + 0.1 * _np(ashape, 6), grad=True)
    r = rgrad.triangular_solve(b, a, **kw)
    t = torch.triangular_solve(tb, ta, **kw)
    assert r.solution.grad_fn.name() == type(t.solution.grad_fn).__name__ == "TriangularSolveBackward0"
    assert r.cloned_coefficient.grad_fn is r.solution.grad_fn
    ws, wc = _np(t.solution.shape, 7), _np(t.cloned_coefficient.shape, 8)
    (r.solution * rgrad.from_numpy(ws)).sum().add((r.cloned_coefficient * rgrad.from_numpy(wc)).sum()).backward()
    (t.solution * torch.from_numpy(ws)).sum().add((t.cloned_coefficient * torch.from_numpy(wc)).sum()).backward()
    _close((b.grad, a.grad), (tb.grad, ta.grad), 1e-9)

    def f(x, y):
        return tuple(rgrad.triangular_solve(x, y, **kw))

    inputs = (b.detach().requires_grad_(), a.detach().requires_grad_())
    assert rgrad.autograd.gradcheck(f, inputs)
    assert rgrad.autograd.gradgradcheck(f, inputs)


def test_triangular_solve_errors():
    f32 = {"dtype": "float32"}
    cases = [
        (_np(3, 0), _np((3, 3), 1), {}, {}),
        (_np((3, 2), 0), _np(3, 1), {}, {}),
        (_np((3, 2), 0), _np((3, 4), 1), {}, {}),
        (_np((4, 2), 0), _np((3, 3), 1), {}, {}),
        (_np((3, 2), 0), _np((3, 3), 1), f32, {}),
        (_np((2, 3, 2), 0), _np((4, 3, 3), 1), {}, {}),
    ]
    for bb, aa, bkw, kw in cases:
        b, tb = _pair(bb, **bkw)
        a, ta = _pair(aa)
        _same_error(lambda: rgrad.triangular_solve(b, a, **kw), lambda: torch.triangular_solve(tb, ta, **kw))
    b, tb = _pair(_np((3, 2), 0))
    a, ta = _pair(_np((3, 3), 1))
    _same_error(lambda: rgrad.triangular_solve(b.long(), a.long()),
                lambda: torch.triangular_solve(tb.long(), ta.long()))


def test_triangular_solve_warns_once_as_torch():
    code = ("import warnings, torch\nwith warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n    torch.triangular_solve(torch.eye(2), torch.eye(2))\n"
            "    torch.triangular_solve(torch.eye(2), torch.eye(2))\n"
            "print(len(w)); print(str(w[0].message).split(' (Triggered')[0], end='')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    count, message = out.split("\n", 1)
    _linalg_more._triangular_solve_warned = False
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        rgrad.triangular_solve(rgrad.eye(2), rgrad.eye(2))
        rgrad.triangular_solve(rgrad.eye(2), rgrad.eye(2))
    assert len(w) == int(count) == 1
    assert w[0].category is UserWarning and str(w[0].message) == message


# ---- geqrf / householder_product / orgqr / ormqr --------------------------------------------------

QR_SHAPES = [(4, 3), (3, 3), (3, 5), (2, 5, 3), (2, 2, 4, 4), (1, 1), (4, 1), (0, 3), (3, 0)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", QR_SHAPES)
def test_geqrf_values(shape, dtype):
    a, ta = _pair(_np(shape, 11), dtype)
    r, t = rgrad.geqrf(a), torch.geqrf(ta)
    assert type(r).__name__ == type(t).__name__ == "geqrf" and type(r).__match_args__ == type(t).__match_args__
    tol = 1e-4 if dtype == "float32" else 1e-10
    _close(tuple(r), tuple(t), tol)
    _close(tuple(a.geqrf()), tuple(ta.geqrf()), tol)
    assert repr(r).startswith("rgrad.return_types.geqrf(\na=")


def test_geqrf_zero_column_and_no_derivative():
    x = np.array([[0.0, 1.0], [0.0, 2.0], [0.0, -1.0]])
    a, ta = _pair(x)
    _close(tuple(rgrad.geqrf(a)), tuple(torch.geqrf(ta)))
    a, ta = _pair(_np((4, 3), 12), grad=True)
    r, t = rgrad.geqrf(a), torch.geqrf(ta)
    assert r.a.grad_fn.name() == type(t.a.grad_fn).__name__ == "GeqrfBackward0"
    assert r.tau.grad_fn is r.a.grad_fn and r.a.requires_grad and r.tau.requires_grad
    _same_error(lambda: r.a.sum().backward(), lambda: t.a.sum().backward())
    with rgrad.no_grad():
        assert rgrad.geqrf(a).a.grad_fn is None


def test_geqrf_errors():
    for x, conv in ((_np(3, 0), None), (_np((3, 3), 0), "long")):
        a, ta = _pair(x)
        if conv:
            a, ta = a.long(), ta.long()
        _same_error(lambda: rgrad.geqrf(a), lambda: torch.geqrf(ta))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,k", [((4, 3), 3), ((4, 3), 2), ((3, 3), 3), ((2, 5, 3), 3), ((5, 2), 0),
                                     ((2, 2, 4, 4), 4), ((1, 1), 1), ((0, 0), 0)])
def test_householder_product_values(shape, k, dtype):
    a, ta = _pair(_np(shape, 13), dtype)
    tau, ttau = _pair(_np((*shape[:-2], k), 14), dtype)
    tol = 1e-4 if dtype == "float32" else 1e-10
    _close(rgrad.linalg.householder_product(a, tau), torch.linalg.householder_product(ta, ttau), tol)
    _close(rgrad.orgqr(a, tau), torch.orgqr(ta, ttau), tol)
    _close(a.orgqr(tau), ta.orgqr(ttau), tol)
    # geqrf's reflectors give Q
    g, tg = rgrad.geqrf(a), torch.geqrf(ta)
    if shape[-2] >= shape[-1]:
        _close(rgrad.linalg.householder_product(*g), torch.linalg.householder_product(*tg), 10 * tol)


@pytest.mark.parametrize("shape,k", [((4, 3), 3), ((4, 3), 2), ((2, 3, 3), 3), ((3, 1), 1)])
def test_householder_product_grad(shape, k):
    a, ta = _pair(_np(shape, 15), grad=True)
    tau, ttau = _pair(_np((*shape[:-2], k), 16) * 0.5 + 1.0, grad=True)
    r, t = rgrad.linalg.householder_product(a, tau), torch.linalg.householder_product(ta, ttau)
    assert r.grad_fn.name() == type(t.grad_fn).__name__ == "LinalgHouseholderProductBackward0"
    assert rgrad.orgqr(a, tau).grad_fn.name() == "LinalgHouseholderProductBackward0"
    w = _np(t.shape, 17)
    (r * rgrad.from_numpy(w)).sum().backward()
    (t * torch.from_numpy(w)).sum().backward()
    _close((a.grad, tau.grad), (ta.grad, ttau.grad), 1e-9)
    inputs = (a.detach().requires_grad_(), tau.detach().requires_grad_())
    assert rgrad.autograd.gradcheck(rgrad.linalg.householder_product, inputs)
    assert rgrad.autograd.gradgradcheck(rgrad.linalg.householder_product, inputs)


def test_householder_product_errors():
    a, ta = _pair(_np((4, 3), 0))
    tau, ttau = _pair(_np(3, 1))
    cases = [
        (lambda m, x, t: m.linalg.householder_product(x.mT, t[:2]), None),
        (lambda m, x, t: m.linalg.householder_product(x, m.cat([t, t])), None),
        (lambda m, x, t: m.linalg.householder_product(x[0], t), None),
        (lambda m, x, t: m.linalg.householder_product(x, t.float()), None),
        (lambda m, x, t: m.linalg.householder_product(x.expand(2, 4, 3), t.expand(3, 3)), None),
        (lambda m, x, t: m.linalg.householder_product(x.expand(2, 4, 3), t), None),
        (lambda m, x, t: m.linalg.householder_product(x.long(), t.long()), None),
    ]
    for fn, _ in cases:
        _same_error(lambda: fn(rgrad, a, tau), lambda: fn(torch, ta, ttau))


ORMQR_CASES = [
    ((4, 3), 3, (4, 2), {}),
    ((4, 3), 3, (4, 2), {"transpose": True}),
    ((4, 3), 3, (2, 4), {"left": False}),
    ((4, 3), 3, (5, 4), {"left": False, "transpose": True}),
    ((4, 4), 4, (2, 4), {"left": False}),
    ((5, 2), 2, (5, 3), {}),
    ((2, 4, 3), 3, (2, 4, 5), {"transpose": True}),
    ((2, 3, 3), 3, (2, 2, 3), {"left": False}),
    ((3, 0), 0, (3, 2), {}),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("ashape,k,cshape,kw", ORMQR_CASES)
def test_ormqr_values(ashape, k, cshape, kw, dtype):
    a, ta = _pair(_np(ashape, 21), dtype)
    tau, ttau = _pair(_np((*ashape[:-2], k), 22), dtype)
    c, tc = _pair(_np(cshape, 23), dtype)
    tol = 1e-4 if dtype == "float32" else 1e-10
    _close(rgrad.ormqr(a, tau, c, **kw), torch.ormqr(ta, ttau, tc, **kw), tol)
    _close(a.ormqr(tau, c, **kw), ta.ormqr(ttau, tc, **kw), tol)


@pytest.mark.parametrize("ashape,k,cshape,kw", ORMQR_CASES[:8])
def test_ormqr_grad(ashape, k, cshape, kw):
    a, ta = _pair(_np(ashape, 24), grad=True)
    tau, ttau = _pair(_np((*ashape[:-2], k), 25) * 0.5 + 1.0, grad=True)
    c, tc = _pair(_np(cshape, 26), grad=True)
    r, t = rgrad.ormqr(a, tau, c, **kw), torch.ormqr(ta, ttau, tc, **kw)
    assert r.grad_fn.name() == type(t.grad_fn).__name__ == "OrmqrBackward0"
    w = _np(t.shape, 27)
    (r * rgrad.from_numpy(w)).sum().backward()
    (t * torch.from_numpy(w)).sum().backward()
    _close((a.grad, tau.grad, c.grad), (ta.grad, ttau.grad, tc.grad), 1e-9)

    def f(x, y, z):
        return rgrad.ormqr(x, y, z, **kw)

    inputs = tuple(x.detach().requires_grad_() for x in (a, tau, c))
    assert rgrad.autograd.gradcheck(f, inputs)
    assert rgrad.autograd.gradgradcheck(f, inputs)


def test_ormqr_errors():
    a, ta = _pair(_np((4, 3), 0))
    tau, ttau = _pair(_np(3, 1))
    c, tc = _pair(_np((4, 2), 2))
    cases = [
        lambda m, x, t, y: m.ormqr(x, t, y[:3]),
        lambda m, x, t, y: m.ormqr(x, t, y[:, :1].mT.expand(2, 3), left=False),
        lambda m, x, t, y: m.ormqr(x, t, y[:2].mT[:1], left=False),
        lambda m, x, t, y: m.ormqr(x, t, y.float()),
        lambda m, x, t, y: m.ormqr(x, t.float(), y),
        lambda m, x, t, y: m.ormqr(x, t, y[0]),
        lambda m, x, t, y: m.ormqr(x[0], t, y),
        lambda m, x, t, y: m.ormqr(x, t[:2], y),
        lambda m, x, t, y: m.ormqr(x, m.cat([t, t]), y),
        lambda m, x, t, y: m.ormqr(x.expand(2, 4, 3), t.expand(2, 3), y),
        lambda m, x, t, y: m.ormqr(x, t, y.expand(2, 4, 2)),
        lambda m, x, t, y: m.ormqr(x.expand(2, 4, 3), t.expand(3, 3), y.expand(2, 4, 2)),
        lambda m, x, t, y: m.ormqr(x.expand(2, 4, 3), t.expand(2, 3), y.expand(3, 4, 2)),
        lambda m, x, t, y: m.ormqr(x, t, y, t),
        lambda m, x, t, y: m.ormqr(x.long(), t.long(), y.long()),
    ]
    for fn in cases:
        _same_error(lambda: fn(rgrad, a, tau, c), lambda: fn(torch, ta, ttau, tc))


# ---- lstsq ------------------------------------------------------------------------------

LSTSQ_CASES = [
    ((5, 3), (5, 2)),
    ((3, 3), (3, 2)),
    ((3, 5), (3, 2)),
    ((5, 3), (5,)),
    ((3, 5), (3,)),
    ((2, 5, 3), (2, 5, 4)),
    ((2, 1, 5, 3), (1, 4, 5, 2)),
    ((3, 5, 3), (3, 5)),
    ((2, 4, 3), (4, 2)),
    ((0, 3), (0, 2)),
    ((3, 0), (3, 2)),
    ((2, 0, 2), (2, 0, 1)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("ashape,bshape", LSTSQ_CASES)
def test_lstsq_values(ashape, bshape, driver, dtype):
    a, ta = _pair(_np(ashape, 31), dtype)
    b, tb = _pair(_np(bshape, 32), dtype)
    got, want = _outcome(lambda: rgrad.linalg.lstsq(a, b, driver=driver)), \
        _outcome(lambda: torch.linalg.lstsq(ta, tb, driver=driver))
    assert got[0] == want[0], (got, want)
    if want[0] != "ok":
        assert got[1] == want[1]
        return
    r, t = got[1], want[1]
    assert type(r).__name__ == type(t).__name__ == "linalg_lstsq" and type(r).__match_args__ == type(t).__match_args__
    tol = 2e-4 if dtype == "float32" else 1e-9
    _close(tuple(r), tuple(t), tol)
    assert r.rank.dtype == rgrad.int64
    assert repr(r).startswith("rgrad.return_types.linalg_lstsq(\nsolution=")


@pytest.mark.parametrize("driver", [None, "gels", "gelsd", "gelss"])
def test_lstsq_rank_deficient_and_rcond(driver):
    x = _np((5, 2), 33) @ _np((2, 3), 34)
    a, ta = _pair(x)
    b, tb = _pair(_np((5, 2), 35))
    r, t = rgrad.linalg.lstsq(a, b, driver=driver), torch.linalg.lstsq(ta, tb, driver=driver)
    if driver == "gels":  # (torch's gels assumes full rank: only the shapes compare)
        assert [tuple(v.shape) for v in r] == [tuple(v.shape) for v in t]
    else:
        _close(tuple(r), tuple(t), 1e-8)
    near = x + 1e-6 * _np((5, 3), 36)
    a, ta = _pair(near)
    # (0.5 drops a singular value of 0.47: gelsy's truncation of its pivoted QR is not the
    # SVD's, which rgrad gives for every driver; docs/ops.md)
    for rcond in (None, 1e-3, 1e-8) if driver is None else (None, 1e-3, 1e-8, 0.5):
        if driver == "gels":
            continue
        r = rgrad.linalg.lstsq(a, b, rcond, driver=driver)
        t = torch.linalg.lstsq(ta, tb, rcond, driver=driver)
        _close(tuple(r)[2:], tuple(t)[2:], 1e-8)
        _close(r.solution, t.solution, 1e-6 * max(1.0, float(t.solution.abs().max())))


@pytest.mark.parametrize("driver", [None, "gelsd"])
@pytest.mark.parametrize("ashape,bshape", [((5, 3), (5, 2)), ((3, 5), (3, 2)), ((5, 3), (5,)), ((2, 4, 3), (2, 4, 2)),
                                           ((2, 1, 4, 3), (1, 2, 4, 1))])
def test_lstsq_grad(ashape, bshape, driver):
    a, ta = _pair(_np(ashape, 41), grad=True)
    b, tb = _pair(_np(bshape, 42), grad=True)
    r, t = rgrad.linalg.lstsq(a, b, driver=driver), torch.linalg.lstsq(ta, tb, driver=driver)
    assert r.solution.grad_fn.name() == type(t.solution.grad_fn).__name__ == "LinalgLstsqBackward0"
    assert r.residuals.grad_fn is r.solution.grad_fn and t.residuals.grad_fn is t.solution.grad_fn
    assert r.rank.grad_fn is None and not r.singular_values.requires_grad
    loss_r = (r.solution * rgrad.from_numpy(_np(t.solution.shape, 43))).sum()
    loss_t = (t.solution * torch.from_numpy(_np(t.solution.shape, 43))).sum()
    if t.residuals.numel():
        loss_r = loss_r + (r.residuals * rgrad.from_numpy(_np(t.residuals.shape, 44))).sum()
        loss_t = loss_t + (t.residuals * torch.from_numpy(_np(t.residuals.shape, 44))).sum()
    loss_r.backward()
    loss_t.backward()
    _close((a.grad, b.grad), (ta.grad, tb.grad), 1e-8)

    def f(x, y):
        out = rgrad.linalg.lstsq(x, y, driver=driver)
        return (out.solution, out.residuals) if out.residuals.numel() else out.solution

    inputs = (a.detach().requires_grad_(), b.detach().requires_grad_())
    assert rgrad.autograd.gradcheck(f, inputs)
    assert rgrad.autograd.gradgradcheck(f, inputs)


def test_lstsq_errors_and_removed_lstsq():
    a, ta = _pair(_np((5, 3), 0))
    b, tb = _pair(_np((5, 2), 1))
    cases = [
        lambda m, x, y, **kw: m.linalg.lstsq(x[0], y[0]),
        lambda m, x, y, **kw: m.linalg.lstsq(x, y[0]),
        lambda m, x, y, **kw: m.linalg.lstsq(x, y.expand(2, 5, 2)),
        lambda m, x, y, **kw: m.linalg.lstsq(x, y.float()),
        lambda m, x, y, **kw: m.linalg.lstsq(x, y[:4]),
        lambda m, x, y, **kw: m.linalg.lstsq(x.long(), y.long()),
        lambda m, x, y, **kw: m.linalg.lstsq(x, y, driver="foo"),
        lambda m, x, y, **kw: m.linalg.lstsq(x, y, driver=5),
        lambda m, x, y, **kw: m.linalg.lstsq(x.expand(4, 5, 3), y),
        lambda m, x, y, **kw: m.linalg.lstsq(x.expand(2, 5, 3), y.expand(3, 5, 2)),
        lambda m, x, y, **kw: m.lstsq(y, x),
        lambda m, x, y, **kw: y.lstsq(x),
    ]
    for fn in cases:
        _same_error(lambda: fn(rgrad, a, b), lambda: fn(torch, ta, tb))


# ---- fill_diagonal_ ----------------------------------------------------------------------------


@pytest.mark.parametrize("shape,value,wrap", [((3, 3), 5.0, False), ((7, 3), 2.0, True), ((7, 3), 2.0, False),
                                              ((3, 7), 1.5, True), ((3, 3, 3), -1, False), ((4, 4), 3, True),
                                              ((5, 4), 1.0, True), ((1, 1), 2.0, False), ((0, 0), 1.0, True)])
def test_fill_diagonal_values(shape, value, wrap):
    for dtype in ("float32", "float64"):
        r, t = _pair(_np(shape, 51), dtype)
        assert r.fill_diagonal_(value, wrap=wrap) is r
        t.fill_diagonal_(value, wrap=wrap)
        _close(r, t, 0.0)
    r, t = _pair(_np(shape, 51))
    r, t = r.long(), t.long()
    r.fill_diagonal_(value, wrap)
    t.fill_diagonal_(value, wrap)
    assert r.tolist() == t.tolist()
    # a non-contiguous view
    r, t = _pair(_np((shape[0] + 1, *shape[1:]), 52))
    rv, tv = r.narrow(0, 1, shape[0]), t.narrow(0, 1, shape[0])
    rv.fill_diagonal_(value, wrap=wrap)
    tv.fill_diagonal_(value, wrap=wrap)
    _close(r, t, 0.0)


def test_fill_diagonal_grad_and_errors():
    x, tx = _pair(_np((4, 3), 53), grad=True)
    y, ty = x * 2, tx * 2
    y.fill_diagonal_(1.0, wrap=True)
    ty.fill_diagonal_(1.0, wrap=True)
    assert y.grad_fn.name() == ty.grad_fn.name() == "torch::autograd::CopySlices"
    y.sum().backward()
    ty.sum().backward()
    _close(x.grad, tx.grad, 0.0)
    _same_error(lambda: x.fill_diagonal_(1.0), lambda: tx.fill_diagonal_(1.0))
    for shape in ((3,), (3, 3, 4), ()):
        r, t = _pair(np.zeros(shape))
        _same_error(lambda: r.fill_diagonal_(1.0), lambda: t.fill_diagonal_(1.0))


# ---- ldl_factor / ldl_factor_ex / ldl_solve ---------------------------------------------------


def _sym_ldl(shape, seed, diag_scale):
    a = _np(shape, seed)
    a = a + np.swapaxes(a, -1, -2)
    n = shape[-1]
    return a * np.where(np.eye(n) > 0, diag_scale, 1.0)


def _close_int(r, t):
    # (pivots and info: int64 here, int32 in torch)
    assert tuple(r.shape) == tuple(t.shape) and r.dtype == rgrad.int64 and t.dtype == torch.int32
    assert r.tolist() == t.tolist()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,diag_scale", [((4, 4), 1.0), ((5, 5), 0.01), ((6, 6), 0.0), ((8, 8), 0.001),
                                              ((2, 5, 5), 0.05), ((2, 2, 3, 3), 1.0), ((1, 1), 1.0), ((0, 0), 1.0),
                                              ((2, 0, 0), 1.0)])
def test_ldl_factor_and_solve(shape, diag_scale, dtype):
    a, ta = _pair(_sym_ldl(shape, 81, diag_scale), dtype)
    tol = 1e-4 if dtype == "float32" else 1e-10
    for hermitian in (False, True):
        r, t = rgrad.linalg.ldl_factor_ex(a, hermitian=hermitian), torch.linalg.ldl_factor_ex(ta, hermitian=hermitian)
        assert type(r).__name__ == type(t).__name__ and type(r).__match_args__ == type(t).__match_args__
        _close(r.LD, t.LD, tol)
        _close_int(r.pivots, t.pivots)
        _close_int(r.info, t.info)
        r2, t2 = rgrad.linalg.ldl_factor(a, hermitian=hermitian), torch.linalg.ldl_factor(ta, hermitian=hermitian)
        assert type(r2).__name__ == type(t2).__name__ == "linalg_ldl_factor"
        _close(r2.LD, t2.LD, tol)
        # (torch's ldl_solve crashes when B's batch broadcasts LD's batch of more than one)
        for bshape in ((shape[-1], 3), (*shape[:-1], 2)) + (((3, shape[-1], 1),) if len(shape) == 2 else ()):
            b, tb = _pair(_np(bshape, 82), dtype)
            _close(rgrad.linalg.ldl_solve(r.LD, r.pivots, b, hermitian=hermitian),
                   torch.linalg.ldl_solve(t.LD, t.pivots, tb, hermitian=hermitian), 10 * tol)
    assert repr(rgrad.linalg.ldl_factor(a)).startswith("rgrad.return_types.linalg_ldl_factor(\nLD=")


def test_ldl_errors_and_no_derivative():
    z, tz = _pair(np.zeros((3, 3)))
    _same_error(lambda: rgrad.linalg.ldl_factor(z), lambda: torch.linalg.ldl_factor(tz))
    _same_error(lambda: rgrad.linalg.ldl_factor_ex(z, check_errors=True),
                lambda: torch.linalg.ldl_factor_ex(tz, check_errors=True))
    zb, tzb = _pair(np.zeros((2, 3, 3)))
    _same_error(lambda: rgrad.linalg.ldl_factor(zb), lambda: torch.linalg.ldl_factor(tzb))
    for x in (_np(3, 0), _np((3, 4), 0)):
        a, ta = _pair(x)
        _same_error(lambda: rgrad.linalg.ldl_factor(a), lambda: torch.linalg.ldl_factor(ta))
        _same_error(lambda: rgrad.linalg.ldl_factor(a.long()), lambda: torch.linalg.ldl_factor(ta.long()))
    a, ta = _pair(_sym_ldl((4, 4), 83, 1.0))
    r, t = rgrad.linalg.ldl_factor(a), torch.linalg.ldl_factor(ta)
    ld, piv, tld, tpiv = r.LD, r.pivots, t.LD, t.pivots.long()
    b, tb = _pair(_np((4, 2), 84))
    cases = [
        lambda m, l, p, y: m.linalg.ldl_solve(l, p, y.float()),
        lambda m, l, p, y: m.linalg.ldl_solve(l, p.double(), y),
        lambda m, l, p, y: m.linalg.ldl_solve(l, p[:3], y),
        lambda m, l, p, y: m.linalg.ldl_solve(l[:3], p, y),
        lambda m, l, p, y: m.linalg.ldl_solve(l[0], p, y),
        lambda m, l, p, y: m.linalg.ldl_solve(l, p, y[:3]),
        lambda m, l, p, y: m.linalg.ldl_solve(l.expand(2, 4, 4), p, y.expand(2, 4, 2)),
        lambda m, l, p, y: m.linalg.ldl_solve(l.long(), p, y.long()),
    ]
    for fn in cases:
        _same_error(lambda: fn(rgrad, ld, piv, b), lambda: fn(torch, tld, tpiv, tb))
    # batches broadcast
    _close(rgrad.linalg.ldl_solve(ld.expand(2, 4, 4), piv.expand(2, 4), b),
           torch.linalg.ldl_solve(tld.expand(2, 4, 4), tpiv.expand(2, 4), tb))
    # no derivative: a NotImplemented node whose backward raises
    a, ta = _pair(_sym_ldl((4, 4), 85, 1.0), grad=True)
    r, t = rgrad.linalg.ldl_factor_ex(a), torch.linalg.ldl_factor_ex(ta)
    assert r.LD.grad_fn.name() == t.LD.grad_fn.name() == "torch::autograd::NotImplemented"
    assert r.pivots.requires_grad is t.pivots.requires_grad is False
    _same_error(lambda: r.LD.sum().backward(), lambda: t.LD.sum().backward())
    b, tb = _pair(_np((4, 2), 86), grad=True)
    x = rgrad.linalg.ldl_solve(r.LD.detach(), r.pivots, b)
    tx = torch.linalg.ldl_solve(t.LD.detach(), t.pivots, tb)
    assert x.grad_fn.name() == tx.grad_fn.name()
    _same_error(lambda: x.sum().backward(), lambda: tx.sum().backward())


def _saved(fn):
    return sorted(f for f in dir(fn) if f.startswith("_saved"))


def test_saved_fields_as_torch():
    a, ta = _pair(_np((4, 3), 71), grad=True)
    b, tb = _pair(_np((4, 2), 72), grad=True)
    tri, ttri = _pair(_tri((4, 4), 73), grad=True)
    tau, ttau = _pair(_np(3, 74), grad=True)
    pairs = [
        (rgrad.linalg.lstsq(a, b).solution, torch.linalg.lstsq(ta, tb).solution),
        (rgrad.triangular_solve(b, tri).solution, torch.triangular_solve(tb, ttri).solution),
        (rgrad.linalg.householder_product(a, tau), torch.linalg.householder_product(ta, ttau)),
        (rgrad.ormqr(a, tau, b, True, True), torch.ormqr(ta, ttau, tb, True, True)),
        (rgrad.geqrf(a).a, torch.geqrf(ta).a),
    ]
    for r, t in pairs:
        assert _saved(r.grad_fn) == _saved(t.grad_fn)
    r, t = pairs[3]
    assert r.grad_fn._saved_left is t.grad_fn._saved_left and r.grad_fn._saved_transpose is t.grad_fn._saved_transpose
    _close(r.grad_fn._saved_result, t.grad_fn._saved_result)
    _close(pairs[2][0].grad_fn._saved_result, pairs[2][1].grad_fn._saved_result)


# ---- vmap ----------------------------------------------------------------------------------------


def _loop(fn, *xs):
    return rgrad.stack([fn(*(x[i] for x in xs)) for i in range(xs[0].shape[0])])


def test_vmap_ldl_mixed_and_nested():
    vmap = rgrad.func.vmap
    a = rgrad.from_numpy(_sym_ldl((2, 3, 4, 4), 66, 0.01))
    b = rgrad.from_numpy(_np((4, 2), 67))
    ld, piv = rgrad.linalg.ldl_factor(a)
    # LD batched, B not; two levels
    got = vmap(vmap(lambda x, p: rgrad.linalg.ldl_solve(x, p, b)))(ld, piv)
    want = torch.linalg.ldl_solve(torch.from_numpy(np.asarray(ld.tolist())), torch.tensor(piv.tolist()),
                                  torch.from_numpy(_np((4, 2), 67)))
    _close(got, want, 1e-10)
    got = vmap(vmap(rgrad.linalg.ldl_factor))(a)
    assert type(got).__name__ == "linalg_ldl_factor"
    assert got.LD.tolist() == ld.tolist() and got.pivots.tolist() == piv.tolist() and got.pivots.dtype == rgrad.int64
    # an empty batch
    pairs = ((rgrad.linalg.ldl_factor, torch.linalg.ldl_factor),
             (rgrad.linalg.ldl_factor_ex, torch.linalg.ldl_factor_ex))
    for f, tf in pairs:
        r = vmap(f)(rgrad.zeros(0, 3, 3, dtype=rgrad.float64))
        t = torch.vmap(tf)(torch.zeros(0, 3, 3, dtype=torch.float64))
        assert [tuple(x.shape) for x in r] == [tuple(x.shape) for x in t]


def test_vmap_matches_a_loop():
    vmap = rgrad.func.vmap
    a = rgrad.from_numpy(_np((3, 4, 3), 61))
    tau = rgrad.from_numpy(_np((3, 3), 62))
    c = rgrad.from_numpy(_np((3, 4, 2), 63))
    tri = rgrad.from_numpy(_tri((3, 4, 4), 64))
    cases = [
        (lambda x, t: rgrad.linalg.householder_product(x, t), (a, tau)),
        (lambda x, t, y: rgrad.ormqr(x, t, y, transpose=True), (a, tau, c)),
        (lambda x, t, y: rgrad.ormqr(x, t, y.mT, left=False), (a, tau, c)),
        (lambda y, x: rgrad.triangular_solve(y, x).solution, (c, tri)),
        (lambda y, x: rgrad.triangular_solve(y, x, upper=False, transpose=True).cloned_coefficient, (c, tri)),
        (lambda x, y: rgrad.linalg.lstsq(x, y).solution, (a, c)),
        (lambda x, y: rgrad.linalg.lstsq(x, y, driver="gelsd").residuals, (a, c)),
        (lambda x: rgrad.geqrf(x).a, (a,)),
        (lambda x: rgrad.geqrf(x).tau, (a,)),
        (lambda x: rgrad.linalg.ldl_factor(x + x.mT).LD, (tri,)),
        (lambda x: rgrad.linalg.ldl_factor_ex(x + x.mT).pivots, (tri,)),
        (lambda x, y: rgrad.linalg.ldl_solve(*rgrad.linalg.ldl_factor(x + x.mT), y), (tri, c)),
    ]
    for fn, xs in cases:
        got, want = vmap(fn)(*xs), _loop(fn, *xs)
        assert tuple(got.shape) == tuple(want.shape) and got.dtype == want.dtype
        np.testing.assert_allclose(np.asarray(got.tolist()), np.asarray(want.tolist()), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("shape,wrap", [((5, 4), False), ((7, 2), True), ((6, 3), True), ((2, 5), True),
                                        ((3, 3, 3), False)])
def test_vmap_fill_diagonal(shape, wrap):
    x = rgrad.from_numpy(_np((3, *shape), 65))

    def fn(y):
        return y.clone().fill_diagonal_(2.0, wrap=wrap)

    got = rgrad.func.vmap(fn)(x)
    want = torch.from_numpy(_np((3, *shape), 65))
    for t in want:
        t.fill_diagonal_(2.0, wrap=wrap)
    assert got.tolist() == want.tolist()
