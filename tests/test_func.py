"""rgrad.func (grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, functional_call)
against torch.func: the same programs give the same values, structures, shapes, dtypes and
requires_grad, and raise the same errors (torch's text with "torch" read as "rgrad");
nesting (grad(grad(f)), jacfwd(jacrev(f)), ...) and composition with outer autograd as
torch.func; finite differences in float64; rgrad's documented differences (one dual level,
functional_call on functions); jacrev / jacfwd batched through vmap as torch.func's (func
run once, one batched backward per chunk of rows); vmap is tested in tests/test_vmap.py."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import rgrad
import rgrad.func as RF
from rgrad.utils import _pytree

# torch.func.jvp loads torch's jvp decompositions, which warn about torch.jit.script
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _t(lib, data, requires_grad=False):
    return lib.tensor(data, dtype=lib.float64, requires_grad=requires_grad)


def _describe(value, lib_name):
    """A comparable picture of a result: containers by type, tensors as (values, shape, dtype, requires_grad)."""
    if isinstance(value, dict):
        return ("dict", [(k, _describe(v, lib_name)) for k, v in value.items()])
    if isinstance(value, tuple):
        return ("tuple", [_describe(v, lib_name) for v in value])
    if isinstance(value, list):
        return ("list", [_describe(v, lib_name) for v in value])
    if hasattr(value, "requires_grad") and hasattr(value, "tolist"):
        vals = value.detach().tolist()
        if value.dtype.is_floating_point:
            vals = np.round(np.asarray(vals, dtype=np.float64), 9).tolist()
        return ("T", vals, tuple(value.shape), str(value.dtype).replace(lib_name, "LIB"), value.requires_grad)
    return ("obj", repr(value))


def _run(lib, call):
    try:
        return ("ok", _describe(call(), lib.__name__))
    except Exception as e:  # noqa: BLE001  (the error is the result)
        return (type(e).__name__, str(e).replace(lib.__name__ + ".", "LIB."))


def _same(torch, make_call):
    """make_call(lib) -> a zero-argument call; it must give the same picture with rgrad and torch."""
    ours = _run(rgrad, make_call(rgrad))
    theirs = _run(torch, make_call(torch))
    assert ours == theirs
    return ours


def _programs(lib):
    F = lib.func
    x = _t(lib, [0.5, -1.0, 2.0])
    xr = _t(lib, [0.5, -1.0, 2.0], True)
    y = _t(lib, [[1.0, 2.0], [0.3, -0.4]])
    w = _t(lib, 1.5, True)
    f = lambda a: (a.sin() * a).sum()  # noqa: E731
    g2 = lambda a, b: (a.unsqueeze(1) * b.sum(0)).exp().sum() / (1 + b.pow(2).sum())  # noqa: E731
    tree_f = lambda d: (d["u"] * d["v"][0].cos()).sum() + d["v"][1].sum() ** 2  # noqa: E731
    tree = {"u": x, "v": [x * 2, y]}
    multi = lambda a, b: {"s": a * b[0].sum(), "t": (a.sum(), b.t() * a[1])}  # noqa: E731
    return {
        # grad / grad_and_value
        "grad": lambda: F.grad(f)(x),
        "grad_requires_grad_input": lambda: F.grad(f)(xr),
        "grad_linear_requires_grad_input": lambda: F.grad(lambda a: (a * 2).sum())(xr),
        "grad_closure_requires_grad": lambda: F.grad(lambda a: (a * w).sin().sum())(x),
        "grad_argnums_1": lambda: F.grad(g2, argnums=1)(x, y),
        "grad_argnums_tuple": lambda: F.grad(g2, argnums=(0, 1))(x, y),
        "grad_argnums_tuple_reversed": lambda: F.grad(g2, argnums=(1, 0))(x, y),
        "grad_argnums_negative": lambda: F.grad(g2, argnums=-1)(x, y),
        "grad_argnums_one_tuple": lambda: F.grad(f, argnums=(0,))(x),
        "grad_pytree_arg": lambda: F.grad(tree_f)(tree),
        "grad_kwargs": lambda: F.grad(lambda a, b=None: (a * b).sum())(x, b=xr),
        "grad_has_aux": lambda: F.grad(lambda a: (f(a), {"c": a.cos(), "l": [a * 2]}), has_aux=True)(x),
        "grad_has_aux_requires_grad": lambda: F.grad(lambda a: (f(a), a.cos()), has_aux=True)(xr),
        "grad_unused_input": lambda: F.grad(lambda a, b: (a * 2).sum(), argnums=(0, 1))(x, y),
        "grad_int_output": lambda: F.grad(lambda a: (a > 0).sum())(x),
        "grad_and_value": lambda: F.grad_and_value(f)(x),
        "grad_and_value_requires_grad": lambda: F.grad_and_value(f)(xr),
        "grad_and_value_has_aux": lambda: F.grad_and_value(lambda a: (f(a), a * 3), has_aux=True)(x),
        "grad_grad": lambda: F.grad(F.grad(lambda a: a.sin() * a ** 3))(_t(lib, 0.7)),
        "grad_grad_grad": lambda: F.grad(F.grad(F.grad(lambda a: a.exp() * a ** 3)))(_t(lib, 0.7)),
        "grad_of_sum_of_grad": lambda: F.grad(lambda a: F.grad(f)(a).pow(2).sum())(x),
        "grad_float32": lambda: F.grad(lambda a: (a * a).sum())(lib.tensor([1.0, 2.0])),
        # vjp
        "vjp": lambda: (lambda o, fn: (o, fn(_t(lib, [1.0, 2.0, -1.0]))))(*F.vjp(lambda a: a.exp() * a, x)),
        "vjp_requires_grad": lambda: (lambda o, fn: (o, fn(_t(lib, [1.0, 2.0, -1.0]))))(*F.vjp(lambda a: a.exp(), xr)),
        "vjp_two_primals": lambda: (lambda o, fn: (o, fn({"s": x, "t": (_t(lib, 1.0), y)})))(*F.vjp(multi, x, y)),
        "vjp_pytree_primal": lambda: (lambda o, fn: (o, fn(_t(lib, 2.0))))(*F.vjp(tree_f, tree)),
        "vjp_has_aux": lambda: (lambda o, fn, aux: (o, fn(x), aux))(
            *F.vjp(lambda a: (a.sin(), [a.cos(), {"k": a * 2}]), x, has_aux=True)),
        "vjp_cotangent_requires_grad": lambda: F.vjp(lambda a: a.sin(), x)[1](xr),
        "vjp_fn_twice": lambda: (lambda o, fn: (fn(x), fn(x * 2)))(*F.vjp(lambda a: a.sin() * a, x)),
        "vjp_fn_no_create_graph": lambda: F.vjp(lambda a: a.exp(), xr)[1](x, create_graph=False),
        "vjp_independent_output": lambda: F.vjp(lambda a: _t(lib, [1.0, 2.0]), x)[1](_t(lib, [1.0, 1.0])),
        # jvp
        "jvp": lambda: F.jvp(lambda a: a.exp() * a, (x,), (_t(lib, [1.0, 0.5, -2.0]),)),
        "jvp_two_primals": lambda: F.jvp(multi, (x, y), (x * 0.5, y * 2)),
        "jvp_pytree_primal": lambda: F.jvp(tree_f, (tree,), ({"u": x, "v": [x, y]},)),
        "jvp_has_aux": lambda: F.jvp(lambda a: (a.sin(), {"c": a.cos()}), (x,), (x,), has_aux=True),
        "jvp_independent_output": lambda: F.jvp(lambda a: (a * 2, _t(lib, [1.0])), (x,), (x,)),
        "jvp_requires_grad": lambda: F.jvp(lambda a: a.sin() * a, (xr,), (x,)),
        "jvp_of_grad": lambda: F.jvp(F.grad(f), (x,), (_t(lib, [1.0, 0.0, 2.0]),)),
        "jvp_of_grad_requires_grad": lambda: F.jvp(F.grad(f), (xr,), (_t(lib, [1.0, 0.0, 2.0]),)),
        # jacrev / jacfwd / hessian
        **{f"{name}_vec": (lambda jac: lambda: jac(lambda a: a.exp() * a.sum())(x))(getattr(F, name))
           for name in ("jacrev", "jacfwd")},
        **{f"{name}_requires_grad": (lambda jac: lambda: jac(lambda a: a.exp() * a.sum())(xr))(getattr(F, name))
           for name in ("jacrev", "jacfwd")},
        **{f"{name}_scalar_in": (lambda jac: lambda: jac(lambda a: a * y)(_t(lib, 0.3)))(getattr(F, name))
           for name in ("jacrev", "jacfwd")},
        **{f"{name}_scalar_out": (lambda jac: lambda: jac(f)(x))(getattr(F, name)) for name in ("jacrev", "jacfwd")},
        **{f"{name}_matrix": (lambda jac: lambda: jac(lambda b: b @ b.t())(y))(getattr(F, name))
           for name in ("jacrev", "jacfwd")},
        **{f"{name}_pytree_out_tuple_argnums": (lambda jac: lambda: jac(multi, argnums=(0, 1))(x, y))(getattr(F, name))
           for name in ("jacrev", "jacfwd")},
        **{f"{name}_argnums_1": (lambda jac: lambda: jac(multi, argnums=1)(x, y))(getattr(F, name))
           for name in ("jacrev", "jacfwd")},
        **{f"{name}_pytree_in": (lambda jac: lambda: jac(lambda d: d["u"] * d["v"][0])({"u": x, "v": [x]}))(
            getattr(F, name)) for name in ("jacrev", "jacfwd")},
        **{f"{name}_has_aux": (lambda jac: lambda: jac(lambda a: (a.sin(), a.cos()), has_aux=True)(x))(
            getattr(F, name)) for name in ("jacrev", "jacfwd")},
        **{f"{name}_empty_input": (lambda jac: lambda: jac(lambda a: a * 2)(lib.ones(0, 3, dtype=lib.float64)))(
            getattr(F, name)) for name in ("jacrev", "jacfwd")},
        **{f"{name}_independent_output": (lambda jac: lambda: jac(lambda a: _t(lib, [1.0, 2.0]))(x))(getattr(F, name))
           for name in ("jacrev", "jacfwd")},
        "jacfwd_bool_output": lambda: F.jacfwd(lambda a: a > 0)(x),
        "jacfwd_nondiff_arg": lambda: F.jacfwd(lambda a, n: a * n, argnums=0)(x, 2),
        "jacrev_chunk_size_1": lambda: F.jacrev(lambda a: a.exp(), chunk_size=1)(x),
        "jacrev_chunk_size_2": lambda: F.jacrev(lambda a: a.exp(), chunk_size=2)(x),
        "hessian": lambda: F.hessian(f)(x),
        "hessian_matrix": lambda: F.hessian(lambda b: (b @ b).sin().sum())(y),
        "hessian_argnums_tuple": lambda: F.hessian(g2, argnums=(0, 1))(x, y),
        "hessian_requires_grad": lambda: F.hessian(f)(xr),
        "hessian_closure": lambda: F.hessian(lambda a: (a * w).sin().sum())(x),
        "jacrev_jacrev": lambda: F.jacrev(F.jacrev(lambda a: a.sin() * a.sum()))(x),
        "jacrev_jacfwd": lambda: F.jacrev(F.jacfwd(lambda a: a.sin() * a.sum()))(x),
        "jacfwd_jacrev": lambda: F.jacfwd(F.jacrev(lambda a: a.sin() * a.sum()))(x),
        "jacrev_grad": lambda: F.jacrev(F.grad(f))(x),
        "jacfwd_grad": lambda: F.jacfwd(F.grad(f))(x),
        "grad_jvp": lambda: F.grad(lambda a: F.jvp(lambda b: b.sin() * b, (a,), (x,))[1].sum())(x),
        "jacrev_vjp": lambda: F.jacrev(lambda a: F.vjp(lambda b: b.exp() * b, a)[1](x)[0])(x),
        # the batched paths (vmap over vjp_fn / jvp): chunks of rows, chunk_size=1's loop,
        # pytrees, aux, empty outputs, dtypes, nesting
        **{f"jacrev_chunk_size_{cs}_pytree_out_tuple_argnums": (
            lambda cs: lambda: F.jacrev(multi, argnums=(0, 1), chunk_size=cs)(x, y))(cs)
           for cs in (1, 2, 3, 5, 7, 100, None)},
        **{f"jacrev_chunk_size_{cs}_has_aux_requires_grad": (
            lambda cs: lambda: F.jacrev(lambda a: (a.sin() * a.sum(), {"c": a.cos()}), has_aux=True,
                                        chunk_size=cs)(xr))(cs)
           for cs in (1, 2, None)},
        "jacrev_chunk_size_2_pytree_in": lambda: F.jacrev(lambda d: d["u"] * d["v"][0].sum(), chunk_size=2)(
            {"u": x, "v": [y]}),
        **{f"{name}_empty_output": (lambda jac: lambda: jac(lambda a: (a[:0], a.sum() * a))(x))(getattr(F, name))
           for name in ("jacrev", "jacfwd")},
        **{f"{name}_only_empty_output": (lambda jac: lambda: jac(lambda a: a[:0] * 2)(x))(getattr(F, name))
           for name in ("jacrev", "jacfwd")},
        **{f"{name}_float32": (lambda jac: lambda: jac(lambda a: a.exp() * a.sum())(lib.tensor([1.0, 2.0])))(
            getattr(F, name)) for name in ("jacrev", "jacfwd")},
        **{f"{name}_function_form": (lambda jac: lambda: jac(lib.sin)(x))(getattr(F, name))
           for name in ("jacrev", "jacfwd")},
        **{f"{name}_linear_layer_argnums": (lambda jac: lambda: jac(
            lambda W, b, a: lib.nn.functional.linear(a, W, b).tanh(), argnums=(0, 1, 2))(y, x[:2], x[1:]))(
            getattr(F, name)) for name in ("jacrev", "jacfwd")},
        "jacfwd_has_aux_requires_grad": lambda: F.jacfwd(lambda a: (a.sin(), {"d": a * 2}), has_aux=True)(xr),
        "jacfwd_reads_input_values": lambda: F.jacfwd(lambda a: a * float(a.sum()) + a[0].item())(x),
        **{f"jacfwd_randomness_{mode}_no_random_op": (
            lambda mode: lambda: F.jacfwd(lambda a: a.exp() * a.sum(), randomness=mode)(xr))(mode)
           for mode in ("same", "different", "error")},
        "jacfwd_randomness_same_has_aux": lambda: F.jacfwd(lambda a: (a.sin(), a.cos()), has_aux=True,
                                                           randomness="same")(x),
        "jacrev_jacrev_chunked": lambda: F.jacrev(F.jacrev(lambda a: a.sin() * a.sum(), chunk_size=2),
                                                  chunk_size=2)(x),
        "jacfwd_jacrev_chunked": lambda: F.jacfwd(F.jacrev(lambda a: a.sin() * a.sum(), chunk_size=2))(x),
        "jacfwd_jacrev_requires_grad_closure": lambda: F.jacfwd(F.jacrev(lambda a: (a * w).sin() * a.sum()))(x),
        "hessian_pytree_in": lambda: F.hessian(tree_f)(tree),
        "hessian_argnums_tuple_requires_grad": lambda: F.hessian(g2, argnums=(0, 1))(xr, y),
        "grad_of_jacrev": lambda: F.grad(lambda a: F.jacrev(lambda b: b.sin() * b.sum())(a).sum())(x),
        "grad_of_jacfwd": lambda: F.grad(lambda a: F.jacfwd(lambda b: b.sin() * b.sum())(a).sum())(x),
        "grad_of_hessian": lambda: F.grad(lambda a: F.hessian(f)(a).sum())(x),
        "vmap_jacrev_chunk_size_1": lambda: F.vmap(F.jacrev(lambda a: a.sin() * a.sum(), chunk_size=1))(y),
        "vmap_jacrev_chunk_size_2": lambda: F.vmap(F.jacrev(lambda a: a.sin() * a.sum(), chunk_size=2))(y),
        "vmap_jacfwd_has_aux": lambda: F.vmap(F.jacfwd(lambda a: (a.exp() * a.sum(), a.cos()), has_aux=True))(y),
        "vmap_hessian_in_dims_none": lambda: F.vmap(F.hessian(lambda a, b: (a.sin() * b).sum()),
                                                    in_dims=(None, 0))(x[:2], y),
        "vmap_jacrev_closure_requires_grad": lambda: F.vmap(F.jacrev(lambda a: (a * w).sin() * a.sum()))(y),
        "vmap_jacrev_in_dims_none": lambda: F.vmap(F.jacrev(lambda a, b: a.exp() * b.sum(), argnums=(0, 1)),
                                                   in_dims=(None, 0))(x[:2], y),
        "vmap_jacrev_unused_and_independent": lambda: F.vmap(F.jacrev(lambda a, b: (a.sin(), w * 2),
                                                                      argnums=(0, 1)))(y, y),
        "vmap_vmap_jacrev": lambda: F.vmap(F.vmap(F.jacrev(lambda a: a.sin() * a.sum())))(
            y.unsqueeze(0).expand(2, 2, 2) * x[:2].unsqueeze(-1).unsqueeze(-1)),
        "vmap_jacrev_jacrev": lambda: F.vmap(F.jacrev(F.jacrev(lambda a: a.sin() * a.exp().sum())))(y),
        "grad_of_vmap_jacrev": lambda: lib.autograd.grad(
            F.vmap(F.jacrev(lambda a: (a * w).sin() * a.sum()))(y).pow(2).sum(), w),
        "jacrev_of_vmap_chunked": lambda: F.jacrev(lambda a: F.vmap(lambda r: r.exp() * r.sum())(a),
                                                   chunk_size=3)(y),
    }


@pytest.mark.parametrize("name", sorted(_programs(rgrad)))
def test_program_matches_torch(torch, name):
    status, _ = _same(torch, lambda lib: _programs(lib)[name])
    assert status == "ok"


def test_no_grad_detaches_every_result(torch):
    def make(lib):
        F = lib.func
        xr = _t(lib, [0.5, -1.0, 2.0], True)
        f = lambda a: (a.sin() * a).sum()  # noqa: E731

        def call():
            with lib.no_grad():
                o, fn = F.vjp(lib.sin, xr)
                return (F.grad(f)(xr), F.grad_and_value(f)(xr), o, fn(xr.detach()), F.jacrev(lib.sin)(xr),
                        F.jacfwd(lib.sin)(xr), F.hessian(f)(xr), F.jvp(lib.sin, (xr,), (xr.detach(),)))
        return call

    status, described = _same(torch, make)
    assert status == "ok" and "True" not in repr(described)


def test_outer_autograd_through_transforms_matches_torch(torch):
    """grad(f)(x) (and the others) with x requiring grad are functions of x that outer
    autograd differentiates, as torch.func's."""
    def make(lib):
        F = lib.func
        f = lambda a: (a.sin() * a.exp()).sum()  # noqa: E731

        def call():
            x = _t(lib, [0.5, -1.0, 2.0], True)
            w = _t(lib, 0.7, True)
            t = _t(lib, [1.0, 0.5, -2.0])
            results = [
                F.grad(f)(x),
                F.grad_and_value(f)(x)[1],
                F.vjp(lambda a: a.sin() * a, x)[1](t)[0],
                F.jvp(lambda a: a.sin() * a, (x,), (t,))[1],
                F.jacrev(lambda a: a.exp() * a.sum())(x),
                F.jacfwd(lambda a: a.exp() * a.sum())(x),
                F.hessian(f)(x),
                F.grad(lambda a: (a * w).cos().sum())(x),
            ]
            out = []
            for r in results:
                out.append(lib.autograd.grad((r * r).sum(), (x, w), allow_unused=True, materialize_grads=True))
            # and backward() into .grad
            (F.grad(f)(x).sum() + F.hessian(f)(x).sum()).backward()
            out.append(x.grad)
            return tuple(out)
        return call

    status, _ = _same(torch, make)
    assert status == "ok"


def test_value_and_gradient_backward_together(torch):
    """The value of grad_and_value stays differentiable after the gradient was taken."""
    def make(lib):
        def call():
            x = _t(lib, [0.5, -1.0, 2.0], True)
            g, v = lib.func.grad_and_value(lambda a: (a ** 3).sum())(x)
            (g.sum() + v).backward()
            return x.grad
        return call

    status, _ = _same(torch, make)
    assert status == "ok"


# ---------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------

def _error_calls(lib):
    F = lib.func
    x = _t(lib, [0.5, -1.0, 2.0])
    f = lambda a: (a.sin() * a).sum()  # noqa: E731
    ints = lib.tensor([1, 2])
    return {
        "grad_nonscalar": lambda: F.grad(lambda a: a.sin())(x),
        "grad_and_value_nonscalar_2d": lambda: F.grad_and_value(lambda a: a.reshape(3, 1))(x),
        "grad_float_output": lambda: F.grad(lambda a: 3.0)(x),
        "grad_tuple_output": lambda: F.grad(lambda a: (f(a), f(a), f(a)))(x),
        "grad_has_aux_not_pair": lambda: F.grad(f, has_aux=True)(x),
        "grad_has_aux_triple": lambda: F.grad(lambda a: (f(a), a, a), has_aux=True)(x),
        "grad_has_aux_int_aux": lambda: F.grad(lambda a: (f(a), 3), has_aux=True)(x),
        "grad_has_aux_none_aux": lambda: F.grad(lambda a: (f(a), None), has_aux=True)(x),
        "grad_argnum_out_of_range": lambda: F.grad(f, argnums=1)(x),
        "grad_argnum_negative_out_of_range": lambda: F.grad(f, argnums=-2)(x),
        "grad_argnums_repeated": lambda: F.grad(f, argnums=(0, 0))(x),
        "grad_argnums_negative_repeated": lambda: F.grad(lambda a, b: f(a), argnums=(0, -2))(x, x),
        "grad_argnums_empty": lambda: F.grad(f, argnums=())(x),
        "grad_argnums_list": lambda: F.grad(f, argnums=[0])(x),
        "grad_argnums_float": lambda: F.grad(f, argnums=0.0)(x),
        "grad_argnums_tuple_of_float": lambda: F.grad(f, argnums=(0.0,))(x),
        "grad_nontensor_arg": lambda: F.grad(lambda a, n: f(a), argnums=1)(x, 3),
        "grad_pytree_with_int": lambda: F.grad(lambda d: f(d["a"]))({"a": x, "n": 3}),
        "grad_int_input": lambda: F.grad(f)(ints),
        "vjp_bool_output": lambda: F.vjp(lambda a: a > 0, x),
        "vjp_int_output": lambda: F.vjp(lambda a: 3, x),
        "vjp_none_output": lambda: F.vjp(lambda a: None, x),
        "vjp_empty_output": lambda: F.vjp(lambda a: (), x),
        "vjp_tuple_with_int": lambda: F.vjp(lambda a: (a, 2), x),
        "vjp_nontensor_primal": lambda: F.vjp(lambda a, n: a, x, 2),
        "vjp_has_aux_not_pair": lambda: F.vjp(lambda a: a, x, has_aux=True),
        "vjp_has_aux_str_aux": lambda: F.vjp(lambda a: (a, "s"), x, has_aux=True),
        "vjp_cotangent_structure": lambda: F.vjp(lambda a: (a, a), x)[1](x),
        "vjp_cotangent_structure_dict": lambda: F.vjp(lambda a: {"a": a, "b": [a, a]}, x)[1]([x]),
        "vjp_cotangent_wrong_shape": lambda: F.vjp(lambda a: a * 2, x)[1](_t(lib, [1.0, 2.0])),
        "jvp_primals_not_tuple": lambda: F.jvp(f, x, (x,)),
        "jvp_primals_list": lambda: F.jvp(f, [x], [x]),
        "jvp_tangents_not_tuple": lambda: F.jvp(f, (x,), x),
        "jvp_tangents_list": lambda: F.jvp(f, (x,), [x]),
        "jvp_structure_nested": lambda: F.jvp(lambda d: d["u"], ({"u": x, "v": [x, x]},), ({"u": x, "v": (x, x)},)),
        "jvp_empty": lambda: F.jvp(f, (), ()),
        "jvp_int_primal": lambda: F.jvp(f, (3,), (3,)),
        "jvp_float_in_primals": lambda: F.jvp(lambda a, n: a * n, (x, 2.0), (x, 1.0)),
        "jvp_int_tangent": lambda: F.jvp(f, (x,), (3,)),
        "jvp_strict_independent": lambda: F.jvp(lambda a: _t(lib, [1.0, 2.0]), (x,), (x,), strict=True),
        "jvp_int_output": lambda: F.jvp(lambda a: 3, (x,), (x,)),
        "jvp_has_aux_not_pair": lambda: F.jvp(f, (x,), (x,), has_aux=True),
        "jvp_has_aux_int_aux": lambda: F.jvp(lambda a: (a, 1), (x,), (x,), has_aux=True),
        "jvp_integer_primal_tensor": lambda: F.jvp(f, (ints,), (ints,)),
        "jvp_tangent_wrong_size": lambda: F.jvp(f, (x,), (_t(lib, [1.0, 2.0]),)),
        "jacrev_chunk_size_0": lambda: F.jacrev(f, chunk_size=0),
        "jacrev_chunk_size_negative": lambda: F.jacrev(f, chunk_size=-3),
        "jacrev_bool_output": lambda: F.jacrev(lambda a: a > 0)(x),
        "jacrev_int_input": lambda: F.jacrev(f)(ints),
        "jacrev_list_with_int_output": lambda: F.jacrev(lambda a: [a, 1])(x),
        "jacrev_has_aux_not_pair": lambda: F.jacrev(lambda a: a, has_aux=True)(x),
        "jacrev_argnum_out_of_range": lambda: F.jacrev(lambda a: a, argnums=2)(x),
        "jacrev_nontensor_arg": lambda: F.jacrev(lambda a, n: a, argnums=1)(x, 2),
        "jacfwd_int_input": lambda: F.jacfwd(f)(ints),
        "jacfwd_list_with_int_output": lambda: F.jacfwd(lambda a: [a, 1])(x),
        "jacfwd_has_aux_not_pair": lambda: F.jacfwd(lambda a: a, has_aux=True)(x),
        "jacfwd_argnum_out_of_range": lambda: F.jacfwd(lambda a: a, argnums=2)(x),
        "jacfwd_nontensor_arg": lambda: F.jacfwd(lambda a, n: a, argnums=1)(x, 2),
        "jacfwd_bad_randomness": lambda: F.jacfwd(f, randomness="bad")(x),
        "jacfwd_random_op": lambda: F.jacfwd(lambda a: a * lib.rand(3, dtype=lib.float64))(x),
        "hessian_nonscalar_inner": lambda: F.hessian(lambda a: F.grad(lambda b: b.sin())(a))(x),
    }


@pytest.mark.parametrize("name", sorted(_error_calls(rgrad)))
def test_errors_match_torch(torch, name):
    status, message = _same(torch, lambda lib: _error_calls(lib)[name])
    assert status != "ok" and message


def test_grad_nonscalar_message_text():
    with pytest.raises(RuntimeError) as e:
        RF.grad(lambda a: a * 2)(rgrad.ones(2))
    assert str(e.value) == ("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with 1 "
                            "dims. Maybe you wanted to use the vjp or jacrev APIs instead?")


# ---------------------------------------------------------------------------------------
# jacrev / jacfwd take the batched paths (as torch.func's: vmap over vjp_fn / jvp)
# ---------------------------------------------------------------------------------------

def test_jacfwd_jacrev_and_hessian_run_func_once():
    calls = []

    def f(a):
        calls.append(tuple(a.shape))
        return a.sin() * a.sum()

    x = _t(rgrad, [0.5, -1.0, 2.0, 0.3, 1.1])
    for transform in (RF.jacfwd(f), RF.jacrev(f), RF.jacrev(f, chunk_size=2), RF.hessian(lambda a: f(a).sum()),
                      RF.jacrev(RF.jacrev(f)), RF.jacfwd(RF.jacrev(f))):
        calls.clear()
        transform(x)
        assert calls == [(5,)]  # once, on the logical shape (batched inside)


@pytest.mark.parametrize("chunk_size, batched_passes, plain_passes", [
    (None, 1, 0), (5, 1, 0), (100, 1, 0), (2, 3, 0), (4, 2, 0), (1, 0, 5),
])
def test_jacrev_one_batched_backward_per_chunk(monkeypatch, torch, chunk_size, batched_passes, plain_passes):
    """jacrev's rows: one ``autograd.grad(..., is_grads_batched=True)`` per chunk of
    ``chunk_size`` rows (chunk_size=1: one plain vjp per row, as torch's), the same Jacobian."""
    passes = {"batched": 0, "plain": 0}
    grad = rgrad.autograd.grad

    def counting_grad(*args, **kwargs):
        if kwargs.get("is_grads_batched"):
            passes["batched"] += 1
        elif not any(type(a).__name__ == "BatchedTensor" for a in rgrad.utils._pytree.tree_leaves(args[2:3])):
            passes["plain"] += 1
        return grad(*args, **kwargs)

    monkeypatch.setattr(rgrad.autograd, "grad", counting_grad)
    f = lambda lib: lambda a: (a.sin() * a.sum(), (a * 2)[:2])  # noqa: E731  (5 output elements)
    x = _t(rgrad, [0.5, -1.0, 2.0])
    ours = RF.jacrev(f(rgrad), chunk_size=chunk_size)(x)
    assert passes == {"batched": batched_passes, "plain": plain_passes}
    theirs = torch.func.jacrev(f(torch), chunk_size=chunk_size)(_t(torch, [0.5, -1.0, 2.0]))
    for o, t in zip(ours, theirs):
        assert tuple(o.shape) == tuple(t.shape)
        assert np.allclose(o.numpy(), t.numpy(), rtol=1e-13, atol=1e-13)


def test_vmap_of_jacrev_is_one_batched_backward(monkeypatch, torch):
    """vmap(jacrev(f)): the rows of every sample in one batched backward pass of the
    physical (vmap-batched) graph, not one backward per row; torch.func's numbers."""
    passes = []
    grad = rgrad.autograd.grad

    def counting_grad(*args, **kwargs):
        passes.append(bool(kwargs.get("is_grads_batched")))
        return grad(*args, **kwargs)

    monkeypatch.setattr(rgrad.autograd, "grad", counting_grad)
    f = lambda a: a.sin() * a.sum()  # noqa: E731
    x0 = [[0.3, -0.7, 1.2], [0.5, 0.9, -0.2]]
    got = RF.vmap(RF.jacrev(f))(_t(rgrad, x0))
    assert passes.count(True) == 1 and len(passes) == 2  # vjp_fn's grad, and the one batched pass
    expected = torch.func.vmap(torch.func.jacrev(f))(_t(torch, x0))
    assert np.allclose(got.numpy(), expected.numpy(), rtol=1e-13, atol=1e-13)


def test_jacobians_through_vmaps_loop_are_right(torch):
    """An op without a batching rule (a boolean mask index) runs once per column under
    jacfwd's vmap, with vmap's performance warning (torch's fallback warns too): the same
    numbers as torch.func; and prod's batched backward rule in jacrev's pass."""
    from rgrad.func._batched_tensor import _warned

    g = lambda a: a[a > 0].sin() * a.sum()  # noqa: E731
    x0 = [0.5, -1.0, 2.0]
    expected = torch.func.jacrev(g)(_t(torch, x0)).numpy()
    _warned.discard("aten::__getitem__")  # (warned once per process)
    with pytest.warns(UserWarning, match="batching rule for aten::__getitem__"):
        got = RF.jacfwd(g)(_t(rgrad, x0))
    assert np.allclose(got.numpy(), expected, rtol=1e-13, atol=1e-13)
    assert np.allclose(RF.jacrev(g)(_t(rgrad, x0)).numpy(), expected, rtol=1e-13, atol=1e-13)
    p = lambda a: a.prod(0) * a.sum()  # noqa: E731
    y0 = [[1.0, 2.0], [0.3, -0.4]]
    expected = torch.func.jacrev(p)(_t(torch, y0)).numpy()
    for transform in (RF.jacrev(p), RF.jacfwd(p), RF.jacrev(p, chunk_size=1)):
        assert np.allclose(transform(_t(rgrad, y0)).numpy(), expected, rtol=1e-13, atol=1e-13)


@pytest.mark.filterwarnings("ignore:There is a performance drop:UserWarning")
def test_jacobians_of_a_custom_function_match_torch(torch):
    """A custom Function (torch's functorch form: setup_context, jvp, generate_vmap_rule)
    inside jacrev (its backward node runs once per row in the batched pass), jacfwd (under
    vmap, on dual BatchedTensors) and hessian: torch.func's numbers."""
    def make(lib):
        class MySin(lib.autograd.Function):
            generate_vmap_rule = True

            @staticmethod
            def forward(x):
                return x.sin()

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(inputs[0])
                ctx.x = inputs[0]

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * x.cos()

            @staticmethod
            def jvp(ctx, t):
                return t * ctx.x.cos()

        F = lib.func
        g = lambda a: MySin.apply(a) * a.sum()  # noqa: E731
        x = _t(lib, [0.5, -1.0, 2.0])
        return lambda: (F.jacrev(g)(x), F.jacrev(g, chunk_size=2)(x), F.jacfwd(g)(x),
                        F.hessian(lambda a: g(a).sum())(x))

    status, _ = _same(torch, make)
    assert status == "ok"


# ---------------------------------------------------------------------------------------
# Randomness in jacfwd (the flag of its vmap over the columns)
# ---------------------------------------------------------------------------------------

def test_jacfwd_randomness_draws_as_vmap():
    """'same': one draw shared by every column (the numbers of one unbatched draw);
    'different': each column its own (vmap's numbers with randomness='different')."""
    x = _t(rgrad, [0.5, -1.0, 2.0])
    rgrad.manual_seed(3)
    r = rgrad.rand(3, dtype=rgrad.float64)
    rgrad.manual_seed(3)
    jac = RF.jacfwd(lambda a: a * rgrad.rand(3, dtype=rgrad.float64), randomness="same")(x)
    assert np.allclose(jac.numpy(), np.diag(r.numpy()), rtol=0, atol=0)
    rgrad.manual_seed(3)
    per_column = RF.vmap(lambda e: rgrad.rand(3, dtype=rgrad.float64), randomness="different")(rgrad.eye(3))
    rgrad.manual_seed(3)
    jac = RF.jacfwd(lambda a: a * rgrad.rand(3, dtype=rgrad.float64), randomness="different")(x)
    assert np.allclose(jac.numpy(), np.diag(np.diag(per_column.numpy())), rtol=0, atol=0)
    assert len(set(np.diag(jac.numpy()).tolist())) == 3


def test_jacfwd_reads_values_except_with_different_randomness():
    """rgrad batches jacfwd's primals (copies of the inputs): reading an input's value works
    as with torch's (which batches only the tangents), but not with randomness='different',
    whose samples may differ (vmap's error there; torch's jacfwd reads it)."""
    x = _t(rgrad, [0.5, -1.0, 2.0])
    f = lambda a: a * a.sum().item()  # noqa: E731
    assert RF.jacfwd(f, randomness="same")(x).tolist() == (np.eye(3) * 1.5).tolist()
    with pytest.raises(RuntimeError, match="vmap: It looks like you're calling .item()"):
        RF.jacfwd(f, randomness="different")(x)


def test_jacfwd_randomness_same_and_different():
    x = _t(rgrad, [0.5, -1.0, 2.0, 3.0])
    rgrad.manual_seed(0)
    jac = RF.jacfwd(lambda a: a * rgrad.rand((), dtype=rgrad.float64), randomness="same")(x)
    diag = [jac[i, i].item() for i in range(4)]
    assert len(set(diag)) == 1 and 0 < diag[0] < 1
    jac = RF.jacfwd(lambda a: a * rgrad.rand((), dtype=rgrad.float64), randomness="different")(x)
    assert len({jac[i, i].item() for i in range(4)}) == 4
    # 'error' leaves the generator where it was
    state = rgrad.get_rng_state()
    with pytest.raises(RuntimeError, match="randomness error mode"):
        RF.jacfwd(lambda a: a * rgrad.rand((), dtype=rgrad.float64))(x)
    assert bool((rgrad.get_rng_state() == state).all())


# ---------------------------------------------------------------------------------------
# One forward-AD level: a jvp inside a jvp is refused clearly
# ---------------------------------------------------------------------------------------

def test_nested_jvp_raises_a_clear_error():
    x = _t(rgrad, [0.5, -1.0])
    with pytest.raises(RuntimeError, match="rgrad supports a single forward-mode AD level") as e:
        RF.jacfwd(RF.jacfwd(lambda a: a.sin()))(x)
    assert "jacfwd(jacrev(f))" in str(e.value)
    with pytest.raises(RuntimeError, match="single forward-mode AD level"):
        RF.jvp(lambda a: RF.jvp(lambda b: b * 2, (a,), (a,))[1], (x,), (x,))
    with rgrad.autograd.forward_ad.dual_level():
        with pytest.raises(RuntimeError, match="single forward-mode AD level"):
            RF.jvp(lambda a: a * 2, (x,), (x,))
    # the level was not left behind: a jvp works again
    assert RF.jvp(lambda a: a * 2, (x,), (x,))[1].tolist() == [1.0, -2.0]


def test_second_derivatives_agree_across_compositions():
    x = _t(rgrad, [0.5, -1.0, 2.0])
    f = lambda a: (a.sin() * a.exp() * a.sum()).sum()  # noqa: E731
    h = RF.hessian(f)(x).numpy()
    for other in (RF.jacrev(RF.jacrev(f)), RF.jacrev(RF.jacfwd(f)), RF.jacfwd(RF.jacrev(f)), RF.jacrev(RF.grad(f)),
                  RF.jacfwd(RF.grad(f))):
        assert np.allclose(other(x).numpy(), h, rtol=1e-12, atol=1e-12)
    assert np.allclose(rgrad.autograd.functional.hessian(f, x).numpy(), h, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------
# Finite differences (float64)
# ---------------------------------------------------------------------------------------

def _numeric_jacobian(f, x: np.ndarray, eps=1e-6) -> np.ndarray:
    out0 = np.asarray(f(x))
    jac = np.zeros(out0.shape + x.shape)
    for idx in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        jac[(Ellipsis,) + idx] = (np.asarray(f(xp)) - np.asarray(f(xm))) / (2 * eps)
    return jac


FD_FUNCS = {
    "sin_mul": lambda a: a.sin() * a.sum(),
    "softmax": lambda a: a.softmax(-1) * a[..., :1],
    "matmul": lambda a: a @ a.t().exp(),
    "log_norm": lambda a: (a * a).sum(-1).log(),
}


@pytest.mark.parametrize("jac", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("name", sorted(FD_FUNCS))
def test_jacobians_against_finite_differences(jac, name):
    g = FD_FUNCS[name]
    x0 = np.array([[0.3, -0.7, 1.2], [0.5, 0.9, -0.2]])
    got = getattr(RF, jac)(g)(rgrad.tensor(x0, dtype=rgrad.float64))
    expected = _numeric_jacobian(lambda a: g(rgrad.tensor(a, dtype=rgrad.float64)).numpy(), x0)
    assert tuple(got.shape) == expected.shape
    assert np.allclose(got.numpy(), expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["quartic", "logsumexp", "mixed"])
def test_grad_and_hessian_against_finite_differences(name):
    g = {
        "quartic": lambda a: (a ** 4).sum() * a[0],
        "logsumexp": lambda a: a.exp().sum().log(),
        "mixed": lambda a: (a.sin() * a.tanh().sum() * a[1:].prod()).sum(),
    }[name]
    x0 = np.array([0.3, -0.7, 1.2, 0.5])
    scalar = lambda a: g(rgrad.tensor(a, dtype=rgrad.float64)).item()  # noqa: E731
    grad_fd = _numeric_jacobian(scalar, x0)
    got = RF.grad(g)(rgrad.tensor(x0, dtype=rgrad.float64))
    assert np.allclose(got.numpy(), grad_fd, rtol=1e-6, atol=1e-7)
    hess_fd = _numeric_jacobian(lambda a: RF.grad(g)(rgrad.tensor(a, dtype=rgrad.float64)).numpy(), x0)
    assert np.allclose(RF.hessian(g)(rgrad.tensor(x0, dtype=rgrad.float64)).numpy(), hess_fd, rtol=1e-6, atol=1e-6)
    x = rgrad.tensor([0.7], dtype=rgrad.float64)
    third = RF.grad(lambda a: RF.grad(lambda b: RF.grad(lambda c: (c.exp() * c ** 3).sum())(b).sum())(a).sum())(x)
    e = np.exp(0.7)
    assert np.allclose(third.item(), e * (0.7 ** 3 + 9 * 0.7 ** 2 + 18 * 0.7 + 6), rtol=1e-12)


def test_jvp_and_vjp_against_finite_differences():
    g = FD_FUNCS["softmax"]
    x0 = np.array([[0.3, -0.7, 1.2], [0.5, 0.9, -0.2]])
    jac = _numeric_jacobian(lambda a: g(rgrad.tensor(a, dtype=rgrad.float64)).numpy(), x0).reshape(6, 6)
    v = np.array([[1.0, -2.0, 0.5], [3.0, 0.1, -1.0]])
    x = rgrad.tensor(x0, dtype=rgrad.float64)
    out, tangent = RF.jvp(g, (x,), (rgrad.tensor(v, dtype=rgrad.float64),))
    assert np.allclose(tangent.numpy().reshape(-1), jac @ v.reshape(-1), rtol=1e-6, atol=1e-7)
    out, vjp_fn = RF.vjp(g, x)
    (ct,) = vjp_fn(rgrad.tensor(v, dtype=rgrad.float64))
    assert np.allclose(ct.numpy().reshape(-1), v.reshape(-1) @ jac, rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------------------
# Results do not keep the transform's graph
# ---------------------------------------------------------------------------------------

def test_results_drop_the_transforms_own_graph():
    x = _t(rgrad, [0.5, -1.0, 2.0])
    g = RF.grad(lambda a: (a ** 3).sum())(x)
    assert not g.requires_grad and g.grad_fn is None and not x.requires_grad
    out, fn = RF.vjp(lambda a: a.exp(), x)
    assert out.grad_fn is None and fn(x)[0].grad_fn is None
    h = RF.hessian(lambda a: (a ** 3).sum())(x)
    assert h.grad_fn is None and h.tolist() == [[3.0, 0.0, 0.0], [0.0, -6.0, 0.0], [0.0, 0.0, 12.0]]
    # the user's tensors are untouched
    xr = _t(rgrad, [0.5, -1.0, 2.0], True)
    RF.grad(lambda a: (a ** 3).sum())(xr)
    RF.hessian(lambda a: (a ** 3).sum())(xr)
    assert xr.is_leaf and xr.grad is None


def _create_graph_flags(monkeypatch):
    """The ``create_graph`` of every gradient ``grad`` and ``grad_and_value`` compute."""
    from rgrad.func import _transforms

    flags = []
    real = _transforms._autograd_grad

    def spy(*args, **kwargs):
        flags.append(kwargs["create_graph"])
        return real(*args, **kwargs)

    monkeypatch.setattr(_transforms, "_autograd_grad", spy)
    return flags


def test_grad_records_its_backward_only_when_a_result_can_keep_it(monkeypatch):
    flags = _create_graph_flags(monkeypatch)
    x = _t(rgrad, [0.5, -1.0, 2.0])
    xr = _t(rgrad, [0.5, -1.0, 2.0], True)
    w = _t(rgrad, [1.0, 2.0, 3.0], True)

    def cube(a):
        return (a ** 3).sum()

    def cases():
        yield "own leaves only", lambda: RF.grad(cube)(x), [False]
        yield "an input that requires grad", lambda: RF.grad(cube)(xr), [True]
        yield "a closed-over tensor that does", lambda: RF.grad(lambda a: (a * w).sum())(x), [True]
        yield "grad mode off outside", lambda: _no_grad(lambda: RF.grad(lambda a: (a * w).sum())(xr)), [False]
        # the inner grad's output reaches the outer grad's leaf; the outer's only its own
        yield "grad(grad(f))", lambda: RF.grad(lambda a: RF.grad(cube)(a).sum())(x), [True, False]
        yield "vmap(grad(f))", lambda: RF.vmap(RF.grad(cube))(x.view(3, 1)), [False]
        # forward-over-reverse: the backward must be recorded for the tangents
        yield "jacfwd(grad(f))", lambda: RF.jacfwd(RF.grad(cube))(x), [True]

    for name, run, expected in cases():
        flags.clear()
        run()
        assert flags == expected, name


def _no_grad(f):
    with rgrad.no_grad():
        return f()


def test_grad_keeps_a_user_functions_backward_recorded(monkeypatch, torch):
    # a custom Function's backward may use tensors outside the graph (here a closed-over
    # tensor that requires grad): the gradient depends on it differentiably, as torch's
    flags = _create_graph_flags(monkeypatch)
    results = []
    for lib in (rgrad, torch):
        w = lib.tensor([2.0, 3.0], dtype=lib.float64, requires_grad=True)

        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(a):
                return a * 2

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass

            @staticmethod
            def backward(ctx, g):
                return g * w

        gx = lib.func.grad(lambda a: Scale.apply(a).sum())(lib.tensor([1.0, 4.0], dtype=lib.float64))
        assert gx.requires_grad
        results.append((gx.tolist(), lib.autograd.grad((gx * gx).sum(), w)[0].tolist()))
    assert results[0] == results[1]
    assert flags == [True]  # (rgrad's call; torch's transforms are not spied on)


def test_wraps_the_function():
    def my_loss(a):
        """Doc."""
        return (a * a).sum()

    for transform in (RF.grad, RF.grad_and_value, RF.jacrev, RF.jacfwd):
        wrapped = transform(my_loss)
        assert wrapped.__name__ == "my_loss" and wrapped.__doc__ == "Doc."


# ---------------------------------------------------------------------------------------
# functional_call (on functions: rgrad has no nn.Module yet)
# ---------------------------------------------------------------------------------------

def _linear(x, *, weight, bias):
    return x @ weight.t() + bias


def test_functional_call_calls_with_parameters_by_name(torch):
    w = np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.2]])
    b = np.array([0.1, -0.4])
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]])
    ours = RF.functional_call(_linear, {"weight": _t(rgrad, w.tolist()), "bias": _t(rgrad, b.tolist())},
                              (_t(rgrad, x.tolist()),))
    lin = torch.nn.Linear(3, 2).double()
    theirs = torch.func.functional_call(lin, {"weight": torch.tensor(w), "bias": torch.tensor(b)},
                                        (torch.tensor(x),))
    assert np.allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-14)
    # a module (torch's) is refused clearly: rgrad has no nn.Module yet
    with pytest.raises(TypeError, match="got a Linear \\(an nn.Module\\); rgrad has no nn.Module yet"):
        RF.functional_call(lin, {"weight": _t(rgrad, w.tolist())}, (_t(rgrad, x.tolist()),))
    # a list of dicts, a single non-tuple argument, kwargs
    ours2 = RF.functional_call(_linear, [{"weight": _t(rgrad, w.tolist())}, {"bias": _t(rgrad, b.tolist())}],
                               _t(rgrad, x.tolist()))
    assert ours2.tolist() == ours.tolist()
    ours3 = RF.functional_call(lambda *, x, weight, bias: _linear(x, weight=weight, bias=bias),
                               {"weight": _t(rgrad, w.tolist()), "bias": _t(rgrad, b.tolist())},
                               kwargs={"x": _t(rgrad, x.tolist())})
    assert ours3.tolist() == ours.tolist()


def test_functional_call_under_grad_matches_torch(torch):
    w = np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.2]])
    b = np.array([0.1, -0.4])
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]])
    params = {"weight": _t(rgrad, w.tolist()), "bias": _t(rgrad, b.tolist())}
    grads = RF.grad(lambda p, a: RF.functional_call(_linear, p, (a,)).tanh().sum())(params, _t(rgrad, x.tolist()))
    lin = torch.nn.Linear(3, 2).double()
    tparams = {"weight": torch.tensor(w), "bias": torch.tensor(b)}
    tgrads = torch.func.grad(lambda p, a: torch.func.functional_call(lin, p, (a,)).tanh().sum())(tparams,
                                                                                                 torch.tensor(x))
    assert list(grads) == ["weight", "bias"]
    for k in grads:
        assert np.allclose(grads[k].numpy(), tgrads[k].numpy(), rtol=1e-12)


def test_functional_call_dict_errors_match_torch(torch):
    lin = torch.nn.Linear(1, 1)
    for bad in (3, [{"a": 1}, 2], [{"a": 1}, {"a": 2}], ({"a": 1, "b": 2}, {"b": 3, "a": 4})):
        with pytest.raises(ValueError) as theirs:
            torch.func.functional_call(lin, bad, ())
        with pytest.raises(ValueError) as ours:
            RF.functional_call(_linear, bad, ())
        assert str(ours.value) == str(theirs.value)


def test_functional_call_strict():
    w, b = rgrad.ones(2, 3), rgrad.zeros(2)
    x = rgrad.ones(1, 3)
    assert RF.functional_call(_linear, {"weight": w, "bias": b}, (x,), strict=True).tolist() == [[3.0, 3.0]]
    with pytest.raises(RuntimeError) as e:
        RF.functional_call(_linear, {"weight": w, "scale": b}, (x,), strict=True)
    assert str(e.value) == ("Error(s) in reparametrizing for _linear:\n\tUnexpected key(s): 'scale'.\n\t"
                            "Missing key(s): 'bias'.")
    # not strict: names the function does not take are left out, missing ones are Python's TypeError
    assert RF.functional_call(_linear, {"weight": w, "bias": b, "scale": b}, (x,)).tolist() == [[3.0, 3.0]]
    with pytest.raises(TypeError, match="bias"):
        RF.functional_call(_linear, {"weight": w}, (x,))
    # a function with **kwargs receives every name
    seen = {}
    RF.functional_call(lambda **kw: seen.update(kw), {"a": w, "b": b}, strict=True)
    assert set(seen) == {"a", "b"}


def test_functional_call_rejects_what_is_not_a_function():
    class ModuleLike:
        def named_parameters(self):
            return iter(())

        def named_buffers(self):
            return iter(())

        def state_dict(self):
            return {}

        def __call__(self, x):
            return x

    with pytest.raises(TypeError, match="rgrad has no nn.Module yet"):
        RF.functional_call(ModuleLike(), {}, (rgrad.ones(1),))
    with pytest.raises(TypeError, match="not callable"):
        RF.functional_call(3, {}, ())
    with pytest.raises(ValueError, match="given both as a parameter and in kwargs"):
        RF.functional_call(_linear, {"weight": rgrad.ones(1)}, kwargs={"weight": rgrad.ones(1)})
    with pytest.raises(ValueError, match="given both as a parameter and as a positional argument"):
        RF.functional_call(lambda weight: weight, {"weight": rgrad.ones(1)}, (rgrad.ones(1),))


# ---------------------------------------------------------------------------------------
# The pytree helper prints and compares specs as torch's (error messages quote them)
# ---------------------------------------------------------------------------------------

def test_pytree_specs_print_as_torchs(torch):
    from torch.utils import _pytree as tp

    point = collections.namedtuple("point", ["a", "b"])
    trees = [1, (1,), [1, 2], {"a": 1, "b": [1, 2]}, ((1, 2), {"x": (3,)}), collections.OrderedDict(a=1),
             point(1, 2), None, (None, 1), [], {}, ({"b": 1, "a": 2},), [point(1, [2, {"q": (3, 4)}])]]
    for tree in trees:
        leaves, spec = _pytree.tree_flatten(tree)
        tleaves, tspec = tp.tree_flatten(tree)
        assert leaves == tleaves
        assert repr(spec) == repr(tspec)
        assert _pytree.treespec_pprint(spec) == tp.treespec_pprint(tspec)
        assert _pytree.tree_unflatten(leaves, spec) == tree
    assert _pytree.tree_flatten([1, 2])[1] != _pytree.tree_flatten((1, 2))[1]
    assert _pytree.tree_flatten({"a": 1})[1] != _pytree.tree_flatten({"b": 1})[1]
    assert _pytree.tree_flatten([1, [2]])[1] == _pytree.tree_flatten([3, [4]])[1]
    assert _pytree.tree_map(lambda a, b: a + b, {"x": 1, "y": [2]}, {"x": 10, "y": [20]}) == {"x": 11, "y": [22]}


def test_exported_as_torch_func():
    import rgrad.func as mod

    assert rgrad.func is mod
    assert set(mod.__all__) == {"vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
                                "functional_call", "linearize", "debug_unwrap"}
    try:
        import torch.func
    except ImportError:  # pragma: no cover - torch is installed where the suite runs
        return
    # every one of torch.func's that rgrad has, with its name; what it lacks needs
    # nn.Module (stack_module_state, replace_all_batch_norm_modules_), a tracer
    # (functionalize) or einops (rearrange)
    missing = {n for n in torch.func.__all__ if not hasattr(mod, n)}
    assert missing <= {"functionalize", "stack_module_state", "replace_all_batch_norm_modules_", "rearrange"}
