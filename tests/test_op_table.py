"""Every row of the op table (src/ops/table.rs) is complete: its Tensor method and in-place
method, its ``rgrad.<name>`` function, its stub entries, its op_db entry and its line in
docs/ops.md. A row added without any of these fails here."""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

import rgrad
from op_db import op_db

ROOT = pathlib.Path(__file__).resolve().parents[1]
TABLE_OPS = tuple(rgrad._C._UNARY_OPS)


def _table_rows() -> list[str]:
    src = (ROOT / "src" / "ops" / "table.rs").read_text()
    src = src[: src.index("macro_rules! binary_op_table")]
    return re.findall(r'^\s+(\w+) \w+_ \w+ "\w+" \{$', src, re.M)


def _stub_methods() -> set[str]:
    tree = ast.parse((ROOT / "python" / "rgrad" / "_C.pyi").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    return {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}


def test_the_binding_exports_every_row_in_table_order():
    assert TABLE_OPS == tuple(_table_rows())
    assert len(TABLE_OPS) >= 28


@pytest.mark.parametrize("name", TABLE_OPS)
def test_row_has_methods_function_stubs_and_docs(name):
    assert callable(getattr(rgrad.Tensor, name))
    assert callable(getattr(rgrad.Tensor, name + "_"))
    assert getattr(rgrad, name) is getattr(rgrad.Tensor, name)
    assert name in rgrad.__all__
    stubs = _stub_methods()
    assert name in stubs and name + "_" in stubs
    assert re.search(rf"^\| `{name}` \| `{name}_`", (ROOT / "docs" / "ops.md").read_text(), re.M)
    assert getattr(rgrad.Tensor, name).__doc__


@pytest.mark.parametrize("name", TABLE_OPS)
def test_row_has_op_db_entries(name):
    names = {op.name for op in op_db}
    assert {name, f"Tensor.{name}", f"Tensor.{name}_"} <= names


@pytest.mark.parametrize("name", TABLE_OPS)
def test_row_records_its_torch_node(name):
    x = rgrad.tensor([1.25, 1.5], requires_grad=True)
    node = getattr(x, name)().grad_fn
    row = re.search(rf'^\s+{name} \w+_ \w+ "(\w+)" \{{$', (ROOT / "src/ops/table.rs").read_text(), re.M)
    assert node is not None and row is not None
    assert node.name() == row.group(1)


# ---- the binary op table ------------------------------------------------------------

BINARY_OPS = tuple(rgrad._C._BINARY_OPS)


def _binary_rows() -> list[tuple[str, str, str, str]]:
    """(name, in-place form, torch node, in-place rule) of each binary row."""
    src = (ROOT / "src" / "ops" / "table.rs").read_text()
    src = src[src.index("macro_rules! binary_op_table"):]
    rows = re.findall(r'^\s+(\w+) (\w+_) \w+ "(\w+)" \{$(.*?)^\s+\}$', src, re.M | re.S)
    return [(n, n_, node, re.search(r"inplace: (\w+)", body).group(1)) for n, n_, node, body in rows]


def test_the_binding_exports_every_binary_row_in_table_order():
    assert BINARY_OPS == tuple(r[0] for r in _binary_rows())
    assert len(BINARY_OPS) >= 4


@pytest.mark.parametrize("name,name_,node,inplace", _binary_rows())
def test_binary_row_has_method_function_stubs_docs_and_op_db(name, name_, node, inplace):
    assert callable(getattr(rgrad.Tensor, name)) and getattr(rgrad.Tensor, name).__doc__
    assert callable(getattr(rgrad, name)) and name in rgrad.__all__
    stubs = _stub_methods()
    assert name in stubs
    assert re.search(rf"^def {name}\(", (ROOT / "python" / "rgrad" / "_C.pyi").read_text(), re.M)
    assert re.search(rf"^\| `{name}` \| `?(none|{name_})`? \| `{node}`", (ROOT / "docs" / "ops.md").read_text(), re.M)
    names = {op.name for op in op_db}
    assert {name, f"Tensor.{name}"} <= names
    if inplace == "recorded":
        assert callable(getattr(rgrad.Tensor, name_)) and name_ in stubs
        assert f"Tensor.{name_}" in names
    else:
        assert not hasattr(rgrad.Tensor, name_)
    a = rgrad.tensor([1.25, 1.5], requires_grad=True)
    assert getattr(rgrad, name)(a, rgrad.tensor([0.5, 2.0])).grad_fn.name() == node


@pytest.mark.parametrize("call,exc,msg", [
    (lambda t: rgrad.atan2(t, 2), TypeError, "atan2(): argument 'other' (position 2) must be Tensor, not int"),
    (lambda t: t.atan2(2), TypeError, "atan2(): argument 'other' (position 1) must be Tensor, not int"),
    (lambda t: rgrad.hypot(1, t), TypeError, "hypot(): argument 'input' (position 1) must be Tensor, not int"),
    (lambda t: rgrad.xlogy(2, 3), TypeError, "xlogy() received an invalid combination of arguments - got (int, int)"),
    (lambda t: rgrad.hypot(t.long(), t.long()), NotImplementedError, "\"hypot_cpu\" not implemented for 'Long'"),
    (lambda t: rgrad.logaddexp(t.bool(), t.bool()), NotImplementedError, "\"logaddexp_cpu\" not implemented for 'Bool'"),
    (lambda t: t.long().atan2_(t.long()), RuntimeError, "result type Float can't be cast to the desired output type Long"),
    (lambda t: t.atan2_(t.unsqueeze(0)), RuntimeError, "output with shape [2] doesn't match the broadcast shape [1, 2]"),
    (lambda t: rgrad.polygamma(-1, t), RuntimeError, "polygamma(n, x) does not support negative n."),
])
def test_binary_rows_refuse_as_torch(call, exc, msg):
    with pytest.raises(exc) as e:
        call(rgrad.tensor([1.0, 2.0]))
    assert str(e.value).startswith(msg)


def test_number_operands_record_torch_nodes_without_an_edge():
    t = rgrad.tensor([1.5, 2.5], requires_grad=True)
    for y, node in ((rgrad.xlogy(2, t), "XlogyBackward1"), (rgrad.xlogy(t, 2.5), "XlogyBackward2"),
                    (t.clone().polygamma_(1), "PolygammaBackward1"), (rgrad.polygamma(2, t), "PolygammaBackward0")):
        assert y.grad_fn.name() == node
        assert len(y.grad_fn.next_functions) == 1


# ---- the arithmetic op table --------------------------------------------------------


def _arith_rows() -> list[tuple[str, str, str, tuple[str, str]]]:
    """(name, torch node, in-place method or "none", numbers) of each arithmetic row."""
    src = (ROOT / "src" / "ops" / "table.rs").read_text()
    src = src[src.index("macro_rules! arith_op_table"):src.index("macro_rules! select_op_table")]
    rows = re.findall(r'^\s+(\w+) \w+ "(\w+)" \{$(.*?)^\s+\}$', src, re.M | re.S)
    out = []
    for n, node, body in rows:
        numbers = re.search(r"numbers: \((\S+), (\S+)\),", body).groups()
        out.append((n, node, re.search(r"inplace: (\w+)", body).group(1), numbers))
    return out


# rows that are not a method of their own name: how they are called (a rounding mode,
# a number on the left)
_ARITH_CALLS = {
    "rsub": lambda a, b: rgrad.rsub(a, b),
    "div_floor": lambda a, b: a.div(b, rounding_mode="floor"),
    "div_trunc": lambda a, b: a.div(b, rounding_mode="trunc"),
}
_ARITH_INPLACE_CALLS = {
    "div_floor": lambda a, b: a.div_(b, rounding_mode="floor"),
    "div_trunc": lambda a, b: a.div_(b, rounding_mode="trunc"),
}
# a Python number first and second, by operator, where Python has one
_ARITH_OPERATORS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "remainder": "%", "floor_divide": "//", "pow": "**"}


def test_the_arithmetic_table_has_its_rows():
    assert [r[0] for r in _arith_rows()] == [
        "add", "sub", "rsub", "mul", "div", "remainder", "fmod", "div_floor", "div_trunc", "floor_divide", "pow",
    ]


@pytest.mark.parametrize("name,node,inplace,numbers", _arith_rows())
def test_arith_row_has_methods_docs_op_db_and_records_its_node(name, node, inplace, numbers):
    a = rgrad.tensor([1.25, 1.5], requires_grad=True)
    b = rgrad.tensor([0.5, 2.0])
    if name in _ARITH_CALLS:
        y = _ARITH_CALLS[name](a, b)
    else:
        assert callable(getattr(rgrad.Tensor, name)) and getattr(rgrad.Tensor, name).__doc__
        assert callable(getattr(rgrad, name)) and name in rgrad.__all__
        assert name in _stub_methods()
        assert {name, f"Tensor.{name}"} <= {op.name for op in op_db}
        y = getattr(a, name)(b)
    assert y.grad_fn.name() == node
    assert re.search(rf"^\| `{name}` \| `?(none|{inplace})`? \| `{node}`", (ROOT / "docs" / "ops.md").read_text(), re.M)
    if inplace != "none":
        assert callable(getattr(rgrad.Tensor, inplace)) and inplace in _stub_methods()
        call = _ARITH_INPLACE_CALLS.get(name, lambda x, o: getattr(x, inplace)(o))
        assert call(a.clone(), b).grad_fn.name() == node


@pytest.mark.parametrize("name,node,inplace,numbers", _arith_rows())
def test_arith_row_numbers_record_what_the_row_says(name, node, inplace, numbers):
    """A Python number operand: a wrapped number (the row's node; an edge `(None, 0)`), a
    Scalar overload (its node, no edge for the number) or no derivative (NotImplemented)."""
    x = rgrad.tensor([1.25, 1.5], requires_grad=True).sin()
    op = _ARITH_OPERATORS.get(name)
    for first, rule in ((True, numbers[0]), (False, numbers[1])):
        if rule == "none" or op is None:
            continue
        y = eval(f"2 {op} x" if first else f"x {op} 2")
        fns = [None if f is None else f.name() for f, _ in y.grad_fn.next_functions]
        if rule == "wrapped":
            assert y.grad_fn.name() == node
            assert fns == ["SinBackward0", None]  # (`2 + x` is recorded as `x + 2`)
        else:
            assert y.grad_fn.name() == ("NotImplemented" if rule == "not_implemented" else rule.strip('"'))
            assert fns == ["SinBackward0"]
        if rule == "not_implemented" or node == "NotImplemented":
            with pytest.raises(RuntimeError, match="is not implemented"):
                y.sum().backward()


# ---- the selection table ---------------------------------------------------------


def _select_rows() -> list[tuple[str, str, list[str]]]:
    """(name, torch node, differentiable inputs in edge order) of each selection row."""
    src = (ROOT / "src" / "ops" / "table.rs").read_text()
    src = src[src.index("macro_rules! select_op_table"):]
    rows = re.findall(r'^\s+(\w+) \w+ "(\w+)" \{$(.*?)^            \}$', src, re.M | re.S)
    return [(n, node, re.findall(r"^\s+(\w+): \|g", body, re.M)) for n, node, body in rows]


# how each row is called, with x = [0.5, 1.5, 2.5] and bounds / operands that require grad
_SELECT_CALLS = {
    "where_": lambda x, a, b: rgrad.where(x > 1, a, b),
    "clamp": lambda x, a, b: x.clamp(1, 2),
    "clamp_tensor": lambda x, a, b: x.clamp(a, b),
}


def test_the_selection_table_has_its_rows():
    assert _select_rows() == [
        ("where_", "WhereBackward0", ["self_", "other"]),
        ("clamp", "ClampBackward1", ["self_"]),
        ("clamp_tensor", "ClampBackward0", ["self_", "min", "max"]),
    ]


@pytest.mark.parametrize("name,node,inputs", _select_rows())
def test_select_row_records_its_node_with_an_edge_per_input_and_has_docs(name, node, inputs):
    x = rgrad.tensor([0.5, 1.5, 2.5], requires_grad=True)
    a = rgrad.tensor([1.0, 1.0, 1.0], requires_grad=True)
    b = rgrad.tensor([2.0, 2.0, 2.0], requires_grad=True)
    y = _SELECT_CALLS[name](x, a, b)
    assert y.grad_fn.name() == node
    assert len(y.grad_fn.next_functions) == len(inputs)
    assert re.search(rf"^\| `{name}` \| `{node}` \|", (ROOT / "docs" / "ops.md").read_text(), re.M)
    base = {"where_": "where", "clamp": "clamp", "clamp_tensor": "clamp"}[name]
    names = {op.name for op in op_db}
    assert {base, f"Tensor.{base}"} <= names


def test_clamp_with_one_tensor_bound_has_an_edge_none_for_the_other():
    x = rgrad.tensor([0.5, 1.5, 2.5], requires_grad=True)
    lo = rgrad.tensor([1.0, 1.0, 1.0], requires_grad=True)
    for y, fns in ((x.clamp(min=lo), ["AccumulateGrad", "AccumulateGrad", None]),
                   (x.clamp(max=lo), ["AccumulateGrad", None, "AccumulateGrad"])):
        assert y.grad_fn.name() == "ClampBackward0"
        assert [None if f is None else type(f).__name__ for f, _ in y.grad_fn.next_functions] == fns


def test_autograd_reaches_the_ops_only_through_their_interface():
    """src/autograd/ uses ops/autograd_api.rs of the ops, and the rest of the crate
    names no CPU kernel outside src/backend/ (the seam a second backend plugs into)."""
    for path in (ROOT / "src" / "autograd").rglob("*.rs"):
        code = path.read_text().split("#[cfg(test)]")[0]
        for line in code.splitlines():
            if "crate::ops" in line:
                assert "crate::ops::autograd_api" in line, f"{path}: {line.strip()}"
    for path in (ROOT / "src").rglob("*.rs"):
        rel = path.relative_to(ROOT / "src").as_posix()
        if rel.startswith("backend/"):
            continue
        code = "\n".join(ln for ln in path.read_text().splitlines() if not ln.lstrip().startswith("//"))
        assert "backend::cpu" not in code, f"{rel} names the CPU backend"
