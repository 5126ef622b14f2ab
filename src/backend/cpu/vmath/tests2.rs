//! The two-input kernels (atan2, hypot, logaddexp, pow, fmod, remainder, floor
//! division): accuracy against float64 libm (float32) and a double-double reference
//! (float64), special values, torch's sign conventions, and the same bits at every
//! level, in the per-element forms and in the scalar tails.

#![allow(clippy::unwrap_used, clippy::panic, clippy::float_cmp)]

use super::reference::{exact2_f64, ulps_f32, ulps_f64};
use super::{Func2, Level, float32, float64, supported};
use std::mem::MaybeUninit;

const PAIRS: usize = if cfg!(debug_assertions) {
    1 << 13
} else {
    1 << 19
};

fn run2<T: Copy>(f: &Func2<T>, level: Level, a: &[T], b: &[T]) -> Vec<T> {
    let mut out = vec![MaybeUninit::<T>::uninit(); a.len()];
    (f.at)(level, a, b, &mut out);
    // SAFETY: slice functions initialise every element
    out.into_iter()
        .map(|v| unsafe { v.assume_init() })
        .collect()
}

/// xorshift64*: a fixed stream of pseudo-random words.
fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    move || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        s.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn same<T: Into<f64> + Copy>(a: T, b: T, bits: impl Fn(T) -> u64) -> bool {
    bits(a) == bits(b) || (a.into().is_nan() && b.into().is_nan())
}

const SPECIAL32: [f32; 22] = [
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    2.0,
    -3.0,
    7.5,
    -7.5,
    f32::MIN_POSITIVE,
    -f32::MIN_POSITIVE,
    1.0e-45,
    -1.0e-45,
    f32::MAX,
    f32::MIN,
    1.0e-30,
    1.0e30,
    88.0,
    -104.0,
];

/// Pairs: random bit patterns, ordinary magnitudes, nearly equal magnitudes (atan2's
/// switches, fmod's quotients next to an integer), and every pair of special values.
fn pairs32(seed: u64) -> (Vec<f32>, Vec<f32>) {
    let mut r = rng(seed);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let ordinary = |w: u64| {
        let e = (w >> 40) % 60;
        let m = 1.0 + (w & 0xFF_FFFF) as f32 / 16_777_216.0;
        let v = m * 2f32.powi(e as i32 - 30);
        if w >> 63 == 1 { -v } else { v }
    };
    for i in 0..PAIRS {
        let (w1, w2) = (r(), r());
        match i % 4 {
            0 => {
                a.push(f32::from_bits(w1 as u32));
                b.push(f32::from_bits(w2 as u32));
            }
            1 => {
                a.push(ordinary(w1));
                b.push(ordinary(w2));
            }
            2 => {
                // |a| near |b| tan(pi/8) .. |b|, either order
                let x = ordinary(w1);
                let t = 0.35 + 0.7 * ((w2 & 0xFFFF) as f32 / 65_536.0);
                a.push(x * t);
                b.push(if w2 >> 63 == 1 { -x } else { x });
            }
            _ => {
                // a = k b, a step away: fmod's quotient next to an integer
                let x = ordinary(w1);
                let k = ((w2 >> 8) % 5000) as f32 - 2500.0;
                let v = k * x;
                let step = (w2 & 3) as i32 - 1;
                a.push(f32::from_bits((v.to_bits() as i32 + step) as u32));
                b.push(x);
            }
        }
    }
    for &x in &SPECIAL32 {
        for &y in &SPECIAL32 {
            a.push(x);
            b.push(y);
        }
    }
    (a, b)
}

fn reference32(name: &str, a: f32, b: f32) -> f64 {
    let (x, y) = (f64::from(a), f64::from(b));
    match name {
        "atan2" => x.atan2(y),
        "hypot" => x.hypot(y),
        "logaddexp" => exact2_f64("logaddexp")(x, y).0,
        "logaddexp2" => exact2_f64("logaddexp2")(x, y).0,
        "pow" => x.powf(y),
        _ => unreachable!(),
    }
}

fn exact_fmod_family32(name: &str, a: f32, b: f32) -> f32 {
    let m = a % b;
    match name {
        "fmod" => m,
        "remainder" => {
            if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
                m + b
            } else {
                m
            }
        }
        _ => {
            if b == 0.0 {
                return a / b;
            }
            let mut div = (a - m) / b;
            if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
                div -= 1.0;
            }
            if div == 0.0 {
                return 0f32.copysign(a / b);
            }
            let f = div.floor();
            if div - f > 0.5 { f + 1.0 } else { f }
        }
    }
}

#[test]
fn float32_pairs_within_1_ulp_exact_where_special_and_the_same_at_every_level() {
    let (a, b) = pairs32(1);
    let levels = supported();
    let top = *levels.last().unwrap();
    for f in float32::FUNCS2 {
        let out = run2(f, top, &a, &b);
        let exact_family = ["fmod", "remainder", "floor_divide"].contains(&f.name);
        let mut worst = (0.0, 0.0f32, 0.0f32);
        for ((&x, &y), &got) in a.iter().zip(&b).zip(&out) {
            if exact_family {
                let want = exact_fmod_family32(f.name, x, y);
                assert!(
                    same(got, want, |v| u64::from(v.to_bits())),
                    "{}({x:e}, {y:e}) = {got:e}, not {want:e}",
                    f.name
                );
                continue;
            }
            let exact = reference32(f.name, x, y);
            let u = ulps_f32(got, exact);
            if u > worst.0 {
                worst = (u, x, y);
            }
            let want = exact as f32;
            let special = want.is_nan() || want.is_infinite() || want == 0.0;
            if special || x == 0.0 || y == 0.0 || !x.is_finite() || !y.is_finite() {
                assert!(
                    same(got, want, |v| u64::from(v.to_bits())) || u <= 1.0 && !special,
                    "{}({x:e}, {y:e}) = {got:e}, not {want:e}",
                    f.name
                );
            }
        }
        if !exact_family {
            // (the figures docs/kernels.md quotes: `cargo test --release -- --nocapture`)
            eprintln!(
                "float32 {}: max {:.3} ulp at ({:e}, {:e})",
                f.name, worst.0, worst.1, worst.2
            );
        }
        assert!(
            worst.0 <= 1.0,
            "{}: {} ulp at ({:e}, {:e})",
            f.name,
            worst.0,
            worst.1,
            worst.2
        );
        for &l in &levels {
            let o = run2(f, l, &a, &b);
            for (i, (&p, &q)) in out.iter().zip(&o).enumerate() {
                assert!(
                    same(p, q, |v| u64::from(v.to_bits())),
                    "{} at {l:?}: ({:e}, {:e}) gives {p:e} and {q:e}",
                    f.name,
                    a[i],
                    b[i]
                );
            }
        }
        for (i, &v) in out.iter().enumerate().step_by(3) {
            let one = (f.one)(a[i], b[i]);
            assert!(
                same(one, v, |v| u64::from(v.to_bits())),
                "{}({:e}, {:e}) per element: {one:e}, slice {v:e}",
                f.name,
                a[i],
                b[i]
            );
        }
        for n in [1, 3, 15, 17, 33] {
            let s = a.len() / 3;
            for &l in &levels {
                let o = run2(f, l, &a[s..s + n], &b[s..s + n]);
                for (j, &v) in o.iter().enumerate() {
                    assert!(
                        same(v, out[s + j], |v| u64::from(v.to_bits())),
                        "{} tail at {l:?}",
                        f.name
                    );
                }
            }
        }
    }
}

fn pairs64(seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut r = rng(seed);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let ordinary = |w: u64| {
        let e = (w >> 53) % 80;
        let m = 1.0 + (w & ((1 << 52) - 1)) as f64 / 4_503_599_627_370_496.0;
        let v = m * 2f64.powi(e as i32 - 40);
        if w >> 63 == 1 { -v } else { v }
    };
    let n = PAIRS / 4;
    for i in 0..n {
        let (w1, w2) = (r(), r());
        match i % 4 {
            0 => {
                a.push(f64::from_bits(w1));
                b.push(f64::from_bits(w2));
            }
            1 => {
                a.push(ordinary(w1));
                b.push(ordinary(w2));
            }
            2 => {
                let x = ordinary(w1);
                let t = 0.35 + 0.7 * ((w2 & 0xFFFF) as f64 / 65_536.0);
                a.push(x * t);
                b.push(if w2 >> 63 == 1 { -x } else { x });
            }
            _ => {
                let x = ordinary(w1);
                let k = ((w2 >> 8) % 5000) as f64 - 2500.0;
                let v = k * x;
                let step = (w2 & 3) as i64 - 1;
                a.push(f64::from_bits((v.to_bits() as i64 + step) as u64));
                b.push(x);
            }
        }
    }
    let special: Vec<f64> = SPECIAL32
        .iter()
        .map(|&v| f64::from(v))
        .chain([f64::MAX, f64::MIN_POSITIVE, 5e-324, -5e-324, 1e300, -1e-300])
        .collect();
    for &x in &special {
        for &y in &special {
            a.push(x);
            b.push(y);
        }
    }
    (a, b)
}

#[test]
fn float64_pairs_within_1_ulp_exact_where_special_and_the_same_at_every_level() {
    let (a, b) = pairs64(2);
    let levels = supported();
    let top = *levels.last().unwrap();
    for f in float64::FUNCS2 {
        let out = run2(f, top, &a, &b);
        let exact_family = ["fmod", "remainder", "floor_divide"].contains(&f.name);
        let mut worst = (0.0, 0.0f64, 0.0f64);
        for ((&x, &y), &got) in a.iter().zip(&b).zip(&out) {
            if exact_family {
                let want = (f.one)(x, y);
                let m = x % y;
                assert!(
                    f.name != "fmod" || same(got, m, f64::to_bits),
                    "fmod({x:e}, {y:e}) = {got:e}, not {m:e}"
                );
                assert!(
                    same(got, want, f64::to_bits),
                    "{}({x:e}, {y:e}) = {got:e}, not {want:e}",
                    f.name
                );
                continue;
            }
            let exact = exact2_f64(f.name)(x, y);
            let u = ulps_f64(got, exact);
            if u > worst.0 {
                worst = (u, x, y);
            }
            let (hi, _, e) = exact;
            if e == 0 && (hi.is_nan() || hi.is_infinite() || hi == 0.0) {
                assert!(
                    same(got, hi, f64::to_bits),
                    "{}({x:e}, {y:e}) = {got:e}, not {hi:e}",
                    f.name
                );
            }
        }
        if !exact_family {
            eprintln!(
                "float64 {}: max {:.3} ulp at ({:e}, {:e})",
                f.name, worst.0, worst.1, worst.2
            );
        }
        let bound = 1.0;
        assert!(
            worst.0 <= bound,
            "{}: {} ulp at ({:e}, {:e})",
            f.name,
            worst.0,
            worst.1,
            worst.2
        );
        for &l in &levels {
            let o = run2(f, l, &a, &b);
            for (i, (&p, &q)) in out.iter().zip(&o).enumerate() {
                assert!(
                    same(p, q, f64::to_bits),
                    "{} at {l:?}: ({:e}, {:e}) gives {p:e} and {q:e}",
                    f.name,
                    a[i],
                    b[i]
                );
            }
        }
        for (i, &v) in out.iter().enumerate().step_by(3) {
            assert!(
                same((f.one)(a[i], b[i]), v, f64::to_bits),
                "{}({:e}, {:e}) per element",
                f.name,
                a[i],
                b[i]
            );
        }
    }
}

#[test]
fn remainder_and_floor_divide_follow_torch_signs() {
    // (a, b, remainder, floor_divide, fmod), from torch 2.15 on float32
    let nan = f64::NAN;
    let inf = f64::INFINITY;
    let rows: [(f64, f64, f64, f64, f64); 16] = [
        (-3.0, 2.0, 1.0, -2.0, -1.0),
        (3.0, -2.0, -1.0, -2.0, 1.0),
        (-3.0, -2.0, -1.0, 1.0, -1.0),
        (3.0, 2.0, 1.0, 1.0, 1.0),
        (-0.0, 2.0, -0.0, -0.0, -0.0),
        (0.0, -2.0, 0.0, -0.0, 0.0),
        (5.5, 0.0, nan, inf, nan),
        (-5.5, 0.0, nan, -inf, nan),
        (0.0, 0.0, nan, nan, nan),
        (-0.0, 0.0, nan, nan, nan),
        (1.0, inf, 1.0, 0.0, 1.0),
        (-1.0, inf, inf, -1.0, -1.0),
        (inf, 2.0, nan, nan, nan),
        (nan, 2.0, nan, nan, nan),
        (-7.0, 7.0, -0.0, -1.0, -0.0),
        (7.0, -7.0, 0.0, -1.0, 0.0),
    ];
    let func = |fs: &'static [Func2<f32>], n: &str| fs.iter().find(|f| f.name == n).unwrap();
    let func64 = |fs: &'static [Func2<f64>], n: &str| fs.iter().find(|f| f.name == n).unwrap();
    for l in supported() {
        for (name, col) in [("remainder", 2), ("floor_divide", 3), ("fmod", 4)] {
            let (f, g) = (func(float32::FUNCS2, name), func64(float64::FUNCS2, name));
            let a: Vec<f64> = rows.iter().map(|r| r.0).collect();
            let b: Vec<f64> = rows.iter().map(|r| r.1).collect();
            let want: Vec<f64> = rows.iter().map(|r| [r.2, r.3, r.4][col - 2]).collect();
            let got64 = run2(g, l, &a, &b);
            let a32: Vec<f32> = a.iter().map(|&v| v as f32).collect();
            let b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
            let got32 = run2(f, l, &a32, &b32);
            for i in 0..rows.len() {
                assert!(
                    same(got64[i], want[i], f64::to_bits),
                    "{name}{:?} f64 {l:?}: {}",
                    rows[i],
                    got64[i]
                );
                assert!(
                    same(f64::from(got32[i]), want[i], f64::to_bits),
                    "{name}{:?} f32 {l:?}: {}",
                    rows[i],
                    got32[i]
                );
            }
        }
    }
    // the smallest subnormal: its remainder rounds to the divisor (torch: 3.0)
    let rem = func(float32::FUNCS2, "remainder");
    assert_eq!(run2(rem, Level::Baseline, &[-1.0e-45], &[3.0]), vec![3.0]);
}

#[test]
fn atan2_quadrants_and_signed_zeros() {
    use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};
    let inf = f64::INFINITY;
    let rows: [(f64, f64, f64); 12] = [
        (0.0, 0.0, 0.0),
        (-0.0, 0.0, -0.0),
        (0.0, -0.0, PI),
        (-0.0, -0.0, -PI),
        (1.0, 0.0, FRAC_PI_2),
        (-1.0, -0.0, -FRAC_PI_2),
        (inf, inf, FRAC_PI_4),
        (-inf, -inf, -3.0 * FRAC_PI_4),
        (1.0, -inf, PI),
        (-1.0, inf, -0.0),
        (inf, -1.0, FRAC_PI_2),
        (-2.0, -2.0, -3.0 * FRAC_PI_4),
    ];
    // a subnormal over a small normal: the quotient's residual underflows (1.095 ulp
    // when the quotient was a reciprocal times n)
    let f = float32::FUNCS2.iter().find(|f| f.name == "atan2").unwrap();
    for l in supported() {
        let (y, x) = (4.050_237e-39f32, 3.226_021e-6f32);
        let got = run2(f, l, &[y], &[x])[0];
        let u = ulps_f32(got, f64::from(y).atan2(f64::from(x)));
        assert!(
            u <= 0.5 + 1e-3,
            "atan2({y:e}, {x:e}) = {got:e}: {u} ulp at {l:?}"
        );
    }
    let f32s = float32::FUNCS2.iter().find(|f| f.name == "atan2").unwrap();
    let f64s = float64::FUNCS2.iter().find(|f| f.name == "atan2").unwrap();
    for l in supported() {
        for &(y, x, want) in &rows {
            let g = run2(f64s, l, &[y], &[x])[0];
            assert!(
                same(g, want, f64::to_bits),
                "atan2({y}, {x}) = {g} at {l:?}"
            );
            let g = run2(f32s, l, &[y as f32], &[x as f32])[0];
            assert!(
                same(g, want as f32, |v| u64::from(v.to_bits())),
                "f32 atan2({y}, {x}) = {g}"
            );
        }
    }
}

#[test]
fn float32_number_base_pow_gives_pow1s_bits() {
    let ys: Vec<f32> = (0..3000)
        .map(|i| (i as f32 - 1500.0) * 0.07)
        .chain(SPECIAL32)
        .collect();
    for c in [
        2.0f32,
        0.5,
        10.0,
        -2.0,
        -0.5,
        0.0,
        -0.0,
        1.0,
        -1.0,
        f32::INFINITY,
        f32::NAN,
        1e-40,
        3e38,
    ] {
        for l in supported() {
            let mut out = vec![MaybeUninit::<f32>::uninit(); ys.len()];
            float32::powb::at(l, c, &ys, &mut out);
            for (&y, v) in ys.iter().zip(out) {
                // SAFETY: the slice function initialises every element
                let v = unsafe { v.assume_init() };
                let want = float32::pow1(c, y);
                assert!(
                    same(v, want, |v| u64::from(v.to_bits())),
                    "{c:e}^{y:e} at {l:?}: {v:e}, not {want:e}"
                );
                let u = ulps_f32(v, f64::from(c).powf(f64::from(y)));
                assert!(u <= 1.0, "{c:e}^{y:e}: {u} ulp");
            }
        }
    }
}

#[test]
fn float32_logaddexp_where_the_max_and_the_log_cancel() {
    // ln(e^a + e^b) near 0 with a, b < 0: the max and log1p(e^-|a - b|) cancel by a
    // factor of up to about 10^4 (torch's float32 kernel is off by ~10^3 ulp there);
    // logaddexp2 likewise, b near log2(1 - 2^a), and equal operands (a = b = -1 is
    // exactly 0 in base 2, -ln 2 rounded is within 1 ulp of its tiny result)
    for (name, base) in [("logaddexp", std::f64::consts::E), ("logaddexp2", 2.0)] {
        let mut a = vec![-1.319_563_5f32, -1.0, -std::f32::consts::LN_2, 3.5, -2.0];
        let mut b = vec![-0.310_774_56f32, -1.0, -std::f32::consts::LN_2, 3.5, -2.0];
        for i in 1..400 {
            let x = i as f64 * 0.01;
            for delta in [1e-2, 1e-3, -1e-3, 1e-4] {
                a.push(-x as f32);
                b.push(((1.0 - base.powf(-x)).log(base) + delta) as f32);
            }
        }
        let f = float32::FUNCS2.iter().find(|f| f.name == name).unwrap();
        let exact = exact2_f64(name);
        let mut worst = (0.0, 0.0, 0.0);
        for l in supported() {
            for ((&x, &y), &got) in a.iter().zip(&b).zip(&run2(f, l, &a, &b)) {
                let u = ulps_f32(got, exact(f64::from(x), f64::from(y)).0);
                if u > worst.0 {
                    worst = (u, x, y);
                }
                assert!(u <= 1.0, "{name}({x:e}, {y:e}) = {got:e}: {u} ulp at {l:?}");
            }
        }
        eprintln!(
            "float32 {name}, cancellation up to ~10^4: max {:.3} ulp at ({:e}, {:e})",
            worst.0, worst.1, worst.2
        );
        let one = run2(f, supported()[0], &[-1.0], &[-1.0])[0];
        if name == "logaddexp2" {
            assert_eq!(one.to_bits(), 0.0f32.to_bits());
        }
    }
}

#[test]
fn float64_logaddexp_where_the_max_and_the_log_cancel() {
    // ln(e^a + e^b) near 0 with a, b < 0, the max and the log cancelling by a factor c
    // (about 1/delta, up to ~10^4): the log's two-float sum is good to about 2^-56, so
    // the error grows with c: measured 5.7 ulp at c <= 100, 1027 ulp at c ~ 10^4
    // (torch's kernel, with the log rounded to one float64: about c ulps, 37 ulp at
    // the first pair here, which is within 1 ulp now)
    let mut cases = vec![(-0.619_368_674_099_805f64, -0.797_330_777_380_241_8, 1e-2)];
    cases.push((-1.929_907_907_107_201, -2.925_741_693_953_156_5e-2, 1e-2));
    for i in 1..400 {
        let x = i as f64 * 0.01;
        for delta in [1e-2, -1e-2, 1e-3, -1e-3, 1e-4] {
            cases.push((-x, (1.0 - (-x).exp()).ln() + delta, delta));
        }
    }
    let (a, b): (Vec<f64>, Vec<f64>) = cases.iter().map(|c| (c.0, c.1)).unzip();
    let f = float64::FUNCS2
        .iter()
        .find(|f| f.name == "logaddexp")
        .unwrap();
    let exact = exact2_f64("logaddexp");
    let mut worst = [(0.0, 0.0, 0.0); 2];
    for l in supported() {
        for (c, &got) in cases.iter().zip(&run2(f, l, &a, &b)) {
            let u = ulps_f64(got, exact(c.0, c.1));
            let w = &mut worst[usize::from(c.2.abs() < 1e-2)];
            if u > w.0 {
                *w = (u, c.0, c.1);
            }
        }
    }
    for (w, what) in worst.iter().zip(["c <= 100", "c up to 10^4"]) {
        eprintln!(
            "float64 logaddexp, {what}: max {:.3} ulp at ({:e}, {:e})",
            w.0, w.1, w.2
        );
    }
    assert!(worst[0].0 <= 8.0, "{:?}", worst[0]);
    assert!(worst[1].0 <= 2048.0, "{:?}", worst[1]);
    let first = run2(f, supported()[0], &a[..1], &b[..1])[0];
    assert!(ulps_f64(first, exact(a[0], b[0])) <= 1.0);
}

/// Estrin's scheme written out (`float64::estrin`) pairs exactly as the loop over its
/// levels that it replaced: the same multiply-adds, so the same bits, for every length.
#[test]
fn estrin_written_out_gives_the_level_loops_bits() {
    fn by_levels(x: f64, c: &[f64]) -> f64 {
        let mut v = c.to_vec();
        let mut xp = x;
        while v.len() > 1 {
            v = v
                .chunks(2)
                .map(|p| {
                    if p.len() == 2 {
                        p[1].mul_add(xp, p[0])
                    } else {
                        p[0]
                    }
                })
                .collect();
            xp *= xp;
        }
        v[0]
    }
    fn check<const N: usize>(next: &mut impl FnMut() -> u64) {
        for _ in 0..200 {
            let mut unit = || (next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            let c: [f64; N] = std::array::from_fn(|_| unit());
            let x = unit();
            let (got, want) = (float64::estrin(x, c), by_levels(x, &c));
            assert_eq!(got.to_bits(), want.to_bits(), "N = {N}, x = {x:e}");
        }
    }
    let mut next = rng(11);
    check::<1>(&mut next);
    check::<2>(&mut next);
    check::<3>(&mut next);
    check::<4>(&mut next);
    check::<5>(&mut next);
    check::<6>(&mut next);
    check::<7>(&mut next);
    check::<8>(&mut next);
    check::<9>(&mut next);
    check::<10>(&mut next);
    check::<11>(&mut next);
    check::<12>(&mut next);
    check::<13>(&mut next);
    check::<14>(&mut next);
    check::<15>(&mut next);
    check::<16>(&mut next);
}
