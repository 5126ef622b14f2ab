"""What the benchmark scripts print about the machine they ran on."""

from __future__ import annotations


def cpu_model() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo, as `lscpu` prints it), or "unknown"."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"
