"""torch's aliases, the function forms of in-place methods, and the small queries of
python/rgrad/_aliases.py, against torch: values, dtype, recorded node, gradients, errors
(type and message)."""

from __future__ import annotations

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")


def _both(data, dtype="float64", grad=False):
    """The same tensor in rgrad and torch (through a clone when it requires grad, so that
    in-place ops apply to a non-leaf)."""
    r = rgrad.tensor(data, dtype=getattr(rgrad, dtype), requires_grad=grad)
    t = torch.tensor(data, dtype=getattr(torch, dtype), requires_grad=grad)
    return r, t


def _node(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def _check_same(r, t):
    assert isinstance(r, rgrad.Tensor), type(r)
    assert str(r.dtype).replace("rgrad.", "") == str(t.dtype).replace("torch.", "")
    assert tuple(r.shape) == tuple(t.shape)
    np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-12, equal_nan=True)
    assert _node(r) == _node(t)
    assert r.requires_grad == t.requires_grad


def _same_backward(out_r, out_t, r0, t0):
    """``sum().backward()`` of both: the same gradient of the leaf, or the same error."""
    rr = _outcome(lambda: out_r.sum().backward())
    tt = _outcome(lambda: out_t.sum().backward())
    assert rr[0] == tt[0] and (rr[0] == "ok" or rr[1:] == tt[1:]), (rr, tt)
    if rr[0] == "ok":
        np.testing.assert_allclose(r0.grad.numpy(), t0.grad.numpy(), rtol=1e-12)


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001  (the outcome is compared)
        return ("raises", type(e).__name__, str(e).replace("torch.", "").replace("rgrad.", ""))


def _same_error(fr, ft):
    r, t = _outcome(fr), _outcome(ft)
    assert r[0] == "raises" and t[0] == "raises", (r, t)
    assert r[1:] == t[1:]


_X = [[0.25, -0.5, 0.75], [-0.1, 0.3, 0.9]]
_XPOS = [[1.25, 1.5, 2.75], [3.1, 1.3, 4.9]]

UNARY_ALIASES = [
    ("arccos", _X), ("arcsin", _X), ("arctan", _X), ("arccosh", _XPOS), ("arcsinh", _X), ("arctanh", _X),
    ("absolute", _X), ("negative", _X), ("fix", [[1.5, -2.5, 0.3], [-0.7, 2.0, 3.9]]), ("positive", _X),
]


@pytest.mark.parametrize("name,data", UNARY_ALIASES, ids=[n for n, _ in UNARY_ALIASES])
@pytest.mark.parametrize("form", ["function", "method", "inplace_method", "inplace_function"])
def test_unary_alias(name, data, form):
    if form == "inplace_function" and not hasattr(torch, name + "_"):
        assert not hasattr(rgrad, name + "_")
        return
    if form.startswith("inplace") and not hasattr(torch.Tensor, name + "_"):
        return
    r0, t0 = _both(data, grad=True)
    r, t = r0 * 1.0, t0 * 1.0  # non-leaves, for the in-place forms

    def call(lib, x):
        if form == "function":
            return getattr(lib, name)(x)
        if form == "method":
            return getattr(x, name)()
        if form == "inplace_method":
            return getattr(x, name + "_")()
        return getattr(lib, name + "_")(x)

    out_r, out_t = call(rgrad, r), call(torch, t)
    _check_same(out_r, out_t)
    if form.startswith("inplace"):
        assert out_r is r
    _same_backward(out_r, out_t, r0, t0)


@pytest.mark.parametrize("dtype", ["int64", "bool", "float32"])
@pytest.mark.parametrize("name", ["fix", "absolute", "negative", "positive"])
def test_unary_alias_dtypes(name, dtype):
    data = [1, 0, 1] if dtype == "bool" else [3, -2, 0]
    r, t = _both(data, dtype)
    rr, tt = _outcome(lambda: getattr(rgrad, name)(r)), _outcome(lambda: getattr(torch, name)(t))
    assert rr[0] == tt[0], (rr, tt)
    if rr[0] == "ok":
        _check_same(rr[1], tt[1])
    else:
        assert rr[1:] == tt[1:]


def test_positive_is_the_input():
    r, _ = _both(_X, grad=True)
    assert rgrad.positive(r) is r and r.positive() is r


BINARY = [
    ("multiply", {}), ("subtract", {}), ("subtract", {"alpha": 2}), ("divide", {}),
    ("divide", {"rounding_mode": "floor"}), ("divide", {"rounding_mode": "trunc"}), ("true_divide", {}),
    ("greater", {}), ("greater_equal", {}), ("less", {}), ("less_equal", {}), ("not_equal", {}), ("arctan2", {}),
]


@pytest.mark.parametrize("name,kwargs", BINARY, ids=[f"{n}-{k}" for n, k in BINARY])
@pytest.mark.parametrize("form", ["function", "method", "inplace_method"])
@pytest.mark.parametrize("other_kind", ["tensor", "number"])
def test_binary_alias(name, kwargs, form, other_kind):
    a_r0, a_t0 = _both(_X, grad=True)
    b_r0, b_t0 = _both([[0.5, -0.5, 0.75], [2.0, 0.3, -1.5]], grad=True)
    a_r, a_t = a_r0 * 1.0, a_t0 * 1.0
    b_r, b_t = (b_r0, b_t0) if other_kind == "tensor" else (0.75, 0.75)

    def call(lib, a, b):
        if form == "function":
            return getattr(lib, name)(a, b, **kwargs)
        if form == "method":
            return getattr(a, name)(b, **kwargs)
        return getattr(a, name + "_")(b, **kwargs)

    rr, tt = _outcome(lambda: call(rgrad, a_r, b_r)), _outcome(lambda: call(torch, a_t, b_t))
    assert rr[0] == tt[0], (rr, tt)
    if rr[0] == "raises":
        assert rr[1:] == tt[1:]
        return
    _check_same(rr[1], tt[1])
    if tt[1].requires_grad:
        rr[1].sum().backward()
        tt[1].sum().backward()
        np.testing.assert_allclose(a_r0.grad.numpy(), a_t0.grad.numpy(), rtol=1e-12)
        if other_kind == "tensor":
            np.testing.assert_allclose(b_r0.grad.numpy(), b_t0.grad.numpy(), rtol=1e-12)


def test_ger_is_outer():
    (a_r, a_t), (b_r, b_t) = _both([1.0, 2.0], grad=True), _both([3.0, -1.0, 0.5], grad=True)
    _check_same(rgrad.ger(a_r, b_r), torch.ger(a_t, b_t))
    _check_same(a_r.ger(b_r), a_t.ger(b_t))


def test_clip_inplace_function():
    r0, t0 = _both(_X, grad=True)
    r, t = r0 * 1.0, t0 * 1.0
    out_r, out_t = rgrad.clip_(r, -0.2, 0.5), torch.clip_(t, -0.2, 0.5)
    assert out_r is r
    _check_same(out_r, out_t)
    _same_error(lambda: rgrad.clip_(r), lambda: torch.clip_(t))
    _check_same(r.clip_(min=0.0), t.clip_(min=0.0))


@pytest.mark.parametrize("call", [
    "arccos([1.0])", "arctan2(x, 2.0)", "arctan2(2.0, x)", "positive([1])", "exp_([1.0])", "relu_(1)",
    "exp_()", "x.arctan2(2.0)", "x.arctan2_(2.0)",
])
def test_argument_errors(call):
    r, t = _both([1.0, 2.0])
    _same_error(lambda: eval(call, {"x": r}, vars(rgrad)), lambda: eval(call, {"x": t}, vars(torch)))


INPLACE_FUNCTIONS = [n for n in rgrad._aliases._INPLACE_FUNCTIONS if hasattr(rgrad.Tensor, n)]
_OVERLOADED = ("clamp_", "fill_", "xlogy_")
_ARGS = {"clamp_": (-0.2, 0.5), "fill_": (2.5,), "xlogy_": (3.0,)}


@pytest.mark.parametrize("name", INPLACE_FUNCTIONS)
def test_inplace_function_forms(name):
    data = _XPOS if name in ("acosh_", "log_", "log2_", "log10_", "sqrt_", "rsqrt_") else _X
    r0, t0 = _both(data, grad=True)
    r, t = r0 * 1.0, t0 * 1.0
    args = _ARGS.get(name, ())
    out_r, out_t = getattr(rgrad, name)(r, *args), getattr(torch, name)(t, *args)
    assert out_r is r and out_t is t
    _check_same(out_r, out_t)
    if out_t.requires_grad:
        _same_backward(out_r, out_t, r0, t0)
    if name in _OVERLOADED:  # torch lists its overloads ("received an invalid combination of arguments")
        with pytest.raises(TypeError, match=f"^{name}\\(\\): argument 'input' \\(position 1\\) must be Tensor, not list$"):
            getattr(rgrad, name)([1.0])
        with pytest.raises(TypeError):
            getattr(torch, name)([1.0])
    else:
        _same_error(lambda: getattr(rgrad, name)([1.0]), lambda: getattr(torch, name)([1.0]))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
@pytest.mark.parametrize("value", [3, 2.5, True])
def test_fill(dtype, value):
    r, t = _both([1, 0, 1], dtype)
    _check_same(rgrad.fill(r, value), torch.fill(t, value))
    assert rgrad.fill(r, value) is not r


def test_fill_grads():
    """torch.fill's FillBackward nodes give a zero gradient to the input and the sum to a
    tensor value; rgrad's (clone, then fill_) gives the same gradients."""
    r0, t0 = _both(_X, grad=True)
    vr, vt = _both(2.5, grad=True)
    out_r, out_t = rgrad.fill(r0, vr), torch.fill(t0, vt)
    np.testing.assert_allclose(out_r.detach().numpy(), out_t.detach().numpy())
    (out_r * 2).sum().backward()
    (out_t * 2).sum().backward()
    np.testing.assert_allclose(r0.grad.numpy(), t0.grad.numpy())
    np.testing.assert_allclose(vr.grad.numpy(), vt.grad.numpy())


# ---- queries and small functions ---------------------------------------------------------

_DTYPES = ["bool", "int64", "float32", "float64"]


def _tensor_of(lib, dtype, shape):
    data = np.arange(int(np.prod(shape))).reshape(shape) % 3
    return lib.tensor(data.tolist(), dtype=getattr(lib, dtype))


def _dt(lib, d):
    return getattr(lib, d)


@pytest.mark.parametrize("a", _DTYPES)
@pytest.mark.parametrize("b", _DTYPES)
def test_promote_types_and_can_cast(a, b):
    assert str(rgrad.promote_types(_dt(rgrad, a), _dt(rgrad, b))) == str(torch.promote_types(_dt(torch, a), _dt(torch, b))).replace("torch", "rgrad")
    assert rgrad.can_cast(_dt(rgrad, a), _dt(rgrad, b)) == torch.can_cast(_dt(torch, a), _dt(torch, b))


_OPERANDS = [("t", d, s) for d in _DTYPES for s in [(2,), ()]] + [("n", True, None), ("n", 3, None), ("n", 2.5, None)]


def _operand(lib, op):
    return _tensor_of(lib, op[1], op[2]) if op[0] == "t" else op[1]


@pytest.mark.parametrize("a", _OPERANDS, ids=str)
@pytest.mark.parametrize("b", _OPERANDS, ids=str)
def test_result_type(a, b):
    rr = _outcome(lambda: rgrad.result_type(_operand(rgrad, a), _operand(rgrad, b)))
    tt = _outcome(lambda: torch.result_type(_operand(torch, a), _operand(torch, b)))
    assert rr[0] == tt[0] == "ok"
    assert str(rr[1]).replace("rgrad", "torch") == str(tt[1])
    if a[0] == "t" or b[0] == "t":  # the dtype an arithmetic op gives
        r_sum = _operand(rgrad, a) + _operand(rgrad, b) if a[1] != "bool" or b[1] != "bool" else None
        if r_sum is not None and isinstance(r_sum, rgrad.Tensor):
            assert r_sum.dtype == rr[1]


def test_result_type_errors():
    with pytest.raises(TypeError, match="result_type\\(\\) received an invalid combination of arguments"):
        rgrad.result_type(rgrad.ones(2), [1])
    _same_error(lambda: rgrad.promote_types(1, rgrad.float32), lambda: torch.promote_types(1, torch.float32))


@pytest.mark.parametrize("dtype", _DTYPES)
@pytest.mark.parametrize("shape", [(), (1,), (0,), (2, 3), (1, 1, 1)])
def test_queries(dtype, shape):
    r, t = _tensor_of(rgrad, dtype, shape), _tensor_of(torch, dtype, shape)
    for name in ("is_floating_point", "is_complex", "is_conj", "is_neg", "is_inference"):
        assert getattr(rgrad, name)(r) == getattr(torch, name)(t), name
        assert getattr(r, name)() == getattr(t, name)(), name
    assert r.is_signed() == t.is_signed()
    assert r.ndimension() == t.ndimension()
    assert r.nbytes == t.nbytes and r.itemsize == t.itemsize
    for fr, ft in ((lambda: rgrad.is_nonzero(r), lambda: torch.is_nonzero(t)), (r.is_nonzero, t.is_nonzero)):
        rr, tt = _outcome(fr), _outcome(ft)
        assert rr == tt
    assert rgrad.is_same_size(r, r) and not rgrad.is_same_size(r, rgrad.ones(5, 5))
    assert r.is_same_size(r) == t.is_same_size(t)


@pytest.mark.parametrize("call", [
    "is_nonzero([1])", "is_floating_point(1)", "is_same_size(x, 1)", "is_complex(None)", "x.is_same_size(2)",
])
def test_query_errors(call):
    r, t = _both([1.0])
    _same_error(lambda: eval(call, {"x": r}, vars(rgrad)), lambda: eval(call, {"x": t}, vars(torch)))


@pytest.mark.parametrize("obj", ["tensor_f", "tensor_l", "tensor_b", "tensor_d", "int", "function", "class"])
def test_typename(obj):
    def make(lib):
        return {"tensor_f": lib.ones(1), "tensor_l": lib.ones(1, dtype=lib.int64), "tensor_b": lib.ones(1, dtype=lib.bool),
                "tensor_d": lib.ones(1, dtype=lib.float64), "int": 1, "function": np.sum, "class": dict}[obj]
    assert rgrad.typename(make(rgrad)) == torch.typename(make(torch)).replace("torch.", "rgrad.")


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (4, 2, 3)])
@pytest.mark.parametrize("attr", ["mT", "mH", "H", "adjoint()", "adjoint"])
def test_matrix_transposes(shape, attr):
    r0, t0 = _both(np.arange(int(np.prod(shape)), dtype=float).reshape(shape).tolist(), grad=True)
    if attr == "adjoint":
        fr, ft = (lambda: rgrad.adjoint(r0)), (lambda: torch.adjoint(t0))
    else:
        fr, ft = (lambda: eval(f"x.{attr}", {"x": r0})), (lambda: eval(f"x.{attr}", {"x": t0}))
    import warnings

    with warnings.catch_warnings(record=True) as wr:
        warnings.simplefilter("always")
        rr = _outcome(fr)
    with warnings.catch_warnings(record=True) as wt:
        warnings.simplefilter("always")
        tt = _outcome(ft)
    # torch warns once per process (TORCH_WARN_ONCE) on 0-d tensors; so does rgrad
    assert len(wr) <= 1 and len(wt) <= 1
    if wr and wt:
        assert str(wr[0].message) == str(wt[0].message).split(" (Triggered")[0]
    assert rr[0] == tt[0], (rr, tt)
    if rr[0] == "raises":
        assert rr[1:] == tt[1:]
        return
    _check_same(rr[1], tt[1])
    if rr[1] is not r0:
        _same_backward(rr[1] * rgrad.arange(rr[1].numel()).reshape(rr[1].shape), tt[1] * torch.arange(tt[1].numel()).reshape(tt[1].shape), r0, t0)


@pytest.mark.parametrize("size", [(3,), (1, 3), (2, 1), (1, 1), (2, 3), (1, 2, 3), (4,), (1, 1, 1, 3), ()])
def test_sum_to_size(size):
    r0, t0 = _both(np.arange(6.0).reshape(2, 3).tolist(), grad=True)
    for fr, ft in ((lambda: r0.sum_to_size(size), lambda: t0.sum_to_size(size)),
                   (lambda: r0.sum_to_size(*size), lambda: t0.sum_to_size(*size))):
        rr, tt = _outcome(fr), _outcome(ft)
        assert rr[0] == tt[0], (rr, tt)
        if rr[0] == "raises":
            assert rr[1:] == tt[1:]
            continue
        _check_same(rr[1], tt[1])
        assert (rr[1] is r0) == (tt[1] is t0)


@pytest.mark.parametrize("dtype", [None, "int64", "float64", "bool"])
@pytest.mark.parametrize("self_dtype", ["float32", "int64"])
def test_new_full_new_empty_empty_like(dtype, self_dtype):
    r, t = _tensor_of(rgrad, self_dtype, (2, 3)), _tensor_of(torch, self_dtype, (2, 3))
    kr = {} if dtype is None else {"dtype": getattr(rgrad, dtype)}
    kt = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    _check_same(r.new_full((3, 1), 2.5, **kr), t.new_full((3, 1), 2.5, **kt))
    for a, b in ((r.new_empty(4, 2, **kr), t.new_empty(4, 2, **kt)), (r.new_empty((4,), **kr), t.new_empty((4,), **kt)),
                 (rgrad.empty_like(r, **kr), torch.empty_like(t, **kt)),
                 (rgrad.empty_like(r.t(), **kr), torch.empty_like(t.t(), **kt))):
        assert str(a.dtype).replace("rgrad", "torch") == str(b.dtype) and tuple(a.shape) == tuple(b.shape)
        assert a.stride() == b.stride()
    assert r.new_full((2,), 1, requires_grad=True).requires_grad if self_dtype == "float32" and dtype is None else True


@pytest.mark.parametrize("value", [3, 2.5, True])
@pytest.mark.parametrize("dtype", [None, "int64", "float64"])
def test_scalar_tensor(value, dtype):
    kr = {} if dtype is None else {"dtype": getattr(rgrad, dtype)}
    kt = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    _check_same(rgrad.scalar_tensor(value, **kr), torch.scalar_tensor(value, **kt))


@pytest.mark.parametrize("fn", ["as_tensor", "asarray"])
@pytest.mark.parametrize("data", ["list_i", "list_f", "numpy", "tensor", "tensor_grad"])
@pytest.mark.parametrize("dtype", [None, "float64"])
def test_as_tensor_asarray(fn, data, dtype):
    import warnings

    arr = np.array([1.0, 2.0, 3.0])

    def make(lib):
        return {"list_i": [1, 2], "list_f": [1.5, 2.0], "numpy": arr, "tensor": lib.tensor([1.0, 2.0]),
                "tensor_grad": lib.tensor([1.0, 2.0], requires_grad=True) * 1}[data]

    kr = {} if dtype is None else {"dtype": getattr(rgrad, dtype)}
    kt = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    xr, xt = make(rgrad), make(torch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out_r, out_t = getattr(rgrad, fn)(xr, **kr), getattr(torch, fn)(xt, **kt)
    _check_same(out_r, out_t)
    assert (out_r is xr) == (out_t is xt)
    if data == "numpy" and dtype is None:  # shares the array's memory
        arr[0] = 7.0
        assert out_r[0].item() == out_t[0].item() == 7.0


def test_set_printoptions_is_exported():
    assert rgrad.set_printoptions is rgrad._tensor_str.set_printoptions
    try:
        rgrad.set_printoptions(precision=2)
        torch.set_printoptions(precision=2)
        assert repr(rgrad.tensor([1.23456])) == repr(torch.tensor([1.23456]))
    finally:
        rgrad.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")


# ---- in-place comparisons, logical ops, fmod_, remainder_, floor_divide_, cumsum_, cumprod_

_CMP = ["eq_", "ne_", "lt_", "le_", "gt_", "ge_", "greater_", "greater_equal_", "less_", "less_equal_", "not_equal_"]
_ARITH = ["fmod_", "remainder_", "floor_divide_"]
_LOGICAL = ["logical_and_", "logical_or_", "logical_xor_"]


@pytest.mark.parametrize("name", _CMP + _ARITH + _LOGICAL)
@pytest.mark.parametrize("self_dtype", ["float64", "int64", "bool"])
@pytest.mark.parametrize("other", ["number", "float", "tensor", "tensor_f32", "tensor_bcast", "tensor_bad"])
@pytest.mark.parametrize("grad", ["none", "self", "other", "both"])
def test_inplace_binary(name, self_dtype, other, grad):
    float_self = self_dtype == "float64"
    if grad in ("self", "both") and not float_self or grad in ("other", "both") and not other.startswith("tensor"):
        return
    if grad == "other" and not float_self and name not in _LOGICAL:
        # torch records a node on the int64 or bool self (a gradient-requiring other); rgrad's
        # custom-Function node does not make an integral tensor require grad
        return
    data = {"float64": [[1.5, -2.0, 3.0], [0.0, 2.0, 5.5]], "int64": [[1, -2, 3], [0, 2, 5]],
            "bool": [[True, False, True], [False, True, True]]}[self_dtype]
    a_r0, a_t0 = _both(data, self_dtype, grad=grad in ("self", "both"))
    a_r, a_t = (a_r0 * 1, a_t0 * 1) if grad in ("self", "both") else (a_r0, a_t0)

    def make_other(lib):
        rg = grad in ("other", "both")
        return {"number": 2, "float": 2.0,
                "tensor": lib.tensor([[2.0, -1.5, 3.0], [1.0, 2.0, -4.0]], dtype=lib.float64, requires_grad=rg),
                "tensor_f32": lib.tensor([2.0, -1.5, 3.0], dtype=lib.float32, requires_grad=rg),
                "tensor_bcast": lib.tensor([[2.0], [1.0]], dtype=lib.float64, requires_grad=rg),
                "tensor_bad": lib.ones(3, 1, dtype=lib.float64, requires_grad=rg)}[other]

    o_r, o_t = make_other(rgrad), make_other(torch)
    if name in _LOGICAL and not other.startswith("tensor"):
        return  # (torch's logical ops take tensors only: the same TypeError, test_query_errors style)
    rr, tt = _outcome(lambda: getattr(a_r, name)(o_r)), _outcome(lambda: getattr(a_t, name)(o_t))
    assert rr[0] == tt[0], (rr, tt)
    if rr[0] == "raises":
        assert rr[1:] == tt[1:]
        return
    assert rr[1] is a_r
    _check_same(rr[1], tt[1])
    if tt[1].requires_grad:
        w = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
        br = _outcome(lambda: (rr[1] * rgrad.tensor(w, dtype=rgrad.float64)).sum().backward())
        bt = _outcome(lambda: (tt[1] * torch.tensor(w, dtype=torch.float64)).sum().backward())
        assert br[0] == bt[0] and (br[0] == "ok" or br[1:] == bt[1:]), (br, bt)
        if br[0] == "ok":
            leaves = [(a_r0, a_t0)] if grad in ("self", "both") else []
            leaves += [(o_r, o_t)] if grad in ("other", "both") else []
            for lr, lt in leaves:
                assert (lr.grad is None) == (lt.grad is None)
                if lt.grad is not None:
                    np.testing.assert_allclose(lr.grad.numpy(), lt.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["eq_", "fmod_", "cumsum_"])
def test_inplace_on_leaf_requiring_grad(name):
    r, t = _both([1.0, 2.0], grad=True)
    args = (0,) if name == "cumsum_" else (1.0,)
    _same_error(lambda: getattr(r, name)(*args), lambda: getattr(t, name)(*args))
    with rgrad.no_grad(), torch.no_grad():
        _check_same(getattr(r * 1, name)(*args), getattr(t * 1, name)(*args))


@pytest.mark.parametrize("name", ["logical_not_", "logical_and_"])
def test_logical_inplace_keeps_the_node(name):
    """torch's in-place logical ops do not record: the tensor keeps its node (even a leaf)."""
    for grad_leaf in (False, True):
        r0, t0 = _both([1.5, 0.0, -2.0], grad=True)
        r, t = (r0, t0) if grad_leaf else (r0 * 1, t0 * 1)
        args_r, args_t = ((), ()) if name == "logical_not_" else ((rgrad.tensor([1, 0, 0]),), (torch.tensor([1, 0, 0]),))
        _check_same(getattr(r, name)(*args_r), getattr(t, name)(*args_t))


@pytest.mark.parametrize("name", ["cumsum_", "cumprod_"])
@pytest.mark.parametrize("dtype", ["float64", "int64", "bool"])
@pytest.mark.parametrize("dim", [0, 1, -1, 2])
@pytest.mark.parametrize("cast", [None, "float64", "int64"])
def test_cumulative_inplace(name, dtype, dim, cast):
    data = [[1.5, -2.0, 0.0], [3.0, 2.0, 0.5]] if dtype == "float64" else [[1, 0, 3], [2, 1, 1]]
    grad = dtype == "float64"
    r0, t0 = _both(data, dtype, grad=grad)
    r, t = (r0 * 1, t0 * 1) if grad else (r0, t0)
    kr = {} if cast is None else {"dtype": getattr(rgrad, cast)}
    kt = {} if cast is None else {"dtype": getattr(torch, cast)}
    rr, tt = _outcome(lambda: getattr(r, name)(dim, **kr)), _outcome(lambda: getattr(t, name)(dim, **kt))
    assert rr[0] == tt[0], (rr, tt)
    if rr[0] == "raises":
        assert rr[1:] == tt[1:]
        return
    assert rr[1] is r
    _check_same(rr[1], tt[1])
    if grad:
        w = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
        (rr[1] * rgrad.tensor(w, dtype=rgrad.float64)).sum().backward()
        (tt[1] * torch.tensor(w, dtype=torch.float64)).sum().backward()
        np.testing.assert_allclose(r0.grad.numpy(), t0.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("a", ["int64", "float64", "bool"])
@pytest.mark.parametrize("b", ["int64", "float64", "bool"])
def test_logical_xor(a, b):
    xr, xt = _both([[1, 0, 2], [0, 0, 3]], a)
    yr, yt = _both([1, 0, 0], b)
    _check_same(rgrad.logical_xor(xr, yr), torch.logical_xor(xt, yt))
    _check_same(xr.logical_xor(yr), xt.logical_xor(yt))
    _same_error(lambda: rgrad.logical_xor(xr, 1), lambda: torch.logical_xor(xt, 1))
    _same_error(lambda: xr.logical_xor(1), lambda: xt.logical_xor(1))


def test_asarray_options():
    xr, xt = rgrad.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0])
    _same_error(lambda: rgrad.asarray(xr, dtype=rgrad.float64, copy=False),
                lambda: torch.asarray(xt, dtype=torch.float64, copy=False))
    assert rgrad.asarray(xr, requires_grad=False) is xr and torch.asarray(xt, requires_grad=False) is xt
    gr, gt = rgrad.tensor([1.0], requires_grad=True), torch.tensor([1.0], requires_grad=True)
    assert rgrad.asarray(gr, requires_grad=False).requires_grad == torch.asarray(gt, requires_grad=False).requires_grad
    cr, ct = rgrad.asarray(xr, copy=True), torch.asarray(xt, copy=True)
    assert (cr is xr) == (ct is xt) == False  # noqa: E712
    _check_same(cr, ct)


def _double_backward(lib, name, other_kind):
    a = lib.tensor([[1.5, -2.0, 3.0], [0.5, 2.0, 5.5]], dtype=lib.float64, requires_grad=True)
    o = lib.tensor([[2.0, -1.5, 1.7], [1.1, 2.3, -4.0]], dtype=lib.float64, requires_grad=True)
    z = a * a
    cumulative = name in ("cumsum_", "cumprod_")
    if cumulative:
        getattr(z, name)(1)
    else:
        getattr(z, name)(o * o if other_kind == "tensor" else 1.7)
    w = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=lib.float64)
    ins = [a, o] if other_kind == "tensor" and not cumulative else [a]
    g = lib.autograd.grad((z * w).sum(), ins, create_graph=True)
    gg = lib.autograd.grad(sum((gi * gi).sum() for gi in g), ins, allow_unused=True)
    return _node(z), [x.detach().numpy() for x in g], [np.zeros(2) if x is None else x.numpy() for x in gg]


@pytest.mark.parametrize("name", ["cumsum_", "cumprod_", "fmod_", "remainder_"])
@pytest.mark.parametrize("other_kind", ["tensor", "number"])
def test_inplace_double_backward(name, other_kind):
    """The in-place nodes' gradients, recorded under create_graph, give torch's second
    derivatives (a None second derivative counts as zeros)."""
    node_r, g_r, gg_r = _double_backward(rgrad, name, other_kind)
    node_t, g_t, gg_t = _double_backward(torch, name, other_kind)
    assert node_r == node_t
    for x, y in zip(g_r, g_t):
        np.testing.assert_allclose(x, y, rtol=1e-12)
    for x, y in zip(gg_r, gg_t):
        np.testing.assert_allclose(np.broadcast_to(x, y.shape) if x.shape != y.shape else x, y, rtol=1e-12)
