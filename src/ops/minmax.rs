//! max / min: full (`max()`, amax / amin over dims: the gradient shared evenly among
//! ties), along a dim with indices (`max(dim)`), and argmax / argmin.

use super::elementwise::{Saver, grad0};
use super::reduce::{ReduceDims, out_shape, reduce_kernel, resolve_dims};
use super::{apply, apply_nondiff, new_tensor};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::backend::{self as k, ReduceOp};
use crate::dtype::DType;
use crate::ops::*;
use crate::shape::Shape;
use crate::tensor::Tensor;
use crate::{Error, Result};
use std::borrow::Cow;

/// Full `max()`/`min()` and `amax`/`amin`: the gradient is shared evenly among ties.
pub fn amax(
    x: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    is_max: bool,
    full_name: bool,
) -> Result<Tensor> {
    let name = match (full_name, is_max) {
        (true, true) => "max",
        (true, false) => "min",
        (false, true) => "amax",
        (false, false) => "amin",
    };
    check_nonempty_reduction(x, dims, name)?;
    let d = resolve_dims(x, dims)?;
    let shape = x.shape();
    let op = if is_max { ReduceOp::Max } else { ReduceOp::Min };
    apply(
        if is_max { "aten::amax" } else { "aten::amin" },
        &[x],
        || reduce_kernel(op, x, &d, keepdim),
        |y| {
            let mut s = Saver::default();
            s.input_if(true, x);
            s.output(y);
            let name = match (full_name, is_max) {
                (true, true) => "MaxBackward1",
                (true, false) => "MinBackward1",
                (false, true) => "AmaxBackward0",
                (false, false) => "AminBackward0",
            };
            (
                AmaxBackward0 {
                    r: ReduceDims::new(shape.clone(), &d, keepdim),
                    name,
                },
                s.list,
            )
        },
    )
}

#[derive(Clone)]
pub struct AmaxBackward0 {
    r: Box<ReduceDims>,
    name: &'static str,
}
impl Backward for AmaxBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        self.r
            .saved_fields([("result", F::Tensor(Some(1))), ("self", F::Tensor(Some(0)))])
    }
    fn name(&self) -> Cow<'static, str> {
        self.name.into()
    }
    // grad flows to the positions equal to the max, split evenly among them
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
}

impl AmaxBackward0 {
    fn grads(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>], batched: bool) -> Result<Grads> {
        let (x, y) = (ctx.saved(0)?, ctx.saved(1)?);
        let y = self.r.expand_back(&y)?;
        let mask = to_dtype(&eq(&x, &y)?, x.dtype())?;
        let dims: Vec<i64> = self.r.dims.iter().map(|&d| d as i64).collect();
        let count = expand(&sum(&mask, Some(&dims), true)?, &self.r.shape)?;
        let g = self.r.expand_back_maybe_batched(&grad0(g)?, batched)?;
        Ok(smallvec::smallvec![Some(div(&mul(&g, &mask)?, &count)?)])
    }
}

/// torch's checks for max/min-style reductions of empty tensors: without a dim it is a
/// RuntimeError; reducing a dim of size zero is an IndexError; other dims are fine. The
/// dims are wrapped and checked one at a time, in the order given, before the reduction
/// looks for repeats (torch's `zero_numel_check_dims`).
fn check_nonempty_reduction(x: &Tensor, dims: Option<&[i64]>, name: &str) -> Result<()> {
    if x.numel() > 0 {
        return Ok(());
    }
    let Some(dims) = dims else {
        return Err(Error::runtime(format!(
            "{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
        )));
    };
    let shape = x.shape();
    // an empty list of dims reduces over all of them
    let all: Vec<i64> = (0..shape.len() as i64).collect();
    let dims = if dims.is_empty() { &all[..] } else { dims };
    for &d in dims {
        let w = crate::shape::wrap_dim(d, shape.len())?;
        if shape.get(w).copied().unwrap_or(1) == 0 {
            return Err(Error::index(format!(
                "{name}(): Expected reduction dim {w} to have non-zero size."
            )));
        }
    }
    Ok(())
}

/// `max(dim, keepdim)` / `min(dim, keepdim)`: (values, indices).
pub fn max_dim(x: &Tensor, dim: i64, keepdim: bool, is_max: bool) -> Result<(Tensor, Tensor)> {
    check_nonempty_reduction(x, Some(&[dim]), if is_max { "max" } else { "min" })?;
    let d = resolve_dims(x, Some(&[dim]))?;
    let s = x.snapshot();
    let (vals, idx) = k::arg_reduce(&s.storage.read(), &s.layout, &d, is_max)?;
    let oshape = out_shape(&s.layout.shape, &d, keepdim);
    let indices = super::new_tensor_on(
        crate::storage::Buffer::I64(idx.into()),
        &oshape,
        s.storage.device(),
    )?;
    let shape = s.layout.shape.clone();
    let ind = indices.clone();
    let values = apply(
        if is_max { "aten::max" } else { "aten::min" },
        &[x],
        || Ok(new_tensor(vals, &oshape)),
        |_| {
            let mut sv = Saver::default();
            sv.input_if(true, &ind);
            (
                MaxBackward0 {
                    shape,
                    dim: d.first().copied().unwrap_or(0),
                    keepdim,
                    is_max,
                },
                sv.list,
            )
        },
    )?;
    Ok((values, indices))
}

#[derive(Clone)]
pub struct MaxBackward0 {
    shape: Shape,
    dim: usize,
    keepdim: bool,
    is_max: bool,
}
impl Backward for MaxBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![
            ("dim", F::Int(self.dim as i64)),
            ("indices", F::Tensor(Some(0))),
            ("keepdim", F::Bool(self.keepdim)),
            ("self_sym_sizes", F::ints(&self.shape)),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        if self.is_max {
            "MaxBackward0"
        } else {
            "MinBackward0"
        }
        .into()
    }
    // the gradient goes to the selected index of each slice
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let mut idx = ctx.saved(0)?;
        let mut g = grad0(g)?;
        if self.shape.is_empty() {
            return Ok(smallvec::smallvec![Some(g)]);
        }
        if !self.keepdim {
            idx = unsqueeze(&idx, self.dim as i64)?;
            g = unsqueeze(&g, self.dim as i64)?;
        }
        Ok(smallvec::smallvec![Some(scatter_add_zeros(
            &self.shape,
            self.dim,
            &idx,
            &g
        )?)])
    }
    // each sample scattered into its own slice (the indices expanded over the samples)
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        let run = || -> Result<Grads> {
            let mut idx = ctx.saved(0)?;
            let mut g = grad0(g)?;
            if self.shape.is_empty() {
                return Ok(smallvec::smallvec![Some(g)]);
            }
            if !self.keepdim {
                idx = unsqueeze(&idx, self.dim as i64)?;
                g = unsqueeze(&g, self.dim as i64 + 1)?;
            }
            let idx = expand(
                &unsqueeze(&idx, 0)?,
                &super::batched_shape(batch, &idx.shape()),
            )?;
            Ok(smallvec::smallvec![Some(scatter_add_zeros(
                &super::batched_shape(batch, &self.shape),
                self.dim + 1,
                &idx,
                &g
            )?)])
        };
        Some(run())
    }
}

/// argmax / argmin (no grad); `dim=None` flattens.
pub fn argmax(x: &Tensor, dim: Option<i64>, keepdim: bool, is_max: bool) -> Result<Tensor> {
    if x.dtype() == DType::Bool {
        return Err(Error::not_implemented(format!(
            "{}(): does not support bool input",
            if is_max { "argmax" } else { "argmin" }
        )));
    }
    let name = if is_max { "argmax" } else { "argmin" };
    if x.numel() == 0 && dim.is_none() {
        return Err(Error::index(format!(
            "{name}(): Expected reduction dim to be specified for input.numel() == 0."
        )));
    }
    if let Some(d) = dim {
        check_nonempty_reduction(x, Some(&[d]), name)?;
    }
    match dim {
        None => apply_nondiff(
            if is_max {
                "aten::argmax"
            } else {
                "aten::argmin"
            },
            || {
                let flat = reshape(&x.detach(), &[-1])?;
                let s = flat.snapshot();
                let (_, idx) = k::arg_reduce(&s.storage.read(), &s.layout, &[0], is_max)?;
                let shape: Shape = if keepdim {
                    smallvec::smallvec![1; x.ndim()]
                } else {
                    Shape::new()
                };
                super::new_tensor_on(
                    crate::storage::Buffer::I64(idx.into()),
                    &shape,
                    s.storage.device(),
                )
            },
        ),
        Some(d) => Ok(max_dim(&x.detach(), d, keepdim, is_max)?.1),
    }
}
