//! The singular value decomposition of one row-major m×n matrix, as LAPACK's gesvd does
//! it: a Householder reduction to upper bidiagonal form (Golub–Kahan, `dgebd2`,
//! A = Q_L·B·Q_Rᵀ, on Aᵀ when m < n), then the implicit-shift bidiagonal QR algorithm
//! (Golub–Kahan–Reinsch, the shifted sweeps of LAPACK's `dbdsqr`), whose plane rotations
//! are applied to Q_L and Q_R only when the vectors are asked for: the values alone cost
//! O(n²) after the reduction. Singular values are returned in descending order, with an
//! error of a few ulps of ‖A‖ (norm-wise, as LAPACK's); singular vectors are unique only
//! up to sign (and rotations within repeated values): ours are deterministic but are not
//! LAPACK's bits.

use super::reflect::{
    axpy, best_level, dot, givens, product_t, reflect_trailing_rows, reflector, rotate_rows,
    transpose, unit_scale,
};

/// The factors: `u` (m×ucols), `s` (min(m, n), descending), `vh` (vrows×n), row-major.
/// ucols = vrows = min(m, n), or m and n with `full`. `u`/`vh` are empty without vectors.
pub struct Svd {
    pub u: Vec<f64>,
    pub s: Vec<f64>,
    pub vh: Vec<f64>,
}

/// QR sweeps allowed per singular value, on average (a finite input needs about two).
/// Past them the routine gives up, so that a NaN that rounding produced cannot loop
/// forever.
const MAX_SWEEPS_PER_VALUE: usize = 30;

/// The SVD of `a` (row-major m×n); `None` if `a` has a non-finite entry (or, which
/// should not happen, the QR sweeps did not converge).
pub fn svd(a: &[f64], m: usize, n: usize, full: bool, want_uv: bool) -> Option<Svd> {
    if a.iter().any(|x| !x.is_finite()) {
        return None;
    }
    // the tall problem: W = A (m >= n) or Aᵀ (m < n), r×k with r >= k
    let w = if m >= n {
        a[..m * n].to_vec()
    } else {
        transpose(&a[..m * n], m, n)
    };
    svd_tall(w, m.max(n), m.min(n), full, want_uv).map(|(ut, s, vt)| {
        let (r, k) = (m.max(n), m.min(n));
        if !want_uv {
            return Svd {
                u: Vec::new(),
                s,
                vh: Vec::new(),
            };
        }
        let ucols = if full { r } else { k };
        if m >= n {
            // A = U·Σ·Vᵀ: U's columns are ut's rows, Vh is vt
            Svd {
                u: transpose(&ut, ucols, r),
                s,
                vh: vt,
            }
        } else {
            // Aᵀ = U'·Σ·V'ᵀ, so A = V'·Σ·U'ᵀ: U = V' (vt's rows as columns), Vh = U'ᵀ = ut
            Svd {
                u: transpose(&vt, k, k),
                s,
                vh: ut,
            }
        }
    })
}

best_level!(fn svd_tall(w: Vec<f64>, r: usize, k: usize, full: bool, want_uv: bool) -> Option<(Vec<f64>, Vec<f64>, Vec<f64>)> = svd_body);

/// The SVD of the finite, row-major r×k matrix `w` (r ≥ k) as (Uᵀ's first rows, Σ, Vᵀ):
/// `ut` holds the left vectors as rows ((r or k)×r, `full` or not), `vt` the right ones
/// (k×k); both empty without `want_uv`. Built for each vector width.
#[inline(always)]
#[allow(clippy::type_complexity)]
fn svd_body(
    mut w: Vec<f64>,
    r: usize,
    k: usize,
    full: bool,
    want_uv: bool,
) -> Option<(Vec<f64>, Vec<f64>, Vec<f64>)> {
    // scale by a power of two (exact) so that squares neither overflow nor underflow
    let scale = unit_scale(&w);
    for x in &mut w {
        *x *= scale;
    }
    let (mut d, mut e, left, right) = bidiagonalize(&mut w, r, k, want_uv);
    drop(w);
    let ucols = if full { r } else { k };
    let (mut ut, mut vt) = if want_uv {
        (product_t(ucols, r, &left), product_t(k, k, &right))
    } else {
        (Vec::new(), Vec::new())
    };
    if !bidiagonal_qr(&mut d, &mut e, &mut ut, r, &mut vt, k) {
        return None;
    }
    // non-negative values (the sign goes into V), in descending order
    for (i, di) in d.iter_mut().enumerate() {
        if *di < 0.0 {
            *di = -*di;
            if want_uv {
                for x in &mut vt[i * k..(i + 1) * k] {
                    *x = -*x;
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&x, &y| d[y].total_cmp(&d[x]));
    let s: Vec<f64> = order.iter().map(|&j| d[j] / scale).collect();
    if want_uv {
        let permute = |x: &mut Vec<f64>, len: usize| {
            let mut out = Vec::with_capacity(x.len());
            for &j in &order {
                out.extend_from_slice(&x[j * len..(j + 1) * len]);
            }
            out.extend_from_slice(&x[k * len..]);
            *x = out;
        };
        permute(&mut ut, r);
        permute(&mut vt, k);
    }
    Some((ut, s, vt))
}

/// One Householder reflector as [`product_t`] takes it: (first index, v with v₀ = 1, τ).
type Reflector = (usize, Vec<f64>, f64);

/// `dgebd2` on the row-major r×k `w` (r ≥ k): Q_Lᵀ·W·Q_R = B, upper bidiagonal with
/// diagonal `d` (k) and superdiagonal `e` (k − 1). Left reflector j (from column j) acts
/// on rows j.., right reflector j (from row j) on columns j+1..; they come back (when
/// `keep`) for [`product_t`]. The left ones are applied as w ← w − τ·v·(vᵀw), the row
/// vector vᵀw a combination of rows, the right ones row by row: every loop runs over
/// contiguous rows.
#[inline(always)]
#[allow(clippy::type_complexity)]
fn bidiagonalize(
    w: &mut [f64],
    r: usize,
    k: usize,
    keep: bool,
) -> (Vec<f64>, Vec<f64>, Vec<Reflector>, Vec<Reflector>) {
    let mut d = vec![0.0; k];
    let mut e = vec![0.0; k.saturating_sub(1)];
    let mut left = Vec::with_capacity(if keep { k } else { 0 });
    let mut right = Vec::with_capacity(if keep { k } else { 0 });
    let mut t = vec![0.0; k];
    for j in 0..k {
        // left: column j from the diagonal down
        let mut v: Vec<f64> = (j..r).map(|i| w[i * k + j]).collect();
        let (beta, tau) = reflector(v[0], &mut v[1..]);
        v[0] = 1.0;
        d[j] = beta;
        reflect_trailing_rows(w, k, j, &v, tau, &mut t);
        if keep {
            left.push((j, v, tau));
        }
        if j + 1 >= k {
            continue;
        }
        // right: row j right of the superdiagonal
        let mut u = w[j * k + j + 1..(j + 1) * k].to_vec();
        let (beta, tau) = reflector(u[0], &mut u[1..]);
        u[0] = 1.0;
        e[j] = beta;
        if tau != 0.0 {
            for i in j + 1..r {
                let row = &mut w[i * k + j + 1..(i + 1) * k];
                let s = -tau * dot(row, &u);
                axpy(s, &u, row);
            }
        }
        if keep {
            right.push((j + 1, u, tau));
        }
    }
    (d, e, left, right)
}

/// The implicit-shift QR algorithm on the upper bidiagonal (d, e) (Golub–Kahan–Reinsch,
/// as in `dbdsqr`'s shifted sweeps): on the bottom unreduced block, a sweep with the
/// Wilkinson shift of BᵀB's trailing 2×2 chases a bulge from the top to the bottom; a
/// superdiagonal entry is dropped once it is below ε·(|dᵢ| + |dᵢ₊₁|), and a diagonal
/// entry below ε·‖B‖ is set to zero and its row (or column) rotated out of the block.
/// `d` ends as the singular values up to sign (unsorted). Rotations of B's rows i, j
/// are applied to the rows of `ut` (length `ulen`), of its columns to the rows of `vt`
/// (length `vlen`), when they are non-empty. False when the sweeps ran out (a NaN).
#[inline(always)]
fn bidiagonal_qr(
    d: &mut [f64],
    e: &mut [f64],
    ut: &mut [f64],
    ulen: usize,
    vt: &mut [f64],
    vlen: usize,
) -> bool {
    let k = d.len();
    if k < 2 {
        return d.iter().all(|x| x.is_finite());
    }
    let vectors = !ut.is_empty();
    let bnorm = d.iter().chain(e.iter()).fold(0.0f64, |m, x| m.max(x.abs()));
    let dzero = f64::EPSILON * bnorm;
    let tiny = f64::MIN_POSITIVE / f64::EPSILON;
    let mut budget = MAX_SWEEPS_PER_VALUE * k;
    let mut hi = k - 1;
    while hi > 0 {
        // drop negligible superdiagonal entries of the active part
        for i in 0..hi {
            if e[i].abs() <= f64::EPSILON * (d[i].abs() + d[i + 1].abs()) || e[i].abs() <= tiny {
                e[i] = 0.0;
            }
        }
        if e[hi - 1] == 0.0 {
            hi -= 1;
            continue;
        }
        let mut lo = hi - 1;
        while lo > 0 && e[lo - 1] != 0.0 {
            lo -= 1;
        }
        if budget == 0 {
            return false;
        }
        budget -= 1;
        // a (negligibly) zero diagonal entry: rotate its coupling out of the block
        if let Some(i) = (lo..=hi).find(|&i| d[i].abs() <= dzero) {
            d[i] = 0.0;
            if i < hi {
                // row i holds only e[i]: rotations of rows (j, i) move it right and off
                let mut f = e[i];
                e[i] = 0.0;
                for j in i + 1..=hi {
                    let (c, s, rr) = givens(d[j], f);
                    d[j] = rr;
                    if vectors {
                        rotate_rows(ut, ulen, j, i, c, s);
                    }
                    if j < hi {
                        f = -s * e[j];
                        e[j] *= c;
                    }
                }
            } else {
                // column hi holds only e[hi−1]: rotations of columns (j, hi) move it up
                let mut f = e[hi - 1];
                e[hi - 1] = 0.0;
                for j in (lo..hi).rev() {
                    let (c, s, rr) = givens(d[j], f);
                    d[j] = rr;
                    if vectors {
                        rotate_rows(vt, vlen, j, hi, c, s);
                    }
                    if j > lo {
                        f = -s * e[j - 1];
                        e[j - 1] *= c;
                    }
                }
            }
            continue;
        }
        // the shift: the eigenvalue of BᵀB's trailing 2×2 nearer its last entry
        let t11 = d[hi - 1] * d[hi - 1]
            + if hi - 1 > lo {
                e[hi - 2] * e[hi - 2]
            } else {
                0.0
            };
        let t12 = d[hi - 1] * e[hi - 1];
        let t22 = d[hi] * d[hi] + e[hi - 1] * e[hi - 1];
        let delta = 0.5 * (t11 - t22);
        let mu = if delta == 0.0 && t12 == 0.0 {
            t22
        } else {
            t22 - t12 * t12 / (delta + super::reflect::hyp(delta, t12).copysign(delta))
        };
        let mut y = d[lo] * d[lo] - mu;
        let mut z = d[lo] * e[lo];
        for j in lo..hi {
            // columns (j, j+1): zero z against y
            let (c, s, rr) = givens(y, z);
            if j > lo {
                e[j - 1] = rr;
            }
            let (dj, ej) = (d[j], e[j]);
            d[j] = c * dj + s * ej;
            e[j] = c * ej - s * dj;
            let bulge = s * d[j + 1];
            d[j + 1] *= c;
            if vectors {
                rotate_rows(vt, vlen, j, j + 1, c, s);
            }
            // rows (j, j+1): zero the bulge below the diagonal
            let (c, s, rr) = givens(d[j], bulge);
            d[j] = rr;
            let (ej, dj1) = (e[j], d[j + 1]);
            e[j] = c * ej + s * dj1;
            d[j + 1] = c * dj1 - s * ej;
            if vectors {
                rotate_rows(ut, ulen, j, j + 1, c, s);
            }
            if j + 1 < hi {
                y = e[j];
                z = s * e[j + 1];
                e[j + 1] *= c;
            }
        }
    }
    d.iter().chain(e.iter()).all(|x| x.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    // The one-sided Jacobi SVD this module used before: slow, but accurate to high
    // relative precision, the reference the tests compare the QR singular values with.

    /// The most sweeps before giving up (a finite input converges in well under 30).
    const MAX_SWEEPS: usize = 80;

    /// The SVD of `a` (row-major m×n); `None` if `a` has a non-finite entry.
    fn jacobi(a: &[f64], m: usize, n: usize, full: bool, want_uv: bool) -> Option<Svd> {
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
            .map(|j| crate::backend::linalg::qr::norm2(g[j * r..(j + 1) * r].iter().copied()))
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
    fn complete_basis(cols: &[Option<Vec<f64>>], len: usize, count: usize) -> Vec<f64> {
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
        let q = crate::backend::linalg::qr::qr(&b, len, kv, true, true)
            .q
            .unwrap_or_default();
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

    /// The largest of ‖U·Σ·Vh − A‖_max / ‖A‖_max and the orthonormality errors of U's
    /// columns and Vh's rows, after checking the shapes, the order and that the
    /// values-only path gives the same bits.
    fn worst(a: &[f64], m: usize, n: usize, full: bool) -> f64 {
        let f = svd(a, m, n, full, true).unwrap_or(Svd {
            u: vec![],
            s: vec![],
            vh: vec![],
        });
        let k = m.min(n);
        let (uc, vr) = if full { (m, n) } else { (k, k) };
        assert_eq!((f.u.len(), f.s.len(), f.vh.len()), (m * uc, k, vr * n));
        assert!(f.s.windows(2).all(|w| w[0] >= w[1]) && f.s.iter().all(|&x| x >= 0.0));
        let s2 = svd(a, m, n, full, false).map(|g| g.s).unwrap_or_default();
        assert_eq!(s2, f.s, "{m}x{n}: svdvals differs from svd");
        let anorm = a.iter().fold(f64::MIN_POSITIVE, |x, y| x.max(y.abs()));
        let mut worst = 0.0f64;
        for i in 0..m {
            for j in 0..n {
                let x: f64 = (0..k)
                    .map(|p| f.u[i * uc + p] * f.s[p] * f.vh[p * n + j])
                    .sum();
                worst = worst.max((x - a[i * n + j]).abs() / anorm);
            }
        }
        for p in 0..uc {
            for q in 0..uc {
                let d: f64 = (0..m).map(|i| f.u[i * uc + p] * f.u[i * uc + q]).sum();
                worst = worst.max((d - if p == q { 1.0 } else { 0.0 }).abs());
            }
        }
        for p in 0..vr {
            for q in 0..vr {
                let d: f64 = (0..n).map(|j| f.vh[p * n + j] * f.vh[q * n + j]).sum();
                worst = worst.max((d - if p == q { 1.0 } else { 0.0 }).abs());
            }
        }
        worst
    }

    #[test]
    fn qr_svd_residuals_are_at_working_precision() {
        let mut shapes: Vec<(usize, usize)> = (1..=70).map(|n| (n, n)).collect();
        shapes.extend([
            (130, 130),
            (70, 3),
            (3, 70),
            (64, 40),
            (40, 64),
            (131, 17),
            (2, 1),
        ]);
        for (m, n) in shapes {
            let a = lcg(m * n, (m * 131 + n) as u64);
            let tol = 4e-15 * (m.max(n) as f64).max(8.0);
            let e = worst(&a, m, n, false);
            assert!(e < tol, "{m}x{n}: {e:e}");
            if m != n || m < 8 {
                let e = worst(&a, m, n, true);
                assert!(e < tol, "{m}x{n} full: {e:e}");
            }
        }
    }

    #[test]
    fn qr_singular_values_match_jacobi() {
        for &(m, n) in &[(5, 5), (9, 4), (4, 9), (33, 33), (64, 64), (70, 20)] {
            let a = lcg(m * n, (m + 3 * n) as u64);
            let s = svd(&a, m, n, false, false).map(|f| f.s).unwrap_or_default();
            let sj = jacobi(&a, m, n, false, false)
                .map(|f| f.s)
                .unwrap_or_default();
            for (x, y) in s.iter().zip(&sj) {
                assert!(
                    (x - y).abs() <= 1e-14 * sj[0] * m.max(n) as f64,
                    "{m}x{n}: {x} vs {y}"
                );
            }
        }
    }

    #[test]
    fn qr_svd_of_structured_matrices() {
        // rank-deficient: rank 3 out of 20, and a matrix with zero rows and columns
        let (m, n) = (20, 12);
        let x = lcg(m * 3, 1);
        let y = lcg(3 * n, 2);
        let a: Vec<f64> = (0..m * n)
            .map(|t| (0..3).map(|p| x[(t / n) * 3 + p] * y[p * n + t % n]).sum())
            .collect();
        assert!(worst(&a, m, n, true) < 1e-13);
        let s = svd(&a, m, n, false, false).map(|f| f.s).unwrap_or_default();
        assert!(s[3..].iter().all(|&v| v < 1e-14 * s[0]), "{s:?}");
        let mut z = lcg(100, 9);
        for i in 0..10 {
            z[i * 10 + 4] = 0.0;
            z[7 * 10 + i] = 0.0;
        }
        assert!(worst(&z, 10, 10, true) < 1e-13);
        // repeated singular values: an orthogonal-ish matrix (a Householder reflector)
        let n = 16;
        let v = lcg(n, 5);
        let vv: f64 = v.iter().map(|x| x * x).sum();
        let h: Vec<f64> = (0..n * n)
            .map(|t| f64::from(u8::from(t / n == t % n)) - 2.0 * v[t / n] * v[t % n] / vv)
            .collect();
        assert!(worst(&h, n, n, false) < 1e-13);
        let s = svd(&h, n, n, false, false).map(|f| f.s).unwrap_or_default();
        assert!(s.iter().all(|x| (x - 1.0).abs() < 1e-14));
        // graded: D·G with D from 1 to 1e-12 (values down to about 1e-12 ‖A‖)
        let (m, n) = (24, 18);
        let g = lcg(m * n, 8);
        let a: Vec<f64> = (0..m * n)
            .map(|t| g[t] * 10f64.powf(-12.0 * (t / n) as f64 / m as f64))
            .collect();
        assert!(worst(&a, m, n, true) < 1e-13);
        // diagonal, zero, 1x1, 2x2
        let mut dg = vec![0.0; 25];
        for (i, x) in [3.0, -7.0, 0.0, 1e-30, 2.0].iter().enumerate() {
            dg[i * 5 + i] = *x;
        }
        let s = svd(&dg, 5, 5, false, false)
            .map(|f| f.s)
            .unwrap_or_default();
        assert_eq!(s, vec![7.0, 3.0, 2.0, 1e-30, 0.0]);
        assert!(worst(&dg, 5, 5, false) < 1e-15);
        assert!(worst(&[0.0; 30], 5, 6, true) == 0.0);
        assert_eq!(
            svd(&[-4.0], 1, 1, true, true)
                .map(|f| (f.u, f.s, f.vh))
                .map(|(u, s, v)| u[0] * s[0] * v[0]),
            Some(-4.0)
        );
        assert!(worst(&[1.0, 2.0, 3.0, 4.0], 2, 2, true) < 1e-15);
    }

    #[test]
    fn bidiagonal_qr_with_zero_diagonal_entries() {
        // zeros inside the block, at its end and at its start: B = Utᵀ·diag(d)·Vt after
        for zeros in [vec![2], vec![5], vec![0], vec![1, 3]] {
            let k = 6;
            let mut d: Vec<f64> = lcg(k, 3).iter().map(|x| x + 2.0).collect();
            let mut e: Vec<f64> = lcg(k - 1, 4).iter().map(|x| x + 1.5).collect();
            for &z in &zeros {
                d[z] = 0.0;
            }
            let mut b = vec![0.0; k * k];
            for i in 0..k {
                b[i * k + i] = d[i];
                if i + 1 < k {
                    b[i * k + i + 1] = e[i];
                }
            }
            let eye: Vec<f64> = (0..k * k)
                .map(|t| f64::from(u8::from(t / k == t % k)))
                .collect();
            let (mut ut, mut vt) = (eye.clone(), eye);
            assert!(bidiagonal_qr(&mut d, &mut e, &mut ut, k, &mut vt, k));
            for i in 0..k {
                for j in 0..k {
                    let x: f64 = (0..k).map(|p| ut[p * k + i] * d[p] * vt[p * k + j]).sum();
                    assert!((x - b[i * k + j]).abs() < 1e-14, "{zeros:?} ({i},{j})");
                }
            }
        }
    }

    #[test]
    fn qr_svd_gives_up_on_nan_without_hanging() {
        let mut d = vec![1.0, f64::NAN, 2.0];
        let mut e = vec![0.5, 0.5];
        assert!(!bidiagonal_qr(&mut d, &mut e, &mut [], 0, &mut [], 0));
        let mut a = lcg(20, 1);
        a[7] = f64::NAN;
        assert!(svd(&a, 4, 5, true, true).is_none());
        assert!(svd(&a, 5, 4, false, false).is_none());
    }
}
