"""cholesky_inverse as LAPACK's potri (trtri, then lauum: `backend/linalg/potri.rs`)
against torch: values at sizes around the kernel's row-loop base and its recursive
splits, both triangles, float32 and float64, batches and strided inputs; exact symmetry;
torch's LinAlgError on a zero diagonal (with the batch element); its special values on
small matrices; the same bits on one thread and two."""

from __future__ import annotations

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")


def _factor(n: int, seed: int, batch=()) -> np.ndarray:
    """A well-conditioned lower Cholesky factor (random below, dominant diagonal)."""
    rng = np.random.default_rng(seed)
    low = np.tril(rng.standard_normal((*batch, n, n)), -1) * 0.5
    diag = 2.0 + rng.random((*batch, n))
    return low + np.einsum("...i,ij->...ij", diag, np.eye(n))


@pytest.mark.parametrize("n", [1, 2, 5, 31, 32, 33, 64, 65, 100, 130])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_values_match_torch_and_are_symmetric(n, upper, dtype):
    low = _factor(n, n)
    f = low.swapaxes(-1, -2) if upper else low
    # the other triangle holds garbage: neither library reads it
    f = f + (np.tril(np.full((n, n), 7.0), -1) if upper else np.triu(np.full((n, n), 7.0), 1))
    r = rgrad.cholesky_inverse(rgrad.tensor(f.tolist(), dtype=getattr(rgrad, dtype)), upper=upper)
    t = torch.cholesky_inverse(torch.tensor(f, dtype=getattr(torch, dtype)), upper=upper)
    got, want = np.array(r.tolist()), t.double().numpy()
    tol = 1e-12 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    assert (got == got.T).all()
    # and it is the inverse: (L Lᵀ) X = I
    a = low.astype(np.float64) @ low.T.astype(np.float64)
    np.testing.assert_allclose(a @ got, np.eye(n), atol=1e-10 if dtype == "float64" else 1e-4)


@pytest.mark.parametrize("upper", [False, True])
def test_batches_and_strided_inputs(upper):
    low = _factor(40, 7, batch=(2, 3))
    f = low.swapaxes(-1, -2) if upper else low
    r = rgrad.tensor(f.tolist(), dtype=rgrad.float64)
    t = torch.tensor(f)
    np.testing.assert_allclose(np.array(rgrad.cholesky_inverse(r, upper).tolist()),
                               torch.cholesky_inverse(t, upper).numpy(), rtol=1e-12, atol=1e-14)
    # a transposed view (the other triangle's factor, read through strides) and a batch slice
    rt, tt = r.mT, t.mT
    np.testing.assert_allclose(np.array(rgrad.cholesky_inverse(rt, not upper).tolist()),
                               torch.cholesky_inverse(tt, not upper).numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.array(rgrad.cholesky_inverse(r[:, 1], upper).tolist()),
                               torch.cholesky_inverse(t[:, 1], upper).numpy(), rtol=1e-12, atol=1e-14)


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (the error is compared)
        return type(e).__name__, str(e).replace("torch.", "").replace("rgrad.", "")
    return None


@pytest.mark.parametrize("upper", [False, True])
def test_a_zero_on_the_diagonal_raises_torchs_linalg_error(upper):
    for shape, at in (((4, 4), (2, 2)), ((3, 4, 4), (1, 3, 3)), ((2, 2, 5, 5), (1, 0, 0, 0))):
        f = np.broadcast_to(np.eye(shape[-1]) * 2.0, shape).copy()
        f[at] = 0.0
        rr = _error(lambda: rgrad.cholesky_inverse(rgrad.tensor(f.tolist()), upper))
        tt = _error(lambda: torch.cholesky_inverse(torch.tensor(f, dtype=torch.float32), upper))
        assert rr is not None and rr == tt, (rr, tt)
        assert isinstance(_raised(lambda: rgrad.cholesky_inverse(rgrad.tensor(f.tolist()), upper)),
                          rgrad.linalg.LinAlgError)


def _raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return e
    return None


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("m", [
    [[1.0, 0.0], [float("inf"), 1.0]],
    [[1.0, 0.0], [float("nan"), 1.0]],
    [[2.0, 0.0], [1.0, 3.0]],
    [[2.0, 0.0], [0.0, 3.0]],
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
])
def test_small_special_values_as_torch(m, upper):
    for dtype in ("float32", "float64"):
        got = np.array(rgrad.cholesky_inverse(rgrad.tensor(m, dtype=getattr(rgrad, dtype)), upper).tolist())
        want = torch.cholesky_inverse(torch.tensor(m, dtype=getattr(torch, dtype)), upper).double().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
        # zeros carry torch's signs (LAPACK negates a zero product: -0.0 off the diagonal)
        assert (np.signbit(got[want == 0]) == np.signbit(want[want == 0])).all(), (got, want)


def test_the_same_bits_on_one_thread_and_two():
    f = rgrad.tensor(_factor(200, 5, batch=(3,)).tolist(), dtype=rgrad.float64)
    before = rgrad.get_num_threads()
    try:
        rgrad.set_num_threads(1)
        one = rgrad.cholesky_inverse(f).numpy().tobytes()
        rgrad.set_num_threads(2)
        two = rgrad.cholesky_inverse(f).numpy().tobytes()
    finally:
        rgrad.set_num_threads(before)
    assert one == two


def test_gradient_still_matches_torch():
    low = _factor(6, 11)
    r = rgrad.tensor(low.tolist(), dtype=rgrad.float64, requires_grad=True)
    t = torch.tensor(low, requires_grad=True)
    w = np.random.default_rng(2).standard_normal((6, 6))
    (rgrad.cholesky_inverse(r) * rgrad.tensor(w.tolist(), dtype=rgrad.float64)).sum().backward()
    (torch.cholesky_inverse(t) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(np.array(r.grad.tolist()), t.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert type(rgrad.cholesky_inverse(r).grad_fn).__name__ == "CholeskyInverseBackward0"
