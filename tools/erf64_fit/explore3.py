import mpmath as mp
mp.mp.dps = 40
def ratio_w(w):
    if w == 0: return mp.sqrt(mp.pi)/2
    y = mp.sqrt(-mp.expm1(-w)); return mp.erfinv(y)/y
WMAX = -mp.log(2*mp.mpf(2)**-53)  # 1 - y^2 for y = 1 - 2^-53
print('wmax', WMAX, mp.sqrt(WMAX))
def deg(f, lo, hi, tgt):
    for n in range(3, 40):
        c, err = mp.chebyfit(f, [lo, hi], n+1, error=True)
        fm = min(abs(f(lo)), abs(f(hi)))
        if err/fm < tgt: return n
for tgt in [2**-22, 2**-26, 2**-30]:
    print('target', mp.log(tgt, 2))
    print(' single u=sqrt w [0,6.13]:', deg(lambda u: ratio_w(u*u), mp.mpf(0), mp.mpf('6.13'), tgt))
    print(' A w [0,5]:', deg(ratio_w, mp.mpf(0), mp.mpf(5), tgt), ' B sqrt w [sqrt5, 6.13]:', deg(lambda u: ratio_w(u*u), mp.sqrt(5), mp.mpf('6.13'), tgt))
    print(' A w [0,6.25]:', deg(ratio_w, mp.mpf(0), mp.mpf('6.25'), tgt), ' B sqrt w [2.5, 6.13]:', deg(lambda u: ratio_w(u*u), mp.mpf(2.5), mp.mpf('6.13'), tgt))
    print(' A w [0,3]:', deg(ratio_w, mp.mpf(0), mp.mpf('3'), tgt), ' B sqrt w [sqrt3, 6.13]:', deg(lambda u: ratio_w(u*u), mp.sqrt(3), mp.mpf('6.13'), tgt))
