"""torch.nn.functional's autograd-relevant functions."""

from rgrad import _C
from rgrad._C import Tensor, cross_entropy, linear, mse_loss, nll_loss

__all__ = ["relu", "sigmoid", "tanh", "softmax", "log_softmax", "mse_loss", "cross_entropy", "nll_loss", "linear"]


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """Applies max(x, 0) elementwise."""
    return input.relu_() if inplace else input.relu()


def sigmoid(input: Tensor) -> Tensor:
    """Applies 1 / (1 + exp(-x)) elementwise."""
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:
    """Applies tanh elementwise."""
    return input.tanh()


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


del _C
