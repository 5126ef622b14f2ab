"""Which op-table ops still run a kernel on the host for CUDA tensors (the backend's
fallback counter, per op, forward and backward, float32): the list of GPU kernels
issue 18 still owes.

    python tests_gpu/fallback_report.py
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import rgrad  # noqa: E402
from op_db import op_db  # noqa: E402
from test_cuda_ops import _run  # noqa: E402


def main():
    rows = []
    for op in op_db:
        if not op.samples or "float32" not in op.dtypes:
            continue
        before = rgrad._C._cuda_host_fallbacks()
        err = ""
        try:
            _run(op, op.samples[0], "float32", cuda=True)
        except Exception as e:  # noqa: BLE001  (reported, not fatal)
            err = f"{type(e).__name__}: {str(e)[:80]}"
        n = rgrad._C._cuda_host_fallbacks() - before
        if n or err:
            rows.append((op.name, n, err))
    print(f"{len(rows)} of {len(op_db)} ops took a host fallback or failed (first sample, float32):")
    for name, n, err in rows:
        print(f"  {name:40} {n:3d} {err}")


if __name__ == "__main__":
    main()
