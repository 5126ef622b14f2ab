//! The Bunch–Kaufman factorization `P·A·Pᵀ = L·D·Lᵀ` of a symmetric matrix (LAPACK's
//! `dsytf2`, lower) and the solve with its factors (`dsytrs`, lower), on one row-major
//! matrix: torch's `linalg.ldl_factor` / `ldl_solve` on the CPU (`sytrf` / `sytrs`).
//!
//! The loops are the ones rgrad's Python implementation ran before (the same operations
//! in the same order, so the same bits): the pivots (1-based, negative for both columns
//! of a 2×2 block), `info` (the first zero pivot) and the factors are unchanged. Rows,
//! not columns, are the inner loops here (row-major storage): each element is updated
//! by the same expression as before, so the order changes no result.

/// Bunch–Kaufman's α, (1 + √17)/8.
fn bk_alpha() -> f64 {
    (1.0 + 17f64.sqrt()) / 8.0
}

/// BLAS's `i?amax` over `xs`: the first index of the largest absolute value (NaN never
/// wins; 0 when every value is NaN or there are none).
fn iamax(xs: impl Iterator<Item = f64>) -> usize {
    let (mut best, mut at) = (-1.0f64, 0);
    for (i, x) in xs.enumerate() {
        if x.abs() > best {
            best = x.abs();
            at = i;
        }
    }
    at
}

/// `dsytf2` (lower) of the row-major `n × n` matrix `a` in place (its lower triangle
/// read and overwritten; the strict upper triangle is left as it was): L (unit
/// diagonal, implicit) and the 1×1 / 2×2 blocks of D, the 1-based pivots in `piv`
/// (negative for a 2×2 block) and the result `info` (the first zero pivot, 1-based, or
/// 0).
pub fn sytf2_lower(a: &mut [f64], n: usize, piv: &mut [i64]) -> i64 {
    sytf2_at_level(a, n, piv)
}

super::reflect::best_level!(fn sytf2_at_level(a: &mut [f64], n: usize, piv: &mut [i64]) -> i64 = sytf2_body);

#[inline(always)]
fn sytf2_body(a: &mut [f64], n: usize, piv: &mut [i64]) -> i64 {
    let alpha = bk_alpha();
    let at = |i: usize, j: usize| i * n + j;
    let mut info = 0i64;
    let mut scratch = vec![0.0; 2 * n];
    let mut k = 0;
    while k < n {
        let mut kstep = 1;
        let absakk = a[at(k, k)].abs();
        let (imax, colmax) = if k + 1 < n {
            let imax = k + 1 + iamax((k + 1..n).map(|i| a[at(i, k)]));
            (imax, a[at(imax, k)].abs())
        } else {
            (k, 0.0)
        };
        // (Python's max(absakk, colmax): absakk unless colmax is larger)
        let biggest = if colmax > absakk { colmax } else { absakk };
        let kp;
        if biggest == 0.0 || absakk.is_nan() {
            if info == 0 {
                info = k as i64 + 1;
            }
            kp = k;
        } else {
            if absakk >= alpha * colmax {
                kp = k;
            } else {
                let jmax = k + iamax((k..imax).map(|j| a[at(imax, j)]));
                let mut rowmax = a[at(imax, jmax)].abs();
                if imax + 1 < n {
                    let jmax = imax + 1 + iamax((imax + 1..n).map(|i| a[at(i, imax)]));
                    let r = a[at(jmax, imax)].abs();
                    // (Python's max(rowmax, r))
                    if r > rowmax {
                        rowmax = r;
                    }
                }
                if absakk >= alpha * colmax * (colmax / rowmax) {
                    kp = k;
                } else if a[at(imax, imax)].abs() >= alpha * rowmax {
                    kp = imax;
                } else {
                    kp = imax;
                    kstep = 2;
                }
            }
            let kk = k + kstep - 1;
            if kp != kk {
                // interchange rows and columns kk and kp of the trailing lower triangle
                for i in kp + 1..n {
                    a.swap(at(i, kk), at(i, kp));
                }
                for j in kk + 1..kp {
                    a.swap(at(j, kk), at(kp, j));
                }
                a.swap(at(kk, kk), at(kp, kp));
                if kstep == 2 {
                    a.swap(at(k + 1, k), at(kp, k));
                }
            }
            if kstep == 1 {
                if k + 1 < n {
                    // dsyr: A22 −= d11·x·xᵀ (lower), then x *= d11
                    let d11 = 1.0 / a[at(k, k)];
                    let (xs, ts) = scratch.split_at_mut(n);
                    for j in k + 1..n {
                        xs[j] = a[at(j, k)];
                        ts[j] = -d11 * xs[j];
                    }
                    for i in k + 1..n {
                        let row = &mut a[i * n..i * n + i + 1];
                        let aik = row[k];
                        let (x, t) = (&xs[k + 1..=i], &ts[k + 1..=i]);
                        for ((y, &xj), &tj) in row[k + 1..].iter_mut().zip(x).zip(t) {
                            let upd = *y + aik * tj;
                            *y = if xj != 0.0 { upd } else { *y };
                        }
                    }
                    for i in k + 1..n {
                        a[at(i, k)] *= d11;
                    }
                }
            } else if k + 2 < n {
                let mut d21 = a[at(k + 1, k)];
                let d11 = a[at(k + 1, k + 1)] / d21;
                let d22 = a[at(k, k)] / d21;
                let t = 1.0 / (d11 * d22 - 1.0);
                d21 = t / d21;
                let (wk, wkp1) = scratch.split_at_mut(n);
                for j in k + 2..n {
                    let (ajk, ajk1) = (a[at(j, k)], a[at(j, k + 1)]);
                    wk[j] = d21 * (d11 * ajk - ajk1);
                    wkp1[j] = d21 * (d22 * ajk1 - ajk);
                }
                for i in k + 2..n {
                    let row = &mut a[i * n..i * n + i + 1];
                    let (aik, aik1) = (row[k], row[k + 1]);
                    let (w0, w1) = (&wk[k + 2..=i], &wkp1[k + 2..=i]);
                    for ((y, &x0), &x1) in row[k + 2..].iter_mut().zip(w0).zip(w1) {
                        *y = *y - aik * x0 - aik1 * x1;
                    }
                }
                for j in k + 2..n {
                    a[at(j, k)] = wk[j];
                    a[at(j, k + 1)] = wkp1[j];
                }
            }
        }
        if kstep == 1 {
            piv[k] = kp as i64 + 1;
        } else {
            piv[k] = -(kp as i64 + 1);
            piv[k + 1] = piv[k];
        }
        k += kstep;
    }
    info
}

/// Why [`sytrs_lower`] could not solve: the pivots do not describe a factorization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadPivot;

/// A 1-based pivot as a row index, wrapping a negative one from the end as the Python
/// implementation did (`b[p - 1]`); None outside the rows.
fn row_of(p: i64, n: usize) -> Option<usize> {
    let i = p - 1;
    let i = if i < 0 { i + n as i64 } else { i };
    usize::try_from(i).ok().filter(|&i| i < n)
}

/// Swaps rows `i` and `j` of the row-major `b` (`w` columns).
fn swap_rows(b: &mut [f64], w: usize, i: usize, j: usize) {
    if i != j {
        let (lo, hi) = (i.min(j), i.max(j));
        let (x, y) = b.split_at_mut(hi * w);
        x[lo * w..(lo + 1) * w].swap_with_slice(&mut y[..w]);
    }
}

/// `x −= s·y` elementwise (`dsytrs`'s row updates, one expression an element).
#[inline(always)]
fn sub_scaled(x: &mut [f64], y: &[f64], s: f64) {
    for (x, y) in x.iter_mut().zip(y) {
        *x -= s * y;
    }
}

/// `dsytrs` (lower): `A·X = B` from [`sytf2_lower`]'s factors `a` (row-major `n × n`)
/// and pivots, B the row-major `n × w` `b`, overwritten by X. Err for pivots that are
/// out of range or a 2×2 block that does not fit.
pub fn sytrs_lower(
    a: &[f64],
    n: usize,
    piv: &[i64],
    b: &mut [f64],
    w: usize,
) -> Result<(), BadPivot> {
    sytrs_at_level(a, n, piv, b, w)
}

super::reflect::best_level!(fn sytrs_at_level(a: &[f64], n: usize, piv: &[i64], b: &mut [f64], w: usize) -> Result<(), BadPivot> = sytrs_body);

#[inline(always)]
fn sytrs_body(a: &[f64], n: usize, piv: &[i64], b: &mut [f64], w: usize) -> Result<(), BadPivot> {
    let at = |i: usize, j: usize| i * n + j;
    if w == 0 {
        return Ok(()); // (no right-hand side: nothing is read)
    }
    // L·D·Y = P·B
    let mut k = 0;
    while k < n {
        if piv[k] > 0 {
            let kp = row_of(piv[k], n).ok_or(BadPivot)?;
            swap_rows(b, w, k, kp);
            let (head, tail) = b.split_at_mut((k + 1) * w);
            let rk = &head[k * w..];
            for (i, ri) in (k + 1..n).zip(tail.chunks_exact_mut(w)) {
                sub_scaled(ri, rk, a[at(i, k)]);
            }
            let d = a[at(k, k)];
            b[k * w..(k + 1) * w].iter_mut().for_each(|x| *x /= d);
            k += 1;
        } else {
            if k + 1 >= n {
                return Err(BadPivot);
            }
            let kp = row_of(-piv[k], n).ok_or(BadPivot)?;
            swap_rows(b, w, k + 1, kp);
            let (head, tail) = b.split_at_mut((k + 2) * w);
            let (rk, rk1) = head[k * w..].split_at(w);
            for (i, ri) in (k + 2..n).zip(tail.chunks_exact_mut(w)) {
                sub_scaled(ri, rk, a[at(i, k)]);
                sub_scaled(ri, rk1, a[at(i, k + 1)]);
            }
            let akm1k = a[at(k + 1, k)];
            let akm1 = a[at(k, k)] / akm1k;
            let ak = a[at(k + 1, k + 1)] / akm1k;
            let denom = akm1 * ak - 1.0;
            let (r0, r1) = b[k * w..(k + 2) * w].split_at_mut(w);
            for (x0, x1) in r0.iter_mut().zip(r1.iter_mut()) {
                let (bkm1, bk) = (*x0 / akm1k, *x1 / akm1k);
                *x0 = (ak * bkm1 - bk) / denom;
                *x1 = (akm1 * bk - bkm1) / denom;
            }
            k += 2;
        }
    }
    // Lᵀ·Pᵀ·X = Y
    let mut k = n;
    while k > 0 {
        let kk = k - 1;
        if piv[kk] > 0 {
            let (head, tail) = b.split_at_mut((kk + 1) * w);
            let rk = &mut head[kk * w..];
            for (i, ri) in (kk + 1..n).zip(tail.chunks_exact(w)) {
                sub_scaled(rk, ri, a[at(i, kk)]);
            }
            let kp = row_of(piv[kk], n).ok_or(BadPivot)?;
            swap_rows(b, w, kk, kp);
            k -= 1;
        } else {
            if kk == 0 {
                return Err(BadPivot);
            }
            let (head, tail) = b.split_at_mut((kk + 1) * w);
            let (rk1, rk) = head[(kk - 1) * w..].split_at_mut(w);
            for (i, ri) in (kk + 1..n).zip(tail.chunks_exact(w)) {
                sub_scaled(rk, ri, a[at(i, kk)]);
                sub_scaled(rk1, ri, a[at(i, kk - 1)]);
            }
            let kp = row_of(-piv[kk], n).ok_or(BadPivot)?;
            swap_rows(b, w, kk, kp);
            k -= 2;
        }
    }
    Ok(())
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

    /// A symmetric n × n matrix with the diagonal scaled by `diag` (small: 2×2 pivots).
    fn sym(n: usize, seed: u64, diag: f64) -> Vec<f64> {
        let r = lcg(n * n, seed);
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                a[i * n + j] = r[i * n + j] + r[j * n + i];
            }
            a[i * n + i] *= diag;
        }
        a
    }

    /// P·A·Pᵀ and L·D·Lᵀ from the factors, as LAPACK defines them: A = U·D·Uᵀ with
    /// U = P₀·L₀·P₁·L₁ ⋯, applied to the identity one block at a time.
    fn reconstruct(f: &[f64], piv: &[i64], n: usize) -> Vec<f64> {
        // M = L D Lᵀ in the form A = W D Wᵀ with W = P(0) L(0) P(1) L(1) ..., built as
        // W = I, then for each block k: W ← W · P(k) · L(k)
        let mut wm = vec![0.0; n * n];
        (0..n).for_each(|i| wm[i * n + i] = 1.0);
        let mut d = vec![0.0; n * n];
        let mut k = 0;
        while k < n {
            let (s, kp) = if piv[k] > 0 {
                (1, (piv[k] - 1) as usize)
            } else {
                (2, (-piv[k] - 1) as usize)
            };
            let kk = k + s - 1;
            // W ← W · P(k): swap columns kk and kp
            for i in 0..n {
                wm.swap(i * n + kk, i * n + kp);
            }
            // W ← W · L(k): L(k) is I with column(s) k.. of the block's multipliers
            let mut lk = vec![0.0; n * n];
            (0..n).for_each(|i| lk[i * n + i] = 1.0);
            for c in k..k + s {
                for i in k + s..n {
                    lk[i * n + c] = f[i * n + c];
                }
            }
            let mut nw = vec![0.0; n * n];
            for i in 0..n {
                for p in 0..n {
                    let x = wm[i * n + p];
                    if x != 0.0 {
                        for j in 0..n {
                            nw[i * n + j] += x * lk[p * n + j];
                        }
                    }
                }
            }
            wm = nw;
            d[k * n + k] = f[k * n + k];
            if s == 2 {
                d[(k + 1) * n + k] = f[(k + 1) * n + k];
                d[k * n + k + 1] = f[(k + 1) * n + k];
                d[(k + 1) * n + k + 1] = f[(k + 1) * n + k + 1];
            }
            k += s;
        }
        // W D Wᵀ
        let mut wd = vec![0.0; n * n];
        for i in 0..n {
            for p in 0..n {
                for j in 0..n {
                    wd[i * n + j] += wm[i * n + p] * d[p * n + j];
                }
            }
        }
        let mut out = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                out[i * n + j] = (0..n).map(|p| wd[i * n + p] * wm[j * n + p]).sum();
            }
        }
        out
    }

    #[test]
    fn ldl_reconstructs_with_1x1_and_2x2_pivots() {
        for &(n, diag) in &[
            (1, 1.0),
            (2, 0.0),
            (4, 1.0),
            (5, 0.01),
            (8, 0.001),
            (16, 0.1),
            (33, 0.0),
            (64, 1.0),
            (65, 0.02),
        ] {
            let a = sym(n, (n * 3) as u64, diag);
            let mut f = a.clone();
            let mut piv = vec![0; n];
            let info = sytf2_lower(&mut f, n, &mut piv);
            assert_eq!(info, 0, "n={n}");
            if diag < 0.05 && n >= 4 {
                assert!(piv.iter().any(|&p| p < 0), "n={n}: a 2×2 pivot expected");
            }
            // the upper triangle is left alone
            for i in 0..n {
                for j in i + 1..n {
                    assert_eq!(f[i * n + j], a[i * n + j]);
                }
            }
            let back = reconstruct(&f, &piv, n);
            let err = back
                .iter()
                .zip(&a)
                .fold(0.0f64, |e, (x, y)| e.max((x - y).abs()));
            assert!(err < 1e-11 * n as f64, "n={n}: L D Lᵀ − A {err:e}");
            // and the solve
            let x0 = lcg(n * 3, 5);
            let mut b = vec![0.0; n * 3];
            for i in 0..n {
                for c in 0..3 {
                    b[i * 3 + c] = (0..n).map(|p| a[i * n + p] * x0[p * 3 + c]).sum();
                }
            }
            sytrs_lower(&f, n, &piv, &mut b, 3).unwrap_or_else(|_| panic!("n={n}: pivots"));
            let err = b
                .iter()
                .zip(&x0)
                .fold(0.0f64, |e, (x, y)| e.max((x - y).abs()));
            assert!(err < 1e-8, "n={n}: solve {err:e}");
        }
    }

    #[test]
    fn singular_info_and_bad_pivots() {
        let mut z = vec![0.0; 9];
        let mut piv = vec![0; 3];
        assert_eq!(sytf2_lower(&mut z, 3, &mut piv), 1);
        assert_eq!(piv, vec![1, 2, 3]);
        // a zero after the first step
        let mut a = vec![1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 2.0];
        assert_eq!(sytf2_lower(&mut a, 3, &mut piv), 2);
        let f = vec![1.0; 4];
        let mut b = vec![1.0; 2];
        assert_eq!(sytrs_lower(&f, 2, &[3, 1], &mut b, 1), Err(BadPivot));
        assert_eq!(sytrs_lower(&f, 2, &[1, -2], &mut b, 1), Err(BadPivot));
        // (a 0 pivot wraps to the last row, as Python's b[-1])
        let f3 = vec![1.0; 9];
        let mut b3 = vec![1.0; 3];
        assert!(sytrs_lower(&f3, 3, &[1, 0, 0], &mut b3, 1).is_ok());
        // NaN finishes
        let mut a = sym(6, 1, 1.0);
        a[7] = f64::NAN;
        let mut piv = vec![0; 6];
        sytf2_lower(&mut a, 6, &mut piv);
    }
}
