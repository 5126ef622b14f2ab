"""cumsum / cumprod's CPU kernel paths against torch, bit for bit: along the innermost dim
(rows run side by side) and along an outer dim (columns' running values added a row at
a time), each dtype, contiguous / transposed / offset views, empty and one-element
tensors, both sides of the parallel threshold (32K elements) and of the kernel's row
group (8) and column block (512), and 1 and 2 threads giving the same bits.
"""

from __future__ import annotations

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "int64":
        return rng.integers(-50, 50, size=shape, dtype=np.int64)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    a = rng.standard_normal(shape)
    return a.astype(np.float32 if dtype == "float32" else np.float64)


def _both(a):
    return rgrad.tensor(a), torch.tensor(a)


def _same(r, t):
    assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(r.shape) == tuple(t.shape)
    rn, tn = r.numpy(), t.numpy()
    assert rn.tobytes() == tn.tobytes()


SHAPES = [
    (0, 5),
    (1, 1),
    (1, 7),
    (7, 3),
    (13, 9),  # rows not a multiple of the row group
    (256, 256),  # above the parallel threshold
    (100, 300),  # below it
    (3, 700, 2),
    (2, 40, 1030),  # column blocks: wider than one block, parallel
    (600, 70),
]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_each_dim_matches_torch_bitwise(op, shape, dtype):
    a = _data(shape, dtype)
    if op == "cumprod" and dtype in ("float32", "float64"):
        a = (1 + a / 64).astype(a.dtype)  # products that stay finite over 1000 steps
    r, t = _both(a)
    for dim in range(-len(shape), len(shape)):
        _same(getattr(rgrad, op)(r, dim), getattr(torch, op)(t, dim))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_views_match_torch_bitwise(dtype):
    a = _data((70, 600), dtype)
    r, t = _both(a)
    views = [
        lambda x: x.t(),
        lambda x: x[3:, 5:],
        lambda x: x[:, ::2],
        lambda x: x[1:].t()[2:],
        lambda x: x.reshape(70, 20, 30).permute(2, 0, 1),
    ]
    for v in views:
        rv, tv = v(r), v(t)
        for dim in range(rv.dim()):
            _same(rgrad.cumsum(rv, dim), torch.cumsum(tv, dim))
            _same(rgrad.cumprod(rv, dim), torch.cumprod(tv, dim))


def test_zero_dim_and_dtype_argument():
    r, t = _both(np.array(1.5, dtype=np.float32))
    _same(rgrad.cumsum(r, 0), torch.cumsum(t, 0))
    a = _data((300, 200), "float32")
    r, t = _both(a)
    _same(rgrad.cumsum(r, 0, dtype=rgrad.float64), torch.cumsum(t, 0, dtype=torch.float64))
    _same(rgrad.cumsum(r, 1, dtype=rgrad.float64), torch.cumsum(t, 1, dtype=torch.float64))


@pytest.mark.parametrize("shape", [(2048, 300), (300, 2048), (5, 300, 40), (256, 256)], ids=str)
def test_thread_counts_give_identical_bits(shape):
    a = _data(shape, "float32", seed=1)
    r = rgrad.tensor(a)
    old = rgrad.get_num_threads()
    try:
        outs = {}
        for n in (1, 2):
            rgrad.set_num_threads(n)
            outs[n] = [rgrad.cumsum(r, d).numpy().tobytes() for d in range(len(shape))]
            outs[n] += [rgrad.cumprod(r, d).numpy().tobytes() for d in range(len(shape))]
        assert outs[1] == outs[2]
    finally:
        rgrad.set_num_threads(old)
