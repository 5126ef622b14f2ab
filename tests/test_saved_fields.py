"""A node's saved tensors and arguments as torch's generated nodes show them
(``grad_fn._saved_self``, ``_saved_result``, ``_saved_dim``, ...) and
``_raw_saved_<name>.register_hooks(pack, unpack)``, against torch: the examples of torch's
"Autograd mechanics: saved tensors" notes and its saved-tensor hooks tutorial.

``MATCHED`` ops show exactly torch's fields; ``PARTIAL`` ops show the tensors torch shows
and some of its arguments (rgrad keeps fewer of them: a slice's start/end, mm's strides).
"""

from __future__ import annotations

import pytest
from _differential import both, caught

import rgrad


def _x(T):
    return T.tensor([[0.5, -1.0, 2.0, 0.25], [1.5, 0.75, -0.5, 1.0], [0.1, 0.2, 0.3, 0.4]], dtype=T.float64,
                    requires_grad=True)


def _y(T):
    return T.tensor([[1.0, 2.0, -0.5, 0.5], [0.25, -1.5, 1.0, 2.0], [0.4, 0.3, 0.2, 0.1]], dtype=T.float64,
                    requires_grad=True)


MATCHED = {
    "mul": lambda T, x, y: x * y,
    "mul_number": lambda T, x, y: x * 2,
    "mul_detached": lambda T, x, y: x * y.detach(),
    "div": lambda T, x, y: x / y,
    "div_number": lambda T, x, y: x / 2,
    "add": lambda T, x, y: x + y,
    "add_alpha": lambda T, x, y: T.add(x, y, alpha=2.5),
    "sub": lambda T, x, y: x - y,
    "rsub_number": lambda T, x, y: 2 - x,
    "pow_number": lambda T, x, y: x**2,
    "pow_half": lambda T, x, y: x.abs() ** 0.5,
    "pow_tensor": lambda T, x, y: x.abs() ** y,
    "exp": lambda T, x, y: x.exp(),
    "log": lambda T, x, y: x.abs().log(),
    "sin": lambda T, x, y: x.sin(),
    "tanh": lambda T, x, y: x.tanh(),
    "sigmoid": lambda T, x, y: x.sigmoid(),
    "relu": lambda T, x, y: x.relu(),
    "neg": lambda T, x, y: -x,
    "atan2": lambda T, x, y: T.atan2(x, y),
    "hypot": lambda T, x, y: T.hypot(x, y),
    "logaddexp": lambda T, x, y: T.logaddexp(x, y),
    "where": lambda T, x, y: T.where(x > 0, x, y),
    "clamp": lambda T, x, y: x.clamp(-1, 1),
    "clamp_min": lambda T, x, y: x.clamp(min=0),
    "clamp_tensor": lambda T, x, y: x.clamp(y, None),
    "sum": lambda T, x, y: x.sum(),
    "sum_dim": lambda T, x, y: x.sum(1),
    "mean": lambda T, x, y: x.mean(),
    "mean_dim": lambda T, x, y: x.mean(1, keepdim=True),
    "prod": lambda T, x, y: x.prod(),
    "prod_dim": lambda T, x, y: x.prod(1),
    "logsumexp": lambda T, x, y: x.logsumexp(1),
    "amax": lambda T, x, y: x.amax(1),
    "max_dim": lambda T, x, y: x.max(1)[0],
    "softmax": lambda T, x, y: x.softmax(1),
    "log_softmax": lambda T, x, y: x.log_softmax(0),
    "expand": lambda T, x, y: x[:1].expand(3, 4),
    "permute": lambda T, x, y: x.reshape(3, 2, 2).permute(2, 0, 1),
    "unsqueeze": lambda T, x, y: x.unsqueeze(1),
    "cat": lambda T, x, y: T.cat([x, y], 1),
    "stack": lambda T, x, y: T.stack([x, y]),
    "repeat": lambda T, x, y: x.repeat(2, 1),
    "split": lambda T, x, y: x.split(2)[0],
    "split_sizes": lambda T, x, y: x.split([1, 3], 1)[1],
    "unbind": lambda T, x, y: x.unbind(1)[0],
    "bmm": lambda T, x, y: T.bmm(x[None], y.t()[None]),
    "dot": lambda T, x, y: x[0].dot(y[0]),
    "index_select": lambda T, x, y: x.index_select(0, T.tensor([0, 2])),
    "masked_fill": lambda T, x, y: x.masked_fill(x > 0, 1.0),
    "mse_loss": lambda T, x, y: T.nn.functional.mse_loss(x, y),
}

PARTIAL = {
    "mm": (lambda T, x, y: x @ y.t(), ["mat2", "self"]),
    "addmm": (lambda T, x, y: T.addmm(T.zeros(3, dtype=T.float64), x, y.t()), ["alpha", "beta", "mat1", "mat2"]),
    "var": (lambda T, x, y: x.var(1), ["self"]),
    "std": (lambda T, x, y: x.std(), ["result", "self"]),
    "gather": (lambda T, x, y: x.gather(1, T.zeros(3, 1, dtype=T.long)), ["dim", "index"]),
    # (rgrad's formula reads the result alone: the exponent is not kept)
    "pow_of_number": (lambda T, x, y: 2**x, ["result", "self"]),
}


def _fields(T, fn):
    return {n: getattr(fn, n) for n in dir(fn) if n.startswith("_saved_")}


@pytest.mark.parametrize("name", sorted(MATCHED))
def test_saved_fields_as_torch_shows_them(name):
    def program(T):
        out = MATCHED[name](T, _x(T), _y(T))
        return type(out.grad_fn).__name__, _fields(T, out.grad_fn)

    node, fields = both(program)
    assert node != "NoneType"


@pytest.mark.parametrize("name", sorted(PARTIAL))
def test_partially_shown_nodes_give_torch_values_for_their_fields(name):
    f, shown = PARTIAL[name]

    def program(T):
        fn = f(T, _x(T), _y(T)).grad_fn
        return {k: getattr(fn, "_saved_" + k) for k in shown}

    both(program)
    fn = f(rgrad, _x(rgrad), _y(rgrad)).grad_fn
    assert sorted(n[len("_saved_"):] for n in dir(fn) if n.startswith("_saved_")) == shown


def test_saved_input_is_the_input_and_saved_result_shares_the_output():
    # torch's "Autograd mechanics: saved tensors" examples
    def program(T):
        x = T.randn(5, requires_grad=True)
        y = x.pow(2)
        z = x.exp()
        r = z.grad_fn._saved_result
        return (
            y.grad_fn._saved_self is x,
            T.equal(x, y.grad_fn._saved_self),
            r is z,
            r.grad_fn is z.grad_fn,
            (r - z).abs().max().item(),
            r._version,
        )

    assert both(program) == (True, True, False, True, 0.0, 0)


def test_saved_fields_after_backward_and_after_inplace_changes():
    def program(T):
        x = T.randn(3, requires_grad=True)
        y = x.pow(2)
        y.sum().backward()
        freed = caught(lambda: y.grad_fn._saved_self)
        a = T.randn(3, requires_grad=True)
        b = a * 1
        c = b.sin()
        with T.no_grad():
            b.add_(1)
        modified = caught(lambda: c.grad_fn._saved_self)
        missing = caught(lambda: c.grad_fn._saved_foo)
        raw_missing = caught(lambda: c.grad_fn._raw_saved_foo)
        return freed, modified, missing, raw_missing

    freed, modified, missing, raw_missing = both(program)
    assert freed[1] == "RuntimeError" and freed[2].startswith("Trying to backward through the graph a second time")
    assert modified[:2] == ("E", "RuntimeError")
    assert missing == ("E", "AttributeError", "'SinBackward0' object has no attribute '_saved_foo'")


def test_raw_saved_register_hooks():
    # torch's saved-tensor hooks tutorial
    def program(T):
        log = []

        def pack(t):
            log.append(("pack", tuple(t.shape)))
            return t * 1  # what the node keeps instead

        def unpack(t):
            log.append(("unpack", tuple(t.shape)))
            return t

        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x.pow(2)
        y.grad_fn._raw_saved_self.register_hooks(pack, unpack)
        out = [list(log)]
        again = caught(lambda: y.grad_fn._raw_saved_self.register_hooks(pack, unpack))
        seen = y.grad_fn._saved_self  # unpacked through the hook
        y.sum().backward()
        out += [again, seen, list(log), x.grad]
        out.append(caught(lambda: y.grad_fn._raw_saved_self.register_hooks(pack, unpack)))
        z = x * 2
        out.append(caught(lambda: z.grad_fn._raw_saved_self.register_hooks(pack, unpack)))
        return out

    res = both(program)
    assert res[0] == [("pack", (3,))]
    assert res[1] == ("E", "RuntimeError", "Calling register_hooks on a saved tensor whose hooks have already been "
                      "set. Hint: only one pair of hooks is allowed at a time.")
    assert res[3] == [("pack", (3,)), ("unpack", (3,)), ("unpack", (3,))]
    assert res[4][3] == [2.0, 4.0, 6.0]
    assert res[5][2].startswith("Calling register_hooks on a saved tensor after it has been freed.")
    assert res[6] == ("E", "RuntimeError", "Calling register_hooks on a saved tensor with value None is forbidden")
