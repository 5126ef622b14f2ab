//! Folds over a [`Block`]: sum, prod, Σx², Σ(x - mean)², max, min, all and any as one
//! `Op` each, run over rows (lanes, then a tree over fixed blocks of a long row) or over
//! columns (tiles of outputs advanced together, a tree over fixed blocks of rows); and
//! the arg-reductions (max/min with the first index).
//!
//! Determinism: every output is a function of its elements and the sizes alone: a row
//! is cut into [`ROW_BLOCK`]-element blocks, each folded in 32 interleaved lanes then
//! pairwise (float32 sums and Σx²: float32 lanes over fixed 512-element chunks, added
//! into float64 lanes, [`f32_chunks`]), the blocks combined by a fixed tree; a column into [`COL_BLOCK`]-row
//! blocks, each folded in order, combined the same way. The pool only decides who
//! computes which block, so the bits are the same at every thread count and SIMD level.

use super::par::{Parts, build, leveled, parallel, per_output, tasks, tree};
use super::plan::Block;
use crate::storage::Element;
use std::mem::MaybeUninit;

/// Elements per block of a row (also about one piece of parallel work).
pub(crate) const ROW_BLOCK: usize = 1 << 14;
/// Rows per block of a column fold.
pub(crate) const COL_BLOCK: usize = 512;
/// Interleaved partial results per row block: 32 float64 are four AVX-512 registers,
/// enough adds in flight to hide their latency.
const LANES: usize = 32;
/// The widest tile of columns one piece advances together (its accumulators stay in L1).
pub(crate) const TILE: usize = 256;

/// An associative fold: `id` is its value over no elements; `load(x, o)` what element
/// `x` of output `o` contributes.
pub(crate) trait Op<T>: Sync {
    type A: Copy + Send + Sync;
    fn id(&self) -> Self::A;
    fn load(&self, x: T, o: usize) -> Self::A;
    fn comb(&self, a: Self::A, b: Self::A) -> Self::A;
    /// The fold of a run of row `o` (at most [`ROW_BLOCK`] elements): [`lanes`], or a
    /// hand-shaped loop in the same order where the generic one vectorises badly.
    #[inline(always)]
    fn row(&self, x: &[T], o: usize) -> Self::A
    where
        T: Copy,
        Self: Sized,
    {
        lanes(self, x, o)
    }
    /// Folds rows `0..rows` of columns `0..acc.len()` (element `(r, c)` at `x[s0 + r *
    /// rs + c]`) into `acc`, each column in row order, by an intrinsics kernel of the
    /// level in use (`simd.rs`: the generic column fold's order and steps, so its bits);
    /// `false` where there is none, and the generic fold runs.
    #[inline(always)]
    fn cols(&self, x: &[T], s0: usize, rs: usize, rows: usize, acc: &mut [Self::A]) -> bool {
        let _ = (x, s0, rs, rows, acc);
        false
    }
}

/// A float64 fold of a run in [`LANES`] lanes (as [`lanes`]: lane `k` takes elements
/// `k, k + 32, ...`; then pairwise, then the tail), written as four vectors of eight so
/// that it compiles to four independent vector chains: `step(acc, x)` per element.
macro_rules! f64_lanes {
    ($xs:expr, $id:expr, |$a:ident, $x:ident| $step:expr, |$p:ident, $q:ident| $comb:expr) => {{
        let xs = $xs;
        let mut acc = [[$id; 8]; 4];
        let mut chunks = xs.chunks_exact(LANES);
        for c in &mut chunks {
            for (j, v) in acc.iter_mut().enumerate() {
                for (k, slot) in v.iter_mut().enumerate() {
                    let ($a, $x) = (*slot, c[j * 8 + k].to_f64());
                    *slot = $step;
                }
            }
        }
        let mut tail = $id;
        for v in chunks.remainder() {
            let ($a, $x) = (tail, v.to_f64());
            tail = $step;
        }
        let mut f = [$id; LANES];
        for (j, v) in acc.iter().enumerate() {
            f[j * 8..j * 8 + 8].copy_from_slice(v);
        }
        let mut w = LANES;
        while w > 1 {
            w /= 2;
            for k in 0..w {
                let ($p, $q) = (f[k], f[k + w]);
                f[k] = $comb;
            }
        }
        let ($p, $q) = (f[0], tail);
        $comb
    }};
}

/// Elements each float32 lane folds per chunk in [`f32_chunks`]: short enough that a
/// chunk's float32 error stays a few ulps (at most 15 roundings of a lane's partial sum,
/// about torch's first cascade level), long enough that the chunk's conversion to
/// float64 and 32 float64 adds cost little next to its 512 float32 adds.
const F32_RUN: usize = 16;
/// Elements per float32 chunk: [`LANES`] lanes of [`F32_RUN`].
const F32_CHUNK: usize = LANES * F32_RUN;

/// `xs` as `&[f32]` when `T` is `f32` (the float32 row sums' own path).
#[inline(always)]
pub(super) fn as_f32<T: 'static>(xs: &[T]) -> Option<&[f32]> {
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>() {
        // SAFETY: `T` is `f32` (checked above): same size, alignment and values.
        Some(unsafe { std::slice::from_raw_parts(xs.as_ptr().cast::<f32>(), xs.len()) })
    } else {
        None
    }
}

/// `xs` as `&[f64]` when `T` is `f64` (used by the x86 kernels of `simd.rs`).
#[inline(always)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) fn as_f64<T: 'static>(xs: &[T]) -> Option<&[f64]> {
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f64>() {
        // SAFETY: `T` is `f64` (checked above): same size, alignment and values.
        Some(unsafe { std::slice::from_raw_parts(xs.as_ptr().cast::<f64>(), xs.len()) })
    } else {
        None
    }
}

/// The float32 lane sums (of `x²` with `SQ`) of one chunk (a multiple of [`LANES`]
/// elements, at most [`F32_CHUNK`]): lane `k` adds elements `k, k + 32, ...` in order
/// from +0, whatever the vector width (two AVX-512 registers, four AVX2 ones).
#[inline(always)]
fn chunk_lanes<const SQ: bool, const NZ: bool>(c: &[f32]) -> [f32; LANES] {
    let mut s = [0.0f32; LANES];
    for g in c.chunks_exact(LANES) {
        for (a, &x) in s.iter_mut().zip(g) {
            // (NZ: a NaN counts as 0, nansum's elements, as a select)
            let x = if NZ && x.is_nan() { 0.0 } else { x };
            // (`x * x` then `+`: never fused, so the same bits with or without FMA)
            *a = if SQ { *a + x * x } else { *a + x };
        }
    }
    s
}

/// Σ x (Σ x² with `SQ`) of a float32 run: chunks of [`F32_CHUNK`] elements folded in
/// [`LANES`] float32 lanes (one add per element, no conversion), each chunk's lane sums
/// added into [`LANES`] float64 lanes; then pairwise, then the tail (under 32 elements)
/// in float64, as [`f64_lanes!`]. The order depends on the length alone. The float32
/// part may overflow where float64 does not (the callers check the result).
#[inline(always)]
fn f32_chunks<const SQ: bool, const NZ: bool>(xs: &[f32]) -> f64 {
    let body = xs.len() / LANES * LANES;
    let (body, tail) = xs.split_at(body);
    let mut acc = [0.0f64; LANES];
    for c in body.chunks(F32_CHUNK) {
        // The lane sums pass through memory (`black_box`, an identity): with the
        // conversion below in the same expression tree, LLVM vectorised the float32
        // adds two lanes at a time (0.12-0.20 ns/element at every level instead of
        // 0.05, measured in a standalone loop).
        let s = std::hint::black_box(chunk_lanes::<SQ, NZ>(c));
        for (a, &v) in acc.iter_mut().zip(&s) {
            *a += f64::from(v);
        }
    }
    let t = tail.iter().fold(0.0f64, |t, &v| {
        let v = if NZ && v.is_nan() { 0.0 } else { f64::from(v) };
        if SQ { t + v * v } else { t + v }
    });
    let mut w = LANES;
    while w > 1 {
        w /= 2;
        for k in 0..w {
            acc[k] += acc[k + w];
        }
    }
    acc[0] + t
}

/// Σ x, in float64 (float32 rows: [`f32_chunks`] first).
pub(crate) struct Sum;
impl<T: Element> Op<T> for Sum {
    type A = f64;
    #[inline(always)]
    fn id(&self) -> f64 {
        0.0
    }
    #[inline(always)]
    fn load(&self, x: T, _: usize) -> f64 {
        x.to_f64()
    }
    #[inline(always)]
    fn comb(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    fn row(&self, xs: &[T], _: usize) -> f64 {
        if let Some(x) = as_f32(xs) {
            let s = f32_chunks::<false, false>(x);
            if s.is_finite() {
                return s;
            }
            // a float32 lane overflowed, or the run holds an inf or a NaN: the
            // float64 fold, as for float64 (its inf or NaN where the run has one)
        }
        f64_lanes!(xs, 0.0, |a, x| a + x, |p, q| p + q)
    }
    #[inline(always)]
    fn cols(&self, x: &[T], s0: usize, rs: usize, rows: usize, acc: &mut [f64]) -> bool {
        if let Some(x) = as_f32(x) {
            cols_sum_f32(x, s0, rs, rows, acc);
            return true;
        }
        #[cfg(target_arch = "x86_64")]
        return super::simd::cols_f64::<T, false>(x, s0, rs, rows, acc);
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (x, s0, rs, rows, acc);
            false
        }
    }
}

/// Σ x with NaN counted as 0 (nansum): [`Sum`]'s order and steps over the elements with
/// each NaN replaced by 0, so `nansum(x)` has the bits of `sum(where(isnan(x), 0, x))`
/// in one pass, along rows and columns alike.
pub(crate) struct NanSum;
impl<T: Element> Op<T> for NanSum {
    type A = f64;
    #[inline(always)]
    fn id(&self) -> f64 {
        0.0
    }
    #[inline(always)]
    fn load(&self, x: T, _: usize) -> f64 {
        let x = x.to_f64();
        if x.is_nan() { 0.0 } else { x }
    }
    #[inline(always)]
    fn comb(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    fn row(&self, xs: &[T], _: usize) -> f64 {
        if let Some(x) = as_f32(xs) {
            let s = f32_chunks::<false, true>(x);
            if s.is_finite() {
                return s;
            }
            // (a float32 lane overflowed or the run holds an inf: float64, as Sum)
        }
        f64_lanes!(
            xs,
            0.0,
            |a, x| a + if x.is_nan() { 0.0 } else { x },
            |p, q| p + q
        )
    }
    #[inline(always)]
    fn cols(&self, x: &[T], s0: usize, rs: usize, rows: usize, acc: &mut [f64]) -> bool {
        // float32: Sum's float32 column blocks (float64 columns take the generic fold,
        // whose bits Sum's kernels keep)
        match as_f32(x) {
            Some(x) => {
                cols_sum_f32_of::<true>(&x[s0..], rs, rows, acc);
                true
            }
            None => false,
        }
    }
}

/// Rows per float32 block of a column sum ([`cols_sum_f32`]): at most 15 float32
/// roundings of a partial sum, as [`F32_RUN`] for rows.
pub(super) const F32_COL_ROWS: usize = F32_RUN;

/// Σ of float32 columns (element `(r, c)` at `x[s0 + r * rs + c]`, rows `0..rows`)
/// into the float64 sums `acc`: each column's blocks of [`F32_COL_ROWS`] rows (from row
/// 0) summed in float32 in row order, from the block's first element, and each block's
/// sum added to the column's in float64; a block whose float32 sum is not finite (an
/// overflow, or an inf or NaN among its elements) is added element by element in
/// float64 instead, so that float32 overflow never shows. One add per element where
/// float64 throughout took two conversions and two adds per vector of float32 (256 x
/// 256 `sum(0)` 1.3x torch's time before); torch sums in float32 too (a cascade).
/// The intrinsics of `simd.rs` where the level has them, each giving this fold's bits.
pub(super) fn cols_sum_f32(x: &[f32], s0: usize, rs: usize, rows: usize, acc: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if super::simd::cols_sum_f32(x, s0, rs, rows, acc) {
        return;
    }
    cols_sum_f32_generic(&x[s0..], rs, rows, acc);
}

/// [`cols_sum_f32`] in plain Rust, 32 columns at a time (element `(r, c)` at `x[r * rs
/// + c]`); also the intrinsics' column tails.
pub(super) fn cols_sum_f32_generic(x: &[f32], rs: usize, rows: usize, acc: &mut [f64]) {
    cols_sum_f32_of::<false>(x, rs, rows, acc);
}

/// [`cols_sum_f32_generic`], each NaN counted as 0 when `NZ` (nansum's columns: the bits
/// of the column sum of the zeroed elements).
#[inline(always)]
pub(super) fn cols_sum_f32_of<const NZ: bool>(x: &[f32], rs: usize, rows: usize, acc: &mut [f64]) {
    let z = |v: f32| if NZ && v.is_nan() { 0.0 } else { v };
    const K: usize = 32;
    let w = acc.len();
    let mut r0 = 0;
    while r0 < rows {
        let r1 = (r0 + F32_COL_ROWS).min(rows);
        for (c0, acc) in (0..w).step_by(K).zip(acc.chunks_mut(K)) {
            let kw = acc.len();
            let mut p = [0.0f32; K];
            for (p, &v) in p.iter_mut().zip(&x[r0 * rs + c0..r0 * rs + c0 + kw]) {
                *p = z(v);
            }
            for r in r0 + 1..r1 {
                for (p, &v) in p.iter_mut().zip(&x[r * rs + c0..r * rs + c0 + kw]) {
                    *p += z(v);
                }
            }
            for (k, (a, &s)) in acc.iter_mut().zip(&p).enumerate() {
                *a = block_sum_into(*a, s, |r| z(x[r * rs + c0 + k]), r0, r1);
            }
        }
        r0 = r1;
    }
}

/// `a` plus a column block's float32 sum `s`, or, where `s` is not finite, plus the
/// block's elements (`at(r)`, rows `r0..r1`) one by one in float64 (see
/// [`cols_sum_f32`]).
#[inline(always)]
pub(super) fn block_sum_into(
    a: f64,
    s: f32,
    at: impl Fn(usize) -> f32,
    r0: usize,
    r1: usize,
) -> f64 {
    if s.is_finite() {
        a + f64::from(s)
    } else {
        (r0..r1).fold(a, |a, r| a + f64::from(at(r)))
    }
}

/// Π x, in float64.
pub(crate) struct Prod;
impl<T: Element> Op<T> for Prod {
    type A = f64;
    #[inline(always)]
    fn id(&self) -> f64 {
        1.0
    }
    #[inline(always)]
    fn load(&self, x: T, _: usize) -> f64 {
        x.to_f64()
    }
    #[inline(always)]
    fn comb(&self, a: f64, b: f64) -> f64 {
        a * b
    }
    /// At the AVX-512 and AVX2 levels float32 and float64 take `simd::prod_row`'s
    /// intrinsics (the same lanes and order, so the same bits).
    #[inline(always)]
    fn row(&self, xs: &[T], _: usize) -> f64 {
        #[cfg(target_arch = "x86_64")]
        if let Some(p) = super::simd::prod_row(xs) {
            return p;
        }
        f64_lanes!(xs, 1.0, |a, x| a * x, |p, q| p * q)
    }
    #[inline(always)]
    fn cols(&self, x: &[T], s0: usize, rs: usize, rows: usize, acc: &mut [f64]) -> bool {
        #[cfg(target_arch = "x86_64")]
        return super::simd::cols_f64::<T, true>(x, s0, rs, rows, acc);
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (x, s0, rs, rows, acc);
            false
        }
    }
}

/// Σ x², in float64 (float32 rows: [`f32_chunks`] first).
pub(crate) struct SumSq;
impl<T: Element> Op<T> for SumSq {
    type A = f64;
    #[inline(always)]
    fn id(&self) -> f64 {
        0.0
    }
    #[inline(always)]
    fn load(&self, x: T, _: usize) -> f64 {
        let x = x.to_f64();
        x * x
    }
    #[inline(always)]
    fn comb(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    fn row(&self, xs: &[T], _: usize) -> f64 {
        if let Some(x) = as_f32(xs) {
            let s = f32_chunks::<true, false>(x);
            if (SQ_MIN..=f64::MAX).contains(&s) {
                return s;
            }
            // a square overflowed float32 (|x| > 1.8e19), or the run holds an inf or
            // a NaN, or the squares are so small that float32 may have lost them to
            // underflow (or all are zero): the float64 fold, as for float64
        }
        f64_lanes!(xs, 0.0, |a, x| a + x * x, |p, q| p + q)
    }
}

/// The smallest float32-chunked Σx² of a run kept: below it the run is folded again in
/// float64. Each square that underflows float32 loses at most 2^-150, so a run of at
/// most [`ROW_BLOCK`] (2^14) elements loses at most 2^-136: 2^-36 of a sum of 2^-100.
/// (`Sum::row` needs no floor: float32 adds of subnormals are exact.)
const SQ_MIN: f64 = 1.0 / (1u128 << 100) as f64;

/// Σ (x - m[o])², in float64: the second pass of a variance.
pub(crate) struct SqDev<'a>(&'a [f64]);
impl<'a> SqDev<'a> {
    /// The op for a block with `m.len()` outputs (the drivers load only outputs
    /// `0..b.outputs()`, which `m` must cover: checked by the caller's `b`).
    pub(crate) fn new(m: &'a [f64], b: &Block) -> Option<SqDev<'a>> {
        (m.len() >= b.outputs()).then_some(SqDev(m))
    }
}
impl<T: Element> Op<T> for SqDev<'_> {
    type A = f64;
    #[inline(always)]
    fn id(&self) -> f64 {
        0.0
    }
    #[inline(always)]
    fn load(&self, x: T, o: usize) -> f64 {
        // SAFETY: the drivers pass only outputs `o < b.outputs() <= m.len()` (`new`).
        let m = unsafe { *self.0.get_unchecked(o) };
        let d = x.to_f64() - m;
        d * d
    }
    #[inline(always)]
    fn comb(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    fn row(&self, xs: &[T], o: usize) -> f64 {
        let m = self.0.get(o).copied().unwrap_or(0.0);
        f64_lanes!(xs, 0.0, |a, x| a + (x - m) * (x - m), |p, q| p + q)
    }
}

/// The largest (`Extreme<true>`) or smallest element; NaN if there is one.
pub(crate) struct Extreme<const MAX: bool>;
impl<T: Element, const MAX: bool> Op<T> for Extreme<MAX> {
    type A = T;
    #[inline(always)]
    fn id(&self) -> T {
        T::from_f64(if MAX {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        })
    }
    #[inline(always)]
    fn load(&self, x: T, _: usize) -> T {
        x
    }
    #[inline(always)]
    fn comb(&self, a: T, v: T) -> T {
        // (`|`, not `||`: no branch, so the loops over it vectorise)
        if (if MAX { v > a } else { v < a }) | is_nan(v) {
            v
        } else {
            a
        }
    }
    /// The extreme in 32 lanes with the NaNs counted on the side: a compare and a
    /// select per element, where folding NaN into the select chains three (4-12x
    /// slower, measured). Exact, so the lanes change nothing but which of two equal
    /// zeros is returned.
    ///
    /// At the AVX-512 and AVX2 levels float32 and float64 take `simd::extreme`'s
    /// intrinsics instead (the same lanes, order and result): LLVM vectorised this loop
    /// badly at AVX-512 (float32: the max lanes split into 128-bit pieces and spilled
    /// beside the `u32` flags, 2x slower than the AVX2 build), and rewrites of it that
    /// vectorised well in a standalone loop did not inside the kernels.
    #[inline(always)]
    fn row(&self, xs: &[T], _: usize) -> T {
        #[cfg(target_arch = "x86_64")]
        if let Some(m) = super::simd::extreme::<T, MAX>(xs) {
            return m;
        }
        let better = |v: T, a: T| if MAX { v > a } else { v < a };
        let mut acc = [[self.id(); 16]; 2];
        let mut nan = [[0u32; 16]; 2];
        let mut chunks = xs.chunks_exact(LANES);
        for c in &mut chunks {
            for (j, (v, n)) in acc.iter_mut().zip(nan.iter_mut()).enumerate() {
                for (k, (a, f)) in v.iter_mut().zip(n.iter_mut()).enumerate() {
                    let x = c[j * 16 + k];
                    *a = if better(x, *a) { x } else { *a };
                    *f |= u32::from(is_nan(x));
                }
            }
        }
        // combine: the two vectors, then halves (vectorised), then the tail
        let [mut a, a1] = acc;
        let [mut n, n1] = nan;
        for ((a, n), (&b, &f)) in a.iter_mut().zip(n.iter_mut()).zip(a1.iter().zip(&n1)) {
            *a = if better(b, *a) { b } else { *a };
            *n |= f;
        }
        let mut w = 16;
        while w > 1 {
            w /= 2;
            for k in 0..w {
                let (b, f) = (a[k + w], n[k + w]);
                a[k] = if better(b, a[k]) { b } else { a[k] };
                n[k] |= f;
            }
        }
        let mut m = a[0];
        let mut any_nan = n[0] != 0;
        for &v in chunks.remainder() {
            m = if better(v, m) { v } else { m };
            any_nan |= is_nan(v);
        }
        if any_nan { T::from_f64(f64::NAN) } else { m }
    }
    #[inline(always)]
    fn cols(&self, x: &[T], s0: usize, rs: usize, rows: usize, acc: &mut [T]) -> bool {
        #[cfg(target_arch = "x86_64")]
        return super::simd::cols_extreme::<T, MAX>(x, s0, rs, rows, acc);
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (x, s0, rs, rows, acc);
            false
        }
    }
}

/// Whether every (`Truth(true)`) or any element is nonzero (NaN is nonzero).
pub(crate) struct Truth(pub bool);
impl<T: Element> Op<T> for Truth {
    type A = bool;
    #[inline(always)]
    fn id(&self) -> bool {
        self.0
    }
    #[inline(always)]
    fn load(&self, x: T, _: usize) -> bool {
        x != T::default()
    }
    #[inline(always)]
    fn comb(&self, a: bool, b: bool) -> bool {
        if self.0 { a & b } else { a | b }
    }
}

/// NaN test for any element type (NaN is the only value unequal to itself); compiles to
/// the same compare as `f32::is_nan`, so loops using it still vectorise.
#[inline(always)]
#[allow(clippy::eq_op)]
pub(crate) fn is_nan<T: PartialEq + Copy>(v: T) -> bool {
    v != v
}

/// `op` over `x`, in [`LANES`] interleaved partial results combined pairwise, then the
/// tail: the same order whatever the vector width.
#[inline(always)]
pub(crate) fn lanes<T: Copy, O: Op<T>>(op: &O, x: &[T], o: usize) -> O::A {
    let mut acc = [op.id(); LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a = op.comb(*a, op.load(v, o));
        }
    }
    let tail = chunks
        .remainder()
        .iter()
        .fold(op.id(), |a, &v| op.comb(a, op.load(v, o)));
    let mut w = LANES;
    while w > 1 {
        w /= 2;
        let (lo, hi) = acc.split_at_mut(w);
        for (a, &b) in lo.iter_mut().zip(&hi[..w]) {
            *a = op.comb(*a, b);
        }
    }
    op.comb(acc[0], tail)
}

/// Outputs `first..` (as many as `out` holds) of a rows block, one row each.
#[inline(always)]
fn rows_body<T: Copy, O: Op<T>>(
    x: &[T],
    b: &Block,
    first: usize,
    out: &mut [MaybeUninit<O::A>],
    op: &O,
) {
    for (k, slot) in out.iter_mut().enumerate() {
        let o = first + k;
        slot.write(op.row(b.row(x, o), o));
    }
}
leveled! {
    fn rows_task<T: Copy, O: Op<T>>(x: &[T], b: &Block, first: usize, out: &mut [MaybeUninit<O::A>], op: &O) = rows_body;
}

/// Block folds `first..` of long rows (`nb` blocks a row, row-major).
#[inline(always)]
fn blocks_body<T: Copy, O: Op<T>>(
    x: &[T],
    b: &Block,
    nb: usize,
    first: usize,
    out: &mut [MaybeUninit<O::A>],
    op: &O,
) {
    for (k, slot) in out.iter_mut().enumerate() {
        let (o, j) = ((first + k) / nb, (first + k) % nb);
        let row = b.row(x, o);
        let s = j * ROW_BLOCK;
        slot.write(op.row(&row[s..(s + ROW_BLOCK).min(row.len())], o));
    }
}
leveled! {
    fn blocks_task<T: Copy, O: Op<T>>(x: &[T], b: &Block, nb: usize, first: usize, out: &mut [MaybeUninit<O::A>], op: &O) = blocks_body;
}

/// `op` over each row of a rows block (`b.is_rows()`, `b.red > 0`).
pub(crate) fn rows<T: Copy + Sync, O: Op<T>>(x: &[T], b: &Block, op: &O) -> Vec<O::A> {
    let nb = b.red.div_ceil(ROW_BLOCK);
    if nb <= 1 {
        return per_output(b.outer, b.red, |r, out| rows_task(x, b, r.start, out, op));
    }
    let parts = per_output(b.outer * nb, ROW_BLOCK, |r, out| {
        blocks_task(x, b, nb, r.start, out, op);
    });
    let comb = |a, c| op.comb(a, c);
    parts
        .chunks_exact(nb)
        .map(|p| tree(p, op.id(), &comb))
        .collect()
}

/// Rows `r0..r1` of the columns `i0..i0 + acc.len()` of group `o`, folded into `acc`:
/// 32 columns at a time in a fixed-size array (registers, where a loop over the tile's
/// width would load and store its accumulators every row: 2-4x slower, measured), then
/// the columns left over.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn cols_body<T: Copy, O: Op<T>>(
    x: &[T],
    b: &Block,
    o: usize,
    i0: usize,
    r0: usize,
    r1: usize,
    acc: &mut [O::A],
    op: &O,
) {
    const K: usize = 32;
    let w = acc.len();
    let out0 = o * b.inner + i0;
    let start = |r: usize| b.off + o * b.os + r * b.rs + i0;
    if r1 > r0 && op.cols(x, start(r0), b.rs, r1 - r0, acc) {
        return;
    }
    let mut c0 = 0;
    while c0 + K <= w {
        let mut a = [op.id(); K];
        a.copy_from_slice(&acc[c0..c0 + K]);
        for r in r0..r1 {
            let s = start(r) + c0;
            let Ok(row) = <&[T; K]>::try_from(&x[s..s + K]) else {
                continue; // (never: the range is K long)
            };
            for (k, (a, &v)) in a.iter_mut().zip(row).enumerate() {
                *a = op.comb(*a, op.load(v, out0 + c0 + k));
            }
        }
        acc[c0..c0 + K].copy_from_slice(&a);
        c0 += K;
    }
    if c0 < w {
        for r in r0..r1 {
            let s = start(r) + c0;
            for (i, (a, &v)) in acc[c0..].iter_mut().zip(&x[s..s + w - c0]).enumerate() {
                *a = op.comb(*a, op.load(v, out0 + c0 + i));
            }
        }
    }
}
leveled! {
    fn cols_task<T: Copy, O: Op<T>>(x: &[T], b: &Block, o: usize, i0: usize, r0: usize, r1: usize, acc: &mut [O::A], op: &O) = cols_body;
}

/// The tile width of the column folds and arg-reductions for `inner` columns: at most
/// [`TILE`], narrower where that gives the pool at least 8 pieces, but at least
/// [`COL_GROUP`] (the AVX-512 kernels' register group: `simd.rs` folds that many columns
/// down 16 rows at a time; narrower tiles, down to 16 before, left most of it unused).
/// The bits do not depend on it: each column is folded on its own.
pub(crate) fn tile_width(inner: usize) -> usize {
    inner
        .div_ceil(8)
        .next_multiple_of(16)
        .clamp(COL_GROUP, TILE)
        .min(inner)
}
/// The columns the AVX-512 column kernels hold in registers.
const COL_GROUP: usize = 64;

/// Runs `f(o, i0, out)` for every tile of columns of a columns block, in parallel when
/// large; `out` is the tile's outputs.
pub(crate) fn for_each_tile<U: Send>(
    b: &Block,
    tw: usize,
    f: impl Fn(usize, usize, &mut [MaybeUninit<U>]) + Sync,
) -> Vec<U> {
    let tw = tw.clamp(1, TILE);
    let nt = b.inner.div_ceil(tw);
    let par = parallel(b.outputs().saturating_mul(b.red));
    build(b.outputs(), |parts: &Parts<U>| {
        tasks(b.outer * nt, par, &|t| {
            let (o, i0) = (t / nt, (t % nt) * tw);
            let start = o * b.inner + i0;
            // SAFETY: each tile (o, i0) owns its own outputs.
            let out = unsafe { parts.get(start..start + tw.min(b.inner - i0)) };
            f(o, i0, out);
        });
    })
}

/// `op` over each column of a block (any block; the general path for all but rows).
///
/// Columns of at most [`COL_BLOCK`] rows: one piece per tile of columns, down all the
/// rows. Longer columns: one piece per (tile of up to [`LONG_TILE`] columns, block of
/// [`COL_BLOCK`] rows), each folding its block into its own partial results, then a
/// tree per column over its blocks: the pieces walk rows nearly whole (4 KB of float32
/// at a time), where tiles down whole columns read 1 KB of each row and jumped to the
/// next (2048² float32 columns read memory at about 40% of the rows' speed, measured).
/// The same blocks and tree either way, so the same bits.
pub(crate) fn cols<T: Copy + Sync, O: Op<T>>(x: &[T], b: &Block, op: &O) -> Vec<O::A> {
    let nrb = b.red.div_ceil(COL_BLOCK);
    if nrb <= 1 {
        return for_each_tile(b, tile_width(b.inner), |o, i0, out| {
            let w = out.len();
            let mut acc = [op.id(); TILE];
            cols_task(x, b, o, i0, 0, b.red, &mut acc[..w], op);
            for (s, &a) in out.iter_mut().zip(&acc) {
                s.write(a);
            }
        });
    }
    // long columns: partial results of block j in parts[j * n + output]
    let n = b.outputs();
    let tw = b.inner.min(LONG_TILE);
    let nt = b.inner.div_ceil(tw);
    let par = parallel(n.saturating_mul(b.red));
    let parts: Vec<O::A> = build(nrb * n, |parts: &Parts<O::A>| {
        tasks(b.outer * nt * nrb, par, &|t| {
            let (j, i0, o) = (t % nrb, (t / nrb % nt) * tw, t / nrb / nt);
            let w = tw.min(b.inner - i0);
            let r0 = j * COL_BLOCK;
            let mut acc = vec![op.id(); w];
            cols_task(x, b, o, i0, r0, (r0 + COL_BLOCK).min(b.red), &mut acc, op);
            let s = j * n + o * b.inner + i0;
            // SAFETY: each piece (o, tile, j) owns its own partial results.
            let out = unsafe { parts.get(s..s + w) };
            for (slot, &a) in out.iter_mut().zip(&acc) {
                slot.write(a);
            }
        });
    });
    let comb = |a, c| op.comb(a, c);
    per_output(n, nrb, |r, out| {
        let mut col = vec![op.id(); nrb];
        for (k, slot) in r.zip(out.iter_mut()) {
            for (j, c) in col.iter_mut().enumerate() {
                *c = parts[j * n + k];
            }
            slot.write(tree(&col, op.id(), &comb));
        }
    })
}

/// The widest tile of a piece of a long column fold: 1024 float64 accumulators (8 KB,
/// in L1 beside the rows streaming through).
const LONG_TILE: usize = 1024;

/// `op` over every output of a non-empty block.
pub(crate) fn run<T: Copy + Sync, O: Op<T>>(x: &[T], b: &Block, op: &O) -> Vec<O::A> {
    if b.is_rows() {
        rows(x, b, op)
    } else {
        cols(x, b, op)
    }
}

/// Whether `v` beats `a` for the max (`is_max`) or min: strictly, and a first NaN beats
/// anything but a NaN (so the first of equals, and the first NaN, are kept).
#[inline(always)]
fn beats<T: PartialOrd + Copy>(v: T, a: T, is_max: bool) -> bool {
    (if is_max { v > a } else { v < a }) | (is_nan(v) & !is_nan(a))
}

/// (value, index) of the max or min of a non-empty run of a row starting at `start`:
/// the extreme by [`lanes`] (vectorised), then the first index holding it (or the first
/// NaN). Its element is the value returned, so the bits are those of a left-to-right
/// scan, down to which of two equal zeros comes first.
#[inline(always)]
fn arg_run<T: Element>(x: &[T], start: usize, is_max: bool) -> (T, i64) {
    let m = if is_max {
        Extreme::<true>.row(x, 0)
    } else {
        Extreme::<false>.row(x, 0)
    };
    let i = first_holding(x, m);
    (x.get(i).copied().unwrap_or(m), (start + i) as i64)
}

/// The first index of `x` holding `m` (equal to it: either zero for a zero; the first
/// NaN for a NaN), 0 if none. At the AVX-512 and AVX2 levels float32 and float64 take
/// `simd::first_holding`'s intrinsics (one compare per vector; the generic loop's `bool`
/// fold compiled about 2x slower at AVX-512 than at AVX2, measured in `max(1)`).
#[inline(always)]
fn first_holding<T: Element>(x: &[T], m: T) -> usize {
    #[cfg(target_arch = "x86_64")]
    if let Some(i) = super::simd::first_holding(x, m) {
        return i;
    }
    if is_nan(m) {
        first_index(x, is_nan::<T>)
    } else {
        first_index(x, |v: T| v == m)
    }
}

/// The first index of `row` where `hit` holds (0 if none): 16 elements tested at a
/// time without branching, then the hit searched for in its block.
#[inline(always)]
fn first_index<T: Copy>(row: &[T], hit: impl Fn(T) -> bool) -> usize {
    let mut blocks = row.chunks_exact(16);
    let mut base = 0;
    for b in &mut blocks {
        if b.iter().fold(false, |any, &v| any | hit(v)) {
            return base + b.iter().position(|&v| hit(v)).unwrap_or(0);
        }
        base += 16;
    }
    blocks
        .remainder()
        .iter()
        .position(|&v| hit(v))
        .map_or(0, |i| base + i)
}

#[inline(always)]
fn arg_rows_body<T: Element>(
    x: &[T],
    b: &Block,
    nb: usize,
    first: usize,
    out: &mut [MaybeUninit<(T, i64)>],
    is_max: bool,
) {
    for (k, slot) in out.iter_mut().enumerate() {
        let (o, j) = ((first + k) / nb, (first + k) % nb);
        let row = b.row(x, o);
        let s = j * ROW_BLOCK;
        slot.write(arg_run(&row[s..(s + ROW_BLOCK).min(row.len())], s, is_max));
    }
}
leveled! {
    fn arg_rows_task<T: Element>(x: &[T], b: &Block, nb: usize, first: usize, out: &mut [MaybeUninit<(T, i64)>], is_max: bool) = arg_rows_body;
}

#[inline(always)]
fn arg_cols_body<T: Element>(
    x: &[T],
    b: &Block,
    o: usize,
    i0: usize,
    vals: &mut [T],
    idx: &mut [i64],
    is_max: bool,
) {
    let w = vals.len();
    #[cfg(target_arch = "x86_64")]
    if super::simd::arg_cols(x, b.off + o * b.os + i0, b.rs, b.red, vals, idx, is_max) {
        return;
    }
    for r in 0..b.red {
        let s = b.off + o * b.os + r * b.rs + i0;
        let ri = r as i64;
        for ((a, i), &v) in vals.iter_mut().zip(idx.iter_mut()).zip(&x[s..s + w]) {
            let take = beats(v, *a, is_max);
            *a = if take { v } else { *a };
            *i = if take { ri } else { *i };
        }
    }
}
leveled! {
    fn arg_cols_task<T: Element>(x: &[T], b: &Block, o: usize, i0: usize, vals: &mut [T], idx: &mut [i64], is_max: bool) = arg_cols_body;
}

/// (value, first index) of the max or min of every output of a non-empty block.
pub(crate) fn arg<T: Element>(x: &[T], b: &Block, is_max: bool) -> Vec<(T, i64)> {
    if b.is_rows() {
        let nb = b.red.div_ceil(ROW_BLOCK).max(1);
        let cost = b.red.min(ROW_BLOCK);
        let parts = per_output(b.outer * nb, cost, |r, out| {
            arg_rows_task(x, b, nb, r.start, out, is_max);
        });
        if nb == 1 {
            return parts;
        }
        // blocks in order: a later block wins only if strictly better
        return parts
            .chunks_exact(nb)
            .filter_map(|p| {
                let (&first, rest) = p.split_first()?;
                Some(
                    rest.iter()
                        .fold(first, |a, &c| if beats(c.0, a.0, is_max) { c } else { a }),
                )
            })
            .collect();
    }
    for_each_tile(b, tile_width(b.inner), |o, i0, out| {
        let w = out.len();
        // the first row starts every column (index 0)
        let s = b.off + o * b.os + i0;
        let mut vals = [T::default(); TILE];
        vals[..w].copy_from_slice(&x[s..s + w]);
        let mut idx = [0i64; TILE];
        arg_cols_task(x, b, o, i0, &mut vals[..w], &mut idx[..w], is_max);
        for ((slot, &v), &i) in out.iter_mut().zip(&vals).zip(&idx) {
            slot.write((v, i));
        }
    })
}

/// Blocks `first..` (of [`ROW_BLOCK`] elements) of Σ(a - b)²: each block's squared
/// differences, rounded to the dtype as `(a - b) * (a - b)` rounds them, made into
/// `buf` and folded as [`Sum`]'s row.
#[inline(always)]
fn sq_diff_blocks_body<T: super::Real>(
    a: &[T],
    b: &[T],
    first: usize,
    out: &mut [MaybeUninit<f64>],
    buf: &mut Vec<T>,
) {
    for (k, slot) in out.iter_mut().enumerate() {
        let s = (first + k) * ROW_BLOCK;
        let e = (s + ROW_BLOCK).min(a.len());
        buf.clear();
        buf.extend(a[s..e].iter().zip(&b[s..e]).map(|(&x, &y)| {
            let d = x - y;
            d * d
        }));
        slot.write(Sum.row(buf, 0));
    }
}
leveled! {
    fn sq_diff_blocks_task<T: super::Real>(a: &[T], b: &[T], first: usize, out: &mut [MaybeUninit<f64>], buf: &mut Vec<T>) = sq_diff_blocks_body;
}

/// Σ(a - b)² over two runs of one length (non-empty), in float64: the bits of `sum` of
/// the tensor `(a - b) * (a - b)` (its blocks, each block's [`Sum`] row, the tree over
/// blocks, as [`rows`] folds one row), without the two temporaries (mse_loss's forward:
/// at 4M float32 elements the difference and its square were 32 MB written and read
/// again).
pub(crate) fn sq_diff_sum<T: super::Real>(a: &[T], b: &[T]) -> f64 {
    let nb = a.len().div_ceil(ROW_BLOCK);
    let parts = per_output(nb, ROW_BLOCK, |r, out| {
        let mut buf = Vec::with_capacity(ROW_BLOCK.min(a.len()));
        sq_diff_blocks_task(a, b, r.start, out, &mut buf);
    });
    tree(&parts, 0.0, &|p, q| p + q)
}
