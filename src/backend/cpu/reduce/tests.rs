//! Tests of the reduction kernels against plain loops and float64 references.

#![allow(clippy::unwrap_used, clippy::panic)]

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
        let (fast, slow) = (Buffer::F64(v.clone().into()), Buffer::F64(t.clone().into()));
        // the arg-reductions: exact, so the same result whatever the walk
        for is_max in [true, false] {
            let a = arg_reduce(&fast, &contiguous, dims, is_max).1;
            let b = arg_reduce(&slow, &strided, dims, is_max).1;
            assert_eq!(a, b, "{dims:?} {is_max}");
        }
        // sums and products: rows and columns fold in another order, within
        // float64 rounding
        for op in [ReduceOp::Sum, ReduceOp::Prod] {
            let (a, b) = (f(&fast, &contiguous, op), f(&slow, &strided, op));
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                let close = x == y
                    || (x.is_nan() && y.is_nan())
                    || (x - y).abs() <= 1e-12 * (1.0 + y.abs());
                assert!(close, "{op:?} {dims:?}: {x} vs {y}");
            }
        }
    }
    // empty reduced and kept dims
    let e = Layout::contiguous(&[2, 0, 3]);
    assert!(
        matches!(reduce(ReduceOp::Sum, &Buffer::F64(vec![].into()), &e, &[1]), Buffer::F64(v) if v == vec![0.0; 6])
    );
    assert!(
        matches!(reduce(ReduceOp::Sum, &Buffer::F64(vec![].into()), &e, &[2]), Buffer::F64(v) if v.is_empty())
    );
}

#[test]
fn sum_over_middle_dim_matches_loop() {
    // x[i,j,k] = i*100 + j*10 + k, shape [2,3,2]
    let v: Vec<f64> = (0..2)
        .flat_map(|i| (0..3).flat_map(move |j| (0..2).map(move |k| (i * 100 + j * 10 + k) as f64)))
        .collect();
    let l = Layout::contiguous(&[2, 3, 2]);
    let Buffer::F64(out) = reduce(ReduceOp::Sum, &Buffer::F64(v.into()), &l, &[1]) else {
        unreachable!()
    };
    assert_eq!(out, vec![30.0, 33.0, 330.0, 333.0]); // Σ_j (100i + 10j + k) = 300i + 30 + 3k
}

#[test]
fn argmax_takes_first_of_ties_and_nan_wins() {
    let l = Layout::contiguous(&[4]);
    let (_, idx) = arg_reduce(
        &Buffer::F32(vec![1.0, 3.0, 3.0, 0.0].into()),
        &l,
        &[0],
        true,
    );
    assert_eq!(idx, vec![1]);
    let (_, idx) = arg_reduce(
        &Buffer::F32(vec![1.0, f32::NAN, 3.0, 0.0].into()),
        &l,
        &[0],
        true,
    );
    assert_eq!(idx, vec![1]);
}

/// Values of many magnitudes and both signs, with repeats (ties for the arg-reductions).
fn values(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let k = (i * 7919 + 13) % 1031;
            (k as f64 - 515.0) * 10f64.powi((i % 7) as i32 - 3)
        })
        .collect()
}

fn f32s(buf: Buffer) -> Vec<f32> {
    match buf {
        Buffer::F32(v) => v.into_vec(),
        _ => unreachable!(),
    }
}

/// Every fold, at every level the CPU runs (forced), gives the same bits; sums and the
/// others agree with a plain float64 loop.
#[test]
fn every_level_gives_the_same_bits_and_the_reference() {
    use crate::backend::cpu::vmath::{self, Level};
    let shapes: &[&[usize]] = &[
        &[70001],
        &[300, 301],
        &[3, 20000],
        &[20000, 3],
        &[6, 70, 90],
    ];
    let ops = [
        ReduceOp::Sum,
        ReduceOp::Mean,
        ReduceOp::Prod,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::ArgMax,
    ];
    let restore = vmath::level();
    for &shape in shapes {
        let n: usize = shape.iter().product();
        let v64 = values(n);
        let v: Vec<f32> = v64.iter().map(|&x| (1.0 + x * 1e-6) as f32).collect();
        let buf = Buffer::F32(v.clone().into());
        let layout = Layout::contiguous(shape);
        for d in 0..shape.len() {
            for op in ops {
                let mut first: Option<Buffer> = None;
                for level in vmath::supported() {
                    vmath::set_level(level);
                    let got = reduce(op, &buf, &layout, &[d]);
                    match &first {
                        None => first = Some(got),
                        Some(f) => assert!(
                            bits(f) == bits(&got),
                            "{op:?} {shape:?} dim {d} at {level:?}"
                        ),
                    }
                }
                vmath::set_level(Level::Avx512);
                // the reference: the kernels' own order for sums and means (exact), and
                // a float64 loop per output (sums within their float32 chunks' error)
                let (outer, red) = (n / shape[d], shape[d]);
                let inner: usize = shape[d + 1..].iter().product();
                let got = first.unwrap();
                if matches!(op, ReduceOp::Sum | ReduceOp::Mean) {
                    let k = if op == ReduceOp::Mean {
                        red as f64
                    } else {
                        1.0
                    };
                    let want: Vec<u64> = sum_reference(&v, shape, d, false)
                        .iter()
                        .map(|&s| u64::from(((s / k) as f32).to_bits()))
                        .collect();
                    assert!(
                        bits(&got) == want,
                        "{op:?} {shape:?} dim {d}: not the reference"
                    );
                }
                for o in 0..outer {
                    let (oo, ii) = (o / inner, o % inner);
                    let xs = (0..red).map(|r| f64::from(v[oo * red * inner + r * inner + ii]));
                    let want = match op {
                        ReduceOp::Sum => xs.sum::<f64>(),
                        ReduceOp::Mean => xs.sum::<f64>() / red as f64,
                        ReduceOp::Prod => xs.product::<f64>(),
                        ReduceOp::Max => xs.fold(f64::NEG_INFINITY, f64::max),
                        ReduceOp::Min => xs.fold(f64::INFINITY, f64::min),
                        _ => {
                            let xs: Vec<f64> = xs.collect();
                            let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                            xs.iter().position(|&x| x == m).unwrap() as f64
                        }
                    };
                    let g = match &got {
                        Buffer::F32(g) => f64::from(g[o]),
                        Buffer::I64(g) => g[o] as f64,
                        _ => unreachable!(),
                    };
                    let tol = if matches!(op, ReduceOp::Sum | ReduceOp::Mean) {
                        // float32 chunks of 16 elements a lane (all positive here: at
                        // most 15 roundings of 2^-24 relative), then float64
                        want.abs() * 1e-6
                    } else if op == ReduceOp::Prod {
                        // one rounding to float32 of the float64 result
                        want.abs() * 6e-8 + 1e-30
                    } else {
                        0.0
                    };
                    assert!(
                        (g - want).abs() <= tol,
                        "{op:?} {shape:?} dim {d} out {o}: {g} vs {want}"
                    );
                }
            }
            // Σ x (values of both signs and many magnitudes too) and Σ x² (the 2-norm):
            // the same bits at every level, and the reference's
            let wide: Vec<f32> = v64.iter().map(|&x| x as f32).collect();
            for (vals, sq) in [(&v, true), (&wide, true), (&wide, false)] {
                let buf = Buffer::F32(vals.clone().into());
                let mut first: Option<Buffer> = None;
                for level in vmath::supported() {
                    vmath::set_level(level);
                    let got = if sq {
                        sum_squares(&buf, &layout, &[d]).unwrap()
                    } else {
                        reduce(ReduceOp::Sum, &buf, &layout, &[d])
                    };
                    if let Some(f) = &first {
                        assert!(bits(f) == bits(&got), "{sq} {shape:?} dim {d} at {level:?}");
                    }
                    first = Some(got);
                }
                let want: Vec<u64> = sum_reference(vals, shape, d, sq)
                    .iter()
                    .map(|&s| u64::from((s as f32).to_bits()))
                    .collect();
                assert!(bits(&first.unwrap()) == want, "{sq} {shape:?} dim {d}");
            }
        }
    }
    vmath::set_level(restore);
}

/// Σ x (Σ x² with `sq`) over dim `d` of a contiguous float32 `shape`, in the kernels'
/// order, written out plainly: rows (`d` last) in fixed blocks of `ROW_BLOCK` elements,
/// each as [`f32_run_reference`], combined by [`tree_reference`]; columns in blocks of
/// `COL_BLOCK` rows, each as [`f32_col_block_reference`] (Σ x²: folded in order in
/// float64), combined the same way.
fn sum_reference(v: &[f32], shape: &[usize], d: usize, sq: bool) -> Vec<f64> {
    use super::fold::{COL_BLOCK, ROW_BLOCK};
    let n: usize = shape.iter().product();
    let (outer, red) = (n / shape[d], shape[d]);
    let inner: usize = shape[d + 1..].iter().product();
    (0..outer)
        .map(|o| {
            let (oo, ii) = (o / inner, o % inner);
            let xs: Vec<f32> = (0..red)
                .map(|r| v[oo * red * inner + r * inner + ii])
                .collect();
            let parts: Vec<f64> = if inner == 1 {
                xs.chunks(ROW_BLOCK)
                    .map(|b| f32_run_reference(b, sq))
                    .collect()
            } else if sq {
                xs.chunks(COL_BLOCK)
                    .map(|b| {
                        b.iter().fold(0.0, |a, &x| {
                            let x = f64::from(x);
                            a + x * x
                        })
                    })
                    .collect()
            } else {
                xs.chunks(COL_BLOCK).map(f32_col_block_reference).collect()
            };
            tree_reference(&parts)
        })
        .collect()
}

/// A float32 run of a row as `Sum::row` (`SumSq::row` with `sq`) folds it: chunks of
/// 512 in 32 float32 lanes (lane `i % 32`), the chunks' lanes summed into 32 float64
/// lanes, pairwise, then the tail in float64; and where that is not finite (or, for
/// Σx², below 2^-100), the float64 lanes alone.
fn f32_run_reference(xs: &[f32], sq: bool) -> f64 {
    let pairwise = |mut l: [f64; 32]| {
        let mut w = 32;
        while w > 1 {
            w /= 2;
            for k in 0..w {
                l[k] += l[k + w];
            }
        }
        l[0]
    };
    let body = xs.len() / 32 * 32;
    let tail = xs[body..].iter().fold(0.0, |t, &x| {
        let x = f64::from(x);
        t + if sq { x * x } else { x }
    });
    let mut lanes = [0.0f64; 32];
    for c in xs[..body].chunks(512) {
        let mut s = [0.0f32; 32];
        for (i, &x) in c.iter().enumerate() {
            s[i % 32] += if sq { x * x } else { x };
        }
        for (l, &s) in lanes.iter_mut().zip(&s) {
            *l += f64::from(s);
        }
    }
    let chunked = pairwise(lanes) + tail;
    let kept = if sq {
        (2f64.powi(-100)..=f64::MAX).contains(&chunked)
    } else {
        chunked.is_finite()
    };
    if kept {
        return chunked;
    }
    let mut lanes = [0.0f64; 32];
    for (i, &x) in xs[..body].iter().enumerate() {
        let x = f64::from(x);
        lanes[i % 32] += if sq { x * x } else { x };
    }
    pairwise(lanes) + tail
}

/// `par::tree`'s shape: halves split at a power of two.
fn tree_reference(s: &[f64]) -> f64 {
    match s.len() {
        0 => 0.0,
        1 => s[0],
        n => {
            let h = n.next_power_of_two() / 2;
            tree_reference(&s[..h]) + tree_reference(&s[h..])
        }
    }
}

/// Float32 row sums whose float32 chunks would go wrong fold again in float64: a float32
/// lane that overflows, squares that overflow or underflow float32, inf and NaN.
#[test]
fn float32_row_sums_fall_back_to_float64_where_float32_fails() {
    use crate::backend::cpu::vmath;
    let restore = vmath::level();
    let l = Layout::contiguous(&[64]);
    let sum = |v: Vec<f32>| f32s(reduce(ReduceOp::Sum, &Buffer::F32(v.into()), &l, &[0]))[0];
    let sq = |v: Vec<f32>| f32s(sum_squares(&Buffer::F32(v.into()), &l, &[0]).unwrap())[0];
    for level in vmath::supported() {
        vmath::set_level(level);
        // elements 0 and 32 share a float32 lane: 3e38 + 3e38 overflows it
        let mut v = vec![0.0f32; 64];
        (v[0], v[32], v[1], v[33]) = (3e38, 3e38, -3e38, -3e38);
        assert_eq!(sum(v), 0.0);
        // squares past float32's range, and under it: the float64 results
        assert_eq!(sq(vec![1e20; 64]), 6.4e41f64 as f32);
        // (1e-21² is a float32 subnormal: 2^-149 steps, 3 digits; the sum too)
        let x = f64::from(1e-21f32);
        assert_eq!(sq(vec![1e-21; 64]), (64.0 * (x * x)) as f32);
        assert_eq!(sq(vec![0.0; 64]), 0.0);
        // inf and NaN as float64 gives them
        let mut v = vec![1.0f32; 64];
        v[5] = f32::INFINITY;
        assert_eq!(sum(v.clone()), f32::INFINITY);
        assert_eq!(sq(v.clone()), f32::INFINITY);
        v[40] = f32::NEG_INFINITY;
        assert!(sum(v.clone()).is_nan());
        v[40] = f32::NAN;
        assert!(sum(v.clone()).is_nan() && sq(v).is_nan());
    }
    vmath::set_level(restore);
}

/// Float32 column sums whose float32 block sums would go wrong add that block in float64
/// instead: a block that overflows float32 (in a vector's lane and in the columns left
/// over after the vectors), inf and NaN; the other columns of the block keep their
/// float32 sums.
#[test]
fn float32_column_sums_fall_back_to_float64_where_float32_fails() {
    use crate::backend::cpu::vmath;
    let restore = vmath::level();
    // 40 rows (two full blocks of 16 and one of 8) of 83 columns: 5 vectors of 16, 10
    // of 8, and a tail of 3
    let (r, c) = (40usize, 83usize);
    let l = Layout::contiguous(&[r, c]);
    for level in vmath::supported() {
        vmath::set_level(level);
        let mut v = vec![0.5f32; r * c];
        for col in [7, 81] {
            // the first block: zeros, and 3e38 + 3e38 overflows float32 (in float64
            // the four cancel exactly; the halves of the other blocks follow)
            for row in 0..16 {
                v[row * c + col] = 0.0;
            }
            (v[c + col], v[2 * c + col]) = (3e38, 3e38);
            (v[3 * c + col], v[4 * c + col]) = (-3e38, -3e38);
        }
        v[3 * c + 30] = f32::INFINITY;
        (v[c + 50], v[2 * c + 50]) = (f32::INFINITY, f32::NEG_INFINITY);
        v[33 * c + 60] = f32::NAN;
        let got = f32s(reduce(ReduceOp::Sum, &Buffer::F32(v.into()), &l, &[0]));
        for (j, &g) in got.iter().enumerate() {
            match j {
                7 | 81 => assert_eq!(g, 12.0, "column {j} at {level:?}"),
                30 => assert_eq!(g, f32::INFINITY, "at {level:?}"),
                50 | 60 => assert!(g.is_nan(), "column {j} at {level:?}"),
                _ => assert_eq!(g, 20.0, "column {j} at {level:?}"),
            }
        }
    }
    vmath::set_level(restore);
}

fn bits(b: &Buffer) -> Vec<u64> {
    match b {
        Buffer::F32(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
        Buffer::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
        Buffer::I64(v) => v.iter().map(|&x| x as u64).collect(),
        Buffer::Bool(v) => v.iter().map(|&x| u64::from(x)).collect(),
        Buffer::Cuda(_) => crate::storage::not_host(),
    }
}

/// softmax, logsumexp and var down columns and along rows: the same bits at every level,
/// and within float32 rounding of a float64 loop.
#[test]
fn fused_kernels_agree_across_levels() {
    use crate::backend::cpu::vmath;
    let restore = vmath::level();
    let shape = [37usize, 300];
    let v: Vec<f32> = values(37 * 300)
        .iter()
        .map(|&x| (x * 1e-2) as f32)
        .collect();
    let buf = Buffer::F32(v.clone().into());
    let l = Layout::contiguous(&shape);
    for d in 0..2 {
        let mut seen: Option<(Vec<f32>, Vec<f32>, Vec<f32>)> = None;
        for level in vmath::supported() {
            vmath::set_level(level);
            let s = f32s(softmax(&buf, &l, d, false).unwrap());
            let lse = f32s(logsumexp(&buf, &l, &[d]).unwrap());
            let var = f32s(var(&buf, &l, &[d], 1.0, false).unwrap());
            if let Some(p) = &seen {
                assert!(p.0 == s && p.1 == lse && p.2 == var, "dim {d} at {level:?}");
            }
            seen = Some((s, lse, var));
        }
        let (s, lse, _) = seen.unwrap();
        let (red, other) = (shape[d], shape[1 - d]);
        let at = |k: usize, r: usize| if d == 1 { k * 300 + r } else { r * 300 + k };
        for k in 0..other {
            let xs: Vec<f64> = (0..red).map(|r| f64::from(v[at(k, r)])).collect();
            let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = xs.iter().map(|x| (x - m).exp()).sum();
            assert!((f64::from(lse[k]) - (sum.ln() + m)).abs() < 1e-5 * (1.0 + m.abs()));
            for r in 0..red {
                let want = (xs[r] - m).exp() / sum;
                assert!(
                    (f64::from(s[at(k, r)]) - want).abs() < 1e-6,
                    "softmax dim {d}"
                );
            }
        }
    }
    vmath::set_level(restore);
}

/// The max (`max`) or min of a row as `fold::Extreme`'s lanes take it, written out
/// plainly: lane `k` keeps elements `k, k + 32, ...` with a strict compare (the first of
/// equals, so the zero first met), the two vectors of 16 lanes, then halves, then the
/// tail; the canonical NaN if the row has a NaN.
fn extreme_reference(xs: &[f64], max: bool) -> f64 {
    let better = |v: f64, a: f64| if max { v > a } else { v < a };
    let pick = |a: f64, v: f64| if better(v, a) { v } else { a };
    if xs.iter().any(|v| v.is_nan()) {
        return f64::NAN;
    }
    let id = if max {
        f64::NEG_INFINITY
    } else {
        f64::INFINITY
    };
    let body = xs.len() / 32 * 32;
    let mut lanes = [id; 32];
    for (i, &v) in xs[..body].iter().enumerate() {
        lanes[i % 32] = pick(lanes[i % 32], v);
    }
    let mut a: Vec<f64> = (0..16).map(|k| pick(lanes[k], lanes[k + 16])).collect();
    let mut w = 16;
    while w > 1 {
        w /= 2;
        for k in 0..w {
            a[k] = pick(a[k], a[k + w]);
        }
    }
    xs[body..].iter().fold(a[0], |m, &v| pick(m, v))
}

/// max and min along rows holding NaNs, zeros of both signs and infinities, float32 and
/// float64: the same bits at every level (the AVX-512 level tracks NaNs in float lanes,
/// the baseline in `u32` flags: both forms of `Extreme::row`), and the reference's,
/// down to which zero and which NaN (the canonical one) is returned.
#[test]
fn extreme_rows_keep_nans_and_zeros_at_every_level() {
    use crate::backend::cpu::vmath;
    let specials = [
        0.0,
        -0.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1.0,
        -1.0,
    ];
    let restore = vmath::level();
    let mut s = 7u64;
    for len in [1usize, 5, 31, 32, 33, 64, 100, 257, 1000] {
        let rows = 40;
        let v: Vec<f64> = (0..rows * len)
            .map(|i| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let k = (s >> 33) as usize;
                // half the rows without NaN (the zeros' order then decides), the others
                // with NaNs here and there; plain values mostly zero or small integers
                let x = if k.is_multiple_of(4) {
                    specials[(k / 4) % specials.len()]
                } else if k.is_multiple_of(3) {
                    -0.0
                } else {
                    ((k / 12) % 9) as f64 - 4.0
                };
                if (i / len).is_multiple_of(2) && x.is_nan() {
                    0.0
                } else {
                    x
                }
            })
            .collect();
        let layout = Layout::contiguous(&[rows, len]);
        let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        for (buf, f32_) in [
            (Buffer::F64(v.clone().into()), false),
            (Buffer::F32(v32.into()), true),
        ] {
            for (op, max) in [(ReduceOp::Max, true), (ReduceOp::Min, false)] {
                let want: Vec<u64> = v
                    .chunks_exact(len)
                    .map(|r| {
                        let m = extreme_reference(r, max);
                        if f32_ {
                            u64::from((m as f32).to_bits())
                        } else {
                            m.to_bits()
                        }
                    })
                    .collect();
                for level in vmath::supported() {
                    vmath::set_level(level);
                    let got = reduce(op, &buf, &layout, &[1]);
                    assert!(
                        bits(&got) == want,
                        "{op:?} len {len} f32 {f32_} at {level:?}"
                    );
                }
                // the arg-reductions: the first NaN, else the first element equal to the
                // extreme, and that element's own bits (its zero's sign)
                let (want_v, want_i): (Vec<u64>, Vec<i64>) = v
                    .chunks_exact(len)
                    .map(|r| {
                        let m = extreme_reference(r, max);
                        let i = r
                            .iter()
                            .position(|&x| if m.is_nan() { x.is_nan() } else { x == m })
                            .unwrap();
                        let x = if r[i].is_nan() { f64::NAN } else { r[i] };
                        let b = if f32_ {
                            u64::from((x as f32).to_bits())
                        } else {
                            x.to_bits()
                        };
                        (b, i as i64)
                    })
                    .unzip();
                for level in vmath::supported() {
                    vmath::set_level(level);
                    let (vals, idx) = arg_reduce(&buf, &layout, &[1], max);
                    assert!(idx == want_i, "arg {max} len {len} f32 {f32_} at {level:?}");
                    assert!(
                        bits(&vals) == want_v,
                        "arg {max} len {len} f32 {f32_} at {level:?}"
                    );
                }
            }
        }
    }
    vmath::set_level(restore);
}

/// NaN-normalised bits (any NaN as the canonical one): products of NaNs keep one of
/// their payloads, which the compiler's operand order may pick.
fn bits_nan(b: &Buffer) -> Vec<u64> {
    let canon = |nan: bool, b: u64, c: u64| if nan { c } else { b };
    match b {
        Buffer::F32(v) => v
            .iter()
            .map(|x| canon(x.is_nan(), u64::from(x.to_bits()), 0x7fc0_0000))
            .collect(),
        Buffer::F64(v) => v
            .iter()
            .map(|x| canon(x.is_nan(), x.to_bits(), 0x7ff8_0000_0000_0000))
            .collect(),
        _ => bits(b),
    }
}

/// Deterministic test values: mostly in (-1.5, 1.5) (products of a few thousand stay
/// in range), with zeros of both signs, infinities and NaNs at the rate `special`
/// (0: none).
fn mixed(n: usize, seed: u64, special: usize) -> Vec<f64> {
    let specials = [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN];
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let k = (s >> 33) as usize;
            if special > 0 && k.is_multiple_of(special) {
                specials[(k / special) % specials.len()]
            } else {
                ((k % 3001) as f64 - 1500.0) / 1000.0
            }
        })
        .collect()
}

/// The generic column fold of `fold::cols`, written out plainly for one column `xs`:
/// blocks of `COL_BLOCK` rows, each folded in order from `id` by `step`, the blocks
/// combined by `par::tree`'s shape with `step`.
fn col_reference(xs: &[f64], id: f64, step: &dyn Fn(f64, f64) -> f64) -> f64 {
    use super::fold::COL_BLOCK;
    fn tree(s: &[f64], id: f64, step: &dyn Fn(f64, f64) -> f64) -> f64 {
        match s.len() {
            0 => id,
            1 => s[0],
            n => {
                let h = n.next_power_of_two() / 2;
                step(tree(&s[..h], id, step), tree(&s[h..], id, step))
            }
        }
    }
    let parts: Vec<f64> = xs
        .chunks(COL_BLOCK)
        .map(|b| b.iter().fold(id, |a, &x| step(a, x)))
        .collect();
    tree(&parts, id, step)
}

/// The float32 column sum of `fold::cols_sum_f32`, written out plainly for one column
/// `xs` (float32 values): blocks of `COL_BLOCK` rows combined as in [`col_reference`],
/// each block from +0 in float64 adding the float32 sums of its runs of
/// `F32_COL_ROWS` rows (from the run's first element), or a run's elements one by one
/// where its float32 sum is not finite.
fn col_sum_f32_reference(xs: &[f64]) -> f64 {
    use super::fold::COL_BLOCK;
    let xs: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
    let blocks: Vec<f64> = xs.chunks(COL_BLOCK).map(f32_col_block_reference).collect();
    // (the blocks' tree: col_reference's over the block sums, which are its leaves)
    col_reference_tree(&blocks)
}

/// One `COL_BLOCK` of a float32 column as `fold::cols_sum_f32` sums it (see
/// [`col_sum_f32_reference`]).
fn f32_col_block_reference(b: &[f32]) -> f64 {
    use super::fold::F32_COL_ROWS;
    b.chunks(F32_COL_ROWS).fold(0.0, |a, run| {
        let s = run[1..].iter().fold(run[0], |s, &x| s + x);
        if s.is_finite() {
            a + f64::from(s)
        } else {
            run.iter().fold(a, |a, &x| a + f64::from(x))
        }
    })
}

/// `col_reference`'s tree over per-block results with `+`.
fn col_reference_tree(parts: &[f64]) -> f64 {
    match parts.len() {
        0 => 0.0,
        1 => parts[0],
        n => {
            let h = n.next_power_of_two() / 2;
            col_reference_tree(&parts[..h]) + col_reference_tree(&parts[h..])
        }
    }
}

/// The max/min step of the generic folds: `x` if it beats `a` or is NaN, else `a`.
fn ext_step(max: bool) -> impl Fn(f64, f64) -> f64 {
    move |a, x| {
        if (if max { x > a } else { x < a }) || x.is_nan() {
            x
        } else {
            a
        }
    }
}

/// Sums, means, products, max and min (with and without the first index) down columns
/// (the intrinsics of `simd.rs` at the
/// AVX-512 and AVX2 levels, the generic fold at the baseline): float32 and float64, row
/// counts around the kernels' 16-row step and `COL_BLOCK` (the long-column pieces),
/// column counts around the register groups (odd ones, a tail under one vector) and
/// `LONG_TILE`, contiguous, transposed, sliced
/// and 3-D layouts, with NaNs, infinities and zeros of both signs: the same bits at
/// every level and as the plain column fold (`col_reference`; float32 rounded once from
/// the float64 result, max/min exact, NaN payloads included).
#[test]
fn column_folds_give_the_reference_bits_at_every_level() {
    use crate::backend::cpu::vmath;
    let restore = vmath::level();
    let shapes = [
        (1usize, 1usize),
        (2, 3),
        (15, 7),
        (16, 8),
        (17, 9),
        (33, 31),
        (40, 33),
        (511, 127),
        (512, 128),
        (513, 129),
        (70, 255),
        (64, 256),
        (30, 257),
        (1025, 100),
        (300, 301),
        (9, 1000),
        // long columns wider than a long-fold tile (1024): two tiles, two row blocks
        (520, 1030),
    ];
    let ops = [
        ReduceOp::Sum,
        ReduceOp::Mean,
        ReduceOp::Prod,
        ReduceOp::Max,
        ReduceOp::Min,
    ];
    for (si, &(r, c)) in shapes.iter().enumerate() {
        for special in [0usize, 13] {
            let v = mixed(r * c, 11 + si as u64, special);
            // the layouts reading the same [r, c] values by columns: contiguous (dim
            // 0), the transpose of a [c, r] tensor stored as its rows (dim 1), a slice
            // whose rows are c + 5 apart (offset 3, dim 0), and [2, r, c] (dim 1, the
            // second copy doubled)
            let mut padded = vec![0.0f64; 3 + r * (c + 5)];
            for i in 0..r {
                padded[3 + i * (c + 5)..3 + i * (c + 5) + c]
                    .copy_from_slice(&v[i * c..(i + 1) * c]);
            }
            let two: Vec<f64> = v.iter().copied().chain(v.iter().map(|x| x * 2.0)).collect();
            let layouts: Vec<(Vec<f64>, Layout, usize, usize)> = vec![
                (v.clone(), Layout::contiguous(&[r, c]), 0, 1),
                (
                    v.clone(),
                    Layout::contiguous(&[r, c]).transpose(0, 1).unwrap(),
                    1,
                    1,
                ),
                (
                    padded,
                    Layout {
                        shape: [r, c].into_iter().collect(),
                        strides: [c + 5, 1].into_iter().collect(),
                        offset: 3,
                    },
                    0,
                    1,
                ),
                (two.clone(), Layout::contiguous(&[2, r, c]), 1, 2),
            ];
            for (data, layout, dim, groups) in &layouts {
                for f32_ in [true, false] {
                    let buf = if f32_ {
                        Buffer::F32(data.iter().map(|&x| x as f32).collect::<Vec<_>>().into())
                    } else {
                        Buffer::F64(data.clone().into())
                    };
                    // the values as the kernels read them (float32 rounded first)
                    let vals: Vec<f64> = if f32_ {
                        two.iter().map(|&x| f64::from(x as f32)).collect()
                    } else {
                        two.clone()
                    };
                    for op in ops {
                        let want: Vec<u64> = (0..groups * c)
                            .map(|o| {
                                let (g, j) = (o / c, o % c);
                                let col: Vec<f64> =
                                    (0..r).map(|i| vals[g * r * c + i * c + j]).collect();
                                let sum = || {
                                    if f32_ {
                                        col_sum_f32_reference(&col)
                                    } else {
                                        col_reference(&col, 0.0, &|a, x| a + x)
                                    }
                                };
                                let x = match op {
                                    ReduceOp::Sum => sum(),
                                    ReduceOp::Mean => sum() / r as f64,
                                    ReduceOp::Prod => col_reference(&col, 1.0, &|a, x| a * x),
                                    ReduceOp::Max => {
                                        col_reference(&col, f64::NEG_INFINITY, &ext_step(true))
                                    }
                                    _ => col_reference(&col, f64::INFINITY, &ext_step(false)),
                                };
                                let b = if f32_ {
                                    Buffer::F32(vec![x as f32].into())
                                } else {
                                    Buffer::F64(vec![x].into())
                                };
                                bits_nan(&b)[0]
                            })
                            .collect();
                        for level in vmath::supported() {
                            vmath::set_level(level);
                            let got = reduce(op, &buf, layout, &[*dim]);
                            assert!(
                                bits_nan(&got) == want,
                                "{op:?} [{r}, {c}] {layout:?} dim {dim} f32 {f32_} special \
                                 {special} at {level:?}"
                            );
                        }
                    }
                    // the arg-reductions: the first index of the max (min), the first NaN
                    // winning; the value is that element
                    for max in [true, false] {
                        let (want_v, want_i): (Vec<u64>, Vec<i64>) = (0..groups * c)
                            .map(|o| {
                                let (g, j) = (o / c, o % c);
                                let col: Vec<f64> =
                                    (0..r).map(|i| vals[g * r * c + i * c + j]).collect();
                                let mut bi = 0;
                                for (i, &x) in col.iter().enumerate() {
                                    let a = col[bi];
                                    let better = if max { x > a } else { x < a };
                                    if better || (x.is_nan() && !a.is_nan()) {
                                        bi = i;
                                    }
                                }
                                let b = if f32_ {
                                    Buffer::F32(vec![col[bi] as f32].into())
                                } else {
                                    Buffer::F64(vec![col[bi]].into())
                                };
                                (bits_nan(&b)[0], bi as i64)
                            })
                            .unzip();
                        for level in vmath::supported() {
                            vmath::set_level(level);
                            let (v, i) = arg_reduce(&buf, layout, &[*dim], max);
                            assert!(
                                bits_nan(&v) == want_v && i == want_i,
                                "arg {max} [{r}, {c}] {layout:?} dim {dim} f32 {f32_} special \
                                 {special} at {level:?}"
                            );
                        }
                    }
                }
            }
        }
    }
    vmath::set_level(restore);
}

/// A float64 product of a run as `fold::Prod`'s row takes it (`f64_lanes!`): lane `k`
/// multiplies elements `k, k + 32, ...` from 1, pairwise, then by the tail's product.
fn prod_run_reference(xs: &[f64]) -> f64 {
    let body = xs.len() / 32 * 32;
    let mut l = [1.0f64; 32];
    for (i, &x) in xs[..body].iter().enumerate() {
        l[i % 32] *= x;
    }
    let tail = xs[body..].iter().fold(1.0, |t, &x| t * x);
    let mut w = 32;
    while w > 1 {
        w /= 2;
        for k in 0..w {
            l[k] *= l[k + w];
        }
    }
    l[0] * tail
}

/// Products along rows (the intrinsics of `simd.rs` at the AVX-512 and AVX2 levels):
/// float32 and float64, lengths around the 32 lanes and the `ROW_BLOCK` blocks (combined
/// by `par::tree`), with zeros, infinities (`inf * 0` is NaN) and NaNs, contiguous and
/// transposed: the same bits at every level and as the plain lane order.
#[test]
fn row_products_give_the_reference_bits_at_every_level() {
    use super::fold::ROW_BLOCK;
    use crate::backend::cpu::vmath;
    let restore = vmath::level();
    for len in [
        1usize,
        5,
        31,
        32,
        33,
        63,
        64,
        65,
        100,
        1000,
        ROW_BLOCK,
        ROW_BLOCK + 1,
        40000,
    ] {
        let rows = if len > 1000 { 3 } else { 20 };
        for special in [0usize, 29, 997] {
            let v = mixed(rows * len, len as u64 + special as u64, special);
            for f32_ in [true, false] {
                let vals: Vec<f64> = if f32_ {
                    v.iter().map(|&x| f64::from(x as f32)).collect()
                } else {
                    v.clone()
                };
                let want: Vec<u64> = vals
                    .chunks_exact(len)
                    .map(|row| {
                        let parts: Vec<f64> =
                            row.chunks(ROW_BLOCK).map(prod_run_reference).collect();
                        let p = super::par::tree(&parts, 1.0, &|a: f64, b: f64| a * b);
                        let b = if f32_ {
                            Buffer::F32(vec![p as f32].into())
                        } else {
                            Buffer::F64(vec![p].into())
                        };
                        bits_nan(&b)[0]
                    })
                    .collect();
                let buf = |d: &[f64]| {
                    if f32_ {
                        Buffer::F32(d.iter().map(|&x| x as f32).collect::<Vec<_>>().into())
                    } else {
                        Buffer::F64(d.to_vec().into())
                    }
                };
                // the rows as stored, and as the transpose of a [len, rows] tensor
                // (its dim 0 reduced: the same rows in memory)
                let t = Layout::contiguous(&[rows, len]).transpose(0, 1).unwrap();
                for level in vmath::supported() {
                    vmath::set_level(level);
                    let a = reduce(
                        ReduceOp::Prod,
                        &buf(&v),
                        &Layout::contiguous(&[rows, len]),
                        &[1],
                    );
                    let b = reduce(ReduceOp::Prod, &buf(&v), &t, &[0]);
                    assert!(
                        bits_nan(&a) == want && bits_nan(&b) == want,
                        "prod len {len} special {special} f32 {f32_} at {level:?}"
                    );
                }
            }
        }
    }
    vmath::set_level(restore);
}

/// softmax, log_softmax and logsumexp down columns give, staged or not (a tile copied to
/// a contiguous stage when it fits in `STAGE_BYTES`, read in place when it does not),
/// the bits of one column at a time: the max, each exponential, the sum in order in
/// float64, then one product by the sum's reciprocal (as torch) or difference per
/// element.
#[test]
fn softmax_down_columns_staged_or_not_gives_one_columns_bits() {
    use super::softmax::{Real, softmax as softmax_of};
    fn check<T: Real + std::fmt::Debug>(shape: &[usize], dim: usize) {
        let v: Vec<T> = values(shape.iter().product())
            .iter()
            .map(|&x| T::from_f64(x * 1e-2))
            .collect();
        let red = shape[dim];
        let inner: usize = shape[dim + 1..].iter().product();
        let outer: usize = shape[..dim].iter().product();
        let l = Layout::contiguous(shape);
        let lse = logsumexp(&T::into_buffer(v.clone()), &l, &[dim]).unwrap();
        let lse = T::slice(&lse);
        let bits = |x: T| x.to_f64().to_bits();
        for log in [false, true] {
            let got = softmax_of(&v, shape, dim, log);
            for o in 0..outer {
                for i in 0..inner {
                    let at = |r: usize| (o * red + r) * inner + i;
                    let m =
                        (0..red)
                            .map(|r| v[at(r)])
                            .fold(
                                T::from_f64(f64::NEG_INFINITY),
                                |a, b| {
                                    if b > a { b } else { a }
                                },
                            );
                    let mut e = vec![T::default(); red];
                    for r in 0..red {
                        let mut one = [std::mem::MaybeUninit::uninit()];
                        T::exp_slice(&[v[at(r)] - m], &mut one);
                        // SAFETY: exp_slice initialised it.
                        e[r] = unsafe { one[0].assume_init() };
                    }
                    let s: f64 = e.iter().fold(0.0, |a, &x| a + x.to_f64());
                    let (f, ls) = (T::from_f64(s).recip(), T::from_f64(s).ln());
                    for r in 0..red {
                        let want = if log { (v[at(r)] - m) - ls } else { e[r] * f };
                        assert!(
                            bits(got[at(r)]) == bits(want),
                            "{shape:?} dim {dim} log {log}: {:?} != {want:?}",
                            got[at(r)]
                        );
                    }
                    let want = ls + m;
                    assert_eq!(bits(lse[o * inner + i]), bits(want), "{shape:?} logsumexp");
                }
            }
        }
    }
    // staged (the tile fits the stage; softmax stages from 32 KiB, logsumexp from 256) ...
    check::<f32>(&[300, 40], 0);
    check::<f32>(&[257, 100], 0);
    check::<f32>(&[2048, 64], 0);
    check::<f64>(&[600, 64], 0);
    // ... and read in place (a small tile; one of 16 columns of 70,000 rows is 4.5 MB)
    check::<f64>(&[2, 300, 5], 1);
    check::<f32>(&[70_000, 16], 0);
    check::<f64>(&[40_000, 4], 0);
}

/// Each level's row-product kernel, forced (the level in use may skip one: Zen 4 takes
/// AVX2's for AVX-512's), gives the plain lane order's bits, float32 and float64, with
/// zeros, infinities and NaNs and lengths around the 32 lanes.
#[test]
fn every_row_product_kernel_gives_the_lane_order_bits() {
    use crate::backend::cpu::vmath::{self, Level};
    for level in vmath::supported() {
        for len in [1usize, 31, 32, 33, 100, 1000, 2048] {
            for special in [0usize, 29, 997] {
                let v = mixed(len, len as u64 + special as u64, special);
                let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
                let want32 =
                    prod_run_reference(&v32.iter().map(|&x| f64::from(x)).collect::<Vec<_>>());
                let want64 = prod_run_reference(&v);
                // SAFETY: `supported` lists only levels the CPU runs.
                let (g32, g64) = unsafe {
                    (
                        super::simd::prod_row_at(level, &v32),
                        super::simd::prod_row_at(level, &v),
                    )
                };
                let same = |g: Option<f64>, w: f64| match g {
                    Some(g) => g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                    None => level == Level::Baseline,
                };
                assert!(
                    same(g32, want32),
                    "f32 len {len} special {special} at {level:?}"
                );
                assert!(
                    same(g64, want64),
                    "f64 len {len} special {special} at {level:?}"
                );
            }
        }
    }
}

/// mse_loss's fused Σ(a - b)² gives the bits of `sum` and `mean` of the tensor of
/// squared differences, at every level, around the block size and past it, with zeros,
/// infinities and NaNs; it declines other layouts and dtypes.
#[test]
fn fused_squared_differences_give_the_bits_of_the_sum_of_squares() {
    use super::fold::ROW_BLOCK;
    use crate::backend::cpu::vmath;
    let restore = vmath::level();
    for n in [
        1usize,
        5,
        33,
        1000,
        ROW_BLOCK,
        ROW_BLOCK + 1,
        3 * ROW_BLOCK + 7,
    ] {
        for special in [0usize, 997] {
            let a = mixed(n, n as u64, special);
            let b = mixed(n, n as u64 + 1, 0);
            for f32_ in [true, false] {
                let (ba, bb, sq) = if f32_ {
                    let (x, y): (Vec<f32>, Vec<f32>) = (
                        a.iter().map(|&v| v as f32).collect(),
                        b.iter().map(|&v| v as f32).collect(),
                    );
                    let sq: Vec<f32> = x.iter().zip(&y).map(|(&p, &q)| (p - q) * (p - q)).collect();
                    (
                        Buffer::F32(x.into()),
                        Buffer::F32(y.into()),
                        Buffer::F32(sq.into()),
                    )
                } else {
                    let sq: Vec<f64> = a.iter().zip(&b).map(|(&p, &q)| (p - q) * (p - q)).collect();
                    (
                        Buffer::F64(a.clone().into()),
                        Buffer::F64(b.clone().into()),
                        Buffer::F64(sq.into()),
                    )
                };
                let l = Layout::contiguous(&[n]);
                for level in vmath::supported() {
                    vmath::set_level(level);
                    for (op, mean) in [(ReduceOp::Sum, false), (ReduceOp::Mean, true)] {
                        let want = bits_nan(&reduce(op, &sq, &l, &[0]));
                        let got = bits_nan(&sq_diff_sum(&ba, &l, &bb, &l, mean).unwrap());
                        assert_eq!(
                            got, want,
                            "n {n} special {special} f32 {f32_} mean {mean} at {level:?}"
                        );
                    }
                }
            }
        }
    }
    vmath::set_level(restore);
    // not contiguous, shapes or dtypes that differ: declined (the op composes)
    let x = Buffer::F32(vec![1.0; 6].into());
    let l = Layout::contiguous(&[2, 3]);
    let t = Layout::contiguous(&[3, 2]).transpose(0, 1).unwrap();
    assert_eq!(t.shape, l.shape);
    assert!(sq_diff_sum(&x, &l, &x, &t, true).is_none());
    assert!(sq_diff_sum(&x, &l, &x, &Layout::contiguous(&[6]), true).is_none());
    let y = Buffer::F64(vec![1.0; 6].into());
    assert!(sq_diff_sum(&x, &l, &y, &l, true).is_none());
}

#[test]
fn nansum_is_the_sum_of_the_zeroed_elements_bit_for_bit() {
    // rows, columns, everything and a middle dim, float32 and float64, NaN among the
    // elements and an infinity in some runs (the float64 fallback), sizes past a row block
    for &(r, c) in &[(3usize, 5usize), (64, 700), (3, 40_000), (1000, 33)] {
        let n = r * c;
        let v: Vec<f64> = (0..n)
            .map(|i| match i % 37 {
                0 => f64::NAN,
                5 if i % 5000 == 5 => f64::INFINITY,
                _ => ((i as f64) * 0.61).sin() * 1e3,
            })
            .collect();
        let z: Vec<f64> = v
            .iter()
            .map(|&x| if x.is_nan() { 0.0 } else { x })
            .collect();
        let l = Layout::contiguous(&[r, c]);
        for dims in [vec![0usize], vec![1], vec![0, 1]] {
            for f32_ in [false, true] {
                let buf = |v: &[f64]| {
                    if f32_ {
                        Buffer::F32(v.iter().map(|&x| x as f32).collect::<Vec<_>>().into())
                    } else {
                        Buffer::F64(v.to_vec().into())
                    }
                };
                let got = reduce(ReduceOp::NanSum, &buf(&v), &l, &dims);
                let want = reduce(ReduceOp::Sum, &buf(&z), &l, &dims);
                let bits = |b: &Buffer| -> Vec<u64> {
                    match b {
                        Buffer::F32(x) => x.iter().map(|v| u64::from(v.to_bits())).collect(),
                        Buffer::F64(x) => x.iter().map(|v| v.to_bits()).collect(),
                        _ => panic!("dtype"),
                    }
                };
                assert_eq!(bits(&got), bits(&want), "{r}x{c} {dims:?} f32={f32_}");
            }
        }
    }
    // integers: the sum
    let l = Layout::contiguous(&[3]);
    let i = Buffer::I64(vec![1, 2, 3].into());
    assert!(matches!(reduce(ReduceOp::NanSum, &i, &l, &[0]), Buffer::I64(v) if v[..] == [6]));
}

#[test]
fn nansum_of_3d_and_transposed_layouts_is_the_sum_of_the_zeroed_elements() {
    // a middle dim, the outer and inner dims together, everything; contiguous and stored
    // transposed in the last two dims (fold's general path); float32 runs with +inf (the
    // float64 fallback, which must skip NaN as the float32 chunks do)
    let shape = [4usize, 50, 33];
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n)
        .map(|i| match i % 29 {
            0 => f64::NAN,
            7 if i % 1000 == 7 => f64::INFINITY,
            _ => ((i as f64) * 0.37).cos() * 300.0,
        })
        .collect();
    let z: Vec<f64> = v
        .iter()
        .map(|&x| if x.is_nan() { 0.0 } else { x })
        .collect();
    let contiguous = Layout::contiguous(&shape);
    let (tv, strided) = strided_copy(&v, &shape);
    let (tz, _) = strided_copy(&z, &shape);
    let bits = |b: &Buffer| -> Vec<u64> {
        match b {
            Buffer::F32(x) => x.iter().map(|v| u64::from(v.to_bits())).collect(),
            Buffer::F64(x) => x.iter().map(|v| v.to_bits()).collect(),
            _ => panic!("dtype"),
        }
    };
    for (vals, zeroed, l) in [(&v, &z, &contiguous), (&tv, &tz, &strided)] {
        for dims in [vec![1usize], vec![0, 2], vec![2], vec![0, 1, 2]] {
            for f32_ in [false, true] {
                let buf = |v: &[f64]| {
                    if f32_ {
                        Buffer::F32(v.iter().map(|&x| x as f32).collect::<Vec<_>>().into())
                    } else {
                        Buffer::F64(v.to_vec().into())
                    }
                };
                let got = reduce(ReduceOp::NanSum, &buf(vals), l, &dims);
                let want = reduce(ReduceOp::Sum, &buf(zeroed), l, &dims);
                assert_eq!(bits(&got), bits(&want), "{dims:?} f32={f32_}");
            }
        }
    }
}
