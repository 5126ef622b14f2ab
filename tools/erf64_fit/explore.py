import mpmath as mp, sys
mp.mp.dps = 40
def erfcx(a): return mp.erfc(a)*mp.exp(a*a)
def deg_needed(f, lo, hi, target, maxn=40):
    # smallest degree n where chebyfit rel error (relative to min |f|) < target
    fmin = min(abs(f(mp.mpf(lo))), abs(f(mp.mpf(hi))), abs(f((mp.mpf(lo)+hi)/2)))
    for n in range(4, maxn):
        c, err = mp.chebyfit(f, [lo, hi], n+1, error=True)
        if err/fmin < target:
            return n, float(err/fmin)
    return None, None
T = mp.mpf(2)**-57
which = sys.argv[1]
if which == 'erfsmall':
    for x0 in ['0.75','0.875','1.0','1.125']:
        f = lambda z: (mp.erf(mp.sqrt(z))/mp.sqrt(z) - 1) if z != 0 else 2/mp.sqrt(mp.pi)-1
        # relative weight vs erf: error in P relative to (1+P)
        g = lambda z: f(z)
        x0 = mp.mpf(x0)
        # absolute error of P against (1+P) >= 0.84: use target abs 2^-57*0.84
        for n in range(6, 20):
            c, err = mp.chebyfit(g, [0, x0**2], n+1, error=True)
            if err < T*0.8:
                print('erf small x0', x0, 'deg', n, float(err)); break
elif which == 'Fx':
    # F(a)=erfcx(a) polynomial in a on intervals
    for lo, hi in [(1,2),(2,3.5),(3.5,6),(1,1.5),(1,6),(0.875,1.75),(1.75,3),(3,4.5),(4.5,6)]:
        print('F in a', lo, hi, deg_needed(erfcx, lo, hi, T))
elif which == 'Gv':
    # G(v) = a*erfcx(a), v=1/a on [1/hi, 1/lo]
    G = lambda v: erfcx(1/v)/v
    for lo, hi in [(1,6),(1,2),(2,6),(6,27.3),(4,27.3),(3,27.3),(2,4),(1,2.5),(2.5,6)]:
        print('G in 1/a', lo, hi, deg_needed(G, mp.mpf(1)/hi, mp.mpf(1)/lo, T))
