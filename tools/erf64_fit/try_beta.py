import sys, mpmath as mp
sys.path.insert(0, '/tmp/h1/erf')
from ratfit2 import greedy, dense_err
def erfcx(a): return mp.erfc(a) * mp.exp(a * a)
sq = mp.sqrt(mp.pi)
lo, hi = mp.mpf(sys.argv[1]), mp.mpf(sys.argv[2]); m, n = int(sys.argv[3]), int(sys.argv[4]); beta = mp.mpf(float(sys.argv[5]))
Rt = lambda a: 1 / erfcx(a) - sq * a - beta
wt = lambda a: 1 / (sq * a + beta + Rt(a))
mp.mp.dps = 50
e, coef = greedy(Rt, lo, hi, m, n, wt)
ed = dense_err(Rt, lo, hi, coef, m, n, wt)
print('rounded', mp.nstr(mp.log(e, 2), 5), 'dense', mp.nstr(mp.log(ed, 2), 5))
P = [coef[('p', k)] for k in range(m + 1)]; Q = [coef[('q', k)] for k in range(n + 1)]
print('P', [repr(float(v)) for v in P])
print('Q', [repr(float(v)) for v in Q])
# Horner error bound proxy: sum |p_i| a^i / D and sum|q_i|a^i/Q * |P2|/D
worst = 0
for k in range(401):
    a = lo + (hi - lo) * mp.mpf(k) / 400
    a = lo * (hi/lo) ** (mp.mpf(k)/400)
    p2 = sum(c * a**i for i, c in enumerate(P)); q = sum(c * a**i for i, c in enumerate(Q))
    D = (sq * a + beta) * q + p2
    b = sum(abs(c) * a**i for i, c in enumerate(P)) / D
    if b > worst: worst, wa = b, a
print('max sum|p_i a^i| / D', mp.nstr(worst, 4), 'at', mp.nstr(wa, 4))
import json
print('JSON', json.dumps([float(v) for v in P]), json.dumps([float(v) for v in Q]))
