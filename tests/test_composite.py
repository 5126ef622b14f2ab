"""torch's composite functions (python/rgrad/_composite.py) and the rounding and logarithm
rows of the op table, against torch: values, recorded nodes, errors (type and message),
warnings, vmap. Values, gradients and double backward against finite differences are
op_db's (tests/op_db.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")


def _pair(*shapes, seed=0, grad=True):
    rng = np.random.RandomState(seed)
    arrs = [rng.standard_normal(s) for s in shapes]
    return ([rgrad.tensor(a, requires_grad=grad) for a in arrs], [torch.tensor(a, requires_grad=grad) for a in arrs])


def _outcome(fn, lib, *args, **kwargs):
    try:
        out = fn(lib)(*args, **kwargs)
    except Exception as e:  # noqa: BLE001  (the outcome is compared)
        return ("raises", type(e).__name__, str(e).replace("torch.", "rgrad.").replace("rgrad.", ""))
    return ("ok", out)


def _same_error(call_r, call_t):
    r = _outcome(lambda lib: call_r, rgrad)
    t = _outcome(lambda lib: call_t, torch)
    assert r[0] == "raises" and t[0] == "raises", (r, t)
    assert r[1:] == t[1:]


def _names(out):
    if isinstance(out, (tuple, list)):
        return [o.grad_fn.name() if o.grad_fn else None for o in out]
    return out.grad_fn.name() if out.grad_fn else None


def _values(out):
    if isinstance(out, (tuple, list)):
        return [o.detach().numpy() for o in out]
    return out.detach().numpy()


CASES = [
    ("broadcast_to", lambda L, a: L.broadcast_to(a, (2, 3)), [(3,)]),
    ("movedim", lambda L, a: L.movedim(a, 0, 2), [(2, 3, 4)]),
    ("movedim-seq", lambda L, a: L.movedim(a, (0, 1), (2, 0)), [(2, 3, 4)]),
    ("moveaxis", lambda L, a: a.moveaxis(-1, 0), [(2, 3, 4)]),
    ("swapaxes", lambda L, a: L.swapaxes(a, 0, 2), [(2, 3, 4)]),
    ("swapdims", lambda L, a: a.swapdims(0, 1), [(2, 3)]),
    ("ravel", lambda L, a: L.ravel(a), [(2, 3)]),
    ("ravel-t", lambda L, a: a.t().ravel(), [(2, 3)]),
    ("unflatten", lambda L, a: L.unflatten(a, 1, (2, -1)), [(2, 6)]),
    ("tile", lambda L, a: L.tile(a, (2,)), [(2, 3)]),
    ("atleast_2d", lambda L, a: L.atleast_2d(a), [(3,)]),
    ("atleast_3d-2", lambda L, a, b: L.atleast_3d(a, b), [(3,), (2, 2)]),
    ("hstack", lambda L, a, b: L.hstack([a, b]), [(3,), (2,)]),
    ("vstack", lambda L, a, b: L.vstack((a, b)), [(3,), (3,)]),
    ("dstack", lambda L, a, b: L.dstack([a, b]), [(2, 3), (2, 3)]),
    ("column_stack", lambda L, a, b: L.column_stack([a, b]), [(3,), (3, 2)]),
    ("tensor_split", lambda L, a: L.tensor_split(a, 3, dim=1), [(2, 7)]),
    ("tensor_split-idx", lambda L, a: a.tensor_split([1, 5, 2]), [(6,)]),
    ("tensor_split-tensor", lambda L, a: L.tensor_split(a, L.tensor([1, 3])), [(5,)]),
    ("hsplit", lambda L, a: L.hsplit(a, 2), [(3, 4)]),
    ("vsplit", lambda L, a: a.vsplit([1]), [(3, 4)]),
    ("dsplit", lambda L, a: L.dsplit(a, 2), [(2, 2, 4)]),
    ("tensordot", lambda L, a, b: L.tensordot(a, b, dims=([1, 0], [0, 1])), [(3, 4, 2), (4, 3)]),
    ("tensordot-int", lambda L, a, b: L.tensordot(a, b, 1), [(3, 4), (4, 2)]),
    ("inner", lambda L, a, b: L.inner(a, b), [(2, 3), (4, 3)]),
    ("kron", lambda L, a, b: L.kron(a, b), [(2, 3), (2, 2)]),
    ("diff", lambda L, a: L.diff(a, n=2, dim=0), [(5, 2)]),
    ("diff-append", lambda L, a, b: a.diff(append=b), [(2, 3), (2, 1)]),
    ("meshgrid", lambda L, a, b: L.meshgrid(a, b, indexing="xy"), [(3,), (2,)]),
    ("cartesian_prod", lambda L, a, b: L.cartesian_prod(a, b), [(3,), (2,)]),
    ("einsum-mm", lambda L, a, b: L.einsum("ij,jk->ik", a, b), [(2, 3), (3, 4)]),
    ("einsum-outer", lambda L, a, b: L.einsum("i,j", a, b), [(2,), (3,)]),
    ("einsum-trace", lambda L, a: L.einsum("ii", a), [(3, 3)]),
    ("einsum-batch", lambda L, a, b: L.einsum("b i j, b j k -> b i k", a, b), [(2, 2, 3), (2, 3, 2)]),
    ("einsum-ellipsis", lambda L, a, b: L.einsum("...ij,...jk", a, b), [(2, 1, 2, 3), (3, 3, 2)]),
    ("einsum-sublist", lambda L, a, b: L.einsum(a, [0, 1], b, [1, Ellipsis]), [(2, 3), (3, 2)]),
    ("einsum-list", lambda L, a, b: L.einsum("ij,j->i", [a, b]), [(2, 3), (3,)]),
]


@pytest.mark.parametrize("name,fn,shapes", CASES, ids=[c[0] for c in CASES])
def test_values_nodes_and_gradients_match_torch(name, fn, shapes):
    rs, ts = _pair(*shapes)
    r = fn(rgrad, *rs)
    t = fn(torch, *ts)
    for a, b in zip(_values(r) if isinstance(r, tuple) else [_values(r)],
                    _values(t) if isinstance(t, tuple) else [_values(t)]):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    if name != "kron":  # torch's last step is an _unsafe_view (UnsafeViewBackward0), rgrad's a view
        assert _names(r) == _names(t)
    rr = r if isinstance(r, tuple) else (r,)
    tt = t if isinstance(t, tuple) else (t,)
    rng = np.random.RandomState(1)
    vs = [rng.standard_normal(tuple(o.shape)) for o in tt]
    gr = rgrad.autograd.grad(rr, rs, [rgrad.tensor(v) for v in vs], allow_unused=True)
    gt = torch.autograd.grad(tt, ts, [torch.tensor(v) for v in vs], allow_unused=True)
    for a, b in zip(gr, gt):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


def test_views_share_storage_as_torch():
    x = rgrad.arange(12.0).reshape(3, 4).clone()
    for v in (x.movedim(0, 1), x.swapaxes(0, 1), x.ravel(), x.unflatten(1, (2, 2)), x.broadcast_to((2, 3, 4)),
              x.tensor_split(2, dim=1)[1], x.hsplit(2)[0], rgrad.atleast_3d(x)):
        assert v._is_view() and v._base.data_ptr() == x.data_ptr() and v._base.shape == x.shape
    assert x.t().ravel().data_ptr() != x.data_ptr()  # a copy, as torch's


ERRORS = [
    ("movedim-count", lambda L: L.movedim(L.zeros(2, 3), (0, 1), (0,))),
    ("movedim-repeat", lambda L: L.movedim(L.zeros(2, 3), (0, 0), (0, 1))),
    ("movedim-range", lambda L: L.movedim(L.zeros(2, 3), 2, 0)),
    ("unflatten-sizes", lambda L: L.zeros(2, 6).unflatten(1, (4, 2))),
    ("tensor_split-0", lambda L: L.tensor_split(L.zeros(4), 0)),
    ("tensor_split-0d", lambda L: L.tensor_split(L.zeros(()), 2)),
    ("tensor_split-float", lambda L: L.tensor_split(L.zeros(4), L.tensor([1.0]))),
    ("hsplit-divisible", lambda L: L.hsplit(L.zeros(2, 5), 2)),
    ("vsplit-1d", lambda L: L.vsplit(L.zeros(4), 2)),
    ("dsplit-2d", lambda L: L.dsplit(L.zeros(4, 4), 2)),
    ("tensordot-mismatch", lambda L: L.tensordot(L.zeros(2, 3), L.zeros(4, 2), dims=1)),
    ("tensordot-lists", lambda L: L.tensordot(L.zeros(2, 3), L.zeros(3, 2), dims=([0, 1], [0]))),
    ("inner-mismatch", lambda L: L.inner(L.zeros(2, 3), L.zeros(2))),
    ("diff-0d", lambda L: L.diff(L.tensor(1.0))),
    ("diff-negative", lambda L: L.diff(L.zeros(3), n=-1)),
    ("hstack-empty", lambda L: L.hstack([])),
    ("meshgrid-indexing", lambda L: L.meshgrid(L.zeros(2), indexing="ab")),
    ("cartesian-2d", lambda L: L.cartesian_prod(L.zeros(2, 2), L.zeros(2))),
    ("einsum-fewer", lambda L: L.einsum("ij,jk->ik", L.zeros(2, 3))),
    ("einsum-more", lambda L: L.einsum("ij->ij", L.zeros(2, 3), L.zeros(2))),
    ("einsum-dims", lambda L: L.einsum("ijk->ij", L.zeros(2, 3))),
    ("einsum-dims-ellipsis", lambda L: L.einsum("ijk...->ij", L.zeros(2, 3))),
    ("einsum-subscript", lambda L: L.einsum("i1->i", L.zeros(2, 3))),
    ("einsum-output-subscript", lambda L: L.einsum("ij->i1", L.zeros(2, 3))),
    ("einsum-output-twice", lambda L: L.einsum("ij->ii", L.zeros(2, 3))),
    ("einsum-output-unknown", lambda L: L.einsum("ij->k", L.zeros(2, 3))),
    ("einsum-dot", lambda L: L.einsum("i.j->", L.zeros(2, 3))),
    ("einsum-two-ellipses", lambda L: L.einsum("......->", L.zeros(2, 3))),
    ("einsum-output-dot", lambda L: L.einsum("ij->.", L.zeros(2, 3))),
    ("einsum-broadcast", lambda L: L.einsum("ij,jk->ik", L.zeros(3, 4), L.zeros(5, 6))),
    ("einsum-ellipsis-broadcast", lambda L: L.einsum("...i,...i->...", L.zeros(2, 3), L.zeros(4, 3))),
    ("einsum-none", lambda L: L.einsum("ij")),
]


@pytest.mark.parametrize("name,call", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(name, call):
    r = _outcome(lambda lib: lambda: call(lib), rgrad)
    t = _outcome(lambda lib: lambda: call(lib), torch)
    assert t[0] == "raises", t
    assert r[:2] == t[:2] and r[2] == t[2], (r, t)


def test_meshgrid_warns_without_indexing_as_torch():
    with warnings.catch_warnings(record=True) as wr:
        warnings.simplefilter("always")
        a, b = rgrad.meshgrid(rgrad.arange(3.0), rgrad.arange(2.0))
    with warnings.catch_warnings(record=True) as wt:
        warnings.simplefilter("always")
        c, d = torch.meshgrid(torch.arange(3.0), torch.arange(2.0))
    assert [str(w.message) for w in wr] == [str(w.message).split(" (Triggered")[0] for w in wt
                                            if "indexing" in str(w.message)]
    assert tuple(a.shape) == tuple(c.shape) == (3, 2)


def test_vmap_of_composites_matches_the_loop():
    rng = np.random.RandomState(2)
    x = rgrad.tensor(rng.standard_normal((4, 2, 3)))
    y = rgrad.tensor(rng.standard_normal((4, 3, 5)))

    def f(a, b):
        return (rgrad.einsum("ij,jk->ik", a, b).movedim(0, 1).ravel().tile((2,))
                + rgrad.kron(a, b[:, :1].t()).sum() + rgrad.tensordot(a, b, 1).sum()
                + rgrad.diff(a, dim=1).sum() + rgrad.hstack([a, a]).sum())

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no loop fallback: every step has a rule
        got = rgrad.vmap(f)(x, y)
    want = rgrad.stack([f(x[i], y[i]) for i in range(4)])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_per_sample_gradients_through_einsum():
    rng = np.random.RandomState(3)
    w = rgrad.tensor(rng.standard_normal((3, 4)))
    xs = rgrad.tensor(rng.standard_normal((5, 3)))
    g = rgrad.func.vmap(rgrad.func.grad(lambda w, x: rgrad.einsum("i,ij->j", x, w).tanh().sum()), in_dims=(None, 0))
    got = g(w, xs)
    want = [rgrad.autograd.grad(rgrad.einsum("i,ij->j", xs[i], w.requires_grad_()).tanh().sum(), w)[0]
            for i in range(5)]
    w.requires_grad_(False)
    np.testing.assert_allclose(got.numpy(), rgrad.stack(want).numpy(), rtol=1e-12, atol=1e-12)


# ---- rounding and logarithm rows -----------------------------------------------------


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "sgn", "log2", "log10", "exp2", "deg2rad", "rad2deg"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_rows_match_torch(name, dtype):
    vals = [0.5, -0.5, 1.5, 2.5, -2.5, 3.0, -0.0, 0.49999997, 1e7 + 0.5, 2.0**52 + 1, float("inf"),
            -float("inf"), float("nan"), 7.25, 1e-3]
    if dtype == "int64":
        vals = [0, 1, -3, 7, 2**40]
    if dtype == "bool":
        vals = [True, False]
    r = rgrad.tensor(vals, dtype=getattr(rgrad, dtype))
    t = torch.tensor(vals, dtype=getattr(torch, dtype))
    out_r = _outcome(lambda lib: getattr(lib, name), rgrad, r)
    out_t = _outcome(lambda lib: getattr(lib, name), torch, t)
    assert out_r[0] == out_t[0], (out_r, out_t)
    if out_t[0] == "raises":
        assert out_r[1:] == out_t[1:]
        return
    a, b = out_r[1], out_t[1]
    assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1]
    if name in ("floor", "ceil", "round", "sgn", "deg2rad", "rad2deg"):
        # exact: rounding, or one product
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert np.array_equal(np.signbit(a.numpy()), np.signbit(b.numpy()))
    else:
        # libm's functions, torch's SLEEF: within an ulp or two
        tol = 1e-15 if str(b.dtype) == "torch.float64" else 3e-7
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=0)
    # in place, on a copy
    if dtype.startswith("float"):
        rc, tc = r.clone(), t.clone()
        getattr(rc, name + "_")()
        getattr(tc, name + "_")()
        np.testing.assert_allclose(rc.numpy(), tc.numpy(), rtol=2e-7, equal_nan=True)


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "sgn", "log2", "log10", "exp2", "deg2rad", "rad2deg"])
def test_rows_record_torchs_node_and_gradient(name):
    (r,), (t,) = _pair((4, 3))
    if name in ("log2", "log10"):
        r, t = r.detach().abs().requires_grad_(), t.detach().abs().requires_grad_()
    yr, yt = getattr(rgrad, name)(r), getattr(torch, name)(t)
    assert yr.grad_fn.name() == yt.grad_fn.name()
    (gr,) = rgrad.autograd.grad(yr.sum() * 1.0, r)
    (gt,) = torch.autograd.grad(yt.sum() * 1.0, t)
    gt = torch.zeros_like(t) if gt._is_zerotensor() else gt  # (sgn's is a ZeroTensor)
    np.testing.assert_allclose(gr.numpy(), gt.detach().numpy(), rtol=1e-14)


def test_wide_rounding_kernels_match_the_scalar_form():
    # large inputs take the AVX2 / AVX-512 loops (vroundps), small ones the exact scalar form
    rng = np.random.RandomState(4)
    base = np.concatenate([rng.standard_normal(70000) * 10, np.arange(-8, 8) + 0.5,
                           [2.0**23 + 0.5, -(2.0**23) - 1.5, 2.0**24 + 2, float("nan"), float("inf"), -0.0]])
    for dtype in ("float32", "float64"):
        big = rgrad.tensor(base, dtype=getattr(rgrad, dtype))
        for name, ref in (("floor", np.floor), ("ceil", np.ceil), ("round", np.round), ("trunc", np.trunc)):
            got = getattr(big, name)().numpy()
            want = ref(base.astype(dtype))
            np.testing.assert_array_equal(got, want)
            assert np.array_equal(np.signbit(got), np.signbit(want))
            small = getattr(rgrad.tensor(base[-30:], dtype=getattr(rgrad, dtype)), name)().numpy()
            np.testing.assert_array_equal(small, want[-30:])


@pytest.mark.parametrize("decimals", [1, 2, 3, -1, -2, 8, -40, 400])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_round_decimals_bits_match_torch(decimals, dtype):
    rng = np.random.RandomState(5)
    vals = np.concatenate([rng.standard_normal(50) * 1000, [0.125, -0.125, 2.5, 0.15, 1.005, 1234.5, -0.0,
                                                              float("nan"), float("inf")]])
    r = rgrad.tensor(vals, dtype=getattr(rgrad, dtype))
    t = torch.tensor(vals, dtype=getattr(torch, dtype))
    a = rgrad.round(r, decimals=decimals).numpy()
    b = torch.round(t, decimals=decimals).numpy()
    np.testing.assert_array_equal(a, b)
    rc = r.clone()
    assert rc.round_(decimals=decimals) is rc
    np.testing.assert_array_equal(rc.numpy(), b)


def test_round_decimals_node_errors_and_integers():
    x = rgrad.tensor([1.25, 2.5], requires_grad=True)
    y = x.round(decimals=1)
    assert y.grad_fn.name() == "RoundBackward1"
    (g,) = rgrad.autograd.grad(y.sum(), x)
    assert g.tolist() == [0.0, 0.0]
    assert x.round(decimals=0).grad_fn.name() == "RoundBackward0"
    _same_error(lambda: rgrad.round(rgrad.tensor([1, 2]), decimals=1),
                lambda: torch.round(torch.tensor([1, 2]), decimals=1))
    assert rgrad.round(rgrad.tensor([15, 25])).tolist() == [15, 25]
    with pytest.raises(TypeError):
        rgrad.tensor([1.0]).round(1)  # keyword-only, as torch's
    with pytest.raises(TypeError):
        torch.tensor([1.0]).round(1)


def test_round_decimals_under_vmap_and_forward_ad():
    x = rgrad.tensor([[1.26, 2.5], [0.15, -3.75]])
    got = rgrad.vmap(lambda r: r.round(decimals=1))(x)
    np.testing.assert_array_equal(got.numpy(), torch.tensor(x.numpy()).round(decimals=1).numpy())
    import rgrad.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        d = fwAD.make_dual(x.double(), rgrad.ones(2, 2, dtype=rgrad.float64))
        y = d.round(decimals=1)
        assert fwAD.unpack_dual(y).tangent.abs().sum().item() == 0.0


# ---- fused arithmetic, NaN handling, products with a bias --------------------------------
#
# (addcmul, addcdiv, lerp, addr, nan_to_num and nansum are native ops now, with tests of
# their own: tests/test_fused_ops.py, tests/test_nan_ops.py. Their rows here stay, beside
# the composites they are used with: nanmean is nansum / count.)


def _f32(*shapes, seed=6):
    rng = np.random.RandomState(seed)
    arrs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return [rgrad.tensor(a) for a in arrs], [torch.tensor(a) for a in arrs]


@pytest.mark.parametrize("name,call", [
    ("addcmul", lambda L, a, b, c: L.addcmul(a, b, c, value=0.37)),
    ("addcmul-1", lambda L, a, b, c: L.addcmul(a, b, c)),
    ("addcdiv", lambda L, a, b, c: L.addcdiv(a, b, c.abs() + 1, value=-1.3)),
    ("lerp-low", lambda L, a, b, c: L.lerp(a, b, 0.3)),
    ("lerp-high", lambda L, a, b, c: L.lerp(a, b, 0.9)),
    ("lerp-tensor", lambda L, a, b, c: L.lerp(a, b, c)),
    ("addcmul_", lambda L, a, b, c: a.clone().addcmul_(b, c, value=2.5)),
    ("addcdiv_", lambda L, a, b, c: a.clone().addcdiv_(b, c.abs() + 1, value=0.1)),
    ("lerp_", lambda L, a, b, c: a.clone().lerp_(b, 0.6)),
])
def test_fused_arithmetic_matches_torch_within_an_ulp(name, call):
    # float32: torch's kernels fuse the last multiply and add (one rounding fewer)
    rs, ts = _f32((64,), (64,), (64,))
    a, b = call(rgrad, *rs).numpy(), call(torch, *ts).numpy()
    # an ulp or two of the terms (which may cancel)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


def test_optimizer_style_updates_match_torch():
    # an Adam step written with the in-place forms (no_grad), as hand-written optimizers do
    rs, ts = _f32((5, 7), (5, 7), seed=7)
    for L, (p, g) in ((rgrad, rs), (torch, ts)):
        m, v = L.zeros_like(p), L.zeros_like(p)
        with L.no_grad():
            for step in range(1, 4):
                m.lerp_(g, 0.1)
                v.mul_(0.999).addcmul_(g, g, value=0.001)
                denom = (v / (1 - 0.999 ** step)).sqrt().add_(1e-8)
                p.addcdiv_(m, denom, value=-0.01 / (1 - 0.9 ** step))
    np.testing.assert_allclose(rs[0].numpy(), ts[0].numpy(), rtol=1e-6, atol=1e-7)


def test_integer_addcmul_truncates_the_value_as_torch():
    for value in (1.9, -1.9, 3):
        a = rgrad.addcmul(rgrad.tensor([1]), rgrad.tensor([2]), rgrad.tensor([3]), value=value)
        b = torch.addcmul(torch.tensor([1]), torch.tensor([2]), torch.tensor([3]), value=value)
        assert a.tolist() == b.tolist() and a.dtype == rgrad.int64
    a = rgrad.addcmul(rgrad.tensor([1.0]), rgrad.tensor([2]), rgrad.tensor([3]), value=0.5)
    assert a.tolist() == [4.0]


ARITH_ERRORS = [
    ("addcdiv-ints", lambda L: L.addcdiv(L.tensor([1.0]), L.tensor([2]), L.tensor([3]))),
    ("lerp-dtype", lambda L: L.lerp(L.zeros(2), L.zeros(2, dtype=L.float64), 0.5)),
    ("vdot-2d", lambda L: L.vdot(L.zeros(2, 2), L.zeros(2))),
    ("broadcast", lambda L: L.broadcast_tensors(L.zeros(2, 3), L.zeros(4))),
    ("nanmean-int", lambda L: L.nanmean(L.tensor([1, 2]))),
]


@pytest.mark.parametrize("name,call", ARITH_ERRORS, ids=[e[0] for e in ARITH_ERRORS])
def test_arithmetic_errors_match_torch(name, call):
    r = _outcome(lambda lib: lambda: call(lib), rgrad)
    t = _outcome(lambda lib: lambda: call(lib), torch)
    assert t[0] == "raises", t
    assert r == t


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nan_to_num_defaults_are_the_dtypes_extremes(dtype):
    # (the native kernel fills in float32's / float64's max and lowest, as torch's)
    vals = [float("nan"), float("inf"), -float("inf"), 1.5]
    a = rgrad.nan_to_num(rgrad.tensor(vals, dtype=getattr(rgrad, dtype))).numpy()
    b = torch.nan_to_num(torch.tensor(vals, dtype=getattr(torch, dtype))).numpy()
    np.testing.assert_array_equal(a, b)
    assert rgrad.nan_to_num(rgrad.tensor([1, 2])).tolist() == [1, 2]


def test_in_place_forms_differentiate_as_torch():
    (a, b, c), (ta, tb, tc) = _pair((3, 4), (3, 4), (4,), seed=8)
    rng = np.random.RandomState(9)
    cases = [
        (lambda L, x, y, z: (x.sigmoid() * 1).logit_(0.2)),
        (lambda L, x, y, z: (x * 1).lerp_(y, 0.7)),
        (lambda L, x, y, z: (x * 1).nan_to_num_()),
        (lambda L, x, y, z: (x[:, 0] * 1).addmv_(y[:, :3], z[:3], beta=0.5)),
        (lambda L, x, y, z: (x * 1).addr_(z[:3], z, alpha=2)),
        (lambda L, x, y, z: (x * 1).clamp_min_(0.1)),
        (lambda L, x, y, z: (x * 1).addcmul_(y, z, value=0.5)),
    ]
    for f in cases:
        yr, yt = f(rgrad, a, b, c), f(torch, ta, tb, tc)
        np.testing.assert_allclose(yr.detach().numpy(), yt.detach().numpy(), rtol=1e-12)
        v = rng.standard_normal(tuple(yt.shape))
        gr = rgrad.autograd.grad(yr, (a, b, c), rgrad.tensor(v), allow_unused=True)
        gt = torch.autograd.grad(yt, (ta, tb, tc), torch.tensor(v), allow_unused=True)
        for x, y in zip(gr, gt):
            assert (x is None) == (y is None)
            if x is not None:
                np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-12, atol=1e-14)


def test_reductions_and_similarity_match_torch():
    (a, b), (ta, tb) = _pair((3, 4), (3, 4), seed=10)
    for f in (lambda L, x, y: L.var_mean(x, 1), lambda L, x, y: L.std_mean(x, (0, 1), keepdim=True, correction=0),
              lambda L, x, y: L.var_mean(x, False), lambda L, x, y: (L.cosine_similarity(x, y),),
              lambda L, x, y: (L.nn.functional.cosine_similarity(x, y, dim=0, eps=0.5),),
              lambda L, x, y: (L.nansum(x.masked_fill(x > 1, float("nan")), 0),),
              lambda L, x, y: (L.nanmean(x.masked_fill(x > 0.5, float("nan"))),)):
        rr, tt = f(rgrad, a, b), f(torch, ta, tb)
        for x, y in zip(rr, tt):
            np.testing.assert_allclose(x.detach().numpy(), y.detach().numpy(), rtol=1e-12, equal_nan=True)
        v = [np.random.RandomState(11).standard_normal(tuple(t.shape)) for t in tt]
        gr = rgrad.autograd.grad(rr, (a, b), [rgrad.tensor(x) for x in v], allow_unused=True)
        gt = torch.autograd.grad(tt, (ta, tb), [torch.tensor(x) for x in v], allow_unused=True)
        for x, y in zip(gr, gt):
            if y is None:
                assert x is None
            else:
                np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-10, atol=1e-12)
    c = rgrad.count_nonzero(rgrad.tensor([[0.0, 1.0], [2.0, 0.0]]), 0)
    assert c.dtype == rgrad.int64 and c.tolist() == [1, 1]


def test_huge_section_counts_raise_instead_of_looping():
    x = rgrad.zeros(2, 3)
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        rgrad.tensor_split(x, 10**20)
    with pytest.raises(RuntimeError):
        rgrad.tensor_split(x, 2**40)  # torch: std::bad_alloc
    assert len(rgrad.tensor_split(x, 1000)) == 1000  # many empty parts, as torch's


@pytest.mark.parametrize("eq", ["bij->bji", "bij->bij", " b i j -> j b i ", "ab->ba"])
def test_einsum_of_one_operands_permutation_is_torchs_permute_view(eq):
    # (the fast path that skips the parse: values, strides, the view, PermuteBackward0, grad)
    shape = (2, 3) if eq == "ab->ba" else (2, 3, 4)
    x = np.random.default_rng(0).standard_normal(shape)
    r = rgrad.tensor(x.tolist(), dtype=rgrad.float64, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    yr, yt = rgrad.einsum(eq, r), torch.einsum(eq, t)
    assert tuple(yr.shape) == tuple(yt.shape) and yr.stride() == yt.stride()
    np.testing.assert_array_equal(np.array(yr.tolist()), yt.detach().numpy())
    assert yr._base is r and type(yr.grad_fn).__name__ == type(yt.grad_fn).__name__ == "PermuteBackward0"
    w = np.random.default_rng(1).standard_normal(tuple(yt.shape))
    (yr * rgrad.tensor(w.tolist(), dtype=rgrad.float64)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(np.array(r.grad.tolist()), t.grad.numpy())
