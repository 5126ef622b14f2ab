"""``rgrad.func.vmap``, torch.func's vectorizing map, in pure Python.

``vmap(func)(*args)`` wraps the batched inputs in ``BatchedTensor``s (see
``_batched_tensor.py``: the batch dim is moved to dim 0 of a physical value with a view),
runs ``func`` once on them, and unwraps the outputs (the batch dim moved to ``out_dims``;
an output that does not depend on the batch is expanded, a stride-0 view). Ops on
BatchedTensors run their batching rule (``_batching.py``) on the physical values, or a
loop over the batch where an op has no rule, with torch's warning.

**Function forms.** ``rgrad.exp`` is the method descriptor ``Tensor.exp`` (a Python wrapper
would cost 180 ns of a 320 ns op), which refuses a BatchedTensor. While at least one vmap
runs in any thread (a counter under a lock), dispatching wrappers replace the function
forms in the ``rgrad`` namespace (``_METHOD_FUNCTIONS``, ``_BINARY_FUNCTIONS``, their
aliases, cat/stack/where, the ``*_like`` factories, the random functions),
``rgrad.nn.functional``'s native functions, and the Tensor methods that take another tensor
(so that ``plain.add(batched)``, ``plain == batched``, ``plain[batched_index]`` and in-place
writes into a plain tensor dispatch, the last raising torch's error); the originals are put
back when the counter returns to 0, so with no vmap running nothing costs anything. A
wrapper checks its arguments for BatchedTensors and otherwise calls the original, so other
threads keep their results while one thread runs a vmap (only a few hundred ns slower).
Limitation: a function object taken before the vmap started (``from rgrad import exp``,
``f = rgrad.exp``) is the method descriptor, and raises a TypeError on a BatchedTensor (an
error, never a wrong number); call ``rgrad.exp(x)`` or ``x.exp()`` inside vmapped code. The
function given to ``vmap`` itself or to a transform (``vmap(rgrad.exp)``,
``jacfwd(rgrad.sin)``) is looked up by name when it runs (``_callable``).

**Autograd.** rgrad has no functorch levels: the physical tensors are ordinary tensors of
the one autograd graph, and a BatchedTensor's ``requires_grad`` / ``grad_fn`` / ``is_leaf``
are its physical value's (torch's BatchedTensor reports them at the vmap level instead).
``grad(f)`` inside vmap (``vmap(grad(f), in_dims=(None, 0))``) gets per-sample gradients
because the transforms first *materialize* each input to differentiate at every active
vmap level it is not batched at (a stride-0 expand wrapped as a BatchedTensor), so that
each sample has its own leaf; ``rgrad.autograd.grad`` on BatchedTensors differentiates the
physical outputs w.r.t. the physical inputs (grad_outputs expanded to the physical shape)
and rewraps the results (an input not batched where the outputs are gets its per-sample
gradients by a loop of backward passes; plain outputs and inputs with batched
grad_outputs, ``vmap(vjp)``, are one batched backward pass, ``is_grads_batched``, and so are
grad_outputs batched at the innermost level with outputs and inputs batched at the same
outer levels, ``vmap(jacrev(f))``, outside forward AD). ``grad(vmap(f))`` is ordinary autograd on the
physical tensors. Forward AD: ``make_dual`` / ``unpack_dual`` on BatchedTensors make and read
physical duals. ``Tensor.backward()`` on a BatchedTensor raises torch's error (torch does
not support backward() inside its transforms).
"""

from __future__ import annotations

import functools
import threading
import types
from collections.abc import Callable
from typing import Any

import rgrad
from rgrad._C import Tensor
from rgrad.func import _batching
from rgrad.func._batched_tensor import (
    _BACKWARD_ERROR,
    BatchedTensor,
    batch_size,
    current_layers,
    dispatch,
    max_level,
    movedim,
    pop_layer,
    push_layer,
    wrap_dim,
)
from rgrad.func._batching import RANDOM_OPS, random_entry
from rgrad.utils._pytree import _broadcast_to_and_flatten, tree_flatten, tree_unflatten

__all__ = ["vmap"]

BT = BatchedTensor


# ---------------------------------------------------------------------------------------
# torch.func.vmap's argument processing (torch/_functorch/vmap.py, same messages)
# ---------------------------------------------------------------------------------------

def _get_name(func: Callable) -> str:
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_get_name(func.func)}, ...)"
    return repr(func)


def _check_randomness_arg(randomness: str) -> None:
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")


def _validate_and_get_batch_size(flat_in_dims: list, flat_args: list) -> int:
    sizes = [arg.size(in_dim) for in_dim, arg in zip(flat_in_dims, flat_args) if in_dim is not None]
    if len(sizes) == 0:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(size != sizes[0] for size in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0]


def _process_batched_inputs(in_dims: Any, args: tuple, func: Callable) -> tuple:
    name = _get_name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying "
                         "to vmap over a function with no inputs. The latter is unsupported.")
    flat_args, args_spec = tree_flatten(args)
    flat_in_dims = _broadcast_to_and_flatten(in_dims, args_spec)
    if flat_in_dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but inputs has "
                         f"structure {args_spec}.")
    for i, (arg, in_dim) in enumerate(zip(flat_args, flat_in_dims)):
        if not isinstance(in_dim, int) and in_dim is not None:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an input but "
                             "in_dim must be either an integer dimension or None.")
        if isinstance(in_dim, int) and not isinstance(arg, Tensor):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an input but "
                             f"the input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, please use "
                             "None as the respective in_dim")
        if in_dim is not None and (in_dim < -arg.dim() or in_dim >= arg.dim()):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for some input, "
                             f"but that input is a Tensor of dimensionality {arg.dim()} so expected in_dim to satisfy "
                             f"-{arg.dim()} <= in_dim < {arg.dim()}.")
        if in_dim is not None and in_dim < 0:
            flat_in_dims[i] = in_dim % arg.dim()
    return _validate_and_get_batch_size(flat_in_dims, flat_args), flat_in_dims, flat_args, args_spec


def _check_out_dims_is_int_or_int_pytree(out_dims: Any, func: Callable) -> None:
    if isinstance(out_dims, int):
        return
    for x in tree_flatten(out_dims)[0]:
        if not (isinstance(x, int) or x is None):
            raise ValueError(f"vmap({_get_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or "
                             "a python collection of ints representing where in the outputs the vmapped dimension "
                             "should appear.")


# ---------------------------------------------------------------------------------------
# Wrapping and unwrapping
# ---------------------------------------------------------------------------------------

def _add_batch_dim(arg: Any, in_dim: int, level: int) -> BatchedTensor:
    return BT(movedim(arg, in_dim, 0), level, in_dim)


def _remove_batch_dim(out: Any, level: int, n: int, out_dim: int) -> Any:
    if type(out) is BT and out._level == level:
        value = out._value
        return movedim(value, 0, wrap_dim(out_dim, value.dim()))
    d = wrap_dim(out_dim, out.dim() + 1)
    shape = list(out.shape)
    shape.insert(d, n)
    return out.unsqueeze(d).expand(*shape)


def _maybe_remove_batch_dim(name: str, out: Any, level: int, n: int, out_dim: Any) -> Any:
    if out_dim is None:
        if type(out) is BT and out._level == level:
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
        return out
    if not isinstance(out, Tensor):
        raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(out)}. Did you mean "
                         "to set out_dims= to None for output?")
    return _remove_batch_dim(out, level, n, out_dim)


def _unwrap_batched(outputs: Any, out_dims: Any, level: int, n: int, func: Callable) -> Any:
    flat_outputs, output_spec = tree_flatten(outputs)

    def incompatible_error() -> None:
        raise ValueError(f"vmap({_get_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible "
                         f"with the structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but "
                         f"outputs has structure {output_spec}.")

    if isinstance(outputs, Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            flat_out_dims = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            flat_out_dims = list(out_dims)
        else:
            incompatible_error()
    else:
        flat_out_dims = _broadcast_to_and_flatten(out_dims, output_spec)
        if flat_out_dims is None:
            incompatible_error()
    name = _get_name(func)
    return tree_unflatten([_maybe_remove_batch_dim(name, out, level, n, d)
                           for out, d in zip(flat_outputs, flat_out_dims)], output_spec)


class _VmapLevel:
    """A vmap level of this thread, with the function forms swapped in while it runs."""

    def __init__(self, n: int, randomness: str, copies: bool = False, legacy: bool = False) -> None:
        self.n, self.randomness, self.copies, self.legacy = n, randomness, copies, legacy

    def __enter__(self) -> int:
        _activate()
        try:
            self.level = push_layer(self.n, self.randomness, self.copies, self.legacy)
        except BaseException:
            _deactivate()
            raise
        return self.level

    def __exit__(self, *exc: Any) -> None:
        try:
            pop_layer(self.level)
        finally:
            _deactivate()


def _callable(func: Callable) -> Callable:
    """``func``, or a call that looks it up when it runs where a vmap swaps it: for
    ``SomeFunction.apply`` (the native method, when taken before the vmap started), and for
    a function form taken before (``rgrad.sin``, ``rgrad.cat``, ``rgrad.nn.functional.relu``:
    the native functions or method descriptors, which refuse a BatchedTensor), its name in
    its namespace (the dispatching wrapper while a vmap runs), or for another Tensor method
    descriptor (``rgrad.Tensor.add_``) the method of its first argument."""
    owner = getattr(func, "__self__", None)
    if (isinstance(owner, type) and issubclass(owner, rgrad.autograd.Function)
            and getattr(func, "__name__", None) == "apply"):
        return lambda *args, **kwargs: owner.apply(*args, **kwargs)
    if isinstance(func, (types.MethodDescriptorType, types.BuiltinFunctionType)):
        name = func.__name__
        for namespace in (rgrad, rgrad.nn.functional):
            # (called where the vmap has swapped it already: the wrapper keeps it)
            current = getattr(namespace, name, None)
            if current is func or getattr(current, "__wrapped__", None) is func:
                return _late_lookup(namespace, name)
        if isinstance(func, types.MethodDescriptorType) and func.__objclass__ is Tensor:
            return lambda self, *args, **kwargs: getattr(self, name)(*args, **kwargs)
    return func


def _late_lookup(namespace: Any, name: str) -> Callable:
    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(namespace, name)(*args, **kwargs)

    return call


def _flat_vmap(func: Callable, n: int, flat_in_dims: list, flat_args: list, args_spec: Any, out_dims: Any,
               randomness: str, kwargs: dict, copies: bool = False) -> Any:
    """One vmap level of size ``n`` over ``func`` (``copies``: a level of copies, see ``_Layer``)."""
    with _VmapLevel(n, randomness, copies) as level:
        batched = [arg if in_dim is None else _add_batch_dim(arg, in_dim, level)
                   for in_dim, arg in zip(flat_in_dims, flat_args)]
        outputs = _callable(func)(*tree_unflatten(batched, args_spec), **kwargs)
        return _unwrap_batched(outputs, out_dims, level, n, func)


def _chunked_vmap(func: Callable, n: int, flat_in_dims: list, flat_args: list, args_spec: Any, out_dims: Any,
                  randomness: str, chunk_size: int, kwargs: dict) -> Any:
    sizes = [chunk_size] * (n // chunk_size) + ([n % chunk_size] if n % chunk_size else [])
    state = rgrad.random.get_rng_state() if randomness == "same" else None
    chunk_outputs = []
    start = 0
    for size in sizes:
        chunk_args = [arg if d is None else arg.narrow(d, start, size) for arg, d in zip(flat_args, flat_in_dims)]
        start += size
        if state is not None:
            rgrad.random.set_rng_state(state)
        chunk_outputs.append(_flat_vmap(func, size, flat_in_dims, chunk_args, args_spec, out_dims, randomness,
                                        kwargs))
    flat_chunks = []
    spec = None
    for out in chunk_outputs:
        flat, s = tree_flatten(out)
        flat_chunks.append(flat)
        spec = spec or s
    flat_out_dims = _broadcast_to_and_flatten(out_dims, spec)
    flat_output = [rgrad.cat([chunk[i] for chunk in flat_chunks], dim=d) for i, d in enumerate(flat_out_dims)]
    return tree_unflatten(flat_output, spec)


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """The vectorizing map, as ``torch.func.vmap``: ``vmap(func)`` maps ``func`` over a dim of its inputs.

    ``vmap(func)(*args)`` runs ``func`` once on batched views of ``args`` and returns its
    outputs with the batch dim added, the same values as stacking ``func`` applied to each
    slice. Ops that have a batching rule run once on the whole batch; others run per sample
    (with torch's performance warning, once per op). Nested vmaps, ``vmap(grad(f))``,
    ``grad(vmap(f))``, ``vmap(jacrev(f))`` and forward AD inside vmap work. See the module
    docstring for how rgrad does it without torch's C++ dispatcher, and its limits.

    Args:
        func: A function of Tensors (pytrees of Tensors, other values) returning Tensors (a
            pytree of Tensors).
        in_dims: The dim to map over of each input: an int (or None for an input not to
            map), or a pytree of them matching the inputs (a prefix of their structure).
            Keyword arguments are never mapped.
        out_dims: Where the mapped dim goes in each output (an int, None for an output that
            is not batched, or a pytree matching the outputs).
        randomness: ``"error"`` (a random op inside raises), ``"same"`` (every sample gets
            the same numbers) or ``"different"`` (each draws its own).
        chunk_size: Run the batch ``chunk_size`` samples at a time (None: all at once).

    Returns:
        The batched function.
    """
    _check_randomness_arg(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        _check_out_dims_is_int_or_int_pytree(out_dims, func)
        n, flat_in_dims, flat_args, args_spec = _process_batched_inputs(in_dims, args, func)
        if chunk_size is not None:
            return _chunked_vmap(func, n, flat_in_dims, flat_args, args_spec, out_dims, randomness, chunk_size,
                                 kwargs)
        return _flat_vmap(func, n, flat_in_dims, flat_args, args_spec, out_dims, randomness, kwargs)

    try:
        wrapped = functools.wraps(func)(wrapped)
    except (AttributeError, TypeError):
        pass
    return wrapped


# ---------------------------------------------------------------------------------------
# Materializing batch dims (what the transforms do with inputs inside vmap)
# ---------------------------------------------------------------------------------------

def add_level(x: Any, level: int, n: int) -> Any:
    """``x`` batched at ``level`` (size ``n``): itself if it already is, else with an expanded batch dim."""
    if type(x) is BT:
        if x._level == level:
            return x
        if x._level > level:
            return BT(add_level(x._value, level, n), x._level)
    return BT(x.unsqueeze(0).expand(n, *x.shape), level)


def materialize(x: Any) -> Any:
    """``x`` batched at every vmap level active in this thread (stride-0 expands where it is not)."""
    for layer in current_layers():
        x = add_level(x, layer.level, layer.batch_size)
    return x


def physical(x: Any) -> Any:
    """The plain tensor under every level of ``x``."""
    while type(x) is BT:
        x = x._value
    return x


# ---------------------------------------------------------------------------------------
# Autograd and forward AD on BatchedTensors
# ---------------------------------------------------------------------------------------

def _at(x: Any, level: int) -> bool:
    return type(x) is BT and x._level == level


def _as_tuple(x: Any) -> tuple:
    if x is None:
        return ()
    if isinstance(x, Tensor) or not isinstance(x, (tuple, list)):
        return (x,)
    return tuple(x)


def batched_grad(outputs: Any, inputs: Any, grad_outputs: Any, retain_graph: Any, create_graph: bool,
                 allow_unused: Any, materialize_grads: bool) -> Any:
    """``rgrad.autograd.grad`` when BatchedTensors are among its arguments (NotImplemented if none)."""
    outs, ins = _as_tuple(outputs), _as_tuple(inputs)
    gouts = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outs)
    level = max_level(outs + ins + gouts)
    if level < 0:
        return NotImplemented
    if len(gouts) != len(outs):
        raise RuntimeError(f"grad_outputs must be of the same length as outputs (got {len(gouts)} and {len(outs)})")
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    for i, (o, g) in enumerate(zip(outs, gouts)):
        if g is not None and tuple(g.shape) != tuple(o.shape):
            from rgrad._tensor import Size

            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {Size(g.shape)!r} and "
                               f"output[{i}] has a shape of {Size(o.shape)!r}.")
    n = batch_size(level)
    grad = rgrad.autograd.grad
    if all(_at(i, level) for i in ins):
        # every input has one leaf per sample: one backward of the physical tensors
        new_outs, new_gouts = [], []
        for o, g in zip(outs, gouts):
            if not _at(o, level):
                continue  # an output not batched here does not depend on inputs batched here
            v = o._value
            if g is None:
                if o.requires_grad:
                    if o.numel() != 1:
                        raise RuntimeError("grad can be implicitly created only for scalar outputs")
                    g = dispatch("ones_like", (v,), {})
            elif _at(g, level):
                g = g._value
            else:
                g = g.unsqueeze(0).expand(n, *g.shape)
            new_outs.append(v)
            new_gouts.append(g)
        if not new_outs:
            for i, o in enumerate(outs):
                if not o.requires_grad:
                    raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
            if not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
            result = [None] * len(ins)
        else:
            result = grad(new_outs, [i._value for i in ins], new_gouts, retain_graph=retain_graph,
                          create_graph=create_graph, allow_unused=allow_unused)
        result = [None if r is None else BT(r, level) for r in result]
    elif all(type(t) is Tensor for t in (*outs, *ins)) and all(
            g is None or type(g) is Tensor or (_at(g, level) and type(g._value) is Tensor) for g in gouts):
        # plain outputs and inputs, a batch of grad_outputs (``vmap(vjp)``, gradcheck's
        # check_batched_grad): one batched backward pass (``is_grads_batched``)
        batched_gouts = []
        for o, g in zip(outs, gouts):
            if g is None and o.requires_grad:
                if o.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                g = rgrad.ones_like(o)
            if type(g) is Tensor:
                g = g.unsqueeze(0).expand(n, *g.shape)
            elif g is not None:
                g = g._value
            batched_gouts.append(g)
        result = grad(outs, ins, batched_gouts, retain_graph=retain_graph, create_graph=create_graph,
                      allow_unused=allow_unused, is_grads_batched=True)
        result = [None if r is None else BT(r, level) for r in result]
    elif (lower := _lower_levels_batched_grad(outs, ins, gouts, level, retain_graph, create_graph,
                                              allow_unused)) is not None:
        result = lower
    else:
        # an input shared by the samples: one backward per sample (its gradient differs per sample)
        per_sample = []
        for b in range(n):
            o_b = [o._value.select(0, b) if _at(o, level) else o for o in outs]
            g_b = [g._value.select(0, b) if _at(g, level) else g for g in gouts]
            i_b = [i._value if _at(i, level) else i for i in ins]
            last = b == n - 1
            r = grad(o_b, i_b, g_b, retain_graph=retain_graph if last else True, create_graph=create_graph,
                     allow_unused=True)
            per_sample.append([None if ri is None else (ri.select(0, b) if _at(inp, level) else ri)
                               for ri, inp in zip(r, ins)])
        result = []
        for k in range(len(ins)):
            column = [r[k] for r in per_sample]
            if n == 0 or all(c is None for c in column):
                if not allow_unused:
                    raise RuntimeError("One of the differentiated Tensors appears to not have been used in the "
                                       "graph. Set allow_unused=True if this is the desired behavior.")
                result.append(None)
                continue
            column = [dispatch("zeros_like", (ins[k] if not _at(ins[k], level) else ins[k]._value.select(0, b),), {})
                      if c is None else c for b, c in enumerate(column)]
            result.append(BT(dispatch("stack", (column,), {}), level))
    if materialize_grads:
        result = [dispatch("zeros_like", (i,), {}) if r is None else r for r, i in zip(result, ins)]
    return tuple(result)


def _levels(x: Any) -> list:
    """The vmap levels ``x`` is batched at, lowest first (the order of its physical batch dims)."""
    levels = []
    while type(x) is BT:
        levels.append(x._level)
        x = x._value
    return levels[::-1]


def _lower_levels_batched_grad(outs: tuple, ins: tuple, gouts: tuple, level: int, retain_graph: Any,
                               create_graph: bool, allow_unused: Any) -> list | None:
    """``grad`` where only the grad_outputs are batched at ``level`` and every output and
    input is batched at the same lower levels (an inner vmap over cotangents under an outer
    transform: ``jacrev``'s rows inside ``vmap`` or inside ``jacfwd``, i.e. ``hessian``,
    ``vmap(jacrev(f))``): one batched backward pass of the physical tensors, the samples of
    ``level`` as its batch. The inputs have one element per sample of the lower levels
    (the transforms materialize them there), so their physical gradients are per sample.
    None where that does not hold (the caller then runs one backward per sample), and
    inside a forward-AD level (``hessian = jacfwd(jacrev)``, ``vmap(hessian)``): there the
    rows' batched pass, with forward-over-reverse through every batched formula, measured
    slower than one backward per row (0.94 against 0.58 ms for a 64 × 64 Hessian)."""
    if rgrad.autograd.forward_ad._current_level >= 0:
        return None
    lower = _levels(ins[0]) if ins else []
    if not lower or any(_levels(t) != lower for t in (*outs, *ins)) or any(not o.requires_grad for o in outs):
        return None
    n, k = batch_size(level), len(lower)
    phys_outs = [physical(o) for o in outs]
    phys_gouts = []
    for o, g in zip(phys_outs, gouts):
        if g is None:
            return None
        batched_here = _at(g, level)
        value = g._value if batched_here else g
        levels = _levels(value)
        if levels == lower:
            # physical [*lower batch dims, (n,) *shape]: the batch of grad_outputs first
            v = physical(value)
            v = movedim(v, k, 0) if batched_here else v.unsqueeze(0)
        elif not levels:
            # one grad_output for every sample of the lower levels
            v = value if batched_here else value.unsqueeze(0)
            v = v.reshape(v.shape[0], *([1] * k), *v.shape[1:])
        else:
            return None
        phys_gouts.append(v.expand(n, *o.shape))
    result = rgrad.autograd.grad(phys_outs, [physical(i) for i in ins], phys_gouts, retain_graph=retain_graph,
                                 create_graph=create_graph, allow_unused=allow_unused, is_grads_batched=True)
    wrapped = []
    for r in result:
        if r is not None:
            r = movedim(r, 0, k)  # the batch of this level is the innermost
            for lvl in (*lower, level):
                r = BT(r, lvl)
        wrapped.append(r)
    return wrapped


def check_backward(tensors: Any, grad_tensors: Any, inputs: Any) -> None:
    """``backward()`` on BatchedTensors: torch's error (torch does not support it inside its transforms)."""
    if max_level(_as_tuple(tensors) + _as_tuple(grad_tensors) + _as_tuple(inputs)) >= 0:
        raise RuntimeError(_BACKWARD_ERROR)


def batched_make_dual(tensor: Any, tangent: Any, level: Any) -> Any:
    """``forward_ad.make_dual`` with BatchedTensors: a dual of the physical tensors (NotImplemented if none)."""
    lvl = max_level((tensor, tangent))
    if lvl < 0:
        return NotImplemented
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the original Tensor, this is "
            f"not supported. Tensor is of size {list(tensor.shape)} while the given forward gradient is of size "
            f"{list(tangent.shape)}."
        )
    n = batch_size(lvl)
    p = tensor._value if _at(tensor, lvl) else tensor.unsqueeze(0).expand(n, *tensor.shape)
    t = tangent._value if _at(tangent, lvl) else tangent.unsqueeze(0).expand(n, *tangent.shape)
    from rgrad.autograd import forward_ad

    return BT(forward_ad.make_dual(p, t, level=level), lvl)


def batched_unpack_dual(tensor: Any, level: Any) -> Any:
    """``forward_ad.unpack_dual`` of a BatchedTensor (NotImplemented for anything else)."""
    if type(tensor) is not BT:
        return NotImplemented
    from rgrad.autograd import forward_ad

    primal, tangent = forward_ad.unpack_dual(tensor._value, level=level)
    lvl = tensor._level
    return forward_ad.UnpackedDualTensor(BT(primal, lvl), None if tangent is None else BT(tangent, lvl))


# ---------------------------------------------------------------------------------------
# Swapping the function forms in while a vmap runs
# ---------------------------------------------------------------------------------------

_lock = threading.Lock()
_active = 0
_swaps: list | None = None

# function forms named differently from the op they are
_ALIASES = {"subtract": "sub", "multiply": "mul", "divide": "div", "true_divide": "div", "negative": "neg",
            "absolute": "abs", "concat": "cat", "concatenate": "cat"}

# Tensor methods whose other arguments may be tensors
_TENSOR_METHODS = (
    "add", "sub", "mul", "div", "pow", "remainder", "fmod", "floor_divide", "eq", "ne", "lt", "le", "gt", "ge",
    "logical_and", "logical_or", *rgrad._C._BINARY_OPS, "clamp", "clip", "clamp_", "masked_fill", "masked_fill_",
    "matmul", "mm", "bmm", "mv", "dot", "outer", "addmm", "gather", "index_select", "expand_as", "view_as",
    "reshape_as", "type_as", "to", "copy_", "fill_", "add_", "sub_", "mul_", "div_", "pow_", "index_put",
    "index_put_", "max", "min", "__eq__", "__ne__", "__getitem__", "__setitem__", "__iadd__", "__isub__", "__imul__",
    "__itruediv__", "__ipow__", *(f"{n}_" for n in rgrad._C._BINARY_OPS),
    "scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce", "scatter_reduce_", "index_add", "index_add_", "index_copy", "index_copy_",
    "index_fill", "index_fill_", "masked_select", "take_along_dim", "addcmul", "addcmul_", "addcdiv", "addcdiv_",
    "lerp", "lerp_", "addr", "addr_", "_linalg_cross", "dist",
    # operators called as methods (``b.__rmatmul__(a)``): the operator protocol reaches
    # BatchedTensor's own methods through NotImplemented, a direct call does not
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
    "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__",
    "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__lt__", "__le__", "__gt__", "__ge__",
)


def _namespace_wrapper(op: str, orig: Callable) -> Callable:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if max_level(args, kwargs) >= 0:
            return dispatch(op, args, kwargs)
        return orig(*args, **kwargs)

    return _named(wrapper, orig)


def _random_wrapper(op: str, orig: Callable) -> Callable:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if current_layers():
            return random_entry(op, args, kwargs)
        return orig(*args, **kwargs)

    return _named(wrapper, orig)


def _polygamma_wrapper(orig: Callable) -> Callable:
    def polygamma(n: Any, input: Any, **kwargs: Any) -> Any:  # noqa: A002
        if type(input) is BT:
            return dispatch("polygamma", (input, n), kwargs)
        return orig(n, input, **kwargs)

    return _named(polygamma, orig)


def _method_wrapper(op: str, orig: Any) -> Callable:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if (args or kwargs) and max_level(args, kwargs) >= 0:
            return dispatch(op, (self, *args), kwargs)
        return orig(self, *args, **kwargs)

    return _named(method, orig)


def _where_method_wrapper(orig: Any) -> Callable:
    def where(self: Any, condition: Any, y: Any) -> Any:
        if max_level((condition, y)) >= 0:
            return dispatch("where", (condition, self, y), {})
        return orig(self, condition, y)

    return _named(where, orig)


def _random_method_wrapper(op: str, orig: Any) -> Callable:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if current_layers():
            return random_entry(op, (self, *args), kwargs)
        return orig(self, *args, **kwargs)

    return _named(method, orig)


def _function_apply(cls: Any, args: tuple, kwargs: dict | None) -> Any:
    """Every custom ``Function.apply`` call while a vmap runs (installed in Rust with
    ``_C._set_vmap_apply``, so that a ``MyFn.apply`` bound before the vmap is covered too):
    NotImplemented (the native apply) when no argument is batched; otherwise its vmap
    staticmethod or its generated rule runs once for the batch (``_function_vmap``)."""
    kwargs = kwargs or {}
    level = max_level(args, kwargs)
    if level < 0:
        return NotImplemented
    from rgrad.func import _function_vmap

    return _function_vmap.apply(cls, level, args, kwargs)


def _function_backward_batched(backward: Callable, batch: int, ctx: Any, *grads: Any) -> Any:
    """A custom Function's backward in a batched backward pass (``grad(is_grads_batched=True)``,
    ``jacobian(vectorize=True)``, ``vmap(vjp)``; called by the node): the gradients have a
    leading dim of ``batch`` samples, and backward runs once under a vmap level of them, as
    torch runs it. It sees one sample's shapes (the saved tensors are the same for every
    sample); its ops batch by their rules (an op without one loops, with the performance
    warning), and one that cannot run on a batch (``.item()``) raises, as in torch (with its
    legacy vmap's message for reading values: torch runs it there). Returns
    what backward returned with the batch dim first: a batched result's physical value, an
    unbatched tensor expanded over the samples, anything else as it is (the node checks)."""
    with _VmapLevel(batch, "error", legacy=True) as level:
        out = backward(ctx, *(None if g is None else BT(g, level) for g in grads))

        def unwrap(r: Any) -> Any:
            if type(r) is BT:
                if r._level != level:
                    raise RuntimeError(
                        "vmap: the backward of a custom Function returned a BatchedTensor of a vmap that does not "
                        "batch its gradients (one kept from elsewhere, in a closure or a global)")
                return r._value
            if isinstance(r, Tensor):
                return r.unsqueeze(0).expand(batch, *r.shape)
            return r

        return tuple(unwrap(r) for r in out) if isinstance(out, tuple) else unwrap(out)


def _named(wrapper: Callable, orig: Any) -> Callable:
    name = getattr(orig, "__name__", None)
    if name:
        wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = getattr(orig, "__doc__", None)
    wrapper.__wrapped__ = orig
    return wrapper


def _build_swaps() -> list:
    """(owner, attribute, original, wrapper) for everything swapped while a vmap runs."""
    import rgrad.autograd
    import rgrad.autograd.forward_ad
    import rgrad.nn.functional

    swaps = []
    ns_names = [*rgrad._METHOD_FUNCTIONS, *rgrad._BINARY_FUNCTIONS, *_ALIASES, "cat", "stack", "where",
                "zeros_like", "ones_like", "full_like"]
    for name in dict.fromkeys(ns_names):
        orig = getattr(rgrad, name)
        if name == "polygamma":
            wrapper = _polygamma_wrapper(orig)
        else:
            wrapper = _namespace_wrapper(_ALIASES.get(name, name), orig)
        swaps.append((rgrad, name, orig, wrapper))
    for name in ("rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial", "rand_like",
                 "randn_like", "randint_like"):
        orig = getattr(rgrad, name)
        swaps.append((rgrad, name, orig, _random_wrapper(name, orig)))
    nnf = rgrad.nn.functional
    for attr, op in (("linear", "linear"), ("cross_entropy", "cross_entropy"), ("nll_loss", "nll_loss"),
                     ("_mse_loss", "mse_loss")):
        orig = nnf.__dict__[attr]
        swaps.append((nnf, attr, orig, _namespace_wrapper(op, orig)))
    for name in dict.fromkeys(_TENSOR_METHODS):
        orig = Tensor.__dict__.get(name)
        if orig is None:
            continue
        swaps.append((Tensor, name, orig, _method_wrapper(name, orig)))
    swaps.append((Tensor, "where", Tensor.__dict__["where"], _where_method_wrapper(Tensor.__dict__["where"])))
    for name in RANDOM_OPS:
        orig = Tensor.__dict__.get(name)
        if orig is not None:
            swaps.append((Tensor, name, orig, _random_method_wrapper(name, orig)))
    import sys

    this = sys.modules[__name__]
    swaps.append((rgrad.autograd, "_vmap_support", None, this))
    swaps.append((rgrad.autograd.forward_ad, "_vmap_support", None, this))
    return swaps


def _grouped(swaps: list) -> tuple[list, list]:
    """The swaps as (module dict, originals, wrappers) triples (one ``dict.update`` each)
    and the remaining (type, name, original, wrapper) attribute swaps."""
    modules: dict = {}
    attributes = []
    for owner, name, orig, wrapper in swaps:
        if type(owner) is type(rgrad):
            entry = modules.setdefault(id(owner), (owner.__dict__, {}, {}))
            entry[1][name] = orig
            entry[2][name] = wrapper
        else:
            attributes.append((owner, name, orig, wrapper))
    return list(modules.values()), attributes


def _activate() -> None:
    global _active, _swaps
    with _lock:
        if _active == 0:
            if _swaps is None:
                _swaps = _grouped(_build_swaps())
            modules, attributes = _swaps
            for namespace, _origs, wrappers in modules:
                namespace.update(wrappers)
            for owner, name, _orig, wrapper in attributes:
                setattr(owner, name, wrapper)
            rgrad._C._set_vmap_apply(_function_apply)
        _active += 1


def _deactivate() -> None:
    global _active
    with _lock:
        _active -= 1
        if _active == 0:
            modules, attributes = _swaps
            for namespace, origs, _wrappers in modules:
                namespace.update(origs)
            for owner, name, orig, _wrapper in attributes:
                setattr(owner, name, orig)
            rgrad._C._set_vmap_apply(None)


def is_active() -> bool:
    """Whether a vmap is running in some thread (the function forms are swapped)."""
    return _active > 0


_batching  # noqa: B018  (imported for its side effects: BatchedTensor's methods and the rule table)
