//! Householder QR in LAPACK's packed form and the products of its reflectors, on one
//! column-major matrix (element (i, j) of an `ld`-row matrix at `j·ld + i`, so that a
//! column, which every reflector reads and updates, is contiguous):
//!
//! * [`geqrf`]: R on and above the diagonal, reflector i's vector below it (its leading
//!   1 implicit) and `tau` (`dgeqr2` / `dgeqrf`, reflectors in `dlarfg`'s convention:
//!   β = −sign(α)·‖(α, x)‖, τ = (β − α)/β, and no reflection, τ = 0, for a zero x);
//! * [`orgqr`]: the first n columns of H₀ ⋯ H_{k−1} (`dorg2r` / `dorgqr`), for any τ;
//! * [`ormqr_left`]: Q·C or Qᵀ·C without forming Q (`dorm2r` / `dormqr`; C·Q and C·Qᵀ
//!   are the same products on Cᵀ).
//!
//! Small matrices run the unblocked loops (a reflector at a time: a dot product and an
//! axpy per column). From [`NX`] reflectors on, the factorization and the products are
//! blocked as LAPACK's: a panel of [`NB`] reflectors is factored (or taken) unblocked,
//! its compact WY form `I − V·T·Vᵀ` built (`dlarft`) and applied to the rest of the
//! matrix with two products on the project's GEMM (`dlarfb`). Both give LAPACK's
//! results up to rounding (its bits are not reproduced). NaN and infinite input run the
//! same bounded loops.

use super::gemm_add_to;
use super::reflect::{axpy, best_level, dot, reflector};
use crate::backend::cpu::matmul::MatView;

/// Columns per block of the blocked forms (LAPACK's `nb` for these routines).
pub(crate) const NB: usize = 32;
/// The blocked forms run from this many reflectors on (below it, the unblocked loops;
/// LAPACK's crossover `nx`, measured here: see docs/benchmarks.md).
pub(crate) const NX: usize = 64;

/// `H = I − τ·v·vᵀ` applied from the left to the `cols` columns that follow the vector
/// `v = a[at..at + len]` (its leading 1 in place) at `ld` apart: column c (1 ≤ c ≤ cols)
/// is `a[at + c·ld..][..len]`. LAPACK's `dlarf`: w = Cᵀv, then C −= τ·v·wᵀ.
#[inline(always)]
fn reflect_columns(a: &mut [f64], ld: usize, at: usize, len: usize, cols: usize, tau: f64) {
    if tau == 0.0 || cols == 0 || len == 0 {
        return;
    }
    let (head, rest) = a.split_at_mut(at + len);
    let v = &head[at..];
    for c in 1..=cols {
        let s = c * ld - len;
        let col = &mut rest[s..s + len];
        let w = dot(v, col);
        axpy(-tau * w, v, col);
    }
}

/// `dgeqr2` on the `rows × cols` block at `off` of the column-major `a` (`ld` rows):
/// R and the reflectors in place, their τ in `tau` (`min(rows, cols)`).
#[inline(always)]
fn geqr2_body(a: &mut [f64], ld: usize, off: usize, rows: usize, cols: usize, tau: &mut [f64]) {
    for (i, ti) in tau.iter_mut().enumerate().take(rows.min(cols)) {
        let at = off + i * ld + i;
        let len = rows - i;
        let (beta, t) = reflector(a[at], &mut a[at + 1..at + len]);
        *ti = t;
        a[at] = 1.0;
        reflect_columns(a, ld, at, len, cols - i - 1, t);
        a[at] = beta;
    }
}

best_level!(fn geqr2(a: &mut [f64], ld: usize, off: usize, rows: usize, cols: usize, tau: &mut [f64]) -> () = geqr2_body);

/// `dorg2r` on the `rows × cols` block at `off` (`cols ≤ rows`): its first `kr` columns
/// hold reflectors (below the diagonal), the block becomes the first `cols` columns of
/// H₀ ⋯ H_{kr−1}. Nothing above the diagonal is read.
#[inline(always)]
fn org2r_body(
    a: &mut [f64],
    ld: usize,
    off: usize,
    rows: usize,
    cols: usize,
    kr: usize,
    tau: &[f64],
) {
    for j in kr..cols {
        let c = off + j * ld;
        a[c..c + rows].fill(0.0);
        a[c + j] = 1.0;
    }
    for i in (0..kr).rev() {
        let at = off + i * ld + i;
        let len = rows - i;
        if i + 1 < cols {
            a[at] = 1.0;
            reflect_columns(a, ld, at, len, cols - i - 1, tau[i]);
        }
        let s = -tau[i];
        a[at + 1..at + len].iter_mut().for_each(|x| *x *= s);
        a[at] = 1.0 - tau[i];
        a[off + i * ld..at].fill(0.0);
    }
}

best_level!(fn org2r(a: &mut [f64], ld: usize, off: usize, rows: usize, cols: usize, kr: usize, tau: &[f64]) -> () = org2r_body);

/// The reflectors of columns `col..col + ib` of the column-major `a` (`ld` rows), from
/// row `col` on (`rows` of them), as an explicit `rows × ib` column-major V: unit
/// diagonal, zeros above it.
fn explicit_v(a: &[f64], ld: usize, col: usize, rows: usize, ib: usize, v: &mut Vec<f64>) {
    v.clear();
    v.resize(rows * ib, 0.0);
    for j in 0..ib {
        let src = (col + j) * ld + col;
        let dst = &mut v[j * rows..(j + 1) * rows];
        dst[j] = 1.0;
        dst[j + 1..].copy_from_slice(&a[src + j + 1..src + rows]);
    }
}

/// `dlarft` (forward, column-wise): the upper triangular T (`ib × ib`, column-major)
/// with H₀ ⋯ H_{ib−1} = I − V·T·Vᵀ, V explicit (`rows × ib`, [`explicit_v`]).
#[inline(always)]
fn larft_body(v: &[f64], rows: usize, ib: usize, tau: &[f64], t: &mut [f64]) {
    for i in 0..ib {
        let ti = i * ib;
        if tau[i] == 0.0 {
            t[ti..=ti + i].fill(0.0);
            continue;
        }
        let vi = &v[i * rows + i..(i + 1) * rows];
        for j in 0..i {
            t[ti + j] = -tau[i] * dot(&v[j * rows + i..(j + 1) * rows], vi);
        }
        // T[0..i, i] = T[0..i, 0..i] · T[0..i, i], from the top (row j reads rows ≥ j)
        for j in 0..i {
            let mut s = 0.0;
            for l in j..i {
                s += t[l * ib + j] * t[ti + l];
            }
            t[ti + j] = s;
        }
        t[ti + i] = tau[i];
    }
}

best_level!(fn larft(v: &[f64], rows: usize, ib: usize, tau: &[f64], t: &mut [f64]) -> () = larft_body);

/// Scratch of the blocked forms: V, T, its transpose and the product W.
#[derive(Default)]
struct Block {
    v: Vec<f64>,
    t: Vec<f64>,
    tt: Vec<f64>,
    w: Vec<f64>,
}

impl Block {
    /// Takes reflectors `col..col + ib` of `a` (rows `col..col + rows`) and builds T.
    fn take(&mut self, a: &[f64], ld: usize, col: usize, rows: usize, ib: usize, tau: &[f64]) {
        explicit_v(a, ld, col, rows, ib, &mut self.v);
        self.t.clear();
        self.t.resize(ib * ib, 0.0);
        larft(&self.v, rows, ib, &tau[..ib], &mut self.t);
    }

    /// `dlarfb` (left, forward, column-wise): the `rows × nc` block at `off` of the
    /// column-major `c` (`ld` rows) becomes H·C (`trans`: Hᵀ·C), H = I − V·T·Vᵀ from
    /// [`Block::take`]. As products of Cᵀ (row-major, the GEMM's layout): Wᵀ = Cᵀ·V,
    /// Wᵀ ← −Wᵀ·M (M = T for Hᵀ, Tᵀ for H), Cᵀ += Wᵀ·Vᵀ.
    #[allow(clippy::too_many_arguments)]
    fn apply_left(
        &mut self,
        rows: usize,
        ib: usize,
        trans: bool,
        c: &mut [f64],
        ld: usize,
        off: usize,
        nc: usize,
        parallel: bool,
    ) {
        if nc == 0 || rows == 0 {
            return;
        }
        let Block { v, t, tt, w } = self;
        w.clear();
        w.resize(nc * ib, 0.0);
        let ct = MatView {
            data: &*c,
            offset: off,
            rows: nc,
            cols: rows,
            row_stride: ld,
            col_stride: 1,
        };
        let vv = MatView {
            data: &v[..],
            offset: 0,
            rows,
            cols: ib,
            row_stride: 1,
            col_stride: rows,
        };
        gemm_add_to(w, ib, ct, vv, parallel);
        // M's column j, contiguous: T's column j (rows ≤ j) or T's row j (columns ≥ j)
        tt.clear();
        tt.resize(ib * ib, 0.0);
        for j in 0..ib {
            for l in 0..ib {
                tt[j * ib + l] = if trans { t[j * ib + l] } else { t[l * ib + j] };
            }
        }
        triangular_times(w, nc, ib, tt, trans);
        let wv = MatView {
            data: &w[..],
            offset: 0,
            rows: nc,
            cols: ib,
            row_stride: ib,
            col_stride: 1,
        };
        let vt = MatView {
            data: &v[..],
            offset: 0,
            rows: ib,
            cols: rows,
            row_stride: rows,
            col_stride: 1,
        };
        gemm_add_to(&mut c[off..], ld, wv, vt, parallel);
    }
}

/// Each row x of the row-major `nc × ib` `w` becomes −x·M, M's column j given
/// contiguously in `mcols[j·ib..]`: nonzero at rows ≤ j (`upper`) or ≥ j.
#[inline(always)]
fn triangular_times_body(w: &mut [f64], nc: usize, ib: usize, mcols: &[f64], upper: bool) {
    let mut row = vec![0.0; ib];
    for r in 0..nc {
        let x = &mut w[r * ib..(r + 1) * ib];
        row.copy_from_slice(x);
        for (j, out) in x.iter_mut().enumerate() {
            let col = &mcols[j * ib..(j + 1) * ib];
            *out = -if upper {
                dot(&row[..=j], &col[..=j])
            } else {
                dot(&row[j..], &col[j..])
            };
        }
    }
}

best_level!(fn triangular_times(w: &mut [f64], nc: usize, ib: usize, mcols: &[f64], upper: bool) -> () = triangular_times_body);

/// `geqrf` of the column-major `m × n` matrix `a` (`ld = m`), in place: R on and above
/// the diagonal, the reflectors below it; `tau` gets `min(m, n)` factors. Blocked
/// (`dgeqrf`) from more than [`NX`] reflectors on; `parallel` lets its products use the
/// pool.
pub fn geqrf(a: &mut [f64], m: usize, n: usize, tau: &mut [f64], parallel: bool) {
    let k = m.min(n);
    let mut j = 0;
    if k > NX {
        let mut blk = Block::default();
        while j < k - NX {
            let ib = NB.min(k - j);
            geqr2(a, m, j * m + j, m - j, ib, &mut tau[j..j + ib]);
            if j + ib < n {
                blk.take(a, m, j, m - j, ib, &tau[j..]);
                blk.apply_left(
                    m - j,
                    ib,
                    true,
                    a,
                    m,
                    (j + ib) * m + j,
                    n - j - ib,
                    parallel,
                );
            }
            j += ib;
        }
    }
    if j < k {
        geqr2(a, m, j * m + j, m - j, n - j, &mut tau[j..k]);
    }
}

/// `orgqr` (torch's `householder_product`): the column-major `m × n` matrix `a`
/// (`m ≥ n`), whose first `k = tau.len() ≤ n` columns hold reflectors below the
/// diagonal, becomes the first n columns of H₀ ⋯ H_{k−1}, Hᵢ = I − τᵢ·vᵢ·vᵢᵀ (any τ).
/// Blocked (`dorgqr`) from more than [`NX`] reflectors on.
pub fn orgqr(a: &mut [f64], m: usize, n: usize, tau: &[f64], parallel: bool) {
    let k = tau.len();
    let (ki, kk) = if k > NX {
        let ki = (k - NX - 1) / NB * NB;
        (ki, k.min(ki + NB))
    } else {
        (0, 0)
    };
    for j in kk..n {
        a[j * m..j * m + kk].fill(0.0);
    }
    if kk < n {
        org2r(a, m, kk * m + kk, m - kk, n - kk, k - kk, &tau[kk..]);
    }
    if kk > 0 {
        let mut blk = Block::default();
        let mut i = ki;
        loop {
            let ib = NB.min(k - i);
            if i + ib < n {
                blk.take(a, m, i, m - i, ib, &tau[i..]);
                blk.apply_left(
                    m - i,
                    ib,
                    false,
                    a,
                    m,
                    (i + ib) * m + i,
                    n - i - ib,
                    parallel,
                );
            }
            org2r(a, m, i * m + i, m - i, ib, ib, &tau[i..i + ib]);
            for j in i..i + ib {
                a[j * m..j * m + i].fill(0.0);
            }
            if i == 0 {
                break;
            }
            i -= NB;
        }
    }
}

/// `ormqr` from the left: the column-major `mq × nc` matrix `c` (`ld = mq`) becomes
/// Q·C (`trans`: Qᵀ·C), Q = H₀ ⋯ H_{k−1} with `k = tau.len() ≤ mq` reflectors in the
/// columns of the column-major `mq × k` matrix `v` below the diagonal (the diagonal is
/// set to 1 while used and restored; nothing above it is read). Blocked (`dormqr`) from
/// more than [`NX`] reflectors on, when C has more than one column.
pub fn ormqr_left(
    v: &mut [f64],
    mq: usize,
    tau: &[f64],
    c: &mut [f64],
    nc: usize,
    trans: bool,
    parallel: bool,
) {
    let k = tau.len();
    if k == 0 || nc == 0 {
        return;
    }
    // Q·C applies H_{k−1} first, Qᵀ·C H₀ first
    if k > NX && nc > 1 {
        let mut blk = Block::default();
        let starts: Vec<usize> = (0..k).step_by(NB).collect();
        let mut run = |i: usize| {
            let ib = NB.min(k - i);
            blk.take(v, mq, i, mq - i, ib, &tau[i..]);
            blk.apply_left(mq - i, ib, trans, c, mq, i, nc, parallel);
        };
        if trans {
            starts.into_iter().for_each(&mut run);
        } else {
            starts.into_iter().rev().for_each(&mut run);
        }
        return;
    }
    orm2r(v, mq, tau, c, nc, trans);
}

/// [`ormqr_left`]'s unblocked loop (`dorm2r`).
#[inline(always)]
fn orm2r_body(v: &mut [f64], mq: usize, tau: &[f64], c: &mut [f64], nc: usize, trans: bool) {
    let k = tau.len();
    for s in 0..k {
        let i = if trans { s } else { k - 1 - s };
        if tau[i] == 0.0 {
            continue;
        }
        let at = i * mq + i;
        let keep = v[at];
        v[at] = 1.0;
        let vi = &v[at..(i + 1) * mq];
        for col in 0..nc {
            let x = &mut c[col * mq + i..(col + 1) * mq];
            let w = dot(vi, x);
            axpy(-tau[i] * w, vi, x);
        }
        v[at] = keep;
    }
}

best_level!(fn orm2r(v: &mut [f64], mq: usize, tau: &[f64], c: &mut [f64], nc: usize, trans: bool) -> () = orm2r_body);

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

    /// Column-major `m × k` times `k × n`.
    fn mul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for j in 0..n {
            for p in 0..k {
                let bpj = b[j * k + p];
                for i in 0..m {
                    c[j * m + i] += a[p * m + i] * bpj;
                }
            }
        }
        c
    }

    fn transpose(a: &[f64], m: usize, n: usize) -> Vec<f64> {
        let mut t = vec![0.0; m * n];
        for j in 0..n {
            for i in 0..m {
                t[i * n + j] = a[j * m + i];
            }
        }
        t
    }

    /// The full `m × m` Q = H₀ ⋯ H_{k−1} by the definition, one reflector at a time.
    fn q_by_definition(a: &[f64], m: usize, tau: &[f64]) -> Vec<f64> {
        let mut q = vec![0.0; m * m];
        for i in 0..m {
            q[i * m + i] = 1.0;
        }
        for (i, &t) in tau.iter().enumerate().rev() {
            let mut v = vec![0.0; m];
            v[i] = 1.0;
            v[i + 1..].copy_from_slice(&a[i * m + i + 1..(i + 1) * m]);
            // q ← (I − t v vᵀ) q
            for j in 0..m {
                let col = &mut q[j * m..(j + 1) * m];
                let w: f64 = v.iter().zip(col.iter()).map(|(x, y)| x * y).sum();
                for (c, x) in col.iter_mut().zip(&v) {
                    *c -= t * w * x;
                }
            }
        }
        q
    }

    fn max_diff(a: &[f64], b: &[f64]) -> f64 {
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(b)
            .fold(0.0f64, |e, (x, y)| e.max((x - y).abs()))
    }

    /// `max_diff` relative to the largest magnitude of `b` (a product of reflectors with
    /// arbitrary τ is not orthogonal: its entries grow with k).
    fn rel_diff(a: &[f64], b: &[f64]) -> f64 {
        let scale = b.iter().fold(1.0f64, |s, x| s.max(x.abs()));
        max_diff(a, b) / scale
    }

    const SHAPES: &[(usize, usize)] = &[
        (1, 1),
        (4, 3),
        (3, 5),
        (6, 1),
        (1, 4),
        (32, 32),
        (64, 64),
        (65, 65),
        (97, 96),
        (130, 70),
        (70, 130),
        (200, 200),
        (257, 129),
    ];

    #[test]
    fn geqrf_q_r_reconstruct_and_q_is_orthogonal() {
        for &(m, n) in SHAPES {
            let a = lcg(m * n, (m * 7 + n) as u64);
            let mut f = a.clone();
            let k = m.min(n);
            let mut tau = vec![0.0; k];
            geqrf(&mut f, m, n, &mut tau, true);
            let q = q_by_definition(&f, m, &tau);
            let mut r = vec![0.0; m * n];
            for j in 0..n {
                for i in 0..=j.min(m - 1) {
                    r[j * m + i] = f[j * m + i];
                }
            }
            let back = mul(&q, &r, m, m, n);
            let err = max_diff(&back, &a);
            assert!(err < 1e-13 * (m as f64), "{m}x{n}: QR − A {err:e}");
            let qtq = mul(&transpose(&q, m, m), &q, m, m, m);
            let mut eye = vec![0.0; m * m];
            (0..m).for_each(|i| eye[i * m + i] = 1.0);
            assert!(max_diff(&qtq, &eye) < 1e-13 * (m as f64), "{m}x{n}: QᵀQ");
            // dlarfg's signs: β = −sign(α)·‖·‖ where a reflection happens, τ in [1, 2]
            for &t in &tau {
                assert!(t == 0.0 || (1.0..=2.0).contains(&t), "{m}x{n}: τ {t}");
            }
        }
    }

    #[test]
    fn geqrf_blocked_matches_unblocked() {
        for &(m, n) in &[(65, 65), (130, 70), (70, 130), (200, 200), (257, 129)] {
            let a = lcg(m * n, (m + 3 * n) as u64);
            let (mut f, mut g) = (a.clone(), a.clone());
            let k = m.min(n);
            let (mut tf, mut tg) = (vec![0.0; k], vec![0.0; k]);
            geqrf(&mut f, m, n, &mut tf, false);
            geqr2(&mut g, m, 0, m, n, &mut tg);
            assert!(max_diff(&f, &g) < 1e-12, "{m}x{n}: factors");
            assert!(max_diff(&tf, &tg) < 1e-12, "{m}x{n}: tau");
        }
    }

    #[test]
    fn geqrf_zero_columns_and_signs() {
        // a zero column: τ = 0 and R's entry 0; a column zero below the diagonal: τ = 0
        // and R keeps α (its sign too)
        let mut a = vec![0.0, 0.0, 0.0, 1.0, 2.0, -1.0, -3.0, 0.0, 0.0];
        let mut a2 = a.clone();
        let mut tau = vec![9.0; 3];
        geqrf(&mut a, 3, 3, &mut tau, false);
        assert_eq!(tau[0], 0.0);
        assert_eq!(a[0], 0.0);
        assert!((a[4] + 5f64.sqrt()).abs() < 1e-15 && a[3] == 1.0);
        // rank-deficient (two equal columns): R's last diagonal entry is rounding noise
        a2[6..9].copy_from_slice(&[1.0, 2.0, -1.0]);
        geqrf(&mut a2, 3, 3, &mut tau, false);
        assert!(a2[8].abs() < 1e-14);
        // geqrf gives R[0][0] = −sign(a00)·‖a_0‖
        let mut b = vec![3.0, 4.0];
        let mut t = vec![0.0];
        geqrf(&mut b, 2, 1, &mut t, false);
        assert!((b[0] + 5.0).abs() < 1e-15 && (t[0] - 1.6).abs() < 1e-15);
        let mut b = vec![-3.0, 4.0];
        geqrf(&mut b, 2, 1, &mut t, false);
        assert!((b[0] - 5.0).abs() < 1e-15 && (t[0] - 1.6).abs() < 1e-15);
        // empty shapes
        geqrf(&mut [], 0, 3, &mut [], false);
        geqrf(&mut [], 3, 0, &mut [], false);
    }

    #[test]
    fn orgqr_is_the_product_of_the_reflectors_for_any_tau() {
        for &(m, n) in &[
            (1, 1),
            (4, 3),
            (5, 5),
            (6, 1),
            (32, 32),
            (64, 64),
            (65, 65),
            (97, 96),
            (130, 70),
            (200, 200),
            (257, 129),
        ] {
            for k in [0, n / 2, n] {
                let a = lcg(m * n, (m * 11 + n + k) as u64);
                let tau: Vec<f64> = lcg(k, (k + 5) as u64).iter().map(|t| t + 1.0).collect();
                let mut q = a.clone();
                orgqr(&mut q, m, n, &tau, true);
                let full = q_by_definition(&a, m, &tau);
                let err = rel_diff(&q, &full[..m * n]);
                assert!(err < 1e-12 * (m as f64), "{m}x{n} k={k}: {err:e}");
            }
        }
    }

    #[test]
    fn orgqr_of_geqrf_is_orthonormal() {
        for &(m, n) in &[(4, 3), (64, 64), (200, 150), (257, 129)] {
            let a = lcg(m * n, (m * 13 + n) as u64);
            let mut f = a.clone();
            let mut tau = vec![0.0; n];
            geqrf(&mut f, m, n, &mut tau, false);
            let mut q = f.clone();
            orgqr(&mut q, m, n, &tau, false);
            let qtq = mul(&transpose(&q, m, n), &q, n, m, n);
            let mut eye = vec![0.0; n * n];
            (0..n).for_each(|i| eye[i * n + i] = 1.0);
            assert!(max_diff(&qtq, &eye) < 1e-13 * (m as f64), "{m}x{n}: QᵀQ");
            let mut r = vec![0.0; n * n];
            for j in 0..n {
                for i in 0..=j {
                    r[j * n + i] = f[j * m + i];
                }
            }
            assert!(
                max_diff(&mul(&q, &r, m, n, n), &a) < 1e-13 * (m as f64),
                "{m}x{n}: QR"
            );
        }
    }

    #[test]
    fn ormqr_left_matches_the_explicit_product() {
        for &(mq, na, nc) in &[
            (4, 3, 2),
            (5, 5, 1),
            (32, 32, 4),
            (65, 65, 3),
            (130, 70, 40),
            (200, 200, 200),
            (97, 150, 5),
        ] {
            let k = mq.min(na);
            let a = lcg(mq * k, (mq + na + nc) as u64);
            let tau: Vec<f64> = lcg(k, nc as u64).iter().map(|t| t + 1.0).collect();
            let c = lcg(mq * nc, 77);
            let q = q_by_definition(&a, mq, &tau);
            for trans in [false, true] {
                let qq = if trans {
                    transpose(&q, mq, mq)
                } else {
                    q.clone()
                };
                let want = mul(&qq, &c, mq, mq, nc);
                let mut v = a.clone();
                let mut got = c.clone();
                ormqr_left(&mut v, mq, &tau, &mut got, nc, trans, true);
                assert_eq!(v, a, "the reflectors are restored");
                let err = rel_diff(&got, &want);
                assert!(
                    err < 1e-11 * (mq as f64),
                    "{mq} k={k} nc={nc} trans={trans}: {err:e}"
                );
            }
        }
    }

    #[test]
    fn nan_input_finishes() {
        let mut a = lcg(100 * 100, 3);
        a[5] = f64::NAN;
        let mut tau = vec![0.0; 100];
        geqrf(&mut a, 100, 100, &mut tau, false);
        assert!(tau.iter().any(|t| t.is_nan()));
        orgqr(&mut a, 100, 100, &tau, false);
    }
}
