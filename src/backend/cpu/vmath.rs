//! Vectorised float32 exp, expm1, log, log1p, tanh, sigmoid, sin and cos.
//!
//! libm evaluates these one element at a time (5-10 ns each); these versions are written
//! as branch-free per-element formulas over slices, so the compiler vectorises the
//! loops, and the slice functions are compiled three times (baseline SSE2, AVX2,
//! AVX-512) and picked at run time from the CPU's features. Each is evaluated in float64
//! (range reduction with exact splits of the constants, then a near-minimax polynomial
//! with relative error below 1e-13, fitted by `tools/fit_vmath.py`) and rounded once to
//! float32, so results are the correctly rounded ones except in rare near-ties (about 1
//! input in a million, measured against float64): the values torch and numpy print.
//!
//! Determinism: each element's result is a fixed sequence of IEEE operations, fused
//! multiply-adds included (`mul_add` is exactly rounded whether it is one instruction or
//! libm's software fma on a CPU without FMA), so it is the same bit for bit in every
//! SIMD width, in the scalar tail and on every thread split. Accuracy: within 1 ulp
//! of the exact value and almost always correctly rounded (tested against float64 libm
//! in the module tests); sin/cos of |x| > 8192, beyond the reduction's exact range, are
//! recomputed with libm.

// The split constants are fdlibm's, written with all their digits on purpose.
#![allow(clippy::excessive_precision)]

use std::mem::MaybeUninit;

/// A float32 slice function: `dst[i] = f(src[i])`.
pub type SliceFn = fn(&[f32], &mut [MaybeUninit<f32>]);

/// Rounds to the nearest integer (ties to even) for |v| < 2^51, vectorisable.
#[inline(always)]
fn round_f64(v: f64) -> f64 {
    const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52
    (v + MAGIC) - MAGIC
}

/// 2^n for an integer-valued n in [-1022, 1023], by building the exponent bits. The
/// integer is read from the bits of n + 1.5 * 2^52 (its low mantissa bits) rather than
/// with a float-to-int conversion, which has no vector form without AVX-512DQ.
#[inline(always)]
fn pow2i(n: f64) -> f64 {
    const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52
    f64::from_bits((n + MAGIC).to_bits().wrapping_add(1023) << 52)
}

/// e^r - 1 for |r| <= ln2/2, as r + r^2 q(r) with q of degree 7: a near-minimax fit
/// (`tools/fit_vmath.py`), relative error of e^r below 1.7e-14, far below float32's
/// resolution.
#[inline(always)]
fn expm1_reduced(r: f64) -> f64 {
    let q: f64 = 2.749_374_959_176_417_7e-6;
    let q = q.mul_add(r, 2.488_082_739_536_866_5e-5);
    let q = q.mul_add(r, 1.984_153_738_978_097_3e-4);
    let q = q.mul_add(r, 1.388_881_109_599_287_3e-3);
    let q = q.mul_add(r, 8.333_333_096_377_665e-3);
    let q = q.mul_add(r, 4.166_666_696_264_816e-2);
    let q = q.mul_add(r, 1.666_666_666_726_239_8e-1);
    let q = q.mul_add(r, 4.999_999_999_966_333_6e-1);
    r + r * r * q
}

/// (n, e^r - 1) with x = n ln2 + r, for |x| <= 110.
#[inline(always)]
fn reduce_exp(x: f64) -> (f64, f64) {
    const LN2_HI: f64 = 6.931_471_803_691_238_164_9e-1; // 32 bits: n * LN2_HI is exact
    const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;
    let n = round_f64(x * std::f64::consts::LOG2_E);
    let r = (x - n * LN2_HI) - n * LN2_LO;
    (n, expm1_reduced(r))
}

#[inline(always)]
pub(crate) fn exp1(x: f32) -> f32 {
    // computed in float64, rounded once to float32
    let xd = f64::from(x).clamp(-110.0, 100.0);
    let (n, p) = reduce_exp(xd);
    let y = (pow2i(n) * (1.0 + p)) as f32;
    if x.is_nan() { x } else { y }
}

#[inline(always)]
pub(crate) fn tanh1(x: f32) -> f32 {
    // tanh x = expm1(2x) / (expm1(2x) + 2), in float64 (no cancellation near 0)
    let xd = f64::from(x).clamp(-20.0, 20.0);
    let (n, p) = reduce_exp(2.0 * xd);
    let s = pow2i(n);
    let em1 = s * p + (s - 1.0);
    let y = (em1 / (em1 + 2.0)) as f32;
    // NaN stays NaN, and -0 keeps its sign
    if x.is_nan() || x == 0.0 { x } else { y }
}

/// ln v for a positive, finite, normal float64 v (every positive finite float32 is one):
/// v = 2^k m with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s) with s = (m - 1)/(m + 1),
/// |s| < 0.172, by its series to s^15 (relative error below 4e-14).
#[inline(always)]
fn ln_pos(v: f64) -> f64 {
    const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52
    // k from the exponent bits, counted from sqrt(1/2) instead of 1 (an arithmetic shift
    // of the offset bits), and m with k taken out of its exponent
    let off = v.to_bits().wrapping_sub(0x3FE6_A09E_667F_3BCD);
    let k = (off as i64) >> 52;
    let m = f64::from_bits(v.to_bits().wrapping_sub((k as u64) << 52));
    // k as a float64, through the low bits of 1.5 * 2^52 (no int-to-float conversion,
    // which has no vector form for 64-bit integers without AVX-512DQ)
    let kf = f64::from_bits(MAGIC.to_bits().wrapping_add(k as u64)) - MAGIC;
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let p: f64 = 1.0 / 15.0;
    let p = p.mul_add(z, 1.0 / 13.0);
    let p = p.mul_add(z, 1.0 / 11.0);
    let p = p.mul_add(z, 1.0 / 9.0);
    let p = p.mul_add(z, 1.0 / 7.0);
    let p = p.mul_add(z, 1.0 / 5.0);
    let p = p.mul_add(z, 1.0 / 3.0);
    let lm = 2.0 * s + 2.0 * s * z * p;
    kf.mul_add(std::f64::consts::LN_2, lm)
}

#[inline(always)]
pub(crate) fn log1(x: f32) -> f32 {
    let v = f64::from(x);
    let y = ln_pos(if v > 0.0 { v } else { 1.0 }) as f32;
    if v > 0.0 && v < f64::INFINITY {
        y
    } else if v == 0.0 {
        f32::NEG_INFINITY
    } else if v == f64::INFINITY {
        f32::INFINITY
    } else {
        f32::NAN // negative or NaN
    }
}

#[inline(always)]
pub(crate) fn log1p1(x: f32) -> f32 {
    // ln(1 + x) with u = 1 + x rounded in float64 and the rounding put back to first
    // order: ln u + (x - (u - 1)) / u (tiny x: u = 1, the result is x)
    let v = f64::from(x);
    let u = 1.0 + v;
    let ok = u > 0.0 && u < f64::INFINITY;
    let l = ln_pos(if ok { u } else { 1.0 });
    let y = (l + (v - (u - 1.0)) / if ok { u } else { 1.0 }) as f32;
    if ok && x != 0.0 {
        y
    } else if x == 0.0 || x == f32::INFINITY {
        x // keeps -0
    } else if u == 0.0 {
        f32::NEG_INFINITY
    } else {
        f32::NAN // below -1, or NaN
    }
}

#[inline(always)]
pub(crate) fn expm11(x: f32) -> f32 {
    // e^x - 1 = 2^n (1 + p) - 1 = 2^n p + (2^n - 1) in float64: no cancellation near 0
    // (n = 0 there), and float64's spare bits absorb it elsewhere
    let (n, p) = reduce_exp(f64::from(x).clamp(-110.0, 100.0));
    let s = pow2i(n);
    let y = s.mul_add(p, s - 1.0) as f32;
    // NaN stays NaN, and -0 keeps its sign
    if x.is_nan() || x == 0.0 { x } else { y }
}

#[inline(always)]
pub(crate) fn sigmoid1(x: f32) -> f32 {
    // 1 / (1 + e^-x) in float64 (beyond |x| = 110 the float32 result is already 0 or 1)
    let (n, p) = reduce_exp((-f64::from(x)).clamp(-110.0, 110.0));
    let e = pow2i(n) * (1.0 + p);
    let y = (1.0 / (1.0 + e)) as f32;
    if x.is_nan() { x } else { y }
}

/// Sine (`cos == false`) or cosine of x for |x| <= 8192, in float64: x reduced by a
/// multiple of pi (Cody-Waite with fdlibm's exact splits of pi/4), so that one odd
/// polynomial on [-pi/2, pi/2] serves both (cos a = sin(a + pi/2)), with the sign taken
/// from the multiple's parity.
#[inline(always)]
fn sincos1(x: f32, cos: bool) -> f32 {
    const P1: f64 = 7.853_981_633_670_628_070_83e-1; // pi/4, 33 bits: j * P1 is exact
    const P2: f64 = 3.038_550_253_151_982_988_3e-11; // 33 bits
    const P2T: f64 = 1.011_133_124_397_975_315_77e-21;
    const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52
    let a = f64::from(x.abs());
    // sin: a = k pi + r; cos: a + pi/2 = k pi + r, i.e. a = (k - 1/2) pi + r. Then the
    // result is (-1)^k sin(r), |r| <= pi/2. k is read from the low bits of k + MAGIC.
    let t = a * std::f64::consts::FRAC_1_PI + if cos { 0.5 } else { 0.0 };
    let kb = t + MAGIC;
    let k = kb - MAGIC;
    let j = 4.0 * k - if cos { 2.0 } else { 0.0 }; // the multiple of pi/4, exact
    let r = ((a - j * P1) - j * P2) - j * P2T;
    // sin r = r + r z p(z), z = r^2, p of degree 5: a near-minimax fit
    // (`tools/fit_vmath.py`), relative error below 7e-14 on [-pi/2, pi/2]
    let z = r * r;
    let p: f64 = 1.540_949_637_162_163_6e-10;
    let p = p.mul_add(z, -2.503_019_443_695_416e-8);
    let p = p.mul_add(z, 2.755_695_303_958_193_5e-6);
    let p = p.mul_add(z, -1.984_126_672_873_088e-4);
    let p = p.mul_add(z, 8.333_333_321_081_098e-3);
    let p = p.mul_add(z, -1.666_666_666_650_447e-1);
    let v = (r * z).mul_add(p, r);
    // (-1)^k, and for sin the sign of x (sin is odd, cos even)
    let odd = kb.to_bits() << 63;
    let sign = if cos {
        0
    } else {
        u64::from(x.is_sign_negative()) << 63
    };
    let v = f64::from_bits(v.to_bits() ^ odd ^ sign) as f32;
    if x.is_nan() || x.is_infinite() {
        f32::NAN
    } else {
        v
    }
}

/// sin/cos of |x| above this are recomputed with libm (see `sincos1`); the fixups below
/// only look at such inputs.
const FIX_FROM: f32 = 8192.0;

/// A finite input beyond the reduction's range (recomputed with libm).
fn huge(x: f32) -> bool {
    x.abs() > FIX_FROM && x.is_finite()
}

/// sin of one element, as the `sin` slice function computes it (same bits).
pub(crate) fn sin1(x: f32) -> f32 {
    if huge(x) {
        f64::from(x).sin() as f32
    } else {
        sincos1(x, false)
    }
}

/// cos of one element, as the `cos` slice function computes it (same bits).
pub(crate) fn cos1(x: f32) -> f32 {
    if huge(x) {
        f64::from(x).cos() as f32
    } else {
        sincos1(x, true)
    }
}

/// Defines each slice function in a module of its own (`body` is per function), with
/// the function re-exported here.
macro_rules! slice_fns {
    ($($m:ident::$name:ident: |$x:ident| $body:expr, fixup: $fix:expr;)*) => {$(
        mod $m {
            use super::*;
            /// `dst[i] = f(src[i])` for a block; returns whether some input needs the fixup
            /// (|x| beyond the reduction's range, or not finite), found in the same pass.
            #[inline(always)]
            fn body(src: &[f32], dst: &mut [MaybeUninit<f32>], scan: bool) -> bool {
                for (d, &$x) in dst.iter_mut().zip(src) {
                    d.write($body);
                }
                // a branch-free or-reduction of compares: vectorised, data still in L1 (NaN
                // fails `<=`, so it is flagged too)
                #[allow(clippy::neg_cmp_op_on_partial_ord)]
                let needs_fix = |x: f32| !(x.abs() <= FIX_FROM);
                scan && src.iter().fold(false, |acc, &x| acc | needs_fix(x))
            }
            /// `dst[i] = f(src[i])`; initialises all of `dst` (`src` must be as long).
            pub fn $name(src: &[f32], dst: &mut [MaybeUninit<f32>]) {
                #[cfg(target_arch = "x86_64")]
                let run = {
                    #[target_feature(enable = "avx512f,fma")]
                    fn wide(src: &[f32], dst: &mut [MaybeUninit<f32>], scan: bool) -> bool {
                        body(src, dst, scan)
                    }
                    #[target_feature(enable = "avx2,fma")]
                    fn mid(src: &[f32], dst: &mut [MaybeUninit<f32>], scan: bool) -> bool {
                        body(src, dst, scan)
                    }
                    let fma = std::arch::is_x86_feature_detected!("fma");
                    let level = if fma && std::arch::is_x86_feature_detected!("avx512f") {
                        2
                    } else if fma && std::arch::is_x86_feature_detected!("avx2") {
                        1
                    } else {
                        0
                    };
                    move |src: &[f32], dst: &mut [MaybeUninit<f32>], scan: bool| match level {
                        // SAFETY: the CPU supports AVX-512F and FMA (checked above).
                        2 => unsafe { wide(src, dst, scan) },
                        // SAFETY: the CPU supports AVX2 and FMA (checked above).
                        1 => unsafe { mid(src, dst, scan) },
                        _ => body(src, dst, scan),
                    }
                };
                #[cfg(not(target_arch = "x86_64"))]
                let run = body;
                let fix: Option<fn(f32) -> Option<f32>> = $fix;
                let Some(fix) = fix else {
                    run(src, dst, false);
                    return;
                };
                // Blocks of 1024: the scan for inputs that need the (scalar) fixup reads
                // data still in L1, and a rare huge or non-finite input costs a scalar pass
                // over its block only, not over the whole array.
                for (s, d) in src.chunks(1024).zip(dst.chunks_mut(1024)) {
                    if run(s, d, true) {
                        for (d, &x) in d.iter_mut().zip(s) {
                            if let Some(v) = fix(x) {
                                d.write(v);
                            }
                        }
                    }
                }
            }
        }
        pub use $m::$name;
    )*};
}

slice_fns! {
    exp_mod::exp: |x| exp1(x), fixup: None;
    expm1_mod::expm1: |x| expm11(x), fixup: None;
    log_mod::log: |x| log1(x), fixup: None;
    log1p_mod::log1p: |x| log1p1(x), fixup: None;
    tanh_mod::tanh: |x| tanh1(x), fixup: None;
    sigmoid_mod::sigmoid: |x| sigmoid1(x), fixup: None;
    sin_mod::sin: |x| sincos1(x, false), fixup: Some(|x| huge(x).then(|| f64::from(x).sin() as _));
    cos_mod::cos: |x| sincos1(x, true), fixup: Some(|x| huge(x).then(|| f64::from(x).cos() as _));
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    /// Distance in units in the last place between `got` and the exact value.
    fn ulps(got: f32, exact: f64) -> f64 {
        if got.is_nan() || exact.is_nan() {
            return if got.is_nan() && exact.is_nan() {
                0.0
            } else {
                f64::INFINITY
            };
        }
        let r = exact as f32;
        if got == r {
            return 0.0;
        }
        if r.is_infinite() || got.is_infinite() {
            return f64::INFINITY;
        }
        // ulp at the exact value's magnitude (min: the smallest subnormal)
        let ulp = if r == 0.0 {
            f64::from(f32::from_bits(1))
        } else {
            let b = r.abs().to_bits();
            f64::from(f32::from_bits(b + 1)) - f64::from(f32::from_bits(b))
        };
        (f64::from(got) - exact).abs() / ulp
    }

    fn inputs(lo: f32, hi: f32, n: usize) -> Vec<f32> {
        let mut v: Vec<f32> = (0..n)
            .map(|i| lo + (hi - lo) * (i as f32 / n as f32))
            .collect();
        // and pseudo-random points
        let mut s: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..n {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            v.push(lo + (hi - lo) * ((s >> 40) as f32 / (1u64 << 24) as f32));
        }
        v
    }

    fn run(f: SliceFn, xs: &[f32]) -> Vec<f32> {
        let mut out = vec![MaybeUninit::uninit(); xs.len()];
        f(xs, &mut out);
        // SAFETY: f initialises every element
        out.into_iter()
            .map(|v| unsafe { v.assume_init() })
            .collect()
    }

    fn check(name: &str, f: SliceFn, exact: fn(f64) -> f64, xs: &[f32], max_ulp: f64) {
        let out = run(f, xs);
        let mut worst = (0.0, 0.0f32);
        for (&x, &y) in xs.iter().zip(&out) {
            let u = ulps(y, exact(f64::from(x)));
            if u > worst.0 {
                worst = (u, x);
            }
        }
        assert!(
            worst.0 <= max_ulp,
            "{name}: {} ulp at x = {:e}",
            worst.0,
            worst.1
        );
        // and almost always the correctly rounded float32
        let wrong = xs
            .iter()
            .zip(&out)
            .filter(|&(&x, &y)| {
                y.to_bits() != (exact(f64::from(x)) as f32).to_bits() && !y.is_nan()
            })
            .count();
        assert!(
            wrong * 10_000 <= xs.len(),
            "{name}: {wrong} of {} not correctly rounded in [{:e}, {:e}]",
            xs.len(),
            xs[0],
            xs[xs.len() / 2 - 1]
        );
        // the scalar tail and every SIMD width agree bit for bit
        for (&x, &y) in xs.iter().zip(&out).take(257) {
            let one = run(f, &[x]);
            assert_eq!(one[0].to_bits(), y.to_bits(), "{name}({x:e}) differs alone");
        }
    }

    #[test]
    fn exp_is_within_1_ulp() {
        check("exp", exp, f64::exp, &inputs(-104.0, 89.0, 200_000), 1.0);
        check("exp", exp, f64::exp, &inputs(-1.0, 1.0, 100_000), 1.0);
        let out = run(
            exp,
            &[
                f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                89.0,
                -200.0,
                0.0,
            ],
        );
        assert!(out[0].is_nan());
        assert_eq!(&out[1..], &[f32::INFINITY, 0.0, f32::INFINITY, 0.0, 1.0]);
    }

    #[test]
    fn tanh_is_within_1_ulp() {
        check("tanh", tanh, f64::tanh, &inputs(-12.0, 12.0, 200_000), 1.0);
        check("tanh", tanh, f64::tanh, &inputs(-1e-3, 1e-3, 10_000), 1.0);
        let out = run(
            tanh,
            &[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 1e30],
        );
        assert!(out[0].is_nan());
        assert_eq!(&out[1..], &[1.0, -1.0, -0.0, 1.0]);
        assert!(out[3].is_sign_negative());
    }

    #[test]
    fn expm1_is_within_1_ulp() {
        for (lo, hi, n) in [(-104.0, 88.0, 200_000), (-1e-3, 1e-3, 10_000)] {
            check("expm1", expm1, f64::exp_m1, &inputs(lo, hi, n), 1.0);
        }
        let out = run(
            expm1,
            &[
                f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                -0.0,
                89.0,
                -200.0,
            ],
        );
        assert!(out[0].is_nan());
        assert_eq!(&out[1..], &[f32::INFINITY, -1.0, -0.0, f32::INFINITY, -1.0]);
        assert!(out[3].is_sign_negative());
    }

    #[test]
    fn log_and_log1p_are_within_1_ulp() {
        check("log", log, f64::ln, &inputs(1e-6, 10.0, 200_000), 1.0);
        check("log", log, f64::ln, &inputs(0.5, 2.0, 100_000), 1.0);
        check("log", log, f64::ln, &inputs(1.0, 3e38, 100_000), 1.0);
        let tiny: Vec<f32> = (1..2000).map(|i| f32::from_bits(i * 4099)).collect(); // subnormals
        check("log", log, f64::ln, &tiny, 1.0);
        for (lo, hi, n) in [
            (-0.999, 10.0, 200_000),
            (-1e-3, 1e-3, 100_000),
            (-1e-30, 1e-30, 10_000),
        ] {
            check("log1p", log1p, f64::ln_1p, &inputs(lo, hi, n), 1.0);
        }
        let out = run(
            log,
            &[
                f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                0.0,
                -0.0,
                -1.0,
                1.0,
            ],
        );
        assert!(out[0].is_nan() && out[2].is_nan() && out[5].is_nan());
        assert_eq!(
            [out[1], out[3], out[4], out[6]],
            [f32::INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY, 0.0]
        );
        let out = run(log1p, &[f32::NAN, f32::INFINITY, -1.0, -2.0, -0.0, 0.0]);
        assert!(out[0].is_nan() && out[3].is_nan());
        assert_eq!([out[1], out[2]], [f32::INFINITY, f32::NEG_INFINITY]);
        assert!(out[4] == 0.0 && out[4].is_sign_negative() && out[5].is_sign_positive());
    }

    #[test]
    fn sigmoid_is_within_1_ulp() {
        let exact = |x: f64| 1.0 / (1.0 + (-x).exp());
        check(
            "sigmoid",
            sigmoid,
            exact,
            &inputs(-120.0, 30.0, 200_000),
            1.0,
        );
        check("sigmoid", sigmoid, exact, &inputs(-1e-3, 1e-3, 10_000), 1.0);
        let out = run(
            sigmoid,
            &[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -1e30],
        );
        assert!(out[0].is_nan());
        assert_eq!(&out[1..], &[1.0, 0.0, 0.5, 0.0]);
    }

    #[test]
    fn sin_cos_are_within_1_ulp() {
        for (lo, hi) in [(-10.0, 10.0), (-8192.0, 8192.0), (-1e6, 1e6)] {
            check("sin", sin, f64::sin, &inputs(lo, hi, 100_000), 1.0);
            check("cos", cos, f64::cos, &inputs(lo, hi, 100_000), 1.0);
        }
        let out = run(sin, &[f32::NAN, f32::INFINITY, -0.0]);
        assert!(out[0].is_nan() && out[1].is_nan() && out[2] == 0.0 && out[2].is_sign_negative());
    }

    #[test]
    fn sin_cos_fixups_reach_only_their_block() {
        // huge and non-finite inputs among small ones, in different 1024-blocks and at
        // block edges: every element as if computed alone
        let mut xs = inputs(-3.0, 3.0, 2_600);
        for (i, v) in [
            (1023, 3e7),
            (1024, -1e5),
            (3000, f32::INFINITY),
            (4100, f32::NAN),
        ] {
            xs[i] = v;
        }
        type Case = (&'static str, SliceFn, fn(f64) -> f64);
        let cases: [Case; 2] = [("sin", sin, f64::sin), ("cos", cos, f64::cos)];
        for (name, f, exact) in cases {
            let out = run(f, &xs);
            for (&x, &y) in xs.iter().zip(&out) {
                let one = run(f, &[x])[0];
                assert!(
                    one.to_bits() == y.to_bits() || (one.is_nan() && y.is_nan()),
                    "{name}({x:e}): {y} in the array, {one} alone"
                );
            }
            assert_eq!(
                out[1023],
                exact(f64::from(3e7f32)) as f32,
                "{name}: the fixup ran"
            );
        }
    }
}
