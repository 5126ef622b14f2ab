"""The data-movement kernels (src/backend/cpu/reorder.rs and compact.rs) against torch,
bit for bit: flip / fliplr / flipud / rot90 and roll (one pass, dims reversed or rolled),
tril / triu (and in place: only the zeros written), nonzero / argwhere and masked_select
(counted per chunk, then written at known offsets). Each on its paths: contiguous,
transposed, strided and offset views, expanded inputs, every dtype, empty and
one-element tensors, sizes on both sides of the parallel thresholds (32K elements for
the counts, 64K for the copies), the same bits on 1 and 2 threads, and the gradients
that go through the same kernels.
"""

from __future__ import annotations

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")

DTYPES = ["float32", "float64", "int64", "bool"]
# (rows, cols): tiny, one element, below and above the parallel thresholds
SHAPES = [(3, 5), (1, 1), (64, 64), (300, 257)]


def _arr(shape, dtype, seed=0):
    """Random values with zeros among them (int64: about a tenth; bool: half false)."""
    a = np.random.default_rng(seed).standard_normal(shape)
    if dtype == "bool":
        a = a > 0
    elif dtype == "int64":
        a = np.rint(a * 5).astype(np.int64)
    else:
        a = a.astype(dtype)
    return np.asarray(a)


def _pair(arr):
    return rgrad.from_numpy(arr.copy()), torch.from_numpy(arr.copy())


def _np(t):
    return t.detach().numpy()


def _same(r, t):
    """Same dtype, shape, memory order and bits (strides are compared where they place
    elements: dims longer than 1 of a non-empty tensor)."""
    assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(r.shape) == tuple(t.shape)
    if r.numel() > 0:
        placed = [i for i, n in enumerate(r.shape) if n > 1]
        rs, ts = r.stride(), t.stride()
        assert [rs[i] for i in placed] == [ts[i] for i in placed], (rs, ts)
    a, b = np.ascontiguousarray(_np(r)), np.ascontiguousarray(_np(t))
    assert a.tobytes() == b.tobytes()


# the input views, made the same way in both libraries
VIEWS = {
    "contiguous": lambda t: t,
    "transposed": lambda t: t.t(),
    "offset_strided": lambda t: t[1:, ::2],
    "expanded": lambda t: t[:1].expand(t.shape[0], t.shape[1]),
}


def _inputs(shape, dtype, view):
    r, t = _pair(_arr(shape, dtype))
    return VIEWS[view](r), VIEWS[view](t)


def _on_threads(f):
    """f() on 1 and on 2 threads; asserts the same bits; returns the 2-thread result."""
    before = rgrad.get_num_threads()
    out = []
    try:
        for n in (1, 2):
            rgrad.set_num_threads(n)
            out.append(f())
    finally:
        rgrad.set_num_threads(before)
    a, b = out
    if isinstance(a, rgrad.Tensor):
        assert np.ascontiguousarray(_np(a)).tobytes() == np.ascontiguousarray(_np(b)).tobytes()
    return b


FLIPS = {
    "flip(0)": lambda t: t.flip(0),
    "flip(1)": lambda t: t.flip(1),
    "flip(0,1)": lambda t: t.flip(0, 1),
    "flip(-1,0)": lambda t: t.flip(-1, 0),
    "flip()": lambda t: t.flip([]),
    "fliplr": lambda t: t.fliplr(),
    "flipud": lambda t: t.flipud(),
    "rot90": lambda t: t.rot90(),
    "rot90(2)": lambda t: t.rot90(2),
    "rot90(3)": lambda t: t.rot90(3, [0, 1]),
    "rot90(-1, [1,0])": lambda t: t.rot90(-1, [1, 0]),
}


@pytest.mark.parametrize("name", FLIPS)
@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_flip_and_rot90_as_torch(name, view, shape, dtype):
    r, t = _inputs(shape, dtype, view)
    f = FLIPS[name]
    _same(_on_threads(lambda: f(r)), f(t))


ROLLS = {
    "roll(5)": lambda t: t.roll(5),
    "roll(-7)": lambda t: t.roll(-7),
    "roll(3,1)": lambda t: t.roll(3, 1),
    "roll(-2,0)": lambda t: t.roll(-2, 0),
    "roll((1,-3),(0,1))": lambda t: t.roll((1, -3), (0, 1)),
    "roll((2,3),(1,1))": lambda t: t.roll((2, 3), (1, 1)),
    "roll(big,-1)": lambda t: t.roll(10**15 + 3, -1),
    "roll(0,1)": lambda t: t.roll(0, 1),
}


@pytest.mark.parametrize("name", ROLLS)
@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_roll_as_torch(name, view, shape, dtype):
    r, t = _inputs(shape, dtype, view)
    f = ROLLS[name]
    _same(_on_threads(lambda: f(r)), f(t))


@pytest.mark.parametrize("dtype", DTYPES)
def test_flip_and_roll_of_3d_permuted_empty_and_0d_inputs(dtype):
    base = _arr((4, 6, 5), dtype)
    for perm in [(0, 1, 2), (2, 0, 1), (1, 2, 0)]:
        r, t = _pair(base)
        r, t = r.permute(*perm), t.permute(*perm)
        for f in (
            lambda x: x.flip(0, 2),
            lambda x: x.flip(1),
            lambda x: x.roll((1, 2, -1), (0, 1, 2)),
            lambda x: x.roll(4),
            lambda x: x.rot90(1, [0, 2]),
        ):
            _same(f(r), f(t))
    for shape in [(0, 3), (3, 0), (0,)]:
        r, t = _pair(_arr(shape, dtype))
        _same(r.flip(0), t.flip(0))
        _same(r.roll(2), t.roll(2))
        _same(r.roll(2, 0), t.roll(2, 0))
    r, t = _pair(_arr((), dtype))
    _same(r.flip([]), t.flip([]))
    _same(r.roll(3), t.roll(3))


TRIANGLES = {
    "tril": lambda t: t.tril(),
    "triu": lambda t: t.triu(),
    "tril(-2)": lambda t: t.tril(-2),
    "triu(1)": lambda t: t.triu(1),
    "tril(400)": lambda t: t.tril(400),
    "triu(-400)": lambda t: t.triu(-400),
    "triu(400)": lambda t: t.triu(400),
    "tril(-400)": lambda t: t.tril(-400),
}


@pytest.mark.parametrize("name", TRIANGLES)
@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_tril_triu_as_torch(name, view, shape, dtype):
    r, t = _inputs(shape, dtype, view)
    f = TRIANGLES[name]
    _same(_on_threads(lambda: f(r)), f(t))


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_tril_triu_of_batches_and_empty_inputs(upper, dtype):
    for shape in [(3, 4, 5), (2, 1, 3, 3), (0, 3, 3), (3, 0, 2), (2, 3, 0)]:
        r, t = _pair(_arr(shape, dtype))
        for k in (-1, 0, 2):
            _same(r.triu(k) if upper else r.tril(k), t.triu(k) if upper else t.tril(k))
    r, t = _pair(_arr((3, 4, 5), dtype))
    r, t = r.permute(2, 0, 1), t.permute(2, 0, 1)
    _same(r.triu(1) if upper else r.tril(1), t.triu(1) if upper else t.tril(1))


@pytest.mark.parametrize("view", ["contiguous", "transposed", "offset_strided", "batched_permuted"])
@pytest.mark.parametrize("shape", [(5, 7), (300, 257)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_tril_triu_in_place_write_only_the_zeros(view, shape, dtype):
    for name in ("tril_", "triu_"):
        for k in (0, -1, 3):
            r, t = _pair(_arr(shape, dtype))
            if view == "batched_permuted":
                r, t = r.reshape(shape[0], 1, shape[1]), t.reshape(shape[0], 1, shape[1])
                r, t = r.permute(1, 2, 0), t.permute(1, 2, 0)
            else:
                r, t = VIEWS[view](r), VIEWS[view](t)
            v0 = r._version
            out = _on_threads(lambda: getattr(r.clone(), name)(k))
            assert getattr(r, name)(k) is r
            getattr(t, name)(k)
            assert r._version == v0 + 1
            _same(r, t)
            assert np.ascontiguousarray(_np(out)).tobytes() == np.ascontiguousarray(_np(r)).tobytes()


def test_tril_in_place_of_an_expanded_tensor_as_torch():
    def go(T):
        x = T.arange(4.0).reshape(1, 4).expand(4, 4)
        try:
            x.tril_()
            return ("ok", x.tolist())
        except RuntimeError as e:
            return ("err", str(e).replace("torch.", "rgrad."))

    assert go(rgrad) == go(torch)


def test_tril_in_place_on_a_view_of_a_big_base_reaches_the_base():
    r, t = _pair(_arr((400, 300), "float32"))
    r[10:, 5:].triu_(2)
    t[10:, 5:].triu_(2)
    _same(r, t)


def _grad(T, x, f):
    x = x.detach().clone().requires_grad_()
    y = f(x)
    g = T.arange(float(y.numel()), dtype=y.dtype).reshape(y.shape)
    y.backward(g)
    return x.grad


@pytest.mark.parametrize(
    "f",
    [
        lambda x: x.flip(1),
        lambda x: x.flip(0, 1),
        lambda x: x.rot90(),
        lambda x: x.roll(5),
        lambda x: x.roll((3, -4), (1, 0)),
        lambda x: x.tril(1),
        lambda x: x.triu(-2),
    ],
)
def test_gradients_through_the_kernels_as_torch(f):
    r, t = _pair(_arr((300, 257), "float64"))
    _same(_on_threads(lambda: _grad(rgrad, r, f)), _grad(torch, t, f))
    r, t = _pair(_arr((3, 5), "float32"))
    _same(_grad(rgrad, r.t(), f), _grad(torch, t.t(), f))


NZ_SHAPES = [(), (1,), (7,), (0,), (3, 0), (1, 1), (5, 7), (3, 4, 5), (300, 257), (70000,), (2, 3, 40000)]


@pytest.mark.parametrize("shape", NZ_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_nonzero_and_argwhere_as_torch(shape, dtype):
    r, t = _pair(_arr(shape, dtype))
    _same(_on_threads(lambda: r.nonzero()), t.nonzero())
    _same(r.argwhere(), t.argwhere())
    a, b = r.nonzero(as_tuple=True), t.nonzero(as_tuple=True)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.tolist() == y.tolist()


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("shape", [(5, 7), (300, 257)])
def test_nonzero_of_views_and_special_floats_as_torch(view, shape):
    a = _arr(shape, "float32")
    a[0, :3] = [-0.0, np.nan, np.inf]
    r, t = _pair(a)
    r, t = VIEWS[view](r), VIEWS[view](t)
    _same(_on_threads(lambda: r.nonzero()), t.nonzero())
    _same(rgrad.argwhere(r), torch.argwhere(t))


def test_nonzero_of_all_and_no_elements():
    for fill in (0, 1):
        for shape in [(5, 7), (300, 257)]:
            r, t = _pair(np.full(shape, fill, dtype=np.int64))
            _same(_on_threads(lambda: r.nonzero()), t.nonzero())


MASKS = {
    # (x's shape, mask's shape): same, mask broadcast, x broadcast, both
    "same": ((5, 7), (5, 7)),
    "mask_row": ((5, 7), (1, 7)),
    "mask_col": ((6, 4), (6, 1)),
    "x_row": ((7,), (5, 7)),
    "both": ((5, 1), (1, 7)),
    "0d_mask": ((3, 4), ()),
    "0d_both": ((), ()),
    "empty": ((0, 3), (0, 3)),
    "one": ((1, 1), (1, 1)),
    "large": ((300, 257), (300, 257)),
    "large_mask_row": ((300, 257), (257,)),
}


@pytest.mark.parametrize("case", MASKS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_select_as_torch(case, dtype):
    xs, ms = MASKS[case]
    r, t = _pair(_arr(xs, dtype, seed=1))
    rm, tm = _pair(_arr(ms, "bool", seed=2))
    _same(_on_threads(lambda: r.masked_select(rm)), t.masked_select(tm))
    _same(rgrad.masked_select(r, rm), torch.masked_select(t, tm))


@pytest.mark.parametrize("view", VIEWS)
def test_masked_select_of_views_and_its_gradient_as_torch(view):
    r, t = _inputs((300, 257), "float64", view)
    # a transposed mask of x's shape
    rm, tm = _pair(_arr(tuple(r.shape)[::-1], "bool", seed=3))
    rm, tm = rm.t(), tm.t()
    _same(_on_threads(lambda: r.masked_select(rm)), t.masked_select(tm))
    _same(_grad(rgrad, r, lambda x: x.masked_select(rm)), _grad(torch, t, lambda x: x.masked_select(tm)))
    y = r.detach().requires_grad_().masked_select(rm)
    assert y.grad_fn.name() == "MaskedSelectBackward0"
