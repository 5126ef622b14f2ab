"""fill / fill_ / zero_ / masked_fill against torch 2.15: the node each records (FillBackward0-3,
ZeroBackward0, MaskedFillBackward0/1) and its edges, values, gradients (of the filled tensor and of
a tensor value), forward-mode tangents, vmap, and the errors for a value that is not 0-d."""

from __future__ import annotations

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")


def _edges(t):
    """The node's name and its next functions' names (None for an input that gets no gradient)."""
    fn = t.grad_fn
    edges = [None if f is None else type(f).__name__ for f, _ in fn.next_functions]
    return type(fn).__name__, edges


# (lib, x: a leaf that requires grad, v: a 0-d value that does / does not) -> result
CASES = {
    "fill number": lambda lib, x, v: lib.fill(x, 2.5),
    "fill tensor": lambda lib, x, v: lib.fill(x, v),
    "fill_ number": lambda lib, x, v: x.clone().fill_(2.5),
    "fill_ tensor": lambda lib, x, v: x.clone().fill_(v),
    "zero_": lambda lib, x, v: x.clone().zero_(),
    "masked_fill number": lambda lib, x, v: x.masked_fill(x.detach() > 0, 2.5),
    "masked_fill tensor": lambda lib, x, v: x.masked_fill(x.detach() > 0, v),
    "masked_fill_ tensor": lambda lib, x, v: x.clone().masked_fill_(x.detach() > 0, v),
    "setitem tensor": lambda lib, x, v: _setitem(x.clone(), v),
}


def _setitem(y, v):
    y[1:3] = v
    return y


@pytest.mark.parametrize("value_grad", [False, True], ids=["value", "value requiring grad"])
@pytest.mark.parametrize("case", list(CASES))
def test_nodes_edges_values_and_gradients_as_torch(case, value_grad):
    got = []
    for lib in (rgrad, torch):
        x = lib.tensor([0.5, -1.5, 2.0, -0.25], dtype=lib.float64, requires_grad=True)
        v = lib.tensor(3.0, dtype=lib.float64, requires_grad=value_grad)
        y = CASES[case](lib, x, v)
        edges = _edges(y)
        (y * lib.tensor([1.0, 10.0, 100.0, 1000.0], dtype=lib.float64)).sum().backward()
        got.append((edges, y.detach().numpy().tolist(), x.grad.numpy().tolist(),
                    None if v.grad is None else v.grad.item()))
    assert got[0] == got[1]


def test_no_node_without_grad_and_the_value_is_cast_as_a_tensor():
    for lib in (rgrad, torch):
        y = lib.zeros(3).fill_(lib.tensor(2.0))
        assert y.grad_fn is None and y.tolist() == [2.0, 2.0, 2.0]
        # a tensor value is cast (float64 1e300 -> float32 inf), a number is range-checked
        assert lib.zeros(2).fill_(lib.tensor(1e300, dtype=lib.float64)).tolist() == [float("inf")] * 2
        x = lib.zeros(2, requires_grad=True)
        assert lib.fill(x, lib.tensor(1e300, dtype=lib.float64)).tolist() == [float("inf")] * 2
        with pytest.raises(RuntimeError, match="^value cannot be converted to type float without overflow$"):
            lib.zeros(2).fill_(1e300)
        assert lib.zeros(3, dtype=lib.int64).fill_(lib.tensor(2.7)).tolist() == [2, 2, 2]
        assert lib.fill(lib.zeros(3, dtype=lib.int64), 2).dtype == lib.int64


@pytest.mark.parametrize("call, message", [
    (lambda lib, x: x.clone().fill_(lib.tensor([1.0])),
     "fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions."),
    (lambda lib, x: lib.fill(x, lib.tensor([1.0, 2.0])),
     "fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions."),
    (lambda lib, x: lib.zeros(2).fill_(lib.ones(1, 1)),
     "fill_ only supports 0-dimension value tensor but got tensor with 2 dimensions."),
    (lambda lib, x: x.masked_fill(x > 0, lib.tensor([1.0])),
     "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s)."),
])
def test_value_that_is_not_0d_is_refused_as_torch(call, message):
    for lib in (rgrad, torch):
        x = lib.randn(3, requires_grad=True)
        with pytest.raises(RuntimeError) as e:
            call(lib, x)
        assert str(e.value) == message


def test_gradcheck_double_backward_and_forward_ad():
    x = rgrad.randn(4, dtype=rgrad.float64, requires_grad=True)
    v = rgrad.tensor(0.7, dtype=rgrad.float64, requires_grad=True)
    for f in (lambda x, v: rgrad.fill(x, v) * x, lambda x, v: x.clone().fill_(v) * x.exp(),
              lambda x, v: rgrad.fill(x, 2.0) * x * v):
        assert rgrad.autograd.gradcheck(f, (x, v), check_forward_ad=True)
        assert rgrad.autograd.gradgradcheck(f, (x, v))
    # the tangent of a fill is the value's tangent (broadcast), as torch's
    tangents = []
    for lib in (rgrad, torch):
        fwd = lib.autograd.forward_ad
        with fwd.dual_level():
            xd = fwd.make_dual(lib.ones(3, dtype=lib.float64), lib.full((3,), 5.0, dtype=lib.float64))
            vd = fwd.make_dual(lib.tensor(2.0, dtype=lib.float64), lib.tensor(7.0, dtype=lib.float64))
            tangents.append([fwd.unpack_dual(t).tangent.tolist() for t in
                             (lib.fill(xd, vd), xd.clone().fill_(vd), xd.clone().zero_() + xd)])
    assert tangents[0] == tangents[1]


def test_fill_under_vmap():
    xs = rgrad.randn(3, 4)
    vs = rgrad.tensor([1.0, 2.0, 3.0])
    out = rgrad.vmap(lambda x: rgrad.fill(x, 2.0))(xs)
    np.testing.assert_array_equal(out.numpy(), np.full((3, 4), 2.0, dtype=np.float32))
    out = rgrad.vmap(lambda x, v: rgrad.fill(x, v))(xs, vs)
    np.testing.assert_array_equal(out.numpy(), np.repeat(vs.numpy()[:, None], 4, axis=1))
    # per-sample gradients of the value through fill
    g = rgrad.func.vmap(rgrad.func.grad(lambda v, x: (rgrad.fill(x, v) * x).sum()))(vs, xs)
    np.testing.assert_allclose(g.numpy(), xs.sum(1).numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_trace_has_torchs_bits(dtype):
    """torch's CPU trace adds the diagonal in order in float64 (float32 rounded once at the
    end): the same bits, over strided and offset matrices, tall and wide."""
    rng = np.random.RandomState(7)
    for shape in [(300, 300), (40, 90), (90, 40), (0, 3)]:
        a = rng.randn(*shape) * 100
        a = a > 0 if dtype == "bool" else a.astype(dtype)
        for view in (lambda t: t, lambda t: t.t(), lambda t: t[1:, ::2]):
            r, t = view(rgrad.tensor(a)), view(torch.tensor(a))
            if dtype == "bool":
                for lib, x in ((rgrad, r), (torch, t)):
                    with pytest.raises(RuntimeError, match="\"trace\" not implemented for 'Bool'"):
                        x.trace()
                continue
            got, want = r.trace(), t.trace()
            assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
            assert got.numpy().tobytes() == want.numpy().tobytes()
