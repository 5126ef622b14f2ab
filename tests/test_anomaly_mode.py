"""Anomaly mode: detect_anomaly / set_detect_anomaly, the forward traceback warned before a
backward error, the NaN check, their scoping, and torch's texts where torch is installed."""

from __future__ import annotations

import math
import threading
import warnings

import pytest

import rgrad
from rgrad.autograd import Function


def _torch():
    return pytest.importorskip("torch")


def _run(lib, body):
    """Runs ``body(lib)`` with warnings recorded: (exception or None, warning texts)."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            body(lib)
            err = None
        except Exception as e:  # noqa: BLE001 (the test compares whatever is raised)
            err = e
    return err, [str(x.message) for x in w]


def _frames(text: str) -> list[str]:
    """The ``File "...", line N, in f`` lines of a warning, file names cut to their base,
    from the frame below ``_run`` on (the test's own frames differ by line)."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("File "):
            f, rest = line.split(",", 1)
            out.append(f.rsplit("/", 1)[-1].strip('"') + "," + rest)
    below = [i for i, f in enumerate(out) if f.endswith(" in _run")]
    return out[below[-1] + 1 :] if below else out


def _log_of_zero(lib):
    x = lib.ones(2, requires_grad=True)
    with lib.autograd.detect_anomaly():
        z = (x * 0).log() * 0  # the forward line the warning points at
        z.sum().backward()


def test_nan_in_builtin_backward_raises_with_the_forward_line():
    err, warned = _run(rgrad, _log_of_zero)
    assert isinstance(err, RuntimeError)
    assert str(err) == "Function 'LogBackward0' returned nan values in its 0th output."
    assert warned[0].startswith("Anomaly Detection has been enabled.")
    report = warned[1]
    assert report.startswith("Error detected in LogBackward0. Traceback of forward call that caused the error:\n")
    assert "z = (x * 0).log() * 0  # the forward line the warning points at" in report
    assert _frames(report)[-1].startswith("test_anomaly_mode.py, line")
    assert _frames(report)[-1].endswith("in _log_of_zero")
    assert not rgrad.is_anomaly_enabled()


def _custom_raises(lib):
    class Boom(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    def layer(x):
        return Boom.apply(x)

    x = lib.ones(3, requires_grad=True)
    with lib.autograd.detect_anomaly():
        y = layer(x) * 2
        y.sum().backward()


def test_error_in_custom_backward_keeps_its_type_and_names_the_forward_calls():
    err, warned = _run(rgrad, _custom_raises)
    assert isinstance(err, ValueError) and str(err) == "boom"
    report = warned[1]
    assert report.startswith("Error detected in BoomBackward. Traceback of forward call that caused the error:\n")
    frames = _frames(report)
    assert frames[-2].endswith("in _custom_raises") and frames[-1].endswith("in layer")
    assert "return Boom.apply(x)" in report


def _custom_nan(lib):
    class NanGrad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g * math.nan

    x = lib.ones(3, requires_grad=True)
    with lib.autograd.detect_anomaly():
        NanGrad.apply(x).sum().backward()


def test_nan_from_custom_backward():
    err, warned = _run(rgrad, _custom_nan)
    assert isinstance(err, RuntimeError)
    assert str(err) == "Function 'NanGradBackward' returned nan values in its 0th output."
    assert warned[1].startswith("Error detected in NanGradBackward.")


@pytest.mark.parametrize("body", [_log_of_zero, _custom_raises, _custom_nan])
def test_same_exception_and_warning_as_torch(body):
    torch = _torch()
    ours, our_warnings = _run(rgrad, body)
    theirs, their_warnings = _run(torch, body)
    assert type(ours) is type(theirs) and str(ours) == str(theirs)
    assert len(our_warnings) == len(their_warnings)
    for a, b in zip(our_warnings, their_warnings):
        b = b.split(" (Triggered internally at")[0]
        assert a.splitlines()[0] == b.splitlines()[0]
        assert _frames(a) == _frames(b)


def test_check_nan_false_lets_nan_through():
    x = rgrad.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="Anomaly Detection"):
        mode = rgrad.autograd.detect_anomaly(check_nan=False)
    with mode:
        assert rgrad.is_anomaly_enabled() and not rgrad.is_anomaly_check_nan_enabled()
        ((x * 0).log() * 0).sum().backward()
    assert math.isnan(x.grad[0].item())
    assert rgrad.is_anomaly_check_nan_enabled()


def test_check_inf_beyond_torch():
    x = rgrad.zeros(2, requires_grad=True)
    with pytest.warns(UserWarning):
        with rgrad.autograd.detect_anomaly(check_inf=True):
            assert rgrad.autograd.anomaly_mode._C._is_anomaly_check_inf_enabled()
            with pytest.raises(RuntimeError, match="Function 'LogBackward0' returned inf values in its 0th output"):
                x.log().sum().backward()
    # off by default: the same graph runs
    with pytest.warns(UserWarning):
        with rgrad.autograd.detect_anomaly():
            x.log().sum().backward()
    assert math.isinf(x.grad[0].item())


def test_no_forward_information_when_made_outside_anomaly_mode():
    x = rgrad.ones(2, requires_grad=True)
    z = (x * 0).log() * 0
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with rgrad.autograd.set_detect_anomaly(True):
            with pytest.raises(RuntimeError, match="returned nan values"):
                z.sum().backward()
    texts = [str(m.message) for m in w]
    assert texts == [
        "Error detected in LogBackward0. No forward pass information available. Enable detect anomaly during "
        "forward pass for more information."
    ]


def test_set_detect_anomaly_as_call_context_and_decorator():
    assert not rgrad.is_anomaly_enabled()
    rgrad.autograd.set_detect_anomaly(True)
    assert rgrad.is_anomaly_enabled()
    rgrad.autograd.set_detect_anomaly(False)
    assert not rgrad.is_anomaly_enabled()
    with rgrad.autograd.set_detect_anomaly(True, check_nan=False):
        assert rgrad.is_anomaly_enabled() and not rgrad.is_anomaly_check_nan_enabled()
        with rgrad.autograd.set_detect_anomaly(False):
            assert not rgrad.is_anomaly_enabled()
        assert rgrad.is_anomaly_enabled()
    assert not rgrad.is_anomaly_enabled() and rgrad.is_anomaly_check_nan_enabled()

    @rgrad.autograd.set_detect_anomaly(True)
    def inside():
        return rgrad.is_anomaly_enabled()

    assert not rgrad.is_anomaly_enabled()  # decorating turns nothing on
    assert inside() and inside()
    assert not rgrad.is_anomaly_enabled()

    with pytest.warns(UserWarning):

        @rgrad.autograd.detect_anomaly()
        def checked():
            return rgrad.is_anomaly_enabled()

    assert checked() and not rgrad.is_anomaly_enabled()


def test_scope_is_restored_when_the_block_raises():
    with pytest.raises(KeyError):
        with pytest.warns(UserWarning):
            with rgrad.autograd.detect_anomaly():
                raise KeyError
    assert not rgrad.is_anomaly_enabled()


def test_process_wide_as_in_torch():
    seen = []
    with pytest.warns(UserWarning):
        with rgrad.autograd.detect_anomaly():
            t = threading.Thread(target=lambda: seen.append(rgrad.is_anomaly_enabled()))
            t.start()
            t.join()
    assert seen == [True]


def test_error_on_a_backward_worker_thread():
    """Many independent branches: the engine runs them on its worker threads; the failing
    one is reported with its own forward line, whichever thread ran it."""

    class FailOn(Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x * 1

        @staticmethod
        def backward(ctx, g):
            if ctx.k == 5:
                raise ArithmeticError(f"branch {ctx.k} on {threading.current_thread().name}")
            return g, None

    rgrad.set_num_threads(2)
    for _ in range(20):
        x = rgrad.ones(4, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with rgrad.autograd.detect_anomaly():
                branches = [FailOn.apply(x.exp(), k) for k in range(8)]
                total = branches[0]
                for b in branches[1:]:
                    total = total + b
                with pytest.raises(ArithmeticError, match="branch 5"):
                    total.sum().backward()
        reports = [str(m.message) for m in w if "Error detected" in str(m.message)]
        assert len(reports) == 1
        assert reports[0].startswith("Error detected in FailOnBackward.")
        assert "branches = [FailOn.apply(x.exp(), k) for k in range(8)]" in reports[0]


def test_nested_backward_names_the_node_that_made_the_failing_one():
    """A node made by a backward (create_graph) remembers that node: the report goes on
    with the traceback of the forward call that made it."""

    class Unstable(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * (x * 0).log().exp() * 0  # fine once; its own backward makes NaN

    x = rgrad.ones(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with rgrad.autograd.detect_anomaly():
            y = Unstable.apply(x)  # the original forward line
            (g,) = rgrad.autograd.grad(y.sum(), x, create_graph=True)
            with pytest.raises(RuntimeError, match="returned nan values"):
                g.sum().backward()
    texts = [str(m.message) for m in w if "Error detected" in str(m.message) or "Previous" in str(m.message)]
    assert texts[0].startswith("Error detected in ")
    assert any(
        t.startswith("\n\nPrevious calculation was induced by UnstableBackward.")
        and "y = Unstable.apply(x)  # the original forward line" in t
        for t in texts[1:]
    )


def test_anomaly_mode_records_nothing_when_off():
    """Nodes made without anomaly mode keep no traceback: no warning text is produced."""
    x = rgrad.ones(2, requires_grad=True)
    z = (x * 0).log() * 0
    z.sum().backward()  # no check, no error
    assert math.isnan(x.grad[0].item())
