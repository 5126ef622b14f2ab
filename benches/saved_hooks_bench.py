#!/usr/bin/env python3
"""The cost of saving a tensor with no saved-tensor hooks registered.

A chain of 1,000 ``h = h * y`` on 1-element tensors (each node saves both operands),
then backward: microseconds per op, forward + backward. Run it under two builds (before
and after a change to the saving path) in alternating processes::

    python benches/saved_hooks_bench.py [--reps 200] [--ops 1000]

and compare the medians. Also reports the same chain under
``saved_tensors_hooks(lambda x: x, lambda x: x)`` (the cost of a hook pair), and
``--module torch`` runs it on torch. Nothing here is a test: no timing is asserted.

On a shared machine wall time varies more than the effect measured; instruction counts
do not. The main thread's count per op, from two run lengths (their difference cancels
the import and start-up)::

    for n in 5 25; do PYTHONHASHSEED=0 RGRAD_NUM_THREADS=1 valgrind --tool=callgrind \
        --separate-threads=yes --callgrind-out-file=cg.$n python -c "
    import rgrad as T
    x = T.ones(1, requires_grad=True); y = T.full((1,), 1.0001, requires_grad=True)
    for _ in range($n):
        h = x
        for _ in range(200): h = h * y
        h.sum().backward()"; done
    # ((totals of cg.25-01) - (totals of cg.5-01)) / (20 * 200)

(the pool's other threads spin while warm, so only the main thread's count is stable).
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--ops", type=int, default=1000)
    ap.add_argument("--module", default="rgrad")
    ap.add_argument("--hooks", action="store_true", help="also time the chain under identity hooks")
    args = ap.parse_args()
    T = importlib.import_module(args.module)

    x = T.ones(1, requires_grad=True)
    y = T.full((1,), 1.0001, requires_grad=True)

    def step() -> None:
        h = x
        for _ in range(args.ops):
            h = h * y
        h.sum().backward()

    def timed(run) -> float:
        for _ in range(5):
            run()
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
        return statistics.median(times) / args.ops * 1e6

    print(f"{args.module} {getattr(T, '__file__', '')}")
    print(f"no hooks: {timed(step):.4f} us/op (fwd+bwd)")
    if args.hooks:
        def hooked() -> None:
            with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                step()
        print(f"identity hooks: {timed(hooked):.4f} us/op (fwd+bwd)")


if __name__ == "__main__":
    main()
