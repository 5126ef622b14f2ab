//! Unary CPU kernels, derived from the op table (`ops::table`): each row's `f` becomes
//! the forward map and its `df` the fused backward, so no op's math is written here.
//! What is CPU-specific: the slice functions of `vmath` (float32 and float64) for the
//! ops that have one (same bits as their per-element forms, which `Float` uses).

use super::elementwise::{
    BinaryOp, PAR_MIN_VMATH, fill_chunks, fill_chunks_from, float_scalar_map, float_zip, map,
    map_wide, zip,
};
use super::strided::contiguous;
use super::vmath::{self, float32 as v32, float64 as v64};
use crate::Result;
use crate::backend::{Calc, UnaryOp};
use crate::layout::Layout;
use crate::storage::Buffer;
use std::borrow::Cow;

/// The scalar functions the table's `f` column is written with, for one float element.
/// The transcendental functions are `vmath`'s per-element forms, so a scalar evaluation
/// (a fused backward) gives the bits the slice kernels give.
pub trait Float: super::elementwise::Num + std::ops::Neg<Output = Self> {
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn ln_1p(self) -> Self;
    fn exp_m1(self) -> Self;
    fn sqrt(self) -> Self;
    fn rsqrt(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tan(self) -> Self;
    fn tanh(self) -> Self;
    fn sigmoid(self) -> Self;
    fn recip(self) -> Self;
    /// torch's sign: (0 < x) - (x < 0), so +0 for both zeros and for NaN.
    fn sign(self) -> Self;
    /// As torch's relu: NaN and -0 stay (one compare: both fail `< 0`).
    fn relu(self) -> Self;
    fn sinh(self) -> Self;
    fn cosh(self) -> Self;
    fn asin(self) -> Self;
    fn acos(self) -> Self;
    fn atan(self) -> Self;
    fn asinh(self) -> Self;
    fn acosh(self) -> Self;
    fn atanh(self) -> Self;
    fn erf(self) -> Self;
    fn erfc(self) -> Self;
    fn erfinv(self) -> Self;
    fn trunc(self) -> Self;
    /// `x - trunc(x)`, as torch computes it.
    fn frac(self) -> Self;
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    /// To the nearest integer, halves to even (torch's `nearbyint`).
    fn round_even(self) -> Self;
    fn log2(self) -> Self;
    fn log10(self) -> Self;
    fn exp2(self) -> Self;
    /// `x · (π / 180)`, the factor rounded to the dtype first (torch multiplies by a
    /// number).
    fn deg2rad(self) -> Self;
    /// `x · (180 / π)`, as `deg2rad`.
    fn rad2deg(self) -> Self;
    /// sin(πx) / (πx), 1 at 0: torch's kernel (π rounded to the dtype, libm's sin, one
    /// division), the same bits.
    fn sinc(self) -> Self;
    fn lgamma(self) -> Self {
        super::special::lgamma(self)
    }
    fn digamma(self) -> Self {
        super::special::digamma(self)
    }
    /// ψ⁽ⁿ⁾(x) (order 0: `digamma`, the same bits).
    fn polygamma(self, n: u32) -> Self {
        if n == 0 {
            self.digamma()
        } else {
            super::special::polygamma(n, self)
        }
    }
    // The binary table's functions (`f` of its rows): vmath's per-element forms, the
    // bits of its slice kernels (which the contiguous paths run).
    fn atan2(self, o: Self) -> Self;
    fn hypot(self, o: Self) -> Self;
    /// ln(eˢᵉˡᶠ + eᵒ) as torch computes it: the larger plus log1p(e^-|difference|), and
    /// an infinity of both signs' own value.
    fn logaddexp(self, o: Self) -> Self;
    /// `self · ln(o)`, +0 where `self` is ±0 unless `o` is NaN (torch's xlogy): vmath's
    /// per-element form (`xlogy1`, the bits of its slice kernel).
    fn xlogy(self, o: Self) -> Self;
    /// torch's fmax: the other value where one is NaN, else the larger, `self` on a tie
    /// (so fmax(0.0, -0.0) is 0.0 and fmax(-0.0, 0.0) is -0.0, as torch's).
    fn fmax(self, o: Self) -> Self;
    /// torch's fmin, as `fmax` (`self` on a tie).
    fn fmin(self, o: Self) -> Self;
    /// `self`'s magnitude with `o`'s sign bit.
    fn copysign(self, o: Self) -> Self;
    /// log2(2ˢᵉˡᶠ + 2ᵒ) as torch computes it: the larger plus log1p(2^-|difference|) / ln 2,
    /// an infinity of both signs' own value: vmath's per-element form (`logaddexp21`,
    /// the bits of the slice kernels: float32 one fused pass in float64, float64
    /// `binary::logaddexp2_f64`).
    fn logaddexp2(self, o: Self) -> Self;
    /// `o` where `self` is 0, else 1 where `self > 0` and 0 where not (NaN too).
    fn heaviside(self, o: Self) -> Self;
    /// The next representable value after `self` towards `o` (C's nextafter; NaN where
    /// either is).
    fn nextafter(self, o: Self) -> Self;
    /// `self · 2ᵒ`: exact scaling (C's ldexp, one rounding) for an integer `o`, else
    /// `self · exp2(o)`.
    fn ldexp(self, o: Self) -> Self;
    /// The forward kernel of `op` over a contiguous slice.
    fn unary_slice(op: UnaryOp, x: &[Self]) -> Vec<Self>;
    /// `op(x, c)` (or `op(c, x)`) over a slice, the number rounded to the dtype: the
    /// binary kernel of a tensor and a number.
    fn scalar_slice(op: BinaryOp, x: &[Self], c: f64, scalar_first: bool) -> Vec<Self>;
    /// Whether some forward kernels are `vmath`'s slice functions.
    const VMATH: bool;
}

macro_rules! float_impl {
    ($t:ty, $m:ident, $vmath:expr, $slice:expr, $scalar:expr, $($name:ident: $f:expr),* $(,)?) => {
        impl Float for $t {
            const VMATH: bool = $vmath;
            #[inline(always)]
            fn atan2(self, o: Self) -> Self {
                $m::atan21(self, o)
            }
            #[inline(always)]
            fn hypot(self, o: Self) -> Self {
                $m::hypot1(self, o)
            }
            #[inline(always)]
            fn logaddexp(self, o: Self) -> Self {
                $m::logaddexp1(self, o)
            }
            #[inline(always)]
            fn xlogy(self, o: Self) -> Self {
                $m::xlogy1(self, o)
            }
            #[inline(always)]
            fn fmax(self, o: Self) -> Self {
                if self.is_nan() || o > self { o } else { self }
            }
            #[inline(always)]
            fn fmin(self, o: Self) -> Self {
                if self.is_nan() || o < self { o } else { self }
            }
            #[inline(always)]
            fn copysign(self, o: Self) -> Self {
                <$t>::copysign(self, o)
            }
            #[inline(always)]
            fn logaddexp2(self, o: Self) -> Self {
                $m::logaddexp21(self, o)
            }
            #[inline(always)]
            fn heaviside(self, o: Self) -> Self {
                if self == 0.0 {
                    o
                } else if self > 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
            #[inline(always)]
            fn nextafter(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    // (the canonical NaN, as torch's vector loop gives; its scalar tail
                    // gives `self + o`, a NaN of either sign)
                    <$t>::NAN
                } else if self == o {
                    o
                } else if self < o {
                    self.next_up()
                } else {
                    self.next_down()
                }
            }
            fn ldexp(self, o: Self) -> Self {
                if o.is_finite() && o == o.round() {
                    // beyond ±4200 every finite value over- or underflows, whatever it is
                    super::special::scalbn(f64::from(self), o.clamp(-4200.0, 4200.0) as i32) as $t
                } else {
                    self * Float::exp2(o)
                }
            }
            fn unary_slice(op: UnaryOp, x: &[Self]) -> Vec<Self> {
                let f: fn(UnaryOp, &[$t]) -> Vec<$t> = $slice;
                f(op, x)
            }
            fn scalar_slice(op: BinaryOp, x: &[Self], c: f64, first: bool) -> Vec<Self> {
                let f: fn(BinaryOp, &[$t], f64, bool) -> Vec<$t> = $scalar;
                f(op, x, c, first)
            }
            $(#[inline(always)]
            fn $name(self) -> Self {
                let f: fn($t) -> $t = $f;
                f(self)
            })*
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn rsqrt(self) -> Self {
                1.0 / <$t>::sqrt(self)
            }
            #[inline(always)]
            fn recip(self) -> Self {
                1.0 / self
            }
            #[inline(always)]
            fn sign(self) -> Self {
                if self > 0.0 {
                    1.0
                } else if self < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            }
            #[inline(always)]
            fn relu(self) -> Self {
                if self < 0.0 { 0.0 } else { self }
            }
            // Branch-free and without libm (an x86-64 baseline build has no rounding
            // instruction, so `trunc` was a call per element, 2.5 ns): below 2^(digits-1)
            // adding and subtracting that power rounds to an integer, stepped back when
            // it rounded up; the sign is put back (trunc(-0.5) is -0.0); larger values,
            // infinities and NaN are already integers or stay as they are. Exact, so the
            // same values as libm's, and the loop vectorises.
            #[inline(always)]
            fn trunc(self) -> Self {
                const BIG: $t = (1u64 << (<$t>::MANTISSA_DIGITS - 1)) as $t;
                let a = self.abs();
                let r = (a + BIG) - BIG;
                let r = if r > a { r - 1.0 } else { r };
                if a < BIG { r.copysign(self) } else { self }
            }
            #[inline(always)]
            fn frac(self) -> Self {
                self - Float::trunc(self)
            }
            // floor and ceil from the exact trunc: one step down (up) where trunc went up
            // (down); -0, infinities and NaN come out as libm's.
            #[inline(always)]
            fn floor(self) -> Self {
                let t = Float::trunc(self);
                if t > self { t - 1.0 } else { t }
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                let t = Float::trunc(self);
                if t < self { t + 1.0 } else { t }
            }
            // Below 2^(digits-1), adding and subtracting that power rounds to an integer
            // in the default rounding mode, halves to even: nearbyint's values, exactly.
            #[inline(always)]
            fn round_even(self) -> Self {
                const BIG: $t = (1u64 << (<$t>::MANTISSA_DIGITS - 1)) as $t;
                let a = self.abs();
                if a < BIG { ((a + BIG) - BIG).copysign(self) } else { self }
            }
            #[inline(always)]
            fn deg2rad(self) -> Self {
                self * (std::f64::consts::PI / 180.0) as $t
            }
            #[inline(always)]
            fn rad2deg(self) -> Self {
                self * (180.0 / std::f64::consts::PI) as $t
            }
            #[inline(always)]
            fn sinc(self) -> Self {
                if self == 0.0 {
                    return 1.0;
                }
                let p = std::f64::consts::PI as $t * self;
                <$t>::sin(p) / p
            }
        }
    };
}
float_impl!(f32, v32, true, |op, x| match vmath_fn::<f32>(op) {
        Some(f) => map_slices(x, f),
        None => rounding_map(op, x).unwrap_or_else(|| float_map(op, x)),
    },
    scalar_map_f32,
    erf: v32::erf1, erfc: v32::erfc1, erfinv: v32::erfinv1,
    exp: v32::exp1, ln: v32::log1, ln_1p: v32::log1p1, exp_m1: v32::expm11,
    sin: v32::sin1, cos: v32::cos1, tan: v32::tan1, tanh: v32::tanh1, sigmoid: v32::sigmoid1,
    sinh: v32::sinh1, cosh: v32::cosh1, asin: v32::asin1, acos: v32::acos1, atan: v32::atan1,
    asinh: v32::asinh1, acosh: v32::acosh1, atanh: v32::atanh1,
    lgamma: v32::lgamma1, digamma: v32::digamma1,
    log2: v32::log21, log10: v32::log101, exp2: v32::exp21,
);
float_impl!(f64, v64, true, |op, x| match vmath_fn::<f64>(op) {
        Some(f) => map_slices(x, f),
        None => rounding_map(op, x)
            .or_else(|| gamma_map(op, x))
            .unwrap_or_else(|| float_map(op, x)),
    },
    |op, x, c, first| float_scalar_map(op, x, c, first),
    erf: v64::erf1, erfc: v64::erfc1, erfinv: v64::erfinv1,
    exp: v64::exp1, ln: v64::log1, ln_1p: v64::log1p1, exp_m1: v64::expm11,
    sin: v64::sin1, cos: v64::cos1, tan: v64::tan1, tanh: v64::tanh1, sigmoid: v64::sigmoid1,
    sinh: v64::sinh1, cosh: v64::cosh1, asin: v64::asin1, acos: v64::acos1, atan: v64::atan1,
    asinh: v64::asinh1, acosh: v64::acosh1, atanh: v64::atanh1,
    log2: v64::log21, log10: v64::log101, exp2: v64::exp21,
);

/// lgamma and digamma one element at a time (float64: libm's lgamma and Cephes' digamma,
/// tens of ns an element), split across the pool from `PAR_MIN_VMATH` elements as the
/// vmath kernels are rather than from the cheap maps' `PAR_MIN`. `None` for other ops.
fn gamma_map<T: Float>(op: UnaryOp, x: &[T]) -> Option<Vec<T>> {
    let f: fn(T) -> T = match op {
        UnaryOp::Lgamma => Float::lgamma,
        UnaryOp::Digamma => Float::digamma,
        _ => return None,
    };
    Some(fill_chunks_from(PAR_MIN_VMATH, x.len(), |start, out| {
        let end = start + out.len();
        for (o, &v) in out.iter_mut().zip(&x[start..end]) {
            o.write(f(v));
        }
    }))
}

/// trunc, frac, floor, ceil and round at the AVX2 / AVX-512 levels, where the rounding is one instruction
/// (`vroundps`): the same values as `Float::trunc`'s exact branch-free form, which the
/// baseline level (SSE2 has no rounding instruction) and the per-element paths use.
/// `None` for other ops and at the baseline level.
fn rounding_map<T: Float + RoundSlice>(op: UnaryOp, x: &[T]) -> Option<Vec<T>> {
    let mode = match op {
        UnaryOp::Trunc => Rounding::Trunc,
        UnaryOp::Frac => Rounding::Frac,
        UnaryOp::Floor => Rounding::Floor,
        UnaryOp::Ceil => Rounding::Ceil,
        UnaryOp::Round => Rounding::Even,
        _ => return None,
    };
    let level = vmath::level().min(vmath::detected());
    if level == vmath::Level::Baseline {
        return None;
    }
    Some(fill_chunks(x.len(), |start, out| {
        T::round_slice(level, mode, &x[start..start + out.len()], out)
    }))
}

/// What [`rounding_map`] computes.
#[derive(Clone, Copy)]
enum Rounding {
    Trunc,
    /// `x - trunc(x)`
    Frac,
    Floor,
    Ceil,
    /// to nearest, halves to even
    Even,
}

/// The per-level rounding loops of [`rounding_map`].
trait RoundSlice: Sized {
    fn round_slice(
        level: vmath::Level,
        mode: Rounding,
        x: &[Self],
        out: &mut [std::mem::MaybeUninit<Self>],
    );
}
macro_rules! round_slice {
    ($t:ty) => {
        impl RoundSlice for $t {
            fn round_slice(
                level: vmath::Level,
                mode: Rounding,
                x: &[Self],
                out: &mut [std::mem::MaybeUninit<Self>],
            ) {
                #[inline(always)]
                fn each(x: &[$t], out: &mut [std::mem::MaybeUninit<$t>], f: impl Fn($t) -> $t) {
                    for (o, &v) in out.iter_mut().zip(x) {
                        o.write(f(v));
                    }
                }
                // With SSE4.1 or later each is one rounding instruction (`vroundps`).
                #[inline(always)]
                fn body(mode: Rounding, x: &[$t], out: &mut [std::mem::MaybeUninit<$t>]) {
                    match mode {
                        Rounding::Trunc => each(x, out, |v| v.trunc()),
                        Rounding::Frac => each(x, out, |v| v - v.trunc()),
                        Rounding::Floor => each(x, out, |v| v.floor()),
                        Rounding::Ceil => each(x, out, |v| v.ceil()),
                        Rounding::Even => each(x, out, |v| v.round_ties_even()),
                    }
                }
                #[cfg(target_arch = "x86_64")]
                {
                    #[target_feature(enable = "avx512f")]
                    fn wide(mode: Rounding, x: &[$t], out: &mut [std::mem::MaybeUninit<$t>]) {
                        body(mode, x, out)
                    }
                    #[target_feature(enable = "avx2")]
                    fn mid(mode: Rounding, x: &[$t], out: &mut [std::mem::MaybeUninit<$t>]) {
                        body(mode, x, out)
                    }
                    match level.min(vmath::detected()) {
                        // SAFETY: the CPU has AVX-512F (the level is capped by what it has).
                        vmath::Level::Avx512 => return unsafe { wide(mode, x, out) },
                        // SAFETY: the CPU has AVX2 (as above).
                        vmath::Level::Avx2 => return unsafe { mid(mode, x, out) },
                        vmath::Level::Baseline => {}
                    }
                }
                let _ = level;
                match mode {
                    Rounding::Trunc => each(x, out, Float::trunc),
                    Rounding::Frac => each(x, out, Float::frac),
                    Rounding::Floor => each(x, out, Float::floor),
                    Rounding::Ceil => each(x, out, Float::ceil),
                    Rounding::Even => each(x, out, Float::round_even),
                }
            }
        }
    };
}
round_slice!(f32);
round_slice!(f64);

/// One element: the table's `df` over single elements is the fused backward kernel, one
/// pass over `g` and the saved value. Each step rounds as the tensor op's kernel does
/// (`pow_s` as `float_scalar_map`'s powers). Never fails.
#[derive(Clone, Copy)]
struct E<T>(T);

impl<T: Float> Calc for E<T> {
    fn mul(&self, o: &Self) -> Result<Self> {
        Ok(E(self.0 * o.0))
    }
    fn div(&self, o: &Self) -> Result<Self> {
        Ok(E(self.0.div(o.0)))
    }
    fn sub(&self, o: &Self) -> Result<Self> {
        Ok(E(self.0.sub(o.0)))
    }
    fn neg(&self) -> Result<Self> {
        Ok(E(-self.0))
    }
    fn add_s(&self, c: f64) -> Result<Self> {
        Ok(E(self.0 + T::from_f64(c)))
    }
    fn mul_s(&self, c: f64) -> Result<Self> {
        Ok(E(self.0 * T::from_f64(c)))
    }
    fn rsub_s(&self, c: f64) -> Result<Self> {
        Ok(E(T::from_f64(c) - self.0))
    }
    fn pow_s(&self, c: f64) -> Result<Self> {
        let x = self.0;
        Ok(E(match c {
            1.0 => x,
            2.0 => x * x,
            3.0 => x * x * x,
            -2.0 => T::from_f64(1.0).div(x * x),
            _ => x.pow(T::from_f64(c)),
        }))
    }
    fn sign(&self) -> Result<Self> {
        Ok(E(Float::sign(self.0)))
    }
    fn sin(&self) -> Result<Self> {
        Ok(E(Float::sin(self.0)))
    }
    fn cos(&self) -> Result<Self> {
        Ok(E(Float::cos(self.0)))
    }
    fn sinh(&self) -> Result<Self> {
        Ok(E(Float::sinh(self.0)))
    }
    fn cosh(&self) -> Result<Self> {
        Ok(E(Float::cosh(self.0)))
    }
    fn exp(&self) -> Result<Self> {
        Ok(E(Float::exp(self.0)))
    }
    fn rsqrt(&self) -> Result<Self> {
        Ok(E(Float::rsqrt(self.0)))
    }
    fn erfinv(&self) -> Result<Self> {
        Ok(E(Float::erfinv(self.0)))
    }
    fn digamma(&self) -> Result<Self> {
        Ok(E(Float::digamma(self.0)))
    }
    fn polygamma(&self, n: u32) -> Result<Self> {
        Ok(E(Float::polygamma(self.0, n)))
    }
    fn zeros_like(&self) -> Result<Self> {
        Ok(E(T::from_f64(0.0)))
    }
    fn unchanged(&self) -> Result<Self> {
        Ok(*self)
    }
    fn threshold_backward(&self, y: &Self) -> Result<Self> {
        Ok(if y.0 <= T::from_f64(0.0) {
            E(T::from_f64(0.0))
        } else {
            *self
        })
    }
    fn tanh_backward(&self, y: &Self) -> Result<Self> {
        Ok(E(self.0 * (T::from_f64(1.0) - y.0 * y.0)))
    }
    fn zero_where_zero(&self, m: &Self) -> Result<Self> {
        Ok(if m.0 == T::from_f64(0.0) {
            E(T::from_f64(0.0))
        } else {
            *self
        })
    }
}

/// Whether a derivative calls a function that `vmath` computes (sin, cos, exp, sinh,
/// cosh, digamma): per element, those are slow (no vector code), so such a `df` runs over
/// [`Block`]s, which call the slice kernels. Found by evaluating `df` on this type.
#[derive(Clone, Copy)]
struct Probe(bool);

impl Probe {
    fn with(&self, o: &Self) -> Result<Self> {
        Ok(Probe(self.0 || o.0))
    }
}

impl Calc for Probe {
    fn mul(&self, o: &Self) -> Result<Self> {
        self.with(o)
    }
    fn div(&self, o: &Self) -> Result<Self> {
        self.with(o)
    }
    fn sub(&self, o: &Self) -> Result<Self> {
        self.with(o)
    }
    fn neg(&self) -> Result<Self> {
        Ok(*self)
    }
    fn add_s(&self, _: f64) -> Result<Self> {
        Ok(*self)
    }
    fn mul_s(&self, _: f64) -> Result<Self> {
        Ok(*self)
    }
    fn rsub_s(&self, _: f64) -> Result<Self> {
        Ok(*self)
    }
    fn pow_s(&self, _: f64) -> Result<Self> {
        Ok(*self)
    }
    fn sign(&self) -> Result<Self> {
        Ok(*self)
    }
    fn sin(&self) -> Result<Self> {
        Ok(Probe(true))
    }
    fn cos(&self) -> Result<Self> {
        Ok(Probe(true))
    }
    fn sinh(&self) -> Result<Self> {
        Ok(Probe(true))
    }
    fn cosh(&self) -> Result<Self> {
        Ok(Probe(true))
    }
    fn exp(&self) -> Result<Self> {
        Ok(Probe(true))
    }
    fn rsqrt(&self) -> Result<Self> {
        Ok(*self)
    }
    fn erfinv(&self) -> Result<Self> {
        Ok(*self)
    }
    fn digamma(&self) -> Result<Self> {
        Ok(Probe(true))
    }
    fn polygamma(&self, _: u32) -> Result<Self> {
        Ok(*self)
    }
    fn zeros_like(&self) -> Result<Self> {
        Ok(*self)
    }
    fn unchanged(&self) -> Result<Self> {
        Ok(*self)
    }
    fn threshold_backward(&self, y: &Self) -> Result<Self> {
        self.with(y)
    }
    fn tanh_backward(&self, y: &Self) -> Result<Self> {
        self.with(y)
    }
    fn zero_where_zero(&self, m: &Self) -> Result<Self> {
        self.with(m)
    }
}

/// A block of contiguous elements: `df` over blocks, each step one loop over a block
/// that stays in L1 (the same binary kernels the tensor ops run), and sin/cos/exp the
/// forward slice kernels, so every element takes the roundings of the recorded formula.
struct Block<'a, T: Clone>(Cow<'a, [T]>);

impl<T: Float> Block<'_, T> {
    fn zip(&self, o: &Self, op: BinaryOp) -> Result<Self> {
        let l = Layout::contiguous(&[self.0.len()]);
        Ok(Block(Cow::Owned(float_zip(op, &self.0, &l, &o.0, &l))))
    }
    fn scalar(&self, op: BinaryOp, c: f64, scalar_first: bool) -> Result<Self> {
        Ok(Block(Cow::Owned(T::scalar_slice(
            op,
            &self.0,
            c,
            scalar_first,
        ))))
    }
    fn each(&self, f: impl Fn(T) -> Result<T>) -> Result<Self> {
        let v: Result<Vec<T>> = self.0.iter().map(|&a| f(a)).collect();
        Ok(Block(Cow::Owned(v?)))
    }
    fn each2(&self, o: &Self, f: impl Fn(T, T) -> Result<T>) -> Result<Self> {
        let v: Result<Vec<T>> = self
            .0
            .iter()
            .zip(o.0.iter())
            .map(|(&a, &b)| f(a, b))
            .collect();
        Ok(Block(Cow::Owned(v?)))
    }
    fn unary(&self, op: UnaryOp) -> Result<Self> {
        Ok(Block(Cow::Owned(T::unary_slice(op, &self.0))))
    }
}

impl<T: Float> Calc for Block<'_, T> {
    fn mul(&self, o: &Self) -> Result<Self> {
        self.zip(o, BinaryOp::Mul)
    }
    fn div(&self, o: &Self) -> Result<Self> {
        self.zip(o, BinaryOp::Div)
    }
    fn sub(&self, o: &Self) -> Result<Self> {
        self.zip(o, BinaryOp::Sub)
    }
    fn neg(&self) -> Result<Self> {
        self.unary(UnaryOp::Neg)
    }
    fn add_s(&self, c: f64) -> Result<Self> {
        self.scalar(BinaryOp::Add, c, false)
    }
    fn mul_s(&self, c: f64) -> Result<Self> {
        self.scalar(BinaryOp::Mul, c, false)
    }
    fn rsub_s(&self, c: f64) -> Result<Self> {
        self.scalar(BinaryOp::Sub, c, true)
    }
    fn pow_s(&self, c: f64) -> Result<Self> {
        self.scalar(BinaryOp::Pow, c, false)
    }
    fn sign(&self) -> Result<Self> {
        self.unary(UnaryOp::Sign)
    }
    fn sin(&self) -> Result<Self> {
        self.unary(UnaryOp::Sin)
    }
    fn cos(&self) -> Result<Self> {
        self.unary(UnaryOp::Cos)
    }
    fn sinh(&self) -> Result<Self> {
        self.unary(UnaryOp::Sinh)
    }
    fn cosh(&self) -> Result<Self> {
        self.unary(UnaryOp::Cosh)
    }
    fn exp(&self) -> Result<Self> {
        self.unary(UnaryOp::Exp)
    }
    fn rsqrt(&self) -> Result<Self> {
        self.unary(UnaryOp::Rsqrt)
    }
    fn erfinv(&self) -> Result<Self> {
        self.unary(UnaryOp::Erfinv)
    }
    fn digamma(&self) -> Result<Self> {
        self.unary(UnaryOp::Digamma)
    }
    fn polygamma(&self, n: u32) -> Result<Self> {
        self.each(|a| Ok(a.polygamma(n)))
    }
    fn zeros_like(&self) -> Result<Self> {
        self.each(|a| Ok(E(a).zeros_like()?.0))
    }
    fn unchanged(&self) -> Result<Self> {
        Ok(Block(self.0.clone()))
    }
    fn threshold_backward(&self, y: &Self) -> Result<Self> {
        self.each2(y, |g, y| Ok(E(g).threshold_backward(&E(y))?.0))
    }
    fn tanh_backward(&self, y: &Self) -> Result<Self> {
        self.each2(y, |g, y| Ok(E(g).tanh_backward(&E(y))?.0))
    }
    fn zero_where_zero(&self, m: &Self) -> Result<Self> {
        self.each2(m, |g, m| Ok(E(g).zero_where_zero(&E(m))?.0))
    }
}

/// Elements per block (16 KiB of float64: the operands and a few temporaries stay in L1).
const BLOCK: usize = 2048;

/// `df(g, s)` block by block into a new vector (in parallel chunks for large inputs).
fn fused_blocks<T: Float>(
    g: &[T],
    s: &[T],
    df: impl for<'a> Fn(&Block<'a, T>, &Block<'a, T>) -> Result<Block<'a, T>> + Sync + Send,
) -> Vec<T> {
    fill_chunks(g.len(), |start, out| {
        for (i, o) in out.chunks_mut(BLOCK).enumerate() {
            let a = start + i * BLOCK;
            let b = a + o.len();
            let r = df(
                &Block(Cow::Borrowed(&g[a..b])),
                &Block(Cow::Borrowed(&s[a..b])),
            );
            // (a block never fails; should one, its elements stay g, never uninitialised)
            let r = r.map_or(Cow::Borrowed(&g[a..b]), |r| r.0);
            for (o, &v) in o.iter_mut().zip(r.iter()) {
                o.write(v);
            }
        }
    })
}

/// `df(g, s)` element by element, in one pass.
fn fused_elements<T: Float>(
    g: &[T],
    lg: &Layout,
    s: &[T],
    ls: &Layout,
    df: impl Fn(&E<T>, &E<T>) -> Result<E<T>> + Sync + Send,
) -> Vec<T> {
    zip(g, lg, s, ls, move |g: T, s: T| {
        df(&E(g), &E(s)).map_or(g, |r| r.0)
    })
}

/// The element types with `vmath` slice functions.
pub(super) trait VmathSlices: Sized + 'static {
    fn slice_fn(op: UnaryOp) -> Option<vmath::SliceFn<Self>>;
}

macro_rules! vmath_slices {
    ($t:ty, $m:ident $(, $extra:ident => $f:ident)*) => {
        impl VmathSlices for $t {
            fn slice_fn(op: UnaryOp) -> Option<vmath::SliceFn<$t>> {
                Some(match op {
                    $(UnaryOp::$extra => $m::$f,)*
                    UnaryOp::Exp => $m::exp,
                    UnaryOp::Expm1 => $m::expm1,
                    UnaryOp::Log => $m::log,
                    UnaryOp::Log1p => $m::log1p,
                    UnaryOp::Tanh => $m::tanh,
                    UnaryOp::Sigmoid => $m::sigmoid,
                    UnaryOp::Sin => $m::sin,
                    UnaryOp::Cos => $m::cos,
                    UnaryOp::Tan => $m::tan,
                    UnaryOp::Atan => $m::atan,
                    UnaryOp::Asin => $m::asin,
                    UnaryOp::Acos => $m::acos,
                    UnaryOp::Sinh => $m::sinh,
                    UnaryOp::Cosh => $m::cosh,
                    UnaryOp::Asinh => $m::asinh,
                    UnaryOp::Acosh => $m::acosh,
                    UnaryOp::Atanh => $m::atanh,
                    UnaryOp::Sqrt => $m::sqrt,
                    UnaryOp::Rsqrt => $m::rsqrt,
                    _ => return None,
                })
            }
        }
    };
}
vmath_slices!(f32, v32, Erf => erf, Erfc => erfc, Erfinv => erfinv, Lgamma => lgamma, Digamma => digamma,
    Exp2 => exp2, Log2 => log2, Log10 => log10);
vmath_slices!(f64, v64, Erf => erf, Erfc => erfc, Erfinv => erfinv, Exp2 => exp2, Log2 => log2, Log10 => log10);

/// The `vmath` slice function for the op, where there is one.
fn vmath_fn<T: VmathSlices>(op: UnaryOp) -> Option<vmath::SliceFn<T>> {
    T::slice_fn(op)
}

/// A slice function over `src` into a new vector, in fixed-size chunks on the pool for
/// large inputs (each element's value does not depend on the split).
fn map_slices<T: Copy + Send + Sync>(src: &[T], f: vmath::SliceFn<T>) -> Vec<T> {
    fill_chunks_from(PAR_MIN_VMATH, src.len(), |start, out| {
        let end = start + out.len();
        f(&src[start..end], out)
    })
}

/// `op(x, s)` (or `op(s, x)`) for a float32 slice and a number rounded to float32, as
/// `float_scalar_map`, with powers other than the small integer ones (products there)
/// from vmath's slice kernel, on the pool for large inputs: the bits of `Num::pow`.
pub(super) fn scalar_map_f32(op: BinaryOp, v: &[f32], s: f64, scalar_first: bool) -> Vec<f32> {
    let s = s as f32;
    if op == BinaryOp::Pow && !scalar_first {
        if [1.0, 2.0, 3.0, -2.0].contains(&s) {
            return float_scalar_map(op, v, s, scalar_first);
        }
    } else if op == BinaryOp::Pow {
        return super::binary::base_pow_f32(s, v);
    } else {
        // remainder, fmod, floor division: the two-input kernels
        return super::binary::vmath_scalar(op, v, s, scalar_first)
            .unwrap_or_else(|| float_scalar_map(op, v, s, scalar_first));
    }
    fill_chunks_from(PAR_MIN_VMATH, v.len(), |start, out| {
        vmath::float32::powf(&v[start..start + out.len()], s, out)
    })
}

macro_rules! kernels {
    ($($name:ident $name_:ident $V:ident $node:literal {
        ints: $ints:ident $(($($iargs:tt)*))?, bool: $bool:expr,
        f: |$x:ident| $f:expr,
        df($saves:ident): |$g:ident $(, $s:ident)?| $df:expr,
        inplace: $inplace:ident $(($inode:literal))?,
        doc: $doc:literal,
    })*) => {
        /// `f(x)` for every element of a float slice: one loop per op, with the op a
        /// constant in it (the branch-free ones vectorise).
        fn float_map<T: Float>(op: UnaryOp, x: &[T]) -> Vec<T> {
            match op {
                $(UnaryOp::$V => map(x, move |$x: T| $f),)*
            }
        }

        /// The integer map of an op whose row keeps int64 inputs (the row's closure
        /// inlined into its own loop: a function pointer costs a call per element).
        fn int_map(op: UnaryOp, x: &[i64]) -> Option<Vec<i64>> {
            match op {
                $(UnaryOp::$V => int_kernel!(x; $ints $(($($iargs)*))?),)*
            }
        }

        /// `df` over `g` and the saved value `s` (None for rows that save nothing).
        fn fused<T: Float>(op: UnaryOp, g: &[T], lg: &Layout, s: &[T], ls: &Layout) -> Option<Vec<T>> {
            match op {
                $(UnaryOp::$V => fused_row!($saves, g, lg, s, ls, |$g $(, $s)?| $df),)*
            }
        }
    };
}

/// The int64 kernel of a row's `ints` column.
macro_rules! int_kernel {
    ($x:ident; promote) => {
        None
    };
    ($x:ident; refuse($k:literal)) => {
        None
    };
    ($x:ident; keep(|$a:ident| $e:expr)) => {
        Some(map_wide($x, |$a: i64| $e))
    };
}

/// The fused kernel of a row: `df` over `g` and the saved value (element by element, or
/// over blocks where float32 would call `vmath` per element), or nothing for rows that
/// save nothing (their recorded backward is a single op already).
macro_rules! fused_row {
    (none, $g:ident, $lg:ident, $s:ident, $ls:ident, |$gv:ident| $df:expr) => {{
        let _ = ($g, $lg, $s, $ls);
        None
    }};
    ($saves:ident, $g:ident, $lg:ident, $s:ident, $ls:ident, |$gv:ident, $sv:ident| $df:expr) => {{
        let vmath = T::VMATH && {
            let probe = |$gv: &Probe, $sv: &Probe| -> Result<Probe> { $df };
            probe(&Probe(false), &Probe(false)).is_ok_and(|p| p.0)
        };
        Some(if vmath {
            let (gc, sc) = (contiguous($g, $lg), contiguous($s, $ls));
            fused_blocks(&gc, &sc, |$gv, $sv| $df)
        } else {
            fused_elements($g, $lg, $s, $ls, |$gv, $sv| $df)
        })
    }};
}

crate::ops::table::unary_op_table!(kernels);

/// Unary map producing a contiguous buffer. Float ops require a float buffer; int64
/// buffers take the ops whose row keeps them, bool buffers the identity (sign); the op
/// layer promotes or refuses everything else first.
pub fn unary(op: UnaryOp, buf: &Buffer, layout: &Layout) -> Buffer {
    match buf {
        Buffer::F32(v) => Buffer::F32(f32::unary_slice(op, &contiguous(v, layout)).into()),
        Buffer::F64(v) => Buffer::F64(f64::unary_slice(op, &contiguous(v, layout)).into()),
        Buffer::I64(v) => {
            let x = contiguous(v, layout);
            match int_map(op, &x) {
                Some(y) => Buffer::I64(y.into()),
                None => Buffer::I64(x.into_owned().into()),
            }
        }
        Buffer::Bool(v) => Buffer::Bool(contiguous(v, layout).into_owned().into()),
        Buffer::Cuda(_) => crate::storage::not_host(),
    }
}

/// `polygamma(n, x)` of a float buffer (the op layer promotes other dtypes first).
pub fn polygamma(n: u32, buf: &Buffer, layout: &Layout) -> Buffer {
    match buf {
        Buffer::F32(v) => Buffer::F32(map(&contiguous(v, layout), |x: f32| x.polygamma(n)).into()),
        Buffer::F64(v) => Buffer::F64(map(&contiguous(v, layout), |x: f64| x.polygamma(n)).into()),
        other => other.clone(),
    }
}

/// The Bessel function `op` of a float buffer (other dtypes: unchanged; the op layer
/// promotes first).
pub fn bessel(op: super::bessel::Bessel, buf: &Buffer, layout: &Layout) -> Buffer {
    match buf {
        Buffer::F32(v) => Buffer::F32(bessel_map(op, &contiguous(v, layout)).into()),
        Buffer::F64(v) => Buffer::F64(bessel_map(op, &contiguous(v, layout)).into()),
        other => other.clone(),
    }
}

/// [`bessel`]'s loop, one per function, built with AVX2 and FMA where the CPU has them
/// (`wide::Kernel`: the Chebyshev series' fused multiply-adds are instructions there, the
/// same bits as the software `mul_add` of the baseline build).
fn bessel_map<T>(op: super::bessel::Bessel, x: &[T]) -> Vec<T>
where
    T: super::bessel::SpecialFloat + Send + Sync,
{
    use super::bessel::{Bessel, bessel as f};
    use super::wide::{Kernel, wide_kernel};
    use std::mem::MaybeUninit;
    struct Loop<'a, T> {
        op: Bessel,
        x: &'a [T],
        out: &'a mut [MaybeUninit<T>],
    }
    impl<T: super::bessel::SpecialFloat> Kernel for Loop<'_, T> {
        type Out = ();
        #[inline(always)]
        fn run(self) {
            // (no closures: one not inlined stays in the baseline build, its mul_add
            // a call to libm's fmaf)
            let Loop { op, x, out } = self;
            macro_rules! each {
                ($op:expr) => {
                    for (o, &v) in out.iter_mut().zip(x) {
                        o.write(f($op, v));
                    }
                };
            }
            match op {
                Bessel::I0 => each!(Bessel::I0),
                Bessel::I0e => each!(Bessel::I0e),
                Bessel::I1 => each!(Bessel::I1),
                Bessel::I1e => each!(Bessel::I1e),
            }
        }
    }
    fill_chunks_from(PAR_MIN_VMATH, x.len(), |start, out| {
        let end = start + out.len();
        wide_kernel(Loop {
            op,
            x: &x[start..end],
            out,
        })
    })
}

/// igamma(a, x), or igammac where `upper`, of two float buffers of one dtype laid out
/// over the output's shape (other dtypes: `a` unchanged; the op layer checks first).
pub fn igamma(upper: bool, a: &Buffer, la: &Layout, x: &Buffer, lx: &Layout) -> Buffer {
    use super::bessel::{igamma as p, igammac as q};
    fn both<T: super::bessel::SpecialFloat + Send + Sync>(upper: bool, a: &[T], x: &[T]) -> Vec<T> {
        let pairs: Vec<(T, T)> = a.iter().copied().zip(x.iter().copied()).collect();
        map(&pairs, |(a, x)| if upper { q(a, x) } else { p(a, x) })
    }
    match (a, x) {
        (Buffer::F32(va), Buffer::F32(vx)) => {
            Buffer::F32(both(upper, &contiguous(va, la), &contiguous(vx, lx)).into())
        }
        (Buffer::F64(va), Buffer::F64(vx)) => {
            Buffer::F64(both(upper, &contiguous(va, la), &contiguous(vx, lx)).into())
        }
        (other, _) => other.clone(),
    }
}

/// `!x` of a bool buffer (the op layer converts other dtypes first).
pub fn logical_not(buf: &Buffer, layout: &Layout) -> Buffer {
    match buf {
        Buffer::Bool(v) => Buffer::Bool(map(&contiguous(v, layout), |a: bool| !a).into()),
        other => other.clone(),
    }
}

/// The gradient of a unary op, `g·f'(x)`, in one pass instead of the one to four tensor
/// ops of the recorded formula: the table's `df` evaluated per element, with the same
/// roundings, so the two paths agree bit for bit. `s` is what the op saved (the input or
/// the output) with `g`'s shape and dtype. `None` where it does not apply: dtypes that
/// differ or are not float, shapes that differ, rows that save nothing.
pub fn unary_backward(
    op: UnaryOp,
    g: &Buffer,
    lg: &Layout,
    s: &Buffer,
    ls: &Layout,
) -> Option<Buffer> {
    if lg.shape != ls.shape {
        return None;
    }
    match (g, s) {
        (Buffer::F32(gv), Buffer::F32(sv)) => {
            fused(op, gv, lg, sv, ls).map(|v| Buffer::F32(v.into()))
        }
        (Buffer::F64(gv), Buffer::F64(sv)) => {
            fused(op, gv, lg, sv, ls).map(|v| Buffer::F64(v.into()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_slices_are_the_branch_free_forms_at_every_level() {
        let mut xs: Vec<f64> = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            2.5,
            -2.5,
            4503599627370495.5,
            8388607.5,
            -8388607.5,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e-40,
        ];
        xs.extend((0..5000).map(|i| (i as f64 - 2500.0) * 0.0173));
        xs.extend([
            1.5,
            -1.5,
            3.5,
            -3.5,
            0.49999999999999994,
            4503599627370497.0,
            8388609.0,
        ]);
        let xf: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
        // each mode's scalar form (exact, branch-free where SSE2 has no rounding instruction)
        fn scalar<T: Float>(mode: Rounding, x: T) -> T {
            match mode {
                Rounding::Trunc => Float::trunc(x),
                Rounding::Frac => Float::frac(x),
                Rounding::Floor => Float::floor(x),
                Rounding::Ceil => Float::ceil(x),
                Rounding::Even => Float::round_even(x),
            }
        }
        let modes = [
            Rounding::Trunc,
            Rounding::Frac,
            Rounding::Floor,
            Rounding::Ceil,
            Rounding::Even,
        ];
        for level in vmath::supported() {
            for mode in modes {
                let mut out = vec![std::mem::MaybeUninit::uninit(); xs.len()];
                f64::round_slice(level, mode, &xs, &mut out);
                for (o, &x) in out.iter().zip(&xs) {
                    // SAFETY: round_slice initialises every element.
                    let got = unsafe { o.assume_init() };
                    let want = scalar(mode, x);
                    assert!(
                        got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                        "{x} {level:?}"
                    );
                }
                let mut out = vec![std::mem::MaybeUninit::uninit(); xf.len()];
                f32::round_slice(level, mode, &xf, &mut out);
                for (o, &x) in out.iter().zip(&xf) {
                    // SAFETY: as above.
                    let got = unsafe { o.assume_init() };
                    let want = scalar(mode, x);
                    assert!(
                        got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                        "{x} {level:?}"
                    );
                }
            }
        }
        // and the scalar forms are libm's
        for &x in &xs {
            for (got, want) in [
                (Float::floor(x), x.floor()),
                (Float::ceil(x), x.ceil()),
                (Float::round_even(x), x.round_ties_even()),
            ] {
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "{x}"
                );
            }
        }
    }
}
