"""Gradients are bitwise identical whatever the thread count (issue 4), on the shapes of
the benchmark workloads W3 (an MLP step) and W4 (a wide graph)."""

from __future__ import annotations

import numpy as np
import pytest

import rgrad

F = rgrad.nn.functional


def _mlp_grads():
    rgrad.manual_seed(0)

    def param(*shape):
        return (rgrad.randn(*shape) * (1.0 / shape[-1] ** 0.5)).requires_grad_()

    params = [param(512, 784), param(512), param(512, 512), param(512), param(10, 512), param(10)]
    w1, b1, w2, b2, w3, b3 = params
    x, y = rgrad.randn(128, 784), rgrad.randint(0, 10, (128,))
    h = F.relu(F.linear(x, w1, b1))
    h = F.relu(F.linear(h, w2, b2))
    F.nll_loss(F.log_softmax(F.linear(h, w3, b3), dim=1), y).backward()
    return [p.grad.numpy().copy() for p in params]


def _wide_grads(numel=4096):
    rgrad.manual_seed(0)
    x = rgrad.randn(numel).requires_grad_()

    def branch(bi):
        h = x * (1.0 + bi / 32.0)
        for k in range(19):
            op = (bi + k) % 5
            h = [h.sin, h.tanh, lambda: h * x, lambda: h + 0.01 * bi, h.exp][op]()
        return h

    total = branch(0)
    for bi in range(1, 32):
        total = total + branch(bi)
    total.sum().backward()
    return [x.grad.numpy().copy()]


@pytest.mark.parametrize("workload", [_mlp_grads, _wide_grads, lambda: _wide_grads(65536)], ids=["W3", "W4-4K", "W4-64K"])
def test_gradients_are_bitwise_identical_for_any_thread_count(workload):
    before = rgrad.get_num_threads()
    try:
        results = {}
        for n in (1, 2, 3):
            rgrad.set_num_threads(n)
            results[n] = workload()
    finally:
        rgrad.set_num_threads(before)
    for n in (2, 3):
        for a, b in zip(results[1], results[n]):
            assert a.dtype == b.dtype and (a.view(np.uint32) == b.view(np.uint32)).all()
