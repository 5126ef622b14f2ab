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

use super::fold::{as_f32, as_f64, is_nan};
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
