"""More of torch's composite functions (python/rgrad/_composite2.py) against torch: values,
dtype, shape, recorded node, gradients, errors (type and message)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")


def _node(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def _outcome(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("ok", fn())
    except Exception as e:  # noqa: BLE001  (the outcome is compared)
        return ("raises", type(e).__name__, str(e).replace("torch.", "").replace("rgrad.", ""))


# rgrad records a product or quotient with a Python number as MulBackward0/DivBackward0
# (the Tensor overload's node) everywhere; ATen's C++ composites reach the Scalar overload,
# MulBackward1/DivBackward1
_SCALAR_NODES = {"MulBackward1": "MulBackward0", "DivBackward1": "DivBackward0"}


def _check_same(r, t, node=True):
    if isinstance(t, tuple):
        assert isinstance(r, tuple) and len(r) == len(t)
        for a, b in zip(r, t):
            _check_same(a, b, node)
        return
    assert isinstance(r, rgrad.Tensor), type(r)
    assert str(r.dtype).replace("rgrad.", "") == str(t.dtype).replace("torch.", "")
    assert tuple(r.shape) == tuple(t.shape)
    np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-6, equal_nan=True)
    if node:
        assert _node(r) == _SCALAR_NODES.get(_node(t), _node(t))
    assert r.requires_grad == t.requires_grad


def _compare(fn, *arrays, node=True, grad_weights=True):
    """``fn(lib, *tensors)`` for both libraries on the same data (floating arrays require
    grad): the outcomes, then the gradients of a weighted sum."""
    def make(lib):
        return [lib.tensor(a, requires_grad=isinstance(a, np.ndarray) and a.dtype.kind == "f") if not isinstance(a, (int, float, type(None))) else a
                for a in arrays]

    ins_r, ins_t = make(rgrad), make(torch)
    rr, tt = _outcome(lambda: fn(rgrad, *ins_r)), _outcome(lambda: fn(torch, *ins_t))
    assert rr[0] == tt[0], (rr, tt)
    if rr[0] == "raises":
        assert rr[1:] == tt[1:]
        return
    _check_same(rr[1], tt[1], node)
    out_r, out_t = rr[1], tt[1]
    if isinstance(out_t, torch.Tensor) and out_t.requires_grad and out_t.numel():
        w = np.arange(1.0, out_t.numel() + 1).reshape(tuple(out_t.shape))
        br = _outcome(lambda: (out_r * rgrad.tensor(w, dtype=out_r.dtype)).sum().backward())
        bt = _outcome(lambda: (out_t * torch.tensor(w, dtype=out_t.dtype)).sum().backward())
        assert br[:2] == bt[:2], (br, bt)  # (torch's vander fails its backward: rgrad's the same error)
        if br[0] == "raises":
            return
        for a, b in zip(ins_r, ins_t):
            if isinstance(b, torch.Tensor) and b.requires_grad:
                assert (a.grad is None) == (b.grad is None)
                if b.grad is not None:
                    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6, atol=1e-6)


_M = np.arange(1.0, 7.0).reshape(2, 3) * np.array([1.0, -0.5, 2.0])
_V = np.array([1.5, -2.0, 0.5])
_I = np.array([[1, 2, 0], [3, 1, 1]])


@pytest.mark.parametrize("case", [
    ("x", 2, None), ("x", 2, 0), ("x", 3, 1), ("x", 2, -1), ("x", 0, 1), ("x", -1, None), ("x", 2, 2),
    ("x", [1, 2], 0), ("x", [2], 1), ("x", 2, "tensor0"), ("x", [1, 2, 3], 0), ("x", [[1, 2]], 0), ("x", [1, -2], 0),
    ("v", 2, None), ("s", 3, None), ("i", 2, 1), ("i", [0, 2], 0),
], ids=str)
def test_repeat_interleave(case):
    which, repeats, dim = case
    data = {"x": _M, "v": _V, "s": np.array(2.5), "i": _I}[which]

    def fn(lib, x):
        if dim == "tensor0":
            return lib.repeat_interleave(x, lib.tensor(repeats))
        rep = lib.tensor(repeats) if isinstance(repeats, list) else repeats
        return lib.repeat_interleave(x, rep, dim) if dim is not None else lib.repeat_interleave(x, rep)

    _compare(fn, data)
    if dim is not None and dim != "tensor0":
        _compare(lambda lib, x: x.repeat_interleave(lib.tensor(repeats) if isinstance(repeats, list) else repeats,
                                                    dim=dim), data)


@pytest.mark.parametrize("repeats", [[1, 2, 0, 3], [], [[1, 2]], [-1, 2], [1.0, 2.0]], ids=str)
def test_repeat_interleave_indices(repeats):
    _compare(lambda lib, r: lib.repeat_interleave(r), np.array(repeats))


def test_repeat_interleave_output_size():
    _compare(lambda lib, x: lib.repeat_interleave(x, 2, output_size=12), _M)
    _compare(lambda lib, x: lib.repeat_interleave(x, 2, 0, output_size=3), _M)


@pytest.mark.parametrize("fn", ["tril_indices", "triu_indices"])
@pytest.mark.parametrize("args", [(3, 3), (3, 3, -1), (3, 4, 1), (4, 2, -2), (0, 3), (2, 3, 5), (3, -1), (-1, 3),
                                  (5, 5, -9), (1, 1)], ids=str)
def test_tri_indices(fn, args):
    _compare(lambda lib: getattr(lib, fn)(*args))


@pytest.mark.parametrize("fn", ["tril_indices", "triu_indices"])
def test_tri_indices_dtype(fn):
    _compare(lambda lib: getattr(lib, fn)(3, 3, dtype=lib.float32))


@pytest.mark.parametrize("data", [_V, _M, np.array(3.0), _I], ids=["1d", "2d", "0d", "int"])
@pytest.mark.parametrize("offset", [0, 1, -2])
def test_diagflat(data, offset):
    _compare(lambda lib, x: lib.diagflat(x, offset), data)
    _compare(lambda lib, x: x.diagflat(offset), data)
    _compare(lambda lib, x: lib.diagflat(x.t() if x.dim() == 2 else x), data)


_Y = np.arange(12.0).reshape(3, 4) ** 1.5


@pytest.mark.parametrize("fn", ["trapezoid", "trapz", "cumulative_trapezoid"])
@pytest.mark.parametrize("case", [
    ("y", {}), ("y", {"dim": 0}), ("y", {"dx": 0.5}), ("y", {"dx": 2, "dim": 0}), ("y_int", {}),
    ("y_bool", {}), ("empty", {"dim": 1}), ("y", {"x": [0.0, 1.0, 3.0, 3.5]}), ("y", {"x": [0.0, 1.0, 3.0], "dim": 0}),
    ("y", {"x": [0.0, 1.0]}), ("y", {"x": "2d"}), ("y", {"x": [0, 1, 3, 4]}), ("v", {}), ("y", {"dim": 2}),
], ids=str)
def test_trapezoid(fn, case):
    which, kw = case
    y = {"y": _Y, "y_int": np.arange(12).reshape(3, 4), "y_bool": np.array([True, False]), "empty": np.ones((2, 0)),
         "v": _V}[which]
    if fn == "trapz" and "dx" in kw and "x" in kw:
        return
    xs = kw.get("x")
    x_arr = None if xs is None else (np.arange(12.0).reshape(3, 4) ** 0.5 if xs == "2d" else np.array(xs))

    def call(lib, y_, *x_):
        k = {n: v for n, v in kw.items() if n != "x"}
        return getattr(lib, fn)(y_, *x_, **k)

    if x_arr is None:
        _compare(call, y)
    else:
        _compare(call, y, x_arr)


@pytest.mark.parametrize("data", [_V, np.array([1, 2, 3, 4]), _M, np.array([2.0])], ids=["f", "i", "2d", "one"])
@pytest.mark.parametrize("r", [0, 1, 2, 3, 4, -1])
@pytest.mark.parametrize("with_replacement", [False, True])
def test_combinations(data, r, with_replacement):
    _compare(lambda lib, x: lib.combinations(x, r, with_replacement), data)


@pytest.mark.parametrize("indices,shape", [
    ([4, 1, 5], (2, 3)), (4, (2, 3)), ([[1, 2], [0, 7]], (2, 2, 2)), ([6], (2, 3)), ([-1], (2, 3)),
    ([[1, 2]], 3), ([1], (2, -3)), ([1], ()), ([4.0], (2, 3)), ([1], (2, 3.0)),
], ids=str)
def test_unravel_index(indices, shape):
    _compare(lambda lib, i: lib.unravel_index(i, shape), np.array(indices))


@pytest.mark.parametrize("data", [_V, np.array([1, 2, 3]), np.array([True, False]), _M, np.zeros(0)],
                         ids=["f", "i", "b", "2d", "empty"])
@pytest.mark.parametrize("N", [None, 0, 1, 2, 4, -1])
@pytest.mark.parametrize("increasing", [False, True])
def test_vander(data, N, increasing):
    # the result's node (FlipBackward0, or CopySlices when increasing) is torch's
    _compare(lambda lib, x: lib.vander(x, N=N, increasing=increasing), data)


_OBS = np.array([[1.0, 2.5, -0.5, 4.0], [0.5, 1.5, 2.0, -1.0], [3.0, 0.0, 1.0, 2.0]])


@pytest.mark.parametrize("data", [_OBS, _OBS[0], np.array(2.0), np.array([[1, 2, 4], [0, 3, 1]]), np.ones((2, 2, 2)),
                                  np.array([True, False]), _OBS[:, :1]], ids=["2d", "1d", "0d", "int", "3d", "bool", "one"])
@pytest.mark.parametrize("correction", [1, 0, 2])
def test_cov_corrcoef(data, correction):
    _compare(lambda lib, x: lib.cov(x, correction=correction), data)
    _compare(lambda lib, x: x.cov(correction=correction), data)
    if correction == 1:
        _compare(lambda lib, x: lib.corrcoef(x), data)
        _compare(lambda lib, x: x.corrcoef(), data)


@pytest.mark.parametrize("fw", [None, [1, 2, 1, 3], [0, 0, 0, 0], [1, -1, 1, 1], [1.0, 2.0, 1.0, 1.0], [1, 2]], ids=str)
@pytest.mark.parametrize("aw", [None, [0.5, 1.0, 2.0, 0.25], [1, 2, 3, 4], [-0.5, 1.0, 1.0, 1.0]], ids=str)
@pytest.mark.parametrize("correction", [1, 0])
def test_cov_weights(fw, aw, correction):
    def fn(lib, x):
        kw = {"correction": correction}
        if fw is not None:
            kw["fweights"] = lib.tensor(fw)
        if aw is not None:
            kw["aweights"] = lib.tensor(aw)
        return lib.cov(x, **kw)

    _compare(fn, _OBS)


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor"])
@pytest.mark.parametrize("a,b", [("i", "i"), ("b", "b"), ("i", "b"), ("i", 3), (5, "i"), ("f", "i"), ("b", True)], ids=str)
def test_bitwise(name, a, b):
    def make(lib, k):
        return {"i": lib.tensor([[5, -3, 0], [7, 2, 12]]), "b": lib.tensor([True, False, True]),
                "f": lib.tensor([1.0, 2.0, 3.0])}.get(k, k) if isinstance(k, str) else k

    _compare(lambda lib: getattr(lib, name)(make(lib, a), make(lib, b)))
    if isinstance(a, str):
        _compare(lambda lib: getattr(make(lib, a), name)(make(lib, b)))

        def inplace(lib):
            x = make(lib, a)
            out = getattr(x, name + "_")(make(lib, b))
            assert out is x
            return out

        _compare(inplace)


@pytest.mark.parametrize("a", ["i", "b", "f"])
def test_bitwise_not(a):
    def make(lib):
        return {"i": lib.tensor([5, -3, 0]), "b": lib.tensor([True, False]), "f": lib.tensor([1.0])}[a]

    _compare(lambda lib: lib.bitwise_not(make(lib)))
    _compare(lambda lib: make(lib).bitwise_not())

    def inplace(lib):
        x = make(lib)
        out = x.bitwise_not_()
        assert out is x
        return out

    _compare(inplace)


@pytest.mark.parametrize("data", [_M, np.array(3.0), np.zeros(0), np.array([1, 2, 3])], ids=["2d", "0d", "empty", "int"])
@pytest.mark.parametrize("index", [[[0, 5], [-1, 2]], [1], 0, [], [6], [-7], [1.0], [True], "list"], ids=str)
def test_take(data, index):
    def fn(lib, x):
        idx = [1] if index == "list" else lib.tensor(index, dtype=lib.int64 if not isinstance(
            np.array(index).flat[0] if np.size(index) else 0, (float, bool, np.floating, np.bool_)) else None)
        return lib.take(x, idx)

    _compare(fn, data)
    if index == [[0, 5], [-1, 2]] and data.ndim == 2:
        _compare(lambda lib, x: x.take(lib.tensor([[0, 5], [-1, 2]])), data)


_A = np.array([[1.0, -2.0, 3.0], [4.0, 0.5, -6.0]])
_B = np.array([[0.5, -2.0, 1.0], [4.0, 2.5, -1.0]])


@pytest.mark.parametrize("p", [2, 1, 0, 3.5, float("inf"), -float("inf"), -1])
@pytest.mark.parametrize("other", ["same_shape", "broadcast", "equal", "bad", "number", "int"])
def test_dist(p, other):
    o = {"same_shape": _B, "broadcast": _B[0], "equal": _A.copy(), "bad": np.ones(4), "number": 2.0,
         "int": np.array([1, 2, 3])}[other]
    if p == 0 and other in ("same_shape", "broadcast", "equal", "int"):
        # torch's DistBackward0 at p=0 fails ("Expected a proper Tensor but got None") or
        # gives None; rgrad gives None to both (a count has no gradient)
        fl = other != "int"
        a_r, b_r = rgrad.tensor(_A, requires_grad=True), rgrad.tensor(o, requires_grad=fl)
        out_r = rgrad.dist(a_r, b_r, 0)
        _check_same(out_r, torch.dist(torch.tensor(_A, requires_grad=True), torch.tensor(o, requires_grad=fl), 0))
        out_r.backward()
        assert a_r.grad is None and b_r.grad is None
        return
    _compare(lambda lib, a, b: lib.dist(a, b, p), _A, o)
    _compare(lambda lib, a, b: a.dist(b, p=p), _A, o)


@pytest.mark.parametrize("fn", ["take", "dist"])
def test_take_dist_double_backward(fn):
    def run(lib):
        a = lib.tensor(_A, requires_grad=True)
        b = lib.tensor(_B, requires_grad=True)
        out = lib.take(a * a, lib.tensor([[0, 5], [-1, 2]])).sum() if fn == "take" else lib.dist(a * a, b, 3)
        g = lib.autograd.grad(out, [a, b], create_graph=True, allow_unused=True)
        gs = [x for x in g if x is not None]
        gg = lib.autograd.grad(sum((x * x).sum() for x in gs), [a, b], allow_unused=True)
        return [x.detach().numpy() for x in gs], [None if x is None else x.numpy() for x in gg]

    (g_r, gg_r), (g_t, gg_t) = run(rgrad), run(torch)
    for x, y in zip(g_r, g_t):
        np.testing.assert_allclose(x, y, rtol=1e-10)
    for x, y in zip(gg_r, gg_t):
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_allclose(x, y, rtol=1e-10)
