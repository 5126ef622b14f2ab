"""rgrad.autograd.functional: torch.autograd.functional's higher-level API.

``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``vhp`` and ``hvp`` take a function and its
inputs (a Tensor or a tuple of Tensors) and return derivatives of the function's outputs,
with torch's rules for tuples, ``create_graph`` and ``strict`` mode, and torch's errors.

``jvp`` and ``hvp`` use the double-backward trick, as torch does (a reverse pass whose
result is differentiated again with respect to its grad_outputs), so their results and
their strict-mode errors are torch's. ``jacobian`` and ``hessian`` compute one row per
output element with a backward pass each, or with ``vectorize=True`` every row in one
batched backward pass, as torch's: reverse mode runs the function once and calls
``autograd.grad(..., is_grads_batched=True)`` with the identity as the batch of
grad_outputs (the engine runs each node's batching rule, or its formula once per sample
with vmap's performance warning); ``strategy="forward-mode"``, which torch allows only
with ``vectorize=True``, runs the function under a vmap level of copies of the inputs
that are dual tensors whose tangents are the identity. Random ops raise vmap's error in
forward mode, as torch's. The copies all hold the same values, so the function may read
them (``.item()``, data-dependent control flow), as torch's (which batches only the
derivatives) lets it.
"""

from __future__ import annotations

import contextlib

import rgrad
from rgrad._C import Tensor

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# ---------------------------------------------------------------------------------------
# Helpers (the same checks, in the same order, as torch's)
# ---------------------------------------------------------------------------------------

def _as_tuple_nocheck(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _as_tuple(inp, arg_name=None, fn_name=None):
    """``(was it a tuple, the tuple)``; every element must be a Tensor (torch's TypeError otherwise)."""
    if arg_name is None and fn_name is None:
        return _as_tuple_nocheck(inp)
    is_tuple = isinstance(inp, tuple)
    if not is_tuple:
        inp = (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            if is_tuple:
                raise TypeError(
                    f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but the"
                    f" value at index {i} has type {type(el)}."
                )
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but the"
                f" given {arg_name} has type {type(el)}."
            )
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Unpacks one-element tuples that the user did not give as tuples (two levels for Jacobians)."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    """Inputs the function is run on: with create_graph, a differentiable alias of an input that
    requires grad (so that the result stays differentiable w.r.t. it); otherwise a detached copy
    that requires grad when ``need_graph``."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    """Detaches the results unless create_graph (nested tuples for Jacobians)."""
    if isinstance(inputs[0], Tensor):
        if not create_graph:
            return tuple(inp.detach() for inp in inputs)
        return inputs
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}.")


def _check_requires_grad(inputs, input_type, strict):
    """In strict mode, every tensor of ``inputs`` must require grad (torch's message per stage)."""
    if not strict:
        return
    if input_type not in ("outputs", "grad_inputs", "jacobian", "hessian"):
        raise RuntimeError("Invalid input_type to _check_requires_grad")
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}."
                " This is not allowed in strict mode."
            )
        if inp.requires_grad:
            continue
        if input_type == "hessian":
            raise RuntimeError(
                f"The hessian of the user-provided function with respect to input {i}"
                " is independent of the input. This is not allowed in strict mode."
                " You should ensure that your function is thrice differentiable and that"
                " the hessian depends on the inputs."
            )
        if input_type == "jacobian":
            raise RuntimeError(
                "While computing the hessian, found that the jacobian of the user-provided"
                f" function with respect to input {i} is independent of the input. This is not"
                " allowed in strict mode. You should ensure that your function is twice"
                " differentiable and that the jacobian depends on the inputs (this would be"
                " violated by a linear function for example)."
            )
        if input_type == "grad_inputs":
            raise RuntimeError(
                f"The gradient with respect to input {i} is independent of the inputs of the"
                " user-provided function. This is not allowed in strict mode."
            )
        raise RuntimeError(
            f"Output {i} of the user-provided function does not require gradients."
            " The outputs must be computed in a differentiable manner from the input"
            " when running in strict mode."
        )


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None, is_grads_batched=False):
    """``autograd.grad`` over the outputs that require grad (None for every input when none does)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    kept_outputs, kept_grads = [], []
    for out, grad_out in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            kept_outputs.append(out)
            kept_grads.append(grad_out)
    if not kept_outputs:
        return (None,) * len(inputs)
    return rgrad.autograd.grad(kept_outputs, inputs, kept_grads, allow_unused=True, create_graph=create_graph,
                               retain_graph=retain_graph, is_grads_batched=is_grads_batched)


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    """Zeros for the None gradients (an error in strict mode, worded for the stage)."""
    if stage not in ("back", "back_trick", "double_back", "double_back_trick"):
        raise RuntimeError(f"Invalid stage argument '{stage}' to _fill_in_zeros")
    res = []
    for i, grads_i in enumerate(grads):
        if grads_i is None:
            if strict:
                if stage == "back":
                    raise RuntimeError(
                        f"The output of the user-provided function is independent of input {i}. This is not "
                        "allowed in strict mode."
                    )
                if stage == "back_trick":
                    raise RuntimeError(
                        f"The gradient with respect to the input is independent of entry {i}"
                        " in the grad_outputs when using the double backward trick to compute"
                        " forward mode gradients. This is not allowed in strict mode."
                    )
                if stage == "double_back":
                    raise RuntimeError(
                        f"The jacobian of the user-provided function is independent of input {i}. This is not "
                        "allowed in strict mode."
                    )
                raise RuntimeError(
                    "The hessian of the user-provided function is independent of "
                    f"entry {i} in the grad_jacobian. This is not allowed in strict "
                    "mode as it prevents from using the double backward trick to "
                    "replace forward mode AD."
                )
            grads_i = rgrad.zeros_like(refs[i])
        elif strict and create_graph and not grads_i.requires_grad:
            if "double" not in stage:
                raise RuntimeError(
                    f"The jacobian of the user-provided function is independent of input {i}. This is not allowed "
                    "in strict mode when create_graph=True."
                )
            raise RuntimeError(
                f"The hessian of the user-provided function is independent of input {i}. This is not allowed in "
                "strict mode when create_graph=True."
            )
        res.append(grads_i)
    return tuple(res)


def _standard_basis(tensors, numels, batch):
    """The identity of size ``sum(numels)`` split by column into one chunk per tensor, each laid
    out as a batch of that tensor (``[sum(numels), *tensor.shape]``, its dtype): zeros with
    ones written along a strided view of the chunk's diagonal (torch's
    ``_construct_standard_basis_for``)."""
    total = sum(numels)
    chunks = []
    offset = 0
    for t, n in zip(tensors, numels):
        chunk = rgrad.zeros(total, n, dtype=t.dtype)
        if n:
            # element (offset + j, j) of the [total, n] chunk, for every j
            start = offset * n
            chunk.view(-1)[start:start + (n - 1) * (n + 1) + 1:n + 1].fill_(1)
        chunks.append(batch(chunk.view(total, *t.shape)))
        offset += n
    return chunks


def _vectorized_jacrev(inputs, outputs, create_graph):
    """Every row of the Jacobian in one backward pass (``jacobian(vectorize=True)``), as torch's:
    ``grad(is_grads_batched=True)`` over the function's graph with the identity as the batch of
    grad_outputs (row k: the k-th output element), so that the function runs once."""
    numels = tuple(out.numel() for out in outputs)
    total = sum(numels)
    flat_outputs = tuple(out.reshape(-1) for out in outputs)
    basis = _standard_basis(flat_outputs, numels, lambda b: b)
    if total:
        grads = _autograd_grad(flat_outputs, inputs, basis, create_graph=create_graph, is_grads_batched=True)
    else:
        grads = (None,) * len(inputs)
    rows = [rgrad.zeros_like(inp).expand(total, *inp.shape) if g is None else g for g, inp in zip(grads, inputs)]
    jacobian_input_output = []
    for jac_input_i, input_i in zip(rows, inputs):
        per_output = []
        offset = 0
        for output_j, n in zip(outputs, numels):
            per_output.append(jac_input_i.narrow(0, offset, n).reshape(tuple(output_j.shape) + tuple(input_i.shape)))
            offset += n
        jacobian_input_output.append(per_output)
    return tuple(zip(*jacobian_input_output))


def _vectorized_jacfwd(func, inputs):
    """Every column of the Jacobian in one forward-mode pass (``strategy="forward-mode"``).

    Under a vmap level whose batch holds one copy of the inputs per input element, the
    inputs are dual tensors whose tangents are the identity (column k of the batch: the
    k-th input element); ``func`` runs once and its outputs' tangents are the columns.
    """
    from rgrad.autograd import forward_ad as fwAD
    from rgrad.func._vmap import BatchedTensor, _VmapLevel

    numels = tuple(inp.numel() for inp in inputs)
    total = sum(numels)
    # copies=True: the primals are the same for every sample (the tangents are not)
    with fwAD.dual_level(), _VmapLevel(total, "error", copies=True) as level:
        tangents = _standard_basis(inputs, numels, lambda b: BatchedTensor(b, level))
        dual_inputs = tuple(
            fwAD.make_dual(BatchedTensor(inp.unsqueeze(0).expand(total, *inp.shape), level), tangent)
            for inp, tangent in zip(inputs, tangents)
        )
        is_outputs_tuple, dual_outputs = _as_tuple(func(*dual_inputs), "outputs")
        columns, outputs = [], []
        for dual_out in dual_outputs:
            primal, tangent = fwAD.unpack_dual(dual_out)
            outputs.append(primal)
            if tangent is None:  # the output does not depend on the inputs
                columns.append(rgrad.zeros(total, *primal.shape, dtype=primal.dtype))
            elif type(tangent) is not BatchedTensor or tangent._level != level:
                columns.append(tangent.unsqueeze(0).expand(total, *tangent.shape))
            else:
                columns.append(tangent._value)
    jacobian_output_input = []
    for jac_output_i, output_i in zip(columns, outputs):
        per_input = []
        offset = 0
        for input_j, n in zip(inputs, numels):
            jac = jac_output_i.narrow(0, offset, n)
            per_input.append(jac.permute(*range(1, jac.dim()), 0).reshape(tuple(output_i.shape) + tuple(input_j.shape)))
            offset += n
        jacobian_output_input.append(per_input)
    # lists, as torch's forward-mode jacobian returns
    return is_outputs_tuple, jacobian_output_input


# ---------------------------------------------------------------------------------------
# The API
# ---------------------------------------------------------------------------------------

def vjp(func, inputs, v=None, create_graph=False, strict=False):
    r"""The dot product of a vector ``v`` with the Jacobian of ``func`` at ``inputs``.

    Args:
        func: A function of Tensors returning a Tensor or a tuple of Tensors.
        inputs: The inputs of ``func`` (a Tensor or a tuple of Tensors).
        v: The vector, shaped as ``func``'s outputs; may be None only when ``func`` returns a
            single one-element Tensor.
        create_graph: Make the results differentiable (w.r.t. inputs that require grad).
        strict: Raise when an output does not depend on the inputs instead of returning zeros.

    Returns:
        ``(func_output, vjp)``: the outputs, and one gradient per input (shaped as ``inputs``).
    """
    with rgrad.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].nelement() != 1:
            raise RuntimeError(
                "The vector v can only be None if the user-provided function returns a single Tensor with a "
                "single element."
            )
    with rgrad.set_grad_enabled(True if create_graph else rgrad.is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    r"""The product of the Jacobian of ``func`` at ``inputs`` with a vector ``v``.

    Computed with the double-backward trick, as torch does: a backward pass with a
    grad_output ``u`` that requires grad gives ``J^T u``, a function of ``u`` whose gradient
    with ``v`` as grad_output is ``J v``.

    Args:
        func: A function of Tensors returning a Tensor or a tuple of Tensors.
        inputs: The inputs of ``func`` (a Tensor or a tuple of Tensors).
        v: The vector, shaped as ``inputs``; may be None only for a single one-element input.
        create_graph: Make the results differentiable (w.r.t. inputs that require grad).
        strict: Raise when an output does not depend on the inputs instead of returning zeros.

    Returns:
        ``(func_output, jvp)``: the outputs, and one product per output.
    """
    with rgrad.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, inputs, is_inputs_tuple)
        elif len(inputs) != 1 or inputs[0].nelement() != 1:
            raise RuntimeError(
                "The vector v can only be None if the input to the user-provided function is a single Tensor "
                "with a single element."
            )
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        # The double-backward trick: grad_inputs = J^T u is linear in u; its vjp with v is J v.
        grad_outputs = tuple(rgrad.zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with rgrad.set_grad_enabled(True) if create_graph else contextlib.nullcontext():
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_outputs_tuple)


def _jacfwd(func, inputs, strict, vectorize):
    if strict:
        raise RuntimeError(
            "rgrad.autograd.functional.jacobian: `strict=True` "
            'and `strategy="forward-mode"` are not supported together (yet). '
            "Please either set `strict=False` or "
            '`strategy="reverse-mode"`.'
        )
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if vectorize:
        is_outputs_tuple, jac = _vectorized_jacfwd(func, inputs)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))
    # torch's message, missing space included
    raise NotImplementedError(
        "Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
        "only implemented for `vectorize=True`."
    )


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    r"""The Jacobian of ``func`` at ``inputs``.

    One backward pass per output element (``vectorize=False``), or one batched pass
    (``vectorize=True``, see the module docstring). Entry ``[i][j]`` (unpacked
    where ``func``'s output or ``inputs`` is not a tuple) is the Jacobian of output ``i``
    w.r.t. input ``j``, shaped ``output_i.shape + input_j.shape``.

    Args:
        func: A function of Tensors returning a Tensor or a tuple of Tensors.
        inputs: The inputs of ``func`` (a Tensor or a tuple of Tensors).
        create_graph: Make the Jacobian differentiable (w.r.t. inputs that require grad).
        strict: Raise when an output does not depend on an input instead of returning zeros.
        vectorize: Compute every row (or column) in one batched pass instead of a loop.
        strategy: ``"reverse-mode"``, or ``"forward-mode"`` (only with ``vectorize=True``, as
            torch; not with ``create_graph`` or ``strict``).
    """
    return _jacobian(func, inputs, create_graph, strict, vectorize, strategy)


def _jacobian(func, inputs, create_graph, strict, vectorize, strategy):
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".'
        )
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "rgrad.autograd.functional.jacobian: `create_graph=True` "
                'and `strategy="forward-mode"` are not supported together (yet). '
                "Please either set `create_graph=False` or "
                '`strategy="reverse-mode"`.'
            )
        return _jacfwd(func, inputs, strict, vectorize)

    with rgrad.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)

        if vectorize:
            if strict:
                raise RuntimeError(
                    "rgrad.autograd.functional.jacobian: `strict=True` "
                    "and `vectorized=True` are not supported together. "
                    "Please either set `strict=False` or "
                    "`vectorize=False`."
                )
            result = _grad_postprocess(_vectorized_jacrev(inputs, outputs, create_graph), create_graph)
            return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))

        jacobian_rows = []
        for i, out in enumerate(outputs):
            per_input = tuple([] for _ in range(len(inputs)))
            flat_out = out.reshape(-1)
            for j in range(out.nelement()):
                vj = _autograd_grad((flat_out[j],), inputs, retain_graph=True, create_graph=create_graph)
                for el_idx, (rows, vj_el, inp_el) in enumerate(zip(per_input, vj, inputs)):
                    if vj_el is not None:
                        if strict and create_graph and not vj_el.requires_grad:
                            raise RuntimeError(
                                "The jacobian of the user-provided function is "
                                f"independent of input {i}. This is not allowed in "
                                "strict mode when create_graph=True."
                            )
                        rows.append(vj_el)
                    else:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is "
                                f"independent of input {el_idx}. This is not allowed in "
                                "strict mode."
                            )
                        rows.append(rgrad.zeros_like(inp_el))
            jacobian_rows.append(tuple(
                rgrad.stack(rows, dim=0).view(tuple(out.size()) + tuple(inputs[el_idx].size()))
                for el_idx, rows in enumerate(per_input)
            ))
        result = _grad_postprocess(tuple(jacobian_rows), create_graph)
        return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    r"""The Hessian of the scalar function ``func`` at ``inputs``.

    The Jacobian of ``func``'s gradient: entry ``[i][j]`` (unpacked where ``inputs`` is not a
    tuple) is shaped ``input_i.shape + input_j.shape``.

    Args:
        func: A function of Tensors returning a Tensor with a single element.
        inputs: The inputs of ``func`` (a Tensor or a tuple of Tensors).
        create_graph: Make the Hessian differentiable (w.r.t. inputs that require grad).
        strict: Raise when the Hessian does not depend on an input instead of returning zeros.
        vectorize: Compute the outer Jacobian in one batched pass (as ``jacobian``'s).
        outer_jacobian_strategy: ``"reverse-mode"``, or ``"forward-mode"`` (torch allows it only
            with ``vectorize=True``).
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = _jacobian(jac_func, inputs, create_graph, strict, vectorize, outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _check_scalar_function(outputs, is_outputs_tuple, api):
    if is_outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {api} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {api} should contain a single element")


def _hessian_product_start(api, func, inputs, v, create_graph, strict):
    """What vhp and hvp do first, with torch's checks in torch's order: the inputs and
    ``v`` prepared, ``func`` run, and its gradient w.r.t. the inputs (with its graph)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", api)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    if v is not None:
        _, v = _as_tuple(v, "v", api)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, inputs, is_inputs_tuple)
    elif len(inputs) != 1 or inputs[0].nelement() != 1:
        raise RuntimeError(
            "The vector v can only be None if the input to the user-provided function is a single Tensor "
            "with a single element."
        )
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", api)
    _check_requires_grad(outputs, "outputs", strict=strict)
    _check_scalar_function(outputs, is_outputs_tuple, api)
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict=strict)
    return is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    r"""The dot product of a vector ``v`` with the Hessian of the scalar function ``func`` at ``inputs``.

    Args:
        func: A function of Tensors returning a Tensor with a single element.
        inputs: The inputs of ``func`` (a Tensor or a tuple of Tensors).
        v: The vector, shaped as ``inputs``; may be None only for a single one-element input.
        create_graph: Make the results differentiable (w.r.t. inputs that require grad).
        strict: Raise when the Hessian does not depend on an input instead of returning zeros.

    Returns:
        ``(func_output, vhp)``.
    """
    with rgrad.enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _hessian_product_start(
            "vhp", func, inputs, v, create_graph, strict
        )
    with rgrad.set_grad_enabled(True if create_graph else rgrad.is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    r"""The product of the Hessian of the scalar function ``func`` at ``inputs`` with a vector ``v``.

    Computed with the double-backward trick on the gradient, as torch does.

    Args:
        func: A function of Tensors returning a Tensor with a single element.
        inputs: The inputs of ``func`` (a Tensor or a tuple of Tensors).
        v: The vector, shaped as ``inputs``; may be None only for a single one-element input.
        create_graph: Make the results differentiable (w.r.t. inputs that require grad).
        strict: Raise when the Hessian does not depend on an input instead of returning zeros.

    Returns:
        ``(func_output, hvp)``.
    """
    with rgrad.enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _hessian_product_start(
            "hvp", func, inputs, v, create_graph, strict
        )
        grad_jac = tuple(rgrad.zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        # torch checks `jac` again here (not `double_back`); kept as is
        _check_requires_grad(jac, "hessian", strict=strict)
    with rgrad.set_grad_enabled(True if create_graph else rgrad.is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)
