"""geqrf, orgqr, ormqr and the LDL functions at growing sizes, rgrad against torch on one
thread: where the native kernels' unblocked loops give way to the blocked (compact WY)
forms, and how both compare with torch's LAPACK (issue 15; docs/benchmarks.md).

    python benches/householder_bench.py                       # float32 and float64, n = 32..256
    python benches/householder_bench.py --sizes 256 --dtype float64

Each figure is the median of ``--reps`` timed calls after one warm-up call, per library,
the two libraries alternating case by case.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable

from _machine import cpu_model


def cases(T: Any, n: int, dtype: str) -> dict[str, Callable[[], Any]]:
    """name -> a call on n x n inputs (made once, with the same values in both libraries)."""
    import numpy as np

    rng = np.random.default_rng(0)
    dt = getattr(T, dtype)

    def mk(x):
        return T.tensor(x, dtype=dt)

    a = mk(rng.standard_normal((n, n)))
    c = mk(rng.standard_normal((n, n)))
    s = rng.standard_normal((n, n))
    sym = mk(s + s.T)
    qr, tau = T.geqrf(a)
    ld, piv = T.linalg.ldl_factor(sym)
    return {
        f"geqrf {n}": lambda: T.geqrf(a),
        f"orgqr {n}": lambda: T.orgqr(qr, tau),
        f"ormqr {n} (C {n}x{n})": lambda: T.ormqr(qr, tau, c),
        f"ormqr {n} (C {n}x4)": lambda: T.ormqr(qr, tau, c[:, :4]),
        f"ormqr {n} (C 4x{n}, right, T)": lambda: T.ormqr(qr, tau, c[:4], left=False, transpose=True),
        f"ldl_factor {n}": lambda: T.linalg.ldl_factor(sym),
        f"ldl_solve {n} (B {n}x4)": lambda: T.linalg.ldl_solve(ld, piv, c[:, :4]),
    }


def median_us(f: Callable[[], Any], reps: int) -> float:
    f()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="32,64,128,256", help="comma-separated matrix sizes")
    ap.add_argument("--dtype", choices=["float32", "float64", "both"], default="both")
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    import rgrad
    import torch

    for lib in (rgrad, torch):
        lib.set_num_threads(1)
    print(f"CPU: {cpu_model()}; 1 thread each; rgrad {rgrad.__version__}, torch {torch.__version__}")
    dtypes = ["float32", "float64"] if args.dtype == "both" else [args.dtype]
    print(f"{'case':<34}{'dtype':>9}{'rgrad us':>12}{'torch us':>12}{'ratio':>8}")
    for dtype in dtypes:
        for n in (int(s) for s in args.sizes.split(",")):
            rc, tc = cases(rgrad, n, dtype), cases(torch, n, dtype)
            for name in rc:
                r, t = median_us(rc[name], args.reps), median_us(tc[name], args.reps)
                print(f"{name:<34}{dtype:>9}{r:>12.1f}{t:>12.1f}{r / t:>8.2f}")


if __name__ == "__main__":
    main()
