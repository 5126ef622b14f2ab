import sys, mpmath as mp
sys.path.insert(0, '/tmp/h1/erf')
from ratfit import ratfit
mp.mp.dps = 50
def erfcx(a): return mp.erfc(a) * mp.exp(a * a)
sq = mp.sqrt(mp.pi)
R = lambda a: 1 / (sq * erfcx(a)) - a
lo, hi = mp.mpf(sys.argv[1]), mp.mpf(sys.argv[2])
for deg in map(int, sys.argv[3:]):
    # weight: effect on F relative: dR/(a+R)
    p, q, e = ratfit(R, lo, hi, deg - 1, deg, lambda a: 1 / (a + R(a)))
    print(deg, 'err', mp.nstr(e, 3), 'log2', mp.nstr(mp.log(e, 2), 4), flush=True)
    print('  p', [mp.nstr(v, 6) for v in p])
    print('  q', [mp.nstr(v, 6) for v in q])
