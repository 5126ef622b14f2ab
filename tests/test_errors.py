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


def _modified_saved_exp(t):
    a = t.ones(3, requires_grad=True)
    b = a.exp()  # ExpBackward0 saves its output
    b.add_(1)
    (b * 1).sum().backward()


def _grad_unused_first_input(t):
    x = t.tensor([1.0, 2.0], requires_grad=True)
    u = t.tensor([3.0, 4.0], requires_grad=True)
    t.autograd.grad((x * 2).sum(), [u, x])


def _wrong_grad_shape(t):
    x = t.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y.backward(t.ones(2))


def _leaf_in_place(t):
    w = t.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w.add_(1)


NOT_USED = (
    r"^The differentiated Tensor at index 1 appears to not have been "
    r"used in the graph\. Set allow_unused=True if this is the desired behavior\.$"
)
# torch 2.15 words it by call: the constructor or a factory, the method, the attribute
INT_REQUIRES_GRAD_NEW = r"^Only Tensors of floating point and complex dtype can require gradients$"
INT_REQUIRES_GRAD_METHOD = r"^only Tensors of floating point dtype can require gradients$"
INT_REQUIRES_GRAD_ATTR = r"^only Tensors of floating point and complex dtype can require gradients$"
NUMEL_OVERFLOW = r"^numel: integer multiplication overflow$"
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
        INT_REQUIRES_GRAD_NEW,
    ),
    (
        "requires-grad-int-ones",
        lambda t: t.ones(2, dtype=t.int64, requires_grad=True),
        RuntimeError,
        INT_REQUIRES_GRAD_NEW,
    ),
    (
        "requires-grad-int-method",
        lambda t: t.ones(2, dtype=t.int64).requires_grad_(),
        RuntimeError,
        INT_REQUIRES_GRAD_METHOD,
    ),
    ("requires-grad-int-setter", _set_requires_grad_int, RuntimeError, INT_REQUIRES_GRAD_ATTR),
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
    # ---- sizes that overflow: refused at once, before any allocation or loop (issue 13)
    ("bool-of-two-elements", lambda t: bool(t.ones(2)), RuntimeError,
     r"^Boolean value of Tensor with more than one value is ambiguous$"),
    ("bool-of-no-element", lambda t: bool(t.ones(0)), RuntimeError, r"^Boolean value of Tensor with no values is ambiguous$"),
    ("invert-float", lambda t: ~t.ones(2), TypeError,
     r"^~ \(operator\.invert\) is only implemented on integer and Boolean-type tensors$"),
    ("invert-double", lambda t: ~t.ones(2, dtype=t.float64), TypeError, r"operator\.invert"),
    ("expand-numel-overflow", lambda t: t.ones(1, 1).expand(2**32, 2**32), RuntimeError, NUMEL_OVERFLOW),
    ("expand-numel-overflow-2", lambda t: t.ones(1, 1).expand(2**62, 4), RuntimeError, NUMEL_OVERFLOW),
    ("expand-negative-size", lambda t: t.ones(1).expand(-2), RuntimeError, NUMEL_OVERFLOW),
    (
        "expand-negative-size-mismatch",
        lambda t: t.ones(2, 3).expand(-2, 3),
        RuntimeError,
        r"^The expanded size of the tensor \(-2\) must match the existing size \(2\) at non-singleton dimension 0\.  "
        r"Target sizes: \[-2, 3\]\.  Tensor sizes: \[2, 3\]$",
    ),
    ("view-of-empty-overflow", lambda t: t.ones(0).view(2**62, 2**62, 0), RuntimeError, NUMEL_OVERFLOW),
    (
        "view-wrapping-product",
        lambda t: t.ones(2, 3).view(2**32, 2**32),
        RuntimeError,
        r"^shape '\[4294967296, 4294967296\]' is invalid for input of size 6$",
    ),
    (
        "view-ambiguous-empty",
        lambda t: t.ones(0).view(-1, 0),
        RuntimeError,
        r"^cannot reshape tensor of 0 elements into shape \[-1, 0\] because the unspecified dimension size -1 "
        r"can be any value and is ambiguous$",
    ),
    (
        "zeros-storage-overflow",
        lambda t: t.zeros(2**62),
        RuntimeError,
        r"^Storage size calculation overflowed with sizes=\[4611686018427387904\]$",
    ),
    (
        "zeros-storage-overflow-2d",
        lambda t: t.zeros(2**31, 2**31),
        RuntimeError,
        r"^Storage size calculation overflowed with sizes=\[2147483648, 2147483648\]$",
    ),
    (
        "zeros-overflow-before-zero",
        lambda t: t.zeros(2**40, 2**40, 0),
        RuntimeError,
        r"^Storage size calculation overflowed with sizes=\[1099511627776, 1099511627776, 0\]$",
    ),
    (
        "zeros-too-large-for-memory",
        lambda t: t.zeros(2**40),
        RuntimeError,
        r"DefaultCPUAllocator: can't allocate memory: you tried to allocate 4398046511104 bytes\.",
    ),
    ("zeros-negative", lambda t: t.zeros(2, -3), RuntimeError, r"^zeros: Dimension size must be non-negative\.$"),
    (
        "ones-negative",
        lambda t: t.ones(-1),
        RuntimeError,
        r"^Trying to create tensor with negative dimension -1: \[-1\]$",
    ),
    (
        "arange-storage-overflow",
        lambda t: t.arange(0, 2**62),
        RuntimeError,
        r"^Storage size calculation overflowed with sizes=\[4611686018427387904\]$",
    ),
    ("arange-size-overflow", lambda t: t.arange(0, 1e20), RuntimeError, r"^invalid size, possible overflow\?$"),
    ("arange-tiny-step", lambda t: t.arange(0, 10, 1e-18), RuntimeError, r"^invalid size, possible overflow\?$"),
    ("arange-infinite", lambda t: t.arange(0, float("inf")), RuntimeError, r"^unsupported range: 0 -> inf$"),
    (
        "arange-wrong-sign",
        lambda t: t.arange(-5),
        RuntimeError,
        r"^upper bound and lower bound inconsistent with step sign$",
    ),
    (
        "repeat-storage-overflow",
        lambda t: t.ones(2, 3).repeat(2**32, 2**32),
        RuntimeError,
        r"^Storage size calculation overflowed with sizes=\[8589934592, 12884901888\]$",
    ),
    (
        "cat-size-overflow",
        lambda t: t.cat([t.ones(1).expand(2**62), t.ones(1).expand(2**62)]),
        RuntimeError,
        r"^Trying to create tensor with negative dimension -9223372036854775808: \[-9223372036854775808\]$",
    ),
    (
        "matmul-storage-overflow",
        lambda t: t.ones(1, 1).expand(2**32, 1) @ t.ones(1, 1).expand(1, 2**32),
        RuntimeError,
        r"^Storage size calculation overflowed with sizes=\[4294967296, 4294967296\]$",
    ),
    (
        "broadcast-storage-overflow",
        lambda t: t.ones(1, 1).expand(2**32, 1) + t.ones(1, 1).expand(1, 2**32),
        RuntimeError,
        r"^Storage size calculation overflowed with sizes=\[4294967296, 4294967296\]$",
    ),
    (
        "full-storage-overflow",
        lambda t: t.full((2**62,), 1.0),
        RuntimeError,
        r"^Storage size calculation overflowed with sizes=\[4611686018427387904\]$",
    ),
    (
        "clone-storage-overflow",
        lambda t: t.ones(1).expand(2**62).clone(),
        RuntimeError,
        r"^Storage size calculation overflowed with sizes=\[4611686018427387904\] and strides=\[1\]$",
    ),
    ("tolist-too-large", lambda t: t.ones(1).expand(2**62).tolist(), MemoryError, r"^$"),
    ("set-num-threads-zero", lambda t: t.set_num_threads(0), RuntimeError, r"^set_num_threads expects a positive integer$"),
    ("set-num-threads-overflow", lambda t: t.set_num_threads(2**40), ValueError, r"^Overflow when unpacking long$"),
    ("size-beyond-int64", lambda t: t.zeros(2**64), TypeError, r"^zeros\(\): argument 'size'"),
    (
        "bitwise-and-float",
        lambda t: t.ones(2) & t.ones(2),
        NotImplementedError,
        r'^"bitwise_and_cpu" not implemented for \'Float\'$',
    ),
    ("bitwise-or-float-number", lambda t: t.tensor([6]) | 2.5, NotImplementedError, r'^"bitwise_or_cpu" not impl'),
    # ---- torch 2.15's wording (issue 13)
    (
        "modified-saved-output-names-forward-op",
        _modified_saved_exp,
        RuntimeError,
        r"^one of the variables needed for gradient computation has been modified by an inplace operation: "
        r"\[\w+\.FloatTensor \[3\]\], which is output 0 of Exp, is at version 1; expected version 0 instead\. "
        r"Hint: enable anomaly detection to find the operation that failed to compute its gradient, with "
        r"torch\.autograd\.set_detect_anomaly\(True, check_nan=False\)\.$",
    ),
    (
        "grad-unused-input-index-0",
        _grad_unused_first_input,
        RuntimeError,
        r"^The differentiated Tensor at index 0 appears to not have been used in the graph\. Set allow_unused=True "
        r"if this is the desired behavior\.$",
    ),
    (
        "backward-create-graph-none",
        lambda t: (t.ones(2, requires_grad=True) * 2).sum().backward(create_graph=None),
        TypeError,
        r"^'NoneType' object cannot be interpreted as an integer$",
    ),
    (
        "backward-unknown-keyword",
        lambda t: (t.ones(2, requires_grad=True) * 2).sum().backward(foo=1),
        TypeError,
        r"^Tensor\.backward\(\) got an unexpected keyword argument 'foo'$",
    ),
    (
        "grad-does-not-require-grad",
        lambda t: t.autograd.grad((t.ones(2, requires_grad=True) * 2).sum(), t.ones(2)),
        RuntimeError,
        r"^One of the differentiated Tensors does not require grad$",
    ),
    (
        "rmod-backward-not-implemented",
        lambda t: (1.7 % t.ones(2, requires_grad=True)).sum().backward(),
        RuntimeError,
        r"^derivative for aten::remainder is not implemented$",
    ),
    (
        "rfloordiv-backward-not-implemented",
        lambda t: (2 // t.ones(2, requires_grad=True)).sum().backward(),
        RuntimeError,
        r"^derivative for aten::floor_divide is not implemented$",
    ),
    (
        "len-of-0d",
        lambda t: len(t.tensor(1.0)),
        TypeError,
        r"len\(\) of a 0-d tensor",
    ),
    (
        "where-double-condition",
        lambda t: t.where(t.ones(2, dtype=t.float64), t.ones(2), t.zeros(2)),
        RuntimeError,
        r"^where expected condition to be a boolean tensor, but got a tensor with dtype Double$",
    ),
    (
        "where-long-condition",
        lambda t: t.where(t.tensor([1, 0]), t.ones(2), t.zeros(2)),
        RuntimeError,
        r"^where expected condition to be a boolean tensor, but got a tensor with dtype Long$",
    ),
    (
        "clamp-bool-with-two-tensor-bounds",
        lambda t: t.tensor([True]).clamp(t.tensor([True]), t.tensor([True])),
        NotImplementedError,
        r"^\"clamp_cpu\" not implemented for 'Bool'$",
    ),
    (
        "div-trunc-bool",
        lambda t: t.div(t.tensor([True]), t.tensor([True]), rounding_mode="trunc"),
        NotImplementedError,
        r"^\"div_trunc_cpu\" not implemented for 'Bool'$",
    ),
    (
        "pow-bool-exponent-tensor-backward",
        lambda t: (t.ones(2, requires_grad=True) ** t.tensor([True, False])).sum().backward(),
        NotImplementedError,
        r"^Subtraction, the `-` operator, with a bool tensor is not supported",
    ),
    (
        "div-floor-second-backward",
        lambda t: (lambda y: (y.backward(), y.backward()))(
            t.ones(2, requires_grad=True).div(t.ones(2, requires_grad=True), rounding_mode="floor").sum()),
        RuntimeError,
        r"^Trying to backward through the graph a second time",
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


@pytest.mark.parametrize("bad", [-1, 4096, -5000])
@pytest.mark.parametrize("where", [0, 70_000, 262_143])
def test_gather_along_rows_checks_its_indices_in_the_kernel(bad, where):
    # along the rows of a contiguous input the kernel checks the indices in its own pass
    # (parallel chunks from 64K elements); one bad index anywhere is torch's error, and
    # nothing half-written comes back
    x = rgrad.arange(64 * 4096, dtype=rgrad.float32).reshape(64, 4096)
    idx = rgrad.randint(0, 4096, (64, 4096))
    flat = idx.view(-1)
    flat[where] = bad
    with pytest.raises(RuntimeError, match=rf"^index {bad} is out of bounds for dimension 1 with size 4096$"):
        x.gather(1, idx)
    flat[where] = 7
    assert x.gather(1, idx).view(-1)[where].item() == (where // 4096) * 4096 + 7


def test_gather_reports_the_first_bad_index_in_row_major_order():
    x = rgrad.zeros(8, 300)
    idx = rgrad.zeros(8, 300, dtype=rgrad.int64)
    idx[5, 3] = 400
    idx[2, 9] = -2
    idx[7, 0] = 300
    with pytest.raises(RuntimeError, match=r"^index -2 is out of bounds for dimension 1 with size 300$"):
        x.gather(1, idx)
    # along dim 0 (the index checked before the kernel): the same rule
    with pytest.raises(RuntimeError, match=r"^index -2 is out of bounds for dimension 0 with size 8$"):
        x.gather(0, idx)


def test_gather_along_rows_of_no_columns_is_an_index_error_not_a_panic():
    # (fuzz seed 9505: rows of size 0 at a storage offset past the end of an empty
    # storage, and an empty slice of a longer one, reached the row kernel unchecked)
    x = rgrad.tensor([], dtype=rgrad.float32).reshape(4, 0)[-1:5]
    with pytest.raises(RuntimeError, match=r"^index 0 is out of bounds for dimension 1 with size 0$"):
        x.gather(1, rgrad.tensor([[0, 0, 0]]))
    y = rgrad.arange(8, dtype=rgrad.float32).reshape(2, 4)[::2][1:-1:3, -1, ...]
    with pytest.raises(RuntimeError, match=r"^index 0 is out of bounds for dimension 0 with size 0$"):
        y.gather(0, rgrad.tensor([0, 0]))
