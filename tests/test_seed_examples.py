"""The code examples of the seed write-ups (shared/seeds/*.txt), run as scripts.

Each ``seed_examples/NNN_name.py`` is one example, as its document gives it, and
``NNN_name.out`` is what torch printed for it in a fresh process, normalised (see
``normalise``). Every example runs in its own fresh process with rgrad standing in
for torch (``seed_examples/_rgrad_as_torch.py``), and its normalised output must
equal the ``.out`` file. When torch is installed, the examples also run on torch
(``seed_examples/_torch_forked.py``: one process imports torch, each example runs
in a fork of it), and the ``.out`` files must still be what torch prints.

torch seeds its default CPU generator from /dev/urandom in every process
(``torch.initial_seed()`` differs from run to run), so an example that draws
unseeded random numbers prints different numbers on every torch run. Such an
example says so in its header (``UNSEEDED``), and for it the floating-point
numbers are masked on both sides before the comparison (see ``mask_numbers``).

Re-record the ``.out`` files from torch with ``python tests/test_seed_examples.py --record``.
Examples that need the profiler, anomaly mode or CUDA are not here.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

EXAMPLES_DIR = Path(__file__).parent / "seed_examples"
RUNNER = EXAMPLES_DIR / "_rgrad_as_torch.py"
TORCH_RUNNER = EXAMPLES_DIR / "_torch_forked.py"
UNSEEDED = "# unseeded random numbers"
EXAMPLES = sorted(p.stem for p in EXAMPLES_DIR.glob("[0-9][0-9][0-9]_*.py"))
TIMEOUT_S = 120

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
# Where torch prints its own module name in a repr (rgrad prints ``rgrad`` there):
# dtypes (torch.float32), torch.Size, legacy types (torch.FloatTensor), and
# qualified class names (<torch.utils.hooks.RemovableHandle ...>,
# torch.autograd.grad_mode.set_grad_enabled(mode=True)). Message text that names
# a torch function (``Use `with torch.no_grad():` instead``) is left alone: rgrad
# prints torch's wording there.
_MODULE_NAME = re.compile(
    r"(?<![\w.])torch(?=\.(?:"
    r"(?:float|double|half|bfloat|int|uint|long|short|bool|complex|cfloat|cdouble)\d*\b"
    r"|Size\b|\w*Tensor\b|autograd\.|utils\.|nn\."
    r"))"
)


# torch's C++ warnings end with the place in torch's own build tree that raised them;
# rgrad, which has no such source file, leaves that trailer out.
_TRIGGERED = re.compile(r" \(Triggered internally at [^)]*\)")


def normalise(text: str) -> str:
    """Memory addresses become 0xADDR, torch's module name in reprs becomes rgrad, and
    torch's "(Triggered internally at ...)" warning trailer is dropped."""
    return _MODULE_NAME.sub("rgrad", _ADDRESS.sub("0xADDR", _TRIGGERED.sub("", text)))


_FLOAT = re.compile(r"\s*-?\d+\.\d*(?:e[+-]?\d+)?")


def mask_numbers(text: str) -> str:
    """Every floating-point number (and the padding before it) becomes `` F``."""
    return _FLOAT.sub(" F", text)


def _is_unseeded(name: str) -> bool:
    return UNSEEDED in (EXAMPLES_DIR / f"{name}.py").read_text(encoding="utf-8")


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONIOENCODING="utf-8")


def _result(stdout: str, stderr: str, returncode: int) -> str:
    if returncode != 0 or stderr:
        stdout += f"--- exit status {returncode}, stderr:\n{stderr}"
    return normalise(stdout)


def run_on_rgrad(name: str) -> str:
    """The example's normalised output, from a fresh process with rgrad as torch."""
    proc = subprocess.run(
        [sys.executable, str(RUNNER), f"{name}.py"],
        cwd=EXAMPLES_DIR,
        env=_env(),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=TIMEOUT_S,
    )
    return _result(proc.stdout, proc.stderr, proc.returncode)


def run_on_torch(names: list[str]) -> dict[str, str]:
    """Each example's normalised output on torch, each from a fresh fork."""
    with tempfile.TemporaryDirectory() as outdir:
        subprocess.run(
            [sys.executable, str(TORCH_RUNNER), outdir, *names],
            cwd=EXAMPLES_DIR,
            env=_env(),
            check=True,
            timeout=TIMEOUT_S * 2,
        )
        read = lambda name, ext: (Path(outdir) / f"{name}.{ext}").read_text(encoding="utf-8")  # noqa: E731
        return {name: _result(read(name, "stdout"), read(name, "stderr"), int(read(name, "rc"))) for name in names}


def _torch_installed() -> bool:
    return importlib.util.find_spec("torch") is not None


@functools.cache
def _all_outputs() -> dict[tuple[str, str], str]:
    """Runs every example on rgrad (and on torch when installed), in parallel, once."""
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        on_torch = pool.submit(run_on_torch, EXAMPLES) if _torch_installed() else None
        outputs = {("rgrad", name): out for name, out in zip(EXAMPLES, pool.map(run_on_rgrad, EXAMPLES))}
        if on_torch is not None:
            outputs.update({("torch", name): out for name, out in on_torch.result().items()})
    return outputs


def _expected(name: str) -> str:
    return (EXAMPLES_DIR / f"{name}.out").read_text(encoding="utf-8")


def _assert_same(name: str, expected: str, actual: str, expected_name: str, actual_name: str) -> None:
    if _is_unseeded(name):
        expected, actual = mask_numbers(expected), mask_numbers(actual)
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                fromfile=expected_name,
                tofile=actual_name,
            )
        )
        pytest.fail(f"output differs:\n{diff}", pytrace=False)


def test_every_example_has_a_recorded_output() -> None:
    assert EXAMPLES
    missing = [name for name in EXAMPLES if not (EXAMPLES_DIR / f"{name}.out").exists()]
    assert missing == []


def test_normalise_rewrites_only_module_names_in_reprs() -> None:
    assert normalise("dtype=torch.float64 torch.Size([2]) torch.FloatTensor") == (
        "dtype=rgrad.float64 rgrad.Size([2]) rgrad.FloatTensor"
    )
    assert normalise("<torch.utils.hooks.RemovableHandle object at 0x7f3a>") == (
        "<rgrad.utils.hooks.RemovableHandle object at 0xADDR>"
    )
    assert normalise("torch.autograd.grad_mode.set_grad_enabled(mode=True)") == (
        "rgrad.autograd.grad_mode.set_grad_enabled(mode=True)"
    )
    message = "Use `with torch.no_grad():` instead."
    assert normalise(message) == message


def test_mask_numbers_hides_values_and_their_padding() -> None:
    assert mask_numbers("tensor([-198.3092, 1469.2306,  827.6272], grad_fn=<MulBackward0>)") == (
        "tensor([ F, F, F], grad_fn=<MulBackward0>)"
    )
    assert mask_numbers("tensor([2.0480e+02, 1.0240e-01])") == "tensor([ F, F])"


@pytest.mark.parametrize("name", EXAMPLES)
def test_rgrad_prints_what_torch_prints(name: str) -> None:
    _assert_same(name, _expected(name), _all_outputs()[("rgrad", name)], f"{name}.out (torch)", f"{name} on rgrad")


@pytest.mark.parametrize("name", EXAMPLES)
def test_recorded_output_is_still_what_torch_prints(name: str) -> None:
    if not _torch_installed():
        pytest.skip("torch is not installed")
    _assert_same(name, _expected(name), _all_outputs()[("torch", name)], f"{name}.out (recorded)", f"{name} on torch")


def _record() -> None:
    """Writes each example's ``.out`` from torch."""
    for name, out in run_on_torch(EXAMPLES).items():
        (EXAMPLES_DIR / f"{name}.out").write_text(out, encoding="utf-8")
        print(f"recorded {name}.out")


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python tests/test_seed_examples.py --record")
    _record()
