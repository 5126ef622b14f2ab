//! Division with rounding and remainders: remainder (Python's `%`), fmod, `//` and
//! `div(rounding_mode=...)`, the reflected forms with a number on the left, and the nodes
//! of ops torch gives a zero or no derivative.

use super::arith::ArithOp;
use super::elementwise::*;
use super::{OperandShapes, apply};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::backend::BinaryOp;
use crate::dtype::{DType, Scalar};
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;
use crate::{Error, Result, saved};
use std::borrow::Cow;

/// Integer division and remainder refuse a zero divisor, as torch does.
fn check_int_divisor(b: &Tensor) -> Result<()> {
    if b.dtype() == DType::I64 && super::any_true(&eq_scalar(b, 0.0)?)? {
        return Err(Error::runtime("ZeroDivisionError"));
    }
    Ok(())
}

fn division_operands(a: Operand<'_>, b: Operand<'_>, what: &str) -> Result<(Tensor, Tensor)> {
    if let (Operand::T(x), Operand::T(y)) = (a, b) {
        // torch finds shapes that do not broadcast before the dtype it has no kernel for
        broadcast_shapes(&x.shape(), &y.shape())?;
    }
    let (a, b, dtype) = promote(a, b, false)?;
    if dtype == DType::Bool {
        return Err(Error::not_implemented(format!(
            "\"{what}\" not implemented for 'Bool'"
        )));
    }
    // (torch's kernel raises on the first zero it divides by: an empty result has none)
    if crate::shape::numel(&broadcast_shapes(&a.shape(), &b.shape())?) > 0 {
        check_int_divisor(&b)?;
    }
    Ok((a, b))
}

/// `a % b` with the sign of `b` (torch.remainder; Python's `%`).
pub fn remainder_op(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    mod_op(a, b, true)
}

/// `fmod(a, b)`: C's remainder, with the sign of `a`.
pub fn fmod_op(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    mod_op(a, b, false)
}

fn mod_op(a: Operand<'_>, b: Operand<'_>, python_style: bool) -> Result<Tensor> {
    let (op, kernel_name) = if python_style {
        (ArithOp::Remainder, "remainder_cpu")
    } else {
        (ArithOp::Fmod, "fmod_cpu")
    };
    let (a, b) = division_operands(a, b, kernel_name)?;
    super::arith::record(op, &a, &b, 1.0, || binary_kernel(op.kernel(), &a, &b))
}

/// `div(a, b, rounding_mode="floor" | "trunc")` (`a // b` is the floor form). The result
/// is piecewise constant, so its gradient is zero, as in torch.
pub fn div_rounded(a: Operand<'_>, b: Operand<'_>, floor: bool) -> Result<Tensor> {
    let (a, b) = division_operands(a, b, "div_floor_cpu")?;
    let op = if floor {
        BinaryOp::FloorDiv
    } else {
        BinaryOp::TruncDiv
    };
    apply(
        "aten::div",
        &[&a, &b],
        || binary_kernel(op, &a, &b),
        |out| {
            // torch's formula names other (and self), so it saves them, and reports them
            // modified in place, though the gradient is zero
            let mut sv = Saver::default();
            sv.input_if(crate::ops::wants_grad(&a), &b);
            sv.input_if(crate::ops::wants_grad(&b), &a);
            (
                ZeroGradBackward {
                    shapes: OperandShapes::new(&a, &b, out),
                    name: "DivBackward2",
                },
                sv.list,
            )
        },
    )
}

/// `a // b` (torch.floor_divide): torch gives it no derivative, so its node raises when
/// backward reaches it (`div(..., rounding_mode="floor")` is the differentiable form).
pub fn floor_divide(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    let (a, b) = division_operands(a, b, "div_floor_cpu")?;
    apply(
        "aten::floor_divide",
        &[&a, &b],
        || binary_kernel(BinaryOp::FloorDiv, &a, &b),
        |_| {
            (
                NotImplementedBackward {
                    op: "aten::floor_divide",
                },
                saved![],
            )
        },
    )
}

/// `s // x` and `s % x` with a number on the left (Python's reflected `//` and `%`).
/// torch records these as the Scalar-Tensor overloads, whose derivative it does not
/// implement: a `NotImplemented` node over `x` alone, so that `1.7 % x` records a graph
/// and backward through it fails, as in torch.
pub fn rfloor_divide_scalar(x: &Tensor, s: Scalar) -> Result<Tensor> {
    reflected_not_differentiable(
        x,
        s,
        BinaryOp::FloorDiv,
        "div_floor_cpu",
        "aten::floor_divide",
    )
}

/// `s % x` (see [`rfloor_divide_scalar`]).
pub fn rremainder_scalar(x: &Tensor, s: Scalar) -> Result<Tensor> {
    reflected_not_differentiable(
        x,
        s,
        BinaryOp::Remainder,
        "remainder_cpu",
        "aten::remainder",
    )
}

fn reflected_not_differentiable(
    x: &Tensor,
    s: Scalar,
    op: BinaryOp,
    kernel: &str,
    aten: &'static str,
) -> Result<Tensor> {
    let (sv, xt) = division_operands(Operand::S(s), Operand::T(x), kernel)?;
    apply(
        op.aten_name(),
        &[&xt],
        || binary_kernel(op, &sv, &xt),
        |_| (NotImplementedBackward { op: aten }, saved![]),
    )
}

/// The node of an op torch does not differentiate: backward through it is an error.
#[derive(Clone)]
pub struct NotImplementedBackward {
    op: &'static str,
}
impl Backward for NotImplementedBackward {
    fn name(&self) -> Cow<'static, str> {
        "NotImplemented".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, _g: &[Option<Tensor>]) -> Result<Grads> {
        Err(Error::runtime(format!(
            "derivative for {} is not implemented",
            self.op
        )))
    }
}

/// A node whose inputs get zero gradients (piecewise-constant ops).
#[derive(Clone)]
pub struct ZeroGradBackward {
    shapes: OperandShapes,
    name: &'static str,
}
impl Backward for ZeroGradBackward {
    fn name(&self) -> Cow<'static, str> {
        self.name.into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let z = |i: usize| -> Result<Option<Tensor>> {
            if ctx.needs_input_grad(i) {
                Ok(Some(super::zeros(&self.shapes.shape(&g, i), g.dtype())?))
            } else {
                Ok(None)
            }
        };
        Ok(smallvec::smallvec![z(0)?, z(1)?])
    }
}
