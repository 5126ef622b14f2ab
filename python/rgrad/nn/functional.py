"""torch.nn.functional's autograd-relevant functions."""

from rgrad import _C
from rgrad._C import Tensor, cross_entropy, linear, nll_loss
from rgrad._C import mse_loss as _mse_loss
from rgrad._composite import cosine_similarity  # noqa: F401  (torch.nn.functional's, the same function)

__all__ = ["relu", "sigmoid", "tanh", "softmax", "log_softmax", "mse_loss", "cross_entropy", "nll_loss", "linear",
           "cosine_similarity"]


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """Applies max(x, 0) elementwise."""
    return input.relu_() if inplace else input.relu()


def sigmoid(input: Tensor) -> Tensor:
    """Applies 1 / (1 + exp(-x)) elementwise."""
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:
    """Applies tanh elementwise."""
    return input.tanh()


def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """Mean squared error between `input` and `target` (broadcast, with torch's warning).

    Args:
        input: Predictions.
        target: Targets, broadcast against `input`.
        size_average: Deprecated (see `reduction`).
        reduce: Deprecated (see `reduction`).
        reduction: 'mean' (default), 'sum' or 'none'.

    Returns:
        The loss.
    """
    if size_average is not None or reduce is not None:
        reduction = "mean" if (size_average is None or size_average) and (reduce is None or reduce) else (
            "sum" if reduce is None or reduce else "none")
    if target.shape != input.shape:
        import warnings

        warnings.warn(
            f"Using a target size ({target.shape!r}) that is different to the input size ({input.shape!r}). "
            "This will likely lead to incorrect results due to broadcasting. Please ensure they have the same size.",
            stacklevel=2,
        )
    return _mse_loss(input, target, reduction)


def _softmax_dim(ndim: int) -> int:
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """Softmax along `dim` (torch's implicit-dim rule applies when dim is None)."""
    if dim is None:
        import warnings

        warnings.warn("Implicit dimension choice for softmax has been deprecated. Change the call to include dim=X "
                      "as an argument.", stacklevel=_stacklevel)
        dim = _softmax_dim(input.dim())
    return input.softmax(dim, dtype=dtype)


def log_softmax(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """Log of softmax along `dim`, computed stably."""
    if dim is None:
        import warnings

        warnings.warn("Implicit dimension choice for log_softmax has been deprecated. Change the call to include "
                      "dim=X as an argument.", stacklevel=_stacklevel)
        dim = _softmax_dim(input.dim())
    return input.log_softmax(dim, dtype=dtype)


# (helper-41) torch.nn.functional's pdist and pairwise_distance are torch's own functions
from rgrad._composite3 import pairwise_distance, pdist  # noqa: E402,F401

__all__ += ["pdist", "pairwise_distance"]

# (helper-45) the activations torch.nn.functional has, and kl_div (python/rgrad/_composite5.py)
from rgrad._composite5 import (  # noqa: E402,F401
    celu, celu_, elu, elu_, gelu, hardshrink, hardsigmoid, hardswish, hardtanh, hardtanh_, kl_div, leaky_relu,
    leaky_relu_, logsigmoid, mish, prelu, relu6, rrelu, rrelu_, selu, selu_, silu, softplus, softshrink, softsign,
    tanhshrink, threshold, threshold_,
)

__all__ += ["celu", "celu_", "elu", "elu_", "gelu", "hardshrink", "hardsigmoid", "hardswish", "hardtanh", "hardtanh_",
            "kl_div", "leaky_relu", "leaky_relu_", "logsigmoid", "mish", "prelu", "relu6", "rrelu", "rrelu_", "selu",
            "selu_", "silu", "softplus", "softshrink", "softsign", "tanhshrink", "threshold", "threshold_"]

del _C
