"""Vector math per element: each unary math op of the op table (and pow with a number
exponent) on 64K and 4M elements, float32 and float64, 1 and 2 threads, rgrad against
torch in the same process, cases interleaved so that both see the same machine load.

Prints nanoseconds per element (the minimum over repetitions, and the median) and the
ratio rgrad/torch of the minima. torch is optional. For before/after comparisons, run
two rgrad builds alternately (each with its own PYTHONPATH) and compare ratios within a
run; `--json FILE` keeps the raw figures.

    python benches/vmath_bench.py                       # everything (~2 min)
    python benches/vmath_bench.py --ops exp,log --sizes 65536 --threads 1
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import time
from typing import Any, Callable

from _machine import cpu_model

# op name -> (domain of the random inputs, call)
OPS: dict[str, tuple[tuple[float, float], Callable[[Any, Any], Any]]] = {
    "exp": ((-10, 10), lambda T, x: x.exp()),
    "expm1": ((-3, 3), lambda T, x: x.expm1()),
    "log": ((0.01, 100), lambda T, x: x.log()),
    "log1p": ((-0.9, 10), lambda T, x: x.log1p()),
    "tanh": ((-5, 5), lambda T, x: x.tanh()),
    "sigmoid": ((-10, 10), lambda T, x: x.sigmoid()),
    "sin": ((-10, 10), lambda T, x: x.sin()),
    "cos": ((-10, 10), lambda T, x: x.cos()),
    "tan": ((-1.5, 1.5), lambda T, x: x.tan()),
    "sinh": ((-5, 5), lambda T, x: x.sinh()),
    "cosh": ((-5, 5), lambda T, x: x.cosh()),
    "asin": ((-1, 1), lambda T, x: x.asin()),
    "acos": ((-1, 1), lambda T, x: x.acos()),
    "atan": ((-5, 5), lambda T, x: x.atan()),
    "asinh": ((-5, 5), lambda T, x: x.asinh()),
    "acosh": ((1, 10), lambda T, x: x.acosh()),
    "atanh": ((-0.99, 0.99), lambda T, x: x.atanh()),
    "erf": ((-3, 3), lambda T, x: x.erf()),
    "erfc": ((-3, 3), lambda T, x: x.erfc()),
    "erfinv": ((-0.99, 0.99), lambda T, x: x.erfinv()),
    "lgamma": ((0.1, 10), lambda T, x: x.lgamma()),
    "digamma": ((0.1, 10), lambda T, x: x.digamma()),
    "sqrt": ((0.01, 100), lambda T, x: x.sqrt()),
    "rsqrt": ((0.01, 100), lambda T, x: x.rsqrt()),
    "reciprocal": ((0.01, 100), lambda T, x: x.reciprocal()),
    "pow_0.5": ((0.01, 100), lambda T, x: x**0.5),
    "pow_2.5": ((0.01, 10), lambda T, x: x**2.5),
    "pow_-1.5": ((0.01, 10), lambda T, x: x**-1.5),
    "abs": ((-10, 10), lambda T, x: x.abs()),
}


def time_case(f: Callable[[], Any], n: int, reps: int) -> tuple[float, float]:
    """(min, median) seconds per call."""
    inner = max(1, int(2e5 / n))  # ~ a few ms per sample at 64K, one call at 4M
    f()
    f()
    per = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            f()
        per.append((time.perf_counter() - t0) / inner)
    return min(per), statistics.median(per)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--sizes", default="65536,4194304")
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--json", help="write the raw figures here")
    args = ap.parse_args()
    libs: dict[str, Any] = {"rgrad": importlib.import_module("rgrad")}
    if not args.no_torch:
        try:
            libs["torch"] = importlib.import_module("torch")
        except ImportError:
            print("(torch is not installed)")
    print("rgrad from", libs["rgrad"].__file__)
    model = cpu_model()
    print("CPU:", model)
    import numpy as np

    rng = np.random.default_rng(0)
    rows = []
    header = f"{'op':<11}{'dtype':<8}{'n':>8}{'thr':>4}" + "".join(
        f"{name + ' ns/el':>16}" for name in libs
    ) + ("   ratio" if len(libs) == 2 else "")
    print(header)
    for op in args.ops.split(","):
        (lo, hi), call = OPS[op]
        for dt in args.dtypes.split(","):
            for n in map(int, args.sizes.split(",")):
                base = rng.uniform(lo, hi, n).astype(dt)
                xs = {name: T.from_numpy(base.copy()) if hasattr(T, "from_numpy") else T.tensor(base.tolist())
                      for name, T in libs.items()}
                for th in map(int, args.threads.split(",")):
                    res = {}
                    for name, T in libs.items():
                        T.set_num_threads(th)
                        x = xs[name]
                        reps = args.reps if n < 1 << 20 else max(3, args.reps // 2)
                        res[name] = time_case(lambda T=T, x=x: call(T, x), n, reps)
                    line = f"{op:<11}{dt:<8}{n:>8}{th:>4}" + "".join(
                        f"{res[k][0] / n * 1e9:>9.3f} ({res[k][1] / n * 1e9:.2f})" for k in libs
                    )
                    if len(libs) == 2:
                        line += f"  {res['rgrad'][0] / res['torch'][0]:6.2f}"
                    print(line, flush=True)
                    rows.append({"op": op, "dtype": dt, "n": n, "threads": th,
                                 **{f"{k}_min_ns": res[k][0] / n * 1e9 for k in libs},
                                 **{f"{k}_med_ns": res[k][1] / n * 1e9 for k in libs}})
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"cpu": model, "rgrad": libs["rgrad"].__file__, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
