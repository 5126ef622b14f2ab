import mpmath as mp
mp.mp.dps = 50
def cf(x, N):
    t = mp.mpf(x)
    for n in range(N, 0, -1):
        t = x + (mp.mpf(n)/2)/t
    return mp.exp(-x*x)/mp.sqrt(mp.pi)/t
for x in [1.5, 2.0, 2.5, 3, 4, 6, 9]:
    x = mp.mpf(x); ex = mp.erfc(x)
    for N in [10, 20, 40, 80, 160, 320, 640, 1280]:
        if abs(cf(x, N)/ex - 1) < 1e-33: print(x, 'N', N); break
    else: print(x, 'no')
# Taylor alternating erf for x up to 2.5: max term
for x in [1.0, 2.0, 2.5, 3.0]:
    x=mp.mpf(x); mt = max(abs(x**(2*n+1)/(mp.factorial(n)*(2*n+1))) for n in range(200)); print('erf taylor', x, 'max term', mp.nstr(mt,3), 'n for 1e-33', next(n for n in range(400) if x**(2*n+1)/(mp.factorial(n)*(2*n+1)) < 1e-34))
