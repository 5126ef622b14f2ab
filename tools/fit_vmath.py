"""Fits the polynomials of src/backend/cpu/vmath.rs and prints their float64 coefficients
and the relative error they give (needs mpmath: `pip install mpmath`).

Each is a near-minimax fit: weighted least squares on Chebyshev nodes, reweighted by
Lawson's iteration toward equal error, at 40 digits; then the coefficients are rounded
to float64 and the error of the resulting formula is measured on a dense grid. The
kernels need a relative error well below 1e-13 for their float32 results to be the
correctly rounded ones almost always (the module tests allow 1 in 10,000 not).

    python tools/fit_vmath.py
"""

from __future__ import annotations

import mpmath as mp

mp.mp.dps = 40


def lawson_fit(g, a, b, deg, weight, iters=10):
    """Coefficients c[0..deg] of sum c_j t^j approximating g on [a, b], near-minimax in
    the weighted error |p - g| * weight."""
    n = 12 * (deg + 1)
    ts = [(a + b) / 2 + (b - a) / 2 * mp.cos(mp.pi * (2 * k + 1) / (2 * n)) for k in range(n)]
    w = [mp.mpf(1)] * n
    c = None
    for _ in range(iters):
        A = mp.matrix(n, deg + 1)
        y = mp.matrix(n, 1)
        for i, t in enumerate(ts):
            s = mp.sqrt(w[i]) * weight(t)
            for j in range(deg + 1):
                A[i, j] = s * t**j
            y[i] = s * g(t)
        c = mp.lu_solve(A.T * A, A.T * y)
        errs = [abs(sum(c[j] * t**j for j in range(deg + 1)) - g(t)) * weight(t) for t in ts]
        total = sum(w[i] * errs[i] for i in range(n))
        w = [w[i] * errs[i] / total for i in range(n)]
    return [float(c[j]) for j in range(deg + 1)]


def horner(c, t):
    return sum(mp.mpf(cj) * t**j for j, cj in enumerate(c))


def exp_poly():
    """e^r = 1 + r + r^2 q(r) on |r| <= ln2/2 (after x = n ln2 + r)."""
    h = mp.log(2) / 2

    def q(r):
        return mp.mpf(1) / 2 if r == 0 else (mp.exp(r) - 1 - r) / r**2

    c = lawson_fit(q, -h, h, 7, lambda r: r * r / mp.exp(r))
    worst = max(
        abs((1 + r + r * r * horner(c, r)) / mp.exp(r) - 1)
        for r in (-h + 2 * h * k / 4000 for k in range(4001))
    )
    return c, worst


def sin_poly():
    """sin r = r + r z p(z), z = r^2, on |r| <= pi/2."""
    h = mp.pi / 2

    def p(z):
        if z == 0:
            return -mp.mpf(1) / 6
        r = mp.sqrt(z)
        return (mp.sin(r) - r) / r**3

    def weight(z):
        r = mp.sqrt(z)
        return mp.mpf(0) if z == 0 else r**3 / mp.sin(r)

    c = lawson_fit(p, mp.mpf(0), h * h, 5, weight)
    worst = max(
        abs((r + r * r * r * horner(c, r * r)) / mp.sin(r) - 1)
        for r in (h * k / 4000 for k in range(1, 4001))
    )
    return c, worst


if __name__ == "__main__":
    for name, fit in (("exp: q(r)", exp_poly), ("sin: p(z)", sin_poly)):
        c, worst = fit()
        print(f"{name}, relative error {mp.nstr(worst, 3)}")
        for j, cj in enumerate(c):
            print(f"    c{j} = {cj!r}")
