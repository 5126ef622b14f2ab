"""addcmul, addcdiv, lerp and addr: the native fused kernels (src/backend/cpu/fused.rs)
and their nodes (src/ops/fused.rs), against torch.

Values: bit for bit torch's in float32 and float64 (addcmul and lerp fuse the last
multiply and add as ATen's kernels do, addcdiv does not), on contiguous, transposed,
strided and broadcast operands, at sizes below and above the parallel threshold, the
same bits on 1 and 2 threads. addr fuses as ATen's vector loop does; ATen's scalar loop
(the last ``n % 32`` elements of each row on an AVX-512 build) rounds twice, so addr
matches torch bitwise where rows are a multiple of 32 long and within an ulp elsewhere.
Nodes: torch's names, saved fields and edges; gradients, in-place forms, dtypes,
integer and bool kernels, errors, vmap and forward AD as torch.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")


def _np(t):
    return np.ascontiguousarray(t.detach().numpy())


def _same(r, t):
    """Same dtype, shape and bits (a NaN's sign and payload aside: which operand's NaN an
    instruction passes on is the instruction's business)."""
    assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (r.dtype, t.dtype)
    assert tuple(r.shape) == tuple(t.shape)
    a, b = _np(r), _np(t)
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        assert (nan == np.isnan(b)).all()
        a, b = np.where(nan, 0, a), np.where(nan, 0, b)
    assert a.tobytes() == b.tobytes(), np.max(np.abs(a.astype(float) - b.astype(float)))


def _on_threads(f):
    """f() on 1 and on 2 threads; asserts the same bits; returns the 2-thread result."""
    before = rgrad.get_num_threads()
    out = []
    try:
        for n in (1, 2):
            rgrad.set_num_threads(n)
            out.append(f())
    finally:
        rgrad.set_num_threads(before)
    assert _np(out[0]).tobytes() == _np(out[1]).tobytes()
    return out[1]


def _arrs(shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def _both(arrs):
    return [rgrad.from_numpy(a.copy()) for a in arrs], [torch.from_numpy(a.copy()) for a in arrs]


# operand shapes: the output's shape and each operand's (broadcast ones included); views
# are applied to the first operand
N = 100_003  # above the 64K-element parallel threshold, not a multiple of any block
SHAPES = {
    "small": [(7,), (7,), (7,)],
    "large": [(N,), (N,), (N,)],
    "2d": [(300, 257), (300, 257), (300, 257)],
    "bias": [(300, 257), (257,), (300, 1)],
    "scalar": [(64, 33), (), (64, 33)],
    "outer": [(1, 257), (300, 1), (257,)],
}
VIEWS = {
    "contiguous": lambda t: t,
    "transposed": lambda t: t.t(),
    "strided": lambda t: t[..., ::2] if t.dim() >= 1 and t.shape[-1] > 2 else t,
}

OPS = {
    "addcmul": lambda L, a, b, c: L.addcmul(a, b, c, value=0.37),
    "addcmul-1": lambda L, a, b, c: L.addcmul(a, b, c),
    "addcmul-int-value": lambda L, a, b, c: a.addcmul(b, c, value=-3),
    "addcdiv": lambda L, a, b, c: L.addcdiv(a, b, c.abs() + 0.5, value=-1.3),
    "addcdiv-1": lambda L, a, b, c: a.addcdiv(b, c.abs() + 0.5),
    "lerp-low": lambda L, a, b, c: L.lerp(a, b, 0.3),
    "lerp-high": lambda L, a, b, c: L.lerp(a, b, 0.9),
    "lerp-negative": lambda L, a, b, c: a.lerp(b, -0.7),
    "lerp-int-weight": lambda L, a, b, c: a.lerp(b, 2),
    "lerp-tensor": lambda L, a, b, c: L.lerp(a, b, c),
    "lerp-tensor-unit": lambda L, a, b, c: L.lerp(a, b, c.abs() / (c.abs() + 1)),
}


# (a 1-d operand has no transpose)
LAYOUTS = [(s, v) for s in SHAPES for v in VIEWS if not (v == "transposed" and len(SHAPES[s][0]) < 2)]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shapes,view", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_are_torchs_bits(op, shapes, view, dtype):
    shp = SHAPES[shapes]
    (a, b, c), (ta, tb, tc) = _both(_arrs(shp, dtype))
    a, ta = VIEWS[view](a), VIEWS[view](ta)
    try:
        want = OPS[op](torch, ta, tb, tc)
    except RuntimeError as e:  # a view that no longer broadcasts
        with pytest.raises(RuntimeError, match=re.escape(str(e))):
            OPS[op](rgrad, a, b, c)
        return
    got = _on_threads(lambda: OPS[op](rgrad, a, b, c))
    _same(got, want)
    if want.numel() > 1:
        assert [s for s, n in zip(got.stride(), got.shape) if n > 1] == [
            s for s, n in zip(want.stride(), want.shape) if n > 1
        ]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_specials_are_torchs_bits(dtype):
    vals = np.array([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 1e-40, 3e38], dtype=dtype)
    g = np.array(np.meshgrid(vals, vals, vals, indexing="ij")).reshape(3, -1)
    (a, b, c), (ta, tb, tc) = _both([g[0].copy(), g[1].copy(), g[2].copy()])
    for op in ("addcmul", "addcdiv", "lerp-low", "lerp-high", "lerp-tensor"):
        _same(OPS[op](rgrad, a, b, c), OPS[op](torch, ta, tb, tc))
    for w in (0.5, -0.5, 0.49999997, float("nan"), float("inf")):
        _same(rgrad.lerp(a, b, w), torch.lerp(ta, tb, w))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 0.7), (0, 0.7), (2, 1), (1, -3)])
def test_addr_matches_torch(dtype, beta, alpha):
    # rows a multiple of 32 long: ATen's vector loop only, whose bits rgrad's are
    (x, v1, v2), (tx, tv1, tv2) = _both(_arrs([(300, 256), (300,), (256,)], dtype, seed=3))
    got = _on_threads(lambda: rgrad.addr(x, v1, v2, beta=beta, alpha=alpha))
    _same(got, torch.addr(tx, tv1, tv2, beta=beta, alpha=alpha))
    # other lengths, broadcast and transposed inputs: within an ulp of torch's
    (x, v1, v2), (tx, tv1, tv2) = _both(_arrs([(301,), (77,), (301,)], dtype, seed=4))
    for f in (lambda L, x, a, b: L.addr(x, a, b, beta=beta, alpha=alpha),
              lambda L, x, a, b: L.addr(x.expand(77, 301).t().contiguous().t(), a, b, beta=beta, alpha=alpha)):
        got, want = f(rgrad, x, v1, v2), f(torch, tx, tv1, tv2)
        assert got.dtype == rgrad.float32 if dtype == "float32" else rgrad.float64
        # (the terms may cancel: an ulp of each term, not of the result)
        xe = _np(torch.broadcast_to(tx, (77, 301))).astype(np.float64)
        terms = np.abs(beta * xe) + np.abs(alpha * np.outer(_np(tv1), _np(tv2)))
        assert (np.abs(_np(got).astype(np.float64) - _np(want)) <= 2 * np.finfo(dtype).eps * terms).all()
    # the fused multiply-add itself: fma(alpha * v1, v2, beta * x), computed exactly
    (x, v1, v2), _ = _both(_arrs([(5, 9), (5,), (9,)], dtype, seed=5))
    got = _np(rgrad.addr(x, v1, v2, beta=beta, alpha=alpha))
    from fractions import Fraction as Fr

    cast = np.float32 if dtype == "float32" else np.float64
    X, A, B = _np(x), _np(v1), _np(v2)
    for i in range(5):
        for j in range(9):
            p = cast(cast(alpha) * A[i])
            if cast(beta) == 0:
                want = cast(p * B[j])
            else:
                want = cast(float(Fr(float(p)) * Fr(float(B[j])) + Fr(float(cast(cast(beta) * X[i, j])))))
            assert got[i, j] == want or (np.isnan(got[i, j]) and np.isnan(want)), (i, j)


def test_addr_beta_zero_ignores_nan_and_inf():
    x = rgrad.full((2, 3), float("nan"))
    x[0, 0] = float("inf")
    r = rgrad.addr(x, rgrad.ones(2), rgrad.ones(3), beta=0, alpha=2)
    assert r.tolist() == [[2.0] * 3] * 2


def test_integer_and_bool_kernels_match_torch():
    rng = np.random.default_rng(1)
    ints = [rng.integers(-50, 50, s) for s in [(4, 5), (4, 5), (5,)]]
    (a, b, c), (ta, tb, tc) = _both(ints)
    for value in (1, -3, 1.9, -1.9, True):
        _same(rgrad.addcmul(a, b, c, value=value), torch.addcmul(ta, tb, tc, value=value))
    big = np.array([2**62, -(2**62), 3], dtype=np.int64)
    (a,), (ta,) = _both([big])
    _same(rgrad.addcmul(a, a, a, value=5), torch.addcmul(ta, ta, ta, value=5))  # wraps
    (x, v1, v2), (tx, tv1, tv2) = _both([ints[0], ints[0][:, 0].copy(), ints[2]])
    for beta, alpha in ((1, 1), (0, 2), (-2, 3)):
        _same(rgrad.addr(x, v1, v2, beta=beta, alpha=alpha), torch.addr(tx, tv1, tv2, beta=beta, alpha=alpha))
    bools = [rng.random(s) > 0.5 for s in [(4, 5), (4,), (5,)]]
    (x, v1, v2), (tx, tv1, tv2) = _both(bools)
    for beta, alpha in ((True, True), (False, True), (True, False), (2, 0)):
        _same(rgrad.addr(x, v1, v2, beta=beta, alpha=alpha), torch.addr(tx, tv1, tv2, beta=beta, alpha=alpha))
    # mixed dtypes promote as torch
    f, d, i = (rgrad.ones(3), rgrad.ones(3, dtype=rgrad.float64), rgrad.ones(3, dtype=rgrad.int64))
    assert rgrad.addcmul(i, f, f).dtype == rgrad.float32
    assert rgrad.addcmul(f, d, f).dtype == rgrad.float64
    assert rgrad.addcdiv(i, f, f).dtype == rgrad.float32
    assert rgrad.addr(rgrad.ones(3, 3), i, i).dtype == rgrad.float32
    assert rgrad.lerp(f, f, rgrad.tensor(0.5, dtype=rgrad.float64)).dtype == rgrad.float32
    assert rgrad.lerp(f, f * 2, rgrad.tensor(1)).tolist() == [2.0] * 3


ERRORS = {
    "addcmul-bool": lambda L: L.addcmul(L.ones(3, dtype=L.bool), L.ones(3, dtype=L.bool), L.ones(3, dtype=L.bool)),
    "addcmul-shapes": lambda L: L.addcmul(L.ones(3), L.ones(3), L.ones(2)),
    "addcmul-value-overflow": lambda L: L.addcmul(L.ones(3, dtype=L.int64), L.ones(3, dtype=L.int64),
                                                  L.ones(3, dtype=L.int64), value=1e30),
    "addcmul-value-type": lambda L: L.addcmul(L.ones(3), L.ones(3), L.ones(3), value="a"),
    "addcmul-tensor2-type": lambda L: L.ones(3).addcmul(L.ones(3), 2),
    "addcmul_-shape": lambda L: L.ones(3).addcmul_(L.ones(2, 3), L.ones(3)),
    "addcmul_-cast": lambda L: L.ones(3, dtype=L.int64).addcmul_(L.ones(3), L.ones(3)),
    "addcdiv-ints": lambda L: L.addcdiv(L.ones(3), L.ones(3, dtype=L.int64), L.ones(3, dtype=L.int64)),
    "addcdiv-bools": lambda L: L.addcdiv(L.ones(3), L.ones(3, dtype=L.bool), L.ones(3, dtype=L.bool)),
    "lerp-end-dtype": lambda L: L.lerp(L.ones(3), L.ones(3, dtype=L.float64), 0.5),
    "lerp-weight-dtype": lambda L: L.lerp(L.ones(3), L.ones(3), L.ones(3, dtype=L.float64)),
    "lerp-long": lambda L: L.lerp(L.ones(3, dtype=L.int64), L.ones(3, dtype=L.int64), 0.5),
    "lerp-long-tensor": lambda L: L.lerp(L.ones(3, dtype=L.int64), L.ones(3, dtype=L.int64),
                                         L.ones(3, dtype=L.int64)),
    "lerp-shapes": lambda L: L.lerp(L.ones(3), L.ones(3), L.ones(2)),
    "lerp_-shape": lambda L: L.ones(3).lerp_(L.ones(2, 3), 0.5),
    "lerp-weight-type": lambda L: L.ones(3).lerp(L.ones(3), "a"),
    "addr-vec1-2d": lambda L: L.addr(L.ones(3, 4), L.ones(3, 1), L.ones(4)),
    "addr-vec2-0d": lambda L: L.addr(L.ones(3, 4), L.ones(3), L.ones(())),
    "addr-expand": lambda L: L.addr(L.ones(2, 4), L.ones(3), L.ones(4)),
    "addr-3d": lambda L: L.addr(L.ones(2, 3, 4), L.ones(3), L.ones(4)),
    "addr-int-beta": lambda L: L.addr(L.ones(3, 3, dtype=L.int64), L.ones(3, dtype=L.int64),
                                      L.ones(3, dtype=L.int64), beta=0.5),
    "addr-bool-alpha": lambda L: L.addr(L.ones(3, 3), L.ones(3), L.ones(3), alpha=True),
    "addr-beta-type": lambda L: L.addr(L.ones(3, 3), L.ones(3), L.ones(3), beta="a"),
    "addr_-1d": lambda L: L.ones(3).addr_(L.ones(3), L.ones(3)),
    "addr_-size": lambda L: L.ones(3, 3).addr_(L.ones(3), L.ones(4)),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_are_torchs(name):
    with pytest.raises(Exception) as want:
        ERRORS[name](torch)
    with pytest.raises(Exception) as got:
        ERRORS[name](rgrad)
    assert type(got.value) is type(want.value)
    assert str(got.value).replace("rgrad", "torch") == str(want.value)


def _leaves(L, arrs):
    return [L.tensor(a, requires_grad=True) for a in arrs]


GRAD_CASES = {
    "addcmul": (lambda L, a, b, c: L.addcmul(a, b, c, value=0.5), [(3, 4), (3, 4), (4,)]),
    "addcdiv": (lambda L, a, b, c: L.addcdiv(a, b, c.abs() + 1, value=-2), [(3, 1), (3, 4), (4,)]),
    "lerp": (lambda L, a, b, c: L.lerp(a, b, 0.3), [(3, 4), (4,), (1,)]),
    "lerp-tensor": (lambda L, a, b, c: L.lerp(a, b, c), [(3, 4), (3, 4), (3, 1)]),
    "addr": (lambda L, a, b, c: L.addr(a, b, c, beta=0.5, alpha=2), [(4,), (3,), (4,)]),
    "addr-1": (lambda L, a, b, c: L.addr(a, b, c), [(3, 4), (3,), (4,)]),
    "addcmul_": (lambda L, a, b, c: (a * 1).addcmul_(b, c, value=3), [(3, 4), (3, 4), (4,)]),
    "addcdiv_": (lambda L, a, b, c: (a * 1).addcdiv_(b, c.abs() + 1), [(3, 4), (4,), (3, 4)]),
    "lerp_": (lambda L, a, b, c: (a * 1).lerp_(b, c), [(3, 4), (3, 4), (4,)]),
    "addr_": (lambda L, a, b, c: (a * 1).addr_(b, c, alpha=-1), [(3, 4), (3,), (4,)]),
}


@pytest.mark.parametrize("case", GRAD_CASES)
def test_nodes_and_gradients_are_torchs(case):
    f, shapes = GRAD_CASES[case]
    arrs = _arrs(shapes, "float64", seed=8)
    r, t = _leaves(rgrad, arrs), _leaves(torch, arrs)
    yr, yt = f(rgrad, *r), f(torch, *t)
    assert yr.grad_fn.name() == yt.grad_fn.name()
    names = lambda fn: [None if n is None else n.name() for n, _ in fn.next_functions]  # noqa: E731
    assert names(yr.grad_fn) == names(yt.grad_fn)
    saved = lambda fn: sorted(n for n in dir(fn) if n.startswith("_saved_"))  # noqa: E731
    assert saved(yr.grad_fn) == saved(yt.grad_fn)
    for n in saved(yt.grad_fn):
        a, b = getattr(yr.grad_fn, n), getattr(yt.grad_fn, n)
        if isinstance(b, torch.Tensor):
            np.testing.assert_array_equal(_np(a), _np(b))
        else:
            assert a == b and type(a) is type(b), (n, a, b)
    np.testing.assert_allclose(_np(yr), _np(yt), rtol=1e-15, atol=1e-15)  # (addr's rows: see above)
    v = np.random.default_rng(9).standard_normal(tuple(yt.shape))
    gr = rgrad.autograd.grad(yr, r, rgrad.tensor(v), create_graph=True, allow_unused=True)
    gt = torch.autograd.grad(yt, t, torch.tensor(v), create_graph=True, allow_unused=True)
    for x, y in zip(gr, gt):
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_allclose(_np(x), _np(y), rtol=1e-14, atol=1e-15)
    # double backward through the recorded formulas
    sr = sum((x * x).sum() for x in gr if x is not None)
    st = sum((x * x).sum() for x in gt if x is not None)
    assert sr.requires_grad == st.requires_grad
    if not st.requires_grad:  # (lerp with a number: constant gradients)
        return
    hr = rgrad.autograd.grad(sr, r, allow_unused=True)
    ht = torch.autograd.grad(st, t, allow_unused=True)
    for x, y in zip(hr, ht):
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_allclose(_np(x), _np(y), rtol=1e-12, atol=1e-14)


def test_saved_tensors_only_where_a_derivative_reads_them():
    a, b, c = _leaves(rgrad, _arrs([(3,), (3,), (3,)], "float64"))
    ta, tb, tc = _leaves(torch, _arrs([(3,), (3,), (3,)], "float64"))
    for L, (x, y, z) in ((rgrad, (a, b, c)), (torch, (ta, tb, tc))):
        fn = L.addcmul(x, y, z.detach()).grad_fn
        assert fn._saved_tensor1 is None and fn._saved_tensor2 is not None
        fn = L.lerp(x, y.detach(), z.detach()).grad_fn
        assert fn._saved_self is None and fn._saved_weight is not None  # (always kept)
        fn = L.addcdiv(x, y.detach(), z.detach()).grad_fn
        assert fn._saved_tensor1 is None and fn._saved_tensor2 is not None  # (always kept)
        fn = L.addr(L.ones(3, 3), x, y.detach()).grad_fn
        assert fn._saved_vec1 is None and fn._saved_vec2 is not None


def test_in_place_keeps_the_tensor_and_writes_through_views():
    for L in (rgrad, torch):
        base = L.zeros(4, 3)
        view = base[1:3]
        out = view.addcmul_(L.ones(3), L.full((3,), 2.0), value=0.5)
        assert out is view
        assert base.sum().item() == 6.0
        m = L.zeros(2, 2)
        assert m.lerp_(L.ones(2, 2), 0.25) is m and m.sum().item() == 1.0


def test_optimizer_step_is_torchs_bits():
    # an Adam step with the in-place forms (no_grad), as hand-written optimizers do
    arrs = _arrs([(257, 33), (257, 33)], "float32", seed=7)
    res = []
    for L in (rgrad, torch):
        p, g = (L.from_numpy(a.copy()) for a in arrs)
        m, v = L.zeros_like(p), L.zeros_like(p)
        with L.no_grad():
            for step in range(1, 4):
                m.lerp_(g, 0.1)
                v.mul_(0.999).addcmul_(g, g, value=0.001)
                # (no sqrt: torch's float32 sqrt is SLEEF's, within 0.5001 ulp; rgrad's
                # rounds correctly)
                denom = (v / (1 - 0.999**step)).add_(1e-3)
                p.addcdiv_(m, denom, value=-0.01 / (1 - 0.9**step))
        res.append(p)
    _same(*res)


@pytest.mark.filterwarnings("ignore:There is a performance drop:UserWarning")  # (torch's addcmul_)
def test_vmap_matches_torch():
    arrs = _arrs([(5, 3, 4), (5, 4), (3, 4), (5, 3), (5, 4)], "float64", seed=11)
    r, t = _both(arrs)
    # (op, in_dims, which arrays)
    cases = [
        (lambda L, a, b, c: L.addcmul(a, b, c, value=0.5), (0, 0, None), (0, 1, 2)),
        (lambda L, a, b, c: L.addcdiv(a, b, c.abs() + 1), (0, None, 0), (0, 2, 1)),
        (lambda L, a, b, c: L.lerp(a, b, 0.7), (0, 0, None), (0, 1, 2)),
        (lambda L, a, b, c: L.lerp(a, b, c.abs() / (c.abs() + 1)), (0, None, 0), (0, 2, 1)),
        (lambda L, a, b, c: (a * 1).addcmul_(b, c), (0, None, None), (0, 2, 2)),
        (lambda L, a, b, c: (a * 1).lerp_(b, c), (0, 0, 0), (0, 1, 1)),
    ]
    for f, dims, idx in cases:
        got = rgrad.vmap(lambda a, b, c: f(rgrad, a, b, c), in_dims=dims)(*(r[i] for i in idx))
        want = torch.vmap(lambda a, b, c: f(torch, a, b, c), in_dims=dims)(*(t[i] for i in idx))
        _same(got, want)
    # addr: batched vectors, a batched self, both
    for dims, pick in (((None, 0, 0), lambda x: (x[2], x[3], x[4])),
                       ((0, None, None), lambda x: (x[0], x[3][0], x[4][0])),
                       ((0, 0, None), lambda x: (x[0], x[3], x[4][0]))):
        got = rgrad.vmap(lambda a, b, c: rgrad.addr(a, b, c, beta=0.5, alpha=2), in_dims=dims)(*pick(r))
        want = torch.vmap(lambda a, b, c: torch.addr(a, b, c, beta=0.5, alpha=2), in_dims=dims)(*pick(t))
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-14)


@pytest.mark.filterwarnings("ignore::FutureWarning")  # (torch's jvp decompositions load)
def test_forward_ad_matches_torch():
    import rgrad.autograd.forward_ad as fr
    import torch.autograd.forward_ad as ft

    arrs = _arrs([(3, 4), (3, 4), (4,), (3, 4), (3, 4), (4,)], "float64", seed=12)
    fs = [
        lambda L, a, b, c: L.addcmul(a, b, c, value=0.5),
        lambda L, a, b, c: L.addcdiv(a, b, c.abs() + 1, value=2),
        lambda L, a, b, c: L.lerp(a, b, 0.3),
        lambda L, a, b, c: L.lerp(a, b, c),
        lambda L, a, b, c: L.addr(a, b[:, 0], c, beta=2),
    ]
    for f in fs:
        outs = []
        for L, fa in ((rgrad, fr), (torch, ft)):
            with fa.dual_level():
                xs = [fa.make_dual(L.tensor(arrs[i]), L.tensor(arrs[i + 3])) for i in range(3)]
                outs.append(_np(fa.unpack_dual(f(L, *xs)).tangent))
        np.testing.assert_allclose(outs[0], outs[1], rtol=1e-13, atol=1e-15)


def test_no_grad_and_integer_outputs_record_nothing():
    x = rgrad.ones(3, requires_grad=True)
    with rgrad.no_grad():
        assert rgrad.addcmul(x, x, x).grad_fn is None
    i = rgrad.ones(3, dtype=rgrad.int64)
    assert rgrad.addcmul(i, i, i).requires_grad is False


IN_PLACE = {
    "addcmul_": lambda x, b, c: x.addcmul_(b, c, value=0.3),
    "addcdiv_": lambda x, b, c: x.addcdiv_(b, c, value=-2),
    "lerp_-low": lambda x, b, c: x.lerp_(b, 0.3),
    "lerp_-high": lambda x, b, c: x.lerp_(b, -0.8),
    "lerp_-tensor": lambda x, b, c: x.lerp_(b, c),
}


@pytest.mark.parametrize("op", IN_PLACE)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_in_place_one_pass_gives_the_general_paths_bits(op, dtype):
    # no graph: one pass over x (src/backend/cpu/fused.rs, fused3_in_place); with an
    # operand that requires grad: out of place, then committed
    x0, full, row = _arrs([(300, 257), (300, 257), (257,)], dtype, seed=13)
    unit = lambda a: np.abs(a) / (np.abs(a) + 1) + 0.25  # noqa: E731  (addcdiv's divisor, lerp's weight)
    operands = {
        "full": (full, unit(full)),
        "row": (full, unit(row)),
        "scalar": (row, np.array(unit(row)[0])),
    }
    for name, (b, c) in operands.items():
        fast = rgrad.from_numpy(x0.copy())
        version = fast._version
        with rgrad.no_grad():
            out = IN_PLACE[op](fast, rgrad.from_numpy(b.copy()), rgrad.from_numpy(c.copy()))
        assert out is fast and fast._version == version + 1
        general = rgrad.from_numpy(x0.copy())
        rb = rgrad.from_numpy(b.copy()).requires_grad_()
        IN_PLACE[op](general, rb, rgrad.from_numpy(c.copy()))
        assert general.grad_fn is not None, name
        _same(fast, general.detach())
        want = torch.from_numpy(x0.copy())
        IN_PLACE[op](want, torch.from_numpy(b.copy()), torch.from_numpy(c.copy()))
        _same(fast, want)


def test_in_place_with_an_operand_in_its_own_storage_and_views():
    # the general path: x read as an operand, and a strided x
    for L in (rgrad, torch):
        v = L.arange(6.0)
        with L.no_grad():
            v.addcmul_(v, v, value=0.5)
        assert v.tolist() == [0.0, 1.5, 4.0, 7.5, 12.0, 17.5]
    x, tx = rgrad.zeros(4, 6), torch.zeros(4, 6)
    for t, L in ((x, rgrad), (tx, torch)):
        t[:, ::2].lerp_(L.ones(4, 3), 0.25)
    _same(x, tx)


def test_in_place_one_pass_under_threads_neither_deadlocks_nor_loses_updates():
    # two threads each write one tensor reading the other (locks in address order)
    import threading

    a, b, c = rgrad.ones(70_000), rgrad.ones(70_000), rgrad.full((70_000,), 0.5)
    errors = []

    def work(x, y):
        try:
            with rgrad.no_grad():
                for _ in range(200):
                    x.addcmul_(y, c, value=0.0)
                    x.lerp_(y, 0.0)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=work, args=(a, b)), threading.Thread(target=work, args=(b, a))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in ts) and not errors
    assert a.tolist() == b.tolist() == [1.0] * 70_000
    # many threads adding into one accumulator each through its own tensor: nothing lost
    acc = [rgrad.zeros(1000) for _ in range(8)]
    g = rgrad.ones(1000)

    def add(t):
        with rgrad.no_grad():
            for _ in range(500):
                t.addcmul_(g, g)

    ts = [threading.Thread(target=add, args=(t,)) for t in acc]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=60)
    assert all(t.tolist() == [500.0] * 1000 for t in acc)
