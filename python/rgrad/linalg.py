"""``rgrad.linalg``: torch.linalg's norms, cross product, vecdot, the LU and Cholesky
families of factorizations and solves (native ops, src/ops/decomp.rs) and the spectral
decompositions (native ops, src/ops/spectral.rs).

``vector_norm`` and ``cross`` are native ops (LinalgVectorNormBackward0,
LinalgCrossBackward0); ``matrix_norm``, ``norm`` and ``vecdot`` are compositions of them, as
torch's are (so they record the same nodes). ``eigh`` / ``eigvalsh``, ``svd`` / ``svdvals``
and ``qr`` are native ops (LinalgEighBackward0, LinalgSvdBackward0, LinalgQrBackward0,
computed in float64 on the host); the norms ``'nuc'``, ``2`` and ``-2``, ``matrix_rank``
and ``cond`` are torch's compositions of ``svdvals`` (and ``eigvalsh``). The torch-level
forms (``torch.svd``, ``Tensor.svd``, ``torch.nuclear_norm``, ``torch.pinverse``;
``torch.qr``, which torch 2.15 has removed and which raises as torch's) are in
``FUNCTIONS`` / ``TORCH_ONLY`` with the LU family's.
"""

from __future__ import annotations

import math

from rgrad import _C
from rgrad._C import Tensor
from rgrad._vmap_check import batched_tensor_class, is_batched
from rgrad._linalg_more import householder_product, ldl_factor, ldl_factor_ex, ldl_solve, lstsq  # noqa: F401

__all__ = [
    "cross", "vector_norm", "matrix_norm", "norm", "vecdot",
    "det", "slogdet", "inv", "inv_ex", "solve", "solve_ex", "cholesky", "cholesky_ex", "solve_triangular",
    "lu_factor", "lu_factor_ex", "lu_solve", "matrix_power", "multi_dot", "matrix_exp", "lu", "LinAlgError",
    "eigh", "eigvalsh", "svd", "svdvals", "qr", "matrix_rank", "cond", "pinv",
    "diagonal", "matmul", "vander", "tensorinv", "tensorsolve", "lstsq", "householder_product",
    "ldl_factor", "ldl_factor_ex", "ldl_solve",
]

# (torch's is torch._C._LinAlgError, a RuntimeError, under this name)
LinAlgError = _C._LinAlgError


def _tensor_arg(fname: str, name: str, pos: int, v) -> None:
    if not isinstance(v, Tensor):
        raise TypeError(f"{fname}(): argument '{name}' (position {pos}) must be Tensor, not {type(v).__name__}")


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:  # noqa: A002
    """The cross product of 3-vectors along ``dim`` (the operands broadcast)."""
    _tensor_arg("linalg_cross", "input", 1, input)
    _tensor_arg("linalg_cross", "other", 2, other)
    return input._linalg_cross(other, dim)


def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    """The vector ``ord``-norm of ``x`` over ``dim`` (all elements when None): ord in
    {0, ±1, ±2, other numbers, ±inf}."""
    _tensor_arg("linalg_vector_norm", "input", 1, x)
    if isinstance(ord, str) or not isinstance(ord, (int, float)) or isinstance(ord, bool):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not {type(ord).__name__}")
    if not x.dtype.is_floating_point:
        raise NotImplementedError(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. "
            f"Got {_type_name(x.dtype)}"
        )
    if dtype is not None:
        x = x.to(dtype)
    return x.norm(float(ord), dim, keepdim)


def _type_name(d) -> str:
    return {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}[str(d).split(".")[1]]


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    """The matrix norm of the matrices in the last two dims (or ``dim``): 'fro', the max
    (min) absolute column sum (ord ±1) or row sum (ord ±inf), or from the singular values:
    their sum ('nuc'), the largest (2) or the smallest (-2)."""
    _tensor_arg("linalg_matrix_norm", "input", 1, A)
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if not A.dtype.is_floating_point:
        raise NotImplementedError(
            f"linalg.matrix_norm: Expected a floating point or complex tensor as input. Got {_type_name(A.dtype)}"
        )
    dim = tuple(dim)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {', '.join(map(str, dim))}")
    d0, d1 = (d % A.dim() for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if dtype is not None:
        A = A.to(dtype)
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord == "nuc" or (not isinstance(ord, str) and ord in (2, -2)):
        return _svd_norm(A, ord, d0, d1, keepdim)
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    # torch's: the 1-norm along one dim, then the max (min) along the other
    if abs(ord) == math.inf:
        d0, d1 = d1, d0
    if not keepdim and d0 < d1:
        d1 -= 1
    sums = vector_norm(A, 1, d0, keepdim)
    return sums.amax(d1, keepdim) if ord > 0 else sums.amin(d1, keepdim)


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    """A vector norm (``dim`` an int, or ``ord`` None with ``dim`` None: of all elements) or
    a matrix norm (``dim`` a 2-tuple, or a 2-D input with ``ord`` given), as torch.linalg.norm."""
    _tensor_arg("linalg_norm", "input", 1, A)
    if dim is not None and not isinstance(dim, int):
        dim = tuple(dim)
        if len(dim) == 1:
            dim = dim[0]
    if isinstance(dim, tuple) or (dim is None and ord is not None and A.dim() == 2) or isinstance(ord, str):
        if dim is None:
            dim = (-2, -1)
        if isinstance(dim, int):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got [{dim}]")
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if dim is None and ord is not None and A.dim() != 1:
        raise RuntimeError(
            f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {A.dim()}D."
        )
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """The dot products of the vectors along ``dim`` (the operands broadcast)."""
    _tensor_arg("linalg_vecdot", "x", 1, x)
    _tensor_arg("linalg_vecdot", "y", 2, y)
    if x.dtype != y.dtype:
        raise RuntimeError(
            f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
            f"{_type_name(x.dtype)} and y of type {_type_name(y.dtype)} instead"
        )
    return (x * y).sum(dim)


def _svd_norm(A: Tensor, ord, d0: int, d1: int, keepdim: bool) -> Tensor:  # noqa: A002
    """torch's ``linalg_matrix_norm`` for 'nuc', 2 and -2: the matrix dims moved to the end
    (one permute, even when they are there already), ``svdvals``, then the sum (nuc), amax
    (2) or amin (-2) over the last dim; with keepdim, unsqueezed and permuted back."""
    perm = [d for d in range(A.dim()) if d not in (d0, d1)] + [d0, d1]
    S = svdvals(A.permute(perm))
    if ord == "nuc":
        r = S.sum(-1, keepdim)
    elif ord > 0:
        r = S.amax(-1, keepdim)
    else:
        r = S.amin(-1, keepdim)
    if keepdim:
        inverse = [0] * len(perm)
        for i, p in enumerate(perm):
            inverse[p] = i
        r = r.unsqueeze(-1).permute(inverse)
    return r


def _float_check(A: Tensor, op: str) -> None:
    if not A.dtype.is_floating_point:
        raise NotImplementedError(f"{op}: Expected a floating point or complex tensor as input. Got {_type_name(A.dtype)}")


def eigh(A: Tensor, UPLO: str = "L", *, out=None):  # noqa: N803
    """The eigendecomposition of symmetric matrices (the ``UPLO`` triangle of ``A`` is read):
    ``return_types.linalg_eigh(eigenvalues, eigenvectors)``, eigenvalues ascending,
    eigenvectors as columns (unique up to sign; not LAPACK's bits).

    Args:
        A: a (*, n, n) float tensor.
        UPLO: 'L' (the lower triangle, default) or 'U'.

    Returns:
        (eigenvalues (*, n), eigenvectors (*, n, n)), one node LinalgEighBackward0.
    """
    from rgrad import return_types

    _tensor_arg("linalg_eigh", "input", 1, A)
    _no_out("linalg_eigh", out)
    return return_types.linalg_eigh(*A._linalg_eigh(UPLO, True))


def eigvalsh(A: Tensor, UPLO: str = "L", *, out=None) -> Tensor:  # noqa: N803
    """The eigenvalues (ascending) of symmetric matrices (the ``UPLO`` triangle is read).
    The eigenvectors are computed too (and saved by LinalgEighBackward0) only when a
    gradient may be needed, as torch."""
    _tensor_arg("linalg_eigvalsh", "input", 1, A)
    _no_out("linalg_eigvalsh", out)
    return A._linalg_eigh(UPLO, False)[0]


def svd(A: Tensor, full_matrices: bool = True, *, driver=None, out=None):
    """The singular value decomposition ``A = U diag(S) Vh``:
    ``return_types.linalg_svd(U, S, Vh)``, S descending (vectors unique up to sign).

    Args:
        A: a (*, m, n) float tensor.
        full_matrices: U (*, m, m) and Vh (*, n, n) (default), else (*, m, k), (*, k, n).
        driver: only None (a CUDA-only choice in torch).

    Returns:
        (U, S, Vh), one node LinalgSvdBackward0.
    """
    from rgrad import return_types

    _tensor_arg("linalg_svd", "A", 1, A)
    _no_out("linalg_svd", out)
    _check_driver(driver, A)
    return return_types.linalg_svd(*A._linalg_svd(bool(full_matrices), True))


def svdvals(A: Tensor, *, driver=None, out=None) -> Tensor:
    """The singular values of ``A``, descending (LinalgSvdBackward0 when a gradient may be
    needed; the vectors are then computed and saved, as torch)."""
    _tensor_arg("linalg_svdvals", "A", 1, A)
    _no_out("linalg_svdvals", out)
    _check_driver(driver, A)
    return A._linalg_svd(False, False)[1]


def _check_driver(driver, A: Tensor) -> None:
    if driver is not None:
        if A.device.type == "cpu":
            raise RuntimeError(
                "torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER backend."
            )
        raise RuntimeError("linalg.svd: rgrad computes the SVD on the host and takes no `driver=`")


def _no_out(op: str, out) -> None:
    if out is not None:
        raise TypeError(f"{op}(): rgrad does not support out=")


def qr(A: Tensor, mode: str = "reduced", *, out=None):
    """The QR decomposition ``A = QR`` by Householder reflections:
    ``return_types.linalg_qr(Q, R)``; ``mode`` 'reduced' (Q (*, m, k), R (*, k, n)),
    'complete' (Q (*, m, m), R (*, m, n)) or 'r' (R only; Q an empty tensor). R's diagonal
    signs follow LAPACK's reflectors.
    """
    from rgrad import return_types

    _tensor_arg("linalg_qr", "A", 1, A)
    _no_out("linalg_qr", out)
    if not isinstance(mode, str):
        raise TypeError(f"linalg_qr(): argument 'mode' (position 2) must be str, not {type(mode).__name__}")
    return return_types.linalg_qr(*A._linalg_qr(mode))


def _as_tol(v, name: str):
    if v is None or isinstance(v, Tensor):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    raise TypeError(f"linalg_matrix_rank(): argument '{name}' must be Tensor or float, not {type(v).__name__}")


def matrix_rank(A: Tensor, tol=None, hermitian: bool = False, *, atol=None, rtol=None, out=None) -> Tensor:
    """The numerical rank: the number of singular values (absolute eigenvalues with
    ``hermitian``) above ``max(atol, rtol * σ_max)``; rtol defaults to eps·max(m, n) when
    neither tolerance is given, to 0 when atol is given (torch's rules). An int64 tensor."""
    if not isinstance(A, Tensor):
        raise TypeError(
            f"linalg_matrix_rank() received an invalid combination of arguments - got ({type(A).__name__}), "
            "but expected one of:"
        )
    _no_out("linalg_matrix_rank", out)
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    if not A.dtype.is_floating_point:
        raise RuntimeError("This function doesn't handle types other than float and double")
    if tol is not None:
        atol, rtol = tol, 0.0
    atol, rtol = _as_tol(atol, "atol"), _as_tol(rtol, "rtol")
    S = eigvalsh(A).abs() if hermitian else svdvals(A)
    m, n = A.shape[-2], A.shape[-1]
    if rtol is None:
        if atol is None or (not isinstance(atol, Tensor) and atol <= 0):
            rtol = _eps(A.dtype) * max(m, n)
        else:
            rtol = 0.0
    if atol is None:
        atol = 0.0
    if S.numel() == 0:
        smax = S.new_zeros(S.shape[:-1]).unsqueeze(-1) if S.dim() else S
    else:
        smax = S.amax(-1, True)
    tol_t = (smax * rtol).maximum(atol if isinstance(atol, Tensor) else smax.new_full((), atol))
    return (S > tol_t).sum(-1)


def _eps(dtype) -> float:
    return 1.1920928955078125e-07 if str(dtype) == "rgrad.float32" else 2.220446049250313e-16


def cond(A: Tensor, p=None, *, out=None) -> Tensor:
    """The condition number of ``A`` in norm ``p``, as torch composes it: for p None / 2 / -2
    the ratio of the extreme singular values (``svdvals``, S[..., :1] / S[..., -1:], squeezed);
    'nuc': ``S.sum(-1) * S.reciprocal().sum(-1)``; 'fro', ±1, ±inf (square matrices):
    ``matrix_norm(A, p) * matrix_norm(inv, p)`` with ``inv`` from ``inv_ex`` (set to inf
    in place where singular), then ``nan_to_num_(inf, inf, -inf)`` in place. (torch's
    backward through the last ones fails, the in-place fill having modified the inverse
    its node saved: rgrad's does the same.) An empty input gives zeros."""
    _tensor_arg("linalg_cond", "input", 1, A)
    _no_out("linalg_cond", out)
    if A.dim() < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    numeric = not isinstance(p, (str, bool)) and isinstance(p, (int, float))
    # (torch: a string order is checked after the square shape, a number before)
    if p is not None and not isinstance(p, str) and not (numeric and p in (1, -1, 2, -2, math.inf, -math.inf)):
        raise ValueError(f"linalg.cond got an invalid norm type: {p}")
    if p is None or (numeric and p in (2, -2)):
        if A.numel() == 0:
            return _C.zeros(tuple(A.shape[:-2]), dtype=A.dtype, device=A.device)
        S = svdvals(A)
        k = S.shape[-1]
        if p == -2:
            r = S.narrow(-1, k - 1, 1) / S.narrow(-1, 0, 1)
        else:
            r = S.narrow(-1, 0, 1) / S.narrow(-1, k - 1, 1)
        return r.squeeze(-1)
    if isinstance(p, str) or isinstance(p, int):
        label = str(p)
    else:
        label = "inf" if p == math.inf else "-inf" if p == -math.inf else f"{p:f}"
    m, n = A.shape[-2], A.shape[-1]
    if m != n:
        raise RuntimeError(
            f"linalg.cond(ord={label}): A must be batches of square matrices, but they are {m} by {n} matrices"
        )
    if isinstance(p, str) and p not in ("fro", "nuc"):
        raise ValueError(f"linalg.cond got an invalid norm type: {p}")
    if A.numel() == 0:
        return _C.zeros(tuple(A.shape[:-2]), dtype=A.dtype, device=A.device)
    if p == "nuc":
        # (torch: matrix_norm's 'nuc' refuses infinities, so the definition directly)
        S = svdvals(A)
        return S.sum(-1) * S.reciprocal().sum(-1)
    if not A.dtype.is_floating_point:
        raise NotImplementedError(f"linalg.inv: Expected a floating point or complex tensor as input. Got {_type_name(A.dtype)}")
    inverse, info = inv_ex(A)
    inverse.masked_fill_(info.unsqueeze(-1).unsqueeze(-1) > 0, math.inf)
    r = matrix_norm(A, p) * matrix_norm(inverse, p)
    return r.nan_to_num_(math.inf, math.inf, -math.inf)


def _tol_tensor(v, A: Tensor, name: str):
    """A tolerance as the float64 tensor torch's ``get_atol_rtol`` works with."""
    if v is None:
        return None
    if isinstance(v, Tensor):
        if not v.dtype.is_floating_point and v.dtype != _C.int64:
            raise RuntimeError(f"linalg.pinv: {name} tensor of complex type is not supported.")
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return _C.tensor(float(v), dtype=_C.float64, device=A.device)
    raise TypeError(f"linalg_pinv(): argument '{name}' must be Tensor or float, not {type(v).__name__}")


def pinv(A: Tensor, rcond=None, hermitian: bool = False, *, atol=None, rtol=None, out=None) -> Tensor:
    """The (Moore–Penrose) pseudo-inverse: singular values (absolute eigenvalues with
    ``hermitian``) above ``max(atol, rtol·σ_max)`` inverted, the others dropped; torch's
    default tolerances (``rcond``, the old spelling, is rtol with atol 0). One node,
    LinalgPinvBackward0 (``pinv_backward``; forward AD ``pinv_jvp``)."""
    if not isinstance(A, Tensor):
        raise TypeError(
            f"linalg_pinv() received an invalid combination of arguments - got ({type(A).__name__}), "
            "but expected one of:"
        )
    _no_out("linalg_pinv", out)
    if rcond is not None:
        atol, rtol = 0.0, rcond
    return A._linalg_pinv(_tol_tensor(atol, A, "atol"), _tol_tensor(rtol, A, "rtol"), bool(hermitian))


# ---- torch-level forms -----------------------------------------------------------------


def _pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:  # noqa: A002
    """``torch.pinverse(input, rcond=1e-15)``: ``linalg.pinv(input, rcond)``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"pinverse(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return pinv(input, rcond)



def _svd_fn(input: Tensor, some: bool = True, compute_uv: bool = True):  # noqa: A002
    """``torch.svd``: ``return_types.svd(U, S, V)`` (V, not Vh: ``Vh.mT``, a
    TransposeBackward0 node); ``some=False`` gives the full U and V; with
    ``compute_uv=False`` U and V are zeros of shapes (*, m, m) and (*, n, n), as torch."""
    from rgrad import return_types

    if not isinstance(input, Tensor):
        raise TypeError(f"svd(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.dim() < 2:
        raise RuntimeError(f"linalg.svd: input should have at least 2 dimensions, but has {input.dim()} dimensions instead")
    if compute_uv:
        U, S, Vh = input._linalg_svd(not some, True)
        return return_types.svd(U, S, Vh.mT)
    S = svdvals(input)
    batch, m, n = tuple(input.shape[:-2]), input.shape[-2], input.shape[-1]
    U = input.new_zeros(batch + (m, m))
    V = input.new_zeros(batch + (n, n))
    return return_types.svd(U, S, V)


def _qr_removed(input: Tensor, some: bool = True):  # noqa: A002
    """``torch.qr`` / ``Tensor.qr``: removed in torch 2.15; raises torch's RuntimeError."""
    mode = "reduced" if some else "complete"
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed. `torch.qr` is deprecated in favor of "
        "`torch.linalg.qr` and the boolean parameter `some` has been replaced with a string parameter `mode`.\n\n"
        "Q, R = torch.qr(A) should be replaced with:\nQ, R = torch.linalg.qr(A, mode='reduced')\n\nand\n\n"
        "Q, R = torch.qr(A, some=False) should be replaced with:\nQ, R = torch.linalg.qr(A, mode='complete')\n\n"
        f"Since `some` was set to {bool(some)}, use mode='{mode}'."
    )


def _nuclear_norm(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None, out=None) -> Tensor:  # noqa: A002
    """``torch.nuclear_norm(input, dim=None, keepdim=False)``: ``linalg.matrix_norm(input,
    'nuc', dim)`` (over the last two dims without ``dim``)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"nuclear_norm(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    _no_out("nuclear_norm", out)
    global _nuclear_warned
    if not _nuclear_warned:
        _nuclear_warned = True
        import warnings

        warnings.warn(
            "at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be removed in a future "
            "PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead",
            UserWarning,
            stacklevel=2,
        )
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    if dim is None:
        dim = (-2, -1)
    return matrix_norm(input, "nuc", dim, keepdim, dtype=dtype)


_nuclear_warned = False


def _method(name: str, x, *args):
    """``x.name(*args)``, or vmap's batched method when only a later operand is batched
    (the native method of a plain tensor takes no BatchedTensor)."""
    if not is_batched(x) and is_batched(*args):
        return getattr(batched_tensor_class(), name)(x, *args)
    return getattr(x, name)(*args)


def det(A: Tensor) -> Tensor:
    """The determinant of each square matrix of ``A`` (LinalgDetBackward0)."""
    _tensor_arg("linalg_det", "A", 1, A)
    return A._linalg_det()


def slogdet(A: Tensor):
    """``(sign, logabsdet)`` of each square matrix of ``A``: the determinant is
    ``sign * exp(logabsdet)`` (one node, LinalgSlogdetBackward0)."""
    from rgrad import return_types

    _tensor_arg("linalg_slogdet", "A", 1, A)
    return return_types.linalg_slogdet(*A._linalg_slogdet())


def inv_ex(A: Tensor, *, check_errors: bool = False):
    """``(inverse, info)``: the inverse of each square matrix, and LAPACK's info (0, or
    the index of the first zero pivot of a singular matrix, whose inverse is then not
    finite); raises LinAlgError for a singular one with ``check_errors``."""
    from rgrad import return_types

    _tensor_arg("linalg_inv_ex", "A", 1, A)
    return return_types.linalg_inv_ex(*A._linalg_inv_ex(check_errors, "linalg.inv_ex"))


def inv(A: Tensor) -> Tensor:
    """The inverse of each square matrix of ``A``; LinAlgError for a singular one
    (LinalgInvExBackward0)."""
    _tensor_arg("linalg_inv", "A", 1, A)
    return A._linalg_inv_ex(True, "linalg.inv")[0]


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False):
    """``(result, info)``: the solution of ``A X = B`` (``X A = B`` when not ``left``),
    B a matrix or a vector (batches broadcast), and LAPACK's info."""
    from rgrad import return_types

    _tensor_arg("linalg_solve_ex", "A", 1, A)
    _tensor_arg("linalg_solve_ex", "B", 2, B)
    return return_types.linalg_solve_ex(*_method("_linalg_solve_ex", A, B, left, check_errors, "torch.linalg.solve_ex"))


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """The solution of ``A X = B`` (``X A = B`` when not ``left``); LinAlgError for a
    singular A (LinalgSolveExBackward0)."""
    _tensor_arg("linalg_solve", "A", 1, A)
    _tensor_arg("linalg_solve", "B", 2, B)
    return _method("_linalg_solve_ex", A, B, left, True, "torch.linalg.solve")[0]


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False):
    """``(L, info)``: the Cholesky factor of each symmetric positive-definite matrix (its
    lower triangle read; the upper factor, from the upper triangle, with ``upper``) and
    LAPACK's info (the order of the first leading minor that is not positive-definite)."""
    from rgrad import return_types

    _tensor_arg("linalg_cholesky_ex", "A", 1, A)
    return return_types.linalg_cholesky_ex(*A._linalg_cholesky_ex(upper, check_errors, "linalg.cholesky_ex"))


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor ``L`` (``A = L Lᴴ``; ``U``, ``A = Uᴴ U``, with ``upper``);
    LinAlgError for a matrix that is not positive-definite (LinalgCholeskyExBackward0)."""
    _tensor_arg("linalg_cholesky", "A", 1, A)
    return A._linalg_cholesky_ex(upper, True, "linalg.cholesky")[0]


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False) -> Tensor:
    """The solution of ``A X = B`` (``X A = B`` when not ``left``) for the ``upper`` (or
    lower) triangle of A, its diagonal taken as ones with ``unitriangular``."""
    _tensor_arg("linalg_solve_triangular", "A", 1, A)
    _tensor_arg("linalg_solve_triangular", "B", 2, B)
    return _method("_linalg_solve_triangular", A, B, upper, left, unitriangular)


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False):
    """``(LU, pivots, info)``: the LU factorization with partial pivoting, packed as
    LAPACK's (L below the diagonal, U on and above it; 1-based pivots, int64 here where
    torch's are int32)."""
    from rgrad import return_types

    _tensor_arg("linalg_lu_factor_ex", "A", 1, A)
    return return_types.linalg_lu_factor_ex(*A._linalg_lu_factor_ex(pivot, check_errors, "torch.linalg.lu_factor_ex"))


def lu_factor(A: Tensor, *, pivot: bool = True):
    """``(LU, pivots)``: the packed LU factorization; raises for a zero pivot
    (LinalgLuFactorExBackward0)."""
    from rgrad import return_types

    _tensor_arg("linalg_lu_factor", "A", 1, A)
    lu, piv, _ = A._linalg_lu_factor_ex(pivot, True, "torch.linalg.lu_factor")
    return return_types.linalg_lu_factor(lu, piv)


def lu(A: Tensor, *, pivot: bool = True):
    """``(P, L, U)`` with ``A = P L U``: P a permutation matrix, L unit lower and U upper
    trapezoidal (one LinalgLuBackward0 for L and U)."""
    from rgrad import return_types

    _tensor_arg("linalg_lu", "A", 1, A)
    return return_types.linalg_lu(*A._linalg_lu(pivot))


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False) -> Tensor:  # noqa: N803
    """The solution of ``A X = B`` from A's packed factors (``Aᴴ X = B`` with
    ``adjoint``, ``X A = B`` when not ``left``) (LinalgLuSolveBackward0)."""
    _tensor_arg("linalg_lu_solve", "LU", 1, LU)
    _tensor_arg("linalg_lu_solve", "pivots", 2, pivots)
    _tensor_arg("linalg_lu_solve", "B", 3, B)
    return _method("_linalg_lu_solve", LU, pivots, B, left, adjoint)


def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential of each square matrix (LinalgMatrixExpBackward0)."""
    _tensor_arg("linalg_matrix_exp", "A", 1, A)
    return A._linalg_matrix_exp()


def matrix_power(A: Tensor, n: int) -> Tensor:
    """``A`` to the integer power ``n`` (the inverse's for negative n), torch's way: a
    copy of the identity for 0, a clone for 1, products of repeated squares above 3."""
    _tensor_arg("linalg_matrix_power", "A", 1, A)
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}")
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"linalg.matrix_power: A must be batches of square matrices, but they are {A.shape[-2]} by "
            f"{A.shape[-1]} matrices"
        )
    from rgrad import eye, matmul

    if n == 0:
        return A.clone().copy_(eye(A.shape[-2], A.shape[-1], dtype=A.dtype, device=A.device))
    if n == 1:
        return A.clone()
    if n == -1:
        return inv(A)
    a = inv(A) if n < 0 else A
    n = abs(n)
    if n == 2:
        return matmul(a, a)
    if n == 3:
        return matmul(matmul(a, a), a)
    # the bits of n from the least significant: z runs through a, a², a⁴, ...
    z = result = None
    while n > 0:
        bit, n = n % 2, n // 2
        z = a if z is None else matmul(z, z)
        if bit:
            result = z if result is None else matmul(result, z)
    return result


def multi_dot(tensors) -> Tensor:
    """The product of a chain of matrices (the first and the last may be vectors) in the
    order that costs the fewest multiplications (torch's: the cheaper of the two orders
    for three, the classic dynamic program above)."""
    from rgrad import mm

    ts = list(tensors)
    n = len(ts)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    out_shape = []
    first, last = ts[0], ts[-1]
    if first.dim() == 1:
        first = first.unsqueeze(0)
    elif first.dim() == 2:
        out_shape.append(first.shape[0])
    else:
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first.dim()}D")
    if last.dim() == 1:
        last = last.unsqueeze(-1)
    elif last.dim() == 2:
        out_shape.append(last.shape[1])
    else:
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last.dim()}D")
    mats = [first, *ts[1:-1], last]
    for i in range(1, n - 1):
        if ts[i].dim() != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {ts[i].dim()}D")
    names = {"float32": "float", "float64": "double", "int64": "long int", "bool": "bool"}
    for i in range(1, n):
        if mats[i].dtype != mats[0].dtype:
            d0, di = (names[str(m.dtype).split(".")[1]] for m in (mats[0], mats[i]))
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is {d0} and tensor {i} {di}")
        if mats[i - 1].shape[-1] != mats[i].shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i - 1} and {i} with shapes {list(ts[i - 1].shape)} and {list(ts[i].shape)} "
                "cannot be multiplied"
            )
    if n == 2:
        result = mm(mats[0], mats[1])
    elif n == 3:
        a, b, c, d = mats[0].shape[0], mats[1].shape[0], mats[2].shape[0], mats[2].shape[1]
        if a * c * (b + d) > b * d * (a + c):
            result = mm(mats[0], mm(mats[1], mats[2]))
        else:
            result = mm(mm(mats[0], mats[1]), mats[2])
    else:
        p = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
        cost = [[0] * n for _ in range(n)]
        split = [[0] * n for _ in range(n)]
        for length in range(1, n):
            for i in range(n - length):
                j = i + length
                cost[i][j] = None
                for k in range(i, j):
                    q = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                    if cost[i][j] is None or q < cost[i][j]:
                        cost[i][j], split[i][j] = q, k

        def chain(i: int, j: int) -> Tensor:
            return mats[i] if i == j else mm(chain(i, split[i][j]), chain(split[i][j] + 1, j))

        result = chain(0, n - 1)
    return result.view(out_shape)


# ---- the torch.* and Tensor forms of these -------------------------------------------------

_REMOVED = (
    "This function was deprecated since version 1.9 and is now removed. `torch.{0}` is deprecated in favor of "
    "`torch.linalg.{0}`."
)


def _det(input: Tensor) -> Tensor:  # noqa: A002
    _tensor_arg("det", "input", 1, input)
    return input._linalg_det()


def _logdet(input: Tensor) -> Tensor:  # noqa: A002
    """log det: NaN for a negative determinant (torch's: slogdet, then a where)."""
    from rgrad import where

    _tensor_arg("logdet", "input", 1, input)
    if input.dim() < 2:
        raise RuntimeError("logdet: The input tensor A must have at least 2 dimensions.")
    if input.shape[-1] != input.shape[-2]:
        raise RuntimeError(
            f"logdet: A must be batches of square matrices, but they are {input.shape[-2]} by {input.shape[-1]} matrices"
        )
    if not input.dtype.is_floating_point:
        raise NotImplementedError(
            f"logdet: Expected a floating point or complex tensor as input. Got {_type_name(input.dtype)}"
        )
    sign, logabsdet = input._linalg_slogdet()
    return where(sign == -1.0, math.nan, logabsdet)


def _slogdet(input: Tensor):  # noqa: A002
    from rgrad import return_types

    _tensor_arg("slogdet", "input", 1, input)
    return return_types.slogdet(*input._linalg_slogdet())


def _inverse(input: Tensor) -> Tensor:  # noqa: A002
    _tensor_arg("inverse", "input", 1, input)
    return input._linalg_inv_ex(True, "linalg.inv")[0]


def _cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:  # noqa: A002
    _tensor_arg("cholesky_solve", "input", 1, input)
    _tensor_arg("cholesky_solve", "input2", 2, input2)
    return _method("_cholesky_solve", input, input2, upper)


def _cholesky_inverse(input: Tensor, upper: bool = False) -> Tensor:  # noqa: A002
    _tensor_arg("cholesky_inverse", "input", 1, input)
    return input._cholesky_inverse(upper)


def _cholesky(input: Tensor, upper: bool = False) -> Tensor:  # noqa: A002
    raise RuntimeError(
        _REMOVED.format("cholesky") + "\n"
        "L = torch.cholesky(A) should be replaced with:\n"
        "L = torch.linalg.cholesky(A)\n"
        "U = torch.cholesky(A, upper=True) should be replaced with:\n"
        "U = torch.linalg.cholesky(A).mH"
    )


def _solve(input: Tensor, A: Tensor) -> Tensor:  # noqa: A002,N803
    raise RuntimeError(
        _REMOVED.format("solve") + " `torch.linalg.solve` has its arguments reversed and does not return the LU "
        "factorization.\n\n"
        "To get the LU factorization see `torch.lu`, which can be used with `torch.lu_solve` or `torch.lu_unpack`.\n"
        "X = torch.solve(B, A).solution should be replaced with:\n"
        "X = torch.linalg.solve(A, B)"
    )


def _matrix_power(input: Tensor, n: int) -> Tensor:  # noqa: A002
    _tensor_arg("matrix_power", "input", 1, input)
    return matrix_power(input, n)


def _matrix_exp(input: Tensor) -> Tensor:  # noqa: A002
    _tensor_arg("matrix_exp", "input", 1, input)
    return input._linalg_matrix_exp()


def _lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True, unpack_pivots: bool = True):  # noqa: N803
    """``(P, L, U)`` from ``lu_factor``'s packed factors and pivots (what is not unpacked
    is empty)."""
    from rgrad import return_types

    _tensor_arg("lu_unpack", "LU_data", 1, LU_data)
    _tensor_arg("lu_unpack", "LU_pivots", 2, LU_pivots)
    return return_types.lu_unpack(*LU_data._lu_unpack(LU_pivots, unpack_data, unpack_pivots))


_lu_warned = False


def _lu(A: Tensor, pivot: bool = True, get_infos: bool = False):  # noqa: N803
    """Deprecated: ``(LU, pivots)`` (and ``info`` with ``get_infos``), warning once."""
    import warnings

    global _lu_warned
    if not _lu_warned:
        _lu_warned = True
        warnings.warn(
            "torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will be "
            "removed in a future PyTorch release.\nLU, pivots = torch.lu(A, compute_pivots)\nshould be replaced "
            "with\nLU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info = torch.lu(A, "
            "compute_pivots, get_infos=True)\nshould be replaced with\nLU, pivots, info = "
            "torch.linalg.lu_factor_ex(A, compute_pivots)",
            UserWarning,
            stacklevel=2,
        )
    lu_, piv, info = A._linalg_lu_factor_ex(pivot, not get_infos, "torch.linalg.lu_factor")
    return (lu_, piv, info) if get_infos else (lu_, piv)


_chain_matmul_warned = False


def _chain_matmul(*matrices: Tensor) -> Tensor:
    """Deprecated: multi_dot of the arguments (one matrix: a clone), warning once."""
    import warnings

    global _chain_matmul_warned
    if not _chain_matmul_warned:
        _chain_matmul_warned = True
        warnings.warn(
            "torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
            "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
            "parameters.",
            UserWarning,
            stacklevel=2,
        )
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    if len(matrices) == 1:
        if matrices[0].dim() != 2:
            raise RuntimeError(f"chain_matmul(): Tensor dimension is {matrices[0].dim()}, expected 2 instead.")
        return matrices[0].clone()
    return multi_dot(matrices)


# ---- torch.linalg's compositions of other ops: diagonal, matmul, vander, tensorinv,
# tensorsolve (each records the nodes of the ops it is made of, as torch's does)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``A.diagonal(offset, dim1, dim2)``, with torch.linalg's defaults (the last two dims)."""
    _tensor_arg("linalg_diagonal", "A", 1, A)
    return A.diagonal(offset, dim1, dim2)


def matmul(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """``torch.matmul`` under its torch.linalg name."""
    _tensor_arg("linalg_matmul", "input", 1, input)
    _tensor_arg("linalg_matmul", "other", 2, other)
    return input.matmul(other)


def _int_arg(fname: str, name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{fname}(): argument '{name}' must be int, not {type(v).__name__}")
    return v


def vander(x: Tensor, *, N: int | None = None) -> Tensor:  # noqa: N803
    """The Vandermonde matrix of ``x`` (along its last dim): columns ``x**0 ... x**(N-1)``,
    as torch composes it (a row of ones and the cumulative product of ``x``)."""
    _tensor_arg("linalg_vander", "x", 1, x)
    if x.dtype == _C.bool:
        raise NotImplementedError("linalg.vander supports floating point, complex, and integer tensors, but got Bool")
    x_ = x.unsqueeze(-1) if x.dim() == 0 else x
    shape = list(x_.shape)
    n = shape[-1] if N is None else _int_arg("linalg_vander", "N", N)
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = x_.unsqueeze(-1).expand(*shape, n - 1).cumprod(-1)
    ones = powers.new_ones((*shape, 1))
    import rgrad  # (the module's cat: vmap batches it)

    return rgrad.cat([ones, powers], -1)


def _prod(sizes) -> int:
    return math.prod(sizes)


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of ``A`` as a multilinear map: ``tensordot(tensorinv(A, ind), A, ind)`` is
    the identity; ``A.shape[:ind]`` and ``A.shape[ind:]`` must hold as many elements."""
    _tensor_arg("linalg_tensorinv", "A", 1, A)
    ind = _int_arg("linalg_tensorinv", "ind", ind)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    head, tail = list(A.shape[:ind]), list(A.shape[ind:])
    n_head, n_tail = _prod(head), _prod(tail)
    if n_head != n_tail:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {n_tail} != {n_head}")
    return inv(A.reshape(n_head, n_tail)).reshape(*tail, *head)


def tensorsolve(A: Tensor, B: Tensor, dims=None) -> Tensor:
    """The ``X`` with ``tensordot(A, X, X.ndim) == B``: ``A``'s dims ``dims`` (moved last)
    and those after ``B.ndim`` are ``X``'s."""
    _tensor_arg("linalg_tensorsolve", "A", 1, A)
    _tensor_arg("linalg_tensorsolve", "B", 2, B)
    if dims is not None:
        dims = [dims] if isinstance(dims, int) else list(dims)
        n = A.dim()
        A = A.movedim(dims, list(range(n - len(dims), n)))
    result_shape = list(A.shape[B.dim():])
    n_result, n_other = _prod(result_shape), _prod(A.shape[:B.dim()])
    if n_result != n_other:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {n_result} != {n_other}")
    return solve(A.reshape(n_other, n_result), B.reshape(n_other)).reshape(*result_shape)


def _vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803
    """``torch.vander``: columns ``x**(N-1) ... x**0`` of a 1-D ``x`` (``increasing``: the other
    way), in ``x``'s dtype promoted with int64, as torch builds it."""
    _tensor_arg("vander", "x", 1, x)
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else _int_arg("vander", "N", N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dtype = x.dtype if x.dtype in (_C.float32, _C.float64) else _C.int64
    result = _C.ones((x.shape[0], n), dtype=dtype)
    if n > 1:
        result[:, 1:].copy_(x.unsqueeze(1))
        result[:, 1:].copy_(result[:, 1:].cumprod(1))
    return result if increasing else result.flip(1)


_lu_solve_warned = False


def _lu_solve(input: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:  # noqa: A002,N803
    """Deprecated: ``linalg.lu_solve(LU_data, LU_pivots, input)``, warning once."""
    import warnings

    global _lu_solve_warned
    if not _lu_solve_warned:
        _lu_solve_warned = True
        warnings.warn(
            "torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in a future PyTorch "
            "release.\nNote that torch.linalg.lu_solve has its arguments reversed.\nX = torch.lu_solve(B, LU, "
            "pivots)\nshould be replaced with\nX = torch.linalg.lu_solve(LU, pivots, B)",
            UserWarning,
            stacklevel=2,
        )
    return lu_solve(LU_data, LU_pivots, input)


# torch.* functions (rgrad.__init__ exports them) and the Tensor methods of the same names
FUNCTIONS = {
    "det": _det, "logdet": _logdet, "slogdet": _slogdet, "inverse": _inverse,
    "cholesky_solve": _cholesky_solve, "cholesky_inverse": _cholesky_inverse, "cholesky": _cholesky,
    "solve": _solve, "matrix_power": _matrix_power, "matrix_exp": _matrix_exp, "lu": _lu,
    "svd": _svd_fn, "qr": _qr_removed, "pinverse": _pinverse, "lu_solve": _lu_solve,
}
# torch.* functions without a Tensor method
TORCH_ONLY = {"chain_matmul": _chain_matmul, "lu_unpack": _lu_unpack, "nuclear_norm": _nuclear_norm,
              "vander": _vander}


def install() -> None:
    """The Tensor methods (and the same on vmap's BatchedTensor)."""
    from rgrad.func._batched_tensor import BatchedTensor

    for name, fn in FUNCTIONS.items():
        fn.__name__ = fn.__qualname__ = name
        setattr(Tensor, name, fn)
        setattr(BatchedTensor, name, fn)
