"""``rgrad.linalg``: torch.linalg's norms, cross product and vecdot.

``vector_norm`` and ``cross`` are native ops (LinalgVectorNormBackward0,
LinalgCrossBackward0); ``matrix_norm``, ``norm`` and ``vecdot`` are compositions of them, as
torch's are (so they record the same nodes). The norms that need singular values
(``'nuc'``, ``2``, ``-2``) raise NotImplementedError: rgrad has no SVD yet.
"""

from __future__ import annotations

import math

from rgrad import _C
from rgrad._C import Tensor

__all__ = ["cross", "vector_norm", "matrix_norm", "norm", "vecdot"]


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
    """The matrix norm of the matrices in the last two dims (or ``dim``): 'fro', or the max
    (min) absolute column sum (ord ±1) or row sum (ord ±inf)."""
    _tensor_arg("linalg_matrix_norm", "input", 1, A)
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
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
    if ord == "nuc" or ord in (2, -2):
        raise NotImplementedError(f"linalg.matrix_norm: ord={ord!r} needs singular values, which rgrad does not have yet")
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


_ = _C  # (the native ops are Tensor methods)
