#!/usr/bin/env python3
"""Prints the last `cargo bench` results (criterion's JSON files) as a markdown table.

Usage::

    python benches/criterion_table.py [--dir target/criterion] [--filter REGEX]

Reads ``<dir>/<group>/<bench>/new/{benchmark,estimates}.json`` (``--dir`` defaults to
``$CARGO_TARGET_DIR/criterion`` or ``target/criterion``). Time is criterion's slope
estimate (or the mean where there is no slope); throughput is derived from it: GB/s
(decimal) for byte counts, GFLOP/s for the GEMM and FMA-peak ids (their element count is
flops), ns per element (node or op) for the graph ids.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path
from typing import Any


def fmt_time(ns: float) -> str:
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def throughput(bench: dict[str, Any], ns: float) -> str:
    tp = bench.get("throughput") or {}
    ident = bench["full_id"]
    b = tp.get("BytesDecimal", tp.get("Bytes"))
    if b is not None:
        return f"{b / ns:.3g} GB/s"
    if "Elements" in tp:
        n = tp["Elements"]
        if ident.startswith(("matmul/", "floor/fma_peak")):
            return f"{n / ns:.4g} GFLOP/s"
        if n > 1:
            return f"{ns / n:.4g} ns/elem"
    return ""


def main() -> int:
    default = Path(os.environ.get("CARGO_TARGET_DIR", "target")) / "criterion"
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--dir", type=Path, default=default)
    ap.add_argument("--filter", default="", help="regex on the bench id")
    args = ap.parse_args()
    rows = []
    for bj in sorted(args.dir.glob("*/*/new/benchmark.json")):
        bench = json.loads(bj.read_text())
        if args.filter and not re.search(args.filter, bench["full_id"]):
            continue
        est = json.loads((bj.parent / "estimates.json").read_text())
        ns = (est.get("slope") or est["mean"])["point_estimate"]
        rows.append((bench["full_id"], fmt_time(ns), throughput(bench, ns)))
    if not rows:
        print(f"no criterion results under {args.dir}")
        return 1
    print("| bench | time | throughput |")
    print("| --- | ---: | ---: |")
    for r in rows:
        print(f"| `{r[0]}` | {r[1]} | {r[2]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
