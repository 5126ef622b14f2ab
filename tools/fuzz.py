"""Run the random-program fuzzer (tests/fuzz_programs.py) for many cases, surviving panics,
crashes and hangs: cases run in worker subprocesses, a chunk at a time; a worker that dies or
stops answering is replaced and the case is recorded. Prints one summary line:

    cases=N mismatches=M panics=P hangs=H known=K torch_invalid=I wall=Ss

Usage: python tools/fuzz.py --cases 100000 --seed 0 [--jobs 2] [--timeout 20] [--no-torch]
Failures go to --out (JSON lines: case, category, message, program). See docs/fuzzing.md.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))


def worker(args) -> None:
    import warnings

    warnings.simplefilter("ignore")
    import fuzz_programs as fp

    import rgrad

    torch_mod = None
    if not args.no_torch:
        try:
            import torch as torch_mod

            torch_mod.set_num_threads(1)
        except ImportError:
            pass
    out = sys.stdout
    for i in range(args.start, args.stop):
        out.write(json.dumps({"start": i}) + "\n")
        out.flush()
        try:
            f = fp.run_program(fp.RandomSource(f"{args.seed}:{i}"), rgrad, torch_mod, check_numpy=True)
        except Exception as e:  # noqa: BLE001 - a fuzzer bug must not end the run
            f = fp.Failure("harness", f"{type(e).__name__}: {e}")
        rec = {"case": i, "category": "ok"}
        if f is not None:
            rec = {"case": i, "category": f.category, "message": f.message, "program": f.repro()}
        out.write(json.dumps(rec) + "\n")
        out.flush()


def signature(msg: str) -> str:
    return re.sub(r"v\d+|-?\d+(\.\d+)?(e-?\d+)?", "#", msg)[:110]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--seed", default="0")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=1000)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds one case may take before it is a hang")
    ap.add_argument("--no-torch", action="store_true", help="check against NumPy only")
    ap.add_argument("--out", default="fuzz-failures.jsonl")
    ap.add_argument("--show", type=int, default=25, help="distinct failure signatures to print")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--stop", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return

    t0 = time.time()
    chunks: queue.Queue = queue.Queue()
    for a in range(0, args.cases, args.chunk):
        chunks.put((a, min(a + args.chunk, args.cases)))
    lock = threading.Lock()
    counts = collections.Counter()
    sigs: dict[str, list] = {}
    outf = open(args.out, "w")  # noqa: SIM115

    def record(rec):
        with lock:
            counts["cases"] += 1
            cat = rec["category"]
            if cat != "ok":
                counts[cat] += 1
                outf.write(json.dumps(rec) + "\n")
                outf.flush()
                key = f"{cat} {signature(rec.get('message', ''))}"
                sigs.setdefault(key, [0, rec])[0] += 1

    env = dict(os.environ, RGRAD_NUM_THREADS="1", RUST_BACKTRACE="0", OMP_NUM_THREADS="1")

    def run_range(a, b):
        while a < b:
            cmd = [sys.executable, __file__, "--worker", "--seed", str(args.seed), "--start", str(a), "--stop", str(b)]
            if args.no_torch:
                cmd.append("--no-torch")
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
            lines: queue.Queue = queue.Queue()
            threading.Thread(target=lambda: [lines.put(ln) for ln in p.stdout] + [lines.put(None)], daemon=True).start()
            current = None
            while True:
                try:
                    ln = lines.get(timeout=args.timeout * (3 if current is None else 1))  # startup imports
                except queue.Empty:
                    p.kill()
                    p.wait()
                    i = current if current is not None else a
                    record({"case": i, "category": "hang", "message": f"no answer in {args.timeout}s"})
                    a = i + 1
                    break
                if ln is None:  # the worker ended
                    rc = p.wait()
                    if current is not None:  # died inside a case: abort, segfault, OOM kill
                        record({"case": current, "category": "panic", "message": f"worker died (exit {rc})"})
                        a = current + 1
                    break
                rec = json.loads(ln)
                if "start" in rec:
                    current = rec["start"]
                    continue
                record(rec)
                current = None
                a = rec["case"] + 1
            else:
                pass

    def slot():
        while True:
            try:
                a, b = chunks.get_nowait()
            except queue.Empty:
                return
            run_range(a, b)

    threads = [threading.Thread(target=slot) for _ in range(max(1, args.jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    outf.close()
    wall = time.time() - t0
    for key, (n, rec) in sorted(sigs.items(), key=lambda kv: -kv[1][0])[: args.show]:
        print(f"{n:6d}  {key}  (e.g. case {rec['case']})")
    print(
        f"cases={counts['cases']} mismatches={counts['mismatch']} panics={counts['panic']} "
        f"hangs={counts['hang']} known={counts['known']} torch_invalid={counts['torch_invalid']} "
        f"harness_errors={counts['harness']} "
        f"wall={wall:.0f}s seed={args.seed} "
        f"torch={'no' if args.no_torch else 'yes'}"
    )


if __name__ == "__main__":
    main()
