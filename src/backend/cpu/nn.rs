//! Kernels of torch.nn.functional's losses: nll_loss's targets.

use super::strided::contiguous;
use crate::layout::Layout;
use crate::storage::Buffer;

/// nll_loss's targets (`v` over `layout`, row-major), each a class index below `classes`
/// or `ignore_index`: the class each picks (int64; 0 for an ignored one), its weight
/// (float64: 0 for an ignored one, else 1) and how many are not ignored. `Err`: the first
/// target out of range.
pub fn nll_targets(
    v: &[i64],
    layout: &Layout,
    classes: usize,
    ignore_index: i64,
) -> Result<(Buffer, Buffer, usize), i64> {
    let tvals = contiguous(v, layout);
    // (one pass: the first target out of range, in order, is the one reported)
    let (mut safe, mut keep) = (
        Vec::with_capacity(tvals.len()),
        Vec::with_capacity(tvals.len()),
    );
    let mut kept = 0;
    for &v in tvals.iter() {
        if v == ignore_index {
            safe.push(0);
            keep.push(0.0);
        } else if v < 0 || v >= classes as i64 {
            return Err(v);
        } else {
            safe.push(v);
            keep.push(1.0);
            kept += 1;
        }
    }
    Ok((Buffer::I64(safe.into()), Buffer::F64(keep.into()), kept))
}
