//! The inverse of `A = L Lᵀ` from its Cholesky factor (LAPACK's `potri`: `trtri`, then
//! `lauum`) on row-major matrices: `torch.cholesky_inverse`.
//!
//! `W = L⁻¹` and then `Wᵀ W`, each recursive on halves, the off-diagonal blocks as
//! triangular products (themselves recursive, down to the project's GEMM): about n³/3
//! flops each, where solving `L Lᵀ X = I` as two triangular solves against the identity
//! takes 2n³ (and reads the zeros of the identity as data). Generic over the element
//! type: float32 factors are inverted in float32 (as torch's spotri; the rest of this
//! module family works in float64), at twice the GEMM's lanes.

use super::{Real, gemm_add_to};
use crate::backend::cpu::matmul::MatView;

/// Blocks of at most this many rows run the plain row loops.
const BASE: usize = 32;

/// `(L Lᵀ)⁻¹` for the `n × n` lower triangle of the row-major `l` (its strict upper
/// triangle is not read), symmetric: the lower triangle computed, the upper its mirror.
/// Returns `None`, and `Some(info)` being LAPACK's (the 1-based index of the first zero on
/// the diagonal), when `L` is singular: `(x, info)` with `info = 0` on success.
///
/// Special values come out as LAPACK's loops give them (NaN and infinities propagate
/// through the products; `-0.0` where a zero product is negated), except that the GEMM
/// multiplies the zeros of a triangle that the loops skip (`0·∞` is NaN there), as
/// `gemm`-based `trtri`/`lauum` do. `parallel` lets large products use the pool.
pub(crate) fn inverse_lower<T: Real>(l: &[T], n: usize, parallel: bool) -> (Vec<T>, i64) {
    if let Some(i) = (0..n).find(|&i| l[i * n + i] == T::ZERO) {
        return (vec![T::ZERO; n * n], i as i64 + 1);
    }
    let mut w = vec![T::ZERO; n * n];
    trtri(l, n, &mut w, 0, n, parallel);
    let mut x = vec![T::ZERO; n * n];
    lauum(&w, n, &mut x, 0, n, parallel);
    mirror(&mut x, n);
    (x, 0)
}

/// The strict upper triangle of the `n × n` row-major `x` set to the lower one's mirror, in
/// tiles of 32 x 32 (a column-strided walk of 256 x 256 took 100 µs).
fn mirror<T: Copy>(x: &mut [T], n: usize) {
    const B: usize = 32;
    for bi in (0..n).step_by(B) {
        for bj in (0..=bi).step_by(B) {
            for i in bi..(bi + B).min(n) {
                for j in bj..(bj + B).min(i) {
                    x[j * n + i] = x[i * n + j];
                }
            }
        }
    }
}

/// A view of the `rows × cols` block at (`r`, `c`) of the `n`-wide row-major `data`,
/// transposed (read down its columns) with `t`.
fn view<T>(
    data: &[T],
    n: usize,
    (r, c): (usize, usize),
    (rows, cols): (usize, usize),
    t: bool,
) -> MatView<'_, T> {
    if t {
        MatView {
            data,
            offset: r * n + c,
            rows: cols,
            cols: rows,
            row_stride: 1,
            col_stride: n,
        }
    } else {
        MatView {
            data,
            offset: r * n + c,
            rows,
            cols,
            row_stride: n,
            col_stride: 1,
        }
    }
}

/// `W[r0..r1, r0..r1] = L[r0..r1, r0..r1]⁻¹` (lower; the block's strict upper triangle
/// of `w` is left as it was, zero).
///
/// With `L = [[A, 0], [B, C]]`: `W = [[A⁻¹, 0], [-C⁻¹ B A⁻¹, C⁻¹]]`, the two products of
/// the off-diagonal block as triangular products ([`trmm_right_lower`], [`trmm_left`]).
/// Blocks of at most [`BASE`] rows: LAPACK's
/// `trti2` by rows, `W[i, ..i] = -(L[i, ..i] W[..i, ..i]) / L[i, i]` as row axpys.
fn trtri<T: Real>(l: &[T], n: usize, w: &mut [T], r0: usize, r1: usize, parallel: bool) {
    let h = r1 - r0;
    if h <= BASE {
        let mut acc = [T::ZERO; BASE];
        for i in r0..r1 {
            let inv = T::ONE / l[i * n + i];
            let acc = &mut acc[..i - r0];
            acc.fill(T::ZERO);
            for k in r0..i {
                let lik = l[i * n + k];
                let row = &w[k * n + r0..k * n + k + 1];
                for (a, &v) in acc[..k + 1 - r0].iter_mut().zip(row) {
                    *a = lik.fma(v, *a);
                }
            }
            let ninv = -inv;
            for (d, &a) in w[i * n + r0..i * n + i].iter_mut().zip(acc.iter()) {
                *d = a * ninv;
            }
            w[i * n + i] = inv;
        }
        return;
    }
    let m = r0 + h / 2;
    let (h1, h2) = (m - r0, r1 - m);
    trtri(l, n, w, r0, m, parallel);
    trtri(l, n, w, m, r1, parallel);
    // T = B A⁻¹ (h2 × h1), then C⁻¹ T, negated into W's off-diagonal block (A⁻¹ and C⁻¹
    // lower triangles: LAPACK's trmm, half a GEMM's flops each)
    let mut t = vec![T::ZERO; h2 * h1];
    trmm_right_lower(
        &mut t,
        h1,
        view(l, n, (m, r0), (h2, h1), false),
        view(w, n, (r0, r0), (h1, h1), false),
        parallel,
    );
    let mut u = vec![T::ZERO; h2 * h1];
    trmm_left(
        &mut u,
        h1,
        view(w, n, (m, m), (h2, h2), false),
        true,
        MatView {
            data: &t,
            offset: 0,
            rows: h2,
            cols: h1,
            row_stride: h1,
            col_stride: 1,
        },
        parallel,
    );
    for (i, row) in u.chunks_exact(h1).enumerate() {
        for (d, &v) in w[(m + i) * n + r0..(m + i) * n + m].iter_mut().zip(row) {
            *d = -v;
        }
    }
}

/// The lower triangle of `X[r0..r1, r0..r1] = Wᵀ W` for `W` the block `w[r0..r1,
/// r0..r1]` (lower; X's block is zero on entry).
///
/// With `W = [[A, 0], [B, C]]`: `Wᵀ W = [[Aᵀ A + Bᵀ B, ·], [Cᵀ B, Cᵀ C]]`, `Bᵀ B` on the
/// GEMM (whole: the mirror's half is extra work), `Cᵀ B` a triangular product. Blocks of at most [`BASE`] rows: LAPACK's `lauu2` as row axpys,
/// `X[i, ..=i] = W[i, i] W[i, ..=i]`, then `+= W[k, i] W[k, ..=i]` for every row `k > i`.
fn lauum<T: Real>(w: &[T], n: usize, x: &mut [T], r0: usize, r1: usize, parallel: bool) {
    let h = r1 - r0;
    if h <= BASE {
        for k in r0..r1 {
            let wk = &w[k * n + r0..k * n + k + 1];
            for i in r0..=k {
                let s = wk[i - r0];
                let row = x[i * n + r0..i * n + i + 1].iter_mut().zip(wk);
                if i == k {
                    // (row i's first term, written: W[i, i] W[i, j] keeps a -0.0 as
                    // LAPACK's scaling of the row does)
                    row.for_each(|(d, &v)| *d = s * v);
                } else {
                    row.for_each(|(d, &v)| *d = s.fma(v, *d));
                }
            }
        }
        return;
    }
    let m = r0 + h / 2;
    let (h1, h2) = (m - r0, r1 - m);
    lauum(w, n, x, r0, m, parallel);
    lauum(w, n, x, m, r1, parallel);
    // Bᵀ B into the top-left block (its lower triangle), Cᵀ B into the bottom-left one
    let mut t = vec![T::ZERO; h1 * h1];
    gemm_add_to(
        &mut t,
        h1,
        view(w, n, (m, r0), (h2, h1), true),
        view(w, n, (m, r0), (h2, h1), false),
        parallel,
    );
    for i in 0..h1 {
        for (d, &v) in x[(r0 + i) * n + r0..(r0 + i) * n + r0 + i + 1]
            .iter_mut()
            .zip(&t[i * h1..i * h1 + i + 1])
        {
            *d = *d + v;
        }
    }
    let mut u = vec![T::ZERO; h2 * h1];
    trmm_left(
        &mut u,
        h1,
        view(w, n, (m, m), (h2, h2), true),
        false,
        view(w, n, (m, r0), (h2, h1), false),
        parallel,
    );
    for (i, row) in u.chunks_exact(h1).enumerate() {
        x[(m + i) * n + r0..(m + i) * n + m].copy_from_slice(row);
    }
}

/// Triangles of at most this many rows multiply as a whole GEMM (zeros included).
const TRMM_BASE: usize = 48;

/// The `rows × cols` block at (`r`, `c`) of the view `v`.
fn sub<'a, T>(
    v: &MatView<'a, T>,
    (r, c): (usize, usize),
    (rows, cols): (usize, usize),
) -> MatView<'a, T> {
    MatView {
        data: v.data,
        offset: v.offset + r * v.row_stride + c * v.col_stride,
        rows,
        cols,
        row_stride: v.row_stride,
        col_stride: v.col_stride,
    }
}

/// `out += T · F` for `T` a square triangle (`lower`, else upper: the other triangle of
/// the view is zeros, never needed) and `F` full; `out` row-major with rows `ld` apart.
/// Recursive on T's halves: the two diagonal blocks recurse, the off-diagonal one is one
/// GEMM (LAPACK's trmm: half the flops of the whole product).
fn trmm_left<T: Real>(
    out: &mut [T],
    ld: usize,
    t: MatView<'_, T>,
    lower: bool,
    f: MatView<'_, T>,
    parallel: bool,
) {
    let h = t.rows;
    if h <= TRMM_BASE {
        gemm_add_to(out, ld, t, f, parallel);
        return;
    }
    let (m, k) = (h / 2, f.cols);
    let (f1, f2) = (sub(&f, (0, 0), (m, k)), sub(&f, (m, 0), (h - m, k)));
    let (t11, t22) = (sub(&t, (0, 0), (m, m)), sub(&t, (m, m), (h - m, h - m)));
    let (top, bottom) = out.split_at_mut(m * ld);
    trmm_left(top, ld, t11, lower, f1, parallel);
    if lower {
        gemm_add_to(bottom, ld, sub(&t, (m, 0), (h - m, m)), f1, parallel);
    } else {
        gemm_add_to(top, ld, sub(&t, (0, m), (m, h - m)), f2, parallel);
    }
    trmm_left(bottom, ld, t22, lower, f2, parallel);
}

/// `out += F · T` for `T` a square lower triangle and `F` full (as [`trmm_left`], on
/// T's column halves: `[F₁ F₂] T = [F₁ T₁₁ + F₂ T₂₁, F₂ T₂₂]`).
fn trmm_right_lower<T: Real>(
    out: &mut [T],
    ld: usize,
    f: MatView<'_, T>,
    t: MatView<'_, T>,
    parallel: bool,
) {
    let h = t.rows;
    if h <= TRMM_BASE {
        gemm_add_to(out, ld, f, t, parallel);
        return;
    }
    let (m, r) = (h / 2, f.rows);
    let (f1, f2) = (sub(&f, (0, 0), (r, m)), sub(&f, (0, m), (r, h - m)));
    trmm_right_lower(out, ld, f1, sub(&t, (0, 0), (m, m)), parallel);
    gemm_add_to(out, ld, f2, sub(&t, (m, 0), (h - m, m)), parallel);
    trmm_right_lower(
        &mut out[m..],
        ld,
        f2,
        sub(&t, (m, m), (h - m, h - m)),
        parallel,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lower triangle with a dominant diagonal (well conditioned), from an LCG.
    fn lower(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        };
        let mut l = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..i {
                l[i * n + j] = next();
            }
            l[i * n + i] = 2.0 + next();
            // (the strict upper triangle is never read: garbage there must not matter)
            for j in i + 1..n {
                l[i * n + j] = 1e300;
            }
        }
        l
    }

    /// (L Lᵀ) X for the lower triangle of `l`.
    fn a_times(l: &[f64], x: &[f64], n: usize) -> Vec<f64> {
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                a[i * n + j] = (0..=i.min(j)).map(|k| l[i * n + k] * l[j * n + k]).sum();
            }
        }
        let mut p = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                p[i * n + j] = (0..n).map(|k| a[i * n + k] * x[k * n + j]).sum();
            }
        }
        p
    }

    #[test]
    fn inverts_l_lt_at_sizes_around_the_base_and_its_splits() {
        for n in [0, 1, 2, 7, 31, 32, 33, 64, 65, 100, 130] {
            for parallel in [false, true] {
                let l = lower(n, n as u64 + 1);
                let (x, info) = inverse_lower(&l, n, parallel);
                assert_eq!(info, 0);
                let p = a_times(&l, &x, n);
                for i in 0..n {
                    for j in 0..n {
                        let want = if i == j { 1.0 } else { 0.0 };
                        assert!(
                            (p[i * n + j] - want).abs() < 1e-12,
                            "n {n}: ({i}, {j}) {}",
                            p[i * n + j]
                        );
                        assert_eq!(x[i * n + j].to_bits(), x[j * n + i].to_bits(), "symmetric");
                    }
                }
            }
        }
    }

    #[test]
    fn triangular_products_are_the_whole_products() {
        // a triangle (zeros in its other half, as the callers' views hold) times a full
        // block, at sizes below, at and around the recursion's base
        let mut seed = 1u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        };
        for h in [3, 48, 49, 97, 150] {
            let k = 37;
            let tri: Vec<f64> = (0..h * h).map(|_| next()).collect();
            let full: Vec<f64> = (0..h * k).map(|_| next()).collect();
            for lower in [true, false] {
                let t: Vec<f64> = (0..h * h)
                    .map(|i| {
                        if (i % h <= i / h) == lower || i % h == i / h {
                            tri[i]
                        } else {
                            0.0
                        }
                    })
                    .collect();
                let tv = view(&t, h, (0, 0), (h, h), false);
                let fv = MatView {
                    data: &full,
                    offset: 0,
                    rows: h,
                    cols: k,
                    row_stride: k,
                    col_stride: 1,
                };
                let mut got = vec![0.5; h * k];
                trmm_left(&mut got, k, tv, lower, fv, false);
                for i in 0..h {
                    for j in 0..k {
                        let want =
                            0.5 + (0..h).map(|p| t[i * h + p] * full[p * k + j]).sum::<f64>();
                        assert!((got[i * k + j] - want).abs() < 1e-12, "left {h} {lower}");
                    }
                }
                if lower {
                    // F (k × h) · T
                    let fv = MatView {
                        data: &full,
                        offset: 0,
                        rows: k,
                        cols: h,
                        row_stride: h,
                        col_stride: 1,
                    };
                    let mut got = vec![0.0; k * h];
                    trmm_right_lower(&mut got, h, fv, tv, false);
                    for i in 0..k {
                        for j in 0..h {
                            let want: f64 = (0..h).map(|p| full[i * h + p] * t[p * h + j]).sum();
                            assert!((got[i * h + j] - want).abs() < 1e-12, "right {h}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn float32_is_inverted_in_float32_close_to_float64() {
        for n in [5, 33, 100] {
            let l = lower(n, 17 + n as u64);
            let l32: Vec<f32> = l.iter().map(|&v| v as f32).collect();
            let (x32, info) = inverse_lower(&l32, n, false);
            assert_eq!(info, 0);
            let l64: Vec<f64> = l32.iter().map(|&v| f64::from(v)).collect();
            let (x64, _) = inverse_lower(&l64, n, false);
            let scale = x64.iter().fold(0f64, |m, v| m.max(v.abs()));
            for (a, b) in x32.iter().zip(&x64) {
                assert!((f64::from(*a) - b).abs() <= 1e-5 * scale, "n {n}: {a} {b}");
            }
            assert_eq!(inverse_lower(&[0f32; 4], 2, false).1, 1);
        }
    }

    #[test]
    fn the_same_bits_with_and_without_the_pool() {
        let n = 200;
        let l = lower(n, 9);
        assert_eq!(inverse_lower(&l, n, false).0, inverse_lower(&l, n, true).0);
    }

    #[test]
    fn a_zero_on_the_diagonal_is_lapacks_info_and_special_values_propagate() {
        let mut l = lower(40, 3);
        l[17 * 40 + 17] = 0.0;
        l[30 * 40 + 30] = 0.0;
        assert_eq!(inverse_lower(&l, 40, false).1, 18);
        // LAPACK's loops on [[1, 0], [inf, 1]]: W = [[1, 0], [-inf, 1]], Wᵀ W
        let (x, info) = inverse_lower(&[1.0f64, 0.0, f64::INFINITY, 1.0], 2, false);
        assert_eq!(
            (x, info),
            (
                vec![f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY, 1.0],
                0
            )
        );
        // a zero off-diagonal is negated: -0.0 as LAPACK gives
        let (x, _) = inverse_lower(&[2.0f64, 0.0, 0.0, 3.0], 2, false);
        assert_eq!(x[1].to_bits(), (-0.0f64).to_bits());
        assert_eq!(x[2].to_bits(), (-0.0f64).to_bits());
        let (x, _) = inverse_lower(&[1.0f64, 0.0, f64::NAN, 1.0], 2, false);
        assert!(x[0].is_nan() && x[1].is_nan() && x[2].is_nan() && x[3] == 1.0);
    }
}
