"""Custom autograd Functions (rgrad.autograd.Function) run by the Rust engine.

Every expected value and message here is what torch 2.x gives for the same code
(checked side by side; `test_parity_with_torch` re-checks a sample when torch is
installed). The one deliberate difference: node reprs print `<ExpBackward object at
0x...>` (the issue's format) where torch adds the module path.
"""

from __future__ import annotations

import gc
import re
import threading
import weakref

import pytest

import rgrad
from rgrad.autograd import Function
from rgrad.autograd.function import BackwardCFunction, FunctionCtx, InplaceFunction, once_differentiable


class Exp(Function):
    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x**2


class Scale(Function):
    """A tensor input and a non-tensor one."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None


def leaf(*values, dtype=rgrad.float32):
    return rgrad.tensor(list(values), dtype=dtype, requires_grad=True)


def close(t, expected, tol=1e-4):
    return t.shape == rgrad.tensor(expected).shape and all(
        abs(a - b) <= tol * max(1.0, abs(b)) for a, b in zip(t.flatten().tolist(), rgrad.tensor(expected).flatten().tolist())
    )


# ---- the node ----------------------------------------------------------------------


def test_exp_forward_backward_and_node_identity():
    x = leaf(1.0, 2.0)
    y = Exp.apply(x)
    assert repr(y) == "tensor([2.7183, 7.3891], grad_fn=<ExpBackward>)"
    fn = y.grad_fn
    assert type(fn).__name__ == "ExpBackward" and fn.name() == "ExpBackward"
    assert type(fn) is Exp._backward_cls and type(fn)._forward_cls is Exp
    assert isinstance(fn, BackwardCFunction) and isinstance(fn, FunctionCtx)
    assert isinstance(fn, rgrad.autograd.graph.Node)
    assert re.fullmatch(r"<ExpBackward object at 0x[0-9a-f]+>", repr(fn))
    assert y.grad_fn is fn  # one Python object per node
    (edge,) = fn.next_functions
    assert edge[0].name() == "torch::autograd::AccumulateGrad" and edge[0].variable is x and edge[1] == 0
    y.sum().backward()
    assert close(x.grad, [2.7183, 7.3891])


def test_next_functions_list_the_tensor_inputs_only_as_torchs():
    torch = pytest.importorskip("torch")
    shown = []
    for lib in (rgrad, torch):

        class Affine(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, k, y, name="affine", w=None):
                return x * k + y

            @staticmethod
            def backward(ctx, g):
                return g, None, g, None, None

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        out = Affine.apply(x, 3, lib.tensor([0.5, 0.5]), "a", lib.tensor([1.0], requires_grad=True))
        edges = out.grad_fn.next_functions
        shown.append([(None if f is None else type(f).__name__, nr) for f, nr in edges])
        assert edges[0][0].variable is x
    assert shown[0] == shown[1] == [("AccumulateGrad", 0), (None, 0), ("AccumulateGrad", 0)]


def test_custom_node_appears_in_next_functions_chains():
    x = leaf(1.0, 2.0)
    a = x * 2
    y = Exp.apply(a)
    z = y.sum()
    exp_node = z.grad_fn.next_functions[0][0]
    assert exp_node is y.grad_fn
    assert exp_node.next_functions[0][0] is a.grad_fn
    z.backward()
    assert close(x.grad, [2 * 7.3891, 2 * 54.5982])


def test_ctx_is_the_node_and_keeps_attributes():
    class Keep(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.note = "kept"
            return x * 2

        @staticmethod
        def backward(ctx, g):
            assert ctx.note == "kept"
            return g * 2

    x = leaf(1.0)
    y = Keep.apply(x)
    assert y.grad_fn.note == "kept"
    y.backward()
    assert x.grad.tolist() == [2.0]


def test_needs_input_grad_and_non_tensor_inputs():
    seen = []

    class F(Function):
        @staticmethod
        def forward(ctx, a, b, k, c):
            seen.append(ctx.needs_input_grad)
            return a * b * k + c

        @staticmethod
        def backward(ctx, g):
            return (g, None, None, g) if ctx.needs_input_grad[3] else (g, None, None, None)

    a, b, c = leaf(1.0), rgrad.tensor([2.0]), leaf(3.0)
    F.apply(a, b, 2, c).backward()
    assert seen[-1] == (True, False, False, True)
    assert a.grad.tolist() == [1.0] and c.grad.tolist() == [1.0] and b.grad is None


def test_kwargs_reach_forward():
    class F(Function):
        @staticmethod
        def forward(ctx, x, *, scale=1.0):
            ctx.scale = scale
            return x * scale

        @staticmethod
        def backward(ctx, g):
            return g * ctx.scale

    x = leaf(1.0, 1.0)
    F.apply(x, scale=3.0).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_no_node_without_grad():
    x = leaf(1.0)
    with rgrad.no_grad():
        y = Exp.apply(x)
    assert y.grad_fn is None and not y.requires_grad
    y = Exp.apply(rgrad.ones(2))
    assert y.grad_fn is None and not y.requires_grad


def test_forward_runs_without_grad_mode():
    modes = []

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            modes.append(rgrad.is_grad_enabled())
            y = x * 2
            modes.append(y.requires_grad)
            return y

        @staticmethod
        def backward(ctx, g):
            return g * 2

    y = F.apply(leaf(1.0))
    assert modes == [False, False] and y.requires_grad and rgrad.is_grad_enabled()


def test_tuple_outputs_and_non_tensor_outputs_get_none_grads():
    got = []

    class Multi(Function):
        @staticmethod
        def forward(ctx, a, k):
            return a * 2, k, a * 3

        @staticmethod
        def backward(ctx, g1, g2, g3):
            got.append((g1.tolist(), g2, g3.tolist()))
            return g1 * 2 + g3 * 3, None

    x = leaf(1.0, 2.0)
    o = Multi.apply(x, 5)
    assert isinstance(o, tuple) and len(o) == 3 and o[1] == 5
    assert o[0].grad_fn is o[2].grad_fn and o[2].output_nr == 2
    o[0].sum().backward()
    # the unused tensor output gets a materialized zero gradient, the int gets None
    assert got == [([1.0, 1.0], None, [0.0, 0.0])]
    assert x.grad.tolist() == [2.0, 2.0]


def test_set_materialize_grads_false_passes_none():
    got = []

    class MG(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.set_materialize_grads(False)
            return a * 2, a * 3

        @staticmethod
        def backward(ctx, g1, g2):
            got.append((g1 is None, g2 is None))
            return g1 * 2 if g1 is not None else g2 * 3

    x = leaf(1.0)
    o = MG.apply(x)
    assert o[0].grad_fn.materialize_grads is False
    o[1].backward()
    assert got == [(True, False)] and x.grad.tolist() == [3.0]


def test_mark_non_differentiable_and_integer_outputs():
    got = []

    class ND(Function):
        @staticmethod
        def forward(ctx, a):
            i = a.argmax()
            b = a * 2
            ctx.mark_non_differentiable(b)
            return b, i, a * 3

        @staticmethod
        def backward(ctx, g1, g2, g3):
            got.append((g1.tolist(), g2.tolist(), g3.tolist()))
            return g3 * 3

    x = leaf(1.0, 2.0)
    b, i, c = ND.apply(x)
    assert not b.requires_grad and b.grad_fn is None
    assert not i.requires_grad and i.dtype == rgrad.int64
    assert c.requires_grad
    c.sum().backward()
    assert got == [([0.0, 0.0], 0, [1.0, 1.0])]
    assert x.grad.tolist() == [3.0, 3.0]


def test_returning_an_input_gives_a_view_of_it():
    class Ident(Function):
        @staticmethod
        def forward(ctx, a):
            return a

        @staticmethod
        def backward(ctx, g):
            return g * 5

    x = leaf(1.0, 2.0)
    y = Ident.apply(x)
    assert y is not x and y._base is x and y.grad_fn.name() == "IdentBackward"
    assert x.grad_fn is None and x.is_leaf
    y.sum().backward()
    assert x.grad.tolist() == [5.0, 5.0]


def test_save_for_backward_none_and_intermediates():
    class F(Function):
        @staticmethod
        def forward(ctx, a):
            t = a + 1
            ctx.save_for_backward(None, t, a)
            return a * t

        @staticmethod
        def backward(ctx, g):
            none, t, a = ctx.saved_tensors
            assert none is None
            return g * (t + a)

    x = leaf(2.0)
    F.apply(x).backward()
    assert x.grad.tolist() == [5.0]


def test_saved_tensors_visible_on_grad_fn_and_freed_after_backward():
    x = leaf(1.0, 2.0)
    y = Exp.apply(x)
    (r,) = y.grad_fn.saved_tensors
    assert r.grad_fn is y.grad_fn and close(r, [2.7183, 7.3891])
    with pytest.warns(DeprecationWarning, match="'saved_variables' is deprecated; use 'saved_tensors'"):
        assert len(y.grad_fn.saved_variables) == 1
    y.sum().backward()
    with pytest.raises(RuntimeError, match=r"^Trying to backward through the graph a second time"):
        y.grad_fn.saved_tensors
    with pytest.raises(RuntimeError, match=r"^Trying to backward through the graph a second time"):
        y.sum().backward()


def test_retain_graph_keeps_saved_tensors():
    x = leaf(1.0)
    y = Exp.apply(x)
    y.backward(retain_graph=True)
    y.backward()
    assert close(x.grad, [2 * 2.7183])


def test_setup_context_style_with_defaults_and_kwargs():
    seen = []

    class Sc(Function):
        @staticmethod
        def forward(a, k=2.0):
            return a * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            seen.append((len(inputs), inputs[1], output.shape))
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    x = leaf(1.0, 1.0)
    Sc.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    x.grad = None
    Sc.apply(x, k=3.0).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    assert [s[:2] for s in seen] == [(2, 2.0), (2, 3.0)]


def test_vjp_is_an_alias_of_backward_and_both_is_an_error():
    class V(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def vjp(ctx, g):
            return g * 2

    x = leaf(1.0)
    V.apply(x).backward()
    assert x.grad.tolist() == [2.0]

    class Both(V):
        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="^Implementing both 'backward' and 'vjp' for a custom Function is not allowed"):
        Both.apply(leaf(1.0)).backward()


def test_missing_forward_or_backward():
    class NoBack(Function):
        @staticmethod
        def forward(ctx, a):
            return a.clone()

    with pytest.raises(NotImplementedError, match="^You must implement either the backward or vjp method"):
        NoBack.apply(leaf(1.0)).backward()

    class NoForward(Function):
        pass

    with pytest.raises(NotImplementedError, match="^You must implement the forward function for custom autograd.Function."):
        NoForward.apply(leaf(1.0))


def test_legacy_instantiation_warns_and_call_raises():
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        f = Exp()
    with pytest.raises(RuntimeError, match="^Legacy autograd function with non-static forward method is deprecated"):
        f(leaf(1.0))
    with pytest.warns(DeprecationWarning):
        g = InplaceFunction(inplace=True)
    assert g.inplace is True


def test_save_for_backward_and_mark_type_errors():
    class S(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a, 3)
            return a

    with pytest.raises(TypeError, match="^save_for_backward can only save variables, but argument 1 is of type int$"):
        S.apply(leaf(1.0))

    class D(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.mark_dirty("x")
            return a

    with pytest.raises(TypeError, match="^mark_dirty can only accept variables, but argument 0 is of type str$"):
        D.apply(leaf(1.0))


# ---- validation of what backward returns ---------------------------------------------


def _fn(backward, forward=lambda ctx, a, b: a * b):
    return type("Bad", (Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})


@pytest.mark.parametrize(
    "backward,message",
    [
        (lambda ctx, g: g, r"function BadBackward returned an incorrect number of gradients \(expected 2, got 1\)"),
        (lambda ctx, g: (g, g, g), r"function BadBackward returned an incorrect number of gradients \(expected 2, got 3\)"),
        (lambda ctx, g: (g, 3), r"expected Variable or None \(got int\)"),
        (
            lambda ctx, g: (rgrad.ones(3), g),
            r"Function BadBackward returned an invalid gradient at index 0 - got \[3\] but expected shape compatible "
            r"with \[2\]",
        ),
    ],
)
def test_backward_result_errors(backward, message):
    x, y = leaf(1.0, 2.0), leaf(3.0, 4.0)
    with pytest.raises(RuntimeError, match="^" + message + "$"):
        _fn(backward).apply(x, y).sum().backward()


def test_gradient_for_non_tensor_input_must_be_none():
    bad = _fn(lambda ctx, g: (g, g), forward=lambda ctx, a, k: a * k)
    with pytest.raises(
        RuntimeError,
        match=r"^function BadBackward returned a gradient different than None at position 2, but the corresponding "
        r"forward input was not a Variable$",
    ):
        bad.apply(leaf(1.0), 2).sum().backward()


def test_extra_none_gradients_are_dropped_broadcast_reduced_dtype_cast():
    x, y = leaf(1.0, 2.0), leaf(3.0, 4.0)
    _fn(lambda ctx, g: (g, g, None, None)).apply(x, y).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0] and y.grad.tolist() == [1.0, 1.0]
    x.grad = y.grad = None
    # a (3, 2) gradient for a (2,) input is summed down; float64 is cast to float32
    _fn(lambda ctx, g: (rgrad.ones(3, 2, dtype=rgrad.float64), None)).apply(x, y).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0] and x.grad.dtype == rgrad.float32 and y.grad is None


def test_gradients_for_inputs_not_requiring_grad_are_ignored():
    x, c = leaf(1.0, 2.0), rgrad.tensor([3.0, 4.0])
    _fn(lambda ctx, g: (g, rgrad.ones(7))).apply(x, c).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0] and c.grad is None


# ---- double backward ----------------------------------------------------------------


def test_backward_made_of_rgrad_ops_is_differentiable():
    x = leaf(1.0, 2.0)
    (g,) = rgrad.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    assert g.tolist() == [3.0, 12.0] and g.grad_fn is not None
    (gg,) = rgrad.autograd.grad(g.sum(), x)
    assert gg.tolist() == [6.0, 12.0]
    # through a saved output: d2/dx2 exp(x) = exp(x)
    (g,) = rgrad.autograd.grad(Exp.apply(x).sum(), x, create_graph=True)
    (gg,) = rgrad.autograd.grad(g.sum(), x)
    assert close(gg, [2.7183, 7.3891])


def test_once_differentiable():
    class OD(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**2

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            assert not rgrad.is_grad_enabled()
            return g * 2 * x

    x = leaf(1.0, 2.0)
    OD.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    # grad_output that requires grad: the result hangs off a node that refuses to differentiate
    y = OD.apply(x)
    v = rgrad.ones(2, requires_grad=True)
    (g,) = rgrad.autograd.grad(y, x, v, create_graph=True)
    assert g.tolist() == [2.0, 4.0] and g.grad_fn.name() == "torch::autograd::Error"
    assert repr(g) == "tensor([2., 4.], grad_fn=<Error>)" and type(g.grad_fn).__name__ == "Error"
    with pytest.raises(
        RuntimeError, match="^trying to differentiate twice a function that was marked with @once_differentiable$"
    ):
        g.sum().backward()
    # with a plain grad_output nothing is recorded (as in torch)
    (g,) = rgrad.autograd.grad(OD.apply(x).sum(), x, create_graph=True)
    assert not g.requires_grad


# ---- in-place: mark_dirty -------------------------------------------------------------


class MulTwoInplace(Function):
    @staticmethod
    def forward(ctx, a):
        a.mul_(2)
        ctx.mark_dirty(a)
        return a

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_mark_dirty_rebases_history_and_bumps_version():
    x = leaf(1.0, 2.0)
    z = x * 1
    v0 = z._version
    w = MulTwoInplace.apply(z)
    assert w is z and z.grad_fn.name() == "MulTwoInplaceBackward"
    assert z._version == v0 + 2  # the in-place op in forward, then mark_dirty
    (z * z).sum().backward()
    assert x.grad.tolist() == [8.0, 16.0]  # d/dx (2x)^2


def test_mark_dirty_on_leaf_requiring_grad_is_an_error():
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad has been used in an in-place operation.$"):
        MulTwoInplace.apply(leaf(1.0))


def test_mark_dirty_on_view_rebases_base_with_copyslices():
    x = leaf(1.0, 2.0, 3.0)
    b = x * 1
    MulTwoInplace.apply(b[1:])
    assert b.grad_fn.name() == "torch::autograd::CopySlices" and b.tolist() == [1.0, 4.0, 6.0]
    b.sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 2.0]


def test_dirty_tensor_must_be_returned():
    class Dirty2(Function):
        @staticmethod
        def forward(ctx, a):
            a.mul_(2)
            ctx.mark_dirty(a)
            return a.clone()

    with pytest.raises(RuntimeError, match="^Some elements marked as dirty during the forward method were not returned"):
        Dirty2.apply(leaf(1.0) * 1)


def test_saved_tensor_modified_in_place_is_detected():
    x = leaf(1.0, 2.0)
    y = Exp.apply(x * 1)
    y.mul_(2)
    msg = (
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
        "[rgrad.FloatTensor [2]], which is output 0 of Exp, is at version 1; expected version 0 instead. Hint:"
    )
    with pytest.raises(RuntimeError) as e:
        y.sum().backward()
    assert str(e.value).startswith(msg)


# ---- exceptions and threads -------------------------------------------------------------


class Boom(Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        raise ValueError("boom in backward")


def _wide(x, n=16, fn=Exp):
    # independent branches, so that nodes run on several worker threads
    return sum(fn.apply(x * (i + 1)).sum() for i in range(n))


def test_exception_in_backward_propagates_with_type_and_traceback():
    x = leaf(1.0, 2.0)
    with pytest.raises(ValueError, match="^boom in backward$") as e:
        (Boom.apply(x).sum() + _wide(x)).backward()
    assert any(f.name == "backward" for f in e.traceback)
    # the engine is not stuck: the next backward works
    Exp.apply(x).sum().backward()
    assert close(x.grad, [2.7183, 7.3891])


def test_exception_in_hook_on_worker_thread_propagates():
    x = leaf(1.0, 2.0)
    for _ in range(3):
        ys = [Exp.apply(x * (i + 1)) for i in range(8)]

        def bad(g):
            raise KeyError("hook failed")

        ys[5].register_hook(bad)
        with pytest.raises(KeyError, match="hook failed"):
            sum(y.sum() for y in ys).backward()
    x.grad = None
    _wide(x).backward()
    assert x.grad is not None


def test_custom_function_used_concurrently_from_python_threads():
    errors = []

    def worker(seed):
        try:
            for step in range(60):
                x = rgrad.tensor([0.5 + seed, 1.0 + step / 100], requires_grad=True)
                y = _wide(x, n=4, fn=Cube) + Exp.apply(x).sum()
                y.backward()
                expected = [sum(3 * ((i + 1) ** 3) * v * v for i in range(4)) + 2.718281828**v for v in x.tolist()]
                if not close(x.grad, expected, tol=1e-3):
                    errors.append((seed, step, x.grad.tolist(), expected))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


DEADLOCK_PROGRAM = """
import threading, rgrad
from rgrad.autograd import Function

class Slow(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        s = 0
        for i in range(2000):  # Python work: the worker holds the GIL for a while
            s += i
        return g * 2

stop = False

def backwards():
    x = rgrad.ones(4, requires_grad=True)
    for _ in range(30):
        sum(Slow.apply(x * (i + 1)).sum() for i in range(32)).backward()

def big_ops():
    small, big = rgrad.ones(1), rgrad.ones(300000)
    while not stop:
        small + big  # small self (the GIL is kept) but a kernel that waits for the pool

a, b = threading.Thread(target=backwards), threading.Thread(target=big_ops)
a.start(); b.start(); a.join(); stop = True; b.join()
print("done")
"""


def test_no_deadlock_between_python_backward_and_pool_kernels():
    # A thread that waits for pool work must not hold the GIL that the pool's workers
    # need for Python backwards. Run in a subprocess so a regression fails, not hangs.
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", DEADLOCK_PROGRAM], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout == "done\n", r.stderr


def test_nested_backward_inside_custom_backward():
    class Inner(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with rgrad.enable_grad():
                xx = x.detach().requires_grad_()
                (d,) = rgrad.autograd.grad((xx * xx).sum(), xx)  # a backward inside a backward
            return g * d

    x = leaf(1.0, 3.0)
    (Inner.apply(x).sum() + _wide(x, n=4)).backward()
    assert close(x.grad, [2.0 + sum((i + 1) * 2.718281828 ** ((i + 1) * 1.0) for i in range(4)),
                          6.0 + sum((i + 1) * 2.718281828 ** ((i + 1) * 3.0) for i in range(4))], tol=1e-3)


def test_ctx_and_node_are_freed_with_the_graph():
    gc.collect()
    baseline = rgrad._C._live_nodes()
    x = leaf(1.0)
    y = Exp.apply(x)
    ctx_ref = weakref.ref(y.grad_fn)
    y.backward()
    del y
    gc.collect()
    assert ctx_ref() is None
    assert rgrad._C._live_nodes() == baseline


# ---- the legacy Variable API ----------------------------------------------------------


def test_variable_returns_a_tensor():
    from rgrad.autograd import Variable

    data = rgrad.tensor([1.0, 2.0])
    v = Variable(data, requires_grad=True)
    assert type(v) is rgrad.Tensor and isinstance(v, Variable) and isinstance(rgrad.ones(1), Variable)
    assert v.requires_grad and v.is_leaf and v.data.tolist() == [1.0, 2.0]
    v.data[0] = 5.0  # shares storage with data, as in torch
    assert data.tolist() == [5.0, 2.0]
    y = Variable(leaf(1.0) * 2)
    assert y.is_leaf and not y.requires_grad
    assert Variable(leaf(1.0) * 2, True).requires_grad
    e = Variable()
    assert e.shape == (0,)


def test_variable_errors_and_volatile():
    from rgrad.autograd import Variable

    with pytest.raises(TypeError, match="^Variable data has to be a tensor, but got list$"):
        Variable([1, 2])
    with pytest.raises(RuntimeError, match="can require gradients"):
        Variable(rgrad.tensor([1, 2]), requires_grad=True)
    with pytest.warns(UserWarning, match=r"^volatile was removed and now has no effect. Use `with torch.no_grad\(\):` instead.$"):
        a = Variable(rgrad.tensor([1.0]), volatile=True)
    b = Variable(rgrad.tensor([2.0]), requires_grad=True)
    c = a + b
    c.backward()
    assert a.grad is None and b.grad.tolist() == [1.0]
    with pytest.warns(UserWarning, match=r"volatile was removed \(Variable.volatile is always False\)"):
        assert a.volatile is False


# ---- parity -------------------------------------------------------------------------


def test_parity_with_torch():
    torch = pytest.importorskip("torch")

    def run(T):
        class Func(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                ex, ey = T.exp(x), T.exp(y)
                ctx.save_for_backward(ex, ey)
                return 3 * x + 2 * y + ex + ey

            @staticmethod
            def backward(ctx, g):
                ex, ey = ctx.saved_tensors
                return g * (3 + ex), g * (2 + ey)

        class Cube(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x**3

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 3 * x**2

        x = T.tensor([1.0, 2.0], requires_grad=True)
        y = T.tensor([3.0, 4.0], requires_grad=True)
        z = Func.apply(x, y)
        # saved intermediates have no history: the first-order gradient is a constant
        (gx, gy) = T.autograd.grad(z.sum(), (x, y), create_graph=True)
        (gc,) = T.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
        (gcc,) = T.autograd.grad(gc.sum(), x)
        return (
            repr(z).split("grad_fn")[0],
            [round(v, 4) for v in gx.tolist() + gy.tolist()],
            gx.requires_grad,
            gcc.tolist(),
            type(z.grad_fn).__name__,
        )

    assert run(rgrad) == run(torch)


# ---- what hooks may return ---------------------------------------------------------


def test_hook_results_are_validated_like_torch():
    x = rgrad.randn(3, dtype=rgrad.float64, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g.float())
    with pytest.raises(
        RuntimeError, match=r"^hook '<lambda>' has changed the type of value \(was rgrad.DoubleTensor got rgrad.FloatTensor\)$"
    ):
        rgrad.autograd.grad(y.sum(), x)

    def myhook(g):
        return g[:2]

    x.register_hook(myhook)
    with pytest.raises(RuntimeError, match="^hook 'myhook' has changed the size of value$"):
        rgrad.autograd.grad((x * 2).sum(), x)
    z = rgrad.ones(2, requires_grad=True)
    w = z * 2
    w.register_hook(lambda g: 3)
    with pytest.raises(TypeError, match="^expected Variable, but hook returned 'int'$"):
        w.sum().backward()
