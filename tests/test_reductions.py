"""The reduction kernels (src/backend/cpu/reduce/): every reduction along every dim of
1-D/2-D/3-D inputs, contiguous and strided (transposed, sliced), against a float64 NumPy
reference; empty dims; NaN and inf as torch; and the same bits at every thread count,
SIMD level and run (each level forced with RGRAD_VMATH_LEVEL in a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import rgrad

# name -> (rgrad call, float64 NumPy reference); `d` is a dim or None (all dims)
def _np_lse(x, d):
    m = np.max(x, axis=d, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.squeeze(np.log(np.sum(np.exp(x - m), axis=d, keepdims=True)) + m, axis=d)


def _np_softmax(x, d, log=False):
    z = x - np.max(x, axis=d, keepdims=True)
    e = np.exp(z)
    s = np.sum(e, axis=d, keepdims=True)
    return z - np.log(s) if log else e / s


REDUCTIONS = {
    "sum": (lambda t, d: t.sum() if d is None else t.sum(d), lambda x, d: np.sum(x, axis=d)),
    "mean": (lambda t, d: t.mean() if d is None else t.mean(d), lambda x, d: np.mean(x, axis=d)),
    "prod": (lambda t, d: t.prod() if d is None else t.prod(d), lambda x, d: np.prod(x, axis=d)),
    "var": (lambda t, d: t.var() if d is None else t.var(d), lambda x, d: np.var(x, axis=d, ddof=1)),
    "std": (lambda t, d: t.std() if d is None else t.std(d), lambda x, d: np.std(x, axis=d, ddof=1)),
    "norm": (lambda t, d: t.norm() if d is None else t.norm(dim=d),
             lambda x, d: np.sqrt(np.sum(x * x, axis=d))),
    "amax": (lambda t, d: t.amax() if d is None else t.amax(d), lambda x, d: np.max(x, axis=d)),
    "amin": (lambda t, d: t.amin() if d is None else t.amin(d), lambda x, d: np.min(x, axis=d)),
    "argmax": (lambda t, d: t.argmax() if d is None else t.argmax(d), lambda x, d: np.argmax(x, axis=d)),
    "argmin": (lambda t, d: t.argmin() if d is None else t.argmin(d), lambda x, d: np.argmin(x, axis=d)),
    "max.values": (lambda t, d: t.max() if d is None else t.max(d)[0], lambda x, d: np.max(x, axis=d)),
    "min.indices": (lambda t, d: t.min().reshape(()) * 0 if d is None else t.min(d)[1],
                    lambda x, d: np.min(x) * 0 if d is None else np.argmin(x, axis=d)),
    "logsumexp": (lambda t, d: t.logsumexp(tuple(range(t.dim())) if d is None else d), _np_lse),
    "softmax": (lambda t, d: t.softmax(-1 if d is None else d),
                lambda x, d: _np_softmax(x, -1 if d is None else d)),
    "log_softmax": (lambda t, d: t.log_softmax(-1 if d is None else d),
                    lambda x, d: _np_softmax(x, -1 if d is None else d, log=True)),
    "all": (lambda t, d: (t > 0).all() if d is None else (t > 0).all(d), lambda x, d: np.all(x > 0, axis=d)),
    "any": (lambda t, d: (t > 1).any() if d is None else (t > 1).any(d), lambda x, d: np.any(x > 1, axis=d)),
}

SHAPES = [(7,), (1000,), (70001,), (5, 6), (33, 70), (300, 301), (2, 40000), (40000, 3), (3, 4, 5), (6, 70, 9)]


def _views(x: np.ndarray):
    """(name, numpy view, the same view of an rgrad tensor)."""
    t = rgrad.from_numpy(np.ascontiguousarray(x))
    yield "contiguous", x, t
    if x.ndim >= 2:
        yield "transposed", np.swapaxes(x, 0, -1), t.transpose(0, -1)
        yield "sliced", x[..., 1:], t[..., 1:]
        yield "rows stepped", x[::2], t[::2]
    else:
        yield "sliced", x[1:-1], t[1:-1]


def _check(name, got, want, dtype, scale):
    got = np.asarray(got, dtype=np.float64) if got.dtype != np.bool_ else got
    assert got.shape == np.shape(want), (name, got.shape, np.shape(want))
    if got.dtype == np.bool_ or name.startswith("arg") or name.endswith("indices"):
        np.testing.assert_array_equal(got, want, err_msg=name)
        return
    tol = 2e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, want, rtol=tol * scale, atol=tol * scale, err_msg=name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_every_reduction_along_every_dim_matches_a_float64_reference(shape, dtype):
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(dtype)
    for vname, xv, tv in _views(x):
        x64 = xv.astype(np.float64)
        for op, (f, ref) in REDUCTIONS.items():
            for d in [None, *range(xv.ndim)]:
                if op == "prod":  # keep products of thousands of factors finite
                    xp = (1 + 0.001 * x64).astype(dtype)
                    got, want = f(rgrad.from_numpy(np.ascontiguousarray(xp)) if vname == "contiguous"
                                  else _same_view(vname, xp), d), ref(xp.astype(np.float64), d)
                else:
                    with warnings.catch_warnings(), np.errstate(all="ignore"):
                        warnings.simplefilter("ignore")  # (var of one element: NaN, as rgrad's)
                        got, want = f(tv, d), ref(x64, d)
                n = xv.size if d is None else xv.shape[d]
                # a sum's rounding grows with the terms; the reference is exact to float64
                scale = 1 + (np.sqrt(n) if op in ("sum", "mean", "var", "std", "norm", "prod") else 0)
                _check(f"{op} {vname} {shape} dim={d}", got.numpy(), want, dtype, scale)


def _same_view(vname: str, xv: np.ndarray):
    """An rgrad tensor of the values `xv` laid out as the view `vname` lays them out."""
    if vname == "transposed":
        return rgrad.from_numpy(np.ascontiguousarray(np.swapaxes(xv, 0, -1))).transpose(0, -1)
    return rgrad.from_numpy(np.ascontiguousarray(xv))


def test_reductions_over_several_dims_and_keepdim():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 70, 9)).astype(np.float32)
    t = rgrad.from_numpy(x)
    for dims in [(0, 2), (0, 1), (1, 2), (2, 0)]:
        np.testing.assert_allclose(t.sum(dims).numpy(), x.astype(np.float64).sum(axis=dims), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(t.transpose(0, 2).sum(dims).numpy(),
                                   np.swapaxes(x, 0, 2).astype(np.float64).sum(axis=dims), rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(t.amax(dims, keepdim=True).numpy(), x.max(axis=dims, keepdims=True))
        np.testing.assert_allclose(t.var(dims).numpy(), x.astype(np.float64).var(axis=dims, ddof=1), rtol=1e-5)
        np.testing.assert_allclose(t.logsumexp(dims).numpy(), _np_lse(x.astype(np.float64), dims), rtol=1e-5)
        np.testing.assert_array_equal((t > 0).all(dims).numpy(), (x > 0).all(axis=dims))


def test_empty_dims():
    for shape in [(0,), (2, 0), (0, 3), (2, 0, 3)]:
        x = np.zeros(shape, dtype=np.float32)
        t = rgrad.from_numpy(x)
        for d in range(len(shape)):
            np.testing.assert_array_equal(t.sum(d).numpy(), x.sum(axis=d))
            np.testing.assert_array_equal(t.prod(d).numpy(), x.prod(axis=d))
            np.testing.assert_array_equal((t > 0).all(d).numpy(), (x > 0).all(axis=d))
            np.testing.assert_array_equal((t > 0).any(d).numpy(), (x > 0).any(axis=d))
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")  # (NumPy's "mean of empty slice": NaN, as torch)
                np.testing.assert_array_equal(t.mean(d).numpy(), x.mean(axis=d))
        assert t.sum().item() == 0.0 and t.prod().item() == 1.0
        assert (t > 0).all().item() is True and (t > 0).any().item() is False


def test_nan_and_inf_as_torch():
    torch = pytest.importorskip("torch")
    nan, inf = float("nan"), float("inf")
    rows = [[1.0, nan, 3.0, nan], [nan, 2.0, nan, 5.0], [1.0, 5.0, 5.0, -1.0], [inf, 1.0, -inf, 0.0],
            [-inf, -inf, -inf, -inf], [inf, inf, 2.0, 2.0], [0.0, -0.0, 0.0, -0.0]]
    for dtype in (np.float32, np.float64):
        x = np.array(rows, dtype=dtype)
        # long rows too: NaN or inf past the first vector blocks and in a tail
        big = np.random.default_rng(0).standard_normal((5, 1000)).astype(dtype)
        big[1, 777], big[2, 3], big[2, 999], big[3, 500], big[4, 998] = nan, inf, nan, -inf, inf
        for a in (x, big, np.ascontiguousarray(x.T), np.ascontiguousarray(big.T)):
            t, u = rgrad.from_numpy(a), torch.from_numpy(a)
            # (prod accumulates in float64: a long product that underflows float32 times
            # inf is inf here, NaN in torch; short rows only)
            prod = ("prod",) if a.size < 100 else ()
            for d in (0, 1):
                for op in ("amax", "amin", "argmax", "argmin", "sum", "mean", "logsumexp",
                           "softmax", "log_softmax", "var", "norm", *prod):
                    r = (t.norm(dim=d) if op == "norm" else getattr(t, op)(d)).numpy()
                    w = (u.norm(dim=d) if op == "norm" else getattr(u, op)(d)).numpy()
                    np.testing.assert_allclose(r, w, rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=f"{op} {d}")
                for is_max in (True, False):
                    rv, ri = t.max(d) if is_max else t.min(d)
                    wv, wi = u.max(d) if is_max else u.min(d)
                    np.testing.assert_array_equal(rv.numpy(), wv.numpy())
                    np.testing.assert_array_equal(ri.numpy(), wi.numpy())
            for op in ("max", "min", "sum", "argmax", "argmin", "all", "any"):
                np.testing.assert_array_equal(getattr(t, op)().numpy(), getattr(u, op)().numpy(), err_msg=op)


def test_column_folds_and_row_products_match_torch_with_keepdim_and_specials():
    # the column kernels (sum, mean, prod, amax, amin down columns: short columns, long
    # ones split into row blocks, wider than a 1024-column tile) and the row products,
    # on contiguous, transposed and sliced inputs, with keepdim, NaN, inf * 0 (NaN) and
    # -0.0, float32 and float64, against torch
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    for dt in (np.float32, np.float64):
        # (torch sums float32 in float32: its error on sums of ~1000 values near 0)
        tol = dict(rtol=1e-5, atol=1e-4) if dt == np.float32 else dict(rtol=1e-12, atol=1e-12)
        for shape in [(3, 5), (17, 129), (600, 1030), (1030, 33)]:
            x = np.tanh(rng.standard_normal(shape)).astype(dt)
            # NaN in column 0; inf with a 0 in row 1 and in the last column (inf * 0);
            # a -0.0 in column 1
            x[0, 0], x[1, -1], x[1, 0], x[2, -1], x[2, 1] = np.nan, np.inf, 0.0, 0.0, -0.0
            views = [
                (rgrad.from_numpy(x), torch.from_numpy(x)),
                (rgrad.from_numpy(np.ascontiguousarray(x.T)).transpose(0, 1),
                 torch.from_numpy(np.ascontiguousarray(x.T)).transpose(0, 1)),
                (rgrad.from_numpy(x)[:, 1:-1], torch.from_numpy(x)[:, 1:-1]),
            ]
            for t, u in views:
                for d in (0, 1):
                    for keep in (False, True):
                        for op in ("sum", "mean", "prod", "amax", "amin"):
                            r = getattr(t, op)(d, keepdim=keep).numpy()
                            w = getattr(u, op)(d, keepdim=keep).numpy()
                            assert r.shape == w.shape, f"{op} {d} {keep}"
                            msg = f"{dt.__name__} {shape} {op}({d}, keepdim={keep})"
                            if op in ("amax", "amin"):
                                np.testing.assert_array_equal(r, w, err_msg=msg)
                            else:
                                np.testing.assert_allclose(r, w, equal_nan=True, err_msg=msg, **tol)


def test_softmax_backward_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(2).standard_normal((37, 300)).astype(np.float32)
    g = np.random.default_rng(3).standard_normal((37, 300)).astype(np.float32)
    for log in (False, True):
        for d in (0, 1):
            t = rgrad.from_numpy(x).requires_grad_()
            u = torch.from_numpy(x).requires_grad_()
            (t.log_softmax(d) if log else t.softmax(d)).backward(rgrad.from_numpy(g))
            (u.log_softmax(d) if log else u.softmax(d)).backward(torch.from_numpy(g))
            np.testing.assert_allclose(t.grad.numpy(), u.grad.numpy(), rtol=1e-5, atol=1e-6)


# Run in a subprocess with the level forced: hashes of every reduction's output bits,
# twice (run after run).
PROGRAM = r"""
import hashlib, json, sys
import numpy as np
import rgrad
rgrad.set_num_threads(int(sys.argv[1]))
rng = np.random.default_rng(0)
out = {"level": rgrad._C._vmath_level()}
for dt in ("float32", "float64"):
    for shape in [(70001,), (300, 301), (2, 40000), (40000, 3), (6, 70, 90), (1 << 20,)]:
        x = (rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 3, shape)).astype(dt)
        t = rgrad.from_numpy(x)
        p = rgrad.from_numpy((1 + 1e-4 * x / np.abs(x).max()).astype(dt))
        for run in range(2):
            for d in [None, *range(len(shape))]:
                a = () if d is None else (d,)
                res = [t.sum(*a), t.mean(*a), p.prod(*a), t.var(*a), t.std(*a), t.norm(dim=d),
                       t.amax(*a), t.argmax(*a), (t > 0).all(*a)]
                if d is not None:
                    res += [t.logsumexp(d), t.softmax(d), t.log_softmax(d), t.transpose(0, -1).sum(d)]
                h = hashlib.sha256(b"".join(r.numpy().tobytes() for r in res)).hexdigest()
                key = f"{dt} {shape} {d}"
                assert out.setdefault(key, h) == h, f"run {run} differs: {key}"
print(json.dumps(out))
"""


def _run(level: str | None, threads: int) -> dict:
    env = dict(os.environ)
    env.pop("RGRAD_VMATH_LEVEL", None)
    if level is not None:
        env["RGRAD_VMATH_LEVEL"] = level
    proc = subprocess.run([sys.executable, "-c", PROGRAM, str(threads)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_same_bits_at_every_thread_count_level_and_run():
    best = _run(None, 2)
    order = ["baseline", "avx2", "avx512"]
    for level in order[: order.index(best["level"]) + 1]:
        for threads in (1, 2):
            got = _run(level, threads)
            assert got["level"] == level
            diff = [k for k in best if k != "level" and got[k] != best[k]]
            assert not diff, f"{level}, {threads} threads: {diff}"
