"""In-place ops and views: a view's history follows its base (torch regenerates a view's
grad_fn when the base's version moves), and prod's derivatives at zeros."""

import pytest

import rgrad


def test_view_taken_before_inplace_on_base_sees_new_history():
    x = rgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x.clone()
    b = y[0]
    y.mul_(3)
    assert b.tolist() == [3.0, 6.0]
    b.sum().backward()
    # b = 3·x[0]  =>  d sum(b)/dx = [[3, 3], [0, 0]]
    assert x.grad.tolist() == [[3.0, 3.0], [0.0, 0.0]]


def test_sibling_view_sees_inplace_through_another_view():
    x = rgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x.clone()
    a, b = y[0], y[0]
    a.mul_(2)
    assert b.tolist() == [2.0, 4.0]
    b.sum().backward()
    assert x.grad.tolist() == [[2.0, 2.0], [0.0, 0.0]]


def test_view_of_tensor_that_gains_history_in_place_requires_grad():
    w = rgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = rgrad.zeros(3)
    v = y[1:]
    y.add_(w)  # y now depends on w
    assert v.requires_grad
    v.sum().backward()
    assert w.grad.tolist() == [0.0, 1.0, 1.0]


def test_prod_gradients_with_zeros_are_exact_to_second_order():
    x = rgrad.tensor([2.0, 0.0, 3.0], dtype=rgrad.float64, requires_grad=True)
    (g,) = rgrad.autograd.grad(x.prod(), x, create_graph=True)
    # d/dx_i Πx = Π_{j≠i} x_j = [0, 6, 0]
    assert g.tolist() == [0.0, 6.0, 0.0]
    # Hessian of x0·x1·x2: H[i][j] = x_k (the third one) off the diagonal
    rows = [rgrad.autograd.grad(g[i], x, retain_graph=True)[0].tolist() for i in range(3)]
    assert rows == [[0.0, 3.0, 0.0], [3.0, 0.0, 2.0], [0.0, 2.0, 0.0]]


@pytest.mark.parametrize("values", [[2.0, 0.0, 0.0, 5.0], [0.0, 0.0, 0.0, 1.0], [1.5, -2.0, 0.5, 4.0]])
def test_prod_along_dim_gradient_matches_exclusive_product(values):
    x = rgrad.tensor([values, values[::-1]], dtype=rgrad.float64, requires_grad=True)
    x.prod(1).sum().backward()
    for row, grad_row in zip([values, values[::-1]], x.grad.tolist()):
        for i, gi in enumerate(grad_row):
            expected = 1.0
            for j, v in enumerate(row):
                if j != i:
                    expected *= v
            assert gi == pytest.approx(expected)


def test_writes_through_data_bypass_the_version_check_as_in_torch():
    x = rgrad.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()  # saves x
    x.data.mul_(2)  # .data has its own version counter
    assert x._version == 0
    y.backward()
    # the saved x now reads [2, 4]: d(Σx²)/dx = 2x = [4, 8]
    assert x.grad.tolist() == [4.0, 8.0]


def test_writes_through_detach_are_caught_by_the_version_check():
    x = rgrad.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    x.detach().mul_(2)  # detach() shares the version counter
    assert x._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


@pytest.mark.parametrize("make_view", [
    lambda t: t.t(),
    lambda t: t[:1],
    lambda t: t.squeeze(1),
    lambda t: t.t()[:, 1:],
])
def test_views_of_a_base_with_gaps_follow_an_in_place_write(make_view):
    """A view of a strided tensor with gaps (a detached `x[::2]`, found by the fuzzer):
    when the base is written in place with an operand that requires grad, the view
    re-derives its history from the base (torch's AsStrided over the base's geometry;
    rgrad picks the base's elements by index). Before, the view was left as a leaf that
    required grad, and backward() through it gave the operand no gradient."""
    def run(lib):
        v0 = lib.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], dtype=lib.float64).reshape(6, 1)[::2].requires_grad_()
        base = v0.detach()
        view = make_view(base)
        w = lib.tensor([0.75], dtype=lib.float64, requires_grad=True)
        base.mul_(w)
        out = (view * lib.arange(1, view.numel() + 1, dtype=lib.float64).reshape(view.shape)).sum()
        out.backward()
        return view.is_leaf, view.requires_grad, view.tolist(), w.grad.tolist(), v0.grad

    is_leaf, requires_grad, values, w_grad, v0_grad = run(rgrad)
    assert (is_leaf, requires_grad) == (False, True)
    assert v0_grad is None  # the detached base's history does not reach v0
    torch = pytest.importorskip("torch")
    assert (is_leaf, requires_grad, values, w_grad, v0_grad) == run(torch)


def test_views_of_a_base_with_gaps_match_torch_to_second_order():
    """The re-derived history is differentiable (gradgradcheck through the picked
    elements), in float64 against finite differences."""
    def f(w):
        v0 = rgrad.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], dtype=rgrad.float64).reshape(3, 2)[:, ::2]
        base = v0.detach()
        view = base.t()
        base.mul_(w * w)
        return view * view
    w = rgrad.tensor([0.75, -1.25, 2.0], dtype=rgrad.float64).reshape(3, 1).requires_grad_()
    assert rgrad.autograd.gradcheck(f, (w,))
    assert rgrad.autograd.gradgradcheck(f, (w,))


@pytest.mark.parametrize("write", [
    lambda view, w: view.mul_(w),
    lambda view, w: view.copy_(w.expand(view.shape)),
    lambda view, w: view.__setitem__(0, w[0]),
    lambda view, w: view.add_(w * 2),
])
def test_in_place_writes_through_a_view_of_a_base_with_gaps_match_torch(write):
    """Writing in place *through* a view of a base with gaps (a detached `x[::2]`, found by
    the fuzzer; it was refused with "not supported"): the base gets a CopySlices node over
    the base elements the view covers, and the base, the view and a sibling view carry the
    gradients torch gives, to the written value and through the rest of the base."""
    def run(lib):
        src = lib.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], dtype=lib.float64, requires_grad=True)
        v0 = (src * 1).reshape(4, 2)[::2]  # a base with gaps, with history
        view = v0.t()[1:]  # its second column
        sibling = v0[:, :1]
        w = lib.tensor([0.5, -1.5], dtype=lib.float64, requires_grad=True)
        write(view, w)
        weights = lib.arange(1, v0.numel() + 1, dtype=lib.float64).reshape(v0.shape)
        out = (v0 * weights).sum() + (view * 3).sum() + (sibling ** 2).sum()
        out.backward()
        return (v0.tolist(), view.tolist(), type(v0.grad_fn).__name__, src.grad.tolist(),
                None if w.grad is None else w.grad.tolist())

    ours = run(rgrad)
    torch = pytest.importorskip("torch")
    assert ours == run(torch)


def test_in_place_through_a_view_of_a_base_with_gaps_second_order():
    def f(src, w):
        v0 = (src * src).reshape(4, 2)[::2]
        view = v0[:, 1]
        view.mul_(w * w)
        return v0 * v0
    src = rgrad.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], dtype=rgrad.float64, requires_grad=True)
    w = rgrad.tensor([0.5, -1.5], dtype=rgrad.float64, requires_grad=True)
    assert rgrad.autograd.gradcheck(f, (src, w))
    assert rgrad.autograd.gradgradcheck(f, (src, w))
