"""flip / fliplr / flipud / roll / rot90, tril / triu (and in place), diagonal /
diag_embed / diag / trace, cumsum / cumprod against torch: values, dtypes, strides, the
nodes recorded and their saved fields, errors (type and message), integer and bool
inputs, non-contiguous, 0-d and empty inputs; diagonal as a view; gradcheck (with batched
gradients) and gradgradcheck in float64 with forward AD. Their vmap rules are checked
against the loop in tests/test_vmap.py.
"""

from __future__ import annotations

import pytest
from _differential import both, caught

import rgrad
from rgrad.autograd import gradcheck, gradgradcheck


def _x(T, *shape, dtype=None, requires_grad=False):
    """Deterministic distinct values (no zeros), the same in both libraries."""
    n = 1
    for s in shape:
        n *= s
    vals = [((i * 7) % 11 - 5) / 4 + (0.125 if i % 11 == 5 else 0.0) for i in range(n)]
    t = T.tensor(vals, dtype=dtype or T.float64).reshape(shape)
    return t.requires_grad_() if requires_grad else t


def _chain(y):
    """The names of the nodes from ``y.grad_fn`` down its first edges."""
    out = []
    fn = y.grad_fn
    while fn is not None:
        out.append(fn.name().rsplit("::", 1)[-1])
        nxt = [f for f, _ in fn.next_functions if f is not None]
        fn = nxt[0] if nxt else None
    return out


def _saved(fn):
    """The node's saved fields; a negative int argument as torch shows it (its uint64
    bits) read back as the int (rgrad shows the int)."""
    def signed(v):
        if isinstance(v, tuple):
            return tuple(signed(i) for i in v)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 2**63:
            return v - 2**64
        return v

    return {n: signed(getattr(fn, n)) for n in dir(fn) if n.startswith("_saved_")}


# ---------------------------------------------------------------------------------------
# Values, dtypes, layouts and nodes against torch
# ---------------------------------------------------------------------------------------

CALLS = {
    "flip": lambda T, x: T.flip(x, (0,)),
    "flip2": lambda T, x: T.flip(x, [0, 1]),
    "flip_neg": lambda T, x: T.flip(x, (-1,)),
    "flip_none": lambda T, x: T.flip(x, ()),
    "flip_method": lambda T, x: x.flip(1, 0),
    "flip_kw": lambda T, x: x.flip(dims=(1,)),
    "fliplr": lambda T, x: T.fliplr(x),
    "flipud": lambda T, x: x.flipud(),
    "roll": lambda T, x: T.roll(x, 1),
    "roll_neg": lambda T, x: T.roll(x, -7),
    "roll_dim": lambda T, x: T.roll(x, 2, 1),
    "roll_dims": lambda T, x: T.roll(x, (1, -2), (0, 1)),
    "roll_kw": lambda T, x: x.roll(shifts=(1,), dims=(-1,)),
    "roll_same_dim": lambda T, x: T.roll(x, (1, 1), (1, 1)),
    "roll_huge": lambda T, x: T.roll(x, 2**62, 0),
    "rot90": lambda T, x: T.rot90(x),
    "rot90_2": lambda T, x: T.rot90(x, 2),
    "rot90_3": lambda T, x: x.rot90(3, [1, 0]),
    "rot90_neg": lambda T, x: T.rot90(x, -1),
    "rot90_0": lambda T, x: T.rot90(x, 0),
    "rot90_big": lambda T, x: T.rot90(x, -7, (1, 0)),
    "tril": lambda T, x: T.tril(x),
    "tril1": lambda T, x: x.tril(1),
    "tril_neg": lambda T, x: T.tril(x, diagonal=-1),
    "triu": lambda T, x: T.triu(x),
    "triu2": lambda T, x: x.triu(2),
    "triu_far": lambda T, x: T.triu(x, -10),
    "diagonal": lambda T, x: T.diagonal(x),
    "diagonal1": lambda T, x: x.diagonal(1),
    "diagonal_neg": lambda T, x: T.diagonal(x, -1),
    "diagonal_far": lambda T, x: T.diagonal(x, 10),
    "diagonal_dims": lambda T, x: T.diagonal(x, offset=1, dim1=1, dim2=0),
    "diag_embed": lambda T, x: T.diag_embed(x),
    "diag_embed_off": lambda T, x: x.diag_embed(1, 0, 2),
    "diag_embed_neg": lambda T, x: T.diag_embed(x, -2, 2, 0),
    "diag2": lambda T, x: T.diag(x),
    "diag2_off": lambda T, x: x.diag(1),
    "diag1": lambda T, x: T.diag(x[0]),
    "diag1_off": lambda T, x: T.diag(x[1], -2),
    "trace": lambda T, x: T.trace(x),
    "trace_method": lambda T, x: x.trace(),
    "cumsum": lambda T, x: T.cumsum(x, 1),
    "cumsum0": lambda T, x: x.cumsum(dim=0),
    "cumsum_dtype": lambda T, x: T.cumsum(x.float(), -1, dtype=T.float64),
    "cumprod": lambda T, x: T.cumprod(x, 1),
    "cumprod_neg": lambda T, x: x.cumprod(-1),
    "cumprod_dtype": lambda T, x: T.cumprod(x, 0, dtype=T.float32),
}


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped"])
def test_values_layout_nodes_and_saved_fields_as_torch(name, layout):
    def program(T):
        if layout == "contiguous":
            x = _x(T, 3, 4, requires_grad=True)
            v = x
        elif layout == "transposed":
            x = _x(T, 4, 3, requires_grad=True)
            v = x.t()
        else:
            x = _x(T, 6, 4, requires_grad=True)
            v = x[::2]
        y = CALLS[name](T, v)
        saved = _saved(y.grad_fn)
        y.sum().backward()
        return (y, y.stride(), y.is_contiguous(), _chain(y), saved, x.grad, y._base is None)

    got = both(program)
    assert got[0][0] == "T"


def test_a_3d_input_as_torch():
    def program(T):
        x = _x(T, 2, 3, 4, requires_grad=True)
        outs = [T.flip(x, (0, 2)), T.roll(x, (1, 2), (2, 0)), T.rot90(x, 1, (0, 2)), T.tril(x, 1), T.triu(x, -1),
                T.diagonal(x, 1, 2, 0), T.diag_embed(x, 1, 1, 3), T.cumsum(x, 1), T.cumprod(x, 2),
                T.roll(x, 5)]
        T.stack([o.sum() for o in outs]).sum().backward()
        return [(o, o.stride(), _chain(o)) for o in outs], x.grad

    both(program)


# ---------------------------------------------------------------------------------------
# Errors: type and message
# ---------------------------------------------------------------------------------------

ERRORS = {
    "flip_repeat": lambda T, x: T.flip(x, (0, 0)),
    "flip_repeat_neg": lambda T, x: T.flip(x, (1, -1)),
    "flip_range": lambda T, x: T.flip(x, (2,)),
    "flip_missing": lambda T, x: x.flip(),
    "flip_float": lambda T, x: T.flip(x, (0.5,)),
    "fliplr_1d": lambda T, x: T.fliplr(x[0]),
    "flipud_0d": lambda T, x: T.flipud(x[0, 0]),
    "roll_align": lambda T, x: T.roll(x, (1, 2), (0,)),
    "roll_align_none": lambda T, x: T.roll(x, (1, 2)),
    "roll_empty": lambda T, x: T.roll(x, (), ()),
    "roll_missing": lambda T, x: x.roll(),
    "roll_range": lambda T, x: T.roll(x, 1, 5),
    "roll_0d_dim": lambda T, x: T.roll(x[0, 0], 1, 0),
    "rot90_one_dim": lambda T, x: T.rot90(x, 1, [0]),
    "rot90_1d": lambda T, x: T.rot90(x[0], 1, [0, 1]),
    "rot90_same": lambda T, x: T.rot90(x, 1, [0, 0]),
    "rot90_same_wrapped": lambda T, x: T.rot90(x, 1, [0, -2]),
    "rot90_range": lambda T, x: T.rot90(x, 1, [0, 2]),
    "tril_1d": lambda T, x: T.tril(x[0]),
    "triu_0d": lambda T, x: T.triu(x[0, 0]),
    "tril__1d": lambda T, x: x[0].clone().tril_(),
    "diagonal_same": lambda T, x: T.diagonal(x, 0, 1, 1),
    "diagonal_same_wrapped": lambda T, x: T.diagonal(x, 0, 1, -1),
    "diagonal_range": lambda T, x: T.diagonal(x, 0, 0, 2),
    "diagonal_1d": lambda T, x: T.diagonal(x[0]),
    "diag_embed_same": lambda T, x: T.diag_embed(x, 0, 1, 1),
    "diag_embed_range": lambda T, x: T.diag_embed(x, 0, 0, 3),
    "diag_embed_0d": lambda T, x: T.diag_embed(x[0, 0]),
    "diag_3d": lambda T, x: T.diag(x[None]),
    "diag_0d": lambda T, x: T.diag(x[0, 0]),
    "trace_3d": lambda T, x: T.trace(x[None]),
    "trace_1d": lambda T, x: T.trace(x[0]),
    "trace_bool": lambda T, x: T.trace(x > 0),
    "cumsum_range": lambda T, x: T.cumsum(x, 2),
    "cumsum_missing": lambda T, x: x.cumsum(),
    "cumsum_0d_range": lambda T, x: T.cumsum(x[0, 0], 1),
    "cumsum_bool_dtype": lambda T, x: T.cumsum(x > 0, 0, dtype=T.bool),
    "cumprod_int_dtype_grad": lambda T, x: T.cumprod(x.detach().requires_grad_(), 0, dtype=T.int64),
    "cumsum_int_dtype_grad": lambda T, x: T.cumsum(x.detach().requires_grad_(), 0, dtype=T.long),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_as_torch(name):
    got = both(lambda T: caught(lambda: ERRORS[name](T, _x(T, 3, 4))))
    assert got[0] == "E"


# ---------------------------------------------------------------------------------------
# Integer and bool inputs, 0-d and empty inputs
# ---------------------------------------------------------------------------------------

def test_int_and_bool_inputs_as_torch():
    def program(T):
        i = T.tensor([[1, -2, 3], [4, 5, -6]])
        b = T.tensor([[True, False, True], [False, True, True]])
        return [
            T.flip(i, (1,)), T.flip(b, (0,)), T.roll(i, 1), T.roll(b, 1, 1), T.rot90(i), T.rot90(b, 3),
            T.tril(i), T.triu(b, 1), i.clone().tril_(-1), T.diagonal(i), T.diagonal(b, 1), T.diag_embed(i),
            T.diag_embed(b), T.diag(i), T.diag(b[0]), T.trace(i), T.cumsum(i, 1), T.cumsum(b, 1),
            T.cumprod(i, 0), T.cumprod(b, 1), T.cumsum(i, 0, dtype=T.float32), T.cumsum(b, 1, dtype=T.float64),
            T.cumprod(i, 1, dtype=T.float64),
            T.cumsum(T.tensor([2**62, 2**62, 2**62]), 0),  # wraps, as torch's int64
        ]

    both(program)


def test_zero_dim_and_empty_inputs_as_torch():
    def program(T):
        s = T.tensor(1.5, dtype=T.float64, requires_grad=True)
        e = T.zeros(0, 3, dtype=T.float64, requires_grad=True)
        outs = [T.flip(s, (0,)), T.flip(s, ()), T.roll(s, 3), T.cumsum(s, 0), T.cumsum(s, -1), T.cumprod(s, 0),
                T.flip(e, (0, 1)), T.roll(e, 1, 0), T.roll(e, 2), T.rot90(e), T.tril(e), T.triu(e, 1),
                T.diagonal(e), T.diag_embed(e), T.diag(e), T.trace(e), T.cumsum(e, 0), T.cumprod(e, 1)]
        T.stack([o.sum() for o in outs]).sum().backward()
        return [(o, _chain(o)) for o in outs], s.grad, e.grad

    both(program)


# ---------------------------------------------------------------------------------------
# diagonal: a view
# ---------------------------------------------------------------------------------------

def test_diagonal_is_a_view_sharing_storage():
    def program(T):
        x = _x(T, 3, 4)
        d = x.diagonal(1)
        d2 = T.diagonal(x.t(), -1)
        x[0, 1] = 100.0
        return (d._base is (x if x._base is None else x._base), d.stride(), d.storage_offset(), d, d2, d2.storage_offset(),
                d.data_ptr() - x.data_ptr())

    got = both(program)
    assert got[0] is True


def test_in_place_on_the_diagonal_view_reaches_the_base_and_its_gradient():
    def program(T):
        a = _x(T, 3, 4, requires_grad=True)
        x = a * 1
        d = x.diagonal()
        d.mul_(3)
        y = (x * x).sum()
        y.backward()
        return x, _chain(x), _chain(d), a.grad, x._version, d._version

    got = both(program)
    assert got[1][0] == "CopySlices"


def test_writing_the_base_refreshes_the_diagonal_view():
    def program(T):
        a = _x(T, 3, 3, requires_grad=True)
        x = a.clone()
        d = T.diagonal(x)
        x.add_(1)
        d.sum().backward()
        return d, _chain(d), a.grad

    both(program)


def test_diag_of_a_matrix_is_a_copy():
    def program(T):
        x = _x(T, 3, 3)
        d = T.diag(x)
        x[0, 0] = 10.0
        return d, d._base is None

    both(program)


def test_tril_in_place_records_its_node_and_bumps_the_version():
    def program(T):
        a = _x(T, 3, 4, requires_grad=True)
        x = a.clone()
        r = x.tril_(1)
        x.triu_(-1)
        x.sum().backward()
        return r is x, x, x._version, _chain(x), a.grad

    got = both(program)
    assert got[0] is True


def test_tril_in_place_on_a_view_rebases():
    def program(T):
        a = _x(T, 2, 3, 4, requires_grad=True)
        x = a.clone()
        x[1].tril_()
        x.sum().backward()
        return x, _chain(x), a.grad

    both(program)


# ---------------------------------------------------------------------------------------
# cumprod's gradient through zeros
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("vals", [[2.0, 0.0, 3.0, 4.0], [0.0, 2.0, 3.0], [2.0, 3.0, 0.0], [1.5, 0.0, 2.0, 0.0, 3.0],
                                  [0.0, 0.0], [0.5, -1.5, 2.0]])
def test_cumprod_gradients_through_zeros_as_torch(vals):
    def program(T):
        x = T.tensor(vals, dtype=T.float64, requires_grad=True)
        y = T.cumprod(x, 0)
        w = T.arange(1.0, len(vals) + 1, dtype=T.float64)
        (g,) = T.autograd.grad((y * w).sum(), x, create_graph=True)
        (gg,) = T.autograd.grad((g * w.flip(0)).sum(), x)
        return y, g, gg

    both(program)


# ---------------------------------------------------------------------------------------
# gradcheck, gradgradcheck and forward AD in float64
# ---------------------------------------------------------------------------------------

GRAD_CALLS = {
    "flip": (lambda x: rgrad.flip(x, (0, -1)), (3, 4)),
    "fliplr": (lambda x: rgrad.fliplr(x.t()), (3, 4)),
    "flipud": (lambda x: x.flipud(), (3, 4)),
    "roll": (lambda x: rgrad.roll(x, (1, -2), (0, 1)), (3, 4)),
    "roll_flat": (lambda x: rgrad.roll(x.t(), 5), (3, 4)),
    "rot90": (lambda x: rgrad.rot90(x, 1, (0, 2)), (2, 3, 4)),
    "rot90_3": (lambda x: x.rot90(3), (3, 4)),
    "tril": (lambda x: rgrad.tril(x, -1), (2, 3, 4)),
    "triu": (lambda x: rgrad.triu(x.t(), 1), (3, 4)),
    "tril_": (lambda x: x.clone().tril_(1), (3, 4)),
    "diagonal": (lambda x: rgrad.diagonal(x, 1, 2, 0), (2, 3, 4)),
    "diag_embed": (lambda x: rgrad.diag_embed(x, -1, 0, 2), (2, 3)),
    "diag1": (lambda x: rgrad.diag(x, 1), (3,)),
    "diag2": (lambda x: rgrad.diag(x, -1), (3, 4)),
    "trace": (lambda x: rgrad.trace(x), (3, 4)),
    "cumsum": (lambda x: rgrad.cumsum(x, 1), (3, 4)),
    "cumsum_dtype": (lambda x: rgrad.cumsum(x, 0, dtype=rgrad.float64), (3, 4)),
    "cumprod": (lambda x: rgrad.cumprod(x, 1), (3, 4)),
    "cumprod_zeros": (lambda x: rgrad.cumprod(x * rgrad.tensor([1.0, 0.0, 1.0, 1.0], dtype=rgrad.float64), 1),
                      (3, 4)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CALLS))
def test_gradcheck_gradgradcheck_and_forward_ad(name):
    f, shape = GRAD_CALLS[name]
    x = _x(rgrad, *shape, requires_grad=True)
    assert gradcheck(f, (x,), check_forward_ad=True, check_batched_grad=True)
    assert gradgradcheck(f, (x,))
