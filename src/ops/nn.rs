//! Losses and layers of torch.nn.functional: mse_loss, nll_loss, cross_entropy, linear.

use super::apply;
use super::elementwise::{Saver, grad0};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::autograd::grad_mode::with_grad_mode;
use crate::dtype::{DType, Scalar};
use crate::ops::*;
use crate::tensor::Tensor;
use crate::{Error, Result};
use std::borrow::Cow;

/// How a loss reduces over elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    None,
    Mean,
    Sum,
}

impl Reduction {
    pub fn parse(s: &str) -> Result<Reduction> {
        match s {
            "none" => Ok(Reduction::None),
            "mean" => Ok(Reduction::Mean),
            "sum" => Ok(Reduction::Sum),
            _ => Err(Error::value(format!(
                "{s} is not a valid value for reduction"
            ))),
        }
    }
}

fn reduce(x: &Tensor, r: Reduction) -> Result<Tensor> {
    match r {
        Reduction::None => Ok(x.clone()),
        Reduction::Mean => mean(x, None, false),
        Reduction::Sum => sum(x, None, false),
    }
}

/// `F.mse_loss(input, target, reduction)`.
pub fn mse_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    if reduction == Reduction::None {
        let d = sub(input, target)?;
        return mul(&d, &d);
    }
    apply(
        "aten::mse_loss",
        &[input, target],
        || {
            with_grad_mode(false, || {
                // Σ(x - t)² in one pass where the kernel applies (one dtype and shape,
                // contiguous): the bits of the composed ops below, without their two
                // temporaries
                if input.dtype() == target.dtype() && input.shape() == target.shape() {
                    let (sx, st) = (input.snapshot(), target.snapshot());
                    let mean = reduction == Reduction::Mean;
                    let fused = if std::sync::Arc::ptr_eq(&sx.storage, &st.storage) {
                        let r = sx.storage.read();
                        crate::backend::sq_diff_sum(&r, &sx.layout, &r, &st.layout, mean)?
                    } else {
                        let (rx, rt) = (sx.storage.read(), st.storage.read());
                        crate::backend::sq_diff_sum(&rx, &sx.layout, &rt, &st.layout, mean)?
                    };
                    if let Some(buf) = fused {
                        return new_tensor_on(buf, &[], input.device());
                    }
                }
                let d = sub(&input.detach(), &target.detach())?;
                reduce(&mul(&d, &d)?, reduction)
            })
        },
        |_| {
            let mut s = Saver::default();
            s.input_if(true, input);
            s.input_if(true, target);
            (MseLossBackward0 { reduction }, s.list)
        },
    )
}

#[derive(Clone)]
pub struct MseLossBackward0 {
    reduction: Reduction,
}
impl Backward for MseLossBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        let reduction = match self.reduction {
            Reduction::None => 0,
            Reduction::Mean => 1,
            Reduction::Sum => 2,
        };
        vec![
            ("reduction", F::Int(reduction)),
            ("self", F::Tensor(Some(0))),
            ("target", F::Tensor(Some(1))),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "MseLossBackward0".into()
    }
    // d/dx mean((x-t)²) = 2(x-t)/N; d/dt = -that
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.grads(ctx, g, None)
    }
    // (a reduced loss's per-sample number broadcast over its sample; sums per sample)
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.grads(ctx, g, Some(batch)))
    }
}

impl MseLossBackward0 {
    fn grads(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: Option<usize>,
    ) -> Result<Grads> {
        let (x, t) = (ctx.saved(0)?, ctx.saved(1)?);
        let d = sub(&x, &t)?;
        let n = d.numel().max(1) as f64;
        let k = if self.reduction == Reduction::Mean {
            2.0 / n
        } else {
            2.0
        };
        let mut g = grad0(g)?;
        if let Some(b) = batch
            && g.ndim() == 1
        {
            // each sample's number against every element of d
            let mut dims = vec![b as i64];
            dims.resize(d.ndim() + 1, 1);
            g = reshape(&g, &dims)?;
        }
        let gx = mul(&g, &mul_scalar(&d, Scalar::Float(k))?)?;
        let to = |v: &Tensor, shape: &[usize]| match batch {
            Some(_) => super::sum_to_batched(v, shape),
            None => sum_to(v, shape),
        };
        let gx_in = if ctx.needs_input_grad(0) {
            Some(to(&gx, &x.shape())?)
        } else {
            None
        };
        let gt = if ctx.needs_input_grad(1) {
            Some(to(&neg(&gx)?, &t.shape())?)
        } else {
            None
        };
        Ok(smallvec::smallvec![gx_in, gt])
    }
}

/// `F.nll_loss(log_probs, target, reduction, ignore_index)` for input [N, C] or [C].
pub fn nll_loss(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    ignore_index: i64,
) -> Result<Tensor> {
    if target.dtype() != DType::I64 {
        return Err(Error::runtime(format!(
            "expected scalar type Long but found {}",
            if target.dtype() == DType::F32 {
                "Float"
            } else {
                target.dtype().name()
            }
        )));
    }
    let (x, t) = match input.ndim() {
        1 => (unsqueeze(input, 0)?, reshape(target, &[1])?),
        2 => (input.clone(), target.clone()),
        n => {
            return Err(Error::value(format!(
                "Expected 1 or 2 dimensions for nll_loss input (got {n})"
            )));
        }
    };
    let (n, c) = (x.shape()[0], x.shape()[1]);
    if t.shape().as_slice() != [n] {
        return Err(Error::value(format!(
            "Expected input batch_size ({n}) to match target batch_size ({}).",
            t.numel()
        )));
    }
    // valid targets: class index in range, or ignore_index
    let tv = t.snapshot();
    let targets = move |b: &crate::storage::Buffer, layout: &crate::layout::Layout| {
        let crate::storage::Buffer::I64(v) = b else {
            return Err(Error::Internal("target not int64".into()));
        };
        crate::backend::host::nll_targets(v, layout, c, ignore_index)
            .map_err(|v| Error::index(format!("Target {v} is out of bounds.")))
    };
    let (safe, keep, kept) = {
        let r = tv.storage.read();
        let out = targets(&*crate::backend::host::read_planned(&r)?, &tv.layout)?;
        let kept = out.2;
        // recording a step: the targets are a host plan, recomputed on each replay; the
        // count of targets not ignored is part of the recorded step (the mean's divisor)
        if crate::replay::active() {
            let layout = tv.layout.clone();
            crate::replay::record(
                "nll_loss targets",
                &[&r],
                None,
                &[&out.0, &out.1],
                Box::new(move |i, _| {
                    let (safe, keep, now) = targets(i[0], &layout)?;
                    if now != kept {
                        return Err(Error::runtime(format!(
                            "compile_step: the recorded step's nll_loss counted {kept} targets \
                             not equal to ignore_index and this replay's targets have {now}; the \
                             recorded program no longer matches the step (compile it again)"
                        )));
                    }
                    Ok(smallvec::smallvec![safe, keep])
                }),
            )?;
        }
        out
    };
    let idx = crate::ops::new_tensor_on(safe, &[n, 1], x.device())?;
    let w = to_dtype(
        &crate::ops::new_tensor_on(keep, &[n], x.device())?,
        x.dtype(),
    )?;
    // the mean divides by the number of targets that are not ignored (torch's weight sum)
    let denom = kept as f64;
    let single = input.ndim() == 1;
    let out = apply(
        "aten::nll_loss",
        &[&x],
        || {
            with_grad_mode(false, || {
                let losses = match nll_losses(&x, &idx, &w)? {
                    Some(l) => l,
                    None => {
                        let picked = reshape(&gather(&x.detach(), 1, &idx)?, &[n as i64])?;
                        neg(&mul(&picked, &w)?)?
                    }
                };
                match reduction {
                    Reduction::None => Ok(losses),
                    Reduction::Sum => sum(&losses, None, false),
                    Reduction::Mean => {
                        div_scalar(&sum(&losses, None, false)?, Scalar::Float(denom))
                    }
                }
            })
        },
        |_| {
            let mut s = Saver::default();
            s.input_if(true, &idx);
            s.input_if(true, &w);
            (
                NllLossBackward0 {
                    reduction,
                    n,
                    c,
                    denom,
                },
                s.list,
            )
        },
    )?;
    if single && reduction == Reduction::None {
        reshape(&out, &[])
    } else {
        Ok(out)
    }
}

/// `-(x[i, idx[i]] * w[i])` per sample in one kernel (see `backend::nll_losses`), `None`
/// where the backend composes it.
fn nll_losses(x: &Tensor, idx: &Tensor, w: &Tensor) -> Result<Option<Tensor>> {
    let (sx, si, sw) = (x.snapshot(), idx.snapshot(), w.snapshot());
    // (idx and w are the op's own fresh tensors: whole contiguous buffers)
    let whole = |l: &crate::layout::Layout| l.offset == 0 && l.is_contiguous();
    if !whole(&si.layout) || !whole(&sw.layout) {
        return Ok(None);
    }
    let (rx, ri, rw) = (sx.storage.read(), si.storage.read(), sw.storage.read());
    let out = crate::backend::nll_losses(&rx, &sx.layout, &ri, &rw)?;
    out.map(|b| crate::ops::new_tensor_on(b, &[sx.layout.shape[0]], x.device()))
        .transpose()
}

#[derive(Clone)]
pub struct NllLossBackward0 {
    reduction: Reduction,
    n: usize,
    c: usize,
    denom: f64,
}
impl Backward for NllLossBackward0 {
    fn name(&self) -> Cow<'static, str> {
        "NllLossBackward0".into()
    }
    // d/dx[i, t_i] = -w_i·g (÷ Σw for mean); zero elsewhere
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let (idx, w) = (ctx.saved(0)?, ctx.saved(1)?);
        let g = grad0(g)?;
        let per = match self.reduction {
            Reduction::None => mul(&reshape(&g, &[self.n as i64])?, &w)?,
            Reduction::Sum => mul(&expand(&g, &[self.n])?, &w)?,
            // torch writes no gradient for ignored targets, so with every target ignored
            // the gradient is zero (w is all zero), not 0/0
            Reduction::Mean => div_scalar(
                &mul(&expand(&g, &[self.n])?, &w)?,
                Scalar::Float(if self.denom == 0.0 { 1.0 } else { self.denom }),
            )?,
        };
        let src = reshape(&neg(&per)?, &[self.n as i64, 1])?;
        Ok(smallvec::smallvec![Some(scatter_add_zeros(
            &[self.n, self.c],
            1,
            &idx,
            &src
        )?)])
    }
    // each sample's numbers scattered into its own [n, c] slice
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        let run = || -> Result<Grads> {
            let (idx, w) = (ctx.saved(0)?, ctx.saved(1)?);
            let g = grad0(g)?;
            let (b, n) = (batch as i64, self.n as i64);
            let per = match self.reduction {
                Reduction::None => mul(&reshape(&g, &[b, n])?, &w)?,
                Reduction::Sum => mul(&expand(&reshape(&g, &[b, 1])?, &[batch, self.n])?, &w)?,
                Reduction::Mean => div_scalar(
                    &mul(&expand(&reshape(&g, &[b, 1])?, &[batch, self.n])?, &w)?,
                    Scalar::Float(if self.denom == 0.0 { 1.0 } else { self.denom }),
                )?,
            };
            let src = reshape(&neg(&per)?, &[b, n, 1])?;
            let idx = expand(
                &unsqueeze(&idx, 0)?,
                &super::batched_shape(batch, &idx.shape()),
            )?;
            Ok(smallvec::smallvec![Some(scatter_add_zeros(
                &[batch, self.n, self.c],
                2,
                &idx,
                &src
            )?)])
        };
        Some(run())
    }
}

/// `F.cross_entropy(input, target)` = nll_loss(log_softmax(input, 1), target).
pub fn cross_entropy(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    ignore_index: i64,
) -> Result<Tensor> {
    let dim = if input.ndim() == 1 { 0 } else { 1 };
    nll_loss(&softmax(input, dim, true)?, target, reduction, ignore_index)
}

/// `F.linear(x, weight, bias)` = x·Wᵀ + b: one addmm node for a 2-D `x` with a bias,
/// as in torch.
pub fn linear(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    match bias {
        Some(b) if x.ndim() == 2 && weight.ndim() == 2 => {
            addmm(b, x, &t(weight)?, Scalar::Int(1), Scalar::Int(1))
        }
        Some(b) => add(&matmul(x, &t(weight)?)?, b),
        None => matmul(x, &t(weight)?),
    }
}
