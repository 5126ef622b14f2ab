"""Named tuples returned by reductions that give (values, indices), as torch.return_types."""

from collections import namedtuple

max = namedtuple("max", ["values", "indices"])  # noqa: A001
min = namedtuple("min", ["values", "indices"])  # noqa: A001
max.__module__ = min.__module__ = "rgrad.return_types"
