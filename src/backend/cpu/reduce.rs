//! Reduction kernels (sum, prod, max/min with indices) over any set of dims (the index
//! kernels gather, scatter-add and index_select are in `index.rs`).

use super::strided::{contiguous, for_each_offset};
use super::unary::Float;
use crate::dtype::DType;
use crate::layout::Layout;
use crate::shape::Shape;
use crate::storage::{Buffer, Element};
use crate::with_dtype;
use std::mem::MaybeUninit;

pub use crate::backend::ReduceOp;

/// Splits a layout into (kept dims, reduced dims) sub-layouts.
fn split(layout: &Layout, dims: &[usize]) -> ((Shape, Shape), (Shape, Shape)) {
    let (mut ks, mut kst, mut rs, mut rst) =
        (Shape::new(), Shape::new(), Shape::new(), Shape::new());
    for (i, (&d, &s)) in layout.shape.iter().zip(&layout.strides).enumerate() {
        if dims.contains(&i) {
            rs.push(d);
            rst.push(s);
        } else {
            ks.push(d);
            kst.push(s);
        }
    }
    ((ks, kst), (rs, rst))
}

/// Folds the reduced dims for every position of the kept dims, in row-major order.
fn fold<T: Copy, A: Copy>(
    data: &[T],
    layout: &Layout,
    dims: &[usize],
    init: A,
    f: impl Fn(A, T, usize) -> A,
) -> Vec<A> {
    // (everything reduced on a contiguous input is the block with outer = inner = 1)
    if let Some((outer, red, inner)) = contiguous_block(layout, dims) {
        let n = outer * red * inner;
        // an empty view's offset may lie past the end of its buffer
        let block = if n == 0 {
            &data[..0]
        } else {
            &data[layout.offset..layout.offset + n]
        };
        return fold_block(block, (outer, red, inner), init, f);
    }
    let ((ks, kst), (rs, rst)) = split(layout, dims);
    let mut out = Vec::with_capacity(crate::shape::numel(&ks));
    for_each_offset(&ks, &kst, layout.offset, |base| {
        let mut acc = init;
        let mut i = 0;
        for_each_offset(&rs, &rst, base, |o| {
            acc = f(acc, data[o], i);
            i += 1;
        });
        out.push(acc);
    });
    out
}

/// For a contiguous input whose reduced dims are one run `d0..=d1` (a bias gradient's
/// sum over the batch, a softmax's over the last dim): (outer, reduced, inner) sizes.
fn contiguous_block(layout: &Layout, dims: &[usize]) -> Option<(usize, usize, usize)> {
    let (&d0, &d1) = (dims.iter().min()?, dims.iter().max()?);
    if d1 - d0 + 1 != dims.len() || !layout.is_contiguous() {
        return None;
    }
    let sh = &layout.shape;
    let p = |r: std::ops::Range<usize>| sh[r].iter().product::<usize>();
    Some((p(0..d0), p(d0..d1 + 1), p(d1 + 1..sh.len())))
}

/// [`fold`] over a contiguous `[outer, red, inner]` block, reducing the middle: each
/// output folds its elements in the same order as the general path (so the result is
/// the same bit for bit), but the inner positions advance together, which vectorises.
fn fold_block<T: Copy, A: Copy>(
    data: &[T],
    (outer, red, inner): (usize, usize, usize),
    init: A,
    f: impl Fn(A, T, usize) -> A,
) -> Vec<A> {
    let mut out = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        let block = &data[o * red * inner..(o + 1) * red * inner];
        if inner == 1 {
            let mut acc = init;
            for (r, &x) in block.iter().enumerate() {
                acc = f(acc, x, r);
            }
            out.push(acc);
            continue;
        }
        let start = out.len();
        out.resize(start + inner, init);
        if inner == 0 {
            continue;
        }
        let acc = &mut out[start..];
        for (r, row) in block.chunks_exact(inner).enumerate() {
            for (a, &x) in acc.iter_mut().zip(row) {
                *a = f(*a, x, r);
            }
        }
    }
    out
}

/// Float sums over the last dims of a contiguous input (every dim, or a softmax's last
/// one): each row summed by [`sum_lanes`]. `None` for other layouts.
fn row_sums<T: Copy>(
    data: &[T],
    layout: &Layout,
    dims: &[usize],
    to: impl Fn(T) -> f64 + Copy,
) -> Option<Vec<f64>> {
    let (outer, red, inner) = contiguous_block(layout, dims)?;
    if inner != 1 {
        return None;
    }
    // an empty view's offset may lie past the end of its (empty) buffer
    let rows = if outer * red == 0 {
        &data[..0]
    } else {
        &data[layout.offset..layout.offset + outer * red]
    };
    Some(if red == 0 {
        vec![0.0; outer]
    } else {
        rows.chunks_exact(red).map(|r| sum_lanes(r, to)).collect()
    })
}

/// A sum in float64 as 8 interleaved partial sums combined pairwise: a fixed order (the
/// same bits on every thread, split and SIMD width) that vectorises, where one running
/// sum waits for each add to finish before the next (8x slower on long rows).
fn sum_lanes<T: Copy>(xs: &[T], to: impl Fn(T) -> f64) -> f64 {
    let mut acc = [0.0f64; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a += to(x);
        }
    }
    let tail = chunks.remainder().iter().fold(0.0, |a, &x| a + to(x));
    (((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))) + tail
}

/// Σ x² over the last `dims` of a contiguous float input (all of them, or rows), each
/// square rounded to the dtype and summed as [`reduce`] sums: the bits of
/// `sum(x * x)`, in one pass. `None` for other layouts and dtypes.
pub fn sum_squares(buf: &Buffer, layout: &Layout, dims: &[usize]) -> Option<Buffer> {
    match buf {
        Buffer::F32(v) => {
            let r = row_sums(v, layout, dims, |x: f32| f64::from(x * x))?;
            Some(Buffer::F32(r.into_iter().map(|x| x as f32).collect()))
        }
        Buffer::F64(v) => Some(Buffer::F64(row_sums(v, layout, dims, |x: f64| x * x)?)),
        _ => None,
    }
}

/// softmax (or log_softmax) over the last dim of a contiguous float input, fused: per
/// row the max, `z = x - max`, `e = exp(z)`, the row's sum `s`, then `e / s` (or
/// `z - log(s)`). The steps are the float operations the composed ops (amax, sub, exp,
/// sum, div or log and sub) perform, with the same exp, log and summation order, in
/// one pass per row instead of five over the whole tensor. `None` for other layouts.
pub fn softmax_last_dim(buf: &Buffer, layout: &Layout, log: bool) -> Option<Buffer> {
    let red = *layout.shape.last()?;
    if red == 0 || layout.numel() == 0 || !layout.is_contiguous() {
        return None; // (an empty view's offset may lie past the end of its buffer)
    }
    let range = layout.offset..layout.offset + layout.numel();
    Some(match buf {
        Buffer::F32(v) => {
            let exp = |z: &[f32], e: &mut [MaybeUninit<f32>]| super::vmath::exp(z, e);
            let ln = |s: f32| {
                let mut r = [MaybeUninit::uninit()];
                super::vmath::log(&[s], &mut r);
                // SAFETY: vmath::log initialises all of its output.
                unsafe { r[0].assume_init() }
            };
            let sum = |e: &[f32]| sum_lanes(e, f64::from) as f32;
            Buffer::F32(softmax_rows(&v[range], red, log, exp, ln, sum))
        }
        Buffer::F64(v) => {
            let exp = |z: &[f64], e: &mut [MaybeUninit<f64>]| {
                for (o, &x) in e.iter_mut().zip(z) {
                    o.write(x.exp());
                }
            };
            let sum = |e: &[f64]| sum_lanes(e, |x| x);
            Buffer::F64(softmax_rows(&v[range], red, log, exp, f64::ln, sum))
        }
        _ => return None,
    })
}

fn softmax_rows<T: Float>(
    x: &[T],
    red: usize,
    log: bool,
    exp: impl Fn(&[T], &mut [MaybeUninit<T>]) + Sync,
    ln: impl Fn(T) -> T + Sync,
    sum: impl Fn(&[T]) -> T + Sync,
) -> Vec<T> {
    let n = x.len();
    let mut out: Vec<T> = Vec::with_capacity(n);
    let spare = &mut out.spare_capacity_mut()[..n];
    let rows = |start: usize, o: &mut [MaybeUninit<T>]| {
        let mut z = Vec::with_capacity(red);
        for (xr, orow) in x[start..start + o.len()]
            .chunks_exact(red)
            .zip(o.chunks_exact_mut(red))
        {
            let m = row_max(xr);
            z.clear();
            z.extend(xr.iter().map(|&v| v - m));
            exp(&z, orow);
            // SAFETY: `exp` initialised the whole row.
            let e = unsafe { &mut *(std::ptr::from_mut(orow) as *mut [T]) };
            let s = sum(e);
            if log {
                let ls = ln(s);
                for (o, &zi) in e.iter_mut().zip(&z) {
                    *o = zi - ls;
                }
            } else {
                for o in e.iter_mut() {
                    *o = o.div(s);
                }
            }
        }
    };
    if n >= super::elementwise::PAR_MIN && crate::runtime::intra_op_parallel() {
        // whole rows per task, about 16K elements each
        let per_task = (16_384 / red).max(1) * red;
        super::elementwise::for_each_chunk_of(spare, per_task, &rows);
    } else {
        rows(0, spare);
    }
    // SAFETY: every row of every task was written.
    unsafe { out.set_len(n) };
    out
}

/// The largest element of a non-empty row; NaN if there is one (as amax gives). In
/// lanes, so the loop vectorises; only which of two equal zeros is returned can differ
/// from a left-to-right scan, which no softmax output can tell.
fn row_max<T: Float>(x: &[T]) -> T {
    row_extreme::<T, 8>(x, true)
}

/// [`row_max`], or the smallest element when `!is_max`, over `L` lanes (more lanes keep
/// several vectors in flight where the kernel is compiled for wide vectors; fewer cost
/// less to combine on SSE2).
#[inline(always)]
fn row_extreme<T: Float, const L: usize>(x: &[T], is_max: bool) -> T {
    let pick = |a: T, v: T| {
        if (if is_max { v > a } else { v < a }) || is_nan(v) {
            v
        } else {
            a
        }
    };
    let mut acc = [x[0]; L];
    let mut chunks = x.chunks_exact(L);
    for c in &mut chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a = pick(*a, v);
        }
    }
    let m = chunks.remainder().iter().fold(acc[0], |a, &v| pick(a, v));
    acc[1..].iter().fold(m, |a, &v| pick(a, v))
}

/// [`arg_reduce`] over the rows of a contiguous `[outer, red]` block (`red > 0`): the
/// extreme value by [`row_extreme`] (vectorised), then the first index holding it (or
/// the first NaN). Its element is the value returned, so the bits are those of the
/// left-to-right scan, down to which of two equal zeros comes first. Compiled for
/// AVX-512 and AVX2 too and picked at run time, as the vmath kernels are (the baseline
/// build is SSE2).
fn arg_reduce_rows<T: Float>(
    data: &[T],
    outer: usize,
    red: usize,
    is_max: bool,
) -> (Vec<T>, Vec<i64>) {
    #[inline(always)]
    fn body<T: Float>(rows: &[T], red: usize, is_max: bool) -> (Vec<T>, Vec<i64>) {
        let outer = rows.len() / red;
        let (mut vals, mut idx) = (Vec::with_capacity(outer), Vec::with_capacity(outer));
        for row in rows.chunks_exact(red) {
            let m = row_extreme::<T, 32>(row, is_max);
            let i = if is_nan(m) {
                first_index(row, is_nan::<T>)
            } else {
                first_index(row, |v: T| v == m)
            };
            vals.push(row[i]);
            idx.push(i as i64);
        }
        (vals, idx)
    }
    let rows = &data[..outer * red];
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f")]
        fn wide<T: Float>(rows: &[T], red: usize, is_max: bool) -> (Vec<T>, Vec<i64>) {
            body(rows, red, is_max)
        }
        #[target_feature(enable = "avx2")]
        fn mid<T: Float>(rows: &[T], red: usize, is_max: bool) -> (Vec<T>, Vec<i64>) {
            body(rows, red, is_max)
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked above).
            return unsafe { wide(rows, red, is_max) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked above).
            return unsafe { mid(rows, red, is_max) };
        }
    }
    body(rows, red, is_max)
}

/// The first index of `row` where `hit` holds (0 if none): 16 elements
/// tested at a time without branching, then the hit searched for in its block.
#[inline(always)]
fn first_index<T: Float>(row: &[T], hit: impl Fn(T) -> bool) -> usize {
    let mut blocks = row.chunks_exact(16);
    let mut base = 0;
    for b in &mut blocks {
        if b.iter().fold(false, |any, &v| any | hit(v)) {
            return base + b.iter().position(|&v| hit(v)).unwrap_or(0);
        }
        base += 16;
    }
    blocks
        .remainder()
        .iter()
        .position(|&v| hit(v))
        .map_or(0, |i| base + i)
}

/// NaN test for any element type (NaN is the only value unequal to itself); compiles to
/// the same compare as `f32::is_nan`, so loops using it still vectorise.
#[inline(always)]
#[allow(clippy::eq_op)]
fn is_nan<T: PartialEq + Copy>(v: T) -> bool {
    v != v
}

/// Reduces `dims` (wrapped, unique). The result is contiguous with the kept dims' sizes
/// in order (callers reshape for keepdim). Sums of float32 accumulate in float64; sums
/// of bool/int64 give int64, as in torch.
pub fn reduce(op: ReduceOp, buf: &Buffer, layout: &Layout, dims: &[usize]) -> Buffer {
    match op {
        ReduceOp::Sum | ReduceOp::Prod => {
            let is_sum = op == ReduceOp::Sum;
            match buf {
                Buffer::F32(v) => {
                    let rows = is_sum.then(|| row_sums(v, layout, dims, f64::from));
                    if let Some(r) = rows.flatten() {
                        return Buffer::F32(r.into_iter().map(|x| x as f32).collect());
                    }
                    let init = if is_sum { 0.0 } else { 1.0 };
                    let r = fold(v, layout, dims, init, |a: f64, x: f32, _| {
                        if is_sum {
                            a + f64::from(x)
                        } else {
                            a * f64::from(x)
                        }
                    });
                    Buffer::F32(r.into_iter().map(|x| x as f32).collect())
                }
                Buffer::F64(v) => {
                    let rows = is_sum.then(|| row_sums(v, layout, dims, |x| x));
                    if let Some(r) = rows.flatten() {
                        return Buffer::F64(r);
                    }
                    let init = if is_sum { 0.0 } else { 1.0 };
                    Buffer::F64(fold(v, layout, dims, init, |a, x, _| {
                        if is_sum { a + x } else { a * x }
                    }))
                }
                Buffer::I64(v) => {
                    let init = i64::from(!is_sum);
                    Buffer::I64(fold(v, layout, dims, init, |a: i64, x, _| {
                        if is_sum {
                            a.wrapping_add(x)
                        } else {
                            a.wrapping_mul(x)
                        }
                    }))
                }
                Buffer::Bool(v) => {
                    let init = i64::from(!is_sum);
                    Buffer::I64(fold(v, layout, dims, init, |a: i64, x: bool, _| {
                        if is_sum {
                            a + i64::from(x)
                        } else {
                            a * i64::from(x)
                        }
                    }))
                }
            }
        }
        ReduceOp::Max | ReduceOp::Min => {
            let (vals, _) = arg_reduce(buf, layout, dims, op == ReduceOp::Max);
            vals
        }
        ReduceOp::ArgMax | ReduceOp::ArgMin => {
            let (_, idx) = arg_reduce(buf, layout, dims, op == ReduceOp::ArgMax);
            Buffer::I64(idx)
        }
    }
}

/// (values, indices) of the max (or min) over `dims`; NaN wins, as in torch; ties keep
/// the first index. Indices count in row-major order over the reduced dims.
pub fn arg_reduce(
    buf: &Buffer,
    layout: &Layout,
    dims: &[usize],
    is_max: bool,
) -> (Buffer, Vec<i64>) {
    // rows of a contiguous input, reduced whole (dims = the last ones), none empty, at
    // least one (an empty view's offset may lie past the end of its buffer)
    let rows = || contiguous_block(layout, dims).filter(|b| b.2 == 1 && b.1 > 0 && b.0 > 0);
    match buf {
        Buffer::F32(v) if let Some((outer, red, _)) = rows() => {
            let (vals, idx) = arg_reduce_rows(&v[layout.offset..], outer, red, is_max);
            return (Buffer::F32(vals), idx);
        }
        Buffer::F64(v) if let Some((outer, red, _)) = rows() => {
            let (vals, idx) = arg_reduce_rows(&v[layout.offset..], outer, red, is_max);
            return (Buffer::F64(vals), idx);
        }
        _ => {}
    }
    with_dtype!(buf.dtype(), T => {
        let data = T::slice(buf);
        // Accumulator: (best value, best index, seen any). Values are compared through f64
        // for NaN handling; int64 beyond 2^53 compares exactly via PartialOrd below.
        let r = fold(data, layout, dims, (T::default(), -1i64), |(best, bi), x, i| {
            if bi < 0 {
                return (x, i as i64);
            }
            let (bf, xf) = (best.to_f64(), x.to_f64());
            if bf.is_nan() {
                return (best, bi);
            }
            #[allow(clippy::bool_comparison)] // generic over all element types, bool included
            let better = xf.is_nan() || if is_max { x > best } else { x < best };
            if better { (x, i as i64) } else { (best, bi) }
        });
        let vals: Vec<T> = r.iter().map(|p| p.0).collect();
        (T::into_buffer(vals), r.iter().map(|p| p.1.max(0)).collect())
    })
}

/// Whether any element (over `layout`) is nonzero (torch's `any()`, as a Rust bool).
pub fn any_nonzero(buf: &Buffer, layout: &Layout) -> bool {
    let mut found = false;
    with_dtype!(buf.dtype(), T => {
        let v = T::slice(buf);
        for_each_offset(&layout.shape, &layout.strides, layout.offset, |o| {
            found |= v[o].to_f64() != 0.0;
        });
    });
    found
}

/// `E[r, i] = Π_{j≠i} x[r, j]` along the rows of a [rows, n] float64 layout (prod's
/// gradient where the input has zeros), by prefix and suffix products: no division.
/// `None` for another dtype.
pub fn exclusive_prod_rows(buf: &Buffer, layout: &Layout) -> Option<Buffer> {
    let Buffer::F64(data) = buf else {
        return None;
    };
    let v = contiguous(data, layout);
    let (rows, n) = (layout.shape[0], layout.shape[1]);
    let mut out = vec![0.0f64; rows * n];
    for r in 0..rows {
        let row = &v[r * n..(r + 1) * n];
        let mut acc = 1.0;
        for i in 0..n {
            out[r * n + i] = acc;
            acc *= row[i];
        }
        acc = 1.0;
        for i in (0..n).rev() {
            out[r * n + i] *= acc;
            acc *= row[i];
        }
    }
    Some(Buffer::F64(out))
}

/// The dtype a sum of `d` produces (torch: integral and bool sums give int64).
pub fn sum_dtype(d: DType) -> DType {
    if d.is_float() { d } else { DType::I64 }
}

/// Element as f64, for index validation and `.item()`.
pub fn element_f64(buf: &Buffer, offset: usize) -> f64 {
    with_dtype!(buf.dtype(), T => T::slice(buf)[offset].to_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same values as `v` (contiguous, `shape`), stored transposed in its last two
    /// dims: a layout that takes `fold`'s general path.
    fn strided_copy(v: &[f64], shape: &[usize]) -> (Vec<f64>, Layout) {
        let n = shape.len();
        let (r, c) = (shape[n - 2], shape[n - 1]);
        let mut t = vec![0.0; v.len()];
        for (b, blk) in v.chunks(r * c).enumerate() {
            for i in 0..r {
                for j in 0..c {
                    t[b * r * c + j * r + i] = blk[i * c + j];
                }
            }
        }
        let mut strides = crate::shape::contiguous_strides(shape);
        strides[n - 2] = 1;
        strides[n - 1] = r;
        let layout = Layout {
            shape: shape.iter().copied().collect(),
            strides,
            offset: 0,
        };
        (t, layout)
    }

    #[test]
    fn block_fast_paths_agree_with_the_general_path() {
        let shape = [3usize, 5, 4, 6];
        let n: usize = shape.iter().product();
        // values with ties (for argmax's first-index rule) and a wide range of scales
        let v: Vec<f64> = (0..n)
            .map(|i| (((i * 7919) % 23) as f64 - 11.0) * 10f64.powi((i % 5) as i32 - 2))
            .collect();
        let contiguous = Layout::contiguous(&shape);
        let (t, strided) = strided_copy(&v, &shape);
        let runs: &[&[usize]] = &[
            &[0],
            &[1],
            &[3],
            &[0, 1],
            &[1, 2],
            &[2, 3],
            &[1, 2, 3],
            &[0, 1, 2, 3],
        ];
        for &dims in runs {
            let f = |buf: &Buffer, l: &Layout, op| match reduce(op, buf, l, dims) {
                Buffer::F64(v) => v,
                _ => unreachable!(),
            };
            let (fast, slow) = (Buffer::F64(v.clone()), Buffer::F64(t.clone()));
            // prod and the arg-reductions: the same fold order, so the same bits
            assert_eq!(
                f(&fast, &contiguous, ReduceOp::Prod),
                f(&slow, &strided, ReduceOp::Prod),
                "{dims:?}"
            );
            for is_max in [true, false] {
                let a = arg_reduce(&fast, &contiguous, dims, is_max).1;
                let b = arg_reduce(&slow, &strided, dims, is_max).1;
                assert_eq!(a, b, "{dims:?} {is_max}");
            }
            // sums: lanes may reorder a row, within float64 rounding
            let (a, b) = (
                f(&fast, &contiguous, ReduceOp::Sum),
                f(&slow, &strided, ReduceOp::Sum),
            );
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                assert!(
                    (x - y).abs() <= 1e-12 * (1.0 + y.abs()),
                    "{dims:?}: {x} vs {y}"
                );
            }
        }
        // empty reduced and kept dims
        let e = Layout::contiguous(&[2, 0, 3]);
        assert!(
            matches!(reduce(ReduceOp::Sum, &Buffer::F64(vec![]), &e, &[1]), Buffer::F64(v) if v == vec![0.0; 6])
        );
        assert!(
            matches!(reduce(ReduceOp::Sum, &Buffer::F64(vec![]), &e, &[2]), Buffer::F64(v) if v.is_empty())
        );
    }

    #[test]
    fn sum_over_middle_dim_matches_loop() {
        // x[i,j,k] = i*100 + j*10 + k, shape [2,3,2]
        let v: Vec<f64> = (0..2)
            .flat_map(|i| {
                (0..3).flat_map(move |j| (0..2).map(move |k| (i * 100 + j * 10 + k) as f64))
            })
            .collect();
        let l = Layout::contiguous(&[2, 3, 2]);
        let Buffer::F64(out) = reduce(ReduceOp::Sum, &Buffer::F64(v), &l, &[1]) else {
            unreachable!()
        };
        assert_eq!(out, vec![30.0, 33.0, 330.0, 333.0]); // Σ_j (100i + 10j + k) = 300i + 30 + 3k
    }

    #[test]
    fn argmax_takes_first_of_ties_and_nan_wins() {
        let l = Layout::contiguous(&[4]);
        let (_, idx) = arg_reduce(&Buffer::F32(vec![1.0, 3.0, 3.0, 0.0]), &l, &[0], true);
        assert_eq!(idx, vec![1]);
        let (_, idx) = arg_reduce(&Buffer::F32(vec![1.0, f32::NAN, 3.0, 0.0]), &l, &[0], true);
        assert_eq!(idx, vec![1]);
    }
}
