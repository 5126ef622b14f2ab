"""Running one program on rgrad and on torch and comparing what they did.

A program is a function of the library module ``T``; it returns whatever it observed
(values, call logs, caught errors). ``both(program)`` runs it on rgrad, and on torch when
torch is installed, and asserts the two results are equal after ``norm``: tensors become
(dtype, shape, values rounded to 6 digits), nodes their names, exceptions (type name,
message with torch's ``torch.`` type prefixes read as ``rgrad.``), warnings likewise.
It returns rgrad's normalized result, which each test also checks on its own, so every
test asserts something without torch too.
"""

from __future__ import annotations

import contextlib
import importlib
import warnings

import rgrad

try:
    _torch = importlib.import_module("torch")
except ImportError:  # pragma: no cover - torch is installed where the suite runs
    _torch = None


def libs() -> list:
    """rgrad, then torch when it is installed."""
    return [rgrad] + ([_torch] if _torch is not None else [])


def norm(x):
    """A library-independent form of what a program observed."""
    if isinstance(x, (rgrad.Tensor,)) or (_torch is not None and isinstance(x, _torch.Tensor)):
        return ("T", str(x.dtype).split(".")[-1], tuple(x.shape), _round(x.detach().tolist()))
    if isinstance(x, BaseException):
        return ("E", type(x).__name__, _msg(str(x)))
    if isinstance(x, warnings.WarningMessage):
        return ("W", x.category.__name__, _msg(str(x.message)))
    if isinstance(x, dict):
        return {k: norm(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(norm(v) for v in x)
    if hasattr(x, "name") and hasattr(x, "next_functions"):
        return ("N", x.name().rsplit("::", 1)[-1])
    if type(x).__name__ in ("dtype",):
        return str(x).split(".")[-1]
    return x


def _msg(s: str) -> str:
    return s.replace("torch.", "rgrad.")


def _round(v):
    if isinstance(v, list):
        return [_round(e) for e in v]
    if isinstance(v, float):
        return round(v, 6)
    return v


def both(program):
    """Runs ``program(T)`` on each library; asserts the results agree; returns rgrad's."""
    results = [norm(program(T)) for T in libs()]
    for r in results[1:]:
        assert results[0] == r, f"rgrad: {results[0]!r}\ntorch: {r!r}"
    return results[0]


def caught(f):
    """What calling ``f()`` gives: its result, or the exception it raised."""
    try:
        return f()
    except Exception as e:  # noqa: BLE001 - the exception is the observation
        return e


@contextlib.contextmanager
def recorded_warnings():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        yield w
