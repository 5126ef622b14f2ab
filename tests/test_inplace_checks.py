"""The seeds' "In-place correctness checks": version counters, the saved-tensor check,
leaves, and in-place ops through views (CopySlices).

Version numbers and messages are torch's (`test_versions_match_torch` re-checks them
when torch is installed).
"""

from __future__ import annotations

import pytest

import rgrad

INPLACE_OPS = {
    "add_": lambda t: t.add_(1),
    "sub_": lambda t: t.sub_(1),
    "mul_": lambda t: t.mul_(2),
    "div_": lambda t: t.div_(2),
    "pow_": lambda t: t.pow_(2),
    "clamp_": lambda t: t.clamp_(min=0),
    "relu_": lambda t: t.relu_(),
    "exp_": lambda t: t.exp_(),
    "fill_": lambda t: t.fill_(3),
    "zero_": lambda t: t.zero_(),
    "copy_": lambda t: t.copy_(rgrad.ones(3)),
    "setitem_int": lambda t: t.__setitem__(0, 5.0),
    "setitem_slice": lambda t: t.__setitem__(slice(1, None), 5.0),
    "setitem_mask": lambda t: t.__setitem__(t > 1, 0.0),
    "setitem_tensor": lambda t: t.__setitem__(rgrad.tensor([0, 1]), rgrad.tensor([7.0, 8.0])),
    "index_put_": lambda t: t.index_put_((rgrad.tensor([1]),), rgrad.tensor([9.0])),
    "masked_fill_": lambda t: t.masked_fill_(t > 1, 0.0),
    "iadd": lambda t: t.__iadd__(1),
    "imul": lambda t: t.__imul__(2),
}


@pytest.mark.parametrize("name", sorted(INPLACE_OPS))
def test_every_inplace_op_bumps_the_shared_version_counter(name):
    x = rgrad.tensor([1.0, 2.0, 3.0])
    view = x[1:]
    other_view = x.view(3, 1)
    det = x.detach()
    assert x._version == view._version == other_view._version == det._version == 0
    INPLACE_OPS[name](x)
    assert x._version == view._version == other_view._version == det._version == 1
    INPLACE_OPS[name](view if name != "copy_" else other_view.view(3))
    assert x._version == view._version == det._version == 2


def test_data_has_its_own_version_counter():
    x = rgrad.tensor([1.0, 2.0])
    d = x.data
    d.add_(1)
    assert d._version == 1 and x._version == 0
    assert x.tolist() == [2.0, 3.0]  # same storage


def test_set_data_keeps_the_version_counter_shared_with_old_views():
    # torch's set_data keeps the tensor's counter: its old views and detached aliases
    # go on sharing it, new views share it too, and `.data` still splits off its own.
    x = rgrad.ones(3)
    view, det = x[1:], x.detach()
    x.add_(1)
    x.data = rgrad.zeros(3)
    assert x._version == view._version == det._version == 1
    x.add_(1)
    assert x._version == view._version == det._version == 2
    view.mul_(2)
    new_view = x[:2]
    assert x._version == new_view._version == 3
    new_view.add_(1)
    assert x._version == view._version == 4
    d = x.data
    d.add_(1)
    assert d._version == 1 and x._version == 4
    assert x.tolist() == [3.0, 3.0, 2.0] and view.tolist() == [4.0, 4.0]


def test_out_of_place_ops_do_not_bump():
    x = rgrad.tensor([1.0, 2.0])
    _ = x + 1, x.exp(), x[0], x.view(2, 1), x.clone()
    assert x._version == 0


def test_modified_saved_output_is_detected_with_torchs_message():
    x = rgrad.ones(3, requires_grad=True)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError) as e:
        y.sum().backward()
    assert str(e.value).startswith(
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
        "[rgrad.FloatTensor [3]], which is output 0 of Exp, is at version 1; expected version 0 instead. "
        "Hint: "
    )


def test_saved_output_shares_the_counter_across_set_data():
    # A saved output is kept by its storage alone (no alias record); after `y.data = z`
    # it must still see y's in-place ops (the counter moved with y) and otherwise unpack
    # the values it saved, as torch does.
    x = rgrad.tensor([0.5, 1.0], requires_grad=True)
    y = x.exp()
    y.data = rgrad.zeros(2)
    y.add_(1)
    with pytest.raises(RuntimeError, match=r"which is output 0 of Exp, is at version 1; expected version 0"):
        y.sum().backward()
    x = rgrad.tensor([0.5, 1.0], requires_grad=True)
    y = x.exp()
    y.data = rgrad.zeros(2)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert x.grad.tolist() == pytest.approx([2 * 1.6487213, 2 * 2.7182818])


def test_modified_saved_input_is_detected():
    x = rgrad.ones(2, 3, requires_grad=True)
    w = x * 1
    y = w * w
    w[0, 0] = 2.0  # through setitem
    with pytest.raises(RuntimeError) as e:
        y.sum().backward()
    assert (
        "[rgrad.FloatTensor [2, 3]], which is output 0 of torch::autograd::CopySlices, is at version 1; expected version 0 instead."
        in str(e.value)
    )
    # a double tensor is named DoubleTensor
    z = rgrad.ones(2, dtype=rgrad.float64, requires_grad=True)
    s = z.sigmoid()
    s.mul_(2)
    with pytest.raises(RuntimeError, match=r"\[rgrad.DoubleTensor \[2\]\], which is output 0 of Sigmoid"):
        s.sum().backward()


def test_unmodified_tensors_pass_the_check_and_ops_that_save_nothing_dont_care():
    x = rgrad.ones(3, requires_grad=True)
    y = x * 2  # saves nothing of x (the other operand is a number)
    x_copy = y.clone()
    z = y + 1
    y.mul_(3)  # fine: AddBackward0 saves nothing
    z.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0] and x_copy.tolist() == [2.0, 2.0, 2.0]


def test_leaf_requiring_grad_cannot_be_modified_in_place_except_under_no_grad():
    w = rgrad.ones(3, requires_grad=True)
    for op in (lambda: w.add_(1), lambda: w.copy_(rgrad.zeros(3)), lambda: w.index_put_((rgrad.tensor([0]),), w[:1])):
        with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used in an in-place operation.$"):
            op()
    # indexing gives a view first, as in torch
    for op in (lambda: w[1:].mul_(2), lambda: w.__setitem__(0, 2.0)):
        with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad is being used in an in-place"):
            op()
    assert w._version == 0
    # how an optimiser updates parameters
    (w * w).sum().backward()
    with rgrad.no_grad():
        w -= 0.1 * w.grad
    assert w.tolist() == pytest.approx([0.8, 0.8, 0.8]) and w._version == 1 and w.is_leaf and w.requires_grad


def test_inplace_on_views_rebases_history_copyslices():
    x = rgrad.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x * 1
    y[1:] *= 2
    assert y.grad_fn.name() == "torch::autograd::CopySlices"
    (y * y).sum().backward()
    # y = [x0, 2x1, 2x2, 2x3] -> d/dx sum(y^2) = [2x0, 8x1, 8x2, 8x3]
    assert x.grad.tolist() == [2.0, 16.0, 24.0, 32.0]


def test_inplace_on_view_with_history_from_another_tensor():
    x = rgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = rgrad.tensor([10.0], requires_grad=True)
    y = x * 1
    y[0:1].copy_(a * a)
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 1.0] and a.grad.tolist() == [20.0]


def test_versions_match_torch():
    torch = pytest.importorskip("torch")

    def versions(T):
        out = []
        x = T.tensor([1.0, 2.0, 3.0])
        v = x[1:]
        x.add_(1)
        out.append((x._version, v._version))
        v.mul_(2)
        x[0] = 1.0
        out.append((x._version, v._version))
        d = x.data
        d.zero_()
        out.append((x._version, d._version))
        return out

    assert versions(rgrad) == versions(torch)


def test_inplace_arithmetic_without_history_matches_out_of_place():
    # the optimiser path (grad mode off) writes straight into storage: same values and
    # version bumps as the general path, and aliasing / promotion still handled
    rgrad.manual_seed(0)
    p = rgrad.randn(300, 200)
    g = rgrad.randn(300, 200)
    expected = (p - 0.01 * g).tolist()
    with rgrad.no_grad():
        p -= 0.01 * g
    assert p.tolist() == expected and p._version == 1
    x = rgrad.tensor([1.0, 2.0])
    x.add_(x)  # aliasing: general path
    x.mul_(rgrad.tensor([0.5, 0.25], dtype=rgrad.float64))  # promotion: general path
    x.div_(2)
    x.sub_(rgrad.tensor([1.0, 1.0]))
    assert x.tolist() == [-0.5, -0.5] and x._version == 4
    w = rgrad.ones(3, 4).t()  # non-contiguous destination: general path
    w.add_(1.0)
    assert w.tolist() == [[2.0] * 3] * 4


def test_concurrent_inplace_updates_in_opposite_directions_do_not_deadlock():
    import threading

    a, b = rgrad.ones(200_000), rgrad.ones(200_000)

    def run(x, y):
        for _ in range(200):
            x.add_(y)
            x.mul_(0.5)

    ts = [threading.Thread(target=run, args=(a, b)), threading.Thread(target=run, args=(b, a))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in ts)
    assert a._version == b._version == 400


def test_modified_saved_input_without_history_has_no_comma_in_torchs_message():
    # (torch: "[torch.DoubleTensor [2]] is at version 1"; with history the clause
    # ", which is output 0 of Add," carries its own commas)
    b = rgrad.tensor([0.5, 3.0], dtype=rgrad.float64)
    x = rgrad.tensor([1.5, 2.0], dtype=rgrad.float64, requires_grad=True)
    y = x * b
    b.add_(1)
    with pytest.raises(RuntimeError) as e:
        y.sum().backward()
    assert "[rgrad.DoubleTensor [2]] is at version 1; expected version 0 instead." in str(e.value)


@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_rounded_div_saves_what_torchs_formulas_name(mode):
    # div(a, b, rounding_mode=...) has a zero gradient, but torch's formulas name b (a's)
    # and a and b (b's): a b that needs a gradient and is then changed in place fails
    # backward; an a changed while only a needs one does not (fuzz seed 9606)
    def run(lib, needs):
        a = lib.tensor([1.5, 2.5], requires_grad=needs == "a") * 1
        b = lib.tensor([0.7, 0.9], requires_grad=needs == "b") * 1
        y = a.div(b, rounding_mode=mode)
        (b if needs == "b" else a).mul_(2)
        try:
            y.sum().backward()
            return "ok"
        except RuntimeError as e:
            return "modified by an inplace operation" in str(e)

    assert run(rgrad, "b") is True
    assert run(rgrad, "a") == "ok"
