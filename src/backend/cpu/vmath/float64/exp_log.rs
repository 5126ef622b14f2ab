//! float64 exp, expm1, tanh, sigmoid, log and log1p: the float32 designs
//! (`float32::exp_log`) with float64's constants and longer polynomials, except log,
//! whose polynomial in f would be too long in float64: log(1 + f) = f - f^2/2 +
//! s (f^2/2 + R(s^2)) with s = f/(2 + f) (one division), as fdlibm.

#![allow(clippy::excessive_precision)]

use super::{
    MAGIC, div_pairs, fast_two_sum, magic_int, poly, pow2i, recip_approx, to_float, two_sum,
};

// ln 2 = LN2_HI + LN2_LO: LN2_HI is float64's ln 2 (k LN2_HI is exact inside an fma)
const LN2_HI: f64 = std::f64::consts::LN_2;
const LN2_LO: f64 = 2.319_046_813_846_299_6e-17;

/// e^r = 1 + r + r^2 u(r) on |r| <= ln2/2 (`tools/fit_vmath.py exp_f64`).
const EXP_U: [f64; 11] = [
    0.5,
    0.166_666_666_666_666_8,
    0.041_666_666_666_666_41,
    0.008_333_333_333_319_273,
    0.001_388_888_888_903_636_3,
    0.000_198_412_698_918_191_2,
    2.480_158_701_764_073e-5,
    2.755_723_875_591_763e-6,
    2.755_753_392_156_965_3e-7,
    2.511_084_826_948_850_5e-8,
    2.083_588_510_869_329e-9,
];

/// Below this |x|, e^x and e^-x are normal floats: the fast path of exp and sigmoid.
pub(super) const EXP_FAST: f64 = 708.0;

/// (t, rh, rl): t = k + MAGIC (k = round(a / ln2)), a = k ln2 + rh + rl, rh exact.
#[inline(always)]
fn reduce(a: f64) -> (f64, f64, f64) {
    let t = a.mul_add(std::f64::consts::LOG2_E, MAGIC);
    let kf = t - MAGIC;
    (t, kf.mul_add(-LN2_HI, a), kf * -LN2_LO)
}

/// e^(a + al) = 2^k (w + lo) for a small al (|al| <= ulp(a)), to about 2^-58 relative:
/// e^r = 1 + r + r^2/2 + r^3 v(r) (`tools/fit_vmath.py expv_f64`), the first three
/// terms summed exactly.
#[inline(always)]
pub(super) fn exp_core(a: f64, al: f64) -> (f64, f64, f64) {
    let (t, rh, rl) = reduce(a);
    let rl = rl + al;
    let z = rh * rh;
    let ze = rh.mul_add(rh, -z);
    let (w1, e1) = fast_two_sum(1.0, rh);
    let (w, e2) = fast_two_sum(w1, 0.5 * z);
    let v = poly(
        rh,
        [
            0.166_666_666_666_666_8,
            0.041_666_666_666_666_41,
            0.008_333_333_333_319_273,
            0.001_388_888_888_903_636_3,
            0.000_198_412_698_918_191_2,
            2.480_158_701_764_073e-5,
            2.755_723_875_591_763e-6,
            2.755_753_392_156_965_3e-7,
            2.511_084_826_948_850_5e-8,
            2.083_588_510_869_329e-9,
        ],
    );
    // e^(rh + rl) = e^rh + rl e^rh
    let p3 = (z * rh) * v;
    let small = rl.mul_add(w + p3, 0.5 * ze);
    let lo = p3 + ((e2 + small) + e1);
    let (w, lo) = fast_two_sum(w, lo);
    (t, w, lo)
}

/// m 2^k for k in [-1080, 1026]: m 2^k1 is exact, the second product rounds once.
#[inline(always)]
pub(super) fn scale2(m: f64, k: i64) -> f64 {
    let k1 = k >> 1;
    m * pow2i(k1) * pow2i(k - k1)
}

/// m 2^k where the result is a normal float: k added to m's exponent bits (`t` holds
/// k + MAGIC, whose bits shifted by 52 are k's, modulo 2^64).
#[inline(always)]
fn scale1(m: f64, t: f64) -> f64 {
    f64::from_bits(m.to_bits().wrapping_add(t.to_bits() << 52))
}

/// (t, p): e^a = 2^k (1 + p) (k from `t`), p = e^r - 1 = r + r^2 u(r) rounded once,
/// where r = a - k ln2 is rounded once too: 1 + p then rounds within 1 ulp, with no
/// compensation (SLEEF's u10 form).
#[inline(always)]
fn exp_p(a: f64) -> (f64, f64) {
    let t = a.mul_add(std::f64::consts::LOG2_E, MAGIC);
    let kf = t - MAGIC;
    let r = kf.mul_add(-LN2_LO, kf.mul_add(-LN2_HI, a));
    (t, (r * r).mul_add(poly(r, EXP_U), r))
}

#[inline(always)]
pub(crate) fn exp_full(x: f64) -> f64 {
    let a = x.clamp(-746.0, 710.0);
    let (t, p) = exp_p(a);
    scale2(1.0 + p, magic_int(t))
}

#[inline(always)]
pub(crate) fn exp_fast(x: f64) -> f64 {
    let (t, p) = exp_p(x);
    scale1(1.0 + p, t)
}

#[inline(always)]
pub(super) fn expm1_full(x: f64) -> f64 {
    // e^x - 1 = 2^k (w + lo) - 1; -1 to float64's precision below -40
    let a = x.clamp(-40.0, 710.0);
    let (t, w, lo) = exp_core(a, 0.0);
    let k = magic_int(t);
    let k1 = k >> 1;
    let (s1, s2) = (pow2i(k1), pow2i(k - k1));
    let (h, e) = two_sum(w * s1 * s2, -1.0);
    let y = h + (e + lo * s1 * s2);
    if x == 0.0 {
        x
    } else if x > 709.782_712_893_384 {
        f64::INFINITY
    } else {
        y
    }
}

/// tanh is 1 to float64's precision beyond 19.1: no clamp below.
pub(super) const TANH_FAST: f64 = 19.0;

/// tanh x = -m/(2 + m) with m = e^a - 1, a = -2|x| (in [-44.0, 0]), the sign
/// restored: e^a = s e^r, s = 2^k, r = rh + rl, and e^r - 1 = ph + pl (rh + rh^2 u(rh)
/// as an exact sum), so m = (s - 1) + s ph + s (pl + rl e^rh) carried as an exact sum
/// m + ml; 2 + m likewise, then one corrected division. No separate small-|x| formula:
/// near 0, m is -2|x| (1 + ...) to about 2^-106 relative, and the quotient loses nothing.
#[inline(always)]
fn tanh_core(x: f64, a: f64) -> f64 {
    let (t, rh, rl) = reduce(a);
    let q2 = (rh * rh) * poly(rh, EXP_U);
    let (ph, pl) = fast_two_sum(rh, q2);
    let s = pow2i(magic_int(t));
    let (m1, me) = fast_two_sum(-1.0, s);
    // |s - 1| >= |s ph| (s - 1 is 0 where k = 0, -1/2 where k = -1, below -3/4 beyond)
    let (m, ml) = fast_two_sum(m1, s * ph);
    let ml = s.mul_add(pl + rl.mul_add(ph, rl), ml + me);
    let (d, dl) = fast_two_sum(2.0, m);
    div_pairs(-m, -ml, d, dl + ml).copysign(x)
}

#[inline(always)]
pub(super) fn tanh_full(x: f64) -> f64 {
    // tanh is 1 to the last bit beyond the clamp; NaN fails the compare and stays
    let a = -2.0 * x.abs();
    tanh_core(x, if a < -44.0 { -44.0 } else { a })
}

#[inline(always)]
pub(super) fn tanh_fast(x: f64) -> f64 {
    tanh_core(x, -2.0 * x.abs())
}

#[inline(always)]
pub(super) fn sigmoid_fast(x: f64) -> f64 {
    let (t, p) = exp_p(-x);
    let s = pow2i(magic_int(t));
    let (hi, lo) = if s > 1.0 { (s, 1.0) } else { (1.0, s) };
    let (e1, err1) = fast_two_sum(hi, lo);
    let sp = s * p;
    let (d, dl) = fast_two_sum(e1, sp); // |e1| >= s > |s p|
    let dl = dl + err1;
    let q = 1.0 / d;
    let r = (-dl).mul_add(q, (-d).mul_add(q, 1.0));
    q.mul_add(r, q)
}

#[inline(always)]
pub(super) fn sigmoid_full(x: f64) -> f64 {
    // below -EXP_FAST, e^x (1 + e^x)^-1 is e^x to the last bit (e^x < 2^-124); above,
    // 1; NaN takes the formula's NaN
    let a = x.clamp(-EXP_FAST, EXP_FAST);
    let y = sigmoid_fast(a);
    if x < -EXP_FAST {
        exp_full(x)
    } else if x > EXP_FAST {
        1.0
    } else {
        y
    }
}

// ln 2 = LOG_LN2_HI + LOG_LN2_LO, LOG_LN2_HI with 32 bits (fdlibm's): k LOG_LN2_HI is
// exact for |k| < 2^21
const LOG_LN2_HI: f64 = 6.931_471_803_691_238_164_90e-1;
const LOG_LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;

/// k ln2 + log(1 + f) + extra for f in [sqrt(1/2) - 1, sqrt(2) - 1] exact and a small
/// `extra`: log(1 + f) = f - h + s (h + R(s^2)), h = f^2/2 (exact as a two-float
/// sum), s = f/(2 + f), R from `tools/fit_vmath.py log_f64`; k ln2's leading part, f
/// and -h summed exactly.
#[inline(always)]
pub(super) fn log_tail(kf: f64, f: f64, extra: f64) -> f64 {
    let (h, l) = log_tail_pair(kf, f, extra);
    h + l
}

/// [`log_tail`] before its last rounding: (h, l) with h + l the logarithm to about
/// 2^-60 relative (|l| <= ulp(h) or so).
#[inline(always)]
pub(super) fn log_tail_pair(kf: f64, f: f64, extra: f64) -> (f64, f64) {
    let s = f / (2.0 + f);
    let z = s * s;
    let r = z * poly(
        z,
        [
            0.666_666_666_666_673_4,
            0.399_999_999_994_167_24,
            0.285_714_287_420_025_8,
            0.222_221_986_079_911,
            0.181_835_626_917_722,
            0.153_140_889_884_571_1,
            0.147_955_917_525_944_8,
        ],
    );
    let ff = f * f;
    let ffe = f.mul_add(f, -ff);
    let h = 0.5 * ff;
    let (s1, e1) = fast_two_sum(kf * LOG_LN2_HI, f);
    let (s2, e2) = fast_two_sum(s1, -h);
    let small = s.mul_add(h + r, kf.mul_add(LOG_LN2_LO, extra) - 0.5 * ffe);
    (s2, (e1 + e2) + small)
}

/// (k, m) with v = 2^k m and m in [sqrt(1/2), sqrt(2)), for a positive normal v.
#[inline(always)]
pub(super) fn split_log(v: f64) -> (i64, f64) {
    let bits = v.to_bits() as i64;
    let k = bits.wrapping_sub(0x3FE6_A09E_667F_3BCD) >> 52;
    (k, f64::from_bits(bits.wrapping_sub(k << 52) as u64))
}

/// ln x for a positive normal finite x (other inputs: unspecified).
#[inline(always)]
pub(crate) fn log_fast(x: f64) -> f64 {
    let (k, m) = split_log(x);
    log_tail(to_float(k), m - 1.0, 0.0)
}

#[inline(always)]
pub(crate) fn log_full(x: f64) -> f64 {
    let sub = x < f64::MIN_POSITIVE;
    let v = if sub { x * 4_503_599_627_370_496.0 } else { x }; // 2^52
    let (k, m) = split_log(v);
    let kf = to_float(k) - if sub { 52.0 } else { 0.0 };
    let y = log_tail(kf, m - 1.0, 0.0);
    if x == f64::INFINITY {
        x
    } else if x == 0.0 {
        f64::NEG_INFINITY
    } else if x > 0.0 {
        y
    } else {
        f64::NAN
    }
}

/// log(uh + ul) for a two-float sum uh + ul with uh positive and normal (|ul| <=
/// ulp(uh)), plus `kadd` ln 2: uh = 2^k m, and ul/uh joins the correction.
#[inline(always)]
pub(super) fn log_pair(uh: f64, ul: f64, kadd: f64) -> f64 {
    let (k, m) = split_log(uh);
    let big = if uh < 1.0e300 { uh } else { 1.0e300 };
    log_tail(to_float(k) + kadd, m - 1.0, ul * recip_approx(big))
}

#[inline(always)]
pub(crate) fn log1p_full(x: f64) -> f64 {
    // as float32's: the polynomial at f = x for small |x|, else log(1 + x) with 1 + x
    // an exact sum
    let (u, ue) = two_sum(1.0, x);
    let small = x > -0.292_893_218_813_452_5 && x < 0.414_213_562_373_095_1;
    let (k, m) = split_log(u);
    let inv = recip_approx(if u < 1.0e300 { u } else { 1.0e300 });
    let (kf, f, extra) = if small {
        (0.0, x, 0.0)
    } else {
        (to_float(k), m - 1.0, ue * inv)
    };
    let y = log_tail(kf, f, extra);
    if x == 0.0 || x == f64::INFINITY {
        x
    } else if u == 0.0 {
        f64::NEG_INFINITY
    } else if u > 0.0 {
        y
    } else {
        f64::NAN
    }
}

// ---- exp2, log2, log10 -----------------------------------------------------------------

// log2(e), log10(e) and ln 2 as two-float sums; log10(2) = L102_HI + L102_LO with
// L102_HI of 32 bits (k L102_HI is exact for |k| < 2^21)
const LOG2E_HI: f64 = std::f64::consts::LOG2_E;
const LOG2E_LO: f64 = 2.035_527_374_093_103_3e-17;
const LOG10E_HI: f64 = std::f64::consts::LOG10_E;
const LOG10E_LO: f64 = 1.098_319_650_216_765e-17;
const LN2_LO_EXACT: f64 = 2.319_046_813_846_299_6e-17;
const L102_HI: f64 = 0.301_029_995_549_470_2;
const L102_LO: f64 = 1.145_110_089_802_183_8e-10;

/// 2^x: x = k + r with r = x - k exact (|r| <= 1/2), r ln 2 as a two-float sum, e^(r ln
/// 2) by [`exp_core`] (2^-58 relative), then 2^k; exact at integers. Beyond the clamp the
/// result is 0 or infinity already; NaN stays NaN through it (its k is any integer:
/// wrapping arithmetic).
#[inline(always)]
pub(super) fn exp2_full(x: f64) -> f64 {
    let v = x.clamp(-1080.0, 1030.0);
    let t = v + MAGIC;
    let r = v - (t - MAGIC);
    let ah = r * std::f64::consts::LN_2;
    let al = r.mul_add(std::f64::consts::LN_2, -ah) + r * LN2_LO_EXACT;
    let (t2, w, lo) = exp_core(ah, al);
    scale2(w + lo, magic_int(t).wrapping_add(magic_int(t2)))
}

/// (k, h, l): a positive finite nonzero x (subnormals too) as 2^k m with ln m = h + l
/// to about 2^-60 relative ([`log_tail_pair`] without its k ln 2).
#[inline(always)]
fn ln_m_pair(x: f64) -> (f64, f64, f64) {
    let sub = x < f64::MIN_POSITIVE;
    let v = if sub { x * 4_503_599_627_370_496.0 } else { x }; // 2^52
    let (k, m) = split_log(v);
    let kf = to_float(k) - if sub { 52.0 } else { 0.0 };
    let (h, l) = log_tail_pair(0.0, m - 1.0, 0.0);
    (kf, h, l)
}

/// The special values of a logarithm at x (+inf at +inf, -inf at ±0, NaN below 0 and at
/// NaN), else `y`.
#[inline(always)]
fn log_select(x: f64, y: f64) -> f64 {
    if x == f64::INFINITY {
        x
    } else if x == 0.0 {
        f64::NEG_INFINITY
    } else if x > 0.0 {
        y
    } else {
        f64::NAN
    }
}

/// log2 x = k + (h + l) log2(e), the product as a two-float sum, k added exactly
/// (|k| >= 1 > |(h + l) log2(e)| where k is not 0); exact at powers of two.
#[inline(always)]
pub(super) fn log2_full(x: f64) -> f64 {
    let (kf, h, l) = ln_m_pair(x);
    let p = h * LOG2E_HI;
    let lo = h.mul_add(LOG2E_HI, -p) + h.mul_add(LOG2E_LO, l * LOG2E_HI);
    let (s, e) = fast_two_sum(kf, p);
    log_select(x, s + (e + lo))
}

/// log10 x = k log10(2) + (h + l) log10(e): k's part exact in its leading float (|k
/// L102_HI| >= 0.30 > |(h + l) log10(e)| where k is not 0), the product a two-float sum.
#[inline(always)]
pub(super) fn log10_full(x: f64) -> f64 {
    let (kf, h, l) = ln_m_pair(x);
    let p = h * LOG10E_HI;
    let lo = h.mul_add(LOG10E_HI, -p) + h.mul_add(LOG10E_LO, l.mul_add(LOG10E_HI, kf * L102_LO));
    let (s, e) = fast_two_sum(kf * L102_HI, p);
    log_select(x, s + (e + lo))
}
