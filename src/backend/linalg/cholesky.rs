//! Cholesky factorization (LAPACK's `potrf`, lower) on row-major matrices.

use super::Real;
use crate::backend::cpu::matmul::{MatView, splits};

/// Columns per block of the blocked factorization: the GEMM's updates have k = j0 and
/// 32 columns, and the column loop's dot products stay under 32 elements. Not tuned by
/// measurement yet (see `lu::PANEL`).
const NB: usize = 32;

/// Overwrites the lower triangle of the `n × n` row-major `a` with `L`, `A = L Lᵀ`,
/// reading only A's lower triangle, and zeroes the strict upper triangle. Returns
/// `info`: 0, or the 1-based order of the first leading minor that is not positive
/// definite (a pivot `≤ 0` or NaN), where it stops, as LAPACK: the columns before it
/// hold L, its diagonal entry the failed pivot, and the rest of the lower triangle A's
/// entries as they were.
///
/// Blocked, left-looking by block columns of [`NB`]: block column J (rows `j0..n`) is
/// brought up to date with every earlier column in one product on the project's GEMM,
/// `W = A[j0.., J] − L[j0.., ..j0] · L[J, ..j0]ᵀ`, into a scratch block; W's diagonal
/// block is then factored by the plain column loop and the rows below it solved with
/// that block's L ([`solve_below`]). Only the finished columns are written back, so a
/// failure leaves the columns from the failing one on exactly as the plain loop leaves
/// them. In exact arithmetic
/// the same factor and `info` as the loop (rounding differs in the last places).
pub(crate) fn factor_lower<T: Real>(a: &mut [T], n: usize) -> i64 {
    let (mut w, mut neg, mut l11, mut t) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for j0 in (0..n).step_by(NB) {
        let jb = NB.min(n - j0);
        let rows = n - j0;
        // −L[J, ..j0]ᵀ, j0 × jb: the GEMM only adds
        neg.clear();
        neg.extend(
            (0..j0)
                .flat_map(|p| (0..jb).map(move |c| (p, c)))
                .map(|(p, c)| -a[(j0 + c) * n + p]),
        );
        w.clear();
        w.resize(rows * jb, T::ZERO);
        let view = |offset: usize, rows: usize, cols: usize| MatView {
            data: &*a,
            offset,
            rows,
            cols,
            row_stride: n,
            col_stride: 1,
        };
        let b = MatView {
            data: &neg[..],
            offset: 0,
            rows: j0,
            cols: jb,
            row_stride: jb,
            col_stride: 1,
        };
        let parallel = splits(rows, jb, j0) && crate::runtime::intra_op_parallel();
        T::gemm_start(
            view(j0 * n + j0, rows, jb),
            view(j0 * n, rows, j0),
            b,
            as_uninit(&mut w),
            parallel,
        );
        let done = factor_block_column(&mut w, jb, jb);
        let cols = done.unwrap_or(jb);
        if rows > jb && cols > 0 {
            solve_below(&mut w, rows, jb, cols, &mut l11, &mut t);
        }
        // write back the finished columns (rows at or below the diagonal)
        for r in 0..rows {
            let c_end = cols.min(r + 1);
            a[(j0 + r) * n + j0..(j0 + r) * n + j0 + c_end]
                .copy_from_slice(&w[r * jb..r * jb + c_end]);
        }
        if let Some(c) = done {
            // the failed pivot, as the loop leaves it
            a[(j0 + c) * n + j0 + c] = w[c * jb + c];
            zero_upper(a, n);
            return (j0 + c) as i64 + 1;
        }
    }
    zero_upper(a, n);
    0
}

/// The plain column loop on a block column `w` (`rows × jb`, row-major, its top `jb`
/// rows the diagonal block) whose earlier columns' contributions are already
/// subtracted: for each column the pivot `w_cc − Σ L_ck²` over the block's columns,
/// then the entries below it. Returns the failing column (its pivot left in `w_cc`),
/// or `None`.
fn factor_block_column<T: Real>(w: &mut [T], rows: usize, jb: usize) -> Option<usize> {
    for c in 0..jb {
        let (head, tail) = w.split_at_mut((c + 1) * jb);
        let row_c = &mut head[c * jb..];
        let d = row_c[c] - dot(&row_c[..c], &row_c[..c]);
        // (`!(d > 0)` also catches NaN)
        if d.partial_cmp(&T::ZERO) != Some(std::cmp::Ordering::Greater) {
            row_c[c] = d;
            return Some(c);
        }
        let lcc = d.sqrt();
        row_c[c] = lcc;
        let lc = &row_c[..c];
        for row_i in tail.chunks_exact_mut(jb).take(rows - c - 1) {
            row_i[c] = (row_i[c] - dot(&row_i[..c], lc)) / lcc;
        }
    }
    None
}

/// The rows of a block column `w` (`rows × jb`) below its factored diagonal block, for
/// the first `cols` columns: `X L11ᵀ = W21`, solved as `L11 Xᵀ = W21ᵀ` by
/// [`super::triangular::solve_in_place`] on transposed copies (`l11`, `t`: scratch),
/// whose updates are axpys along the `rows − jb` rows instead of the column loop's short
/// dot products. The same arithmetic as the loop's, summed in another order.
fn solve_below<T: Real>(
    w: &mut [T],
    rows: usize,
    jb: usize,
    cols: usize,
    l11: &mut Vec<T>,
    t: &mut Vec<T>,
) {
    let r = rows - jb;
    l11.clear();
    l11.extend((0..cols).flat_map(|i| w[i * jb..i * jb + cols].iter().copied()));
    t.clear();
    t.resize(cols * r, T::ZERO);
    for i in 0..r {
        for c in 0..cols {
            t[c * r + i] = w[(jb + i) * jb + c];
        }
    }
    super::triangular::solve_in_place(l11, cols, t, r, false, false, false);
    for i in 0..r {
        for c in 0..cols {
            w[(jb + i) * jb + c] = t[c * r + i];
        }
    }
}

/// `out` as possibly uninitialised memory for [`Real::gemm_start`] (every element is
/// written, none read).
fn as_uninit<T>(out: &mut [T]) -> &mut [std::mem::MaybeUninit<T>] {
    // SAFETY: MaybeUninit<T> has T's layout, and every T is a valid MaybeUninit<T>; the
    // GEMM only writes valid values.
    unsafe { &mut *(std::ptr::from_mut(out) as *mut [std::mem::MaybeUninit<T>]) }
}

/// `Σ x_k y_k` in eight interleaved partial sums (one chain would wait on the adder's
/// latency at every element: the factorization's inner loop is these dot products).
fn dot<T: Real>(x: &[T], y: &[T]) -> T {
    let mut acc = [T::ZERO; 8];
    let (xc, yc) = (x.chunks_exact(8), y.chunks_exact(8));
    let (xr, yr) = (xc.remainder(), yc.remainder());
    for (a, b) in xc.zip(yc) {
        for l in 0..8 {
            acc[l] = acc[l] + a[l] * b[l];
        }
    }
    let mut tail = T::ZERO;
    for (&a, &b) in xr.iter().zip(yr) {
        tail = tail + a * b;
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// Zeroes the strict upper triangle (what torch returns there, whether or not the
/// factorization completed).
fn zero_upper<T: Real>(a: &mut [T], n: usize) {
    for i in 0..n {
        a[i * n + i + 1..(i + 1) * n]
            .iter_mut()
            .for_each(|x| *x = T::ZERO);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unblocked `potrf` as it was before the blocking: the reference.
    fn factor_unblocked(a: &mut [f64], n: usize) -> i64 {
        for j in 0..n {
            let d = a[j * n + j] - dot(&a[j * n..j * n + j], &a[j * n..j * n + j]);
            if d.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
                a[j * n + j] = d;
                zero_upper(a, n);
                return j as i64 + 1;
            }
            let ljj = d.sqrt();
            a[j * n + j] = ljj;
            for i in j + 1..n {
                let s = dot(&a[i * n..i * n + j], &a[j * n..j * n + j]);
                a[i * n + j] = (a[i * n + j] - s) / ljj;
            }
        }
        zero_upper(a, n);
        0
    }

    /// `B Bᵀ + n I` for a pseudo-random `B`, with NaN in the strict upper triangle.
    fn spd(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        let b: Vec<f64> = (0..n * n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
            })
            .collect();
        let mut a = vec![f64::NAN; n * n];
        for i in 0..n {
            for j in 0..=i {
                a[i * n + j] = (0..n).map(|p| b[i * n + p] * b[j * n + p]).sum::<f64>()
                    + if i == j { n as f64 } else { 0.0 };
            }
        }
        a
    }

    #[test]
    fn float32_factors_in_float32_close_to_float64_with_the_same_info() {
        for n in [1, 5, 31, 32, 33, 100, 130] {
            let a = spd(n, 40 + n as u64);
            let a32: Vec<f32> = a.iter().map(|&v| v as f32).collect();
            let mut l32 = a32.clone();
            let info = factor_lower(&mut l32, n);
            let mut l64: Vec<f64> = a32.iter().map(|&v| f64::from(v)).collect();
            assert_eq!(info, factor_lower(&mut l64, n));
            let scale = l64.iter().fold(1.0f64, |s, x| s.max(x.abs()));
            for (x, y) in l32.iter().zip(&l64) {
                assert!(
                    (f64::from(*x) - y).abs() <= 1e-5 * scale,
                    "n {n}: {x} vs {y}"
                );
            }
            // not positive definite at the same minor
            let mut bad = a32.clone();
            bad[(n / 2) * n + n / 2] = -1.0;
            let mut bad64: Vec<f64> = bad.iter().map(|&v| f64::from(v)).collect();
            assert_eq!(factor_lower(&mut bad, n), factor_lower(&mut bad64, n));
        }
    }

    /// Factors `a` both ways, asserts the same info and entries within `tol` relative to
    /// the largest, and returns (blocked factor, info).
    fn check_against_unblocked(a: &[f64], n: usize) -> (Vec<f64>, i64) {
        let (mut l, mut r) = (a.to_vec(), a.to_vec());
        let info = factor_lower(&mut l, n);
        assert_eq!(info, factor_unblocked(&mut r, n), "n {n}");
        let scale = r.iter().fold(1.0f64, |s, x| s.max(x.abs()));
        for (i, (x, y)) in l.iter().zip(&r).enumerate() {
            assert!(
                (x - y).abs() <= 1e-12 * scale || x == y || (x.is_nan() && y.is_nan()),
                "n {n} element {i}: {x} vs {y}"
            );
        }
        (l, info)
    }

    #[test]
    fn blocked_matches_unblocked_around_block_sizes() {
        for &n in &[1, 2, NB - 1, NB, NB + 1, 2 * NB + 3, 130] {
            let a = spd(n, n as u64);
            let (l, info) = check_against_unblocked(&a, n);
            assert_eq!(info, 0);
            // ‖L Lᵀ − A‖ / ‖A‖ over the lower triangle
            let (mut num, mut den) = (0.0f64, 0.0f64);
            for i in 0..n {
                for j in 0..=i {
                    let v: f64 = (0..=j).map(|p| l[i * n + p] * l[j * n + p]).sum();
                    num += (v - a[i * n + j]).powi(2);
                    den += a[i * n + j].powi(2);
                }
                assert!(l[i * n + i + 1..(i + 1) * n].iter().all(|&x| x == 0.0));
            }
            assert!((num / den).sqrt() < 1e-14, "n {n}");
        }
    }

    #[test]
    fn blocked_failures_leave_what_the_loop_leaves() {
        let n = 100;
        for &bad in &[0, 5, NB - 1, NB, NB + 1, 44, 99] {
            let mut a = spd(n, 3);
            a[bad * n + bad] = -1e4;
            let (_, info) = check_against_unblocked(&a, n);
            assert_eq!(info, bad as i64 + 1);
            let mut a = spd(n, 4);
            a[bad * n + bad] = f64::NAN;
            let (_, info) = check_against_unblocked(&a, n);
            assert_eq!(info, bad as i64 + 1);
        }
        // NaN off the diagonal: the pivots after it are NaN, the first one fails there
        let mut a = spd(n, 5);
        a[70 * n + 3] = f64::NAN;
        let (_, info) = check_against_unblocked(&a, n);
        assert_eq!(info, 71);
        let mut a = vec![f64::INFINITY; n * n];
        assert_eq!(factor_lower(&mut a, n), 2);
    }

    #[test]
    fn factors_and_refuses() {
        let n = 4;
        let b: Vec<f64> = (0..n * n).map(|i| ((i * 7 % 5) as f64) - 2.0).collect();
        // A = B Bᵀ + n I, with garbage in the strict upper triangle (never read)
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                a[i * n + j] = (0..n).map(|p| b[i * n + p] * b[j * n + p]).sum::<f64>()
                    + if i == j { n as f64 } else { 0.0 };
            }
        }
        let full = a.clone();
        for i in 0..n {
            for j in i + 1..n {
                a[i * n + j] = f64::NAN;
            }
        }
        assert_eq!(factor_lower(&mut a, n), 0);
        for i in 0..n {
            for j in 0..n {
                let v: f64 = (0..n).map(|p| a[i * n + p] * a[j * n + p]).sum();
                assert!((v - full[i * n + j]).abs() < 1e-12);
            }
        }
        let mut bad = vec![1.0, 2.0, 2.0, 1.0];
        assert_eq!(factor_lower(&mut bad, 2), 2);
        let mut nan = vec![f64::NAN, 0.0, 0.0, 1.0];
        assert_eq!(factor_lower(&mut nan, 2), 1);
    }
}
