//! Powers: `a ** b` for tensor/tensor, tensor/number and number/tensor. Their node is the
//! arithmetic table's `pow` row (`table.rs`; PowBackward1, and PowBackward0 / 2 for the
//! Scalar overloads), built by `arith.rs`; here are the checks and the fast paths.

use super::arith::{self, ArithOp};
use super::elementwise::*;
use super::new_tensor;
use super::unary::unary_kernel;
use crate::backend::UnaryOp;
use crate::backend::{self as k, BinaryOp};
use crate::dtype::DType;
use crate::layout::Layout;
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;
use crate::{Error, Result};

/// `a ** b` for tensor/tensor, tensor/number and number/tensor.
pub fn pow_op(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    // torch: a bool tensor to the power of a bool tensor has no kernel (a Python bool
    // exponent is fine)
    let bool_tensor = |o: &Operand<'_>| matches!(o, Operand::T(t) if t.dtype() == DType::Bool);
    if let (Operand::T(x), Operand::T(y)) = (a, b) {
        // torch finds shapes that do not broadcast first
        broadcast_shapes(&x.shape(), &y.shape())?;
    }
    if bool_tensor(&a) && bool_tensor(&b) {
        return Err(Error::not_implemented("\"pow\" not implemented for 'Bool'"));
    }
    let op = ArithOp::Pow;
    match (a, b) {
        (Operand::T(x), Operand::S(e)) => {
            if !x.dtype().is_float()
                && e.category() == crate::dtype::Category::Int
                && e.as_f64() < 0.0
            {
                return Err(Error::runtime(
                    "Integers to negative integer powers are not allowed.",
                ));
            }
            let (xt, et, _) = promote(a, b, false)?;
            // torch computes these powers with sqrt/rsqrt (so (-inf)^0.5 is nan, not C pow's inf)
            let special = match e.as_f64() {
                0.5 if xt.dtype().is_float() => Some(UnaryOp::Sqrt),
                -0.5 if xt.dtype().is_float() => Some(UnaryOp::Rsqrt),
                -1.0 if xt.dtype().is_float() => Some(UnaryOp::Reciprocal),
                _ => None,
            };
            arith::record_with_number(op, &xt, e, 1, || match special {
                Some(op) => unary_kernel(op, &xt),
                None => {
                    // a contiguous float base: the number kernel (small integer
                    // powers as products, as torch computes them)
                    let sx = xt.snapshot();
                    let row_major = crate::layout::iter_output_order(
                        &sx.layout.shape,
                        &[&sx.layout, &Layout::contiguous(&[])],
                    )
                    .is_none();
                    // (and an int64 base squared or cubed: products, not powi's loop)
                    let small_int =
                        sx.dtype == DType::I64 && matches!(e, crate::Scalar::Int(2 | 3));
                    let buf = if (sx.dtype.is_float() || small_int) && row_major {
                        k::binary_scalar(
                            BinaryOp::Pow,
                            &sx.storage.read(),
                            &sx.layout,
                            e.as_f64(),
                            false,
                        )?
                    } else {
                        None
                    };
                    match buf {
                        Some(buf) => Ok(new_tensor(buf, &sx.layout.shape)),
                        None => binary_kernel(BinaryOp::Pow, &xt, &et),
                    }
                }
            })
        }
        (Operand::S(base), Operand::T(_)) => {
            let (bt, xt, _) = promote(a, b, false)?;
            arith::record_with_number(op, &xt, base, 0, || binary_kernel(BinaryOp::Pow, &bt, &xt))
        }
        _ => {
            let (at, bt, _) = promote(a, b, false)?;
            // A bool exponent tensor is saved as given, as torch saves it: the formula's
            // `b - 1` then refuses it as torch's does (it needs no gradient, so its edge
            // is none either way).
            let saved_b = match b {
                Operand::T(t) if t.dtype() == DType::Bool => t,
                _ => &bt,
            };
            arith::record(op, &at, saved_b, 1.0, || {
                binary_kernel(BinaryOp::Pow, &at, &bt)
            })
        }
    }
}
