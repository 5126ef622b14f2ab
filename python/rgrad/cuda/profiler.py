"""rgrad.cuda.profiler: torch.cuda.profiler's start/stop/profile (cuProfilerStart/Stop
for an external profiler such as Nsight Systems)."""

import contextlib

from rgrad import _C


def start() -> None:
    """Starts an external CUDA profiler's collection (raises without a driver, as torch)."""
    _C._cuda_init()
    _C._cuda_profiler(True)


def stop() -> None:
    """Stops an external CUDA profiler's collection."""
    _C._cuda_init()
    _C._cuda_profiler(False)


@contextlib.contextmanager
def profile():
    """Collects between entering and leaving the block."""
    try:
        start()
        yield
    finally:
        stop()
