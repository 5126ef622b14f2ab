//! The float32 functions. exp, expm1, log, log1p, tanh, sigmoid, atanh (`exp_log`) and sin,
//! cos, tan, atan, asin, acos (`trig`) are evaluated in float32, with the few steps
//! that need more than float32's precision carried as unevaluated sums of two floats;
//! sinh, cosh, asinh and acosh, which torch evaluates one
//! element at a time or in float32 kernels no faster than these, are the float64
//! kernels' formulas rounded once to float32 (within 0.5 ulp plus 2^-29). sqrt and
//! rsqrt are IEEE operations (correctly rounded, and `1 / sqrt` rounded twice, as
//! torch's rsqrt).
//!
//! Functions of two slices (`binary`, `FUNCS2`): atan2 in float32, hypot, logaddexp,
//! logaddexp2 and pow through float64 (`via64`), fmod, remainder and floor division exact.
//!
//! Each function's per-element form (`exp1`, ...) gives the slice function's bits; see
//! the parent module for the guarantees and docs/kernels.md for the designs.

#![allow(clippy::excessive_precision)]

mod binary;
mod exp_log;
mod gamma;
mod special;
mod trig;
mod via64;

use super::float64 as f64k;
use super::{Func, Func2, scalar_fns, scalar_fns2, slice_fns, slice_fns2};
use binary::*;
use exp_log::*;
use gamma::{digamma_f32, digamma_fast, lgamma_f32, lgamma_fast};
use special::{
    ERFC_FAST, ERFINV_FAST, erf_f32, erfc_f32, erfc_fast, erfinv_f32, erfinv_fast, gelu_f32,
    pow_f32,
};
pub use special::{pow1, powb, powf};
use trig::*;

/// 1.5 * 2^23: adding it rounds a float32 of magnitude below 2^22 to an integer, which
/// is then read from the low bits (no float-to-int conversion).
const MAGIC: f32 = 12_582_912.0;

/// a + b = s + e exactly, where |a| >= |b| (or a = 0).
#[inline(always)]
fn fast_two_sum(a: f32, b: f32) -> (f32, f32) {
    let s = a + b;
    (s, (a - s) + b)
}

/// a + b = s + e exactly, whatever their magnitudes.
#[inline(always)]
fn two_sum(a: f32, b: f32) -> (f32, f32) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// 2^k for an integer k in [-126, 127], from its exponent bits.
#[inline(always)]
fn pow2i(k: i32) -> f32 {
    f32::from_bits((k.wrapping_add(127) as u32) << 23)
}

/// The integer n that `MAGIC`-rounding put into `t = n + MAGIC`.
#[inline(always)]
fn magic_int(t: f32) -> i32 {
    (t.to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32)
}

/// Horner's rule, lowest coefficient first in `c`.
#[inline(always)]
fn poly<const N: usize>(x: f32, c: [f32; N]) -> f32 {
    let mut p = c[N - 1];
    let mut i = N - 1;
    while i > 0 {
        i -= 1;
        p = p.mul_add(x, c[i]);
    }
    p
}

/// A multiply-add rounded once, in float32 or float64 (the Estrin evaluation's).
trait Fma: Copy + std::ops::Mul<Output = Self> {
    fn fma(self, a: Self, b: Self) -> Self;
}
impl Fma for f32 {
    #[inline(always)]
    fn fma(self, a: Self, b: Self) -> Self {
        self.mul_add(a, b)
    }
}
impl Fma for f64 {
    #[inline(always)]
    fn fma(self, a: Self, b: Self) -> Self {
        self.mul_add(a, b)
    }
}

/// A polynomial by Estrin's scheme, lowest coefficient first: pairs `c[2i] + c[2i+1] x`,
/// then pairs of those with x^2, and so on: log2(N) dependent steps where Horner's rule
/// takes N - 1 (a loop whose body is one long Horner chain runs at the chain's latency,
/// not at the FMA units' throughput: gelu's degree-14 tail).
#[inline(always)]
fn poly_estrin<T: Fma, const N: usize>(x: T, c: [T; N]) -> T {
    let mut v = c;
    let mut n = N;
    let mut p = x;
    while n > 1 {
        let half = n / 2;
        for i in 0..half {
            v[i] = v[2 * i + 1].fma(p, v[2 * i]);
        }
        if n % 2 == 1 {
            v[half] = v[n - 1];
        }
        n = half + n % 2;
        p = p * p;
    }
    v[0]
}

/// (nh + nl)/(dh + dl) for two-float sums with |nl| <= ulp(nh), |dl| <= ulp(dh): one
/// division, then one correction step (`q0 + (n - q0 d)/d`, the residual exact in an
/// fma), so the result rounds about once.
#[inline(always)]
fn div_pairs(nh: f32, nl: f32, dh: f32, dl: f32) -> f32 {
    let inv = 1.0 / dh;
    let q0 = nh * inv;
    let res = (-q0).mul_add(dl, nl + (-q0).mul_add(dh, nh));
    res.mul_add(inv, q0)
}

/// About 1/v (relative error below 2^-8) for a positive normal v, from its bits and
/// one Newton step: enough for corrections of a few ulps.
#[inline(always)]
fn recip_approx(v: f32) -> f32 {
    let i = f32::from_bits(0x7EF3_11C3_u32.wrapping_sub(v.to_bits()));
    i * (2.0 - v * i)
}

/// Defines float32 functions as the float64 kernel's formula on the float32 input,
/// rounded once (within 0.5 ulp plus 2^-29).
macro_rules! via_f64 {
    ($($name:ident = $f:path;)*) => {$(
        #[inline(always)]
        fn $name(x: f32) -> f32 {
            $f(f64::from(x)) as f32
        }
    )*};
}

via_f64! {
    sinh_f32 = f64k::sinh_f64;
    cosh_f32 = f64k::cosh_f64;
    asinh_f32 = f64k::asinh_f64;
    acosh_f32 = f64k::acosh_f64;
}

#[inline(always)]
fn sqrt_f32(x: f32) -> f32 {
    x.sqrt()
}

#[inline(always)]
fn rsqrt_f32(x: f32) -> f32 {
    1.0 / x.sqrt()
}

slice_fns! { f32;
    exp: |x| exp_full(x), fast(|x| x.abs() <= EXP_FAST => exp_fast(x));
    expm1: |x| expm1_full(x);
    log: |x| log_full(x), fast(|x| (f32::MIN_POSITIVE..=f32::MAX).contains(&x) => log_fast(x));
    log1p: |x| log1p_full(x);
    tanh: |x| tanh_full(x), fast(|x| x.abs() <= TANH_FAST => tanh_fast(x));
    sigmoid: |x| sigmoid_full(x), fast(|x| x.abs() <= EXP_FAST => sigmoid_fast(x));
    sin: |x| sincos_f32(x, false), fixup(TRIG_MAX, |x| trig_fix(x, f64::sin));
    cos: |x| sincos_f32(x, true), fixup(TRIG_MAX, |x| trig_fix(x, f64::cos));
    tan: |x| tan_f32(x), fixup(TRIG_MAX, |x| trig_fix(x, f64::tan));
    atan: |x| atan_f32(x);
    asin: |x| asin_f32(x);
    acos: |x| acos_f32(x);
    sinh: |x| sinh_f32(x);
    cosh: |x| cosh_f32(x);
    asinh: |x| asinh_f32(x);
    acosh: |x| acosh_f32(x);
    atanh: |x| atanh_f32(x);
    sqrt: |x| sqrt_f32(x);
    rsqrt: |x| rsqrt_f32(x);
    erf: |x| erf_f32(x);
    gelu: |x| gelu_f32(x);
    erfc: |x| erfc_f32(x), fast(|x| x.abs() <= ERFC_FAST => erfc_fast(x));
    erfinv: |x| erfinv_f32(x), fast(|x| x.abs() <= ERFINV_FAST => erfinv_fast(x));
    lgamma: |x| lgamma_f32(x), fast(|x| x > 0.0 && x < 8.0 => lgamma_fast(x));
    digamma: |x| digamma_f32(x), fast(|x| x > 0.0 && x < 8.0 => digamma_fast(x));
    exp2: |x| exp2_full(x), fast(|x| x.abs() <= EXP2_FAST => exp2_fast(x));
    log2: |x| log2_full(x);
    log10: |x| log10_full(x);
}

scalar_fns! { f32;
    /// e^x of one element (the bits of [`exp()`]; likewise below).
    exp1 = exp_full;
    /// e^x - 1 of one element.
    expm11 = expm1_full;
    /// ln x of one element.
    log1 = log_full;
    /// ln(1 + x) of one element.
    log1p1 = log1p_full;
    /// tanh x of one element.
    tanh1 = tanh_full;
    /// 1/(1 + e^-x) of one element.
    sigmoid1 = sigmoid_full;
    /// sin x of one element.
    sin1 = sin_one;
    /// cos x of one element.
    cos1 = cos_one;
    /// tan x of one element.
    tan1 = tan_one;
    /// atan x of one element.
    atan1 = atan_f32;
    /// asin x of one element.
    asin1 = asin_f32;
    /// acos x of one element.
    acos1 = acos_f32;
    /// sinh x of one element.
    sinh1 = sinh_f32;
    /// cosh x of one element.
    cosh1 = cosh_f32;
    /// asinh x of one element.
    asinh1 = asinh_f32;
    /// acosh x of one element.
    acosh1 = acosh_f32;
    /// erf x of one element.
    erf1 = erf_f32;
    /// erfc x of one element.
    erfc1 = erfc_f32;
    /// gelu x (the erf form) of one element.
    gelu1 = gelu_f32;
    /// erfinv x of one element.
    erfinv1 = erfinv_f32;
    /// atanh x of one element.
    atanh1 = atanh_f32;
    /// ln |Γ(x)| of one element.
    lgamma1 = lgamma_f32;
    /// ψ(x) of one element.
    digamma1 = digamma_f32;
    /// 2^x of one element.
    exp21 = exp2_full;
    /// log2 x of one element.
    log21 = log2_full;
    /// log10 x of one element.
    log101 = log10_full;
}

/// Every float32 function, for tests and tools (sqrt and rsqrt are single IEEE
/// operations, listed for the level comparison only).
pub const FUNCS: &[Func<f32>] = &[
    Func {
        name: "exp",
        at: exp::at,
        one: exp1,
    },
    Func {
        name: "expm1",
        at: expm1::at,
        one: expm11,
    },
    Func {
        name: "log",
        at: log::at,
        one: log1,
    },
    Func {
        name: "log1p",
        at: log1p::at,
        one: log1p1,
    },
    Func {
        name: "tanh",
        at: tanh::at,
        one: tanh1,
    },
    Func {
        name: "sigmoid",
        at: sigmoid::at,
        one: sigmoid1,
    },
    Func {
        name: "sin",
        at: sin::at,
        one: sin1,
    },
    Func {
        name: "cos",
        at: cos::at,
        one: cos1,
    },
    Func {
        name: "tan",
        at: tan::at,
        one: tan1,
    },
    Func {
        name: "atan",
        at: atan::at,
        one: atan1,
    },
    Func {
        name: "asin",
        at: asin::at,
        one: asin1,
    },
    Func {
        name: "acos",
        at: acos::at,
        one: acos1,
    },
    Func {
        name: "sinh",
        at: sinh::at,
        one: sinh1,
    },
    Func {
        name: "cosh",
        at: cosh::at,
        one: cosh1,
    },
    Func {
        name: "asinh",
        at: asinh::at,
        one: asinh1,
    },
    Func {
        name: "acosh",
        at: acosh::at,
        one: acosh1,
    },
    Func {
        name: "atanh",
        at: atanh::at,
        one: atanh1,
    },
    Func {
        name: "erf",
        at: erf::at,
        one: erf1,
    },
    Func {
        name: "erfc",
        at: erfc::at,
        one: erfc1,
    },
    Func {
        name: "erfinv",
        at: erfinv::at,
        one: erfinv1,
    },
    Func {
        name: "lgamma",
        at: lgamma::at,
        one: lgamma1,
    },
    Func {
        name: "digamma",
        at: digamma::at,
        one: digamma1,
    },
    Func {
        name: "exp2",
        at: exp2::at,
        one: exp21,
    },
    Func {
        name: "log2",
        at: log2::at,
        one: log21,
    },
    Func {
        name: "log10",
        at: log10::at,
        one: log101,
    },
    Func {
        name: "sqrt",
        at: sqrt::at,
        one: sqrt_f32,
    },
    Func {
        name: "rsqrt",
        at: rsqrt::at,
        one: rsqrt_f32,
    },
];

slice_fns2! { f32;
    atan2: |y, x| atan2_f32(y, x);
    hypot: |x, y| hypot_f32(x, y);
    logaddexp: |a, b| logaddexp_f32(a, b);
    logaddexp2: |a, b| logaddexp2_f32(a, b);
    pow: |x, y| pow_f32(x, y);
    xlogy: |a, b| xlogy_f32(a, b);
    fmod: |a, b| fmod_v(a, b), fixup(|a, b| !fmod_ok(a, b), fmod_s(a, b));
    remainder: |a, b| remainder_v(a, b), fixup(|a, b| !fmod_ok(a, b), remainder_s(a, b));
    floor_divide: |a, b| floor_div_v(a, b), fixup(|a, b| !fmod_ok(a, b), floor_div_s(a, b));
}

scalar_fns2! { f32;
    /// atan2(y, x) of one element (the bits of [`atan2()`]; likewise below).
    atan21 = atan2_f32;
    /// hypot(x, y) of one element.
    hypot1 = hypot_f32;
    /// ln(e^a + e^b) of one element.
    logaddexp1 = logaddexp_f32;
    /// log2(2^a + 2^b) of one element.
    logaddexp21 = logaddexp2_f32;
    /// x ln y of one element (torch's xlogy).
    xlogy1 = xlogy_f32;
}

/// a ln b, +0 where a is ±0 unless b is NaN (torch's xlogy), with log's formula.
#[inline(always)]
fn xlogy_f32(a: f32, b: f32) -> f32 {
    let y = a * log_full(b);
    let y = if a == 0.0 { 0.0 } else { y };
    if b.is_nan() { b } else { y }
}

/// fmod of one element (exact: `%`).
pub fn fmod1(a: f32, b: f32) -> f32 {
    fmod_s(a, b)
}

/// remainder of one element (torch's formula over the exact fmod).
pub fn remainder1(a: f32, b: f32) -> f32 {
    remainder_s(a, b)
}

/// floor division of one element (torch's `div_floor_floating`).
pub fn floor_divide1(a: f32, b: f32) -> f32 {
    floor_div_s(a, b)
}

/// Every float32 function of two tensors, for tests and tools.
pub const FUNCS2: &[Func2<f32>] = &[
    Func2 {
        name: "atan2",
        at: atan2::at,
        one: atan21,
    },
    Func2 {
        name: "hypot",
        at: hypot::at,
        one: hypot1,
    },
    Func2 {
        name: "logaddexp",
        at: logaddexp::at,
        one: logaddexp1,
    },
    Func2 {
        name: "logaddexp2",
        at: logaddexp2::at,
        one: logaddexp21,
    },
    Func2 {
        name: "pow",
        at: pow::at,
        one: pow1,
    },
    Func2 {
        name: "fmod",
        at: fmod::at,
        one: fmod1,
    },
    Func2 {
        name: "remainder",
        at: remainder::at,
        one: remainder1,
    },
    Func2 {
        name: "floor_divide",
        at: floor_divide::at,
        one: floor_divide1,
    },
];
