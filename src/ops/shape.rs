//! Shape ops that are views (view, reshape of viewable data, expand, permute, transpose,
//! slice, select, squeeze, unsqueeze, as_strided, split): they share storage (cat, stack
//! and repeat, which copy, are `concat.rs`).

use super::elementwise::grad0;
use super::{apply, new_tensor, sum_to};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::backend as k;
use crate::layout::Layout;
use crate::shape::{Shape, infer_size, wrap_dim};
use crate::tensor::{MultiOutput, Tensor};
use crate::{Error, Result, saved};
use std::borrow::Cow;

/// Makes `layout` a view of `x` that remembers its base (for in-place ops on views).
pub(crate) fn view_of(x: &Tensor, layout: Layout) -> Tensor {
    let v = x.alias_with_layout(layout);
    v.set_base(Some(x.base().unwrap_or_else(|| x.clone())));
    if x.multi_output().is_some() {
        v.set_multi_output(MultiOutput { op: None });
    }
    v
}

/// Marks the views an op returns together (split, chunk, unbind; `op` as torch's
/// messages name it), whatever their dtype: see [`MultiOutput`]. (An int or bool one can
/// still be written by `copy_`, which checks nothing for such a target, and so by
/// `v[...] = t` with `t` of v's sizes; a `fill_`, `mul_`, ... with an operand that
/// requires grad is refused, as in torch.)
fn multi_output(views: Vec<Tensor>, op: &'static str) -> Vec<Tensor> {
    for (i, v) in views.iter().enumerate() {
        v.set_multi_output(MultiOutput {
            op: Some((op, i as u32)),
        });
    }
    views
}

/// `x.unbind(dim)`: the slices along `dim`, as views, with one node for all of them
/// (torch's UnbindBackward0).
pub fn unbind(x: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    if x.ndim() == 0 {
        return Err(Error::index(
            "Dimension specified as 0 but tensor has no dimensions",
        ));
    }
    let l = x.layout();
    let d = wrap_dim(dim, l.ndim())?;
    let views = || {
        let views = (0..l.shape[d])
            .map(|i| Ok(view_of(x, l.select(d, i as i64)?)))
            .collect::<Result<_>>()?;
        Ok(multi_output(views, "Unbind"))
    };
    super::apply_multi("aten::unbind", &[x], views, |_| {
        (
            SplitBackward::new(SplitKind::Unbind, &l.shape, d, vec![1; l.shape[d]]),
            saved![],
        )
    })
}

/// Which op made a [`SplitBackward`] node (its name, and whether its views keep `dim`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitKind {
    /// `split(int)`, `chunk`: SplitBackward0
    Split,
    /// `split(list)`, `chunk` along an empty dim: SplitWithSizesBackward0
    SplitWithSizes,
    /// `unbind`: UnbindBackward0 (its views drop `dim`)
    Unbind,
    /// `unsafe_split(int)`, `unsafe_chunk`: UnsafeSplitBackward0 (pieces that share the
    /// storage but are not views)
    UnsafeSplit,
    /// `unsafe_split_with_sizes`: UnsafeSplitWithSizesBackward0
    UnsafeSplitWithSizes,
}

/// The one node of the views split, chunk and unbind return together (torch's
/// SplitBackward0, SplitWithSizesBackward0, UnbindBackward0): an output per view, and a
/// backward that puts their gradients side by side in one tensor of the input's shape
/// (zeros for a view that got none), as torch's `split_backward` / `unbind_backward`: one
/// copy of the input's size, where a node per view would give each a zero tensor of
/// the input's size.
#[derive(Clone)]
pub struct SplitBackward(Box<SplitInfo>);

#[derive(Clone)]
struct SplitInfo {
    kind: SplitKind,
    /// the input's shape
    shape: Shape,
    dim: usize,
    /// `dim` as given (what the unsafe splits show, as torch)
    dim_arg: i64,
    /// each view's size along `dim` (1 for unbind's)
    sizes: Vec<usize>,
}

impl SplitBackward {
    fn new(kind: SplitKind, shape: &Shape, dim: usize, sizes: Vec<usize>) -> SplitBackward {
        SplitBackward(Box::new(SplitInfo {
            kind,
            shape: shape.clone(),
            dim,
            dim_arg: dim as i64,
            sizes,
        }))
    }

    /// The gradients of the views, side by side along `dim + lead` (`lead`: a batch dim
    /// in front of each), zeros of `like`'s dtype and device for a view that got none.
    fn assemble(&self, g: &[Option<Tensor>], lead: &[usize]) -> Result<Option<Tensor>> {
        let s = &self.0;
        let Some(like) = g.iter().flatten().next() else {
            return Ok(None);
        };
        let pieces = s
            .sizes
            .iter()
            .zip(g.iter().chain(std::iter::repeat(&None)))
            .map(|(&size, g)| match g {
                Some(g) => Ok(g.clone()),
                None => {
                    let mut shape: Vec<usize> = lead.to_vec();
                    shape.extend_from_slice(&s.shape);
                    if s.kind == SplitKind::Unbind {
                        shape.remove(lead.len() + s.dim);
                    } else {
                        shape[lead.len() + s.dim] = size;
                    }
                    super::zeros_on(&shape, like.dtype(), like.device())
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let dim = (lead.len() + s.dim) as i64;
        Ok(Some(if s.kind == SplitKind::Unbind {
            super::stack(&pieces, dim)?
        } else {
            super::cat(&pieces, dim)?
        }))
    }
}

impl Backward for SplitBackward {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        let s = &self.0;
        let dim = if matches!(
            s.kind,
            SplitKind::Split | SplitKind::SplitWithSizes | SplitKind::Unbind
        ) {
            ("dim", F::Int(s.dim as i64))
        } else {
            ("dim", F::Int64Bits(s.dim_arg))
        };
        let sizes = ("self_sym_sizes", F::ints(&s.shape));
        match s.kind {
            SplitKind::Unbind => vec![dim],
            SplitKind::Split | SplitKind::UnsafeSplit => {
                let size = s.sizes.first().copied().unwrap_or(0);
                vec![dim, sizes, ("split_size", F::Int(size as i64))]
            }
            SplitKind::SplitWithSizes | SplitKind::UnsafeSplitWithSizes => {
                vec![dim, sizes, ("split_sizes", F::ints(&s.sizes))]
            }
        }
    }
    fn name(&self) -> Cow<'static, str> {
        match self.0.kind {
            SplitKind::Split => "SplitBackward0",
            SplitKind::SplitWithSizes => "SplitWithSizesBackward0",
            SplitKind::Unbind => "UnbindBackward0",
            SplitKind::UnsafeSplit => "UnsafeSplitBackward0",
            SplitKind::UnsafeSplitWithSizes => "UnsafeSplitWithSizesBackward0",
        }
        .into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![self.assemble(g, &[])?])
    }
    fn jvp(&self, _ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let s = &self.0;
        let t = t.first()?.as_ref()?;
        let views = match s.kind {
            SplitKind::Unbind => unbind(t, s.dim as i64),
            // (torch's tangents of the unsafe pieces are unsafe pieces of the tangent)
            SplitKind::UnsafeSplit | SplitKind::UnsafeSplitWithSizes => {
                split(t, &s.sizes, s.dim as i64, "UnsafeSplitWithSizes")
            }
            _ => split(t, &s.sizes, s.dim as i64, "SplitWithSizes"),
        };
        Some(views.map(|v| v.into_iter().map(Some).collect()))
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.assemble(g, &[batch]).map(|g| smallvec::smallvec![g]))
    }
}

/// `x.view(dtype)`: rgrad reinterprets no bits, so only `x`'s own dtype is accepted
/// (the result is `x` itself).
pub fn view_dtype(x: &Tensor, dtype: crate::dtype::DType) -> Result<Tensor> {
    if dtype != x.dtype() {
        return Err(Error::runtime("view(dtype) is not supported by rgrad"));
    }
    Ok(x.clone())
}

/// `x.view(*sizes)`: errors when the strides do not allow it, as in torch.
pub fn view(x: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    let l = x.layout();
    let shape = infer_size(sizes, l.numel())?;
    let nl = l.view(&shape).ok_or_else(|| {
        Error::runtime(
            "view size is not compatible with input tensor's size and stride (at least one dimension spans across two \
             contiguous subspaces). Use .reshape(...) instead.",
        )
    })?;
    let in_shape = l.shape.clone();
    apply(
        "aten::view",
        &[x],
        || Ok(view_of(x, nl)),
        |_| {
            (
                ViewBackward {
                    shape: in_shape,
                    name: "ViewBackward0",
                },
                saved![],
            )
        },
    )
}

/// `x.reshape(*sizes)`: a view when possible, else a copy.
pub fn reshape(x: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    let l = x.layout();
    let shape = infer_size(sizes, l.numel())?;
    if l.view(&shape).is_some() {
        return view(x, sizes);
    }
    let c = contiguous(x)?;
    let in_shape = l.shape.clone();
    let cl = c.layout();
    apply(
        "aten::reshape",
        &[&c],
        || {
            Ok(c.alias_with_layout(Layout {
                shape: shape.clone(),
                strides: crate::shape::contiguous_strides(&shape),
                offset: cl.offset,
            }))
        },
        |_| {
            (
                ViewBackward {
                    shape: in_shape,
                    name: "UnsafeViewBackward0",
                },
                saved![],
            )
        },
    )
}

/// torch's `_unsafe_view`: a composite op's fresh result `x` under a new shape, recorded
/// as UnsafeViewBackward0 and not a view of `x` (nothing else can reach `x`).
pub fn unsafe_view(x: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    let l = x.layout();
    let shape = infer_size(sizes, l.numel())?;
    let nl = l
        .view(&shape)
        .ok_or_else(|| Error::Internal("unsafe_view of a tensor that cannot be viewed".into()))?;
    let in_shape = l.shape.clone();
    apply(
        "aten::_unsafe_view",
        &[x],
        || Ok(x.alias_with_layout(nl)),
        |_| {
            (
                ViewBackward {
                    shape: in_shape,
                    name: "UnsafeViewBackward0",
                },
                saved![],
            )
        },
    )
}

#[derive(Clone)]
pub struct ViewBackward {
    shape: Shape,
    name: &'static str,
}
impl Backward for ViewBackward {
    fn name(&self) -> Cow<'static, str> {
        self.name.into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let dims: Vec<i64> = self.shape.iter().map(|&d| d as i64).collect();
        Ok(smallvec::smallvec![Some(reshape(&grad0(g)?, &dims)?)])
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        Some(reshape_batched(g, &self.shape, batch))
    }
}

/// A view's backward over a batch of gradients: each sample reshaped to `shape`.
fn reshape_batched(g: &[Option<Tensor>], shape: &[usize], batch: usize) -> Result<Grads> {
    let dims: Vec<i64> = std::iter::once(batch)
        .chain(shape.iter().copied())
        .map(|d| d as i64)
        .collect();
    Ok(smallvec::smallvec![Some(reshape(&grad0(g)?, &dims)?)])
}

/// A logical dim of a batched gradient (`g`: `[B, *logical]`) as a physical one.
fn batched_dim(d: i64, g: &Tensor) -> Result<i64> {
    Ok(wrap_dim(d, g.ndim() - 1)? as i64 + 1)
}

/// `zeros(shape)` with the region `rel` set to `g`, for each sample of a batched `g`.
pub(crate) fn view_grad_in_base_batched(
    g: &Tensor,
    shape: &[usize],
    rel: &Layout,
) -> Result<Tensor> {
    let batch = g.shape()[0];
    let mut brel = rel.clone();
    brel.shape.insert(0, batch);
    brel.strides.insert(0, crate::shape::numel(shape));
    view_grad_in_base(g, &super::batched_shape(batch, shape), &brel)
}

/// `x.contiguous()`: `x` itself when already contiguous.
pub fn contiguous(x: &Tensor) -> Result<Tensor> {
    if x.is_contiguous() {
        Ok(x.clone())
    } else {
        super::clone_row_major(x)
    }
}

/// `x.flatten(start_dim, end_dim)`.
pub fn flatten(x: &Tensor, start: i64, end: i64) -> Result<Tensor> {
    let shape = x.shape();
    let (s, e) = (wrap_dim(start, shape.len())?, wrap_dim(end, shape.len())?);
    if shape.is_empty() {
        return reshape(x, &[1]);
    }
    if s > e {
        return Err(Error::runtime(
            "flatten() has invalid args: start_dim cannot come after end_dim",
        ));
    }
    if s == e {
        return Ok(x.clone()); // torch returns the input itself (still a leaf), not a view
    }
    let mut dims: Vec<i64> = shape[..s].iter().map(|&d| d as i64).collect();
    dims.push(shape[s..=e].iter().product::<usize>() as i64);
    dims.extend(shape[e + 1..].iter().map(|&d| d as i64));
    reshape(x, &dims)
}

/// `x.expand(*sizes)` (-1 keeps a size).
pub fn expand(x: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if x.shape().as_slice() == shape {
        return Ok(x.clone());
    }
    expand_view(x, shape)
}

/// `x.expand(*sizes)` as the user calls it: always a new view, even to the same shape
/// (torch returns a non-leaf alias there; `expand` above skips it for internal broadcasts).
pub fn expand_view(x: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let l = x.layout();
    if shape.len() < l.ndim() {
        let list = |s: &[usize]| {
            s.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(Error::runtime(format!(
            "expand(torch.{}Tensor{{[{}]}}, size=[{}]): the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
            x.dtype().scalar_type_name(),
            list(&l.shape),
            list(shape),
            shape.len(),
            l.ndim()
        )));
    }
    let nl = l.expand(shape)?;
    let in_shape = l.shape.clone();
    apply(
        "aten::expand",
        &[x],
        || Ok(view_of(x, nl)),
        |_| (ExpandBackward0 { shape: in_shape }, saved![]),
    )
}

/// `x.expand(*sizes)` with torch's -1 convention.
pub fn expand_sizes(x: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    let shape = x.shape();
    let lead = sizes.len() as i64 - shape.len() as i64;
    if lead < 0 {
        return Err(Error::runtime(format!(
            "expand: the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
            sizes.len(),
            shape.len()
        )));
    }
    let mut out = Shape::new();
    for (i, &s) in sizes.iter().enumerate() {
        if s == -1 {
            if (i as i64) < lead {
                return Err(Error::runtime(format!(
                    "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {i}"
                )));
            }
            out.push(shape[i - lead as usize]);
        } else if s < 0 {
            // torch reads the size as given: against an existing size other than 1 it is
            // a mismatch; anywhere else it makes the element count overflow
            let existing = (i as i64 >= lead).then(|| shape[i - lead as usize]);
            return Err(match existing {
                Some(d) if d != 1 => Error::runtime(format!(
                    "The expanded size of the tensor ({s}) must match the existing size ({d}) at non-singleton dimension {i}.  Target sizes: {sizes:?}.  Tensor sizes: {}",
                    crate::shape::fmt_shape(&shape)
                )),
                _ => Error::runtime("numel: integer multiplication overflow"),
            });
        } else {
            out.push(s as usize);
        }
    }
    expand_view(x, &out)
}

#[derive(Clone)]
pub struct ExpandBackward0 {
    shape: Shape,
}
impl Backward for ExpandBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![("self_sym_sizes", F::ints(&self.shape))]
    }
    fn name(&self) -> Cow<'static, str> {
        "ExpandBackward0".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(sum_to(&grad0(g)?, &self.shape)?)])
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| {
            Ok(smallvec::smallvec![Some(super::sum_to_batched(
                &g,
                &self.shape
            )?)])
        }))
    }
}

pub fn permute(x: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let l = x.layout();
    let nl = l.permute(dims)?;
    let wrapped: Vec<usize> = dims
        .iter()
        .map(|&d| wrap_dim(d, l.ndim()))
        .collect::<Result<_>>()?;
    let mut inverse = vec![0i64; wrapped.len()];
    for (i, &d) in wrapped.iter().enumerate() {
        inverse[d] = i as i64;
    }
    apply(
        "aten::permute",
        &[x],
        || Ok(view_of(x, nl)),
        |_| (PermuteBackward0 { inverse }, saved![]),
    )
}

#[derive(Clone)]
pub struct PermuteBackward0 {
    inverse: Vec<i64>,
}
impl Backward for PermuteBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        // (the node keeps the inverse permutation)
        let mut dims = vec![0i64; self.inverse.len()];
        for (i, &d) in self.inverse.iter().enumerate() {
            if let Some(slot) = usize::try_from(d).ok().and_then(|d| dims.get_mut(d)) {
                *slot = i as i64;
            }
        }
        vec![("dims", F::Ints(dims))]
    }
    fn name(&self) -> Cow<'static, str> {
        "PermuteBackward0".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(permute(
            &grad0(g)?,
            &self.inverse
        )?)])
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| {
            let mut dims = vec![0];
            for &d in &self.inverse {
                dims.push(batched_dim(d, &g)?);
            }
            Ok(smallvec::smallvec![Some(permute(&g, &dims)?)])
        }))
    }
}

pub fn transpose(x: &Tensor, d0: i64, d1: i64) -> Result<Tensor> {
    transpose_named(x, d0, d1, "TransposeBackward0")
}

/// `x.t()`: transpose of a ≤2-D tensor.
pub fn t(x: &Tensor) -> Result<Tensor> {
    let n = x.ndim();
    if n > 2 {
        return Err(Error::runtime(format!(
            "t() expects a tensor with <= 2 dimensions, but self is {n}D"
        )));
    }
    if n < 2 {
        return apply(
            "aten::t",
            &[x],
            || Ok(view_of(x, x.layout())),
            |_| {
                (
                    TransposeBackward0 {
                        d0: 0,
                        d1: 0,
                        name: "TBackward0",
                    },
                    saved![],
                )
            },
        );
    }
    transpose_named(x, 0, 1, "TBackward0")
}

fn transpose_named(x: &Tensor, d0: i64, d1: i64, name: &'static str) -> Result<Tensor> {
    let nl = x.layout().transpose(d0, d1)?;
    apply(
        "aten::transpose",
        &[x],
        || Ok(view_of(x, nl)),
        |_| (TransposeBackward0 { d0, d1, name }, saved![]),
    )
}

#[derive(Clone)]
pub struct TransposeBackward0 {
    d0: i64,
    d1: i64,
    name: &'static str,
}
impl TransposeBackward0 {
    /// The out-of-place node of the gradient's transpose (an in-place transpose's
    /// gradient is transposed out of place, as torch's).
    fn grad_name(&self) -> &'static str {
        match self.name {
            "TBackward0" | "TBackward1" => "TBackward0",
            _ => "TransposeBackward0",
        }
    }
}
impl Backward for TransposeBackward0 {
    fn name(&self) -> Cow<'static, str> {
        self.name.into()
    }
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        match self.name {
            "TBackward0" | "TBackward1" => vec![],
            _ => vec![("dim0", F::Int(self.d0)), ("dim1", F::Int(self.d1))],
        }
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        if g.ndim() < 2 {
            return Ok(smallvec::smallvec![Some(g)]);
        }
        Ok(smallvec::smallvec![Some(transpose_named(
            &g,
            self.d0,
            self.d1,
            self.grad_name()
        )?)])
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| {
            if g.ndim() < 3 {
                return Ok(smallvec::smallvec![Some(g)]);
            }
            let (d0, d1) = (batched_dim(self.d0, &g)?, batched_dim(self.d1, &g)?);
            Ok(smallvec::smallvec![Some(transpose_named(
                &g,
                d0,
                d1,
                self.grad_name()
            )?)])
        }))
    }
}

/// `x[start:stop:step]` along `dim`.
pub fn slice(
    x: &Tensor,
    dim: i64,
    start: Option<i64>,
    stop: Option<i64>,
    step: i64,
) -> Result<Tensor> {
    let l = x.layout();
    if l.ndim() == 0 {
        return Err(Error::index("slice() cannot be applied to a 0-dim tensor."));
    }
    let d = wrap_dim(dim, l.ndim())?;
    let nl = l.slice(d, start, stop, step)?;
    let rel = Layout::contiguous(&l.shape).slice(d, start, stop, step)?;
    apply(
        "aten::slice",
        &[x],
        || Ok(view_of(x, nl)),
        |_| {
            (
                SliceBackward0 {
                    shape: l.shape.clone(),
                    rel: Box::new(rel),
                },
                saved![],
            )
        },
    )
}

/// `x.narrow(dim, start, length)`.
pub fn narrow(x: &Tensor, dim: i64, start: i64, length: i64) -> Result<Tensor> {
    let l = x.layout();
    if l.ndim() == 0 {
        return Err(Error::runtime(
            "narrow() cannot be applied to a 0-dim tensor.",
        ));
    }
    let d = wrap_dim(dim, l.ndim())?;
    let size = l.shape[d] as i64;
    let start = if start < 0 { start + size } else { start };
    if start < 0 || length < 0 {
        return Err(Error::index(format!(
            "start out of range (expected to be in range of [{}, {}], but got {start})",
            -size, size
        )));
    }
    l.narrow(d, start as usize, length as usize)?;
    slice(x, dim, Some(start), Some(start + length), 1)
}

#[derive(Clone)]
pub struct SliceBackward0 {
    shape: Shape,
    /// Boxed: a view's node is rare next to arithmetic, and an inline layout would make
    /// every arena slot 32 bytes bigger.
    rel: Box<Layout>,
}
impl Backward for SliceBackward0 {
    fn name(&self) -> Cow<'static, str> {
        "SliceBackward0".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(view_grad_in_base(
            &grad0(g)?,
            &self.shape,
            &self.rel
        )?)])
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| {
            Ok(smallvec::smallvec![Some(view_grad_in_base_batched(
                &g,
                &self.shape,
                &self.rel
            )?)])
        }))
    }
}

/// `x[index]` along `dim` (removes the dim).
pub fn select(x: &Tensor, dim: i64, index: i64) -> Result<Tensor> {
    let l = x.layout();
    if l.ndim() == 0 {
        return Err(Error::index(
            "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number",
        ));
    }
    let d = wrap_dim(dim, l.ndim())?;
    let nl = l.select(d, index)?;
    let rel = Layout::contiguous(&l.shape).select(d, index)?;
    apply(
        "aten::select",
        &[x],
        || Ok(view_of(x, nl)),
        |_| {
            (
                SelectBackward0 {
                    shape: l.shape.clone(),
                    rel: Box::new(rel),
                },
                saved![],
            )
        },
    )
}

#[derive(Clone)]
pub struct SelectBackward0 {
    shape: Shape,
    /// Boxed: a view's node is rare next to arithmetic, and an inline layout would make
    /// every arena slot 32 bytes bigger.
    rel: Box<Layout>,
}
impl Backward for SelectBackward0 {
    fn name(&self) -> Cow<'static, str> {
        "SelectBackward0".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(view_grad_in_base(
            &grad0(g)?,
            &self.shape,
            &self.rel
        )?)])
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| {
            Ok(smallvec::smallvec![Some(view_grad_in_base_batched(
                &g,
                &self.shape,
                &self.rel
            )?)])
        }))
    }
}

/// A view of `x` with an explicit layout *relative to a contiguous tensor of x's shape*
/// (x must be contiguous). Used by the backward of the scatter below.
pub fn as_strided(x: &Tensor, rel: &Layout) -> Result<Tensor> {
    let c = contiguous(x)?;
    let base = c.layout();
    let nl = Layout {
        shape: rel.shape.clone(),
        strides: rel.strides.clone(),
        offset: base.offset + rel.offset,
    };
    let shape = base.shape.clone();
    let rel = rel.clone();
    apply(
        "aten::as_strided",
        &[&c],
        || Ok(view_of(&c, nl)),
        |_| {
            let rel = Box::new(rel);
            (AsStridedBackward0 { shape, rel }, saved![])
        },
    )
}

/// An `AsStridedBackward0` over a base of `shape` (a view re-derived from a base that
/// has no history: see `refresh_view`).
pub(crate) fn as_strided_node(shape: Shape, rel: Layout) -> super::BackwardOp {
    AsStridedBackward0 {
        shape,
        rel: Box::new(rel),
    }
    .into()
}

#[derive(Clone)]
pub struct AsStridedBackward0 {
    shape: Shape,
    /// Boxed: a view's node is rare next to arithmetic, and an inline layout would make
    /// every arena slot 32 bytes bigger.
    rel: Box<Layout>,
}
impl Backward for AsStridedBackward0 {
    fn name(&self) -> Cow<'static, str> {
        "AsStridedBackward0".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(view_grad_in_base(
            &grad0(g)?,
            &self.shape,
            &self.rel
        )?)])
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| {
            Ok(smallvec::smallvec![Some(view_grad_in_base_batched(
                &g,
                &self.shape,
                &self.rel
            )?)])
        }))
    }
}

/// The gradient of a view of a base of `shape`: `g` placed in the view's region `rel`;
/// where the view repeats an element (an expanded dim: stride 0, as an as_strided
/// re-derived from an expanded view has), the copies' gradients add up.
pub(crate) fn view_grad_in_base(g: &Tensor, shape: &[usize], rel: &Layout) -> Result<Tensor> {
    let repeated: Vec<i64> = (0..rel.ndim())
        .filter(|&d| rel.strides[d] == 0 && rel.shape[d] > 1)
        .map(|d| d as i64)
        .collect();
    if repeated.is_empty() {
        if super::strided::maybe_overlapping(rel) {
            return super::strided::strided_grad(g, &Layout::contiguous(shape), rel);
        }
        return as_strided_scatter(g, shape, rel);
    }
    let g = super::sum_dims(g, &repeated, true)?;
    let mut once = rel.clone();
    for &d in &repeated {
        once.shape[d as usize] = 1;
    }
    if super::strided::maybe_overlapping(&once) {
        // (a view repeating elements otherwise, as an unfold's overlapping windows
        // re-derived from its base: the copies' gradients added up in the base)
        return super::strided::strided_grad(&g, &Layout::contiguous(shape), &once);
    }
    as_strided_scatter(&g, shape, &once)
}

/// `zeros(shape)` with the (non-overlapping) strided region `rel` set to `g`: the
/// gradient of taking that view.
pub fn as_strided_scatter(g: &Tensor, shape: &[usize], rel: &Layout) -> Result<Tensor> {
    let s = g.snapshot();
    let rel2 = rel.clone();
    apply(
        "aten::as_strided_scatter",
        &[g],
        || {
            let mut buf = k::on(s.storage.device())?.zeros(s.dtype, crate::shape::numel(shape))?;
            k::copy_into(&mut buf, &rel2, &s.storage.read(), &s.layout)?;
            Ok(new_tensor(buf, shape))
        },
        |_| {
            (
                AsStridedScatterBackward0 {
                    rel: Box::new(rel.clone()),
                },
                saved![],
            )
        },
    )
}

#[derive(Clone)]
pub struct AsStridedScatterBackward0 {
    rel: Box<Layout>,
}
impl Backward for AsStridedScatterBackward0 {
    fn name(&self) -> Cow<'static, str> {
        "AsStridedScatterBackward0".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(as_strided(
            &grad0(g)?,
            &self.rel
        )?)])
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| {
            let per_sample = g.numel().checked_div(batch).unwrap_or(0);
            let mut rel = (*self.rel).clone();
            rel.shape.insert(0, batch);
            rel.strides.insert(0, per_sample);
            Ok(smallvec::smallvec![Some(as_strided(&g, &rel)?)])
        }))
    }
}

/// `x.squeeze()` (all size-1 dims) or `x.squeeze(dims)`.
pub fn squeeze(x: &Tensor, dims: Option<&[i64]>) -> Result<Tensor> {
    squeeze_as(x, dims, SqueezeForm::from_dims(dims, false))
}

/// How a squeeze was called, which names torch's node: `squeeze()` SqueezeBackward0,
/// `squeeze(dim)` 1, `squeeze((dims,))` 2, and their in-place forms 3, 4 and 5.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SqueezeForm {
    All,
    Dim,
    Dims,
}

impl SqueezeForm {
    /// The form of a call with `dims` (`None`: all; one dim: `Dim`, as an int argument
    /// gives; the bindings pass `Dims` for a tuple).
    fn from_dims(dims: Option<&[i64]>, tuple: bool) -> SqueezeForm {
        match dims {
            None => SqueezeForm::All,
            Some(_) if tuple => SqueezeForm::Dims,
            Some(_) => SqueezeForm::Dim,
        }
    }
    fn node(self, inplace: bool) -> &'static str {
        match (self, inplace) {
            (SqueezeForm::All, false) => "SqueezeBackward0",
            (SqueezeForm::Dim, false) => "SqueezeBackward1",
            (SqueezeForm::Dims, false) => "SqueezeBackward2",
            (SqueezeForm::All, true) => "SqueezeBackward3",
            (SqueezeForm::Dim, true) => "SqueezeBackward4",
            (SqueezeForm::Dims, true) => "SqueezeBackward5",
        }
    }
}

/// `x.squeeze(dims)` given as a tuple (SqueezeBackward2).
pub fn squeeze_tuple(x: &Tensor, dims: &[i64]) -> Result<Tensor> {
    squeeze_as(x, Some(dims), SqueezeForm::Dims)
}

fn squeeze_as(x: &Tensor, dims: Option<&[i64]>, form: SqueezeForm) -> Result<Tensor> {
    squeeze_named(x, dims, form.node(false))
}

fn squeeze_named(x: &Tensor, dims: Option<&[i64]>, name: &'static str) -> Result<Tensor> {
    let l = x.layout();
    let d: Vec<usize> = match dims {
        None => (0..l.ndim()).collect(),
        Some(ds) => ds
            .iter()
            .map(|&d| wrap_dim(d, l.ndim()))
            .collect::<Result<_>>()?,
    };
    let nl = l.squeeze(&d);
    let in_shape = l.shape.clone();
    let dims = dims.map(|d| d.to_vec());
    apply(
        "aten::squeeze",
        &[x],
        || Ok(view_of(x, nl)),
        |_| {
            (
                SqueezeBackward {
                    shape: in_shape,
                    call: Box::new((dims, name)),
                },
                saved![],
            )
        },
    )
}

pub fn squeeze_dims(x: &Tensor, dims: &[i64]) -> Result<Tensor> {
    squeeze(x, Some(dims))
}

#[derive(Clone)]
pub struct SqueezeBackward {
    shape: Shape,
    /// the dims as given (torch's `_saved_dim`; `None` for `squeeze()`) and the node's
    /// name (boxed: the node stays within the graph's size bound)
    call: Box<(Option<Vec<i64>>, &'static str)>,
}
impl Backward for SqueezeBackward {
    fn name(&self) -> Cow<'static, str> {
        self.call.1.into()
    }
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        let mut v = Vec::with_capacity(2);
        match &*self.call {
            (None, _) => {}
            (Some(d), "SqueezeBackward1" | "SqueezeBackward4") if d.len() == 1 => {
                v.push(("dim", F::Int(d[0])))
            }
            (Some(d), _) => v.push(("dim", F::Ints(d.clone()))),
        }
        v.push(("self_sym_sizes", F::ints(&self.shape)));
        v
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let dims: Vec<i64> = self.shape.iter().map(|&d| d as i64).collect();
        Ok(smallvec::smallvec![Some(reshape(&grad0(g)?, &dims)?)])
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        Some(reshape_batched(g, &self.shape, batch))
    }
}

pub fn unsqueeze(x: &Tensor, dim: i64) -> Result<Tensor> {
    unsqueeze_named(x, dim, "UnsqueezeBackward0")
}

fn unsqueeze_named(x: &Tensor, dim: i64, name: &'static str) -> Result<Tensor> {
    let l = x.layout();
    let d = wrap_dim(dim, l.ndim() + 1)?;
    let nl = l.unsqueeze(d);
    apply(
        "aten::unsqueeze",
        &[x],
        || Ok(view_of(x, nl)),
        |_| {
            (
                UnsqueezeBackward0 {
                    dim: d as i64,
                    name,
                },
                saved![],
            )
        },
    )
}

#[derive(Clone)]
pub struct UnsqueezeBackward0 {
    dim: i64,
    /// UnsqueezeBackward0, or UnsqueezeBackward1 for `unsqueeze_`
    name: &'static str,
}
impl Backward for UnsqueezeBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![("dim", F::Int(self.dim))]
    }
    fn name(&self) -> Cow<'static, str> {
        self.name.into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(squeeze(
            &grad0(g)?,
            Some(&[self.dim])
        )?)])
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| {
            Ok(smallvec::smallvec![Some(squeeze(
                &g,
                Some(&[self.dim + 1])
            )?)])
        }))
    }
}

// ---- in-place view ops: squeeze_, unsqueeze_, transpose_, t_ ------------------------------

/// An in-place view op (torch's `inplace_view` ops): `x` takes the geometry of `view(x)`,
/// an out-of-place view of it computed with the in-place op's node, and, when autograd
/// records, that node as its history; its data are untouched, its version is bumped (as
/// torch's are). A view keeps its base: later in-place writes through it reach the base
/// with its new geometry, and the base's history is unchanged, as in torch.
fn inplace_view(x: &Tensor, view: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
    super::inplace::check_writable(x)?;
    super::rebase::refresh_view(x)?;
    let r = view(x)?;
    x.set_layout(r.layout());
    x.bump_version();
    if let Some(f) = r.grad_fn() {
        x.set_history(f, 0);
    }
    if x.base().is_some() {
        // the view's history was just set: not re-derived from its base for this bump
        let now = x.version();
        x.lock().cold_mut().view_version = now;
    }
    if let Some(t) = r.tangent() {
        crate::autograd::forward_ad::set_tangent(x, Some(t));
    }
    Ok(x.clone())
}

/// `x.squeeze_(dims)` (`tuple`: the dims were given as a tuple).
pub fn squeeze_(x: &Tensor, dims: Option<&[i64]>, tuple: bool) -> Result<Tensor> {
    let name = SqueezeForm::from_dims(dims, tuple).node(true);
    inplace_view(x, |x| squeeze_named(x, dims, name))
}

/// `x.unsqueeze_(dim)` (UnsqueezeBackward1).
pub fn unsqueeze_(x: &Tensor, dim: i64) -> Result<Tensor> {
    inplace_view(x, |x| unsqueeze_named(x, dim, "UnsqueezeBackward1"))
}

/// `x.transpose_(dim0, dim1)`, also `swapdims_` and `swapaxes_` (TransposeBackward1).
pub fn transpose_(x: &Tensor, d0: i64, d1: i64) -> Result<Tensor> {
    inplace_view(x, |x| transpose_named(x, d0, d1, "TransposeBackward1"))
}

/// `x.t_()` (TBackward1).
pub fn t_(x: &Tensor) -> Result<Tensor> {
    let n = x.ndim();
    if n > 2 {
        return Err(Error::runtime(format!(
            "t_() expects a tensor with <= 2 dimensions, but self is {n}D"
        )));
    }
    inplace_view(x, |x| {
        let (d0, d1) = if n < 2 { (0, 0) } else { (0, 1) };
        transpose_named(x, d0, d1, "TBackward1")
    })
}

/// `split(split_size_or_sections, dim)`: views along `dim`, with one node for all of
/// them. `op` names the op in messages and the node: `Split` (equal sizes: split, chunk)
/// or `SplitWithSizes`; `UnsafeSplit` / `UnsafeSplitWithSizes` (torch's `unsafe_split`)
/// give pieces that share `x`'s storage but are not views, each with a version counter
/// of its own (so an in-place write to one is neither refused nor rebased, as in torch).
pub fn split(x: &Tensor, sizes: &[usize], dim: i64, op: &'static str) -> Result<Vec<Tensor>> {
    let l = x.layout();
    if l.shape.is_empty() {
        return Err(Error::runtime(
            "split expects at least a 1-dimensional tensor",
        ));
    }
    let d = wrap_dim(dim, l.ndim())?;
    let total: usize = sizes.iter().sum();
    if total != l.shape[d] {
        return Err(Error::runtime(format!(
            "split_with_sizes expects split_sizes to sum exactly to {} (input tensor's size at dimension {d}), but got split_sizes={:?}",
            l.shape[d], sizes
        )));
    }
    let (name, kind) = match op {
        "Split" => ("aten::split", SplitKind::Split),
        "UnsafeSplit" => ("aten::unsafe_split", SplitKind::UnsafeSplit),
        "UnsafeSplitWithSizes" => (
            "aten::unsafe_split_with_sizes",
            SplitKind::UnsafeSplitWithSizes,
        ),
        _ => ("aten::split_with_sizes", SplitKind::SplitWithSizes),
    };
    let safe = matches!(kind, SplitKind::Split | SplitKind::SplitWithSizes);
    let views = || {
        let mut out = Vec::with_capacity(sizes.len());
        let mut at = 0;
        for &s in sizes {
            let piece = l.narrow(d, at, s)?;
            out.push(if safe {
                view_of(x, piece)
            } else {
                x.alias_unsafe(piece)
            });
            at += s;
        }
        Ok(if safe { multi_output(out, op) } else { out })
    };
    super::apply_multi(name, &[x], views, |_| {
        let mut node = SplitBackward::new(kind, &l.shape, d, sizes.to_vec());
        node.0.dim_arg = dim;
        (node, saved![])
    })
}

/// The size of `dim` of `x`, for an op that splits `x` along it (`op` names the op in
/// torch's message): `x` must have a dim.
pub fn split_dim_size(x: &Tensor, dim: i64, op: &str) -> Result<usize> {
    let shape = x.shape();
    if shape.is_empty() {
        return Err(Error::runtime(format!(
            "{op} expects at least a 1-dimensional tensor"
        )));
    }
    Ok(shape[wrap_dim(dim, shape.len())?])
}

/// `x.chunk(chunks, dim)`: at most `chunks` views along `dim`, of equal size but the
/// last; along a dim of size 0, `chunks` empty views (where split would give one), as
/// torch gives them through split_with_sizes.
pub fn chunk(x: &Tensor, chunks: usize, dim: i64) -> Result<Vec<Tensor>> {
    if chunks == 0 {
        return Err(Error::runtime(
            "chunk expects `chunks` to be greater than 0, got: 0",
        ));
    }
    let len = split_dim_size(x, dim, "chunk")?;
    if len == 0 {
        split(x, &vec![0; chunks], dim, "SplitWithSizes")
    } else {
        split(x, &split_sizes(len, len.div_ceil(chunks))?, dim, "Split")
    }
}

/// Sizes for `split(int)`: equal chunks of `size`, the last one smaller.
pub fn split_sizes(len: usize, size: usize) -> Result<Vec<usize>> {
    if size == 0 {
        return if len == 0 {
            Ok(vec![0])
        } else {
            Err(Error::runtime(
                "split_size can only be 0 if dimension size is 0, but got dimension size of "
                    .to_string()
                    + &len.to_string(),
            ))
        };
    }
    let mut v = vec![size; len / size];
    if !len.is_multiple_of(size) || len == 0 {
        v.push(len % size);
    }
    Ok(v)
}
