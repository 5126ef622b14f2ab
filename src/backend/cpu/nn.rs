//! Kernels of torch.nn.functional's losses: nll_loss's targets and its per-sample losses.

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

/// nll_loss's per-sample losses `-(x[i, idx[i]] * w[i])` of a float `x` laid out as
/// [n, c] (any strides), from [`nll_targets`]' classes `idx` (int64, every one below c)
/// and weights `w` (x's dtype), both contiguous [n]: in one pass, the bits of the gather,
/// multiply and negation it replaces. `None` for other dtypes or shapes.
pub fn nll_losses(x: &Buffer, lx: &Layout, idx: &Buffer, w: &Buffer) -> Option<Buffer> {
    fn go<T: Copy + std::ops::Mul<Output = T> + std::ops::Neg<Output = T>>(
        x: &[T],
        lx: &Layout,
        idx: &[i64],
        w: &[T],
    ) -> Vec<T> {
        let (s0, s1) = (lx.strides[0], lx.strides[1]);
        idx.iter()
            .zip(w)
            .enumerate()
            .map(|(i, (&k, &wi))| -(x[lx.offset + i * s0 + k as usize * s1] * wi))
            .collect()
    }
    let [n, c] = lx.shape[..] else {
        return None;
    };
    let (Buffer::I64(idx), true) = (idx, idx.len() == n && w.len() == n) else {
        return None;
    };
    if idx.iter().any(|&k| k < 0 || k as usize >= c) {
        return None; // (nll_targets' classes are in range: not reached)
    }
    match (x, w) {
        (Buffer::F32(x), Buffer::F32(w)) => Some(Buffer::F32(go(x, lx, idx, w).into())),
        (Buffer::F64(x), Buffer::F64(w)) => Some(Buffer::F64(go(x, lx, idx, w).into())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The fused losses are `-(x[i, idx[i]] * w[i])` element for element (signed zeros
    /// of ignored samples included), for a row-major and a transposed x; a class out of
    /// range or a dtype mix is declined.
    #[test]
    fn nll_losses_are_the_gather_multiply_negate_bits() {
        let c = 5;
        let vals: Vec<f32> = (0..3 * c).map(|v| (v as f32 - 7.0) * 0.37).collect();
        let idx = Buffer::I64(vec![4, 0, 2].into());
        let w = Buffer::F32(vec![1.0, 0.0, 1.0].into());
        let row = Layout::contiguous(&[3, c]);
        let trans = Layout::contiguous(&[c, 3]).transpose(0, 1).unwrap();
        for l in [&row, &trans] {
            let got = nll_losses(&Buffer::F32(vals.clone().into()), l, &idx, &w).unwrap();
            let Buffer::F32(got) = got else {
                unreachable!()
            };
            let want: Vec<f32> = [(0, 4, 1.0f32), (1, 0, 0.0), (2, 2, 1.0)]
                .iter()
                .map(|&(i, k, wi)| -(vals[l.offset + i * l.strides[0] + k * l.strides[1]] * wi))
                .collect();
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want));
        }
        let bad = Buffer::I64(vec![4, 5, 0].into());
        assert!(nll_losses(&Buffer::F32(vals.clone().into()), &row, &bad, &w).is_none());
        let w64 = Buffer::F64(vec![1.0; 3].into());
        assert!(nll_losses(&Buffer::F32(vals.into()), &row, &idx, &w64).is_none());
    }
}
