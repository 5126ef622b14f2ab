"""Rational near-minimax fits (linearised weighted least squares + Lawson), mpmath."""
import mpmath as mp
mp.mp.dps = 50

def cheb_nodes(a, b, n):
    return [(a + b) / 2 + (b - a) / 2 * mp.cos(mp.pi * (2 * k + 1) / (2 * n)) for k in range(n)]

def ratfit(f, a, b, m, n, weight, var=lambda x: x, iters=30, npts=None, pts=None):
    """P(u)/Q(u), deg P = m, deg Q = n, Q(0) normalised... u = var(x). Minimise max |P/Q - f| * weight.
    Returns (p, q) coefficient lists in u (power basis), lowest first, and the max weighted error."""
    npts = npts or 12 * (m + n + 2)
    xs = pts or cheb_nodes(a, b, npts)
    us = [var(x) for x in xs]
    fs = [f(x) for x in xs]
    ws = [weight(x) for x in xs]
    # scale u to [-1,1] for conditioning: u = c + h s
    umin, umax = min(us), max(us)
    c, h = (umin + umax) / 2, (umax - umin) / 2
    ss = [(u - c) / h for u in us]
    def cheb(s, k):
        return mp.chebyt(k, s)
    T = [[cheb(s, k) for k in range(max(m, n) + 1)] for s in ss]
    lw = [mp.mpf(1)] * len(xs)
    qprev = [mp.mpf(1)] * len(xs)
    best = None
    for it in range(iters):
        # unknowns: p_0..p_m, q_1..q_n (q_0 = 1 in Chebyshev basis)
        rows, rhs = [], []
        for i in range(len(xs)):
            s = mp.sqrt(lw[i]) * ws[i] / qprev[i]
            row = [s * T[i][k] for k in range(m + 1)] + [-s * fs[i] * T[i][k] for k in range(1, n + 1)]
            rows.append(row)
            rhs.append(s * fs[i])
        A = mp.matrix(rows)
        y = mp.matrix(rhs)
        sol = mp.lu_solve(A.T * A, A.T * y)
        pc = [sol[k] for k in range(m + 1)]
        qc = [mp.mpf(1)] + [sol[m + k] for k in range(1, n + 1)]
        P = [sum(pc[k] * T[i][k] for k in range(m + 1)) for i in range(len(xs))]
        Q = [sum(qc[k] * T[i][k] for k in range(n + 1)) for i in range(len(xs))]
        errs = [abs(P[i] / Q[i] - fs[i]) * ws[i] for i in range(len(xs))]
        e = max(errs)
        if best is None or e < best[0]:
            best = (e, pc, qc)
        qprev = Q
        tot = sum(lw[i] * errs[i] for i in range(len(xs)))
        if it >= 3:
            lw = [lw[i] * errs[i] / tot for i in range(len(xs))]
    e, pc, qc = best
    # convert Chebyshev-in-s to power basis in u
    def to_power(cc):
        # sum cc_k T_k((u - c)/h)
        deg = len(cc) - 1
        # polynomial in s
        ps = [mp.mpf(0)] * (deg + 1)
        for k, ck in enumerate(cc):
            tk = mp.chebyt  # build T_k coefficients via recurrence
        Tp = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]
        for k in range(2, deg + 1):
            a1 = [mp.mpf(0)] + [2 * v for v in Tp[k - 1]]
            a2 = Tp[k - 2] + [mp.mpf(0)] * (len(a1) - len(Tp[k - 2]))
            Tp.append([a1[j] - a2[j] for j in range(len(a1))])
        for k, ck in enumerate(cc):
            for j, v in enumerate(Tp[k]):
                ps[j] += ck * v
        # s = (u - c)/h: expand
        pu = [mp.mpf(0)] * (deg + 1)
        for j, v in enumerate(ps):
            # v * ((u - c)/h)^j
            for i in range(j + 1):
                pu[i] += v * mp.binomial(j, i) * (-c) ** (j - i) / h ** j
        return pu
    return to_power(pc), to_power(qc), e
