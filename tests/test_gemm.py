"""The float GEMM at each instruction-set level, through the Python API.

`RGRAD_GEMM_LEVEL` (read once per process) caps the level, so each level runs in its
own interpreter. The Rust unit tests (backend/cpu/matmul.rs) check every element bit
for bit against the scalar chain at every level the CPU has; these check the paths the
MLP takes end to end: `F.linear` with a bias (addmm: each chain starts from the bias,
read in place), its thin-n orientation (n = 10), a bias broadcast down the columns,
and the backward products, against float64 NumPy, and the AVX-512 and AVX2 levels
against each other bit for bit (both fuse each multiply-add in the order of k).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

_LEVEL_SCRIPT = r"""
import json, sys
import numpy as np
import rgrad
import rgrad.nn.functional as F

rgrad.manual_seed(0)
out = {}
for name, (m, k, n) in {"w1": (128, 784, 512), "w3": (128, 512, 10), "small": (7, 33, 17)}.items():
    x = rgrad.randn(m, k)
    w = rgrad.randn(n, k).requires_grad_()
    b = rgrad.randn(n).requires_grad_()
    y = F.linear(x.requires_grad_(), w, b)
    y.backward(rgrad.ones(m, n))
    out[name] = [t.detach().numpy().tolist() for t in (x, w, b, y, x.grad, w.grad, b.grad)]
# addmm with a bias broadcast along the rows (one value per row)
c, a, bb = rgrad.randn(96, 1), rgrad.randn(96, 300), rgrad.randn(300, 70)
out["col_bias"] = [t.numpy().tolist() for t in (c, a, bb, rgrad.addmm(c, a, bb))]
json.dump(out, sys.stdout)
"""

LEVELS = ["baseline", "avx2", "avx512"]


def _run(level: str) -> dict:
    env = dict(os.environ, RGRAD_GEMM_LEVEL=level)
    r = subprocess.run([sys.executable, "-c", _LEVEL_SCRIPT], env=env, capture_output=True, text=True, check=True)
    return {k: [np.array(v, dtype=np.float32) for v in vs] for k, vs in json.loads(r.stdout).items()}


@pytest.fixture(scope="module")
def results() -> dict[str, dict]:
    return {level: _run(level) for level in LEVELS}


def _close(got: np.ndarray, want: np.ndarray, mag: np.ndarray) -> None:
    # float32 chains of up to 784 terms: a relative error of the sum of magnitudes
    assert np.all(np.abs(got - want) <= 1e-5 * mag + 1e-30), np.max(np.abs(got - want) / (mag + 1e-30))


@pytest.mark.parametrize("level", LEVELS)
def test_linear_with_bias_and_its_gradients_at_each_level(results, level):
    for name, vals in results[level].items():
        if name == "col_bias":
            c, a, bb, r = vals
            want = c.astype(np.float64) + a.astype(np.float64) @ bb.astype(np.float64)
            _close(r, want, np.abs(c) + np.abs(a) @ np.abs(bb))
            continue
        x, w, b, y, gx, gw, gb = vals
        x64, w64 = x.astype(np.float64), w.astype(np.float64)
        _close(y, x64 @ w64.T + b, np.abs(x) @ np.abs(w).T + np.abs(b))
        ones = np.ones_like(y, dtype=np.float64)
        _close(gx, ones @ w64, ones @ np.abs(w))
        _close(gw, ones.T @ x64, ones.T @ np.abs(x))
        assert np.array_equal(gb, np.full_like(gb, y.shape[0]))


def test_avx2_and_avx512_give_the_same_bits(results):
    # (on a CPU without AVX-512 both runs are AVX2's, and agree trivially)
    a, b = results["avx2"], results["avx512"]
    for name in a:
        for u, v in zip(a[name], b[name]):
            assert np.array_equal(u.view(np.uint32), v.view(np.uint32)), name


def test_outer_products_are_one_rounded_multiply_at_every_thread_count():
    """Products with an inner dimension of 1 (per-sample weight gradients are batched
    outer products) take their own streaming kernel: each element is ``a[i] * b[j]``
    rounded once, whatever the thread count, batched or not, with strided operands, and
    many small batched products split by product give each product's bits."""
    import rgrad

    rgrad.manual_seed(3)
    a = rgrad.randn(64, 300, 1, dtype=rgrad.float64)
    b = rgrad.randn(64, 1, 520, dtype=rgrad.float64)
    an, bn = a.numpy(), b.numpy()
    want = an * bn  # NumPy: one multiply per element
    small_a, small_b = rgrad.randn(256, 16, 40), rgrad.randn(256, 32, 40).transpose(1, 2)
    results = []
    before = rgrad.get_num_threads()
    try:
        for threads in (1, 2, 3):
            rgrad.set_num_threads(threads)
            got = rgrad.bmm(a, b)
            np.testing.assert_array_equal(got.numpy(), want)
            np.testing.assert_array_equal(rgrad.mm(a[3], b[5]).numpy(), an[3] @ bn[5])
            # strided: b's row every other element, a's column from a transposed view
            bs = rgrad.randn(1, 1040, dtype=rgrad.float64)[:, ::2]
            at = rgrad.randn(1, 300, dtype=rgrad.float64).t()
            np.testing.assert_array_equal(rgrad.mm(at, bs).numpy(), at.numpy() * bs.numpy())
            results.append(rgrad.bmm(small_a, small_b).numpy())
    finally:
        rgrad.set_num_threads(before)
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    loose = np.einsum("bmk,bkn->bmn", small_a.numpy().astype(np.float64), small_b.numpy().astype(np.float64))
    np.testing.assert_allclose(results[0], loose, rtol=1e-4, atol=1e-4)
