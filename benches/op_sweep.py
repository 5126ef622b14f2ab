"""Single ops on 256x256 float32 tensors, rgrad against torch: a sweep for slow kernels.

Not one of the issue's workloads: a quick way to find ops whose kernels are far from
torch's (a forgotten fast path, a branchy loop). Each op runs 10 times back to back, 15
times over; the median per call is printed for both libraries, and their ratio, worst
first. torch is optional (without it, rgrad's times alone).

    python benches/op_sweep.py            # both libraries
    python benches/op_sweep.py --only rgrad
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time
from typing import Any, Callable


def cases(T: Any) -> dict[str, Callable[[], Any]]:
    F = T.nn.functional
    T.manual_seed(0)
    n = 256
    a, b, v = T.randn(n, n), T.randn(n, n), T.randn(n)
    m, idx = a > 0, T.randint(0, n, (n,))
    ai = (a * 10).to(T.int64)
    return {
        "add": lambda: a + b, "mul_scalar": lambda: a * 2.0, "div": lambda: a / b,
        "pow2": lambda: a ** 2, "pow_half": lambda: a.abs() ** 0.5, "exp": lambda: a.exp(),
        "log": lambda: a.abs().log(), "tanh": lambda: a.tanh(), "sigmoid": lambda: a.sigmoid(),
        "sqrt": lambda: a.abs().sqrt(), "abs": lambda: a.abs(), "neg": lambda: -a,
        "relu": lambda: a.relu(), "clamp": lambda: a.clamp(-0.5, 0.5), "sign": lambda: a.sign(),
        "reciprocal": lambda: a.reciprocal(), "maximum": lambda: T.maximum(a, b),
        "gt": lambda: a > b, "eq_scalar": lambda: a == 0.0, "where": lambda: T.where(m, a, b),
        "masked_fill": lambda: a.masked_fill(m, 0.0), "sum": lambda: a.sum(),
        "sum(0)": lambda: a.sum(0), "sum(1)": lambda: a.sum(1), "mean": lambda: a.mean(),
        "amax(1)": lambda: a.amax(1), "max(1)": lambda: a.max(1), "argmax(1)": lambda: a.argmax(1),
        "var(1)": lambda: a.var(1), "std": lambda: a.std(), "prod(1)": lambda: a.prod(1),
        "norm": lambda: a.norm(), "softmax": lambda: a.softmax(1),
        "log_softmax": lambda: a.log_softmax(1), "logsumexp": lambda: a.logsumexp(1),
        "t().contiguous": lambda: a.t().contiguous(), "clone": lambda: a.clone(),
        "cat": lambda: T.cat([a, b]), "stack": lambda: T.stack([a, b]),
        "index_select": lambda: a.index_select(0, idx),
        "gather": lambda: a.gather(1, idx.unsqueeze(0).expand(n, n)), "x[idx]": lambda: a[idx],
        "x[::2, ::2]": lambda: a[::2, ::2].contiguous(), "to(float64)": lambda: a.double(),
        "to(int64)": lambda: a.to(T.int64), "int64 add": lambda: ai + ai,
        "bias add": lambda: a + v, "column mul": lambda: a * v.unsqueeze(1),
        "matmul": lambda: a @ b, "mv": lambda: a @ v, "add_(alpha)": lambda: a.add_(b, alpha=0),
        "mul_": lambda: a.mul_(1.0), "zeros_like": lambda: T.zeros_like(a),
        "randn": lambda: T.randn(n, n), "repeat": lambda: v.repeat(n, 1),
        "nll_loss": lambda: F.nll_loss(a.log_softmax(1), idx), "mse_loss": lambda: F.mse_loss(a, b),
        "cross_entropy": lambda: F.cross_entropy(a, idx),
    }


def time_us(f: Callable[[], Any]) -> float:
    for _ in range(5):
        f()
    per_call = []
    for _ in range(15):
        t0 = time.perf_counter()
        for _ in range(10):
            f()
        per_call.append((time.perf_counter() - t0) / 10)
    return statistics.median(per_call) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--only", choices=["rgrad", "torch"])
    args = ap.parse_args()
    names = [args.only] if args.only else ["rgrad", "torch"]
    libs = {}
    for name in names:
        try:
            libs[name] = importlib.import_module(name)
        except ImportError:
            print(f"({name} is not installed)")
    results = {name: {op: time_us(f) for op, f in cases(T).items()} for name, T in libs.items()}
    ops = list(cases(next(iter(libs.values()))))
    ratio = {op: results["rgrad"][op] / results["torch"][op] for op in ops} if len(results) == 2 else {}
    print(f"{'op':<16}" + "".join(f"{name + ' us':>12}" for name in results) + ("  ratio" if ratio else ""))
    for op in sorted(ops, key=lambda o: -ratio.get(o, 0)):
        row = "".join(f"{results[name][op]:12.2f}" for name in results)
        print(f"{op:<16}{row}" + (f"  {ratio[op]:.2f}" if ratio else ""))


if __name__ == "__main__":
    main()
