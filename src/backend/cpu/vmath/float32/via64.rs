//! float64 building blocks for float32 results that need more than float32's precision
//! in between, at about half the operations of the float64 kernels' 1-ulp forms: x^y's
//! exponent y ln x and e^w to about 2^-32 relative (one rounding to float32 at the end
//! then gives 0.5 ulp + 2^-8 ulp, double rounding aside); logaddexp's max +
//! log1p(e^-|d|) to about 2^-42, which leaves room for the cancellation of the max and
//! the log (max < 0): 1.85 ulp at a cancellation of about 3000 with 2^-32, measured).

#![allow(clippy::excessive_precision)]

use super::super::float64::{estrin, poly};

/// 1.5 * 2^52: adding it rounds a float64 below 2^51 in magnitude to an integer, read
/// from the low bits.
const MAGIC: f64 = 6_755_399_441_055_744.0;
// ln 2 = LN2_HI + LN2_LO, LN2_HI with 32 bits (k LN2_HI exact for |k| < 2^21)
const LN2_HI: f64 = 6.931_471_803_691_238_164_90e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;

/// e^r for |r| <= ln2/2 by Taylor's polynomial of degree 10 (remainder 2^-42).
const TAYLOR10: [f64; 11] = [
    1.0,
    1.0,
    0.5,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5040.0,
    1.0 / 40320.0,
    1.0 / 362_880.0,
    1.0 / 3_628_800.0,
];
/// Degree 8 (remainder 2^-32).
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

/// e^w to about 2^-42 relative, w in [-700, 700].
#[inline(always)]
pub(super) fn exp_lite10(w: f64) -> f64 {
    exp_with(w, TAYLOR10, false)
}

/// e^w to about 2^-32 relative (2^-8 float32 ulp), w in [-700, 700].
#[inline(always)]
pub(super) fn exp_lite8(w: f64) -> f64 {
    exp_with(w, TAYLOR8, false)
}

/// [`exp_lite8`] with a shorter dependency chain (Estrin's scheme: three more
/// multiplies, half the depth), for x^y, whose two polynomials in a row are its
/// critical path: 256 x 256 float32 x^y on one thread 180 -> 168 µs, where erfc (whose
/// other work fills the gaps) measured 6% slower with it (AMD EPYC Zen 4).
#[inline(always)]
pub(super) fn exp_lite8_short(w: f64) -> f64 {
    exp_with(w, TAYLOR8, true)
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

/// ln(1 + e) for e in [0, 1]: 2 atanh(e/(2 + e)) (relatively accurate for tiny e;
/// s <= 1/3: the series to z^11, remainder 2^-42).
#[inline(always)]
pub(super) fn log1p_unit(e: f64) -> f64 {
    two_atanh::<12>(e / (2.0 + e), false)
}
