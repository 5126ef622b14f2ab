"""The profiler examples of the seed write-ups (tests/seed_examples/profiler/), run as
scripts with rgrad standing in for torch, against what torch prints.

A profiler table lists every op an op calls internally, and ATen's internals are not
rgrad's (torch's ``x ** 2`` calls ``aten::result_type`` and ``aten::to``, its backward()
``aten::ones_like`` → ``aten::empty_like`` → ...; rgrad's kernels call no such ops).
So the comparison, after masking times (and their units) and percentages (``mask_numbers``):

- keeps every line that is not a table row (header, rules, footer, reprs, lists) as is;
- keeps, of the table rows, the names of the user's ops and of the autograd engine's:
  the op the example calls (``aten::pow``), each ``autograd::engine::evaluate_function:
  ...``, each backward node and ``torch::autograd::AccumulateGrad``, sorted (a table
  sorted by a time orders rows by times, which differ; the order of unsorted events is
  tests/test_profiler.py's).

Each example's torch output is recorded in ``NNN_name.out`` (``--record`` rewrites them),
and checked against torch again where torch is installed. The ``use_cuda=True`` example
of seed 004 needs a GPU (``.cuda()``) and belongs to the CUDA issue.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from test_seed_examples import RUNNER, _env, _torch_installed, mask_numbers, normalise

EXAMPLES_DIR = Path(__file__).parent / "seed_examples" / "profiler"
EXAMPLES = sorted(p.stem for p in EXAMPLES_DIR.glob("[0-9][0-9][0-9]_*.py"))
NAME_WIDTH = 55  # the Name column (right-aligned, max_name_column_width)
_RULE = re.compile(r"^-+(  -+)+  $")
_TIME_UNIT = re.compile(r"F(?:us|ms|s)\b")
_ENGINE_ROW = re.compile(
    r"^(aten::pow|autograd::engine::evaluate_function: .*|\w+Backward\d*|torch::autograd::AccumulateGrad)$"
)


def compared(text: str) -> str:
    """The text the comparison reads (see the module docs)."""
    # a table is: rule, header, rule, rows, rule, footer
    out, rows, rules = [], [], 0
    for line in normalise(text).splitlines():
        if _RULE.match(line):
            rules += 1
            out.extend(sorted(rows))
            rows = []
            out.append(line)
            continue
        if rules % 3 == 2:
            name = line[:NAME_WIDTH].strip()
            if _ENGINE_ROW.match(name):
                rows.append(name)
            continue
        out.append(line)
    # (the unit goes with the magnitude: a slow first op prints ms where it printed us)
    return _TIME_UNIT.sub("F<time>", mask_numbers("\n".join(out)))


def _run(args: list[str], name: str) -> str:
    proc = subprocess.run(
        [sys.executable, *args, f"{name}.py"],
        cwd=EXAMPLES_DIR,
        env=_env(),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
    )
    # (torch's CPU build prints Kineto's own log lines on stderr; they are not the example's)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_comparison_keeps_engine_rows_and_drops_aten_internals():
    table = "\n".join(
        [
            "-" * 55 + "  " + "-" * 12 + "  ",
            " " * 51 + "Name" + "  " + " " * 2 + "Self CPU %" + "  ",
            "-" * 55 + "  " + "-" * 12 + "  ",
            " " * 46 + "aten::pow  " + "     12.00%  ",
            " " * 38 + "aten::result_type  " + "      1.00%  ",
            " " * 43 + "PowBackward0  " + "      3.50%  ",
            "-" * 55 + "  " + "-" * 12 + "  ",
            "Self CPU time total: 479.598us",
        ]
    )
    kept = compared(table).splitlines()
    assert kept[3:5] == ["PowBackward0", "aten::pow"]
    assert not any("result_type" in line for line in kept)
    assert kept[-1] == "Self CPU time total: F<time>"


@pytest.mark.parametrize("name", EXAMPLES)
def test_rgrad_prints_what_torch_prints(name: str) -> None:
    ours = compared(_run([str(RUNNER)], name))
    expected = compared((EXAMPLES_DIR / f"{name}.out").read_text(encoding="utf-8"))
    assert ours == expected


@pytest.mark.parametrize("name", EXAMPLES)
def test_recorded_output_is_still_what_torch_prints(name: str) -> None:
    if not _torch_installed():
        pytest.skip("torch is not installed")
    theirs = compared(_run([], name))
    expected = compared((EXAMPLES_DIR / f"{name}.out").read_text(encoding="utf-8"))
    assert theirs == expected


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python tests/test_seed_profiler.py --record")
    for example in EXAMPLES:
        (EXAMPLES_DIR / f"{example}.out").write_text(_run([], example), encoding="utf-8")
        print(f"recorded {example}.out")
