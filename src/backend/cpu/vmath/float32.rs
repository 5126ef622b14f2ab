//! The float32 functions, evaluated in float32 (see the module docs of `vmath` and
//! docs/kernels.md): exp, expm1, log, log1p, tanh, sigmoid, sin and cos.
//!
//! Shared pieces: `exp_core` gives e^a as 2^k (w + lo), a float32 and a correction,
//! good to about 2^-29 relative (the reduced argument is carried as an exact sum, and
//! the leading terms of the series as exact two-float sums), so exp, expm1, tanh and
//! sigmoid each round once at the end; `log_tail` sums k ln2 + log(1 + f) the same way.

#![allow(clippy::excessive_precision)]

use super::{Func, scalar_fns, slice_fns};

/// 1.5 * 2^23: adding it rounds a float32 of magnitude below 2^22 to an integer, which
/// is then read from the low bits (no float-to-int conversion).
const MAGIC: f32 = 12_582_912.0;

/// a + b = s + e exactly, where |a| >= |b| or a = 0.
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

/// Horner's rule, highest coefficient last in `c`.
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

// ln 2 = LN2_HI + LN2_LO: LN2_HI is float32's ln 2 (k LN2_HI is exact inside an fma)
const LN2_HI: f32 = 0.693_147_182_464_599_609_375;
const LN2_LO: f32 = -1.904_654_299_957_768e-9;

/// e^a = 2^k (w + lo) for a finite a in [-105, 89.5], to about 2^-29 relative: a = k ln2
/// + r, |r| <= ln2/2, with r = rh + rl exact to float32's precision squared; then
/// e^r = 1 + r + r^2/2 + r^3 v(r) (v: `tools/fit_vmath.py exp_f32`), whose first
/// three terms are summed exactly.
#[inline(always)]
fn exp_core(a: f32) -> (i32, f32, f32) {
    let t = a.mul_add(std::f32::consts::LOG2_E, MAGIC);
    let kf = t - MAGIC;
    let k = magic_int(t);
    let rh = kf.mul_add(-LN2_HI, a); // exact (the product is exact, and so is the difference)
    let rl = kf * -LN2_LO;
    let z = rh * rh;
    let ze = rh.mul_add(rh, -z); // rh^2 = z + ze
    let (w1, e1) = fast_two_sum(1.0, rh);
    let (w, e2) = fast_two_sum(w1, 0.5 * z);
    let v = poly(
        rh,
        [
            0.166_666_656_732_559_2,
            0.041_666_463_017_463_684,
            0.008_333_570_323_884_487,
            0.001_393_507_700_413_465_5,
            0.000_197_404_064_238_071_44,
        ],
    );
    // the small terms: rl (1 + rh), ze/2, the two sums' errors, and r^3 v
    let small = rl.mul_add(rh, rl) + 0.5 * ze;
    let lo = (z * rh).mul_add(v, (e2 + small) + e1);
    // normalised: |lo| <= ulp(w)/2 (the callers divide by such sums)
    let (w, lo) = fast_two_sum(w, lo);
    (k, w, lo)
}

#[inline(always)]
fn exp_f32(x: f32) -> f32 {
    // beyond this range the result is 0 or inf anyway; NaN stays NaN through clamp
    let a = x.clamp(-105.0, 89.5);
    let t = a.mul_add(std::f32::consts::LOG2_E, MAGIC);
    let kf = t - MAGIC;
    let k = magic_int(t);
    let rh = kf.mul_add(-LN2_HI, a); // exact
    let rl = kf * -LN2_LO;
    let u = poly(
        rh,
        [
            0.5,
            0.166_666_656_732_559_2,
            0.041_666_463_017_463_684,
            0.008_333_570_323_884_487,
            0.001_393_507_700_413_465_5,
            0.000_197_404_064_238_071_44,
        ],
    );
    // 1 + r + r^2 u with 1 + rh as an exact sum
    let c = (rh * rh).mul_add(u, rl.mul_add(rh, rl));
    let (w, e) = fast_two_sum(1.0, rh);
    let m = w + (e + c);
    // 2^k in two steps (k is in [-152, 129]): m 2^k1 is exact, the second product rounds
    // once, into the subnormals or to infinity where the result lies there
    let k1 = k >> 1;
    m * pow2i(k1) * pow2i(k - k1)
}

#[inline(always)]
fn expm1_f32(x: f32) -> f32 {
    // e^x - 1 = 2^k (w + lo) - 1: 2^k w - 1 as an exact sum, then the rest. Below -30
    // the result is -1 to float32's precision.
    let a = x.clamp(-30.0, 89.5);
    let (k, w, lo) = exp_core(a);
    let k1 = k >> 1;
    let (s1, s2) = (pow2i(k1), pow2i(k - k1));
    let (h, e) = two_sum(w * s1 * s2, -1.0);
    let y = h + (e + lo * s1 * s2);
    // -0 keeps its sign; beyond float32's largest e^x, infinity
    if x == 0.0 {
        x
    } else if x > 88.722_831_726_074_22 {
        f32::INFINITY
    } else {
        y
    }
}

/// (1 - E)/(1 + E) or 1/(1 + E) or E/(1 + E), for E = e^a = 2^k (w + lo) with a <= 0:
/// the numerator and denominator as two-float sums, one division, and one correction
/// step (`q0 + (n - q0 d)/d`), so the result rounds about once.
#[inline(always)]
fn div_pairs(nh: f32, nl: f32, dh: f32, dl: f32) -> f32 {
    let inv = 1.0 / dh;
    let q0 = nh * inv;
    let res = (-q0).mul_add(dl, nl + (-q0).mul_add(dh, nh));
    res.mul_add(inv, q0)
}

#[inline(always)]
fn tanh_f32(x: f32) -> f32 {
    let ax = x.abs();
    // |x| < 0.55: x + x^3 P(x^2) (`tools/fit_vmath.py tanh_f32`)
    let z = x * x;
    let p = poly(
        z,
        [
            -0.333_333_343_267_440_8,
            0.133_333_951_234_817_5,
            -0.053_981_110_453_605_65,
            0.021_992_204_710_841_18,
            -0.009_448_678_232_729_435,
            0.004_914_375_487_715_006,
            -0.002_399_126_067_757_606_5,
        ],
    );
    let small = (x * z).mul_add(p, x);
    // beyond: (1 - E)/(1 + E), E = e^-2|x| (tanh is 1 to float32's precision past 9.1)
    let a = -2.0 * ax;
    let a = if a < -40.0 { -40.0 } else { a };
    let (k, w, lo) = exp_core(a);
    let s = pow2i(k);
    let (ew, el) = (s * w, s * lo);
    let (nh, ne) = fast_two_sum(1.0, -ew);
    let (dh, de) = fast_two_sum(1.0, ew);
    let big = div_pairs(nh, ne - el, dh, de + el).copysign(x);
    // NaN fails the compare and takes the formula's NaN
    if ax < 0.55 { small } else { big }
}

#[inline(always)]
fn sigmoid_f32(x: f32) -> f32 {
    // E = e^-|x|; x >= 0: 1/(1 + E); x < 0: E/(1 + E), its 2^k applied last
    let a = -x.abs();
    let a = if a < -105.0 { -105.0 } else { a };
    let (k, w, lo) = exp_core(a);
    // in the denominator E only counts above 2^-100 (1 + E is 1 below 2^-25)
    let s = pow2i(if k < -100 { -100 } else { k });
    let (ew, el) = (s * w, s * lo);
    let (dh, de) = fast_two_sum(1.0, ew);
    let neg = x < 0.0;
    let (nh, nl) = if neg { (w, lo) } else { (1.0, 0.0) };
    let q = div_pairs(nh, nl, dh, de + el);
    let kk = if neg { k } else { 0 };
    let k1 = kk >> 1;
    q * pow2i(k1) * pow2i(kk - k1)
}

// ln 2 = LOG_LN2_HI + LOG_LN2_LO, LOG_LN2_HI with 15 bits: k LOG_LN2_HI is exact for
// |k| < 2^9
const LOG_LN2_HI: f32 = 0.693_145_751_953_125;
const LOG_LN2_LO: f32 = 1.428_606_765_330_187_045e-6;

/// k ln2 + log(1 + f) + extra, for f in [sqrt(1/2) - 1, sqrt(2) - 1] exact and a small
/// correction `extra`: k ln2's leading part plus f as an exact sum, then
/// log(1 + f) - f = f^2 Q(f) (`tools/fit_vmath.py log_f32`) with the small terms.
#[inline(always)]
fn log_tail(kf: f32, f: f32, extra: f32) -> f32 {
    let hi = kf * LOG_LN2_HI;
    let (s, e) = fast_two_sum(hi, f); // |hi| >= ln2 > |f| unless k = 0
    let q = poly(
        f,
        [
            -0.5,
            0.333_333_134_651_184_1,
            -0.250_000_119_209_289_55,
            0.200_020_745_396_614_07,
            -0.166_678_562_760_353_1,
            0.142_201_915_383_338_93,
            -0.124_081_358_313_560_49,
            0.118_864_908_814_430_24,
            -0.116_610_914_468_765_26,
            0.067_327_551_543_712_62,
        ],
    );
    let corr = (f * f).mul_add(q, e + kf.mul_add(LOG_LN2_LO, extra));
    s + corr
}

/// (k, m) with v = 2^k m and m in [sqrt(1/2), sqrt(2)), for a positive normal v: k
/// counted from sqrt(1/2)'s bits (an arithmetic shift), m with k taken out.
#[inline(always)]
fn split_log(v: f32) -> (i32, f32) {
    let bits = v.to_bits() as i32;
    let k = bits.wrapping_sub(0x3F35_04F3) >> 23;
    (k, f32::from_bits(bits.wrapping_sub(k << 23) as u32))
}

#[inline(always)]
fn log_f32(x: f32) -> f32 {
    // subnormals scaled by 2^23 first
    let sub = x < f32::MIN_POSITIVE;
    let v = if sub { x * 8_388_608.0 } else { x };
    let (k, m) = split_log(v);
    let kf = k as f32 - if sub { 23.0 } else { 0.0 };
    let y = log_tail(kf, m - 1.0, 0.0);
    if x == f32::INFINITY {
        x
    } else if x == 0.0 {
        f32::NEG_INFINITY
    } else if x > 0.0 {
        y
    } else {
        f32::NAN // negative or NaN
    }
}

#[inline(always)]
fn log1p_f32(x: f32) -> f32 {
    // |x| small (1 + x in [sqrt(1/2), sqrt(2))): the polynomial at f = x directly.
    // Otherwise u = 1 + x = 2^k m exactly as u + ue, and log(1 + x) = log u + ue/u
    // (ue/u is at most 2^-24 relative to the result: 1/u from its bits and one Newton
    // step, 2^-5 relative, is plenty).
    let (u, ue) = two_sum(1.0, x);
    let small = x > -0.292_893_2 && x < 0.414_213_57;
    let (k, m) = split_log(u);
    // (beyond 1e30, where ue/u is negligible, 1e30 stands for u)
    let uc = if u < 1.0e30 { u } else { 1.0e30 };
    let inv = f32::from_bits(0x7EF3_11C3_u32.wrapping_sub(uc.to_bits()));
    let inv = inv * (2.0 - uc * inv);
    let (kf, f, extra) = if small {
        (0.0, x, 0.0)
    } else {
        (k as f32, m - 1.0, ue * inv)
    };
    let y = log_tail(kf, f, extra);
    if x == 0.0 || x == f32::INFINITY {
        x // keeps -0
    } else if u == 0.0 {
        f32::NEG_INFINITY
    } else if u > 0.0 {
        y
    } else {
        f32::NAN // below -1, or NaN
    }
}

// pi/2 = P1 + P2 + P3 (each float32's nearest to what remains)
const P1: f32 = 1.570_796_370_506_286_621_093_75;
const P2: f32 = -4.371_139_000_186_241_4e-8;
const P3: f32 = -1.715_124_454_866_492_7e-15;

/// sin (`cos == false`) or cos of x for |x| <= `TRIG_MAX`: x = n pi/2 + r with
/// |r| <= pi/4, r = rh + rl exact to about 2^-48 relative (Cody-Waite with three parts
/// of pi/2, the products kept exact with fmas), then sin r or cos r (the quadrant picks
/// which, and the sign).
#[inline(always)]
fn sincos_f32(x: f32, cos: bool) -> f32 {
    let t = x.mul_add(std::f32::consts::FRAC_2_PI, MAGIC);
    let kf = t - MAGIC;
    let n = magic_int(t).wrapping_add(i32::from(cos));
    let r1 = kf.mul_add(-P1, x); // exact
    let p = kf * P2;
    let pe = kf.mul_add(P2, -p); // kf P2 = p + pe
    let (s, e) = two_sum(r1, -p);
    let (rh, rl) = fast_two_sum(s, (e - pe) - kf * P3);
    let z = rh * rh;
    // sin r = rh + rl (1 - z/2) + rh z S(z)
    let sp = poly(
        z,
        [
            -0.166_666_671_633_720_4,
            0.008_333_379_402_756_691,
            -0.000_198_530_920_897_610_49,
            2.833_072_812_791_215_3e-6,
        ],
    );
    let sin_r = rh + (rh * z).mul_add(sp, rl.mul_add(-0.5 * z, rl));
    // cos r = 1 - z/2 + z^2 C(z), with 1 - z/2 and z's rounding error kept exact
    let ze = rh.mul_add(rh, -z);
    let (w, we) = fast_two_sum(1.0, -0.5 * z);
    let cp = poly(
        z,
        [
            0.041_666_667_908_430_1,
            -0.001_388_898_002_915_084_4,
            2.482_202_216_924_634e-5,
            -2.888_125_436_584_232_4e-7,
        ],
    );
    let cos_r = w + (z * z).mul_add(cp, we - 0.5f32.mul_add(ze, rh * rl));
    let v = if n & 1 == 0 { sin_r } else { cos_r };
    let v = f32::from_bits(v.to_bits() ^ (((n & 2) as u32) << 30));
    // sin keeps -0 (cos of 0 is 1 by the formula)
    if x == 0.0 && !cos { x } else { v }
}

/// sin/cos of |x| above this are recomputed from float64 libm (fixup); the reduction is
/// exact enough below (checked exhaustively).
pub const TRIG_MAX: f32 = 65_536.0;

/// The fixup of sin/cos: a finite input beyond `TRIG_MAX`, from float64 libm (rounded
/// once more: within 1 ulp).
fn trig_fix(x: f32, f: fn(f64) -> f64) -> Option<f32> {
    (x.abs() > TRIG_MAX && x.is_finite()).then(|| f(f64::from(x)) as f32)
}

#[inline(always)]
fn sin_one(x: f32) -> f32 {
    trig_fix(x, f64::sin).unwrap_or_else(|| sincos_f32(x, false))
}

#[inline(always)]
fn cos_one(x: f32) -> f32 {
    trig_fix(x, f64::cos).unwrap_or_else(|| sincos_f32(x, true))
}

slice_fns! { f32;
    exp: |x| exp_f32(x);
    expm1: |x| expm1_f32(x);
    log: |x| log_f32(x);
    log1p: |x| log1p_f32(x);
    tanh: |x| tanh_f32(x);
    sigmoid: |x| sigmoid_f32(x);
    sin: |x| sincos_f32(x, false), fixup(TRIG_MAX, |x| trig_fix(x, f64::sin));
    cos: |x| sincos_f32(x, true), fixup(TRIG_MAX, |x| trig_fix(x, f64::cos));
}

scalar_fns! { f32;
    /// e^x of one element (the bits of [`exp()`]).
    exp1 = exp_f32;
    /// e^x - 1 of one element.
    expm11 = expm1_f32;
    /// ln x of one element.
    log1 = log_f32;
    /// ln(1 + x) of one element.
    log1p1 = log1p_f32;
    /// tanh x of one element.
    tanh1 = tanh_f32;
    /// 1/(1 + e^-x) of one element.
    sigmoid1 = sigmoid_f32;
    /// sin x of one element.
    sin1 = sin_one;
    /// cos x of one element.
    cos1 = cos_one;
}

/// Every float32 function, for tests and tools.
pub const FUNCS: &[Func<f32>] = &[
    Func { name: "exp", at: exp::at, one: exp1 },
    Func { name: "expm1", at: expm1::at, one: expm11 },
    Func { name: "log", at: log::at, one: log1 },
    Func { name: "log1p", at: log1p::at, one: log1p1 },
    Func { name: "tanh", at: tanh::at, one: tanh1 },
    Func { name: "sigmoid", at: sigmoid::at, one: sigmoid1 },
    Func { name: "sin", at: sin::at, one: sin1 },
    Func { name: "cos", at: cos::at, one: cos1 },
];
