//! Division with rounding and remainders: remainder (Python's `%`), fmod, `//` and
//! `div(rounding_mode=...)`, and the reflected forms with a number on the left: their
//! checks; their nodes are the arithmetic table's rows (`arith.rs`).

use super::arith::ArithOp;
use super::elementwise::*;
use crate::dtype::{DType, Scalar};
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;
use crate::{Error, Result};

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
/// is piecewise constant, so its gradient is zero, as in torch (the table's `div_floor`
/// and `div_trunc` rows).
pub fn div_rounded(a: Operand<'_>, b: Operand<'_>, floor: bool) -> Result<Tensor> {
    let (op, kernel_name) = if floor {
        (ArithOp::DivFloor, "div_floor_cpu")
    } else {
        (ArithOp::DivTrunc, "div_trunc_cpu")
    };
    let (a, b) = division_operands(a, b, kernel_name)?;
    super::arith::record(op, &a, &b, 1.0, || binary_kernel(op.kernel(), &a, &b))
}

/// `a // b` (torch.floor_divide): torch gives it no derivative, so its node raises when
/// backward reaches it (`div(..., rounding_mode="floor")` is the differentiable form).
pub fn floor_divide(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    let op = ArithOp::FloorDivide;
    let (a, b) = division_operands(a, b, "div_floor_cpu")?;
    super::arith::record(op, &a, &b, 1.0, || binary_kernel(op.kernel(), &a, &b))
}

/// `s // x` and `s % x` with a number on the left (Python's reflected `//` and `%`).
/// torch records these as the Scalar-Tensor overloads, whose derivative it does not
/// implement: a `NotImplemented` node over `x` alone (the rows' `numbers`), so that
/// `1.7 % x` records a graph and backward through it fails, as in torch.
pub fn rfloor_divide_scalar(x: &Tensor, s: Scalar) -> Result<Tensor> {
    reflected_not_differentiable(x, s, ArithOp::FloorDivide, "div_floor_cpu")
}

/// `s % x` (see [`rfloor_divide_scalar`]).
pub fn rremainder_scalar(x: &Tensor, s: Scalar) -> Result<Tensor> {
    reflected_not_differentiable(x, s, ArithOp::Remainder, "remainder_cpu")
}

fn reflected_not_differentiable(
    x: &Tensor,
    s: Scalar,
    op: ArithOp,
    kernel: &str,
) -> Result<Tensor> {
    let (sv, xt) = division_operands(Operand::S(s), Operand::T(x), kernel)?;
    super::arith::record_with_number(op, &xt, s, 0, || binary_kernel(op.kernel(), &sv, &xt))
}
