"""The examples of the five seed write-ups (shared/seeds/*.txt), run on rgrad.

Every example that does not need the profiler or CUDA is here, one test per
example, written as in the seed (``Variable``, ``Function``, ``gradcheck``
included) and checked against what torch prints.
"""

import math
import re
import warnings

import pytest

import rgrad as torch
from rgrad.autograd import Function, Variable, gradcheck
from rgrad.autograd.gradcheck import GradcheckError

SECOND_BACKWARD_MSG = (
    "Trying to backward through the graph a second time (or directly access saved "
    "tensors after they have already been freed). Saved intermediate values of the "
    "graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward."
)

NODE_REPR = r"<{} object at 0x[0-9a-fA-F]+>"


@pytest.fixture(autouse=True)
def _restore_grad_mode():
    yield
    torch.set_grad_enabled(True)


def node_repr(name):
    return re.compile(NODE_REPR.format(name))


def torch_fmt_1d(values, precision=4):
    """torch's _tensor_str._Formatter for a 1-D float tensor (default print options).

    ``values`` are python floats (the float32 values as doubles).
    """
    finite_nz = [v for v in values if math.isfinite(v) and v != 0]
    int_mode, sci_mode, width = True, False, 1
    if finite_nz:
        absv = [abs(v) for v in finite_nz]
        vmax, vmin = max(absv), min(absv)
        int_mode = all(v == math.ceil(v) for v in finite_nz)
        if int_mode:
            if vmax / vmin > 1000.0 or vmax > 1.0e8:
                sci_mode = True
                width = max(len(f"{v:.{precision}e}") for v in finite_nz)
            else:
                width = max(len(f"{v:.0f}") + 1 for v in finite_nz)
        else:
            if vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4:
                sci_mode = True
                width = max(len(f"{v:.{precision}e}") for v in finite_nz)
            else:
                width = max(len(f"{v:.{precision}f}") for v in finite_nz)
    out = []
    for v in values:
        if sci_mode:
            s = f"{v:{width}.{precision}e}"
        elif int_mode:
            s = f"{v:.0f}" + ("" if math.isinf(v) or math.isnan(v) else ".")
        else:
            s = f"{v:.{precision}f}"
        out.append(" " * (width - len(s)) + s)
    return "[" + ", ".join(out) + "]"


def test_torch_fmt_1d_helper_matches_seed_outputs():
    # Self-check of the helper against strings torch printed in seed 002.
    assert torch_fmt_1d([102.4, 1024.0, 0.1024]) == "[1.0240e+02, 1.0240e+03, 1.0240e-01]"
    assert torch_fmt_1d([144.7906, -929.8047, 1286.4860]) == "[ 144.7906, -929.8047, 1286.4860]"
    assert torch_fmt_1d([6.0, 11.0]) == "[ 6., 11.]"
    assert torch_fmt_1d([5.594]) == "[5.5940]"


# --------------------------------------------------------------------------
# seed 000: torch.autograd API write-up (register_hook example)
# --------------------------------------------------------------------------


def test_seed000_register_hook_doubles_gradient_and_remove():
    v = Variable(torch.Tensor([0, 0, 0]), requires_grad=True)
    h = v.register_hook(lambda grad: grad * 2)  # double the gradient
    v.backward(torch.Tensor([1, 1, 1]))
    # v is the root itself: grad = hook(1) = 2 for each element
    assert v.grad.data.tolist() == [2.0, 2.0, 2.0]
    assert repr(v.grad.data) == "tensor([2., 2., 2.])"
    h.remove()  # removes the hook
    v.backward(torch.Tensor([1, 1, 1]))
    # no hook any more: 2 + 1 = 3
    assert v.grad.tolist() == [3.0, 3.0, 3.0]


# --------------------------------------------------------------------------
# seed 001: backward / grad / no_grad / enable_grad / set_grad_enabled
# --------------------------------------------------------------------------


def test_seed001_literal_int_tensor_cannot_require_grad():
    # The seed writes `x = torch.tensor([1], requires_grad=True)`: [1] is int64,
    # and torch refuses that; the examples below use [1.] as the torch docs do.
    with pytest.raises(RuntimeError, match=r"[Oo]nly Tensors of floating point (and complex )?dtype can require gradients"):
        torch.tensor([1], requires_grad=True)


def test_seed001_no_grad_context_and_decorator():
    x = torch.tensor([1.0], requires_grad=True)
    with torch.no_grad():
        y = x * 2
    assert y.requires_grad is False

    @torch.no_grad()
    def doubler(x):
        return x * 2

    z = doubler(x)
    assert z.requires_grad is False
    assert z.tolist() == [2.0]
    assert torch.is_grad_enabled() is True


def test_seed001_enable_grad_inside_no_grad_and_decorator():
    x = torch.tensor([1.0], requires_grad=True)
    with torch.no_grad():
        with torch.enable_grad():
            y = x * 2
    assert y.requires_grad is True
    y.backward()  # one-element output: implicit gradient 1
    # y = 2x -> dy/dx = 2
    assert repr(x.grad) == "tensor([2.])"

    @torch.enable_grad()
    def doubler(x):
        return x * 2

    with torch.no_grad():
        z = doubler(x)
    assert z.requires_grad is True


def test_seed001_set_grad_enabled_context_and_plain_call():
    x = torch.tensor([1.0], requires_grad=True)
    is_train = False
    with torch.set_grad_enabled(is_train):
        y = x * 2
    assert y.requires_grad is False
    torch.set_grad_enabled(True)
    y = x * 2
    assert y.requires_grad is True
    torch.set_grad_enabled(False)
    y = x * 2
    assert y.requires_grad is False
    torch.set_grad_enabled(True)
    assert torch.is_grad_enabled() is True


# --------------------------------------------------------------------------
# seed 002: the 60-minute-blitz autograd tutorial
# --------------------------------------------------------------------------


def test_seed002_ones_requires_grad_repr(capsys):
    x = torch.ones(2, 2, requires_grad=True)
    print(x)
    assert capsys.readouterr().out == "tensor([[1., 1.],\n        [1., 1.]], requires_grad=True)\n"


def test_seed002_add_repr_and_grad_fn(capsys):
    x = torch.ones(2, 2, requires_grad=True)
    y = x + 2
    print(y)
    assert capsys.readouterr().out == "tensor([[3., 3.],\n        [3., 3.]], grad_fn=<AddBackward0>)\n"
    print(y.grad_fn)
    assert node_repr("AddBackward0").fullmatch(capsys.readouterr().out.rstrip("\n"))


def test_seed002_mul_and_mean_repr(capsys):
    x = torch.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3  # 3 * 3 * 3 = 27
    out = z.mean()
    print(z, out)
    assert capsys.readouterr().out == (
        "tensor([[27., 27.],\n        [27., 27.]], grad_fn=<MulBackward0>) "
        "tensor(27., grad_fn=<MeanBackward0>)\n"
    )


def test_seed002_requires_grad_underscore_flips_flag(capsys):
    a = torch.randn(2, 2)
    a = (a * 3) / (a - 1)
    print(a.requires_grad)
    a.requires_grad_(True)
    print(a.requires_grad)
    b = (a * a).sum()
    print(b.grad_fn)
    out = capsys.readouterr().out
    assert re.fullmatch(r"False\nTrue\n<SumBackward0 object at 0x[0-9a-fA-F]+>\n", out), out


def test_seed002_backward_gives_4_5(capsys):
    x = torch.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3
    out = z.mean()
    out.backward()
    # out = mean(3*(x+2)^2) over 4 elements; d out/dx_i = 6*(x_i+2)/4 = 1.5*(x_i+2) = 4.5
    print(x.grad)
    assert capsys.readouterr().out == "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])\n"


def test_seed002_second_backward_raises():
    x = torch.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3
    out = z.mean()
    out.backward()
    with pytest.raises(RuntimeError) as info:
        out.backward()
    assert str(info.value) == SECOND_BACKWARD_MSG
    # the first backward's result is untouched
    assert x.grad.tolist() == [[4.5, 4.5], [4.5, 4.5]]


def test_seed002_scalar_backward_equals_backward_with_tensor_one():
    # "out.backward() is equivalent to out.backward(torch.tensor(1.))"
    x = torch.ones(2, 2, requires_grad=True)
    out = ((x + 2) * (x + 2) * 3).mean()
    out.backward(torch.tensor(1.0))
    assert x.grad.tolist() == [[4.5, 4.5], [4.5, 4.5]]


def _doubling_example(seed):
    torch.manual_seed(seed)
    x = torch.randn(3, requires_grad=True)
    y = x * 2
    k = 1  # number of doublings applied to x
    while y.data.norm() < 1000:  # norm() 范数
        y = y * 2
        k += 1
    return x, y, k


def test_seed002_doubling_loop_repr(capsys):
    x, y, k = _doubling_example(0)
    # y = x * 2**k with k the number of doublings; multiplying by 2 is exact in float32
    xs = x.tolist()
    assert y.tolist() == [v * 2.0**k for v in xs]
    assert y.norm().item() >= 1000
    assert (y / 2).norm().item() < 1000 or k == 1
    print(y)
    out = capsys.readouterr().out
    assert out == "tensor(" + torch_fmt_1d([v * 2.0**k for v in xs]) + ", grad_fn=<MulBackward0>)\n"


def test_seed002_vector_jacobian_product(capsys):
    x, y, k = _doubling_example(1)
    v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
    assert v.dtype == torch.float32
    y.backward(v)
    # y = 2**k * x  ->  J = 2**k * I  ->  x.grad = v * 2**k (exact in float32)
    expected = [e * 2.0**k for e in v.tolist()]
    assert x.grad.tolist() == expected
    print(x.grad)
    # max/min = 1e4 > 1000, so torch prints in scientific notation,
    # e.g. k = 10: tensor([1.0240e+02, 1.0240e+03, 1.0240e-01])
    out = capsys.readouterr().out
    assert out == "tensor(" + torch_fmt_1d(expected) + ")\n"
    assert re.fullmatch(r"tensor\(\[\d\.\d{4}e[+-]\d\d, \d\.\d{4}e[+-]\d\d, \d\.\d{4}e[+-]\d\d\]\)\n", out)


def test_seed002_vector_jacobian_product_k10_prints_like_seed(capsys):
    # Same as the seed's printed case where 10 doublings were needed.
    x = torch.tensor([0.2, -1.0, 1.5], requires_grad=True)
    y = x * 2
    while y.data.norm() < 1000:
        y = y * 2
    # |x| = 1.8138, *2**9 = 928.7 < 1000, *2**10 = 1857 -> 10 doublings
    y.backward(torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float))
    print(x.grad)
    assert capsys.readouterr().out == "tensor([1.0240e+02, 1.0240e+03, 1.0240e-01])\n"


def test_seed002_no_grad_stops_tracking(capsys):
    x = torch.randn(3, requires_grad=True)
    print(x.requires_grad)
    print((x**2).requires_grad)
    with torch.no_grad():
        print((x**2).requires_grad)
    assert capsys.readouterr().out == "True\nTrue\nFalse\n"


# --------------------------------------------------------------------------
# seed 003: Variable write-up
# --------------------------------------------------------------------------


def _seed003_graph():
    a = Variable(torch.Tensor([1]), requires_grad=True)
    b = Variable(torch.Tensor([2]), requires_grad=True)
    c = Variable(torch.Tensor([3]), requires_grad=True)
    d = a + 2 * b
    e = d + c
    return a, b, c, d, e


def test_seed003_backward_accumulates_leaf_grads(capsys):
    a, b, c, d, e = _seed003_graph()
    e.backward()
    # e = a + 2b + c  ->  de/da = 1, de/db = 2, de/dc = 1
    print(a.grad, b.grad, c.grad)
    assert capsys.readouterr().out == "tensor([1.]) tensor([2.]) tensor([1.])\n"


def test_seed003_intermediate_grad_is_none():
    a, b, c, d, e = _seed003_graph()
    e.backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns when reading .grad of a non-leaf
        assert d.grad is None  # 中间梯度值不保存，为空


def test_seed003_leaf_grad_fn_is_none_and_result_grad_fn():
    a, b, c, d, e = _seed003_graph()
    assert a.grad_fn is None  # 第一个节点的.grad_fn为空
    # IPython shows <AddBackward0 at 0x...>; the plain repr is <AddBackward0 object at 0x...>
    assert node_repr("AddBackward0").fullmatch(repr(e.grad_fn))
    assert e.grad_fn.name() == "AddBackward0"


def test_seed003_requires_grad_false_excludes_subgraph():
    a = Variable(torch.Tensor([1]), requires_grad=False)
    b = Variable(torch.Tensor([2]), requires_grad=True)
    c = a + b
    c.backward()
    assert a.grad is None  # a does not require grad: nothing stored
    assert repr(b.grad) == "tensor([1.])"


def test_seed003_hook_prints_intermediate_grad(capsys):
    def print_grad(grad):
        print(grad)

    torch.manual_seed(3)
    x = Variable(torch.randn([1]), requires_grad=True)
    y = x + 2
    z = torch.mean(torch.pow(y, 2))
    handle = y.register_hook(print_grad)
    assert hasattr(handle, "remove")
    assert type(handle).__name__ == "RemovableHandle"
    z.backward()
    # z = mean(y^2) over 1 element  ->  dz/dy = 2y = 2(x+2)   (seed printed tensor([5.5940]))
    gy = 2.0 * y.item()
    out = capsys.readouterr().out
    assert out == "tensor(" + torch_fmt_1d([gy]) + ")\n"
    # dz/dx = dz/dy
    assert x.grad.tolist() == [gy]
    assert node_repr("AddBackward0").fullmatch(repr(y.grad_fn))


# --------------------------------------------------------------------------
# seed 004: torch.autograd cheat sheet
# --------------------------------------------------------------------------


def _seed004_abc():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([1.0, 2.0], requires_grad=True)
    c = 2 * a + 3 * b + 1
    return a, b, c


def test_seed004_requires_grad_propagates():
    a = torch.tensor([1.0], requires_grad=True)
    b = a + 1
    assert b.requires_grad is True
    # a child of tensors that need no grad needs none either
    p = torch.tensor([1.0])
    assert (p + 1).requires_grad is False


def test_seed004_requires_grad_false_only_on_leaves():
    # "x.requires_grad=False: x must be a leaf"
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    w.requires_grad = False  # leaf: allowed (model freezing)
    assert w.requires_grad is False
    w.requires_grad = True
    y = w * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad = False


def test_seed004_autograd_backward_with_grad_tensors():
    a, b, c = _seed004_abc()
    grad = torch.tensor([1.0, 1.0])
    torch.autograd.backward(c, grad_tensors=grad)
    # c = 2a + 3b + 1
    assert repr(a.grad) == "tensor([2., 2.])"
    assert repr(b.grad) == "tensor([3., 3.])"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert c.grad is None  # 非叶节点不储存梯度
    with pytest.raises(RuntimeError, match=re.escape("Trying to backward through the graph a second time")):
        torch.autograd.backward(c, grad_tensors=grad)  # 继续执行报错


def test_seed004_autograd_grad_with_non_leaf_inputs():
    a, b, c = _seed004_abc()
    d = 2 * c + 1
    grad = torch.tensor([1.0, 1.0])
    res = torch.autograd.grad(d, (a, b, c), grad)  # 非叶节点也能输出梯度!
    # d = 2(2a + 3b + 1) + 1: dd/da = 4, dd/db = 6, dd/dc = 2
    assert isinstance(res, tuple)
    assert repr(res) == "(tensor([4., 4.]), tensor([6., 6.]), tensor([2., 2.]))"
    assert (a.grad, b.grad) == (None, None)  # 该函数结果不储存在.grad中
    with pytest.raises(RuntimeError, match=re.escape("Trying to backward through the graph a second time")):
        torch.autograd.grad(d, a, grad)  # 错误，一次前向只能操作一次


def test_seed004_freeze_scheme1_no_grad_context():
    x = torch.tensor([1.0], requires_grad=True)
    with torch.no_grad():
        y = x * 2
    assert y.requires_grad is False


def test_seed004_freeze_scheme2_no_grad_decorator():
    x = torch.tensor([1.0], requires_grad=True)

    @torch.no_grad()
    def doubler(x):
        return x * 2

    z = doubler(x)
    assert z.requires_grad is False


def test_seed004_freeze_scheme3_set_grad_enabled_context():
    x = torch.tensor([1.0], requires_grad=True)
    flag = False
    with torch.set_grad_enabled(flag):
        y = x * 2
    assert y.requires_grad is False
    flag = True  # 如果这里为True则不阻止梯度传递
    with torch.set_grad_enabled(flag):
        y = x * 2
    assert y.requires_grad is True


def test_seed004_freeze_scheme4_set_grad_enabled_call():
    x = torch.tensor([1.0], requires_grad=True)
    torch.set_grad_enabled(False)
    try:
        y = x * 2
        assert y.requires_grad is False
        assert torch.is_grad_enabled() is False
    finally:
        torch.set_grad_enabled(True)
    assert (x * 2).requires_grad is True


def test_seed004_tensor_backward_same_as_autograd_backward():
    a, b, c = _seed004_abc()
    c.backward(torch.tensor([1.0, 1.0]))
    assert a.grad.tolist() == [2.0, 2.0]
    assert b.grad.tolist() == [3.0, 3.0]


def test_seed004_detach():
    a, b, c = _seed004_abc()
    cc = c.detach()
    assert cc.requires_grad is False
    # c = 2*[1,2] + 3*[1,2] + 1 = [6, 11]
    assert repr(cc) == "tensor([ 6., 11.])"
    assert c.requires_grad is True  # the original keeps its graph


def test_seed004_detach_in_place():
    a, b, c = _seed004_abc()
    cc = c.detach_()
    assert cc is c  # 这是一个in-place操作
    assert cc.requires_grad is False
    assert repr(cc) == "tensor([ 6., 11.])"


def test_seed004_grad_none_until_backward():
    a, b, c = _seed004_abc()
    assert a.grad is None and b.grad is None
    c.sum().backward()
    assert a.grad.tolist() == [2.0, 2.0]


def test_seed004_is_leaf():
    a, b, c = _seed004_abc()
    assert c.is_leaf is False
    assert a.is_leaf is True


def test_seed004_register_hook_prints_grad(capsys):
    def hook_func(grad):
        print(grad)

    a, b, c = _seed004_abc()
    d = 2 * c + 1
    hook = c.register_hook(hook_func)
    d.backward(torch.tensor([1.0, 1.0]))
    # dd/dc = 2
    assert capsys.readouterr().out == "tensor([2., 2.])\n"
    hook.remove()
    assert a.grad.tolist() == [4.0, 4.0]


def test_seed004_retain_grad():
    a, b, c = _seed004_abc()
    d = 2 * c + 1
    c.retain_grad()
    d.backward(torch.tensor([1.0, 1.0]))
    assert repr(c.grad) == "tensor([2., 2.])"


# --------------------------------------------------------------------------
# custom Function, Variable and gradcheck examples (seeds 000, 001, 003, 004)
# --------------------------------------------------------------------------


def test_seed000_exp_function_with_saved_variables(capsys):
    class Exp(Function):
        @staticmethod
        def forward(ctx, i):
            result = i.exp()
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            (result,) = ctx.saved_variables
            return grad_output * result

    x = torch.tensor([0.0, 1.0], requires_grad=True)
    y = Exp.apply(x)
    print(y)
    with pytest.warns(DeprecationWarning, match="'saved_variables' is deprecated; use 'saved_tensors'"):
        y.sum().backward()
    print(x.grad)
    assert capsys.readouterr().out == (
        "tensor([1.0000, 2.7183], grad_fn=<ExpBackward>)\ntensor([1.0000, 2.7183])\n"
    )


def test_seed001_exp_function_apply(capsys):
    class Exp(Function):
        @staticmethod
        def forward(ctx, i):
            result = i.exp()
            ctx.save_for_backward(result)  # 保存张量,这里为e**i
            return result

        @staticmethod
        def backward(ctx, grad_output):
            (result,) = ctx.saved_tensors  # 取回张量
            return grad_output * result  # 计算梯度并返回

    input = torch.tensor([2.0], requires_grad=True)
    output = Exp.apply(input)
    output.backward()
    print(output, input.grad)
    assert capsys.readouterr().out == "tensor([7.3891], grad_fn=<ExpBackward>) tensor([7.3891])\n"
    assert node_repr("ExpBackward").fullmatch(repr(output.grad_fn))


def test_seed003_variable_data():
    a = Variable(torch.Tensor([1]), requires_grad=True)
    assert repr(a) == "tensor([1.], requires_grad=True)"
    assert repr(a.data) == "tensor([1.])"


def test_seed003_volatile_variable(recwarn):
    with pytest.warns(UserWarning, match="volatile was removed and now has no effect"):
        a = Variable(torch.Tensor([1]), volatile=True)
    b = Variable(torch.Tensor([2]), requires_grad=True)
    c = a + b
    c.backward()
    assert b.grad.tolist() == [1.0] and a.grad is None


class custom_add(Function):  # noqa: N801 (the seed's name)
    """forward and backward both use tensor."""

    @staticmethod
    def forward(ctx, input, input2):
        ctx.save_for_backward(input, input2)
        output = input + input2
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input1, input2 = ctx.saved_tensors
        grad_input = grad_output.clone()
        return grad_input, grad_input


def test_seed003_custom_add(capsys):
    new_add = custom_add.apply
    a = Variable(torch.Tensor([1]), requires_grad=True)
    b = Variable(torch.Tensor([2]), requires_grad=True)
    c = new_add(a, b)
    print(c)
    c.backward()
    print(a.grad)
    assert capsys.readouterr().out == "tensor([3.], grad_fn=<custom_addBackward>)\ntensor([1.])\n"


def test_seed003_gradcheck_custom_add(capsys):
    input = (
        Variable(torch.Tensor([2]).double(), requires_grad=True),
        Variable(torch.Tensor([3]).double(), requires_grad=True),
    )
    test = gradcheck(custom_add.apply, input, eps=1e-6, atol=1e-4)
    print(test)
    assert capsys.readouterr().out == "True\n"


def test_gradcheck_detects_a_wrong_backward():
    class WrongAdd(custom_add):
        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * 2, grad_output  # d/dinput is 1, not 2

    input = (torch.tensor([2.0], dtype=torch.float64, requires_grad=True),
             torch.tensor([3.0], dtype=torch.float64, requires_grad=True))
    with pytest.raises(GradcheckError, match="^Jacobian mismatch for output 0 with respect to input 0,\nnumerical:"):
        gradcheck(WrongAdd.apply, input, eps=1e-6, atol=1e-4)
    assert gradcheck(WrongAdd.apply, input, eps=1e-6, atol=1e-4, raise_exception=False) is False


class Func(Function):
    @staticmethod
    def forward(ctx, x, y):
        # 输入都是torch.Tensor
        expx = torch.exp(x)
        expy = torch.exp(y)
        result = 3 * x + 2 * y + expx + expy
        ctx.save_for_backward(expx, expy)  # 为反向传播保留输出
        return result

    @staticmethod
    def backward(ctx, grad_output):
        expx, expy = ctx.saved_tensors
        grad_x = grad_output * (3 + expx)
        grad_y = grad_output * (2 + expy)
        return grad_x, grad_y


def test_seed004_function_gradients(capsys):
    myfunc = Func.apply
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = torch.tensor([3.0, 4.0], requires_grad=True)
    z = myfunc(x, y)
    z.backward(torch.tensor([1.0, 1.0]))
    print((x.grad, y.grad))
    assert capsys.readouterr().out == "(tensor([ 5.7183, 10.3891]), tensor([22.0855, 56.5981]))\n"


def test_seed004_gradcheck_and_gradgradcheck(capsys):
    myfunc = Func.apply
    iptx = torch.randn(20, requires_grad=True).double()
    ipty = torch.randn(20, requires_grad=True).double()
    ipt = iptx, ipty
    test = torch.autograd.gradcheck(myfunc, ipt, atol=1e-4)
    print(test)  # 没问题的话输出True
    test = torch.autograd.gradcheck(myfunc, ipt)
    print(test)
    assert capsys.readouterr().out == "True\nTrue\n"
    # "上述函数无法通过检测": its backward uses saved values without history, so the
    # second derivative is wrong, and gradgradcheck says so (as in torch).
    with pytest.raises(GradcheckError, match="^Jacobian mismatch for output 0 with respect to input 0,"):
        torch.autograd.gradgradcheck(myfunc, ipt)
