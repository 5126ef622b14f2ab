"""Every op of tests/op_db.py has a case in benches/op_sweep.py, the kernel sweep that
issue 15's targets are measured with, or is listed here with the reason it needs none.

A case is named by its op, optionally followed by arguments or a qualifier
(``sum(0)``, ``transpose copy``, ``pow.scalar_exponent``); op_db's in-place and
``Tensor.`` forms count as their op (one kernel), and operators (``__add__``) as the
named op they call.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import rgrad
from op_db import op_db

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benches"))
import op_sweep  # noqa: E402

_VIEW = "a view, timed by the t / reshape / expand cases (no kernel)"
_ALIAS = "an alias of Tensor.to(dtype), timed by the to(...) cases"
EXCLUDED = {
    "T": _VIEW, "view": _VIEW, "view_as": _VIEW, "reshape_as": _VIEW, "expand_as": _VIEW,
    "type": _ALIAS, "type_as": _ALIAS, "long": _ALIAS, "double": _ALIAS, "bool": _ALIAS,
    "absolute": "an alias of abs (the same function), timed by its case",
    "negative": "an alias of neg (the same function), timed by its case",
    "subtract": "an alias of sub (the same function), timed by its case",
    "multiply": "an alias of mul (the same function), timed by its case",
    "divide": "an alias of div (the same function), timed by its case",
}


def _op(name: str) -> str:
    """The op a case or an op_db entry stands for."""
    name = name.removeprefix("Tensor.")
    if name.startswith("nn.functional."):
        return ".".join(name.split(".")[:3])
    return re.split(r"[ (.]", name, maxsplit=1)[0].removesuffix("_")


def test_every_op_has_a_sweep_case():
    have = {_op(c) for c in op_sweep.cases(rgrad, op_sweep.SIZES["tiny"])}
    need = {_op(o.name) for o in op_db if not o.name.startswith("__")}
    missing = sorted(need - have - set(EXCLUDED))
    assert not missing, f"ops with no case in benches/op_sweep.py: {missing}"
    stale = sorted(set(EXCLUDED) & have)
    assert not stale, f"excluded but swept: {stale}"


def test_every_case_runs_at_every_size_on_rgrad():
    # the cases build their inputs per size; a tiny run of each checks they all work
    for size, shape in op_sweep.SIZES.items():
        if size == "4M":
            continue  # same code as 256 with more elements
        for name, f in op_sweep.cases(rgrad, shape).items():
            out = f()
            outs = out if isinstance(out, (tuple, list)) else (out,)
            assert outs and all(isinstance(o, rgrad.Tensor) for o in outs), (size, name, type(out))
