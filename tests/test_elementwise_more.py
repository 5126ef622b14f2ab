"""fmax, fmin, copysign, logaddexp2, heaviside, nextafter, ldexp (rows of the binary op
table, src/ops/table.rs), sinc (a row of the unary table), and the composites float_power
and signbit, against torch: values (bit for bit where torch's kernel is exact or
libm's), dtypes, nodes and their saved fields, gradients, forward AD and errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")
SPECIAL_A = [0.0, -0.0, 1.0, -1.5, INF, -INF, NAN, -NAN, 3.0, 1e-300, -7.25, 2.0]
SPECIAL_B = [-0.0, 0.0, 1.0, 2.5, -INF, INF, 1.0, 2.0, NAN, 0.0, -7.25, 2.0]


def _bits(t):
    return np.ascontiguousarray(t.detach().numpy()).tobytes()


def _bits_any_nan(t):
    """The bits, with every NaN as the canonical one (where torch's NaN sign depends on
    whether its vector loop or its scalar tail computed the element)."""
    a = np.ascontiguousarray(t.detach().numpy()).copy()
    a[np.isnan(a)] = np.nan
    return a.tobytes()


def _pair(values, dtype):
    """The same values as an rgrad and a torch tensor."""
    r = rgrad.tensor(values, dtype=getattr(rgrad, dtype))
    t = torch.tensor(values, dtype=getattr(torch, dtype))
    return r, t


def _random(seed, shape, dtype="float64", scale=3.0):
    a = np.random.default_rng(seed).standard_normal(shape) * scale
    return rgrad.tensor(a.tolist(), dtype=getattr(rgrad, dtype)), torch.tensor(a, dtype=getattr(torch, dtype))


EXACT = ["fmax", "fmin", "copysign", "heaviside", "nextafter", "ldexp"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", EXACT)
def test_values_are_torchs_bits(name, dtype):
    a, ta = _pair(SPECIAL_A, dtype)
    b, tb = _pair(SPECIAL_B if name != "ldexp" else [3.0, -1.0, 0.0, 2.0, -2.0, 1.0, 5.0, 1.0, 0.0, 7.0, -3.0, 0.5], dtype)
    got, want = getattr(rgrad, name)(a, b), getattr(torch, name)(ta, tb)
    assert got.dtype == getattr(rgrad, dtype)
    bits = _bits_any_nan if name == "nextafter" else _bits
    assert bits(got) == bits(want), (got, want)
    # the method, and on a large strided operand (the slice paths) the same bits
    assert bits(getattr(a, name)(b)) == bits(want)
    x, tx = _random(1, (300, 257), dtype)
    y, ty = _random(2, (257, 300), dtype)
    if name == "ldexp":
        y, ty = y.round(), ty.round()
    assert _bits(getattr(rgrad, name)(x, y.t())) == _bits(getattr(torch, name)(tx, ty.t()))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_logaddexp2_within_an_ulp_and_exact_at_infinities(dtype):
    a, ta = _pair([INF, -INF, INF, NAN, 1.0, -2000.0, 0.0, 1e10], dtype)
    b, tb = _pair([INF, -INF, -INF, 1.0, NAN, -2000.0, 0.0, -1e10], dtype)
    got, want = rgrad.logaddexp2(a, b), torch.logaddexp2(ta, tb)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    x, tx = _random(3, (100, 100), dtype, scale=30.0)
    y, ty = _random(4, (100, 100), dtype, scale=30.0)
    got = rgrad.logaddexp2(x, y).numpy()
    # against the value in float64 (torch's float32 kernel is a few ulp off it)
    xd, yd = x.double().numpy(), y.double().numpy()
    exact = np.maximum(xd, yd) + np.log1p(np.exp2(-np.abs(xd - yd))) / np.log(2.0)
    ulp = np.spacing(np.abs(exact).astype(got.dtype)).astype(np.float64)
    limit = 0.51 if dtype == "float32" else 2.0
    assert np.max(np.abs(got.astype(np.float64) - exact) / ulp) <= limit
    np.testing.assert_allclose(got, torch.logaddexp2(tx, ty).numpy(), rtol=1e-5 if dtype == "float32" else 1e-14)


def test_sinc_is_torchs_bits():
    for dtype in ("float32", "float64"):
        x, tx = _random(5, (1000,), dtype)
        x[0], tx[0] = 0.0, 0.0
        assert _bits(rgrad.sinc(x)) == _bits(torch.sinc(tx))
        s, ts = _pair([0.0, -0.0, 1.0, -2.0, 0.5, INF, NAN, 1e-30, 1e30], dtype)
        assert _bits(s.sinc()) == _bits(ts.sinc())
    for vals, dt in (([1, 0, -3], "int64"), ([True, False], "bool")):
        r, t = _pair(vals, dt)
        assert rgrad.sinc(r).dtype == rgrad.float32
        assert _bits(rgrad.sinc(r)) == _bits(torch.sinc(t))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sinc_gradient_is_torchs(dtype):
    x, tx = _random(6, (2000,), dtype)
    x[0], tx[0] = 0.0, 0.0
    x[1], tx[1] = 1e-30, 1e-30
    g, tg = _random(7, (2000,), dtype)
    x.requires_grad_()
    tx.requires_grad_()
    y, ty = rgrad.sinc(x), torch.sinc(tx)
    assert y.grad_fn.name() == ty.grad_fn.name() == "SincBackward0"
    assert _bits(y.grad_fn._saved_self) == _bits(ty.grad_fn._saved_self)
    y.backward(g)
    ty.backward(tg)
    # the same formula in the same order: equal but for torch's vectorised sin/cos
    # (a difference of two products: its cancellation magnifies sin's last-ulp differences)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4 if dtype == "float32" else 1e-12,
                               atol=1e-4 if dtype == "float32" else 1e-13)
    assert x.grad[0].item() == 0.0 and x.grad[1].item() == 0.0


@pytest.mark.parametrize(
    "name, a, b, dtype",
    [
        ("fmax", [1, 5, -3], [2, 1, -3], "int64"),
        ("fmin", [1, 5, -3], [2, 1, -3], "int64"),
        ("fmax", [True, False, False], [False, False, True], "bool"),
        ("fmin", [True, False, True], [False, False, True], "bool"),
        ("heaviside", [0, 5, -3], [7, 1, 2], "int64"),
        ("heaviside", [True, False, False], [False, True, False], "bool"),
        ("copysign", [1, 5, -3], [-2, 1, -3], "int64"),
        ("copysign", [True, False], [False, True], "bool"),
        ("ldexp", [1, 5, -3], [2, 1, -3], "int64"),
    ],
)
def test_integer_and_bool_operands(name, a, b, dtype):
    (ra, ta), (rb, tb) = _pair(a, dtype), _pair(b, dtype)
    got, want = getattr(rgrad, name)(ra, rb), getattr(torch, name)(ta, tb)
    assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
    assert got.tolist() == want.tolist()


def test_mixed_dtypes_promote_as_torch():
    for name in ("fmax", "fmin", "copysign", "logaddexp2", "nextafter", "ldexp"):
        for da, db in (("float32", "float64"), ("int64", "float32"), ("float64", "int64")):
            if name in ("logaddexp2", "nextafter") and "int64" in (da, db):
                continue
            (ra, ta), (rb, tb) = _pair([1.0, -2.0], da), _pair([3.0, 0.5], db)
            if da == "int64":
                (ra, ta) = _pair([1, -2], da)
            if db == "int64":
                (rb, tb) = _pair([3, 0], db)
            got, want = getattr(rgrad, name)(ra, rb), getattr(torch, name)(ta, tb)
            assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1], (name, da, db)
            np.testing.assert_array_equal(got.numpy(), want.numpy())


def _error(f, *args):
    try:
        f(*args)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.heaviside(m.tensor([1.0]), m.tensor([1.0], dtype=m.float64)),
        lambda m: m.heaviside(m.tensor([1]), m.tensor([1.0])),
        lambda m: m.logaddexp2(m.tensor([1]), m.tensor([2])),
        lambda m: m.nextafter(m.tensor([True]), m.tensor([False])),
        lambda m: m.fmax(m.tensor([1.0]), 2.0),
        lambda m: m.fmin(2.0, m.tensor([1.0])),
        lambda m: m.copysign(2.0, m.tensor([1.0])),
        lambda m: m.heaviside(m.tensor([1.0]), 0.5),
        lambda m: m.ldexp(m.tensor([1.0]), 2),
        lambda m: m.fmax(m.tensor([1.0, 2.0]), m.tensor([1.0, 2.0, 3.0])),
        lambda m: m.tensor([1.0]).fmax_(m.tensor([1.0])),
        lambda m: m.tensor([1, 2]).copysign_(m.tensor([-1, 2])),
    ],
)
def test_errors_are_torchs(call):
    got, want = _error(call, rgrad), _error(call, torch)
    assert want is not None
    assert got is not None
    assert got[0] == want[0]
    if want[0] != "AttributeError":
        assert got[1].replace("rgrad", "torch") == want[1]


@pytest.mark.parametrize(
    "name, node, saved",
    [
        ("fmax", "FmaxBackward0", ["_saved_other", "_saved_self"]),
        ("fmin", "FminBackward0", ["_saved_other", "_saved_self"]),
        ("copysign", "CopysignBackward0", ["_saved_result", "_saved_self"]),
        ("logaddexp2", "Logaddexp2Backward0", ["_saved_other", "_saved_self"]),
        ("nextafter", "NextafterBackward0", ["_saved_other", "_saved_self"]),
        ("ldexp", "LdexpBackward0", ["_saved_other", "_saved_result"]),
    ],
)
def test_nodes_saved_fields_and_gradients_are_torchs(name, node, saved):
    a0 = [1.0, -2.0, NAN, 0.0, 3.0, -0.5, 2.0]
    b0 = [0.5, NAN, 3.0, -0.0, 3.0, 1.5, -1.0]
    a, ta = _pair(a0, "float64")
    b, tb = _pair(b0, "float64")
    for t in (a, b, ta, tb):
        t.requires_grad_()
    y, ty = getattr(rgrad, name)(a, b), getattr(torch, name)(ta, tb)
    assert y.grad_fn.name() == ty.grad_fn.name() == node
    got_fields = sorted(f for f in dir(y.grad_fn) if f.startswith("_saved"))
    assert got_fields == saved == sorted(f for f in dir(ty.grad_fn) if f.startswith("_saved"))
    for f in saved:
        assert _bits(getattr(y.grad_fn, f)) == _bits(getattr(ty.grad_fn, f))
    g = [0.5, 1.0, -2.0, 3.0, 1.5, 2.0, -1.0]
    y.backward(rgrad.tensor(g, dtype=rgrad.float64))
    ty.backward(torch.tensor(g, dtype=torch.float64))
    np.testing.assert_array_equal(a.grad.numpy(), ta.grad.numpy())
    np.testing.assert_array_equal(b.grad.numpy(), tb.grad.numpy())


def test_copysign_with_a_number_records_torchs_scalar_node():
    x, tx = _pair([1.0, -2.0, 0.0], "float32")
    x.requires_grad_()
    tx.requires_grad_()
    for c in (2.0, -3, -0.0):
        y, ty = x.copysign(c), tx.copysign(c)
        assert y.grad_fn.name() == ty.grad_fn.name() == "CopysignBackward1"
        assert _bits(y) == _bits(ty)
        assert len(y.grad_fn.next_functions) == 1
    z = x * 1
    tz = tx * 1
    z.copysign_(-1.0)
    tz.copysign_(-1.0)
    z.sum().backward()
    tz.sum().backward()
    assert x.grad.tolist() == tx.grad.tolist()


def test_heaviside_has_no_derivative():
    x = rgrad.tensor([1.0, 0.0, -1.0], requires_grad=True)
    v = rgrad.tensor([0.5, 0.5, 0.5])
    y = rgrad.heaviside(x, v)
    assert y.tolist() == [1.0, 0.5, 0.0]
    assert y.grad_fn.name() == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::heaviside is not implemented"):
        y.sum().backward()
    with rgrad.autograd.forward_ad.dual_level():
        d = rgrad.autograd.forward_ad.make_dual(x.detach(), rgrad.ones(3))
        with pytest.raises(NotImplementedError, match="Trying to use forward AD with aten::heaviside"):
            rgrad.heaviside(d, v)


# torch's make_dual loads its jvp decompositions, which warn about torch.jit.script
@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("name", ["fmax", "fmin", "copysign", "logaddexp2", "nextafter", "ldexp"])
def test_forward_ad_matches_torch(name):
    fa = rgrad.autograd.forward_ad
    tfa = torch.autograd.forward_ad
    # (the last pair a tie: fmax/fmin split it, nextafter's tangent is 0 there)
    a0, b0 = [1.0, -2.0, 0.5, 3.0, 2.0], [0.5, 3.0, -1.0, 2.0, 2.0]
    ta0, tb0 = [1.0, 2.0, -1.0, 0.5, 1.0], [0.25, -1.0, 2.0, 3.0, 4.0]
    with fa.dual_level():
        y = getattr(rgrad, name)(fa.make_dual(rgrad.tensor(a0, dtype=rgrad.float64), rgrad.tensor(ta0, dtype=rgrad.float64)),
                                 fa.make_dual(rgrad.tensor(b0, dtype=rgrad.float64), rgrad.tensor(tb0, dtype=rgrad.float64)))
        got = fa.unpack_dual(y).tangent
    with tfa.dual_level():
        y = getattr(torch, name)(tfa.make_dual(torch.tensor(a0, dtype=torch.float64), torch.tensor(ta0, dtype=torch.float64)),
                                 tfa.make_dual(torch.tensor(b0, dtype=torch.float64), torch.tensor(tb0, dtype=torch.float64)))
        want = tfa.unpack_dual(y).tangent
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-15)


def test_float_power_is_torchs():
    x = rgrad.tensor([1.5, 2.0, -1.0], requires_grad=True)
    tx = torch.tensor([1.5, 2.0, -1.0], requires_grad=True)
    for args, targs in (((x, 2), (tx, 2)), ((2, x), (2, tx)), ((x, x), (tx, tx)),
                        ((x, rgrad.tensor([1, 2, 3])), (tx, torch.tensor([1, 2, 3])))):
        y, ty = rgrad.float_power(*args), torch.float_power(*targs)
        assert y.dtype == rgrad.float64
        assert _bits(y) == _bits(ty)
        assert y.grad_fn.name()[:3] == ty.grad_fn.name()[:3] == "Pow"
        y.sum().backward()
        ty.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    assert x.float_power(3).dtype == rgrad.float64
    with pytest.raises(RuntimeError, match="the base given to float_power_ has dtype Float but the operation's "
                                           "result requires dtype Double"):
        rgrad.tensor([1.0]).float_power_(2)
    d = rgrad.tensor([2.0], dtype=rgrad.float64)
    assert d.float_power_(3).tolist() == [8.0]


def test_signbit_is_torchs():
    for vals, dt in (([-0.0, 0.0, NAN, -NAN, -1.0, INF, -INF, 2.0], "float32"),
                     ([-0.0, 0.0, -NAN, -1e-300], "float64"), ([-1, 0, 2], "int64"), ([True, False], "bool")):
        r, t = _pair(vals, dt)
        got, want = rgrad.signbit(r), torch.signbit(t)
        assert got.dtype == rgrad.bool
        assert got.tolist() == want.tolist()
        assert r.signbit().tolist() == want.tolist()
    x = rgrad.tensor([1.0, -2.0], requires_grad=True)
    s = x.signbit()
    assert s.grad_fn is None and not s.requires_grad


def test_new_ops_give_the_same_bits_on_one_and_two_threads():
    x, _ = _random(8, (700, 700), "float32")
    y, _ = _random(9, (700, 700), "float32")
    before = rgrad.get_num_threads()
    out = []
    try:
        for n in (1, 2):
            rgrad.set_num_threads(n)
            out.append([_bits(getattr(rgrad, f)(x, y)) for f in ("fmax", "copysign", "logaddexp2", "ldexp")]
                       + [_bits(rgrad.sinc(x))])
    finally:
        rgrad.set_num_threads(before)
    assert out[0] == out[1]


def test_ldexp_scales_exactly_where_the_power_alone_overflows():
    x = rgrad.tensor([2.0**-1000, 1e-300, 3.0], dtype=rgrad.float64)
    e = rgrad.tensor([1500, 1100, -1074], dtype=rgrad.int64)
    assert rgrad.ldexp(x, e).tolist() == [math.ldexp(2.0**-1000, 1500), math.ldexp(1e-300, 1100), math.ldexp(3.0, -1074)]


@pytest.mark.parametrize("name", ["fmax", "fmin", "copysign", "logaddexp2", "heaviside", "nextafter", "ldexp",
                                  "atan2", "maximum"])
def test_vmap_over_the_function_and_the_method(name):
    from rgrad.func import vmap

    x, _ = _random(10, (4, 3, 5), "float64")
    y, _ = _random(11, (3, 5), "float64")
    want = getattr(rgrad, name)(x, y)
    # the builtin passed as it is (taken before the vmap swapped it), a lambda, the method
    assert _bits(vmap(getattr(rgrad, name), in_dims=(0, None))(x, y)) == _bits(want)
    assert _bits(vmap(lambda a, b: getattr(rgrad, name)(a, b), in_dims=(0, None))(x, y)) == _bits(want)
    assert _bits(vmap(lambda a, b: getattr(a, name)(b), in_dims=(0, None))(x, y)) == _bits(want)
    assert _bits(vmap(getattr(rgrad, name), in_dims=(None, 1))(y, x.movedim(0, 1))) == _bits(
        getattr(rgrad, name)(y, x))


def test_vmap_of_sinc_signbit_and_float_power():
    from rgrad.func import vmap

    x, _ = _random(12, (4, 6), "float32")
    assert _bits(vmap(rgrad.sinc)(x)) == _bits(rgrad.sinc(x))
    assert vmap(rgrad.signbit)(x).tolist() == rgrad.signbit(x).tolist()
    assert _bits(vmap(rgrad.float_power, in_dims=(0, None))(x.abs(), 1.5)) == _bits(rgrad.float_power(x.abs(), 1.5))


def test_per_sample_gradients_through_fmax_and_sinc():
    from rgrad.func import grad, vmap

    x, tx = _random(13, (5, 4), "float64")
    w, tw = _random(14, (4,), "float64")

    def loss(w, x):
        return (rgrad.sinc(x * w).fmax(x) ** 2).sum()

    got = vmap(grad(loss), in_dims=(None, 0))(w, x)
    want = torch.func.vmap(torch.func.grad(lambda w, x: (torch.sinc(x * w).fmax(x) ** 2).sum()),
                           in_dims=(None, 0))(tw, tx)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-14)
