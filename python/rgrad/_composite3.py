"""Distances and searches, as torch's composites make them from its natives: ``cdist``
(``_cdist_forward``, CdistBackward0, or for p = 2 on many rows ``_euclidean_dist``,
EuclideanDistBackward0, viewed to the result's shape), ``pdist`` (``_pdist_forward``,
PdistBackward0), ``pairwise_distance`` (``norm(x1 - x2 + eps)``), ``searchsorted`` and
``bucketize`` (no gradient).
"""

from __future__ import annotations

import builtins
import numbers

from rgrad import _C
from rgrad._C import Tensor
from rgrad._vmap_check import is_batched

__all__ = ["cdist", "pdist", "pairwise_distance", "searchsorted", "bucketize", "unique", "unique_consecutive",
           "bincount", "histc", "block_diag", "isin", "isposinf", "isneginf", "isreal", "is_signed",
           "broadcast_shapes", "gcd", "gcd_", "lcm", "lcm_", "logspace"]


def _check_tensor(fn: str, x, name: str, pos: int) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not {type(x).__name__}")


def _float_arg(fn: str, v, name: str, pos: int) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be float, not {type(v).__name__}")
    return float(v)


# ---- distances ---------------------------------------------------------------------------

_CDIST_MODES = {"use_mm_for_euclid_dist_if_necessary": None, "use_mm_for_euclid_dist": 1,
                "donot_use_mm_for_euclid_dist": 2}


def _broadcast_batch(a: list, b: list) -> list:
    n = builtins.max(len(a), len(b))
    a = [1] * (n - len(a)) + list(a)
    b = [1] * (n - len(b)) + list(b)
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                               f"at non-singleton dimension {i}")
        out.append(y if x == 1 else x)
    return out


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The p-norm distance between each row of `x1` (``[*, r1, m]``) and each row of `x2`
    (``[*, r2, m]``), batch dims broadcast: ``[*, r1, r2]``.

    ``compute_mode``: for p = 2, ``'use_mm_for_euclid_dist_if_necessary'`` (the default)
    takes the matrix-product form when either operand has more than 25 rows,
    ``'use_mm_for_euclid_dist'`` always, ``'donot_use_mm_for_euclid_dist'`` never.
    """
    _check_tensor("cdist", x1, "x1", 1)
    _check_tensor("cdist", x2, "x2", 2)
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    mode = _CDIST_MODES[compute_mode]
    p = _float_arg("cdist", p, "p", 3)
    if x1.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    r1, r2 = x1.shape[-2], x2.shape[-2]
    # (an empty operand always takes _cdist_forward, so that the graph is connected)
    if x1.numel() == 0 or x2.numel() == 0 or not (p == 2 and (mode == 1 or (mode is None and (r1 > 25 or r2 > 25)))):
        return x1._cdist_forward(x2, p, mode)
    # ATen's cdist_impl, matrix-product branch: the checks, the batch expanded and flattened
    for i, x in ((1, x1), (2, x2)):
        if not x.is_floating_point():
            from rgrad._tensor import _scalar_type_name

            raise RuntimeError(f"cdist only supports floating-point dtypes, X{i} got: {_scalar_type_name(x.dtype)}")
    batch = _broadcast_batch(list(x1.shape[:-2]), list(x2.shape[:-2]))
    c = x1.shape[-1]
    b = 1
    for s in batch:
        b *= s
    out_shape = [*batch, r1, r2]
    if b == 1:
        dist = x1._euclidean_dist(x2)
    else:
        e1 = x1.expand(*batch, r1, c).contiguous().view(b, r1, c)
        e2 = x2.expand(*batch, r2, c).contiguous().view(b, r2, c)
        dist = e1._euclidean_dist(e2)
    return dist.view(out_shape)


def pdist(input: Tensor, p: float = 2) -> Tensor:  # noqa: A002
    """The p-norm distance between every pair of rows of a 2-D `input` (``i < j``, in
    row-major order): ``n(n-1)/2`` values."""
    _check_tensor("pdist", input, "input", 1)
    p = _float_arg("pdist", p, "p", 2)
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.is_floating_point():
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    return input.contiguous()._pdist_forward(p)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """The p-norm of ``x1 - x2 + eps`` over the last dim (the operands broadcast)."""
    _check_tensor("pairwise_distance", x1, "x1", 1)
    _check_tensor("pairwise_distance", x2, "x2", 2)
    p = _float_arg("pairwise_distance", p, "p", 3)
    eps = _float_arg("pairwise_distance", eps, "eps", 4)
    innermost = builtins.max(x1.dim(), x2.dim()) - 1
    return (x1 - x2 + eps)._norm_dim(p, innermost, keepdim)


# ---- searches ----------------------------------------------------------------------------


_SEARCHSORTED_SIGS = (
    " * (Tensor sorted_sequence, Tensor input, *, bool out_int32 = False, bool right = False, str side = None, "
    "Tensor sorter = None, Tensor out = None)\n"
    " * (Tensor sorted_sequence, Number self, *, bool out_int32 = False, bool right = False, str side = None, "
    "Tensor sorter = None, Tensor out = None)\n")
_BUCKETIZE_SIGS = (
    " * (Tensor input, Tensor boundaries, *, bool out_int32 = False, bool right = False, Tensor out = None)\n"
    " * (Number self, Tensor boundaries, *, bool out_int32 = False, bool right = False)\n")


def _type_name(v) -> str:
    return "Tensor" if isinstance(v, Tensor) else type(v).__name__


def _check_args(fn: str, sigs: str, positional: tuple, keywords: dict, ok: bool) -> None:
    """torch's "invalid combination of arguments" TypeError unless `ok`: the positional
    arguments' types, then the keywords given (those not at their defaults)."""
    if ok:
        return
    got = [_type_name(v) for v in positional] + [f"{k}={_type_name(v)}" for k, v in keywords.items()]
    raise TypeError(f"{fn}() received an invalid combination of arguments - got ({', '.join(got)}), "
                    f"but expected one of:\n{sigs}")


def _is_number(v) -> bool:
    return isinstance(v, numbers.Number)


_WARNED: set = set()


def _warn_non_contiguous(t: Tensor, what: str) -> None:
    """torch's once-per-program performance warning for a non-contiguous operand."""
    if not t.is_contiguous() and what not in _WARNED:
        _WARNED.add(what)
        import warnings

        warnings.warn(f"torch.searchsorted(): {what} tensor is non-contiguous, this will lower the performance due "
                      "to extra data copy when converting non-contiguous tensor to contiguous, please use "
                      f"contiguous {what} tensor if possible. This message will only appear once per program.",
                      UserWarning, stacklevel=3)


def _values_tensor(v, like: Tensor) -> Tensor:
    """A python number as a 0-d tensor (torch's Scalar overload), a Tensor as itself."""
    if isinstance(v, Tensor):
        return v
    dtype = _C.int64 if isinstance(v, numbers.Integral) else _C.float64
    return _C.tensor(v, dtype=dtype).to(like.device)


def _search(boundaries: Tensor, values: Tensor, right: bool, sorter: Tensor | None) -> Tensor:
    """``boundaries._searchsorted(values, right, sorter)``, through vmap's dispatch when an
    operand is batched (the native method of a plain `boundaries` takes no BatchedTensor)."""
    from rgrad.func._batched_tensor import BatchedTensor, dispatch

    if any(isinstance(t, BatchedTensor) for t in (boundaries, values, sorter)):
        return dispatch("_searchsorted", (boundaries, values, right, sorter), {})
    return boundaries._searchsorted(values, right, sorter)


def _no_int32(fn: str, out_int32: bool) -> None:
    if out_int32:
        raise NotImplementedError(f"{fn}(): out_int32=True is not supported: rgrad has no int32 dtype")


def _finish(r: Tensor, out: Tensor | None) -> Tensor:
    if out is None:
        return r
    from rgrad._aliases import _check_out_shape

    _check_out_shape(out, r)
    return out.copy_(r)


def searchsorted(sorted_sequence: Tensor, input, *, out_int32: bool = False,  # noqa: A002
                 right: bool = False, side: str | None = None, out: Tensor | None = None,
                 sorter: Tensor | None = None) -> Tensor:
    """The indices in the innermost dim of `sorted_sequence` where the values of `input`
    would be inserted to keep it sorted (before equal boundaries, after them with
    ``right=True`` or ``side='right'``). A 1-D `sorted_sequence` serves every value; else
    its leading dims match `input`'s. `sorter` sorts an unsorted `sorted_sequence`."""
    given = {k: v for k, v, d in (("out_int32", out_int32, False), ("right", right, False), ("side", side, None),
                                  ("sorter", sorter, None), ("out", out, None)) if v is not d}
    _check_args("searchsorted", _SEARCHSORTED_SIGS, (sorted_sequence, input), given,
                isinstance(sorted_sequence, Tensor) and (isinstance(input, Tensor) or _is_number(input))
                and isinstance(out_int32, bool) and isinstance(right, bool)
                and (side is None or isinstance(side, str)) and (sorter is None or isinstance(sorter, Tensor))
                and (out is None or isinstance(out, Tensor)))
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side != "right":
            raise RuntimeError(f"torch.searchsorted(): side and right can't be set to opposites, got side of {side} "
                               "while right was True")
        right = side == "right"
    _no_int32("searchsorted", out_int32)
    values = _values_tensor(input, sorted_sequence)
    r = _search(sorted_sequence, values, right, sorter)
    _warn_non_contiguous(values, "input value")
    _warn_non_contiguous(sorted_sequence, "boundary")
    return _finish(r, out)


def bucketize(input, boundaries: Tensor, *, out_int32: bool = False, right: bool = False,  # noqa: A002
              out: Tensor | None = None) -> Tensor:
    """The bucket of each value of `input` among the 1-D `boundaries`:
    ``searchsorted(boundaries, input, right=right)``."""
    given = {k: v for k, v, d in (("out_int32", out_int32, False), ("right", right, False), ("out", out, None))
             if v is not d}
    _check_args("bucketize", _BUCKETIZE_SIGS, (input, boundaries), given,
                isinstance(boundaries, Tensor) and (isinstance(input, Tensor) or _is_number(input))
                and isinstance(out_int32, bool) and isinstance(right, bool)
                and (out is None or isinstance(out, Tensor)))
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    _no_int32("bucketize", out_int32)
    values = _values_tensor(input, boundaries)
    r = _search(boundaries, values, right, None)
    _warn_non_contiguous(values, "input value")
    return _finish(r, out)


# ---- counting ---------------------------------------------------------------------------


def _pick(values: Tensor, inverse: Tensor, counts: Tensor, return_inverse: bool, return_counts: bool):
    if return_inverse and return_counts:
        return values, inverse, counts
    if return_inverse:
        return values, inverse
    if return_counts:
        return values, counts
    return values


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: int | None = None):
    """The unique elements of `input` (or its unique slices along `dim`), sorted (as
    torch's CPU unique, whatever `sorted` says), with each element's index among them
    (``return_inverse``) and each one's count (``return_counts``): a tuple when either
    is asked for. NaNs are each their own value. The values record Unique2Backward0
    (UniqueDimBackward0 with `dim`), whose backward raises torch's error."""
    _check_tensor("_unique2" if dim is None else "unique_dim", input, "input", 1)
    return _pick(*input._unique(dim, False), return_inverse, return_counts)


def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,  # noqa: A002
                       dim: int | None = None):
    """`input` with each run of equal consecutive elements (slices along `dim`) kept
    once; ``return_inverse`` and ``return_counts`` as for `unique`."""
    _check_tensor("unique_consecutive", input, "input", 1)
    return _pick(*input._unique(dim, True), return_inverse, return_counts)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:  # noqa: A002
    """The number of occurrences of each value of the 1-D non-negative int64 `input`
    (or the sum of its `weights`), over ``max(max(input) + 1, minlength)`` bins."""
    _check_tensor("bincount", input, "input", 1)
    if isinstance(minlength, bool) or not isinstance(minlength, int):
        raise TypeError(f"bincount(): argument 'minlength' (position 3) must be int, not {type(minlength).__name__}")
    return input._bincount(weights, minlength)


def histc(input: Tensor, bins: int = 100, min: numbers.Real = 0, max: numbers.Real = 0) -> Tensor:  # noqa: A002
    """A histogram of `input` over `bins` equal bins between `min` and `max` (both 0:
    the input's own min and max); values outside are ignored. No gradient."""
    _check_tensor("histc", input, "input", 1)
    if isinstance(bins, bool) or not isinstance(bins, int):
        raise TypeError(f"histc(): argument 'bins' (position 2) must be int, not {type(bins).__name__}")
    lo = _float_arg("histc", min, "min", 3)
    hi = _float_arg("histc", max, "max", 4)
    return input._histc(bins, lo, hi)


# ---- block_diag, isin, queries, broadcast_shapes ------------------------------------------


def block_diag(*tensors: Tensor) -> Tensor:
    """The tensors (0-d as 1x1, 1-d as one row, 2-d) placed along the diagonal of a zero
    matrix of their promoted dtype; one node (BlockDiagBackward0)."""
    if is_batched(*tensors):
        return _block_diag_composite(tensors)
    return _C._block_diag(tensors)


def _block_diag_composite(tensors) -> Tensor:
    """block_diag under vmap: each block padded with zeros by ``cat`` (ops with batching
    rules), the rows joined by ``cat``."""
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = (_C.zeros((), dtype=dtype) + _C.zeros((), dtype=t.dtype)).dtype
    from rgrad import cat  # (vmap's dispatching cat while a vmap runs)

    blocks = [t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1 else t for t in tensors]
    cols = sum(b.shape[1] for b in blocks)
    rows = []
    c0 = 0
    for b in blocks:
        r, c = b.shape
        parts = [_C.zeros([r, c0], dtype=dtype), b.to(dtype), _C.zeros([r, cols - c0 - c], dtype=dtype)]
        rows.append(cat(parts, 1))
        c0 += c
    return cat(rows, 0)


_ISIN_SIGS = (
    " * (Tensor elements, Tensor test_elements, *, bool assume_unique = False, bool invert = False, "
    "Tensor out = None)\n"
    " * (Number element, Tensor test_elements, *, bool assume_unique = False, bool invert = False, "
    "Tensor out = None)\n"
    " * (Tensor elements, Number test_element, *, bool assume_unique = False, bool invert = False, "
    "Tensor out = None)\n")


def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False,
         out: Tensor | None = None) -> Tensor:
    """Whether each element of `elements` is in `test_elements` (``invert``: is not), a
    bool tensor of `elements`' shape; either may be a number. The values compare in their
    promoted dtype (NaN matches nothing): a binary search of each element in the sorted
    test elements."""
    given = {k: v for k, v, d in (("assume_unique", assume_unique, False), ("invert", invert, False),
                                  ("out", out, None)) if v is not d}
    ok = ((isinstance(elements, Tensor) and (isinstance(test_elements, Tensor) or _is_number(test_elements)))
          or (_is_number(elements) and isinstance(test_elements, Tensor)))
    _check_args("isin", _ISIN_SIGS, (elements, test_elements), given,
                ok and isinstance(assume_unique, bool) and isinstance(invert, bool)
                and (out is None or isinstance(out, Tensor)))
    like = elements if isinstance(elements, Tensor) else test_elements
    e = _values_tensor(elements, like)
    t = _values_tensor(test_elements, like)
    for x in (e, t):
        if x.dtype == _C.bool:
            raise NotImplementedError("Unsupported input type encountered for isin(): Bool")
    flat = t.detach().reshape(-1).sort()[0]
    if flat.numel() == 0:
        found = _C.zeros(list(e.shape), dtype=_C.bool).to(e.device)
    else:
        idx = _search(flat, e.detach(), False, None).clamp(max=flat.numel() - 1)
        found = flat[idx] == e.detach()
    if invert:
        found = ~found
    return _finish(found, out)


def isposinf(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """Whether each element is +inf (all False for an integer or bool tensor)."""
    _check_tensor("isposinf", input, "input", 1)
    r = (input == float("inf")) if input.is_floating_point() else _C.zeros(list(input.shape), dtype=_C.bool)
    return _finish(r.to(input.device), out)


def isneginf(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """Whether each element is -inf (all False for an integer or bool tensor)."""
    _check_tensor("isneginf", input, "input", 1)
    r = (input == float("-inf")) if input.is_floating_point() else _C.zeros(list(input.shape), dtype=_C.bool)
    return _finish(r.to(input.device), out)


def isreal(input: Tensor) -> Tensor:  # noqa: A002
    """Whether each element is real-valued: all True (rgrad has no complex dtypes)."""
    _check_tensor("isreal", input, "input", 1)
    return _C.ones(list(input.shape), dtype=_C.bool).to(input.device)


def is_signed(input: Tensor) -> bool:  # noqa: A002
    """Whether the tensor's dtype is a signed type (all but bool)."""
    _check_tensor("is_signed", input, "input", 1)
    return input.is_signed()


def broadcast_shapes(*shapes):
    """The shape tensors of the given shapes (ints, tuples or lists of ints) would
    broadcast to, as ``Size``, with torch's errors (its ``_refs._broadcast_shapes``)."""
    from collections.abc import Sequence

    from rgrad._tensor import Size

    shapes = tuple((x,) if isinstance(x, int) else x for x in shapes if x is not None)
    if not shapes:
        return Size([])
    for shape in shapes:
        if not isinstance(shape, Sequence):
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list of ints, got {shape}")
    common = [1] * builtins.max(len(shape) for shape in shapes)
    for arg_idx, shape in enumerate(shapes):
        for idx in range(-1, -1 - len(shape), -1):
            if shape[idx] == common[idx]:
                continue
            if common[idx] == 1:
                if shape[idx] < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[idx] = shape[idx]
            if shape[idx] == 1:
                continue
            if common[idx] != shape[idx]:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {shape[idx]} at {idx}! "
                                   f"Mismatching argument at index {arg_idx} had {shape}; but expected shape "
                                   f"should be broadcastable to {common}")
    return Size(common)


# ---- gcd, lcm ---------------------------------------------------------------------------


def _int_pair(fn: str, input, other) -> tuple:
    """The operands broadcast, with torch's errors for non-tensors and non-integer dtypes."""
    _check_tensor(fn, input, "input", 1)
    _check_tensor(fn, other, "other", 2)
    probe = (_C.empty([0] * input.dim(), dtype=input.dtype) + _C.empty([0] * other.dim(), dtype=other.dtype))
    if probe.dtype != _C.int64:
        from rgrad._tensor import _scalar_type_name

        raise NotImplementedError(f"\"{fn}_cpu\" not implemented for '{_scalar_type_name(probe.dtype)}'")
    return input.to(_C.int64), other.to(_C.int64)


def gcd(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The greatest common divisor of each pair of (broadcast) integer elements (never
    negative but for int64's minimum; gcd(0, 0) = 0): ATen's Euclid loop, natively."""
    a, b = _int_pair("gcd", input, other)
    return _finish(a._gcd(b), out)


def lcm(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The least common multiple of each pair of (broadcast) integer elements: ATen's
    ``|a / gcd(a, b) * b|`` (0 where the gcd is 0), natively."""
    a, b = _int_pair("lcm", input, other)
    return _finish(a._lcm(b), out)


def _inplace_int(fn, name: str, pos: int):
    def inplace(self: Tensor, other: Tensor) -> Tensor:
        from rgrad._aliases import _check_cast, _check_out_shape

        _check_tensor(name, other, "other", pos)
        if isinstance(self, Tensor):
            _check_cast((_C.empty([0] * self.dim(), dtype=self.dtype)
                         + _C.empty([0] * other.dim(), dtype=other.dtype)).dtype, self)
        r = fn(self, other)
        _check_out_shape(self, r)
        return self.copy_(r)

    inplace.__name__ = inplace.__qualname__ = name
    inplace.__doc__ = f"In-place version of `{name[:-1]}`."
    return inplace


gcd_ = _inplace_int(gcd, "gcd_", 2)
lcm_ = _inplace_int(lcm, "lcm_", 2)


def _int_method(fn, name: str):
    def method(self: Tensor, other: Tensor) -> Tensor:
        _check_tensor(name, other, "other", 1)
        return fn(self, other)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = fn.__doc__
    return method


# ---- logspace --------------------------------------------------------------------------

_LOGSPACE_TAIL = (", float base = 10.0, *, Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
                  "torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n")
_LOGSPACE_SIGS = "".join(f" * ({a} start, {b} end, int steps{_LOGSPACE_TAIL}"
                         for a, b in (("Tensor", "Tensor"), ("Number", "Tensor"), ("Tensor", "Number"),
                                      ("Number", "Number")))


def logspace(start, end, steps: int, base: float = 10.0, *, out: Tensor | None = None, dtype=None,  # noqa: PLR0913
             layout=None, device=None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """`steps` values ``base ** e`` for exponents evenly spaced from `start` to `end`, as
    ATen computes them: the exponents in float64 (from the start for the first half,
    from the end for the second; start and end first rounded to the dtype), the power
    in float64, then the dtype (an integer dtype truncates)."""
    given = {k: v for k, v, d in (("out", out, None), ("dtype", dtype, None), ("device", device, None),
                                  ("requires_grad", requires_grad, False)) if v is not d}
    ok = all(isinstance(v, Tensor) or (_is_number(v) and not isinstance(v, bool)) for v in (start, end)) \
        and isinstance(steps, int) and not isinstance(steps, bool) and _is_number(base)
    _check_args("logspace", _LOGSPACE_SIGS, (start, end, steps) if base == 10.0 else (start, end, steps, base),
                given, ok)
    for name, v in (("start", start), ("end", end)):
        if isinstance(v, Tensor) and v.dim() != 0:
            raise RuntimeError(f"logspace only supports 0-dimensional start and end tensors, but got {name} with "
                               f"{v.dim()} dimension(s).")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    from rgrad._tensor import _scalar_type_name

    if dtype is None:
        from rgrad import get_default_dtype

        dtype = get_default_dtype()
    if dtype == _C.bool:
        raise NotImplementedError(f"\"logspace_cpu\" not implemented for '{_scalar_type_name(dtype)}'")
    lo = start.item() if isinstance(start, Tensor) else start
    hi = end.item() if isinstance(end, Tensor) else end
    # (start and end in the result's dtype first, as ATen's Scalar::to<scalar_t>)
    lo = _C.tensor(lo, dtype=dtype).item()
    hi = _C.tensor(hi, dtype=dtype).item()
    f64 = _C.float64
    if steps == 0:
        r = _C.zeros([0], dtype=f64)
    elif steps == 1:
        r = _C.tensor([float(base) ** float(lo)], dtype=f64)
    else:
        # (end - start in the dtype, as ATen subtracts the converted scalars)
        step = (_C.tensor(hi, dtype=dtype) - _C.tensor(lo, dtype=dtype)).item() / (steps - 1)
        i = _C.arange(steps, dtype=f64)
        half = steps // 2
        exps = _C.where(i < half, i * step + lo, (steps - 1 - i) * (-step) + hi)
        r = _C.full([steps], float(base), dtype=f64) ** exps
    r = r.to(dtype)
    if device is not None:
        r = r.to(device)
    if requires_grad:
        r.requires_grad_(True)
    return _finish(r, out)


def _tensor_unique(self: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
                   return_counts: bool = False, dim: int | None = None):
    return unique(self, sorted, return_inverse, return_counts, dim)


def _tensor_unique_consecutive(self: Tensor, return_inverse: bool = False, return_counts: bool = False,
                               dim: int | None = None):
    return unique_consecutive(self, return_inverse, return_counts, dim)


_METHODS = {"unique": _tensor_unique, "unique_consecutive": _tensor_unique_consecutive, "bincount": bincount,
            "histc": histc, "gcd": _int_method(gcd, "gcd"), "lcm": _int_method(lcm, "lcm"),
            "gcd_": _inplace_int(gcd, "gcd_", 1), "lcm_": _inplace_int(lcm, "lcm_", 1),
            "isposinf": isposinf, "isneginf": isneginf, "isreal": isreal}


def install() -> None:
    """The Tensor methods torch has for these (unique, unique_consecutive, bincount,
    histc; torch gives cdist, pdist, searchsorted and bucketize none), also on vmap's
    BatchedTensor; the natives they call are dispatching methods of the BatchedTensor
    (``func/_batching.py``)."""
    from rgrad.func._batched_tensor import BatchedTensor

    for name, fn in _METHODS.items():
        fn.__name__ = fn.__qualname__ = name
        setattr(Tensor, name, fn)
        setattr(BatchedTensor, name, fn)
