//! float64 erf, erfc and erfinv, branch-free: every form is evaluated for every
//! element and the result selected, so the loops vectorise.
//!
//! - |x| < 1/2: erf x = x + x P(x^2) (one fma), erfc x = (1 - x) - x P(x^2) with 1 - x
//!   an exact sum; x^2 is carried as an exact two-float sum into P's last step.
//! - |x| = a >= 1/2: erfc a = e^(-a^2) erfcx(a), a^2 exact as a two-float sum and
//!   e^(-a^2) = 2^k (w + wl) from the exp kernel's `exp_core` (about 2^-58), erfcx from
//!   a rational fit inside Laplace's continued fraction (`erfc_tail`: the fit's rounding
//!   errors are damped 26-fold or more), as a two-float sum; the product rounds once
//!   (erfc, scaled into the subnormals from a = 26.54 on), or 1 - erfc a (erf) and 2 -
//!   erfc a (erfc of negative x) round once. No piece tables, no per-interval
//!   coefficients.
//! - erfinv y: Giles' variable w = -ln(1 - y^2), x0 = |y| p(w) good to 2^-23.7 (p in
//!   w below w = 6.25, in sqrt(w) above, up to 1 - 2^-53), then one Halley step with the
//!   residual erf x0 - |y| from the forms above: x0 + x0 P(x0^2) - |y| below |y| = 1/2,
//!   (1 - |y|) - erfc x0 above (1 - |y| exact), each accurate to a small part of an
//!   ulp; the step's own error, cubic in x0's, is below 2^-60. Tiny |y| (< 2^-30): |y|
//!   sqrt(pi)/2 rounded once.
//!
//! Max error (against mpmath and a double-double reference, docs/kernels.md): erf 0.71
//! ulp, erfc 0.76 (0.68 for normal results), erfinv 0.75 (0.71 from 1e-300 up).

#![allow(clippy::excessive_precision)]

use super::exp_log::{exp_core, scale2, split_log};
use super::{div_pairs2, fast_two_sum, magic_int, poly, pow2i, to_float, two_sum};

/// erf x = x + x P(x^2) for |x| <= 1/2, P(z) = ERF_C0 + z Q(z) (degree 9 in z = x^2,
/// error relative to erf 2^-56.3, most of it the rounding of P(0) = 2/sqrt(pi) - 1).
const ERF_C0: f64 = 0.128_379_167_095_512_6;
const ERF_Q: [f64; 9] = [
    -0.376_126_389_031_845_14,
    0.112_837_916_710_348_96,
    -0.026_866_170_677_505_283,
    0.005_223_978_285_406_548,
    -0.000_854_840_269_518_384_5,
    0.000_120_604_315_130_019_63,
    -1.512_569_934_035_999_4e-5,
    2.067_995_357_008_741_7e-6,
    -5.280_235_199_637_121e-7,
];

/// P(x^2) with x^2 = zh + zl exact: zl Q joins the last step (z's rounding would
/// otherwise reach erf as x^3 Q(z) 2^-53, an eighth of an ulp at x = 1/2).
#[inline(always)]
fn erf_p(x: f64) -> f64 {
    let zh = x * x;
    let zl = x.mul_add(x, -zh);
    let q = poly(zh, ERF_Q);
    zh.mul_add(q, zl.mul_add(q, ERF_C0))
}

/// erfcx a = e^(a^2) erfc a for a in [0.45, 27.3] through Laplace's continued fraction,
/// sqrt(pi) erfcx a = 1/(a + (1/2)/(a + U)), U = 1/(a + (3/2)/(a + 2/(a + ...))), with
/// U - `CF_BETA` = P(a)/Q(a) fitted (degree 9/9; the error of erfcx relative to it
/// 2^-60.3 with these float64 coefficients). So sqrt(pi) erfcx a = N/(a N + Q/2) with N =
/// (a + `CF_BETA`) Q + P: an error in P/Q reaches erfcx damped by R/(sqrt(pi) a + R)
/// (R = 1/erfcx - sqrt(pi) a) and by |U - `CF_BETA`|/(a + U), together at most 1/26
/// (at 0.45) and 1/80 from 1 on, so that the roundings of P and Q, a few ulps each,
/// are hardly visible (a Horner form of R = P/Q instead: 0.8 ulp more).
const CF_P: [f64; 10] = [
    0.261_226_925_457_788_9,
    0.054_583_538_199_343_08,
    -0.215_094_772_333_176_92,
    -0.252_484_577_283_680_9,
    -0.149_662_833_312_200_54,
    -0.057_400_163_976_978_59,
    -0.015_116_659_967_554_73,
    -0.002_714_720_727_227_801_3,
    -0.000_308_876_965_386_019_85,
    -1.753_473_135_671_448_7e-5,
];
const CF_Q: [f64; 10] = [
    1.0,
    1.851_980_651_088_299,
    1.739_096_773_529_448_5,
    1.058_847_291_037_319,
    0.455_146_388_686_468_3,
    0.142_464_924_440_727_11,
    0.032_449_085_421_107_86,
    0.005_206_100_394_107_395,
    0.000_539_092_057_934_161_9,
    2.805_557_016_262_576_6e-5,
];
const CF_BETA: f64 = 0.625;

// 1/sqrt(pi) = INV_SQRT_PI + INV_SQRT_PI_LO
const INV_SQRT_PI: f64 = 0.564_189_583_547_756_3;
const INV_SQRT_PI_LO: f64 = 7.667_729_806_582_94e-18;
// sqrt(pi)/2 = HALF_SQRT_PI + HALF_SQRT_PI_LO (erfinv's slope at 0)
const HALF_SQRT_PI: f64 = 0.886_226_925_452_758;
const HALF_SQRT_PI_LO: f64 = -3.833_293_249_912_899_3e-17;

/// Below this |x|, erf and erfc take x + x P(x^2) and (1 - x) - x P(x^2) (beyond,
/// x^3 Q(x^2), computed to about an ulp, is a growing part of erfc; below, the tail's
/// damping weakens).
const ERF_SMALL: f64 = 0.5;
/// erf is ±1 to the last bit from |x| = 5.922 on.
const ERF_CLAMP: f64 = 6.0;
/// erfc is 0 beyond 27.226 (it rounds to 0 from there): the tail's fitted range ends
/// here.
const ERFC_CLAMP: f64 = 27.3;

/// (t, w, wl, fh, fl) for a in [0, 27.3]: erfc a = 2^k (w + wl)(fh + fl), k the
/// integer in t (`magic_int`): e^(-a^2) = 2^k (w + wl) and erfcx a = fh + fl, to about
/// 2^-58 and 2^-56.5 relative from a = 0.45 on (a finite number below, unused).
#[inline(always)]
fn erfc_tail(a: f64) -> (f64, f64, f64, f64, f64) {
    let hi = a * a;
    let lo = a.mul_add(a, -hi);
    let (t, w, wl) = exp_core(-hi, -lo);
    let q = poly(a, CF_Q);
    let p = poly(a, CF_P);
    // N = (a + CF_BETA) q + p = nh + nl (|p| is below (a + CF_BETA) q / 4)
    let (sh, sl) = two_sum(a, CF_BETA);
    let th = sh * q;
    let tl = sh.mul_add(q, -th) + sl * q;
    let (nh, n2) = fast_two_sum(th, p);
    let nl = tl + n2;
    // M = a N + q/2 = mh + ml (a N >= 0.54 q from a = 0.45)
    let mh = a * nh;
    let ml = a.mul_add(nh, -mh) + a * nl;
    let (mh, m2) = fast_two_sum(mh, 0.5 * q);
    let ml = ml + m2;
    // erfcx = (N / sqrt(pi)) / M
    let uh = nh * INV_SQRT_PI;
    let ul = nh.mul_add(INV_SQRT_PI, -uh) + nh.mul_add(INV_SQRT_PI_LO, nl * INV_SQRT_PI);
    let (fh, fl) = div_pairs2(uh, ul, mh, ml);
    (t, w, wl, fh, fl)
}

/// erf x.
#[inline(always)]
pub(super) fn erf_f64(x: f64) -> f64 {
    let a = x.abs();
    let small = x.mul_add(erf_p(x), x);
    // (NaN fails the compare and stays NaN through the small form, selected below)
    let ac = if a > ERF_CLAMP { ERF_CLAMP } else { a };
    let (t, w, wl, fh, fl) = erfc_tail(ac);
    // erfc a = s (ph + pl), s = 2^k (e^-36 at least: normal), then 1 - erfc a rounded
    // once
    let s = pow2i(magic_int(t));
    let ph = w * fh;
    let pl = w.mul_add(fh, -ph) + w.mul_add(fl, wl * fh);
    let (r, rl) = fast_two_sum(1.0, -(ph * s));
    let big = (r + pl.mul_add(-s, rl)).copysign(x);
    if a >= ERF_SMALL { big } else { small }
}

/// erfc x.
#[inline(always)]
pub(super) fn erfc_f64(x: f64) -> f64 {
    let a = x.abs();
    let (h, l) = fast_two_sum(1.0, -x);
    let small = h + (-x).mul_add(erf_p(x), l);
    let ac = if a > ERFC_CLAMP { ERFC_CLAMP } else { a };
    let (t, w, wl, fh, fl) = erfc_tail(ac);
    // rounded once into the normal range, then scaled (once more into the subnormals)
    let m = w.mul_add(fh, w.mul_add(fl, wl * fh));
    let e = scale2(m, magic_int(t));
    let big = if x < 0.0 { 2.0 - e } else { e };
    // (NaN takes the small form, which keeps it)
    if a >= ERF_SMALL { big } else { small }
}

/// erfinv's initial x0/y for w = -ln(1 - y^2) < 6.25 (|y| < 0.99903), in w - 3.125
/// (relative error 2^-23.7).
const ERFINV_A: [f64; 10] = [
    1.653_654_674_959_562_2,
    0.240_158_037_833_861_53,
    -0.006_034_274_388_417_657,
    -0.000_740_502_151_944_916_5,
    0.000_187_252_671_989_439_25,
    -1.395_964_129_242_786_4e-5,
    -1.523_231_475_591_913_8e-6,
    4.355_937_376_428_125e-7,
    -8.727_516_758_511_034e-9,
    -5.060_225_176_781_108e-9,
];

/// The same for 6.25 <= w <= 36.05 (|y| up to 1 - 2^-53), in sqrt(w) - 4.25 (2^-24.7).
const ERFINV_B: [f64; 12] = [
    4.092_223_489_804_103,
    1.009_977_467_227_692_7,
    0.000_711_051_163_693_060_8,
    -0.000_601_887_248_298_343_1,
    0.000_218_828_227_592_244_8,
    -7.729_251_303_444_113e-5,
    1.299_089_150_733_028_7e-5,
    1.655_527_670_310_582e-6,
    1.078_869_331_138_934e-5,
    -8.430_728_125_663_459e-6,
    5.707_866_652_845_164e-7,
    4.927_138_937_784_123e-7,
];

/// w where erfinv switches from `ERFINV_A` to `ERFINV_B`.
const ERFINV_W: f64 = 6.25;
/// Up to this |y| (w = 6.215 < `ERFINV_W`), erfinv takes `ERFINV_A`: the fast path.
pub(super) const ERFINV_FAST: f64 = 0.999;
/// From this |y| (x = 0.4769) the Halley step's residual is taken on erfc (below, on
/// erf's small form).
const ERFINV_TAIL: f64 = 0.5;
/// Below this |y|, erfinv y = y sqrt(pi)/2 to float64's precision (the next term is
/// pi y^3 / 12 sqrt(pi)/2).
const ERFINV_TINY: f64 = 9.313_225_746_154_785e-10; // 2^-30
const TWO54: f64 = 18_014_398_509_481_984.0;
const TWO_M54: f64 = 5.551_115_123_125_783e-17;

/// erfinv y for |y| < 1 from x0's polynomial value p (x0 = |y| p).
#[inline(always)]
fn erfinv_step(y: f64, p: f64) -> f64 {
    let a = y.abs();
    let x0 = a * p;
    // the residual r = erf x0 - a: below ERFINV_TAIL, x0 + x0 P(x0^2) - a with x0 - a
    // exact (x0/a is in [0.88, 1.1]); above, (1 - a) - erfc x0 with 1 - a exact, and
    // erfc x0 = s (ph + pl) from the tail, (1 - a) - s ph exact too
    let small = x0.mul_add(erf_p(x0), x0 - a);
    let (t, w, wl, fh, fl) = erfc_tail(x0);
    let s = pow2i(magic_int(t));
    let ph = w * fh;
    let pl = w.mul_add(fh, -ph) + w.mul_add(fl, wl * fh);
    let big = ((1.0 - a) - ph * s) - pl * s;
    let r = if a >= ERFINV_TAIL { big } else { small };
    // Halley: erf'' = -2 x erf', so x1 = x0 - d/(1 + x0 d) with d = r / erf'(x0),
    // d/(1 + x0 d) = d (1 - x0 d) to within x0^2 d^3 (below 2^-60 relative)
    let d = r / (std::f64::consts::FRAC_2_SQRT_PI * (w * s));
    let x1 = x0 - d * x0.mul_add(-d, 1.0);
    // tiny |y|: y sqrt(pi)/2 with the product's error and the constant's low part, scaled
    // by 2^54 (exactly) so that neither underflows, rounded once, scaled back (rounded
    // once more into the subnormals)
    let b = a * TWO54;
    let th = b * HALF_SQRT_PI;
    let tiny = (th + (b.mul_add(HALF_SQRT_PI, -th) + b * HALF_SQRT_PI_LO)) * TWO_M54;
    if a < ERFINV_TINY { tiny } else { x1 }
}

/// w = -ln(1 - y^2) to about 2^-32 (x0 needs no more), a number for every y (garbage
/// outside (-1, 1), where the callers select): v = (1 - |y|)(1 + |y|) = 2^k m with m
/// in [sqrt(1/2), sqrt(2)), ln m = 2 atanh s = 2s (1 + z/3 + ... + z^4/9), s = (m - 1)/(m
/// + 1), z = s^2 <= 0.0295 (the rest of the series is below 2^-32).
#[inline(always)]
fn erfinv_w(y: f64) -> f64 {
    let a = y.abs();
    let (k, m) = split_log((1.0 - a) * (1.0 + a));
    let s = (m - 1.0) / (m + 1.0);
    let z = s * s;
    let l = (2.0 * s) * poly(z, [1.0, 1.0 / 3.0, 0.2, 1.0 / 7.0, 1.0 / 9.0]);
    -to_float(k).mul_add(std::f64::consts::LN_2, l)
}

/// erfinv y for |y| <= `ERFINV_FAST` (other inputs: unspecified): the fast path, the
/// bits of [`erfinv_f64`] there.
#[inline(always)]
pub(super) fn erfinv_fast(y: f64) -> f64 {
    let w = erfinv_w(y);
    erfinv_step(y, poly(w - 3.125, ERFINV_A)).copysign(y)
}

/// erfinv y: ±inf at ±1, NaN beyond and for NaN, -0 at -0.
#[inline(always)]
pub(super) fn erfinv_f64(y: f64) -> f64 {
    let a = y.abs();
    let w = erfinv_w(y);
    let pa = poly(w - 3.125, ERFINV_A);
    let pb = poly(w.sqrt() - 4.25, ERFINV_B);
    let x = erfinv_step(y, if w < ERFINV_W { pa } else { pb });
    if a < 1.0 {
        x.copysign(y)
    } else if a == 1.0 {
        f64::INFINITY.copysign(y)
    } else {
        f64::NAN
    }
}
