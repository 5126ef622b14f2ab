"""rgrad.autograd.gradcheck and gradgradcheck over the op table in tests/op_db.py.

Every op that claims a derivative (``supports_grad``) is gradchecked on each of its
gradient samples, and every op that claims a second derivative (``supports_gradgrad``)
is gradgradchecked, all in float64 (PyTorch's test_ops_gradients.py notes that
"gradcheck requires double precision"). The samples, their float64 materialisation and
the per-op tolerances are the ones tests/test_ops.py checks with its numpy-based
finite differences (tests/fdcheck.py); here the same problems go through rgrad's own
gradcheck, so its whole pipeline (in-place perturbation, one-hot VJPs, reentrancy,
zero grad_outputs, undefined grads) runs on every op.
"""

from __future__ import annotations

import pytest

import rgrad
from rgrad.autograd.gradcheck import gradcheck, gradgradcheck
from test_ops import GRAD, GRADGRAD


def _problem(op, sample):
    """``(fn, leaves)``: the sample's function and its float64 inputs as leaves requiring grad."""
    fn, inputs = sample.grad_problem(op.op, rgrad)
    leaves = tuple(rgrad.tensor(x, requires_grad=True) for x in inputs)
    assert all(leaf.dtype == rgrad.float64 for leaf in leaves)
    return fn, leaves


@pytest.mark.parametrize("op,sample", GRAD)
def test_gradcheck(op, sample):
    fn, leaves = _problem(op, sample)
    assert gradcheck(fn, leaves, atol=op.grad_atol, rtol=op.grad_rtol)


@pytest.mark.parametrize("op,sample", GRADGRAD)
def test_gradgradcheck(op, sample):
    fn, leaves = _problem(op, sample)
    assert gradgradcheck(fn, leaves, atol=op.grad_atol, rtol=op.grad_rtol)


@pytest.mark.parametrize("op,sample", GRAD)
def test_gradcheck_fast_mode(op, sample):
    fn, leaves = _problem(op, sample)
    assert gradcheck(fn, leaves, atol=op.grad_atol, rtol=op.grad_rtol, fast_mode=True)


@pytest.mark.parametrize("op,sample", GRADGRAD)
def test_gradgradcheck_fast_mode_non_contiguous_grad_outputs(op, sample):
    fn, leaves = _problem(op, sample)
    assert gradgradcheck(
        fn, leaves, atol=op.grad_atol, rtol=op.grad_rtol, fast_mode=True, gen_non_contig_grad_outputs=True
    )


@pytest.mark.parametrize("op,sample", GRAD)
def test_forward_ad_gradcheck(op, sample):
    """Every differentiable op's forward-mode derivative against finite differences (an op
    torch gives none: its tangent is None)."""
    fn, leaves = _problem(op, sample)
    if not op.supports_forward_ad:
        _assert_no_tangent(fn, leaves, op.forward_ad_error)
        return
    assert gradcheck(fn, leaves, atol=op.grad_atol, rtol=op.grad_rtol, check_forward_ad=True, check_backward_ad=False)


def _assert_no_tangent(fn, leaves, error=None):
    fa = rgrad.autograd.forward_ad
    with fa.dual_level():
        duals = [fa.make_dual(x.detach(), rgrad.ones_like(x)) for x in leaves]
        if error is not None:  # (torch raises rather than giving no tangent)
            with pytest.raises(NotImplementedError, match=error):
                fn(*duals)
            return
        out = fn(*duals)
        outs = out if isinstance(out, tuple) else (out,)
        assert all(fa.unpack_dual(o).tangent is None for o in outs)


@pytest.mark.parametrize("op,sample", GRADGRAD)
def test_fwd_over_rev_gradgradcheck(op, sample):
    """Second derivatives by forward-over-reverse (the tangents of the gradients)."""
    fn, leaves = _problem(op, sample)
    if not op.supports_forward_ad:
        _assert_no_tangent(fn, leaves, op.forward_ad_error)
        return
    assert gradgradcheck(
        fn, leaves, atol=op.grad_atol, rtol=op.grad_rtol, check_fwd_over_rev=True, check_rev_over_rev=False,
        check_undefined_grad=False,
    )


def _inplace(op) -> bool:
    """``Tensor.add_``, ``Tensor.clamp_.tensor_bounds``, ``__iadd__``, ``__setitem__``."""
    method = op.name.removeprefix("Tensor.").split(".")[0]
    return method.endswith("_") and not method.startswith("__") or method.startswith("__i") or method == "__setitem__"


@pytest.mark.parametrize("op,sample", GRAD)
def test_batched_gradcheck(op, sample):
    """vmap over each op's vector-Jacobian products (and, out of place, its
    Jacobian-vector products) agrees with the products computed one at a time: torch's
    check_batched_grad and check_batched_forward_grad, which its OpInfo tests turn on.

    In-place ops skip the forward-mode check, as torch's in-place forward-AD tests do:
    under rgrad's vmap a dual tensor whose tangent is batched is batched as a whole, so
    an in-place op of an unbatched ``self`` with it raises vmap's in-place error (torch
    batches only the tangent there and passes)."""
    fn, leaves = _problem(op, sample)
    assert gradcheck(
        fn, leaves, atol=op.grad_atol, rtol=op.grad_rtol, check_batched_grad=True, check_undefined_grad=False,
        check_forward_ad=not _inplace(op) and op.supports_forward_ad,
        check_batched_forward_grad=not _inplace(op) and op.supports_forward_ad,
    )


@pytest.mark.parametrize("op,sample", GRADGRAD)
def test_batched_gradgradcheck(op, sample):
    fn, leaves = _problem(op, sample)
    assert gradgradcheck(fn, leaves, atol=op.grad_atol, rtol=op.grad_rtol, check_batched_grad=True,
                         check_undefined_grad=False)
