"""split, chunk and unbind record one node for all the views they return, as torch does
(SplitBackward0, SplitWithSizesBackward0, UnbindBackward0): names, output numbers, the
gradient with views left unused, double backward, batched gradients and forward AD,
against torch (``both``) and on rgrad alone.

(rgrad recorded a Slice/Select node per view before: each backward made a zero tensor of
the input's size, so unbinding n rows cost n times the input.)
"""

from __future__ import annotations

import pytest
from _differential import both

import rgrad

CASES = {
    "split_int": lambda x: x.split(2),
    "split_list": lambda x: x.split([1, 3, 2]),
    "split_dim1": lambda x: x.split(3, 1),
    "chunk": lambda x: x.chunk(3),
    "chunk_neg_dim": lambda x: x.chunk(2, -1),
    "unbind": lambda x: x.unbind(),
    "unbind_dim1": lambda x: x.unbind(1),
    "fn_split": lambda x: type(x).split(x, 4),
}


def _lib_case(T, name):
    x = T.tensor([[4.0 * i + j for j in range(4)] for i in range(6)], dtype=T.float64, requires_grad=True)
    f = CASES[name]
    if name == "fn_split":
        return x, T.split(x, 4)
    return x, f(x)


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_node_for_all_views(name):
    def program(T):
        x, views = _lib_case(T, name)
        node = views[0].grad_fn
        return (
            [(type(v.grad_fn).__name__, v.output_nr) for v in views],
            all(v.grad_fn is node for v in views),
            [(type(f).__name__, i) for f, i in node.next_functions],
            [v._base is x for v in views],
            [v.is_leaf for v in views],
        )

    names, same, nexts, bases, leaves = both(program)
    assert same and all(bases) and not any(leaves)
    assert names[0][0] in ("SplitBackward0", "SplitWithSizesBackward0", "UnbindBackward0")
    assert [nr for _, nr in names] == list(range(len(names)))
    assert nexts == [("AccumulateGrad", 0)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_with_some_views_unused(name):
    def program(T):
        x, views = _lib_case(T, name)
        # every other view used, each weighted: the rest get zeros
        loss = sum((v * (i + 1)).sin().sum() for i, v in enumerate(views) if i % 2 == 0)
        (g,) = T.autograd.grad(loss, x, create_graph=True)
        (gg,) = T.autograd.grad(g.sum(), x)
        return g, gg, type(g.grad_fn).__name__

    g, gg, _ = both(program)
    assert g[2] == (6, 4)


def test_node_names_with_empty_and_single_views():
    def program(T):
        out = []
        for shape, f in [
            ((0, 2), lambda x: x.chunk(3)),
            ((4, 0), lambda x: x.split(1, 1)),
            ((3,), lambda x: x.split(5)),
            ((1, 3), lambda x: x.unbind(0)),
            ((0, 3), lambda x: x.unbind(0)),
        ]:
            x = T.zeros(*shape, requires_grad=True)
            views = f(x)
            out.append([(type(v.grad_fn).__name__, tuple(v.shape)) for v in views])
        return out

    res = both(program)
    assert res[0] == [("SplitWithSizesBackward0", (0, 2))] * 3
    assert res[4] == []


def test_batched_gradients_through_split_and_unbind():
    def program(T):
        x = T.arange(12.0, dtype=T.float64).reshape(3, 4).requires_grad_()
        a, b, c = x.unbind()
        p, q = x.split([1, 3], 1)
        y = T.cat([a * 2, c.exp()[:1], p.sum(1) + q.sum(1), b[:2]], 0)
        eye = T.eye(10, dtype=T.float64)
        (jac,) = T.autograd.grad(y, x, eye, is_grads_batched=True)
        return jac

    jac = both(program)
    assert jac[2] == (10, 3, 4)


# torch's make_dual loads its jvp decompositions, which warn about torch.jit.script
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_forward_ad_through_split_and_unbind():
    def program(T):
        fwAD = T.autograd.forward_ad
        x = T.arange(12.0, dtype=T.float64).reshape(3, 4)
        t = T.ones(3, 4, dtype=T.float64) * T.arange(4.0, dtype=T.float64)
        with fwAD.dual_level():
            d = fwAD.make_dual(x, t)
            parts = list(d.unbind(1)) + list(d.split([2, 1], 0)) + list(d.chunk(2, 1))
            out = [fwAD.unpack_dual(p * p).tangent for p in parts]
            # a tangent laid out unlike its primal: not an alias, the node's own rule
            t2 = (T.arange(12.0, dtype=T.float64).reshape(4, 3) + 1).t()
            d2 = fwAD.make_dual(x, t2)
            parts = list(d2.unbind(0)) + list(d2.split(3, 1))
            out += [fwAD.unpack_dual(p.exp()).tangent for p in parts]
            return out

    tangents = both(program)
    assert len(tangents) == 13


def test_unbinding_many_rows_sums_once():
    # 2048 views of a 2048x512 tensor: a node per view would write 2048 zero tensors of
    # 4 MB each (8 GB); one node writes the input's size once
    x = rgrad.randn(2048, 512, requires_grad=True)
    rows = x.unbind(0)
    sum(r.sum() * (i % 3) for i, r in enumerate(rows)).backward()
    expected = rgrad.arange(2048.0).remainder(3).unsqueeze(1).expand(2048, 512)
    assert (x.grad - expected).abs().max().item() == 0
    assert rows[0].grad_fn is rows[-1].grad_fn
