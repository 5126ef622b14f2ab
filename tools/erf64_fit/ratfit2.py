"""Near-minimax rational fits with float64 coefficients (greedy rounding + refit), power basis."""
import mpmath as mp, sys
mp.mp.dps = 70

def cheb_nodes(a, b, n):
    return [(a + b) / 2 + (b - a) / 2 * mp.cos(mp.pi * (2 * k + 1) / (2 * n)) for k in range(n)]

def solve(xs, us, fs, ws, m, n, fixed, iters=40):
    """fixed: dict {('p',k)|('q',k): value}. q0 is fixed to 1 unless given. Returns coefficient dict."""
    names = [('p', k) for k in range(m + 1)] + [('q', k) for k in range(n + 1)]
    if ('q', 0) not in fixed:
        fixed = dict(fixed); fixed[('q', 0)] = mp.mpf(1)
    free = [nm for nm in names if nm not in fixed]
    N = len(xs)
    lw = [mp.mpf(1)] * N
    qprev = [mp.mpf(1)] * N
    best = None
    for it in range(iters):
        rows, rhs = [], []
        for i in range(N):
            s = mp.sqrt(lw[i]) * ws[i] / qprev[i]
            u = us[i]
            # residual: P(u) - f Q(u)
            def basis(nm):
                kind, k = nm
                return u**k if kind == 'p' else -fs[i] * u**k
            rows.append([s * basis(nm) for nm in free])
            rhs.append(-s * sum(v * basis(nm) for nm, v in fixed.items()))
        if free:
            A = mp.matrix(rows); y = mp.matrix(rhs)
            sol = mp.lu_solve(A.T * A, A.T * y)
            coef = dict(fixed); coef.update({nm: sol[j] for j, nm in enumerate(free)})
        else:
            coef = dict(fixed)
        P = [sum(coef[('p', k)] * us[i]**k for k in range(m + 1)) for i in range(N)]
        Q = [sum(coef[('q', k)] * us[i]**k for k in range(n + 1)) for i in range(N)]
        errs = [abs(P[i] / Q[i] - fs[i]) * ws[i] for i in range(N)]
        e = max(errs)
        if best is None or e < best[0]:
            best = (e, coef)
        if not free:
            break
        qprev = Q
        tot = sum(lw[i] * errs[i] for i in range(N))
        if it >= 3:
            lw = [lw[i] * errs[i] / tot for i in range(N)]
    return best

def greedy(f, a, b, m, n, weight, var=lambda x: x, npts=None, order=None):
    npts = npts or 10 * (m + n + 2)
    xs = cheb_nodes(a, b, npts)
    us = [var(x) for x in xs]; fs = [f(x) for x in xs]; ws = [weight(x) for x in xs]
    fixed = {}
    e, coef = solve(xs, us, fs, ws, m, n, fixed)
    print('unrounded', mp.nstr(mp.log(e, 2), 5), flush=True)
    names = order or ([('q', k) for k in range(n + 1)] + [('p', k) for k in range(m + 1)])
    for nm in names:
        if nm == ('q', 0):
            fixed[nm] = mp.mpf(float(coef[nm]))
            continue
        fixed[nm] = mp.mpf(float(coef[nm]))
        e, coef = solve(xs, us, fs, ws, m, n, fixed)
    return e, coef

def dense_err(f, a, b, coef, m, n, weight, var=lambda x: x, N=3000):
    e = 0
    for k in range(N + 1):
        x = a + (b - a) * k / N
        u = var(x)
        P = sum(coef[('p', j)] * u**j for j in range(m + 1))
        Q = sum(coef[('q', j)] * u**j for j in range(n + 1))
        e = max(e, abs(P / Q - f(x)) * weight(x))
    return e

if __name__ == '__main__':
    def erfcx(a): return mp.erfc(a) * mp.exp(a * a)
    sq = mp.sqrt(mp.pi)
    Rt = lambda a: 1 / erfcx(a) - sq * a
    lo, hi = mp.mpf(sys.argv[1]), mp.mpf(sys.argv[2]); m, n = int(sys.argv[3]), int(sys.argv[4])
    wt = lambda a: 1 / (sq * a + Rt(a))
    mp.mp.dps = 50
    e, coef = greedy(Rt, lo, hi, m, n, wt)
    ed = dense_err(Rt, lo, hi, coef, m, n, wt)
    print('rounded', mp.nstr(mp.log(e, 2), 5), 'dense', mp.nstr(mp.log(ed, 2), 5))
    print('P', [repr(float(coef[('p', k)])) for k in range(m + 1)])
    print('Q', [repr(float(coef[('q', k)])) for k in range(n + 1)])
