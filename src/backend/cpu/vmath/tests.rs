//! Accuracy and determinism of the vmath kernels: every level forced in turn, the
//! per-element forms, the scalar tails, special values; float32 over a dense sample of
//! all bit patterns against float64 libm, float64 over samples against a double-double
//! reference. (`examples/vmath_ulp.rs` runs the float32 check over every input.)

#![allow(clippy::unwrap_used, clippy::panic, clippy::float_cmp)]

use super::reference::{exact_f32, exact_f64, sample_f64, ulps_f32, ulps_f64};
use super::{Func, Level, float32, float64, supported};
use std::mem::MaybeUninit;

/// Every `STRIDE`th float32 bit pattern (debug builds take a sparser sample).
const STRIDE: u64 = if cfg!(debug_assertions) { 9_973 } else { 97 };
/// float64 samples per function.
const SAMPLES: usize = if cfg!(debug_assertions) {
    16_384
} else {
    1 << 20
};

pub(super) fn run<T: Copy>(f: &Func<T>, level: Level, xs: &[T]) -> Vec<T> {
    let mut out = vec![MaybeUninit::<T>::uninit(); xs.len()];
    (f.at)(level, xs, &mut out);
    // SAFETY: slice functions initialise every element
    out.into_iter()
        .map(|v| unsafe { v.assume_init() })
        .collect()
}

pub(super) fn same32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

pub(super) fn same64(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// The largest error each float32 function may have (sqrt is exact; rsqrt is 1/sqrt,
/// rounded twice, as torch's).
fn bound32(name: &str) -> f64 {
    match name {
        "sqrt" => 0.5,
        "rsqrt" => 1.5,
        _ => 1.0,
    }
}

/// Special and threshold inputs for float32.
fn specials32() -> Vec<f32> {
    let mut v = vec![
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::from_bits(0x007F_FFFF),
        f32::MAX,
        f32::MIN,
        f32::EPSILON,
        1.0 - f32::EPSILON / 2.0,
        1.0 + f32::EPSILON,
        -1.0 + f32::EPSILON / 2.0,
        // exp, expm1, sinh, cosh overflow; exp underflow to 0 and to the subnormals
        88.722_83,
        88.722_84,
        89.415_985,
        89.415_99,
        -87.336_54,
        -103.972_08,
        -103.972_084,
        -104.0,
        // tanh and sigmoid saturate, erf-like tails
        9.010_913,
        9.010_914,
        16.635_532,
        17.328_68,
        -88.722_83,
        // trig: near multiples of pi/2, and the reduction's limit
        std::f32::consts::FRAC_PI_2,
        std::f32::consts::PI,
        4.712_389,
        65_536.0,
        65_536.01,
        1.0e10,
        // 1/2 (asin/acos switch), tan(pi/8), tan(3pi/8)
        0.414_213_57,
        2.414_213_5,
    ];
    let neg: Vec<f32> = v.iter().map(|x| -x).collect();
    v.extend(neg);
    v
}

fn check32(f: &Func<f32>, xs: &[f32]) {
    let exact = exact_f32(f.name);
    let levels = supported();
    let top = *levels.last().unwrap();
    let out = run(f, top, xs);
    let mut worst = (0.0, 0.0f32);
    for (&x, &y) in xs.iter().zip(&out) {
        let u = ulps_f32(y, exact(f64::from(x)));
        if u > worst.0 {
            worst = (u, x);
        }
    }
    assert!(
        worst.0 <= bound32(f.name),
        "{}: {} ulp at x = {:e} ({:e})",
        f.name,
        worst.0,
        worst.1,
        worst.1
    );
    // every level, the per-element form, and the scalar tail give the same bits
    for &l in &levels {
        let o = run(f, l, xs);
        for (i, (&a, &b)) in out.iter().zip(&o).enumerate() {
            assert!(
                same32(a, b),
                "{} at {l:?}: {:e} gives {a:e} and {b:e}",
                f.name,
                xs[i]
            );
        }
    }
    for (i, (&x, &y)) in xs.iter().zip(&out).enumerate() {
        if i % 7 == 0 {
            assert!(same32((f.one)(x), y), "{}({x:e}) per element", f.name);
        }
    }
    for n in [1, 3, 15, 17, 33] {
        let part = &xs[xs.len() / 3..xs.len() / 3 + n];
        for &l in &levels {
            let o = run(f, l, part);
            for (j, &y) in o.iter().enumerate() {
                assert!(same32(y, out[xs.len() / 3 + j]), "{} tail at {l:?}", f.name);
            }
        }
    }
}

#[test]
fn float32_functions_are_within_1_ulp_and_the_same_at_every_level() {
    let dense: Vec<f32> = (0..(1u64 << 32) / STRIDE)
        .map(|i| f32::from_bits((i * STRIDE) as u32))
        .collect();
    for f in float32::FUNCS {
        check32(f, &dense);
        check32(f, &specials32());
    }
}

#[test]
fn float32_special_values_are_exact() {
    // where the exact value is a special value or a threshold's neighbour, the result is
    // the correctly rounded one (what torch gives), sign of zero included
    for f in float32::FUNCS {
        let exact = exact_f32(f.name);
        for x in specials32() {
            let want = exact(f64::from(x)) as f32;
            let got = (f.one)(x);
            // the sigmoid's subnormal tail and ordinary values: within the bound only
            let special = want.is_nan() || want.is_infinite() || want == 0.0 || x == 0.0;
            let special = special && !(f.name == "sigmoid" && x < -80.0);
            if special {
                assert!(
                    same32(got, want),
                    "{}({x:e}) = {got:e}, not {want:e}",
                    f.name
                );
            }
        }
    }
}

/// Special inputs for float64.
fn specials64() -> Vec<f64> {
    let mut v = vec![
        f64::NAN,
        f64::INFINITY,
        0.0,
        1.0,
        0.5,
        2.0,
        f64::MIN_POSITIVE,
        f64::from_bits(1),
        f64::MAX,
        f64::EPSILON,
        1.0 - f64::EPSILON / 2.0,
        709.782_712_893_384,
        709.782_712_893_385,
        710.475_860_073_943_9,
        710.475_860_073_944,
        -708.396_418_532_264_1,
        -745.133_219_101_941_1,
        -745.133_219_101_941_2,
        19.061_547_465_398_5,
        36.736_800_569_677_1,
        std::f64::consts::FRAC_PI_2,
        std::f64::consts::PI,
        1_048_576.0,
        1_048_577.0,
        1.0e200,
    ];
    let neg: Vec<f64> = v.iter().map(|x| -x).collect();
    v.extend(neg);
    v
}

#[test]
fn float64_functions_are_within_1_ulp_and_the_same_at_every_level() {
    let levels = supported();
    let top = *levels.last().unwrap();
    for f in float64::FUNCS {
        let exact = exact_f64(f.name);
        let mut xs = sample_f64(f.name, 7, SAMPLES);
        xs.extend(specials64());
        let out = run(f, top, &xs);
        let bound = match f.name {
            "rsqrt" => 1.5,
            _ => 1.0,
        };
        for (&x, &y) in xs.iter().zip(&out) {
            let u = ulps_f64(y, exact(x));
            assert!(u <= bound, "{}: {u} ulp at x = {x:e} (got {y:e})", f.name);
        }
        for &l in &levels {
            let o = run(f, l, &xs);
            for (i, (&a, &b)) in out.iter().zip(&o).enumerate() {
                assert!(
                    same64(a, b),
                    "{} at {l:?}: {:e} gives {a:e} and {b:e}",
                    f.name,
                    xs[i]
                );
            }
        }
        for (&x, &y) in xs.iter().zip(&out).step_by(5) {
            assert!(same64((f.one)(x), y), "{}({x:e}) per element", f.name);
        }
    }
}

#[test]
fn float64_special_values_are_exact() {
    for f in float64::FUNCS {
        let exact = exact_f64(f.name);
        for x in specials64() {
            let (hi, _, e) = exact(x);
            let got = (f.one)(x);
            let special = e == 0 && (hi.is_nan() || hi.is_infinite() || hi == 0.0 || x == 0.0);
            if special {
                assert!(same64(got, hi), "{}({x:e}) = {got:e}, not {hi:e}", f.name);
            }
        }
    }
}

#[test]
fn fixups_reach_only_their_block() {
    // huge and non-finite inputs among small ones, in different blocks and at block
    // edges: every element as if computed alone
    let mut xs: Vec<f32> = (0..5000).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
    for (i, v) in [
        (1023, 3e7),
        (1024, -1e5),
        (3000, f32::INFINITY),
        (4100, f32::NAN),
    ] {
        xs[i] = v;
    }
    for name in ["sin", "cos", "tan"] {
        let f = float32::FUNCS.iter().find(|f| f.name == name).unwrap();
        for l in supported() {
            let out = run(f, l, &xs);
            for (&x, &y) in xs.iter().zip(&out) {
                assert!(same32((f.one)(x), y), "{name}({x:e}) at {l:?}");
            }
        }
        let exact = exact_f32(name);
        assert_eq!((f.one)(3e7), exact(3e7) as f32, "{name}: the fixup ran");
    }
}

#[test]
fn fast_paths_match_the_full_formulas() {
    // blocks entirely inside a fast path's domain next to blocks that are not: the
    // slice results equal the per-element (full) formula's everywhere
    let mut xs32: Vec<f32> = (0..8192)
        .map(|i| {
            if i / 1024 % 2 == 0 {
                (i as f32 - 4096.0) * 0.02
            } else {
                (i as f32 - 4096.0) * 0.03 + 1e-40
            }
        })
        .collect();
    // and whole blocks at the edges of exp2's fast path (2^k from bits down to 2^-125)
    for s in [1.0f32, -1.0] {
        xs32.extend((0..2048).map(|i| s * (123.0 + i as f32 / 1024.0)));
    }
    for f in float32::FUNCS {
        for l in supported() {
            for (&x, &y) in xs32.iter().zip(&run(f, l, &xs32)) {
                assert!(same32((f.one)(x), y), "{}({x:e}) at {l:?}", f.name);
            }
        }
    }
    let xs64: Vec<f64> = (0..8192)
        .map(|i| {
            if i / 1024 % 2 == 0 {
                (i as f64 - 4096.0) * 0.1
            } else {
                (i as f64 - 4096.0) * 0.2 + 1e-310
            }
        })
        .collect();
    for f in float64::FUNCS {
        for l in supported() {
            for (&x, &y) in xs64.iter().zip(&run(f, l, &xs64)) {
                assert!(same64((f.one)(x), y), "{}({x:e}) at {l:?}", f.name);
            }
        }
    }
}

#[test]
fn float32_pow_is_within_1_ulp_with_c_pow_special_values() {
    let dense: Vec<f32> = (0..(1u64 << 32) / (STRIDE * 4))
        .map(|i| f32::from_bits((i * STRIDE * 4) as u32))
        .collect();
    let mut xs = dense;
    xs.extend(specials32());
    let ys = [
        2.5f32,
        -1.5,
        1.0 / 3.0,
        0.7,
        10.0,
        -7.3,
        3.0,
        -3.0,
        4.0,
        1e-3,
        40.5,
    ];
    let special_ys = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        2.0,
        0.5,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ];
    for &y in ys.iter().chain(&special_ys) {
        let levels = supported();
        let mut out = vec![MaybeUninit::<f32>::uninit(); xs.len()];
        float32::powf::at(*levels.last().unwrap(), &xs, y, &mut out);
        // SAFETY: the slice function initialises every element
        let out: Vec<f32> = out
            .into_iter()
            .map(|v| unsafe { v.assume_init() })
            .collect();
        for (&x, &got) in xs.iter().zip(&out) {
            let exact = f64::from(x).powf(f64::from(y));
            let u = ulps_f32(got, exact);
            assert!(u <= 1.0, "pow({x:e}, {y:e}) = {got:e}: {u} ulp ({exact:e})");
            let want = exact as f32;
            if want.is_nan() || want.is_infinite() || want == 0.0 || want == 1.0 {
                assert!(
                    same32(got, want),
                    "pow({x:e}, {y:e}) = {got:e}, not {want:e}"
                );
            }
        }
        for &l in &levels {
            let mut o = vec![MaybeUninit::<f32>::uninit(); xs.len()];
            float32::powf::at(l, &xs, y, &mut o);
            for (i, v) in o.into_iter().enumerate() {
                // SAFETY: as above
                let v = unsafe { v.assume_init() };
                assert!(same32(v, out[i]), "pow({:e}, {y:e}) at {l:?}", xs[i]);
            }
        }
        for (&x, &v) in xs.iter().zip(&out).step_by(11) {
            assert!(
                same32(float32::pow1(x, y), v),
                "pow({x:e}, {y:e}) per element"
            );
        }
    }
}

#[test]
fn float32_erf_and_erfc_dense_near_their_switches_tails_and_specials() {
    // every float32 in the ranges where the forms switch or the results saturate: erf's
    // polynomial/exp switch at 1 and its rounding to 1 near 3.92; erfc's underflow to
    // the subnormals and 0 (9.19 to 10.06); erfc of negative x up to 2; then ±0, ±inf,
    // NaN and subnormals, exact where the value is a special value
    let span = |a: f32, b: f32, step: u32| -> Vec<f32> {
        let (lo, hi) = (a.to_bits(), b.to_bits());
        (lo..=hi)
            .step_by(step as usize)
            .map(f32::from_bits)
            .collect()
    };
    let mut xs = span(0.9, 1.1, 1);
    xs.extend(span(3.8, 4.1, 1));
    xs.extend(span(9.0, 10.2, 1));
    xs.extend(span(0.0, 1.0e-30, 4_099));
    let neg: Vec<f32> = xs.iter().map(|x| -x).collect();
    xs.extend(neg);
    xs.extend(span(0.5, 12.0, 61).into_iter().map(|x| -x));
    xs.extend([
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1.0e30,
        -1.0e30,
    ]);
    for name in ["erf", "erfc"] {
        let f = float32::FUNCS.iter().find(|f| f.name == name).unwrap();
        check32(f, &xs);
        let exact = exact_f32(name);
        for x in [
            0.0f32,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            20.0,
            -20.0,
            f32::NAN,
        ] {
            let want = exact(f64::from(x)) as f32;
            assert!(same32((f.one)(x), want), "{name}({x:e}) = {:e}", (f.one)(x));
        }
    }
}

#[test]
fn float32_gelu_is_within_its_bounds_and_the_same_at_every_level() {
    // against float64 libm's (x/2) erfc(-x/sqrt 2): for x >= 0 within 1 ulp; for x < 0
    // within 1.5 |x| 2^-25 absolute (the composite (x/2)(1 + erf) rounds 1 + erf near 0
    // by up to |x| 2^-26) and within 7 ulp for x > -sqrt 2 (where 1 + erf >= 0.157
    // cancels); at every level the same bits, in the per-element form and the tails
    let mut xs: Vec<f32> = (0..(1u64 << 32) / STRIDE)
        .map(|i| f32::from_bits((i * STRIDE) as u32))
        .collect();
    xs.extend((0..40_000).map(|i| (i as f32 - 20_000.0) * 0.0003));
    // around the switches: |x| = sqrt 2 and GELU_HI
    for c in [std::f32::consts::SQRT_2, 5.543_717] {
        for s in [1.0f32, -1.0] {
            let b = (s * c).to_bits();
            xs.extend((0..2000u32).map(|k| f32::from_bits(b - 1000 + k)));
        }
    }
    xs.extend(specials32());
    let run_at = |l: Level, xs: &[f32]| {
        let mut out = vec![MaybeUninit::<f32>::uninit(); xs.len()];
        float32::gelu::at(l, xs, &mut out);
        // SAFETY: slice functions initialise every element
        out.into_iter()
            .map(|v| unsafe { v.assume_init() })
            .collect::<Vec<f32>>()
    };
    let reference = |x: f32| {
        let x = f64::from(x);
        0.5 * x * libm::erfc(-x * std::f64::consts::FRAC_1_SQRT_2)
    };
    let best = run_at(supported()[supported().len() - 1], &xs);
    let (mut pos, mut neg_rel, mut neg_abs) = (0f64, 0f64, 0f64);
    for (&x, &y) in xs.iter().zip(&best) {
        if !x.is_finite() {
            continue;
        }
        let want = reference(x);
        if x >= 0.0 {
            pos = pos.max(ulps_f32(y, want));
        } else {
            // (a subnormal result: half its spacing, 2^-150, is the least error possible)
            let bound = (-f64::from(x) * 2f64.powi(-25)).max(2f64.powi(-150));
            neg_abs = neg_abs.max((f64::from(y) - want).abs() / bound);
            if x > -std::f32::consts::SQRT_2 {
                neg_rel = neg_rel.max(ulps_f32(y, want));
            }
        }
    }
    println!("gelu: x >= 0 {pos:.3} ulp; x < 0 {neg_abs:.3} |x| 2^-25 absolute, {neg_rel:.3} ulp");
    assert!(
        pos <= 1.0 && neg_abs <= 1.5 && neg_rel <= 7.0,
        "{pos} {neg_abs} {neg_rel}"
    );
    for l in supported() {
        let got = run_at(l, &xs);
        for ((&x, &w), &y) in xs.iter().zip(&best).zip(&got) {
            assert!(same32(w, y), "gelu({x:e}) at {l:?}: {y:e}, not {w:e}");
            assert!(same32(float32::gelu1(x), y), "gelu1({x:e})");
        }
        for n in [1, 3, 15, 17, 33] {
            let s = xs.len() / 3;
            for (j, &y) in run_at(l, &xs[s..s + n]).iter().enumerate() {
                assert!(same32(y, best[s + j]), "gelu tail at {l:?}");
            }
        }
    }
    // torch's float32 kernel's special values: +inf; -inf: NaN; NaN; +0 at -0 and where
    // erf(x/sqrt 2) rounds to -1 (its x/2 + (x/2) erf)
    let g = float32::gelu1;
    assert_eq!(g(f32::INFINITY), f32::INFINITY);
    assert!(g(f32::NEG_INFINITY).is_nan() && g(f32::NAN).is_nan());
    for x in [-0.0f32, -10.0, -1e30, -6.0] {
        assert_eq!(g(x).to_bits(), 0, "gelu({x})");
    }
    assert_eq!(g(0.0).to_bits(), 0);
    assert_eq!(g(1e-45), 0.0);
    assert_eq!(g(3e38), 3e38);
}
