"""sort / argsort / msort, topk, kthvalue and median against torch: values AND indices with
ties and NaN (torch's CPU tie order), dtypes, non-contiguous, 0-d and empty inputs, the
recorded nodes and their saved fields, the return types and their repr, errors (type and
message), gradcheck / gradgradcheck / forward AD in float64, and vmap against the loop."""

from __future__ import annotations

import random

import numpy as np
import pytest
from _differential import both, caught

import rgrad
from rgrad.autograd import gradcheck, gradgradcheck

nan = float("nan")


def _clean(T, v):
    """Values with NaN replaced (NaN != NaN would fail the comparison)."""
    if v.dtype in (T.float32, T.float64):
        return v.masked_fill(v != v, -777.0)
    return v


def _ties(seed, shape, hi=3, nans=0.0):
    r = random.Random(seed)
    n = int(np.prod(shape))
    return np.array([nan if r.random() < nans else float(r.randint(0, hi)) for _ in range(n)]).reshape(shape)


_SHAPES = [(5,), (17,), (40,), (100,), (300,), (3, 33), (4, 20, 3)]


@pytest.mark.parametrize("shape", _SHAPES)
@pytest.mark.parametrize("nans", [0.0, 0.2])
def test_sort_ties_and_nan_as_torch(shape, nans):
    data = _ties(hash(shape) % 1000, shape, nans=nans).tolist()

    def program(T):
        x = T.tensor(data)
        out = []
        for dim in range(-1, len(shape) - 1) if len(shape) > 1 else [-1, 0]:
            for desc in (False, True):
                for kw in ({}, {"stable": True}, {"stable": False}):
                    r = T.sort(x, dim=dim, descending=desc, **kw)
                    out += [r.indices, _clean(T, r.values)]
                out.append(T.argsort(x, dim, desc))
        out.append(_clean(T, T.msort(x)))
        return out

    both(program)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_sort_dtypes(dtype):
    data = _ties(3, (6, 50), hi=4).tolist()

    def program(T):
        x = T.tensor(data).to(getattr(T, dtype))
        return [tuple(x.sort()), tuple(x.sort(0, True)), tuple(x.sort(stable=True, descending=True)),
                x.argsort(dim=0), x.argsort(stable=True)]

    both(program)


def test_large_1d_int_sort_is_stable_as_aten_radix_sort():
    data = [random.Random(5).randint(0, 9) for _ in range(40000)]

    def program(T):
        x = T.tensor(data)
        i = T.sort(x).indices
        return [i[:50], i[-50:], T.sort(x.float()).indices[:50]]

    both(program)


def test_sort_of_expanded_dim_keeps_index_order():
    both(lambda T: [T.sort(T.tensor([2.0]).expand(40)).indices, T.sort(T.ones(3, 1).expand(3, 20), 1).indices])


@pytest.mark.parametrize("shape", [(17,), (40,), (300,), (3, 150), (5, 7)])
@pytest.mark.parametrize("nans", [0.0, 0.2])
def test_topk_ties_and_nan_as_torch(shape, nans):
    data = _ties(len(shape) * 7 + shape[0], shape, nans=nans).tolist()

    def program(T):
        x = T.tensor(data)
        n = shape[-1]
        out = []
        for k in sorted({0, 1, 2, 3, n // 2, n}):
            for largest in (True, False):
                for srt in (True, False):
                    r = T.topk(x, k, largest=largest, sorted=srt)
                    out += [r.indices, _clean(T, r.values)]
        r = x.topk(1, 0)
        return out + [r.indices, _clean(T, r.values)]

    both(program)


@pytest.mark.parametrize("shape", [(5,), (17,), (40,), (301,), (4, 31)])
@pytest.mark.parametrize("nans", [0.0, 0.2])
def test_kthvalue_and_median_ties_and_nan_as_torch(shape, nans):
    data = _ties(shape[0] * 3 + 1, shape, nans=nans).tolist()

    def program(T):
        x = T.tensor(data)
        n = shape[-1]
        out = []
        for k in sorted({1, 2, n // 2, n - 1, n}):
            r = T.kthvalue(x, k)
            out += [r.indices, _clean(T, r.values)]
        r = x.kthvalue(2, 0, keepdim=True)
        out += [r.indices, _clean(T, r.values)]
        for dim in range(len(shape)):
            for keepdim in (False, True):
                r = T.median(x, dim, keepdim)
                out += [r.indices, _clean(T, r.values)]
        out.append(_clean(T, T.median(x).reshape(1)))
        out.append(_clean(T, T.median(x.long() if nans == 0 else x).reshape(1)))
        return out

    both(program)


def test_integer_inputs():
    data = _ties(9, (4, 9), hi=5).tolist()

    def program(T):
        x = T.tensor(data).long()
        return [tuple(x.topk(3)), tuple(x.kthvalue(4, 1)), tuple(x.median(0)), x.median(), tuple(x.sort(0))]

    both(program)


def test_non_contiguous_0d_and_empty_inputs():
    data = _ties(11, (6, 8)).tolist()

    def program(T):
        x = T.tensor(data)
        t, s = x.t(), x[::2, 1::3]
        z, e = T.tensor(3.5), T.zeros(0, 3)
        return [
            tuple(t.sort()), tuple(s.sort(0, True)), tuple(t.topk(2)), tuple(s.kthvalue(2, 0)),
            tuple(t.median(1)), t.median(), tuple(z.sort()), tuple(z.topk(1)), tuple(z.topk(0)),
            tuple(z.kthvalue(1)), tuple(z.median(0)), z.median(), tuple(z.sort(0)), tuple(z.median(-1, True)),
            tuple(e.sort(0)), tuple(e.sort(1)), tuple(e.topk(0, 0)), tuple(e.topk(2, 1)),
            tuple(e.kthvalue(1, 1)), tuple(e.median(1)), _clean(T, T.median(e).reshape(1)),
        ]

    both(program)


def test_return_types_and_repr():
    def program(T):
        x = T.tensor([3.0, 1.0, 2.0])
        rs = [T.sort(x), T.topk(x, 2), T.kthvalue(x, 1), T.median(x, 0)]
        return [(type(r).__name__, type(r).__module__.split(".", 1)[1], repr(r).replace("torch.", "rgrad."),
                 r._fields if hasattr(r, "_fields") else ("values", "indices"), len(r), isinstance(r, tuple))
                for r in rs]

    res = both(program)
    assert res[0][2].startswith("rgrad.return_types.sort(\nvalues=tensor([1., 2., 3.]),\nindices=tensor([1, 2, 0]))")


def _names(T):
    x = T.tensor([[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]], requires_grad=True)
    nodes = [T.sort(x).values.grad_fn, T.sort(x, stable=True).values.grad_fn,
             T.sort(x, dim=0, stable=False).values.grad_fn, x.msort().grad_fn,
             T.topk(x, 2).values.grad_fn, T.kthvalue(x, 2, 0).values.grad_fn,
             T.median(x).grad_fn, T.median(x, 1, True).values.grad_fn]
    out = []
    for g in nodes:
        fields = sorted(a for a in dir(g) if a.startswith("_saved_"))
        vals = []
        for a in fields:
            v = getattr(g, a)
            if a == "_saved_dim":
                v = v if v < 2**63 else v - 2**64  # torch shows a negative dim as uint64
            vals.append(v)
        out.append((g, fields, vals))
    out += [T.argsort(x).requires_grad, T.sort(x).indices.requires_grad, T.topk(x, 1).indices.grad_fn]
    return out


def test_nodes_and_saved_fields():
    res = both(_names)
    assert [n[0][1] for n in res[:8]] == [
        "SortBackward0", "SortBackward1", "SortBackward1", "SortBackward0", "TopkBackward0",
        "KthvalueBackward0", "MedianBackward0", "MedianBackward1"]


_BAD = [
    lambda T, x: T.topk(x, 5),
    lambda T, x: T.topk(x, -1),
    lambda T, x: T.topk(x, 2, dim=3),
    lambda T, x: T.topk(x, 2.0),
    lambda T, x: T.topk(x > 0, 1),
    lambda T, x: T.kthvalue(x, 5),
    lambda T, x: T.kthvalue(x, 0),
    lambda T, x: T.kthvalue(x, 4, dim=0),
    lambda T, x: T.kthvalue(x > 0, 1),
    lambda T, x: T.kthvalue(T.zeros(0, 3), 1, 0),
    lambda T, x: T.median(x > 0),
    lambda T, x: T.median(x > 0, 0),
    lambda T, x: T.median(T.zeros(0, 3), 0),
    lambda T, x: T.median(x, 2),
    lambda T, x: T.sort(x, 2),
    lambda T, x: T.sort(T.tensor(3.0), 1),
    lambda T, x: T.topk(T.tensor(3.0), 2),
    lambda T, x: T.kthvalue(T.tensor(3.0), 2),
    lambda T, x: T.median(x, None),
    lambda T, x: T.topk(T.zeros(0, 3), 1, 0),
]


@pytest.mark.parametrize("i", range(len(_BAD)))
def test_errors_as_torch(i):
    res = both(lambda T: caught(lambda: _BAD[i](T, T.tensor([[0.5, -1.0, 2.0, 0.0], [1.0, 2.0, 3.0, 4.0],
                                                                  [0.0, 0.0, 1.0, 1.0]]))))
    assert res[0] == "E"


def test_sort_overload_errors_are_type_errors():
    x = rgrad.zeros(3, 4)
    for f in (lambda: rgrad.sort(x, 0, True, stable=True), lambda: x.sort(0, stable=True),
              lambda: rgrad.argsort(x, 0, stable=True), lambda: rgrad.sort(x, dim=None)):
        e = caught(f)
        assert isinstance(e, TypeError) and "received an invalid combination of arguments" in str(e)


def _distinct(*shape, seed=0):
    r = np.random.RandomState(seed)
    n = int(np.prod(shape))
    return rgrad.tensor((r.permutation(n).astype(np.float64) / 7 - 3).reshape(shape).tolist(),
                        dtype=rgrad.float64, requires_grad=True)


_GRAD_FNS = [
    ("sort", lambda x: rgrad.sort(x, 1, True).values),
    ("sort.stable", lambda x: rgrad.sort(x, dim=0, stable=True).values),
    ("msort", lambda x: rgrad.msort(x)),
    ("topk", lambda x: rgrad.topk(x, 2).values),
    ("topk.small", lambda x: rgrad.topk(x, 3, 0, largest=False, sorted=False).values),
    ("kthvalue", lambda x: rgrad.kthvalue(x, 2).values),
    ("kthvalue.keepdim", lambda x: rgrad.kthvalue(x, 3, 0, True).values),
    ("median", lambda x: rgrad.median(x)),
    ("median.dim", lambda x: rgrad.median(x, 1).values),
    ("median.keepdim", lambda x: rgrad.median(x, 0, keepdim=True).values),
]


@pytest.mark.parametrize("name,f", _GRAD_FNS, ids=[n for n, _ in _GRAD_FNS])
def test_gradcheck_gradgradcheck_forward_ad(name, f):
    x = _distinct(4, 5)
    assert gradcheck(f, (x,), check_forward_ad=True)
    assert gradgradcheck(f, (x,))
    xt = _distinct(5, 4, seed=1).detach().t().requires_grad_()
    assert gradcheck(f, (xt,), check_forward_ad=True)


def test_median_gradient_shared_among_ties_as_torch():
    def program(T):
        out = []
        for data in ([1.0, 2.0, 2.0, 3.0, 2.0], [1.0, nan, 2.0, nan], [4.0]):
            x = T.tensor(data, requires_grad=True)
            T.median(x).backward()
            out.append(_clean(T, x.grad))
        x = T.tensor([[1.0, 2.0, 2.0], [3.0, 3.0, 0.0]], requires_grad=True)
        T.median(x, 1).values.sum().backward()
        out.append(x.grad)
        return out

    both(program)


def test_backward_of_saved_indices_modified_in_place_is_refused():
    def program(T):
        x = T.tensor([3.0, 1.0, 2.0], requires_grad=True)
        r = T.sort(x)
        r.indices.add_(0)
        return caught(lambda: r.values.sum().backward())

    res = both(program)
    assert res[0] == "E"


_VMAP = [
    ("sort", lambda t: t.sort(-1)),
    ("sort.desc", lambda t: rgrad.sort(t, 0, True).values),
    ("argsort", lambda t: t.argsort(0)),
    ("topk", lambda t: rgrad.topk(t, 2)),
    ("topk.dim0", lambda t: t.topk(1, 0, largest=False)),
    ("kthvalue", lambda t: rgrad.kthvalue(t, 2, 1)),
    ("median.dim", lambda t: rgrad.median(t, 0, True)),
    ("median", lambda t: rgrad.median(t)),
    ("msort", lambda t: rgrad.msort(t)),
]


@pytest.mark.parametrize("name,f", _VMAP, ids=[n for n, _ in _VMAP])
@pytest.mark.parametrize("in_dim", [0, 1])
def test_vmap_against_the_loop(name, f, in_dim):
    x = _distinct(3, 4, 5, seed=2).detach()
    got = rgrad.vmap(f, in_dims=in_dim)(x)
    want = [f(x.select(in_dim, i)) for i in range(x.shape[in_dim])]
    got = got if isinstance(got, tuple) else (got,)
    want = [w if isinstance(w, tuple) else (w,) for w in want]
    for j, g in enumerate(got):
        assert g.tolist() == rgrad.stack([w[j] for w in want]).tolist()


# --------------------------------------------------------------------------------------
# The scatter family
# --------------------------------------------------------------------------------------


def test_scatter_family_values_as_torch():
    def program(T):
        x = T.arange(12.0).reshape(3, 4)
        dup = T.tensor([[0, 0, 3], [1, 1, 1], [2, 0, 2]])
        src = T.arange(100.0, 109.0).reshape(3, 3)
        i1 = T.tensor([2, 0, 2])
        out = [
            x.scatter(1, dup, src), x.scatter(-1, dup, 7.5), x.scatter(1, dup, value=-1),
            x.scatter_add(1, dup, src), T.scatter_add(x, 0, dup[:2].clamp(max=2), src[:2]),
            x.index_add(0, i1, src.repeat(1, 2)[:, :4]), x.index_add(1, i1, src, alpha=-2),
            x.index_copy(1, T.tensor([3, 0, 3]), src), x.index_fill(1, T.tensor([1, -1]), 9.0),
            x.index_fill(0, T.tensor(2), T.tensor(4.0)),
            x.long().scatter(1, dup, src.long()), x.long().scatter_add(1, dup, src.long()),
            x.long().index_add(0, i1, T.ones(3, 4).long(), alpha=3), x.long().index_fill(1, i1, 2),
            (x > 4).scatter(1, dup, T.ones(3, 3).bool()), (x > 4).index_fill(0, i1, False),
            x.t().scatter(0, dup.t(), src.t()), x.t().index_add(0, T.tensor([1, 1]), src[:2, :3]),
            T.tensor(5.0).scatter(0, T.tensor(0), T.tensor(2.0)), T.tensor(5.0).index_fill(0, T.tensor(0), 1.0),
            x.scatter(1, T.zeros(0, 2).long(), src), x.index_add(0, T.zeros(0).long(), T.zeros(0, 4)),
        ]
        return out

    both(program)


def test_masked_select_nonzero_argwhere_take_along_dim_as_torch():
    def program(T):
        x = T.arange(12.0).reshape(3, 4)
        m = T.tensor([True, False, True, True])
        i = T.tensor([[0, 3], [1, 1], [2, 0]])
        return [
            x.masked_select(x > 4), T.masked_select(x, m), T.masked_select(x[0], m.reshape(1, 4).expand(2, 4)),
            T.masked_select(x, T.tensor(True)), T.masked_select(T.tensor(2.0), T.tensor(False)),
            x.t().masked_select(x.t() > 2), (x > 2).masked_select(m), x.long().masked_select(m),
            T.nonzero(x > 6), x.nonzero(), T.nonzero(x, as_tuple=True), T.nonzero(T.tensor(3.0)),
            T.nonzero(T.tensor(0.0)), T.nonzero(T.tensor(3.0), as_tuple=True),
            T.nonzero(T.tensor(0.0), as_tuple=True), T.nonzero(T.zeros(2, 0)), T.argwhere(x > 3),
            (x > 3).argwhere(), T.nonzero(T.tensor([True, False, True])),
            T.take_along_dim(x, i, 1), T.take_along_dim(x, T.tensor([[2, 0, 1, 1]]), 0), x.take_along_dim(T.tensor([11, 0, 5])),
            T.take_along_dim(x, T.tensor([[1], [0], [3]]), dim=-1), T.take_along_dim(x, i[:, :1]),
        ]

    both(program)


_SCATTER_BAD = [
    lambda T, x: x.scatter(1, T.tensor([[0, 4]]), T.ones(1, 2)),
    lambda T, x: x.scatter(1, T.tensor([[0, -1]]), T.ones(1, 2)),
    lambda T, x: x.scatter(1, T.tensor([[0, 1]]).float(), T.ones(1, 2)),
    lambda T, x: x.scatter(1, T.tensor([[0, 1]]), T.ones(1, 2).double()),
    lambda T, x: x.scatter(1, T.tensor([0, 1]), T.ones(1, 2)),
    lambda T, x: x.scatter(1, T.tensor([[0, 1]]), T.ones(2)),
    lambda T, x: x.scatter(1, T.zeros(4, 2).long(), T.ones(4, 2)),
    lambda T, x: x.scatter(1, T.zeros(2, 3).long(), T.ones(2, 2)),
    lambda T, x: x.scatter(2, T.zeros(2, 2).long(), T.ones(2, 2)),
    lambda T, x: x.scatter(1, T.zeros(4, 2).long(), 1.0),
    lambda T, x: x.scatter_add(1, T.tensor([[0, 9]]), T.ones(1, 2)),
    lambda T, x: x.scatter_add(1, T.tensor([[0, 1]]).float(), T.ones(1, 2)),
    lambda T, x: x.scatter_add(1, T.zeros(2, 3).long(), T.ones(2, 2)),
    lambda T, x: x.index_add(0, T.tensor([0, 5]), T.ones(2, 4)),
    lambda T, x: x.index_add(0, T.tensor([0, -1]), T.ones(2, 4)),
    lambda T, x: x.index_add(0, T.tensor([0, 1]), T.ones(2, 4).double()),
    lambda T, x: x.index_add(0, T.tensor([0, 1]), T.ones(3, 4)),
    lambda T, x: x.index_add(0, T.tensor([0, 1]), T.ones(2, 5)),
    lambda T, x: x.index_add(0, T.tensor([[0, 1]]), T.ones(2, 4)),
    lambda T, x: x.index_add(0, T.tensor([0.0, 1.0]), T.ones(2, 4)),
    lambda T, x: x.index_copy(0, T.tensor([0, 5]), T.ones(2, 4)),
    lambda T, x: x.index_copy(0, T.tensor([0, 1]), T.ones(2, 4).double()),
    lambda T, x: x.index_copy(0, T.tensor([0.0, 1.0]), T.ones(2, 4)),
    lambda T, x: x.index_copy(0, T.tensor([[0, 1]]), T.ones(2, 4)),
    lambda T, x: x.index_copy(0, T.tensor([0, 1]), T.ones(3, 4)),
    lambda T, x: x.index_copy(0, T.tensor([0, 1]), T.ones(2, 5)),
    lambda T, x: x.index_fill(0, T.tensor([0, 5]), 1.0),
    lambda T, x: x.index_fill(0, T.tensor([0, -4]), 1.0),
    lambda T, x: x.index_fill(0, T.tensor([0.0, 1.0]), 1.0),
    lambda T, x: x.index_fill(0, T.tensor([[0, 1]]), 1.0),
    lambda T, x: x.index_fill(0, T.tensor([0, 1]), T.tensor([1.0, 2.0])),
    lambda T, x: x.masked_select(T.tensor([1, 0, 1, 0])),
    lambda T, x: x.masked_select(T.ones(2, 4).bool()),
    lambda T, x: T.take_along_dim(x, T.tensor([[0]]).float(), 1),
    lambda T, x: T.take_along_dim(x, T.tensor([0]), 1),
    lambda T, x: T.take_along_dim(x, T.tensor([[0]]), 2),
    lambda T, x: x.expand(2, 3, 4).scatter_(2, T.zeros(2, 3, 1).long(), 1.0),
    lambda T, x: x.scatter_(1, T.tensor([[0, 1]]), x[:1, 1:3]),
]


@pytest.mark.parametrize("i", range(len(_SCATTER_BAD)))
def test_scatter_family_errors_as_torch(i):
    res = both(lambda T: caught(lambda: _SCATTER_BAD[i](T, T.zeros(3, 4))))
    assert res[0] == "E"


def test_scatter_family_nodes_and_saved_fields():
    def program(T):
        x = T.zeros(3, 4, requires_grad=True)
        s = T.ones(2, 3, requires_grad=True)
        i = T.tensor([[0, 1], [2, 0]])
        r = T.ones(2, 4, requires_grad=True)
        nodes = [x.scatter(1, i, s[:, :2]), x.scatter(1, i, 2.0), x.scatter_add(1, i, s), x.index_add(0, i[0], r),
                 x.index_add(0, i[0], r, alpha=2), x.index_copy(0, i[1], r), x.index_fill(1, i[0], 2.0),
                 x.index_fill(1, i[0], T.tensor(2.0)), x.masked_select(x > 0),
                 T.take_along_dim(x, T.tensor([[0, 1], [2, 0], [1, 1]]), 1), T.take_along_dim(x, i[0])]
        out = []
        for t in nodes:
            g = t.grad_fn
            fields = sorted(a for a in dir(g) if a.startswith("_saved_"))
            if g.name() == "GatherBackward0":  # (gather's own node: its fields are not this file's)
                out.append((g, [f[0] for f in g.next_functions]))
                continue
            out.append((g, fields, [getattr(g, a) for a in fields if a not in ("_saved_index", "_saved_mask")],
                        [f[0] for f in g.next_functions]))
        return out

    res = both(program)
    assert [r[0][1] for r in res] == [
        "ScatterBackward0", "ScatterBackward1", "ScatterAddBackward0", "IndexAddBackward0", "IndexAddBackward0",
        "IndexCopyBackward0", "IndexFillBackward0", "IndexFillBackward1", "MaskedSelectBackward0",
        "GatherBackward0", "GatherBackward0"]


def test_in_place_forms_as_torch():
    def program(T):
        out = []
        i = T.tensor([[0, 1], [2, 0]])
        for f in (lambda y: y.scatter_(1, i, T.ones(2, 2)), lambda y: y.scatter_(1, i, 3.0),
                  lambda y: y.scatter_add_(1, i, T.ones(2, 2)), lambda y: y.index_add_(0, i[0], T.ones(2, 4)),
                  lambda y: y.index_copy_(0, i[0], T.ones(2, 4)), lambda y: y.index_fill_(1, i[0], 2.0)):
            leaf = T.zeros(3, 4, requires_grad=True)
            out.append(caught(lambda: f(leaf)))  # a leaf that requires grad
            out.append(caught(lambda: f(leaf[1:])))  # a view of one
            with T.no_grad():
                y = T.arange(12.0).reshape(3, 4)
                v0 = y._version
                r = f(y)
                out += [r is y, y._version > v0, y]
            base = T.arange(12.0).reshape(3, 4).requires_grad_().clone()
            view = base[1:]
            r = f(view)
            out += [r is view, view.grad_fn, base.grad_fn, base]
            base.sum().backward()
            w = T.arange(12.0).reshape(3, 4).requires_grad_()
            z = w * 2
            p = z.exp()  # saves z's result
            f(z)
            out.append(caught(lambda: p.sum().backward()))
        return out

    both(program)


def test_in_place_source_gradient():
    def program(T):
        s = T.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        y = T.zeros(3, 4).requires_grad_().clone()
        y.scatter_(1, T.tensor([[0, 1], [2, 0]]), s * 2)
        (y * T.arange(12.0).reshape(3, 4)).sum().backward()
        return [s.grad, y.grad_fn]

    both(program)


def _dup_free(*shape, seed=3):
    return _distinct(*shape, seed=seed)


_I2 = [[0, 2], [3, 1], [1, 0]]
_SC_FNS = [
    ("scatter", lambda x, s: rgrad.scatter(x, 1, rgrad.tensor(_I2), s[:, :2])),
    ("scatter_value", lambda x, s: x.scatter(1, rgrad.tensor(_I2), 2.5) * s.sum()),
    ("scatter_add", lambda x, s: x.scatter_add(1, rgrad.tensor([[0, 0, 3], [1, 1, 1], [2, 0, 2]]), s)),
    ("index_add", lambda x, s: x.index_add(1, rgrad.tensor([3, 0, 3]), s, alpha=-1.5)),
    ("index_copy", lambda x, s: rgrad.index_copy(x, 1, rgrad.tensor([3, 0, 1]), s)),
    ("index_fill", lambda x, s: x.index_fill(1, rgrad.tensor([3, 0, 3]), -2.0) + s.sum()),
    ("index_fill_tensor", lambda x, s: x.index_fill(1, rgrad.tensor([3, 1]), s[0, 0])),
    ("masked_select", lambda x, s: x.masked_select(rgrad.tensor([[True, False, True, True]] * 3)) * s.sum()),
    ("masked_select_bc", lambda x, s: rgrad.masked_select(s[0], rgrad.tensor([[True], [False]]).expand(2, 3))),
    ("take_along_dim", lambda x, s: rgrad.take_along_dim(x, rgrad.tensor(_I2), 1) + s[:, :2]),
    ("scatter_", lambda x, s: (x * 1).scatter_(1, rgrad.tensor(_I2), s[:, :2])),
    ("index_add_", lambda x, s: (x * 1).index_add_(1, rgrad.tensor([3, 0, 3]), s)),
]


@pytest.mark.parametrize("name,f", _SC_FNS, ids=[n for n, _ in _SC_FNS])
def test_scatter_family_gradcheck_gradgradcheck_forward_ad(name, f):
    x, s = _dup_free(3, 4), _dup_free(3, 3, seed=4)
    assert gradcheck(f, (x, s), check_forward_ad=True)
    assert gradgradcheck(f, (x, s))


# The scatter-family and ordering kernels: every path, bit for bit against torch
# --------------------------------------------------------------------------------------

def _bits(program):
    """Runs ``program(T)`` on rgrad and on torch (when installed) and asserts every tensor
    it returns has torch's dtype, shape and bits; returns rgrad's tensors as arrays."""
    import importlib

    def arrays(T):
        return [np.ascontiguousarray(t.detach().numpy()) for t in program(T)]

    mine = arrays(rgrad)
    try:
        t = importlib.import_module("torch")
    except ImportError:  # pragma: no cover
        return mine
    theirs = arrays(t)
    assert len(mine) == len(theirs)
    for k, (a, b) in enumerate(zip(mine, theirs)):
        assert a.dtype == b.dtype and a.shape == b.shape, (k, a.dtype, b.dtype, a.shape, b.shape)
        assert a.tobytes() == b.tobytes(), (k, a, b)
    return mine


def _with_threads(n, f):
    before = rgrad.get_num_threads()
    rgrad.set_num_threads(n)
    try:
        return f()
    finally:
        rgrad.set_num_threads(before)


def _same_on_1_and_2_threads(program):
    one = _with_threads(1, lambda: [np.ascontiguousarray(t.detach().numpy()) for t in program(rgrad)])
    two = _with_threads(2, lambda: [np.ascontiguousarray(t.detach().numpy()) for t in program(rgrad)])
    for a, b in zip(one, two):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _data(shape, dtype, seed):
    r = np.random.default_rng(seed)
    if dtype == "bool":
        return (r.random(shape) < 0.5).tolist()
    if dtype == "int64":
        return r.integers(-(2**40), 2**40, shape).tolist()
    return (r.standard_normal(shape) * 3).tolist()


# (3, 4, 5): one piece; (40, 50, 30): 60K elements, past the pool's threshold (32K)
_SC_SHAPES = [(3, 4, 5), (40, 50, 30)]


def _scatter_program(shape, dtype, dim, view):
    """Every scatter-family op along `dim` of an input of `shape`, x / src / index as
    contiguous tensors, transposed views or offset views (`view`)."""
    xs = _data(shape, dtype, 1)
    n = shape[dim] + 3
    ishape = [max(s - 1, 1) for s in shape]
    ishape[dim] = n
    ivals = np.random.default_rng(2).integers(0, shape[dim], ishape).tolist()
    sshape = list(shape)
    sshape[dim] = n
    svals = _data(sshape, dtype, 3)
    srcs = _data(ishape, dtype, 4)
    rows = np.random.default_rng(5).integers(0, shape[dim], n).tolist()
    # (index_copy's repeated positions are written in an order torch's TensorIterator
    # leaves to its threads: a permutation for it)
    perm = np.random.default_rng(6).permutation(shape[dim]).tolist()

    def shaped(T, vals, dt):
        t = T.tensor(vals, dtype=dt)
        if view == "transposed":
            # the same values, read through a transpose of a permuted copy
            return t.permute(2, 1, 0).contiguous().permute(2, 1, 0)
        if view == "offset":
            return T.cat([T.zeros((1,) + t.shape[1:], dtype=dt), t])[1:]
        return t

    def program(T):
        dt = getattr(T, dtype)
        x = shaped(T, xs, dt)
        idx = shaped(T, ivals, T.int64)
        src = shaped(T, srcs, dt)
        source = shaped(T, svals, dt)
        r = T.tensor(rows)
        if view == "offset":
            r = T.cat([T.tensor([0]), r])[1:]
        one = T.ones((), dtype=dt)
        out = [x.scatter(dim, idx, src), x.scatter(dim, idx, one.item()),
               x.index_copy(dim, T.tensor(perm), source.narrow(dim, 0, shape[dim])), x.index_fill(dim, r, one.item()),
               x.index_fill(dim, r[:2] - shape[dim], one)]
        if dtype != "bool":
            out += [x.scatter_add(dim, idx, src), x.index_add(dim, r, source)]
        if dtype in ("float32", "float64"):
            out.append(x.index_add(dim, r, source, alpha=0.5))
        return out

    return program


@pytest.mark.parametrize("shape", _SC_SHAPES, ids=["small", "large"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("view", ["contiguous", "transposed", "offset"])
def test_scatter_family_kernels_bitwise_as_torch(shape, dtype, view):
    for dim in range(3):
        program = _scatter_program(shape, dtype, dim, view)
        _bits(program)
        _same_on_1_and_2_threads(program)


def test_scatter_family_kernels_1d_empty_and_one_element():
    def program(T):
        x = T.tensor([1.5, -2.0, 3.25, 4.0, 0.5] * 20000)  # 100K: the pool's side, one column
        i = T.tensor([3, 1, 3, 0] * 25000)
        s = T.arange(100000.0) * 0.37
        e = T.zeros(0, 4)
        return [x.scatter(0, i, s), x.scatter_add(0, i, s), x.index_add(0, i, s), x.index_copy(0, i[:5], s[:5]),
                x.index_fill(0, i, 2.0), e.scatter(1, T.zeros(0, 2).long(), e), e.index_add(0, T.zeros(0).long(), e),
                e.index_fill(1, T.tensor([1]), 3.0), T.tensor([7.0]).scatter_add(0, T.tensor([0, 0]), T.tensor([0.1, 0.2])),
                T.tensor([7.0]).index_add(0, T.tensor([0]), T.tensor([0.1])),
                T.ones(3, 1).index_copy(1, T.tensor([0]), T.full((3, 1), 2.0))]

    _bits(program)
    _same_on_1_and_2_threads(program)


def test_scatter_family_backward_kernels_bitwise_as_torch():
    # gather's and index_select's backward (scatter_add / index_add into zeros) along each
    # dim, both sides of the pool's threshold; the scatter family's own backward passes
    def program(T):
        out = []
        for shape in [(3, 4, 5), (40, 50, 30)]:
            x = T.tensor(_data(shape, "float64", 6), requires_grad=True)
            for dim in range(3):
                ishape = list(shape)
                ishape[dim] += 2
                idx = T.tensor(np.random.default_rng(dim).integers(0, shape[dim], ishape).tolist())
                rows = T.tensor(np.random.default_rng(dim + 9).integers(0, shape[dim], shape[dim] + 2).tolist())
                g = T.tensor(_data(ishape, "float64", 7))
                out += T.autograd.grad(x.gather(dim, idx), x, g)
                out += T.autograd.grad(x.index_select(dim, rows), x, g)
                small = idx[:, :, :1] if dim != 2 else idx[:, :1, :]
                out += T.autograd.grad((x * 1).scatter(dim, small, 1.0).sum(), x)
                out += T.autograd.grad((x * 1).index_fill(dim, rows, 1.0).sum(), x)
        return out

    _bits(program)
    _same_on_1_and_2_threads(program)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("shape", [(7, 9), (300, 200)], ids=["small", "large"])
def test_ordering_kernels_bitwise_as_torch(dtype, shape):
    # ties (values 0..3) and, for floats, NaNs; the large shape runs its slices on the pool
    data = _ties(17, shape, hi=3, nans=0.1 if dtype != "int64" else 0.0)
    if dtype == "int64":
        data = data.astype(np.int64)
    data = data.tolist()

    def program(T):
        x = T.tensor(data, dtype=getattr(T, dtype))
        out = []
        for v in (x, x.t(), x[1:, 1:]):  # contiguous, strided along the dim, offset
            for dim in (0, 1):
                n = v.shape[dim]
                out += list(v.sort(dim))
                out += list(v.sort(dim, descending=True))
                out += list(v.sort(dim=dim, stable=True))
                out += list(v.topk(3, dim)) + list(v.topk(n // 2, dim, largest=False))
                out += list(v.kthvalue(n // 2, dim)) + list(v.median(dim))
            out.append(v.median())
        if dtype != "int64":
            clean = x.nan_to_num(0.0)  # the same slices without NaN (the plain comparators)
            out += list(clean.sort(1)) + list(clean.median(0)) + list(clean.kthvalue(3, 1)) + [clean.median()]
            out += list(clean.topk(5, 1))
        return out

    _bits(program)
    _same_on_1_and_2_threads(program)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("n", [40, 64, 300])
def test_radix_sorted_slices_bitwise_as_torch(dtype, n):
    # distinct values (the radix sort's order is introsort's), rows with one NaN, with
    # -0.0 and 0.0 (equal: a tie), with repeated values (sorted again by introsort); a
    # slice shorter than the radix sort's minimum (64) and longer
    r = np.random.default_rng(n)
    rows = [r.permutation(n * 10)[:n] - n * 5 for _ in range(6)]
    data = np.array(rows, dtype=np.float64)
    if dtype != "int64":
        data = data * 0.37
        data[1, 3] = nan
        data[2, 4], data[2, 7] = -0.0, 0.0
        data[3, :4] = nan
    data[4, 10:20] = 5.0
    data = data.tolist()

    def program(T):
        x = T.tensor(data, dtype=getattr(T, dtype))
        out = []
        for v in (x, x.t().contiguous().t()):
            for desc in (False, True):
                out += list(v.sort(1, descending=desc)) + list(v.sort(dim=1, descending=desc, stable=True))
                out.append(v.argsort(1, descending=desc))
            out += list(v.t().sort(0)) + [v.t().msort()]
        return out

    _bits(program)
    _same_on_1_and_2_threads(program)
