//! Comparisons and selection: maximum/minimum, comparison, logical and bitwise ops
//! (no derivative), where and clamp (their nodes: the selection table's rows,
//! `selection.rs`), and the masked gradient of piecewise ops.

use super::copy::to_dtype;
use super::creation::zeros_like;
use super::elementwise::*;
use super::selection::{BoundArg, Reads, SelectOp, record};
use super::{apply, new_tensor};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::autograd::grad_mode::with_grad_mode;
use crate::backend::{self as k, BinaryFn, BinaryOp};
use crate::dtype::{DType, ResultType, Scalar};
use crate::layout::Layout;
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;
use crate::{Error, Result};
use std::borrow::Cow;

/// `torch.maximum` / `torch.minimum` (`x.max(other)`): the binary table's rows.
pub fn extremum(a: &Tensor, b: &Tensor, is_max: bool) -> Result<Tensor> {
    let op = if is_max {
        crate::backend::BinaryFn::Maximum
    } else {
        crate::backend::BinaryFn::Minimum
    };
    super::binary_fn(op, Operand::T(a), Operand::T(b))
}

/// Comparison (no grad): returns a bool tensor.
pub fn compare(op: BinaryOp, a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    // (casts inside the kernel, as torch's TensorIterator: no autograd, so an input's
    // history is never read, nor a stale view's re-derived)
    let (a, b, _) = with_grad_mode(false, || promote(a, b, false))?;
    super::apply_nondiff(op.aten_name(), || binary_kernel(op, &a, &b))
}

/// Logical and/or of two tensors (no grad).
pub fn logical(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (a, b) = with_grad_mode(false, || {
        Ok::<_, Error>((to_dtype(a, DType::Bool)?, to_dtype(b, DType::Bool)?))
    })?;
    super::apply_nondiff(op.aten_name(), || binary_kernel(op, &a, &b))
}

/// `a & b`: bitwise AND of integer or bool tensors and numbers (torch.bitwise_and).
pub fn bitwise_and(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    bitwise(BinaryOp::BitAnd, a, b, "bitwise_and_cpu")
}
/// `a | b` (torch.bitwise_or).
pub fn bitwise_or(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    bitwise(BinaryOp::BitOr, a, b, "bitwise_or_cpu")
}
/// `a ^ b` (torch.bitwise_xor).
pub fn bitwise_xor(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    bitwise(BinaryOp::BitXor, a, b, "bitwise_xor_cpu")
}

fn bitwise(op: BinaryOp, a: Operand<'_>, b: Operand<'_>, kernel: &str) -> Result<Tensor> {
    let (a, b, dtype) = with_grad_mode(false, || promote(a, b, false))?;
    if dtype.is_float() {
        return Err(Error::not_implemented(format!(
            "\"{kernel}\" not implemented for 'Float'"
        )));
    }
    super::apply_nondiff(op.aten_name(), || binary_kernel(op, &a, &b))
}

/// `torch.gcd`: the greatest common divisor of (broadcast) integer elements.
pub fn gcd(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    integer_only(BinaryOp::Gcd, a, b, "gcd_cpu")
}
/// `torch.lcm`: the least common multiple of (broadcast) integer elements.
pub fn lcm(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    integer_only(BinaryOp::Lcm, a, b, "lcm_cpu")
}

/// A no-grad binary op of integers (int64, the one integer dtype): torch's
/// NotImplementedError for bool and float operands.
fn integer_only(op: BinaryOp, a: Operand<'_>, b: Operand<'_>, kernel: &str) -> Result<Tensor> {
    let (a, b, dtype) = with_grad_mode(false, || promote(a, b, false))?;
    if dtype != DType::I64 {
        return Err(Error::not_implemented(format!(
            "\"{kernel}\" not implemented for '{}'",
            dtype.scalar_type_name()
        )));
    }
    super::apply_nondiff(op.aten_name(), || binary_kernel(op, &a, &b))
}

/// `where(cond, a, b)`.
pub fn where_op(cond: &Tensor, a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    where_as(cond, a, b, true)
}

/// `where` with a row-major result (masked_fill's: torch's is not in the input's format).
pub(crate) fn where_row_major(c: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    where_as(c, Operand::T(a), Operand::T(b), false)
}

fn where_as(cond: &Tensor, a: Operand<'_>, b: Operand<'_>, keep_format: bool) -> Result<Tensor> {
    if cond.dtype() != DType::Bool {
        return Err(Error::runtime(format!(
            "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
            cond.dtype().scalar_type_name()
        )));
    }
    let (a, b, _) = promote(a, b, false)?;
    let reads = Reads {
        condition: Some(cond),
        ..Reads::NONE
    };
    record(SelectOp::Where, &[Some(&a), Some(&b)], reads, || {
        let (sc, sa, sb) = (cond.snapshot(), a.snapshot(), b.snapshot());
        let shape = broadcast_shapes(
            &broadcast_shapes(&sc.layout.shape, &sa.layout.shape)?,
            &sb.layout.shape,
        )?;
        super::creation::guard(&shape, sa.dtype)?;
        let expanded = [
            sc.layout.expand(&shape)?,
            sa.layout.expand(&shape)?,
            sb.layout.expand(&shape)?,
        ];
        let (rc, ra, rb) = (sc.storage.read(), sa.storage.read(), sb.storage.read());
        if rc.dtype() != DType::Bool {
            return Err(Error::Internal("where: condition is not bool".into()));
        }
        k::check_same_device(&[&rc, &ra, &rb])?;
        let kernel = |l: &[Layout]| k::where_(&rc, &l[0], &ra, &l[1], &rb, &l[2]);
        if keep_format {
            elementwise_out(
                &shape,
                &[&sc.layout, &sa.layout, &sb.layout],
                &expanded,
                kernel,
            )
        } else {
            Ok(new_tensor(kernel(&expanded)?, &shape))
        }
    })
}

/// `clamp(x, min, max)` with number bounds.
pub fn clamp(x: &Tensor, min: Option<Scalar>, max: Option<Scalar>) -> Result<Tensor> {
    if min.is_none() && max.is_none() {
        return Err(Error::runtime(
            "torch.clamp: At least one of 'min' or 'max' must not be None",
        ));
    }
    // The bounds take part in type promotion, as numbers do: an int tensor clamped to
    // 0.5 is float32, a bool tensor clamped to 0 is int64.
    let dtype = [min, max]
        .into_iter()
        .flatten()
        .fold(ResultType::default().tensor(x.dtype(), x.ndim()), |r, s| {
            r.scalar(s)
        })
        .finish();
    if dtype == DType::Bool {
        let kernel = match (min, max) {
            (Some(_), None) => "clamp_min_scalar_cpu",
            (None, Some(_)) => "clamp_max_scalar_cpu",
            _ => "clamp_scalar_cpu",
        };
        return Err(Error::not_implemented(format!(
            "\"{kernel}\" not implemented for 'Bool'"
        )));
    }
    let promoted;
    let x = if dtype == x.dtype() {
        x
    } else {
        promoted = to_dtype(x, dtype)?;
        &promoted
    };
    let (min, max) = (min.map(Scalar::as_f64), max.map(Scalar::as_f64));
    let s = x.snapshot();
    let bound = |b: Option<f64>| b.map_or(BoundArg::None, BoundArg::Number);
    let reads = Reads {
        self_: Some(x),
        min: bound(min),
        max: bound(max),
        ..Reads::NONE
    };
    record(SelectOp::Clamp, &[Some(x)], reads, || {
        unary_out(&s.layout, |l| k::clamp(&s.storage.read(), l, min, max))
    })
}

/// `clamp(x, min, max)` with tensor bounds (broadcast): `minimum(maximum(x, min), max)`
/// in the dtype of all three, as one op (ClampBackward0, with torch's derivatives: the
/// selection table's `clamp_tensor` row).
pub fn clamp_tensor(x: &Tensor, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<Tensor> {
    if min.is_none() && max.is_none() {
        return Err(Error::runtime(
            "torch.clamp: At least one of 'min' or 'max' must not be None",
        ));
    }
    let dtype = [Some(x), min, max]
        .into_iter()
        .flatten()
        .fold(ResultType::default(), |r, t| r.tensor(t.dtype(), t.ndim()))
        .finish();
    if dtype == DType::Bool && min.is_some() && max.is_some() {
        return Err(Error::not_implemented(
            "\"clamp_cpu\" not implemented for 'Bool'",
        ));
    }
    // (the casts are recorded ops, as `promote`'s: what a cast input saves goes stale
    // with the input)
    let cast = |t: &Tensor| -> Result<Tensor> {
        let c = to_dtype(t, dtype)?;
        if !c.same(t) {
            c.share_version_of(t);
        }
        Ok(c)
    };
    let xc = cast(x)?;
    let (lo, hi) = (min.map(cast).transpose()?, max.map(cast).transpose()?);
    let reads = Reads {
        self_: Some(x),
        min: min.map_or(BoundArg::None, BoundArg::Tensor),
        max: max.map_or(BoundArg::None, BoundArg::Tensor),
        ..Reads::NONE
    };
    let extremum = |a: &Tensor, b: &Tensor, f: BinaryFn| {
        broadcast_kernel(a, b, |ra, la, rb, lb| k::binary_fn(f, ra, la, rb, lb))
    };
    record(
        SelectOp::ClampTensor,
        &[Some(&xc), lo.as_ref(), hi.as_ref()],
        reads,
        || {
            // both bounds of x's shape, all three contiguous: one pass (CPU, floats)
            if let (Some(l), Some(h)) = (&lo, &hi)
                && l.shape() == xc.shape()
                && h.shape() == xc.shape()
            {
                let (sx, sl, sh) = (xc.snapshot(), l.snapshot(), h.snapshot());
                let (rx, rl, rh) = (sx.storage.read(), sl.storage.read(), sh.storage.read());
                k::check_same_device(&[&rx, &rl, &rh])?;
                if let Some(buf) =
                    k::clamp_between(&rx, &sx.layout, &rl, &sl.layout, &rh, &sh.layout)?
                {
                    return Ok(crate::ops::new_tensor(buf, &xc.shape()));
                }
            }
            let mut r = xc.clone();
            if let Some(lo) = &lo {
                r = extremum(&r, lo, BinaryFn::Maximum)?;
            }
            if let Some(hi) = &hi {
                r = extremum(&r, hi, BinaryFn::Minimum)?;
            }
            Ok(r)
        },
    )
}

/// `g·mask` where `mask` was computed from `x` (relu's and clamp's backward). Like torch's
/// threshold_backward it is recorded as a function of both `g` and `x`, with a zero
/// derivative for `x`, so under create_graph the result requires grad whenever `x` does
/// (a second `grad()` then gives zeros instead of raising).
pub fn masked_grad(g: &Tensor, x: &Tensor, mask: &Tensor, name: &'static str) -> Result<Tensor> {
    let m = to_dtype(mask, g.dtype())?;
    apply(
        name,
        &[g, x],
        // a select, not a product, as torch's threshold_backward and clamp_backward: an
        // infinite gradient where the mask is off gives 0, not NaN
        || with_grad_mode(false, || where_(mask, &g.detach(), &zeros_like(g)?)),
        |_| {
            let mut s = Saver::default();
            s.input_if(true, &m);
            (MaskedGradBackward { name }, s.list)
        },
    )
}

#[derive(Clone)]
pub struct MaskedGradBackward {
    name: &'static str,
}
impl Backward for MaskedGradBackward {
    fn name(&self) -> Cow<'static, str> {
        self.name.into()
    }
    // d(g·m)/dg = m; d/dx = 0 (the mask is piecewise constant in x)
    fn apply(&self, ctx: &BackwardCtx<'_>, grads: &[Option<Tensor>]) -> Result<Grads> {
        let gg = grad0(grads)?;
        let dg = if ctx.needs_input_grad(0) {
            Some(mul(&gg, &ctx.saved(0)?)?)
        } else {
            None
        };
        let dx = if ctx.needs_input_grad(1) {
            // (x's shape, which the mask has: g's may have a batch dim more, when the node
            // was recorded by a batched backward pass with create_graph)
            let m = ctx.saved(0)?;
            Some(if m.shape() == gg.shape() {
                zeros_like(&gg)?
            } else {
                zeros_like(&m)?
            })
        } else {
            None
        };
        Ok(smallvec::smallvec![dg, dx])
    }
    // dg: the mask broadcast against each sample; dx: zeros of x's shape (the mask's) per
    // sample. (A node recorded by a batched pass, whose g has a batch dim more than x,
    // runs once per sample.)
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        grads: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        let run = || -> Result<Option<Grads>> {
            let gg = grad0(grads)?;
            let m = ctx.saved(0)?;
            if gg.shape()[1..] != m.shape()[..] {
                return Ok(None);
            }
            let dg = if ctx.needs_input_grad(0) {
                Some(mul(&gg, &m)?)
            } else {
                None
            };
            let dx = if ctx.needs_input_grad(1) {
                Some(zeros_like(&gg)?)
            } else {
                None
            };
            Ok(Some(smallvec::smallvec![dg, dx]))
        };
        run().transpose()
    }
}

/// `~x` (torch.bitwise_not): logical NOT of a bool tensor, two's complement `-x - 1` of an
/// integer one; floats have no kernel.
pub fn bitwise_not(x: &Tensor) -> Result<Tensor> {
    match x.dtype() {
        DType::Bool => super::logical_not(x),
        DType::I64 => sub_scalar(&super::neg(x)?, Scalar::Int(1)),
        d => Err(Error::not_implemented(format!(
            "\"bitwise_not_cpu\" not implemented for '{}'",
            d.scalar_type_name()
        ))),
    }
}

/// `~x` (Python's operator): [`bitwise_not`] of an integer or bool tensor; torch refuses a
/// float one with a TypeError before any kernel.
pub fn invert(x: &Tensor) -> Result<Tensor> {
    if x.dtype().is_float() {
        return Err(Error::Type(
            "~ (operator.invert) is only implemented on integer and Boolean-type tensors".into(),
        ));
    }
    bitwise_not(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{tensor, tensor_bool, tensor_i64, to_vec};

    #[test]
    fn bitwise_not_by_dtype_as_torch() {
        let i = bitwise_not(&tensor_i64(vec![0, 5, -3], &[3])).unwrap();
        assert_eq!(to_vec(&i), vec![-1.0, -6.0, 2.0]);
        let b = bitwise_not(&tensor_bool(vec![true, false], &[2])).unwrap();
        assert_eq!(to_vec(&b), vec![0.0, 1.0]);
        let e = bitwise_not(&tensor(vec![1.0], &[1])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "\"bitwise_not_cpu\" not implemented for 'Double'"
        );
        assert!(matches!(
            invert(&tensor(vec![1.0], &[1])),
            Err(Error::Type(_))
        ));
    }
}
