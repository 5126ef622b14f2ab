//! The singular value decomposition of one row-major m×n matrix by one-sided Jacobi
//! (Hestenes): plane rotations orthogonalise the columns of A (of Aᵀ when m < n) until
//! every pair is orthogonal to working precision; the column norms are the singular
//! values, the normalised columns the left vectors and the accumulated rotations the
//! right ones. Accurate (small singular values to high relative accuracy), O(mn²) a
//! sweep, quadratically convergent. Singular values are returned in descending order;
//! singular vectors are unique only up to sign (and rotations within repeated values):
//! ours are deterministic but are not LAPACK's.

/// The factors: `u` (m×ucols), `s` (min(m, n), descending), `vh` (vrows×n), row-major.
/// ucols = vrows = min(m, n), or m and n with `full`. `u`/`vh` are empty without vectors.
pub struct Svd {
    pub u: Vec<f64>,
    pub s: Vec<f64>,
    pub vh: Vec<f64>,
}

/// The most sweeps before giving up (a finite input converges in well under 30).
const MAX_SWEEPS: usize = 80;

/// The SVD of `a` (row-major m×n); `None` if `a` has a non-finite entry.
pub fn svd(a: &[f64], m: usize, n: usize, full: bool, want_uv: bool) -> Option<Svd> {
    if a.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let k = m.min(n);
    let r = m.max(n);
    // scale by a power of two (exact) so that squared norms neither overflow nor underflow
    let amax = a.iter().fold(0.0f64, |acc, x| acc.max(x.abs()));
    let scale = if amax > 0.0 {
        2f64.powi(-(amax.log2().round() as i32))
    } else {
        1.0
    };
    // g: k columns of length r (column-major), columns of A (m >= n) or of Aᵀ (m < n)
    let mut g = vec![0.0; k * r];
    for i in 0..m {
        for j in 0..n {
            let v = a[i * n + j] * scale;
            if m >= n {
                g[j * r + i] = v;
            } else {
                g[i * r + j] = v;
            }
        }
    }
    // w: the accumulated rotations (k×k, column-major)
    let mut w = vec![0.0; k * k];
    for i in 0..k {
        w[i * k + i] = 1.0;
    }
    let tol = f64::EPSILON * (r.max(1) as f64);
    let mut converged = k < 2;
    for _ in 0..MAX_SWEEPS {
        if converged {
            break;
        }
        let mut rotated = false;
        for p in 0..k {
            for q in p + 1..k {
                let (gp, gq) = (&g[p * r..(p + 1) * r], &g[q * r..(q + 1) * r]);
                let alpha: f64 = gp.iter().map(|x| x * x).sum();
                let beta: f64 = gq.iter().map(|x| x * x).sum();
                let gamma: f64 = gp.iter().zip(gq).map(|(x, y)| x * y).sum();
                // orthogonal to working precision: the dot product's own rounding error
                // is up to about r·eps·‖g_p‖‖g_q‖ (dgesvj's tolerance is √m·eps), so a
                // tighter test could rotate forever on rounding noise
                if gamma == 0.0 || gamma.abs() <= tol * (alpha * beta).sqrt() {
                    continue;
                }
                rotated = true;
                let (c, s) = rotation(alpha, beta, gamma);
                rotate(&mut g, r, p, q, c, s);
                if want_uv {
                    rotate(&mut w, k, p, q, c, s);
                }
            }
        }
        converged = !rotated;
    }
    // (a finite input that did not converge in MAX_SWEEPS, which should not happen, keeps
    // what the sweeps reached: orthogonal columns to nearly working precision)
    let _ = converged;
    let norms: Vec<f64> = (0..k)
        .map(|j| super::qr::norm2(g[j * r..(j + 1) * r].iter().copied()))
        .collect();
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&x, &y| norms[y].total_cmp(&norms[x]));
    let s: Vec<f64> = order.iter().map(|&j| norms[j] / scale).collect();
    if !want_uv {
        return Some(Svd {
            u: Vec::new(),
            s,
            vh: Vec::new(),
        });
    }
    // the left vectors of the Jacobi problem (r×k, column-major), None where σ = 0
    let cols: Vec<Option<Vec<f64>>> = order
        .iter()
        .map(|&j| {
            let nj = norms[j];
            (nj > 0.0 && nj.is_normal())
                .then(|| g[j * r..(j + 1) * r].iter().map(|x| x / nj).collect())
        })
        .collect();
    let lcols = if full { r } else { k };
    let left = complete_basis(&cols, r, lcols);
    // the right vectors (k×k, column-major), in the same order
    let right: Vec<f64> = order
        .iter()
        .flat_map(|&j| w[j * k..(j + 1) * k].iter().copied())
        .collect();
    let (u, vh) = if m >= n {
        // A = L·Σ·Wᵀ: U = L (m×lcols), Vh = Wᵀ (k×k = n×n)
        let mut u = vec![0.0; m * lcols];
        for c in 0..lcols {
            for i in 0..m {
                u[i * lcols + c] = left[c * r + i];
            }
        }
        (u, right) // Wᵀ row-major = W column-major
    } else {
        // Aᵀ = L·Σ·Wᵀ, so A = W·Σ·Lᵀ: U = W (m×m), Vh = Lᵀ (lcols×n)
        let mut u = vec![0.0; m * m];
        for c in 0..m {
            for i in 0..m {
                u[i * m + c] = right[c * k + i];
            }
        }
        (u, left) // Lᵀ row-major = L column-major
    };
    Some(Svd { u, s, vh })
}

/// The Jacobi rotation (c, s) that makes columns with squared norms α, β and inner
/// product γ orthogonal (the smaller of the two angles).
fn rotation(alpha: f64, beta: f64, gamma: f64) -> (f64, f64) {
    let zeta = (beta - alpha) / (2.0 * gamma);
    let t = if zeta.abs() > 1e150 {
        0.5 / zeta
    } else {
        zeta.signum() / (zeta.abs() + (1.0 + zeta * zeta).sqrt())
    };
    let c = 1.0 / (1.0 + t * t).sqrt();
    (c, c * t)
}

/// Columns p and q of the column-major matrix `x` (columns of length `len`) rotated:
/// x_p ← c·x_p − s·x_q, x_q ← s·x_p + c·x_q.
fn rotate(x: &mut [f64], len: usize, p: usize, q: usize, c: f64, s: f64) {
    for i in 0..len {
        let (xp, xq) = (x[p * len + i], x[q * len + i]);
        x[p * len + i] = c * xp - s * xq;
        x[q * len + i] = s * xp + c * xq;
    }
}

/// `cols` (orthonormal columns of length `len`, None for missing ones) completed to
/// `count` orthonormal columns (column-major): the missing ones and the ones past
/// `cols.len()` are taken, in order, from a basis of the orthogonal complement (the last
/// columns of the complete Householder Q of the present columns).
pub(crate) fn complete_basis(cols: &[Option<Vec<f64>>], len: usize, count: usize) -> Vec<f64> {
    let present: Vec<&Vec<f64>> = cols.iter().flatten().collect();
    let kv = present.len();
    let mut out = vec![0.0; len * count];
    if count <= cols.len() && cols[..count].iter().all(Option::is_some) {
        for (c, col) in present.iter().take(count).enumerate() {
            out[c * len..(c + 1) * len].copy_from_slice(col);
        }
        return out;
    }
    // the present columns as a row-major len×kv matrix, and its complete Q (len×len)
    let mut b = vec![0.0; len * kv];
    for (c, col) in present.iter().enumerate() {
        for i in 0..len {
            b[i * kv + c] = col[i];
        }
    }
    let q = super::qr::qr(&b, len, kv, true, true).q.unwrap_or_default();
    let mut spare = kv..len;
    for c in 0..count {
        let col: Option<Vec<f64>> = match cols.get(c) {
            Some(Some(v)) => Some(v.clone()),
            _ => spare
                .next()
                .map(|j| (0..len).map(|i| q[i * len + j]).collect()),
        };
        if let Some(v) = col {
            out[c * len..(c + 1) * len].copy_from_slice(&v);
        }
    }
    out
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

    /// ‖U·diag(S)·Vh − A‖∞ and the orthonormality errors of U's columns and Vh's rows.
    fn check(a: &[f64], m: usize, n: usize, full: bool, tol: f64) {
        let f = svd(a, m, n, full, true).unwrap_or(Svd {
            u: vec![],
            s: vec![],
            vh: vec![],
        });
        let k = m.min(n);
        assert_eq!(f.s.len(), k);
        let (uc, vr) = if full { (m, n) } else { (k, k) };
        assert_eq!(f.u.len(), m * uc);
        assert_eq!(f.vh.len(), vr * n);
        for i in 0..m {
            for j in 0..n {
                let x: f64 = (0..k)
                    .map(|p| f.u[i * uc + p] * f.s[p] * f.vh[p * n + j])
                    .sum();
                assert!(
                    (x - a[i * n + j]).abs() < tol,
                    "{m}x{n} ({i},{j}): {x} vs {}",
                    a[i * n + j]
                );
            }
        }
        for p in 0..uc {
            for q in 0..uc {
                let d: f64 = (0..m).map(|i| f.u[i * uc + p] * f.u[i * uc + q]).sum();
                assert!(
                    (d - if p == q { 1.0 } else { 0.0 }).abs() < tol,
                    "UᵀU {m}x{n}"
                );
            }
        }
        for p in 0..vr {
            for q in 0..vr {
                let d: f64 = (0..n).map(|j| f.vh[p * n + j] * f.vh[q * n + j]).sum();
                assert!(
                    (d - if p == q { 1.0 } else { 0.0 }).abs() < tol,
                    "VhVhᵀ {m}x{n}"
                );
            }
        }
        assert!(f.s.windows(2).all(|w| w[0] >= w[1]));
        assert!(f.s.iter().all(|&x| x >= 0.0));
    }

    #[test]
    fn svd_reconstructs_with_orthonormal_vectors() {
        for &(m, n) in &[(4, 3), (3, 5), (5, 5), (1, 1), (6, 1), (1, 4), (7, 7)] {
            let a = lcg(m * n, (m * 7 + n) as u64);
            check(&a, m, n, false, 1e-13);
            check(&a, m, n, true, 1e-13);
        }
    }

    #[test]
    fn svd_of_rank_deficient_and_ill_conditioned_matrices() {
        // rank 1: u·vᵀ
        let (m, n) = (5, 4);
        let u = lcg(m, 3);
        let v = lcg(n, 4);
        let a: Vec<f64> = (0..m * n).map(|i| u[i / n] * v[i % n]).collect();
        check(&a, m, n, false, 1e-13);
        check(&a, m, n, true, 1e-13);
        check(&[0.0; 12], 3, 4, true, 1e-15);
        check(&[0.0; 12], 4, 3, false, 1e-15);
        // diag(1, 1e-12, 1e-200): small singular values to relative accuracy
        let d = [1.0, 0.0, 0.0, 0.0, 1e-12, 0.0, 0.0, 0.0, 1e-200];
        let f = svd(&d, 3, 3, false, false).map(|f| f.s).unwrap_or_default();
        assert_eq!(f, vec![1.0, 1e-12, 1e-200]);
        // huge entries do not overflow
        let h: Vec<f64> = lcg(9, 5).iter().map(|x| x * 1e300).collect();
        check(
            &h.iter().map(|x| x / 1e300).collect::<Vec<_>>(),
            3,
            3,
            true,
            1e-13,
        );
        let s = svd(&h, 3, 3, false, false).map(|f| f.s).unwrap_or_default();
        assert!(s.iter().all(|x| x.is_finite() && *x > 0.0));
    }

    #[test]
    fn svd_of_integer_rank_deficient_matrices_converges() {
        // a zero row and exact cancellations: rounding noise must not rotate forever
        let a = [0.0, 3.0, 0.0, 0.0, 0.0, 0.0, 9.0, 3.0, -9.0];
        check(&a, 3, 3, false, 1e-13);
        let b = [-1.0, -2.0, 3.0, 3.0, 4.0, -6.0, 3.0, 2.0, -3.0];
        check(&b, 3, 3, true, 1e-13);
        let c: Vec<f64> = (0..48).map(|i| f64::from(i * 7 % 5 - 2)).collect();
        check(&c, 6, 8, true, 1e-12);
        check(&c, 8, 6, false, 1e-12);
    }

    #[test]
    fn svd_of_empty_and_non_finite_inputs() {
        let e = svd(&[], 0, 3, true, true).map(|f| (f.u.len(), f.s.len(), f.vh.len()));
        assert_eq!(e, Some((0, 0, 9)));
        let e = svd(&[], 3, 0, true, true).map(|f| (f.u.len(), f.s.len(), f.vh.len()));
        assert_eq!(e, Some((9, 0, 0)));
        assert!(svd(&[1.0, f64::NAN, 0.0, 1.0], 2, 2, false, true).is_none());
        assert!(svd(&[1.0, f64::INFINITY, 0.0, 1.0], 2, 2, false, false).is_none());
    }
}
