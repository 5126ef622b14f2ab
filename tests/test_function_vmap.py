"""Custom autograd.Functions under rgrad.func.vmap, as torch.func runs them: the Function's
``vmap`` staticmethod, or ``generate_vmap_rule = True`` (forward, setup_context, backward
and jvp each run once for the whole batch under a vmap level), composed with grad, jacrev,
jvp, nested vmaps and outer autograd; torch's errors. Each program is run with rgrad and
with torch and must give the same values, shapes and the same log of the staticmethods'
calls (what each saw: one sample's shapes, once per batch); without torch, the values
against their formulas and the calls against the log torch gives."""

from __future__ import annotations

import numpy as np
import pytest

import rgrad

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")


def _functions(lib, calls):
    """The Functions of the programs, written once for either library."""

    class Cube(lib.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            calls.append(("fwd", tuple(x.shape)))
            return x ** 3, 3 * x ** 2

        @staticmethod
        def setup_context(ctx, inputs, outputs):
            ctx.save_for_backward(inputs[0], outputs[1])
            ctx.save_for_forward(inputs[0], outputs[1])
            ctx.shape = tuple(inputs[0].shape)

        @staticmethod
        def backward(ctx, grad_output, grad_dx):
            x, dx = ctx.saved_tensors
            calls.append(("bwd", tuple(grad_output.shape), ctx.shape))
            result = grad_output * dx
            if grad_dx is not None:
                result = result + grad_dx * 6 * x
            return result

        @staticmethod
        def jvp(ctx, x_t):
            x, dx = ctx.saved_tensors
            calls.append(("jvp", tuple(x_t.shape)))
            return dx * x_t, 6 * x * x_t

    class Scale(lib.autograd.Function):
        # a weight that is not batched: its gradient is summed over the batch
        generate_vmap_rule = True

        @staticmethod
        def forward(x, w):
            return x * w

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            calls.append(("bwd", tuple(g.shape)))
            return g * w, g * x

    class Sum(lib.autograd.Function):
        # torch's note: setup_context runs under vmap, so the shape it keeps is one sample's
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x.sum()

        @staticmethod
        def setup_context(ctx, inputs, outputs):
            ctx.x_shape = inputs[0].shape

        @staticmethod
        def backward(ctx, gy):
            return gy.expand(ctx.x_shape)

    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

        @staticmethod
        def vmap(info, in_dims, x):
            calls.append(("vmap", info.batch_size, info.randomness, in_dims, tuple(x.shape)))
            return Exp.apply(x), in_dims[0]

    class AddOne_(lib.autograd.Function):
        # in place: the vmap rule returns its (physical) input, the caller gets its own tensor
        @staticmethod
        def forward(x):
            return x.add_(1)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.mark_dirty(inputs[0])

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def vmap(info, in_dims, x):
            return AddOne_.apply(x), in_dims[0]

    class NoRule(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Both(NoRule):
        generate_vmap_rule = True

        @staticmethod
        def vmap(info, in_dims, x):
            return x, 0

    class OneReturn(NoRule):
        @staticmethod
        def vmap(info, in_dims, x):
            return x * 2

    class ThreeReturns(NoRule):
        @staticmethod
        def vmap(info, in_dims, x):
            return x * 2, 0, 1

    class BadDims(NoRule):
        @staticmethod
        def vmap(info, in_dims, x):
            return (x * 2, x), (0, 0, 0)

    class OldStyle(lib.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    return Cube, Scale, Sum, Exp, AddOne_, NoRule, Both, OneReturn, ThreeReturns, BadDims, OldStyle


def _programs(lib, calls):
    Cube, Scale, Sum, Exp, AddOne_, NoRule, Both, OneReturn, ThreeReturns, BadDims, OldStyle = _functions(lib, calls)
    F = lib.func
    x = lib.arange(12, dtype=lib.float64).reshape(3, 4) / 10 + 0.5
    w = lib.arange(4, dtype=lib.float64) / 3 + 1

    def cube0(t):
        return Cube.apply(t)[0]

    def backward_through_vmap():
        leaf = x.clone().requires_grad_()
        F.vmap(Cube.apply)(leaf)[0].sum().backward()
        return leaf.grad

    def in_place():
        y = x.clone()
        out = F.vmap(AddOne_.apply)(y)
        return out, y

    return {
        "cube": lambda: F.vmap(Cube.apply)(x),
        "cube in_dims=1": lambda: F.vmap(Cube.apply, in_dims=1)(x),
        "cube out_dims=1": lambda: F.vmap(Cube.apply, out_dims=1)(x),
        "per-sample grad": lambda: F.vmap(F.grad(lambda t: cube0(t).sum()))(x),
        "grad of vmap": lambda: F.grad(lambda t: F.vmap(Cube.apply)(t)[0].sum())(x),
        "second derivative per sample": lambda: F.vmap(F.grad(F.grad(lambda t: cube0(t).sum())))(x[:, 0]),
        "per-sample jacrev": lambda: F.vmap(F.jacrev(cube0))(x),
        "per-sample jacfwd": lambda: F.vmap(F.jacfwd(cube0))(x),
        "per-sample jvp": lambda: F.vmap(lambda t: F.jvp(cube0, (t,), (lib.ones_like(t),))[1])(x),
        "nested vmap": lambda: F.vmap(F.vmap(Cube.apply))(x),
        "nested vmap of grad": lambda: F.vmap(F.vmap(F.grad(cube0)))(x),
        "unbatched weight": lambda: F.vmap(Scale.apply, in_dims=(0, None))(x, w),
        "weight's per-sample grad": lambda: F.vmap(F.grad(lambda a, b: Scale.apply(a, b).sum(), argnums=1),
                                                   in_dims=(0, None))(x, w),
        "weight's grad of vmap": lambda: F.grad(lambda b: F.vmap(Scale.apply, in_dims=(0, None))(x, b).sum())(w),
        "setup_context sees one sample": lambda: F.vmap(F.grad(Sum.apply))(x),
        "vmap staticmethod": lambda: F.vmap(Exp.apply)(x),
        "vmap staticmethod, in_dims=1": lambda: F.vmap(Exp.apply, in_dims=1)(x),
        "vmap staticmethod, per-sample grad": lambda: F.vmap(F.grad(lambda t: Exp.apply(t).sum()))(x),
        "vmap staticmethod, nested": lambda: F.vmap(F.vmap(Exp.apply))(x),
        "vmap staticmethod, in place": in_place,
        "not batched inside vmap": lambda: F.vmap(lambda t: Cube.apply(w)[0] + t)(x),
        "backward() through vmap": backward_through_vmap,
        "error: no rule": lambda: F.vmap(NoRule.apply)(x),
        "error: both": lambda: F.vmap(Both.apply)(x),
        "error: one return": lambda: F.vmap(OneReturn.apply)(x),
        "error: three returns": lambda: F.vmap(ThreeReturns.apply)(x),
        "error: out_dims": lambda: F.vmap(BadDims.apply)(x),
        "error: no setup_context": lambda: F.vmap(OldStyle.apply)(x),
        "error: tensor keyword": lambda: F.vmap(lambda t: Cube.apply(x=t))(x),
    }


def _picture(lib, call, calls):
    calls.clear()
    try:
        value = call()
    except Exception as e:  # noqa: BLE001  (the error is the result)
        text = str(e).replace(f"<class '{lib.__name__}.Tensor'>", "<class 'LIB.Tensor'>")
        return (type(e).__name__, text[:400]), list(calls)

    def describe(v):
        if isinstance(v, (tuple, list)):
            return [describe(t) for t in v]
        return (tuple(v.shape), np.round(np.asarray(v.detach().tolist(), dtype=np.float64), 10).tolist())

    return describe(value), list(calls)


NAMES = list(_programs(rgrad, []))


@pytest.mark.parametrize("name", NAMES)
def test_function_under_vmap_matches_torch(name):
    torch = pytest.importorskip("torch")
    ours_calls, theirs_calls = [], []
    ours = _picture(rgrad, _programs(rgrad, ours_calls)[name], ours_calls)
    theirs = _picture(torch, _programs(torch, theirs_calls)[name], theirs_calls)
    assert ours == theirs


def test_generated_rule_runs_each_staticmethod_once_per_batch():
    """Without torch: the per-sample derivative of x³ is 3x², from one forward and one
    backward call that each saw one sample's shape (not one call per sample)."""
    calls = []
    programs = _programs(rgrad, calls)
    (value, log) = _picture(rgrad, programs["per-sample grad"], calls)
    x = np.arange(12, dtype=np.float64).reshape(3, 4) / 10 + 0.5
    np.testing.assert_allclose(np.asarray(value[1]), 3 * x ** 2, rtol=1e-9)
    assert log == [("fwd", (4,)), ("bwd", (4,), (4,))]
    value, log = _picture(rgrad, programs["per-sample jvp"], calls)
    np.testing.assert_allclose(np.asarray(value[1]), 3 * x ** 2, rtol=1e-9)
    assert log == [("fwd", (4,)), ("jvp", (4,))]
    value, log = _picture(rgrad, programs["vmap staticmethod"], calls)
    np.testing.assert_allclose(np.asarray(value[1]), np.exp(x), rtol=1e-9)
    assert log == [("vmap", 3, "error", (0,), (3, 4))]


def test_generated_rule_gradients_match_finite_differences():
    """gradcheck (float64) through vmap of a generated rule, the weight's gradient summed
    over the batch by the rule's reduction."""
    calls = []
    Cube, Scale = _functions(rgrad, calls)[:2]
    x = rgrad.randn(3, 4, dtype=rgrad.float64, requires_grad=True)
    w = rgrad.randn(4, dtype=rgrad.float64, requires_grad=True)

    def f(a, b):
        return rgrad.func.vmap(lambda s, t: Scale.apply(Cube.apply(s)[0], t), in_dims=(0, None))(a, b)

    assert rgrad.autograd.gradcheck(f, (x, w))
    assert rgrad.autograd.gradgradcheck(f, (x, w))


def test_generated_rule_under_threads():
    """Two threads each vmapping the same Function (the generated classes are shared):
    every result right."""
    import threading

    calls = []
    Cube = _functions(rgrad, calls)[0]
    errors = []

    def work(seed):
        try:
            for i in range(30):
                x = rgrad.full((2 + (seed + i) % 3, 5), 0.5 + seed, dtype=rgrad.float64)
                g = rgrad.func.vmap(rgrad.func.grad(lambda t: Cube.apply(t)[0].sum()))(x)
                np.testing.assert_allclose(g.numpy(), 3 * (0.5 + seed) ** 2)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
