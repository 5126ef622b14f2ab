//! lgamma, digamma (float32) and xlogy (both dtypes): the block fast path against the
//! full formula, every level bit for bit, torch's special values, and accuracy against
//! the references (the dense 1/97 sample of all bit patterns is in `tests.rs`, which
//! lists lgamma and digamma among the float32 functions).

#![allow(clippy::unwrap_used, clippy::panic, clippy::float_cmp)]

use super::reference::{digamma_ref, lgamma_ref, ulps_f32};
use super::tests::{run, same32, same64};
use super::{Func, Func2, Level, float32, float64, supported};
use std::mem::MaybeUninit;

fn func(name: &str) -> &'static Func<f32> {
    float32::FUNCS.iter().find(|f| f.name == name).unwrap()
}

#[test]
fn gamma_fast_blocks_give_the_full_formulas_bits() {
    // block 0: every input in (0, 8) (the fast path); block 1: the same inputs and one
    // negative at its end (the full formula); block 2: inputs beyond 8 and specials
    let inside: Vec<f32> = (0..1024)
        .map(|i| 1e-3 + i as f32 * (7.99 / 1024.0))
        .collect();
    let mut xs = inside.clone();
    xs.extend(&inside[..1023]);
    xs.push(-2.5);
    xs.extend((0..1000).map(|i| 8.0 + i as f32 * 0.37));
    xs.extend([
        0.0,
        -0.0,
        -3.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1e-45,
    ]);
    for name in ["lgamma", "digamma"] {
        let f = func(name);
        for l in supported() {
            let y = run(f, l, &xs);
            for i in 0..1023 {
                assert!(same32(y[i], y[1024 + i]), "{name}({:e}) at {l:?}", xs[i]);
            }
            for (&x, &v) in xs.iter().zip(&y) {
                assert!(same32((f.one)(x), v), "{name}({x:e}) at {l:?} per element");
            }
        }
    }
}

#[test]
fn gamma_special_values_are_torchs() {
    let lg = func("lgamma").one;
    let dg = func("digamma").one;
    let inf = f32::INFINITY;
    for x in [0.0, -0.0, -1.0, -2.0, -1e7, -3e38, inf, -inf] {
        assert_eq!(lg(x), inf, "lgamma({x:e})");
    }
    assert!(lg(f32::NAN).is_nan());
    // the zeros at 1 and 2 are exact (+0), and so are their neighbours' relative errors
    assert!(same32(lg(1.0), 0.0) && same32(lg(2.0), 0.0));
    assert_eq!(lg(f32::MAX), inf);
    assert_eq!(dg(0.0), -inf);
    assert_eq!(dg(-0.0), inf);
    assert_eq!(dg(inf), inf);
    for x in [-1.0, -2.0, -1e7, -3e38, -inf, f32::NAN] {
        assert!(dg(x).is_nan(), "digamma({x:e})");
    }
    // known values, correctly rounded
    assert_eq!(lg(0.5), 0.572_364_94); // ln sqrt(pi)
    assert_eq!(dg(1.0), -0.577_215_7); // -Euler's gamma
    assert_eq!(lg(-0.5), 1.265_512_1); // ln(2 sqrt(pi))
}

#[test]
fn gamma_within_half_an_ulp_where_the_values_are_small() {
    // the zeros 1, 2 (lgamma), 1.4616... (digamma) and the first negative zeros of
    // lgamma (-2.457..., -2.747...), every float32 around them: the reduction keeps them
    // as exact factors, so the result is relatively accurate (the float32 rounding plus
    // about 2^-40)
    let around =
        |c: f32, n: i32| (-n..=n).map(move |k| f32::from_bits((c.to_bits() as i32 + k) as u32));
    let step = if cfg!(debug_assertions) {
        20_000
    } else {
        200_000
    };
    for (name, centers) in [
        (
            "lgamma",
            vec![1.0f32, 2.0, -2.457_024_7, -2.747_682_7, -3.143_563_7],
        ),
        ("digamma", vec![1.461_632_1, -0.504_083_0, -1.573_498_5]),
    ] {
        let f = func(name);
        let exact: fn(f64) -> f64 = if name == "lgamma" {
            lgamma_ref
        } else {
            digamma_ref
        };
        for c in centers {
            let xs: Vec<f32> = around(c, step).collect();
            let y = run(f, super::level(), &xs);
            for (&x, &v) in xs.iter().zip(&y) {
                let u = ulps_f32(v, exact(f64::from(x)));
                assert!(u <= 0.51, "{name}({x:e}) = {v:e}: {u} ulp");
            }
        }
    }
}

fn xlogy_exact(a: f64, b: f64) -> f64 {
    if b.is_nan() {
        b
    } else if a == 0.0 {
        0.0
    } else {
        a * b.ln()
    }
}

#[test]
fn xlogy_is_a_times_log_at_every_level() {
    let specials = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        2.5,
        1e-40,
        1e30,
        f64::INFINITY,
        -f64::INFINITY,
        f64::NAN,
    ];
    let mut pairs: Vec<(f64, f64)> = Vec::new();
    for &a in &specials {
        for &b in &specials {
            pairs.push((a, b));
        }
    }
    let mut s = 0x1234_5678_9abc_def0u64;
    for _ in 0..20_000 {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let a = ((s >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 20.0;
        let b = f64::exp(((s >> 3) % 2000) as f64 / 20.0 - 50.0);
        pairs.push((a, b));
    }
    let (a64, b64): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
    let a32: Vec<f32> = a64.iter().map(|&v| v as f32).collect();
    let b32: Vec<f32> = b64.iter().map(|&v| v as f32).collect();
    let f32k: &Func2<f32> = &Func2 {
        name: "xlogy",
        at: float32::xlogy::at,
        one: float32::xlogy1,
    };
    let f64k: &Func2<f64> = &Func2 {
        name: "xlogy",
        at: float64::xlogy::at,
        one: float64::xlogy1,
    };
    let top32 = {
        let mut out = vec![MaybeUninit::uninit(); a32.len()];
        (f32k.at)(Level::Baseline, &a32, &b32, &mut out);
        out.into_iter()
            .map(|v| unsafe { v.assume_init() })
            .collect::<Vec<f32>>()
    };
    let top64 = {
        let mut out = vec![MaybeUninit::uninit(); a64.len()];
        (f64k.at)(Level::Baseline, &a64, &b64, &mut out);
        out.into_iter()
            .map(|v| unsafe { v.assume_init() })
            .collect::<Vec<f64>>()
    };
    for l in supported() {
        let mut o32 = vec![MaybeUninit::uninit(); a32.len()];
        (f32k.at)(l, &a32, &b32, &mut o32);
        let mut o64 = vec![MaybeUninit::uninit(); a64.len()];
        (f64k.at)(l, &a64, &b64, &mut o64);
        for i in 0..a32.len() {
            // SAFETY: initialised by the slice functions
            let (v32, v64) = unsafe { (o32[i].assume_init(), o64[i].assume_init()) };
            assert!(
                same32(v32, top32[i]),
                "xlogy({:e}, {:e}) at {l:?}",
                a32[i],
                b32[i]
            );
            assert!(
                same64(v64, top64[i]),
                "xlogy({:e}, {:e}) at {l:?}",
                a64[i],
                b64[i]
            );
        }
    }
    for i in 0..a32.len() {
        let (a, b) = (a32[i], b32[i]);
        assert!(same32((f32k.one)(a, b), top32[i]), "xlogy1({a:e}, {b:e})");
        assert!(same64((f64k.one)(a64[i], b64[i]), top64[i]));
        // the log within 1 ulp, then the product's rounding
        let want = xlogy_exact(f64::from(a), f64::from(b));
        let got = top32[i];
        if want.is_nan() || want.is_infinite() || want == 0.0 {
            assert!(
                same32(got, want as f32) || (want == 0.0 && got == 0.0 && a != 0.0),
                "xlogy({a:e}, {b:e}) = {got:e}, not {want:e}"
            );
        } else {
            assert!(
                ulps_f32(got, want) <= 1.5,
                "xlogy({a:e}, {b:e}) = {got:e}, {want:e}"
            );
        }
        let w64 = xlogy_exact(a64[i], b64[i]);
        let g64 = top64[i];
        if w64.is_finite() && w64 != 0.0 {
            assert!(
                (g64 - w64).abs() <= w64.abs() * 4e-16,
                "xlogy({:e}, {:e})",
                a64[i],
                b64[i]
            );
        } else {
            assert!(
                same64(g64, w64) || (w64 == 0.0 && g64 == 0.0),
                "xlogy({:e}, {:e})",
                a64[i],
                b64[i]
            );
        }
    }
    // +0 where a is ±0 (b not NaN), NaN where b is NaN
    assert!(same32(float32::xlogy1(-0.0, 2.0), 0.0));
    assert!(same32(float32::xlogy1(0.0, -1.0), 0.0));
    assert!(float32::xlogy1(0.0, f32::NAN).is_nan());
    assert_eq!(float32::xlogy1(1.0, 0.0), f32::NEG_INFINITY);
}
