"""API-point tests for rgrad (`import rgrad as torch` must behave like torch).

Small exact examples; the math is in the comments.
"""

import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import rgrad as torch


@pytest.fixture(autouse=True)
def _restore_grad_mode():
    yield
    torch.set_grad_enabled(True)


# ======================================================================
# creation
# ======================================================================


class TestTensorConstructor:
    def test_float_list_is_float32(self):
        t = torch.tensor([1.5, 2.5])
        assert t.dtype == torch.float32
        assert t.tolist() == [1.5, 2.5]

    def test_int_list_is_int64(self):
        t = torch.tensor([1, 2, 3])
        assert t.dtype == torch.int64
        assert t.tolist() == [1, 2, 3]
        assert all(type(v) is int for v in t.tolist())

    def test_bool_list_is_bool(self):
        t = torch.tensor([True, False])
        assert t.dtype == torch.bool
        assert t.tolist() == [True, False]

    def test_mixed_int_float_is_float32(self):
        t = torch.tensor([1, 2.5])
        assert t.dtype == torch.float32
        assert t.tolist() == [1.0, 2.5]

    def test_nested_lists_shape(self):
        t = torch.tensor([[1, 2, 3], [4, 5, 6]])
        assert t.shape == (2, 3)
        assert t.tolist() == [[1, 2, 3], [4, 5, 6]]

    def test_scalar_is_0d(self):
        t = torch.tensor(3.5)
        assert t.shape == ()
        assert t.dim() == 0
        assert t.item() == 3.5

    def test_explicit_dtype(self):
        t = torch.tensor([1, 2], dtype=torch.float64)
        assert t.dtype == torch.float64
        assert t.tolist() == [1.0, 2.0]
        u = torch.tensor([1.7, -1.7], dtype=torch.int64)
        assert u.dtype == torch.int64
        assert u.tolist() == [1, -1]  # truncation toward zero

    def test_requires_grad_flag(self):
        t = torch.tensor([1.0], requires_grad=True)
        assert t.requires_grad is True
        assert t.is_leaf is True
        assert torch.tensor([1.0]).requires_grad is False

    def test_legacy_Tensor_constructor_is_float32(self):
        t = torch.Tensor([1, 2])
        assert t.dtype == torch.float32
        assert t.tolist() == [1.0, 2.0]
        m = torch.Tensor([[1, 2], [3, 4]])
        assert m.shape == (2, 2)
        assert m.dtype == torch.float32
        assert repr(torch.Tensor([1])) == "tensor([1.])"


class TestFactories:
    @pytest.mark.parametrize("args", [(2, 3), ((2, 3),), ([2, 3],)])
    def test_zeros_sizes(self, args):
        t = torch.zeros(*args)
        assert t.shape == (2, 3)
        assert t.dtype == torch.float32
        assert t.tolist() == [[0.0] * 3] * 2

    @pytest.mark.parametrize("args", [(2, 3), ((2, 3),)])
    def test_ones_sizes(self, args):
        t = torch.ones(*args)
        assert t.shape == (2, 3)
        assert t.tolist() == [[1.0] * 3] * 2

    def test_ones_dtype_and_requires_grad(self):
        t = torch.ones(2, dtype=torch.int64)
        assert t.dtype == torch.int64
        assert t.tolist() == [1, 1]
        g = torch.zeros(2, 2, requires_grad=True)
        assert g.requires_grad is True and g.is_leaf is True and g.grad_fn is None
        d = torch.ones((3,), dtype=torch.float64)
        assert d.dtype == torch.float64

    def test_full(self):
        t = torch.full((2, 2), 7.0)
        assert t.dtype == torch.float32
        assert t.tolist() == [[7.0, 7.0], [7.0, 7.0]]
        i = torch.full((3,), 7)  # an int fill value gives int64
        assert i.dtype == torch.int64
        assert i.tolist() == [7, 7, 7]
        d = torch.full((2,), 1.5, dtype=torch.float64)
        assert d.dtype == torch.float64 and d.tolist() == [1.5, 1.5]
        r = torch.full((2,), 0.5, requires_grad=True)
        assert r.requires_grad is True

    def test_empty(self):
        t = torch.empty(2, 3)
        assert t.shape == (2, 3)
        assert t.dtype == torch.float32
        e = torch.empty((4,), dtype=torch.int64)
        assert e.shape == (4,) and e.dtype == torch.int64
        r = torch.empty(2, requires_grad=True)
        assert r.requires_grad is True

    def test_like_functions(self):
        f = torch.tensor([[1.5, 2.5]], requires_grad=True)
        i = torch.tensor([1, 2, 3])
        z = torch.zeros_like(f)
        assert z.shape == (1, 2) and z.dtype == torch.float32 and z.tolist() == [[0.0, 0.0]]
        assert z.requires_grad is False  # like-functions do not copy requires_grad
        o = torch.ones_like(i)
        assert o.dtype == torch.int64 and o.tolist() == [1, 1, 1]
        fl = torch.full_like(i, 4)
        assert fl.dtype == torch.int64 and fl.tolist() == [4, 4, 4]
        ff = torch.full_like(f, 3)
        assert ff.dtype == torch.float32 and ff.tolist() == [[3.0, 3.0]]
        zd = torch.zeros_like(i, dtype=torch.float64)
        assert zd.dtype == torch.float64 and zd.tolist() == [0.0, 0.0, 0.0]

    def test_rand(self):
        torch.manual_seed(0)
        t = torch.rand(2, 3)
        assert t.shape == (2, 3) and t.dtype == torch.float32
        big = np.array(torch.rand(20000).tolist())
        assert big.min() >= 0.0 and big.max() < 1.0
        assert abs(big.mean() - 0.5) < 0.02

    def test_randn(self):
        torch.manual_seed(0)
        t = torch.randn(4, 5)
        assert t.shape == (4, 5) and t.dtype == torch.float32
        big = np.array(torch.randn(20000).tolist())
        assert abs(big.mean()) < 0.05
        assert abs(big.std() - 1.0) < 0.05
        assert torch.randn([3]).shape == (3,)  # size given as a list
        assert torch.randn((2, 2), requires_grad=True).requires_grad is True

    def test_randint(self):
        torch.manual_seed(0)
        t = torch.randint(0, 10, (200,))
        assert t.shape == (200,)
        assert t.dtype == torch.int64
        vals = t.tolist()
        assert min(vals) >= 0 and max(vals) < 10
        two = set(torch.randint(3, 5, (100,)).tolist())
        assert two == {3, 4}  # both values appear with overwhelming probability (1 - 2**-99)
        assert torch.randint(0, 5, (2, 3)).shape == (2, 3)

    def test_manual_seed_reproducible(self):
        torch.manual_seed(1234)
        a = torch.rand(5).tolist()
        b = torch.randn(5).tolist()
        torch.manual_seed(1234)
        assert torch.rand(5).tolist() == a
        assert torch.randn(5).tolist() == b
        torch.manual_seed(4321)
        assert torch.rand(5).tolist() != a

    def test_arange_int(self):
        t = torch.arange(5)
        assert t.dtype == torch.int64
        assert t.tolist() == [0, 1, 2, 3, 4]
        assert torch.arange(2, 8, 2).tolist() == [2, 4, 6]
        assert torch.arange(1, 4).tolist() == [1, 2, 3]

    def test_arange_float(self):
        t = torch.arange(0, 1, 0.25)  # any float argument -> float32
        assert t.dtype == torch.float32
        assert t.tolist() == [0.0, 0.25, 0.5, 0.75]
        f = torch.arange(3.0)
        assert f.dtype == torch.float32 and f.tolist() == [0.0, 1.0, 2.0]
        assert torch.arange(1, 2.5, 0.5).tolist() == [1.0, 1.5, 2.0]

    def test_linspace(self):
        t = torch.linspace(0, 1, 5)
        assert t.dtype == torch.float32
        assert t.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
        assert torch.linspace(-1, 1, 3).tolist() == [-1.0, 0.0, 1.0]

    def test_eye(self):
        assert torch.eye(3).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
        assert torch.eye(3).dtype == torch.float32
        assert torch.eye(2, 3).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]


class TestNumpyInterop:
    def test_from_numpy_float64(self):
        t = torch.from_numpy(np.array([1.5, 2.5]))
        assert t.dtype == torch.float64
        assert t.tolist() == [1.5, 2.5]

    def test_from_numpy_float32_2d(self):
        t = torch.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
        assert t.dtype == torch.float32
        assert t.shape == (2, 3)
        assert t.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]

    def test_from_numpy_int64_and_bool(self):
        t = torch.from_numpy(np.array([3, -4], dtype=np.int64))
        assert t.dtype == torch.int64 and t.tolist() == [3, -4]
        b = torch.from_numpy(np.array([True, False]))
        assert b.dtype == torch.bool and b.tolist() == [True, False]

    def test_numpy_method(self):
        a = torch.tensor([[1.0, 2.0], [3.0, 4.0]]).numpy()
        assert isinstance(a, np.ndarray)
        assert a.dtype == np.float32
        assert a.tolist() == [[1.0, 2.0], [3.0, 4.0]]
        assert torch.tensor([1, 2]).numpy().dtype == np.int64
        assert torch.tensor([True]).numpy().dtype == np.bool_
        assert torch.tensor([1.0], dtype=torch.float64).numpy().dtype == np.float64

    def test_numpy_requires_grad_raises(self):
        t = torch.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError) as info:
            t.numpy()
        assert str(info.value) == (
            "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
        )
        assert t.detach().numpy().tolist() == [1.0, 1.0]

    def test_np_asarray(self):
        t = torch.tensor([[1.0, 2.0]])
        a = np.asarray(t)
        assert a.dtype == np.float32
        assert a.shape == (1, 2)
        assert a.tolist() == [[1.0, 2.0]]
        assert np.asarray(torch.tensor([5, 6])).tolist() == [5, 6]


class TestScalarsAndLists:
    def test_tolist(self):
        assert torch.tensor([[1.0, 2.0], [3.0, 4.0]]).tolist() == [[1.0, 2.0], [3.0, 4.0]]
        v = torch.tensor(2.5).tolist()
        assert v == 2.5 and type(v) is float
        assert type(torch.tensor(7).tolist()) is int

    def test_item(self):
        a = torch.tensor(2.5).item()
        assert a == 2.5 and type(a) is float
        b = torch.tensor([3]).item()
        assert b == 3 and type(b) is int
        c = torch.tensor([[True]]).item()
        assert c is True

    def test_python_number_conversions(self):
        assert float(torch.tensor([2.5])) == 2.5
        assert int(torch.tensor(3.7)) == 3
        assert int(torch.tensor(-3.7)) == -3
        assert bool(torch.tensor(0.0)) is False
        assert bool(torch.tensor([1])) is True
        assert float(torch.tensor(4)) == 4.0


class TestDtypes:
    def test_aliases(self):
        assert torch.float is torch.float32
        assert torch.double is torch.float64
        assert torch.long is torch.int64

    def test_distinct(self):
        dts = [torch.float32, torch.float64, torch.int64, torch.bool]
        assert len({repr(d) for d in dts}) == 4
        for i, a in enumerate(dts):
            for j, b in enumerate(dts):
                assert (a == b) == (i == j)

    def test_conversions(self):
        t = torch.tensor([1.5, -2.7])
        assert t.to(torch.float64).dtype == torch.float64
        assert t.double().dtype == torch.float64
        assert t.long().dtype == torch.int64
        assert t.long().tolist() == [1, -2]  # truncation toward zero
        assert t.to(torch.int64).tolist() == [1, -2]
        i = torch.tensor([1, 2])
        assert i.float().dtype == torch.float32
        assert i.float().tolist() == [1.0, 2.0]
        assert t.to(torch.float32) is t  # same dtype: torch returns self
        assert t.float() is t


class TestTensorAttributes:
    def test_shape_size_dim(self):
        t = torch.zeros(2, 3, 4)
        assert t.shape == (2, 3, 4)
        assert isinstance(t.shape, tuple)
        assert t.size() == (2, 3, 4)
        assert t.size(1) == 3
        assert t.size(-1) == 4
        assert t.dim() == 3
        assert t.ndim == 3
        assert t.numel() == 24
        assert list(t.shape) == [2, 3, 4]

    def test_size_type(self):
        s = torch.zeros(2, 3).shape
        assert s == torch.Size([2, 3])
        assert s[0] == 2 and s[-1] == 3

    def test_T_and_device(self):
        t = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        assert t.T.shape == (3, 2)
        assert t.T.tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
        assert str(t.device) == "cpu"

    def test_clone_is_independent(self):
        t = torch.tensor([1.0, 2.0])
        c = t.clone()
        c[0] = 10.0
        assert t.tolist() == [1.0, 2.0]
        assert c.tolist() == [10.0, 2.0]

    def test_contiguous(self):
        t = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        assert t.is_contiguous() is True
        tt = t.t()
        assert tt.is_contiguous() is False
        c = tt.contiguous()
        assert c.is_contiguous() is True
        assert c.tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
        assert t.contiguous() is t  # already contiguous: torch returns self
        assert c.view(6).tolist() == [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]

    def test_len_and_iteration(self):
        t = torch.tensor([[1, 2], [3, 4], [5, 6]])
        assert len(t) == 3
        rows = [r.tolist() for r in t]
        assert rows == [[1, 2], [3, 4], [5, 6]]
        v = torch.tensor([1.5, 2.5])
        items = [e.item() for e in v]
        assert items == [1.5, 2.5]
        assert all(e.dim() == 0 for e in v)


# ======================================================================
# type promotion
# ======================================================================


class TestTypePromotion:
    def test_int64_plus_float32(self):
        r = torch.tensor([1, 2]) + torch.tensor([0.5, 0.5])
        assert r.dtype == torch.float32
        assert r.tolist() == [1.5, 2.5]

    def test_float32_plus_float64(self):
        r = torch.tensor([1.0]) + torch.tensor([2.0], dtype=torch.float64)
        assert r.dtype == torch.float64
        assert r.tolist() == [3.0]

    def test_float32_plus_python_float_stays_float32(self):
        r = torch.tensor([1.0]) + 0.5
        assert r.dtype == torch.float32
        assert r.tolist() == [1.5]

    def test_float64_plus_python_float_stays_float64(self):
        r = torch.tensor([1.0], dtype=torch.float64) * 0.5
        assert r.dtype == torch.float64

    def test_int64_times_python_float(self):
        r = torch.tensor([2, 3]) * 2.5
        assert r.dtype == torch.float32
        assert r.tolist() == [5.0, 7.5]

    def test_int64_plus_python_int_and_bool(self):
        r = torch.tensor([2, 3]) + 1
        assert r.dtype == torch.int64 and r.tolist() == [3, 4]
        b = torch.tensor([2, 3]) + True
        assert b.dtype == torch.int64 and b.tolist() == [3, 4]

    def test_bool_plus_bool_is_bool(self):
        r = torch.tensor([True, False, False]) + torch.tensor([True, True, False])
        assert r.dtype == torch.bool
        assert r.tolist() == [True, True, False]

    def test_int_true_division_is_float32(self):
        r = torch.tensor([1, 2]) / 2
        assert r.dtype == torch.float32
        assert r.tolist() == [0.5, 1.0]
        r2 = torch.tensor([3]) / torch.tensor([2])
        assert r2.dtype == torch.float32 and r2.tolist() == [1.5]

    def test_zero_dim_does_not_widen_dimensioned(self):
        # a 0-dim float64 tensor does not promote a 1-d float32 tensor (same category)
        r = torch.tensor([1.0, 2.0]) + torch.tensor(1.0, dtype=torch.float64)
        assert r.dtype == torch.float32
        assert r.tolist() == [2.0, 3.0]

    def test_comparison_gives_bool(self):
        r = torch.tensor([1.0, 3.0]) > 2
        assert r.dtype == torch.bool
        assert r.tolist() == [False, True]


# ======================================================================
# views share storage
# ======================================================================


class TestViewsShareStorage:
    def test_transpose(self):
        a = torch.zeros(2, 3)
        t = a.transpose(0, 1)
        t[0, 1] = 5.0  # t[0, 1] is a[1, 0]
        assert a.tolist() == [[0.0, 0.0, 0.0], [5.0, 0.0, 0.0]]

    def test_permute(self):
        a = torch.zeros(2, 3, 4)
        p = a.permute(2, 0, 1)
        assert p.shape == (4, 2, 3)
        p[3, 1, 2] = 7.0  # p[k, i, j] is a[i, j, k]
        assert a[1, 2, 3].item() == 7.0
        assert a.sum().item() == 7.0

    def test_t(self):
        a = torch.zeros(2, 3)
        a.t()[2, 0] = 1.0  # a.t()[2, 0] is a[0, 2]
        assert a.tolist() == [[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]

    def test_slice_with_step(self):
        a = torch.arange(8.0)
        s = a[::2]
        assert s.tolist() == [0.0, 2.0, 4.0, 6.0]
        s[1] = -1.0  # s[1] is a[2]
        s.mul_(10)  # a[0], a[2], a[4], a[6] *= 10
        assert a.tolist() == [0.0, 1.0, -10.0, 3.0, 40.0, 5.0, 60.0, 7.0]

    def test_slice_2d(self):
        a = torch.zeros(3, 4)
        a[1:, ::3] = 2.0  # rows 1..2, columns 0 and 3
        assert a.tolist() == [[0.0] * 4, [2.0, 0.0, 0.0, 2.0], [2.0, 0.0, 0.0, 2.0]]

    def test_expand_sees_base_writes(self):
        a = torch.zeros(3, 1)
        e = a.expand(3, 4)
        assert e.shape == (3, 4)
        a[1, 0] = 5.0
        assert e.tolist() == [[0.0] * 4, [5.0] * 4, [0.0] * 4]

    def test_view_and_reshape_of_contiguous(self):
        a = torch.zeros(6)
        v = a.view(2, 3)
        v[1, 2] = 4.0  # flat index 5
        r = a.reshape(3, 2)
        r[0, 1] = 3.0  # flat index 1
        assert a.tolist() == [0.0, 3.0, 0.0, 0.0, 0.0, 4.0]
        assert a.view(-1, 2).shape == (3, 2)

    def test_detach_shares_storage(self):
        a = torch.ones(3, requires_grad=True)
        b = a.detach()
        b[0] = 9.0
        assert a.tolist() == [9.0, 1.0, 1.0]
        assert b.requires_grad is False

    def test_fill_view_of_leaf_under_no_grad(self):
        x = torch.zeros(4, requires_grad=True)
        with torch.no_grad():
            x[1:3].fill_(5.0)
        assert x.tolist() == [0.0, 5.0, 5.0, 0.0]
        assert x.is_leaf and x.requires_grad

    def test_select_row_view(self):
        a = torch.zeros(2, 2)
        row = a[0]
        row.add_(1.0)
        assert a.tolist() == [[1.0, 1.0], [0.0, 0.0]]


# ======================================================================
# autograd attributes
# ======================================================================

NODE_RE = r"<{} object at 0x[0-9a-fA-F]+>"


class TestRequiresGrad:
    def test_setter_on_non_leaf_raises(self):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        with pytest.raises(RuntimeError) as info:
            y.requires_grad = False
        assert str(info.value) == (
            "you can only change requires_grad flags of leaf variables. If you want to use a "
            "computed variable in a subgraph that doesn't require differentiation use "
            "var_no_grad = var.detach()."
        )
        assert y.requires_grad is True

    def test_setter_on_leaf(self):
        x = torch.tensor([1.0])
        x.requires_grad = True
        assert x.requires_grad is True
        assert (x * 2).requires_grad is True
        x.requires_grad = False
        assert (x * 2).requires_grad is False

    def test_requires_grad_underscore_returns_self(self):
        x = torch.tensor([1.0])
        assert x.requires_grad_() is x
        assert x.requires_grad is True
        assert x.requires_grad_(False) is x
        assert x.requires_grad is False

    def test_is_leaf(self):
        x = torch.tensor([1.0], requires_grad=True)
        assert x.is_leaf is True
        assert (x * 2).is_leaf is False
        # tensors that do not require grad are leaves by convention
        c = torch.tensor([1.0]) * 2
        assert c.is_leaf is True
        with torch.no_grad():
            assert (x * 2).is_leaf is True


class TestGradAttribute:
    def test_grad_none_until_backward(self):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        assert x.grad is None
        (x * 3).sum().backward()
        # d/dx sum(3x) = 3
        assert x.grad.tolist() == [3.0, 3.0]
        assert x.grad.requires_grad is False
        assert x.grad.grad_fn is None

    def test_grad_settable(self):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        x.grad = torch.tensor([10.0, 20.0])
        assert x.grad.tolist() == [10.0, 20.0]
        (x * 2).sum().backward()
        # accumulates into the grad that was set: [10, 20] + 2
        assert x.grad.tolist() == [12.0, 22.0]
        x.grad = None
        assert x.grad is None

    def test_grad_accumulates_across_backward_calls(self):
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = (x * x).sum()
        y.backward(retain_graph=True)
        # d/dx sum(x^2) = 2x = [2, 4, 6]
        assert x.grad.tolist() == [2.0, 4.0, 6.0]
        y.backward()
        # accumulated: 4x
        assert x.grad.tolist() == [4.0, 8.0, 12.0]

    def test_grad_zero_(self):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
        x.grad.zero_()
        assert x.grad.tolist() == [0.0, 0.0]
        (x * 5).sum().backward()
        assert x.grad.tolist() == [5.0, 5.0]


class TestGradFn:
    def test_leaf_grad_fn_none(self):
        assert torch.tensor([1.0], requires_grad=True).grad_fn is None
        assert torch.tensor([1.0]).grad_fn is None

    def test_name_and_repr(self):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * x
        assert y.grad_fn.name() == "MulBackward0"
        assert __import__("re").fullmatch(NODE_RE.format("MulBackward0"), repr(y.grad_fn))
        assert type(y.grad_fn).__name__ == "MulBackward0"

    @pytest.mark.parametrize(
        "name, fn",
        [
            ("AddBackward0", lambda x, m: x + x),
            ("SubBackward0", lambda x, m: x - 1),
            ("MulBackward0", lambda x, m: x * 3),
            ("DivBackward0", lambda x, m: x / 2),
            ("NegBackward0", lambda x, m: -x),
            ("PowBackward0", lambda x, m: x**2),
            ("ExpBackward0", lambda x, m: x.exp()),
            ("LogBackward0", lambda x, m: x.log()),
            ("TanhBackward0", lambda x, m: x.tanh()),
            ("SigmoidBackward0", lambda x, m: x.sigmoid()),
            ("ReluBackward0", lambda x, m: x.relu()),
            ("SumBackward0", lambda x, m: x.sum()),
            ("SumBackward1", lambda x, m: m.sum(0)),
            ("MeanBackward0", lambda x, m: x.mean()),
            ("MmBackward0", lambda x, m: m @ m),
            ("TBackward0", lambda x, m: m.t()),
            ("ViewBackward0", lambda x, m: m.view(4)),
            ("CloneBackward0", lambda x, m: x.clone()),
            ("SelectBackward0", lambda x, m: x[0]),
            ("SliceBackward0", lambda x, m: x[1:]),
        ],
    )
    def test_node_names(self, name, fn):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        m = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        assert fn(x, m).grad_fn.name() == name

    def test_next_functions_leaves_are_accumulate_grad(self):
        x = torch.tensor([1.0], requires_grad=True)
        y = torch.tensor([2.0], requires_grad=True)
        nf = (x * y).grad_fn.next_functions
        assert isinstance(nf, tuple) and len(nf) == 2
        for node, idx in nf:
            assert type(node).__name__ == "AccumulateGrad"
            assert __import__("re").fullmatch(NODE_RE.format("AccumulateGrad"), repr(node))
            assert idx == 0

    def test_accumulate_grad_variable(self):
        x = torch.tensor([1.0], requires_grad=True)
        y = torch.tensor([2.0], requires_grad=True)
        nf = (x * y).grad_fn.next_functions
        assert nf[0][0].variable is x
        assert nf[1][0].variable is y

    def test_next_functions_constant_tensor_is_none(self):
        x = torch.tensor([1.0], requires_grad=True)
        c = torch.tensor([2.0])
        nf = (x * c).grad_fn.next_functions
        assert len(nf) == 2
        assert type(nf[0][0]).__name__ == "AccumulateGrad"
        assert nf[1] == (None, 0)

    def test_next_functions_python_scalar_is_none(self):
        # a python scalar operand is wrapped as a constant input: (None, 0)
        x = torch.tensor([1.0], requires_grad=True)
        nf = (x * 2).grad_fn.next_functions
        assert len(nf) == 2
        assert nf[1] == (None, 0)

    def test_next_functions_chain(self):
        x = torch.tensor([1.0], requires_grad=True)
        y = torch.tensor([2.0], requires_grad=True)
        w = (x * y) + x
        nf = w.grad_fn.next_functions
        assert w.grad_fn.name() == "AddBackward0"
        assert nf[0][0].name() == "MulBackward0"
        assert nf[0][1] == 0
        assert type(nf[1][0]).__name__ == "AccumulateGrad"
        inner = nf[0][0].next_functions
        assert [type(n).__name__ for n, _ in inner] == ["AccumulateGrad", "AccumulateGrad"]
        # one element: sum has a single input
        assert len(w.sum().grad_fn.next_functions) == 1


class TestDetach:
    def test_detach(self):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        d = y.detach()
        assert d.requires_grad is False
        assert d.grad_fn is None
        assert d.is_leaf is True
        assert d.tolist() == [2.0, 4.0]
        d[0] = 100.0  # shares storage with y
        assert y.tolist() == [100.0, 4.0]

    def test_detach_in_place_returns_same_object(self):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        r = y.detach_()
        assert r is y
        assert y.requires_grad is False
        assert y.grad_fn is None
        assert y.is_leaf is True


class TestRetainGrad:
    def test_retain_grad(self):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        assert y.retains_grad is False
        y.retain_grad()
        assert y.retains_grad is True
        assert x.retains_grad is False  # leaves never "retain" (they always get .grad)
        z = (y * y).sum()
        z.backward()
        # z = sum(y^2): dz/dy = 2y = [6, 12]; dz/dx = 3 * 2y = [18, 36]
        assert y.grad.tolist() == [6.0, 12.0]
        assert x.grad.tolist() == [18.0, 36.0]


class TestHooks:
    def test_hook_return_replaces_grad(self):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        x.register_hook(lambda g: g * 3)
        (x * 2).sum().backward()
        # grad 2 replaced by 2 * 3
        assert x.grad.tolist() == [6.0, 6.0]

    def test_hook_returning_none_keeps_grad(self):
        seen = []
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        x.register_hook(lambda g: seen.append(g.tolist()))
        (x * x).sum().backward()
        assert seen == [[2.0, 4.0]]
        assert x.grad.tolist() == [2.0, 4.0]

    def test_leaf_hook_runs_before_accumulation(self):
        seen = []

        def hook(g):
            seen.append(g.tolist())
            return g * 10

        x = torch.tensor([1.0, 2.0], requires_grad=True)
        x.grad = torch.tensor([1.0, 1.0])
        x.register_hook(hook)
        (x * 2).sum().backward()
        # the hook sees the fresh gradient 2 (not 1 + 2) and its result 20 is accumulated
        assert seen == [[2.0, 2.0]]
        assert x.grad.tolist() == [21.0, 21.0]

    def test_non_leaf_hook(self):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: g * 10)
        (y * y).sum().backward()
        # dL/dy = 2y = [4, 8] -> hooked to [40, 80]; dL/dx = 2 * [40, 80]
        assert x.grad.tolist() == [80.0, 160.0]

    def test_handle_remove(self):
        calls = []
        x = torch.tensor([1.0], requires_grad=True)
        h = x.register_hook(lambda g: calls.append(1) or g * 100)
        (x * 1).sum().backward()
        assert x.grad.tolist() == [100.0]
        h.remove()
        (x * 1).sum().backward()
        assert x.grad.tolist() == [101.0]
        assert calls == [1]

    def test_multiple_hooks_chain_in_order(self):
        x = torch.tensor([1.0], requires_grad=True)
        x.register_hook(lambda g: g + 1)
        x.register_hook(lambda g: g * 10)
        (x * 2).sum().backward()
        # (2 + 1) * 10
        assert x.grad.tolist() == [30.0]

    def test_register_hook_on_no_grad_tensor_raises(self):
        with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
            torch.tensor([1.0]).register_hook(lambda g: g)


class TestBackward:
    def test_gradient_argument(self):
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * x
        y.backward(torch.tensor([1.0, 0.5, 2.0]))
        # vjp: v * 2x = [2, 2, 12]
        assert x.grad.tolist() == [2.0, 2.0, 12.0]

    def test_retain_graph(self):
        x = torch.tensor([2.0], requires_grad=True)
        y = x.exp()
        y.backward(retain_graph=True)
        first = x.grad.tolist()
        y.backward()
        assert x.grad.tolist() == [2 * first[0]]

    def test_create_graph_gives_differentiable_grad(self):
        x = torch.tensor([2.0], requires_grad=True)
        y = x**3
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns about the reference cycle
            y.backward(create_graph=True)
        # dy/dx = 3x^2 = 12
        g = x.grad
        assert g.tolist() == [12.0]
        assert g.requires_grad is True
        x.grad = None
        g.backward()
        # d/dx 3x^2 = 6x = 12
        assert x.grad.tolist() == [12.0]

    def test_inputs_restricts_accumulation(self):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = torch.tensor([3.0, 4.0], requires_grad=True)
        z = (x * y).sum()
        z.backward(inputs=[x])
        # dz/dx = y
        assert x.grad.tolist() == [3.0, 4.0]
        assert y.grad is None

    def test_backward_on_one_element_non_scalar(self):
        x = torch.tensor([[3.0]], requires_grad=True)
        (x * x).backward()
        assert x.grad.tolist() == [[6.0]]

    def test_autograd_backward_single_and_grad_tensors(self):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        torch.autograd.backward(x * 4, grad_tensors=torch.tensor([1.0, 0.5]))
        assert x.grad.tolist() == [4.0, 2.0]

    def test_autograd_backward_list_of_tensors(self):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        torch.autograd.backward([(x * 2).sum(), (x * 3).sum()])
        # 2 + 3
        assert x.grad.tolist() == [5.0, 5.0]

    def test_autograd_backward_list_with_grad_tensors(self):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        torch.autograd.backward([x * 2, x * x], grad_tensors=[torch.ones(2), torch.ones(2)])
        # 2 + 2x = [4, 6]
        assert x.grad.tolist() == [4.0, 6.0]

    def test_autograd_backward_inputs(self):
        x = torch.tensor([1.0], requires_grad=True)
        y = torch.tensor([2.0], requires_grad=True)
        torch.autograd.backward((x * y).sum(), inputs=[y])
        assert y.grad.tolist() == [1.0]
        assert x.grad is None


class TestAutogradGrad:
    def test_basic(self):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        res = torch.autograd.grad((x * x).sum(), x)
        assert isinstance(res, tuple) and len(res) == 1
        assert res[0].tolist() == [2.0, 4.0]
        assert x.grad is None  # grad() does not accumulate into .grad

    def test_grad_outputs(self):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        (g,) = torch.autograd.grad(x * x, x, grad_outputs=torch.tensor([3.0, 0.5]))
        # [3, 0.5] * 2x = [6, 2]
        assert g.tolist() == [6.0, 2.0]

    def test_retain_graph(self):
        x = torch.tensor([1.0], requires_grad=True)
        y = x.exp()
        (a,) = torch.autograd.grad(y, x, retain_graph=True)
        (b,) = torch.autograd.grad(y, x)
        assert a.tolist() == b.tolist()

    def test_multiple_inputs_and_outputs(self):
        x = torch.tensor([2.0], requires_grad=True)
        y = torch.tensor([5.0], requires_grad=True)
        gx, gy = torch.autograd.grad([x * y, x + y], [x, y])
        # d(xy + x + y)/dx = y + 1 = 6; /dy = x + 1 = 3
        assert gx.tolist() == [6.0]
        assert gy.tolist() == [3.0]

    def test_second_derivative(self):
        x = torch.tensor([3.0], requires_grad=True)
        y = x**3
        (g,) = torch.autograd.grad(y, x, create_graph=True)
        # dy/dx = 3x^2 = 27
        assert g.tolist() == [27.0]
        assert g.requires_grad is True
        (g2,) = torch.autograd.grad(g, x)
        # d2y/dx2 = 6x = 18
        assert g2.tolist() == [18.0]

    def test_third_derivative(self):
        x = torch.tensor([2.0], requires_grad=True)
        (g1,) = torch.autograd.grad(x**4, x, create_graph=True)  # 4x^3 = 32
        (g2,) = torch.autograd.grad(g1, x, create_graph=True)  # 12x^2 = 48
        (g3,) = torch.autograd.grad(g2, x)  # 24x = 48
        assert (g1.item(), g2.item(), g3.item()) == (32.0, 48.0, 48.0)

    def test_allow_unused(self):
        x = torch.tensor([1.0], requires_grad=True)
        u = torch.tensor([1.0], requires_grad=True)
        gx, gu = torch.autograd.grad((x * 2).sum(), [x, u], allow_unused=True)
        assert gx.tolist() == [2.0]
        assert gu is None

    def test_materialize_grads(self):
        x = torch.tensor([1.0], requires_grad=True)
        u = torch.tensor([1.0, 2.0], requires_grad=True)
        gx, gu = torch.autograd.grad((x * 2).sum(), [x, u], allow_unused=True, materialize_grads=True)
        assert gx.tolist() == [2.0]
        assert gu.tolist() == [0.0, 0.0]

    def test_non_leaf_inputs(self):
        # seed 004: c = 2a + 3b + 1, d = 2c + 1
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        b = torch.tensor([1.0, 2.0], requires_grad=True)
        c = 2 * a + 3 * b + 1
        d = 2 * c + 1
        ga, gb, gc = torch.autograd.grad(d, (a, b, c), torch.tensor([1.0, 1.0]))
        assert ga.tolist() == [4.0, 4.0]
        assert gb.tolist() == [6.0, 6.0]
        assert gc.tolist() == [2.0, 2.0]


# ======================================================================
# grad modes
# ======================================================================


class TestGradModes:
    def test_default_enabled(self):
        assert torch.is_grad_enabled() is True

    def test_no_grad_context(self):
        x = torch.tensor([1.0], requires_grad=True)
        with torch.no_grad():
            assert torch.is_grad_enabled() is False
            y = x * 2
        assert torch.is_grad_enabled() is True
        assert y.requires_grad is False and y.grad_fn is None

    def test_no_grad_decorator(self):
        @torch.no_grad()
        def f(x):
            return x * 2, torch.is_grad_enabled()

        y, mode = f(torch.tensor([1.0], requires_grad=True))
        assert mode is False and y.requires_grad is False
        assert torch.is_grad_enabled() is True

    def test_no_grad_plain_call_changes_nothing(self):
        torch.no_grad()
        assert torch.is_grad_enabled() is True

    def test_no_grad_restored_after_exception(self):
        with pytest.raises(ValueError):
            with torch.no_grad():
                raise ValueError("x")
        assert torch.is_grad_enabled() is True

    def test_enable_grad(self):
        x = torch.tensor([1.0], requires_grad=True)
        with torch.no_grad():
            with torch.enable_grad():
                assert torch.is_grad_enabled() is True
                y = x * 2
            assert torch.is_grad_enabled() is False
        assert y.requires_grad is True

        @torch.enable_grad()
        def f(x):
            return x * 2

        with torch.no_grad():
            assert f(x).requires_grad is True

    def test_set_grad_enabled_context(self):
        with torch.set_grad_enabled(False):
            assert torch.is_grad_enabled() is False
            with torch.set_grad_enabled(True):
                assert torch.is_grad_enabled() is True
            assert torch.is_grad_enabled() is False
        assert torch.is_grad_enabled() is True

    def test_set_grad_enabled_plain_call(self):
        torch.set_grad_enabled(False)
        try:
            assert torch.is_grad_enabled() is False
            assert (torch.tensor([1.0], requires_grad=True) * 2).requires_grad is False
        finally:
            torch.set_grad_enabled(True)
        assert torch.is_grad_enabled() is True

    def test_set_grad_enabled_repr_names_class_and_mode(self):
        # torch: torch.autograd.grad_mode.set_grad_enabled(mode=True), what a REPL echoes after a plain call
        try:
            assert repr(torch.set_grad_enabled(False)) == "rgrad.autograd.grad_mode.set_grad_enabled(mode=False)"
            assert str(torch.set_grad_enabled(True)) == "rgrad.autograd.grad_mode.set_grad_enabled(mode=True)"
        finally:
            torch.set_grad_enabled(True)

    def test_set_grad_enabled_decorator(self):
        @torch.set_grad_enabled(False)
        def f():
            return torch.is_grad_enabled()

        assert torch.is_grad_enabled() is True  # decorating does not change the mode
        assert f() is False
        assert torch.is_grad_enabled() is True

    def test_inference_mode_context(self):
        x = torch.tensor([1.0], requires_grad=True)
        with torch.inference_mode():
            assert torch.is_grad_enabled() is False
            y = x * 2
        assert y.requires_grad is False
        assert y.tolist() == [2.0]
        assert torch.is_grad_enabled() is True

    def test_backward_under_inference_mode_records_nothing(self):
        # torch runs backward with the caller's thread-local state: create_graph=True
        # inside inference_mode gives a gradient without history (checked against torch)
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        with torch.inference_mode():
            (g,) = torch.autograd.grad(y, x, create_graph=True, retain_graph=True)
        assert g.tolist() == [2.0, 4.0] and g.requires_grad is False and g.grad_fn is None
        with torch.no_grad():  # grad mode alone does not stop create_graph
            (g,) = torch.autograd.grad(y, x, create_graph=True)
        assert g.requires_grad is True and type(g.grad_fn).__name__ == "AddBackward0"  # as torch

    def test_inference_mode_decorator(self):
        @torch.inference_mode()
        def f(x):
            return x * 3

        y = f(torch.tensor([1.0], requires_grad=True))
        assert y.requires_grad is False and y.tolist() == [3.0]
        assert torch.is_grad_enabled() is True

    def test_grad_mode_is_thread_local(self):
        x = torch.tensor([1.0], requires_grad=True)
        ready, go = threading.Event(), threading.Event()
        res = {}

        def worker():
            try:
                with torch.set_grad_enabled(False):
                    res["inside"] = torch.is_grad_enabled()
                    ready.set()
                    go.wait(10)
                    res["req"] = (x * 2).requires_grad
            except BaseException as e:  # pragma: no cover - reported below
                res["error"] = e
                ready.set()

        th = threading.Thread(target=worker)
        th.start()
        assert ready.wait(10)
        # the other thread disabled grad: this one is unaffected
        assert torch.is_grad_enabled() is True
        assert (x * 2).requires_grad is True
        go.set()
        th.join(10)
        assert "error" not in res, res.get("error")
        assert res == {"inside": False, "req": False}
        assert torch.is_grad_enabled() is True

    def test_new_thread_starts_with_grad_enabled(self):
        res = {}

        def worker():
            res["mode"] = torch.is_grad_enabled()

        with torch.no_grad():
            th = threading.Thread(target=worker)
            th.start()
            th.join(10)
            assert torch.is_grad_enabled() is False
        assert res == {"mode": True}


# ======================================================================
# in-place ops on non-leaf tensors
# ======================================================================


def _x():
    return torch.tensor([1.0, 2.0, 3.0], requires_grad=True)


class TestInPlaceAutograd:
    def test_add_(self):
        x = _x()
        y = x * 2
        y.add_(x)  # y = 3x
        y.sum().backward()
        assert x.grad.tolist() == [3.0, 3.0, 3.0]

    def test_add_scalar_alpha(self):
        x = _x()
        y = x * 1
        y.add_(x, alpha=2)  # y = x + 2x
        y.sum().backward()
        assert x.grad.tolist() == [3.0, 3.0, 3.0]

    def test_sub_(self):
        x = _x()
        y = x * 3
        y.sub_(x)  # y = 2x
        y.sum().backward()
        assert x.grad.tolist() == [2.0, 2.0, 2.0]

    def test_mul_(self):
        x = _x()
        y = x + 0
        y.mul_(x)  # y = x^2 -> 2x
        y.sum().backward()
        assert x.grad.tolist() == [2.0, 4.0, 6.0]

    def test_div_scalar(self):
        x = _x()
        y = x * 4
        y.div_(2)  # y = 2x
        y.sum().backward()
        assert x.grad.tolist() == [2.0, 2.0, 2.0]

    def test_div_tensor(self):
        x = _x()
        y = x * x
        y.div_(x)  # y = x^2 / x: d/dx = 2x/x - x^2/x^2 = 1
        y.sum().backward()
        assert x.grad.tolist() == [1.0, 1.0, 1.0]

    def test_zero_(self):
        x = _x()
        y = x * 2
        y.zero_()
        (y + x).sum().backward()  # y no longer depends on x
        assert x.grad.tolist() == [1.0, 1.0, 1.0]

    def test_fill_(self):
        x = _x()
        y = x * 2
        y.fill_(5.0)
        (y * x).sum().backward()  # d/dx (5 * x) = 5
        assert x.grad.tolist() == [5.0, 5.0, 5.0]

    def test_clamp_(self):
        x = torch.tensor([-1.0, 0.5, 2.0], requires_grad=True)
        y = x * 1
        y.clamp_(0.0, 1.0)
        assert y.tolist() == [0.0, 0.5, 1.0]
        y.sum().backward()
        # gradient 1 only where min < x < max
        assert x.grad.tolist() == [0.0, 1.0, 0.0]

    def test_copy_into_fresh_tensor(self):
        x = _x()
        y = torch.zeros(3)
        y.copy_(x * 2)
        assert y.requires_grad is True
        assert y.tolist() == [2.0, 4.0, 6.0]
        y.sum().backward()
        assert x.grad.tolist() == [2.0, 2.0, 2.0]

    def test_copy_into_slice(self):
        x = _x()
        y = torch.zeros(3)
        y[1:].copy_(x[:2] * 3)  # y = [0, 3x0, 3x1]
        (y * y).sum().backward()  # d/dx0 9x0^2 = 18x0, d/dx1 = 18x1
        assert x.grad.tolist() == [18.0, 36.0, 0.0]

    def test_relu_(self):
        x = torch.tensor([-1.0, 2.0, 3.0], requires_grad=True)
        y = x * 1
        y.relu_()
        assert y.tolist() == [0.0, 2.0, 3.0]
        y.sum().backward()
        assert x.grad.tolist() == [0.0, 1.0, 1.0]

    def test_setitem_on_clone(self):
        x = _x()
        y = x.clone()
        y[0] = 0
        y.sum().backward()
        assert x.grad.tolist() == [0.0, 1.0, 1.0]

    def test_setitem_with_tensor_value(self):
        x = _x()
        y = x * 1
        y[0] = x[1] * 5  # y = [5 x1, x1, x2]
        y.sum().backward()
        assert x.grad.tolist() == [0.0, 6.0, 1.0]

    def test_view_in_place(self):
        x = _x()
        y = x * 1
        y[1:] *= 2  # y = [x0, 2x1, 2x2]
        assert y.tolist() == [1.0, 4.0, 6.0]
        y.sum().backward()
        assert x.grad.tolist() == [1.0, 2.0, 2.0]

    def test_in_place_result_then_more_ops(self):
        x = _x()
        y = x * x  # MulBackward0 saves x, not y: y may be modified in place
        y.mul_(2)  # y = 2x^2
        z = (y * x).sum()  # z = 2x^3 -> dz/dx = 6x^2
        z.backward()
        assert x.grad.tolist() == [6.0, 24.0, 54.0]


class TestOptimizerStyleUpdates:
    def test_no_grad_in_place_update(self):
        w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (w * w).sum().backward()  # grad = 2w
        with torch.no_grad():
            w -= 0.25 * w.grad  # w - 0.5 w = 0.5 w
        assert w.tolist() == [0.5, 1.0, 1.5]
        assert w.is_leaf is True and w.requires_grad is True and w.grad_fn is None
        w.grad.zero_()
        assert w.grad.tolist() == [0.0, 0.0, 0.0]
        (w * w).sum().backward()
        assert w.grad.tolist() == [1.0, 2.0, 3.0]

    def test_data_in_place_update(self):
        w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (w * w).sum().backward()
        w.data -= 0.25 * w.grad
        assert w.tolist() == [0.5, 1.0, 1.5]
        assert w.requires_grad is True and w.is_leaf is True

    def test_data_is_detached_alias(self):
        w = torch.tensor([1.0, 2.0], requires_grad=True)
        d = w.data
        assert d.requires_grad is False
        d[0] = 7.0
        assert w.tolist() == [7.0, 2.0]

    def test_data_assignment(self):
        w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        w.data = torch.zeros(3)
        assert w.tolist() == [0.0, 0.0, 0.0]
        assert w.requires_grad is True and w.is_leaf is True
        (w + 1).sum().backward()
        assert w.grad.tolist() == [1.0, 1.0, 1.0]

    def test_training_loop_converges(self):
        # minimise sum((w - t)^2) with plain gradient descent, lr 0.25:
        # w <- w - 0.25 * 2 (w - t) = (w + t) / 2: distance halves each step
        t = torch.tensor([1.0, -2.0])
        w = torch.tensor([0.0, 0.0], requires_grad=True)
        for _ in range(30):
            loss = ((w - t) ** 2).sum()
            loss.backward()
            with torch.no_grad():
                w -= 0.25 * w.grad
            w.grad.zero_()
        assert w.tolist() == pytest.approx([1.0, -2.0], abs=1e-6)


# ======================================================================
# concurrency
# ======================================================================


def _mlp_data(seed):
    import random

    rnd = random.Random(seed)

    def mat(r, c):
        return [[rnd.uniform(-1, 1) for _ in range(c)] for _ in range(r)]

    return mat(4, 3), mat(3, 5), mat(1, 5)[0], mat(5, 2)


def _mlp_grads(data):
    xv, w1v, b1v, w2v = data
    x = torch.tensor(xv)
    w1 = torch.tensor(w1v, requires_grad=True)
    b1 = torch.tensor(b1v, requires_grad=True)
    w2 = torch.tensor(w2v, requires_grad=True)
    h = (x @ w1 + b1).relu()
    out = (h @ w2).tanh()
    loss = (out * out).mean()
    loss.backward()
    return (loss.item(), w1.grad.tolist(), b1.grad.tolist(), w2.grad.tolist())


@pytest.mark.timeout(120)
def test_threads_mlp_stress_matches_single_thread():
    n_threads, iters = 8, 50
    datas = [_mlp_data(seed) for seed in range(n_threads)]
    expected = [_mlp_grads(d) for d in datas]
    # sanity: gradients are not trivially zero
    assert any(v != 0.0 for row in expected[0][1] for v in row)
    errors, mismatches = [], []
    barrier = threading.Barrier(n_threads)

    def worker(i):
        try:
            barrier.wait(30)
            for it in range(iters):
                got = _mlp_grads(datas[i])
                if got != expected[i]:
                    mismatches.append((i, it))
        except BaseException as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(100)
    assert not any(th.is_alive() for th in threads)
    assert errors == []
    assert mismatches == []


WIDE_GRAPH_CODE = r"""
import rgrad as torch
x = torch.linspace(-1.0, 1.0, 257).requires_grad_()
total = None
for b in range(32):
    h = x
    for k in range(20):
        op = (b + k) % 4
        if op == 0:
            h = h * (1.0 + 0.01 * b)
        elif op == 1:
            h = h.sin()
        elif op == 2:
            h = h + 0.1 * k
        else:
            h = h.tanh()
    total = h if total is None else total + h
total.sum().backward()
print(repr(x.grad.double().tolist()))
"""


@pytest.mark.timeout(240)
def test_num_threads_env_gives_bitwise_identical_grads():
    outs = {}
    for n in ("1", "4"):
        env = dict(os.environ, RGRAD_NUM_THREADS=n)
        proc = subprocess.run(
            [sys.executable, "-c", WIDE_GRAPH_CODE],
            env=env,
            capture_output=True,
            text=True,
            timeout=200,
        )
        assert proc.returncode == 0, proc.stderr
        outs[n] = proc.stdout.strip()
    grads = eval(outs["1"])  # a list of float reprs
    assert len(grads) == 257
    assert any(g != 0.0 for g in grads)
    assert outs["1"] == outs["4"]
