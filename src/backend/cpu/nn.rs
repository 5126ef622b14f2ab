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
    for &v in tvals.iter() {
        if v != ignore_index && (v < 0 || v >= classes as i64) {
            return Err(v);
        }
    }
    let keep: Vec<f64> = tvals
        .iter()
        .map(|&v| if v == ignore_index { 0.0 } else { 1.0 })
        .collect();
    let safe: Vec<i64> = tvals
        .iter()
        .map(|&v| if v == ignore_index { 0 } else { v })
        .collect();
    let kept = tvals.iter().filter(|&&v| v != ignore_index).count();
    Ok((Buffer::I64(safe.into()), Buffer::F64(keep.into()), kept))
}
