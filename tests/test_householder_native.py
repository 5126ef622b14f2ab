"""The native kernels of geqrf, linalg.householder_product / orgqr, ormqr and the LDL
functions (src/backend/linalg/householder.rs and ldl.rs, issue 15) against torch's
LAPACK: random, rank-deficient, zero-column, tall and wide, batched and strided inputs in
float32 and float64, at the unblocked sizes and past the blocked forms' crossover (64
reflectors). The LDL kernels are also checked bit for bit against the Python loops they
replaced (kept here as the reference). test_linalg_more.py covers the argument checks,
nodes, gradients and vmap.
"""

from __future__ import annotations

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")


def _np(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def _pair(a, dtype="float64"):
    a = np.asarray(a, dtype=np.float64)
    return rgrad.from_numpy(a.copy()).to(getattr(rgrad, dtype)), torch.tensor(a, dtype=getattr(torch, dtype))


def _arr(x):
    return np.asarray(x.detach().tolist(), dtype=np.float64).reshape(tuple(x.shape))


def _close(r, t, tol):
    """Same shape and dtype, and max |r - t| within ``tol`` of t's largest magnitude (at least 1)."""
    assert tuple(r.shape) == tuple(t.shape), (tuple(r.shape), tuple(t.shape))
    assert str(r.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    got, want = _arr(r), t.detach().double().numpy()
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    err = float(np.abs(got - want).max(initial=0.0))
    assert err <= tol * scale, (err, scale)


TOL = {"float32": 2e-5, "float64": 1e-12}
# the blocked sizes add up more rounding (float32: torch rounds every step to float32)
BIG_TOL = {"float32": 2e-4, "float64": 1e-11}


def _tol(shape, dtype):
    return (BIG_TOL if max(shape[-2:]) > 40 else TOL)[dtype]


# ---- geqrf ----------------------------------------------------------------------------------------

GEQRF_SHAPES = [(1, 1), (5, 3), (3, 5), (8, 8), (32, 32), (3, 6, 4), (2, 2, 5, 5), (0, 4), (4, 0), (2, 0, 3),
                (64, 64), (65, 65), (100, 70), (70, 100), (130, 130), (2, 97, 80)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", GEQRF_SHAPES)
def test_geqrf_matches_torch(shape, dtype):
    a, ta = _pair(_np(shape, 1), dtype)
    r, t = rgrad.geqrf(a), torch.geqrf(ta)
    tol = _tol(shape, dtype)
    _close(r.a, t.a, tol)
    _close(r.tau, t.tau, tol)
    # strided inputs: a transposed view and a slice of a bigger matrix
    _close(rgrad.geqrf(a.mT).a, torch.geqrf(ta.mT).a, tol)
    big, tbig = _pair(_np((*shape[:-2], shape[-2] + 3, shape[-1] + 5), 2), dtype)
    rs, ts = rgrad.geqrf(big[..., 1:shape[-2] + 1, 2:shape[-1] + 2]), torch.geqrf(tbig[..., 1:shape[-2] + 1, 2:shape[-1] + 2])
    _close(rs.a, ts.a, tol)
    _close(rs.tau, ts.tau, tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_geqrf_zero_columns_signs_and_rank_deficient(dtype):
    # zero columns (tau 0, R's entry 0) and columns zero below the diagonal (tau 0, R keeps
    # the entry and its sign), at the unblocked and the blocked sizes
    for n in (6, 90):
        x = _np((n + 4, n), 3)
        x[:, 2] = 0.0
        x[:, n - 1] = 0.0
        x[1:, 0] = 0.0
        x[0, 0] = -2.5
        a, ta = _pair(x, dtype)
        r, t = rgrad.geqrf(a), torch.geqrf(ta)
        _close(r.a, t.a, _tol(x.shape, dtype))
        _close(r.tau, t.tau, _tol(x.shape, dtype))
        assert r.tau[0].item() == 0.0 and r.a[0, 0].item() == -2.5
        assert r.tau[2].item() == 0.0
    # a zero matrix: R = 0, every tau 0; a matrix of zero rows below the first
    for x in (np.zeros((5, 4)), np.vstack([_np((1, 4), 4), np.zeros((4, 4))])):
        a, ta = _pair(x, dtype)
        r, t = rgrad.geqrf(a), torch.geqrf(ta)
        _close(r.a, t.a, 0.0)
        _close(r.tau, t.tau, 0.0)
    # rank-deficient (rank 3 of 8 and of 80): the first three reflectors and R's first
    # three rows are determined and match; the rest is rounding noise in both, so there Q·R
    # reproduces A
    for n in (8, 80):
        x = _np((n, 3), 5) @ _np((3, n), 6)
        a, ta = _pair(x, dtype)
        r, t = rgrad.geqrf(a), torch.geqrf(ta)
        tol = 10 * _tol(x.shape, dtype)
        _close(r.a[:, :3], t.a[:, :3], tol)
        _close(r.a[:3], t.a[:3], tol)
        _close(r.tau[:3], t.tau[:3], tol)
        q = rgrad.linalg.householder_product(r.a, r.tau)
        _close(q @ r.a.triu(), ta, tol)


def test_geqrf_native_keeps_the_node_and_vmap():
    a = rgrad.from_numpy(_np((4, 3), 7)).requires_grad_()
    r = rgrad.geqrf(a)
    assert r.a.grad_fn.name() == "GeqrfBackward0"
    with pytest.raises(NotImplementedError):
        r.a.sum().backward()
    x = rgrad.from_numpy(_np((3, 70, 66), 8))
    got = rgrad.func.vmap(lambda y: rgrad.geqrf(y).a)(x)
    np.testing.assert_allclose(_arr(got), _arr(rgrad.geqrf(x).a), rtol=1e-10, atol=1e-10)


# ---- householder_product / orgqr -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,k", [((1, 1), 1), ((5, 3), 3), ((5, 3), 1), ((6, 6), 6), ((32, 32), 32),
                                     ((2, 7, 4), 4), ((2, 1, 6, 6), 3), ((5, 0), 0), ((0, 0), 0), ((2, 0, 0), 0),
                                     ((3, 3), 0)])
def test_householder_product_random_tau_matches_torch(shape, k, dtype):
    # any tau (the product is then not orthogonal, as torch's)
    a, ta = _pair(_np(shape, 9), dtype)
    tau, ttau = _pair(_np((*shape[:-2], k), 10) * 0.5, dtype)
    tol = TOL[dtype] * (100 if shape[-1] >= 32 else 1)
    _close(rgrad.linalg.householder_product(a, tau), torch.linalg.householder_product(ta, ttau), tol)
    _close(rgrad.orgqr(a.mT.contiguous().mT, tau), torch.orgqr(ta, ttau), tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,k", [((8, 8), 8), ((40, 20), 20), ((65, 65), 65), ((100, 80), 80), ((100, 80), 70),
                                     ((130, 130), 130), ((2, 97, 96), 96), ((150, 100), 10)])
def test_householder_product_of_geqrf_matches_torch(shape, k, dtype):
    a, ta = _pair(_np(shape, 11), dtype)
    g, tg = torch.geqrf(ta)
    r = rgrad.from_numpy(g.double().numpy()).to(a.dtype)
    tau = rgrad.from_numpy(tg[..., :k].double().numpy()).to(a.dtype)
    tol = _tol(shape, dtype)
    _close(rgrad.linalg.householder_product(r, tau), torch.linalg.householder_product(g, tg[..., :k]), tol)
    # from rgrad's own factors: an orthonormal Q with Q R = A
    ra = rgrad.geqrf(a)
    q = rgrad.linalg.householder_product(ra.a, ra.tau)
    _close(q, torch.linalg.householder_product(*torch.geqrf(ta)), 10 * tol)


# ---- ormqr --------------------------------------------------------------------------------------

ORMQR = [((5, 3), (5, 2)), ((4, 4), (4, 4)), ((32, 32), (32, 4)), ((2, 6, 3), (2, 6, 5)), ((6, 8), (6, 3)),
         ((65, 65), (65, 7)), ((100, 70), (100, 100)), ((130, 130), (130, 130)), ((2, 90, 90), (2, 90, 3)),
         ((70, 100), (70, 70)), ((3, 0), (3, 2)), ((4, 2), (4, 0))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("ashape,cshape", ORMQR)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_ormqr_matches_torch(ashape, cshape, left, transpose, dtype):
    a, ta = _pair(_np(ashape, 12), dtype)
    g, tg = torch.geqrf(ta)
    k = min(ashape[-2], ashape[-1])
    ra = rgrad.from_numpy(g.double().numpy()).to(a.dtype)
    rtau = rgrad.from_numpy(tg.double().numpy()).to(a.dtype)
    c, tc = _pair(_np(cshape, 13), dtype)
    if not left:
        c, tc = c.mT, tc.mT  # (a strided C)
    tol = _tol(ashape, dtype)
    _close(rgrad.ormqr(ra, rtau, c, left, transpose), torch.ormqr(g, tg, tc, left, transpose), tol)
    if max(ashape[-2:]) <= 32 and k:
        # any tau
        tau, ttau = _pair(_np((*ashape[:-2], k), 14) * 0.5, dtype)
        _close(rgrad.ormqr(a, tau, c, left, transpose), torch.ormqr(ta, ttau, tc, left, transpose), 100 * tol)


def test_native_and_composite_agree():
    # the gradient path (the composition) and the native values
    a = rgrad.from_numpy(_np((6, 4), 15))
    tau = rgrad.from_numpy(_np(4, 16))
    c = rgrad.from_numpy(_np((6, 3), 17))
    q = rgrad.linalg.householder_product(a, tau)
    qg = rgrad.linalg.householder_product(a.requires_grad_(), tau)
    assert q.grad_fn is None and qg.grad_fn.name() == "LinalgHouseholderProductBackward0"
    np.testing.assert_allclose(_arr(qg), _arr(q), rtol=1e-13, atol=1e-13)
    for left, tr in ((True, False), (True, True), (False, False), (False, True)):
        cc = c if left else c.mT
        o = rgrad.ormqr(a.detach(), tau, cc, left, tr)
        og = rgrad.ormqr(a, tau, cc, left, tr)
        assert o.grad_fn is None and og.grad_fn.name() == "OrmqrBackward0"
        np.testing.assert_allclose(_arr(og), _arr(o), rtol=1e-13, atol=1e-13)
    with rgrad.no_grad():
        assert rgrad.ormqr(a, tau, c).grad_fn is None


# ---- ldl_factor / ldl_solve ------------------------------------------------------------------------


def _sym(shape, seed, diag_scale):
    a = _np(shape, seed)
    a = a + np.swapaxes(a, -1, -2)
    return a * np.where(np.eye(shape[-1]) > 0, diag_scale, 1.0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,diag", [((16, 16), 1.0), ((16, 16), 0.01), ((33, 33), 0.0), ((2, 3, 12, 12), 0.1),
                                        ((80, 80), 0.05), ((130, 130), 1.0)])
def test_ldl_matches_torch(shape, diag, dtype):
    a, ta = _pair(_sym(shape, 18, diag), dtype)
    r, t = rgrad.linalg.ldl_factor_ex(a), torch.linalg.ldl_factor_ex(ta)
    assert r.pivots.tolist() == t.pivots.tolist() and r.info.tolist() == t.info.tolist()
    assert r.pivots.dtype == rgrad.int64
    tol = 10 * _tol(shape, dtype)
    _close(r.LD, t.LD, tol)
    b, tb = _pair(_np((*shape[:-1], 5), 19), dtype)
    _close(rgrad.linalg.ldl_solve(r.LD, r.pivots, b), torch.linalg.ldl_solve(t.LD, t.pivots, tb), 100 * tol)


# the Python loops the native LDL kernels replaced (rgrad._linalg_more before issue 15)

_BK_ALPHA = (1.0 + 17.0 ** 0.5) / 8.0


def _iamax(xs) -> int:
    """BLAS's i?amax: the first index of the largest absolute value."""
    best, at = -1.0, 0
    for i, x in enumerate(xs):
        if abs(x) > best:
            best, at = abs(x), i
    return at


def _sytf2_lower(a: list) -> tuple[list, list, int]:
    """LAPACK's ``dsytf2`` (lower): the Bunch-Kaufman factorization ``P A Pᵀ = L D Lᵀ`` of
    a symmetric matrix given as rows (its lower triangle read), in place; 1-based pivots,
    negative for the 2x2 blocks, and info (the first zero pivot, 1-based, or 0)."""
    n = len(a)
    piv = [0] * n
    info = 0
    k = 0
    while k < n:
        kstep = 1
        absakk = abs(a[k][k])
        if k < n - 1:
            imax = k + 1 + _iamax([a[i][k] for i in range(k + 1, n)])
            colmax = abs(a[imax][k])
        else:
            imax, colmax = k, 0.0
        if max(absakk, colmax) == 0.0 or absakk != absakk:
            if info == 0:
                info = k + 1
            kp = k
        else:
            if absakk >= _BK_ALPHA * colmax:
                kp = k
            else:
                jmax = k + _iamax([a[imax][j] for j in range(k, imax)])
                rowmax = abs(a[imax][jmax])
                if imax < n - 1:
                    jmax = imax + 1 + _iamax([a[i][imax] for i in range(imax + 1, n)])
                    rowmax = max(rowmax, abs(a[jmax][imax]))
                if absakk >= _BK_ALPHA * colmax * (colmax / rowmax):
                    kp = k
                elif abs(a[imax][imax]) >= _BK_ALPHA * rowmax:
                    kp = imax
                else:
                    kp, kstep = imax, 2
            kk = k + kstep - 1
            if kp != kk:
                # interchange rows and columns kk and kp of the trailing lower triangle
                for i in range(kp + 1, n):
                    a[i][kk], a[i][kp] = a[i][kp], a[i][kk]
                for j in range(kk + 1, kp):
                    a[j][kk], a[kp][j] = a[kp][j], a[j][kk]
                a[kk][kk], a[kp][kp] = a[kp][kp], a[kk][kk]
                if kstep == 2:
                    a[k + 1][k], a[kp][k] = a[kp][k], a[k + 1][k]
            if kstep == 1:
                if k < n - 1:
                    d11 = 1.0 / a[k][k]
                    for j in range(k + 1, n):  # dsyr: A22 -= d11 x xᵀ (lower), then x *= d11
                        xj = a[j][k]
                        if xj != 0.0:
                            t = -d11 * xj
                            for i in range(j, n):
                                a[i][j] += a[i][k] * t
                    for i in range(k + 1, n):
                        a[i][k] *= d11
            elif k < n - 2:
                d21 = a[k + 1][k]
                d11 = a[k + 1][k + 1] / d21
                d22 = a[k][k] / d21
                t = 1.0 / (d11 * d22 - 1.0)
                d21 = t / d21
                for j in range(k + 2, n):
                    wk = d21 * (d11 * a[j][k] - a[j][k + 1])
                    wkp1 = d21 * (d22 * a[j][k + 1] - a[j][k])
                    for i in range(j, n):
                        a[i][j] = a[i][j] - a[i][k] * wk - a[i][k + 1] * wkp1
                    a[j][k] = wk
                    a[j][k + 1] = wkp1
        if kstep == 1:
            piv[k] = kp + 1
        else:
            piv[k] = piv[k + 1] = -(kp + 1)
        k += kstep
    return a, piv, info


def _sytrs_lower(a: list, piv: list, b: list) -> list:
    """LAPACK's ``dsytrs`` (lower): ``A X = B`` from ``_sytf2_lower``'s factors; B as rows."""
    n = len(a)
    k = 0
    while k < n:  # L D Y = P B
        if piv[k] > 0:
            kp = piv[k] - 1
            if kp != k:
                b[k], b[kp] = b[kp], b[k]
            for i in range(k + 1, n):
                b[i] = [x - a[i][k] * y for x, y in zip(b[i], b[k])]
            b[k] = [x / a[k][k] for x in b[k]]
            k += 1
        else:
            kp = -piv[k] - 1
            if kp != k + 1:
                b[k + 1], b[kp] = b[kp], b[k + 1]
            for i in range(k + 2, n):
                b[i] = [x - a[i][k] * y for x, y in zip(b[i], b[k])]
                b[i] = [x - a[i][k + 1] * y for x, y in zip(b[i], b[k + 1])]
            akm1k = a[k + 1][k]
            akm1 = a[k][k] / akm1k
            ak = a[k + 1][k + 1] / akm1k
            denom = akm1 * ak - 1.0
            rk, rk1 = [], []
            for bkm1, bk in zip(b[k], b[k + 1]):
                bkm1, bk = bkm1 / akm1k, bk / akm1k
                rk.append((ak * bkm1 - bk) / denom)
                rk1.append((akm1 * bk - bkm1) / denom)
            b[k], b[k + 1] = rk, rk1
            k += 2
    k = n - 1
    while k >= 0:  # Lᵀ Pᵀ X = Y
        if piv[k] > 0:
            for i in range(k + 1, n):
                b[k] = [x - a[i][k] * y for x, y in zip(b[k], b[i])]
            kp = piv[k] - 1
            if kp != k:
                b[k], b[kp] = b[kp], b[k]
            k -= 1
        else:
            for i in range(k + 1, n):
                b[k] = [x - a[i][k] * y for x, y in zip(b[k], b[i])]
                b[k - 1] = [x - a[i][k - 1] * y for x, y in zip(b[k - 1], b[i])]
            kp = -piv[k] - 1
            if kp != k:
                b[k], b[kp] = b[kp], b[k]
            k -= 2
    return b


def _reference_factor(a):
    n = a.shape[-1]
    ld, piv, info = _sytf2_lower(a.tolist()) if n else ([], [], 0)
    return np.array([[ld[i][j] if j <= i else 0.0 for j in range(n)] for i in range(n)]).reshape(n, n), piv, info


@pytest.mark.parametrize("n,diag", [(1, 1.0), (2, 0.0), (5, 0.01), (9, 0.0), (16, 0.001), (31, 0.05), (40, 1.0)])
def test_ldl_is_the_python_loop_bit_for_bit(n, diag):
    # the native dsytf2 / dsytrs give the bits the Python loops gave (float64)
    for seed in range(4):
        x = _sym((n, n), 100 + seed, diag)
        if seed == 3 and n > 2:
            x[n // 2, :] = x[:, n // 2] = 0.0  # a singular matrix: info
        a = rgrad.from_numpy(x.copy())
        r = rgrad.linalg.ldl_factor_ex(a)
        ld, piv, info = _reference_factor(x)
        assert r.pivots.tolist() == piv and r.info.item() == info
        assert _arr(r.LD).tobytes() == ld.tobytes()
        if info == 0:
            b = _np((n, 3), 200 + seed)
            got = rgrad.linalg.ldl_solve(r.LD, r.pivots, rgrad.from_numpy(b.copy()))
            want = np.array(_sytrs_lower(ld.tolist(), piv, b.tolist()))
            assert _arr(got).tobytes() == want.tobytes()


def test_ldl_nan_and_bad_pivots():
    x = _sym((6, 6), 7, 1.0)
    x[2, 1] = np.nan
    r = rgrad.linalg.ldl_factor_ex(rgrad.from_numpy(x))
    ld, piv, info = _reference_factor(x)
    assert r.pivots.tolist() == piv and r.info.item() == info
    np.testing.assert_array_equal(_arr(r.LD), ld)
    ld = rgrad.eye(3, dtype=rgrad.float64)
    b = rgrad.ones(3, 1, dtype=rgrad.float64)
    with pytest.raises(RuntimeError, match="pivots"):
        rgrad.linalg.ldl_solve(ld, rgrad.tensor([1, 2, 7]), b)
    with pytest.raises(RuntimeError, match="pivots"):
        rgrad.linalg.ldl_solve(ld, rgrad.tensor([1, 2, -3]), b)
