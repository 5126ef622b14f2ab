//! softmax and log_softmax along a dim, with their backward nodes.

use super::elementwise::{Saver, grad0};
use super::reduce::resolve_dims;
use super::{apply, new_tensor};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::autograd::grad_mode::with_grad_mode;
use crate::backend as k;
use crate::dtype::DType;
use crate::ops::BackwardOp;
use crate::ops::*;
use crate::tensor::Tensor;
use crate::{Error, Result};
use std::borrow::Cow;

/// softmax / log_softmax along `dim` (integer inputs are computed in float32).
pub fn softmax(x: &Tensor, dim: i64, log_: bool) -> Result<Tensor> {
    // torch wraps the dim first, and returns an empty input as it is, whatever its dtype
    let wrapped = crate::shape::wrap_dim(dim, x.ndim())?;
    if x.numel() == 0 && !x.dtype().is_float() {
        return zeros_like(x);
    }
    if !x.dtype().is_float() {
        let name = if x.dtype() == DType::Bool {
            "Bool"
        } else {
            "Long"
        };
        let kind = if log_ { "log_softmax" } else { "softmax" };
        let kernel = if x.ndim() <= 1 || wrapped == x.ndim() - 1 {
            "lastdim_kernel_impl"
        } else {
            "kernel_impl"
        };
        return Err(Error::not_implemented(format!(
            "\"{kind}_{kernel}\" not implemented for '{name}'"
        )));
    }
    let x = x.clone();
    let d = resolve_dims(&x, Some(&[dim]))?;
    let di: Vec<i64> = d.iter().map(|&i| i as i64).collect();
    apply(
        if log_ {
            "aten::_log_softmax"
        } else {
            "aten::_softmax"
        },
        &[&x],
        || {
            with_grad_mode(false, || {
                if x.numel() == 0 {
                    return zeros_like(&x); // (a fresh tensor, never an alias)
                }
                if let [dim] = d.as_slice() {
                    let s = x.snapshot();
                    if let Some(buf) = k::softmax(&s.storage.read(), &s.layout, *dim, log_)? {
                        return Ok(new_tensor(buf, &s.layout.shape));
                    }
                }
                let m = amax(&x, Some(&di), true, true, false)?;
                let z = sub(&x, &m)?;
                let e = exp(&z)?;
                let s = sum(&e, Some(&di), true)?;
                let r = if log_ {
                    sub(&z, &log(&s)?)?
                } else {
                    div(&e, &s)?
                };
                // (torch's softmax kernels write a row-major result)
                contiguous(&r)
            })
        },
        |y| {
            let mut s = Saver::default();
            s.output(y);
            let dim = di.first().copied().unwrap_or(0);
            if log_ {
                (BackwardOp::from(LogSoftmaxBackward0 { dim }), s.list)
            } else {
                (BackwardOp::from(SoftmaxBackward0 { dim }), s.list)
            }
        },
    )
}

#[derive(Clone)]
pub struct SoftmaxBackward0 {
    dim: i64,
}
impl Backward for SoftmaxBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![("dim", F::Int(self.dim)), ("result", F::Tensor(Some(0)))]
    }
    fn name(&self) -> Cow<'static, str> {
        "SoftmaxBackward0".into()
    }
    // dx = y·(g - Σ g·y); the Jacobian diag(y) - y·yᵀ is symmetric: the tangent is the same
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        Some(self.apply(ctx, t))
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let (g, y) = (grad0(g)?, ctx.saved(0)?);
        if let Some(r) = fused_backward(&g, &y, self.dim, false) {
            return Ok(smallvec::smallvec![Some(r)]);
        }
        let s = sum(&mul(&g, &y)?, Some(&[self.dim]), true)?;
        Ok(smallvec::smallvec![Some(mul(&y, &sub(&g, &s)?)?)])
    }
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        let run = || -> Result<Grads> {
            let (g, y) = (grad0(g)?, ctx.saved(0)?);
            let dim = batched_dim(self.dim, &y)?;
            let y = expand(&y, &g.shape())?;
            if let Some(r) = fused_backward(&g, &y, dim, false) {
                return Ok(smallvec::smallvec![Some(r)]);
            }
            let s = sum(&mul(&g, &y)?, Some(&[dim]), true)?;
            Ok(smallvec::smallvec![Some(mul(&y, &sub(&g, &s)?)?)])
        };
        Some(run())
    }
}

/// A saved tensor's dim `d` as a dim of a batched gradient (one leading dim more).
fn batched_dim(d: i64, y: &Tensor) -> Result<i64> {
    Ok(crate::shape::wrap_dim(d, y.ndim())? as i64 + 1)
}

#[derive(Clone)]
pub struct LogSoftmaxBackward0 {
    dim: i64,
}
impl Backward for LogSoftmaxBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![("dim", F::Int(self.dim)), ("result", F::Tensor(Some(0)))]
    }
    fn name(&self) -> Cow<'static, str> {
        "LogSoftmaxBackward0".into()
    }
    // dx = g - exp(y)·Σ g; the tangent is t - Σ t·exp(y)
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let t = t.first()?.as_ref()?;
        let run = || -> Result<Grads> {
            let p = exp(&ctx.saved(0)?)?;
            let s = sum(&mul(t, &p)?, Some(&[self.dim]), true)?;
            Ok(smallvec::smallvec![Some(sub(t, &s)?)])
        };
        Some(run())
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let (g, y) = (grad0(g)?, ctx.saved(0)?);
        if let Some(r) = fused_backward(&g, &y, self.dim, true) {
            return Ok(smallvec::smallvec![Some(r)]);
        }
        let s = sum(&g, Some(&[self.dim]), true)?;
        Ok(smallvec::smallvec![Some(sub(&g, &mul(&exp(&y)?, &s)?)?)])
    }
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        let run = || -> Result<Grads> {
            let (g, y) = (grad0(g)?, ctx.saved(0)?);
            let dim = batched_dim(self.dim, &y)?;
            let y = expand(&y, &g.shape())?;
            if let Some(r) = fused_backward(&g, &y, dim, true) {
                return Ok(smallvec::smallvec![Some(r)]);
            }
            let s = sum(&g, Some(&[dim]), true)?;
            Ok(smallvec::smallvec![Some(sub(&g, &mul(&exp(&y)?, &s)?)?)])
        };
        Some(run())
    }
}

/// softmax's or log_softmax's backward in one kernel, where nothing is recorded (no
/// `create_graph`: the composed ops record the double backward's graph), the dim is the
/// last and `g`, `y` have one float dtype and shape.
fn fused_backward(g: &Tensor, y: &Tensor, dim: i64, log: bool) -> Option<Tensor> {
    if !crate::ops::unrecorded() || g.shape() != y.shape() || g.dtype() != y.dtype() {
        return None;
    }
    let last = crate::shape::wrap_dim(dim, y.ndim()).ok()? + 1 == y.ndim().max(1);
    if !last {
        return None;
    }
    let (sg, sy) = (g.snapshot(), y.snapshot());
    let buf = {
        let (bg, by) = (sg.storage.read(), sy.storage.read());
        // (a device error here reappears, reported, on the composed path)
        k::softmax_backward(&bg, &sg.layout, &by, &sy.layout, log).ok()??
    };
    Some(new_tensor(buf, &sy.layout.shape))
}
