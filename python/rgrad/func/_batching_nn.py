"""Batching rules of matrix products (matmul, mm, bmm, mv, dot, outer, addmm, linear) and
losses (cross_entropy, nll_loss, mse_loss); see ``_batching.py``."""

from __future__ import annotations

from typing import Any

import rgrad
from rgrad import _C
from rgrad._C import Tensor
from rgrad.autograd import forward_ad as fwAD
from rgrad.autograd.function import Function
from rgrad.func._batched_tensor import batch_size, copies_level, dispatch, fallback
from rgrad.func._batching_common import (
    BT,
    _at,
    _expand,
    _final,
    _lrank,
    _pad,
    _physical,
)


# ---------------------------------------------------------------------------------------
# Matrix products
# ---------------------------------------------------------------------------------------

def _matmul_batched(a: Any, b: Any, level: int) -> Any:
    """``a @ b`` with torch's matmul rules on the logical operands; one of them is batched at ``level``."""
    ab, bb = _at(a, level), _at(b, level)
    ra, rb = _lrank(a, level), _lrank(b, level)
    if ra == 0 or rb == 0:
        raise _final(RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {ra}D and {rb}D"))
    if ab and not bb and (rb == 2 or rb == 1):
        # [B, ..., k] @ [k, m] or [k]: the batch dims broadcast as matmul's own
        v = a._value
        if rb == 2 and _same_samples(v, level) and _plain(b) and _fast_paths_apply(v, b):
            return BT(_UniformInputLinear.apply(v, b.t(), None), level)
        return BT(dispatch("matmul", (v, b), {}), level)
    if bb and not ab and ra == 1:
        if rb == 1:
            return BT(dispatch("matmul", (b._value, a), {}), level)
        return BT(dispatch("matmul", (a, b._value), {}), level)
    if bb and not ab and ra == 2 and rb == 1:
        return BT(dispatch("matmul", (b._value, a.t()), {}), level)
    av = a._value if ab else a
    bv = b._value if bb else b
    squeeze_a = ra == 1
    squeeze_b = rb == 1
    if squeeze_a:
        av = av.unsqueeze(-2)
        ra = 2
    if squeeze_b:
        bv = bv.unsqueeze(-1)
        rb = 2
    batch_rank = max(ra, rb) - 2
    if ab:
        av = _pad(av, batch_rank - (ra - 2))
    if bb:
        bv = _pad(bv, batch_rank - (rb - 2))
    out = dispatch("matmul", (av, bv), {})
    if squeeze_a:
        out = out.squeeze(-2)
    if squeeze_b:
        out = out.squeeze(-1)
    return BT(out, level)


def _check_ranks(name: str, level: int, a: Any, b: Any) -> None:
    ra, rb = _lrank(a, level), _lrank(b, level)
    if name == "mm":
        if ra != 2 or rb != 2:
            raise _final(RuntimeError(f"Shape mismatch: Got incorrect dims for mm(a, b). a has dim {ra}and b has dim "
                                      f"{rb}but expected them to have dim 2 and dim 2"))  # torch's text, spaces too
    elif name == "bmm":
        if ra != 3:
            raise _final(RuntimeError("batch1 must be a 3D tensor"))
        if rb != 3:
            raise _final(RuntimeError("batch2 must be a 3D tensor"))
    elif name == "mv":
        if ra != 2 or rb != 1:
            raise _final(RuntimeError(f"vector + matrix @ vector expected, got 1, {ra}, {rb}"))
    elif name == "dot" and (ra != 1 or rb != 1):
        raise _final(RuntimeError("Got wrong shapes for dot"))


def _matmul(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    a, b = args[0], (args[1] if len(args) > 1 else next(iter(kwargs.values())))
    if name == "__rmatmul__":
        a, b = b, a
    _check_ranks(name, level, a, b)
    if name == "bmm" and _lrank(a, level) == 3 and _lrank(b, level) == 3:
        if a.shape[0] != b.shape[0]:
            raise _final(RuntimeError("batch1 and batch2 must have same number of batches, got "
                                      f"{a.shape[0]} and {b.shape[0]}"))
    return _matmul_batched(a, b, level)


def _outer(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    a, b = args[0], (args[1] if len(args) > 1 else next(iter(kwargs.values())))
    ra, rb = _lrank(a, level), _lrank(b, level)
    if ra != 1 or rb != 1:
        raise _final(RuntimeError(f"outer: Expected 1-D argument self, but got {ra}-D" if ra != 1 else
                                  f"outer: Expected 1-D argument vec2, but got {rb}-D"))
    return dispatch("mul", (a.unsqueeze(-1), b.unsqueeze(0)), {})


def _addmm(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    self, m1, m2 = args[:3]
    beta = kwargs.get("beta", 1) if kwargs.get("beta") is not None else 1
    alpha = kwargs.get("alpha", 1) if kwargs.get("alpha") is not None else 1
    _check_ranks("mm", level, m1, m2)
    out = _matmul_batched(m1, m2, level) if (_at(m1, level) or _at(m2, level)) else BT(
        _expand(dispatch("matmul", (m1, m2), {}), batch_size(level)), level)
    if alpha != 1:
        out = out * alpha
    if beta == 0:
        return out
    return out + (self if beta == 1 else self * beta)


def _addr(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    """``beta * self + alpha * outer(vec1, vec2)`` from the batched ops (the native kernel
    takes one 2-D self and 1-D vectors)."""
    self = args[0]
    v1 = args[1] if len(args) > 1 else kwargs.get("vec1")
    v2 = args[2] if len(args) > 2 else kwargs.get("vec2")
    r1, r2 = _lrank(v1, level), _lrank(v2, level)
    if r1 != 1 or r2 != 1:
        raise _final(RuntimeError(f"addr: Expected 1-D argument vec1, but got {r1}-D" if r1 != 1 else
                                  f"addr: Expected 1-D argument vec2, but got {r2}-D"))
    beta = kwargs.get("beta", 1)
    alpha = kwargs.get("alpha", 1)
    out = dispatch("outer", (v1, v2), {})
    if alpha != 1:
        out = out * alpha
    if beta == 0:
        # (self's batch, not its values: NaN and inf in it are ignored)
        return out + dispatch("zeros_like", (self,), {}) if _at(self, level) else out
    return out + (self if beta == 1 else self * beta)


def _linear(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    x = args[0]
    weight = args[1] if len(args) > 1 else kwargs["weight"]
    bias = args[2] if len(args) > 2 else kwargs.get("bias")
    xb, wb, bb = _at(x, level), _at(weight, level), _at(bias, level)
    if xb and not wb and not bb:
        v = x._value
        if (_same_samples(v, level) and _plain(weight) and (bias is None or _plain(bias))
                and _fast_paths_apply(v, weight, bias)):
            return BT(_UniformInputLinear.apply(v, weight, bias), level)
        # the batch dim is one more leading dim for linear
        return BT(dispatch("linear", (v, weight, bias), {}), level)
    if (xb and wb and _plain(x._value) and _uniform(weight._value) and _lrank(weight, level) == 2
            and (bias is None or (bb and _plain(bias._value) and bias._value.dim() == 2))
            and _fast_paths_apply(x._value, weight._value, bias)):
        b = bias._value if bias is not None else None
        return BT(_SharedWeightLinear.apply(x._value, weight._value, b), level)
    out = dispatch("matmul", (x, weight.t()), {})
    if bias is not None:
        out = out + bias
    return out


# ---------------------------------------------------------------------------------------
# Fast paths for operands that are the same for every sample
# ---------------------------------------------------------------------------------------
#
# Inside vmap, ``grad`` materializes an unbatched parameter as a stride-0 expand (one leaf
# per sample, see _vmap), and ``jacobian(vectorize=True)`` does the same with its inputs.
# The batched rule would then multiply by the same matrix once per sample (a bmm of
# matrix-vector products), or multiply the same row by a matrix once per sample. These
# custom Functions compute the forward once, exactly as the batched op would, and give
# each sample its own gradient; their backward is written with differentiable ops, so
# double backward (create_graph) is per sample too. Not used inside a forward-AD level
# (they have no jvp rule).

def _plain(t: Any) -> bool:
    return type(t) is Tensor


def _uniform(v: Any) -> bool:
    """A plain physical value whose batch dim has stride 0 (every sample the same memory)."""
    return type(v) is Tensor and v.dim() > 0 and v.shape[0] > 1 and v.stride(0) == 0


def _same_samples(v: Any, level: int) -> bool:
    """A plain physical value whose samples all hold the same values: stride 0, or a level of copies."""
    return type(v) is Tensor and v.dim() > 1 and v.shape[0] > 1 and (v.stride(0) == 0 or copies_level(level))


def _fast_paths_apply(*tensors: Any) -> bool:
    return fwAD._current_level < 0 and all(t is None or t.dtype == tensors[0].dtype for t in tensors)


class _SharedWeightLinear(Function):
    """``linear(x, w, b)`` per sample where ``w`` (``[B, out, in]``) is one matrix expanded
    over the batch: one GEMM forward; per-sample ``w`` (and ``b``) gradients."""

    @staticmethod
    def forward(ctx: Any, x: Any, w: Any, b: Any) -> Any:
        ctx.save_for_backward(x, w)
        ctx.bias_shape = None if b is None else tuple(b.shape)
        w0 = w.select(0, 0)
        if b is None:
            return _C.linear(x, w0)
        if b.stride(0) == 0:
            return _C.linear(x, w0, b.select(0, 0))
        return _C.linear(x, w0) + b.view(b.shape[0], *([1] * (x.dim() - 2)), b.shape[1])

    @staticmethod
    def backward(ctx: Any, g: Any) -> tuple:
        x, w = ctx.saved_tensors
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            if not _plain(g):
                # a batched backward pass runs this under a vmap level (g: a batch of this
                # node's gradients); a Function without a vmap rule cannot be applied there:
                # g @ w per sample as a batched product (values and derivatives per sample)
                gx = g.reshape(g.shape[0], -1, g.shape[-1]).matmul(w).reshape(*g.shape[:-1], w.shape[-1])
            else:
                # g @ w per sample; recorded (create_graph) as a shared-weight product itself,
                # so that its derivative w.r.t. w is per sample too
                gx = (_SharedWeightLinear.apply(g, w.transpose(1, 2), None) if rgrad.is_grad_enabled()
                      else g.matmul(w.select(0, 0)))
        if ctx.needs_input_grad[1]:
            # one outer product per sample (summed over the sample's own leading dims)
            gw = g.reshape(g.shape[0], -1, g.shape[-1]).transpose(1, 2).matmul(x.reshape(x.shape[0], -1, x.shape[-1]))
        if ctx.bias_shape is not None and ctx.needs_input_grad[2]:
            gb = g.reshape(g.shape[0], -1, g.shape[-1]).sum(1) if g.dim() > 2 else g
        return gx, gw, gb


class _UniformInputLinear(Function):
    """``linear(x, w, b)`` per sample where every sample of ``x`` (``[B, ..., in]``) holds the
    same values (a stride-0 expand, or a level of copies): one product forward (the output
    repeated); per-sample ``x`` gradients."""

    @staticmethod
    def forward(ctx: Any, x: Any, w: Any, b: Any) -> Any:
        ctx.save_for_backward(x, w)
        ctx.has_bias = b is not None
        out = _C.linear(x.select(0, 0), w, b)
        # a dense result (not an expand of ``out``: the function may write into it in place);
        # -0.0 + v is v for every float v (signed zeros, NaN, subnormals), and the broadcast
        # add is the fastest way rgrad has to repeat rows (a strided copy is 4x slower)
        return _C.full((x.shape[0], *out.shape), -0.0, dtype=out.dtype) + out

    @staticmethod
    def backward(ctx: Any, g: Any) -> tuple:
        x, w = ctx.saved_tensors
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = g.matmul(w)
        if ctx.needs_input_grad[1]:
            gw = g.reshape(-1, g.shape[-1]).t().mm(x.reshape(-1, x.shape[-1]))
        if ctx.has_bias and ctx.needs_input_grad[2]:
            gb = g.reshape(-1, g.shape[-1]).sum(0)
        return gx, gw, gb



# ---------------------------------------------------------------------------------------
# Losses
# ---------------------------------------------------------------------------------------

def _class_loss(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    """cross_entropy / nll_loss: one loss per sample (each sample's own reduction)."""
    x, target = args[0], args[1]
    reduction = args[2] if len(args) > 2 else kwargs.get("reduction", "mean")
    ignore_index = args[3] if len(args) > 3 else kwargs.get("ignore_index", -100)
    r = _lrank(x, level)
    if r not in (1, 2) or reduction not in ("none", "mean", "sum"):
        return fallback(name, level, args, kwargs)
    xv, tv = _physical(x, level), _physical(target, level)
    n = xv.shape[0]
    if r == 1:
        per = dispatch(name, (xv, tv, "none", ignore_index), {})
        if reduction == "mean":
            per = per / (tv != ignore_index).to(per.dtype)
        return BT(per, level)
    rows, classes = xv.shape[1], xv.shape[2]
    per = dispatch(name, (xv.reshape(n * rows, classes), tv.reshape(n * rows), "none", ignore_index), {})
    per = per.view(n, rows)
    if reduction == "none":
        return BT(per, level)
    total = per.sum(1)
    if reduction == "mean":
        total = total / (tv != ignore_index).sum(1).to(total.dtype)
    return BT(total, level)


def _mse_loss(name: str, level: int, args: tuple, kwargs: dict) -> Any:
    x, target = args[0], args[1]
    reduction = args[2] if len(args) > 2 else kwargs.get("reduction", "mean")
    rank = max(_lrank(x, level), _lrank(target, level))
    xv = _pad(x._value, rank - _lrank(x, level)) if _at(x, level) else x
    tv = _pad(target._value, rank - _lrank(target, level)) if _at(target, level) else target
    per = dispatch("mse_loss", (xv, tv, "none"), {})
    if not (type(per) is BT and per._level == level) and not _at(x, level) and not _at(target, level):
        return fallback(name, level, args, kwargs)
    out = BT(per, level)
    if reduction == "none" or rank == 0:
        return out
    if reduction == "sum":
        return out.sum()
    if reduction == "mean":
        return out.mean()
    raise ValueError(f"{reduction} is not a valid value for reduction")
