//! The eigendecomposition of one real symmetric n×n matrix (row-major, only one triangle
//! read) by the cyclic Jacobi method: each sweep zeroes every off-diagonal pair with a
//! plane rotation (O(n³) a sweep, quadratically convergent); a rotation is skipped once
//! its entry is negligible next to the two diagonal entries (Demmel–Veselić), which
//! gives small eigenvalues to high relative accuracy. Eigenvalues come back ascending,
//! as LAPACK's syevd gives them; eigenvectors are unique only up to sign (and rotations
//! within repeated eigenvalues): ours are deterministic but are not LAPACK's.

/// The most sweeps before giving up (a finite input converges in well under 30).
const MAX_SWEEPS: usize = 80;

/// The eigenvalues (ascending) and, with `vectors`, the eigenvectors as the columns of
/// a row-major n×n matrix (empty otherwise) of the symmetric matrix whose lower (`lower`)
/// or upper triangle is `a`'s. `None` when `a`'s triangle has a non-finite entry (or,
/// which should not happen, the sweeps did not converge).
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
