"""Two op sweeps of rgrad side by side: rgrad's time in A over its time in B, per case.

For a change measured as dev-release builds (fast to build) and checked once as the
release wheel users get (fat LTO, one codegen unit: the inliner and the loop unroller
decide differently there; float32 x^y once ran 10x slower in release than in dev-release),
or for before/after builds. Each sweep is one `benches/op_sweep.py --json` run; run the two
alternately, and again where a case stands out (the machines' memory is noisy).

    PYTHONPATH=/work/pkg-release python benches/op_sweep.py --sizes 256 --threads 1 --json a.json
    PYTHONPATH=/work/pkg-dev python benches/op_sweep.py --sizes 256 --threads 1 --json b.json
    python benches/compare_sweeps.py a.json b.json [--top 12]
"""

from __future__ import annotations

import argparse
import json


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", help="op_sweep.py --json output (the numerator)")
    ap.add_argument("b", help="op_sweep.py --json output (the denominator)")
    ap.add_argument("--top", type=int, default=12, help="cases to list at each end")
    args = ap.parse_args()
    with open(args.a) as fh:
        a = json.load(fh)
    with open(args.b) as fh:
        b = json.load(fh)
    print(f"A: {args.a} ({a.get('cpu')}, {a.get('threads')} threads); "
          f"B: {args.b} ({b.get('cpu')}, {b.get('threads')} threads)")
    for size, sa in a["sizes"].items():
        sb = b["sizes"].get(size)
        if sb is None:
            continue
        ra, rb = sa["times_us"]["rgrad"], sb["times_us"]["rgrad"]
        torch = sa["times_us"].get("torch", {})
        rows = sorted(((ra[k] / rb[k], k) for k in ra if k in rb and rb[k] > 0), reverse=True)
        print(f"\n{size}: {len(rows)} cases; A / B slowest first, then fastest")
        print(f"{'case':<30} {'A us':>10} {'B us':>10} {'A / B':>7} {'torch us':>10}")
        shown = rows[: args.top] + rows[-args.top:] if len(rows) > 2 * args.top else rows
        for r, k in shown:
            t = torch.get(k)
            print(f"{k:<30} {ra[k]:>10.2f} {rb[k]:>10.2f} {r:>7.2f} {t if t is None else f'{t:10.2f}':>10}")


if __name__ == "__main__":
    main()
