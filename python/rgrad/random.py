"""The default generator's seed and state (torch/random.py)."""

import contextlib
from collections.abc import Generator as _Gen

from rgrad import _C
from rgrad._C import Generator, default_generator


def manual_seed(seed) -> Generator:
    """Sets the seed for generating random numbers and returns the default generator.

    Args:
        seed: The desired seed; ``int(seed)`` is used, negative values wrap to 64 bits.

    Returns:
        The default generator (``rgrad.default_generator``).
    """
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Sets the seed for generating random numbers to a non-deterministic random number.

    Returns:
        The 64-bit seed used.
    """
    return default_generator.seed()


def initial_seed() -> int:
    """Returns the initial seed for generating random numbers as a Python int."""
    return default_generator.initial_seed()


def get_rng_state() -> "_C.Tensor":
    """Returns the random number generator state.

    Returns:
        torch's 5056 state bytes; an int64 tensor of byte values, as rgrad has no uint8 dtype.
    """
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Sets the random number generator state.

    Args:
        new_state: A state from ``get_rng_state()`` (or the bytes of torch's).
    """
    default_generator.set_state(new_state)


def _rng_state_bytes() -> bytes:
    """The generator state as the 5056 bytes themselves, for keeping it: ``get_rng_state()``'s
    int64 tensor (rgrad has no uint8) takes 8 bytes per byte, 40 KB where torch's state
    tensor takes 5 KB (checkpoint keeps one per checkpointed call). ``set_rng_state`` takes
    it back."""
    return default_generator._get_state_bytes()


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None) -> _Gen:
    """Forks the RNG, so that when you return, the RNG is reset to the state that it was
    previously in.

    Args:
        devices (iterable of Device IDs): devices for which to fork the RNG. CPU RNG state
            is always forked. rgrad runs on the CPU only: a device other than the CPU
            cannot be named.
        enabled (bool): if ``False``, the RNG is not forked.
        device_type (str): device type str (torch's default, ``"cuda"``, has no devices
            here).
    """
    if device_type == "meta":
        yield
        return
    if not enabled:
        yield
        return
    devices = [] if devices is None else list(devices)
    if devices:
        raise RuntimeError(f"rgrad was built without support for device '{device_type or 'cuda'}'")
    cpu_rng_state = _rng_state_bytes()
    try:
        yield
    finally:
        set_rng_state(cpu_rng_state)


__all__ = [
    "Generator",
    "default_generator",
    "manual_seed",
    "seed",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "fork_rng",
]
