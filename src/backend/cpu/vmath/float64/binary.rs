//! float64 functions of two tensors: atan2 (atan's reduction with both operands), hypot
//! (the squares as two-float sums, a corrected square root), logaddexp (torch's formula
//! over the float64 kernels), and fmod, remainder and floor division (`vmath::fmod`,
//! exact).

#![allow(clippy::excessive_precision)]

use super::exp_log::{exp_core, log_tail_pair, scale2, split_log};
use super::trig::ATAN_A;
use super::{fast_two_sum, magic_int, poly, recip_approx, sqrt_pair, to_float, two_sum};

// pi/4 = PIO4_HI + PIO4_LO
const PIO4_HI: f64 = std::f64::consts::FRAC_PI_4;
const PIO4_LO: f64 = 3.061_616_997_868_383e-17;
const TWO_M600: f64 = 2.409_919_865_102_884e-181;
const TWO_P600: f64 = 4.149_515_568_880_993e180;

/// atan2(y, x), as float32's (`float32::binary::atan2_f32`), with each quotient from
/// one division and an fma-exact residual.
#[inline(always)]
pub(super) fn atan2_f64(y: f64, x: f64) -> f64 {
    let (ax, ay) = (x.abs(), y.abs());
    let swap = ay > ax;
    let (n, d) = if swap { (ax, ay) } else { (ay, ax) };
    let d_inf = d == f64::INFINITY;
    let n = if n == f64::INFINITY {
        1.0
    } else if d_inf {
        0.0
    } else {
        n
    };
    let d = if d_inf || d == 0.0 { 1.0 } else { d };
    // d' in [2^20, 2^424] from above, [2^-474, 2^100] from below (see float32's)
    let f = if d > 4.351_082_437_154_956e186 {
        TWO_M600 // (from 2^620)
    } else if d < 3.054_936_363_499_605e-151 {
        TWO_P600 // (below 2^-500)
    } else {
        1.0
    };
    let (n, d) = (n * f, d * f);
    let mid = n > 0.414_213_562_373_095_03 * d;
    let (nh, nl) = two_sum(n, -d);
    let (dh, dl) = two_sum(n, d);
    let (nh, nl, dh, dl) = if mid {
        (nh, nl, dh, dl)
    } else {
        (n, 0.0, d, 0.0)
    };
    // uh correctly rounded (its residual may underflow where n is subnormal), ul from
    // the residual and an approximate reciprocal (enough for a correction)
    let uh = nh / dh;
    let ul = (-uh).mul_add(dl, nl + (-uh).mul_add(dh, nh)) * recip_approx(dh);
    let z = uh * uh;
    let a = poly(z, ATAN_A);
    let neg_x = x.is_sign_negative();
    let s: f64 = if swap != neg_x { -1.0 } else { 1.0 };
    let kc: f64 = if swap {
        2.0
    } else if neg_x {
        4.0
    } else {
        0.0
    };
    let k = if mid { kc + s } else { kc };
    let bh = k * PIO4_HI;
    let bl = k.mul_add(PIO4_HI, -bh) + k * PIO4_LO;
    let (r, e) = fast_two_sum(bh, s * uh);
    let v = r + (e + s.mul_add((uh * z).mul_add(a, ul), bl));
    if x.is_nan() || y.is_nan() {
        x + y
    } else {
        v.copysign(y)
    }
}

/// hypot(x, y): both scaled by one power of 2 where the larger is beyond 2^±500, the
/// sum of squares as a two-float sum (each square exact in an fma), its corrected
/// square root rounded once, scaled back; an infinity wins over NaN (C's).
#[inline(always)]
pub(super) fn hypot_f64(x: f64, y: f64) -> f64 {
    let (ax, ay) = (x.abs(), y.abs());
    let m = if ax < ay { ay } else { ax };
    let (f, g) = if m > 3.273_390_607_896_142e150 {
        (TWO_M600, TWO_P600)
    } else if m < 3.054_936_363_499_605e-151 {
        (TWO_P600, TWO_M600)
    } else {
        (1.0, 1.0)
    };
    let (a, b) = (ax * f, ay * f);
    let (ph, qh) = (a * a, b * b);
    let (pl, ql) = (a.mul_add(a, -ph), b.mul_add(b, -qh));
    let (sh, se) = two_sum(ph, qh);
    let (sh, sl) = fast_two_sum(sh, se + (pl + ql));
    let (rh, rl) = sqrt_pair(sh, sl);
    let r = (rh + rl) * g;
    if ax == f64::INFINITY || ay == f64::INFINITY {
        f64::INFINITY
    } else {
        r
    }
}

/// ln(e^a + e^b) = max + log1p(e^-|a - b|) (torch's formula) with the low parts carried
/// throughout: a - b as an exact sum, E = e^-|a - b| as a two-float sum (`exp_core`,
/// about 2^-58), log1p E as a two-float sum (`log_tail_pair`), added to the max as an
/// exact sum. Where the max and the log cancel (max < 0), their errors are about 2^-58
/// of the log, not an ulp (torch's kernel: 37 ulp at (-0.619, -0.797)). Equal
/// infinities give themselves.
#[inline(always)]
pub(super) fn logaddexp_f64(a: f64, b: f64) -> f64 {
    let m = if a < b { b } else { a };
    let (d, dl) = two_sum(a, -b);
    // -|a - b| = nd + ndl (an infinite d has a NaN dl)
    let dl = if d.abs() <= f64::MAX { dl } else { 0.0 };
    let nd = -d.abs();
    let ndl = if d < 0.0 { dl } else { -dl };
    // below -746, E rounds to 0: nothing next to any m (NaN stays)
    let ndc = if nd < -746.0 { -746.0 } else { nd };
    let (t, w, lo) = exp_core(ndc, ndl);
    let k = magic_int(t);
    let (eh, el) = (scale2(w, k), scale2(lo, k));
    // log1p(eh + el): as log1p's kernel, the low part joining the correction
    let (u, ue) = fast_two_sum(1.0, eh);
    let (uk, um) = split_log(u);
    let (kf, f, extra) = if eh < 0.414_213_562_373_095_1 {
        (0.0, eh, el / u)
    } else {
        (to_float(uk), um - 1.0, (ue + el) * recip_approx(u))
    };
    let (lh, ll) = log_tail_pair(kf, f, extra);
    let (rh, re) = two_sum(m, lh);
    let r = rh + (re + ll);
    if a == b && a.is_infinite() {
        a
    } else if a.is_nan() || b.is_nan() {
        a + b
    } else if m == f64::INFINITY {
        m // (the exact sums give NaN next to it)
    } else {
        r
    }
}

crate::backend::cpu::vmath::fmod::fmod_fns!(f64);

/// fmod a b, exact (the scalar `%`'s value).
#[inline(always)]
pub(super) fn fmod_s(a: f64, b: f64) -> f64 {
    a % b
}
