"""rgrad: torch.autograd rebuilt on a Rust core.

Autograd code written for PyTorch runs with ``import rgrad as torch``.
"""

import builtins

from rgrad import _C
from rgrad._C import (
    Tensor,
    arange,
    cat,
    empty,
    eye,
    full,
    get_num_threads,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    is_grad_enabled,
    is_inference_mode_enabled,
    linspace,
    ones,
    multinomial,
    rand,
    randn,
    randperm,
    set_num_threads,
    stack,
    where,
    zeros,
)
from rgrad._C import bool as bool  # noqa: A001  (torch exports these names too)
from rgrad._C import dtype, float32, float64, int64
from rgrad import _tensor  # noqa: F401  (installs the Python-side Tensor methods)
from rgrad._ops_b import (  # noqa: E402
    argsort, argwhere, cummax, cummin, index_add, index_copy, index_fill, kthvalue, logcumsumexp, masked_select,
    median, mode, msort, nanmedian, nonzero, scatter, scatter_add, scatter_reduce, sort, take_along_dim, topk,
)
from rgrad._tensor import (
    Size,
    layout,
    strided,
    sparse_coo,
    sparse_csr,
    sparse_csc,
    sparse_bsr,
    sparse_bsc,
    jagged,
    bernoulli,
    device,
    from_numpy,
    get_default_device,
    set_default_device,
    full_like,
    normal,
    ones_like,
    rand_like,
    randint,
    randint_like,
    randn_like,
    zeros_like,
)
from rgrad.random import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)
from rgrad import autograd, backends, cuda, nn, profiler, random, return_types, utils  # noqa: F401
from rgrad._C import OutOfMemoryError  # noqa: F401
from rgrad.cuda import AcceleratorError  # noqa: F401
from rgrad import func  # noqa: F401,E402  (rgrad.func, as torch.func)
from rgrad import linalg  # noqa: F401,E402  (rgrad.linalg, as torch.linalg)
from rgrad.func import vmap  # noqa: E402  (torch.vmap is torch.func.vmap)
from rgrad._legacy import BoolTensor, DoubleTensor, FloatTensor, LongTensor
from rgrad.autograd.anomaly_mode import set_anomaly_enabled
from rgrad.autograd.grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from rgrad._replay import CompiledStep, compile_step

float = float32  # noqa: A001
double = float64
long = int64


def set_default_dtype(d) -> None:
    """Sets the default float dtype (float32 or float64): the dtype of tensors made from
    Python floats, of factories (``zeros``, ``rand``, ``linspace``...) without ``dtype=``, and
    of integers promoted to float (``int_tensor / 2``, ``int_tensor.sqrt()``). Process-wide,
    as torch's."""
    if not isinstance(d, dtype):
        raise TypeError("invalid dtype object: only floating-point types are supported as the default type")
    _C._set_default_float(d)


def get_default_dtype() -> dtype:
    """The default float dtype (``rgrad.float32`` unless ``set_default_dtype`` chose another)."""
    return float64 if _C._default_float_is_f64() else float32


__version__ = "0.1.0"

# Function forms of Tensor methods: the method descriptors themselves, so that
# ``rgrad.exp(x)`` costs exactly what ``x.exp()`` costs.
_METHOD_FUNCTIONS = (
    "add sub mul div "
    "logical_not logical_and logical_or clamp clip sum mean prod var std norm amax amin argmax "
    "argmin logsumexp softmax log_softmax matmul mm addmm bmm mv dot outer t transpose permute reshape flatten squeeze "
    "unsqueeze gather index_select masked_fill eq ne lt le gt ge detach clone split chunk unbind narrow select "
    "numel max min remainder fmod floor_divide all any isnan isinf isfinite isclose allclose equal "
    "flip fliplr flipud roll rot90 tril triu diagonal diag_embed diag trace cumsum cumprod "
    "addcmul addcdiv lerp addr nan_to_num nan_to_num_ nansum"
).split() + list(_C._UNARY_OPS)  # the op table's unary ops
for _name in _METHOD_FUNCTIONS:
    globals()[_name] = getattr(Tensor, _name)
# the binary op table's functions take a number for an operand where torch does
_BINARY_FUNCTIONS = (*_C._BINARY_OPS, "polygamma")
for _name in _BINARY_FUNCTIONS:
    globals()[_name] = getattr(_C, _name)
del _name

sub = Tensor.sub
subtract = Tensor.sub
multiply = Tensor.mul
divide = Tensor.div
true_divide = Tensor.div
negative = Tensor.neg
absolute = Tensor.abs
concat = cat
concatenate = cat


def tensor(data, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Constructs a tensor with no autograd history by copying `data`.

    Args:
        data: A number, a (nested) list or tuple of numbers, a NumPy array, or a Tensor.
        dtype: The desired dtype (inferred from the data by default).
        device: Where the tensor is made (the CPU by default).
        requires_grad: Whether autograd records operations on the result.

    Returns:
        A new tensor.
    """
    if type(data).__module__ == "numpy" and hasattr(data, "__array_interface__"):
        import numpy as np

        t = _tensor._copy_from_numpy(np.asarray(data))
        if dtype is not None:
            t = t.to(dtype)
        if device is not None:
            t = t.to(device)
        if requires_grad:
            t.requires_grad_()
        return t
    return _C.tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


def pow(input, exponent) -> Tensor:  # noqa: A001
    """Raises `input` to the power `exponent` (either may be a number)."""
    if isinstance(input, Tensor):
        return input.pow(exponent)
    if isinstance(exponent, Tensor):
        return exponent.__rpow__(input)
    raise TypeError(f"pow(): expected a Tensor, got {type(input).__name__} and {type(exponent).__name__}")


def is_tensor(obj) -> "builtins.bool":
    """Returns True if `obj` is an rgrad tensor."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    """Returns the number of elements of `input`."""
    return input.numel()


def square(input: Tensor) -> Tensor:
    """Returns a new tensor with the square of the elements of `input`.

    Args:
        input: The input tensor.

    Returns:
        ``input ** 2`` (as torch, through pow: PowBackward0, and a bool input gives int64).
    """
    return input.pow(2)


from rgrad.utils.dlpack import from_dlpack  # noqa: E402  (needs the names above)
from rgrad import _composite  # noqa: E402
from rgrad._composite import (  # noqa: E402,F401  (torch's composite functions)
    atleast_1d, atleast_2d, atleast_3d, broadcast_to, cartesian_prod, column_stack, diff, dsplit, dstack,
    einsum, hsplit, hstack, inner, kron, meshgrid, moveaxis, movedim, ravel, row_stack, swapaxes, swapdims,
    tensor_split, tensordot, tile, unflatten, vsplit, vstack, clamp_min, clamp_max,
    clamp_min_, clamp_max_, nanmean, count_nonzero, vdot, addmv, addmv_,
    baddbmm, addbmm, logit, logit_, var_mean, std_mean, cosine_similarity, broadcast_tensors,
    float_power, signbit, cross, aminmax, dist,
)

_composite.install()

__all__ = [
    "CompiledStep", "compile_step",
    "Tensor", "Size", "dtype", "device", "layout", "strided", "sparse_coo", "sparse_csr", "sparse_csc",
    "sparse_bsr", "sparse_bsc", "jagged", "get_default_device", "set_default_device", "float32", "float64", "int64", "bool", "float", "double", "long",
    "tensor", "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "rand", "randn", "randint",
    "rand_like", "randn_like", "randint_like", "randperm", "bernoulli", "multinomial", "normal", "Generator",
    "default_generator", "seed", "initial_seed", "get_rng_state", "set_rng_state",
    "arange", "linspace", "eye", "manual_seed", "from_numpy", "from_dlpack", "cat", "concat", "stack",
    "where", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
    "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled",
    "is_inference_mode_enabled", "set_num_threads", "get_num_threads", "set_default_dtype", "get_default_dtype", "autograd", "func", "linalg", "vmap", "nn", "is_tensor",
    "square", "pow",
    "sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode", "scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy",
    "index_fill", "masked_select", "nonzero", "argwhere", "take_along_dim", "cummax", "cummin", "logcumsumexp",
    "FloatTensor", "DoubleTensor", "LongTensor", "BoolTensor",
    *_METHOD_FUNCTIONS, *_BINARY_FUNCTIONS, *_composite.__all__,
    "negative", "absolute", "subtract", "multiply", "divide", "true_divide",
]

from rgrad import _aliases  # noqa: E402
from rgrad._aliases import *  # noqa: E402,F401,F403  (torch's aliases, in-place function forms, queries)

_aliases.install()
__all__ += _aliases.__all__

from rgrad import _composite2  # noqa: E402
from rgrad._composite2 import *  # noqa: E402,F401,F403  (more of torch's composite functions)

_composite2.install()
__all__ += _composite2.__all__

from rgrad import _composite3  # noqa: E402
from rgrad._composite3 import *  # noqa: E402,F401,F403  (distances and searches: cdist, pdist, searchsorted, ...)

_composite3.install()
__all__ += _composite3.__all__

from rgrad import _statistics  # noqa: E402
from rgrad._statistics import *  # noqa: E402,F401,F403  (quantile, nanquantile)

_statistics.install()
__all__ += _statistics.__all__

from rgrad import _composite4  # noqa: E402
from rgrad._composite4 import *  # noqa: E402,F401,F403  (views, scatters, copies: select_scatter, put, ...)

_composite4.install()
__all__ += _composite4.__all__

# (helper-45) activations, special functions, kl_div, gradient, windows, histogram
from rgrad import _composite5  # noqa: E402
from rgrad._composite5 import *  # noqa: E402,F401,F403

_composite5.install()
__all__ += _composite5.__all__
kl_div = _composite5._TORCH_ONLY["kl_div"]  # (torch.kl_div takes the reduction as an enum)
from rgrad import special  # noqa: E402,F401  (rgrad.special, as torch.special: its Bessel and gamma functions)

# torch.det, logdet, slogdet, inverse, cholesky_solve, ... (rgrad.linalg's ops) and their Tensor methods
globals().update(linalg.FUNCTIONS)
globals().update(linalg.TORCH_ONLY)
linalg.install()
__all__ += [*linalg.FUNCTIONS, *linalg.TORCH_ONLY]

# (helper-46) triangular_solve, geqrf, orgqr, ormqr (and the removed lstsq), Tensor.fill_diagonal_
from rgrad import _linalg_more  # noqa: E402

globals().update(_linalg_more.FUNCTIONS)
_linalg_more.install()
__all__ += list(_linalg_more.FUNCTIONS)
