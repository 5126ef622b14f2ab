//! Small linear-algebra ops with nodes of their own, as torch's: the cross product
//! (`linalg.cross` / `torch.cross`, LinalgCrossBackward0), the p-norm distance (`dist`,
//! DistBackward0) and the joint min and max (`aminmax`, AminmaxBackward0, one node for
//! both results).

use super::elementwise::{Saver, grad0};
use super::reduce::ReduceDims;
use super::*;
use crate::autograd::function::{Backward, BackwardCtx, Grads, SavedField};
use crate::autograd::grad_mode::with_grad_mode;
use crate::backend::ReduceOp;
use crate::dtype::Scalar;
use crate::{Error, Result};
use std::borrow::Cow;

/// `linalg.cross(a, b, dim)`: the cross product of 3-vectors along `dim` (the operands
/// broadcast; their dtypes must agree, as torch's). Each component is
/// `fma(a_i, b_j, -(a_j·b_i))`, the contraction torch's compiled kernel computes, so the
/// values are torch's bits.
pub fn cross(a: &Tensor, b: &Tensor, dim: i64) -> Result<Tensor> {
    // torch's checks, in its order: the ranks, the dim's sizes, then the broadcast
    if a.ndim() != b.ndim() {
        return Err(Error::runtime(
            "linalg.cross: inputs must have the same number of dimensions.",
        ));
    }
    let d = crate::shape::wrap_dim(dim, a.ndim())?;
    let (la, lb) = (a.shape()[d], b.shape()[d]);
    if la != 3 || lb != 3 {
        return Err(Error::runtime(format!(
            "linalg.cross: inputs dimension {dim} must have length 3. Got {la} and {lb}"
        )));
    }
    let shape = crate::shape::broadcast_shapes(&a.shape(), &b.shape())?;
    if a.dtype() != b.dtype() {
        return Err(Error::runtime(format!(
            "expected scalar type {} but found {}",
            a.dtype().scalar_type_name(),
            b.dtype().scalar_type_name()
        )));
    }
    if a.dtype() == crate::dtype::DType::Bool {
        return Err(Error::runtime("\"cross\" not implemented for 'Bool'"));
    }
    apply(
        "aten::linalg_cross",
        &[a, b],
        || with_grad_mode(false, || cross_values(a, b, &shape, d)),
        |_| {
            let mut s = Saver::default();
            let needs = [crate::ops::wants_grad(a), crate::ops::wants_grad(b)];
            // self's gradient reads other and other's reads self
            let saved = [s.input_if(needs[1], a), s.input_if(needs[0], b)];
            let node = LinalgCrossBackward0 {
                dim,
                d,
                shapes: Box::new([a.shape(), b.shape()]),
                saved,
            };
            (node, s.list)
        },
    )
}

/// The cross product's values: `a` and `b` expanded to `shape`, three components each
/// one fused multiply-add (torch's contraction) over narrowed views.
fn cross_values(a: &Tensor, b: &Tensor, shape: &[usize], d: usize) -> Result<Tensor> {
    let (a, b) = (expand(a, shape)?, expand(b, shape)?);
    let part = |t: &Tensor, i: i64| narrow(t, d as i64, i, 1);
    let (a0, a1, a2) = (part(&a, 0)?, part(&a, 1)?, part(&a, 2)?);
    let (b0, b1, b2) = (part(&b, 0)?, part(&b, 1)?, part(&b, 2)?);
    // a_i·b_j - a_j·b_i as fma(a_i, b_j, -(a_j·b_i)) (addcmul's fma, value 1)
    let one = Scalar::Int(1);
    let comp = |ai: &Tensor, bj: &Tensor, aj: &Tensor, bi: &Tensor| {
        addcmul(&neg(&mul(aj, bi)?)?, ai, bj, one)
    };
    let r = [
        comp(&a1, &b2, &a2, &b1)?,
        comp(&a2, &b0, &a0, &b2)?,
        comp(&a0, &b1, &a1, &b0)?,
    ];
    cat(&r, d as i64)
}

/// LinalgCrossBackward0: derivatives.yaml's `cross(other, grad)` for self and
/// `cross(grad, self)` for other (recorded, so double backward works), each summed back
/// to its operand's shape.
#[derive(Clone)]
pub struct LinalgCrossBackward0 {
    /// the dim as given (torch's `_saved_dim`)
    dim: i64,
    /// ... and wrapped against the broadcast shape
    d: usize,
    shapes: Box<[crate::shape::Shape; 2]>,
    /// self (read by other's gradient) and other (read by self's)
    saved: [Option<u8>; 2],
}
impl Backward for LinalgCrossBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("dim", SavedField::Int(self.dim)),
            ("other", SavedField::Tensor(self.saved[1])),
            ("self", SavedField::Tensor(self.saved[0])),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "LinalgCrossBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let d = self.d as i64;
        let mut out = Grads::new();
        for i in 0..2 {
            out.push(if ctx.needs_input_grad(i) {
                let r = if i == 0 {
                    let other = elementwise::get(ctx, self.saved[1])?;
                    cross(&other, &g, d)?
                } else {
                    let x = elementwise::get(ctx, self.saved[0])?;
                    cross(&g, &x, d)?
                };
                Some(super::sum_to(&r, &self.shapes[i])?)
            } else {
                None
            });
        }
        Ok(out)
    }
    // derivatives.yaml: cross(self_t, other_p) + cross(self_p, other_t)
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        Some((|| {
            let d = self.d as i64;
            let mut total: Option<Tensor> = None;
            if let Some(ta) = t.first().and_then(Option::as_ref) {
                let other = elementwise::get(ctx, self.saved[1])?;
                total = Some(cross(ta, &other, d)?);
            }
            if let Some(tb) = t.get(1).and_then(Option::as_ref) {
                let x = elementwise::get(ctx, self.saved[0])?;
                let c = cross(&x, tb, d)?;
                total = Some(match total {
                    Some(s) => add(&s, &c)?,
                    None => c,
                });
            }
            Ok(smallvec::smallvec![total])
        })())
    }
}

/// `dist(a, b, p)`: the p-norm of `a - b` (broadcast), one node (DistBackward0).
pub fn dist(a: &Tensor, b: &Tensor, p: f64) -> Result<Tensor> {
    let diff = with_grad_mode(false, || sub(a, b))?;
    if !diff.dtype().is_float() {
        return Err(Error::not_implemented(format!(
            "norm(): input dtype should be either floating point or complex. Got {} instead.",
            diff.dtype().scalar_type_name()
        )));
    }
    apply(
        "aten::dist",
        &[a, b],
        || with_grad_mode(false, || norm(&diff, p, None, false)),
        |y| {
            let mut s = Saver::default();
            let x = s.input_if(true, a);
            let o = s.input_if(true, b);
            let r = s.output(y);
            let node = DistBackward0 {
                p,
                shapes: Box::new([a.shape(), b.shape()]),
                saved: [x, o, Some(r)],
            };
            (node, s.list)
        },
    )
}

/// DistBackward0: `norm_backward(grad, self - other, p, result)` for self and its
/// negation for other, through the vector norm's own formula.
#[derive(Clone)]
pub struct DistBackward0 {
    p: f64,
    shapes: Box<[crate::shape::Shape; 2]>,
    /// self, other, result
    saved: [Option<u8>; 3],
}
impl DistBackward0 {
    /// The gradient of ‖d‖ₚ for d = self - other (of the broadcast shape).
    fn d_norm(&self, ctx: &BackwardCtx<'_>, g: &Tensor) -> Result<Tensor> {
        let x = elementwise::get(ctx, self.saved[0])?;
        let o = elementwise::get(ctx, self.saved[1])?;
        let y = elementwise::get(ctx, self.saved[2])?;
        let diff = sub(&x, &o)?;
        let all: Vec<usize> = (0..diff.ndim()).collect();
        let r = ReduceDims::new(diff.shape(), &all, false);
        reduce::norm_grad(&r, &diff, &y, g, self.p, false)
    }
}
impl Backward for DistBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        let p = if self.p.fract() == 0.0 && self.p.is_finite() {
            Scalar::Int(self.p as i64)
        } else {
            Scalar::Float(self.p)
        };
        vec![
            ("other", SavedField::Tensor(self.saved[1])),
            ("p", SavedField::Scalar(p)),
            ("result", SavedField::Tensor(self.saved[2])),
            ("self", SavedField::Tensor(self.saved[0])),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "DistBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        if self.p == 0.0 {
            // torch's norm_backward gives no gradient for p = 0 (a count)
            return Ok(smallvec::smallvec![None, None]);
        }
        let g = grad0(g)?;
        let d = self.d_norm(ctx, &g)?;
        let mut out = Grads::new();
        out.push(if ctx.needs_input_grad(0) {
            Some(super::sum_to(&d, &self.shapes[0])?)
        } else {
            None
        });
        out.push(if ctx.needs_input_grad(1) {
            Some(super::sum_to(&neg(&d)?, &self.shapes[1])?)
        } else {
            None
        });
        Ok(out)
    }
}

/// `aminmax(x, dim=None, keepdim=False)`: the min and the max (over everything, or along
/// `dim`), one node for both (AminmaxBackward0).
pub fn aminmax(x: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<(Tensor, Tensor)> {
    if x.numel() == 0 {
        let empty_dim = match dim {
            None => true,
            Some(d) => x.ndim() > 0 && x.shape()[crate::shape::wrap_dim(d, x.ndim())?] == 0,
        };
        if empty_dim {
            return Err(Error::runtime(
                "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.",
            ));
        }
    }
    let dims: Option<Vec<i64>> = dim.map(|d| vec![d]);
    let d = reduce::resolve_dims(x, dims.as_deref())?;
    let shape = x.shape();
    let outs = apply_multi(
        "aten::aminmax",
        &[x],
        || {
            Ok(vec![
                reduce::reduce_kernel(ReduceOp::Min, x, &d, keepdim)?,
                reduce::reduce_kernel(ReduceOp::Max, x, &d, keepdim)?,
            ])
        },
        |outs| {
            use crate::autograd::saved::SavedTensor;
            let list = smallvec::smallvec![
                SavedTensor::input(x),
                SavedTensor::output(&outs[0], 0),
                SavedTensor::output(&outs[1], 1),
            ];
            let node = AminmaxBackward0 {
                r: ReduceDims::new(shape.clone(), &d, keepdim),
                dim,
            };
            (node, list)
        },
    )?;
    let mut it = outs.into_iter();
    match (it.next(), it.next()) {
        (Some(lo), Some(hi)) => Ok((lo, hi)),
        _ => Err(Error::Internal("aminmax: two outputs".into())),
    }
}

/// AminmaxBackward0: each result's gradient goes to the elements equal to it, split
/// evenly among ties (torch's `aminmax_backward`, amin's and amax's formula), summed.
#[derive(Clone)]
pub struct AminmaxBackward0 {
    r: Box<ReduceDims>,
    /// the dim as given (None: everything)
    dim: Option<i64>,
}
impl AminmaxBackward0 {
    /// `g` (of a result) spread over the elements of `x` equal to that result `y`.
    fn spread(&self, x: &Tensor, y: &Tensor, g: &Tensor, batched: bool) -> Result<Tensor> {
        let y = self.r.expand_back(y)?;
        let mask = to_dtype(&eq(x, &y)?, x.dtype())?;
        let dims: Vec<i64> = self.r.dims.iter().map(|&d| d as i64).collect();
        let count = expand(&sum(&mask, Some(&dims), true)?, &self.r.shape)?;
        let g = self.r.expand_back_maybe_batched(g, batched)?;
        div(&mul(&g, &mask)?, &count)
    }
    fn grads(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>], batched: bool) -> Result<Grads> {
        let x = ctx.saved(0)?;
        let mut total: Option<Tensor> = None;
        for (i, gi) in g.iter().enumerate().take(2) {
            let Some(gi) = gi else { continue };
            let part = self.spread(&x, &ctx.saved(1 + i)?, gi, batched)?;
            total = Some(match total {
                Some(t) => add(&t, &part)?,
                None => part,
            });
        }
        let total = match total {
            Some(t) => t,
            None => zeros_like(&x)?,
        };
        Ok(smallvec::smallvec![Some(total)])
    }
}
impl Backward for AminmaxBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("dim", self.dim.map_or(SavedField::None, SavedField::Int)),
            ("keepdim", SavedField::Bool(self.r.keepdim)),
            ("max", SavedField::Tensor(Some(2))),
            ("min", SavedField::Tensor(Some(1))),
            ("self", SavedField::Tensor(Some(0))),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "AminmaxBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.grads(ctx, g, false)
    }
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.grads(ctx, g, true))
    }
    // derivatives.yaml's aminmax_jvp: the tangent averaged over the elements equal to
    // each result
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let t = t.first()?.as_ref()?;
        Some((|| {
            let x = ctx.saved(0)?;
            let dims: Vec<i64> = self.r.dims.iter().map(|&d| d as i64).collect();
            let mut out = Grads::new();
            for i in 0..2 {
                let y = self.r.expand_back(&ctx.saved(1 + i)?)?;
                let mask = to_dtype(&eq(&x, &y)?, t.dtype())?;
                let num = sum(&mul(t, &mask)?, Some(&dims), self.r.keepdim)?;
                let den = sum(&mask, Some(&dims), self.r.keepdim)?;
                out.push(Some(div(&num, &den)?));
            }
            Ok(out)
        })())
    }
}
