"""Forward-mode AD, as ``torch.autograd.forward_ad``: dual tensors carry a tangent
through every op, which computes its output's tangent (its Jacobian-vector product)
as it runs. One dual level at a time, as in torch."""

from __future__ import annotations

from typing import Any, NamedTuple

from rgrad import _C
from rgrad._C import Tensor
from rgrad.autograd.grad_mode import _DecoratorContextManager

__all__ = [
    "UnpackedDualTensor",
    "enter_dual_level",
    "exit_dual_level",
    "make_dual",
    "unpack_dual",
    "dual_level",
]

_current_level = -1
#: ``rgrad.func._vmap`` while a vmap runs in some thread (None otherwise): make_dual and
#: unpack_dual hand BatchedTensors to it
_vmap_support = None


def enter_dual_level():
    r"""Enter a new forward grad level.

    This level can be used to make and unpack dual Tensors to compute
    forward gradients.

    This function also updates the current level that is used by default
    by the other functions in this API.
    """
    global _current_level
    new_level = _C._enter_dual_level()
    if new_level != _current_level + 1:
        raise RuntimeError(
            "Entering a new forward AD level but the current level is not valid. Make sure you did not modify it directly."
        )
    _current_level = new_level
    return new_level


def exit_dual_level(*, level=None):
    r"""Exit a forward grad level.

    This function deletes all the gradients associated with this
    level. Only deleting the latest entered level is allowed.

    This function also updates the current level that is used by default
    by the other functions in this API.
    """
    global _current_level
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. This is not supported."
        )
    _C._exit_dual_level(level=level)
    _current_level = level - 1


def make_dual(tensor, tangent, *, level=None):
    r"""Associate a tensor value with its tangent to create a "dual tensor" for forward AD gradient computation.

    The result is a new tensor aliased to :attr:`tensor` with :attr:`tangent` embedded
    as an attribute as-is if it has the same storage layout or copied otherwise.
    The tangent attribute can be recovered with :func:`unpack_dual`.

    This function is backward differentiable.
    """
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() first."
        )
    if _vmap_support is not None:
        result = _vmap_support.batched_make_dual(tensor, tangent, level)
        if result is not NotImplemented:
            return result
    if not tensor.is_floating_point():
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not tangent.is_floating_point():
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    return _C._make_dual(tensor, tangent, level=level)


class UnpackedDualTensor(NamedTuple):
    r"""Namedtuple returned by :func:`unpack_dual` containing the primal and tangent components of the dual tensor.

    See :func:`unpack_dual` for more details.
    """

    primal: Tensor
    tangent: Tensor | None


def unpack_dual(tensor, *, level=None):
    r"""Unpack a "dual tensor" to get both its Tensor value and its forward AD gradient.

    The result is a namedtuple ``(primal, tangent)`` where ``primal`` is a view of
    :attr:`tensor`'s primal and ``tangent`` is :attr:`tensor`'s tangent as-is.
    Neither of these tensors can be dual tensor of level :attr:`level`.

    This function is backward differentiable.
    """
    if level is None:
        level = _current_level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    if _vmap_support is not None:
        result = _vmap_support.batched_unpack_dual(tensor, level)
        if result is not NotImplemented:
            return result
    primal, dual = _C._unpack_dual(tensor, level=level)
    return UnpackedDualTensor(primal, dual)


class dual_level(_DecoratorContextManager):  # noqa: N801
    r"""Context-manager for forward AD, where all forward AD computation must occur within the ``dual_level`` context.

    Only a single forward AD level is supported, as in torch. To compute higher-order
    forward grads, one can use :func:`rgrad.func.jvp`.
    """

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        exit_dual_level()


_is_fwd_grad_enabled = _C._is_fwd_grad_enabled


class _set_fwd_grad_enabled(_DecoratorContextManager):  # noqa: N801
    def __init__(self, mode: bool) -> None:
        self.prev = _is_fwd_grad_enabled()
        _C._set_fwd_grad_enabled(mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        _C._set_fwd_grad_enabled(self.prev)
