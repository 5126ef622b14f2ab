import sys
sys.path.insert(0, '/work/main/tools')
import mpmath as mp
from fit_vmath import fit, worst, safe
mp.mp.dps = 60
which = sys.argv[1]
if which == 'erf':
    deg = int(sys.argv[2]); top = mp.mpf(sys.argv[3])
    g = safe(lambda z: mp.erf(mp.sqrt(z)) / mp.sqrt(z) - 1, 2 / mp.sqrt(mp.pi) - 1)
    wt = safe(lambda z: mp.sqrt(z) / mp.erf(mp.sqrt(z)), 1 / (2 / mp.sqrt(mp.pi)))
    a, b = mp.mpf(0), top**2 * (1 + mp.mpf(2)**-20)
    c = fit(g, a, b, deg, wt, 'f64')
    e = worst(g, a, b, c, wt)
elif which in ('inva', 'invb'):
    def ratio_w(w):
        if w == 0: return mp.sqrt(mp.pi)/2
        y = mp.sqrt(-mp.expm1(-w)); return mp.erfinv(y)/y
    deg = int(sys.argv[2]); lo = mp.mpf(sys.argv[3]); hi = mp.mpf(sys.argv[4]); ctr = mp.mpf(sys.argv[5])
    if which == 'inva':
        g = lambda v: ratio_w(v + ctr)
    else:
        g = lambda v: ratio_w((v + ctr)**2)
    wt = lambda v: 1 / abs(g(v))
    a, b = lo - ctr, hi - ctr
    c = fit(g, a, b, deg, wt, 'f64')
    e = worst(g, a, b, c, wt)
print(which, 'weighted error', mp.nstr(e, 3), 'log2', mp.nstr(mp.log(e, 2), 4))
for cj in c:
    print(f'    {cj!r},')
