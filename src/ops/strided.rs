//! Views of any region of a tensor's storage: torch's `as_strided(size, stride,
//! storage_offset)` and `unfold(dimension, size, step)` (sliding windows along a dim), and
//! their gradient, torch's `as_strided_backward`.
//!
//! Unlike the other views (`shape.rs`), these may repeat a storage element (overlapping
//! windows, a zero or small stride), and `as_strided` may read elements outside its
//! input's own region. So the gradient is not a placement of `g` in the input's shape:
//! each element of `g` is added into a zero buffer spanning the storage both geometries
//! touch, at the storage position its element reads; then the input's geometry is read
//! back from that buffer (where the input itself repeats an element, each copy gets its
//! share). The buffer is built with recorded ops (`index_add_zeros`, `div`, an
//! `as_strided` read), so the gradient has a gradient of its own.

use super::elementwise::grad0;
use super::shape::{as_strided as as_strided_rel, contiguous, reshape, view_of};
use super::{apply, div, index_add_zeros, new_tensor_on, to_dtype, zeros_on};
use crate::autograd::function::{Backward, BackwardCtx, Grads, SavedField};
use crate::layout::Layout;
use crate::shape::{Shape, wrap_dim};
use crate::storage::Buffer;
use crate::tensor::Tensor;
use crate::{Error, Result, saved};
use std::borrow::Cow;

/// The storage positions of `l`'s elements in row-major order, less `base` (which must
/// be at most the layout's offset).
fn positions(l: &Layout, base: usize) -> Vec<i64> {
    let mut out = Vec::with_capacity(l.numel());
    if l.numel() == 0 {
        return out;
    }
    let mut at = vec![0usize; l.ndim()];
    let mut pos = l.offset - base;
    loop {
        out.push(pos as i64);
        // the next index, last dim fastest; the position follows each step
        let mut d = l.ndim();
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            at[d] += 1;
            pos += l.strides[d];
            if at[d] < l.shape[d] {
                break;
            }
            pos -= l.strides[d] * l.shape[d];
            at[d] = 0;
        }
    }
}

/// Whether two elements of `l` may be one storage element (torch's
/// `_maybe_overlapping_memory`): the dims of size > 1 taken by increasing stride, each
/// stride must pass the furthest element the smaller dims reach.
pub(crate) fn maybe_overlapping(l: &Layout) -> bool {
    let mut dims: Vec<(usize, usize)> = l
        .shape
        .iter()
        .zip(&l.strides)
        .filter(|(d, _)| **d > 1)
        .map(|(&d, &s)| (d, s))
        .collect();
    dims.sort_by_key(|&(_, s)| s);
    let mut reach = 0usize;
    for (d, s) in dims {
        if s <= reach {
            return true;
        }
        reach = reach.saturating_add((d - 1).saturating_mul(s));
    }
    false
}

/// torch's `as_strided_backward`: the gradient w.r.t. an input of storage geometry
/// `input` of a view of geometry `output` on the same storage, `g` having the output's
/// shape. Positions are relative to the start of the storage the two geometries touch,
/// so the buffer is no larger than that region.
pub(crate) fn strided_grad(g: &Tensor, input: &Layout, output: &Layout) -> Result<Tensor> {
    let (dtype, device) = (g.dtype(), g.device());
    if input.numel() == 0 {
        return zeros_on(&input.shape, dtype, device);
    }
    let (start, end) = input.storage_span();
    let (start, end) = if output.numel() == 0 {
        (start, end)
    } else {
        let (os, oe) = output.storage_span();
        (start.min(os), end.max(oe))
    };
    let size = end - start;
    let buf = if output.numel() == 0 {
        zeros_on(&[size], dtype, device)?
    } else {
        let idx = Buffer::I64(positions(output, start).into());
        let idx = new_tensor_on(idx, &[output.numel()], device)?;
        index_add_zeros(&[size], 0, &idx, &reshape(g, &[-1])?)?
    };
    let buf = if maybe_overlapping(input) {
        // each storage element's gradient shared among the input's elements reading it
        // (a position the input never reads keeps a count of 1: it is not read back)
        let mut counts = vec![0i64; size];
        for p in positions(input, start) {
            counts[p as usize] += 1;
        }
        for c in &mut counts {
            *c = (*c).max(1);
        }
        let counts = new_tensor_on(Buffer::I64(counts.into()), &[size], device)?;
        div(&buf, &to_dtype(&counts, dtype)?)?
    } else {
        buf
    };
    let rel = Layout {
        shape: input.shape.clone(),
        strides: input.strides.clone(),
        offset: input.offset - start,
    };
    contiguous(&as_strided_rel(&buf, &rel)?)
}

/// `x.as_strided(size, stride, storage_offset)`: the view of x's storage with that
/// geometry (`storage_offset` None: x's own offset), with torch's checks: the lengths
/// agree, no negative stride, size or offset, and the view stays inside the storage.
pub fn as_strided_view(
    x: &Tensor,
    size: &[i64],
    stride: &[i64],
    storage_offset: Option<i64>,
) -> Result<Tensor> {
    if size.len() != stride.len() {
        return Err(Error::runtime("mismatch in length of strides and shape"));
    }
    if stride.iter().any(|&s| s < 0) {
        return Err(Error::runtime(format!(
            "as_strided: Negative strides are not supported at the moment, got strides: {stride:?}"
        )));
    }
    if size.iter().any(|&s| s < 0) {
        return Err(Error::runtime(format!(
            "Storage size calculation overflowed with sizes={size:?} and strides={stride:?}"
        )));
    }
    let l = x.layout();
    let offset = storage_offset.unwrap_or(l.offset as i64);
    if offset < 0 {
        return Err(Error::runtime(format!(
            "Tensor: invalid storage offset {offset}"
        )));
    }
    let shape: Shape = size.iter().map(|&s| s as usize).collect();
    let strides: Shape = stride.iter().map(|&s| s as usize).collect();
    let itemsize = x.dtype().size_in_bytes();
    let overflow = || {
        Error::runtime(format!(
            "Storage size calculation overflowed with sizes={size:?} and strides={stride:?}"
        ))
    };
    // torch's computeStorageNbytes: nothing for an empty view, else the last element's
    // position plus one, in bytes
    let needed = if shape.contains(&0) {
        0
    } else {
        let mut last = offset as usize;
        for (&d, &s) in shape.iter().zip(&strides) {
            last = (d - 1)
                .checked_mul(s)
                .and_then(|e| last.checked_add(e))
                .ok_or_else(overflow)?;
        }
        last.checked_add(1)
            .and_then(|n| n.checked_mul(itemsize))
            .ok_or_else(overflow)?
    };
    let have = x.storage().len() * itemsize;
    if needed > have {
        return Err(Error::runtime(format!(
            "setStorage: sizes {size:?}, strides {stride:?}, storage offset {offset}, and itemsize {itemsize} requiring a storage size of {needed} are out of bounds for storage of size {have}"
        )));
    }
    let nl = Layout {
        shape,
        strides,
        offset: offset as usize,
    };
    let node = AsStridedViewBackward(Box::new(StridedInfo {
        input: l,
        output: nl.clone(),
        size: size.to_vec(),
        stride: stride.to_vec(),
        storage_offset,
    }));
    apply(
        "aten::as_strided",
        &[x],
        || Ok(view_of(x, nl)),
        |_| (node, saved![]),
    )
}

#[derive(Clone)]
pub struct StridedInfo {
    /// the input's storage geometry and the view's
    input: Layout,
    output: Layout,
    /// the arguments as given (torch's saved fields)
    size: Vec<i64>,
    stride: Vec<i64>,
    storage_offset: Option<i64>,
}

/// torch's AsStridedBackward0 of a public `as_strided` (the engine's own re-derived
/// views record `shape::AsStridedBackward0`, whose geometry is relative to its base):
/// [`strided_grad`] between the input's and the view's storage geometries.
/// (Boxed: a view's node is rare next to arithmetic, and inline layouts would make every
/// arena slot bigger.)
#[derive(Clone)]
pub struct AsStridedViewBackward(Box<StridedInfo>);

impl Backward for AsStridedViewBackward {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        let i = &self.0;
        vec![
            ("size", SavedField::Ints(i.size.clone())),
            ("stride", SavedField::Ints(i.stride.clone())),
            (
                "storage_offset",
                i.storage_offset.map_or(SavedField::None, SavedField::Int),
            ),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "AsStridedBackward0".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(strided_grad(
            &grad0(g)?,
            &self.0.input,
            &self.0.output
        )?)])
    }
}

/// The layout of `x.unfold(d, size, step)` from x's layout `l` (checked by the caller):
/// dim `d` becomes the number of windows, a last dim of `size` walks each window.
fn unfold_layout(l: &Layout, d: usize, size: usize, step: usize) -> Layout {
    let mut nl = l.clone();
    if l.ndim() == 0 {
        nl.shape.push(size);
        nl.strides.push(1);
        return nl;
    }
    nl.shape.push(size);
    nl.strides.push(l.strides[d]);
    nl.shape[d] = (l.shape[d] - size) / step + 1;
    nl.strides[d] = l.strides[d].saturating_mul(step);
    nl
}

/// `x.unfold(dimension, size, step)`: the windows of `size` elements along `dimension`,
/// `step` apart, as a view whose last dim walks a window (torch's checks and messages; a
/// 0-dim tensor is one element along dim 0).
pub fn unfold(x: &Tensor, dimension: i64, size: i64, step: i64) -> Result<Tensor> {
    let l = x.layout();
    let d = wrap_dim(dimension, l.ndim().max(1))?;
    let max = if l.ndim() == 0 { 1 } else { l.shape[d] };
    if size > max as i64 {
        return Err(Error::runtime(format!(
            "maximum size for tensor at dimension {d} is {max} but size is {size}"
        )));
    }
    if size < 0 {
        return Err(Error::runtime(format!("size is {size} but must be >= 0")));
    }
    if step <= 0 {
        return Err(Error::runtime(format!("step is {step} but must be > 0")));
    }
    let (size_u, step_u) = (size as usize, step as usize);
    let nl = unfold_layout(&l, d, size_u, step_u);
    let node = UnfoldBackward0(Box::new(UnfoldInfo {
        shape: l.shape.clone(),
        dimension,
        d,
        size: size_u,
        step: step_u,
    }));
    apply(
        "aten::unfold",
        &[x],
        || Ok(view_of(x, nl)),
        |_| (node, saved![]),
    )
}

/// torch's UnfoldBackward0: the windows' gradients added back into the input's shape
/// (overlapping windows add up), [`strided_grad`] between a row-major input and its
/// unfold.
/// (Boxed, as [`AsStridedViewBackward`]'s geometry.)
#[derive(Clone)]
pub struct UnfoldBackward0(Box<UnfoldInfo>);

#[derive(Clone)]
pub struct UnfoldInfo {
    /// the input's shape
    shape: Shape,
    /// as given (torch's saved field), and wrapped
    dimension: i64,
    d: usize,
    size: usize,
    step: usize,
}

impl Backward for UnfoldBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        let i = &self.0;
        vec![
            ("dimension", SavedField::Int(i.dimension)),
            ("self_sym_sizes", SavedField::ints(&i.shape)),
            ("size", SavedField::Int(i.size as i64)),
            ("step", SavedField::Int(i.step as i64)),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "UnfoldBackward0".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let i = &self.0;
        let input = Layout::contiguous(&i.shape);
        let output = unfold_layout(&input, i.d, i.size, i.step);
        Ok(smallvec::smallvec![Some(strided_grad(
            &grad0(g)?,
            &input,
            &output
        )?)])
    }
}
