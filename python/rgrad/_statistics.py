"""``quantile`` and ``nanquantile``, as torch composes them (ATen's ``quantile_impl``): the
input sorted along the reduced dim, each q turned into a fractional rank, the values at the
ranks below and above gathered and interpolated. The gradient therefore flows through
torch's own nodes (SortBackward0, GatherBackward0, LerpBackward1), and the result's
``grad_fn`` is the in-place squeeze torch ends with (SqueezeBackward4).
"""

from __future__ import annotations

import builtins
import numbers

import rgrad
from rgrad import _C
from rgrad._C import Tensor

__all__ = ["quantile", "nanquantile"]

_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _impl(self: Tensor, q, dim, keepdim: builtins.bool, interpolation: str, ignore_nan: builtins.bool,
          name: str) -> Tensor:
    if not isinstance(self, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(self).__name__}")
    if not isinstance(q, Tensor):
        if isinstance(q, builtins.bool) or not isinstance(q, numbers.Real):
            raise TypeError(f"{name}(): argument 'q' (position 2) must be Tensor, not {type(q).__name__}")
        q = builtins.float(q)
        if not 0 <= q <= 1:
            # (the number as C++'s ostream prints a double: %g)
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q:g}")
        q = rgrad.scalar_tensor(q, dtype=self.dtype)
    if dim is not None and (isinstance(dim, builtins.bool) or not isinstance(dim, numbers.Integral)):
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    if interpolation not in _MODES:
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    nd = self.dim()
    d = _wrap_dim(0 if dim is None else builtins.int(dim), nd)
    if self.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if q.dim() > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if self.dtype not in (_C.float32, _C.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if q.dtype != self.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    if q.device != self.device:
        raise RuntimeError("quantile() q tensor must be on the same device as the input tensor")

    # the result's shape: q's count, then the reduced shape
    if dim is not None and nd > 0:
        out_shape = list(self.shape)
        if keepdim:
            out_shape[d] = 1
        else:
            del out_shape[d]
    elif keepdim:
        out_shape = [1] * nd
    else:
        out_shape = []
    if q.dim() > 0:
        out_shape.insert(0, q.numel())
    if not _in_unit_range(q):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")

    # the reduced dim last, sorted
    if dim is None:
        ordered = self.flatten().sort()[0]
    elif d == nd - 1:
        ordered = self.sort()[0]
    else:
        ordered = self.unsqueeze(-1).transpose(d, -1).sort()[0]
    if q.dim() == 0:
        out_shape.insert(0, 1)  # (q as one element from here on)
    ordered = ordered.view(*out_shape[1:], ordered.shape[-1])
    n = ordered.shape[-1]
    if n > 2 ** 24:
        raise RuntimeError("quantile() input tensor is too large")

    # q in [0, 1] to a rank in [0, n), in float64 whatever the dtype (as torch 2.15: a
    # float32 q of 0.1 over 6 elements is rank 0.50000000745, which 'nearest' rounds up):
    # NaN slices pick the last element (quantile) or rank among their non-NaN elements
    # (nanquantile, rank 0 when all are NaN)
    nans = ordered.isnan()
    q = q.to(_C.float64)
    if ignore_nan:
        ranks = q * (nans.logical_not().sum(-1, keepdim=True) - 1)
        ranks = ranks.masked_fill(ranks < 0, 0)
    else:
        ranks, has_nan = rgrad.broadcast_tensors(q * (n - 1), nans.any(-1, keepdim=True))
        ranks = ranks.masked_fill(has_nan, n - 1)
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()  # (half to even, as torch's round_)
    below = ranks.to(_C.int64)
    values = ordered.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        weights = rgrad.full_like(ranks, 0.5) if interpolation == "midpoint" else ranks - below
        weights = weights.to(self.dtype)
        values_above = ordered.gather(-1, ranks.ceil().to(_C.int64))
        values.lerp_(values_above, weights)
    if q.dim() == 0:
        return values.squeeze_(-1)
    return values.unsqueeze_(0).transpose_(0, -1).squeeze_(-1)


def _in_unit_range(q: Tensor) -> builtins.bool:
    """Whether every value of q is in [0, 1]: under vmap, of every sample (the physical
    value beneath the batching layers, as torch checks q's data whatever wraps it)."""
    while type(q).__name__ == "BatchedTensor":
        q = q._value
    return builtins.bool(((q.detach() >= 0) & (q.detach() <= 1)).all())


def _wrap_dim(dim: int, nd: int) -> int:
    lo, hi = (-1, 0) if nd == 0 else (-nd, nd - 1)
    if not lo <= dim <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
    return dim % builtins.max(nd, 1)


def quantile(input: Tensor, q, dim: int | None = None, keepdim: builtins.bool = False, *,
             interpolation: str = "linear") -> Tensor:
    r"""quantile(input, q, dim=None, keepdim=False, *, interpolation='linear') -> Tensor

    The q-th quantiles of ``input`` (all elements, or each slice along ``dim``): a q of
    several values gives them along a new first dim. ``interpolation`` chooses the value
    between the two elements around a fractional rank: ``linear``, ``lower``,
    ``higher``, ``midpoint`` or ``nearest``. A slice with NaN gives NaN.
    """
    return _impl(input, q, dim, keepdim, interpolation, False, "quantile")


def nanquantile(input: Tensor, q, dim: int | None = None, keepdim: builtins.bool = False, *,
                interpolation: str = "linear") -> Tensor:
    r"""nanquantile(input, q, dim=None, keepdim=False, *, interpolation='linear') -> Tensor

    :func:`quantile` of the non-NaN elements (NaN where a slice has none).
    """
    return _impl(input, q, dim, keepdim, interpolation, True, "nanquantile")


def _quantile_method(self: Tensor, q, dim: int | None = None, keepdim: builtins.bool = False, *,
                     interpolation: str = "linear") -> Tensor:
    return _impl(self, q, dim, keepdim, interpolation, False, "quantile")


def _nanquantile_method(self: Tensor, q, dim: int | None = None, keepdim: builtins.bool = False, *,
                        interpolation: str = "linear") -> Tensor:
    return _impl(self, q, dim, keepdim, interpolation, True, "nanquantile")


_METHODS = {"quantile": _quantile_method, "nanquantile": _nanquantile_method}


def install() -> None:
    """``Tensor.quantile`` and ``Tensor.nanquantile``, also on vmap's BatchedTensor (made of
    ops that each have a batching rule)."""
    from rgrad.func._batched_tensor import BatchedTensor

    for name, fn in _METHODS.items():
        fn.__name__ = fn.__qualname__ = name
        setattr(Tensor, name, fn)
        setattr(BatchedTensor, name, fn)
