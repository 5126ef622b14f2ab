"""``rgrad.func.functional_call`` for plain functions (rgrad has no ``nn.Module`` yet)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from rgrad._C import Tensor

__all__ = ["functional_call"]


def functional_call(
    module: Callable[..., Any],
    parameter_and_buffer_dicts: dict[str, Tensor] | Sequence[dict[str, Tensor]],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    r"""Calls ``module`` with the given parameters and buffers, as ``torch.func.functional_call``.

    rgrad has no ``nn.Module`` yet, so ``module`` is a plain **function that takes its
    parameters by name** (keyword arguments): ``functional_call(f, {"w": w, "b": b}, (x,))``
    calls ``f(x, w=w, b=b)``. That is the role of a module's parameters in torch:
    ``func.grad(lambda p, x: functional_call(f, p, (x,)))(params, x)`` differentiates w.r.t.
    a dict of parameters.

    Args:
        module: A callable (function, lambda, ``functools.partial``, an object with
            ``__call__``). Anything else, and an ``nn.Module`` from torch, is a TypeError.
        parameter_and_buffer_dicts: A dict from names to values (Tensors), or a sequence of
            such dicts (a name may appear in only one of them), as torch's.
        args: The positional arguments: a tuple, or a single argument (not a tuple).
        kwargs: More keyword arguments; a name may not be both here and a parameter.
        tie_weights: Accepted for torch's signature; a function has no tied weights, so it
            changes nothing.
        strict: When True, the names must be exactly the parameters the function is missing:
            a name the function does not accept (``Unexpected key(s)``), or a parameter
            without a default that neither the dicts, ``args`` nor ``kwargs`` give
            (``Missing key(s)``), raises torch's RuntimeError. When False, names the
            function does not accept are left out (as a module ignores unknown names),
            unless it takes ``**kwargs``, which receives them all.

    Returns:
        What ``module`` returns.
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        parameters_and_buffers = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts: dict[str, int] = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated_keys = [k for k, n in counts.items() if n > 1]
        if repeated_keys:
            raise ValueError(
                f"{repeated_keys} appeared in multiple dictionaries; behavior of functional call is ambiguous"
            )
        parameters_and_buffers = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(
            "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, "
            f"but got {type(parameter_and_buffer_dicts)}"
        )

    if _looks_like_module(module):
        raise TypeError(
            f"functional_call: got a {type(module).__name__} (an nn.Module); rgrad has no nn.Module yet, and "
            "functional_call takes a function that receives its parameters as keyword arguments, "
            "e.g. functional_call(f, {'w': w}, (x,)) calls f(x, w=w)"
        )
    if not callable(module):
        raise TypeError(
            f"functional_call: expected a function that takes its parameters as keyword arguments (rgrad has no "
            f"nn.Module yet), but got {type(module).__name__}, which is not callable"
        )

    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)

    name = getattr(module, "__name__", type(module).__name__)
    both = [k for k in parameters_and_buffers if k in kwargs]
    if both:
        raise ValueError(
            f"functional_call: {', '.join(map(repr, both))} given both as a parameter and in kwargs; behavior of "
            "functional call is ambiguous"
        )

    try:
        signature = inspect.signature(module)
    except (TypeError, ValueError):
        signature = None  # a builtin without a signature: pass every name on
    params = dict(parameters_and_buffers)
    if signature is not None:
        params = _select_parameters(name, signature, params, len(args), kwargs, strict)
    return module(*args, **kwargs, **params)


def _looks_like_module(obj: Any) -> bool:
    """An ``nn.Module`` (torch's, or any object with its parameter API)."""
    return all(hasattr(obj, attr) for attr in ("named_parameters", "named_buffers", "state_dict"))


def _select_parameters(name: str, signature: inspect.Signature, params: dict, num_args: int, kwargs: dict,
                       strict: bool) -> dict:
    """The names of ``params`` to pass as keyword arguments (``strict``: torch's key errors)."""
    kinds = inspect.Parameter
    takes_var_kw = any(p.kind is kinds.VAR_KEYWORD for p in signature.parameters.values())
    by_keyword = {n: p for n, p in signature.parameters.items()
                  if p.kind in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)}
    positional = [n for n, p in signature.parameters.items()
                  if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)]
    filled_by_args = set(positional[:num_args])
    clash = [k for k in params if k in filled_by_args]
    if clash:
        raise ValueError(
            f"functional_call: {', '.join(map(repr, clash))} given both as a parameter and as a positional argument "
            f"of {name}; behavior of functional call is ambiguous"
        )
    unexpected = [k for k in params if k not in by_keyword and not takes_var_kw]
    if strict:
        missing = [n for n, p in by_keyword.items()
                   if p.default is inspect.Parameter.empty and n not in params and n not in kwargs
                   and n not in filled_by_args]
        error_msgs = []
        if unexpected:
            error_msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            error_msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if error_msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(name, "\n\t".join(error_msgs)))
    return {k: v for k, v in params.items() if k not in unexpected}
