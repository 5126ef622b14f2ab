//! torch's advanced indexing: `x[indices]` (aten::index) with int64 index tensors, bool
//! masks (their nonzero coordinates) or several index tensors broadcast together, its
//! writing counterpart index_put (`x[indices] = v`), and the checks torch runs on such
//! indices before anything else.

use super::elementwise::grad0;
use super::indexing::{index_select_as, index_values};
use super::{apply, new_tensor, sum_to};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::autograd::grad_mode::with_grad_mode;
use crate::backend::{self as k, host};
use crate::dtype::{DType, Scalar};
use crate::layout::Layout;
use crate::ops::*;
use crate::shape::{Shape, broadcast_shapes};
use crate::storage::Buffer;
use crate::tensor::Tensor;
use crate::{Error, Result, saved};
use std::borrow::Cow;

/// A resolved advanced index: one int64 tensor per indexed dim (bool masks expanded to
/// their nonzero coordinates), the dims they index, and where the result's broadcast
/// index dims go.
struct Plan {
    dims: Vec<usize>,
    linear: Tensor,
    bshape: Shape,
    insert_at: usize,
    /// The result's shape when it has no elements (its indices went unchecked): nothing
    /// to gather or scatter.
    empty: Option<Shape>,
    /// Each index tensor's layout broadcast to `bshape` (a bool mask's coordinates as
    /// torch's `nonzero().select(1, j)` lays them out), for the result's memory order.
    index_layouts: Vec<Layout>,
}

/// `mask.nonzero()` as one int64 index tensor per mask dim.
pub fn nonzero_indices(mask: &Tensor) -> Result<Vec<Tensor>> {
    let s = mask.snapshot();
    let r = s.storage.read();
    let r = host::read(&r)?;
    let Buffer::Bool(v) = &*r else {
        return Err(Error::Internal("mask is not bool".into()));
    };
    let device = s.storage.device();
    host::nonzero(v, &s.layout)
        .into_iter()
        .map(|c| {
            let n = c.len();
            super::new_tensor_on(Buffer::I64(c.into()), &[n], device)
        })
        .collect()
}

fn plan(x_shape: &[usize], indices: &[Option<Tensor>]) -> Result<Plan> {
    // (torch refuses indices into a dim of size 0 even when the result is empty anyway)
    plan_checked(x_shape, indices, |bshape, dims| {
        if crate::shape::numel(bshape) > 0 && dims.iter().any(|&d| x_shape[d] == 0) {
            return Err(Error::index(
                "index is out of bounds for dimension with size 0",
            ));
        }
        Ok(())
    })
}

/// The checks torch runs on advanced indices before anything else: their dtypes, each
/// bool mask's shape against the dims it covers, and their count. (`x[indices] = v` runs
/// them before autograd's in-place checks.)
pub fn check_index_structure(x_shape: &[usize], indices: &[Option<Tensor>]) -> Result<()> {
    check_index_count(x_shape, indices)?;
    let mut d = 0usize;
    for ix in indices {
        match ix {
            None => d += 1,
            Some(t) if t.dtype() == DType::Bool => {
                let ms = t.shape();
                for (j, &m) in ms.iter().enumerate() {
                    if x_shape.get(d + j).copied() != Some(m) {
                        return Err(Error::index(format!(
                            "The shape of the mask {} at index {j} does not match the shape of the indexed tensor {} at \
                             index {}",
                            crate::shape::fmt_shape(&ms),
                            crate::shape::fmt_shape(x_shape),
                            d + j
                        )));
                    }
                }
                d += ms.len();
            }
            Some(t) => {
                if t.dtype() != DType::I64 {
                    return Err(Error::index(
                        "tensors used as indices must be long, int, byte or bool tensors",
                    ));
                }
                d += 1;
            }
        }
    }
    Ok(())
}

/// The mask checks torch runs first when a number is written through indices: each bool
/// mask before the first integer index (and only the first mask) must match the dims it
/// covers (torch's masked_fill dispatch check, which comes before autograd's).
pub fn check_leading_masks(x_shape: &[usize], indices: &[Option<Tensor>]) -> Result<()> {
    let mut d = 0usize;
    for ix in indices {
        match ix {
            None => d += 1,
            Some(t) if t.dtype() == DType::Bool => {
                check_index_structure(&x_shape[d.min(x_shape.len())..], &[Some(t.clone())])
                    .map_err(|_| mask_mismatch(t, x_shape, d))?;
                return Ok(());
            }
            Some(_) => return Ok(()),
        }
    }
    Ok(())
}

/// torch's error for a bool mask whose shape does not match the dims from `d` on.
fn mask_mismatch(mask: &Tensor, x_shape: &[usize], d: usize) -> Error {
    let ms = mask.shape();
    let j = (0..ms.len())
        .find(|&j| x_shape.get(d + j).copied() != Some(ms[j]))
        .unwrap_or(0);
    Error::index(format!(
        "The shape of the mask {} at index {j} does not match the shape of the indexed tensor {} at index {}",
        crate::shape::fmt_shape(&ms),
        crate::shape::fmt_shape(x_shape),
        d + j
    ))
}

/// torch's first check of an index: it names no more dims than `x` has (a bool mask
/// names as many as it has).
pub fn check_index_count(x_shape: &[usize], indices: &[Option<Tensor>]) -> Result<()> {
    let named: usize = indices
        .iter()
        .map(|ix| match ix {
            Some(t) if t.dtype() == DType::Bool => t.ndim(),
            _ => 1,
        })
        .sum();
    if named > x_shape.len() {
        return Err(Error::index(format!(
            "too many indices for tensor of dimension {}",
            x_shape.len()
        )));
    }
    Ok(())
}

/// [`plan`], running `before_bounds(broadcast index shape, indexed dims)` after the
/// indices' own checks and before their bounds are checked (where index_put checks its
/// values, as torch does).
fn plan_checked(
    x_shape: &[usize],
    indices: &[Option<Tensor>],
    before_bounds: impl FnOnce(&[usize], &[usize]) -> Result<()>,
) -> Result<Plan> {
    check_index_structure(x_shape, indices)?;
    // expand bool masks into per-dim coordinates
    let mut per_dim: Vec<(usize, Tensor)> = Vec::new();
    let mut d = 0usize;
    for ix in indices {
        match ix {
            None => d += 1,
            Some(t) if t.dtype() == DType::Bool => {
                for (j, c) in nonzero_indices(t)?.into_iter().enumerate() {
                    per_dim.push((d + j, c));
                }
                d += t.ndim();
            }
            Some(t) => {
                per_dim.push((d, t.clone()));
                d += 1;
            }
        }
    }
    let mut bshape = Shape::new();
    for (_, t) in &per_dim {
        bshape = broadcast_shapes(&bshape, &t.shape()).map_err(|_| {
            Error::index(format!(
                "shape mismatch: indexing tensors could not be broadcast together with shapes {}",
                per_dim
                    .iter()
                    .map(|(_, t)| crate::shape::fmt_shape(&t.shape()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
    }
    let dims: Vec<usize> = per_dim.iter().map(|p| p.0).collect();
    before_bounds(&bshape, &dims)?;
    let index_layouts = per_dim
        .iter()
        .map(|(d, t)| {
            let mut l = t.layout();
            if let Some(mask) = mask_covering(indices, *d) {
                l.strides = smallvec::smallvec![mask.ndim(); 1];
            }
            broadcast_layout(&l, &bshape)
        })
        .collect();
    // linear index over the indexed dims (row-major), after bounds checks
    let mut linear: Option<Tensor> = None;
    // (torch's kernel checks the indices it visits: none when they broadcast to nothing)
    let visits_none = crate::shape::numel(&indexed_shape(x_shape, &bshape, &dims)) == 0;
    for (dim, t) in &per_dim {
        let size = x_shape[*dim];
        let t = if visits_none {
            t.clone()
        } else {
            super::new_tensor_on(
                Buffer::I64((index_values(t, size, *dim)?).into()),
                &t.shape(),
                t.device(),
            )?
        };
        let t = expand(&t, &bshape)?;
        linear = Some(match linear {
            None => t,
            Some(l) => add(&mul_scalar(&l, Scalar::Int(size as i64))?, &t)?,
        });
    }
    let linear =
        linear.ok_or_else(|| Error::Internal("advanced index without index tensors".into()))?;
    let adjacent = dims.windows(2).all(|w| w[1] == w[0] + 1);
    let insert_at = if adjacent {
        dims.first().copied().unwrap_or(0)
    } else {
        0
    };
    let empty = visits_none.then(|| indexed_shape(x_shape, &bshape, &dims));
    Ok(Plan {
        dims,
        linear: contiguous(&linear)?,
        bshape,
        insert_at,
        empty,
        index_layouts,
    })
}

/// The bool mask among `indices` that covers dim `d`, if one does.
fn mask_covering(indices: &[Option<Tensor>], d: usize) -> Option<&Tensor> {
    let mut at = 0usize;
    for ix in indices {
        let width = match ix {
            Some(t) if t.dtype() == DType::Bool => t.ndim(),
            _ => 1,
        };
        if d < at + width {
            return ix.as_ref().filter(|t| t.dtype() == DType::Bool);
        }
        at += width;
    }
    None
}

/// `l` broadcast to `shape` (stride 0 along the dims it is broadcast over).
fn broadcast_layout(l: &Layout, shape: &[usize]) -> Layout {
    let lead = shape.len() - l.ndim().min(shape.len());
    let strides = (0..shape.len())
        .map(|i| match i.checked_sub(lead) {
            Some(j) if l.shape[j] == shape[i] => l.strides[j],
            _ => 0,
        })
        .collect();
    Layout {
        shape: Shape::from_slice(shape),
        strides,
        offset: 0,
    }
}

/// The memory order torch gives `x[indices]` (`None`: row-major). torch gathers with a
/// TensorIterator over `x` restrided to the result's shape (stride 0 along the index
/// dims) and the index tensors (size 1 along the others), so the result follows their
/// strides as an elementwise op's output does (see `iter_output_order`).
fn index_result_order(x: &Layout, p: &Plan, out_shape: &[usize]) -> Option<(Vec<i64>, Shape)> {
    let n = out_shape.len();
    let nb = p.bshape.len();
    let src = Layout {
        shape: Shape::from_slice(out_shape),
        strides: indexed_strides(&x.strides, nb, &p.dims),
        offset: 0,
    };
    let indices: Vec<Layout> = p
        .index_layouts
        .iter()
        .map(|l| {
            let mut shape: Shape = smallvec::smallvec![1; n];
            let mut strides: Shape = smallvec::smallvec![0; n];
            shape[p.insert_at..p.insert_at + nb].copy_from_slice(&l.shape);
            strides[p.insert_at..p.insert_at + nb].copy_from_slice(&l.strides);
            Layout {
                shape,
                strides,
                offset: 0,
            }
        })
        .collect();
    let mut operands = vec![&src];
    operands.extend(indices.iter());
    crate::layout::iter_output_order(out_shape, &operands)
}

/// The index tensor among `indices` (one per dim, no bool masks) that indexes dim `d`.
fn indices_for_dim(indices: &[Option<Tensor>], d: usize) -> Option<&Tensor> {
    indices.get(d).and_then(Option::as_ref)
}

/// The first element of `t`, as a number.
fn element_0(t: &Tensor) -> Result<Scalar> {
    let s = t.snapshot();
    host::element(&s.storage.read(), s.layout.offset)
}

/// The shape of `x[indices]`: the broadcast index shape `bshape` in place of the indexed
/// `dims` if they are adjacent, else in front of the other dims.
fn indexed_shape(x_shape: &[usize], bshape: &[usize], dims: &[usize]) -> Shape {
    place_index_dims(x_shape, bshape, dims)
}

/// The strides that go with [`indexed_shape`] when the index dims get stride 0.
fn indexed_strides(x_strides: &[usize], index_ndim: usize, dims: &[usize]) -> Shape {
    place_index_dims(x_strides, &vec![0; index_ndim], dims)
}

/// Per-dim values of `x` (sizes or strides) with those of the indexed `dims` replaced by
/// `index`'s: in their place if the dims are adjacent, else in front (torch's rule).
fn place_index_dims(x: &[usize], index: &[usize], dims: &[usize]) -> Shape {
    let adjacent = dims.windows(2).all(|w| w[1] == w[0] + 1);
    let mut out = Shape::new();
    match (dims.first(), dims.last()) {
        (Some(&first), Some(&last)) if adjacent => {
            out.extend_from_slice(&x[..first]);
            out.extend_from_slice(index);
            out.extend_from_slice(&x[last + 1..]);
        }
        _ => {
            out.extend_from_slice(index);
            out.extend((0..x.len()).filter(|d| !dims.contains(d)).map(|d| x[d]));
        }
    }
    out
}

/// Moves the indexed dims of `x` to the front and flattens them: [prod(indexed), rest...].
fn flatten_indexed(x: &Tensor, dims: &[usize]) -> Result<Tensor> {
    let n = x.ndim();
    let mut perm: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    perm.extend((0..n).filter(|d| !dims.contains(d)).map(|d| d as i64));
    let p = permute(x, &perm)?;
    let ps = p.shape();
    let mut sizes = vec![ps[..dims.len()].iter().product::<usize>() as i64];
    sizes.extend(ps[dims.len()..].iter().map(|&d| d as i64));
    reshape(&p, &sizes)
}

/// Result of the composite gather: [bshape..., rest...] moved so the index dims sit at
/// `insert_at`.
fn gather_plan(x: &Tensor, p: &Plan) -> Result<Tensor> {
    if let Some(shape) = &p.empty {
        return super::zeros_on(shape, x.dtype(), x.device());
    }
    let flat = flatten_indexed(x, &p.dims)?;
    let sel = index_select_as(&flat, 0, &reshape(&p.linear, &[-1])?, false)?;
    let rest: Vec<i64> = flat.shape()[1..].iter().map(|&d| d as i64).collect();
    let mut sizes: Vec<i64> = p.bshape.iter().map(|&d| d as i64).collect();
    sizes.extend(&rest);
    let r = reshape(&sel, &sizes)?;
    if p.insert_at == 0 {
        return Ok(r);
    }
    let (nb, nr) = (p.bshape.len(), rest.len());
    let mut perm: Vec<i64> = (nb..nb + p.insert_at).map(|d| d as i64).collect();
    perm.extend((0..nb).map(|d| d as i64));
    perm.extend((nb + p.insert_at..nb + nr).map(|d| d as i64));
    permute(&r, &perm)
}

/// `x[indices]` where `indices[d]` indexes dim d (None: the whole dim), torch's aten::index.
pub fn index(x: &Tensor, indices: &[Option<Tensor>]) -> Result<Tensor> {
    let shape = x.shape();
    let p = plan(&shape, indices)?;
    let idx_list: Vec<Option<Tensor>> = indices.to_vec();
    apply(
        "aten::index",
        &[x],
        || {
            with_grad_mode(false, || {
                let r = contiguous(&gather_plan(&x.detach(), &p)?)?;
                if p.empty.is_some() {
                    return Ok(r.detach());
                }
                Ok(match index_result_order(&x.layout(), &p, &r.shape()) {
                    // (the gathered values rewritten in that order)
                    Some((order, _)) => permute(
                        &contiguous(&permute(&r, &order)?)?,
                        &super::rebase::inverse_order(&order),
                    )?,
                    None => r,
                }
                .detach())
            })
        },
        |_| {
            (
                IndexBackward0 {
                    shape: shape.clone(),
                    indices: idx_list.into_boxed_slice(),
                },
                saved![],
            )
        },
    )
}

#[derive(Clone)]
pub struct IndexBackward0 {
    shape: Shape,
    indices: Box<[Option<Tensor>]>,
}
impl Backward for IndexBackward0 {
    fn name(&self) -> Cow<'static, str> {
        "IndexBackward0".into()
    }
    // zeros(shape) with the indexed positions accumulating g (repeated indices add up)
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let z = super::zeros_on(&self.shape, g.dtype(), g.device())?;
        Ok(smallvec::smallvec![Some(index_put(
            &z,
            &self.indices,
            &g,
            true
        )?)])
    }
    // The same accumulation with a full slice first: each sample's gradient goes to its own
    // slice. Where the indexed dims are not adjacent, the index dims lead the selection,
    // before the batch dim: the samples are moved there.
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        let b = BatchedIndices::new(&self.indices)?;
        let run = || -> Result<Grads> {
            let g = grad0(g)?;
            let shape = super::batched_shape(batch, &self.shape);
            let z = super::zeros_on(&shape, g.dtype(), g.device())?;
            let values = b.samples_as_selection(&g, self.shape.len())?;
            Ok(smallvec::smallvec![Some(index_put(
                &z, &b.indices, &values, true
            )?)])
        };
        Some(run())
    }
}

/// An advanced index applied to a batch of samples (`[B, *shape]`): the indices with a
/// full slice first, and where the selection puts the batch dim.
struct BatchedIndices {
    /// `[None, *indices]`
    indices: Vec<Option<Tensor>>,
    /// The number of dims the index tensors select (a bool mask: the dims it covers).
    n_indexed: usize,
    /// The indexed dims are adjacent: `x[B-batched][indices]` is `[B, *selection]`;
    /// otherwise the broadcast index dims come first: `[*index, B, *rest]`.
    adjacent: bool,
}

impl BatchedIndices {
    /// `None` where the node runs once per sample instead: a 0-d bool mask (which adds a
    /// dim of its own to the selection) or no index tensor.
    fn new(indices: &[Option<Tensor>]) -> Option<Self> {
        let mut dims = Vec::new();
        let mut d = 0usize;
        for ix in indices {
            match ix {
                None => d += 1,
                Some(t) if t.dtype() == DType::Bool => {
                    if t.ndim() == 0 {
                        return None;
                    }
                    dims.extend(d..d + t.ndim());
                    d += t.ndim();
                }
                Some(_) => {
                    dims.push(d);
                    d += 1;
                }
            }
        }
        if dims.is_empty() {
            return None;
        }
        Some(BatchedIndices {
            indices: std::iter::once(None)
                .chain(indices.iter().cloned())
                .collect(),
            n_indexed: dims.len(),
            adjacent: dims.windows(2).all(|w| w[1] == w[0] + 1),
        })
    }

    /// The number of broadcast index dims in a selection of `sel_ndim` dims from
    /// samples of `ndim` dims (per sample).
    fn index_ndim(&self, sel_ndim: usize, ndim: usize) -> usize {
        sel_ndim - (ndim - self.n_indexed)
    }

    /// `[B, *selection]` (a batch of per-sample selections) laid out as the batched
    /// selection is (`ndim`: a sample's rank).
    fn samples_as_selection(&self, g: &Tensor, ndim: usize) -> Result<Tensor> {
        if self.adjacent {
            return Ok(g.clone());
        }
        let nb = self.index_ndim(g.ndim() - 1, ndim);
        move_dim(g, 0, nb)
    }

    /// The batched selection (`indices` applied to `[B, *sample]`) as `[B, *selection]`.
    fn selection_as_samples(&self, r: &Tensor, ndim: usize) -> Result<Tensor> {
        if self.adjacent {
            return Ok(r.clone());
        }
        let nb = self.index_ndim(r.ndim() - 1, ndim);
        move_dim(r, nb, 0)
    }
}

/// `t` with dim `from` moved to position `to`, the others in their order.
fn move_dim(t: &Tensor, from: usize, to: usize) -> Result<Tensor> {
    let mut perm: Vec<i64> = (0..t.ndim() as i64).filter(|&d| d != from as i64).collect();
    perm.insert(to, from as i64);
    permute(t, &perm)
}

/// Out-of-place `index_put(x, indices, values, accumulate)`: x with the indexed
/// positions set to (or, with accumulate, increased by) `values` broadcast to the
/// indexed shape. `x[indices] = v` is its in-place form.
pub fn index_put(
    x: &Tensor,
    indices: &[Option<Tensor>],
    values: &Tensor,
    accumulate: bool,
) -> Result<Tensor> {
    index_put_checked(x, indices, values, accumulate, PutValues::Cast)
}

/// What index_put's values came from, for torch's checks.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum PutValues {
    /// A tensor, cast to x's dtype (internal uses, masked_fill's path).
    Cast,
    /// A tensor that must have x's dtype: torch's index_put and `x[adv] = tensor` take no
    /// implicit cast (checked after the indices' structure and the values' shape, before
    /// the indices' bounds).
    SameDtype,
    /// A Python number (`x[adv] = 1.5`), made a tensor of x's dtype.
    Number,
}

/// [`index_put`], with torch's checks for values of the kind `kind`.
pub fn index_put_checked(
    x: &Tensor,
    indices: &[Option<Tensor>],
    values: &Tensor,
    accumulate: bool,
    kind: PutValues,
) -> Result<Tensor> {
    let shape = x.shape();
    let p = put_plan(x, indices, values, kind)?;
    let values = to_dtype(values, x.dtype())?;
    // Positions (row-major over x) of every selected element.
    let lx = Layout::contiguous(&shape);
    let (pos, sel_shape) = put_positions(&lx, &p)?;
    let pos_vals = pos.flat();
    if crate::replay::active() && !pos_vals.is_empty() {
        // recording a step: the positions are a host plan, recomputed from the linear
        // index (itself recomputed from the index tensors) on every replay
        let linear = p.linear.snapshot();
        let (dims, layout) = (p.dims.clone(), linear.layout.clone());
        let PutPositions { before, after, .. } = pos;
        crate::replay::plan_index(&linear.storage.read(), &pos_vals, move |b| {
            let base = put_bases(b, &layout, &lx.shape, &lx.strides, &dims)?;
            Ok(PutPositions {
                before: before.clone(),
                base,
                after: after.clone(),
            }
            .flat())
        })?;
    }
    let vb = with_grad_mode(false, || contiguous(&expand(&values.detach(), &sel_shape)?))?;
    let xs = x.snapshot();
    let vs = vb.snapshot();
    let vshape = values.shape();
    let idx_list: Vec<Option<Tensor>> = indices.to_vec();
    apply(
        "aten::index_put_",
        &[x, &values],
        || {
            let out = k::index_put(
                &xs.storage.read(),
                &xs.layout,
                xs.dtype,
                &pos_vals,
                &vs.storage.read(),
                &vs.layout,
                accumulate,
            )?;
            Ok(new_tensor(out, &shape))
        },
        |_| {
            (
                IndexPutBackward0 {
                    indices: idx_list.into_boxed_slice(),
                    values_shape: vshape.into_iter().collect(),
                    accumulate,
                },
                saved![],
            )
        },
    )
}

/// `x[indices] = values` written straight into x's memory (one pass over the written
/// elements, as torch's kernel), for an in-place index_put_ that records nothing; the
/// caller has checked that (and that `values` does not share x's memory). `false` where
/// x's backend has no such kernel: the caller computes out of place.
pub(crate) fn index_put_direct(
    x: &Tensor,
    indices: &[Option<Tensor>],
    values: &Tensor,
    accumulate: bool,
    kind: PutValues,
) -> Result<bool> {
    if crate::replay::active() {
        return Ok(false); // out of place, where the positions are recorded as a plan
    }
    let p = put_plan(x, indices, values, kind)?;
    let values = with_grad_mode(false, || to_dtype(values, x.dtype()))?;
    let xs = x.snapshot();
    let (pos, sel_shape) = put_positions(&xs.layout, &p)?;
    let vs = values.snapshot();
    let lv = vs.layout.expand(&sel_shape)?;
    let done = crate::dispatch::forward(
        "aten::index_put_",
        || {
            vec![
                xs.layout.shape.to_vec().into(),
                vs.layout.shape.to_vec().into(),
            ]
        },
        || {
            let (r, mut w) = crate::storage::Storage::read_and_write(&vs.storage, &xs.storage);
            k::index_put_in_place(
                &mut w,
                &pos.before,
                &pos.base,
                &pos.after,
                &r,
                &lv,
                accumulate,
            )
        },
    )?;
    if done {
        x.bump_version();
    }
    Ok(done)
}

/// Where the elements `x[indices]` selects are in x's buffer (x laid out as `lx`), in the
/// row-major order of the selection: element (i, b, j) of the selection (the dims before
/// the index block, the broadcast index, the dims after it) is at
/// `before[i] + base[b] + after[j]`.
pub(crate) struct PutPositions {
    pub before: Vec<usize>,
    pub base: Vec<usize>,
    pub after: Vec<usize>,
}

impl PutPositions {
    /// Every position, in order.
    fn flat(&self) -> Vec<i64> {
        let mut pos = Vec::with_capacity(self.before.len() * self.base.len() * self.after.len());
        for &o in &self.before {
            for &b in &self.base {
                pos.extend(self.after.iter().map(|&a| (o + b + a) as i64));
            }
        }
        pos
    }
}

/// The [`PutPositions`] of `x[indices]` (x laid out as `lx`) and the selection's shape:
/// each broadcast index's offset comes from the plan's linear index over the indexed dims,
/// the other dims' from their strides.
///
/// The linear index is read on the host as a plan: a step being recorded
/// ([`index_put_checked`], the only caller then) records the positions as a plan of their
/// own, recomputed from the linear index on every replay.
fn put_positions(lx: &Layout, p: &Plan) -> Result<(PutPositions, Shape)> {
    let shape = &lx.shape;
    let sel = indexed_shape(shape, &p.bshape, &p.dims);
    if p.empty.is_some() || crate::shape::numel(&sel) == 0 {
        let none = PutPositions {
            before: Vec::new(),
            base: Vec::new(),
            after: Vec::new(),
        };
        return Ok((none, sel));
    }
    let linear = p.linear.snapshot();
    let r = linear.storage.read();
    let base = put_bases(
        &*host::read_planned(&r)?,
        &linear.layout,
        shape,
        &lx.strides,
        &p.dims,
    )?;
    // the offsets of the other dims, row-major over those before and after the index block
    let offsets = |dims: &mut dyn Iterator<Item = usize>, start: usize| {
        let mut out = vec![start];
        for d in dims {
            out = out
                .iter()
                .flat_map(|&o| (0..shape[d]).map(move |j| o + j * lx.strides[d]))
                .collect();
        }
        out
    };
    let rest = || (0..shape.len()).filter(|d| !p.dims.contains(d));
    let pos = PutPositions {
        before: offsets(&mut rest().filter(|&d| d < p.insert_at), lx.offset),
        base,
        after: offsets(&mut rest().filter(|&d| d >= p.insert_at), 0),
    };
    Ok((pos, sel))
}

/// Each element's offset in x's buffer (shape `shape`, strides `strides`) over the indexed
/// dims `dims`, from the plan's linear index (contiguous int64, laid out as `layout`, every
/// value in range: checked when it was made).
fn put_bases(
    linear: &Buffer,
    layout: &Layout,
    shape: &[usize],
    strides: &[usize],
    dims: &[usize],
) -> Result<Vec<usize>> {
    let Buffer::I64(linear) = linear else {
        return Err(Error::Internal("advanced index is not int64".into()));
    };
    let linear = linear
        .get(layout.offset..layout.offset + layout.numel())
        .ok_or_else(|| Error::Internal("advanced index shorter than its layout".into()))?;
    Ok(linear
        .iter()
        .map(|&l| {
            let mut l = l as usize;
            let mut off = 0;
            for &d in dims.iter().rev() {
                off += (l % shape[d]) * strides[d];
                l /= shape[d];
            }
            off
        })
        .collect())
}

/// index_put's plan, after torch's checks on the indices and on values of the kind `kind`.
fn put_plan(
    x: &Tensor,
    indices: &[Option<Tensor>],
    values: &Tensor,
    kind: PutValues,
) -> Result<Plan> {
    let shape = x.shape();
    let strides = x.layout().strides;
    plan_checked(&shape, indices, |bshape, dims| {
        let selected = indexed_shape(&shape, bshape, dims);
        if crate::shape::numel(bshape) > 0 && dims.iter().any(|&d| shape[d] == 0) {
            if kind != PutValues::Number || dims.len() > 1 {
                return Err(Error::index(
                    "index is out of bounds for dimension with size 0",
                ));
            }
            // torch puts a number through index_fill_: a view of x restrided to the
            // indexed shape (index dims of stride 0), which its storage check may refuse,
            // then the index kernel, which refuses the index
            let view_strides = indexed_strides(&strides, bshape.len(), dims);
            if selected.contains(&0) {
                return Ok(()); // nothing to write: that view needs no storage
            }
            let snap = x.snapshot();
            let (item, offset) = (x.dtype().size_in_bytes(), snap.layout.offset);
            let span: usize = selected
                .iter()
                .zip(&view_strides)
                .map(|(&n, &st)| (n - 1) * st)
                .sum();
            let storage = snap.storage.len() * item;
            let needed = (offset + span + 1) * item;
            if needed > storage {
                return Err(Error::runtime(format!(
                    "setStorage: sizes {}, strides {}, storage offset {offset}, and itemsize {item} requiring a \
                     storage size of {needed} are out of bounds for storage of size {storage}",
                    crate::shape::fmt_shape(&selected),
                    crate::shape::fmt_shape(&view_strides),
                )));
            }
            let d = dims[0];
            let first = indices_for_dim(indices, d).map_or(Ok(Scalar::Int(0)), element_0)?;
            return Err(Error::index(format!(
                "index {} is out of bounds for dimension {d} with size 0",
                first.as_f64() as i64
            )));
        }
        let vshape = values.shape();
        if broadcast_shapes(&selected, &vshape).ok().as_deref() != Some(&selected[..]) {
            return Err(Error::runtime(format!(
                "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
                crate::shape::fmt_shape(&vshape),
                crate::shape::fmt_shape(&selected)
            )));
        }
        if kind == PutValues::Cast && values.numel() == 1 {
            // (torch's masked_fill path takes the value as a number, checked as such)
            element_0(values)?.check_fits(x.dtype())?;
        }
        if kind == PutValues::SameDtype && x.dtype() != values.dtype() {
            return Err(Error::runtime(format!(
                "Index put requires the source and destination dtypes match, got {} for the destination and {} for \
                 the source.",
                x.dtype().scalar_type_name(),
                values.dtype().scalar_type_name()
            )));
        }
        Ok(())
    })
}

#[derive(Clone)]
pub struct IndexPutBackward0 {
    indices: Box<[Option<Tensor>]>,
    values_shape: Box<[usize]>,
    accumulate: bool,
}
impl Backward for IndexPutBackward0 {
    fn name(&self) -> Cow<'static, str> {
        "IndexPutBackward0".into()
    }
    // dx = g with overwritten positions zeroed (kept when accumulating); dv = sum_to(g[idx])
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let gx = if ctx.needs_input_grad(0) {
            // (a gradient with no elements has nothing to zero; its indices were never
            // checked against the empty dims: torch's scalar setitem is an index_fill)
            Some(if self.accumulate || g.numel() == 0 {
                g.clone()
            } else {
                let z = super::zeros_on(&[], g.dtype(), g.device())?;
                // (g's dtype: no check of the zero as a number, which would read it on
                // the host, and a recorded step could not)
                index_put_checked(&g, &self.indices, &z, false, PutValues::SameDtype)?
            })
        } else {
            None
        };
        let gv = if ctx.needs_input_grad(1) {
            Some(sum_to(&index(&g, &self.indices)?, &self.values_shape)?)
        } else {
            None
        };
        Ok(smallvec::smallvec![gx, gv])
    }
    // The same formulas with a full slice first (each sample's gradient indexed in its
    // own slice): the zeroing broadcasts a number, the values' gradient is the batched
    // selection brought to `[B, *selection]` and summed to `[B, *values_shape]`.
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        let b = BatchedIndices::new(&self.indices)?;
        let run = || -> Result<Grads> {
            let g = grad0(g)?;
            let ndim = g.ndim() - 1;
            let gx = if ctx.needs_input_grad(0) {
                Some(if self.accumulate || g.numel() == 0 {
                    g.clone()
                } else {
                    let z = super::zeros_on(&[], g.dtype(), g.device())?;
                    // (g's dtype: no check of the zero as a number, which would read it
                    // on the host, and a recorded step could not)
                    index_put_checked(&g, &b.indices, &z, false, PutValues::SameDtype)?
                })
            } else {
                None
            };
            let gv = if ctx.needs_input_grad(1) {
                let r = b.selection_as_samples(&index(&g, &b.indices)?, ndim)?;
                Some(super::sum_to_batched(&r, &self.values_shape)?)
            } else {
                None
            };
            Ok(smallvec::smallvec![gx, gv])
        };
        Some(run())
    }
}
