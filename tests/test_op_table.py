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
