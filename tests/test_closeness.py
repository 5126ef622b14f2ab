"""isclose, allclose and equal (functions and methods) against torch: NaN and infinities,
tolerances, integer and bool tensors, broadcasting, dtype and argument errors."""

from __future__ import annotations

import pytest
from _differential import both, caught

nan, inf = float("nan"), float("inf")


def _pair(T, dtype=None):
    dtype = dtype or T.float32
    a = T.tensor([1.0, nan, inf, -inf, 1e-9, 2.0, 1e10, -0.0], dtype=dtype)
    b = T.tensor([1.0 + 1e-6, nan, inf, inf, 0.0, 2.1, 1.00001e10, 0.0], dtype=dtype)
    return a, b


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_isclose_and_allclose_on_floats(dtype):
    def program(T):
        a, b = _pair(T, getattr(T, dtype))
        return [
            T.isclose(a, b), T.isclose(a, b, equal_nan=True), a.isclose(b, rtol=0.1),
            T.isclose(a, b, rtol=0, atol=0), T.isclose(a, b, atol=0.2),
            T.allclose(a, b), T.allclose(a, a), T.allclose(a, a, equal_nan=True), a.allclose(b[:1].expand(8)),
            T.isclose(a, b[:1]), T.allclose(T.ones(2, 3), T.ones(3)),
        ]

    res = both(program)
    assert res[5] is False and res[6] is False and res[7] is True


def test_isclose_on_integers_and_bools():
    def program(T):
        i, j = T.tensor([1, 2, 3, -5]), T.tensor([1, 2, 4, -7])
        p, q = T.tensor([True, False, True]), T.tensor([False, False, True])
        return [T.isclose(i, j), T.isclose(i, j, atol=1), T.isclose(i, j, rtol=0.3), T.isclose(p, q),
                T.isclose(p, q, atol=1), T.allclose(i, i), T.allclose(i, j, atol=2)]

    assert both(program)[5] is True


def test_equal():
    def program(T):
        a = T.tensor([1.0, 2.0])
        return [T.equal(a, a), T.equal(a, a.double()), T.equal(a, T.tensor([1, 2])), T.equal(a[:1], a),
                T.equal(T.ones(2, 1), T.ones(2)), T.equal(T.tensor([0.0]), T.tensor([-0.0])),
                T.equal(T.tensor([nan]), T.tensor([nan])), a.equal(a * 1)]

    assert both(program) == [True, True, True, False, False, True, False, True]


def test_closeness_errors():
    def program(T):
        a = T.ones(3)
        return [
            caught(lambda: T.isclose(a, a.double())), caught(lambda: T.allclose(a, a.double())),
            caught(lambda: T.isclose(a, 1.0)), caught(lambda: T.isclose(1.0, a)), caught(lambda: T.equal(a, 1.0)),
            caught(lambda: T.isclose(a, a, rtol=-1)), caught(lambda: T.isclose(a, a, atol=-1.5)),
            caught(lambda: T.isclose(a, T.ones(2))),
        ]

    res = both(program)
    assert res[0] == ("E", "RuntimeError", "Float did not match Double")
    assert res[5] == ("E", "RuntimeError", "rtol must be greater than or equal to zero, but got -1")


def test_isclose_records_nothing():
    def program(T):
        x = T.ones(3, requires_grad=True)
        r = T.isclose(x, x * 1)
        return r.requires_grad, r.dtype, T.allclose(x, x * 1)

    assert both(program) == (False, "bool", True)
