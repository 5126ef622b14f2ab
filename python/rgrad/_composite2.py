"""More of torch's composite functions (CompositeImplicitAutograd in ATen), written as the
ops ATen writes them with, so that the recorded nodes, the derivatives and their errors are
those torch gives: ``repeat_interleave``, ``tril_indices``/``triu_indices``, ``diagflat``,
``trapezoid``/``trapz``/``cumulative_trapezoid``, ``combinations``, ``unravel_index``,
``vander``, ``cov``, ``corrcoef`` and the bitwise functions (the ``& | ^ ~`` operators).
``install`` makes the Tensor methods torch has.
"""

from __future__ import annotations

import builtins
from typing import Any, Sequence

from rgrad import _C
from rgrad._C import Tensor
from rgrad._composite import _wrap_dim
from rgrad._tensor import _scalar_type_name

__all__ = [
    "repeat_interleave", "tril_indices", "triu_indices", "diagflat", "trapezoid", "trapz", "cumulative_trapezoid",
    "combinations", "unravel_index", "vander", "cov", "corrcoef", "take",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
]


def _is_integral(t: Tensor, include_bool: bool = False) -> bool:
    return not t.is_floating_point() and (include_bool or t.dtype != _C.bool)


# ---- repeat_interleave -----------------------------------------------------------------


def _repeat_indices(repeats: Tensor) -> Tensor:
    """``repeat_interleave(repeats)``: each index ``i`` repeated ``repeats[i]`` times."""
    if repeats.dim() != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if not _is_integral(repeats):
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for '{_scalar_type_name(repeats.dtype)}'")
    counts = repeats.tolist()
    if any(c < 0 for c in counts):
        raise RuntimeError("repeats can not be negative")
    out = [i for i, c in enumerate(counts) for _ in range(c)]
    return _C.tensor(out, dtype=_C.int64) if out else _C.zeros([0], dtype=_C.int64)


def repeat_interleave(input: Tensor, repeats: Any = None, dim: int | None = None, *,  # noqa: A002
                      output_size: int | None = None) -> Tensor:
    """Repeats each element of `input` `repeats` times along `dim` (of the flattened input
    when `dim` is None). `repeats` is an int or a 0-d/1-d integer tensor; with `input` a
    1-d integer tensor alone, returns the indices ``repeat_interleave(input)`` repeats.

    An int `repeats` is ``unsqueeze``, ``expand`` and a contiguous copy viewed back (as
    ATen), tensor repeats an ``index_select``.
    """
    if repeats is None:
        return _repeat_indices(input)
    if dim is None:
        input = input.flatten()
        d = 0
    else:
        d = _wrap_dim(dim, input.dim())
    if isinstance(repeats, Tensor):
        if repeats.dim() == 0 or (repeats.dim() == 1 and repeats.shape[0] == 1):
            repeats = repeats.reshape(1).expand(input.shape[d] if input.dim() else 1)
        elif repeats.dim() == 1:
            if repeats.shape[0] != input.shape[d]:
                raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                                   f"{repeats.shape[0]} and input.size({d}) = {input.shape[d]}")
        else:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        return input.index_select(d, _repeat_indices(repeats))
    repeats = int(repeats)
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    shape = list(input.shape)
    size = shape[d] if shape else 1
    if output_size is not None and output_size != size * repeats:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {size * repeats} but got {output_size}")
    if input.dim() == 0:
        input = input.reshape(1)
        shape = [1]
    expanded = shape[: d + 1] + [repeats] + shape[d + 1:]
    out_shape = shape[:d] + [shape[d] * repeats] + shape[d + 1:]
    return input.unsqueeze(d + 1).expand(expanded).clone().view(out_shape)


# ---- index factories -----------------------------------------------------------------


def _tri_indices(name: str, row: int, col: int, offset: int, dtype, device, lower: bool) -> Tensor:
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    dtype = dtype if dtype is not None else _C.int64
    if dtype != _C.int64:
        raise NotImplementedError(f"\"{name}\" not implemented for '{_scalar_type_name(dtype)}'")
    r = _C.arange(row, dtype=_C.int64).unsqueeze(1).expand([row, col])
    c = _C.arange(col, dtype=_C.int64).unsqueeze(0).expand([row, col])
    mask = (c - r).le(offset) if lower else (c - r).ge(offset)
    out = _C.stack([r.masked_select(mask), c.masked_select(mask)])
    return out.to(device) if device is not None else out


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None) -> Tensor:
    """The (2, N) indices of the lower triangle of a `row` x `col` matrix (with the
    diagonal `offset`), row by row."""
    return _tri_indices("tril_indices", row, col, offset, dtype, device, True)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None) -> Tensor:
    """The (2, N) indices of the upper triangle of a `row` x `col` matrix (with the
    diagonal `offset`), row by row."""
    return _tri_indices("triu_indices", row, col, offset, dtype, device, False)


def diagflat(input: Tensor, offset: int = 0) -> Tensor:  # noqa: A002
    """A 2-d tensor with the flattened `input` on the diagonal `offset`
    (``input.contiguous().view(-1).diag(offset)``)."""
    return input.contiguous().view(-1).diag(offset)


# ---- integration ---------------------------------------------------------------------


def _zeros_except(y: Tensor, dim: int) -> Tensor:
    shape = list(y.shape)
    del shape[dim]
    return _C.zeros(shape, dtype=y.dtype)


def _slice(t: Tensor, dim: int, start: int | None, stop: int | None) -> Tensor:
    """``t`` sliced ``start:stop`` along ``dim`` (ATen's slice: clamped, SliceBackward0)."""
    return t[(slice(None),) * dim + (slice(start, stop),)]


def _x_steps(name: str, y: Tensor, x: Tensor, dim: int) -> Tensor:
    """ATen's trapezoid/cumulative_trapezoid: the spacing ``x[1:] - x[:-1]`` along `dim`,
    with a 1-d `x` viewed along `dim` and a lower-dim `x` padded with leading 1s."""
    if x.dim() == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        sizes = [1] * y.dim()
        sizes[dim] = x.shape[0]
        xv = x.view(sizes)
    elif x.dim() < y.dim():
        xv = x.view([1] * (y.dim() - x.dim()) + list(x.shape))
    else:
        xv = x
    return _slice(xv, dim, 1, None) - _slice(xv, dim, 0, -1)


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """The trapezoidal rule along `dim`: samples `y` at the points `x` (a tensor) or spaced
    `dx` apart (1 by default)."""
    d = _wrap_dim(dim, y.dim())
    if y.shape[d] == 0:
        return _zeros_except(y, d)
    if y.dtype == _C.bool:
        raise NotImplementedError("trapezoid: received a bool input for `y`, but bool is not supported")
    if x is not None:
        if not isinstance(x, Tensor):
            return trapezoid(y, dx=x, dim=dim)
        if x.dtype == _C.bool:
            raise NotImplementedError("trapezoid: received a bool input for `x`, but bool is not supported")
        step = _x_steps("trapezoid", y, x, d)
        return ((_slice(y, d, 0, -1) + _slice(y, d, 1, None)) * step).sum(d) / 2.0
    dx = 1 if dx is None else dx
    return (y.sum(d) - (y.select(d, 0) + y.select(d, -1)) * 0.5) * dx


def trapz(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """Alias for `trapezoid`."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """The cumulative trapezoidal rule along `dim` (one fewer element there than `y`)."""
    d = _wrap_dim(dim, y.dim())
    if y.dtype == _C.bool:
        raise NotImplementedError("cumulative_trapezoid: received a bool input for `y`, but bool is not supported")
    left, right = _slice(y, d, 0, -1), _slice(y, d, 1, None)
    if x is not None and isinstance(x, Tensor):
        if x.dtype == _C.bool:
            raise NotImplementedError("cumulative_trapezoid: received a bool input for `x`, but bool is not supported")
        step = _x_steps("cumulative_trapezoid", y, x, d)
        return ((left + right) * step).cumsum(d) / 2.0
    if x is not None:
        dx = x
    dx = 1 if dx is None else dx
    return (dx / 2.0 * (left + right)).cumsum(d)


# ---- combinations, unravel_index, vander -----------------------------------------------


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:  # noqa: A002
    """The length-`r` combinations of the elements of the 1-d `input` (with repeats when
    `with_replacement`), one per row, as ``itertools.combinations`` orders them."""
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _C.empty([0], dtype=input.dtype)
    import itertools

    n = input.shape[0]
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = [list(c) for c in pick(range(n), r)]
    index = _C.tensor(rows, dtype=_C.int64) if rows else _C.zeros([0, r], dtype=_C.int64)
    return input[index]


def unravel_index(indices: Tensor, shape) -> tuple[Tensor, ...]:
    """The coordinates in an array of shape `shape` of the flat `indices` (a tuple of
    tensors shaped like `indices`, one per dim)."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"expected 'indices' to be a tensor, but got {type(indices)}")
    if not _is_integral(indices):
        raise TypeError(f"expected 'indices' to be integer dtype, but got {str(indices.dtype)}")
    if isinstance(shape, int):
        dims = [shape]
    elif isinstance(shape, Sequence):
        for d in shape:
            if not isinstance(d, int):
                raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(d)}")
        dims = list(shape)
    else:
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    if any(d < 0 for d in dims):
        raise ValueError(f"'shape' cannot have negative values, but got {tuple(dims)}")
    if not dims:
        return ()
    coefs = []
    acc = 1
    for d in reversed(dims[1:] + [1]):
        acc *= d
        coefs.append(acc)
    coefs.reverse()
    out = indices.unsqueeze(-1).floor_divide(_C.tensor(coefs, dtype=_C.int64)) % _C.tensor(dims, dtype=_C.int64)
    return tuple(out.unbind(-1))


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803
    """The Vandermonde matrix of the 1-d `x`: columns ``x**(N-1), ..., x**0`` (increasing
    powers when `increasing`), written as ATen does (a cumulative product of the powers)."""
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dtype = x.dtype if x.is_floating_point() else _C.int64
    result = _C.empty([x.shape[0], n], dtype=dtype)
    if n > 0:
        result.fill_(1)
        if n > 1:
            result[:, 1:].copy_(x.unsqueeze(1))
            result[:, 1:].copy_(result[:, 1:].cumprod(1))
    return result.flip([1]) if not increasing else result


# ---- statistics ----------------------------------------------------------------------


def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,  # noqa: A002
        aweights: Tensor | None = None) -> Tensor:
    """The covariance matrix of the variables in the rows of `input` (observations in its
    columns), with frequency and observation weights; ATen's algorithm and errors."""
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    if input.dtype == _C.bool:
        raise NotImplementedError("cov(): bool dtype is not supported for input")
    x = input.view([1, -1]) if input.dim() < 2 else input
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights
        if w.dim() > 1:
            raise RuntimeError(f"cov(): expected fweights to have one or fewer dimensions but got fweights with "
                               f"{w.dim()} dimensions")
        if not _is_integral(w):
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with "
                               f"{_scalar_type_name(w.dtype)} dtype")
        if w.numel() != n:
            raise RuntimeError(f"cov(): expected fweights to have the same numel as there are observations in the "
                               f"input but got {w.numel()} != {n}")
        if n != 0 and not builtins.bool(w.min().ge(0)):
            raise RuntimeError("cov(): fweights cannot be negative")
    if aweights is not None:
        aw = aweights
        if aw.dim() > 1:
            raise RuntimeError(f"cov(): expected aweights to have one or fewer dimensions but got aweights with "
                               f"{aw.dim()} dimensions")
        if not aw.is_floating_point():
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got aweights with "
                               f"{_scalar_type_name(aw.dtype)} dtype")
        if aw.numel() != n:
            raise RuntimeError(f"cov(): expected aweights to have the same numel as there are observations in the "
                               f"input but got {aw.numel()} != {n}")
        if n != 0 and not builtins.bool(aw.min().ge(0)):
            raise RuntimeError("cov(): aweights cannot be negative")
        w = w * aw if w is not None else aw
    w_sum = w.sum() if w is not None else _C.tensor(n, dtype=_C.int64)
    if w is not None and not builtins.bool(w_sum.ne(0)):
        raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = (x * w if w is not None else x).sum(1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        norm_factor = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm_factor = w_sum - correction
    if builtins.bool(norm_factor.le(0)):
        import warnings

        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm_factor = norm_factor * 0
    x = x - avg.unsqueeze(1)
    c = x.mm((x * w if w is not None else x).t())
    return c.div(norm_factor).squeeze()


def corrcoef(input: Tensor) -> Tensor:  # noqa: A002
    """The Pearson correlation coefficients of the variables in the rows of `input`
    (``cov`` normalized by the standard deviations, clipped to [-1, 1])."""
    if input.dim() > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    c = cov(input)
    if c.dim() == 0:
        return c / c
    stddev = c.diagonal().sqrt()
    c = c / stddev.view([-1, 1])
    c = c / stddev.view([1, -1])
    return c.clip(-1, 1)


# ---- ops with a node of their own in torch (TakeBackward0; dist is native: src/ops/linalg.rs) ----


def _named_function(node_name: str, op):
    """A custom Function computing ``op(*args)`` whose node carries torch's name; its
    backward differentiates ``op`` at the saved inputs, recorded under ``create_graph`` (so
    that higher derivatives are those of the ops ``op`` is made of)."""
    from rgrad.autograd import Function

    def forward(ctx, *args):
        ctx.args = args
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        return op(*args)

    def backward(ctx, grad):
        import rgrad

        create = rgrad.is_grad_enabled()  # (the engine's create_graph)
        saved = iter(ctx.saved_tensors)
        args, inputs, wanted = [], [], []
        for i, a in enumerate(ctx.args):
            if isinstance(a, Tensor):
                t = next(saved)
                need = bool(ctx.needs_input_grad[i])
                if not create:
                    t = t.detach().requires_grad_(need)
                if need:
                    inputs.append(t)
                    wanted.append(i)
                a = t
            args.append(a)
        grads: list[Any] = [None] * len(ctx.args)
        if inputs:
            with rgrad.enable_grad():
                out = op(*args)
                if out.requires_grad:
                    got = rgrad.autograd.grad(out, inputs, grad, create_graph=create, allow_unused=True)
                else:  # (an output that does not require grad: a zero derivative)
                    got = tuple(t.new_zeros(t.shape) for t in inputs)
            for i, g in zip(wanted, got):
                grads[i] = g
        return tuple(grads)

    cls: Any = type(f"_{node_name}", (Function,),
                    {"forward": staticmethod(forward), "backward": staticmethod(backward)})
    cls._backward_cls.__name__ = cls._backward_cls.__qualname__ = node_name
    return cls


def _take(input: Tensor, index: Tensor) -> Tensor:  # noqa: A002
    flat = index.reshape(-1)
    if flat.numel():
        flat = flat.remainder(input.numel())  # (checked in [-numel, numel))
    return input.reshape(-1).index_select(0, flat).view(list(index.shape))


_Take = _named_function("TakeBackward0", _take)


def take(input: Tensor, index: Tensor) -> Tensor:  # noqa: A002
    """The elements of `input`, as if flattened, at the (long) `index`; the result has the
    shape of `index`. Recorded as torch's TakeBackward0."""
    if not isinstance(index, Tensor):
        raise TypeError(f"take(): argument 'index' (position 2) must be Tensor, not {type(index).__name__}")
    if index.dtype != _C.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {_scalar_type_name(index.dtype)}")
    n = input.numel()
    if n == 0 and index.numel():
        raise IndexError("take(): tried to take from an empty tensor")
    if index.numel():
        lo, hi = int(index.min()), int(index.max())
        for v in (lo, hi):
            if not -n <= v < n:
                raise IndexError(f"out of range: tried to access index {v} on a tensor of {n} elements.")
    import rgrad

    if rgrad.is_grad_enabled() and input.requires_grad:
        return _Take.apply(input, index)
    return _take(input, index)




# ---- bitwise ---------------------------------------------------------------------------


def _broadcast_shape(a, b) -> list[int]:
    a, b = list(a), list(b)
    n = builtins.max(len(a), len(b))
    a, b = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton "
                               f"dimension {i}")
        out.append(y if x == 1 else x)
    return out


def _binary_bitwise(name: str, op: str):
    def function(input, other) -> Tensor:  # noqa: A002
        if isinstance(input, Tensor):
            return getattr(input, op)(other)
        if isinstance(other, Tensor):
            return getattr(other, "__r" + op[2:])(input)
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")

    def inplace(self: Tensor, other) -> Tensor:
        from rgrad._aliases import _check_cast, _check_out_shape

        if isinstance(other, Tensor):  # torch's shape check comes before the dtype's
            _check_out_shape(self, _C.empty(_broadcast_shape(self.shape, other.shape), dtype=_C.bool))
        out = getattr(self, op)(other)
        _check_cast(out.dtype, self)
        _check_out_shape(self, out)
        return self.copy_(out)

    function.__name__ = function.__qualname__ = name
    symbol = {"__and__": "&", "__or__": "|", "__xor__": "^"}[op]
    function.__doc__ = f"Element-wise ``input {symbol} other`` of integer or bool tensors."
    inplace.__name__ = inplace.__qualname__ = name + "_"
    inplace.__doc__ = f"In-place version of `{name}`."
    return function, inplace


bitwise_and, _bitwise_and_ = _binary_bitwise("bitwise_and", "__and__")
bitwise_or, _bitwise_or_ = _binary_bitwise("bitwise_or", "__or__")
bitwise_xor, _bitwise_xor_ = _binary_bitwise("bitwise_xor", "__xor__")


def bitwise_not(input: Tensor) -> Tensor:  # noqa: A002
    """Element-wise ``~input`` of an integer or bool tensor."""
    if not isinstance(input, Tensor):
        raise TypeError(f"bitwise_not(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.is_floating_point():
        raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for '{_scalar_type_name(input.dtype)}'")
    return ~input


def _bitwise_not_(self: Tensor) -> Tensor:
    return self.copy_(bitwise_not(self))


_METHODS = {
    "repeat_interleave": repeat_interleave, "diagflat": diagflat, "cov": cov, "corrcoef": corrcoef,
    "take": take,
    "bitwise_and": bitwise_and, "bitwise_or": bitwise_or, "bitwise_xor": bitwise_xor, "bitwise_not": bitwise_not,
    "bitwise_and_": _bitwise_and_, "bitwise_or_": _bitwise_or_, "bitwise_xor_": _bitwise_xor_,
    "bitwise_not_": _bitwise_not_,
}


def install() -> None:
    """The Tensor methods torch has for these (and on vmap's BatchedTensor, where they
    decompose into the batched ops they are made of)."""
    from rgrad.func._batched_tensor import BatchedTensor

    for name, fn in _METHODS.items():
        setattr(Tensor, name, fn)
        setattr(BatchedTensor, name, fn)
