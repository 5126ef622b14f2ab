"""Gradient checks against finite differences: torch.autograd.gradcheck and gradgradcheck.

``gradcheck(func, inputs)`` compares the Jacobian that autograd computes (one
vector-Jacobian product per output element, with ``rgrad.autograd.grad``) with central
differences (each element of each input that requires grad is perturbed in place by
``±eps``). ``gradgradcheck`` runs ``gradcheck`` on the function that maps
``(inputs, grad_outputs)`` to the first-order gradients, which checks second derivatives.
Messages, checks and their order follow torch's ``torch/autograd/gradcheck.py``.

Jacobians are laid out as torch lays them out: one ``(input.numel(), output.numel())``
matrix per (input, output) pair, i.e. row ``k`` holds the derivatives of every output
element with respect to input element ``k``. rgrad stores them in float64 whatever the
dtypes of the inputs (torch keeps the output's dtype for the numerical one); for the
float64 inputs gradcheck is meant for this changes nothing.

``check_batched_grad`` compares ``rgrad.func.vmap`` of a vector-Jacobian product over two
random grad_outputs with the two products computed one at a time, as torch does (the
vmap runs one batched backward pass, ``grad(..., is_grads_batched=True)``: the check
covers the backward nodes' batching rules, and the per-sample loop of those without one);
``check_batched_forward_grad`` does the same with tangents through forward-mode AD, where
the ops run under vmap's batching rules.
Not supported (rgrad has no complex and no sparse tensors): ``masked`` only selects how the
"backward multiplied by grad_output" check compares with zero. Only the top-level
tensors of ``inputs`` are differentiated: a tensor inside a list or tuple argument is
passed through as a constant (torch half-supports them: its numerical and analytical
paths disagree about which tensors they are).
"""

from __future__ import annotations

import itertools
import math
import random
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from rgrad import _C
from rgrad._C import Tensor
from rgrad.autograd.grad_mode import no_grad

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(RuntimeError):
    """Error raised by :func:`gradcheck` and :func:`gradgradcheck`."""


# torch's notes, without their advice about PyTorch's own OpInfo / common_nn test tables
FAILED_NONDET_MSG = """\n
NOTE: If your op relies on non-deterministic operations, this failure might be expected.
In that case call gradcheck/gradgradcheck with `nondet_tol=<tol>` as a keyword argument.
"""

FAST_FAIL_SLOW_OK_MSG = """
Fast gradcheck failed but element-wise differences are small. This means that the
test might've passed in slow_mode!

If that is what you want, call gradcheck/gradgradcheck with `fast_mode=False` as a
keyword argument.
""".strip()

_UNDEFINED_GRAD_NOTE = 'Please look at "Notes about undefined output gradients" in "tools/autograd/derivatives.yaml"'

# The fast-mode vectors come from a private generator with a fixed seed, so that
# gradcheck neither depends on nor advances the user's random state (torch uses a fresh
# `torch.Generator()` for the same reason).
_FAST_MODE_SEED = 0


# ---------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------


def _as_tuple(x: Any) -> tuple:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _is_float_tensor(x: Any) -> bool:
    return isinstance(x, Tensor) and x.dtype.is_floating_point


def _float_outputs(out: Any) -> tuple[Tensor, ...]:
    """The floating-point tensors among ``func``'s outputs: the ones with a Jacobian."""
    return tuple(o for o in _as_tuple(out) if _is_float_tensor(o))


def _differentiable_outputs(out: Any) -> tuple[Tensor, ...]:
    """The outputs that require grad: the ones whose analytical Jacobian is checked."""
    return tuple(o for o in _as_tuple(out) if isinstance(o, Tensor) and o.requires_grad)


def _diff_inputs(inputs: tuple) -> list[Tensor]:
    """The top-level input tensors that require grad, in order."""
    return [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]


def _vjp(outputs: Any, inputs: Sequence[Tensor], grad_outputs: Any, **kwargs: Any) -> tuple:
    # Imported here: this module is imported while rgrad.autograd initialises.
    from rgrad.autograd import grad

    return grad(outputs, list(inputs), grad_outputs, **kwargs)


def _zeros(shape: Sequence[int], dtype: Any = None, device: Any = None) -> Tensor:
    """Zeros (float64 by default) on `device` (torch's gradcheck allocates its Jacobians
    with ``new_zeros``: on the input's device)."""
    return _C.zeros(tuple(shape), dtype=_C.float64 if dtype is None else dtype,
                    device=None if device is None else str(device))


def _all(mask: Tensor) -> bool:
    """``mask.all()`` for a bool tensor (True when empty)."""
    return int(mask.sum().item()) == mask.numel()


def _randn_like(t: Tensor) -> Tensor:
    import rgrad  # (imported here: this module is imported while rgrad initialises)

    return rgrad.randn_like(t)


def _stack(ts: Sequence[Tensor]) -> Tensor:
    import rgrad

    return rgrad.stack(list(ts))


def _allclose(a: Tensor, b: Tensor, rtol: float, atol: float) -> bool:
    """torch.allclose(a, b, rtol, atol): |a - b| <= atol + rtol * |b| elementwise, equal
    infinities are close, NaN is never close."""
    if a.numel() == 0:
        return True
    close = (a == b).logical_or((a - b).abs() <= atol + rtol * b.abs())
    return _all(close)


def _max_abs_diff_exceeds(a: Tensor, b: Tensor, tol: float) -> bool:
    return a.numel() != 0 and bool((a - b).abs().max() > tol)


def _random_unit_vector(numel: int, rng: random.Random) -> Tensor:
    """A float64 vector of uniform [0, 1) values scaled to unit norm (torch's `_vec_from_tensor`)."""
    values = [rng.random() for _ in range(numel)]
    norm = math.sqrt(sum(v * v for v in values))
    if norm > 0:
        values = [v / norm for v in values]
    return _C.tensor(values, dtype=_C.float64)


# ---------------------------------------------------------------------------------------
# checks on inputs
# ---------------------------------------------------------------------------------------


def _check_inputs(tupled_inputs: tuple) -> None:
    """torch's `_check_inputs`: warn about non-double inputs, reject overlapping ones, and
    require at least one input that requires grad."""
    any_input_requiring_grad = False
    for idx, inp in enumerate(tupled_inputs):
        if not (isinstance(inp, Tensor) and inp.requires_grad):
            continue
        if inp.dtype != _C.float64:
            warnings.warn(
                f"Input #{idx} requires gradient and "
                "is not a double precision floating point or complex. "
                "This check will likely fail if all the inputs are "
                "not of double precision floating point or complex. ",
                stacklevel=4,  # _check_inputs <- _gradcheck <- gradcheck/gradgradcheck <- the caller
            )
        # Perturbing one element of an input whose elements share memory would move
        # several elements at once; torch only catches the stride-0 case, and so do we.
        if not all(st > 0 or sz <= 1 for st, sz in zip(inp.stride(), inp.shape)):
            raise RuntimeError(
                f"The {idx}th input has a dimension with stride 0. gradcheck only "
                "supports inputs that are non-overlapping to be able to "
                "compute the numerical gradients correctly. You should call "
                ".contiguous on the input before passing it to gradcheck."
            )
        any_input_requiring_grad = True
    if not any_input_requiring_grad:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of them have requires_grad=True."
        )


# ---------------------------------------------------------------------------------------
# numerical derivatives (central differences)
# ---------------------------------------------------------------------------------------


def _check_outputs_same_dtype_and_shape(out1: Tensor, out2: Tensor, eps: float, idx: tuple | None = None) -> None:
    # the function must be smooth in shape and dtype around the point being checked
    on_index = f"on index {idx} " if idx is not None else ""
    if out1.shape != out2.shape:
        raise AssertionError(
            f"Expected `func` to return outputs with the same shape"
            f" when inputs are perturbed {on_index}by {eps}, but got:"
            f" shapes {out1.shape} and {out2.shape}."
        )
    if out1.dtype != out2.dtype:
        raise AssertionError(
            f"Expected `func` to return outputs with the same dtype"
            f" when inputs are perturbed {on_index}by {eps}, but got:"
            f" dtypes {out1.dtype} and {out2.dtype}."
        )


def _central_differences(
    func: Callable, inputs: tuple, entry: Tensor, delta: Any, eps: float, idx: tuple | None = None
) -> list[Tensor]:
    """``(f(x + delta) - f(x - delta)) / (2 eps)`` for every float output of ``func``,
    flattened to float64, where ``entry`` (a view of an input's ``.data``) is shifted in
    place by ``∓delta`` and restored afterwards, even if ``func`` raises."""

    def evaluate(value: Tensor) -> tuple[Tensor, ...]:
        with no_grad():
            entry.copy_(value)
        # copies: an output may be a view of the input that is perturbed next
        return tuple(o.detach().clone() for o in _float_outputs(func(*inputs)))

    with no_grad():
        orig = entry.clone()
    try:
        minus = evaluate(orig - delta)
        plus = evaluate(orig + delta)
    finally:
        with no_grad():
            entry.copy_(orig)
    columns = []
    for a, b in zip(minus, plus):
        _check_outputs_same_dtype_and_shape(a, b, eps, idx)
        columns.append(((b - a) / (2 * eps)).double().reshape(-1))
    return columns


def _numerical_jacobians(
    func: Callable, inputs: tuple, ref_outputs: Sequence[Tensor], eps: float, only_input: int | None = None
) -> list[list[Tensor]]:
    """Central-difference Jacobians: ``result[i][k]`` is the ``(numel, ref_outputs[k].numel())``
    Jacobian of float output ``k`` w.r.t. the ``i``-th input that requires grad (or only
    that of input ``only_input``, if given: then ``result`` has one entry).

    Each element is perturbed in place through ``.data``, so the inputs' version counters
    and autograd histories are untouched and ``func`` sees the same tensors it will be
    differentiated with."""
    result = []
    for i, inp in enumerate(_diff_inputs(inputs)):
        if only_input is not None and i != only_input:
            continue
        jacobians = [_zeros((inp.numel(), o.numel()), device=inp.device) for o in ref_outputs]
        data = inp.data
        for k, idx in enumerate(itertools.product(*(range(n) for n in data.shape))):
            columns = _central_differences(func, inputs, data[idx], eps, eps, idx)
            for jacobian, column in zip(jacobians, columns):
                jacobian[k] = column
        result.append(jacobians)
    return result


# ---------------------------------------------------------------------------------------
# analytical derivatives (vector-Jacobian products)
# ---------------------------------------------------------------------------------------


def _one_hot_rows(output: Tensor) -> Iterator[Tensor]:
    """The one-hot grad_outputs that pick the rows of ``output``'s Jacobian, in order.
    One buffer is reused: each is consumed before the next is made."""
    grad_output = _zeros(output.shape, output.dtype, output.device)
    flat = grad_output.view(-1)
    for j in range(output.numel()):
        flat.zero_()
        flat[j] = 1.0
        yield grad_output


def _vjp_matrices(
    diff_inputs: Sequence[Tensor], output: Tensor, grad_outputs: Callable[[], Iterator[Tensor]], n_cols: int
) -> tuple[list[Tensor], bool, bool]:
    """Column ``j`` of ``result[i]`` is ``v_j^T J_i`` for the ``j``-th grad_output ``v_j``
    (an unused input gives zeros). Also says whether every gradient had its input's
    shape, and its dtype."""
    matrices = [_zeros((inp.numel(), n_cols), device=inp.device) for inp in diff_inputs]
    sizes_ok = types_ok = True
    for j, v in enumerate(grad_outputs()):
        grads = _vjp(output, diff_inputs, v, retain_graph=True, allow_unused=True)
        for matrix, g, inp in zip(matrices, grads, diff_inputs):
            if g is None:
                continue
            if g.shape != inp.shape:
                sizes_ok = False
                continue
            if g.dtype != inp.dtype:
                types_ok = False
            matrix[:, j] = g.reshape(-1)
    return matrices, sizes_ok, types_ok


def _checked_vjp_matrices(
    diff_inputs: Sequence[Tensor],
    output: Tensor,
    nondet_tol: float,
    check_grad_dtypes: bool,
    v: Tensor | None = None,
) -> list[Tensor]:
    """The analytical Jacobians of ``output`` (slow mode), or ``v^T J`` as one column
    (fast mode, ``v`` given), computed twice to check that backward is reentrant, with
    torch's checks of the gradients' sizes and dtypes."""
    if v is None:
        n_cols = output.numel()

        def grad_outputs() -> Iterator[Tensor]:
            return _one_hot_rows(output)
    else:
        n_cols = 1

        def grad_outputs() -> Iterator[Tensor]:
            return iter([v.reshape(output.shape).to(output.dtype)])

    first, sizes_ok, types_ok = _vjp_matrices(diff_inputs, output, grad_outputs, n_cols)
    second, _, _ = _vjp_matrices(diff_inputs, output, grad_outputs, n_cols)
    reentrant = not any(_max_abs_diff_exceeds(a, b, nondet_tol) for a, b in zip(first, second))

    # torch's order of checks. (torch swaps its size and dtype flags here, so that a
    # wrong dtype is reported as a wrong size; rgrad reports each as what it is.)
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not reentrant:
        raise GradcheckError(
            "Backward is not reentrant, i.e., running backward with "
            "same input and grad_output multiple times gives different values, "
            "although analytical gradient matches numerical gradient."
            f"The tolerance for nondeterminism was {nondet_tol}." + FAILED_NONDET_MSG
        )
    return first


def _notallclose_msg(
    analytical: Tensor, numerical: Tensor, output_idx: int, input_idx: int, is_forward_ad: bool = False
) -> str:
    mode = "computed with forward mode " if is_forward_ad else ""
    return (
        f"Jacobian {mode}mismatch for output {output_idx:d} with respect to input {input_idx:d},\n"
        f"numerical:{numerical}\nanalytical:{analytical}\n"
    )


# ---------------------------------------------------------------------------------------
# slow mode: full Jacobians
# ---------------------------------------------------------------------------------------


def _check_no_differentiable_outputs(func: Callable, inputs: tuple, func_out: tuple, eps: float) -> None:
    """With no output requiring grad, the function must not depend on the inputs."""
    for per_input in _numerical_jacobians(func, inputs, _float_outputs(func_out), eps):
        for jacobian in per_input:
            if int(jacobian.ne(0).sum().item()) > 0:
                raise GradcheckError("Numerical gradient for function expected to be zero")


def _slow_gradcheck(
    func: Callable,
    func_out: tuple,
    inputs: tuple,
    outputs: tuple[Tensor, ...],
    eps: float,
    rtol: float,
    atol: float,
    check_grad_dtypes: bool,
    nondet_tol: float,
) -> None:
    if not outputs:
        _check_no_differentiable_outputs(func, inputs, func_out, eps)
        return
    float_outs = _float_outputs(func_out)
    numerical = _numerical_jacobians(func, inputs, float_outs, eps)  # [input][float output]
    checked = [k for k, o in enumerate(float_outs) if o.requires_grad]
    diff_inputs = _diff_inputs(inputs)
    for i, o in enumerate(outputs):
        analytical = _checked_vjp_matrices(diff_inputs, o, nondet_tol, check_grad_dtypes)
        for j, a in enumerate(analytical):
            n = numerical[j][checked[i]]
            if not _allclose(a, n, rtol, atol):
                raise GradcheckError(_notallclose_msg(a, n, i, j))


# ---------------------------------------------------------------------------------------
# fast mode: v^T J u for random unit vectors u (per input) and v (per output)
# ---------------------------------------------------------------------------------------


def _numerical_jvps(func: Callable, inputs: tuple, inp: Tensor, u: Tensor, eps: float) -> list[Tensor]:
    """``J u`` for every float output, by perturbing the whole input along ``u``."""
    data = inp.data
    return _central_differences(func, inputs, data, (u * eps).reshape(data.shape), eps)


def _run_slow_mode_and_get_error(
    func: Callable,
    inputs: tuple,
    func_out: tuple,
    outputs: tuple[Tensor, ...],
    input_idx: int,
    output_idx: int,
    rtol: float,
    atol: float,
    eps: float,
) -> str:
    """Recomputes the full Jacobians of the failing (input, output) pair for the message."""
    float_outs = _float_outputs(func_out)
    k = next(k for k, o in enumerate(float_outs) if o is outputs[output_idx])
    slow_numerical = _numerical_jacobians(func, inputs, float_outs, eps, only_input=input_idx)[0][k]
    slow_analytical = _checked_vjp_matrices(_diff_inputs(inputs), outputs[output_idx], math.inf, False)[input_idx]
    slow_max_diff = (slow_numerical - slow_analytical).abs().max() if slow_numerical.numel() else 0.0
    msg = (
        "\nThe above quantities relating the numerical and analytical jacobians are computed \n"
        "in fast mode. See: https://github.com/pytorch/pytorch/issues/53876 for more background \n"
        "about fast mode. Below, we recompute numerical and analytical jacobians in slow mode:\n\n"
        f"Numerical:\n {slow_numerical}\n"
        f"Analytical:\n{slow_analytical}\n\n"
        f"The max per-element difference (slow mode) is: {slow_max_diff}.\n"
    )
    if _allclose(slow_analytical, slow_numerical, rtol, atol):
        msg += FAST_FAIL_SLOW_OK_MSG  # slow gradcheck would have passed
    return msg


def _fast_gradcheck(
    func: Callable,
    func_out: tuple,
    inputs: tuple,
    outputs: tuple[Tensor, ...],
    eps: float,
    rtol: float,
    atol: float,
    check_grad_dtypes: bool,
    nondet_tol: float,
) -> None:
    diff_inputs = _diff_inputs(inputs)
    rng = random.Random(_FAST_MODE_SEED)
    all_u = [_random_unit_vector(inp.numel(), rng) for inp in diff_inputs]
    all_v = [_random_unit_vector(o.numel(), rng) for o in outputs]
    requires_grad = [o.requires_grad for o in _float_outputs(func_out)]

    # numerical[i][j] = v_j . (J_ji u_i), from one pair of evaluations per input
    numerical = []
    for inp, u in zip(diff_inputs, all_u):
        jvps = _numerical_jvps(func, inputs, inp, u, eps)
        if not outputs:
            # nothing requires grad: the function must not depend on the inputs
            for jvp in jvps:
                if jvp.numel() != 0 and bool(jvp.abs().max() > nondet_tol):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        jvps = [jvp for jvp, rg in zip(jvps, requires_grad) if rg]
        numerical.append([(v * jvp).sum() for v, jvp in zip(all_v, jvps)])

    # analytical[j][i] = (v_j^T J_ji) . u_i
    analytical = []
    for o, v in zip(outputs, all_v):
        vjps = _checked_vjp_matrices(diff_inputs, o, nondet_tol, check_grad_dtypes, v=v)
        analytical.append([(vjp.reshape(-1) * u).sum() for vjp, u in zip(vjps, all_u)])

    for i, per_input in enumerate(numerical):
        for j, n in enumerate(per_input):
            a = analytical[j][i]
            # |v^T (A - N) u| may reach atol * sum(u) * sum(v) when every |A - N| <= atol
            adjusted_atol = atol * float(all_u[i].sum()) * float(all_v[j].sum())
            if not _allclose(a, n, rtol, adjusted_atol):
                detail = _run_slow_mode_and_get_error(func, inputs, func_out, outputs, i, j, rtol, atol, eps)
                raise GradcheckError(_notallclose_msg(a, n, j, i) + detail)


# ---------------------------------------------------------------------------------------
# forward-mode AD: Jacobian-vector products of dual inputs
# ---------------------------------------------------------------------------------------


def _forward_ad_jvps(func: Callable, inputs: tuple, inp: Tensor, tangent: Tensor) -> list[Tensor | None]:
    """The tangents of ``func``'s float outputs when input ``inp`` (detached) is made dual
    with ``tangent`` and the other inputs are left as they are, flattened to float64."""
    from rgrad.autograd import forward_ad as fwAD

    with fwAD.dual_level():
        dual = fwAD.make_dual(inp.detach(), tangent)
        outs = _float_outputs(func(*(dual if x is inp else x for x in inputs)))
        tangents = [fwAD.unpack_dual(o).tangent for o in outs]
        return [None if t is None else t.double().reshape(-1) for t in tangents]


def _slow_forward_ad_check(
    func: Callable, func_out: tuple, inputs: tuple, eps: float, rtol: float, atol: float
) -> None:
    """Each input's Jacobian, column by column from one-hot tangents, against the
    central differences (torch's ``_get_analytical_jacobian_forward_ad``)."""
    float_outs = _float_outputs(func_out)
    numerical = _numerical_jacobians(func, inputs, float_outs, eps)
    for i, inp in enumerate(_diff_inputs(inputs)):
        analytical = [_zeros((inp.numel(), o.numel()), device=inp.device) for o in float_outs]
        tangent = _zeros(inp.shape, inp.dtype, inp.device)
        flat = tangent.view(-1)
        for e in range(inp.numel()):
            flat.zero_()
            flat[e] = 1.0
            for a, t in zip(analytical, _forward_ad_jvps(func, inputs, inp, tangent)):
                if t is not None:
                    a[e] = t
        for k, (a, n) in enumerate(zip(analytical, numerical[i])):
            if not _allclose(a, n, rtol, atol):
                raise GradcheckError(_notallclose_msg(a, n, k, i, is_forward_ad=True))


def _fast_forward_ad_check(
    func: Callable, func_out: tuple, inputs: tuple, eps: float, rtol: float, atol: float
) -> None:
    """``v . (J u)`` from one dual evaluation per input against central differences along
    ``u`` (torch's fast mode for forward AD)."""
    rng = random.Random(_FAST_MODE_SEED)
    float_outs = _float_outputs(func_out)
    all_v = [_random_unit_vector(o.numel(), rng) for o in float_outs]
    for i, inp in enumerate(_diff_inputs(inputs)):
        u = _random_unit_vector(inp.numel(), rng)
        numerical = _numerical_jvps(func, inputs, inp, u, eps)
        analytical = _forward_ad_jvps(func, inputs, inp, u.to(inp.dtype).reshape(inp.shape))
        for k, (v, n, a) in enumerate(zip(all_v, numerical, analytical)):
            a = _zeros(n.shape) if a is None else a
            if not _allclose((v * a).sum(), (v * n).sum(), rtol, atol * float(u.sum()) * float(v.sum())):
                raise GradcheckError(_notallclose_msg(a, n, k, i, is_forward_ad=True))


# ---------------------------------------------------------------------------------------
# checks of the backward function itself
# ---------------------------------------------------------------------------------------


def _test_backward_mul_by_grad_output(outputs: tuple[Tensor, ...], inputs: tuple, masked: bool | None) -> None:
    """Zero grad_outputs must give zero gradients of the inputs' shape and dtype."""
    diff_inputs = _diff_inputs(inputs)
    if not diff_inputs:
        raise GradcheckError("no Tensors requiring grad found in input")
    grads = _vjp(outputs, diff_inputs, [_zeros(o.shape, o.dtype, o.device) for o in outputs], allow_unused=True)
    for gi, di in zip(grads, diff_inputs):
        if gi is None:
            continue
        if masked:
            if not _allclose(gi, _zeros(gi.shape, gi.dtype, gi.device), 1e-05, 1e-08):
                raise GradcheckError("backward not multiplied by grad_output")
        elif not _all(gi.eq(0)):
            raise GradcheckError("backward not multiplied by grad_output")
        if gi.dtype != di.dtype:
            raise GradcheckError("grad is incorrect type")
        if gi.device != di.device:
            raise GradcheckError("grad is incorrect device")
        if gi.shape != di.shape:
            raise GradcheckError("grad is incorrect size")


_FAILED_BATCHED_GRAD_MSG = """
gradcheck or gradgradcheck failed while testing batched gradient computation.
This could have been invoked in a number of ways (via a test that calls
gradcheck/gradgradcheck directly or via an autogenerated test).

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `check_batched_grad=False` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `check_batched_grad=False` and/or `check_batched_gradgrad=False`.

If you're modifying an existing operator that supports batched grad computation,
or wish to make a new operator work with batched grad computation, please read
the following.

To compute batched grads (e.g., jacobians, hessians), we vmap over the backward
computation. The most common failure case is if there is a 'vmap-incompatible
operation' in the backward pass. Please see
NOTE: [How to write vmap-compatible backward formulas]
in the codebase for an explanation of how to fix this.
""".strip()

_FAILED_BATCHED_GRAD_MSG_FWD_AD = """
gradcheck failed while testing batched gradient computation with forward-mode AD.
This test is enabled automatically when both `check_batched_grad=True`
and `check_forward_ad=True`, but can be disabled in the following ways
depending on how the test was invoked (via a test that calls gradcheck
directly or via an autogenerated test).

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `check_batched_forward_grad=False` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `check_batched_forward_grad=False`
"""


def _failed_batched_grad_msg(output_idx: int, input_idx: int, res: Tensor, exp: Tensor,
                             is_forward_ad: bool = False) -> str:
    why = _FAILED_BATCHED_GRAD_MSG_FWD_AD if is_forward_ad else _FAILED_BATCHED_GRAD_MSG
    return f"""
For output {output_idx} and input {input_idx}:

{why}

Got:
{res}

Expected:
{exp}
""".strip()


def _batched_matches(results: Sequence[Tensor], expected: Sequence[Tensor], output_idx: int | None,
                     is_forward_ad: bool) -> None:
    """Each batched result against the stacked one-at-a-time results (torch.allclose's
    default tolerances, as torch's check)."""
    for input_idx, (res, exp) in enumerate(zip(results, expected)):
        if res.shape == exp.shape and _allclose(res, exp, 1e-05, 1e-08):
            continue
        idx = input_idx if output_idx is None else output_idx  # (torch reports the input twice in fw mode)
        raise GradcheckError(_failed_batched_grad_msg(idx, input_idx, res, exp, is_forward_ad))


def _test_batched_grad(inputs: tuple, output: Tensor, output_idx: int) -> None:
    """vmap of a vector-Jacobian product over a batch of two random grad_outputs must give
    the two products computed one at a time (torch's check: it compares
    ``vmap(autograd.grad)`` with a loop of ``autograd.grad``, so it checks that the backward
    of every op in ``func`` runs under vmap, batching rule or fallback, and agrees)."""
    from rgrad.func import vmap

    diff_inputs = _diff_inputs(inputs)

    def vjp(v: Tensor) -> tuple[Tensor, ...]:
        results = _vjp(output, diff_inputs, v, retain_graph=True, allow_unused=True)
        return tuple(g if g is not None else _zeros((), inp.dtype, inp.device).expand(inp.shape)
                     for g, inp in zip(results, diff_inputs))

    grad_outputs = [_randn_like(output) for _ in range(2)]
    expected = [_stack(shards) for shards in zip(*(vjp(g) for g in grad_outputs))]
    with warnings.catch_warnings():
        # the loop fallback's warning is expected here (torch filters the same two)
        warnings.filterwarnings("ignore", message="There is a performance drop")
        warnings.filterwarnings("ignore", message="Please use `torch.vmap`")
        try:
            result = vmap(vjp)(_stack(grad_outputs))
        except RuntimeError as ex:
            raise GradcheckError(f"While computing batched gradients, got: {ex}\n\n{_FAILED_BATCHED_GRAD_MSG}") from ex
    _batched_matches(result, expected, output_idx, is_forward_ad=False)


def _test_batched_grad_forward_ad(func: Callable, inputs: tuple) -> None:
    """vmap of a Jacobian-vector product (forward-mode AD) over a batch of two random
    tangents of each input must give the two products computed one at a time."""
    from rgrad.autograd import forward_ad as fwAD
    from rgrad.func import vmap

    for input_idx, current_input in enumerate(inputs):
        if not (isinstance(current_input, Tensor) and current_input.requires_grad):
            continue

        def jvp(tangent: Tensor, input_idx: int = input_idx, current_input: Tensor = current_input) -> tuple:
            with fwAD.dual_level():
                dual = fwAD.make_dual(current_input.detach(), tangent)
                inputs_with_dual = tuple(
                    dual if idx == input_idx else (inp.detach() if isinstance(inp, Tensor) else inp)
                    for idx, inp in enumerate(inputs)
                )
                ret = []
                for dual_output in _as_tuple(func(*inputs_with_dual)):
                    if dual_output is None:
                        continue
                    primal_out, tangent_out = fwAD.unpack_dual(dual_output)
                    ret.append(tangent_out if tangent_out is not None
                               else _zeros((), primal_out.dtype).expand(primal_out.shape))
                return tuple(ret)

        if not _is_float_tensor(current_input):
            continue
        tangents = [_randn_like(current_input) for _ in range(2)]
        expected = [_stack(shards) for shards in zip(*(jvp(t) for t in tangents))]
        try:
            with warnings.catch_warnings():
                # torch's legacy vmap, which this check uses there, has no fallback warning
                warnings.filterwarnings("ignore", message="There is a performance drop")
                result = vmap(jvp)(_stack(tangents))
        except RuntimeError as ex:
            raise GradcheckError(
                f"While computing batched gradients, got: {ex}\n\n{_FAILED_BATCHED_GRAD_MSG_FWD_AD}"
            ) from ex
        _batched_matches(result, expected, None, is_forward_ad=True)


def _test_undefined_backward_mode(func: Callable, outputs: tuple[Tensor, ...], inputs: tuple) -> None:
    """Backward must accept undefined (None) output gradients and treat them as zeros:
    all of them at once, and, with several outputs, one at a time."""
    undefined_grad = _C._undefined_grad
    diff_inputs = _diff_inputs(inputs)
    if not diff_inputs:
        raise GradcheckError("no Tensors requiring grad found in input")

    def warn_bc_breaking() -> None:
        warnings.warn(
            "Backwards compatibility: New undefined gradient support checking "
            "feature is enabled by default, but it may break existing callers "
            "of this function. If this is true for you, you can call this "
            'function with "check_undefined_grad=False" to disable the feature',
            stacklevel=6,  # ... <- _test_undefined_backward_mode <- _gradcheck <- gradcheck <- the caller
        )

    def check_undefined_grad_support(outputs_to_check: list[Tensor]) -> None:
        grad_outputs = [_zeros(o.shape, o.dtype) for o in outputs_to_check]
        try:
            grads = _vjp(outputs_to_check, diff_inputs, grad_outputs, allow_unused=True)
        except RuntimeError as e:
            warn_bc_breaking()
            raise GradcheckError(
                f"Expected backward function to handle undefined output grads. {_UNDEFINED_GRAD_NOTE}"
            ) from e
        for gi in grads:
            if gi is not None and not _all(gi.eq(0)):
                warn_bc_breaking()
                raise GradcheckError(
                    "Expected all input grads to be undefined or zero when all output grads are undefined "
                    f"or zero. {_UNDEFINED_GRAD_NOTE}"
                )

    # every output's gradient undefined
    check_undefined_grad_support([undefined_grad(o) for o in _differentiable_outputs(func(*inputs))])
    # with several outputs, one undefined gradient at a time
    if len(outputs) > 1:
        for undefined_idx in range(len(outputs)):
            fresh = _differentiable_outputs(func(*inputs))
            check_undefined_grad_support([undefined_grad(o) if k == undefined_idx else o for k, o in enumerate(fresh)])


# ---------------------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------------------


def _gradcheck(
    func: Callable[..., Any],
    inputs: Any,
    *,
    eps: float,
    atol: float,
    rtol: float,
    raise_exception: bool,
    nondet_tol: float,
    check_undefined_grad: bool,
    check_grad_dtypes: bool,
    fast_mode: bool,
    masked: bool | None,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
) -> bool:
    """gradcheck's body once its flags are validated; shared with gradgradcheck, so that
    the dtype warning points at the user's call in both (hence the fixed stack level)."""
    if check_undefined_grad and not hasattr(_C, "_undefined_grad"):
        raise NotImplementedError(
            "gradcheck: check_undefined_grad=True needs rgrad._C._undefined_grad, which this build of rgrad "
            "lacks; pass check_undefined_grad=False"
        )
    try:
        tupled_inputs = _as_tuple(inputs)
        _check_inputs(tupled_inputs)
        func_out = _as_tuple(func(*tupled_inputs))
        outputs = _differentiable_outputs(func_out)
        if check_backward_ad:
            check = _fast_gradcheck if fast_mode else _slow_gradcheck
            check(func, func_out, tupled_inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol)
        if check_forward_ad:
            fw_check = _fast_forward_ad_check if fast_mode else _slow_forward_ad_check
            fw_check(func, func_out, tupled_inputs, eps, rtol, atol)
        if check_batched_forward_grad:
            _test_batched_grad_forward_ad(func, tupled_inputs)
        if check_backward_ad:
            if check_batched_grad:
                for i, o in enumerate(outputs):
                    _test_batched_grad(tupled_inputs, o, i)
            _test_backward_mul_by_grad_output(outputs, tupled_inputs, masked)
            if check_undefined_grad:
                _test_undefined_backward_mode(func, outputs, tupled_inputs)
        return True
    except GradcheckError:
        if raise_exception:
            raise
        return False


def gradcheck(
    func: Callable[..., Any],
    inputs: Any,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """Check gradients computed via small finite differences against analytical gradients
    wrt tensors in ``inputs`` that are of floating point type and with ``requires_grad=True``.

    The check between numerical and analytical gradients uses allclose semantics:
    ``|analytical - numerical| <= atol + rtol * |numerical|`` elementwise.

    Args:
        func: A function that takes tensor inputs and returns a tensor or a tuple of tensors.
        inputs: A tensor, or a tuple of arguments to ``func`` (tensors and other values).
        eps: Perturbation for finite differences.
        atol: Absolute tolerance.
        rtol: Relative tolerance.
        raise_exception: Raise :class:`GradcheckError` with details when the check fails;
            if False, return False instead.
        nondet_tol: Tolerance for non-determinism: running backward twice with the same
            input and grad_output must give results this close (exactly equal by default).
        check_undefined_grad: Check that undefined output gradients are supported and
            treated as zeros.
        check_grad_dtypes: Check that the gradients have their inputs' dtypes.
        check_batched_grad: Check that gradients for a batch of grad_outputs can be
            computed with ``rgrad.func.vmap`` and agree with those computed one at a time.
        check_batched_forward_grad: The same for forward-mode AD: a batch of tangents
            through ``vmap`` (needs ``check_forward_ad=True``).
        check_forward_ad: Check the Jacobian computed with forward-mode AD
            (:mod:`rgrad.autograd.forward_ad`) against the numerical one.
        check_backward_ad: Check reverse-mode gradients.
        fast_mode: Compare ``v^T J u`` for random unit vectors ``u`` and ``v`` instead of
            the whole Jacobians: one backward per output and one pair of function
            evaluations per input.
        masked: Compare the gradients of zero grad_outputs with zero using allclose
            instead of exact equality (torch's flag for sparse tensors).

    Returns:
        True if all differences satisfy the allclose condition (False on failure when
        ``raise_exception=False``).
    """
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires check_forward_ad to be True")
    return _gradcheck(
        func,
        inputs,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
        fast_mode=fast_mode,
        masked=masked,
        check_forward_ad=check_forward_ad,
        check_backward_ad=check_backward_ad,
        check_batched_grad=check_batched_grad,
        check_batched_forward_grad=check_batched_forward_grad,
    )


def _random_grad_output(output: Tensor, noncontiguous: bool) -> Tensor:
    """A leaf requiring grad, uniform in [-1, 1), shaped like ``output`` (torch's
    ``make_tensor(..., low=-1, high=1, requires_grad=True, noncontiguous=...)``)."""
    dtype = output.dtype if output.dtype.is_floating_point else _C.float64
    shape = tuple(output.shape)
    if noncontiguous and output.numel() > 1:
        # every other element of a tensor twice as long in the last dimension
        base = _C.rand(shape[:-1] + (2 * shape[-1],), dtype=dtype, device=output._device_str) * 2 - 1
        grad_output = base[..., ::2]
    else:
        grad_output = _C.rand(shape, dtype=dtype, device=output._device_str) * 2 - 1
    return grad_output.requires_grad_(True)


def gradgradcheck(
    func: Callable[..., Any],
    inputs: Any,
    grad_outputs: Any = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """Check gradients of gradients computed via small finite differences against analytical
    gradients wrt tensors in ``inputs`` and ``grad_outputs`` that are of floating point type
    and with ``requires_grad=True``.

    This runs :func:`gradcheck` on the function mapping ``(*inputs, *grad_outputs)`` to the
    gradients of ``func``'s outputs (computed with ``create_graph=True``), so it checks
    that backpropagating through the gradients computed for ``grad_outputs`` is correct.

    Args:
        func: A function that takes tensor inputs and returns a tensor or a tuple of tensors.
        inputs: A tensor, or a tuple of arguments to ``func`` (tensors and other values).
        grad_outputs: The gradients with respect to ``func``'s outputs that require grad;
            by default random float64-like tensors in [-1, 1) that require grad.
        eps: Perturbation for finite differences.
        atol: Absolute tolerance.
        rtol: Relative tolerance.
        gen_non_contig_grad_outputs: Make the random ``grad_outputs`` non-contiguous.
        raise_exception: Raise :class:`GradcheckError` with details when the check fails;
            if False, return False instead.
        nondet_tol: Tolerance for non-determinism (see :func:`gradcheck`).
        check_undefined_grad: Check that undefined output gradients are supported.
        check_grad_dtypes: Check that the gradients have their inputs' dtypes.
        check_batched_grad: Check batched gradients of the gradients (see :func:`gradcheck`).
        check_fwd_over_rev: Check the second derivatives computed with forward-over-reverse
            AD (the gradients' tangents).
        check_rev_over_rev: Check reverse-over-reverse second derivatives.
        fast_mode: Use gradcheck's fast mode.
        masked: See :func:`gradcheck`.

    Returns:
        True if all differences satisfy the allclose condition (False on failure when
        ``raise_exception=False``).
    """
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev to be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to be True")

    tupled_inputs = _as_tuple(inputs)
    if grad_outputs is None:
        outputs = _differentiable_outputs(func(*tupled_inputs))
        tupled_grad_outputs = tuple(_random_grad_output(o, gen_non_contig_grad_outputs) for o in outputs)
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)
    num_outputs = len(tupled_grad_outputs)

    # which arguments to differentiate, recorded before gradcheck calls new_func
    diff_input_args_indices = {i for i, x in enumerate(tupled_inputs) if isinstance(x, Tensor) and x.requires_grad}
    diff_grad_output_indices = {i for i, x in enumerate(tupled_grad_outputs) if x.requires_grad}

    def new_func(*args: Any) -> tuple[Tensor, ...]:
        input_args = tuple(
            x.requires_grad_() if i in diff_input_args_indices else x
            for i, x in enumerate(args[:-num_outputs] if num_outputs else args)
        )
        outputs = _differentiable_outputs(func(*input_args))
        grad_outputs = tuple(
            x.requires_grad_() if i in diff_grad_output_indices else x
            for i, x in enumerate(args[-num_outputs:] if num_outputs else ())
        )
        diff_input_args = tuple(x for i, x in enumerate(input_args) if i in diff_input_args_indices)
        grad_inputs = _vjp(outputs, diff_input_args, grad_outputs, create_graph=True, allow_unused=True)
        return tuple(g for g in grad_inputs if g is not None)

    return _gradcheck(
        new_func,
        tupled_inputs + tupled_grad_outputs,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
        fast_mode=fast_mode,
        masked=masked,
        check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev,
        check_batched_grad=check_batched_grad,
    )
