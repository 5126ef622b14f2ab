import sys, json, mpmath as mp
sys.path.insert(0, '/tmp/h1/erf')
from ratfit2 import greedy, dense_err
def erfcx(a): return mp.erfc(a) * mp.exp(a * a)
sq = mp.sqrt(mp.pi)
lo, hi = mp.mpf(sys.argv[1]), mp.mpf(sys.argv[2]); m, n = int(sys.argv[3]), int(sys.argv[4]); beta = mp.mpf(float(sys.argv[5]))
Rt = lambda a: 1 / erfcx(a) - sq * a
U = lambda a: sq / (2 * Rt(a)) - a
f = lambda a: U(a) - beta
wt = lambda a: Rt(a) / ((sq * a + Rt(a)) * (a + U(a)))
mp.mp.dps = 50
e, coef = greedy(f, lo, hi, m, n, wt)
ed = dense_err(f, lo, hi, coef, m, n, wt)
print('rounded', mp.nstr(mp.log(e, 2), 5), 'dense', mp.nstr(mp.log(ed, 2), 5))
P = [coef[('p', k)] for k in range(m + 1)]; Q = [coef[('q', k)] for k in range(n + 1)]
print('JSON', json.dumps([float(v) for v in P]), json.dumps([float(v) for v in Q]))
