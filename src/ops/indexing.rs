//! Index ops along one dim: gather / scatter-add, index_select / index_add, and
//! masked_fill (torch's advanced indexing, `x[index_tensors]`, is `advanced_indexing.rs`).

use super::elementwise::{Saver, grad0};
use super::{apply, new_tensor};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::autograd::grad_mode::with_grad_mode;
use crate::backend::{self as k, host};
use crate::dtype::{DType, Scalar};
use crate::layout::Layout;
use crate::ops::*;
use crate::shape::{Shape, broadcast_shapes, wrap_dim};
use crate::storage::Buffer;
use crate::tensor::Tensor;
use crate::{Error, Result};
use std::borrow::Cow;

/// An int64 index tensor's values, contiguous, with negative entries wrapped and every
/// entry checked against `size` (advanced indexing's rule: IndexError).
pub(super) fn index_values(index: &Tensor, size: usize, dim: usize) -> Result<Vec<i64>> {
    index_values_as(index, size, dim, IndexRule::Wrap)
}

/// What an op accepts as an index and how it reports one out of range (torch's rules).
#[derive(Clone, Copy, PartialEq)]
enum IndexRule {
    /// `x[idx]`: negatives count from the end; IndexError naming the index.
    Wrap,
    /// gather: `0 <= i < size`; RuntimeError naming the index.
    Gather,
    /// index_select: `0 <= i < size`; IndexError "index out of range in self".
    Select,
    /// index_select along dim 1, or from an empty tensor, of 2 or more dims (torch's
    /// other loops): RuntimeError naming the index and the size.
    SelectDim1,
}

fn index_values_as(index: &Tensor, size: usize, dim: usize, rule: IndexRule) -> Result<Vec<i64>> {
    // (a recorded plan's list is handed over as it is: the replay knows it by its address)
    with_index_values(index, size, dim, rule, |v| Ok(v.into_owned()))
}

/// Runs `f` on an int64 index tensor's values, contiguous and checked (see
/// [`index_values_as`]): the index's own memory where it is contiguous and in range.
fn with_index_values<R>(
    index: &Tensor,
    size: usize,
    dim: usize,
    rule: IndexRule,
    f: impl FnOnce(Cow<'_, [i64]>) -> Result<R>,
) -> Result<R> {
    if index.dtype() != DType::I64 {
        return Err(Error::runtime(format!(
            "expected index to have dtype int64 (Long), but got {}",
            index.dtype().name()
        )));
    }
    let s = index.snapshot();
    let r = s.storage.read();
    let h = host::read_planned(&r)?;
    let v = values_of(&h, &s.layout, size, dim, rule)?;
    // recording a step: the list is a host plan of its own (a buffer the replay names),
    // recomputed from the index on each replay
    if crate::replay::active() {
        let v = v.into_owned();
        let layout = s.layout.clone();
        crate::replay::plan_index(&r, &v, move |b| {
            values_of(b, &layout, size, dim, rule).map(Cow::into_owned)
        })?;
        return f(Cow::Owned(v));
    }
    f(v)
}

/// [`index_values_as`] of an index buffer read on the host.
fn values_of<'a>(
    buf: &'a Buffer,
    layout: &crate::layout::Layout,
    size: usize,
    dim: usize,
    rule: IndexRule,
) -> Result<Cow<'a, [i64]>> {
    let Buffer::I64(v) = buf else {
        return Err(Error::Internal("index buffer is not int64".into()));
    };
    host::index_values(v, layout, size, rule == IndexRule::Wrap)
        .map_err(|i| out_of_range(i, dim, size, rule))
}

/// The error for index value `i` out of range for `size` along `dim`, by `rule`.
fn out_of_range(i: i64, dim: usize, size: usize, rule: IndexRule) -> Error {
    let bounds = format!("index {i} is out of bounds for dimension {dim} with size {size}");
    match rule {
        IndexRule::Wrap => Error::index(bounds),
        IndexRule::Gather => Error::runtime(bounds),
        IndexRule::Select => Error::index("index out of range in self"),
        IndexRule::SelectDim1 => Error::runtime(format!(
            "INDICES element is out of DATA bounds, id={i} axis_dim={size}"
        )),
    }
}

/// `torch.gather(x, dim, index)`.
pub fn gather(x: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let (xd, id) = (x.ndim(), index.ndim());
    if xd.max(1) != id.max(1) {
        return Err(Error::runtime(
            "Index tensor must have the same number of dimensions as input tensor",
        ));
    }
    if xd == 0 || id == 0 {
        // torch treats a 0-d input or index as 1-d of size 1 (ensure_nonempty_dim); the
        // result has the index's shape
        wrap_dim(dim, xd)?;
        let x1 = if xd == 0 {
            super::reshape(x, &[1])?
        } else {
            x.clone()
        };
        let i1 = if id == 0 {
            super::reshape(index, &[1])?
        } else {
            index.clone()
        };
        let out = gather(&x1, dim, &i1)?;
        let shape: Vec<i64> = index.shape().iter().map(|&n| n as i64).collect();
        return super::reshape(&out, &shape);
    }
    let s = x.snapshot();
    let d = wrap_dim(dim, s.layout.ndim())?;
    let ishape = index.shape();
    for (i, (&a, &b)) in ishape.iter().zip(&s.layout.shape).enumerate() {
        if i != d && a > b {
            return Err(Error::runtime(format!(
                "Size does not match at dimension {i} expected index {} to be smaller than self {} apart from dimension {d}",
                crate::shape::fmt_shape(&ishape),
                crate::shape::fmt_shape(&s.layout.shape)
            )));
        }
    }
    let size = s.layout.shape.get(d).copied().unwrap_or(1);
    let shape = s.layout.shape.clone();
    if index.dtype() != DType::I64 || crate::replay::active() {
        // (the dtype's error; a recorded step plans its index on every replay)
        return with_index_values(index, size, d, IndexRule::Gather, |idx| {
            gather_node(x, index, &s, d, &idx, &ishape, shape, false)
        });
    }
    // The index read in place where it can be (its storage's read lock is held through
    // the kernel, beside x's) and checked by the kernel in its own pass where the backend
    // can: otherwise (or for the error) checked here first.
    let si = index.snapshot();
    let r = si.storage.read();
    let h = host::read_planned(&r)?;
    let Buffer::I64(v) = &*h else {
        return Err(Error::Internal("index buffer is not int64".into()));
    };
    let list = host::index_list(v, &si.layout);
    gather_node(x, index, &s, d, &list, &ishape, shape, true)
}

/// The gather kernel and its node: `idx` already checked against x's size along `d`,
/// or, with `unchecked`, checked by the kernel where the backend can and here otherwise.
#[allow(clippy::too_many_arguments)]
fn gather_node(
    x: &Tensor,
    index: &Tensor,
    s: &crate::tensor::Snapshot,
    d: usize,
    idx: &[i64],
    ishape: &[usize],
    shape: Shape,
    unchecked: bool,
) -> Result<Tensor> {
    apply(
        "aten::gather",
        &[x],
        || {
            let xb = s.storage.read();
            if unchecked {
                if let Some(out) = k::gather_checking(&xb, &s.layout, d, idx, ishape)? {
                    return Ok(new_tensor(out, ishape));
                }
                let size = s.layout.shape.get(d).copied().unwrap_or(1);
                let layout = Layout::contiguous(&[idx.len()]);
                host::index_values(idx, &layout, size, false)
                    .map_err(|i| out_of_range(i, d, size, IndexRule::Gather))?;
            }
            Ok(new_tensor(
                k::gather(&xb, &s.layout, d, idx, ishape)?,
                ishape,
            ))
        },
        |_| {
            let mut sv = Saver::default();
            sv.input_if(true, index);
            // torch's formula takes self (for its sizes): saved, so that modifying x
            // in place before backward is reported as torch reports it
            sv.input_if(true, x);
            (GatherBackward0 { shape, dim: d }, sv.list)
        },
    )
}

#[derive(Clone)]
pub struct GatherBackward0 {
    shape: Shape,
    dim: usize,
}
impl Backward for GatherBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![
            ("dim", F::Int(self.dim as i64)),
            ("index", F::Tensor(Some(0))),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "GatherBackward0".into()
    }
    // the gradient is scattered back (added) to the gathered positions
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(scatter_add_zeros(
            &self.shape,
            self.dim,
            &ctx.saved(0)?,
            &grad0(g)?
        )?)])
    }
    // each sample scattered into its own slice (the index expanded over the samples)
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        if self.shape.is_empty() {
            return None;
        }
        let run = || -> Result<Grads> {
            let index = ctx.saved(0)?;
            let index = expand(
                &unsqueeze(&index, 0)?,
                &super::batched_shape(batch, &index.shape()),
            )?;
            Ok(smallvec::smallvec![Some(scatter_add_zeros(
                &super::batched_shape(batch, &self.shape),
                self.dim + 1,
                &index,
                &grad0(g)?
            )?)])
        };
        Some(run())
    }
}

/// `zeros(shape).scatter_add(dim, index, src)`, differentiable w.r.t. `src`.
pub fn scatter_add_zeros(
    shape: &[usize],
    dim: usize,
    index: &Tensor,
    src: &Tensor,
) -> Result<Tensor> {
    let ishape = index.shape();
    let idx = index_values(index, shape.get(dim).copied().unwrap_or(1), dim)?;
    let s = src.snapshot();
    apply(
        "aten::scatter_add",
        &[src],
        || {
            let src_view = s.layout.clone();
            Ok(new_tensor(
                k::scatter_add(shape, dim, &idx, &ishape, &s.storage.read(), &src_view)?,
                shape,
            ))
        },
        |_| {
            let mut sv = Saver::default();
            sv.input_if(true, index);
            (ScatterAddBackward0 { dim }, sv.list)
        },
    )
}

#[derive(Clone)]
pub struct ScatterAddBackward0 {
    dim: usize,
}
impl Backward for ScatterAddBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![
            ("dim", F::Int(self.dim as i64)),
            ("index", F::Tensor(Some(0))),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "ScatterAddBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(gather(
            &grad0(g)?,
            self.dim as i64,
            &ctx.saved(0)?
        )?)])
    }
    // each sample gathered from its own slice (the index expanded over the samples, as
    // GatherBackward0's batched scatter)
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        let run = || -> Result<Grads> {
            let g = grad0(g)?;
            let index = ctx.saved(0)?;
            // a 0-d scatter_add (each sample one number) gathers along a dim of size 1:
            // the samples as rows of one element
            let scalar = index.ndim() == 0;
            let (g, index) = if scalar {
                (unsqueeze(&g, 1)?, reshape(&index, &[1])?)
            } else {
                (g, index)
            };
            let index = expand(
                &unsqueeze(&index, 0)?,
                &super::batched_shape(batch, &index.shape()),
            )?;
            let dim = if scalar { 1 } else { self.dim as i64 + 1 };
            let r = gather(&g, dim, &index)?;
            Ok(smallvec::smallvec![Some(if scalar {
                reshape(&r, &[batch as i64])?
            } else {
                r
            })])
        };
        Some(run())
    }
}

/// `torch.index_select(x, dim, index)` with a 1-D (or 0-d) int64 index.
pub fn index_select(x: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    index_select_as(x, dim, index, true)
}

/// [`index_select`]; `torch_rules`: torch's per-path errors for bad indices (off for
/// internal uses, whose indices were checked before).
pub(super) fn index_select_as(
    x: &Tensor,
    dim: i64,
    index: &Tensor,
    torch_rules: bool,
) -> Result<Tensor> {
    if index.ndim() > 1 {
        return Err(Error::index(
            "index_select(): Index is supposed to be a vector",
        ));
    }
    let s = x.snapshot();
    let scalar_input = s.layout.ndim() == 0;
    wrap_dim(dim, s.layout.ndim())?; // torch checks the dim first
    if scalar_input && index.numel() != 1 {
        return Err(Error::runtime(format!(
            "index_select(): Index to scalar can have only 1 value, got {} value(s)",
            index.numel()
        )));
    }
    let layout = if scalar_input {
        Layout {
            shape: smallvec::smallvec![1],
            strides: smallvec::smallvec![1],
            offset: s.layout.offset,
        }
    } else {
        s.layout.clone()
    };
    let d = wrap_dim(dim, layout.ndim())?;
    let empty_input = layout.numel() == 0;
    let rule = if torch_rules && layout.ndim() > 1 && (d == 1 || empty_input) {
        IndexRule::SelectDim1
    } else {
        IndexRule::Select
    };
    if torch_rules && layout.ndim() > 1 && empty_input && index.numel() > 0 && layout.shape[d] == 0
    {
        return Err(Error::runtime(
            "index_select(): self indexing axis dim should be positive",
        ));
    }
    // (the index read in place where it can be, as gather's)
    with_index_values(index, layout.shape[d], d, rule, |idx| {
        let idx = &*idx;
        let mut out_shape = layout.shape.clone();
        out_shape[d] = idx.len();
        if scalar_input {
            // torch: selecting from a 0-d tensor gives a 0-d tensor, whatever the index's
            // shape
            out_shape.clear();
        }
        let in_shape = s.layout.shape.clone();
        apply(
            "aten::index_select",
            &[x],
            || {
                Ok(new_tensor(
                    k::index_select(&s.storage.read(), &layout, d, idx)?,
                    &out_shape,
                ))
            },
            |_| {
                let mut sv = Saver::default();
                sv.input_if(true, index);
                (
                    IndexSelectBackward0 {
                        shape: in_shape,
                        dim: d,
                    },
                    sv.list,
                )
            },
        )
    })
}

#[derive(Clone)]
pub struct IndexSelectBackward0 {
    shape: Shape,
    dim: usize,
}
impl Backward for IndexSelectBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![
            ("dim", F::Int(self.dim as i64)),
            ("index", F::Tensor(Some(0))),
            ("self_sym_sizes", F::ints(&self.shape)),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "IndexSelectBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(index_add_zeros(
            &self.shape,
            self.dim,
            &ctx.saved(0)?,
            &grad0(g)?
        )?)])
    }
    // the same rows added, one dim further in
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        if self.shape.is_empty() {
            return None;
        }
        let run = || -> Result<Grads> {
            Ok(smallvec::smallvec![Some(index_add_zeros(
                &super::batched_shape(batch, &self.shape),
                self.dim + 1,
                &ctx.saved(0)?,
                &grad0(g)?
            )?)])
        };
        Some(run())
    }
}

/// `zeros(shape).index_add(dim, index, src)`, differentiable w.r.t. `src`.
pub fn index_add_zeros(
    shape: &[usize],
    dim: usize,
    index: &Tensor,
    src: &Tensor,
) -> Result<Tensor> {
    let work: Shape = if shape.is_empty() {
        smallvec::smallvec![1]
    } else {
        Shape::from_slice(shape)
    };
    let idx = index_values(index, work[dim], dim)?;
    let s = src.snapshot();
    let src_layout = if s.layout.ndim() == 0 {
        Layout::contiguous(&[1])
    } else {
        s.layout.clone()
    };
    apply(
        "aten::index_add",
        &[src],
        || {
            Ok(new_tensor(
                k::index_add(&work, dim, &idx, &s.storage.read(), &src_layout)?,
                shape,
            ))
        },
        |_| {
            let mut sv = Saver::default();
            sv.input_if(true, index);
            (IndexAddBackward0 { dim }, sv.list)
        },
    )
}

#[derive(Clone)]
pub struct IndexAddBackward0 {
    dim: usize,
}
impl Backward for IndexAddBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![
            ("dim", F::Int(self.dim as i64)),
            ("index", F::Tensor(Some(0))),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "IndexAddBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(index_select_as(
            &grad0(g)?,
            self.dim as i64,
            &ctx.saved(0)?,
            false
        )?)])
    }
    // the same rows selected, one dim further in
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        let run = || -> Result<Grads> {
            let g = grad0(g)?;
            let index = ctx.saved(0)?;
            if g.ndim() == 1 {
                // a 0-d index_add (each sample one number, selected by its one index
                // from a dim of size 1): the samples as rows of one element
                let r = index_select_as(&unsqueeze(&g, 1)?, 1, &index, false)?;
                return Ok(smallvec::smallvec![Some(reshape(&r, &[batch as i64])?)]);
            }
            Ok(smallvec::smallvec![Some(index_select_as(
                &g,
                self.dim as i64 + 1,
                &index,
                false
            )?)])
        };
        Some(run())
    }
}

/// `x.masked_fill(mask, value)`: out of place, `x` and `mask` broadcast (as torch's
/// `expand_outplace`), the gradient summed back to `x`'s shape.
pub fn masked_fill(x: &Tensor, mask: &Tensor, value: Scalar) -> Result<Tensor> {
    let broadcast = check_fill_mask(x, mask, false)?;
    value.check_fits(x.dtype())?;
    let v = scalar_tensor(value, x.dtype());
    apply(
        "aten::masked_fill",
        &[x],
        || with_grad_mode(false, || where_row_major(mask, &v, &x.detach())),
        |_| {
            let mut sv = Saver::default();
            sv.input_if(true, mask);
            (MaskedFillBackward0 { broadcast }, sv.list)
        },
    )
}

/// `x.masked_fill(mask, value)` with a 0-d tensor `value` (torch's MaskedFillBackward1):
/// the filled positions' gradient goes to `value`, summed.
pub fn masked_fill_tensor(x: &Tensor, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
    let broadcast = check_fill_mask(x, mask, false)?;
    check_fill_value(value)?;
    apply(
        "aten::masked_fill",
        &[x, value],
        || {
            with_grad_mode(false, || {
                where_row_major(mask, &to_dtype(&value.detach(), x.dtype())?, &x.detach())
            })
        },
        |_| {
            let mut sv = Saver::default();
            sv.input_if(true, mask);
            (
                MaskedFillBackward1 {
                    value_dtype: value.dtype(),
                    broadcast,
                },
                sv.list,
            )
        },
    )
}

/// `x.masked_fill_(mask, ...)`'s check: the mask must broadcast to `x`'s own shape (the
/// result is written into `x`).
pub fn check_inplace_fill_mask(x: &Tensor, mask: &Tensor) -> Result<()> {
    check_fill_mask(x, mask, true).map(|_| ())
}

/// masked_fill's `value` given as a tensor that needs no gradient: its one element, which
/// `masked_fill` then takes as a number (a tensor of another rank is an error, as in
/// torch).
pub fn masked_fill_value(value: &Tensor) -> Result<Scalar> {
    check_fill_value(value)?;
    value.item()
}

fn check_fill_value(value: &Tensor) -> Result<()> {
    if value.ndim() != 0 {
        return Err(Error::runtime(format!(
            "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
            value.ndim()
        )));
    }
    Ok(())
}

/// The mask's dtype and shape checks; `Some(x's shape)` where the result is broadcast
/// beyond `x` (out of place only: `inplace` refuses it, with torch's message).
fn check_fill_mask(x: &Tensor, mask: &Tensor, inplace: bool) -> Result<Option<Box<Shape>>> {
    if mask.dtype() != DType::Bool {
        return Err(Error::runtime(format!(
            "masked_fill_ only supports boolean masks, but got mask with dtype {}",
            mask.dtype().name()
        )));
    }
    let xs = x.shape();
    let ms = mask.shape();
    let out_shape = broadcast_shapes(&xs, &ms)?;
    if out_shape == xs {
        return Ok(None);
    }
    if inplace {
        return Err(Error::runtime(format!(
            "output with shape {:?} doesn't match the broadcast shape {:?}",
            xs.as_slice(),
            out_shape.as_slice()
        )));
    }
    Ok(Some(Box::new(xs)))
}

/// The input's gradient: `g` where not filled, summed to the input's shape when the
/// result was broadcast beyond it (`batched`: `g` has a leading batch dim).
fn unfilled_grad(
    g: &Tensor,
    mask: &Tensor,
    broadcast: &Option<Box<Shape>>,
    batched: bool,
) -> Result<Tensor> {
    let z = zeros_like(g)?;
    let gx = where_(mask, &z, g)?;
    match broadcast {
        None => Ok(gx),
        Some(s) if batched => super::sum_to_batched(&gx, s),
        Some(s) => super::sum_to(&gx, s),
    }
}

#[derive(Clone)]
pub struct MaskedFillBackward0 {
    /// the input's shape where the result was broadcast beyond it
    broadcast: Option<Box<Shape>>,
}
impl Backward for MaskedFillBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![("mask", F::Tensor(Some(0)))]
    }
    fn name(&self) -> Cow<'static, str> {
        "MaskedFillBackward0".into()
    }
    // filled positions get no gradient
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        Ok(smallvec::smallvec![Some(unfilled_grad(
            &g,
            &ctx.saved(0)?,
            &self.broadcast,
            false
        )?)])
    }
    // (the mask broadcasts against each sample)
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| {
            Ok(smallvec::smallvec![Some(unfilled_grad(
                &g,
                &ctx.saved(0)?,
                &self.broadcast,
                true
            )?)])
        }))
    }
}

#[derive(Clone)]
pub struct MaskedFillBackward1 {
    value_dtype: DType,
    /// the input's shape where the result was broadcast beyond it
    broadcast: Option<Box<Shape>>,
}
impl Backward for MaskedFillBackward1 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![("mask", F::Tensor(Some(0)))]
    }
    fn name(&self) -> Cow<'static, str> {
        "MaskedFillBackward1".into()
    }
    // d/dx = g where not filled; d/dvalue = Σ g over the filled positions
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

impl MaskedFillBackward1 {
    /// (`batched`: `g` has a leading batch dim; the value's gradient is summed per sample)
    fn grads(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>], batched: bool) -> Result<Grads> {
        let g = grad0(g)?;
        let mask = ctx.saved(0)?;
        let z = zeros_like(&g)?;
        let gx = if ctx.needs_input_grad(0) {
            Some(unfilled_grad(&g, &mask, &self.broadcast, batched)?)
        } else {
            None
        };
        let gv = if ctx.needs_input_grad(1) {
            let filled = where_(&mask, &g, &z)?;
            let total = super::reduce::sum_per_sample(&filled, batched)?;
            Some(to_dtype(&total, self.value_dtype)?)
        } else {
            None
        };
        Ok(smallvec::smallvec![gx, gv])
    }
}
