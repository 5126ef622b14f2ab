"""Random autograd programs for differential fuzzing: rgrad against NumPy (float64) and torch.

A program is a list of Python source lines over the name ``torch``, so the same text runs with
``import rgrad as torch`` and with ``import torch`` and doubles as the repro of a failure.
It is generated one step at a time from the shapes and dtypes that rgrad actually produced,
and each step runs at once in rgrad, in torch (when installed) and, where a reference is
written, in NumPy. ``run_program`` returns ``None`` or a ``Failure``.

Randomness comes from a ``Source`` (``integers(lo, hi)`` only): ``RandomSource`` for
tools/fuzz.py, a Hypothesis-backed one in tests/test_fuzz.py (so failures shrink).
Shared by tests/test_fuzz.py and tools/fuzz.py; see docs/fuzzing.md.
"""

from __future__ import annotations

import math
import random
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from op_db import _lgamma_ref, polygamma_ref  # (the op test table's independent references)

# Tensors with more elements than this are kept as shapes only: ops on them would be slow,
# and the huge-size paths (expand to 2**62 elements) exist to test size checks, not kernels.
MAX_NUMEL = 4096
MAX_STEPS = 8

# Open rgrad divergences the fuzzer found (docs/fuzzing.md lists a repro for each). A failure
# whose message matches one is counted as "known", so CI stays green and the 100k run reports
# them apart; delete the entry with the fix. Panics are never listed here.
KNOWN_ISSUES: list[tuple[str, str]] = [
    # (regex over the failure message and the program's last line, why). Empty: every
    # divergence the fuzzer has found is fixed (docs/fuzzing.md lists them).
]


# --------------------------------------------------------------------------------------
# randomness


class Source:
    """Draws integers; everything else is derived, so both back ends shrink/replay alike."""

    def integers(self, lo: int, hi: int) -> int:  # inclusive
        raise NotImplementedError

    def choice(self, seq):
        return seq[self.integers(0, len(seq) - 1)]

    def coin(self, p: float) -> bool:
        return self.integers(0, 999) < int(p * 1000)


class RandomSource(Source):
    def __init__(self, seed) -> None:
        self.r = random.Random(seed)

    def integers(self, lo: int, hi: int) -> int:
        return self.r.randint(lo, hi)


# --------------------------------------------------------------------------------------
# program state


@dataclass
class Var:
    name: str
    shape: tuple
    dtype: str  # "float32" | "float64" | "int64" | "bool"
    requires_grad: bool
    usable: bool  # small enough to compute with and compare


@dataclass
class Step:
    src: str  # one or more lines of Python
    target: str | None  # variable to compare after the step (None: nothing new)
    reads: tuple = ()  # variables the NumPy reference reads (values taken before the step)
    ref: Callable | None = None  # NumPy float64 reference: dict name->ndarray -> ndarray
    kind: str = "elementwise"  # tolerance family: elementwise | reduce | matmul | exact | view
    nan_ok: bool = False  # reference undefined where inputs are non-finite
    pre: list = field(default_factory=list)  # helper lines (new literals) run and checked first
    values_undefined: bool = False  # compare shape/dtype only: the values are platform-defined in torch
    # the result's error scales with the inputs' magnitude, not its own (fmod(a, b) of a b
    # that carries rounding: |a/b| times b's error; sin(x) of a large x that carries
    # rounding: |x| times its relative error)
    scale_by_reads: bool = False
    # piecewise constant or with jumps (trunc, frac, sign): an input equal only within
    # tolerance can land on the other side of a jump, so the result is compared only when
    # the inputs are exactly equal
    discontinuous: bool = False


@dataclass
class Failure:
    # "mismatch" | "panic" | "known" | "torch_invalid" (torch made a tensor it calls invalid
    # itself: the program ends there, and it is not a failure; see docs/fuzzing.md)
    category: str
    message: str
    program: list = field(default_factory=list)

    def repro(self) -> str:
        return "import torch  # or: import rgrad as torch\nnan = float('nan'); inf = float('inf')\n" + "\n".join(
            self.program
        )

    def __str__(self) -> str:
        return f"[{self.category}] {self.message}\n--- program ---\n{self.repro()}"


FLOAT_DTYPES = ("float32", "float64")
DTYPES = ("float32", "float64", "int64", "bool")

SPECIAL_FLOATS = (0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-3, 100.0, float("nan"), float("inf"), float("-inf"))


def fmt(v) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    return repr(v)


def numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def draw_value(src: Source, dtype: str, special: float):
    if dtype == "bool":
        return src.coin(0.5)
    if dtype == "int64":
        if src.coin(0.05):
            return src.choice((2**40, -(2**40), 0))
        return src.integers(-6, 6)
    if src.coin(special):
        return src.choice(SPECIAL_FLOATS)
    return src.integers(-400, 400) / 64.0  # exact in float32


def draw_shape(src: Source, max_ndim: int = 3) -> tuple:
    nd = src.integers(0, max_ndim)
    dims = []
    for _ in range(nd):
        dims.append(0 if src.coin(0.08) else src.integers(1, 4))
    return tuple(dims)


def dtype_src(d: str) -> str:
    return f"torch.{d}"


# --------------------------------------------------------------------------------------
# NumPy helpers


def np_reduce_axis(dim, ndim):
    if dim is None:
        return None
    if isinstance(dim, tuple):
        return tuple(d % max(ndim, 1) for d in dim) if ndim else None
    return dim % ndim if ndim else None


def sigmoid(x):
    with np.errstate(all="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _erfinv(y: float) -> float:
    """The inverse of math.erf, by bisection (NaN outside [-1, 1])."""
    if math.isnan(y) or abs(y) > 1:
        return math.nan
    if abs(y) == 1:
        return math.copysign(math.inf, y)
    a = abs(y)
    lo, hi = 0.0, 6.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        # (near 1, erfc keeps the digits erf has lost)
        below = math.erfc(mid) > 1 - a if a > 0.5 else math.erf(mid) < a
        lo, hi = (mid, hi) if below else (lo, mid)
    return math.copysign((lo + hi) / 2, y)


UNARY = {
    "abs": np.abs,
    "neg": np.negative,
    "exp": np.exp,
    "log": np.log,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "tanh": np.tanh,
    "sigmoid": sigmoid,
    "reciprocal": lambda x: 1.0 / x,
    "relu": lambda x: np.where(np.isnan(x), x, np.maximum(x, 0)),
    "sign": np.sign,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "erf": np.vectorize(math.erf, otypes=[float]),
    "erfc": np.vectorize(math.erfc, otypes=[float]),
    "erfinv": lambda x: np.vectorize(_erfinv, otypes=[float])(x),
    "trunc": np.trunc,
    "frac": lambda x: x - np.trunc(x),
    "lgamma": np.vectorize(_lgamma_ref, otypes=[float]),
    "digamma": np.vectorize(lambda x: polygamma_ref(0, x), otypes=[float]),
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,
    "sgn": np.sign,
    "log2": np.log2,
    "log10": np.log10,
    "exp2": np.exp2,
    "deg2rad": np.deg2rad,
    "rad2deg": np.rad2deg,
}

BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.true_divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "remainder": np.mod,
    "fmod": np.fmod,
    "floor_divide": np.floor_divide,
    "pow": np.power,
    "logical_and": lambda a, b: np.logical_and(a != 0, b != 0),
    "logical_or": lambda a, b: np.logical_or(a != 0, b != 0),
    # the binary op table's functions
    "atan2": np.arctan2,
    "hypot": np.hypot,
    "logaddexp": np.logaddexp,
    "xlogy": lambda a, b: np.where(np.isnan(b), np.nan, np.where(a == 0, 0.0, a * np.log(b))),
}
BINARY_OPERATOR = {"add": "+", "sub": "-", "mul": "*", "div": "/", "remainder": "%", "floor_divide": "//",
                   "pow": "**", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}  # fmt: skip
BINARY_INPLACE = ("add", "sub", "mul", "div", "pow")


# --------------------------------------------------------------------------------------
# the generator


class Generator:
    """Builds steps from the current variables; ``allow_huge`` adds overflow-size steps."""

    def __init__(self, src: Source, allow_huge: bool = True) -> None:
        self.src = src
        self.allow_huge = allow_huge
        self.vars: dict[str, Var] = {}
        self.counter = 0
        self.special = 0.15 if src.coin(0.6) else 0.0

    def fresh(self) -> str:
        name = f"v{self.counter}"
        self.counter += 1
        return name

    def pick(self, pred=lambda v: True) -> Var | None:
        cands = [v for v in self.vars.values() if v.usable and pred(v)]
        if not cands:
            return None
        return self.src.choice(cands)

    # ---- inputs ----------------------------------------------------------------------
    def tensor_literal(self, shape, dtype) -> tuple[str, list]:
        vals = [draw_value(self.src, dtype, self.special) for _ in range(numel(shape))]
        body = ", ".join(fmt(v) for v in vals)
        if shape == ():
            return f"torch.tensor({body}, dtype={dtype_src(dtype)})", vals
        return f"torch.tensor([{body}], dtype={dtype_src(dtype)}).reshape({', '.join(map(str, shape))},)", vals

    def input_step(self, shape=None, dtype=None, grad=None) -> Step:
        s = self.src
        shape = draw_shape(s) if shape is None else shape
        dtype = s.choice(DTYPES if s.coin(0.4) else FLOAT_DTYPES) if dtype is None else dtype
        lay = s.integers(0, 3) if len(shape) >= 2 and numel(shape) else 0
        if lay == 1:  # transposed leaf
            sw = shape[:-2] + (shape[-1], shape[-2])
            expr, _ = self.tensor_literal(sw, dtype)
            expr += ".transpose(-1, -2)"
        elif lay == 2:  # stepped leaf
            expr, _ = self.tensor_literal((shape[0] * 2,) + shape[1:], dtype)
            expr += "[::2]"
        else:
            expr, _ = self.tensor_literal(shape, dtype)
        if grad is None:
            grad = dtype in FLOAT_DTYPES and s.coin(0.8)
        if grad:
            expr += ".requires_grad_()"
        name = self.fresh()
        return Step(f"{name} = {expr}", name, kind="exact")

    def operand_for(self, shape, dtype=None) -> tuple[str, tuple, str | None, list]:
        """A second operand broadcastable with ``shape``: an existing var, a new literal, or a scalar.

        Returns (source, shape, var name or None, prefix lines)."""
        s = self.src
        r = s.integers(0, 9)
        if r <= 1:
            return fmt(self.scalar()), (), None, []
        if r <= 3:
            v = self.pick(lambda v: broadcastable(v.shape, shape))
            if v is not None:
                return v.name, v.shape, v.name, []
        # new literal with a broadcast-compatible shape (sometimes incompatible)
        bshape = list(shape)
        for i in range(len(bshape)):
            if s.coin(0.3):
                bshape[i] = 1
        while bshape and s.coin(0.3):
            bshape.pop(0)
        if s.coin(0.1):
            bshape = [1] + bshape
        if s.coin(0.05):
            bshape = list(draw_shape(s))
        dtype = dtype or s.choice(DTYPES if s.coin(0.3) else FLOAT_DTYPES)
        st = self.input_step(tuple(bshape), dtype)
        return st.target, tuple(bshape), st.target, [st.src]

    def scalar(self):
        s = self.src
        r = s.integers(0, 9)
        if r <= 4:
            return s.integers(-3, 3)
        if r == 5:
            return s.coin(0.5)
        if r == 6:
            return s.choice((float("nan"), float("inf"), 0.0, -0.0))
        return s.integers(-40, 40) / 8.0

    def dim(self, ndim, allow_bad=0.05):
        s = self.src
        if s.coin(allow_bad):
            return s.choice((ndim, -ndim - 1, ndim + 3))
        if ndim == 0:
            return s.choice((0, -1))
        return s.integers(-ndim, ndim - 1)

    # ---- steps -------------------------------------------------------------------------
    def step(self) -> Step:
        s = self.src
        if not any(v.usable for v in self.vars.values()) or s.coin(0.08):
            return self.input_step()
        fams = [self.unary, self.binary, self.reduce, self.view, self.index, self.setitem, self.inplace,
                self.matmul, self.misc]  # fmt: skip
        weights = [3, 4, 3, 4, 3, 1, 2, 1, 2]
        if self.allow_huge:
            fams.append(self.huge)
            weights.append(1)
        k = s.integers(0, sum(weights) - 1)
        for f, w in zip(fams, weights):
            if k < w:
                return f()
            k -= w
        raise AssertionError("unreachable")

    def unary(self) -> Step:
        s = self.src
        v = self.pick()
        op = s.choice(sorted(UNARY) + ["square", "logical_not", "clamp", "pow_scalar", "clone"])
        t = self.fresh()
        form = s.integers(0, 2)
        if op == "clamp":
            lo = s.choice((None, -1, 0.5, -2.5, 0))
            hi = s.choice((None, 1, 2.0, -1.0))
            if lo is None and hi is None and s.coin(0.7):
                lo = 0
            args = ", ".join(f"{k}={fmt(x)}" for k, x in (("min", lo), ("max", hi)) if x is not None)
            name = "clamp_" if form == 2 else "clamp"

            def ref(n, lo=lo, hi=hi):
                x = n[v.name]
                if lo is not None:
                    x = np.where(np.isnan(x), x, np.maximum(x, lo))
                if hi is not None:
                    x = np.where(np.isnan(x), x, np.minimum(x, hi))
                return x

            return Step(f"{t} = {v.name}.{name}({args})", t, (v.name,), ref)
        if op == "pow_scalar":
            e = s.choice((0, 1, 2, 3, -1, 0.5, -2.5, 2.0))
            name = "pow_" if form == 2 else "pow"
            return Step(f"{t} = {v.name}.{name}({fmt(e)})", t, (v.name,), lambda n: np.power(n[v.name], float(e)),
                        nan_ok=True)  # fmt: skip
        if op == "square":
            return Step(f"{t} = torch.square({v.name})", t, (v.name,), lambda n: np.square(n[v.name]))
        if op == "logical_not":
            return Step(f"{t} = {v.name}.logical_not()", t, (v.name,), lambda n: n[v.name] == 0, kind="exact")
        if op == "clone":
            return Step(f"{t} = {v.name}.clone()", t, (v.name,), lambda n: n[v.name], kind="exact")
        fn = UNARY[op]
        nan_ok = op in ("sign", "sgn")
        if form == 0:
            src = f"{t} = {v.name}.{op}()"
        elif form == 1:
            src = f"{t} = torch.{op}({v.name})"
        else:
            src = f"{t} = {v.name}.{op}_()"
        periodic = op in ("sin", "cos", "tan")
        return Step(src, t, (v.name,), lambda n: fn(n[v.name]), nan_ok=nan_ok, scale_by_reads=periodic,
                    # (digamma and lgamma: poles at the non-positive integers, near which an
                    # input one ulp apart moves the value by far more than any tolerance)
                    discontinuous=op in ("trunc", "frac", "sign", "sgn", "floor", "ceil", "round", "digamma",
                                         "lgamma"))

    def binary(self) -> Step:
        s = self.src
        v = self.pick()
        op = s.choice(sorted(BINARY))
        osrc, oshape, oname, pre = self.operand_for(v.shape)
        t = self.fresh()
        fn = BINARY[op]
        form = s.integers(0, 3)
        alpha = None
        if form == 0 or (form == 1 and op not in BINARY_OPERATOR):
            if op in ("add", "sub") and s.coin(0.2):
                alpha = s.choice((2, -1, 0.5))
                line = f"{t} = {v.name}.{op}({osrc}, alpha={fmt(alpha)})"
            elif op == "div" and s.coin(0.3):
                mode = s.choice(("floor", "trunc"))
                line = f"{t} = {v.name}.div({osrc}, rounding_mode={mode!r})"
                fn = np.floor_divide if mode == "floor" else (lambda a, b: np.trunc(a / b))
            else:
                line = f"{t} = {v.name}.{op}({osrc})"
        elif form == 1:
            line = f"{t} = {v.name} {BINARY_OPERATOR[op]} {osrc}"
        elif form == 2 and op not in ("remainder", "fmod", "floor_divide", "pow", "logical_and", "logical_or"):
            # the function form; a tensor first (scalar-first reflected ops are a known issue)
            line = f"{t} = torch.{op}({v.name}, {osrc})"
        else:
            line = f"{t} = {v.name}.{op}({osrc})"
        reads = (v.name,) + ((oname,) if oname else ())
        oval = osrc

        def ref(n, fn=fn, alpha=alpha):
            b = n[oname] if oname else np.float64(float(eval(oval, {"nan": math.nan, "inf": math.inf})))
            if alpha is not None:
                o = self.vars.get(oname) if oname else None
                o_bool = ((o is not None and o.dtype == "bool") or any("dtype=torch.bool" in p for p in pre)
                          or oval in ("True", "False"))  # a Python bool operand adds as a bool too
                # bools add as `or`: alpha * b is b or nothing, whatever alpha's sign
                logical = v.dtype == "bool" and o_bool
                b = b * (abs(alpha) if logical else alpha)
            with np.errstate(all="ignore"):
                return fn(n[v.name], b)

        kind = "exact" if op in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or") else "elementwise"
        nan_ok = op in ("remainder", "fmod", "floor_divide", "pow", "div")
        modular = op in ("remainder", "fmod", "floor_divide")
        if modular:
            kind = "reduce"  # (its inputs may come from reductions, with their tolerance)
        return Step(line, t, reads, ref, kind=kind, nan_ok=nan_ok, pre=pre, scale_by_reads=modular)

    def reduce(self) -> Step:
        s = self.src
        v = self.pick()
        nd = len(v.shape)
        op = s.choice(("sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "max", "min", "var", "std",
                       "norm", "logsumexp", "softmax", "log_softmax"))  # fmt: skip
        t = self.fresh()
        keep = s.coin(0.4)
        d = self.dim(nd)
        full = s.coin(0.3) and op in ("sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "max", "min", "var",
                                      "std", "norm")  # fmt: skip
        axis = None if full else d
        if op in ("sum", "mean", "amax", "amin") and not full and nd >= 2 and s.coin(0.3):
            d = (0, -1) if not s.coin(0.1) else (0, 0)
            axis = d
        ax = lambda n: np_reduce_axis(axis, nd)  # noqa: E731
        ks = f", keepdim={keep}" if keep else ""
        if full:
            call = f"{op}()"
        elif op in ("softmax", "log_softmax"):
            call = f"{op}({d})"
        elif op == "logsumexp":
            call = f"logsumexp({d}{ks})"
        elif op == "norm":  # the first positional argument of norm is p
            call = f"norm(dim={fmt(d)}{ks})"
        elif op in ("max", "min"):
            which = s.choice(("values", "indices"))
            call = f"{op}({d}{ks}).{which}"
        else:
            call = f"{op}({fmt(d)}{ks})"
        kk = keep and not full

        def ref(n):
            x = n[v.name]
            a = ax(n)
            with np.errstate(all="ignore"):
                if op == "sum":
                    return np.sum(x, axis=a, keepdims=kk)
                if op == "mean":
                    return np.mean(x, axis=a, keepdims=kk)
                if op == "prod":
                    return np.prod(x, axis=a, keepdims=kk)
                if op in ("amax", "amin", "max", "min"):
                    if x.size == 0:
                        return None
                    if op in ("max", "min") and not full and call.endswith("indices"):
                        return None
                    return (np.max if op in ("amax", "max") else np.min)(x, axis=a, keepdims=kk)
                if op in ("var", "std"):
                    r = np.var(x, axis=a, keepdims=kk, ddof=1)
                    return r if op == "var" else np.sqrt(r)
                if op == "norm":
                    return np.sqrt(np.sum(x * x, axis=a, keepdims=kk))
            return None

        kind = "exact" if op in ("argmax", "argmin") else "reduce"
        ref_fn = None if op in ("argmax", "argmin", "logsumexp", "softmax", "log_softmax") else ref
        return Step(f"{t} = {v.name}.{call}", t, (v.name,), ref_fn, kind=kind, nan_ok=op in ("var", "std"))

    def view(self) -> Step:
        s = self.src
        v = self.pick()
        nd = len(v.shape)
        t = self.fresh()
        op = s.choice(("transpose", "t", "permute", "reshape", "view", "flatten", "squeeze", "unsqueeze", "expand",
                       "narrow", "select", "contiguous", "detach", "split", "chunk", "unbind", "repeat", "cat",
                       "stack", "T"))  # fmt: skip
        x = v.name
        ref: Callable | None = None
        pre: list = []
        reads = (x,)
        kind = "view"
        if op == "transpose":
            a, b = self.dim(nd), self.dim(nd)
            src = f"{x}.transpose({a}, {b})"
            ref = lambda n: np.swapaxes(n[x], a % max(nd, 1), b % max(nd, 1)) if nd else n[x]  # noqa: E731
        elif op == "t":
            src = f"{x}.t()"
            ref = lambda n: n[x].T  # noqa: E731
        elif op == "T":
            src = f"{x}.T"
            ref = lambda n: n[x].T  # noqa: E731
        elif op == "permute":
            perm = list(range(nd))
            for i in range(nd - 1, 0, -1):
                j = s.integers(0, i)
                perm[i], perm[j] = perm[j], perm[i]
            perm = [p - nd if s.coin(0.3) else p for p in perm]
            if s.coin(0.05) and nd:
                perm[0] = perm[-1]
            src = f"{x}.permute({', '.join(map(str, perm))})"
            ref = lambda n: np.transpose(n[x], [p % nd for p in perm]) if nd else n[x]  # noqa: E731
        elif op in ("reshape", "view"):
            shape = self.reshape_target(v.shape)
            src = f"{x}.{op}({', '.join(map(str, shape))})"
            if op == "reshape":
                kind = "elementwise"
            ref = lambda n: np.reshape(n[x], shape) if len(shape) else np.reshape(n[x], ())  # noqa: E731
        elif op == "flatten":
            a = self.dim(nd)
            b = self.dim(nd)
            src = f"{x}.flatten({a}, {b})"
            kind = "elementwise"

            def ref(n):
                y = n[x]
                if nd == 0:
                    return y.reshape(1)
                lo, hi = a % nd, b % nd
                return y.reshape(y.shape[:lo] + (-1,) + y.shape[hi + 1 :]) if y.size else None
        elif op == "squeeze":
            if s.coin(0.4):
                src = f"{x}.squeeze()"
                ref = lambda n: np.squeeze(n[x])  # noqa: E731
            else:
                a = self.dim(nd)
                src = f"{x}.squeeze({a})"

                def ref(n):
                    y = n[x]
                    return np.squeeze(y, a % nd) if nd and y.shape[a % nd] == 1 else y
        elif op == "unsqueeze":
            a = self.dim(nd + 1)
            src = f"{x}.unsqueeze({a})"
            ref = lambda n: np.expand_dims(n[x], a % (nd + 1))  # noqa: E731
        elif op == "expand":
            sizes = []
            lead = s.integers(0, 2)
            for _ in range(lead):
                sizes.append(s.integers(0, 3))
            for d in v.shape:
                if d == 1 and s.coin(0.5):
                    sizes.append(s.integers(0, 3))
                else:
                    sizes.append(-1 if s.coin(0.5) else d)
            if s.coin(0.05) and sizes:
                sizes[s.integers(0, len(sizes) - 1)] = s.choice((-2, 5))
            src = f"{x}.expand({', '.join(map(str, sizes))})"

            def ref(n):
                y = n[x]
                full = [y.shape[i - lead] if sz == -1 and i >= lead else sz for i, sz in enumerate(sizes)]
                return np.broadcast_to(y, full)
        elif op == "narrow":
            a = self.dim(nd)
            size = v.shape[a % nd] if nd and -nd <= a < nd else 1
            start = s.integers(-size, size)
            length = s.integers(0, max(size - (start % max(size, 1)), 0) + (1 if s.coin(0.1) else 0))
            src = f"{x}.narrow({a}, {start}, {length})"

            def ref(n):
                y = n[x]
                st = start % size if size else 0
                return np.take(y, range(st, st + length), axis=a % nd)
        elif op == "select":
            a = self.dim(nd)
            size = v.shape[a % nd] if nd and -nd <= a < nd else 1
            i = s.integers(-size - 1, size)
            src = f"{x}.select({a}, {i})"
            ref = lambda n: np.take(n[x], i, axis=a % nd)  # noqa: E731
        elif op == "contiguous":
            src = f"{x}.contiguous()"
            ref = lambda n: n[x]  # noqa: E731
        elif op == "detach":
            src = f"{x}.detach()"
            ref = lambda n: n[x]  # noqa: E731
        elif op in ("split", "chunk", "unbind"):
            a = self.dim(nd)
            k = s.integers(-2, 2)
            if op == "unbind":
                src = f"{x}.unbind({a})[{k}]"
            else:
                sz = s.integers(0 if s.coin(0.1) else 1, 3)
                src = f"{x}.{op}({sz}, {a})[{k}]"
        elif op == "repeat":
            reps = [s.integers(0, 2) for _ in range(nd + s.integers(0, 1))]
            if s.coin(0.05):
                reps = reps[:-1] if reps else [-1]
            src = f"{x}.repeat({', '.join(map(str, reps))})"
            if len(reps) >= nd and len(reps):
                ref = lambda n: np.tile(n[x], reps)  # noqa: E731
            kind = "elementwise"
        else:  # cat / stack
            a = self.dim(nd + (1 if op == "stack" else 0))
            w = self.pick(lambda u: len(u.shape) == nd and (op == "stack" or nd == 0 or True))
            other = w.name if w is not None and s.coin(0.5) else None
            if other is None:
                shp = list(v.shape)
                if op == "cat" and nd and -nd <= a < nd and s.coin(0.8):
                    shp[a % nd] = s.integers(0, 2)
                st = self.input_step(tuple(shp), s.choice((v.dtype, v.dtype, "float64", "int64")))
                pre = [st.src]
                other = st.target
            else:
                reads = (x, other)
            src = f"torch.{op}([{x}, {other}], {a})"
            kind = "elementwise"
        return Step(f"{t} = {src}", t, reads, ref, kind=kind, pre=pre)

    def reshape_target(self, shape):
        s = self.src
        n = numel(shape)
        r = s.integers(0, 5)
        if r == 0:
            return [n]
        if r == 1:
            return [-1]
        if r == 2 and n:
            divs = [d for d in range(1, n + 1) if n % d == 0]
            d = s.choice(divs)
            return [d, -1] if s.coin(0.5) else [-1, d]
        if r == 3:
            return s.choice(([-1, -1], [n + 1], [-2, n], [0, -1], [1, -1, 1], []))
        out = list(shape)
        out.insert(s.integers(0, len(out)), 1)
        return out

    def index_expr(self, v: Var):
        """An index for ``v``: (source text, numpy index or None when numpy can't follow, prefix)."""
        s = self.src
        parts_src, parts_np = [], []
        dims_left = len(v.shape)
        dim_i = 0
        n = s.integers(1, 3)
        np_ok = True
        for _ in range(n):
            r = s.integers(0, 9)
            size = v.shape[dim_i] if dim_i < len(v.shape) else 0
            if r <= 2 and dims_left:
                i = s.integers(-size - 1, size)
                parts_src.append(str(i))
                parts_np.append(i)
                dims_left -= 1
                dim_i += 1
            elif r <= 5 and dims_left:
                a = s.choice((None, 0, 1, -1, -2))
                b = s.choice((None, 2, -1, 5))
                c = s.choice((None, None, 1, 2, 3)) if not s.coin(0.03) else s.choice((0, -1))
                txt = ":".join("" if q is None else str(q) for q in (a, b)) + ("" if c is None else f":{c}")
                parts_src.append(txt)
                parts_np.append(slice(a, b, c))
                if c is not None and c <= 0:
                    np_ok = False
                dims_left -= 1
                dim_i += 1
            elif r == 6:
                parts_src.append("None")
                parts_np.append(None)
            elif r == 7 and dims_left:
                k = s.integers(0, 3)
                idx = [s.integers(-size - (1 if s.coin(0.05) else 0), max(size - 1, 0) + (1 if s.coin(0.05) else 0))
                       for _ in range(k)]  # fmt: skip
                if size == 0 and k:
                    idx = [0]
                parts_src.append(f"torch.tensor({idx!r}, dtype=torch.int64)")
                parts_np.append(np.array(idx, dtype=np.int64))
                dims_left -= 1
                dim_i += 1
            elif r == 8 and dims_left:
                m = [s.coin(0.5) for _ in range(size + (1 if s.coin(0.05) else 0))]
                parts_src.append(f"torch.tensor({m!r})")
                parts_np.append(np.array(m, dtype=bool))
                dims_left -= 1
                dim_i += 1
            else:
                parts_src.append("...")
                parts_np.append(Ellipsis)
                dim_i = len(v.shape)  # past an ellipsis the remaining parts index the trailing dims
                dims_left = 0
        if s.coin(0.1) and v.shape:
            # a whole-tensor boolean mask computed from the data
            return f"{v.name} > 0", None, []
        n_adv = sum(isinstance(p, np.ndarray) for p in parts_np)
        n_int = sum(isinstance(p, int) for p in parts_np)
        if n_adv > 1 or (n_adv and n_int) or sum(p is Ellipsis for p in parts_np) > 1:
            np_ok = False  # numpy's and torch's broadcasting of several advanced indices agree, but keep it simple
        return ", ".join(parts_src) + ("," if len(parts_src) == 1 else ""), (tuple(parts_np) if np_ok else None), []

    def index(self) -> Step:
        s = self.src
        v = self.pick()
        t = self.fresh()
        r = s.integers(0, 5)
        x = v.name
        if r <= 2:
            isrc, inp, pre = self.index_expr(v)
            if inp is None and isrc == f"{x} > 0":
                return Step(f"{t} = {x}[{x} > 0]", t, (x,), lambda n: n[x][n[x] > 0], kind="exact")
            ref = (lambda n: n[x][inp]) if inp is not None else None
            return Step(f"{t} = {x}[{isrc}]", t, (x,), ref, kind="exact")
        nd = len(v.shape)
        a = self.dim(nd)
        size = v.shape[a % nd] if nd and -nd <= a < nd else 1
        if r == 3:
            idx = [s.integers(-size if s.coin(0.1) else 0, max(size - 1, 0)) for _ in range(s.integers(0, 3))]
            if size == 0:
                idx = []
            src = f"{t} = {x}.index_select({a}, torch.tensor({idx!r}, dtype=torch.int64))"
            return Step(src, t, (x,), lambda n: np.take(n[x], idx, axis=a % nd) if nd else None, kind="exact")
        if r == 4:
            shp = list(v.shape)
            if nd:
                shp[a % nd if -nd <= a < nd else 0] = s.integers(0, 3)
            vals = [s.integers(0, max(size - 1, 0)) for _ in range(numel(shp))]
            if size == 0 and vals:
                vals = [0] * len(vals)
            src = (f"{t} = {x}.gather({a}, torch.tensor({vals!r}, dtype=torch.int64)"
                   f".reshape({', '.join(map(str, shp))},))" if shp else
                   f"{t} = {x}.gather({a}, torch.tensor({vals[0] if vals else 0}, dtype=torch.int64))")  # fmt: skip
            return Step(src, t, (x,), None, kind="exact")
        # masked_fill / where
        m = f"({x} > 0.5)" if v.dtype != "bool" else x
        if s.coin(0.5):
            val = self.scalar()
            src = f"{t} = {x}.masked_fill({m}, {fmt(val)})"
            return Step(src, t, (x,), None, kind="exact")
        osrc, _, oname, pre = self.operand_for(v.shape)
        src = f"{t} = torch.where({m}, {x}, {osrc})"
        return Step(src, t, (x,), None, kind="exact", pre=pre)

    def setitem(self) -> Step:
        s = self.src
        v = self.pick()
        x = v.name
        isrc, inp, _ = self.index_expr(v)
        if s.coin(0.6):
            val = fmt(self.scalar())
            pre = []
        else:
            shp = () if s.coin(0.5) else (s.integers(1, 2),)
            st = self.input_step(shp, s.choice(FLOAT_DTYPES + ("int64",)), grad=s.coin(0.3))
            pre, val = [st.src], st.target
        return Step(f"{x}[{isrc}] = {val}", x, (), None, kind="exact", pre=pre)

    def inplace(self) -> Step:
        s = self.src
        v = self.pick()
        x = v.name
        t = self.fresh()
        r = s.integers(0, 7)
        if r <= 2:
            op = s.choice(BINARY_INPLACE)
            osrc, _, oname, pre = self.operand_for(v.shape)
            if s.coin(0.3) and op in BINARY_OPERATOR:
                line = f"{x} {BINARY_OPERATOR[op]}= {osrc}\n{t} = {x}"
            else:
                line = f"{t} = {x}.{op}_({osrc})"
            reads = (x,) + ((oname,) if oname else ())

            def ref(n, op=op, osrc=osrc):
                b = n[oname] if oname else np.float64(float(eval(osrc, {"nan": math.nan, "inf": math.inf})))
                with np.errstate(all="ignore"):
                    out = BINARY[op](n[x], b)
                return out if out.shape == n[x].shape else None

            return Step(line, t, reads, ref, nan_ok=op in ("pow", "div"), pre=pre)
        if r == 3:
            return Step(f"{t} = {x}.zero_()", t, (x,), lambda n: np.zeros_like(n[x]), kind="exact")
        if r == 4:
            val = self.scalar()
            return Step(f"{t} = {x}.fill_({fmt(val)})", t, (x,), None, kind="exact")
        if r == 5:
            osrc, _, oname, pre = self.operand_for(v.shape)
            if oname is None:
                osrc = f"torch.tensor({osrc})"
            return Step(f"{t} = {x}.copy_({osrc})", t, (), None, kind="exact", pre=pre)
        if r == 6:
            m = f"({x} < 0)" if v.dtype != "bool" else x
            return Step(f"{t} = {x}.masked_fill_({m}, {fmt(self.scalar())})", t, (), None, kind="exact")
        # index_put_
        nd = len(v.shape)
        size = v.shape[0] if nd else 0
        idx = [s.integers(-size, max(size - 1, 0)) for _ in range(s.integers(1, 3))] if size else [0]
        acc = s.coin(0.5)
        val = fmt(self.scalar())
        return Step(f"{t} = {x}.index_put_((torch.tensor({idx!r}),), torch.tensor({val}), accumulate={acc})", t,
                    (), None, kind="exact")  # fmt: skip

    def matmul(self) -> Step:
        s = self.src
        v = self.pick()
        x = v.name
        t = self.fresh()
        nd = len(v.shape)
        op = s.choice(("mm", "matmul", "mv", "dot", "outer", "bmm", "addmm", "matmul"))
        k = v.shape[-1] if nd else 1
        if s.coin(0.1):
            k += 1
        dt = v.dtype if s.coin(0.8) else s.choice(DTYPES)
        if op in ("mm", "matmul"):
            shp = (k, s.integers(0, 3)) if op == "mm" or s.coin(0.6) else (k,)
        elif op == "bmm":
            shp = (v.shape[0] if nd else 1, k, s.integers(1, 3))
        elif op == "addmm":
            shp = (k, s.integers(1, 3))
        else:
            shp = (k,) if op != "outer" else (s.integers(0, 3),)
        st = self.input_step(shp, dt)
        o = st.target
        if op == "addmm":
            bias = self.input_step((shp[1],), v.dtype)
            line = f"{t} = torch.addmm({bias.target}, {x}, {o})"
            return Step(line, t, (x,), None, kind="matmul", pre=[st.src, bias.src])
        line = f"{t} = {x}.{op}({o})" if s.coin(0.5) else f"{t} = torch.{op}({x}, {o})"

        def ref(n):
            a = n[x]
            b = n[o]
            if op == "outer":
                return np.outer(a, b)
            return np.matmul(a, b)

        return Step(line, t, (x, o), ref, kind="matmul", nan_ok=True, pre=[st.src])

    def misc(self) -> Step:
        s = self.src
        t = self.fresh()
        r = s.integers(0, 5)
        if r == 0:
            v = self.pick()
            dt = s.choice(DTYPES)
            how = s.choice((f".to({dtype_src(dt)})", {"float32": ".float()", "float64": ".double()", "int64": ".long()",
                                                     "bool": ".bool()"}[dt]))  # fmt: skip
            # float -> int of NaN/inf/out-of-range is undefined in C++ (torch gives INT64_MIN on x86)
            lossy = dt in ("int64",) and v.dtype in FLOAT_DTYPES
            return Step(f"{t} = {v.name}{how}", t, (v.name,), None, kind="exact", values_undefined=lossy)
        if r == 1:
            n = s.integers(0, 5)
            dt = s.choice(DTYPES)
            f = s.choice(("zeros", "ones"))
            return Step(f"{t} = torch.{f}({n}, 2, dtype={dtype_src(dt)})", t, (), None, kind="exact")
        if r == 2:
            a, b, c = s.integers(-3, 3), s.integers(-3, 6), s.choice((1, 2, -1, 0.5))
            return Step(f"{t} = torch.arange({a}, {b}, {fmt(c)})", t, (), None, kind="elementwise")
        if r == 3:
            n = s.integers(-1, 5)
            return Step(f"{t} = torch.linspace(-1, 2, {n})", t, (), None, kind="elementwise")
        if r == 4:
            v = self.pick()
            return Step(f"{t} = {v.name}.sum() * 0.5", t, (v.name,), None, kind="reduce")
        n, m = s.integers(0, 3), s.integers(0, 3)
        return Step(f"{t} = torch.eye({n}, {m})", t, (), None, kind="exact")

    def huge(self) -> Step:
        """Sizes whose byte count overflows, negative sizes, and views of 2**62+ elements."""
        s = self.src
        t = self.fresh()
        r = s.integers(0, 6)
        v = self.pick()
        if r == 0:
            n = s.choice((2**62, 2**63 - 1, "2**31, 2**31, 4", "2**40, 2**40", "-1", "3, -2"))
            return Step(f"{t} = torch.zeros({n})", t)
        if r == 1:
            src = f"torch.zeros(1, 1).expand({s.choice(('2**32, 2**32', '2**31, 2**31', '2**62, 2**2', '-1, -1'))})"
            return Step(f"{t} = {src}", t)
        if r == 2:
            return Step(f"{t} = {v.name}.view(-1, -1)", t)
        if r == 3:
            shape = s.choice(("-3", "2**62", "2**32, 2**32", "0, -1"))
            return Step(f"{t} = {v.name}.reshape({shape})", t)
        if r == 4:
            return Step(f"{t} = torch.full(({s.choice(('2**62', '-2', '0'))},), 1.5)", t)
        if r == 5:
            return Step(f"{t} = {v.name}.sum({s.choice(('-100', '2**40', '(0, 0)', '()'))})", t)
        return Step(f"{t} = torch.ones(2, 3).repeat({s.choice(('2**31, 2**31', '-1, 1', '0, 5'))})", t)  # fmt: skip


def broadcastable(a, b) -> bool:
    for x, y in zip(reversed(a), reversed(b)):
        if x != y and x != 1 and y != 1:
            return False
    return True


# --------------------------------------------------------------------------------------
# running


def dname(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def is_panic(e: BaseException) -> bool:
    return not isinstance(e, Exception) and not isinstance(e, (KeyboardInterrupt, SystemExit))


def to_np(x):
    """Values of a tensor as a NumPy array (float64 for floats)."""
    a = x.detach().numpy()
    return np.array(a, dtype=np.float64) if a.dtype.kind == "f" else np.array(a)


TOL = {  # (rtol, scale-relative atol)
    ("float32", "elementwise"): (2e-5, 1e-6),
    ("float32", "reduce"): (1e-4, 2e-5),
    ("float32", "matmul"): (1e-4, 2e-5),
    ("float64", "elementwise"): (1e-10, 1e-13),
    ("float64", "reduce"): (1e-9, 1e-12),
    ("float64", "matmul"): (1e-9, 1e-12),
}


def close(a: np.ndarray, b: np.ndarray, dtype: str, kind: str, ref_scale: float | None = None) -> str | None:
    """None if equal within tolerance, else a description. NaN positions and infinities must agree."""
    if a.shape != b.shape:
        return f"shape {a.shape} != {b.shape}"
    if dtype not in FLOAT_DTYPES or kind in ("exact", "view"):
        if dtype in FLOAT_DTYPES:
            ok = (a == b) | (np.isnan(a) & np.isnan(b))
        else:
            ok = a == b
        if np.all(ok):
            return None
        i = np.argwhere(~ok)[0]
        return f"at {tuple(i)}: {a[tuple(i)]!r} != {b[tuple(i)]!r}"
    rtol, atol = TOL[(dtype, "elementwise" if kind == "exact" else kind)]
    fin = np.isfinite(b)
    scale = ref_scale if ref_scale is not None else (float(np.max(np.abs(b[fin]))) if np.any(fin) else 0.0)
    with np.errstate(all="ignore"):
        near = np.abs(a - b) <= rtol * np.abs(b) + atol * max(scale, 1.0)
        ok = (a == b) | (np.isnan(a) & np.isnan(b)) | (np.isfinite(a) & fin & near)
    if np.all(ok):
        return None
    i = tuple(np.argwhere(~ok)[0])
    return f"at {i}: {a[i]!r} vs {b[i]!r} (rtol {rtol})"


class Runner:
    """Executes steps in rgrad and torch side by side and checks each one."""

    def __init__(self, rgrad_mod, torch_mod=None, check_numpy: bool = True) -> None:
        self.r = rgrad_mod
        self.t = torch_mod
        self.check_numpy = check_numpy
        base = {"nan": math.nan, "inf": math.inf}
        self.ns_r: dict[str, Any] = dict(base, torch=rgrad_mod)
        self.ns_t: dict[str, Any] | None = dict(base, torch=torch_mod) if torch_mod is not None else None
        self.lines: list[str] = []
        self.undefined: set[str] = set()  # variables whose values are not compared
        self.loss_scale = 0.0  # Σ |v|·|w| over the loss's terms

    def exec(self, src: str, ns) -> BaseException | None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(src, ns)  # noqa: S102
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # PanicException is a BaseException
            return e
        return None

    def fail(self, cat, msg) -> Failure:
        return Failure(cat, msg, list(self.lines))

    def run_step(self, step: Step) -> Failure | None:
        for line in step.pre:
            f = self.run_step(Step(line, line.split("=", 1)[0].strip(), kind="exact"))
            if f:
                return f
        np_in = None
        if self.check_numpy and step.ref is not None:
            try:
                np_in = {n: to_np(self.ns_r[n]).astype(np.float64) for n in step.reads}
            except Exception as e:  # noqa: BLE001
                self.lines.append(step.src)
                return self.fail("mismatch", f"reading inputs for numpy: {type(e).__name__}: {e}")
        self.lines.append(step.src)
        er = self.exec(step.src, self.ns_r)
        self.raised = er is not None
        if er is not None and is_panic(er):
            return self.fail("panic", f"{type(er).__name__}: {er}")
        cat = "mismatch"
        if self.ns_t is not None:
            et = self.exec(step.src, self.ns_t)
            if et is None and (bad := self.torch_invalid()):
                return self.fail("torch_invalid", bad)
            # (when backward fails in both, which failing node runs first is the engine's
            # scheduling, not torch's semantics: the error types are not compared)
            both_failed_backward = er is not None and et is not None and step.target == "loss"
            if (er is None) != (et is None) or (
                er is not None and type(er) is not type(et) and not both_failed_backward
            ):
                return self.fail(cat, f"exception: rgrad {describe(er)} / torch {describe(et)}")
        if er is not None:
            if INPLACE_RE.search(step.src):
                # torch writes part of the result before some errors (index_put_ stops at the
                # first bad index); rgrad checks first. Values written so far are not compared.
                self.undefined.update(n for n in self.ns_r if re.fullmatch(r"v\d+", n))
            # both raised (or numpy-only mode): forget the target, go on
            if step.target:
                self.ns_r.pop(step.target, None)
                if self.ns_t is not None:
                    self.ns_t.pop(step.target, None)
            return None
        if step.target is None:
            return None
        out = self.ns_r[step.target]
        names_read = re.findall(r"\bv\d+\b", step.src)
        float_src = re.search(r"\b(nan|inf)\b|\d\.\d", step.src) or any(
            dname(getattr(self.ns_r.get(n), "dtype", "")) in FLOAT_DTYPES for n in names_read
        )
        if is_tensor(out) and INPLACE_RE.search(step.src) and dname(out.dtype) == "int64" and float_src:
            self.undefined.add(step.target)  # float -> int64 of NaN/inf/out-of-range is undefined
            receiver = re.match(r"\s*(?:v\d+\s*=\s*)?(v\d+)[.\[ ]", step.src)
            if receiver:  # `v3 = v0.copy_(...)`: v0 is the same tensor
                self.undefined.add(receiver.group(1))
        if self.ns_t is not None and INPLACE_RE.search(step.src) and self.overlaps_operand(step.src, names_read):
            # an in-place op reading memory it writes (through another view) gives
            # order-dependent values in torch, which reads elements it has already written
            # (torch raises only where it can tell cheaply: see check_no_partial_overlap)
            self.undefined.update(n for n in self.ns_r if re.fullmatch(r"v\d+", n))
        if step.discontinuous and self.ns_t is not None and not all(self.bitwise_equal(n) for n in step.reads):
            self.undefined.add(step.target)  # (see Step.discontinuous)
        if step.values_undefined or (self.undefined and set(names_read) & self.undefined):
            self.undefined.add(step.target)
            if step.target == "loss":  # gradients flow through the undefined values too
                self.undefined.update(n for n in self.ns_r if re.fullmatch(r"v\d+", n))
        if self.ns_t is not None:
            kind = step.kind
            if kind == "view" and not all(self.same_strides(n) for n in step.reads):
                kind = "exact"  # the input's strides already differ (see same_strides)
            scale = self.reads_scale(step) if step.scale_by_reads else None
            msg = self.compare(step.target, kind, scale)
            if msg:
                return self.fail(cat, msg)
            amplified = kind == "reduce" or (scale or 0.0) > 1.0  # fmod always; sin(x) where |x| > 1
            if step.scale_by_reads and amplified and not self.bitwise_equal(step.target):
                # equal only up to the inputs' rounding, which the op amplified: what is
                # computed from it is not compared
                self.undefined.add(step.target)
            if kind == "matmul" and self.zero_signs_differ(step.target):
                # torch's sign of an exact-zero sum depends on its kernel (MKL keeps a k=1
                # product's -0.0, its small-batch loop starts from +0.0): values equal, but
                # what divides by them is not compared
                self.undefined.add(step.target)
        if np_in is not None and is_tensor(out) and numel(tuple(out.shape)) <= MAX_NUMEL:
            with np.errstate(all="ignore"):
                try:
                    if dname(out.dtype) == "float32":
                        # int inputs become float32 before the op computes (2**40 + 3 rounds)
                        np_in = {k: v.astype(np.float32).astype(np.float64) for k, v in np_in.items()}
                    exp = step.ref(np_in)
                except (IndexError, ValueError):
                    exp = None  # numpy refused where torch and rgrad agree (e.g. an empty advanced index)
            if exp is not None:
                got = to_np(out)
                exp = np.asarray(exp)
                dt = dname(out.dtype)
                if dt == "float32":
                    exp = exp.astype(np.float32).astype(np.float64)
                elif dt in ("int64", "bool"):
                    if exp.dtype.kind == "f" and not np.all(np.isfinite(exp) & (np.abs(exp) < 2.0**53)):
                        exp = None
                    else:
                        exp = exp.astype(np.int64 if dt == "int64" else bool)
                if step.nan_ok and exp is not None:
                    bad = ~np.isfinite(np.broadcast_to(exp, exp.shape)) if exp.dtype.kind == "f" else None
                    if any(not np.all(np.isfinite(a)) for a in np_in.values() if a.dtype.kind == "f") or (
                        bad is not None and bad.any()
                    ):
                        exp = None
                if exp is not None:
                    msg = close(got, exp, dt, step.kind if step.kind != "view" else "exact")
                    if msg:
                        return self.fail("mismatch", f"{step.target} vs numpy: {msg}")
        return None

    def bitwise_equal(self, name: str) -> bool:
        """rgrad's and torch's values of `name` are the same numbers (NaNs alike)."""
        a, b = self.ns_r.get(name), self.ns_t.get(name)
        if not (is_tensor(a) and is_tensor(b)):
            return True
        x, y = to_np(a), to_np(b)
        return x.shape == y.shape and bool(np.all((x == y) | (np.isnan(x) & np.isnan(y))))

    def zero_signs_differ(self, name: str) -> bool:
        a, b = self.ns_r.get(name), self.ns_t.get(name)
        if not (is_tensor(a) and is_tensor(b)):
            return False
        x, y = to_np(a), to_np(b)
        if x.shape != y.shape or x.dtype.kind != "f":
            return False
        zero = (x == 0) & (y == 0)
        return bool(np.any(np.signbit(x[zero]) != np.signbit(y[zero])))

    def overlaps_operand(self, src: str, names: list[str]) -> bool:
        """The in-place step's destination shares memory with another tensor it reads."""
        receiver = re.match(r"\s*(?:v\d+\s*=\s*)?(v\d+)[.\[ ]", src)
        if not receiver:
            return False
        dst = self.ns_t.get(receiver.group(1))
        if not is_tensor(dst):
            return False
        ptr = dst.untyped_storage().data_ptr()
        for n in set(names) - {receiver.group(1)}:
            t = self.ns_t.get(n)
            if is_tensor(t) and t.numel() > 0 and t.untyped_storage().data_ptr() == ptr and ptr != 0:
                return True
        return False

    def torch_invalid(self) -> str | None:
        """A tensor torch made that torch itself calls invalid: a negative size (expand to
        -2 after a 0-sized dim) or an int/bool tensor that requires grad (some in-place writes
        of a value with history). rgrad refuses the first and keeps the second without
        history; nothing after that point can be compared."""
        for name, t in self.ns_t.items():
            if not is_tensor(t):
                continue
            if any(d < 0 for d in t.shape):
                return f"torch made {name} with a negative size {tuple(t.shape)}"
            if t.requires_grad and dname(t.dtype) not in FLOAT_DTYPES:
                return f"torch made {name}, a {dname(t.dtype)} tensor, require grad"
        return None

    def reads_scale(self, step: Step) -> float | None:
        """The largest finite magnitude among the step's float inputs."""
        vals = [to_np(self.ns_r[n]) for n in step.reads if is_tensor(self.ns_r.get(n))]
        finite = [np.abs(v[np.isfinite(v)]) for v in vals if v.dtype.kind == "f"]
        finite = [v for v in finite if v.size]
        return float(max(np.max(v) for v in finite)) if finite else None

    def compare(self, name: str, kind: str, scale: float | None = None) -> str | None:
        try:
            return self._compare(name, kind, scale)
        except Exception as e:  # noqa: BLE001 - reading .is_leaf etc. can raise in torch
            return f"{name}: reading it raised {type(e).__name__}: {str(e)[:200]}"

    def _compare(self, name: str, kind: str, scale: float | None = None) -> str | None:
        a, b = self.ns_r.get(name), self.ns_t.get(name)
        if not is_tensor(a) or b is None:
            return None
        # Reading is_leaf can raise (a multi-output view whose base was modified in
        # place): both libraries must then raise the same error type.
        ea, eb = leaf_error(a), leaf_error(b)
        if ea is not None or eb is not None:
            if ea is not None and eb is not None and type(ea) is type(eb):
                return None
            return f"{name}: reading is_leaf: rgrad {describe(ea)} / torch {describe(eb)}"

        if tuple(a.shape) != tuple(b.shape):
            return f"{name}: shape {tuple(a.shape)} vs torch {tuple(b.shape)}"
        if dname(a.dtype) != dname(b.dtype):
            return f"{name}: dtype {dname(a.dtype)} vs torch {dname(b.dtype)}"
        if a.requires_grad != b.requires_grad:
            return f"{name}: requires_grad {a.requires_grad} vs torch {b.requires_grad}"
        if a.is_leaf != b.is_leaf:
            return f"{name}: is_leaf {a.is_leaf} vs torch {b.is_leaf}"
        if kind == "view" and tuple(a.stride()) != tuple(b.stride()):
            return f"{name}: stride {tuple(a.stride())} vs torch {tuple(b.stride())}"
        if numel(tuple(a.shape)) > MAX_NUMEL or name in self.undefined:
            return None
        # (the loss sums terms that may cancel: its tolerance scales with their magnitude)
        if name == "loss":
            scale = self.loss_scale
        m = close(
            to_np(a), to_np(b), self.tol_dtype(a), "elementwise" if kind in ("exact", "view") else kind, scale
        )
        return f"{name}: {m} (rgrad vs torch)" if m else None

    def same_strides(self, name) -> bool:
        """Elementwise results may differ in strides from torch's (torch keeps a permuted
        input's memory format, rgrad writes them contiguous); views of them then differ too."""
        a, b = self.ns_r.get(name), self.ns_t.get(name)
        return not is_tensor(a) or b is None or tuple(a.stride()) == tuple(b.stride())

    def tol_dtype(self, a) -> str:
        """float64 results computed from float32 ones (mixed programs) only have float32's precision."""
        d = dname(a.dtype)
        if d == "float64" and any(is_tensor(v) and dname(v.dtype) == "float32" for v in self.ns_r.values()):
            return "float32"
        return d

    def usable(self, name) -> bool:
        a = self.ns_r.get(name)
        return is_tensor(a) and numel(tuple(a.shape)) <= MAX_NUMEL

    def finish(self, names: list[str]) -> Failure | None:
        """Compare every live variable (in-place ops may have changed earlier ones), then backward."""
        if self.ns_t is not None:
            for n in names:
                if self.usable(n):
                    m = self.compare(n, "reduce")
                    if m:
                        return self.fail("mismatch", "after the program: " + m)
        terms = []
        pre = []
        for n in names:
            a = self.ns_r.get(n)
            if not self.usable(n) or not a.requires_grad or dname(a.dtype) not in FLOAT_DTYPES:
                continue
            shape = tuple(a.shape)
            w = np.cos(np.arange(numel(shape)) * 0.7 + 0.3).round(3)
            body = ", ".join(fmt(float(x)) for x in w)
            dims = ", ".join(map(str, shape))
            pre.append(f"w_{n} = torch.tensor([{body}], dtype=torch.{dname(a.dtype)}).reshape({dims},)")
            terms.append(f"({n} * w_{n}).sum()")
            with np.errstate(all="ignore"):
                self.loss_scale += float(np.nansum(np.abs(to_np(a)) * np.abs(w.reshape(shape))))
        if not terms:
            return None
        src = "\n".join(pre + ["loss = " + " + ".join(terms), "loss.backward()"])
        step = Step(src, "loss", kind="reduce")
        f = self.run_step(step)
        if f:
            return f
        if self.ns_t is None or self.raised:  # a failed backward leaves partial, order-dependent grads
            return None
        for n in names:
            a, b = self.ns_r.get(n), self.ns_t.get(n)
            if not is_tensor(a) or b is None or not a.is_leaf or not self.usable(n):
                continue
            ga, gb = a.grad, b.grad
            if (ga is None) != (gb is None):
                state = ("None" if ga is None else "set", "None" if gb is None else "set")
                return self.fail("mismatch", f"{n}.grad: rgrad {state[0]} / torch {state[1]}")
            if ga is None or n in self.undefined:
                continue
            if tuple(ga.shape) != tuple(gb.shape) or dname(ga.dtype) != dname(gb.dtype):
                got, want = f"{tuple(ga.shape)} {ga.dtype}", f"{tuple(gb.shape)} {gb.dtype}"
                return self.fail("mismatch", f"{n}.grad: {got} vs torch {want}")
            m = close(to_np(ga), to_np(gb), self.tol_dtype(ga), "reduce")
            if m:
                return self.fail("mismatch", f"{n}.grad: {m} (rgrad vs torch)")
        return None


INPLACE_RE = re.compile(r"_\(|\] = |[-+*/]= ")


def is_tensor(x) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "requires_grad")


def leaf_error(t) -> BaseException | None:
    try:
        t.is_leaf  # noqa: B018
    except Exception as e:  # noqa: BLE001
        return e
    return None


def describe(e) -> str:
    return "no exception" if e is None else f"{type(e).__name__}({str(e)[:200]!r})"


def run_program(
    src: Source, rgrad_mod, torch_mod=None, allow_huge: bool = True, check_numpy: bool = True
) -> Failure | None:
    """Generate and run one random program; return the first failure, if any."""
    with warnings.catch_warnings():  # numpy's and torch's warnings (e.g. var with 1 element)
        warnings.simplefilter("ignore")
        return _run_program(src, rgrad_mod, torch_mod, allow_huge, check_numpy)


def _run_program(src, rgrad_mod, torch_mod, allow_huge, check_numpy):
    gen = Generator(src, allow_huge=allow_huge)
    run = Runner(rgrad_mod, torch_mod, check_numpy)
    n_inputs = src.integers(1, 3)
    steps = [gen.input_step() for _ in range(n_inputs)]
    n_steps = src.integers(1, MAX_STEPS)
    names: list[str] = []
    i = 0
    while True:
        if i < len(steps):
            step = steps[i]
        elif i < n_inputs + n_steps:
            step = gen.step()
        else:
            break
        i += 1
        f = run.run_step(step)
        if f:
            return classify(f)
        # refresh what the generator knows from rgrad's actual results (in-place ops change old ones)
        for name in [n for n in run.ns_r if n[:1] == "v" and n[1:].isdigit()]:
            a = run.ns_r[name]
            if is_tensor(a):
                gen.vars[name] = Var(name, tuple(a.shape), dname(a.dtype), bool(a.requires_grad), run.usable(name))
                if name not in names:
                    names.append(name)
        for name in list(gen.vars):
            if name not in run.ns_r:
                del gen.vars[name]
                names.remove(name)
    return classify(run.finish(names))


def classify(f: Failure | None) -> Failure | None:
    if f is not None and f.category == "mismatch":
        for pat, why in KNOWN_ISSUES:
            if re.search(pat, f.message + "\n" + (f.program[-1] if f.program else "")):
                f.category = "known"
                f.message = f"{why}: {f.message}"
                break
    return f
