#!/usr/bin/env python3
"""Activation checkpointing of a 32-layer MLP: peak memory and time of a training step.

The model is 32 layers of ``h = tanh(h @ W + b)`` (width 256, batch 4096, float32) and a
sum for a loss. One step is forward + backward. Four ways to run it:

- ``plain``: no checkpointing (every layer keeps its input and its output for backward);
- ``sequential``: ``checkpoint_sequential(layers, segments, x, use_reentrant=False)``, with
  ``segments`` = 8: the graph keeps each checkpointed segment's input, and backward
  recomputes one segment at a time (as torch's, the last segment runs without a
  checkpoint, so 8 segments of 4 layers keep the least for 32 layers: 6 inputs besides
  x, the last segment's 4 activations, then one recomputed segment);
- ``schedule``: ``checkpoint`` around segments of decreasing size (``--sizes``, default
  6,6,5,5,4,3,3; the last runs without a checkpoint). While segment j is recomputed the
  inputs of segments 2..j are alive besides its own activations, so a schedule whose
  later segments are shorter keeps less at its worst point than equal segments (Chen et
  al., "Training Deep Nets with Sublinear Memory Cost", 2016); torch has no such helper,
  and the same calls run on torch with ``--module torch``;
- ``per-layer``: ``checkpoint`` around every layer (keeps 32 inputs: no saving for a
  layer that saves only its input and output, shown for contrast).

Peak memory is the highest number of tensor-storage bytes alive during the step above
what was alive before it (the parameters and the input), read from the profiler's memory
records (``profile_memory=True``: every allocation and free, in order), so it counts
what rgrad allocates, not the Python heap. Time is the median of ``--reps`` steps without
the profiler. Goals (issue 17): peak of checkpointing <= 0.35x ``plain``, time <= 1.4x.

    python benches/checkpoint_bench.py [--reps 10] [--width 256] [--batch 4096]

``--module torch`` runs torch.utils.checkpoint on the same model; its peak is computed the
same way from torch's profiler (``torch.profiler.profile(profile_memory=True)``: the
``[memory]`` events of its CPU allocator, every allocation and free with its byte count,
read from the exported trace), so the two ratios compare what each library's schedule
keeps alive. Nothing here is a test: no figure is asserted.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time

from _machine import cpu_model


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--segments", type=int, default=8)
    ap.add_argument("--module", default="rgrad")
    ap.add_argument("--sizes", default="6,6,5,5,4,3,3",
                    help="the 'schedule' run's segment sizes, first to last (their sum: --layers)")
    args = ap.parse_args()
    sizes = [int(v) for v in args.sizes.split(",")]
    if sum(sizes) != args.layers:
        ap.error(f"--sizes {args.sizes} adds up to {sum(sizes)} layers, not {args.layers}")
    T = importlib.import_module(args.module)
    ckpt = importlib.import_module(f"{args.module}.utils.checkpoint")

    T.manual_seed(0)
    params = []
    for _ in range(args.layers):
        w = (T.randn(args.width, args.width) / args.width**0.5).requires_grad_()
        b = T.zeros(args.width, requires_grad=True)
        params.append((w, b))
    layers = [lambda h, w=w, b=b: T.tanh(T.addmm(b, h, w)) for w, b in params]
    x = T.randn(args.batch, args.width)

    def plain() -> None:
        h = x
        for f in layers:
            h = f(h)
        h.sum().backward()

    def sequential() -> None:
        ckpt.checkpoint_sequential(layers, args.segments, x, use_reentrant=False).sum().backward()

    def per_layer() -> None:
        h = x
        for f in layers:
            h = ckpt.checkpoint(f, h, use_reentrant=False)
        h.sum().backward()

    def segment(seg):
        def run(h):
            for f in seg:
                h = f(h)
            return h
        return run

    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    segments = [segment(layers[a:a + n]) for a, n in zip(starts, sizes)]

    def schedule() -> None:
        # segments of decreasing size, each but the last checkpointed: while segment j
        # is recomputed, the inputs of segments 2..j are alive besides its own layers,
        # so later segments are shorter (the sqrt-style schedules of Chen et al. 2016).
        # (a loop that keeps no reference: the step's output is freed as in the others)
        def upto(j):
            if j == 0:
                return x
            return ckpt.checkpoint(segments[j - 1], upto(j - 1), use_reentrant=False)
        segments[-1](upto(len(segments) - 1)).sum().backward()

    def clear() -> None:
        for w, b in params:
            w.grad = None
            b.grad = None

    def timed(run) -> float:
        for _ in range(2):
            run()
            clear()
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
            clear()
        return statistics.median(times) * 1e3

    def peak_bytes_torch(run) -> int:
        import json
        import os
        import tempfile

        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            run()
        fd, path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            prof.export_chrome_trace(path)
            with open(path) as f:
                events = json.load(f)["traceEvents"]
        finally:
            os.unlink(path)
        clear()
        records = sorted((e["ts"], e["args"]["Bytes"]) for e in events if e.get("name") == "[memory]")
        live = peak = 0
        for _at, nbytes in records:
            live += nbytes
            peak = max(peak, live)
        return peak

    def peak_bytes(run) -> int:
        if args.module == "torch":
            return peak_bytes_torch(run)
        from rgrad import _C

        _C._profiler_start(False, True, False, False)
        try:
            run()
        finally:
            records = _C._profiler_stop().memory()
        clear()
        live = peak = 0
        for _at, nbytes, _thread in sorted(records):
            live += nbytes
            peak = max(peak, live)
        return peak

    runs = {"plain": plain, "sequential": sequential, "schedule": schedule, "per-layer": per_layer}
    print(f"{args.module}  CPU: {cpu_model()}")
    print(
        f"{args.layers} layers tanh(h @ W + b), width {args.width}, batch {args.batch}, "
        f"float32, segments {args.segments}, schedule {args.sizes}, median of {args.reps}"
    )
    times = {name: timed(run) for name, run in runs.items()}
    peaks = {name: peak_bytes(run) for name, run in runs.items()}
    for name in runs:
        line = f"{name:>11}: {times[name]:8.2f} ms ({times[name] / times['plain']:.2f}x)"
        if peaks:
            line += f"  peak {peaks[name] / 2**20:8.1f} MiB ({peaks[name] / peaks['plain']:.3f}x)"
        print(line)


if __name__ == "__main__":
    main()
