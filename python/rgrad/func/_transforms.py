"""The function transforms of ``rgrad.func``: grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian.

torch.func gives each transform a *level*: it wraps the inputs in tensors of that level, so
that the transform's graph is kept apart from any other. rgrad has no levels; a transform
here works on the one autograd graph, like ``torch.autograd.functional``, and gets torch.func's
results with two rules:

* An input to differentiate is replaced by a **new leaf of the transform** (a detached alias
  that requires grad), or, when it already requires grad (and grad mode is on), by a
  differentiable alias of it (``x.view_as(x)``), so that the results stay differentiable
  w.r.t. it: ``grad(f)(x)`` is then a function of ``x`` that outer autograd (or an outer
  transform) differentiates again; this is how ``grad(grad(f))`` works.
* Every result is computed with ``create_graph=True`` and then **unwrapped**: a result whose
  graph reaches no leaf other than the transform's own leaves is detached (it depends on
  nothing outside the transform, as torch.func's results at the outer level), and a result
  whose graph does reach another leaf (an input that requires grad, a closed-over tensor
  that does, an outer transform's leaf) keeps its graph. Under ``no_grad`` every result is
  detached. Inside a forward-AD level the primal and the tangent of a result are unwrapped
  separately, so that ``jacfwd(jacrev(f))`` (forward-over-reverse) keeps its tangents.

Deciding which leaves a result reaches walks its graph once per result. ``grad`` walks the
graph of ``f``'s output first: when it reaches only the transform's own leaves (and holds no
user-defined ``autograd.Function``, whose backward may use tensors outside the graph), every
gradient would be detached, so the backward pass records nothing (``create_graph=False``:
the same values; in ``vmap(grad(f))``, per-sample gradients, a fifth of the call).

``jacrev`` and ``jacfwd`` are torch.func's: ``jacrev`` runs ``func`` once and computes the rows
as ``vmap(vjp_fn)`` over the standard basis of the outputs (one batched backward pass,
``is_grads_batched``, per chunk of ``chunk_size`` rows; ``chunk_size=1`` is a loop of
vjps), ``jacfwd`` runs ``func`` once under vmap with the standard basis of the inputs as
the batch of tangents (vmap's ``randomness`` flag). ``hessian = jacfwd(jacrev(f))`` is then
``f`` once on batched duals and one backward per row (there the rows' batched pass, with
forward-over-reverse through its batched formulas, measured slower; see ``_vmap.batched_grad``).

Inside ``vmap`` an input to differentiate is first batched at every active vmap level it
is not batched at (a stride-0 expand: each sample gets a leaf of its own), so that
``vmap(grad(f), in_dims=(None, 0))`` gives one gradient per sample (see ``_vmap.py``).

Forward-mode AD has one dual level in rgrad, so a jvp inside a jvp (``jacfwd(jacfwd(f))``,
``jvp`` inside ``forward_ad.dual_level``) raises a RuntimeError; second derivatives go
through ``jacfwd(jacrev(f))`` (what ``hessian`` does), ``jacrev(jacrev(f))`` or
``jacrev(jacfwd(f))``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import rgrad
from rgrad import _C
from rgrad._C import Tensor
from rgrad.autograd import forward_ad as fwAD
from rgrad.func._batched_tensor import current_layers, movedim
from rgrad.func._vmap import _callable, _flat_vmap, materialize, physical, vmap
from rgrad.utils._pytree import tree_flatten, tree_leaves, tree_map, tree_unflatten, treespec_pprint

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize"]

# ---------------------------------------------------------------------------------------
# Levels without levels: a transform's own leaves, and unwrapping its results
# ---------------------------------------------------------------------------------------

class _Level:
    """The leaves one call of a transform created, and whether grad mode was on outside it."""

    def __init__(self) -> None:
        self.outer_grad = rgrad.is_grad_enabled()
        self.own: dict[int, Tensor] = {}  # id -> leaf (kept alive so that ids stay unique)

    def differentiable(self, x: Any) -> Tensor:
        """The tensor the transform runs ``f`` on in place of the input ``x``.

        Inside vmap, ``x`` is first batched at every active vmap level (a stride-0 expand
        where it is not), so that each sample has a leaf of its own and the transform's
        results are per sample (see ``_vmap``).
        """
        if not isinstance(x, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
        if current_layers():
            x = materialize(x)
        if self.outer_grad and x.requires_grad:
            # an alias in x's graph: the results stay differentiable w.r.t. x (a copy when x's
            # tangent requires grad: a view's tangent is then computed afresh, not aliased)
            if fwAD._current_level >= 0:
                tangent = fwAD.unpack_dual(x).tangent
                if tangent is not None and tangent.requires_grad:
                    return x.clone()
            return x.view_as(x)
        leaf = _detach_keep_tangent(x)
        leaf.requires_grad_()
        phys = physical(leaf)
        self.own[id(phys)] = phys
        return leaf

    def unwrap(self, t: Any, *, keep_tangent: bool = True, outer_grad: bool | None = None,
               clean: set | None = None) -> Any:
        """A result as seen outside the transform (torch.func's ``_undo_create_differentiable``).

        ``keep_tangent=False`` drops the tangent of the current forward-AD level (jvp's aux);
        ``outer_grad`` overrides the grad mode recorded when the transform was entered.
        """
        if not isinstance(t, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(t)}")
        if fwAD._current_level >= 0:
            primal, tangent = fwAD.unpack_dual(t)
            if tangent is not None:
                if not keep_tangent:
                    return self._prune(primal, outer_grad, clean)
                new_primal = self._prune(primal, outer_grad, clean)
                new_tangent = self._prune(tangent, outer_grad, clean)
                if new_primal is primal and new_tangent is tangent:
                    return t
                return fwAD.make_dual(new_primal, new_tangent)
        return self._prune(t, outer_grad, clean)

    def unwrap_tree(self, tree: Any, *, keep_tangent: bool = True, outer_grad: bool | None = None) -> Any:
        """``unwrap`` on every leaf of ``tree`` (all alive at once: one walk cache for them)."""
        clean: set = set()
        return tree_map(lambda t: self.unwrap(t, keep_tangent=keep_tangent, outer_grad=outer_grad, clean=clean), tree)

    def gradients_keep_graph(self, output: Tensor, clean: set) -> bool:
        """Whether gradients of ``output`` w.r.t. this transform's leaves may keep a graph
        after ``unwrap``, i.e. must be computed with ``create_graph=True``.

        Not when grad mode was off outside, nor when ``output``'s graph reaches only this
        transform's leaves and holds no user-defined Function: every tensor its backward
        uses then depends on nothing outside the transform, and each gradient would be
        detached. Always inside a forward-AD level (forward-over-reverse needs the backward
        recorded). ``clean``: as for ``_reaches_other_leaves``, kept for ``unwrap``.
        """
        if fwAD._current_level >= 0:
            return True
        if not self.outer_grad or not output.requires_grad:
            return False
        return not self.own or _reaches_other_leaves(output, self.own, clean, user_functions=True)

    def _prune(self, t: Tensor, outer_grad: bool | None = None, clean: set | None = None) -> Tensor:
        """``t``, or ``t.detach()`` when it depends on nothing outside the transform."""
        if not t.requires_grad:
            return t
        if outer_grad is None:
            outer_grad = self.outer_grad
        if outer_grad and (not self.own or _reaches_other_leaves(t, self.own, clean)):
            return t
        return t.detach()


def _detach_keep_tangent(x: Tensor) -> Tensor:
    """``x.detach()``, keeping x's forward-AD tangent (``detach`` drops it)."""
    if fwAD._current_level >= 0:
        tangent = fwAD.unpack_dual(x).tangent
        if tangent is not None:
            return fwAD.make_dual(x.detach(), tangent)
    return x.detach()


def _reaches_other_leaves(t: Tensor, own: dict[int, Tensor], clean: set | None = None,
                          user_functions: bool = False) -> bool:
    """Whether the graph of ``t`` (which requires grad) reaches a leaf that is not in ``own``.

    With ``user_functions``, a user-defined ``autograd.Function`` in the graph counts as such
    a leaf (its backward may use tensors that are not its inputs).

    ``clean`` holds the nodes already found to reach only ``own`` leaves (and, when they
    were walked with ``user_functions``, no user Function); a walk that finds none adds its
    nodes to it, so the results of one transform (whose graphs share most nodes) are walked
    in about the time of one. It must not outlive the graphs it names: one set per batch of
    results held at once, and one walk kind before the other (``user_functions`` first: its
    clean nodes are clean for both). The walk is native (``_C._reaches_other_leaves``): it
    follows the edges ``next_functions`` lists without making their Python objects.
    """
    return _C._reaches_other_leaves(physical(t), own, set() if clean is None else clean, user_functions)


def _autograd_grad(outputs, inputs, grad_outputs=None, retain_graph=True, create_graph=True) -> tuple:
    """Gradients of the outputs that require grad (zeros for unused inputs and when none does).

    ``retain_graph`` defaults to True (torch.func: False): the transform's graph is the one
    outer autograd sees, and a result that keeps its graph (the value of ``grad_and_value``)
    must stay differentiable after the gradient is taken.
    """
    if grad_outputs is None:
        diff_outputs = tuple(out for out in outputs if out.requires_grad)
    else:
        pairs = tuple((out, go) for out, go in zip(outputs, grad_outputs) if out.requires_grad)
        diff_outputs = tuple(p[0] for p in pairs)
        grad_outputs = tuple(p[1] for p in pairs)
    if len(diff_outputs) == 0:
        return tuple(rgrad.zeros_like(inp) for inp in inputs)
    grads = rgrad.autograd.grad(diff_outputs, inputs, grad_outputs, retain_graph=retain_graph,
                                create_graph=create_graph, allow_unused=True)
    return tuple(rgrad.zeros_like(inp) if g is None else g for g, inp in zip(grads, inputs))


# ---------------------------------------------------------------------------------------
# argnums and argument checks (torch's messages)
# ---------------------------------------------------------------------------------------

def _validate_and_wrap_argnum(argnum: int, num_args: int) -> int:
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def _slice_argnums(args: tuple, argnums, as_tuple: bool = True) -> Any:
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if isinstance(argnums, int):
        argnums = _validate_and_wrap_argnum(argnums, len(args))
        return (args[argnums],) if as_tuple else args[argnums]
    argnums = tuple(_validate_and_wrap_argnum(a, len(args)) for a in argnums)
    if len(argnums) == 0:
        raise RuntimeError("argnums must be non-empty")
    if len(set(argnums)) != len(argnums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return tuple(args[i] for i in argnums)


def _replace_args(old_args: tuple, new_args: tuple, argnums) -> tuple:
    """``old_args`` with the arguments at ``argnums`` replaced by ``new_args`` (one per argnum)."""
    if isinstance(argnums, int):
        argnums = _validate_and_wrap_argnum(argnums, len(old_args))
        return tuple(new_args[0] if i == argnums else a for i, a in enumerate(old_args))
    argnums = tuple(_validate_and_wrap_argnum(a, len(old_args)) for a in argnums)
    return tuple(new_args[argnums.index(i)] if i in argnums else a for i, a in enumerate(old_args))


def _assert_non_empty_tensor_output(output: list, api: str) -> None:
    if (len(output) == 1 and output[0] is None) or len(output) < 1:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {output})")
    for o in output:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(o)}")


def _assert_non_empty_list_of_tensors(output: list, api: str, argname: str) -> None:
    if len(output) == 0:
        raise RuntimeError(f"{api}: Expected {argname} to contain at least one Tensor.")
    for out in output:
        if not isinstance(out, Tensor):
            raise RuntimeError(f"{api}: Expected {argname} to only contain Tensors, got {type(out)}")


def _wraps(func: Callable) -> Callable:
    """functools.wraps that tolerates callables without a __name__ (partials, instances)."""
    def deco(wrapper: Callable) -> Callable:
        try:
            return functools.wraps(func)(wrapper)
        except (AttributeError, TypeError):
            return wrapper
    return deco


# ---------------------------------------------------------------------------------------
# vjp, grad
# ---------------------------------------------------------------------------------------

def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False):
    """``(func(*primals), vjp_fn)`` (and ``aux`` with ``has_aux``), as ``torch.func.vjp``.

    ``vjp_fn(cotangents, retain_graph=True, create_graph=None)`` takes cotangents with the
    structure of ``func``'s output (a pytree of Tensors) and returns the vector-Jacobian
    product w.r.t. every primal, with the structure of ``primals`` (a tuple). It can be
    called many times. ``create_graph`` defaults to whether grad mode is on at the call, so
    that the products are differentiable again (w.r.t. primals that require grad, and in
    nested transforms).

    Args:
        func: A function of ``primals`` returning a pytree of floating-point Tensors, or
            ``(output, aux)`` with ``has_aux``.
        primals: The inputs of ``func``: Tensors or pytrees (tuples, lists, dicts) of Tensors.
        has_aux: ``func`` returns ``(output, aux)``; aux (a pytree of Tensors) is returned
            as is, not differentiated.
    """
    return _vjp_with_argnums(func, *primals, has_aux=has_aux)


def _vjp_with_argnums(func: Callable[..., Any], *primals: Any, argnums=None, has_aux: bool = False):
    level = _Level()
    with rgrad.enable_grad():
        if argnums is None:
            flat_primals, primals_spec = tree_flatten(primals)
            flat_diff = [level.differentiable(p) for p in flat_primals]
            diff_primals = tree_unflatten(flat_diff, primals_spec)
            call_args = diff_primals
        else:
            diff = _slice_argnums(primals, argnums, as_tuple=False)
            flat_primals, primals_spec = tree_flatten(diff)
            flat_diff = [level.differentiable(p) for p in flat_primals]
            diff_primals = tree_unflatten(flat_diff, primals_spec)
            new = (diff_primals,) if isinstance(argnums, int) else diff_primals
            call_args = _replace_args(primals, new, argnums)
        primals_out = _callable(func)(*call_args)
        aux = None
        if has_aux:
            if not (isinstance(primals_out, tuple) and len(primals_out) == 2):
                raise RuntimeError(
                    "vjp(f, *primals): output of function f should be a tuple: (output, aux) if has_aux is True"
                )
            primals_out, aux = primals_out
            aux = level.unwrap_tree(aux)
        flat_primals_out, primals_out_spec = tree_flatten(primals_out)
        _assert_non_empty_tensor_output(flat_primals_out, "vjp(f, *primals)")
        results = level.unwrap_tree(primals_out)
        for primal_out in flat_primals_out:
            if not primal_out.is_floating_point():
                raise RuntimeError(
                    "vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got Tensor "
                    f"with dtype {primal_out.dtype}"
                )

    def vjp_fn(cotangents: Any, retain_graph: bool = True, create_graph: bool | None = None) -> Any:
        if create_graph is None:
            create_graph = rgrad.is_grad_enabled()
        flat_cotangents, cotangents_spec = tree_flatten(cotangents)
        if primals_out_spec != cotangents_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure of outputs to the "
                f"function. cotangents: {treespec_pprint(cotangents_spec)}, "
                f"primal output: {treespec_pprint(primals_out_spec)}"
            )
        result = _autograd_grad(flat_primals_out, flat_diff, flat_cotangents, retain_graph=retain_graph,
                                create_graph=create_graph)
        if create_graph:
            # the products depend on the transform's own leaves (drop that graph) and maybe on
            # outer tensors (primals or cotangents that require grad: keep it)
            result = level.unwrap_tree(list(result), outer_grad=True)
        return tree_unflatten(list(result), primals_spec)

    if has_aux:
        return results, vjp_fn, aux
    return results, vjp_fn


def grad_and_value(func: Callable[..., Any], argnums=0, has_aux: bool = False) -> Callable[..., Any]:
    """``grad_and_value(func)(*args)`` is ``(gradient, value)``, as ``torch.func.grad_and_value``.

    ``func`` must return a scalar (0-dim) Tensor (or ``(scalar, aux)`` with ``has_aux``, and
    then the value is ``(scalar, aux)``). The gradient is w.r.t. the positional arguments in
    ``argnums`` (an int, or a tuple of ints for a tuple of gradients); an argument may be a
    pytree of Tensors, and its gradient has the same structure.

    The gradient is computed with ``create_graph=True``: it is differentiable w.r.t. inputs
    that require grad and tensors ``func`` closes over, so ``grad(grad(f))`` and outer
    autograd on ``grad(f)(x)`` work; a result that depends on nothing outside the transform
    does not require grad.
    """
    @_wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        return _grad_and_value_impl(func, argnums, has_aux, args, kwargs)

    return wrapper


def grad(func: Callable[..., Any], argnums=0, has_aux: bool = False) -> Callable[..., Any]:
    """``grad(func)(*args)`` is the gradient of the scalar ``func(*args)``, as ``torch.func.grad``.

    See :func:`grad_and_value` for ``argnums`` and ``has_aux`` (with ``has_aux`` the result
    is ``(gradient, aux)``). Nest it for higher derivatives: ``grad(grad(f))(x)``.
    """
    @_wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        gradient, value = _grad_and_value_impl(func, argnums, has_aux, args, kwargs)
        if has_aux:
            return gradient, value[1]
        return gradient

    return wrapper


def _grad_and_value_impl(func, argnums, has_aux: bool, args: tuple, kwargs: dict) -> tuple[Any, Any]:
    level = _Level()
    with rgrad.enable_grad():
        diff_args = _slice_argnums(args, argnums, as_tuple=False)
        flat_diff_args, spec = tree_flatten(diff_args)
        flat_diff = [level.differentiable(a) for a in flat_diff_args]
        new_diff = tree_unflatten(flat_diff, spec)
        args = _replace_args(args, (new_diff,) if isinstance(argnums, int) else new_diff, argnums)
        output = _callable(func)(*args, **kwargs)
        aux = None
        if has_aux:
            if not (isinstance(output, tuple) and len(output) == 2):
                raise RuntimeError(
                    "grad_and_value(f)(*args): output of function f should be a tuple: (output, aux) "
                    "if has_aux is True"
                )
            output, aux = output
        if not isinstance(output, Tensor):
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(output)}")
        if output.dim() != 0:
            raise RuntimeError(
                "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with "
                f"{output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?"
            )
        clean: set = set()
        flat_grad = _autograd_grad((output,), flat_diff, create_graph=level.gradients_keep_graph(output, clean))
        grad_input = level.unwrap_tree(tree_unflatten(list(flat_grad), spec))
        output = level.unwrap(output, clean=clean)
        if has_aux:
            aux = level.unwrap_tree(aux)
    if has_aux:
        return grad_input, (output, aux)
    return grad_input, output


# ---------------------------------------------------------------------------------------
# jvp
# ---------------------------------------------------------------------------------------

_JVP_STR = "jvp(f, primals, tangents)"


def _safe_unpack_dual(dual: Any, strict: bool) -> tuple[Tensor, Tensor]:
    if not isinstance(dual, Tensor):
        raise RuntimeError(f"{_JVP_STR}: expected f(*args) to return only tensors, got unsupported type {type(dual)}")
    primal, tangent = fwAD.unpack_dual(dual)
    if tangent is None:
        if strict:
            raise RuntimeError(
                "jvp(f, primals, tangents, strict=True): The output of f is independent of the inputs. This is not "
                "allowed with strict=True."
            )
        tangent = rgrad.zeros_like(primal)
    return primal, tangent


def jvp(func: Callable[..., Any], primals: Any, tangents: Any, *, strict: bool = False, has_aux: bool = False):
    """``(func(*primals), J @ tangents)`` (and ``aux`` with ``has_aux``), as ``torch.func.jvp``.

    Computed with forward-mode AD (``rgrad.autograd.forward_ad``): one evaluation of ``func``
    on dual tensors. ``primals`` is a tuple (of Tensors or pytrees of Tensors) and
    ``tangents`` has the same structure. The outputs (a pytree of Tensors) and their
    tangents are differentiable w.r.t. primals that require grad (reverse-over-forward).

    rgrad has a single forward-AD level: a jvp inside another jvp (``jacfwd(jacfwd(f))``,
    or a jvp inside ``rgrad.autograd.forward_ad.dual_level()``) raises a RuntimeError; for
    second derivatives use ``jacfwd(jacrev(f))`` (``hessian``) or ``jacrev(jacfwd(f))``.

    Args:
        strict: Raise when an output does not depend on the primals instead of giving a
            zero tangent.
        has_aux: ``func`` returns ``(output, aux)``; aux is returned as is.
    """
    return _jvp_with_argnums(func, primals, tangents, argnums=None, strict=strict, has_aux=has_aux)


def _jvp_with_argnums(func, primals: Any, tangents: Any, argnums, *, strict: bool = False, has_aux: bool):
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP_STR}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    diff_args = primals if argnums is None else _slice_argnums(primals, argnums)
    flat_primals, primals_spec = tree_flatten(diff_args)
    flat_tangents, tangents_spec = tree_flatten(tangents)
    if primals_spec != tangents_spec:
        raise RuntimeError(
            f"{_JVP_STR}: Expected primals and tangents to have the same python structure. For example, if primals "
            f"is a tuple of 3 tensors, tangents also must be. Got primals with structure {primals_spec} and tangents "
            f"with structure {tangents_spec}"
        )
    _assert_non_empty_list_of_tensors(flat_primals, _JVP_STR, "primals")
    _assert_non_empty_list_of_tensors(flat_tangents, _JVP_STR, "tangents")
    if fwAD._current_level >= 0:
        raise RuntimeError(
            f"{_JVP_STR}: rgrad supports a single forward-mode AD level, and one is already active (a jvp inside "
            "another jvp, e.g. jacfwd(jacfwd(f)), or a jvp inside rgrad.autograd.forward_ad.dual_level()). For "
            "second derivatives use jacfwd(jacrev(f)) (what rgrad.func.hessian does), jacrev(jacfwd(f)) or "
            "jacrev(jacrev(f))."
        )
    level = _Level()
    with fwAD._set_fwd_grad_enabled(True), fwAD.dual_level():
        flat_duals = tuple(fwAD.make_dual(p, t) for p, t in zip(flat_primals, flat_tangents))
        duals = tree_unflatten(list(flat_duals), primals_spec)
        if argnums is not None:
            duals = _replace_args(primals, duals, argnums)
        result_duals = _callable(func)(*duals)
        aux = None
        if has_aux:
            if not (isinstance(result_duals, tuple) and len(result_duals) == 2):
                raise RuntimeError(
                    f"{_JVP_STR}: output of function f should be a tuple: (output, aux) if has_aux is True"
                )
            result_duals, aux = result_duals
            aux = level.unwrap_tree(aux, keep_tangent=False)
        flat_results, spec = tree_flatten(result_duals)
        _assert_non_empty_tensor_output(flat_results, _JVP_STR)
        unpacked = [_safe_unpack_dual(dual, strict) for dual in flat_results]
        primals_out = tree_unflatten([level.unwrap(p) for p, _ in unpacked], spec)
        tangents_out = tree_unflatten([level.unwrap(t) for _, t in unpacked], spec)
    if has_aux:
        return primals_out, tangents_out, aux
    return primals_out, tangents_out


# ---------------------------------------------------------------------------------------
# jacrev, jacfwd, hessian (vmap over vjp / jvp with the standard basis, as torch.func's)
# ---------------------------------------------------------------------------------------

def _chunked_standard_basis(tensors: list, numels: tuple, chunk_size: int | None):
    """torch's ``_chunked_standard_basis_for_``: the identity of size ``sum(numels)`` (one row
    per element of the concatenated flattened ``tensors``), ``chunk_size`` rows at a time (all
    of them when ``chunk_size`` is None or not smaller), each chunk split by column into one
    ``[rows, *tensor.shape]`` tensor per tensor (its dtype and device). Zeros with the ones
    written along a strided view of each block's diagonal."""
    total = sum(numels)
    if chunk_size and chunk_size < total:
        sizes = [chunk_size] * (total // chunk_size) + ([total % chunk_size] if total % chunk_size else [])
    else:
        sizes = [total]
    start = 0
    for rows in sizes:
        chunks = []
        offset = 0
        for t, n in zip(tensors, numels):
            chunk = rgrad.zeros((rows, n), dtype=t.dtype, device=t.device)
            # row r is basis vector start + r: its one is at column start + r - offset of this
            # tensor's block when that falls in [0, n); those entries are n + 1 apart
            lo, hi = max(start, offset), min(start + rows, offset + n)
            if lo < hi:
                first = (lo - start) * n + (lo - offset)
                chunk.view(-1)[first:first + (hi - lo - 1) * (n + 1) + 1:n + 1].fill_(1)
            chunks.append(chunk.view(rows, *t.shape))
            offset += n
        yield chunks
        start += rows


def jacrev(func: Callable[..., Any], argnums=0, *, has_aux: bool = False, chunk_size: int | None = None,
           _preallocate_and_copy: bool = False) -> Callable[..., Any]:
    """The Jacobian of ``func`` w.r.t. the arguments at ``argnums``, by reverse-mode AD, as ``torch.func.jacrev``.

    ``jacrev(func)(*args)`` has, for each output tensor (a pytree of outputs gives a pytree of
    Jacobians) and each differentiated argument (a tuple for tuple ``argnums``), a tensor
    shaped ``output.shape + input.shape``.

    As torch's: ``func`` runs once (a vjp), and the rows are ``vmap(vjp_fn)`` over the
    standard basis of the outputs as a batch of cotangents, which is one batched backward
    pass (``autograd.grad(..., is_grads_batched=True)``) per chunk of rows; inside vmap
    (``vmap(jacrev(f))``) one batched pass of the vmap-batched graph. Inside another
    transform's vmap and forward-AD level (the rows of ``hessian``) the backward runs once
    per row: the same numbers.

    Args:
        has_aux: ``func`` returns ``(output, aux)``; the result is ``(jacobian, aux)``.
        chunk_size: Rows per batched backward (None: all at once). ``chunk_size=1`` is a
            loop of plain vjps, one per row, without vmap (as torch's).
        _preallocate_and_copy: Accepted for torch's signature; the chunks are concatenated.
    """
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @_wraps(func)
    def wrapper_fn(*args: Any) -> Any:
        vjp_out = _vjp_with_argnums(func, *args, argnums=argnums, has_aux=has_aux)
        if has_aux:
            output, vjp_fn, aux = vjp_out
        else:
            output, vjp_fn = vjp_out
        flat_output, output_spec = tree_flatten(output)
        flat_output_numels = tuple(out.numel() for out in flat_output)
        primals = _slice_argnums(args, argnums)
        flat_primals, primals_spec = tree_flatten(primals)

        total = sum(flat_output_numels)
        if total == 0:
            # no row (vmap over an empty batch has nothing to run)
            flat_jacobians = [p.new_zeros((0, *p.shape)) for p in flat_primals]
        else:
            chunked: list[list[Tensor]] = []
            for flat_basis in _chunked_standard_basis(flat_output, flat_output_numels, chunk_size):
                if chunk_size == 1:
                    # as torch's: a plain vjp per row, free of vmap's limits
                    rows = tree_leaves(vjp_fn(tree_unflatten([b.select(0, 0) for b in flat_basis], output_spec)))
                    chunked.append([r.unsqueeze(0) for r in rows])
                else:
                    chunked.append(tree_leaves(vmap(vjp_fn)(tree_unflatten(flat_basis, output_spec))))
            if len(chunked) == 1:
                flat_jacobians = chunked[0]
            else:
                flat_jacobians = [rgrad.cat([c[i] for c in chunked], dim=0) for i in range(len(flat_primals))]

        # each input's [total, *input.shape] rows, split by output
        flat_output_flat_input = []
        offset = 0
        for out, n in zip(flat_output, flat_output_numels):
            flat_output_flat_input.append(tuple(
                jac.narrow(0, offset, n).reshape(tuple(out.shape) + tuple(primal.shape))
                for jac, primal in zip(flat_jacobians, flat_primals)
            ))
            offset += n
        flat_output_input = tuple(tree_unflatten(list(flat_input), primals_spec)
                                  for flat_input in flat_output_flat_input)
        if isinstance(argnums, int):
            flat_output_input = tuple(flat_input[0] for flat_input in flat_output_input)
        output_input = tree_unflatten(list(flat_output_input), output_spec)
        if has_aux:
            return output_input, aux
        return output_input

    return wrapper_fn


def _check_randomness_arg(randomness: str) -> None:
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")


def jacfwd(func: Callable[..., Any], argnums=0, has_aux: bool = False, *, randomness: str = "error") -> Callable:
    """The Jacobian of ``func`` w.r.t. the arguments at ``argnums``, by forward-mode AD, as ``torch.func.jacfwd``.

    Same result structure and shapes as :func:`jacrev`. As torch's: one jvp under vmap whose
    batch of tangents is the standard basis of the inputs, so ``func`` runs once, on
    batched dual tensors, and the outputs' tangents are the Jacobian's columns.
    ``randomness`` is that vmap's flag: ``"error"`` (the default) raises vmap's error when
    ``func`` calls a random op, ``"same"`` gives every column the same random numbers and
    ``"different"`` lets every column draw its own.

    rgrad batches the primals too (copies of the inputs, one per column); the vmap level is
    marked as a level of copies (except with ``"different"``, whose random numbers differ per
    column), so ``func`` may read its inputs' values (``.item()``, ``float()``), as torch's
    jacfwd (which batches only the tangents) lets it. An input without elements gives an
    empty Jacobian (``func`` runs once, with zero tangents), where torch's raises.

    Args:
        has_aux: ``func`` returns ``(output, aux)``; the result is ``(jacobian, aux)``.
    """
    @_wraps(func)
    def wrapper_fn(*args: Any) -> Any:
        primals = args if argnums is None else _slice_argnums(args, argnums)
        flat_primals, primals_spec = tree_flatten(primals)
        flat_primals_numels = tuple(p.numel() for p in flat_primals)
        _check_randomness_arg(randomness)

        total = sum(flat_primals_numels)
        if total == 0:
            # no column: one jvp with zero tangents gives the outputs' shapes
            zero = tree_unflatten([p.new_zeros(tuple(p.shape)) for p in flat_primals], primals_spec)
            output = _jvp_with_argnums(func, args, zero, argnums=argnums, has_aux=has_aux)
            results = tree_map(lambda t: t.new_zeros((0, *t.shape)), output[1])
            if has_aux:
                results = (results, output[2])
        else:
            basis = tree_unflatten(next(_chunked_standard_basis(flat_primals, flat_primals_numels, None)),
                                   primals_spec)

            def push_jvp(basis: Any) -> Any:
                output = _jvp_with_argnums(func, args, basis, argnums=argnums, has_aux=has_aux)
                if has_aux:
                    _, jvp_out, aux = output
                    return jvp_out, aux
                return output[1]

            flat_basis, basis_spec = tree_flatten((basis,))
            results = _flat_vmap(push_jvp, total, [0] * len(flat_basis), flat_basis, basis_spec, 0, randomness,
                                 {}, copies=randomness != "different")
            if has_aux:
                # aux comes back batched (one copy per column): the first is func's
                results = (results[0], tree_map(lambda t: t[0], results[1]))
        aux = None
        if has_aux:
            results, aux = results
        jac_outs, spec = tree_flatten(results)
        # each output's [total, *output.shape] columns: moved last, split by input
        jac_outs_ins = []
        for jac_out in jac_outs:
            columns = movedim(jac_out, 0, -1)
            out_shape = tuple(jac_out.shape[1:])
            per_input = []
            offset = 0
            for primal, n in zip(flat_primals, flat_primals_numels):
                per_input.append(columns.narrow(-1, offset, n).reshape(out_shape + tuple(primal.shape)))
                offset += n
            jac_outs_ins.append(tree_unflatten(per_input, primals_spec))
        if isinstance(argnums, int):
            jac_outs_ins = [jac_ins[0] for jac_ins in jac_outs_ins]
        if has_aux:
            return tree_unflatten(jac_outs_ins, spec), aux
        return tree_unflatten(jac_outs_ins, spec)

    return wrapper_fn


def hessian(func: Callable[..., Any], argnums=0) -> Callable[..., Any]:
    """The Hessian of the scalar ``func`` w.r.t. the arguments at ``argnums``, as ``torch.func.hessian``.

    ``jacfwd(jacrev(func, argnums), argnums)``.

    Forward-over-reverse, as torch.func's; shaped ``input.shape + input.shape`` (nested tuples
    for tuple ``argnums``).
    """
    return jacfwd(jacrev(func, argnums), argnums)


# ---------------------------------------------------------------------------------------
# linearize
# ---------------------------------------------------------------------------------------

def linearize(func: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """Returns the value of ``func`` at ``primals`` and linear approximation at ``primals``,
    as ``torch.func.linearize``.

    Args:
        func (Callable[..., Any]): A Python function that takes one or more arguments.
        primals (Tensors): Positional arguments to ``func`` that must all be Tensors. These
            are the values at which the function is linearly approximated.

    Returns:
        Returns a ``(output, jvp_fn)`` tuple containing the output of ``func`` applied to
        ``primals`` and a function that computes the jvp of ``func`` evaluated at
        ``primals``.

    linearize is useful if jvp is to be computed multiple times at ``primals``: ``func``
    runs twice, here, and never again. To achieve this, linearize keeps a graph of
    ``func`` at ``primals`` and of its vector-Jacobian product ``u -> u^T J``, which is
    linear in ``u``; ``jvp_fn(t)`` is the gradient of ``<u^T J, t>`` w.r.t. ``u``, that is
    ``J t``: one backward pass through that graph per call (where torch.func traces a
    forward-mode graph with ``make_fx``). So it holds more memory than a direct ``jvp``;
    if all the ``tangents`` are known, ``vmap(jvp_fn)`` or ``jacfwd`` may be faster.

    The primals are constants of the linear map, as in torch.func's traced graph:
    ``jvp_fn``'s results are differentiable w.r.t. tangents that require grad, not w.r.t.
    the primals. A tangent of an output that does not depend on the primals (or is not
    floating point) is zeros.

    Example::

        >>> from rgrad.func import linearize
        >>> def fn(x):
        ...     return x.sin()
        ...
        >>> output, jvp_fn = linearize(fn, rgrad.zeros(3, 3))
        >>> jvp_fn(rgrad.ones(3, 3))
        tensor([[1., 1., 1.],
                [1., 1., 1.],
                [1., 1., 1.]])
    """
    output = func(*primals)
    _, output_spec = tree_flatten(output)
    flat_primals, primals_argspec = tree_flatten(primals)
    for p in flat_primals:
        if not isinstance(p, Tensor):
            raise AttributeError(f"'{type(p).__name__}' object has no attribute 'new_empty'")
    for p in flat_primals:
        if not p.is_floating_point():
            raise ValueError(f"Expected primal to be floating point or complex, but got: {p.dtype}")

    level = _Level()
    level.outer_grad = False  # (every primal gets a leaf of its own: a constant outside)
    with rgrad.enable_grad():
        flat_diff = [level.differentiable(p) for p in flat_primals]
        out = func(*tree_unflatten(flat_diff, primals_argspec))
        flat_out, _ = tree_flatten(out)
        # the outputs with a derivative, and a cotangent leaf for each
        diff = [i for i, o in enumerate(flat_out) if isinstance(o, Tensor) and o.requires_grad]
        cotangents = [rgrad.zeros_like(flat_out[i]).requires_grad_() for i in diff]
        if diff:
            vjps = rgrad.autograd.grad([flat_out[i] for i in diff], flat_diff, cotangents, create_graph=True,
                                       allow_unused=True)
        else:
            vjps = [None] * len(flat_diff)
        # (a product that does not depend on the cotangents adds nothing to any jvp)
        live = [k for k, v in enumerate(vjps) if v is not None and v.requires_grad]

    flat_primals_shape = tuple(p.shape for p in flat_primals)
    flat_primals_device = tuple(p.device for p in flat_primals)
    flat_primals_dtype = tuple(p.dtype for p in flat_primals)

    def forward_ad_checks(flat_tangents: list) -> None:
        for idx, t in enumerate(flat_tangents):
            if t.shape != flat_primals_shape[idx]:
                raise RuntimeError(
                    f"tangent:{idx} with shape {t.shape} in flattened pytree doesn't match the shape "
                    f"{flat_primals_shape[idx]} of the corresponding primal."
                )
            if t.device != flat_primals_device[idx]:
                raise RuntimeError(
                    f"tangent:{idx} with device {t.device} in flattened pytree doesn't match the device "
                    f"{flat_primals_device[idx]} of the corresponding primal."
                )
            if t.dtype != flat_primals_dtype[idx]:
                raise RuntimeError(
                    f"tangent:{idx} with dtype {t.dtype} in flattened pytree doesn't match the dtype "
                    f"{flat_primals_dtype[idx]} of the corresponding primal."
                )

    def jvp_fn(*tangents: Any) -> Any:
        flat_tangents, tangent_argspec = tree_flatten(tangents)
        if tangent_argspec != primals_argspec:
            raise RuntimeError(
                f"Expected the tangents {tangent_argspec} to have the same argspec as the primals {primals_argspec}"
            )
        forward_ad_checks(flat_tangents)
        results = [rgrad.zeros_like(o) if isinstance(o, Tensor) else o for o in flat_out]
        if live:
            create_graph = rgrad.is_grad_enabled()
            with rgrad.enable_grad():
                jvps = rgrad.autograd.grad([vjps[k] for k in live], cotangents,
                                           [flat_tangents[k] for k in live], retain_graph=True,
                                           create_graph=create_graph, allow_unused=True)
            for i, j in zip(diff, jvps):
                if j is not None:
                    results[i] = j
            # depends on nothing outside: detached (torch.func's graph holds the primals as
            # constants, so only primals and tangents that require grad keep one)
            results = level.unwrap_tree(results, outer_grad=create_graph)
        return tree_unflatten(results, output_spec)

    return output, jvp_fn
