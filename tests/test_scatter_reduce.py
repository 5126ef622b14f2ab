"""scatter_reduce (and in place) against torch: the values of every reduction with and
without include_self (bit for bit: ATen's loop order), integers, NaN, strided operands,
the node (ScatterReduceBackward0) and its saved fields, gradients of every reduction
(ties, zeros for prod), double backward, forward AD for the linear reductions, vmap, and
torch's errors.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")

REDUCES = ["sum", "prod", "mean", "amax", "amin"]


def _bits(t):
    return np.ascontiguousarray(t.detach().numpy()).tobytes()


def _case(seed, dtype="float64", shape=(4, 6), ishape=(5, 6), dim=0, grad=False, ties=False):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    src = rng.standard_normal(ishape)
    if ties:
        x, src = np.round(x), np.round(src)
    idx = rng.integers(0, shape[dim], ishape)
    m = {"x": x, "src": src}
    r = {k: rgrad.tensor(v.tolist(), dtype=getattr(rgrad, dtype), requires_grad=grad) for k, v in m.items()}
    t = {k: torch.tensor(v, dtype=getattr(torch, dtype), requires_grad=grad) for k, v in m.items()}
    r["i"], t["i"] = rgrad.tensor(idx.tolist()), torch.tensor(idx)
    return r, t


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("dim", [0, 1])
def test_values_are_torchs_bits(reduce, include_self, dtype, dim):
    r, t = _case(1, dtype, shape=(4, 6), ishape=(5, 6) if dim == 0 else (4, 9), dim=dim)
    got = r["x"].scatter_reduce(dim, r["i"], r["src"], reduce, include_self=include_self)
    want = t["x"].scatter_reduce(dim, t["i"], t["src"], reduce, include_self=include_self)
    assert _bits(got) == _bits(want)
    got = rgrad.scatter_reduce(r["x"], dim, r["i"], r["src"], reduce=reduce, include_self=include_self)
    assert _bits(got) == _bits(want)
    y = r["x"].clone()
    assert y.scatter_reduce_(dim, r["i"], r["src"], reduce, include_self=include_self) is y
    assert _bits(y) == _bits(want)


@pytest.mark.parametrize("reduce", REDUCES)
def test_integers_nan_and_strided_operands(reduce):
    x, i, s = [1, 2, 3, 4], [0, 1, 0, 1, 2], [5, -6, 7, 8, 9]
    for inc in (True, False):
        got = rgrad.tensor(x).scatter_reduce(0, rgrad.tensor(i), rgrad.tensor(s), reduce, include_self=inc)
        want = torch.tensor(x).scatter_reduce(0, torch.tensor(i), torch.tensor(s), reduce, include_self=inc)
        assert got.tolist() == want.tolist() and got.dtype == rgrad.int64
    nan = float("nan")
    xf, sf = [1.0, nan, 3.0], [nan, 2.0, 5.0, -1.0]
    idx = [0, 1, 2, 2]
    got = rgrad.tensor(xf).scatter_reduce(0, rgrad.tensor(idx), rgrad.tensor(sf), reduce)
    want = torch.tensor(xf).scatter_reduce(0, torch.tensor(idx), torch.tensor(sf), reduce)
    assert _bits(got) == _bits(want)
    r, t = _case(2, "float32", shape=(6, 4), ishape=(6, 5), dim=1)
    got = r["x"].t().scatter_reduce(0, r["i"].t(), r["src"].t(), reduce)
    want = t["x"].t().scatter_reduce(0, t["i"].t(), t["src"].t(), reduce)
    assert _bits(got) == _bits(want)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCES)
def test_node_and_gradients_are_torchs(reduce, include_self):
    r, t = _case(3, grad=True, ties=reduce in ("amax", "amin"))
    if reduce == "prod":
        with rgrad.no_grad(), torch.no_grad():
            for m, d in ((rgrad, r), (torch, t)):
                d["src"][0, 1] = 0.0  # a single zero scattered to its position
                d["x"][2, 3] = 0.0
    y = r["x"].scatter_reduce(0, r["i"], r["src"], reduce, include_self=include_self)
    ty = t["x"].scatter_reduce(0, t["i"], t["src"], reduce, include_self=include_self)
    assert y.grad_fn.name() == ty.grad_fn.name() == "ScatterReduceBackward0"
    fields = sorted(f for f in dir(y.grad_fn) if f.startswith("_saved"))
    assert fields == sorted(f for f in dir(ty.grad_fn) if f.startswith("_saved"))
    assert y.grad_fn._saved_reduce == ty.grad_fn._saved_reduce
    assert y.grad_fn._saved_include_self == ty.grad_fn._saved_include_self
    g = np.random.default_rng(4).standard_normal(tuple(y.shape))
    y.backward(rgrad.tensor(g.tolist(), dtype=rgrad.float64))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(r["x"].grad.numpy(), t["x"].grad.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(r["src"].grad.numpy(), t["src"].grad.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "prod"])
def test_gradcheck_and_gradgradcheck(reduce):
    r, _ = _case(5, grad=True, shape=(3, 4), ishape=(4, 4))
    if reduce == "prod":  # (away from zero)
        with rgrad.no_grad():
            r["x"].abs_().add_(0.5)
            r["src"].abs_().add_(0.5)

    def f(x, s):
        return x.scatter_reduce(0, r["i"], s, reduce, include_self=False)

    assert rgrad.autograd.gradcheck(f, (r["x"], r["src"]))
    assert rgrad.autograd.gradgradcheck(f, (r["x"], r["src"]))


def test_forward_ad_for_sum_and_mean_and_torchs_refusal_otherwise():
    r, t = _case(6)
    tx, ts = _case(7)[0]["x"], _case(7)[0]["src"]
    ttx, tts = _case(7)[1]["x"], _case(7)[1]["src"]
    fa, tfa = rgrad.autograd.forward_ad, torch.autograd.forward_ad
    for reduce in ("sum", "mean"):
        with fa.dual_level():
            y = fa.make_dual(r["x"], tx).scatter_reduce(0, r["i"], fa.make_dual(r["src"], ts), reduce)
            got = fa.unpack_dual(y).tangent
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with tfa.dual_level():
                ty = tfa.make_dual(t["x"], ttx).scatter_reduce(0, t["i"], tfa.make_dual(t["src"], tts), reduce)
                want = tfa.unpack_dual(ty).tangent
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-14)
    # amax/amin: the tangents of the elements equal to the result, averaged (ties too);
    # prod: no tangent, as torch's
    x0, i0, s0 = [1.0, 2.0, 3.0, 4.0], [0, 1, 0, 1, 2], [5.0, 6.0, 7.0, 2.0, 9.0]
    tx0, ts0 = [1.0, 10.0, 100.0, 1000.0], [0.1, 0.2, 0.3, 0.4, 0.5]
    for reduce in ("amax", "amin", "prod"):
        for inc in (True, False):
            with fa.dual_level():
                y = fa.make_dual(rgrad.tensor(x0), rgrad.tensor(tx0)).scatter_reduce(
                    0, rgrad.tensor(i0), fa.make_dual(rgrad.tensor(s0), rgrad.tensor(ts0)), reduce, include_self=inc)
                got = fa.unpack_dual(y).tangent
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with tfa.dual_level():
                    ty = tfa.make_dual(torch.tensor(x0), torch.tensor(tx0)).scatter_reduce(
                        0, torch.tensor(i0), tfa.make_dual(torch.tensor(s0), torch.tensor(ts0)), reduce,
                        include_self=inc)
                    want = tfa.unpack_dual(ty).tangent
            if want is None:
                assert got is None
            else:
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_errors_are_torchs():
    cases = [
        lambda m: m.ones(3).scatter_reduce(0, m.tensor([0]), m.ones(1), "max_"),
        lambda m: m.ones(3).scatter_reduce(0, m.tensor([5]), m.ones(1), "sum"),
        lambda m: m.ones(3).scatter_reduce(0, m.tensor([0.0]), m.ones(1), "sum"),
        lambda m: m.ones(3).scatter_reduce(0, m.tensor([0]), m.ones(1, dtype=m.float64), "sum"),
        lambda m: m.ones(3).scatter_reduce(0, m.tensor([[0]]), m.ones(1, 1), "sum"),
    ]
    for case in cases:
        with pytest.raises(Exception) as want:
            case(torch)
        with pytest.raises(type(want.value)) as got:
            case(rgrad)
        assert str(got.value) == str(want.value)
    # torch takes "max" and "min" for "amax" and "amin"
    x, i, s = rgrad.tensor([1.0, 2.0]), rgrad.tensor([0, 0]), rgrad.tensor([5.0, -3.0])
    assert x.scatter_reduce(0, i, s, "max").tolist() == [5.0, 2.0]
    assert x.scatter_reduce(0, i, s, "min").tolist() == [-3.0, 2.0]


def test_vmap_and_per_sample_gradients():
    from rgrad.func import grad, vmap

    r, t = _case(8, shape=(4, 6), ishape=(5, 6))
    xs, txs = r["x"].unsqueeze(0).expand(3, 4, 6) * 1.0, t["x"].unsqueeze(0).expand(3, 4, 6) * 1.0
    got = vmap(lambda x: x.scatter_reduce(0, r["i"], r["src"], "amax"))(xs)
    want = torch.func.vmap(lambda x: x.scatter_reduce(0, t["i"], t["src"], "amax"))(txs)
    assert _bits(got) == _bits(want)

    def loss(s, x):
        return x.scatter_reduce(0, r["i"], s, "mean", include_self=False).pow(2).sum()

    def tloss(s, x):
        return x.scatter_reduce(0, t["i"], s, "mean", include_self=False).pow(2).sum()

    got = vmap(grad(loss), in_dims=(None, 0))(r["src"], xs)
    want = torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0))(t["src"], txs)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13)


def test_many_threads_give_the_bits_of_one():
    import threading

    r, _ = _case(9, "float32", shape=(300, 200), ishape=(400, 200))
    want = [_bits(r["x"].scatter_reduce(0, r["i"], r["src"], red)) for red in REDUCES]
    errors = []

    def work():
        for _ in range(5):
            got = [_bits(r["x"].scatter_reduce(0, r["i"], r["src"], red)) for red in REDUCES]
            if got != want:
                errors.append(1)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
