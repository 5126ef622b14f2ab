"""block_diag, isin, isposinf, isneginf, isreal, is_signed and broadcast_shapes
(python/rgrad/_composite3.py; block_diag native in src/ops/blockdiag.rs) against torch:
values, dtypes, shapes, nodes, gradients, forward AD, errors."""

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


def _compare(fn, *arrays):
    def conv(lib, a):
        if isinstance(a, np.ndarray):
            return lib.tensor(a, requires_grad=a.dtype.kind == "f")
        return a

    ins_r, ins_t = [conv(rgrad, a) for a in arrays], [conv(torch, a) for a in arrays]
    rr, tt = _outcome(lambda: fn(rgrad, *ins_r)), _outcome(lambda: fn(torch, *ins_t))
    assert rr[0] == tt[0], (rr, tt)
    if rr[0] == "raises":
        assert rr[1:] == tt[1:]
        return
    r, t = rr[1], tt[1]
    if not isinstance(t, torch.Tensor):
        assert r == t and type(r).__name__ == type(t).__name__
        return
    assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(r.shape) == tuple(t.shape)
    assert r.requires_grad == t.requires_grad and _node(r) == _node(t)
    np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), equal_nan=True)
    if t.requires_grad and t.numel():
        w = np.arange(1.0, t.numel() + 1).reshape(tuple(t.shape))
        leaves_r = [x for x in ins_r if isinstance(x, rgrad.Tensor) and x.requires_grad]
        leaves_t = [x for x in ins_t if isinstance(x, torch.Tensor) and x.requires_grad]
        gr = rgrad.autograd.grad(r, leaves_r, rgrad.tensor(w, dtype=r.dtype))
        gt = torch.autograd.grad(t, leaves_t, torch.tensor(w, dtype=t.dtype))
        for a, b in zip(gr, gt):
            np.testing.assert_allclose(a.numpy(), b.numpy())


rng = np.random.RandomState(0)


@pytest.mark.parametrize("shapes", [[(2, 3), (1,), ()], [(3,)], [(0, 2), (2, 2)], [(2, 0), (1, 1)], [], [(2, 2, 2)],
                                    [(1, 2), (3, 1)]], ids=str)
def test_block_diag(shapes):
    arrays = [rng.standard_normal(s) for s in shapes]
    _compare(lambda lib, *ts: lib.block_diag(*ts), *arrays)


def test_block_diag_dtypes_and_errors():
    _compare(lambda lib, a: lib.block_diag(a, lib.tensor([[1, 2]])), rng.standard_normal((2, 2)))
    _compare(lambda lib: lib.block_diag(lib.tensor([True]), lib.tensor([2])))
    _compare(lambda lib, a: lib.block_diag(a, a.float()), rng.standard_normal((2, 2)))
    _compare(lambda lib: lib.block_diag([1]))


def test_block_diag_double_backward_and_forward_ad():
    a = rgrad.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    b = rgrad.tensor(rng.standard_normal(2), requires_grad=True)
    assert rgrad.autograd.gradcheck(lambda x, y: rgrad.block_diag(x, y), (a, b), check_forward_ad=True)
    assert rgrad.autograd.gradgradcheck(lambda x, y: rgrad.block_diag(x, y) ** 2, (a, b))
    fa = rgrad.autograd.forward_ad
    with fa.dual_level():
        d = fa.make_dual(a.detach(), rgrad.ones(2, 3, dtype=rgrad.float64))
        t = fa.unpack_dual(rgrad.block_diag(d, b.detach())).tangent
    assert t.tolist() == [[1.0, 1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0, 0.0], [0.0] * 5]


NAN = np.nan


@pytest.mark.parametrize("kw", [{}, {"invert": True}, {"assume_unique": True}], ids=str)
@pytest.mark.parametrize("case", [
    (np.array([1, 2, 3]), np.array([2.0, 5.0])), (np.array([[1, 2], [3, 4]]), np.array([[4]])),
    (2, np.array([2, 3])), (np.array([1.0, NAN]), NAN), (np.array([1.0, 2.0, 3.0]), np.zeros(0)),
    (np.array([1.5, 2.0]), 2), (np.zeros((0, 2)), np.array([1.0])), (np.array([True, False]), np.array([1])),
    (1, 2), (np.array([1, 2]), "a"),
], ids=range(10))
def test_isin(kw, case):
    _compare(lambda lib, e, t: lib.isin(e, t, **kw), *case)


def test_isin_large():
    e = rng.randint(0, 1000, (300, 200))
    t = rng.randint(0, 1000, 400)
    np.testing.assert_array_equal(rgrad.isin(rgrad.tensor(e), rgrad.tensor(t)).numpy(),
                                  torch.isin(torch.tensor(e), torch.tensor(t)).numpy())


@pytest.mark.parametrize("name", ["isposinf", "isneginf", "isreal", "is_signed"])
@pytest.mark.parametrize("data", [np.array([0.0, np.inf, -np.inf, NAN, 1.5]), np.array([1, -2]),
                                  np.array([True]), np.zeros((2, 0))], ids=range(4))
def test_queries(name, data):
    _compare(lambda lib, x: getattr(lib, name)(x), data)
    _compare(lambda lib, x: getattr(x, name)(), data)


@pytest.mark.parametrize("shapes", [[(2, 1), (3,)], [2, (3, 1)], [], [(2,), (3,)], [(2,), "a"], [(1, 4), [3, 1]],
                                    [(-1,), (3,)], [()], [(3,), (-2, 5)], [(2, "a")], [None, (2,)], ["ab"]], ids=str)
def test_broadcast_shapes(shapes):
    _compare(lambda lib: lib.broadcast_shapes(*shapes))


def test_block_diag_vmap():
    a, b = rng.standard_normal((3, 2, 2)), rng.standard_normal((3, 3))
    got = rgrad.func.vmap(lambda x, y: rgrad.block_diag(x, y, rgrad.tensor(1.0, dtype=rgrad.float64)))(
        rgrad.tensor(a), rgrad.tensor(b))
    want = torch.func.vmap(lambda x, y: torch.block_diag(x, y, torch.tensor(1.0, dtype=torch.float64)))(
        torch.tensor(a), torch.tensor(b))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.filterwarnings("ignore:There is a performance drop:UserWarning")  # (torch's loop for isin)
@pytest.mark.parametrize("dims", [(0, 0), (0, None), (None, 0)], ids=str)
def test_isin_vmap(dims):
    e, t = rng.randint(0, 6, (3, 5)), rng.randint(0, 6, (3, 4))
    e_in = e if dims[0] == 0 else e[0]
    t_in = t if dims[1] == 0 else t[0]
    got = rgrad.func.vmap(rgrad.isin, in_dims=dims)(rgrad.tensor(e_in), rgrad.tensor(t_in))
    want = torch.func.vmap(torch.isin, in_dims=dims)(torch.tensor(e_in), torch.tensor(t_in))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("name", ["gcd", "lcm"])
@pytest.mark.parametrize("case", [
    (np.array([12, -18, 0, 0, 7]), np.array([8, 12, 0, 5, -3])), (np.array([[6], [10]]), np.array([4, 15, 0])),
    (np.array([1.0, 2.0]), np.array([2, 3])), (np.array([1, 2]), np.array([2.0, 3.0])),
    (np.array([True]), np.array([False])), (np.array([1, 2]), 3), (np.array([1, 2]), np.array([1, 2, 3])),
    (np.array(12), np.array([8, 9])), (np.zeros(0, np.int64), np.array([3])),
], ids=range(9))
def test_gcd_lcm(name, case):
    _compare(lambda lib, a, b: getattr(lib, name)(a, b), *case)
    _compare(lambda lib, a, b: getattr(a, name)(b) if isinstance(a, lib.Tensor) else getattr(lib, name)(a, b), *case)
    _compare(lambda lib, a, b: getattr(a.clone(), name + "_")(b) if isinstance(a, lib.Tensor) else None, *case)
    _compare(lambda lib, a, b: getattr(lib, name + "_")(a.clone(), b) if isinstance(a, lib.Tensor) else None, *case)


def test_gcd_lcm_int64_edges():
    """int64's extremes as torch's kernel computes them in two's complement (|MIN| is
    MIN; lcm wraps), strided and broadcast operands, and a size that splits across the
    pool. (Not lcm(MIN, 7): gcd is -1 there, and torch's MIN / -1 traps the process.)"""
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    a = np.array([lo, lo, lo, lo, hi, hi, -1, 0, lo, 6, 2**62, -(2**62)])
    b = np.array([0, 6, 9, lo, hi, -1, lo, lo, 1, lo, 3 * 2**40, 2**61])
    for name in ("gcd", "lcm"):
        for x, y in ((a, b), (b, a)):
            np.testing.assert_array_equal(getattr(rgrad, name)(rgrad.tensor(x), rgrad.tensor(y)).numpy(),
                                          getattr(torch, name)(torch.tensor(x), torch.tensor(y)).numpy())
        m = rng.randint(-10**6, 10**6, (300, 700))
        got = getattr(rgrad, name)(rgrad.tensor(m).t(), rgrad.tensor(m[:1].T))
        want = getattr(torch, name)(torch.tensor(m).t(), torch.tensor(m[:1].T))
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_gcd_large():
    a, b = rng.randint(-10**12, 10**12, 5000), rng.randint(-10**6, 10**6, 5000)
    for name in ("gcd", "lcm"):
        np.testing.assert_array_equal(getattr(rgrad, name)(rgrad.tensor(a), rgrad.tensor(b)).numpy(),
                                      getattr(torch, name)(torch.tensor(a), torch.tensor(b)).numpy())


@pytest.mark.parametrize("args", [(0, 2, 5), (-1, 1, 1), (1, 3, 0), (0, 1, 4, 2.0), (0.5, -3.25, 7), (-2, 3, 101),
                                  (0, 10, 11, 2), (1.1, 2.2, 9, 3.5)], ids=str)
@pytest.mark.parametrize("dtype", [None, "float64", "int64", "float32"])
def test_logspace(args, dtype):
    def call(lib):
        kw = {} if dtype is None else {"dtype": getattr(lib, dtype)}
        return lib.logspace(*args, **kw)

    r, t = call(rgrad), call(torch)
    assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1] and tuple(r.shape) == tuple(t.shape)
    np.testing.assert_allclose(r.numpy(), t.numpy(), rtol=2e-16 if t.dtype == torch.float64 else 0)


@pytest.mark.parametrize("call", [
    lambda lib: lib.logspace(0, 1, -1), lambda lib: lib.logspace(0, 1, 2.5),
    lambda lib: lib.logspace(lib.tensor([0.0, 1.0]), 1, 2), lambda lib: lib.logspace(0, 1, 3, dtype=lib.bool),
    lambda lib: lib.logspace(lib.tensor(0.0), lib.tensor(2.0), 3), lambda lib: lib.logspace(0, 2, 3, requires_grad=True),
], ids=range(6))
def test_logspace_misc(call):
    rr, tt = _outcome(lambda: call(rgrad)), _outcome(lambda: call(torch))
    assert rr[0] == tt[0] and (rr[0] == "ok" or rr[1:] == tt[1:]), (rr, tt)
    if rr[0] == "ok":
        assert rr[1].requires_grad == tt[1].requires_grad
        np.testing.assert_allclose(rr[1].detach().numpy(), tt[1].detach().numpy())
