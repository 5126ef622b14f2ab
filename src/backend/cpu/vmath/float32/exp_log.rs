//! float32 exp, expm1, tanh, sigmoid, log and log1p.
//!
//! e^a = 2^k e^r with a = k ln2 + r, |r| <= ln2/2; r = rh + rl, rh exact (k ln2's
//! leading part is exact inside an fma) and rl = -k LN2_LO, so the reduction loses
//! nothing. `exp_sum` gives e^a = 2^k (w + rest) to about 2^-27 relative (exp);
//! sigmoid uses the cheaper `exp_p`, r rounded once (SLEEF's u10 form), and carries
//! the low parts into one corrected division, as tanh does; `exp_core` (expm1, whose
//! cancellation needs more) gives 2^k (w + lo) to about 2^-29.

#![allow(clippy::excessive_precision)]

use super::{MAGIC, div_pairs, fast_two_sum, magic_int, poly, pow2i, recip_approx, two_sum};

// ln 2 = LN2_HI + LN2_LO: LN2_HI is float32's ln 2 (k LN2_HI is exact inside an fma)
const LN2_HI: f32 = 0.693_147_182_464_599_609_375;
const LN2_LO: f32 = -1.904_654_212_125_933_6e-9;

/// e^r = 1 + r + r^2 u(r) on |r| <= ln2/2 (`tools/fit_vmath.py exp_f32`).
pub(super) const EXP_U: [f32; 6] = [
    0.5,
    0.166_666_656_732_559_2,
    0.041_666_463_017_463_684,
    0.008_333_570_323_884_487,
    0.001_393_507_700_413_465_5,
    0.000_197_404_064_238_071_44,
];

/// Below this |x|, e^x and e^-x are normal floats (2^k is built from bits in one step,
/// no clamp needed): the fast path of exp and sigmoid.
pub(super) const EXP_FAST: f32 = 86.5;

/// (t, rh, rl): t = k + MAGIC (k = round(a / ln2)), a = k ln2 + rh + rl, rh exact.
#[inline(always)]
fn reduce(a: f32) -> (f32, f32, f32) {
    let t = a.mul_add(std::f32::consts::LOG2_E, MAGIC);
    let kf = t - MAGIC;
    (t, kf.mul_add(-LN2_HI, a), kf * -LN2_LO)
}

/// e^a = 2^k (w + lo), to about 2^-29 relative: e^r = 1 + r + r^2/2 + r^3 v(r)
/// (`tools/fit_vmath.py expv_f32`), the first three terms summed exactly.
#[inline(always)]
fn exp_core(a: f32) -> (f32, f32, f32) {
    let (t, rh, rl) = reduce(a);
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
    // e^(rh + rl) = e^rh + rl e^rh
    let p3 = (z * rh) * v;
    let small = rl.mul_add(w + p3, 0.5 * ze);
    let lo = p3 + ((e2 + small) + e1);
    let (w, lo) = fast_two_sum(w, lo);
    (t, w, lo)
}

/// m 2^k for k in [-152, 129]: m 2^k1 is exact, the second product rounds once, into
/// the subnormals or to infinity where the result lies there.
#[inline(always)]
fn scale2(m: f32, k: i32) -> f32 {
    let k1 = k >> 1;
    m * pow2i(k1) * pow2i(k - k1)
}

/// m 2^k where the result is a normal float: k added to m's exponent bits (`t` holds
/// k + MAGIC, whose bits shifted by 23 are k's, modulo 2^32). The same bits as
/// `scale2` there.
#[inline(always)]
fn scale1(m: f32, t: f32) -> f32 {
    f32::from_bits(m.to_bits().wrapping_add(t.to_bits() << 23))
}

/// (t, p): e^a = 2^k (1 + p) (k from `t`), p = e^r - 1 = r + r^2 u(r) rounded once
/// (|p| <= 0.42), where r = a - k ln2 is rounded once too: SLEEF's u10 exp (1 + p
/// rounds within 0.98 ulp, every input checked), used by sigmoid, whose corrected
/// division absorbs the rest.
#[inline(always)]
fn exp_p(a: f32) -> (f32, f32) {
    let t = a.mul_add(std::f32::consts::LOG2_E, MAGIC);
    let kf = t - MAGIC;
    let r = kf.mul_add(-LN2_LO, kf.mul_add(-LN2_HI, a));
    (t, (r * r).mul_add(poly(r, EXP_U), r))
}

/// e^a = 2^k (w + rest) (k from `t`), unnormalised (|rest| <= 0.07): 1 + rh as an
/// exact sum, the rest (rh^2 u(rh) and rl e^rh) beside it, to about 2^-27 relative.
/// exp keeps this (rather than `exp_p`, 0.98 ulp): float32's 1-ulp results are
/// printed, and `exp_p` misses the correctly rounded e^4 (0.06 ulp from a midpoint)
/// that torch prints.
#[inline(always)]
pub(super) fn exp_sum(a: f32) -> (f32, f32, f32) {
    let (t, rh, rl) = reduce(a);
    // e^(rh + rl) = e^rh + rl e^rh, e^rh = 1 + rh + q
    let q = (rh * rh) * poly(rh, EXP_U);
    let (w, e) = fast_two_sum(1.0, rh);
    (t, w, e + rl.mul_add(w + q, q))
}

#[inline(always)]
pub(super) fn exp_full(x: f32) -> f32 {
    // beyond this range the result is 0 or inf anyway; NaN stays NaN through clamp
    let a = x.clamp(-105.0, 89.5);
    let (t, w, rest) = exp_sum(a);
    scale2(w + rest, magic_int(t))
}

// ln 2 as a float32 and the rest (r LN2_F + r LN2_F_LO is r ln 2 to 2^-48 relative)
const LN2_F: f32 = std::f32::consts::LN_2;
const LN2_F_LO: f32 = -1.904_654_3e-9;

/// 2^x = 2^k e^(r ln 2), k = round(x) and r = x - k exact (|r| <= 1/2): r ln 2 = a + al
/// (a rounded, al its error from an fma plus ln 2's own), e^(a + al) as in
/// [`exp_sum`] (1 + a an exact sum; a is its own reduced argument, |a| <= ln2/2), so
/// exact at integers (2^-150, halfway to the smallest subnormal, rounds to 0). Beyond
/// the clamp the result is 0 or infinity already; NaN stays NaN through it (its k is any
/// integer; `scale2` takes any).
#[inline(always)]
pub(super) fn exp2_full(x: f32) -> f32 {
    let (m, t) = exp2_parts(x.clamp(-152.0, 129.0));
    scale2(m, magic_int(t))
}

/// (m, t): 2^v = m 2^k (k from `t`, m about 1), as [`exp2_full`] computes it.
#[inline(always)]
fn exp2_parts(v: f32) -> (f32, f32) {
    let t = v + MAGIC;
    let r = v - (t - MAGIC);
    let a = r * LN2_F;
    let al = r.mul_add(LN2_F, -a) + r * LN2_F_LO;
    let q = (a * a) * poly(a, EXP_U);
    let (w, e) = fast_two_sum(1.0, a);
    (w + (e + al.mul_add(w + q, q)), t)
}

/// Below this |x|, 2^x is a normal float32 and k = round(x) within [-125, 125]: the
/// fast path of exp2 (2^k built from bits in one step, no clamp).
pub(super) const EXP2_FAST: f32 = 125.0;

/// [`exp2_full`] for |x| <= [`EXP2_FAST`] (the same bits there: `scale1` is `scale2`
/// where the result is normal).
#[inline(always)]
pub(super) fn exp2_fast(x: f32) -> f32 {
    let (m, t) = exp2_parts(x);
    scale1(m, t)
}

#[inline(always)]
pub(super) fn exp_fast(x: f32) -> f32 {
    let (t, w, rest) = exp_sum(x);
    scale1(w + rest, t)
}

#[inline(always)]
pub(super) fn expm1_full(x: f32) -> f32 {
    // e^x - 1 = 2^k (w + lo) - 1: 2^k w - 1 as an exact sum, then the rest. Below -30
    // the result is -1 to float32's precision.
    let a = x.clamp(-30.0, 89.5);
    let (t, w, lo) = exp_core(a);
    let k = magic_int(t);
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

/// tanh is 1 to float32's precision beyond 9.01: the fast path has no clamp below.
pub(super) const TANH_FAST: f32 = 9.0;

/// tanh x = -m/(2 + m) with m = e^a - 1, a = -2|x| (in [-40.0, 0]), the sign
/// restored: e^a = s e^r, s = 2^k, r = rh + rl, and e^r - 1 = ph + pl (rh + rh^2 u(rh)
/// as an exact sum), so m = (s - 1) + s ph + s (pl + rl e^rh) carried as an exact sum
/// m + ml; 2 + m likewise, then one corrected division. No separate small-|x| formula:
/// near 0, m is -2|x| (1 + ...) to about 2^-48 relative, and the quotient loses nothing.
#[inline(always)]
fn tanh_core(x: f32, a: f32) -> f32 {
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
pub(super) fn tanh_full(x: f32) -> f32 {
    // tanh is 1 to the last bit beyond the clamp; NaN fails the compare and stays
    let a = -2.0 * x.abs();
    tanh_core(x, if a < -40.0 { -40.0 } else { a })
}

#[inline(always)]
pub(super) fn tanh_fast(x: f32) -> f32 {
    tanh_core(x, -2.0 * x.abs())
}

#[inline(always)]
pub(super) fn sigmoid_fast(x: f32) -> f32 {
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
pub(super) fn sigmoid_full(x: f32) -> f32 {
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
    let corr = (f * f).mul_add(log_q(f), e + kf.mul_add(LOG_LN2_LO, extra));
    s + corr
}

/// Q(f) with log(1 + f) = f + f^2 Q(f) on [sqrt(1/2) - 1, sqrt(2) - 1]
/// (`tools/fit_vmath.py log_f32`): -1/2 + f Q1(f), Horner's last step written out (the
/// same bits as one polynomial).
#[inline(always)]
fn log_q(f: f32) -> f32 {
    log_q1(f).mul_add(f, -0.5)
}

/// Q1 of [`log_q`].
#[inline(always)]
fn log_q1(f: f32) -> f32 {
    poly(
        f,
        [
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
    )
}

// log2(e) and log10(e) as two-float sums; log10(2) = L102_HI + L102_LO with L102_HI of
// 12 bits (k L102_HI is exact for |k| < 2^12)
const LOG2E_HI: f32 = std::f32::consts::LOG2_E;
const LOG2E_LO: f32 = 1.925_963e-8;
const LOG10E_HI: f32 = std::f32::consts::LOG10_E;
const LOG10E_LO: f32 = -1.010_305e-8;
const L102_HI: f32 = 0.301_025_390_625;
const L102_LO: f32 = 4.605_039e-6;

/// (k, f): x = 2^k (1 + f) for a positive finite x (subnormals scaled first), 1 + f in
/// [sqrt(1/2), sqrt(2)) and f exact.
#[inline(always)]
fn log_parts(x: f32) -> (f32, f32) {
    let sub = x < f32::MIN_POSITIVE;
    let v = if sub { x * 8_388_608.0 } else { x };
    let (k, m) = split_log(v);
    (k as f32 - if sub { 23.0 } else { 0.0 }, m - 1.0)
}

/// The special values of a logarithm at x (+inf at +inf, -inf at ±0, NaN below 0 and
/// at NaN), else `y`.
#[inline(always)]
fn log_select(x: f32, y: f32) -> f32 {
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

/// c log(1 + f) + a = s + lo (|lo| about ulp(s)) for x = 2^k (1 + f), where a is k or
/// k log10(2)'s leading part (exact; |a| >= 0.30 where k is not 0) with its rest `al`,
/// c = ch + cl is log2(e) or log10(e): log(1 + f) = f - f^2/2 + f^3 Q1(f), the first
/// two terms times ch as exact products summed exactly with a (each at most the sum so
/// far: |f^2/2| <= |f|/2), the rest beside them. With f^2 Q(f) rounded as one term, as
/// ln does, 20 inputs of log2 near sqrt(2) were 1.09 ulp off.
#[inline(always)]
fn log_scaled(f: f32, a: f32, al: f32, ch: f32, cl: f32) -> f32 {
    let p = f * ch;
    let pe = f.mul_add(ch, -p);
    let ff = f * f;
    let ffe = f.mul_add(f, -ff);
    let h = -0.5 * ff;
    let hp = h * ch;
    let hpe = h.mul_add(ch, -hp);
    let (s1, e1) = fast_two_sum(a, p);
    let (s2, e2) = fast_two_sum(s1, hp);
    let cubic = (ff * f) * log_q1(f);
    let small = (-0.5 * ffe).mul_add(ch, f.mul_add(cl, h.mul_add(cl, al)));
    let lo = cubic.mul_add(ch, (e1 + e2) + ((pe + hpe) + small));
    s2 + lo
}

/// log2 x = k + log(1 + f) log2(e) ([`log_scaled`]); exact at powers of two.
#[inline(always)]
pub(super) fn log2_full(x: f32) -> f32 {
    let (kf, f) = log_parts(x);
    log_select(x, log_scaled(f, kf, 0.0, LOG2E_HI, LOG2E_LO))
}

/// log10 x = k log10(2) + log(1 + f) log10(e) ([`log_scaled`]).
#[inline(always)]
pub(super) fn log10_full(x: f32) -> f32 {
    let (kf, f) = log_parts(x);
    log_select(
        x,
        log_scaled(f, kf * L102_HI, kf * L102_LO, LOG10E_HI, LOG10E_LO),
    )
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
pub(super) fn log_fast(x: f32) -> f32 {
    let (k, m) = split_log(x);
    log_tail(k as f32, m - 1.0, 0.0)
}

#[inline(always)]
pub(super) fn log_full(x: f32) -> f32 {
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
pub(super) fn log1p_full(x: f32) -> f32 {
    // |x| small (1 + x in [sqrt(1/2), sqrt(2))): the polynomial at f = x directly.
    // Otherwise u = 1 + x = 2^k m exactly as u + ue, and log(1 + x) = log u + ue/u
    // (ue/u is at most 2^-24 relative to the result: an approximate 1/u is plenty;
    // beyond 1e30, where ue/u is negligible, 1e30 stands for u).
    let (u, ue) = two_sum(1.0, x);
    let small = x > -0.292_893_2 && x < 0.414_213_57;
    let (k, m) = split_log(u);
    let inv = recip_approx(if u < 1.0e30 { u } else { 1.0e30 });
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

#[inline(always)]
pub(super) fn atanh_f32(x: f32) -> f32 {
    let ax = x.abs();
    // |x| < 1/4: x + x^3 P(x^2) (`tools/fit_vmath.py atanh_f32`)
    let z = x * x;
    let p = poly(
        z,
        [
            0.333_333_224_058_151_25,
            0.200_017_005_205_154_42,
            0.142_043_292_522_430_42,
            0.126_211_419_701_576_23,
        ],
    );
    let small = (x * z).mul_add(p, x);
    // else log((1 + |x|)/(1 - |x|))/2, the quotient as an exact sum
    let (nh, nl) = two_sum(1.0, ax);
    let (dh, dl) = two_sum(1.0, -ax);
    let inv = 1.0 / dh;
    let uh = nh * inv;
    let ul = (-uh).mul_add(dl, nl + (-uh).mul_add(dh, nh)) * inv;
    let (uh, ul) = fast_two_sum(uh, ul);
    let ok = uh > 0.0 && uh < f32::INFINITY;
    let (uh, ul) = if ok { (uh, ul) } else { (1.0, 0.0) };
    let (k, m) = split_log(uh);
    let big = (0.5 * log_tail(k as f32, m - 1.0, ul * recip_approx(uh))).copysign(x);
    if ax < 0.25 {
        small
    } else if ax < 1.0 {
        big
    } else if ax == 1.0 {
        f32::INFINITY.copysign(x)
    } else {
        f32::NAN // beyond 1, or NaN
    }
}
