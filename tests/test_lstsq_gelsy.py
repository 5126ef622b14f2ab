"""linalg.lstsq's default driver as torch's: LAPACK's gelsy (src/backend/linalg/gelsy.rs),
a QR with column pivoting whose rank is estimated incrementally, against torch's own
gelsy: the rank exactly, the solution to rounding; full rank and rank deficient, tall,
square and wide, batches and broadcasting, both dtypes, rcond values around a gap in
the singular values, zero and empty inputs, and the paths with a graph (the rank is
still gelsy's, the gradient pinv's)."""

from __future__ import annotations

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")


def _low_rank(rng, batch, m, n, r, gap=None):
    """(*batch, m, n) of rank r (or, with `gap`, singular values 1..gap and the rest at
    gap·1e-3 of the smallest: a numerical rank that depends on rcond)."""
    u = rng.standard_normal((*batch, m, min(m, n)))
    v = rng.standard_normal((*batch, min(m, n), n))
    u, _ = np.linalg.qr(u)
    vt = np.linalg.qr(v.swapaxes(-1, -2))[0].swapaxes(-1, -2)
    k = min(m, n)
    s = np.linspace(3.0, 1.0, k)
    if gap is None:
        s[r:] = 0.0
    else:
        s[r:] = gap * np.linspace(1.0, 0.5, k - r)
    return (u * s[..., None, :]) @ vt


def _both(a, b, dtype, **kw):
    r = rgrad.linalg.lstsq(rgrad.tensor(a, dtype=getattr(rgrad, dtype)), rgrad.tensor(b, dtype=getattr(rgrad, dtype)),
                           **kw)
    t = torch.linalg.lstsq(torch.tensor(a, dtype=getattr(torch, dtype)), torch.tensor(b, dtype=getattr(torch, dtype)),
                           **kw)
    return r, t


def _check(r, t, dtype):
    assert tuple(r.solution.shape) == tuple(t.solution.shape)
    assert tuple(r.rank.shape) == tuple(t.rank.shape)
    assert str(r.rank.dtype) == "rgrad.int64"
    np.testing.assert_array_equal(r.rank.numpy(), t.rank.numpy())
    assert r.residuals.numel() == t.residuals.numel() == 0
    assert r.singular_values.numel() == t.singular_values.numel() == 0
    tol = 2e-4 if dtype == "float32" else 1e-9
    x, y = r.solution.double().numpy(), t.solution.double().numpy()
    np.testing.assert_allclose(x, y, rtol=tol, atol=tol * max(1.0, np.abs(y).max()))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("m,n,r", [(64, 32, 32), (64, 32, 20), (20, 20, 20), (20, 20, 13), (8, 30, 8), (8, 30, 5),
                                   (30, 1, 1), (1, 7, 1), (5, 5, 1), (100, 70, 69)])
def test_rank_and_solution_match_torch(dtype, m, n, r):
    rng = np.random.default_rng(m * 1000 + n * 10 + r)
    a = _low_rank(rng, (), m, n, r)
    b = rng.standard_normal((m, 3))
    _check(*_both(a, b, dtype), dtype)
    _check(*_both(a, b[:, 0], dtype), dtype)  # a vector right-hand side


@pytest.mark.parametrize("rcond", [None, 1e-2, 1e-4, 1e-6, 0.0, -1.0])
def test_rcond_around_a_gap(rcond):
    # singular values 3..1 and then 1e-3..5e-4: the rank flips between rcond values
    rng = np.random.default_rng(3)
    a = _low_rank(rng, (), 40, 24, 16, gap=1e-3)
    b = rng.standard_normal((40, 2))
    _check(*_both(a, b, "float64", rcond=rcond), "float64")


def test_batches_and_broadcasting():
    rng = np.random.default_rng(4)
    a = np.stack([_low_rank(rng, (), 12, 9, r) for r in (9, 4, 1)])  # (3, 12, 9)
    b = rng.standard_normal((3, 12, 2))
    _check(*_both(a, b, "float64"), "float64")
    # A's batch broadcast against B's: the rank keeps A's batch shape
    _check(*_both(a[:1], rng.standard_normal((4, 12, 2)), "float64"), "float64")
    _check(*_both(a[0], rng.standard_normal((5, 12, 2))[0], "float64"), "float64")
    _check(*_both(a[:, None], rng.standard_normal((3, 2, 12, 1)), "float64"), "float64")


def test_zero_matrix_special_values_and_empty():
    _check(*_both(np.zeros((5, 3)), np.ones((5, 2)), "float64"), "float64")
    a = np.ones((6, 4))  # rank 1, every column the same norm (pivot ties)
    _check(*_both(a, np.arange(6.0)[:, None], "float64"), "float64")
    for shape_a, shape_b in [((0, 3), (0, 2)), ((4, 0), (4, 2)), ((4, 3), (4, 0))]:
        r, t = _both(np.zeros(shape_a), np.zeros(shape_b), "float64")
        assert tuple(r.solution.shape) == tuple(t.solution.shape)
        np.testing.assert_array_equal(r.solution.numpy(), t.solution.numpy())
        np.testing.assert_array_equal(r.rank.numpy(), t.rank.numpy())
    # NaN input: no hang, no panic, NaN in the solution (torch's MKL rejects the call
    # with an internal assert, "please report a bug to PyTorch": not reproduced)
    a = np.eye(4)
    a[1, 2] = np.nan
    r = rgrad.linalg.lstsq(rgrad.tensor(a), rgrad.ones(4, 1, dtype=rgrad.float64))
    assert np.isnan(r.solution.numpy()).any()


def test_with_a_graph_the_rank_is_still_gelsy():
    rng = np.random.default_rng(5)
    a = _low_rank(rng, (), 30, 20, 12, gap=1e-9)
    b = rng.standard_normal((30, 2))
    ar = rgrad.tensor(a, requires_grad=True)
    at = torch.tensor(a, requires_grad=True)
    r = rgrad.linalg.lstsq(ar, rgrad.tensor(b))
    t = torch.linalg.lstsq(at, torch.tensor(b))
    np.testing.assert_array_equal(r.rank.numpy(), t.rank.numpy())
    assert type(r.solution.grad_fn).__name__ == type(t.solution.grad_fn).__name__


@pytest.mark.parametrize("driver", ["gelsy", None])
def test_gelsy_on_a_full_rank_random_batch_in_float32(driver):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((5, 64, 32))
    b = rng.standard_normal((5, 64, 4))
    kw = {} if driver is None else {"driver": driver}
    _check(*_both(a, b, "float32", **kw), "float32")
