"""Graph node types (``tensor.grad_fn``) and the graph utilities of torch.autograd.graph:
saved-tensor hooks, multi-grad hooks, gradient edges, version bumps and mutation of
saved tensors."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections import defaultdict
from collections.abc import Callable, Generator, MutableMapping, Sequence
from typing import Any, Literal, NamedTuple, Optional, Union, cast
from weakref import WeakKeyDictionary, WeakValueDictionary

from rgrad import _C
from rgrad._C import AccumulateGrad, Node  # noqa: F401
from rgrad.utils.hooks import RemovableHandle

__all__ = [
    "saved_tensors_hooks",
    "save_on_cpu",
    "disable_saved_tensors_hooks",
    "node_creation_hook",
    "register_multi_grad_hook",
    "allow_mutation_on_saved_tensors",
    "Node",
    "GradientEdge",
    "get_gradient_edge",
    "increment_version",
    "queue_callback",
]

_node_classes: dict = {}


def _node_getattr(self, name: str) -> Any:
    """``node._saved_<field>`` / ``node._raw_saved_<field>``: what torch's generated node of
    the op saved (a tensor, unpacked with the version check, or an argument)."""
    if name.startswith("_saved_"):
        return _C._node_saved_field(self, name[len("_saved_"):], False)
    if name.startswith("_raw_saved_"):
        return _C._node_saved_field(self, name[len("_raw_saved_"):], True)
    raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


def _node_dir(self) -> list:
    names = set(object.__dir__(self))
    for field, is_tensor in _C._node_saved_names(self):
        names.add("_saved_" + field)
        if is_tensor:
            names.add("_raw_saved_" + field)
    return sorted(names)


def _node_class(name: str) -> type:
    """The Node subclass named after an op (``MulBackward0``), created on first use."""
    cls = _node_classes.get(name)
    if cls is None:
        short = name.rsplit("::", 1)[-1]  # torch's C++ nodes are types named without namespace
        cls = _node_classes[name] = type(short, (Node,), {
            "__slots__": (),
            "__module__": "rgrad.autograd.graph",
            "__getattr__": _node_getattr,
            "__dir__": _node_dir,
        })
    return cls


class _InputMetadata(NamedTuple):
    """What a node knows of the gradient of one of its outputs (``node._input_metadata``)."""

    shape: tuple
    dtype: Any
    device: Any = None
    is_nested_tensor: bool = False
    is_cpp_nested_tensor: bool = False


def _input_metadata(shape: tuple, dtype: Any) -> _InputMetadata:
    import rgrad

    return _InputMetadata(rgrad.Size(shape), dtype, rgrad.device("cpu"))


def _get_grad_fn_or_grad_acc(t: Union["Any", "GradientEdge"]) -> Any:
    if isinstance(t, GradientEdge):
        return t.node
    if t.requires_grad and t.grad_fn is None:
        node = _C._grad_accumulator(t)
    else:
        node = t.grad_fn
    if node is None:
        raise AssertionError("Expected gradient function to be set")
    return node


class GradientEdge(NamedTuple):
    """Object representing a given gradient edge within the autograd graph.

    To get the gradient edge where a given Tensor gradient will be computed,
    you can do ``edge = autograd.graph.get_gradient_edge(tensor)``.
    """

    node: Any
    output_nr: int
    # This token can be used to ensure the graph stays alive when it cannot be
    # done via the node field
    ownership_token: Optional[Any] = None


def get_gradient_edge(tensor) -> GradientEdge:
    """Get the gradient edge for computing the gradient of the given Tensor.

    In particular, it is equivalent to call
    ``g = autograd.grad(loss, input)`` and ``g = autograd.grad(loss, get_gradient_edge(input))``.
    """
    if not tensor.requires_grad:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does not require gradients",
        )
    grad_fn = _get_grad_fn_or_grad_acc(tensor)

    # A custom Function's node object (its ctx) does not keep the graph alive (the graph
    # owns it): a new node that owns the graph does.
    token = None
    if isinstance(grad_fn, _C._FunctionBase):
        from rgrad.autograd.grad_mode import enable_grad

        with enable_grad():
            token = tensor.view_as(tensor).grad_fn

    # Note that output_nr default to 0 which is the right value
    # for the AccumulateGrad node.
    return GradientEdge(grad_fn, tensor.output_nr, ownership_token=token)


def increment_version(tensor) -> None:
    """Update autograd metadata tracking whether the given Tensor was modified in place.

    This is to enable more accurate error checking within the autograd engine.
    It is already done automatically by rgrad functions and within custom Function
    when mark_dirty() is called appropriately so you only need to call this explicitly
    if you are doing inplace operation on the Tensor data in a way that rgrad doesn't
    know about. Can accept either a tensor, or a list of tensors.

    Note that incrementing the version counter multiple times for a single inplace operation
    is not problematic.
    """
    if isinstance(tensor, _C.Tensor):
        tensor = (tensor,)
    _C._increment_version(tensor)


class node_creation_hook:  # noqa: N801  (torch's name)
    """Context-manager that registers a hook called on each autograd Node created within it.

    In that context, ``hook`` is called once for every autograd graph node created by
    operations on tensors that require grad, with the freshly created
    :class:`rgrad.autograd.graph.Node` as its only argument. The intended use is to record
    the node, stash entries in ``node.metadata``, or register backward hooks on it via
    :meth:`~rgrad.autograd.graph.Node.register_hook` and
    :meth:`~rgrad.autograd.graph.Node.register_prehook`.

    The node is passed to the hook only once it is fully populated: its ``next_functions``
    are wired, all outputs' metadata are bound, and the tensors saved for backward have
    been stored (and packed by saved-tensor hooks, if any), so a hook that inspects the
    node sees its complete state.

    The hook should have the following signature::

        hook(node: rgrad.autograd.graph.Node) -> None

    The registration is thread-local and propagates like other autograd thread-local
    state: it is active on autograd engine worker threads, so nodes created during
    backward (e.g. with ``create_graph=True`` or inside checkpoint recomputation) also fire
    the hook.

    When nesting this context-manager, every active hook is called for each node, in
    registration order (outermost context-manager first). Creating a new autograd node
    from inside a hook raises an error; hooks must only observe the node they are given.

    Example::

        >>> a = rgrad.ones(5, requires_grad=True)
        >>> with rgrad.autograd.graph.node_creation_hook(lambda node: print(node)):
        ...     b = a * 2
        <AccumulateGrad object at ...>
        <MulBackward0 object at ...>

    .. note::
        A leaf's ``AccumulateGrad`` node fires this hook when it is created: the first
        time the leaf is wired into a graph within the context while no ``AccumulateGrad``
        object of it is alive. The graph made within the context keeps it alive, so it
        fires again only after that graph has been freed (the common case of freeing the
        graph each iteration fires it on each leaf's first use). rgrad makes the object
        only when it is asked for, so a graph built before entering the context does not
        keep it alive, as torch's would.
    """

    def __init__(self, hook: Callable[[Node], None]) -> None:
        self.hook = hook

    def __enter__(self) -> None:
        _C._push_node_creation_hook(self.hook)

    def __exit__(self, *args: object) -> None:
        _C._pop_node_creation_hook()


def queue_callback(callback: Callable[[], None]) -> None:
    """Queue a callback to run after the current backward pass completes.

    Must be called during a backward pass, for example from a
    :class:`rgrad.autograd.Function` backward or a backward hook. The callback runs once
    the backward pass currently executing on this thread completes successfully; it is
    not run if the backward pass raises an error. Callbacks queued multiple times run
    multiple times, in queueing order.

    Example::

        >>> t = rgrad.rand(3, requires_grad=True)
        >>>
        >>> def hook(unused_grad):
        ...     rgrad.autograd.graph.queue_callback(lambda: print("backward done"))
        >>>
        >>> _ = t.register_hook(hook)
        >>> t.sum().backward()
        backward done
    """
    _C._queue_callback(callback)


class saved_tensors_hooks:  # noqa: N801  (torch's name)
    """Context-manager that sets a pair of pack / unpack hooks for saved tensors.

    In that context, the ``pack_hook`` function will be called every time an
    operation saves a tensor for backward (this includes intermediary results
    saved using ``save_for_backward`` but also those recorded by an rgrad-defined
    operation). The output of ``pack_hook`` is then stored in the computation graph
    instead of the original tensor.

    The ``unpack_hook`` is called when the saved tensor needs to be accessed,
    namely when executing ``Tensor.backward()`` or ``autograd.grad()``. It takes as
    argument the *packed* object returned by ``pack_hook`` and should return a tensor
    which has the same content as the original tensor (passed as input to the
    corresponding ``pack_hook``).

    The hooks should have the following signatures::

        pack_hook(tensor: Tensor) -> Any

        unpack_hook(Any) -> Tensor

    The hooks are thread-local; only the inner-most pair of nested contexts applies.
    To avoid reference cycles, the return value of ``pack_hook`` cannot hold a reference
    to the input tensor (use ``lambda x: x.detach()`` rather than ``lambda x: x``).
    """

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        _C._push_saved_tensors_default_hooks(self.pack_hook, self.unpack_hook)

    def __exit__(self, *args: object) -> None:
        _C._pop_saved_tensors_default_hooks()


class save_on_cpu(saved_tensors_hooks):  # noqa: N801
    """Context manager under which tensors saved by the forward pass will be stored on
    cpu, then retrieved for backward.

    If the graph was already on CPU (rgrad's only device), no tensor copy is performed
    (with ``pin_memory=True`` a copy is made, as torch makes one into pinned memory).

    Args:
        pin_memory (bool): If ``True`` tensors will be saved to CPU pinned memory
                           during packing and copied back during unpacking.
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        import rgrad

        def pack_to_cpu(tensor):
            if not pin_memory:
                return (tensor.device, tensor.cpu())
            # (rgrad has no device to pin memory for: a plain copy, as torch makes
            # into unpinnable memory)
            packed = rgrad.empty(tensor.size(), dtype=tensor.dtype)
            packed.copy_(tensor)
            return (tensor.device, packed)

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str) -> Generator[None, None, None]:
    """Context-manager that disables the saved tensors default hooks feature.

    Useful for if you are creating a feature that does not work with saved
    tensors default hooks.

    Args:
        error_message (str): When saved tensors default hooks are used when they
                             have been disabled, a RuntimeError with this
                             error message gets raised.
    """
    maybe_prev_message = None
    try:
        maybe_prev_message = _C._saved_tensors_hooks_get_disabled_error_message()
        _C._saved_tensors_hooks_disable(error_message)
        yield
    finally:
        if maybe_prev_message is None:
            _C._saved_tensors_hooks_enable()
        else:
            _C._saved_tensors_hooks_disable(maybe_prev_message)


class _MultiHandle(RemovableHandle):
    handles: tuple

    def __init__(self, handles: tuple) -> None:
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()

    def __getstate__(self) -> tuple:
        return self.handles

    def __setstate__(self, state: tuple) -> None:
        self.handles = state


def register_multi_grad_hook(
    tensors: Sequence[Any],
    fn: Callable[[Sequence[Any]], None] | Callable[[Any], None],
    *,
    mode: Literal["all", "any"] = "all",
) -> RemovableHandle:
    r"""Register a multi-grad backward hook.

    Under the ``"all"`` mode, the hook will be called after gradients with respect to every
    tensor in :attr:`tensors` have been computed. A tensor that is not part of the graph,
    or not needed for the ``inputs`` of the current ``.backward()`` or ``.grad()`` call, is
    ignored: the hook does not wait for it, and gets ``None`` for it.

    Under the ``"any"`` mode, the hook will be called after the first gradient with
    respect to a tensor in :attr:`tensors` has been computed, with that gradient.

    The hook should not modify its arguments. Returns a handle whose ``remove()`` removes
    the hook.
    """
    supported_modes = ("all", "any")
    lock = threading.Lock()

    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")

    if mode == "all":
        count: dict[int, int] = {}
        nb_calls = None
        buffer: dict[int, list] = {}

        grad_fns = list(map(_get_grad_fn_or_grad_acc, tensors))
        len_tensors = len(tensors)

        def get_inner_hook(idx: int) -> Callable[[Any], None]:
            def inner_hook(grad) -> None:
                nonlocal count, nb_calls, buffer, fn
                id = _C._current_graph_task_id()  # noqa: A001
                if id == -1:
                    raise AssertionError("expected this hook to be called inside a backward call")
                count[id] = count.get(id, 0)
                buffer[id] = buffer.get(id, [None] * len_tensors)

                with lock:
                    curr_count, count[id] = count[id], count[id] + 1

                    if curr_count == 0:
                        # On the first call, compute the actual nb_calls and buffer
                        nb_calls = sum(map(_C._will_engine_execute_node, grad_fns))

                buffer[id][idx] = grad

                if nb_calls is None:
                    raise AssertionError("Expected nb_calls to be set")
                if curr_count == nb_calls - 1:
                    fn = cast(Callable[[Sequence[Any]], None], fn)
                    fn(buffer[id])
                    del count[id]
                    del buffer[id]

            return inner_hook

        handles = tuple(t.register_hook(get_inner_hook(i)) for i, t in enumerate(tensors))
    elif mode == "any":
        fn = cast(Callable[[Any], None], fn)
        ran_hook: dict[int, bool] = defaultdict(bool)

        @functools.wraps(fn)
        def wrapped_fn(grad) -> None:
            nonlocal ran_hook
            id = _C._current_graph_task_id()  # noqa: A001
            if id == -1:
                raise AssertionError("expected this hook to be called inside a backward call")
            with lock:
                prev, ran_hook[id] = ran_hook[id], True
            if prev:
                return
            fn(grad)

        handles = tuple(tensor.register_hook(wrapped_fn) for tensor in tensors if tensor.requires_grad)

    return _MultiHandle(handles)  # type: ignore[possibly-undefined]


# NOTE [Allow mutation on tensors saved for backward] (torch's design)
#
# 1. Tensor gets saved for backward
#    - remember the python object id and the version of the tensor
#    - remember aliasing information (data_ptr of base + version)
#    - save the original so we control its lifetime
# 2. Any time a tensor gets in-placed
#    - for each tensor aliased to it:
#      - check using its object id and version to see if it has been saved
#      - if it has been saved, clone it
#      - delete the reference to the original
# 3. during backward
#    - if the clone exists, the tensor must've been modified in-place
_allow_mutation_on_saved_tensors_enabled: bool = False


def _get_tid(tensor) -> tuple[int, int, int]:
    return (id(tensor), tensor.data_ptr(), tensor._version)


def _get_sid(tensor) -> tuple[int, int]:
    return (tensor.data_ptr(), tensor._version)


class _Handle:
    pass


class _swap_with_cloned(saved_tensors_hooks):  # noqa: N801
    def __init__(self, ctx: "_AllowMutationOnSavedContext") -> None:
        def pack_hook(tensor) -> _Handle:
            tid = _get_tid(tensor)
            sid = _get_sid(tensor)
            # Tensors saved for backward have an entry in _tid_to_weakhandle
            handle: Optional[_Handle] = None

            # Save aliasing information
            ctx.sid_to_tid[sid].add(tid)

            # NB: The same tensor (of the same version) can be saved multiple times
            if tid not in ctx.tid_to_weakhandle:
                handle = _Handle()
                ctx.tid_to_weakhandle[tid] = handle
                ctx.original[handle] = tensor
            else:
                # Store an additional strong reference to the handle
                handle = ctx.tid_to_weakhandle[tid]
            return handle

        def unpack_hook(handle: _Handle):
            error_msg = (
                "Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
                "in which the graph was originally recorded."
            )
            if not _allow_mutation_on_saved_tensors_enabled:
                raise AssertionError(error_msg)
            if handle in ctx.cloned:
                res = ctx.cloned[handle]
            else:
                if handle not in ctx.original:
                    raise AssertionError(error_msg)
                res = ctx.original[handle]
            return res

        super().__init__(pack_hook, unpack_hook)


class _CloneArgBeforeMutateMode:
    """torch's clone-before-mutate dispatch mode: every tensor an in-place op is about to
    write passes through ``maybe_clone`` first (rgrad calls it from its in-place ops)."""

    def __init__(self, ctx: "_AllowMutationOnSavedContext") -> None:
        self.ctx = ctx

    def maybe_clone(self, t) -> None:
        sid = _get_sid(t)
        ctx = self.ctx
        if sid in ctx.sid_to_tid:
            for tid in ctx.sid_to_tid[sid]:
                if tid not in ctx.tid_to_weakhandle:
                    # We know that if tid is in sid_to_tid, then it must also be in
                    # tid_to_weakhandle. However, it is possible for the tensor to be
                    # saved at one point, but cleared by backward before it is modified
                    # in-place.
                    continue
                handle = ctx.tid_to_weakhandle[tid]
                if handle in ctx.cloned:
                    # The same exact tensor has been cloned already
                    continue
                ctx.cloned[handle] = ctx.original[handle].clone()
                del ctx.original[handle]

    def __enter__(self) -> "_CloneArgBeforeMutateMode":
        _C._push_mutation_hook(self.maybe_clone)
        return self

    def __exit__(self, *args: object) -> None:
        _C._pop_mutation_hook()


class _AllowMutationOnSavedContext:
    def __init__(self) -> None:
        self.cloned: MutableMapping[_Handle, Any] = WeakKeyDictionary()
        self.original: MutableMapping[_Handle, Any] = WeakKeyDictionary()
        self.tid_to_weakhandle: MutableMapping[tuple[int, int, int], _Handle] = WeakValueDictionary()
        self.sid_to_tid: dict[tuple[int, int], set[tuple[int, int, int]]] = defaultdict(set)

    def clear(self) -> None:
        self.cloned.clear()
        self.original.clear()
        self.tid_to_weakhandle.clear()
        self.sid_to_tid.clear()


@contextlib.contextmanager
def allow_mutation_on_saved_tensors() -> Generator[_AllowMutationOnSavedContext, None, None]:
    """Context manager under which mutating tensors saved for backward is allowed.

    Under this context manager, tensors saved for backward are cloned on mutation,
    so the original version can still be used during backward. Normally, mutating a tensor
    saved for backward will result in an error raised when it's used during backward.

    To ensure the correct behavior, both the forward and backward should be run under
    the same context manager.

    Returns:
        An _AllowMutationOnSavedContext object storing the state managed by this
        context manager. The state is cleared upon exiting.
    """
    global _allow_mutation_on_saved_tensors_enabled

    ctx = _AllowMutationOnSavedContext()

    with _swap_with_cloned(ctx), _CloneArgBeforeMutateMode(ctx):
        try:
            if _allow_mutation_on_saved_tensors_enabled:
                raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
            _allow_mutation_on_saved_tensors_enabled = True
            yield ctx
        finally:
            ctx.clear()
            _allow_mutation_on_saved_tensors_enabled = False

