"""CPU step replay: record one training step as a Rust-side program, replay it without Python.

``step = rgrad.compile_step(fn, *example_inputs)`` gives a callable. Its first call runs
``fn`` eagerly on *static inputs* (copies of ``example_inputs`` that the step owns) while
every kernel the ops and the autograd engine run is recorded; later calls copy their
arguments into the static inputs and replay the recorded kernels, in the same order,
with no Python, no graph building and no op checks. Tensors that existed before the
recording (parameters, their ``.grad``) are read and updated in place exactly as the
eager step would; results are the same bits as eager (the same kernels with the same
thread split).

As with ``torch.cuda.graph`` and ``torch.jit.trace``, the recorded program *is* the step:
Python control flow is not re-run, so a branch on anything but the recorded state is
frozen, and so are Python numbers (a learning rate that changes between calls must be a
tensor the step reads, e.g. one updated with ``lr.fill_(v)`` before the call).
Replayed calls emit no profiler events and record no autograd graph. What a replay cannot reproduce is refused while recording, with a RuntimeError
naming it: reading values on the host (``item()``, ``tolist()``, printing, ``nonzero``,
boolean masks, ``bool(t)``), random ops other than ``rand``/``rand_like``, custom
``autograd.Function``s, max/min with indices, CUDA tensors (the recording
call is an eager run: what ran before the refusal, or the whole step for a refused random
op, has had its effects; nothing is kept recorded). Index tensors
(``x[idx]``, ``x[idx] = v``, ``index_put(_)``, ``gather``, ``index_select``, nll_loss's
targets) are allowed: their values are re-read on every replay.

The step is recorded again (one more eager run) when the state it was recorded against
changed: a leaf's ``.grad`` that the engine stored while it was None, or accumulated into,
is now another tensor. So a loop that keeps gradients records twice (``.grad`` None, then
set) and replays from the third call on; one that sets ``p.grad = None`` replays from the
second. Inputs of another shape or dtype are refused (static shapes: compile a new step).
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from rgrad import _C
from rgrad._C import Tensor
from rgrad.autograd.grad_mode import no_grad

__all__ = ["CompiledStep", "compile_step"]


def _flatten(result: Any, out: list[Tensor]) -> Any:
    """The step's result as a structure of slots into ``out`` (tensors, None, tuples, lists)."""
    if isinstance(result, Tensor):
        out.append(result)
        return len(out) - 1
    if result is None:
        return None
    if isinstance(result, (tuple, list)):
        return (tuple if isinstance(result, tuple) else list, [_flatten(r, out) for r in result])
    raise TypeError(
        f"compile_step: the step function must return a Tensor, None, or a tuple or list of them, "
        f"not {type(result).__name__}"
    )


def _unflatten(structure: Any, tensors: list[Tensor]) -> Any:
    if structure is None:
        return None
    if isinstance(structure, int):
        return tensors[structure]
    kind, items = structure
    return kind(_unflatten(s, tensors) for s in items)


def _fmt_shape(shape: Any) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


class CompiledStep:
    """A training step recorded once and replayed without running Python per op.

    Built by :func:`compile_step`. Calls are serialised (one replay at a time: the static
    inputs are shared), so several Python threads may call one step.

    Attributes:
        static_inputs: The tensors ``fn`` is recorded on; each call copies its arguments
            into them.
        recordings: How many calls ran ``fn`` eagerly while recording.
        replays: How many calls replayed the recorded program.
    """

    def __init__(self, fn: Callable[..., Any], *example_inputs: Tensor) -> None:
        if not callable(fn):
            raise TypeError(f"compile_step: fn must be callable, not {type(fn).__name__}")
        statics = []
        for i, x in enumerate(example_inputs):
            if not isinstance(x, Tensor):
                raise TypeError(
                    f"compile_step: example input {i} must be a Tensor, not {type(x).__name__}"
                )
            s = x.detach().clone()
            if x.requires_grad:
                s.requires_grad_()
            statics.append(s)
        self._fn = fn
        self.static_inputs: tuple[Tensor, ...] = tuple(statics)
        self._program: Any = None
        self._structure: Any = None
        self._lock = threading.Lock()
        self.recordings = 0
        self.replays = 0

    @property
    def num_kernels(self) -> int:
        """Number of kernel calls in the recorded program (0 before the first call)."""
        return 0 if self._program is None else self._program.num_steps

    def kernel_names(self) -> list[str]:
        """The recorded program's kernels, in order (empty before the first call)."""
        return [] if self._program is None else self._program.kernel_names()

    def reset(self) -> None:
        """Drops the recorded program: the next call records the step again."""
        with self._lock:
            self._program = None
            self._structure = None

    def _check(self, inputs: tuple[Any, ...]) -> None:
        if len(inputs) != len(self.static_inputs):
            raise TypeError(
                f"compile_step: the step takes {len(self.static_inputs)} inputs "
                f"but {len(inputs)} were given"
            )
        for i, (x, s) in enumerate(zip(inputs, self.static_inputs)):
            if not isinstance(x, Tensor):
                raise TypeError(f"compile_step: input {i} must be a Tensor, not {type(x).__name__}")
            if x.shape != s.shape or x.dtype != s.dtype:
                raise RuntimeError(
                    f"compile_step: input {i} has shape {_fmt_shape(x.shape)} and dtype {x.dtype}, "
                    f"but the step was recorded for shape {_fmt_shape(s.shape)} and dtype {s.dtype} "
                    f"(a recorded step has static shapes: compile a new step for new shapes)"
                )

    def __call__(self, *inputs: Tensor) -> Any:
        """Runs the step on ``inputs``: replays it, or records it where it must.

        Args:
            *inputs: Tensors of the example inputs' shapes and dtypes.

        Returns:
            What ``fn`` returns, its tensors without autograd history.
        """
        self._check(inputs)
        with self._lock:
            if inputs:
                with no_grad():
                    for x, s in zip(inputs, self.static_inputs):
                        if x is not s:
                            s.copy_(x)
            if self._program is not None:
                outs = self._program.run()
                if outs is not None:
                    self.replays += 1
                    return _unflatten(self._structure, outs)
            return self._record()

    def _record(self) -> Any:
        _C._step_record_begin()
        try:
            result = self._fn(*self.static_inputs)
            flat: list[Tensor] = []
            structure = _flatten(result, flat)
            program = _C._step_record_end(flat)
        except BaseException:
            _C._step_record_abort()
            self._program = None
            raise
        self._program, self._structure = program, structure
        self.recordings += 1
        return _unflatten(structure, [t.detach() for t in flat])

    def __repr__(self) -> str:
        return (
            f"CompiledStep({getattr(self._fn, '__name__', 'fn')}, kernels={self.num_kernels}, "
            f"recordings={self.recordings}, replays={self.replays})"
        )


def compile_step(fn: Callable[..., Any], *example_inputs: Tensor) -> CompiledStep:
    """Records a training step on its first call and replays it on later calls.

    ``fn`` runs one step (forward, ``backward()``, in-place updates of parameters) on its
    tensor arguments. The returned step has static inputs: each call copies its arguments
    into tensors shaped like ``example_inputs``, and replays the recorded kernels with the
    same results, bit for bit, as calling ``fn`` eagerly (see the module docstring for what
    is refused and when a step is recorded again).

    Args:
        fn: The step function, called with tensors like ``example_inputs``.
        *example_inputs: Tensors giving the shapes and dtypes of the step's inputs.

    Returns:
        A :class:`CompiledStep`.
    """
    return CompiledStep(fn, *example_inputs)
