//! float32 erf (in float32), erfc (evaluated in float64, rounded once) and x^y with a
//! number exponent (float64 ln and exp).

#![allow(clippy::excessive_precision)]

use super::exp_log::exp_sum;
use super::via64;
use super::{fast_two_sum, magic_int, pow2i};
use crate::backend::cpu::vmath;

/// A polynomial in float64 by Estrin's scheme, lowest coefficient first: pairs
/// `c[2i] + c[2i+1] x`, then pairs of those with x^2, and so on (a dependency chain of
/// log2(N) steps instead of Horner's N: these loops are latency-bound).
#[inline(always)]
fn poly64<const N: usize>(x: f64, c: [f64; N]) -> f64 {
    let mut v = c;
    let mut n = N;
    let mut p = x;
    while n > 1 {
        let half = n / 2;
        for i in 0..half {
            v[i] = v[2 * i + 1].mul_add(p, v[2 * i]);
        }
        if n % 2 == 1 {
            v[half] = v[n - 1];
        }
        n = half + n % 2;
        p *= p;
    }
    v[0]
}

/// erfc a for a float64 a >= 0 (a float32's value), to about 2^-32 relative: erfc a =
/// t e^(-a^2 + G(t)) with t = 1/(1 + a/2) (Numerical Recipes' form; G refitted by
/// `tools/fit_vmath.py erfc_f32`). a^2 is exact (a has 24 bits).
#[inline(always)]
fn erfc_core(a: f64) -> f64 {
    // beyond 10.1 the float32 result is 0 (NaN stays)
    let a = if a > 10.1 { 10.1 } else { a };
    // t = 1/d, d in [1, 6.05]: from d's bits, then Newton steps (each doubles the
    // correct bits: 2^-4, 2^-8, 2^-16, 2^-32, enough for a float32 result; cheaper
    // than a float64 division)
    let d = 0.5f64.mul_add(a, 1.0);
    let mut t = f64::from_bits(0x7FDE_6238_DA3C_2118_u64.wrapping_sub(d.to_bits()));
    for _ in 0..3 {
        t *= (-d).mul_add(t, 2.0);
    }
    let g = poly64(
        t,
        [
            -1.265_506_037_807_145_4,
            0.999_778_742_669_712_1,
            0.378_567_864_715_525_1,
            0.049_574_505_329_342_55,
            0.122_868_622_046_015_04,
            -1.032_764_982_695_046_2,
            2.574_000_480_614_872,
            -5.610_154_779_484_890_5,
            8.376_014_532_639_07,
            -7.753_693_776_206_427,
            4.332_034_513_576_693,
            -1.353_970_223_725_509_4,
            0.183_250_538_489_397_35,
        ],
    );
    // (the exponent lies in [-103, 0]: e^ is a normal float64; 2^-32 relative; a NaN
    // a gives a number here, and the caller selects)
    t * via64::exp_lite8((-a).mul_add(a, g))
}

#[inline(always)]
pub(super) fn erfc_f32(x: f32) -> f32 {
    let e = erfc_core(f64::from(x.abs()));
    let r = (if x < 0.0 { 2.0 - e } else { e }) as f32;
    if x.is_nan() { x } else { r }
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
    let p = super::poly(
        x * x,
        [
            0.128_379_166_126_251_22,
            -0.376_126_259_565_353_4,
            0.112_835_802_137_851_72,
            -0.026_853_466_406_464_577,
            0.005_187_484_901_398_42,
            -0.000_800_145_324_319_601_1,
            7.821_113_831_596_449e-5,
        ],
    );
    let small = x.mul_add(p, x);
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
