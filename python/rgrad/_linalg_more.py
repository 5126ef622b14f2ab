"""torch.linalg.lstsq, torch.triangular_solve, torch.geqrf, torch.linalg.householder_product
(torch.orgqr), torch.ormqr and Tensor.fill_diagonal_ (helper-46).

Each is recorded under torch's node. The values of geqrf, householder_product, ormqr and
the LDL functions come from native kernels (``Tensor._geqrf`` and the like:
``src/backend/linalg/householder.rs`` and ``ldl.rs``) whenever no gradient, tangent or
vmap batch needs the composition; the compositions below are kept for those:

* ``linalg.lstsq``: the solution is ``pinv(A) @ B`` (truncated at ``rcond``; torch's
  ``linalg_lstsq_backward`` is the derivative of exactly this, with the default ``pinv``),
  the residuals ``((A X - B)**2).sum(-2)`` where torch's drivers give them (m > n, driver
  not 'gelsy', full rank for 'gelsd' / 'gelss'); both pass through one
  LinalgLstsqBackward0. ``rank`` (A's batch shape; empty for 'gels') counts the singular
  values above ``rcond * σ_max``; ``singular_values`` are given by 'gelsd' / 'gelss'.
* ``triangular_solve``: ``linalg.solve_triangular`` (its transposed triangle when
  ``transpose``) and a clone of the (broadcast) coefficient, one TriangularSolveBackward0
  (torch's deprecation warning once, as its TORCH_WARN_ONCE).
* ``geqrf``: LAPACK's unblocked Householder QR (``dgeqr2`` / ``dlarfg``'s reflectors:
  ``beta = -sign(alpha)·‖x‖``, ``tau = (beta - alpha) / beta``), batched; no derivative:
  a GeqrfBackward0 whose backward raises torch's NotImplementedError.
* ``householder_product`` / ``orgqr``: ``H_1 ⋯ H_k`` applied to the first n columns of
  the identity, ``H_i = I - tau_i v_i v_iᵀ`` (LinalgHouseholderProductBackward0);
  ``ormqr``: the same reflectors applied to ``other`` from the left or the right,
  optionally transposed (OrmqrBackward0).
* ``Tensor.fill_diagonal_``: torch's ``as_strided`` writes (the main diagonal, and with
  ``wrap`` the further ones of a tall matrix), recorded as CopySlices.

The named nodes pass the gradient through to the composite's own nodes (which give the
backward, its double backward and vmap's batching); their ``next_functions`` are the
composite's, not torch's.
"""

from __future__ import annotations

import math
import warnings

from rgrad import _C
from rgrad._C import Tensor
from rgrad._composite4 import _autograd_off
from rgrad._vmap_check import is_batched

__all__ = ["triangular_solve", "geqrf", "orgqr", "ormqr", "lstsq"]

_DTYPE_NAMES = {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool", "float16": "Half",
                "bfloat16": "BFloat16", "int32": "Int", "uint8": "Byte", "int8": "Char", "int16": "Short"}


def _dname(d) -> str:
    s = str(d).split(".")[1]
    return _DTYPE_NAMES.get(s, s)


def _is_float(t: Tensor) -> bool:
    return t.dtype in (_C.float32, _C.float64)


def _tensor_arg(fname: str, name: str, pos: int, v) -> None:
    if not isinstance(v, Tensor):
        raise TypeError(f"{fname}(): argument '{name}' (position {pos}) must be Tensor, not {type(v).__name__}")


def _bool_arg(fname: str, name: str, pos: int, v) -> bool:
    if not isinstance(v, bool):
        raise TypeError(f"{fname}(): argument '{name}' (position {pos}) must be bool, not {type(v).__name__}")
    return v


def _batch_broadcast(a, b) -> tuple:
    """The broadcast of two batch shapes, with ATen's ``infer_size`` error."""
    a, b = tuple(a), tuple(b)
    nd = max(len(a), len(b))
    out = []
    for i in range(nd):
        off = nd - 1 - i
        sa = a[len(a) - 1 - off] if len(a) - 1 - off >= 0 else 1
        sb = b[len(b) - 1 - off] if len(b) - 1 - off >= 0 else 1
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(
                f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) at non-singleton dimension {i}"
            )
        out.append(sb if sa == 1 else sa)
    return tuple(out)


def _named(name: str, fields: dict, out, *inputs):
    from rgrad._composite4 import _named as named

    return named(name, fields, out, *inputs)


def _named_multi(name: str, fields: dict, outs: tuple, *inputs) -> tuple:
    from rgrad._composite4 import _named_multi as named_multi

    return named_multi(name, fields, outs, *inputs)


# ---- triangular_solve ------------------------------------------------------------------

_triangular_solve_warned = False


def triangular_solve(input: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,  # noqa: A002,N803
                     unitriangular: bool = False):
    """Deprecated (warns once): the solution of ``A X = input`` (``Aᵀ X = input`` with
    ``transpose``) for the ``upper`` (or lower) triangle of A, its diagonal taken as ones
    with ``unitriangular``; the batches broadcast. Returns
    ``return_types.triangular_solve(solution, cloned_coefficient)``, the second a copy of
    the (broadcast) A, both from one TriangularSolveBackward0."""
    from rgrad import return_types

    global _triangular_solve_warned
    _tensor_arg("triangular_solve", "input", 1, input)
    _tensor_arg("triangular_solve", "A", 2, A)
    upper = _bool_arg("triangular_solve", "upper", 3, upper)
    transpose = _bool_arg("triangular_solve", "transpose", 4, transpose)
    unitriangular = _bool_arg("triangular_solve", "unitriangular", 5, unitriangular)
    if not _triangular_solve_warned:
        _triangular_solve_warned = True
        warnings.warn(
            "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will be removed in a "
            "future PyTorch release.\ntorch.linalg.solve_triangular has its arguments reversed and does not return a "
            "copy of one of the inputs.\nX = torch.triangular_solve(B, A).solution\nshould be replaced with\n"
            "X = torch.linalg.solve_triangular(A, B).",
            UserWarning,
            stacklevel=2,
        )
    if input.dim() < 2:
        raise RuntimeError(
            "torch.triangular_solve: Expected b to have at least 2 dimensions, but it has "
            f"{input.dim()} dimensions instead"
        )
    if A.dim() < 2:
        raise RuntimeError(
            f"torch.triangular_solve: Expected A to have at least 2 dimensions, but it has {A.dim()} dimensions instead"
        )
    if input.dtype != A.dtype:
        raise RuntimeError(
            f"Expected b and A to have the same dtype, but found b of type {_dname(input.dtype)} and A of type "
            f"{_dname(A.dtype)} instead."
        )
    n = A.shape[-1]
    if A.shape[-2] != n:
        raise RuntimeError(f"A must be batches of square matrices, but they are {A.shape[-2]} by {n} matrices")
    if input.shape[-2] != n:
        raise RuntimeError(
            f"Incompatible matrix sizes for triangular_solve: each A matrix is {n} by {n} but each b matrix is "
            f"{input.shape[-2]} by {input.shape[-1]}"
        )
    if not _is_float(A):
        raise NotImplementedError(f"\"triangular_solve_cpu\" not implemented for '{_dname(A.dtype)}'")
    from rgrad import linalg

    batch = _batch_broadcast(input.shape[:-2], A.shape[:-2])
    b = input.expand(*batch, *input.shape[-2:])
    a = A.expand(*batch, n, n)
    if transpose:
        sol = linalg.solve_triangular(a.mT, b, upper=not upper, unitriangular=unitriangular)
    else:
        sol = linalg.solve_triangular(a, b, upper=upper, unitriangular=unitriangular)
    clone = a.clone()
    fields = {"A": A, "self": input, "solution": sol, "transpose": transpose, "unitriangular": unitriangular,
              "upper": upper}
    sol, clone = _named_multi("TriangularSolveBackward0", fields, (sol, clone), input, A)
    return return_types.triangular_solve(sol, clone)


# ---- geqrf -----------------------------------------------------------------------------

_GEQRF_NODE = None


def _geqrf_node():
    """torch's GeqrfBackward0 over (a, tau): its backward raises NotImplementedError."""
    global _GEQRF_NODE
    if _GEQRF_NODE is not None:
        return _GEQRF_NODE
    from rgrad.autograd import Function

    def forward(ctx, _input, a, tau):
        return a.detach(), tau.detach()

    def backward(ctx, *grads):
        raise NotImplementedError("the derivative for 'geqrf' is not implemented.")

    cls = type("_GeqrfBackward0", (Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})
    cls._backward_cls.__name__ = cls._backward_cls.__qualname__ = "GeqrfBackward0"
    _GEQRF_NODE = cls
    return cls


def _native(*tensors) -> bool:
    """Whether an op on ``tensors`` may run its native kernel: no vmap batch, no node to
    record and no forward-AD level open (the compositions give those)."""
    return not is_batched(*tensors) and _autograd_off(*tensors)


def _householder_qr(x: Tensor) -> tuple[Tensor, Tensor]:
    """LAPACK's ``dgeqr2`` on (*, m, n) values (no autograd): the reflectors below the
    diagonal (v with an implicit leading 1), R on and above it, and tau. (vmap's
    composition; otherwise ``Tensor._geqrf``, the native kernel, gives them.)"""
    import rgrad

    m, n = x.shape[-2], x.shape[-1]
    k = min(m, n)
    a = x.clone()
    taus = []
    for j in range(k):
        alpha = a[..., j, j].clone()
        tail = a[..., j + 1:, j]
        xnorm = rgrad.linalg.vector_norm(tail, 2, -1) if m - j > 1 else alpha.new_zeros(alpha.shape)
        beta = -alpha.hypot(xnorm).copysign(alpha)
        nonzero = xnorm != 0
        beta = rgrad.where(nonzero, beta, alpha)
        t = rgrad.where(nonzero, (beta - alpha) / beta, rgrad.zeros_like(alpha))
        scale = rgrad.where(nonzero, 1.0 / (alpha - beta), rgrad.ones_like(alpha))
        if m - j > 1:
            a[..., j + 1:, j] = tail * scale.unsqueeze(-1)
        a[..., j, j] = beta
        taus.append(t)
        if j + 1 < n:
            # H = I - tau v vᵀ on the trailing columns (v = [1, a[j+1:, j]])
            v = a[..., j:, j].clone()
            v[..., 0] = 1.0
            c = a[..., j:, j + 1:]
            w = (v.unsqueeze(-1) * c).sum(-2)  # vᵀ C
            a[..., j:, j + 1:] = c - (t.unsqueeze(-1) * w).unsqueeze(-2) * v.unsqueeze(-1)
    tau = rgrad.stack(taus, -1) if taus else x.new_zeros((*x.shape[:-2], 0))
    return a, tau


def geqrf(input: Tensor):  # noqa: A002
    """The QR decomposition in LAPACK's packed form: ``return_types.geqrf(a, tau)``, R on
    and above a's diagonal, the Householder vectors below it (their leading 1 implicit) and
    their scalars ``tau`` (``householder_product(a, tau)`` is Q). Not differentiable, as
    torch: a GeqrfBackward0 whose backward raises NotImplementedError."""
    import rgrad
    from rgrad import return_types

    _tensor_arg("geqrf", "input", 1, input)
    if input.dim() < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if not _is_float(input):
        raise NotImplementedError(f"\"geqrf_cpu\" not implemented for '{_dname(input.dtype)}'")
    if is_batched(input):
        with rgrad.no_grad():
            a, tau = _householder_qr(input.detach())
    else:
        a, tau = input._geqrf()  # (values only: no graph)
    if rgrad.is_grad_enabled() and input.requires_grad:
        a, tau = _geqrf_node().apply(input, a, tau)
    return return_types.geqrf(a, tau)


# ---- householder_product / orgqr / ormqr ---------------------------------------------


def _reflectors(input: Tensor, k: int) -> Tensor:
    """The (*, m, k) Householder vectors of a packed ``input``: its strict lower triangle,
    a unit diagonal (the upper part is not read)."""
    import rgrad

    m = input.shape[-2]
    v = input[..., :, :k].tril(-1)
    return v + rgrad.eye(m, k, dtype=input.dtype, device=input.device)


def _apply_reflector(c: Tensor, v: Tensor, t: Tensor, left: bool) -> Tensor:
    """``H c`` (``left``) or ``c H`` for ``H = I - t v vᵀ``; v (*, m, 1), t (*,)."""
    t = t.unsqueeze(-1).unsqueeze(-1)
    if left:
        return c - (t * v).matmul(v.mT.matmul(c))
    return c - c.matmul(v).matmul(t * v.mT)


def householder_product(A: Tensor, tau: Tensor) -> Tensor:  # noqa: N803
    """The first n columns of ``H_1 ⋯ H_k``, ``H_i = I - tau_i v_i v_iᵀ``, v_i the i-th
    column of A below the diagonal with a leading 1 (LinalgHouseholderProductBackward0)."""
    _tensor_arg("linalg_householder_product", "input", 1, A)
    _tensor_arg("linalg_householder_product", "tau", 2, tau)
    return _householder_product(A, tau)


def _householder_product(A: Tensor, tau: Tensor) -> Tensor:  # noqa: N803
    import rgrad

    p = "torch.linalg.householder_product: "
    if A.dim() < 2:
        raise RuntimeError(p + "input must have at least 2 dimensions.")
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise RuntimeError(p + "input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.dim() < 1 or n < tau.shape[-1]:
        raise RuntimeError(p + "input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if A.dim() - tau.dim() != 1:
        raise RuntimeError(
            p + f"Expected tau to have one dimension less than input, but got tau.ndim equal to {tau.dim()} and "
            f"input.ndim is equal to {A.dim()}"
        )
    if A.dim() > 2 and tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(
            p + "Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
            f"[{', '.join(map(str, tau.shape[:-1]))}]"
        )
    if tau.dtype != A.dtype:
        raise RuntimeError(p + f"tau dtype {_dname(tau.dtype)} does not match input dtype {_dname(A.dtype)}")
    if not _is_float(A):
        raise NotImplementedError(f"\"orgqr_cpu\" not implemented for '{_dname(A.dtype)}'")
    if _native(A, tau):
        return A._householder_product(tau)
    k = tau.shape[-1]
    eye = rgrad.eye(m, n, dtype=A.dtype, device=A.device)
    q = eye.expand(*A.shape[:-2], m, n)
    if k:
        v = _reflectors(A, k)
        for i in reversed(range(k)):
            q = _apply_reflector(q, v[..., :, i:i + 1], tau[..., i], True)
    else:
        q = q.clone()
    return _named("LinalgHouseholderProductBackward0", {"input": A, "tau": tau, "result": q}, q, A, tau)


def orgqr(input: Tensor, input2: Tensor) -> Tensor:  # noqa: A002
    """``torch.orgqr``: ``linalg.householder_product(input, input2)``."""
    _tensor_arg("orgqr", "input", 1, input)
    _tensor_arg("orgqr", "input2", 2, input2)
    return _householder_product(input, input2)


def ormqr(input: Tensor, input2: Tensor, input3: Tensor, left: bool = True,  # noqa: A002
          transpose: bool = False) -> Tensor:
    """``Q @ other`` (``other @ Q`` when not ``left``; ``Qᵀ`` with ``transpose``), Q the
    (m, m) product ``H_1 ⋯ H_k`` of the reflectors packed in ``input`` with the scalars
    ``input2`` (tau), applied without forming Q (OrmqrBackward0)."""
    _tensor_arg("ormqr", "input", 1, input)
    _tensor_arg("ormqr", "input2", 2, input2)
    _tensor_arg("ormqr", "input3", 3, input3)
    left = _bool_arg("ormqr", "left", 4, left)
    transpose = _bool_arg("ormqr", "transpose", 5, transpose)
    A, tau, other = input, input2, input3
    p = "torch.ormqr: "
    if A.dim() < 2:
        raise RuntimeError(p + "input must have at least 2 dimensions.")
    if other.dim() < 2:
        raise RuntimeError(p + "other must have at least 2 dimensions.")
    side = -2 if left else -1
    if other.shape[side] != A.shape[-2]:
        raise RuntimeError(p + f"other.shape[{side}] must be equal to input.shape[-2]")
    if tau.dim() < 1 or tau.shape[-1] != min(other.shape[side], A.shape[-1]):
        raise RuntimeError(p + f"tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1])")
    if A.dim() - tau.dim() != 1:
        raise RuntimeError(
            p + f"Expected tau to have one dimension less than input, but got tau.ndim equal to {tau.dim()} and "
            f"input.ndim is equal to {A.dim()}"
        )
    if A.dim() != other.dim():
        raise RuntimeError(
            p + "Expected other to have the same number of dimensions as input, but got other.ndim equal to "
            f"{other.dim()} and input.ndim is equal to {A.dim()}"
        )
    if A.dim() > 2:
        if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
            raise RuntimeError(
                p + "Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                f"[{', '.join(map(str, tau.shape[:-1]))}]"
            )
        if tuple(other.shape[:-2]) != tuple(A.shape[:-2]):
            raise RuntimeError(
                p + "Expected batch dimensions of other to be equal to input.shape[:-2], but got "
                f"[{', '.join(map(str, other.shape[:-2]))}]"
            )
    if tau.dtype != A.dtype:
        raise RuntimeError(
            p + f"Expected input and tau to have the same dtype, but input has dtype{_dname(A.dtype)} and tau has "
            f"dtype {_dname(tau.dtype)}"
        )
    if other.dtype != A.dtype:
        raise RuntimeError(
            p + f"Expected input and other to have the same dtype, but input has dtype{_dname(A.dtype)} and other "
            f"has dtype {_dname(other.dtype)}"
        )
    if not _is_float(A):
        raise NotImplementedError(f"\"ormqr_cpu\" not implemented for '{_dname(A.dtype)}'")
    if _native(A, tau, other):
        return A._ormqr(tau, other, left, transpose)
    k = tau.shape[-1]
    out = other
    if k:
        v = _reflectors(A, k)
        # Q = H_1 ⋯ H_k: Q C applies H_k first, Qᵀ C H_1 first, C Q H_1 first, C Qᵀ H_k first
        order = range(k) if left == transpose else reversed(range(k))
        for i in order:
            out = _apply_reflector(out, v[..., :, i:i + 1], tau[..., i], left)
    else:
        out = other.clone()
    fields = {"input2": tau, "input3": other, "left": left, "result": out, "self": A, "transpose": transpose}
    return _named("OrmqrBackward0", fields, out, A, tau, other)


# ---- lstsq -------------------------------------------------------------------------------

_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _eps(dtype) -> float:
    return 1.1920928955078125e-07 if dtype == _C.float32 else 2.220446049250313e-16


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None):  # noqa: N803
    """The least-squares solution of ``A X = B`` (the minimum-norm one when A is rank
    deficient, except for 'gels', which assumes full rank):
    ``return_types.linalg_lstsq(solution, residuals, rank, singular_values)`` with torch's
    CPU driver semantics (default 'gelsy'). B is a vector per batch when it has one
    dimension less than A; the batches broadcast."""
    import rgrad
    from rgrad import return_types

    _tensor_arg("linalg_lstsq", "self", 1, A)
    _tensor_arg("linalg_lstsq", "b", 2, B)
    if rcond is not None and (isinstance(rcond, bool) or not isinstance(rcond, (int, float))):
        raise TypeError(f"linalg_lstsq(): argument 'rcond' (position 3) must be float, not {type(rcond).__name__}")
    if driver is not None and not isinstance(driver, str):
        raise TypeError(f"linalg_lstsq(): argument 'driver' must be str, not {type(driver).__name__}")
    p = "torch.linalg.lstsq: "
    if A.dim() < 2:
        raise RuntimeError(p + "input must have at least 2 dimensions.")
    dim_diff = A.dim() - B.dim()
    if not 0 <= dim_diff <= 1:
        raise RuntimeError(
            p + "input.dim() must be greater or equal to other.dim() and (input.dim() - other.dim()) <= 1"
        )
    if not _is_float(A) or not _is_float(B):
        raise RuntimeError("This function doesn't handle types other than float and double")
    if A.dtype != B.dtype:
        raise RuntimeError(
            p + f"Expected input and other to have the same dtype, but got input's dtype {_dname(A.dtype)} and "
            f"other's dtype {_dname(B.dtype)}"
        )
    vector = dim_diff == 1
    b2 = B.unsqueeze(-1) if vector else B
    batch = _batch_broadcast(A.shape[:-2], b2.shape[:-2])
    m, n = A.shape[-2], A.shape[-1]
    if b2.shape[-2] != m:
        raise RuntimeError(p + ("input.size(-2) should match other.size(-1)" if vector
                                else "input.size(-2) should match other.size(-2)"))
    drv = "gelsy" if driver is None else driver
    if drv not in _DRIVERS:
        raise RuntimeError(p + "parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    rtol = _eps(A.dtype) * max(m, n) if rcond is None or rcond < 0 else float(rcond)
    k = b2.shape[-1]
    empty = A.new_zeros((0,))
    # without a graph to record, one SVD gives the singular values and the solution
    # (pinv's values: V diag(1/σ, σ above the cutoff) Uᵀ B), where the graph's path below
    # runs svdvals and pinv, two
    plain = A.numel() and b2.numel() and type(A) is Tensor and type(B) is Tensor
    one_svd = plain and not (rgrad.is_grad_enabled() and (A.requires_grad or B.requires_grad))
    # The default driver runs as torch's, LAPACK's gelsy (a QR with column pivoting and
    # its incremental rank estimate, a fraction of an SVD's work): its rank always, its
    # solution when there is no graph to record
    gelsy = plain and drv == "gelsy"
    fast = gelsy and one_svd and _native(A, B)  # (no tangents either)
    with rgrad.no_grad():
        if gelsy:
            xg, rank = A.detach().expand(*batch, m, n)._lstsq_gelsy(b2.detach().expand(*batch, m, k), rtol)
            # (the rank has A's batch shape, as torch's: B's broadcast repeats it)
            abatch = tuple(A.shape[:-2])
            pick = (0,) * (len(batch) - len(abatch)) + tuple(slice(0, 1) if s == 1 else slice(None) for s in abatch)
            if pick:
                rank = rank[pick]
        if fast:
            pass
        elif one_svd:
            U, S, Vh = A._linalg_svd(False, True)
        else:
            S = rgrad.linalg.svdvals(A) if A.numel() else A.new_zeros((*A.shape[:-2], min(m, n)))
        if gelsy:
            pass
        elif drv == "gels":
            rank = _C.zeros((0,), dtype=_C.int64)
        elif S.shape[-1] == 0:
            rank = _C.zeros(tuple(A.shape[:-2]), dtype=_C.int64)
        else:
            rank = (S > S.amax(-1, True) * rtol).sum(-1)
    if A.numel() == 0 or b2.numel() == 0:
        x = A.new_zeros((*batch, n, k))  # (an empty A: a zero solution)
    elif fast:
        x = xg
    elif one_svd:
        # pinv's cutoff: rtol σ_max (gels: every nonzero σ; another rcond: its rtol)
        cut = S.amax(-1, True) * (0.0 if drv == "gels" else rtol)
        inv = S.reciprocal().where(S > cut, 0.0)
        x = Vh.mT.matmul(inv.unsqueeze(-1) * U.mT.matmul(b2)).expand(*batch, n, k)
    else:
        # torch's backward is the derivative of pinv(A) @ B with pinv's default tolerance
        # (the lstsq default rcond): the same tolerance gives the value; another rcond
        # gives the value of its truncation with that derivative
        pinv = rgrad.linalg.pinv(A)
        x = pinv.matmul(b2)
        if drv != "gels" and rcond is not None and rtol != _eps(A.dtype) * max(m, n):
            with rgrad.no_grad():
                xr = rgrad.linalg.pinv(A, rtol=rtol).matmul(b2)
            x = x + (xr - x).detach()
        elif drv == "gels":
            with rgrad.no_grad():
                xr = rgrad.linalg.pinv(A, rtol=0.0).matmul(b2)
            x = x + (xr - x).detach()
        x = x.expand(*batch, n, k)
    residuals = empty
    if m > n and drv != "gelsy":
        if drv == "gels" and A.numel() == 0:
            residuals = A.new_zeros((*batch, k))  # (torch's gels leaves an empty A's zeros)
        elif drv == "gels" or _all_full_rank(rank, n):
            residuals = (A.matmul(x) - b2).square().sum(-2)
            if residuals.shape != (*batch, k):
                residuals = residuals.expand(*batch, k)
    sol = x.squeeze(-1) if vector else x
    if drv in ("gelsd", "gelss"):
        sv = S
    else:
        sv = empty
    sol, residuals = _named_multi("LinalgLstsqBackward0", {"b": B, "self": A, "solution": sol},
                                  (sol, residuals), A, B)
    return return_types.linalg_lstsq(sol, residuals, rank, sv)


def _all_full_rank(rank: Tensor, n: int) -> bool:
    """Whether every matrix has rank n (torch's test before it gives 'gelsd' / 'gelss'
    residuals); under vmap over all the physical batch, as torch's over its batch."""
    from rgrad.func._batched_tensor import BatchedTensor

    while isinstance(rank, BatchedTensor):
        rank = rank._value
    return bool((rank == n).all())


_LSTSQ_REMOVED = (
    "This function was deprecated since version 1.9 and is now removed. `torch.lstsq` is deprecated in favor of "
    "`torch.linalg.lstsq`.\n"
    "`torch.linalg.lstsq` has reversed arguments and does not return the QR decomposition in the returned tuple "
    "(although it returns other information about the problem).\n\n"
    "To get the QR decomposition consider using `torch.linalg.qr`.\n\n"
    "The returned solution in `torch.lstsq` stored the residuals of the solution in the last m - n columns of the "
    "returned value whenever m > n. In torch.linalg.lstsq, the residuals are in the field 'residuals' of the "
    "returned named tuple.\n\n"
    "The unpacking of the solution, as in\n"
    "X, _ = torch.lstsq(B, A).solution[:A.size(1)]\n"
    "should be replaced with:\n"
    "X = torch.linalg.lstsq(A, B).solution"
)


def _lstsq_removed(input: Tensor, A: Tensor):  # noqa: A002,N803
    """``torch.lstsq`` / ``Tensor.lstsq``: removed in torch 2.15; raises torch's RuntimeError."""
    raise RuntimeError(_LSTSQ_REMOVED)


# ---- fill_diagonal_ ------------------------------------------------------------------------


def fill_diagonal_(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Fills the main diagonal (all dims equal beyond 2-D) with ``fill_value`` in place;
    with ``wrap``, a tall matrix's diagonal restarts every ``width + 1`` rows (torch's
    ``as_strided`` writes, so CopySlices records it)."""
    import numbers

    if isinstance(fill_value, Tensor) or not isinstance(fill_value, numbers.Number) or isinstance(fill_value, complex):
        raise TypeError(
            f"fill_diagonal_(): argument 'fill_value' (position 1) must be Number, not {type(fill_value).__name__}"
        )
    wrap = _bool_arg("fill_diagonal_", "wrap", 2, wrap)
    nd = self.dim()
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    height, width = self.shape[0], self.shape[1]
    if nd > 2 and any(self.shape[i] != height for i in range(1, nd)):
        raise RuntimeError("all dimensions of input must be of equal length")
    size = min(height, width)
    from rgrad.func._batched_tensor import BatchedTensor

    if isinstance(self, BatchedTensor):
        # (vmap: the same elements by a mask, masked_fill_'s batching rule; as_strided's
        # loop fallback would write to copies)
        return self.masked_fill_(_diagonal_mask(tuple(self.shape), wrap), fill_value)
    offset = self.storage_offset()
    stride = sum(self.stride())
    self.as_strided((size,), (stride,), offset).fill_(fill_value)
    if wrap and nd == 2 and height > width + 1:
        step = width + 1
        wrap_size = (self.numel() + step - 1) // step - size
        self.as_strided((wrap_size,), (stride,), offset + self.stride(0) * (width + 1)).fill_(fill_value)
    return self


# ---- ldl_factor / ldl_factor_ex / ldl_solve ---------------------------------------------------


def _vmap_loop(fn, name: str, *args, empty_fn=None, **kwargs):
    """``fn`` sample by sample over the innermost vmap level, the results stacked (the LDL
    functions read the values on the host); None outside vmap. An empty batch: the shapes
    of ``empty_fn`` (default ``fn``) on a zero sample."""
    if not is_batched(*args, *kwargs.values()):
        return None
    from rgrad.func import _batched_tensor as bt

    level = bt.max_level(args, kwargs)
    if level < 0:
        return None
    n = bt.batch_size(level)
    if n == 0:
        sample = (empty_fn or fn)(*(bt._zero_sample(a, level) for a in args), **kwargs)
        return bt._empty_batch(sample, level)
    results = [fn(*(bt._select(a, level, b) for a in args), **{k: bt._select(v, level, b) for k, v in kwargs.items()})
               for b in range(n)]
    return bt.stack_results(results, level, name)


def _ldl_factor_ex(A: Tensor, hermitian: bool, check_errors: bool, api: str):
    import rgrad

    p = "torch.linalg.ldl_factor_ex: "
    if A.dim() < 2:
        raise RuntimeError(p + "The input tensor A must have at least 2 dimensions.")
    n = A.shape[-1]
    if A.shape[-2] != n:
        raise RuntimeError(p + f"A must be batches of square matrices, but they are {A.shape[-2]} by {n} matrices")
    if not _is_float(A):
        raise NotImplementedError(p + f"Expected a floating point or complex tensor as input. Got {_dname(A.dtype)}")
    LD, piv_t, info_t = A._ldl_factor_ex()  # noqa: N806  (the native dsytf2; values only)
    infos = info_t.reshape(-1).tolist() if check_errors else ()
    if any(infos):
        first = next(i for i in infos if i)
        raise RuntimeError(
            'false INTERNAL ASSERT FAILED at "/__w/pytorch/pytorch/aten/src/ATen/native/BatchLinearAlgebra.cpp":1677, '
            f"please report a bug to PyTorch. {api}: Unknown error code: {first}."
        )
    if rgrad.is_grad_enabled() and A.requires_grad:
        from rgrad._composite4 import _not_implemented

        LD = _not_implemented("linalg_ldl_factor_ex").apply(A, LD)
    return LD, piv_t, info_t


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False):  # noqa: N803
    """``(LD, pivots, info)``: the Bunch-Kaufman factorization ``P A Pᵀ = L D Lᵀ`` of
    symmetric matrices (the lower triangle read; LAPACK's ``sytrf``), L (unit diagonal) and
    the 1x1 / 2x2 blocks of D packed in LD, 1-based pivots (negative for a 2x2 block; int64
    here where torch's are int32) and info (the first zero pivot). No derivative, as torch
    (a NotImplemented node)."""
    from rgrad import return_types

    _tensor_arg("linalg_ldl_factor_ex", "A", 1, A)
    batched = _vmap_loop(ldl_factor_ex, "linalg_ldl_factor_ex", A, hermitian=hermitian, check_errors=check_errors)
    if batched is not None:
        return batched
    return return_types.linalg_ldl_factor_ex(*_ldl_factor_ex(A, hermitian, check_errors, "torch.linalg.ldl_factor_ex"))


def ldl_factor(A: Tensor, *, hermitian: bool = False):  # noqa: N803
    """``(LD, pivots)``: ``ldl_factor_ex``'s, raising (torch's words) for a singular D."""
    from rgrad import return_types

    _tensor_arg("linalg_ldl_factor", "A", 1, A)
    batched = _vmap_loop(ldl_factor, "linalg_ldl_factor", A, hermitian=hermitian,
                         empty_fn=lambda x, **kw: return_types.linalg_ldl_factor(*ldl_factor_ex(x, **kw)[:2]))
    if batched is not None:
        return batched
    LD, piv, _ = _ldl_factor_ex(A, hermitian, True, "torch.linalg.ldl_factor")  # noqa: N806
    return return_types.linalg_ldl_factor(LD, piv)


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:  # noqa: N803
    """The solution of ``A X = B`` from ``ldl_factor``'s ``(LD, pivots)`` (LAPACK's
    ``sytrs``); B's batch broadcasts with LD's. No derivative, as torch."""
    import rgrad

    _tensor_arg("linalg_ldl_solve", "LD", 1, LD)
    _tensor_arg("linalg_ldl_solve", "pivots", 2, pivots)
    _tensor_arg("linalg_ldl_solve", "B", 3, B)
    batched = _vmap_loop(ldl_solve, "linalg_ldl_solve", LD, pivots, B, hermitian=hermitian)
    if batched is not None:
        return batched
    p = "torch.linalg.ldl_solve: "
    if LD.dim() < 2:
        raise RuntimeError(p + "The input tensor A must have at least 2 dimensions.")
    n = LD.shape[-1]
    if LD.shape[-2] != n:
        raise RuntimeError(p + f"A must be batches of square matrices, but they are {LD.shape[-2]} by {n} matrices")
    if tuple(LD.shape[:-1]) != tuple(pivots.shape):
        raise RuntimeError(
            p + "Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with shape "
            f"[{', '.join(map(str, pivots.shape))}] instead"
        )
    if pivots.dtype.is_floating_point or pivots.dtype == _C.bool:
        raise RuntimeError(p + f"Expected pivots to be integers. Got {_dname(pivots.dtype)}")
    if not _is_float(LD):
        raise NotImplementedError(p + f"Expected a floating point or complex tensor as input. Got {_dname(LD.dtype)}")
    if B.dtype != LD.dtype:
        raise RuntimeError(
            f"Expected b and A to have the same dtype, but found b of type {_dname(B.dtype)} and A of type "
            f"{_dname(LD.dtype)} instead."
        )
    if B.dim() < 2:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got -2)")
    if B.shape[-2] != n:
        raise RuntimeError(
            f"Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is {n} by {n} but each b matrix is "
            f"{B.shape[-2]} by {B.shape[-1]}"
        )
    _batch_broadcast(LD.shape[:-2], B.shape[:-2])  # (torch's error for batches that do not broadcast)
    out = LD._ldl_solve(pivots, B)  # (the native dsytrs, broadcasting; values only)
    if rgrad.is_grad_enabled() and (LD.requires_grad or B.requires_grad):
        from rgrad._composite4 import _not_implemented

        out = _not_implemented("linalg_ldl_solve").apply(B if B.requires_grad else LD, out)
    return out


def _diagonal_mask(shape: tuple, wrap: bool) -> Tensor:
    """True at the elements ``fill_diagonal_`` writes: ``[i, i, ...]`` for i < min(h, w),
    and with ``wrap`` (a 2-D h > w + 1) ``[w + 1 + i, i]`` below them."""
    import rgrad

    numel = math.prod(shape)
    contiguous = [math.prod(shape[d + 1:]) for d in range(len(shape))]
    step = sum(contiguous)
    flat = [False] * numel
    height, width = shape[0], shape[1]
    for i in range(min(height, width)):
        flat[i * step] = True
    if wrap and len(shape) == 2 and height > width + 1:
        wrap_size = (numel + width) // (width + 1) - min(height, width)
        for i in range(wrap_size):
            flat[(width + 1 + i) * width + i] = True
    return rgrad.tensor(flat, dtype=_C.bool).reshape(shape)


# torch.* functions with a Tensor method of the same name
FUNCTIONS = {"triangular_solve": triangular_solve, "geqrf": geqrf, "orgqr": orgqr, "ormqr": ormqr,
             "lstsq": _lstsq_removed}
# Tensor methods without a torch.* function
METHODS = {"fill_diagonal_": fill_diagonal_}


def install() -> None:
    """The Tensor methods (and the same on vmap's BatchedTensor)."""
    from rgrad.func._batched_tensor import BatchedTensor

    for name, fn in {**FUNCTIONS, **METHODS}.items():
        fn.__name__ = fn.__qualname__ = name
        setattr(Tensor, name, fn)
        setattr(BatchedTensor, name, fn)

