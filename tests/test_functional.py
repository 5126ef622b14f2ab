"""rgrad.autograd.functional (vjp, jvp, jacobian, hessian, vhp, hvp) against torch: the same
programs give the same values, shapes, dtypes and requires_grad, and raise the same errors
(torch's text with "torch" read as "rgrad"); Jacobians and Hessians against central finite
differences in float64; vectorize=True (both strategies: reverse mode one batched backward
pass, forward mode one pass through rgrad.func.vmap) against torch's."""

from __future__ import annotations

import numpy as np
import pytest

import rgrad
import rgrad.autograd.functional as AF


# torch's forward-mode jacobian loads its jvp decompositions, which warn about torch.jit.script
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _fn(lib):
    return lib.autograd.functional


def _t(lib, data, requires_grad=False):
    return lib.tensor(data, dtype=lib.float64, requires_grad=requires_grad)


def _describe(value, lib_name):
    """A comparable picture of a result: nested tuples, tensors as (values, shape, dtype, requires_grad)."""
    if isinstance(value, tuple):
        return ("tuple", [_describe(v, lib_name) for v in value])
    if isinstance(value, list):
        return ("list", [_describe(v, lib_name) for v in value])
    if hasattr(value, "requires_grad") and hasattr(value, "tolist"):
        vals = np.round(np.asarray(value.detach().tolist(), dtype=np.float64), 10).tolist()
        return ("T", vals, tuple(value.shape), str(value.dtype).replace(lib_name, "LIB"), value.requires_grad)
    return ("obj", repr(value))


def _run(lib, call):
    try:
        return ("ok", _describe(call(), lib.__name__))
    except Exception as e:  # noqa: BLE001  (the error is the result)
        return (type(e).__name__, str(e).replace(lib.__name__ + ".", "LIB."))


def _same(torch, make_call):
    """make_call(lib) -> a zero-argument call; it must give the same picture on both."""
    ours = _run(rgrad, make_call(rgrad))
    theirs = _run(torch, make_call(torch))
    assert ours == theirs
    return ours


# ---------------------------------------------------------------------------------------
# Programs
# ---------------------------------------------------------------------------------------

def _f_scalar(lib):
    return lambda x: (x.sin() * x).sum()


def _f_vec(lib):
    return lambda x: x.exp() * x[0] + x.sum()


def _f_two_in_two_out(lib):
    return lambda x, y: (x * y.sum() + x.tanh(), (x.unsqueeze(1) * y).sum(0))


VJP_CASES = {
    "tensor": lambda lib: (_f_vec(lib), _t(lib, [0.5, -1.0, 2.0]), _t(lib, [1.0, 2.0, 3.0]), {}),
    "tuple": lambda lib: (_f_two_in_two_out(lib), (_t(lib, [0.5, -1.0]), _t(lib, [1.5, 2.0, 0.3])),
                          (_t(lib, [1.0, -1.0]), _t(lib, [0.5, 1.0, 2.0])), {}),
    "scalar_v_none": lambda lib: (_f_scalar(lib), _t(lib, [0.5, -1.0, 2.0]), None, {}),
    "create_graph": lambda lib: (_f_vec(lib), _t(lib, [0.5, -1.0, 2.0], True), _t(lib, [1.0, 2.0, 3.0]),
                                 {"create_graph": True}),
    "create_graph_no_req": lambda lib: (_f_vec(lib), _t(lib, [0.5, -1.0, 2.0]), _t(lib, [1.0, 2.0, 3.0]),
                                        {"create_graph": True}),
    "input_requires_grad": lambda lib: (_f_vec(lib), _t(lib, [0.5, -1.0, 2.0], True), _t(lib, [1.0, 2.0, 3.0]), {}),
    "unused_input": lambda lib: (lambda x, y: x * 2, (_t(lib, [1.0, 2.0]), _t(lib, [3.0])), _t(lib, [1.0, 1.0]), {}),
    "strict_ok": lambda lib: (_f_vec(lib), _t(lib, [0.5, -1.0, 2.0]), _t(lib, [1.0, 2.0, 3.0]), {"strict": True}),
}


@pytest.mark.parametrize("api", ["vjp", "jvp"])
@pytest.mark.parametrize("case", sorted(VJP_CASES))
def test_vjp_jvp_match_torch(torch, api, case):
    def make(lib):
        func, inputs, v, kwargs = VJP_CASES[case](lib)
        if api == "jvp" and v is not None:
            # jvp's v is shaped as the inputs
            v = tuple(i * 0.5 + 1 for i in inputs) if isinstance(inputs, tuple) else inputs * 0.5 + 1
        if api == "jvp" and v is None:
            inputs, v = _t(lib, [0.7]), None
        return lambda: getattr(_fn(lib), api)(func, inputs, v, **kwargs)

    status, _ = _same(torch, make)
    assert status == "ok"


def _jac_cases(lib):
    x = _t(lib, [0.5, -1.0, 2.0])
    m = _t(lib, [[0.5, 1.0], [-0.3, 2.0]])
    return {
        "vec_vec": (_f_vec(lib), x),
        "scalar_out": (_f_scalar(lib), x),
        "scalar_in": (lambda s: s * _t(lib, [1.0, 2.0]), _t(lib, 0.7)),
        "matrix": (lambda a: a @ a.t(), m),
        "tuple_tuple": (_f_two_in_two_out(lib), (_t(lib, [0.5, -1.0]), _t(lib, [1.5, 2.0, 0.3]))),
        "tuple_in_tensor_out": (lambda a, b: a * b, (x, x * 2)),
        "tensor_in_tuple_out": (lambda a: (a.sin(), a.sum()), x),
        "independent_output": (lambda a, b: (a * 2, _t(lib, [1.0])), (x, x)),
        "requires_grad_input": (_f_vec(lib), _t(lib, [0.5, -1.0, 2.0], True)),
    }


_VECTORIZE = [pytest.param(False, "reverse-mode", id="loop"), pytest.param(True, "reverse-mode", id="vectorized"),
              pytest.param(True, "forward-mode", id="vectorized-forward")]


@pytest.mark.parametrize("vectorize,strategy", _VECTORIZE)
@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("case", sorted(_jac_cases(rgrad)))
def test_jacobian_matches_torch(torch, case, create_graph, vectorize, strategy):
    def make(lib):
        func, inputs = _jac_cases(lib)[case]
        return lambda: _fn(lib).jacobian(func, inputs, create_graph=create_graph, vectorize=vectorize,
                                         strategy=strategy)

    status, _ = _same(torch, make)
    # torch has no forward-mode jacobian with create_graph (the same error)
    assert status == ("NotImplementedError" if create_graph and strategy == "forward-mode" else "ok")


def _hess_cases(lib):
    return {
        "vec": (_f_scalar(lib), _t(lib, [0.5, -1.0, 2.0])),
        "matrix": (lambda a: (a @ a).sin().sum(), _t(lib, [[0.5, 1.0], [-0.3, 2.0]])),
        "tuple": (lambda a, b: (a.exp() * b.sum() ** 2).sum(), (_t(lib, [0.5, -1.0]), _t(lib, [1.5, 2.0, 0.3]))),
        "one_element": (lambda a: (a ** 3).sum(), _t(lib, [2.0])),
        "linear": (lambda a: (a * 3).sum(), _t(lib, [1.0, 2.0])),
        "requires_grad": (_f_scalar(lib), _t(lib, [0.5, -1.0, 2.0], True)),
        "unused_input": (lambda a, b: (a ** 2).sum(), (_t(lib, [1.0, 2.0]), _t(lib, [3.0]))),
    }


@pytest.mark.parametrize("vectorize,strategy", _VECTORIZE)
@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("case", sorted(_hess_cases(rgrad)))
def test_hessian_matches_torch(torch, case, create_graph, vectorize, strategy):
    def make(lib):
        func, inputs = _hess_cases(lib)[case]
        return lambda: _fn(lib).hessian(func, inputs, create_graph=create_graph, vectorize=vectorize,
                                        outer_jacobian_strategy=strategy)

    status, _ = _same(torch, make)
    assert status == ("NotImplementedError" if create_graph and strategy == "forward-mode" else "ok")


@pytest.mark.parametrize("api", ["vhp", "hvp"])
@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("case", sorted(_hess_cases(rgrad)))
def test_vhp_hvp_match_torch(torch, api, case, create_graph):
    def make(lib):
        func, inputs = _hess_cases(lib)[case]
        if isinstance(inputs, tuple):
            v = tuple(i.detach() * 0.5 - 1 for i in inputs)
        else:
            v = inputs.detach() * 0.5 - 1
        return lambda: getattr(_fn(lib), api)(func, inputs, v, create_graph=create_graph)

    status, _ = _same(torch, make)
    assert status == "ok"


def test_vhp_hvp_v_none_for_a_one_element_input(torch):
    for api in ("vhp", "hvp"):
        status, _ = _same(torch, lambda lib: lambda: getattr(_fn(lib), api)(lambda a: (a ** 3).sum(), _t(lib, [2.0])))
        assert status == "ok"


def test_create_graph_results_are_differentiable_as_torch(torch):
    def make(lib):
        def call():
            x = _t(lib, [0.5, -1.0, 2.0], True)
            f = _f_scalar(lib)
            h = _fn(lib).hessian(f, x, create_graph=True)
            _, hv = _fn(lib).hvp(f, x, _t(lib, [1.0, 0.0, 2.0]), create_graph=True)
            _, vj = _fn(lib).vjp(lambda a: a.exp() * a, x, _t(lib, [1.0, 2.0, 3.0]), create_graph=True)
            _, jv = _fn(lib).jvp(lambda a: a.exp() * a, x, _t(lib, [1.0, 2.0, 3.0]), create_graph=True)
            return tuple(lib.autograd.grad(r.sum(), x) for r in (h, hv, vj, jv))
        return call

    status, _ = _same(torch, make)
    assert status == "ok"


# ---------------------------------------------------------------------------------------
# Errors: the same type and text as torch's
# ---------------------------------------------------------------------------------------

def _error_calls(lib):
    F = _fn(lib)
    x = _t(lib, [0.5, -1.0, 2.0])
    y = _t(lib, [1.0, 2.0])
    sq = lambda a: (a ** 2).sum()  # noqa: E731
    calls = {
        # inputs / outputs / v types and shapes
        "vjp_inputs_int": lambda: F.vjp(sq, 3),
        "vjp_inputs_tuple_int": lambda: F.vjp(sq, (x, 3)),
        "vjp_inputs_list": lambda: F.vjp(lambda a, b: a * b, [x, x], x),
        "vjp_outputs_int": lambda: F.vjp(lambda a: 3, x),
        "vjp_outputs_tuple_int": lambda: F.vjp(lambda a: (a, 3), x),
        "vjp_v_none_nonscalar": lambda: F.vjp(lambda a: a * 2, x),
        "vjp_v_wrong_size": lambda: F.vjp(lambda a: a * 2, x, y),
        "vjp_v_tuple_wrong_len": lambda: F.vjp(lambda a: (a, a), x, (x,)),
        "vjp_v_tuple_wrong_size": lambda: F.vjp(lambda a: (a, a), x, (x, y)),
        "vjp_v_two_for_one": lambda: F.vjp(lambda a: a * 2, x, (x, x)),
        "vjp_v_int": lambda: F.vjp(lambda a: a * 2, x, 3),
        "jvp_v_none": lambda: F.jvp(lambda a: a * 2, x),
        "jvp_v_wrong_size": lambda: F.jvp(lambda a: a * 2, x, y),
        "jvp_v_tuple_len": lambda: F.jvp(lambda a, b: a * b, (x, x), (x,)),
        "vhp_v_none": lambda: F.vhp(sq, x),
        "hvp_v_none": lambda: F.hvp(sq, x),
        "vhp_tuple_out": lambda: F.vhp(lambda a: (sq(a), sq(a)), x, x),
        "hvp_nonscalar": lambda: F.hvp(lambda a: a * 2, x, x),
        "vhp_nonscalar": lambda: F.vhp(lambda a: a * 2, x, x),
        "hessian_tuple_out": lambda: F.hessian(lambda a: (sq(a),), x),
        "hessian_nonscalar": lambda: F.hessian(lambda a: a * 2, x),
        "hessian_inputs_int": lambda: F.hessian(sq, 3),
        "jacobian_inputs_list_of_int": lambda: F.jacobian(sq, [x, 3]),
        "jacobian_outputs_str": lambda: F.jacobian(lambda a: "no", x),
        # strict mode, each stage's message
        "vjp_strict_output_no_grad": lambda: F.vjp(lambda a: y * 2, x, y, strict=True),
        "vjp_strict_independent_input": lambda: F.vjp(lambda a, b: a * 2, (x, y), x, strict=True),
        "vjp_strict_create_graph_linear": lambda: F.vjp(lambda a: a * 2, x, x, strict=True, create_graph=True),
        "jvp_strict_output_no_grad": lambda: F.jvp(lambda a: y * 2, x, x, strict=True),
        "jvp_strict_independent_input": lambda: F.jvp(lambda a, b: a * 2, (x, y), (x, y), strict=True),
        "jvp_strict_create_graph_linear": lambda: F.jvp(lambda a: a * 2, x, x, strict=True, create_graph=True),
        "jacobian_strict_output_no_grad": lambda: F.jacobian(lambda a: y * 2, x, strict=True),
        "jacobian_strict_independent_input": lambda: F.jacobian(lambda a, b: a * 2, (x, y), strict=True),
        "jacobian_strict_create_graph_linear": lambda: F.jacobian(lambda a: a * 2, x, strict=True, create_graph=True),
        "hessian_strict_linear": lambda: F.hessian(lambda a: (a * 2).sum(), x, strict=True),
        "hessian_strict_unused": lambda: F.hessian(lambda a, b: (a ** 2).sum(), (x, y), strict=True),
        "vhp_strict_linear": lambda: F.vhp(lambda a: (a * 2).sum(), x, x, strict=True),
        "hvp_strict_linear": lambda: F.hvp(lambda a: (a * 2).sum(), x, x, strict=True),
        "jacobian_bad_strategy": lambda: F.jacobian(sq, x, strategy="sideways"),
        "jacobian_forward_create_graph": lambda: F.jacobian(sq, x, strategy="forward-mode", create_graph=True),
        "jacobian_forward_strict": lambda: F.jacobian(sq, x, strategy="forward-mode", strict=True),
        "jacobian_forward_not_vectorized": lambda: F.jacobian(sq, x, strategy="forward-mode"),
        "jacobian_forward_bad_inputs": lambda: F.jacobian(sq, 3, strategy="forward-mode", vectorize=True),
        "jacobian_vectorize_strict": lambda: F.jacobian(lambda a: a * 2, x, vectorize=True, strict=True),
        "jacobian_vectorize_bad_output": lambda: F.jacobian(lambda a: 3, x, vectorize=True),
        "jacobian_vectorize_strict_output": lambda: F.jacobian(lambda a: y, x, vectorize=True, strict=True),
        "hessian_bad_strategy": lambda: F.hessian(sq, x, outer_jacobian_strategy="sideways"),
        "hessian_bad_inputs_first": lambda: F.hessian(sq, "x", outer_jacobian_strategy="sideways"),
        "hessian_forward_not_vectorized": lambda: F.hessian(sq, x, outer_jacobian_strategy="forward-mode"),
        "hessian_forward_create_graph": lambda: F.hessian(sq, x, outer_jacobian_strategy="forward-mode",
                                                          create_graph=True),
        "hessian_vectorize_strict": lambda: F.hessian(sq, x, vectorize=True, strict=True),
    }
    return calls


@pytest.mark.parametrize("name", sorted(_error_calls(rgrad)))
def test_errors_match_torch(torch, name):
    status, message = _same(torch, lambda lib: _error_calls(lib)[name])
    assert status != "ok" and message


def test_strict_programs_that_pass_match_torch(torch):
    def make(lib):
        F = _fn(lib)
        x, y = _t(lib, [0.5, -1.0, 2.0]), _t(lib, [1.0, 2.0])
        sq = lambda a: (a ** 2).sum()  # noqa: E731
        return lambda: (
            F.hessian(sq, x, strict=True, create_graph=True),
            F.vhp(sq, x, x, strict=True, create_graph=True),
            F.hvp(sq, x, x, strict=True, create_graph=True),
            # b's Hessian block is zero, but b is used: strict lets it through, as torch
            F.hvp(lambda a, b: (a ** 2).sum() * (b * 0 + 1).sum(), (x, y), (x, y), strict=True),
            F.jacobian(lambda a: a.exp(), x, strict=True, create_graph=True),
        )

    status, _ = _same(torch, make)
    assert status == "ok"


def test_non_strict_gives_zeros_where_strict_raises(torch):
    def make(lib):
        F = _fn(lib)
        x, y = _t(lib, [0.5, -1.0, 2.0]), _t(lib, [1.0, 2.0])
        return lambda: (
            F.vjp(lambda a, b: a * 2, (x, y), x),
            F.jvp(lambda a, b: (a * 2, y * 1), (x, y), (x, y)),
            F.jacobian(lambda a, b: (a * 2, y * 1), (x, y)),
            F.hessian(lambda a, b: (a ** 2).sum(), (x, y)),
            F.hvp(lambda a, b: (a * 2).sum(), (x, y), (x, y)),
            F.vhp(lambda a, b: (a * 2).sum(), (x, y), (x, y)),
        )

    status, _ = _same(torch, make)
    assert status == "ok"


# ---------------------------------------------------------------------------------------
# vectorize=True: one batched pass
# ---------------------------------------------------------------------------------------

def test_vectorize_is_one_batched_pass():
    """vectorize=True runs the function once and backpropagates the identity in one batched
    pass over its graph (``grad(is_grads_batched=True)``, as torch's), not one pass per
    output element; forward-mode runs it once, batched."""
    seen = []

    def f(a):
        seen.append(tuple(a.shape))
        return a.exp() * a.sum()

    x = rgrad.tensor([0.5, -1.0, 2.0, 0.3], dtype=rgrad.float64)
    expected = AF.jacobian(f, x)
    assert seen == [(4,)]  # the loop: one forward, then one backward per row
    seen.clear()
    jac = AF.jacobian(f, x, vectorize=True)
    assert seen == [(4,)]  # the function runs once
    assert np.allclose(jac.tolist(), expected.tolist(), rtol=1e-13, atol=1e-13)
    seen.clear()
    jac = AF.jacobian(f, x, vectorize=True, strategy="forward-mode")
    assert seen == [(4,)]
    assert np.allclose(jac.tolist(), expected.tolist(), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_vectorize_with_a_function_that_reads_values(torch, strategy):
    """torch batches only the derivatives, so a function may read its values (.item(),
    control flow) with vectorize=True; rgrad's batch holds copies of the inputs, whose
    values the function reads as one."""
    def make(lib):
        def f(a):
            scale = a.sum().item()
            a = a.exp() * scale if a[0] > 0 else a * 2
            return a * a[1].item() + lib.tensor(a.tolist()).sum()

        return lambda: _fn(lib).jacobian(f, _t(lib, [0.5, -1.0, 2.0]), vectorize=True, strategy=strategy)

    status, _ = _same(torch, make)
    assert status == "ok"


def test_vectorize_runs_the_function_before_checking_strict():
    # as torch: the function runs and its outputs are checked before vectorize's checks
    seen = []

    def f(a):
        seen.append(a.shape)
        return a * 2

    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not supported together"):
        AF.jacobian(f, rgrad.ones(2), vectorize=True, strict=True)
    assert seen == [(2,)]


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


def _np_fn(g):
    return lambda a: g(rgrad.tensor(a, dtype=rgrad.float64)).detach().numpy()


FD_FUNCS = {
    "sin_mul": lambda a: a.sin() * a.sum(),
    "softmax": lambda a: a.softmax(-1) * a,
    "matmul": lambda a: (a.reshape(2, 2) @ a.reshape(2, 2).exp()).reshape(-1),
    "tanh_scalar": lambda a: a.tanh().prod().reshape(()),
}


@pytest.mark.parametrize("name", sorted(FD_FUNCS))
def test_jacobian_against_finite_differences(name):
    g = FD_FUNCS[name]
    x0 = np.array([0.3, -0.7, 1.2, 0.5])
    jac = AF.jacobian(g, rgrad.tensor(x0, dtype=rgrad.float64))
    expected = _numeric_jacobian(_np_fn(g), x0)
    assert tuple(jac.shape) == expected.shape
    assert np.allclose(jac.numpy(), expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["sin_mul_sum", "logsumexp", "cubic"])
def test_hessian_and_hvp_against_finite_differences(name):
    g = {
        "sin_mul_sum": lambda a: (a.sin() * a.sum()).sum(),
        "logsumexp": lambda a: (a * a.exp()).sum().log(),
        "cubic": lambda a: (a ** 3 * a[0]).sum(),
    }[name]
    x0 = np.array([0.3, -0.7, 1.2, 0.5])
    x = rgrad.tensor(x0, dtype=rgrad.float64)

    def gradient(a):
        t = rgrad.tensor(a, dtype=rgrad.float64, requires_grad=True)
        return rgrad.autograd.grad(g(t), t)[0].numpy()

    expected = _numeric_jacobian(gradient, x0)
    h = AF.hessian(g, x)
    assert np.allclose(h.numpy(), expected, rtol=1e-6, atol=1e-7)
    v = np.array([1.0, -2.0, 0.5, 3.0])
    _, hv = AF.hvp(g, x, rgrad.tensor(v, dtype=rgrad.float64))
    _, vh = AF.vhp(g, x, rgrad.tensor(v, dtype=rgrad.float64))
    assert np.allclose(hv.numpy(), expected @ v, rtol=1e-6, atol=1e-6)
    assert np.allclose(vh.numpy(), v @ expected, rtol=1e-6, atol=1e-6)


def test_jvp_and_vjp_against_the_jacobian():
    g = FD_FUNCS["softmax"]
    x0 = np.array([0.3, -0.7, 1.2, 0.5])
    x = rgrad.tensor(x0, dtype=rgrad.float64)
    jac = _numeric_jacobian(_np_fn(g), x0)
    v = np.array([1.0, -2.0, 0.5, 3.0])
    out, jv = AF.jvp(g, x, rgrad.tensor(v, dtype=rgrad.float64))
    assert np.allclose(out.numpy(), _np_fn(g)(x0))
    assert np.allclose(jv.numpy(), jac @ v, rtol=1e-6, atol=1e-7)
    _, vj = AF.vjp(g, x, rgrad.tensor(v, dtype=rgrad.float64))
    assert np.allclose(vj.numpy(), v @ jac, rtol=1e-6, atol=1e-7)


def test_results_keep_dtype_and_leave_inputs_alone():
    x = rgrad.tensor([0.5, -1.0], requires_grad=True)  # float32
    out, vj = AF.vjp(lambda a: a * a, x, rgrad.ones(2))
    assert out.dtype == rgrad.float32 and vj.dtype == rgrad.float32
    assert not out.requires_grad and not vj.requires_grad and out.grad_fn is None
    h = AF.hessian(lambda a: (a ** 3).sum(), x)
    assert h.dtype == rgrad.float32 and h.tolist() == [[3.0, 0.0], [0.0, -6.0]]
    assert x.grad is None and x.is_leaf


def test_exported_as_torch_does():
    import rgrad.autograd.functional as mod

    assert rgrad.autograd.functional is mod
    assert set(mod.__all__) == {"vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"}
