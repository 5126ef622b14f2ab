"""Graph node types, as exposed by ``tensor.grad_fn``."""

from rgrad._C import AccumulateGrad, Node  # noqa: F401

_node_classes: dict = {}


def _node_class(name: str) -> type:
    """The Node subclass named after an op (``MulBackward0``), created on first use."""
    cls = _node_classes.get(name)
    if cls is None:
        short = name.rsplit("::", 1)[-1]  # torch's C++ nodes are types named without namespace
        cls = _node_classes[name] = type(short, (Node,), {"__slots__": (), "__module__": "rgrad.autograd.graph"})
    return cls
