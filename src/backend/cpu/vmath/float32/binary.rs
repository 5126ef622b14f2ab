//! float32 functions of two tensors: atan2 (in float32, atan's reduction with both
//! operands), hypot, logaddexp and logaddexp2 (in float64, rounded once), and fmod, remainder and
//! floor division (`vmath::fmod`, exact). x^y is `special::pow_f32`.

#![allow(clippy::excessive_precision)]

use super::trig::ATAN_A;
use super::via64;
use super::{fast_two_sum, poly, recip_approx, two_sum};

// pi/4 = PIO4_HI + PIO4_LO
const PIO4_HI: f32 = 0.785_398_185_253_143_310_546_875;
const PIO4_LO: f32 = -2.185_569_414_336_896_4e-8;

/// atan2(y, x): with n = min(|x|, |y|) and d = max, t = atan(n / d) in [0, pi/4] as atan
/// computes it (u = n/d, or (n - d)/(n + d) past tan(pi/8) with pi/4 added, each quotient
/// a float and a correction), then the result k pi/4 ± (t's part), k pi/4 a two-float
/// constant, the sign of y put back.
#[inline(always)]
pub(super) fn atan2_f32(y: f32, x: f32) -> f32 {
    let (ax, ay) = (x.abs(), y.abs());
    let swap = ay > ax;
    let (n, d) = if swap { (ax, ay) } else { (ay, ax) };
    // both infinite: as |y| = |x| = 1; one infinite or both zero: t = 0 (as 0 / 1)
    let d_inf = d == f32::INFINITY;
    let n = if n == f32::INFINITY {
        1.0
    } else if d_inf {
        0.0
    } else {
        n
    };
    let d = if d_inf || d == 0.0 { 1.0 } else { d };
    // the same power of 2 on both keeps n + d finite and the residuals exact: d' in
    // [2^20, 2^48] from above (an n that then underflows is below the result's
    // resolution), [2^-69, 2^20] from below (n scales exactly)
    let f = if d > 1.0e30 {
        8.271_806_125_530_277e-25 // 2^-80
    } else if d < 8.673_617e-19 {
        1.208_925_819_614_629_2e24 // 2^80
    } else {
        1.0
    };
    let (n, d) = (n * f, d * f);
    let mid = n > 0.414_213_57 * d;
    let (nh, nl) = two_sum(n, -d);
    let (dh, dl) = two_sum(n, d);
    let (nh, nl, dh, dl) = if mid {
        (nh, nl, dh, dl)
    } else {
        (n, 0.0, d, 0.0)
    };
    // uh correctly rounded (its residual may underflow where n is subnormal), ul from
    // the residual and an approximate reciprocal (enough for a correction)
    let uh = nh / dh;
    let ul = (-uh).mul_add(dl, nl + (-uh).mul_add(dh, nh)) * recip_approx(dh);
    let z = uh * uh;
    let a = poly(z, ATAN_A);
    // result = C + s t, C = 0, pi/2 (|y| > |x|) or pi (x < 0), t = (mid ? pi/4 : 0) + atan u
    let neg_x = x.is_sign_negative();
    let s: f32 = if swap != neg_x { -1.0 } else { 1.0 };
    let kc: f32 = if swap {
        2.0
    } else if neg_x {
        4.0
    } else {
        0.0
    };
    let k = if mid { kc + s } else { kc };
    let bh = k * PIO4_HI;
    let bl = k.mul_add(PIO4_HI, -bh) + k * PIO4_LO;
    let (r, e) = fast_two_sum(bh, s * uh);
    let v = r + (e + s.mul_add((uh * z).mul_add(a, ul), bl));
    if x.is_nan() || y.is_nan() {
        x + y
    } else {
        v.copysign(y)
    }
}

/// hypot(x, y) = sqrt(x^2 + y^2) in float64 (the squares exact, no overflow or
/// underflow in float64's range), rounded once more; an infinity wins over NaN (C's).
#[inline(always)]
pub(super) fn hypot_f32(x: f32, y: f32) -> f32 {
    let (xd, yd) = (f64::from(x), f64::from(y));
    let r = xd.mul_add(xd, yd * yd).sqrt() as f32;
    if x.abs() == f32::INFINITY || y.abs() == f32::INFINITY {
        f32::INFINITY
    } else {
        r
    }
}

/// ln(e^a + e^b) = max + log1p(e^-|a - b|) (torch's formula) in float64 (`via64`'s
/// lite forms, a - b exact), rounded once; a = b gives max + ln 2 (so that the max and
/// the log cancel exactly where they should: logaddexp(x, x) has only ln 2's rounding).
/// Equal infinities give themselves (a - b is NaN there, and for a NaN: a + b is the
/// result in both cases).
#[inline(always)]
pub(super) fn logaddexp_f32(a: f32, b: f32) -> f32 {
    let (ad, bd) = (f64::from(a), f64::from(b));
    let m = if ad < bd { bd } else { ad };
    let d = -(ad - bd).abs();
    // (e^-700 is already below float32's resolution next to any m; NaN stays)
    let d = if d < -700.0 { -700.0 } else { d };
    let l = via64::log1p_lite(via64::exp_lite(d));
    let l = if d == 0.0 { std::f64::consts::LN_2 } else { l };
    let r = (m + l) as f32;
    if (a - b).is_nan() { a + b } else { r }
}

/// log2(2^a + 2^b) = max + log2(1 + 2^-|a - b|) (torch's formula), as
/// [`logaddexp_f32`]: in float64, one fused pass (`via64::exp2_lite`, `log2_1p_lite`),
/// rounded once; a = b gives max + 1 exactly.
#[inline(always)]
pub(super) fn logaddexp2_f32(a: f32, b: f32) -> f32 {
    let (ad, bd) = (f64::from(a), f64::from(b));
    let m = if ad < bd { bd } else { ad };
    let d = -(ad - bd).abs();
    // (2^-1000 is below float32's resolution next to any m; NaN stays)
    let d = if d < -1000.0 { -1000.0 } else { d };
    let l = via64::log2_1p_lite(via64::exp2_lite(d));
    let l = if d == 0.0 { 1.0 } else { l };
    let r = (m + l) as f32;
    if (a - b).is_nan() { a + b } else { r }
}

crate::backend::cpu::vmath::fmod::fmod_fns!(f32);

/// fmod a b, exact (the scalar `%`'s value).
#[inline(always)]
pub(super) fn fmod_s(a: f32, b: f32) -> f32 {
    a % b
}
