import sys, json, random
sys.path.insert(0, '/tmp/h1/erf')
from sim import fma, horner, fast_two_sum
import mpmath as mp
mp.mp.dps = 40
def two_sum(a, b):
    s = a + b; bb = s - a; return s, (a - (s - bb)) + (b - bb)
IS_H = 0.5641895835477563; IS_L = 7.66772980658294e-18
def F_cf(a, P, Q, beta):
    q = horner(a, Q); p = horner(a, P)
    sh, sl = two_sum(a, beta)
    th = sh * q; tl = fma(sh, q, -th) + sl * q
    nh, n2 = fast_two_sum(th, p); nl = tl + n2
    mh = a * nh; ml = fma(a, nh, -mh) + a * nl
    mh, m2 = fast_two_sum(mh, 0.5 * q); ml = ml + m2
    # N / sqrt(pi)
    uh = nh * IS_H; ul = fma(nh, IS_H, -uh) + fma(nh, IS_L, nl * IS_H)
    inv = 1.0 / mh; q0 = uh * inv
    res = fma(-q0, ml, ul + fma(-q0, mh, uh))
    return q0, res * inv
line = [l for l in open(sys.argv[1]) if l.startswith('JSON')][0][5:]
dec = json.JSONDecoder(); P, i = dec.raw_decode(line); Q, _ = dec.raw_decode(line[i:].strip())
beta = float(sys.argv[2])
rnd = random.Random(3)
for lo, hi, n in [(0.45, 0.75, 1500), (0.75, 1.5, 1500), (1.5, 6, 1500), (6, 27.3, 600)]:
    worst = (0, 0)
    for k in range(n):
        a = lo + (hi - lo) * rnd.random()
        fh, fl = F_cf(a, P, Q, beta)
        F = mp.erfc(a) * mp.exp(mp.mpf(a) ** 2)
        e = float((mp.mpf(fh) + mp.mpf(fl)) / F - 1) / 2**-53
        if abs(e) > abs(worst[0]): worst = (e, a)
    print(lo, hi, worst, flush=True)
