//! Reference values for the accuracy tests and `examples/vmath_ulp.rs`: float64 libm
//! for the float32 functions, a double-double evaluation for the float64 ones, and the
//! distance in ulps.

#![allow(clippy::excessive_precision)]

/// The float32 function's value at x, from float64 libm.
pub fn exact_f32(name: &str) -> fn(f64) -> f64 {
    match name {
        "exp" => f64::exp,
        "expm1" => f64::exp_m1,
        "log" => f64::ln,
        "log1p" => f64::ln_1p,
        "tanh" => f64::tanh,
        "sigmoid" => |x| 1.0 / (1.0 + (-x).exp()),
        "sin" => f64::sin,
        "cos" => f64::cos,
        "tan" => f64::tan,
        "atan" => f64::atan,
        "asin" => f64::asin,
        "acos" => f64::acos,
        "sinh" => f64::sinh,
        "cosh" => f64::cosh,
        // (libm's, which std's are not: std's asinh overflows near f64::MAX)
        "asinh" => libm::asinh,
        "acosh" => |x| if x < 1.0 { f64::NAN } else { libm::acosh(x) },
        "atanh" => libm::atanh,
        "sqrt" => f64::sqrt,
        "rsqrt" => |x| 1.0 / x.sqrt(),
        "erf" => libm::erf,
        "erfc" => libm::erfc,
        "erfinv" => erfinv_ref,
        "lgamma" => lgamma_ref,
        "digamma" => digamma_ref,
        "exp2" => f64::exp2,
        "log2" => f64::log2,
        "log10" => f64::log10,
        _ => panic!("no float32 reference for {name}"),
    }
}

unsafe extern "C" {
    /// The C library's reentrant lgamma (glibc's is within a few float64 ulps,
    /// near the zeros of the negative axis included).
    fn lgamma_r(x: f64, sign: *mut i32) -> f64;
}

/// ln |Γ(x)| from the C library (+inf at the poles and both infinities).
pub fn lgamma_ref(x: f64) -> f64 {
    let mut sign = 0;
    // SAFETY: a plain libm call; `sign` is a valid place for its output.
    unsafe { lgamma_r(x, &mut sign) }
}

/// ψ(x) in double-double, rounded: the recurrence up to 30, then the asymptotic series
/// (log in double-double); negative x by ψ(x) = ψ(1 - x) - pi cot(pi s), s = x - round(x)
/// exact. torch's conventions at the poles (∓inf at ±0, NaN at the negative integers and
/// -inf).
pub fn digamma_ref(x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    if x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f64::INFINITY.copysign(-x);
    }
    if x < 0.0 {
        if x == x.round() {
            return f64::NAN;
        }
        let s = x - x.round();
        const PI: Dd = Dd(std::f64::consts::PI, 1.224_646_799_147_353_2e-16);
        let (sn, cs) = sincos_small(PI.mulf(s));
        let pcot = PI.mul(cs).div(sn);
        return digamma_dd(Dd::f(1.0).sub(Dd::f(x))).sub(pcot).0;
    }
    digamma_dd(Dd::f(x)).0
}

/// ψ(x) for a positive two-float x.
fn digamma_dd(x: Dd) -> Dd {
    let mut x = x;
    let mut acc = Dd::f(0.0);
    while x.0 < 30.0 {
        acc = acc.sub(Dd::f(1.0).div(x));
        x = x.add(Dd::f(1.0));
    }
    // ln x - 1/(2x) - sum B_2k / (2k x^2k)
    const B: [f64; 8] = [
        1.0 / 6.0,
        -1.0 / 30.0,
        1.0 / 42.0,
        -1.0 / 30.0,
        5.0 / 66.0,
        -691.0 / 2730.0,
        7.0 / 6.0,
        -3617.0 / 510.0,
    ];
    let w = 1.0 / (x.0 * x.0);
    let mut series = 0.0;
    let mut p = w;
    for (k, b) in B.iter().enumerate() {
        series += b / (2.0 * (k + 1) as f64) * p;
        p *= w;
    }
    let half = Dd::f(0.5).div(x);
    acc.add(log_dd(x)).sub(half).sub(Dd::f(series))
}

/// erfinv in float64: Newton steps on erf (on erfc near +-1, where erf has no digits
/// left), from a rough start, to float64's precision.
fn erfinv_ref(y: f64) -> f64 {
    let a = y.abs();
    if y.is_nan() || a > 1.0 {
        return f64::NAN;
    }
    if a == 1.0 {
        return f64::INFINITY.copysign(y);
    }
    // start: the bisection-free guess sqrt(-ln((1 - a)(1 + a))) scaled, then Newton
    let w = -((1.0 - a) * (1.0 + a)).ln();
    let mut x = if a < 0.7 {
        a * 0.886_226_925_452_758 * (1.0 + 0.2 * a * a)
    } else {
        (w - 0.5 * w.ln()).sqrt() * 0.9
    };
    for _ in 0..60 {
        let d = std::f64::consts::FRAC_2_SQRT_PI * (-x * x).exp();
        let step = if a > 0.5 {
            (libm::erfc(x) - (1.0 - a)) / d
        } else {
            (a - libm::erf(x)) / d
        };
        x += step;
        if step.abs() <= x * 1e-17 {
            break;
        }
    }
    x.copysign(y)
}

/// Distance from `got` to the exact value in float32 ulps: ulps of the exact value's
/// binade (the smallest subnormal below 2^-126), infinities counted as +-2^128 unless
/// the exact value rounds to that infinity. NaN: 0 if both are NaN, else infinite.
pub fn ulps_f32(got: f32, exact: f64) -> f64 {
    if got.is_nan() || exact.is_nan() {
        return if got.is_nan() && exact.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if got.is_infinite() && (exact as f32) == got {
        return 0.0;
    }
    let top = 2f64.powi(128);
    let g = if got.is_infinite() {
        top.copysign(f64::from(got))
    } else {
        f64::from(got)
    };
    let e = exact.clamp(-2.0 * top, 2.0 * top);
    let a = e.abs();
    let ulp = if a < 2f64.powi(-126) {
        2f64.powi(-149)
    } else {
        2f64.powi(((a.to_bits() >> 52) as i32) - 1023 - 23)
    };
    (g - e).abs() / ulp
}

/// A float64 function's exact value: (hi + lo) 2^e (e is 0 except for results in the
/// subnormal range, whose two-float sum is kept scaled up).
pub type Exact64 = Box<dyn Fn(f64) -> (f64, f64, i32) + Sync + Send>;

/// Distance from `got` to the exact value in float64 ulps (as [`ulps_f32`]).
pub fn ulps_f64(got: f64, exact: (f64, f64, i32)) -> f64 {
    let (hi, lo, e) = exact;
    if got.is_nan() || hi.is_nan() {
        return if got.is_nan() && hi.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if e == 0 && got.is_infinite() && hi == got {
        return 0.0;
    }
    if hi.is_infinite() {
        // beyond float64's range: right only if the result overflowed too
        return if got == hi { 0.0 } else { f64::INFINITY };
    }
    let top = 2f64.powi(1023) * 2.0;
    let g = if got.is_infinite() {
        top.copysign(got)
    } else {
        got
    };
    // in the scaled frame: g 2^-e against hi + lo, ulps of the value's binade
    let g = mul_pow2(g, -e);
    let a = hi.abs() * 2f64.powi(e.clamp(-1000, 1000)) * 2f64.powi(e - e.clamp(-1000, 1000));
    let ulp_exp = if a < f64::MIN_POSITIVE {
        -1074
    } else {
        ((a.to_bits() >> 52) as i32) - 1023 - 52
    };
    let d = (g - hi) - lo;
    d.abs() / mul_pow2(1.0, ulp_exp - e)
}

fn mul_pow2(v: f64, e: i32) -> f64 {
    let mut v = v;
    let mut e = e;
    while e > 1000 {
        v *= 2f64.powi(1000);
        e -= 1000;
    }
    while e < -1000 {
        v *= 2f64.powi(-1000);
        e += 1000;
    }
    v * 2f64.powi(e)
}

// ---- double-double arithmetic -------------------------------------------------------

/// An unevaluated sum hi + lo, |lo| <= ulp(hi)/2: about 106 bits.
#[derive(Clone, Copy, Debug)]
pub struct Dd(pub f64, pub f64);

fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

fn quick(a: f64, b: f64) -> Dd {
    let s = a + b;
    Dd(s, b - (s - a))
}

impl Dd {
    pub(super) fn f(v: f64) -> Dd {
        Dd(v, 0.0)
    }
    pub(super) fn add(self, o: Dd) -> Dd {
        let (s, e) = two_sum(self.0, o.0);
        let (t, f) = two_sum(self.1, o.1);
        let d = quick(s, e + t);
        quick(d.0, d.1 + f)
    }
    pub(super) fn neg(self) -> Dd {
        Dd(-self.0, -self.1)
    }
    pub(super) fn sub(self, o: Dd) -> Dd {
        self.add(o.neg())
    }
    pub(super) fn mul(self, o: Dd) -> Dd {
        let p = self.0 * o.0;
        let e = self.0.mul_add(o.0, -p);
        quick(p, e + (self.0 * o.1 + self.1 * o.0))
    }
    fn mulf(self, o: f64) -> Dd {
        self.mul(Dd::f(o))
    }
    pub(super) fn div(self, o: Dd) -> Dd {
        let q1 = self.0 / o.0;
        let r = self.sub(o.mulf(q1));
        let q2 = r.0 / o.0;
        let r = r.sub(o.mulf(q2));
        let q3 = r.0 / o.0;
        quick(q1, q2).add(Dd::f(q3))
    }
    fn sqrt(self) -> Dd {
        if self.0 == 0.0 {
            return self;
        }
        let s = self.0.sqrt();
        let r = self.sub(Dd::f(s).mul(Dd::f(s)));
        quick(s, r.0 / (2.0 * s))
    }
    fn scale(self, e: i32) -> Dd {
        Dd(mul_pow2(self.0, e), mul_pow2(self.1, e))
    }
    fn v(self) -> (f64, f64, i32) {
        (self.0, self.1, 0)
    }
}

const LN2: Dd = Dd(std::f64::consts::LN_2, 2.319_046_813_846_299_6e-17);
const LOG2E: Dd = Dd(std::f64::consts::LOG2_E, 2.035_527_374_093_103_3e-17);
const LOG10E: Dd = Dd(std::f64::consts::LOG10_E, 1.098_319_650_216_765e-17);
const PIO2: [f64; 4] = [
    std::f64::consts::FRAC_PI_2,
    6.123_233_995_736_766e-17,
    -1.497_384_904_859_169_8e-33,
    5.562_565_321_027_178e-50,
];

/// 1/n! as two-float sums, n <= 60.
fn inv_fact(n: usize) -> Dd {
    static T: std::sync::OnceLock<Vec<Dd>> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        let mut v = vec![Dd::f(1.0)];
        for i in 1..=60 {
            let prev = v[i - 1];
            v.push(prev.div(Dd::f(i as f64)));
        }
        v
    })[n]
}

/// e^r for a small two-float r (|r| <= 0.36), by its Taylor series.
fn exp_small(r: Dd) -> Dd {
    let mut s = inv_fact(30);
    for n in (0..30).rev() {
        s = inv_fact(n).add(r.mul(s));
    }
    s
}

/// (e^x as a two-float sum) 2^k, for any finite x.
fn exp_scaled(x: Dd) -> (Dd, i32) {
    let k = (x.0 / LN2.0).round();
    let kl = Dd::f(k).mul(LN2);
    // ln2's third part, for |k| up to ~1100
    let r = x.sub(kl).sub(Dd::f(k * 5.707_708_438_416_212e-34));
    (exp_small(r), k as i32)
}

fn exp_dd(x: Dd) -> Dd {
    let (s, k) = exp_scaled(x);
    s.scale(k)
}

fn expm1_dd(x: f64) -> Dd {
    if x.abs() < 0.3 {
        // the series without its 1
        let r = Dd::f(x);
        // sum r^n/n! for n >= 1: r (1 + r/2! + r^2/3! + ...)
        let mut s = inv_fact(31);
        for n in (1..31).rev() {
            s = inv_fact(n).add(r.mul(s));
        }
        r.mul(s)
    } else {
        exp_dd(Dd::f(x)).sub(Dd::f(1.0))
    }
}

/// ln of a positive two-float u: u = m 2^k, one Newton step on e^y from libm's ln m.
/// m in about [sqrt(1/2), sqrt(2)]: k = 0 near 1, where ln u is tiny and k ln 2 would
/// cancel against ln m (just below 1 that cost the reference an ulp of log10).
fn log_dd(u: Dd) -> Dd {
    let k = u.0.abs().log2().round() as i32;
    let m = u.scale(-k);
    let y0 = Dd::f(m.0.ln());
    let y1 = y0.add(m.mul(exp_dd(y0.neg())).sub(Dd::f(1.0)));
    y1.add(LN2.mulf(f64::from(k)))
}

fn log1p_dd(x: f64) -> Dd {
    if x.abs() < 0.125 {
        let r = Dd::f(x);
        let mut s = Dd::f(0.0);
        for n in (1..=45).rev() {
            let c = Dd::f(if n % 2 == 1 { 1.0 } else { -1.0 }).div(Dd::f(n as f64));
            s = c.add(r.mul(s));
        }
        r.mul(s)
    } else {
        let (u, ue) = two_sum(1.0, x);
        log_dd(Dd(u, ue))
    }
}

/// (sin r, cos r) for a two-float |r| <= 0.8 by their Taylor series.
fn sincos_small(r: Dd) -> (Dd, Dd) {
    let z = r.mul(r);
    let (mut s, mut c) = (Dd::f(0.0), Dd::f(0.0));
    for n in (0..=22).rev() {
        // sin: sum (-z)^n / (2n+1)!, cos: sum (-z)^n / (2n)!
        let sign = if n % 2 == 0 { 1.0 } else { -1.0 };
        s = inv_fact(2 * n + 1).mulf(sign).add(z.mul(s));
        c = inv_fact(2 * n).mulf(sign).add(z.mul(c));
    }
    (r.mul(s), c)
}

/// (sin x, cos x) for |x| up to ~2^30: x - n pi/2 with pi/2 in four parts.
fn sincos_dd(x: f64) -> (Dd, Dd) {
    let n = (x / PIO2[0]).round();
    let mut r = Dd::f(x);
    for p in PIO2 {
        r = r.sub(Dd::f(n).mulf(p));
    }
    let (s, c) = sincos_small(r);
    match (n as i64).rem_euclid(4) {
        0 => (s, c),
        1 => (c, s.neg()),
        2 => (s.neg(), c.neg()),
        _ => (c.neg(), s),
    }
}

fn sinh_cosh_dd(x: f64) -> (Dd, Dd) {
    if x.abs() < 0.3 {
        let r = Dd::f(x);
        let z = r.mul(r);
        let (mut s, mut c) = (Dd::f(0.0), Dd::f(0.0));
        for n in (0..=20).rev() {
            s = inv_fact(2 * n + 1).add(z.mul(s));
            c = inv_fact(2 * n).add(z.mul(c));
        }
        (r.mul(s), c)
    } else {
        // e/2 and 1/(2e) from e = s 2^k (e itself may overflow where e/2 does not)
        let (e, k) = exp_scaled(Dd::f(x.abs()));
        let half = e.scale(k - 1);
        let inv = Dd::f(1.0).div(e).scale(-k - 1);
        let s = half.sub(inv);
        (if x < 0.0 { s.neg() } else { s }, half.add(inv))
    }
}

/// asin x for |x| <= 1/2 (one Newton step on sin).
fn asin_dd(x: f64) -> Dd {
    newton(x, x.asin(), sincos_pair)
}

/// asin s for s = sqrt((1 - a)/2), 1/2 < a <= 1 (1 - a exact), the square root in
/// double-double: y - (sin y - s)/cos y.
fn asin_half_dd(a: f64) -> Dd {
    let s = Dd::f(0.5 * (1.0 - a)).sqrt();
    if s.0 == 0.0 {
        return s;
    }
    let y = Dd::f(s.0.asin());
    let (sy, cy) = sincos_pair(y);
    y.sub(sy.sub(s).div(cy))
}

/// One Newton step on `f(y) = x` from libm's y0: y0 - (f(y0) - x)/f'(y0).
fn newton(x: f64, y0: f64, f: impl Fn(Dd) -> (Dd, Dd)) -> Dd {
    let y = Dd::f(y0);
    let (v, d) = f(y);
    y.sub(v.sub(Dd::f(x)).div(d))
}

/// sin and cos of a two-float y (|y| <= 2), for the Newton steps.
fn sincos_pair(y: Dd) -> (Dd, Dd) {
    sincos_small(y.mulf(0.5)).into_pair2()
}

trait Double {
    fn into_pair2(self) -> (Dd, Dd);
}

impl Double for (Dd, Dd) {
    /// (sin 2a, cos 2a) from (sin a, cos a).
    fn into_pair2(self) -> (Dd, Dd) {
        let (s, c) = self;
        (s.mul(c).mulf(2.0), c.mul(c).sub(s.mul(s)))
    }
}

/// The float64 function's exact value at x (a double-double evaluation: series, or one
/// Newton step from libm's value, which doubles its ~53 correct bits; libm's own value
/// at infinities, NaN, zeros and where the value is not finite).
pub fn exact_f64(name: &str) -> Exact64 {
    let dd = dd_f64(name);
    let libm = exact_f32(name);
    Box::new(move |x| {
        let l = libm(x);
        if x.is_finite() && x != 0.0 && l.is_finite() {
            dd(x)
        } else {
            (l, 0.0, 0)
        }
    })
}

fn dd_f64(name: &str) -> fn(f64) -> (f64, f64, i32) {
    match name {
        "exp" => |x| {
            if x > 709.782_712_893_384 {
                return (f64::INFINITY, 0.0, 0);
            }
            if x < -746.0 {
                return (0.0, 0.0, 0);
            }
            let (s, k) = exp_scaled(Dd::f(x));
            if k < -1000 {
                (s.0, s.1, k)
            } else {
                s.scale(k).v()
            }
        },
        "expm1" => |x| {
            if x > 709.782_712_893_384 {
                (f64::INFINITY, 0.0, 0)
            } else if x < -40.0 {
                (-1.0, if x < -746.0 { 0.0 } else { exp_dd(Dd::f(x)).0 }, 0)
            } else {
                expm1_dd(x).v()
            }
        },
        "log" => |x| log_dd(Dd::f(x)).v(),
        "log1p" => |x| log1p_dd(x).v(),
        "exp2" => |x| {
            if x >= 1024.0 {
                return (f64::INFINITY, 0.0, 0);
            }
            if x < -1080.0 {
                return (0.0, 0.0, 0);
            }
            // 2^x = 2^k e^(r ln 2), r = x - k exact
            let k = x.round();
            let s = exp_small(Dd::f(x - k).mul(LN2));
            if k < -1000.0 {
                (s.0, s.1, k as i32)
            } else {
                s.scale(k as i32).v()
            }
        },
        "log2" => |x| log_dd(Dd::f(x)).mul(LOG2E).v(),
        "log10" => |x| log_dd(Dd::f(x)).mul(LOG10E).v(),
        "tanh" => |x| {
            if x.abs() > 40.0 {
                return (1f64.copysign(x), 0.0, 0);
            }
            let e = expm1_dd(2.0 * x);
            e.div(e.add(Dd::f(2.0))).v()
        },
        "sigmoid" => |x| {
            if x < -746.0 {
                return (0.0, 0.0, 0);
            }
            if x > 746.0 {
                return (1.0, 0.0, 0);
            }
            if x > 40.0 {
                let (e, k) = exp_scaled(Dd::f(-x));
                return Dd::f(1.0).sub(e.scale(k)).v();
            }
            let (e, k) = exp_scaled(Dd::f(-x));
            if k > 1000 {
                // e^x (1 - e^x): tiny, kept scaled
                let (ex, kx) = exp_scaled(Dd::f(x));
                return (ex.0, ex.1, kx);
            }
            Dd::f(1.0).div(Dd::f(1.0).add(e.scale(k))).v()
        },
        // (beyond 2^20 the kernels call libm, whose reduction is exact: the reference is
        // libm too)
        "sin" => |x| {
            if x.abs() > 1_048_576.0 {
                (x.sin(), 0.0, 0)
            } else {
                sincos_dd(x).0.v()
            }
        },
        "cos" => |x| {
            if x.abs() > 1_048_576.0 {
                (x.cos(), 0.0, 0)
            } else {
                sincos_dd(x).1.v()
            }
        },
        "tan" => |x| {
            if x.abs() > 1_048_576.0 {
                return (x.tan(), 0.0, 0);
            }
            let (s, c) = sincos_dd(x);
            s.div(c).v()
        },
        "atan" => |x| {
            if x.abs() < 1e-300 {
                return (x, 0.0, 0);
            }
            if x.abs() > 1e20 {
                // pi/2 - 1/x
                let p = Dd(PIO2[0], PIO2[1]);
                let v = p.sub(Dd::f(1.0).div(Dd::f(x.abs())));
                return (if x < 0.0 { v.neg() } else { v }).v();
            }
            // f(y) = sin y - x cos y, f' = cos y + x sin y
            let y = Dd::f(x.atan());
            let (s, c) = sincos_pair(y);
            let f = s.sub(c.mulf(x));
            let d = c.add(s.mulf(x));
            y.sub(f.div(d)).v()
        },
        "asin" => |x| {
            if x.abs() <= 0.5 {
                return if x.abs() < 1e-300 {
                    (x, 0.0, 0)
                } else {
                    asin_dd(x).v()
                };
            }
            // pi/2 - 2 asin s, s = sqrt((1 - |x|)/2) (exact argument: no Newton near 1)
            let v = Dd(PIO2[0], PIO2[1]).sub(asin_half_dd(x.abs()).mulf(2.0));
            (if x < 0.0 { v.neg() } else { v }).v()
        },
        "acos" => |x| {
            let p = Dd(PIO2[0], PIO2[1]);
            if x.abs() <= 0.5 {
                p.sub(asin_dd(x)).v()
            } else if x > 0.0 {
                asin_half_dd(x).mulf(2.0).v()
            } else {
                p.mulf(2.0).sub(asin_half_dd(-x).mulf(2.0)).v()
            }
        },
        "sinh" => |x| {
            if x.abs() > 710.475_860_073_943_9 {
                (f64::INFINITY.copysign(x), 0.0, 0)
            } else {
                sinh_cosh_dd(x).0.v()
            }
        },
        "cosh" => |x| {
            if x.abs() > 710.475_860_073_943_9 {
                (f64::INFINITY, 0.0, 0)
            } else {
                sinh_cosh_dd(x).1.v()
            }
        },
        "asinh" => |x| {
            if x.abs() > 1e300 {
                let v = log_dd(Dd::f(x.abs())).add(LN2);
                return (if x < 0.0 { v.neg() } else { v }).v();
            }
            newton(x, x.asinh(), |y| {
                let (s, c) = sinh_cosh_dd(y.0);
                // (the low part of y moves sinh by c y.1)
                (s.add(c.mulf(y.1)), c)
            })
            .v()
        },
        "acosh" => |x| {
            if x > 1e10 {
                // log 2x - 1/(4x^2) - ..., the rest below 2^-60 relative
                return log_dd(Dd::f(x)).add(LN2).v();
            }
            // acosh x = log1p((x - 1) + sqrt((x - 1)(x + 1)))
            let t = Dd::f(x).sub(Dd::f(1.0));
            let v = t.add(t.mul(Dd::f(x).add(Dd::f(1.0))).sqrt());
            log_dd(Dd::f(1.0).add(v)).v()
        },
        "atanh" => |x| {
            // log((1 + x)/(1 - x))/2, or the series near 0
            if x.abs() < 0.125 {
                let r = Dd::f(x);
                let z = r.mul(r);
                let mut s = Dd::f(0.0);
                for n in (0..=40).rev() {
                    s = Dd::f(1.0).div(Dd::f((2 * n + 1) as f64)).add(z.mul(s));
                }
                return r.mul(s).v();
            }
            let q = Dd::f(1.0).add(Dd::f(x)).div(Dd::f(1.0).sub(Dd::f(x)));
            log_dd(q).mulf(0.5).v()
        },
        "sqrt" => |x| Dd::f(x).sqrt().v(),
        "rsqrt" => |x| Dd::f(1.0).div(Dd::f(x).sqrt()).v(),
        _ => panic!("no float64 reference for {name}"),
    }
}

/// `n` inputs for a float64 function's chunk `c`: random bit patterns over the whole
/// range, and points spread over the function's own domain (uniform, log-uniform in
/// magnitude, near its special points).
pub fn sample_f64(name: &str, c: u64, n: usize) -> Vec<f64> {
    let mut s = 0x9E37_79B9_7F4A_7C15_u64 ^ c.wrapping_mul(0xD1B5_4A32_D192_ED03);
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let (lo, hi, pos) = match name {
        "exp" => (-746.0, 710.0, false),
        "expm1" => (-40.0, 710.0, false),
        "log" | "log2" | "log10" | "sqrt" | "rsqrt" => (0.0, 4.0, true),
        "exp2" => (-1080.0, 1025.0, false),
        "log1p" => (-1.0, 4.0, false),
        "tanh" => (-20.0, 20.0, false),
        "sigmoid" => (-750.0, 40.0, false),
        "sin" | "cos" | "tan" => (-10.0, 10.0, false),
        "atan" => (-10.0, 10.0, false),
        "asin" | "acos" | "atanh" => (-1.0, 1.0, false),
        "sinh" | "cosh" => (-711.0, 711.0, false),
        "asinh" => (-10.0, 10.0, false),
        "acosh" => (1.0, 10.0, true),
        _ => (-1.0, 1.0, false),
    };
    let unit = |b: u64| (b >> 11) as f64 / (1u64 << 53) as f64;
    (0..n)
        .map(|i| {
            let b = next();
            let x = match i % 4 {
                // random bit patterns (NaN and infinities included)
                0 => f64::from_bits(b),
                // uniform over the domain
                1 => lo + (hi - lo) * unit(b),
                // log-uniform magnitude, 2^-60 .. 2^20
                2 => (2f64.powf(-60.0 + 80.0 * unit(b))).copysign(if b & 1 == 0 {
                    1.0
                } else {
                    -1.0
                }),
                // near the domain's ends and special points: 1, -1, multiples of pi/2
                _ => {
                    let tiny = 2f64.powf(-52.0 * unit(b >> 3));
                    match name {
                        "sin" | "cos" | "tan" => {
                            let k = (b >> 40) as f64 - 8_388_608.0;
                            k * PIO2[0] * (1.0 + tiny * 1e-3)
                        }
                        "acosh" => 1.0 + tiny,
                        "asin" | "acos" | "atanh" => {
                            (1.0 - tiny).copysign(if b & 1 == 0 { 1.0 } else { -1.0 })
                        }
                        "log" | "log1p" | "log2" | "log10" => {
                            1.0 + tiny.copysign(if b & 1 == 0 { 1.0 } else { -1.0 }) * 0.25
                        }
                        _ => lo + (hi - lo) * unit(b),
                    }
                }
            };
            let x = if pos { x.abs() } else { x };
            // inputs the slice functions send to the libm fixup are libm's own
            if matches!(name, "sin" | "cos" | "tan") && x.abs() > 1_048_576.0 {
                x % 1_048_576.0
            } else {
                x
            }
        })
        .collect()
}

// ---- functions of two arguments ---------------------------------------------------

/// A float64 function of two arguments' exact value, as [`Exact64`].
pub type Exact2 = fn(f64, f64) -> (f64, f64, i32);

/// (x 2^-k, y 2^-k, k) with max(|x|, |y|) in [1, 2) (the smaller may lose bits it
/// cannot contribute at that scale).
fn scale_pair(x: f64, y: f64) -> (f64, f64, i32) {
    let m = x.abs().max(y.abs());
    let k = m.log2().floor() as i32;
    (mul_pow2(x, -k), mul_pow2(y, -k), k)
}

/// The exact value of a two-argument float64 function (double-double; libm's value
/// where an argument or the value is not finite, or an argument is zero).
pub fn exact2_f64(name: &str) -> Exact2 {
    match name {
        "atan2" => |y, x| {
            let t0 = y.atan2(x);
            if !(x.is_finite() && y.is_finite()) || x == 0.0 || y == 0.0 {
                return (t0, 0.0, 0);
            }
            // one Newton step on y cos t - x sin t = 0 from libm's t0
            let (ys, xs, _) = scale_pair(y, x);
            let (s, c) = sincos_dd(t0);
            let num = Dd::f(ys).mul(c).sub(Dd::f(xs).mul(s));
            let den = Dd::f(xs).mul(c).add(Dd::f(ys).mul(s));
            let t = Dd::f(t0).add(num.div(den));
            if t.0.abs() < 1e-290 {
                // (a subnormal angle: y/x in the scaled frame, kept scaled)
                let q = Dd::f(mul_pow2(y, 600)).div(Dd::f(x));
                return (q.0, q.1, -600);
            }
            t.v()
        },
        "hypot" => |x, y| {
            if x.is_infinite() || y.is_infinite() {
                return (f64::INFINITY, 0.0, 0);
            }
            if x.is_nan() || y.is_nan() {
                return (f64::NAN, 0.0, 0);
            }
            if x == 0.0 && y == 0.0 {
                return (0.0, 0.0, 0);
            }
            let (a, b, k) = scale_pair(x, y);
            let r = Dd::f(a).mul(Dd::f(a)).add(Dd::f(b).mul(Dd::f(b))).sqrt();
            if k > 0 {
                let h = mul_pow2(r.0, k);
                if h.is_infinite() {
                    return (h, 0.0, 0);
                }
                return r.scale(k).v();
            }
            if mul_pow2(r.0, k) < f64::MIN_POSITIVE {
                return (r.0, r.1, k);
            }
            r.scale(k).v()
        },
        "logaddexp" => |a, b| {
            if a.is_nan() || b.is_nan() {
                return (f64::NAN, 0.0, 0);
            }
            let m = a.max(b);
            if a.is_infinite() || b.is_infinite() {
                // (ln(e^-inf + e^-0) = +0)
                return (m + 0.0, 0.0, 0);
            }
            let (d, de) = two_sum(a, -b);
            let nd = Dd(-d.abs(), if d < 0.0 { de } else { -de });
            if nd.0 < -740.0 {
                return (m + 0.0, 0.0, 0);
            }
            let e = exp_dd(nd);
            let l = if e.0 < 1e-5 {
                // log1p e by its series
                let mut s = Dd::f(0.0);
                for n in (1..=12).rev() {
                    let c = Dd::f(if n % 2 == 1 { 1.0 } else { -1.0 }).div(Dd::f(n as f64));
                    s = c.add(e.mul(s));
                }
                e.mul(s)
            } else {
                log_dd(Dd::f(1.0).add(e))
            };
            Dd::f(m).add(l).v()
        },
        "logaddexp2" => |a, b| {
            // max + ln(1 + e^(-|a - b| ln 2)) / ln 2, in double-double
            if a.is_nan() || b.is_nan() {
                return (f64::NAN, 0.0, 0);
            }
            let m = a.max(b);
            if a.is_infinite() || b.is_infinite() {
                return (m + 0.0, 0.0, 0);
            }
            let (d, de) = two_sum(a, -b);
            let nd = Dd(-d.abs(), if d < 0.0 { de } else { -de });
            if nd.0 < -1070.0 {
                return (m + 0.0, 0.0, 0);
            }
            let e = exp_dd(nd.mul(LN2));
            let l = if e.0 < 1e-5 {
                let mut s = Dd::f(0.0);
                for n in (1..=12).rev() {
                    let c = Dd::f(if n % 2 == 1 { 1.0 } else { -1.0 }).div(Dd::f(n as f64));
                    s = c.add(e.mul(s));
                }
                e.mul(s)
            } else {
                log_dd(Dd::f(1.0).add(e))
            };
            Dd::f(m).add(l.div(LN2)).v()
        },
        _ => panic!("no reference for {name}"),
    }
}
