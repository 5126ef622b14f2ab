"""Extending autograd: subclass :class:`Function` to define an op by its forward and
backward, as in ``torch.autograd.Function``.

The work happens in Rust (``src/py/function.rs``): ``Exp.apply(x)`` is one call that
creates the ctx, runs ``forward`` with grad mode off and records one graph node whose
backward calls ``Exp.backward`` (on the engine's worker thread, holding the GIL only for
that call). The ctx object is also the node: ``y.grad_fn`` is an ``ExpBackward``.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any, Callable

from rgrad import _C
from rgrad._C import Tensor, _FunctionBase
from rgrad.autograd.grad_mode import no_grad

__all__ = [
    "BackwardCFunction",
    "Function",
    "FunctionCtx",
    "FunctionMeta",
    "InplaceFunction",
    "once_differentiable",
]


class FunctionCtx:
    """What ``ctx`` offers in ``forward``/``setup_context`` and ``backward``.

    The methods are implemented by the engine (``rgrad._C._FunctionBase``):

    - ``save_for_backward(*tensors)`` / ``saved_tensors``: tensors for backward, with the
      in-place check on unpacking (``saved_variables`` is the deprecated alias);
    - ``needs_input_grad``: a tuple of bools, one per positional input of forward;
    - ``mark_dirty(*tensors)``: inputs that forward modified in place;
    - ``mark_non_differentiable(*tensors)``: outputs that get no gradient;
    - ``set_materialize_grads(value)``: whether backward sees zeros (default) or None
      for outputs that received no gradient.

    Any other attribute set on ``ctx`` in forward can be read in backward.
    """

    def save_for_forward(self, *tensors: Any) -> None:
        """Keeps tensors for ``jvp``, which reads them as ``ctx.saved_tensors`` (as torch's)."""
        for tensor in tensors:
            if not (isinstance(tensor, _C.Tensor) or tensor is None):
                raise AssertionError(
                    "save_for_forward expects all arguments to be tensors; you should save non-tensors as "
                    "attributes on ctx."
                )
        self.saved_for_forward = tensors


class BackwardCFunction(_FunctionBase, FunctionCtx):
    """The type of a custom Function's ctx, which is also its graph node
    (``ExpBackward`` for ``class Exp(Function)``)."""

    def apply(self, *args: Any) -> Any:  # type: ignore[override]
        """Runs the Function's backward (or vjp) on output gradients ``args``."""
        return self._forward_cls._user_backward(self, *args)  # type: ignore[attr-defined]


def _both_backward_and_vjp(*args: Any) -> Any:
    raise RuntimeError(
        "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You should only implement one "
        "of them."
    )


class FunctionMeta(type):
    """Gives each Function subclass its ctx/node class ``<Name>Backward`` and resolves,
    once, which of ``backward``/``vjp`` is the user's and whether the new-style
    ``setup_context`` is used (so that ``apply`` does no lookups of its own)."""

    def __init__(cls, name: str, bases: tuple, attrs: dict) -> None:
        backward_cls = type(
            name + "Backward",
            (BackwardCFunction,),
            {"_forward_cls": cls, "__module__": "rgrad.autograd.function"},
        )
        type.__setattr__(cls, "_backward_cls", backward_cls)
        super().__init__(name, bases, attrs)
        cls._resolve()

    def _resolve(cls) -> None:
        base = globals().get("_SingleLevelFunction")
        if base is None:  # the base class itself
            type.__setattr__(cls, "_setup_ctx_defined", False)
            type.__setattr__(cls, "_user_backward", staticmethod(lambda ctx, *g: cls.backward(ctx, *g)))
            return
        backward, vjp = cls.backward, cls.vjp  # type: ignore[attr-defined]
        if backward is not base.backward and vjp is not base.vjp:
            user = _both_backward_and_vjp
        else:
            user = vjp if vjp is not base.vjp else backward
        type.__setattr__(cls, "_user_backward", staticmethod(user))
        type.__setattr__(cls, "_setup_ctx_defined", cls.setup_context is not base.setup_context)  # type: ignore[attr-defined]

    def __setattr__(cls, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name in ("backward", "vjp", "setup_context"):
            cls._resolve()


class _SingleLevelFunction(_FunctionBase, FunctionCtx, metaclass=FunctionMeta):
    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        """Computes the outputs. Either ``forward(ctx, *args, **kwargs)`` (ctx first), or,
        with ``setup_context`` defined, ``forward(*args, **kwargs)`` without ctx. Runs
        with grad mode off; may return a Tensor or a tuple (non-tensors allowed)."""
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> Any:
        """New style: saves what backward needs, given forward's inputs and output."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        """Given one gradient per forward output, returns one gradient per forward
        input (None where no gradient is needed or the input is not a tensor)."""
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom autograd.Function to use it with "
            "backward mode AD."
        )

    vjp = backward

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        """Forward-mode derivative: given one tangent per forward input (zeros for a tensor
        without one, None for a non-tensor), returns one tangent per output. Runs with
        forward AD off; ``ctx.saved_tensors`` gives what ``ctx.save_for_forward`` kept."""
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with forward mode AD."
        )


class Function(_SingleLevelFunction):
    r"""Base class to create custom autograd operations.

    Subclass it, implement the static ``forward`` and ``backward`` methods, and call the
    operation through the class's ``apply``::

        >>> class Exp(Function):
        >>>     @staticmethod
        >>>     def forward(ctx, i):
        >>>         result = i.exp()
        >>>         ctx.save_for_backward(result)
        >>>         return result
        >>>
        >>>     @staticmethod
        >>>     def backward(ctx, grad_output):
        >>>         result, = ctx.saved_tensors
        >>>         return grad_output * result
        >>>
        >>> output = Exp.apply(input)
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn(
            f"{self.__class__} should not be instantiated. Methods on autograd functions are all static, so you should "
            "invoke them on the class itself. Instantiating an autograd function will raise an error in a future "
            "version of PyTorch.",
            DeprecationWarning,
            stacklevel=2,
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use new-style autograd "
            "function with static forward method. (Example: https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
        )

    generate_vmap_rule = False

    @staticmethod
    def vmap(info: Any, in_dims: Any, *args: Any) -> Any:
        """The Function's batching rule under ``rgrad.func.vmap``: called with
        ``info`` (``batch_size``, ``randomness``), ``in_dims`` (per argument, the dim its
        batch is at, or None) and the arguments' batched tensors; returns
        ``(outputs, out_dims)``. Usually calls the Function itself on the batch. Instead
        of writing one, set ``generate_vmap_rule = True``: forward, setup_context,
        backward and jvp then run under vmap themselves."""
        raise NotImplementedError(
            "To use autograd.Function with vmap, you must either override the vmap staticmethod or set "
            "generate_vmap_rule=True."
        )


class InplaceFunction(Function):
    """A Function that may modify its inputs in place (``self.inplace``)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace


_signatures: dict = {}


def _bind_default_args(forward: Callable, args: tuple, kwargs: dict | None) -> tuple:
    """New-style Functions see their inputs with keyword and default arguments bound to
    positions, as torch does before ``setup_context``."""
    sig = _signatures.get(forward)
    if sig is None:
        sig = _signatures[forward] = inspect.signature(forward)
    bound = sig.bind(*args, **(kwargs or {}))
    bound.apply_defaults()
    return bound.args


_ONCE_DIFFERENTIABLE = "trying to differentiate twice a function that was marked with @once_differentiable"


def once_differentiable(fn: Callable) -> Callable:
    """Decorates a backward that is not itself differentiable: it runs under no_grad,
    and differentiating its result (double backward) raises an error instead of
    silently giving wrong second derivatives."""

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        with no_grad():
            outputs = fn(ctx, *args)
        if not _C.is_grad_enabled():
            return outputs
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        # Aliases that require grad, hanging off a node whose backward raises.
        idx = [i for i, o in enumerate(outs) if isinstance(o, Tensor)]
        fakes = [outs[i].detach().requires_grad_(outs[i].dtype.is_floating_point) for i in idx]
        wrapped = _C._delayed_error(_ONCE_DIFFERENTIABLE, fakes)
        result = list(outs)
        for i, w in zip(idx, wrapped):
            result[i] = w
        return result[0] if single else tuple(result)

    return wrapper


def _forward_ad_jvp(cls: Any, ctx: Any, args: tuple, result: Any) -> None:
    """A custom Function called on dual inputs: its outputs' tangents are what the user's
    ``jvp`` returns for the inputs' tangents (``apply`` calls this after forward)."""
    from rgrad.autograd import forward_ad

    tangents = []
    for a in args:
        if isinstance(a, _C.Tensor):
            t = forward_ad.unpack_dual(a).tangent
            tangents.append(t if t is not None or not a.is_floating_point() else a.new_zeros(a.shape))
        else:
            tangents.append(None)
    ctx._set_jvp_saved(tuple(getattr(ctx, "saved_for_forward", ())))
    try:
        with forward_ad._set_fwd_grad_enabled(False):
            out_tangents = cls.jvp(ctx, *tangents)
    finally:
        ctx._set_jvp_saved(None)
    outputs = result if isinstance(result, tuple) else (result,)
    if not isinstance(out_tangents, tuple):
        out_tangents = (out_tangents,)
    if len(out_tangents) != len(outputs):
        raise RuntimeError(
            f"jvp function returned an incorrect number of tangents (expected {len(outputs)}, "
            f"got {len(out_tangents)})"
        )
    for o, t in zip(outputs, out_tangents):
        if isinstance(o, _C.Tensor) and t is not None:
            _C._set_fw_grad(o, t)
