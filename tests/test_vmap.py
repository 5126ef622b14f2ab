"""rgrad.func.vmap: every op with a batching rule against the loop it stands for
(``stack([f(x[i]) for i in ...])``) over several in_dims / out_dims in float64, with no
fallback warning; the fallback (a loop, warned once per op); torch.func.vmap's errors and
messages; nested vmap; vmap with grad / vjp / jvp / jacrev / jacfwd and grad(vmap); per-sample
gradients of a 2-layer MLP against torch.func; autograd.functional.jacobian / hessian with
vectorize=True against torch; randomness against torch's draws; threads."""

from __future__ import annotations

import itertools
import re
import threading
import warnings

import numpy as np
import pytest

import rgrad
import rgrad.nn.functional as F
from rgrad.func import _batching, _vmap, grad, vmap
from rgrad.func._batched_tensor import BatchedTensor

# torch.func.jvp / jacfwd load torch's decompositions, which warn about torch.jit.script
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")

B = 4  # batch size


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


# ---------------------------------------------------------------------------------------
# The checker: vmap against the loop
# ---------------------------------------------------------------------------------------

_counter = itertools.count()


def _rand(shape, low=-1.0, high=1.0, dtype=rgrad.float64):
    """Deterministic values in [low, high) (a fresh generator per call)."""
    g = rgrad.Generator().manual_seed(1000 + next(_counter))
    return (rgrad.rand(tuple(shape), generator=g, dtype=rgrad.float64) * (high - low) + low).to(dtype)


def _batched(logical_shape, in_dim, **kw):
    """A tensor with batch size B at in_dim (None: the logical shape itself)."""
    if in_dim is None:
        return _rand(logical_shape, **kw)
    shape = list(logical_shape)
    shape.insert(in_dim if in_dim >= 0 else len(shape) + 1 + in_dim, B)
    return _rand(shape, **kw)


def _loop(f, args, in_dims, out_dims, kwargs):
    """What vmap stands for: f on each sample, outputs stacked at out_dims."""
    flat_dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
    results = []
    for b in range(B):
        sample = [a if d is None else a.select(d, b) for a, d in zip(args, flat_dims)]
        results.append(f(*sample, **kwargs))

    def stack(items, od):
        first = items[0]
        if isinstance(first, (tuple, list)):
            ods = od if isinstance(od, tuple) else (od,) * len(first)
            parts = [stack([it[i] for it in items], ods[i]) for i in range(len(first))]
            return type(first)(*parts) if hasattr(type(first), "_fields") else type(first)(parts)
        if od is None:
            return first
        return rgrad.stack(items, dim=od)

    return stack(results, out_dims)


def _assert_same(ours, expected, atol=1e-12):
    if isinstance(expected, (tuple, list)):
        assert type(ours) is type(expected) or isinstance(ours, tuple) and isinstance(expected, tuple)
        assert len(ours) == len(expected)
        for a, b in zip(ours, expected):
            _assert_same(a, b, atol)
        return
    assert type(ours) is rgrad.Tensor, f"vmap returned a {type(ours).__name__}"
    assert tuple(ours.shape) == tuple(expected.shape), (ours.shape, expected.shape)
    assert ours.dtype == expected.dtype, (ours.dtype, expected.dtype)
    a, b = np.asarray(ours.detach().tolist(), dtype=np.float64), np.asarray(expected.detach().tolist(),
                                                                             dtype=np.float64)
    # float32: a few ulps, since float32 sums add float32 blocks whose rounding depends on
    # the layout (a batched dim reduces down columns, one sample along a row)
    rtol = 4 * 2.0**-23 if expected.dtype == rgrad.float32 else 1e-10
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def check(f, *args, in_dims=0, out_dims=0, kwargs=None, fallback_ok=False):
    """vmap(f) equals the loop, with no fallback warning (every op used has a rule)."""
    kwargs = kwargs or {}
    try:
        expected = _loop(f, args, in_dims, out_dims, kwargs)
    except Exception as e:  # noqa: BLE001  (the loop's error is what vmap must raise)
        with pytest.raises(type(e)) as ours:
            vmap(f, in_dims, out_dims)(*args, **kwargs)
        assert str(ours.value) == str(e)
        return None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = vmap(f, in_dims, out_dims)(*args, **kwargs)
    perf = [w for w in caught if "performance drop" in str(w.message)]
    if not fallback_ok:
        assert not perf, f"fallback used: {[str(w.message) for w in perf]}"
    _assert_same(ours, expected)
    return ours


# ---------------------------------------------------------------------------------------
# The op table: elementwise ops come from rgrad's own op tables
# ---------------------------------------------------------------------------------------

# the domain of each unary op's input (default [-0.9, 0.9])
_UNARY_DOMAIN = {"log": (0.1, 3.0), "sqrt": (0.1, 3.0), "rsqrt": (0.1, 3.0), "acosh": (1.1, 3.0),
                 "lgamma": (0.1, 3.0), "digamma": (0.1, 3.0), "reciprocal": (0.2, 2.0)}
_UNARY_EXTRA = ["sign", "logical_not", "isnan", "isinf", "isfinite", "bool", "float", "double", "long", "int",
                "clone", "detach", "contiguous", "square", "relu", "sigmoid", "tanh"]


def _unary_cases():
    for name in (*rgrad._C._UNARY_OPS, *_UNARY_EXTRA):
        yield pytest.param(name, id=name)


@pytest.mark.parametrize("name", list(_unary_cases()))
@pytest.mark.parametrize("shape,in_dim,out_dim", [((3, 2), 0, 0), ((3, 2), 1, -1), ((3, 2), -1, 1), ((), 0, 0)])
def test_unary(name, shape, in_dim, out_dim):
    low, high = _UNARY_DOMAIN.get(name, (-0.9, 0.9))
    x = _batched(shape, in_dim, low=low, high=high)
    method = lambda t: getattr(t, name)()  # noqa: E731
    check(method, x, in_dims=in_dim, out_dims=out_dim)
    if hasattr(rgrad, name) and name in rgrad._METHOD_FUNCTIONS:
        check(lambda t: getattr(rgrad, name)(t), x, in_dims=in_dim, out_dims=out_dim)
    if f"{name}_" in rgrad.Tensor.__dict__:
        check(lambda t: getattr(t.clone(), f"{name}_")(), x, in_dims=in_dim, out_dims=out_dim)


def test_unary_rows_have_the_elementwise_rule():
    """Every row of rgrad's unary op table (and its in-place form) gets the elementwise rule."""
    for name in rgrad._C._UNARY_OPS:
        assert _batching.TABLE[name] is _batching._unary
        if f"{name}_" in rgrad.Tensor.__dict__:
            assert _batching.TABLE[f"{name}_"] is _batching._unary
    for name in rgrad._C._BINARY_OPS:
        assert _batching.TABLE[name] is _batching._broadcast


_BINARY = {
    **{name: (lambda n: lambda a, b: getattr(rgrad, n)(a, b))(name) for name in rgrad._C._BINARY_OPS},
    "add": lambda a, b: a + b, "add_alpha": lambda a, b: rgrad.add(a, b, alpha=2.0), "sub": lambda a, b: a - b,
    "rsub": lambda a, b: b.sub(a), "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
    "div_floor": lambda a, b: a.div(b, rounding_mode="floor"), "pow": lambda a, b: a.abs() ** b,
    "remainder": lambda a, b: a % b, "fmod": lambda a, b: rgrad.fmod(a, b), "floor_divide": lambda a, b: a // b,
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b, "eq_fn": lambda a, b: rgrad.eq(a, b),
    "logical_and": lambda a, b: rgrad.logical_and(a > 0, b > 0), "logical_or": lambda a, b: (a > 0).logical_or(b > 0),
    "and": lambda a, b: (a > 0) & (b > 0), "or": lambda a, b: (a > 0) | (b > 0), "xor": lambda a, b: (a > 0) ^ (b > 0),
    "where": lambda a, b: rgrad.where(a > b, a, b), "where_method": lambda a, b: a.where(a > 0, b),
    "clamp_tensors": lambda a, b: a.clamp(min=b, max=b + 0.5), "max_other": lambda a, b: a.max(b),
    "min_other": lambda a, b: rgrad.min(a, b), "masked_fill": lambda a, b: a.masked_fill(b > 0, 3.0),
    "masked_fill_tensor": lambda a, b: a.masked_fill(a > 0, b.sum()), "copy_": lambda a, b: a.clone().copy_(b),
    "add_": lambda a, b: a.clone().add_(b), "mul_": lambda a, b: a.clone().mul_(b),
    "iadd": lambda a, b: _iadd(a.clone(), b), "masked_fill_": lambda a, b: a.clone().masked_fill_(b > 0, -1.0),
    "clamp_": lambda a, b: a.clone().clamp_(min=b),
}


def _iadd(a, b):
    a += b
    return a


# (logical shape of a, logical shape of b): the rank padding cases
_BINARY_SHAPES = [((3, 2), (3, 2)), ((2,), (3, 2)), ((3, 2), ()), ((), (3, 2))]
_BINARY_DIMS = [(0, 0), (0, None), (None, 0), (1, -1)]


# writing into self (or a mask of self's size): b may not be larger than a, nor a unbatched
# (those are errors, tested by test_inplace_into_unbatched_is_an_error)
_SELF_SIZED = ("copy_", "add_", "mul_", "iadd", "masked_fill_", "clamp_", "masked_fill_tensor", "masked_fill")


def _binary_cases():
    for name in _BINARY:
        for sa, sb in _BINARY_SHAPES:
            for in_dims in _BINARY_DIMS:
                if name in _SELF_SIZED and (len(sb) > len(sa) or in_dims[0] is None):
                    continue
                yield pytest.param(name, (sa, sb), in_dims, id=f"{name}-{sa}-{sb}-{in_dims}")


@pytest.mark.parametrize("name,shapes,in_dims", list(_binary_cases()))
def test_binary(name, shapes, in_dims):
    f = _BINARY[name]
    sa, sb = shapes
    dims = tuple(d if (d is None or len(s) > 0 or d in (0, -1)) else 0 for d, s in zip(in_dims, shapes))
    a = _batched(sa, dims[0], low=0.2, high=2.0)
    b = _batched(sb, dims[1], low=-1.5, high=1.5)
    if name in ("fmod", "remainder", "floor_divide", "div_floor", "atan2"):
        b = b.abs() + 0.3
    check(f, a, b, in_dims=dims)


def test_binary_with_numbers():
    x = _batched((3, 2), 0, low=0.2, high=2.0)
    for f in (lambda t: t + 2, lambda t: 2 - t, lambda t: 3 * t, lambda t: 1 / t, lambda t: t ** 2, lambda t: 2 ** t,
              lambda t: t.pow(0.5), lambda t: t % 0.7, lambda t: 1.5 // t, lambda t: rgrad.atan2(t, t * 2),
              lambda t: rgrad.maximum(t, rgrad.tensor(1.0, dtype=rgrad.float64)), lambda t: t.clamp(0.5, 1.5),
              lambda t: t.clip(max=1.0), lambda t: -t, lambda t: abs(t), lambda t: ~(t > 1), lambda t: +t,
              lambda t: rgrad.polygamma(1, t), lambda t: t.polygamma(2), lambda t: t > 1, lambda t: 1 < t,
              lambda t: t == 1.0, lambda t: rgrad.pow(2.0, t), lambda t: rgrad.pow(t, 3), rgrad.square):
        check(f, x)


def test_type_promotion_of_batched_scalars(torch):
    """A batched 0-dim operand promotes as a 0-dim tensor (float32 [2] + batched float64 scalar: float32)."""
    a = _rand((B,), dtype=rgrad.float64)
    v = _rand((B, 2), dtype=rgrad.float32)
    out = vmap(lambda s, w: s + w)(a, v)
    ta = torch.tensor(a.tolist(), dtype=torch.float64)
    tv = torch.tensor(v.tolist(), dtype=torch.float32)
    expected = torch.func.vmap(lambda s, w: s + w)(ta, tv)
    assert out.dtype == rgrad.float32 and expected.dtype == torch.float32
    np.testing.assert_allclose(out.tolist(), expected.tolist(), rtol=0, atol=0)
    check(lambda s, w: s * w, a, v)
    check(lambda s, w: (w > s), a, v)
    check(lambda s, w: w.pow(s), a, v.abs())
    ints = rgrad.tensor([[1, 2], [3, 4], [5, 6], [7, 8]])
    check(lambda s, w: s + w, a, ints)


# ---------------------------------------------------------------------------------------
# Reductions and softmax
# ---------------------------------------------------------------------------------------

_REDUCTION_CALLS = {
    "sum": ["()", "(0)", "(-1)", "((0, 1))", "(1, keepdim=True)", "(dim=None, keepdim=True)", "(dtype=rgrad.float32)"],
    "mean": ["()", "(0)", "((0, 1), keepdim=True)", "(-1)"],
    "prod": ["()", "(0)", "(1, keepdim=True)"],
    "var": ["()", "(0)", "(1, unbiased=False)", "(correction=0)", "((0, 1))", "(dim=None, unbiased=False)"],
    "std": ["()", "(1)", "(0, keepdim=True)", "(correction=2)"],
    "norm": ["()", "(1)", "(2, 0)", "(1, 1, True)", "(p=3, dim=(0, 1))"],
    "amax": ["()", "(0)", "((0, 1))", "(1, keepdim=True)"],
    "amin": ["()", "(-1)", "((1,))"],
    "argmax": ["()", "(0)", "(1, keepdim=True)", "(dim=None, keepdim=True)"],
    "argmin": ["()", "(1)"],
    "logsumexp": ["(0)", "(1, keepdim=True)", "((0, 1))"],
    "max": ["()", "(0)", "(1, keepdim=True)"],
    "min": ["()", "(1)"],
    "all": ["()", "(0)", "(1, keepdim=True)"],
    "any": ["()", "(1)"],
    "softmax": ["(0)", "(-1)", "(1, dtype=rgrad.float32)"],
    "log_softmax": ["(0)", "(1)"],
}


def _reduction_cases():
    for name, calls in _REDUCTION_CALLS.items():
        for call in calls:
            yield pytest.param(name, call, id=f"{name}{call}")


@pytest.mark.parametrize("name,call", list(_reduction_cases()))
@pytest.mark.parametrize("in_dim", [0, 1, -1])
def test_reduction(name, call, in_dim):
    x = _batched((3, 2), in_dim)
    if name in ("all", "any"):
        x = x > 0.3
    f = eval(f"lambda t: t.{name}{call}")  # noqa: S307  (the table's calls)
    check(f, x, in_dims=in_dim)
    if name in rgrad._METHOD_FUNCTIONS and name != "norm":
        args = f", {call[1:-1]}" if call != "()" else ""
        g = eval(f"lambda t: rgrad.{name}(t{args})")  # noqa: S307
        check(g, x, in_dims=in_dim)


@pytest.mark.parametrize("name", list(_REDUCTION_CALLS))
def test_reduction_of_a_0_dim_sample(name):
    x = _rand((B,))
    if name in ("all", "any"):
        x = x > 0
    calls = ["()", "(0)", "(-1)"] if name not in ("softmax", "log_softmax", "logsumexp") else ["(0)", "(-1)"]
    for call in calls:
        check(eval(f"lambda t: t.{name}{call}"), x)  # noqa: S307


def test_softmax_functional():
    x = _batched((3, 2), 1)
    check(lambda t: F.softmax(t, dim=0), x, in_dims=1)
    check(lambda t: F.log_softmax(t, -1), x, in_dims=1)
    check(lambda t: rgrad.softmax(t, 1), x, in_dims=1)


# ---------------------------------------------------------------------------------------
# Shape ops
# ---------------------------------------------------------------------------------------

_SHAPE_OPS = {
    "view": lambda t: t.view(6), "view2": lambda t: t.view(2, 3), "view_infer": lambda t: t.view(-1, 2),
    "view_tuple": lambda t: t.view((3, 2)), "reshape": lambda t: t.reshape(2, -1), "rgrad.reshape":
        lambda t: rgrad.reshape(t, (-1,)), "flatten": lambda t: t.flatten(), "flatten01": lambda t: t.flatten(0, 1),
    "transpose": lambda t: t.transpose(0, 1), "rgrad.transpose": lambda t: rgrad.transpose(t, -1, -2),
    "t": lambda t: t.t(), "rgrad.t": lambda t: rgrad.t(t), "T": lambda t: t.T, "permute": lambda t: t.permute(1, 0),
    "rgrad.permute": lambda t: rgrad.permute(t, (1, 0)), "unsqueeze0": lambda t: t.unsqueeze(0),
    "unsqueeze-1": lambda t: t.unsqueeze(-1), "squeeze": lambda t: t.unsqueeze(1).squeeze(),
    "squeeze_dim": lambda t: t.unsqueeze(0).squeeze(0), "squeeze_noop": lambda t: t.squeeze(1),
    "expand": lambda t: t.unsqueeze(0).expand(2, 3, 2), "expand_new_dims": lambda t: t.expand(5, 3, 2),
    "expand_minus1": lambda t: t[:, :1].expand(-1, 4), "contiguous": lambda t: t.t().contiguous(),
    "select": lambda t: t.select(0, 1), "select_neg": lambda t: t.select(-1, -1), "rgrad.select":
        lambda t: rgrad.select(t, 1, 0), "narrow": lambda t: t.narrow(0, 1, 2), "rgrad.narrow":
        lambda t: rgrad.narrow(t, 1, 0, 1), "split": lambda t: t.split(2), "split_sizes": lambda t: t.split([1, 2]),
    "split_dim": lambda t: rgrad.split(t, 1, dim=1), "chunk": lambda t: t.chunk(2, 1), "rgrad.chunk":
        lambda t: rgrad.chunk(t, 3), "unbind": lambda t: t.unbind(1), "rgrad.unbind": lambda t: rgrad.unbind(t),
    "repeat": lambda t: t.repeat(2, 1), "repeat_more": lambda t: t.repeat(2, 1, 3), "clone": lambda t: t.clone(),
    "rgrad.flatten": lambda t: rgrad.flatten(t), "iter": lambda t: rgrad.stack(list(t)),
    "len": lambda t: t * len(t), "size": lambda t: t.new_zeros(t.size()) + t.size(0) + t.shape[1] + t.dim(),
}


@pytest.mark.parametrize("name", list(_SHAPE_OPS))
@pytest.mark.parametrize("in_dim,out_dim", [(0, 0), (1, 1), (-1, -1), (2, 0)])
def test_shape_op(name, in_dim, out_dim):
    x = _batched((3, 2), in_dim)
    check(_SHAPE_OPS[name], x, in_dims=in_dim, out_dims=out_dim)


def test_shape_ops_of_0_dim_samples():
    x = _rand((B,))
    for f in (lambda t: t.view(1), lambda t: t.reshape(-1), lambda t: t.flatten(), lambda t: t.unsqueeze(0),
              lambda t: t.unsqueeze(-1), lambda t: t.squeeze(), lambda t: t.squeeze(0), lambda t: t.expand(3),
              lambda t: t.t(), lambda t: t.transpose(0, -1), lambda t: t.permute(), lambda t: t.repeat(2),
              lambda t: t.view(()), lambda t: t.expand(2, 2)):
        check(f, x)


def test_view_keeps_sharing_memory():
    x = _rand((B, 3, 2))

    def f(t):
        v = t.view(6)
        v.mul_(2)
        return t

    out = vmap(f)(x.clone())
    _assert_same(out, x * 2)


def test_as_other_ops():
    x = _batched((3, 1), 0)
    y = _batched((3, 4), 1)
    check(lambda a, b: a.expand_as(b), x, y, in_dims=(0, 1))
    check(lambda a, b: b.view_as(a.expand(3, 4)).sum(1), x, y, in_dims=(0, 1))
    check(lambda a, b: b.reshape_as(b.t()), x, y, in_dims=(0, 1))
    check(lambda a, b: a.expand_as(b), _rand((3, 1)), y, in_dims=(None, 1))
    check(lambda a, b: a.type_as(b), x, y.to(rgrad.float32), in_dims=(0, 1))
    check(lambda a, b: b.to(a), x, y.to(rgrad.float32), in_dims=(0, 1))
    check(lambda a, b: a.to(rgrad.float32) + b.to(dtype=rgrad.float64), x, y, in_dims=(0, 1))
    check(lambda a: a.to("cpu").double().long().float().type(rgrad.float64), x)
    check(lambda a: a._to_dtype(rgrad.float32), x)


# ---------------------------------------------------------------------------------------
# Matrix products
# ---------------------------------------------------------------------------------------

_MATMUL_CASES = [
    # (op, logical shape a, logical shape b)
    ("mm", (3, 4), (4, 2)), ("bmm", (2, 3, 4), (2, 4, 5)), ("mv", (3, 4), (4,)), ("dot", (4,), (4,)),
    ("outer", (3,), (4,)), ("matmul", (4,), (4,)), ("matmul", (3, 4), (4,)), ("matmul", (4,), (4, 2)),
    ("matmul", (3, 4), (4, 2)), ("matmul", (2, 3, 4), (4, 5)), ("matmul", (3, 4), (2, 4, 5)),
    ("matmul", (4,), (2, 4, 5)), ("matmul", (2, 3, 4), (4,)), ("matmul", (2, 1, 3, 4), (5, 4, 2)),
    ("@", (3, 4), (4, 2)), ("@", (4,), (4, 3)),
]


@pytest.mark.parametrize("op,sa,sb", _MATMUL_CASES, ids=lambda v: str(v))
@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 0), (1, -1)], ids=str)
def test_matmul(op, sa, sb, in_dims):
    a = _batched(sa, in_dims[0])
    b = _batched(sb, in_dims[1])
    if op == "@":
        check(lambda x, y: x @ y, a, b, in_dims=in_dims)
        return
    check(lambda x, y: getattr(x, op)(y), a, b, in_dims=in_dims)
    check(lambda x, y: getattr(rgrad, op)(x, y), a, b, in_dims=in_dims)


@pytest.mark.parametrize("in_dims", list(itertools.product([0, None], repeat=3))[:-1], ids=str)
def test_addmm_and_linear(in_dims):
    bias, m1, m2 = _batched((2,), in_dims[0]), _batched((3, 4), in_dims[1]), _batched((4, 2), in_dims[2])
    check(lambda s, x, y: rgrad.addmm(s, x, y), bias, m1, m2, in_dims=in_dims)
    check(lambda s, x, y: s.addmm(x, y, beta=0.5, alpha=2.0), bias, m1, m2, in_dims=in_dims)
    x, w, b = _batched((3, 4), in_dims[0]), _batched((2, 4), in_dims[1]), _batched((2,), in_dims[2])
    check(lambda x_, w_, b_: F.linear(x_, w_, b_), x, w, b, in_dims=in_dims)
    check(lambda x_, w_, b_: F.linear(x_, w_), x, w, b, in_dims=in_dims)
    check(lambda x_, w_, b_: F.linear(x_[0], w_, bias=b_), x, w, b, in_dims=in_dims)


# ---------------------------------------------------------------------------------------
# Indexing
# ---------------------------------------------------------------------------------------

_I = rgrad.tensor([2, 0, 2])
_J = rgrad.tensor([1, 0, 1])
_M = rgrad.tensor([True, False, True])

_GETITEM = {
    "int": lambda t: t[1], "neg_int": lambda t: t[-1, 0], "slice": lambda t: t[1:], "step": lambda t: t[::2, 1:],
    "none": lambda t: t[None], "none_mid": lambda t: t[:, None], "ellipsis": lambda t: t[..., 0],
    "ellipsis_none": lambda t: t[..., None, :], "tensor": lambda t: t[_I], "tensor_dim1": lambda t: t[:, _J[:2]],
    "tensors_adjacent": lambda t: t[_I, _J], "tensors_separated": lambda t: t[_I, :, _J],
    "int_tensor": lambda t: t[0, _J], "tensor_int_tensor": lambda t: t[_I, 0, _J], "list": lambda t: t[[0, 1]],
    "mask": lambda t: t[_M], "tensor2d": lambda t: t[_I.view(3, 1)], "ellipsis_tensor": lambda t: t[..., _J],
    "bool_scalar": lambda t: t[True],
}


@pytest.mark.parametrize("name", list(_GETITEM))
@pytest.mark.parametrize("in_dim", [0, 1, -1])
def test_getitem(name, in_dim):
    x = _batched((3, 2, 2), in_dim)
    check(_GETITEM[name], x, in_dims=in_dim)


@pytest.mark.parametrize("case", ["index", "index_self_unbatched", "two_indices", "sliced_then_index",
                                  "separated", "int_then_index"])
def test_getitem_with_batched_index(case):
    x = _batched((5, 3, 2), 0)
    idx = rgrad.tensor([[0, 4], [1, 1], [3, 2], [0, 0]])
    idx2 = rgrad.tensor([[1, 0], [2, 2], [0, 1], [1, 1]])
    calls = {
        "index": (lambda t, i: t[i], (x, idx), (0, 0)),
        "index_self_unbatched": (lambda t, i: t[i], (x[0], idx), (None, 0)),
        "two_indices": (lambda t, i, j: t[i, j], (x, idx, idx2), (0, 0, 0)),
        "sliced_then_index": (lambda t, i: t[:, i], (x, idx2), (0, 0)),
        "separated": (lambda t, i, j: t[i, :, j.clamp(max=1)], (x, idx, idx2), (0, 0, 0)),
        "int_then_index": (lambda t, i: t[1, i], (x, idx2), (0, 0)),
    }
    f, args, in_dims = calls[case]
    check(f, *args, in_dims=in_dims)


def test_getitem_with_batched_mask_falls_back():
    x = _batched((3,), 0)
    mask = rgrad.tensor([[True, False, True], [False, True, True], [True, True, False], [True, False, True]])
    check(lambda t, m: t[m].sum(), x, mask, in_dims=(0, 0), fallback_ok=True)


_SETITEM = {
    "int": lambda t, v: _set(t, 1, v[0]), "slice": lambda t, v: _set(t, slice(1, None), v[1:]),
    "number": lambda t, v: _set(t, (0, 1), 5.0), "tensor_index": lambda t, v: _set(t, _J, v[:3]),
    "ellipsis": lambda t, v: _set(t, (Ellipsis, 0), v[:, 0]),
    "unbatched_value": lambda t, v: _set(t, 0, rgrad.ones(2, dtype=rgrad.float64)),
    "broadcast_value": lambda t, v: _set(t, slice(None), v[0, 0]),
}


def _set(t, key, value):
    t = t.clone()
    t[key] = value
    return t


@pytest.mark.parametrize("name", list(_SETITEM))
def test_setitem(name):
    x, v = _batched((3, 2), 1), _batched((3, 2), 0)
    check(_SETITEM[name], x, v, in_dims=(1, 0))


@pytest.mark.parametrize("in_dims", [(0, 0, 0), (0, 0, None), (0, None, 0), (1, 0, 1)], ids=str)
@pytest.mark.parametrize("case", ["index", "number", "broadcast_value", "two_indices", "sliced_then_index",
                                  "separated", "int_then_index", "ellipsis_index", "index_none"])
def test_setitem_with_batched_index_or_separated_indices(case, in_dims):
    """Index tensors batched or not (each sample's own), with values batched or not, where
    the batched selection is laid out otherwise than [B, *selection]."""
    x = _batched((5, 3, 2), in_dims[0])
    # distinct within a sample (where indices repeat, which write wins is the kernel's order)
    idx = rgrad.tensor([[0, 4], [1, 3], [3, 2], [2, 0]]) if in_dims[1] == 0 else rgrad.tensor([4, 0])

    def sel(shape):
        return _batched(shape, in_dims[2])

    calls = {
        "index": (lambda t, i, v: _set(t, i, v), sel((3, 2))),
        "number": (lambda t, i, v: _set(t, i, 7.0), sel((1,))),
        "broadcast_value": (lambda t, i, v: _set(t, (i,), v), sel((2,))),
        "two_indices": (lambda t, i, v: _set(t, (i, i.remainder(3)), v), sel((2, 2))),
        "sliced_then_index": (lambda t, i, v: _set(t, (slice(None), i.remainder(3)), v), sel((5, 2, 2))),
        "separated": (lambda t, i, v: _set(t, (i, slice(None), i.remainder(2)), v), sel((2, 3))),
        "int_then_index": (lambda t, i, v: _set(t, (1, i.remainder(3)), v), sel((2, 2))),
        "ellipsis_index": (lambda t, i, v: _set(t, (Ellipsis, i[:1].remainder(2)), v), sel((5, 3, 1))),
        "index_none": (lambda t, i, v: _set(t, (i, None), v), sel((1, 3, 2))),
    }
    f, v = calls[case]
    check(f, x, idx, v, in_dims=in_dims)


def test_setitem_batched_mask_falls_back():
    x = _batched((3,), 0)
    m = rgrad.tensor([[True, False, True], [False, False, True], [True, True, True], [False, False, False]])
    check(lambda t, k: _set(t, k, 7.0), x, m, in_dims=(0, 0), fallback_ok=True)


# index_put: name -> (indices (None: a full slice), values shape), x of shape (5, 3, 2); "i", "j", "k"
# stand for an index into dim 0, 1, 2 (batched or not), "m" for a bool mask over dim 0
_INDEX_PUT = {
    "first": (("i",), (3, 2)),
    "first_broadcast": (("i",), (1, 2)),
    "dim1": ((None, "j"), (2, 2)),
    "dims12": ((None, "j", "k"), (2,)),
    "dims01": (("i", "j"), (2, 2)),
    "separated": (("i", None, "k"), (2, 3)),
    "separated_number": (("i", None, "k"), ()),
    "mask": (("m",), (2,)),
    "mask_then_index": (("m", "j"), (2, 2)),
}


def _put_indices(spec, batched, accumulate):
    """The indices of a spec: each sample's own when batched (duplicates within a sample only
    where they accumulate: otherwise which write wins is the kernel's order)."""
    rows = {"i": ([[0, 0], [1, 4], [3, 3], [2, 4]] if accumulate else [[0, 4], [1, 3], [3, 2], [4, 0]], [2, 0]),
            "j": ([[0, 0], [2, 1], [1, 1], [0, 2]] if accumulate else [[0, 2], [2, 1], [1, 0], [0, 1]], [1, 2]),
            "k": ([[1, 1], [0, 1], [0, 0], [1, 0]] if accumulate else [[1, 0], [0, 1], [0, 1], [1, 0]], [1, 0])}
    out = []
    for name in spec:
        if name is None:
            out.append(None)
        elif name == "m":
            out.append(rgrad.tensor([True, False, True, False, False]))
        else:
            per_sample, one = rows[name]
            out.append(rgrad.tensor(per_sample if batched else one))
    return out


_PUT_IN_DIMS = [(0, None, 0), (0, None, None), (None, None, 0), (0, 0, 0), (0, 0, None), (None, 0, None), (1, 0, -1)]
# (a spec whose only index is a mask has no index to batch: a batched mask loops, see
# test_fallback_loops_and_warns_once_per_op)
_PUT_CASES = [(name, d) for name in _INDEX_PUT for d in _PUT_IN_DIMS
              if d[1] is None or any(n not in (None, "m") for n in _INDEX_PUT[name][0])]


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("name,in_dims", _PUT_CASES, ids=str)
def test_index_put(name, in_dims, accumulate):
    """index_put (out of place, and in place into a batched clone) with each of self, the
    index tensors and the values batched or not, against the loop."""
    spec, vshape = _INDEX_PUT[name]
    idx_dims = tuple(in_dims[1] if n != "m" else None for n in spec if n is not None)
    x = _batched((5, 3, 2), in_dims[0])
    tensors = [t for t in _put_indices(spec, in_dims[1] is not None, accumulate) if t is not None]
    values = _batched(vshape, in_dims[2])
    positions = [k for k, n in enumerate(spec) if n is not None]

    def indices(ts):
        out = [None] * len(spec)
        for k, t in zip(positions, ts):
            out[k] = t
        return tuple(out)

    dims = (in_dims[0], in_dims[2], *idx_dims)
    check(lambda t, v, *ts: t.index_put(indices(ts), v, accumulate=accumulate), x, values, *tensors,
          in_dims=dims)
    check(lambda t, v, *ts: (t * 2).index_put(indices(ts), v.exp(), accumulate), x, values, *tensors,
          in_dims=dims)
    if in_dims[0] is not None:
        check(lambda t, v, *ts: t.clone().index_put_(indices(ts), v, accumulate), x, values, *tensors,
              in_dims=dims)


def test_index_put_errors_are_the_samples():
    """A batched index out of range in one sample, values that do not broadcast, a dtype
    mismatch: each sample's error (torch's message), with nothing written."""
    x = _batched((3, 2), 0)
    bad = rgrad.tensor([[0], [1], [3], [2]])
    check(lambda t, i: t.index_put((i,), t[0]), x, bad, in_dims=(0, 0))
    check(lambda t, i: t.clone().index_put_((None, i), t[0, 0]), x, rgrad.tensor([[0], [1], [-3], [1]]),
          in_dims=(0, 0))
    check(lambda t: t.index_put((rgrad.tensor([0, 1]),), t[:, 0]), x)
    check(lambda t: t.index_put((rgrad.tensor([0, 1]),), t.float()[0]), x)
    y = x.clone()
    with pytest.raises(IndexError):
        vmap(lambda t, i: t.index_put_((i,), t[0] * 0))(y, bad)
    _assert_same(y, x)


def test_index_put_refuses_what_the_op_refuses():
    """A list of indices or a number as values: the op's TypeError, as the loop's, with
    no fallback warning."""
    x = _batched((3, 2), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(lambda t: t.index_put((rgrad.tensor([1]),), 1.0), x)
        check(lambda t: t.index_put([rgrad.tensor([1])], t[0]), x)
        check(lambda t: t.clone().index_put_((rgrad.tensor([1]), 0), t[0, 0]), x)


def test_index_put_into_an_unbatched_tensor_is_torchs_error(torch):
    def run(lib):
        x = lib.zeros(3, dtype=lib.float64)
        try:
            lib.func.vmap(lambda v: x.index_put_((lib.tensor([1]),), v))(lib.ones(4, 1, dtype=lib.float64))
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)
        return None

    assert run(rgrad) == run(torch)


@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 0)], ids=str)
def test_gather_and_index_select(in_dims):
    x = _batched((3, 4), in_dims[0])
    g_index = rgrad.tensor([[0, 3, 1], [2, 2, 0], [1, 0, 0]])
    # a batched index: each sample its own
    gi = rgrad.stack([(g_index + k).remainder(3) for k in range(B)]) if in_dims[1] == 0 else g_index
    check(lambda t, i: t.gather(1, i), x, gi, in_dims=in_dims)
    check(lambda t, i: rgrad.gather(t, 0, i[:, :3].clamp(max=2)), x, gi, in_dims=in_dims)
    s_index = rgrad.tensor([3, 0, 3, 1])
    si = rgrad.tensor([[3, 0, 3, 1], [0, 0, 1, 2], [2, 1, 0, 0], [1, 1, 1, 3]]) if in_dims[1] == 0 else s_index
    check(lambda t, i: t.index_select(1, i), x, si, in_dims=in_dims)
    check(lambda t, i: rgrad.index_select(t, 0, i.clamp(max=2)), x, si, in_dims=in_dims)
    check(lambda t, i: t.index_select(-1, i[0]), x, si, in_dims=in_dims)


# ---------------------------------------------------------------------------------------
# cat / stack, factories, casts, losses
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 0), (1, 0)], ids=str)
def test_cat_stack(in_dims):
    a, b = _batched((3, 2), in_dims[0]), _batched((3, 2), in_dims[1])
    check(lambda x, y: rgrad.cat([x, y]), a, b, in_dims=in_dims)
    check(lambda x, y: rgrad.cat((x, y, x), dim=-1), a, b, in_dims=in_dims)
    check(lambda x, y: rgrad.concat([x, y], 1), a, b, in_dims=in_dims)
    check(lambda x, y: rgrad.stack([x, y]), a, b, in_dims=in_dims)
    check(lambda x, y: rgrad.stack([x, y], dim=-1), a, b, in_dims=in_dims)
    check(lambda x, y: rgrad.stack((x, y), 1), a, b, in_dims=in_dims)
    check(lambda x, y: rgrad.cat([x, rgrad.zeros(0, dtype=rgrad.float64), y]), a, b, in_dims=in_dims)


def test_like_factories():
    x = _batched((3, 2), 1)
    check(lambda t: rgrad.zeros_like(t) + t, x, in_dims=1)
    check(lambda t: rgrad.ones_like(t, dtype=rgrad.float32), x, in_dims=1)
    check(lambda t: rgrad.full_like(t, 2.5) * t, x, in_dims=1)
    check(lambda t: rgrad.zeros_like(t).add_(t), x, in_dims=1)  # the result is batched (in-place into it works)
    check(lambda t: t.new_zeros(2) + t, x, in_dims=1)
    check(lambda t: t.new_ones((3, 2)) * t + t.new_tensor([1.0, 2.0]), x, in_dims=1)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 0)], ids=str)
def test_class_losses(reduction, loss, in_dims):
    def fn(*args, **kwargs):
        return getattr(F, loss)(*args, **kwargs)  # F.<loss> looked up inside vmap (see _vmap's docstring)

    logits = _batched((3, 5), in_dims[0])
    if loss == "nll_loss":
        logits = logits.log_softmax(-1)
    targets = rgrad.tensor([[0, 4, 1], [2, 2, 3], [4, 0, 0], [1, 3, 2]]) if in_dims[1] == 0 else rgrad.tensor([1, 0, 4])
    check(lambda x, t: fn(x, t, reduction=reduction), logits, targets, in_dims=in_dims)
    check(lambda x, t: fn(x[0], t[0], reduction=reduction), logits, targets, in_dims=in_dims)
    check(lambda x, t: fn(x, t, reduction=reduction, ignore_index=0), logits, targets, in_dims=in_dims)
    check(lambda x, t: fn(x[1:], t[1:], reduction=reduction, ignore_index=0), logits, targets, in_dims=in_dims)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 0)], ids=str)
def test_mse_loss(reduction, in_dims):
    x, y = _batched((3, 2), in_dims[0]), _batched((3, 2), in_dims[1])
    check(lambda a, b: F.mse_loss(a, b, reduction=reduction), x, y, in_dims=in_dims)
    check(lambda a, b: F.mse_loss(a[0, 0], b[0, 0], reduction=reduction), x, y, in_dims=in_dims)


def test_activations():
    x = _batched((3, 2), 1)
    check(lambda t: F.relu(t) + F.sigmoid(t) + F.tanh(t), x, in_dims=1)
    check(lambda t: F.relu(t.clone(), inplace=True), x, in_dims=1)


# ---------------------------------------------------------------------------------------
# In-place ops
# ---------------------------------------------------------------------------------------

def test_inplace_into_batched():
    x, y = _batched((3, 2), 0), _batched((3, 2), 1)

    def f(a, b):
        a = a.clone()
        a.add_(b).mul_(2).sub_(b, alpha=0.5).div_(3)
        a.copy_(a * b)
        a.masked_fill_(a > 0, 0.25)
        a.clamp_(max=0.2)
        a.exp_()
        a[0] = b[1]
        a[1, 0] += 1.0
        a += b
        a *= 2
        a -= 1
        a /= 4
        return a

    check(f, x, y, in_dims=(0, 1))
    check(lambda a: a.clone().zero_(), x)
    check(lambda a: a.clone().fill_(3.0), x)
    check(lambda a, b: a.clone().fill_(b[0, 0]), x, y, in_dims=(0, 1))
    check(lambda a, b: a.clone().masked_fill_(a > 0, b.sum()), x, y, in_dims=(0, 1))
    check(lambda a, b: a.clone().add_(b[0]), x, _rand((3, 2)), in_dims=(0, None))


def test_inplace_returns_self():
    def f(t):
        c = t.clone()
        assert c.add_(1) is c and c.exp_() is c and c.zero_() is c
        return c

    check(f, _batched((3,), 0))


@pytest.mark.parametrize("op", ["add_", "mul_", "copy_", "setitem", "fill_", "masked_fill_", "iadd", "sub_",
                                "atan2_", "clamp_"])
def test_inplace_into_unbatched_is_an_error(op, torch):
    def program(lib, t, u):
        u = u.clone()
        if op == "setitem":
            u[0] = t[0]
        elif op == "fill_":
            u.fill_(t.sum())
        elif op == "masked_fill_":
            u.masked_fill_(u > 0, t.sum())
        elif op == "iadd":
            u += t
        elif op == "clamp_":
            u.clamp_(min=t)
        else:
            getattr(u, op)(t)
        return u

    x, y = _rand((3, 2)), _rand((2,))
    with pytest.raises(RuntimeError) as ours:
        vmap(lambda t, u: program(rgrad, t, u), in_dims=(0, None))(x, y)
    tx, ty = torch.tensor(x.tolist()), torch.tensor(y.tolist())
    what = {"fill_": "fill_", "masked_fill_": "masked_fill_", "atan2_": "aten::atan2_",
            "clamp_": "aten::clamp_"}.get(op, "inplace arithmetic")
    assert str(ours.value).startswith(f"vmap: {what}(self, *extra_args) is not possible because there exists a "
                                      "Tensor `other` in extra_args that has more elements than `self`.")
    if op in ("mul_", "copy_", "setitem", "fill_", "masked_fill_", "sub_"):
        with pytest.raises(RuntimeError) as theirs:
            torch.func.vmap(lambda t, u: program(torch, t, u), in_dims=(0, None))(tx, ty)
        assert str(ours.value) == str(theirs.value)


# ---------------------------------------------------------------------------------------
# Every rule is exercised above
# ---------------------------------------------------------------------------------------

def test_every_rule_is_tested():
    """The names in the rule table are all called by the tests of this file (a table row
    without a test fails here)."""
    import inspect
    import sys

    source = inspect.getsource(sys.modules[__name__])
    untested = []
    for name in _batching.TABLE:
        if name in _batching.RANDOM_OPS:
            continue
        bare = name.strip("_")
        dunder_ops = {"__add__": "+", "__radd__": "+", "__sub__": "-", "__rsub__": "-", "__mul__": "*",
                      "__rmul__": "*", "__truediv__": "/", "__rtruediv__": "/", "__floordiv__": "//",
                      "__rfloordiv__": "//", "__mod__": "%", "__rmod__": "%", "__pow__": "**", "__rpow__": "**",
                      "__and__": "&", "__rand__": "&", "__or__": "|", "__ror__": "|", "__xor__": "^",
                      "__rxor__": "^", "__eq__": "==", "__ne__": "!=", "__lt__": "<", "__le__": "<=",
                      "__gt__": ">", "__ge__": ">=", "__neg__": "-t", "__abs__": "abs(", "__invert__": "~",
                      "__pos__": "+t", "__matmul__": "@", "__rmatmul__": "@", "__getitem__": "t[",
                      "__setitem__": "t[key] = value", "__iadd__": "+=", "__isub__": "-=", "__imul__": "*=",
                      "__itruediv__": "/=", "__ipow__": "**="}
        if name in dunder_ops:
            if dunder_ops[name] not in source:
                untested.append(name)
        elif name in rgrad._C._UNARY_OPS or name.rstrip("_") in rgrad._C._UNARY_OPS:
            continue  # test_unary runs every row and its in-place form
        elif name in rgrad._C._BINARY_OPS or name.rstrip("_") in rgrad._C._BINARY_OPS:
            continue  # test_binary runs every row
        elif (f".{bare}(" not in source and f".{name}(" not in source and f"rgrad.{bare}" not in source
              and f'"{name}"' not in source):
            untested.append(name)
    assert not untested, untested


# ---------------------------------------------------------------------------------------
# The fallback
# ---------------------------------------------------------------------------------------

def test_fallback_loops_and_warns_once_per_op(monkeypatch):
    monkeypatch.setattr("rgrad.func._batched_tensor._warned", set())
    x = _batched((3, 2), 0)
    f = lambda t: t.index_put((t > 0,), t[0, 0] * 2)  # noqa: E731  (index_put by a batched mask loops)
    with pytest.warns(UserWarning) as record:
        out = vmap(f)(x)
    msgs = [str(w.message) for w in record]
    assert msgs == ["There is a performance drop because we have not yet implemented the batching rule for "
                    "aten::index_put. Please file us an issue on GitHub so that we can prioritize its "
                    "implementation."]
    _assert_same(out, _loop(f, (x,), 0, 0, {}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not again for the same op
        _assert_same(vmap(f)(x), out)
    # in-place fallback writes each sample's slice of the physical tensor
    g = lambda t: t.clone().index_put_((t < 0,), t[1, 1])  # noqa: E731
    with pytest.warns(UserWarning, match="aten::index_put_"):
        out = vmap(g, in_dims=1)(x.transpose(0, 1).clone())
    _assert_same(out, _loop(g, (x.transpose(0, 1).clone(),), 1, 0, {}))


def test_fallback_for_an_op_of_several_batched_args(monkeypatch):
    monkeypatch.setattr("rgrad.func._batched_tensor._warned", set())
    x, v = _batched((3, 2), 0), _batched((), 0)
    f = lambda t, w: t.index_put((t > 0,), w)  # noqa: E731
    with pytest.warns(UserWarning, match="aten::index_put"):
        out = vmap(f)(x, v)
    _assert_same(out, _loop(f, (x, v), 0, 0, {}))


# ---------------------------------------------------------------------------------------
# vmap's API: in_dims / out_dims pytrees, kwargs, chunk_size, nesting, outputs
# ---------------------------------------------------------------------------------------

def test_exported_as_torch_vmap():
    assert rgrad.vmap is rgrad.func.vmap and "vmap" in rgrad.__all__ and "vmap" in rgrad.func.__all__


def test_in_dims_pytrees_and_kwargs():
    x, y = _batched((3,), 0), _batched((3,), 1)
    d = {"a": x, "b": [y, _rand((3,))]}
    out = vmap(lambda t, s=2.0: t["a"] * s + t["b"][0] - t["b"][1], in_dims=({"a": 0, "b": [1, None]},))(d, s=3.0)
    expected = rgrad.stack([x[i] * 3.0 + y[:, i] - d["b"][1] for i in range(B)])
    _assert_same(out, expected)
    # kwargs are not mapped: a tensor kwarg is passed whole
    out = vmap(lambda t, scale: t * scale)(x, scale=_rand((B, 1)))
    assert tuple(out.shape) == (B, B, 3)
    out = vmap(lambda t, n: t.sum() * n, in_dims=(0, None))(x, 2)
    _assert_same(out, x.sum(1) * 2)


def test_out_dims_pytrees_and_unbatched_outputs():
    x = _batched((3, 2), 0)
    a, b = vmap(lambda t: (t, t.sum(0)), out_dims=(1, 0))(x)
    _assert_same(a, x.transpose(0, 1))
    _assert_same(b, x.sum(1))
    out = vmap(lambda t: {"u": t, "v": [t * 2]}, out_dims={"u": -1, "v": [0]})(x)
    _assert_same(out["u"], x.permute(1, 2, 0))
    _assert_same(out["v"][0], x * 2)
    # an output that does not depend on the batch is expanded (a stride-0 view)
    c = rgrad.ones(2, dtype=rgrad.float64)
    out = vmap(lambda t: c)(x)
    assert tuple(out.shape) == (B, 2) and out.stride() == (0, 1)
    out = vmap(lambda t: c, out_dims=1)(x)
    assert tuple(out.shape) == (2, B) and out.stride() == (1, 0)
    # out_dims=None: the unbatched value itself
    out, n = vmap(lambda t: (t * 2, c), out_dims=(0, None))(x)
    assert n is c
    _assert_same(out, x * 2)
    # a 0-d output
    _assert_same(vmap(lambda t: t.sum())(x), x.sum((1, 2)))


def test_chunk_size():
    x = _batched((3,), 0)
    y = rgrad.arange(B * 2, dtype=rgrad.float64).view(B, 2)
    for chunk in (1, 2, 3, 4, 10):
        out = vmap(lambda t, s: (t * s.sum(), s), chunk_size=chunk, out_dims=(0, 1))(x, y)
        _assert_same(out[0], x * y.sum(1, keepdim=True))
        _assert_same(out[1], y.t())


def test_chunk_size_same_randomness_matches_one_chunk():
    x = _batched((3,), 0)
    rgrad.manual_seed(3)
    whole = vmap(lambda t: t + rgrad.rand(3, dtype=rgrad.float64), randomness="same")(x)
    rgrad.manual_seed(3)
    chunked = vmap(lambda t: t + rgrad.rand(3, dtype=rgrad.float64), randomness="same", chunk_size=3)(x)
    _assert_same(chunked, whole)


def test_batch_of_size_zero():
    x = rgrad.zeros(0, 3, dtype=rgrad.float64)
    _assert_same(vmap(lambda t: t * 2 + 1)(x), x)
    assert tuple(vmap(lambda t: t.sum())(x).shape) == (0,)
    assert tuple(vmap(lambda t: t.view(3, 1) @ t.view(1, 3))(x).shape) == (0, 3, 3)


def test_nested_vmap():
    x = _rand((2, 3, 4))
    y = _rand((3, 4))
    out = vmap(vmap(lambda a, b: (a * b).sum() + a.dot(b)))(x, y.expand(2, 3, 4))
    expected = rgrad.stack([rgrad.stack([(x[i, j] * y[j]).sum() + x[i, j].dot(y[j]) for j in range(3)])
                            for i in range(2)])
    _assert_same(out, expected)
    # the inner vmap maps a dim of the outer's logical tensor, and an input of the outer level only
    out = vmap(lambda a: vmap(lambda row, col: row * col.sum(), in_dims=(1, None))(a, a))(x)
    expected = rgrad.stack([rgrad.stack([x[i][:, k] * x[i].sum() for k in range(4)]) for i in range(2)])
    _assert_same(out, expected)
    # levels mixed in one op: an outer-level tensor is unbatched at the inner level
    out = vmap(lambda a: vmap(lambda b: a.matmul(b))(y))(x)
    expected = rgrad.stack([rgrad.stack([x[i].matmul(y[j]) for j in range(3)]) for i in range(2)])
    _assert_same(out, expected)
    # out_dims at both levels, in-place into an outer-level tensor from the inner level
    out = vmap(vmap(lambda a: a.clone().mul_(2), out_dims=1), in_dims=1, out_dims=2)(x)
    _assert_same(out, (x * 2).permute(2, 0, 1))


def test_nested_repr():
    seen = []
    vmap(vmap(lambda t: seen.append(repr(t)) or t))(rgrad.ones(2, 3, 1))
    assert seen[0] == (
        "BatchedTensor(lvl=2, bdim=0, value=\n"
        "    BatchedTensor(lvl=1, bdim=0, value=\n"
        "        tensor([[[1.],\n"
        "                 [1.],\n"
        "                 [1.]],\n"
        "\n"
        "                [[1.],\n"
        "                 [1.],\n"
        "                 [1.]]])\n"
        "    )\n"
        ")"
    )


def test_batched_tensor_metadata(torch):
    def program(lib, t):
        out = [t.shape, t.size(), t.size(-1), t.dim(), t.ndim, t.numel(), len(t), t.dtype, t.is_floating_point(),
               t.stride(), t.is_contiguous(), t.t().is_contiguous(), t.element_size(), t.T.shape,
               isinstance(t, lib.Tensor), lib.is_tensor(t), t.new_zeros(2).shape, t.device.type]
        return [str(o).replace(lib.__name__, "LIB") for o in out]

    x = _rand((B, 3, 2))
    seen = {}
    vmap(lambda t: seen.setdefault("rgrad", program(rgrad, t)) and t)(x)
    torch.func.vmap(lambda t: seen.setdefault("torch", program(torch, t)) and t)(
        torch.tensor(x.tolist(), dtype=torch.float64))
    assert seen["rgrad"] == seen["torch"]
    # type() stays BatchedTensor: no native method computes on it as a plain tensor
    vmap(lambda t: seen.setdefault("type", type(t)) and t)(x)
    assert seen["type"] is BatchedTensor


_ERROR_PROGRAMS = {
    "item": lambda lib, x: lib.func.vmap(lambda t: t.sum().item())(x),
    "float": lambda lib, x: lib.func.vmap(lambda t: float(t.sum()))(x),
    "int": lambda lib, x: lib.func.vmap(lambda t: int(t.sum()))(x),
    "bool": lambda lib, x: lib.func.vmap(lambda t: bool(t.sum() > 0))(x),
    "if": lambda lib, x: lib.func.vmap(lambda t: t if t.sum() > 0 else -t)(x),
    "tolist": lambda lib, x: lib.func.vmap(lambda t: t.tolist())(x),
    "numpy": lambda lib, x: lib.func.vmap(lambda t: t.numpy())(x),
    "non_tensor_output": lambda lib, x: lib.func.vmap(lambda t: 3)(x),
    "no_inputs": lambda lib, x: lib.func.vmap(lambda: 3)(),
    "non_tensor_input": lambda lib, x: lib.func.vmap(lambda t: t)(3),
    "sizes": lambda lib, x: lib.func.vmap(lambda t, u: t + u)(x, lib.ones(5, 2, dtype=x.dtype)),
    "no_batched": lambda lib, x: lib.func.vmap(lambda t: t, in_dims=(None,))(x),
    "in_dim_range": lambda lib, x: lib.func.vmap(lambda t: t, in_dims=2)(x),
    "in_dims_structure": lambda lib, x: lib.func.vmap(lambda t: t, in_dims=(0, 0))(x),
    "in_dims_type": lambda lib, x: lib.func.vmap(lambda t: t, in_dims=1.0)(x),
    "in_dims_none": lambda lib, x: lib.func.vmap(lambda t: t, in_dims=None)(x),
    "in_dim_leaf_type": lambda lib, x: lib.func.vmap(lambda t: t, in_dims=(1.0,))(x),
    "in_dims_dict": lambda lib, x: lib.func.vmap(lambda d: d["a"], in_dims=({"b": 0},))({"a": x}),
    "out_dim_range": lambda lib, x: lib.func.vmap(lambda t: t, out_dims=3)(x),
    "out_dims_structure": lambda lib, x: lib.func.vmap(lambda t: t, out_dims=(0, 0))(x),
    "out_dims_structure2": lambda lib, x: lib.func.vmap(lambda t: (t, t), out_dims=(0, 0, 0))(x),
    "out_dims_type": lambda lib, x: lib.func.vmap(lambda t: t, out_dims=1.0)(x),
    "out_dims_leaf_type": lambda lib, x: lib.func.vmap(lambda t: (t, t), out_dims=(0, 1.0))(x),
    "out_dims_none_batched": lambda lib, x: lib.func.vmap(lambda t: t, out_dims=None)(x),
    "randomness": lambda lib, x: lib.func.vmap(lambda t: t, randomness="foo"),
    "chunk_size": lambda lib, x: lib.func.vmap(lambda t: t, chunk_size=0),
    "random_error_mode": lambda lib, x: lib.func.vmap(lambda t: t + lib.rand(2))(x),
    "random_like_error_mode": lambda lib, x: lib.func.vmap(lambda t: lib.randn_like(t))(x),
    "random_inplace_error_mode": lambda lib, x: lib.func.vmap(lambda t: t.clone().normal_())(x),
    "bernoulli_same": lambda lib, x: lib.func.vmap(lambda t: lib.bernoulli(t.sigmoid()), randomness="same")(x),
    "normal_same": lambda lib, x: lib.func.vmap(lambda t: lib.normal(t, 1.0), randomness="same")(x),
    "inplace_different_unbatched": lambda lib, x: lib.func.vmap(
        lambda t: lib.zeros(2).normal_() + t, randomness="different")(x),
    "backward": lambda lib, x: lib.func.vmap(lambda t: (t * 2).sum().backward())(x),
    "matmul_0d": lambda lib, x: lib.func.vmap(lambda t: t.sum() @ t)(x),
    "mm_1d": lambda lib, x: lib.func.vmap(lambda t: lib.mm(t, t))(x),
    "dot_2d": lambda lib, x: lib.func.vmap(lambda t: t.unsqueeze(0).dot(t))(x),
    "view_two_infer": lambda lib, x: lib.func.vmap(lambda t: t.view(-1, -1))(x),
    "sum_dim": lambda lib, x: lib.func.vmap(lambda t: t.sum(2))(x),
    "unsqueeze_dim": lambda lib, x: lib.func.vmap(lambda t: t.unsqueeze(3))(x),
    "expand_sizes": lambda lib, x: lib.func.vmap(lambda t: t.unsqueeze(0).expand(3))(x),
    "t_3d": lambda lib, x: lib.func.vmap(lambda t: t.view(1, 1, 2).t())(x),
    "transpose_dim": lambda lib, x: lib.func.vmap(lambda t: t.transpose(0, 2))(x),
}


@pytest.mark.parametrize("name", list(_ERROR_PROGRAMS))
def test_errors_match_torch(torch, name):
    """The same program raises the same error (type and text) under rgrad.func.vmap and torch.func.vmap."""
    def run(lib):
        x = lib.tensor([[0.5, -1.0], [2.0, 0.3], [1.5, 0.2]], dtype=lib.float32)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _ERROR_PROGRAMS[name](lib, x)
        except Exception as e:  # noqa: BLE001  (the error is the result)
            return type(e).__name__, re.sub(rf"\b{lib.__name__}\.", "LIB.", str(e))
        return "no error"

    ours, theirs = run(rgrad), run(torch)
    assert theirs != "no error"
    assert ours == theirs


def test_shape_errors_name_the_logical_shapes():
    """Where torch's batching rules report physical shapes (the batch dim included), rgrad
    reports what the loop reports: the shapes the function sees."""
    x = _batched((2,), 0)
    for f in (lambda t: t.view(3), lambda t: t.select(0, 5), lambda t: t.unsqueeze(0).permute(1),
              lambda t: rgrad.stack([t, t[:1]]), lambda t: t.expand(3), lambda t: t.narrow(0, 1, 5),
              lambda t: t.reshape(4, -1), lambda t: t @ rgrad.ones(3, dtype=rgrad.float64),
              lambda t: rgrad.cat([t, rgrad.ones(2, 2, dtype=rgrad.float64)])):
        with pytest.raises((RuntimeError, IndexError)) as ours:
            vmap(f)(x)
        with pytest.raises(type(ours.value)) as loop:
            f(x[0])
        assert str(ours.value) == str(loop.value)


def test_function_form_taken_before_vmap_is_a_clear_error():
    """rgrad.exp is Tensor.exp (a method descriptor): a reference taken before vmap started
    refuses a BatchedTensor with a TypeError, never a wrong number."""
    exp = rgrad.exp
    mse = F.mse_loss  # a Python function: looks up its native part at call time, so it works
    x = _batched((3,), 0)
    with pytest.raises(TypeError, match="BatchedTensor"):
        vmap(lambda t: exp(t))(x)
    _assert_same(vmap(lambda t: rgrad.exp(t))(x), x.exp())
    _assert_same(vmap(lambda t: mse(t, t * 2))(x), ((x - 2 * x) ** 2).mean(1))


def test_function_forms_are_restored_after_vmap():
    """Nothing stays swapped once no vmap runs: rgrad.exp is Tensor.exp again (zero cost)."""
    names = [*rgrad._METHOD_FUNCTIONS, *rgrad._BINARY_FUNCTIONS, "cat", "stack", "where", "zeros_like", "rand"]
    before = {n: getattr(rgrad, n) for n in names}
    tensor_before = dict(rgrad.Tensor.__dict__)
    linear = F.linear

    def inside(t):
        assert rgrad.exp is not rgrad.Tensor.exp  # swapped while running
        return t.exp()

    vmap(inside)(_batched((3,), 0))
    with pytest.raises(ValueError):
        vmap(lambda t: 3)(_batched((3,), 0))  # restored after an error too
    assert {n: getattr(rgrad, n) for n in names} == before
    assert rgrad.exp is rgrad.Tensor.exp
    assert dict(rgrad.Tensor.__dict__) == tensor_before
    assert F.linear is linear
    assert rgrad.autograd._vmap_support is None
    assert not _vmap.is_active()


# ---------------------------------------------------------------------------------------
# Randomness (torch's draws, bit for bit: rgrad's generator is torch's)
# ---------------------------------------------------------------------------------------

_RANDOM_PROGRAMS = {
    "rand": lambda lib, t: t + lib.rand(2, dtype=t.dtype),
    "randn": lambda lib, t: t * lib.randn(2, dtype=t.dtype),
    "rand_like": lambda lib, t: lib.rand_like(t),
    "randn_like": lambda lib, t: lib.randn_like(t) + t,
    "randint": lambda lib, t: lib.randint(0, 10, (2,)) + t,
    "normal_": lambda lib, t: t.clone().normal_(),
    "uniform_": lambda lib, t: t.clone().uniform_(-1, 1),
    "bernoulli": lambda lib, t: lib.bernoulli(t.sigmoid()),
    "normal_tensor": lambda lib, t: lib.normal(t, 0.5),
}


@pytest.mark.parametrize("randomness", ["same", "different"])
@pytest.mark.parametrize("name", list(_RANDOM_PROGRAMS))
def test_randomness_matches_torch(torch, name, randomness):
    def run(lib):
        lib.manual_seed(7)
        x = lib.tensor([[0.5, -1.0], [2.0, 0.3], [1.5, 0.2]], dtype=lib.float64)
        try:
            out = lib.func.vmap(lambda t: _RANDOM_PROGRAMS[name](lib, t), randomness=randomness)(x)
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)
        return np.asarray(out.tolist()), lib.rand(1).item()  # and the generator's state after

    ours, theirs = run(rgrad), run(torch)
    if isinstance(theirs[0], str):
        assert ours == theirs
        return
    np.testing.assert_array_equal(ours[0], theirs[0])
    assert ours[1] == theirs[1]
    if randomness == "same" and name not in ("bernoulli", "normal_tensor"):
        assert (ours[0] - ours[0][:1] == ours[0] - ours[0][:1]).all()


def test_nested_randomness_flags(torch):
    def run(lib, outer, inner):
        lib.manual_seed(1)
        x = lib.zeros(3, 2)
        return np.asarray(lib.func.vmap(lib.func.vmap(lambda t: t + lib.rand(()), randomness=inner),
                                        randomness=outer)(x).tolist())

    for outer, inner in itertools.product(["same", "different"], repeat=2):
        ours = run(rgrad, outer, inner)
        assert (ours[0] == ours[1]).all() == (outer == "same")
        assert (ours[:, 0] == ours[:, 1]).all() == (inner == "same")
        if outer == inner or inner == "same":
            np.testing.assert_array_equal(ours, run(torch, outer, inner))


def test_random_ops_outside_vmap_in_other_threads_are_unaffected():
    """The random wrappers only act in the thread that runs the vmap."""
    rgrad.manual_seed(0)
    expected = rgrad.rand(5).tolist()
    barrier = threading.Barrier(2)
    got = {}

    def other():
        barrier.wait()
        got["value"] = rgrad.rand(5, generator=rgrad.Generator().manual_seed(0)).tolist()

    def f(t):
        barrier.wait()
        worker_done.wait()
        return t * 2

    worker_done = threading.Event()
    thread = threading.Thread(target=lambda: (other(), worker_done.set()))
    thread.start()
    vmap(f)(_batched((2,), 0))
    thread.join()
    assert got["value"] == expected


# ---------------------------------------------------------------------------------------
# Composition with autograd and the function transforms
# ---------------------------------------------------------------------------------------

def _to_torch(torch, t):
    if isinstance(t, (tuple, list)):
        return type(t)(_to_torch(torch, i) for i in t)
    if isinstance(t, dict):
        return {k: _to_torch(torch, v) for k, v in t.items()}
    dtype = {rgrad.float64: torch.float64, rgrad.float32: torch.float32, rgrad.int64: torch.int64}[t.dtype]
    return torch.tensor(t.tolist(), dtype=dtype)


def _same_values(ours, theirs, rtol=1e-10, atol=1e-12):
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _same_values(a, b, rtol, atol)
        return
    if isinstance(theirs, dict):
        assert ours.keys() == theirs.keys()
        for k in theirs:
            _same_values(ours[k], theirs[k], rtol, atol)
        return
    assert type(ours) is rgrad.Tensor
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.requires_grad == theirs.requires_grad
    np.testing.assert_allclose(np.asarray(ours.detach().tolist()), theirs.detach().numpy(), rtol=rtol, atol=atol)


def _mlp_loss(lib):
    fn = lib.nn.functional

    def loss(params, x, y):
        h = fn.linear(x, params["w1"], params["b1"]).tanh()
        out = fn.linear(h, params["w2"], params["b2"])
        return fn.cross_entropy(out.unsqueeze(0), y.unsqueeze(0))

    return loss


def _mlp_data():
    params = {"w1": _rand((6, 5)), "b1": _rand((6,)), "w2": _rand((3, 6)), "b2": _rand((3,))}
    return params, _rand((B, 5)), rgrad.tensor([0, 2, 1, 2])


def test_per_sample_grads_of_an_mlp_match_torch_func(torch):
    params, x, y = _mlp_data()
    ours = vmap(grad(_mlp_loss(rgrad)), in_dims=(None, 0, 0))(params, x, y)
    theirs = torch.func.vmap(torch.func.grad(_mlp_loss(torch)), in_dims=(None, 0, 0))(
        _to_torch(torch, params), _to_torch(torch, x), _to_torch(torch, y))
    _same_values(ours, theirs)
    # each sample's gradient is that of its own loss (not the batch's sum)
    for i in range(B):
        one = grad(_mlp_loss(rgrad))(params, x[i], y[i])
        for k in params:
            np.testing.assert_allclose(np.asarray(ours[k][i].tolist()), np.asarray(one[k].tolist()), rtol=1e-12)


def test_per_sample_grads_with_params_requiring_grad(torch):
    """Parameters that require grad (as nn parameters do): results stay differentiable w.r.t. them."""
    params, x, y = _mlp_data()
    params = {k: v.requires_grad_() for k, v in params.items()}
    ours = vmap(grad(_mlp_loss(rgrad)), in_dims=(None, 0, 0))(params, x, y)
    tparams = {k: v.requires_grad_() for k, v in _to_torch(torch, params).items()}
    theirs = torch.func.vmap(torch.func.grad(_mlp_loss(torch)), in_dims=(None, 0, 0))(
        tparams, _to_torch(torch, x), _to_torch(torch, y))
    _same_values(ours, theirs)
    # and outer autograd goes through the per-sample gradients
    ours_w = rgrad.autograd.grad(ours["w1"].pow(2).sum(), params["w2"])[0]
    theirs_w = torch.autograd.grad(theirs["w1"].pow(2).sum(), tparams["w2"])[0]
    _same_values(ours_w, theirs_w)


_COMPOSED = {
    "vmap_grad": lambda lib, x, w: lib.func.vmap(lib.func.grad(lambda a: (a.sin() * w).sum() * a.sum()))(x),
    "vmap_grad_argnums": lambda lib, x, w: lib.func.vmap(
        lib.func.grad(lambda a, b: (a * b).exp().sum(), argnums=(0, 1)), in_dims=(0, None))(x, w),
    "vmap_grad_and_value": lambda lib, x, w: lib.func.vmap(
        lib.func.grad_and_value(lambda a: (a ** 3 * w).sum(), has_aux=False))(x),
    "vmap_grad_has_aux": lambda lib, x, w: lib.func.vmap(
        lib.func.grad(lambda a: ((a * w).sum(), a.cos()), has_aux=True))(x),
    "vmap_vjp": lambda lib, x, w: lib.func.vmap(lambda a, v: lib.func.vjp(lambda b: b.tanh() * w, a)[1](v))(x, x * 2),
    "vmap_jvp": lambda lib, x, w: lib.func.vmap(
        lambda a, t: lib.func.jvp(lambda b: b.sin() * w, (a,), (t,)))(x, x.cos()),
    "vmap_jacrev": lambda lib, x, w: lib.func.vmap(lib.func.jacrev(lambda a: a.sin() * (a * w).sum()))(x),
    "vmap_jacfwd": lambda lib, x, w: lib.func.vmap(lib.func.jacfwd(lambda a: a.exp() * (a @ w)))(x),
    "vmap_hessian": lambda lib, x, w: lib.func.vmap(lib.func.hessian(lambda a: (a.sin() * w).sum() ** 2))(x),
    "vmap_jacrev_jacrev": lambda lib, x, w: lib.func.vmap(lib.func.jacrev(lib.func.jacrev(
        lambda a: (a.exp() * w).sum())))(x),
    "vmap_grad_grad": lambda lib, x, w: lib.func.vmap(lib.func.grad(lambda a: lib.func.grad(
        lambda b: (b.sin() * w).sum() ** 2)(a).sum()))(x),
    "grad_vmap": lambda lib, x, w: lib.func.grad(lambda a: lib.func.vmap(lambda r: (r.sin() * w).sum())(a).sum())(x),
    "jacrev_vmap": lambda lib, x, w: lib.func.jacrev(lambda a: lib.func.vmap(lambda r: r.exp() * w)(a))(x),
    "jacfwd_vmap": lambda lib, x, w: lib.func.jacfwd(lambda a: lib.func.vmap(lambda r: r.exp() @ w)(a))(x),
    "vmap_vmap_grad": lambda lib, x, w: lib.func.vmap(lib.func.vmap(lib.func.grad(lambda s: (s * w[0]).sin())))(x),
    "vmap_grad_in_dims_1": lambda lib, x, w: lib.func.vmap(lib.func.grad(lambda a: (a * w).pow(2).sum()),
                                                            in_dims=1, out_dims=1)(x.t().contiguous()),
    "vmap_grad_of_vmap": lambda lib, x, w: lib.func.vmap(lib.func.grad(
        lambda a: lib.func.vmap(lambda s: s * w.sum())(a).sum()))(x),
    "vmap_grad_closure_batched": lambda lib, x, w: lib.func.vmap(
        lambda a: lib.func.grad(lambda b: (b * a).sin().sum())(w))(x),
}


@pytest.mark.parametrize("name", list(_COMPOSED))
def test_composition_matches_torch_func(torch, name):
    x = _rand((B, 3))
    w = _rand((3,))
    ours = _COMPOSED[name](rgrad, x, w)
    theirs = _COMPOSED[name](torch, _to_torch(torch, x), _to_torch(torch, w))
    _same_values(ours, theirs)


def test_autograd_grad_inside_vmap():
    x = _rand((3,), low=0.5).requires_grad_()
    y = x.exp() * x.sum()
    # torch's documented example: the rows of a Jacobian from batched grad_outputs
    rows = vmap(lambda v: rgrad.autograd.grad(y, x, v, retain_graph=True)[0])(rgrad.eye(3, dtype=rgrad.float64))
    expected = rgrad.autograd.functional.jacobian(lambda a: a.exp() * a.sum(), x.detach())
    _assert_same(rows, expected)
    # outputs batched, an input batched: one backward of the physical tensors
    xs = _rand((B, 3))

    def per_sample(t):
        leaf = t.detach().requires_grad_()
        out = (leaf.sin() * leaf).sum()
        g, = rgrad.autograd.grad(out, leaf, create_graph=True)
        gg, = rgrad.autograd.grad(g.sum(), leaf)
        return g, gg

    g, gg = vmap(per_sample)(xs)
    _assert_same(g, xs.sin() + xs * xs.cos())
    _assert_same(gg, 2 * xs.cos() - xs * xs.sin())
    # outputs batched, an input shared by the samples: its gradient per sample (a loop of backward passes)
    w = _rand((3,)).requires_grad_()
    per = vmap(lambda t: rgrad.autograd.grad((t * w).sin().sum(), w)[0])(xs)
    _assert_same(per, xs * (xs * w.detach()).cos())
    # allow_unused / materialize_grads
    z = _rand((3,)).requires_grad_()
    unused = []

    def with_unused(t):
        gw, gz = rgrad.autograd.grad((t * w).sum(), (w, z), allow_unused=True)
        unused.append(gz)
        return gw

    _assert_same(vmap(with_unused)(xs), xs)
    assert unused == [None]
    out = vmap(lambda t: rgrad.autograd.grad((t * w).sum(), (w, z), materialize_grads=True))(xs)
    _assert_same(out[1], rgrad.zeros(B, 3, dtype=rgrad.float64))
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors appears to not have been used"):
        vmap(lambda t: rgrad.autograd.grad((t * w).sum(), (w, z)))(xs)
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of rgrad.Size\(\[2\]\)"):
        vmap(lambda v: rgrad.autograd.grad(y, x, v[:2], retain_graph=True))(rgrad.eye(3, dtype=rgrad.float64))


def test_forward_ad_inside_vmap():
    fw = rgrad.autograd.forward_ad
    xs, ts = _rand((B, 3)), _rand((B, 3))
    w = _rand((3,))

    def f(x, t):
        with fw.dual_level():
            d = fw.make_dual(x, t)
            out = d.sin() * w
            p, tan = fw.unpack_dual(out)
            assert isinstance(p, rgrad.Tensor) and type(p) is BatchedTensor
            return p, tan

    p, tan = vmap(f)(xs, ts)
    _assert_same(p, xs.sin() * w)
    _assert_same(tan, xs.cos() * ts * w)
    # an unbatched tangent with a batched primal, and the other way round
    t0 = _rand((3,))
    _, tan = vmap(f, in_dims=(0, None))(xs, t0)
    _assert_same(tan, xs.cos() * t0 * w)
    _, tan = vmap(f, in_dims=(None, 0))(xs[0], ts)
    _assert_same(tan, xs[0].cos() * ts * w)
    with fw.dual_level(), pytest.raises(RuntimeError, match="Trying to set a forward gradient that has a different"):
        vmap(lambda x: fw.make_dual(x, rgrad.ones(2, dtype=rgrad.float64)))(xs)


# ---------------------------------------------------------------------------------------
# Threads: vmap in some threads, plain ops in others, all exact
# ---------------------------------------------------------------------------------------

def test_threads_running_vmap_and_plain_ops():
    a = _rand((8, 5))
    w = _rand((5, 5))
    expected_vmap = rgrad.stack([(a[i] @ w).tanh() + rgrad.exp(a[i]).sum() for i in range(8)]).tolist()
    expected_plain = ((a @ w) * 2 + rgrad.exp(a)).tolist()
    expected_grads = [grad(lambda r: (rgrad.exp(r) * w[0]).sum())(a[i]).tolist() for i in range(8)]
    errors = []
    barrier = threading.Barrier(4)

    def vmapper(trials):
        barrier.wait()
        for _ in range(trials):
            out = vmap(lambda r: (r @ w).tanh() + rgrad.exp(r).sum())(a)
            if out.tolist() != expected_vmap:
                errors.append("vmap")
            g = vmap(grad(lambda r: (rgrad.exp(r) * w[0]).sum()))(a)
            if g.tolist() != expected_grads:
                errors.append("vmap(grad)")

    def plain(trials):
        barrier.wait()
        for _ in range(trials):
            # function forms and Tensor methods, swapped or not at this moment, give the same numbers
            out = rgrad.add(rgrad.mul(rgrad.matmul(a, w), 2), rgrad.exp(a))
            if out.tolist() != expected_plain or not (a == a).all() or a[0, 0].item() != a.tolist()[0][0]:
                errors.append("plain")

    threads = [threading.Thread(target=vmapper, args=(40,)), threading.Thread(target=vmapper, args=(40,)),
               threading.Thread(target=plain, args=(150,)), threading.Thread(target=plain, args=(150,))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert rgrad.exp is rgrad.Tensor.exp and not _vmap.is_active()


# ---------------------------------------------------------------------------------------
# autograd.functional with vectorize=True inside vmap, and gradcheck of vmapped functions
# ---------------------------------------------------------------------------------------

def test_vectorized_jacobian_inside_vmap():
    xs = _rand((B, 3))
    f = lambda a: a.sin() * a.sum()  # noqa: E731
    out = vmap(lambda x: rgrad.autograd.functional.jacobian(f, x, vectorize=True))(xs)
    expected = rgrad.stack([rgrad.autograd.functional.jacobian(f, xs[i]) for i in range(B)])
    _assert_same(out, expected)
    out = vmap(lambda x: rgrad.autograd.functional.jacobian(f, x, vectorize=True, strategy="forward-mode"))(xs)
    _assert_same(out, expected)


def test_gradcheck_through_vmap():
    x = _rand((B, 3)).requires_grad_()
    w = _rand((3, 2)).requires_grad_()
    f = lambda a, m: vmap(lambda r: (r @ m).tanh().sum() * r.exp(), in_dims=(0,))(a)  # noqa: E731
    assert rgrad.autograd.gradcheck(f, (x, w))
    assert rgrad.autograd.gradgradcheck(f, (x, w))


# ---------------------------------------------------------------------------------------
# The fast paths for operands shared by the batch (stride-0 materialized weights and inputs)
# ---------------------------------------------------------------------------------------

def _linear_net(lib):
    fn = lib.nn.functional

    def net(w1, b1, w2, x):
        return fn.linear(fn.linear(x, w1, b1).tanh(), w2).sin().sum()

    return net


@pytest.mark.parametrize("transform", ["grad", "jacrev_jacrev", "grad_grad", "hessian", "jacfwd_grad"])
def test_shared_weight_fast_path_matches_torch(torch, transform):
    """Per-sample first and second derivatives w.r.t. weights (the fast path's backward and
    double backward), against torch.func."""
    w1, b1, w2, x = _rand((4, 3)), _rand((4,)), _rand((2, 4)), _rand((B, 3))

    def run(lib, w1, b1, w2, x):
        net = _linear_net(lib)
        F_ = lib.func
        transforms = {
            "grad": F_.grad(net, argnums=(0, 1, 2)),
            "jacrev_jacrev": F_.jacrev(F_.jacrev(net, argnums=0), argnums=(0, 2)),
            "grad_grad": F_.grad(lambda a, b, c, d: F_.grad(net, argnums=0)(a, b, c, d).pow(2).sum(), argnums=(0, 2)),
            "hessian": F_.hessian(net, argnums=1),
            "jacfwd_grad": F_.jacfwd(F_.grad(net, argnums=2), argnums=2),
        }
        return F_.vmap(transforms[transform], in_dims=(None, None, None, 0))(w1, b1, w2, x)

    ours = run(rgrad, w1, b1, w2, x)
    theirs = run(torch, *(_to_torch(torch, t) for t in (w1, b1, w2, x)))
    _same_values(ours, theirs)


def test_uniform_input_fast_path_matches_torch(torch):
    """jacobian(vectorize=True) of a linear layer (one product forward), its create_graph
    graph, and the reverse-mode vectorized Hessian, against torch."""
    w1, b1, w2 = _rand((5, 3)), _rand((5,)), _rand((3, 5))

    def run(lib, w1, b1, w2, z):
        fn = lib.nn.functional
        f = lambda a: fn.linear(fn.linear(a, w1, b1).tanh(), w2)  # noqa: E731
        AF_ = lib.autograd.functional
        jac = AF_.jacobian(f, z, vectorize=True, create_graph=True)
        (g,) = lib.autograd.grad(jac.pow(2).sum(), z)
        hess = AF_.hessian(lambda a: f(a).pow(3).sum(), z, vectorize=True)
        return jac.detach(), g, hess

    z = _rand((3,)).requires_grad_()
    ours = run(rgrad, w1, b1, w2, z)
    # the fast path's output can be written in place, as the op's would
    f = lambda a: F.linear(a, w1, b1).mul_(2).relu_()  # noqa: E731
    _assert_same(rgrad.autograd.functional.jacobian(f, z.detach(), vectorize=True),
                 rgrad.autograd.functional.jacobian(f, z.detach()))
    tz = _to_torch(torch, z.detach()).requires_grad_()
    theirs = run(torch, *(_to_torch(torch, t) for t in (w1, b1, w2)), tz)
    _same_values(ours, theirs)


def test_custom_function_under_vmap(torch):
    def classes(lib):
        class Exp(lib.autograd.Function):
            @staticmethod
            def forward(x):
                return x.exp()

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(output)

            @staticmethod
            def backward(ctx, g):
                (out,) = ctx.saved_tensors
                return g * out

        class ExpRule(Exp):
            generate_vmap_rule = True

        class OldStyle(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        return Exp, ExpRule, OldStyle

    x = _rand((B, 3))
    results = {}
    for lib, data in ((rgrad, x), (torch, _to_torch(torch, x))):
        Exp, ExpRule, OldStyle = classes(lib)
        out = []
        for cls in (Exp, OldStyle):
            with pytest.raises(RuntimeError) as e:
                lib.func.vmap(cls.apply)(data)
            out.append(str(e.value))
        out.append(lib.func.vmap(ExpRule.apply)(data))
        out.append(lib.func.vmap(lib.func.grad(lambda a: ExpRule.apply(a).sum()))(data))
        results[lib.__name__] = out
    assert results["rgrad"][:2] == results["torch"][:2]
    _same_values(results["rgrad"][2:], results["torch"][2:])
    assert "apply" not in rgrad.autograd.Function.__dict__  # restored


def test_custom_function_bound_before_vmap_keeps_its_derivatives(torch):
    """``f = MyFn.apply`` taken before the vmap (the usual idiom) runs per sample like
    ``MyFn.apply`` looked up inside it: its jvp gives the tangents (they were dropped) and
    its backward the gradients."""
    def scale(lib):
        class Scale(lib.autograd.Function):
            generate_vmap_rule = True

            @staticmethod
            def forward(x):
                return x * 3

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass

            @staticmethod
            def backward(ctx, g):
                return g * 3

            @staticmethod
            def jvp(ctx, t):
                return t * 3

        return Scale.apply

    x, tangents = _rand((3,)), _rand((B, 3))
    results = {}
    for lib, (x_, t_) in ((rgrad, (x, tangents)), (torch, (_to_torch(torch, x), _to_torch(torch, tangents)))):
        f = scale(lib)

        def jvp(t, f=f, lib=lib, x_=x_):
            return lib.func.jvp(f, (x_,), (t,))[1]

        grads = lib.func.vmap(lib.func.grad(lambda a, f=f: f(a).sin().sum()))(t_)
        results[lib.__name__] = [lib.func.vmap(jvp)(t_), lib.func.vmap(f)(t_), grads]
    _same_values(results["rgrad"], results["torch"])
    _same_values(results["rgrad"][0], tangents * 3)


def test_values_of_a_level_of_copies_can_be_read():
    """On jacobian(vectorize=True)'s level (copies of the inputs) .item(), bool() and
    tolist() read sample 0's values; on a user's vmap they raise torch's errors."""
    x = rgrad.tensor([0.5, -1.0], dtype=rgrad.float64)
    read = []
    rgrad.autograd.functional.jacobian(lambda a: a * a.sum().item(), x, vectorize=True, strategy="forward-mode")
    rgrad.autograd.functional.jacobian(lambda a: read.append(a.tolist()) or a * 2, x, vectorize=True,
                                       strategy="forward-mode")
    assert read == [[0.5, -1.0]]
    seen = []

    def f(a):
        seen.append((a.sum().item(), bool(a[0] > 0), a.tolist(), int(a[0] > 0)))
        return a * 2

    x = rgrad.tensor([0.5, -1.0], dtype=rgrad.float64)
    rgrad.autograd.functional.jacobian(f, x, vectorize=True)
    assert seen == [(-0.5, True, [0.5, -1.0], 1)]  # (reverse mode runs it once, unbatched)
    with pytest.raises(RuntimeError, match="vmap: It looks like you're calling .item()"):
        vmap(f)(rgrad.ones(2, 2))


# ---------------------------------------------------------------------------------------
# flip / roll / rot90, triangles, diagonals, cumulative ops (_batching_ops_a.py)
# ---------------------------------------------------------------------------------------

_OPS_A_CALLS = {
    "flip": (lambda x: rgrad.flip(x, (0, -1)), (3, 4)),
    "flip_method": (lambda x: x.flip(1), (3, 4)),
    "fliplr": (lambda x: x.fliplr(), (3, 4)),
    "flipud": (lambda x: rgrad.flipud(x), (3, 4)),
    "roll": (lambda x: rgrad.roll(x, (1, -2), (0, 1)), (3, 4)),
    "roll_flat": (lambda x: rgrad.roll(x, 5), (3, 4)),
    "rot90": (lambda x: rgrad.rot90(x, 1, (0, 2)), (2, 3, 4)),
    "tril": (lambda x: rgrad.tril(x, -1), (3, 4)),
    "triu": (lambda x: x.triu(1), (3, 4)),
    "tril_": (lambda x: x.clone().tril_(1), (3, 4)),
    "diagonal": (lambda x: rgrad.diagonal(x, 1, 1, 0), (3, 4)),
    "diag_embed": (lambda x: rgrad.diag_embed(x, -1), (2, 3)),
    "diag1": (lambda x: rgrad.diag(x, 1), (3,)),
    "diag2": (lambda x: rgrad.diag(x), (3, 4)),
    "trace": (lambda x: rgrad.trace(x), (3, 4)),
    "cumsum": (lambda x: rgrad.cumsum(x, 1), (3, 4)),
    "cumsum_0d": (lambda x: rgrad.cumsum(x, 0), ()),
    "cumprod": (lambda x: x.cumprod(-1, dtype=rgrad.float64), (3, 4)),
    "cummax": (lambda x: rgrad.cummax(x, 1).values, (3, 4)),
    "cummax_indices": (lambda x: x.cummax(-1).indices, (3, 4)),
    "cummin": (lambda x: rgrad.cummin(x, dim=0).values, (3, 4)),
    "cummin_0d": (lambda x: rgrad.cummin(x, 0).indices, ()),
    "logcumsumexp": (lambda x: rgrad.logcumsumexp(x, 1), (3, 4)),
    "logcumsumexp_0d": (lambda x: x.logcumsumexp(0), ()),
    # linalg.rs's ops and scatter_reduce (their rules: "_linalg_cross", "_aminmax", dist,
    # scatter_reduce and scatter_reduce_)
    "_linalg_cross": (lambda x: rgrad.linalg.cross(x, x.sin(), dim=0), (3, 4)),
    "_linalg_cross_unbatched_other": (lambda x: x.cross(_W34, dim=0), (3, 4)),
    "_aminmax": (lambda x: rgrad.aminmax(x, dim=1).max, (3, 4)),
    "_aminmax_all_keepdim": (lambda x: x.aminmax(keepdim=True).min, (3, 4)),
    "_aminmax_0d": (lambda x: rgrad.aminmax(x).max, ()),
    "dist": (lambda x: x.dist(x.cos(), 3), (3, 4)),
    "dist_unbatched_other": (lambda x: rgrad.dist(x, _W34), (3, 4)),
    "scatter_reduce": (lambda x: x.scatter_reduce(1, _IDX34, x.sin(), "amax"), (3, 4)),
    "scatter_reduce_": (lambda x: x.clone().scatter_reduce_(0, _IDX34, x.cos(), "mean", include_self=False),
                        (3, 4)),
    # decomp.rs's factorizations and solves (the "_linalg_*" / "_cholesky_*" rules), on
    # well-conditioned (_wc) or positive-definite (_pd) matrices made of the sample
    "_linalg_det": (lambda x: rgrad.linalg.det(_wc(x)), (3, 3)),
    "_linalg_slogdet": (lambda x: rgrad.linalg.slogdet(_wc(x)).logabsdet, (3, 3)),
    "_linalg_inv_ex": (lambda x: rgrad.linalg.inv(_wc(x)), (3, 3)),
    "_linalg_solve_ex": (lambda x: rgrad.linalg.solve(_wc(x), x[0]), (3, 3)),
    "_linalg_solve_ex_unbatched_A": (lambda x: rgrad.linalg.solve(_wc(_W34[:, :3]), x, left=False), (3, 3)),
    "_linalg_lu_factor_ex": (lambda x: rgrad.linalg.lu_factor(x).LU, (3, 3)),
    "_linalg_lu_solve": (lambda x: rgrad.linalg.lu_solve(*rgrad.linalg.lu_factor(_wc(x)), x.cos()), (3, 3)),
    "_linalg_solve_triangular": (lambda x: rgrad.linalg.solve_triangular(_wc(x), x.sin(), upper=True), (3, 3)),
    "_linalg_cholesky_ex": (lambda x: rgrad.linalg.cholesky(_pd(x)), (3, 3)),
    "_cholesky_solve": (lambda x: rgrad.cholesky_solve(x.sin(), rgrad.linalg.cholesky(_pd(x))), (3, 3)),
    "_cholesky_inverse": (lambda x: rgrad.cholesky_inverse(rgrad.linalg.cholesky(_pd(x))), (3, 3)),
    "_linalg_matrix_exp": (lambda x: rgrad.linalg.matrix_exp(x), (3, 3)),
    "_linalg_lu": (lambda x: rgrad.linalg.lu(x).U, (3, 3)),
    "_lu_unpack": (lambda x: rgrad.lu_unpack(*rgrad.linalg.lu_factor(x)).L, (3, 3)),
    # spectral.rs's decompositions (their rule: "_linalg_eigh", "_linalg_svd", "_linalg_qr")
    "_linalg_eigh": (lambda x: rgrad.linalg.eigh(x + x.mT).eigenvalues, (3, 3)),
    "_linalg_eigh_vectors": (lambda x: rgrad.linalg.eigh(x + x.mT, UPLO="U").eigenvectors.abs(), (3, 3)),
    "_linalg_eigh_batched": (lambda x: rgrad.linalg.eigvalsh(x @ x.mT), (2, 3, 3)),
    "_linalg_eigh_1d": (lambda x: rgrad.linalg.eigh(x).eigenvalues, (3,)),
    "_linalg_eigh_not_square": (lambda x: rgrad.linalg.eigvalsh(x), (3, 4)),
    "_linalg_svd": (lambda x: rgrad.linalg.svd(x, full_matrices=False).S, (3, 4)),
    "_linalg_svd_vectors": (lambda x: rgrad.linalg.svd(x).U.abs(), (4, 3)),
    "_linalg_svd_svdvals": (lambda x: rgrad.linalg.svdvals(x), (2, 3, 4)),
    "_linalg_svd_torch_svd": (lambda x: rgrad.svd(x).V.abs(), (3, 4)),
    "_linalg_svd_nuc": (lambda x: rgrad.linalg.matrix_norm(x, "nuc"), (3, 4)),
    "_linalg_svd_1d": (lambda x: rgrad.linalg.svdvals(x), (3,)),
    "_linalg_pinv": (lambda x: rgrad.linalg.pinv(x), (4, 3)),
    "_linalg_pinv_hermitian": (lambda x: rgrad.linalg.pinv(x + x.mT, hermitian=True), (3, 3)),
    "_linalg_pinv_batched_atol": (lambda x: rgrad.linalg.pinv(x, atol=x.abs().amax() * 0.3), (2, 4, 3)),
    "_linalg_pinv_tolerance_per_matrix": (lambda x: rgrad.linalg.pinv(x, rtol=_RTOL2), (2, 4, 3)),
    "_linalg_qr": (lambda x: rgrad.linalg.qr(x).Q, (4, 3)),
    "_linalg_qr_r": (lambda x: rgrad.linalg.qr(x, mode="r").R, (3, 4)),
    "_linalg_qr_complete": (lambda x: rgrad.linalg.qr(x, mode="complete").R, (4, 3)),
}


def _wc(x):
    return x + 3 * rgrad.eye(x.shape[-1], dtype=x.dtype)


def _pd(x):
    return x @ x.mT + 3 * rgrad.eye(x.shape[-1], dtype=x.dtype)


_W34 = rgrad.tensor([[0.5, -1.0, 2.0, 0.25], [1.5, 0.0, -0.5, 1.0], [-2.0, 0.75, 1.0, 3.0]], dtype=rgrad.float64)
_IDX34 = rgrad.tensor([[0, 2, 2, 1], [1, 1, 0, 2], [2, 0, 1, 1]])
_RTOL2 = rgrad.tensor([0.5, 1e-3], dtype=rgrad.float64)


@pytest.mark.parametrize("name", sorted(_OPS_A_CALLS))
@pytest.mark.parametrize("in_dim", [0, 1])
def test_ops_a_match_the_loop_without_fallback(name, in_dim):
    f, shape = _OPS_A_CALLS[name]
    if in_dim > len(shape):
        in_dim = 0
    check(f, _batched(shape, in_dim), in_dims=in_dim)


@pytest.mark.parametrize("f", [lambda x: rgrad.tril(x), lambda x: rgrad.fliplr(x), lambda x: rgrad.trace(x),
                               lambda x: rgrad.diagonal(x, 0, 0, 0), lambda x: rgrad.roll(x, (1, 2), (0,)),
                               lambda x: rgrad.flip(x, (0, 0))])
def test_ops_a_refuse_what_each_sample_refuses(f):
    check(f, _batched((3,), 0))


def test_ops_a_vmap_of_grad():
    def f(x):
        return (rgrad.cumprod(rgrad.roll(rgrad.tril(x), 1, 0), 1) * rgrad.flip(x, (1,))).diagonal().sum()

    x = _batched((3, 3), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = vmap(rgrad.func.grad(f))(x)
    expected = rgrad.stack([rgrad.func.grad(f)(x[i]) for i in range(x.shape[0])])
    assert rgrad.allclose(ours, expected, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------
# addcmul / addcdiv / lerp / addr, native fused ops (`_broadcast`; addr: `_addr`)
# ---------------------------------------------------------------------------------------

# (f, the operands' logical shapes); each runs with every operand batched, and with each
# one alone unbatched
_FUSED_CALLS = {
    "addcmul": (lambda a, b, c: rgrad.addcmul(a, b, c, value=0.5), [(3, 4), (4,), (3, 1)]),
    "addcmul_method": (lambda a, b, c: a.addcmul(b, c), [(3, 4), (3, 4), ()]),
    "addcmul_": (lambda a, b, c: a.clone().addcmul_(b, c, value=-2), [(3, 4), (3, 4), (4,)]),
    "addcdiv": (lambda a, b, c: rgrad.addcdiv(a, b, c.abs() + 1, value=2), [(3, 1), (3, 4), (4,)]),
    "addcdiv_": (lambda a, b, c: a.clone().addcdiv_(b, c.abs() + 1), [(3, 4), (4,), (3, 4)]),
    "lerp": (lambda a, b, c: rgrad.lerp(a, b, 0.3), [(3, 4), (4,), ()]),
    "lerp_tensor": (lambda a, b, c: a.lerp(b, c), [(3, 4), (3, 4), (3, 1)]),
    "lerp_": (lambda a, b, c: a.clone().lerp_(b, c), [(3, 4), (4,), (3, 4)]),
    "addr": (lambda a, b, c: rgrad.addr(a, b, c, beta=0.5, alpha=2), [(3, 4), (3,), (4,)]),
    "addr_method": (lambda a, b, c: a.addr(b, c), [(4,), (3,), (4,)]),
    "addr_beta0": (lambda a, b, c: rgrad.addr(a, b, c, beta=0), [(3, 4), (3,), (4,)]),
}


@pytest.mark.parametrize("name", sorted(_FUSED_CALLS))
@pytest.mark.parametrize("unbatched", [None, 0, 1, 2])
def test_fused_ops_match_the_loop_without_fallback(name, unbatched):
    f, shapes = _FUSED_CALLS[name]
    in_dims = tuple(None if i == unbatched else 0 for i in range(3))
    args = [_batched(s, d) for s, d in zip(shapes, in_dims)]
    if name.endswith("_") and unbatched == 0:
        # an unbatched self written with batched values: vmap's error, as torch's
        with pytest.raises(RuntimeError, match=f"vmap: aten::{name}\\(self, \\*extra_args\\) is not possible"):
            vmap(f, in_dims)(*args)
        return
    check(f, *args, in_dims=in_dims)


@pytest.mark.parametrize("f", [lambda x: rgrad.nan_to_num(x, 1.0), lambda x: x.clone().nan_to_num_(posinf=2.0),
                               lambda x: x.nansum(1), lambda x: rgrad.nansum(x),
                               lambda x: rgrad.nansum(x, (0, 1), keepdim=True)])
@pytest.mark.parametrize("in_dim", [0, 1])
def test_nan_ops_match_the_loop_without_fallback(f, in_dim):
    x = _batched((3, 4), in_dim)
    x[0, 0] = float("nan")
    x[1, 2] = float("inf")
    check(f, x, in_dims=in_dim)


def test_fused_ops_refuse_what_each_sample_refuses():
    # (a shape mismatch names the physical dim, as torch.vmap's message does)
    with pytest.raises(RuntimeError, match="must match the size of tensor b \\(2\\) at non-singleton dimension 1"):
        vmap(lambda a, b: rgrad.addcmul(a, b, b[:2]))(_batched((3,), 0), _batched((3,), 0))
    check(lambda a, b: rgrad.lerp(a, b.double(), 0.5), _batched((3,), 0), _batched((3,), 0))
    check(lambda a, b: rgrad.addr(a, b, b.unsqueeze(0)), _batched((3, 3), 0), _batched((3,), 0))
    check(lambda a, b: rgrad.addr(a, b.unsqueeze(0), b), _batched((3, 3), 0), _batched((3,), 0))


# ---------------------------------------------------------------------------------------
# Ordering ops (sort, argsort, msort, topk, kthvalue, median, nanmedian, mode): the dim
# moved past the batch
# ---------------------------------------------------------------------------------------

_ORDERING_CALLS = [
    lambda t: t.sort(), lambda t: t.sort(0, True), lambda t: rgrad.sort(t, dim=-1, stable=True),
    lambda t: t.argsort(0), lambda t: rgrad.argsort(t, descending=True), lambda t: t.msort(),
    lambda t: rgrad.msort(t), lambda t: t.topk(2), lambda t: rgrad.topk(t, 1, 0, largest=False),
    lambda t: t.kthvalue(2, 0), lambda t: rgrad.kthvalue(t, 1, keepdim=True), lambda t: t.median(1),
    lambda t: rgrad.median(t, 0, True), lambda t: t.median(), lambda t: rgrad.median(t),
    lambda t: t.nanmedian(1), lambda t: rgrad.nanmedian(t, 0, True), lambda t: t.nanmedian(),
    lambda t: rgrad.nanmedian(t), lambda t: t.mode(), lambda t: rgrad.mode(t, 0, keepdim=True),
    lambda t: t.round().mode(1),
]


@pytest.mark.parametrize("i", range(len(_ORDERING_CALLS)))
@pytest.mark.parametrize("in_dim", [0, 1, -1])
def test_ordering_ops(i, in_dim):
    check(_ORDERING_CALLS[i], _batched((3, 2), in_dim), in_dims=in_dim)


# ---------------------------------------------------------------------------------------
# In-place view ops (squeeze_, unsqueeze_, transpose_, swapdims_, swapaxes_, t_): the op in
# place on the physical value, its dims past the batch dim
# ---------------------------------------------------------------------------------------

_INPLACE_VIEW_CALLS = [
    lambda t: t.clone().squeeze_(), lambda t: t.clone().squeeze_(1), lambda t: t.clone().squeeze_((0, 1)),
    lambda t: t.clone().unsqueeze_(0), lambda t: t.clone().unsqueeze_(-1), lambda t: t.clone().transpose_(0, 2),
    lambda t: t.clone().swapdims_(-1, 0), lambda t: t.clone().swapaxes_(1, 2),
    lambda t: t[:, 0].clone().t_(), lambda t: t.clone().squeeze_(1).t_() * 2,
]


@pytest.mark.parametrize("i", range(len(_INPLACE_VIEW_CALLS)))
@pytest.mark.parametrize("in_dim", [0, 1, -1])
def test_inplace_view_ops(i, in_dim):
    check(_INPLACE_VIEW_CALLS[i], _batched((3, 1, 2), in_dim), in_dims=in_dim)


def test_inplace_view_ops_return_self_and_grad():
    def f(t):
        y = t * 1
        out = y.squeeze_(1)
        assert out is y
        return y.sum()

    x = _rand((B, 3, 1, 2))
    g = rgrad.func.vmap(rgrad.func.grad(f))(x)
    assert tuple(g.shape) == (B, 3, 1, 2) and bool((g == 1).all())


# ---------------------------------------------------------------------------------------
# The scatter family: batched self, index, src / source in any combination
# ---------------------------------------------------------------------------------------

_IDX = rgrad.tensor([[0, 1], [1, 0], [2, 2]])
_ROWS = rgrad.tensor([2, 0])


_SCATTER_CALLS = [  # (call, writes an unbatched self in place when only src is batched)
    (lambda t, s: t.scatter(1, _IDX, s), False), (lambda t, s: rgrad.scatter_add(t, 1, _IDX, s), False),
    (lambda t, s: t.scatter(0, _IDX[:2], 2.5) + s.sum(), False), (lambda t, s: t.clone().scatter_(1, _IDX, s), True),
    (lambda t, s: t.clone().scatter_add_(1, _IDX, s), True),
    (lambda t, s: t.index_add(1, _ROWS, s, alpha=2), False), (lambda t, s: rgrad.index_copy(t, 1, _ROWS, s), False),
    (lambda t, s: t.clone().index_add_(1, _ROWS, s), True), (lambda t, s: t.clone().index_copy_(1, _ROWS, s), True),
    (lambda t, s: t.index_fill(1, _ROWS, -1.0) * s.sum(), False),
    (lambda t, s: t.clone().index_fill_(0, _ROWS, 3.0) + s[0, 0], False),
    (lambda t, s: rgrad.take_along_dim(t, _IDX, 1) + s, False),
    (lambda t, s: t.take_along_dim(_IDX.reshape(-1)).sum() + s, False),
]


@pytest.mark.parametrize("which", ["self", "src", "both"])
@pytest.mark.parametrize("i", range(len(_SCATTER_CALLS)))
def test_scatter_family(i, which):
    call, writes_unbatched = _SCATTER_CALLS[i]
    t, s = _rand((B, 3, 3)), _rand((B, 3, 2))
    if which == "self":
        check(call, t, s[0], in_dims=(0, None))
    elif which == "src" and not writes_unbatched:
        check(call, t[0], s, in_dims=(None, 0))
    elif which == "src":  # vmap's in-place error, as torch's
        with pytest.raises(RuntimeError, match="being vmapped over but `self` not being vmapped"):
            rgrad.vmap(call, in_dims=(None, 0))(t[0], s)
    elif which == "both":
        check(call, t, s, in_dims=(0, 0))


# ---------------------------------------------------------------------------------------
# (helper-41) searchsorted / bucketize: the _searchsorted rule
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["1d", "nd", "values only", "boundaries only", "scalar values", "sorter", "right"])
def test_searchsorted_rule(case):
    rs = np.random.RandomState(5)
    b1 = rgrad.tensor(np.sort(rs.standard_normal((B, 6)), -1))
    bn = rgrad.tensor(np.sort(rs.standard_normal((B, 2, 6)), -1))
    v = rgrad.tensor(rs.standard_normal((B, 2, 4)))
    if case == "1d":
        check(lambda s, x: rgrad.searchsorted(s, x), b1, v)
        check(lambda x, s: rgrad.bucketize(x, s), v, b1)
    elif case == "nd":
        check(lambda s, x: rgrad.searchsorted(s, x), bn, v)
    elif case == "values only":
        check(lambda x: rgrad.searchsorted(b1[0], x), v)
        check(lambda x: rgrad.searchsorted(bn[0], x), v)
    elif case == "boundaries only":
        check(lambda s: rgrad.searchsorted(s, v[0]), b1)
        check(lambda s: rgrad.searchsorted(s, v[0]), bn)
    elif case == "scalar values":
        check(lambda s, x: rgrad.searchsorted(s, x), b1, v[:, 0, 0])
        check(lambda s: rgrad.searchsorted(s, 0.25), b1)
    elif case == "sorter":
        raw = rgrad.tensor(rs.standard_normal((B, 6)))
        check(lambda s, x: rgrad.searchsorted(s, x, sorter=s.argsort()), raw, v)
    else:
        check(lambda s, x: rgrad.searchsorted(s, x, side="right"), b1, v)
        check(lambda x, s: rgrad.bucketize(x, s, right=True), v, b1)


# ---------------------------------------------------------------------------------------
# (helper-45) the activations' natives: "_activation", "_activation_" (elementwise, the
# parameters unbatched) and "_prelu_kernel" (input and weight broadcast)
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["gelu", "elu", "hardtanh", "softplus", "mvlgamma", "angle", "leaky_relu_",
                                "prelu", "prelu batched weight"])
def test_activation_rules(op):
    F = rgrad.nn.functional
    rs = np.random.RandomState(11)
    x = rgrad.tensor(rs.standard_normal((B, 2, 3)))
    if op == "gelu":
        check(lambda v: F.gelu(v, approximate="tanh"), x)  # _C._activation
    elif op == "elu":
        check(lambda v: F.elu(v, 0.5), x)
    elif op == "hardtanh":
        check(lambda v: F.hardtanh(v, -0.5, 0.5), x)
    elif op == "softplus":
        check(lambda v: F.softplus(v, 2, 1.0), x)
    elif op == "mvlgamma":
        check(lambda v: rgrad.mvlgamma(v.abs() + 2, 3), x)
    elif op == "angle":
        check(lambda v: rgrad.angle(v), x)
    elif op == "leaky_relu_":
        check(lambda v: F.leaky_relu_(v.clone(), 0.3), x)  # _C._activation_
    elif op == "prelu":
        check(lambda v: F.prelu(v, rgrad.tensor([0.1, 0.2])), x)  # _C._prelu_kernel
    else:
        check(lambda v, w: F.prelu(v, w), x, rgrad.tensor(rs.uniform(0, 1, (B, 2))))
