//! The gamma family for one float element: `lgamma`, `digamma`, `polygamma(n, ·)`, and the
//! Hurwitz zeta function the higher polygammas are made of. The algorithms are Cephes'
//! as ATen's Math.h writes them (float32 in float32 arithmetic where ATen's is, zeta in
//! float64 for both dtypes, as its CPU accumulate type is), so values at and near the
//! poles are torch's, not merely close to the true ones.

// (Cephes' constants as published, digits beyond float64's included)
#![allow(clippy::excessive_precision)]

use super::unary::Float;

const PI: f64 = std::f64::consts::PI;

/// `ln |Γ(x)|` (+∞ at the poles, as C's lgamma).
/// `x · 2ⁿ` with one rounding (C's scalbn, as musl computes it: the power applied in at
/// most three exact steps, so a result that is subnormal is rounded once).
pub fn scalbn(mut x: f64, mut n: i32) -> f64 {
    let two_1023 = f64::from_bits(0x7fe0_0000_0000_0000);
    // 2^-1022 · 2^53: a step that stays normal while the exponent is large
    let two_m969 = f64::from_bits(0x0010_0000_0000_0000) * f64::from_bits(0x4340_0000_0000_0000);
    if n > 1023 {
        x *= two_1023;
        n -= 1023;
        if n > 1023 {
            x *= two_1023;
            n = (n - 1023).min(1023);
        }
    } else if n < -1022 {
        x *= two_m969;
        n += 1022 - 53;
        if n < -1022 {
            x *= two_m969;
            n = (n + 1022 - 53).max(-1022);
        }
    }
    x * f64::from_bits(((0x3ff + n) as u64) << 52)
}

pub fn lgamma<T: Float>(x: T) -> T {
    // (fdlibm's algorithm in float64; float32 rounds once from it)
    T::from_f64(libm::lgamma(x.to_f64()))
}

/// ψ(x) = Γ'(x)/Γ(x): ∓∞ at ±0, NaN at the negative integers and -∞.
pub fn digamma<T: Float>(x: T) -> T {
    let (zero, one) = (T::from_f64(0.0), T::from_f64(1.0));
    let xf = x.to_f64();
    if xf == 0.0 {
        return T::from_f64(f64::INFINITY.copysign(-xf));
    }
    if xf < 0.0 {
        if xf == xf.trunc() {
            return T::from_f64(f64::NAN);
        }
        // ψ(1 - x) - ψ(x) = π cot(πx), with cot taken of the fractional part (exact in
        // float64, and more accurate than π·x for |x| > 1)
        let r = xf - xf.trunc();
        return digamma(one - x) - T::from_f64(PI / (PI * r).tan());
    }
    // push x to 10 or more: ψ(x) = ψ(x + 1) - 1/x
    let (mut x, mut result) = (x, zero);
    let ten = T::from_f64(10.0);
    while x < ten {
        result = result - one.div(x);
        x = x + one;
    }
    if x == ten {
        return result + T::from_f64(2.251_752_589_066_721_107_64);
    }
    // the asymptotic series
    const A: [f64; 7] = [
        8.333_333_333_333_333_333_33E-2,
        -2.109_279_609_279_609_279_61E-2,
        7.575_757_575_757_575_757_58E-3,
        -4.166_666_666_666_666_666_67E-3,
        3.968_253_968_253_968_253_97E-3,
        -8.333_333_333_333_333_333_33E-3,
        8.333_333_333_333_333_333_33E-2,
    ];
    let mut y = zero;
    if x < T::from_f64(1.0e17) {
        let z = one.div(x * x);
        let mut p = zero;
        for a in A {
            p = p * z + T::from_f64(a);
        }
        y = z * p;
    }
    result + x.ln() - T::from_f64(0.5).div(x) - y
}

/// ψ'(x) (polygamma of order 1): reflection below 1/2, six recurrence steps and a short
/// asymptotic series.
pub fn trigamma<T: Float>(x: T) -> T {
    let one = T::from_f64(1.0);
    let (mut x, mut sign, mut result) = (x, one, T::from_f64(0.0));
    if x < T::from_f64(0.5) {
        sign = -one;
        let pi = T::from_f64(PI);
        let s = (pi * x).sin();
        result = result - (pi * pi).div(s * s);
        x = one - x;
    }
    for _ in 0..6 {
        result = result + one.div(x * x);
        x = x + one;
    }
    let ixx = one.div(x * x);
    let c = |v: f64| T::from_f64(v);
    let series = (one
        + one.div(c(2.0) * x)
        + ixx * (one.div(c(6.0)) - ixx * (one.div(c(30.0)) - ixx * one.div(c(42.0)))))
    .div(x);
    sign * (result + series)
}

/// ψ⁽ⁿ⁾(x) = (-1)ⁿ⁺¹ n! ζ(n + 1, x); `n` ≥ 0 (the op layer refuses negative orders).
pub fn polygamma<T: Float>(n: u32, x: T) -> T {
    match n {
        0 => digamma(x),
        1 => trigamma(x),
        _ => {
            let sign = T::from_f64(if n % 2 == 1 { 1.0 } else { -1.0 });
            let factorial = lgamma(T::from_f64(f64::from(n) + 1.0)).exp();
            sign * factorial * T::from_f64(zeta(f64::from(n) + 1.0, x.to_f64()))
        }
    }
}

/// The Hurwitz zeta function ζ(s, q) = Σₖ (k + q)⁻ˢ (Cephes' `zeta`: direct summation,
/// then Euler–Maclaurin).
pub fn zeta(s: f64, q: f64) -> f64 {
    const MACHEP: f64 = 1.110_223_024_625_156_540_42E-16;
    // (2k)! / B₂ₖ
    const A: [f64; 12] = [
        12.0,
        -720.0,
        30240.0,
        -1_209_600.0,
        47_900_160.0,
        -1.892_437_580_318_379_160_6e9,
        7.472_424_96e10,
        -2.950_130_727_918_164_224e12,
        1.164_678_281_435_006_724_9e14,
        -4.597_978_722_407_472_610_5e15,
        1.815_210_540_194_354_677_3e17,
        -7.166_165_256_175_667_011_3e18,
    ];
    if s == 1.0 {
        return f64::INFINITY;
    }
    if s < 1.0 {
        return f64::NAN;
    }
    if q <= 0.0 {
        if q == q.floor() {
            return f64::INFINITY;
        }
        if s != s.floor() {
            return f64::NAN; // q^-s would be complex
        }
    }
    let mut sum = q.powf(-s);
    let mut a = q;
    let mut b = 0.0;
    let mut i = 0;
    while i < 9 || a <= 9.0 {
        i += 1;
        a += 1.0;
        b = a.powf(-s);
        sum += b;
        if (-MACHEP * sum < b) && (b < MACHEP * sum) {
            return sum;
        }
    }
    let w = a;
    sum += b * w / (s - 1.0);
    sum -= 0.5 * b;
    let (mut a, mut k) = (1.0, 0.0);
    for d in A {
        a *= s + k;
        b /= w;
        let t = a * b / d;
        sum += t;
        if (t / sum).abs() < MACHEP {
            return sum;
        }
        k += 1.0;
        a *= s + k;
        b /= w;
        k += 1.0;
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalbn_rounds_once_across_the_whole_range() {
        // exact where the result is normal, whatever the steps
        for (x, n, want) in [
            (1.5, 3, 12.0),
            (3.0, -1074, f64::from_bits(3)), // three subnormal units, exactly
            (2f64.powi(-1000), 1500, 2f64.powi(500)),
            (2f64.powi(1000), -1500, 2f64.powi(-500)),
            (1.0, 5000, f64::INFINITY),
            (-1.0, -5000, -0.0),
            (
                f64::MAX,
                -2046,
                f64::MAX * 2f64.powi(-1023) * 2f64.powi(-1023),
            ),
        ] {
            let got = scalbn(x, n);
            assert_eq!(got.to_bits(), want.to_bits(), "scalbn({x:e}, {n})");
        }
        // one rounding into the subnormals: 1.75 units is 2, 1.25 units 1, 2.5 units 2
        // (a tie, to even)
        assert_eq!(scalbn(1.75, -1074), f64::from_bits(2));
        assert_eq!(scalbn(1.25, -1074), f64::from_bits(1));
        assert_eq!(scalbn(2.5, -1074), f64::from_bits(2));
        assert!(scalbn(f64::NAN, 3).is_nan());
    }

    #[test]
    fn known_values() {
        let euler = 0.577_215_664_901_532_9;
        assert!((digamma(1.0_f64) + euler).abs() < 1e-15);
        assert!((digamma(0.5_f64) + euler + 2.0 * 2f64.ln()).abs() < 1e-14);
        // ψ'(1) = π²/6 (torch's short series is within 1e-9), ψ''(1) = -2ζ(3)
        assert!((trigamma(1.0_f64) - PI * PI / 6.0).abs() < 1e-9);
        assert_eq!(trigamma(1.0_f64), 1.644_934_067_638_337_5); // torch's value
        assert!((polygamma(2, 1.0_f64) + 2.0 * 1.202_056_903_159_594_2).abs() < 1e-13);
        assert!((zeta(2.0, 1.0) - PI * PI / 6.0).abs() < 1e-15);
        assert!((lgamma(5.0_f64) - 24f64.ln()).abs() < 1e-15);
    }

    #[test]
    fn poles_and_limits_as_torch() {
        assert_eq!(digamma(0.0_f64), f64::NEG_INFINITY);
        assert_eq!(digamma(-0.0_f64), f64::INFINITY);
        assert!(digamma(-2.0_f64).is_nan() && digamma(f64::NEG_INFINITY).is_nan());
        assert_eq!(digamma(f64::INFINITY), f64::INFINITY);
        assert_eq!(trigamma(0.0_f32), f32::INFINITY);
        assert_eq!(trigamma(f64::INFINITY), 0.0);
        assert_eq!(polygamma(3, 0.0_f64), f64::INFINITY);
        assert_eq!(lgamma(-1.0_f64), f64::INFINITY);
    }

    #[test]
    fn recurrences_hold() {
        // ψ⁽ⁿ⁾(x + 1) = ψ⁽ⁿ⁾(x) + (-1)ⁿ n! / xⁿ⁺¹
        for &x in &[0.3_f64, 1.7, 4.2, 12.5, -1.5] {
            assert!((digamma(x + 1.0) - digamma(x) - 1.0 / x).abs() < 1e-12);
            assert!((trigamma(x + 1.0) - trigamma(x) + 1.0 / (x * x)).abs() < 1e-8);
            let d = polygamma(2, x + 1.0) - polygamma(2, x) - 2.0 / (x * x * x);
            assert!(d.abs() < 1e-9 * polygamma(2, x).abs().max(1.0), "{x}: {d}");
        }
    }
}
