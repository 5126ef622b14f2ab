"""Grad-mode context managers (thread-local, as in torch); each also works as a decorator."""

from __future__ import annotations

import functools
import inspect

from rgrad import _C

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "set_multithreading_enabled",
           "enforce_grad_layout_policy"]


class _DecoratorContextManager:
    """A context manager that can also decorate functions (and generator functions)."""

    def __call__(self, func):
        if inspect.isclass(func):
            raise RuntimeError("Decorating classes is deprecated and will be disabled in future versions.")
        if inspect.isgeneratorfunction(func):

            @functools.wraps(func)
            def gen_wrapper(*args, **kwargs):
                gen = func(*args, **kwargs)
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as e:  # noqa: BLE001  (re-thrown into the generator)
                        with self.clone():
                            response = gen.throw(e)
                    else:
                        with self.clone():
                            try:
                                response = gen.send(request)
                            except StopIteration as stop:
                                return stop.value

            return gen_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):  # noqa: N801
    """Context manager that disables gradient calculation.

    Results computed inside have ``requires_grad=False``. Also usable as a decorator.
    """

    def __init__(self) -> None:
        self.prev = False

    def __enter__(self) -> None:
        self.prev = _C._set_grad_enabled(False)

    def __exit__(self, *args) -> None:
        _C._set_grad_enabled(self.prev)


class enable_grad(_DecoratorContextManager):  # noqa: N801
    """Context manager that enables gradient calculation (inside no_grad, say)."""

    def __enter__(self) -> None:
        self.prev = _C._set_grad_enabled(True)

    def __exit__(self, *args) -> None:
        _C._set_grad_enabled(self.prev)


class set_grad_enabled(_DecoratorContextManager):  # noqa: N801
    """Sets gradient calculation on or off.

    Works as a context manager, a decorator, or a plain call (which takes effect at once).

    Args:
        mode: Whether to enable grad (True) or disable it (False).
    """

    def __init__(self, mode: bool) -> None:
        self.prev = _C._set_grad_enabled(bool(mode))
        self.mode = bool(mode)

    def __call__(self, func):
        _C._set_grad_enabled(self.prev)
        return super().__call__(func)

    def __enter__(self) -> None:
        _C._set_grad_enabled(self.mode)

    def __exit__(self, *args) -> None:
        _C._set_grad_enabled(self.prev)

    def __str__(self) -> str:
        # torch prints typename(self)(mode=...), which a REPL echoes after a plain call
        cls = type(self)
        return f"{cls.__module__}.{cls.__qualname__}(mode={self.mode})"

    def __repr__(self) -> str:
        return str(self)

    def clone(self) -> "set_grad_enabled":
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):  # noqa: N801
    """Context manager for inference: like no_grad, and tensors made inside never need history.

    Args:
        mode: Enable (True, default) or disable inference mode.
    """

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __enter__(self) -> None:
        self.prev = _C._set_inference_mode(self.mode) if self.mode else (
            _C.is_inference_mode_enabled(), _C.is_grad_enabled())
        if not self.mode:
            _C._set_inference_mode(False)

    def __exit__(self, *args) -> None:
        _C._restore_inference_mode(self.prev)

    def clone(self) -> "inference_mode":
        return self.__class__(self.mode)


class set_multithreading_enabled(_DecoratorContextManager):  # noqa: N801
    r"""Context-manager that enables or disables multithreaded backward.

    Ordinarily the backward pass runs a graph's independent branches on rgrad's worker
    threads. When ``mode=False``, the backward pass runs on the calling thread instead
    (kernels still use the worker threads). ``mode=True`` restores the default behavior.

    This can be used as a context-manager or as a function. It is thread-local and will
    not affect computation in other threads.

    Args:
        mode (bool): Whether to enable multithreaded backward (``True``, default) or
            disable (``False``).

    .. note::
        This API does not apply to :ref:`forward-mode AD <forward-mode-ad>`, which never
        uses multithreading.
    """

    def __init__(self, mode: bool) -> None:
        self.prev = _C._is_multithreading_enabled()
        _C._set_multithreading_enabled(mode)
        self.mode = mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args) -> None:
        _C._set_multithreading_enabled(self.prev)

    def clone(self) -> "set_multithreading_enabled":
        r"""Create a copy of this class"""
        return self.__class__(self.mode)


class enforce_grad_layout_policy(_DecoratorContextManager):  # noqa: N801
    r"""Context-manager that controls the gradient layout policy enforcement.

    The gradient layout contract ensures that accumulated gradients have strides matching
    their corresponding parameters (for non-overlapping dense parameters) or are
    row-major contiguous (otherwise). This aids performance in optimizers and
    distributed reducers.

    When ``enable=False``, the autograd engine relaxes this enforcement: stealable
    gradients whose layout does *not* match the parameter can still be stolen directly
    (avoiding an extra copy). The logic that *creates* a brand-new gradient (e.g.,
    cloning into the correct layout when the gradient is not stealable) is **not**
    affected by this flag.

    This can be used as a context-manager or as a function. It is thread-local and will
    not affect computation in other threads.

    Args:
        enable (bool): Whether to enforce the gradient layout contract (``True``,
            default) or relax enforcement (``False``).

    Example::
        >>> p = rgrad.empty(2, 3, 4).permute(2, 0, 1).requires_grad_()
        >>> with rgrad.autograd.enforce_grad_layout_policy(False):
        ...     (p * 2).sum().backward()
        ...     # p.grad may now have the same strides as the incoming
        ...     # gradient rather than being forced to match p's strides.
    """

    def __init__(self, enable: bool = True) -> None:
        self.prev = _C._is_grad_layout_enforcement_enabled()
        _C._set_grad_layout_enforcement_enabled(enable)
        self.mode = enable

    def __call__(self, orig_func):
        _C._set_grad_layout_enforcement_enabled(self.prev)
        return super().__call__(orig_func)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args) -> None:
        _C._set_grad_layout_enforcement_enabled(self.prev)

    def clone(self) -> "enforce_grad_layout_policy":
        r"""Create a copy of this class"""
        return self.__class__(self.mode)
