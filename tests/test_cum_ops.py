"""cummax / cummin / logcumsumexp against torch: values and indices bit for bit (1-D to
3-D, negative dims, 0-d, empty, transposed and strided views, NaN / inf, ties, int64 and
bool), the return types and how they print, the nodes and their saved fields, gradients
(first and second order, forward AD, batched) and the argument errors; and 1 and 2
threads giving the same bits.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")
OPS = ["cummax", "cummin", "logcumsumexp"]


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "int64":
        return rng.integers(-5, 5, size=shape, dtype=np.int64)  # (ties)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    a = rng.standard_normal(shape)
    return a.astype(np.float32 if dtype == "float32" else np.float64)


def _same(r, t):
    assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(r.shape) == tuple(t.shape)
    assert r.numpy().tobytes() == t.detach().numpy().tobytes()


def _same_out(r, t):
    if isinstance(t, tuple):
        assert type(r).__name__ == type(t).__name__
        _same(r.values, t.values)
        _same(r.indices, t.indices)
    else:
        _same(r, t)


def _call(T, op, x, dim):
    return getattr(T, op)(x, dim)


def _dtypes(op):
    return ["float32", "float64"] if op == "logcumsumexp" else ["float32", "float64", "int64", "bool"]


SHAPES = [((5,), 0), ((5,), -1), ((3, 4), 0), ((3, 4), 1), ((3, 4), -2), ((2, 3, 4), 1), ((2, 3, 4), -1),
          ((2, 3, 4), 0), ((0,), 0), ((0, 3), 1), ((2, 0, 3), 1), ((1, 1), 0), ((300, 257), 1), ((40, 33, 700), 1)]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape,dim", SHAPES, ids=str)
def test_values_and_indices_as_torch(op, shape, dim):
    for dtype in _dtypes(op):
        a = _data(shape, dtype)
        _same_out(_call(rgrad, op, rgrad.tensor(a), dim), _call(torch, op, torch.tensor(a), dim))


@pytest.mark.parametrize("op", OPS)
def test_zero_dim_and_views(op):
    for dtype in _dtypes(op):
        a = _data((6, 5), dtype, seed=3)
        r, t = rgrad.tensor(a), torch.tensor(a)
        _same_out(_call(rgrad, op, r[0, 0], 0), _call(torch, op, t[0, 0], 0))
        _same_out(_call(rgrad, op, r[0, 0], -1), _call(torch, op, t[0, 0], -1))
        for d in (0, 1, -1):
            _same_out(_call(rgrad, op, r.t(), d), _call(torch, op, t.t(), d))
            _same_out(_call(rgrad, op, r[::2, 1::2], d), _call(torch, op, t[::2, 1::2], d))
        _same_out(_call(rgrad, op, r[:, 2], 0), _call(torch, op, t[:, 2], 0))


SPECIAL = [
    [NAN, 1.0, NAN, 2.0, 3.0],
    [1.0, NAN, 0.5, NAN, NAN],
    [1.0, 3.0, 3.0, 2.0, 3.0],
    [-INF, -INF, 0.0, INF, 1.0],
    [INF, -INF, NAN, INF, 1.0],
    [INF, INF, -INF, -INF, 0.0],
    [-INF, -INF, -INF],
    [0.0, -0.0, 0.0, -0.0],
    [1e30, -1e30, 88.0, 89.0, -200.0],
    [3.0, 3.0, 3.0],
]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("vals", SPECIAL, ids=str)
def test_nan_inf_and_ties_as_torch(op, vals):
    for dtype in ("float32", "float64"):
        a = np.array(vals, dtype=dtype)
        _same_out(_call(rgrad, op, rgrad.tensor(a), 0), _call(torch, op, torch.tensor(a), 0))
        b = np.stack([a, a[::-1]], 1)  # along an outer dim
        _same_out(_call(rgrad, op, rgrad.tensor(b), 0), _call(torch, op, torch.tensor(b), 0))


def test_logcumsumexp_close_to_torch_on_wide_ranges():
    a = np.random.default_rng(5).standard_normal((64, 300)) * 50
    for dtype in (np.float32, np.float64):
        r = rgrad.logcumsumexp(rgrad.tensor(a.astype(dtype)), 1).numpy()
        t = torch.logcumsumexp(torch.tensor(a.astype(dtype)), 1).numpy()
        assert r.tobytes() == t.tobytes()


def test_return_types_print_as_torch():
    a = np.array([[1.0, 3.0, 2.0], [NAN, 0.0, 5.0]])
    for op in ("cummax", "cummin"):
        r, t = _call(rgrad, op, rgrad.tensor(a), 1), _call(torch, op, torch.tensor(a), 1)
        assert repr(r) == repr(t).replace("torch", "rgrad")
        assert type(r).__module__ == "rgrad.return_types"
        assert type(r) is getattr(rgrad.return_types, op)
        values, indices = r
        assert values is r.values and indices is r.indices
        assert r[0] is r.values
    x = rgrad.tensor([1.0, 2.0], requires_grad=True)
    assert repr(rgrad.cummax(x, 0)) == repr(torch.cummax(torch.tensor([1.0, 2.0], requires_grad=True), 0)).replace(
        "torch", "rgrad")


def _unsigned(d):
    # (torch shows a negative dim in `_saved_dim` as its uint64 bits)
    return d - 2**64 if d >= 2**63 else d


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dim", [1, -1, 0])
def test_nodes_saved_fields_and_grads(op, dim):
    a = np.random.default_rng(7).standard_normal((3, 4))
    a[1, 2] = a[1, 1]  # a tie
    g = np.random.default_rng(8).standard_normal((3, 4))
    outs = {}
    for T in (rgrad, torch):
        x = T.tensor(a, requires_grad=True)
        y = _call(T, op, x, dim)
        v = y.values if op != "logcumsumexp" else y
        fn = v.grad_fn
        saved = sorted(n for n in dir(fn) if n.startswith("_saved_"))
        fields = {n: getattr(fn, n) for n in saved}
        gt = T.tensor(g, requires_grad=True)
        (gx,) = T.autograd.grad(v, x, gt, create_graph=True)
        # (cummax's gradient is linear in g alone: x gets none in double backward)
        ggx, ggt = T.autograd.grad((gx * gx * (v * v).sum()).sum(), (x, gt), allow_unused=True)
        outs[T.__name__] = (fn.name(), saved, _unsigned(fields["_saved_dim"]),
                            {n: f.detach().numpy().tobytes() for n, f in fields.items() if n != "_saved_dim"},
                            gx.detach().numpy(), np.stack([ggx.numpy(), ggt.numpy()]))
        if op != "logcumsumexp":
            assert not y.indices.requires_grad and y.indices.grad_fn is None
    r, t = outs["rgrad"], outs["torch"]
    assert r[:4] == t[:4]
    np.testing.assert_allclose(r[4], t[4], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(r[5], t[5], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("op", OPS)
def test_gradcheck_gradgradcheck_forward_ad(op):
    a = np.random.default_rng(11).standard_normal((3, 5))
    for dim in (0, 1, -1):
        x = rgrad.tensor(a, requires_grad=True)
        fn = (lambda x, d=dim: _call(rgrad, op, x, d)[0]) if op != "logcumsumexp" else \
            (lambda x, d=dim: rgrad.logcumsumexp(x, d))
        assert rgrad.autograd.gradcheck(fn, (x,))
        assert rgrad.autograd.gradgradcheck(fn, (x,))
        assert rgrad.autograd.gradcheck(fn, (x,), check_forward_ad=True, check_backward_ad=False)


@pytest.mark.parametrize("op", OPS)
def test_forward_ad_as_torch(op):
    a = np.random.default_rng(12).standard_normal((3, 4)) * 20
    tng = np.random.default_rng(13).standard_normal((3, 4))
    outs = []
    for T in (rgrad, torch):
        fw = T.autograd.forward_ad
        with warnings.catch_warnings(), fw.dual_level():
            warnings.simplefilter("ignore", FutureWarning)  # (torch's own jit deprecation)
            d = fw.make_dual(T.tensor(a), T.tensor(tng))
            y = _call(T, op, d, 1)
            y = y if op == "logcumsumexp" else y.values
            outs.append(fw.unpack_dual(y).tangent.numpy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("op", OPS)
def test_zero_dim_and_empty_grads(op):
    for shape in ((), (0, 3)):
        outs = []
        for T in (rgrad, torch):
            x = T.tensor(np.full(shape, 0.5), requires_grad=True)
            y = _call(T, op, x, 0)
            v = y if op == "logcumsumexp" else y.values
            v.sum().backward()
            outs.append((v.grad_fn.name(), x.grad.numpy().tobytes(), tuple(x.grad.shape)))
        assert outs[0] == outs[1]


def test_logcumsumexp_grad_with_infinities_as_torch():
    a = np.array([-INF, -INF, 0.0, 1.0])
    outs = []
    for T in (rgrad, torch):
        x = T.tensor(a, requires_grad=True)
        T.logcumsumexp(x, 0).backward(T.tensor([1.0, -2.0, 0.5, 0.0]))
        outs.append(x.grad.numpy())
    np.testing.assert_array_equal(outs[0], outs[1])


@pytest.mark.parametrize("op", OPS)
def test_batched_grads_and_vmap(op):
    a = np.random.default_rng(14).standard_normal((3, 4))
    x = rgrad.tensor(a, requires_grad=True)
    f = (lambda x: rgrad.logcumsumexp(x, 1)) if op == "logcumsumexp" else (lambda x: _call(rgrad, op, x, 1).values)
    y = f(x)
    eye = rgrad.eye(12, dtype=rgrad.float64).reshape(12, 3, 4)
    (jac,) = rgrad.autograd.grad(y, x, eye, is_grads_batched=True)
    xt = torch.tensor(a, requires_grad=True)
    ft = (lambda x: torch.logcumsumexp(x, 1)) if op == "logcumsumexp" else (lambda x: _call(torch, op, x, 1).values)
    (jt,) = torch.autograd.grad(ft(xt), xt, torch.eye(12, dtype=torch.float64).reshape(12, 3, 4),
                                is_grads_batched=True)
    np.testing.assert_allclose(jac.numpy(), jt.numpy(), rtol=1e-12, atol=1e-12)
    for dim in (0, -1):
        got = rgrad.vmap(lambda r: _call(rgrad, op, r, dim))(rgrad.tensor(a))
        want = torch.vmap(lambda r: _call(torch, op, r, dim))(torch.tensor(a))
        _same_out(got, want)
    got = rgrad.vmap(lambda r: _call(rgrad, op, r, 0))(rgrad.tensor(a[0]))  # 0-d samples
    want = torch.vmap(lambda r: _call(torch, op, r, 0))(torch.tensor(a[0]))
    _same_out(got, want)


def _err(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None


ERRORS = {
    "range": lambda T, x: T.cummax(x, 2),
    "range_neg": lambda T, x: x.cummin(dim=-3),
    "lcse_range": lambda T, x: T.logcumsumexp(x, 2),
    "0d_range": lambda T, x: T.cummax(x[0, 0], 1),
    "0d_range_min": lambda T, x: x[0, 0].cummin(-2),
    "0d_lcse_range": lambda T, x: T.logcumsumexp(x[0, 0], 1),
    "missing_fn": lambda T, x: T.cummax(x),
    "missing_method": lambda T, x: x.cummin(),
    "missing_lcse": lambda T, x: x.logcumsumexp(),
    "missing_both": lambda T, x: T.cummax(dim=0),
    "missing_kw_foo": lambda T, x: x.cummax(foo=1),
    "too_many_method": lambda T, x: x.cummax(0, 1),
    "too_many_fn": lambda T, x: T.logcumsumexp(x, 0, 1),
    "too_many3": lambda T, x: x.cummin(0, 1, 2),
    "float_dim": lambda T, x: x.cummax(1.5),
    "float_dim_fn": lambda T, x: T.cummin(x, 1.5),
    "float_dim_kw": lambda T, x: T.cummin(x, dim=1.0),
    "bool_dim": lambda T, x: x.logcumsumexp(True),
    "none_dim": lambda T, x: x.cummax(None),
    "none_dim_kw": lambda T, x: x.logcumsumexp(dim=None),
    "str_dim": lambda T, x: T.cummax(x, "a"),
    "tensor_dim": lambda T, x: x.cummax(T.tensor(1.0)),
    "input_list": lambda T, x: T.cummax([1.0], 0),
    "input_list_kw": lambda T, x: T.cummin([1.0], foo=0),
    "dup": lambda T, x: x.cummax(0, dim=0),
    "dup_fn": lambda T, x: T.cummax(x, 0, dim=0),
    "unexpected": lambda T, x: x.cummax(0, foo=1),
    "unexpected_fn": lambda T, x: T.logcumsumexp(x, dim=0, foo=1),
    "out_method": lambda T, x: x.logcumsumexp(0, out=None),
    "lcse_long": lambda T, x: T.logcumsumexp(x.long(), 0),
    "lcse_bool": lambda T, x: T.logcumsumexp(x > 0, 0),
    "missing_all_lcse": lambda T, x: T.logcumsumexp(),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_as_torch(case):
    a = np.arange(6.0).reshape(2, 3)
    got = _err(lambda: ERRORS[case](rgrad, rgrad.tensor(a)))
    want = _err(lambda: ERRORS[case](torch, torch.tensor(a)))
    assert want is not None
    assert got == (want[0], want[1].replace("torch", "rgrad"))


def test_accepted_forms_as_torch():
    a = np.array([[1.0, 3.0, 2.0], [0.0, 5.0, 4.0]])
    forms = [
        lambda T, x: T.cummax(x, dim=1),
        lambda T, x: T.cummax(input=x, dim=1),
        lambda T, x: T.cummin(x, 1, out=None),
        lambda T, x: T.logcumsumexp(x, dim=-1),
        lambda T, x: x.cummax(T.tensor(1)),
        lambda T, x: x.cummin(np.int64(0)),
    ]
    for f in forms:
        _same_out(f(rgrad, rgrad.tensor(a)), f(torch, torch.tensor(a)))


@pytest.mark.parametrize("shape", [(2048, 300), (300, 2048), (5, 300, 40), (256, 256)], ids=str)
def test_thread_counts_give_identical_bits(shape):
    a = _data(shape, "float32", seed=1)
    a[::7, ::5] = np.nan
    r = rgrad.tensor(a)
    old = rgrad.get_num_threads()
    try:
        outs = {}
        for n in (1, 2):
            rgrad.set_num_threads(n)
            outs[n] = []
            for d in range(len(shape)):
                for op in ("cummax", "cummin"):
                    v, i = _call(rgrad, op, r, d)
                    outs[n] += [v.numpy().tobytes(), i.numpy().tobytes()]
                outs[n].append(rgrad.logcumsumexp(r, d).numpy().tobytes())
        assert outs[1] == outs[2]
    finally:
        rgrad.set_num_threads(old)
