"""The op table that drives tests/test_ops.py, in the style of PyTorch's OpInfo.

Each entry names one op the way torch spells it (``add``, ``Tensor.add``,
``__add__``, ``__radd__``, ``nn.functional.relu``, ...) and gives

* ``op``: a callable taking tensors (plus python scalars / kwargs), exactly as a
  torch user would call it,
* ``ref``: a numpy reference with the same signature (float64 in, numpy out),
* ``sample_inputs(make, rng)``: a generator of :class:`SampleInput`, drawn from a
  ``numpy.random.RandomState`` seeded from the op's name (stable across runs),
* dtypes, forward tolerances, gradient tolerances, ``supports_grad``,
  ``supports_gradgrad`` and a ``domain`` hint (the interval ``make`` draws from).

Sample inputs hold plain numpy data; the tests turn them into tensors:

* float ndarray       -> a differentiable input tensor of the dtype under test
* ``NC(base, view)``  -> a differentiable, *non-contiguous* input: the tensor is
                         built from ``base`` and then viewed with ``.t()``
                         (``view="t"``) or ``[::2]`` (``view="step"``)
* int / bool ndarray  -> a constant tensor (indices, masks, class targets)
* anything else       -> passed through unchanged (python scalars, dims, slices)

Tuples and lists are walked recursively, so ``cat([a, b])`` and
``a[(slice(None), idx)]`` samples work.  ``build_op_db(T)`` builds the table for
any torch-like module ``T``; ``op_db`` is the table for rgrad (the torch-parity
test builds a second one for torch and pairs entries by name).
"""

from __future__ import annotations

import math
import operator
import zlib
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import rgrad

INF = np.inf
NAN = np.nan
DEFAULT_DOMAIN = (-2.0, 2.0)
POSITIVE = (0.1, 3.0)
# Forward-only special values for elementwise ops (inf, nan and 0 included).
SPECIAL = np.array([0.0, INF, -INF, NAN, 1.5, -2.5])


# --------------------------------------------------------------------------
# Sample inputs
# --------------------------------------------------------------------------


class NC:
    """A non-contiguous float input: ``base`` becomes a tensor, then is viewed."""

    VIEWS = ("t", "step")

    def __init__(self, base: np.ndarray, view: str):
        assert view in self.VIEWS, view
        if view == "t":
            assert base.ndim == 2, "NC(view='t') needs a 2-D base"
        self.base = np.asarray(base, dtype=np.float64)
        self.view = view

    def view_numpy(self, arr: np.ndarray) -> np.ndarray:
        return arr.T if self.view == "t" else arr[::2]

    def view_tensor(self, t):
        return t.t() if self.view == "t" else t[::2]

    def __repr__(self):
        shape = self.view_numpy(self.base).shape
        return f"NC({self.view}, base{self.base.shape}->{shape})"


@dataclass
class SampleInput:
    args: tuple
    kwargs: dict = field(default_factory=dict)
    grad: bool = True  # False: forward-only (special values, kinks, ...)
    broadcast: bool = False  # inputs broadcast against each other: check grad shapes
    desc: str = ""
    # a known rgrad bug: the named checks (all when empty) are strict xfails, see bug()
    xfail: str = ""
    xfail_checks: tuple = ()

    def fwd(self, desc: str = "forward only") -> "SampleInput":
        self.grad = False
        self.desc = desc
        return self

    def bc(self) -> "SampleInput":
        self.broadcast = True
        return self

    CHECKS = ("forward", "grad", "gradgrad", "broadcast", "parity", "requires_grad", "not_implemented")

    def bug(self, reason: str, *checks: str) -> "SampleInput":
        """Mark a known rgrad bug: the given checks of this sample (all when none are
        given; names in ``CHECKS``) are strict xfails, so fixing the bug fails the test
        until the mark is removed."""
        assert all(c in self.CHECKS for c in checks), checks
        self.xfail = reason
        self.xfail_checks = checks
        return self

    def marks(self, check: str) -> tuple:
        import pytest

        if self.xfail and (not self.xfail_checks or check in self.xfail_checks):
            return (pytest.mark.xfail(reason=self.xfail, strict=True),)
        return ()

    def __repr__(self):
        def short(a):
            if isinstance(a, np.ndarray):
                return f"{a.dtype.name}{list(a.shape)}"
            if isinstance(a, (list, tuple)):
                inner = ", ".join(short(x) for x in a)
                return f"[{inner}]" if isinstance(a, list) else f"({inner})"
            return repr(a)

        flags = ("" if self.grad else " fwd-only") + (" bcast" if self.broadcast else "")
        return f"Sample({short(self.args)}, {self.kwargs}{flags}{' ' + self.desc if self.desc else ''})"

    # -- conversion -------------------------------------------------------

    def float_inputs(self) -> list[np.ndarray]:
        """The float64 arrays (NC bases included) that become differentiable leaves."""
        found: list[np.ndarray] = []

        def walk(obj):
            if isinstance(obj, NC):
                found.append(obj.base)
            elif isinstance(obj, np.ndarray):
                if obj.dtype.kind == "f":
                    found.append(obj)
            elif isinstance(obj, (tuple, list)):
                for o in obj:
                    walk(o)

        walk(self.args)
        return found

    def build_args(self, T, leaves) -> tuple:
        """The op's positional args, taking the float inputs from ``leaves`` in order."""
        it = iter(leaves)

        def build(obj):
            if isinstance(obj, NC):
                return obj.view_tensor(next(it))
            if isinstance(obj, np.ndarray):
                if obj.dtype.kind == "f":
                    return next(it)
                return T.tensor(obj.copy())
            if isinstance(obj, tuple):
                return tuple(build(o) for o in obj)
            if isinstance(obj, list):
                return [build(o) for o in obj]
            return obj

        args = build(self.args)
        rest = list(it)
        assert not rest, f"{len(rest)} leaves left over"
        return args

    def tensor_args(self, T, dtype: str, requires_grad: bool = False) -> tuple:
        """Positional args as tensors of ``dtype`` (a numpy dtype name)."""
        leaves = [
            T.tensor(x.astype(dtype), requires_grad=requires_grad) if requires_grad else T.tensor(x.astype(dtype))
            for x in self.float_inputs()
        ]
        return self.build_args(T, leaves)

    def numpy_args(self, dtype: str = "float64") -> tuple:
        """Positional args for the numpy reference: float inputs rounded to ``dtype``
        and computed on in float64, non-contiguous inputs viewed like the tensor."""

        def build(obj):
            if isinstance(obj, NC):
                return obj.view_numpy(obj.base.astype(dtype).astype(np.float64))
            if isinstance(obj, np.ndarray):
                if obj.dtype.kind == "f":
                    return obj.astype(dtype).astype(np.float64)
                return obj.copy()
            if isinstance(obj, tuple):
                return tuple(build(o) for o in obj)
            if isinstance(obj, list):
                return [build(o) for o in obj]
            return obj

        return build(self.args)

    def grad_problem(self, op: Callable, T) -> tuple[Callable, list[np.ndarray]]:
        """``(fn, inputs)``: ``fn(*leaf_tensors)`` runs the op on this sample with the
        float inputs replaced by ``leaf_tensors`` (NC views applied inside ``fn``);
        ``inputs`` are the float64 arrays those leaves are built from."""
        kwargs = self.kwargs

        def fn(*leaves):
            return op(*self.build_args(T, leaves), **kwargs)

        return fn, [x.copy() for x in self.float_inputs()]


def S(*args, **kwargs) -> SampleInput:
    """``S(*op_args, **op_kwargs)``: a sample calling ``op(*op_args, **op_kwargs)``."""
    return SampleInput(args, kwargs)


class Maker:
    """``make(*shape)``: float64 array drawn uniformly from the op's domain.

    For domains straddling 0, values are kept at least ``floor`` away from 0
    so that kinks at 0 (abs, relu, sign, norm p=1, ...) are never hit.
    """

    def __init__(self, rng: np.random.RandomState, domain):
        self.rng = rng
        self.low, self.high = domain

    def __call__(self, *shape, low=None, high=None, floor=0.1, signed=False):
        low = self.low if low is None else low
        high = self.high if high is None else high
        x = np.asarray(self.rng.uniform(low, high, size=shape), dtype=np.float64)
        if floor and low < 0 < high:
            x = np.where(np.abs(x) < floor, x + np.where(x < 0, -floor, floor), x)
        if signed:
            x = x * np.where(self.rng.rand(*shape) < 0.5, -1.0, 1.0)
        return np.asarray(x, dtype=np.float64)

    def ints(self, high, *shape):
        return np.asarray(self.rng.randint(0, high, size=shape), dtype=np.int64)

    def mask(self, *shape, p=0.5):
        return np.asarray(self.rng.rand(*shape) < p)


# --------------------------------------------------------------------------
# OpInfo
# --------------------------------------------------------------------------


@dataclass
class OpInfo:
    name: str
    op: Callable
    ref: Callable
    sample_inputs: Callable[[Maker, np.random.RandomState], list]
    dtypes: tuple = ("float32", "float64")
    atol: float = 1e-7  # forward, float64
    rtol: float = 1e-7
    atol_f32: float = 1e-5  # forward, float32
    rtol_f32: float = 2e-5
    grad_atol: float = 1e-5
    grad_rtol: float = 1e-3
    supports_grad: bool = True
    supports_gradgrad: bool = True
    # False: torch gives the op no forward derivative (its tangent is None, which the
    # forward-mode tests check instead of the derivative)
    supports_forward_ad: bool = True
    # with supports_forward_ad False: torch raises NotImplementedError with this text
    # (derivatives.yaml gives the op no forward formula: "Trying to use forward AD with
    # _cdist_forward ...") instead of giving no tangent
    forward_ad_error: str | None = None
    # torch records a node whose backward raises "derivative for aten::X is not implemented"
    grad_not_implemented: str | None = None
    not_implemented_node: str = "NotImplemented"  # that node's name
    # False: torch has no derivative for the in-place form (it overwrites what the
    # derivative needs): its entry expects the backward to raise
    inplace_grad: bool = True
    domain: tuple = DEFAULT_DOMAIN
    # the Tensor method (``"add_"``) or in-place operator (``"__iadd__"``) doing this op in
    # place: build_op_db adds an entry for it, see ``inplace_variant``
    inplace: str | None = None
    # the reference's float dtype is the expected result dtype (dtype conversions); by
    # default a float result has the dtype of the inputs under test
    keeps_ref_dtype: bool = False
    _samples: list | None = field(default=None, repr=False)

    @property
    def samples(self) -> list[SampleInput]:
        if self._samples is None:
            rng = np.random.RandomState(zlib.crc32(self.name.encode()) % (2**31))
            self._samples = list(self.sample_inputs(Maker(rng, self.domain), rng))
        return self._samples

    def tols(self, dtype: str) -> tuple[float, float]:
        return (self.atol_f32, self.rtol_f32) if dtype == "float32" else (self.atol, self.rtol)

    def reference(self, sample: SampleInput, dtype: str = "float64"):
        with np.errstate(all="ignore"):
            return self.ref(*sample.numpy_args(dtype), **sample.kwargs)

    def __repr__(self):
        return f"OpInfo({self.name})"


def _inplace_name(op: OpInfo) -> str:
    """``Tensor.add_`` for ``add``, ``Tensor.pow_.scalar_exponent`` for
    ``pow.scalar_exponent``, ``__iadd__.scalar`` for ``__add__.scalar``."""
    base = op.name.removeprefix("Tensor.")
    suffix = base.split(".", 1)[1] if "." in base else ""
    name = op.inplace if op.inplace.startswith("__") else f"Tensor.{op.inplace}"
    return f"{name}.{suffix}" if suffix else name


def _inplace_op(method: str) -> Callable:
    """``x.clone().method(*args)`` (an operator such as ``__iadd__`` goes through
    ``operator.iadd``, as ``y += b`` does). The clone keeps the leaf out of the in-place
    op, as torch's OpInfo does; the op must return ``self`` and bump its version."""
    call = getattr(operator, method.strip("_")) if method.startswith("__") else operator.methodcaller

    def op(x, *args, **kwargs):
        y = x.clone()
        before = y._version
        out = call(y, *args, **kwargs) if method.startswith("__") else call(method, *args, **kwargs)(y)
        assert out is y, f"{method} returned a new tensor instead of self"
        assert y._version > before, f"{method} did not bump the version counter"
        return out

    return op


def _self_shape(sample: SampleInput):
    """The shape of the sample's first argument when it is a float tensor input, else None."""
    first = sample.args[0] if sample.args else None
    if isinstance(first, NC):
        return first.view_numpy(first.base).shape
    if isinstance(first, np.ndarray) and first.dtype.kind == "f":
        return first.shape
    return None


def inplace_variant(op: OpInfo) -> OpInfo:
    """The entry for ``op``'s in-place form: the same reference, tolerances and flags, and
    the samples whose first argument is a float tensor of the result's shape (an in-place
    op cannot broadcast ``self``, nor change its dtype)."""

    def samples(m, rng):
        keep = []
        for s in op.samples:
            shape = _self_shape(s)
            if shape is None:
                continue
            expected = op.reference(s)
            if not isinstance(expected, (tuple, list)) and np.shape(expected) == shape:
                keep.append(s)
        return keep

    no_grad = {} if op.inplace_grad else dict(
        supports_grad=False, supports_gradgrad=False, grad_not_implemented=f"'inplace version of {op.name}'",
        not_implemented_node=op.name.capitalize() + "Backward1")
    return dataclasses.replace(op, name=_inplace_name(op), op=_inplace_op(op.inplace), sample_inputs=samples,
                               inplace=None, _samples=None, **no_grad)


# --------------------------------------------------------------------------
# numpy references
# --------------------------------------------------------------------------


def _axis(dim):
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        return tuple(dim)
    return dim


def _reduce(fn):
    def ref(a, dim=None, keepdim=False):
        return fn(a, axis=_axis(dim), keepdims=keepdim)

    return ref


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _var_ref(a, dim=None, unbiased=True, keepdim=False, correction=None):
    ddof = correction if correction is not None else (1 if unbiased else 0)
    return np.var(a, axis=_axis(dim), ddof=ddof, keepdims=keepdim)


def _std_ref(*args, **kwargs):
    return np.sqrt(_var_ref(*args, **kwargs))


def _norm_ref(a, p="fro", dim=None, keepdim=False):
    ax = _axis(dim)
    if p in ("fro", 2, 2.0):
        return np.sqrt(np.sum(a * a, axis=ax, keepdims=keepdim))
    if p in (1, 1.0):
        return np.sum(np.abs(a), axis=ax, keepdims=keepdim)
    raise NotImplementedError(p)


def _max_dim_ref(fn, argfn):
    def ref(a, dim, keepdim=False):
        return fn(a, axis=dim, keepdims=keepdim), argfn(a, axis=dim, keepdims=keepdim)

    return ref


def _arg_ref(argfn):
    def ref(a, dim=None, keepdim=False):
        if dim is None:
            return np.asarray(argfn(a), dtype=np.int64)
        return np.asarray(argfn(a, axis=dim, keepdims=keepdim), dtype=np.int64)

    return ref


def _logsumexp_ref(a, dim, keepdim=False):
    ax = _axis(dim)
    m = np.max(a, axis=ax, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    r = np.log(np.sum(np.exp(a - m), axis=ax, keepdims=True)) + m
    return r if keepdim else np.squeeze(r, axis=ax)


def _softmax_ref(a, dim):
    m = np.max(a, axis=dim, keepdims=True)
    e = np.exp(a - m)
    return e / np.sum(e, axis=dim, keepdims=True)


def _log_softmax_ref(a, dim):
    m = np.max(a, axis=dim, keepdims=True)
    return a - m - np.log(np.sum(np.exp(a - m), axis=dim, keepdims=True))


def _flatten_ref(a, start_dim=0, end_dim=-1):
    if a.ndim == 0:
        return a.reshape(1)
    s, e = start_dim % a.ndim, end_dim % a.ndim
    return a.reshape(a.shape[:s] + (int(np.prod(a.shape[s : e + 1])),) + a.shape[e + 1 :])


def _squeeze_ref(a, dim=None):
    if dim is None:
        return np.squeeze(a)
    if a.ndim == 0:
        return a
    if isinstance(dim, (tuple, list)):
        dims = tuple(d % a.ndim for d in dim if a.shape[d % a.ndim] == 1)
        return np.squeeze(a, axis=dims) if dims else a
    d = dim % a.ndim
    return np.squeeze(a, axis=d) if a.shape[d] == 1 else a


def _sizes(sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        return tuple(sizes[0])
    return tuple(sizes)


def _expand_ref(a, *sizes):
    sizes = _sizes(sizes)
    lead = len(sizes) - a.ndim
    shape = tuple(a.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
    return np.broadcast_to(a, shape).copy()


def _repeat_ref(a, *reps):
    return np.tile(a, _sizes(reps))


def _split_ref(a, split_size_or_sections, dim=0):
    n = a.shape[dim]
    if isinstance(split_size_or_sections, int):
        s = split_size_or_sections
        sizes = [s] * (n // s) + ([n % s] if n % s else [])
    else:
        sizes = list(split_size_or_sections)
    return tuple(np.split(a, np.cumsum(sizes)[:-1], axis=dim))


def _chunk_ref(a, chunks, dim=0):
    return _split_ref(a, -(-a.shape[dim] // chunks), dim)


def _gather_ref(a, dim, index):
    d = dim % a.ndim
    sl = tuple(slice(None) if i == d else slice(0, s) for i, s in enumerate(index.shape))
    return np.take_along_axis(a[sl], index, axis=d)


def _loss_reduce(x, reduction):
    if reduction == "mean":
        return np.mean(x)
    if reduction == "sum":
        return np.sum(x)
    return x


def _mse_ref(a, b, reduction="mean"):
    return _loss_reduce((a - b) ** 2, reduction)


def _nll_ref(logp, target, reduction="mean", ignore_index=-100):
    if logp.ndim == 1:  # one sample of C classes, a 0-d target
        out = _nll_ref(logp[None], target.reshape(1), reduction, ignore_index)
        return out.reshape(()) if reduction == "none" else out
    keep = target != ignore_index
    losses = np.where(keep, -logp[np.arange(logp.shape[0]), np.where(keep, target, 0)], 0.0)
    if reduction == "mean":
        # torch divides by the number of targets not ignored: 0/0 = nan when all are
        return np.sum(losses) / np.sum(keep)
    return _loss_reduce(losses, reduction)


def _cross_entropy_ref(x, target, reduction="mean", ignore_index=-100):
    return _nll_ref(_log_softmax_ref(x, -1), target, reduction, ignore_index)


def _narrow_ref(a, dim, start, length):
    d = dim % a.ndim
    start = start + a.shape[d] if start < 0 else start
    return a[(slice(None),) * d + (slice(start, start + length),)]


def _unflat(n, sizes):
    sizes = list(sizes)
    if -1 in sizes:
        known = int(np.prod([x for x in sizes if x != -1]))
        sizes[sizes.index(-1)] = n // known
    return tuple(sizes)


def _tensor_split_ref(a, ios, dim=0):
    return tuple(np.array_split(a, ios, axis=dim))


def _np_diff_kw(k):
    return {"dim": "axis"}.get(k, k)


def _cartesian_prod_ref(*ts):
    if len(ts) == 1:
        return ts[0]
    grids = np.meshgrid(*ts, indexing="ij")
    return np.stack([g.reshape(-1) for g in grids], axis=1)


def _nan_to_num_ref(a, nan=0.0, posinf=None, neginf=None):
    return np.nan_to_num(a, nan=nan, posinf=posinf, neginf=neginf)


def _nan_reduce_ref(f):
    def ref(a, dim=None, keepdim=False):
        return f(a, axis=dim if not isinstance(dim, list) else tuple(dim), keepdims=keepdim)
    return ref


def _logit_ref(a, eps=None):
    x = a if eps is None else np.clip(a, eps, 1 - eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(x / (1 - x))


def _moments_ref(f):
    def ref(a, dim=None, unbiased=None, keepdim=False, correction=None):
        if isinstance(dim, bool):
            dim, unbiased = None, dim
        ddof = correction if correction is not None else (0 if unbiased is False else 1)
        return (f(a, axis=dim, ddof=ddof, keepdims=keepdim), np.mean(a, axis=dim, keepdims=keepdim))
    return ref


def _cosine_ref(a, b, dim=1, eps=1e-8):
    a, b = np.broadcast_arrays(a, b)
    na = np.maximum(np.sqrt((a * a).sum(dim, keepdims=True)), eps)
    nb = np.maximum(np.sqrt((b * b).sum(dim, keepdims=True)), eps)
    return ((a / na) * (b / nb)).sum(dim)


def _unbind_ref(a, dim=0):
    return tuple(np.moveaxis(a, dim, 0))


def _index_put_ref(a, indices, values, accumulate=False):
    out = a.copy()
    if accumulate:
        np.add.at(out, tuple(indices), values)
    else:
        out[tuple(indices)] = values
    return out


def _setitem_ref(a, idx, value):
    out = a.copy()
    out[idx] = value
    return out


def _addmm_ref(c, a, b, beta=1, alpha=1):
    return (beta * c if beta != 0 else 0 * c) + alpha * (a @ b)


def _linear_ref(x, w, b=None):
    y = x @ w.T
    return y if b is None else y + b


# --------------------------------------------------------------------------
# Sample generators
# --------------------------------------------------------------------------


def away_from(x, points, gap=0.05):
    """Push the values of ``x`` at least ``gap`` away from each of ``points``."""
    for p in points:
        d = x - p
        x = np.where(np.abs(d) < gap, p + np.where(d < 0, -gap, gap) + d, x)
    return x


def erfinv_ref(y: float) -> float:
    """The inverse of math.erf, by bisection (NaN outside [-1, 1])."""
    if math.isnan(y) or abs(y) > 1:
        return math.nan
    if abs(y) == 1:
        return math.copysign(math.inf, y)
    lo, hi = -6.0, 6.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if math.erf(mid) < y else (lo, mid)
    return (lo + hi) / 2


def _lgamma_ref(x: float) -> float:
    """ln|Γ(x)|, +inf at the poles (C's lgamma; math.lgamma raises there)."""
    if math.isnan(x):
        return math.nan
    if math.isinf(x) or (x <= 0 and x == math.floor(x)):
        return math.inf
    return math.lgamma(x)


# Bernoulli numbers B_2k, k = 1..10, for the asymptotic series of the polygamma functions
_B2K = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798, -174611 / 330]


def _pow(x: float, e: int) -> float:
    """x ** e, inf where it overflows (Python raises OverflowError for floats there)."""
    try:
        return x**e
    except OverflowError:
        return math.inf


def polygamma_ref(n: int, x: float) -> float:
    """ψ⁽ⁿ⁾(x) in float64 from its definition: the recurrence ψ⁽ⁿ⁾(x) = ψ⁽ⁿ⁾(x + 1) -
    (-1)ⁿ n!/xⁿ⁺¹ up to x ≥ 20, then the asymptotic (Bernoulli) series; the reflection
    formula for digamma at negative x. torch's conventions at the poles and infinities."""
    if math.isnan(x) or x == -math.inf:
        return math.nan
    if x == math.inf:
        return math.inf if n == 0 else 0.0 if n == 1 else math.nan  # (torch's ζ(n + 1, ∞) is NaN)
    if x == 0:
        return -math.copysign(math.inf, x) if n == 0 else (math.inf if n % 2 else -math.inf)
    if x < 0 and x == math.floor(x):
        return math.nan if n == 0 else (math.inf if n % 2 else -math.inf)
    if n == 0 and x < 0:
        return polygamma_ref(0, 1 - x) - math.pi / math.tan(math.pi * (x - math.trunc(x)))
    fact = math.factorial(n)
    sign = -1.0 if n % 2 == 0 else 1.0  # (-1)^(n+1)
    acc = 0.0
    while x < 20:
        acc += (sign * fact / x ** (n + 1)) if n > 0 else -1 / x
        x += 1
    if n == 0:
        series = math.log(x) - 1 / (2 * x) - sum(b / (2 * k * _pow(x, 2 * k)) for k, b in enumerate(_B2K, 1))
    else:
        series = math.factorial(n - 1) / _pow(x, n) + fact / (2 * _pow(x, n + 1))
        series += sum(b * math.factorial(2 * k + n - 1) / (math.factorial(2 * k) * _pow(x, 2 * k + n))
                      for k, b in enumerate(_B2K, 1))
        series *= sign
    return acc + series


def unary_samples(special=SPECIAL):
    def gen(m, rng):
        out = [
            S(m(3, 4)),
            S(m()),
            S(m(0)),
            S(m(2, 0)),
            S(NC(m(4, 3), "t")),
            S(NC(m(6, 4), "step")),
        ]
        if special is not None:
            out.append(S(np.array(special, dtype=np.float64)).fwd("special values"))
        return out

    return gen


def variant_unary_samples(m, rng):
    return [S(m(2, 3)), S(NC(m(4, 3), "t"))]


def binary_samples(mb=None, special=None, extra=None):
    """Tensor-tensor samples: same shape, broadcasts, 0-d, empty, non-contiguous."""

    def gen(m, rng):
        b = (lambda *s: mb(m, *s)) if mb else m
        out = [
            S(m(3, 4), b(3, 4)),
            S(m(3, 1), b(1, 4)).bc(),
            S(m(2, 3), b(3)).bc(),
            S(m(), b()),
            S(m(), b(2, 3)).bc(),
            S(m(0), b(0)),
            S(m(2, 0), b(2, 1)).bc(),
            S(NC(m(4, 3), "t"), b(3, 4)),
            S(m(3, 4), NC(b(6, 4), "step")),
        ]
        if extra:
            out += extra(m, b, rng)
        if special is not None:
            out.append(S(np.array(special[0], dtype=np.float64), np.array(special[1], dtype=np.float64)).fwd("special values"))
        return out

    return gen


def variant_binary_samples(mb=None):
    def gen(m, rng):
        b = (lambda *s: mb(m, *s)) if mb else m
        return [S(m(2, 3), b(2, 3)), S(m(3, 1), b(1, 4)).bc(), S(NC(m(4, 3), "t"), b(3, 4))]

    return gen


def scalar_other_samples(mb_scalar=(2.5, -1.5, 2.0, 3)):
    """Tensor (op) python scalar samples; the last scalar is an int."""

    def gen(m, rng):
        s0, s1, s2, s3 = mb_scalar
        return [S(m(3, 4), s0), S(m(), s1), S(m(0), s2), S(NC(m(4, 3), "t"), s3)]

    return gen


def scalar_self_samples(scalars=(2.5, -1.5, 2.0, 3)):
    """Python scalar (op) tensor samples (reflected operators)."""

    def gen(m, rng):
        s0, s1, s2, s3 = scalars
        return [S(s0, m(3, 4)), S(s1, m()), S(s2, m(0)), S(s3, NC(m(4, 3), "t"))]

    return gen


def _denominator(m, *shape):
    return m(*shape, low=0.5, high=2.0, signed=True)


def _exponent(m, *shape):
    return m(*shape, low=-2.0, high=2.0)


def _positive(m, *shape):
    return m(*shape, low=0.5, high=2.0)


def reduction_samples(empty=True, three_d=True):
    def gen(m, rng):
        out = [
            S(m(3, 4)),
            S(m(3, 4), dim=1),
            S(m(3, 4), dim=-1, keepdim=True),
            S(m(3, 4), dim=0, keepdim=False),
            S(m()),
            S(NC(m(4, 3), "t"), dim=0),
            S(NC(m(6, 4), "step")),
        ]
        if three_d:
            out += [S(m(2, 3, 4), dim=(0, 2)), S(m(2, 3, 4), dim=[0, 1], keepdim=True)]
        if empty:
            out += [S(m(0)), S(m(2, 0), dim=1), S(m(2, 0), dim=0)]
        return out

    return gen


def max_dim_samples(m, rng):
    return [
        S(m(3, 4), 1),
        S(m(3, 4), 0, keepdim=True),
        S(m(2, 3, 4), -1),
        S(NC(m(4, 3), "t"), 1),
    ]


def max_full_samples(m, rng):
    return [S(m(3, 4)), S(m()), S(m(2, 3, 2)), S(NC(m(4, 3), "t"))]


def amax_samples(m, rng):
    return [
        S(m(3, 4), dim=1),
        S(m(2, 3, 4), dim=(0, 2)),
        S(m(3, 4), dim=0, keepdim=True),
        S(m(3, 4)),
        S(NC(m(4, 3), "t"), dim=-1),
    ]


def argmax_samples(m, rng):
    return [
        S(m(3, 4)),
        S(m(3, 4), dim=1),
        S(m(3, 4), dim=0, keepdim=True),
        S(m(2, 3, 4), dim=-1),
        S(NC(m(4, 3), "t"), dim=0),
    ]


def all_any_samples(m, rng):
    x = m(3, 4)
    x[0, 1] = 0.0
    x[1, :] = 0.0
    return [
        S(x),
        S(x, dim=1),
        S(x, dim=0, keepdim=True),
        S(m.mask(2, 3)),
        S(m.mask(2, 3), dim=-1),
        S(m.ints(3, 2, 5), dim=1),
        S(np.zeros((0, 3)), dim=0),
        S(np.array([np.nan, 0.0])),
    ]


def var_samples(m, rng):
    return [
        S(m(3, 4)),
        S(m(3, 4), dim=1),
        S(m(3, 4), dim=0, keepdim=True),
        S(m(3, 4), dim=1, unbiased=False),
        S(m(3, 4), unbiased=False),
        S(m(2, 3, 4), dim=(0, 2), correction=0),
        S(m(3, 4), dim=-1, correction=2),
        S(NC(m(4, 3), "t"), dim=0),
        S(NC(m(6, 4), "step")),
    ]


def norm_samples(m, rng):
    return [
        S(m(3, 4)),
        S(m(3, 4), p=1),
        S(m(3, 4), dim=1),
        S(m(3, 4), p=1, dim=0),
        S(m(3, 4), p=2, dim=1, keepdim=True),
        S(m(2, 3, 4), p=2, dim=(0, 2)),
        S(m(5)),
        S(NC(m(4, 3), "t"), dim=0),
    ]


def logsumexp_samples(m, rng):
    return [
        S(m(3, 4), dim=1),
        S(m(3, 4), dim=0, keepdim=True),
        S(m(2, 3, 4), dim=(0, 2)),
        S(m(3, 4) * 10 + 1000.0, dim=1).fwd("large values (stability)"),
        S(m(2, 3) + 500.0, dim=1),
        S(NC(m(4, 3), "t"), dim=-1),
        S(np.array([[-INF, 0.0, 1.0], [2.0, -INF, 3.0]]), dim=1).fwd("-inf entries"),
    ]


def softmax_samples(m, rng):
    return [
        S(m(3, 4), dim=1),
        S(m(3, 4), dim=0),
        S(m(2, 3, 4), dim=-1),
        S(m(2, 3) + 1000.0, dim=1),
        S(NC(m(4, 3), "t"), dim=1),
        S(np.array([[-INF, 0.0, 1.0], [2.0, -INF, 3.0]]), dim=1).fwd("-inf entries"),
    ]


def softmax_variant_samples(m, rng):
    return [S(m(3, 4), dim=-1), S(NC(m(4, 3), "t"), dim=0)]


def clamp_samples(m, rng):
    def mk(*shape):
        return away_from(m(*shape), (-0.5, 0.5))

    return [
        S(mk(3, 4), min=-0.5, max=0.5),
        S(mk(3, 4), min=-0.5),
        S(mk(3, 4), max=0.5),
        S(mk(), min=-0.5, max=0.5),
        S(mk(0), min=-0.5, max=0.5),
        S(NC(mk(4, 3), "t"), min=-0.5, max=0.5),
        S(np.array([0.0, INF, -INF, NAN, 0.5, -0.5]), min=-0.5, max=0.5).fwd("special values"),
    ]


def clamp_tensor_samples(m, rng):
    """Tensor bounds (ClampBackward0): x kept away from the bounds (the gradient jumps
    there), bounds broadcast, one bound None, min > max (max is taken everywhere)."""

    def mk(*shape):
        return away_from(m(*shape), (-0.5, 0.5))

    lo, hi = np.full((3, 4), -0.5), np.full((3, 4), 0.5)
    return [
        S(mk(3, 4), lo, hi),
        S(mk(3, 4), np.full(4, -0.5), np.full((3, 1), 0.5)).bc(),
        S(mk(4), np.full((3, 1), -0.5), None).bc(),
        S(mk(3, 4), None, np.full(4, 0.5)).bc(),
        S(mk(3, 4), np.array(-0.5), np.array(0.5)).bc(),
        S(mk(3, 4), hi.copy(), lo.copy()),  # min > max
        S(mk(), np.array(-0.5), np.array(0.5)),
        S(mk(0), np.full(0, -0.5), None),
        S(NC(mk(4, 3), "t"), lo, NC(np.full((4, 3), 0.5), "t")),
        S(np.array([0.0, INF, -INF, NAN, 0.5, -0.5, 1.0]), np.array([0.0, 0.0, NAN, 0.0, 0.5, 1.0, -INF]),
          np.array([1.0, INF, 1.0, 1.0, 0.5, 0.0, NAN])).fwd("special values, ties"),
    ]


def clamp_variant_samples(m, rng):
    return [S(away_from(m(2, 3), (-0.5, 0.5)), -0.5, 0.5), S(NC(away_from(m(4, 3), (-0.5, 0.5)), "t"), -0.5, 0.5)]


def matmul_samples(m, rng):
    return [
        S(m(4), m(4)),
        S(m(3, 4), m(4)),
        S(m(4), m(4, 2)),
        S(m(3, 4), m(4, 2)),
        S(m(2, 3, 4), m(2, 4, 2)),
        S(m(2, 1, 3, 4), m(5, 4, 2)).bc(),
        S(m(2, 3, 4), m(4, 2)).bc(),
        S(m(4), m(2, 4, 3)).bc(),
        S(NC(m(4, 3), "t"), m(4, 2)),
        S(m(3, 0), m(0, 2)),
    ]


def mm_samples(m, rng):
    return [
        S(m(3, 4), m(4, 2)),
        S(NC(m(4, 3), "t"), NC(m(2, 4), "t")),
        S(NC(m(6, 4), "step"), m(4, 5)),
        S(m(3, 0), m(0, 2)),
        S(m(0, 3), m(3, 2)),
    ]


def _inplace_view(method: str) -> Callable:
    """``x.clone().method(*args)`` for an in-place view op (``squeeze_``, ``t_``, ...):
    it must return ``self`` with the new shape and bump the version counter."""

    def op(x, *args):
        y = x.clone()
        before = y._version
        out = getattr(y, method)(*args)
        assert out is y, f"{method} returned a new tensor instead of self"
        assert y._version > before, f"{method} did not bump the version counter"
        return out

    return op


def shape_samples_2d(m, rng):
    return [S(m(3, 4)), S(NC(m(4, 3), "t"))]


def getitem_samples(m, rng):
    a = lambda: m(4, 5)  # noqa: E731
    a3 = lambda: m(3, 4, 5)  # noqa: E731
    idx = np.array([2, 0, 2], dtype=np.int64)  # repeated index: grads accumulate
    return [
        S(a(), 1),
        S(a(), -1),
        S(a(), slice(1, None, 2)),
        S(a(), (slice(None), 2)),
        S(a(), (slice(-3, None, 2), slice(None, 4, 3))),
        S(a(), (None, slice(1, 3))),
        S(a3(), (Ellipsis, 1)),
        S(a3(), (None, Ellipsis, slice(None, None, 2))),
        S(a(), (0, 1)),
        S(a(), m.mask(4, 5)),
        S(a(), m.mask(4)),
        S(a(), np.zeros(4, dtype=bool)),
        S(a(), idx),
        S(a(), [0, 3]),
        S(a(), (slice(1, None), idx)),
        S(a(), (idx, slice(None, None, 2))),
        S(a3(), (slice(None), np.array([[0, 3], [1, 1]], dtype=np.int64))),
        S(a3(), (np.array([0, 2], dtype=np.int64), np.array([1, 3], dtype=np.int64))),
        S(a3(), (idx[:2], slice(None), 0)),
        S(NC(m(5, 4), "t"), (slice(None, None, 2), 1)),
        S(NC(m(8, 5), "step"), (Ellipsis, idx)),
    ]


def gather_samples(m, rng):
    return [
        S(m(3, 4), 1, m.ints(4, 3, 2)),
        S(m(3, 4), 0, m.ints(3, 2, 4)),
        S(m(3, 4), 1, m.ints(4, 2, 5)),  # index smaller than input in dim 0, longer in dim 1
        S(m(2, 3, 4), -1, m.ints(4, 2, 3, 2)),
        S(NC(m(4, 3), "t"), 1, np.array([[0, 0], [3, 3], [1, 2]], dtype=np.int64)),
        S(m(3, 4), 1, np.zeros((2, 0), dtype=np.int64)),
    ]


def index_select_samples(m, rng):
    return [
        S(m(4, 3), 0, np.array([3, 0, 3], dtype=np.int64)),
        S(m(4, 3), 1, np.array([2, 0], dtype=np.int64)),
        S(m(5), 0, np.array([4, 4, 1], dtype=np.int64)),
        S(m(4, 3), 0, np.zeros(0, dtype=np.int64)),
        S(NC(m(3, 4), "t"), 1, np.array([1, 2, 1], dtype=np.int64)),
    ]



# ---- ordering ops (sort, topk, kthvalue, median): random draws are distinct, so the
# chosen indices (and finite differences) are well defined


def _sort_ref(a, dim=-1, descending=False, stable=None):
    if a.ndim == 0:
        return a, np.asarray(0, dtype=np.int64)
    idx = np.argsort(-a if descending else a, axis=dim, kind="stable")
    return np.take_along_axis(a, idx, axis=dim), idx.astype(np.int64)


def _topk_ref(a, k, dim=-1, largest=True, sorted=True):
    if a.ndim == 0:
        return a, np.asarray(0, dtype=np.int64)
    i = np.take(_sort_ref(a, dim, descending=largest)[1], np.arange(k), axis=dim)
    return np.take_along_axis(a, i, axis=dim), i


def _kthvalue_ref(a, k, dim=-1, keepdim=False):
    if a.ndim == 0:
        return a, np.asarray(0, dtype=np.int64)
    v, i = _sort_ref(a, dim)
    i = np.take(i, [k - 1], axis=dim)
    v = np.take_along_axis(a, i, axis=dim)
    if not keepdim:
        v, i = np.squeeze(v, dim), np.squeeze(i, dim)
    return v, i


def _median_dim_ref(a, dim, keepdim=False):
    n = a.shape[dim] if a.ndim else 1
    return _kthvalue_ref(a, (n - 1) // 2 + 1, dim, keepdim)


def _median_ref(a):
    f = np.sort(a.reshape(-1))
    return f[(f.size - 1) // 2]


def sort_samples(m, rng):
    return [
        S(m(3, 4)),
        S(m(3, 4), 0),
        S(m(2, 3, 4), -2, True),
        S(m(3, 4), dim=1, descending=True, stable=True),
        S(m(5), stable=False),
        S(NC(m(4, 3), "t"), 1),
        S(m()),
        S(m(0, 3), 0),
    ]


def topk_samples(m, rng):
    return [
        S(m(3, 5), 2),
        S(m(3, 5), 3, 0, largest=False),
        S(m(2, 3, 4), 4, -1),
        S(m(200), 3),  # ATen's partial_sort path (k * 64 <= n)
        S(NC(m(4, 3), "t"), 1, 0),
        S(m(3, 4), 0),
        S(m(), 1),
    ]


def kthvalue_samples(m, rng):
    return [
        S(m(3, 5), 2),
        S(m(3, 5), 3, 0, keepdim=True),
        S(m(2, 3, 4), 4, -1),
        S(NC(m(4, 3), "t"), 1, 0),
        S(m(), 1),
    ]


def median_dim_samples(m, rng):
    return [
        S(m(3, 5), 1),
        S(m(4, 3), 0, keepdim=True),
        S(m(2, 3, 4), -1),
        S(NC(m(4, 3), "t"), 1),
        S(m(), 0),
    ]


def median_samples(m, rng):
    return [S(m(3, 4)), S(m(5)), S(m()), S(NC(m(4, 3), "t"))]


def _quantile_ref(a, q, dim=None, keepdim=False, interpolation="linear", nan=False):
    f = np.nanquantile if nan else np.quantile
    return np.asarray(f(a, q, axis=dim, keepdims=keepdim, method=interpolation))


def quantile_samples(m, rng):
    q2 = np.array([0.3, 0.77])
    return [
        S(m(3, 5), 0.3),
        S(m(3, 5), 0.6, 1),
        S(m(3, 5), q2, 0, keepdim=True),
        S(m(2, 3, 4), q2, -2),
        S(m(2, 5), 0.45, 1, interpolation="lower"),
        S(m(2, 5), q2, 1, interpolation="higher"),
        S(m(4, 5), 0.3, 1, interpolation="midpoint"),
        S(m(4, 5), 0.66, None, True, interpolation="nearest"),
        S(NC(m(5, 3), "t"), 0.5, 1),
        S(m(), 0.25),
    ]


def _mode_ref(a, dim=-1, keepdim=False):
    # the samples' values are distinct: each slice's mode is its smallest value
    return _kthvalue_ref(a, 1, dim, keepdim)


def mode_samples(m, rng):
    return [S(m(3, 5)), S(m(4, 3), 0, keepdim=True), S(m(2, 3, 4), -2), S(NC(m(4, 3), "t"), 1), S(m(), 0)]



# ---- the scatter family: scatter's samples write each position once (an overwritten
# src element has no gradient in finite differences)


def _scatter_ref(a, dim, idx, src, add=False):
    out = np.array(a, dtype=np.float64, copy=True)
    for pos in np.ndindex(*idx.shape):
        t = list(pos)
        t[dim] = idx[pos]
        v = src[pos] if isinstance(src, np.ndarray) else src
        if add:
            out[tuple(t)] += v
        else:
            out[tuple(t)] = v
    return out


def _index_add_ref(a, dim, idx, src, alpha=1):
    out = np.array(a, dtype=np.float64, copy=True)
    for t, i in enumerate(idx.reshape(-1)):
        sl = (slice(None),) * dim + (i,)
        out[sl] += alpha * (np.take(src, t, axis=dim) if src.ndim else src)
    return out


def _index_copy_ref(a, dim, idx, src):
    out = np.array(a, dtype=np.float64, copy=True)
    for t, i in enumerate(idx.reshape(-1)):
        out[(slice(None),) * dim + (i,)] = np.take(src, t, axis=dim) if src.ndim else src
    return out


def _index_fill_ref(a, dim, idx, v):
    out = np.array(a, dtype=np.float64, copy=True)
    for i in idx.reshape(-1):
        out[(slice(None),) * dim + (i,)] = v
    return out


def _i64(x):
    return np.array(x, dtype=np.int64)


def scatter_samples(m, rng):
    # (src of the index's shape: a larger src's gradient is the index's shape, which
    # torch's engine refuses as rgrad's does; forward only)
    return [
        S(m(3, 4), 1, _i64([[0, 2], [3, 1], [1, 0]]), m(3, 2)),
        S(m(3, 4), 0, _i64([[2, 0, 1, 1]]), m(1, 4)),
        S(m(2, 3, 4), -1, _i64([[[3, 0]], [[1, 2]]]), m(2, 1, 2)),
        S(NC(m(4, 3), "t"), 1, _i64([[1], [0], [3]]), m(3, 1)),
        S(m(3, 4), 1, _i64([[0, 2], [3, 1], [1, 0]]), m(3, 3)).fwd("src larger than the index"),
    ]


def _scatter_reduce_ref(a, dim, idx, src, reduce, include_self=True):
    out = np.array(a, dtype=np.float64, copy=True)
    groups: dict = {}
    for pos in np.ndindex(*idx.shape):
        t = list(pos)
        t[dim] = idx[pos]
        groups.setdefault(tuple(t), []).append(src[pos])
    for t, vs in groups.items():
        vals = ([out[t]] if include_self else []) + vs
        out[t] = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce](vals)
    return out


def scatter_reduce_samples(m, rng):
    # repeated positions (each reduction's join), both include_self, strided operands
    idx = _i64([[0, 0, 0], [3, 1, 3], [2, 2, 1]])
    return [
        S(m(3, 4), 1, idx, m(3, 3), "sum"),
        S(m(3, 4), 1, idx, m(3, 3), "mean", include_self=False),
        S(m(3, 4), 1, idx, m(3, 3), "amax"),
        S(m(3, 4), 1, idx, m(3, 3), "amin", include_self=False),
        S(m(3, 4), 0, _i64([[2, 0, 1, 1], [2, 2, 0, 1]]), m(2, 4), "mean"),
        S(NC(m(4, 3), "t"), 1, _i64([[1], [0], [3]]), m(3, 1), "amax", include_self=False),
    ]


def scatter_add_samples(m, rng):
    return scatter_samples(m, rng) + [S(m(3, 4), 1, _i64([[0, 0, 0], [3, 1, 3], [2, 2, 1]]), m(3, 3))]


def scatter_value_samples(m, rng):
    return [S(m(3, 4), 1, _i64([[0, 2], [3, 3], [1, 0]]), 1.5), S(m(2, 3), 0, _i64([[1, 0, 1]]), -2.0)]


def index_add_samples(m, rng):
    return [
        S(m(4, 3), 0, _i64([3, 0, 3]), m(3, 3)),
        S(m(4, 3), 1, _i64([2, 0]), m(4, 2), alpha=2.5),
        S(m(5), 0, _i64([4, 4, 1]), m(3)),
        S(NC(m(3, 4), "t"), 1, _i64([1, 2, 1]), m(4, 3)),
        S(m(4, 3), 0, np.zeros(0, dtype=np.int64), m(0, 3)),
    ]


def index_copy_samples(m, rng):
    return [
        S(m(4, 3), 0, _i64([3, 0]), m(2, 3)),
        S(m(4, 3), 1, _i64([2, 0]), m(4, 2)),
        S(m(5), 0, _i64([4, 1]), m(2)),
        S(NC(m(3, 4), "t"), 1, _i64([1, 2]), m(4, 2)),
    ]


def index_fill_samples(m, rng):
    return [
        S(m(4, 3), 0, _i64([3, 0, 3]), 1.5),
        S(m(4, 3), 1, _i64([2, -1]), -0.5),
        S(NC(m(3, 4), "t"), 1, _i64([1]), 2.0),
    ]


def masked_select_samples(m, rng):
    return [
        S(m(3, 4), np.array([[True, False, True, True], [False] * 4, [True, False, False, True]])),
        S(m(3, 4), np.array([True, False, True, False])).bc(),
        S(m(4), np.array([[True, False, True, False], [False, True, True, False]])).bc(),
        S(NC(m(4, 3), "t"), np.array([[True, False, True, False]] * 3)),
        S(m(), np.array(True)),
    ]


def take_along_dim_samples(m, rng):
    return [
        S(m(3, 4), _i64([[0, 3], [1, 1], [2, 0]]), 1),
        S(m(3, 4), _i64([[2, 0, 1, 1]]), 0),
        S(m(3, 4), _i64([[0], [3], [1]]), -1),
        S(m(3, 4), _i64([5, 0, 11])),
        S(NC(m(4, 3), "t"), _i64([[1, 2]]), 1),
    ]


def _take_along_dim_ref(a, idx, dim=None):
    if dim is None:
        return a.reshape(-1)[idx.reshape(-1)]
    return np.take_along_axis(a, idx, axis=dim)


def nonzero_samples(m, rng):
    return [
        S(np.array([[1.0, 0.0, 2.0], [0.0, 0.0, -1.0]])),
        S(np.array([0.0, 3.0, 0.0, 4.0])),
        S(np.zeros((2, 0))),
        S(np.array([[0.0, 0.0]])),
    ]


def masked_fill_samples(m, rng):
    return [
        S(m(3, 4), m.mask(3, 4), 0.5),
        S(m(3, 4), m.mask(4), -1.0),
        S(m(3, 4), m.mask(3, 1), 2),
        S(m(), np.array(True), 1.5),
        S(NC(m(4, 3), "t"), m.mask(3, 4), 0.0),
        S(m(3, 4), m.mask(3, 4), m()),  # a 0-d tensor value gets the filled positions' gradient
        S(m(2, 3), m.mask(2, 3), -INF).fwd("fill with -inf"),
    ]


def where_samples(m, rng):
    return [
        S(m.mask(3, 4), m(3, 4), m(3, 4)),
        S(m.mask(3, 1), m(1, 4), m(3, 4)).bc(),
        S(m.mask(2, 3), m(), m(3)).bc(),
        S(np.array(True), m(), m()),
        S(m.mask(0), m(0), m(0)),
        S(m.mask(3, 4), NC(m(4, 3), "t"), NC(m(6, 4), "step")),
    ]


def comparison_samples(m, rng):
    def partly_equal(a, shape):
        b = m(*shape)
        return np.where(m.mask(*shape, p=0.3), np.broadcast_to(a, shape), b) if a.shape == shape else b

    a = m(3, 4)
    return [
        S(a, partly_equal(a, (3, 4))),
        S(m(3, 1), m(1, 4)),
        S(m(2, 3), m(3)),
        S(m(), m()),
        S(m(0), m(0)),
        S(NC(m(4, 3), "t"), m(3, 4)),
        S(np.array([NAN, NAN, INF, -INF, 0.0, 1.0]), np.array([NAN, 1.0, INF, INF, 0.0, NAN])).fwd("special values"),
    ]


def comparison_scalar_samples(m, rng):
    return [S(m(3, 4), 0.5), S(np.array([0.0, 1.0, NAN, INF, -1.0]), 1.0), S(m(2, 3), 0)]


def mse_samples(m, rng):
    return [
        S(m(3, 4), m(3, 4)),
        S(m(3, 4), m(3, 4), reduction="sum"),
        S(m(3, 4), m(3, 4), reduction="none"),
        S(m(), m()),
        S(NC(m(4, 3), "t"), m(3, 4), reduction="mean"),
    ]


def class_targets(m, n, c):
    return m.ints(c, n)


def cross_entropy_samples(m, rng):
    return [
        S(m(4, 5), class_targets(m, 4, 5)),
        S(m(4, 5), class_targets(m, 4, 5), reduction="sum"),
        S(m(4, 5), class_targets(m, 4, 5), reduction="none"),
        S(m(3, 2) * 20, class_targets(m, 3, 2)),
        S(NC(m(5, 3), "t"), class_targets(m, 3, 5)),
    ]


def ignore_index_samples(m, rng):
    """nll_loss / cross_entropy with ignored targets: the default -100, a real class as
    ignore_index, 1-d input, and every target ignored (mean = 0/0 = nan, as in torch)."""
    t = np.array([2, 0, 2, 4], dtype=np.int64)
    return [
        S(m(4, 5), np.array([1, -100, 3, -100], dtype=np.int64)),  # mean over the 2 kept targets
        S(m(4, 5), t, ignore_index=2),
        S(m(4, 5), t, reduction="sum", ignore_index=2),
        S(m(4, 5), t, reduction="none", ignore_index=2),
        S(NC(m(5, 4), "t"), t, ignore_index=0),
        S(m(5), np.array(3, dtype=np.int64)),
        S(m(5), np.array(3, dtype=np.int64), reduction="none", ignore_index=3),
        S(m(3, 5), np.full(3, -100, dtype=np.int64), reduction="sum"),  # all ignored: 0, zero grad
        S(m(3, 5), np.full(3, -100, dtype=np.int64)).fwd("every target ignored: mean is nan"),
        S(m(3, 5), np.full(3, 1, dtype=np.int64), ignore_index=1).fwd("every target ignored: mean is nan"),
    ]


def mv_samples(m, rng):
    return [
        S(m(3, 4), m(4)),
        S(NC(m(4, 3), "t"), m(4)),
        S(m(3, 4), NC(m(8), "step")),
        S(m(0, 3), m(3)),
        S(m(3, 0), m(0)),
    ]


def narrow_samples(m, rng):
    return [
        S(m(4, 5), 0, 1, 2),
        S(m(4, 5), 1, 0, 5),
        S(m(4, 5), -1, -3, 2),  # negative dim and start
        S(m(4, 5), 0, 4, 0),  # empty
        S(m(3, 4, 2), 1, 1, 2),
        S(NC(m(5, 4), "t"), 0, 1, 3),
    ]


def select_samples(m, rng):
    return [
        S(m(4, 5), 0, 2),
        S(m(4, 5), 1, -1),
        S(m(5), 0, 3),  # 0-d result
        S(m(2, 3, 4), -2, 0),
        S(NC(m(5, 4), "t"), 0, 1),
        S(NC(m(6, 4), "step"), 1, 2),
    ]


def unbind_samples(m, rng):
    return [
        S(m(3, 4)),
        S(m(3, 4), 1),
        S(m(2, 3, 4), dim=-1),
        S(m(4)),  # 0-d pieces
        S(m(2, 0)),
        S(NC(m(4, 3), "t"), 0),
        S(m(0, 3)).fwd("no pieces"),
    ]


def index_put_samples(m, rng):
    rows = np.array([0, 2], dtype=np.int64)
    return [
        S(m(4, 5), (rows,), m(2, 5)),
        S(m(4, 5), (rows,), m(5)).bc(),  # values broadcast over the indexed rows
        S(m(4, 5), (np.array([1, 3], dtype=np.int64), np.array([0, 4], dtype=np.int64)), m(2)),
        S(m(4, 5), (np.array([1, 3], dtype=np.int64), np.array([0, 4], dtype=np.int64)), m()).bc(),
        S(m(4, 5), (np.array([0, 2, 0], dtype=np.int64),), m(3, 5), accumulate=True),  # repeated rows add up
        S(m(4, 5), (np.array([1, 1], dtype=np.int64), np.array([2, 2], dtype=np.int64)), m(2), accumulate=True),
        S(m(4, 5), (m.mask(4, 5),), m()).bc(),
        S(m(4, 5), (np.zeros(0, dtype=np.int64),), m(0, 5)),
        S(NC(m(5, 4), "t"), (np.array([3, 1], dtype=np.int64),), m(2, 5)),
    ]


def setitem_samples(m, rng):
    idx = np.array([2, 0], dtype=np.int64)
    return [
        S(m(4, 5), 1, m(5)),
        S(m(4, 5), (slice(None), slice(1, None, 2)), m(4, 2)),
        S(m(4, 5), (Ellipsis, 0), m()).bc(),
        S(m(4, 5), (slice(1, 3), 2), 0.5),
        S(m(4, 5), idx, m(2, 5)),
        S(m(4, 5), (idx, slice(None, 2)), m(1, 2)).bc(),
        S(m(4, 5), m.mask(4, 5), m()).bc(),
        S(m(4, 5), m.mask(4), -1.5),
        S(NC(m(5, 4), "t"), (slice(None, None, 2), 1), m(2)),
    ]


def addmm_samples(m, rng):
    return [
        S(m(2), m(3, 4), m(4, 2)).bc(),  # a bias, as in a linear layer
        S(m(3, 2), m(3, 4), m(4, 2)),
        S(m(3, 1), NC(m(4, 3), "t"), NC(m(2, 4), "t")).bc(),
        S(m(3, 2), m(3, 4), m(4, 2), beta=0.5, alpha=2.0),
        S(m(2), m(3, 4), m(4, 2), beta=0, alpha=-1).bc(),
        S(m(), m(3, 0), m(0, 2)).bc(),
    ]


def linear_samples(m, rng):
    return [
        S(m(3, 4), m(2, 4), m(2)),
        S(m(4), m(2, 4), m(2)),
        S(m(2, 3, 4), m(5, 4), m(5)).bc(),
        S(m(3, 4), NC(m(4, 2), "t"), m(2)),
        S(m(3, 4), m(2, 4)),
        S(m(2, 3, 4), m(5, 4)),
    ]


# --------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------


# ---- flip / roll / rot90, triangles, diagonals, cumulative ops -------------------------


def _flip_ref(a, dims):
    if a.ndim == 0:
        return a.copy()
    return np.flip(a, axis=tuple(d % a.ndim for d in dims)).copy()


def _roll_ref(a, shifts, dims=None):
    return np.roll(a, shifts, axis=dims)


def _rot90_ref(a, k=1, dims=(0, 1)):
    return np.rot90(a, k, axes=tuple(dims)).copy()


def _diagonal_ref(a, offset=0, dim1=0, dim2=1):
    return np.diagonal(a, offset, dim1, dim2).copy()


def _diag_embed_ref(a, offset=0, dim1=-2, dim2=-1):
    n = a.shape[-1]
    side = n + abs(offset)
    nd = a.ndim + 1
    out = np.zeros(a.shape[:-1] + (side, side), dtype=a.dtype)
    idx = np.arange(n)
    rows, cols = (idx, idx + offset) if offset >= 0 else (idx - offset, idx)
    out[..., rows, cols] = a
    return np.moveaxis(out, (-2, -1), (dim1 % nd, dim2 % nd))


def _cum_ref(fn):
    def ref(a, d):
        return fn(a, axis=d) if a.ndim else a.copy()

    return ref


def _cum_extreme_ref(is_max):
    """cummax / cummin as torch's CPU kernel: NaN propagates, of equal values the last."""
    def ref(a, d):
        if a.ndim == 0:
            return a.copy(), np.zeros((), np.int64)
        x = np.moveaxis(a, d, -1)
        vals, idx = np.empty_like(x), np.zeros(x.shape, np.int64)
        for pos in np.ndindex(x.shape[:-1]):
            best, bi = None, 0
            for k, v in enumerate(x[pos]):
                if k == 0 or np.isnan(v) or (not np.isnan(best) and (v >= best if is_max else v <= best)):
                    best, bi = v, k
                vals[pos + (k,)], idx[pos + (k,)] = best, bi
        return np.moveaxis(vals, -1, d), np.moveaxis(idx, -1, d)

    return ref


def flip_samples(m, rng):
    return [
        S(m(3, 4), (0,)),
        S(m(3, 4), [0, 1]),
        S(m(2, 3, 4), (-1, 0)),
        S(m(), (0,)),
        S(m(0, 3), (1,)),
        S(m(3, 4), ()),
        S(NC(m(4, 3), "t"), (0,)),
        S(NC(m(8, 3), "step"), (1, 0)),
    ]


def roll_samples(m, rng):
    return [
        S(m(3, 4), 1),
        S(m(3, 4), -5),
        S(m(3, 4), 2, 1),
        S(m(3, 4), (1, 2), (0, 1)),
        S(m(2, 3, 4), (1, -1), (-1, 0)),
        S(m(3, 4), (1, 1), (1, 1)),
        S(m(), 1),
        S(m(0, 3), 1, 0),
        S(NC(m(4, 3), "t"), 1, 0),
        S(NC(m(4, 3), "t"), 2),
        S(m(3, 4), 2**62, 0),
    ]


def rot90_samples(m, rng):
    return [
        S(m(3, 4)),
        S(m(3, 4), 2),
        S(m(3, 4), -1),
        S(m(3, 4), 3, [1, 0]),
        S(m(2, 3, 4), 1, [0, 2]),
        S(m(2, 3, 4), 5, [-1, 1]),
        S(m(3, 4), 0),
        S(NC(m(4, 3), "t"), 1),
        S(m(0, 2), 1),
    ]


def triangle_samples(m, rng):
    return [
        S(m(3, 4)),
        S(m(3, 4), 1),
        S(m(3, 4), -1),
        S(m(4, 3), diagonal=2),
        S(m(2, 3, 4), -2),
        S(m(3, 4), 10),
        S(m(3, 4), -10),
        S(NC(m(4, 3), "t")),
        S(m(0, 3)),
    ]


def diagonal_samples(m, rng):
    return [
        S(m(3, 4)),
        S(m(3, 4), 1),
        S(m(3, 4), -2),
        S(m(2, 3, 4), 0, 1, 2),
        S(m(2, 3, 4), 1, -1, 0),
        S(m(3, 4), 10),
        S(NC(m(4, 3), "t"), 1),
        S(m(3, 4), offset=-1, dim1=1, dim2=0),
        S(m(0, 3)),
    ]


def diag_embed_samples(m, rng):
    return [
        S(m(3)),
        S(m(2, 3)),
        S(m(3), 1),
        S(m(3), -2),
        S(m(2, 3), 0, 0, 2),
        S(m(2, 3), 1, 2, 0),
        S(m(0)),
        S(NC(m(4, 3), "t"), -1, -1, 0),
    ]


def diag_samples(m, rng):
    return [
        S(m(3)),
        S(m(3), 1),
        S(m(3), -2),
        S(m(3, 4)),
        S(m(3, 4), 1),
        S(m(3, 4), -2),
        S(m(3, 4), 5),
        S(NC(m(4, 3), "t"), 1),
        S(NC(m(8), "step")),
    ]


def cumulative_samples(m, rng):
    return [
        S(m(3, 4), 0),
        S(m(3, 4), 1),
        S(m(2, 3, 4), -1),
        S(m(2, 3, 4), 1),
        S(m(), 0),
        S(m(), -1),
        S(m(0, 3), 0),
        S(m(3, 1), 1),
        S(NC(m(4, 3), "t"), 1),
        S(NC(m(8, 3), "step"), 0),
    ]


def cumprod_zero_samples(m, rng):
    def zeros(desc, *args):
        s = S(*args)
        s.desc = desc
        return s

    return [
        zeros("zeros", np.array([[1.5, 0.0, 2.0, 0.5], [0.5, -1.0, 0.0, 0.0]]), 1),
        zeros("zero first", np.array([0.0, 1.5, -2.0]), 0),
        zeros("zeros along dim 0", np.array([[1.5, 0.5], [0.0, -1.0], [2.0, 0.0]]), 0),
    ]



def build_op_db(T) -> list[OpInfo]:
    """The op table for the torch-like module ``T`` (rgrad, or torch for parity)."""

    def F():
        return T.nn.functional

    db: list[OpInfo] = []

    def add(*args, **kwargs):
        db.append(OpInfo(*args, **kwargs))

    # ---- binary ---------------------------------------------------------

    add_extra = lambda m, b, rng: [  # noqa: E731
        S(m(3, 4), b(3, 4), alpha=2.0),
        S(m(3, 1), b(4), alpha=-0.5).bc(),
        S(m(2, 3), 1.5, alpha=2),
        S(m(2, 3), 1.5),
    ]
    arith_special = ([INF, -INF, NAN, 1.0, INF, 0.0], [1.0, INF, 2.0, NAN, INF, 0.0])
    add("add", lambda a, b, **kw: T.add(a, b, **kw), lambda a, b, alpha=1: a + alpha * b,
        binary_samples(special=arith_special, extra=add_extra), inplace="add_")
    add("sub", lambda a, b, **kw: T.sub(a, b, **kw), lambda a, b, alpha=1: a - alpha * b,
        binary_samples(special=arith_special, extra=add_extra), inplace="sub_")
    add("mul", lambda a, b: T.mul(a, b), np.multiply,
        binary_samples(special=([INF, 0.0, NAN, -INF, 2.0], [0.0, 3.0, 1.0, -INF, INF]),
                       extra=lambda m, b, rng: [S(m(2, 3), -1.5)]), inplace="mul_")
    add("div", lambda a, b: T.div(a, b), np.divide,
        binary_samples(mb=_denominator,
                       special=([1.0, 0.0, -1.0, INF, NAN, 2.0], [0.0, 0.0, 0.0, INF, 1.0, INF]),
                       extra=lambda m, b, rng: [S(m(2, 3), 2.0)]), inplace="div_")
    add("true_divide", lambda a, b: T.true_divide(a, b), np.divide, variant_binary_samples(mb=_denominator))
    add("pow", lambda a, b: T.pow(a, b), np.power,
        binary_samples(mb=_exponent,
                       special=([0.0, 0.0, 0.0, INF, 2.0, NAN, -2.0], [0.0, -1.0, 2.0, -1.0, INF, 0.0, 2.0])),
        domain=(0.5, 2.0), inplace="pow_")
    add("pow.scalar_exponent", lambda a, e: T.pow(a, e), np.power,
        lambda m, rng: [
            S(m(3, 4), 2),
            S(m(3, 4), 3.0),
            S(_positive(m, 3, 4), 0.5),
            S(_positive(m, 3, 4), -1.5),
            S(m(2, 3), 1),
            S(m(), 2),
            S(m(0), 2.0),
            S(NC(_positive(m, 4, 3), "t"), 2.5),
            S(np.array([0.0, INF, -INF, NAN, -1.0]), 0.5).fwd("special values"),
        ], inplace="pow_")
    add("pow.scalar_base", lambda s, e: T.pow(s, e), np.power,
        lambda m, rng: [S(2.0, m(3, 4)), S(0.5, m(2, 3)), S(math.e, m()), S(3, NC(m(4, 3), "t"))])
    # a base 0: torch's exponent gradient is 0 where the exponent is >= 0 (not 0·-inf);
    # its double backward is NaN there (torch's too: the masked branch is y·log 0)
    add("pow.scalar_base_zero", lambda s, e: T.pow(s, e), np.power,
        lambda m, rng: [S(0.0, _positive(m, 3, 4)), S(0, _positive(m, 2)),
                        S(0.0, np.array([0.0, -1.0, 2.0, INF, -INF, NAN])).fwd("special values")],
        supports_gradgrad=False)
    add("maximum", lambda a, b: T.maximum(a, b), np.maximum,
        binary_samples(special=([NAN, 1.0, INF, -INF], [1.0, NAN, -INF, 0.0])))
    add("minimum", lambda a, b: T.minimum(a, b), np.minimum,
        binary_samples(special=([NAN, 1.0, INF, -INF], [1.0, NAN, -INF, 0.0])))
    # remainder/fmod: dr/da = 1, dr/db = -q (q = floor or trunc of a/b); floor division is
    # piecewise constant (zero gradient). Samples stay away from the jumps at integer a/b.
    add("remainder", lambda a, b: T.remainder(a, b), np.remainder, variant_binary_samples(mb=_denominator))
    add("fmod", lambda a, b: T.fmod(a, b), np.fmod, variant_binary_samples(mb=_denominator))
    add("__mod__", lambda a, b: a % b, np.remainder,
        lambda m, rng: variant_binary_samples(mb=_denominator)(m, rng) + [S(m(2, 3), 0.7), S(m(2, 3), -0.7)])
    # torch gives floor_divide (and //) no derivative: forward only; div(rounding_mode) has a zero one
    add("floor_divide", lambda a, b: T.floor_divide(a, b), np.floor_divide, variant_binary_samples(mb=_denominator),
        supports_grad=False, supports_gradgrad=False, grad_not_implemented="aten::floor_divide")
    add("__floordiv__", lambda a, b: a // b, np.floor_divide,
        lambda m, rng: variant_binary_samples(mb=_denominator)(m, rng) + [S(m(2, 3), 0.7)],
        supports_grad=False, supports_gradgrad=False, grad_not_implemented="aten::floor_divide")
    # torch has no derivative for a python number divided by a tensor with rounding
    add("__rfloordiv__", lambda a, b: a // b, lambda a, b: np.floor_divide(a, b),
        lambda m, rng: [S(2.5, _denominator(m, 3, 4)), S(-3, _denominator(m, 2, 3))],
        supports_grad=False, supports_gradgrad=False, grad_not_implemented="aten::floor_divide")
    add("__rmod__", lambda a, b: a % b, np.remainder,
        lambda m, rng: [S(2.5, _denominator(m, 3, 4)), S(-3, _denominator(m, 2, 3))],
        supports_grad=False, supports_gradgrad=False, grad_not_implemented="aten::remainder")
    add("Tensor.remainder", lambda a, b: a.remainder(b), np.remainder,
        lambda m, rng: [S(m(2, 3), _denominator(m, 2, 3))])
    add("Tensor.fmod", lambda a, b: a.fmod(b), np.fmod, lambda m, rng: [S(m(2, 3), _denominator(m, 3)).bc()])
    add("Tensor.floor_divide", lambda a, b: a.floor_divide(b), np.floor_divide,
        lambda m, rng: [S(m(2, 3), _denominator(m, 2, 3))],
        supports_grad=False, supports_gradgrad=False, grad_not_implemented="aten::floor_divide")
    add("div.rounding_mode", lambda a, b, **kw: T.div(a, b, **kw), lambda a, b, rounding_mode: (
        np.floor_divide(a, b) if rounding_mode == "floor" else np.trunc(a / b)),
        lambda m, rng: [S(m(3, 4), _denominator(m, 3, 4), rounding_mode="floor"),
                        S(m(3, 1), _denominator(m, 1, 4), rounding_mode="trunc").bc(),
                        S(m(3, 4), _denominator(m, 4), rounding_mode="trunc").bc()],
        inplace="div_")
    # the binary op table (src/ops/table.rs): the function, the method and the in-place method
    def xlogy_ref(a, b):
        with np.errstate(all="ignore"):
            return np.where(np.isnan(b), np.nan, np.where(a == 0, 0.0, a * np.log(b)))

    binary_table = [
        # name, reference, samples' second operand, special values
        ("atan2", np.arctan2, None, ([0.0, 0.0, -0.0, INF, -INF, NAN, 1.0, 2.0], [0.0, -0.0, -1.0, INF, 1.0, 1.0, NAN, -INF])),
        ("hypot", np.hypot, None, ([INF, NAN, 0.0, 3.0, -INF], [NAN, INF, 0.0, -4.0, 1.0])),
        ("logaddexp", np.logaddexp, None, ([INF, -INF, INF, NAN, 1.0, -800.0], [INF, -INF, -INF, 1.0, NAN, -800.0])),
        ("xlogy", xlogy_ref, _positive, ([0.0, 0.0, 1.0, 0.0, 2.0, 0.0], [NAN, 0.0, 0.0, -1.0, INF, INF])),
        ("fmax", np.fmax, None, ([NAN, 1.0, NAN, INF, -INF, 0.0, -0.0], [1.0, NAN, NAN, -INF, 0.0, -0.0, 0.0])),
        ("fmin", np.fmin, None, ([NAN, 1.0, NAN, INF, -INF, 0.0, -0.0], [1.0, NAN, NAN, -INF, 0.0, -0.0, 0.0])),
        ("copysign", np.copysign, None, ([1.0, 2.0, INF, NAN, 0.0, -3.0], [-0.0, -NAN, -1.0, -2.0, -INF, NAN])),
        ("logaddexp2", np.logaddexp2, None, ([INF, -INF, INF, NAN, 1.0, -2000.0], [INF, -INF, -INF, 1.0, NAN, -2000.0])),
        # (the reference steps in float64: no special value whose step depends on the dtype)
        ("nextafter", np.nextafter, None, ([0.0, -0.0, 1.0, NAN, 1.0, -1e-300], [1.0, -1.0, 1.0, 1.0, NAN, 0.0])),
        ("ldexp", lambda a, b: a * np.exp2(b), None, ([1.5, -2.0, 0.0, INF, NAN, 3.0], [3.0, -1.0, 1000.0, -2.0, 1.0, 0.5])),
    ]
    for name, ref, mb, special in binary_table:
        extra = (lambda m, b, rng: [S(m(3, 4), 2.5), S(1.5, _positive(m, 3, 4)), S(m(2, 3), 3),
                                    S(0, _positive(m, 2, 3))]) if name == "xlogy" else None
        if name == "copysign":
            extra = lambda m, b, rng: [S(m(3, 4), -2.5), S(m(2, 3), 3), S(m(2, 3), -0.0)]  # noqa: E731
        add(name, (lambda n: lambda a, b: getattr(T, n)(a, b))(name), ref,
            binary_samples(mb=mb, special=special, extra=extra),
            inplace=None if name in ("logaddexp", "logaddexp2", "fmax", "fmin") else f"{name}_")
        add(f"Tensor.{name}", (lambda n: lambda a, b: getattr(a, n)(b))(name), ref, variant_binary_samples(mb=mb))
    # torch gives heaviside no derivative: forward only. torch's NaN input gives 0 (NumPy's NaN)
    def heaviside_ref(a, b):
        return np.where(a == 0, b, (a > 0).astype(np.result_type(a, b)))

    add("heaviside", lambda a, b: T.heaviside(a, b), heaviside_ref,
        binary_samples(special=([0.0, -0.0, NAN, INF, -INF, 2.0], [0.5, 3.0, 1.0, 2.0, NAN, NAN])),
        supports_grad=False, supports_gradgrad=False, grad_not_implemented="aten::heaviside", inplace="heaviside_")
    add("Tensor.heaviside", lambda a, b: a.heaviside(b), heaviside_ref, variant_binary_samples(),
        supports_grad=False, supports_gradgrad=False, grad_not_implemented="aten::heaviside")
    add("where", lambda c, a, b: T.where(c, a, b), np.where, where_samples)
    add("Tensor.where", lambda c, a, b: a.where(c, b), np.where,
        lambda m, rng: [S(m.mask(3, 4), m(3, 4), m(3, 4)), S(m.mask(3, 1), m(1, 4), m(3, 4)).bc()])
    add("where.scalar", lambda c, a, b: T.where(c, a, b), np.where,
        lambda m, rng: [S(m.mask(3, 4), m(3, 4), 2.5), S(m.mask(3, 1), -1.5, m(4)).bc(), S(m.mask(2, 3), m(), 0).bc()])

    # methods
    add("Tensor.add", lambda a, b, **kw: a.add(b, **kw), lambda a, b, alpha=1: a + alpha * b,
        lambda m, rng: variant_binary_samples()(m, rng) + [S(m(2, 3), m(3), alpha=3.0).bc(), S(m(2, 3), 2.0)])
    add("Tensor.sub", lambda a, b, **kw: a.sub(b, **kw), lambda a, b, alpha=1: a - alpha * b,
        lambda m, rng: variant_binary_samples()(m, rng) + [S(m(2, 3), m(3), alpha=3.0).bc(), S(m(2, 3), 2.0)])
    add("Tensor.mul", lambda a, b: a.mul(b), np.multiply,
        lambda m, rng: variant_binary_samples()(m, rng) + [S(m(2, 3), 2.0)])
    add("Tensor.div", lambda a, b: a.div(b), np.divide,
        lambda m, rng: variant_binary_samples(mb=_denominator)(m, rng) + [S(m(2, 3), 4.0)])
    add("Tensor.pow", lambda a, b: a.pow(b), np.power,
        lambda m, rng: variant_binary_samples(mb=_exponent)(m, rng) + [S(m(2, 3), 2), S(m(2, 3), 0.5)],
        domain=(0.5, 2.0))
    add("Tensor.maximum", lambda a, b: a.maximum(b), np.maximum, variant_binary_samples())
    add("Tensor.minimum", lambda a, b: a.minimum(b), np.minimum, variant_binary_samples())

    # operators (tensor-tensor, tensor-scalar, and reflected scalar-tensor)
    operators = [
        ("add", lambda a, b: a + b, None),
        ("sub", lambda a, b: a - b, None),
        ("mul", lambda a, b: a * b, None),
        ("truediv", lambda a, b: a / b, _denominator),
    ]
    for opname, f, mb in operators:
        add(f"__{opname}__", f, f, variant_binary_samples(mb=mb), inplace=f"__i{opname}__")
        add(f"__{opname}__.scalar", f, f,
            scalar_other_samples() if opname != "truediv" else scalar_other_samples((2.5, -1.5, 0.5, 3)),
            inplace=f"__i{opname}__")
        add(f"__r{opname}__", f, f,
            scalar_self_samples(),
            domain=DEFAULT_DOMAIN if opname != "truediv" else (0.5, 2.0))
    add("__pow__", lambda a, b: a ** b, lambda a, b: a ** b, variant_binary_samples(mb=_exponent), domain=(0.5, 2.0),
        inplace="__ipow__")
    add("__pow__.scalar", lambda a, b: a ** b, lambda a, b: a ** b,
        lambda m, rng: [S(m(3, 4), 2), S(m(3, 4), 3.0), S(_positive(m, 2, 3), 0.5), S(m(), 2),
                        S(NC(m(4, 3), "t"), 2)],
        inplace="__ipow__")
    add("__rpow__", lambda a, b: a ** b, lambda a, b: a ** b, scalar_self_samples((2.0, 0.5, 3.0, 2)))
    add("__matmul__", lambda a, b: a @ b, lambda a, b: a @ b,
        lambda m, rng: matmul_samples(m, rng)[1:7:2] + [S(NC(m(4, 3), "t"), NC(m(2, 4), "t"))])
    add("__rmatmul__", lambda a, b: b.__rmatmul__(a), np.matmul, lambda m, rng: matmul_samples(m, rng)[1:4])
    add("__neg__", lambda a: -a, lambda a: -a, unary_samples())
    add("__pos__", lambda a: +a, lambda a: +a, variant_unary_samples)
    add("__abs__", lambda a: abs(a), np.abs, variant_unary_samples)

    # ---- unary ----------------------------------------------------------

    unary = [
        # name, reference, domain, special values (None: no forward-only special sample)
        ("exp", np.exp, DEFAULT_DOMAIN, SPECIAL),
        ("log", np.log, POSITIVE, SPECIAL),
        ("log1p", np.log1p, (-0.9, 2.0), [0.0, -1.0, -2.0, INF, NAN, 0.5]),
        ("expm1", np.expm1, DEFAULT_DOMAIN, SPECIAL),
        ("sqrt", np.sqrt, POSITIVE, SPECIAL),
        ("rsqrt", lambda x: 1.0 / np.sqrt(x), POSITIVE, SPECIAL),
        ("sin", np.sin, DEFAULT_DOMAIN, SPECIAL),
        ("cos", np.cos, DEFAULT_DOMAIN, SPECIAL),
        ("tan", np.tan, (-1.2, 1.2), SPECIAL),
        ("tanh", np.tanh, DEFAULT_DOMAIN, SPECIAL),
        ("sigmoid", _sigmoid, DEFAULT_DOMAIN, [0.0, INF, -INF, NAN, 50.0, -50.0]),
        ("relu", lambda x: np.maximum(x, 0.0), DEFAULT_DOMAIN, SPECIAL),
        ("abs", np.abs, DEFAULT_DOMAIN, SPECIAL),
        ("sign", np.sign, DEFAULT_DOMAIN, [0.0, INF, -INF, 1.5, -2.5]),
        ("neg", np.negative, DEFAULT_DOMAIN, SPECIAL),
        ("reciprocal", np.reciprocal, DEFAULT_DOMAIN, SPECIAL),
        ("sinh", np.sinh, DEFAULT_DOMAIN, SPECIAL),
        ("cosh", np.cosh, DEFAULT_DOMAIN, SPECIAL),
        ("asin", np.arcsin, (-0.9, 0.9), list(SPECIAL) + [1.0, -1.0, 1.5]),
        ("acos", np.arccos, (-0.9, 0.9), list(SPECIAL) + [1.0, -1.0, 1.5]),
        ("atan", np.arctan, DEFAULT_DOMAIN, SPECIAL),
        ("asinh", np.arcsinh, DEFAULT_DOMAIN, SPECIAL),
        ("acosh", np.arccosh, (1.1, 3.0), list(SPECIAL) + [1.0, 0.5]),
        ("atanh", np.arctanh, (-0.9, 0.9), list(SPECIAL) + [1.0, -1.0, 1.5]),
        ("erf", np.vectorize(math.erf, otypes=[float]), DEFAULT_DOMAIN, SPECIAL),
        ("erfc", np.vectorize(math.erfc, otypes=[float]), DEFAULT_DOMAIN, SPECIAL),
        ("erfinv", np.vectorize(erfinv_ref, otypes=[float]), (-0.9, 0.9), list(SPECIAL) + [1.0, -1.0, 0.999]),
        ("trunc", np.trunc, DEFAULT_DOMAIN, list(SPECIAL) + [2.5, -2.5, -0.5]),
        ("frac", lambda x: x - np.trunc(x), DEFAULT_DOMAIN, list(SPECIAL) + [2.5, -2.5, -0.5]),
        ("floor", np.floor, DEFAULT_DOMAIN, list(SPECIAL) + [2.5, -2.5, -0.5, 0.5, 3.0]),
        ("ceil", np.ceil, DEFAULT_DOMAIN, list(SPECIAL) + [2.5, -2.5, -0.5, 0.5, 3.0]),
        ("round", np.round, DEFAULT_DOMAIN, list(SPECIAL) + [2.5, -2.5, -0.5, 0.5, 1.5, -1.5, 3.0]),
        ("sgn", np.sign, DEFAULT_DOMAIN, [0.0, INF, -INF, 1.5, -2.5]),
        ("log2", np.log2, POSITIVE, list(SPECIAL) + [8.0, 0.125]),
        ("log10", np.log10, POSITIVE, list(SPECIAL) + [1000.0, 0.001]),
        ("exp2", np.exp2, DEFAULT_DOMAIN, list(SPECIAL) + [10.0, -3.0]),
        ("deg2rad", np.deg2rad, DEFAULT_DOMAIN, SPECIAL),
        ("rad2deg", np.rad2deg, DEFAULT_DOMAIN, SPECIAL),
        ("sinc", np.sinc, DEFAULT_DOMAIN, list(SPECIAL) + [1.0, -2.0, 0.5, 1e-30]),
    ]
    for name, ref, domain, special in unary:
        add(name, (lambda n: lambda a: getattr(T, n)(a))(name), ref, unary_samples(special), domain=domain,
            inplace=f"{name}_", inplace_grad=name not in ("asinh", "acosh", "atanh"))
        add(f"Tensor.{name}", (lambda n: lambda a: getattr(a, n)())(name), ref, variant_unary_samples,
            domain=domain)
    for d in (2, -1):
        add(f"round.decimals{d}", (lambda d: lambda a: T.round(a, decimals=d))(d),
            (lambda d: lambda a: np.round(a, d))(d),
            (lambda d: lambda m, rng: [S(m(3, 4) * 100), S(m(5) * 1000),
                                       S(np.array([0.125, -0.125, 2.5, -25.0, 15.0, 0.0, INF, NAN])).fwd("halves, specials")])(d))
        add(f"Tensor.round.decimals{d}", (lambda d: lambda a: a.round(decimals=d))(d),
            (lambda d: lambda a: np.round(a, d))(d), variant_unary_samples)
    gamma_special = [0.0, -0.0, -1.0, -2.5, INF, -INF, NAN, 1e-30, 0.5, 25.0]
    for name, ref in (("lgamma", _lgamma_ref), ("digamma", lambda x: polygamma_ref(0, x))):
        ref = np.vectorize(ref, otypes=[float])
        add(name, (lambda n: lambda a: getattr(T, n)(a))(name), ref, unary_samples(gamma_special), domain=POSITIVE,
            inplace=f"{name}_")
        add(f"Tensor.{name}", (lambda n: lambda a: getattr(a, n)())(name), ref, variant_unary_samples,
            domain=POSITIVE)
    polygamma_np = np.vectorize(polygamma_ref, otypes=[float])
    add("polygamma", lambda n, a: T.polygamma(n, a), polygamma_np,
        lambda m, rng: [S(0, m(3, 4)), S(1, m(2, 3)), S(2, m()), S(3, NC(m(4, 3), "t")), S(1, m(0)),
                        S(2, np.array([0.0, -0.0, 1e-3, 0.5, 25.0, INF, NAN])).fwd("special values")],
        domain=POSITIVE, rtol=1e-6)
    add("Tensor.polygamma", lambda a, n: a.polygamma(n), lambda a, n: polygamma_np(n, a),
        lambda m, rng: [S(m(2, 3), 1), S(NC(m(4, 3), "t"), 2)], domain=POSITIVE, inplace="polygamma_", rtol=1e-6)
    add("square", lambda a: T.square(a), np.square, unary_samples(SPECIAL), inplace="square_")
    add("Tensor.square", lambda a: a.square(), np.square, variant_unary_samples)
    for name in ("relu", "sigmoid", "tanh"):
        ref = {"relu": lambda x: np.maximum(x, 0.0), "sigmoid": _sigmoid, "tanh": np.tanh}[name]
        add(f"nn.functional.{name}", (lambda n: lambda a: getattr(F(), n)(a))(name), ref,
            unary_samples(None) if name != "relu" else unary_samples([0.0, INF, -INF, NAN, -1.0]))

    clamp_ref = lambda a, min=None, max=None: np.clip(a, min, max)  # noqa: E731
    add("clamp", lambda a, **kw: T.clamp(a, **kw), clamp_ref, clamp_samples, inplace="clamp_")
    add("clip", lambda a, **kw: T.clip(a, **kw), clamp_ref, clamp_samples)
    add("clamp.tensor_bounds", lambda a, lo, hi: T.clamp(a, lo, hi), clamp_ref, clamp_tensor_samples,
        inplace="clamp_")
    add("Tensor.clamp.tensor_bounds", lambda a, lo, hi: a.clamp(min=lo, max=hi), clamp_ref,
        lambda m, rng: clamp_tensor_samples(m, rng)[:2])
    add("Tensor.clamp", lambda a, lo, hi: a.clamp(lo, hi), lambda a, lo, hi: np.clip(a, lo, hi),
        clamp_variant_samples)
    add("Tensor.clip", lambda a, lo, hi: a.clip(min=lo, max=hi), lambda a, lo, hi: np.clip(a, lo, hi),
        clamp_variant_samples)

    # ---- reductions -------------------------------------------------------

    add("sum", lambda a, **kw: T.sum(a, **kw), _reduce(np.sum), reduction_samples())
    add("Tensor.sum", lambda a, **kw: a.sum(**kw), _reduce(np.sum),
        lambda m, rng: [S(m(3, 4)), S(m(2, 3, 4), dim=(0, 2), keepdim=True)])
    add("Tensor.sum.positional", lambda a, d: a.sum(d), lambda a, d: np.sum(a, axis=_axis(d)),
        lambda m, rng: [S(m(3, 4), 1), S(m(2, 3, 4), (0, 2))])
    add("mean", lambda a, **kw: T.mean(a, **kw), _reduce(np.mean), reduction_samples(empty=False))
    add("Tensor.mean", lambda a, **kw: a.mean(**kw), _reduce(np.mean),
        lambda m, rng: [S(m(3, 4)), S(m(2, 3, 4), dim=[1, 2])])
    add("prod", lambda a, **kw: T.prod(a, **kw), _reduce(np.prod),
        lambda m, rng: [
            S(m(3, 4)),
            S(m(3, 4), dim=1),
            S(m(3, 4), dim=0, keepdim=True),
            S(m()),
            S(m(0)),
            S(NC(m(4, 3), "t"), dim=1),
            S(np.array([[1.5, 0.0, 2.0], [0.5, -1.0, 3.0]]), dim=1).fwd("contains zero"),
            S(np.array([[1.5, 0.0, 2.0], [0.5, -1.0, 3.0]])).fwd("contains zero"),
        ],
        domain=(0.5, 1.5))
    add("Tensor.prod", lambda a, **kw: a.prod(**kw), _reduce(np.prod),
        lambda m, rng: [S(m(3, 4)), S(m(3, 4), dim=-1)], domain=(0.5, 1.5))
    add("var", lambda a, **kw: T.var(a, **kw), _var_ref, var_samples)
    add("std", lambda a, **kw: T.std(a, **kw), _std_ref, var_samples)
    add("Tensor.var", lambda a, **kw: a.var(**kw), _var_ref,
        lambda m, rng: [S(m(3, 4)), S(m(3, 4), dim=1, unbiased=False)])
    add("Tensor.std", lambda a, **kw: a.std(**kw), _std_ref,
        lambda m, rng: [S(m(3, 4)), S(m(3, 4), dim=0, correction=0)])
    add("norm", lambda a, **kw: T.norm(a, **kw), _norm_ref, norm_samples)
    add("Tensor.norm", lambda a, **kw: a.norm(**kw), _norm_ref,
        lambda m, rng: [S(m(3, 4)), S(m(3, 4), p=1, dim=1)])

    add("max", lambda a: T.max(a), np.max, max_full_samples)
    add("min", lambda a: T.min(a), np.min, max_full_samples)
    add("max.dim", lambda a, d, **kw: (lambda r: (r.values, r.indices))(T.max(a, d, **kw)),
        _max_dim_ref(np.max, np.argmax), max_dim_samples)
    add("min.dim", lambda a, d, **kw: (lambda r: (r.values, r.indices))(T.min(a, dim=d, **kw)),
        _max_dim_ref(np.min, np.argmin), max_dim_samples)
    add("Tensor.max.dim", lambda a, d, **kw: tuple(a.max(d, **kw)), _max_dim_ref(np.max, np.argmax),
        lambda m, rng: max_dim_samples(m, rng)[:2])
    add("Tensor.min.dim", lambda a, d, **kw: tuple(a.min(d, **kw)), _max_dim_ref(np.min, np.argmin),
        lambda m, rng: max_dim_samples(m, rng)[:2])
    add("Tensor.max", lambda a: a.max(), np.max, lambda m, rng: max_full_samples(m, rng)[:2])
    add("amax", lambda a, **kw: T.amax(a, **kw), _reduce(np.max), amax_samples)
    add("amin", lambda a, **kw: T.amin(a, **kw), _reduce(np.min), amax_samples)
    add("Tensor.amax", lambda a, **kw: a.amax(**kw), _reduce(np.max), lambda m, rng: amax_samples(m, rng)[:2])
    add("Tensor.amin", lambda a, **kw: a.amin(**kw), _reduce(np.min), lambda m, rng: amax_samples(m, rng)[:2])
    add("Tensor.argmin", lambda a, **kw: a.argmin(**kw), _arg_ref(np.argmin),
        lambda m, rng: argmax_samples(m, rng)[:2], supports_grad=False, supports_gradgrad=False)
    def special_value_samples(m, rng):
        return [S(np.array([1.0, np.nan, np.inf, -np.inf, 0.0, -2.5])), S(m(3, 4)), S(m.ints(5, 2, 3)), S(m.mask(2, 2)),
                S(np.zeros((0, 2)))]

    for name, ref in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)):
        add(name, lambda a, _n=name: getattr(T, _n)(a), ref, special_value_samples, supports_grad=False,
            supports_gradgrad=False)
        add(f"Tensor.{name}", lambda a, _n=name: getattr(a, _n)(), ref, special_value_samples, supports_grad=False,
            supports_gradgrad=False)
    for name, ref in (("all", np.all), ("any", np.any)):
        add(name, lambda a, _n=name, **kw: getattr(T, _n)(a, **kw), _reduce(ref), all_any_samples,
            supports_grad=False, supports_gradgrad=False)
        add(f"Tensor.{name}", lambda a, _n=name, **kw: getattr(a, _n)(**kw), _reduce(ref),
            lambda m, rng: all_any_samples(m, rng)[:3], supports_grad=False, supports_gradgrad=False)
    add("argmax", lambda a, **kw: T.argmax(a, **kw), _arg_ref(np.argmax), argmax_samples,
        supports_grad=False, supports_gradgrad=False)
    add("argmin", lambda a, **kw: T.argmin(a, **kw), _arg_ref(np.argmin), argmax_samples,
        supports_grad=False, supports_gradgrad=False)
    add("Tensor.argmax", lambda a, **kw: a.argmax(**kw), _arg_ref(np.argmax),
        lambda m, rng: argmax_samples(m, rng)[:2], supports_grad=False, supports_gradgrad=False)
    add("logsumexp", lambda a, **kw: T.logsumexp(a, **kw), _logsumexp_ref, logsumexp_samples, rtol=1e-6)
    add("Tensor.logsumexp", lambda a, **kw: a.logsumexp(**kw), _logsumexp_ref,
        lambda m, rng: [S(m(3, 4), dim=1), S(m(3, 4), dim=-1, keepdim=True)])
    add("softmax", lambda a, **kw: T.softmax(a, **kw), _softmax_ref, softmax_samples)
    add("log_softmax", lambda a, **kw: T.log_softmax(a, **kw), _log_softmax_ref, softmax_samples)
    add("Tensor.softmax", lambda a, **kw: a.softmax(**kw), _softmax_ref, softmax_variant_samples)
    add("Tensor.log_softmax", lambda a, **kw: a.log_softmax(**kw), _log_softmax_ref, softmax_variant_samples)
    add("nn.functional.softmax", lambda a, **kw: F().softmax(a, **kw), _softmax_ref, softmax_variant_samples)
    add("nn.functional.log_softmax", lambda a, **kw: F().log_softmax(a, **kw), _log_softmax_ref,
        softmax_variant_samples)

    # ---- linalg ---------------------------------------------------------

    add("matmul", lambda a, b: T.matmul(a, b), np.matmul, matmul_samples)
    add("Tensor.matmul", lambda a, b: a.matmul(b), np.matmul, lambda m, rng: matmul_samples(m, rng)[3:6])
    add("mm", lambda a, b: T.mm(a, b), np.matmul, mm_samples)
    add("Tensor.mm", lambda a, b: a.mm(b), np.matmul, lambda m, rng: mm_samples(m, rng)[:2])
    add("addmm", lambda c, a, b, **kw: T.addmm(c, a, b, **kw), _addmm_ref, addmm_samples)
    add("Tensor.addmm", lambda c, a, b, **kw: c.addmm(a, b, **kw), _addmm_ref,
        lambda m, rng: addmm_samples(m, rng)[:4])
    add("bmm", lambda a, b: T.bmm(a, b), np.matmul,
        lambda m, rng: [S(m(2, 3, 4), m(2, 4, 5)), S(m(1, 2, 3), m(1, 3, 1)), S(m(2, 3, 0), m(2, 0, 2))])
    add("mv", lambda a, v: T.mv(a, v), np.matmul, mv_samples)
    add("Tensor.mv", lambda a, v: a.mv(v), np.matmul, lambda m, rng: mv_samples(m, rng)[:2])
    add("dot", lambda a, b: T.dot(a, b), np.dot,
        lambda m, rng: [S(m(4), m(4)), S(m(1), m(1)), S(m(0), m(0)), S(NC(m(8), "step"), m(4))])
    add("Tensor.dot", lambda a, b: a.dot(b), np.dot, lambda m, rng: [S(m(3), m(3))])
    add("outer", lambda a, b: T.outer(a, b), np.outer,
        lambda m, rng: [S(m(3), m(4)), S(m(1), m(2)), S(m(0), m(3)), S(NC(m(6), "step"), m(2))])
    add("Tensor.outer", lambda a, b: a.outer(b), np.outer, lambda m, rng: [S(m(3), m(4))])
    add("Tensor.bmm", lambda a, b: a.bmm(b), np.matmul, lambda m, rng: [S(m(2, 3, 4), m(2, 4, 5))])

    # ---- shape / indexing ------------------------------------------------

    add("t", lambda a: T.t(a), lambda a: a.T,
        lambda m, rng: [S(m(3, 4)), S(m(4)), S(m()), S(NC(m(4, 3), "t"))])
    add("Tensor.t", lambda a: a.t(), lambda a: a.T, shape_samples_2d)
    add("Tensor.T", lambda a: a.T, lambda a: a.T, shape_samples_2d)
    add("transpose", lambda a, d0, d1: T.transpose(a, d0, d1), np.swapaxes,
        lambda m, rng: [S(m(3, 4), 0, 1), S(m(2, 3, 4), 0, 2), S(m(2, 3, 4), -1, 1), S(NC(m(4, 3), "t"), 1, 0)])
    add("Tensor.transpose", lambda a, d0, d1: a.transpose(d0, d1), np.swapaxes,
        lambda m, rng: [S(m(2, 3, 4), -1, 0)])
    add("permute", lambda a, dims: T.permute(a, dims), np.transpose,
        lambda m, rng: [S(m(2, 3, 4), (2, 0, 1)), S(m(3, 4), (1, 0)), S(NC(m(4, 3), "t"), (1, 0))])
    add("Tensor.permute", lambda a, *dims: a.permute(*dims), lambda a, *dims: np.transpose(a, _sizes(dims)),
        lambda m, rng: [S(m(2, 3, 4), 2, 0, 1), S(m(2, 3, 4), (1, 2, 0)), S(m(2, 3, 4), -1, 0, 1)])
    add("reshape", lambda a, shape: T.reshape(a, shape), np.reshape,
        lambda m, rng: [S(m(3, 4), (4, 3)), S(m(3, 4), (-1,)), S(m(2, 3, 4), (6, -1)), S(m(1), ()),
                        S(m(), (1, 1)), S(m(2, 0), (0, 5)), S(NC(m(4, 3), "t"), (-1,)),
                        S(NC(m(6, 4), "step"), (2, 6))])
    add("Tensor.reshape", lambda a, *shape: a.reshape(*shape), lambda a, *shape: a.reshape(*shape),
        lambda m, rng: [S(m(3, 4), 2, 6), S(m(3, 4), (2, -1)), S(NC(m(4, 3), "t"), 12)])
    add("Tensor.view", lambda a, *shape: a.view(*shape), lambda a, *shape: a.reshape(*shape),
        lambda m, rng: [S(m(3, 4), 4, 3), S(m(3, 4), -1), S(m(2, 3, 4), (6, -1)), S(m(), 1),
                        S(m(2, 0), 0, 3), S(NC(m(4, 6), "step"), 2, 2, 3)])
    add("flatten", lambda a, *args, **kw: T.flatten(a, *args, **kw), _flatten_ref,
        lambda m, rng: [S(m(2, 3, 4)), S(m(2, 3, 4), 1), S(m(2, 3, 4), start_dim=0, end_dim=1),
                        S(m(2, 3, 4, 2), 1, -2), S(m()), S(NC(m(4, 3), "t"))])
    add("Tensor.flatten", lambda a, *args, **kw: a.flatten(*args, **kw), _flatten_ref,
        lambda m, rng: [S(m(2, 3, 4)), S(m(2, 3, 4), start_dim=-2)])
    add("squeeze", lambda a, *args: T.squeeze(a, *args), _squeeze_ref,
        lambda m, rng: [S(m(3, 1, 4, 1)), S(m(3, 1, 4), 1), S(m(3, 1, 4), 0), S(m(3, 4, 1), -1),
                        S(m()), S(m(1, 1))])
    add("Tensor.squeeze", lambda a, *args: a.squeeze(*args), _squeeze_ref,
        lambda m, rng: [S(m(1, 3, 1)), S(m(1, 3), 0), S(NC(m(1, 3), "t"), 1)])
    add("unsqueeze", lambda a, d: T.unsqueeze(a, d), np.expand_dims,
        lambda m, rng: [S(m(3, 4), 0), S(m(3, 4), -1), S(m(3, 4), 1), S(m(), 0), S(NC(m(4, 3), "t"), 2)])
    add("Tensor.unsqueeze", lambda a, d: a.unsqueeze(d), np.expand_dims, lambda m, rng: [S(m(3), -2)])
    # the in-place view ops: `x.clone().squeeze_(...)` (the view op changes the shape, so
    # these are entries of their own rather than inplace= flags, which keep the shape)
    add("Tensor.squeeze_", _inplace_view("squeeze_"), _squeeze_ref,
        lambda m, rng: [S(m(3, 1, 4, 1)), S(m(3, 1, 4), 1), S(m(3, 1, 4), (1, 2)), S(m()),
                        S(NC(m(1, 3), "t"), 1)])
    add("Tensor.unsqueeze_", _inplace_view("unsqueeze_"), np.expand_dims,
        lambda m, rng: [S(m(3, 4), 0), S(m(3, 4), -1), S(m(), 0), S(NC(m(4, 3), "t"), 1)])
    add("Tensor.transpose_", _inplace_view("transpose_"), np.swapaxes,
        lambda m, rng: [S(m(2, 3, 4), -1, 0), S(m(3, 4), 0, 1), S(NC(m(4, 3), "t"), 1, 0)])
    add("Tensor.t_", _inplace_view("t_"), lambda a: a.T,
        lambda m, rng: [S(m(3, 4)), S(m(4)), S(m()), S(NC(m(4, 3), "t"))])
    for name in ("swapaxes_", "swapdims_"):
        add(f"Tensor.{name}", _inplace_view(name), np.swapaxes, lambda m, rng: [S(m(2, 3, 4), 1, 2)])
    add("Tensor.expand", lambda a, *sizes: a.expand(*sizes), _expand_ref,
        lambda m, rng: [S(m(3, 1), 3, 4).bc(), S(m(3, 1), 2, 3, 4).bc(), S(m(3, 1), -1, 4).bc(),
                        S(m(3, 1), (3, 4)).bc(), S(m(), 2, 3).bc(), S(m(1, 4), 0, 4).bc(),
                        S(NC(m(1, 3), "t"), 3, 2).bc()])
    add("Tensor.expand_as", lambda a, b: a.expand_as(b), lambda a, b: np.broadcast_to(a, b.shape).copy(),
        lambda m, rng: [S(m(3, 1), m(3, 4)).bc(), S(m(4), m(2, 3, 4)).bc()])
    add("Tensor.repeat", lambda a, *reps: a.repeat(*reps), _repeat_ref,
        lambda m, rng: [S(m(2, 3), 2, 2), S(m(2, 3), 2, 1, 1), S(m(2, 3), (1, 3)), S(m(), 3),
                        S(NC(m(3, 2), "t"), 1, 2)])
    add("cat", lambda ts, **kw: T.cat(ts, **kw), lambda ts, dim=0: np.concatenate(ts, axis=dim),
        lambda m, rng: [S([m(2, 3), m(4, 3)]), S([m(2, 3), m(2, 1)], dim=1), S([m(2, 3), m(2, 2), m(2, 1)], dim=-1),
                        S((m(2, 3), m(1, 3)), dim=0), S([m(0, 3), m(2, 3)], dim=0), S([m(3)]),
                        S([NC(m(4, 3), "t"), m(3, 2)], dim=1)])
    add("concat", lambda ts, **kw: T.concat(ts, **kw), lambda ts, dim=0: np.concatenate(ts, axis=dim),
        lambda m, rng: [S([m(2, 3), m(4, 3)]), S((m(2, 3), NC(m(4, 2), "t")), dim=-1)])
    add("stack", lambda ts, **kw: T.stack(ts, **kw), lambda ts, dim=0: np.stack(ts, axis=dim),
        lambda m, rng: [S([m(2, 3), m(2, 3), m(2, 3)]), S([m(2, 3), m(2, 3)], dim=1), S([m(2, 3), m(2, 3)], dim=-1),
                        S([m(), m()]), S((m(0), m(0)), dim=0), S([NC(m(4, 3), "t"), m(3, 4)], dim=2)])
    add("split", lambda a, s, **kw: T.split(a, s, **kw), _split_ref,
        lambda m, rng: [S(m(5, 3), 2), S(m(5, 3), 3, dim=0), S(m(2, 4), [1, 3], dim=1), S(m(2, 5), 5, dim=-1),
                        S(NC(m(4, 3), "t"), [1, 1, 2], dim=1)])
    add("Tensor.split", lambda a, s, **kw: a.split(s, **kw), _split_ref,
        lambda m, rng: [S(m(5, 3), 2), S(m(2, 4), [3, 1], dim=1)])
    add("chunk", lambda a, c, **kw: T.chunk(a, c, **kw), _chunk_ref,
        lambda m, rng: [S(m(2, 7), 3, dim=1), S(m(5, 3), 2), S(m(6, 2), 4), S(m(3, 2), 3),
                        S(NC(m(4, 3), "t"), 2, dim=1)])
    add("Tensor.chunk", lambda a, c, **kw: a.chunk(c, **kw), _chunk_ref, lambda m, rng: [S(m(4, 3), 2)])
    add("__getitem__", lambda a, idx: a[idx], lambda a, idx: a[idx], getitem_samples)
    _pair = lambda r: (r.values, r.indices)  # noqa: E731
    add("sort", lambda a, *args, **kw: _pair(T.sort(a, *args, **kw)), _sort_ref, sort_samples)
    add("Tensor.sort", lambda a, *args, **kw: tuple(a.sort(*args, **kw)), _sort_ref,
        lambda m, rng: sort_samples(m, rng)[:4])
    add("argsort", lambda a, *args, **kw: T.argsort(a, *args, **kw), lambda *a, **kw: _sort_ref(*a, **kw)[1],
        sort_samples, supports_grad=False, supports_gradgrad=False)
    add("Tensor.argsort", lambda a, *args, **kw: a.argsort(*args, **kw), lambda *a, **kw: _sort_ref(*a, **kw)[1],
        lambda m, rng: sort_samples(m, rng)[:4], supports_grad=False, supports_gradgrad=False)
    add("msort", lambda a: T.msort(a), lambda a: np.sort(a, axis=0),
        lambda m, rng: [S(m(3, 4)), S(m(5)), S(NC(m(4, 3), "t"))])
    add("Tensor.msort", lambda a: a.msort(), lambda a: np.sort(a, axis=0), lambda m, rng: [S(m(3, 4))])
    add("topk", lambda a, *args, **kw: _pair(T.topk(a, *args, **kw)), _topk_ref, topk_samples)
    add("Tensor.topk", lambda a, *args, **kw: tuple(a.topk(*args, **kw)), _topk_ref,
        lambda m, rng: topk_samples(m, rng)[:3])
    add("kthvalue", lambda a, *args, **kw: _pair(T.kthvalue(a, *args, **kw)), _kthvalue_ref, kthvalue_samples)
    add("Tensor.kthvalue", lambda a, *args, **kw: tuple(a.kthvalue(*args, **kw)), _kthvalue_ref,
        lambda m, rng: kthvalue_samples(m, rng)[:3])
    add("median", lambda a: T.median(a), _median_ref, median_samples)
    add("Tensor.median", lambda a: a.median(), _median_ref, lambda m, rng: median_samples(m, rng)[:2])
    add("median.dim", lambda a, *args, **kw: _pair(T.median(a, *args, **kw)), _median_dim_ref, median_dim_samples)
    add("Tensor.median.dim", lambda a, *args, **kw: tuple(a.median(*args, **kw)), _median_dim_ref,
        lambda m, rng: median_dim_samples(m, rng)[:3])
    add("nanmedian", lambda a: T.nanmedian(a), _median_ref, median_samples)
    add("Tensor.nanmedian", lambda a: a.nanmedian(), _median_ref, lambda m, rng: median_samples(m, rng)[:2])
    add("nanmedian.dim", lambda a, *args, **kw: _pair(T.nanmedian(a, *args, **kw)), _median_dim_ref,
        median_dim_samples)
    add("Tensor.nanmedian.dim", lambda a, *args, **kw: tuple(a.nanmedian(*args, **kw)), _median_dim_ref,
        lambda m, rng: median_dim_samples(m, rng)[:3])
    add("quantile", lambda a, *args, **kw: T.quantile(a, *args, **kw), _quantile_ref, quantile_samples)
    add("Tensor.quantile", lambda a, *args, **kw: a.quantile(*args, **kw), _quantile_ref,
        lambda m, rng: quantile_samples(m, rng)[:4])
    add("nanquantile", lambda a, *args, **kw: T.nanquantile(a, *args, **kw),
        lambda *a, **kw: _quantile_ref(*a, nan=True, **kw), quantile_samples)
    add("Tensor.nanquantile", lambda a, *args, **kw: a.nanquantile(*args, **kw),
        lambda *a, **kw: _quantile_ref(*a, nan=True, **kw), lambda m, rng: quantile_samples(m, rng)[4:8])
    add("mode", lambda a, *args, **kw: _pair(T.mode(a, *args, **kw)), _mode_ref, mode_samples)
    add("Tensor.mode", lambda a, *args, **kw: tuple(a.mode(*args, **kw)), _mode_ref,
        lambda m, rng: mode_samples(m, rng)[:3])
    add("scatter", lambda a, d, idx, src: T.scatter(a, d, idx, src), _scatter_ref, scatter_samples)
    add("Tensor.scatter", lambda a, d, idx, src: a.scatter(d, idx, src), _scatter_ref,
        lambda m, rng: scatter_samples(m, rng)[:4], inplace="scatter_")
    add("scatter.value", lambda a, d, idx, v: T.scatter(a, d, idx, v), _scatter_ref, scatter_value_samples)
    add("Tensor.scatter.value", lambda a, d, idx, v: a.scatter(d, idx, v), _scatter_ref, scatter_value_samples,
        inplace="scatter_")
    add("scatter_add", lambda a, d, idx, src: T.scatter_add(a, d, idx, src),
        lambda *a: _scatter_ref(*a, add=True), scatter_add_samples)
    add("Tensor.scatter_add", lambda a, d, idx, src: a.scatter_add(d, idx, src),
        lambda *a: _scatter_ref(*a, add=True), lambda m, rng: scatter_add_samples(m, rng)[-2:],
        inplace="scatter_add_")
    add("scatter_reduce", lambda a, d, idx, src, red, **kw: T.scatter_reduce(a, d, idx, src, red, **kw),
        _scatter_reduce_ref, scatter_reduce_samples)
    add("Tensor.scatter_reduce", lambda a, d, idx, src, red, **kw: a.scatter_reduce(d, idx, src, red, **kw),
        _scatter_reduce_ref, lambda m, rng: scatter_reduce_samples(m, rng)[:3], inplace="scatter_reduce_")
    # (torch gives "prod" no forward derivative)
    add("scatter_reduce.prod", lambda a, d, idx, src, red, **kw: T.scatter_reduce(a, d, idx, src, red, **kw),
        _scatter_reduce_ref,
        lambda m, rng: [S(_positive(m, 3, 4), 1, _i64([[0, 0, 0], [3, 1, 3], [2, 2, 1]]), _positive(m, 3, 3), "prod"),
                        S(_positive(m, 3, 4), 0, _i64([[2, 0, 1, 1]]), _positive(m, 1, 4), "prod",
                          include_self=False)],
        supports_forward_ad=False)
    add("index_add", lambda a, d, idx, src, **kw: T.index_add(a, d, idx, src, **kw), _index_add_ref,
        index_add_samples)
    add("Tensor.index_add", lambda a, d, idx, src, **kw: a.index_add(d, idx, src, **kw), _index_add_ref,
        lambda m, rng: index_add_samples(m, rng)[:3], inplace="index_add_")
    add("index_copy", lambda a, d, idx, src: T.index_copy(a, d, idx, src), _index_copy_ref, index_copy_samples)
    add("Tensor.index_copy", lambda a, d, idx, src: a.index_copy(d, idx, src), _index_copy_ref,
        lambda m, rng: index_copy_samples(m, rng)[:3], inplace="index_copy_")
    add("index_fill", lambda a, d, idx, v: T.index_fill(a, d, idx, v), _index_fill_ref, index_fill_samples)
    add("Tensor.index_fill", lambda a, d, idx, v: a.index_fill(d, idx, v), _index_fill_ref, index_fill_samples,
        inplace="index_fill_")
    add("masked_select", lambda a, mask: T.masked_select(a, mask),
        lambda a, mask: np.broadcast_to(a, np.broadcast_shapes(a.shape, mask.shape))[
            np.broadcast_to(mask, np.broadcast_shapes(a.shape, mask.shape))], masked_select_samples)
    add("Tensor.masked_select", lambda a, mask: a.masked_select(mask), lambda a, mask: a[mask],
        lambda m, rng: masked_select_samples(m, rng)[:1])
    add("take_along_dim", lambda a, idx, *d: T.take_along_dim(a, idx, *d), _take_along_dim_ref,
        take_along_dim_samples)
    add("Tensor.take_along_dim", lambda a, idx, *d: a.take_along_dim(idx, *d), _take_along_dim_ref,
        lambda m, rng: take_along_dim_samples(m, rng)[:2])
    add("nonzero", lambda a: T.nonzero(a), lambda a: np.argwhere(a).astype(np.int64), nonzero_samples,
        supports_grad=False, supports_gradgrad=False)
    add("Tensor.nonzero", lambda a: a.nonzero(), lambda a: np.argwhere(a).astype(np.int64),
        lambda m, rng: nonzero_samples(m, rng)[:2], supports_grad=False, supports_gradgrad=False)
    add("nonzero.as_tuple", lambda a: T.nonzero(a, as_tuple=True), lambda a: tuple(np.nonzero(a)),
        nonzero_samples, supports_grad=False, supports_gradgrad=False)
    add("argwhere", lambda a: T.argwhere(a), lambda a: np.argwhere(a).astype(np.int64), nonzero_samples,
        supports_grad=False, supports_gradgrad=False)
    add("Tensor.argwhere", lambda a: a.argwhere(), lambda a: np.argwhere(a).astype(np.int64),
        lambda m, rng: nonzero_samples(m, rng)[:2], supports_grad=False, supports_gradgrad=False)
    add("gather", lambda a, d, idx: T.gather(a, d, idx), _gather_ref, gather_samples)
    add("gather.kwargs", lambda a, d, idx: T.gather(a, dim=d, index=idx), _gather_ref,
        lambda m, rng: gather_samples(m, rng)[:1])
    add("Tensor.gather", lambda a, d, idx: a.gather(d, idx), _gather_ref, lambda m, rng: gather_samples(m, rng)[1:3])
    add("index_select", lambda a, d, idx: T.index_select(a, d, idx), lambda a, d, idx: np.take(a, idx, axis=d),
        index_select_samples)
    add("Tensor.index_select", lambda a, d, idx: a.index_select(d, idx), lambda a, d, idx: np.take(a, idx, axis=d),
        lambda m, rng: index_select_samples(m, rng)[:2])
    add("narrow", lambda a, d, s, n: T.narrow(a, d, s, n), _narrow_ref, narrow_samples)
    add("Tensor.narrow", lambda a, d, s, n: a.narrow(d, s, n), _narrow_ref, lambda m, rng: narrow_samples(m, rng)[2:4])
    add("select", lambda a, d, i: T.select(a, d, i), lambda a, d, i: np.take(a, i, axis=d), select_samples)
    add("Tensor.select", lambda a, d, i: a.select(d, i), lambda a, d, i: np.take(a, i, axis=d),
        lambda m, rng: select_samples(m, rng)[1:3])
    add("unbind", lambda a, *args, **kw: T.unbind(a, *args, **kw), _unbind_ref, unbind_samples)
    add("Tensor.unbind", lambda a, *args, **kw: a.unbind(*args, **kw), _unbind_ref,
        lambda m, rng: unbind_samples(m, rng)[1:3])
    reshape_as_ref = lambda a, b: a.reshape(b.shape)  # noqa: E731
    # `other` only gives the shape: its gradient is zero (None)
    add("Tensor.reshape_as", lambda a, b: a.reshape_as(b), reshape_as_ref,
        lambda m, rng: [S(m(3, 4), m(2, 6)), S(NC(m(4, 3), "t"), m(12)), S(m(1), m()), S(m(2, 0), m(0, 3))])
    add("Tensor.view_as", lambda a, b: a.view_as(b), reshape_as_ref,
        lambda m, rng: [S(m(3, 4), m(4, 3)), S(m(3, 4), m(12)), S(m(), m(1, 1)), S(NC(m(6, 4), "step"), m(3, 2, 2)),
                        S(m(2, 0), m(0))])
    add("Tensor.contiguous", lambda a: a.contiguous(), lambda a: a.copy(),
        lambda m, rng: [S(m(3, 4)), S(NC(m(4, 3), "t")), S(NC(m(6, 4), "step"))])
    add("Tensor.index_put", lambda a, idx, v, **kw: a.index_put(idx, v, **kw), _index_put_ref, index_put_samples,
        inplace="index_put_")

    def setitem(a, idx, v):
        y = a.clone()
        y[idx] = v
        return y

    add("__setitem__", setitem, _setitem_ref, setitem_samples)
    add("Tensor.fill_", _inplace_op("fill_"), lambda a, v: np.full_like(a, v),
        lambda m, rng: [S(m(3, 4), 1.5), S(m(), -2), S(NC(m(4, 3), "t"), 0.5), S(m(3, 4), m())])
    add("Tensor.zero_", _inplace_op("zero_"), np.zeros_like, lambda m, rng: [S(m(3, 4)), S(NC(m(4, 3), "t"))])
    add("Tensor.copy_", _inplace_op("copy_"), lambda a, src: np.broadcast_to(src, a.shape).copy(),
        lambda m, rng: [S(m(3, 4), m(3, 4)), S(m(3, 4), m(4)).bc(), S(NC(m(4, 3), "t"), m(3, 4)),
                        S(m(3, 4), NC(m(4, 3), "t")), S(m(), m())])

    # ---- copies and dtype conversions ------------------------------------------------
    # Gradients are checked in float64 by finite differences, so conversions to float32
    # are forward-only here; test_ops.py::test_dtype_conversion_grads checks their grads.

    add("clone", lambda a: T.clone(a), lambda a: a.copy(), unary_samples(SPECIAL))
    # detach: the same values, cut from the graph (nothing requires grad)
    add("detach", lambda a: T.detach(a), lambda a: a.copy(), lambda m, rng: [S(m(3, 4)), S(NC(m(4, 3), "t"))],
        supports_grad=False, supports_gradgrad=False)
    add("Tensor.detach", lambda a: a.detach(), lambda a: a.copy(), lambda m, rng: [S(m(3, 4))],
        supports_grad=False, supports_gradgrad=False)
    add("Tensor.clone", lambda a: a.clone(), lambda a: a.copy(), variant_unary_samples)

    def dt(x):
        return getattr(T, x) if isinstance(x, str) else x

    def np_dt(x):
        return x if isinstance(x, str) else x.dtype

    add("Tensor.to", lambda a, *args, **kw: a.to(*map(dt, args), **{k: dt(v) for k, v in kw.items()}),
        lambda a, *args, dtype=None, copy=False: a.astype(np_dt(args[0] if args else dtype)),
        lambda m, rng: [
            S(m(3, 4), "float64"),
            S(NC(m(4, 3), "t"), "float64"),
            S(m(), dtype="float64"),
            S(m(3, 4), "float64", copy=True),
            S(m(3, 4), "float32").fwd("to float32"),
            S(m(3, 4) * 3, "int64").fwd("to int64 (truncates)"),
            S(np.array([0.0, -0.5, 2.0, NAN]), "bool").fwd("to bool"),
            S(m(2, 3) * 3, np.array([1], dtype=np.int64)).fwd("to another tensor's dtype"),
        ], keeps_ref_dtype=True)
    for name, np_dtype in (("long", "int64"), ("bool", "bool")):
        add(f"Tensor.{name}", (lambda n: lambda a: getattr(a, n)())(name), (lambda d: lambda a: a.astype(d))(np_dtype),
            lambda m, rng: [S(m(3, 4) * 3), S(np.array([0.0, -0.5, 2.7, -2.7]))],
            supports_grad=False, supports_gradgrad=False)
    add("Tensor.double", lambda a: a.double(), lambda a: a.astype("float64"),
        lambda m, rng: [S(m(3, 4)), S(NC(m(4, 3), "t"))], keeps_ref_dtype=True)
    add("Tensor.type", lambda a, d: a.type(dt(d)), lambda a, d: a.astype(d),
        lambda m, rng: [S(m(3, 4), "float64"), S(m(3, 4) * 3, "int64").fwd("to int64")], keeps_ref_dtype=True)
    add("Tensor.type_as", lambda a, b: a.type_as(b), lambda a, b: a.astype(b.dtype),
        lambda m, rng: [S(m(3, 4), m(2)), S(NC(m(4, 3), "t"), m()),
                        S(m(3, 4) * 3, np.array([1], dtype=np.int64)).fwd("to int64")])

    masked_fill_ref = lambda a, mask, v: np.where(mask, v, a)  # noqa: E731
    add("masked_fill", lambda a, mask, v: T.masked_fill(a, mask, v), masked_fill_ref, masked_fill_samples,
        inplace="masked_fill_")
    add("Tensor.masked_fill", lambda a, mask, v: a.masked_fill(mask, v), masked_fill_ref, masked_fill_samples)

    # ---- flip / roll / rot90, triangles, diagonals, cumulative ops --------------------

    add("flip", lambda a, dims: T.flip(a, dims), _flip_ref, flip_samples)
    add("flip.kwargs", lambda a, dims: T.flip(a, dims=dims), _flip_ref, lambda m, rng: flip_samples(m, rng)[:3])
    add("Tensor.flip", lambda a, *dims: a.flip(*dims), lambda a, *dims: _flip_ref(a, _sizes(dims)),
        lambda m, rng: [S(m(3, 4), 0), S(m(3, 4), 0, 1), S(m(2, 3, 4), (2, 0)), S(NC(m(4, 3), "t"), 1)])
    add("fliplr", lambda a: T.fliplr(a), np.fliplr, lambda m, rng: [S(m(3, 4)), S(m(2, 3, 4)), S(NC(m(4, 3), "t"))])
    add("Tensor.fliplr", lambda a: a.fliplr(), np.fliplr, lambda m, rng: [S(m(3, 4))])
    add("flipud", lambda a: T.flipud(a), np.flipud,
        lambda m, rng: [S(m(3, 4)), S(m(5)), S(NC(m(4, 3), "t")), S(m(0, 2))])
    add("Tensor.flipud", lambda a: a.flipud(), np.flipud, lambda m, rng: [S(m(3, 4))])
    add("roll", lambda a, *args, **kw: T.roll(a, *args, **kw), _roll_ref, roll_samples)
    add("roll.kwargs", lambda a, s, d: T.roll(a, shifts=s, dims=d), _roll_ref,
        lambda m, rng: [S(m(3, 4), 1, 0), S(m(3, 4), (1, 2), (0, 1))])
    add("Tensor.roll", lambda a, *args, **kw: a.roll(*args, **kw), _roll_ref,
        lambda m, rng: roll_samples(m, rng)[:4])
    add("rot90", lambda a, *args, **kw: T.rot90(a, *args, **kw), _rot90_ref, rot90_samples)
    add("Tensor.rot90", lambda a, *args, **kw: a.rot90(*args, **kw), _rot90_ref,
        lambda m, rng: rot90_samples(m, rng)[:4])
    add("tril", lambda a, *args, **kw: T.tril(a, *args, **kw), lambda a, diagonal=0: np.tril(a, diagonal),
        triangle_samples, inplace="tril_")
    add("triu", lambda a, *args, **kw: T.triu(a, *args, **kw), lambda a, diagonal=0: np.triu(a, diagonal),
        triangle_samples, inplace="triu_")
    add("Tensor.tril", lambda a, *args, **kw: a.tril(*args, **kw), lambda a, diagonal=0: np.tril(a, diagonal),
        lambda m, rng: triangle_samples(m, rng)[:3])
    add("Tensor.triu", lambda a, *args, **kw: a.triu(*args, **kw), lambda a, diagonal=0: np.triu(a, diagonal),
        lambda m, rng: triangle_samples(m, rng)[:3])
    add("diagonal", lambda a, *args, **kw: T.diagonal(a, *args, **kw), _diagonal_ref, diagonal_samples)
    add("Tensor.diagonal", lambda a, *args, **kw: a.diagonal(*args, **kw), _diagonal_ref,
        lambda m, rng: diagonal_samples(m, rng)[:4])
    add("diag_embed", lambda a, *args, **kw: T.diag_embed(a, *args, **kw), _diag_embed_ref, diag_embed_samples)
    add("Tensor.diag_embed", lambda a, *args, **kw: a.diag_embed(*args, **kw), _diag_embed_ref,
        lambda m, rng: diag_embed_samples(m, rng)[:3])
    add("diag", lambda a, *args: T.diag(a, *args), lambda a, k=0: np.diag(a, k).copy(), diag_samples)
    add("Tensor.diag", lambda a, *args: a.diag(*args), lambda a, k=0: np.diag(a, k).copy(),
        lambda m, rng: diag_samples(m, rng)[:5])
    add("trace", lambda a: T.trace(a), lambda a: np.asarray(np.trace(a)),
        lambda m, rng: [S(m(3, 4)), S(m(4, 3)), S(m(0, 3)), S(m(1, 1)), S(NC(m(4, 3), "t"))])
    add("Tensor.trace", lambda a: a.trace(), lambda a: np.asarray(np.trace(a)), lambda m, rng: [S(m(3, 3))])
    add("cumsum", lambda a, d: T.cumsum(a, d), _cum_ref(np.cumsum), cumulative_samples)
    add("cumsum.dtype", lambda a, d: T.cumsum(a, d, dtype=T.float64), _cum_ref(np.cumsum),
        lambda m, rng: cumulative_samples(m, rng)[:3], keeps_ref_dtype=True)
    add("Tensor.cumsum", lambda a, d: a.cumsum(dim=d), _cum_ref(np.cumsum),
        lambda m, rng: cumulative_samples(m, rng)[:3])
    add("cumprod", lambda a, d: T.cumprod(a, d), _cum_ref(np.cumprod),
        lambda m, rng: cumulative_samples(m, rng) + cumprod_zero_samples(m, rng), domain=(0.5, 1.5))
    add("cumprod.dtype", lambda a, d: T.cumprod(a, d, dtype=T.float64), _cum_ref(np.cumprod),
        lambda m, rng: cumulative_samples(m, rng)[:3] + cumprod_zero_samples(m, rng)[:1], keeps_ref_dtype=True,
        domain=(0.5, 1.5))
    add("Tensor.cumprod", lambda a, d: a.cumprod(d), _cum_ref(np.cumprod),
        lambda m, rng: cumulative_samples(m, rng)[:3] + cumprod_zero_samples(m, rng)[:1], domain=(0.5, 1.5))
    add("cummax", lambda a, d: tuple(T.cummax(a, d)), _cum_extreme_ref(True), cumulative_samples)
    add("cummin", lambda a, d: tuple(T.cummin(a, d)), _cum_extreme_ref(False), cumulative_samples)
    add("Tensor.cummax", lambda a, d: tuple(a.cummax(dim=d)), _cum_extreme_ref(True),
        lambda m, rng: cumulative_samples(m, rng)[:3])
    add("Tensor.cummin", lambda a, d: tuple(a.cummin(d)), _cum_extreme_ref(False),
        lambda m, rng: cumulative_samples(m, rng)[:3])
    add("logcumsumexp", lambda a, d: T.logcumsumexp(a, d), _cum_ref(np.logaddexp.accumulate), cumulative_samples)
    add("Tensor.logcumsumexp", lambda a, d: a.logcumsumexp(dim=d), _cum_ref(np.logaddexp.accumulate),
        lambda m, rng: cumulative_samples(m, rng)[:3])

    # ---- nn.functional -----------------------------------------------------

    add("nn.functional.mse_loss", lambda a, b, **kw: F().mse_loss(a, b, **kw), _mse_ref, mse_samples)
    add("nn.functional.cross_entropy", lambda x, t, **kw: F().cross_entropy(x, t, **kw), _cross_entropy_ref,
        cross_entropy_samples)
    add("nn.functional.nll_loss", lambda x, t, **kw: F().nll_loss(x, t, **kw), _nll_ref, cross_entropy_samples)
    add("nn.functional.cross_entropy.ignore_index", lambda x, t, **kw: F().cross_entropy(x, t, **kw),
        _cross_entropy_ref, ignore_index_samples)
    add("nn.functional.nll_loss.ignore_index", lambda x, t, **kw: F().nll_loss(x, t, **kw), _nll_ref,
        ignore_index_samples)
    add("nn.functional.nll_loss.log_softmax",
        lambda x, t, **kw: F().nll_loss(F().log_softmax(x, dim=1), t, **kw), _cross_entropy_ref,
        cross_entropy_samples)
    add("nn.functional.linear", lambda *args: F().linear(*args), _linear_ref, linear_samples)

    # ---- logical and bitwise ops (forward only, bool / int64 results) -------------------

    nograd = dict(supports_grad=False, supports_gradgrad=False)

    def logical_samples(m, rng):
        return [S(m.mask(3, 4), m.mask(3, 4)), S(m.mask(3, 1), m.mask(4)), S(m(3, 4), m(3, 4)),
                S(np.array([0.0, 1.5, NAN, -INF]), np.array([2.0, 0.0, 0.0, 1.0])), S(m.ints(3, 2, 3), m.mask(2, 3))]

    for name, ref in (("logical_and", np.logical_and), ("logical_or", np.logical_or)):
        add(name, (lambda n: lambda a, b: getattr(T, n)(a, b))(name), ref, logical_samples, **nograd)
        add(f"Tensor.{name}", (lambda n: lambda a, b: getattr(a, n)(b))(name), ref,
            lambda m, rng: logical_samples(m, rng)[:3], **nograd)
    not_samples = lambda m, rng: [S(m.mask(3, 4)), S(m(3, 4)), S(np.array([0.0, NAN, -0.0, INF])),  # noqa: E731
                                  S(m.ints(3, 5))]
    add("logical_not", lambda a: T.logical_not(a), np.logical_not, not_samples, **nograd)
    add("Tensor.logical_not", lambda a: a.logical_not(), np.logical_not, not_samples, **nograd)
    def bit_samples(m, rng):
        return [
            S(m.mask(3, 4), m.mask(3, 4)),
            S(m.mask(3, 1), m.mask(4)),
            S(m.ints(8, 3, 4), m.ints(8, 3, 4)),
            S(m.ints(8, 2, 3), 5),
            S(m.mask(2, 3), True),
            S(m.mask(2, 3), 5),  # bool & int: promoted to int64
            S(m.ints(8, 3, 1), m.mask(4)),
        ]

    def rbit_samples(m, rng):
        return [S(True, m.mask(3, 4)), S(6, m.ints(8, 2, 3))]

    add("__and__", lambda a, b: a & b, lambda a, b: a & b, bit_samples, **nograd)
    add("__or__", lambda a, b: a | b, lambda a, b: a | b, bit_samples, **nograd)
    add("__xor__", lambda a, b: a ^ b, lambda a, b: a ^ b, bit_samples, **nograd)
    add("__rand__", lambda a, b: a & b, lambda a, b: a & b, rbit_samples, **nograd)
    add("__ror__", lambda a, b: a | b, lambda a, b: a | b, rbit_samples, **nograd)
    add("__rxor__", lambda a, b: a ^ b, lambda a, b: a ^ b, rbit_samples, **nograd)
    add("__invert__", lambda a: ~a, lambda a: ~a, lambda m, rng: [S(m.mask(3, 4)), S(m.ints(8, 2, 3) - 4)], **nograd)

    # ---- torch's composite functions (python/rgrad/_composite.py) ----------

    add("broadcast_to", lambda a, size: T.broadcast_to(a, size), lambda a, size: np.broadcast_to(a, size),
        lambda m, rng: [S(m(3), (2, 3)), S(m(2, 1), (2, 4)), S(m(), (3,)), S(NC(m(4, 1), "t"), (3, 1, 4))])
    for name, ref in (("negative", np.negative), ("absolute", np.abs), ("subtract", np.subtract),
                      ("multiply", np.multiply), ("divide", np.divide)):
        arity = 1 if name in ("negative", "absolute") else 2
        add(name, (lambda n: lambda *a: getattr(T, n)(*a))(name), ref,
            (lambda k: lambda m, rng: [S(*[m(2, 3) + 1.5] * k), S(*[m(3)] * k)])(arity))
    add("Tensor.broadcast_to", lambda a, size: a.broadcast_to(size), lambda a, size: np.broadcast_to(a, size),
        lambda m, rng: [S(m(1, 3), (2, 3))])
    for name in ("movedim", "moveaxis"):
        add(name, (lambda n: lambda a, s, d: getattr(T, n)(a, s, d))(name), lambda a, s, d: np.moveaxis(a, s, d),
            lambda m, rng: [S(m(2, 3, 4), 0, 2), S(m(2, 3, 4), -1, 0), S(m(2, 3, 4), (0, 1), (2, 0)),
                            S(NC(m(4, 3), "t"), 1, 0), S(m(3), 0, 0)])
        add(f"Tensor.{name}", (lambda n: lambda a, s, d: getattr(a, n)(s, d))(name),
            lambda a, s, d: np.moveaxis(a, s, d), lambda m, rng: [S(m(2, 3, 4), 2, 0)])
    for name in ("swapaxes", "swapdims"):
        add(name, (lambda n: lambda a, x, y: getattr(T, n)(a, x, y))(name), np.swapaxes,
            lambda m, rng: [S(m(2, 3, 4), 0, 2), S(m(2, 3), -1, 0), S(NC(m(4, 3), "t"), 0, 1)])
        add(f"Tensor.{name}", (lambda n: lambda a, x, y: getattr(a, n)(x, y))(name), np.swapaxes,
            lambda m, rng: [S(m(2, 3, 4), 1, 2)])
    add("ravel", lambda a: T.ravel(a), np.ravel,
        lambda m, rng: [S(m(2, 3)), S(NC(m(4, 3), "t")), S(m()), S(NC(m(6, 2), "step"))])
    add("Tensor.ravel", lambda a: a.ravel(), np.ravel, lambda m, rng: [S(m(2, 3, 2))])
    add("unflatten", lambda a, d, sizes: T.unflatten(a, d, sizes),
        lambda a, d, sizes: a.reshape(a.shape[:d % a.ndim] + _unflat(a.shape[d % a.ndim], sizes) + a.shape[d % a.ndim + 1:]),
        lambda m, rng: [S(m(2, 6), 1, (2, 3)), S(m(6, 2), 0, (3, -1)), S(m(2, 4, 3), -2, (2, 2)),
                        S(NC(m(4, 6), "t"), 0, (3, 2))])
    add("Tensor.unflatten", lambda a, d, sizes: a.unflatten(d, sizes), lambda a, d, sizes: a.reshape(2, 3),
        lambda m, rng: [S(m(6), 0, (2, 3))])
    add("tile", lambda a, dims: T.tile(a, dims), np.tile,
        lambda m, rng: [S(m(3), (2,)), S(m(2, 3), (2,)), S(m(2, 3), (2, 1, 2)), S(m(), (3,)),
                        S(NC(m(3, 2), "t"), (1, 2))])
    add("Tensor.tile", lambda a, dims: a.tile(dims), np.tile, lambda m, rng: [S(m(2, 2), (2, 2))])
    for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
        add(name, (lambda n: lambda *ts: getattr(T, n)(*ts))(name), getattr(np, name),
            lambda m, rng: [S(m()), S(m(3)), S(m(2, 3)), S(m(2, 3, 2)), S(m(), m(3))])
    for name in ("hstack", "vstack", "row_stack", "dstack", "column_stack"):
        ref = np.vstack if name == "row_stack" else getattr(np, name)
        add(name, (lambda n: lambda ts: getattr(T, n)(ts))(name), ref,
            lambda m, rng: [S([m(3), m(3)]), S([m(2, 3), m(2, 3)]), S([m(2, 3, 2), m(2, 3, 2)]),
                            S([m(), m()]), S((m(2, 2), NC(m(2, 2), "t")))])
    add("tensor_split", lambda a, ios, **kw: T.tensor_split(a, ios, **kw), _tensor_split_ref,
        lambda m, rng: [S(m(7, 2), 3), S(m(2, 7), 3, dim=1), S(m(5), [1, 4]), S(m(5, 2), [2, 2, 9]),
                        S(m(3), 5), S(NC(m(4, 3), "t"), 2, dim=-1)])
    add("Tensor.tensor_split", lambda a, ios, **kw: a.tensor_split(ios, **kw), _tensor_split_ref,
        lambda m, rng: [S(m(6, 2), 4)])
    for name, need in (("hsplit", 1), ("vsplit", 2), ("dsplit", 3)):
        ref = (lambda n: lambda a, s: tuple(getattr(np, n)(a, s)))(name)
        shape = (4, 6, 2) if need == 3 else (4, 6)
        add(name, (lambda n: lambda a, s: getattr(T, n)(a, s))(name), ref,
            (lambda shape: lambda m, rng: [S(m(*shape), 2), S(m(*shape), [1, 3])])(shape))
        add(f"Tensor.{name}", (lambda n: lambda a, s: getattr(a, n)(s))(name), ref,
            (lambda shape: lambda m, rng: [S(m(*shape), 2)])(shape))
    add("tensordot", lambda a, b, **kw: T.tensordot(a, b, **kw), lambda a, b, dims=2: np.tensordot(a, b, dims),
        lambda m, rng: [S(m(2, 3, 4), m(3, 4, 5)), S(m(2, 3), m(3, 4), dims=1), S(m(2, 3), m(4, 5), dims=0),
                        S(m(2, 3, 4), m(4, 3), dims=([1, 2], [1, 0])), S(NC(m(4, 3), "t"), m(4, 2), dims=1)])
    add("inner", lambda a, b: T.inner(a, b), np.inner,
        lambda m, rng: [S(m(3), m(3)), S(m(2, 3), m(4, 3)), S(m(), m(2, 2)), S(NC(m(3, 2), "t"), m(3))])
    add("Tensor.inner", lambda a, b: a.inner(b), np.inner, lambda m, rng: [S(m(2, 3), m(3))])
    add("kron", lambda a, b: T.kron(a, b), np.kron,
        # (not a transposed input: torch's kron fails on one, "view size is not compatible")
        lambda m, rng: [S(m(2, 3), m(3, 2)), S(m(2), m(3)), S(m(2, 2), m(2, 1, 3)), S(m(), m(2, 2))])
    add("Tensor.kron", lambda a, b: a.kron(b), np.kron, lambda m, rng: [S(m(2, 2), m(2))])
    add("diff", lambda a, *args, **kw: T.diff(a, *args, **kw),
        lambda a, *args, **kw: np.diff(a, *args, **{_np_diff_kw(k): v for k, v in kw.items()}),
        lambda m, rng: [S(m(5)), S(m(3, 5), n=2), S(m(4, 3), dim=0), S(m(3, 4), 1, -1, m(3, 1), m(3, 2)),
                        S(m(4), n=0), S(m(4), n=5), S(NC(m(5, 3), "t"), dim=-1)])
    add("Tensor.diff", lambda a, **kw: a.diff(**kw), lambda a, **kw: np.diff(a, **{_np_diff_kw(k): v for k, v in kw.items()}),
        lambda m, rng: [S(m(2, 5), n=2)])
    add("meshgrid", lambda *ts, **kw: T.meshgrid(*ts, **kw), lambda *ts, **kw: tuple(np.meshgrid(*ts, **kw)),
        lambda m, rng: [S(m(3), m(4), indexing="ij"), S(m(3), m(4), indexing="xy"), S(m(2), m(3), m(2), indexing="ij"),
                        S(m(), m(3), indexing="xy")])
    add("cartesian_prod", lambda *ts: T.cartesian_prod(*ts), _cartesian_prod_ref,
        lambda m, rng: [S(m(3), m(2)), S(m(2), m(2), m(3)), S(m(4))])
    add("einsum", lambda eq, *ts: T.einsum(eq, *ts), lambda eq, *ts: np.einsum(eq, *ts),
        lambda m, rng: [S("ij,jk->ik", m(3, 4), m(4, 5)), S("ij,jk", m(2, 3), m(3, 2)), S("ij->ji", m(2, 3)),
                        S("bij,bjk->bik", m(2, 3, 4), m(2, 4, 2)), S("...ij,...jk->...ik", m(2, 1, 3, 4), m(3, 4, 2)),
                        S("i,i->", m(4), m(4)), S("i,j->ij", m(3), m(2)), S("ijk->", m(2, 3, 2)),
                        S("abc,cd,de->abe", m(2, 3, 4), m(4, 2), m(2, 3)), S("bn,anm,bm->ba", m(2, 3), m(4, 3, 2), m(2, 2)),
                        S("ii->i", m(3, 3)), S("ii", m(3, 3)), S("iij->j", m(3, 3, 2)), S("ijj,jk->ik", m(2, 3, 3), m(3, 2)),
                        S("...ii->...i", m(2, 3, 3)), S("ab,ab,ab->", m(1, 3), m(2, 3), m(2, 1)),
                        S("ij,jk->ik", NC(m(4, 3), "t"), m(4, 2))])
    add("einsum.list", lambda eq, ts: T.einsum(eq, ts), lambda eq, ts: np.einsum(eq, *ts),
        lambda m, rng: [S("ij,j->i", [m(3, 4), m(4)])])
    add("einsum.sublist", lambda a, sa, b, sb, so: T.einsum(a, sa, b, sb, so),
        lambda a, sa, b, sb, so: np.einsum(a, sa, b, sb, so), lambda m, rng: [S(m(3, 4), [0, 1], m(4, 2), [1, 2], [0, 2])])

    # fused arithmetic, NaN handling, products with a bias (python/rgrad/_composite.py)
    for name, f in (("addcmul", lambda a, b, c, **kw: T.addcmul(a, b, c, **kw)),
                    ("Tensor.addcmul", lambda a, b, c, **kw: a.addcmul(b, c, **kw))):
        add(name, f, lambda a, b, c, value=1: a + value * b * c,
            lambda m, rng: [S(m(2, 3), m(2, 3), m(2, 3)), S(m(2, 3), m(3), m(2, 1), value=0.5),
                            S(m(3), m(2, 3), m(2, 3), value=-2), S(NC(m(3, 2), "t"), m(2, 3), m(1), value=3.0)],
            inplace="addcmul_" if name == "addcmul" else None)
    for name, f in (("addcdiv", lambda a, b, c, **kw: T.addcdiv(a, b, c, **kw)),
                    ("Tensor.addcdiv", lambda a, b, c, **kw: a.addcdiv(b, c, **kw))):
        add(name, f, lambda a, b, c, value=1: a + value * b / c,
            lambda m, rng: [S(m(2, 3), m(2, 3), m(2, 3) + 3), S(m(2, 3), m(3), m(2, 1) - 3, value=0.5),
                            S(NC(m(3, 2), "t"), m(2, 3), m(1) + 3, value=-1.5)],
            inplace="addcdiv_" if name == "addcdiv" else None)
    for name, f in (("lerp", lambda a, b, w: T.lerp(a, b, w)), ("Tensor.lerp", lambda a, b, w: a.lerp(b, w))):
        add(name, f, lambda a, b, w: a + w * (b - a),
            lambda m, rng: [S(m(2, 3), m(2, 3), 0.25), S(m(2, 3), m(3), 0.75), S(m(2, 3), m(2, 3), m(2, 3) * 0.3 + 0.5),
                            S(m(3), m(3), m(2, 3)), S(NC(m(3, 2), "t"), m(2, 3), -0.5)],
            inplace="lerp_" if name == "lerp" else None)
    for name in ("clamp_min", "clamp_max"):
        ref = (lambda a, b: np.maximum(a, b)) if name == "clamp_min" else (lambda a, b: np.minimum(a, b))
        add(name, (lambda n: lambda a, b: getattr(T, n)(a, b))(name), ref,
            lambda m, rng: [S(m(3, 4), 0.1), S(m(3, 4), m(3, 4)), S(m(3, 4), m(4)), S(NC(m(4, 3), "t"), -0.2)],
            inplace=name + "_")
        add(f"Tensor.{name}", (lambda n: lambda a, b: getattr(a, n)(b))(name), ref, lambda m, rng: [S(m(3, 4), 0.1)])
    add("nan_to_num", lambda a, *args, **kw: T.nan_to_num(a, *args, **kw), _nan_to_num_ref,
        lambda m, rng: [S(m(3, 4)), S(np.array([NAN, 1.5, -2.0])).fwd("NaN"),
                        S(np.array([NAN, INF, -INF, 1.5]), 2.0, 100.0, -100.0).fwd("specials, given values"),
                        S(np.array([NAN, INF, -INF]), nan=-1.0, posinf=5.0, neginf=-7.0).fwd("keywords"),
                        S(NC(m(4, 3), "t"), 0.5),
                        S(NC(np.array([[NAN, INF], [1.5, -INF], [2.0, NAN]]), "t"), 1.0, 3.0, -3.0)
                        .fwd("specials, transposed"),
                        S(m.ints(5, 2, 3) - 2, 1.0).fwd("integers: a copy")],
        # (the defaults, and numbers past float32's range, are float32's own: against torch in
        # tests/test_nan_ops.py, the reference computes in float64)
        inplace="nan_to_num_")
    add("Tensor.nan_to_num", lambda a, *args, **kw: a.nan_to_num(*args, **kw), _nan_to_num_ref,
        lambda m, rng: [S(m(3, 4), 0.5)])
    add("nansum", lambda a, *args, **kw: T.nansum(a, *args, **kw), _nan_reduce_ref(np.nansum),
        lambda m, rng: [S(m(3, 4)), S(m(3, 4), 1), S(m(3, 4), (0, 1), keepdim=True),
                        S(np.array([[1.0, NAN], [NAN, NAN]]), 1).fwd("NaN"), S(NC(m(4, 3), "t"), 0),
                        S(NC(m(4, 3), "step"), -1, keepdim=True), S(m(2, 3, 4), (0, 2)), S(m(2, 3, 4), 1),
                        S(np.array([[NAN, INF, 1.0], [2.0, NAN, -3.0]]), 0).fwd("NaN and inf"),
                        S(m.ints(5, 3, 4) - 2, 1).fwd("integers: the sum"), S(m.mask(3, 4)).fwd("bools: the count")])
    add("nansum.dtype", lambda a, *args, **kw: T.nansum(a, *args, dtype=T.float64, **kw),
        lambda a, dim=None, keepdim=False: _nan_reduce_ref(np.nansum)(np.asarray(a, dtype=np.float64), dim, keepdim),
        lambda m, rng: [S(m(3, 4)), S(m(3, 4), 1), S(NC(m(4, 3), "t"), 0, True),
                        S(np.array([[1.0, NAN], [NAN, 2.5]]), 1).fwd("NaN"), S(m.ints(5, 3, 4), 0).fwd("integers")],
        keeps_ref_dtype=True)
    add("Tensor.nansum", lambda a, *args, **kw: a.nansum(*args, **kw), _nan_reduce_ref(np.nansum),
        lambda m, rng: [S(m(3, 4), 0), S(m(3, 4), dim=(0, 1), keepdim=True), S(NC(m(4, 3), "t"), 1)])
    add("nanmean", lambda a, *args, **kw: T.nanmean(a, *args, **kw), _nan_reduce_ref(np.nanmean),
        lambda m, rng: [S(m(3, 4)), S(m(3, 4), 1), S(m(3, 4), -1, keepdim=True),
                        S(np.array([[1.0, NAN], [2.0, 4.0]]), 1).fwd("NaN"), S(NC(m(4, 3), "t"), 0)])
    add("Tensor.nanmean", lambda a, *args, **kw: a.nanmean(*args, **kw), _nan_reduce_ref(np.nanmean),
        lambda m, rng: [S(m(3, 4), 1)])
    add("count_nonzero", lambda a, *args: T.count_nonzero(a, *args), lambda a, *args: np.count_nonzero(a, *args),
        lambda m, rng: [S(np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]])), S(np.array([[0.0, 1.0], [2.0, 0.0]]), 1),
                        S(m.ints(5, 3, 4) - 2, (0, 1))], **nograd)
    add("Tensor.count_nonzero", lambda a, *args: a.count_nonzero(*args), lambda a, *args: np.count_nonzero(a, *args),
        lambda m, rng: [S(np.array([[0.0, 1.0], [2.0, 0.0]]), 0)], **nograd)
    add("vdot", lambda a, b: T.vdot(a, b), np.vdot, lambda m, rng: [S(m(4), m(4)), S(NC(m(6), "step"), m(3))])
    add("Tensor.vdot", lambda a, b: a.vdot(b), np.vdot, lambda m, rng: [S(m(3), m(3))])
    add("addmv", lambda a, b, c, **kw: T.addmv(a, b, c, **kw), lambda a, b, c, beta=1, alpha=1: beta * a + alpha * (b @ c),
        lambda m, rng: [S(m(3), m(3, 4), m(4)), S(m(3), m(3, 4), m(4), beta=0.5, alpha=2.0), S(m(1), m(2, 3), m(3)),
                        S(m(3), NC(m(4, 3), "t"), m(4), alpha=-1)], inplace="addmv_")
    add("Tensor.addmv", lambda a, b, c, **kw: a.addmv(b, c, **kw), lambda a, b, c, **kw: a + b @ c,
        lambda m, rng: [S(m(2), m(2, 3), m(3))])
    add("addr", lambda a, b, c, **kw: T.addr(a, b, c, **kw), lambda a, b, c, beta=1, alpha=1: beta * a + alpha * np.outer(b, c),
        lambda m, rng: [S(m(3, 4), m(3), m(4)), S(m(3, 4), m(3), m(4), beta=2, alpha=0.5), S(m(4), m(3), m(4))],
        inplace="addr_")
    add("Tensor.addr", lambda a, b, c, **kw: a.addr(b, c, **kw), lambda a, b, c: a + np.outer(b, c),
        lambda m, rng: [S(m(2, 3), m(2), m(3))])
    add("baddbmm", lambda a, b, c, **kw: T.baddbmm(a, b, c, **kw),
        lambda a, b, c, beta=1, alpha=1: beta * a + alpha * np.matmul(b, c),
        lambda m, rng: [S(m(2, 3, 4), m(2, 3, 5), m(2, 5, 4)), S(m(3, 4), m(2, 3, 5), m(2, 5, 4), beta=0.5, alpha=2),
                        S(m(2, 3, 4), m(2, 3, 5), m(2, 5, 4), beta=0)], inplace="baddbmm_")
    add("Tensor.baddbmm", lambda a, b, c, **kw: a.baddbmm(b, c, **kw), lambda a, b, c: a + np.matmul(b, c),
        lambda m, rng: [S(m(2, 2, 2), m(2, 2, 3), m(2, 3, 2))])
    add("addbmm", lambda a, b, c, **kw: T.addbmm(a, b, c, **kw),
        lambda a, b, c, beta=1, alpha=1: beta * a + alpha * np.matmul(b, c).sum(0),
        lambda m, rng: [S(m(3, 4), m(2, 3, 5), m(2, 5, 4)), S(m(4), m(2, 3, 5), m(2, 5, 4), beta=-1, alpha=0.5)],
        inplace="addbmm_")
    add("Tensor.addbmm", lambda a, b, c, **kw: a.addbmm(b, c, **kw), lambda a, b, c: a + np.matmul(b, c).sum(0),
        lambda m, rng: [S(m(2, 2), m(2, 2, 3), m(2, 3, 2))])
    add("logit", lambda a, *args: T.logit(a, *args), _logit_ref,
        lambda m, rng: [S(m(3, 4) * 0.2 + 0.5), S(m(3, 4) * 0.2 + 0.5, 0.3),
                        S(np.array([0.0, 1.0, 0.5, -0.5, 1.5])).fwd("ends, outside"),
                        S(np.array([0.0, 1.0, 0.05, 0.99]), 0.1).fwd("eps clamps")], inplace="logit_")
    add("Tensor.logit", lambda a, *args: a.logit(*args), _logit_ref, lambda m, rng: [S(m(3) * 0.2 + 0.5)])
    # float_power: pow on float64 operands (a float32 operand is cast: ToCopyBackward0)
    def float_power_ref(a, b):
        return np.power(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))

    add("float_power", lambda a, b: T.float_power(a, b), float_power_ref,
        lambda m, rng: [S(_positive(m, 3, 4), m(3, 4)), S(_positive(m, 3, 1), m(4)).bc(), S(_positive(m, 2, 3), 2),
                        S(_positive(m, 2, 3), -1.5), S(2.5, m(3, 4)), S(NC(_positive(m, 4, 3), "t"), 0.5)],
        keeps_ref_dtype=True)
    add("Tensor.float_power", lambda a, b: a.float_power(b), float_power_ref,
        lambda m, rng: [S(_positive(m, 3, 4), m(3, 4)), S(_positive(m, 2, 3), 3)], keeps_ref_dtype=True)
    add("Tensor.float_power_", _inplace_op("float_power_"), float_power_ref,
        lambda m, rng: [S(_positive(m, 3, 4), m(3, 4)), S(_positive(m, 2, 3), 3)], dtypes=("float64",))
    # linalg: the cross product (torch's fma bits), dist, aminmax (one node, two results)
    def cross_ref(a, b, dim=-1):
        return np.cross(a, b, axis=dim)

    cross_samples = lambda m, rng: [  # noqa: E731
        S(m(4, 3), m(4, 3), dim=1), S(m(3, 5), m(3, 5), dim=0), S(m(2, 3), m(1, 3), dim=-1).bc(),
        S(NC(m(3, 4), "t"), m(4, 3), dim=1), S(m(3), m(3), dim=0)]
    add("cross", lambda a, b, **kw: T.cross(a, b, **kw), cross_ref, cross_samples)
    add("Tensor.cross", lambda a, b, **kw: a.cross(b, **kw), cross_ref, lambda m, rng: cross_samples(m, rng)[:2])

    def dist_ref(a, b, p=2):
        d = np.abs(a - b).ravel()
        if p == 0:
            return np.asarray(float(np.count_nonzero(d)))
        if np.isinf(p):
            return np.asarray(d.max() if p > 0 else d.min())
        return np.asarray(np.sum(d ** p) ** (1.0 / p))

    dist_samples = lambda m, rng: [  # noqa: E731
        S(m(3, 4), m(3, 4)), S(m(3, 4), m(4), 1).bc(), S(m(2, 3), m(2, 3), 3), S(m(5), m(5), 1.5),
        S(m(2, 3), m(2, 3), INF), S(m(3), m(3), 0).fwd("p=0: a count")]
    add("dist", lambda a, b, *args: T.dist(a, b, *args), dist_ref, dist_samples)
    add("Tensor.dist", lambda a, b, *args: a.dist(b, *args), dist_ref, lambda m, rng: dist_samples(m, rng)[:3])

    def aminmax_ref(a, dim=None, keepdim=False):
        return (np.min(a, axis=dim, keepdims=keepdim), np.max(a, axis=dim, keepdims=keepdim))

    aminmax_samples = lambda m, rng: [  # noqa: E731
        S(m(3, 4)), S(m(3, 4), dim=0), S(m(3, 4), dim=-1, keepdim=True), S(NC(m(4, 3), "t"), dim=1),
        S(m(5), dim=0), S(m.ints(5, 3, 4), dim=1).fwd("int64"), S(m.mask(2, 3)).fwd("bool")]
    add("aminmax", lambda a, **kw: tuple(T.aminmax(a, **kw)), aminmax_ref, aminmax_samples)
    add("Tensor.aminmax", lambda a, **kw: tuple(a.aminmax(**kw)), aminmax_ref,
        lambda m, rng: aminmax_samples(m, rng)[:3])
    # linalg: the spectral decompositions. Their vectors are unique only up to sign, so the
    # rows compare gauge-invariant quantities, as torch's OpInfos do: eigenvalues and |V|
    # of A + Aᵀ (symmetric, so gradcheck's one-sided perturbations stay in the op's
    # domain), S and |U|, |Vh| (narrowed to the k = min(m, n) determined vectors).
    # Samples are well conditioned: separated eigenvalues, distinct singular values.
    def _orth(rng, n, batch=()):
        return np.linalg.qr(rng.randn(*batch, n, n))[0]

    def _sym(rng, n, batch=()):
        # half a symmetric matrix with eigenvalues spread over [-2, 2] (A + Aᵀ is it)
        q = _orth(rng, n, batch)
        w = np.linspace(-2.0, 2.0, n) + rng.uniform(-0.15, 0.15, size=(*batch, n))
        return 0.5 * (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)

    def _fullrank(rng, m, n, batch=()):
        # distinct singular values in [1, 3]
        k = min(m, n)
        u = _orth(rng, m, batch)[..., :k]
        v = _orth(rng, n, batch)[..., :k]
        sv = np.linspace(3.0, 1.0, k) + rng.uniform(-0.1, 0.1, size=(*batch, k))
        return (u * sv[..., None, :]) @ np.swapaxes(v, -1, -2)

    def eigh_ref(a, UPLO="L"):  # noqa: N803
        w, v = np.linalg.eigh(a + np.swapaxes(a, -1, -2), UPLO=UPLO)
        return w, np.abs(v)

    def eigh_op(a, **kw):
        w, v = T.linalg.eigh(a + a.mT, **kw)
        return w, v.abs()

    eigh_samples = lambda m, rng: [  # noqa: E731
        S(_sym(rng, 3)), S(_sym(rng, 4), UPLO="U"), S(_sym(rng, 3, (2,))), S(NC(_sym(rng, 4).T, "t")),
        S(_sym(rng, 1)), S(_sym(rng, 3, (2, 2)), UPLO="L"), S(np.zeros((0, 0))).fwd("empty"),
        S(np.zeros((2, 0, 0))).fwd("empty batch")]
    add("linalg.eigh", eigh_op, eigh_ref, eigh_samples, atol_f32=1e-4, rtol_f32=1e-4)
    add("linalg.eigvalsh", lambda a, **kw: T.linalg.eigvalsh(a + a.mT, **kw),
        lambda a, UPLO="L": np.linalg.eigvalsh(a + np.swapaxes(a, -1, -2), UPLO=UPLO),  # noqa: N803
        eigh_samples, atol_f32=1e-4, rtol_f32=1e-4)

    def _uv(u, s, v, full_v_rows=True):
        k = s.shape[-1]
        u = u[..., :k]
        v = v[..., :k, :] if full_v_rows else v[..., :k]
        return u, s, v

    def svd_ref(a, full_matrices=True):
        u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
        u, s, vh = _uv(u, s, vh)
        return np.abs(u), s, np.abs(vh)

    def svd_op(a, **kw):
        u, s, vh = _uv(*T.linalg.svd(a, **kw))
        return u.abs(), s, vh.abs()

    svd_samples = lambda m, rng: [  # noqa: E731
        S(_fullrank(rng, 3, 3)), S(_fullrank(rng, 4, 3), full_matrices=False), S(_fullrank(rng, 3, 5)),
        S(_fullrank(rng, 4, 2, (2,)), full_matrices=False), S(_fullrank(rng, 2, 4, (2,))),
        S(NC(_fullrank(rng, 3, 4).T, "t"), full_matrices=False), S(_fullrank(rng, 1, 1)),
        S(np.zeros((0, 3))).fwd("empty"), S(np.zeros((2, 3, 0)), full_matrices=False).fwd("empty batch")]
    add("linalg.svd", svd_op, svd_ref, svd_samples, atol_f32=1e-4, rtol_f32=1e-4)
    add("linalg.svdvals", lambda a: T.linalg.svdvals(a), lambda a: np.linalg.svd(a, compute_uv=False),
        lambda m, rng: [x for x in svd_samples(m, rng) if not x.kwargs], atol_f32=1e-4, rtol_f32=1e-4)

    def torch_svd_ref(a, some=True):
        u, s, vh = np.linalg.svd(a, full_matrices=not some)
        u, s, v = _uv(u, s, np.swapaxes(vh, -1, -2), full_v_rows=False)
        return np.abs(u), s, np.abs(v)

    def torch_svd_op(call):
        def op(a, **kw):
            u, s, v = _uv(*call(a, **kw), full_v_rows=False)
            return u.abs(), s, v.abs()
        return op

    torch_svd_samples = lambda m, rng: [  # noqa: E731
        S(_fullrank(rng, 3, 3)), S(_fullrank(rng, 4, 3), some=False), S(_fullrank(rng, 3, 5)),
        S(_fullrank(rng, 2, 4, (2,)), some=True), S(NC(_fullrank(rng, 3, 4).T, "t"))]
    add("svd", torch_svd_op(lambda a, **kw: T.svd(a, **kw)), torch_svd_ref, torch_svd_samples,
        atol_f32=1e-4, rtol_f32=1e-4)
    add("Tensor.svd", torch_svd_op(lambda a, **kw: a.svd(**kw)), torch_svd_ref,
        lambda m, rng: torch_svd_samples(m, rng)[:3], atol_f32=1e-4, rtol_f32=1e-4)

    # QR: Householder with LAPACK's reflector signs, so Q and R are compared as they are
    def qr_ref(a, mode="reduced"):
        if mode == "r":
            return np.zeros(0), np.linalg.qr(a, mode="r")
        return np.linalg.qr(a, mode=mode)

    qr_samples = lambda m, rng: [  # noqa: E731
        S(m(4, 3)), S(m(3, 5)), S(m(3, 3), "reduced"), S(m(2, 4, 3)), S(NC(m(3, 4), "t")), S(m(3, 5), "complete"),
        S(m(2, 2, 4), mode="complete"), S(m(4, 3), "complete").fwd("mode='complete' with m > n: no derivative"),
        S(m(4, 3), mode="r").fwd("mode='r': no derivative"), S(np.zeros((0, 3))).fwd("empty")]
    add("linalg.qr", lambda a, *args, **kw: tuple(T.linalg.qr(a, *args, **kw)), qr_ref, qr_samples,
        atol_f32=1e-4, rtol_f32=1e-4)

    # the norms and queries torch composes from svdvals: the same nodes
    def matrix_norm_ref(a, ord="fro", dim=(-2, -1), keepdim=False):  # noqa: A002
        return np.linalg.norm(a, ord=ord, axis=dim, keepdims=keepdim)

    svd_norm_samples = lambda m, rng: [  # noqa: E731
        S(_fullrank(rng, 3, 4), "nuc"), S(_fullrank(rng, 4, 3), 2), S(_fullrank(rng, 3, 3), -2),
        S(_fullrank(rng, 3, 4, (2,)), "nuc", keepdim=True),
        S(np.moveaxis(_fullrank(rng, 3, 4, (2,)), 0, 1), 2, dim=(0, 2)),
        S(np.moveaxis(_fullrank(rng, 4, 3, (2,)), 0, 2), -2, dim=(1, 0), keepdim=True)]
    add("linalg.matrix_norm.svd", lambda a, *args, **kw: T.linalg.matrix_norm(a, *args, **kw), matrix_norm_ref,
        svd_norm_samples, atol_f32=1e-4, rtol_f32=1e-4)
    add("linalg.norm.svd", lambda a, *args, **kw: T.linalg.norm(a, *args, **kw), matrix_norm_ref,
        lambda m, rng: svd_norm_samples(m, rng)[:3], atol_f32=1e-4, rtol_f32=1e-4)

    def nuclear_norm_op(a, *args, **kw):
        import warnings

        with warnings.catch_warnings():  # at::nuclear_norm's deprecation warning (tests/test_linalg_spectral.py)
            warnings.simplefilter("ignore", UserWarning)
            return T.nuclear_norm(a, *args, **kw)

    def nuclear_norm_ref(a, dim=(-2, -1), keepdim=False):
        return np.linalg.norm(a, ord="nuc", axis=tuple(dim), keepdims=keepdim)

    add("nuclear_norm", nuclear_norm_op, nuclear_norm_ref,
        lambda m, rng: [S(_fullrank(rng, 3, 4)), S(_fullrank(rng, 4, 3), keepdim=True),
                        S(np.moveaxis(_fullrank(rng, 3, 4, (2,)), 0, 2), (0, 1))],
        atol_f32=1e-4, rtol_f32=1e-4)

    def cond_ref(a, p=None):
        if a.size == 0:
            return np.zeros(a.shape[:-2])
        return np.linalg.cond(a, p=p)

    add("linalg.cond", lambda a, *args: T.linalg.cond(a, *args), cond_ref,
        lambda m, rng: [S(_fullrank(rng, 3, 3)), S(_fullrank(rng, 4, 3), 2), S(_fullrank(rng, 3, 3, (2,)), -2),
                        S(_fullrank(rng, 2, 4), None), S(_fullrank(rng, 3, 3), "nuc"),
                        S(_fullrank(rng, 3, 3, (2,)), "nuc"),
                        # torch's backward through these fails (its in-place fill of the saved
                        # inverse): forward only; test_linalg_spectral.py checks the error
                        S(_fullrank(rng, 3, 3), "fro").fwd("torch's backward raises"),
                        S(_fullrank(rng, 3, 3), INF).fwd("torch's backward raises"),
                        S(_fullrank(rng, 3, 3, (2,)), -1).fwd("torch's backward raises"),
                        S(np.zeros((2, 0, 0)), 1).fwd("empty")],
        atol_f32=1e-4, rtol_f32=1e-4)

    # hermitian samples are half the matrix: the op reads A + Aᵀ (one triangle is read)
    def pinv_ref(a, rcond=None, hermitian=False, atol=None, rtol=None):
        if rcond is not None:
            atol, rtol = 0.0, rcond
        if hermitian:
            a = a + np.swapaxes(a, -1, -2)
        return np.linalg.pinv(a, rtol=1e-15 if rtol is None else rtol, hermitian=hermitian)

    def pinv_op(a, *args, **kw):
        if kw.get("hermitian"):
            a = a + a.mT
        return T.linalg.pinv(a, *args, **kw)

    pinv_samples = lambda m, rng: [  # noqa: E731
        S(_fullrank(rng, 3, 3)), S(_fullrank(rng, 4, 3)), S(_fullrank(rng, 3, 5)), S(_fullrank(rng, 2, 4, (2,))),
        S(_sym(rng, 3), hermitian=True), S(NC(_fullrank(rng, 4, 3).T, "t"), rtol=0.01),
        S(_fullrank(rng, 3, 4), atol=0.5), S(np.zeros((0, 3))).fwd("empty")]
    add("linalg.pinv", pinv_op, pinv_ref, pinv_samples,
        atol_f32=1e-4, rtol_f32=1e-4)
    add("pinverse", lambda a, *args: T.pinverse(a, *args), lambda a, rcond=1e-15: np.linalg.pinv(a, rcond),
        lambda m, rng: [S(_fullrank(rng, 3, 3)), S(_fullrank(rng, 4, 3), 1e-3), S(_fullrank(rng, 2, 3, (2,)))],
        atol_f32=1e-4, rtol_f32=1e-4)
    add("Tensor.pinverse", lambda a, *args: a.pinverse(*args), lambda a, rcond=1e-15: np.linalg.pinv(a, rcond),
        lambda m, rng: [S(_fullrank(rng, 3, 4)), S(_fullrank(rng, 4, 3), 1e-3)], atol_f32=1e-4, rtol_f32=1e-4)

    # (helper-46) triangular_solve, lstsq, geqrf, householder_product / orgqr, ormqr: compositions
    # recorded under torch's nodes (python/rgrad/_linalg_more.py); fill_diagonal_
    def _quiet(fn):
        def op(*args, **kw):
            import warnings

            with warnings.catch_warnings():  # (triangular_solve's deprecation: test_linalg_more.py)
                warnings.simplefilter("ignore", UserWarning)
                return fn(*args, **kw)
        return op

    def triangular_solve_ref(b, a, upper=True, transpose=False, unitriangular=False):
        t = np.triu(a) if upper else np.tril(a)
        if unitriangular:
            t = t - t * np.eye(a.shape[-1]) + np.eye(a.shape[-1])
        if transpose:
            t = np.swapaxes(t, -1, -2)
        batch = np.broadcast_shapes(b.shape[:-2], a.shape[:-2])
        return (np.linalg.solve(np.broadcast_to(t, batch + t.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:])),
                np.broadcast_to(a, batch + a.shape[-2:]).copy())

    def _triangle(rng, n, batch=(), upper=True):
        a = rng.uniform(-1.0, 1.0, size=(*batch, n, n)) + 3.0 * np.eye(n)
        return np.triu(a) if upper else np.tril(a)

    triangular_solve_samples = lambda m, rng: [  # noqa: E731
        S(m(3, 2), _triangle(rng, 3)), S(m(3, 2), _triangle(rng, 3, upper=False), upper=False),
        S(m(3, 4), _triangle(rng, 3), transpose=True),
        S(m(3, 2), _triangle(rng, 3, upper=False), False, True, True),
        S(m(2, 1, 3, 2), _triangle(rng, 3, (3,))).bc(), S(NC(m(2, 3), "t"), _triangle(rng, 3, (2,)))]
    add("triangular_solve", _quiet(lambda b, a, *args, **kw: tuple(T.triangular_solve(b, a, *args, **kw))),
        triangular_solve_ref, triangular_solve_samples, atol_f32=1e-4, rtol_f32=1e-4)
    add("Tensor.triangular_solve", _quiet(lambda b, a, *args, **kw: tuple(b.triangular_solve(a, *args, **kw))),
        triangular_solve_ref, lambda m, rng: triangular_solve_samples(m, rng)[:3], atol_f32=1e-4, rtol_f32=1e-4)

    def lstsq_ref(a, b):
        x = np.linalg.pinv(a) @ (b[..., None] if b.ndim == a.ndim - 1 else b)
        return x[..., 0] if b.ndim == a.ndim - 1 else x

    lstsq_samples = lambda m, rng: [  # noqa: E731
        S(_fullrank(rng, 5, 3), m(5, 2)), S(_fullrank(rng, 3, 3), m(3, 2)), S(_fullrank(rng, 3, 5), m(3, 2)),
        S(_fullrank(rng, 4, 3), m(4)), S(_fullrank(rng, 4, 3, (2,)), m(2, 4, 2)),
        S(_fullrank(rng, 4, 2, (2, 1)), m(1, 3, 4, 1)).bc(), S(NC(_fullrank(rng, 3, 4), "t"), m(4, 2))]
    add("linalg.lstsq", lambda a, b, **kw: T.linalg.lstsq(a, b, **kw).solution, lstsq_ref, lstsq_samples,
        atol_f32=1e-4, rtol_f32=1e-4)

    def lstsq_residuals_ref(a, b, driver=None):
        x = np.linalg.pinv(a) @ b
        return x, ((a @ x - b) ** 2).sum(-2)

    add("linalg.lstsq.residuals", lambda a, b, **kw: tuple(T.linalg.lstsq(a, b, **kw)[:2]), lstsq_residuals_ref,
        lambda m, rng: [S(_fullrank(rng, 5, 3), m(5, 2), driver="gelsd"),
                        S(_fullrank(rng, 4, 2), m(4, 3), driver="gels"),
                        S(_fullrank(rng, 5, 2, (2,)), m(2, 5, 2), driver="gelss")],
        atol_f32=1e-4, rtol_f32=1e-4)

    def geqrf_ref(a):
        a = np.array(a, dtype=np.float64)
        m, n = a.shape[-2:]
        k = min(m, n)
        flat = a.reshape(int(np.prod(a.shape[:-2])), m, n)
        taus = np.zeros((flat.shape[0], k))
        for b, x in enumerate(flat):
            for j in range(k):
                alpha, xnorm = x[j, j], np.linalg.norm(x[j + 1:, j])
                if xnorm == 0.0:
                    continue
                beta = -np.copysign(np.hypot(alpha, xnorm), alpha)
                taus[b, j] = (beta - alpha) / beta
                x[j + 1:, j] /= alpha - beta
                x[j, j] = beta
                v = np.concatenate([[1.0], x[j + 1:, j]])
                x[j:, j + 1:] -= taus[b, j] * np.outer(v, v @ x[j:, j + 1:])
        return flat.reshape(a.shape), taus.reshape(*a.shape[:-2], k)

    geqrf_samples = lambda m, rng: [S(m(4, 3)), S(m(3, 5)), S(m(2, 3, 3)), S(NC(m(3, 4), "t")), S(np.zeros((0, 2)))]
    not_diff = dict(supports_grad=False, supports_gradgrad=False, supports_forward_ad=False,
                    grad_not_implemented="'geqrf'", not_implemented_node="GeqrfBackward0")
    add("geqrf", lambda a: tuple(T.geqrf(a)), geqrf_ref, geqrf_samples, atol_f32=1e-4, rtol_f32=1e-4, **not_diff)
    add("Tensor.geqrf", lambda a: tuple(a.geqrf()), geqrf_ref, lambda m, rng: geqrf_samples(m, rng)[:2],
        atol_f32=1e-4, rtol_f32=1e-4, **not_diff)

    def _hh_apply(a, tau, c, left=True, transpose=False):
        m, k = a.shape[-2], tau.shape[-1]
        q = np.broadcast_to(np.eye(m), (*a.shape[:-2], m, m)).copy()
        for i in range(k):
            v = np.tril(a, -1)[..., :, i] + np.eye(m, a.shape[-1])[:, i]
            h = np.eye(m) - tau[..., i, None, None] * v[..., :, None] * v[..., None, :]
            q = q @ h
        if transpose:
            q = np.swapaxes(q, -1, -2)
        return q @ c if left else c @ q

    def householder_product_ref(a, tau):
        m, n = a.shape[-2:]
        return _hh_apply(a, tau, np.eye(m, n))

    hh_samples = lambda m, rng: [  # noqa: E731
        S(m(4, 3), m(3)), S(m(4, 3), m(2)), S(m(3, 3), m(3)), S(m(2, 4, 2), m(2, 2)), S(NC(m(3, 4), "t"), m(3)),
        S(m(3, 1), m(1)), S(m(3, 2), np.zeros((0,))).fwd("no reflectors")]
    add("linalg.householder_product", lambda a, tau: T.linalg.householder_product(a, tau),
        householder_product_ref, hh_samples, atol_f32=1e-4, rtol_f32=1e-4)
    add("orgqr", lambda a, tau: T.orgqr(a, tau), householder_product_ref,
        lambda m, rng: hh_samples(m, rng)[:4], atol_f32=1e-4, rtol_f32=1e-4)
    add("Tensor.orgqr", lambda a, tau: a.orgqr(tau), householder_product_ref,
        lambda m, rng: hh_samples(m, rng)[:2], atol_f32=1e-4, rtol_f32=1e-4)

    ormqr_samples = lambda m, rng: [  # noqa: E731
        S(m(4, 3), m(3), m(4, 2)), S(m(4, 3), m(3), m(4, 2), transpose=True), S(m(4, 3), m(3), m(2, 4), left=False),
        S(m(4, 3), m(3), m(5, 4), False, True), S(m(5, 2), m(2), m(5, 3)), S(m(2, 3, 3), m(2, 3), m(2, 3, 2)),
        S(NC(m(3, 4), "t"), m(3), NC(m(2, 4), "t"))]
    add("ormqr", lambda a, tau, c, *args, **kw: T.ormqr(a, tau, c, *args, **kw), _hh_apply, ormqr_samples,
        atol_f32=1e-4, rtol_f32=1e-4)
    add("Tensor.ormqr", lambda a, tau, c, *args, **kw: a.ormqr(tau, c, *args, **kw), _hh_apply,
        lambda m, rng: ormqr_samples(m, rng)[:3], atol_f32=1e-4, rtol_f32=1e-4)

    def fill_diagonal_ref(a, value, wrap=False):
        a = np.array(a)
        np.fill_diagonal(a, value, wrap=wrap)
        return a

    add("Tensor.fill_diagonal_", _inplace_op("fill_diagonal_"), fill_diagonal_ref,
        lambda m, rng: [S(m(3, 3), 2.0), S(m(7, 3), 1.5, True), S(m(7, 3), -1.0, False), S(m(3, 5), 0.5, wrap=True),
                        S(m(3, 3, 3), 4.0), S(m.ints(5, 4, 4), 2).fwd("int64")])

    def rank_ref(a, hermitian=False, atol=None, rtol=None):
        if atol is None and rtol is None:
            return np.asarray(np.linalg.matrix_rank(a, hermitian=hermitian))
        s = np.abs(np.linalg.eigvalsh(a)) if hermitian else np.linalg.svd(a, compute_uv=False)
        tol = np.maximum(atol or 0.0, (rtol or 0.0) * s.max(-1, keepdims=True))
        return np.asarray((s > tol).sum(-1))

    def _rank2(rng, m, n, batch=()):
        # small integers: exactly rank 2 in float32 too
        u = rng.randint(-3, 4, size=(*batch, m, 2)).astype(np.float64)
        return u @ rng.randint(-3, 4, size=(*batch, 2, n)).astype(np.float64)

    add("linalg.matrix_rank", lambda a, **kw: T.linalg.matrix_rank(a, **kw), rank_ref,
        lambda m, rng: [S(_fullrank(rng, 3, 4)), S(_rank2(rng, 4, 3)), S(_rank2(rng, 3, 3, (2,))),
                        S(2 * _sym(rng, 3), hermitian=True), S(_fullrank(rng, 3, 3), atol=1.5),
                        S(_fullrank(rng, 3, 3), rtol=0.5), S(np.zeros((2, 0, 3)))],
        supports_grad=False, supports_gradgrad=False, supports_forward_ad=False)
    signbit_samples = lambda m, rng: [  # noqa: E731
        S(np.array([1.0, -0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, -2.5])), S(m(3, 4)), S(m.ints(5, 2, 3)),
        S(m.mask(2, 2)), S(NC(m(4, 3), "t")), S(np.zeros((0, 2)))]
    add("signbit", lambda a: T.signbit(a), np.signbit, signbit_samples, supports_grad=False, supports_gradgrad=False)
    add("Tensor.signbit", lambda a: a.signbit(), np.signbit, signbit_samples, supports_grad=False,
        supports_gradgrad=False)
    for name, ref in (("var_mean", np.var), ("std_mean", np.std)):
        add(name, (lambda n: lambda a, *args, **kw: getattr(T, n)(a, *args, **kw))(name), _moments_ref(ref),
            lambda m, rng: [S(m(3, 4)), S(m(3, 4), 1), S(m(3, 4), (0, 1), keepdim=True), S(m(3, 4), 0, correction=0),
                            S(m(5), False), S(NC(m(4, 3), "t"), -1, unbiased=False)])
    add("cosine_similarity", lambda a, b, **kw: T.cosine_similarity(a, b, **kw), _cosine_ref,
        lambda m, rng: [S(m(3, 4), m(3, 4)), S(m(3, 4), m(4), dim=-1), S(m(2, 3, 4), m(2, 3, 4), dim=0),
                        S(np.zeros((2, 3)), m(2, 3)).fwd("a zero vector (eps)")])
    add("nn.functional.cosine_similarity", lambda a, b, **kw: F().cosine_similarity(a, b, **kw), _cosine_ref,
        lambda m, rng: [S(m(3, 4), m(3, 4))])
    add("broadcast_tensors", lambda *ts: T.broadcast_tensors(*ts), lambda *ts: tuple(np.broadcast_arrays(*ts)),
        lambda m, rng: [S(m(3, 1), m(4)), S(m(2, 3), m(3), m()), S(NC(m(3, 2), "t"), m(1, 3))])

    # ---- comparisons (forward only, bool results) ---------------------------

    comparisons = [
        ("eq", np.equal, "__eq__", lambda a, b: a == b),
        ("ne", np.not_equal, "__ne__", lambda a, b: a != b),
        ("lt", np.less, "__lt__", lambda a, b: a < b),
        ("le", np.less_equal, "__le__", lambda a, b: a <= b),
        ("gt", np.greater, "__gt__", lambda a, b: a > b),
        ("ge", np.greater_equal, "__ge__", lambda a, b: a >= b),
    ]
    for name, ref, dunder, f in comparisons:
        add(name, (lambda n: lambda a, b: getattr(T, n)(a, b))(name), ref, comparison_samples, **nograd)
        add(f"{name}.scalar", (lambda n: lambda a, b: getattr(T, n)(a, b))(name), ref, comparison_scalar_samples,
            **nograd)
        add(f"Tensor.{name}", (lambda n: lambda a, b: getattr(a, n)(b))(name), ref,
            lambda m, rng: comparison_samples(m, rng)[:2] + comparison_scalar_samples(m, rng)[:1], **nograd)
        add(dunder, f, f, lambda m, rng: comparison_samples(m, rng)[:3] + comparison_scalar_samples(m, rng)[:2],
            **nograd)
        # python scalar on the left: python reflects `0.5 < t` to `t > 0.5`
        add(f"{dunder}.reflected", (lambda g: lambda a, b: g(b, a))(f), (lambda g: lambda a, b: g(b, a))(f),
            lambda m, rng: [S(m(3, 4), 0.5)], **nograd)

    # ---- helper-41: distances and searches (python/rgrad/_composite3.py) -----------

    def _pnorm_last(d, p):
        a = np.abs(d)
        if p == 0:
            return (a != 0).sum(-1).astype(d.dtype)
        if np.isinf(p):
            return a.max(-1) if a.shape[-1] else np.zeros(a.shape[:-1], d.dtype)
        return (a ** p).sum(-1) ** (1.0 / p)

    def cdist_ref(a, b, p=2.0, compute_mode=None):
        return _pnorm_last(a[..., :, None, :] - b[..., None, :, :], p)

    def pdist_ref(x, p=2.0):
        n = x.shape[0]
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
        if not pairs:
            return np.zeros(0, x.dtype)
        return _pnorm_last(np.stack([x[i] - x[j] for i, j in pairs]), p)

    def pairwise_distance_ref(a, b, p=2.0, eps=1e-6, keepdim=False):
        r = _pnorm_last(a - b + eps, p)
        return r[..., None] if keepdim else r

    far = lambda m, *shape: m(*shape) + np.arange(np.prod(shape)).reshape(shape) * 0.37  # noqa: E731
    cdist_samples = lambda m, rng: [  # noqa: E731
        S(m(3, 4), m(5, 4)), S(m(3, 4), m(5, 4), 1.0), S(m(2, 3), m(4, 3), 3.0), S(m(2, 3), m(4, 3), 1.5),
        S(far(m, 3, 4), m(2, 4), INF), S(m(3, 2), m(4, 2), 0.5), S(m(3, 2), m(4, 2), 0.0),
        S(m(2, 3, 4), m(1, 5, 4)).bc(), S(m(3, 2), m(2, 4, 2), 1.0).bc(),
        S(m(27, 2), m(3, 2)), S(m(3, 2), m(4, 2), compute_mode="use_mm_for_euclid_dist"),
        S(m(2, 3, 2), m(1, 4, 2), compute_mode="use_mm_for_euclid_dist").bc(),
        S(m(27, 2), m(3, 2), compute_mode="donot_use_mm_for_euclid_dist"),
        S(NC(m(4, 3), "t"), m(2, 4), 1.0), S(np.zeros((0, 3)), m(2, 3)).fwd("empty")]
    add("cdist", lambda a, b, *args, **kw: T.cdist(a, b, *args, **kw), cdist_ref, cdist_samples,
        supports_forward_ad=False, forward_ad_error="Trying to use forward AD with _")
    pdist_samples = lambda m, rng: [  # noqa: E731
        S(m(4, 3)), S(m(4, 3), 1.0), S(m(3, 2), 3.0), S(m(3, 2), 1.5), S(m(3, 2), 0.5), S(far(m, 3, 2), INF),
        S(m(3, 2), 0.0), S(NC(m(3, 4), "t")), S(m(1, 3)).fwd("one row"), S(m(3, 0)).fwd("no columns")]
    add("pdist", lambda a, *args: T.pdist(a, *args), pdist_ref, pdist_samples,
        supports_forward_ad=False, forward_ad_error="Trying to use forward AD with _pdist_forward")
    add("nn.functional.pdist", lambda a, *args: F().pdist(a, *args), pdist_ref,
        lambda m, rng: pdist_samples(m, rng)[:3], supports_forward_ad=False,
        forward_ad_error="Trying to use forward AD with _pdist_forward")
    pairwise_samples = lambda m, rng: [  # noqa: E731
        S(m(3, 4), m(3, 4)), S(m(3, 4), m(4)).bc(), S(m(4), m(4), 1.0), S(m(2, 3), m(2, 3), 3.0),
        S(far(m, 2, 3), m(2, 3), INF), S(m(2, 3), m(2, 3), 2.0, 1e-3, True), S(m(2, 3, 4), m(3, 4), keepdim=True).bc()]
    add("pairwise_distance", lambda a, b, *args, **kw: T.pairwise_distance(a, b, *args, **kw),
        pairwise_distance_ref, pairwise_samples)
    add("nn.functional.pairwise_distance", lambda a, b, *args, **kw: F().pairwise_distance(a, b, *args, **kw),
        pairwise_distance_ref, lambda m, rng: pairwise_samples(m, rng)[:3])

    def searchsorted_ref(s, v, sorter=None, right=False, side=None):
        side = side or ("right" if right else "left")
        if sorter is not None:
            s = np.take_along_axis(s, sorter, -1)
        if s.ndim == 1:
            return np.searchsorted(s, v, side=side).astype(np.int64)
        out = np.stack([np.searchsorted(r, x, side=side) for r, x in zip(s.reshape(-1, s.shape[-1]),
                                                                          v.reshape(-1, v.shape[-1]))])
        return out.reshape(v.shape).astype(np.int64)

    sorted_ = lambda m, *shape: np.sort(m(*shape), -1)  # noqa: E731
    searchsorted_samples = lambda m, rng: [  # noqa: E731
        S(sorted_(m, 6), m(3, 4)), S(sorted_(m, 6), m(3, 4), right=True), S(sorted_(m, 6), m(5), side="right"),
        S(sorted_(m, 2, 5), m(2, 3)), S(sorted_(m, 2, 5), m(2, 3), side="left"),
        S(np.array([1.0, 3.0, 3.0, 5.0]), np.array([3.0, 0.0, 6.0, 3.0]), right=True),
        S(np.array([5.0, 1.0, 3.0]), m(4), _i64([1, 2, 0])),
        S(sorted_(m, 6), np.array(0.5)),
        S(sorted_(m, 4), m(0, 2)), S(np.array([1, 3, 5], dtype=np.int64), np.array([2, 3, 9], dtype=np.int64))]
    # (a sorter travels as a third positional argument: the samples turn only positional arrays into tensors)
    add("searchsorted", lambda s, v, *sorter, **kw: T.searchsorted(s, v, sorter=sorter[0] if sorter else None, **kw),
        searchsorted_ref, searchsorted_samples,
        **nograd)
    add("bucketize", lambda v, s, **kw: T.bucketize(v, s, **kw), lambda v, s, **kw: searchsorted_ref(s, v, None, **kw),
        lambda m, rng: [S(m(3, 4), sorted_(m, 6)), S(m(3, 4), sorted_(m, 6), right=True),
                        S(np.array([3.0, 0.0, 6.0, 3.0]), np.array([1.0, 3.0, 3.0, 5.0]), right=True),
                        S(np.array(0.5), sorted_(m, 6)), S(np.array([2, 3, 9], dtype=np.int64), sorted_(m, 3))],
        **nograd)

    # (helper-41) counting: unique, unique_consecutive, bincount, histc
    def _unique_ref(x, sorted=True, return_inverse=False, return_counts=False, dim=None, consecutive=False):
        if dim is None:
            rows, shape_inv = x.reshape(-1, 1), x.shape
        else:
            rows, shape_inv = np.moveaxis(x, dim, 0).reshape(x.shape[dim], -1), (x.shape[dim],)
        keys = [tuple(r) for r in rows]
        order = list(range(len(keys))) if consecutive else _argsort_keys(keys)
        firsts, inverse, counts = [], [0] * len(keys), []
        for k, i in enumerate(order):
            if k == 0 or keys[order[k - 1]] != keys[i]:
                firsts.append(i)
                counts.append(0)
            inverse[i] = len(firsts) - 1
            counts[-1] += 1
        if dim is None:
            vals = x.reshape(-1)[firsts]
        else:
            vals = np.take(x, firsts, axis=dim)
        out = [vals]
        if return_inverse:
            out.append(np.array(inverse, dtype=np.int64).reshape(shape_inv))
        if return_counts:
            out.append(np.array(counts, dtype=np.int64))
        return out[0] if len(out) == 1 else tuple(out)

    def _argsort_keys(keys):
        return sorted(range(len(keys)), key=lambda i: keys[i])

    unique_samples = lambda m, rng: [  # noqa: E731
        S(np.array([3.0, 1.0, 2.0, 3.0, 1.0])), S(np.array([[3.0, 1.0], [1.0, 2.0]]), return_inverse=True),
        S(np.array([2.0, 2.0, 1.0]), return_counts=True),
        S(np.array([3.0, 1.0, 3.0]), sorted=False, return_inverse=True, return_counts=True),
        S(np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 5.0]]), dim=0, return_inverse=True, return_counts=True),
        S(np.array([[1.0, 2.0, 1.0], [3.0, 0.0, 3.0]]), dim=1), S(m.ints(4, 3, 2), dim=0).fwd("int64"),
        S(m.ints(3, 7)).fwd("int64"), S(m.mask(6)).fwd("bool"), S(np.array(2.5)).fwd("0-d")]
    unique_consecutive_samples = lambda m, rng: [  # noqa: E731
        S(np.array([1.0, 1.0, 2.0, 2.0, 3.0, 1.0])), S(np.array([1.0, 1.0, 2.0]), return_inverse=True),
        S(np.array([1.0, 1.0, 2.0]), return_counts=True, return_inverse=True),
        S(np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 5.0], [1.0, 2.0]]), dim=0, return_counts=True),
        S(m.ints(3, 9)).fwd("int64"), S(m.mask(6)).fwd("bool")]
    unique_nodes = dict(supports_grad=False, supports_gradgrad=False)
    add("unique", lambda a, **kw: T.unique(a, **kw), _unique_ref, unique_samples,
        grad_not_implemented="'_unique2'", not_implemented_node="Unique2Backward0", **unique_nodes)
    add("unique.dim", lambda a, **kw: T.unique(a, **kw), _unique_ref, lambda m, rng: unique_samples(m, rng)[4:6],
        grad_not_implemented="'unique_dim'", not_implemented_node="UniqueDimBackward0", **unique_nodes)
    add("Tensor.unique", lambda a, **kw: a.unique(**kw), _unique_ref, lambda m, rng: unique_samples(m, rng)[:4],
        grad_not_implemented="'_unique2'", not_implemented_node="Unique2Backward0", **unique_nodes)
    add("unique_consecutive", lambda a, **kw: T.unique_consecutive(a, **kw),
        lambda a, **kw: _unique_ref(a, consecutive=True, **kw), unique_consecutive_samples,
        grad_not_implemented="'unique_consecutive'", not_implemented_node="UniqueConsecutiveBackward0",
        **unique_nodes)
    add("Tensor.unique_consecutive", lambda a, **kw: a.unique_consecutive(**kw),
        lambda a, **kw: _unique_ref(a, consecutive=True, **kw), lambda m, rng: unique_consecutive_samples(m, rng)[:4],
        grad_not_implemented="'unique_consecutive'", not_implemented_node="UniqueConsecutiveBackward0",
        **unique_nodes)

    def bincount_ref(x, weights=None, minlength=0):
        r = np.bincount(x, weights, minlength)
        return r.astype(np.int64) if weights is None else r

    bincount_samples = lambda m, rng: [  # noqa: E731
        S(_i64([1, 3, 1, 0]), m(4)), S(_i64([2, 0, 2]), m(3), 5), S(_i64([1, 3, 1, 0])).fwd("counts"),
        S(_i64([1, 1]), minlength=4).fwd("counts"), S(np.zeros(0, np.int64)).fwd("empty")]
    add("bincount", lambda a, *args, **kw: T.bincount(a, *args, **kw), bincount_ref, bincount_samples,
        grad_not_implemented="aten::bincount", **unique_nodes)
    add("Tensor.bincount", lambda a, *args, **kw: a.bincount(*args, **kw), bincount_ref,
        lambda m, rng: bincount_samples(m, rng)[:3], grad_not_implemented="aten::bincount", **unique_nodes)

    def histc_ref(x, bins=100, min=0, max=0):
        lo, hi = (x.min(), x.max()) if min == max and x.size else (min, max)
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        return np.histogram(x, bins=bins, range=(lo, hi))[0].astype(x.dtype)

    histc_samples = lambda m, rng: [  # noqa: E731
        S(m(20)), S(m(4, 5), 7), S(m(30), 5, -1.0, 1.0), S(np.array([2.0, 2.0]), 3), S(np.zeros(0), 4)]
    add("histc", lambda a, *args, **kw: T.histc(a, *args, **kw), histc_ref, histc_samples, **nograd)
    add("Tensor.histc", lambda a, *args, **kw: a.histc(*args, **kw), histc_ref,
        lambda m, rng: histc_samples(m, rng)[:3], **nograd)

    # (helper-41) block_diag, isin, isposinf, isneginf, isreal
    def block_diag_ref(*ts):
        blocks = [np.atleast_2d(t) if t.ndim < 2 else t for t in ts]
        rows, cols = sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)
        out = np.zeros((rows, cols), dtype=np.result_type(*ts) if ts else np.float64)
        r = c = 0
        for b in blocks:
            out[r:r + b.shape[0], c:c + b.shape[1]] = b
            r, c = r + b.shape[0], c + b.shape[1]
        return out

    add("block_diag", lambda *ts: T.block_diag(*ts), block_diag_ref,
        lambda m, rng: [S(m(2, 3), m(1, 2)), S(m(2, 3), m(4), m()), S(m(3)), S(NC(m(3, 2), "t"), m(1, 1)),
                        S(m(2, 2), np.zeros((0, 3))), S(m(2, 2), m.ints(5, 1, 2)).fwd("int64 block")])

    def isin_ref(e, t, assume_unique=False, invert=False):
        r = np.isin(e, t)
        return ~r if invert else r

    isin_samples = lambda m, rng: [  # noqa: E731
        S(m.ints(5, 3, 4), m.ints(5, 3)), S(m.ints(5, 3, 4), m.ints(5, 2, 2), invert=True),
        S(np.array([1.0, 2.5, -1.0]), np.array([2.5, 7.0])), S(m.ints(5, 6), np.array([1.0, 2.0])),
        S(m.ints(5, 4), np.zeros(0, np.int64)), S(np.array([[1.5, 2.0]]), np.array(2.0), assume_unique=True)]
    add("isin", lambda e, t, **kw: T.isin(e, t, **kw), isin_ref, isin_samples, **nograd)
    special_inf = np.array([0.0, INF, -INF, NAN, 1.5, -2.5])
    for name, ref in (("isposinf", np.isposinf), ("isneginf", np.isneginf),
                      ("isreal", lambda a: np.ones(np.shape(a), dtype=bool))):
        add(name, (lambda n: lambda a: getattr(T, n)(a))(name), ref,
            lambda m, rng: [S(special_inf), S(m(3, 4)), S(m.ints(5, 2, 3)).fwd("int64"), S(m.mask(2, 2)).fwd("bool")],
            **nograd)
        add(f"Tensor.{name}", (lambda n: lambda a: getattr(a, n)())(name), ref,
            lambda m, rng: [S(special_inf), S(m.ints(5, 2, 3)).fwd("int64")], **nograd)

    # (helper-41) gcd, lcm (integer only, no gradient)
    def _gcd_ref(a, b):
        return np.gcd(a, b).astype(np.int64)

    def _lcm_ref(a, b):
        return np.lcm(a, b).astype(np.int64)

    gcd_samples = lambda m, rng: [  # noqa: E731
        S(_i64([12, -18, 0, 0, 7]), _i64([8, 12, 0, 5, -3])), S(m.ints(50, 3, 4) - 25, m.ints(50, 4)),
        S(m.ints(30, 2, 1), m.ints(30, 1, 3)), S(_i64([[6, 10]]), np.array(4, dtype=np.int64))]
    add("gcd", lambda a, b: T.gcd(a, b), _gcd_ref, gcd_samples, **nograd)
    add("lcm", lambda a, b: T.lcm(a, b), _lcm_ref, gcd_samples, **nograd)
    # (the in-place forms by hand: inplace_variant keeps float samples only)
    add("Tensor.gcd_", lambda a, b: a.clone().gcd_(b), _gcd_ref, lambda m, rng: gcd_samples(m, rng)[:2], **nograd)
    add("Tensor.lcm_", lambda a, b: a.clone().lcm_(b), _lcm_ref, lambda m, rng: gcd_samples(m, rng)[:2], **nograd)
    add("Tensor.gcd", lambda a, b: a.gcd(b), _gcd_ref, lambda m, rng: gcd_samples(m, rng)[:2], **nograd)
    add("Tensor.lcm", lambda a, b: a.lcm(b), _lcm_ref, lambda m, rng: gcd_samples(m, rng)[:2], **nograd)

    # (helper-44) views, scatters and copies: as_strided, unfold (src/ops/strided.rs), the rest
    # python/rgrad/_composite4.py
    def as_strided_ref(a, size, stride, offset=0):
        flat = np.ascontiguousarray(a).reshape(-1)
        return np.lib.stride_tricks.as_strided(flat[offset:], size, [st * flat.itemsize for st in stride]).copy()

    as_strided_samples = lambda m, rng: [  # noqa: E731
        S(m(3, 4), (2, 2), (1, 2)), S(m(12), (3, 3), (1, 1)), S(m(3, 4), (2, 3), (4, 1), 1),
        S(m(4), (3, 4), (0, 1)), S(m(3, 4), (2, 2), (1, 1), 5), S(m(3, 4), (0, 2), (1, 1))]
    add("as_strided", lambda a, *args: T.as_strided(a, *args), as_strided_ref, as_strided_samples)
    add("Tensor.as_strided", lambda a, *args: a.as_strided(*args), as_strided_ref,
        lambda m, rng: as_strided_samples(m, rng)[:3])
    add("as_strided_copy", lambda a, *args: T.as_strided_copy(a, *args), as_strided_ref,
        lambda m, rng: as_strided_samples(m, rng)[:3])

    def unfold_ref(a, d, size, step):
        a = np.moveaxis(a, d, -1)
        n = (a.shape[-1] - size) // step + 1
        w = np.stack([a[..., i * step:i * step + size] for i in range(n)], axis=-2)
        return np.moveaxis(w, -2, d if d >= 0 else d - 1)

    unfold_samples = lambda m, rng: [  # noqa: E731
        S(m(3, 7), 1, 3, 2), S(m(3, 4), 1, 2, 1), S(m(5, 2), 0, 5, 1), S(NC(m(4, 3), "t"), 0, 2, 1),
        S(m(3, 4), 1, 2, 3)]
    add("Tensor.unfold", lambda a, *args: a.unfold(*args), unfold_ref, unfold_samples)
    add("unfold_copy", lambda a, *args: T.unfold_copy(a, *args), unfold_ref, lambda m, rng: unfold_samples(m, rng)[:2])

    def region_scatter_ref(view):
        def ref(a, src, *args):
            out = a.copy()
            view(out, *args)[...] = src
            return out
        return ref

    def np_slice(a, dim=0, start=None, end=None, step=1):
        return a[(slice(None),) * (dim % a.ndim) + (slice(start, end, step),)]

    def diagonal_scatter_ref(a, src, offset=0, dim1=0, dim2=1):
        out = a.copy()
        for k in range(src.shape[-1]):
            i, j = (k, k + offset) if offset >= 0 else (k - offset, k)
            out[(i, j) if (dim1, dim2) == (0, 1) else (j, i)] = src[k]
        return out

    def as_strided_scatter_ref(a, src, size, stride, offset=0):
        out = np.ascontiguousarray(a).copy()
        flat = out.reshape(-1)
        np.lib.stride_tricks.as_strided(flat[offset:], size, [st * flat.itemsize for st in stride])[...] = src
        return out

    add("select_scatter", lambda a, s, *args: T.select_scatter(a, s, *args),
        region_scatter_ref(lambda o, d, i: o.swapaxes(0, d)[i]),
        lambda m, rng: [S(m(3, 4), m(4), 0, 1), S(m(3, 4), m(3), 1, -1), S(NC(m(4, 3), "t"), m(3), 1, 2)])
    add("Tensor.select_scatter", lambda a, s, *args: a.select_scatter(s, *args),
        region_scatter_ref(lambda o, d, i: o.swapaxes(0, d)[i]), lambda m, rng: [S(m(3, 4), m(4), 0, 1)])
    add("slice_scatter", lambda a, s, *args, **kw: T.slice_scatter(a, s, *args, **kw), region_scatter_ref(np_slice),
        lambda m, rng: [S(m(3, 4), m(2, 4), 0, 1), S(m(3, 4), m(3, 2), 1, 0, None, 2), S(m(3, 4), m(3, 4)),
                        S(NC(m(4, 3), "t"), m(3, 2), 1, 1, 3)])
    add("Tensor.slice_scatter", lambda a, s, *args, **kw: a.slice_scatter(s, *args, **kw),
        region_scatter_ref(np_slice), lambda m, rng: [S(m(3, 4), m(3, 2), 1, 0, None, 2)])
    add("diagonal_scatter", lambda a, s, *args: T.diagonal_scatter(a, s, *args), diagonal_scatter_ref,
        lambda m, rng: [S(m(3, 4), m(3)), S(m(3, 4), m(3), 1), S(m(3, 4), m(2), -1), S(m(3, 4), m(3), 0, 1, 0)])
    add("Tensor.diagonal_scatter", lambda a, s, *args: a.diagonal_scatter(s, *args), diagonal_scatter_ref,
        lambda m, rng: [S(m(3, 4), m(3), 1)])
    # (torch's as_strided_scatter_backward gives the input the region of g instead of the
    # rest: rgrad's gradient is the numerical one, which gradcheck checks)
    torch_bug = "torch's as_strided_scatter gradient w.r.t. the input is g's region, not the rest (a torch bug)"
    add("as_strided_scatter", lambda a, s, *args: T.as_strided_scatter(a, s, *args), as_strided_scatter_ref,
        lambda m, rng: [S(m(3, 4), m(2, 2), (2, 2), (1, 2)).bug(torch_bug, "parity"),
                        S(m(3, 4), m(3), (3,), (4,), 1).bug(torch_bug, "parity")])
    add("Tensor.as_strided_scatter", lambda a, s, *args: a.as_strided_scatter(s, *args), as_strided_scatter_ref,
        lambda m, rng: [S(m(3, 4), m(2, 2), (2, 2), (1, 2)).bug(torch_bug, "parity")])

    def masked_scatter_ref(a, mask, src):
        a, mask = np.broadcast_arrays(a, mask)
        out = a.copy()
        out[mask] = src.reshape(-1)[:int(mask.sum())]
        return out

    masked_scatter_samples = lambda m, rng: [  # noqa: E731
        S(m(3, 4), m.mask(3, 4), m(12)), S(m(3, 4), m.mask(4), m(3, 5)), S(m(3, 4), m.mask(3, 4), m(20)),
        S(NC(m(4, 3), "t"), m.mask(3, 4), m(12))]
    add("masked_scatter", lambda a, mk, s: T.masked_scatter(a, mk, s), masked_scatter_ref,
        lambda m, rng: masked_scatter_samples(m, rng) + [S(m(4), m.mask(3, 4), m(12))])
    add("Tensor.masked_scatter", lambda a, mk, s: a.masked_scatter(mk, s), masked_scatter_ref,
        masked_scatter_samples, inplace="masked_scatter_")

    def index_reduce_ref(a, dim, index, src, reduce, include_self=True):
        out = a.copy()
        a_m, s_m, o_m = np.moveaxis(a, dim, 0), np.moveaxis(src, dim, 0), np.moveaxis(out, dim, 0)
        for i in set(index.tolist()):
            vals = [s_m[k] for k in range(len(index)) if index[k] == i] + ([a_m[i]] if include_self else [])
            o_m[i] = {"prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce](np.stack(vals), 0)
        return out

    index_reduce_samples = lambda m, rng: [  # noqa: E731
        S(m(3, 4), 0, _i64([0, 2, 0]), m(3, 4), "prod"), S(m(3, 4), 1, _i64([3, 0, 3]), m(3, 3), "mean"),
        S(m(3, 4), 0, _i64([1, 2]), m(2, 4), "amax"), S(m(3, 4), -1, _i64([0, 0]), m(3, 2), "amin"),
        S(m(3, 4), 0, _i64([0, 2, 0]), m(3, 4), "prod", include_self=False),
        S(m(3, 4), 0, _i64([0, 2, 0]), m(3, 4), "mean", include_self=False)]
    def quiet(f):  # (torch warns that index_reduce is in beta)
        def call(*args, **kw):
            import warnings

            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", "index_reduce\\(\\) is in beta")
                return f(*args, **kw)
        return call

    no_fwd = dict(supports_forward_ad=False, forward_ad_error="Trying to use forward AD with index_reduce")
    add("Tensor.index_reduce", quiet(lambda a, *args, **kw: a.index_reduce(*args, **kw)), index_reduce_ref,
        index_reduce_samples, **no_fwd)
    add("Tensor.index_reduce_", quiet(lambda a, *args, **kw: a.clone().index_reduce_(*args, **kw)),
        index_reduce_ref, index_reduce_samples, **no_fwd)
    add("index_reduce", quiet(lambda a, *args, **kw: T.index_reduce(a, *args, **kw)), index_reduce_ref,
        lambda m, rng: index_reduce_samples(m, rng)[:2], **no_fwd)

    def put_ref(a, index, src, accumulate=False):
        out = a.copy().reshape(-1)
        idx = index.reshape(-1) % max(out.size, 1)
        if accumulate:
            np.add.at(out, idx, src.reshape(-1))
        else:
            out[idx] = src.reshape(-1)
        return out.reshape(a.shape)

    put_samples = lambda m, rng: [  # noqa: E731
        S(m(3, 4), _i64([0, 5, -1]), m(3)), S(m(3, 4), _i64([0, 5, 0]), m(3), True),
        S(NC(m(4, 3), "t"), _i64([[1, 2], [11, 3]]), m(2, 2)), S(m(3, 4), _i64([3, 3]), m(2), accumulate=True)]
    add("Tensor.put", lambda a, *args, **kw: a.put(*args, **kw), put_ref, put_samples, inplace="put_")
    add("put", lambda a, *args, **kw: T.put(a, *args, **kw), put_ref, lambda m, rng: put_samples(m, rng)[:2])

    def renorm_ref(a, p, dim, maxnorm):
        others = tuple(i for i in range(a.ndim) if i != dim % a.ndim)
        norm = (np.abs(a) ** p).sum(others, keepdims=True) ** (1 / p) if p != INF else np.abs(a).max(
            others, keepdims=True)
        return a * np.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)

    renorm_samples = lambda m, rng: [  # noqa: E731
        S(m(3, 4), 2, 0, 1.0), S(m(3, 4), 1, 1, 1.5), S(m(3, 4), 3.0, -1, 0.5), S(m(2, 3, 2), 2, 1, 0.8),
        S(NC(m(4, 3), "t"), 2, 0, 1.0)]
    add("Tensor.renorm", lambda a, *args: a.renorm(*args), renorm_ref, renorm_samples, inplace="renorm_")
    add("renorm", lambda a, *args: T.renorm(a, *args), renorm_ref, lambda m, rng: renorm_samples(m, rng)[:2])

    def split_sizes_ref(a, sizes, dim=0):
        return tuple(np.split(a, np.cumsum(sizes)[:-1], axis=dim))

    split_sizes_samples = lambda m, rng: [  # noqa: E731
        S(m(3, 4), [1, 2]), S(m(3, 4), [3, 1], 1), S(NC(m(4, 3), "t"), [1, 3], -1), S(m(3, 4), [0, 3])]
    for name, fn in (("split_with_sizes", lambda a, *args: T.split_with_sizes(a, *args)),
                     ("Tensor.split_with_sizes", lambda a, *args: a.split_with_sizes(*args)),
                     ("unsafe_split_with_sizes", lambda a, *args: T.unsafe_split_with_sizes(a, *args)),
                     ("Tensor.unsafe_split_with_sizes", lambda a, *args: a.unsafe_split_with_sizes(*args)),
                     ("split_with_sizes_copy", lambda a, *args: T.split_with_sizes_copy(a, *args))):
        add(name, fn, split_sizes_ref, split_sizes_samples)
    split_int_samples = lambda m, rng: [S(m(5, 3), 2), S(m(2, 5), 2, 1), S(NC(m(4, 3), "t"), 3, -1)]  # noqa: E731
    for name, fn in (("unsafe_split", lambda a, *args: T.unsafe_split(a, *args)),
                     ("Tensor.unsafe_split", lambda a, *args: a.unsafe_split(*args)),
                     ("split_copy", lambda a, *args: T.split_copy(a, *args))):
        add(name, fn, lambda a, s, dim=0: tuple(_split_ref(a, s, dim)), split_int_samples)
    for name, fn in (("unsafe_chunk", lambda a, *args: T.unsafe_chunk(a, *args)),
                     ("Tensor.unsafe_chunk", lambda a, *args: a.unsafe_chunk(*args))):
        add(name, fn, lambda a, c, dim=0: tuple(_chunk_ref(a, c, dim)),
            lambda m, rng: [S(m(2, 7), 3, 1), S(m(5, 3), 2), S(NC(m(4, 3), "t"), 2, 1)])

    # the *_copy functions: a contiguous copy of the view
    copy_cases = [
        ("alias_copy", lambda a: T.alias_copy(a), lambda a: a.copy(), lambda m: [S(m(3, 4)), S(NC(m(4, 3), "t"))]),
        ("diagonal_copy", lambda a, *args: T.diagonal_copy(a, *args), _diagonal_ref,
         lambda m: [S(m(3, 4)), S(m(3, 4), 1), S(m(2, 3, 4), -1, 2, 0)]),
        ("expand_copy", lambda a, size: T.expand_copy(a, size), lambda a, size: np.broadcast_to(a, size).copy(),
         lambda m: [S(m(1, 4), (3, 4)), S(m(3, 1), (2, 3, 5))]),
        ("permute_copy", lambda a, dims: T.permute_copy(a, dims), lambda a, dims: np.transpose(a, dims).copy(),
         lambda m: [S(m(2, 3, 4), (2, 0, 1)), S(NC(m(4, 3), "t"), (1, 0))]),
        ("select_copy", lambda a, d, i: T.select_copy(a, d, i), lambda a, d, i: np.take(a, i, axis=d),
         lambda m: [S(m(3, 4), 0, 1), S(m(3, 4), -1, -1)]),
        ("slice_copy", lambda a, *args: T.slice_copy(a, *args), lambda a, *args: np_slice(a, *args).copy(),
         lambda m: [S(m(3, 4), 1, 1, 3), S(m(5, 2), 0, None, None, 2)]),
        ("squeeze_copy", lambda a, *args: T.squeeze_copy(a, *args), lambda a, *args: np.squeeze(a, *args),
         lambda m: [S(m(1, 3, 1)), S(m(1, 3, 1), 0), S(m(1, 3, 1), (0, 2))]),
        ("t_copy", lambda a: T.t_copy(a), lambda a: a.T.copy(), lambda m: [S(m(3, 4)), S(m(3))]),
        ("transpose_copy", lambda a, d0, d1: T.transpose_copy(a, d0, d1), lambda a, d0, d1: np.swapaxes(a, d0, d1),
         lambda m: [S(m(2, 3, 4), 0, 2), S(m(3, 4), -1, 0)]),
        ("unsqueeze_copy", lambda a, d: T.unsqueeze_copy(a, d), lambda a, d: np.expand_dims(a, d),
         lambda m: [S(m(3, 4), 1), S(m(3), -1)]),
        ("view_copy", lambda a, size: T.view_copy(a, size), lambda a, size: a.reshape(size),
         lambda m: [S(m(3, 4), (2, 6)), S(m(3, 4), (-1,))]),
        ("narrow_copy", lambda a, *args: T.narrow_copy(a, *args), _narrow_ref,
         lambda m: [S(m(3, 4), 1, 1, 2), S(m(5, 2), 0, -3, 2)]),
        ("Tensor.narrow_copy", lambda a, *args: a.narrow_copy(*args), _narrow_ref, lambda m: [S(m(3, 4), 0, 1, 2)]),
    ]
    for name, fn, ref, samples in copy_cases:
        add(name, fn, ref, (lambda sm: lambda m, rng: sm(m))(samples))
    add("unbind_copy", lambda a, *args: T.unbind_copy(a, *args), _unbind_ref,
        lambda m, rng: [S(m(3, 4)), S(m(3, 4), 1), S(NC(m(4, 3), "t"), -1)])
    add("index_put", lambda a, idx, v, **kw: T.index_put(a, idx, v, **kw), _index_put_ref,
        lambda m, rng: index_put_samples(m, rng)[:3])
    add("detach_copy", lambda a: T.detach_copy(a), lambda a: a.copy(), lambda m, rng: [S(m(3, 4))],
        grad_not_implemented="aten::detach_copy", not_implemented_node="torch::autograd::NotImplemented",
        supports_grad=False, supports_gradgrad=False)

    # ---- helper-45: activations, special functions, kl_div (python/rgrad/_composite5.py,
    # src/ops/activation.rs) ----------------------------------------------------------

    _erf = np.vectorize(math.erf, otypes=[float])
    _lgamma = np.vectorize(_lgamma_ref, otypes=[float])

    def _elu_ref(a, alpha=1.0, scale=1.0, input_scale=1.0):
        return np.where(a <= 0, np.expm1(a * input_scale) * alpha * scale, a * scale)

    def _gelu_ref(a, approximate="none"):
        if approximate == "tanh":
            return 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))
        return a * 0.5 * (1 + _erf(a / math.sqrt(2)))

    def _softplus_ref(a, beta=1, threshold=20):
        return np.where(a * beta > threshold, a, np.log1p(np.exp(a * beta)) / beta)

    def _logsigmoid_ref(a):
        return np.minimum(a, 0) - np.log1p(np.exp(-np.abs(a)))

    def _prelu_ref(a, w):
        if a.ndim != w.ndim:
            w = w.reshape([1, w.size] + [1] * (a.ndim - 2) if a.ndim > 1 else [1] * a.ndim)
        return np.where(a > 0, a, w * a)

    def _mvlgamma_ref(a, p):
        return sum(_lgamma(a - j / 2) for j in range(p)) + p * (p - 1) / 4 * math.log(math.pi)

    def _kl_ref(a, t, reduction="mean", log_target=False):
        out = np.exp(t) * (t - a) if log_target else np.where(t > 0, t * np.log(np.where(t > 0, t, 1)), 0) - t * a
        if reduction == "mean":
            return out.mean()
        if reduction == "sum":
            return out.sum()
        if reduction == "batchmean":
            return out.sum() / (a.shape[0] if a.ndim else 1)
        return out

    act1 = unary_samples(SPECIAL)
    acts = [
        # (name, call, reference, domain, samples)
        ("threshold", lambda a: F().threshold(a, 0.3, -1.5), lambda a: np.where(a <= 0.3, -1.5, a)),
        ("hardshrink", lambda a: F().hardshrink(a), lambda a: np.where(np.abs(a) <= 0.5, 0, a)),
        ("softshrink", lambda a: F().softshrink(a, 0.25),
         lambda a: np.where(a > 0.25, a - 0.25, np.where(a < -0.25, a + 0.25, a * 0))),
        ("elu", lambda a: F().elu(a, 0.7), lambda a: _elu_ref(a, 0.7)),
        ("celu", lambda a: F().celu(a, 1.5), lambda a: _elu_ref(a, 1.5, 1.0, 1 / 1.5)),
        ("selu", lambda a: F().selu(a), lambda a: _elu_ref(a, 1.6732632423543772848170429916717,
                                                           1.0507009873554804934193349852946)),
        ("hardtanh", lambda a: F().hardtanh(a, -0.8, 1.2), lambda a: np.clip(a, -0.8, 1.2)),
        ("relu6", lambda a: F().relu6(a * 4), lambda a: np.clip(a * 4, 0, 6)),
        ("leaky_relu", lambda a: F().leaky_relu(a, 0.2), lambda a: np.where(a > 0, a, 0.2 * a)),
        ("gelu", lambda a: F().gelu(a), _gelu_ref),
        ("silu", lambda a: F().silu(a), lambda a: a * _sigmoid(a)),
        ("mish", lambda a: F().mish(a), lambda a: a * np.tanh(np.log1p(np.exp(a)))),
        ("softplus", lambda a: F().softplus(a), _softplus_ref),
        ("hardsigmoid", lambda a: F().hardsigmoid(a * 2), lambda a: np.clip(a * 2 + 3, 0, 6) / 6),
        ("hardswish", lambda a: F().hardswish(a * 2), lambda a: a * 2 * np.clip(a * 2 + 3, 0, 6) / 6),
        ("logsigmoid", lambda a: F().logsigmoid(a), _logsigmoid_ref),
        ("softsign", lambda a: F().softsign(a), lambda a: a / (1 + np.abs(a))),
        ("tanhshrink", lambda a: F().tanhshrink(a), lambda a: a - np.tanh(a)),
        ("rrelu", lambda a: F().rrelu(a), lambda a: np.where(a >= 0, a, a * (1 / 8 + 1 / 3) / 2)),
    ]
    for name, call, ref in acts:
        # (gelu's +inf: NaN in torch's float32 kernel, inf in float64: tests/test_activation_special_ops.py)
        add(f"nn.functional.{name}", call, ref, act1 if name != "gelu" else unary_samples([0.0, -INF, NAN, 1.5, -2.5]))
    add("nn.functional.gelu.tanh", lambda a: F().gelu(a, approximate="tanh"),
        lambda a: _gelu_ref(a, "tanh"), act1)
    add("nn.functional.softplus.beta", lambda a: F().softplus(a, beta=2, threshold=1.5),
        lambda a: _softplus_ref(a, 2, 1.5), act1)
    add("threshold", lambda a: T.threshold(a, 0.3, -1.5), lambda a: np.where(a <= 0.3, -1.5, a), act1)
    add("hardshrink", lambda a: T.hardshrink(a, 0.25), lambda a: np.where(np.abs(a) <= 0.25, 0, a), act1)
    add("Tensor.hardshrink", lambda a: a.hardshrink(), lambda a: np.where(np.abs(a) <= 0.5, 0, a),
        variant_unary_samples)
    add("celu", lambda a: T.celu(a), _elu_ref, act1)
    add("selu", lambda a: T.selu(a), lambda a: _elu_ref(a, 1.6732632423543772848170429916717,
                                                         1.0507009873554804934193349852946), act1)
    add("rrelu", lambda a: T.rrelu(a, 0.1, 0.3), lambda a: np.where(a >= 0, a, a * 0.2), act1)
    prelu_samples = lambda m, rng: [  # noqa: E731
        S(m(3, 4), m(1)), S(m(2, 3, 4), m(3)), S(m(5), m(1)), S(m(), m(1)), S(NC(m(4, 3), "t"), m(4)),
        S(m(2, 3), m(3))]
    add("nn.functional.prelu", lambda a, w: F().prelu(a, w), _prelu_ref, prelu_samples)
    add("prelu", lambda a, w: T.prelu(a, w), _prelu_ref, prelu_samples)
    add("Tensor.prelu", lambda a, w: a.prelu(w), _prelu_ref, lambda m, rng: prelu_samples(m, rng)[:2])
    mvl_samples = lambda m, rng: [  # noqa: E731
        S(m(3, 4), 1), S(m(2, 3), 2), S(m(), 3), S(NC(m(4, 3), "t"), 2), S(m(0), 1)]
    add("mvlgamma", lambda a, p: T.mvlgamma(a, p), _mvlgamma_ref, mvl_samples, domain=(1.6, 4.0), rtol=1e-6)
    add("Tensor.mvlgamma", lambda a, p: a.mvlgamma(p), _mvlgamma_ref, lambda m, rng: mvl_samples(m, rng)[:2],
        domain=(1.6, 4.0), rtol=1e-6, inplace="mvlgamma_")
    angle_ref = lambda a: np.where(np.isnan(a), a, np.where(a < 0, np.pi, 0.0))  # noqa: E731
    add("angle", lambda a: T.angle(a), angle_ref, act1)
    add("Tensor.angle", lambda a: a.angle(), angle_ref, variant_unary_samples)
    add("rsub", lambda a, b, **kw: T.rsub(a, b, **kw), lambda a, b, alpha=1: b - alpha * a,
        binary_samples(special=arith_special, extra=add_extra))
    kl_samples = lambda m, rng: [  # noqa: E731
        S(m(3, 4), m(3, 4, low=0.1, high=1.0), reduction="sum"),
        S(m(3, 4), m(3, 4, low=0.1, high=1.0), reduction="batchmean"),
        S(m(2, 3), m(2, 3, low=0.1, high=1.0), reduction="none"),
        S(m(2, 3), m(2, 3), reduction="sum", log_target=True),
        S(m(3), m(3, low=0.1, high=1.0), reduction="batchmean"),
        S(m(), m(low=0.1, high=1.0), reduction="batchmean")]
    add("nn.functional.kl_div", lambda a, t, **kw: F().kl_div(a, t, **kw), _kl_ref, kl_samples)
    add("kl_div", lambda a, t, reduction="mean", log_target=False: T.kl_div(
        a, t, {"none": 0, "mean": 1, "sum": 2}[reduction], log_target=log_target), _kl_ref,
        lambda m, rng: [S(m(3, 4), m(3, 4, low=0.1, high=1.0), reduction="none"),
                        S(m(3, 4), m(3, 4, low=0.1, high=1.0)),
                        S(m(2, 3), m(2, 3), reduction="sum", log_target=True)])

    # (helper-45) the Bessel functions and the incomplete gamma functions
    def _i1_ref(a):
        a = np.asarray(a, dtype=np.float64)
        h = a / 2
        out = np.zeros_like(a)
        term = h.copy()
        for k in range(80):
            out = out + term
            term = term * h * h / ((k + 1) * (k + 2))
        return np.where(np.isinf(a), a, out)

    def _i0_ref(a):
        a = np.asarray(a, dtype=np.float64)
        # (±inf: exp(inf)·c / sqrt(inf), NaN in ATen's formula, as torch gives)
        return np.where(np.isfinite(a), np.i0(np.where(np.isfinite(a), a, 0)), NAN)

    def _igamma_ref(x, a, upper=False):
        a = np.asarray(a, dtype=np.float64)
        x = np.asarray(x, dtype=np.float64)
        lg = np.vectorize(lambda v: math.lgamma(v), otypes=[float])
        term = np.exp(a * np.log(x) - x - lg(a + 1))
        s = np.zeros(np.broadcast(a, x).shape)
        for k in range(200):
            s = s + term
            term = term * x / (a + k + 1)
        return 1 - s if upper else s

    bessel_special = [0.0, -0.0, INF, -INF, NAN, 1e-30, 7.9, 8.1, -12.0, 25.0]
    add("i0", lambda a: T.i0(a), _i0_ref, unary_samples(bessel_special), inplace="i0_")
    add("Tensor.i0", lambda a: a.i0(), _i0_ref, variant_unary_samples)
    add("special.i0", lambda a: T.special.i0(a), _i0_ref, variant_unary_samples)
    add("special.i0e", lambda a: T.special.i0e(a), lambda a: _i0_ref(a) * np.exp(-np.abs(a)),
        unary_samples(None))
    add("special.i1", lambda a: T.special.i1(a), _i1_ref, unary_samples(None))
    add("special.i1e", lambda a: T.special.i1e(a), lambda a: _i1_ref(a) * np.exp(-np.abs(a)), unary_samples(None))
    igamma_a = [[0.5, 1.5, 2.5], [3.0, 0.8, 1.2]]
    igamma_samples = lambda m, rng: [  # noqa: E731
        S(m(2, 3), igamma_a), S(m(3), igamma_a[0]), S(m(2, 1), igamma_a).bc(), S(m(), 2.5)]
    for name, upper in (("igamma", False), ("igammac", True)):
        for prefix in ("", "special."):
            fname = {"igamma": "gammainc", "igammac": "gammaincc"}[name] if prefix else name
            add(f"{prefix}{fname}", (lambda f, p: lambda x, a: (getattr(T.special, f) if p else getattr(T, f))(
                T.tensor(a, dtype=x.dtype), x))(fname, prefix), (lambda u: lambda x, a: _igamma_ref(x, a, u))(upper),
                igamma_samples, domain=(0.2, 3.0), rtol=1e-6, atol=1e-9, supports_forward_ad=False,
                forward_ad_error=f"Trying to use forward AD with {name} that does not support it")
        add(f"Tensor.{name}", (lambda f: lambda x, a: getattr(T.tensor(a, dtype=x.dtype), f)(x))(name),
            (lambda u: lambda x, a: _igamma_ref(x, a, u))(upper), lambda m, rng: igamma_samples(m, rng)[:1],
            domain=(0.2, 3.0), rtol=1e-6, atol=1e-9, supports_forward_ad=False,
            forward_ad_error=f"Trying to use forward AD with {name} that does not support it")

    _linalg_decomp_rows(T, add)

    db += [inplace_variant(op) for op in db if op.inplace]
    return db


def _wellcond(m, *shape):
    """Matrices `(*shape)` far from singular: uniform entries plus n on the diagonal."""
    n = shape[-1]
    return m(*shape) + n * np.eye(n)


def _spd_np(a):
    """A symmetric positive-definite matrix made of `a` (numpy)."""
    n = a.shape[-1]
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _spd(T, a):
    """The same of an rgrad tensor (recorded, so gradients reach `a`)."""
    n = a.shape[-1]
    return a @ a.mT + n * T.eye(n, dtype=a.dtype)


def _np_lu_factor(a):
    """LAPACK's getrf (partial pivoting, the first of equal magnitudes), in numpy."""
    a = np.array(a, dtype=np.float64)
    *batch, m, n = a.shape
    k = min(m, n)
    lu = a.reshape(-1, m, n).copy()
    piv = np.zeros((lu.shape[0], k), dtype=np.int64)
    for b in range(lu.shape[0]):
        x = lu[b]
        for j in range(k):
            p = j + int(np.argmax(np.abs(x[j:, j])))
            piv[b, j] = p + 1
            x[[j, p]] = x[[p, j]]
            if x[j, j] != 0:
                x[j + 1:, j] /= x[j, j]
                x[j + 1:, j + 1:] -= np.outer(x[j + 1:, j], x[j, j + 1:])
    return lu.reshape(a.shape), piv.reshape(*batch, k)


def _np_solve(a, b, left=True):
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    if vector:
        b = b[..., None]
    if left:
        x = np.linalg.solve(a, b)
    else:
        x = np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    return x[..., 0] if vector else x


def _np_tri(a, upper, unit):
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        t = t - np.eye(a.shape[-1]) * np.diagonal(a, axis1=-2, axis2=-1)[..., None, :] + np.eye(a.shape[-1])
    return t


def _linalg_decomp_rows(T, add):
    """The LU and Cholesky families (src/ops/decomp.rs): well-conditioned samples, and
    for the ops that read one triangle of a symmetric input, torch's OpInfo wrapper (the
    input made symmetric positive-definite by a recorded `a aᵀ + nI`)."""
    wc = _wellcond
    square = lambda m, rng: [  # noqa: E731
        S(wc(m, 3, 3)), S(wc(m, 2, 4, 4)), S(wc(m, 1, 1)), S(NC(wc(m, 3, 3), "t")),
        S(np.zeros((2, 0, 0))).fwd("empty matrices"),
        S(np.array([[1.0, 2.0], [2.0, 4.0]])).fwd("singular"),
    ]
    add("linalg.det", lambda a: T.linalg.det(a), np.linalg.det, square)
    add("det", lambda a: T.det(a), np.linalg.det, lambda m, rng: square(m, rng)[:2])
    add("Tensor.det", lambda a: a.det(), np.linalg.det, lambda m, rng: square(m, rng)[:2])

    def slogdet_ref(a):
        s, l = np.linalg.slogdet(a)
        return (np.asarray(s), np.asarray(l))

    signed = lambda m, rng: [  # noqa: E731
        S(wc(m, 3, 3)), S(-wc(m, 2, 3, 3)), S(wc(m, 1, 1)), S(NC(wc(m, 3, 3), "t")),
        S(np.array([[1.0, 2.0], [2.0, 4.0]])).fwd("singular: sign 0, -inf"),
    ]
    add("linalg.slogdet", lambda a: tuple(T.linalg.slogdet(a)), slogdet_ref, signed)
    add("slogdet", lambda a: tuple(T.slogdet(a)), slogdet_ref, lambda m, rng: signed(m, rng)[:2])
    add("Tensor.slogdet", lambda a: tuple(a.slogdet()), slogdet_ref, lambda m, rng: signed(m, rng)[:2])

    def logdet_ref(a):
        s, l = np.linalg.slogdet(a)
        return np.where(s == -1, np.nan, l)

    logdet_samples = lambda m, rng: [  # noqa: E731
        S(wc(m, 3, 3)), S(wc(m, 2, 3, 3)), S(-np.eye(3)).fwd("negative determinant: nan")]
    add("logdet", lambda a: T.logdet(a), logdet_ref, logdet_samples)
    add("Tensor.logdet", lambda a: a.logdet(), logdet_ref, lambda m, rng: logdet_samples(m, rng)[:1])

    invertible = lambda m, rng: [S(wc(m, 3, 3)), S(wc(m, 2, 4, 4)), S(wc(m, 1, 1)), S(NC(wc(m, 3, 3), "t"))]
    add("linalg.inv", lambda a: T.linalg.inv(a), np.linalg.inv, invertible)
    add("inverse", lambda a: T.inverse(a), np.linalg.inv, lambda m, rng: invertible(m, rng)[:2])
    add("Tensor.inverse", lambda a: a.inverse(), np.linalg.inv, lambda m, rng: invertible(m, rng)[:2])
    add("linalg.inv_ex", lambda a: T.linalg.inv_ex(a)[0], np.linalg.inv, lambda m, rng: invertible(m, rng)[:2])

    solve_samples = lambda m, rng: [  # noqa: E731
        S(wc(m, 3, 3), m(3, 2)), S(wc(m, 3, 3), m(3)), S(wc(m, 2, 3, 3), m(2, 3)),
        S(wc(m, 2, 1, 3, 3), m(4, 3, 2)).bc(), S(wc(m, 3, 3), m(2, 3), left=False),
        S(NC(wc(m, 3, 3), "t"), NC(m(2, 3), "t")),
    ]
    add("linalg.solve", lambda a, b, **kw: T.linalg.solve(a, b, **kw), _np_solve, solve_samples)
    add("linalg.solve_ex", lambda a, b, **kw: T.linalg.solve_ex(a, b, **kw)[0], _np_solve,
        lambda m, rng: solve_samples(m, rng)[:3])

    def tri_ref(a, b, upper, left=True, unitriangular=False):
        return _np_solve(_np_tri(a, upper, unitriangular), b, left)

    tri_samples = lambda m, rng: [  # noqa: E731
        S(wc(m, 3, 3), m(3, 2), upper=True), S(wc(m, 3, 3), m(3, 2), upper=False),
        S(wc(m, 3, 3), m(2, 3), upper=True, left=False), S(wc(m, 3, 3), m(3, 2), upper=False, unitriangular=True),
        S(wc(m, 2, 3, 3), m(1, 3, 4), upper=True).bc(), S(NC(wc(m, 3, 3), "t"), m(3, 2), upper=False, left=True),
    ]
    add("linalg.solve_triangular", lambda a, b, **kw: T.linalg.solve_triangular(a, b, **kw), tri_ref, tri_samples)

    spd = lambda m, rng: [S(m(3, 3)), S(m(2, 4, 4)), S(m(1, 1))]  # noqa: E731
    add("linalg.cholesky", lambda a, **kw: T.linalg.cholesky(_spd(T, a), **kw),
        lambda a, upper=False: (np.swapaxes(np.linalg.cholesky(_spd_np(a)), -1, -2) if upper
                                else np.linalg.cholesky(_spd_np(a))),
        lambda m, rng: spd(m, rng) + [S(m(3, 3), upper=True)])
    add("linalg.cholesky_ex", lambda a: T.linalg.cholesky_ex(_spd(T, a))[0],
        lambda a: np.linalg.cholesky(_spd_np(a)), lambda m, rng: spd(m, rng)[:2])

    def cholesky_solve_ref(b, a, upper=False):
        return np.linalg.solve(_spd_np(a), b)

    add("cholesky_solve",
        lambda b, a, upper=False: T.cholesky_solve(b, T.linalg.cholesky(_spd(T, a), upper=upper), upper),
        cholesky_solve_ref,
        lambda m, rng: [S(m(3, 2), m(3, 3)), S(m(2, 3, 2), m(2, 3, 3)), S(m(3, 2), m(3, 3), True),
                        S(m(2, 3, 1), m(3, 3)).bc()])
    add("Tensor.cholesky_solve",
        lambda b, a: b.cholesky_solve(T.linalg.cholesky(_spd(T, a))), cholesky_solve_ref,
        lambda m, rng: [S(m(3, 2), m(3, 3))])
    add("cholesky_inverse",
        lambda a, upper=False: T.cholesky_inverse(T.linalg.cholesky(_spd(T, a), upper=upper), upper),
        lambda a, upper=False: np.linalg.inv(_spd_np(a)),
        lambda m, rng: [S(m(3, 3)), S(m(2, 3, 3)), S(m(3, 3), True)])
    add("Tensor.cholesky_inverse", lambda a: T.linalg.cholesky(_spd(T, a)).cholesky_inverse(),
        lambda a: np.linalg.inv(_spd_np(a)), lambda m, rng: [S(m(3, 3))])

    lu_samples = lambda m, rng: [  # noqa: E731
        S(wc(m, 3, 3)), S(m(2, 4, 4)), S(m(3, 5)), S(m(5, 3)), S(NC(wc(m, 3, 3), "t"))]
    # (LU only: the pivots are int64 here, torch's int32; test_linalg_decomp.py compares their values)
    add("linalg.lu_factor", lambda a: T.linalg.lu_factor(a).LU, lambda a: _np_lu_factor(a)[0], lu_samples)
    add("linalg.lu_factor_ex", lambda a: T.linalg.lu_factor_ex(a).LU, lambda a: _np_lu_factor(a)[0],
        lambda m, rng: lu_samples(m, rng)[:2])

    lu_solve_samples = lambda m, rng: [  # noqa: E731
        S(wc(m, 3, 3), m(3, 2)), S(wc(m, 3, 3), m(3, 2), adjoint=True), S(wc(m, 3, 3), m(2, 3), left=False),
        S(wc(m, 3, 3), m(2, 3), left=False, adjoint=True), S(wc(m, 2, 3, 3), m(1, 3, 2)).bc()]

    def lu_solve_ref(a, b, left=True, adjoint=False):
        return _np_solve(np.swapaxes(a, -1, -2) if adjoint else a, b, left)

    add("linalg.lu_solve", lambda a, b, **kw: T.linalg.lu_solve(*T.linalg.lu_factor(a), b, **kw), lu_solve_ref,
        lu_solve_samples)

    def lu_ref(a):
        lu_, piv = _np_lu_factor(a)
        m, n = a.shape[-2:]
        k = min(m, n)
        low = np.tril(lu_[..., :, :k], -1) + np.eye(m, k)
        up = np.triu(lu_[..., :k, :])
        return (low, up)

    add("linalg.lu", lambda a: tuple(T.linalg.lu(a))[1:], lu_ref, lu_samples)
    add("lu_unpack", lambda a: tuple(T.lu_unpack(*T.linalg.lu_factor(a)))[1:], lu_ref, lu_samples)

    def matrix_power_ref(a, n):
        return np.linalg.matrix_power(a, n)

    power_samples = lambda m, rng: [  # noqa: E731
        S(m(3, 3), 0), S(m(3, 3), 1), S(m(3, 3), 2), S(m(2, 3, 3), 3), S(m(3, 3), 5), S(wc(m, 3, 3), -1),
        S(wc(m, 2, 3, 3), -2), S(NC(m(3, 3), "t"), 4)]
    add("matrix_power", lambda a, n: T.matrix_power(a, n), matrix_power_ref, power_samples)
    add("linalg.matrix_power", lambda a, n: T.linalg.matrix_power(a, n), matrix_power_ref, power_samples)
    add("Tensor.matrix_power", lambda a, n: a.matrix_power(n), matrix_power_ref,
        lambda m, rng: power_samples(m, rng)[2:4])

    def expm_ref(a):
        # the Taylor series, summed to convergence on a matrix scaled to norm < 1, squared back
        a = np.asarray(a, dtype=np.float64)
        s = max(0, int(np.ceil(np.log2(max(np.abs(a).sum(axis=-2).max(), 1e-300)))) + 1) if a.size else 0
        x = a / 2.0 ** s
        term = np.broadcast_to(np.eye(a.shape[-1]), a.shape).copy()
        total = term.copy()
        for k in range(1, 40):
            term = term @ x / k
            total = total + term
        for _ in range(s):
            total = total @ total
        return total

    exp_samples = lambda m, rng: [  # noqa: E731
        S(m(3, 3)), S(m(2, 3, 3)), S(m(1, 1)), S(3 * m(3, 3)), S(0.001 * m(3, 3)), S(NC(m(3, 3), "t"))]
    add("linalg.matrix_exp", lambda a: T.linalg.matrix_exp(a), expm_ref, exp_samples)
    add("matrix_exp", lambda a: T.matrix_exp(a), expm_ref, lambda m, rng: exp_samples(m, rng)[:2])
    add("Tensor.matrix_exp", lambda a: a.matrix_exp(), expm_ref, lambda m, rng: exp_samples(m, rng)[:1])

    def multi_dot_ref(*ts):
        return np.linalg.multi_dot(ts)

    add("linalg.multi_dot", lambda *ts: T.linalg.multi_dot(ts), multi_dot_ref,
        lambda m, rng: [S(m(3, 4), m(4, 2)), S(m(3, 4), m(4, 5), m(5, 2)), S(m(2, 6), m(6, 2), m(2, 6)),
                        S(m(4), m(4, 3), m(3, 5), m(5)), S(m(3, 2), m(2, 4), m(4, 6), m(6, 2), m(2, 3)),
                        S(m(4), m(4))])

    # torch.linalg's compositions (python/rgrad/linalg.py)
    add("linalg.diagonal", lambda a, **kw: T.linalg.diagonal(a, **kw),
        lambda a, offset=0, dim1=-2, dim2=-1: np.diagonal(a, offset, dim1, dim2),
        lambda m, rng: [S(m(3, 4)), S(m(2, 3, 4), offset=1), S(m(2, 3, 4), offset=-1, dim1=0, dim2=2),
                        S(NC(m(4, 3), "t"))])
    add("linalg.matmul", lambda a, b: T.linalg.matmul(a, b), np.matmul,
        lambda m, rng: [S(m(3, 4), m(4, 2)), S(m(2, 3, 4), m(4)), S(m(4), m(2, 4, 3))])
    add("linalg.vander", lambda a, **kw: T.linalg.vander(a, **kw),
        lambda a, N=None: np.vander(a.reshape(-1), N if N is not None else a.reshape(-1).shape[0],
                                    increasing=True).reshape(*a.shape, -1) if a.ndim <= 1 else
        np.stack([np.vander(r, N or a.shape[-1], increasing=True) for r in a.reshape(-1, a.shape[-1])]).reshape(
            *a.shape, -1),
        lambda m, rng: [S(m(4)), S(m(3), N=5), S(m(2, 3)), S(m(2, 3), N=2)])

    def tensorinv_ref(a, ind=2):
        head, tail = a.shape[:ind], a.shape[ind:]
        return np.linalg.inv(a.reshape(int(np.prod(head)), -1)).reshape(*tail, *head)

    add("linalg.tensorinv", lambda a, *args, **kw: T.linalg.tensorinv(a, *args, **kw), tensorinv_ref,
        lambda m, rng: [S(wc(m, 6, 6).reshape(2, 3, 6)), S(wc(m, 4, 4).reshape(4, 2, 2), ind=1),
                        S(wc(m, 6, 6).reshape(6, 3, 2), 1)])

    def tensorsolve_ref(a, b, dims=None):
        return np.linalg.tensorsolve(a, b, axes=dims)

    add("linalg.tensorsolve", lambda a, b, *args, **kw: T.linalg.tensorsolve(a, b, *args, **kw), tensorsolve_ref,
        lambda m, rng: [S(wc(m, 6, 6).reshape(2, 3, 6), m(2, 3)),
                        S(wc(m, 6, 6).reshape(6, 2, 3), m(6)),
                        S(np.moveaxis(wc(m, 6, 6).reshape(6, 2, 3), -1, 0), m(6), dims=(0,))])


op_db: list[OpInfo] = build_op_db(rgrad)
