"""Activation checkpointing (torch/utils/checkpoint.py): trade compute for memory by
recomputing a function's intermediate results in backward instead of keeping them.

Two implementations, as in torch:

- reentrant (``use_reentrant=True``): a custom Function that runs the function under
  ``no_grad`` and, in backward, reruns it under ``enable_grad`` (restoring the RNG state
  of the forward) and backpropagates through the recomputed graph;
- non-reentrant (``use_reentrant=False``): the function runs with its graph recorded, but
  under saved-tensor hooks whose pack keeps a handle instead of each saved tensor; the
  first unpack reruns the function (once per backward call) and the handles find the
  recomputed tensors. A mismatch of the recomputed tensors' metadata raises torch's
  ``CheckpointError``.

rgrad runs on the CPU: no device RNG state is saved, and autocast does not exist, so the
autocast contexts torch enters are left out. Selective activation checkpointing
(``create_selective_checkpoint_contexts``) needs torch's dispatch modes and is not here.
"""

from __future__ import annotations

import contextlib
import functools
import uuid
import warnings
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any, ContextManager, DefaultDict, Dict, List, NoReturn, Optional, Tuple
from weakref import ReferenceType

import rgrad
from rgrad import _C

__all__ = [
    "checkpoint",
    "checkpoint_sequential",
    "CheckpointError",
    "CheckpointFunction",
    "check_backward_validity",
    "detach_variable",
    "get_device_states",
    "set_device_states",
    "noop_context_fn",
    "set_checkpoint_early_stop",
    "DefaultDeviceType",
    "set_checkpoint_debug_enabled",
    "GraphExecGroup",
]

_DEFAULT_DETERMINISM_MODE = "default"

_checkpoint_debug_enabled: Optional[bool] = None


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: Optional[bool]):
    """
    Context manager that sets whether checkpoint should print additional debug
    information when running. See the ``debug`` flag for
    :func:`~rgrad.utils.checkpoint.checkpoint` for more information. Note that
    when set, this context manager overrides the value of ``debug`` passed to
    checkpoint. To defer to the local setting, pass ``None`` to this context.

    Args:
        enabled (bool): Whether checkpoint should print debug information.
            Default is 'None'.
    """
    global _checkpoint_debug_enabled
    try:
        prev = _checkpoint_debug_enabled
        _checkpoint_debug_enabled = enabled
        yield
    finally:
        _checkpoint_debug_enabled = prev


def detach_variable(inputs: Tuple[Any, ...]) -> Tuple[Any, ...]:
    if isinstance(inputs, tuple):
        out = []
        for inp in inputs:
            if not isinstance(inp, rgrad.Tensor):
                out.append(inp)
                continue

            x = inp.detach()
            x.requires_grad = inp.requires_grad
            out.append(x)
        return tuple(out)
    else:
        raise RuntimeError(
            f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}"
        )


def check_backward_validity(inputs: Iterable[Any]) -> None:
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, rgrad.Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


class _CpuDeviceModule:
    """What checkpoint asks of a device module, for the CPU (rgrad's only device): never
    "initialized", so no device RNG state is saved."""

    _initialized = False

    @staticmethod
    def device_count() -> int:
        return 0


def _get_device_module(device="cuda"):
    if device == "meta":
        return rgrad.device("cpu")
    return getattr(rgrad, device, _CpuDeviceModule)


class DefaultDeviceType:
    r"""
    A class that manages the default device type for checkpointing.

    If no non-CPU tensors are present, the default device type will
    be used. Without an accelerator (rgrad has none) it is 'cpu'. The device type is
    used in the checkpointing process when determining which device states to save and
    restore for recomputation.
    """

    _default_device_type: Optional[str] = None

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        """
        Set the default device type for checkpointing.

        Args:
            device (str): The device type to be set as default. Default is 'cuda'.
        """
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        """
        Get the current default device type for checkpointing.

        Returns:
            str: The current default device type.
        """
        if not DefaultDeviceType._default_device_type:
            DefaultDeviceType._default_device_type = "cpu"

        return DefaultDeviceType._default_device_type


def _tree_leaves(args) -> list:
    """The leaves of nested lists, tuples and dicts (torch's pytree, for tensors)."""
    out: list = []
    stack = [args]
    while stack:
        a = stack.pop()
        if isinstance(a, (list, tuple)):
            stack.extend(reversed(a))
        elif isinstance(a, dict):
            stack.extend(reversed(list(a.values())))
        else:
            out.append(a)
    return out


def _infer_device_type(*args):
    device_types = [
        arg.device.type for arg in _tree_leaves(args) if isinstance(arg, rgrad.Tensor) and arg.device.type != "cpu"
    ]

    device_types_set = set(device_types)
    if len(device_types_set) > 1:
        warnings.warn(
            "Tensor arguments, excluding CPU tensors, are detected on at least two types of devices. "
            "Device state will only be saved for devices of a single device type, and the remaining "
            "devices will be ignored. Consequently, if any checkpointed functions involve randomness, "
            "this may result in incorrect gradients. (Note that if CUDA devices are among the devices "
            "detected, it will be prioritized; otherwise, the first device encountered will be selected.)"
            f"\nDevice types: {sorted(device_types_set)} first device type: {device_types[0]}",
            stacklevel=2,
        )
    if len(device_types) == 0:
        return DefaultDeviceType.get_device_type()
    elif "cuda" in device_types_set:
        return "cuda"
    else:
        return device_types[0]


def get_device_states(*args) -> Tuple[List[int], List[Any]]:
    """The RNG states of the devices of the tensors in ``args`` (none on the CPU)."""
    fwd_device_ids = [
        arg.get_device()
        for arg in _tree_leaves(args)
        if isinstance(arg, rgrad.Tensor) and arg.device.type not in {"cpu", "meta"}
    ]
    fwd_device_states: List[Any] = []
    device_module = _get_device_module(_infer_device_type(*args))
    for device_id in fwd_device_ids:
        with device_module.device(device_id):
            fwd_device_states.append(device_module.get_rng_state())

    return fwd_device_ids, fwd_device_states


def set_device_states(devices, states, *, device_type=None) -> None:
    """Sets random number generator states for the specified devices.

    Args:
        devices: Device ids to set states for.
        states: States to set.
        device_type: ``device_type`` of the devices to set states for. Default
            is the device returned by a call to ``DefaultDeviceType.get_device_type()``.
    """
    if device_type is None:
        device_type = DefaultDeviceType.get_device_type()
    if device_type == "meta":
        return
    device_module = _get_device_module(device_type)
    for device, state in zip(devices, states, strict=False):
        with device_module.device(device):
            device_module.set_rng_state(state)


class CheckpointFunction(rgrad.autograd.Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.device_type = _infer_device_type(*args)
        if preserve_rng_state:
            ctx.fwd_cpu_state = rgrad.random._rng_state_bytes()  # (5 KB, as torch's uint8 state)
            # Don't eagerly initialize a device context by accident.
            ctx.had_device_in_fwd = False
            device_module = _get_device_module(ctx.device_type)
            if getattr(device_module, "_initialized", False):
                ctx.had_device_in_fwd = True
                ctx.fwd_devices, ctx.fwd_device_states = get_device_states(*args)

        # Save non-tensor inputs in ctx, keep a placeholder None for tensors
        # to be filled out during the backward.
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if rgrad.is_tensor(arg):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)

        ctx.save_for_backward(*tensor_inputs)

        with rgrad.no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        if not rgrad.autograd._is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible"
                " with .grad() or passing an `inputs` parameter to .backward()."
                " To resolve this error, you can either set use_reentrant=False,"
                " or call .backward() without passing the `inputs` argument."
            )
        # Copy the list to avoid modifying original list.
        inputs = list(ctx.inputs)
        tensor_indices = ctx.tensor_indices
        tensors = ctx.saved_tensors

        # Fill in inputs with appropriate saved tensors.
        for i, idx in enumerate(tensor_indices):
            inputs[idx] = tensors[i]

        # Stash the surrounding rng state, and mimic the state that was
        # present at this time during forward.  Restore the surrounding state
        # when we're done.
        rng_devices = []
        if ctx.preserve_rng_state and ctx.had_device_in_fwd:
            rng_devices = ctx.fwd_devices
        with rgrad.random.fork_rng(devices=rng_devices, enabled=ctx.preserve_rng_state, device_type=ctx.device_type):
            if ctx.preserve_rng_state:
                rgrad.set_rng_state(ctx.fwd_cpu_state)
                if ctx.had_device_in_fwd:
                    set_device_states(ctx.fwd_devices, ctx.fwd_device_states, device_type=ctx.device_type)
            detached_inputs = detach_variable(tuple(inputs))

            with rgrad.enable_grad():
                outputs = ctx.run_function(*detached_inputs)

        if isinstance(outputs, rgrad.Tensor):
            outputs = (outputs,)

        # run backward() with only tensor that requires grad
        outputs_with_grad = []
        args_with_grad = []
        for i in range(len(outputs)):
            if rgrad.is_tensor(outputs[i]) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if len(outputs_with_grad) == 0:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        rgrad.autograd.backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp.grad if isinstance(inp, rgrad.Tensor) else None for inp in detached_inputs)

        return (None, None) + grads


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


class _CheckpointedFunction:
    def __init__(self, function, **checkpoint_kwargs):
        self.function = function
        self.checkpoint_kwargs = dict(checkpoint_kwargs)
        functools.update_wrapper(self, function, updated=())

    def __call__(self, *args, **kwargs):
        return _checkpoint_impl(
            self.function,
            args,
            kwargs,
            **self.checkpoint_kwargs,
        )

    def __get__(self, instance, owner=None):
        # Supports using the curried form as a method decorator: bound to an instance, the
        # wrapped function is bound too and re-wrapped with the same configuration.
        if instance is None:
            return self
        descriptor_get = getattr(self.function, "__get__", None)
        if descriptor_get is None:
            return self
        return type(self)(
            descriptor_get(instance, owner),
            **self.checkpoint_kwargs,
        )


def _make_checkpoint_wrapper(function, **checkpoint_kwargs):
    return _CheckpointedFunction(function, **checkpoint_kwargs)


def checkpoint(
    function=None,
    *args,
    use_reentrant: Optional[bool] = None,
    preserve_rng_state: bool = True,
    context_fn: Callable[[], Tuple[ContextManager, ContextManager]] = noop_context_fn,
    determinism_check: str = _DEFAULT_DETERMINISM_MODE,
    debug: bool = False,
    early_stop: bool = True,
    respect_saved_tensors_hooks: Optional[bool] = None,
    **kwargs,
):
    r"""Checkpoint a model or part of the model.

    Activation checkpointing is a technique that trades compute for memory.
    Instead of keeping tensors needed for backward alive until they are used in
    gradient computation during backward, forward computation in checkpointed
    regions omits saving tensors for backward and recomputes them during the
    backward pass. Activation checkpointing can be applied to any part of a model.

    There are currently two checkpointing implementations available, determined
    by the :attr:`use_reentrant` parameter. It is recommended that you use
    ``use_reentrant=False``.

    .. warning::

        The ``use_reentrant`` parameter should be passed explicitly. In a future
        release, we will raise an exception if ``use_reentrant`` is not passed.

    Args:
        function: describes what to run in the forward pass of the model or
            part of the model. If omitted, ``checkpoint`` returns a decorator.
        args: tuple containing inputs to the :attr:`function`

    Keyword args:
        preserve_rng_state(bool, optional): Omit stashing and restoring the RNG state
            during each checkpoint. Default: ``True``
        use_reentrant(bool): specify whether to use the activation checkpoint variant
            that requires reentrant autograd.
        context_fn(Callable, optional): A callable returning a tuple of two context
            managers. The function and its recomputation will be run under the first and
            second context managers respectively. Only with ``use_reentrant=False``.
        determinism_check(str, optional): ``"default"`` compares the shapes, dtypes and
            devices of the recomputed tensors against those of the saved tensors;
            ``"none"`` turns the check off. Only with ``use_reentrant=False``.
        debug(bool, optional): If ``True``, error messages will also include a trace of
            the operators ran during the original forward computation as well as the
            recomputation. Only with ``use_reentrant=False``.
        early_stop(bool, optional): If ``True``, non-reentrant checkpoint stops
            recomputation as soon as it has computed all needed Tensors.
        respect_saved_tensors_hooks(bool, optional): For selective activation
            checkpointing (which rgrad does not have); only with ``use_reentrant=False``.

    Returns:
        Output of running :attr:`function` on :attr:`*args`, or a decorator when
        :attr:`function` is omitted.
    """
    if function is None and not args:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
        return functools.partial(
            _make_checkpoint_wrapper,
            use_reentrant=use_reentrant,
            preserve_rng_state=preserve_rng_state,
            context_fn=context_fn,
            determinism_check=determinism_check,
            debug=debug,
            early_stop=early_stop,
            respect_saved_tensors_hooks=respect_saved_tensors_hooks,
        )

    return _checkpoint_impl(
        function,
        args,
        kwargs,
        use_reentrant=use_reentrant,
        preserve_rng_state=preserve_rng_state,
        context_fn=context_fn,
        determinism_check=determinism_check,
        debug=debug,
        early_stop=early_stop,
        respect_saved_tensors_hooks=respect_saved_tensors_hooks,
    )


def _checkpoint_impl(
    function,
    args,
    kwargs,
    *,
    use_reentrant: Optional[bool] = None,
    preserve_rng_state: bool = True,
    context_fn: Callable[[], Tuple[ContextManager, ContextManager]] = noop_context_fn,
    determinism_check: str = _DEFAULT_DETERMINISM_MODE,
    debug: bool = False,
    early_stop: bool = True,
    respect_saved_tensors_hooks: Optional[bool] = None,
):
    preserve = preserve_rng_state

    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be "
            "passed explicitly. In a future release, calling checkpoint "
            "without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=3,
        )
        use_reentrant = True

    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False or respect_saved_tensors_hooks is not None:
            raise ValueError(
                "Passing `context_fn`, `debug`, or `respect_saved_tensors_hooks` "
                "is only supported when use_reentrant=False."
            )
        return CheckpointFunction.apply(function, preserve, *args)
    else:
        gen = _checkpoint_without_reentrant_generator_impl(
            function,
            args,
            kwargs,
            preserve_rng_state=preserve,
            context_fn=context_fn,
            determinism_check=determinism_check,
            debug=debug,
            early_stop=early_stop,
            respect_saved_tensors_hooks=respect_saved_tensors_hooks,
        )
        # Runs pre-forward logic
        next(gen)
        try:
            ret = function(*args, **kwargs)
        except BaseException as e:
            try:
                gen.throw(e)
            except StopIteration as stop:
                raise RuntimeError(
                    "torch.utils.checkpoint: the forward context provided by "
                    "context_fn suppressed an exception raised during the "
                    "checkpointed forward. This is not supported because "
                    "checkpoint cannot return a value for a failed forward."
                ) from stop
            raise
        # Runs post-forward logic
        try:
            next(gen)
        except StopIteration:
            return ret
        raise AssertionError(
            "torch.utils.checkpoint: expected context_fn generator to yield "
            "exactly twice, but it yielded more than twice."
        )


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):  # noqa: A002
    r"""Checkpoint a sequential model to save memory.

    Sequential models execute a list of modules/functions in order
    (sequentially). Therefore, we can divide such a model in various segments
    and checkpoint each segment. All segments except the last will not store
    the intermediate activations. The inputs of each checkpointed segment will
    be saved for re-running the segment in the backward pass.

    Args:
        functions: A list of callables (or an object whose ``children()`` lists them,
            as ``nn.Sequential``'s does) to run sequentially.
        segments: Number of chunks to create in the model
        input: A Tensor that is input to :attr:`functions`
        preserve_rng_state(bool, optional):  Omit stashing and restoring
            the RNG state during each checkpoint. Default: ``True``
        use_reentrant(bool): specify whether to use the activation checkpoint variant
            that requires reentrant autograd.

    Returns:
        Output of running :attr:`functions` sequentially on :attr:`*inputs`
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
            "parameter should be passed explicitly. "
            "In a future release, we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True

    # Hack for keyword-only parameter in a python 2.7-compliant way
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):  # noqa: A002
            for j in range(start, end + 1):
                input = functions[j](input)
            return input

        return forward

    if not isinstance(functions, (list, tuple)) and callable(getattr(functions, "children", None)):
        # an nn.Sequential-like container
        functions = list(functions.children())

    segment_size = len(functions) // segments
    # the last chunk has to be non-volatile
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(
            run_function(start, end, functions),
            input,
            use_reentrant=use_reentrant,
            preserve_rng_state=preserve,
        )
    return run_function(end + 1, len(functions) - 1, functions)(input)


def _internal_assert(cond) -> None:
    if not cond:
        raise AssertionError(
            "Something went unexpectedly wrong in activation checkpoint. "
            "Please report this bug by filing an issue to PyTorch."
        )


# NOTE [ Nestable Checkpoint ] (torch's)
#
# Rule 1. Saved tensors are managed by inner-most checkpoint only and hidden
#         from any outer layers of checkpoint.
# Rule 2. The inputs of inner checkpoints are treated as tensors saved to its
#         parent checkpoint.
# Rule 3. We should start recomputation as if there are no checkpoints currently
#         active. Checkpoints encountered during recomputation are still
#         respected.
# Rule 4. Recomputed tensors are specific to a backward call and are cleared as
#         they are unpacked, even if retain_graph=True (we pack a holder object that
#         is cleared as we unpack).
# Rule 5. Stop recomputation as soon as we've recomputed the saved tensors we
#         know we need (a _StopRecomputationError raised from the pack hook).
# Rule 6. We support doing backward inside checkpoint context.

_enable_checkpoint_early_stop: Optional[bool] = None


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Controls whether checkpoint should stop recomputation early.

    By default, non-reentrant checkpoint stops recomputation as soon as it
    has computed all needed Tensors. This context manager can be used to disable
    that feature if it is problematic for your specific application.

    This context manager only needs to be active when forward is run. It does
    not need to be active during backward.
    """
    global _enable_checkpoint_early_stop
    try:
        prev = _enable_checkpoint_early_stop
        _enable_checkpoint_early_stop = enable
        yield
    finally:
        _enable_checkpoint_early_stop = prev


class _Handle:
    pass


class _Holder:
    def __init__(self) -> None:
        self.handles: Dict[int, Optional[_Handle]] = {}


class _CheckpointFrame:
    def __init__(self, recompute_fn, early_stop, unpack_error_cb, metadata_fn) -> None:
        self.recompute_fn = recompute_fn
        self.saved_args: List[Any] = []
        self.weak_holders: List[ReferenceType] = []
        # We store this as a weakkeydictionary so that in the case of a partial
        # backward, the entries in the dict are cleared alongside the Holder
        # which will be removed when the SavedVariable is cleared.
        self.recomputed: DefaultDict[int, weakref.WeakKeyDictionary[_Handle, Any]] = defaultdict(
            weakref.WeakKeyDictionary
        )
        # We need both recomp_counter and recomputed since they can diverge
        self.recomp_counter: DefaultDict[int, int] = defaultdict(int)
        self.is_recomputed: DefaultDict[int, bool] = defaultdict(bool)

        # See Rule 5
        self.early_stop = early_stop

        # Debugging
        self.metadata_fn = metadata_fn
        self.unpack_error_cb = unpack_error_cb
        self.x_metadatas: List[Any] = []
        self.forward_completed = False
        self.ignore_saved_mismatch = False

    def save_inputs(self, *args):
        self.saved_args = [
            _C._make_saved_tensor(arg, is_output=False) if isinstance(arg, rgrad.Tensor) else arg for arg in args
        ]

    def get_inputs(self):
        return [arg.unpack() if isinstance(arg, _C.SavedTensor) else arg for arg in self.saved_args]

    def check_recomputed_tensors_match(self, gid) -> None:
        if self.ignore_saved_mismatch:
            return
        # 1. During recompute, more tensors were saved: hidden by the
        #    _StopRecomputationError, or an error in the recomputation hook.
        if not len(self.weak_holders) == self.recomp_counter[gid]:
            # 2. During recompute, fewer tensors were saved
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved "
                "during the original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.weak_holders)}\n"
                f"Number of tensors saved during recomputation: {self.recomp_counter[gid]}.\n"
                f"{_debug_tip_msg}"
            )

        # 3. During recompute, the same tensors were saved, but they
        #    have different metadata
        nb_meta_different = []
        for idx, weak_holder in enumerate(self.weak_holders):
            holder = weak_holder()
            if holder is None:
                continue
            # For every holder that is still alive now, it must've been
            # alive when we saw it during recompute, therefore, the
            # gid must be set.
            _internal_assert(gid in holder.handles)
            # We know this is the first unpack, so it couldn't have been set
            # to None yet.
            _internal_assert(holder.handles[gid] is not None)
            # We always set these together in the recomputation hook
            _internal_assert(holder.handles[gid] in self.recomputed[gid])
            # see pack hook, x_metadata is 1:1 with weak_holders.
            x_meta = self.x_metadatas[idx]
            recomputed_x = self.recomputed[gid][holder.handles[gid]]
            if x_meta != self.metadata_fn(recomputed_x):
                nb_meta_different.append((idx, x_meta, self.metadata_fn(recomputed_x)))

        if len(nb_meta_different) > 0:
            mismatched_tensors = ""
            for idx, x_meta, recomputed_meta in nb_meta_different:
                mismatched_tensors += (
                    f"tensor at position {idx}:\n"
                    f"saved metadata: {x_meta}\n"
                    f"recomputed metadata: {recomputed_meta}\n"
                )
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors "
                "have different metadata than during the forward pass.\n"
                f"{mismatched_tensors}.\n"
                f"{_debug_tip_msg}"
            )


_debug_tip_msg = """
Tip: To see a more detailed error message, either pass `debug=True` to
`torch.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint‑debug mode globally.

If this error occurs under torch.compile with automatic_dynamic_shapes enabled,
it may be because the recomputation selected a different compiled graph than the
forward pass (e.g., a dynamic graph instead of the original static graph).
To fix this, either:
  - Use torch._dynamo.mark_dynamic() to explicitly mark varying dimensions as
    dynamic upfront, avoiding the static-to-dynamic transition.
  - Call torch._C._dynamo.eval_frame._set_lru_cache(False) to disable LRU cache
    reordering, which can change which graph is checked first between forward
    and recompute.
See https://github.com/pytorch/pytorch/issues/166926 for more details and
workaround examples.
"""


_checkpoint_error_template = """ \
An error happened while unpacking tensors; dumping logs of latest computation
because you passed `debug=True` to `torch.utils.checkpoint.checkpoint()`.
Scroll all the way down for guidance on how to navigate these logs.

+~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~+
|        1. Stack traces of the operators that ran in the original forward     |
+------------------------------------------------------------------------------+

{forward_traces}
+~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~+
|        2. Stack traces of the operators that ran during recomputation        |
+------------------------------------------------------------------------------+

{recompute_traces}
+~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~+
|       3. Log of operators in the original forward and recomputation          |
+------------------------------------------------------------------------------+
(Scroll up to correlate stack traces with each operation listed below. This
 helps identify their source in the code.)

IMPORTANT: Differences in "detach" calls between the original forward and the
           recomputation are expected. They are introduced by the checkpointing
           mechanism and can be ignored.

Operations executed during the original forward:

{forward_ops}

Operations executed during recomputation:

{recompute_ops}

+------------------------------------------------------------------------------+
 ERROR: Detected non-determinism while running activation checkpointing

 You are seeing this error because you passed `debug=True` to checkpoint and
 tensors to be saved during the original forward and differ between those saved
 during recomputation. This can happen if different operators were ran in the
 original forward and in the recomputation.

 To identify where the mismatch may be coming from, you can do the following:

 1) Compare the operators ran during original forward and recomputation to
    see where they differ. These operators are printed above in the order they
    were executed.

 2) Review the stack trace for each operator to locate its invocation source.
    Each operator's stack trace is printed in their execution order.

 Note that the logs can be quite long. Here's how they are structured:
 (Tip: you can Ctrl-f for these headers)

 1. Stack traces of the operators that ran in the original forward
 2. Stack traces of the operators that ran during recomputation
 3. Log of operators in the original forward and recomputation
 4. Error message                                             <--- You are here
--------------------------------------------------------------------------------
"""


class CheckpointError(RuntimeError):
    pass


def _get_debug_context_and_cb() -> Tuple[Callable[[], Any], Callable[[CheckpointError], None]]:
    # The context_fn and error_cb of debug mode: the ops of the forward and of the
    # recomputation are logged (with their Python stacks), and dumped when unpacking
    # raises a CheckpointError. torch logs them with a dispatch mode; rgrad with its
    # op observer (`_C._push_op_log`).

    class CaptureLogs:
        def __init__(self) -> None:
            self.logs: Optional[List[str]] = None
            self.tbs: Optional[List[List[Dict[str, Any]]]] = None

        def get_context_manager(self):
            @contextlib.contextmanager
            def logging_mode():
                logs: List[str] = []
                tbs: List[List[Dict[str, Any]]] = []
                self.logs, self.tbs = logs, tbs
                with _op_log(logs, tbs):
                    yield logs, tbs

            return logging_mode()

    capture_logs_fwd = CaptureLogs()
    capture_logs_recompute = CaptureLogs()

    def unpack_error_cb(e: CheckpointError) -> NoReturn:
        def get_str_tb(label, capture_logs):
            out = ""
            total_len = len(capture_logs.logs)
            for i, (log, tb) in enumerate(zip(capture_logs.logs, capture_logs.tbs, strict=False)):
                out += f"{log}   ({i + 1} of {total_len} in {label})\n\n"
                for line in tb:
                    out += f"{line['filename']}:{line['line']}:{line['name']}\n"
                out += "\n\n"
            return out

        if capture_logs_fwd.logs is None:
            raise AssertionError("capture_logs_fwd.logs is None")
        if capture_logs_recompute.logs is None:
            raise AssertionError("capture_logs_recompute.logs is None")
        raise CheckpointError(
            _checkpoint_error_template.format(
                forward_traces=get_str_tb("original", capture_logs_fwd),
                recompute_traces=get_str_tb("recompute", capture_logs_recompute),
                forward_ops="\n".join(capture_logs_fwd.logs),
                recompute_ops="\n".join(capture_logs_recompute.logs),
            )
        ) from e

    def context_fn():
        return capture_logs_fwd.get_context_manager(), capture_logs_recompute.get_context_manager()

    return context_fn, unpack_error_cb


@contextlib.contextmanager
def _op_log(logs: List[str], tbs: List[List[Dict[str, Any]]]):
    """Logs every op run on this thread meanwhile (by name, numbered) with the Python
    stack it was called from (innermost last)."""
    import traceback

    def record(name: str) -> None:
        logs.append(f"${len(logs)}: {name}")
        tbs.append(
            [{"filename": f.filename, "line": f.lineno, "name": f.name} for f in traceback.extract_stack()[:-1]]
        )

    _C._push_op_log(record)
    try:
        yield
    finally:
        _C._pop_op_log()


def _default_meta_extractor(x) -> Dict[str, Any]:
    # These properties are fast to check, easy to understand
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


_allowed_determinism_checks_to_fns: Dict[str, Callable[[Any], Any]] = {
    _DEFAULT_DETERMINISM_MODE: _default_meta_extractor,
    "none": lambda _: None,
}


# See Rule 5
class _StopRecomputationError(Exception):
    pass


def _current_user_saved_tensors_hooks():
    # The (pack, unpack) pair a saved tensor made right now would use, skipping
    # checkpoint-internal hooks, or None.
    hooks = _C._top_saved_tensors_default_hooks(False)
    while hooks is not None and getattr(hooks[0], "_checkpoint_internal", False):
        hooks = hooks[0]._user_hooks
    return hooks


class _checkpoint_internal_hook(rgrad.autograd.graph.saved_tensors_hooks):  # noqa: N801
    # _user_hooks must only exist while we are on the hooks stack: the graph keeps the
    # pack hook alive, so a persistent attribute would give the graph a strong reference
    # to the user's hooks.
    def __enter__(self):
        self.pack_hook._user_hooks = _current_user_saved_tensors_hooks()
        return super().__enter__()

    def __exit__(self, *args):
        del self.pack_hook._user_hooks
        return super().__exit__(*args)


class _recomputation_hook(_checkpoint_internal_hook):  # noqa: N801
    def __init__(self, target_frame_ref: ReferenceType, gid: "GraphExecGroup | int") -> None:
        def pack_hook(x):
            x = x.detach() if x.requires_grad else x
            target_frame = target_frame_ref()
            if target_frame is None:
                raise AssertionError("Internal error: target_frame reference is None")
            recomp_idx = target_frame.recomp_counter[gid]
            target_frame.recomp_counter[gid] += 1

            if recomp_idx >= len(target_frame.weak_holders):
                if target_frame.early_stop:
                    raise AssertionError("Unexpected state: target_frame.early_stop is set")
                if not target_frame.forward_completed:
                    # We run into this case when early stop is not enabled and do
                    # grad within checkpoint.
                    target_frame.ignore_saved_mismatch = True
                    return x
                raise CheckpointError(
                    "torch.utils.checkpoint: trying to save more tensors during "
                    "recomputation than during the original forward pass.\n"
                    f"{_debug_tip_msg}"
                )

            holder = target_frame.weak_holders[recomp_idx]()

            # This holder may have been cleared because someone may have called
            # backward within forward. If so, we don't need to save.
            if holder is not None:
                _internal_assert(holder.handles.get(gid, None) is None)
                holder.handles[gid] = _Handle()
                target_frame.recomputed[gid][holder.handles[gid]] = x

            if target_frame.early_stop and target_frame.recomp_counter[gid] == len(target_frame.weak_holders):
                raise _StopRecomputationError
            # See Rule 6: [ retain_graph is True ] above
            return x

        def unpack_hook(x):
            # See Rule 6: [ retain_graph is True ] above for an example of when
            # the graph created during recomputation could be backwarded.
            return x

        pack_hook._checkpoint_internal = True  # type: ignore[attr-defined]
        super().__init__(pack_hook, unpack_hook)


class _checkpoint_hook(_checkpoint_internal_hook):  # noqa: N801
    def __init__(self, frame) -> None:
        def pack_hook(x):
            # See Rule 4 above
            holder = _Holder()
            frame.weak_holders.append(weakref.ref(holder))
            # Save metadata to detect non-determinism
            if frame.metadata_fn is not None:
                with rgrad.no_grad():
                    frame.x_metadatas.append(frame.metadata_fn(x))
            return holder

        def unpack_hook(holder):
            # First check if we're inside a GraphExecGroup context
            gid: "GraphExecGroup | None | int" = GraphExecGroup._get_current_group()
            if gid is None:
                # Fallback to using the current graph task id
                gid = _C._current_graph_task_id()
                if gid == -1:
                    # generate a temporary id if we trigger unpack outside of a backward call
                    gid = int(uuid.uuid4())

            if not frame.is_recomputed[gid]:
                args = frame.get_inputs()

                try:
                    with _recomputation_hook(weakref.ref(frame), gid), rgrad.enable_grad():
                        frame.recompute_fn(*args)
                except _StopRecomputationError:
                    pass
                frame.is_recomputed[gid] = True
                frame.check_recomputed_tensors_match(gid)

            _internal_assert(gid in holder.handles)

            if holder.handles[gid] is None:
                extra = ""
                if GraphExecGroup._get_current_group() is not None:
                    extra = (
                        "Performing two backward calls that overlap (i.e. require the same "
                        "saved activation in order to compute gradients) is not allowed while "
                        "under the torch.utils.checkpoint.GraphExecGroup context. "
                    )
                raise CheckpointError(
                    "torch.utils.checkpoint: Unpack is being triggered for a tensor that was already "
                    f"unpacked once. {extra}If you are calling ctx.saved_tensors in backward, make sure "
                    "to do so only once. Otherwise please open an issue with details on your use case."
                )
            _internal_assert(holder.handles[gid] in frame.recomputed[gid])
            ret = frame.recomputed[gid][holder.handles[gid]]
            holder.handles[gid] = None
            return ret

        pack_hook._checkpoint_internal = True  # type: ignore[attr-defined]
        if frame.unpack_error_cb is not None:

            def unpack_hook_with_error_cb(holder):
                try:
                    return unpack_hook(holder)
                except CheckpointError as e:
                    frame.unpack_error_cb(e)

            super().__init__(pack_hook, unpack_hook_with_error_cb)
        else:
            super().__init__(pack_hook, unpack_hook)


def _checkpoint_without_reentrant_generator(
    fn,
    preserve_rng_state=True,
    context_fn: Callable[[], Tuple[ContextManager, ContextManager]] = noop_context_fn,
    determinism_check: str = _DEFAULT_DETERMINISM_MODE,
    debug: bool = False,
    early_stop: bool = True,
    *args,
    respect_saved_tensors_hooks: Optional[bool] = None,
    **kwargs,
):
    # (torch's positional-args shim)
    return _checkpoint_without_reentrant_generator_impl(
        fn,
        args,
        kwargs,
        preserve_rng_state=preserve_rng_state,
        context_fn=context_fn,
        determinism_check=determinism_check,
        debug=debug,
        early_stop=early_stop,
        respect_saved_tensors_hooks=respect_saved_tensors_hooks,
    )


def _checkpoint_without_reentrant_generator_impl(
    fn,
    args,
    kwargs,
    *,
    preserve_rng_state=True,
    context_fn: Callable[[], Tuple[ContextManager, ContextManager]] = noop_context_fn,
    determinism_check: str = _DEFAULT_DETERMINISM_MODE,
    debug: bool = False,
    early_stop: bool = True,
    respect_saved_tensors_hooks: Optional[bool] = None,
):
    """Checkpointing without reentrant autograd: yields once before the forward runs,
    once after (see `_checkpoint_impl`)."""
    unpack_error_cb = None

    if _checkpoint_debug_enabled if _checkpoint_debug_enabled is not None else debug:
        if context_fn is not noop_context_fn:
            raise ValueError("debug=True is incompatible with non-default context_fn")
        context_fn, unpack_error_cb = _get_debug_context_and_cb()

    if determinism_check in _allowed_determinism_checks_to_fns:
        metadata_fn = _allowed_determinism_checks_to_fns[determinism_check]
    else:
        raise ValueError(
            f"determinism_check should be one of {list(_allowed_determinism_checks_to_fns.keys())}, "
            f"but got {determinism_check}"
        )

    device_type = _infer_device_type(*args)
    device_module = _get_device_module(device_type)
    forward_context, recompute_context = context_fn()

    if preserve_rng_state:
        fwd_cpu_state = rgrad.random._rng_state_bytes()  # (5 KB, as torch's uint8 state)
        # Don't eagerly initialize a device context by accident.
        had_device_in_fwd = False
        if getattr(device_module, "_initialized", False):
            had_device_in_fwd = True
            fwd_devices, fwd_device_states = get_device_states(*args)

    def recompute_fn(*args) -> None:
        # This will be called later during recomputation. This wrapping enables
        # the necessary global state to be captured.
        rng_devices = []
        if preserve_rng_state and had_device_in_fwd:
            rng_devices = fwd_devices
        with rgrad.random.fork_rng(devices=rng_devices, enabled=preserve_rng_state, device_type=device_type):
            if preserve_rng_state:
                rgrad.set_rng_state(fwd_cpu_state)
                if had_device_in_fwd:
                    set_device_states(fwd_devices, fwd_device_states, device_type=device_type)

            with recompute_context:
                fn(*args, **kwargs)

    new_frame = _CheckpointFrame(
        recompute_fn,
        _enable_checkpoint_early_stop if _enable_checkpoint_early_stop is not None else early_stop,
        unpack_error_cb,
        metadata_fn,
    )

    if not rgrad.is_grad_enabled():
        yield
        return

    new_frame.save_inputs(*args)

    forward_context_suppressed_exc = False
    with _checkpoint_hook(new_frame), forward_context:
        try:
            yield
        except BaseException:
            forward_context_suppressed_exc = True
            raise
    if forward_context_suppressed_exc:
        raise RuntimeError(
            "torch.utils.checkpoint: the forward context provided by "
            "context_fn suppressed an exception raised during the "
            "checkpointed forward. This is not supported because checkpoint "
            "cannot return a value for a failed forward."
        )
    new_frame.forward_completed = True

    if (
        getattr(device_module, "_initialized", False) and preserve_rng_state and not had_device_in_fwd
    ):  # type: ignore[possibly-undefined]
        # Device was not initialized before running the forward, so we didn't
        # stash the device state.
        raise RuntimeError(
            "PyTorch's device state was initialized in the forward pass "
            "of a Checkpoint, which is not allowed. Please open an issue "
            "if you need this feature."
        )

    return


_graph_exec_group: Optional["GraphExecGroup"] = None


class GraphExecGroup:
    """Any checkpointed regions encountered by backward under the same instance
    of this context manager will trigger recompute at most once, even if
    there are multiple calls to backward.

    Backward calls under the same instance of this context manager must execute
    over non-overlapping regions of the backward graph even if retain_graph=True.
    In particular, any two backward call cannot use the same saved activation for
    gradient computation.

    .. note::
        This context manager only affects checkpoint with use_reentrant=False, and
        is a no-op otherwise.
    """

    def __enter__(self) -> "GraphExecGroup":
        global _graph_exec_group
        if _graph_exec_group is not None:
            raise RuntimeError(f"GraphExecGroup contexts cannot be nested. Already inside group {_graph_exec_group}")
        _graph_exec_group = self
        return self

    def __exit__(self, *args: object) -> None:
        global _graph_exec_group
        _graph_exec_group = None

    @classmethod
    def _get_current_group(cls) -> Optional["GraphExecGroup"]:
        # Private API to be used by utils like AC
        return _graph_exec_group
