"""A small pytree library, the subset of ``torch.utils._pytree`` that ``rgrad.func`` needs.

A pytree is a nest of tuples, lists, dicts, ``OrderedDict``s and namedtuples; anything
else (tensors, numbers, ``None``, strings) is a leaf. ``tree_flatten`` gives the leaves in
order and a ``TreeSpec`` that ``tree_unflatten`` rebuilds the nest from. Specs compare,
print (``repr``) and pretty-print (``treespec_pprint``) as torch's do, so that error
messages quoting them read the same.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

__all__ = [
    "TreeSpec",
    "LeafSpec",
    "tree_flatten",
    "tree_unflatten",
    "tree_leaves",
    "tree_map",
    "treespec_pprint",
    "_broadcast_to_and_flatten",
]


class _NamedTupleMarker:
    """Stands for every namedtuple class as a spec's type (torch prints it as ``namedtuple``)."""


_NamedTupleMarker.__name__ = "namedtuple"


def _is_namedtuple(obj: Any) -> bool:
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields")


def _node_type(obj: Any) -> type | None:
    """The node kind of ``obj``, or None for a leaf."""
    if _is_namedtuple(obj):
        return _NamedTupleMarker
    cls = type(obj)
    if cls in (tuple, list, dict, OrderedDict):
        return cls
    return None


def _children_and_context(obj: Any, kind: type) -> tuple[list, Any]:
    if kind is _NamedTupleMarker:
        return list(obj), type(obj)
    if kind in (tuple, list):
        return list(obj), None
    keys = list(obj.keys())
    return [obj[k] for k in keys], keys


class TreeSpec:
    """The structure of a pytree: its node type, context (dict keys, namedtuple class) and children's specs."""

    def __init__(self, type: type, context: Any, children_specs: list) -> None:  # noqa: A002
        self.type = type
        self._context = context
        self._children = list(children_specs)
        self.num_children = len(self._children)
        self.num_leaves = sum(c.num_leaves for c in self._children)

    @property
    def context(self) -> Any:
        return self._context

    @property
    def children_specs(self) -> list:
        return self._children

    def is_leaf(self) -> bool:
        return False

    def __repr__(self, indent: int = 0) -> str:
        prefix = f"TreeSpec({self.type.__name__}, {self._context}, ["
        children = ""
        if self.num_children > 0:
            indent += 2
            children += self._children[0].__repr__(indent)
            children += "," if self.num_children > 1 else ""
            children += ",".join("\n" + " " * indent + child.__repr__(indent) for child in self._children[1:])
        return prefix + children + "])"

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return False
        return (self.type is other.type and self._context == other._context  # type: ignore[attr-defined]
                and self._children == other._children)  # type: ignore[attr-defined]

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def unflatten(self, leaves: list) -> Any:
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(
                f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers to a pytree that "
                f"holds {self.num_leaves} items ({self})."
            )
        return self._build(iter(leaves))

    def _build(self, it) -> Any:
        children = [c._build(it) for c in self._children]
        if self.type is _NamedTupleMarker:
            return self._context(*children)
        if self.type is tuple:
            return tuple(children)
        if self.type is list:
            return children
        return self.type(zip(self._context, children))


class LeafSpec(TreeSpec):
    """The spec of a leaf (printed ``*``)."""

    def __init__(self) -> None:
        self.type = None  # type: ignore[assignment]
        self._context = None
        self._children = []
        self.num_children = 0
        self.num_leaves = 1

    def is_leaf(self) -> bool:
        return True

    def __repr__(self, indent: int = 0) -> str:
        return "*"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LeafSpec)

    __hash__ = None  # type: ignore[assignment]

    def _build(self, it) -> Any:
        return next(it)


_LEAF = LeafSpec()


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, TreeSpec]:
    """The leaves of ``tree`` (depth first, left to right; dicts in insertion order) and its spec."""
    leaves: list = []
    spec = _flatten_into(tree, is_leaf, leaves)
    return leaves, spec


def _flatten_into(node: Any, is_leaf: Callable[[Any], bool] | None, leaves: list) -> TreeSpec:
    # (a module-level function, not a closure that calls itself: such a closure is a
    # reference cycle through its own cell, and it would keep ``leaves``, the caller's
    # tensors, alive until the garbage collector runs)
    kind = None if (is_leaf is not None and is_leaf(node)) else _node_type(node)
    if kind is None:
        leaves.append(node)
        return _LEAF
    children, context = _children_and_context(node, kind)
    return TreeSpec(kind, context, [_flatten_into(c, is_leaf, leaves) for c in children])


def tree_unflatten(leaves: Any, treespec: TreeSpec) -> Any:
    """Rebuilds the pytree that ``treespec`` describes with ``leaves`` as its leaves."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance of TreeSpec but got "
                        f"item of type {type(treespec)}.")
    return treespec.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """The leaves of ``tree``."""
    return tree_flatten(tree, is_leaf)[0]


def tree_map(func: Callable[..., Any], tree: Any, *rests: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``tree`` with every leaf replaced by ``func(leaf, *matching leaves of rests)``."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [tree_flatten(r, is_leaf)[0] for r in rests]
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others)], spec)


class _Asterisk(str):
    def __new__(cls) -> _Asterisk:
        return super().__new__(cls, "*")

    def __repr__(self) -> str:
        return "*"


_asterisk = _Asterisk()


def treespec_pprint(treespec: TreeSpec) -> str:
    """The pytree that ``treespec`` describes, printed with ``*`` for every leaf (torch's format)."""
    return repr(tree_unflatten([_asterisk] * treespec.num_leaves, treespec))


def _broadcast_to_and_flatten(tree: Any, treespec: TreeSpec) -> list | None:
    """``tree``, a prefix of the structure ``treespec`` describes, with each of its leaves
    repeated once per leaf of the subtree it stands for (flattened); None if ``tree`` is not
    such a prefix (torch's helper, used for vmap's in_dims and out_dims)."""
    out: list = []
    return out if _broadcast_into(tree, treespec, out) else None


def _broadcast_into(prefix: Any, spec: TreeSpec, out: list) -> bool:
    # (module level for the reason given at _flatten_into)
    kind = _node_type(prefix)
    if kind is None:
        out.extend([prefix] * spec.num_leaves)
        return True
    if spec.is_leaf() or kind is not spec.type:
        return False
    children, context = _children_and_context(prefix, kind)
    if len(children) != spec.num_children or context != spec.context:
        return False
    return all(_broadcast_into(c, s, out) for c, s in zip(children, spec.children_specs))
