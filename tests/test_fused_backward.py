"""Fused backward kernels agree bit for bit with the composite formulas they replace.

A plain backward (no `create_graph`) computes a unary op's gradient `g * f'(x)` in one
kernel; with `create_graph=True` the same formula runs as recorded tensor ops, so that
it can be differentiated again. Both must give the same bits, for every op, dtype and
layout, special values included: the fused kernels are only a faster route.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import rgrad

UNARY = ["abs", "relu", "exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh",
         "sigmoid", "reciprocal", "neg", "sign", "rsqrt"]
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e-30, 3e4, -3e4, 1e5, 88.0, -104.0,
           math.inf, -math.inf, math.nan]


def _bits(t):
    a = t.detach().numpy()
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _input(dtype, n):
    rgrad.manual_seed(n)
    x = rgrad.randn(n, dtype=dtype) * 3
    return rgrad.cat([rgrad.tensor(SPECIAL, dtype=dtype), x])


@pytest.mark.parametrize("dtype", [rgrad.float32, rgrad.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("n", [7, 300_000], ids=["small", "parallel"])
def test_fused_unary_gradient_is_the_composite_one(op, dtype, n):
    x = _input(dtype, n).requires_grad_()
    y = getattr(rgrad, op)(x)
    g = rgrad.randn(y.shape, dtype=dtype)
    (plain,) = rgrad.autograd.grad(y, x, g, retain_graph=True)
    (recorded,) = rgrad.autograd.grad(y, x, g, create_graph=True)
    assert not plain.requires_grad
    # the recorded formula depends on x (except for neg and sign, whose gradients do not)
    assert recorded.requires_grad == (op not in ("neg", "sign"))
    np.testing.assert_array_equal(_bits(plain), _bits(recorded))


@pytest.mark.parametrize("op", ["sin", "cos", "tanh", "exp", "log", "sigmoid", "relu"])
def test_fused_unary_gradient_with_strided_inputs_and_gradients(op):
    base = rgrad.rand(6, 8, dtype=rgrad.float64) + 0.5
    x = base.t().requires_grad_()  # non-contiguous saved input / output
    y = getattr(rgrad, op)(x)
    for g in (rgrad.rand(8, 1, dtype=rgrad.float64).expand(8, 6),  # stride-0 gradient
              rgrad.rand(6, 8, dtype=rgrad.float64).t()):
        (plain,) = rgrad.autograd.grad(y, x, g, retain_graph=True)
        (recorded,) = rgrad.autograd.grad(y, x, g, retain_graph=True, create_graph=True)
        np.testing.assert_array_equal(_bits(plain.contiguous()), _bits(recorded.contiguous()))


def test_fused_gradient_values():
    x = rgrad.tensor([0.5, -1.0, 2.0], requires_grad=True)
    (rgrad.tanh(x) * rgrad.tensor([1.0, 2.0, 3.0])).sum().backward()
    expected = [(1 - math.tanh(v) ** 2) * w for v, w in zip([0.5, -1.0, 2.0], [1.0, 2.0, 3.0])]
    assert x.grad.tolist() == pytest.approx(expected, rel=1e-6)
    x.grad = None
    rgrad.sin(x).sum().backward()
    assert x.grad.tolist() == pytest.approx([math.cos(v) for v in [0.5, -1.0, 2.0]], rel=1e-6)
