"""Activations, special functions, losses, windows and histograms (helper-45).

* torch's activations with a node of their own (threshold, hardshrink, softshrink, elu /
  celu / selu, hardtanh / relu6, leaky_relu, gelu, silu, mish, softplus, hardsigmoid,
  hardswish, logsigmoid, rrelu in eval mode, prelu) call ``_C._activation`` /
  ``_C._activation_`` / ``_C._prelu_kernel`` (``src/ops/activation.rs``: torch's node
  names, ``_saved_*`` fields and derivatives); ``softsign`` and ``tanhshrink`` are
  composites in torch and here;
* ``mvlgamma`` and ``angle`` (real tensors) are natives of the same module; ``rsub`` is
  the arithmetic table's row (``src/py/activation.rs``);
* ``kl_div``, ``gradient``, the window functions (bartlett, blackman, hamming, hann) and
  ``histogram`` are composites of existing ops, written in the order ATen computes them
  (so the same bits).
"""

from __future__ import annotations

import builtins
import math
import numbers
import warnings

from rgrad import _C
from rgrad._C import Tensor
from rgrad._vmap_check import is_batched

__all__ = ["rsub", "threshold", "threshold_", "hardshrink", "celu", "celu_", "selu", "selu_", "prelu", "rrelu",
           "rrelu_", "mvlgamma", "angle", "kl_div", "gradient", "bartlett_window", "blackman_window",
           "hamming_window", "hann_window", "histogram", "i0", "i0_", "igamma", "igammac", "kaiser_window"]

# F.selu's constants (ATen's SELU_ALPHA, SELU_SCALE)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _tensor(fn: str, x, name: str = "input", pos: int = 1) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not {type(x).__name__}")
    return x


def _number(fn: str, v, name: str, pos: int):
    if type(v) is float or type(v) is int:
        return v
    if not isinstance(v, numbers.Number) or isinstance(v, complex):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Number, not {type(v).__name__}")
    return v


_batched = is_batched


def _native(name: str, fn: str, x, *args) -> Tensor:
    """``_C.<name>(x, *args)``; vmap's BatchedTensors go through the batching rule
    (``func/_batching.py``)."""
    if _batched(x, *args):  # (first: a BatchedTensor passes isinstance(x, Tensor))
        from rgrad.func._batched_tensor import dispatch

        return dispatch(name, (x, *args), {})
    return getattr(_C, name)(_tensor(fn, x), *args)


def rsub(input: Tensor, other, *, alpha=1) -> Tensor:  # noqa: A002
    """``other - alpha * input`` (RsubBackward0; a number ``other``: RsubBackward1), the
    arithmetic table's row (``_C.rsub``); under vmap, the batching rules of sub and mul."""
    if _batched(input, other):
        if isinstance(other, numbers.Number):
            return (input if alpha == 1 else input * alpha).__rsub__(other)
        return other.sub(input, alpha=alpha)
    return _C.rsub(input, other, alpha=alpha)


def _act(fn: str, x, kind: str, params: list, inplace: bool = False) -> Tensor:
    return _native("_activation_" if inplace else "_activation", fn, x, kind, params)


# ---- activations -----------------------------------------------------------------------


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:  # noqa: A002
    """``value`` where ``input <= threshold``, else ``input`` (ThresholdBackward0)."""
    _number("threshold", threshold, "threshold", 2)
    _number("threshold", value, "value", 3)
    return _act("threshold", input, "threshold", [threshold, value], inplace)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:  # noqa: A002
    """In-place :func:`threshold` (ThresholdBackward1)."""
    return globals()["threshold"](input, threshold, value, inplace=True)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """0 where ``-lambd <= input <= lambd``, else ``input`` (HardshrinkBackward0)."""
    return _act("hardshrink", input, "hardshrink", [_number("hardshrink", lambd, "lambd", 2)])


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """``input`` moved ``lambd`` towards 0, 0 within ``[-lambd, lambd]`` (SoftshrinkBackward0)."""
    return _act("softshrink", input, "softshrink", [_number("softshrink", lambd, "lambd", 2)])


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """``alpha * (exp(x) - 1)`` for ``x <= 0``, else ``x`` (EluBackward0; in place EluBackward1)."""
    return _act("elu", input, "elu", [alpha, 1, 1], inplace)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:  # noqa: A002
    """In-place :func:`elu`."""
    return elu(input, alpha, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """``alpha * (exp(x / alpha) - 1)`` for ``x <= 0``, else ``x`` (CeluBackward0)."""
    return _act("celu", input, "celu", [alpha], inplace)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:  # noqa: A002
    """In-place :func:`celu` (CeluBackward1)."""
    return celu(input, alpha, inplace=True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``scale * elu(x, alpha)`` with torch's constants (EluBackward0)."""
    return _act("selu", input, "elu", [_SELU_ALPHA, _SELU_SCALE, 1], inplace)


def selu_(input: Tensor) -> Tensor:  # noqa: A002
    """In-place :func:`selu` (EluBackward1)."""
    return selu(input, inplace=True)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,  # noqa: A002
             inplace: bool = False) -> Tensor:
    """``input`` clamped to ``[min_val, max_val]`` (HardtanhBackward0)."""
    return _act("hardtanh", input, "hardtanh", [min_val, max_val], inplace)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:  # noqa: A002
    """In-place :func:`hardtanh`."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``min(max(x, 0), 6)``: torch's ``hardtanh(x, 0, 6)`` (HardtanhBackward0)."""
    return _act("relu6", input, "hardtanh", [0, 6], inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x`` for ``x > 0``, else ``negative_slope * x`` (LeakyReluBackward0; in place 1)."""
    return _act("leaky_relu", input, "leaky_relu", [negative_slope], inplace)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:  # noqa: A002
    """In-place :func:`leaky_relu` (LeakyReluBackward1)."""
    return leaky_relu(input, negative_slope, inplace=True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:  # noqa: A002
    """``x * Φ(x)``, or its tanh approximation with ``approximate='tanh'`` (GeluBackward0)."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _act("gelu", input, "gelu", [int(approximate == "tanh")])


def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x * sigmoid(x)`` (SiluBackward0)."""
    return _act("silu", input, "silu", [], inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x * tanh(softplus(x))`` (MishBackward0)."""
    return _act("mish", input, "mish", [], inplace)


def softplus(input: Tensor, beta: float = 1, threshold: float = 20) -> Tensor:  # noqa: A002
    """``log(1 + exp(beta * x)) / beta``, ``x`` where ``beta * x > threshold`` (SoftplusBackward0)."""
    return _act("softplus", input, "softplus", [_number("softplus", beta, "beta", 2),
                                                  _number("softplus", threshold, "threshold", 3)])


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``clamp(x + 3, 0, 6) / 6`` (HardsigmoidBackward0)."""
    return _act("hardsigmoid", input, "hardsigmoid", [], inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x * clamp(x + 3, 0, 6) / 6`` (HardswishBackward0)."""
    return _act("hardswish", input, "hardswish", [], inplace)


def logsigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """``log(sigmoid(x))``, computed stably (LogSigmoidBackward0)."""
    return _act("logsigmoid", input, "log_sigmoid", [])


def softsign(input: Tensor) -> Tensor:  # noqa: A002
    """``x / (1 + |x|)`` (a composite in torch: DivBackward0)."""
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:  # noqa: A002
    """``x - tanh(x)`` (a composite in torch: SubBackward0)."""
    return input - input.tanh()


def prelu(input: Tensor, weight: Tensor) -> Tensor:  # noqa: A002
    """``x`` for ``x > 0``, else ``weight * x``; a weight of more than one element is per
    channel (dim 1). torch's composite: the weight viewed to ``[1, C, 1, ...]``, then
    ``_prelu_kernel`` (PreluKernelBackward0)."""
    n = weight.numel()
    nd = input.dim()
    if n != 1:
        if nd == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        c = input.shape[1] if nd >= 2 else 1
        if n != c:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{n} and channel size = {c}.")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    w = weight
    if nd != weight.dim():  # (ATen: the weight viewed to [1, C, 1, ...], of the input's rank)
        shape = [1] * nd
        if nd > 1:
            shape[1] = n
        w = weight.reshape(shape)
    return _native("_prelu_kernel", "prelu", input, w)


def _rrelu_noise(input: Tensor, lower, upper, generator) -> Tensor:
    """rrelu's slopes in training mode, drawn as torch's kernel draws them: for each
    element <= 0 in row-major order one ``uniform_real_distribution<double>(lower, upper)``
    sample (the bounds first rounded to the input's dtype), cast to the dtype; 1 elsewhere."""
    import struct

    import rgrad

    lo, hi = float(lower), float(upper)
    if input.dtype == rgrad.float32:
        lo, hi = (struct.unpack("f", struct.pack("f", v))[0] for v in (lo, hi))
    with rgrad.no_grad():
        x = input.detach()
        mask = x <= 0
        k = int(mask.sum())
        noise = rgrad.ones_like(x)
        if k:
            r = rgrad.empty(k, dtype=rgrad.float64).uniform_(lo, hi, generator=generator)
            noise[mask] = r.to(x.dtype)
    return noise


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,  # noqa: A002
          inplace: bool = False, generator=None) -> Tensor:
    """Randomized leaky ReLU (RreluWithNoiseBackward0). Eval mode (``training=False``, the
    default): ``leaky_relu`` with the slope ``(lower + upper) / 2``. Training mode: each
    element <= 0 times a slope drawn uniformly from ``[lower, upper)`` from torch's stream
    of the (default) generator, the gradient ``g·slope``."""
    if training:
        if _batched(input):
            raise NotImplementedError("rgrad: rrelu with training=True under vmap (random slopes per sample)")
        _tensor("rrelu", input)
        if not input.is_floating_point():
            from rgrad._tensor import _scalar_type_name

            raise NotImplementedError(f"\"rrelu_with_noise_out_cpu\" not implemented for "
                                      f"'{_scalar_type_name(input.dtype)}'")
        noise = _rrelu_noise(input, lower, upper, generator)
        return _C._rrelu_with_noise(input, noise, [lower, upper], inplace)
    return _act("rrelu", input, "rrelu_eval", [lower, upper], inplace)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,  # noqa: A002
           generator=None) -> Tensor:
    """In-place :func:`rrelu` (RreluWithNoiseBackward1)."""
    return rrelu(input, lower, upper, training, inplace=True, generator=generator)


# ---- special functions -----------------------------------------------------------------


def mvlgamma(input: Tensor, p: int) -> Tensor:  # noqa: A002
    """The multivariate log-gamma function of dimension ``p`` (MvlgammaBackward0): every
    element must be greater than ``(p - 1) / 2``."""
    if isinstance(p, bool) or not isinstance(p, int):
        raise TypeError(f"mvlgamma(): argument 'p' (position 2) must be int, not {type(p).__name__}")
    return _act("mvlgamma", input, "mvlgamma", [p])


def _mvlgamma_(self: Tensor, p: int) -> Tensor:
    if isinstance(p, bool) or not isinstance(p, int):
        raise TypeError(f"mvlgamma_(): argument 'p' (position 1) must be int, not {type(p).__name__}")
    return _act("mvlgamma_", self, "mvlgamma", [p], inplace=True)


def angle(input: Tensor) -> Tensor:  # noqa: A002
    """The angle of each element: π for a negative real number, 0 otherwise (NaN kept);
    integers and bools give float32 (AngleBackward0, a zero gradient)."""
    return _act("angle", input, "angle", [])


def i0(input: Tensor) -> Tensor:  # noqa: A002
    """The zeroth-order modified Bessel function of the first kind (I0Backward0; integers
    and bools give float32). Cephes' expansion as ATen computes it."""
    return _act("i0", input, "i0", [])


def i0_(input: Tensor) -> Tensor:  # noqa: A002
    """In-place :func:`i0` (I0Backward0)."""
    return _act("i0_", input, "i0", [], inplace=True)


def _special(kind: str, name: str):
    def fn(input: Tensor) -> Tensor:  # noqa: A002
        return _act(name, input, kind, [])

    fn.__name__ = fn.__qualname__ = name
    return fn


special_i0e = _special("i0e", "special_i0e")
special_i1 = _special("i1", "special_i1")
special_i1e = _special("i1e", "special_i1e")
special_i0e.__doc__ = "exp(-|x|)·I0(x), the exponentially scaled i0 (SpecialI0EBackward0)."
special_i1.__doc__ = "The first-order modified Bessel function of the first kind (SpecialI1Backward0)."
special_i1e.__doc__ = "exp(-|x|)·I1(x), the exponentially scaled i1 (SpecialI1EBackward0)."


def _pair(fn: str, input, other):  # noqa: A002
    _tensor(fn, input)
    _tensor(fn, other, "other", 2)


def igamma(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The regularized lower incomplete gamma function P(input, other), broadcast
    (IgammaBackward0: a gradient for ``other`` only, torch's error for ``input``)."""
    _pair("igamma", input, other)
    return _C._igamma(input, other, False)


def igammac(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P
    (IgammacBackward0)."""
    _pair("igammac", input, other)
    return _C._igamma(input, other, True)


def _tensor_igamma_(self: Tensor, other: Tensor) -> Tensor:
    _pair("igamma_", self, other)
    return _C._igamma_(self, other, False)


def _tensor_igammac_(self: Tensor, other: Tensor) -> Tensor:
    _pair("igammac_", self, other)
    return _C._igamma_(self, other, True)


# ---- kl_div ----------------------------------------------------------------------------

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _torch_kl_div(input: Tensor, target: Tensor, reduction: int = 0, *, log_target: bool = False) -> Tensor:  # noqa: A002
    """``torch.kl_div``: ATen's composite, the pointwise loss then the reduction (an enum:
    0 none, 1 mean, 2 sum; torch's Python binding leaves the pointwise loss unreduced when
    none is given)."""
    _tensor("kl_div", input, "self", 1)
    _tensor("kl_div", target, "target", 2)
    if log_target:
        out = target.exp() * (target - input)
    else:
        out = target.xlogy(target) - target * input
    if reduction == 1:
        return out.mean()
    if reduction == 2:
        return out.sum()
    return out


def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None,  # noqa: A002
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """torch.nn.functional.kl_div: the pointwise KL divergence of ``target`` from ``input``
    (log-probabilities; ``target`` too with ``log_target``), reduced: 'mean' (torch's
    warning: it divides by the number of elements), 'batchmean' (by the batch size),
    'sum' or 'none'; ``size_average`` and ``reduce`` are deprecated (torch's warning)."""
    if size_average is not None or reduce is not None:
        sa = True if size_average is None else size_average
        rd = True if reduce is None else reduce
        legacy = "mean" if sa and rd else ("sum" if rd else "none")
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{legacy}' instead.",
                      stacklevel=2)
        enum = _REDUCTIONS[legacy]
    else:
        if reduction == "mean":
            warnings.warn(
                "reduction: 'mean' divides the total loss by both the batch size and the support size."
                "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                stacklevel=2,
            )
        if reduction == "batchmean":
            enum = 2
        elif reduction == "elementwise_mean":
            warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
                          stacklevel=2)
            enum = 1
        elif reduction in _REDUCTIONS:
            enum = _REDUCTIONS[reduction]
        else:
            raise ValueError(f"{reduction} is not a valid value for reduction")
    reduced = _torch_kl_div(input, target, enum, log_target=log_target)
    if reduction == "batchmean" and input.dim() != 0:
        reduced = reduced / input.size()[0]
    return reduced


# ---- gradient --------------------------------------------------------------------------


def _slice(x: Tensor, d: int, start=None, stop=None) -> Tensor:
    idx = [slice(None)] * x.dim()
    idx[d] = slice(start, stop)
    return x[tuple(idx)]


def gradient(input: Tensor, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:  # noqa: A002, C901
    """Estimates the derivative of ``input`` along ``dim`` (every dim by default) with
    second-order central differences inside and first- or second-order (``edge_order``)
    one-sided differences at the ends; ``spacing``: a number (for every dim), a list of
    numbers (one per dim) or a list of 1-D coordinate tensors. One tensor per dim, as
    ATen's composite computes it."""
    _tensor("gradient", input, "self", 1)
    nd = input.dim()
    if dim is None:
        dims = list(range(nd))
    elif isinstance(dim, int):
        dims = [dim]
    else:
        dims = list(dim)
    wrapped = []
    for d in dims:
        if not -builtins.max(nd, 1) <= d < builtins.max(nd, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})")
        wrapped.append(d % builtins.max(nd, 1))
    if isinstance(spacing, (list, tuple)):
        spacing = list(spacing)
        if len(spacing) != len(dims):
            raise RuntimeError(
                f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length equal to "
                f"'self.dim() = {nd}', since dim argument was not given, but got a list of length {len(spacing)}"
                if dim is None else
                f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim arguments "
                f"to have the same length, but got a spacing argument of length {len(spacing)} and a dim argument "
                f"of length {len(dims)}.")
    else:
        spacing = [spacing] * len(dims)
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    for d in wrapped:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    out = []
    for d, h in zip(wrapped, spacing):
        x = input
        if isinstance(h, Tensor):
            shape = [1] * nd
            shape[d] = -1
            ax_dx = h.diff(1, 0)
            dx1 = ax_dx[:-1]
            dx2 = ax_dx[1:]
            a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
            b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
            c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
            center = a * _slice(x, d, 0, -2) + b * _slice(x, d, 1, -1) + c * _slice(x, d, 2)
            if edge_order == 1:
                prepend = (_slice(x, d, 1, 2) - _slice(x, d, 0, 1)) / ax_dx[0]
                append = (_slice(x, d, -1) - _slice(x, d, -2, -1)) / ax_dx[-1]
            else:
                a = -(2.0 * ax_dx[0] + ax_dx[1]) / (ax_dx[0] * (ax_dx[0] + ax_dx[1]))
                b = (ax_dx[0] + ax_dx[1]) / (ax_dx[0] * ax_dx[1])
                c = (-ax_dx[0]) / (ax_dx[1] * (ax_dx[0] + ax_dx[1]))
                prepend = a * _slice(x, d, 0, 1) + b * _slice(x, d, 1, 2) + c * _slice(x, d, 2, 3)
                a = ax_dx[-1] / (ax_dx[-2] * (ax_dx[-1] + ax_dx[-2]))
                b = -(ax_dx[-1] + ax_dx[-2]) / (ax_dx[-1] * ax_dx[-2])
                c = (2 * ax_dx[-1] + ax_dx[-2]) / (ax_dx[-1] * (ax_dx[-1] + ax_dx[-2]))
                append = a * _slice(x, d, -3, -2) + b * _slice(x, d, -2, -1) + c * _slice(x, d, -1)
        else:
            center = (_slice(x, d, 2) - _slice(x, d, 0, -2)) / h / 2
            if edge_order == 1:
                prepend = (_slice(x, d, 1, 2) - _slice(x, d, 0, 1)) / h
                append = (_slice(x, d, -1) - _slice(x, d, -2, -1)) / h
            else:
                prepend = (-1.5 * _slice(x, d, 0, 1) + 2 * _slice(x, d, 1, 2) - 0.5 * _slice(x, d, 2, 3)) / h
                append = (0.5 * _slice(x, d, -3, -2) - 2 * _slice(x, d, -2, -1) + 1.5 * _slice(x, d, -1)) / h
        out.append(_C.cat([prepend, center, append], d))
    return tuple(out)


# ---- window functions ------------------------------------------------------------------


def _window_dtype(fn: str, dtype):
    import rgrad

    dt = rgrad.get_default_dtype() if dtype is None else dtype
    if dt not in (rgrad.float32, rgrad.float64):
        name = "long int" if dt == rgrad.int64 else "bool"
        raise RuntimeError(f"{fn} expects floating point dtypes, got: TensorOptions(dtype={name}, device=cpu, "
                           "layout=Strided (default), requires_grad=false (default), pinned_memory=false, "
                           "memory_format=(nullopt))")
    return dt


def _window(fn: str, window_length, periodic, dtype, requires_grad, body) -> Tensor:
    import rgrad

    if isinstance(window_length, bool) or not isinstance(window_length, int):
        raise TypeError(f"{fn}(): argument 'window_length' (position 1) must be int, not "
                        f"{type(window_length).__name__}")
    dt = _window_dtype(fn, dtype)
    if window_length < 0:
        raise RuntimeError(f"{fn} requires non-negative window_length, got window_length={window_length}")
    if window_length == 0:
        w = rgrad.empty(0, dtype=dt)
    elif window_length == 1:
        w = rgrad.ones(1, dtype=dt)
    else:
        n = window_length + 1 if periodic else window_length
        with rgrad.no_grad():
            w = body(n, dt)
            if periodic:
                w = w[: n - 1].contiguous()
    return w.requires_grad_(requires_grad) if requires_grad else w


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """The Hamming window ``alpha - beta * cos(2πn / (N - 1))`` (periodic: of length N + 1,
    the last value dropped), as ATen computes it."""
    import rgrad

    def body(n, dt):
        w = rgrad.arange(n, dtype=dt)
        return w.mul(math.pi * 2.0 / (n - 1)).cos().mul(-beta).add(alpha)

    return _window("hamming_window", window_length, periodic, dtype, requires_grad, body)


def hann_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                requires_grad: bool = False) -> Tensor:
    """The Hann window: :func:`hamming_window` with alpha = beta = 0.5."""
    import rgrad

    def body(n, dt):
        w = rgrad.arange(n, dtype=dt)
        return w.mul(math.pi * 2.0 / (n - 1)).cos().mul(-0.5).add(0.5)

    return _window("hann_window", window_length, periodic, dtype, requires_grad, body)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                    requires_grad: bool = False) -> Tensor:
    """The triangular Bartlett window ``1 - |2n / (N - 1) - 1|``, as ATen computes it."""
    import rgrad

    def body(n, dt):
        w = rgrad.arange(n, dtype=dt).mul(2.0 / (n - 1))
        half = ((n - 1) >> 1) + 1
        return rgrad.cat([w[:half], w[half:].mul(-1).add(2)])

    return _window("bartlett_window", window_length, periodic, dtype, requires_grad, body)


def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                    requires_grad: bool = False) -> Tensor:
    """The Blackman window ``0.42 - 0.5 cos(2πn / (N - 1)) + 0.08 cos(4πn / (N - 1))``, as
    ATen computes it."""
    import rgrad

    def body(n, dt):
        w = rgrad.arange(n, dtype=dt).mul(math.pi / (n - 1))
        return w.mul(4).cos().mul(0.08) - w.mul(2).cos().mul(0.5) + 0.42

    return _window("blackman_window", window_length, periodic, dtype, requires_grad, body)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None, layout=None,
                  device=None, requires_grad: bool = False) -> Tensor:
    """The Kaiser window ``i0(beta·sqrt(|1 - ((n - α) / α)²|)) / i0(beta)``, α = (N - 1) / 2,
    as ATen's kernel computes it (in the dtype)."""
    import rgrad

    def body(n, dt):
        alpha = (n - 1) / 2.0
        a = rgrad.arange(n, dtype=dt)
        r = 1 - ((a - alpha) / alpha).pow(2.0)
        return i0(r.abs().sqrt() * beta) / i0(rgrad.tensor(beta, dtype=dt))

    return _window("kaiser_window", window_length, periodic, dtype, requires_grad, body)


# ---- histogram -------------------------------------------------------------------------


def _dt(t: Tensor) -> str:
    return str(t.dtype).rsplit(".", 1)[-1]


def _g(v: float) -> str:
    """A number as C++'s ``<<`` prints a double (``1``, ``0.5``, ``inf``, ``nan``)."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:g}"


def _aten_linspace(start: float, end: float, steps: int, dtype) -> Tensor:
    """ATen's CPU linspace (the bin edges torch.histogram computes): the step
    ``(end - start) / (steps - 1)`` in the dtype, the first half ``start + step·i``, the
    second ``end - step·(steps - 1 - i)``, each one fused multiply-add (ATen's vectorized
    loop). Computed exactly on the few edges, then rounded to the dtype."""
    import struct
    from fractions import Fraction

    import rgrad

    def to_dtype(v) -> float:
        v = float(v)
        return struct.unpack("f", struct.pack("f", v))[0] if dtype == rgrad.float32 else v

    lo, hi = to_dtype(start), to_dtype(end)
    if steps == 1:
        return rgrad.tensor([lo], dtype=dtype)
    step = to_dtype(to_dtype(hi - lo) / (steps - 1))
    half = steps // 2
    if steps > 65537:
        # (many edges: float64 tensor arithmetic, the product and sum each rounded, so an
        # edge may differ from the fused one by an ulp)
        i = rgrad.arange(steps, dtype=rgrad.float64)
        e = rgrad.where(i < half, i * step + lo, hi - (steps - 1 - i) * step)
        return e.to(dtype)
    vals = [to_dtype(Fraction(lo) + Fraction(step) * i) if i < half
            else to_dtype(Fraction(hi) - Fraction(step) * (steps - 1 - i)) for i in range(steps)]
    return rgrad.tensor(vals, dtype=dtype)


def histogram(input: Tensor, bins, *, range=None, weight: Tensor | None = None,  # noqa: A002, C901
              density: bool = False):
    """The histogram of ``input``'s values: ``bins`` equal bins over ``range`` (the
    values' min and max by default) or the bin edges given as a 1-D tensor; ``weight``
    weighs each value, ``density`` normalizes to a probability density. Returns
    ``(hist, bin_edges)`` (``rgrad.return_types.histogram``); floats only, no gradient.
    Each bin holds its left edge, the last its right edge too; values outside are
    dropped."""
    import rgrad
    from rgrad import return_types
    from rgrad._tensor import _scalar_type_name

    _tensor("histogram", input)
    if not input.is_floating_point():
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{_scalar_type_name(input.dtype)}'")
    ctype = {"float32": "float", "float64": "double"}
    if weight is not None:
        _tensor("histogram", weight, "weight", 3)
        if weight.dtype != input.dtype:
            raise RuntimeError("torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
                               f"should have the same dtype, but got input({ctype[_dt(input)]}), and "
                               f"weight({ctype.get(_dt(weight), _dt(weight))})")
        if list(weight.shape) != list(input.shape):
            raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as "
                               f"the input tensor excluding its innermost dimension, but got input with shape "
                               f"{[input.numel(), 1]} and weight with shape {list(weight.shape)}")
    with rgrad.no_grad():
        x = input.detach().reshape(-1)
        if isinstance(bins, Tensor):
            if bins.dtype != input.dtype:
                raise RuntimeError("torch.histogramdd: input tensor and bins tensors should have the same dtype, "
                                   f"but got input with dtype {ctype[_dt(input)]} and bins for dimension 0 with "
                                   f"dtype {ctype.get(_dt(bins), _dt(bins))}")
            if bins.dim() != 1:
                raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got "
                                   f"{bins.dim()} dimensions in the bins tensor for dimension 0")
            if bins.numel() < 1:
                raise RuntimeError("torch.histogramdd: bins tensor should have at least 1 element, but got "
                                   f"{bins.numel()} elements in the bins tensor for dimension 0")
            edges = bins.detach().clone()
        else:
            if isinstance(bins, bool) or not isinstance(bins, int):
                raise TypeError(f"histogram(): argument 'bins' must be int or Tensor, not {type(bins).__name__}")
            if bins <= 0:
                raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
            if bins >= 2**63:
                raise ValueError("Overflow when unpacking long long")
            rgrad.zeros(bins + 1, dtype=input.dtype)  # (torch's allocation errors, before any work)
            if range is not None:
                lo, hi = float(range[0]), float(range[1])
            elif x.numel() > 0:
                lo, hi = float(x.min()), float(x.max())
            else:
                lo, hi = 0.0, 1.0
            if not (math.isfinite(lo) and math.isfinite(hi)):
                raise RuntimeError(f"torch.histogramdd: dimension 0's range [{_g(lo)}, {_g(hi)}] is not finite")
            if lo > hi:
                raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {_g(lo)} max "
                                   f"{_g(hi)} for dimension 0")
            if lo == hi:
                lo -= 0.5
                hi += 0.5
            edges = _aten_linspace(lo, hi, bins + 1, input.dtype)
        nb = edges.numel() - 1
        hist = rgrad.zeros(builtins.max(nb, 0), dtype=input.dtype)
        if nb > 0 and x.numel() > 0:
            left, right = edges[0], edges[-1]
            keep = (x >= left) & (x <= right)
            xs = x[keep]
            pos = rgrad.searchsorted(edges, xs, right=True) - 1
            pos = pos.clamp(0, nb - 1)
            w = weight.detach().reshape(-1)[keep] if weight is not None else rgrad.ones_like(xs)
            hist = hist.index_add(0, pos, w)
        if density:
            hist = hist / hist.sum()
            hist = hist / edges.diff()
    return return_types.histogram(hist, edges)


def _tensor_histogram(self: Tensor, bins, *, range=None, weight=None, density: bool = False):  # noqa: A002
    return histogram(self, bins, range=range, weight=weight, density=density)


def _tensor_hardshrink(self: Tensor, lambd: float = 0.5) -> Tensor:
    return hardshrink(self, lambd)


def _tensor_prelu(self: Tensor, weight: Tensor) -> Tensor:
    return prelu(self, weight)


def _tensor_mvlgamma(self: Tensor, p: int) -> Tensor:
    return mvlgamma(self, p)


def _tensor_angle(self: Tensor) -> Tensor:
    return angle(self)


def _tensor_i0(self: Tensor) -> Tensor:
    return i0(self)


def _tensor_igamma(self: Tensor, other: Tensor) -> Tensor:
    return igamma(self, other)


def _tensor_igammac(self: Tensor, other: Tensor) -> Tensor:
    return igammac(self, other)


_METHODS = {
    "i0": _tensor_i0,
    "i0_": i0_,
    "igamma": _tensor_igamma,
    "igammac": _tensor_igammac,
    "igamma_": _tensor_igamma_,
    "igammac_": _tensor_igammac_,
    "hardshrink": _tensor_hardshrink,
    "prelu": _tensor_prelu,
    "mvlgamma": _tensor_mvlgamma,
    "mvlgamma_": _mvlgamma_,
    "angle": _tensor_angle,
    "histogram": _tensor_histogram,
}

# torch.threshold etc. are the functional forms; torch.kl_div takes the reduction enum
_TORCH_ONLY = {"kl_div": _torch_kl_div}


def install() -> None:
    """The Tensor methods torch has for these (also on vmap's BatchedTensor)."""
    from rgrad.func._batched_tensor import BatchedTensor

    for name, fn in _METHODS.items():
        fn.__name__ = fn.__qualname__ = name
        setattr(Tensor, name, fn)
        setattr(BatchedTensor, name, fn)
