//! Powers: `a ** b` for tensor/tensor, tensor/number and number/tensor, and their
//! three torch nodes (PowBackward0/1/2).

use super::creation::zeros_like;
use super::elementwise::*;
use super::unary::{log, unary_kernel};
use super::{OperandShapes, apply, new_tensor};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::backend::UnaryOp;
use crate::backend::{self as k, BinaryOp};
use crate::dtype::{DType, Scalar};
use crate::layout::Layout;
use crate::shape::broadcast_shapes;
use crate::storage::Buffer;
use crate::tensor::Tensor;
use crate::{Error, Result};
use std::borrow::Cow;

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
            apply(
                "aten::pow",
                &[&xt],
                || match special {
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
                        let buf = (sx.dtype.is_float() && row_major).then(|| {
                            k::binary_scalar(
                                BinaryOp::Pow,
                                &sx.storage.read(),
                                &sx.layout,
                                e.as_f64(),
                                false,
                            )
                        });
                        match buf.flatten() {
                            Some(buf) => Ok(new_tensor(buf, &sx.layout.shape)),
                            None => binary_kernel(BinaryOp::Pow, &xt, &et),
                        }
                    }
                },
                |_| {
                    let mut s = Saver::default();
                    let xi = s.input_if(true, &xt);
                    (
                        PowBackward0 {
                            exponent: e.as_f64(),
                            x: xi,
                            bool_exponent: matches!(e, Scalar::Bool(_)),
                        },
                        s.list,
                    )
                },
            )
        }
        (Operand::S(base), Operand::T(_)) => {
            let (bt, xt, _) = promote(a, b, false)?;
            apply(
                "aten::pow",
                &[&xt],
                || binary_kernel(BinaryOp::Pow, &bt, &xt),
                |y| {
                    let mut s = Saver::default();
                    let yi = s.output(y);
                    (
                        PowBackward2 {
                            base: base.as_f64(),
                            y: yi,
                        },
                        s.list,
                    )
                },
            )
        }
        _ => {
            let bool_exponent = matches!(b, Operand::T(t) if t.dtype() == DType::Bool);
            let (at, bt, _) = promote(a, b, false)?;
            apply(
                "aten::pow",
                &[&at, &bt],
                || binary_kernel(BinaryOp::Pow, &at, &bt),
                |y| {
                    let mut s = Saver::default();
                    let ai = s.input_if(true, &at);
                    let bi = s.input_if(true, &bt);
                    let yi = s.output(y);
                    (
                        PowBackward1 {
                            shapes: OperandShapes::new(&at, &bt, y),
                            a: ai,
                            b: bi,
                            y: yi,
                            bool_exponent,
                        },
                        s.list,
                    )
                },
            )
        }
    }
}

#[derive(Clone)]
pub struct PowBackward0 {
    exponent: f64,
    x: Option<u8>,
    /// The exponent was a Python bool: torch's `exponent == 0` test is false for a bool
    /// scalar, so `False` takes the general formula (0·x⁻¹, NaN at 0 and NaN).
    bool_exponent: bool,
}
impl Backward for PowBackward0 {
    fn name(&self) -> Cow<'static, str> {
        "PowBackward0".into()
    }
    // d xᵉ/dx = e·xᵉ⁻¹ (0 when e == 0)
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        if self.exponent == 0.0 && !self.bool_exponent {
            return Ok(smallvec::smallvec![Some(zeros_like(&g)?)]);
        }
        let x = get(ctx, self.x)?;
        let d = mul_scalar(
            &pow_scalar(&x, Scalar::Float(self.exponent - 1.0))?,
            Scalar::Float(self.exponent),
        )?;
        Ok(smallvec::smallvec![Some(mul(&g, &d)?)])
    }
}

#[derive(Clone)]
pub struct PowBackward1 {
    shapes: OperandShapes,
    a: Option<u8>,
    b: Option<u8>,
    y: u8,
    /// The exponent was a bool tensor: torch's formula computes `b - 1` with it, which
    /// refuses bool.
    bool_exponent: bool,
}
impl Backward for PowBackward1 {
    fn name(&self) -> Cow<'static, str> {
        "PowBackward1".into()
    }
    // d aᵇ/da = b·aᵇ⁻¹; d aᵇ/db = aᵇ·ln a (taken as 0 where a == 0 and b >= 0, as torch)
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let (a, b) = (get(ctx, self.a)?, get(ctx, self.b)?);
        let ga = if ctx.needs_input_grad(0) {
            // torch: where(b == 0, 0, g·b·aᵇ⁻¹), so 0⁰ (whose aᵇ⁻¹ is inf) gives 0, not NaN;
            // its `b - 1` refuses a bool exponent
            if self.bool_exponent {
                let bool_b = Tensor::from_buffer(Buffer::Bool(vec![]), &[0]);
                check_sub_operands(Operand::T(&bool_b), Operand::S(Scalar::Int(1)))?;
            }
            let d = mul(&b, &pow(&a, &sub_scalar(&b, Scalar::Float(1.0))?)?)?;
            let gd = mul(&g, &d)?;
            let gd = where_(&eq_scalar(&b, 0.0)?, &zeros_like(&gd)?, &gd)?;
            Some(self.shapes.sum_to(&gd, 0)?)
        } else {
            None
        };
        let gb = if ctx.needs_input_grad(1) {
            let y = ctx.saved(self.y as usize)?;
            let d = mul(&y, &log(&a)?)?;
            let zero_base = logical_and(&eq_scalar(&a, 0.0)?, &ge_scalar(&b, 0.0)?)?;
            let d = where_(&zero_base, &zeros_like(&d)?, &d)?;
            Some(self.shapes.sum_to(&mul(&g, &d)?, 1)?)
        } else {
            None
        };
        Ok(smallvec::smallvec![ga, gb])
    }
}

#[derive(Clone)]
pub struct PowBackward2 {
    base: f64,
    y: u8,
}
impl Backward for PowBackward2 {
    fn name(&self) -> Cow<'static, str> {
        "PowBackward2".into()
    }
    // d sˣ/dx = sˣ·ln s
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let y = ctx.saved(self.y as usize)?;
        Ok(smallvec::smallvec![Some(mul(
            &grad0(g)?,
            &mul_scalar(&y, Scalar::Float(self.base.ln()))?
        )?)])
    }
}
