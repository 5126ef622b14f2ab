"""CUDA benchmarks against torch on the same GPU, same run (issue 18's targets):
bandwidth of elementwise ops and reductions, GEMM, and the host-bound workloads W1
(a 1-element op chain, forward and backward per op), W3 (MLP 784-512-512-10, batch 128,
training step) and W7 (double backward). Skips (exit 0, a line saying so) without a GPU.

    python benches/cuda_bench.py [--json FILE]
"""

import argparse
import json
import sys
import time

import rgrad


def _sync(T):
    T.cuda.synchronize()


def bench(fn, T, min_time=0.3, warmup=3):
    for _ in range(warmup):
        fn()
    _sync(T)
    n, t0 = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        if n % 5 == 0:
            _sync(T)
            el = time.perf_counter() - t0
            if el > min_time:
                return el / n


def bandwidth(T):
    out = {}
    n = 64 * 1024 * 1024
    a = T.ones(n, device="cuda")
    b = T.ones(n, device="cuda")
    out["add 64M f32 GB/s"] = 3 * 4 * n / bench(lambda: a + b, T) / 1e9
    out["exp 64M f32 GB/s"] = 2 * 4 * n / bench(lambda: a.exp(), T) / 1e9
    out["sum 64M f32 GB/s"] = 4 * n / bench(lambda: a.sum(), T) / 1e9
    m = T.ones(4096, 16384, device="cuda")
    out["sum dim1 4096x16384 GB/s"] = 4 * m.numel() / bench(lambda: m.sum(1), T) / 1e9
    out["softmax 4096x16384 GB/s"] = 2 * 4 * m.numel() / bench(lambda: m.softmax(1), T) / 1e9
    return out


def gemm(T):
    a = T.ones(4096, 4096, device="cuda")
    t = bench(lambda: a @ a, T)
    return {"gemm 4096^3 f32 TFLOP/s": 2 * 4096**3 / t / 1e12}


def w1(T):
    x = T.ones(1, device="cuda", requires_grad=True)

    def step():
        y = x
        for _ in range(50):
            y = y * 1.0001 + 0.0001
        y.sum().backward()

    return {"W1 us/op (fwd+bwd)": bench(step, T) / 100 * 1e6}


def w3(T):
    g = T.Generator().manual_seed(0) if hasattr(T, "Generator") else None
    ws = [(T.randn(784, 512, generator=g) * 0.05).cuda().requires_grad_(),
          (T.randn(512, 512, generator=g) * 0.05).cuda().requires_grad_(),
          (T.randn(512, 10, generator=g) * 0.05).cuda().requires_grad_()]
    bs = [T.zeros(512, device="cuda", requires_grad=True), T.zeros(512, device="cuda", requires_grad=True),
          T.zeros(10, device="cuda", requires_grad=True)]
    x = T.randn(128, 784, generator=g).cuda()
    tgt = T.randint(0, 10, (128,), generator=g).cuda()

    def step():
        h = x
        for i in range(3):
            h = h @ ws[i] + bs[i]
            if i < 2:
                h = h.relu()
        loss = -(h.log_softmax(1).gather(1, tgt.unsqueeze(1))).mean()
        loss.backward()
        with T.no_grad():
            for p in ws + bs:
                p -= 0.01 * p.grad
                p.grad = None

    return {"W3 us/step": bench(step, T) * 1e6}


def w7(T):
    x = T.ones(64, 64, device="cuda", requires_grad=True)

    def step():
        y = (x.tanh() * x).sum()
        (g,) = T.autograd.grad(y, x, create_graph=True)
        g.pow(2).sum().backward()
        x.grad = None

    return {"W7 us/step": bench(step, T) * 1e6}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    if not rgrad.cuda.is_available():
        print("cuda_bench: no GPU (rgrad.cuda.is_available() is False): skipped")
        return 0
    import torch

    rows = {}
    for name, fn in [("bandwidth", bandwidth), ("gemm", gemm), ("W1", w1), ("W3", w3), ("W7", w7)]:
        for T in (torch, rgrad):
            try:
                res = fn(T)
            except Exception as e:  # noqa: BLE001  (a failing workload is reported, not fatal)
                res = {f"{name} ERROR": f"{type(e).__name__}: {e}"[:300]}
            for k, v in res.items():
                rows.setdefault(k, {})[T.__name__] = v
    dev = torch.cuda.get_device_name(0)
    print(f"device: {dev}; torch {torch.__version__}")
    print(f"{'measure':34} {'torch':>12} {'rgrad':>12} {'rgrad/torch':>12}")
    for k, v in rows.items():
        t, r = v.get("torch"), v.get("rgrad")
        if isinstance(t, float) and isinstance(r, float):
            print(f"{k:34} {t:12.2f} {r:12.2f} {r / t:12.3f}")
        else:
            print(f"{k:34} {t!s:>12} {r!s:>12}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": dev, "torch": torch.__version__, "rows": rows,
                       "host_fallbacks": rgrad._C._cuda_host_fallbacks()}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
