//! Ops that move elements to other positions: flip, roll and rot90. Each is a copy, as in
//! torch (rgrad's layouts have no negative strides), made in one pass by the backend's
//! `reorder` kernel (each output row at most two runs of the source, copied forwards or
//! backwards). Where a backend has no such kernel, flip reverses a dim with an
//! index_select of the reversed positions and roll writes the two parts of a dim to their
//! places with strided copies.

use super::elementwise::grad0;
use super::{apply, new_tensor};
use crate::autograd::function::{Backward, BackwardCtx, Grads, SavedField};
use crate::backend as k;
use crate::layout::Layout;
use crate::shape::{Shape, contiguous_strides, wrap_dim, wrap_dims};
use crate::storage::Buffer;
use crate::tensor::{Snapshot, Tensor};
use crate::{Error, Result, saved};
use std::borrow::Cow;

/// `x`'s dims from the outermost to the innermost in memory: the order torch's
/// TensorIterator gives a copy of `x` (`layout::iter_output_order`: by stride, a
/// broadcast dim's stride telling nothing), which torch's flip result has. The identity
/// when `x` is contiguous or that order is row-major.
fn memory_order(l: &Layout) -> Vec<usize> {
    match crate::layout::iter_output_order(&l.shape, &[l]) {
        Some((order, _)) => order.into_iter().map(|d| d as usize).collect(),
        None => (0..l.ndim()).collect(),
    }
}

/// A copy of `s` (row-major) as a new buffer.
fn copy_row_major(s: &Snapshot) -> Result<Buffer> {
    k::cast(&s.storage.read(), &s.layout, s.dtype)
}

/// A copy of `s` with the dims `flip` reversed, laid out in `s`'s memory order (torch's
/// flip result): a tensor of its own, with no history.
fn flip_copy(s: &Snapshot, flip: &[usize]) -> Result<Tensor> {
    let l = &s.layout;
    let order = memory_order(l);
    let permuted = Layout {
        shape: order.iter().map(|&d| l.shape[d]).collect(),
        strides: order.iter().map(|&d| l.strides[d]).collect(),
        offset: l.offset,
    };
    let pshape = permuted.shape.clone();
    // (the flipped dims' positions in memory order)
    let at: Vec<usize> = (0..order.len())
        .filter(|&i| flip.contains(&order[i]))
        .collect();
    let fast = k::reorder(&s.storage.read(), &permuted, &at, &[])?;
    let buf = match fast {
        Some(b) => b,
        None => flip_by_index(s, &permuted, &at)?,
    };
    let t = new_tensor(buf, &pshape);
    if order.iter().enumerate().all(|(i, &d)| i == d) {
        return Ok(t);
    }
    let cs = contiguous_strides(&pshape);
    let mut strides: Shape = smallvec::smallvec![0; order.len()];
    for (i, &d) in order.iter().enumerate() {
        strides[d] = cs[i];
    }
    Ok(t.alias_with_layout(Layout {
        shape: l.shape.clone(),
        strides,
        offset: 0,
    }))
}

/// [`flip_copy`]'s buffer where the backend has no `reorder`: each flipped dim (`at`, of
/// `permuted`) reversed by an index_select of the reversed positions.
fn flip_by_index(s: &Snapshot, permuted: &Layout, at: &[usize]) -> Result<Buffer> {
    let dense = Layout::contiguous(&permuted.shape);
    let mut buf: Option<Buffer> = None;
    for &i in at {
        let n = permuted.shape[i];
        if n < 2 {
            continue;
        }
        let reversed: Vec<i64> = (0..n as i64).rev().collect();
        buf = Some(match &buf {
            None => k::index_select(&s.storage.read(), permuted, i, &reversed)?,
            Some(b) => k::index_select(b, &dense, i, &reversed)?,
        });
    }
    match buf {
        Some(b) => Ok(b),
        None => k::cast(&s.storage.read(), permuted, s.dtype),
    }
}

/// `torch.flip(x, dims)`: the elements in reverse order along each of `dims`.
pub fn flip(x: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let s = x.snapshot();
    let wrapped = wrap_dims(dims, s.layout.ndim())?;
    apply(
        "aten::flip",
        &[x],
        || flip_copy(&s, &wrapped),
        |_| {
            (
                FlipBackward0 {
                    dims: dims.to_vec(),
                },
                saved![],
            )
        },
    )
}

/// `x.fliplr()`: flip along dim 1 (torch's checks).
pub fn fliplr(x: &Tensor) -> Result<Tensor> {
    if x.ndim() < 2 {
        return Err(Error::runtime("Input must be >= 2-d."));
    }
    flip(x, &[1])
}

/// `x.flipud()`: flip along dim 0 (torch's checks).
pub fn flipud(x: &Tensor) -> Result<Tensor> {
    if x.ndim() < 1 {
        return Err(Error::runtime("Input must be >= 1-d."));
    }
    flip(x, &[0])
}

#[derive(Clone)]
pub struct FlipBackward0 {
    /// the dims as given
    dims: Vec<i64>,
}
impl Backward for FlipBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![("dims", SavedField::Ints(self.dims.clone()))]
    }
    fn name(&self) -> Cow<'static, str> {
        "FlipBackward0".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(flip(&grad0(g)?, &self.dims)?)])
    }
    fn jvp(&self, _ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let t = t.first()?.as_ref()?;
        Some(flip(t, &self.dims).map(|r| smallvec::smallvec![Some(r)]))
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| {
            let rank = g.ndim() - 1;
            if rank == 0 {
                // (a 0-d input: nothing to flip)
                return Ok(smallvec::smallvec![Some(flip(&g, &[])?)]);
            }
            let dims = self
                .dims
                .iter()
                .map(|&d| Ok(wrap_dim(d, rank)? as i64 + 1))
                .collect::<Result<Vec<_>>>()?;
            Ok(smallvec::smallvec![Some(flip(&g, &dims)?)])
        }))
    }
}

/// A dim of `x` (rank `ndim`) for roll: torch wraps without treating a 0-d tensor as 1-d.
fn roll_dim(d: i64, ndim: usize) -> Result<usize> {
    if ndim == 0 {
        return Err(Error::index(format!(
            "Dimension specified as {d} but tensor has no dimensions"
        )));
    }
    wrap_dim(d, ndim)
}

/// `shift` brought into `[0, n)` (`n > 0`).
fn norm_shift(shift: i64, n: usize) -> usize {
    (shift as i128).rem_euclid(n as i128) as usize
}

/// The buffer of `(buf, l)` rolled by `shift` along `dim`, row-major.
fn roll_buffer(
    buf: &Buffer,
    l: &Layout,
    dim: usize,
    shift: i64,
    dtype: crate::dtype::DType,
) -> Result<Buffer> {
    let n = l.shape[dim];
    let numel = l.numel();
    if n == 0 || numel == 0 {
        return k::cast(buf, l, dtype);
    }
    let s = norm_shift(shift, n);
    if s == 0 {
        return k::cast(buf, l, dtype);
    }
    let dense = Layout::contiguous(&l.shape);
    let mut out = k::on(buf.device())?.zeros(dtype, numel)?;
    // out[s..] = x[..n-s]; out[..s] = x[n-s..]
    k::copy_into(
        &mut out,
        &dense.narrow(dim, s, n - s)?,
        buf,
        &l.narrow(dim, 0, n - s)?,
    )?;
    k::copy_into(
        &mut out,
        &dense.narrow(dim, 0, s)?,
        buf,
        &l.narrow(dim, n - s, s)?,
    )?;
    Ok(out)
}

/// roll's result by the backend's `reorder` kernel: one pass over a row-major or strided
/// input along dims, and along the flattened tensor of a contiguous one (a non-contiguous
/// one is copied row-major first, as torch's flatten copies it); `None` where the backend
/// has no such kernel.
fn roll_in_one_pass(
    s: &Snapshot,
    flat: bool,
    dims: &[usize],
    shifts: &[i64],
) -> Result<Option<Buffer>> {
    let n = s.layout.numel();
    if flat {
        let l = Layout::contiguous(&[n]);
        let by = if n == 0 { 0 } else { norm_shift(shifts[0], n) };
        if s.layout.is_contiguous() {
            let l = Layout {
                offset: s.layout.offset,
                ..l
            };
            return k::reorder(&s.storage.read(), &l, &[], &[(0, by)]);
        }
        let buf = copy_row_major(s)?;
        return k::reorder(&buf, &l, &[], &[(0, by)]);
    }
    let moves: Vec<(usize, usize)> = dims
        .iter()
        .zip(shifts)
        .filter(|&(&d, _)| s.layout.shape[d] > 0)
        .map(|(&d, &sh)| (d, norm_shift(sh, s.layout.shape[d])))
        .collect();
    k::reorder(&s.storage.read(), &s.layout, &[], &moves)
}

/// `torch.roll(x, shifts, dims)`: the elements moved `shifts[i]` places along `dims[i]`,
/// wrapping around; with no dims (one shift), along the flattened tensor.
pub fn roll(x: &Tensor, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
    if shifts.is_empty() {
        return Err(Error::runtime("`shifts` required"));
    }
    let s = x.snapshot();
    let flat = dims.is_empty() && shifts.len() == 1;
    if !flat && shifts.len() != dims.len() {
        return Err(Error::runtime(format!(
            "shifts and dimensions must align. shifts: {}, dims:{}",
            shifts.len(),
            dims.len()
        )));
    }
    let wrapped = if flat {
        Vec::new()
    } else {
        dims.iter()
            .map(|&d| roll_dim(d, s.layout.ndim()))
            .collect::<Result<Vec<_>>>()?
    };
    let shape = s.layout.shape.clone();
    let forward = || {
        if let Some(buf) = roll_in_one_pass(&s, flat, &wrapped, shifts)? {
            return Ok(new_tensor(buf, &shape));
        }
        if flat {
            let n = s.layout.numel();
            let buf = copy_row_major(&s)?;
            let l = Layout::contiguous(&[n]);
            return Ok(new_tensor(
                roll_buffer(&buf, &l, 0, shifts[0], s.dtype)?,
                &shape,
            ));
        }
        let mut buf: Option<Buffer> = None;
        let dense = Layout::contiguous(&shape);
        for (&d, &shift) in wrapped.iter().zip(shifts) {
            buf = Some(match &buf {
                None => roll_buffer(&s.storage.read(), &s.layout, d, shift, s.dtype)?,
                Some(b) => roll_buffer(b, &dense, d, shift, s.dtype)?,
            });
        }
        let buf = match buf {
            Some(b) => b,
            None => copy_row_major(&s)?,
        };
        Ok(new_tensor(buf, &shape))
    };
    apply("aten::roll", &[x], forward, |_| {
        (
            RollBackward0(Box::new((shifts.to_vec(), dims.to_vec()))),
            saved![],
        )
    })
}

/// (shifts, dims), as given.
#[derive(Clone)]
pub struct RollBackward0(Box<(Vec<i64>, Vec<i64>)>);

impl RollBackward0 {
    /// The gradient rolled back: each shift negated (brought into range first, so that
    /// no negation overflows); `lead`: a batch dim in front.
    fn unroll(&self, g: &Tensor, lead: usize) -> Result<Tensor> {
        let (shifts, dims) = &*self.0;
        let shape = g.shape();
        if dims.is_empty() {
            if lead == 0 {
                let n = g.numel();
                let back = if n == 0 {
                    0
                } else {
                    (n - norm_shift(shifts[0], n)) as i64
                };
                return roll(g, &[back], &[]);
            }
            // per sample: along the flattened sample
            let per: usize = shape[lead..].iter().product();
            let flat = super::reshape(g, &[shape[0] as i64, per as i64])?;
            let back = if per == 0 {
                0
            } else {
                (per - norm_shift(shifts[0], per)) as i64
            };
            let r = roll(&flat, &[back], &[1])?;
            let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
            return super::reshape(&r, &dims);
        }
        let rank = shape.len() - lead;
        let mut back = Vec::with_capacity(dims.len());
        let mut at = Vec::with_capacity(dims.len());
        for (&d, &s) in dims.iter().zip(shifts) {
            let w = roll_dim(d, rank)? + lead;
            let n = shape[w];
            back.push(if n == 0 {
                0
            } else {
                (n - norm_shift(s, n)) as i64
            });
            at.push(w as i64);
        }
        roll(g, &back, &at)
    }
}

impl Backward for RollBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("dims", SavedField::Ints(self.0.1.clone())),
            ("shifts", SavedField::Ints(self.0.0.clone())),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "RollBackward0".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(self.unroll(&grad0(g)?, 0)?)])
    }
    fn jvp(&self, _ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let t = t.first()?.as_ref()?;
        Some(roll(t, &self.0.0, &self.0.1).map(|r| smallvec::smallvec![Some(r)]))
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| Ok(smallvec::smallvec![Some(self.unroll(&g, 1)?)])))
    }
}

/// rot90's dims, checked as torch checks them: two, of a tensor of 2 or more dims,
/// different once wrapped.
fn rot90_dims(ndim: usize, dims: &[i64]) -> Result<(usize, usize)> {
    if dims.len() != 2 {
        return Err(Error::runtime(format!(
            "expected total rotation dims == 2, but got dims = {}",
            dims.len()
        )));
    }
    if ndim < 2 {
        return Err(Error::runtime(format!(
            "expected total dims >= 2, but got total dims = {ndim}"
        )));
    }
    let (d0, d1) = (wrap_dim(dims[0], ndim)?, wrap_dim(dims[1], ndim)?);
    if d0 == d1 {
        return Err(Error::runtime(format!(
            "expected rotation dims to be different, but got dim0 = {} and dim1 = {}",
            dims[0], dims[1]
        )));
    }
    Ok((d0, d1))
}

/// `torch.rot90(x, k, dims)`: `k` quarter turns in the plane of `dims`, from the first
/// towards the second (torch's Rot90Backward0 records it as one op). The result is laid
/// out as torch's: a flip, then transposed for an odd `k`.
pub fn rot90(x: &Tensor, k: i64, dims: &[i64]) -> Result<Tensor> {
    let s = x.snapshot();
    let (d0, d1) = rot90_dims(s.layout.ndim(), dims)?;
    let turns = k.rem_euclid(4);
    let forward = || {
        let transposed = |t: Tensor| -> Result<Tensor> {
            let l = t.layout().transpose(d0 as i64, d1 as i64)?;
            Ok(t.alias_with_layout(l))
        };
        match turns {
            1 => transposed(flip_copy(&s, &[d1])?),
            2 => flip_copy(&s, &[d0, d1]),
            3 => transposed(flip_copy(&s, &[d0])?),
            _ => Ok(new_tensor(copy_row_major(&s)?, &s.layout.shape)),
        }
    };
    apply("aten::rot90", &[x], forward, |_| {
        (
            Rot90Backward0 {
                k,
                dims: [dims[0], dims[1]],
            },
            saved![],
        )
    })
}

#[derive(Clone)]
pub struct Rot90Backward0 {
    /// as given
    k: i64,
    dims: [i64; 2],
}
impl Backward for Rot90Backward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("dims", SavedField::Ints(self.dims.to_vec())),
            ("k", SavedField::Int(self.k)),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "Rot90Backward0".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let back = (4 - self.k.rem_euclid(4)) % 4;
        Ok(smallvec::smallvec![Some(rot90(
            &grad0(g)?,
            back,
            &self.dims
        )?)])
    }
    fn jvp(&self, _ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let t = t.first()?.as_ref()?;
        Some(rot90(t, self.k, &self.dims).map(|r| smallvec::smallvec![Some(r)]))
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| {
            let rank = g.ndim() - 1;
            let dims = [
                wrap_dim(self.dims[0], rank)? as i64 + 1,
                wrap_dim(self.dims[1], rank)? as i64 + 1,
            ];
            let back = (4 - self.k.rem_euclid(4)) % 4;
            Ok(smallvec::smallvec![Some(rot90(&g, back, &dims)?)])
        }))
    }
}
