//! float32 erf and erfc (in float32, with two-float steps where they need them) and x^y
//! with a number exponent (float64 ln and exp).

#![allow(clippy::excessive_precision)]

use super::exp_log::{EXP_U, exp_sum};
use super::via64;
use super::{MAGIC, fast_two_sum, magic_int, pow2i, two_sum};
use crate::backend::cpu::vmath;

/// A polynomial in float64 by Estrin's scheme (these loops are latency-bound).
#[inline(always)]
fn poly64<const N: usize>(x: f64, c: [f64; N]) -> f64 {
    super::poly_estrin(x, c)
}

// ln 2 = LN2_HI + LN2_LO (exp_log's split: k LN2_HI is exact inside an fma)
const LN2_HI: f32 = 0.693_147_182_464_599_609_375;
const LN2_LO: f32 = -1.904_654_212_125_933_6e-9;

/// G(v) = ln(erfc(a) e^(a^2) / t) with t = 1/(1 + a/2), v = 1 - t = a/(2 + a), for a
/// in [0, 10.06] (v in [0, 0.8342]): G = C1 v + v^2 H(v) (`tools/fit_vmath.py
/// erfc_f32`, 2^-30.1).
const ERFC_C1: f32 = -1.256_758_332_252_502_4;
const ERFC_H: [f32; 11] = [
    -0.303_236_097_097_396_85,
    0.161_370_128_393_173_22,
    0.194_564_208_388_328_55,
    0.042_607_437_819_242_48,
    0.017_517_549_917_101_86,
    -0.378_652_006_387_710_57,
    0.737_766_087_055_206_3,
    -1.290_839_314_460_754_4,
    1.437_661_528_587_341_3,
    -0.802_374_124_526_977_5,
    0.174_865_290_522_575_38,
];
/// G'(v), to 0.0125 (a quadratic least-squares fit): the first-order correction for
/// the rounding of v.
const ERFC_DG: [f32; 3] = [-1.254_503, -0.697_875_9, 1.034_702_9];

/// erfc x for |x| <= 10.1 with the result a normal float32 where `normal` (|x| below
/// 9.1; the fast path), else clamped and scaled into the subnormals; in float32.
///
/// erfc a = t e^(-a^2 + G(v)) for a = |x| (Numerical Recipes' form, G refitted in
/// v = 1 - t, where its Horner sum is well conditioned at both ends): t = 1/d with
/// d = 1 + a/2 as an exact sum d + dl, one division and its fma residual giving
/// t = tt (1 + eta); v = (a/2) t = (vh + vl)(1 + eta); the exponent -a^2 + C1 v +
/// v^2 H(v) + eta + G'(v)(vl + vh eta) as a two-float sum (a^2 and C1 v exact in fmas);
/// e^ of it as exp's `exp_sum` with the low part added to its reduced argument; the
/// product with tt rounded once (then once more into the subnormals). erfc(-a) =
/// 2 - erfc a. Max error over every float32: see docs/kernels.md (within 1 ulp).
#[inline(always)]
fn erfc_core(x: f32, normal: bool) -> f32 {
    let a = x.abs();
    let a = if !normal && a > 10.1 { 10.1 } else { a };
    let ha = 0.5 * a;
    let d = ha + 1.0;
    let dl = ha - (d - 1.0);
    let tt = 1.0 / d;
    let eta = (-dl).mul_add(tt, (-d).mul_add(tt, 1.0));
    let vh = ha * tt;
    let vl = ha.mul_add(tt, -vh);
    let (g1, g1l) = (vh * ERFC_C1, vh.mul_add(ERFC_C1, -(vh * ERFC_C1)));
    let (gs, gse) = fast_two_sum(g1, (vh * vh) * super::poly(vh, ERFC_H));
    let corr = super::poly(vh, ERFC_DG).mul_add(vh.mul_add(eta, vl), eta);
    let ah = a * a;
    let (wh, we) = two_sum(-ah, gs);
    let wl = we + (gse + (g1l + (corr - a.mul_add(a, -ah))));
    // e^(wh + wl) = 2^k e^rh (1 + rl): exp_sum's reduction of wh, wl beside rl
    let t = wh.mul_add(std::f32::consts::LOG2_E, MAGIC);
    let kf = t - MAGIC;
    let rh = kf.mul_add(-LN2_HI, wh);
    let rl = kf.mul_add(-LN2_LO, wl);
    let q = (rh * rh) * super::poly(rh, EXP_U);
    let (w, e) = fast_two_sum(1.0, rh);
    let m = tt.mul_add(w, tt * (e + rl.mul_add(w + q, q)));
    let v = if normal {
        f32::from_bits(m.to_bits().wrapping_add(t.to_bits() << 23))
    } else {
        let k = magic_int(t);
        let k1 = k >> 1;
        m * pow2i(k1) * pow2i(k - k1)
    };
    if x < 0.0 { 2.0 - v } else { v }
}

/// Below this |x| erfc's result is a normal float32 (erfc 9.1 = 2^-123.6): the fast
/// path.
pub(super) const ERFC_FAST: f32 = 9.1;

#[inline(always)]
pub(super) fn erfc_f32(x: f32) -> f32 {
    let r = erfc_core(x, false);
    if x.is_nan() { x } else { r }
}

/// [`erfc_f32`] for |x| <= [`ERFC_FAST`] (the same bits there).
#[inline(always)]
pub(super) fn erfc_fast(x: f32) -> f32 {
    erfc_core(x, true)
}

/// erf x = x + x P(x^2) for |x| <= 1 (`tools/fit_vmath.py erf_f32`, 2^-29.4 relative).
const ERF_P: [f32; 7] = [
    0.128_379_166_126_251_22,
    -0.376_126_259_565_353_4,
    0.112_835_802_137_851_72,
    -0.026_853_466_406_464_577,
    0.005_187_484_901_398_42,
    -0.000_800_145_324_319_601_1,
    7.821_113_831_596_449e-5,
];

/// erfc(t/sqrt 2) = Q(t - GELU_MID) for sqrt 2 <= t <= GELU_HI (`tools/fit_vmath.py
/// gelu_f32_erfc`, 2^-27.1 absolute).
const GELU_Q: [f32; 15] = [
    0.000_501_413_771_416_992,
    -0.001_871_495_856_903_493_4,
    0.003_256_486_961_618_066,
    -0.003_466_038_499_027_490_6,
    0.002_472_329_186_275_601_4,
    -0.001_199_751_859_530_806_5,
    0.000_366_859_341_738_745_57,
    -4.075_972_901_773_639e-5,
    -2.212_626_895_925_495_8e-5,
    1.320_757_382_927_695_3e-5,
    -2.373_593_815_718_777_5e-6,
    -5.408_427_909_969_76e-7,
    2.703_889_947_497_373e-7,
    -1.296_852_958_354_577_4e-9,
    -8.521_138_461_503_597e-9,
];
const GELU_MID: f32 = 3.48;
/// 3.92 sqrt 2: from here on erfc(t/sqrt 2) < 2^-25.9 (float32's erf(t/sqrt 2) is 1),
/// taken as 0.
const GELU_HI: f32 = 5.543_717;

/// gelu's erf form x/2 (1 + erf(x/sqrt 2)) in float32, held to what that product needs
/// rather than erf's 1 ulp: (x/2)(1 + erf z) for |x| < sqrt 2 (z = x/sqrt 2, erf z by
/// [`ERF_P`], the sum in one fma); beyond, e = erfc(|x|/sqrt 2) by one polynomial in |x|
/// ([`GELU_Q`], no exponential; both polynomials by Estrin's scheme, see
/// [`super::poly_estrin`]), x - (x/2) e for x > 0 and (x/2) e for x < 0 (the
/// negative side keeps e's relative precision, which 1 + erf loses). Both forms are
/// evaluated and selected (branch-free, vectorised). Special values as torch's float32
/// kernel: gelu(-0) = +0 and gelu(x) = +0 where erf(x/sqrt 2) rounds to -1 (its x/2 +
/// (x/2) erf), +inf at +inf, NaN at -inf and NaN. Error: see docs/kernels.md.
#[inline(always)]
pub(super) fn gelu_f32(x: f32) -> f32 {
    let hx = 0.5 * x;
    let z = x * std::f32::consts::FRAC_1_SQRT_2;
    // (ERF_P in two Horner halves, P = P_lo(w) + w^3 P_hi(w): a shorter chain than
    // Horner's whole, as accurate; Estrin's pairs, or w^4 P_hi, lost 0.1 ulp here)
    let w = z * z;
    let w3 = (w * w) * w;
    let [c0, c1, c2, c3, c4, c5, c6] = ERF_P;
    let p = w3.mul_add(
        super::poly(w, [c3, c4, c5, c6]),
        super::poly(w, [c0, c1, c2]),
    );
    let erf_small = z.mul_add(p, z);
    let a = x.abs();
    let ac = if a < GELU_HI { a } else { GELU_HI };
    let e = super::poly_estrin(ac - GELU_MID, GELU_Q);
    let e = if a > GELU_HI { 0.0 } else { e };
    let m = if a < std::f32::consts::SQRT_2 {
        erf_small
    } else {
        1.0 - e
    };
    let pos = hx.mul_add(m, hx);
    // (NaN fails `>=`: `pos` keeps it; -inf: -inf x 0 is NaN)
    let neg = hx.mul_add(e, 0.0);
    if a >= std::f32::consts::SQRT_2 && x < 0.0 {
        neg
    } else {
        pos
    }
}

/// erf in float32 (within 1 ulp): for |x| < 1, x + x P(x^2) in one fma
/// (`tools/fit_vmath.py erf_f32`, 2^-29.4 relative); beyond, 1 - e^L(|x|) with L a
/// polynomial in |x| near ln erfc |x| (`erf_f32_tail`, its error weighted by erfc |x|,
/// which is all it adds to erf: 2^-32.5 at |x| = 1), e^L = 2^k (w + rest) by `exp_sum`
/// with 1 - 2^k w an exact sum, so that the result rounds once; |x| clamped to 4 (erf
/// is 1 in float32 from 3.92 on). Max error over every input of [0, 4.5]: 0.986 ulp
/// (at 0.99543, the polynomial), 0.941 beyond 1 (at 1.05673).
#[inline(always)]
pub(super) fn erf_f32(x: f32) -> f32 {
    let a = x.abs();
    let small = x.mul_add(super::poly(x * x, ERF_P), x);
    let ac = if a > 4.0 { 4.0 } else { a };
    let l = super::poly(
        ac,
        [
            0.000_188_077_334_314_584_73,
            -1.129_578_590_393_066_4,
            -0.633_219_599_723_815_9,
            -0.108_418_829_739_093_78,
            0.025_208_355_858_922_005,
            -0.004_204_567_056_149_244,
            0.000_441_328_971_646_726_13,
            -2.168_533_137_592_021_4e-5,
        ],
    );
    // (l in [-18, -1.8]: 2^k is a normal float, k in [-26, -2])
    let (t, w, rest) = exp_sum(l);
    let s = pow2i(magic_int(t));
    let (h, lo) = fast_two_sum(1.0, -(s * w));
    let big = (h + s.mul_add(-rest, lo)).copysign(x);
    // (NaN fails `>=`: the small form keeps it)
    if a >= 1.0 { big } else { small }
}

/// erfinv is computed with the first polynomial below this |y| (w < 5): the fast path.
pub(super) const ERFINV_FAST: f32 = 0.9966;

/// erfinv y = y P(w) with w = -ln(1 - y^2), P in w - 2.5 for w < 5 (`tools/fit_vmath.py
/// erfinv_f32_a`), rounded once.
#[inline(always)]
pub(super) fn erfinv_fast(y: f32) -> f32 {
    let yd = f64::from(y);
    (yd * erfinv_a(erfinv_w(yd))) as f32
}

/// w = -ln(1 - y^2) for |y| < 1: (1 - |y|)(1 + |y|) is exact in float64 (factors of
/// 24 and 25 bits), and `via64::ln_lite`'s error (about 2^-39 relative) moves P(w) by far
/// less than a float32 ulp. (It was float64's 1-ulp log1p of -y^2: 256 x 256 on one
/// thread 157 -> 109 µs, torch 143; AMD EPYC Zen 4.)
#[inline(always)]
fn erfinv_w(yd: f64) -> f64 {
    let a = yd.abs();
    -via64::ln_lite((1.0 - a) * (1.0 + a))
}

#[inline(always)]
fn erfinv_a(w: f64) -> f64 {
    poly64(
        w - 2.5,
        [
            1.501_409_351_146_352_7,
            0.246_640_276_740_643_18,
            -0.004_177_318_237_370_906,
            -0.001_252_707_928_985_081_2,
            0.000_218_251_474_006_917_25,
            -4.996_028_570_980_714e-6,
            -3.417_693_630_159_000_2e-6,
            4.787_012_006_873_14e-7,
            1.387_400_307_076_424_4e-8,
            -1.086_375_993_818_974_8e-8,
            8.062_539_272_891_243e-10,
            1.235_904_881_619_995_3e-10,
            -1.977_053_292_021_453e-11,
        ],
    )
}

/// erfinv y for every y: above, and for w >= 5 (up to float32's 1 - 2^-24, w = 16.6)
/// y P(sqrt(w) - 3) (`tools/fit_vmath.py erfinv_f32_b`); +-1: +-inf, beyond: NaN.
#[inline(always)]
pub(super) fn erfinv_f32(y: f32) -> f32 {
    let yd = f64::from(y);
    // (|y| >= 1 or NaN: w is not used)
    let w = erfinv_w(yd);
    let b = poly64(
        w.sqrt() - 3.0,
        [
            2.832_976_798_561_122,
            1.001_675_276_531_284_6,
            0.009_445_541_077_751_553,
            -0.007_643_798_280_169_093,
            0.005_684_826_656_951_976,
            -0.003_558_837_378_486_177_3,
            0.001_486_222_373_075_339_4,
            -0.000_149_113_184_651_822_62,
            -0.000_291_282_717_431_065_5,
            0.000_207_718_870_859_638_73,
            -3.322_453_434_362_813_4e-5,
            -2.867_073_802_345_558_3e-5,
            1.234_042_663_687_354_9e-5,
        ],
    );
    let p = if w < 5.0 { erfinv_a(w) } else { b };
    let v = (yd * p) as f32;
    if y.abs() == 1.0 {
        f32::INFINITY.copysign(y)
    } else if y.abs() < 1.0 {
        v
    } else {
        f32::NAN // beyond 1, or NaN
    }
}

/// x^y with C pow's special values: |x|^y = e^(y ln|x|) in float64 (`via64`: the
/// exponent's absolute error, about 2^-42 (1 + |y ln x|), is far below float32's
/// resolution; every float32 |x| is a normal float64), rounded once to float32.
#[inline(always)]
pub(super) fn pow_f32(x: f32, y: f32) -> f32 {
    pow_ln(x, y, ln_abs(x))
}

/// ln |x| in float64 for every float32 x (-inf at 0, inf at infinities, NaN for NaN).
#[inline(always)]
pub(super) fn ln_abs(x: f32) -> f64 {
    let ax = f64::from(x.abs());
    let l = via64::ln_lite(ax);
    if ax == 0.0 {
        f64::NEG_INFINITY
    } else if ax == f64::INFINITY || ax.is_nan() {
        ax
    } else {
        l
    }
}

/// x^y from l = `ln_abs(x)` (a number base computes it once).
#[inline(always)]
pub(super) fn pow_ln(x: f32, y: f32, l: f64) -> f32 {
    let w = f64::from(y) * l;
    // beyond +-200 the float32 result is 0 or inf (NaN stays)
    let wc = w.clamp(-200.0, 200.0);
    let r = via64::exp_lite8_short(wc) as f32;
    let r = if w.is_nan() { f32::NAN } else { r };
    let yint = y.trunc() == y; // (infinities count as even integers)
    let half = 0.5 * y;
    let odd = yint && half.trunc() != half;
    let r = if x.is_sign_negative() && odd { -r } else { r };
    if y == 0.0 || x == 1.0 || (x.abs() == 1.0 && y.is_infinite()) {
        1.0
    } else if x < 0.0 && x > f32::NEG_INFINITY && !yint {
        f32::NAN // a negative base to a non-integer power
    } else {
        r
    }
}

/// x^y of one element (the bits of [`powf`]), with hardware FMA where the CPU has it.
#[inline]
pub fn pow1(x: f32, y: f32) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if vmath::level() >= vmath::Level::Avx2 {
        #[target_feature(enable = "fma")]
        fn with_fma(x: f32, y: f32) -> f32 {
            pow_f32(x, y)
        }
        // SAFETY: levels from Avx2 up are only picked on CPUs with FMA.
        return unsafe { with_fma(x, y) };
    }
    pow_f32(x, y)
}

/// `dst[i] = src[i]^y` (a number exponent) at the current level; the module holds the
/// per-level form `powf::at`.
pub fn powf(src: &[f32], y: f32, dst: &mut [std::mem::MaybeUninit<f32>]) {
    powf::at(vmath::level(), src, y, dst)
}

/// The slice kernel of [`powf`] per level (as `slice_fns!` builds the others).
pub mod powf {
    use super::pow_f32;
    use crate::backend::cpu::vmath::{Level, detected};
    use std::mem::MaybeUninit;

    #[inline(always)]
    fn body(src: &[f32], y: f32, dst: &mut [MaybeUninit<f32>]) {
        for (d, &x) in dst.iter_mut().zip(src) {
            d.write(pow_f32(x, y));
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,fma")]
    fn wide(src: &[f32], y: f32, dst: &mut [MaybeUninit<f32>]) {
        body(src, y, dst)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn mid(src: &[f32], y: f32, dst: &mut [MaybeUninit<f32>]) {
        body(src, y, dst)
    }

    /// `dst[i] = src[i]^y` with the build of `level` (capped by the CPU's).
    pub fn at(level: Level, src: &[f32], y: f32, dst: &mut [MaybeUninit<f32>]) {
        assert_eq!(src.len(), dst.len());
        #[cfg(target_arch = "x86_64")]
        match level.min(detected()) {
            // SAFETY: the CPU has AVX-512F and FMA (the level is capped by what it has).
            Level::Avx512 => return unsafe { wide(src, y, dst) },
            // SAFETY: the CPU has AVX2 and FMA (as above).
            Level::Avx2 => return unsafe { mid(src, y, dst) },
            Level::Baseline => {}
        }
        let _ = level;
        body(src, y, dst)
    }
}

/// `dst[i] = c^src[i]` (a number base) at the current level, ln |c| computed once: the
/// bits of [`pow1`]`(c, x)`. The module holds the per-level form `powb::at`.
pub fn powb(c: f32, src: &[f32], dst: &mut [std::mem::MaybeUninit<f32>]) {
    powb::at(vmath::level(), c, src, dst)
}

/// The slice kernel of [`powb()`] per level.
pub mod powb {
    use super::{ln_abs, pow_ln};
    use crate::backend::cpu::vmath::{Level, detected};
    use std::mem::MaybeUninit;

    #[inline(always)]
    fn body(c: f32, src: &[f32], dst: &mut [MaybeUninit<f32>]) {
        let l = ln_abs(c);
        for (d, &y) in dst.iter_mut().zip(src) {
            d.write(pow_ln(c, y, l));
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,fma")]
    fn wide(c: f32, src: &[f32], dst: &mut [MaybeUninit<f32>]) {
        body(c, src, dst)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn mid(c: f32, src: &[f32], dst: &mut [MaybeUninit<f32>]) {
        body(c, src, dst)
    }

    /// `dst[i] = c^src[i]` with the build of `level` (capped by the CPU's).
    pub fn at(level: Level, c: f32, src: &[f32], dst: &mut [MaybeUninit<f32>]) {
        assert_eq!(src.len(), dst.len());
        #[cfg(target_arch = "x86_64")]
        match level.min(detected()) {
            // SAFETY: the CPU has AVX-512F and FMA (the level is capped by what it has).
            Level::Avx512 => return unsafe { wide(c, src, dst) },
            // SAFETY: the CPU has AVX2 and FMA (as above).
            Level::Avx2 => return unsafe { mid(c, src, dst) },
            Level::Baseline => {}
        }
        let _ = level;
        body(c, src, dst)
    }
}
