"""Max ulp error of torch and rgrad on the same random pairs of atan2, hypot, logaddexp
and pow, float32 and float64, against mpmath at 60 digits (docs/kernels.md, "Functions
of two tensors"). Needs torch and mpmath.

    python tools/binary_ulp.py [N]     # N pairs per op and dtype (default 4000)
"""
import sys, random, math, struct
import mpmath as mp
import torch, rgrad as R
mp.mp.dps = 60
random.seed(1)
N = int(sys.argv[1]) if len(sys.argv) > 1 else 4000

def ulp(v, dt):
    v = abs(float(v))
    if dt == 'float32':
        if v < 2**-126: return 2.0**-149
        e = math.frexp(v)[1] - 1
        return 2.0**(e - 23)
    if v < 2**-1022: return 2.0**-1074
    e = math.frexp(v)[1] - 1
    return 2.0**(e - 52)

def gen(dt):
    xs, ys = [], []
    for i in range(N):
        k = i % 3
        if k == 0:
            x, y = random.gauss(0, 1), random.gauss(0, 1)
        elif k == 1:
            x, y = random.uniform(-30, 30), random.uniform(-30, 30)
        else:
            x = random.uniform(-2, 2) * 10**random.uniform(-20, 20)
            y = random.uniform(-2, 2) * 10**random.uniform(-20, 20)
        xs.append(x); ys.append(y)
    return xs, ys

OPS = {
    'atan2': (lambda T, a, b: T.atan2(a, b), lambda x, y: mp.atan2(x, y), False),
    'hypot': (lambda T, a, b: T.hypot(a, b), lambda x, y: mp.sqrt(x * x + y * y), False),
    'logaddexp': (lambda T, a, b: T.logaddexp(a, b), lambda x, y: mp.log(mp.exp(x) + mp.exp(y)), False),
    'pow': (lambda T, a, b: T.pow(a, b), lambda x, y: mp.power(x, y), True),
}
for dt in ['float32', 'float64']:
    xs, ys = gen(dt)
    for name, (f, ref, pos) in OPS.items():
        a = [abs(x) for x in xs] if pos else xs
        b = [y / 10 if pos else y for y in ys]
        ta, tb = torch.tensor(a, dtype=getattr(torch, dt)), torch.tensor(b, dtype=getattr(torch, dt))
        ra, rb = R.tensor(ta.tolist(), dtype=getattr(R, dt)), R.tensor(tb.tolist(), dtype=getattr(R, dt))
        outt, outr = f(torch, ta, tb).tolist(), f(R, ra, rb).tolist()
        worst = {'torch': (0, None), 'rgrad': (0, None)}
        for i, (x, y) in enumerate(zip(ta.tolist(), tb.tolist())):
            e = ref(mp.mpf(x), mp.mpf(y))
            ef = float(e)
            if not math.isfinite(ef) or ef == 0 or (dt == 'float32' and not (1e-45 < abs(ef) < 3.4e38)):
                continue
            for lib, out in (('torch', outt), ('rgrad', outr)):
                g = out[i]
                if not math.isfinite(g):
                    u = float('inf')
                else:
                    u = float(abs(mp.mpf(g) - e) / ulp(ef, dt))
                if u > worst[lib][0]:
                    worst[lib] = (u, (x, y))
        print(f"{dt} {name:10s} torch max {worst['torch'][0]:.3f} ulp at {worst['torch'][1]}; rgrad max {worst['rgrad'][0]:.3f} ulp at {worst['rgrad'][1]}", flush=True)
