"""index_put_ written straight into the destination when nothing is recorded (issue 15's
data-movement work): the same results as the recorded path and as torch, on views,
strided and offset destinations, masks, several index tensors, duplicates with
accumulate, broadcast values and empty selections."""

import numpy as np
import pytest

import rgrad

try:
    import torch
except ImportError:  # pragma: no cover - CI installs torch
    torch = None


def _lib_cases(T):
    """(name, make destination, indices, values) built with library T."""
    def arange(*shape, dtype=None):
        n = int(np.prod(shape))
        return T.arange(n, dtype=dtype or T.float32).reshape(*shape)

    i = lambda *v: T.tensor(v)  # noqa: E731
    return [
        ("rows", lambda: arange(5, 3), (i(4, 0, 2),), arange(3, 3) * 10),
        ("negative", lambda: arange(5, 3), (i(-1, -5),), T.tensor([7.0, 8.0, 9.0])),
        ("transposed dest", lambda: arange(4, 6).t(), (i(1, 5),), arange(2, 4) + 100),
        ("offset view", lambda: arange(6, 5)[2:, 1:4], (i(0, 3), i(2, 0)), T.tensor([-1.0, -2.0])),
        ("middle dim", lambda: arange(3, 4, 2), (None, i(3, 1)), arange(3, 2, 2) - 50),
        ("non-adjacent", lambda: arange(3, 4, 5), (i(0, 2), None, i(4, 1)), arange(2, 4) + 0.5),
        ("mask", lambda: arange(4, 3), (arange(4, 3) % 3 == 1,), T.tensor(-3.0)),
        ("row mask", lambda: arange(4, 3), (T.tensor([True, False, True, False]),), T.tensor([1.0, 2.0, 3.0])),
        ("2-d index", lambda: arange(6, 2), (i(0, 5, 3, 1).reshape(2, 2),), T.tensor(4.0)),
        ("empty", lambda: arange(4, 3), (T.tensor([], dtype=T.int64),), T.tensor(1.0)),
        ("int64", lambda: arange(5, dtype=T.int64), (i(1, 3),), T.tensor([2**60 + 1, -7])),
        ("bool", lambda: T.zeros(5, dtype=T.bool), (i(0, 4),), T.tensor([True, True])),
    ]


CASES = _lib_cases(rgrad)
TORCH_CASES = {c[0]: c for c in _lib_cases(torch)} if torch is not None else {}


def _value(t):
    return t.tolist()


def _put(x, indices, values, accumulate):
    """index_put_, or `x[...] = values` where an index is None (a whole dim)."""
    if any(i is None for i in indices):
        x[tuple(slice(None) if i is None else i for i in indices)] = values
    else:
        x.index_put_(indices, values, accumulate=accumulate)


# (setitem, which a None index needs, has no accumulate)
RUNS = [(c, acc) for c in CASES for acc in (False, True) if not (acc and None in c[2])]


@pytest.mark.parametrize("case, accumulate", RUNS, ids=[f"{c[0]}-{acc}" for c, acc in RUNS])
def test_direct_path_matches_the_recorded_path_and_torch(case, accumulate):
    name, make, indices, values = case
    direct = make()
    v0 = direct._version
    _put(direct, indices, values, accumulate)
    assert direct._version == v0 + 1
    # the recorded path: the same op on a tensor that requires grad (a non-leaf)
    if direct.dtype.is_floating_point:
        leaf = make().detach().clone().requires_grad_()
        recorded = leaf * 1
        _put(recorded, indices, values, accumulate)
        assert _value(recorded) == _value(direct)
    if torch is not None:
        _, tmake, tindices, tvalues = TORCH_CASES[name]
        ref = tmake()
        _put(ref, tindices, tvalues, accumulate)
        assert _value(direct) == _value(ref)


def test_writes_land_in_the_base_of_a_view():
    base = rgrad.zeros(4, 5)
    view = base[1:, ::2]
    view.index_put_((rgrad.tensor([0, 2]), rgrad.tensor([1, 2])), rgrad.tensor([5.0, 6.0]))
    assert base[1, 2].item() == 5.0 and base[3, 4].item() == 6.0
    assert base.sum().item() == 11.0
    assert base._version == view._version == 1


def test_duplicates_accumulate_every_write():
    x = rgrad.zeros(3)
    x.index_put_((rgrad.tensor([0, 0, 2, 0]),), rgrad.tensor([1.0, 2.0, 3.0, 4.0]), accumulate=True)
    assert x.tolist() == [7.0, 0.0, 3.0]


def test_refusals_are_unchanged():
    x = rgrad.zeros(3)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x.index_put_((rgrad.tensor([3]),), rgrad.tensor([1.0]))
    with pytest.raises(RuntimeError, match="shape mismatch"):
        x.index_put_((rgrad.tensor([0, 1]),), rgrad.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
        x.index_put_((rgrad.tensor([0]),), rgrad.tensor([1]))
    assert x.tolist() == [0.0, 0.0, 0.0] and x._version == 0


def test_values_sharing_the_destinations_memory_are_refused_as_in_torch():
    msg = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
           "memory location. Please clone() the tensor before performing the operation.")
    x = rgrad.arange(4.0)
    with pytest.raises(RuntimeError) as e:
        x.index_put_((rgrad.tensor([1, 2, 3, 0]),), x)
    assert str(e.value) == msg
    y = rgrad.arange(6.0)
    with pytest.raises(RuntimeError) as e:
        y.index_put_((rgrad.tensor([0, 1, 2]),), y[3:])
    assert str(e.value) == msg
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0] and y.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    y.index_put_((rgrad.tensor([0, 1, 2]),), y[3:].clone())
    assert y.tolist() == [3.0, 4.0, 5.0, 3.0, 4.0, 5.0]


def test_setitem_and_no_grad_take_it():
    w = rgrad.ones(4, 3, requires_grad=True)
    with rgrad.no_grad():
        w[rgrad.tensor([0, 2])] = 0.0
    assert w.sum().item() == 6.0 and w.is_leaf and w.grad_fn is None
    z = rgrad.zeros(3, 3)
    z[rgrad.tensor([2, 0]), rgrad.tensor([1, 1])] = rgrad.tensor([4.0, 5.0])
    assert z.tolist() == [[0.0, 5.0, 0.0], [0.0, 0.0, 0.0], [0.0, 4.0, 0.0]]
