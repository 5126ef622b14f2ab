import mpmath as mp, sys
mp.mp.dps = 40
def erfcx(a): return mp.erfc(a)*mp.exp(a*a)
T = mp.mpf(2)**-57
def deg_needed(f, lo, hi, target, maxn=45, start=8):
    vals = [abs(f(lo + (hi-lo)*mp.mpf(k)/20)) for k in range(21)]
    fmin = min(vals)
    for n in range(start, maxn, 2):
        c, err = mp.chebyfit(f, [lo, hi], n+1, error=True)
        if err/fmin < target:
            # refine downward by 1
            c, err2 = mp.chebyfit(f, [lo, hi], n, error=True)
            if err2/fmin < target: return n-1, float(err2/fmin)
            return n, float(err/fmin)
    return None, float(err/fmin)
A0, A1 = mp.mpf(sys.argv[1]), mp.mpf(sys.argv[2])
for p in [mp.mpf(x) for x in sys.argv[3:]]:
    f = lambda t: erfcx((1/t - 1)/p)/t
    print('p', p, 'H(t) t=1/(1+pa) on', A0, A1, deg_needed(f, 1/(1+p*A1), 1/(1+p*A0), T), flush=True)
