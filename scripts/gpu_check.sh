#!/usr/bin/env bash
# The CUDA check on a GPU machine (issue 18): installs a wheel built elsewhere (no Rust or
# network needed there), runs the CUDA test suite and the CUDA benchmarks against torch,
# and writes one summary, $OUT/gpu_summary.txt (or ./gpu_summary.txt).
#
#   scripts/gpu_check.sh path/to/rgrad-*.whl
#
# Budget: under 8 minutes on an H100 (the suite is bounded by per-test timeouts).
set -uo pipefail
cd "$(dirname "$0")/.."
WHEEL=${1:?usage: scripts/gpu_check.sh rgrad-*.whl}
OUTDIR=${OUT:-.}
SUMMARY=$OUTDIR/gpu_summary.txt
PKG=$(mktemp -d)
export RGRAD_CACHE_DIR=$PKG/cache
{
  echo "== gpu_check $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -2
  python3 --version
  python3 -c "import torch; print('torch', torch.__version__)"
} > "$SUMMARY" 2>&1
python3 -m pip install -q --no-deps --no-index --target "$PKG" "$WHEEL" >> "$SUMMARY" 2>&1
export PYTHONPATH=$PKG
{
  echo "== first CUDA op (NVRTC compile, cold cache)"
  python3 -c "
import time, rgrad
t=time.perf_counter(); x=rgrad.ones(3, device='cuda'); y=(x*2).sum().item(); print('first op ready in %.3f s, value %s' % (time.perf_counter()-t, y))
print('device', rgrad.cuda.get_device_name(0), rgrad.cuda.get_device_capability(0))"
  echo "== CUDA test suite (tests_gpu/)"
  timeout 330 python3 -m pytest -q --timeout 60 -p no:benchmark -p no:cacheprovider tests_gpu/test_cuda_runtime.py 2>&1 | tail -25
  echo "== DLPack with torch, CuPy and JAX on the GPU (tests_gpu/test_cuda_exchange.py)"
  timeout 90 python3 -m pytest -q --timeout 60 -p no:benchmark -p no:cacheprovider tests_gpu/test_cuda_exchange.py 2>&1 | tail -15
  COLUMNS=400 timeout 220 python3 -m pytest -q -n 8 -p no:benchmark --timeout 120 --tb=no -rf -p no:cacheprovider \
    tests_gpu/test_cuda_ops.py > "$OUTDIR/cuda_ops.log" 2>&1
  tail -1 "$OUTDIR/cuda_ops.log"
  echo "-- failures by message (count, message, some of the ops):"
  grep "^FAILED" "$OUTDIR/cuda_ops.log" \
    | sed -E 's/^FAILED [^[]*\[([^]]*)-[0-9]+-float(32|64)\] - (.*)$/\3\t\1/' \
    | awk -F'\t' '{m=substr($1,1,150); n[m]++; if (!(m SUBSEP $2 in seen)) {seen[m SUBSEP $2]=1; if (length(o[m]) < 200) o[m]=o[m] " " $2}} END {for (m in n) printf "%5d %s |%s\n", n[m], m, o[m]}' \
    | sort -rn | head -40
  echo "== host fallbacks per op (tests_gpu/fallback_report.py)"
  timeout 120 python3 tests_gpu/fallback_report.py 2>&1 | head -150
  echo "== CUDA benchmarks (benches/cuda_bench.py)"
  timeout 150 python3 benches/cuda_bench.py --json "$OUTDIR/cuda_bench.json" 2>&1 | tail -30
} >> "$SUMMARY" 2>&1
cat "$SUMMARY"
