#!/usr/bin/env python3
"""What the profiler and anomaly mode cost (issue 16's goals), rgrad and torch in one run.

For W1 (the 1,000-op chain on a 1-element tensor, forward + backward) and W3 (the MLP
784-512-512-10 training step, batch 128), each library runs the workload plain, under
``autograd.profiler.profile()`` and under ``autograd.detect_anomaly()``, the three modes
alternating in blocks so that drifts of the machine hit all alike; the report gives the
median of each and the ratios to plain. It also gives rgrad's cost per recorded event
(profiled minus plain W1 time, over the events one step records), the time of
``key_averages()`` over a recording of 1,000,000 events, and the memory those events
hold while recorded.

Usage::

    python benches/profiler_bench.py [--reps N] [--no-torch] [--json out.json]

Nothing here is a test: no timing is asserted. Figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).parent))
from bench import Lib, load_lib, setup_chain, setup_mlp  # noqa: E402

from _machine import cpu_model

MODES = ("plain", "profiler", "anomaly")


def mode_context(lib: Lib, mode: str) -> contextlib.AbstractContextManager[Any]:
    if mode == "profiler":
        return lib.T.autograd.profiler.profile()
    if mode == "anomaly":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return lib.T.autograd.detect_anomaly()
    return contextlib.nullcontext()


def measure(lib: Lib, setup: Callable[[Lib], Callable[[], Any]], reps: int, block: int) -> dict[str, list[float]]:
    step = setup(lib)
    times: dict[str, list[float]] = {m: [] for m in MODES}
    rounds = max(1, reps // block)
    for r in range(rounds):
        order = MODES if r % 2 == 0 else tuple(reversed(MODES))
        for mode in order:
            with mode_context(lib, mode):
                step()  # untimed
                for _ in range(block):
                    gc.disable()
                    t = time.perf_counter()
                    step()
                    times[mode].append(time.perf_counter() - t)
                    gc.enable()
    return times


def events_per_w1_step(lib: Lib) -> int:
    step = setup_chain(lib, 1)
    with lib.T.autograd.profiler.profile() as prof:
        step()
    return len(prof._recording) if hasattr(prof, "_recording") else len(prof.function_events)


def key_averages_of_a_million(lib: Lib) -> dict[str, float]:
    """Records 1,000,000 events (1-element ops), then times key_averages() and reads
    the resident memory the recording adds: the growth over the same loop run unprofiled
    first (which leaves the allocator's own caches warm)."""
    T = lib.T
    x = T.ones(1)
    n_ops = 1_000_000

    def loop() -> None:
        for _ in range(n_ops // 4):
            y = x + 1
            y = y * 2
            y = y - 1
            y = y.neg()

    loop()
    gc.collect()
    rss0 = _rss_kb()
    with T.autograd.profiler.profile() as prof:
        loop()
    rss1 = _rss_kb()
    t = time.perf_counter()
    avg = prof.key_averages()
    dt = time.perf_counter() - t
    n = sum(a.count for a in avg)
    return {"events": n, "key_averages_s": dt, "recorded_mb": (rss1 - rss0) / 1024}


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    libs = [lib for lib in (load_lib("rgrad"), None if args.no_torch else load_lib("torch")) if lib]
    report: dict[str, Any] = {"cpu": cpu_model(), "python": platform.python_version(), "results": {}}
    print(f"CPU: {report['cpu']}")
    workloads = {"W1": (lambda lib: setup_chain(lib, 1), 5), "W3": (setup_mlp, 5)}
    for name, (setup, block) in workloads.items():
        for lib in libs:
            times = measure(lib, setup, args.reps, block)
            med = {m: statistics.median(v) for m, v in times.items()}
            row = {
                "median_s": med,
                "profiler_ratio": med["profiler"] / med["plain"],
                "anomaly_ratio": med["anomaly"] / med["plain"],
            }
            if name == "W1":
                events = events_per_w1_step(lib)
                row["events_per_step"] = events
                row["ns_per_event"] = (med["profiler"] - med["plain"]) / events * 1e9
            report["results"][f"{name}/{lib.name}"] = row
            extra = f", {row['ns_per_event']:.0f} ns per event" if "ns_per_event" in row else ""
            print(
                f"{name} {lib.name:6s} plain {med['plain'] * 1e3:8.3f} ms  profiler x{row['profiler_ratio']:.2f}  "
                f"anomaly x{row['anomaly_ratio']:.2f}{extra}"
            )
    rg = libs[0]
    big = key_averages_of_a_million(rg)
    report["results"]["1M events/rgrad"] = big
    print(
        f"rgrad: key_averages over {big['events']:,} events {big['key_averages_s']:.3f} s, "
        f"recording held {big['recorded_mb']:.0f} MB"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
