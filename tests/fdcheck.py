"""Finite-difference gradient checks for the op tests.

rgrad.autograd.gradcheck is not available yet, so these helpers compare
autograd's vector-Jacobian products with central differences, in float64,
using only the torch-like tensor API (``rgrad.tensor``, ``t.detach().numpy()``,
``rgrad.autograd.grad``) and numpy.  Inputs are never modified in place: every
perturbation builds fresh tensors from numpy copies.

``fn`` takes tensors and returns a tensor or a sequence of tensors (a
namedtuple-like result such as ``max(dim)`` is fine); only its floating-point
outputs are differentiated, integer/bool outputs (indices, masks) are ignored.
All Jacobians are laid out as ``(total output elements, input elements)``, the
outputs flattened and concatenated in order.
"""

from __future__ import annotations

import numpy as np

import rgrad

__all__ = [
    "float_outputs",
    "numerical_jacobian",
    "analytical_jacobian",
    "check_grad",
    "check_gradgrad",
]


def _is_tensor(x) -> bool:
    return isinstance(x, rgrad.Tensor)


def _is_float(t) -> bool:
    return t.dtype in (rgrad.float32, rgrad.float64)


def _outputs(out) -> list:
    if _is_tensor(out):
        return [out]
    return list(out)


def float_outputs(out) -> list:
    """The floating-point tensors among ``fn``'s outputs, in order."""
    return [o for o in _outputs(out) if _is_tensor(o) and _is_float(o)]


def _to_numpy(x) -> np.ndarray:
    if _is_tensor(x):
        return np.array(x.detach().numpy(), dtype=np.float64)  # always a copy
    return np.array(x, dtype=np.float64)


def _leaf(arr: np.ndarray, requires_grad: bool = True):
    return rgrad.tensor(np.array(arr, dtype=np.float64), requires_grad=requires_grad)


def _flat_values(outs) -> np.ndarray:
    parts = [_to_numpy(o).reshape(-1) for o in outs]
    return np.concatenate(parts) if parts else np.zeros(0)


def numerical_jacobian(fn, inputs, eps: float = 1e-6) -> list[np.ndarray]:
    """Central-difference Jacobians of ``fn`` w.r.t. each input (float64).

    Returns one ``(n_out, inputs[i].numel)`` matrix per input.  The perturbed
    inputs are fresh leaves with ``requires_grad=True``, so ``fn`` may itself use
    autograd (``check_gradgrad`` relies on that).
    """
    arrays = [_to_numpy(x) for x in inputs]

    def evaluate(arrs):
        return _flat_values(float_outputs(fn(*[_leaf(a) for a in arrs])))

    n_out = evaluate(arrays).size
    jacobians = []
    for i, base in enumerate(arrays):
        jac = np.zeros((n_out, base.size))
        for j in range(base.size):
            cols = []
            for step in (eps, -eps):
                perturbed = base.copy().reshape(-1)
                perturbed[j] += step
                arrs = list(arrays)
                arrs[i] = perturbed.reshape(base.shape)
                cols.append(evaluate(arrs))
            jac[:, j] = (cols[0] - cols[1]) / (2.0 * eps)
        jacobians.append(jac)
    return jacobians


def analytical_jacobian(fn, inputs) -> list[np.ndarray]:
    """Jacobians from ``rgrad.autograd.grad``, one row per output element
    (vector-Jacobian product with a one-hot ``grad_outputs``).

    Outputs that do not require grad contribute zero rows (the comparison with
    the numerical Jacobian then shows whether that is right).  Returned grads
    must have their input's shape; ``None`` (unused input) counts as zero.
    """
    arrays = [_to_numpy(x) for x in inputs]
    leaves = [_leaf(a) for a in arrays]
    outs = float_outputs(fn(*leaves))
    n_out = sum(int(np.prod(tuple(o.shape), dtype=np.int64)) for o in outs)
    jacobians = [np.zeros((n_out, a.size)) for a in arrays]
    row = 0
    for o in outs:
        shape = tuple(o.shape)
        numel = int(np.prod(shape, dtype=np.int64))
        if not o.requires_grad:
            row += numel
            continue
        for k in range(numel):
            onehot = np.zeros(numel)
            onehot[k] = 1.0
            grads = rgrad.autograd.grad(
                [o],
                leaves,
                grad_outputs=[rgrad.tensor(onehot.reshape(shape))],
                retain_graph=True,
                allow_unused=True,
            )
            assert len(grads) == len(leaves), f"autograd.grad returned {len(grads)} grads for {len(leaves)} inputs"
            for i, g in enumerate(grads):
                if g is None:
                    continue
                assert tuple(g.shape) == arrays[i].shape, (
                    f"grad of input {i} has shape {tuple(g.shape)}, input has shape {arrays[i].shape}"
                )
                jacobians[i][row] = _to_numpy(g).reshape(-1)
            row += 1
    return jacobians


def _fmt(mat: np.ndarray) -> str:
    return np.array2string(mat, precision=6, suppress_small=True, max_line_width=160, threshold=400)


def _compare(analytical, numerical, atol, rtol, what):
    for i, (a, n) in enumerate(zip(analytical, numerical)):
        assert a.shape == n.shape, f"{what}: Jacobian shapes differ for input {i}: {a.shape} vs {n.shape}"
        if not np.allclose(a, n, atol=atol, rtol=rtol, equal_nan=False):
            err = np.abs(a - n)
            worst = np.unravel_index(np.nanargmax(np.where(np.isnan(err), np.inf, err)), err.shape)
            raise AssertionError(
                f"{what}: Jacobian mismatch for input {i} (shape (outputs, input elements) = {a.shape}); "
                f"worst at {tuple(int(w) for w in worst)}: analytical {float(a[worst])!r} vs numerical {float(n[worst])!r} "
                f"(atol={atol}, rtol={rtol})\n"
                f"analytical:\n{_fmt(a)}\nnumerical:\n{_fmt(n)}"
            )


def _vjp_check(fn, arrays, numerical, atol, rtol, what, seed=1234):
    """One vector-Jacobian product with a random vector, for every input (this
    also exercises empty inputs/outputs, where the Jacobians have no entries)."""
    leaves = [_leaf(a) for a in arrays]
    all_outs = float_outputs(fn(*leaves))
    outs = [o for o in all_outs if o.requires_grad]
    if not outs:
        return
    rng = np.random.RandomState(seed)
    vs = [rng.standard_normal(tuple(o.shape)) for o in outs]
    grads = rgrad.autograd.grad(outs, leaves, grad_outputs=[rgrad.tensor(v) for v in vs], allow_unused=True)
    assert len(grads) == len(leaves), f"{what}: autograd.grad returned {len(grads)} grads for {len(leaves)} inputs"
    # the random vector over all float outputs (zeros for outputs not requiring grad)
    vi = iter(vs)
    v_full = [
        next(vi).reshape(-1) if o.requires_grad else np.zeros(int(np.prod(tuple(o.shape), dtype=np.int64)))
        for o in all_outs
    ]
    v_full = np.concatenate(v_full)
    for i, (g, a, jac) in enumerate(zip(grads, arrays, numerical)):
        expected = (v_full @ jac).reshape(a.shape) if jac.size else np.zeros(a.shape)
        if g is None:
            got = np.zeros(a.shape)
        else:
            assert tuple(g.shape) == a.shape, (
                f"{what}: grad of input {i} has shape {tuple(g.shape)}, input has shape {a.shape}"
            )
            got = _to_numpy(g)
        assert np.allclose(got, expected, atol=atol, rtol=rtol), (
            f"{what}: vector-Jacobian product mismatch for input {i}\nautograd:\n{_fmt(got)}\n"
            f"finite differences:\n{_fmt(expected)}"
        )


def check_grad(fn, inputs, atol: float = 1e-5, rtol: float = 1e-3, eps: float = 1e-6, what: str = "grad"):
    """Assert that autograd's Jacobian of ``fn`` at ``inputs`` matches central differences.

    ``inputs``: float64 tensors (or arrays); they are copied into fresh leaves.
    """
    arrays = [_to_numpy(x) for x in inputs]
    numerical = numerical_jacobian(fn, arrays, eps=eps)
    analytical = analytical_jacobian(fn, arrays)
    _compare(analytical, numerical, atol, rtol, what)
    _vjp_check(fn, arrays, numerical, atol, rtol, what)


def check_gradgrad(fn, inputs, atol: float = 1e-5, rtol: float = 1e-3, eps: float = 1e-6, seed: int = 0):
    """Assert that second derivatives of ``fn`` are right.

    Checks ``check_grad`` of the VJP function ``(x, v) -> grad(fn(x), x, v,
    create_graph=True)`` w.r.t. both ``x`` and ``v``, for a random ``v``.
    Inputs whose grad is ``None`` (unused) give zero outputs.
    """
    arrays = [_to_numpy(x) for x in inputs]
    n = len(arrays)
    outs = [o for o in float_outputs(fn(*[_leaf(a) for a in arrays])) if o.requires_grad]
    assert outs, "check_gradgrad: fn has no output that requires grad"
    rng = np.random.RandomState(seed)
    vs = [rng.standard_normal(tuple(o.shape)) for o in outs]

    def vjp(*args):
        xs, v_tensors = list(args[:n]), list(args[n:])
        ys = [o for o in float_outputs(fn(*xs)) if o.requires_grad]
        grads = rgrad.autograd.grad(ys, xs, grad_outputs=v_tensors, create_graph=True, allow_unused=True)
        return tuple(
            g if g is not None else rgrad.tensor(np.zeros(tuple(x.shape))) for g, x in zip(grads, xs)
        )

    check_grad(vjp, arrays + vs, atol=atol, rtol=rtol, eps=eps, what="gradgrad")
