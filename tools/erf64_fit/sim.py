"""Simulate the float64 evaluation of the tail's F with exact fma; report max error in units of u=2^-53, relative."""
from fractions import Fraction as Fr
import mpmath as mp, sys, math, random
mp.mp.dps = 40
def fma(a, b, c): return float(Fr(a) * Fr(b) + Fr(c))
def horner(x, c):
    p = c[-1]
    for ci in reversed(c[:-1]): p = fma(p, x, ci)
    return p
def exact_poly(x, c): return sum(Fr(ci) * Fr(x) ** i for i, ci in enumerate(c))
def two_prod(a, b): h = a * b; return h, fma(a, b, -h)
def fast_two_sum(a, b): s = a + b; return s, b - (s - a)
SQ = 1.772453850905516; SQL = -7.666586499825799e-17
def F_kernel(a, P, Q, beta):
    q = horner(a, Q); p = horner(a, P)
    bh = SQ * a
    ch, c2 = fast_two_sum(bh, beta)
    cl = fma(SQ, a, -bh) + fma(SQL, a, c2)
    dh = ch * q
    dl = fma(ch, q, -dh) + cl * q
    dh, d2 = fast_two_sum(dh, p)
    dl = dl + d2
    inv = 1.0 / dh; q0 = q * inv
    res = fma(-q0, dl, fma(-q0, dh, q))
    return q0, res * inv
def run(P, Q, beta, lo, hi, n=3000, seed=1):
    rnd = random.Random(seed); worst = (0, 0); wp = (0, 0)
    sqpi = mp.sqrt(mp.pi)
    for k in range(n):
        a = lo + (hi - lo) * rnd.random()
        fh, fl = F_kernel(a, P, Q, beta)
        F = mp.erfc(a) * mp.exp(mp.mpf(a) ** 2)
        e = float((mp.mpf(fh) + mp.mpf(fl)) / F - 1) / 2**-53
        if abs(e) > abs(worst[0]): worst = (e, a)
        # P's Horner error relative to D
        D = (sqpi * a + beta) * mp.mpf(float(exact_poly(a, Q))) + mp.mpf(float(exact_poly(a, P)))
        pe = float((mp.mpf(horner(a, P)) - mp.mpf(exact_poly(a,P).numerator)/exact_poly(a,P).denominator) / D) / 2**-53
        if abs(pe) > abs(wp[0]): wp = (pe, a)
    return worst, wp
if __name__ == '__main__':
    import json
    P, Q, beta = json.loads(sys.argv[1]), json.loads(sys.argv[2]), float(sys.argv[3])
    lo, hi = float(sys.argv[4]), float(sys.argv[5])
    print(run(P, Q, beta, lo, hi, int(sys.argv[6]) if len(sys.argv) > 6 else 3000))
