"""Error behaviour: one table, checked against rgrad always and against torch
when torch is installed.

Each row: (id, callable taking the module (rgrad or torch), exception type,
message regex for pytest.raises(match=...), i.e. re.search).  Where torch
versions word a message differently the regex accepts each wording.
"""

import re

import pytest

import rgrad

# ---------------------------------------------------------------- helpers


def _second_backward(t):
    x = t.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).sum()  # MulBackward0 saves x: freed by the first backward
    y.backward()
    y.backward()


def _second_grad(t):
    x = t.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp().sum()  # ExpBackward0 saves its result
    t.autograd.grad(y, x)
    t.autograd.grad(y, x)


def _grad_unused_input(t):
    x = t.tensor([1.0, 2.0], requires_grad=True)
    u = t.tensor([3.0, 4.0], requires_grad=True)
    y = (x * 2).sum()
    t.autograd.grad(y, [x, u])


def _set_requires_grad_non_leaf(t, value):
    x = t.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.requires_grad = value


def _set_requires_grad_int(t):
    x = t.tensor([1, 2])
    x.requires_grad = True


def _wrong_grad_shape(t):
    x = t.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y.backward(t.ones(2))


def _leaf_in_place(t):
    w = t.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w.add_(1)


NOT_USED = (
    r"(One of the differentiated Tensors|The differentiated Tensor at index 1) appears to not have been "
    r"used in the graph\. Set allow_unused=True if this is the desired behavior\."
)
INT_REQUIRES_GRAD = r"[Oo]nly Tensors of floating point (and complex )?dtype can require gradients"
NON_LEAF = (
    r"you can only change requires_grad flags of leaf variables\. If you want to use a computed "
    r"variable in a subgraph that doesn't require differentiation use var_no_grad = var\.detach\(\)\."
)

ERROR_TABLE = [
    (
        "backward-non-scalar-without-gradient",
        lambda t: (t.ones(3, requires_grad=True) * 2).backward(),
        RuntimeError,
        r"grad can be implicitly created only for scalar outputs",
    ),
    (
        "backward-without-graph",
        lambda t: t.ones(3).sum().backward(),
        RuntimeError,
        r"element 0 of tensors does not require grad and does not have a grad_fn",
    ),
    (
        "autograd-backward-without-graph",
        lambda t: t.autograd.backward([t.ones(3).sum()]),
        RuntimeError,
        r"element 0 of tensors does not require grad and does not have a grad_fn",
    ),
    (
        "second-backward",
        _second_backward,
        RuntimeError,
        r"^Trying to backward through the graph a second time \(or directly access saved tensors after "
        r"they have already been freed\)\. Saved intermediate values of the graph are freed when you call "
        r"\.backward\(\) or autograd\.grad\(\)\. Specify retain_graph=True if you need to backward through "
        r"the graph a second time or if you need to access saved tensors after calling backward\.$",
    ),
    (
        "second-autograd-grad",
        _second_grad,
        RuntimeError,
        r"Trying to backward through the graph a second time",
    ),
    ("grad-unused-input", _grad_unused_input, RuntimeError, NOT_USED),
    (
        "div-unknown-rounding-mode",
        lambda t: t.ones(2).div(2, rounding_mode="round"),
        RuntimeError,
        r"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'",
    ),
    (
        "div-function-unknown-rounding-mode",
        lambda t: t.div(t.ones(2), 2, rounding_mode="round"),
        RuntimeError,
        r"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'",
    ),
    (
        "broadcast-mismatch",
        lambda t: t.ones(3) + t.ones(4),
        RuntimeError,
        r"The size of tensor a \(3\) must match the size of tensor b \(4\) at non-singleton dimension 0",
    ),
    (
        "broadcast-mismatch-2d",
        lambda t: t.ones(2, 3) * t.ones(2, 4),
        RuntimeError,
        r"The size of tensor a \(3\) must match the size of tensor b \(4\) at non-singleton dimension 1",
    ),
    (
        "mm-shape-mismatch",
        lambda t: t.mm(t.ones(2, 3), t.ones(4, 5)),
        RuntimeError,
        r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)",
    ),
    (
        "matmul-operator-shape-mismatch",
        lambda t: t.ones(2, 3) @ t.ones(4, 5),
        RuntimeError,
        r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)",
    ),
    (
        "dot-size-mismatch",
        lambda t: t.dot(t.ones(3), t.ones(4)),
        RuntimeError,
        r"inconsistent tensor size, expected tensor \[3\] and src \[4\] to have the same number of "
        r"elements, but got 3 and 4 elements respectively",
    ),
    (
        "dim-out-of-range",
        lambda t: t.ones(2, 3).sum(2),
        IndexError,
        r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)",
    ),
    (
        "dim-out-of-range-transpose",
        lambda t: t.ones(2, 3).transpose(0, 2),
        IndexError,
        r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)",
    ),
    (
        "index-out-of-range",
        lambda t: t.ones(3)[5],
        IndexError,
        r"index 5 is out of bounds for dimension 0 with size 3",
    ),
    (
        "index-out-of-range-dim1",
        lambda t: t.ones(2, 3)[0, 5],
        IndexError,
        r"index 5 is out of bounds for dimension 1 with size 3",
    ),
    (
        "requires-grad-int-constructor",
        lambda t: t.tensor([1, 2], requires_grad=True),
        RuntimeError,
        INT_REQUIRES_GRAD,
    ),
    (
        "requires-grad-int-ones",
        lambda t: t.ones(2, dtype=t.int64, requires_grad=True),
        RuntimeError,
        INT_REQUIRES_GRAD,
    ),
    (
        "requires-grad-int-method",
        lambda t: t.ones(2, dtype=t.int64).requires_grad_(),
        RuntimeError,
        INT_REQUIRES_GRAD,
    ),
    ("requires-grad-int-setter", _set_requires_grad_int, RuntimeError, INT_REQUIRES_GRAD),
    (
        "backward-wrong-gradient-shape",
        _wrong_grad_shape,
        RuntimeError,
        r"Mismatch in shape: grad_output\[0\] has a shape of \w+\.Size\(\[2\]\) and output\[0\] has a "
        r"shape of \w+\.Size\(\[3\]\)",
    ),
    (
        "type-exp-of-str",
        lambda t: t.exp("a"),
        TypeError,
        r"str",
    ),
    (
        "type-add-str",
        lambda t: t.ones(2) + "a",
        TypeError,
        r"str",
    ),
    (
        "type-zeros-of-str",
        lambda t: t.zeros("x"),
        TypeError,
        r"str",
    ),
    (
        "view-non-contiguous",
        lambda t: t.ones(2, 3).t().view(6),
        RuntimeError,
        r"view size is not compatible with input tensor's size and stride",
    ),
    (
        "reshape-wrong-numel",
        lambda t: t.ones(2, 3).reshape(4),
        RuntimeError,
        r"shape '\[4\]' is invalid for input of size 6",
    ),
    (
        "view-wrong-numel",
        lambda t: t.ones(2, 3).view(4),
        RuntimeError,
        r"shape '\[4\]' is invalid for input of size 6",
    ),
    (
        "cat-mismatched-shapes",
        lambda t: t.cat([t.ones(2, 3), t.ones(2, 4)]),
        RuntimeError,
        r"Sizes of tensors must match except in dimension 0\. Expected size 3 but got size 4 for tensor "
        r"number 1 in the list\.",
    ),
    (
        "item-multi-element",
        lambda t: t.ones(2, 3).item(),
        RuntimeError,
        r"a Tensor with 6 elements cannot be converted to Scalar",
    ),
    (
        "requires-grad-setter-non-leaf",
        lambda t: _set_requires_grad_non_leaf(t, False),
        RuntimeError,
        NON_LEAF,
    ),
    (
        "requires-grad-setter-non-leaf-true",
        lambda t: _set_requires_grad_non_leaf(t, True),
        RuntimeError,
        r"you can only change requires_grad flags of leaf variables\.",
    ),
    (
        "requires-grad-method-non-leaf-false",
        lambda t: (t.ones(2, requires_grad=True) * 2).requires_grad_(False),
        RuntimeError,
        NON_LEAF,
    ),
    (
        "numpy-requires-grad",
        lambda t: t.ones(2, requires_grad=True).numpy(),
        RuntimeError,
        r"Can't call numpy\(\) on Tensor that requires grad\. Use tensor\.detach\(\)\.numpy\(\) instead\.",
    ),
    (
        "leaf-in-place",
        _leaf_in_place,
        RuntimeError,
        r"a leaf Variable that requires grad is being used in an in-place operation\.",
    ),
    (
        "len-of-0d",
        lambda t: len(t.tensor(1.0)),
        TypeError,
        r"len\(\) of a 0-d tensor",
    ),
]

IDS = [row[0] for row in ERROR_TABLE]


def test_error_table_ids_unique():
    assert len(IDS) == len(set(IDS))
    assert len(ERROR_TABLE) >= 20


@pytest.mark.parametrize("case_id, fn, exc, pattern", ERROR_TABLE, ids=IDS)
def test_error_rgrad(case_id, fn, exc, pattern):
    with pytest.raises(exc, match=pattern):
        fn(rgrad)


@pytest.mark.parametrize("case_id, fn, exc, pattern", ERROR_TABLE, ids=IDS)
def test_error_torch_reference(case_id, fn, exc, pattern):
    torch = pytest.importorskip("torch")
    with pytest.raises(exc, match=pattern):
        fn(torch)


@pytest.mark.parametrize("case_id, fn, exc, pattern", ERROR_TABLE, ids=IDS)
def test_error_is_not_a_panic(case_id, fn, exc, pattern):
    # pyo3_runtime.PanicException derives from BaseException, so pytest.raises(Exception)
    # would not see it: catch everything and look at what came out.
    caught = None
    try:
        fn(rgrad)
    except BaseException as e:  # noqa: BLE001 - the point of the test
        caught = e
    assert caught is not None, f"{case_id}: nothing was raised"
    assert type(caught).__name__ != "PanicException", f"{case_id}: Rust panic: {caught!r}"
    assert isinstance(caught, Exception), f"{case_id}: {type(caught)!r} is not an Exception"
    assert isinstance(caught, exc), f"{case_id}: expected {exc.__name__}, got {type(caught).__name__}: {caught}"
    assert re.search(pattern, str(caught)), f"{case_id}: message {str(caught)!r} !~ {pattern!r}"


def test_errors_leave_grad_mode_and_state_usable():
    # After all those errors the library still works normally.
    for _, fn, _, _ in ERROR_TABLE:
        try:
            fn(rgrad)
        except Exception:
            pass
    assert rgrad.is_grad_enabled() is True
    x = rgrad.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    # d/dx sum(x^2) = 2x
    assert x.grad.tolist() == [2.0, 4.0]
