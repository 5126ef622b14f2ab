"""Graph node types, as exposed by ``tensor.grad_fn``."""

from rgrad._C import AccumulateGrad, Node  # noqa: F401
