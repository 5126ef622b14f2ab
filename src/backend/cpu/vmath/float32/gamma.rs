//! lgamma and digamma of float32 elements, evaluated in float64 and rounded once
//! (issue 15). Branch-free, so the slice loops vectorise; the formulas and their
//! accuracy are in docs/kernels.md ("lgamma, digamma and xlogy").
//!
//! Positive a below 8 is reduced to r = frac(a) + 1 in [1, 2) by the recurrences
//! (products and sums of the exact factors a - k), where lgamma(r) = (r - 1)(r - 2)
//! R(r) and digamma(r) = (r - x0) D(r) with the zeros as exact factors
//! (`tools/fit_gamma.py`): relatively accurate at and near the zeros, 0 exactly at 1 and
//! 2. From 8 up, Stirling's and the digamma asymptotic series. Negative x by the
//! reflection formulas, with sin(pi s) of the exact s = a - round(a).

#![allow(clippy::excessive_precision)]

use super::super::float64::log_f64_pos as ln;
use super::super::float64::poly;

/// 1.5 * 2^52: adding it rounds a float64 below 2^51 in magnitude to an integer.
const MAGIC: f64 = 6_755_399_441_055_744.0;
/// From 2^23 up every float32 is an integer.
const INTS: f64 = 8_388_608.0;
const PI: f64 = std::f64::consts::PI;
const HALF_LN_2PI: f64 = 0.9189385332046728;

// degree 18, relative error 4.41e-16 (tools/fit_gamma.py)
const LGAMMA_R: [f64; 19] = [
    0.4831289505409809,
    -0.14595989591431094,
    0.06291140107456804,
    -0.031308487499847056,
    0.016797098630444426,
    -0.009425622530076217,
    0.005446457896604831,
    -0.0032120714838724603,
    0.0019229144861301855,
    -0.0011644589445235255,
    0.0007115506226877513,
    -0.0004375496939850241,
    0.0002709930092186467,
    -0.0001715654244759322,
    0.0001073270909194498,
    -5.696947616798503e-05,
    3.581888030972756e-05,
    -4.345833354319814e-05,
    2.7601736760716535e-05,
];
// degree 18, relative error 4.93e-15 (tools/fit_gamma.py)
const DIGAMMA_R: [f64; 19] = [
    0.9510558760318328,
    -0.4236274212815592,
    0.24054248424085273,
    -0.14840492303026787,
    0.09498872443714845,
    -0.06192213492921292,
    0.04076083504332242,
    -0.026975744200410486,
    0.0179072133446106,
    -0.01190911712808301,
    0.007927619807906627,
    -0.0052709948665580885,
    0.0035121450086735588,
    -0.002398663311445534,
    0.0015988151174539016,
    -0.0008537552623645952,
    0.0005691242492481724,
    -0.0008034064159301249,
    0.0005355952292349895,
];
/// digamma's positive root as a two-float sum.
const X0_HI: f64 = 1.4616321449683622;
const X0_LO: f64 = 9.549995429965697e-17;
/// B_2k / (2k (2k - 1)), k = 1..7: Stirling's series in 1/a (remainder below 1e-15 from 8).
const STIRLING: [f64; 7] = [
    0.08333333333333333,
    -0.002777777777777778,
    0.0007936507936507937,
    -0.0005952380952380953,
    0.0008417508417508417,
    -0.0019175269175269176,
    0.00641025641025641,
];
/// B_2k / 2k, k = 1..7: digamma's asymptotic series in 1/a^2.
const PSI_ASYM: [f64; 7] = [
    0.08333333333333333,
    -0.008333333333333333,
    0.003968253968253968,
    -0.004166666666666667,
    0.007575757575757576,
    -0.021092796092796094,
    0.08333333333333333,
];
/// (-1)^k pi^(2k+1)/(2k+1)!: sin(pi s) = s P(s^2), Taylor to s^21 (2.6e-16 at s = 1/2).
const SINPI: [f64; 11] = [
    PI,
    -5.16771278004997,
    2.5501640398773455,
    -0.5992645293207921,
    0.08214588661112823,
    -0.0073704309457143504,
    0.00046630280576761255,
    -2.1915353447830217e-05,
    7.952054001475513e-07,
    -2.2948428997269873e-08,
    5.392664662608129e-10,
];

/// a rounded to an integer (ties either way), for 0 <= a < 2^51.
#[inline(always)]
fn round_small(a: f64) -> f64 {
    (a + MAGIC) - MAGIC
}

/// r = frac(a) + 1 in [1, 2) for 0 <= a < 2^51 (exact unless a < 2^-29 or so).
#[inline(always)]
fn reduced(a: f64) -> f64 {
    let t = round_small(a);
    let fl = if t > a { t - 1.0 } else { t };
    (a - fl) + 1.0
}

/// sin(pi s) for 0 <= s <= 1/2.
#[inline(always)]
fn sinpi(s: f64) -> f64 {
    s * poly(s * s, SINPI)
}

/// ln Γ(a) for 0 < a < 8: lgamma(r) + ln q, q the product of the factors a - k >= 1
/// (k = 1..6), or lgamma(a + 1) - ln a below 1.
#[inline(always)]
fn lgamma_small(a: f64) -> f64 {
    let r = reduced(a);
    let mut q = if a < 1.0 { a } else { 1.0 };
    let mut k = 1.0;
    while k <= 6.0 {
        let f = a - k;
        q *= if f >= 1.0 { f } else { 1.0 };
        k += 1.0;
    }
    let l = ln(q);
    let p = ((r - 1.0) * (r - 2.0)) * poly(r - 1.5, LGAMMA_R);
    if a < 1.0 { p - l } else { p + l }
}

/// ln Γ(a) for a >= 8: Stirling's series.
#[inline(always)]
fn lgamma_big(a: f64) -> f64 {
    let w = 1.0 / a;
    (a - 0.5).mul_add(ln(a), HALF_LN_2PI - a) + w * poly(w * w, STIRLING)
}

/// ln |Γ(x)|: +inf at 0, the negative integers and both infinities (C's lgamma).
#[inline(always)]
pub(super) fn lgamma_f32(x: f32) -> f32 {
    let xd = f64::from(x);
    let a = xd.abs();
    let pos = if a < 8.0 {
        lgamma_small(a)
    } else {
        lgamma_big(a)
    };
    // Γ(x) Γ(-x) = -pi / (x sin(pi x)): ln |Γ(x)| = ln(pi / (a |sin(pi s)|)) - ln Γ(a)
    let s = (a - round_small(a)).abs();
    let neg = ln(PI / (a * sinpi(s))) - pos;
    let y = if xd > 0.0 { pos } else { neg };
    let pole = (xd <= 0.0 && (s == 0.0 || a >= INTS)) || a == f64::INFINITY;
    let y = if pole { f64::INFINITY } else { y };
    (if x.is_nan() { xd } else { y }) as f32
}

/// [`lgamma_f32`] for 0 < x < 8 (the same bits).
#[inline(always)]
pub(super) fn lgamma_fast(x: f32) -> f32 {
    lgamma_small(f64::from(x)) as f32
}

/// ψ(a) for 0 < a < 8: ψ(r) plus the recurrence's terms as one fraction n/d
/// (Σ 1/(a - k) over the factors a - k >= 1, k = 1..6; -1/a below 1).
#[inline(always)]
fn digamma_small(a: f64) -> f64 {
    let r = reduced(a);
    let (mut n, mut d): (f64, f64) = if a < 1.0 { (-1.0, a) } else { (0.0, 1.0) };
    let mut k = 1.0;
    while k <= 6.0 {
        let f = a - k;
        let on = f >= 1.0;
        n = if on { n.mul_add(f, d) } else { n };
        d = if on { d * f } else { d };
        k += 1.0;
    }
    ((r - X0_HI) - X0_LO) * poly(r - 1.5, DIGAMMA_R) + n / d
}

/// ψ(a) for a >= 8: ln a - 1/(2a) - Σ B_2k / (2k a^2k).
#[inline(always)]
fn digamma_big(a: f64) -> f64 {
    let w = 1.0 / a;
    let w2 = w * w;
    (-0.5f64).mul_add(w, ln(a)) - w2 * poly(w2, PSI_ASYM)
}

/// ψ(x): ∓inf at ±0, NaN at the negative integers and -inf (torch's calc_digamma).
#[inline(always)]
pub(super) fn digamma_f32(x: f32) -> f32 {
    let xd = f64::from(x);
    let a = xd.abs();
    let pos = if a < 8.0 {
        digamma_small(a)
    } else {
        digamma_big(a)
    };
    // ψ(-a) = ψ(a) + 1/a + pi cot(pi a), cot(pi a) = cos(pi s)/sin(pi s) with the exact
    // s = a - round(a), cos(pi s) = sin(pi (1/2 - |s|))
    let s = a - round_small(a);
    let sa = s.abs();
    let (sn, c) = (sinpi(sa), sinpi(0.5 - sa));
    let pc = if s < 0.0 { -PI * c } else { PI * c };
    let neg = pos + a.mul_add(pc, sn) / (a * sn);
    let y = if xd > 0.0 { pos } else { neg };
    let y = if xd == f64::INFINITY { xd } else { y };
    let nan = (xd < 0.0 && (s == 0.0 || a >= INTS)) || x.is_nan();
    let y = if nan { f64::NAN } else { y };
    let y = if xd == 0.0 {
        f64::INFINITY.copysign(-xd)
    } else {
        y
    };
    y as f32
}

/// [`digamma_f32`] for 0 < x < 8 (the same bits).
#[inline(always)]
pub(super) fn digamma_fast(x: f32) -> f32 {
    digamma_small(f64::from(x)) as f32
}
