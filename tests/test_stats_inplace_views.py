"""The in-place view ops (squeeze_, unsqueeze_, transpose_, t_, swapdims_, swapaxes_),
mode, nanmedian, quantile / nanquantile and torch.linalg's compositions (diagonal, matmul,
vander, tensorinv, tensorsolve; torch.vander and the deprecated torch.lu_solve) against
torch: values, indices, dtypes, nodes and their saved fields, gradients, versions, errors
and warnings."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import rgrad

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001  (the outcome is compared)
        return ("raises", type(e).__name__, str(e).replace("torch.", "").replace("rgrad.", ""))


def _node(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _same(r, t, exact=False, rtol=1e-6, atol=1e-8):
    """Tensors (or tuples of them) equal in shape, dtype name, value and node."""
    if isinstance(t, tuple):
        assert isinstance(r, tuple) and len(r) == len(t)
        for a, b in zip(r, t):
            _same(a, b, exact, rtol, atol)
        return
    assert tuple(r.shape) == tuple(t.shape)
    assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    if exact:
        np.testing.assert_array_equal(_np(r), _np(t))
    else:
        np.testing.assert_allclose(_np(r), _np(t), rtol=rtol, atol=atol, equal_nan=True)
    assert _node(r) == _node(t)


def _pair(lib, arr, dtype="float64", grad=True):
    dt = getattr(lib, dtype)
    return lib.tensor(arr, dtype=dt, requires_grad=grad and dtype.startswith("float"))


def _saved(t):
    f = t.grad_fn
    return {a: getattr(f, a) for a in dir(f) if a.startswith("_saved") and not isinstance(getattr(f, a),
                                                                                          (rgrad.Tensor, torch.Tensor))}


# ---------------------------------------------------------------------------------------
# In-place view ops
# ---------------------------------------------------------------------------------------

_INPLACE_VIEW_CALLS = {
    "squeeze_()": lambda y: y.squeeze_(),
    "squeeze_(1)": lambda y: y.squeeze_(1),
    "squeeze_((1, 3))": lambda y: y.squeeze_((1, 3)),
    "unsqueeze_(0)": lambda y: y.unsqueeze_(0),
    "unsqueeze_(-1)": lambda y: y.unsqueeze_(-1),
    "transpose_(0, 2)": lambda y: y.transpose_(0, 2),
    "swapdims_(0, 1)": lambda y: y.swapdims_(0, 1),
    "swapaxes_(2, 0)": lambda y: y.swapaxes_(2, 0),
}


@pytest.mark.parametrize("name", sorted(_INPLACE_VIEW_CALLS))
def test_inplace_view_ops_against_torch(name):
    call = _INPLACE_VIEW_CALLS[name]
    a = np.random.RandomState(0).randn(3, 1, 4, 1)
    outs = []
    for lib in (rgrad, torch):
        x = _pair(lib, a)
        y = x * 2
        before = y._version
        out = call(y)
        assert out is y
        assert y._version == before + 1
        outs.append((x, y))
    (xr, yr), (xt, yt) = outs
    _same(yr, yt)
    assert type(yr.grad_fn.next_functions[0][0]).__name__ == type(yt.grad_fn.next_functions[0][0]).__name__
    (yr * rgrad.arange(yr.numel(), dtype=rgrad.float64).reshape(yr.shape)).sum().backward()
    (yt * torch.arange(yt.numel(), dtype=torch.float64).reshape(yt.shape)).sum().backward()
    np.testing.assert_array_equal(xr.grad.numpy(), xt.grad.numpy())


def test_t_inplace_and_saved_fields():
    for lib in (rgrad, torch):
        x = _pair(lib, np.arange(6.0).reshape(2, 3))
        y = x * 1
        y.t_()
        assert _node(y) == "TBackward1" and tuple(y.shape) == (3, 2)
        v = (x * 1)[0]
        v.t_()  # (1-D: its own transpose)
        assert _node(v) == "TBackward1" and tuple(v.shape) == (3,)
    for lib in (rgrad, torch):
        with pytest.raises(RuntimeError, match=r"t_\(\) expects a tensor with <= 2 dimensions, but self is 3D"):
            lib.zeros(1, 2, 3).t_()
    sr = (_pair(rgrad, np.ones((3, 1, 4))) * 1).squeeze_(1)
    st = (_pair(torch, np.ones((3, 1, 4))) * 1).squeeze_(1)
    assert _saved(sr) == _saved(st) == {"_saved_dim": 1, "_saved_self_sym_sizes": (3, 1, 4)}
    sr = (_pair(rgrad, np.ones((3, 1, 4))) * 1).squeeze_((1,))
    st = (_pair(torch, np.ones((3, 1, 4))) * 1).squeeze_((1,))
    assert _saved(sr) == _saved(st) == {"_saved_dim": (1,), "_saved_self_sym_sizes": (3, 1, 4)}
    for lib in (rgrad, torch):  # (out of place: a tuple of dims is its own node)
        assert _node(_pair(lib, np.ones((3, 1, 4))).squeeze((1,))) == "SqueezeBackward2"
        assert _node(_pair(lib, np.ones((3, 1, 4))).squeeze(1)) == "SqueezeBackward1"
        assert _saved(_pair(lib, np.ones((3, 4))).transpose(0, 1)) == {"_saved_dim0": 0, "_saved_dim1": 1}


def test_inplace_view_on_a_leaf_and_without_grad():
    for lib in (rgrad, torch):
        x = _pair(lib, np.ones((3, 1)))
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
            x.squeeze_(1)
        with lib.no_grad():
            x.squeeze_(1)
        assert tuple(x.shape) == (3,) and x.requires_grad and x.grad_fn is None
        z = lib.zeros(2, 1)
        z.unsqueeze_(0).transpose_(0, 2)
        assert tuple(z.shape) == (1, 2, 1) and z._version == 2


def test_inplace_view_of_a_view_keeps_its_base():
    """As torch: the view's own history gains the node, its base's is unchanged; a later
    in-place write through the view reaches the base with the view's new geometry."""
    res = []
    for lib in (rgrad, torch):
        x = _pair(lib, np.arange(3.0).reshape(3, 1))
        b = x * 2
        v = b[0:2]
        v.squeeze_(1)
        assert _node(v) == "SqueezeBackward4" and _node(b) == "MulBackward0"
        assert v._base.data_ptr() == b.data_ptr() and tuple(v._base.shape) == tuple(b.shape) == (3, 1)
        assert type(v.grad_fn.next_functions[0][0]).__name__ == "SliceBackward0"
        v.mul_(3)
        assert _node(b) == "CopySlices"
        b.sum().backward()
        res.append((x.grad.numpy().copy(), b.detach().numpy().copy()))
    np.testing.assert_array_equal(res[0][0], res[1][0])
    np.testing.assert_array_equal(res[0][1], res[1][1])


def test_inplace_view_forward_ad():
    import rgrad.autograd.forward_ad as fwr
    import torch.autograd.forward_ad as fwt

    outs = []
    for lib, fw in ((rgrad, fwr), (torch, fwt)):
        with fw.dual_level():
            p = lib.tensor(np.arange(6.0).reshape(2, 3, 1))
            t = lib.tensor(np.ones((2, 3, 1)) * 0.5)
            y = fw.make_dual(p, t) * 2
            y.squeeze_(-1).transpose_(0, 1)
            outs.append(fw.unpack_dual(y).tangent.numpy().copy())
    np.testing.assert_array_equal(outs[0], outs[1])


def test_inplace_view_threads():
    """Many threads each squeezing and unsqueezing their own non-leaf, then backward."""
    errors = []

    def work(seed):
        try:
            x = rgrad.tensor(np.random.RandomState(seed).randn(4, 1, 3), requires_grad=True)
            for _ in range(20):
                y = x * 1
                y.squeeze_(1).unsqueeze_(0).transpose_(0, 2)
                y.sum().backward()
            assert np.allclose(x.grad.numpy(), 20.0)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


# ---------------------------------------------------------------------------------------
# mode, nanmedian
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 5, 16, 17, 40, 100, 1000])
def test_mode_indices_are_torchs(n):
    """Values and the index torch's kernel reports (libstdc++'s unstable sort decides it
    past 16 elements), on ties."""
    rs = np.random.RandomState(n)
    for trial in range(20):
        a = rs.randint(0, 4, size=(3, n)).astype(np.float64)
        for dim in (0, 1):
            r = rgrad.tensor(a).mode(dim)
            t = torch.tensor(a).mode(dim)
            np.testing.assert_array_equal(r.values.numpy(), t.values.numpy())
            np.testing.assert_array_equal(r.indices.numpy(), t.indices.numpy())


@pytest.mark.parametrize("case", ["nan", "int", "bool", "0d", "empty rows", "keepdim", "neg zero"])
def test_mode_special_cases(case):
    data = {
        "nan": (np.array([2.0, np.nan, 2, np.nan, np.nan, 1] * 4), "float64"),
        "int": (np.array([[1, 1, 2], [3, 3, 2]]), "int64"),
        "bool": (np.array([True, False, True]), "bool"),
        "0d": (np.array(5.0), "float32"),
        "empty rows": (np.zeros((0, 3)), "float32"),
        "keepdim": (np.array([[1.0, 2.0, 2.0], [0.5, 0.5, 3.0]]), "float32"),
        "neg zero": (np.array([np.inf, np.inf, -np.inf, 0.0, -0.0]), "float64"),
    }[case]
    a, dt = data
    args = {"empty rows": (1,), "keepdim": (1, True), "0d": (0,)}.get(case, ())
    r = rgrad.mode(rgrad.tensor(a, dtype=getattr(rgrad, dt)), *args)
    t = torch.mode(torch.tensor(a, dtype=getattr(torch, dt)), *args)
    assert type(r).__name__ == "mode" and repr(r).startswith("rgrad.return_types.mode(")
    _same(r.values, t.values, exact=True)
    _same(r.indices, t.indices, exact=True)


def test_mode_and_nanmedian_gradients_and_nodes():
    a = np.random.RandomState(3).randn(4, 5)
    for call in (lambda lib, x: lib.mode(x, 1).values, lambda lib, x: x.mode(0, True).values,
                 lambda lib, x: lib.nanmedian(x), lambda lib, x: x.nanmedian(1).values,
                 lambda lib, x: lib.nanmedian(x, 0, keepdim=True)[0]):
        xr, xt = _pair(rgrad, a), _pair(torch, a)
        yr, yt = call(rgrad, xr), call(torch, xt)
        _same(yr, yt, exact=True)
        assert _saved(yr) == _saved(yt)
        yr.sum().backward()
        yt.sum().backward()
        np.testing.assert_array_equal(xr.grad.numpy(), xt.grad.numpy())
    assert rgrad.autograd.gradcheck(lambda x: x.mode(1).values, (_pair(rgrad, a),))
    assert rgrad.autograd.gradgradcheck(lambda x: x.nanmedian(), (_pair(rgrad, a),))


def test_nanmedian_against_torch():
    rs = np.random.RandomState(7)
    for n in (1, 2, 5, 16, 17, 33, 200):
        a = rs.randint(0, 5, size=(4, n)).astype(np.float64)
        a[rs.rand(4, n) < 0.3] = np.nan
        a[0] = np.nan  # (a row of NaN only)
        for args in ((), (1,), (0,), (1, True)):
            r, t = rgrad.tensor(a).nanmedian(*args), torch.tensor(a).nanmedian(*args)
            if not args:
                _same(r, t, exact=True)
            else:
                _same(r.values, t.values, exact=True)
                _same(r.indices, t.indices, exact=True)
    x = np.array([1.0, np.nan, 3.0, 2.0, np.nan])
    xr, xt = _pair(rgrad, x), _pair(torch, x)
    rgrad.nanmedian(xr).backward()
    torch.nanmedian(xt).backward()
    np.testing.assert_array_equal(xr.grad.numpy(), xt.grad.numpy())


@pytest.mark.parametrize("call", [
    lambda lib: lib.nanmedian(lib.zeros(2, 0), 1),
    lambda lib: lib.nanmedian(lib.tensor([True])),
    lambda lib: lib.nanmedian(lib.tensor([True]), 0),
    lambda lib: lib.nanmedian(lib.zeros(0)),
    lambda lib: lib.mode(lib.zeros(0)),
    lambda lib: lib.mode(lib.zeros(2, 0), 1),
    lambda lib: lib.mode(lib.zeros(2, 3), 2),
    lambda lib: lib.zeros(2, 3).mode(1.5),
    lambda lib: lib.zeros(2, 3).mode(0, 1),
    lambda lib: lib.zeros(2, 3).nanmedian(keepdim=True),
    lambda lib: lib.nanmedian(lib.tensor([3, 1, 2])),
])
def test_mode_nanmedian_errors_as_torch(call):
    rr, tt = _outcome(lambda: call(rgrad)), _outcome(lambda: call(torch))
    assert rr[0] == tt[0], (rr, tt)
    if rr[0] == "raises":
        assert rr[1:] == tt[1:]
    else:
        r, t = rr[1], tt[1]
        _same(r if isinstance(r, rgrad.Tensor) else r.values, t if isinstance(t, torch.Tensor) else t.values,
              exact=True)


# ---------------------------------------------------------------------------------------
# quantile, nanquantile
# ---------------------------------------------------------------------------------------

_INTERP = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("interpolation", _INTERP)
@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_quantile_against_torch(interpolation, nan, dtype):
    rs = np.random.RandomState(1)
    a = rs.randn(4, 6)
    a[1, 2] = a[3, 0] = np.nan
    a[2, :] = np.nan
    name = "nanquantile" if nan else "quantile"
    for q in (0.0, 0.25, 0.5, 1.0, [0.1, 0.5, 0.9], 0.37):
        for kw in ({}, {"dim": 1}, {"dim": 0, "keepdim": True}, {"dim": None, "keepdim": True}, {"dim": -1}):
            outs = []
            for lib in (rgrad, torch):
                x = lib.tensor(a, dtype=getattr(lib, dtype))
                qq = lib.tensor(q, dtype=getattr(lib, dtype)) if isinstance(q, list) else q
                outs.append(getattr(lib, name)(x, qq, interpolation=interpolation, **kw))
            _same(outs[0], outs[1], rtol=1e-6 if dtype == "float32" else 1e-12)


def test_quantile_nodes_gradients_and_method():
    a = np.random.RandomState(2).randn(3, 5)
    for kw in ({}, {"dim": 0}, {"dim": 1, "keepdim": True}):
        for q in (0.3, [0.2, 0.7]):
            for interpolation in _INTERP:
                grads = []
                for lib in (rgrad, torch):
                    x = _pair(lib, a)
                    qq = lib.tensor(q, dtype=lib.float64) if isinstance(q, list) else q
                    y = x.quantile(qq, interpolation=interpolation, **kw)
                    assert _node(y) == "SqueezeBackward4"
                    (y * lib.arange(1, y.numel() + 1, dtype=lib.float64).reshape(y.shape)).sum().backward()
                    grads.append(x.grad.numpy().copy())
                np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)
    x = _pair(rgrad, a)
    assert rgrad.autograd.gradcheck(lambda t: rgrad.quantile(t, 0.4, 1), (x,))
    assert rgrad.autograd.gradgradcheck(lambda t: rgrad.nanquantile(t, 0.4), (x,))


@pytest.mark.parametrize("call", [
    lambda lib: lib.quantile(lib.randn(3), 1.5),
    lambda lib: lib.quantile(lib.randn(3), -0.1),
    lambda lib: lib.nanquantile(lib.randn(3), 2.0),
    lambda lib: lib.quantile(lib.randn(3), lib.tensor([[0.5]])),
    lambda lib: lib.quantile(lib.randn(3), lib.tensor([0.5], dtype=lib.float64)),
    lambda lib: lib.quantile(lib.tensor([1, 2]), 0.5),
    lambda lib: lib.quantile(lib.zeros(0), 0.5),
    lambda lib: lib.quantile(lib.randn(3), 0.5, interpolation="foo"),
    lambda lib: lib.quantile(lib.randn(3), lib.tensor([1.5])),
    lambda lib: lib.quantile(lib.randn(3, 2), 0.5, dim=2),
    lambda lib: lib.quantile(lib.tensor(3.0), 0.5),
    lambda lib: lib.quantile(lib.tensor(3.0), lib.tensor([0.5, 1.0]), dim=0, keepdim=True),
])
def test_quantile_errors_and_edges_as_torch(call):
    rr, tt = _outcome(lambda: call(rgrad)), _outcome(lambda: call(torch))
    assert rr[0] == tt[0], (rr, tt)
    if rr[0] == "raises":
        assert rr[1:] == tt[1:]
    else:
        _same(rr[1], tt[1], exact=True)


# ---------------------------------------------------------------------------------------
# torch.linalg's compositions, torch.vander, torch.lu_solve
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda lib, x: lib.linalg.vander(x),
    lambda lib, x: lib.linalg.vander(x, N=5),
    lambda lib, x: lib.linalg.vander(x.reshape(2, 3)),
    lambda lib, x: lib.vander(x),
    lambda lib, x: lib.vander(x, 4, True),
    lambda lib, x: lib.vander(x, N=1),
    lambda lib, x: lib.vander(x, 0),
    lambda lib, x: lib.linalg.diagonal(x.reshape(2, 3), offset=1),
    lambda lib, x: lib.linalg.matmul(x.reshape(2, 3), x.reshape(3, 2)),
])
def test_linalg_compositions_against_torch(call):
    a = np.random.RandomState(4).randn(6)
    xr, xt = _pair(rgrad, a), _pair(torch, a)
    yr, yt = call(rgrad, xr), call(torch, xt)
    _same(yr, yt, rtol=1e-12)
    if yr.numel():
        # (torch.vander's own backward fails: its cumprod saves the slice it then writes)
        br, bt = _outcome(lambda: yr.sum().backward()), _outcome(lambda: yt.sum().backward())
        assert br[0] == bt[0], (br, bt)
        if br[0] == "ok":
            np.testing.assert_allclose(xr.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
        else:
            assert br[1] == bt[1]
            assert ("modified by an inplace operation" in br[2]) == ("modified by an inplace operation" in bt[2])


def test_vander_dtypes_as_torch():
    for a in ([1, 2, 3], [True, False]):
        for f in (lambda lib, x: lib.vander(x), lambda lib, x: lib.linalg.vander(x)):
            rr = _outcome(lambda: f(rgrad, rgrad.tensor(a)))
            tt = _outcome(lambda: f(torch, torch.tensor(a)))
            assert rr[0] == tt[0], (rr, tt)
            if rr[0] == "raises":
                assert rr[1:] == tt[1:]
            else:
                _same(rr[1], tt[1], exact=True)


def test_tensorinv_tensorsolve_against_torch():
    rs = np.random.RandomState(5)
    m = rs.randn(6, 6) + 6 * np.eye(6)
    for shape, ind in (((2, 3, 6), 2), ((6, 3, 2), 1), ((4, 2, 3), 1)):
        a = (m if shape != (4, 2, 3) else rs.randn(4, 6)).reshape(shape)
        rr = _outcome(lambda: rgrad.linalg.tensorinv(_pair(rgrad, a), ind=ind))
        tt = _outcome(lambda: torch.linalg.tensorinv(_pair(torch, a), ind=ind))
        assert rr[0] == tt[0] and (rr[0] == "ok" or rr[1:] == tt[1:]), (rr, tt)
        if rr[0] == "ok":
            np.testing.assert_allclose(_np(rr[1]), _np(tt[1]), rtol=1e-10)
    b = rs.randn(2, 3)
    for a, bb, kw in ((m.reshape(2, 3, 6), b, {}), (np.moveaxis(m.reshape(6, 2, 3), -1, 0), b.reshape(6), {"dims": (0,)}),
                      (rs.randn(2, 3, 4), b, {})):
        rr = _outcome(lambda: rgrad.linalg.tensorsolve(_pair(rgrad, a), _pair(rgrad, bb), **kw))
        tt = _outcome(lambda: torch.linalg.tensorsolve(_pair(torch, a), _pair(torch, bb), **kw))
        assert rr[0] == tt[0] and (rr[0] == "ok" or rr[1:] == tt[1:]), (rr, tt)
        if rr[0] == "ok":
            np.testing.assert_allclose(_np(rr[1]), _np(tt[1]), rtol=1e-10)
    for lib in (rgrad, torch):
        with pytest.raises(RuntimeError, match="Expected a strictly positive integer for 'ind', but got 0"):
            lib.linalg.tensorinv(lib.randn(2, 3, 4), 0)


def test_lu_solve_deprecated_warns_once():
    from rgrad import linalg as rl

    a = np.random.RandomState(6).randn(3, 3) + 3 * np.eye(3)
    b = np.random.RandomState(7).randn(3, 2)
    rl._lu_solve_warned = False
    LU, piv = rgrad.linalg.lu_factor(rgrad.tensor(a))
    bt = _pair(rgrad, b)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        x = rgrad.lu_solve(bt, LU, piv)
        x2 = bt.lu_solve(LU, piv)
    assert len(w) == 1 and "torch.lu_solve is deprecated in favor of torch.linalg.lu_solve" in str(w[0].message)
    assert _node(x) == _node(x2) == "LinalgLuSolveBackward0"
    np.testing.assert_allclose(x.detach().numpy(), np.linalg.solve(a, b), rtol=1e-12)


def test_layout_and_kind_queries_as_torch():
    xr, xt = rgrad.ones(2), torch.ones(2)
    assert xr.layout is rgrad.strided and repr(xr.layout) == repr(xt.layout).replace("torch", "rgrad")
    for name in ("sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "jagged"):
        assert repr(getattr(rgrad, name)) == repr(getattr(torch, name)).replace("torch", "rgrad")
        assert getattr(rgrad, name) != rgrad.strided
    for name in ("is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_mkldnn", "is_nested", "is_xpu",
                 "is_mps", "is_ipu", "is_xla", "is_vulkan", "is_maia", "is_mtia"):
        assert getattr(xr, name) is getattr(xt, name) is False


def test_masked_fill_broadcasts_self_as_torch():
    """Out of place, torch broadcasts self against the mask (and sums the gradient back);
    in place, the mask must fit self."""
    mask = np.array([[True, False, True], [False, False, True]])
    res = []
    for lib in (rgrad, torch):
        x = lib.tensor([[0.5, 1.5, 2.5]], dtype=lib.float64, requires_grad=True)
        m = lib.tensor(mask)
        y = x.masked_fill(m, 2.0)
        z = lib.masked_fill(x, m, lib.tensor(3.0, dtype=lib.float64, requires_grad=True))
        assert tuple(y.shape) == tuple(z.shape) == (2, 3)
        assert _node(y) == "MaskedFillBackward0" and _node(z) == "MaskedFillBackward1"
        (y * lib.arange(6, dtype=lib.float64).reshape(2, 3)).sum().backward()
        res.append((y.detach().numpy(), z.detach().numpy(), x.grad.numpy().copy()))
        with pytest.raises(RuntimeError, match=r"output with shape \[1, 3\] doesn't match the broadcast shape \[2, 3\]"):
            x.detach().clone().masked_fill_(m, 1.0)
    for a, b in zip(*res):
        np.testing.assert_array_equal(a, b)
    # under vmap: an unbatched self filled by a batched mask
    ms = rgrad.tensor(np.random.RandomState(0).rand(3, 1, 2) > 0.5)
    out = rgrad.vmap(lambda m: rgrad.zeros(1, 2).masked_fill(m, 5.0))(ms)
    np.testing.assert_array_equal(out.numpy(), np.where(ms.numpy(), 5.0, 0.0))
