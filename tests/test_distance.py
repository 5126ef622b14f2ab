"""cdist, pdist and pairwise_distance (python/rgrad/_composite3.py, src/ops/distance.rs)
against torch: values, dtype, shape, recorded nodes (the whole chain), saved fields,
gradients, errors (type and message), forward AD's error."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")


def _outcome(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("ok", fn())
    except Exception as e:  # noqa: BLE001  (the outcome is compared)
        return ("raises", type(e).__name__, str(e).replace("torch.", "").replace("rgrad.", ""))


# rgrad records a sum with a Python number as AddBackward0 (the Tensor overload's node)
# everywhere; ATen's C++ composites reach the Scalar overload, AddBackward1
_SCALAR_NODES = {"AddBackward1": "AddBackward0"}


def _chain(f, depth=0):
    """The node names of a graph, depth first."""
    if f is None:
        return []
    name = type(f).__name__
    out = [(depth, _SCALAR_NODES.get(name, name))]
    for n, _ in f.next_functions:
        out += _chain(n, depth + 1)
    return out


def _compare(fn, *arrays, dtype="float64", check_chain=True):
    def make(lib):
        return [lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=True) for a in arrays]

    ins_r, ins_t = make(rgrad), make(torch)
    rr, tt = _outcome(lambda: fn(rgrad, *ins_r)), _outcome(lambda: fn(torch, *ins_t))
    assert rr[0] == tt[0], (rr, tt)
    if rr[0] == "raises":
        assert rr[1:] == tt[1:]
        return
    r, t = rr[1], tt[1]
    assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(r.shape) == tuple(t.shape)
    tol = 1e-5 if dtype == "float32" else 1e-9
    np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)
    if check_chain:
        assert _chain(r.grad_fn) == _chain(t.grad_fn)
    if t.numel():
        w = np.arange(1.0, t.numel() + 1).reshape(tuple(t.shape))
        gr = rgrad.autograd.grad(r, ins_r, rgrad.tensor(w, dtype=r.dtype), allow_unused=True)
        gt = torch.autograd.grad(t, ins_t, torch.tensor(w, dtype=t.dtype), allow_unused=True)
        for a, b in zip(gr, gt):
            assert (a is None) == (b is None)
            if b is not None:
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=100 * tol, atol=100 * tol)


rng = np.random.RandomState(0)
P = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf]


@pytest.mark.parametrize("p", P)
@pytest.mark.parametrize("shapes", [((3, 4), (5, 4)), ((2, 3, 4), (1, 5, 4)), ((4, 3), (2, 1, 2, 3)),
                                    ((30, 3), (4, 3)), ((2, 30, 3), (1, 7, 3)), ((1, 2), (3, 2))], ids=str)
def test_cdist(p, shapes):
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    _compare(lambda lib, x, y: lib.cdist(x, y, p=p), a, b)


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist",
                                  "use_mm_for_euclid_dist_if_necessary"])
@pytest.mark.parametrize("shapes", [((3, 4), (5, 4)), ((2, 30, 4), (2, 5, 4)), ((3, 2, 4), (1, 5, 4))], ids=str)
def test_cdist_modes(mode, shapes):
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    _compare(lambda lib, x, y: lib.cdist(x, y, compute_mode=mode), a, b)


def test_cdist_float32_and_zero_distances():
    a = rng.standard_normal((6, 3))
    _compare(lambda lib, x, y: lib.cdist(x, y), a, a.copy(), dtype="float32")
    for p in P:
        x = np.array([[0.0, 1.0], [0.0, 1.0], [2.0, -1.0]])
        _compare(lambda lib, u, v: lib.cdist(u, v, p=p), x, x.copy())
        _compare(lambda lib, u: lib.pdist(u, p=p), x)


@pytest.mark.parametrize("shapes", [((0, 3), (2, 3)), ((2, 0), (3, 0)), ((2, 0, 3), (1, 4, 3))], ids=str)
def test_cdist_empty(shapes):
    _compare(lambda lib, x, y: lib.cdist(x, y), np.zeros(shapes[0]), np.ones(shapes[1]))


def test_cdist_saved_fields():
    x = rgrad.randn(3, 4, dtype=rgrad.float64, requires_grad=True)
    y = rgrad.randn(5, 4, dtype=rgrad.float64, requires_grad=True)
    d = rgrad.cdist(x, y, p=1.5)
    f = d.grad_fn
    assert f.name() == "CdistBackward0" and f._saved_p == 1.5
    assert f._saved_x1 is x and f._saved_x2 is y and f._saved_result.equal(d)
    e = rgrad.cdist(x, y, compute_mode="use_mm_for_euclid_dist").grad_fn.next_functions[0][0]
    assert e.name() == "EuclideanDistBackward0" and e._saved_x1 is x and e._saved_x2 is y
    pd = rgrad.pdist(x, 3)
    assert pd.grad_fn.name() == "PdistBackward0" and pd.grad_fn._saved_p == 3.0 and pd.grad_fn._saved_self is x
    assert pd.grad_fn._saved_result.equal(pd)


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.cdist(x[0], x), lambda lib, x: lib.cdist(x, x[0]), lambda lib, x: lib.cdist(x, x[:, :2]),
    lambda lib, x: lib.cdist(x, x.long()), lambda lib, x: lib.cdist(x.long(), x), lambda lib, x: lib.cdist(x, x, p=-1),
    lambda lib, x: lib.cdist(x, x, compute_mode="x"), lambda lib, x: lib.cdist(x, x.float()),
    lambda lib, x: lib.cdist(x.expand(2, 3, 4), x.expand(3, 3, 4)), lambda lib, x: lib.cdist(x, 1.0),
    lambda lib, x: lib.cdist(x, x, compute_mode="use_mm_for_euclid_dist", p=-1.0),
    lambda lib, x: lib.cdist(x.long(), x.long(), compute_mode="use_mm_for_euclid_dist"),
    lambda lib, x: lib.pdist(x[0]), lambda lib, x: lib.pdist(x.long()), lambda lib, x: lib.pdist(x, -1),
    lambda lib, x: lib.pdist(x, "a"), lambda lib, x: lib.pairwise_distance(x, x[:2]),
], ids=range(17))
def test_errors(call):
    _compare(call, rng.standard_normal((3, 4)), check_chain=False)


@pytest.mark.parametrize("p", P)
@pytest.mark.parametrize("shape", [(5, 3), (1, 3), (0, 3), (4, 0), (2, 1)], ids=str)
def test_pdist(p, shape):
    _compare(lambda lib, x: lib.pdist(x, p), rng.standard_normal(shape))
    _compare(lambda lib, x: lib.nn.functional.pdist(x.t().contiguous().t(), p=p), rng.standard_normal(shape))


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, math.inf, 0.0])
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (3, 4))], ids=str)
def test_pairwise_distance(p, shapes):
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    _compare(lambda lib, x, y: lib.pairwise_distance(x, y, p=p), a, b)
    _compare(lambda lib, x, y: lib.nn.functional.pairwise_distance(x, y, p, 1e-3, True), a, b)


def test_no_forward_ad_as_torch():
    for lib in (rgrad, torch):
        fa = lib.autograd.forward_ad
        for f in (lambda x: lib.cdist(x, x.detach() + 1, p=1.0), lambda x: lib.pdist(x),
                  lambda x: lib.cdist(x, x.detach(), compute_mode="use_mm_for_euclid_dist")):
            with fa.dual_level():
                x = fa.make_dual(lib.ones(3, 2, dtype=lib.float64), lib.ones(3, 2, dtype=lib.float64))
                with pytest.raises(NotImplementedError, match="Trying to use forward AD with _"):
                    f(x)


@pytest.mark.parametrize("p", [1.0, 1.5, 2.0, 3.0, math.inf])
def test_double_backward(p):
    """Second derivatives against finite differences (torch's own CdistBackwardBackward0
    fails this check for p = 1.5; rgrad's backward is recorded ops)."""
    x = rgrad.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    y = rgrad.tensor(rng.standard_normal((4, 2)), requires_grad=True)
    assert rgrad.autograd.gradgradcheck(lambda a, b: rgrad.cdist(a, b, p=p), (x, y))
    assert rgrad.autograd.gradgradcheck(lambda a: rgrad.pdist(a, p=p), (x,))
    assert rgrad.autograd.gradgradcheck(lambda a, b: rgrad.cdist(a, b, compute_mode="use_mm_for_euclid_dist"), (x, y))


def test_large_cdist_matches_torch():
    a = rng.standard_normal((300, 17)).astype(np.float32)
    b = rng.standard_normal((200, 17)).astype(np.float32)
    for p in (1.0, 2.0, 3.0):
        for mode in ("use_mm_for_euclid_dist_if_necessary", "donot_use_mm_for_euclid_dist"):
            r = rgrad.cdist(rgrad.tensor(a), rgrad.tensor(b), p=p, compute_mode=mode).numpy()
            t = torch.cdist(torch.tensor(a), torch.tensor(b), p=p, compute_mode=mode).numpy()
            np.testing.assert_allclose(r, t, rtol=1e-4, atol=1e-4)
    r = rgrad.pdist(rgrad.tensor(a)).numpy()
    np.testing.assert_allclose(r, torch.pdist(torch.tensor(a)).numpy(), rtol=1e-5, atol=1e-5)


def test_large_batched_cdist_matches_torch():
    a = rng.standard_normal((3, 301, 8))
    b = rng.standard_normal((1, 57, 8))
    for p in (0.0, 1.0, 3.0, math.inf):
        r = rgrad.cdist(rgrad.tensor(a), rgrad.tensor(b), p=p).numpy()
        t = torch.cdist(torch.tensor(a), torch.tensor(b), p=p).numpy()
        np.testing.assert_allclose(r, t, rtol=1e-12, atol=1e-12)


def test_pdist_cdist_row_blocks_threads_and_special_values():
    """The kernels that run across rows, a block at a time: rows longer than a block,
    pieces that start inside a row, NaN and infinite elements, as torch; the same bits on
    one thread and two."""
    a = rng.standard_normal((150, 5))
    a[3, 1], a[7, 2], a[9, 0] = np.nan, np.inf, -np.inf
    b = rng.standard_normal((2, 130, 5))
    b[1, 5, 4] = np.inf
    threads = rgrad.get_num_threads()
    try:
        for p in P:
            runs = []
            for n in (1, 2):
                rgrad.set_num_threads(n)
                runs.append((rgrad.pdist(rgrad.tensor(a), p).numpy(),
                             rgrad.cdist(rgrad.tensor(a[:40]), rgrad.tensor(b), p=p,
                                         compute_mode="donot_use_mm_for_euclid_dist").numpy()))
            np.testing.assert_array_equal(runs[0][0], runs[1][0])
            np.testing.assert_array_equal(runs[0][1], runs[1][1])
            want_p = torch.pdist(torch.tensor(a), p).numpy()
            want_c = torch.cdist(torch.tensor(a[:40]), torch.tensor(b), p=p,
                                 compute_mode="donot_use_mm_for_euclid_dist").numpy()
            np.testing.assert_allclose(runs[0][0], want_p, rtol=1e-12, atol=1e-12, equal_nan=True)
            np.testing.assert_allclose(runs[0][1], want_c, rtol=1e-12, atol=1e-12, equal_nan=True)
    finally:
        rgrad.set_num_threads(threads)
