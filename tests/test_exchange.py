"""Zero-copy exchange (issue 19): NumPy memory shared by ``from_numpy`` and
``Tensor.numpy()``, and DLPack (``__dlpack__``, ``from_dlpack``, ``utils.dlpack``) with
NumPy and torch, on the CPU. Torch-parity checks run where torch is installed."""

import gc
import sys
import threading
import warnings

import numpy as np
import pytest

import rgrad
import rgrad.utils.dlpack

try:
    import torch
except ImportError:  # pragma: no cover - CI installs torch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

DTYPES = [np.float32, np.float64, np.int64, np.bool_]


def _values(dtype, shape):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    return (a % 2 == 1) if dtype is np.bool_ else a.astype(dtype)


def _error(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001 - we compare whatever is raised
        return type(e), str(e)
    return None, None


def _torch_text(s):
    return s.replace("PyTorch", "rgrad")


# ---- from_numpy ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_from_numpy_shares_memory_both_ways(dtype):
    a = _values(dtype, (2, 3))
    t = rgrad.from_numpy(a)
    assert t.tolist() == a.tolist()
    new = True if dtype is np.bool_ else 7
    a[1, 2] = new
    assert t[1, 2].item() == new
    t[0, 0] = new
    assert a[0, 0] == new
    if dtype is not np.bool_:
        t.add_(1)  # an in-place op writes into the array's memory
        np.testing.assert_array_equal(a, t.numpy())
        assert a[0, 0] == new + 1


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(12.0).reshape(3, 4).T,  # transposed
        lambda: np.arange(24.0).reshape(4, 6)[1:, ::2],  # offset and step
        lambda: np.asfortranarray(np.arange(6.0).reshape(2, 3)),
        lambda: np.broadcast_to(np.arange(3.0), (4, 3)),  # stride 0
        lambda: np.array(3.5),  # 0-d
        lambda: np.zeros((2, 0, 3)),
        lambda: np.zeros((2, 0, 3))[:, :, ::2],
        lambda: np.zeros(0, dtype=np.float32),
    ],
)
def test_from_numpy_layouts_match_torch(make):
    a = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (broadcast_to's array is read-only)
        t = rgrad.from_numpy(a)
        ref = torch.from_numpy(a) if torch is not None else None
    assert tuple(t.shape) == a.shape
    np.testing.assert_array_equal(t.numpy(), a)
    if ref is not None:
        assert t.stride() == ref.stride()


def test_from_numpy_shares_a_view_of_a_larger_array():
    base = np.arange(24.0).reshape(4, 6)
    v = base[1:3, 2:5]
    t = rgrad.from_numpy(v)
    t.mul_(10)
    assert base[1, 2] == 80.0 and base[0, 0] == 0.0 and base[3, 5] == 23.0
    assert t.tolist() == v.tolist()


def test_from_numpy_keeps_the_array_alive_and_releases_it():
    a = np.arange(1000.0)
    base = sys.getrefcount(a)
    t = rgrad.from_numpy(a)
    assert sys.getrefcount(a) == base + 1
    view = t[10:20]
    del t
    gc.collect()
    assert sys.getrefcount(a) == base + 1  # the view still uses the memory
    del view
    gc.collect()
    assert sys.getrefcount(a) == base
    # the tensor alone keeps the memory valid
    t = rgrad.from_numpy(np.arange(5.0) * 2)
    gc.collect()
    assert t.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(4.0)[::-1],
        lambda: np.arange(4.0).astype(">f8"),
        lambda: np.zeros((3,), dtype=[("a", "f8"), ("b", "i1")])["a"],  # strides of 9 bytes
        lambda: np.zeros(3, dtype=np.float16),
        lambda: np.zeros(3, dtype=np.str_),
        lambda: [1, 2],
    ],
)
def test_from_numpy_refusals_are_torchs(make):
    a = make()
    got = _error(lambda: rgrad.from_numpy(a))
    assert got[0] is not None
    if torch is not None:
        want = _error(lambda: torch.from_numpy(a))
        if want[0] is None:
            assert a.dtype == np.float16  # (rgrad has no float16)
        else:
            assert got[0] is want[0]
            # (the list of supported types is rgrad's own: it has four dtypes)
            cut = "The only supported types are"
            assert got[1].split(cut)[0] == _torch_text(want[1]).split(cut)[0]
    if isinstance(a, np.ndarray) and a.dtype == np.float16:
        assert got[0] is TypeError and "The only supported types are" in got[1]


def test_from_numpy_of_a_non_writable_array_warns_once_and_shares(monkeypatch):
    import rgrad._tensor as rt

    monkeypatch.setattr(rt, "_NUMPY_NOT_WRITABLE_WARNED", False)
    a = np.arange(3.0)
    a.flags.writeable = False
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t = rgrad.from_numpy(a)
        rgrad.from_numpy(a)
    assert len(w) == 1 and w[0].category is UserWarning
    assert str(w[0].message).startswith(
        "The given NumPy array is not writable, and rgrad does not support non-writable tensors."
    )
    assert t.tolist() == [0.0, 1.0, 2.0]
    b = np.arange(3.0)
    tb = rgrad.from_numpy(b)
    b[0] = 9
    assert tb[0].item() == 9


def test_from_numpy_int32_and_unaligned_data_are_copied():
    a = np.arange(3, dtype=np.int32)
    t = rgrad.from_numpy(a)
    assert t.dtype == rgrad.int64 and t.tolist() == [0, 1, 2]
    a[0] = 5
    assert t[0].item() == 0
    raw = np.zeros(8 * 4 + 1, dtype=np.uint8)
    u = raw[1:].view(np.float64)
    u[:] = [1.0, 2.0, 3.0, 4.0]
    with pytest.warns(UserWarning, match="not aligned to its elements"):
        t = rgrad.from_numpy(u)
    assert t.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_tensor_of_an_array_copies():
    a = np.arange(4.0)
    t = rgrad.tensor(a)
    a[0] = 100
    assert t[0].item() == 0.0
    big = np.arange(4.0).astype(">f8")  # any byte order: tensor() copies
    assert rgrad.tensor(big).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert rgrad.tensor(np.arange(6.0).reshape(2, 3).T).is_contiguous()


# ---- Tensor.numpy() -------------------------------------------------------------------


@pytest.fixture(params=["dlpack", "array_interface"])
def numpy_path(request, monkeypatch):
    """numpy() through NumPy's DLPack import (NumPy >= 2.1) and through the
    ``__array_interface__`` of older NumPy."""
    import rgrad._tensor as rt

    monkeypatch.setattr(rt, "_NUMPY_READS_DLPACK", request.param == "dlpack")
    return request.param


@pytest.mark.parametrize("dtype", [rgrad.float32, rgrad.float64, rgrad.int64, rgrad.bool])
def test_numpy_shares_memory(dtype, numpy_path):
    t = rgrad.ones(2, 3, dtype=dtype)
    a = t.numpy()
    assert a.dtype == {rgrad.float32: np.float32, rgrad.float64: np.float64,
                       rgrad.int64: np.int64, rgrad.bool: np.bool_}[dtype]
    assert a.flags.writeable
    a[0, 1] = 0
    assert t[0, 1].item() == 0
    t.zero_()
    assert not a.any()


def test_numpy_of_views_and_lifetime(numpy_path):
    e = rgrad.arange(3.0).expand(2, 3).numpy()
    assert e.strides == (0, 4) and e.tolist() == [[0.0, 1.0, 2.0]] * 2
    for z in (rgrad.tensor(2.5), rgrad.zeros(0, 3), rgrad.zeros(2, 0).t()):
        assert z.numpy().shape == tuple(z.shape)
    t = rgrad.arange(12.0).reshape(3, 4)
    v = t.t()[1:, ::2]
    a = v.numpy()
    np.testing.assert_array_equal(a, np.arange(12.0).reshape(3, 4).T[1:, ::2])
    a[0, 0] = -1
    assert t[0, 1].item() == -1
    del t, v
    gc.collect()
    assert a[0, 0] == -1 and a.sum() == np.arange(12.0).reshape(3, 4).T[1:, ::2].sum() - 1 - 1
    # a round trip stays on the same memory
    t = rgrad.zeros(3)
    back = rgrad.from_numpy(t.numpy())
    back[1] = 4
    assert t[1].item() == 4


def test_numpy_refuses_requires_grad_only_in_grad_mode(numpy_path):
    x = rgrad.ones(2, requires_grad=True)
    msg = "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
    with pytest.raises(RuntimeError) as e:
        x.numpy()
    assert str(e.value) == msg
    with pytest.raises(RuntimeError):
        np.asarray(x)
    with rgrad.no_grad():
        a = x.numpy()
    a[0] = 3  # shared, as in torch
    assert x[0].item() == 3

    class Double(rgrad.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return rgrad.from_numpy(inp.numpy() * 2)  # torch's own custom-Function example

        @staticmethod
        def backward(ctx, g):
            return g * 2

    y = Double.apply(x)
    y.sum().backward()
    assert y.tolist() == [6.0, 2.0] and x.grad.tolist() == [2.0, 2.0]


def test_numpy_force_copies():
    x = rgrad.ones(2, requires_grad=True)
    a = x.numpy(force=True)
    a[0] = 5
    assert x[0].item() == 1.0


def test_array_protocol():
    t = rgrad.arange(3.0)
    a = np.asarray(t)
    a[0] = 9
    assert t[0].item() == 9
    assert np.asarray(t, dtype=np.float32).dtype == np.float32
    c = np.array(t, copy=True)
    c[1] = 7
    assert t[1].item() == 1.0
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        t.__array__(np.float64, copy=False)


def test_data_ptr_is_the_address_of_the_first_element():
    import ctypes

    t = rgrad.arange(8.0)
    assert t.data_ptr() == t.numpy().ctypes.data
    ctypes.c_float.from_address(t.data_ptr()).value = 9.0
    assert t[0].item() == 9.0
    assert t[3:].data_ptr() == t.data_ptr() + 3 * 4
    assert t.view(2, 4)[1].data_ptr() == t.data_ptr() + 4 * 4
    d = rgrad.arange(4, dtype=rgrad.float64)
    assert d[1:].data_ptr() - d.data_ptr() == 8
    assert rgrad.empty(0).data_ptr() == 0  # as torch
    # views share the address, a clone does not
    assert t.view(8).data_ptr() == t.data_ptr()
    assert t.clone().data_ptr() != t.data_ptr()


# ---- DLPack ---------------------------------------------------------------------------


def test_dlpack_device():
    d = rgrad.zeros(2).__dlpack_device__()
    assert d == (rgrad.utils.dlpack.DLDeviceType.kDLCPU, 0)
    assert repr(d) == "(<DLDeviceType.kDLCPU: 1>, 0)"


@pytest.mark.parametrize("dtype", DTYPES)
def test_dlpack_with_numpy_shares_both_ways(dtype):
    a = _values(dtype, (3, 4))
    t = rgrad.from_dlpack(a)
    assert t.tolist() == a.tolist()
    t[0, 0] = True if dtype is np.bool_ else 42
    assert a[0, 0] == t[0, 0].item()
    b = np.from_dlpack(t)
    b[2, 3] = 0
    assert t[2, 3].item() == 0 and a[2, 3] == 0


def test_dlpack_with_numpy_views():
    a = np.arange(24.0).reshape(4, 6)[1:, ::2].T
    t = rgrad.from_dlpack(a)
    assert t.tolist() == a.tolist()
    v = rgrad.arange(24.0).reshape(4, 6)[1:, ::2].t()
    b = np.from_dlpack(v)
    np.testing.assert_array_equal(b, np.arange(24.0).reshape(4, 6)[1:, ::2].T)
    for z in (rgrad.tensor(2.5), rgrad.zeros(0, 3)):
        assert np.from_dlpack(z).shape == tuple(z.shape)
        assert tuple(rgrad.from_dlpack(np.from_dlpack(z)).shape) == tuple(z.shape)


def test_legacy_capsules_are_consumed_once():
    t = rgrad.arange(4)
    cap = rgrad.utils.dlpack.to_dlpack(t)
    assert repr(cap).startswith('<capsule object "dltensor" at ')
    u = rgrad.from_dlpack(cap)
    u[:2] = -1
    assert t.tolist() == [-1, -1, 2, 3]
    with pytest.raises(RuntimeError, match="from_dlpack received an invalid capsule. Note that DLTensor capsules "
                                           "can be consumed only once"):
        rgrad.from_dlpack(cap)
    with pytest.raises(RuntimeError, match="invalid capsule"):
        rgrad.from_dlpack(3)
    versioned = t.__dlpack__(max_version=(1, 0))
    assert repr(versioned).startswith('<capsule object "dltensor_versioned" at ')
    assert rgrad.from_dlpack(versioned).tolist() == [-1, -1, 2, 3]
    with pytest.raises(AssertionError, match="device and copy kwargs not supported"):
        rgrad.from_dlpack(t.__dlpack__(), copy=True)
    legacy_numpy = np.arange(3.0).__dlpack__()
    assert rgrad.from_dlpack(legacy_numpy).tolist() == [0.0, 1.0, 2.0]


def test_dlpack_export_refusals():
    x = rgrad.ones(2, requires_grad=True)
    with pytest.raises(BufferError, match="Can't export tensors that require gradient, use tensor.detach()"):
        x.__dlpack__()
    t = rgrad.ones(2)
    with pytest.raises(AssertionError, match="stream should be None on cpu."):
        t.__dlpack__(stream=3)
    with pytest.raises(TypeError, match="stream must be ``int`` or ``none``"):
        t.__dlpack__(stream="x")
    t.__dlpack__(stream=-1)
    with pytest.raises(BufferError, match="read_only export requires the versioned DLPack protocol"):
        t.__dlpack__(read_only=True)
    with pytest.raises(BufferError, match="DLPack device"):
        t.__dlpack__(dl_device=(2, 0))
    t.__dlpack__(dl_device=(1, 0))
    with pytest.raises(TypeError, match="unsupported dtype int32"):
        rgrad.from_dlpack(np.arange(3, dtype=np.int32))
    with pytest.raises(TypeError, match="unsupported dtype float16"):
        rgrad.from_dlpack(np.zeros(3, dtype=np.float16))


def test_dlpack_copy():
    t = rgrad.arange(3.0)
    c = np.from_dlpack(t, copy=True)
    c[0] = 5
    assert t[0].item() == 0.0
    a = np.arange(3.0)
    u = rgrad.from_dlpack(a, copy=True)
    u[0] = 5
    assert a[0] == 0.0
    ro = t.__dlpack__(max_version=(1, 0), read_only=True)
    assert rgrad.from_dlpack(ro).tolist() == [0.0, 1.0, 2.0]


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_dlpack_with_torch_shares_both_ways(dtype):
    tt = torch.arange(12).reshape(3, 4).to(getattr(torch, dtype))
    r = rgrad.from_dlpack(tt[:, 1:].t())
    assert r.tolist() == tt[:, 1:].t().tolist()
    assert r.stride() == tt[:, 1:].t().stride()
    r[0, 0] = 0
    assert tt[0, 1].item() == 0
    back = torch.from_dlpack(rgrad.arange(12).reshape(3, 4).to(getattr(rgrad, dtype))[1:, ::2])
    assert back.tolist() == torch.arange(12).reshape(3, 4).to(getattr(torch, dtype))[1:, ::2].tolist()
    assert back.stride() == (4, 2)
    mine = rgrad.zeros(3)
    torch.from_dlpack(mine).fill_(2.0)
    assert mine.tolist() == [2.0, 2.0, 2.0]
    # legacy capsules both ways
    assert rgrad.from_dlpack(torch.utils.dlpack.to_dlpack(tt)).tolist() == tt.tolist()
    assert torch.from_dlpack(rgrad.utils.dlpack.to_dlpack(mine)).tolist() == [2.0, 2.0, 2.0]


@needs_torch
def test_torch_docstring_example():
    t = rgrad.arange(4)
    t2 = rgrad.from_dlpack(t)
    t2[:2] = -1
    assert repr(t2) == "tensor([-1, -1,  2,  3])" and repr(t) == repr(t2)
    capsule = rgrad.utils.dlpack.to_dlpack(t)
    t3 = rgrad.from_dlpack(capsule)
    t3[0] = -9
    assert repr(t) == "tensor([-9, -1,  2,  3])"


def test_deleters_run_exactly_once_over_100k_round_trips():
    gc.collect()
    live0 = rgrad._C._dlpack_live()
    a = np.arange(16.0)
    ref0 = sys.getrefcount(a)
    t = rgrad.zeros(16)
    for i in range(100_000):
        # numpy -> rgrad (numpy's deleter), rgrad -> numpy (ours), capsules never consumed
        u = rgrad.from_dlpack(a)
        b = np.from_dlpack(t)
        if i % 3 == 0:
            t.__dlpack__(max_version=(1, 0))  # dropped unconsumed: its destructor frees it
            rgrad.utils.dlpack.to_dlpack(t)
        if i % 5 == 0:
            rgrad.from_dlpack(rgrad.utils.dlpack.to_dlpack(u))
        del u, b
    gc.collect()
    assert rgrad._C._dlpack_live() == live0
    assert sys.getrefcount(a) == ref0


def test_memory_released_on_engine_threads():
    """Tensors on lent memory may be freed by the backward pass's worker threads, which
    do not hold the GIL."""
    arrays = [np.random.default_rng(i).standard_normal(4096) for i in range(8)]
    refs = [sys.getrefcount(a) for a in arrays]
    live0 = rgrad._C._dlpack_live()

    def work(k):
        for _ in range(20):
            xs = [rgrad.from_numpy(a) * 1.0 for a in arrays[k::2]] + [rgrad.from_dlpack(a) for a in arrays[k::2]]
            w = rgrad.ones(4096, requires_grad=True)
            loss = sum(((x * w).sin()).sum() for x in xs)
            del xs
            loss.backward()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    gc.collect()
    rgrad.zeros(1).sum()  # (any call that takes the GIL in Rust runs PyO3's deferred decrefs)
    assert [sys.getrefcount(a) for a in arrays] == refs
    assert rgrad._C._dlpack_live() == live0
