"""rgrad.func.vmap against torch.func, in one process, alternating.

    python benches/vmap_bench.py [--reps N] [--threads N] [--only psg,jac,func]

- psg: per-sample gradients of an MLP 784-128-10 (ReLU, cross-entropy; the MNIST shapes of
  torch.func's model-ensembling tutorial with one hidden layer) over 128 examples, float32:
  ``vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)``, against torch.func's, and against
  a Python loop of ``loss.backward()``, one example at a time (rgrad's and torch's); rgrad's
  loop / vmap ratio is printed twice: from the alternating run, and from rgrad's two ways
  timed alone first, each in its own run of back-to-back calls (no torch call between them:
  torch's idle OpenMP workers spin after each call and slow whatever runs next);
- jac: ``autograd.functional.jacobian(f, x, vectorize=True)`` of f: R^256 -> R^256, an MLP
  with one hidden layer of 256 (tanh), float32, against torch's (reverse mode; forward mode
  and rgrad's loop of backward passes printed for reference);
- func: torch.func's transforms on f: R^64 -> R^64, ``tanh(W x + b)``, float64:
  ``jacrev(f)``, ``jacrev(f, chunk_size=16)``, ``jacfwd(f)``, ``hessian`` of ``sum(f(x)**2)``
  (a scalar function of 64 inputs: forward-over-reverse, ``jacfwd(jacrev)``) and
  ``jacrev(jacrev)`` of it, and ``vmap(jacrev(f))`` over 16 inputs, against torch.func's.
Prints the CPU, and the median time of each case and the ratios."""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import rgrad
import torch

from _machine import cpu_model

warnings.filterwarnings("ignore", category=FutureWarning)


def psg_cases(lib):
    lib.manual_seed(0)
    params = {"w1": lib.randn(128, 784) * 0.05, "b1": lib.zeros(128), "w2": lib.randn(10, 128) * 0.1,
              "b2": lib.zeros(10)}
    x = lib.randn(128, 784)
    y = lib.randint(0, 10, (128,))
    F = lib.nn.functional

    def loss(p, xi, yi):
        h = F.linear(xi, p["w1"], p["b1"]).relu()
        return F.cross_entropy(F.linear(h, p["w2"], p["b2"]).unsqueeze(0), yi.unsqueeze(0))

    per_sample = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))

    def vmapped():
        return per_sample(params, x, y)

    leaves = {k: v.clone().requires_grad_() for k, v in params.items()}

    def loop():
        grads = {k: [] for k in leaves}
        for i in range(x.shape[0]):
            for v in leaves.values():
                v.grad = None
            loss(leaves, x[i], y[i]).backward()
            for k, v in leaves.items():
                grads[k].append(v.grad)
        return {k: lib.stack(v) for k, v in grads.items()}

    return {"psg vmap(grad)": vmapped, "psg loop of backward()": loop}


def jac_cases(lib):
    lib.manual_seed(0)
    w1, b1 = lib.randn(256, 256) / 16, lib.randn(256) * 0.1
    w2, b2 = lib.randn(256, 256) / 16, lib.randn(256) * 0.1
    F = lib.nn.functional

    def f(z):
        return F.linear(F.linear(z, w1, b1).tanh(), w2, b2)

    z = lib.randn(256)
    jac = lib.autograd.functional.jacobian
    cases = {
        "jac vectorize=True": lambda: jac(f, z, vectorize=True),
        "jac forward-mode": lambda: jac(f, z, vectorize=True, strategy="forward-mode"),
    }
    if lib is rgrad:
        cases["jac loop (vectorize=False)"] = lambda: jac(f, z)
    return cases


def func_cases(lib):
    lib.manual_seed(0)
    w, b = lib.randn(64, 64, dtype=lib.float64) / 8, lib.randn(64, dtype=lib.float64) * 0.1
    F = lib.nn.functional
    tf = lib.func

    def f(z):
        return F.linear(z, w, b).tanh()

    def scalar(z):
        return (f(z) ** 2).sum()

    z = lib.randn(64, dtype=lib.float64)
    zs = lib.randn(16, 64, dtype=lib.float64)
    return {
        "func jacrev(mlp)": lambda: tf.jacrev(f)(z),
        "func jacrev(mlp, chunk=16)": lambda: tf.jacrev(f, chunk_size=16)(z),
        "func jacfwd(mlp)": lambda: tf.jacfwd(f)(z),
        "func hessian(scalar)": lambda: tf.hessian(scalar)(z),
        "func jacrev(jacrev(scalar))": lambda: tf.jacrev(tf.jacrev(scalar))(z),
        "func vmap(jacrev(mlp)), 16": lambda: tf.vmap(tf.jacrev(f))(zs),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=None, help="both libraries' thread counts (default: theirs)")
    ap.add_argument("--only", default="psg,jac,func")
    ap.add_argument("--settle", type=float, default=0.02,
                    help="seconds to sleep before each timed call (default 0.02)")
    args = ap.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
        rgrad.set_num_threads(args.threads)
    only = set(args.only.split(","))
    cases: dict = {"rgrad": {}, "torch": {}}
    for lib_name, lib in (("rgrad", rgrad), ("torch", torch)):
        if "psg" in only:
            cases[lib_name].update(psg_cases(lib))
        if "jac" in only:
            cases[lib_name].update(jac_cases(lib))
        if "func" in only:
            cases[lib_name].update(func_cases(lib))
    print(f"CPU: {cpu_model()}; torch {torch.__version__}; threads: rgrad {rgrad.get_num_threads()}, "
          f"torch {torch.get_num_threads()}")
    alone: dict = {}
    if "psg" in only:
        # rgrad's two ways alone, each in its own run of calls (as a training loop
        # repeats one of them): torch's spinning OpenMP workers (after each of its calls)
        # share the cores with whatever rgrad runs next, which slows a 2 ms call more than
        # a 25 ms one and skews the alternating ratio below; and right after the loop
        # (its 51 MB stack and thousands of small tensors) a vmap call starts with the
        # caches and pages the loop left
        psg = {k: v for k, v in cases["rgrad"].items() if k.startswith("psg")}
        for name, fn in psg.items():
            for rep in range(args.reps + 2):
                t0 = time.perf_counter()
                fn()
                if rep >= 2:
                    alone.setdefault(name, []).append(time.perf_counter() - t0)
    times: dict = {}
    for rep in range(args.reps + 2):  # (2 warm-up rounds)
        for lib_name, fns in cases.items():
            for name, fn in fns.items():
                # the other library's idle threads stop spinning first: torch's OpenMP
                # workers spin after a parallel region and take a core from rgrad's
                # call that follows (a 2.4 ms vmap(grad) measured 5.9 ms right after
                # torch's loop)
                time.sleep(args.settle)
                t0 = time.perf_counter()
                fn()
                dt = time.perf_counter() - t0
                if rep >= 2:
                    times.setdefault((lib_name, name), []).append(dt)
    print(f"{'case':<30} {'rgrad ms':>10} {'torch ms':>10} {'rgrad/torch':>12}")
    for name in cases["rgrad"]:
        ours = statistics.median(times[("rgrad", name)]) * 1e3
        theirs_t = times.get(("torch", name))
        theirs = statistics.median(theirs_t) * 1e3 if theirs_t else float("nan")
        print(f"{name:<30} {ours:>10.2f} {theirs:>10.2f} {ours / theirs:>12.2f}")
    if "psg" in only:
        ours = statistics.median(times[("rgrad", "psg vmap(grad)")])
        loop = statistics.median(times[("rgrad", "psg loop of backward()")])
        print(f"rgrad per-sample grads: the loop of backward() / vmap(grad) = {loop / ours:.1f}x")
        ours = statistics.median(alone["psg vmap(grad)"])
        loop = statistics.median(alone["psg loop of backward()"])
        print(f"  each way alone, calls back to back: vmap(grad) {ours * 1e3:.2f} ms, loop "
              f"{loop * 1e3:.2f} ms, loop / vmap = {loop / ours:.1f}x")


if __name__ == "__main__":
    main()
