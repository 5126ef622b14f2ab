//! Views' history when their data changes (torch's `rebase_history`): an in-place write
//! through a view gives its base a `CopySlices` node and re-derives the view from it;
//! other views of that base notice through the version counter and are re-derived when
//! their history is next read (`refresh_view`); views from an op that returns several
//! may do neither (torch's `handle_view_on_rebase`).

use super::elementwise::grad0;
use super::{attach, attach_edges};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::autograd::grad_mode::with_grad_mode;
use crate::dtype::{DType, Scalar};
use crate::layout::Layout;
use crate::ops::*;
use crate::shape::Shape;
use crate::tensor::Tensor;
use crate::{Error, Result, saved};
use std::borrow::Cow;

/// torch's `handle_view_on_rebase` for a view returned by an op that returns several
/// (split, chunk, unbind) or a view of one: it may not be modified in place while
/// autograd records (the caller checks that something requires grad).
pub(super) fn check_multi_output_view(x: &Tensor) -> Result<()> {
    match x.multi_output() {
        Some(m) => Err(multi_output_error(x, m, false)),
        None => Ok(()),
    }
}

/// torch's error for modifying a multi-output view in place (`indirect`: its base or a
/// sibling was modified, and the view is used afterwards).
fn multi_output_error(x: &Tensor, m: crate::tensor::MultiOutput, indirect: bool) -> Error {
    let modified = if indirect {
        " and its base or another view of its base has been modified inplace"
    } else {
        " and is being modified inplace"
    };
    let what = match (m.op, x.grad_fn()) {
        (_, None) => {
            format!("A view was created in no_grad mode{modified} with grad mode enabled.")
        }
        (Some((op, i)), Some(_)) => format!("Output {i} of {op} is a view{modified}."),
        (None, Some(f)) => format!(
            "Output {} of {} is a view{modified}.",
            x.output_nr(),
            crate::autograd::function::forward_name(&f.name())
        ),
    };
    Error::runtime(format!(
        "{what} This view is the output of a function that returns multiple views. Such functions do not allow the \
         output views to be modified inplace. You should replace the inplace operation by an out-of-place one."
    ))
}

/// Makes output `nr` of `node` the history of `x`, which was just modified in place
/// (a custom Function's `mark_dirty`): on a view, through CopySlices as for built-in
/// in-place ops.
pub fn rebase_history(x: &Tensor, node: crate::autograd::graph::NodeRef, nr: u32) -> Result<()> {
    match x.base() {
        None => {
            x.set_history(node, nr);
            Ok(())
        }
        Some(base) => {
            let result = x.detach();
            result.set_history(node, nr);
            rebase_view(x, &base, &result)
        }
    }
}

/// CopySlices: the base's new history takes the view region's gradient from `result`
/// and the rest from the base's old history; the view is then re-derived from the base.
/// A base that is dense in some order is re-read with `as_strided`; a base with gaps
/// between its elements (a detached `x[::2]`) by the indices of the elements the view
/// covers ([`picks`], [`picked_from`]).
pub(super) fn rebase_view(view: &Tensor, base: &Tensor, result: &Tensor) -> Result<()> {
    let (bl, vl) = (base.layout(), view.layout());
    let (base_shape, geometry) = match storage_order(&bl) {
        Some(order) => {
            let rel = Layout {
                shape: vl.shape.clone(),
                strides: vl.strides.clone(),
                offset: vl.offset - bl.offset,
            };
            let shape = match &order {
                Some(o) => bl.permute(o)?.shape,
                None => bl.shape.clone(),
            };
            (shape, ViewOfBase::Strided { rel, order })
        }
        None => (
            bl.shape.clone(),
            ViewOfBase::Picks {
                picks: picks(&bl, &vl)?,
                shape: vl.shape.clone(),
            },
        ),
    };
    let r = if result.shape() == vl.shape {
        result.clone()
    } else {
        expand(result, &vl.shape)?
    };
    // A node with edges [base's old history, result]; its output is the base.
    let base_input = base.detach();
    if let Some(f) = base.grad_fn() {
        base_input.set_history(f, base.output_nr());
    } else if base.requires_grad() {
        base_input.lock().requires_grad = true;
    }
    let op = CopySlices {
        shape: base_shape,
        view: Box::new(geometry.clone()),
    };
    // attach() reads edges from the inputs: base_input carries the base's old history.
    let inputs: [&Tensor; 2] = [&base_input, &r];
    let node = attach(super::BackwardOp::from(op), &inputs, saved![], &[])?;
    base.set_history(node, 0);
    base.lock().requires_grad = false;
    // the view now derives from the updated base
    let fresh = match &geometry {
        ViewOfBase::Strided { rel, order } => {
            as_strided(&in_storage_order(base, order.as_deref())?, rel)?
        }
        ViewOfBase::Picks { picks, shape } => picked(base, picks, shape)?,
    };
    if let Some(f) = fresh.grad_fn() {
        view.set_history(f, 0);
    }
    let now = view.version();
    view.lock().cold_mut().view_version = now;
    Ok(())
}

/// Re-derives a view's history from its base if the base's data changed since the view's
/// history was set (an in-place op on the base or on a sibling view): the view becomes
/// `as_strided(base)` of the base's current history. Cheap when nothing changed. A view
/// from an op returning several views may not be re-derived: torch's error.
pub fn refresh_view(t: &Tensor) -> Result<()> {
    let (base, stale) = {
        let g = t.lock();
        match g
            .cold()
            .and_then(|c| Some((c.base.as_ref()?, c.view_version)))
        {
            Some((b, seen)) => (b.clone(), seen != g.version()),
            None => return Ok(()),
        }
    };
    if !stale {
        return Ok(());
    }
    if let Some(m) = t.multi_output()
        && (t.grad_fn().is_some() || base.requires_grad())
    {
        return Err(multi_output_error(t, m, true));
    }
    let now = t.version();
    let (bl, vl) = (base.layout(), t.layout());
    if base.grad_fn().is_none() && !base.requires_grad() && t.grad_fn().is_some() {
        // A view with history over a base without any (a view of a tensor that was
        // itself a view when it came to require grad): torch re-derives it from that
        // base, so its history ends there and no gradient passes.
        let rel = Layout {
            shape: vl.shape.clone(),
            strides: vl.strides.clone(),
            offset: vl.offset - bl.offset,
        };
        let node = super::as_strided_node(bl.shape.clone(), rel);
        attach_edges(node, smallvec::smallvec![None], saved![], &[t])?;
    } else if base.grad_fn().is_some() {
        let fresh = match storage_order(&bl) {
            Some(order) => {
                let rel = Layout {
                    shape: vl.shape.clone(),
                    strides: vl.strides.clone(),
                    offset: vl.offset - bl.offset,
                };
                with_grad_mode(true, || {
                    as_strided(&in_storage_order(&base, order.as_deref())?, &rel)
                })
                .ok()
            }
            // a base with gaps (a detached strided view, `x[::2]`): its elements picked
            // by index (an error, never a view left without its new history)
            None => Some(with_grad_mode(true, || picked_from(&base, &bl, &vl))?),
        };
        if let Some(f) = fresh.and_then(|f| f.grad_fn()) {
            t.set_history(f, 0);
        }
    }
    t.lock().cold_mut().view_version = now;
    Ok(())
}

/// For each element of the view over `vl` (row-major), the row-major index of the base
/// element over `bl` at the same storage offset. An error for a view element that is no
/// base element, or a base that reaches one storage offset twice.
fn picks(bl: &Layout, vl: &Layout) -> Result<Vec<i64>> {
    // each element's storage offset, in row-major order of the layout's shape
    let offsets = |l: &Layout| {
        let n = l.numel();
        let mut out = Vec::with_capacity(n);
        let mut idx = vec![0usize; l.ndim()];
        for _ in 0..n {
            out.push(
                l.offset
                    + idx
                        .iter()
                        .zip(&l.strides)
                        .map(|(i, s)| i * s)
                        .sum::<usize>(),
            );
            for d in (0..idx.len()).rev() {
                idx[d] += 1;
                if idx[d] < l.shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        out
    };
    let mut at = std::collections::HashMap::with_capacity(bl.numel());
    for (i, o) in offsets(bl).into_iter().enumerate() {
        if at.insert(o, i as i64).is_some() {
            return Err(Error::runtime(
                "rgrad: a view of a tensor whose elements overlap in memory cannot be re-derived after an \
                 in-place operation; call .clone() on the tensor before taking the view",
            ));
        }
    }
    offsets(vl)
        .into_iter()
        .map(|o| {
            at.get(&o)
                .copied()
                .ok_or_else(|| Error::Internal("a view reaches memory outside its base".into()))
        })
        .collect()
}

/// `index` as an int64 tensor on `device`.
fn index_tensor(index: &[i64], device: crate::device::Device) -> Result<Tensor> {
    super::new_tensor_on(
        crate::storage::Buffer::I64(index.to_vec().into()),
        &[index.len()],
        device,
    )
}

/// The view over `vl` re-derived from a base over `bl` whose elements have gaps between
/// them (no storage order makes it dense, so `as_strided` cannot re-read it): each view
/// element is the base element at the same storage offset ([`picks`]), picked by
/// `index_select` from the flattened base, so the gradient goes back to exactly those
/// base elements.
fn picked_from(base: &Tensor, bl: &Layout, vl: &Layout) -> Result<Tensor> {
    picked(base, &picks(bl, vl)?, &vl.shape)
}

/// The elements `picks` (row-major indices) of `base`, as a tensor of `shape`.
fn picked(base: &Tensor, picks: &[i64], shape: &[usize]) -> Result<Tensor> {
    let index = index_tensor(picks, base.device())?;
    let flat = reshape(base, &[-1])?;
    let shape: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    reshape(&index_select(&flat, 0, &index)?, &shape)
}

/// A base's dims from outermost to innermost in memory, for re-deriving its views: `None`
/// when it is row-major (its views' storage strides are strides over its own shape),
/// `Some(order)` when it is dense in another order (they are strides over the base
/// permuted by `order`), and no answer for a base with gaps or overlap.
fn storage_order(l: &Layout) -> Option<Option<Vec<i64>>> {
    if l.is_contiguous() {
        return Some(None);
    }
    if !l.is_non_overlapping_and_dense() {
        return None;
    }
    let mut order: Vec<i64> = (0..l.ndim() as i64).collect();
    order.sort_by(|&a, &b| l.strides[b as usize].cmp(&l.strides[a as usize]));
    Some(Some(order))
}

/// `base` permuted by a [`storage_order`] (a view, recorded), or `base` itself.
fn in_storage_order(base: &Tensor, order: Option<&[i64]>) -> Result<Tensor> {
    match order {
        Some(o) => permute(base, o),
        None => Ok(base.clone()),
    }
}

/// The permutation that undoes `order`.
pub(crate) fn inverse_order(order: &[i64]) -> Vec<i64> {
    let mut inv = vec![0i64; order.len()];
    for (i, &d) in order.iter().enumerate() {
        inv[d as usize] = i as i64;
    }
    inv
}

#[derive(Clone)]
pub struct CopySlices {
    /// The base's shape, in its storage order when it is not row-major.
    shape: Shape,
    /// Boxed, as the view nodes' (see `SliceBackward0`).
    view: Box<ViewOfBase>,
}

/// Where a view lies in its base.
#[derive(Clone)]
enum ViewOfBase {
    /// Its layout relative to the base's storage, and the base's [`storage_order`] when
    /// the base is dense but not row-major.
    Strided {
        rel: Layout,
        order: Option<Vec<i64>>,
    },
    /// A base with gaps: the row-major index in the base of each view element
    /// ([`picks`]), and the view's shape.
    Picks { picks: Vec<i64>, shape: Shape },
}
impl Backward for CopySlices {
    fn name(&self) -> Cow<'static, str> {
        "torch::autograd::CopySlices".into()
    }
    // base: g with the region zeroed; result: g's region
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.grads(ctx, g, false)
    }
    // (the same region of every sample: the layouts with the batch dim first)
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.grads(ctx, g, true))
    }
}

impl CopySlices {
    fn grads(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>], batched: bool) -> Result<Grads> {
        let (rel, order) = match &*self.view {
            ViewOfBase::Strided { rel, order } => (rel, order),
            ViewOfBase::Picks { picks, shape } => {
                return self.picked_grads(ctx, g, batched, picks, shape);
            }
        };
        if rel.numel() > 0
            && rel
                .shape
                .iter()
                .zip(&rel.strides)
                .any(|(&n, &st)| n > 1 && st == 0)
        {
            // torch copies the view's gradient into the same region of the base's, which
            // an expanded view covers more than once: its copy_ refuses that
            return Err(Error::runtime(
                "unsupported operation: more than one element of the written-to tensor refers to a single memory \
                 location. Please clone() the tensor before performing the operation.",
            ));
        }
        let g = grad0(g)?;
        // a batch dim first: the base's order shifted by one, the region one dim more
        let batch = if batched { Some(g.shape()[0]) } else { None };
        let order: Option<Vec<i64>> = match (order, batch) {
            (Some(o), Some(_)) => Some(std::iter::once(0).chain(o.iter().map(|d| d + 1)).collect()),
            (o, _) => o.clone(),
        };
        let g = in_storage_order(&g, order.as_deref())?;
        let region = match batch {
            Some(b) => {
                let mut brel = rel.clone();
                brel.shape.insert(0, b);
                brel.strides.insert(0, crate::shape::numel(&self.shape));
                as_strided(&g, &brel)?
            }
            None => as_strided(&g, rel)?,
        };
        let gb = if ctx.needs_input_grad(0) {
            // (masked, not `g - scatter(region)`: a NaN or infinite gradient in the region
            // must become 0 as well)
            let inside = crate::device::with_default_device(g.device(), || {
                full(&rel.shape, Scalar::Bool(true), DType::Bool)
            })?;
            let mask = as_strided_scatter(&inside, &self.shape, rel)?;
            let gb = masked_fill(&g, &mask, Scalar::Float(0.0))?;
            Some(match &order {
                Some(o) => permute(&gb, &inverse_order(o))?,
                None => gb,
            })
        } else {
            None
        };
        let gr = if ctx.needs_input_grad(1) {
            Some(region)
        } else {
            None
        };
        Ok(smallvec::smallvec![gb, gr])
    }

    /// [`Self::grads`] for a base with gaps: the region is the base's elements `picks`
    /// (row-major indices; distinct, as the base reaches each storage offset once).
    fn picked_grads(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batched: bool,
        picks: &[i64],
        view_shape: &Shape,
    ) -> Result<Grads> {
        let g = grad0(g)?;
        let lead: Vec<i64> = if batched {
            vec![g.shape()[0] as i64]
        } else {
            Vec::new()
        };
        let flat_shape: Vec<i64> = lead.iter().copied().chain([-1]).collect();
        let index = index_tensor(picks, g.device())?;
        let gb = if ctx.needs_input_grad(0) {
            let mut inside = vec![false; crate::shape::numel(&self.shape)];
            for &p in picks {
                inside[p as usize] = true;
            }
            let mask = super::new_tensor_on(
                crate::storage::Buffer::Bool(inside.into()),
                &self.shape,
                g.device(),
            )?;
            Some(masked_fill(&g, &mask, Scalar::Float(0.0))?)
        } else {
            None
        };
        let gr = if ctx.needs_input_grad(1) {
            let region = index_select(&reshape(&g, &flat_shape)?, lead.len() as i64, &index)?;
            let shape: Vec<i64> = lead
                .iter()
                .copied()
                .chain(view_shape.iter().map(|&d| d as i64))
                .collect();
            Some(reshape(&region, &shape)?)
        } else {
            None
        };
        Ok(smallvec::smallvec![gb, gr])
    }
}
