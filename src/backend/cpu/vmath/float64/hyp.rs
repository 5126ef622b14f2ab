//! float64 sinh, cosh, asinh, acosh and atanh, from the exp and log cores with their
//! arguments as exact two-float sums (and small-|x| polynomials where the formulas
//! cancel). The float32 kernels are these rounded once.

#![allow(clippy::excessive_precision)]

use super::exp_log::{exp_core, log_pair};
use super::{div_pairs2, fast_two_sum, magic_int, poly, pow2i, sqrt_pair, two_sum};

/// (E/2 hi, E/2 lo, 1/(2E) hi, 1/(2E) lo) for E = e^ax, 0 <= ax <= 711 (two-float sums).
#[inline(always)]
fn half_exps(ax: f64) -> (f64, f64, f64, f64) {
    let (t, w, lo) = exp_core(ax, 0.0);
    let k = magic_int(t);
    // 2^(k-1) in two steps (k - 1 reaches 1024)
    let k1 = (k - 1) >> 1;
    let (s1, s2) = (pow2i(k1), pow2i(k - 1 - k1));
    let (eh, el) = (w * s1 * s2, lo * s1 * s2);
    // 1/(w + lo), and 2^(-k-1) (negligible beyond k = 60)
    let (ih, il) = div_pairs2(1.0, 0.0, w, lo);
    let si = pow2i(-(if k < 60 { k } else { 60 }) - 1);
    (eh, el, ih * si, il * si)
}

#[inline(always)]
pub(crate) fn sinh_f64(x: f64) -> f64 {
    let ax = x.abs();
    // |x| < 1: x + x^3 P(x^2) (`tools/fit_vmath.py sinh_f64`)
    let z = x * x;
    let p = poly(
        z,
        [
            0.166_666_666_666_666_69,
            0.008_333_333_333_332_912,
            0.000_198_412_698_415_936_3,
            2.755_731_910_657_999e-6,
            2.505_213_104_743_775e-8,
            1.605_665_359_926_753e-10,
            7.776_825_973_077_499e-13,
        ],
    );
    let small = (x * z).mul_add(p, x);
    let a = if ax > 711.0 { 711.0 } else { ax };
    let (eh, el, ih, il) = half_exps(a);
    let (h, e) = fast_two_sum(eh, -ih);
    // (beyond float64's range, eh is infinite and the sum NaN)
    let big = if eh == f64::INFINITY {
        eh
    } else {
        h + (e + (el - il))
    };
    let big = big.copysign(x);
    // NaN fails the compare and takes the formula's NaN
    if ax < 1.0 { small } else { big }
}

#[inline(always)]
pub(crate) fn cosh_f64(x: f64) -> f64 {
    let ax = x.abs();
    let a = if ax > 711.0 { 711.0 } else { ax };
    let (eh, el, ih, il) = half_exps(a);
    let (h, e) = fast_two_sum(eh, ih);
    if eh == f64::INFINITY {
        eh
    } else {
        h + (e + (el + il))
    }
}

/// Beyond this |x|, sqrt(x^2 + 1) is |x| to float64's precision: asinh |x| =
/// log 2|x| (and likewise acosh).
const HUGE: f64 = 268_435_456.0; // 2^28

#[inline(always)]
pub(crate) fn asinh_f64(x: f64) -> f64 {
    let ax = x.abs();
    // |x| < 1/4: x + x^3 P(x^2) (`tools/fit_vmath.py asinh_f64`)
    let z = x * x;
    let p = poly(
        z,
        [
            -0.166_666_666_666_666_63,
            0.074_999_999_999_977_33,
            -0.044_642_857_138_070_66,
            0.030_381_943_948_187_093,
            -0.022_372_129_930_450_48,
            0.017_351_726_470_174_487,
            -0.013_941_963_268_543_888,
            0.011_244_606_789_144_183,
            -0.007_420_203_119_849_611,
        ],
    );
    let small = (x * z).mul_add(p, x).copysign(x);
    // else log(u), u = |x| + sqrt(x^2 + 1) as an exact sum (x^2 + 1 too)
    let a = if ax >= HUGE { 1.0 } else { ax }; // (NaN stays)
    let zz = a * a;
    let ze = a.mul_add(a, -zz);
    let (qh, qe) = two_sum(zz, 1.0);
    let (sh, sl) = sqrt_pair(qh, qe + ze);
    let (uh, ue) = fast_two_sum(sh, a);
    let huge = ax >= HUGE;
    let (uh, ul, kadd) = if huge {
        (ax, 0.0, 1.0)
    } else {
        (uh, ue + sl, 0.0)
    };
    let big = log_pair(uh, ul, kadd).copysign(x);
    if ax < 0.25 {
        small
    } else if ax == f64::INFINITY {
        x
    } else {
        big
    }
}

#[inline(always)]
pub(crate) fn acosh_f64(x: f64) -> f64 {
    // log(u), u = x + sqrt(x^2 - 1) as an exact sum, with x^2 - 1 as (x - 1)(x + 1) =
    // t^2 + 2t near 1 (t = x - 1 is exact up to 2)
    let a = if x < HUGE { x } else { 2.0 };
    let t = a - 1.0;
    let tt = t * t;
    let te = t.mul_add(t, -tt);
    let (q1h, q1e) = fast_two_sum(2.0 * t, tt);
    let zz = a * a;
    let ze = a.mul_add(a, -zz);
    let (q2h, q2e) = fast_two_sum(zz, -1.0);
    let near = a <= 2.0;
    let (qh, ql) = if near {
        (q1h, q1e + te)
    } else {
        (q2h, q2e + ze)
    };
    let (sh, sl) = sqrt_pair(qh, ql);
    let (uh, ue) = fast_two_sum(a, sh);
    let huge = x >= HUGE;
    let (uh, ul, kadd) = if huge {
        (x, 0.0, 1.0)
    } else {
        (uh, ue + sl, 0.0)
    };
    let y = log_pair(uh, ul, kadd);
    if x == f64::INFINITY {
        x
    } else if x >= 1.0 {
        y
    } else {
        f64::NAN // below 1, or NaN
    }
}

#[inline(always)]
pub(crate) fn atanh_f64(x: f64) -> f64 {
    let ax = x.abs();
    // |x| < 1/4: x + x^3 P(x^2) (`tools/fit_vmath.py atanh_f64`)
    let z = x * x;
    let p = poly(
        z,
        [
            0.333_333_333_333_333_6,
            0.199_999_999_999_837_75,
            0.142_857_142_892_369_25,
            0.111_111_107_351_899_91,
            0.090_909_317_912_634_65,
            0.076_914_812_038_104_21,
            0.066_851_211_092_784_07,
            0.056_365_877_118_203_28,
            0.070_236_350_350_425_8,
        ],
    );
    let small = (x * z).mul_add(p, x);
    // else log((1 + |x|)/(1 - |x|))/2, the quotient as an exact sum
    let (nh, nl) = two_sum(1.0, ax);
    let (dh, dl) = two_sum(1.0, -ax);
    let (uh, ul) = div_pairs2(nh, nl, dh, dl);
    let (uh, ul) = fast_two_sum(uh, ul);
    let ok = uh > 0.0 && uh < f64::INFINITY;
    let big =
        (0.5 * log_pair(if ok { uh } else { 1.0 }, if ok { ul } else { 0.0 }, 0.0)).copysign(x);
    if ax < 0.25 {
        small
    } else if ax < 1.0 {
        big
    } else if ax == 1.0 {
        f64::INFINITY.copysign(x)
    } else {
        f64::NAN // beyond 1, or NaN
    }
}
