"""Views, scatters and copies (helper-44) against torch: as_strided and unfold (native
views, src/ops/strided.rs), the *_scatter functions, masked_scatter, index_reduce, put,
renorm, split_with_sizes and the unsafe splits, the *_copy functions
(python/rgrad/_composite4.py): values, dtypes, storage sharing, nodes and their saved
fields, gradients (overlapping views included), forward AD, errors."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta:UserWarning"),
              pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")]

rng = np.random.RandomState(44)


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001  (the outcome is compared)
        return ("raises", type(e).__name__, str(e).replace("torch.", "").replace("rgrad.", ""))


def _name(t):
    return None if t.grad_fn is None else t.grad_fn.name()


def _conv(lib, a):
    if isinstance(a, np.ndarray):
        return lib.tensor(a, requires_grad=a.dtype.kind == "f")
    return a


def _saved(node):
    """A node's ``_saved_*`` fields, tensors as arrays."""
    out = {}
    for k in dir(node):
        if k.startswith("_saved_"):
            v = getattr(node, k)
            out[k] = v.detach().numpy().tolist() if hasattr(v, "detach") else v
    return out


def _compare(fn, *arrays, grad=True, saved=True):
    """``fn(lib, *inputs)`` under rgrad and torch: the same outcome (error type and text,
    or results: dtype, shape, values, node and its saved fields, and the gradients of a
    weighted sum of the results w.r.t. the float inputs)."""
    ins_r, ins_t = [_conv(rgrad, a) for a in arrays], [_conv(torch, a) for a in arrays]
    rr, tt = _outcome(lambda: fn(rgrad, *ins_r)), _outcome(lambda: fn(torch, *ins_t))
    assert rr[0] == tt[0], (rr, tt)
    if rr[0] == "raises":
        assert rr[1:] == tt[1:]
        return None
    rs, ts = rr[1], tt[1]
    multi = isinstance(ts, (tuple, list))
    assert isinstance(rs, tuple) == isinstance(ts, tuple)
    rs, ts = (rs, ts) if multi else ((rs,), (ts,))
    assert len(rs) == len(ts)
    for r, t in zip(rs, ts):
        assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        assert tuple(r.shape) == tuple(t.shape)
        assert r.requires_grad == t.requires_grad and _name(r) == _name(t), (_name(r), _name(t))
        assert r._is_view() == t._is_view()
        np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-12, equal_nan=True)
        if saved and t.grad_fn is not None:
            assert _saved(r.grad_fn) == _saved(t.grad_fn)
    leaves_r = [x for x in ins_r if isinstance(x, rgrad.Tensor) and x.requires_grad]
    leaves_t = [x for x in ins_t if isinstance(x, torch.Tensor) and x.requires_grad]
    if grad and leaves_t and any(t.requires_grad for t in ts):
        sr = sum((r * rgrad.tensor(rng_w(r.shape), dtype=r.dtype)).sum() for r in rs if r.requires_grad)
        st = sum((t * torch.tensor(rng_w(t.shape), dtype=t.dtype)).sum() for t in ts if t.requires_grad)
        gr = rgrad.autograd.grad(sr, leaves_r, allow_unused=True)
        gt = torch.autograd.grad(st, leaves_t, allow_unused=True)
        for a, b in zip(gr, gt):
            assert (a is None) == (b is None)
            if b is not None:
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-12)
    return rs


def rng_w(shape):
    """Distinct gradient weights of ``shape``."""
    n = int(np.prod(shape)) if len(shape) else 1
    return (np.arange(1.0, n + 1) * 0.37).reshape(tuple(shape))


def a(*shape):
    return rng.standard_normal(shape)


# ---- as_strided ------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ((2, 2), (1, 2)), ((3, 3), (1, 1)), ((2, 2), (4, 1), 1), ((4,), (0,)), ((2, 3), (0, 1), 5), ((12,), (1,)),
    ((0, 3), (1, 1), 12), ((), (), 7), ((2, 2), (1,)), ((2, -2), (1, 1)), ((2, 2), (-1, 1)), ((2, 2), (1, 1), -1),
    ((5, 5), (4, 1)), ((2, 2), (1, 1), 11),
], ids=str)
def test_as_strided(args):
    _compare(lambda lib, x: x.as_strided(*args), a(3, 4))
    _compare(lambda lib, x: lib.as_strided(x, *args), a(3, 4))


def test_as_strided_of_a_view_reads_the_storage_and_shares_it():
    for lib in (rgrad, torch):
        base = lib.arange(12.0)
        v = base[2:6]
        s = v.as_strided((3,), (2,))  # (from v's offset 2, past v's end)
        assert s.tolist() == [2.0, 4.0, 6.0] and s.storage_offset() == 2
        assert s._is_view() and s._base.tolist() == base.tolist() and s._base.shape == (12,)
        s[1] = -1.0
        assert base[4].item() == -1.0 and v[2].item() == -1.0
    # the gradient reaches the view's own elements only; the others are another tensor's
    _compare(lambda lib, x: x[1:].as_strided((2, 3), (1, 2), 3), a(8))
    _compare(lambda lib, x: x.t().as_strided((2, 2), (1, 3)), a(3, 4))


@pytest.mark.parametrize("case", ["overlap", "expanded_input", "gap", "repeat"])
def test_as_strided_gradient_overlapping(case):
    fns = {
        "overlap": lambda lib, x: x.as_strided((3, 3), (1, 1)),  # (windows share elements)
        "expanded_input": lambda lib, x: x.expand(3, 4).as_strided((2, 4), (1, 1)),
        "gap": lambda lib, x: x.as_strided((2, 2), (6, 2), 1),
        "repeat": lambda lib, x: x.as_strided((3, 2), (0, 1), 2),
    }
    shape = (4,) if case == "expanded_input" else (12,)
    _compare(fns[case], a(*shape))


def test_as_strided_double_backward_and_forward_ad():
    x = rgrad.tensor(a(10), requires_grad=True)
    fn = lambda t: t.as_strided((3, 4), (2, 1), 1)  # noqa: E731  (overlapping rows)
    assert rgrad.autograd.gradcheck(fn, (x,), check_forward_ad=True)
    assert rgrad.autograd.gradgradcheck(lambda t: fn(t) ** 2, (x,))
    e = rgrad.tensor(a(4), requires_grad=True)
    assert rgrad.autograd.gradcheck(lambda t: t.expand(3, 4).as_strided((2, 3), (1, 1)) ** 2, (e,),
                                    check_forward_ad=True)


def test_as_strided_forward_ad_of_a_view_outside_the_tangent():
    fa = rgrad.autograd.forward_ad
    base = rgrad.arange(10.0)
    with fa.dual_level():
        d = fa.make_dual(base[2:5].clone(), rgrad.ones(3))
        out = d.as_strided((2,), (1,), 1)
        p, t = fa.unpack_dual(out)
        assert p.tolist() == [3.0, 4.0] and t.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("dtype", ["int64", "bool", "float32"])
def test_as_strided_dtypes(dtype):
    for lib in (rgrad, torch):
        x = lib.tensor(np.arange(12).reshape(3, 4) % 3).to(getattr(lib, dtype))
        assert x.as_strided((2, 2), (1, 2), 1).tolist() == [[1, 0], [2, 1]] if dtype != "bool" else True
    _compare(lambda lib, x: x.to(getattr(lib, dtype)).as_strided((2, 3), (2, 1), 1), np.arange(12))


def test_as_strided_rebased_after_an_inplace_write_to_the_base():
    def fn(lib, x):
        y = x * 2
        v = y.as_strided((3, 2), (1, 1))  # (overlapping windows of a non-leaf)
        y.mul_(3)
        return v * 1

    _compare(fn, a(6), saved=False)


# ---- unfold ----------------------------------------------------------------------------

@pytest.mark.parametrize("args", [(1, 2, 1), (1, 2, 2), (0, 3, 1), (-1, 4, 1), (1, 0, 1), (1, 2, 3), (1, 5, 1),
                                  (1, -1, 1), (1, 2, 0), (2, 2, 1)], ids=str)
def test_unfold(args):
    _compare(lambda lib, x: x.unfold(*args), a(3, 4), saved=args[0] >= 0)


def test_unfold_scalar_view_and_saved_fields():
    _compare(lambda lib, x: x.unfold(0, 1, 2), a())
    _compare(lambda lib, x: x.unfold(0, 2, 1), a())
    for lib in (rgrad, torch):
        x = lib.arange(6.0)
        u = x.unfold(0, 3, 1)
        assert u._is_view() and u._base.tolist() == x.tolist() and u.stride() == (1, 1)
        u[1, 1] = 0.0
        assert x[2].item() == 0.0
    x = rgrad.zeros(3, 4, requires_grad=True)
    n = x.unfold(1, 2, 1).grad_fn
    assert (n._saved_dimension, n._saved_self_sym_sizes, n._saved_size, n._saved_step) == (1, (3, 4), 2, 1)


def test_unfold_double_backward_and_forward_ad():
    x = rgrad.tensor(a(3, 7), requires_grad=True)
    assert rgrad.autograd.gradcheck(lambda t: t.unfold(1, 3, 2), (x,), check_forward_ad=True)
    assert rgrad.autograd.gradgradcheck(lambda t: t.unfold(1, 3, 1) ** 2, (x,))


# ---- the scatters ----------------------------------------------------------------------

@pytest.mark.parametrize("i", range(9))
def test_select_scatter(i):
    cases = [
        lambda lib, x, s: lib.select_scatter(x, s[0], 0, 1),
        lambda lib, x, s: x.select_scatter(s[:, 1], -1, -1),
        lambda lib, x, s: lib.select_scatter(x, s[0, :3], 0, 1),
        lambda lib, x, s: lib.select_scatter(x, s[0], 0, 5),
        lambda lib, x, s: lib.select_scatter(x, s[0], 2, 0),
        lambda lib, x, s: lib.select_scatter(x, s[0].double(), 0, 1),
        lambda lib, x, s: lib.select_scatter(x.t(), s[:, 0], 1, 2),
        lambda lib, x, s: lib.select_scatter(x.long(), s[0].long(), 0, 0),
        lambda lib, x, s: lib.select_scatter(x > 0, s[0] > 0, 0, 2),
    ]
    _compare(cases[i], a(3, 4), a(3, 4))


@pytest.mark.parametrize("i", range(7))
def test_slice_scatter(i):
    cases = [
        lambda lib, x, s: lib.slice_scatter(x, s[1:], 0, 1),
        lambda lib, x, s: x.slice_scatter(s[:, ::2], 1, 0, None, 2),
        lambda lib, x, s: lib.slice_scatter(x, s, 1, -10, 10),
        lambda lib, x, s: lib.slice_scatter(x, s[1:], 0, 0, 1),
        lambda lib, x, s: lib.slice_scatter(x, s[:, :2], 1, 0, None, 0),
        lambda lib, x, s: lib.slice_scatter(x, s),
        lambda lib, x, s: lib.slice_scatter(x.long(), s[:, 1:3].long(), dim=-1, start=1, end=3),
    ]
    _compare(cases[i], a(3, 4), a(3, 4))


@pytest.mark.parametrize("i", range(6))
def test_diagonal_scatter(i):
    cases = [
        lambda lib, x, s: lib.diagonal_scatter(x, s.diagonal()),
        lambda lib, x, s: x.diagonal_scatter(s.diagonal(1), 1),
        lambda lib, x, s: lib.diagonal_scatter(x, s.diagonal(-1), -1),
        lambda lib, x, s: lib.diagonal_scatter(x, s[0, :2]),
        lambda lib, x, s: lib.diagonal_scatter(x, s.diagonal(), 0, 1, 0),
        lambda lib, x, s: lib.diagonal_scatter(x.unsqueeze(0).expand(2, 3, 4), s.diagonal().expand(2, 3), 0, -2, -1),
    ]
    _compare(cases[i], a(3, 4), a(3, 4))


@pytest.mark.parametrize("i", range(6))
def test_as_strided_scatter(i):
    """Values, nodes, errors and src's gradient as torch; torch gives `input` the region's
    gradient instead of the rest's (its as_strided_scatter_backward copies the region of
    `g`), so the input's gradient is checked numerically instead."""
    cases = [
        lambda lib, x, s: lib.as_strided_scatter(x, s[:2, :2], (2, 2), (1, 2)),
        lambda lib, x, s: x.as_strided_scatter(s[0, :3], (3,), (4,), 1),
        lambda lib, x, s: lib.as_strided_scatter(x, s[:3, :2], (2, 2), (1, 2)),
        lambda lib, x, s: lib.as_strided_scatter(x, s[:2, :2], (5, 5), (1, 2)),
        lambda lib, x, s: lib.as_strided_scatter(x.t(), s[:2, :2], (2, 2), (3, 1)),
        lambda lib, x, s: lib.as_strided_scatter(x, s[:2, :2].double(), (2, 2), (1, 2)),
    ]
    x0 = a(3, 4)
    # (torch's src gradient of a non-contiguous input reads g as if it were row-major)
    _compare(lambda lib, s: cases[i](lib, lib.tensor(x0), s), a(3, 4), grad=i != 4)
    x = rgrad.tensor(x0, requires_grad=True)
    s = rgrad.tensor(a(3, 4), requires_grad=True)
    if _outcome(lambda: cases[i](rgrad, x, s))[0] == "ok":
        assert rgrad.autograd.gradcheck(lambda x, s: cases[i](rgrad, x, s), (x, s), check_forward_ad=True)
        x.grad = None
        cases[i](rgrad, x, s).sum().backward()
        region = cases[i](rgrad, rgrad.zeros(3, 4, dtype=rgrad.float64), rgrad.ones(3, 4, dtype=rgrad.float64))
        want = 1 - region.numpy()
        np.testing.assert_allclose(x.grad.numpy(), want if want.shape == (3, 4) else want.T)


def test_scatters_double_backward_and_forward_ad():
    x = rgrad.tensor(a(3, 4), requires_grad=True)
    s = rgrad.tensor(a(4), requires_grad=True)
    fns = [lambda x, s: rgrad.select_scatter(x, s, 0, 1), lambda x, s: rgrad.slice_scatter(x, s[None], 0, 2),
           lambda x, s: rgrad.diagonal_scatter(x, s[:3]), lambda x, s: rgrad.as_strided_scatter(x, s, (4,), (3,))]
    for fn in fns:
        assert rgrad.autograd.gradcheck(fn, (x, s), check_forward_ad=True)
        assert rgrad.autograd.gradgradcheck(lambda x, s: fn(x, s) ** 2, (x, s))


# ---- masked_scatter ----------------------------------------------------------------------

@pytest.mark.parametrize("i", range(11))
def test_masked_scatter(i):
    m = np.array([[True, False, True, True], [False, False, True, False], [True, True, False, True]])
    cases = [
        lambda lib, x, s: lib.masked_scatter(x, lib.tensor(m), s),
        lambda lib, x, s: x.masked_scatter(lib.tensor(m[0]), s),
        lambda lib, x, s: lib.masked_scatter(x[0], lib.tensor(m), s),
        lambda lib, x, s: x.masked_scatter(lib.tensor(m), s[0, :2]),
        lambda lib, x, s: x.masked_scatter(lib.tensor(m), s.double()),
        lambda lib, x, s: x.masked_scatter(lib.tensor(m).float(), s),
        lambda lib, x, s: (x * 1).masked_scatter_(lib.tensor(m[1]), s),
        lambda lib, x, s: (x * 1).masked_scatter_(lib.ones(2, 3, 4, dtype=lib.bool), s),
        lambda lib, x, s: (x * 1).masked_scatter_(lib.tensor(m), 3.0),
        lambda lib, x, s: lib.masked_scatter(x.long(), lib.tensor(m), lib.arange(12).view(3, 4)),
        lambda lib, x, s: lib.masked_scatter(x, lib.zeros(3, 4, dtype=lib.bool), s[:0]),
    ]
    _compare(cases[i], a(3, 4), a(3, 4))


def test_masked_scatter_double_backward_and_forward_ad():
    mask = rgrad.tensor([[True, False, True], [False, True, True]])
    x = rgrad.tensor(a(2, 3), requires_grad=True)
    s = rgrad.tensor(a(5), requires_grad=True)
    assert rgrad.autograd.gradcheck(lambda x, s: x.masked_scatter(mask, s), (x, s), check_forward_ad=True)
    assert rgrad.autograd.gradgradcheck(lambda x, s: x.masked_scatter(mask, s) ** 2, (x, s))


# ---- index_reduce ------------------------------------------------------------------------

@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce(reduce, include_self):
    kw = {"include_self": include_self}
    _compare(lambda lib, x, s: x.index_reduce(0, lib.tensor([0, 2, 0]), s, reduce, **kw), a(3, 4), a(3, 4))
    _compare(lambda lib, x, s: lib.index_reduce(x, 1, lib.tensor([3, 0, 3, 1, 3]), s, reduce, **kw),
             a(3, 4), a(3, 5))
    _compare(lambda lib, x, s: (x * 1).index_reduce_(-1, lib.tensor([1, 1]), s, reduce, **kw), a(3, 4), a(3, 2),
             saved=False)
    # ties: the gradient shared among the tied elements, as torch's
    _compare(lambda lib, x, s: x.index_reduce(0, lib.tensor([0, 0]), s, reduce, **kw),
             np.ones((2, 3)), np.ones((2, 3)))
    _compare(lambda lib, x, s: x.long().index_reduce(0, lib.tensor([1, 1]), (s * 3).long(), reduce, **kw),
             a(2, 3), a(2, 3))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_values_kernel(reduce, include_self, dtype):
    """Without autograd the values come from the native slice kernel: every dim, strided
    and broadcast operands, repeated and unused positions, NaNs, a 0-d tensor, an empty
    index, and sizes that split across the pool, bit for bit as torch."""
    r = np.random.RandomState(3)

    def arr(*shape):
        v = np.asarray(r.randn(*shape) * 3)
        if dtype == "int64":
            return np.round(v).astype(np.int64)
        if v.size > 4:
            v.flat[[1, 4]] = np.nan
        return v.astype(dtype)

    def both(fn, *arrays):
        got = fn(rgrad, *[rgrad.tensor(v) for v in arrays])
        want = fn(torch, *[torch.tensor(v) for v in arrays])
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_array_equal(got.numpy(), want.numpy())

    kw = {"include_self": include_self}
    idx = r.randint(0, 6, 9)
    for d in range(3):
        xs, ss = [4, 5, 3], [4, 5, 3]
        xs[d], ss[d] = 6, 9
        both(lambda lib, x, s: x.index_reduce(d, lib.tensor(idx), s, reduce, **kw), arr(*xs), arr(*ss))
        # x and source as transposed views
        both(lambda lib, x, s: x.mT.index_reduce(d, lib.tensor(idx), s.mT, reduce, **kw),
             arr(*xs[:1], *xs[:0:-1]), arr(*ss[:1], *ss[:0:-1]))
    # a source expanded along a dim, a 0-d tensor, an empty index
    both(lambda lib, x, s: x.index_reduce(1, lib.tensor(idx), s.expand(4, 9, 3), reduce, **kw),
         arr(4, 6, 3), arr(1, 9, 3))
    both(lambda lib, x, s: x.index_reduce(0, lib.tensor([0]), s, reduce, **kw), arr(), arr())
    both(lambda lib, x, s: x.index_reduce(0, lib.tensor([], dtype=lib.int64), s, reduce, **kw),
         arr(3, 4), arr(0, 4))
    # large enough for the pool, along dim 0 (column blocks) and dim 1 (row pieces)
    big = r.randint(0, 300, 700)
    both(lambda lib, x, s: x.index_reduce(0, lib.tensor(big), s, reduce, **kw), arr(300, 257), arr(700, 257))
    both(lambda lib, x, s: x.index_reduce(1, lib.tensor(big), s, reduce, **kw), arr(129, 300), arr(129, 700))


@pytest.mark.parametrize("i", range(10))
def test_index_reduce_errors(i):
    cases = [
        lambda lib, x, s: x.index_reduce(0, lib.tensor([0, 2]), s[:2], "sum"),
        lambda lib, x, s: x.index_reduce(0, lib.tensor([0, 2]), s, "prod"),
        lambda lib, x, s: x.index_reduce(0, lib.tensor([0.0, 2.0]), s[:2], "prod"),
        lambda lib, x, s: x.index_reduce(0, lib.tensor([0, 5]), s[:2], "prod"),
        lambda lib, x, s: x.index_reduce(0, lib.tensor([0, -1]), s[:2], "prod"),
        lambda lib, x, s: x.index_reduce(0, lib.tensor([0, 2]), s[:2].double(), "prod"),
        lambda lib, x, s: x.index_reduce(0, lib.tensor([[0, 1]]), s[:2], "prod"),
        lambda lib, x, s: x.index_reduce(1, lib.tensor([0, 2]), s[:2, :2], "amax"),
        lambda lib, x, s: x.index_reduce(2, lib.tensor([0, 2]), s[:2], "amax"),
        lambda lib, x, s: x[0, 0].index_reduce(0, lib.tensor([0, 0]), s[0, :2], "prod"),
    ]
    _compare(cases[i], a(3, 4), a(3, 4))


def test_index_reduce_double_backward_and_no_forward_ad():
    x = rgrad.tensor(a(3, 4), requires_grad=True)
    s = rgrad.tensor(a(4, 4), requires_grad=True)
    idx = rgrad.tensor([0, 2, 0, 1])
    for reduce in ("prod", "mean", "amax"):
        fn = lambda x, s: x.index_reduce(0, idx, s, reduce)  # noqa: E731
        assert rgrad.autograd.gradcheck(fn, (x, s))
        assert rgrad.autograd.gradgradcheck(fn, (x, s))
    # torch gives index_reduce no forward formula: the same error
    for lib in (rgrad, torch):
        fa = lib.autograd.forward_ad
        with fa.dual_level(), pytest.raises(NotImplementedError, match="forward AD with index_reduce"):
            fa.make_dual(lib.zeros(3, 4), lib.ones(3, 4)).index_reduce(0, lib.tensor([0]), lib.ones(1, 4), "mean")


# ---- put ------------------------------------------------------------------------------------

@pytest.mark.parametrize("i", range(14))
def test_put(i):
    cases = [
        lambda lib, x, s: x.put(lib.tensor([0, 5, -1]), s[0, :3]),
        lambda lib, x, s: x.put(lib.tensor([0, 5, 0]), s[0, :3], accumulate=True),
        lambda lib, x, s: lib.put(x.t(), lib.tensor([1, 2]), s[0, :2]),
        lambda lib, x, s: (x * 1).put_(lib.tensor([[0, 5], [7, 1]]), s[:2, :2]),
        lambda lib, x, s: (x * 1).put_(lib.tensor([3, 3]), s[0, :2], True),
        lambda lib, x, s: x.put(lib.tensor([0, 13]), s[0, :2]),
        lambda lib, x, s: x.put(lib.tensor([0, -13]), s[0, :2]),
        lambda lib, x, s: x.put(lib.tensor([0, 1]), s[0, :3]),
        lambda lib, x, s: x.put(lib.tensor([0.0, 1.0]), s[0, :2]),
        lambda lib, x, s: x.put(lib.tensor([0, 1]), s[0, :2].double()),
        lambda lib, x, s: lib.tensor([]).put(lib.tensor([0]), s[0, :1]),
        lambda lib, x, s: x.long().put(lib.tensor([1]), lib.tensor([7])),
        lambda lib, x, s: x.put(lib.tensor([], dtype=lib.int64), s[0, :0]),
        lambda lib, x, s: (x > 0).put(lib.tensor([1, 2]), lib.tensor([True, False])),
    ]
    _compare(cases[i], a(3, 4), a(3, 4))


def test_put_saves_source_only_when_it_requires_grad():
    _compare(lambda lib, x: x.put(lib.tensor([0, 3]), lib.tensor([1.0, 2.0], dtype=lib.float64)), a(3, 4))
    _compare(lambda lib, s: lib.zeros(2, 2, dtype=lib.float64).put(lib.tensor([0, 3]), s), a(2))


def test_put_double_backward_and_forward_ad():
    x = rgrad.tensor(a(3, 4), requires_grad=True)
    s = rgrad.tensor(a(3), requires_grad=True)
    for acc in (False, True):
        fn = lambda x, s: x.put(rgrad.tensor([1, 7, 1 if acc else 2]), s, acc)  # noqa: E731
        assert rgrad.autograd.gradcheck(fn, (x, s), check_forward_ad=True)
        assert rgrad.autograd.gradgradcheck(lambda x, s: fn(x, s) ** 2, (x, s))


# ---- renorm ----------------------------------------------------------------------------------

@pytest.mark.parametrize("i", range(13))
def test_renorm(i):
    cases = [
        lambda lib, x: x.renorm(2, 0, 1.0),
        lambda lib, x: x.renorm(1, 1, 1.5),
        lambda lib, x: lib.renorm(x, 3.0, -1, 0.5),
        lambda lib, x: lib.renorm(x, float("inf"), 1, 1),
        lambda lib, x: lib.renorm(x, 2, 0, 100.0),
        lambda lib, x: (x * 1).renorm_(2, 0, 1.0),
        lambda lib, x: x.renorm(0, 0, 1),
        lambda lib, x: x.renorm(-1, 0, 1),
        lambda lib, x: x.renorm(2, 0, -1),
        lambda lib, x: x.renorm(2, 3, 1),
        lambda lib, x: x[0].renorm(2, 0, 1),
        lambda lib, x: x.long().renorm(2, 0, 1),
        lambda lib, x: x.view(3, 2, 2).renorm(2, 1, 0.8),
    ]
    _compare(cases[i], a(3, 4))


def test_renorm_double_backward_and_forward_ad():
    x = rgrad.tensor(a(3, 4), requires_grad=True)
    assert rgrad.autograd.gradcheck(lambda t: t.renorm(2, 0, 1.0), (x,), check_forward_ad=True)
    assert rgrad.autograd.gradgradcheck(lambda t: t.renorm(2, 1, 1.0), (x,))


# ---- splits --------------------------------------------------------------------------------

@pytest.mark.parametrize("i", range(11))
def test_splits(i):
    cases = [
        lambda lib, x: lib.split_with_sizes(x, [1, 2]),
        lambda lib, x: x.split_with_sizes([3, 1], 1),
        lambda lib, x: x.split_with_sizes([3, 3], 1),
        lambda lib, x: lib.unsafe_split(x, 3, 1),
        lambda lib, x: x.unsafe_split(2),
        lambda lib, x: lib.unsafe_split_with_sizes(x, [3, 1], 1),
        lambda lib, x: lib.unsafe_split_with_sizes(x, [3, 3], 1),
        lambda lib, x: lib.unsafe_chunk(x, 2, 0),
        lambda lib, x: x.unsafe_chunk(3, -1),
        lambda lib, x: x.unsafe_chunk(0),
        lambda lib, x: lib.unsafe_split(x, 4, 1),
    ]
    _compare(cases[i], a(3, 4))


def test_split_with_sizes_views_share_storage():
    x = rgrad.arange(6.0)
    p, q = rgrad.split_with_sizes(x, [2, 4])
    assert p._is_view() and p._base.tolist() == x.tolist() and q._is_view()
    q[0] = 9.0
    assert x[2].item() == 9.0
    u = rgrad.unsafe_split(x, 3)
    assert not u[0]._is_view()


# ---- the *_copy functions ---------------------------------------------------------------------

_COPIES = [
    lambda lib, x: lib.alias_copy(x),
    lambda lib, x: lib.diagonal_copy(x, 1),
    lambda lib, x: lib.diagonal_copy(x, -1, 1, 0),
    lambda lib, x: lib.expand_copy(x[:1], (2, 3, 4)),
    lambda lib, x: lib.permute_copy(x, (1, 0)),
    lambda lib, x: lib.permute_copy(x, (-1, 0)),
    lambda lib, x: lib.select_copy(x, 1, 2),
    lambda lib, x: lib.select_copy(x, -1, -1),
    lambda lib, x: lib.slice_copy(x, 1, 1, 3),
    lambda lib, x: lib.slice_copy(x),
    lambda lib, x: lib.slice_copy(x, -1, -3, None, 2),
    lambda lib, x: lib.squeeze_copy(x[:1]),
    lambda lib, x: lib.squeeze_copy(x[:1], 0),
    lambda lib, x: lib.squeeze_copy(x[:1], (0, 1)),
    lambda lib, x: lib.t_copy(x),
    lambda lib, x: lib.transpose_copy(x, 0, 1),
    lambda lib, x: lib.transpose_copy(x, -1, 0),
    lambda lib, x: lib.unbind_copy(x, 1),
    lambda lib, x: lib.unsqueeze_copy(x, 1),
    lambda lib, x: lib.unsqueeze_copy(x, -1),
    lambda lib, x: lib.unfold_copy(x, 1, 2, 1),
    lambda lib, x: lib.view_copy(x, (2, 6)),
    lambda lib, x: lib.view_copy(x, (-1,)),
    lambda lib, x: lib.narrow_copy(x, 1, 1, 2),
    lambda lib, x: x.narrow_copy(-1, -2, 2),
    lambda lib, x: lib.split_copy(x, 2, 1),
    lambda lib, x: lib.split_copy(x, 2, -1),
    lambda lib, x: lib.split_with_sizes_copy(x, [1, 2]),
    lambda lib, x: lib.as_strided_copy(x, (2, 2), (1, 2)),
    lambda lib, x: lib.as_strided_copy(x, (3, 3), (1, 1), 2),
    lambda lib, x: lib.detach_copy(x),
    lambda lib, x: lib.permute_copy(x, (0, 0)),
    lambda lib, x: lib.select_copy(x, 0, 3),
]


# torch's NarrowCopyBackward0 fails for a negative start (24); detach_copy has no gradient (30)
_NO_GRAD = (24, 30)


@pytest.mark.parametrize("i", range(len(_COPIES)))
def test_copies(i):
    out = _compare(_COPIES[i], a(3, 4), grad=i not in _NO_GRAD)
    for t in out or ():
        assert not t._is_view()
        assert t._base is None


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_copies_other_dtypes(dtype):
    for fn in _COPIES[:-3]:
        _compare(lambda lib, x: fn(lib, x.to(getattr(lib, dtype))), np.arange(12).reshape(3, 4) % 2)


def test_detach_copy_backward_raises_as_torch():
    for lib in (rgrad, torch):
        x = lib.ones(2, requires_grad=True)
        y = lib.detach_copy(x)
        assert y.requires_grad and y.grad_fn.name() == "torch::autograd::NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for aten::detach_copy is not implemented"):
            y.sum().backward()


def test_copies_double_backward_and_forward_ad():
    x = rgrad.tensor(a(3, 4), requires_grad=True)
    for fn in (lambda t: rgrad.permute_copy(t, (1, 0)), lambda t: rgrad.unfold_copy(t, 1, 2, 1),
               lambda t: rgrad.split_copy(t, 2, 1)[1], lambda t: rgrad.unsafe_chunk(t, 2)[0]):
        assert rgrad.autograd.gradcheck(fn, (x,), check_forward_ad=True)
        assert rgrad.autograd.gradgradcheck(lambda t: fn(t) ** 2, (x,))


def test_named_nodes_from_many_threads():
    """The node classes are made once and shared: threads recording them at once get the
    same names and gradients."""
    errors: list = []
    x0 = a(3, 4)

    def work():
        try:
            for _ in range(20):
                x = rgrad.tensor(x0, requires_grad=True)
                y = rgrad.select_scatter(x, x[0] * 2, 0, 1)
                assert y.grad_fn.name() == "SelectScatterBackward0"
                (g,) = rgrad.autograd.grad(y.sum(), [x])
                assert np.allclose(g.numpy(), [[3, 3, 3, 3], [0, 0, 0, 0], [1, 1, 1, 1]])
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@pytest.mark.filterwarnings("ignore:There is a performance drop:UserWarning")  # (torch's loop over renorm)
def test_under_vmap():
    """The composites batch through the ops they are made of."""
    from rgrad.func import vmap

    x, s = rgrad.tensor(a(5, 3, 4)), rgrad.tensor(a(5, 4))
    got = vmap(lambda x, s: rgrad.select_scatter(x, s, 0, 1))(x, s)
    want = torch.vmap(lambda x, s: torch.select_scatter(x, s, 0, 1))(torch.tensor(x.numpy()), torch.tensor(s.numpy()))
    np.testing.assert_allclose(got.numpy(), want.numpy())
    got = vmap(lambda x: x.renorm(2, 0, 1.0))(x)
    want = torch.vmap(lambda x: x.renorm(2, 0, 1.0))(torch.tensor(x.numpy()))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_index_put_functions():
    """(rgrad's IndexPutBackward0 shows no saved fields yet: not compared)"""
    for acc in (False, True):
        _compare(lambda lib, x, v: lib.index_put(x, (lib.tensor([0, 2, 0]),), v, acc), a(3, 4), a(3, 4),
                 saved=False)
        _compare(lambda lib, x, v: lib.index_put_(x * 1, (lib.tensor([1]), lib.tensor([3])), v[0, 0], acc),
                 a(3, 4), a(3, 4), saved=False)
    _compare(lambda lib, x, v: lib.index_put(x, (lib.tensor([5]),), v[0, 0]), a(3, 4), a(3, 4))


# ---- (helper-48) the unsafe splits' storage, version counters and history; the scatters'
# output geometry (torch's clone_preserve_strides) -----------------------------------------------

def _unsafe_split_facts(lib, fn):
    """What torch shows of unsafe split pieces: storage shared (offsets in bytes from the
    input's data), not views, each its own version counter, writes seen in the input."""
    x = lib.arange(24.0).view(6, 4)
    outs = fn(lib, x)
    # (torch's data_ptr of an empty tensor is 0: not compared)
    facts = [(o.data_ptr() - x.data_ptr() if o.numel() else None, o._is_view(), o._base is None, tuple(o.stride()), o.storage_offset(),
              o._version) for o in outs]
    outs[0].add_(100)
    facts.append((x._version, [o._version for o in outs], x.flatten().tolist()))
    return facts


_UNSAFE = [
    lambda lib, x: lib.unsafe_split(x, 4),
    lambda lib, x: lib.unsafe_split(x, 3, 1),
    lambda lib, x: x.unsafe_split(2, -1),
    lambda lib, x: lib.unsafe_split_with_sizes(x, [1, 5]),
    lambda lib, x: x.unsafe_split_with_sizes([3, 0, 1], 1),
    lambda lib, x: lib.unsafe_chunk(x, 4),
    lambda lib, x: x.unsafe_chunk(3, -1),
    lambda lib, x: lib.unsafe_split(x.t()[1:], 2, 1),
]


@pytest.mark.parametrize("i", range(len(_UNSAFE)))
def test_unsafe_splits_share_storage_but_are_not_views(i):
    assert _unsafe_split_facts(rgrad, _UNSAFE[i]) == _unsafe_split_facts(torch, _UNSAFE[i])


@pytest.mark.parametrize("i", range(len(_UNSAFE)))
def test_unsafe_splits_history_and_inplace_writes(i):
    """The node (name, saved fields, next_functions), and an in-place write to a piece of
    a tensor that requires grad: allowed (a piece is no view), its history is the write's,
    and the input's gradient is torch's."""
    def run(lib):
        x = lib.tensor(rng_w((6, 4)), requires_grad=True)
        y = x * 2
        outs = _UNSAFE[i](lib, y)
        node = outs[0].grad_fn
        facts = [node.name(), _saved(node), [type(f).__name__ if f is not None else None
                                             for f, _ in node.next_functions],
                 [o.output_nr for o in outs], [o.is_leaf for o in outs]]
        outs[0].mul_(3)
        facts += [_name(outs[0]), y._version, y.grad_fn.name()]
        total = sum((o * lib.tensor(rng_w(o.shape), dtype=o.dtype)).sum() for o in outs)
        (g,) = lib.autograd.grad(total, [x])
        return facts, g.detach().numpy().tolist()

    r, t = run(rgrad), run(torch)
    assert r == t, (r, t)


def test_unsafe_split_errors_as_torch():
    for fn in (lambda lib, x: lib.unsafe_split(x, 0), lambda lib, x: lib.unsafe_split(x, -1),
               lambda lib, x: lib.unsafe_split(x[0, 0], 1), lambda lib, x: lib.unsafe_split(x, 2, 5),
               lambda lib, x: lib.unsafe_split_with_sizes(x, [1, 2]), lambda lib, x: lib.unsafe_chunk(x, 0),
               lambda lib, x: lib.unsafe_split(x, 2.0)):
        _compare(fn, a(3, 4))
    # (split's own errors: a negative size, a bad dim, a 0-d tensor, a float)
    for fn in (lambda lib, x: x.split(-1), lambda lib, x: lib.split(x, -2), lambda lib, x: x.split(-1, 5),
               lambda lib, x: x[0, 0].split(1), lambda lib, x: x[0, 0].split(-1), lambda lib, x: x[0, 0].split([1]),
               lambda lib, x: x.split([1, 2], 5), lambda lib, x: lib.unsafe_split_with_sizes(x[0, 0], [1]),
               lambda lib, x: lib.unsafe_split_with_sizes(x, [1, 2], 5), lambda lib, x: lib.unsafe_split(x[0, 0], -1),
               lambda lib, x: x.split([1, 2]), lambda lib, x: x.split(2.0), lambda lib, x: x.split([1.0, 2.0]),
               lambda lib, x: x.split([-1, 4]), lambda lib, x: x.split((1, "a")), lambda lib, x: x.split(None),
               lambda lib, x: x.split([1, 1]), lambda lib, x: lib.split(x, [1, 2.0])):
        _compare(fn, a(3, 4))


def test_unsafe_split_forward_ad_tangents_share_the_tangents_storage():
    from rgrad.autograd import forward_ad as fw

    p, t = rgrad.randn(4, 3), rgrad.randn(4, 3)
    with fw.dual_level():
        outs = rgrad.unsafe_split(fw.make_dual(p, t), 3)
        tangents = [fw.unpack_dual(o).tangent for o in outs]
    assert [tt.data_ptr() - t.data_ptr() for tt in tangents] == [0, 36]
    np.testing.assert_array_equal(np.concatenate([tt.numpy() for tt in tangents]), t.numpy())
    x = rgrad.tensor(a(6, 4), requires_grad=True)
    for fn in _UNSAFE:
        assert rgrad.autograd.gradcheck(lambda x: fn(rgrad, x)[-1] * 1, (x,), check_forward_ad=True)


_GEOMETRIES = [
    lambda lib, x: x.t(),
    lambda lib, x: x[:, ::2],
    lambda lib, x: x[:1].expand(3, 6),
    lambda lib, x: x[1:],
    lambda lib, x: x[1:, 1:].t(),
]

_SCATTERS = [
    lambda lib, x: lib.select_scatter(x, x.select(0, 0) * 0 - 1, 0, 1),
    lambda lib, x: lib.slice_scatter(x, x[:1] * 0 - 1, 0, 0, 1),
    lambda lib, x: lib.diagonal_scatter(x, x.diagonal() * 0 - 1),
    lambda lib, x: lib.as_strided_scatter(x, -lib.ones(2, dtype=x.dtype), (2,), (1,)),
    lambda lib, x: lib.as_strided_scatter(x, -lib.ones(2, 2, dtype=x.dtype), (2, 2), (3, 1), 1),
]


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("g", range(len(_GEOMETRIES)))
@pytest.mark.parametrize("s", range(len(_SCATTERS)))
def test_scatter_output_geometry_as_torch(s, g, grad):
    """torch writes into a copy of the input's whole storage with its strides and offset
    (a row-major one when its elements overlap): the strides, offset, values and storage
    as torch's, recorded or not, for inputs that are transposed, strided, expanded,
    offset. (torch refuses to record as_strided_scatter of an input not row-major;
    rgrad records the composite over a map of positions in the input's stride order,
    as it does for a region reaching storage outside the elements, e.g. before an offset
    input's first: there its values are not torch's, whose region is in the storage.)"""
    def run(lib):
        x = lib.arange(24.0).view(4, 6).requires_grad_(grad)
        out = _SCATTERS[s](lib, _GEOMETRIES[g](lib, x))
        full = out.detach().as_strided((out.numel(),), (1,), out.storage_offset())
        return (tuple(out.stride()), out.storage_offset(), out._is_view(), out.detach().numpy().tolist(),
                _name(out), full.tolist() if out.is_contiguous() or out.stride() == (1, 6) else None)

    if grad and s >= 3 and g != 3:
        with pytest.raises(RuntimeError, match="as_strided_scatter is currently only supported for contiguous"):
            run(torch)
        assert run(rgrad)[4] == "AsStridedScatterBackward0"
        return
    if grad and (s, g) == (4, 3):
        assert run(rgrad)[4] == run(torch)[4] == "AsStridedScatterBackward0"
        return
    assert run(rgrad) == run(torch)


def test_scatter_nodes_link_to_their_inputs():
    for lib in (rgrad, torch):
        x = lib.ones(3, 4, requires_grad=True)
        y = lib.select_scatter(x, lib.zeros(4), 0, 1)
        assert [type(f).__name__ if f is not None else None for f, _ in y.grad_fn.next_functions] == [
            "AccumulateGrad", None]
        z = lib.slice_scatter(lib.zeros(3, 4), x[:1] * 2, 0, 0, 1)
        assert [type(f).__name__ if f is not None else None for f, _ in z.grad_fn.next_functions] == [
            None, "MulBackward0"]


def test_scatter_gradients_of_strided_gradients():
    """Gradients arriving transposed or expanded (not row-major) read the right elements,
    double backward and tangents included."""
    x = rgrad.tensor(a(4, 4), requires_grad=True)
    s = rgrad.tensor(a(4), requires_grad=True)
    fns = [lambda x, s: rgrad.select_scatter(x, s, 1, 2).t(),
           lambda x, s: rgrad.diagonal_scatter(x, s).t() * 1,
           lambda x, s: rgrad.slice_scatter(x, s[None], 0, 3).t().sum(0, keepdim=True).expand(4, 4),
           lambda x, s: rgrad.as_strided_scatter(x, s, (4,), (5,)).t(),
           lambda x, s: rgrad.as_strided_scatter(x.t(), s.view(2, 2), (2, 2), (1, 4), 2).t()]
    for fn in fns:
        assert rgrad.autograd.gradcheck(fn, (x, s), check_forward_ad=True)
        assert rgrad.autograd.gradgradcheck(lambda x, s: fn(x, s) ** 2, (x, s))
    for lib in (rgrad, torch):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            lib.as_strided_scatter(lib.ones(4, 4, requires_grad=True), lib.ones(3), (3,), (0,))


@pytest.mark.parametrize("i", range(5))
def test_masked_scatter_values_only(i):
    """Nothing recorded (rgrad's path by the flat positions, written in place into the
    copy): values, layout and errors as torch, for broadcast masks and strided inputs."""
    m = np.array([[True, False, True, True], [False, False, True, False], [True, True, False, True]])
    cases = [
        lambda lib, x, s: lib.masked_scatter(x, lib.tensor(m), s),
        lambda lib, x, s: x.t().masked_scatter(lib.tensor(m).t(), s),
        lambda lib, x, s: x[:1].masked_scatter(lib.tensor(m), s[:, ::2]),
        lambda lib, x, s: x.masked_scatter(lib.tensor(m[0]), s[0, :1]),
        lambda lib, x, s: (x * 1).masked_scatter_(lib.tensor(m[1]), s),
    ]
    x0, s0 = a(3, 4), a(3, 4)

    def run(lib):
        out = _outcome(lambda: cases[i](lib, lib.tensor(x0), lib.tensor(s0)))
        if out[0] == "raises":
            return out
        y = out[1]
        return y.numpy().tolist(), tuple(y.stride()), y._is_view(), y.requires_grad

    assert run(rgrad) == run(torch)


@pytest.mark.parametrize("i", range(6))
def test_put_values_only(i):
    """Nothing recorded (torch's kernel: a clone in the input's memory format, written in
    place): values, strides and errors as torch."""
    cases = [
        lambda lib, x, s: x.put(lib.tensor([0, 5, -1]), s[0, :3]),
        lambda lib, x, s: x.t().put(lib.tensor([[1, 4], [7, 10]]), s[:2, :2]),
        lambda lib, x, s: x.t().put(lib.tensor([1, 1, 2]), s[0, :3], accumulate=True),
        lambda lib, x, s: x[0, 0].put(lib.tensor([0]), s[0, :1]),
        lambda lib, x, s: (x * 1).put_(lib.tensor([2, 2, 3]), s[1, :3], True),
        lambda lib, x, s: x.put(lib.tensor([12]), s[0, :1]),
    ]
    x0, s0 = a(3, 4), a(3, 4)

    def run(lib):
        out = _outcome(lambda: cases[i](lib, lib.tensor(x0), lib.tensor(s0)))
        if out[0] == "raises":
            return out
        y = out[1]
        return y.numpy().tolist(), tuple(y.stride()), y._is_view()

    assert run(rgrad) == run(torch)
