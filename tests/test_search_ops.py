"""searchsorted and bucketize (python/rgrad/_composite3.py, src/ops/search.rs) against
torch: values, dtype, shape, no gradient, scalars, sorter, NaNs, errors."""

from __future__ import annotations

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001  (the outcome is compared)
        return ("raises", type(e).__name__, str(e).replace("torch.", "").replace("rgrad.", ""))


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
    r, t = rr[1], tt[1]
    assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(r.shape) == tuple(t.shape)
    assert r.requires_grad == t.requires_grad and r.grad_fn is None
    np.testing.assert_array_equal(r.numpy(), t.numpy())


S = np.array([1.0, 3.0, 5.0, 7.0, 9.0])
V = np.array([[3.0, 6.0, 9.0], [0.0, 10.0, 5.0]])
NAN = np.nan


@pytest.mark.parametrize("kw", [{}, {"right": True}, {"side": "left"}, {"side": "right"},
                                {"right": True, "side": "right"}, {"side": "x"}, {"right": True, "side": "left"}],
                         ids=str)
def test_searchsorted_1d(kw):
    _compare(lambda lib, s, v: lib.searchsorted(s, v, **kw), S, V)
    _compare(lambda lib, s, v: lib.searchsorted(s, v, **kw), S, np.array(5.0))
    _compare(lambda lib, s: lib.searchsorted(s, 5.0, **kw), S)
    _compare(lambda lib, s: lib.searchsorted(s, 5, **kw), S)


def test_searchsorted_nd_and_dtypes():
    b = np.sort(np.random.RandomState(0).standard_normal((2, 3, 6)), -1)
    v = np.random.RandomState(1).standard_normal((2, 3, 4))
    for right in (False, True):
        _compare(lambda lib, s, x: lib.searchsorted(s, x, right=right), b, v)
    _compare(lambda lib, s, x: lib.searchsorted(s, x), S.astype(np.int64), V)
    _compare(lambda lib, s, x: lib.searchsorted(s, x), S, V.astype(np.int64))
    _compare(lambda lib, s, x: lib.searchsorted(s, x), S.astype(np.int64), V.astype(np.int64))
    _compare(lambda lib, s, x: lib.searchsorted(s.float(), x), S, V)
    _compare(lambda lib, s, x: lib.searchsorted(s, x), S, np.zeros((0, 3)))
    _compare(lambda lib, s, x: lib.searchsorted(s, x), np.zeros(0), V)


def test_searchsorted_nan():
    _compare(lambda lib, s, v: lib.searchsorted(s, v), S, np.array([NAN, 1.0]))
    _compare(lambda lib, s, v: lib.searchsorted(s, v, right=True), np.array([1.0, NAN]), np.array([NAN, 1.0, 5.0]))
    _compare(lambda lib, s, v: lib.searchsorted(s, v), np.array([1.0, NAN]), np.array([NAN, 1.0, 5.0]))


def test_sorter():
    s = np.array([5.0, 1.0, 9.0, 3.0, 7.0])
    order = np.argsort(s)
    for right in (False, True):
        _compare(lambda lib, b, v: lib.searchsorted(b, v, right=right, sorter=lib.tensor(order)), s, V)
    b2 = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    _compare(lambda lib, b, v: lib.searchsorted(b, v, sorter=lib.tensor(np.argsort(b2, -1))), b2,
             np.array([[1.5, 3.0], [4.5, -1.0]]))


@pytest.mark.parametrize("call", [
    lambda lib, s, v: lib.searchsorted(s, v, sorter=lib.tensor([0, 1, 2, 3])),
    lambda lib, s, v: lib.searchsorted(s, v, sorter=lib.tensor([0, 1, 2, 3, 7])),
    lambda lib, s, v: lib.searchsorted(s, v, sorter=lib.tensor([0, 1, 2, 3, -1])),
    lambda lib, s, v: lib.searchsorted(s, v, sorter=lib.tensor([0.0, 1, 2, 3, 4])),
    lambda lib, s, v: lib.searchsorted(s[0], v),
    lambda lib, s, v: lib.searchsorted(s.expand(3, 5), v),
    lambda lib, s, v: lib.searchsorted(s.expand(2, 5), v[0]),
    lambda lib, s, v: lib.searchsorted(s.expand(2, 5), v[0, 0]),
    lambda lib, s, v: lib.searchsorted(s[0], v[0, 0]),
    lambda lib, s, v: lib.searchsorted(s > 2, v > 2),
    lambda lib, s, v: lib.searchsorted(s, "a"),
    lambda lib, s, v: lib.searchsorted(s.tolist(), v),
    lambda lib, s, v: lib.bucketize(v, s.expand(2, 5)),
    lambda lib, s, v: lib.bucketize(v, s[0]),
    lambda lib, s, v: lib.bucketize(v > 2, s > 2),
    lambda lib, s, v: lib.bucketize(v, "a"), lambda lib, s, v: lib.bucketize("a", s),
    lambda lib, s, v: lib.searchsorted(s, v, right=3), lambda lib, s, v: lib.bucketize(v, s, right=None),
    lambda lib, s, v: lib.searchsorted(s, v, side=3),
], ids=range(20))
def test_errors(call):
    _compare(call, S, V)


def test_non_contiguous_warns_once_as_torch():
    from rgrad import _composite3

    _composite3._WARNED.clear()
    want = ("torch.searchsorted(): {} tensor is non-contiguous, this will lower the performance due to extra data "
            "copy when converting non-contiguous tensor to contiguous, please use contiguous {} tensor if possible. "
            "This message will only appear once per program.")
    v = rgrad.tensor(V).t()
    b = rgrad.tensor(np.sort(np.random.RandomState(0).standard_normal((2, 6)), -1)).t().contiguous().t()
    with pytest.warns(UserWarning) as rec:
        r = rgrad.searchsorted(rgrad.tensor(S), v)
        rgrad.searchsorted(rgrad.tensor(S), v)
    assert [str(w.message) for w in rec] == [want.format("input value", "input value")]
    assert r.tolist() == torch.searchsorted(torch.tensor(S), torch.tensor(V).t().contiguous()).tolist()
    with pytest.warns(UserWarning) as rec:
        rgrad.searchsorted(b, rgrad.tensor(V[:, :2]))
    assert [str(w.message) for w in rec] == [want.format("boundary", "boundary")]


@pytest.mark.parametrize("right", [False, True])
def test_bucketize(right):
    _compare(lambda lib, v, s: lib.bucketize(v, s, right=right), V, S)
    _compare(lambda lib, s: lib.bucketize(3.0, s, right=right), S)
    _compare(lambda lib, s: lib.bucketize(3, s, right=right), S)
    _compare(lambda lib, v, s: lib.bucketize(v, s, right=right), V.astype(np.int64), S)
    _compare(lambda lib, v, s: lib.bucketize(v, s, right=right), np.array(4.0), S)


def test_out():
    for lib in (rgrad, torch):
        out = lib.zeros(2, 3, dtype=lib.int64)
        r = lib.searchsorted(lib.tensor(S), lib.tensor(V), out=out)
        assert r is out and out.tolist() == [[1, 3, 4], [0, 5, 2]]
        out = lib.zeros(2, 3, dtype=lib.int64)
        assert lib.bucketize(lib.tensor(V), lib.tensor(S), out=out) is out and out.tolist() == [[1, 3, 4], [0, 5, 2]]


def test_out_int32_is_refused():
    with pytest.raises(NotImplementedError, match="int32"):
        rgrad.searchsorted(rgrad.tensor(S), rgrad.tensor(V), out_int32=True)
    with pytest.raises(NotImplementedError, match="int32"):
        rgrad.bucketize(rgrad.tensor(V), rgrad.tensor(S), out_int32=True)


def test_large_matches_torch():
    rs = np.random.RandomState(2)
    b = np.sort(rs.standard_normal(1000)).astype(np.float32)
    v = rs.standard_normal((300, 400)).astype(np.float32)
    for right in (False, True):
        r = rgrad.searchsorted(rgrad.tensor(b), rgrad.tensor(v), right=right).numpy()
        np.testing.assert_array_equal(r, torch.searchsorted(torch.tensor(b), torch.tensor(v), right=right).numpy())
    b2 = np.sort(rs.standard_normal((300, 50)), -1)
    r = rgrad.searchsorted(rgrad.tensor(b2), rgrad.tensor(v.astype(np.float64))).numpy()
    np.testing.assert_array_equal(r, torch.searchsorted(torch.tensor(b2), torch.tensor(v.astype(np.float64))).numpy())


def test_vmap():
    b = rgrad.tensor(np.sort(np.random.RandomState(3).standard_normal((3, 4)), -1))
    v = rgrad.tensor(np.random.RandomState(4).standard_normal((3, 2)))
    got = rgrad.func.vmap(lambda s, a: rgrad.searchsorted(s, a))(b, v)
    want = torch.func.vmap(lambda s, a: torch.searchsorted(s, a))(torch.tensor(b.numpy()), torch.tensor(v.numpy()))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    got = rgrad.func.vmap(lambda s, a: rgrad.bucketize(a, s))(b, v)
    want = torch.func.vmap(lambda s, a: torch.bucketize(a, s))(torch.tensor(b.numpy()), torch.tensor(v.numpy()))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
