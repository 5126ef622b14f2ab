"""rgrad.linalg's spectral decompositions (eigh, eigvalsh, svd, svdvals, torch.svd, qr) and
what torch composes from them (matrix_norm / norm with 'nuc', 2, -2, nuclear_norm,
matrix_rank, cond) against torch: values through gauge-invariant quantities (the vectors
are unique only up to sign), reconstructions and orthogonality, nodes and saved fields,
gradients of gauge-invariant losses, forward AD, errors and return types.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import rgrad
import rgrad.autograd.forward_ad as fwad
from rgrad.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # torch.jit.script's deprecation, on import
    import torch.autograd.forward_ad as tfwad


def _pair(a, dtype="float64", grad=False):
    a = np.asarray(a, dtype=np.float64)
    if a.size == 0:
        r = rgrad.zeros(a.shape, dtype=getattr(rgrad, dtype), requires_grad=grad)
    else:
        r = rgrad.tensor(a.tolist(), dtype=getattr(rgrad, dtype), requires_grad=grad)
    t = torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=grad)
    return r, t


def _np(t):
    return np.asarray(t.detach().tolist(), dtype=np.float64)


def _close(x, y, tol):
    x, y = _np(x), _np(y)
    assert x.shape == y.shape, (x.shape, y.shape)
    np.testing.assert_allclose(x, y, rtol=tol, atol=tol)


def _orth(rng, n, batch=()):
    return np.linalg.qr(rng.standard_normal((*batch, n, n)))[0]


def _sym(seed, n, batch=()):
    rng = np.random.default_rng(seed)
    q = _orth(rng, n, batch)
    w = np.linspace(-2.0, 2.0, n) + rng.uniform(-0.15, 0.15, size=(*batch, n))
    return (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)


def _fullrank(seed, m, n, batch=()):
    rng = np.random.default_rng(seed)
    k = min(m, n)
    u = _orth(rng, m, batch)[..., :k]
    v = _orth(rng, n, batch)[..., :k]
    s = np.linspace(3.0, 1.0, k) + rng.uniform(-0.1, 0.1, size=(*batch, k))
    return (u * s[..., None, :]) @ np.swapaxes(v, -1, -2)


def _tol(dtype):
    return 1e-4 if dtype == "float32" else 1e-10


def _eye(n):
    return np.eye(n)


def _names(t):
    """The node names along the first edges from t's grad_fn (a chain's names)."""
    out, g = [], t.grad_fn
    while g is not None:
        out.append(g.name())
        g = g.next_functions[0][0] if g.next_functions else None
    return out


def _scalars(fn):
    """A node's non-tensor saved fields."""
    out = {}
    for f in dir(fn):
        if f.startswith("_saved"):
            v = getattr(fn, f)
            if not isinstance(v, (rgrad.Tensor, torch.Tensor)):
                out[f] = v
    return out


def _negative_dim(v):
    vs = v if isinstance(v, tuple) else (v,)
    return any(isinstance(x, int) and x >= 2**63 for x in vs)


def _fields(fn):
    return sorted(f for f in dir(fn) if f.startswith("_saved"))


# ---- eigh ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n, batch", [(1, ()), (3, ()), (5, ()), (4, (2,)), (3, (2, 3)), (12, ())])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_matches_torch_up_to_sign(n, batch, uplo, dtype):
    a = _sym(n * 10 + len(batch), n, batch)
    # garbage in the triangle that is not read
    junk = np.triu(np.full((n, n), 7.5), 1) if uplo == "L" else np.tril(np.full((n, n), -7.5), -1)
    a = a + junk
    r, t = _pair(a, dtype)
    L, V = rgrad.linalg.eigh(r, UPLO=uplo)
    tL, tV = torch.linalg.eigh(t, UPLO=uplo)
    tol = _tol(dtype)
    _close(L, tL, tol)
    _close(V.abs(), tV.abs(), 10 * tol)
    assert L.dtype == r.dtype and V.dtype == r.dtype
    # reconstruction of the symmetric matrix read, and orthonormal eigenvectors
    s = np.tril(a) + np.tril(a, -1).swapaxes(-1, -2) if uplo == "L" else np.triu(a) + np.triu(a, 1).swapaxes(-1, -2)
    v = _np(V)
    np.testing.assert_allclose((v * _np(L)[..., None, :]) @ v.swapaxes(-1, -2), s, atol=10 * tol)
    np.testing.assert_allclose(v.swapaxes(-1, -2) @ v, np.broadcast_to(_eye(n), v.shape), atol=10 * tol)
    _close(rgrad.linalg.eigvalsh(r, uplo), torch.linalg.eigvalsh(t, uplo), tol)


def test_eigh_of_repeated_eigenvalues_and_empty_inputs():
    r, t = _pair(np.eye(3) * 2.0)
    L, V = rgrad.linalg.eigh(r)
    assert _np(L).tolist() == [2.0, 2.0, 2.0]
    np.testing.assert_allclose(_np(V).T @ _np(V), np.eye(3), atol=1e-15)
    for shape in [(0, 0), (2, 0, 0), (0, 3, 3)]:
        r, t = _pair(np.zeros(shape))
        L, V = rgrad.linalg.eigh(r)
        tL, tV = torch.linalg.eigh(t)
        assert tuple(L.shape) == tuple(tL.shape) and tuple(V.shape) == tuple(tV.shape)


def test_eigh_node_saved_fields_and_return_type():
    a = _sym(1, 3)
    r, t = _pair(a, grad=True)
    out, tout = rgrad.linalg.eigh(r), torch.linalg.eigh(t)
    assert type(out).__name__ == type(tout).__name__ == "linalg_eigh"
    assert out._fields == ("eigenvalues", "eigenvectors")
    assert tout.eigenvalues is tout[0] and out.eigenvalues is out[0]
    assert repr(out).startswith("rgrad.return_types.linalg_eigh(\neigenvalues=tensor(")
    g, tg = out.eigenvalues.grad_fn, tout.eigenvalues.grad_fn
    assert g.name() == tg.name() == "LinalgEighBackward0"
    assert out.eigenvectors.grad_fn is g
    assert _fields(g) == _fields(tg)
    _close(g._saved_eigenvalues, tg._saved_eigenvalues, 1e-12)
    _close(g._saved_eigenvectors.abs(), tg._saved_eigenvectors.abs(), 1e-12)
    # eigvalsh records the same node, with the eigenvectors computed and saved
    w = rgrad.linalg.eigvalsh(r)
    assert w.grad_fn.name() == "LinalgEighBackward0"
    assert tuple(w.grad_fn._saved_eigenvectors.shape) == (3, 3)
    # without grad, nothing is recorded
    with rgrad.no_grad():
        assert rgrad.linalg.eigvalsh(r).grad_fn is None


@pytest.mark.parametrize("uses", ["values", "vectors", "both"])
def test_eigh_gradient_of_a_gauge_invariant_loss_matches_torch(uses):
    a = _sym(2, 4, (2,))
    r, t = _pair(a, grad=True)
    w = np.random.default_rng(3).standard_normal((2, 4, 4))
    rw, tw = _pair(w)

    def loss(m, A, W):
        L, V = m.linalg.eigh(A)
        total = 0
        if uses in ("values", "both"):
            total = total + (L * L.sin()).sum()
        if uses in ("vectors", "both"):
            # |V| and the projection onto the first two eigenvectors: sign-free
            P = V[..., :2] @ V[..., :2].mT
            total = total + (P * W).sum() + (V.abs() * W).sum()
        return total

    loss(rgrad, r, rw).backward()
    loss(torch, t, tw).backward()
    _close(r.grad, t.grad, 1e-9)


def test_eigh_gradcheck_gradgradcheck_and_forward_ad():
    a = _sym(4, 3)
    r = rgrad.tensor((a / 2).tolist(), dtype=rgrad.float64, requires_grad=True)

    def f(x):
        L, V = rgrad.linalg.eigh(x + x.mT)
        return L, V.abs()

    assert gradcheck(f, (r,))
    assert gradgradcheck(f, (r,))
    assert gradcheck(f, (r,), check_forward_ad=True, check_backward_ad=False, check_undefined_grad=False)


# torch's make_dual loads its jvp decompositions, which warn about torch.jit.script
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_eigh_forward_ad_matches_torch():
    a = _sym(5, 4)
    d = np.random.default_rng(6).standard_normal((4, 4))
    d = d + d.T
    r, t = _pair(a)
    rd, td = _pair(d)
    with fwad.dual_level():
        L, V = rgrad.linalg.eigh(fwad.make_dual(r, rd))
        dL, dV = fwad.unpack_dual(L).tangent, fwad.unpack_dual(V).tangent
        # gauge: V's tangent flips with V
        dV = dV * fwad.unpack_dual(V).primal.sign()
    with tfwad.dual_level():
        tL, tV = torch.linalg.eigh(tfwad.make_dual(t, td))
        tdL, tdV = tfwad.unpack_dual(tL).tangent, tfwad.unpack_dual(tV).tangent
        tdV = tdV * tfwad.unpack_dual(tV).primal.sign()
    _close(dL, tdL, 1e-10)
    _close(dV, tdV, 1e-9)


# ---- svd ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("m, n, batch", [(3, 3, ()), (5, 3, ()), (3, 6, ()), (1, 1, ()), (4, 2, (2,)), (2, 5, (2, 2)),
                                         (16, 9, ())])
@pytest.mark.parametrize("full", [True, False])
def test_svd_matches_torch_up_to_sign(m, n, batch, full, dtype):
    a = _fullrank(m * 100 + n, m, n, batch)
    r, t = _pair(a, dtype)
    U, S, Vh = rgrad.linalg.svd(r, full_matrices=full)
    tU, tS, tVh = torch.linalg.svd(t, full_matrices=full)
    assert tuple(U.shape) == tuple(tU.shape) and tuple(Vh.shape) == tuple(tVh.shape)
    tol = _tol(dtype)
    k = min(m, n)
    _close(S, tS, tol)
    _close(U[..., :k].abs(), tU[..., :k].abs(), 10 * tol)
    _close(Vh[..., :k, :].abs(), tVh[..., :k, :].abs(), 10 * tol)
    u, s, vh = _np(U), _np(S), _np(Vh)
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, atol=10 * tol)
    # full_matrices: the completed bases are orthonormal too
    np.testing.assert_allclose(u.swapaxes(-1, -2) @ u, np.broadcast_to(_eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2),
                               atol=10 * tol)
    np.testing.assert_allclose(vh @ vh.swapaxes(-1, -2),
                               np.broadcast_to(_eye(vh.shape[-2]), vh.shape[:-2] + (vh.shape[-2],) * 2), atol=10 * tol)
    _close(rgrad.linalg.svdvals(r), torch.linalg.svdvals(t), tol)


def test_svd_of_rank_deficient_and_empty_inputs():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 1)) @ rng.standard_normal((1, 4))
    r, t = _pair(a)
    for full in (True, False):
        U, S, Vh = rgrad.linalg.svd(r, full_matrices=full)
        u, s, vh = _np(U), _np(S), _np(Vh)
        np.testing.assert_allclose((u[:, :4] * s) @ vh[:4], a, atol=1e-12)
        np.testing.assert_allclose(u.T @ u, np.eye(u.shape[1]), atol=1e-12)
        np.testing.assert_allclose(vh @ vh.T, np.eye(vh.shape[0]), atol=1e-12)
        _close(S, torch.linalg.svdvals(t), 1e-12)
    for shape in [(0, 3), (3, 0), (2, 0, 0), (0, 2, 3)]:
        r, t = _pair(np.zeros(shape))
        for full in (True, False):
            ours = rgrad.linalg.svd(r, full_matrices=full)
            theirs = torch.linalg.svd(t, full_matrices=full)
            for x, y in zip(ours, theirs):
                assert tuple(x.shape) == tuple(y.shape)
            # the empty decomposition's bases are identities, as LAPACK's
            _close(ours.U, theirs.U, 0)
            _close(ours.Vh, theirs.Vh, 0)


def test_svd_node_saved_fields_and_return_types():
    a = _fullrank(7, 4, 3)
    r, t = _pair(a, grad=True)
    for full in (True, False):
        out, tout = rgrad.linalg.svd(r, full), torch.linalg.svd(t, full)
        assert type(out).__name__ == type(tout).__name__ == "linalg_svd" and out._fields == ("U", "S", "Vh")
        g, tg = out.S.grad_fn, tout.S.grad_fn
        assert g.name() == tg.name() == "LinalgSvdBackward0"
        assert out.U.grad_fn is g and out.Vh.grad_fn is g
        assert _fields(g) == _fields(tg)
        assert _scalars(g) == _scalars(tg)
        _close(g._saved_S, tg._saved_S, 1e-12)
    s = rgrad.linalg.svdvals(r)
    assert s.grad_fn.name() == "LinalgSvdBackward0" and s.grad_fn._saved_full_matrices is False
    assert tuple(s.grad_fn._saved_U.shape) == (4, 3)
    out, tout = rgrad.svd(r), torch.svd(t)
    assert type(out).__name__ == type(tout).__name__ == "svd" and out._fields == ("U", "S", "V")
    assert [x.grad_fn.name() for x in out] == [x.grad_fn.name() for x in tout]
    assert repr(out).startswith("rgrad.return_types.svd(\nU=tensor(")


def test_torch_svd_without_uv_gives_zeros():
    a = _fullrank(8, 4, 3)
    for grad in (False, True):
        r, t = _pair(a, grad=grad)
        for some in (True, False):
            ours, theirs = rgrad.svd(r, some=some, compute_uv=False), torch.svd(t, some=some, compute_uv=False)
            for x, y in zip(ours, theirs):
                _close(x, y, 1e-12)
            assert (ours.U.grad_fn is None) and (ours.S.grad_fn is None) == (theirs.S.grad_fn is None)
    r, t = _pair(a)
    _close(r.svd(False).U.abs(), t.svd(False).U.abs(), 1e-12)


@pytest.mark.parametrize("m, n", [(3, 3), (5, 3), (3, 5)])
@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("uses", ["S", "U", "Vh", "all"])
def test_svd_gradient_of_a_gauge_invariant_loss_matches_torch(m, n, full, uses):
    a = _fullrank(m * 7 + n, m, n, (2,))
    r, t = _pair(a, grad=True)
    k = min(m, n)

    def loss(mod, A):
        U, S, Vh = mod.linalg.svd(A, full_matrices=full)
        U, Vh = U[..., :k], Vh[..., :k, :]
        total = 0
        if uses in ("S", "all"):
            total = total + (S ** 3).sum()
        if uses in ("U", "all"):
            total = total + (U.abs() * U.abs().cos()).sum() + (U @ U.mT).sin().sum()
        if uses in ("Vh", "all"):
            total = total + (Vh.abs() ** 3).sum()
        return total

    loss(rgrad, r).backward()
    loss(torch, t).backward()
    _close(r.grad, t.grad, 1e-9)


def test_svd_gradient_with_the_extra_full_matrices_columns_matches_torch():
    # torch narrows U and Vh's gradients to the first k vectors: the extra ones get none
    a = _fullrank(11, 5, 3)
    r, t = _pair(a, grad=True)
    rgrad.linalg.svd(r)[0].sum().backward()
    torch.linalg.svd(t)[0].sum().backward()
    # the first k columns' sum depends on their signs, as torch's: compare the part that
    # does not, the gradient of the extra columns (zero) through a sign-free loss
    r.grad = None
    t.grad = None
    rU = rgrad.linalg.svd(r)[0]
    tU = torch.linalg.svd(t)[0]
    (rU[:, 3:] ** 2).sum().backward()
    (tU[:, 3:] ** 2).sum().backward()
    _close(r.grad, t.grad, 1e-12)


@pytest.mark.parametrize("m, n, full", [(3, 3, False), (4, 2, False), (2, 4, False), (4, 2, True), (2, 4, True)])
def test_svd_gradcheck_gradgradcheck_and_forward_ad(m, n, full):
    a = _fullrank(m + n, m, n)
    r = rgrad.tensor(a.tolist(), dtype=rgrad.float64, requires_grad=True)
    k = min(m, n)

    def f(x):
        U, S, Vh = rgrad.linalg.svd(x, full_matrices=full)
        return U[..., :k].abs(), S, Vh[..., :k, :].abs()

    assert gradcheck(f, (r,))
    assert gradgradcheck(f, (r,))
    assert gradcheck(f, (r,), check_forward_ad=True, check_backward_ad=False, check_undefined_grad=False)


# torch's make_dual loads its jvp decompositions, which warn about torch.jit.script
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_svd_forward_ad_matches_torch():
    for m, n in [(4, 3), (3, 4), (3, 3)]:
        a = _fullrank(m * 3 + n, m, n)
        d = np.random.default_rng(m).standard_normal((m, n))
        r, t = _pair(a)
        rd, td = _pair(d)
        with fwad.dual_level():
            U, S, Vh = rgrad.linalg.svd(fwad.make_dual(r, rd), full_matrices=False)
            ours = [fwad.unpack_dual(x).tangent * (fwad.unpack_dual(x).primal.sign() if i != 1 else 1)
                    for i, x in enumerate((U, S, Vh))]
        with tfwad.dual_level():
            tU, tS, tVh = torch.linalg.svd(tfwad.make_dual(t, td), full_matrices=False)
            theirs = [tfwad.unpack_dual(x).tangent * (tfwad.unpack_dual(x).primal.sign() if i != 1 else 1)
                      for i, x in enumerate((tU, tS, tVh))]
        for x, y in zip(ours, theirs):
            _close(x, y, 1e-9)


# ---- qr ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("m, n, batch", [(3, 3, ()), (5, 3, ()), (3, 6, ()), (1, 1, ()), (4, 2, (2,)), (2, 5, (2, 2)),
                                         (12, 7, ())])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_matches_torch(m, n, batch, mode, dtype):
    a = np.random.default_rng(m * 10 + n).standard_normal((*batch, m, n))
    r, t = _pair(a, dtype)
    Q, R = rgrad.linalg.qr(r, mode=mode)
    tQ, tR = torch.linalg.qr(t, mode=mode)
    assert tuple(Q.shape) == tuple(tQ.shape) and tuple(R.shape) == tuple(tR.shape)
    tol = 10 * _tol(dtype)
    # LAPACK's reflector convention: the same Q and R (not just up to sign)
    _close(R, tR, tol)
    if mode != "r":
        _close(Q, tQ, tol)
        q, rr = _np(Q), _np(R)
        np.testing.assert_allclose(q @ rr, a, atol=tol)
        k = q.shape[-1]
        np.testing.assert_allclose(q.swapaxes(-1, -2) @ q, np.broadcast_to(_eye(k), q.shape[:-2] + (k, k)), atol=tol)


def test_qr_of_rank_deficient_and_empty_inputs():
    a = np.array([[0.0, 1.0, 2.0], [0.0, 2.0, 4.0], [0.0, 3.0, 6.0]])
    r, t = _pair(a)
    Q, R = rgrad.linalg.qr(r)
    np.testing.assert_allclose(_np(Q) @ _np(R), a, atol=1e-14)
    np.testing.assert_allclose(_np(Q).T @ _np(Q), np.eye(3), atol=1e-14)
    for shape in [(0, 3), (3, 0), (2, 0, 0)]:
        r, t = _pair(np.zeros(shape))
        for mode in ("reduced", "complete", "r"):
            for x, y in zip(rgrad.linalg.qr(r, mode), torch.linalg.qr(t, mode)):
                assert tuple(x.shape) == tuple(y.shape)
                _close(x, y, 0)


def test_qr_node_saved_fields_and_return_type():
    r, t = _pair(np.random.default_rng(0).standard_normal((4, 3)), grad=True)
    for mode in ("reduced", "complete", "r"):
        out, tout = rgrad.linalg.qr(r, mode), torch.linalg.qr(t, mode)
        assert type(out).__name__ == type(tout).__name__ == "linalg_qr" and out._fields == ("Q", "R")
        g, tg = out.R.grad_fn, tout.R.grad_fn
        assert g.name() == tg.name() == "LinalgQrBackward0"
        assert _fields(g) == _fields(tg) and _scalars(g) == _scalars(tg)
        _close(g._saved_R, tg._saved_R, 1e-12)
    assert repr(out).startswith("rgrad.return_types.linalg_qr(\nQ=tensor(")


@pytest.mark.parametrize("m, n, mode", [(3, 3, "reduced"), (5, 3, "reduced"), (3, 5, "reduced"), (3, 5, "complete"),
                                        (4, 4, "complete")])
@pytest.mark.parametrize("uses", ["Q", "R", "both"])
def test_qr_gradients_and_forward_ad_match_torch(m, n, mode, uses):
    a = np.random.default_rng(m * 3 + n).standard_normal((2, m, n))
    r, t = _pair(a, grad=True)
    w = np.random.default_rng(9).standard_normal((2, m, m if mode == "complete" else min(m, n)))
    v = np.random.default_rng(8).standard_normal((2, m if mode == "complete" else min(m, n), n))
    (rw, tw), (rv, tv) = _pair(w), _pair(v)

    def loss(mod, A, W, V):
        Q, R = mod.linalg.qr(A, mode)
        total = 0
        if uses in ("Q", "both"):
            total = total + (Q * W).sum()
        if uses in ("R", "both"):
            total = total + (R.sin() * V).sum()
        return total

    loss(rgrad, r, rw, rv).backward()
    loss(torch, t, tw, tv).backward()
    _close(r.grad, t.grad, 1e-9)
    x = rgrad.tensor(a[0].tolist(), dtype=rgrad.float64, requires_grad=True)

    def f(A):
        return tuple(rgrad.linalg.qr(A, mode))

    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))
    assert gradcheck(f, (x,), check_forward_ad=True, check_backward_ad=False, check_undefined_grad=False)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_qr_forward_ad_matches_torch():
    for m, n in [(4, 3), (3, 4), (3, 3)]:
        a = np.random.default_rng(m + n).standard_normal((m, n))
        d = np.random.default_rng(m).standard_normal((m, n))
        (r, t), (rd, td) = _pair(a), _pair(d)
        with fwad.dual_level():
            ours = [fwad.unpack_dual(x).tangent for x in rgrad.linalg.qr(fwad.make_dual(r, rd))]
        with tfwad.dual_level():
            theirs = [tfwad.unpack_dual(x).tangent for x in torch.linalg.qr(tfwad.make_dual(t, td))]
        for x, y in zip(ours, theirs):
            _close(x, y, 1e-9)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_qr_derivative_errors_match_torch():
    a = np.random.default_rng(1).standard_normal((4, 3))
    for mode, m in (("r", 3), ("complete", 4)):
        r, t = _pair(a[:m], grad=True)
        with pytest.raises(RuntimeError) as theirs:
            torch.linalg.qr(t, mode).R.sum().backward()
        ours_out = rgrad.linalg.qr(r, mode)
        with pytest.raises(RuntimeError) as ours:
            ours_out.R.sum().backward()
        assert str(ours.value) == str(theirs.value)
        (r, t), (rd, td) = _pair(a[:m]), _pair(np.ones((m, 3)))
        with tfwad.dual_level(), pytest.raises(RuntimeError) as theirs:
            torch.linalg.qr(tfwad.make_dual(t, td), mode)
        with fwad.dual_level(), pytest.raises(RuntimeError) as ours:
            rgrad.linalg.qr(fwad.make_dual(r, rd), mode)
        assert str(ours.value) == str(theirs.value)


# ---- norms, rank, cond ------------------------------------------------------------------


@pytest.mark.parametrize("ord", ["nuc", 2, -2])
@pytest.mark.parametrize("dim, keepdim", [((-2, -1), False), ((0, 2), True), ((2, 0), False), ((1, 2), True)])
def test_svd_norms_record_torchs_nodes(ord, dim, keepdim):
    a = _fullrank(5, 4, 3, (2,)).transpose(1, 0, 2).copy()  # (4, 2, 3)
    r, t = _pair(a, grad=True)
    ours = rgrad.linalg.matrix_norm(r, ord, dim, keepdim)
    theirs = torch.linalg.matrix_norm(t, ord, dim, keepdim)
    _close(ours, theirs, 1e-12)
    assert _names(ours) == _names(theirs)
    g = ours.grad_fn
    tg = theirs.grad_fn
    while g is not None:
        # rgrad shows a negative dim wrapped where torch shows it as given (as an unsigned
        # 64-bit number): a difference of sum / amax / unsqueeze's nodes, not of these ops
        theirs_s = {k: v for k, v in _scalars(tg).items() if not _negative_dim(v)}
        ours_s = {k: v for k, v in _scalars(g).items() if k in theirs_s}
        assert ours_s == theirs_s, g.name()
        g = g.next_functions[0][0] if g.next_functions else None
        tg = tg.next_functions[0][0] if tg.next_functions else None
    ours.sum().backward()
    theirs.sum().backward()
    _close(r.grad, t.grad, 1e-10)
    _close(rgrad.linalg.norm(r, ord, dim, keepdim), torch.linalg.norm(t, ord, dim, keepdim), 1e-12)


def test_nuclear_norm_warns_once_and_matches_torch():
    import rgrad.linalg as L

    a = _fullrank(2, 3, 4, (2,))
    r, t = _pair(a)
    L._nuclear_warned = False
    with pytest.warns(UserWarning, match="at::nuclear_norm is deprecated"):
        ours = rgrad.nuclear_norm(r)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours2 = rgrad.nuclear_norm(r, (0, 2), True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close(ours, torch.nuclear_norm(t), 1e-12)
        _close(ours2, torch.nuclear_norm(t, (0, 2), True), 1e-12)


def test_matrix_rank_and_cond_match_torch():
    rng = np.random.default_rng(1)
    cases = [rng.standard_normal((4, 3)), rng.standard_normal((3, 1)) @ rng.standard_normal((1, 5)),
             np.zeros((3, 3)), rng.standard_normal((2, 3, 3)), np.zeros((2, 0, 3))]
    for a in cases:
        for dtype in ("float32", "float64"):
            r, t = _pair(a, dtype)
            for kw in ({}, {"atol": 0.5}, {"rtol": 0.3}, {"atol": 0.1, "rtol": 0.1}):
                ours, theirs = rgrad.linalg.matrix_rank(r, **kw), torch.linalg.matrix_rank(t, **kw)
                assert _np(ours).tolist() == _np(theirs).tolist(), (a.shape, kw)
                assert ours.dtype == rgrad.int64
    s = _sym(3, 4)
    s[0] = s[:, 0] = 0.0
    r, t = _pair(s)
    assert _np(rgrad.linalg.matrix_rank(r, hermitian=True)).tolist() == _np(torch.linalg.matrix_rank(t, hermitian=True)).tolist()
    for a in [_fullrank(4, 3, 3), _fullrank(5, 4, 3, (2,)), _fullrank(6, 2, 5)]:
        r, t = _pair(a, grad=True)
        for p in (None, 2, -2):
            ours, theirs = rgrad.linalg.cond(r, p), torch.linalg.cond(t, p)
            _close(ours, theirs, 1e-12)
            assert _names(ours) == _names(theirs)


@pytest.mark.parametrize("p", ["nuc", "fro", 1, -1, math.inf, -math.inf, -1.0])
def test_cond_of_other_norms_matches_torch_including_its_backward_error(p):
    for a in (_fullrank(7, 3, 3), _fullrank(8, 3, 3, (2,)), np.ones((3, 3)), np.zeros((2, 0, 0))):
        r, t = _pair(a, grad=True)
        ours, theirs = rgrad.linalg.cond(r, p), torch.linalg.cond(t, p)
        _close(ours, theirs, 1e-10)
        if a.size == 0:
            continue
        assert _names(ours) == _names(theirs)
        if p == "nuc":
            if np.isfinite(_np(theirs)).all():
                ours.sum().backward()
                theirs.sum().backward()
                _close(r.grad, t.grad, 1e-9)
            continue
        # torch's in-place fill of the inverse its LinalgInvExBackward0 saved breaks the
        # backward; rgrad's graph is the same, and so is the error
        with pytest.raises(RuntimeError) as te:
            theirs.sum().backward()
        with pytest.raises(RuntimeError) as oe:
            ours.sum().backward()
        # (rgrad names its tensor types rgrad.DoubleTensor where torch says torch.DoubleTensor)
        assert str(oe.value) == str(te.value).replace("[torch.", "[rgrad.")


# ---- pinv -------------------------------------------------------------------------------


def test_pinv_matches_torch():
    rng = np.random.default_rng(4)
    rank1 = rng.standard_normal((4, 1)) @ rng.standard_normal((1, 3))
    cases = [(_fullrank(1, 3, 3), {}), (_fullrank(2, 4, 3), {}), (_fullrank(3, 2, 5, (2,)), {}),
             (rank1, {}), (_fullrank(4, 4, 3), {"atol": 1.5}), (_fullrank(5, 3, 4), {"rtol": 0.5}),
             (_sym(6, 4), {"hermitian": True}), (_sym(7, 3, (2,)), {"hermitian": True, "rtol": 0.3}),
             (np.zeros((0, 3)), {}), (_fullrank(8, 3, 3, (2,)), {"atol": "per-matrix"})]
    for a, kw in cases:
        for dtype in ("float32", "float64"):
            r, t = _pair(a, dtype)
            if kw.get("atol") == "per-matrix":
                kw = {"atol": None}
                ours = rgrad.linalg.pinv(r, atol=rgrad.tensor([2.0, 0.5], dtype=rgrad.float64))
                theirs = torch.linalg.pinv(t, atol=torch.tensor([2.0, 0.5], dtype=torch.float64))
            else:
                ours, theirs = rgrad.linalg.pinv(r, **kw), torch.linalg.pinv(t, **kw)
            _close(ours, theirs, 10 * _tol(dtype))
            assert ours.dtype == r.dtype
    r, t = _pair(_fullrank(9, 4, 3))
    _close(rgrad.pinverse(r), torch.pinverse(t), 1e-12)
    _close(r.pinverse(0.5), t.pinverse(0.5), 1e-12)
    _close(rgrad.linalg.pinv(r, 0.5), torch.linalg.pinv(t, 0.5), 1e-12)


# torch's make_dual loads its jvp decompositions, which warn about torch.jit.script
@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("m, n, hermitian", [(3, 3, False), (4, 3, False), (3, 5, False), (3, 3, True)])
def test_pinv_node_gradients_and_forward_ad_match_torch(m, n, hermitian):
    a = _sym(m, m) if hermitian else _fullrank(m * 5 + n, m, n)
    r, t = _pair(a, grad=True)
    ours, theirs = rgrad.linalg.pinv(r, hermitian=hermitian), torch.linalg.pinv(t, hermitian=hermitian)
    g, tg = ours.grad_fn, theirs.grad_fn
    assert g.name() == tg.name() == "LinalgPinvBackward0"
    assert _fields(g) == _fields(tg)
    _close(g._saved_result, tg._saved_result, 1e-12)
    w = np.random.default_rng(1).standard_normal((n, m))
    rw, tw = _pair(w)
    (ours * rw).sum().backward()
    (theirs * tw).sum().backward()
    _close(r.grad, t.grad, 1e-10)
    rx = rgrad.tensor(a.tolist(), dtype=rgrad.float64, requires_grad=True)
    f = (lambda x: rgrad.linalg.pinv(x + x.mT, hermitian=True)) if hermitian else rgrad.linalg.pinv
    assert gradcheck(f, (rx,))
    assert gradgradcheck(f, (rx,))
    assert gradcheck(f, (rx,), check_forward_ad=True, check_backward_ad=False, check_undefined_grad=False)
    d = np.random.default_rng(2).standard_normal((m, n))
    rd, td = _pair(d)
    with fwad.dual_level():
        ours = fwad.unpack_dual(rgrad.linalg.pinv(fwad.make_dual(_pair(a)[0], rd))).tangent
    with tfwad.dual_level():
        theirs = tfwad.unpack_dual(torch.linalg.pinv(tfwad.make_dual(_pair(a)[1], td))).tangent
    _close(ours, theirs, 1e-10)


# ---- errors ------------------------------------------------------------------------------

_ERRORS = [
    lambda m, a3, a32, i33: m.linalg.eigh(a32),
    lambda m, a3, a32, i33: m.linalg.eigh(a3),
    lambda m, a3, a32, i33: m.linalg.eigh(i33),
    lambda m, a3, a32, i33: m.linalg.eigh(a32.mT @ a32, UPLO="X"),
    lambda m, a3, a32, i33: m.linalg.eigvalsh(a32),
    lambda m, a3, a32, i33: m.linalg.eigh(3),
    lambda m, a3, a32, i33: m.linalg.svd(a3),
    lambda m, a3, a32, i33: m.linalg.svd(i33),
    lambda m, a3, a32, i33: m.linalg.svdvals(i33),
    lambda m, a3, a32, i33: m.linalg.svd("x"),
    lambda m, a3, a32, i33: m.svd(a3),
    lambda m, a3, a32, i33: m.linalg.svd(a32, driver="gesvd"),
    lambda m, a3, a32, i33: m.linalg.eigh(m.full((3, 3), math.nan, dtype=m.float64)) and None,
    lambda m, a3, a32, i33: m.linalg.svd(m.full((3, 3), math.nan, dtype=m.float64)),
    lambda m, a3, a32, i33: m.linalg.svd(m.full((3, 3), math.inf, dtype=m.float64)),
    lambda m, a3, a32, i33: m.linalg.qr(a3),
    lambda m, a3, a32, i33: m.linalg.qr(i33),
    lambda m, a3, a32, i33: m.linalg.qr(a32, mode="x"),
    lambda m, a3, a32, i33: m.qr(a32),
    lambda m, a3, a32, i33: a32.qr(some=False),
    lambda m, a3, a32, i33: m.linalg.matrix_rank(a3),
    lambda m, a3, a32, i33: m.linalg.matrix_rank(i33),
    lambda m, a3, a32, i33: m.linalg.cond(a3),
    lambda m, a3, a32, i33: m.linalg.cond(i33),
    lambda m, a3, a32, i33: m.linalg.cond(a32, "fro"),
    lambda m, a3, a32, i33: m.linalg.cond(a32, 1),
    lambda m, a3, a32, i33: m.linalg.cond(a32, -1.0),
    lambda m, a3, a32, i33: m.linalg.cond(a32, math.inf),
    lambda m, a3, a32, i33: m.linalg.cond(a32, 3),
    lambda m, a3, a32, i33: m.linalg.cond(a32, "x"),
    lambda m, a3, a32, i33: m.linalg.cond(a32.mT @ a32, "x"),
    lambda m, a3, a32, i33: m.linalg.cond(i33, "nuc"),
    lambda m, a3, a32, i33: m.linalg.cond(i33, 1),
    lambda m, a3, a32, i33: m.linalg.matrix_norm(a3, "nuc"),
    lambda m, a3, a32, i33: m.linalg.matrix_norm(i33, 2),
    lambda m, a3, a32, i33: m.linalg.matrix_norm(i33, "fro", dim=(0, 0)),
    lambda m, a3, a32, i33: m.linalg.pinv(a3),
    lambda m, a3, a32, i33: m.linalg.pinv(i33),
    lambda m, a3, a32, i33: m.pinverse(a3),
    lambda m, a3, a32, i33: m.linalg.pinv(a32, hermitian=True),
    lambda m, a3, a32, i33: m.linalg.svd(m.full((2, 3, 3), math.nan, dtype=m.float64)),
]


@pytest.mark.parametrize("i", range(len(_ERRORS)))
def test_errors_match_torch(i):
    def args(m):
        return (m.ones(3, dtype=m.float64), m.ones(3, 2, dtype=m.float64), m.ones(3, 3, dtype=m.int64))

    with pytest.raises(Exception) as theirs:
        _ERRORS[i](torch, *args(torch))
    with pytest.raises(Exception) as ours:
        _ERRORS[i](rgrad, *args(rgrad))
    # torch.linalg.LinAlgError (torch._C._LinAlgError, a RuntimeError) is rgrad._C._LinAlgError
    assert type(ours.value).__name__ == type(theirs.value).__name__, (ours.value, theirs.value)
    assert isinstance(ours.value, type(theirs.value).__mro__[1] if type(theirs.value).__name__ == "_LinAlgError"
                      else type(theirs.value))
    if "error code" in str(theirs.value):
        # LAPACK's failure index: ours says the same with its own count
        assert str(ours.value).split("(error code")[0] == str(theirs.value).split("(error code")[0]
    else:
        assert str(ours.value) == str(theirs.value)


def test_nan_inputs_raise_instead_of_hanging():
    for f in (rgrad.linalg.eigh, rgrad.linalg.svd, rgrad.linalg.svdvals, rgrad.linalg.eigvalsh):
        with pytest.raises(rgrad.linalg.LinAlgError, match="failed to converge"):
            f(rgrad.full((2, 4, 4), math.nan, dtype=rgrad.float32))


# ---- batched gradients (jacrev: a batch of cotangents through each node) -------------------

_JAC_FUNCS = {
    "eigvalsh": (lambda a: rgrad.linalg.eigvalsh(a + a.mT), (3, 3)),
    "eigh_vectors": (lambda a: rgrad.linalg.eigh(a + a.mT).eigenvectors.abs(), (3, 3)),
    "svdvals": (lambda a: rgrad.linalg.svdvals(a), (4, 3)),
    "svd_U": (lambda a: rgrad.linalg.svd(a, full_matrices=False).U.abs(), (4, 3)),
    "svd_Vh_wide": (lambda a: rgrad.linalg.svd(a, full_matrices=False).Vh.abs(), (2, 4)),
    "qr_tall": (lambda a: rgrad.linalg.qr(a).Q, (4, 3)),
    "qr_wide": (lambda a: rgrad.linalg.qr(a).Q * 2 + rgrad.linalg.qr(a).R.sum(), (2, 4)),
    "pinv": (lambda a: rgrad.linalg.pinv(a), (3, 4)),
}


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("name", sorted(_JAC_FUNCS))
def test_jacrev_matches_jacfwd_and_torch_without_fallback(name):
    from rgrad.func import jacfwd, jacrev

    f, shape = _JAC_FUNCS[name]
    a = _fullrank(len(name), *shape) if name != "eigvalsh" and not name.startswith("eigh") else _sym(3, 3) / 2
    r = rgrad.tensor(a.tolist(), dtype=rgrad.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no "performance drop" loop fallback
        jr = jacrev(f)(r)
        jf = jacfwd(f)(r)
    _close(jr, jf, 1e-9)
    # torch's, of the same function
    tf = {
        "eigvalsh": lambda x: torch.linalg.eigvalsh(x + x.mT),
        "eigh_vectors": lambda x: torch.linalg.eigh(x + x.mT).eigenvectors.abs(),
        "svdvals": torch.linalg.svdvals,
        "svd_U": lambda x: torch.linalg.svd(x, full_matrices=False).U.abs(),
        "svd_Vh_wide": lambda x: torch.linalg.svd(x, full_matrices=False).Vh.abs(),
        "qr_tall": lambda x: torch.linalg.qr(x).Q,
        "qr_wide": lambda x: torch.linalg.qr(x).Q * 2 + torch.linalg.qr(x).R.sum(),
        "pinv": torch.linalg.pinv,
    }[name]
    _close(jr, torch.func.jacrev(tf)(torch.tensor(a)), 1e-9)
