//! float32 sin, cos, tan, atan, asin and acos.

#![allow(clippy::excessive_precision)]

use super::{MAGIC, div_pairs, fast_two_sum, magic_int, poly, recip_approx, two_sum};

// pi/2 = P1 + P2 + P3 (each float32's nearest to what remains)
const P1: f32 = 1.570_796_370_506_286_621_093_75;
const P2: f32 = -4.371_138_828_673_793e-8;
const P3: f32 = -1.715_124_510_005_881_9e-15;
// pi/2 and pi as two-float sums
const PIO2_HI: f32 = P1;
const PIO2_LO: f32 = P2;
const PI_HI: f32 = 3.141_592_741_012_573_242_187_5;
const PI_LO: f32 = -8.742_277_657_347_586e-8;

/// sin/cos/tan of |x| above this are recomputed from float64 libm (fixup); the
/// reduction is exact enough below (checked exhaustively).
pub(super) const TRIG_MAX: f32 = 65_536.0;

/// x = n pi/2 + r with |r| <= pi/4 (for |x| <= `TRIG_MAX`), r = rh + rl exact to about
/// 2^-48 relative: Cody-Waite with three parts of pi/2, the products kept exact with
/// fmas. Returns (n, rh, rl).
#[inline(always)]
fn reduce_pio2(x: f32) -> (i32, f32, f32) {
    let t = x.mul_add(std::f32::consts::FRAC_2_PI, MAGIC);
    let kf = t - MAGIC;
    let r1 = kf.mul_add(-P1, x); // exact
    let p = kf * P2;
    let pe = kf.mul_add(P2, -p); // kf P2 = p + pe
    let (s, e) = two_sum(r1, -p);
    let (rh, rl) = fast_two_sum(s, (e - pe) - kf * P3);
    (magic_int(t), rh, rl)
}

/// sin r = rh + sl and cos r = ch + cl for r = rh + rl, |r| <= pi/4, each an
/// unnormalised two-float sum (|sl| <= |rh|/10, |cl| <= 1/50): sin r = r + r z S(z),
/// cos r = 1 - z/2 + z^2 C(z) (`tools/fit_vmath.py sin_f32 cos_f32`), with 1 - z/2
/// and z's rounding error kept exact.
#[inline(always)]
fn sincos_r(rh: f32, rl: f32) -> (f32, f32, f32) {
    let z = rh * rh;
    let sp = poly(
        z,
        [
            -0.166_666_671_633_720_4,
            0.008_333_379_402_756_691,
            -0.000_198_530_920_897_610_49,
            2.833_072_812_791_215_3e-6,
        ],
    );
    let sl = (rh * z).mul_add(sp, rl.mul_add(-0.5 * z, rl));
    let ze = rh.mul_add(rh, -z);
    let (ch, ce) = fast_two_sum(1.0, -0.5 * z);
    let cp = poly(
        z,
        [
            0.041_666_645_556_688_31,
            -0.001_388_731_063_343_584_5,
            2.443_256_744_300_015_3e-5,
        ],
    );
    let cl = (z * z).mul_add(cp, ce - 0.5f32.mul_add(ze, rh * rl));
    (sl, ch, cl)
}

/// sin (`cos == false`) or cos of x for |x| <= `TRIG_MAX` (NaN for infinities and NaN;
/// the fixup replaces larger inputs).
#[inline(always)]
pub(super) fn sincos_f32(x: f32, cos: bool) -> f32 {
    let (n, rh, rl) = reduce_pio2(x);
    let n = n.wrapping_add(i32::from(cos));
    let (sl, ch, cl) = sincos_r(rh, rl);
    let v = if n & 1 == 0 { rh + sl } else { ch + cl };
    let v = f32::from_bits(v.to_bits() ^ (((n & 2) as u32) << 30));
    // sin keeps -0 (cos of 0 is 1 by the formula)
    if x == 0.0 && !cos { x } else { v }
}

/// tan x for |x| <= `TRIG_MAX`: sin r / cos r for even n, -cos r / sin r for odd, the
/// two sums renormalised and divided with one correction.
#[inline(always)]
pub(super) fn tan_f32(x: f32) -> f32 {
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
    let v = div_pairs(nh, nl, dh, dl);
    if x == 0.0 { x } else { v }
}

/// The fixup of sin/cos/tan: a finite input beyond `TRIG_MAX`, from float64 libm
/// (rounded once more: within 1 ulp).
pub(super) fn trig_fix(x: f32, f: fn(f64) -> f64) -> Option<f32> {
    (x.abs() > TRIG_MAX && x.is_finite()).then(|| f(f64::from(x)) as f32)
}

#[inline(always)]
pub(super) fn sin_one(x: f32) -> f32 {
    trig_fix(x, f64::sin).unwrap_or_else(|| sincos_f32(x, false))
}

#[inline(always)]
pub(super) fn cos_one(x: f32) -> f32 {
    trig_fix(x, f64::cos).unwrap_or_else(|| sincos_f32(x, true))
}

#[inline(always)]
pub(super) fn tan_one(x: f32) -> f32 {
    trig_fix(x, f64::tan).unwrap_or_else(|| tan_f32(x))
}

/// atan u = u + u z A(z), z = u^2, for |u| <= tan(pi/8) (`tools/fit_vmath.py atan_f32`).
pub(super) const ATAN_A: [f32; 6] = [
    -0.333_333_313_465_118_4,
    0.199_998_021_125_793_46,
    -0.142_791_315_913_200_38,
    0.110_095_828_771_591_19,
    -0.082_831_501_960_754_4,
    0.043_510_649_353_265_76,
];

#[inline(always)]
pub(super) fn atan_f32(x: f32) -> f32 {
    // |x| <= tan(pi/8): atan u with u = |x|; up to tan(3pi/8): pi/4 + atan u with
    // u = (|x| - 1)/(|x| + 1); beyond: pi/2 + atan u with u = -1/|x|. u = uh + ul from
    // one division and a correction; atan u = u + u z A(z) (`tools/fit_vmath.py
    // atan_f32`); the base plus uh as an exact sum.
    let ax = x.abs();
    let mid = ax > 0.414_213_57;
    let far = ax > 2.414_213_5;
    let (nh, nl) = two_sum(ax, -1.0);
    let (dh, dl) = two_sum(ax, 1.0);
    // (beyond 1e30, -1/|x| is below atan's resolution next to pi/2; NaN stays)
    let big = if ax > 1.0e30 { 1.0e30 } else { ax };
    let (nh, nl, dh, dl) = if far {
        (-1.0, 0.0, big, 0.0)
    } else if mid {
        (nh, nl, dh, dl)
    } else {
        (ax, 0.0, 1.0, 0.0)
    };
    let inv = 1.0 / dh;
    let uh = nh * inv;
    let ul = (-uh).mul_add(dl, nl + (-uh).mul_add(dh, nh)) * inv;
    let (bh, bl) = if far {
        (PIO2_HI, PIO2_LO)
    } else if mid {
        (
            0.785_398_185_253_143_310_546_875,
            -2.185_569_414_336_896_4e-8,
        )
    } else {
        (0.0, 0.0)
    };
    let z = uh * uh;
    let a = poly(z, ATAN_A);
    let (s, e) = fast_two_sum(bh, uh);
    let v = s + (e + bl + (uh * z).mul_add(a, ul));
    v.copysign(x)
}

/// asin u = u + u^3 B(u^2) for |u| <= 1/2 (`tools/fit_vmath.py asin_f32`), without u.
#[inline(always)]
fn asin_tail(u: f32) -> f32 {
    let z = u * u;
    let b = poly(
        z,
        [
            0.166_666_671_633_720_4,
            0.074_999_496_340_751_65,
            0.044_659_856_706_857_68,
            0.030_113_369_226_455_69,
            0.024_601_723_998_785_02,
            0.007_513_981_778_174_639,
            0.034_644_808_620_214_46,
        ],
    );
    u * z * b
}

/// For |x| > 1/2: s = sh + sl = sqrt((1 - |x|)/2) (1 - |x| is exact there), and
/// asin s - sh (so asin |x| = pi/2 - 2 asin s, acos |x| = 2 asin s).
#[inline(always)]
fn asin_half(ax: f32) -> (f32, f32) {
    let h = 0.5 * (1.0 - ax);
    let sh = h.sqrt();
    // the square root's residual, exact in an fma, over 2 sh (0 where h is 0)
    let sl = (-sh).mul_add(sh, h) * (0.5 * recip_approx(sh));
    let sl = if h == 0.0 { 0.0 } else { sl };
    (sh, sl + asin_tail(sh))
}

#[inline(always)]
pub(super) fn asin_f32(x: f32) -> f32 {
    let ax = x.abs();
    let small = x + asin_tail(x);
    let (sh, st) = asin_half(ax);
    let (s, e) = fast_two_sum(PIO2_HI, -2.0 * sh);
    let big = (s + (e + (-2.0f32).mul_add(st, PIO2_LO))).copysign(x);
    // NaN and |x| > 1 (a NaN square root) take the second
    if ax <= 0.5 { small } else { big }
}

#[inline(always)]
pub(super) fn acos_f32(x: f32) -> f32 {
    let ax = x.abs();
    let (s, e) = fast_two_sum(PIO2_HI, -x);
    let small = s + (e + (PIO2_LO - asin_tail(x)));
    let (sh, st) = asin_half(ax);
    let pos = 2.0f32.mul_add(st, 2.0 * sh);
    let (s, e) = fast_two_sum(PI_HI, -2.0 * sh);
    let neg = s + (e + (-2.0f32).mul_add(st, PI_LO));
    if ax <= 0.5 {
        small
    } else if x > 0.0 {
        pos
    } else {
        neg
    }
}
