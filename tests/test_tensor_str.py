"""Tests for rgrad._tensor_str against known torch printing output.

The module is loaded straight from its file so that these tests run without
the native extension, using a small fake tensor built from nested lists.
"""

import importlib.util
import math
import pathlib
import struct

import pytest

_PATH = pathlib.Path(__file__).resolve().parents[1] / "python" / "rgrad" / "_tensor_str.py"
_spec = importlib.util.spec_from_file_location("rgrad_tensor_str", _PATH)
ts = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ts)

NAN = float("nan")
INF = float("inf")


class FakeDtype:
    def __init__(self, name):
        self.name = name
        self.is_floating_point = name.startswith(("float", "bfloat"))

    def __str__(self):
        return "rgrad." + self.name


class FakeGradFn:
    def __init__(self, name):
        self._name = name

    def name(self):
        return self._name


def _to_f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def _infer_shape(data):
    shape = []
    while isinstance(data, list):
        shape.append(len(data))
        if not data:
            break
        data = data[0]
    return tuple(shape)


def _map(data, fn):
    return [_map(x, fn) for x in data] if isinstance(data, list) else fn(data)


class FakeTensor:
    def __init__(self, data, dtype=None, shape=None, requires_grad=False, grad_fn=None):
        if dtype is None:
            flat = list(_iter(data))
            if flat and all(isinstance(x, bool) for x in flat):
                dtype = "bool"
            elif flat and all(isinstance(x, int) for x in flat):
                dtype = "int64"
            else:
                dtype = "float32"
        self.dtype = FakeDtype(dtype)
        if dtype == "float32":
            data = _map(data, lambda x: _to_f32(float(x)))
        elif self.dtype.is_floating_point:
            data = _map(data, float)
        self._data = data
        self.shape = tuple(shape) if shape is not None else _infer_shape(data)
        self.requires_grad = requires_grad or grad_fn is not None
        self.grad_fn = FakeGradFn(grad_fn) if grad_fn else None
        self.is_leaf = grad_fn is None
        self.tolist_calls = 0

    def tolist(self):
        self.tolist_calls += 1
        return self._data

    def dim(self):
        return len(self.shape)

    def numel(self):
        return math.prod(self.shape)


def _iter(data):
    if isinstance(data, list):
        for x in data:
            yield from _iter(x)
    else:
        yield data


def reshape(flat, shape):
    if len(shape) == 1:
        return list(flat)
    step = len(flat) // shape[0]
    return [reshape(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


def r(data, **kwargs):
    return ts.tensor_repr(FakeTensor(data, **kwargs))


@pytest.fixture(autouse=True)
def _reset_printoptions():
    ts.set_printoptions(profile="default")
    yield
    ts.set_printoptions(profile="default")


# --- outputs given in the brief -------------------------------------------------

BRIEF_CASES = [
    (dict(data=[[1.0, 1.0], [1.0, 1.0]], requires_grad=True),
     "tensor([[1., 1.],\n        [1., 1.]], requires_grad=True)"),
    (dict(data=[[3.0, 3.0], [3.0, 3.0]], grad_fn="AddBackward0"),
     "tensor([[3., 3.],\n        [3., 3.]], grad_fn=<AddBackward0>)"),
    (dict(data=27.0, grad_fn="MeanBackward0"), "tensor(27., grad_fn=<MeanBackward0>)"),
    (dict(data=[[4.5, 4.5], [4.5, 4.5]]), "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])"),
    (dict(data=[102.4, 1024.0, 0.1024]), "tensor([1.0240e+02, 1.0240e+03, 1.0240e-01])"),
    (dict(data=[144.7906, -929.8047, 1286.4860], grad_fn="MulBackward0"),
     "tensor([ 144.7906, -929.8047, 1286.4860], grad_fn=<MulBackward0>)"),
    (dict(data=[5.718282, 10.389056]), "tensor([ 5.7183, 10.3891])"),
    (dict(data=[22.085537, 56.59815]), "tensor([22.0855, 56.5981])"),
    (dict(data=[6.0, 11.0]), "tensor([ 6., 11.])"),
    (dict(data=[1.0]), "tensor([1.])"),
    (dict(data=[2.0, 2.0]), "tensor([2., 2.])"),
]


@pytest.mark.parametrize("kwargs,expected", BRIEF_CASES)
def test_brief_outputs(kwargs, expected):
    assert r(**kwargs) == expected


# --- float formatting -----------------------------------------------------------

@pytest.mark.parametrize("data,expected", [
    (2.5, "tensor(2.5000)"),
    (1e10, "tensor(1.0000e+10)"),
    (NAN, "tensor(nan)"),
    (-INF, "tensor(-inf)"),
    ([0.0, 0.0, 0.0], "tensor([0., 0., 0.])"),
    ([-0.0], "tensor([-0.])"),
    ([0.0, 0.5], "tensor([0.0000, 0.5000])"),
    ([0.0, 1e-5], "tensor([0.0000e+00, 1.0000e-05])"),
    ([1e-5, 1.0], "tensor([1.0000e-05, 1.0000e+00])"),
    ([-1e-5, 1e5], "tensor([-1.0000e-05,  1.0000e+05])"),
    ([1.0, 1000.0], "tensor([   1., 1000.])"),
    ([1.0, 1001.0], "tensor([1.0000e+00, 1.0010e+03])"),
    ([1e9], "tensor([1.0000e+09])"),
    ([NAN, 1.5], "tensor([   nan, 1.5000])"),
    ([NAN, 1.0], "tensor([nan, 1.])"),
    ([INF, -INF, 1.0], "tensor([inf, -inf, 1.])"),
    ([NAN, INF], "tensor([nan, inf])"),
    ([-1.5, 2.25, 100.125], "tensor([ -1.5000,   2.2500, 100.1250])"),
    ([0.1, 0.2, 0.3], "tensor([0.1000, 0.2000, 0.3000])"),
    ([1.0, -2.0, 3.0], "tensor([ 1., -2.,  3.])"),
])
def test_float_formatting(data, expected):
    assert r(data) == expected


def test_float32_rounding():
    # 0.1f32 == 0.100000001490116..., 1/3 in float32 == 0.3333333432674408
    assert r([1 / 3, 2 / 3]) == "tensor([0.3333, 0.6667])"
    assert r([1 / 3], dtype="float64") == "tensor([0.3333], dtype=rgrad.float64)"


# --- other dtypes ---------------------------------------------------------------

@pytest.mark.parametrize("kwargs,expected", [
    (dict(data=3), "tensor(3)"),
    (dict(data=True), "tensor(True)"),
    (dict(data=[-1, 10, 100]), "tensor([ -1,  10, 100])"),
    (dict(data=[[0, 0, 0], [0, 0, 0]]), "tensor([[0, 0, 0],\n        [0, 0, 0]])"),
    (dict(data=[True, False]), "tensor([ True, False])"),
    (dict(data=[[True], [False]]), "tensor([[ True],\n        [False]])"),
    (dict(data=[1, 2], dtype="int32"), "tensor([1, 2], dtype=rgrad.int32)"),
    (dict(data=[1.0, 2.0], dtype="float64"), "tensor([1., 2.], dtype=rgrad.float64)"),
    (dict(data=[1.0, 2.0], dtype="float64", grad_fn="MulBackward0"),
     "tensor([1., 2.], dtype=rgrad.float64, grad_fn=<MulBackward0>)"),
    (dict(data=5.0, dtype="float64", requires_grad=True),
     "tensor(5., dtype=rgrad.float64, requires_grad=True)"),
])
def test_dtypes(kwargs, expected):
    assert r(**kwargs) == expected


# --- empty tensors --------------------------------------------------------------

@pytest.mark.parametrize("shape,dtype,expected", [
    ((0,), "float32", "tensor([])"),
    ((0,), "float64", "tensor([], dtype=rgrad.float64)"),
    ((0,), "int64", "tensor([], dtype=rgrad.int64)"),
    ((0,), "bool", "tensor([], dtype=rgrad.bool)"),
    ((0, 3), "float32", "tensor([], size=(0, 3))"),
    ((2, 0), "float32", "tensor([], size=(2, 0))"),
    ((0, 3), "float64", "tensor([], size=(0, 3), dtype=rgrad.float64)"),
])
def test_empty(shape, dtype, expected):
    data = [[] for _ in range(shape[0])] if len(shape) == 2 else []
    assert r(data, shape=shape, dtype=dtype) == expected


def test_empty_requires_grad():
    assert r([], shape=(0,), requires_grad=True) == "tensor([], requires_grad=True)"


# --- multi-dimensional layout and wrapping --------------------------------------

def test_3d():
    expected = (
        "tensor([[[0., 0.],\n"
        "         [0., 0.]],\n"
        "\n"
        "        [[0., 0.],\n"
        "         [0., 0.]]])"
    )
    assert r(reshape([0.0] * 8, (2, 2, 2))) == expected


def test_4d_blank_lines():
    out = r(reshape(list(range(16)), (2, 2, 2, 2)))
    assert out.startswith("tensor([[[[ 0,  1],\n          [ 2,  3]],\n\n         [[ 4,  5],")
    assert "\n\n\n        [[[ 8,  9]," in out


def test_wrap_float_vector():
    expected = (
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
        "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
        "        28., 29.])"
    )
    assert r([float(i) for i in range(30)]) == expected


def test_wrap_int_vector():
    lines = r(list(range(100))).split("\n")
    assert lines[0] == "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,"
    assert lines[1] == "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,"
    assert lines[-1] == "        90, 91, 92, 93, 94, 95, 96, 97, 98, 99])"


def test_wrap_rows_of_matrix():
    lines = r(reshape([1.0] * 40, (2, 20))).split("\n")
    assert lines == [
        "tensor([[1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1.,",
        "         1., 1.],",
        "        [1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1.,",
        "         1., 1.]])",
    ]


def test_suffix_moves_to_new_line():
    data = [0.5, -0.25, 0.125, -0.0625, 0.75, -0.875, 0.375, -0.5]
    expected = (
        "tensor([ 0.5000, -0.2500,  0.1250, -0.0625,  0.7500, -0.8750,  0.3750, -0.5000],\n"
        "       requires_grad=True)"
    )
    assert r(data, requires_grad=True) == expected
    assert r(data[:7], grad_fn="AddBackward0") == (
        "tensor([ 0.5000, -0.2500,  0.1250, -0.0625,  0.7500, -0.8750,  0.3750],\n"
        "       grad_fn=<AddBackward0>)"
    )
    assert r(data[:6], requires_grad=True) == (
        "tensor([ 0.5000, -0.2500,  0.1250, -0.0625,  0.7500, -0.8750],\n"
        "       requires_grad=True)"
    )
    assert r(data[:5], requires_grad=True) == (
        "tensor([ 0.5000, -0.2500,  0.1250, -0.0625,  0.7500], requires_grad=True)"
    )


def test_suffix_after_multiline_data():
    out = r([float(i) for i in range(30)], dtype="float64", requires_grad=True)
    assert out.endswith("\n        28., 29.], dtype=rgrad.float64, requires_grad=True)")


# --- summarization --------------------------------------------------------------

def test_summarize_large_int_vector():
    expected = "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
    assert r(list(range(2000))) == expected


def test_summarize_threshold_option():
    ts.set_printoptions(threshold=5)
    assert r(list(range(10))) == "tensor([0, 1, 2,  ..., 7, 8, 9])"
    assert r(list(range(6))) == "tensor([0, 1, 2, 3, 4, 5])"  # numel > threshold, not > 2*edge


def test_summarize_matrix():
    expected = (
        "tensor([[   0,    1,    2,  ...,   97,   98,   99],\n"
        "        [ 100,  101,  102,  ...,  197,  198,  199],\n"
        "        [ 200,  201,  202,  ...,  297,  298,  299],\n"
        "        ...,\n"
        "        [9700, 9701, 9702,  ..., 9797, 9798, 9799],\n"
        "        [9800, 9801, 9802,  ..., 9897, 9898, 9899],\n"
        "        [9900, 9901, 9902,  ..., 9997, 9998, 9999]])"
    )
    assert r(reshape(list(range(10000)), (100, 100))) == expected


def test_summarize_3d():
    ts.set_printoptions(threshold=5)
    expected = (
        "tensor([[[ 0,  1],\n"
        "         [ 2,  3]],\n\n"
        "        [[ 4,  5],\n"
        "         [ 6,  7]],\n\n"
        "        [[ 8,  9],\n"
        "         [10, 11]],\n\n"
        "        ...,\n\n"
        "        [[16, 17],\n"
        "         [18, 19]],\n\n"
        "        [[20, 21],\n"
        "         [22, 23]],\n\n"
        "        [[24, 25],\n"
        "         [26, 27]]])"
    )
    assert r(reshape(list(range(28)), (7, 2, 2))) == expected


def test_summarized_width_ignores_hidden_values():
    data = [1.0] * 3 + [12345.5] * 1000 + [2.0] * 3
    assert r(data) == "tensor([1., 1., 1.,  ..., 2., 2., 2.])"


def test_summarize_calls_tolist_once():
    t = FakeTensor(list(range(5000)))
    ts.tensor_repr(t)
    assert t.tolist_calls == 1


# --- print options --------------------------------------------------------------

def test_default_printoptions():
    assert ts.get_printoptions() == {
        "precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None,
    }


def test_precision():
    ts.set_printoptions(precision=2)
    assert r([1.12345]) == "tensor([1.12])"
    ts.set_printoptions(profile="default")
    assert r([1.12345]) == "tensor([1.1235])"


def test_profiles():
    ts.set_printoptions(profile="short")
    assert ts.get_printoptions()["precision"] == 2
    assert ts.get_printoptions()["edgeitems"] == 2
    assert r([1.12345, 2.0]) == "tensor([1.12, 2.00])"
    assert r(list(range(2000))) == "tensor([   0,    1,  ..., 1998, 1999])"
    ts.set_printoptions(profile="full")
    assert ts.get_printoptions()["threshold"] == math.inf
    assert "..." not in r(list(range(2000)))


def test_profile_then_override():
    ts.set_printoptions(profile="short", precision=3)
    assert ts.get_printoptions()["precision"] == 3
    assert ts.get_printoptions()["edgeitems"] == 2


def test_sci_mode_forced_on():
    ts.set_printoptions(sci_mode=True)
    assert r([1.5, 2.5]) == "tensor([1.5000e+00, 2.5000e+00])"
    assert r([0.0]) == "tensor([0.])"  # no nonzero finite values: option ignored


def test_sci_mode_forced_off_keeps_sci_width():
    # torch measures the width in sci notation, then prints in fixed notation.
    ts.set_printoptions(sci_mode=False)
    assert r([1e-5, 1.0]) == "tensor([    0.0000,     1.0000])"


def test_sci_mode_reset_by_later_call():
    ts.set_printoptions(sci_mode=True)
    ts.set_printoptions(precision=4)
    assert ts.get_printoptions()["sci_mode"] is None


def test_linewidth():
    ts.set_printoptions(linewidth=20)
    assert r([1, 2, 3, 4, 5, 6]) == "tensor([1, 2, 3, 4,\n        5, 6])"
    ts.set_printoptions(linewidth=8)
    assert r([10, 20]) == "tensor([10,\n        20])"  # at least one per line


def test_edgeitems():
    ts.set_printoptions(threshold=5, edgeitems=1)
    assert r(list(range(10))) == "tensor([0,  ..., 9])"
