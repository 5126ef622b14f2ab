"""CPU step replay against rgrad eager, in one process: W3 and a W1-style chain.

W3: one SGD training step of a 784-512-512-10 MLP, batch 128 (forward, nll_loss,
backward, ``p -= lr * p.grad``, ``p.grad = None``), as in ``bench.py``. W1: a 1,000-op
chain on a 1-element leaf, then backward (``x.grad = None`` first), as in ``bench.py``.
Eager and replayed runs alternate in blocks (eager, replay, then replay, eager, ...), each
block after one untimed run, so slow drifts of the machine hit both alike. The replayed
step is checked against eager bit for bit before timing.

Usage::

    python benches/replay_bench.py [--reps 7] [--block 20] [--json out.json]

Nothing here is a test: no timing is asserted. Targets (issue 19): W3 replayed <= 0.5x
eager, W1 replayed <= 0.2x eager.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import cpu_model  # noqa: E402
from bench import CHAIN_OPS, chain  # noqa: E402

import rgrad as T  # noqa: E402
import rgrad.nn.functional as F  # noqa: E402


def setup_w3(compiled: bool) -> Callable[[], Any]:
    T.manual_seed(0)

    def param(*shape: int) -> Any:
        return (T.randn(*shape, dtype=T.float32) * (1.0 / shape[-1] ** 0.5)).requires_grad_()

    params = [param(512, 784), param(512), param(512, 512), param(512), param(10, 512), param(10)]
    w1, b1, w2, b2, w3, b3 = params
    x = T.randn(128, 784, dtype=T.float32)
    y = T.randint(0, 10, (128,))
    lr = 0.01

    def step(x: Any, y: Any) -> Any:
        h = F.relu(F.linear(x, w1, b1))
        h = F.relu(F.linear(h, w2, b2))
        loss = F.nll_loss(F.log_softmax(F.linear(h, w3, b3), dim=1), y)
        loss.backward()
        with T.no_grad():
            for p in params:
                p -= lr * p.grad
                p.grad = None
        return loss

    if compiled:
        global _last_step
        s = _last_step = T.compile_step(step, x, y)
        return lambda: s(x, y)
    return lambda: step(x, y)


def setup_w1(compiled: bool) -> Callable[[], Any]:
    T.manual_seed(0)
    x = T.randn(1, dtype=T.float32).requires_grad_()
    a = T.full((1,), 0.1, dtype=T.float32)
    b = T.full((1,), 0.9, dtype=T.float32)

    def step() -> Any:
        x.grad = None
        out = chain(x, CHAIN_OPS, a, b).sum()
        out.backward()
        return out

    if compiled:
        global _last_step
        s = _last_step = T.compile_step(step)
        return lambda: s()
    return step


def bits(t: Any) -> bytes:
    return t.detach().numpy().tobytes()


def check_bit_exact(setup: Callable[[bool], Callable[[], Any]], steps: int = 4) -> None:
    e, c = setup(False), setup(True)
    for k in range(steps):
        if bits(e()) != bits(c()):
            raise SystemExit(f"replay differs from eager at step {k}")


def time_block(fn: Callable[[], Any], n: int) -> float:
    fn()
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t0) / n
    finally:
        gc.enable()


def program_stats(setup: Callable[[bool], Callable[[], Any]]) -> str:
    """What the recorded program holds: kernel calls and slots by kind."""
    global _last_step
    comp = setup(True)
    comp()
    prog = _last_step._program
    inter, ext, const = prog.slot_kinds
    return f"{prog.num_steps} kernel calls, {inter} intermediate / {ext} extern / {const} const buffers"


_last_step: Any = None


def measure(setup: Callable[[bool], Callable[[], Any]], reps: int, block: int) -> dict[str, Any]:
    eager, comp = setup(False), setup(True)
    comp()  # record
    es, cs = [], []
    for r in range(reps):
        order = [(eager, es), (comp, cs)] if r % 2 == 0 else [(comp, cs), (eager, es)]
        for fn, out in order:
            out.append(time_block(fn, block))
    me, mc = statistics.median(es), statistics.median(cs)
    return {
        "eager_ms": me * 1e3,
        "replay_ms": mc * 1e3,
        "eager_min_ms": min(es) * 1e3,
        "replay_min_ms": min(cs) * 1e3,
        "ratio": mc / me,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--block", type=int, default=20)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    print(f"CPU: {cpu_model()}; cores visible: {len(os.sched_getaffinity(0))}; "
          f"rgrad threads: {T.get_num_threads()}; load: {os.getloadavg()[0]:.2f}")
    results = {}
    for name, setup, target in (("W3", setup_w3, 0.5), ("W1", setup_w1, 0.2)):
        check_bit_exact(setup)
        r = measure(setup, args.reps, args.block if name == "W3" else max(args.block // 2, 3))
        r["target"] = target
        r["program"] = program_stats(setup)
        results[name] = r
        print(f"{name}: eager {r['eager_ms']:.3f} ms (min {r['eager_min_ms']:.3f}), "
              f"replayed {r['replay_ms']:.3f} ms (min {r['replay_min_ms']:.3f}), "
              f"ratio {r['ratio']:.3f} (target <= {target}: {'met' if r['ratio'] <= target else 'not met'}); "
              f"program: {r['program']}")
    if args.json:
        args.json.write_text(json.dumps({"cpu": cpu_model(), "results": results}, indent=2))


if __name__ == "__main__":
    main()
