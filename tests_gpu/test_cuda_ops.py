"""Every op of the op table on CUDA against the same op on the CPU: forward values and
the gradients of every float input, float32 and float64, from the op table's samples."""

import numpy as np
import pytest

import rgrad
from op_db import op_db


class _OnCuda:
    """`build_args`' tensor factory, making index and mask tensors on the GPU."""

    @staticmethod
    def tensor(data, **kw):
        return rgrad.tensor(data, device="cuda", **kw)


def _cases():
    for op in op_db:
        for i, s in enumerate(op.samples):
            for dt in op.dtypes:
                if dt in ("float32", "float64"):
                    yield pytest.param(op, s, dt, id=f"{op.name}-{i}-{dt}")


def _flat(out):
    if isinstance(out, rgrad.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return []


def _run(op, s, dt, cuda):
    T = _OnCuda if cuda else rgrad
    want_grad = s.grad and op.supports_grad
    leaves = []
    for x in s.float_inputs():
        t = rgrad.tensor(x.astype(dt), device="cuda" if cuda else None)
        if want_grad:
            t.requires_grad_(True)
        leaves.append(t)
    args = s.build_args(T, leaves)
    out = op.op(*args, **s.kwargs)
    outs = _flat(out)
    grads = None
    if want_grad:
        floats = [o for o in outs if o.dtype.is_floating_point and o.requires_grad]
        if floats:
            rng = np.random.RandomState(0)
            loss = sum((o * rgrad.tensor(rng.uniform(-1, 1, o.shape).astype(dt), device=o.device)).sum() for o in floats)
            grads = rgrad.autograd.grad(loss, leaves, allow_unused=True)
    return outs, grads


@pytest.mark.parametrize("op,s,dt", list(_cases()))
def test_cuda_matches_cpu(op, s, dt):
    cpu_out, cpu_g = _run(op, s, dt, cuda=False)
    gpu_out, gpu_g = _run(op, s, dt, cuda=True)
    atol, rtol = op.tols(dt)
    atol, rtol = max(atol, 1e-6 if dt == "float32" else 1e-12), max(rtol, 1e-4 if dt == "float32" else 1e-9)
    assert len(cpu_out) == len(gpu_out)
    for c, g in zip(cpu_out, gpu_out):
        assert g.device.type == "cuda", f"an output on {g.device}"
        assert g.dtype == c.dtype and tuple(g.shape) == tuple(c.shape)
        np.testing.assert_allclose(g.cpu().detach().numpy().astype(np.float64),
                                   c.detach().numpy().astype(np.float64), atol=atol, rtol=rtol, equal_nan=True)
    if cpu_g is not None:
        for c, g in zip(cpu_g, gpu_g):
            assert (c is None) == (g is None)
            if c is not None:
                assert g.device.type == "cuda"
                np.testing.assert_allclose(g.cpu().numpy().astype(np.float64), c.numpy().astype(np.float64),
                                           atol=max(op.grad_atol, atol), rtol=max(op.grad_rtol, rtol), equal_nan=True)
