"""nan_to_num and nansum: native kernels (src/backend/cpu/fused.rs, `nan_to_num`; the
reduction kernels' `ReduceOp::NanSum`, src/backend/cpu/reduce/fold.rs) and nodes
(NanToNumBackward0, NansumBackward0), against torch.

nan_to_num is a selection: torch's bits. nansum is one pass with each NaN loaded as 0:
the bits of rgrad's own ``sum(where(isnan(x), 0, x))`` (rgrad sums float32 in float64,
not torch's cascade, so against torch within a tolerance), along rows, columns and
everything, the same on 1 and 2 threads.
"""

from __future__ import annotations

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")


def _np(t):
    return np.ascontiguousarray(t.detach().numpy())


def _bits(t):
    return _np(t).tobytes()


def _on_threads(f):
    before = rgrad.get_num_threads()
    out = []
    try:
        for n in (1, 2):
            rgrad.set_num_threads(n)
            out.append(f())
    finally:
        rgrad.set_num_threads(before)
    assert _bits(out[0]) == _bits(out[1])
    return out[1]


def _specials(shape, dtype, seed=0):
    """Random values with NaN, +inf and -inf sprinkled in (about 5% each)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    u = rng.random(shape)
    a[u < 0.05] = NAN
    a[(u >= 0.05) & (u < 0.1)] = INF
    a[(u >= 0.1) & (u < 0.15)] = -INF
    return a.astype(dtype)


VIEWS = {
    "contiguous": lambda t: t,
    "transposed": lambda t: t.t(),
    "strided": lambda t: t[1:, ::3],
}
ARGS = {
    "defaults": {},
    "nan": {"nan": 2.5},
    "all": {"nan": -1.0, "posinf": 7.0, "neginf": -9.0},
    "overflow": {"posinf": 1e300, "neginf": -1e300},  # (float32: inf, as torch converts)
    "positional": (0.5, 3.0),
}


@pytest.mark.parametrize("args", ARGS)
@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("shape", [(5, 7), (300, 257)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nan_to_num_is_torchs(args, view, shape, dtype):
    a = _specials(shape, dtype)
    r, t = VIEWS[view](rgrad.from_numpy(a.copy())), VIEWS[view](torch.from_numpy(a.copy()))
    kw = ARGS[args]
    call = (lambda x: x.nan_to_num(*kw)) if isinstance(kw, tuple) else (lambda x: rgrad.nan_to_num(x, **kw))
    tcall = (lambda x: x.nan_to_num(*kw)) if isinstance(kw, tuple) else (lambda x: torch.nan_to_num(x, **kw))
    got, want = _on_threads(lambda: call(r)), tcall(t)
    assert got.dtype == getattr(rgrad, dtype) and tuple(got.shape) == tuple(want.shape)
    assert _bits(got) == _bits(want)
    assert got.stride() == want.stride()
    # in place: the same values, written into the tensor (through its view)
    base_r, base_t = rgrad.from_numpy(a.copy()), torch.from_numpy(a.copy())
    vr, vt = VIEWS[view](base_r), VIEWS[view](base_t)
    out = vr.nan_to_num_(*kw) if isinstance(kw, tuple) else vr.nan_to_num_(**kw)
    vt.nan_to_num_(*kw) if isinstance(kw, tuple) else vt.nan_to_num_(**kw)
    assert out is vr
    assert _bits(base_r) == _bits(base_t)


def test_nan_to_num_of_integers_copies_and_in_place_keeps():
    for L in (rgrad, torch):
        i = L.tensor([1, -2, 3])
        c = L.nan_to_num(i, nan=5.0)
        assert c.tolist() == [1, -2, 3] and c.dtype == L.int64 and c.data_ptr() != i.data_ptr()
        assert i.nan_to_num_() is i
        b = L.tensor([True, False])
        assert L.nan_to_num(b).tolist() == [True, False]


@pytest.mark.parametrize("dims", [None, 0, 1, (0, 1), -1, ()])
@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("shape", [(5, 7), (300, 257), (2, 70_001)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nansum_is_the_sum_of_the_zeroed_elements(dims, view, shape, dtype):
    a = _specials(shape, dtype, seed=3)
    a[np.isinf(a)] = 1.0  # (infinities of both signs would give NaN: tested below)
    r = VIEWS[view](rgrad.from_numpy(a.copy()))
    kw = {} if dims is None else {"dim": dims}
    got = _on_threads(lambda: rgrad.nansum(r, **kw))
    # (the zeroed elements in the same layout: a reduction's order follows the layout)
    z = a.copy()
    z[np.isnan(z)] = 0.0
    zeroed = VIEWS[view](rgrad.from_numpy(z))
    want = zeroed.sum(**kw) if dims is not None else zeroed.sum()
    assert _bits(got) == _bits(want)
    # against torch: the sum itself, rounded differently
    t = VIEWS[view](torch.from_numpy(a.copy()))
    tw = torch.nansum(t, **kw)
    np.testing.assert_allclose(_np(got), _np(tw), rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-3)
    for keepdim in (True, False):
        g = rgrad.nansum(r, dims if dims is not None else None, keepdim) if dims is not None else r.nansum(keepdim=keepdim)
        w = torch.nansum(t, dims, keepdim) if dims is not None else t.nansum(keepdim=keepdim)
        assert tuple(g.shape) == tuple(w.shape)


@pytest.mark.parametrize("dims", [None, 0, 1, 2, (0, 2), (1, 2)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nansum_of_3d_and_with_infinities_is_the_sum_of_the_zeroed_elements(dims, dtype):
    # a middle dim, the inner two, and +inf in some rows (float32's chunks overflow to
    # inf: the float64 fallback, which must skip NaN as the chunks do)
    a = _specials((6, 130, 67), dtype, seed=4)
    a[np.isneginf(a)] = 2.0
    kw = {} if dims is None else {"dim": dims}
    for view in (lambda t: t, lambda t: t.permute(2, 0, 1)):
        r = view(rgrad.from_numpy(a.copy()))
        got = _on_threads(lambda: rgrad.nansum(r, **kw))
        z = a.copy()
        z[np.isnan(z)] = 0.0
        zeroed = view(rgrad.from_numpy(z))
        want = _on_threads(lambda: zeroed.sum(**kw) if dims is not None else zeroed.sum())
        assert _bits(got) == _bits(want)
        w = torch.nansum(view(torch.from_numpy(a.copy())), **kw)
        np.testing.assert_allclose(_np(got), _np(w), rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-3)


def test_nansum_special_values_dtypes_and_empties_as_torch():
    cases = [
        lambda L: L.nansum(L.tensor([NAN, INF, 1.0])),
        lambda L: L.nansum(L.tensor([NAN, INF, -INF])),
        lambda L: L.nansum(L.tensor([[NAN, NAN], [1.0, NAN]]), 1),
        lambda L: L.nansum(L.tensor([1, 2, 3])),
        lambda L: L.nansum(L.tensor([True, True, False])),
        lambda L: L.nansum(L.tensor([1, 2]), dtype=L.float32),
        lambda L: L.nansum(L.tensor([NAN, 1.5], dtype=L.float32), dtype=L.float64),
        lambda L: L.nansum(L.ones(0)),
        lambda L: L.nansum(L.ones(0, 3), 0),
        lambda L: L.nansum(L.ones(2, 3), (0, 1), keepdim=True),
        lambda L: L.ones(2, 3).nansum(-1),
        lambda L: L.nansum(L.tensor(NAN)),
        lambda L: L.nansum(L.full((40_000,), 3e38, dtype=L.float32)),  # (past float32's range)
        # dtype: an integer or bool result counts each NaN as 0 before the cast (not the
        # cast's int64 minimum); a float one casts first
        lambda L: L.nansum(L.tensor([1.5, NAN, -0.7]), dtype=L.int64),
        lambda L: L.nansum(L.tensor([[1.7, NAN, 2.7], [NAN, NAN, 3.0]]), 1, dtype=L.int64),
        lambda L: L.nansum(L.tensor([0.0, NAN]), dtype=L.bool),
        lambda L: L.nansum(L.tensor([[0.0, NAN], [NAN, 0.5]], dtype=L.float64), 1, True, dtype=L.bool),
        lambda L: L.nansum(L.tensor([1e300, NAN], dtype=L.float64), dtype=L.float32),
        lambda L: L.nansum(L.tensor([[3e38, NAN, 3e38]]), -1, dtype=L.float64),
        lambda L: L.nansum(L.tensor([True, False]), dtype=L.float32),
    ]
    for f in cases:
        got, want = f(rgrad), f(torch)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(_np(got).astype(float), _np(want).astype(float), rtol=1e-6, equal_nan=True)


ERRORS = {
    "nansum-dim": lambda L: L.nansum(L.ones(2, 3), 2),
    "nansum-dim-twice": lambda L: L.ones(2, 3).nansum((1, -1)),
    "nansum-dim-float": lambda L: L.ones(2, 3).nansum(1.5),
    "nansum-dim-str-kw": lambda L: L.ones(2, 3).nansum(dim="a"),
    "nansum-dim-bool": lambda L: L.ones(2, 3).nansum(True),
    "nansum-dim-float-element": lambda L: L.ones(2, 3).nansum([1.0]),
    "nansum-dim-float-later": lambda L: L.ones(2, 3).nansum(dim=[0, 1.0]),
    "nansum-dim-range": lambda L: L.ones(2, 3).nansum(range(2)),
    "nansum-dim-overflow": lambda L: L.ones(2, 3).nansum(2**70),
    "nansum-keepdim-int": lambda L: L.ones(2, 3).nansum(1, 1),
    "nansum-keepdim-none-kw": lambda L: L.ones(2, 3).nansum(1, keepdim=None),
    "nansum-keepdim-tensor": lambda L: L.ones(2, 3).nansum(1, L.tensor(True)),
    "nansum-positions": lambda L: L.ones(2, 3).nansum(0, False, L.float64),
    "nansum-twice": lambda L: L.ones(2, 3).nansum(1, dim=1),
    "nansum-keyword": lambda L: L.ones(2, 3).nansum(0, out=None),
    "nansum-int-result-of-grad": lambda L: L.ones(2, requires_grad=True).nansum(dtype=L.int64),
    "nansum-bool-result-of-grad": lambda L: L.ones(2, requires_grad=True).nansum(0, dtype=L.bool),
    "nan-type": lambda L: L.ones(2).nan_to_num("a"),
    "posinf-type": lambda L: L.ones(2).nan_to_num(posinf=[1]),
    "neginf-type-position": lambda L: L.ones(2).nan_to_num(1.0, 2.0, "c"),
    "nan-tensor-1d": lambda L: L.ones(2).nan_to_num(L.tensor([1.0])),
    "nan-tensor-grad": lambda L: L.ones(2).nan_to_num(L.tensor(1.0, requires_grad=True)),
    "nan-complex": lambda L: L.ones(2).nan_to_num(posinf=1 + 2j),
    "nan-int-overflow": lambda L: L.ones(2).nan_to_num(10**400),
    "nan-positions": lambda L: L.ones(2).nan_to_num(1, 2, 3, 4),
    "nan-twice": lambda L: L.ones(2).nan_to_num(1, nan=2),
    "nan-keyword": lambda L: L.ones(2).nan_to_num(nan=1, foo=2),
    "nan_-type": lambda L: L.ones(2).nan_to_num_(nan="a"),
    "nan_-positions": lambda L: L.ones(2).nan_to_num_(1, 2, 3, 4),
    "nan_-leaf": lambda L: L.ones(2, requires_grad=True).nan_to_num_(),
    "nan_-expanded": lambda L: L.ones(2).expand(3, 2).nan_to_num_(),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_are_torchs(name):
    with pytest.raises(Exception) as want:
        ERRORS[name](torch)
    with pytest.raises(Exception) as got:
        ERRORS[name](rgrad)
    assert type(got.value) is type(want.value)
    assert str(got.value) == str(want.value)


GRADS = {
    "nan_to_num": lambda L, x: L.nan_to_num(x, 1.0, 2.0, -2.0),
    "nan_to_num-defaults": lambda L, x: x.nan_to_num(),
    "nan_to_num_": lambda L, x: (x * 1).nan_to_num_(nan=3.0),
    "nansum": lambda L, x: L.nansum(x),
    "nansum-dim": lambda L, x: L.nansum(x, 1),
    "nansum-dims-keepdim": lambda L, x: L.nansum(x, (0, 1), keepdim=True),
    "nansum-empty-dims": lambda L, x: x.nansum(()),
}


@pytest.mark.parametrize("case", GRADS)
def test_nodes_and_gradients_are_torchs(case):
    a = _specials((3, 4), "float64", seed=5)
    xr, xt = rgrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    yr, yt = GRADS[case](rgrad, xr), GRADS[case](torch, xt)
    assert yr.grad_fn.name() == yt.grad_fn.name()
    names = lambda fn: [None if n is None else n.name() for n, _ in fn.next_functions]  # noqa: E731
    assert names(yr.grad_fn) == names(yt.grad_fn)
    saved = lambda fn: sorted(n for n in dir(fn) if n.startswith("_saved_"))  # noqa: E731
    assert saved(yr.grad_fn) == saved(yt.grad_fn)
    for n in saved(yt.grad_fn):
        a_, b_ = getattr(yr.grad_fn, n), getattr(yt.grad_fn, n)
        if isinstance(b_, torch.Tensor):
            np.testing.assert_array_equal(_np(a_), _np(b_))
        else:
            assert a_ == b_, (n, a_, b_)
    np.testing.assert_allclose(_np(yr), _np(yt), rtol=1e-14, equal_nan=True)
    v = np.random.default_rng(6).standard_normal(tuple(yt.shape))
    (gr,) = rgrad.autograd.grad(yr, xr, rgrad.tensor(v))
    (gt,) = torch.autograd.grad(yt, xt, torch.tensor(v))
    assert _bits(gr) == _bits(gt)
    # a NaN or infinite gradient where the input was not finite: NaN (a multiply), as torch
    g = np.full(tuple(yt.shape), INF)
    (gr,) = rgrad.autograd.grad(GRADS[case](rgrad, xr), xr, rgrad.tensor(g))
    (gt,) = torch.autograd.grad(GRADS[case](torch, xt), xt, torch.tensor(g))
    np.testing.assert_array_equal(_np(gr), _np(gt))


def test_gradients_of_gradients_and_forward_ad_match_torch():
    a = _specials((3, 4), "float64", seed=7)
    t_ = np.random.default_rng(8).standard_normal((3, 4))
    for f in (lambda L, x: L.nan_to_num(x * x, 0.5), lambda L, x: L.nansum(x * x, 0)):
        outs = []
        for L in (rgrad, torch):
            x = L.tensor(a, requires_grad=True)
            (g,) = L.autograd.grad(f(L, x).sum(), x, create_graph=True)
            (h,) = L.autograd.grad(g.sum(), x)
            outs.append((_np(g), _np(h)))
        for u, w in zip(*outs):
            np.testing.assert_allclose(u, w, rtol=1e-14, equal_nan=True)


@pytest.mark.filterwarnings("ignore::FutureWarning")  # (torch's jvp decompositions load)
def test_forward_ad_matches_torch():
    import rgrad.autograd.forward_ad as fr
    import torch.autograd.forward_ad as ft

    a = _specials((3, 4), "float64", seed=9)
    t_ = np.random.default_rng(10).standard_normal((3, 4))
    # (a NaN or infinite tangent where the input is NaN: nansum's derivative selects 0
    # there, where a multiply would give NaN; nan_to_num's multiplies)
    t_[np.isnan(a)] = np.array([NAN, INF, -INF, 2.0] * a.size)[: np.isnan(a).sum()]
    for f in (lambda L, x: L.nan_to_num(x, 1.0), lambda L, x: L.nansum(x), lambda L, x: L.nansum(x, 1, True),
              lambda L, x: L.nansum(x, -1, dtype=L.float32), lambda L, x: x.float().nansum(0, dtype=L.float64),
              lambda L, x: x.clone().nan_to_num_(posinf=3.0)):
        outs = []
        for L, fa in ((rgrad, fr), (torch, ft)):
            with fa.dual_level():
                y = f(L, fa.make_dual(L.tensor(a), L.tensor(t_)))
                tangent = fa.unpack_dual(y).tangent
                assert str(tangent.dtype).split(".")[-1] == str(y.dtype).split(".")[-1]
                outs.append(_np(tangent))
        # (NaN and inf where torch has them; sums rounded as each library sums)
        np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6 if outs[1].dtype == np.float32 else 1e-14,
                                   equal_nan=True)


def test_vmap_matches_torch():
    a = _specials((4, 3, 5), "float64", seed=11)
    for f in (lambda L, x: L.nan_to_num(x, 1.0, 2.0), lambda L, x: (x * 1).nan_to_num_(),
              lambda L, x: L.nansum(x), lambda L, x: L.nansum(x, 1, keepdim=True), lambda L, x: x.nansum((0, 1))):
        got = rgrad.vmap(lambda x: f(rgrad, x))(rgrad.tensor(a))
        want = torch.vmap(lambda x: f(torch, x))(torch.tensor(a))
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-14, equal_nan=True)


def test_a_sum_asked_for_in_bool_is_torchs_or():
    # (torch adds in bool: any element nonzero; rgrad counts in int64, then casts)
    cases = [
        lambda L: L.sum(L.tensor([1, 2]), dtype=L.bool),
        lambda L: L.tensor([0, 0]).sum(dtype=L.bool),
        lambda L: L.sum(L.tensor([[1, 0], [0, 0]]), 0, dtype=L.bool),
        lambda L: L.nansum(L.tensor([0.5, -0.5]), dtype=L.bool),
        lambda L: L.nansum(L.tensor([[0.0, 0.0], [0.0, 2.0]]), 1, dtype=L.bool),
        lambda L: L.tensor([True, True]).sum(),  # (no dtype: the int64 count)
    ]
    for f in cases:
        got, want = f(rgrad), f(torch)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        assert got.tolist() == want.tolist()


def _uint64_as_signed(v):
    # (torch shows a negative dim in `_saved_dim` as its uint64 bits)
    return tuple(d - 2**64 if d >= 2**63 else d for d in v) if isinstance(v, tuple) else v


@pytest.mark.parametrize("dim", [None, 1, -1, (-1, 0), [0], (), (0, 1)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_nansum_saves_the_dims_as_given(dim, keepdim):
    outs = []
    for L in (rgrad, torch):
        x = L.tensor([[1.0, NAN, 2.0], [3.0, 4.0, NAN]], requires_grad=True)
        y = L.nansum(x, dim, keepdim) if dim is not None else x.nansum(keepdim=keepdim)
        fn = y.grad_fn
        outs.append((fn.name(), _uint64_as_signed(fn._saved_dim), fn._saved_keepdim, _np(fn._saved_self).tobytes(),
                     tuple(y.shape)))
    assert outs[0] == outs[1]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("dim", [None, 1])
def test_nansum_with_a_dtype_records_one_node_on_the_input(dtype, dim):
    # torch casts inside the op: NansumBackward0 straight onto the input, which it keeps
    # in its own dtype, and the gradient comes back in that dtype
    a = _specials((3, 4), "float32" if dtype == "float64" else "float64", seed=12)
    outs = []
    for L in (rgrad, torch):
        x = L.tensor(a, requires_grad=True)
        y = L.nansum(x, dim, dtype=getattr(L, dtype)) if dim is not None else x.nansum(dtype=getattr(L, dtype))
        fn = y.grad_fn
        names = [None if n is None else n.name() for n, _ in fn.next_functions]
        saved = str(fn._saved_self.dtype).split(".")[-1]
        (g,) = L.autograd.grad(y, x, L.ones_like(y) * 3)
        outs.append((fn.name(), names, str(y.dtype).split(".")[-1], saved, str(g.dtype).split(".")[-1], _bits(g)))
    assert outs[0] == outs[1]


def test_an_integer_nansum_of_a_tensor_that_requires_grad_runs_under_no_grad():
    for L in (rgrad, torch):
        x = L.tensor([1.5, NAN, 2.5], requires_grad=True)
        with L.no_grad():
            assert L.nansum(x, dtype=L.int64).tolist() == 3
            assert x.nansum(0, dtype=L.bool).tolist() is True


ACCEPTED = {
    # torch's parser reads a float argument from an int, a bool, a NumPy number or a 0-d
    # tensor that does not require grad; None is the default
    "int": lambda L, x: x.nan_to_num(3, posinf=-2),
    "bool": lambda L, x: x.nan_to_num(True, neginf=False),
    "large-int": lambda L, x: x.nan_to_num(2**100, -(10**30)),
    "numpy": lambda L, x: x.nan_to_num(np.float32(1.5), np.int64(7), np.bool_(True)),
    "0-d tensors": lambda L, x: x.nan_to_num(L.tensor(2.5, dtype=L.float64), posinf=L.tensor(7), neginf=L.tensor(True)),
    "none": lambda L, x: x.nan_to_num(None, None, neginf=None),
    "function": lambda L, x: L.nan_to_num(x, 1.0, neginf=-3),
    "in place": lambda L, x: x.clone().nan_to_num_(L.tensor(4.0), 2**40),
    # nansum's dim: an index (a NumPy int, an int tensor), a tuple or list whose first
    # element is one (the others read as ints, a bool too), torch.Size
    "dims": lambda L, x: x.reshape(2, 2).nansum((np.int64(1),), keepdim=True),
    "dim-tensor": lambda L, x: x.reshape(2, 2).nansum(L.tensor(0)),
    "dim-list": lambda L, x: x.reshape(2, 2).nansum([1, False]),
    "dim-size": lambda L, x: x.reshape(2, 2).nansum(L.zeros(1).shape),
    "dim-none": lambda L, x: x.reshape(2, 2).nansum(None, True),
}


@pytest.mark.parametrize("name", ACCEPTED)
def test_arguments_torch_accepts(name):
    vals = [NAN, INF, -INF, 1.25]
    got, want = ACCEPTED[name](rgrad, rgrad.tensor(vals)), ACCEPTED[name](torch, torch.tensor(vals))
    assert tuple(got.shape) == tuple(want.shape)
    assert _bits(got) == _bits(want)
