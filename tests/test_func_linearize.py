"""rgrad.func.linearize against torch.func.linearize (values, pytrees, errors, calls of
func) and against finite differences in float64."""

from __future__ import annotations

import pytest
from _differential import both, caught

import rgrad

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")


def _f(T):
    def f(x, y):
        return {"a": x.sin() * y, "b": (x * 2).sum(), "i": x.argmax(), "c": T.ones(2)}

    return f


def test_linearize_values_pytrees_and_repeated_calls():
    def program(T):
        x = T.tensor([0.3, -1.2, 2.0], dtype=T.float64)
        y = T.tensor([1.5, 0.25, -0.5], dtype=T.float64)
        calls = []

        def f(x, y):
            calls.append(1)
            return _f(T)(x, y)

        out, jvp_fn = T.func.linearize(f, x, y)
        r1 = jvp_fn(T.ones(3, dtype=T.float64), T.arange(3.0, dtype=T.float64))
        r2 = jvp_fn(T.ones(3, dtype=T.float64) * 2, T.zeros(3, dtype=T.float64))
        return out, r1, r2, len(calls)

    out, r1, r2, calls = both(program)
    assert calls == 2  # func runs twice, in linearize, and never in jvp_fn
    assert r1["i"] == ("T", "int64", (), 0) and r1["c"] == ("T", "float32", (2,), [0.0, 0.0])
    assert r1["b"][3] == 6.0


def test_linearize_matches_finite_differences():
    rgrad.manual_seed(3)
    w = rgrad.randn(5, 4, dtype=rgrad.float64)

    def f(x, b):
        return ((w @ x).tanh() * b).exp(), (x * x).sum()

    x = rgrad.randn(4, dtype=rgrad.float64)
    b = rgrad.randn(5, dtype=rgrad.float64)
    _, jvp_fn = rgrad.func.linearize(f, x, b)
    for k in range(3):
        tx = rgrad.randn(4, dtype=rgrad.float64)
        tb = rgrad.randn(5, dtype=rgrad.float64)
        eps = 1e-6
        hi = f(x + eps * tx, b + eps * tb)
        lo = f(x - eps * tx, b - eps * tb)
        got = jvp_fn(tx, tb)
        for g, h, low in zip(got, hi, lo):
            fd = (h - low) / (2 * eps)
            assert (g - fd).abs().max().item() < 1e-6
        # and the same as jvp
        _, tangents = rgrad.func.jvp(f, (x, b), (tx, tb))
        for g, t in zip(got, tangents):
            assert (g - t).abs().max().item() < 1e-12


def test_linearize_errors():
    def program(T):
        f = _f(T)
        x = T.ones(3)
        y = T.ones(3)
        _, jvp_fn = T.func.linearize(f, x, y)
        return [
            caught(lambda: jvp_fn(T.ones(4), T.ones(3))),
            caught(lambda: jvp_fn(T.ones(3), T.ones(3, dtype=T.float64))),
            caught(lambda: jvp_fn(T.ones(3))),
            caught(lambda: jvp_fn((T.ones(3), T.ones(3)))),
            caught(lambda: T.func.linearize(f, x.long(), y)),
            caught(lambda: T.func.linearize(lambda v: v, [1.0])),
        ]

    res = both(program)
    assert res[0] == ("E", "RuntimeError", "tangent:0 with shape rgrad.Size([4]) in flattened pytree doesn't match "
                      "the shape rgrad.Size([3]) of the corresponding primal.")
    assert res[4] == ("E", "ValueError", "Expected primal to be floating point or complex, but got: rgrad.int64")


def test_linearize_is_differentiable_in_the_tangents_not_the_primals():
    def program(T):
        x = T.tensor([0.5, -0.25, 1.0], requires_grad=True)
        out, jvp_fn = T.func.linearize(lambda v: v.exp(), x)
        t = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        j = jvp_fn(t)
        (gt,) = T.autograd.grad(j.sum(), t, retain_graph=True)
        unused = caught(lambda: T.autograd.grad(j.sum(), x))
        with T.no_grad():
            plain = jvp_fn(t).requires_grad
        return out.requires_grad, j, gt, unused, plain

    out_rg, j, gt, unused, plain = both(program)
    assert out_rg is True and plain is False
    assert unused[1] == "RuntimeError" and "appears to not have been used in the graph" in unused[2]


def test_vmap_of_linearize_gives_the_jacobian():
    def program(T):
        a = T.tensor([[1.0, 2.0], [0.5, -1.0], [3.0, 0.25]], dtype=T.float64)

        def f(x):
            return (a @ x).sin()

        x = T.tensor([0.2, -0.7], dtype=T.float64)
        _, jvp_fn = T.func.linearize(f, x)
        cols = T.func.vmap(jvp_fn)(T.eye(2, dtype=T.float64))
        return cols.t(), T.func.jacfwd(f)(x)

    cols, jac = both(program)
    assert cols == jac


def test_debug_unwrap_gives_the_tensor_under_vmap():
    def program(T):
        seen = []

        def f(v):
            u = T.func.debug_unwrap(v)
            seen.append((tuple(u.shape), type(u).__name__ == "Tensor"))
            return v * 2

        x = T.arange(12.0).reshape(3, 4)
        out = T.func.vmap(f)(x)
        inner = []

        def g(v):
            inner.append(tuple(T.func.debug_unwrap(v, recurse=True).shape))
            return v

        T.func.vmap(T.func.vmap(g))(T.zeros(2, 3, 4))
        return seen, out, inner, T.func.debug_unwrap(x) is x

    seen, out, inner, same = both(program)
    assert seen == [((3, 4), True)] and inner == [(2, 3, 4)] and same
