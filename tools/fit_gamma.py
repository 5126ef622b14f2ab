"""Coefficients of the float32 lgamma and digamma kernels (vmath/float32/gamma.rs),
evaluated in float64: near-minimax polynomials (mpmath's Chebyshev fit) in u = r - 1.5
on r in [1, 2] for

    lgamma(r) / ((r - 1)(r - 2))   and   digamma(r) / (r - x0)   (x0: digamma's root),

so that the zeros (1 and 2; x0) are exact factors and the values there relatively
accurate. Prints Rust arrays, lowest coefficient first, and the fits' relative errors.

    python tools/fit_gamma.py
"""
import mpmath as mp

mp.mp.dps = 50
X0 = mp.findroot(mp.digamma, 1.46)


def rl(u):
    r = mp.mpf(1.5) + u
    if r == 1:
        return -mp.digamma(1)
    if r == 2:
        return mp.digamma(2)
    return mp.loggamma(r) / ((r - 1) * (r - 2))


def rd(u):
    r = mp.mpf(1.5) + u
    if r == X0:
        return mp.psi(1, r)
    return mp.digamma(r) / (r - X0)


for name, f, n in (("LGAMMA_R", rl, 18), ("DIGAMMA_R", rd, 18)):
    c, err = mp.chebyfit(f, [-0.5, 0.5], n + 1, error=True)
    rel = err / min(abs(f(mp.mpf(0.5))), abs(f(mp.mpf(-0.5))))
    print(f"// degree {n}, relative error {mp.nstr(rel, 3)}")
    print(f"const {name}: [f64; {n + 1}] = [")
    for v in reversed(c):
        print(f"    {repr(float(v))},")
    print("];")
hi = float(X0)
lo = float(X0 - mp.mpf(hi))
print(f"const X0_HI: f64 = {hi!r};\nconst X0_LO: f64 = {lo!r};")
