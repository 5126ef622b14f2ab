//! LAPACK's `dgelsy`, the least-squares driver torch's CPU `linalg.lstsq` uses by
//! default: the minimum-norm solution of `min ‖A·X − B‖` through a complete orthogonal
//! factorization, on one column-major float64 matrix (element (i, j) at `j·ld + i`).
//!
//! 1. QR with column pivoting (`dgeqp3`'s unblocked loop `dlaqp2`): `A·P = Q·R`, each
//!    step taking the remaining column of largest norm (the first such), the norms
//!    downdated and recomputed when cancellation has eaten half their digits.
//! 2. The rank: the largest leading `R₁₁` whose condition number, estimated
//!    incrementally (`dlaic1`: the largest and smallest singular values of each growing
//!    triangle), stays below `1/rcond`.
//! 3. Where the rank r is below n, `[R₁₁ R₁₂]` becomes `[T₁₁ 0]·Z` by reflectors from the
//!    right (`dtzrzf`'s unblocked `dlatrz`).
//! 4. `X = P·Zᵀ·[T₁₁⁻¹·(Qᵀ·B)₁..ᵣ; 0]` (`dormqr`, `dtrsm`, `dormrz`, the permutation).
//!
//! The steps and their branches are LAPACK's, so the rank is torch's (up to rounding
//! at the threshold) and the solution LAPACK's up to rounding (its bits are not
//! reproduced). LAPACK's scaling of tiny or huge A and B to a safe range is left out:
//! float32 input is computed in float64, where it cannot overflow; float64 input
//! beyond about 1e150 may.

use super::householder::ormqr_left;
use super::reflect::{axpy, dot, norm, reflector};

/// LAPACK's `dlamch('Epsilon')`: the relative machine precision, 2⁻⁵³.
const EPS: f64 = f64::EPSILON * 0.5;

/// The solution of one problem and the rank that was used.
pub struct Lstsq {
    /// `n × nrhs`, column-major.
    pub x: Vec<f64>,
    pub rank: usize,
}

/// `dgelsy` of the column-major `m × n` matrix `a` (ld m) and `m × nrhs` matrix `b`
/// (ld m) with the reciprocal condition threshold `rcond`. `a` is overwritten.
pub fn gelsy(a: &mut [f64], m: usize, n: usize, b: &[f64], nrhs: usize, rcond: f64) -> Lstsq {
    let mn = m.min(n);
    let zero = || Lstsq {
        x: vec![0.0; n * nrhs],
        rank: 0,
    };
    // (LAPACK: A of max-norm zero has rank 0 and solution 0; a NaN anywhere compares
    // false there and runs through the factorization)
    if mn == 0 || a.iter().all(|&v| v == 0.0) {
        return zero();
    }
    let mut jpvt: Vec<usize> = (0..n).collect();
    let mut tau = vec![0.0; mn];
    geqp3(a, m, n, &mut jpvt, &mut tau);
    let rank = rank_of(a, m, mn, rcond);
    if rank == 0 {
        return zero();
    }
    let mut tau_z = vec![0.0; rank];
    if rank < n {
        latrz(a, m, rank, n, &mut tau_z);
    }
    // B := Qᵀ·B (the reflectors below R's diagonal; ormqr reads nothing above it)
    let mut qb = b.to_vec();
    ormqr_left(a, m, &tau, &mut qb, nrhs, true, false);
    let mut x = vec![0.0; n * nrhs];
    for j in 0..nrhs {
        let col = &mut x[j * n..(j + 1) * n];
        col[..rank].copy_from_slice(&qb[j * m..j * m + rank]);
        // T₁₁⁻¹ (back substitution, column by column as dtrsm's "Left, Upper, N")
        for k in (0..rank).rev() {
            if col[k] != 0.0 {
                col[k] /= a[k * m + k];
                let xk = col[k];
                for i in 0..k {
                    col[i] -= xk * a[k * m + i];
                }
            }
        }
        if rank < n {
            apply_z_t(a, m, rank, n, &tau_z, col);
        }
        // X(jpvt(i)) = B(i)
        let perm = col.to_vec();
        for (i, &p) in jpvt.iter().enumerate() {
            col[p] = perm[i];
        }
    }
    Lstsq { x, rank }
}

/// `dgeqp3` (its unblocked loop, `dlaqp2`, with no columns fixed in place): `A·P = Q·R`
/// in place as geqrf's packed form, `jpvt[i]` the original column now at i.
fn geqp3(a: &mut [f64], m: usize, n: usize, jpvt: &mut [usize], tau: &mut [f64]) {
    let mn = m.min(n);
    let tol3z = EPS.sqrt();
    let mut vn1: Vec<f64> = (0..n).map(|j| norm(&a[j * m..(j + 1) * m])).collect();
    let mut vn2 = vn1.clone();
    for i in 0..mn {
        // the first column of largest remaining norm (idamax)
        let mut pvt = i;
        for j in i + 1..n {
            if vn1[j] > vn1[pvt] {
                pvt = j;
            }
        }
        if pvt != i {
            for r in 0..m {
                a.swap(pvt * m + r, i * m + r);
            }
            jpvt.swap(pvt, i);
            vn1[pvt] = vn1[i];
            vn2[pvt] = vn2[i];
        }
        let at = i * m + i;
        let (beta, t) = reflector(a[at], &mut a[at + 1..(i + 1) * m]);
        tau[i] = t;
        if i + 1 < n && t != 0.0 {
            a[at] = 1.0;
            let (head, rest) = a.split_at_mut((i + 1) * m);
            let v = &head[at..];
            for c in 0..n - i - 1 {
                let col = &mut rest[c * m + i..(c + 1) * m];
                let w = dot(v, col);
                axpy(-t * w, v, col);
            }
        }
        a[at] = beta;
        // downdate the remaining norms
        for j in i + 1..n {
            if vn1[j] != 0.0 {
                let r = a[j * m + i].abs() / vn1[j];
                let temp = (1.0 - r * r).max(0.0);
                let q = vn1[j] / vn2[j];
                if temp * q * q <= tol3z {
                    if i + 1 < m {
                        vn1[j] = norm(&a[j * m + i + 1..(j + 1) * m]);
                        vn2[j] = vn1[j];
                    } else {
                        vn1[j] = 0.0;
                        vn2[j] = 0.0;
                    }
                } else {
                    vn1[j] *= temp.sqrt();
                }
            }
        }
    }
}

/// `dgelsy`'s rank: R₁₁ grown a column at a time while the estimated condition number
/// `smax / smin` (dlaic1's estimates, with their approximate singular vectors) stays
/// at most `1/rcond`.
fn rank_of(a: &[f64], m: usize, mn: usize, rcond: f64) -> usize {
    let r00 = a[0].abs();
    if r00 == 0.0 || r00.is_nan() {
        return usize::from(r00.is_nan());
    }
    let (mut smax, mut smin) = (r00, r00);
    let mut xmin = vec![1.0];
    let mut xmax = vec![1.0];
    let mut rank = 1;
    while rank < mn {
        let i = rank;
        let w = &a[i * m..i * m + rank];
        let gamma = a[i * m + i];
        let (sminpr, s1, c1) = laic1(false, &xmin, smin, w, gamma);
        let (smaxpr, s2, c2) = laic1(true, &xmax, smax, w, gamma);
        // (LAPACK's test: a NaN estimate stops the growth)
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(smaxpr * rcond <= sminpr) {
            break;
        }
        for v in xmin.iter_mut() {
            *v *= s1;
        }
        for v in xmax.iter_mut() {
            *v *= s2;
        }
        xmin.push(c1);
        xmax.push(c2);
        smin = sminpr;
        smax = smaxpr;
        rank += 1;
    }
    rank
}

/// LAPACK's `dlaic1`: one step of incremental condition estimation. Given the
/// estimate `sest` of the largest (`largest`) or smallest singular value of a
/// triangle L with its approximate singular vector `x` (‖x‖ = 1), and the new column
/// `w` with diagonal `gamma`, returns the estimate for the grown triangle and (s, c)
/// with the new vector `[s·x; c]`.
fn laic1(largest: bool, x: &[f64], sest: f64, w: &[f64], gamma: f64) -> (f64, f64, f64) {
    let alpha = dot(x, w);
    let (absalp, absgam, absest) = (alpha.abs(), gamma.abs(), sest.abs());
    let sign1 = |v: f64| 1.0f64.copysign(v);
    if largest {
        if sest == 0.0 {
            let s1 = absgam.max(absalp);
            if s1 == 0.0 {
                return (0.0, 0.0, 1.0);
            }
            let (s, c) = (alpha / s1, gamma / s1);
            let tmp = (s * s + c * c).sqrt();
            return (s1 * tmp, s / tmp, c / tmp);
        }
        if absgam <= EPS * absest {
            let tmp = absest.max(absalp);
            let (s1, s2) = (absest / tmp, absalp / tmp);
            return (tmp * (s1 * s1 + s2 * s2).sqrt(), 1.0, 0.0);
        }
        if absalp <= EPS * absest {
            return if absgam <= absest {
                (absest, 1.0, 0.0)
            } else {
                (absgam, 0.0, 1.0)
            };
        }
        if absest <= EPS * absalp || absest <= EPS * absgam {
            let (s1, s2) = (absgam, absalp);
            return if s1 <= s2 {
                let tmp = s1 / s2;
                let s = (1.0 + tmp * tmp).sqrt();
                (s2 * s, sign1(alpha) / s, (gamma / s2) / s)
            } else {
                let tmp = s2 / s1;
                let c = (1.0 + tmp * tmp).sqrt();
                (s1 * c, (alpha / s1) / c, sign1(gamma) / c)
            };
        }
        let (zeta1, zeta2) = (alpha / absest, gamma / absest);
        let b = (1.0 - zeta1 * zeta1 - zeta2 * zeta2) * 0.5;
        let c = zeta1 * zeta1;
        let t = if b > 0.0 {
            c / (b + (b * b + c).sqrt())
        } else {
            (b * b + c).sqrt() - b
        };
        let (sine, cosine) = (-zeta1 / t, -zeta2 / (1.0 + t));
        let tmp = (sine * sine + cosine * cosine).sqrt();
        return ((t + 1.0).sqrt() * absest, sine / tmp, cosine / tmp);
    }
    if sest == 0.0 {
        let (sine, cosine) = if absgam.max(absalp) == 0.0 {
            (1.0, 0.0)
        } else {
            (-gamma, alpha)
        };
        let s1 = sine.abs().max(cosine.abs());
        let (s, c) = (sine / s1, cosine / s1);
        let tmp = (s * s + c * c).sqrt();
        return (0.0, s / tmp, c / tmp);
    }
    if absgam <= EPS * absest {
        return (absgam, 0.0, 1.0);
    }
    if absalp <= EPS * absest {
        return if absgam <= absest {
            (absgam, 0.0, 1.0)
        } else {
            (absest, 1.0, 0.0)
        };
    }
    if absest <= EPS * absalp || absest <= EPS * absgam {
        let (s1, s2) = (absgam, absalp);
        return if s1 <= s2 {
            let tmp = s1 / s2;
            let c = (1.0 + tmp * tmp).sqrt();
            (absest * (tmp / c), -(gamma / s2) / c, sign1(alpha) / c)
        } else {
            let tmp = s2 / s1;
            let s = (1.0 + tmp * tmp).sqrt();
            (absest / s, -sign1(gamma) / s, (alpha / s1) / s)
        };
    }
    let (zeta1, zeta2) = (alpha / absest, gamma / absest);
    let norma =
        (1.0 + zeta1 * zeta1 + (zeta1 * zeta2).abs()).max((zeta1 * zeta2).abs() + zeta2 * zeta2);
    let test = 1.0 + 2.0 * (zeta1 - zeta2) * (zeta1 + zeta2);
    let (sine, cosine, sestpr) = if test >= 0.0 {
        // the root is close to zero: computed directly
        let b = (zeta1 * zeta1 + zeta2 * zeta2 + 1.0) * 0.5;
        let c = zeta2 * zeta2;
        let t = c / (b + (b * b - c).abs().sqrt());
        (
            zeta1 / (1.0 - t),
            -zeta2 / t,
            (t + 4.0 * EPS * EPS * norma).sqrt() * absest,
        )
    } else {
        // the root is close to one: shifted by it
        let b = (zeta2 * zeta2 + zeta1 * zeta1 - 1.0) * 0.5;
        let c = zeta1 * zeta1;
        let t = if b >= 0.0 {
            -c / (b + (b * b + c).sqrt())
        } else {
            b - (b * b + c).sqrt()
        };
        (
            -zeta1 / t,
            -zeta2 / (1.0 + t),
            (1.0 + t + 4.0 * EPS * EPS * norma).sqrt() * absest,
        )
    };
    let tmp = (sine * sine + cosine * cosine).sqrt();
    (sestpr, sine / tmp, cosine / tmp)
}

/// `dlatrz` on the first `r` rows of the column-major `a` (ld `m`, n columns), upper
/// trapezoidal `[R₁₁ R₁₂]`: `[T₁₁ 0]·Z`, Z = Z₀ ⋯ Z_{r−1}, reflector k's vector in row
/// k, columns r..n (its leading 1 at column k, zeros between), its factor in `tau[k]`.
fn latrz(a: &mut [f64], m: usize, r: usize, n: usize, tau: &mut [f64]) {
    let l = n - r;
    let mut row = vec![0.0; l];
    let mut w = vec![0.0; r];
    for k in (0..r).rev() {
        for (c, v) in row.iter_mut().enumerate() {
            *v = a[(r + c) * m + k];
        }
        let (beta, t) = reflector(a[k * m + k], &mut row);
        for (c, &v) in row.iter().enumerate() {
            a[(r + c) * m + k] = v;
        }
        tau[k] = t;
        a[k * m + k] = beta;
        // rows 0..k of columns k..n from the right (dlarz 'Right'): w = C·v, C −= τ·w·vᵀ
        if t != 0.0 && k > 0 {
            let w = &mut w[..k];
            w.copy_from_slice(&a[k * m..k * m + k]);
            for (c, &v) in row.iter().enumerate() {
                axpy(v, &a[(r + c) * m..(r + c) * m + k], w);
            }
            axpy(-t, w, &mut a[k * m..k * m + k]);
            for (c, &v) in row.iter().enumerate() {
                axpy(-t * v, w, &mut a[(r + c) * m..(r + c) * m + k]);
            }
        }
    }
}

/// `dormrz('Left', 'Transpose')` on one column `col` (n rows): Zᵀ·col with [`latrz`]'s
/// reflectors, Z₀ first.
fn apply_z_t(a: &[f64], m: usize, r: usize, n: usize, tau: &[f64], col: &mut [f64]) {
    for k in 0..r {
        let t = tau[k];
        if t == 0.0 {
            continue;
        }
        let mut w = col[k];
        for c in r..n {
            w += a[c * m + k] * col[c];
        }
        col[k] -= t * w;
        for c in r..n {
            col[c] -= t * a[c * m + k] * w;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mat(m: usize, n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..m * n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
            })
            .collect()
    }

    /// `A·X` for column-major A (m × n) and X (n × k).
    fn times(a: &[f64], m: usize, n: usize, x: &[f64], k: usize) -> Vec<f64> {
        let mut y = vec![0.0; m * k];
        for j in 0..k {
            for p in 0..n {
                for i in 0..m {
                    y[j * m + i] += a[p * m + i] * x[j * n + p];
                }
            }
        }
        y
    }

    /// Full rank, tall: X solves the normal equations Aᵀ(A·X − B) = 0.
    #[test]
    fn full_rank_solves_the_normal_equations() {
        for (m, n, k) in [(64, 32, 3), (5, 5, 1), (40, 7, 2), (7, 1, 1)] {
            let a = mat(m, n, 1);
            let b = mat(m, k, 2);
            let r = gelsy(&mut a.clone(), m, n, &b, k, 1e-10);
            assert_eq!(r.rank, n);
            let ax = times(&a, m, n, &r.x, k);
            let res: Vec<f64> = ax.iter().zip(&b).map(|(p, q)| p - q).collect();
            for j in 0..k {
                for c in 0..n {
                    let g = dot(&a[c * m..(c + 1) * m], &res[j * m..(j + 1) * m]);
                    assert!(g.abs() < 1e-12, "{m}x{n}: gradient {g}");
                }
            }
        }
    }

    /// Rank deficient (A = U·V with inner size r, wide and tall): the rank is r and X is
    /// the minimum-norm solution, orthogonal to A's null space (X = Aᵀ·y for some y).
    #[test]
    fn rank_deficient_gives_the_minimum_norm_solution() {
        for (m, n, r) in [(30, 20, 5), (10, 25, 4), (12, 12, 11), (6, 9, 1)] {
            let u = mat(m, r, 3);
            let v = mat(r, n, 4);
            let a = times(&u, m, r, &v, n);
            let b = mat(m, 1, 5);
            let res = gelsy(&mut a.clone(), m, n, &b, 1, 1e-10);
            assert_eq!(res.rank, r, "{m}x{n} rank {r}");
            // the projection of X on the null space of A (spanned by what V·z = 0 leaves):
            // X must lie in the row space of A, i.e. in the span of V's rows
            let mut q: Vec<Vec<f64>> = Vec::new();
            for i in 0..r {
                let mut row: Vec<f64> = (0..n).map(|j| v[j * r + i]).collect();
                for b in &q {
                    let d = dot(b, &row);
                    axpy(-d, b, &mut row);
                }
                let nr = norm(&row);
                q.push(row.iter().map(|x| x / nr).collect());
            }
            let mut x = res.x.clone();
            for b in &q {
                let d = dot(b, &x);
                axpy(-d, b, &mut x);
            }
            assert!(
                norm(&x) < 1e-10 * norm(&res.x).max(1.0),
                "null-space part {}",
                norm(&x)
            );
        }
    }

    #[test]
    fn zero_matrix_and_empty_shapes() {
        let r = gelsy(&mut [0.0; 6], 3, 2, &[1.0, 2.0, 3.0], 1, 1e-7);
        assert_eq!((r.rank, r.x), (0, vec![0.0, 0.0]));
        let r = gelsy(&mut [], 0, 2, &[], 1, 1e-7);
        assert_eq!((r.rank, r.x), (0, vec![0.0, 0.0]));
        // NaN input: no panic, no hang
        let mut a = [f64::NAN, 1.0, 2.0, 3.0];
        let _ = gelsy(&mut a, 2, 2, &[1.0, 1.0], 1, 1e-7);
    }
}
