"""Zero-copy exchange timings (issue 19): DLPack export and import, NumPy sharing.

    python benches/exchange_bench.py [--reps N]

Each row is the median over `--reps` batches of 10,000 calls (µs per call), for a small
and a large tensor (the times should not depend on the size: nothing is copied), with
torch's figure for the same call beside it when torch is installed. Prints the CPU model.
"""

import argparse
import statistics
import time

import numpy as np

import rgrad
from _machine import cpu_model

try:
    import torch
except ImportError:
    torch = None

N = 10_000


def per_call(fn, reps):
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(N):
            fn()
        out.append((time.perf_counter() - t0) / N * 1e6)
    return statistics.median(out)


def cases(lib, n):
    if lib == "rgrad":
        t = rgrad.zeros(n)
        frm, to_dl = rgrad.from_dlpack, rgrad.utils.dlpack.to_dlpack
        imp = rgrad._C._from_dlpack
        from_np = rgrad.from_numpy
    else:
        t = torch.zeros(n)
        frm, to_dl = torch.from_dlpack, torch.utils.dlpack.to_dlpack
        imp = torch._C._from_dlpack
        from_np = torch.from_numpy
    a = np.zeros(n, dtype=np.float32)
    return {
        "export: t.__dlpack__(max_version=(1, 0))": lambda: t.__dlpack__(max_version=(1, 0)),
        "export: legacy to_dlpack(t)": lambda: to_dl(t),
        "import: _from_dlpack(capsule) (capsule made each call)": lambda: imp(a.__dlpack__(max_version=(1, 0))),
        "numpy -> lib: from_dlpack(array)": lambda: frm(a),
        "lib -> numpy: np.from_dlpack(t)": lambda: np.from_dlpack(t),
        "from_numpy(array)": lambda: from_np(a),
        "t.numpy()": lambda: t.numpy(),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    print(f"CPU: {cpu_model()}; rgrad vs torch {torch.__version__ if torch else '(not installed)'}; "
          f"µs per call, median of {args.reps} x {N}")
    a = np.zeros(16, dtype=np.float32)
    base = per_call(lambda: a.__dlpack__(max_version=(1, 0)), args.reps)
    print(f"(making NumPy's capsule alone: {base:.3f} µs, included in the import row)")
    print("| call | size | rgrad | torch |")
    print("|---|---|---|---|")
    for n in (16, 10_000_000):
        mine = cases("rgrad", n)
        theirs = cases("torch", n) if torch is not None else {}
        for name, fn in mine.items():
            r = per_call(fn, args.reps)
            t = f"{per_call(theirs[name], args.reps):.3f}" if name in theirs else "-"
            print(f"| {name} | {n} | {r:.3f} | {t} |")


if __name__ == "__main__":
    main()
