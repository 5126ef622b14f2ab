"""Differential tests against PyTorch: the same seeded random programs (elementwise
math, broadcasting, reductions, views, in-place writes through views) run on torch and
rgrad, and outputs, gradients and second-order gradients must agree. Runs only where
torch is installed."""

import random

import numpy as np
import pytest

import rgrad

UNARY = ["exp", "sin", "cos", "tanh", "sigmoid", "relu", "abs", "neg", "expm1", "sign", "square"]
SHAPES = [(), (1,), (3,), (2, 3), (3, 1), (1, 3), (2, 1, 3)]


def random_program(seed):
    rnd = random.Random(seed)
    rng = np.random.RandomState(seed)
    arrays = [rng.uniform(-1.5, 1.5, size=rnd.choice(SHAPES)) for _ in range(3)]
    ops = []
    for _ in range(rnd.randint(1, 5)):
        kind = rnd.choice("uubbsrvim")
        arg = rnd.choice(UNARY) if kind == "u" else rnd.randint(0, {"b": 5, "s": 5, "r": 8, "v": 7, "i": 0, "m": 1}[kind])
        ops.append((kind, rnd.randint(0, 9), rnd.randint(0, 9), arg))
    return arrays, ops


def run(lib, arrays, ops):
    xs = [lib.tensor(a, requires_grad=True) for a in arrays]
    pool = list(xs)
    for kind, i, j, arg in ops:
        t, o = pool[i % len(pool)], pool[j % len(pool)]
        if kind == "u":
            t = t * t if arg == "square" else getattr(t, arg)()
        elif kind == "b":
            t = [t + o, t * o, t - o, t / (o.abs() + 1), lib.maximum(t, o), lib.where(t > o, t, o * 2)][arg]
        elif kind == "s":
            t = [t + 1.5, t * -2, 3 - t, t**2, 2**t, t.clamp(-0.5, 0.5)][arg]
        elif kind == "r" and t.dim() > 0:
            t = [t.sum(-1), t.mean(0), t.amax(-1), t.softmax(-1), t.log_softmax(0), t.logsumexp(-1), t.norm(),
                 t.var() if t.numel() > 1 else t.sum(), t.prod(-1)][arg]
        elif kind == "v" and t.dim() > 0:
            t = [t.t() if t.dim() <= 2 else t.transpose(0, 1), t.reshape(-1), t.unsqueeze(0), t[..., :1], t[0],
                 t.expand(2, *t.shape), lib.cat([t, t], 0), lib.stack([t, t], -1)][arg]
        elif kind == "i":
            t = t.clone()
            if t.dim() >= 1:
                t[0] = t[0] * 3
        elif kind == "m" and t.dim() >= 1:
            m = t.reshape(-1, 1)
            t = [m @ m.t(), (m.t() @ m).sum()][arg]
        pool.append(t)
    out = pool[-1]
    grads = lib.autograd.grad((out * out).sum(), xs, create_graph=True, allow_unused=True)
    second = [None] * len(xs)
    terms = [(g * g).sum() for g in grads if g is not None and g.requires_grad]
    if terms:
        second = lib.autograd.grad(sum(terms), xs, allow_unused=True)
    return out, grads, second


def as_np(t):
    return None if t is None else t.detach().double().numpy()


@pytest.mark.parametrize("seed", range(300))
def test_random_program_matches_torch(seed):
    torch = pytest.importorskip("torch")
    arrays, ops = random_program(seed)
    try:
        expected = run(torch, arrays, ops)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            run(rgrad, arrays, ops)
        return
    got = run(rgrad, arrays, ops)
    pairs = [("output", expected[0], got[0])]
    pairs += [(f"grad[{k}]", expected[1][k], got[1][k]) for k in range(3)]
    pairs += [(f"second[{k}]", expected[2][k], got[2][k]) for k in range(3)]
    for what, e, g in pairs:
        e, g = as_np(e), as_np(g)
        assert (e is None) == (g is None), f"{what}: torch {e is None and 'None'} vs rgrad {g is None and 'None'} for {ops}"
        if e is not None:
            np.testing.assert_allclose(g, e, rtol=2e-4, atol=1e-5, err_msg=f"{what} for {ops}")
