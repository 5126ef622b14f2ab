"""Fits the polynomials of src/backend/cpu/vmath/ and prints their coefficients, rounded
to the precision the kernel evaluates them in, with the approximation error that the
rounded coefficients give (needs mpmath: `pip install mpmath`).

Each is a near-minimax fit: weighted least squares on Chebyshev nodes, reweighted by
Lawson's iteration toward equal error, at 60 digits. The coefficients are then rounded
to float32 (or float64) one at a time, lowest degree first, each time refitting the
higher ones to absorb the rounding (a greedy stand-in for fpminimax). The error printed
is the weighted error of the rounded polynomial in exact arithmetic, measured on a dense
grid: the part of the kernel's error that the polynomial owns (the rest, rounding in
the evaluation, is measured by the kernels' tests and `examples/vmath_ulp.rs`).

    python tools/fit_vmath.py            # every polynomial
    python tools/fit_vmath.py exp_f32    # one
"""

from __future__ import annotations

import struct
import sys
from typing import Callable

import mpmath as mp

mp.mp.dps = 60


def to_f32(x) -> float:
    return struct.unpack("f", struct.pack("f", float(x)))[0]


def lawson_fit(g, a, b, powers, weight, iters=14):
    """Coefficients c_j (one per power in `powers`) of sum c_j t^p_j approximating g on
    [a, b], near-minimax in the weighted error |p - g| * weight."""
    n = 16 * (len(powers) + 1)
    ts = [(a + b) / 2 + (b - a) / 2 * mp.cos(mp.pi * (2 * k + 1) / (2 * n)) for k in range(n)]
    gs = [g(t) for t in ts]
    ws = [weight(t) for t in ts]
    w = [mp.mpf(1)] * n
    c = None
    for _ in range(iters):
        A = mp.matrix(n, len(powers))
        y = mp.matrix(n, 1)
        for i, t in enumerate(ts):
            s = mp.sqrt(w[i]) * ws[i]
            for j, p in enumerate(powers):
                A[i, j] = s * t**p
            y[i] = s * gs[i]
        c = mp.lu_solve(A.T * A, A.T * y)
        errs = [abs(sum(c[j] * t**p for j, p in enumerate(powers)) - gs[i]) * ws[i] for i, t in enumerate(ts)]
        total = sum(w[i] * errs[i] for i in range(n))
        if total == 0:
            break
        w = [w[i] * errs[i] / total for i in range(n)]
    return [c[j] for j in range(len(powers))]


def fit(g, a, b, deg, weight, prec="f32", first=0):
    """Greedy rounded near-minimax fit of g by sum_{j=first}^{deg} c_j t^j."""
    rnd = to_f32 if prec == "f32" else float
    fixed: list[float] = []
    powers = list(range(first, deg + 1))
    for k in range(len(powers)):
        rest = powers[k:]

        def resid(t, fixed=tuple(fixed)):
            return g(t) - sum(mp.mpf(c) * t**p for c, p in zip(fixed, powers))

        c = lawson_fit(resid, a, b, rest, weight)
        fixed.append(rnd(c[0]))
    return fixed


def worst(g, a, b, coefs, weight, first=0, n=6000):
    e = mp.mpf(0)
    for k in range(n + 1):
        t = a + (b - a) * k / n
        w = weight(t)
        if w == 0:
            continue
        p = sum(mp.mpf(c) * t ** (j + first) for j, c in enumerate(coefs))
        e = max(e, abs(p - g(t)) * w)
    return e


def safe(f, at0):
    return lambda t: at0 if t == 0 else f(t)


# name -> (description, g, a, b, degree, weight, precision)
H_LN2 = mp.log(2) / 2 * (1 + mp.mpf(2) ** -20)
SQ = mp.sqrt(2)
PI4 = mp.pi / 4 * (1 + mp.mpf(2) ** -20)


def odd(f, at0):
    """f(x) - x over x^3, as a function of z = x^2 (the tail of an odd series)."""
    return safe(lambda z: (f(mp.sqrt(z)) - mp.sqrt(z)) / mp.sqrt(z) ** 3, at0)


def rel_odd(f):
    """The weight that makes the error of x^3 P(x^2) relative to f(x)."""
    return safe(lambda z: mp.sqrt(z) ** 3 / abs(f(mp.sqrt(z))), mp.mpf(0))


def erfinv_ratio(w):
    """erfinv(y)/y at y = sqrt(1 - e^-w)."""
    if w == 0:
        return mp.sqrt(mp.pi) / 2
    y = mp.sqrt(-mp.expm1(-w))
    return mp.erfinv(y) / y


HALF = mp.mpf(1) / 2 * (1 + mp.mpf(2) ** -20)


def erfc_g(v):
    """ln(erfc(x) e^(x^2) / t) at t = 1 - v, x = 2/t - 2."""
    if v == 0:
        return mp.mpf(0)
    t = 1 - v
    x = 2 / t - 2
    return mp.log(mp.erfc(x) * mp.exp(x**2) / t)


def atanh_ratio(scale):
    """z -> scale * 2 atanh(s)/s at s = sqrt(z)."""
    return safe(lambda z: scale * 2 * mp.atanh(mp.sqrt(z)) / mp.sqrt(z), scale * 2)


def polys():
    T8 = mp.tan(mp.pi / 8) * (1 + mp.mpf(2) ** -20)
    expu = safe(lambda r: (mp.exp(r) - 1 - r) / r**2, mp.mpf(1) / 2)
    expv = safe(lambda r: (mp.exp(r) - 1 - r - r * r / 2) / r**3, mp.mpf(1) / 6)
    logq = safe(lambda f: (mp.log1p(f) - f) / f**2, -mp.mpf(1) / 2)
    flo, fhi = 1 / SQ - 1 - mp.mpf(2) ** -20, SQ - 1 + mp.mpf(2) ** -20
    smax = (SQ - 1) / (SQ + 1) * (1 + mp.mpf(2) ** -20)
    sinz = odd(mp.sin, -mp.mpf(1) / 6)
    cosz = safe(lambda z: (mp.cos(mp.sqrt(z)) - 1 + z / 2) / z**2, mp.mpf(1) / 24)
    cosw = lambda z: z * z / mp.cos(mp.sqrt(z))
    return {
        # float32 ---------------------------------------------------------------
        # e^r = 1 + r + r^2 u(r): the error of r^2 u relative to e^r
        "exp_f32": ("e^r = 1 + r + r^2 u(r), |r| <= ln2/2", expu, -H_LN2, H_LN2, 5,
                    lambda r: r * r / mp.exp(r), "f32"),
        # e^r = 1 + r + r^2/2 + r^3 v(r)
        "expv_f32": ("e^r = 1 + r + r^2/2 + r^3 v(r), |r| <= ln2/2", expv, -H_LN2, H_LN2, 4,
                     lambda r: abs(r) ** 3 / mp.exp(r), "f32"),
        # log(1 + f) = f + f^2 Q(f): relative to log1p(f)
        "log_f32": ("log(1 + f) = f + f^2 Q(f), f in [sqrt(1/2) - 1, sqrt(2) - 1]", logq, flo, fhi, 9,
                    safe(lambda f: f * f / abs(mp.log1p(f)), mp.mpf(0)), "f32"),
        "sin_f32": ("sin r = r + r z S(z), z = r^2, |r| <= pi/4", sinz, mp.mpf(0), PI4**2, 3,
                    rel_odd(mp.sin), "f32"),
        "cos_f32": ("cos r = 1 - z/2 + z^2 C(z), z = r^2, |r| <= pi/4", cosz, mp.mpf(0), PI4**2, 3,
                    cosw, "f32"),
        "tanh_f32": ("tanh x = x + x^3 P(x^2), |x| <= 0.55", odd(mp.tanh, -mp.mpf(1) / 3),
                     mp.mpf(0), mp.mpf("0.5500001") ** 2, 5, rel_odd(mp.tanh), "f32"),
        "atan_f32": ("atan u = u + u^3 A(u^2), |u| <= tan(pi/8)", odd(mp.atan, -mp.mpf(1) / 3),
                     mp.mpf(0), T8**2, 6, rel_odd(mp.atan), "f32"),
        "asin_f32": ("asin x = x + x^3 B(x^2), |x| <= 1/2", odd(mp.asin, mp.mpf(1) / 6),
                     mp.mpf(0), mp.mpf("0.2500001"), 6, rel_odd(mp.asin), "f32"),
        "atanh_f32": ("atanh x = x + x^3 P(x^2), |x| <= 1/4", odd(mp.atanh, mp.mpf(1) / 3),
                      mp.mpf(0), mp.mpf("0.0625001"), 3, rel_odd(mp.atanh), "f32"),
        # erfc x = t exp(-x^2 + G), t = 1/(1 + x/2), x in [0, 10.06], G fitted in v = 1 - t
        # (G(0) = 0, so the Horner sum is well conditioned near x = 0 too): G's absolute
        # error is erfc's relative error (evaluated in float32, the low parts carried)
        "erfc_f32": ("erfc x = t exp(-x^2 + G(v)), t = 1/(1 + x/2), v = 1 - t, 0 <= x <= 10.06",
                     erfc_g, mp.mpf(0), 1 - 1 / (1 + mp.mpf("10.06") / 2), 12, lambda v: mp.mpf(1),
                     "f32", 1),
        # erf in float32: x + x P(x^2) for |x| < 1, 1 - e^L(|x|) beyond (L's absolute error
        # is erfc's relative error, weighted by erfc |x| / erfc 1: what it adds to erf)
        "erf_f32": ("erf x = x + x P(x^2), |x| <= 1 (P(0) = 2/sqrt(pi) - 1)",
                    safe(lambda z: mp.erf(mp.sqrt(z)) / mp.sqrt(z) - 1, 2 / mp.sqrt(mp.pi) - 1),
                    mp.mpf(0), mp.mpf(1) + mp.mpf(2) ** -20, 6,
                    safe(lambda z: mp.sqrt(z) / mp.erf(mp.sqrt(z)), 1 / (2 / mp.sqrt(mp.pi))), "f32"),
        "erf_f32_tail": ("erf x = 1 - e^L(x), L(x) ~ ln erfc x, 1 <= x <= 4",
                         lambda x: mp.log(mp.erfc(x)), mp.mpf(1) - mp.mpf(2) ** -20, mp.mpf(4), 7,
                         lambda x: mp.erfc(x) / mp.erfc(1), "f32"),
        # gelu's tail in float32: erfc(t/sqrt 2) for sqrt 2 <= t <= 3.92 sqrt 2 in u = t - 3.48,
        # absolute (gelu = t - (t/2) e or (t/2) e needs e to 2^-26 absolute, not relative)
        "gelu_f32_erfc": ("erfc(t/sqrt2) = Q(t - 3.48), sqrt2 <= t <= 3.92 sqrt2",
                          lambda u: mp.erfc((u + mp.mpf("3.48")) / SQ),
                          SQ * (1 - mp.mpf(2) ** -20) - mp.mpf("3.48"), mp.mpf("3.92") * SQ - mp.mpf("3.48"),
                          14, lambda u: mp.mpf(1), "f32"),
        # erfinv y = y P(w), w = -ln(1 - y^2): on w < 5 in w - 2.5, on 5 <= w <= 16 (float32's
        # |y| <= 1 - 2^-24) in sqrt(w) - 3 (Giles' variables; refitted to 2^-32 relative)
        "erfinv_f32_a": ("erfinv y = y P(w - 2.5), w = -ln(1 - y^2) < 5",
                         lambda v: erfinv_ratio(v + mp.mpf("2.5")), mp.mpf("-2.5"), mp.mpf("2.5"), 14,
                         lambda v: mp.mpf(1) / abs(erfinv_ratio(v + mp.mpf("2.5"))), "f64"),
        "erfinv_f32_b": ("erfinv y = y P(sqrt(w) - 3), 5 <= w <= 16",
                         lambda v: erfinv_ratio((v + 3) ** 2), mp.sqrt(5) - 3, mp.mpf(1), 10,
                         lambda v: mp.mpf(1) / abs(erfinv_ratio((v + 3) ** 2)), "f64"),
        # float64 ---------------------------------------------------------------
        # float32 logaddexp / logaddexp2 in float64 (`via64`): e^r - 1 and 2^r - 1 with
        # e^0 = 2^0 = 1 exactly, relative to e^r; 2 atanh(s)/s (and over ln 2) in z = s^2,
        # s = e/(2 + e) <= 1/3
        "exp_lite_f64": ("e^r = 1 + r (c1 + c2 r + ...), |r| <= ln2/2", lambda r: mp.expm1(r),
                         -H_LN2, H_LN2, 8, lambda r: 1 / mp.exp(r), "f64", 1),
        "exp2_lite_f64": ("2^r = 1 + r (c1 + c2 r + ...), |r| <= 1/2", lambda r: mp.power(2, r) - 1,
                          -HALF, HALF, 8, lambda r: 1 / mp.power(2, r), "f64", 1),
        "log1p_lite_f64": ("ln(1 + e) = s P(z), s = e/(2 + e), z = s^2 <= 1/9", atanh_ratio(1),
                           mp.mpf(0), mp.mpf(1) / 9 * (1 + mp.mpf(2) ** -20), 7,
                           lambda z: mp.mpf(1) / 2, "f64"),
        "log2_1p_lite_f64": ("log2(1 + e) = s P(z), as log1p_lite_f64", atanh_ratio(1 / mp.log(2)),
                             mp.mpf(0), mp.mpf(1) / 9 * (1 + mp.mpf(2) ** -20), 7,
                             lambda z: mp.log(2) / 2, "f64"),
        "exp_f64": ("e^r = 1 + r + r^2 u(r), |r| <= ln2/2", expu, -H_LN2, H_LN2, 10,
                    lambda r: r * r / mp.exp(r), "f64"),
        "expv_f64": ("e^r = 1 + r + r^2/2 + r^3 v(r), |r| <= ln2/2", expv, -H_LN2, H_LN2, 9,
                     lambda r: abs(r) ** 3 / mp.exp(r), "f64"),
        # log1p(f) = f - f^2/2 + s (f^2/2 + R(s^2)), s = f/(2 + f): R(z) = 2 atanh(s)/s - 2
        "log_f64": ("2 atanh(s) = 2s + s R(z), z = s^2 <= ((sqrt2-1)/(sqrt2+1))^2",
                    safe(lambda z: 2 * mp.atanh(mp.sqrt(z)) / mp.sqrt(z) - 2, mp.mpf(0)),
                    mp.mpf(0), smax**2, 7, lambda z: mp.mpf(1) / 2, "f64", 1),
        "sin_f64": ("sin r = r + r z S(z), |r| <= pi/4", sinz, mp.mpf(0), PI4**2, 6, rel_odd(mp.sin), "f64"),
        "cos_f64": ("cos r = 1 - z/2 + z^2 C(z), |r| <= pi/4", cosz, mp.mpf(0), PI4**2, 6, cosw, "f64"),
        "tanh_f64": ("tanh x = x + x^3 P(x^2), |x| <= 1/16", odd(mp.tanh, -mp.mpf(1) / 3),
                     mp.mpf(0), mp.mpf("0.0625001") ** 2, 6, rel_odd(mp.tanh), "f64"),
        "atan_f64": ("atan u = u + u^3 A(u^2), |u| <= tan(pi/8)", odd(mp.atan, -mp.mpf(1) / 3),
                     mp.mpf(0), T8**2, 11, rel_odd(mp.atan), "f64"),
        "asin_f64": ("asin x = x + x^3 B(x^2), |x| <= 1/2", odd(mp.asin, mp.mpf(1) / 6),
                     mp.mpf(0), mp.mpf("0.2500001"), 12, rel_odd(mp.asin), "f64"),
        "sinh_f64": ("sinh x = x + x^3 P(x^2), |x| <= 1", odd(mp.sinh, mp.mpf(1) / 6),
                     mp.mpf(0), mp.mpf("1.000001"), 6, rel_odd(mp.sinh), "f64"),
        "asinh_f64": ("asinh x = x + x^3 P(x^2), |x| <= 1/4", odd(mp.asinh, -mp.mpf(1) / 6),
                      mp.mpf(0), mp.mpf("0.0625001"), 9, rel_odd(mp.asinh), "f64"),
        "atanh_f64": ("atanh x = x + x^3 P(x^2), |x| <= 1/4", odd(mp.atanh, mp.mpf(1) / 3),
                      mp.mpf(0), mp.mpf("0.0625001"), 9, rel_odd(mp.atanh), "f64"),
    }


if __name__ == "__main__":
    want = sys.argv[1:]
    for name, (desc, g, a, b, deg, weight, prec, *first) in polys().items():
        if want and name not in want:
            continue
        first = first[0] if first else 0
        c = fit(g, a, b, deg, weight, prec, first)
        e = worst(g, a, b, c, weight, first)
        print(f"{name}: {desc}; degree {deg}, {prec}, weighted error {mp.nstr(e, 3)} "
              f"(2^{mp.nstr(mp.log(e, 2), 4) if e else '-inf'})")
        for j, cj in enumerate(c):
            print(f"    c{j + first} = {cj!r}")
