"""set_default_dtype / get_default_dtype: what becomes float64 when the default float dtype
is float64 (factories, Python floats, integers promoted to float, printing), against torch.
"""

from __future__ import annotations

import threading

import pytest

import rgrad

torch = pytest.importorskip("torch")


@pytest.fixture
def float64_default():
    """float64 as the default float dtype in both libraries for one test, restored after."""
    before_r, before_t = rgrad.get_default_dtype(), torch.get_default_dtype()
    rgrad.set_default_dtype(rgrad.float64)
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        rgrad.set_default_dtype(before_r)
        torch.set_default_dtype(before_t)


def _name(d):
    return str(d).split(".")[1]


def test_the_default_is_float32_and_get_returns_the_dtype_object():
    assert rgrad.get_default_dtype() is rgrad.float32
    assert rgrad.tensor([1.5]).dtype == rgrad.float32


CASES = {
    "tensor of floats": lambda m: m.tensor([1.0, 2.5]),
    "tensor of a float": lambda m: m.tensor(2.5),
    "tensor of ints": lambda m: m.tensor([1, 2]),
    "tensor float32": lambda m: m.tensor([1.0], dtype=m.float32),
    "zeros": lambda m: m.zeros(2, 3),
    "ones": lambda m: m.ones(2),
    "empty": lambda m: m.empty(2),
    "full float": lambda m: m.full((2,), 1.5),
    "full int": lambda m: m.full((2,), 3),
    "arange float": lambda m: m.arange(3.0),
    "arange int": lambda m: m.arange(3),
    "linspace": lambda m: m.linspace(0, 1, 5),
    "eye": lambda m: m.eye(2),
    "rand": lambda m: m.rand(3),
    "randn": lambda m: m.randn(3),
    "Tensor()": lambda m: m.Tensor([1, 2]),
    "FloatTensor": lambda m: m.FloatTensor([1, 2]),
    "int / int": lambda m: m.tensor([1, 2]) / m.tensor([2, 2]),
    "int / 2": lambda m: m.tensor([1, 2]) / 2,
    "int + 1.5": lambda m: m.tensor([1, 2]) + 1.5,
    "float32 * 2.5": lambda m: m.tensor([1.0], dtype=m.float32) * 2.5,
    "int sqrt": lambda m: m.tensor([1, 4]).sqrt(),
    "int atan2": lambda m: m.atan2(m.tensor([1, 2]), m.tensor([3, 4])),
    "int logsumexp": lambda m: m.tensor([[1, 2]]).logsumexp(1),
    "where numbers": lambda m: m.where(m.tensor([True, False]), 1.0, 2.0),
    "float()": lambda m: m.tensor([1, 2]).float(),
    "zeros_like": lambda m: m.zeros_like(m.tensor([1.0], dtype=m.float32)),
    "mean": lambda m: m.ones(3).mean(),
}


@pytest.mark.parametrize("case", list(CASES))
def test_float64_default_gives_torchs_dtypes(float64_default, case):
    got, want = CASES[case](rgrad), CASES[case](torch)
    assert _name(got.dtype) == _name(want.dtype), case
    assert rgrad.get_default_dtype() is rgrad.float64


def test_printing_names_the_dtype_that_is_not_the_default(float64_default):
    for make in (lambda m: m.tensor([1.5, 2.0]), lambda m: m.tensor([1.5], dtype=m.float32),
                 lambda m: m.zeros(0), lambda m: m.zeros(0, dtype=m.float32)):
        assert repr(make(rgrad)) == repr(make(torch)).replace("torch.", "rgrad.")


def test_float32_default_back_and_printing_again():
    rgrad.set_default_dtype(rgrad.float64)
    rgrad.set_default_dtype(rgrad.float32)
    assert rgrad.get_default_dtype() is rgrad.float32
    assert rgrad.zeros(1).dtype == rgrad.float32
    assert repr(rgrad.tensor([1.5], dtype=rgrad.float64)) == "tensor([1.5000], dtype=rgrad.float64)"


@pytest.mark.parametrize("bad", ["int64", "bool", "a string", "number"])
def test_non_float_dtypes_are_refused_as_torch_refuses_them(bad):
    def arg(m):
        return {"int64": m.int64, "bool": m.bool, "a string": "float64", "number": 3}[bad]

    with pytest.raises(TypeError) as got:
        rgrad.set_default_dtype(arg(rgrad))
    with pytest.raises(TypeError) as want:
        torch.set_default_dtype(arg(torch))
    assert str(got.value) == str(want.value)
    assert rgrad.get_default_dtype() is rgrad.float32


def test_gradcheck_style_code_runs_in_float64(float64_default):
    x = rgrad.randn(4, requires_grad=True)
    assert x.dtype == rgrad.float64
    assert rgrad.autograd.gradcheck(lambda t: (t.sin() * 2.5).sum(), (x,))


def test_the_default_is_process_wide_as_torchs(float64_default):
    # torch's default dtype is a global, not per thread: another thread sees it
    seen = []
    t = threading.Thread(target=lambda: seen.append(rgrad.zeros(1).dtype))
    t.start()
    t.join()
    assert seen == [rgrad.float64]
