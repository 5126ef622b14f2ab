//! LU factorization with partial pivoting (LAPACK's `getrf`) and the solves that use it
//! (`getrs`), on row-major matrices.

/// Factors the `m × n` row-major matrix `a` in place as `P L U` (L unit lower
/// trapezoidal below the diagonal, U upper trapezoidal on and above it), as LAPACK's
/// `getrf`: for each column `k < min(m, n)` the row with the largest magnitude at or
/// below the diagonal (the first of equal ones) is swapped into row `k` and `piv[k]` is
/// its 1-based index. Without `pivot` no row is swapped (`piv[k] = k + 1`). Returns
/// `info`: 0, or the 1-based index of the first exactly zero pivot (the elimination
/// goes on past it, leaving that column of L unscaled, as LAPACK does).
///
/// Recursive (Toledo's left/right split, as LAPACK's `getrf2`): the left half of the
/// columns is factored, U12 solved with the unit lower L11, the trailing `A22 -= L21·U12`
/// done on the project's GEMM, then the right half factored; panels of at most
/// [`PANEL`] columns run the plain loop ([`Blocked::panel`]), whose row swaps move whole
/// rows. It is the unblocked algorithm's arithmetic reordered: in exact arithmetic the
/// same pivots, `info` and factors (rounding differs in the last places, so a near tie
/// may pick another row). A column below a zero pivot takes part in no update, as in
/// the loop (see [`Blocked::unscaled`]). The one visible difference is with infinite
/// entries: the loop skips a zero multiplier, the GEMM multiplies it (`0·∞` is NaN, as
/// in MKL's blocked `getrf`).
pub fn factor(a: &mut [f64], m: usize, n: usize, piv: &mut [i64], pivot: bool) -> i64 {
    let k_max = m.min(n);
    debug_assert!(a.len() >= m * n && piv.len() >= k_max);
    let mut lu = Blocked {
        a,
        m,
        n,
        piv,
        pivot,
        info: 0,
        unscaled: Vec::new(),
    };
    lu.columns(0, k_max);
    if n > k_max && k_max > 0 {
        // a wide matrix: U's columns right of the square part, L⁻¹ A[:, m..]
        solve_unit_lower(lu.a, n, 0, k_max, k_max, n);
    }
    lu.restore_unscaled();
    lu.info
}

/// Panels of at most this many columns are factored by the plain loop: two AVX-512
/// vectors of a row, and a recursion that reaches the GEMM with k ≥ 16. Not tuned by
/// measurement yet (the machine of the check run was too loaded to separate 16 from
/// 32; docs/benchmarks.md, the blocked LU's check run).
const PANEL: usize = 16;

/// Triangular solves with L11 of at most this many rows run as row axpys.
const SOLVE_BASE: usize = 16;

/// The state of one blocked factorization.
struct Blocked<'a> {
    /// The `m × n` row-major matrix, factored in place.
    a: &'a mut [f64],
    m: usize,
    n: usize,
    piv: &'a mut [i64],
    pivot: bool,
    /// The first zero pivot (1-based), or 0.
    info: i64,
    /// The columns below a zero pivot that held something other than zeros (NaN, or
    /// anything at all without pivoting): `(k, column k's rows k+1..m)` as they were
    /// left. The plain loop skips such a column's eliminations; the blocked updates
    /// would use it, so it is zeroed while they run and put back at the end.
    unscaled: Vec<(usize, Vec<f64>)>,
}

impl Blocked<'_> {
    /// Factors columns `c0..c0 + w` (rows `c0..m`), those left of `c0` being factored
    /// and the trailing part carrying every earlier update.
    fn columns(&mut self, c0: usize, w: usize) {
        if w <= PANEL {
            self.panel(c0, c0 + w);
            return;
        }
        let (m, n) = (self.m, self.n);
        let w1 = w / 2;
        let (c1, c2) = (c0 + w1, c0 + w);
        self.columns(c0, w1);
        // U12 = L11⁻¹ A12, then A22 -= L21 U12
        solve_unit_lower(self.a, n, c0, c1, c1, c2);
        super::gemm_sub_within(
            self.a,
            n,
            super::Rect::new(c1, c1, m - c1, c2 - c1),
            super::Rect::new(c1, c0, m - c1, w1),
            super::Rect::new(c0, c1, w1, c2 - c1),
            true,
        );
        self.columns(c1, w - w1);
    }

    /// The plain elimination on columns `c0..c1`: for each column the pivot search over
    /// rows `k..m`, the swap of the whole rows (the columns left of the panel, LAPACK's
    /// `laswp`, and right of it, which the blocked updates read), the multipliers, and
    /// the update of the panel's own columns right of `k`. With one panel of all the
    /// columns it is the whole unblocked `getrf`.
    fn panel(&mut self, c0: usize, c1: usize) {
        let (m, n) = (self.m, self.n);
        let a = &mut *self.a;
        for k in c0..c1 {
            let mut p = k;
            if self.pivot {
                let mut best = a[k * n + k].abs();
                for i in k + 1..m {
                    let v = a[i * n + k].abs();
                    if v > best {
                        best = v;
                        p = i;
                    }
                }
            }
            self.piv[k] = p as i64 + 1;
            if p != k {
                let (top, bottom) = a.split_at_mut(p * n);
                top[k * n..(k + 1) * n].swap_with_slice(&mut bottom[..n]);
            }
            let d = a[k * n + k];
            if d == 0.0 {
                if self.info == 0 {
                    self.info = k as i64 + 1;
                }
                // (`x != 0.0` is true for NaN)
                if (k + 1..m).any(|i| a[i * n + k] != 0.0) {
                    let col = (k + 1..m)
                        .map(|i| std::mem::replace(&mut a[i * n + k], 0.0))
                        .collect();
                    self.unscaled.push((k, col));
                }
                continue;
            }
            let (head, tail) = a.split_at_mut((k + 1) * n);
            let row_k = &head[k * n + k + 1..k * n + c1];
            for row in tail.chunks_exact_mut(n).take(m - k - 1) {
                let l = row[k] / d;
                row[k] = l;
                if l != 0.0 {
                    for (x, &u) in row[k + 1..c1].iter_mut().zip(row_k) {
                        *x -= l * u;
                    }
                }
            }
        }
    }

    /// Puts the columns of [`Blocked::unscaled`] back, each moved by the row swaps of the
    /// later columns as the plain loop's whole-row swaps would have moved it.
    fn restore_unscaled(&mut self) {
        let (m, n) = (self.m, self.n);
        let k_max = m.min(n);
        for (k, col) in std::mem::take(&mut self.unscaled) {
            for (i, v) in (k + 1..m).zip(col) {
                self.a[i * n + k] = v;
            }
            for j in k + 1..k_max {
                let p = self.piv[j] as usize - 1;
                if p != j {
                    self.a.swap(j * n + k, p * n + k);
                }
            }
        }
    }
}

/// Solves `L X = B` in place, `L` the unit lower triangle of rows and columns `r0..r1`
/// of the `ld`-wide `a` and `B` its columns `b0..b1` of the same rows (disjoint from
/// L). Recursive: the top half, `B2 -= L21 X1` on the GEMM, the bottom half; blocks of
/// at most [`SOLVE_BASE`] rows as row axpys (a zero multiplier skipped, as the loop).
fn solve_unit_lower(a: &mut [f64], ld: usize, r0: usize, r1: usize, b0: usize, b1: usize) {
    let h = r1 - r0;
    if h <= SOLVE_BASE || b1 == b0 {
        for i in r0 + 1..r1 {
            let (top, rest) = a.split_at_mut(i * ld);
            let row_i = &mut rest[..ld];
            for j in r0..i {
                let c = row_i[j];
                if c != 0.0 {
                    let xj = &top[j * ld + b0..j * ld + b1];
                    for (x, &y) in row_i[b0..b1].iter_mut().zip(xj) {
                        *x -= c * y;
                    }
                }
            }
        }
        return;
    }
    let mid = r0 + h / 2;
    solve_unit_lower(a, ld, r0, mid, b0, b1);
    super::gemm_sub_within(
        a,
        ld,
        super::Rect::new(mid, b0, r1 - mid, b1 - b0),
        super::Rect::new(mid, r0, r1 - mid, mid - r0),
        super::Rect::new(r0, b0, mid - r0, b1 - b0),
        true,
    );
    solve_unit_lower(a, ld, mid, r1, b0, b1);
}

/// Solves `A X = B` (or `Aᵀ X = B` with `transpose`) for the `n × k` row-major `b`, in
/// place, from `A`'s factors `lu` (`n × n`) and pivots as [`factor`] left them.
pub fn solve(lu: &[f64], piv: &[i64], n: usize, b: &mut [f64], k: usize, transpose: bool) {
    if n == 0 || k == 0 {
        return;
    }
    let swap = |b: &mut [f64], i: usize| {
        let p = piv[i].clamp(1, n as i64) as usize - 1;
        if p != i {
            let (lo, hi) = (i.min(p), i.max(p));
            let (top, bottom) = b.split_at_mut(hi * k);
            top[lo * k..(lo + 1) * k].swap_with_slice(&mut bottom[..k]);
        }
    };
    if !transpose {
        // P L U X = B: the row swaps in order, then L (unit lower), then U
        (0..n).for_each(|i| swap(b, i));
        super::triangular::solve_in_place(lu, n, b, k, false, true, false);
        super::triangular::solve_in_place(lu, n, b, k, true, false, false);
    } else {
        // Uᵀ Lᵀ Pᵀ X = B: Uᵀ, then Lᵀ, then the swaps in reverse order
        super::triangular::solve_in_place(lu, n, b, k, true, false, true);
        super::triangular::solve_in_place(lu, n, b, k, false, true, true);
        (0..n).rev().for_each(|i| swap(b, i));
    }
}

/// The determinant from the factors: the product of U's diagonal, negated once per
/// row swap. `(sign, log|det|)` with `log`: the sign is 0 and the log `-inf` for a
/// singular matrix (torch's slogdet), NaN propagates.
pub fn det(lu: &[f64], piv: &[i64], n: usize) -> f64 {
    let mut d = 1.0;
    for i in 0..n {
        d *= lu[i * n + i];
        if piv[i] != i as i64 + 1 {
            d = -d;
        }
    }
    d
}

/// `(sign, log|det|)` from the factors, as torch's slogdet: the sign is the product of
/// the diagonal's signs (a zero or NaN one counting 0) and the swaps', so a singular
/// matrix gives `(0, -inf)` and a NaN one `(0, NaN)`.
pub fn slogdet(lu: &[f64], piv: &[i64], n: usize) -> (f64, f64) {
    let mut sign = 1.0;
    let mut log = 0.0;
    for i in 0..n {
        let u = lu[i * n + i];
        if u < 0.0 {
            sign = -sign;
        } else if u == 0.0 || u.is_nan() {
            sign = 0.0;
        }
        if piv[i] != i as i64 + 1 {
            sign = -sign;
        }
        log += u.abs().ln();
    }
    (sign + 0.0, log)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for p in 0..k {
                for j in 0..n {
                    c[i * n + j] += a[i * k + p] * b[p * n + j];
                }
            }
        }
        c
    }

    /// P L U rebuilt from the packed factors.
    fn rebuild(lu: &[f64], piv: &[i64], m: usize, n: usize) -> Vec<f64> {
        let k = m.min(n);
        let mut l = vec![0.0; m * k];
        let mut u = vec![0.0; k * n];
        for i in 0..m {
            for j in 0..n {
                if j < i && j < k {
                    l[i * k + j] = lu[i * n + j];
                } else if i < k {
                    u[i * n + j] = lu[i * n + j];
                }
            }
            if i < k {
                l[i * k + i] = 1.0;
            }
        }
        let mut a = matmul(&l, &u, m, k, n);
        for i in (0..k).rev() {
            let p = piv[i] as usize - 1;
            for j in 0..n {
                a.swap(i * n + j, p * n + j);
            }
        }
        a
    }

    fn sample(m: usize, n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..m * n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
            })
            .collect()
    }

    /// The unblocked `getrf` as it was before the blocking: the reference.
    fn factor_unblocked(a: &mut [f64], m: usize, n: usize, piv: &mut [i64], pivot: bool) -> i64 {
        let mut info = 0;
        for k in 0..m.min(n) {
            let mut p = k;
            if pivot {
                let mut best = a[k * n + k].abs();
                for i in k + 1..m {
                    let v = a[i * n + k].abs();
                    if v > best {
                        best = v;
                        p = i;
                    }
                }
            }
            piv[k] = p as i64 + 1;
            if p != k {
                for j in 0..n {
                    a.swap(k * n + j, p * n + j);
                }
            }
            let d = a[k * n + k];
            if d == 0.0 {
                if info == 0 {
                    info = k as i64 + 1;
                }
                continue;
            }
            for i in k + 1..m {
                let l = a[i * n + k] / d;
                a[i * n + k] = l;
                if l != 0.0 {
                    for j in k + 1..n {
                        a[i * n + j] -= l * a[k * n + j];
                    }
                }
            }
        }
        info
    }

    /// Factors `a` both ways; asserts the same info and pivots, factors within `tol`
    /// of each other (relative to the largest entry), and returns the blocked factors.
    fn check_against_unblocked(a: &[f64], m: usize, n: usize, pivot: bool, tol: f64) -> Vec<f64> {
        let k = m.min(n);
        let (mut lu, mut refr) = (a.to_vec(), a.to_vec());
        let (mut piv, mut piv_ref) = (vec![0; k], vec![0; k]);
        let info = factor(&mut lu, m, n, &mut piv, pivot);
        let info_ref = factor_unblocked(&mut refr, m, n, &mut piv_ref, pivot);
        assert_eq!(info, info_ref, "{m}x{n}");
        assert_eq!(piv, piv_ref, "{m}x{n}");
        let scale = refr.iter().fold(1.0f64, |s, x| s.max(x.abs()));
        for (i, (x, y)) in lu.iter().zip(&refr).enumerate() {
            assert!(
                (x - y).abs() <= tol * scale || (x.is_nan() && y.is_nan()) || x == y,
                "{m}x{n} element {i}: {x} vs {y}"
            );
        }
        lu
    }

    /// `‖P L U − A‖_F / ‖A‖_F`.
    fn residual(lu: &[f64], piv: &[i64], a: &[f64], m: usize, n: usize) -> f64 {
        let r = rebuild(lu, piv, m, n);
        let num: f64 = r.iter().zip(a).map(|(x, y)| (x - y) * (x - y)).sum();
        let den: f64 = a.iter().map(|x| x * x).sum();
        (num / den).sqrt()
    }

    #[test]
    fn blocked_matches_unblocked_around_block_sizes() {
        let sizes = [
            1,
            2,
            PANEL - 1,
            PANEL,
            PANEL + 1,
            2 * PANEL + 3,
            4 * PANEL,
            4 * PANEL + 1,
            130,
        ];
        let mut shapes: Vec<(usize, usize)> = sizes.iter().map(|&s| (s, s)).collect();
        shapes.extend([
            (130, 47),
            (47, 130),
            (200, 33),
            (33, 200),
            (70, 69),
            (69, 70),
        ]);
        for (t, &(m, n)) in shapes.iter().enumerate() {
            let a = sample(m, n, 100 + t as u64);
            let lu = check_against_unblocked(&a, m, n, true, 1e-10);
            let mut piv = vec![0; m.min(n)];
            let mut again = a.clone();
            factor(&mut again, m, n, &mut piv, true);
            assert_eq!(again, lu, "deterministic");
            let r = residual(&lu, &piv, &a, m, n);
            assert!(
                r < 1e-14 * (m.max(n) as f64).sqrt().max(1.0),
                "{m}x{n}: {r}"
            );
        }
    }

    #[test]
    fn blocked_without_pivoting() {
        for &(m, n) in &[(40, 40), (90, 60), (60, 90), (130, 130)] {
            // diagonally dominant: no pivoting needed
            let mut a = sample(m, n, 5);
            for i in 0..m.min(n) {
                a[i * n + i] += 2.0 * n as f64;
            }
            let lu = check_against_unblocked(&a, m, n, false, 1e-12);
            let piv: Vec<i64> = (1..=m.min(n) as i64).collect();
            assert!(residual(&lu, &piv, &a, m, n) < 1e-14);
        }
    }

    #[test]
    fn blocked_singular_and_rank_deficient() {
        let n = 70;
        // zero columns at 20 and 45: info 21, the elimination going on past both
        let mut a = sample(n, n, 11);
        for i in 0..n {
            a[i * n + 20] = 0.0;
            a[i * n + 45] = 0.0;
        }
        let lu = check_against_unblocked(&a, n, n, true, 1e-10);
        let mut piv = vec![0; n];
        let mut b = a.clone();
        assert_eq!(factor(&mut b, n, n, &mut piv, true), 21);
        assert!(residual(&lu, &piv, &a, n, n) < 1e-13);
        // rank 40: the last 30 rows zero, so every pivot from 41 on is exactly zero
        let mut a = sample(n, n, 12);
        a[40 * n..].iter_mut().for_each(|x| *x = 0.0);
        let lu = check_against_unblocked(&a, n, n, true, 1e-10);
        let mut b = a.clone();
        assert_eq!(factor(&mut b, n, n, &mut piv, true), 41);
        assert!(residual(&lu, &piv, &a, n, n) < 1e-13);
        // without pivoting a zero pivot with nonzeros below: the column is left
        // unscaled and takes part in no update, as in the loop
        let mut a = sample(n, n, 13);
        for i in 0..n {
            a[i * n + i] += 2.0 * n as f64;
        }
        a[33 * n + 33] = 0.0;
        for j in 0..33 {
            a[33 * n + j] = 0.0;
        }
        let mut b = a.clone();
        assert_eq!(factor(&mut b, n, n, &mut piv, false), 34);
        check_against_unblocked(&a, n, n, false, 1e-10);
    }

    #[test]
    fn blocked_nan_and_infinite_inputs_finish() {
        let n = 80;
        let mut a = sample(n, n, 21);
        a[5 * n + 7] = f64::NAN;
        let mut piv = vec![0; n];
        factor(&mut a, n, n, &mut piv, true);
        assert!(piv.iter().all(|&p| p >= 1 && p <= n as i64));
        assert!(det(&a, &piv, n).is_nan());
        // NaN below a zero pivot: left in place and kept out of the updates, as the
        // loop does (so the same info and pivots)
        let mut a = sample(n, n, 22);
        for i in 0..n {
            a[i * n + 10] = 0.0;
        }
        a[50 * n + 10] = f64::NAN;
        check_against_unblocked(&a, n, n, true, 1e-10);
        let mut a = sample(n, n, 23);
        a[3 * n + 70] = f64::INFINITY;
        a[60 * n + 2] = f64::NEG_INFINITY;
        factor(&mut a, n, n, &mut piv, true);
        let mut a = vec![f64::NAN; n * n];
        assert_eq!(factor(&mut a, n, n, &mut piv, true), 0);
        assert!(a.iter().all(|x| x.is_nan()));
    }

    #[test]
    fn blocked_solves() {
        let n = 130;
        let a = sample(n, n, 31);
        let mut lu = a.clone();
        let mut piv = vec![0; n];
        factor(&mut lu, n, n, &mut piv, true);
        for k in [1, 3, 40, n] {
            let x = sample(n, k, 32 + k as u64);
            for transpose in [false, true] {
                let at: Vec<f64> = (0..n * n).map(|i| a[(i % n) * n + i / n]).collect();
                let mut b = matmul(if transpose { &at } else { &a }, &x, n, n, k);
                solve(&lu, &piv, n, &mut b, k, transpose);
                for (p, q) in b.iter().zip(&x) {
                    assert!((p - q).abs() < 1e-9, "k {k} transpose {transpose}");
                }
            }
        }
    }

    #[test]
    fn factors_rebuild_the_matrix() {
        for &(m, n) in &[(1, 1), (3, 3), (5, 3), (3, 5), (8, 8), (0, 3), (3, 0)] {
            let a = sample(m, n, (m * 10 + n) as u64);
            let mut lu = a.clone();
            let mut piv = vec![0; m.min(n)];
            assert_eq!(factor(&mut lu, m, n, &mut piv, true), 0);
            let r = rebuild(&lu, &piv, m, n);
            for (x, y) in r.iter().zip(&a) {
                assert!((x - y).abs() < 1e-12, "{m}x{n}");
            }
        }
    }

    #[test]
    fn solves_and_determinants() {
        let n = 6;
        let a = sample(n, n, 7);
        let mut lu = a.clone();
        let mut piv = vec![0; n];
        factor(&mut lu, n, n, &mut piv, true);
        let x = sample(n, 2, 9);
        for transpose in [false, true] {
            let at: Vec<f64> = (0..n * n).map(|i| a[(i % n) * n + i / n]).collect();
            let mut b = matmul(if transpose { &at } else { &a }, &x, n, n, 2);
            solve(&lu, &piv, n, &mut b, 2, transpose);
            for (p, q) in b.iter().zip(&x) {
                assert!((p - q).abs() < 1e-10);
            }
        }
        // det of a permutation-and-scale matrix
        let p = [0.0, 2.0, 0.0, 3.0, 0.0, 0.0, 0.0, 0.0, 4.0];
        let mut lu = p.to_vec();
        let mut piv = vec![0; 3];
        factor(&mut lu, 3, 3, &mut piv, true);
        assert_eq!(det(&lu, &piv, 3), -24.0);
        let (sign, log) = slogdet(&lu, &piv, 3);
        assert_eq!(sign, -1.0);
        assert!((log - 24f64.ln()).abs() < 1e-15);
    }

    #[test]
    fn singular_and_nan_inputs_finish() {
        let mut a = vec![1.0, 2.0, 2.0, 4.0];
        let mut piv = vec![0; 2];
        assert_eq!(factor(&mut a, 2, 2, &mut piv, true), 2);
        assert_eq!(det(&a, &piv, 2), 0.0);
        assert_eq!(slogdet(&a, &piv, 2), (0.0, f64::NEG_INFINITY));
        let mut z = vec![0.0; 9];
        let mut piv = vec![0; 3];
        assert_eq!(factor(&mut z, 3, 3, &mut piv, true), 1);
        let mut n = vec![f64::NAN, 1.0, 1.0, 1.0];
        factor(&mut n, 2, 2, &mut piv, true);
        assert!(det(&n, &piv, 2).is_nan());
    }
}
