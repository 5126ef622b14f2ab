//! Triangles and diagonals of matrices (the last two dims, or two given dims): tril,
//! triu, diagonal (a view), diag_embed, diag and trace.

use super::elementwise::grad0;
use super::shape::{view_grad_in_base, view_grad_in_base_batched, view_of};
use super::{apply, new_tensor};
use crate::autograd::function::{Backward, BackwardCtx, Grads, SavedField};
use crate::autograd::grad_mode::with_grad_mode;
use crate::backend as k;
use crate::dtype::{DType, Scalar};
use crate::layout::Layout;
use crate::shape::{Shape, wrap_dim};
use crate::storage::Buffer;
use crate::tensor::Tensor;
use crate::{Error, Result, saved};
use std::borrow::Cow;

// ---- tril / triu ----------------------------------------------------------------------

/// `x.tril(diagonal)` (`upper`: `x.triu(diagonal)`): the elements on and below (above)
/// the `diagonal`-th diagonal of each matrix of the last two dims, the others zero.
pub fn triangle(x: &Tensor, diagonal: i64, upper: bool) -> Result<Tensor> {
    let name = if upper { "triu" } else { "tril" };
    let shape = x.shape();
    let n = shape.len();
    if n < 2 {
        return Err(Error::runtime(format!(
            "{name}: input tensor must have at least 2 dimensions"
        )));
    }
    let (rows, cols) = (shape[n - 2], shape[n - 1]);
    apply(
        if upper { "aten::triu" } else { "aten::tril" },
        &[x],
        || {
            // one pass: each row a copied run and zeros (row-major, as torch's)
            let s = x.snapshot();
            let fast = k::triangle(&s.storage.read(), &s.layout, diagonal, upper)?;
            if let Some(buf) = fast {
                return Ok(new_tensor(buf, &s.layout.shape));
            }
            // (a backend without the kernel: `where` over a mask)
            with_grad_mode(false, || {
                let keep = (0..rows)
                    .flat_map(|i| {
                        (0..cols).map(move |j| {
                            let off = j as i128 - i as i128;
                            if upper {
                                off >= diagonal as i128
                            } else {
                                off <= diagonal as i128
                            }
                        })
                    })
                    .collect::<Vec<bool>>();
                let mask =
                    super::new_tensor_on(Buffer::Bool(keep.into()), &[rows, cols], x.device())?;
                let zero = super::scalar_tensor(Scalar::Int(0), x.dtype());
                // (a row-major result, as torch's)
                super::select::where_row_major(&mask, &x.detach(), &zero)
            })
        },
        |_| (TriangleBackward { diagonal, upper }, saved![]),
    )
}

pub fn tril(x: &Tensor, diagonal: i64) -> Result<Tensor> {
    triangle(x, diagonal, false)
}

pub fn triu(x: &Tensor, diagonal: i64) -> Result<Tensor> {
    triangle(x, diagonal, true)
}

/// `x.tril_(diagonal)` (`upper`: `x.triu_(diagonal)`) in place. Where nothing is recorded
/// (no gradient wanted, no tangent) and `x` is on the CPU, the elements outside the
/// triangle are zeroed where they are, the others never touched (one pass over the zeros,
/// as torch's in-place kernel, which an expanded `x` shows: every row's zeros land);
/// otherwise the out-of-place result is committed, which records the history torch
/// records.
pub fn triangle_(x: &Tensor, diagonal: i64, upper: bool) -> Result<()> {
    let s = x.snapshot();
    let direct = s.layout.ndim() >= 2
        && s.storage.device() == crate::device::Device::Cpu
        && !crate::replay::active()
        && !(crate::autograd::grad_mode::is_grad_enabled() && x.requires_grad())
        && !crate::autograd::forward_ad::any_dual(&[x]);
    if direct {
        crate::autograd::saved_hooks::before_mutation(x)?;
        let name = if upper { "aten::triu" } else { "aten::tril" };
        let shape = || vec![Box::from(&s.layout.shape[..])];
        let done = crate::dispatch::forward(name, shape, || {
            k::triangle_in_place(&mut s.storage.write(), &s.layout, diagonal, upper)
        })?;
        if done {
            x.bump_version();
            return Ok(());
        }
    }
    super::inplace::commit_checked(x, |x| triangle(x, diagonal, upper))
}

pub fn tril_(x: &Tensor, diagonal: i64) -> Result<()> {
    triangle_(x, diagonal, false)
}

pub fn triu_(x: &Tensor, diagonal: i64) -> Result<()> {
    triangle_(x, diagonal, true)
}

/// torch's TrilBackward0 / TriuBackward0: the gradient's same triangle.
#[derive(Clone)]
pub struct TriangleBackward {
    diagonal: i64,
    upper: bool,
}
impl Backward for TriangleBackward {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![("diagonal", SavedField::Int(self.diagonal))]
    }
    fn name(&self) -> Cow<'static, str> {
        if self.upper {
            "TriuBackward0"
        } else {
            "TrilBackward0"
        }
        .into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(triangle(
            &grad0(g)?,
            self.diagonal,
            self.upper
        )?)])
    }
    fn jvp(&self, _ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let t = t.first()?.as_ref()?;
        Some(triangle(t, self.diagonal, self.upper).map(|r| smallvec::smallvec![Some(r)]))
    }
    // (the last two dims: a batch dim in front changes nothing)
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.apply(ctx, g))
    }
}

// ---- diagonal ---------------------------------------------------------------------------

/// The layout of the `offset`-th diagonal of the dims `d1`, `d2` (wrapped, different) of
/// `l`: the other dims in order, then the diagonal (torch's `diagonal`). Its length is
/// 0 for an offset past the end, and then the storage offset does not move.
pub(crate) fn diagonal_layout(l: &Layout, offset: i64, d1: usize, d2: usize) -> Layout {
    let (n1, n2) = (l.shape[d1] as i128, l.shape[d2] as i128);
    let off = offset as i128;
    let len = if off >= 0 {
        n1.min(n2 - off)
    } else {
        (n1 + off).min(n2)
    }
    .max(0) as usize;
    let mut start = l.offset;
    if len > 0 {
        // (|offset| < the size of its dim here)
        start += offset.unsigned_abs() as usize
            * if offset >= 0 {
                l.strides[d2]
            } else {
                l.strides[d1]
            };
    }
    let mut shape = Shape::new();
    let mut strides = Shape::new();
    for d in 0..l.ndim() {
        if d != d1 && d != d2 {
            shape.push(l.shape[d]);
            strides.push(l.strides[d]);
        }
    }
    shape.push(len);
    strides.push(l.strides[d1] + l.strides[d2]);
    Layout {
        shape,
        strides,
        offset: start,
    }
}

/// `dim1`, `dim2` wrapped for a tensor of `ndim` dims, with torch's error for the same dim
/// twice.
fn diagonal_dims(ndim: usize, dim1: i64, dim2: i64) -> Result<(usize, usize)> {
    let (d1, d2) = (wrap_dim(dim1, ndim)?, wrap_dim(dim2, ndim)?);
    if d1 == d2 {
        return Err(Error::runtime(format!(
            "diagonal dimensions cannot be identical {dim1}, {dim2}"
        )));
    }
    Ok((d1, d2))
}

/// `torch.diagonal(x, offset, dim1, dim2)`: a view of the diagonal (its elements along a
/// new last dim).
pub fn diagonal(x: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    diagonal_as(x, offset, dim1, dim2, false)
}

/// [`diagonal`]; `copy`: a new tensor (torch's `diagonal_copy`, what `diag` of a matrix
/// records: DiagonalBackward0_copy) instead of a view.
fn diagonal_as(x: &Tensor, offset: i64, dim1: i64, dim2: i64, copy: bool) -> Result<Tensor> {
    let l = x.layout();
    let (d1, d2) = diagonal_dims(l.ndim(), dim1, dim2)?;
    let view = diagonal_layout(&l, offset, d1, d2);
    let node = DiagonalBackward(Box::new(DiagonalInfo {
        shape: l.shape.clone(),
        offset,
        dim1,
        dim2,
        copy,
    }));
    if copy {
        let s = x.snapshot();
        return apply(
            "aten::diagonal_copy",
            &[x],
            || {
                let buf = k::cast(&s.storage.read(), &view, s.dtype)?;
                Ok(new_tensor(buf, &view.shape))
            },
            |_| (node, saved![]),
        );
    }
    apply(
        "aten::diagonal",
        &[x],
        || Ok(view_of(x, view)),
        |_| (node, saved![]),
    )
}

#[derive(Clone)]
struct DiagonalInfo {
    /// the input's shape
    shape: Shape,
    /// as given
    offset: i64,
    dim1: i64,
    dim2: i64,
    copy: bool,
}

/// torch's DiagonalBackward0 (DiagonalBackward0_copy for `diag` of a matrix): the
/// gradient on the diagonal of zeros of the input's shape.
#[derive(Clone)]
pub struct DiagonalBackward(Box<DiagonalInfo>);

impl DiagonalBackward {
    /// The diagonal's region in a row-major tensor of the input's shape.
    fn region(&self) -> Result<Layout> {
        let s = &self.0;
        let (d1, d2) = diagonal_dims(s.shape.len(), s.dim1, s.dim2)?;
        Ok(diagonal_layout(
            &Layout::contiguous(&s.shape),
            s.offset,
            d1,
            d2,
        ))
    }
}

impl Backward for DiagonalBackward {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        let s = &self.0;
        vec![
            ("dim1", SavedField::Int(s.dim1)),
            ("dim2", SavedField::Int(s.dim2)),
            ("offset", SavedField::Int(s.offset)),
            ("self_sym_sizes", SavedField::ints(&s.shape)),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        if self.0.copy {
            "DiagonalBackward0_copy"
        } else {
            "DiagonalBackward0"
        }
        .into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(view_grad_in_base(
            &grad0(g)?,
            &self.0.shape,
            &self.region()?
        )?)])
    }
    fn jvp(&self, _ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let t = t.first()?.as_ref()?;
        let s = &self.0;
        Some(diagonal_as(t, s.offset, s.dim1, s.dim2, true).map(|r| smallvec::smallvec![Some(r)]))
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
                &self.0.shape,
                &self.region()?
            )?)])
        }))
    }
}

// ---- diag_embed -----------------------------------------------------------------------

/// `torch.diag_embed(x, offset, dim1, dim2)`: zeros with x's last dim written on the
/// `offset`-th diagonal of the new dims `dim1`, `dim2` (of a result with one dim more).
pub fn diag_embed(x: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    let s = x.snapshot();
    let nd = s.layout.ndim() + 1;
    let (d1, d2) = diagonal_dims(nd, dim1, dim2)?;
    let Some(&last) = s.layout.shape.last() else {
        return Err(Error::index(
            "Dimension specified as -1 but tensor has no dimensions",
        ));
    };
    let side = (offset.unsigned_abs() as usize)
        .checked_add(last)
        .filter(|&n| n <= i64::MAX as usize)
        .ok_or_else(|| Error::runtime("numel: integer multiplication overflow"))?;
    let mut shape: Shape = s.layout.shape[..nd - 2].into();
    shape.insert(d1.min(d2), side);
    shape.insert(d1.max(d2), side);
    crate::shape::checked_numel(&shape)?;
    crate::storage::alloc_guard(&shape, s.dtype)?;
    let forward = || {
        let mut buf = k::on(s.storage.device())?.zeros(s.dtype, crate::shape::numel(&shape))?;
        let region = diagonal_layout(&Layout::contiguous(&shape), offset, d1, d2);
        k::copy_into(&mut buf, &region, &s.storage.read(), &s.layout)?;
        Ok(new_tensor(buf, &shape))
    };
    apply("aten::diag_embed", &[x], forward, |_| {
        (DiagEmbedBackward0 { offset, dim1, dim2 }, saved![])
    })
}

#[derive(Clone)]
pub struct DiagEmbedBackward0 {
    /// as given
    offset: i64,
    dim1: i64,
    dim2: i64,
}
impl Backward for DiagEmbedBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("dim1", SavedField::Int(self.dim1)),
            ("dim2", SavedField::Int(self.dim2)),
            ("offset", SavedField::Int(self.offset)),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "DiagEmbedBackward0".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(diagonal(
            &grad0(g)?,
            self.offset,
            self.dim1,
            self.dim2
        )?)])
    }
    fn jvp(&self, _ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let t = t.first()?.as_ref()?;
        Some(diag_embed(t, self.offset, self.dim1, self.dim2).map(|r| smallvec::smallvec![Some(r)]))
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| {
            let rank = g.ndim() - 1;
            let d1 = wrap_dim(self.dim1, rank)? as i64 + 1;
            let d2 = wrap_dim(self.dim2, rank)? as i64 + 1;
            Ok(smallvec::smallvec![Some(diagonal(
                &g,
                self.offset,
                d1,
                d2
            )?)])
        }))
    }
}

// ---- diag, trace --------------------------------------------------------------------

/// `torch.diag(x, diagonal)`: of a vector, the matrix with it on the `diagonal`-th
/// diagonal (diag_embed); of a matrix, a copy of that diagonal (diagonal_copy).
pub fn diag(x: &Tensor, diagonal: i64) -> Result<Tensor> {
    match x.ndim() {
        1 => diag_embed(x, diagonal, -2, -1),
        2 => diagonal_as(x, diagonal, 0, 1, true),
        n => Err(Error::runtime(format!(
            "diag(): Supports 1D or 2D tensors. Got {n}D"
        ))),
    }
}

/// `torch.trace(x)`: the sum of a matrix's diagonal (integers and bools sum to int64).
pub fn trace(x: &Tensor) -> Result<Tensor> {
    let shape = x.shape();
    if shape.len() != 2 {
        return Err(Error::runtime(format!(
            "trace: expected a matrix, but got tensor with dim {}",
            shape.len()
        )));
    }
    if x.dtype() == DType::Bool {
        return Err(Error::not_implemented(
            "\"trace\" not implemented for 'Bool'",
        ));
    }
    apply(
        "aten::trace",
        &[x],
        || {
            if x.device() != crate::device::Device::Cpu {
                // (a device reduction, as torch's CUDA trace)
                return with_grad_mode(false, || {
                    let d = diagonal(&x.detach(), 0, 0, 1)?;
                    super::sum(&d, None, false)
                });
            }
            // torch's CPU kernel: in order, in float64 for floats (its bits)
            let s = x.snapshot();
            let out = crate::backend::trace(&s.storage.read(), &s.layout)?;
            Ok(super::new_tensor(out, &[]))
        },
        |_| (TraceBackward0 { shape }, saved![]),
    )
}

#[derive(Clone)]
pub struct TraceBackward0 {
    shape: Shape,
}
impl TraceBackward0 {
    fn region(&self) -> Layout {
        diagonal_layout(&Layout::contiguous(&self.shape), 0, 0, 1)
    }
}
impl Backward for TraceBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![("self_sym_sizes", SavedField::ints(&self.shape))]
    }
    fn name(&self) -> Cow<'static, str> {
        "TraceBackward0".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let region = self.region();
        let g = super::expand(&grad0(g)?, &region.shape)?;
        Ok(smallvec::smallvec![Some(view_grad_in_base(
            &g,
            &self.shape,
            &region
        )?)])
    }
    fn jvp(&self, _ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let t = t.first()?.as_ref()?;
        Some(trace(t).map(|r| smallvec::smallvec![Some(r)]))
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| {
            let region = self.region();
            let g = super::expand(
                &super::reshape(&g, &[batch as i64, 1])?,
                &[batch, region.shape[0]],
            )?;
            Ok(smallvec::smallvec![Some(view_grad_in_base_batched(
                &g,
                &self.shape,
                &region
            )?)])
        }))
    }
}
