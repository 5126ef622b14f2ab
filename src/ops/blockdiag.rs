//! `block_diag(*tensors)`: the operands (0-d as 1x1, 1-d as one row) placed along the
//! diagonal of a zero matrix, one node (BlockDiagBackward0, as torch's): each operand's
//! gradient is its block of the result's gradient.

use super::*;
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::autograd::grad_mode::with_grad_mode;
use crate::dtype::DType;
use crate::shape::Shape;
use crate::{Error, Result};
use std::borrow::Cow;

/// An operand's block: (rows, cols).
fn block(t: &Tensor) -> (usize, usize) {
    let s = t.shape();
    match s.len() {
        0 => (1, 1),
        1 => (1, s[0]),
        _ => (s[0], s[1]),
    }
}

/// The operands as 2-D blocks of `dtype` placed on the diagonal (unrecorded).
fn block_diag_values(ts: &[Tensor], dtype: DType) -> Result<Tensor> {
    let blocks: Vec<(usize, usize)> = ts.iter().map(block).collect();
    let rows = blocks.iter().try_fold(0usize, |a, b| a.checked_add(b.0));
    let cols = blocks.iter().try_fold(0usize, |a, b| a.checked_add(b.1));
    let (Some(rows), Some(cols)) = (rows, cols) else {
        return Err(Error::runtime("block_diag: the result's size overflows"));
    };
    let out = zeros(&[rows, cols], dtype)?;
    let out = match ts.first().map(Tensor::device) {
        Some(d) if d != crate::device::Device::Cpu => to_device(&out, d)?,
        _ => out,
    };
    let (mut r0, mut c0) = (0usize, 0usize);
    for (t, &(r, c)) in ts.iter().zip(&blocks) {
        if r > 0 && c > 0 {
            let dst = narrow(
                &narrow(&out, 0, r0 as i64, r as i64)?,
                1,
                c0 as i64,
                c as i64,
            )?;
            let src = reshape(&to_dtype(t, dtype)?, &[r as i64, c as i64])?;
            copy_(&dst, &src)?;
        }
        r0 += r;
        c0 += c;
    }
    Ok(out)
}

/// `block_diag(*tensors)`: a `[Σ rows, Σ cols]` matrix of the operands' promoted dtype
/// with each operand on the diagonal.
pub fn block_diag(ts: &[Tensor]) -> Result<Tensor> {
    if ts.is_empty() {
        // (ATen's result for no operands: an empty 1 x 0 matrix)
        return zeros(&[1, 0], DType::default_float());
    }
    for (i, t) in ts.iter().enumerate() {
        if t.ndim() > 2 {
            return Err(Error::runtime(format!(
                "torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has {} dimensions",
                t.ndim()
            )));
        }
    }
    let dtype = ts
        .iter()
        .map(Tensor::dtype)
        .reduce(DType::promote)
        .unwrap_or_else(DType::default_float);
    let refs: Vec<&Tensor> = ts.iter().collect();
    let shapes: Vec<Shape> = ts.iter().map(Tensor::shape).collect();
    apply(
        "aten::block_diag",
        &refs,
        || with_grad_mode(false, || block_diag_values(ts, dtype)),
        |_| {
            (
                BlockDiagBackward0 {
                    shapes: shapes.into_boxed_slice(),
                },
                crate::saved![],
            )
        },
    )
}

/// BlockDiagBackward0: torch's `block_diag_backward`: each operand's block of the
/// gradient, reshaped to the operand (recorded: narrow and reshape).
#[derive(Clone)]
pub struct BlockDiagBackward0 {
    shapes: Box<[Shape]>,
}
impl Backward for BlockDiagBackward0 {
    fn name(&self) -> Cow<'static, str> {
        "BlockDiagBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = super::elementwise::grad0(g)?;
        let (mut r0, mut c0) = (0i64, 0i64);
        let mut out = Grads::new();
        for (i, s) in self.shapes.iter().enumerate() {
            let (r, c) = match s.len() {
                0 => (1, 1),
                1 => (1, s[0]),
                _ => (s[0], s[1]),
            };
            let (r, c) = (r as i64, c as i64);
            out.push(if ctx.needs_input_grad(i) {
                let piece = narrow(&narrow(&g, 0, r0, r)?, 1, c0, c)?;
                let dims: Vec<i64> = s.iter().map(|&d| d as i64).collect();
                Some(reshape(&piece, &dims)?)
            } else {
                None
            });
            r0 += r;
            c0 += c;
        }
        Ok(out)
    }
    // derivatives.yaml: block_diag of the tangents (a missing one: zeros)
    fn jvp(&self, _ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        Some((|| {
            let dtype = t
                .iter()
                .flatten()
                .map(Tensor::dtype)
                .next()
                .unwrap_or_else(DType::default_float);
            let mut parts = Vec::with_capacity(self.shapes.len());
            for (ti, s) in t.iter().zip(self.shapes.iter()) {
                parts.push(match ti {
                    Some(x) => x.clone(),
                    None => zeros(s, dtype)?,
                });
            }
            Ok(smallvec::smallvec![Some(block_diag(&parts)?)])
        })())
    }
}
