//! The building blocks the spectral kernels (`eigh`, `svd`, `qr`) share: Householder
//! reflectors in LAPACK's `dlarfg` convention, plane rotations of two rows, the vector
//! loops they are made of, and the product of a sequence of reflectors.
//!
//! Every loop here is written so that the compiler can vectorise it: updates are
//! `y += a·x` over contiguous slices, and dot products keep eight independent partial
//! sums (a float sum in one accumulator cannot be vectorised, since that would reorder
//! its additions). The order of the additions is fixed, so the results do not depend on
//! the instruction set the kernel was compiled for. The helpers are `#[inline(always)]`
//! so that they take on the target features of the kernel that calls them (see
//! [`best_level!`]).

/// Runs `$body` (an expression over the kernel's arguments, with the helpers of this
/// module inlined into it) built for the widest vectors the CPU has: AVX-512, AVX2 or
/// the baseline. The body is compiled three times; the results are the same bits at
/// every level, since no helper uses fused multiply-adds or reassociates.
macro_rules! best_level {
    (fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty = $body:path) => {
        fn $name($($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            {
                use crate::backend::cpu::vmath::{Level, level};
                #[target_feature(enable = "avx512f")]
                fn wide($($arg: $ty),*) -> $ret {
                    $body($($arg),*)
                }
                #[target_feature(enable = "avx2")]
                fn mid($($arg: $ty),*) -> $ret {
                    $body($($arg),*)
                }
                match level() {
                    // SAFETY: `level` reports only what the CPU supports.
                    Level::Avx512 => return unsafe { wide($($arg),*) },
                    // SAFETY: as above.
                    Level::Avx2 => return unsafe { mid($($arg),*) },
                    Level::Baseline => {}
                }
            }
            $body($($arg),*)
        }
    };
}
pub(crate) use best_level;

/// `x · y` over the common length, in eight interleaved partial sums (so that it
/// vectorises), added pairwise at the end.
#[inline(always)]
pub(crate) fn dot(x: &[f64], y: &[f64]) -> f64 {
    let len = x.len().min(y.len());
    let (x, y) = (&x[..len], &y[..len]);
    let mut acc = [0.0f64; 8];
    let xc = x.chunks_exact(8);
    let yc = y.chunks_exact(8);
    let (xr, yr) = (xc.remainder(), yc.remainder());
    for (a, b) in xc.zip(yc) {
        for l in 0..8 {
            acc[l] += a[l] * b[l];
        }
    }
    for (l, (a, b)) in xr.iter().zip(yr).enumerate() {
        acc[l] += a * b;
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))
}

/// Applies the reflector `H = I - tau·v·vᵀ` from the left to the block of the row-major
/// `w` (`ld` columns) at rows `j..j + v.len()`, columns `j + 1..ld` (the trailing columns
/// of a Householder step of QR or of the bidiagonalisation): `t = vᵀ·block`, as a
/// combination of rows, then `block -= tau·v·t`, a rank-1 update row by row. `t` is
/// scratch of at least `ld - j - 1` elements.
#[inline(always)]
pub(crate) fn reflect_trailing_rows(
    w: &mut [f64],
    ld: usize,
    j: usize,
    v: &[f64],
    tau: f64,
    t: &mut [f64],
) {
    if tau == 0.0 || j + 1 >= ld {
        return;
    }
    let t = &mut t[..ld - j - 1];
    t.fill(0.0);
    for (i, vi) in v.iter().enumerate() {
        let row = (j + i) * ld;
        axpy(*vi, &w[row + j + 1..row + ld], t);
    }
    for (i, vi) in v.iter().enumerate() {
        let row = (j + i) * ld;
        axpy(-tau * vi, t, &mut w[row + j + 1..row + ld]);
    }
}

/// `y += alpha · x` over the common length.
#[inline(always)]
pub(crate) fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += alpha * xi;
    }
}

/// The 2-norm of `x`: the plain sum of squares when it can neither overflow nor lose
/// precision to underflow (the usual case, and a vectorised loop), else the scaled
/// loop of LAPACK's `dnrm2` ([`super::qr::norm2`]).
#[inline(always)]
pub(crate) fn norm(x: &[f64]) -> f64 {
    let ssq = dot(x, x);
    if ssq.is_finite() && (ssq > 1e-280 || ssq == 0.0 && x.iter().all(|&v| v == 0.0)) {
        ssq.sqrt()
    } else {
        super::qr::norm2(x.iter().copied())
    }
}

/// `sqrt(a² + b²)` without overflow or harmful underflow: the direct formula when the
/// larger magnitude is in a safe range (always, for the scaled matrices the kernels
/// work on), else `f64::hypot`.
#[inline(always)]
pub(crate) fn hyp(a: f64, b: f64) -> f64 {
    let big = a.abs().max(b.abs());
    if big > 1e-140 && big < 1e140 {
        (a * a + b * b).sqrt()
    } else {
        a.hypot(b)
    }
}

/// LAPACK's `dlarfg`: the reflector H = I − τ·v·vᵀ (v₀ = 1) with H·[α; x] = [β; 0].
/// On return `x` holds v₁.. and the result is (β, τ). When `x` is already zero there is
/// no reflection: τ = 0 and β = α (so β keeps α's sign, as geqrf's R does).
#[inline(always)]
pub(crate) fn reflector(alpha: f64, x: &mut [f64]) -> (f64, f64) {
    let xnorm = norm(x);
    if xnorm == 0.0 {
        return (alpha, 0.0);
    }
    let beta = -hyp(alpha, xnorm).copysign(alpha);
    let tau = (beta - alpha) / beta;
    let scal = 1.0 / (alpha - beta);
    for v in x.iter_mut() {
        *v *= scal;
    }
    (beta, tau)
}

/// The rotation (c, s, r) with c·f + s·g = r and −s·f + c·g = 0 (c = 1, s = 0 when
/// both are zero).
#[inline(always)]
pub(crate) fn givens(f: f64, g: f64) -> (f64, f64, f64) {
    if g == 0.0 {
        return (1.0, 0.0, f);
    }
    let r = hyp(f, g);
    (f / r, g / r, r)
}

/// Rows `i` and `j` (i ≠ j) of the row-major matrix `x` (rows of length `len`) rotated:
/// xᵢ ← c·xᵢ + s·xⱼ, xⱼ ← −s·xᵢ + c·xⱼ.
#[inline(always)]
pub(crate) fn rotate_rows(x: &mut [f64], len: usize, i: usize, j: usize, c: f64, s: f64) {
    let (ri, rj) = if i < j {
        let (a, b) = x.split_at_mut(j * len);
        (&mut a[i * len..(i + 1) * len], &mut b[..len])
    } else {
        let (a, b) = x.split_at_mut(i * len);
        (&mut b[..len], &mut a[j * len..(j + 1) * len])
    };
    for (a, b) in ri.iter_mut().zip(rj.iter_mut()) {
        let (p, q) = (*a, *b);
        *a = c * p + s * q;
        *b = c * q - s * p;
    }
}

/// The first `rows` rows of Qᵀ, as a row-major rows×`len` matrix, where Q = H₀·H₁·…
/// is the product of `refl`'s reflectors in order; reflector t acts on the indices
/// `offset_t ..` (nondecreasing in t) with vector `v` (v₀ = 1 included) and factor τ.
/// Qᵀ = …·H₁·H₀ is built as I·H_last·…·H₀, one reflector at a time from the right: each
/// row x gets x ← x − τ·(x·v)·vᵀ, and rows above `offset_t` are skipped, since their
/// entries from `offset_t` on are still zero (dorgqr's saving).
#[inline(always)]
pub(crate) fn product_t(rows: usize, len: usize, refl: &[(usize, Vec<f64>, f64)]) -> Vec<f64> {
    let mut x = vec![0.0; rows * len];
    for i in 0..rows.min(len) {
        x[i * len + i] = 1.0;
    }
    for (off, v, tau) in refl.iter().rev() {
        if *tau == 0.0 || v.is_empty() {
            continue;
        }
        let end = off + v.len();
        for i in (*off).min(rows)..rows {
            let row = &mut x[i * len + off..i * len + end];
            let t = -tau * dot(row, v);
            axpy(t, v, row);
        }
    }
    x
}

/// The transpose of the row-major rows×cols matrix `x`.
#[inline(always)]
pub(crate) fn transpose(x: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut t = vec![0.0; rows * cols];
    for i in 0..rows {
        for j in 0..cols {
            t[j * rows + i] = x[i * cols + j];
        }
    }
    t
}

/// The power of two nearest 1/max|x| (1 when `x` is zero): scaling by it is exact and
/// brings the largest entry near 1, so that squares and products in the kernels
/// neither overflow nor underflow.
pub(crate) fn unit_scale(x: &[f64]) -> f64 {
    let amax = x.iter().fold(0.0f64, |acc, v| acc.max(v.abs()));
    if amax > 0.0 && amax.is_finite() {
        2f64.powi(-(amax.log2().round() as i32))
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_norm_and_reflector() {
        let x: Vec<f64> = (0..19).map(|i| f64::from(i) - 4.5).collect();
        let plain: f64 = x.iter().map(|v| v * v).sum();
        assert!((dot(&x, &x) - plain).abs() < 1e-12);
        assert!((norm(&x) - plain.sqrt()).abs() < 1e-12);
        // tiny and huge vectors go through the scaled loop
        assert!((norm(&[3e-200, 4e-200]) / 5e-200 - 1.0).abs() < 1e-15);
        assert!((norm(&[3e200, 4e200]) / 5e200 - 1.0).abs() < 1e-15);
        assert_eq!(norm(&[0.0, 0.0]), 0.0);
        // H·[α; x] = [β; 0]
        let (alpha, mut v) = (3.0, vec![4.0, 0.0, 12.0]);
        let (beta, tau) = reflector(alpha, &mut v);
        assert!((beta + 13.0).abs() < 1e-14);
        let full = [1.0, v[0], v[1], v[2]];
        let orig = [3.0, 4.0, 0.0, 12.0];
        let s: f64 = full.iter().zip(&orig).map(|(a, b)| a * b).sum();
        let h: Vec<f64> = orig
            .iter()
            .zip(&full)
            .map(|(o, f)| o - tau * s * f)
            .collect();
        assert!((h[0] - beta).abs() < 1e-13);
        assert!(h[1..].iter().all(|x| x.abs() < 1e-13));
        assert_eq!(reflector(-2.0, &mut [0.0, 0.0]), (-2.0, 0.0));
    }

    #[test]
    fn givens_and_rotations() {
        let (c, s, r) = givens(3.0, 4.0);
        assert!((r - 5.0).abs() < 1e-15 && (-s * 3.0 + c * 4.0).abs() < 1e-15);
        assert_eq!(givens(2.0, 0.0), (1.0, 0.0, 2.0));
        let mut x = vec![1.0, 2.0, 3.0, 4.0];
        rotate_rows(&mut x, 2, 1, 0, 0.0, 1.0);
        assert_eq!(x, vec![-3.0, -4.0, 1.0, 2.0]);
    }
}
