//! float64 erf, erfc and erfinv (`float64::special`): accuracy against mpmath's values
//! (`MPMATH`, below) and against a double-double reference on random samples (itself
//! checked against mpmath's values); every level bit for bit, the per-element form, the
//! scalar tails and erfinv's fast path; special values; and the distance from the libm
//! forms they replaced (`libm::erf`, `libm::erfc` and the Newton erfinv).

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    clippy::float_cmp,
    clippy::excessive_precision
)]

use super::reference::ulps_f64;
use super::tests::{run, same64};
use super::{Func, float64, supported};

fn func(name: &str) -> &'static Func<f64> {
    float64::ERF_FUNCS.iter().find(|f| f.name == name).unwrap()
}

/// Random samples per function (debug builds take fewer); `RGRAD_ERF64_SAMPLES`
/// overrides (the figures in docs/kernels.md: `--profile dev-release` with 2^24).
fn samples() -> usize {
    std::env::var("RGRAD_ERF64_SAMPLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) {
            1 << 14
        } else {
            1 << 21
        })
}

// ---- a double-double reference ------------------------------------------------------

use super::reference::Dd;

const LN2: [f64; 3] = [
    std::f64::consts::LN_2,
    2.319_046_813_846_299_6e-17,
    5.707_708_438_416_212e-34,
];
const TWO_OVER_SQRT_PI: Dd = Dd(std::f64::consts::FRAC_2_SQRT_PI, 1.533_545_961_316_588e-17);
const ONE_OVER_SQRT_PI: Dd = Dd(0.564_189_583_547_756_3, 7.667_729_806_582_94e-18);
const HALF_SQRT_PI: Dd = Dd(0.886_226_925_452_758, -3.833_293_249_912_899_3e-17);
const PI_OVER_12: f64 = 0.261_799_387_799_149_46;

/// e^x = m 2^k for a two-float x (|x| below 2^20): k = round(x / ln 2), the rest by
/// Taylor's series (|r| <= 0.35: 30 terms).
fn exp_dd(x: Dd) -> (Dd, i32) {
    let k = (x.0 / LN2[0]).round();
    let mut r = x;
    for c in LN2 {
        r = r.sub(Dd::f(k).mul(Dd::f(c)));
    }
    let mut s = Dd::f(1.0);
    for n in (1..=30).rev() {
        s = Dd::f(1.0).add(r.mul(s).div(Dd::f(f64::from(n))));
    }
    (s, k as i32)
}

/// erf x for |x| <= 2.5 by its Taylor series (2/sqrt(pi)) sum (-1)^n x^(2n+1)/(n! (2n+1))
/// (the largest term is below 20: about 100 bits are left, and 90 in erfc = 1 - erf).
fn erf_series(x: f64) -> Dd {
    let z = Dd::f(x).mul(Dd::f(x)).neg();
    let mut term = Dd::f(x);
    let mut sum = Dd::f(x);
    for n in 1..200 {
        term = term.mul(z).div(Dd::f(f64::from(n)));
        let t = term.div(Dd::f(f64::from(2 * n + 1)));
        sum = sum.add(t);
        if t.0.abs() < 1e-36 * sum.0.abs() {
            break;
        }
    }
    TWO_OVER_SQRT_PI.mul(sum)
}

/// erfc x = m 2^k for x >= 2.5 by Laplace's continued fraction, erfc x = e^(-x^2)/sqrt(pi)
/// / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), 240 terms from the bottom (converged
/// to below 2^-110 from x = 2.5 on).
fn erfc_cf(x: f64) -> (Dd, i32) {
    let xd = Dd::f(x);
    let mut t = xd;
    for n in (1..=240).rev() {
        t = xd.add(Dd::f(0.5 * f64::from(n)).div(t));
    }
    let x2 = Dd::f(x).mul(Dd::f(x));
    let (e, k) = exp_dd(x2.neg());
    (e.mul(ONE_OVER_SQRT_PI).div(t), k)
}

/// m 2^k as (hi, lo, e): scaled (e = k) below about 2^-900, where lo would lose bits.
fn scaled(m: Dd, k: i32) -> (f64, f64, i32) {
    if k < -900 {
        (m.0, m.1, k)
    } else {
        let s = 2f64.powi(k);
        (m.0 * s, m.1 * s, 0)
    }
}

/// erf x as (hi, lo, 0).
fn erf_ref(x: f64) -> (f64, f64, i32) {
    if x.is_nan() {
        return (f64::NAN, 0.0, 0);
    }
    if x == 0.0 || x.abs() < 1e-300 {
        // 2x/sqrt(pi) (1 - x^2/3): the second term is far below the last bit
        let v = TWO_OVER_SQRT_PI.mul(Dd::f(x * 2f64.powi(600)));
        return (v.0, v.1, -600);
    }
    let a = x.abs();
    let v = if a <= 2.5 {
        erf_series(a)
    } else if a < 40.0 {
        let (m, k) = erfc_cf(a);
        let s = 2f64.powi(k);
        Dd::f(1.0).sub(Dd(m.0 * s, m.1 * s))
    } else {
        Dd::f(1.0)
    };
    let v = if x < 0.0 { v.neg() } else { v };
    (v.0, v.1, 0)
}

/// erfc x as (hi, lo, e) (scaled where it is subnormal).
fn erfc_ref(x: f64) -> (f64, f64, i32) {
    if x.is_nan() {
        return (f64::NAN, 0.0, 0);
    }
    if x <= 2.5 {
        let e = if x < -40.0 {
            Dd::f(1.0)
        } else if x.abs() <= 2.5 {
            erf_series(x)
        } else {
            let (m, k) = erfc_cf(-x);
            let s = 2f64.powi(k);
            Dd::f(1.0).sub(Dd(m.0 * s, m.1 * s))
        };
        let v = Dd::f(1.0).sub(if x < -2.5 { e.neg() } else { e });
        return (v.0, v.1, 0);
    }
    if x > 40.0 {
        return (0.0, 0.0, 0);
    }
    let (m, k) = erfc_cf(x);
    scaled(m, k)
}

/// erfinv y as (hi, lo, e): two Newton steps in double-double from the libm form's
/// value (each about doubles its ~53 correct bits), on erf, or on erfc from |y| = 1/2
/// (where 1 - |y| is exact); the series y sqrt(pi)/2 (1 + pi y^2/12) for tiny y.
fn erfinv_ref(y: f64) -> (f64, f64, i32) {
    let a = y.abs();
    if y.is_nan() || a > 1.0 {
        return (f64::NAN, 0.0, 0);
    }
    if a == 1.0 {
        return (f64::INFINITY.copysign(y), 0.0, 0);
    }
    if a < 1e-30 {
        let v = HALF_SQRT_PI.mul(Dd::f(y * 2f64.powi(600)));
        return (v.0, v.1, -600);
    }
    if a < 1e-9 {
        let v = HALF_SQRT_PI
            .mul(Dd::f(y))
            .mul(Dd::f(1.0).add(Dd::f(PI_OVER_12 * a * a)));
        return (v.0, v.1, 0);
    }
    let mut x = Dd::f(erfinv_libm(a));
    for _ in 0..2 {
        let d = std::f64::consts::FRAC_2_SQRT_PI * (-x.0 * x.0).exp();
        let step = if a >= 0.5 {
            let e = erfc_ref(x.0);
            // erfc(x0 + x1) = erfc x0 - x1 erf'(x0)
            let e = Dd(e.0, e.1).sub(Dd::f(x.1 * d));
            e.sub(Dd::f(1.0 - a))
        } else {
            let e = erf_ref(x.0);
            let e = Dd(e.0, e.1).add(Dd::f(x.1 * d));
            Dd::f(a).sub(e)
        };
        x = x.add(Dd::f(step.0 / d));
    }
    let x = if y < 0.0 { x.neg() } else { x };
    (x.0, x.1, 0)
}

/// The libm-based erfinv that the kernel replaced (`backend::cpu::unary`): Giles'
/// single-precision approximation, then four Newton steps on erf (on ln erfc above
/// 1/2), with libm's erf, erfc and log.
fn erfinv_libm(y: f64) -> f64 {
    let a = y.abs();
    if y.is_nan() || a > 1.0 {
        return f64::NAN;
    }
    if a == 1.0 {
        return f64::INFINITY.copysign(y);
    }
    let w = -((1.0 - a) * (1.0 + a)).ln();
    let p = if w < 5.0 {
        let w = w - 2.5;
        [
            2.810_226_36e-08,
            3.432_739_39e-07,
            -3.523_387_7e-06,
            -4.391_506_54e-06,
            0.000_218_580_87,
            -0.001_253_725_03,
            -0.004_177_681_64,
            0.246_640_727,
            1.501_409_41,
        ]
        .iter()
        .fold(0.0, |p, &c| p * w + c)
    } else {
        let w = w.sqrt() - 3.0;
        [
            -0.000_200_214_257,
            0.000_100_950_558,
            0.001_349_343_22,
            -0.003_673_428_44,
            0.005_739_507_73,
            -0.007_622_461_3,
            0.009_438_870_47,
            1.001_674_06,
            2.832_976_82,
        ]
        .iter()
        .fold(0.0, |p, &c| p * w + c)
    };
    let mut x = p * a;
    for _ in 0..4 {
        let d = std::f64::consts::FRAC_2_SQRT_PI * (-x * x).exp();
        x -= if a > 0.5 {
            let c = libm::erfc(x);
            (c.ln() - (1.0 - a).ln()) / (-d / c)
        } else {
            (libm::erf(x) - a) / d
        };
    }
    x.copysign(y)
}

/// The ulp of the value h 2^e (the subnormals' spacing below 2^-1022).
fn ulp_of(h: f64, e: i32) -> f64 {
    let v = h.abs() * 2f64.powi(e.max(-1000)) * 2f64.powi(e - e.max(-1000));
    // 2^(E - 52) for v in [2^E, 2^(E+1)), from its bits (powi underflows on the way)
    let eb = v.to_bits() >> 52;
    if eb > 52 {
        f64::from_bits((eb - 52) << 52)
    } else {
        f64::from_bits(1u64 << eb.saturating_sub(1))
    }
}

fn reference(name: &str) -> fn(f64) -> (f64, f64, i32) {
    match name {
        "erf" => erf_ref,
        "erfc" => erfc_ref,
        "erfinv" => erfinv_ref,
        _ => panic!("no reference for {name}"),
    }
}

fn old(name: &str) -> fn(f64) -> f64 {
    match name {
        "erf" => libm::erf,
        "erfc" => libm::erfc,
        "erfinv" => erfinv_libm,
        _ => panic!("no old form of {name}"),
    }
}

// ---- samples ------------------------------------------------------------------------

/// `n` inputs for `name`: random bit patterns, uniform over the interesting range,
/// log-uniform magnitudes, and dense neighbourhoods of the kernels' switch points.
fn sample(name: &str, seed: u64, n: usize) -> Vec<f64> {
    let mut s = 0x9E37_79B9_7F4A_7C15_u64 ^ seed.wrapping_mul(0xD1B5_4A32_D192_ED03);
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let unit = |b: u64| (b >> 11) as f64 / (1u64 << 53) as f64;
    let sign = |b: u64| if b & 1 == 0 { 1.0 } else { -1.0 };
    // (lo, hi) of the uniform samples, the switch points
    let (lo, hi, points): (f64, f64, &[f64]) = match name {
        "erf" => (-6.5, 6.5, &[0.75, 1.0, 5.921_587_195_794_507, 6.0]),
        "erfc" => (
            -6.5,
            27.5,
            &[0.75, 1.0, 26.543_258_454_250_98, 27.226, 27.3],
        ),
        _ => (
            -1.0,
            1.0,
            &[0.75, 0.999, 0.999_03, 9.313_225_746_154_785e-10],
        ),
    };
    (0..n)
        .map(|i| {
            let b = next();
            match i % 6 {
                0 => f64::from_bits(b),
                1 | 2 => lo + (hi - lo) * unit(b),
                3 => 2f64.powf(-40.0 + 45.0 * unit(b)).copysign(sign(b)),
                4 => {
                    if name == "erfinv" {
                        // 1 - 2^-k u: every binade of 1 - |y| down to 2^-53
                        (1.0 - 2f64.powf(-53.0 * unit(b))).copysign(sign(b))
                    } else if name == "erfc" {
                        26.0 + 1.4 * unit(b)
                    } else {
                        (0.5 + 1.0 * unit(b)).copysign(sign(b))
                    }
                }
                _ => {
                    let p = points[(b >> 40) as usize % points.len()];
                    let k = ((b >> 8) & 0xFFFF) as i64 - 0x8000;
                    f64::from_bits((p.to_bits() as i64 + k) as u64).copysign(sign(b))
                }
            }
        })
        .collect()
}

// ---- tests --------------------------------------------------------------------------

/// A table row: x, hi, lo as bit patterns, and e.
type Row = (u64, u64, u64, i32);

fn rows(table: &[Row]) -> Vec<(f64, f64, f64, i32)> {
    table
        .iter()
        .map(|&(x, h, l, e)| (f64::from_bits(x), f64::from_bits(h), f64::from_bits(l), e))
        .collect()
}

#[test]
fn double_double_reference_agrees_with_mpmath() {
    for &(name, table) in MPMATH {
        let r = reference(name);
        for (x, hi, lo, e) in rows(table) {
            let (h, l, k) = r(x);
            // both at mpmath's scale 2^e (the reference scales tiny values by 2^600)
            let s = 2f64.powi(k - e);
            let d = (h * s - hi) + (l * s - lo);
            // within 2^-88 of the value (or of the subnormals' spacing, where a low part
            // is subnormal)
            assert!(
                d.abs() <= hi.abs() * 2f64.powi(-88) + f64::from_bits(16),
                "{name}({x:e}): reference ({h:e}, {l:e}, {k}), mpmath ({hi:e}, {lo:e}, {e})"
            );
        }
    }
}

#[test]
fn within_1_ulp_of_mpmath() {
    for &(name, table) in MPMATH {
        let f = func(name);
        let rows = rows(table);
        let xs: Vec<f64> = rows.iter().map(|t| t.0).collect();
        let mut worst = (0.0, 0.0);
        for l in supported() {
            let out = run(f, l, &xs);
            for (&(x, hi, lo, e), &y) in rows.iter().zip(&out) {
                let u = ulps_f64(y, (hi, lo, e));
                assert!(u <= 1.0, "{name}({x:e}) = {y:e}: {u} ulp at {l:?}");
                if u > worst.0 {
                    worst = (u, x);
                }
            }
        }
        println!(
            "{name}: max {:.3} ulp at {:e} over {} mpmath values",
            worst.0,
            worst.1,
            rows.len()
        );
    }
}

#[test]
fn within_1_ulp_of_the_reference_on_samples() {
    let n = samples();
    for f in float64::ERF_FUNCS {
        let r = reference(f.name);
        let xs = sample(f.name, 11, n);
        let out = run(f, super::level(), &xs);
        let mut worst = (0.0, 0.0);
        for (&x, &y) in xs.iter().zip(&out) {
            let u = ulps_f64(y, r(x));
            if u > worst.0 {
                worst = (u, x);
            }
        }
        println!(
            "{}: max {:.3} ulp at {:e} over {n} samples",
            f.name, worst.0, worst.1
        );
        assert!(
            worst.0 <= 1.0,
            "{}: {} ulp at x = {:e}",
            f.name,
            worst.0,
            worst.1
        );
    }
}

#[test]
fn close_to_the_libm_forms_they_replaced() {
    // the new kernels against the old ones (libm's erf and erfc, the Newton erfinv) on
    // the same samples: each is measured against the reference, and they differ by no
    // more than their two errors
    let n = samples();
    for f in float64::ERF_FUNCS {
        let (r, o) = (reference(f.name), old(f.name));
        let xs = sample(f.name, 23, n);
        let out = run(f, super::level(), &xs);
        let (mut new_max, mut old_max, mut diff_max) = ((0.0f64, 0.0f64), 0.0f64, 0.0f64);
        for (&x, &y) in xs.iter().zip(&out) {
            let exact = r(x);
            let (un, uo) = (ulps_f64(y, exact), ulps_f64(o(x), exact));
            // distance between the two, in ulps of the exact value
            let (h, _, e) = exact;
            let ud = if h.is_nan() || h.is_infinite() || y == o(x) {
                0.0
            } else {
                (y - o(x)).abs() / ulp_of(h, e)
            };
            if un > new_max.0 {
                new_max = (un, x);
            }
            old_max = old_max.max(uo);
            diff_max = diff_max.max(ud);
            assert!(
                ud <= un + uo + 1e-9,
                "{}({x:e}): new {y:e}, old {:e}",
                f.name,
                o(x)
            );
        }
        println!(
            "{}: new {:.3} ulp (at {:e}), old {old_max:.3} ulp, new - old up to {diff_max:.3} \
             ulp ({n} samples)",
            f.name, new_max.0, new_max.1
        );
        assert!(new_max.0 <= 1.0, "{}: {} ulp", f.name, new_max.0);
    }
}

#[test]
fn the_same_bits_at_every_level_per_element_and_in_tails() {
    for f in float64::ERF_FUNCS {
        let mut xs = sample(f.name, 5, 20_000);
        xs.extend(specials());
        let levels = supported();
        let out = run(f, levels[0], &xs);
        for &l in &levels[1..] {
            for (i, (&a, &b)) in out.iter().zip(&run(f, l, &xs)).enumerate() {
                assert!(
                    same64(a, b),
                    "{}({:e}) at {l:?}: {a:e}, {b:e}",
                    f.name,
                    xs[i]
                );
            }
        }
        for (&x, &y) in xs.iter().zip(&out) {
            assert!(same64((f.one)(x), y), "{}({x:e}) per element", f.name);
        }
        // short slices: scalar tails only
        for n in [1, 3, 7, 9, 15, 17] {
            let at = xs.len() / 2;
            for &l in &levels {
                for (j, &y) in run(f, l, &xs[at..at + n]).iter().enumerate() {
                    assert!(same64(y, out[at + j]), "{} tail at {l:?}", f.name);
                }
            }
        }
    }
}

#[test]
fn erfinv_fast_blocks_give_the_full_formulas_bits() {
    // block 0: every |y| <= 0.999 (the fast path); block 1: the same and one y beyond;
    // block 2: y near ±1, ±1, NaN
    let f = func("erfinv");
    let inside: Vec<f64> = (0..1024)
        .map(|i| -0.999 + i as f64 * (1.998 / 1023.0))
        .collect();
    let mut xs = inside.clone();
    xs.extend(&inside[..1023]);
    xs.push(0.9995);
    xs.extend((0..1000).map(|i| 1.0 - 2f64.powf(-1.0 - 0.052 * i as f64)));
    xs.extend([1.0, -1.0, f64::NAN, 0.999, -0.999, 0.999_000_000_000_000_1]);
    for l in supported() {
        let y = run(f, l, &xs);
        for i in 0..1023 {
            assert!(same64(y[i], y[1024 + i]), "erfinv({:e}) at {l:?}", xs[i]);
        }
        for (&x, &v) in xs.iter().zip(&y) {
            assert!(same64((f.one)(x), v), "erfinv({x:e}) at {l:?} per element");
        }
    }
}

fn specials() -> Vec<f64> {
    let mut v = vec![
        0.0,
        f64::from_bits(1),
        f64::MIN_POSITIVE,
        1e-300,
        1e-20,
        9.313_225_746_154_785e-10,
        0.75,
        0.999,
        1.0 - f64::EPSILON / 2.0,
        1.0,
        1.0 + f64::EPSILON,
        5.921_587_195_794_507,
        6.0,
        26.543_258_454_250_98,
        27.226_017_111_108_36,
        27.3,
        28.0,
        1e10,
        1e300,
        f64::MAX,
        f64::INFINITY,
        f64::NAN,
    ];
    let neg: Vec<f64> = v.iter().map(|x| -x).collect();
    v.extend(neg);
    v
}

#[test]
fn special_values() {
    let (erf, erfc, erfinv) = (func("erf").one, func("erfc").one, func("erfinv").one);
    let inf = f64::INFINITY;
    // signed zeros, infinities, NaN
    assert!(same64(erf(0.0), 0.0) && same64(erf(-0.0), -0.0));
    assert!(same64(erfinv(0.0), 0.0) && same64(erfinv(-0.0), -0.0));
    assert_eq!(erfc(0.0), 1.0);
    assert_eq!(erfc(-0.0), 1.0);
    assert_eq!(erf(inf), 1.0);
    assert_eq!(erf(-inf), -1.0);
    assert!(same64(erfc(inf), 0.0));
    assert_eq!(erfc(-inf), 2.0);
    assert_eq!(erfinv(1.0), inf);
    assert_eq!(erfinv(-1.0), -inf);
    for y in [
        1.0 + f64::EPSILON,
        -1.0 - f64::EPSILON,
        2.0,
        -3.5,
        inf,
        -inf,
    ] {
        assert!(erfinv(y).is_nan(), "erfinv({y:e})");
    }
    for f in [erf, erfc, erfinv] {
        assert!(f(f64::NAN).is_nan() && f(-f64::NAN).is_nan());
    }
    // saturation: erf is ±1 from 5.9216 on, erfc 2 from -5.8636 down and 0 from 27.2261
    // up (the last subnormal just below)
    assert_eq!(erf(5.922), 1.0);
    assert_eq!(erf(-100.0), -1.0);
    assert!(erf(5.92) < 1.0);
    // (2 - erfc 5.8636 = 2 - 2^-53, the midpoint between 2 and its predecessor)
    assert_eq!(erfc(-5.87), 2.0);
    assert!(erfc(-5.86) < 2.0);
    assert!(same64(erfc(28.0), 0.0) && same64(erfc(1e300), 0.0));
    assert!(erfc(27.22) <= f64::from_bits(1)); // 0.69 of the smallest subnormal
    assert!(erfc(26.6) > 0.0 && erfc(26.6) < f64::MIN_POSITIVE);
    // tiny inputs: erf x = 2x/sqrt(pi), erfinv y = y sqrt(pi)/2 (rounded), subnormals
    // included
    let t = f64::from_bits(1);
    assert_eq!(erf(t), t);
    assert_eq!(erf(f64::from_bits(3)), f64::from_bits(3));
    assert_eq!(erf(f64::from_bits(10)), f64::from_bits(11));
    assert_eq!(erfinv(f64::from_bits(10)), f64::from_bits(9));
    assert_eq!(erfc(1e-300), 1.0);
}

/// erf, erfc and erfinv at chosen points: (x, hi, lo, e) as bit patterns, the value
/// (hi + lo) 2^e, from mpmath at 60 digits. The points: the kernels' switch points and
/// their neighbours (|x| = 0.5, 0.45, 5.9216, 6, 27.3; |y| = 0.5, 0.999, 0.99903), the
/// ends of the ranges (erf and erfc saturating, erfc's subnormal results from 26.5433
/// and its underflow at 27.226, y = ±(1 - 2^-k) for k up to 53), tiny and subnormal
/// inputs, random points over each range, and the inputs where the kernels' errors were
/// largest on 2^23 random samples each (`sample`). Generated by a script of the form
/// `mpmath.erfc(mpf(x))`, hi = float(v), lo = float(v - hi) (v scaled by 2^200 below
/// 2^-1000).
const MPMATH: &[(&str, &[Row])] = &[
    ("erf", ERF_TABLE),
    ("erfc", ERFC_TABLE),
    ("erfinv", ERFINV_TABLE),
];

const ERF_TABLE: &[Row] = &[
    (
        0xC018FD785DB029E4,
        0xBFF0000000000000,
        0x3C32689CE3104F4E,
        0,
    ),
    (
        0xC017E50951A026D1,
        0xBFF0000000000000,
        0x3C8113890CB4A8AF,
        0,
    ),
    (
        0xC016F5727AFD92D0,
        0xBFEFFFFFFFFFFFFC,
        0x3C831CBC04846603,
        0,
    ),
    (
        0xC0142C981259011B,
        0xBFEFFFFFFFFFDD5C,
        0xBC84CDF6AFCDC58F,
        0,
    ),
    (
        0xC0138ADE76C912A7,
        0xBFEFFFFFFFFF54A3,
        0x3C5ADD17763AC394,
        0,
    ),
    (
        0xC012A5B8AFCC24CE,
        0xBFEFFFFFFFFA11C2,
        0xBC77C892C5F42980,
        0,
    ),
    (
        0xC01248E1408B6764,
        0xBFEFFFFFFFF20ABC,
        0xBC668B9F2E8E5721,
        0,
    ),
    (
        0xC0112B6AC38DB343,
        0xBFEFFFFFFF509B05,
        0xBC854323417D8389,
        0,
    ),
    (
        0xC00F14A5A1C4CB22,
        0xBFEFFFFFEAF1D859,
        0xBC7DC70D1B85F7D6,
        0,
    ),
    (
        0xC00EE0DE4D34B3F6,
        0xBFEFFFFFE63B844D,
        0xBC770CE504D49A18,
        0,
    ),
    (
        0xC00E894A430A4472,
        0xBFEFFFFFDBD7AA27,
        0x3C64183D2FA22B74,
        0,
    ),
    (
        0xC00E7B3604725CBB,
        0xBFEFFFFFD9D4D0E5,
        0xBC6160B7FD8DEC52,
        0,
    ),
    (
        0xC00DE3715EB916EA,
        0xBFEFFFFFBBFCDD1E,
        0xBC720C8FDA9B1B7D,
        0,
    ),
    (
        0xC00DBCF1CB3C04A6,
        0xBFEFFFFFB1633DE0,
        0x3C853FBEF399486C,
        0,
    ),
    (
        0xC00C93C044185644,
        0xBFEFFFFF14FFA7EE,
        0x3C814411DBF8E4D3,
        0,
    ),
    (
        0xC00C2C5C4B577428,
        0xBFEFFFFEAB4DD4FD,
        0x3C89CA988028804F,
        0,
    ),
    (
        0xC00C04717AEE5330,
        0xBFEFFFFE774B3100,
        0xBC862E3222C57102,
        0,
    ),
    (
        0xC00A80AEE1BAE668,
        0xBFEFFFFA215FB6E2,
        0x3C7EF87723E0E596,
        0,
    ),
    (
        0xC0086AC09F11934C,
        0xBFEFFFDEBBDC4C11,
        0xBC7A8FC5F01A6068,
        0,
    ),
    (
        0xC00468EC8065BA87,
        0xBFEFFD78DB91B288,
        0xBC737988AD6AA011,
        0,
    ),
    (
        0xC003CF1821EE20AC,
        0xBFEFFC36B72EF0F2,
        0xBC751AE2E6DC2602,
        0,
    ),
    (
        0xC00316B9999EBBB6,
        0xBFEFF9F0DFB3093F,
        0x3C4D93DF1BCAEF01,
        0,
    ),
    (
        0xC002CCFBDCF56FBC,
        0xBFEFF8B7EBA4DB88,
        0xBC8D9D06A9F2BF45,
        0,
    ),
    (
        0xC0017DCCA4FB302C,
        0xBFEFEFB79C90BB07,
        0xBC7D85244F55DFB5,
        0,
    ),
    (
        0xC000ECCC16A373BE,
        0xBFEFE94A89F4FE23,
        0x3C40A644F21F3B99,
        0,
    ),
    (
        0xC00016D41BAEB452,
        0xBFEFDB86914FF355,
        0x3C8D04A4E21A8348,
        0,
    ),
    (
        0xBFFF50C1D3A7909C,
        0xBFEFD1C8E8F07355,
        0x3C72F78F9A4D2F84,
        0,
    ),
    (
        0xBFFBEEA5547616C8,
        0xBFEF90F80DB8B86E,
        0x3C88FF800796A696,
        0,
    ),
    (
        0xBFF7728EE1C90754,
        0xBFEEC6E6631F35FF,
        0x3C8D72B48F002666,
        0,
    ),
    (
        0xBFF6D0FBF5660548,
        0xBFEE99C9F8B4AA8E,
        0x3C8AC63588CE5209,
        0,
    ),
    (
        0xBFF2B39A504FF688,
        0xBFECDA79BB7B3382,
        0x3C8C802C5E9A1F1D,
        0,
    ),
    (
        0xBFF252979E8A6FF0,
        0xBFECA111933FA793,
        0x3C83D19084A4D537,
        0,
    ),
    (
        0xBFF17FA4724A189C,
        0xBFEC190CA56410D2,
        0x3C66EA24BE4A4CD3,
        0,
    ),
    (
        0xBFF15A720DE31800,
        0xBFEBFF69F8EE16D6,
        0x3C85CE250AC26456,
        0,
    ),
    (
        0xBFF06BF8EC0B4DBC,
        0xBFEB4EB40724B665,
        0xBC897367C2D2036E,
        0,
    ),
    (
        0xBFEFB945C0CD111E,
        0xBFEAD9CA898022E1,
        0x3C593B2763CD5F3D,
        0,
    ),
    (
        0xBFEE72C68A73B8B0,
        0xBFEA4A64854C9955,
        0x3C5BD045F6C66446,
        0,
    ),
    (
        0xBFEB773B2596C908,
        0xBFE8CE527935C12C,
        0xBC8B02526D29E1D9,
        0,
    ),
    (
        0xBFEAC9B4C66F50BE,
        0xBFE86EE1BDE32938,
        0xBC6CB6AA72335F51,
        0,
    ),
    (
        0xBFE9BA84F07890A8,
        0xBFE7D2D08EC8004B,
        0xBC8AD278E4EFF2FA,
        0,
    ),
    (
        0xBFE98F949C09CA78,
        0xBFE7B952E55F10C1,
        0x3C65B89CE1F16DE7,
        0,
    ),
    (
        0xBFE74F97737BD2A4,
        0xBFE64E88E9050EFE,
        0x3C6BD8E7ECC510C3,
        0,
    ),
    (
        0xBFE65B9ADC7EB180,
        0xBFE5A91400956176,
        0x3C7089A6EF8536AC,
        0,
    ),
    (
        0xBFE37DE749B9B7FE,
        0xBFE38D46D52D2083,
        0xBC1804ADAD20F5AA,
        0,
    ),
    (
        0xBFE323DE39421772,
        0xBFE346B4A0C530CB,
        0xBC8E6C69AAA78446,
        0,
    ),
    (
        0xBFE2010AD8DF3488,
        0xBFE25C65F3D3C334,
        0x3C76381E78390523,
        0,
    ),
    (
        0xBFE1B67CA570BEF6,
        0xBFE21EC9040EFCDE,
        0x3C8A50C4AF3F220A,
        0,
    ),
    (
        0xBFE0AF8E4A708DB0,
        0xBFE1408BBBBDEF75,
        0xBC8BC55B4588032A,
        0,
    ),
    (
        0xBFDFFF1B07901F10,
        0xBFE0A78ABFD7B058,
        0xBC7815A75C45934E,
        0,
    ),
    (
        0xBFDE418218498A1C,
        0xBFDFC234621B11A9,
        0xBC7A34A195A7E96A,
        0,
    ),
    (
        0xBFDD2706166E7970,
        0xBFDEC13AE57B4BE3,
        0x3C712E77EBE52EFD,
        0,
    ),
    (
        0xBFDA2E2C47D591C0,
        0xBFDBF91E59FE0B0C,
        0xBC7F5EE803C86ECD,
        0,
    ),
    (
        0xBFD947A25B8B9210,
        0xBFDB1BCF41087CC5,
        0xBC61C1287AB16E90,
        0,
    ),
    (
        0xBFD8E2700D1A4240,
        0xBFDAB9E13492D6E9,
        0xBC6C6F09A34CFC83,
        0,
    ),
    (
        0xBFD329D85C57E160,
        0xBFD4FE92679D7EEC,
        0x3C6215FE9E969F9E,
        0,
    ),
    (
        0xBFD29C1953FF7A60,
        0xBFD46BF7FE201961,
        0x3C6B619D3623F6B0,
        0,
    ),
    (
        0xBFCC84C75A5D3DA0,
        0xBFCFA7BD11B86B52,
        0x3C4D7FF0252AB88C,
        0,
    ),
    (
        0xBFC0612FAAC19980,
        0xBFC261CDC4C93D50,
        0xBC5E7B976DC9A57A,
        0,
    ),
    (
        0xBFB6289788470240,
        0xBFB8F0E29C36A8E5,
        0x3C50E0F78F6BF6DC,
        0,
    ),
    (
        0xBFB3E23C597DAC90,
        0xBFB6642FCAD699E2,
        0x3C47B2A503FC8A3B,
        0,
    ),
    (
        0xBF969CAC32A83F00,
        0xBF9982C18FF757EB,
        0x3C174B603C425C4F,
        0,
    ),
    (
        0xBF8C1972B6E82E00,
        0xBF8FB46D7BDB7C8D,
        0xBC238FB97C53E402,
        0,
    ),
    (
        0xBF5AE366A4FBDD97,
        0xBF5E57144A993CED,
        0xBBF3736EC244AFF8,
        0,
    ),
    (
        0xBF3C2FA5DDD368D5,
        0xBF3FCDFC7D13FFCD,
        0xBBD3A8487D12892A,
        0,
    ),
    (
        0xBF2BF8FC0A33199B,
        0xBF2F904E3E43CDEC,
        0xBBC3A983CE171293,
        0,
    ),
    (
        0xBF1C28DD8C13693B,
        0xBF1FC65561ED5246,
        0xBBB334815963EC3C,
        0,
    ),
    (
        0xBEDBD29DDB7B2F1B,
        0xBEDF650320E50C68,
        0xBB73A6A410811C66,
        0,
    ),
    (
        0xBEBC13AAFC82D11D,
        0xBEBFAE6A2C210EF1,
        0xBB536BD5F6A221BA,
        0,
    ),
    (
        0xBE9BA983BE1951D4,
        0xBE9F36A23183F3D0,
        0xBB333D0A309550C6,
        0,
    ),
    (
        0xBE8C3A7C8A9D3B3E,
        0xBE8FDA3780A4FAB0,
        0xBB23A3597EC6ED0A,
        0,
    ),
    (
        0xBE7B85DEC45D4541,
        0xBE7F0E69C2D9D5A1,
        0xBB1398FD096C3C04,
        0,
    ),
    (
        0x0000000000000001,
        0x09520DD750429B6D,
        0x05D1AE3A914FED80,
        -200,
    ),
    (
        0x00000000000007E8,
        0x0A01D7ADCA51D39B,
        0x869AC3680F320124,
        -200,
    ),
    (
        0x0010000000000000,
        0x0C920DD750429B6D,
        0x0911AE3A914FED80,
        -200,
    ),
    (
        0x01A56E1FC2F8F359,
        0x01A82E6D98711D3A,
        0x80000000002E31BB,
        0,
    ),
    (
        0x01C1AE0D67409590,
        0x01C3F31A6A9084EA,
        0x80000000036A6E12,
        0,
    ),
    (
        0x16687E92154EF7AC,
        0x166BA394CE53F796,
        0x12EF162D235C1B53,
        0,
    ),
    (
        0x1684353884C78C54,
        0x1686CD5AC3D212A8,
        0x1323F25D556177ED,
        0,
    ),
    (
        0x2B2BFF2EE48E0530,
        0x2B2F974CD8B00F7E,
        0xA7BF60D32A106500,
        0,
    ),
    (
        0x2B4718ED16285DE1,
        0x2B4A1005CC5E0CC8,
        0xA7EE96368E5C0C67,
        0,
    ),
    (
        0x3BC79CA10C924223,
        0x3BCAA4A230244AE0,
        0xB83CD2718F1A1F9F,
        0,
    ),
    (
        0x3BE37AD1AA5F1029,
        0x3BE5FB05CE1DF0F8,
        0xB83095883B844390,
        0,
    ),
    (
        0x3E10000000000000,
        0x3E120DD750429B6D,
        0x3A914DF0BFA3DF98,
        0,
    ),
    (
        0x3E112E0BE826D695,
        0x3E1362A9FFC610DD,
        0xBA941DCEC6678B79,
        0,
    ),
    (
        0x3E2A666666666666,
        0x3E2DCA09AAD44D40,
        0x3AC2512F306F8EAA,
        0,
    ),
    (
        0x3E2C58C6D8A67BA9,
        0x3E2FFC654C6D356C,
        0x3ACBCAA5E4E5AE37,
        0,
    ),
    (
        0x3E6BDCB94DE6D964,
        0x3E6F706ABFF0A291,
        0x3B0371B7309B2EEB,
        0,
    ),
    (
        0x3EDC1EC7EE4B599E,
        0x3EDFBAF45931E130,
        0x3B73AA2B45C0A027,
        0,
    ),
    (
        0x3EE4F8B588E368F1,
        0x3EE7A9F084B5E44C,
        0xBB445D7C9DFBF5EF,
        0,
    ),
    (
        0x3EFC538D84D42281,
        0x3EFFF680491E86A4,
        0x3B93733C4A6624FE,
        0,
    ),
    (
        0x3F014D2F5DBB9CFA,
        0x3F0385CCD3C737EC,
        0xBB5596CFA463D0D0,
        0,
    ),
    (
        0x3F0C0B0672632A0E,
        0x3F0FA4A9963D638D,
        0x3BA34DDC925BC6A7,
        0,
    ),
    (
        0x3F3BE0026E166F75,
        0x3F3F741FBBF4C249,
        0x3BD37300E9FBA85B,
        0,
    ),
    (
        0x3F4BDE8FDABC934C,
        0x3F4F727D3638E4E3,
        0x3BE3B60E7EE4F517,
        0,
    ),
    (
        0x3F5B0C1868BACF04,
        0x3F5E84FF72B8C1B5,
        0x3BF3B02EAAE8F576,
        0,
    ),
    (
        0x3F5BED9163C42AA9,
        0x3F5F836A6AB48423,
        0x3BF31920A5D7EFB5,
        0,
    ),
    (
        0x3F6C5137936C9F5B,
        0x3F6FF3D53D45C42B,
        0x3C037DA9315CB9C1,
        0,
    ),
    (
        0x3F8B697893130AF0,
        0x3F8EEDE52E46E180,
        0x3C236DDDE463D407,
        0,
    ),
    (
        0x3F9F44D4D9A4E1C0,
        0x3FA1A2D6D54E5E90,
        0xBC4944D30E7543FE,
        0,
    ),
    (
        0x3FA8446EF0948980,
        0x3FAB5CBC1172AC27,
        0x3C49BA8A10CB0D59,
        0,
    ),
    (
        0x3FC430145CD45670,
        0x3FC6978F28088AF3,
        0xBC5F51128F408918,
        0,
    ),
    (
        0x3FD0198C97C411F0,
        0x3FD1CA674BEF396E,
        0xBC5A8C0E8D699B98,
        0,
    ),
    (
        0x3FD4AF731BB37324,
        0x3FD68D91F2260ECD,
        0x3C6877FDF00655FA,
        0,
    ),
    (
        0x3FD9ED01FE4337C0,
        0x3FDBBAD10C46A689,
        0xBC70F1E814F4CD54,
        0,
    ),
    (
        0x3FDA176EE3C55DE4,
        0x3FDBE3669BD575F3,
        0x3C73167EEEB3408B,
        0,
    ),
    (
        0x3FDCCCCCCCCCCCCD,
        0x3FDE6E4AE11529C0,
        0x3C7ADFD5F83DC161,
        0,
    ),
    (
        0x3FDFFFFFFFFFFFFE,
        0x3FE0A7EF5C18EDD1,
        0x3C82B60BAF9CECF0,
        0,
    ),
    (
        0x3FDFFFFFFFFFFFFF,
        0x3FE0A7EF5C18EDD2,
        0xBC812AF7ABC8C2FE,
        0,
    ),
    (
        0x3FE0000000000000,
        0x3FE0A7EF5C18EDD2,
        0x3C75E809F1A31A28,
        0,
    ),
    (
        0x3FE0000000000001,
        0x3FE0A7EF5C18EDD3,
        0x3C598FF2103169AD,
        0,
    ),
    (
        0x3FE0000000000002,
        0x3FE0A7EF5C18EDD4,
        0xBC624021D314CAAA,
        0,
    ),
    (
        0x3FE32F8FC85D689A,
        0x3FE34FEC8FA2DD58,
        0xBC6EB79470A242E6,
        0,
    ),
    (
        0x3FE364807A461FE8,
        0x3FE379761D5EC584,
        0xBC6C846FB0EB1986,
        0,
    ),
    (
        0x3FE5FCD73963D0AC,
        0x3FE566EB387214FC,
        0xBC7FF6680B25C7EB,
        0,
    ),
    (
        0x3FE8000000000000,
        0x3FE6C1C9759D0E5F,
        0x3C8B1432F2CBC455,
        0,
    ),
    (
        0x3FEE357D5351B994,
        0x3FEA2E3A5BEA6B58,
        0x3C8057029B255D8D,
        0,
    ),
    (
        0x3FF0000000000000,
        0x3FEAF767A741088B,
        0xBC7C97F778122797,
        0,
    ),
    (
        0x3FF63181C64A23D8,
        0x3FEE67FFC92B009D,
        0xBC86DACC82FF5348,
        0,
    ),
    (
        0x3FF8000000000000,
        0x3FEEEA5557137AE0,
        0xBC8385E445F2C96D,
        0,
    ),
    (
        0x4000000000000000,
        0x3FEFD9AE142795E3,
        0x3C7972801904B9A3,
        0,
    ),
    (
        0x4003675352D9D12C,
        0x3FEFFB0EB2814280,
        0xBC7CCF5DE46AD0AD,
        0,
    ),
    (
        0x4004576181FB4F6C,
        0x3FEFFD59FAED9CF1,
        0x3C820444EFB87C2D,
        0,
    ),
    (
        0x400538E33C4B08BC,
        0x3FEFFE8F80235747,
        0xBC82E12EADE65F0C,
        0,
    ),
    (
        0x4005BD583CCF3F30,
        0x3FEFFF012CD3AC32,
        0xBC5548C390614528,
        0,
    ),
    (
        0x4006872440DCB4F8,
        0x3FEFFF70EE404201,
        0xBC8DF066BB66F92C,
        0,
    ),
    (
        0x4007AFDBF500E338,
        0x3FEFFFC4CC9501EB,
        0xBC82A84CD49A3B4F,
        0,
    ),
    (
        0x4007BD4EF984C218,
        0x3FEFFFC72C9BCBFD,
        0xBC7F568B4B8C8B0D,
        0,
    ),
    (
        0x4008000000000000,
        0x3FEFFFD1AC4135F9,
        0x3C8EEAFA1ECD6CEF,
        0,
    ),
    (
        0x40080FBB1A111DD8,
        0x3FEFFFD3DD751760,
        0xBC6D829A74034A11,
        0,
    ),
    (
        0x4009530A1BCE7A78,
        0x3FEFFFF01B56A515,
        0xBC8E377807CB108E,
        0,
    ),
    (
        0x400A44F98A75BED4,
        0x3FEFFFF8D3CB981E,
        0x3C83355C1D46D714,
        0,
    ),
    (
        0x400B5515AA40A580,
        0x3FEFFFFD2950F25C,
        0xBC617C611BCF4259,
        0,
    ),
    (
        0x400FA7D9622AC32C,
        0x3FEFFFFFF438EE91,
        0x3C8A990687F881CE,
        0,
    ),
    (
        0x4010000000000000,
        0x3FEFFFFFF7B91176,
        0x3C70B2865615DB40,
        0,
    ),
    (
        0x401041162C477178,
        0x3FEFFFFFFB1D992C,
        0xBC6A573DDD496BF4,
        0,
    ),
    (
        0x40117FAB521527C8,
        0x3FEFFFFFFFAB93A5,
        0xBC6523BCF6DBACCE,
        0,
    ),
    (
        0x4011E2C7344962AE,
        0x3FEFFFFFFFDCE13F,
        0xBC8C90645EB758C9,
        0,
    ),
    (
        0x4012450E65BE240A,
        0x3FEFFFFFFFF18BCE,
        0xBC73D088258BCA2B,
        0,
    ),
    (
        0x4012C8171B5BAA18,
        0x3FEFFFFFFFFBB290,
        0x3C8BF2DD40F62E5C,
        0,
    ),
    (
        0x4013005E7CAEC616,
        0x3FEFFFFFFFFD77E3,
        0xBC8061370664CF8E,
        0,
    ),
    (
        0x4013202933A534E8,
        0x3FEFFFFFFFFE20EA,
        0xBC7E51B85E767FDE,
        0,
    ),
    (
        0x401356D28A3DCB50,
        0x3FEFFFFFFFFEE44E,
        0x3C704F8F5E07D2C7,
        0,
    ),
    (
        0x4014000000000000,
        0x3FEFFFFFFFFFC9E8,
        0xBC7A759F7738935F,
        0,
    ),
    (
        0x401423B6ED33EDC0,
        0x3FEFFFFFFFFFDA22,
        0x3C8A0A7423A067BB,
        0,
    ),
    (
        0x4016000000000000,
        0x3FEFFFFFFFFFFFBE,
        0xBC8182B326B228DC,
        0,
    ),
    (
        0x4016E1F7579AFD74,
        0x3FEFFFFFFFFFFFFB,
        0xBC873D9C7851A7B1,
        0,
    ),
    (
        0x4017AFB48DC96625,
        0x3FEFFFFFFFFFFFFF,
        0x3C8FFFFFFFFFFF4E,
        0,
    ),
    (
        0x4017AFB48DC96626,
        0x3FEFFFFFFFFFFFFF,
        0x3C8FFFFFFFFFFFAE,
        0,
    ),
    (
        0x4017AFB48DC96627,
        0x3FF0000000000000,
        0xBC8FFFFFFFFFFFF2,
        0,
    ),
    (
        0x4017AFB48DC96628,
        0x3FF0000000000000,
        0xBC8FFFFFFFFFFF92,
        0,
    ),
    (
        0x4017AFB48DC96629,
        0x3FF0000000000000,
        0xBC8FFFFFFFFFFF32,
        0,
    ),
    (
        0x4017F0204734C2A4,
        0x3FF0000000000000,
        0xBC7DF3858B3BFCD0,
        0,
    ),
    (
        0x4017FFFFFFFFFFFE,
        0x3FF0000000000000,
        0xBC78CF81557D214D,
        0,
    ),
    (
        0x4017FFFFFFFFFFFF,
        0x3FF0000000000000,
        0xBC78CF81557D2102,
        0,
    ),
    (
        0x4018000000000000,
        0x3FF0000000000000,
        0xBC78CF81557D20B6,
        0,
    ),
    (
        0x4018000000000001,
        0x3FF0000000000000,
        0xBC78CF81557D206B,
        0,
    ),
    (
        0x4018000000000002,
        0x3FF0000000000000,
        0xBC78CF81557D201F,
        0,
    ),
    (
        0x401816C780EAF6AC,
        0x3FF0000000000000,
        0xBC72EB8BE07BDE86,
        0,
    ),
    (
        0x4019BE969D848916,
        0x3FF0000000000000,
        0xBBFA29A21F2E0556,
        0,
    ),
    (
        0x4019F4E2DF2205C8,
        0x3FF0000000000000,
        0xBBEA280A2A579195,
        0,
    ),
    (
        0x4019FB83F5A2DC3C,
        0x3FF0000000000000,
        0xBBE8062B7A896609,
        0,
    ),
    (
        0x4024000000000000,
        0x3FF0000000000000,
        0xB6A7D8A7F2A8A2D0,
        0,
    ),
    (
        0x4202A05F20000000,
        0x3FF0000000000000,
        0x0000000000000000,
        0,
    ),
];
const ERFC_TABLE: &[Row] = &[
    (
        0xC0188F5D0BC8C1DF,
        0x4000000000000000,
        0xBC51BBB9734C6C5B,
        0,
    ),
    (
        0xC017744F8F74E94D,
        0x4000000000000000,
        0xBC9FFFFFFFFFFF0B,
        0,
    ),
    (
        0xC017744F8F74E94C,
        0x4000000000000000,
        0xBC9FFFFFFFFFFF6A,
        0,
    ),
    (
        0xC017744F8F74E94B,
        0x4000000000000000,
        0xBC9FFFFFFFFFFFC9,
        0,
    ),
    (
        0xC017744F8F74E94A,
        0x3FFFFFFFFFFFFFFF,
        0x3C9FFFFFFFFFFFD8,
        0,
    ),
    (
        0xC017744F8F74E949,
        0x3FFFFFFFFFFFFFFF,
        0x3C9FFFFFFFFFFF79,
        0,
    ),
    (
        0xC016170DC3D1EC62,
        0x3FFFFFFFFFFFFFE6,
        0x3C8FB01B84379D31,
        0,
    ),
    (
        0xC014000000000000,
        0x3FFFFFFFFFFFE4F4,
        0xBC7A759F7738935F,
        0,
    ),
    (
        0xC01275DB93401124,
        0x3FFFFFFFFFFB6170,
        0x3C9630F18B947A25,
        0,
    ),
    (
        0xC011B008820BB9E8,
        0x3FFFFFFFFFE46C45,
        0xBC98BA52F99EE705,
        0,
    ),
    (
        0xC00C3D3056CF5B6B,
        0x3FFFFFFF5F9737E7,
        0xBC8432FCCAFBF6C3,
        0,
    ),
    (
        0xC008000000000000,
        0x3FFFFFE8D6209AFD,
        0xBC908A82F0994988,
        0,
    ),
    (
        0xC007CC49712CD594,
        0x3FFFFFE4DB3921EC,
        0x3C8E66AA45671694,
        0,
    ),
    (
        0xC004000000000000,
        0x3FFFFE5547A64DF5,
        0x3C8B0CEE160116F9,
        0,
    ),
    (
        0xC003F1A474D75D2A,
        0x3FFFFE44FBC2B9BD,
        0x3C8911393A5FCC25,
        0,
    ),
    (
        0xC003C1399CDD8212,
        0x3FFFFE09A4928CE5,
        0xBC970F36448B46DC,
        0,
    ),
    (
        0xC002C7078B4DB55E,
        0x3FFFFC4E20405935,
        0xBC93078AA67B9494,
        0,
    ),
    (
        0xC0021D6519EB364E,
        0x3FFFFA6A51A5F88C,
        0x3C878277F084B07E,
        0,
    ),
    (
        0xC002126E34A700E8,
        0x3FFFFA4447B6926C,
        0xBC82A94037FCA33F,
        0,
    ),
    (
        0xBFF144D019BB864C,
        0x3FFDF822ADFB4BC3,
        0x3C9BAF68D08D94D4,
        0,
    ),
    (
        0xBFF05F03862213A4,
        0x3FFDA23C52276787,
        0x3C702FCD2F43CB09,
        0,
    ),
    (
        0xBFF0000000000000,
        0x3FFD7BB3D3A08445,
        0x3C98DA0221FB761A,
        0,
    ),
    (
        0xBFE8000000000000,
        0x3FFB60E4BACE8730,
        0xBC9275E6869A1DD5,
        0,
    ),
    (
        0xBFE0000000000002,
        0x3FF853F7AE0C76EA,
        0xBC624021D314CAAA,
        0,
    ),
    (
        0xBFE0000000000001,
        0x3FF853F7AE0C76EA,
        0xBC9E6700DEFCE965,
        0,
    ),
    (
        0xBFE0000000000000,
        0x3FF853F7AE0C76E9,
        0x3C75E809F1A31A28,
        0,
    ),
    (
        0xBFDFFFFFFFFFFFFF,
        0x3FF853F7AE0C76E9,
        0xBC812AF7ABC8C2FE,
        0,
    ),
    (
        0xBFDFFFFFFFFFFFFE,
        0x3FF853F7AE0C76E9,
        0xBC96A4FA28318988,
        0,
    ),
    (
        0xBFCA9B1CF69D1000,
        0x3FF3B3081B3C53A1,
        0x3C9EB4DA81AFF406,
        0,
    ),
    (
        0xBFB3240B47024BC0,
        0x3FF158ED25713EAE,
        0x3C8561F32C5DBCE6,
        0,
    ),
    (
        0x0000000000000000,
        0x3FF0000000000000,
        0x0000000000000000,
        0,
    ),
    (
        0x0000000000000001,
        0x3FF0000000000000,
        0x0000000000000000,
        0,
    ),
    (
        0x01A56E1FC2F8F359,
        0x3FF0000000000000,
        0x0000000000000000,
        0,
    ),
    (
        0x3BC79CA10C924223,
        0x3FF0000000000000,
        0xBBCAA4A230244AE0,
        0,
    ),
    (
        0x3E112E0BE826D695,
        0x3FEFFFFFFF64EAB0,
        0x3C2CF7918A0EE763,
        0,
    ),
    (
        0x3FDC48F3BD923FA0,
        0x3FE105D2F0E8D423,
        0x3C7D9500618313CB,
        0,
    ),
    (
        0x3FDCCCCCCCCCCCCD,
        0x3FE0C8DA8F756B20,
        0xBC7ADFD5F83DC161,
        0,
    ),
    (
        0x3FDD6B0616A8CD9A,
        0x3FE080448C88298B,
        0xBC7FF1F250B94359,
        0,
    ),
    (
        0x3FDF2B20BBA4B26A,
        0x3FDF6C6882518485,
        0x3C6BE8B50BC3C28B,
        0,
    ),
    (
        0x3FDFFFFFFFFFFFFE,
        0x3FDEB02147CE245D,
        0x3C7A93E8A0C6261F,
        0,
    ),
    (
        0x3FDFFFFFFFFFFFFF,
        0x3FDEB02147CE245D,
        0xBC7DAA10A86E7A05,
        0,
    ),
    (
        0x3FE0000000000000,
        0x3FDEB02147CE245C,
        0xBC75E809F1A31A28,
        0,
    ),
    (
        0x3FE0000000000001,
        0x3FDEB02147CE245A,
        0xBC598FF2103169AD,
        0,
    ),
    (
        0x3FE0000000000002,
        0x3FDEB02147CE2458,
        0x3C624021D314CAAA,
        0,
    ),
    (
        0x3FE041B16C868465,
        0x3FDE3D2263D6707B,
        0xBC751B2265587A01,
        0,
    ),
    (
        0x3FE0D102DB24B040,
        0x3FDD458110D30AB3,
        0xBC6155F8168622D8,
        0,
    ),
    (
        0x3FE3066C6729C585,
        0x3FD9A12724E63FEF,
        0x3C7C68AEA6F979BC,
        0,
    ),
    (
        0x3FE352D3CA4D8028,
        0x3FD928BD8E2F122C,
        0xBC7D8490F41F3DEC,
        0,
    ),
    (
        0x3FE5C1F4935CA138,
        0x3FD58573A60BF99E,
        0x3C7F2EE34276E2F7,
        0,
    ),
    (
        0x3FE60CB8FCD56FFE,
        0x3FD51BD6B01468F1,
        0xBC7B0B7A6CFBF33C,
        0,
    ),
    (
        0x3FE7A8BB47DEFFE0,
        0x3FD2ED89D047BCB6,
        0x3C77E27CF053D968,
        0,
    ),
    (
        0x3FE8000000000000,
        0x3FD27C6D14C5E341,
        0x3C63AF3434D0EEAB,
        0,
    ),
    (
        0x3FE8533477119090,
        0x3FD21240235DDD67,
        0x3C4C5936ADEE3B83,
        0,
    ),
    (
        0x3FE89F640D8D882D,
        0x3FD1B2756E333B2A,
        0xBC3DD3C0C1E3D28E,
        0,
    ),
    (
        0x3FEB02D002E85298,
        0x3FCDC55275E11E5A,
        0x3C6C21B41E0B67B5,
        0,
    ),
    (
        0x3FEC8A8E72DCC525,
        0x3FCA84E3E590B65B,
        0x3C5CE9173038705F,
        0,
    ),
    (
        0x3FED0F99637A51B4,
        0x3FC979C511AE0403,
        0xBC6E5CF645651673,
        0,
    ),
    (
        0x3FED823AC1062AEF,
        0x3FC899D8F2F39AB2,
        0x3C649E90A5700143,
        0,
    ),
    (
        0x3FEF616078873D17,
        0x3FC52EE54538B390,
        0xBC48747F3A86F3E2,
        0,
    ),
    (
        0x3FEF683B9C531444,
        0x3FC5231387C1F2C6,
        0xBC61870562DA9818,
        0,
    ),
    (
        0x3FF0000000000000,
        0x3FC4226162FBDDD5,
        0xBC4B40443F6EC34A,
        0,
    ),
    (
        0x3FF181B723059B69,
        0x3FBF2C4B60012490,
        0xBC593C4964E43745,
        0,
    ),
    (
        0x3FF18D51E60F0EFA,
        0x3FBEED35F8FAF50E,
        0xBC51B49413BB99D4,
        0,
    ),
    (
        0x3FF256251C904671,
        0x3FBAE62F89ED1CB5,
        0xBC48F032E7CBDD0B,
        0,
    ),
    (
        0x3FF2FE5D785CD008,
        0x3FB7DB2FC90FE706,
        0x3C4869C2EB02BA18,
        0,
    ),
    (
        0x3FF31281208436DA,
        0x3FB782DD34A87EF4,
        0x3C51020D0DA4B8F9,
        0,
    ),
    (
        0x3FF6B2E1B30E8D76,
        0x3FA6F32050895925,
        0x3C16422C2BF4603B,
        0,
    ),
    (
        0x3FF7C3E0903131D4,
        0x3FA24493515E2557,
        0xBC2088CBAB6BAA1A,
        0,
    ),
    (
        0x3FF8736059E7A5A0,
        0x3F9F6B70D3239AAE,
        0xBC3B96E4C0184BA5,
        0,
    ),
    (
        0x3FFB8F0FF28B9EB8,
        0x3F8E6C9E1161EA2D,
        0x3C120AAE3F98899D,
        0,
    ),
    (
        0x3FFC1119F1611230,
        0x3F8AD93354EB7D08,
        0x3C0150BEC68B6FB0,
        0,
    ),
    (
        0x3FFC7321844832F0,
        0x3F88675F5D1762E0,
        0x3C12B9126DA94F11,
        0,
    ),
    (
        0x3FFCA8C36503D09E,
        0x3F8726D1C9A4BB7C,
        0x3C0E1931179F3582,
        0,
    ),
    (
        0x3FFCFFFF8D39F056,
        0x3F853C8C454A1B81,
        0x3C2342B80C53A9E1,
        0,
    ),
    (
        0x3FFDBC94960C281C,
        0x3F819219D824F28A,
        0xBC20F28E8479072B,
        0,
    ),
    (
        0x3FFDDC426A686266,
        0x3F810384299D8509,
        0xBC232F2EC95647D4,
        0,
    ),
    (
        0x3FFE754A94133006,
        0x3F7D1437BE0C989A,
        0x3C11DDA7B09B8C4D,
        0,
    ),
    (
        0x3FFF36CDC6BE74B6,
        0x3F77C03881FF96BA,
        0x3C17113A52DA4DC2,
        0,
    ),
    (
        0x4000000000000000,
        0x3F7328F5EC350E67,
        0xBC1CA006412E68D0,
        0,
    ),
    (
        0x400122AFAE83A418,
        0x3F6417042DCD5ABF,
        0xBC07B5C96E24723A,
        0,
    ),
    (
        0x4010000000000000,
        0x3E508DDD13BD35E7,
        0xBAF615DB40319381,
        0,
    ),
    (
        0x4010683B2E823D36,
        0x3E3C587FC9EC1021,
        0x3ADFB91CAD2A6B60,
        0,
    ),
    (
        0x40108D8381353586,
        0x3E34D2D9145D15C3,
        0x3AD41C42B9570141,
        0,
    ),
    (
        0x4013F76143A57CB4,
        0x3D7D77EA81F71144,
        0xB9D6376E96ED04D9,
        0,
    ),
    (
        0x4016391FB86521FE,
        0x3CF1B5AD6668EE8D,
        0x399467A907A46556,
        0,
    ),
    (
        0x401BCBCB848738F8,
        0x3B59EF1E0E8E2057,
        0xB7CBB544AF650187,
        0,
    ),
    (
        0x401E9218158B89E2,
        0x3A6F1E3631F71030,
        0xB6E9AFAC309B3448,
        0,
    ),
    (
        0x401EADB8DED476CA,
        0x3A6483FED212C6A6,
        0xB6FA33A4B4D55C5D,
        0,
    ),
    (
        0x4020000000000000,
        0x39EC74FC41217DFB,
        0x368DAE003E8B6247,
        0,
    ),
    (
        0x40202C8136E7DFB0,
        0x39CBD19E4D1CB72F,
        0xB66FD4FA832049CE,
        0,
    ),
    (
        0x4021559774FF98C0,
        0x38E988086D498111,
        0x357D2AC8855ECF01,
        0,
    ),
    (
        0x4022687987493458,
        0x380AD6EEB5CA8BF2,
        0xB4A5D1F63FC1DA0F,
        0,
    ),
    (
        0x40248EB1AE52EE96,
        0x3624DC9E558A1937,
        0x32B35ADFCFAB49D8,
        0,
    ),
    (
        0x40251472FBAB1344,
        0x35A6A2E5926B842C,
        0x323D0C850C7629D4,
        0,
    ),
    (
        0x4027C901C97C3BC4,
        0x32E772EE31262AC3,
        0xAF596067CB643F46,
        0,
    ),
    (
        0x4027CB2EB499CC20,
        0x32E52FE355E81D65,
        0xAF477F1FE437D476,
        0,
    ),
    (
        0x4028DBB5B79E9C4C,
        0x31B9513580352B6A,
        0x2E4FCB26D333EACA,
        0,
    ),
    (
        0x4028F8249EF72926,
        0x319946478D706C18,
        0xAE20D4E9CED3C4C3,
        0,
    ),
    (
        0x402A795D4D803DB2,
        0x2FD934F5C877797F,
        0x2C52EF6300046DDC,
        0,
    ),
    (
        0x402AA2CBE74609B6,
        0x2FA75FB0E59F2AFD,
        0x2C3185F3EDCBC964,
        0,
    ),
    (
        0x402B3F7F2A032344,
        0x2EE88EF2064673BD,
        0xAB8A8175327FDE72,
        0,
    ),
    (
        0x402C9203D1019470,
        0x2D3E7413F39EF6E4,
        0x29D207FFCF66F29D,
        0,
    ),
    (
        0x402CE71DFD5AAA2A,
        0x2CD03BE7CA51EE81,
        0x297F98C3845EC20F,
        0,
    ),
    (
        0x402D3E374B0A65EE,
        0x2C5D38AC47047810,
        0xA8EA22905E170C1E,
        0,
    ),
    (
        0x402DB0AC92347AC4,
        0x2BC44DEBDBF555B1,
        0xA86CA761A35CDD43,
        0,
    ),
    (
        0x402DD1D59EEB8260,
        0x2B978B033143DEEC,
        0xA832AA0914481D56,
        0,
    ),
    (
        0x402DE0F32382B442,
        0x2B8377EEB949B022,
        0xA8108C65A0101BD4,
        0,
    ),
    (
        0x402DF3181C650450,
        0x2B6AE9D63F938ACD,
        0x27E2F00BB5DACCDE,
        0,
    ),
    (
        0x4030000000000000,
        0x288CABC2C3D98D7C,
        0xA527896B8072AC2E,
        0,
    ),
    (
        0x40304E1320632970,
        0x27A84246564940C8,
        0x2414D13FAE36D735,
        0,
    ),
    (
        0x4030B545B4834E7B,
        0x26749E332B4AFFA6,
        0xA31F2838262C51FA,
        0,
    ),
    (
        0x40314331BC83E48C,
        0x24C1BDD24F40B23F,
        0x2154C2DB522F986E,
        0,
    ),
    (
        0x4031DA0439D760D4,
        0x22E31848E0705053,
        0x9F72E8FF055C5D82,
        0,
    ),
    (
        0x40323C780DEC23B9,
        0x21A266E7C00D9F69,
        0x1E45F33BBE699FA0,
        0,
    ),
    (
        0x403243061804865F,
        0x218CDEE5F0242055,
        0x9E14443CC8F4A9F5,
        0,
    ),
    (
        0x403247259CDDB7D6,
        0x2180037E8750DB99,
        0x9E2B54474C7A7E23,
        0,
    ),
    (
        0x4032EBDD32B10C4E,
        0x1F556A5A7A3023EC,
        0x9BBF6BA4D9692A59,
        0,
    ),
    (
        0x4032F056660EDDF4,
        0x1F4614F47D86A435,
        0x9BEC129AEC992E4D,
        0,
    ),
    (
        0x40339F1E6B9121C8,
        0x1CE5979C15404893,
        0x198D70DE3837572C,
        0,
    ),
    (
        0x4034BC994AB4D9C8,
        0x18D574A010E5B964,
        0x9559662CF0B7A41F,
        0,
    ),
    (
        0x4034BCA59B82D3F0,
        0x18D549EF18792895,
        0x957237B5BF4348F6,
        0,
    ),
    (
        0x403589E343B698BF,
        0x15C6019446443BB1,
        0x125E92117939C53C,
        0,
    ),
    (
        0x4035B5CFF1FFF8B9,
        0x151AC5CC89BCBE85,
        0x9174721206159063,
        0,
    ),
    (
        0x4037531B4FA8F765,
        0x0E8ADBDEB3DFD941,
        0x0B04A6C424352B15,
        0,
    ),
    (
        0x4038253F4D6ECCF2,
        0x0B06544B2D0B8B64,
        0x877AF9BE26E636A1,
        0,
    ),
    (
        0x40390008142D07D6,
        0x073C8F75F21036D8,
        0x03DDFF47C86F1016,
        0,
    ),
    (
        0x403900B32D7D58F2,
        0x07390FFD60C38909,
        0x83A6B1D69EA89091,
        0,
    ),
    (
        0x403924296ED518B2,
        0x06989000DABA8215,
        0x0337A7E3A5AED5A0,
        0,
    ),
    (
        0x403935804282E29B,
        0x0649E4BD47AA83EC,
        0x028E16597CF55167,
        0,
    ),
    (
        0x40393B2726C3EA6B,
        0x0630FD971BD82C26,
        0x02C95143A11B90B5,
        0,
    ),
    (
        0x40393E3D4C270F3B,
        0x06227B4E22E6CBF7,
        0x02C9F4D60A8ECE96,
        0,
    ),
    (
        0x403947AAE81E509D,
        0x05F6F7942F4EC6D8,
        0x8295CE95B82B86FB,
        0,
    ),
    (
        0x40394F2EF0AF4A2F,
        0x05D4C79BEC0A9355,
        0x8262155F4696BC3C,
        0,
    ),
    (
        0x40395BCDB0B6FE56,
        0x059B4C67C0C1E4BA,
        0x023D35655F0DA3FC,
        0,
    ),
    (
        0x403964C23AA2A787,
        0x0572795B665677A9,
        0x820563340E213B28,
        0,
    ),
    (
        0x40398504309BA3EC,
        0x04DECCBA1D1744AF,
        0x810336CD9A782CB2,
        0,
    ),
    (
        0x4039D9A32ADE8BE4,
        0x03558A0E3C138854,
        0x000150252B80AF4B,
        0,
    ),
    (
        0x4039FA0163083CF9,
        0x02BF4CDED419B490,
        0x0000018E73A40862,
        0,
    ),
    (
        0x403A000000000000,
        0x02A284BFE1CDEA24,
        0x800000A2C92FCC11,
        0,
    ),
    (
        0x403A00B638693EBA,
        0x02A006172B3F73B3,
        0x800000A339E9FA91,
        0,
    ),
    (
        0x403A481C8A9A08BC,
        0x0DCEE2758AA1A437,
        0x0A53B7C96BFEB473,
        -200,
    ),
    (
        0x403A4A223B354CEC,
        0x0DC461F09347AAD3,
        0x0A6C937E74F462E8,
        -200,
    ),
    (
        0x403A588DAFF2D235,
        0x0D80C844943B6808,
        0x8A2C05BBFC9D9265,
        -200,
    ),
    (
        0x403A64BAC780A876,
        0x0D45D10573E992AA,
        0x09DF9A08E2BFE8DA,
        -200,
    ),
    (
        0x403A802A8C08A8BA,
        0x0CC33335570C3C33,
        0x896B6D2CE871A475,
        -200,
    ),
    (
        0x403A8B12FC6E4890,
        0x0C90000000000684,
        0x092F2FFAFA6B4217,
        -200,
    ),
    (
        0x403A8B12FC6E4891,
        0x0C90000000000332,
        0x093079F71A2F32AB,
        -200,
    ),
    (
        0x403A8B12FC6E4892,
        0x0C8FFFFFFFFFFFC1,
        0x892D481E91565604,
        -200,
    ),
    (
        0x403A8B12FC6E4893,
        0x0C8FFFFFFFFFF91D,
        0x892B842B56B2EFF7,
        -200,
    ),
    (
        0x403A8B12FC6E4894,
        0x0C8FFFFFFFFFF279,
        0x8929C0381BB76882,
        -200,
    ),
    (
        0x403A8B12FC6E4AF9,
        0x0C8FFFFFFFF00BD6,
        0x892F89CECCD85F5A,
        -200,
    ),
    (
        0x403A8B12FC6E5378,
        0x0C8FFFFFFFB7A0B6,
        0x892FA6DD7CD4BAE1,
        -200,
    ),
    (
        0x403A8B12FC6E6110,
        0x0C8FFFFFFF5D5BB6,
        0x892FA1AB4F0E7914,
        -200,
    ),
    (
        0x403A8B12FC6E674B,
        0x0C8FFFFFFF33FC16,
        0x892F8A06F62A163C,
        -200,
    ),
    (
        0x403A8B12FC6E698F,
        0x0C8FFFFFFF24F096,
        0x892F7E1DE5DA8F8D,
        -200,
    ),
    (
        0x403A8B12FC6E6B42,
        0x0C8FFFFFFF19A7F6,
        0x892F740639FD3E53,
        -200,
    ),
    (
        0x403A8B12FC6E6BD3,
        0x0C8FFFFFFF15E516,
        0x892F70707494AD2E,
        -200,
    ),
    (
        0x403A8B12FC6E7452,
        0x0C8FFFFFFEDD79F6,
        0x892F2D690C3C89DD,
        -200,
    ),
    (
        0x403A8B12FC6EAECA,
        0x0C8FFFFFFD5936B2,
        0x092F84E90F2C5BCA,
        -200,
    ),
    (
        0x403A8B183040671A,
        0x0C8FDD86A1449FAE,
        0x892F42D5AAAB58A2,
        -200,
    ),
    (
        0x403A923C5CB325F0,
        0x0C6CEFAE3ECF13CB,
        0x88ED941E49556D77,
        -200,
    ),
    (
        0x403A99999999999A,
        0x0C490C148CF6349D,
        0x08E6465635BB955B,
        -200,
    ),
    (
        0x403AC62FF594710B,
        0x0B72B58ED2C06114,
        0x881E1D91D72EF15E,
        -200,
    ),
    (
        0x403AE66666666666,
        0x0AD63DC08B77523C,
        0x0761189C8671538B,
        -200,
    ),
    (
        0x403B000000000000,
        0x0A59E0F0CDF83A76,
        0x86B7B3D3A7DBCCF7,
        -200,
    ),
    (
        0x403B19999999999A,
        0x09DD83E3240F6246,
        0x86536338C2321989,
        -200,
    ),
    (
        0x403B1E4771540A8A,
        0x09C5E5E602527F17,
        0x06568D73435330FD,
        -200,
    ),
    (
        0x403B333333333333,
        0x09607F901142480F,
        0x05F7F76A36A50F56,
        -200,
    ),
    (
        0x403B3851EB851EB8,
        0x0946350BF989902A,
        0x85EB4136DD28FD17,
        -200,
    ),
    (
        0x403B39DC41E48BFB,
        0x094000000000050A,
        0x85E017A8A25C990E,
        -200,
    ),
    (
        0x403B39DC41E48BFC,
        0x09400000000001A2,
        0x85C224D67DA97047,
        -200,
    ),
    (
        0x403B39DC41E48BFD,
        0x093FFFFFFFFFFC74,
        0x05CC14F58ED8F402,
        -200,
    ),
    (
        0x403B39DC41E48BFE,
        0x093FFFFFFFFFF5A5,
        0x85DAD89F31F59BAF,
        -200,
    ),
    (
        0x403B39DC41E48BFF,
        0x093FFFFFFFFFEED5,
        0x85ADDDC957D7C999,
        -200,
    ),
    (
        0x403B4CCCCCCCCCCC,
        0x08E2144F3771FD6F,
        0x054F02326DFAAEAA,
        -200,
    ),
    (
        0x403B4CCCCCCCCCCD,
        0x08E2144F3771F993,
        0x057E5FC87941606C,
        -200,
    ),
];
const ERFINV_TABLE: &[Row] = &[
    (
        0xBFEFFFFFFFFFFFFE,
        0xC0173856D153F081,
        0x3C962BA2CAF50B45,
        0,
    ),
    (
        0xBFEFFFFFFFFFFFE0,
        0xC0164253F064686F,
        0x3CBCFD9BD86183A5,
        0,
    ),
    (
        0xBFEFFFFFFFFFFE00,
        0xC015418DBE470875,
        0xBC9432CB34ED3468,
        0,
    ),
    (
        0xBFEFFFFFFFFFE000,
        0xC014347BF36FBAE8,
        0xBC92A3E28DC4B2EE,
        0,
    ),
    (
        0xBFEFFFFFFFFE0000,
        0xC01319301128AFB8,
        0xBC826B39F4B5643A,
        0,
    ),
    (
        0xBFEFFFFFFFE00000,
        0xC011ED2BEF15A0B5,
        0x3CB527B25255D88C,
        0,
    ),
    (
        0xBFEFFFFFFE000000,
        0xC010AD1FEC244A36,
        0xBCA97233C0171BB0,
        0,
    ),
    (
        0xBFEFFFFFE0000000,
        0xC00EA8F95AE0ACA8,
        0xBC9F40B8EEF837F8,
        0,
    ),
    (
        0xBFEFFFFE00000000,
        0xC00BB95AB2EF976F,
        0x3CA500F5F7A7D5C9,
        0,
    ),
    (
        0xBFEFFFE000000000,
        0xC0087726DB4AC1D2,
        0xBCAF387D27A24708,
        0,
    ),
    (
        0xBFEFFE0000000000,
        0xC004C04EE987EC04,
        0xBCAFE99EF551C9C7,
        0,
    ),
    (
        0xBFEFE00000000000,
        0xC00052D8817E4EA8,
        0x3CA24F89A610B66B,
        0,
    ),
    (
        0xBFEE02A4333819CC,
        0xBFF519B244FAEFC0,
        0x3C9DDFBC5E3106F9,
        0,
    ),
    (
        0xBFEE000000000000,
        0xBFF5130C3ACAE4DE,
        0xBC9AF78733D57038,
        0,
    ),
    (
        0xBFEC8E5585FB7788,
        0xBFF2340B4311D53A,
        0x3C8D6603E9562204,
        0,
    ),
    (
        0xBFE983448C9CA3D6,
        0xBFECD2C595517223,
        0x3C73573AAB21A739,
        0,
    ),
    (
        0xBFE3C9DB20063D1E,
        0xBFE3CC29EBDE034D,
        0x3C72F6B4430F38C7,
        0,
    ),
    (
        0xBFE39774D440D07A,
        0xBFE38AFD87C28E47,
        0xBC36532A9FD1115F,
        0,
    ),
    (
        0xBFE0C3F9996B24F4,
        0xBFE01FF861B930F4,
        0x3C86CF3671B0EE60,
        0,
    ),
    (
        0xBFE02AAFDAD121D8,
        0xBFDEE55FD22079C0,
        0xBC7FEB15750D84A7,
        0,
    ),
    (
        0xBFDF744A4F79A5FC,
        0xBFDDEB612A98FEC6,
        0xBC7364189E8F0FC5,
        0,
    ),
    (
        0xBFDE5A9FD962119C,
        0xBFDCB7783CA5EA6B,
        0xBC7672842BE53F1C,
        0,
    ),
    (
        0xBFDC9E6586896DF4,
        0xBFDADC163A850942,
        0x3C7468C31598A71C,
        0,
    ),
    (
        0xBFDC006B3B40CB2C,
        0xBFDA35D298B51355,
        0x3C748A282B5C1060,
        0,
    ),
    (
        0xBFDB8977F4FD4148,
        0xBFD9B98A6537C7B3,
        0x3C72FE89E4575C6D,
        0,
    ),
    (
        0xBFD87FAD4B6B45A0,
        0xBFD69E71D81AF47C,
        0xBC7BE58937DBC9C2,
        0,
    ),
    (
        0xBFD7445777FA6FEC,
        0xBFD563E93A5556F1,
        0xBC551A733726BE93,
        0,
    ),
    (
        0xBFD252BAE8CD228C,
        0xBFD09A840BFEEFF3,
        0x3C749E9F5BE00924,
        0,
    ),
    (
        0xBFD22B46CC5E9B00,
        0xBFD07523873642FA,
        0x3C60505BC0C2262F,
        0,
    ),
    (
        0xBFD14EBB90849D28,
        0xBFCF49FDCF7E9B10,
        0xBC496AF783EDFFEB,
        0,
    ),
    (
        0xBFCE9232C5876A78,
        0xBFCB82BEBB2E8E2A,
        0x3C5AD6FEC62F770C,
        0,
    ),
    (
        0xBFC87612B3427B88,
        0xBFC5E3C535277C1F,
        0xBC6A3ECDC74B23CA,
        0,
    ),
    (
        0xBFC42DE966C20058,
        0xBFC2005F7DA6EE7C,
        0x3C640CF9C021EEE9,
        0,
    ),
    (
        0xBFB2A90E991F4490,
        0xBFB08F7675C31840,
        0x3C4C3E8D39163096,
        0,
    ),
    (
        0xBFB0AFF95B5386D0,
        0xBFAD9C51D40E20FE,
        0xBC412611BB7E365E,
        0,
    ),
    (
        0xBFA4B6F418A71B80,
        0xBFA25DA2CC9B5341,
        0x3C478047E80FB0EA,
        0,
    ),
    (
        0xBF718C11EC630400,
        0xBF6F1A066992F532,
        0x3C0352CD5AC5DDDD,
        0,
    ),
    (
        0xBEA1F1738CDA273F,
        0xBE9FCDAE3994F740,
        0x3B330C7E249EB57F,
        0,
    ),
    (
        0x81A56E1FC2F8F359,
        0x81A2FDF36BF69B9F,
        0x80000000009C2307,
        0,
    ),
    (
        0x8011F0827830835F,
        0x8C8FCC02EBA53D4F,
        0x092B5D7FD313D46B,
        -200,
    ),
    (
        0x8011505010A93285,
        0x8C8EB011DF0B7D25,
        0x892C6C5B81036C26,
        -200,
    ),
    (
        0x80101821C911A4BC,
        0x8C8C86BE68A2D3B1,
        0x892B6C6DFBB45615,
        -200,
    ),
    (
        0x8010000000000000,
        0x8C8C5BF891B4EF6B,
        0x092618F13EB7CA89,
        -200,
    ),
    (
        0x800E6033E7D7BD20,
        0x8C897AFD52FF1755,
        0x892E05213EE78A49,
        -200,
    ),
    (
        0x800E34AE5AC1C245,
        0x8C892DD97063D207,
        0x092F4BB2F0099F69,
        -200,
    ),
    (
        0x800AA50F34F37AD6,
        0x8C82DE0AC2832E83,
        0x092D200CE7E49F74,
        -200,
    ),
    (
        0x80000000000007E8,
        0x89FC06E4A7FFD09C,
        0x8699E95995045CD7,
        -200,
    ),
    (
        0x8000000000000001,
        0x894C5BF891B4EF6B,
        0x05E618F13EB7CA89,
        -200,
    ),
    (
        0x0000000000000001,
        0x094C5BF891B4EF6B,
        0x85E618F13EB7CA89,
        -200,
    ),
    (
        0x00000000000007E8,
        0x09FC06E4A7FFD09C,
        0x0699E95995045CD7,
        -200,
    ),
    (
        0x0009EAEB29D0A198,
        0x0C81941DB6390FEB,
        0x892A2B4563D22E88,
        -200,
    ),
    (
        0x000A9D5CDC7F2774,
        0x0C82D06669CE14A7,
        0x892ABDBE8430DE50,
        -200,
    ),
    (
        0x000C014CFF54E2E5,
        0x0C854748A63DC18F,
        0x892B9A17FBEFEB97,
        -200,
    ),
    (
        0x000CC9794B9DBDC1,
        0x0C86AA14CD7CA66F,
        0x892C165B5B96F20F,
        -200,
    ),
    (
        0x000D8AFE59873DDB,
        0x0C8801160905107F,
        0x892B33858E445112,
        -200,
    ),
    (
        0x000E649B60E3E45A,
        0x0C8982CBB7C0C0DD,
        0x092A37E198C79C43,
        -200,
    ),
    (
        0x0010000000000000,
        0x0C8C5BF891B4EF6B,
        0x892618F13EB7CA89,
        -200,
    ),
    (
        0x00108F7B2B9B33AE,
        0x0C8D5A48DF9C533F,
        0x892D167E38F819C2,
        -200,
    ),
    (
        0x01A56E1FC2F8F359,
        0x01A2FDF36BF69B9F,
        0x00000000009C2307,
        0,
    ),
    (
        0x16687E92154EF7AC,
        0x1665B5260685DB94,
        0x12D9C542F70E8F45,
        0,
    ),
    (
        0x2B2BFF2EE48E0530,
        0x2B28CFC02E7C3D10,
        0x27900A49B7143ADE,
        0,
    ),
    (
        0x3BC79CA10C924223,
        0x3BC4ECE9BE5F16AC,
        0xB86A4793F25953C8,
        0,
    ),
    (
        0x3E10000000000000,
        0x3E0C5BF891B4EF6B,
        0xBAA5FB3E9F04CBA3,
        0,
    ),
    (
        0x3E112E0BE826D695,
        0x3E0E7355A02875C3,
        0x3AA626495F005996,
        0,
    ),
    (
        0x3E81D0700548E085,
        0x3E7F932A47605425,
        0xBB136CDEEB0E1546,
        0,
    ),
    (
        0x3EE4F8B588E368F1,
        0x3EE295E50302C8DD,
        0x3B81A79114E1874C,
        0,
    ),
    (
        0x3EF1BB979B32BC88,
        0x3EEF6E37BB101138,
        0xBB8312CD0E974CEC,
        0,
    ),
    (
        0x3F21E40A58B92462,
        0x3F1FB5E90A423A7D,
        0xBBB31401B04101A0,
        0,
    ),
    (
        0x3F50624DD2F1A9FC,
        0x3F4D0A36543E1FD3,
        0xBB91BE2B36620E56,
        0,
    ),
    (
        0x3F51A05CCA4F49E2,
        0x3F4F3DF4E6BF2CCF,
        0xBBE34A27BC83E691,
        0,
    ),
    (
        0x3F8200E7460A626D,
        0x3F7FE93BDF8D7183,
        0xBC12FFA9DC7E9F48,
        0,
    ),
    (
        0x3F8560CE70C53580,
        0x3F82F249694C4900,
        0xBC28A64E7B6F3833,
        0,
    ),
    (
        0x3FA271C6113AAEC0,
        0x3FA059FC57653AF9,
        0x3C4A95D974D445DC,
        0,
    ),
    (
        0x3FA2F02831D86EA0,
        0x3FA0CA1B7DBFAF3E,
        0xBC4B17C157CEFB55,
        0,
    ),
    (
        0x3FA5094B183DBF60,
        0x3FA2A6B400D33274,
        0xBC4402372D71B916,
        0,
    ),
    (
        0x3FA69B0E1D3519A0,
        0x3FA40B43A6EA7839,
        0x3C4C7692494C2105,
        0,
    ),
    (
        0x3FB36017338AD650,
        0x3FB13260F879FFB5,
        0x3C5921AD1F5CA256,
        0,
    ),
    (
        0x3FBAA164FACEB2B0,
        0x3FB7AAFA350F5137,
        0xBC56549F7426B037,
        0,
    ),
    (
        0x3FCCBC6D6A5C60F0,
        0x3FC9CFF493ED9A15,
        0xBC1683395C4406C0,
        0,
    ),
    (
        0x3FD0000000000000,
        0x3FCCD70681D5FF70,
        0x3C407285720620F7,
        0,
    ),
    (
        0x3FD1983051C838D0,
        0x3FCFD459711805A1,
        0x3C626640B14D9729,
        0,
    ),
    (
        0x3FD285D61600702C,
        0x3FD0CAFF80769534,
        0x3C5DA484F0B79666,
        0,
    ),
    (
        0x3FD29239F8A7CF24,
        0x3FD0D6C36E847E52,
        0xBC71F21F2B2513E3,
        0,
    ),
    (
        0x3FD358C7235A19D0,
        0x3FD193EB6096729F,
        0xBC7658DD424E5C1F,
        0,
    ),
    (
        0x3FD381A7D50FA434,
        0x3FD1BB02B18C8143,
        0xBC7520805AE9C034,
        0,
    ),
    (
        0x3FD5DF635D933DB0,
        0x3FD404A852D86E84,
        0xBC53C34663E3F794,
        0,
    ),
    (
        0x3FD7B7E41EC75E08,
        0x3FD5D6AFC094CEC2,
        0x3C7DB978745F896E,
        0,
    ),
    (
        0x3FD8FFF501067598,
        0x3FD71F9DEA0CFC04,
        0x3C78907CC626FEE7,
        0,
    ),
    (
        0x3FDE93FB048292C0,
        0x3FDCF5BE45B56F2B,
        0x3C5921D7D8B485DD,
        0,
    ),
    (
        0x3FDFFFFFFFFFFFFE,
        0x3FDE861FBB24C008,
        0xBC73828770081985,
        0,
    ),
    (
        0x3FDFFFFFFFFFFFFF,
        0x3FDE861FBB24C009,
        0xBC689BE0F64ED78F,
        0,
    ),
    (
        0x3FE0000000000000,
        0x3FDE861FBB24C00A,
        0xBC546566191AF822,
        0,
    ),
    (
        0x3FE0000000000001,
        0x3FDE861FBB24C00C,
        0x3C629FA8C6F53AF2,
        0,
    ),
    (
        0x3FE0000000000002,
        0x3FDE861FBB24C00E,
        0x3C77B9024D3BF8FF,
        0,
    ),
    (
        0x3FE05E14B5C81E60,
        0x3FDF58C48CCD05E9,
        0x3C7ADF633BB21255,
        0,
    ),
    (
        0x3FE08957DCA10BE4,
        0x3FDFBA8623E06F1D,
        0x3C773832347C9C58,
        0,
    ),
    (
        0x3FE0B2730240D83A,
        0x3FE00BF92BA95463,
        0xBC8D6D4F5252BFCC,
        0,
    ),
    (
        0x3FE0E88838BEBD2A,
        0x3FE049D75EEF65D1,
        0x3C81F7441884164F,
        0,
    ),
    (
        0x3FE0F885A255ACC4,
        0x3FE05C395B8EE005,
        0x3C5468878D99BB20,
        0,
    ),
    (
        0x3FE11AA44FA5537A,
        0x3FE083977AA50760,
        0x3C8D39601C4D72EA,
        0,
    ),
    (
        0x3FE18EE22A177FCA,
        0x3FE10B35584893E1,
        0x3C799D543797B027,
        0,
    ),
    (
        0x3FE1E48ADE710504,
        0x3FE170B1A41741AA,
        0x3C80355053432528,
        0,
    ),
    (
        0x3FE39A7C0D1EDD58,
        0x3FE38EE368FB1C10,
        0x3C7A979305A01840,
        0,
    ),
    (
        0x3FE51906DD285A8E,
        0x3FE58F2AA086321D,
        0x3C5808D361EB3B5B,
        0,
    ),
    (
        0x3FE8000000000000,
        0x3FEA07890F6B2BA1,
        0x3C45184539D14964,
        0,
    ),
    (
        0x3FE987C066855442,
        0x3FECDBB98ABDCCDC,
        0xBC8113606A0F95A6,
        0,
    ),
    (
        0x3FE9CF79D911E9A2,
        0x3FED6D684E6417B5,
        0x3C83BE84FCB83E7B,
        0,
    ),
    (
        0x3FEA4FEC4FBD45FC,
        0x3FEE7EE9A32E4CA6,
        0x3C880A5DDE16FF9A,
        0,
    ),
    (
        0x3FEB3242D9FA7B00,
        0x3FF048280800FE61,
        0xBC9F32EAC492671D,
        0,
    ),
    (
        0x3FEC000000000000,
        0x3FF15B49A7C38E2F,
        0xBC80D383E88C16C4,
        0,
    ),
    (
        0x3FEC43BF4ED3A50A,
        0x3FF1BF49F254141B,
        0xBC745F0C98EAA370,
        0,
    ),
    (
        0x3FEC47B82912E028,
        0x3FF1C55283D805FD,
        0x3C753FE5F4B435F2,
        0,
    ),
    (
        0x3FECCCCCCCCCCCCD,
        0x3FF29C0146770651,
        0xBC9B1B0DA414F397,
        0,
    ),
    (
        0x3FED111ED178760C,
        0x3FF315381E90D8FE,
        0x3C83F72A2931025E,
        0,
    ),
    (
        0x3FED3832D89BEC9E,
        0x3FF35E96DE7282E6,
        0x3C9750AC53690E07,
        0,
    ),
    (
        0x3FED71433D673740,
        0x3FF3CFCE6906CC02,
        0xBC9AADCD00242403,
        0,
    ),
    (
        0x3FEDA1A73720F4F6,
        0x3FF43648186E08DE,
        0xBC643C7BB5F60E2C,
        0,
    ),
    (
        0x3FEE000000000000,
        0x3FF5130C3ACAE4DE,
        0x3C9AF78733D57038,
        0,
    ),
    (
        0x3FEE6FA7882B9D07,
        0x3FF648EC2B570658,
        0x3C88FC07A225CFF2,
        0,
    ),
    (
        0x3FEF000000000000,
        0x3FF85E4997AC01A7,
        0x3C88AF6973563D09,
        0,
    ),
    (
        0x3FEF800000000000,
        0x3FFB59FFB450828D,
        0xBC65947EC7F24703,
        0,
    ),
    (
        0x3FEFAE147AE147AE,
        0x3FFD2466082BB20E,
        0x3C864B92CE2EE14A,
        0,
    ),
    (
        0x3FEFB6FA61CFBD51,
        0x3FFD96D706A82EE5,
        0xBC81455B4E1B6C8C,
        0,
    ),
    (
        0x3FEFC00000000000,
        0x3FFE1860DB82947B,
        0xBC9137C2C290AB76,
        0,
    ),
    (
        0x3FEFE00000000000,
        0x400052D8817E4EA8,
        0xBCA24F89A610B66B,
        0,
    ),
    (
        0x3FEFE8714CEA2879,
        0x4000DC8D51251E06,
        0x3CA3E505253EAC1B,
        0,
    ),
    (
        0x3FEFF00000000000,
        0x4001855321D8668A,
        0xBCAF70C67CEE3649,
        0,
    ),
    (
        0x3FEFF7CED9168729,
        0x40029D311405CD50,
        0x3C9972A440F4341F,
        0,
    ),
    (
        0x3FEFF7CED916872A,
        0x40029D311405CD82,
        0xBC80F9A860123D84,
        0,
    ),
    (
        0x3FEFF7CED916872B,
        0x40029D311405CDB4,
        0xBCA536265081D11C,
        0,
    ),
    (
        0x3FEFF7CED916872C,
        0x40029D311405CDE5,
        0x3CA9D21D770254DF,
        0,
    ),
    (
        0x3FEFF7CED916872D,
        0x40029D311405CE17,
        0x3C91B4C27D0FC521,
        0,
    ),
    (
        0x3FEFF80000000000,
        0x4002A6D8937B12D6,
        0xBCA144F57A413452,
        0,
    ),
    (
        0x3FEFF8095BC95470,
        0x4002A8B55D8632CA,
        0xBC8CB60CDF304E1E,
        0,
    ),
    (
        0x3FEFF8095BC95471,
        0x4002A8B55D8632FD,
        0xBC7D2DA2A7E842CC,
        0,
    ),
    (
        0x3FEFF8095BC95472,
        0x4002A8B55D863330,
        0xBC2DE5722C81311D,
        0,
    ),
    (
        0x3FEFF8095BC95473,
        0x4002A8B55D863363,
        0x3C7B4F4B852C0F8C,
        0,
    ),
    (
        0x3FEFF8095BC95474,
        0x4002A8B55D863396,
        0x3C8BC6E14DE4043A,
        0,
    ),
    (
        0x3FEFFC0000000000,
        0x4003B9DDBC5D5000,
        0xBC99FA22E9949CB4,
        0,
    ),
    (
        0x3FEFFDA2F50746C7,
        0x400482265E421DB9,
        0xBCABA09C20BF7602,
        0,
    ),
    (
        0x3FEFFDFA81F2AEA5,
        0x4004BC5AFFE2BF80,
        0x3C7F0FF49412CD34,
        0,
    ),
    (
        0x3FEFFE0000000000,
        0x4004C04EE987EC04,
        0x3CAFE99EF551C9C7,
        0,
    ),
    (
        0x3FEFFE85C7FBD05A,
        0x40052F6E14195E4A,
        0xBC9442993D2A94F2,
        0,
    ),
    (
        0x3FEFFF0000000000,
        0x4005BBB5BE25F0E8,
        0x3CA573C360470854,
        0,
    ),
    (
        0x3FEFFF2A7A3697F6,
        0x4005FBDA8B07F8E9,
        0x3CAD61D7F3B7A6B8,
        0,
    ),
    (
        0x3FEFFF2E48E8A71E,
        0x4006022DCB01EA50,
        0xBCA1DBA7198D8CE8,
        0,
    ),
    (
        0x3FEFFF8000000000,
        0x4006AD52A4A63E03,
        0xBCAD934885AA4A72,
        0,
    ),
    (
        0x3FEFFFC000000000,
        0x4007962E6DBD917A,
        0xBC78F2E6FC888885,
        0,
    ),
    (
        0x3FEFFFD37A84D517,
        0x40080CE780D712DC,
        0x3CA398F48BF48FE5,
        0,
    ),
    (
        0x3FEFFFE000000000,
        0x40087726DB4AC1D2,
        0x3CAF387D27A24708,
        0,
    ),
    (
        0x3FEFFFF000000000,
        0x400950F7C439DAD0,
        0x3C999945F0723430,
        0,
    ),
    (
        0x3FEFFFF5452BA22D,
        0x4009CB86898C75EA,
        0xBCABDA1F2558F6B4,
        0,
    ),
    (
        0x3FEFFFF800000000,
        0x400A2441E0F076DB,
        0xBC9D4A2BE45ECA03,
        0,
    ),
    (
        0x3FEFFFFC00000000,
        0x400AF18FF153A98F,
        0x3CA0C31DB645F054,
        0,
    ),
    (
        0x3FEFFFFE00000000,
        0x400BB95AB2EF976F,
        0xBCA500F5F7A7D5C9,
        0,
    ),
    (
        0x3FEFFFFF00000000,
        0x400C7C0BF876C131,
        0x3C8F884542BC1ACC,
        0,
    ),
    (
        0x3FEFFFFF80000000,
        0x400D3A011B664099,
        0x3C7D9112C68E5CC3,
        0,
    ),
    (
        0x3FEFFFFFC0000000,
        0x400DF38CF0476DDE,
        0x3CAC7B1C4625FD5F,
        0,
    ),
    (
        0x3FEFFFFFD5A979F7,
        0x400E602E01662C89,
        0xBCAF482BFFA996CD,
        0,
    ),
    (
        0x3FEFFFFFE0000000,
        0x400EA8F95AE0ACA8,
        0x3C9F40B8EEF837F8,
        0,
    ),
    (
        0x3FEFFFFFF0000000,
        0x400F5A8897E5B1CA,
        0xBCAEF6C6AE6B5608,
        0,
    ),
    (
        0x3FEFFFFFF8000000,
        0x4010043B261DC000,
        0x3CA45EE2560BEB39,
        0,
    ),
    (
        0x3FEFFFFFFC000000,
        0x4010597C32FA1850,
        0xBCA06C2EF2713757,
        0,
    ),
    (
        0x3FEFFFFFFE000000,
        0x4010AD1FEC244A36,
        0x3CA97233C0171BB0,
        0,
    ),
    (
        0x3FEFFFFFFF000000,
        0x4010FF3C9CDC32EB,
        0x3CB991B50CE29ED5,
        0,
    ),
    (
        0x3FEFFFFFFF800000,
        0x40114FE6A4F2E9D0,
        0x3CA7E53630C5963F,
        0,
    ),
    (
        0x3FEFFFFFFFC00000,
        0x40119F30B1C836DD,
        0xBCB097347101609E,
        0,
    ),
    (
        0x3FEFFFFFFFE00000,
        0x4011ED2BEF15A0B5,
        0xBCB527B25255D88C,
        0,
    ),
    (
        0x3FEFFFFFFFF00000,
        0x401239E830EBA467,
        0xBCA3ACFDF4AE7073,
        0,
    ),
    (
        0x3FEFFFFFFFF7B8BB,
        0x401281C0926813FD,
        0xBCBCEC25F339BCFC,
        0,
    ),
    (
        0x3FEFFFFFFFF7B90F,
        0x401281C4DCC9A222,
        0x3CB7DA725AAC4BF4,
        0,
    ),
    (
        0x3FEFFFFFFFF80000,
        0x40128574180054CE,
        0x3C74B037FD98B21E,
        0,
    ),
    (
        0x3FEFFFFFFFFC0000,
        0x4012CFDD31385FB6,
        0x3CAEEB16F93CE3CB,
        0,
    ),
    (
        0x3FEFFFFFFFFE0000,
        0x401319301128AFB8,
        0x3C826B39F4B5643A,
        0,
    ),
    (
        0x3FEFFFFFFFFF0000,
        0x401361786C2CE781,
        0x3CB82E2E7CF750E6,
        0,
    ),
    (
        0x3FEFFFFFFFFF8000,
        0x4013A8C12B93C759,
        0xBC98EC61216955C5,
        0,
    ),
    (
        0x3FEFFFFFFFFFA0E3,
        0x4013C6FFBA2D195F,
        0x3C9BAF24845DE790,
        0,
    ),
    (
        0x3FEFFFFFFFFFC000,
        0x4013EF14804CAF40,
        0x3C9F28D53A3280CA,
        0,
    ),
    (
        0x3FEFFFFFFFFFE000,
        0x4014347BF36FBAE8,
        0x3C92A3E28DC4B2EE,
        0,
    ),
    (
        0x3FEFFFFFFFFFF000,
        0x4014790074EB88EE,
        0xBCB506A2DFFF640C,
        0,
    ),
    (
        0x3FEFFFFFFFFFF472,
        0x401498E17616F78A,
        0x3CA38AE8B3EE945F,
        0,
    ),
    (
        0x3FEFFFFFFFFFF800,
        0x4014BCAA6897EFFD,
        0xBCA454ECE5203F95,
        0,
    ),
    (
        0x3FEFFFFFFFFFFC00,
        0x4014FF81B1E32C94,
        0xBCBF6DB103D81BA8,
        0,
    ),
    (
        0x3FEFFFFFFFFFFE00,
        0x4015418DBE470875,
        0x3C9432CB34ED3468,
        0,
    ),
    (
        0x3FEFFFFFFFFFFED8,
        0x401575392033EE66,
        0xBCA754C8B4B5E212,
        0,
    ),
    (
        0x3FEFFFFFFFFFFF00,
        0x401582D58EACCF1F,
        0x3C93974F0AFFDC4E,
        0,
    ),
    (
        0x3FEFFFFFFFFFFF80,
        0x4015C35FBFE14F98,
        0xBC9B437A31EB318E,
        0,
    ),
    (
        0x3FEFFFFFFFFFFFAF,
        0x4015ED9604B3E435,
        0x3CB7DA9A723C6B68,
        0,
    ),
    (
        0x3FEFFFFFFFFFFFBE,
        0x4016006107B8587F,
        0x3C9767507C360838,
        0,
    ),
    (
        0x3FEFFFFFFFFFFFC0,
        0x4016033292357FF2,
        0x3CBCEDA20DFA6BF9,
        0,
    ),
    (
        0x3FEFFFFFFFFFFFDB,
        0x401635294BD75B29,
        0x3CB8377C6B6DA68D,
        0,
    ),
    (
        0x3FEFFFFFFFFFFFE0,
        0x40164253F064686F,
        0xBCBCFD9BD86183A5,
        0,
    ),
    (
        0x3FEFFFFFFFFFFFE6,
        0x4016551B8BD21497,
        0x3CB4560E0FB1C2EA,
        0,
    ),
    (
        0x3FEFFFFFFFFFFFF0,
        0x401680C975D3A9E8,
        0xBCB6CDCBD4855C2D,
        0,
    ),
    (
        0x3FEFFFFFFFFFFFF6,
        0x4016AAC4732CFD4E,
        0x3CA1504AA2EE3A1F,
        0,
    ),
    (
        0x3FEFFFFFFFFFFFF8,
        0x4016BE9874412264,
        0x3C6A9CA35697D307,
        0,
    ),
    (
        0x3FEFFFFFFFFFFFFC,
        0x4016FBC5F8EDCD37,
        0x3CAA2269BF5A27D8,
        0,
    ),
    (
        0x3FEFFFFFFFFFFFFE,
        0x40173856D153F081,
        0xBC962BA2CAF50B45,
        0,
    ),
    (
        0x3FEFFFFFFFFFFFFF,
        0x4017744F8F74E94A,
        0x3CBAFB5EAD16EAE0,
        0,
    ),
];
