"""The CUDA runtime: devices, transfers, autograd across devices, the caching allocator
and OOM, streams and events, hooks and custom Functions on CUDA tensors, gradcheck."""

import pytest
import torch

import rgrad


def test_device_queries_match_torch():
    assert rgrad.cuda.is_available()
    assert rgrad.cuda.device_count() == torch.cuda.device_count()
    assert rgrad.cuda.get_device_name(0) == torch.cuda.get_device_name(0)
    assert rgrad.cuda.get_device_capability(0) == torch.cuda.get_device_capability(0)
    p, q = rgrad.cuda.get_device_properties(0), torch.cuda.get_device_properties(0)
    assert (p.total_memory, p.multi_processor_count) == (q.total_memory, q.multi_processor_count)
    assert rgrad.cuda.current_device() == 0


def test_transfers_and_devices():
    x = rgrad.arange(12.0).reshape(3, 4)
    y = x.cuda()
    assert y.is_cuda and str(y.device) == "cuda:0" and y.get_device() == 0
    assert y.cuda() is y and x.cpu() is x
    assert y.cpu().tolist() == x.tolist()
    assert y.t().cpu().tolist() == x.t().tolist()
    assert y.to("cpu", rgrad.float64).dtype == rgrad.float64
    z = rgrad.zeros(2, 3, device="cuda")
    assert z.is_cuda and z.cpu().tolist() == [[0.0] * 3] * 2
    assert rgrad.ones(2, device="cuda:0").sum().item() == 2.0
    assert rgrad.tensor([1, 2, 3], device="cuda").cpu().tolist() == [1, 2, 3]
    assert rgrad.full((2,), 7.0, device="cuda").cpu().tolist() == [7.0, 7.0]
    assert rgrad.eye(3, device="cuda").cpu().tolist() == rgrad.eye(3).tolist()
    assert rgrad.arange(5, device="cuda").cpu().tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        y + x
    assert "device='cuda:0'" in repr(y)


def test_backward_across_devices():
    x = rgrad.randn(4, 5, requires_grad=True)
    w = rgrad.randn(5, 3, device="cuda", requires_grad=True)
    y = (x.cuda() @ w).tanh().sum()
    y.backward()
    assert x.grad.device.type == "cpu" and w.grad.is_cuda
    xc, wc = x.detach().clone().requires_grad_(), w.detach().cpu().requires_grad_()
    (xc @ wc).tanh().sum().backward()
    assert torch.allclose(torch.tensor(x.grad.tolist()), torch.tensor(xc.grad.tolist()), atol=1e-5)
    assert torch.allclose(torch.tensor(w.grad.cpu().tolist()), torch.tensor(wc.grad.tolist()), atol=1e-5)


def test_mlp_step_matches_torch():
    torch.manual_seed(0)
    ws = [torch.randn(784, 512) * 0.05, torch.randn(512, 512) * 0.05, torch.randn(512, 10) * 0.05]
    x = torch.randn(128, 784)
    tw = [w.cuda().requires_grad_() for w in ws]
    rw = [rgrad.tensor(w.tolist(), device="cuda", requires_grad=True) for w in ws]
    rx = rgrad.tensor(x.tolist(), device="cuda")
    th, rh = x.cuda(), rx
    for i in range(3):
        th, rh = th @ tw[i], rh @ rw[i]
        if i < 2:
            th, rh = th.relu(), rh.relu()
    th.log_softmax(1).sum().backward()
    rh.log_softmax(1).sum().backward()
    for a, b in zip(tw, rw):
        assert torch.allclose(a.grad.cpu(), torch.tensor(b.grad.cpu().tolist()), atol=1e-3, rtol=1e-3)


def test_gradcheck_float64_on_cuda():
    x = rgrad.randn(3, 4, dtype=rgrad.float64, device="cuda", requires_grad=True)
    w = rgrad.randn(4, 2, dtype=rgrad.float64, device="cuda", requires_grad=True)
    assert rgrad.autograd.gradcheck(lambda a, b: (a @ b).sigmoid() * a.sum(), (x, w))
    assert rgrad.autograd.gradgradcheck(lambda a, b: (a @ b).tanh(), (x, w))


def test_hooks_and_custom_function_on_cuda():
    class Cube(rgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    x = rgrad.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.device.type) or g * 2)
    Cube.apply(x).sum().backward()
    assert seen == ["cuda"] and x.grad.cpu().tolist() == [6.0, 24.0]


def test_allocator_statistics_and_reuse():
    rgrad.cuda.empty_cache()
    base = rgrad.cuda.memory_allocated()
    x = rgrad.empty(1024, 1024, device="cuda")
    assert rgrad.cuda.memory_allocated() - base == 4 * 1024 * 1024
    reserved = rgrad.cuda.memory_reserved()
    del x
    assert rgrad.cuda.memory_allocated() == base
    assert rgrad.cuda.memory_reserved() == reserved  # cached, not freed
    y = rgrad.empty(1024, 1024, device="cuda")
    assert rgrad.cuda.memory_reserved() == reserved  # reused
    assert rgrad.cuda.max_memory_allocated() >= 4 * 1024 * 1024
    del y
    rgrad.cuda.empty_cache()
    assert rgrad.cuda.memory_reserved() < reserved
    rgrad.cuda.reset_peak_memory_stats()
    assert rgrad.cuda.max_memory_allocated() == rgrad.cuda.memory_allocated()


def test_out_of_memory_raises_and_leaves_the_process_usable():
    with pytest.raises(rgrad.cuda.OutOfMemoryError, match="CUDA out of memory. Tried to allocate"):
        rgrad.empty(1 << 42, device="cuda")
    assert issubclass(rgrad.cuda.OutOfMemoryError, RuntimeError)
    assert rgrad.ones(3, device="cuda").sum().item() == 3.0


def test_streams_and_events():
    s = rgrad.cuda.Stream()
    start, end = rgrad.cuda.Event(enable_timing=True), rgrad.cuda.Event(enable_timing=True)
    with rgrad.cuda.stream(s):
        assert rgrad.cuda.current_stream() == s
        start.record()
        x = rgrad.ones(1 << 20, device="cuda")
        y = (x * 2).sum()
        end.record()
    assert rgrad.cuda.current_stream() != s
    end.synchronize()
    assert start.elapsed_time(end) >= 0.0
    s.synchronize()
    assert s.query()
    assert y.item() == 2.0 * (1 << 20)
    rgrad.cuda.synchronize()


def test_allow_tf32_switch():
    assert rgrad.backends.cuda.matmul.allow_tf32 is False
    rgrad.backends.cuda.matmul.allow_tf32 = True
    try:
        a = rgrad.randn(256, 256, device="cuda")
        assert (a @ a).is_cuda
    finally:
        rgrad.backends.cuda.matmul.allow_tf32 = False


def test_host_fallbacks_are_counted():
    # ops without a GPU kernel run on the host (counted); the others do not
    x = rgrad.randn(4, 3, device="cuda")
    n = rgrad._C._cuda_host_fallbacks()
    y = x.exp().sum(0)
    assert rgrad._C._cuda_host_fallbacks() == n
    z = rgrad.zeros(5, 3, device="cuda").index_put((rgrad.tensor([0, 2, 3, 4], device="cuda"),), x)
    assert rgrad._C._cuda_host_fallbacks() > n
    assert z.is_cuda and y.is_cuda
