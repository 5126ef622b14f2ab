"""Autograd anomaly mode (torch.autograd.anomaly_mode's API).

While it is on, every node remembers where in Python it was made; an error raised in
a backward node is preceded by torch's warning "Error detected in XBackward0.
Traceback of forward call that caused the error: ..." (for a node made by another
node's backward, the chain of nodes that led to it follows), and every gradient a node
returns is checked for NaN. Beyond torch, ``check_inf=True`` fails a node that returns
an infinity too. The switch is process-wide, as torch's is: backward worker threads
and other Python threads see it.

The traceback is kept as code objects and line numbers, and formatted only when an
error is reported.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, TypeVar

from rgrad import _C

__all__ = ["detect_anomaly", "set_detect_anomaly"]

_F = TypeVar("_F", bound=Callable[..., Any])


def _set(mode: bool, check_nan: bool, check_inf: bool) -> None:
    _C._set_anomaly_enabled(mode, check_nan)
    _C._set_anomaly_check_inf(check_inf)


class _Decorating:
    """Lets a context manager decorate a function: each call runs inside a fresh one."""

    def _recreate(self) -> Any:
        raise NotImplementedError

    def __call__(self, func: _F) -> _F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self._recreate():
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class detect_anomaly(_Decorating):
    r"""Context-manager that enables anomaly detection for the autograd engine.

    This does two things:

    - Running the forward pass with detection enabled will allow the backward
      pass to print the traceback of the forward operation that created the failing
      backward function.
    - If ``check_nan`` is ``True``, any backward computation that generates "nan"
      value will raise an error. Default ``True``.

    rgrad also takes ``check_inf`` (default ``False``): any backward computation that
    generates an infinity raises an error too. It also works as a decorator.

    .. warning::
        This mode should be enabled only for debugging as the different tests
        will slow down your program execution.
    """

    def __init__(self, check_nan: bool = True, *, check_inf: bool = False) -> None:
        self.prev = _C.is_anomaly_enabled()
        self.check_nan = check_nan
        self.check_inf = check_inf
        self.prev_check_nan = _C.is_anomaly_check_nan_enabled()
        self.prev_check_inf = _C._is_anomaly_check_inf_enabled()
        warnings.warn(
            "Anomaly Detection has been enabled. "
            "This mode will increase the runtime "
            "and should only be enabled for debugging.",
            stacklevel=2,
        )

    def _recreate(self) -> detect_anomaly:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return detect_anomaly(self.check_nan, check_inf=self.check_inf)

    def __enter__(self) -> None:
        _set(True, self.check_nan, self.check_inf)

    def __exit__(self, *args: object) -> None:
        _set(self.prev, self.prev_check_nan, self.prev_check_inf)


class set_detect_anomaly(_Decorating):
    r"""Context-manager that sets the anomaly detection for the autograd engine on or off.

    ``set_detect_anomaly`` will enable or disable the autograd anomaly detection
    based on its argument :attr:`mode`.
    It can be used as a context-manager or as a function.

    See ``detect_anomaly`` above for details of the anomaly detection behaviour.

    Args:
        mode (bool): Flag whether to enable anomaly detection (``True``),
                     or disable (``False``).
        check_nan (bool): Flag whether to raise an error when the backward
                          generate "nan"
        check_inf (bool): (rgrad) Flag whether to raise an error when the backward
                          generates an infinity
    """

    def __init__(self, mode: bool, check_nan: bool = True, *, check_inf: bool = False) -> None:
        self.prev = _C.is_anomaly_enabled()
        self.prev_check_nan = _C.is_anomaly_check_nan_enabled()
        self.prev_check_inf = _C._is_anomaly_check_inf_enabled()
        self.mode, self.check_nan, self.check_inf = mode, check_nan, check_inf
        _set(mode, check_nan, check_inf)

    def _recreate(self) -> _Deferred:
        return _Deferred(self.mode, self.check_nan, self.check_inf)

    def __call__(self, func: _F) -> _F:
        # as a decorator, the setting holds during each call, not from decoration on
        _set(self.prev, self.prev_check_nan, self.prev_check_inf)
        return super().__call__(func)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args: object) -> None:
        _set(self.prev, self.prev_check_nan, self.prev_check_inf)


class _Deferred:
    """set_detect_anomaly's setting applied on entry (for its decorator form)."""

    def __init__(self, mode: bool, check_nan: bool, check_inf: bool) -> None:
        self.setting = (mode, check_nan, check_inf)

    def __enter__(self) -> None:
        self.prev = (
            _C.is_anomaly_enabled(),
            _C.is_anomaly_check_nan_enabled(),
            _C._is_anomaly_check_inf_enabled(),
        )
        _set(*self.setting)

    def __exit__(self, *args: object) -> None:
        _set(*self.prev)


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on."""
    return _C.is_anomaly_enabled()


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection checks backward outputs for NaN."""
    return _C.is_anomaly_check_nan_enabled()


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """torch.set_anomaly_enabled: turns anomaly detection on or off."""
    _C._set_anomaly_enabled(enabled, check_nan)
