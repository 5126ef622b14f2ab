"""Custom ``autograd.Function``s under ``rgrad.func.vmap``: torch.func's two ways.

A Function applied to BatchedTensors runs once for the whole batch, as in torch
(``torch/_functorch/autograd_function.py``):

- **its ``vmap`` staticmethod** (``vmap(info, in_dims, *args) -> (outputs, out_dims)``):
  called with the physical tensors (the batch at dim ``in_dims[i]``, ``None`` for an
  argument not batched at this level) and ``info = VmapInfo(batch_size, randomness)``;
  what it returns is wrapped as BatchedTensors at ``out_dims`` (an output that is one of
  the physical inputs returns the original argument, for ``mark_dirty``). The rule
  usually calls the Function itself on the physical tensors, which records one graph node
  for the whole batch (rgrad's BatchedTensors are views over ordinary tensors of the one
  autograd graph, so gradients through it need nothing more);
- **``generate_vmap_rule = True``**: a generated Function (``Vmapped<Name>``) is applied to
  the physical tensors; its forward runs the Function's ``forward`` under a vmap level of
  the batch (the forward's rgrad ops batch by their rules), ``setup_context`` runs under it
  too (so the shapes it keeps are one sample's; saved BatchedTensors are saved as their
  physical values and their batch dims remembered), and its ``backward`` and ``jvp`` run the
  Function's under such a level again, the gradients reduced to the inputs' shapes
  (``reductify``). One graph node for the batch, one call of each staticmethod.

Nested vmaps: the physical tensors may be BatchedTensors of an outer level; the rule's ops
(and the Function applied inside it) dispatch at that level in turn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from rgrad._C import Tensor
from rgrad.autograd.function import _bind_default_args
from rgrad.func._batched_tensor import BatchedTensor, batch_size, movedim, randomness_of, wrap_dim
from rgrad.utils._pytree import _broadcast_to_and_flatten, tree_flatten, tree_unflatten

__all__ = ["VmapInfo"]

_DOCS = "For more details, please see https://pytorch.org/docs/main/notes/extending.func.html"


class VmapInfo(NamedTuple):
    """What a Function's ``vmap`` staticmethod learns about the vmap it runs under."""

    batch_size: int
    randomness: str


def apply(cls: Any, level: int, args: tuple, kwargs: dict) -> Any:
    """``cls.apply(*args, **kwargs)`` with some argument batched at ``level`` (the highest)."""
    if not cls._setup_ctx_defined:
        raise RuntimeError(
            "In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, jacrev, ...), it "
            f"must override the setup_context staticmethod. {_DOCS}"
        )
    overridden = cls.vmap is not _function_base().vmap
    if cls.generate_vmap_rule:
        if overridden:
            raise RuntimeError(
                f"You tried to vmap over {cls.__name__}, but it has both generate_vmap_rule=True and an overridden "
                "vmap staticmethod. Please set generate_vmap_rule=False or delete the overridden vmap staticmethod "
                f"to avoid ambiguity. {_DOCS}"
            )
    elif not overridden:
        raise RuntimeError(
            f"You tried to vmap over {cls.__name__}, but it does not have vmap support. Please override and "
            f"implement the vmap staticmethod or set generate_vmap_rule=True. {_DOCS}"
        )
    # keyword arguments bound to forward's positions (as torch's apply does before vmap)
    args = _bind_default_args(cls.forward, args, kwargs)
    unwrapped, in_dims = _unwrap(args, level)
    n, randomness = batch_size(level), randomness_of(level)
    if cls.generate_vmap_rule:
        generated = _vmapified(cls, in_dims, n, randomness)
        outputs = generated.apply(*unwrapped)
        outputs, out_dims = _unpack_outputs(outputs)
        return _wrap(outputs, out_dims, level)
    result = cls.vmap(VmapInfo(n, randomness), in_dims, *unwrapped)
    if not isinstance(result, tuple):
        raise RuntimeError(_TWO_RETURNS + f"Got a {type(result)} instead")
    if len(result) != 2:
        raise RuntimeError(_TWO_RETURNS + f"Got {len(result)} returns instead")
    output, out_dims = result
    return _wrap_keeping_identity(output, out_dims, unwrapped, args, level)


_TWO_RETURNS = ("Expected the vmap staticmethod to have two returns, an output and out_dims with pytree structure "
                "compatible with the output. ")


def _function_base() -> Any:
    import rgrad.autograd

    return rgrad.autograd.Function


# ---------------------------------------------------------------------------------------
# Batched values and their physical tensors (torch's unwrap_batched / wrap_batched)
# ---------------------------------------------------------------------------------------

def _unwrap(values: Any, level: int) -> tuple[Any, Any]:
    """The physical values of the BatchedTensors of ``level`` in ``values`` (a pytree),
    and their batch dims (None: not batched at ``level``)."""
    flat, spec = tree_flatten(values)
    if not flat:
        return values, ()
    physical, dims = [], []
    for v in flat:
        if type(v) is BatchedTensor and v._level == level:
            # the batch where vmap's in_dims put it, for an input of the vmap (as torch
            # keeps it); first for the results of ops
            value = v._value
            dim = wrap_dim(v._bdim, value.dim())
            physical.append(movedim(value, 0, dim))
            dims.append(dim)
        else:
            physical.append(v)
            dims.append(None)
    return tree_unflatten(physical, spec), tree_unflatten(dims, spec)


def _batch(value: Any, dim: int | None, level: int) -> Any:
    if dim is None or not isinstance(value, Tensor):
        return value
    return BatchedTensor(movedim(value, dim, 0), level, dim)


def _wrap(values: Any, dims: Any, level: int) -> Any:
    """``values`` (a pytree) with each tensor whose dim in ``dims`` is not None made a
    BatchedTensor of ``level`` batched at that dim."""
    flat, spec = tree_flatten(values)
    flat_dims = _broadcast_to_and_flatten(dims, spec)
    if flat_dims is None:
        raise RuntimeError(f"vmap: batch dims {dims} do not match the structure of the values {spec}")
    return tree_unflatten([_batch(v, d, level) for v, d in zip(flat, flat_dims)], spec)


def _wrap_keeping_identity(output: Any, out_dims: Any, unwrapped: tuple, args: tuple, level: int) -> Any:
    """What the vmap staticmethod returned, batched at ``out_dims``; an output that is one
    of the physical inputs is the original argument (``mark_dirty`` checks identity)."""
    originals = {id(u): a for u, a in zip(tree_flatten(unwrapped)[0], tree_flatten(args)[0])}
    flat, spec = tree_flatten(output)
    flat_dims = _broadcast_to_and_flatten(out_dims, spec)
    if flat_dims is None:
        raise RuntimeError(
            "The autograd.Function's vmap staticmethod returned an incompatible (output, out_dims) tuple. "
            f"Expected out_dims={out_dims} to be compatible with the structure of `output`. out_dims has structure "
            f"{tree_flatten(out_dims)[1]} but output has structure {spec}. {_DOCS}"
        )
    result = []
    for v, d in zip(flat, flat_dims):
        if isinstance(v, Tensor) and id(v) in originals:
            result.append(originals[id(v)])
        else:
            result.append(_batch(v, d, level))
    return tree_unflatten(result, spec)


def _restore_vmap(func: Callable, in_dims: Any, n: int, randomness: str) -> Callable:
    """``func`` run under a new vmap level of ``n`` samples, its arguments batched at
    ``in_dims``; returns its outputs' physical values and their batch dims."""
    from rgrad.func._vmap import _VmapLevel

    def inner(*args: Any) -> tuple[Any, Any]:
        with _VmapLevel(n, randomness) as level:
            outputs = func(*_wrap(args, in_dims, level))
            return _unwrap(outputs, level)

    return inner


def _unpack_outputs(outputs: tuple) -> tuple[Any, Any]:
    """A generated Function's outputs ``(*outputs, out_dims)``: the outputs (one tensor
    when there is one) and their batch dims."""
    out_dims = outputs[-1]
    if isinstance(out_dims, tuple):
        return outputs[:-1], out_dims
    return outputs[0], out_dims


# ---------------------------------------------------------------------------------------
# generate_vmap_rule=True: the generated Function (torch's vmapify_autograd_function)
# ---------------------------------------------------------------------------------------

class _WrappedCtx:
    """The real ctx, with some attributes of its own (torch's WrappedCtx)."""

    _pt_reserved_attrs: tuple[str, ...] = ("_pt_reserved_attrs", "_pt_inner_ctx")

    def __init__(self, ctx: Any) -> None:
        if not isinstance(ctx, _WrappedCtx):
            reserved = type(self)._pt_reserved_attrs
            for name in reserved:
                if hasattr(ctx, name):
                    raise RuntimeError(
                        f"PyTorch reserves the {reserved} field on ctx. Please name your fields on ctx something else "
                        "to avoid name collision."
                    )
        object.__setattr__(self, "_pt_inner_ctx", ctx)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pt_inner_ctx, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in type(self)._pt_reserved_attrs:
            object.__setattr__(self, name, value)
            return
        setattr(self._pt_inner_ctx, name, value)


class _CtxWithSavedTensors(_WrappedCtx):
    """The ctx backward and jvp see: its saved tensors batched again."""

    _pt_reserved_attrs = ("_pt_new_saved_tensors", *_WrappedCtx._pt_reserved_attrs)

    def __init__(self, ctx: Any, saved: Any) -> None:
        super().__init__(ctx)
        self._pt_new_saved_tensors = saved

    @property
    def saved_tensors(self) -> Any:
        return self._pt_new_saved_tensors


class _CtxCustomSave(_WrappedCtx):
    """The ctx setup_context sees: saving BatchedTensors saves their physical values and
    remembers their batch dims."""

    _pt_reserved_attrs = ("_pt_saved_tensors_bdims", "_pt_saved_for_forward_bdims", "_pt_current_level",
                          *_WrappedCtx._pt_reserved_attrs)

    def __init__(self, ctx: Any, level: int) -> None:
        super().__init__(ctx)
        self._pt_saved_tensors_bdims = ()
        # (rgrad's jvp sees only what save_for_forward kept as ctx.saved_tensors)
        self._pt_saved_for_forward_bdims = ()
        self._pt_current_level = level

    def save_for_backward(self, *tensors: Any) -> None:
        physical, dims = _unwrap(tensors, self._pt_current_level)
        self._pt_inner_ctx.save_for_backward(*physical)
        self._pt_saved_tensors_bdims = dims

    def save_for_forward(self, *tensors: Any) -> None:
        physical, dims = _unwrap(tensors, self._pt_current_level)
        self._pt_inner_ctx.save_for_forward(*physical)
        self._pt_saved_for_forward_bdims = dims

    # (rgrad's ctx checks these by identity with the physical inputs and outputs)
    def mark_dirty(self, *tensors: Any) -> None:
        self._pt_inner_ctx.mark_dirty(*_unwrap(tensors, self._pt_current_level)[0])

    def mark_non_differentiable(self, *tensors: Any) -> None:
        self._pt_inner_ctx.mark_non_differentiable(*_unwrap(tensors, self._pt_current_level)[0])


def _current_level() -> int:
    from rgrad.func._batched_tensor import current_layers

    return current_layers()[-1].level


def _sum_to_size_batched(g: Tensor, shape: Any) -> Tensor:
    """``g`` (the batch first) summed, sample by sample, to one sample's ``shape``."""
    extra = g.dim() - 1 - len(shape)
    if extra > 0:
        g = g.sum(dim=tuple(range(1, 1 + extra)))
    dims = tuple(1 + i for i, s in enumerate(shape) if s == 1 and g.shape[1 + i] != 1)
    if dims:
        g = g.sum(dim=dims, keepdim=True)
    return g


def _reductify_leaf(g: Any, g_dim: int | None, in_dim: int | None, n: int, shape: Any) -> Any:
    """A gradient the Function's backward returned (batched at ``g_dim``) for an input
    batched at ``in_dim`` (torch's reductify_leaf): summed over the batch for an input
    that is not batched, expanded over it for one that is, reduced to the input's shape."""
    if g is None or (g_dim is None and in_dim is None):
        return g
    if in_dim is None:
        return g.sum(g_dim)
    if g_dim is None:
        g = g.unsqueeze(0).expand(n, *g.shape)
    else:
        g = movedim(g, g_dim, 0)
    if shape is not None:
        g = _sum_to_size_batched(g, shape)
    return movedim(g, 0, wrap_dim(in_dim, g.dim()))


def _reductify(grads: Any, grad_dims: Any, in_dims: Any, n: int, shapes: Any = None) -> tuple:
    if not isinstance(grads, tuple):
        grads = (grads,)
    if not isinstance(grad_dims, tuple):
        grad_dims = (grad_dims,)
    if not isinstance(in_dims, tuple):
        in_dims = (in_dims,)
    if shapes is None:
        shapes = (None,) * len(grads)
    return tuple(_reductify_leaf(g, gd, d, n, s) for g, gd, d, s in zip(grads, grad_dims, in_dims, shapes))


def _tangent_dims(in_dims: Any, tangents: tuple) -> Any:
    flat_dims, spec = tree_flatten(in_dims)
    flat_tangents = tree_flatten(tangents)[0]
    return tree_unflatten([None if t is None else d for d, t in zip(flat_dims, flat_tangents)], spec)


_generated: dict = {}


def _vmapified(cls: Any, in_dims: Any, n: int, randomness: str) -> Any:
    """The Function ``Vmapped<Name>`` that runs ``cls`` on a batch of ``n`` samples batched
    at ``in_dims`` (torch makes one per call; rgrad keeps one per such key, up to 256)."""
    key = (cls, in_dims, n, randomness)
    try:
        return _generated[key]
    except TypeError:  # in_dims with lists (list arguments): not a key
        return _make_vmapified(cls, in_dims, n, randomness)
    except KeyError:
        pass
    if len(_generated) >= 256:
        _generated.clear()
    made = _generated[key] = _make_vmapified(cls, in_dims, n, randomness)
    return made


def _stack_of(ctx: Any, name: str) -> dict:
    """A dict on the real ctx, one entry per generated Function that ran on it (nested
    vmaps run several generated Functions' staticmethods on one ctx)."""
    try:
        return getattr(ctx, name)
    except AttributeError:
        setattr(ctx, name, {})
        return getattr(ctx, name)


def _make_vmapified(cls: Any, in_dims: Any, n: int, randomness: str) -> Any:
    import rgrad.autograd

    def forward(*operands: Any) -> Any:
        outputs, out_dims = _restore_vmap(cls.forward, in_dims, n, randomness)(*operands)
        if isinstance(outputs, Tensor):
            return outputs, out_dims
        return (*outputs, out_dims)

    def setup_context(ctx: Any, inputs: tuple, outputs: Any) -> None:
        outputs, out_dims = _unpack_outputs(outputs)

        def inner(inputs: Any, outputs: Any) -> None:
            wrapped = _CtxCustomSave(ctx, _current_level())
            cls.setup_context(wrapped, inputs, outputs)
            # one sample's input shapes, to reduce the gradients backward returns to
            _stack_of(ctx, "_pt_input_shapes")[generated] = tuple(
                x.shape if isinstance(x, Tensor) else None for x in inputs)
            _stack_of(ctx, "_pt_saved_tensors_bdims_stack")[generated] = wrapped._pt_saved_tensors_bdims
            _stack_of(ctx, "_pt_saved_for_forward_bdims_stack")[generated] = wrapped._pt_saved_for_forward_bdims

        _restore_vmap(inner, (in_dims, out_dims), n, randomness)(inputs, outputs)
        _stack_of(ctx, "_pt_out_dims")[generated] = out_dims

    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        grads = grad_outputs[:-1]
        grad_dims = ctx._pt_out_dims[generated]
        if not isinstance(grad_dims, tuple):
            grad_dims = (grad_dims,)
        grad_dims = tuple(d if g is not None else None for g, d in zip(grads, grad_dims))

        def backward_no_context(inputs: Any) -> Any:
            saved, grads = inputs
            return cls.backward(_CtxWithSavedTensors(ctx, saved), *grads)

        grad_ins, grad_in_dims = _restore_vmap(
            backward_no_context, ((ctx._pt_saved_tensors_bdims_stack[generated], grad_dims),), n, randomness
        )((ctx.saved_tensors, grads))
        return _reductify(grad_ins, grad_in_dims, in_dims, n, ctx._pt_input_shapes[generated])

    def jvp(ctx: Any, *tangents: Any) -> Any:
        def jvp_no_context(saved: Any, tangents: Any) -> Any:
            return cls.jvp(_CtxWithSavedTensors(ctx, saved), *tangents)

        out_tangents, out_tangent_dims = _restore_vmap(
            jvp_no_context,
            (ctx._pt_saved_for_forward_bdims_stack[generated], _tangent_dims(in_dims, tangents)),
            n,
            randomness,
        )(ctx.saved_tensors, tangents)
        result = _reductify(out_tangents, out_tangent_dims, ctx._pt_out_dims[generated], n)
        return (*result, None)

    generated = type(
        f"Vmapped{cls.__name__}",
        (rgrad.autograd.Function,),
        {
            "forward": staticmethod(forward),
            "setup_context": staticmethod(setup_context),
            "backward": staticmethod(backward),
            "jvp": staticmethod(jvp),
            "generate_vmap_rule": True,
            "__module__": cls.__module__,
        },
    )
    return generated
