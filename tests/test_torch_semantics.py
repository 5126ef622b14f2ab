"""Behaviours found by comparing rgrad with torch on unusual calls (each checked against
torch 2.15): dtype-unsupported ops raise NotImplementedError, size-taking methods need
their sizes, empty reductions, clamp with tensor bounds, and small API forms."""

import pytest

import rgrad

B = rgrad.tensor([True, False])
I = rgrad.tensor([1, 2])


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: -B, "Negation, the `-` operator, on a bool tensor is not supported"),
        (lambda: B.abs(), "\"abs_cpu\" not implemented for 'Bool'"),
        (lambda: B.relu(), "Boolean inputs not supported for relu"),
        (lambda: I.mean(), r"mean\(\): could not infer output dtype.*Got: Long"),
        (lambda: I.var(), "std and var only support floating point and complex dtypes"),
        (lambda: B.norm(), "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Bool"),
        (lambda: B.argmax(), r"argmax\(\): does not support bool input"),
        (lambda: I.softmax(0), "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
        (lambda: B - B, "with two bool tensors is not supported"),
        (lambda: B - 2, "with a bool tensor is not supported"),
        (lambda: I - True, "with a bool tensor is not supported"),
        (lambda: 2 - B, "with a bool tensor is not supported"),
        (lambda: B**B, "\"pow\" not implemented for 'Bool'"),
        (lambda: B % B, "\"remainder_cpu\" not implemented for 'Bool'"),
        (lambda: B // B, "\"div_floor_cpu\" not implemented for 'Bool'"),
    ],
)
def test_ops_without_a_kernel_for_the_dtype_raise_not_implemented(call, message):
    with pytest.raises(NotImplementedError, match=message):
        call()


def test_supported_bool_and_int_forms_still_work():
    assert (B**True).tolist() == [True, False]
    assert (~I).tolist() == [-2, -3]  # bitwise not: ~x == -x - 1
    assert (~B).tolist() == [False, True]
    assert B.amax().item() is True


@pytest.mark.parametrize("method", ["view", "reshape", "expand", "permute", "repeat"])
def test_size_taking_methods_require_their_sizes(method):
    # (torch words view()'s error as an invalid combination of arguments)
    with pytest.raises(TypeError, match="missing 1 required positional arguments|invalid combination of arguments"):
        getattr(rgrad.ones(2, 3), method)()


@pytest.mark.parametrize("factory", ["zeros", "ones", "empty"])
def test_factories_require_a_size(factory):
    with pytest.raises(TypeError, match='missing 1 required positional arguments: "size"'):
        getattr(rgrad, factory)()


def test_reductions_of_empty_tensors_follow_torch():
    z = rgrad.zeros(2, 0)
    assert z.amin(0).shape == (0,)  # reducing the size-2 dim is fine
    assert z.argmax(0).tolist() == []
    assert z.max(0).values.shape == (0,)
    with pytest.raises(IndexError, match=r"amin\(\): Expected reduction dim 1 to have non-zero size."):
        z.amin(1)
    with pytest.raises(IndexError, match=r"argmax\(\): Expected reduction dim 1 to have non-zero size."):
        z.argmax(1)
    with pytest.raises(RuntimeError, match=r"amax\(\): Expected reduction dim to be specified"):
        z.amax()
    with pytest.raises(IndexError, match=r"argmax\(\): Expected reduction dim to be specified"):
        z.argmax()


def test_clamp_with_tensor_bounds_routes_gradients_like_torch():
    x = rgrad.tensor([1.0, 5.0, 9.0], requires_grad=True)
    lo = rgrad.tensor([2.0, 2.0, 2.0], requires_grad=True)
    hi = rgrad.tensor(8.0, requires_grad=True)
    y = x.clamp(lo, hi)
    assert y.tolist() == [2.0, 5.0, 8.0]
    y.sum().backward()
    # x passes its gradient only where lo <= x <= hi; each bound where it was taken
    assert x.grad.tolist() == [0.0, 1.0, 0.0]
    assert lo.grad.tolist() == [1.0, 0.0, 0.0]
    assert hi.grad.item() == 1.0
    c = rgrad.tensor([0.0, 3.0, 10.0])
    c.clamp_(min=rgrad.tensor(1.0), max=5)
    assert c.tolist() == [1.0, 3.0, 5.0]


def test_stride_of_one_dim_and_copy_from_a_number():
    x = rgrad.zeros(2, 3)
    assert x.stride() == (3, 1)
    assert x.stride(1) == 1 and x.stride(-2) == 3
    x.copy_(2)
    assert x.tolist() == [[2.0] * 3] * 2


@pytest.mark.parametrize("dtype", [rgrad.float32, rgrad.float64])
@pytest.mark.parametrize("n", [7, 100_000])  # the per-element path and the vectorised split one
def test_relu_keeps_nan_and_negative_zero_like_torch(dtype, n):
    vals = [float("nan"), -0.0, 0.0, -1.0, 2.0, float("-inf"), float("inf")]
    x = rgrad.tensor((vals * (n // 7 + 1))[:n], dtype=dtype)
    for y in (x.relu(), x.clone().relu_(), rgrad.nn.functional.relu(x)):
        out = [str(v) for v in y[:7].tolist()]
        assert out == ["nan", "-0.0", "0.0", "0.0", "2.0", "0.0", "inf"]


@pytest.mark.parametrize("n", [4, 100_000])
def test_clamp_follows_torch_for_nan_and_crossed_bounds(n):
    nan = float("nan")
    x = rgrad.tensor(([1.0, -2.0, nan, -0.0] * (n // 4))[:n])

    def head(t):
        return [str(v) for v in t[:4].tolist()]

    assert head(x.clamp(min=nan)) == ["nan"] * 4  # a NaN bound makes everything NaN
    assert head(x.clamp(max=nan)) == ["nan"] * 4
    assert head(x.clamp(0.5, -1.0)) == ["-1.0", "-1.0", "nan", "-1.0"]  # hi wins
    assert head(x.clamp(min=0.0)) == ["1.0", "0.0", "nan", "-0.0"]
    assert rgrad.tensor([1, -2, 5]).clamp(min=-1, max=3).tolist() == [1, -1, 3]
    assert rgrad.tensor([1, -2, 5]).clamp(max=0).tolist() == [0, -2, 0]


def test_linear_with_a_bias_is_one_addmm_node_as_in_torch():
    F = rgrad.nn.functional
    x, w, b = rgrad.randn(4, 3), rgrad.randn(5, 3, requires_grad=True), rgrad.randn(5, requires_grad=True)
    y = F.linear(x, w, b)
    assert type(y.grad_fn).__name__ == "AddmmBackward0"
    names = [type(f).__name__ if f is not None else None for f, _ in y.grad_fn.next_functions]
    assert names == ["AccumulateGrad", None, "TBackward0"]  # bias, x (no grad), w.t()
    y.sum().backward()
    assert w.grad.is_contiguous() and b.grad.tolist() == [4.0] * 5
    assert type(F.linear(x, w).grad_fn).__name__ == "MmBackward0"


@pytest.mark.parametrize(
    "call, message",
    [
        # (torch 2.15's messages; before addmm, rgrad promoted a double bias silently)
        (lambda F, x, w, b: F.linear(x, w, b.double()), "self and mat2 must have the same dtype, but got Double and Float"),
        (lambda F, x, w, b: F.linear(x.double(), w, b), "mat1 and mat2 must have the same dtype, but got Double and Float"),
        (lambda F, x, w, b: F.linear(x, rgrad.randn(5, 4), b), r"addmm: mat1 and mat2 shapes cannot be multiplied \(4x3 and 4x5\)"),
        (lambda F, x, w, b: F.linear(x, w, rgrad.randn(4)),
         r"The expanded size of the tensor \(5\) must match the existing size \(4\) at non-singleton dimension 1"),
        (lambda F, x, w, b: rgrad.addmm(b, rgrad.randn(3), w.t()), "addmm: self must be a matrix, got 1-D tensor"),
        (lambda F, x, w, b: rgrad.addmm(b, x, rgrad.randn(3)), "addmm: mat2 must be a matrix, got 1-D tensor"),
        (lambda F, x, w, b: rgrad.addmm(rgrad.randn(2, 4, 5), x, w.t()),
         r"expand\(torch.FloatTensor\{\[2, 4, 5\]\}, size=\[4, 5\]\): the number of sizes provided \(2\) must be "
         r"greater or equal to the number of dimensions in the tensor \(3\)"),
    ],
)
def test_addmm_and_linear_errors_match_torch(call, message):
    x, w, b = rgrad.randn(4, 3), rgrad.randn(5, 3), rgrad.randn(5)
    with pytest.raises(RuntimeError, match=message):
        call(rgrad.nn.functional, x, w, b)


def test_addmm_beta_zero_ignores_input_and_scales_apply():
    a, b = rgrad.randn(4, 3), rgrad.randn(3, 5)
    nan = rgrad.full((5,), float("nan"))
    assert rgrad.addmm(nan, a, b, beta=0).tolist() == (a @ b).tolist()
    c = rgrad.ones(4, 5, dtype=rgrad.int64)
    r = rgrad.addmm(c, a.to(rgrad.int64), b.to(rgrad.int64), beta=2, alpha=3)
    assert r.dtype == rgrad.int64
    assert r.tolist() == (2 * c + 3 * (a.to(rgrad.int64) @ b.to(rgrad.int64))).tolist()
    # integer products truncate their scales, as torch does
    ints = rgrad.tensor([[1, 2], [3, 4]]), rgrad.tensor([[1, 0], [0, 1]]), rgrad.tensor([10, 20])
    assert rgrad.addmm(ints[2], *ints[:2], beta=0.5).tolist() == [[1, 2], [3, 4]]
    assert rgrad.addmm(ints[2], *ints[:2], alpha=0.5).tolist() == [[10, 20], [10, 20]]
    assert rgrad.addmm(ints[2], *ints[:2], alpha=0.5).dtype == rgrad.int64
    with pytest.raises(NotImplementedError, match="\"addmm_impl_cpu_\" not implemented for 'Bool'"):
        rgrad.addmm(c.bool(), a.bool(), b.bool())


@pytest.mark.parametrize(
    "call, error, message",
    [
        # torch 2.15: gather and index_select take no negative indices (x[idx] does)
        (lambda x: x.gather(1, rgrad.tensor([[-1]])), RuntimeError, "index -1 is out of bounds for dimension 1 with size 4"),
        (lambda x: x.gather(1, rgrad.tensor([[0, 4]])), RuntimeError, "index 4 is out of bounds for dimension 1 with size 4"),
        (lambda x: x.index_select(0, rgrad.tensor([-1])), IndexError, "index out of range in self"),
        (lambda x: x.index_select(0, rgrad.tensor([3])), IndexError, "index out of range in self"),
        (lambda x: x[rgrad.tensor([3])], IndexError, "index 3 is out of bounds for dimension 0 with size 3"),
    ],
)
def test_index_ops_take_the_indices_torch_takes(call, error, message):
    x = rgrad.randn(3, 4)
    with pytest.raises(error, match=message):
        call(x)
    assert x[rgrad.tensor([-1])].tolist() == x[2:].tolist()


@pytest.mark.parametrize(
    "fill",
    [
        lambda x, m, v: x.masked_fill(m, v),
        lambda x, m, v: rgrad.masked_fill(x, m, v),
        lambda x, m, v: x.clone().masked_fill_(m, v),
        lambda x, m, v: x.clone().fill_(v),
    ],
    ids=["masked_fill", "rgrad.masked_fill", "masked_fill_", "fill_"],
)
def test_fill_with_a_0d_tensor_value_gives_the_value_a_gradient(fill):
    # torch 2.15 (MaskedFillBackward1, FillBackward3): d/dvalue = the sum of the
    # gradient over the filled positions; those positions pass nothing to x
    x = rgrad.tensor([1.0, 2.0, 3.0], dtype=rgrad.float64, requires_grad=True)
    v = rgrad.tensor(5.0, dtype=rgrad.float64, requires_grad=True)
    mask = rgrad.tensor([True, False, True])
    y = fill(x, mask, v)
    y.backward(rgrad.tensor([1.0, 10.0, 100.0], dtype=rgrad.float64))
    filled = [True, True, True] if y.tolist() == [5.0, 5.0, 5.0] else [True, False, True]
    assert v.grad.item() == sum(g for g, f in zip([1.0, 10.0, 100.0], filled) if f)
    assert x.grad.tolist() == [0.0 if f else g for g, f in zip([1.0, 10.0, 100.0], filled)]


@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("targets, kwargs", [([-100, -100], {}), ([1, 1], {"ignore_index": 1})])
def test_mean_loss_over_only_ignored_targets_is_nan_with_zero_grad(loss, targets, kwargs):
    # torch 2.15: the mean over no targets is 0/0 = nan, but its kernel writes no gradient
    # for ignored targets, so the gradient is zero (not 0/0)
    x = rgrad.tensor([[0.5, 1.0, 2.0], [1.0, 2.0, 3.0]], dtype=rgrad.float64, requires_grad=True)
    out = getattr(rgrad.nn.functional, loss)(x, rgrad.tensor(targets), **kwargs)
    assert out.item() != out.item()  # nan
    out.backward()
    assert x.grad.tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]


@pytest.mark.parametrize("mode, expected", [("floor", [-2.0, 1.0]), ("trunc", [-1.0, 1.0]), (None, [-1.5, 1.75])])
def test_div_in_place_takes_a_rounding_mode(mode, expected):
    x = rgrad.tensor([-3.0, 3.5], requires_grad=True)
    y = x.clone()
    assert y.div_(2, rounding_mode=mode) is y
    assert y.tolist() == expected
    y.sum().backward()
    assert x.grad.tolist() == ([0.5, 0.5] if mode is None else [0.0, 0.0])  # rounding: zero gradient


def test_div_in_place_rejects_an_unknown_rounding_mode():
    with pytest.raises(RuntimeError, match="div expected rounding_mode to be one of None, 'trunc', or 'floor'"):
        rgrad.ones(2).div_(2, rounding_mode="round")


def test_square_is_pow_2_as_in_torch():
    # torch 2.15: square is pow(2) (PowBackward0), a Tensor method too, and a bool
    # input squares to int64
    x = rgrad.tensor([1.5, -2.0], requires_grad=True)
    for y in (rgrad.square(x), x.square(), x.clone().square_()):
        assert y.grad_fn.name() == "PowBackward0"
        assert y.tolist() == [2.25, 4.0]
    assert rgrad.square(rgrad.tensor([True, False])).dtype == rgrad.int64


# ---- found by the random-program fuzzer (tests/test_fuzz.py, tools/fuzz.py)


@pytest.mark.parametrize(
    "call",
    [
        lambda: rgrad.zeros(4, 0).index_select(0, rgrad.tensor([2])),
        lambda: rgrad.zeros(4, 0)[rgrad.tensor([3, 2, -3])],
        lambda: rgrad.zeros(3, 3).narrow(-1, 0, 0).index_put_((rgrad.tensor([-2]),), rgrad.tensor(1.0), True),
    ],
)
def test_selecting_rows_of_an_empty_tensor_gives_empty_rows(call):
    # these panicked (a slice of an empty buffer) instead of returning empty rows like torch
    out = call()
    assert out.numel() == 0


def test_ops_on_empty_views_past_their_buffer_do_not_panic():
    # an empty slice's offset can lie past the end of an empty buffer; the gather kernel,
    # the tensor-and-number fast path and the in-place fast path sliced there and panicked
    x = rgrad.zeros(2, 0)
    assert x.gather(-1, rgrad.zeros(2, 0, dtype=rgrad.int64)).shape == (2, 0)
    v = rgrad.zeros(1, 3, 0, requires_grad=True)
    w = v[1:]
    (w.pow(-1) * 2).sum().backward()
    assert v.grad.shape == (1, 3, 0)
    e = rgrad.zeros(1, 3, 0)[1:]
    e.add_(1.0)
    e.mul_(rgrad.zeros(0, 3, 0))
    assert (e + 1.5).shape == (0, 3, 0)


def test_gather_treats_0d_input_and_index_as_1d_like_torch():
    # a 0-d input panicked; a 0-d index into a 1-d input raised (torch: ensure_nonempty_dim)
    x = rgrad.tensor(2.5, requires_grad=True)
    y = x.gather(0, rgrad.tensor([0, 0]))
    assert y.tolist() == [2.5, 2.5]
    y.sum().backward()
    assert x.grad.tolist() == 2.0
    assert rgrad.tensor(2.5).gather(-1, rgrad.tensor(0)).shape == ()
    assert rgrad.tensor([1.0, 2.0]).gather(0, rgrad.tensor(1)).tolist() == 2.0
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions"):
        rgrad.zeros(2, 3).gather(0, rgrad.tensor(0))
    with pytest.raises(RuntimeError, match="out of bounds"):
        rgrad.tensor(2.5).gather(0, rgrad.tensor([1]))
    with pytest.raises(IndexError, match="Dimension out of range"):
        rgrad.tensor(2.5).gather(1, rgrad.tensor(0))


def test_linspace_with_one_step_is_start():
    # the symmetric fill gave `end` for steps=1; torch gives `start`
    assert rgrad.linspace(-1, 2, 1).tolist() == [-1.0]
    assert rgrad.linspace(5, -3, 1, dtype=rgrad.int64).tolist() == [5]
    assert rgrad.linspace(-1, 2, 0).tolist() == []
    assert rgrad.linspace(-1, 2, 2).tolist() == [-1.0, 2.0]


def test_several_ellipses_index_like_torch():
    # torch accepts x[..., ...]: each ellipsis skips the dims the other items leave over
    x = rgrad.arange(6.0).reshape(2, 3)
    assert x[..., ...].shape == (2, 3)
    assert x[0, ..., ...].tolist() == [0.0, 1.0, 2.0]
    assert x[..., 0, ...].tolist() == [0.0, 3.0]
    assert x[..., None, ...].shape == (2, 3, 1)
    with pytest.raises(IndexError):
        x[..., ..., 0]  # the second ellipsis skips past the last dim, as in torch


def test_ipow_is_in_place():
    # without __ipow__, Python rebound `x **= y` to a new `x ** y` (new dtype, no leaf check)
    x = rgrad.tensor([1.0, 2.0])
    y = x
    x **= rgrad.tensor(2.0, dtype=rgrad.float64)
    assert y is x and x.dtype == rgrad.float32 and x.tolist() == [1.0, 4.0]
    w = rgrad.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        w **= 2


def test_index_select_on_a_0d_tensor_follows_torch():
    # rgrad returned shape [1] for a 1-d index and accepted several indices
    x = rgrad.tensor(2.5)
    assert x.index_select(0, rgrad.tensor([0])).shape == ()
    assert x.index_select(-1, rgrad.tensor(0)).tolist() == 2.5
    for idx in ([], [0, 0]):
        with pytest.raises(RuntimeError, match="Index to scalar can have only 1 value"):
            x.index_select(0, rgrad.tensor(idx, dtype=rgrad.int64))
    with pytest.raises(IndexError, match="index out of range in self"):
        x.index_select(0, rgrad.tensor([1]))
    assert rgrad.tensor([1.0, 2.0]).index_select(0, rgrad.tensor(1)).shape == (1,)


def test_expand_and_unsqueeze_strides_match_torch():
    # new leading size-1 dims of expand took stride 0, and unsqueeze never gave stride 0;
    # torch's inferExpandGeometry / unsqueeze rules give these
    assert rgrad.zeros(2, 3).expand(1, 1, 2, 3).stride() == (6, 6, 3, 1)
    assert rgrad.zeros(2, 3).expand(4, 1, 2, 3).stride() == (0, 6, 3, 1)
    assert rgrad.zeros(2, 3).t().expand(1, 3, 2).stride() == (3, 1, 3)
    assert rgrad.zeros(3, 1).expand(1, 3, 4).stride() == (3, 1, 0)
    assert rgrad.tensor(1.0).expand(1, 2).stride() == (0, 0)
    assert rgrad.zeros(0, 3).unsqueeze(0).stride() == (0, 3, 1)
    assert rgrad.zeros(3, 1).expand(3, 4).unsqueeze(1).stride() == (1, 0, 0)
    assert rgrad.zeros(2, 3).expand(1, 2, 3).is_contiguous()


@pytest.mark.parametrize("method", ["index_put_", "index_put"])
def test_index_put_requires_values_of_the_same_dtype(method):
    # rgrad cast the values silently; torch refuses, also for x[int_tensor] = v (numbers and
    # basic indexing still cast)
    x = rgrad.zeros(3)
    values = (rgrad.tensor(1), "Long"), (rgrad.tensor(1.0, dtype=rgrad.float64), "Double"), (rgrad.tensor(True), "Bool")
    for v, name in values:
        with pytest.raises(RuntimeError, match=f"got Float for the destination and {name} for the source"):
            getattr(x, method)((rgrad.tensor([0]),), v, accumulate=True)
    with pytest.raises(RuntimeError, match="got Float for the destination and Long for the source"):
        x[rgrad.tensor([0])] = rgrad.tensor(2)
    x[rgrad.tensor([0])] = 2
    x[rgrad.tensor([False, False, True])] = rgrad.tensor([4], dtype=rgrad.int64)  # masked_fill_ casts
    assert x[2].tolist() == 4.0
    with pytest.raises(RuntimeError, match="got Float for the destination and Long for the source"):
        x[rgrad.tensor([True, False, True])] = rgrad.tensor([4, 5])
    x[1] = rgrad.tensor(3)
    assert x.tolist() == [2.0, 3.0, 4.0]


def test_view_results_are_leaves_or_not_as_in_torch():
    # expand/expand_as to the same shape returned the input itself (a leaf), flatten over one
    # dim returned a new view (not a leaf), and x[...] on a 0-d tensor lost requires_grad
    x = rgrad.zeros(2, 3, requires_grad=True)
    assert not x.expand(2, 3).is_leaf and x.expand(2, -1).grad_fn is not None
    assert not x.expand_as(x).is_leaf
    assert x.flatten(1, 1).is_leaf and x.flatten(-1, 1).is_leaf
    assert not x.flatten(0, 1).is_leaf
    z = rgrad.tensor(1.0, requires_grad=True)
    w = z[...]
    assert w.requires_grad and not w.is_leaf and w is not z
    (w * 3).backward()
    assert z.grad.tolist() == 3.0


def test_chunk_of_an_empty_dim_gives_chunks_empty_pieces():
    # torch returns `chunks` pieces (split_with_sizes); rgrad returned one
    parts = rgrad.zeros(0, 2).chunk(3, 0)
    assert len(parts) == 3 and all(p.shape == (0, 2) for p in parts)
    assert len(rgrad.zeros(5).chunk(3)) == 3 and len(rgrad.zeros(4).chunk(3)) == 2


def test_setitem_strips_the_values_leading_unit_dims():
    # torch drops leading size-1 dims of the value (slicePrefix1sDims) before broadcasting
    x = rgrad.zeros(3)
    x[1] = rgrad.tensor([[5.0]])
    assert x.tolist() == [0.0, 5.0, 0.0]
    x[rgrad.tensor([0, 2])] = rgrad.tensor([[1.0, 2.0]])
    assert x.tolist() == [1.0, 5.0, 2.0]
    y = rgrad.zeros(2, 2)
    y[0] = rgrad.tensor([[[7.0, 8.0]]])
    assert y.tolist() == [[7.0, 8.0], [0.0, 0.0]]
    with pytest.raises(RuntimeError):
        x[0] = rgrad.tensor([1.0, 2.0])


@pytest.mark.parametrize(
    "mat, vec, error, message",
    [
        ((1, 4, 1), (1,), RuntimeError, "vector \\+ matrix @ vector expected, got 1, 3, 1"),
        ((3,), (3,), RuntimeError, "vector \\+ matrix @ vector expected, got 1, 1, 1"),
        ((2, 3), (2, 3), RuntimeError, "vector \\+ matrix @ vector expected, got 1, 2, 2"),
        ((), (1,), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
    ],
)
def test_mv_takes_only_a_matrix_and_a_vector(mat, vec, error, message):
    # mv went straight to matmul, which also takes batched and 1-D operands
    with pytest.raises(error, match=message):
        rgrad.zeros(mat).mv(rgrad.zeros(vec))
    with pytest.raises(error, match=message):
        rgrad.mv(rgrad.zeros(mat), rgrad.zeros(vec))
    assert rgrad.ones(2, 3).mv(rgrad.ones(3)).tolist() == [3.0, 3.0]


def test_stack_of_mixed_dtypes_gives_each_input_a_gradient_of_its_own_dtype():
    # the promoted (float64) gradient went back to the float32 input unconverted
    a = rgrad.tensor([1.0, 2.0], requires_grad=True)
    b = rgrad.tensor([3.0, 4.0], dtype=rgrad.float64, requires_grad=True)
    s = rgrad.stack([a, b], -1)
    assert s.dtype == rgrad.float64
    (s * rgrad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=rgrad.float64)).sum().backward()
    assert a.grad.dtype == rgrad.float32 and a.grad.tolist() == [1.0, 3.0]
    assert b.grad.dtype == rgrad.float64 and b.grad.tolist() == [2.0, 4.0]


def test_sign_of_nan_and_zeros_is_positive_zero():
    # torch computes (0 < x) - (x < 0): +0 for NaN and both zeros; rgrad kept NaN and -0.0
    x = rgrad.tensor([float("nan")] * 20 + [-0.0, 0.0, 2.0, -3.0])
    assert x.sign().tolist() == [0.0] * 22 + [1.0, -1.0]
    assert x.double().sign().tolist() == [0.0] * 22 + [1.0, -1.0]
    assert x[0].sign().tolist() == 0.0
    assert str(x[20:22].sign()) == "tensor([0., 0.])"
    y = x.clone()
    y.sign_()
    assert y.tolist() == [0.0] * 22 + [1.0, -1.0]


def test_integer_pow_by_negative_tensor_exponents_follows_torch():
    # 1 and -1 keep their magnitude under negative exponents; rgrad gave 0 for all bases
    base = rgrad.tensor([1, -1, -1, 2, 0, -3])
    exp = rgrad.tensor([-3, -3, -2, -1, -1, -2])
    assert base.pow(exp).tolist() == [1, -1, 1, 0, 0, 0]
    assert rgrad.tensor([True, False]).pow(rgrad.tensor([-3, -3])).tolist() == [1, 0]


def test_maximum_and_minimum_gradients_with_nan_and_ties_follow_torch():
    # derivatives.yaml: where(a == b, g / 2, g) masked where a side loses; a NaN makes no
    # side lose, so both get the whole gradient (rgrad gave the NaN side 0)
    nan, inf = float("nan"), float("inf")
    for op in (rgrad.maximum, rgrad.minimum):
        a = rgrad.tensor([nan, 1.0, 2.0, -inf, 3.0], requires_grad=True)
        b = rgrad.tensor([1.0, nan, 2.0, -inf, nan], requires_grad=True)
        op(a, b).sum().backward()
        assert a.grad.tolist() == [1.0, 1.0, 0.5, 0.5, 1.0]
        assert b.grad.tolist() == [1.0, 1.0, 0.5, 0.5, 1.0]
    a = rgrad.tensor([1.0, 5.0], requires_grad=True)
    b = rgrad.tensor([3.0], requires_grad=True)
    rgrad.maximum(a, b).sum().backward()
    assert a.grad.tolist() == [0.0, 1.0] and b.grad.tolist() == [1.0]


def test_square_is_pow_2():
    # square was x * x: a bool tensor stayed bool; torch computes pow(x, 2), giving int64
    assert rgrad.square(rgrad.tensor([True, False])).dtype == rgrad.int64
    assert rgrad.square(rgrad.tensor([3])).tolist() == [9]
    x = rgrad.tensor([3.0], requires_grad=True)
    rgrad.square(x).backward(rgrad.tensor([1.0]))
    assert x.grad.tolist() == [6.0]


def test_reducing_an_empty_view_past_its_buffer_does_not_panic():
    # the row-sum fast path sliced the empty buffer at the view's offset
    v = rgrad.zeros(2, 3, 0).chunk(3, -2)[2]
    assert v.sum().tolist() == 0.0
    assert v.sum(-1).shape == (2, 1)


def test_relu_passes_the_gradient_at_nan_as_torch():
    # threshold_backward masks where y <= 0, so NaN lets the gradient through ([y > 0] did not)
    x = rgrad.tensor([float("nan"), -1.0, 0.0, 2.0], requires_grad=True)
    x.relu().backward(rgrad.tensor([1.0, 1.0, 1.0, 1.0]))
    assert x.grad.tolist() == [1.0, 0.0, 0.0, 1.0]


def test_index_select_checks_the_dim_before_the_index_count():
    with pytest.raises(IndexError, match="Dimension out of range"):
        rgrad.tensor(1).index_select(3, rgrad.tensor([0, 0, 0]))


def test_integer_addmm_adds_its_bias():
    # the integer GEMM zeroed its output, dropping the bias it was to accumulate onto
    a, b = rgrad.tensor([[1, 2]]), rgrad.tensor([[3], [4]])
    assert rgrad.addmm(rgrad.tensor([5]), a, b).tolist() == [[16]]
    assert rgrad.addmm(rgrad.tensor([2**40]), a, b).tolist() == [[2**40 + 11]]
    eye = rgrad.eye(2, dtype=rgrad.int64)
    assert rgrad.addmm(rgrad.tensor([[1, 1], [1, 1]]), eye, eye).tolist() == [[2, 1], [1, 2]]


def test_integer_pow_with_a_huge_exponent_wraps_like_torch():
    # the exponent was clipped to u32::MAX; torch squares and multiplies over all 64 bits
    assert rgrad.tensor([3]).pow(rgrad.tensor([2**40 + 1])).tolist() == [-5135550532504518653]
    assert rgrad.tensor([3]).pow(rgrad.tensor([63])).tolist() == [-3237885987332494933]


def test_one_bool_mask_with_a_one_element_value_takes_the_masked_fill_path():
    # torch's index_put_ sends a single bool mask (after basic indexing), a one-element value
    # and accumulate=False to masked_fill_, which casts the value
    x = rgrad.tensor([False, False, False])
    x[rgrad.tensor([False, True, True]),] = rgrad.tensor(3.25)
    assert x.tolist() == [False, True, True]
    y = rgrad.zeros(2, 2, dtype=rgrad.float64)
    y[rgrad.tensor([True, False]), ...] = rgrad.tensor([1.0])
    assert y.tolist() == [[1.0, 1.0], [0.0, 0.0]]
    z = rgrad.zeros(3, dtype=rgrad.float64)
    z.index_put_((rgrad.tensor([True, False, True]),), rgrad.tensor([2.0]))
    assert z.tolist() == [2.0, 0.0, 2.0]
    with pytest.raises(RuntimeError, match="got Double for the destination and Float for the source"):
        z.index_put_((rgrad.tensor([True, False, True]),), rgrad.tensor([2.0]), accumulate=True)


def test_reducing_empty_views_over_a_dim_does_not_panic():
    # the contiguous-block fold and the fused softmax sliced the buffer at an empty view's
    # offset, which can lie past its end
    v = rgrad.zeros(4, 2, 0).split(1, 1)[-1]
    assert v.sum(1).shape == (4, 0)
    assert rgrad.zeros(3, 4, 0)[1].mean(-2, keepdim=True).shape == (1, 0)
    w = rgrad.arange(18.0).reshape(2, 3, 3)[::2][1:2, 2]
    assert w.shape == (0, 3)
    assert w.amax(-1, keepdim=True).shape == (0, 1)
    assert w.softmax(-1).shape == (0, 3)


def test_clamp_with_number_bounds_gives_no_gradient_on_a_bound():
    # torch 2.15: the gradient passes where min < x < max (rgrad let it through on a bound)
    x = rgrad.tensor([0.0, 1.0, 0.5, 2.0, -1.0, float("inf"), float("nan")], requires_grad=True)
    x.clamp(min=0, max=1).backward(rgrad.ones(7))
    assert x.grad.tolist() == [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    y = rgrad.tensor([0.0, 1.0, -1.0], requires_grad=True)
    y.clamp(min=0).backward(rgrad.ones(3))
    assert y.grad.tolist() == [0.0, 1.0, 0.0]
    z = rgrad.tensor([0.0, 1.0, 2.0], requires_grad=True)
    z.clamp(max=1).backward(rgrad.ones(3))
    assert z.grad.tolist() == [1.0, 0.0, 0.0]


def test_relu_and_clamp_backward_select_rather_than_multiply():
    # torch's threshold_backward and clamp_backward are selects: an infinite incoming
    # gradient where the mask is off gives 0 (g * 0 gave NaN)
    x = rgrad.tensor([-4.0, 0.5, 3.0], dtype=rgrad.float64, requires_grad=True)
    x.clamp(min=0, max=2.0).reciprocal().sum().backward()
    assert x.grad.tolist() == [0.0, -4.0, 0.0]
    y = rgrad.tensor([-1.0, 2.0], requires_grad=True)
    y.relu().reciprocal().sum().backward()
    assert y.grad.tolist() == [0.0, -0.25]


def test_pow_by_a_zero_tensor_exponent_has_zero_gradient_at_a_zero_base():
    # torch: where(b == 0, 0, g * b * a^(b - 1)); rgrad computed 0 * inf = NaN at a = 0
    a = rgrad.tensor([-0.0, 0.0, 2.0, 0.0], dtype=rgrad.float64, requires_grad=True)
    b = rgrad.tensor([0, 0, 0, 2])
    a.pow(b).sum().backward()
    assert a.grad.tolist() == [0.0, 0.0, 0.0, 0.0]


def test_in_place_sub_of_a_bool_number_is_rejected_like_the_out_of_place_one():
    # the float in-place fast path skipped the bool check that x - False makes
    x = rgrad.tensor([1.5])
    with pytest.raises(NotImplementedError, match="Subtraction, the `-` operator, with a bool tensor"):
        x.sub_(False)
    with pytest.raises(NotImplementedError, match="Subtraction, the `-` operator, with a bool tensor"):
        x -= True
    assert x.tolist() == [1.5]


# ---- found by the 100,000-case fuzz run on the merged tree (issue 13); each checked on torch too


@pytest.fixture(params=["rgrad", "torch"])
def lib(request):
    return rgrad if request.param == "rgrad" else pytest.importorskip("torch")


def test_std_backward_is_zero_where_the_std_is_zero(lib):
    # torch's std_backward masks 1/(2 std) where std == 0: equal values give 0, not 0/0
    x = lib.tensor([[1.5, 1.5], [1.0, 3.0]], dtype=lib.float64, requires_grad=True)
    x.std(1).sum().backward()
    # row 1: d std/dx = (x - mean) / ((N - 1) std) = [-1, 1] / (1 * sqrt(2))
    assert x.grad[0].tolist() == [0.0, 0.0]
    assert x.grad[1].tolist() == pytest.approx([-(0.5**0.5), 0.5**0.5])


def test_bool_to_the_power_false_is_true(lib):
    x = lib.tensor([True, False])
    assert x.pow(False).tolist() == [True, True]
    assert x.pow(True).tolist() == [True, False]


def test_alpha_is_checked_against_the_result_dtype(lib):
    with pytest.raises(RuntimeError, match=r"^For integral input tensors, argument alpha must not be a floating"):
        lib.tensor([1]).add(1, alpha=0.5)
    with pytest.raises(RuntimeError, match=r"^Boolean alpha only supported for Boolean results\.$"):
        lib.tensor([1.0]).add(1, alpha=True)
    assert lib.tensor([True]).add(lib.tensor([True]), alpha=2).tolist() == [True]
    assert lib.tensor([True]).add(lib.tensor([False]), alpha=0).tolist() == [True]


def test_clamp_with_tensor_bounds_splits_the_gradient_on_a_tie(lib):
    x = lib.tensor([0.0, 1.0, 2.0, 3.0], requires_grad=True)
    lo = lib.tensor([1.0, 1.0, 1.0, 1.0], requires_grad=True)
    hi = lib.tensor([2.0, 2.0, 2.0, 2.0], requires_grad=True)
    lib.clamp(x, lo, hi).sum().backward()
    assert x.grad.tolist() == [0.0, 0.5, 0.5, 0.0]
    assert lo.grad.tolist() == [1.0, 0.5, 0.0, 0.0]
    assert hi.grad.tolist() == [0.0, 0.0, 0.5, 1.0]


OVERLAP = r"^unsupported operation: more than one element of the written-to tensor refers to a single memory location"


@pytest.mark.parametrize(
    "write",
    [
        lambda t, lib: t.add_(1),
        lambda t, lib: t.mul_(2),
        lambda t, lib: t.exp_(),
        lambda t, lib: t.clamp_(0, 1),
        lambda t, lib: t.copy_(lib.ones(3)),
    ],
    ids=["add_", "mul_", "exp_", "clamp_", "copy_"],
)
def test_in_place_arithmetic_on_an_expanded_tensor_is_refused(lib, write):
    with pytest.raises(RuntimeError, match=OVERLAP):
        write(lib.zeros(1).expand(3), lib)


def test_fill_and_indexed_writes_on_an_expanded_tensor_are_allowed(lib):
    assert lib.zeros(1).expand(3).fill_(1).tolist() == [1.0, 1.0, 1.0]
    assert lib.zeros(1).expand(3).zero_().tolist() == [0.0, 0.0, 0.0]
    assert lib.zeros(1, 2).expand(3, 2)[0].add_(1).tolist() == [1.0, 1.0]  # a row has no overlap
    assert lib.zeros(2).expand(0, 2).add_(1).shape == (0, 2)
    assert lib.zeros(0, 2).expand(3, 0, 2).sub_(1).shape == (3, 0, 2)  # empty: nothing shared


def test_shapes_that_do_not_broadcast_are_found_before_a_missing_bool_kernel(lib):
    a, b = lib.tensor([True, False]), lib.tensor([True, False, True])
    for f in (lambda: a.pow(b), lambda: a.fmod(b)):
        with pytest.raises(RuntimeError, match=r"^The size of tensor a \(2\) must match the size of tensor b \(3\)"):
            f()


def test_a_loser_of_maximum_gets_zero_even_where_the_gradient_is_nan(lib):
    # torch masks the loser's gradient with masked_fill, so a NaN gradient does not leak
    a = lib.tensor([-2.5], dtype=lib.float64, requires_grad=True)
    b = lib.tensor([1.0], dtype=lib.float64, requires_grad=True)
    m = a.minimum(b)
    (m.sqrt() * 1).sum().backward()  # sqrt(-2.5): the gradient flowing into m is NaN
    assert b.grad.tolist() == [0.0]
    assert a.grad.isnan().tolist() == [True]


def test_view_strides_follow_torchs_stride_computation(lib):
    # (3, 1) with strides (1, 3) is contiguous, but torch computes the view's strides from
    # the actual strides: size-1 dims get 3, not 1
    v = lib.tensor([[1.0, 2.0, 3.0]]).transpose(-1, -2)
    assert v.stride() == (1, 3)
    assert v.view(3, 1, 1).stride() == (1, 3, 3)
    assert lib.tensor([[1.0, 2.0, 3.0]]).view(3, 1, 1).stride() == (1, 1, 1)
    e = lib.zeros(0, 2).t()
    assert e.view(2, 0).stride() == e.stride()


def test_setting_a_number_into_an_expanded_tensor_fills_it(lib):
    # torch's setitem: a 0-d value is a fill_, which may write an expanded tensor
    v = lib.tensor(True).expand(1, 2)
    v[0] = 2
    assert v.tolist() == [[True, True]]
    with pytest.raises(RuntimeError, match=OVERLAP):
        lib.zeros(1).expand(1, 2)[0] = lib.ones(2)


def test_an_empty_tensor_is_contiguous_whatever_its_strides(lib):
    e = lib.zeros(2, 3, 4).transpose(-1, -2).narrow(0, 1, 0)
    assert e.is_contiguous()
    assert e.contiguous().stride() == e.stride()


def test_in_place_pow_finds_the_output_shape_before_the_bool_kernel(lib):
    with pytest.raises(RuntimeError, match=r"^output with shape \[2\] doesn't match the broadcast shape \[2, 2\]$"):
        lib.tensor([True, False]).pow_(lib.tensor([[True, False], [False, True]]))


def test_nan_and_out_of_range_floats_cast_to_int64_min_as_torch_on_x86(lib):
    x = lib.tensor([float("nan"), float("inf"), -float("inf"), 1e30, -1e30, 2.7, -2.7])
    assert x.to(lib.int64).tolist() == [-(2**63)] * 5 + [2, -2]
    assert x.double().long().tolist() == [-(2**63)] * 5 + [2, -2]
