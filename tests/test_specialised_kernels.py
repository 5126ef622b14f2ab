"""Specialised kernels agree bit for bit with the general formulas they replace.

Powers by small integers are products, as torch computes them (its
pow_tensor_scalar_optimized_kernel), not libm calls.

A plain backward (no `create_graph`) computes a unary op's gradient `g * f'(x)` in one
kernel; with `create_graph=True` the same formula runs as recorded tensor ops, so that
it can be differentiated again. Both must give the same bits, for every op, dtype and
layout, special values included: the fused kernels are only a faster route.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import rgrad

UNARY = list(rgrad._C._UNARY_OPS)  # every row of the op table
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e-30, 3e4, -3e4, 1e5, 88.0, -104.0,
           math.inf, -math.inf, math.nan]


def _bits(t):
    """The values' bits, with every NaN made the canonical one: a NaN's sign is not a value
    (the compiler may fold `-(1 / x)` into `-1 / x`, torch makes no promise either)."""
    a = t.detach().numpy().copy()
    a[np.isnan(a)] = np.nan
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _input(dtype, n):
    rgrad.manual_seed(n)
    x = rgrad.randn(n, dtype=dtype) * 3
    return rgrad.cat([rgrad.tensor(SPECIAL, dtype=dtype), x])


@pytest.mark.parametrize("dtype", [rgrad.float32, rgrad.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("n", [7, 300_000], ids=["small", "parallel"])
def test_fused_unary_gradient_is_the_composite_one(op, dtype, n):
    x = _input(dtype, n).requires_grad_()
    y = getattr(rgrad, op)(x)
    g = rgrad.randn(y.shape, dtype=dtype)
    (plain,) = rgrad.autograd.grad(y, x, g, retain_graph=True)
    (recorded,) = rgrad.autograd.grad(y, x, g, create_graph=True)
    assert not plain.requires_grad
    # the recorded formula depends on x, except for the rows that save nothing (their
    # gradients are constant: neg, sign, the rounding ops, the angle conversions)
    constant = ("neg", "sign", "trunc", "frac", "floor", "ceil", "round", "sgn", "deg2rad", "rad2deg")
    assert recorded.requires_grad == (op not in constant)
    np.testing.assert_array_equal(_bits(plain), _bits(recorded))
    if op == "tanh":
        # recorded, tanh's gradient is one op (tanh_backward) on the same kernel: compare
        # with the formula written out as separate ops too
        with rgrad.no_grad():
            yd = y.detach()
            np.testing.assert_array_equal(_bits(plain), _bits(g * (1 - yd * yd)))


@pytest.mark.parametrize("dtype", [rgrad.float32, rgrad.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("n", [7, 300_000], ids=["small", "parallel"])
def test_product_gradient_is_the_recorded_one(dtype, n):
    # a plain backward multiplies by the saved operand straight from the kernel; with
    # create_graph=True it is a recorded `mul`: the same bits, broadcast operand included
    a = _input(dtype, n).requires_grad_()
    b = (_input(dtype, n) + 0.25).requires_grad_()
    c = rgrad.tensor([1.5, -0.0], dtype=dtype)[:1].requires_grad_()  # broadcast
    y = a * b * c
    g = rgrad.randn(y.shape, dtype=dtype)
    plain = rgrad.autograd.grad(y, (a, b, c), g, retain_graph=True)
    recorded = rgrad.autograd.grad(y, (a, b, c), g, create_graph=True)
    for p, r in zip(plain, recorded):
        assert not p.requires_grad and r.requires_grad
        np.testing.assert_array_equal(_bits(p), _bits(r))


@pytest.mark.parametrize("op", ["sin", "cos", "tanh", "exp", "log", "sigmoid", "relu"])
def test_fused_unary_gradient_with_strided_inputs_and_gradients(op):
    base = rgrad.rand(6, 8, dtype=rgrad.float64) + 0.5
    x = base.t().requires_grad_()  # non-contiguous saved input / output
    y = getattr(rgrad, op)(x)
    for g in (rgrad.rand(8, 1, dtype=rgrad.float64).expand(8, 6),  # stride-0 gradient
              rgrad.rand(6, 8, dtype=rgrad.float64).t()):
        (plain,) = rgrad.autograd.grad(y, x, g, retain_graph=True)
        (recorded,) = rgrad.autograd.grad(y, x, g, retain_graph=True, create_graph=True)
        np.testing.assert_array_equal(_bits(plain.contiguous()), _bits(recorded.contiguous()))


def test_fused_gradient_values():
    x = rgrad.tensor([0.5, -1.0, 2.0], requires_grad=True)
    (rgrad.tanh(x) * rgrad.tensor([1.0, 2.0, 3.0])).sum().backward()
    expected = [(1 - math.tanh(v) ** 2) * w for v, w in zip([0.5, -1.0, 2.0], [1.0, 2.0, 3.0])]
    assert x.grad.tolist() == pytest.approx(expected, rel=1e-6)
    x.grad = None
    rgrad.sin(x).sum().backward()
    assert x.grad.tolist() == pytest.approx([math.cos(v) for v in [0.5, -1.0, 2.0]], rel=1e-6)


@pytest.mark.parametrize("dtype", [rgrad.float32, rgrad.float64], ids=["f32", "f64"])
def test_small_integer_powers_are_products(dtype):
    x = _input(dtype, 1000)
    cases = {
        1: x,
        2: x * x,
        3: x * x * x,
        -1: rgrad.reciprocal(x),
        -2: rgrad.reciprocal(x * x),
        0.5: rgrad.sqrt(x),
        -0.5: rgrad.rsqrt(x),
    }
    for e, expected in cases.items():
        np.testing.assert_array_equal(_bits(x**e), _bits(expected), err_msg=f"x ** {e}")
    assert (x**0).tolist() == [1.0] * x.numel()  # nan ** 0 == 1 too


def test_small_integer_powers_match_torch_bitwise():
    torch = pytest.importorskip("torch")
    x = _input(rgrad.float32, 1000)
    xt = torch.from_numpy(x.numpy())
    # (other exponents go through torch's vectorised pow, within 1 ulp of ours, not equal)
    for e in (1, 2, 3, -1, -2, -0.5):
        ours, theirs = (x**e).numpy(), (xt**e).numpy()
        nan = np.isnan(ours)
        np.testing.assert_array_equal(nan, np.isnan(theirs), err_msg=f"x ** {e}")
        # bit for bit, except the sign of NaNs (which libm leaves unspecified)
        np.testing.assert_array_equal(ours[~nan].view(np.uint32), theirs[~nan].view(np.uint32), err_msg=f"x ** {e}")


def test_recorded_tanh_backward_is_one_node_with_its_own_derivative():
    x = (rgrad.rand(6, dtype=rgrad.float64) * 4 - 2).requires_grad_()
    (g,) = rgrad.autograd.grad(x.tanh().sum(), x, create_graph=True)
    assert type(g.grad_fn).__name__ == "TanhBackwardBackward0"  # torch's node, one kernel
    y = x.tanh().detach()
    np.testing.assert_allclose(g.detach().numpy(), (1 - y * y).numpy(), rtol=1e-15)
    # second and third derivatives through it
    assert rgrad.autograd.gradgradcheck(lambda t: t.tanh() * 1.5, (x,))
    assert rgrad.autograd.gradgradcheck(
        lambda t: rgrad.autograd.grad((t.tanh() ** 3).sum(), t, create_graph=True)[0], (x,)
    )


@pytest.mark.parametrize(
    "sa,sb",
    [((128, 512), (512,)), ((128, 1), (128, 512)), ((4, 1, 16), (3, 16)), ((2, 3, 16), (2, 1, 1)),
     ((16,), (5, 16)), ((5, 3, 9), (9,)), ((3, 7), (7,))],
)
@pytest.mark.parametrize("dtype", [rgrad.float32, rgrad.float64, rgrad.int64])
def test_row_broadcasting_matches_materialised_operands(sa, sb, dtype):
    # Broadcasts whose last dim is contiguous or broadcast run row by row; the result
    # must be bitwise that of the same op on materialised (expanded, contiguous) operands,
    # and a transposed operand takes the general path to the same bits.
    rgrad.manual_seed(0)
    a = (rgrad.randn(*sa) * 10).to(dtype)
    b = (rgrad.randn(*sb) * 10).to(dtype)
    for op in ("add", "sub", "mul", "maximum", "gt"):
        f = getattr(rgrad, op)
        got = f(a, b)
        full = got.shape
        ref = f(a.expand(*full).contiguous(), b.expand(*full).contiguous())
        assert got.tolist() == ref.tolist(), op
        if len(sa) == 2 and min(sa) > 1:
            assert f(a.t().contiguous().t(), b).tolist() == ref.tolist(), op


@pytest.mark.parametrize("n", [7, 300_000], ids=["small", "parallel"])
@pytest.mark.parametrize("dtype", [rgrad.float32, rgrad.float64, rgrad.int64, rgrad.bool])
def test_where_picks_elementwise_for_every_kind_of_operand(n, dtype):
    # `where` reads each side as every element or as one broadcast value (a number, an
    # expanded scalar), without materialising it; strided sides take the general path.
    rgrad.manual_seed(n)
    cond = rgrad.randn(n) > 0
    a = (rgrad.randn(n) * 10).to(dtype)
    b = (rgrad.randn(2 * n) * 10).to(dtype)[::2]  # strided
    one, zero = (rgrad.ones(1) * 3).to(dtype), rgrad.zeros(1).to(dtype)
    c, va, vb, v1, v0 = cond.tolist(), a.tolist(), b.tolist(), one.item(), zero.item()
    cases = {
        "each, each": (a, b, va, vb),
        "each, broadcast": (a, one.expand(n), va, [v1] * n),
        "broadcast, each": (one.expand(n), b, [v1] * n, vb),
        "broadcast, broadcast": (one.expand(n), zero.expand(n), [v1] * n, [v0] * n),
    }
    for name, (x, y, lx, ly) in cases.items():
        got = rgrad.where(cond, x, y)
        assert got.dtype == dtype and got.shape == (n,), name
        assert got.tolist() == [p if k else q for k, p, q in zip(c, lx, ly)], name
    if dtype != rgrad.bool:
        got = rgrad.where(cond, a, 0)
        assert got.tolist() == [p if k else 0 for k, p in zip(c, va)]


@pytest.mark.parametrize("n", [7, 300_000], ids=["small", "parallel"])
@pytest.mark.parametrize("dtype", [rgrad.float32, rgrad.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("alpha", [1, -0.01, 3])
def test_in_place_add_and_sub_with_alpha_match_the_out_of_place_ops(n, dtype, alpha):
    # With nothing to record, `p.add_(g, alpha=a)` scales g and updates p in one pass
    # (an optimiser step); the bits must be those of `p + a * g` computed out of place.
    rgrad.manual_seed(n)
    p, g = rgrad.randn(n, dtype=dtype), rgrad.randn(n, dtype=dtype) * 100
    for method, ref in (("add_", rgrad.add), ("sub_", rgrad.sub)):
        want = ref(p, g, alpha=alpha)
        got = p.clone()
        v = got._version
        assert getattr(got, method)(g, alpha=alpha) is got
        assert got._version == v + 1
        assert (_bits(got) == _bits(want)).all(), method
    with rgrad.no_grad():  # a leaf that requires grad, in an optimiser step
        w = p.clone().requires_grad_()
        w.add_(g, alpha=alpha)
    assert (_bits(w) == _bits(rgrad.add(p, g, alpha=alpha))).all()


@pytest.mark.parametrize("n", [7, 300_000], ids=["small", "parallel"])
def test_copy_into_dense_and_strided_destinations(n):
    rgrad.manual_seed(n)
    src = rgrad.randn(n)
    dst = rgrad.zeros(n)
    assert dst.copy_(src).tolist() == src.tolist()
    wide = rgrad.zeros(2 * n)
    wide[::2].copy_(src)  # a strided destination takes the element-by-element path
    assert wide[::2].tolist() == src.tolist() and wide[1::2].abs().sum().item() == 0
    assert rgrad.zeros(n, dtype=rgrad.float64).copy_(src).tolist() == src.double().tolist()


@pytest.mark.parametrize("shape", [(1, 1), (3, 10), (128, 10), (5, 1000), (300, 300)])
@pytest.mark.parametrize("dtype", [rgrad.float32, rgrad.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_fused_softmax_over_the_last_dim_matches_the_composed_ops(shape, dtype, log):
    # A contiguous input takes the fused row kernel; the same values in a transposed
    # (non-contiguous) layout take the composed ops (amax, sub, exp, sum, div or log),
    # whose intermediates keep that layout (as torch's do), so their sums may run in
    # another order: special values must agree exactly, the rest within a few ulp.
    rgrad.manual_seed(shape[-1])
    x = rgrad.randn(*shape, dtype=dtype) * 30
    flat = x.reshape(-1)
    for i, v in enumerate([math.inf, -math.inf, math.nan, 1e30, -1e30][: flat.numel()]):
        flat[(i * 7919) % flat.numel()] = v
    if shape[0] > 1:
        x[0] = -math.inf  # a whole row of -inf: NaNs, as in torch
    strided = x.t().contiguous().t()
    assert x.is_contiguous() and not strided.is_contiguous() or shape[0] == 1 or shape[1] == 1
    f = rgrad.log_softmax if log else rgrad.softmax
    a, b = np.array(f(x, -1).tolist()), np.array(f(strided, -1).tolist())
    assert (np.isnan(a) == np.isnan(b)).all()
    finite = np.isfinite(a)
    assert (finite == np.isfinite(b)).all() and (a[~finite & ~np.isnan(a)] == b[~finite & ~np.isnan(b)]).all()
    # (log_softmax is x - max - log(sum): rounding is relative to the row's magnitudes)
    xs = np.abs(np.nan_to_num(np.array(x.tolist()), nan=0.0, posinf=0.0, neginf=0.0))
    scale = xs + xs.max(axis=-1, keepdims=True) + 1.0
    eps = np.finfo(np.float32 if dtype == rgrad.float32 else np.float64).eps
    assert (np.abs(a[finite] - b[finite]) <= (16 * eps * scale)[finite]).all()


@pytest.mark.parametrize("shape", [(1, 1), (4, 3), (64, 9), (7, 1000)])
@pytest.mark.parametrize("dtype", [rgrad.float32, rgrad.float64], ids=["f32", "f64"])
def test_row_extremes_match_the_general_scan(shape, dtype):
    # Contiguous rows take a vectorised max/min, then the first index holding it; a
    # transposed layout takes the element-by-element scan. Values (bits) and indices
    # must agree: ties keep the first index, the first NaN wins, -0 and +0 tie.
    rgrad.manual_seed(shape[1])
    x = rgrad.randint(-3, 4, shape).to(dtype)  # small integers: many ties
    flat = x.reshape(-1)
    n = flat.numel()
    for i, v in enumerate([-0.0, 0.0, math.nan, math.inf, -math.inf, math.nan, 5.0, 5.0][: n]):
        flat[(i * 31) % n] = v
    if shape[0] > 2:
        x[1] = 0.0
        x[1, shape[1] // 2] = -0.0
        x[2] = -0.0
    strided = x.t().contiguous().t()
    for name in ("amax", "amin"):
        got, want = getattr(x, name)(1), getattr(strided, name)(1)
        assert (_bits(got) == _bits(want)).all(), name
    for name in ("max", "min"):
        (gv, gi), (wv, wi) = getattr(x, name)(1), getattr(strided, name)(1)
        assert (_bits(gv) == _bits(wv)).all() and gi.tolist() == wi.tolist(), name
    for name in ("argmax", "argmin"):
        assert getattr(x, name)(1).tolist() == getattr(strided, name)(1).tolist(), name
    assert (_bits(x.amax()) == _bits(strided.amax())).all()
    assert x.argmax().item() == strided.argmax().item()


@pytest.mark.parametrize("shape, dims", [((7,), None), ((300, 300), None), ((64, 33), (1,)), ((4, 5, 6), (1, 2))])
@pytest.mark.parametrize("dtype", [rgrad.float32, rgrad.float64], ids=["f32", "f64"])
def test_two_norm_in_one_pass_matches_the_composed_ops(shape, dims, dtype):
    # The 2-norm sums x*x in one pass for any layout; a strided input's walk (columns, in
    # order, in float64) may round differently from a contiguous one's (lanes; float32
    # rows square and add in float32 within chunks of 16 a lane, then in float64): equal
    # within float64 rounding (float32: a few float32 ulps), infinities and NaN included.
    rgrad.manual_seed(len(shape))
    x = rgrad.randn(*shape, dtype=dtype) * 10
    flat = x.reshape(-1)
    flat[0], flat[-1] = math.inf, -0.0
    for special in (None, math.nan):
        if special is not None:
            flat[1] = special
        strided = rgrad.stack([x, x], dim=-1).select(-1, 0)
        assert not strided.is_contiguous()
        got = x.norm(dim=dims) if dims else x.norm()
        want = strided.norm(dim=dims) if dims else strided.norm()
        rtol = 1e-6 if dtype == rgrad.float32 else 1e-13
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, atol=0, equal_nan=True)


@pytest.mark.parametrize("shape", [(3, 7), (300, 1001), (2, 3, 50000)], ids=["small", "parallel", "3d"])
def test_index_select_along_the_innermost_dim(shape):
    # the innermost dim's own loop (chunks start mid-row on the pool): as numpy's take
    rng = np.random.RandomState(12)
    a = rng.standard_normal(shape)
    idx = rng.randint(0, shape[-1], size=shape[-1] // 2 + 3)
    x = rgrad.tensor(a)
    got = x.index_select(x.dim() - 1, rgrad.tensor(idx)).numpy()
    np.testing.assert_array_equal(got, np.take(a, idx, axis=-1))
    np.testing.assert_array_equal(x.flip(-1).numpy(), a[..., ::-1])
    # an offset view (a row of a larger tensor) reads from its offset
    big = rgrad.tensor(np.concatenate([a, a + 1], axis=0))
    view = big[shape[0]:]
    np.testing.assert_array_equal(view.index_select(view.dim() - 1, rgrad.tensor(idx)).numpy(),
                                  np.take(a + 1, idx, axis=-1))
