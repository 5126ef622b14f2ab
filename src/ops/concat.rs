//! The shape ops that copy: cat and stack (tensors joined along a dim) and repeat (a
//! tensor tiled).

use super::elementwise::grad0;
use super::shape::{narrow, reshape, select, unsqueeze};
use super::{apply, new_tensor};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::backend as k;
use crate::layout::Layout;
use crate::shape::{Shape, wrap_dim};
use crate::storage::Buffer;
use crate::tensor::Tensor;
use crate::{Error, Result, saved};
use std::borrow::Cow;

/// Copies `parts` side by side along `dim` into one contiguous buffer.
fn concat(parts: &[Tensor], dim: usize, out_shape: &[usize]) -> Result<Tensor> {
    if parts.is_empty() {
        return Err(Error::runtime(
            "torch.cat(): expected a non-empty list of Tensors",
        ));
    }
    let snaps: Vec<_> = parts.iter().map(Tensor::snapshot).collect();
    let bufs: Vec<_> = snaps.iter().map(|s| s.storage.read()).collect();
    let device = k::check_same_device(&bufs.iter().map(|b| &**b).collect::<Vec<_>>())?;
    let parts: Vec<(&Buffer, &Layout)> = bufs
        .iter()
        .zip(&snaps)
        .map(|(b, s)| (&**b, &s.layout))
        .collect();
    Ok(new_tensor(
        k::on(device)?.cat(&parts, dim, out_shape)?,
        out_shape,
    ))
}

/// `torch.cat(tensors, dim)` (1-D empty tensors are skipped, as in torch).
pub fn cat(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    if tensors.is_empty() {
        return Err(Error::runtime(
            "torch.cat(): expected a non-empty list of Tensors",
        ));
    }
    let mut dtype = tensors[0].dtype();
    for t in tensors {
        dtype = crate::dtype::DType::promote(dtype, t.dtype());
    }
    let parts: Vec<Tensor> = tensors
        .iter()
        .map(|t| super::to_dtype(t, dtype))
        .collect::<Result<_>>()?;
    // torch's legacy rule: 1-d empty inputs are skipped by the shape checks and the
    // copy, but stay inputs of the node (their gradient is an empty [0])
    let legacy_empty = |t: &Tensor| t.ndim() == 1 && t.numel() == 0;
    let keep: Vec<&Tensor> = parts.iter().filter(|t| !legacy_empty(t)).collect();
    let all: Vec<&Tensor> = parts.iter().collect();
    let Some(first) = keep.first() else {
        let sizes = vec![None; parts.len()];
        return apply(
            "aten::cat",
            &all,
            || super::zeros(&[0], dtype),
            |_| (CatBackward0 { dim: 0, sizes }, saved![]),
        );
    };
    let ref_shape = first.shape();
    if ref_shape.is_empty() {
        return Err(Error::runtime(
            "zero-dimensional tensor (at position 0) cannot be concatenated",
        ));
    }
    let d = wrap_dim(dim, ref_shape.len())?;
    let mut out_shape = ref_shape.clone();
    out_shape[d] = 0;
    for (i, t) in keep.iter().enumerate() {
        let s = t.shape();
        if s.len() != ref_shape.len() {
            return Err(Error::runtime(format!(
                "Tensors must have same number of dimensions: got {} and {}",
                ref_shape.len(),
                s.len()
            )));
        }
        for j in 0..s.len() {
            if j != d && s[j] != ref_shape[j] {
                return Err(Error::runtime(format!(
                    "Sizes of tensors must match except in dimension {d}. Expected size {} but got size {} for tensor number {i} in the list.",
                    ref_shape[j], s[j]
                )));
            }
        }
        // torch adds the sizes in int64 and refuses a negative sum as a negative size
        let sum = (out_shape[d] as i64).wrapping_add(s[d] as i64);
        if sum < 0 {
            let dims: Vec<String> = (0..out_shape.len())
                .map(|j| {
                    if j == d {
                        sum.to_string()
                    } else {
                        out_shape[j].to_string()
                    }
                })
                .collect();
            return Err(Error::runtime(format!(
                "Trying to create tensor with negative dimension {sum}: [{}]",
                dims.join(", ")
            )));
        }
        out_shape[d] = sum as usize;
    }
    super::creation::guard(&out_shape, dtype)?;
    let sizes = parts
        .iter()
        .map(|t| (!legacy_empty(t)).then(|| t.shape()[d]))
        .collect();
    let owned: Vec<Tensor> = keep.iter().map(|t| (*t).clone()).collect();
    apply(
        "aten::cat",
        &all,
        || concat(&owned, d, &out_shape),
        |_| (CatBackward0 { dim: d, sizes }, saved![]),
    )
}

#[derive(Clone)]
pub struct CatBackward0 {
    dim: usize,
    /// Each input's size along `dim`; `None` for a legacy empty 1-d input.
    sizes: Vec<Option<usize>>,
}
impl Backward for CatBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![("dim", F::Int(self.dim as i64))]
    }
    fn name(&self) -> Cow<'static, str> {
        "CatBackward0".into()
    }
    // the tangent of a concatenation is the concatenation of the tangents
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let out = ctx.outputs.first()?;
        let sizes: Option<Vec<usize>> = self.sizes.iter().copied().collect();
        let sizes = sizes?; // (a legacy empty input: by transposition)
        let run = || -> Result<Grads> {
            let parts = sizes
                .iter()
                .zip(t)
                .map(|(&n, ti)| {
                    let mut shape = out.shape.clone();
                    shape[self.dim] = n;
                    tangent_or_zeros(ti.as_ref(), &shape, out.dtype)
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(smallvec::smallvec![Some(cat(&parts, self.dim as i64)?)])
        };
        Some(run())
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.grads(ctx, &grad0(g)?, None)
    }
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| self.grads(ctx, &g, Some(batch))))
    }
}

impl CatBackward0 {
    /// Each input's part of `g` (`batch`: `g` has a leading batch dim of that size).
    fn grads(&self, ctx: &BackwardCtx<'_>, g: &Tensor, batch: Option<usize>) -> Result<Grads> {
        let dim = (self.dim + usize::from(batch.is_some())) as i64;
        let mut out = Grads::new();
        let mut at = 0i64;
        for (i, &n) in self.sizes.iter().enumerate() {
            let Some(n) = n else {
                out.push(if ctx.needs_input_grad(i) {
                    let shape: &[usize] = match batch {
                        Some(b) => &[b, 0],
                        None => &[0],
                    };
                    Some(super::zeros_on(shape, g.dtype(), g.device())?)
                } else {
                    None
                });
                continue;
            };
            out.push(if ctx.needs_input_grad(i) {
                Some(narrow(g, dim, at, n as i64)?)
            } else {
                None
            });
            at += n as i64;
        }
        Ok(out)
    }
}

/// `torch.stack(tensors, dim)`.
pub fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let first = tensors
        .first()
        .ok_or_else(|| Error::runtime("stack expects a non-empty TensorList"))?;
    let shape = first.shape();
    let d = wrap_dim(dim, shape.len() + 1)?;
    for (i, t) in tensors.iter().enumerate() {
        if t.shape() != shape {
            return Err(Error::runtime(format!(
                "stack expects each tensor to be equal size, but got {} at entry 0 and {} at entry {i}",
                crate::shape::fmt_shape(&shape),
                crate::shape::fmt_shape(&t.shape())
            )));
        }
    }
    let parts: Vec<Tensor> = crate::autograd::grad_mode::with_grad_mode(false, || {
        tensors
            .iter()
            .map(|t| unsqueeze(&t.detach(), d as i64))
            .collect::<Result<_>>()
    })?;
    let mut out_shape = shape.clone();
    out_shape.insert(d, tensors.len());
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let mut dtype = first.dtype();
    for t in tensors {
        dtype = crate::dtype::DType::promote(dtype, t.dtype());
    }
    let parts: Vec<Tensor> = parts
        .iter()
        .map(|p| super::to_dtype(p, dtype))
        .collect::<Result<_>>()?;
    apply(
        "aten::stack",
        &refs,
        || concat(&parts, d, &out_shape),
        |_| {
            (
                StackBackward0 {
                    dim: d,
                    n: tensors.len(),
                    dtypes: tensors.iter().map(Tensor::dtype).collect(),
                },
                saved![],
            )
        },
    )
}

#[derive(Clone)]
pub struct StackBackward0 {
    dim: usize,
    n: usize,
    /// the inputs' dtypes: with mixed dtypes the output is promoted, and each input's
    /// gradient goes back in its own dtype (torch keeps `tensors_args_scalartypes`)
    dtypes: Box<[crate::dtype::DType]>,
}
impl Backward for StackBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![("dim", F::Int(self.dim as i64))]
    }
    fn name(&self) -> Cow<'static, str> {
        "StackBackward0".into()
    }
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let out = ctx.outputs.first()?;
        let mut shape = out.shape.clone();
        shape.remove(self.dim);
        let run = || -> Result<Grads> {
            let parts = (0..self.n)
                .map(|i| tangent_or_zeros(t.get(i).and_then(Option::as_ref), &shape, out.dtype))
                .collect::<Result<Vec<_>>>()?;
            Ok(smallvec::smallvec![Some(stack(&parts, self.dim as i64)?)])
        };
        Some(run())
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.grads(ctx, &grad0(g)?, 0)
    }
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| self.grads(ctx, &g, 1)))
    }
}

impl StackBackward0 {
    /// Each input's slice of `g` (`lead`: 1 when `g` has a leading batch dim).
    fn grads(&self, ctx: &BackwardCtx<'_>, g: &Tensor, lead: usize) -> Result<Grads> {
        (0..self.n)
            .map(|i| {
                if ctx.needs_input_grad(i) {
                    let gi = select(g, (self.dim + lead) as i64, i as i64)?;
                    match self.dtypes.get(i) {
                        Some(&d) if d != gi.dtype() => super::to_dtype(&gi, d).map(Some),
                        _ => Ok(Some(gi)),
                    }
                } else {
                    Ok(None)
                }
            })
            .collect()
    }
}

/// `x.repeat(*repeats)`.
pub fn repeat(x: &Tensor, repeats: &[i64]) -> Result<Tensor> {
    let shape = x.shape();
    if repeats.len() < shape.len() {
        return Err(Error::runtime(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor",
        ));
    }
    let lead = repeats.len() - shape.len();
    let mut padded: Shape = smallvec::smallvec![1; lead];
    padded.extend(shape.iter().copied());
    // torch checks the result's sizes: a negative repeat of a non-empty dim is refused
    let target: Vec<i64> = padded
        .iter()
        .zip(repeats)
        .map(|(&s, &r)| (s as i64).saturating_mul(r))
        .collect();
    if let Some(&neg) = target.iter().find(|&&t| t < 0) {
        return Err(Error::runtime(format!(
            "Trying to create tensor with negative dimension {neg}: {target:?}"
        )));
    }
    // (a negative repeat of an empty dim gives an empty dim)
    let repeats: Vec<usize> = repeats.iter().map(|&r| r.max(0) as usize).collect();
    // view as [1, s0, 1, s1, ...], expand to [r0, s0, r1, s1, ...], copy, reshape
    let mut inter = Vec::new();
    let mut expanded = Vec::new();
    let mut out = Vec::new();
    let mut out_shape = Shape::new();
    for (&s, &r) in padded.iter().zip(&repeats) {
        inter.extend([1i64, s as i64]);
        expanded.extend([r, s]);
        out_shape.push(r.saturating_mul(s));
    }
    crate::storage::alloc_guard(&out_shape, x.dtype())?;
    out.extend(out_shape.iter().map(|&d| d as i64));
    let src = crate::autograd::grad_mode::with_grad_mode(false, || reshape(&x.detach(), &inter))?;
    let el = src.layout().expand(&expanded)?;
    let s = src.snapshot();
    let in_shape = shape.clone();
    let reps = repeats.to_vec();
    apply(
        "aten::repeat",
        &[x],
        || {
            let buf = k::cast(&s.storage.read(), &el, s.dtype)?;
            Ok(new_tensor(
                buf,
                &out.iter().map(|&d| d as usize).collect::<Vec<_>>(),
            ))
        },
        |_| {
            (
                RepeatBackward0 {
                    shape: in_shape,
                    repeats: reps.into_boxed_slice(),
                },
                saved![],
            )
        },
    )
}

#[derive(Clone)]
pub struct RepeatBackward0 {
    shape: Shape,
    repeats: Box<[usize]>,
}
impl Backward for RepeatBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![
            ("repeats", F::ints(&self.repeats)),
            ("self_sym_sizes", F::ints(&self.shape)),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "RepeatBackward0".into()
    }
    // sum the copies: view g as [r0, s0, r1, s1, ...] and sum the r dims
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let lead = self.repeats.len() - self.shape.len();
        let mut inter = Vec::new();
        let mut sum_dims = Vec::new();
        for (i, &r) in self.repeats.iter().enumerate() {
            let s = if i < lead { 1 } else { self.shape[i - lead] };
            sum_dims.push((2 * i) as i64);
            inter.extend([r as i64, s as i64]);
        }
        let r = super::sum(&reshape(&g, &inter)?, Some(&sum_dims), false)?;
        let dims: Vec<i64> = self.shape.iter().map(|&d| d as i64).collect();
        Ok(smallvec::smallvec![Some(reshape(&r, &dims)?)])
    }
    // (the same sums, one dim further in)
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        let run = || -> Result<Grads> {
            let g = grad0(g)?;
            let lead = self.repeats.len() - self.shape.len();
            let mut inter = vec![batch as i64];
            let mut sum_dims = Vec::new();
            for (i, &r) in self.repeats.iter().enumerate() {
                let s = if i < lead { 1 } else { self.shape[i - lead] };
                sum_dims.push((2 * i + 1) as i64);
                inter.extend([r as i64, s as i64]);
            }
            let r = if sum_dims.is_empty() {
                reshape(&g, &inter)?
            } else {
                super::sum(&reshape(&g, &inter)?, Some(&sum_dims), false)?
            };
            let dims: Vec<i64> = std::iter::once(batch)
                .chain(self.shape.iter().copied())
                .map(|d| d as i64)
                .collect();
            Ok(smallvec::smallvec![Some(reshape(&r, &dims)?)])
        };
        Some(run())
    }
}

/// An input's tangent in the output's dtype, or zeros of `shape` for an input without one.
fn tangent_or_zeros(
    t: Option<&Tensor>,
    shape: &[usize],
    dtype: crate::dtype::DType,
) -> Result<Tensor> {
    match t {
        Some(t) if t.dtype() == dtype => Ok(t.clone()),
        Some(t) => super::to_dtype(t, dtype),
        None => super::zeros(shape, dtype),
    }
}
