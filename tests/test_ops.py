"""Op-level checks driven by the table in tests/op_db.py.

For every op and sample input:
* forward values against the numpy reference, in float32 and float64, with the
  result dtype torch would give (the input dtype, bool for comparisons, int64
  for indices) and the right shape;
* autograd Jacobians against central differences in float64 (``check_grad``);
* second derivatives (``check_gradgrad``) for every op that has them in torch;
* gradients of broadcast inputs have the input's shape (``.backward()``/``.grad``);
* integer / bool outputs never require grad;
* parity with torch itself, when torch is installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import rgrad
from fdcheck import check_grad, check_gradgrad, float_outputs, numerical_jacobian
from op_db import op_db


def _params(check, predicate=lambda op, sample: True):
    """(op, sample) params for one kind of check; a sample marked with a known bug
    (SampleInput.bug) is a strict xfail for the checks it names."""
    return [
        pytest.param(op, sample, id=f"{op.name}-{i}", marks=sample.marks(check))
        for op in op_db
        for i, sample in enumerate(op.samples)
        if predicate(op, sample)
    ]


FORWARD = [
    pytest.param(op, sample, dtype, id=f"{op.name}-{i}-{dtype}", marks=sample.marks("forward"))
    for op in op_db
    for i, sample in enumerate(op.samples)
    for dtype in op.dtypes
]
GRAD = _params("grad", lambda op, s: op.supports_grad and s.grad)
GRADGRAD = _params("gradgrad", lambda op, s: op.supports_gradgrad and s.grad)
BROADCAST = _params("broadcast", lambda op, s: op.supports_grad and s.grad and s.broadcast)
ALL = _params("parity")


def _outputs(out, T=rgrad):
    if isinstance(out, T.Tensor):
        return [out]
    return list(out)


def _expected_dtype(expected: np.ndarray, dtype: str, keeps_ref_dtype: bool = False):
    kind = expected.dtype.kind
    if kind == "b":
        return rgrad.bool
    if kind in "iu":
        return rgrad.int64
    if keeps_ref_dtype:  # a dtype conversion: the reference has the result's dtype
        return getattr(rgrad, expected.dtype.name)
    return getattr(rgrad, dtype)


def _assert_output_matches(actual, expected, dtype, atol, rtol, where, keeps_ref_dtype=False):
    assert isinstance(actual, rgrad.Tensor), f"{where}: expected a tensor, got {type(actual).__name__}"
    expected = np.asarray(expected)
    assert tuple(actual.shape) == expected.shape, f"{where}: shape {tuple(actual.shape)} != expected {expected.shape}"
    want = _expected_dtype(expected, dtype, keeps_ref_dtype)
    assert actual.dtype == want, f"{where}: dtype {actual.dtype} != expected {want}"
    got = np.asarray(actual.detach().numpy())
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(got, expected, atol=atol, rtol=rtol, equal_nan=True, err_msg=where)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=where)


def _assert_outputs_match(op, actual, expected, dtype):
    atol, rtol = op.tols(dtype)
    if isinstance(expected, (tuple, list)):
        assert not isinstance(actual, rgrad.Tensor), f"{op.name}: expected {len(expected)} outputs, got one tensor"
        actual = list(actual)
        assert len(actual) == len(expected), f"{op.name}: {len(actual)} outputs, expected {len(expected)}"
        for k, (a, e) in enumerate(zip(actual, expected)):
            _assert_output_matches(a, e, dtype, atol, rtol, f"{op.name} output {k}", op.keeps_ref_dtype)
    else:
        _assert_output_matches(actual, expected, dtype, atol, rtol, op.name, op.keeps_ref_dtype)


# --------------------------------------------------------------------------


def test_op_db_is_well_formed():
    names = [op.name for op in op_db]
    assert len(names) == len(set(names)), "duplicate op names"
    for op in op_db:
        assert op.samples, f"{op.name} has no samples"
        if op.supports_grad:
            assert any(s.grad for s in op.samples), f"{op.name} has no gradient sample"
        for s in op.samples:
            for v in s.kwargs.values():
                assert not isinstance(v, np.ndarray), f"{op.name}: arrays belong in args, not kwargs"


@pytest.mark.parametrize("op,sample,dtype", FORWARD)
def test_forward(op, sample, dtype):
    actual = op.op(*sample.tensor_args(rgrad, dtype), **sample.kwargs)
    expected = op.reference(sample, dtype)
    _assert_outputs_match(op, actual, expected, dtype)


@pytest.mark.parametrize("op,sample", GRAD)
def test_grad(op, sample):
    fn, inputs = sample.grad_problem(op.op, rgrad)
    check_grad(fn, [rgrad.tensor(x) for x in inputs], atol=op.grad_atol, rtol=op.grad_rtol)


@pytest.mark.parametrize("op,sample", GRADGRAD)
def test_gradgrad(op, sample):
    fn, inputs = sample.grad_problem(op.op, rgrad)
    check_gradgrad(fn, [rgrad.tensor(x) for x in inputs], atol=op.grad_atol, rtol=op.grad_rtol)


@pytest.mark.parametrize("op,sample", BROADCAST)
def test_broadcast_grad_shape(op, sample):
    """``loss.backward()`` leaves ``.grad`` of each broadcast input with that input's
    shape (broadcast dims summed out), matching the finite-difference VJP."""
    fn, inputs = sample.grad_problem(op.op, rgrad)
    leaves = [rgrad.tensor(x, requires_grad=True) for x in inputs]
    outs = float_outputs(fn(*leaves))
    rng = np.random.RandomState(7)
    vs = [rng.standard_normal(tuple(o.shape)) for o in outs]
    loss = None
    for o, v in zip(outs, vs):
        term = (o * rgrad.tensor(v)).sum()
        loss = term if loss is None else loss + term
    loss.backward()
    v_full = np.concatenate([v.reshape(-1) for v in vs])
    for i, (leaf, x, jac) in enumerate(zip(leaves, inputs, numerical_jacobian(fn, inputs))):
        expected = (v_full @ jac).reshape(x.shape)
        if leaf.grad is None:  # allowed only for an input the outputs do not depend on (expand_as's `other`)
            assert not np.any(jac), f"input {i} (shape {x.shape}) got no .grad"
            continue
        assert tuple(leaf.grad.shape) == x.shape, f"input {i}: grad shape {tuple(leaf.grad.shape)} != {x.shape}"
        np.testing.assert_allclose(
            leaf.grad.detach().numpy(), expected, atol=1e-5, rtol=1e-3,
            err_msg=f"input {i}: .grad differs from the finite-difference VJP",
        )


@pytest.mark.parametrize("op,sample", _params("requires_grad", lambda op, s: s is op.samples[0]))
def test_requires_grad_propagation(op, sample):
    """Float outputs of differentiable ops require grad; integer/bool outputs
    (and everything from a non-differentiable op) do not."""
    fn, inputs = sample.grad_problem(op.op, rgrad)
    outs = [o for o in _outputs(fn(*[rgrad.tensor(x, requires_grad=True) for x in inputs]))]
    assert outs
    for k, o in enumerate(outs):
        is_float = o.dtype in (rgrad.float32, rgrad.float64)
        should = (op.supports_grad or op.grad_not_implemented is not None) and is_float
        assert o.requires_grad == should, f"output {k} ({o.dtype}): requires_grad={o.requires_grad}, want {should}"


def _first_grad_sample(op):
    return next(s for s in op.samples if s.grad)


@pytest.mark.parametrize(
    "op",
    [pytest.param(op, id=op.name, marks=_first_grad_sample(op).marks("not_implemented"))
     for op in op_db if op.grad_not_implemented],
)
def test_backward_through_op_without_derivative_raises(op):
    # torch records such ops with a NotImplemented node; backward through it raises
    sample = _first_grad_sample(op)
    fn, inputs = sample.grad_problem(op.op, rgrad)
    out = _outputs(fn(*[rgrad.tensor(x, requires_grad=True) for x in inputs]))[0]
    assert out.grad_fn.name() == op.not_implemented_node
    with pytest.raises(RuntimeError, match=f"derivative for {op.grad_not_implemented} is not implemented"):
        out.sum().backward()


# --------------------------------------------------------------------------
# parity with torch (optional)
# --------------------------------------------------------------------------

_TORCH_DB = None


def _torch_ops(torch):
    global _TORCH_DB
    if _TORCH_DB is None:
        from op_db import build_op_db

        _TORCH_DB = {op.name: op for op in build_op_db(torch)}
    return _TORCH_DB


def _dtype_name(dt) -> str:
    return str(dt).split(".")[-1]


@pytest.mark.parametrize("op,sample", ALL)
def test_torch_parity(op, sample):
    torch = pytest.importorskip("torch")
    torch_op = _torch_ops(torch)[op.name]
    differentiable = op.supports_grad and sample.grad
    fn_r, inputs = sample.grad_problem(op.op, rgrad)
    fn_t, _ = sample.grad_problem(torch_op.op, torch)
    leaves_r = [rgrad.tensor(x.copy(), requires_grad=differentiable) for x in inputs]
    leaves_t = [torch.tensor(x.copy(), requires_grad=differentiable) for x in inputs]
    outs_r = _outputs(fn_r(*leaves_r))
    outs_t = _outputs(fn_t(*leaves_t), torch)
    assert len(outs_r) == len(outs_t), f"{len(outs_r)} outputs, torch gives {len(outs_t)}"
    for k, (r, t) in enumerate(zip(outs_r, outs_t)):
        assert tuple(r.shape) == tuple(t.shape), f"output {k}: shape {tuple(r.shape)} vs torch {tuple(t.shape)}"
        assert _dtype_name(r.dtype) == _dtype_name(t.dtype), f"output {k}: dtype {r.dtype} vs torch {t.dtype}"
        np.testing.assert_allclose(
            np.asarray(r.detach().numpy()), t.detach().numpy(), atol=1e-10, rtol=1e-9, equal_nan=True,
            err_msg=f"output {k} differs from torch",
        )
    if not differentiable:
        return
    floats_r = [o for o in float_outputs(outs_r) if o.requires_grad]
    floats_t = [o for o in outs_t if o.dtype.is_floating_point and o.requires_grad]
    assert len(floats_r) == len(floats_t), "different number of differentiable outputs than torch"
    if not floats_t:
        return
    rng = np.random.RandomState(3)
    vs = [rng.standard_normal(tuple(o.shape)) for o in floats_t]
    grads_r = rgrad.autograd.grad(floats_r, leaves_r, grad_outputs=[rgrad.tensor(v) for v in vs], allow_unused=True)
    grads_t = torch.autograd.grad(floats_t, leaves_t, grad_outputs=[torch.tensor(v) for v in vs], allow_unused=True)
    for i, (gr, gt, x) in enumerate(zip(grads_r, grads_t, inputs)):
        gr = np.zeros(x.shape) if gr is None else np.asarray(gr.detach().numpy())
        # (torch's sgn gives a ZeroTensor, which has no storage to read)
        gt = np.zeros(x.shape) if gt is None or gt._is_zerotensor() else gt.detach().numpy()
        assert gr.shape == gt.shape, f"grad {i}: shape {gr.shape} vs torch {gt.shape}"
        np.testing.assert_allclose(gr, gt, atol=1e-10, rtol=1e-9, err_msg=f"grad of input {i} differs from torch")


# --------------------------------------------------------------------------
# dtype conversions: gradients across dtypes (the op table checks gradients in
# float64 only; a float32 result would spoil its finite differences)
# --------------------------------------------------------------------------

CONVERSIONS = {
    "to": lambda x, T, dt: x.to(getattr(T, dt)),
    "to.dtype_kwarg": lambda x, T, dt: x.to(dtype=getattr(T, dt)),
    "to.tensor": lambda x, T, dt: x.to(T.zeros(1, dtype=getattr(T, dt))),
    "type": lambda x, T, dt: x.type(getattr(T, dt)),
    "type_as": lambda x, T, dt: x.type_as(T.zeros(1, dtype=getattr(T, dt))),
    "float/double": lambda x, T, dt: x.float() if dt == "float32" else x.double(),
}
DTYPE_PAIRS = [("float32", "float64"), ("float64", "float32"), ("float32", "float32"), ("float64", "float64")]


def _conversion_grads(T, how, src, dst):
    """``(y, x.grad)`` for y = convert(x) and ``y.backward(v)``."""
    x = T.tensor(np.array([[0.5, -1.25, 3.0], [2.0, 0.1, -0.3]]), dtype=getattr(T, src), requires_grad=True)
    y = CONVERSIONS[how](x, T, dst)
    y.backward(T.tensor(np.array([[1.0, 2.0, -3.0], [0.25, 1.0 / 3.0, 7.0]]), dtype=getattr(T, dst)))
    return y, x.grad


@pytest.mark.parametrize("src,dst", DTYPE_PAIRS)
@pytest.mark.parametrize("how", CONVERSIONS)
def test_dtype_conversion_grads(how, src, dst):
    """The gradient flows back through a float conversion and arrives in the input's dtype,
    as the incoming gradient converted to that dtype."""
    y, g = _conversion_grads(rgrad, how, src, dst)
    assert y.dtype == getattr(rgrad, dst) and y.requires_grad
    assert g is not None and g.dtype == getattr(rgrad, src)
    v = np.array([[1.0, 2.0, -3.0], [0.25, 1.0 / 3.0, 7.0]], dtype=dst).astype(src)
    np.testing.assert_array_equal(g.numpy(), v)


@pytest.mark.parametrize("src,dst", DTYPE_PAIRS)
@pytest.mark.parametrize("how", CONVERSIONS)
def test_dtype_conversion_grads_match_torch(how, src, dst):
    torch = pytest.importorskip("torch")
    y_r, g_r = _conversion_grads(rgrad, how, src, dst)
    y_t, g_t = _conversion_grads(torch, how, src, dst)
    assert _dtype_name(y_r.dtype) == _dtype_name(y_t.dtype)
    assert (y_r.grad_fn is None) == (y_t.grad_fn is None), "returns self in one library only"
    assert _dtype_name(g_r.dtype) == _dtype_name(g_t.dtype)
    np.testing.assert_array_equal(np.asarray(y_r.detach().numpy()), y_t.detach().numpy())
    np.testing.assert_array_equal(np.asarray(g_r.numpy()), g_t.numpy())
