//! LU factorization with partial pivoting (LAPACK's `getrf`) and the solves that use it
//! (`getrs`), on row-major matrices.

/// Factors the `m × n` row-major matrix `a` in place as `P L U` (L unit lower
/// trapezoidal below the diagonal, U upper trapezoidal on and above it), as LAPACK's
/// `getrf`: for each column `k < min(m, n)` the row with the largest magnitude at or
/// below the diagonal (the first of equal ones) is swapped into row `k` and `piv[k]` is
/// its 1-based index. Without `pivot` no row is swapped (`piv[k] = k + 1`). Returns
/// `info`: 0, or the 1-based index of the first exactly zero pivot (the elimination
/// goes on past it, leaving that column of L unscaled, as LAPACK does).
pub fn factor(a: &mut [f64], m: usize, n: usize, piv: &mut [i64], pivot: bool) -> i64 {
    let k_max = m.min(n);
    debug_assert!(a.len() >= m * n && piv.len() >= k_max);
    let mut info = 0;
    for k in 0..k_max {
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
            let (top, bottom) = a.split_at_mut(p * n);
            top[k * n..(k + 1) * n].swap_with_slice(&mut bottom[..n]);
        }
        let d = a[k * n + k];
        if d == 0.0 {
            if info == 0 {
                info = k as i64 + 1;
            }
            continue;
        }
        let (head, tail) = a.split_at_mut((k + 1) * n);
        let row_k = &head[k * n + k + 1..(k + 1) * n];
        for row in tail.chunks_exact_mut(n).take(m - k - 1) {
            let l = row[k] / d;
            row[k] = l;
            if l != 0.0 {
                for (x, &u) in row[k + 1..].iter_mut().zip(row_k) {
                    *x -= l * u;
                }
            }
        }
    }
    info
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
        if !(u > 0.0) {
            sign = if u < 0.0 { -sign } else { 0.0 };
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
