#!/usr/bin/env python3
"""rgrad against torch on the issue's workloads W1..W8, in one process, alternating.

Every workload is written once against a library module ``T`` (``rgrad`` or ``torch``):
rgrad mirrors torch's API, so both run exactly the same Python code. When ``import torch``
works, the two libraries alternate in blocks of back-to-back repetitions (rgrad, torch,
then torch, rgrad, ...; each block after one untimed run) so slow drifts of the machine
(turbo, other processes) hit both alike. Each workload id runs in a fresh interpreter of
its own (``--no-isolate``: all in this one).
The script reports the median (with min and interquartile range) per workload, the ratio
rgrad/torch of the medians, and whether the issue's target is met; it records the
machine (CPU, flags, cores, versions, thread counts, load from other processes).

Usage::

    python benches/bench.py [--quick] [--only W1,W3] [--json out.json] [--markdown]
                            [--wheel dist/rgrad-*.whl] [--no-torch] [--threads N]
                            [--reps N] [--no-isolate]

Nothing here is a test: no timing is ever asserted. See docs/benchmarks.md for what each
workload measures and the latest table.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

# ---- libraries -------------------------------------------------------------------------


@dataclass
class Lib:
    """One library under test: the module and its nn.functional."""

    name: str
    T: Any
    F: Any

    @property
    def version(self) -> str:
        return str(getattr(self.T, "__version__", "?"))


def load_lib(name: str) -> Lib | None:
    try:
        T = importlib.import_module(name)
        F = importlib.import_module(f"{name}.nn.functional")
    except ImportError:
        return None
    return Lib(name, T, F)


# ---- workloads (written once, parametrised by the library) -----------------------------

CHAIN_OPS = 1000
W5_NODES = 100_000


def chain(h: Any, n: int, a: Any, b: Any) -> Any:
    """n elementwise ops cycling add, mul, sin, exp, tanh (values stay in a bounded range:
    tanh and sin bring them back to [-1, 1] every cycle)."""
    for i in range(n):
        k = i % 5
        if k == 0:
            h = h + a
        elif k == 1:
            h = h * b
        elif k == 2:
            h = h.sin()
        elif k == 3:
            h = h.exp()
        else:
            h = h.tanh()
    return h


class Clock:
    """Collects named phase times of one repetition."""

    def __init__(self) -> None:
        self.t = time.perf_counter()
        self.phases: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.phases[name] = now - self.t
        self.t = now


def setup_chain(lib: Lib, numel: int) -> Callable[[], dict[str, float]]:
    """W1 / W2: a 1,000-op chain on a leaf of `numel` elements, then backward."""
    T = lib.T
    T.manual_seed(0)
    x = T.randn(numel, dtype=T.float32).requires_grad_()
    a = T.full((numel,), 0.1, dtype=T.float32)
    b = T.full((numel,), 0.9, dtype=T.float32)

    def step() -> dict[str, float]:
        x.grad = None
        c = Clock()
        chain(x, CHAIN_OPS, a, b).sum().backward()
        c.lap("total")
        return c.phases

    return step


def setup_mlp(lib: Lib) -> Callable[[], dict[str, float]]:
    """W3: one SGD training step of a 784-512-512-10 MLP, batch 128."""
    T, F = lib.T, lib.F
    T.manual_seed(0)

    def param(*shape: int) -> Any:
        return (T.randn(*shape, dtype=T.float32) * (1.0 / shape[-1] ** 0.5)).requires_grad_()

    w1, b1 = param(512, 784), param(512)
    w2, b2 = param(512, 512), param(512)
    w3, b3 = param(10, 512), param(10)
    params = [w1, b1, w2, b2, w3, b3]
    x = T.randn(128, 784, dtype=T.float32)
    y = T.randint(0, 10, (128,))
    lr = 0.01

    def step() -> dict[str, float]:
        c = Clock()
        h = F.relu(F.linear(x, w1, b1))
        h = F.relu(F.linear(h, w2, b2))
        loss = F.nll_loss(F.log_softmax(F.linear(h, w3, b3), dim=1), y)
        loss.backward()
        with T.no_grad():
            for p in params:
                p -= lr * p.grad
                p.grad = None
        c.lap("total")
        return c.phases

    return step


def setup_wide(lib: Lib, numel: int) -> Callable[[], dict[str, float]]:
    """W4: 32 independent branches of 20 elementwise ops each from one leaf, summed."""
    T = lib.T
    T.manual_seed(0)
    x = T.randn(numel, dtype=T.float32).requires_grad_()

    def branch(bi: int) -> Any:
        h = x * (1.0 + bi / 32.0)  # op 1 of 20
        for k in range(19):
            op = (bi + k) % 5
            if op == 0:
                h = h.sin()
            elif op == 1:
                h = h.tanh()
            elif op == 2:
                h = h * x
            elif op == 3:
                h = h + 0.01 * bi
            else:
                h = h.exp()
        return h

    def step() -> dict[str, float]:
        x.grad = None
        c = Clock()
        total = branch(0)
        for bi in range(1, 32):
            total = total + branch(bi)
        total.sum().backward()
        c.lap("total")
        return c.phases

    return step


def setup_big_graph(lib: Lib) -> Callable[[], dict[str, float]]:
    """W5: a 100,000-node scalar graph: build, backward, free (phases timed separately)."""
    T = lib.T
    a = T.tensor(0.1, dtype=T.float32)
    b = T.tensor(0.9, dtype=T.float32)

    def step() -> dict[str, float]:
        x = T.tensor(0.5, dtype=T.float32).requires_grad_()
        c = Clock()
        h = chain(x, W5_NODES, a, b)
        c.lap("build")
        h.backward()
        c.lap("backward")
        del h  # the last reference to the graph (backward freed its saved tensors)
        c.lap("free")
        return c.phases

    return step


def make_function(T: Any) -> Any:
    """A custom Function computing exp(-x) (iterating it converges, so values stay finite)."""

    class NegExp(T.autograd.Function):  # type: ignore[misc]  # T is a module: Any
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            y = (-x).exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            (y,) = ctx.saved_tensors
            return -grad * y  # d/dx exp(-x) = -exp(-x)

    return NegExp


def setup_function(lib: Lib) -> Callable[[], dict[str, float]]:
    """W6: a Python custom Function applied 1,000 times in a chain, then backward."""
    T = lib.T
    if not hasattr(T.autograd, "Function"):
        raise Skip(f"{lib.name}.autograd.Function is missing")
    fn = make_function(T)
    x = T.randn(1, dtype=T.float32).requires_grad_()

    def step() -> dict[str, float]:
        x.grad = None
        c = Clock()
        h = x
        for _ in range(CHAIN_OPS):
            h = fn.apply(h)
        h.sum().backward()
        c.lap("total")
        return c.phases

    return step


def setup_double_backward(lib: Lib) -> Callable[[], dict[str, float]]:
    """W7: grad of grad (create_graph=True) of sum(tanh(x)**3), 4,096 elements."""
    T = lib.T
    T.manual_seed(0)
    x = T.randn(4096, dtype=T.float32).requires_grad_()

    def step() -> dict[str, float]:
        c = Clock()
        y = (x.tanh() ** 3).sum()
        (g,) = T.autograd.grad(y, x, create_graph=True)
        (gg,) = T.autograd.grad(g.sum(), x)
        c.lap("total")
        return c.phases

    return step


class Skip(Exception):
    """A workload that cannot run on a library (the reason is printed)."""


# ---- rows of the report ----------------------------------------------------------------

US_PER_OP = 1e6 / CHAIN_OPS


@dataclass
class Row:
    key: str  # workload id, for --only
    phase: str  # which phase of the step this row reports
    label: str
    unit: str
    scale: float  # seconds (or bytes) -> unit
    target: tuple[str, float]  # ("ratio", x): rgrad/torch <= x; ("abs", x): rgrad <= x (in unit)


@dataclass
class Workload:
    key: str
    title: str
    setup: Callable[[Lib], Callable[[], dict[str, float]]] | None  # None: measured specially
    rows: list[Row]
    reps: int
    quick_reps: int
    warmup: int = 2


WORKLOADS = [
    Workload(
        "W1", "1,000-op chain on a 1-element tensor, fwd+bwd", lambda lib: setup_chain(lib, 1),
        [Row("W1", "total", "W1 tiny ops (1 elem), per op", "us/op", US_PER_OP, ("ratio", 0.15))], 30, 7,
    ),
    Workload(
        "W2", "1,000-op chain on 4,096-element tensors, fwd+bwd", lambda lib: setup_chain(lib, 4096),
        [Row("W2", "total", "W2 chain (4096 elem), per op", "us/op", US_PER_OP, ("ratio", 0.5))], 30, 7,
    ),
    Workload(
        "W3", "MLP 784-512-512-10 training step, batch 128", setup_mlp,
        [Row("W3", "total", "W3 MLP train step", "ms", 1e3, ("ratio", 0.6))], 30, 7,
    ),
    Workload(
        "W4", "32 branches x 20 ops from one 4,096-element leaf, fwd+bwd", lambda lib: setup_wide(lib, 4096),
        [Row("W4", "total", "W4 wide graph, 4K", "ms", 1e3, ("ratio", 0.5))], 20, 5,
    ),
    Workload(
        "W4", "32 branches x 20 ops from one 65,536-element leaf, fwd+bwd", lambda lib: setup_wide(lib, 65536),
        [Row("W4", "total", "W4 wide graph, 64K", "ms", 1e3, ("ratio", 0.6))], 15, 4,
    ),
    Workload(
        "W5", "100,000-node scalar graph: build / backward / free", setup_big_graph,
        [
            Row("W5", "build", "W5 100k-node graph: build", "ms", 1e3, ("ratio", 0.25)),
            Row("W5", "backward", "W5 100k-node graph: backward", "ms", 1e3, ("ratio", 0.2)),
            Row("W5", "free", "W5 100k-node graph: free", "ms", 1e3, ("ratio", 0.1)),
        ],
        7, 3, warmup=1,
    ),
    Workload(
        "W5", "peak RSS growth of building + backward of the 100,000-node graph (subprocess)", None,
        [Row("W5", "memory", "W5 100k-node graph: peak memory growth", "MB", 1e-6, ("ratio", 0.5))], 3, 1,
    ),
    Workload(
        "W6", "custom Function (exp-like, save_for_backward) x 1,000 in a chain, fwd+bwd", setup_function,
        [Row("W6", "total", "W6 custom Function, per apply", "us/op", US_PER_OP, ("ratio", 0.35))], 20, 5,
    ),
    Workload(
        "W7", "grad of grad of sum(tanh(x)**3), 4,096 elements", setup_double_backward,
        [Row("W7", "total", "W7 double backward", "ms", 1e3, ("ratio", 0.5))], 30, 7,
    ),
    Workload(
        "W8", "`import` in a fresh interpreter (median of subprocesses)", None,
        [Row("W8", "import", "W8 import time", "ms", 1e3, ("abs", 50.0))], 9, 3,
    ),
    Workload(
        "W8", "wheel size", None,
        [Row("W8", "wheel", "W8 wheel size", "MB", 1e-6, ("abs", 15.0))], 1, 1,
    ),
]


# ---- timing ----------------------------------------------------------------------------


BLOCK = 5
# Before each block: long enough for the other library's idle threads to stop spinning
# (torch's OpenMP workers spin for milliseconds after a parallel region; rayon's less).
SETTLE_S = 0.1
# Then untimed repetitions for at least this long (at least one): thread pools awake,
# caches and allocator warm, the CPU's clock up again after the pause.
WARM_S = 0.05


def timed_block(step: Callable[[], dict[str, float]], k: int) -> list[dict[str, float]]:
    """`k` back-to-back timed repetitions after untimed warm-up runs, with the cyclic GC
    off (as timeit does) and one full collection before the block. Back to back is how a
    loop runs a step; a collection or a pause before every repetition would measure
    something else: threads of both libraries asleep and, on a VM, idle virtual CPUs that
    take tens of microseconds to wake (a full collection before each repetition of W7
    made both libraries 4-8 times slower). The pause before the block lets the other
    library's idle threads stop spinning (torch's OpenMP threads spin for milliseconds
    after each parallel region and slowed rgrad's W3 step from 1.8 to 3.3 ms when blocks
    followed each other directly); the warm-up runs then bring this library back to the
    steady state of a loop (after a pause the first W3 steps take 1.5x longer)."""
    gc.collect()
    time.sleep(SETTLE_S)
    gc.disable()
    try:
        t0 = time.perf_counter()
        step()
        while time.perf_counter() - t0 < WARM_S:
            step()
        return [step() for _ in range(k)]
    finally:
        gc.enable()


def run_interleaved(wl: Workload, libs: list[Lib], reps: int, log: Callable[[str], None]) -> dict[str, Any]:
    """Runs `wl` on every library, alternating libraries block by block (BLOCK repetitions
    each; the order flips each round). Returns {lib: {phase: [seconds...]}} or
    {lib: "skip reason"}."""
    steps: dict[str, Callable[[], dict[str, float]]] = {}
    out: dict[str, Any] = {}
    for lib in libs:
        try:
            assert wl.setup is not None
            steps[lib.name] = wl.setup(lib)
        except Skip as e:
            out[lib.name] = f"skipped: {e}"
            log(f"  {wl.key}: {lib.name} skipped ({e})")
    names = list(steps)
    for n in names:
        timed_block(steps[n], wl.warmup)
    samples: dict[str, dict[str, list[float]]] = {n: {} for n in names}
    done, r = 0, 0
    while done < reps:
        k = min(BLOCK, reps - done)
        for n in names if r % 2 == 0 else names[::-1]:
            for rep in timed_block(steps[n], k):
                for phase, s in rep.items():
                    samples[n].setdefault(phase, []).append(s)
        done, r = done + k, r + 1
    out.update(samples)
    return out


# ---- W5 memory and W8: measured in fresh interpreters ------------------------------------


def _status_kb(field_name: str) -> int:
    with open("/proc/self/status") as f:
        m = re.search(rf"^{field_name}:\s+(\d+) kB", f.read(), re.M)
    return int(m.group(1)) if m else 0


def w5_memory_child(name: str) -> None:
    """(In a subprocess.) Peak RSS growth while building and back-propagating the W5 graph."""
    lib = load_lib(name)
    assert lib is not None, name
    T = lib.T
    a, b = T.tensor(0.1, dtype=T.float32), T.tensor(0.9, dtype=T.float32)
    # warm up: first-use allocations (pools, arenas, caches) are not the graph's cost
    x = T.tensor(0.5, dtype=T.float32).requires_grad_()
    chain(x, 1000, a, b).backward()
    del x
    gc.collect()
    reset = True
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
    except OSError:
        reset = False
    base = _status_kb("VmRSS")
    x = T.tensor(0.5, dtype=T.float32).requires_grad_()
    h = chain(x, W5_NODES, a, b)
    built = _status_kb("VmRSS")
    h.backward()
    peak = _status_kb("VmHWM")
    print(json.dumps({"base_kb": base, "after_build_kb": built, "peak_kb": peak, "hwm_reset": reset}))


def measure_w5_memory(libs: list[Lib], reps: int) -> dict[str, Any]:
    out: dict[str, Any] = {lib.name: {"memory": []} for lib in libs}
    extra: dict[str, list[dict[str, Any]]] = {lib.name: [] for lib in libs}
    for r in range(reps):
        for lib in libs if r % 2 == 0 else libs[::-1]:
            p = subprocess.run(
                [sys.executable, __file__, "--_w5-memory-child", lib.name],
                capture_output=True, text=True, check=True,
            )
            d = json.loads(p.stdout.strip().splitlines()[-1])
            extra[lib.name].append(d)
            # growth over the baseline, in bytes (the row's scale turns it into MB)
            out[lib.name]["memory"].append((d["peak_kb"] - d["base_kb"]) * 1024.0)
    out["_detail"] = extra
    return out


def measure_import(libs: list[Lib], reps: int) -> dict[str, Any]:
    """Seconds spent in `import <lib>` in a fresh interpreter, timed inside it (interpreter
    start-up excluded); also the whole subprocess wall time minus an empty interpreter's."""
    code = "import time; t = time.perf_counter(); import {m}; print(time.perf_counter() - t)"
    out: dict[str, Any] = {lib.name: {"import": []} for lib in libs}
    wall: dict[str, list[float]] = {lib.name: [] for lib in libs}
    empty: list[float] = []

    def run(args: list[str]) -> tuple[float, str]:
        t = time.perf_counter()
        p = subprocess.run([sys.executable, *args], capture_output=True, text=True, check=True)
        return time.perf_counter() - t, p.stdout

    for lib in libs:  # one untimed run each: page cache
        run(["-c", code.format(m=lib.name)])
    for r in range(reps):
        empty.append(run(["-c", "pass"])[0])
        for lib in libs if r % 2 == 0 else libs[::-1]:
            w, s = run(["-c", code.format(m=lib.name)])
            out[lib.name]["import"].append(float(s.strip()))
            wall[lib.name].append(w)
    out["_detail"] = {
        n: {"subprocess_wall_minus_empty_ms": 1e3 * (statistics.median(v) - statistics.median(empty))}
        for n, v in wall.items()
    }
    for lib in libs:
        pyc = Path(importlib.util.cache_from_source(lib.T.__file__))
        if not pyc.exists():
            # pip writes bytecode at install; an unpacked or editable tree under
            # PYTHONDONTWRITEBYTECODE would be timed compiling its sources every time
            out["_detail"][lib.name]["warning"] = f"no bytecode cache ({pyc}): import time includes compiling"
            print(f"  W8: {lib.name} has no bytecode cache; run `python -m compileall` on it", file=sys.stderr)
    return out


def measure_wheel(rgrad: Lib, wheel: str | None) -> dict[str, Any]:
    """The wheel's size if a path was given, else an estimate from the installed package:
    its files deflated one by one, as a wheel (a zip) stores them."""
    if wheel:
        size = os.path.getsize(wheel)
        how = f"wheel file {wheel}"
        detail: dict[str, Any] = {"wheel": wheel}
    else:
        pkg = Path(rgrad.T.__file__).parent
        files = [p for p in pkg.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        raw = sum(p.stat().st_size for p in files)
        so = sum(p.stat().st_size for p in files if p.suffix in (".so", ".pyd"))
        size = sum(len(zlib.compress(p.read_bytes(), 6)) for p in files)
        how = f"estimated: installed package {pkg} deflated (raw {raw / 1e6:.2f} MB, of which _C {so / 1e6:.2f} MB)"
        detail = {"installed_raw_bytes": raw, "native_module_bytes": so}
    detail["how"] = how
    return {rgrad.name: {"wheel": [float(size)]}, "_detail": {rgrad.name: detail}}


# ---- machine ---------------------------------------------------------------------------

FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16", "amx_tile")


def machine(libs: list[Lib]) -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "platform": platform.platform(),
        "os.cpu_count": os.cpu_count(),
    }
    if hasattr(os, "sched_getaffinity"):
        info["affinity_cpus"] = len(os.sched_getaffinity(0))
    try:
        text = Path("/proc/cpuinfo").read_text()
        m = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
        info["cpu_model"] = m.group(1).strip() if m else "?"
        fm = re.search(r"^flags\s*:\s*(.*)$", text, re.M)
        flags = set(fm.group(1).split()) if fm else set()
        info["cpu_flags"] = [f for f in FLAGS if f in flags]
        cores = set(re.findall(r"physical id\s*:\s*(\d+)\s*\n(?:.*\n)*?core id\s*:\s*(\d+)", text))
        if cores:
            info["physical_cores"] = len(cores)
        mem = re.search(r"^MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text(), re.M)
        if mem:
            info["memory_gb"] = round(int(mem.group(1)) / 2**20, 1)
    except OSError:
        info["cpu_model"] = platform.processor() or "?"
    info["loadavg_start"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    env_vars = ("RGRAD_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONPATH")
    info["env"] = {k: os.environ[k] for k in env_vars if k in os.environ}
    for lib in libs:
        d: dict[str, Any] = {"version": lib.version, "path": str(Path(lib.T.__file__).parent)}
        if hasattr(lib.T, "get_num_threads"):
            d["num_threads"] = lib.T.get_num_threads()
        native = getattr(getattr(lib.T, "_C", None), "__file__", None)
        if lib.name == "rgrad" and native:
            # identifies the build under test (a dev build's unstripped _C is much larger)
            st = os.stat(native)
            d["native_module"] = f"{Path(native).name}, {st.st_size / 1e6:.1f} MB, built " + time.strftime(
                "%Y-%m-%d %H:%M", time.localtime(st.st_mtime)
            )
        if lib.name == "torch":
            d["num_interop_threads"] = lib.T.get_num_interop_threads()
            d["mkldnn"] = bool(lib.T.backends.mkldnn.is_available())
            d["mkl"] = bool(lib.T.backends.mkl.is_available())
        info[lib.name] = d
    return info


class ForeignLoad:
    """CPU time used by other processes while the benchmarks ran, as a share of the
    machine (all cores x wall time): a high figure means the timings are distorted."""

    def __init__(self) -> None:
        self.start = self._sample()

    @staticmethod
    def _sample() -> tuple[float, float, float] | None:
        try:
            fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        except (OSError, ValueError):
            return None
        hz = os.sysconf("SC_CLK_TCK")
        busy = (sum(fields[:8]) - fields[3] - fields[4]) / hz  # all but idle and iowait
        t = os.times()
        own = t.user + t.system + t.children_user + t.children_system
        return busy, own, time.monotonic()

    def percent(self) -> float | None:
        end = self._sample()
        if self.start is None or end is None:
            return None
        busy, own, wall = (e - s for e, s in zip(end, self.start))
        return max(0.0, 100.0 * (busy - own) / (wall * (os.cpu_count() or 1)))


# ---- report ----------------------------------------------------------------------------


def summarize(xs: list[float], scale: float) -> dict[str, Any]:
    raw = [x * scale for x in xs]
    v = sorted(raw)
    q = statistics.quantiles(v, n=4, method="inclusive") if len(v) > 1 else [v[0], v[0], v[0]]
    return {"median": statistics.median(v), "min": v[0], "iqr": q[2] - q[0], "n": len(v), "samples": raw}


def evaluate(row: Row, res: dict[str, Any]) -> dict[str, Any]:
    rec: dict[str, Any] = {"workload": row.key, "label": row.label, "unit": row.unit}
    for name in ("rgrad", "torch"):
        r = res.get(name)
        if isinstance(r, str):
            rec[name] = r
        elif isinstance(r, dict) and row.phase in r:
            rec[name] = summarize(r[row.phase], row.scale)
    kind, bound = row.target
    rec["target"] = f"ratio <= {bound:g}" if kind == "ratio" else f"<= {bound:g} {row.unit}"
    rg, th = rec.get("rgrad"), rec.get("torch")
    if isinstance(rg, dict) and isinstance(th, dict) and th["median"] > 0:
        rec["ratio"] = rg["median"] / th["median"]
    value = rec.get("ratio") if kind == "ratio" else (rg["median"] if isinstance(rg, dict) else None)
    rec["met"] = None if value is None else bool(value <= bound)
    if "_detail" in res:
        rec["detail"] = res["_detail"]
    return rec


def fmt_value(v: Any) -> str:
    if isinstance(v, str):
        return "skipped"
    if not isinstance(v, dict):
        return "—"
    m = v["median"]
    digits = 3 if m < 10 else (2 if m < 100 else 1)
    return f"{m:.{digits}f}"


def fmt_spread(v: Any) -> str:
    if isinstance(v, str):
        return v
    if not isinstance(v, dict):
        return ""
    return f"min {v['min']:.3g}, IQR {v['iqr']:.2g}, n={v['n']}"


def met_text(m: bool | None) -> str:
    return "—" if m is None else ("yes" if m else "no")


def print_text(records: list[dict[str, Any]]) -> None:
    hdr = f"{'workload':44} {'unit':6} {'rgrad':>10} {'torch':>10} {'ratio':>7}  {'target':15} met"
    print(hdr)
    print("-" * len(hdr))
    for r in records:
        ratio = f"{r['ratio']:.3f}" if "ratio" in r else "—"
        print(
            f"{r['label']:44} {r['unit']:6} {fmt_value(r.get('rgrad')):>10} {fmt_value(r.get('torch')):>10} "
            f"{ratio:>7}  {r['target']:15} {met_text(r['met'])}"
        )
        spreads = [f"{n}: {fmt_spread(r.get(n))}" for n in ("rgrad", "torch") if r.get(n) is not None]
        if spreads:
            print(f"{'':51}" + "; ".join(spreads))


def print_markdown(records: list[dict[str, Any]], info: dict[str, Any], command: str) -> None:
    print(f"Command: `{command}`\n")
    print("| workload | unit | rgrad | torch | ratio | target | met |")
    print("| --- | --- | ---: | ---: | ---: | --- | --- |")
    for r in records:
        ratio = f"{r['ratio']:.3f}" if "ratio" in r else "—"
        print(
            f"| {r['label']} | {r['unit']} | {fmt_value(r.get('rgrad'))} | {fmt_value(r.get('torch'))} | {ratio} "
            f"| {r['target']} | {met_text(r['met'])} |"
        )
    print("\nMedians; min / IQR / n per cell:\n")
    for r in records:
        spreads = [f"{n} {fmt_spread(r.get(n))}" for n in ("rgrad", "torch") if r.get(n) is not None]
        if spreads:
            print(f"- {r['label']}: " + "; ".join(spreads))
    print("\nMachine:\n")
    for k, v in info.items():
        print(f"- {k}: {v}")


# ---- main ------------------------------------------------------------------------------


def run_isolated(keys: list[str], args: argparse.Namespace, have_torch: bool) -> list[dict[str, Any]]:
    """Runs each workload id in a fresh interpreter (both libraries still share it and
    alternate), so that no workload inherits another's state: allocator, thread pools,
    CPU register state left by earlier kernels (see docs/benchmarks.md)."""
    records: list[dict[str, Any]] = []
    passthrough: list[str] = ["--quick"] if args.quick else []
    passthrough += [] if have_torch else ["--no-torch"]
    for flag, value in (("--reps", args.reps), ("--threads", args.threads), ("--wheel", args.wheel)):
        if value:
            passthrough += [flag, str(value)]
    with tempfile.TemporaryDirectory() as tmp:
        for key in keys:
            out = Path(tmp) / f"{key}.json"
            cmd = [sys.executable, __file__, "--no-isolate", "--only", key, "--json", str(out), *passthrough]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)  # progress goes to stderr
            records.extend(json.loads(out.read_text())["results"])
    return records



def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="few repetitions (for checking the script, not for figures)")
    ap.add_argument("--only", default="", help="comma-separated workload ids, e.g. W1,W3")
    ap.add_argument("--json", metavar="PATH", help="write machine + results as JSON")
    ap.add_argument("--markdown", action="store_true", help="also print a markdown table (docs/benchmarks.md)")
    ap.add_argument("--wheel", metavar="PATH", help="wheel file for W8's size (default: estimate from install)")
    ap.add_argument("--no-torch", action="store_true", help="run rgrad only, even if torch is importable")
    ap.add_argument("--threads", type=int, help="set both libraries' thread counts (default: leave their defaults)")
    ap.add_argument("--reps", type=int, help="override every workload's repetition count")
    ap.add_argument(
        "--no-isolate",
        action="store_true",
        help="run all workloads in this one process (default: each workload id in a fresh interpreter)",
    )
    ap.add_argument("--_w5-memory-child", dest="w5_child", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.w5_child:
        w5_memory_child(args.w5_child)
        return 0

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    rgrad = load_lib("rgrad")
    if rgrad is None:
        log("cannot import rgrad (build and install it first: see docs/benchmarks.md)")
        return 2
    libs = [rgrad]
    torch = None if args.no_torch else load_lib("torch")
    if torch is not None:
        libs.append(torch)
    elif not args.no_torch:
        log("torch is not importable: rgrad only, no ratios (`pip install torch` to compare)")
    if args.threads:
        for lib in libs:
            lib.T.set_num_threads(args.threads)

    only = {k.strip().upper() for k in args.only.split(",") if k.strip()}
    info = machine(libs)
    command = " ".join([Path(sys.executable).name, *sys.argv])
    records: list[dict[str, Any]] = []
    foreign = ForeignLoad()
    keys = [k for k in dict.fromkeys(wl.key for wl in WORKLOADS) if not only or k in only]
    if not args.no_isolate:
        records = run_isolated(keys, args, torch is not None)
    for wl in WORKLOADS if args.no_isolate else []:
        if wl.key not in keys:
            continue
        reps = args.reps or (wl.quick_reps if args.quick else wl.reps)
        log(f"{wl.key}: {wl.title} ({reps} reps)")
        t0 = time.perf_counter()
        phase = wl.rows[0].phase
        if phase == "memory":
            res = measure_w5_memory(libs, reps)
        elif phase == "import":
            res = measure_import(libs, reps)
        elif phase == "wheel":
            res = measure_wheel(rgrad, args.wheel)
        else:
            res = run_interleaved(wl, libs, reps, log)
        records.extend(evaluate(row, res) for row in wl.rows)
        log(f"  done in {time.perf_counter() - t0:.1f} s")
    info["loadavg_end"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    pct = foreign.percent()
    if pct is not None:
        info["other_processes_cpu_pct"] = round(pct, 1)
        if pct > 5:
            log(f"warning: other processes used {pct:.0f}% of the CPUs during the run: figures are distorted")

    print("Machine:")
    for k, v in info.items():
        print(f"  {k}: {v}")
    print()
    print_text(records)
    if args.markdown:
        print()
        print_markdown(records, info, command)
    if args.json:
        Path(args.json).write_text(json.dumps({"command": command, "machine": info, "results": records}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
