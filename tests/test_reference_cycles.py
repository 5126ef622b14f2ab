"""No reference cycles: autograd, the transforms and checkpointing free what they make when
the last reference goes, without waiting for Python's garbage collector.

A cycle that reaches a tensor keeps the tensor's memory until the collector runs: per-sample
gradients (a 52 MB result per call) then fault fresh pages on every call, and a loop that
disables the collector grows without bound. Each case runs a workload twice (caches and
lazy imports settle), then once more with the collector off, and asserts that
``gc.collect()`` finds nothing that the run left behind.
"""

from __future__ import annotations

import collections
import gc
import warnings

import pytest

import rgrad as torch
import rgrad.autograd.forward_ad as fwAD
from rgrad.func import (functional_call, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp,
                        vmap)
from rgrad.utils.checkpoint import checkpoint, checkpoint_sequential


class _Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


class _SquareVmapRule(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x * x

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def _f(x):
    return (x.sin() * x).sum()


def _g(x):
    return x.tanh() * 2


def _backward():
    w = torch.randn(8, 8, requires_grad=True)
    (torch.randn(4, 8) @ w).tanh().sum().backward()


def _custom_function():
    x = torch.randn(5, requires_grad=True)
    _Square.apply(x).sum().backward()


def _per_sample_grads():
    w, xs = torch.randn(3, 4), torch.randn(6, 4)
    vmap(grad(lambda w, x: (x @ w.t()).relu().sum()), in_dims=(None, 0))(w, xs)


def _nested_vmap():
    vmap(vmap(lambda a, b: a * b), in_dims=(0, None))(torch.randn(2, 3, 4), torch.randn(3, 4))


def _forward_ad():
    with fwAD.dual_level():
        d = fwAD.make_dual(torch.randn(3), torch.randn(3))
        fwAD.unpack_dual(d.sin() * d).tangent


def _checkpoint(use_reentrant):
    def run():
        x = torch.randn(4, requires_grad=True)
        checkpoint(lambda y: y.sin().cos(), x, use_reentrant=use_reentrant).sum().backward()
    return run


def _checkpoint_sequential():
    x = torch.randn(4, requires_grad=True)
    fns = [lambda y: y.sin(), lambda y: y.cos(), lambda y: y * 2, lambda y: y.exp()]
    checkpoint_sequential(fns, 2, x, use_reentrant=False).sum().backward()


def _hooks():
    x = torch.randn(4, requires_grad=True)
    y = x.sin()
    y.register_hook(lambda g: g * 2)
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: None)
    y.grad_fn.register_prehook(lambda grad_outputs: None)
    y.sum().backward()


def _saved_tensors_hooks():
    x = torch.randn(4, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        y = (x * x).sum()
    y.backward()
    with torch.autograd.graph.save_on_cpu():
        (x.exp() * x).sum().backward()


def _multi_grad_hook():
    a, b = torch.randn(2, requires_grad=True), torch.randn(2, requires_grad=True)
    handle = torch.autograd.graph.register_multi_grad_hook((a, b), lambda grads: None)
    (a * b).sum().backward()
    handle.remove()


def _detect_anomaly():
    with torch.autograd.detect_anomaly():
        x = torch.randn(3, requires_grad=True)
        (x.sin() * x).sum().backward()


def _double_backward():
    x = torch.randn(3, requires_grad=True)
    (gx,) = torch.autograd.grad((x**3).sum(), x, create_graph=True)
    gx.sum().backward()


def _gradcheck():
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradcheck(lambda t: t.sin() * t, (x,), check_forward_ad=True, check_batched_grad=True)


CASES = {
    "backward": _backward,
    "custom Function": _custom_function,
    "vmap(grad)": _per_sample_grads,
    "nested vmap": _nested_vmap,
    "jacrev": lambda: jacrev(_g)(torch.randn(4)),
    "jacfwd": lambda: jacfwd(_g)(torch.randn(4)),
    "hessian": lambda: hessian(_f)(torch.randn(4)),
    "vjp": lambda: vjp(_g, torch.randn(4))[1](torch.randn(4)),
    "jvp": lambda: jvp(_g, (torch.randn(4),), (torch.randn(4),)),
    "grad_and_value has_aux": lambda: grad_and_value(lambda x: (_f(x), x * 2), has_aux=True)(torch.randn(3)),
    "functional_call": lambda: functional_call(lambda x, w: w * x, {"w": torch.randn(3)}, (torch.randn(3),)),
    "vmap of a generated rule": lambda: vmap(_SquareVmapRule.apply)(torch.randn(3, 2)),
    "vmap(grad) of a generated rule": lambda: vmap(grad(lambda x: _SquareVmapRule.apply(x).sum()))(torch.randn(3, 2)),
    "functional.jacobian": lambda: torch.autograd.functional.jacobian(_g, torch.randn(4)),
    "functional.jacobian vectorize": lambda: torch.autograd.functional.jacobian(_g, torch.randn(4), vectorize=True),
    "functional.jacobian forward-mode": lambda: torch.autograd.functional.jacobian(
        _g, torch.randn(4), vectorize=True, strategy="forward-mode"),
    "functional.hessian": lambda: torch.autograd.functional.hessian(_f, torch.randn(4)),
    "functional.hvp": lambda: torch.autograd.functional.hvp(_f, torch.randn(4), torch.randn(4)),
    "functional.vhp": lambda: torch.autograd.functional.vhp(_f, torch.randn(4), torch.randn(4)),
    "forward_ad": _forward_ad,
    "checkpoint": _checkpoint(False),
    "checkpoint reentrant": _checkpoint(True),
    "checkpoint_sequential": _checkpoint_sequential,
    "tensor and node hooks": _hooks,
    "saved tensors hooks": _saved_tensors_hooks,
    "multi grad hook": _multi_grad_hook,
    "detect_anomaly": _detect_anomaly,
    "double backward": _double_backward,
    "gradcheck": _gradcheck,
}


@pytest.mark.parametrize("name", list(CASES))
def test_leaves_no_reference_cycles(name):
    run = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run()
        run()
        gc.collect()
        was_enabled = gc.isenabled()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            run()
            found = gc.collect()
            kinds = collections.Counter(type(o).__name__ for o in gc.garbage).most_common(8)
        finally:
            gc.garbage.clear()
            gc.set_debug(0)
            if was_enabled:
                gc.enable()
    assert found == 0, f"{name} left {found} objects in reference cycles: {kinds}"
