//! Householder QR of one row-major m×n matrix, with LAPACK's reflector convention
//! (`dlarfg`: `R[j][j] = -sign(a_jj)·‖a_j:‖`, no reflection when the column below the
//! diagonal is already zero), so R's signs are those LAPACK's geqrf gives in the common
//! case; torch's values come from LAPACK, ours from this loop, so the bits differ.

use super::reflect::{best_level, product_t, reflect_trailing_rows, reflector, transpose};

/// The factors: `q` (m×qcols, row-major; None when not asked for) and `r` (rrows×n
/// upper triangular). `complete`: qcols = rrows = m; else qcols = rrows = min(m, n).
pub struct Qr {
    pub q: Option<Vec<f64>>,
    pub r: Vec<f64>,
}

/// The 2-norm of `v`, scaled as LAPACK's dnrm2 so that it neither overflows nor underflows.
pub(crate) fn norm2(v: impl Iterator<Item = f64>) -> f64 {
    let mut scale = 0.0f64;
    let mut ssq = 1.0f64;
    for x in v {
        if x != 0.0 {
            let ax = x.abs();
            if scale < ax {
                ssq = 1.0 + ssq * (scale / ax) * (scale / ax);
                scale = ax;
            } else {
                ssq += (ax / scale) * (ax / scale);
            }
        }
    }
    scale * ssq.sqrt()
}

/// The QR decomposition of the row-major m×n matrix `a`.
pub fn qr(a: &[f64], m: usize, n: usize, complete: bool, want_q: bool) -> Qr {
    qr_at_level(a[..m * n].to_vec(), m, n, complete, want_q)
}

best_level!(fn qr_at_level(w: Vec<f64>, m: usize, n: usize, complete: bool, want_q: bool) -> Qr = qr_body);

/// [`qr`] on `w` (a copy of `a`, overwritten by R and the reflectors), built for each
/// vector width. Reflector j (from column j, acting on rows j..) is applied to the
/// trailing columns as w ← w − τ·v·(vᵀw), with the row vector vᵀw a combination of
/// rows, so that every loop runs over contiguous rows (a column-by-column application
/// strides through the row-major matrix and cannot be vectorised). Q is the product of
/// the reflectors, built by [`product_t`] as its transpose's rows.
#[inline(always)]
fn qr_body(mut w: Vec<f64>, m: usize, n: usize, complete: bool, want_q: bool) -> Qr {
    let k = m.min(n);
    let mut reflectors = Vec::with_capacity(if want_q { k } else { 0 });
    let mut t = vec![0.0; n];
    for j in 0..k {
        let mut v: Vec<f64> = (j..m).map(|i| w[i * n + j]).collect();
        let (beta, tau) = reflector(v[0], &mut v[1..]);
        v[0] = 1.0;
        // column j becomes beta·e₁; the others get H applied
        w[j * n + j] = beta;
        for i in j + 1..m {
            w[i * n + j] = 0.0;
        }
        reflect_trailing_rows(&mut w, n, j, &v, tau, &mut t);
        if want_q {
            reflectors.push((j, v, tau));
        }
    }
    let rrows = if complete { m } else { k };
    let mut r = vec![0.0; rrows * n];
    for i in 0..rrows.min(m) {
        r[i * n + i.min(n)..(i + 1) * n].copy_from_slice(&w[i * n + i.min(n)..(i + 1) * n]);
    }
    let q = want_q.then(|| {
        let qc = if complete { m } else { k };
        // Q's first qc columns, as the rows of Qᵀ
        transpose(&product_t(qc, m, &reflectors), qc, m)
    });
    Qr { q, r }
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

    #[test]
    fn qr_reconstructs_and_q_is_orthonormal() {
        for &(m, n) in &[(4, 3), (3, 5), (5, 5), (1, 1), (6, 1), (1, 4)] {
            let a = lcg(m * n, (m * 10 + n) as u64);
            for complete in [false, true] {
                let f = qr(&a, m, n, complete, true);
                let q = f.q.unwrap_or_default();
                let qc = if complete { m } else { m.min(n) };
                let back = matmul(&q, &f.r, m, qc, n);
                for (x, y) in back.iter().zip(&a) {
                    assert!((x - y).abs() < 1e-13, "{m}x{n}: {x} vs {y}");
                }
                let qtq = matmul(&transpose(&q, m, qc), &q, qc, m, qc);
                for i in 0..qc {
                    for j in 0..qc {
                        let e = if i == j { 1.0 } else { 0.0 };
                        assert!((qtq[i * qc + j] - e).abs() < 1e-13);
                    }
                }
                // R is upper triangular
                for i in 0..qc {
                    for j in 0..i.min(n) {
                        assert_eq!(f.r[i * n + j], 0.0);
                    }
                }
            }
        }
    }

    fn transpose(a: &[f64], m: usize, n: usize) -> Vec<f64> {
        let mut t = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                t[j * m + i] = a[i * n + j];
            }
        }
        t
    }

    #[test]
    fn qr_of_rank_deficient_and_zero_matrices() {
        // a zero column: no reflection, R's diagonal entry 0
        let a = [0.0, 1.0, 0.0, 2.0, 0.0, 3.0];
        let f = qr(&a, 3, 2, false, true);
        let q = f.q.unwrap_or_default();
        let back = matmul(&q, &f.r, 3, 2, 2);
        for (x, y) in back.iter().zip(&a) {
            assert!((x - y).abs() < 1e-14);
        }
        let z = qr(&[0.0; 4], 2, 2, true, true);
        assert_eq!(z.q.unwrap_or_default(), vec![1.0, 0.0, 0.0, 1.0]);
        // empty shapes
        assert!(qr(&[], 0, 3, false, true).r.is_empty());
        let e = qr(&[], 3, 0, true, true);
        assert_eq!(e.q.map(|q| q.len()), Some(9));
    }

    #[test]
    fn qr_diagonal_signs_follow_lapack() {
        // geqrf gives R[0][0] = -sign(a00)·‖a_0‖
        let f = qr(&[3.0, 1.0, 4.0, 2.0], 2, 2, false, false);
        assert!((f.r[0] + 5.0).abs() < 1e-14);
        let g = qr(&[-3.0, 1.0, 4.0, 2.0], 2, 2, false, false);
        assert!((g.r[0] - 5.0).abs() < 1e-14);
    }

    #[test]
    fn qr_of_larger_tall_and_wide_matrices() {
        for &(m, n) in &[(64, 64), (70, 33), (33, 70), (130, 130), (129, 5), (5, 129)] {
            let a = lcg(m * n, (m * 3 + n) as u64);
            for complete in [false, true] {
                let f = qr(&a, m, n, complete, true);
                let q = f.q.unwrap_or_default();
                let qc = if complete { m } else { m.min(n) };
                let back = matmul(&q, &f.r, m, qc, n);
                let err = back
                    .iter()
                    .zip(&a)
                    .fold(0.0f64, |e, (x, y)| e.max((x - y).abs()));
                assert!(err < 1e-13, "{m}x{n}: {err:e}");
                let qtq = matmul(&transpose(&q, m, qc), &q, qc, m, qc);
                for i in 0..qc {
                    for j in 0..qc {
                        let e = if i == j { 1.0 } else { 0.0 };
                        assert!((qtq[i * qc + j] - e).abs() < 1e-13);
                    }
                }
                // R alone is the same with or without Q
                assert_eq!(qr(&a, m, n, complete, false).r, f.r);
            }
        }
    }
}
