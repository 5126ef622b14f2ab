"""torch 2.15's printed graph structure, warnings and reflected operators (issue 13).

Each check states what torch 2.15 does, and runs on torch too when it is installed.
"""

import subprocess
import sys
import warnings

import pytest

import rgrad

MODULES = [rgrad]
try:  # the same checks on torch, the reference, when it is installed
    import torch

    MODULES.append(torch)
except ImportError:  # pragma: no cover - torch is optional
    pass


def names(fn):
    """(node name, next_functions as names) of a grad_fn."""
    return type(fn).__name__, tuple(None if f is None else type(f).__name__ for f, _ in fn.next_functions)


# expression with `b` = sin(leaf): (node, next_functions)
REFLECTED = [
    ("2 * b", ("MulBackward0", ("SinBackward0", None))),
    ("2 + b", ("AddBackward0", ("SinBackward0", None))),
    ("2 - b", ("RsubBackward1", ("SinBackward0",))),
    ("2 / b", ("MulBackward0", ("ReciprocalBackward0", None))),
    ("2 ** b", ("PowBackward2", ("SinBackward0",))),
    ("2 // b", ("NotImplemented", ("SinBackward0",))),
    ("1.7 % b", ("NotImplemented", ("SinBackward0",))),
    ("b * 2", ("MulBackward0", ("SinBackward0", None))),
    ("b + 2", ("AddBackward0", ("SinBackward0", None))),
    ("b - 2", ("SubBackward0", ("SinBackward0", None))),
    ("b / 2", ("DivBackward0", ("SinBackward0", None))),
]


@pytest.mark.parametrize("mod", MODULES, ids=lambda m: m.__name__)
@pytest.mark.parametrize("expr, expected", REFLECTED, ids=[e for e, _ in REFLECTED])
def test_reflected_operators_record_torchs_graph(mod, expr, expected):
    b = mod.tensor([1.0, 2.0], requires_grad=True).sin()
    out = eval(expr, {"b": b})
    assert names(out.grad_fn) == expected


@pytest.mark.parametrize("mod", MODULES, ids=lambda m: m.__name__)
def test_reflected_matmul_puts_the_left_operand_first(mod):
    a = mod.ones(2, 2, requires_grad=True)
    b = mod.ones(2, 2, requires_grad=True).sin()
    out = b.__rmatmul__(a)  # a @ b
    assert names(out.grad_fn) == ("MmBackward0", ("AccumulateGrad", "SinBackward0"))


@pytest.mark.parametrize("mod", MODULES, ids=lambda m: m.__name__)
def test_reflected_values_match_forward_operators(mod):
    b = mod.tensor([1.5, -2.0, 3.0], dtype=mod.float64)
    assert (2 * b).tolist() == [3.0, -4.0, 6.0]
    assert (2 - b).tolist() == [0.5, 4.0, -1.0]
    assert (1.7 % b).tolist() == [1.7 % 1.5, 1.7 % -2.0, 1.7 % 3.0]
    assert (7 // b).tolist() == [4.0, -4.0, 2.0]


@pytest.mark.parametrize("mod", MODULES, ids=lambda m: m.__name__)
def test_reading_grad_of_a_non_leaf_warns(mod):
    a = mod.ones(2, requires_grad=True)
    b = a * 2
    with pytest.warns(UserWarning, match=r"^The \.grad attribute of a Tensor that is not a leaf Tensor is being"):
        assert b.grad is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b.retain_grad()
        assert b.grad is None  # retained: no warning
        assert a.grad is None  # a leaf: no warning
        assert mod.ones(2).grad is None  # no grad at all: a leaf


@pytest.mark.parametrize("mod", MODULES, ids=lambda m: m.__name__)
def test_leaf_grad_under_create_graph_is_a_copy_then_a_sum(mod):
    x = mod.tensor([1.0, 2.0], requires_grad=True)
    (x**3).sum().backward(create_graph=True)
    first = x.grad
    # d/dx x^3 = 3x^2
    assert first.tolist() == [3.0, 12.0]
    assert names(first.grad_fn) == ("CopyBackwards", (None, "MulBackward0"))
    (x**3).sum().backward(create_graph=True)
    assert x.grad.tolist() == [6.0, 24.0]
    assert type(x.grad.grad_fn).__name__ == "AddBackward0"
    # the copy's history still leads back to x: d/dx sum(3x^2) = 6x
    (g,) = mod.autograd.grad(first.sum(), x)
    assert g.tolist() == [6.0, 12.0]


@pytest.mark.parametrize("mod", MODULES, ids=lambda m: m.__name__)
def test_backward_with_create_graph_warns_once_per_process(mod):
    code = f"""
import warnings
import {mod.__name__} as t
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    for _ in range(3):
        x = t.tensor([1.0], requires_grad=True)
        (x * x).sum().backward(create_graph=True)
print(len(w), w[0].category.__name__, str(w[0].message)[:60])
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "1 UserWarning Using backward() with create_graph=True will create a refere"


@pytest.mark.parametrize("mod", MODULES, ids=lambda m: m.__name__)
def test_set_num_threads_caps_and_restores(mod):
    before = mod.get_num_threads()
    try:
        mod.set_num_threads(3)
        assert mod.get_num_threads() == 3
    finally:
        mod.set_num_threads(before)


def test_set_num_threads_is_capped_at_the_documented_bound():
    before = rgrad.get_num_threads()
    try:
        rgrad.set_num_threads(100_000)
        assert rgrad.get_num_threads() == 256
    finally:
        rgrad.set_num_threads(before)


def test_num_threads_env_values_below_one_fall_back_to_the_cpu_count():
    code = "import rgrad, os; print(rgrad.get_num_threads(), len(os.sched_getaffinity(0)) or 1)"
    for value in ["0", "-3", "x", "100000"]:
        env = {"RGRAD_NUM_THREADS": value, "PATH": "/usr/bin:/bin"}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
        got, cpus = map(int, out.stdout.split())
        assert got == (256 if value == "100000" else min(cpus, 256)), value


def test_from_bytes_with_an_overflowing_shape_is_a_type_error_not_a_panic():
    with pytest.raises(TypeError, match="byte length does not match shape and dtype"):
        rgrad._C._from_bytes(b"\0" * 8, rgrad.float32, [2**40, 2**40])


# a lone number or slice on a 0-dim tensor has torch's own message; in a tuple or as a
# tensor it is "too many indices", as on any tensor
ZERO_DIM_INDEX = [
    ("0", "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to "
          "convert a 0-dim tensor to a number"),
    ("-1", "index -1 is out of bounds for dimension 0 with size 0"),
    ("3", "index 3 is out of bounds for dimension 0 with size 0"),
    ("slice(None)", "slice() cannot be applied to a 0-dim tensor."),
    ("slice(0, 1)", "slice() cannot be applied to a 0-dim tensor."),
    ("(0,)", "too many indices for tensor of dimension 0"),
    ("(slice(None),)", "too many indices for tensor of dimension 0"),
    ("[0]", "too many indices for tensor of dimension 0"),
    ("m.tensor(0)", "too many indices for tensor of dimension 0"),
]


@pytest.mark.parametrize("mod", MODULES, ids=lambda m: m.__name__)
@pytest.mark.parametrize("index, message", ZERO_DIM_INDEX, ids=[i for i, _ in ZERO_DIM_INDEX])
def test_indexing_a_0_dim_tensor_raises_torchs_message(mod, index, message):
    t = mod.tensor(1.0)
    idx = eval(index, {"m": mod})
    with pytest.raises(IndexError) as get:
        t[idx]
    assert str(get.value) == message
    with pytest.raises(IndexError) as put:
        t[idx] = 2.0
    assert str(put.value) == message
    # what does index a 0-dim tensor still does
    assert tuple(t[None].shape) == (1,) and tuple(t[...].shape) == () and tuple(t[True].shape) == (1,)


@pytest.mark.parametrize("mod", MODULES, ids=lambda m: m.__name__)
@pytest.mark.parametrize("gdtype", ["int64", "bool", "float64"])
@pytest.mark.parametrize("odtype", ["float32", "float64"])
def test_grad_outputs_of_another_real_dtype_are_cast_to_the_outputs(mod, gdtype, odtype):
    x = mod.tensor([1.0, 2.0, 3.0], dtype=getattr(mod, odtype), requires_grad=True)
    y = x * x
    g = mod.tensor([1, 0, 2]).to(getattr(mod, gdtype))
    (gx,) = mod.autograd.grad(y, x, g, retain_graph=True)
    assert gx.dtype == getattr(mod, odtype)
    expected = [2.0, 0.0, 6.0] if gdtype == "bool" else [2.0, 0.0, 12.0]
    assert gx.tolist() == expected
    y.backward(g)
    assert x.grad.dtype == getattr(mod, odtype) and x.grad.tolist() == expected
