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
    let classes = classes as u64;
    let out_of_range = |v: i64| v != ignore_index && v as u64 >= classes;
    // (passes the compiler vectorises, counting rather than branching: a loop of pushes
    // with an early return took 1 ns a target, 2 of the 10 µs of a 2048-row nll_loss)
    if tvals
        .iter()
        .map(|&v| usize::from(out_of_range(v)))
        .sum::<usize>()
        > 0
    {
        // the first target out of range, in order, is the one reported
        let first = tvals.iter().copied().find(|&v| out_of_range(v));
        return Err(first.unwrap_or_default());
    }
    let safe: Vec<i64> = tvals
        .iter()
        .map(|&v| if v == ignore_index { 0 } else { v })
        .collect();
    let keep: Vec<f64> = tvals
        .iter()
        .map(|&v| if v == ignore_index { 0.0 } else { 1.0 })
        .collect();
    let kept = tvals.iter().map(|&v| usize::from(v != ignore_index)).sum();
    Ok((Buffer::I64(safe.into()), Buffer::F64(keep.into()), kept))
}
