//! Max/min along rows in intrinsics, at the AVX-512 and AVX2 levels, for float32 and
//! float64: [`fold::Extreme`](super::fold::Extreme)'s row fold and the arg-reductions'
//! first-index search, where LLVM vectorised the generic loops badly (the AVX-512 build
//! of the row fold 2x slower than the AVX2 one; docs/kernels.md, "Max/min rows in
//! intrinsics").
//!
//! The row fold keeps the generic fold's 32 lanes (lane `k` takes elements `k, k + 32,
//! ...`: two float32 or four float64 vectors at AVX-512, twice as many at AVX2), folds
//! the second 16 lanes into the first, then halves, then the tail, all with the same
//! strict compare: `max(x, a)` (`vmaxps`) is `x > a ? x : a`, down to returning `a` for
//! a NaN `x` and for equal zeros. So every level gives the same bits, which of two
//! equal zeros included; a run with a NaN gives the canonical NaN, as the generic fold.

use super::fold::{F32_COL_ROWS, as_f32, as_f64, block_sum_into, cols_sum_f32_generic, is_nan};
use crate::backend::cpu::vmath::{Level, level_in_use};
use crate::storage::Element;
use std::arch::x86_64::*;

/// The max (`MAX`) or min of a run by the kernels of the level in use, `None` where
/// there are none (the baseline level, or not float32 or float64).
#[inline(always)]
pub(super) fn extreme<T: Element, const MAX: bool>(xs: &[T]) -> Option<T> {
    let nan = T::from_f64(f64::NAN);
    let from32 = |m: Option<f32>| m.map_or(nan, |m| T::from_f64(f64::from(m)));
    let from64 = |m: Option<f64>| m.map_or(nan, T::from_f64);
    // SAFETY (each call): the level is never above what the CPU runs (`vmath::level`
    // caps it by the detected features): AVX-512F, or AVX2.
    match (level_in_use(), as_f32(xs), as_f64(xs)) {
        (Level::Avx512, Some(x), _) => Some(from32(unsafe { extreme512_f32::<MAX>(x) })),
        (Level::Avx512, _, Some(x)) => Some(from64(unsafe { extreme512_f64::<MAX>(x) })),
        (Level::Avx2, Some(x), _) => Some(from32(unsafe { extreme256_f32::<MAX>(x) })),
        (Level::Avx2, _, Some(x)) => Some(from64(unsafe { extreme256_f64::<MAX>(x) })),
        _ => None,
    }
}

/// The first index of `xs` equal to `m` (`==`: either zero for a zero; the first NaN
/// for a NaN), 0 if none, by the kernels of the level in use; `None` where there are
/// none.
#[inline(always)]
pub(super) fn first_holding<T: Element>(xs: &[T], m: T) -> Option<usize> {
    // (`m` is an element of `xs`'s type: the conversions are exact)
    // SAFETY (each call): as in `extreme`.
    match (level_in_use(), as_f32(xs), as_f64(xs)) {
        (Level::Avx512, Some(x), _) => Some(unsafe { first512_f32(x, m.to_f64() as f32) }),
        (Level::Avx512, _, Some(x)) => Some(unsafe { first512_f64(x, m.to_f64()) }),
        (Level::Avx2, Some(x), _) => Some(unsafe { first256_f32(x, m.to_f64() as f32) }),
        (Level::Avx2, _, Some(x)) => Some(unsafe { first256_f64(x, m.to_f64()) }),
        _ => None,
    }
}

/// Defines `$name::<MAX>(xs) -> Option<$t>`: the max (`MAX`) or min of a run, `None`
/// if it has a NaN, with `$n`-lane vectors; `$nan_acc` starts the NaN accumulator and
/// `$nan_add(acc, x)` marks `x`'s NaNs in it, `$nan_any(acc)` tests it.
macro_rules! extreme_kernel {
    ($feature:literal, $name:ident, $t:ty, $n:expr, $set1:ident, $load:ident, $store:ident,
     $max:ident, $min:ident, $nan_acc:expr, |$acc:ident, $x:ident| $nan_add:expr,
     |$fin:ident| $nan_any:expr) => {
        #[target_feature(enable = $feature)]
        #[inline]
        fn $name<const MAX: bool>(xs: &[$t]) -> Option<$t> {
            /// Vectors per chunk of 32 lanes.
            const V: usize = 32 / $n;
            let id = if MAX {
                <$t>::NEG_INFINITY
            } else {
                <$t>::INFINITY
            };
            let mut acc = [$set1(id); V];
            let mut nan = $nan_acc;
            let mut chunks = xs.chunks_exact(32);
            for c in &mut chunks {
                for (j, a) in acc.iter_mut().enumerate() {
                    // SAFETY: `c` holds 32 elements; vector `j` reads `j * N..(j + 1) * N`.
                    let $x = unsafe { $load(c.as_ptr().add(j * $n)) };
                    *a = if MAX { $max($x, *a) } else { $min($x, *a) };
                    let $acc = nan;
                    nan = $nan_add;
                }
            }
            // lane `k` of the second 16 into lane `k` of the first, then halves
            let mut a = [id; 16];
            for i in 0..V / 2 {
                let (hi, lo) = (acc[V / 2 + i], acc[i]);
                let h = if MAX { $max(hi, lo) } else { $min(hi, lo) };
                // SAFETY: `a` holds 16 elements; this writes `i * N..(i + 1) * N`.
                unsafe { $store(a.as_mut_ptr().add(i * $n), h) };
            }
            let pick = |a: $t, v: $t| {
                if (if MAX { v > a } else { v < a }) {
                    v
                } else {
                    a
                }
            };
            let mut w = 16;
            while w > 1 {
                w /= 2;
                for k in 0..w {
                    a[k] = pick(a[k], a[k + w]);
                }
            }
            let mut m = a[0];
            let $fin = nan;
            let mut any_nan = $nan_any;
            for &v in chunks.remainder() {
                m = pick(m, v);
                any_nan |= is_nan(v);
            }
            (!any_nan).then_some(m)
        }
    };
}

// AVX-512: NaNs as an unordered compare into a mask register, OR-ed (no conversion of
// masks to vectors, which is what the generic loop's `u32` flags cost there)
extreme_kernel!(
    "avx512f",
    extreme512_f32,
    f32,
    16,
    _mm512_set1_ps,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_max_ps,
    _mm512_min_ps,
    0u16,
    |n, x| n | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x),
    |n| n != 0
);
extreme_kernel!(
    "avx512f",
    extreme512_f64,
    f64,
    8,
    _mm512_set1_pd,
    _mm512_loadu_pd,
    _mm512_storeu_pd,
    _mm512_max_pd,
    _mm512_min_pd,
    0u8,
    |n, x| n | _mm512_cmp_pd_mask::<_CMP_UNORD_Q>(x, x),
    |n| n != 0
);
// AVX2: the unordered compare's all-ones lanes OR-ed into one vector
extreme_kernel!(
    "avx2",
    extreme256_f32,
    f32,
    8,
    _mm256_set1_ps,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_max_ps,
    _mm256_min_ps,
    _mm256_setzero_ps(),
    |n, x| _mm256_or_ps(n, _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x)),
    |n| _mm256_movemask_ps(n) != 0
);
extreme_kernel!(
    "avx2",
    extreme256_f64,
    f64,
    4,
    _mm256_set1_pd,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_max_pd,
    _mm256_min_pd,
    _mm256_setzero_pd(),
    |n, x| _mm256_or_pd(n, _mm256_cmp_pd::<_CMP_UNORD_Q>(x, x)),
    |n| _mm256_movemask_pd(n) != 0
);

/// Defines `$name(xs, m) -> usize`: the first index of `xs` equal to `m` (the first NaN
/// if `m` is NaN), 0 if none, one vector of `$n` at a time: `$hits(x, mv)` is the bits
/// of the vector `x`'s lanes that match.
macro_rules! first_kernel {
    ($feature:literal, $name:ident, $t:ty, $n:expr, $set1:ident, $load:ident,
     |$x:ident, $mv:ident, $nan:ident| $hits:expr) => {
        #[target_feature(enable = $feature)]
        #[inline]
        fn $name(xs: &[$t], m: $t) -> usize {
            let $nan = is_nan(m);
            let $mv = $set1(m);
            let mut blocks = xs.chunks_exact($n);
            let mut base = 0;
            for b in &mut blocks {
                // SAFETY: `b` holds one vector's elements.
                let $x = unsafe { $load(b.as_ptr()) };
                let hit = $hits;
                if hit != 0 {
                    return base + hit.trailing_zeros() as usize;
                }
                base += $n;
            }
            blocks
                .remainder()
                .iter()
                .position(|&v| if $nan { is_nan(v) } else { v == m })
                .map_or(0, |i| base + i)
        }
    };
}

first_kernel!(
    "avx512f",
    first512_f32,
    f32,
    16,
    _mm512_set1_ps,
    _mm512_loadu_ps,
    |x, mv, nan| {
        if nan {
            _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x)
        } else {
            _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(x, mv)
        }
    }
);
first_kernel!(
    "avx512f",
    first512_f64,
    f64,
    8,
    _mm512_set1_pd,
    _mm512_loadu_pd,
    |x, mv, nan| {
        if nan {
            _mm512_cmp_pd_mask::<_CMP_UNORD_Q>(x, x)
        } else {
            _mm512_cmp_pd_mask::<_CMP_EQ_OQ>(x, mv)
        }
    }
);
first_kernel!(
    "avx2",
    first256_f32,
    f32,
    8,
    _mm256_set1_ps,
    _mm256_loadu_ps,
    |x, mv, nan| {
        _mm256_movemask_ps(if nan {
            _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x)
        } else {
            _mm256_cmp_ps::<_CMP_EQ_OQ>(x, mv)
        })
    }
);
first_kernel!(
    "avx2",
    first256_f64,
    f64,
    4,
    _mm256_set1_pd,
    _mm256_loadu_pd,
    |x, mv, nan| {
        _mm256_movemask_pd(if nan {
            _mm256_cmp_pd::<_CMP_UNORD_Q>(x, x)
        } else {
            _mm256_cmp_pd::<_CMP_EQ_OQ>(x, mv)
        })
    }
);

/// As `&mut [f32]` when `T` is `f32`.
#[inline(always)]
fn as_f32_mut<T: 'static>(xs: &mut [T]) -> Option<&mut [f32]> {
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>() {
        // SAFETY: `T` is `f32` (checked above): same size, alignment and values.
        Some(unsafe { std::slice::from_raw_parts_mut(xs.as_mut_ptr().cast::<f32>(), xs.len()) })
    } else {
        None
    }
}

/// As `&mut [f64]` when `T` is `f64`.
#[inline(always)]
fn as_f64_mut<T: 'static>(xs: &mut [T]) -> Option<&mut [f64]> {
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f64>() {
        // SAFETY: `T` is `f64` (checked above): same size, alignment and values.
        Some(unsafe { std::slice::from_raw_parts_mut(xs.as_mut_ptr().cast::<f64>(), xs.len()) })
    } else {
        None
    }
}

/// Π x of a run of a row in float64 (`fold::Prod`'s row), by the kernels of the level in
/// use ([`prod_level`]); `None` where there are none.
#[inline(always)]
pub(super) fn prod_row<T: Element>(xs: &[T]) -> Option<f64> {
    // SAFETY: `prod_level` is at most the level in use, which the CPU runs.
    unsafe { prod_row_at(prod_level(), xs) }
}

/// The level of the row products: the level in use, but AVX2 for AVX-512 on a CPU that
/// runs 512-bit vectors as two 256-bit halves (AMD's Zen 4, family 19h), where the
/// AVX-512 kernel was the slower one: 2048 x 2048 `prod(1)` on one thread 333 µs at
/// AVX-512 against 258 at AVX2 (float64 1265 against 1031; torch 239-278), while every
/// other reduction ran as fast or faster at AVX-512. The two kernels give the same bits.
#[inline(always)]
fn prod_level() -> Level {
    match level_in_use() {
        Level::Avx512 if split_512() => Level::Avx2,
        l => l,
    }
}

/// Whether this CPU splits 512-bit operations in two 256-bit halves: AMD family 19h
/// (Zen 4; Zen 3 has no AVX-512, Zen 5, family 1Ah, runs them whole).
fn split_512() -> bool {
    static SPLIT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SPLIT.get_or_init(|| {
        // SAFETY: CPUID leaves 0 and 1 exist on every x86-64 CPU.
        #[allow(unused_unsafe)]
        let (v, f) = unsafe { (__cpuid(0), __cpuid(1).eax) };
        let amd = [v.ebx, v.edx, v.ecx] == [*b"Auth", *b"enti", *b"cAMD"].map(u32::from_le_bytes);
        let base = (f >> 8) & 0xF;
        let family = base + if base == 0xF { (f >> 20) & 0xFF } else { 0 };
        amd && family == 0x19
    })
}

/// [`prod_row`] at `level`.
///
/// # Safety
/// The CPU runs `level` (it is at most `vmath::detected()`).
#[inline(always)]
pub(super) unsafe fn prod_row_at<T: Element>(level: Level, xs: &[T]) -> Option<f64> {
    // SAFETY (each call): the caller's.
    match (level, as_f32(xs), as_f64(xs)) {
        (Level::Avx512, Some(x), _) => Some(unsafe { prod512_f32(x) }),
        (Level::Avx512, _, Some(x)) => Some(unsafe { prod512_f64(x) }),
        (Level::Avx2, Some(x), _) => Some(unsafe { prod256_f32(x) }),
        (Level::Avx2, _, Some(x)) => Some(unsafe { prod256_f64(x) }),
        _ => None,
    }
}

/// Defines `$name(xs) -> f64`: the product of a run in float64 as `fold::f64_lanes!`
/// takes it (lane `k` multiplies elements `k, k + 32, ...` from 1 in order; then
/// pairwise, lane `k` by lane `k + w` for w = 16, 8, .., 1; then by the tail's product,
/// in order), with `$n`-lane vectors: `$load(p)` loads `$n` elements at `p` as float64.
macro_rules! prod_kernel {
    ($feature:literal, $name:ident, $t:ty, $n:expr, $vt:ty, $set1:ident, $store:ident,
     $mul:ident, |$p:ident| $load:expr) => {
        #[target_feature(enable = $feature)]
        #[inline]
        fn $name(xs: &[$t]) -> f64 {
            /// Vectors per chunk of 32 lanes.
            const V: usize = 32 / $n;
            let mut acc: [$vt; V] = [$set1(1.0); V];
            let mut chunks = xs.chunks_exact(32);
            for c in &mut chunks {
                for (j, a) in acc.iter_mut().enumerate() {
                    // SAFETY: `c` holds 32 elements; vector `j` reads `j * N..(j + 1) * N`.
                    let x = unsafe {
                        let $p = c.as_ptr().add(j * $n);
                        $load
                    };
                    *a = $mul(*a, x);
                }
            }
            let mut f = [1.0f64; 32];
            for (j, a) in acc.iter().enumerate() {
                // SAFETY: `f` holds 32 elements; this writes `j * N..(j + 1) * N`.
                unsafe { $store(f.as_mut_ptr().add(j * $n), *a) };
            }
            let tail = chunks
                .remainder()
                .iter()
                .fold(1.0f64, |t, &v| t * f64::from(v));
            let mut w = 32;
            while w > 1 {
                w /= 2;
                for k in 0..w {
                    f[k] *= f[k + w];
                }
            }
            f[0] * tail
        }
    };
}

prod_kernel!(
    "avx512f",
    prod512_f32,
    f32,
    8,
    __m512d,
    _mm512_set1_pd,
    _mm512_storeu_pd,
    _mm512_mul_pd,
    |p| _mm512_cvtps_pd(_mm256_loadu_ps(p))
);
prod_kernel!(
    "avx512f",
    prod512_f64,
    f64,
    8,
    __m512d,
    _mm512_set1_pd,
    _mm512_storeu_pd,
    _mm512_mul_pd,
    |p| _mm512_loadu_pd(p)
);
prod_kernel!(
    "avx2",
    prod256_f32,
    f32,
    4,
    __m256d,
    _mm256_set1_pd,
    _mm256_storeu_pd,
    _mm256_mul_pd,
    |p| _mm256_cvtps_pd(_mm_loadu_ps(p))
);
prod_kernel!(
    "avx2",
    prod256_f64,
    f64,
    4,
    __m256d,
    _mm256_set1_pd,
    _mm256_storeu_pd,
    _mm256_mul_pd,
    |p| _mm256_loadu_pd(p)
);

/// Rows a column kernel advances before it moves to the next group of columns: the
/// group's accumulators are loaded and stored once per this many rows, and the rows
/// read stay close together in memory.
const COL_ROWS: usize = 16;

/// Folds rows `0..rows` of columns `0..acc.len()` (element `(r, c)` at `x[s0 + r * rs +
/// c]`) into `acc`: Σ (`MUL` false) or Π in float64, each column in row order, so the
/// same bits as `fold::Sum`'s and `fold::Prod`'s generic column fold (`acc[c] + x` or
/// `acc[c] * x`, in float64). `false` (nothing done) where the level in use has no
/// kernel or `T` is not float32 or float64.
#[inline(always)]
pub(super) fn cols_f64<T: Element, const MUL: bool>(
    x: &[T],
    s0: usize,
    rs: usize,
    rows: usize,
    acc: &mut [f64],
) -> bool {
    if nothing_to_fold(x.len(), s0, rs, rows, acc.len()) {
        return true;
    }
    // SAFETY (each call): as in `extreme`; the reads are in bounds (checked above).
    unsafe {
        match (level_in_use(), as_f32(x), as_f64(x)) {
            (Level::Avx512, Some(x), _) => cols512_f32::<MUL>(x.as_ptr().add(s0), rs, rows, acc),
            (Level::Avx512, _, Some(x)) => cols512_f64::<MUL>(x.as_ptr().add(s0), rs, rows, acc),
            (Level::Avx2, Some(x), _) => cols256_f32::<MUL>(x.as_ptr().add(s0), rs, rows, acc),
            (Level::Avx2, _, Some(x)) => cols256_f64::<MUL>(x.as_ptr().add(s0), rs, rows, acc),
            _ => return false,
        }
    }
    true
}

/// Whether a column fold of `rows` rows of `w` columns (element `(r, c)` at `s0 + r * rs +
/// c` of `len` elements) has nothing to do; panics if the columns leave the input (the
/// column kernels read through raw pointers).
#[inline(always)]
fn nothing_to_fold(len: usize, s0: usize, rs: usize, rows: usize, w: usize) -> bool {
    if rows == 0 || w == 0 {
        return true;
    }
    assert!(
        s0 + (rows - 1) * rs + w <= len,
        "the columns lie in the input"
    );
    false
}

/// [`fold::cols_sum_f32`](super::fold::cols_sum_f32) by the intrinsics of the level in
/// use (its bits: the same float32 block sums, the same float64 adds); `false` at the
/// baseline level.
#[inline(always)]
pub(super) fn cols_sum_f32(x: &[f32], s0: usize, rs: usize, rows: usize, acc: &mut [f64]) -> bool {
    if nothing_to_fold(x.len(), s0, rs, rows, acc.len()) {
        return true;
    }
    let x = &x[s0..];
    // SAFETY (each call): the level is never above what the CPU runs; the reads are in
    // bounds (checked above).
    unsafe {
        match level_in_use() {
            Level::Avx512 => sum512_f32(x, rs, rows, acc),
            Level::Avx2 => sum256_f32(x, rs, rows, acc),
            Level::Baseline => return false,
        }
    }
    true
}

/// Defines `$name(x, rs, rows, acc)`, [`cols_sum_f32`] with `$n`-lane float32 vectors,
/// `$g` of them down each block of rows, then single vectors, then the columns left
/// over by the generic fold. `$finite(v)` is the lanes of `v` holding finite sums as
/// bits (`$full` when all do); `$widen(v)` the two float64 halves of `v`.
///
/// # Safety (of the defined fn)
/// The CPU has `$feature`; `x` holds rows `0..rows` of `acc.len()` columns, `rs` apart.
macro_rules! col_sum_kernel {
    ($feature:literal, $name:ident, $n:expr, $g:expr, $vt:ty, $dt:ty, $load:ident,
     $add:ident, $loadd:ident, $addd:ident, $stored:ident, $full:expr,
     |$fv:ident| $finite:expr, |$wv:ident| $widen:expr) => {
        #[target_feature(enable = $feature)]
        unsafe fn $name(x: &[f32], rs: usize, rows: usize, acc: &mut [f64]) {
            /// `G` vectors of columns `c..` down rows `r0..r1` into `acc`.
            #[target_feature(enable = $feature)]
            #[inline]
            unsafe fn group<const G: usize>(
                x: &[f32],
                rs: usize,
                r0: usize,
                r1: usize,
                c: usize,
                acc: &mut [f64],
            ) {
                let p = x.as_ptr();
                // SAFETY: the caller's promise: columns `c..c + G * N` of rows `r0..r1`
                // lie in `x`, and `acc` holds columns `c..c + G * N`.
                unsafe {
                    let mut v: [$vt; G] = [$load(p.add(r0 * rs + c)); G];
                    for (i, a) in v.iter_mut().enumerate() {
                        *a = $load(p.add(r0 * rs + c + i * $n));
                    }
                    for r in r0 + 1..r1 {
                        let row = p.add(r * rs + c);
                        for (i, a) in v.iter_mut().enumerate() {
                            *a = $add(*a, $load(row.add(i * $n)));
                        }
                    }
                    for (i, &s) in v.iter().enumerate() {
                        let c = c + i * $n;
                        let $fv = s;
                        if $finite == $full {
                            let $wv = s;
                            let (lo, hi): ($dt, $dt) = $widen;
                            let a = acc.as_mut_ptr().add(c);
                            $stored(a, $addd($loadd(a), lo));
                            $stored(a.add($n / 2), $addd($loadd(a.add($n / 2)), hi));
                        } else {
                            // an overflow, an inf or a NaN: lane by lane
                            let sums: [f32; $n] = std::mem::transmute(s);
                            for (k, (a, &t)) in acc[c..c + $n].iter_mut().zip(&sums).enumerate() {
                                *a = block_sum_into(*a, t, |r| x[r * rs + c + k], r0, r1);
                            }
                        }
                    }
                }
            }
            let w = acc.len();
            let mut r0 = 0;
            while r0 < rows {
                let r1 = (r0 + F32_COL_ROWS).min(rows);
                let mut c = 0;
                // SAFETY (each group): the columns and rows lie in the caller's range.
                while c + $g * $n <= w {
                    unsafe { group::<{ $g }>(x, rs, r0, r1, c, acc) };
                    c += $g * $n;
                }
                while c + $n <= w {
                    unsafe { group::<1>(x, rs, r0, r1, c, acc) };
                    c += $n;
                }
                if c < w {
                    cols_sum_f32_generic(&x[r0 * rs + c..], rs, r1 - r0, &mut acc[c..]);
                }
                r0 = r1;
            }
        }
    };
}

// (4 vectors: 64 columns, the AVX-512 column tiles' group; 8 at AVX2, whose two adds a
// cycle on Intel want 8 chains in flight)
col_sum_kernel!(
    "avx512f",
    sum512_f32,
    16,
    4,
    __m512,
    __m512d,
    _mm512_loadu_ps,
    _mm512_add_ps,
    _mm512_loadu_pd,
    _mm512_add_pd,
    _mm512_storeu_pd,
    0xFFFF,
    |v| _mm512_cmp_ps_mask::<_CMP_LT_OQ>(_mm512_abs_ps(v), _mm512_set1_ps(f32::INFINITY)),
    |v| (
        _mm512_cvtps_pd(_mm512_castps512_ps256(v)),
        _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(
            _mm512_castps_pd(v)
        ))),
    )
);
col_sum_kernel!(
    "avx2",
    sum256_f32,
    8,
    8,
    __m256,
    __m256d,
    _mm256_loadu_ps,
    _mm256_add_ps,
    _mm256_loadu_pd,
    _mm256_add_pd,
    _mm256_storeu_pd,
    0xFF,
    |v| _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(
        _mm256_andnot_ps(_mm256_set1_ps(-0.0), v),
        _mm256_set1_ps(f32::INFINITY),
    )),
    |v| (
        _mm256_cvtps_pd(_mm256_castps256_ps128(v)),
        _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(v)),
    )
);

/// Folds rows `0..rows` of columns `0..acc.len()` into `acc` by the max (`MAX`) or min,
/// as `fold::Extreme`'s generic column fold: `x` replaces `a` where `x > a` (`x < a`)
/// or `x` is NaN (so a column keeps its last NaN; equal zeros keep the one first met).
/// `false` where the level in use has no kernel or `T` is not float32 or float64.
#[inline(always)]
pub(super) fn cols_extreme<T: Element, const MAX: bool>(
    x: &[T],
    s0: usize,
    rs: usize,
    rows: usize,
    acc: &mut [T],
) -> bool {
    if nothing_to_fold(x.len(), s0, rs, rows, acc.len()) {
        return true;
    }
    // SAFETY (each call): as in `extreme`; the reads are in bounds (checked above).
    unsafe {
        match (level_in_use(), as_f32(x), as_f64(x)) {
            (Level::Avx512, Some(x), _) => {
                let Some(a) = as_f32_mut(acc) else {
                    return false;
                };
                ext512_f32::<MAX>(x.as_ptr().add(s0), rs, rows, a);
            }
            (Level::Avx512, _, Some(x)) => {
                let Some(a) = as_f64_mut(acc) else {
                    return false;
                };
                ext512_f64::<MAX>(x.as_ptr().add(s0), rs, rows, a);
            }
            (Level::Avx2, Some(x), _) => {
                let Some(a) = as_f32_mut(acc) else {
                    return false;
                };
                ext256_f32::<MAX>(x.as_ptr().add(s0), rs, rows, a);
            }
            (Level::Avx2, _, Some(x)) => {
                let Some(a) = as_f64_mut(acc) else {
                    return false;
                };
                ext256_f64::<MAX>(x.as_ptr().add(s0), rs, rows, a);
            }
            _ => return false,
        }
    }
    true
}

/// Defines `$name::<K>(x, rs, rows, acc)`, a column fold (see [`cols_f64`]) with
/// `$n`-lane vectors of accumulators (`$at` elements): per [`COL_ROWS`] rows, groups of
/// `$g` vectors held in registers down those rows, then single vectors, then the
/// columns left over one at a time (`$scalar(a, x)`). `$step(a, p)` folds the `$n`
/// elements at `p` into the vector `a`. Every column is folded in row order whatever
/// the grouping, so the grouping changes no bit.
///
/// # Safety (of the defined fn)
/// The CPU has `$feature`; `x.add(r * rs + c)` is readable for `r < rows`, `c <
/// acc.len()`.
macro_rules! cols_kernel {
    ($feature:literal, $name:ident, $t:ty, $at:ty, $n:expr, $g:expr, $vt:ty, $load:ident,
     $store:ident, <$k:ident> |$a:ident, $p:ident| $step:expr, |$sa:ident, $sx:ident| $scalar:expr) => {
        #[target_feature(enable = $feature)]
        #[inline]
        unsafe fn $name<const $k: bool>(x: *const $t, rs: usize, rows: usize, acc: &mut [$at]) {
            /// `G` vectors of columns `c..` down rows `r0..r1`.
            #[target_feature(enable = $feature)]
            #[inline]
            unsafe fn group<const G: usize, const $k: bool>(
                x: *const $t,
                rs: usize,
                r0: usize,
                r1: usize,
                c: usize,
                acc: *mut $at,
            ) {
                // SAFETY: the caller's promise: columns `c..c + G * N` of rows `r0..r1`
                // are readable and `acc` holds columns `c..c + G * N`.
                unsafe {
                    let mut v: [$vt; G] = [$load(acc.add(c).cast_const()); G];
                    for (i, a) in v.iter_mut().enumerate() {
                        *a = $load(acc.add(c + i * $n).cast_const());
                    }
                    for r in r0..r1 {
                        let row = x.add(r * rs + c);
                        for (i, a) in v.iter_mut().enumerate() {
                            let ($a, $p) = (*a, row.add(i * $n));
                            *a = $step;
                        }
                    }
                    for (i, a) in v.iter().enumerate() {
                        $store(acc.add(c + i * $n), *a);
                    }
                }
            }
            let w = acc.len();
            let mut r0 = 0;
            while r0 < rows {
                let r1 = (r0 + COL_ROWS).min(rows);
                let mut c = 0;
                // SAFETY (each group): the columns and rows lie in the caller's range.
                while c + $g * $n <= w {
                    unsafe { group::<{ $g }, $k>(x, rs, r0, r1, c, acc.as_mut_ptr()) };
                    c += $g * $n;
                }
                while c + $n <= w {
                    unsafe { group::<1, $k>(x, rs, r0, r1, c, acc.as_mut_ptr()) };
                    c += $n;
                }
                for r in r0..r1 {
                    for (i, a) in acc[c..].iter_mut().enumerate() {
                        // SAFETY: as above.
                        let ($sa, $sx) = (*a, unsafe { *x.add(r * rs + c + i) });
                        *a = $scalar;
                    }
                }
                r0 = r1;
            }
        }
    };
}

// Σ / Π in float64 of float32 or float64 columns (8 vectors: 64 columns at AVX-512,
// as fast as 16 in a standalone loop, and narrower tiles split 256 columns in 4; 8
// vectors, 32 columns at AVX2, half of its 16 registers; the max/min: 64 columns at
// AVX-512, 8 vectors at AVX2)
cols_kernel!(
    "avx512f", cols512_f32, f32, f64, 8, 8, __m512d, _mm512_loadu_pd, _mm512_storeu_pd,
    <MUL> |a, p| {
        let x = _mm512_cvtps_pd(_mm256_loadu_ps(p));
        if MUL { _mm512_mul_pd(a, x) } else { _mm512_add_pd(a, x) }
    },
    |a, x| if MUL { a * f64::from(x) } else { a + f64::from(x) }
);
cols_kernel!(
    "avx512f", cols512_f64, f64, f64, 8, 8, __m512d, _mm512_loadu_pd, _mm512_storeu_pd,
    <MUL> |a, p| {
        let x = _mm512_loadu_pd(p);
        if MUL { _mm512_mul_pd(a, x) } else { _mm512_add_pd(a, x) }
    },
    |a, x| if MUL { a * x } else { a + x }
);
cols_kernel!(
    "avx2", cols256_f32, f32, f64, 4, 8, __m256d, _mm256_loadu_pd, _mm256_storeu_pd,
    <MUL> |a, p| {
        let x = _mm256_cvtps_pd(_mm_loadu_ps(p));
        if MUL { _mm256_mul_pd(a, x) } else { _mm256_add_pd(a, x) }
    },
    |a, x| if MUL { a * f64::from(x) } else { a + f64::from(x) }
);
cols_kernel!(
    "avx2", cols256_f64, f64, f64, 4, 8, __m256d, _mm256_loadu_pd, _mm256_storeu_pd,
    <MUL> |a, p| {
        let x = _mm256_loadu_pd(p);
        if MUL { _mm256_mul_pd(a, x) } else { _mm256_add_pd(a, x) }
    },
    |a, x| if MUL { a * x } else { a + x }
);

/// The generic column fold's step of the max (`MAX`) or min: `x` if it beats `a` or is
/// NaN, else `a`.
#[inline(always)]
fn ext_step<T: PartialOrd + Copy, const MAX: bool>(a: T, x: T) -> T {
    if (if MAX { x > a } else { x < a }) | is_nan(x) {
        x
    } else {
        a
    }
}

// max / min of float32 or float64 columns: `max(x, a)` (`x > a ? x : a`, `a` for a NaN
// `x`), then `x` where `x` is NaN: the generic step exactly.
cols_kernel!(
    "avx512f", ext512_f32, f32, f32, 16, 4, __m512, _mm512_loadu_ps, _mm512_storeu_ps,
    <MAX> |a, p| {
        let x = _mm512_loadu_ps(p);
        let m = if MAX { _mm512_max_ps(x, a) } else { _mm512_min_ps(x, a) };
        _mm512_mask_mov_ps(m, _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x), x)
    },
    |a, x| ext_step::<f32, MAX>(a, x)
);
cols_kernel!(
    "avx512f", ext512_f64, f64, f64, 8, 8, __m512d, _mm512_loadu_pd, _mm512_storeu_pd,
    <MAX> |a, p| {
        let x = _mm512_loadu_pd(p);
        let m = if MAX { _mm512_max_pd(x, a) } else { _mm512_min_pd(x, a) };
        _mm512_mask_mov_pd(m, _mm512_cmp_pd_mask::<_CMP_UNORD_Q>(x, x), x)
    },
    |a, x| ext_step::<f64, MAX>(a, x)
);
cols_kernel!(
    "avx2", ext256_f32, f32, f32, 8, 8, __m256, _mm256_loadu_ps, _mm256_storeu_ps,
    <MAX> |a, p| {
        let x = _mm256_loadu_ps(p);
        let m = if MAX { _mm256_max_ps(x, a) } else { _mm256_min_ps(x, a) };
        _mm256_blendv_ps(m, x, _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x))
    },
    |a, x| ext_step::<f32, MAX>(a, x)
);
cols_kernel!(
    "avx2", ext256_f64, f64, f64, 4, 8, __m256d, _mm256_loadu_pd, _mm256_storeu_pd,
    <MAX> |a, p| {
        let x = _mm256_loadu_pd(p);
        let m = if MAX { _mm256_max_pd(x, a) } else { _mm256_min_pd(x, a) };
        _mm256_blendv_pd(m, x, _mm256_cmp_pd::<_CMP_UNORD_Q>(x, x))
    },
    |a, x| ext_step::<f64, MAX>(a, x)
);

/// (value, first index) of the max (`is_max`) or min down rows `0..rows` of columns
/// `0..vals.len()` (element `(r, c)` at `x[s0 + r * rs + c]`), started from `vals` and
/// `idx` (row 0's values, index 0), as `fold::arg`'s generic column loop: row `r`
/// takes a column where it beats the value so far (strictly, or a NaN over a non-NaN),
/// so ties keep the first index and the first NaN wins. `false` where the level in use
/// has no kernel, `T` is not float32 or float64, or the rows do not fit an `i32`.
#[inline(always)]
pub(super) fn arg_cols<T: Element>(
    x: &[T],
    s0: usize,
    rs: usize,
    rows: usize,
    vals: &mut [T],
    idx: &mut [i64],
    is_max: bool,
) -> bool {
    let w = vals.len();
    if rows == 0 || w == 0 {
        return true;
    }
    if idx.len() != w || i32::try_from(rows).is_err() {
        return false;
    }
    assert!(
        s0 + (rows - 1) * rs + w <= x.len(),
        "the columns lie in the input"
    );
    // SAFETY (each call): as in `extreme`; the reads are in bounds (checked above).
    unsafe {
        let p32 = as_f32(x).map(|x| x.as_ptr().add(s0));
        let p64 = as_f64(x).map(|x| x.as_ptr().add(s0));
        match (level_in_use(), p32, as_f32_mut(vals), p64) {
            (Level::Avx512, Some(p), Some(v), _) if is_max => {
                arg512_f32::<true>(p, rs, rows, v, idx)
            }
            (Level::Avx512, Some(p), Some(v), _) => arg512_f32::<false>(p, rs, rows, v, idx),
            (Level::Avx2, Some(p), Some(v), _) if is_max => arg256_f32::<true>(p, rs, rows, v, idx),
            (Level::Avx2, Some(p), Some(v), _) => arg256_f32::<false>(p, rs, rows, v, idx),
            (level, _, _, Some(p)) => {
                let Some(v) = as_f64_mut(vals) else {
                    return false;
                };
                match (level, is_max) {
                    (Level::Avx512, true) => arg512_f64::<true>(p, rs, rows, v, idx),
                    (Level::Avx512, false) => arg512_f64::<false>(p, rs, rows, v, idx),
                    (Level::Avx2, true) => arg256_f64::<true>(p, rs, rows, v, idx),
                    (Level::Avx2, false) => arg256_f64::<false>(p, rs, rows, v, idx),
                    _ => return false,
                }
            }
            _ => return false,
        }
    }
    true
}

/// Whether `v` beats `a` (the generic arg fold's rule).
#[inline(always)]
fn arg_beats<T: PartialOrd + Copy, const MAX: bool>(v: T, a: T) -> bool {
    (if MAX { v > a } else { v < a }) | (is_nan(v) & !is_nan(a))
}

/// Defines `$name::<MAX>(x, rs, rows, vals, idx)`: [`arg_cols`]'s fold with `$n`-lane
/// vectors, per [`COL_ROWS`] rows `$g` of them at a time (then single vectors, then the
/// columns left over), indices as `$it` lanes beside the
/// values; `$take(x, a)` is the lanes where `x` beats `a`, `$sel(a, take, x)` and
/// `$seli(i, take, r)` pick `x` and row index `r` there.
///
/// # Safety (of the defined fn)
/// The CPU has `$feature`; `x.add(r * rs + c)` is readable for `r < rows`, `c <
/// vals.len()`; `idx.len() == vals.len()`; `rows` fits an `i32`.
macro_rules! arg_kernel {
    ($feature:literal, $name:ident, $t:ty, $it:ty, $n:expr, $g:expr, $vt:ty, $ivt:ty,
     $load:ident, $store:ident, $iload:expr, $istore:expr, $iset1:expr,
     |$x:ident, $a:ident| $take:expr, |$sa:ident, $tk:ident, $sx:ident| $sel:expr,
     |$si:ident, $tk2:ident, $sr:ident| $seli:expr) => {
        #[target_feature(enable = $feature)]
        #[inline]
        unsafe fn $name<const MAX: bool>(
            x: *const $t,
            rs: usize,
            rows: usize,
            vals: &mut [$t],
            idx: &mut [i64],
        ) {
            /// `G` vectors of columns `c..` down rows `r0..r1`, their indices in `ib`.
            #[target_feature(enable = $feature)]
            #[inline]
            unsafe fn group<const G: usize, const MAX: bool>(
                x: *const $t,
                rs: usize,
                r0: usize,
                r1: usize,
                c: usize,
                vals: *mut $t,
                ib: *mut $it,
            ) {
                // SAFETY: the caller's promise: columns `c..c + G * N` of rows `r0..r1`
                // are readable; `vals` and `ib` hold those columns.
                unsafe {
                    let mut v: [$vt; G] = [$load(vals.add(c).cast_const()); G];
                    let mut iv: [$ivt; G] = [$iload(ib.add(c).cast_const()); G];
                    for k in 0..G {
                        v[k] = $load(vals.add(c + k * $n).cast_const());
                        iv[k] = $iload(ib.add(c + k * $n).cast_const());
                    }
                    for r in r0..r1 {
                        let row = x.add(r * rs + c);
                        let $sr = $iset1(r as $it);
                        for k in 0..G {
                            let ($x, $a) = ($load(row.add(k * $n)), v[k]);
                            let $tk = $take;
                            let $tk2 = $tk;
                            let ($sa, $sx) = ($a, $x);
                            v[k] = $sel;
                            let $si = iv[k];
                            iv[k] = $seli;
                        }
                    }
                    for k in 0..G {
                        $store(vals.add(c + k * $n), v[k]);
                        $istore(ib.add(c + k * $n), iv[k]);
                    }
                }
            }
            let w = vals.len();
            let mut ib: Vec<$it> = idx.iter().map(|&i| i as $it).collect();
            let mut r0 = 0;
            while r0 < rows {
                let r1 = (r0 + COL_ROWS).min(rows);
                let mut c = 0;
                // SAFETY (each group): the columns and rows lie in the caller's range.
                while c + $g * $n <= w {
                    unsafe {
                        group::<{ $g }, MAX>(x, rs, r0, r1, c, vals.as_mut_ptr(), ib.as_mut_ptr())
                    };
                    c += $g * $n;
                }
                while c + $n <= w {
                    unsafe {
                        group::<1, MAX>(x, rs, r0, r1, c, vals.as_mut_ptr(), ib.as_mut_ptr())
                    };
                    c += $n;
                }
                for r in r0..r1 {
                    for (k, (a, i)) in vals[c..].iter_mut().zip(&mut ib[c..]).enumerate() {
                        // SAFETY: as above.
                        let v = unsafe { *x.add(r * rs + c + k) };
                        if arg_beats::<$t, MAX>(v, *a) {
                            (*a, *i) = (v, r as $it);
                        }
                    }
                }
                r0 = r1;
            }
            for (i, &b) in idx.iter_mut().zip(&ib) {
                *i = i64::from(b);
            }
        }
    };
}

arg_kernel!(
    "avx512f",
    arg512_f32,
    f32,
    i32,
    16,
    4,
    __m512,
    __m512i,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    |p: *const i32| _mm512_loadu_si512(p.cast()),
    |p: *mut i32, v| _mm512_storeu_si512(p.cast(), v),
    _mm512_set1_epi32,
    |x, a| {
        let gt = if MAX {
            _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, a)
        } else {
            _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, a)
        };
        gt | (_mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x) & !_mm512_cmp_ps_mask::<_CMP_UNORD_Q>(a, a))
    },
    |a, take, x| _mm512_mask_mov_ps(a, take, x),
    |i, take, r| _mm512_mask_mov_epi32(i, take, r)
);
arg_kernel!(
    "avx512f",
    arg512_f64,
    f64,
    i64,
    8,
    4,
    __m512d,
    __m512i,
    _mm512_loadu_pd,
    _mm512_storeu_pd,
    |p: *const i64| _mm512_loadu_si512(p.cast()),
    |p: *mut i64, v| _mm512_storeu_si512(p.cast(), v),
    _mm512_set1_epi64,
    |x, a| {
        let gt = if MAX {
            _mm512_cmp_pd_mask::<_CMP_GT_OQ>(x, a)
        } else {
            _mm512_cmp_pd_mask::<_CMP_LT_OQ>(x, a)
        };
        gt | (_mm512_cmp_pd_mask::<_CMP_UNORD_Q>(x, x) & !_mm512_cmp_pd_mask::<_CMP_UNORD_Q>(a, a))
    },
    |a, take, x| _mm512_mask_mov_pd(a, take, x),
    |i, take, r| _mm512_mask_mov_epi64(i, take, r)
);
arg_kernel!(
    "avx2",
    arg256_f32,
    f32,
    i32,
    8,
    4,
    __m256,
    __m256,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    |p: *const i32| _mm256_loadu_ps(p.cast()),
    |p: *mut i32, v| _mm256_storeu_ps(p.cast(), v),
    |r: i32| _mm256_castsi256_ps(_mm256_set1_epi32(r)),
    |x, a| {
        let gt = if MAX {
            _mm256_cmp_ps::<_CMP_GT_OQ>(x, a)
        } else {
            _mm256_cmp_ps::<_CMP_LT_OQ>(x, a)
        };
        _mm256_or_ps(
            gt,
            _mm256_andnot_ps(
                _mm256_cmp_ps::<_CMP_UNORD_Q>(a, a),
                _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x),
            ),
        )
    },
    |a, take, x| _mm256_blendv_ps(a, x, take),
    |i, take, r| _mm256_blendv_ps(i, r, take)
);
arg_kernel!(
    "avx2",
    arg256_f64,
    f64,
    i64,
    4,
    4,
    __m256d,
    __m256d,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    |p: *const i64| _mm256_loadu_pd(p.cast()),
    |p: *mut i64, v| _mm256_storeu_pd(p.cast(), v),
    |r: i64| _mm256_castsi256_pd(_mm256_set1_epi64x(r)),
    |x, a| {
        let gt = if MAX {
            _mm256_cmp_pd::<_CMP_GT_OQ>(x, a)
        } else {
            _mm256_cmp_pd::<_CMP_LT_OQ>(x, a)
        };
        _mm256_or_pd(
            gt,
            _mm256_andnot_pd(
                _mm256_cmp_pd::<_CMP_UNORD_Q>(a, a),
                _mm256_cmp_pd::<_CMP_UNORD_Q>(x, x),
            ),
        )
    },
    |a, take, x| _mm256_blendv_pd(a, x, take),
    |i, take, r| _mm256_blendv_pd(i, r, take)
);
