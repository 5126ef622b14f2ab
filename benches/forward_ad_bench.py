"""Forward-mode AD: rgrad against torch, in one process, alternating (issue 17).

    python benches/forward_ad_bench.py [--reps N] [--threads N]

- jvp: the tangent of an MLP 256-256-256-10 (tanh) on a batch of 128, by dual tensors;
- hvp: a Hessian-vector product of the MLP's loss w.r.t. its input by forward-over-reverse
  (`grad` of the loss inside a dual level: the gradient's tangent);
- chain: a 1-element chain of 100 multiply-adds on a dual tensor, per op.
Prints the median time of each for both libraries and their ratio (rgrad / torch)."""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import rgrad
import torch

warnings.filterwarnings("ignore", category=FutureWarning)


def setup(lib):
    fw = lib.autograd.forward_ad
    g = lib.manual_seed(0)
    del g
    w = [lib.randn(256, 256, dtype=lib.float32) * 0.06, lib.randn(256, 256) * 0.06, lib.randn(256, 10) * 0.06]
    b = [lib.zeros(256), lib.zeros(256), lib.zeros(10)]
    x = lib.randn(128, 256)
    v = lib.randn(128, 256)

    def mlp(h):
        for i in range(3):
            h = h @ w[i] + b[i]
            if i < 2:
                h = lib.tanh(h)
        return h

    # each case: (prepare, timed body); the level is entered and the duals made in
    # prepare (torch's make_dual costs ~50 ms a call in 2.15: it is not what is compared)
    def jvp_prep():
        return (fw.make_dual(x, v),)

    def jvp(d):
        return fw.unpack_dual(mlp(d)).tangent

    def hvp_prep():
        xr = x.clone().requires_grad_()
        return xr, fw.make_dual(xr, v)

    def hvp(xr, d):
        (g,) = lib.autograd.grad((mlp(d) ** 2).sum(), xr)
        return fw.unpack_dual(g).tangent

    one = lib.ones(1)

    def chain_prep():
        return (fw.make_dual(one, one),)

    def chain(y):
        for _ in range(100):
            y = y * 1.0001 + 0.0001
        return fw.unpack_dual(y).tangent

    return fw, {"jvp": (jvp_prep, jvp), "hvp": (hvp_prep, hvp), "chain (per op)": (chain_prep, chain)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--threads", type=int, default=None, help="both libraries' thread counts (default: theirs)")
    args = ap.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
        rgrad.set_num_threads(args.threads)
    cases = {"rgrad": setup(rgrad), "torch": setup(torch)}
    times: dict = {}
    for rep in range(args.reps + 3):  # (3 warm-up rounds)
        for lib, (fw, fns) in cases.items():
            for name, (prep, f) in fns.items():
                with fw.dual_level():
                    a = prep()
                    t = time.perf_counter()
                    f(*a)
                    dt = time.perf_counter() - t
                if rep >= 3:
                    times.setdefault(name, {}).setdefault(lib, []).append(dt / (200 if "chain" in name else 1))
    for name, per in times.items():
        r, t = statistics.median(per["rgrad"]), statistics.median(per["torch"])
        print(f"{name:16s} rgrad {r * 1e6:9.1f} us   torch {t * 1e6:9.1f} us   ratio {r / t:5.2f}")


if __name__ == "__main__":
    main()
