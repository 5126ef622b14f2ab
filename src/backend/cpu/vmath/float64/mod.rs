//! The float64 functions, evaluated in float64 with the steps that need more than
//! float64's precision carried as unevaluated sums of two floats (double-double): exp,
//! expm1, log, log1p, tanh, sigmoid (`exp_log`), sin, cos, tan, atan, asin, acos
//! (`trig`), sinh, cosh, asinh, acosh, atanh (`hyp`), erf, erfc, erfinv (`special`);
//! sqrt and rsqrt as IEEE operations. The float32 kernels of sinh ... atanh are these
//! formulas rounded once.
//!
//! Each function's per-element form (`exp1`, ...) gives the slice function's bits; see
//! the parent module for the guarantees and docs/kernels.md for the designs.

#![allow(clippy::excessive_precision)]

mod binary;
mod exp_log;
mod hyp;
mod special;
mod trig;

use super::{Func, Func2, scalar_fns, scalar_fns2, slice_fns, slice_fns2};
use binary::*;
pub(crate) use exp_log::log_fast as log_f64_pos;
use exp_log::*;
pub(crate) use hyp::{acosh_f64, asinh_f64, atanh_f64, cosh_f64, sinh_f64};
use special::{ERFINV_FAST, erf_f64, erfc_f64, erfinv_f64, erfinv_fast};
use trig::*;

/// 1.5 * 2^52: adding it rounds a float64 of magnitude below 2^51 to an integer, which
/// is then read from the low bits (no float-to-int conversion, which has no vector form
/// for 64-bit integers before AVX-512DQ).
const MAGIC: f64 = 6_755_399_441_055_744.0;

/// a + b = s + e exactly, where |a| >= |b| (or a = 0).
#[inline(always)]
fn fast_two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    (s, (a - s) + b)
}

/// a + b = s + e exactly, whatever their magnitudes.
#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// 2^k for an integer k in [-1022, 1023], from its exponent bits.
#[inline(always)]
fn pow2i(k: i64) -> f64 {
    f64::from_bits((k.wrapping_add(1023) as u64) << 52)
}

/// The integer n that `MAGIC`-rounding put into `t = n + MAGIC`.
#[inline(always)]
fn magic_int(t: f64) -> i64 {
    (t.to_bits() as i64).wrapping_sub(MAGIC.to_bits() as i64)
}

/// An i64 of magnitude below 2^51 as a float64, through `MAGIC`.
#[inline(always)]
fn to_float(k: i64) -> f64 {
    f64::from_bits((MAGIC.to_bits() as i64).wrapping_add(k) as u64) - MAGIC
}

/// Horner's rule, lowest coefficient first in `c` (float32's functions evaluated in
/// float64 use it too).
#[inline(always)]
pub(in crate::backend::cpu::vmath) fn poly<const N: usize>(x: f64, c: [f64; N]) -> f64 {
    let mut p = c[N - 1];
    let mut i = N - 1;
    while i > 0 {
        i -= 1;
        p = p.mul_add(x, c[i]);
    }
    p
}

/// The polynomial of [`poly`] by Estrin's scheme: pairs `c[2i] + c[2i+1] x`, then pairs
/// of those with x^2, and so on, a depth of about log2(N) multiply-adds instead of N - 1.
/// For kernels whose Horner chain is the critical path (float32's x^y spends its time
/// waiting on two chains of 7-9 dependent multiply-adds); the rounding differs slightly
/// from Horner's. Up to 16 coefficients.
///
/// Written out level by level, every index a constant, rather than as loops over the
/// levels: LLVM did not unroll those loops in the release build (fat LTO, one codegen
/// unit), which left the coefficients on the stack and every kernel calling this scalar,
/// 10x slower than the dev-release build measured (256 x 256 float32 x^y, AMD EPYC Zen 4:
/// 1.64 ms against 0.17).
#[inline(always)]
pub(in crate::backend::cpu::vmath) fn estrin<const N: usize>(x: f64, c: [f64; N]) -> f64 {
    const { assert!(N >= 1 && N <= 16) };
    /// One level: entry i of the next from entries 2i and 2i + 1 of this one (`n` of
    /// them), the last carried alone when `n` is odd. (`n`, `i` constant: one branch.)
    #[inline(always)]
    fn pair(v: &[f64], n: usize, i: usize, xp: f64) -> f64 {
        if 2 * i + 1 < n {
            v[2 * i + 1].mul_add(xp, v[2 * i])
        } else if 2 * i < n {
            v[2 * i]
        } else {
            0.0 // (beyond the level: never read)
        }
    }
    let n1 = N.div_ceil(2);
    let n2 = n1.div_ceil(2);
    let n3 = n2.div_ceil(2);
    let x2 = x * x;
    let x4 = x2 * x2;
    let x8 = x4 * x4;
    let a = [
        pair(&c, N, 0, x),
        pair(&c, N, 1, x),
        pair(&c, N, 2, x),
        pair(&c, N, 3, x),
        pair(&c, N, 4, x),
        pair(&c, N, 5, x),
        pair(&c, N, 6, x),
        pair(&c, N, 7, x),
    ];
    let b = [
        pair(&a, n1, 0, x2),
        pair(&a, n1, 1, x2),
        pair(&a, n1, 2, x2),
        pair(&a, n1, 3, x2),
    ];
    let d = [pair(&b, n2, 0, x4), pair(&b, n2, 1, x4)];
    if N == 1 {
        c[0]
    } else if n1 == 1 {
        a[0]
    } else if n2 == 1 {
        b[0]
    } else if n3 == 1 {
        d[0]
    } else {
        pair(&d, n3, 0, x8)
    }
}

/// (nh + nl)/(dh + dl) for two-float sums with |nl| <= ulp(nh), |dl| <= ulp(dh): one
/// division and one correction step, so the result rounds about once.
#[inline(always)]
fn div_pairs(nh: f64, nl: f64, dh: f64, dl: f64) -> f64 {
    let (qh, ql) = div_pairs2(nh, nl, dh, dl);
    qh + ql
}

/// As [`div_pairs`], the quotient as a two-float sum (qh, ql).
#[inline(always)]
fn div_pairs2(nh: f64, nl: f64, dh: f64, dl: f64) -> (f64, f64) {
    let inv = 1.0 / dh;
    let q0 = nh * inv;
    let res = (-q0).mul_add(dl, nl + (-q0).mul_add(dh, nh));
    (q0, res * inv)
}

/// About 1/v (relative error below 2^-8) for a positive normal v, from its bits and
/// one Newton step: enough for corrections of a few ulps.
#[inline(always)]
fn recip_approx(v: f64) -> f64 {
    let i = f64::from_bits(0x7FDE_6238_DA3C_2118_u64.wrapping_sub(v.to_bits()));
    i * (2.0 - v * i)
}

/// sqrt(qh + ql) as (sh, sl) for a two-float sum qh + ql >= 0: the root, and the
/// residual (exact in an fma) over 2 sh (0 where qh is 0).
#[inline(always)]
fn sqrt_pair(qh: f64, ql: f64) -> (f64, f64) {
    let sh = qh.sqrt();
    let sl = ((-sh).mul_add(sh, qh) + ql) * (0.5 * recip_approx(sh));
    (sh, if qh == 0.0 { 0.0 } else { sl })
}

#[inline(always)]
fn sqrt_f64(x: f64) -> f64 {
    x.sqrt()
}

#[inline(always)]
fn rsqrt_f64(x: f64) -> f64 {
    1.0 / x.sqrt()
}

slice_fns! { f64;
    exp: |x| exp_full(x), fast(|x| x.abs() <= EXP_FAST => exp_fast(x));
    expm1: |x| expm1_full(x);
    log: |x| log_full(x), fast(|x| (f64::MIN_POSITIVE..=f64::MAX).contains(&x) => log_fast(x));
    log1p: |x| log1p_full(x);
    tanh: |x| tanh_full(x), fast(|x| x.abs() <= TANH_FAST => tanh_fast(x));
    sigmoid: |x| sigmoid_full(x), fast(|x| x.abs() <= EXP_FAST => sigmoid_fast(x));
    sin: |x| sincos_f64(x, false), fixup(TRIG_MAX, |x| trig_fix(x, f64::sin));
    cos: |x| sincos_f64(x, true), fixup(TRIG_MAX, |x| trig_fix(x, f64::cos));
    tan: |x| tan_f64(x), fixup(TRIG_MAX, |x| trig_fix(x, f64::tan));
    atan: |x| atan_f64(x);
    asin: |x| asin_f64(x);
    acos: |x| acos_f64(x);
    sinh: |x| sinh_f64(x);
    cosh: |x| cosh_f64(x);
    asinh: |x| asinh_f64(x);
    acosh: |x| acosh_f64(x);
    atanh: |x| atanh_f64(x);
    sqrt: |x| sqrt_f64(x);
    rsqrt: |x| rsqrt_f64(x);
    erf: |x| erf_f64(x);
    erfc: |x| erfc_f64(x);
    erfinv: |x| erfinv_f64(x), fast(|x| x.abs() <= ERFINV_FAST => erfinv_fast(x));
    exp2: |x| exp2_full(x);
    log2: |x| log2_full(x);
    log10: |x| log10_full(x);
}

scalar_fns! { f64;
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
    atan1 = atan_f64;
    /// asin x of one element.
    asin1 = asin_f64;
    /// acos x of one element.
    acos1 = acos_f64;
    /// sinh x of one element.
    sinh1 = sinh_f64;
    /// cosh x of one element.
    cosh1 = cosh_f64;
    /// asinh x of one element.
    asinh1 = asinh_f64;
    /// acosh x of one element.
    acosh1 = acosh_f64;
    /// atanh x of one element.
    atanh1 = atanh_f64;
    /// erf x of one element.
    erf1 = erf_f64;
    /// erfc x of one element.
    erfc1 = erfc_f64;
    /// erfinv x of one element.
    erfinv1 = erfinv_f64;
    /// 2^x of one element.
    exp21 = exp2_full;
    /// log2 x of one element.
    log21 = log2_full;
    /// log10 x of one element.
    log101 = log10_full;
}

/// erf, erfc and erfinv (`special`), for tests and tools: kept out of [`FUNCS`], whose
/// checks take their reference from `reference::exact_f64` (which has none for these;
/// `tests_erf64.rs` checks them against mpmath's values and a double-double erf).
pub const ERF_FUNCS: &[Func<f64>] = &[
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
];

/// Every float64 function, for tests and tools.
pub const FUNCS: &[Func<f64>] = &[
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
        name: "sqrt",
        at: sqrt::at,
        one: sqrt_f64,
    },
    Func {
        name: "rsqrt",
        at: rsqrt::at,
        one: rsqrt_f64,
    },
];

slice_fns2! { f64;
    atan2: |y, x| atan2_f64(y, x);
    hypot: |x, y| hypot_f64(x, y);
    logaddexp: |a, b| logaddexp_f64(a, b);
    xlogy: |a, b| xlogy_f64(a, b);
    fmod: |a, b| fmod_v(a, b), fixup(|a, b| !fmod_ok(a, b), fmod_s(a, b));
    remainder: |a, b| remainder_v(a, b), fixup(|a, b| !fmod_ok(a, b), remainder_s(a, b));
    floor_divide: |a, b| floor_div_v(a, b), fixup(|a, b| !fmod_ok(a, b), floor_div_s(a, b));
}

scalar_fns2! { f64;
    /// atan2(y, x) of one element (the bits of [`atan2()`]; likewise below).
    atan21 = atan2_f64;
    /// hypot(x, y) of one element.
    hypot1 = hypot_f64;
    /// ln(e^a + e^b) of one element.
    logaddexp1 = logaddexp_f64;
    /// x ln y of one element (torch's xlogy).
    xlogy1 = xlogy_f64;
}

/// a ln b, +0 where a is ±0 unless b is NaN (torch's xlogy), with log's formula.
#[inline(always)]
fn xlogy_f64(a: f64, b: f64) -> f64 {
    let y = a * log_full(b);
    let y = if a == 0.0 { 0.0 } else { y };
    if b.is_nan() { b } else { y }
}

/// log2(2^a + 2^b) of one element: torch's formula max + log1p(2^-|a - b|) / ln 2 with
/// this module's exp2 and log1p (the bits of `cpu::binary`'s float64 slice kernel, which
/// runs those two as slice functions); equal infinities give themselves.
pub fn logaddexp21(a: f64, b: f64) -> f64 {
    if a.is_infinite() && a == b {
        return a;
    }
    let m = if a < b { b } else { a };
    let l = log1p1(exp21(-(a - b).abs()));
    m + l * std::f64::consts::LOG2_E
}

/// fmod of one element (exact: `%`).
pub fn fmod1(a: f64, b: f64) -> f64 {
    fmod_s(a, b)
}

/// remainder of one element (torch's formula over the exact fmod).
pub fn remainder1(a: f64, b: f64) -> f64 {
    remainder_s(a, b)
}

/// floor division of one element (torch's `div_floor_floating`).
pub fn floor_divide1(a: f64, b: f64) -> f64 {
    floor_div_s(a, b)
}

/// Every float64 function of two tensors, for tests and tools.
pub const FUNCS2: &[Func2<f64>] = &[
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
