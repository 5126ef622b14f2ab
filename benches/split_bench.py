"""split / chunk / unbind into many views, then backward: rgrad against torch, in one
process, alternating.

    python benches/split_bench.py [--reps N] [--sizes 500,2000] [--threads N]

Each case takes an n x 512 float32 leaf, splits it into n views (unbind(0), split(1),
chunk(n)), sums each view times its index, and runs backward. torch records one node
for all the views (UnbindBackward0, SplitBackward0), whose backward writes the input's
gradient once; a node per view writes a zero tensor of the input's size for each (n
times the work). Prints the CPU, the median per case and library, and the ratios.
"""

from __future__ import annotations

import argparse
import statistics
import time

import rgrad
import torch

from _machine import cpu_model

CASES = {
    "unbind(0)": lambda x: x.unbind(0),
    "split(1)": lambda x: x.split(1),
    "chunk(n)": lambda x: x.chunk(x.shape[0]),
}


def step(x, f):
    views = f(x)
    loss = sum(v.sum() * i for i, v in enumerate(views))
    loss.backward()
    x.grad = None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--sizes", default="500,2000")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    if args.threads:
        rgrad.set_num_threads(args.threads)
        torch.set_num_threads(args.threads)
    print(f"CPU: {cpu_model()}; torch {torch.__version__}; threads rgrad {rgrad.get_num_threads()}, "
          f"torch {torch.get_num_threads()}")
    for n in (int(s) for s in args.sizes.split(",")):
        xs = {lib: lib.randn(n, 512, requires_grad=True) for lib in (rgrad, torch)}
        for name, f in CASES.items():
            times = {rgrad: [], torch: []}
            for lib in (rgrad, torch):
                step(xs[lib], f)  # untimed
            for r in range(args.reps):
                for lib in ((rgrad, torch) if r % 2 == 0 else (torch, rgrad)):
                    t = time.perf_counter()
                    step(xs[lib], f)
                    times[lib].append(time.perf_counter() - t)
            mr, mt = (statistics.median(times[lib]) * 1e3 for lib in (rgrad, torch))
            print(f"{name:10s} n={n:5d}  rgrad {mr:8.2f} ms  torch {mt:8.2f} ms  ratio {mr / mt:5.2f}")


if __name__ == "__main__":
    main()
