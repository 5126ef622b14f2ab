"""unique, unique_consecutive, bincount and histc (python/rgrad/_composite3.py,
src/ops/counting.rs) against torch: values, dtypes, shapes, tuples, nodes and their
errors, errors (type and message)."""

from __future__ import annotations

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001  (the outcome is compared)
        return ("raises", type(e).__name__, str(e).replace("torch.", "").replace("rgrad.", ""))


def _node(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def _same(r, t):
    if isinstance(t, tuple):
        assert type(r) is tuple and len(r) == len(t)
        for a, b in zip(r, t):
            _same(a, b)
        return
    assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(r.shape) == tuple(t.shape)
    assert r.requires_grad == t.requires_grad and _node(r) == _node(t)
    np.testing.assert_array_equal(r.detach().numpy(), t.detach().numpy())
    if t.is_floating_point():  # (which of 0.0 and -0.0 a group keeps: torch's sort order)
        np.testing.assert_array_equal(np.signbit(r.detach().numpy()), np.signbit(t.detach().numpy()))
    if t.requires_grad:  # (the node's backward raises torch's error)
        br = _outcome(lambda: r.sum().backward())
        bt = _outcome(lambda: t.sum().backward())
        assert br == bt or (br[0] == bt[0] == "raises" and br[1:] == bt[1:]), (br, bt)


def _compare(fn, *arrays):
    def conv(lib, a):
        if isinstance(a, np.ndarray):
            return lib.tensor(a, requires_grad=a.dtype.kind == "f")
        return a

    rr = _outcome(lambda: fn(rgrad, *[conv(rgrad, a) for a in arrays]))
    tt = _outcome(lambda: fn(torch, *[conv(torch, a) for a in arrays]))
    assert rr[0] == tt[0], (rr, tt)
    if rr[0] == "raises":
        assert rr[1:] == tt[1:]
        return
    _same(rr[1], tt[1])


NAN = np.nan
X = np.array([3.0, 1.0, 2.0, 3.0, 1.0, 5.0, NAN, NAN, 2.0])
M = np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 5.0], [1.0, 2.0]])
I = np.array([[2, 1, 2], [1, 3, 1], [2, 1, 2]])
_rng = np.random.default_rng(7)
# (the radix sort's shifted keys: small integers of both signs in one or two passes,
# spans of several bytes, the int64 extremes; floats with signed zeros, infinities, NaNs)
SIGNED = _rng.integers(-40, 40, 5000)
WIDE = np.concatenate([_rng.integers(-2**40, 2**40, 3000), [np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0, -1] * 3,
                       SIGNED[:500]])
SPECIAL = _rng.choice(np.array([0.0, -0.0, 1.5, -1.5, np.inf, -np.inf, NAN, 1e-300, -2.0]), 4000)
FLAGS = [dict(), dict(return_inverse=True), dict(return_counts=True), dict(return_inverse=True, return_counts=True),
         dict(sorted=False, return_inverse=True)]


@pytest.mark.parametrize("kw", FLAGS, ids=str)
@pytest.mark.parametrize("data", [X, M, I, np.array(4.0), np.zeros(0), np.array([True, False, True]),
                                  X.astype(np.float32), SIGNED, WIDE, SPECIAL, SPECIAL.astype(np.float32),
                                  _rng.random(3000) < 0.3], ids=range(12))
def test_unique(kw, data):
    _compare(lambda lib, x: lib.unique(x, **kw), data)
    _compare(lambda lib, x: x.unique(**kw), data)
    ckw = {k: v for k, v in kw.items() if k != "sorted"}
    _compare(lambda lib, x: lib.unique_consecutive(x, **ckw), data)
    _compare(lambda lib, x: x.unique_consecutive(**ckw), data)


@pytest.mark.parametrize("kw", FLAGS, ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("data", [M, I, np.array([[1.0, NAN], [1.0, NAN]]), np.ones((2, 2, 3))], ids=range(4))
def test_unique_dim(kw, dim, data):
    _compare(lambda lib, x: lib.unique(x, dim=dim, **kw), data)
    ckw = {k: v for k, v in kw.items() if k != "sorted"}
    _compare(lambda lib, x: lib.unique_consecutive(x, dim=dim, **ckw), data)
    _compare(lambda lib, x: x.unique(dim=dim, **kw), data)


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.unique(x, dim=2), lambda lib, x: lib.unique(x[:0], dim=0, return_counts=True),
    lambda lib, x: lib.unique(x[:0], dim=1), lambda lib, x: lib.unique_consecutive(x[:0], dim=1),
    lambda lib, x: lib.unique(x[:0, :0], dim=0), lambda lib, x: lib.unique([1, 2]),
    lambda lib, x: lib.unique(x[0, 0], dim=0), lambda lib, x: lib.unique_consecutive(x[0, 0], dim=-1),
], ids=range(8))
def test_unique_errors(call):
    _compare(call, M)


def test_unique_forward_ad_error():
    for lib in (rgrad, torch):
        fa = lib.autograd.forward_ad
        with fa.dual_level():
            d = fa.make_dual(lib.ones(3, dtype=lib.float64), lib.ones(3, dtype=lib.float64))
            for f in (lambda: lib.unique(d), lambda: lib.unique(d, dim=0), lambda: lib.unique_consecutive(d)):
                with pytest.raises(NotImplementedError, match="Trying to use forward AD with (_unique2|unique_dim|"
                                                              "unique_consecutive) that does not support it"):
                    f()


@pytest.mark.parametrize("case", [
    (np.array([1, 3, 1, 0]), None, 0), (np.array([1, 3, 1, 0]), None, 6), (np.zeros(0, np.int64), None, 0),
    (np.zeros(0, np.int64), None, 2), (np.array([1, 3, 1, 0]), np.array([0.5, 1.0, 2.0, 3.0]), 0),
    (np.array([1, 3, 1, 0]), np.array([1, 2, 3, 4]), 5), (np.array([1, 3, 1, 0]), np.array([True, False, True, True]), 0),
    (np.array([1.0, 2.0]), None, 0), (np.array([-1, 2]), None, 0), (np.array([[1, 2]]), None, 0),
    (np.array([1, 2]), None, -1), (np.array([1, 2]), np.array([1.0]), 0), (np.array([True]), None, 0),
    (np.array([1, 2]), np.array([[1.0, 2.0]]), 0),
], ids=range(14))
def test_bincount(case):
    x, w, minlength = case
    _compare(lambda lib, a, *ws: lib.bincount(a, *ws, minlength=minlength), x, *([] if w is None else [w]))
    _compare(lambda lib, a, *ws: a.bincount(*ws, minlength=minlength), x, *([] if w is None else [w]))


def test_bincount_float32_weights_and_grad_error():
    for lib in (rgrad, torch):
        w = lib.tensor([0.5, 1.5, 2.0], requires_grad=True)
        r = lib.bincount(lib.tensor([2, 0, 2]), w)
        assert r.dtype == lib.float32 and r.tolist() == [1.5, 0.0, 2.5]
        assert type(r.grad_fn).__name__ == "NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for aten::bincount is not implemented"):
            r.sum().backward()


@pytest.mark.parametrize("case", [
    (np.array([1.0, 2.0, 1.0, 4.0, 2.5, 3.0]), 4, 0, 0), (np.array([1.0, 2.0, 1.0, 4.0, 2.5, 3.0]), 4, 0, 3),
    (np.array([2.0, 2.0]), 3, 0, 0), (np.zeros(0), 3, 0, 0), (np.array([1.0, 2.0]), 0, 0, 0),
    (np.array([1.0, 2.0]), -1, 0, 0), (np.array([1.0, 2.0]), 3, 3, 1), (np.array([1, 2]), 3, 0, 0),
    (np.array([1.0, NAN]), 3, 0, 0), (np.array([1.0, np.inf]), 3, 0, 0), (np.array([1.0, NAN, 0.5]), 3, 0, 2),
    (np.linspace(-1, 1, 101), 7, -1, 1), (np.linspace(-1, 1, 101).astype(np.float32), 7, -1, 1),
    (np.random.RandomState(0).standard_normal(1000), 100, 0, 0),
    (np.random.RandomState(1).standard_normal(1000).astype(np.float32), 33, -1.5, 1.25),
], ids=range(15))
def test_histc(case):
    x, bins, lo, hi = case
    _compare(lambda lib, a: lib.histc(a, bins=bins, min=lo, max=hi), x)
    _compare(lambda lib, a: a.histc(bins, lo, hi), x)


def test_huge_bin_counts_raise():
    """A bin count no memory can hold raises torch's allocator RuntimeError (no abort)."""
    for lib in (rgrad, torch):
        with pytest.raises(RuntimeError, match="can't allocate memory"):
            lib.bincount(lib.tensor([10**15]))
        with pytest.raises(RuntimeError, match="can't allocate memory"):
            lib.histc(lib.tensor([1.0]), bins=10**15)


def test_bincount_large_matches_torch():
    x = np.random.RandomState(0).randint(0, 50, 100_003)
    w = np.random.RandomState(1).standard_normal(100_003)
    np.testing.assert_array_equal(rgrad.bincount(rgrad.tensor(x)).numpy(), torch.bincount(torch.tensor(x)).numpy())
    np.testing.assert_allclose(rgrad.bincount(rgrad.tensor(x), rgrad.tensor(w)).numpy(),
                               torch.bincount(torch.tensor(x), torch.tensor(w)).numpy(), rtol=1e-12)


def test_histc_large_matches_torch():
    for dtype in (np.float32, np.float64):
        x = np.random.RandomState(2).standard_normal(300_001).astype(dtype)
        for bins, lo, hi in ((100, 0, 0), (7, -1.0, 2.0), (70_000, -3.0, 3.0)):
            np.testing.assert_array_equal(rgrad.histc(rgrad.tensor(x), bins, lo, hi).numpy(),
                                          torch.histc(torch.tensor(x), bins, lo, hi).numpy())
