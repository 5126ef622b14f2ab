//! float64 building blocks for float32 results that need more than float32's precision
//! in between, at about half the operations of the float64 kernels' 1-ulp forms: x^y's
//! exponent y ln x and e^w to about 2^-32 relative (one rounding to float32 at the end
//! then gives 0.5 ulp + 2^-8 ulp, double rounding aside); logaddexp's and logaddexp2's
//! max + log1p(e^-|d|) (2^-|d|, log2) to about 2^-40 (minimax polynomials of degree 8
//! and 7, `tools/fit_vmath.py exp_lite_f64 log1p_lite_f64`), which leaves room for the
//! cancellation of the max and the log (max < 0): 1.85 ulp at a cancellation of about
//! 3000 with 2^-32, measured).

#![allow(clippy::excessive_precision)]

use super::super::float64::{estrin, poly};

/// 1.5 * 2^52: adding it rounds a float64 below 2^51 in magnitude to an integer, read
/// from the low bits.
const MAGIC: f64 = 6_755_399_441_055_744.0;
// ln 2 = LN2_HI + LN2_LO, LN2_HI with 32 bits (k LN2_HI exact for |k| < 2^21)
const LN2_HI: f64 = 6.931_471_803_691_238_164_90e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;

/// e^r for |r| <= ln2/2 by Taylor's polynomial of degree 8 (remainder 2^-32).
const TAYLOR8: [f64; 9] = [
    1.0,
    1.0,
    0.5,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5040.0,
    1.0 / 40320.0,
];

/// e^w = 2^k e^r for w in [-700, 700] (NaN: not NaN; callers select), |r| <= ln2/2,
/// e^r by `c` (by Estrin's scheme where `short`, else Horner's), 2^k into the exponent
/// bits.
#[inline(always)]
fn exp_with<const N: usize>(w: f64, c: [f64; N], short: bool) -> f64 {
    let t = w.mul_add(std::f64::consts::LOG2_E, MAGIC);
    let kf = t - MAGIC;
    let r = kf.mul_add(-LN2_LO, kf.mul_add(-LN2_HI, w));
    let p = if short { estrin(r, c) } else { poly(r, c) };
    f64::from_bits(p.to_bits().wrapping_add(t.to_bits() << 52))
}

/// e^w to about 2^-32 relative (2^-8 float32 ulp), w in [-700, 700], Taylor's degree 8
/// by Estrin's scheme (three more multiplies than Horner's, half the depth), for x^y, whose two polynomials in a row are its
/// critical path: 256 x 256 float32 x^y on one thread 180 -> 168 µs, where erfc (whose
/// other work fills the gaps) measured 6% slower with it (AMD EPYC Zen 4).
#[inline(always)]
pub(super) fn exp_lite8_short(w: f64) -> f64 {
    exp_with(w, TAYLOR8, true)
}

/// e^r - 1 = r (c1 + c2 r + ...) for |r| <= ln2/2, 2^-40.1 relative to e^r, so that
/// e^0 is exactly 1 (`tools/fit_vmath.py exp_lite_f64`).
const EXPM1_LITE: [f64; 9] = [
    1.0,
    0.999_999_999_983_05,
    0.500_000_000_045_751,
    0.166_666_668_733_301_44,
    0.041_666_664_539_879_224,
    0.008_333_268_763_180_128,
    0.001_388_915_458_545_493_1,
    0.000_199_146_727_367_102_7,
    2.473_324_214_197_677e-5,
];
/// 2^r - 1 = r (c1 + c2 r + ...) for |r| <= 1/2, 2^-40.1 relative to 2^r
/// (`tools/fit_vmath.py exp2_lite_f64`).
const EXP2M1_LITE: [f64; 9] = [
    1.0,
    0.693_147_180_548_196_5,
    0.240_226_506_981_081_9,
    0.055_504_109_353_062_03,
    0.009_618_128_616_691_514,
    0.001_333_345_483_243_269_7,
    0.000_154_038_250_651_174_98,
    1.530_916_138_506_302e-5,
    1.317_906_921_105_445_1e-6,
];

/// e^w to about 2^-40 relative (exactly 1 at 0), w in [-700, 700]: the reduction of
/// [`exp_lite8_short`], a minimax polynomial of degree 8.
#[inline(always)]
pub(super) fn exp_lite(w: f64) -> f64 {
    exp_with(w, EXPM1_LITE, false)
}

/// 2^w to about 2^-40 relative (exactly 1 at 0), w in [-1000, 1000]: w = k + r with
/// k = round(w) and r exact, 2^r by a minimax polynomial of degree 8, 2^k into the
/// exponent bits.
#[inline(always)]
pub(super) fn exp2_lite(w: f64) -> f64 {
    let t = w + MAGIC;
    let r = w - (t - MAGIC);
    let p = poly(r, EXP2M1_LITE);
    f64::from_bits(p.to_bits().wrapping_add(t.to_bits() << 52))
}

/// 2 atanh(s)/s = 2 + (2/3) z + ... in z = s^2 for s in [0, 1/3], 2^-43.8 relative
/// (`tools/fit_vmath.py log1p_lite_f64`).
const TWO_ATANH_LITE: [f64; 8] = [
    1.999_999_999_999_866_8,
    0.666_666_666_818_118_1,
    0.399_999_971_759_569,
    0.285_716_288_015_164_13,
    0.222_152_772_611_159_87,
    0.183_116_680_156_141_63,
    0.140_601_165_164_509_68,
    0.200_955_464_877_592_22,
];
/// The same over ln 2 (log2(1 + e) = s P(z)), 2^-43.8 relative.
const TWO_ATANH_LOG2_LITE: [f64; 8] = [
    2.885_390_081_777_735,
    0.961_796_694_144_367_5,
    0.577_077_975_623_551_5,
    0.412_201_471_380_948_26,
    0.320_498_713_012_548_1,
    0.264_181_412_979_047_24,
    0.202_845_282_675_212_18,
    0.289_915_825_957_652_64,
];

/// ln(1 + e) for e in [0, 1] to about 2^-43.8 relative: s P(z), s = e/(2 + e),
/// z = s^2, P minimax of degree 7 (the Taylor series needed four terms more).
#[inline(always)]
pub(super) fn log1p_lite(e: f64) -> f64 {
    let s = e / (2.0 + e);
    s * poly(s * s, TWO_ATANH_LITE)
}

/// log2(1 + e) for e in [0, 1], as [`log1p_lite`] (the 1/ln 2 in the coefficients).
#[inline(always)]
pub(super) fn log2_1p_lite(e: f64) -> f64 {
    let s = e / (2.0 + e);
    s * poly(s * s, TWO_ATANH_LOG2_LITE)
}

/// 2 atanh s = ln((1 + s)/(1 - s)) = 2s (1 + z/3 + z^2/5 + ...), z = s^2, to z^(N-1)
/// (by Estrin's scheme where `short`).
#[inline(always)]
fn two_atanh<const N: usize>(s: f64, short: bool) -> f64 {
    let z = s * s;
    let c: [f64; N] = const { odd_reciprocals() };
    (2.0 * s) * if short { estrin(z, c) } else { poly(z, c) }
}

/// 1, 1/3, 1/5, ...: computed by the compiler (`array::from_fn` here was a loop of
/// divisions that the release build left in every call).
const fn odd_reciprocals<const N: usize>() -> [f64; N] {
    let mut c = [0.0; N];
    let mut i = 0;
    while i < N {
        c[i] = 1.0 / (2 * i + 1) as f64;
        i += 1;
    }
    c
}

/// ln v for a positive normal float64 v: v = 2^k m, m in [sqrt(1/2), sqrt(2)),
/// ln m = 2 atanh((m - 1)/(m + 1)) (|s| <= 0.172: the series to z^6, remainder 2^-39,
/// so that y ln x is within 2^-33 where x^y is a finite nonzero float32).
#[inline(always)]
pub(super) fn ln_lite(v: f64) -> f64 {
    let bits = v.to_bits() as i64;
    let k = bits.wrapping_sub(0x3FE6_A09E_667F_3BCD) >> 52;
    let m = f64::from_bits(bits.wrapping_sub(k << 52) as u64);
    // k as a float through MAGIC (no int-to-float conversion of 64-bit lanes needed)
    let kf = f64::from_bits((MAGIC.to_bits() as i64).wrapping_add(k) as u64) - MAGIC;
    // (Estrin: x^y's critical path, see `exp_lite8_short`)
    let l = two_atanh::<7>((m - 1.0) / (m + 1.0), true);
    kf.mul_add(LN2_HI, kf.mul_add(LN2_LO, l))
}
