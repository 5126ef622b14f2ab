"""Named tuples returned by ops that give (values, indices), as torch.return_types."""

from collections import namedtuple

max = namedtuple("max", ["values", "indices"])  # noqa: A001
min = namedtuple("min", ["values", "indices"])  # noqa: A001
max.__module__ = min.__module__ = "rgrad.return_types"


def _structseq(name: str) -> type:
    """A (values, indices) named tuple printed as torch prints its return types."""
    base = namedtuple(name, ["values", "indices"])

    def __repr__(self) -> str:
        return f"rgrad.return_types.{name}(\nvalues={self.values!r},\nindices={self.indices!r})"

    return type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__module__": "rgrad.return_types"})


sort = _structseq("sort")
topk = _structseq("topk")
kthvalue = _structseq("kthvalue")
median = _structseq("median")
nanmedian = _structseq("nanmedian")
mode = _structseq("mode")
cummax = _structseq("cummax")
cummin = _structseq("cummin")


def _structseq_of(name: str, fields: tuple[str, ...]) -> type:
    """A named tuple of tensors printed as torch prints its return types."""
    base = namedtuple(name, fields)

    def __repr__(self) -> str:
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"rgrad.return_types.{name}(\n{body})"

    return type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__module__": "rgrad.return_types"})


aminmax = _structseq_of("aminmax", ("min", "max"))

# torch.linalg's factorizations and solves (rgrad.linalg)
linalg_slogdet = _structseq_of("linalg_slogdet", ("sign", "logabsdet"))
slogdet = _structseq_of("slogdet", ("sign", "logabsdet"))
linalg_inv_ex = _structseq_of("linalg_inv_ex", ("inverse", "info"))
linalg_solve_ex = _structseq_of("linalg_solve_ex", ("result", "info"))
linalg_cholesky_ex = _structseq_of("linalg_cholesky_ex", ("L", "info"))
linalg_lu_factor = _structseq_of("linalg_lu_factor", ("LU", "pivots"))
linalg_lu_factor_ex = _structseq_of("linalg_lu_factor_ex", ("LU", "pivots", "info"))
linalg_lu = _structseq_of("linalg_lu", ("P", "L", "U"))
lu_unpack = _structseq_of("lu_unpack", ("P", "L", "U"))

# the spectral decompositions (rgrad.linalg)
linalg_eigh = _structseq_of("linalg_eigh", ("eigenvalues", "eigenvectors"))
linalg_svd = _structseq_of("linalg_svd", ("U", "S", "Vh"))
svd = _structseq_of("svd", ("U", "S", "V"))
linalg_qr = _structseq_of("linalg_qr", ("Q", "R"))
linalg_lstsq = _structseq_of("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
triangular_solve = _structseq_of("triangular_solve", ("solution", "cloned_coefficient"))
geqrf = _structseq_of("geqrf", ("a", "tau"))
linalg_ldl_factor = _structseq_of("linalg_ldl_factor", ("LD", "pivots"))
linalg_ldl_factor_ex = _structseq_of("linalg_ldl_factor_ex", ("LD", "pivots", "info"))
# (helper-45) torch.histogram
histogram = _structseq_of("histogram", ("hist", "bin_edges"))
