"""rgrad.autograd.gradcheck / gradgradcheck: what they accept, what they catch, what they say.

The scenario table at the top runs the same code against rgrad and, when torch is
installed, against torch: each scenario's outcome (the return value, or the exception
type and the first line of its message) is pinned for rgrad and must match torch's.
The tests after it look at whole messages, warnings, side effects and the parts of
torch's API that rgrad does not support.

Wrong derivatives are made with built-in ops only: a factor hidden from autograd by
``.detach()`` (``x * x.detach()`` is x² whose derivative autograd reports as x), and
tensor hooks that rescale or perturb a gradient. Hooks pass ``None`` through, because
torch calls them with undefined gradients during its undefined-grad check.
"""

from __future__ import annotations

import importlib
import random
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

import rgrad
from rgrad import _C
from rgrad.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck

# the module itself (rgrad.autograd re-exports the function under the module's name)
gradcheck_module = importlib.import_module("rgrad.autograd.gradcheck")

A = [[0.3, -1.2, 0.7], [1.5, -0.4, 0.9]]
B = [[-0.8, 0.6, 1.1], [0.2, -1.3, 0.5]]
X = [0.5, -1.0, 2.0]


@dataclass
class Lib:
    """A torch-like module together with its gradcheck functions."""

    T: Any
    gradcheck: Callable[..., bool]
    gradgradcheck: Callable[..., bool]

    def leaf(self, data: Any, requires_grad: bool = True, dtype: Any = None) -> Any:
        return self.T.tensor(data, dtype=dtype or self.T.float64, requires_grad=requires_grad)


RGRAD = Lib(rgrad, gradcheck, gradgradcheck)


def _torch_lib() -> Lib:
    torch = pytest.importorskip("torch")
    from torch.autograd.gradcheck import gradcheck as torch_gradcheck
    from torch.autograd.gradcheck import gradgradcheck as torch_gradgradcheck

    return Lib(torch, torch_gradcheck, torch_gradgradcheck)


# ---------------------------------------------------------------------------------------
# functions with wrong derivatives
# ---------------------------------------------------------------------------------------


def wrong_grad(x):
    # y = x², but autograd sees x * constant: dy/dx reported as x instead of 2x
    return x * x.detach()


def wrong_second_derivative(x):
    # y = 2x·x̄ - x̄² = x² (x̄ = x.detach()): dy/dx = 2x̄ is right, but it does not depend
    # on x in the graph, so d²y/dx² is reported as 0 instead of 2
    return x * x.detach() * 2 - x.detach() ** 2


def scale_grad(t, factor):
    """Makes backward multiply the gradient flowing into ``t`` by ``factor``."""
    t.register_hook(lambda g: g if g is None else g * factor)
    return t


def nondeterministic_backward(rng: random.Random):
    # y = 2x whose backward is off by a relative 1e-7 that changes at every call
    def f(x):
        y = x * 2
        y.register_hook(lambda g: g if g is None else g * (1 + 1e-7 * rng.random()))
        return y

    return f


def grad_output_detached(x):
    # y = sin x; dy/dx = cos(x)·g is right, but g (the grad_output) is detached from the
    # double-backward graph: d(dy/dx)/dg is reported as 0 instead of cos x
    y = x.sin()
    y.register_hook(lambda g: g if g is None else g.detach())
    return y


def ignores_zero_grad_output(x):
    # y = 3x whose backward returns 3e-10 instead of 0 for a zero grad_output: the
    # Jacobian is right, but backward does not simply multiply by grad_output
    y = x * 3
    y.register_hook(lambda g: g if g is None or float(g.abs().sum()) != 0 else g + 1e-10)
    return y


def almost_right(T):
    # y = 100·x0 - 100·x1 whose backward scales the two partial derivatives by 1 ± 9.9e-4:
    # each Jacobian entry is within rtol=1e-3 of the truth (slow mode passes), but in
    # v^T J u the entries nearly cancel while the errors add up (fast mode fails)
    def f(x):
        p = x * T.tensor([100.0, -100.0], dtype=T.float64)
        scale_grad(p, T.tensor([1.00099, 0.99901], dtype=T.float64))
        return p.sum()

    return f


# ---------------------------------------------------------------------------------------
# scenarios: pinned for rgrad, compared with torch
# ---------------------------------------------------------------------------------------

JACOBIAN_00 = ("GradcheckError", "Jacobian mismatch for output 0 with respect to input 0,")
NOT_REENTRANT = (
    "GradcheckError",
    (
        "Backward is not reentrant, i.e., running backward with same input and grad_output multiple times gives "
        "different values, although analytical gradient matches numerical gradient.The tolerance for nondeterminism "
        "was 0.0."
    ),
)
NOT_ZERO = ("GradcheckError", "Numerical gradient for function expected to be zero")

SCENARIOS: dict[str, tuple[Callable[[Lib], Any], Any]] = {
    # correct functions pass
    "composition": (lambda L: L.gradcheck(lambda a, b: (a * b).sin().sum(), (L.leaf(A), L.leaf(B))), True),
    "composition_fast_mode": (
        lambda L: L.gradcheck(lambda a, b: (a * b).sin().sum(), (L.leaf(A), L.leaf(B)), fast_mode=True),
        True,
    ),
    "multiple_outputs": (
        lambda L: L.gradcheck(lambda a, b: (a * b, a.exp(), (a - b).sum()), (L.leaf(A), L.leaf(B))),
        True,
    ),
    "multiple_outputs_fast_mode": (
        lambda L: L.gradcheck(lambda a, b: (a * b, a.exp(), (a - b).sum()), (L.leaf(A), L.leaf(B)), fast_mode=True),
        True,
    ),
    "list_of_outputs": (lambda L: L.gradcheck(lambda x: [x * 2, x.exp()], L.leaf(X)), True),
    "non_tensor_and_constant_inputs": (
        lambda L: L.gradcheck(
            lambda a, s, name, c, b: (a * s + b * c).tanh(),
            (L.leaf(A), 2.5, "unused", L.leaf(B, requires_grad=False), L.leaf(B)),
        ),
        True,
    ),
    "only_some_inputs_require_grad": (
        lambda L: L.gradcheck(lambda a, b: a @ b.t(), (L.leaf(A, requires_grad=False), L.leaf(B))),
        True,
    ),
    "single_tensor_input": (lambda L: L.gradcheck(lambda x: x.exp(), L.leaf(X)), True),
    "list_of_inputs": (lambda L: L.gradcheck(lambda a, b: a * b, [L.leaf(A), L.leaf(B)]), True),
    "non_contiguous_input": (lambda L: L.gradcheck(lambda a: a.sin(), (L.leaf(A).t(),)), True),
    "integer_outputs_are_ignored": (lambda L: L.gradcheck(lambda x: L.T.max(x.reshape(1, 3) ** 2, 1), L.leaf(X)), True),
    "output_is_a_view_of_the_input": (lambda L: L.gradcheck(lambda x: x[1:], L.leaf(X)), True),
    "identity": (lambda L: L.gradcheck(lambda x: x, L.leaf(X)), True),
    "unused_input": (lambda L: L.gradcheck(lambda a, b: a * 2, (L.leaf(A), L.leaf(B))), True),
    "empty_input": (lambda L: L.gradcheck(lambda a: a.sin(), L.leaf([[], []])), True),
    "check_grad_dtypes": (
        lambda L: L.gradcheck(lambda a, b: (a * b).sum(), (L.leaf(A), L.leaf(B)), check_grad_dtypes=True),
        True,
    ),
    "constant_output": (lambda L: L.gradcheck(lambda x: x.detach() * 0 + 1, L.leaf(X)), True),
    "constant_output_fast_mode": (lambda L: L.gradcheck(lambda x: x.detach() * 0 + 1, L.leaf(X), fast_mode=True), True),
    # wrong first derivatives
    "wrong_grad": (lambda L: L.gradcheck(wrong_grad, L.leaf(X)), JACOBIAN_00),
    "wrong_grad_fast_mode": (lambda L: L.gradcheck(wrong_grad, L.leaf(X), fast_mode=True), JACOBIAN_00),
    "wrong_grad_without_raising": (lambda L: L.gradcheck(wrong_grad, L.leaf(X), raise_exception=False), False),
    "wrong_grad_fast_mode_without_raising": (
        lambda L: L.gradcheck(wrong_grad, L.leaf(X), fast_mode=True, raise_exception=False),
        False,
    ),
    "wrong_grad_indices_count_differentiable_outputs_and_inputs": (
        # output 1 w.r.t. input 1 (b): the float and the constant tensor are not counted
        lambda L: L.gradcheck(
            lambda a, s, c, b: (a * b * s, a * b.detach() * c),
            (L.leaf(A), 2.0, L.leaf(B, requires_grad=False), L.leaf(B)),
        ),
        ("GradcheckError", "Jacobian mismatch for output 1 with respect to input 1,"),
    ),
    "detached_output_that_depends_on_the_input": (lambda L: L.gradcheck(lambda x: x.detach() * 2, L.leaf(X)), NOT_ZERO),
    "detached_output_that_depends_on_the_input_fast_mode": (
        lambda L: L.gradcheck(lambda x: x.detach() * 2, L.leaf(X), fast_mode=True),
        NOT_ZERO,
    ),
    "backward_ignores_zero_grad_output": (
        lambda L: L.gradcheck(ignores_zero_grad_output, L.leaf(X)),
        ("GradcheckError", "backward not multiplied by grad_output"),
    ),
    "backward_ignores_zero_grad_output_masked": (
        lambda L: L.gradcheck(ignores_zero_grad_output, L.leaf(X), masked=True, check_undefined_grad=False),
        True,
    ),
    "small_errors_pass_in_slow_mode": (lambda L: L.gradcheck(almost_right(L.T), L.leaf([0.3, 0.4])), True),
    "small_errors_fail_in_fast_mode": (
        lambda L: L.gradcheck(almost_right(L.T), L.leaf([0.3, 0.4]), fast_mode=True),
        JACOBIAN_00,
    ),
    # nondeterministic backward
    "nondeterministic_backward": (
        lambda L: L.gradcheck(nondeterministic_backward(random.Random(0)), L.leaf(X)),
        NOT_REENTRANT,
    ),
    "nondeterministic_backward_fast_mode": (
        lambda L: L.gradcheck(nondeterministic_backward(random.Random(0)), L.leaf(X), fast_mode=True),
        NOT_REENTRANT,
    ),
    "nondeterministic_backward_within_nondet_tol": (
        lambda L: L.gradcheck(nondeterministic_backward(random.Random(0)), L.leaf(X), nondet_tol=1e-5),
        True,
    ),
    # second derivatives
    "gradgrad_composition": (lambda L: L.gradgradcheck(lambda a, b: (a * b).sin().sum(), (L.leaf(A), L.leaf(B))), True),
    "gradgrad_multiple_outputs": (
        lambda L: L.gradgradcheck(lambda a, b: (a * b, a.exp(), (a - b).sum()), (L.leaf(A), L.leaf(B))),
        True,
    ),
    "gradgrad_explicit_grad_outputs": (
        lambda L: L.gradgradcheck(lambda a, b: (a * b).tanh(), (L.leaf(A), L.leaf(B)), (L.leaf(B),)),
        True,
    ),
    "gradgrad_grad_output_as_a_tensor_not_requiring_grad": (
        lambda L: L.gradgradcheck(lambda a: a.sin(), L.leaf(A), L.leaf(B, requires_grad=False)),
        True,
    ),
    "gradgrad_non_contiguous_grad_outputs": (
        lambda L: L.gradgradcheck(
            lambda a, b: (a * b).tanh(), (L.leaf(A), L.leaf(B)), gen_non_contig_grad_outputs=True
        ),
        True,
    ),
    "gradgrad_fast_mode": (
        lambda L: L.gradgradcheck(lambda a, b: (a * b).tanh(), (L.leaf(A), L.leaf(B)), fast_mode=True),
        True,
    ),
    "gradgrad_non_tensor_inputs": (
        lambda L: L.gradgradcheck(lambda a, s, b: (a * b * s).exp(), (L.leaf(A), 0.5, L.leaf(B, requires_grad=False))),
        True,
    ),
    "gradgrad_linear_function": (lambda L: L.gradgradcheck(lambda a, b: a * 2 + b, (L.leaf(A), L.leaf(B))), True),
    "first_order_of_wrong_second_derivative": (lambda L: L.gradcheck(wrong_second_derivative, L.leaf(X)), True),
    "wrong_second_derivative": (lambda L: L.gradgradcheck(wrong_second_derivative, L.leaf(X)), JACOBIAN_00),
    "wrong_second_derivative_fast_mode": (
        lambda L: L.gradgradcheck(wrong_second_derivative, L.leaf(X), fast_mode=True),
        JACOBIAN_00,
    ),
    "wrong_second_derivative_without_raising": (
        lambda L: L.gradgradcheck(wrong_second_derivative, L.leaf(X), raise_exception=False),
        False,
    ),
    "grad_output_detached_first_order": (lambda L: L.gradcheck(grad_output_detached, L.leaf(X)), True),
    "grad_output_detached": (
        # input 1 of the checked function is the grad_output
        lambda L: L.gradgradcheck(grad_output_detached, L.leaf(X)),
        ("GradcheckError", "Jacobian mismatch for output 0 with respect to input 1,"),
    ),
    # argument errors (never turned into False)
    "float32_input_warns": (
        lambda L: L.gradcheck(lambda x: x * 2, L.leaf(X, dtype=L.T.float32), eps=1e-3, atol=1e-2),
        (
            "UserWarning",
            (
                "Input #0 requires gradient and is not a double precision floating point or complex. This check will "
                "likely fail if all the inputs are not of double precision floating point or complex. "
            ),
        ),
    ),
    "no_input_requires_grad": (
        lambda L: L.gradcheck(lambda x: x * 2, L.leaf(X, requires_grad=False), raise_exception=False),
        (
            "ValueError",
            (
                "gradcheck expects at least one input tensor to require gradient, but none of them have "
                "requires_grad=True."
            ),
        ),
    ),
    "zero_stride_input": (
        lambda L: L.gradcheck(lambda a, b: a * b, (L.leaf(A), L.leaf(X).expand(2, 3)), raise_exception=False),
        (
            "RuntimeError",
            (
                "The 1th input has a dimension with stride 0. gradcheck only supports inputs that are "
                "non-overlapping to be able to compute the numerical gradients correctly. You should call "
                ".contiguous on the input before passing it to gradcheck."
            ),
        ),
    ),
    "neither_backward_nor_forward_ad": (
        lambda L: L.gradcheck(lambda x: x * 2, L.leaf(X), check_backward_ad=False),
        ("AssertionError", "Expected at least one of check_forward_ad or check_backward_ad to be True"),
    ),
    "batched_forward_grad_without_forward_ad": (
        lambda L: L.gradcheck(lambda x: x * 2, L.leaf(X), check_batched_forward_grad=True),
        ("AssertionError", "Setting check_batched_forward_grad=True requires check_forward_ad to be True"),
    ),
    "gradgrad_neither_mode": (
        lambda L: L.gradgradcheck(lambda x: x * 2, L.leaf(X), check_rev_over_rev=False),
        ("AssertionError", "Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True"),
    ),
    "gradgrad_undefined_grad_check_without_rev_over_rev": (
        lambda L: L.gradgradcheck(lambda x: x * 2, L.leaf(X), check_rev_over_rev=False, check_fwd_over_rev=True),
        ("AssertionError", "Setting check_undefined_grad=True requires check_rev_over_rev to be True"),
    ),
}


def _outcome(run: Callable[[Lib], Any], lib: Lib) -> Any:
    """What a scenario gives: its result, or the exception's type and first message line
    (with every warning turned into an error, as the pytest configuration does)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            return run(lib)
        except Exception as e:  # noqa: BLE001  (the outcome being compared)
            return type(e).__name__, str(e).split("\n", 1)[0]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario(name):
    run, expected = SCENARIOS[name]
    assert _outcome(run, RGRAD) == expected


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_matches_torch(name):
    torch_lib = _torch_lib()
    run, expected = SCENARIOS[name]
    assert _outcome(run, torch_lib) == expected


# ---------------------------------------------------------------------------------------
# messages
# ---------------------------------------------------------------------------------------

_NUMBER = r"-?\d+\.\d+(?:e[-+]\d+)?"


def _numbers(text: str) -> list[float]:
    return [float(v) for v in re.findall(_NUMBER, text)]


def test_jacobian_mismatch_message_shows_both_jacobians():
    x = rgrad.tensor(X, dtype=rgrad.float64, requires_grad=True)
    with pytest.raises(GradcheckError) as info:
        gradcheck(wrong_grad, x)
    match = re.fullmatch(
        r"Jacobian mismatch for output 0 with respect to input 0,\n"
        r"numerical:(tensor\(.*\))\nanalytical:(tensor\(.*\))\n",
        str(info.value),
        flags=re.DOTALL,
    )
    assert match, str(info.value)
    # Jacobians are (input elements, output elements): d(x²)/dx = diag(2x) numerically,
    # diag(x) as autograd reports it
    diag = lambda values: [v if i == j else 0.0 for i in range(3) for j, v in enumerate(values)]
    assert _numbers(match.group(1)) == pytest.approx(diag([1.0, -2.0, 4.0]), abs=1e-4)
    assert _numbers(match.group(2)) == pytest.approx(diag([0.5, -1.0, 2.0]), abs=1e-4)


def test_gradcheck_error_is_a_runtime_error():
    assert issubclass(GradcheckError, RuntimeError)
    assert set(gradcheck_module.__all__) == {"GradcheckError", "gradcheck", "gradgradcheck"}


def test_fast_mode_message_recomputes_the_slow_jacobians():
    x = rgrad.tensor(X, dtype=rgrad.float64, requires_grad=True)
    with pytest.raises(GradcheckError) as info:
        gradcheck(wrong_grad, x, fast_mode=True)
    msg = str(info.value)
    head, slow = msg.split("\nThe above quantities relating the numerical and analytical jacobians are computed \n")
    # the fast-mode quantities are the scalars v^T J u
    assert re.fullmatch(
        rf"Jacobian mismatch[^\n]*,\nnumerical:tensor\({_NUMBER}, dtype=rgrad.float64\)\n"
        rf"analytical:tensor\({_NUMBER}, dtype=rgrad.float64\)\n",
        head,
    )
    numerical, analytical = _numbers(head)
    assert numerical == pytest.approx(2 * analytical, rel=1e-6)  # J_num = 2 J_ad
    assert "Below, we recompute numerical and analytical jacobians in slow mode:\n\nNumerical:\n tensor(" in slow
    # max |2x - x| over x
    assert re.search(
        r"The max per-element difference \(slow mode\) is: tensor\(2\.0000, dtype=rgrad.float64\)\.\n$", slow
    )
    assert "Fast gradcheck failed but element-wise differences are small" not in msg


def test_fast_mode_message_says_when_slow_mode_would_pass():
    x = rgrad.tensor([0.3, 0.4], dtype=rgrad.float64, requires_grad=True)
    with pytest.raises(GradcheckError) as info:
        gradcheck(almost_right(rgrad), x, fast_mode=True)
    assert str(info.value).endswith(
        "Fast gradcheck failed but element-wise differences are small. This means that the\n"
        "test might've passed in slow_mode!\n\n"
        "If that is what you want, call gradcheck/gradgradcheck with `fast_mode=False` as a\nkeyword argument."
    )


def test_nondeterminism_message_names_the_tolerance():
    x = rgrad.tensor(X, dtype=rgrad.float64, requires_grad=True)
    with pytest.raises(GradcheckError, match=r"The tolerance for nondeterminism was 1e-12\.\n\nNOTE: ") as info:
        gradcheck(nondeterministic_backward(random.Random(0)), x, nondet_tol=1e-12)
    assert "`nondet_tol=<tol>`" in str(info.value)


# ---------------------------------------------------------------------------------------
# warnings and side effects
# ---------------------------------------------------------------------------------------


def test_float32_inputs_warn_at_the_callers_line_and_can_still_pass():
    a = rgrad.tensor(A, requires_grad=True)
    with pytest.warns(UserWarning, match=r"^Input #0 requires gradient and is not a double precision") as record:
        assert gradcheck(lambda t: t * 2, (a,), eps=1e-3, atol=1e-2, rtol=1e-2)
    assert [w.filename for w in record] == [__file__]


def test_gradgradcheck_warns_for_float32_inputs_and_grad_outputs():
    a = rgrad.tensor(A, requires_grad=True)
    with pytest.warns(UserWarning) as record:
        assert gradgradcheck(lambda t: t * t, (a,), eps=1e-3, atol=1e-2, rtol=1e-2)
    # the default grad_output has the output's dtype: input #1 of the checked function
    assert [str(w.message)[:8] for w in record] == ["Input #0", "Input #1"]
    assert {w.filename for w in record} == {__file__}


def test_inputs_are_restored_and_their_versions_untouched():
    a = rgrad.tensor(A, dtype=rgrad.float64, requires_grad=True)
    view = rgrad.tensor(B, dtype=rgrad.float64, requires_grad=True).t()  # a non-leaf, non-contiguous input
    before = (a.tolist(), view.tolist(), a._version, view._version)
    for fast_mode in (False, True):
        assert gradcheck(lambda p, q: (p * q.t()).exp(), (a, view), fast_mode=fast_mode)
        assert gradgradcheck(lambda p, q: (p * q.t()).exp(), (a, view), fast_mode=fast_mode)
    assert (a.tolist(), view.tolist(), a._version, view._version) == before
    assert a.grad is None  # gradients are returned by autograd.grad, never accumulated


def test_an_exception_from_func_propagates_and_the_input_is_restored():
    x = rgrad.tensor(X, dtype=rgrad.float64, requires_grad=True)

    def fails_when_perturbed(t):
        if t[0].item() != X[0]:
            raise ValueError("perturbed")
        return t * 2

    with pytest.raises(ValueError, match="perturbed"):
        gradcheck(fails_when_perturbed, x)
    assert x.tolist() == X


def test_fast_mode_leaves_the_global_random_state_alone():
    rgrad.manual_seed(123)
    expected = rgrad.rand(4).tolist()
    rgrad.manual_seed(123)
    x = rgrad.tensor(X, dtype=rgrad.float64, requires_grad=True)
    assert gradcheck(lambda t: t.sin(), x, fast_mode=True)
    assert rgrad.rand(4).tolist() == expected


@pytest.mark.parametrize("non_contiguous", [False, True])
def test_gradgradcheck_draws_grad_outputs_like_torch(monkeypatch, non_contiguous):
    # torch draws them with make_tensor(shape, dtype, low=-1, high=1, requires_grad=True,
    # noncontiguous=gen_non_contig_grad_outputs), one per output requiring grad, and
    # gradchecks the first-order gradients as a function of (*inputs, *grad_outputs)
    checked_inputs = []
    run_gradcheck = gradcheck_module._gradcheck

    def spy(func, inputs, **kwargs):
        checked_inputs.append(inputs)
        return run_gradcheck(func, inputs, **kwargs)

    monkeypatch.setattr(gradcheck_module, "_gradcheck", spy)
    a = rgrad.tensor(A, dtype=rgrad.float64, requires_grad=True)
    assert gradgradcheck(
        lambda t, s: (t.sin() * s, t.detach(), t.sum()), (a, 2.0), gen_non_contig_grad_outputs=non_contiguous
    )
    [(inp, scale, g_sin, g_sum)] = checked_inputs
    assert inp is a and scale == 2.0
    for g, shape in ((g_sin, (2, 3)), (g_sum, ())):
        assert tuple(g.shape) == shape and g.dtype == rgrad.float64
        assert g.requires_grad and g.is_leaf
        assert all(-1.0 <= v < 1.0 for v in g.reshape(-1).tolist())
    assert g_sin.is_contiguous() != non_contiguous
    assert g_sum.is_contiguous()  # a single element is never made non-contiguous


# ---------------------------------------------------------------------------------------
# batched gradients (check_batched_grad, check_batched_forward_grad)
# ---------------------------------------------------------------------------------------


def _two_outputs(a, b):
    return (a * b).sin().sum(1), (a @ b).exp()


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")
@pytest.mark.parametrize("lib", ["rgrad", "torch"])
def test_batched_checks_pass_on_correct_derivatives(lib):
    L = RGRAD if lib == "rgrad" else _torch_lib()
    L.T.manual_seed(0)
    a = L.T.randn(3, 4, dtype=L.T.float64, requires_grad=True)
    b = L.T.randn(4, dtype=L.T.float64, requires_grad=True)
    assert L.gradcheck(_two_outputs, (a, b), check_batched_grad=True, check_forward_ad=True,
                       check_batched_forward_grad=True)
    assert L.gradgradcheck(lambda x, y: (x * y).tanh().sum(0), (a, b), check_batched_grad=True)


def _jvp_reads_its_tangent(T):
    class Scale(T.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, t):
            # .item() has no meaning for a batch of tangents: vmap refuses it
            return t * 2 if t.sum().item() == t.sum().item() else t

    return Scale.apply


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")
@pytest.mark.parametrize("lib", ["rgrad", "torch"])
def test_batched_forward_check_reports_a_jvp_that_vmap_cannot_run(lib):
    L = RGRAD if lib == "rgrad" else _torch_lib()
    x = L.leaf(X)
    f = _jvp_reads_its_tangent(L.T)
    assert L.gradcheck(f, x, check_forward_ad=True)  # correct derivatives
    error = importlib.import_module(f"{L.T.__name__}.autograd.gradcheck").GradcheckError
    with pytest.raises(error) as info:
        L.gradcheck(f, x, check_forward_ad=True, check_batched_forward_grad=True)
    msg = str(info.value)
    assert msg.startswith("While computing batched gradients, got: ")
    assert "gradcheck failed while testing batched gradient computation with forward-mode AD." in msg
    assert not L.gradcheck(f, x, check_forward_ad=True, check_batched_forward_grad=True, raise_exception=False)


def test_batched_check_reports_a_mismatch_and_an_error(monkeypatch):
    import rgrad.func

    x = rgrad.tensor(X, dtype=rgrad.float64, requires_grad=True)
    real_vmap = rgrad.func.vmap

    def off_by_one(f):
        return lambda v: tuple(g + 1 for g in real_vmap(f)(v))

    monkeypatch.setattr(rgrad.func, "vmap", off_by_one)
    with pytest.raises(GradcheckError) as info:
        gradcheck(lambda t: t.sin(), x, check_batched_grad=True)
    msg = str(info.value)
    assert msg.startswith("For output 0 and input 0:\n\ngradcheck or gradgradcheck failed while testing batched "
                          "gradient computation.\n")
    assert "\n\nGot:\ntensor(" in msg and "\n\nExpected:\ntensor(" in msg

    def broken(f):
        def run(v):
            raise RuntimeError("boom")
        return run

    monkeypatch.setattr(rgrad.func, "vmap", broken)
    with pytest.raises(GradcheckError, match=r"^While computing batched gradients, got: boom\n\ngradcheck or "):
        gradcheck(lambda t: t.sin(), x, check_batched_grad=True)
    # without the flag the batched check does not run
    assert gradcheck(lambda t: t.sin(), x)


def test_batched_check_draws_two_grad_outputs_per_output():
    # torch draws two randn_like grad_outputs for every output: the same generator calls
    x = rgrad.tensor(X, dtype=rgrad.float64, requires_grad=True)
    rgrad.manual_seed(3)
    gradcheck(lambda t: (t.sin(), t.cos()), x, check_batched_grad=True)
    after = rgrad.randn(1).item()
    rgrad.manual_seed(3)
    for _ in range(4):
        rgrad.randn(3, dtype=rgrad.float64)
    assert rgrad.randn(1).item() == after


# ---------------------------------------------------------------------------------------
# undefined output gradients
# ---------------------------------------------------------------------------------------
# rgrad._C._undefined_grad(t) returns an alias of t whose backward passes an undefined
# gradient on. These tests replace it with stand-ins whose backward misbehaves, to check
# what gradcheck does with a backward that cannot handle undefined gradients.


def _alias_with_hook(hook):
    def undefined_grad(t):
        y = t.view_as(t)
        y.register_hook(hook)
        return y

    return undefined_grad


def _raise_runtime_error(g):
    raise RuntimeError("backward got an undefined gradient")


def test_backward_that_fails_on_undefined_grads_is_reported(monkeypatch):
    monkeypatch.setattr(_C, "_undefined_grad", _alias_with_hook(_raise_runtime_error), raising=False)
    x = rgrad.tensor(X, dtype=rgrad.float64, requires_grad=True)
    with (
        pytest.warns(UserWarning, match="^Backwards compatibility: New undefined gradient support checking") as record,
        pytest.raises(GradcheckError) as info,
    ):
        gradcheck(lambda t: t.sin(), x)
    assert str(info.value) == (
        "Expected backward function to handle undefined output grads. "
        'Please look at "Notes about undefined output gradients" in "tools/autograd/derivatives.yaml"'
    )
    assert isinstance(info.value.__cause__, RuntimeError)
    assert [w.filename for w in record] == [__file__]
    # the undefined-grad check is skipped on request
    assert gradcheck(lambda t: t.sin(), x, check_undefined_grad=False)


def test_nonzero_grads_from_undefined_grads_are_reported(monkeypatch):
    monkeypatch.setattr(_C, "_undefined_grad", _alias_with_hook(lambda g: g + 1), raising=False)
    x = rgrad.tensor(X, dtype=rgrad.float64, requires_grad=True)
    with pytest.warns(UserWarning, match="^Backwards compatibility"):
        assert not gradcheck(lambda t: t.sin(), x, raise_exception=False)
    with (
        pytest.warns(UserWarning, match="^Backwards compatibility"),
        pytest.raises(GradcheckError, match=r"^Expected all input grads to be undefined or zero when all output grads"),
    ):
        gradcheck(lambda t: t.sin(), x)


def test_undefined_grads_are_tried_all_at_once_then_one_output_at_a_time(monkeypatch):
    calls = []

    def undefined_grad(t):
        calls.append(tuple(t.shape))
        return t.view_as(t)

    monkeypatch.setattr(_C, "_undefined_grad", undefined_grad, raising=False)
    a = rgrad.tensor(A, dtype=rgrad.float64, requires_grad=True)
    assert gradcheck(lambda t: (t * 2, t.sum(), t.detach()), a)
    # two differentiable outputs: both at once, then each alone
    assert calls == [(2, 3), (), (2, 3), ()]


def test_undefined_grad_check_needs_undefined_grad_support(monkeypatch):
    monkeypatch.delattr(_C, "_undefined_grad", raising=False)
    x = rgrad.tensor(X, dtype=rgrad.float64, requires_grad=True)
    with pytest.raises(NotImplementedError, match="needs rgrad._C._undefined_grad"):
        gradcheck(lambda t: t.sin(), x)
    assert gradcheck(lambda t: t.sin(), x, check_undefined_grad=False)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_forward_ad_checks(fast_mode):
    """check_forward_ad compares the Jacobian that forward-mode AD gives with the
    numerical one: it passes on a correct op and catches a wrong tangent (here, a
    detach() that forward AD sees as a constant, the numerical Jacobian does not)."""
    x = rgrad.tensor(X, dtype=rgrad.float64, requires_grad=True)
    ok = dict(check_forward_ad=True, fast_mode=fast_mode)
    assert gradcheck(lambda t: (t.sin() * t).sum(0), x, **ok)
    assert gradcheck(lambda t: t.exp(), x, check_backward_ad=False, **ok)
    assert gradgradcheck(lambda t: (t * t.exp()).sum(), x, check_fwd_over_rev=True, check_rev_over_rev=False,
                         check_undefined_grad=False, fast_mode=fast_mode)
    with pytest.raises(GradcheckError, match="^Jacobian computed with forward mode mismatch for output 0 with respect to input 0"):
        gradcheck(lambda t: t.detach() * t, x, check_backward_ad=False, **ok)
    assert not gradcheck(lambda t: t.detach() * t, x, check_backward_ad=False, raise_exception=False, **ok)
