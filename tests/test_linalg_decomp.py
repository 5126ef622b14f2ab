"""The LU and Cholesky families (det, slogdet, logdet, inv, solve, cholesky, cholesky_solve,
cholesky_inverse, solve_triangular, lu_factor, lu_solve) against torch: values, return
types, nodes and saved fields, gradients (and double backward), forward AD, vmap, errors
(LinAlgError with torch's words), and threads.

Values are close to torch's, not its bits: the factorizations compute in float64 (torch's
LAPACK in the input's precision). op_db.py's rows check the same ops against finite
differences.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")
# torch's make_dual loads its jvp decompositions, which warn about torch.jit.script
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")


def _pair(a, dtype="float64", grad=False):
    a = np.array(a, dtype=np.float64)
    r = rgrad.from_numpy(a.copy()).to(getattr(rgrad, dtype)).requires_grad_(grad)
    t = torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=grad)
    return r, t


def _wc(shape, seed):
    """Well-conditioned square matrices."""
    n = shape[-1]
    return np.random.default_rng(seed).standard_normal(shape) + n * np.eye(n)


def _spd(shape, seed):
    a = np.random.default_rng(seed).standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def _close(r, t, tol=1e-10):
    if isinstance(t, torch.Tensor):
        assert tuple(r.shape) == tuple(t.shape)
        assert str(r.dtype).split(".")[1] == str(t.dtype).split(".")[1] or t.dtype == torch.int32
        np.testing.assert_allclose(np.asarray(r.detach().tolist(), dtype=np.float64),
                                   t.detach().double().numpy(), rtol=tol, atol=tol)
    else:
        assert len(r) == len(t)
        for x, y in zip(r, t):
            _close(x, y, tol)


def _saved(fn):
    return sorted(f for f in dir(fn) if f.startswith("_saved"))


# (name, rgrad fn, torch fn, makers of the inputs)
CASES = [
    ("det", lambda m, a: m.linalg.det(a), [lambda: _wc((3, 3), 1)]),
    ("det_batch", lambda m, a: m.det(a), [lambda: _wc((2, 4, 4), 2)]),
    ("slogdet", lambda m, a: tuple(m.linalg.slogdet(a)), [lambda: -_wc((2, 3, 3), 3)]),
    ("logdet", lambda m, a: m.logdet(a), [lambda: _spd((3, 3), 4)]),
    ("inv", lambda m, a: m.linalg.inv(a), [lambda: _wc((2, 3, 3), 5)]),
    ("inverse", lambda m, a: a.inverse(), [lambda: _wc((4, 4), 6)]),
    ("solve", lambda m, a, b: m.linalg.solve(a, b), [lambda: _wc((2, 3, 3), 7), lambda: np.random.default_rng(8).standard_normal((3, 2))]),
    ("solve_vec", lambda m, a, b: m.linalg.solve(a, b), [lambda: _wc((3, 3), 9), lambda: np.arange(3.0)]),
    ("solve_batched_vec", lambda m, a, b: m.linalg.solve(a, b), [lambda: _wc((2, 3, 3), 9), lambda: np.random.default_rng(1).standard_normal((2, 3))]),
    ("solve_right", lambda m, a, b: m.linalg.solve(a, b, left=False),
     [lambda: _wc((3, 3), 10), lambda: np.random.default_rng(1).standard_normal((4, 3))]),
    ("solve_broadcast", lambda m, a, b: m.linalg.solve(a, b),
     [lambda: _wc((2, 1, 3, 3), 11), lambda: np.random.default_rng(2).standard_normal((4, 3, 2))]),
    ("cholesky", lambda m, a: m.linalg.cholesky(a), [lambda: _spd((2, 4, 4), 12)]),
    ("cholesky_upper", lambda m, a: m.linalg.cholesky(a, upper=True), [lambda: _spd((3, 3), 13)]),
    ("cholesky_solve", lambda m, b, a: m.cholesky_solve(b, m.linalg.cholesky(a)),
     [lambda: np.random.default_rng(3).standard_normal((3, 2)), lambda: _spd((3, 3), 14)]),
    ("cholesky_solve_upper", lambda m, b, a: m.cholesky_solve(b, m.linalg.cholesky(a, upper=True), upper=True),
     [lambda: np.random.default_rng(4).standard_normal((2, 3, 2)), lambda: _spd((3, 3), 15)]),
    ("cholesky_inverse", lambda m, a: m.cholesky_inverse(m.linalg.cholesky(a)), [lambda: _spd((2, 3, 3), 16)]),
    ("solve_triangular", lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True),
     [lambda: _wc((3, 3), 17), lambda: np.random.default_rng(5).standard_normal((3, 4))]),
    ("solve_triangular_right_unit", lambda m, a, b: m.linalg.solve_triangular(a, b, upper=False, left=False,
                                                                              unitriangular=True),
     [lambda: _wc((2, 3, 3), 18), lambda: np.random.default_rng(6).standard_normal((4, 3))]),
    ("lu_factor", lambda m, a: tuple(m.linalg.lu_factor(a)), [lambda: np.random.default_rng(7).standard_normal((2, 4, 4))]),
    ("lu_factor_wide", lambda m, a: tuple(m.linalg.lu_factor(a)), [lambda: np.random.default_rng(8).standard_normal((3, 5))]),
    ("lu_factor_tall", lambda m, a: tuple(m.linalg.lu_factor(a)), [lambda: np.random.default_rng(9).standard_normal((5, 3))]),
    ("lu_solve", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b),
     [lambda: _wc((3, 3), 19), lambda: np.random.default_rng(10).standard_normal((3, 2))]),
    ("matrix_exp", lambda m, a: m.linalg.matrix_exp(a), [lambda: np.random.default_rng(12).standard_normal((2, 3, 3))]),
    ("matrix_exp_large_norm", lambda m, a: a.matrix_exp(), [lambda: 4 * np.random.default_rng(13).standard_normal((4, 4))]),
    ("lu", lambda m, a: tuple(m.linalg.lu(a)), [lambda: np.random.default_rng(14).standard_normal((2, 4, 4))]),
    ("lu_wide", lambda m, a: tuple(m.linalg.lu(a)), [lambda: np.random.default_rng(15).standard_normal((3, 5))]),
    ("lu_tall", lambda m, a: tuple(m.linalg.lu(a)), [lambda: np.random.default_rng(16).standard_normal((5, 3))]),
    ("lu_unpack", lambda m, a: tuple(m.lu_unpack(*m.linalg.lu_factor(a)))[1:],
     [lambda: np.random.default_rng(17).standard_normal((2, 3, 4))]),
    ("lu_solve_adjoint_right", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, left=False, adjoint=True),
     [lambda: _wc((2, 3, 3), 20), lambda: np.random.default_rng(11).standard_normal((4, 3))]),
]


def _outputs(x):
    return list(x) if isinstance(x, tuple) else [x]


@pytest.mark.parametrize("name, f, makers", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_values_nodes_and_gradients(name, f, makers, dtype):
    arrays = [mk() for mk in makers]
    pairs = [_pair(a, dtype, grad=True) for a in arrays]
    r = f(rgrad, *[p[0] for p in pairs])
    t = f(torch, *[p[1] for p in pairs])
    tol = 1e-9 if dtype == "float64" else 2e-4
    _close(r, t, tol)
    ro, to = _outputs(r), _outputs(t)
    for x, y in zip(ro, to):
        if y.grad_fn is None:
            assert x.grad_fn is None
            continue
        assert x.grad_fn.name() == y.grad_fn.name()
        assert _saved(x.grad_fn) == _saved(y.grad_fn)
    # gradients of a weighted sum of the differentiable outputs
    ws = [np.random.default_rng(i).standard_normal(tuple(y.shape)) for i, y in enumerate(to)]
    loss_r = sum((x * rgrad.tensor(w.tolist(), dtype=x.dtype)).sum() for x, y, w in zip(ro, to, ws)
                 if y.requires_grad)
    loss_t = sum((y * torch.tensor(w, dtype=y.dtype)).sum() for y, w in zip(to, ws) if y.requires_grad)
    gr = rgrad.autograd.grad(loss_r, [p[0] for p in pairs], allow_unused=True)
    gt = torch.autograd.grad(loss_t, [p[1] for p in pairs], allow_unused=True)
    for x, y in zip(gr, gt):
        assert (x is None) == (y is None)
        if y is not None:
            _close(x, y, 1e-8 if dtype == "float64" else 5e-3)


@pytest.mark.parametrize("name, f, makers", CASES, ids=[c[0] for c in CASES])
def test_double_backward_and_forward_ad_match_torch(name, f, makers):
    arrays = [mk() for mk in makers]
    pairs = [_pair(a, "float64", grad=True) for a in arrays]
    # double backward: the gradient's norm, differentiated again
    results = []
    for mod, ins in ((rgrad, [p[0] for p in pairs]), (torch, [p[1] for p in pairs])):
        outs = [o for o in _outputs(f(mod, *ins)) if o.requires_grad]
        loss = sum((o * o).sum() for o in outs)
        g = mod.autograd.grad(loss, ins, create_graph=True, allow_unused=True)
        total = sum((x * x).sum() for x in g if x is not None)
        results.append(mod.autograd.grad(total, ins, allow_unused=True))
    for x, y in zip(*results):
        assert (x is None) == (y is None)
        if y is not None:
            _close(x, y, 1e-7)
    # forward AD against torch's (and against central differences where torch's is wrong)
    tangents = [np.random.default_rng(30 + i).standard_normal(a.shape) for i, a in enumerate(arrays)]
    if name in TORCH_FORWAD_AD_WRONG:
        # (symmetric, so that the input read through one triangle moves as the tangent says)
        tangents = [t + np.swapaxes(t, -1, -2) for t in tangents]
    got = []
    for mod in (rgrad, torch):
        fa = mod.autograd.forward_ad
        with fa.dual_level():
            duals = [fa.make_dual(_pair(a)[mod is torch], _pair(t)[mod is torch]) for a, t in zip(arrays, tangents)]
            outs = _outputs(f(mod, *duals))
            got.append([fa.unpack_dual(o).tangent for o in outs])
    if name in TORCH_FORWAD_AD_WRONG:
        h = 1e-6
        plus = _outputs(f(rgrad, *[_pair(a + h * t)[0] for a, t in zip(arrays, tangents)]))
        minus = _outputs(f(rgrad, *[_pair(a - h * t)[0] for a, t in zip(arrays, tangents)]))
        for x, p, q in zip(got[0], plus, minus):
            fd = (np.asarray(p.tolist()) - np.asarray(q.tolist())) / (2 * h)
            np.testing.assert_allclose(np.asarray(x.tolist()), fd, rtol=1e-6, atol=1e-8)
        return
    for x, y in zip(*got):
        assert (x is None) == (y is None)
        if y is not None:
            _close(x, y, 1e-8)


# torch 2.15's forward derivative of cholesky_inverse disagrees with central differences
# (by 3e-4 on a 3 x 3 matrix); rgrad's, -X (dL Lᴴ + L dLᴴ) X, agrees with them
TORCH_FORWAD_AD_WRONG = {"cholesky_inverse"}


def test_vmap_matches_the_loop():
    a = rgrad.tensor(_wc((4, 3, 3), 40).tolist(), dtype=rgrad.float64)
    b = rgrad.tensor(np.random.default_rng(41).standard_normal((4, 3)).tolist(), dtype=rgrad.float64)
    s = rgrad.tensor(_spd((4, 3, 3), 42).tolist(), dtype=rgrad.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning: every op has its rule
        for fn, ins in [
            (rgrad.linalg.det, (a,)), (lambda x: rgrad.linalg.slogdet(x)[1], (a,)), (rgrad.linalg.inv, (a,)),
            (rgrad.linalg.solve, (a, b)), (rgrad.linalg.cholesky, (s,)), (rgrad.logdet, (s,)),
            (lambda x, y: rgrad.linalg.solve_triangular(x, y.unsqueeze(-1), upper=True), (a, b)),
            (lambda x: rgrad.linalg.lu_factor(x)[0], (a,)),
            (lambda x, y: rgrad.cholesky_solve(y.unsqueeze(-1), rgrad.linalg.cholesky(x)), (s, b)),
        ]:
            got = rgrad.func.vmap(fn)(*ins)
            want = rgrad.stack([fn(*(t[i] for t in ins)) for i in range(4)])
            np.testing.assert_allclose(np.asarray(got.tolist()), np.asarray(want.tolist()), rtol=1e-12, atol=1e-12)
        # an unbatched matrix against batched right-hand sides (the vector case on logical shapes)
        got = rgrad.func.vmap(lambda y: rgrad.linalg.solve(a[0], y))(b)
        want = rgrad.stack([rgrad.linalg.solve(a[0], b[i]) for i in range(4)])
        np.testing.assert_allclose(np.asarray(got.tolist()), np.asarray(want.tolist()), rtol=1e-12)


def test_per_sample_gradients_of_logdet():
    s = rgrad.tensor(_spd((5, 3, 3), 43).tolist(), dtype=rgrad.float64)
    g = rgrad.func.vmap(rgrad.func.grad(lambda x: rgrad.logdet(x)))(s)
    want = rgrad.linalg.inv(s).mT
    np.testing.assert_allclose(np.asarray(g.tolist()), np.asarray(want.tolist()), rtol=1e-10)


SING = np.ones((3, 3))
NPD = np.array([[1.0, 2.0], [2.0, 1.0]])
ERRORS = [
    lambda m: m.linalg.det(m.ones(2, 3)), lambda m: m.linalg.det(m.ones(3, 3, dtype=m.int64)),
    lambda m: m.linalg.det(m.ones(3)), lambda m: m.linalg.slogdet(m.ones(2, 3)), lambda m: m.det(m.ones(2, 3)),
    lambda m: m.logdet(m.ones(3, 3, dtype=m.int64)), lambda m: m.logdet(m.ones(2, 3)),
    lambda m: m.linalg.inv(m.tensor(SING.tolist())), lambda m: m.linalg.inv(m.stack([m.eye(3), m.tensor(SING.tolist())])),
    lambda m: m.linalg.inv(m.ones(2, 3)), lambda m: m.linalg.inv(m.ones(3, 3, dtype=m.int64)),
    lambda m: m.linalg.inv_ex(m.tensor(SING.tolist()), check_errors=True),
    lambda m: m.linalg.solve(m.tensor(SING.tolist()), m.eye(3)),
    lambda m: m.linalg.solve(m.stack([m.eye(3), m.tensor(SING.tolist())]), m.eye(3)),
    lambda m: m.linalg.solve(m.eye(3), m.ones(4, 2)), lambda m: m.linalg.solve(m.eye(3), m.ones(4)),
    lambda m: m.linalg.solve(m.eye(3), m.eye(3, dtype=m.float64)), lambda m: m.linalg.solve(m.ones(2, 3), m.eye(3)),
    lambda m: m.linalg.solve(m.eye(3), m.ones(3, 2), left=False),
    lambda m: m.linalg.solve_ex(m.ones(2, 2), m.ones(2), check_errors=True),
    lambda m: m.linalg.cholesky(m.tensor(NPD.tolist())),
    lambda m: m.linalg.cholesky(m.stack([m.eye(2), m.tensor(NPD.tolist())])),
    lambda m: m.linalg.cholesky(m.ones(2, 3)), lambda m: m.linalg.cholesky(m.ones(3, 3, dtype=m.int64)),
    lambda m: m.linalg.cholesky_ex(-m.eye(2), check_errors=True),
    lambda m: m.linalg.solve_triangular(m.eye(3), m.ones(4, 2), upper=True),
    lambda m: m.linalg.solve_triangular(m.ones(2, 3), m.eye(3), upper=False),
    lambda m: m.linalg.solve_triangular(m.eye(3), m.ones(3), upper=False),
    lambda m: m.cholesky_solve(m.ones(4, 2), m.eye(3)), lambda m: m.cholesky_solve(m.ones(3), m.eye(3)),
    lambda m: m.cholesky_inverse(m.ones(2, 3)), lambda m: m.cholesky_inverse(m.ones(3)),
    lambda m: m.linalg.lu_factor(m.ones(3, 3, dtype=m.int64)), lambda m: m.linalg.lu_factor(m.tensor(SING.tolist())),
    lambda m: m.linalg.lu_factor(m.stack([m.eye(3), m.tensor(SING.tolist())])),
    lambda m: m.linalg.lu_factor(m.eye(3), pivot=False), lambda m: m.linalg.lu_factor_ex(m.ones(2, 2), check_errors=True),
    lambda m: m.linalg.lu_solve(*m.linalg.lu_factor(m.eye(3)), m.ones(4, 2)),
    lambda m: m.linalg.lu_solve(*m.linalg.lu_factor(m.eye(3)), m.ones(3)),
    lambda m: m.cholesky(m.eye(2)), lambda m: m.eye(2).cholesky(), lambda m: m.solve(m.eye(2), m.eye(2)),
    lambda m: m.linalg.det(3), lambda m: m.det(3),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_are_torchs(i):
    f = ERRORS[i]
    with pytest.raises(Exception) as te:
        f(torch)
    with pytest.raises(Exception) as re_:
        f(rgrad)
    assert str(re_.value) == str(te.value)
    assert type(re_.value).__name__ == type(te.value).__name__, (type(re_.value), type(te.value))
    if isinstance(te.value, torch.linalg.LinAlgError):
        assert isinstance(re_.value, rgrad.linalg.LinAlgError) and isinstance(re_.value, RuntimeError)


def test_singular_and_special_values_match_torch():
    sing = np.array([[1.0, 2.0], [2.0, 4.0]])
    for f in (lambda m, a: m.linalg.det(a), lambda m, a: tuple(m.linalg.slogdet(a)), lambda m, a: m.logdet(a)):
        for a in (sing, -np.eye(3), np.zeros((2, 0, 0)), np.full((2, 2), np.nan), np.eye(1) * -2.0):
            r, t = _pair(a)
            _close(f(rgrad, r), f(torch, t))
    info_r = rgrad.linalg.inv_ex(rgrad.tensor(sing.tolist())).info
    info_t = torch.linalg.inv_ex(torch.tensor(sing, dtype=torch.float32)).info
    assert info_r.item() == info_t.item() and info_r.dtype == rgrad.int64
    chol = rgrad.linalg.cholesky_ex(rgrad.tensor(NPD.tolist()))
    chol_t = torch.linalg.cholesky_ex(torch.tensor(NPD, dtype=torch.float32))
    assert chol.info.item() == chol_t.info.item() == 2
    _close(chol.L, chol_t.L)


def test_return_types_print_as_torchs():
    a = rgrad.tensor([[2.0, 1.0], [1.0, 3.0]])
    ta = torch.tensor([[2.0, 1.0], [1.0, 3.0]])
    for f in (lambda m, x: m.linalg.slogdet(x), lambda m, x: m.slogdet(x), lambda m, x: m.linalg.inv_ex(x),
              lambda m, x: m.linalg.cholesky_ex(x), lambda m, x: m.linalg.solve_ex(x, x)):
        r, t = f(rgrad, a), f(torch, ta)
        assert type(r).__name__ == type(t).__name__ and len(r) == len(t)
        # (info is int64 here, int32 in torch: rgrad has no int32)
        assert repr(r) == repr(t).replace("torch.", "rgrad.").replace(", dtype=rgrad.int32", "")
    lu = rgrad.linalg.lu_factor(a)
    assert type(lu).__name__ == "linalg_lu_factor" and lu._fields == ("LU", "pivots")


def test_concurrent_backwards_give_one_answer():
    a = rgrad.tensor(_wc((6, 6), 50).tolist(), dtype=rgrad.float64, requires_grad=True)
    b = rgrad.tensor(np.random.default_rng(51).standard_normal((6, 3)).tolist(), dtype=rgrad.float64)

    def grad_once():
        x = rgrad.linalg.solve(a, b) + rgrad.linalg.det(a) + rgrad.linalg.cholesky(a @ a.mT).sum()
        return rgrad.autograd.grad(x.sum(), a)[0].tolist()

    want = grad_once()
    results, errors = [], []

    def work():
        try:
            for _ in range(10):
                results.append(grad_once())
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 80 and all(r == want for r in results)


def test_matrix_power_multi_dot_and_chain_matmul_record_torchs_nodes():
    a, ta = _pair(_wc((3, 3), 60), grad=True)
    for n, node in [(0, "CopyBackwards"), (1, "CloneBackward0"), (2, "MmBackward0"), (5, "MmBackward0"),
                    (-1, "LinalgInvExBackward0"), (-3, "MmBackward0")]:
        r, t = rgrad.linalg.matrix_power(a, n), torch.linalg.matrix_power(ta, n)
        _close(r, t, 1e-9)
        assert r.grad_fn.name() == t.grad_fn.name() and t.grad_fn.name().endswith(node)
    b, tb = _pair(_wc((2, 3, 3), 61), grad=True)
    _close(b.matrix_power(4), tb.matrix_power(4))
    v, tv = _pair(np.arange(3.0), grad=True)
    for make in (lambda m, x, y: [x, x, x, y], lambda m, x, y: [y, x, y], lambda m, x, y: [x, x]):
        r, t = rgrad.linalg.multi_dot(make(rgrad, a, v)), torch.linalg.multi_dot(make(torch, ta, tv))
        _close(r, t)
        assert r.grad_fn.name() == t.grad_fn.name()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = rgrad.chain_matmul(a, a, a)
        rgrad.chain_matmul(a, a)
    assert len(w) == 1 and "torch.chain_matmul is deprecated" in str(w[0].message)
    _close(r, ta @ ta @ ta)
    for f in (lambda m, x: m.linalg.multi_dot([x]), lambda m, x: m.linalg.multi_dot([x.unsqueeze(0), x]),
              lambda m, x: m.linalg.multi_dot([x, x.double()]), lambda m, x: m.linalg.multi_dot([x, m.ones(4, 2)]),
              lambda m, x: m.linalg.multi_dot([x, m.ones(3, 3, 3), x]), lambda m, x: m.linalg.multi_dot([x, m.ones(2, 3, 3)]),
              lambda m, x: m.linalg.matrix_power(m.ones(3, 3, dtype=m.int64), -1),
              lambda m, x: m.linalg.matrix_power(x, 1.5), lambda m, x: m.linalg.matrix_power(m.ones(2, 3), 2)):
        with pytest.raises(Exception) as te:
            f(torch, torch.ones(3, 3))
        with pytest.raises(Exception) as re_:
            f(rgrad, rgrad.ones(3, 3))
        assert type(re_.value) is type(te.value) and str(re_.value) == str(te.value)
    _close(rgrad.linalg.matrix_power(rgrad.ones(3, 3, dtype=rgrad.int64), 2),
           torch.linalg.matrix_power(torch.ones(3, 3, dtype=torch.long), 2))


def test_lu_deprecated_form_and_lu_unpack():
    a, ta = _pair(np.random.default_rng(70).standard_normal((3, 3)))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = rgrad.lu(a, get_infos=True)
        rgrad.lu(a)
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        t = torch.lu(ta, get_infos=True)
    assert len(w) == 1 and str(w[0].message) == str(tw[0].message).split(" (Triggered")[0]
    _close(tuple(r), tuple(t))
    p, l, u = rgrad.lu_unpack(*rgrad.linalg.lu_factor(a), unpack_data=False)
    tp, tl, tu = torch.lu_unpack(*torch.linalg.lu_factor(ta), unpack_data=False)
    _close(p, tp)
    assert tuple(l.shape) == tuple(tl.shape) == (0,)
    r = rgrad.lu_unpack(*rgrad.linalg.lu_factor(a))
    assert type(r).__name__ == "lu_unpack" and r._fields == ("P", "L", "U")
    _close(r.P @ r.L @ r.U, ta)


@pytest.mark.parametrize("a", [
    [[1.0, 2.0], [2.0, 4.0]],  # rank 1
    [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 1.0, 1.0]],  # rank 2, exactly (a zero pivot)
    [[0.0, 0.0], [0.0, 0.0]],  # rank 0
    [[[1.0, 2.0], [2.0, 4.0]], [[2.0, 1.0], [1.0, 3.0]]],  # a singular and a regular one in one batch
])
def test_det_gradient_at_singular_matrices_is_torchs(a):
    r, t = _pair(a, grad=True)
    gr = rgrad.autograd.grad(rgrad.linalg.det(r).sum(), r, create_graph=True)[0]
    gt = torch.autograd.grad(torch.linalg.det(t).sum(), t, create_graph=True)[0]
    _close(gr, gt, 1e-9)
    # and its derivative again
    _close(rgrad.autograd.grad((gr * gr).sum(), r)[0], torch.autograd.grad((gt * gt).sum(), t)[0], 1e-8)
