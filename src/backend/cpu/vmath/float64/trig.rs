//! float64 sin, cos, tan, atan, asin and acos: the float32 designs (`float32::trig`)
//! with float64's constants and polynomials.

#![allow(clippy::excessive_precision)]

use super::{MAGIC, div_pairs2, fast_two_sum, magic_int, poly, recip_approx, two_sum};

// pi/2 = P1 + P2 + P3 (each float64's nearest to what remains)
const P1: f64 = std::f64::consts::FRAC_PI_2;
const P2: f64 = 6.123_233_995_736_766e-17;
const P3: f64 = -1.497_384_904_859_169_8e-33;
const PIO2_HI: f64 = P1;
const PIO2_LO: f64 = P2;
const PIO4_HI: f64 = std::f64::consts::FRAC_PI_4;
const PIO4_LO: f64 = 3.061_616_997_868_383e-17;
const PI_HI: f64 = std::f64::consts::PI;
const PI_LO: f64 = 1.224_646_799_147_353_2e-16;

/// sin/cos/tan of |x| above this are recomputed with libm (fixup).
pub(super) const TRIG_MAX: f64 = 1_048_576.0;

/// x = n pi/2 + r, |r| <= pi/4, r = rh + rl (see `float32::trig::reduce_pio2`).
#[inline(always)]
fn reduce_pio2(x: f64) -> (i64, f64, f64) {
    let t = x.mul_add(std::f64::consts::FRAC_2_PI, MAGIC);
    let kf = t - MAGIC;
    let r1 = kf.mul_add(-P1, x);
    let p = kf * P2;
    let pe = kf.mul_add(P2, -p);
    let (s, e) = two_sum(r1, -p);
    let (rh, rl) = fast_two_sum(s, (e - pe) - kf * P3);
    (magic_int(t), rh, rl)
}

/// sin r = rh + sl, cos r = ch + cl (unnormalised two-float sums).
#[inline(always)]
fn sincos_r(rh: f64, rl: f64) -> (f64, f64, f64) {
    let z = rh * rh;
    let sp = poly(
        z,
        [
            -0.166_666_666_666_666_66,
            0.008_333_333_333_333_042,
            -0.000_198_412_698_409_621_04,
            2.755_731_907_354_502_7e-6,
            -2.505_207_074_086_099e-8,
            1.605_427_987_493_510_8e-10,
            -7.387_488_507_454_601e-13,
        ],
    );
    let sl = (rh * z).mul_add(sp, rl.mul_add(-0.5 * z, rl));
    let ze = rh.mul_add(rh, -z);
    let (ch, ce) = fast_two_sum(1.0, -0.5 * z);
    let cp = poly(
        z,
        [
            0.041_666_666_666_666_595,
            -0.001_388_888_888_887_334_6,
            2.480_158_728_900_611_5e-5,
            -2.755_731_421_840_090_5e-7,
            2.087_570_559_479_211_7e-9,
            -1.135_875_986_665_075_8e-11,
        ],
    );
    let cl = (z * z).mul_add(cp, ce - 0.5f64.mul_add(ze, rh * rl));
    (sl, ch, cl)
}

#[inline(always)]
pub(super) fn sincos_f64(x: f64, cos: bool) -> f64 {
    let (n, rh, rl) = reduce_pio2(x);
    let n = n.wrapping_add(i64::from(cos));
    let (sl, ch, cl) = sincos_r(rh, rl);
    let v = if n & 1 == 0 { rh + sl } else { ch + cl };
    let v = f64::from_bits(v.to_bits() ^ (((n & 2) as u64) << 62));
    if x == 0.0 && !cos { x } else { v }
}

#[inline(always)]
pub(super) fn tan_f64(x: f64) -> f64 {
    let (n, rh, rl) = reduce_pio2(x);
    let (sl, ch, cl) = sincos_r(rh, rl);
    let (sh, sl) = fast_two_sum(rh, sl);
    let (ch, cl) = fast_two_sum(ch, cl);
    let odd = n & 1 != 0;
    let (nh, nl, dh, dl) = if odd {
        (-ch, -cl, sh, sl)
    } else {
        (sh, sl, ch, cl)
    };
    let (qh, ql) = div_pairs2(nh, nl, dh, dl);
    if x == 0.0 { x } else { qh + ql }
}

/// The fixup of sin/cos/tan beyond `TRIG_MAX`: libm (whose reduction is exact).
pub(super) fn trig_fix(x: f64, f: fn(f64) -> f64) -> Option<f64> {
    (x.abs() > TRIG_MAX && x.is_finite()).then(|| f(x))
}

#[inline(always)]
pub(super) fn sin_one(x: f64) -> f64 {
    trig_fix(x, f64::sin).unwrap_or_else(|| sincos_f64(x, false))
}

#[inline(always)]
pub(super) fn cos_one(x: f64) -> f64 {
    trig_fix(x, f64::cos).unwrap_or_else(|| sincos_f64(x, true))
}

#[inline(always)]
pub(super) fn tan_one(x: f64) -> f64 {
    trig_fix(x, f64::tan).unwrap_or_else(|| tan_f64(x))
}

/// atan u = u + u z A(z), z = u^2, for |u| <= tan(pi/8).
pub(super) const ATAN_A: [f64; 12] = [
    -0.333_333_333_333_333_26,
    0.199_999_999_999_971_17,
    -0.142_857_142_853_207_86,
    0.111_111_110_840_839_27,
    -0.090_909_079_996_795_79,
    0.076_922_795_393_365_23,
    -0.066_661_799_504_916_69,
    0.058_765_699_303_423_67,
    -0.052_155_337_349_102_66,
    0.044_920_195_000_748_446,
    -0.033_209_112_590_728_2,
    0.014_928_589_347_187_512,
];

#[inline(always)]
pub(super) fn atan_f64(x: f64) -> f64 {
    // as float32's
    let ax = x.abs();
    let mid = ax > 0.414_213_562_373_095_03;
    let far = ax > 2.414_213_562_373_095;
    let (nh, nl) = two_sum(ax, -1.0);
    let (dh, dl) = two_sum(ax, 1.0);
    let big = if ax > 1.0e300 { 1.0e300 } else { ax };
    let (nh, nl, dh, dl) = if far {
        (-1.0, 0.0, big, 0.0)
    } else if mid {
        (nh, nl, dh, dl)
    } else {
        (ax, 0.0, 1.0, 0.0)
    };
    let (uh, ul) = div_pairs2(nh, nl, dh, dl);
    let (bh, bl) = if far {
        (PIO2_HI, PIO2_LO)
    } else if mid {
        (PIO4_HI, PIO4_LO)
    } else {
        (0.0, 0.0)
    };
    let z = uh * uh;
    let a = poly(z, ATAN_A);
    let (s, e) = fast_two_sum(bh, uh);
    let v = s + (e + bl + (uh * z).mul_add(a, ul));
    v.copysign(x)
}

/// asin u - u for |u| <= 1/2 (`tools/fit_vmath.py asin_f64`).
#[inline(always)]
fn asin_tail(u: f64) -> f64 {
    let z = u * u;
    let b = poly(
        z,
        [
            0.1666666666666676,
            0.07499999999970872,
            0.04464285717455343,
            0.030381942710278397,
            0.02237221492348905,
            0.017351613083324013,
            0.013980808507643492,
            0.011399005473318003,
            0.010779755042103347,
            0.0037082079722950798,
            0.02170324051568886,
            -0.020993322302915673,
            0.03262515198556311,
        ],
    );
    u * z * b
}

#[inline(always)]
fn asin_half(ax: f64) -> (f64, f64) {
    let h = 0.5 * (1.0 - ax);
    let sh = h.sqrt();
    let sl = (-sh).mul_add(sh, h) * (0.5 * recip_approx(sh));
    let sl = if h == 0.0 { 0.0 } else { sl };
    (sh, sl + asin_tail(sh))
}

#[inline(always)]
pub(super) fn asin_f64(x: f64) -> f64 {
    let ax = x.abs();
    let small = x + asin_tail(x);
    let (sh, st) = asin_half(ax);
    let (s, e) = fast_two_sum(PIO2_HI, -2.0 * sh);
    let big = (s + (e + (-2.0f64).mul_add(st, PIO2_LO))).copysign(x);
    if ax <= 0.5 { small } else { big }
}

#[inline(always)]
pub(super) fn acos_f64(x: f64) -> f64 {
    let ax = x.abs();
    let (s, e) = fast_two_sum(PIO2_HI, -x);
    let small = s + (e + (PIO2_LO - asin_tail(x)));
    let (sh, st) = asin_half(ax);
    let pos = 2.0f64.mul_add(st, 2.0 * sh);
    let (s, e) = fast_two_sum(PI_HI, -2.0 * sh);
    let neg = s + (e + (-2.0f64).mul_add(st, PI_LO));
    if ax <= 0.5 {
        small
    } else if x > 0.0 {
        pos
    } else {
        neg
    }
}
