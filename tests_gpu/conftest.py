"""The CUDA suite: run by scripts/gpu_check.sh on a machine with an NVIDIA GPU (CI has
none; tests/test_cuda_nogpu.py covers what a machine without one can check)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import rgrad  # noqa: E402


def pytest_configure(config):
    if not rgrad.cuda.is_available():
        raise pytest.UsageError("tests_gpu/ needs an NVIDIA GPU and driver (rgrad.cuda.is_available() is False)")
