//! The eigendecomposition of one real symmetric n×n matrix (row-major, only one triangle
//! read), as LAPACK's syev does it: a Householder reduction to tridiagonal form
//! (`dsytd2`, Q·T·Qᵀ = A, 4/3·n³ flops), then the implicit QL algorithm with Wilkinson
//! shifts on T (EISPACK's `tql2`, LAPACK's `dsteqr`), whose plane rotations are applied
//! to Q's columns only when the eigenvectors are asked for: the values alone cost
//! O(n²) after the reduction. Eigenvalues come back ascending, as LAPACK gives them, with
//! an error of a few ulps of ‖A‖ (norm-wise, as LAPACK's); eigenvectors are unique only
//! up to sign (and rotations within repeated eigenvalues): ours are deterministic but
//! are not LAPACK's bits.

use super::reflect::{axpy, best_level, dot, hyp, product_t, reflector, rotate_rows, unit_scale};

/// QL iterations allowed per eigenvalue, on average (LAPACK's `dsteqr` allows 30; a
/// finite input needs about two). Past them the routine gives up, so that a NaN that
/// rounding produced cannot loop forever.
const MAX_ITERS_PER_VALUE: usize = 30;

/// The eigenvalues (ascending) and, with `vectors`, the eigenvectors as the columns of
/// a row-major n×n matrix (empty otherwise) of the symmetric matrix whose lower (`lower`)
/// or upper triangle is `a`'s. `None` when `a`'s triangle has a non-finite entry (or,
/// which should not happen, the iterations did not converge).
pub fn eigh(a: &[f64], n: usize, lower: bool, vectors: bool) -> Option<(Vec<f64>, Vec<f64>)> {
    let mut s = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let v = if lower { a[i * n + j] } else { a[j * n + i] };
            if !v.is_finite() {
                return None;
            }
            s[i * n + j] = v;
            s[j * n + i] = v;
        }
    }
    eigh_full(s, n, vectors)
}

best_level!(fn eigh_full(s: Vec<f64>, n: usize, vectors: bool) -> Option<(Vec<f64>, Vec<f64>)> = eigh_body);

/// [`eigh`] of the full symmetric matrix `s` (finite), built for each vector width.
#[inline(always)]
fn eigh_body(mut s: Vec<f64>, n: usize, vectors: bool) -> Option<(Vec<f64>, Vec<f64>)> {
    // scale by a power of two (exact) so that products neither overflow nor underflow
    let scale = unit_scale(&s);
    for x in &mut s {
        *x *= scale;
    }
    let (mut d, mut e, refl) = tridiagonalize(&mut s, n, vectors);
    drop(s);
    // zt's rows are Q's columns: QL's rotations of Q's columns i, i+1 are then
    // rotations of two contiguous rows
    let mut zt = if vectors {
        product_t(n, n, &refl)
    } else {
        Vec::new()
    };
    if !tql(&mut d, &mut e, &mut zt, n) {
        return None;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&x, &y| d[x].total_cmp(&d[y]));
    let w: Vec<f64> = order.iter().map(|&j| d[j] / scale).collect();
    let mut vs = vec![0.0; if vectors { n * n } else { 0 }];
    if vectors {
        for (c, &j) in order.iter().enumerate() {
            let row = &zt[j * n..(j + 1) * n];
            for (i, x) in row.iter().enumerate() {
                vs[i * n + c] = *x;
            }
        }
    }
    Some((w, vs))
}

/// `dsytd2` on the symmetric `s` (only its lower triangle read and kept up to date):
/// Hₙ₋₂·…·H₀·S·H₀·…·Hₙ₋₂ = T, tridiagonal with diagonal `d` (n) and off-diagonal `e`
/// (n, e[i] coupling i and i+1, e[n−1] = 0 as the QL loop's sentinel). Reflector k acts
/// on indices k+1.. and comes back (when `keep`) as (k+1, v, τ) for [`product_t`]. Each
/// step is a symmetric rank-2 update of the trailing block, S₂₂ ← S₂₂ − v·wᵀ − w·vᵀ with
/// p = τ·S₂₂·v and w = p − (τ/2)(pᵀv)·v, on the lower triangle only: row i's part left
/// of the diagonal gives p_i a dot product and p₀..pᵢ₋₁ an update (S₂₂'s column i above
/// the diagonal is that same row), so every loop runs over a contiguous piece of a row.
#[inline(always)]
#[allow(clippy::type_complexity)]
fn tridiagonalize(
    s: &mut [f64],
    n: usize,
    keep: bool,
) -> (Vec<f64>, Vec<f64>, Vec<(usize, Vec<f64>, f64)>) {
    let mut d = vec![0.0; n];
    let mut e = vec![0.0; n];
    let mut refl = Vec::with_capacity(if keep { n.saturating_sub(1) } else { 0 });
    let mut p = vec![0.0; n];
    for k in 0..n.saturating_sub(1) {
        let m = n - k - 1;
        d[k] = s[k * n + k];
        // column k below the diagonal
        let mut v: Vec<f64> = (k + 1..n).map(|i| s[i * n + k]).collect();
        let alpha = v[0];
        let (beta, tau) = reflector(alpha, &mut v[1..]);
        v[0] = 1.0;
        e[k] = beta;
        if tau != 0.0 {
            let base = (k + 1) * n + k + 1;
            // p = τ·S₂₂·v from the lower triangle, row by row
            let p = &mut p[..m];
            p.fill(0.0);
            for i in 0..m {
                let row = &s[base + i * n..base + i * n + i + 1];
                let (left, diag) = row.split_at(i);
                let (before, pi) = p.split_at_mut(i);
                pi[0] += tau * (dot(left, &v[..i]) + diag[0] * v[i]);
                axpy(tau * v[i], left, before);
            }
            let half = -0.5 * tau * dot(p, &v);
            axpy(half, &v, p);
            // S₂₂ ← S₂₂ − v·pᵀ − p·vᵀ (p now w), lower triangle
            for i in 0..m {
                let row = &mut s[base + i * n..base + i * n + i + 1];
                axpy(-v[i], &p[..=i], row);
                axpy(-p[i], &v[..=i], row);
            }
        }
        if keep {
            refl.push((k + 1, v, tau));
        }
    }
    if n > 0 {
        d[n - 1] = s[n * n - 1];
    }
    (d, e, refl)
}

/// The implicit QL algorithm with Wilkinson shifts on the symmetric tridiagonal (d, e)
/// (EISPACK's `tql2` / Numerical Recipes' `tqli`): each sweep chases a bulge from the
/// bottom of the unreduced block up to its top, an off-diagonal entry is dropped once it
/// is below ε·(|dᵢ| + |dᵢ₊₁|), and `d` ends as the eigenvalues (unsorted). With `zt`
/// non-empty (n×n, rows = the current eigenvector estimates), every rotation is applied
/// to it. False when the iterations ran out (a NaN: the tests never converge).
#[inline(always)]
fn tql(d: &mut [f64], e: &mut [f64], zt: &mut [f64], n: usize) -> bool {
    let vectors = !zt.is_empty();
    // below this an off-diagonal entry is negligible next to the scaled matrix (≈ 1)
    let tiny = f64::MIN_POSITIVE / f64::EPSILON;
    let mut budget = MAX_ITERS_PER_VALUE * n.max(1);
    for l in 0..n {
        loop {
            let mut m = l;
            while m + 1 < n {
                let dd = d[m].abs() + d[m + 1].abs();
                if e[m].abs() <= f64::EPSILON * dd || e[m].abs() <= tiny {
                    break;
                }
                m += 1;
            }
            if m == l {
                break;
            }
            if budget == 0 {
                return false;
            }
            budget -= 1;
            // the shift: the eigenvalue of the top 2×2 nearer d[l]
            let mut g = (d[l + 1] - d[l]) / (2.0 * e[l]);
            let mut r = hyp(g, 1.0);
            g = d[m] - d[l] + e[l] / (g + r.copysign(g));
            let (mut s, mut c, mut p) = (1.0f64, 1.0f64, 0.0f64);
            let mut i = m;
            let mut split = false;
            while i > l {
                i -= 1;
                let f = s * e[i];
                let b = c * e[i];
                r = hyp(f, g);
                e[i + 1] = r;
                if r == 0.0 {
                    // an underflow split the block: restart on what is left
                    d[i + 1] -= p;
                    e[m] = 0.0;
                    split = true;
                    break;
                }
                s = f / r;
                c = g / r;
                g = d[i + 1] - p;
                r = (d[i] - g) * s + 2.0 * c * b;
                p = s * r;
                d[i + 1] = g + p;
                g = c * r - b;
                if vectors {
                    // z_{i+1} ← s·z_i + c·z_{i+1}, z_i ← c·z_i − s·z_{i+1}
                    rotate_rows(zt, n, i, i + 1, c, -s);
                }
            }
            if split {
                continue;
            }
            d[l] -= p;
            e[l] = g;
            e[m] = 0.0;
        }
    }
    d.iter().all(|x| x.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The most Jacobi sweeps (a finite input converges in well under 30).
    const MAX_SWEEPS: usize = 80;

    /// The cyclic Jacobi method this module used before: slow, but accurate to high
    /// relative precision, the reference the tests compare the QL eigenvalues with.
    fn jacobi(a: &[f64], n: usize, lower: bool, vectors: bool) -> Option<(Vec<f64>, Vec<f64>)> {
        let mut s = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..=i {
                let v = if lower { a[i * n + j] } else { a[j * n + i] };
                if !v.is_finite() {
                    return None;
                }
                s[i * n + j] = v;
                s[j * n + i] = v;
            }
        }
        // scale by a power of two (exact) so that products neither overflow nor underflow
        let amax = s.iter().fold(0.0f64, |acc, x| acc.max(x.abs()));
        let scale = if amax > 0.0 {
            2f64.powi(-(amax.log2().round() as i32))
        } else {
            1.0
        };
        for x in &mut s {
            *x *= scale;
        }
        let fro = s.iter().map(|x| x * x).sum::<f64>().sqrt();
        let tiny = f64::MIN_POSITIVE.max(f64::EPSILON * 1e-3 * fro);
        let mut v = vec![0.0; if vectors { n * n } else { 0 }];
        if vectors {
            for i in 0..n {
                v[i * n + i] = 1.0;
            }
        }
        let mut converged = n < 2;
        for _ in 0..MAX_SWEEPS {
            if converged {
                break;
            }
            let mut rotated = false;
            for p in 0..n {
                for q in p + 1..n {
                    let apq = s[p * n + q];
                    let (app, aqq) = (s[p * n + p], s[q * n + q]);
                    if apq.abs() <= tiny || apq.abs() <= f64::EPSILON * (app * aqq).abs().sqrt() {
                        continue;
                    }
                    rotated = true;
                    // tan θ of the rotation that zeroes (p, q): t² + 2ζt − 1 = 0, the smaller root
                    let zeta = (aqq - app) / (2.0 * apq);
                    let t = if zeta.abs() > 1e150 {
                        0.5 / zeta
                    } else {
                        let sign = if zeta < 0.0 { -1.0 } else { 1.0 };
                        sign / (zeta.abs() + (1.0 + zeta * zeta).sqrt())
                    };
                    let c = 1.0 / (1.0 + t * t).sqrt();
                    let sn = c * t;
                    // S ← JᵀSJ: columns, then rows p and q
                    for i in 0..n {
                        let (xp, xq) = (s[i * n + p], s[i * n + q]);
                        s[i * n + p] = c * xp - sn * xq;
                        s[i * n + q] = sn * xp + c * xq;
                    }
                    for j in 0..n {
                        let (xp, xq) = (s[p * n + j], s[q * n + j]);
                        s[p * n + j] = c * xp - sn * xq;
                        s[q * n + j] = sn * xp + c * xq;
                    }
                    s[p * n + q] = 0.0;
                    s[q * n + p] = 0.0;
                    if vectors {
                        for i in 0..n {
                            let (xp, xq) = (v[i * n + p], v[i * n + q]);
                            v[i * n + p] = c * xp - sn * xq;
                            v[i * n + q] = sn * xp + c * xq;
                        }
                    }
                }
            }
            converged = !rotated;
        }
        if !converged {
            return None;
        }
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&x, &y| s[x * n + x].total_cmp(&s[y * n + y]));
        let w: Vec<f64> = order.iter().map(|&j| s[j * n + j] / scale).collect();
        let mut vs = vec![0.0; if vectors { n * n } else { 0 }];
        if vectors {
            for (c, &j) in order.iter().enumerate() {
                for i in 0..n {
                    vs[i * n + c] = v[i * n + j];
                }
            }
        }
        Some((w, vs))
    }

    fn lcg(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
            })
            .collect()
    }

    fn sym(n: usize, seed: u64) -> Vec<f64> {
        let a = lcg(n * n, seed);
        (0..n * n).map(|i| a[i] + a[(i % n) * n + i / n]).collect()
    }

    fn check(a: &[f64], n: usize, tol: f64) {
        let (w, v) = eigh(a, n, true, true).unwrap_or_default();
        assert_eq!(w.len(), n);
        assert!(w.windows(2).all(|p| p[0] <= p[1]));
        for i in 0..n {
            for j in 0..n {
                let x: f64 = (0..n).map(|p| v[i * n + p] * w[p] * v[j * n + p]).sum();
                assert!(
                    (x - a[i * n + j]).abs() < tol,
                    "n={n} ({i},{j}): {x} vs {}",
                    a[i * n + j]
                );
                let d: f64 = (0..n).map(|p| v[p * n + i] * v[p * n + j]).sum();
                assert!((d - if i == j { 1.0 } else { 0.0 }).abs() < tol);
            }
        }
        let (w2, v2) = eigh(a, n, true, false).unwrap_or_default();
        assert_eq!(w2, w);
        assert!(v2.is_empty());
    }

    #[test]
    fn eigh_reconstructs_with_orthonormal_vectors() {
        for n in [1, 2, 3, 5, 8, 16] {
            check(&sym(n, n as u64), n, 1e-13);
        }
        // repeated eigenvalues: the identity, and a rank-1 update of it
        check(&[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], 3, 1e-15);
        check(&[2.0, 1.0, 1.0, 1.0, 2.0, 1.0, 1.0, 1.0, 2.0], 3, 1e-14);
        check(&[0.0; 16], 4, 1e-15);
    }

    #[test]
    fn eigh_reads_one_triangle() {
        let a = sym(4, 9);
        let mut lower = a.clone();
        let mut upper = a.clone();
        for i in 0..4 {
            for j in 0..4 {
                if j > i {
                    lower[i * 4 + j] = f64::NAN;
                } else if j < i {
                    upper[i * 4 + j] = 99.0;
                }
            }
        }
        let (wl, _) = eigh(&lower, 4, true, false).unwrap_or_default();
        let (wu, _) = eigh(&upper, 4, false, false).unwrap_or_default();
        let (w, _) = eigh(&a, 4, true, false).unwrap_or_default();
        assert_eq!(wl, w);
        for (x, y) in wu.iter().zip(&w) {
            assert!((x - y).abs() < 1e-13);
        }
    }

    #[test]
    fn eigh_of_graded_empty_and_non_finite_inputs() {
        // eigenvalues spanning 200 orders of magnitude
        let d = [1e-200, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1e100];
        assert_eq!(
            eigh(&d, 3, true, false).map(|r| r.0),
            Some(vec![1e-200, 1.0, 1e100])
        );
        assert_eq!(eigh(&[], 0, true, true), Some((vec![], vec![])));
        assert!(eigh(&[f64::NAN], 1, true, true).is_none());
        assert!(eigh(&[1.0, 0.0, f64::INFINITY, 1.0], 2, true, true).is_none());
    }

    /// ‖A·V − V·Λ‖_max / ‖A‖_max and ‖VᵀV − I‖_max, both to be a small multiple of ε·n.
    fn residuals(a: &[f64], n: usize) -> (f64, f64) {
        let (w, v) = eigh(a, n, true, true).unwrap_or_default();
        assert_eq!(w.len(), n);
        assert!(w.windows(2).all(|p| p[0] <= p[1]), "n={n}: not ascending");
        let anorm = a.iter().fold(f64::MIN_POSITIVE, |m, x| m.max(x.abs()));
        let (mut res, mut orth) = (0.0f64, 0.0f64);
        for i in 0..n {
            for c in 0..n {
                let av: f64 = (0..n).map(|p| a[i * n + p] * v[p * n + c]).sum();
                res = res.max((av - v[i * n + c] * w[c]).abs() / anorm);
                let d: f64 = (0..n).map(|p| v[p * n + i] * v[p * n + c]).sum();
                orth = orth.max((d - if i == c { 1.0 } else { 0.0 }).abs());
            }
        }
        // the values-only path gives the same bits
        let (w2, v2) = eigh(a, n, true, false).unwrap_or_default();
        assert_eq!(w2, w, "n={n}: eigvalsh differs from eigh");
        assert!(v2.is_empty());
        (res, orth)
    }

    #[test]
    fn ql_residuals_are_at_working_precision() {
        for n in (1..=70).chain([129, 130]) {
            let a = sym(n, 100 + n as u64);
            let (res, orth) = residuals(&a, n);
            let tol = 1e-15 * (n as f64).max(8.0) * 4.0;
            assert!(
                res < tol && orth < tol,
                "n={n}: residual {res:e}, orthogonality {orth:e}"
            );
        }
    }

    #[test]
    fn ql_eigenvalues_match_jacobi() {
        for n in [2, 3, 7, 16, 33, 64] {
            let a = sym(n, 7 * n as u64);
            let (w, _) = eigh(&a, n, true, false).unwrap_or_default();
            let (wj, _) = jacobi(&a, n, true, false).unwrap_or_default();
            let anorm = a.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            for (x, y) in w.iter().zip(&wj) {
                assert!(
                    (x - y).abs() <= 1e-14 * anorm * n as f64,
                    "n={n}: {x} vs {y}"
                );
            }
        }
    }

    #[test]
    fn ql_on_structured_matrices() {
        // diagonal (unsorted), with exact eigenvalues and unit vectors
        let n = 6;
        let diag = [3.0, -1.0, 0.0, 7.5, -1.0, 2.0];
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            a[i * n + i] = diag[i];
        }
        let (w, v) = eigh(&a, n, true, true).unwrap_or_default();
        assert_eq!(w, vec![-1.0, -1.0, 0.0, 2.0, 3.0, 7.5]);
        assert!(v.iter().all(|x| *x == 0.0 || x.abs() == 1.0));
        // repeated eigenvalues: I + u·uᵀ (n−1 ones), and a block of equal values
        for n in [5, 17, 40] {
            let u = lcg(n, n as u64);
            let a: Vec<f64> = (0..n * n)
                .map(|k| u[k / n] * u[k % n] + if k / n == k % n { 1.0 } else { 0.0 })
                .collect();
            let (res, orth) = residuals(&a, n);
            assert!(res < 1e-13 && orth < 1e-13, "n={n}: {res:e} {orth:e}");
            let (w, _) = eigh(&a, n, true, false).unwrap_or_default();
            assert!(w[..n - 1].iter().all(|x| (x - 1.0).abs() < 1e-13));
        }
        // zero, 1x1, 2x2, rank one, graded
        assert_eq!(
            eigh(&[0.0; 9], 3, true, true).map(|r| r.0),
            Some(vec![0.0; 3])
        );
        assert_eq!(eigh(&[-2.5], 1, true, true), Some((vec![-2.5], vec![1.0])));
        let (res, orth) = residuals(&[2.0, 1.0, 1.0, 2.0], 2);
        assert!(res < 1e-15 && orth < 1e-15);
        let u = lcg(30, 4);
        let r1: Vec<f64> = (0..900).map(|k| u[k / 30] * u[k % 30]).collect();
        let (res, orth) = residuals(&r1, 30);
        assert!(res < 1e-13 && orth < 1e-13);
        // a graded matrix: D·S·D with D from 1 to 1e-12
        let n = 24;
        let g = sym(n, 77);
        let dg: Vec<f64> = (0..n)
            .map(|i| 10f64.powf(-12.0 * i as f64 / n as f64))
            .collect();
        let a: Vec<f64> = (0..n * n).map(|k| dg[k / n] * g[k] * dg[k % n]).collect();
        let (res, orth) = residuals(&a, n);
        assert!(res < 1e-13 && orth < 1e-13, "graded: {res:e} {orth:e}");
        // tiny and huge scales
        for f in [1e-250, 1e250] {
            let a: Vec<f64> = sym(9, 3).iter().map(|x| x * f).collect();
            let (res, orth) = residuals(&a, 9);
            assert!(res < 1e-13 && orth < 1e-13);
        }
    }

    #[test]
    fn ql_gives_up_on_nan_without_hanging() {
        // non-finite input is refused up front; a NaN inside the loop runs out the budget
        let mut d = vec![1.0, f64::NAN, 2.0];
        let mut e = vec![0.5, 0.5, 0.0];
        assert!(!tql(&mut d, &mut e, &mut [], 3));
        let mut a = sym(8, 2);
        a[3 * 8 + 1] = f64::NAN;
        assert!(eigh(&a, 8, true, true).is_none());
        // (the upper triangle does not see it)
        assert!(eigh(&a, 8, false, false).is_some());
        a[8 + 3] = f64::INFINITY;
        assert!(eigh(&a, 8, false, false).is_none());
    }
}
