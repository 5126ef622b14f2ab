"""GEMM at the shapes an MLP, a batched matmul and their backward passes produce, rgrad
against torch (MKL on x86), in GFLOP/s, at 1 and 2 threads.

The MLP is benches/bench.py's W3 (784-512-512-10, batch 128): the forward products
x·W1ᵀ, h1·W2ᵀ, h2·W3ᵀ (`F.linear`: the weight transposed, "NT"), the input gradients
g·W (both row-major, "NN") and the weight gradients gᵀ·h ("TN"), as the autograd
computes them; then a batched matmul and its backward, thin and small products and
matrix-vector products (batch 1). Both libraries run in one process, alternately, on
the same thread count; each figure is the median of `--samples` timings of about 20 ms,
the ratio is rgrad's GFLOP/s over torch's (>= 1: rgrad as fast or faster; issue 15 asks
>= 1.0 at every MLP shape).

    python benches/gemm_bench.py                    # 1 and 2 threads, all shapes
    python benches/gemm_bench.py --threads 1 --only mlp --markdown
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable

from _machine import cpu_model


# (group, name, flops, maker): maker(lib) -> a call of the product on fresh inputs
Case = tuple[str, str, int, Callable[[Any], Callable[[], Any]]]


def mm_case(group: str, name: str, m: int, k: int, n: int, lay: str, dtype: str = "float32") -> Case:
    """C (m x n) = A (m x k) · B (k x n); `lay` says which operand is a transposed view
    ("N": row-major, "T": the transpose of a row-major tensor)."""

    def make(T: Any) -> Callable[[], Any]:
        T.manual_seed(0)
        dt = getattr(T, dtype)
        a = T.randn(m, k, dtype=dt) if lay[0] == "N" else T.randn(k, m, dtype=dt).t()
        b = T.randn(k, n, dtype=dt) if lay[1] == "N" else T.randn(n, k, dtype=dt).t()
        return lambda: T.mm(a, b)

    return (group, f"{name} {m}x{k}x{n} {lay}" + ("" if dtype == "float32" else " f64"), 2 * m * k * n, make)


def linear_case(group: str, name: str, batch: int, fin: int, fout: int) -> Case:
    def make(T: Any) -> Callable[[], Any]:
        T.manual_seed(0)
        x, w, b = T.randn(batch, fin), T.randn(fout, fin), T.randn(fout)
        return lambda: T.nn.functional.linear(x, w, b)

    return (group, f"{name} linear+bias {batch}x{fin}->{fout}", 2 * batch * fin * fout, make)


def bmm_case(group: str, name: str, bsz: int, m: int, k: int, n: int, lay: str) -> Case:
    def make(T: Any) -> Callable[[], Any]:
        T.manual_seed(0)
        a = T.randn(bsz, m, k) if lay[0] == "N" else T.randn(bsz, k, m).transpose(1, 2)
        b = T.randn(bsz, k, n) if lay[1] == "N" else T.randn(bsz, n, k).transpose(1, 2)
        return lambda: T.bmm(a, b)

    return (group, f"{name} {bsz}x({m}x{k}x{n}) {lay}", 2 * bsz * m * k * n, make)


def mv_case(group: str, name: str, m: int, k: int) -> Case:
    def make(T: Any) -> Callable[[], Any]:
        T.manual_seed(0)
        a, v = T.randn(m, k), T.randn(k)
        return lambda: T.mv(a, v)

    return (group, f"{name} {m}x{k}", 2 * m * k, make)


CASES: list[Case] = [
    # MLP 784-512-512-10, batch 128 (W3): forward, input gradients, weight gradients
    mm_case("mlp", "fwd x·W1ᵀ", 128, 784, 512, "NT"),
    mm_case("mlp", "fwd h1·W2ᵀ", 128, 512, 512, "NT"),
    mm_case("mlp", "fwd h2·W3ᵀ", 128, 512, 10, "NT"),
    mm_case("mlp", "dx g3·W3", 128, 10, 512, "NN"),
    mm_case("mlp", "dx g2·W2", 128, 512, 512, "NN"),
    mm_case("mlp", "dx g1·W1", 128, 512, 784, "NN"),
    mm_case("mlp", "dW g3ᵀ·h2", 10, 128, 512, "TN"),
    mm_case("mlp", "dW g2ᵀ·h1", 512, 128, 512, "TN"),
    mm_case("mlp", "dW g1ᵀ·x", 512, 128, 784, "TN"),
    linear_case("mlp", "fwd", 128, 784, 512),
    mm_case("mlp", "fwd h1·W2ᵀ", 128, 512, 512, "NT", "float64"),
    # a batched matmul (attention-like scores and values) and its backward
    bmm_case("bmm", "q·kᵀ", 16, 128, 64, 128, "NT"),
    bmm_case("bmm", "p·v", 16, 128, 128, 64, "NN"),
    bmm_case("bmm", "dp = g·vᵀ", 16, 128, 64, 128, "NT"),
    bmm_case("bmm", "dv = pᵀ·g", 16, 128, 128, 64, "TN"),
    # thin and small
    mm_case("thin", "small", 32, 32, 32, "NN"),
    mm_case("thin", "small", 64, 64, 64, "NN"),
    mm_case("thin", "thin m", 8, 512, 512, "NT"),
    mm_case("thin", "thin n", 512, 512, 8, "NN"),
    mm_case("thin", "thin k", 512, 8, 512, "NN"),
    mm_case("thin", "square", 256, 256, 256, "NN"),
    mm_case("thin", "square", 1024, 1024, 1024, "NN"),
    # matrix-vector (batch 1)
    mm_case("mv", "x·W1ᵀ", 1, 784, 512, "NT"),
    mm_case("mv", "g·W1", 1, 512, 784, "NN"),
    mv_case("mv", "mv W·v", 512, 784),
    mv_case("mv", "mv", 256, 256),
]


def timeit(f: Callable[[], Any], budget: float = 0.02) -> float:
    """Seconds per call: a loop of about `budget` seconds."""
    f()
    reps = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(reps):
            f()
        dt = time.perf_counter() - t0
        if dt >= budget:
            return dt / reps
        reps = max(reps * 2, int(reps * budget / max(dt, 1e-9)) + 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--only", default="", help="comma-separated groups: mlp,bmm,thin,mv")
    ap.add_argument("--samples", type=int, default=7)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()

    import rgrad
    import torch

    groups = set(filter(None, args.only.split(",")))
    cases = [c for c in CASES if not groups or c[0] in groups]
    print(f"CPU: {cpu_model()}; torch {torch.__version__}")
    rows = []
    for threads in [int(t) for t in args.threads.split(",")]:
        torch.set_num_threads(threads)
        rgrad.set_num_threads(threads)
        for group, name, flops, make in cases:
            fr, ft = make(rgrad), make(torch)
            tr, tt = [], []
            for _ in range(args.samples):  # alternate, so both see the same machine
                tr.append(timeit(fr))
                tt.append(timeit(ft))
            gr, gt = flops / statistics.median(tr) / 1e9, flops / statistics.median(tt) / 1e9
            rows.append((threads, group, name, gr, gt, gr / gt))
            if not args.markdown:
                print(f"{threads}t {group:5} {name:34} rgrad {gr:7.1f}  torch {gt:7.1f} GFLOP/s  ratio {gr / gt:5.2f}",
                      flush=True)
    if args.markdown:
        print("| threads | group | product | rgrad GFLOP/s | torch GFLOP/s | rgrad/torch |")
        print("| --- | --- | --- | --- | --- | --- |")
        for threads, group, name, gr, gt, r in rows:
            print(f"| {threads} | {group} | {name} | {gr:.1f} | {gt:.1f} | {r:.2f} |")
    for threads in sorted({r[0] for r in rows}):
        mlp = [r[5] for r in rows if r[0] == threads and r[1] == "mlp"]
        if mlp:
            print(f"{threads} thread(s): MLP shapes at or above torch: {sum(x >= 1.0 for x in mlp)}/{len(mlp)}, "
                  f"worst ratio {min(mlp):.2f}")


if __name__ == "__main__":
    main()
