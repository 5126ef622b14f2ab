"""rgrad.autograd.graph against torch.autograd.graph: saved-tensor hooks, node hooks
(also on AccumulateGrad), Node.metadata, register_multi_grad_hook, GradientEdge,
increment_version and allow_mutation_on_saved_tensors.

Each program runs on rgrad and on torch (``both``): values, gradients, the order in
which hooks ran, errors and warnings must agree. Every test also checks rgrad's result
on its own. Threads: hooks of every kind from 8 threads running backward at once.
"""

from __future__ import annotations

import gc
import os
import threading

import pytest
from _differential import both, caught

import rgrad

TRIALS = int(os.environ.get("RGRAD_STRESS_TRIALS", "10"))


def _packer(log, tag=""):
    def pack(x):
        log.append(("pack" + tag, tuple(x.shape), x.requires_grad))
        return x

    def unpack(x):
        log.append(("unpack" + tag, tuple(x.shape)))
        return x

    return pack, unpack


# ---- saved-tensor hooks: what is packed, when, and what unpacking gives -----------------

OPS = {
    "mul": lambda T, a, b: a * b,
    "mul_number": lambda T, a, b: a * 2,
    "add": lambda T, a, b: a + b,
    "div": lambda T, a, b: a / b,
    "div_number": lambda T, a, b: a / 3,
    "exp": lambda T, a, b: a.exp(),
    "sin": lambda T, a, b: a.sin(),
    "tanh": lambda T, a, b: a.tanh(),
    "sigmoid": lambda T, a, b: a.sigmoid(),
    "pow_number": lambda T, a, b: a**3,
    "pow_tensor": lambda T, a, b: a**b,
    "matmul": lambda T, a, b: a.reshape(2, 2) @ b.reshape(2, 2),
    "sum": lambda T, a, b: a.sum(),
    "mean": lambda T, a, b: a.mean(),
    "softmax": lambda T, a, b: a.softmax(0),
    "relu": lambda T, a, b: (a - 0.5).relu(),
    "where": lambda T, a, b: T.where(a > 0.5, a, b),
    "clamp": lambda T, a, b: a.clamp(0.2, 0.6),
    "max": lambda T, a, b: a.max(),
    "view_mul": lambda T, a, b: a.view(2, 2)[0] * b[:2],
    "inplace_mul": lambda T, a, b: (a * 1).mul_(b),
    "inplace_exp": lambda T, a, b: (a * 1).exp_(),
}


@pytest.mark.parametrize("op", sorted(OPS))
def test_pack_and_unpack_calls_and_gradients_match_torch(op):
    def program(T):
        a = T.tensor([0.1, 0.4, 0.7, 0.9], dtype=T.float64, requires_grad=True)
        b = T.tensor([0.3, 0.6, 0.2, 0.8], dtype=T.float64, requires_grad=True)
        log = []
        with T.autograd.graph.saved_tensors_hooks(*_packer(log)):
            y = OPS[op](T, a, b)
        log.append("forward done")
        y.sum().backward()
        return log, a.grad, b.grad

    log, ga, _ = both(program)
    assert "forward done" in log
    assert ga is not None


def test_pack_runs_with_grad_mode_off_on_the_saved_tensors_themselves():
    def program(T):
        a = T.tensor([1.0, 2.0], requires_grad=True)
        seen = []

        def pack(x):
            seen.append((x is a, x.grad_fn, x.requires_grad, T.is_grad_enabled(), x._version))
            return x

        with T.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
            y = a.exp()  # saves its result, whose grad_fn is the node itself
            z = a.sin()  # saves its input
        return seen, y.grad_fn.name(), z.grad_fn.name()

    seen, *_ = both(program)
    assert seen == [(False, ("N", "ExpBackward0"), True, False, 0), (True, None, True, False, 0)]


def test_no_pack_without_a_recorded_node():
    def program(T):
        log = []
        a = T.ones(2, requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(*_packer(log)):
            with T.no_grad():
                a.exp()
            T.ones(2).exp()
        return log

    assert both(program) == []


def test_only_the_innermost_pair_applies():
    def program(T):
        log = []
        a = T.ones(2, requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(*_packer(log, "1")):
            with T.autograd.graph.saved_tensors_hooks(*_packer(log, "2")):
                y = a.exp()
            z = a.exp()
        (y + z).sum().backward()
        # (the two unpacks are on independent branches: their order is unspecified)
        return log[:2], sorted(e[0] for e in log[2:])

    assert both(program)[1] == ["unpack1", "unpack2"]


def test_unpack_once_per_saved_tensor_per_backward():
    def program(T):
        log = []
        a = T.ones(2, requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(*_packer(log)):
            y = a * a
        y.sum().backward(retain_graph=True)
        y.sum().backward()
        return [e[0] for e in log], a.grad

    log, grad = both(program)
    assert log == ["pack", "pack"] + ["unpack"] * 4
    assert grad[3] == [4.0, 4.0]


def test_hooks_own_the_data_no_version_check():
    def program(T):
        a = T.ones(2, requires_grad=True)
        b = a.clone()
        with T.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
            y = b * b
        b.add_(1)
        y.sum().backward()
        return a.grad

    assert both(program)[3] == [4.0, 4.0]


def test_hook_errors_match_torch():
    def modifying_pack(T):
        a = T.ones(2, requires_grad=True).clone()
        with T.autograd.graph.saved_tensors_hooks(lambda x: x.add_(1), lambda x: x):
            return caught(lambda: a * a)

    def non_tensor_unpack(T):
        a = T.ones(2, requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: 1):
            y = a * a
        return caught(lambda: y.sum().backward())

    def raising_pack(T):
        a = T.ones(2, requires_grad=True)

        def pack(x):
            raise ValueError("boom")

        with T.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
            return caught(lambda: a * a)

    def freed(T):
        a = T.ones(2, requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
            y = a * a
        y.sum().backward()
        return caught(lambda: y.sum().backward())

    assert both(modifying_pack)[2].startswith("A saved tensor pack hook is modifying its input in place.")
    assert both(non_tensor_unpack) == (
        "E",
        "TypeError",
        "Output of saved tensor unpack_hook expected to be a Tensor but got result of type int",
    )
    assert both(raising_pack) == ("E", "ValueError", "boom")
    assert both(freed)[2].startswith("Trying to backward through the graph a second time")


def test_unpacked_tensor_dtype_is_cast_back_and_shape_errors_surface():
    def program(T):
        a = T.ones(2, requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x.double()):
            y = a.exp()
        y.sum().backward()
        b = T.ones(2, requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: T.zeros(3)):
            z = b.exp()
        return a.grad, caught(lambda: z.sum().backward())

    grad, err = both(program)
    assert grad[1] == "float32"
    assert err[1] == "RuntimeError"


def test_disable_saved_tensors_hooks():
    def program(T):
        g = T.autograd.graph
        out = []
        out.append(caught(lambda: _push_inside_disabled(g)))
        a = T.ones(2, requires_grad=True)

        def disable_inside_hooks():
            with g.saved_tensors_hooks(lambda x: x, lambda x: x):
                with g.disable_saved_tensors_hooks("nope2"):
                    return a * a

        out.append(caught(disable_inside_hooks))
        with g.disable_saved_tensors_hooks("outer"):
            with g.disable_saved_tensors_hooks("inner"):
                out.append(T._C._saved_tensors_hooks_get_disabled_error_message())
            out.append(T._C._saved_tensors_hooks_get_disabled_error_message())
        out.append((T._C._saved_tensors_hooks_get_disabled_error_message(), T._C._saved_tensors_hooks_is_enabled()))
        return out

    def _push_inside_disabled(g):
        with g.disable_saved_tensors_hooks("nope"):
            with g.saved_tensors_hooks(lambda x: x, lambda x: x):
                pass

    import_c = both(_with_autograd_c(program))
    assert import_c == [
        ("E", "RuntimeError", "nope"),
        ("E", "RuntimeError", "nope2"),
        "inner",
        "outer",
        (None, True),
    ]


def _with_autograd_c(program):
    """torch keeps these functions in torch._C._autograd, rgrad in rgrad._C."""

    def run(T):
        if T is rgrad:
            return program(T)

        class _Shim:
            _C = T._C._autograd

        shim = _Shim()
        shim.autograd = T.autograd
        shim.ones = T.ones
        return program(shim)

    return run


def test_top_hooks_and_thread_locality():
    def program(T):
        C = T._C if T is rgrad else T._C._autograd
        log = []
        a = T.ones(2, requires_grad=True)
        pack, unpack = _packer(log)
        out = [C._top_saved_tensors_default_hooks(False)]
        with T.autograd.graph.saved_tensors_hooks(pack, unpack):
            top = C._top_saved_tensors_default_hooks(False)
            out.append(top[0] is pack and top[1] is unpack)
            res = []
            t = threading.Thread(target=lambda: res.append(a.exp()))  # another thread: no hooks
            t.start()
            t.join()
            res[0].sum().backward()
            y = a.exp()
        y.sum().backward()
        return out, [e[0] for e in log]

    assert both(program) == ([None, True], ["pack", "unpack"])


def test_hooks_in_force_at_backward_apply_to_the_graph_it_records():
    def program(T):
        log = []
        a = T.ones(2, requires_grad=True)
        y = a.exp()
        with T.autograd.graph.saved_tensors_hooks(*_packer(log)):
            (g,) = T.autograd.grad(y.sum(), a, create_graph=True)
        g.sum().backward()
        return [e[0] for e in log], a.grad

    log, grad = both(program)
    assert log == ["pack", "unpack"]
    assert grad[3] == pytest.approx([2.718282] * 2)


def test_double_backward_through_packed_leaf_reaches_the_leaf():
    # torch's test_default_saved_variable_hooks_double_backward
    def program(T):
        with T.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
            a = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
            y = a**3
            s = T.sum(y)
            (g,) = T.autograd.grad(s, (a,), create_graph=True)
            g.sum().backward()
        return a.grad

    assert both(program)[3] == [6.0, 12.0, 18.0]


def test_custom_function_saved_tensors_through_hooks():
    def program(T):
        seen = []

        class G(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x * 2
                ctx.save_for_backward(x, y)
                return y

            @staticmethod
            def backward(ctx, g):
                x, y = ctx.saved_tensors
                seen.append((x is a, x.is_leaf, x.requires_grad, x.grad_fn, y.grad_fn))
                x, y = ctx.saved_tensors
                return g * 2 + 0 * x

        log = []
        a = T.ones(2, requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(lambda x: log.append("p") or x.detach(), lambda x: log.append("u") or x):
            y = G.apply(a)
        y.sum().backward()
        return log, seen, a.grad

    log, seen, grad = both(program)
    assert log == ["p", "p", "u", "u", "u", "u"]
    assert seen == [(False, True, True, None, ("N", "GBackward"))]


def test_save_on_cpu():
    def program(T):
        a = T.tensor([0.5, 1.5], requires_grad=True)
        out = []
        for pin in (False, True):
            with T.autograd.graph.save_on_cpu(pin_memory=pin):
                y = (a * a).exp()
            y.sum().backward()
            out.append(a.grad.clone())
            a.grad = None
        return out

    g = both(program)
    assert g[0] == g[1]


# ---- node hooks ---------------------------------------------------------------------------


def test_hook_order_tensor_hooks_retain_grad_node_hooks_and_accumulate_grad():
    def program(T):
        log = []
        a = T.ones(2, requires_grad=True)
        b = a * 2
        c = b * 3
        b.register_hook(lambda g: log.append("tensor_hook_b"))
        b.retain_grad()
        b.grad_fn.register_prehook(lambda go: log.append(("prehook_b", go)))
        b.grad_fn.register_hook(lambda gi, go: log.append(("posthook_b", gi, go)))
        b.register_hook(lambda g: log.append(("tensor_hook_b2", b.grad)))
        acc = b.grad_fn.next_functions[0][0]
        acc.register_prehook(lambda go: log.append(("acc_pre", go, a.grad)))
        acc.register_hook(lambda gi, go: log.append(("acc_post", gi, go, a.grad)))
        a.register_hook(lambda g: log.append("leaf_tensor_hook"))
        c.sum().backward()
        return log

    log = both(program)
    assert [e if isinstance(e, str) else e[0] for e in log] == [
        "tensor_hook_b",
        "tensor_hook_b2",
        "prehook_b",
        "posthook_b",
        "leaf_tensor_hook",
        "acc_pre",
        "acc_post",
    ]


BAD_RETURNS = {
    "pre_int": ("pre", lambda go: 1),
    "pre_two": ("pre", lambda go: (go[0], go[0])),
    "pre_list": ("pre", lambda go: [go[0]]),
    "pre_shape": ("pre", lambda go: (go[0].new_ones(3),)),
    "pre_dtype": ("pre", lambda go: (go[0].double(),)),
    "pre_item": ("pre", lambda go: (1,)),
    "pre_none": ("pre", lambda go: (None,)),
    "pre_scale": ("pre", lambda go: (go[0] * 3,)),
    "post_int": ("post", lambda gi, go: 1),
    "post_one": ("post", lambda gi, go: (gi[0],)),
    "post_none": ("post", lambda gi, go: (gi[0] * 2, None)),
    "post_str": ("post", lambda gi, go: (gi[0] * 2, "x")),
    "post_shape": ("post", lambda gi, go: (gi[0].new_ones(3), gi[1])),
    "acc_post_count": ("acc_post", lambda gi, go: (go[0],)),
    "acc_pre_scale": ("acc_pre", lambda go: (go[0] * 10,)),
}


@pytest.mark.parametrize("case", sorted(BAD_RETURNS))
def test_what_node_hooks_return_is_checked_as_torch_checks_it(case):
    kind, hook = BAD_RETURNS[case]

    def program(T):
        a = T.ones(2, requires_grad=True)
        b = T.ones(2, requires_grad=True)
        y = a * b
        if kind == "pre":
            y.grad_fn.register_prehook(hook)
        elif kind == "post":
            y.grad_fn.register_hook(hook)
        elif kind == "acc_pre":
            y.grad_fn.next_functions[0][0].register_prehook(hook)
        else:
            y.grad_fn.next_functions[0][0].register_hook(hook)
        return caught(lambda: y.sum().backward()), a.grad, b.grad

    r = both(program)
    assert len(r) == 3


def test_hook_handles_remove_and_metadata_persists():
    def program(T):
        log = []
        a = T.ones(2, requires_grad=True)
        b = a * 2
        h = b.grad_fn.register_prehook(lambda go: log.append("pre"))
        h2 = b.grad_fn.register_hook(lambda gi, go: log.append("post"))
        acc = b.grad_fn.next_functions[0][0]
        h3 = acc.register_hook(lambda gi, go: log.append("acc"))
        h.remove()
        h.remove()
        b.sum().backward(retain_graph=True)
        h2.remove()
        h3.remove()
        b.sum().backward()
        b.grad_fn.metadata["k"] = 1
        return (
            log,
            b.grad_fn.metadata,
            b.grad_fn.metadata is b.grad_fn.metadata,
            acc is b.grad_fn.next_functions[0][0],
            acc.metadata,
            type(h).__name__,
            isinstance(acc, T.autograd.graph.Node),
            isinstance(b.grad_fn, T.autograd.graph.Node),
        )

    assert both(program) == (["post", "acc"], {"k": 1}, True, True, {}, "RemovableHandle", True, True)


def test_metadata_lives_with_the_node_not_its_python_object():
    a = rgrad.ones(2, requires_grad=True)
    b = a * 2
    b.grad_fn.metadata["tag"] = "x"
    gc.collect()  # the node object may die: its metadata stays with the node
    assert b.grad_fn.metadata == {"tag": "x"}


def test_grad_does_not_run_accumulate_grad_hooks():
    def program(T):
        log = []
        a = T.ones(2, requires_grad=True)
        b = a * 2
        acc = b.grad_fn.next_functions[0][0]
        acc.register_prehook(lambda go: log.append("acc_pre"))
        acc.register_hook(lambda gi, go: log.append("acc_post"))
        a.register_hook(lambda g: log.append("tensor"))
        b.grad_fn.register_prehook(lambda go: log.append("pre"))
        (g,) = T.autograd.grad(b.sum(), a)
        return log, g

    log, g = both(program)
    assert log == ["pre", "tensor"]


def test_node_hooks_on_custom_function_nodes():
    def program(T):
        class Sq(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g

        log = []
        a = T.tensor([3.0], requires_grad=True)
        y = Sq.apply(a)
        y.grad_fn.register_prehook(lambda go: log.append(("pre", go)) or (go[0] * 10,))
        y.grad_fn.register_hook(lambda gi, go: log.append(("post", gi, go)))
        y.grad_fn.metadata["m"] = 2
        y.sum().backward()
        return log, a.grad, y.grad_fn.metadata

    log, grad, meta = both(program)
    assert grad[3] == [60.0]


# ---- register_multi_grad_hook ------------------------------------------------------------


def test_multi_grad_hook_all_mode_docstring_example():
    def program(T):
        out = []
        a = T.rand(2, 3, requires_grad=True)
        b = T.rand(2, 3, requires_grad=True)
        c = a * b
        d = a * b
        T.autograd.graph.register_multi_grad_hook((a, b, c, d), lambda grads: out.append([g is not None for g in grads]))
        c.sum().backward(retain_graph=True)
        c.sum().backward(inputs=(a,), retain_graph=True)
        return out

    assert both(program) == [[True, True, True, False], [True, False, True, False]]


def test_multi_grad_hook_any_mode_and_removal():
    def program(T):
        out = []
        a = T.ones(2, requires_grad=True)
        b = T.full((2,), 3.0, requires_grad=True)
        h = T.autograd.graph.register_multi_grad_hook((a, b), lambda g: out.append(g), mode="any")
        (a * b).sum().backward()
        (a * b).sum().backward()
        h.remove()
        (a * b).sum().backward()
        bad = caught(lambda: T.autograd.graph.register_multi_grad_hook((a,), lambda g: None, mode="some"))
        return out, bad

    out, bad = both(program)
    assert len(out) == 2
    assert bad == ("E", "ValueError", "Expects mode to be one of ('all', 'any') but got some")


def test_multi_grad_hook_with_grad_and_nonleaf_inputs():
    def program(T):
        out = []
        a = T.ones(2, requires_grad=True)
        b = a * 2
        c = b * 3
        T.autograd.graph.register_multi_grad_hook((b, c), lambda grads: out.append(grads))
        T.autograd.grad(c.sum(), (b,))
        return out

    assert len(both(program)) == 1


def test_multi_grad_hook_leaf_under_grad_and_inputs_subsets():
    def program(T):
        out = []
        a = T.ones(2, requires_grad=True)
        b = a * 2
        c = b * 3
        T.autograd.graph.register_multi_grad_hook((a, b), lambda grads: out.append([g is not None for g in grads]))
        return (
            caught(lambda: T.autograd.grad(c.sum(), (a,), retain_graph=True)),
            caught(lambda: T.autograd.grad(c.sum(), (b,), retain_graph=True)),
            caught(lambda: c.sum().backward(inputs=(b,), retain_graph=True)),
            caught(lambda: c.sum().backward(retain_graph=True)),
            out,
        )

    r = both(program)
    assert r[0][2].startswith("A leaf node was passed to _will_engine_execute_node")
    assert r[4] == [[False, True], [False, True], [True, True]]


def test_will_engine_execute_node_outside_backward():
    def program(T):
        a = T.ones(2, requires_grad=True)
        return caught(lambda: T._C._will_engine_execute_node((a * 2).grad_fn)), T._C._current_graph_task_id()

    err, gid = both(program)
    assert err == ("E", "RuntimeError", "_get_should_execute_nodes should only be called during the backward pass")
    assert gid == -1


# ---- GradientEdge ------------------------------------------------------------------------


def test_gradient_edges_as_grad_and_backward_inputs():
    def program(T):
        G = T.autograd.graph
        a = T.tensor([1.0, 2.0], requires_grad=True)
        b = a.exp()
        c = (b * b).sum()
        ea, eb = G.get_gradient_edge(a), G.get_gradient_edge(b)
        by_edge = T.autograd.grad(c, (ea, eb), retain_graph=True)
        by_tensor = T.autograd.grad(c, (a, b), retain_graph=True)
        c.backward(inputs=[ea], retain_graph=True)
        # a GradientEdge as output, with its gradient given
        (gb,) = T.autograd.grad(eb, a, grad_outputs=T.ones(2), retain_graph=True)
        names = [e.node.name().rsplit("::", 1)[-1] for e in (ea, eb)]
        return by_edge, by_tensor, a.grad, gb, ea.output_nr, names

    r = both(program)
    assert r[0] == r[1]
    assert r[5] == ["AccumulateGrad", "ExpBackward0"]


def test_gradient_edge_errors():
    def program(T):
        G = T.autograd.graph
        x = T.ones(2)
        a = T.ones(2, requires_grad=True)
        b = T.ones(2, requires_grad=True) * 2
        unused = G.get_gradient_edge(a)
        return (
            caught(lambda: G.get_gradient_edge(x)),
            caught(lambda: T.autograd.grad(b.sum(), unused, materialize_grads=True)),
            caught(lambda: T.autograd.grad(b.sum(), unused, allow_unused=True)),
        )

    r = both(program)
    assert r[0] == (
        "E",
        "RuntimeError",
        "It is not possible to get the gradient edge for a Tensor that does not require gradients",
    )
    assert r[1] == ("E", "RuntimeError", "materialize_grads cannot be used when the given input is a GradientEdge")
    assert r[2] == (None,)


def test_gradient_edge_of_a_custom_function_output_keeps_the_graph_alive():
    def program(T):
        class Id(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                return g * 3

        a = T.ones(2, requires_grad=True)
        y = Id.apply(a)
        edge = T.autograd.graph.get_gradient_edge(y)
        z = (y * 2).sum()
        return T.autograd.grad(z, edge), edge.ownership_token is not None

    grads, owned = both(program)
    assert owned is True


# ---- increment_version, allow_mutation_on_saved_tensors ------------------------------------


def test_increment_version():
    def program(T):
        a = T.ones(2, requires_grad=True)
        b = a * 1
        y = b * b
        v0 = b._version
        T.autograd.graph.increment_version(b)
        T.autograd.graph.increment_version([b, b])
        return v0, b._version, caught(lambda: y.sum().backward())

    v0, v1, err = both(program)
    assert (v0, v1) == (0, 3)
    assert err[2].startswith("one of the variables needed for gradient computation has been modified")


def test_allow_mutation_on_saved_tensors():
    def program(T):
        G = T.autograd.graph
        with G.allow_mutation_on_saved_tensors() as ctx:
            a = T.tensor([[0.5, 1.0, 2.0]], requires_grad=True)
            b = a.clone()
            out = (b**2).sum()
            b.sin_()
            out.sum().backward()
            inside = (type(ctx).__name__, b.clone())

        def nested():
            with G.allow_mutation_on_saved_tensors():
                with G.allow_mutation_on_saved_tensors():
                    pass

        def outside():
            with G.allow_mutation_on_saved_tensors():
                c = T.ones(2, requires_grad=True).clone()
                y = (c * c).sum()
            y.backward()

        plain = T.tensor([1.0], requires_grad=True).clone()
        z = plain * plain
        plain.add_(1)
        return inside, a.grad, caught(nested), caught(outside), caught(lambda: z.backward())

    inside, grad, nested, outside, plain = both(program)
    assert grad[3] == [[1.0, 2.0, 4.0]]  # 2 * b before sin_
    assert nested == ("E", "RuntimeError", "allow_mutation_on_saved_tensors contexts cannot be nested")
    assert outside[1] == "AssertionError"
    assert plain[1] == "RuntimeError"


# ---- threads -------------------------------------------------------------------------------


def _run_threads(work, n=8):
    barrier = threading.Barrier(n)
    errors = []

    def body(i):
        try:
            barrier.wait()
            work(i)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a backward thread hung"
    if errors:
        raise errors[0]


@pytest.mark.parametrize("trial", range(TRIALS))
def test_hooks_of_every_kind_from_eight_threads(trial):
    shared = rgrad.tensor([1.0, 2.0, 3.0], dtype=rgrad.float64, requires_grad=True)
    acc_calls = []
    shared_acc = (shared * 1).grad_fn.next_functions[0][0]
    handle = shared_acc.register_hook(lambda gi, go: acc_calls.append(1))
    calls = 20

    def work(i):
        own = rgrad.full((3,), float(i + 1), dtype=rgrad.float64, requires_grad=True)
        for k in range(calls):
            log = []
            multi = []
            with rgrad.autograd.graph.saved_tensors_hooks(
                lambda x: log.append(("p", i)) or x.detach(), lambda x: log.append(("u", i)) or x
            ):
                h = own * shared
                y = (h * h).sum() + h.sum() if k % 2 else (h * h).sum()
            h.grad_fn.register_prehook(lambda go: log.append(("pre", i)))
            h.grad_fn.register_hook(lambda gi, go: log.append(("post", i)))
            mh = rgrad.autograd.graph.register_multi_grad_hook((own, h), lambda gs: multi.append(len(gs)))
            y.backward()
            mh.remove()
            assert all(e[1] == i for e in log), "a hook ran for another thread's graph"
            assert [e[0] for e in log].count("pre") == 1 and [e[0] for e in log].count("post") == 1
            assert [e[0] for e in log].count("p") == [e[0] for e in log].count("u")
            assert multi == [2]
        # d/d own: 2 own shared^2 for every k, + shared for odd k
        s = [1.0, 2.0, 3.0]
        assert own.grad.tolist() == [calls * 2 * (i + 1) * v * v + calls // 2 * v for v in s]

    _run_threads(work)
    handle.remove()
    assert len(acc_calls) == 8 * calls
    # d/d shared: 2 own^2 shared (+ own for odd k), own = 1..8
    s = [1.0, 2.0, 3.0]
    own2 = sum((i + 1) ** 2 for i in range(8))
    own1 = sum(i + 1 for i in range(8))
    assert shared.grad.tolist() == [calls * 2 * own2 * v + calls // 2 * own1 for v in s]


@pytest.mark.parametrize("trial", range(TRIALS))
def test_saved_tensor_hooks_are_exact_under_concurrent_backward(trial):
    # integer-valued float64: any lost or doubled gradient shows as a wrong number
    x = rgrad.zeros(4, dtype=rgrad.float64, requires_grad=True)
    calls = 25

    def work(i):
        w = rgrad.full((4,), 2.0, dtype=rgrad.float64)
        for _ in range(calls):
            with rgrad.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
                y = ((x + 1) * w * (x + 3)).sum()
            y.backward()

    _run_threads(work)
    # d/dx (x+1)*2*(x+3) at 0 = 2*(x+3) + 2*(x+1) = 8
    assert x.grad.tolist() == [8.0 * 8 * calls] * 4


# ---- Tensor.register_post_accumulate_grad_hook ------------------------------------------


def test_post_accumulate_grad_hook_sees_the_leaf_after_its_grad_is_updated_in_torchs_order():
    torch = pytest.importorskip("torch")
    for m in (rgrad, torch):
        x = m.ones(2, requires_grad=True)
        order = []
        x.register_hook(lambda g: order.append(("tensor", g.tolist())))
        x.register_post_accumulate_grad_hook(lambda t: order.append(("post", t is x, t.grad.tolist())))
        acc = (x * 1).grad_fn.next_functions[0][0]
        acc.register_hook(lambda gi, go: order.append(("node",)))

        def scale(t):
            t.grad.mul_(10)

        x.register_post_accumulate_grad_hook(scale)
        (x * 3).sum().backward()
        assert order == [("tensor", [3.0, 3.0]), ("post", True, [3.0, 3.0]), ("node",)], m
        assert x.grad.tolist() == [30.0, 30.0]


def test_post_accumulate_grad_hook_runs_for_backward_not_for_grad_and_can_be_removed():
    x = rgrad.ones(2, requires_grad=True)
    calls = []
    h = x.register_post_accumulate_grad_hook(lambda t: calls.append(t.grad.sum().item()))
    rgrad.autograd.grad((x * 2).sum(), x)
    assert calls == []
    (x * 2).sum().backward(inputs=[x])
    (x * 2).sum().backward()
    assert calls == [4.0, 8.0]
    h.remove()
    (x * 2).sum().backward()
    assert calls == [4.0, 8.0]


def test_post_accumulate_grad_hook_errors_are_torchs():
    torch = pytest.importorskip("torch")
    for make, exc in ((lambda m: m.ones(2, requires_grad=True) * 2, RuntimeError),
                      (lambda m: m.ones(2), RuntimeError)):
        with pytest.raises(exc) as want:
            make(torch).register_post_accumulate_grad_hook(lambda t: None)
        with pytest.raises(exc) as got:
            make(rgrad).register_post_accumulate_grad_hook(lambda t: None)
        assert str(got.value) == str(want.value)
    for ret, exc in ((lambda t: t.grad, RuntimeError), (lambda t: 5, TypeError)):
        msgs = []
        for m in (torch, rgrad):
            x = m.ones(2, requires_grad=True)
            x.register_post_accumulate_grad_hook(ret)
            with pytest.raises(exc) as e:
                (x * 2).sum().backward()
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]


def test_post_accumulate_grad_hooks_from_many_threads_see_every_accumulation():
    import threading

    x = rgrad.ones(64, requires_grad=True)
    lock = threading.Lock()
    seen = []

    def hook(t):
        with lock:
            seen.append(1)

    x.register_post_accumulate_grad_hook(hook)

    def work():
        for _ in range(20):
            (x * 2).sum().backward()

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 160
    assert x.grad.tolist() == [320.0] * 64
