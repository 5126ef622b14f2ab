"""rgrad.autograd: reverse-mode automatic differentiation (torch.autograd's API)."""

from __future__ import annotations

import operator
import warnings
from collections.abc import Sequence

from rgrad import _C
from rgrad._C import Tensor
from rgrad.autograd import profiler  # noqa: F401  (rgrad.autograd.profiler, as torch's)
from rgrad.autograd.anomaly_mode import detect_anomaly, set_detect_anomaly
from rgrad.autograd.profiler_util import DeviceType  # noqa: F401
from rgrad.autograd.grad_mode import (
    enable_grad,
    enforce_grad_layout_policy,
    inference_mode,
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)

__all__ = [
    "backward",
    "grad",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "graph",
    "Function",
    "Variable",
    "function",
    "functional",
    "gradcheck",
    "gradgradcheck",
    "detect_anomaly",
    "set_detect_anomaly",
    "set_multithreading_enabled",
    "enforce_grad_layout_policy",
]

#: Returns True if multithreading is currently enabled.
is_multithreading_enabled = _C._is_multithreading_enabled


#: ``rgrad.func._vmap`` while a vmap runs in some thread (None otherwise): grad and backward
#: hand BatchedTensors to it
_vmap_support = None


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    if isinstance(x, (Tensor, graph.GradientEdge)):
        return (x,)
    return tuple(x)


def _out_meta(out) -> tuple:
    """(shape, dtype, requires_grad) of an output: a tensor, or a GradientEdge's node's
    output (which always wants a gradient)."""
    from rgrad._tensor import Size

    if isinstance(out, graph.GradientEdge):
        m = out.node._input_metadata[out.output_nr]
        return Size(m.shape), m.dtype, True
    return out.shape, out.dtype, out.requires_grad


def _make_grads(outputs: tuple, grads: tuple, is_grads_batched: bool = False) -> list:
    """Validates user-given output gradients and creates the implicit ones (torch's rules)."""
    from rgrad._tensor import Size

    new_grads = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        out_shape, out_dtype, out_requires_grad = _out_meta(out)
        if isinstance(g, Tensor):
            if g.shape != out_shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {Size(g.shape)!r} and output[{i}] has a "
                    f"shape of {Size(out_shape)!r}."
                )
            # (torch raises only where one of the two is complex, which rgrad has not, and
            # its engine casts each gradient to its output's dtype: here an integer or bool
            # one, the engine casting between floating dtypes itself)
            if not g.dtype.is_floating_point and out_dtype.is_floating_point:
                g = g.to(out_dtype)
            new_grads.append(g)
        elif g is None:
            if out_requires_grad:
                if Size(out_shape).numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out_dtype.is_floating_point:
                    raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {out_dtype}")
                dev = out._device_str if isinstance(out, Tensor) else None
                new_grads.append(_C.ones(tuple(out_shape), dtype=out_dtype, device=dev))
            else:
                new_grads.append(None)
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
    return new_grads


def _make_batched_grads(outputs: tuple, grads: tuple) -> tuple[list, int]:
    """``_make_grads`` for ``is_grads_batched=True`` (torch's checks and messages: each
    grad_output's sample 0 against its output; torch maps its implicit gradients over their
    dim 0 too, which no scalar output allows), and the batch size."""
    from rgrad._tensor import Size

    new_grads = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        out_shape, out_dtype, out_requires_grad = _out_meta(out)
        if isinstance(g, Tensor):
            first = g.select(0, 0)  # (torch reads grad[0]: its errors for a 0-dim or empty grad)
            if first.shape != out_shape:
                if isinstance(out, graph.GradientEdge):
                    raise RuntimeError("Batched grads are not supported with GradientEdge")
                raise RuntimeError(
                    "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the batch "
                    "dimension. The sizes of the remaining dimensions are expected to match the shape of "
                    f"corresponding output, but a mismatch was detected: grad_output[{i}] has a shape of "
                    f"{Size(first.shape[1:])!r} and output[{i}] has a shape of {Size(out_shape)!r}. If you only want "
                    "some tensors in `grad_output` to be considered batched, consider using vmap."
                )
            if g.dtype != out_dtype and out_dtype.is_floating_point:
                g = g.to(out_dtype)  # (torch's engine casts each gradient to its output's dtype)
            new_grads.append(g)
        elif g is None:
            if out_requires_grad:
                if Size(out_shape).numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if len(out_shape) == 0:
                    raise ValueError("vmap(vjp, in_dims=0, ...)(<inputs>): Got in_dim=0 for some input, but that input "
                                     "is a Tensor of dimensionality 0 so expected in_dim to satisfy 0 <= in_dim < 0.")
                raise RuntimeError(f"invalid gradient at index {i} - got {list(out_shape[1:])} but expected shape "
                                   f"compatible with {list(out_shape)}")
            new_grads.append(None)
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
    sizes = [g.shape[0] for g in new_grads if g is not None]
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return new_grads, (sizes[0] if sizes else 0)


def _warn_batched_fallbacks(names: list) -> None:
    """The performance warning of torch's vmap fallback, once per backward node that a
    batched backward pass ran once per sample (it has no batching rule)."""
    if names:
        from rgrad.func._batched_tensor import warn_fallback

        for name in names:
            warn_fallback(name, stacklevel=4, prefix="")


def _check_outputs(outputs: tuple, grads: list) -> None:
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if isinstance(out, graph.GradientEdge):
            continue
        if not out.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")


def backward(
    tensors,
    grad_tensors=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    grad_variables=None,
    inputs=None,
) -> None:
    """Computes the sum of gradients of given tensors with respect to graph leaves.

    Args:
        tensors: Tensors of which the derivative will be computed.
        grad_tensors: The "vector" in the vector-Jacobian product, one per tensor (None for scalars).
        retain_graph: Keep the graph's saved tensors for another backward (defaults to `create_graph`).
        create_graph: Record the backward pass so that higher-order derivatives can be taken.
        grad_variables: Deprecated alias of `grad_tensors`.
        inputs: Tensors to accumulate gradients into; by default every leaf of the graph.
    """
    if grad_variables is not None:
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.", FutureWarning, stacklevel=2)
        if grad_tensors is None:
            grad_tensors = grad_variables
        else:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both passed to `backward()`. "
                               "Please only use `grad_tensors`.")
    if inputs is not None and len(_as_tuple(inputs)) == 0:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    if _vmap_support is not None:
        _vmap_support.check_backward(tensors, grad_tensors, inputs)
    outputs = _as_tuple(tensors)
    for t in outputs:
        if not isinstance(t, (Tensor, graph.GradientEdge)):
            raise TypeError(f"backward(): tensors must be Tensors, not {type(t).__name__}")
    grads = _as_tuple(grad_tensors) if grad_tensors is not None else (None,) * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs")
    grads = _make_grads(outputs, grads)
    _check_outputs(outputs, grads)
    if retain_graph is None:
        retain_graph = create_graph
    retain_graph, create_graph = _c_bool(retain_graph), _c_bool(create_graph)
    if create_graph:
        _warn_create_graph_cycle()
    _C._run_backward(list(outputs), grads, retain_graph, create_graph, list(_as_tuple(inputs)), True, False)


def _c_bool(flag) -> bool:
    """A flag as torch's engine reads it (a C bool): an int-like value, never None."""
    return flag if isinstance(flag, bool) else operator.index(flag) != 0


_create_graph_warned = False


def _warn_create_graph_cycle() -> None:
    # torch warns once per process (TORCH_WARN_ONCE)
    global _create_graph_warned
    if not _create_graph_warned:
        _create_graph_warned = True
        warnings.warn(
            "Using backward() with create_graph=True will create a reference cycle between the parameter and its "
            "gradient which can cause a memory leak. We recommend using autograd.grad when creating the graph to "
            "avoid this. If you have to use this function, make sure to reset the .grad fields of your parameters to "
            "None after use to break the cycle and avoid the leak.",
            UserWarning,
            stacklevel=3,
        )


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple:
    """Computes and returns the sum of gradients of outputs with respect to the inputs.

    Args:
        outputs: Outputs of the differentiated function.
        inputs: Inputs w.r.t. which the gradient is returned (not accumulated into `.grad`).
        grad_outputs: The "vector" in the vector-Jacobian product, one per output.
        retain_graph: Keep the graph for another backward (defaults to `create_graph`).
        create_graph: Record the backward so that higher-order derivatives can be taken.
        only_inputs: Deprecated and ignored.
        allow_unused: If False, an input not used to compute the outputs is an error.
        is_grads_batched: The first dim of each grad_output is a batch dim: the result is
            the gradients of every sample, stacked (the same as a loop of ``grad`` calls with
            ``retain_graph=True``), computed in one batched backward pass.
        materialize_grads: Return zeros instead of None for unused inputs (implies allow_unused).

    Returns:
        A tuple with one gradient (or None) per input.
    """
    if _vmap_support is not None and not is_grads_batched:
        result = _vmap_support.batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                                            materialize_grads)
        if result is not NotImplemented:
            return result
    if is_grads_batched and _vmap_support is not None and _vmap_support.max_level(
            _as_tuple(outputs) + _as_tuple(inputs) + _as_tuple(grad_outputs)) >= 0:
        return _grads_batched_inside_vmap(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                                          materialize_grads)
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outs = _as_tuple(outputs)
    ins = _as_tuple(inputs)
    for t in (*outs, *ins):
        if not isinstance(t, (Tensor, graph.GradientEdge)):
            raise TypeError(f"grad(): expected Tensors, but got {type(t).__name__}")
    gouts = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outs)
    if len(gouts) != len(outs):
        raise RuntimeError(f"grad_outputs must be of the same length as outputs (got {len(gouts)} and {len(outs)})")
    if is_grads_batched:
        gouts, batch = _make_batched_grads(outs, gouts)
    else:
        gouts, batch = _make_grads(outs, gouts), None
    _check_outputs(outs, gouts)
    if retain_graph is None:
        retain_graph = create_graph
    if batch is None:
        result = _C._run_backward(list(outs), gouts, _c_bool(retain_graph), _c_bool(create_graph), list(ins), False,
                                  bool(allow_unused))
    else:
        result, looped = _C._run_backward_batched(list(outs), gouts, _c_bool(retain_graph), _c_bool(create_graph),
                                                  list(ins), bool(allow_unused), batch)
        _warn_batched_fallbacks(looped)
    if materialize_grads:
        if any(r is None and not isinstance(i, Tensor) for r, i in zip(result, ins)):
            raise RuntimeError("materialize_grads cannot be used when the given input is a GradientEdge")
        result = [g if g is not None else _C.zeros(i._shape, dtype=i.dtype) for g, i in zip(result, ins)]
    return tuple(result)


def _grads_batched_inside_vmap(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                               materialize_grads) -> tuple:
    """``is_grads_batched=True`` on BatchedTensors (inside a vmap): one more vmap level over the
    grad_outputs' dim 0, whose ``grad`` the vmap's autograd support runs."""
    from rgrad.func import vmap

    gouts = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(_as_tuple(outputs))
    unused: list = []

    def vjp(*gs):
        result = grad(outputs, inputs, gs, retain_graph=retain_graph, create_graph=create_graph,
                      allow_unused=allow_unused, materialize_grads=materialize_grads)
        unused[:] = [r is None for r in result]
        # (vmap returns tensors only: an unused input's None comes back after it)
        return tuple(_C.zeros(()) if r is None else r for r in result)

    result = vmap(vjp, in_dims=tuple(None if g is None else 0 for g in gouts))(*gouts)
    return tuple(None if u else r for r, u in zip(result, unused))


def _is_checkpoint_valid() -> bool:
    """Whether a reentrant checkpoint may run here: False inside a backward given
    ``inputs`` (``grad()``, ``backward(inputs=...)``)."""
    return _C._is_checkpoint_valid()


from rgrad.autograd import forward_ad, function, functional, graph  # noqa: E402,F401
from rgrad.autograd.function import Function  # noqa: E402
from rgrad.autograd.gradcheck import gradcheck, gradgradcheck  # noqa: E402
from rgrad.autograd.variable import Variable  # noqa: E402
