"""``rgrad.linalg``: torch.linalg's norms, cross product, vecdot and spectral decompositions.

``vector_norm`` and ``cross`` are native ops (LinalgVectorNormBackward0,
LinalgCrossBackward0); ``matrix_norm``, ``norm`` and ``vecdot`` are compositions of them, as
torch's are (so they record the same nodes). ``eigh`` / ``eigvalsh``, ``svd`` / ``svdvals``
and ``qr`` are native ops (LinalgEighBackward0, LinalgSvdBackward0, LinalgQrBackward0,
computed in float64 on the host); the norms ``'nuc'``, ``2`` and ``-2``, ``matrix_rank``
and ``cond`` are torch's compositions of ``svdvals`` (and ``eigvalsh``). The torch-level
forms (``torch.svd``, ``Tensor.svd``, ``torch.nuclear_norm``; ``torch.qr``, which torch
2.15 has removed and which raises as torch's) are here too, installed by ``install``.
"""

from __future__ import annotations

import math

from rgrad import _C
from rgrad._C import Tensor

__all__ = [
    "cross", "vector_norm", "matrix_norm", "norm", "vecdot", "eigh", "eigvalsh", "svd", "svdvals", "qr",
    "matrix_rank", "cond", "pinv",
]


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
    """The condition number of ``A`` in norm ``p``: for p None / 2 / -2 the ratio of the
    extreme singular values (torch's ``svdvals`` composition: S[..., :1] / S[..., -1:]
    for 2, the inverse for -2, squeezed); other ``p`` need a matrix inverse."""
    _tensor_arg("linalg_cond", "input", 1, A)
    _no_out("linalg_cond", out)
    if A.dim() < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    if p is None or (not isinstance(p, str) and p in (2, -2)):
        S = svdvals(A)
        k = S.shape[-1]
        if p == -2:
            r = S.narrow(-1, k - 1, 1) / S.narrow(-1, 0, 1)
        else:
            r = S.narrow(-1, 0, 1) / S.narrow(-1, k - 1, 1)
        return r.squeeze(-1)
    raise NotImplementedError(f"linalg.cond: p={p!r} needs a matrix inverse (rgrad.linalg.inv), not available here yet")


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


def install() -> None:
    """``rgrad.svd`` / ``rgrad.qr`` / ``rgrad.nuclear_norm`` / ``rgrad.pinverse`` and the
    Tensor methods ``svd``, ``qr`` and ``pinverse`` (and the same on vmap's BatchedTensor)."""
    import rgrad
    from rgrad.func._batched_tensor import BatchedTensor

    for name, f in (("svd", _svd_fn), ("qr", _qr_removed), ("pinverse", _pinverse)):
        f.__name__ = name
        setattr(Tensor, name, f)
        setattr(BatchedTensor, name, f)
    _nuclear_norm.__name__ = "nuclear_norm"
    rgrad.svd = _svd_fn
    rgrad.qr = _qr_removed
    rgrad.nuclear_norm = _nuclear_norm
    rgrad.pinverse = _pinverse


_ = _C  # (the native ops are Tensor methods)
