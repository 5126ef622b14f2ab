"""DLPack on CUDA (issue 19): rgrad tensors shared with torch, CuPy and JAX on the GPU
without copies, both ways, with the protocol's stream synchronization, and no leaks."""

import gc

import numpy as np
import pytest
import torch

import rgrad
import rgrad.utils.dlpack

DTYPES = ["float32", "float64", "int64", "bool"]


def _rgrad(dtype):
    return getattr(rgrad, dtype)


def _torch(dtype):
    return getattr(torch, dtype)


def test_dlpack_device_and_numpy_refusal():
    t = rgrad.zeros(3, device="cuda")
    assert t.__dlpack_device__() == (rgrad.utils.dlpack.DLDeviceType.kDLCUDA, 0)
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        t.numpy()
    assert t.numpy(force=True).tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_cuda_both_ways(dtype):
    tt = torch.arange(12, device="cuda").reshape(3, 4).to(_torch(dtype))
    r = rgrad.from_dlpack(tt[:, 1:].t())
    assert r.is_cuda and r.stride() == tt[:, 1:].t().stride()
    assert r.cpu().tolist() == tt[:, 1:].t().cpu().tolist()
    r[0, 0] = 0  # an rgrad kernel writes the torch tensor's memory
    torch.cuda.synchronize()
    assert tt[0, 1].item() == 0
    mine = rgrad.arange(12, device="cuda").reshape(3, 4).to(_rgrad(dtype))
    back = torch.from_dlpack(mine[1:, ::2])
    assert back.is_cuda and back.stride() == (4, 2)
    assert back.cpu().tolist() == mine[1:, ::2].cpu().tolist()
    back.zero_()
    assert not mine[1:, ::2].cpu().any().item()
    # legacy capsules
    assert rgrad.from_dlpack(torch.utils.dlpack.to_dlpack(tt)).cpu().tolist() == tt.cpu().tolist()
    assert torch.from_dlpack(rgrad.utils.dlpack.to_dlpack(mine)).cpu().tolist() == mine.cpu().tolist()


def test_stream_synchronization_with_torch():
    """rgrad's work on its current stream is finished before torch's stream reads the
    memory (torch passes its current stream to __dlpack__)."""
    s = rgrad.cuda.Stream()
    with rgrad.cuda.stream(s):
        x = rgrad.ones(1 << 24, device="cuda")
        for _ in range(20):
            x.mul_(1.0).add_(1.0)  # queued on s, not yet done
        shared = torch.from_dlpack(x)
    assert shared.sum().item() == 21.0 * (1 << 24)
    y = torch.ones(1 << 24, device="cuda")
    for _ in range(20):
        y.mul_(1.0).add_(1.0)
    assert rgrad.from_dlpack(y).sum().item() == 21.0 * (1 << 24)


def test_autograd_through_imported_cuda_memory():
    w = rgrad.from_dlpack(torch.randn(64, 64, device="cuda", dtype=torch.float64)).requires_grad_()
    loss = (w @ w).tanh().sum()
    loss.backward()
    ref = torch.from_dlpack(w.detach()).clone().requires_grad_()
    (ref @ ref).tanh().sum().backward()
    assert np.allclose(w.grad.cpu().numpy(), ref.grad.cpu().numpy())


def test_cupy_both_ways():
    cp = pytest.importorskip("cupy")
    a = cp.arange(10, dtype=cp.float32)
    t = rgrad.from_dlpack(a)
    assert t.is_cuda and t.cpu().tolist() == list(range(10))
    t.mul_(2)
    assert float(a[3]) == 6.0
    b = cp.from_dlpack(rgrad.arange(6.0, device="cuda").reshape(2, 3).t())
    assert b.shape == (3, 2) and cp.asnumpy(b).tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]


def test_jax_both_ways():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        pytest.skip("jax has no GPU here")
    a = jax.device_put(jnp.arange(8, dtype=jnp.float32), gpus[0])
    t = rgrad.from_dlpack(a)
    assert t.is_cuda and t.cpu().tolist() == list(range(8))
    j = jax.dlpack.from_dlpack(rgrad.arange(5.0, device="cuda"))
    assert np.asarray(j).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_no_leaks_over_10k_cuda_round_trips():
    gc.collect()
    live0 = rgrad._C._dlpack_live()
    tt = torch.zeros(256, device="cuda")
    mine = rgrad.zeros(256, device="cuda")
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    for _ in range(10_000):
        u = rgrad.from_dlpack(tt)
        b = torch.from_dlpack(mine)
        del u, b
    gc.collect()
    assert rgrad._C._dlpack_live() == live0
    assert torch.cuda.memory_allocated() == base
