//! Triangular solves (LAPACK's `trsm` from the left) on row-major matrices.

use super::Real;
use crate::backend::cpu::matmul::MatView;

/// Triangles of at most this many rows are solved as row axpys; larger ones split in
/// two, the off-diagonal block's update running on the GEMM.
const BASE: usize = 16;

/// Solves `op(A) X = B` in place for the `n × k` row-major `b`, where `A` is the `n × n`
/// row-major triangle of `a` (`upper`, or lower; the other triangle is never read) and
/// `op(A)` is `A` or, with `transpose`, `Aᵀ`. With `unit` the diagonal is taken as ones
/// (and not read). A zero on the diagonal gives infinities and NaNs, as LAPACK's (no
/// check here).
///
/// Recursive on the rows: with `op(A)` lower, the top half is solved, the bottom half's
/// right-hand sides updated with `B2 -= op(A)21 X1` on the project's GEMM, and the bottom
/// half solved (upper: the same from the bottom up). Triangles of at most [`BASE`] rows
/// run the plain loop, whose updates are whole-row axpys of `b`. The GEMM multiplies
/// zeros the loop skips, so an infinite entry can give NaN where the loop gave a
/// number (`0·∞`), as a BLAS `trsm` that does not test for zeros does.
pub(crate) fn solve_in_place<T: Real>(
    a: &[T],
    n: usize,
    b: &mut [T],
    k: usize,
    upper: bool,
    unit: bool,
    transpose: bool,
) {
    if n == 0 || k == 0 {
        return;
    }
    let t = Triangle {
        a,
        n,
        upper,
        unit,
        transpose,
    };
    t.solve(0, n, &mut b[..n * k], k);
}

/// One triangle and how it is applied.
struct Triangle<'a, T> {
    a: &'a [T],
    n: usize,
    upper: bool,
    unit: bool,
    transpose: bool,
}

impl<T: Real> Triangle<'_, T> {
    /// Whether `op(A)` is lower triangular (rows solved first to last).
    fn forward(&self) -> bool {
        self.upper == self.transpose
    }

    /// `op(A)[r0..r0 + rows, c0..c0 + cols]` as a view of `a` (a transposed view reads
    /// with a column stride of `n`).
    fn view(&self, r0: usize, c0: usize, rows: usize, cols: usize) -> MatView<'_, T> {
        let (offset, row_stride, col_stride) = if self.transpose {
            (c0 * self.n + r0, 1, self.n)
        } else {
            (r0 * self.n + c0, self.n, 1)
        };
        MatView {
            data: self.a,
            offset,
            rows,
            cols,
            row_stride,
            col_stride,
        }
    }

    /// Solves rows `r0..r1` of the system, `b` holding those rows of B (`k` each) with
    /// every update from the rows solved before them already in.
    fn solve(&self, r0: usize, r1: usize, b: &mut [T], k: usize) {
        let h = r1 - r0;
        if h <= BASE {
            self.solve_plain(r0, r1, b, k);
            return;
        }
        let mid = r0 + h / 2;
        let (b1, b2) = b.split_at_mut((mid - r0) * k);
        if self.forward() {
            self.solve(r0, mid, b1, k);
            self.update(b2, self.view(mid, r0, r1 - mid, mid - r0), b1, k);
            self.solve(mid, r1, b2, k);
        } else {
            self.solve(mid, r1, b2, k);
            self.update(b1, self.view(r0, mid, mid - r0, r1 - mid), b2, k);
            self.solve(r0, mid, b1, k);
        }
    }

    /// `target -= block · solved` (`block` a view of `op(A)`, both row blocks `k` wide):
    /// `solved` is negated in place for the GEMM, which only adds, and restored after.
    fn update(&self, target: &mut [T], block: MatView<'_, T>, solved: &mut [T], k: usize) {
        solved.iter_mut().for_each(|x| *x = -*x);
        let x = MatView {
            data: &*solved,
            offset: 0,
            rows: block.cols,
            cols: k,
            row_stride: k,
            col_stride: 1,
        };
        super::gemm_add_to(target, k, block, x, true);
        solved.iter_mut().for_each(|x| *x = -*x);
    }

    /// The plain loop on rows `r0..r1` (`b` those rows of B).
    fn solve_plain(&self, r0: usize, r1: usize, b: &mut [T], k: usize) {
        let (a, n, unit, transpose) = (self.a, self.n, self.unit, self.transpose);
        let forward = self.forward();
        let h = r1 - r0;
        // element (i, j) of the triangle's rows and columns r0..r1
        let at = |i: usize, j: usize| a[(r0 + i) * n + r0 + j];
        let order: Box<dyn Iterator<Item = usize>> = if forward {
            Box::new(0..h)
        } else {
            Box::new((0..h).rev())
        };
        for i in order {
            if !transpose {
                // row i of A: x_i = (b_i - Σ_j A[i, j] x_j) / A[i, i] over the solved j
                let js = if forward { 0..i } else { i + 1..h };
                let (solved_lo, rest) = b.split_at_mut(i * k);
                let (bi, solved_hi) = rest.split_at_mut(k);
                for j in js {
                    let c = at(i, j);
                    if c == T::ZERO {
                        continue;
                    }
                    let xj = if j < i {
                        &solved_lo[j * k..(j + 1) * k]
                    } else {
                        &solved_hi[(j - i - 1) * k..(j - i) * k]
                    };
                    for (x, &y) in bi.iter_mut().zip(xj) {
                        *x -= c * y;
                    }
                }
                if !unit {
                    let d = at(i, i);
                    bi.iter_mut().for_each(|x| *x /= d);
                }
            } else {
                // Aᵀ: x_i is final once the earlier rows' updates are in; it then updates
                // the rows still to solve with column i of Aᵀ, which is row i of A
                let (lo, rest) = b.split_at_mut(i * k);
                let (bi, hi) = rest.split_at_mut(k);
                if !unit {
                    let d = at(i, i);
                    bi.iter_mut().for_each(|x| *x /= d);
                }
                let targets = if forward { i + 1..h } else { 0..i };
                for j in targets {
                    let c = at(i, j);
                    if c == T::ZERO {
                        continue;
                    }
                    let bj = if j < i {
                        &mut lo[j * k..(j + 1) * k]
                    } else {
                        &mut hi[(j - i - 1) * k..(j - i) * k]
                    };
                    for (x, &y) in bj.iter_mut().zip(bi.iter()) {
                        *x -= c * y;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(len: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..len)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn blocked_matches_the_loop_in_every_case() {
        for &n in &[1, 2, BASE - 1, BASE, BASE + 1, 2 * BASE + 3, 70, 130] {
            for &k in &[1, 3, 8, 33, n] {
                for upper in [false, true] {
                    for transpose in [false, true] {
                        for unit in [false, true] {
                            // a well-conditioned triangle, NaN in what must not be read
                            let mut a = sample(n * n, (n * 7 + k) as u64);
                            for i in 0..n {
                                for j in 0..n {
                                    let other = if upper { j < i } else { j > i };
                                    if other || (unit && i == j) {
                                        a[i * n + j] = f64::NAN;
                                    } else if i == j {
                                        a[i * n + j] = 2.0 + a[i * n + j].abs();
                                    } else {
                                        a[i * n + j] /= (n as f64).sqrt();
                                    }
                                }
                            }
                            let b = sample(n * k, 3 + n as u64);
                            let mut x = b.clone();
                            solve_in_place(&a, n, &mut x, k, upper, unit, transpose);
                            let mut want = b.clone();
                            let t = Triangle {
                                a: &a,
                                n,
                                upper,
                                unit,
                                transpose,
                            };
                            t.solve_plain(0, n, &mut want, k);
                            for (p, q) in x.iter().zip(&want) {
                                assert!(
                                    (p - q).abs() < 1e-12 * (1.0 + q.abs()),
                                    "n {n} k {k} upper {upper} transpose {transpose} unit {unit}: {p} vs {q}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn blocked_singular_and_nan_finish() {
        let n = 60;
        let mut a = sample(n * n, 9);
        a[30 * n + 30] = 0.0;
        let mut b = sample(n * 4, 10);
        solve_in_place(&a, n, &mut b, 4, false, false, false);
        assert!(b[..30 * 4].iter().all(|x| x.is_finite()));
        assert!(b[30 * 4..].iter().any(|x| !x.is_finite()));
        let mut b = vec![f64::NAN; n * 4];
        solve_in_place(&a, n, &mut b, 4, true, false, true);
        assert!(b.iter().all(|x| x.is_nan()));
    }

    #[test]
    fn all_four_cases() {
        let n = 4;
        let k = 3;
        // a dense matrix: each case reads only its triangle
        let a: Vec<f64> = (0..n * n)
            .map(|i| 1.0 + (i as f64) * 0.37 % 2.0 + if i % (n + 1) == 0 { 3.0 } else { 0.0 })
            .collect();
        let x: Vec<f64> = (0..n * k).map(|i| (i as f64).sin()).collect();
        for upper in [false, true] {
            for transpose in [false, true] {
                for unit in [false, true] {
                    // op(T) with T the triangle
                    let t = |i: usize, j: usize| -> f64 {
                        let (r, c) = if transpose { (j, i) } else { (i, j) };
                        if r == c {
                            if unit { 1.0 } else { a[r * n + c] }
                        } else if (c > r) == upper {
                            a[r * n + c]
                        } else {
                            0.0
                        }
                    };
                    let mut b = vec![0.0; n * k];
                    for i in 0..n {
                        for j in 0..n {
                            for c in 0..k {
                                b[i * k + c] += t(i, j) * x[j * k + c];
                            }
                        }
                    }
                    solve_in_place(&a, n, &mut b, k, upper, unit, transpose);
                    for (p, q) in b.iter().zip(&x) {
                        assert!(
                            (p - q).abs() < 1e-12,
                            "upper {upper} transpose {transpose} unit {unit}"
                        );
                    }
                }
            }
        }
    }
}
