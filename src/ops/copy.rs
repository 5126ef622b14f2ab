//! Casts and copies: `to` (ToCopyBackward0), `clone` (CloneBackward0) in torch's
//! memory formats, and the gradient layout contract's copy for `.grad`.

use super::elementwise::*;
use super::{apply, new_tensor};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::backend as k;
use crate::device::Device;
use crate::dtype::DType;
use crate::layout::Layout;
use crate::tensor::Tensor;
use crate::{Result, saved};
use std::borrow::Cow;

// ---- casts and copies -----------------------------------------------------------------

/// `x.to(dtype)`: returns `x` itself when the dtype already matches, as torch does.
pub fn to_dtype(x: &Tensor, dtype: DType) -> Result<Tensor> {
    if x.dtype() == dtype {
        return Ok(x.clone());
    }
    let s = x.snapshot();
    let from = s.dtype;
    // (torch's `_to_copy` keeps the memory format)
    let fwd = || preserving_format(&s.layout, |l| k::cast(&s.storage.read(), l, dtype));
    if !dtype.is_float() {
        return super::apply_nondiff("aten::to", fwd);
    }
    apply("aten::to", &[x], fwd, |_| {
        (
            ToCopyBackward0 {
                from,
                from_device: None,
            },
            saved![],
        )
    })
}

/// `x.to(device)`: `x` itself when it is there already, else a copy there in `x`'s
/// memory format (ToCopyBackward0: the gradient goes back to `x`'s device).
pub fn to_device(x: &Tensor, device: Device) -> Result<Tensor> {
    let s = x.snapshot();
    let from = s.storage.device();
    if from == device {
        return Ok(x.clone());
    }
    k::on(device)?; // (torch's error for a device that is not there, before any copy)
    let dtype = s.dtype;
    let fwd = || {
        preserving_format(&s.layout, |l| {
            let here = k::cast(&s.storage.read(), l, dtype)?;
            match device {
                Device::Cpu => Ok(k::host::read(&here)?.into_owned()),
                Device::Cuda(i) => k::cuda::backend::upload(&here, i),
            }
        })
    };
    if !dtype.is_float() {
        return super::apply_nondiff("aten::to", fwd);
    }
    apply("aten::to", &[x], fwd, |_| {
        (
            ToCopyBackward0 {
                from: dtype,
                from_device: Some(from),
            },
            saved![],
        )
    })
}

#[derive(Clone)]
pub struct ToCopyBackward0 {
    from: DType,
    /// Where the input was, for a copy between devices.
    from_device: Option<Device>,
}
impl Backward for ToCopyBackward0 {
    fn name(&self) -> Cow<'static, str> {
        "ToCopyBackward0".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let g = if self.from.is_float() {
            to_dtype(&g, self.from)?
        } else {
            g
        };
        Ok(smallvec::smallvec![Some(match self.from_device {
            Some(d) => to_device(&g, d)?,
            None => g,
        })])
    }
    // (shape-agnostic: the same over a batch)
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.apply(ctx, g))
    }
}

/// `x.clone()`: a contiguous copy with history (CloneBackward0).
pub fn clone_tensor(x: &Tensor) -> Result<Tensor> {
    clone_as(x, true)
}

/// A row-major copy of `x` (`contiguous()`), recorded as `clone`.
pub fn clone_row_major(x: &Tensor) -> Result<Tensor> {
    clone_as(x, false)
}

/// `clone()`: in x's memory format (torch's `preserve_format`) if `keep_format`.
fn clone_as(x: &Tensor, keep_format: bool) -> Result<Tensor> {
    let s = x.snapshot();
    crate::storage::alloc_guard_strided(&s.layout.shape, s.dtype)?;
    apply(
        "aten::clone",
        &[x],
        || {
            let copy = |l: &Layout| k::cast(&s.storage.read(), l, s.dtype);
            if keep_format {
                preserving_format(&s.layout, copy)
            } else {
                Ok(new_tensor(copy(&s.layout)?, &s.layout.shape))
            }
        },
        |_| (CloneBackward0, saved![]),
    )
}

/// torch's `clone_preserve_strides`, what its `*_scatter` ops write into: a copy of x's
/// whole storage seen with x's sizes, strides and offset (a tensor of its own, not a
/// view); a row-major copy when x's elements overlap (a zero stride over two or more).
/// No autograd: the callers record their own node.
pub fn clone_preserve_strides(x: &Tensor) -> Result<Tensor> {
    let s = x.snapshot();
    let l = &s.layout;
    let overlaps = l
        .shape
        .iter()
        .zip(&l.strides)
        .any(|(&n, &st)| st == 0 && n > 1);
    let storage = s.storage.read();
    if overlaps {
        crate::storage::alloc_guard_strided(&l.shape, s.dtype)?;
        return Ok(new_tensor(k::cast(&storage, l, s.dtype)?, &l.shape));
    }
    let whole = Layout::contiguous(&[storage.len()]);
    crate::storage::alloc_guard_strided(&whole.shape, s.dtype)?;
    let buf = k::cast(&storage, &whole, s.dtype)?;
    drop(storage);
    let copy = new_tensor(buf, &whole.shape);
    Ok(copy.alias_unsafe(l.clone()))
}

/// Whether `g` is the only way to its memory: nothing else holds `g`, and its storage's
/// other holders are only the bases `g` keeps as a view (a view of a view: each in turn),
/// which nothing else holds. (Storage alone was not enough: the linear layer's weight
/// gradient is a view of its product, the bias gradient a view of a keepdim sum, and both
/// were copied where torch steals them.)
fn sole_owner(g: &Tensor) -> bool {
    use std::sync::Arc;
    if Arc::strong_count(&g.0) != 1 {
        return false;
    }
    let (storage, mut base) = {
        let l = g.lock();
        (l.storage.clone(), l.base().cloned())
    };
    // holders accounted for: `g`, and the clone just taken
    let mut holders = 2;
    while let Some(b) = base {
        // (the view's reference, and `b` here)
        if Arc::strong_count(&b.0) != 2 {
            return false;
        }
        let l = b.lock();
        if !Arc::ptr_eq(&l.storage, &storage) {
            return false;
        }
        holders += 1;
        base = l.base().cloned();
    }
    Arc::strong_count(&storage) == holders
}

/// A detached gradient for `var`'s `.grad`, in torch's "gradient layout contract": with
/// `var`'s strides if `var` is dense (row-major otherwise). `g` itself is reused when it is
/// the sole owner of its storage and already laid out so (torch's AccumulateGrad "steals"
/// such gradients too), or, when `enforce_layout` is off, whatever its layout.
pub fn clone_detached_if_shared(g: Tensor, var: &Layout, enforce_layout: bool) -> Result<Tensor> {
    if !enforce_layout && sole_owner(&g) {
        g.detach_();
        return Ok(g);
    }
    let keep =
        var.is_non_overlapping_and_dense() && !var.is_contiguous() && var.shape == g.layout().shape;
    let gl = g.layout();
    let laid_out = if keep {
        gl.strides == var.strides
    } else {
        gl.is_contiguous()
    };
    if sole_owner(&g) && laid_out && gl.offset == 0 && g.storage().len() == g.numel() {
        g.detach_();
        return Ok(g);
    }
    let s = g.snapshot();
    if !keep {
        return Ok(new_tensor(
            k::cast(&s.storage.read(), &s.layout, s.dtype)?,
            &s.layout.shape,
        ));
    }
    let mut order: Vec<i64> = (0..var.ndim() as i64).collect();
    order.sort_by(|&a, &b| var.strides[b as usize].cmp(&var.strides[a as usize]));
    let buf = k::cast(&s.storage.read(), &s.layout.permute(&order)?, s.dtype)?;
    crate::replay::born(&buf);
    let layout = Layout {
        shape: var.shape.clone(),
        strides: var.strides.clone(),
        offset: 0,
    };
    Ok(Tensor::from_storage(
        std::sync::Arc::new(crate::storage::Storage::new(buf)),
        layout,
        s.dtype,
    ))
}

#[derive(Clone)]
pub struct CloneBackward0;
impl Backward for CloneBackward0 {
    fn name(&self) -> Cow<'static, str> {
        "CloneBackward0".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(grad0(g)?)])
    } // (shape-agnostic: the same over a batch)
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.apply(ctx, g))
    }
}
