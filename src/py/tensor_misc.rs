//! `rgrad.Tensor`'s natives behind the Python `cdist`, `pdist`, `searchsorted` and
//! `bucketize` (the Python layer makes torch's composite choices and argument checks).

use super::convert::tensor_ref;
use super::pytensor::*;
use crate::ops;
use pyo3::prelude::*;

#[pymethods]
impl PyTensor {
    /// `_cdist_forward(self, x2, p, compute_mode)`: the p-norm distances between the
    /// rows of `self` and of `x2` (batch dims broadcast), one node (CdistBackward0).
    #[pyo3(signature = (x2, p, compute_mode=None))]
    fn _cdist_forward(
        &self,
        py: Python<'_>,
        x2: &Bound<'_, PyAny>,
        p: f64,
        compute_mode: Option<i64>,
    ) -> PyResult<Py<PyTensor>> {
        let o = tensor_ref(x2, "_cdist_forward", "x2", 2)?;
        let large = self.t.numel().max(o.numel()) >= RELEASE_GIL_AT;
        wrap(
            py,
            run_if(py, large, || {
                ops::cdist_forward(&self.t, o, p, compute_mode)
            })?,
        )
    }
    /// `_euclidean_dist(self, x2)`: Euclidean distances between rows by one matrix
    /// product (EuclideanDistBackward0).
    fn _euclidean_dist(&self, py: Python<'_>, x2: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let o = tensor_ref(x2, "_euclidean_dist", "x2", 2)?;
        let large = self.t.numel().max(o.numel()) >= RELEASE_GIL_AT;
        wrap(py, run_if(py, large, || ops::euclidean_dist(&self.t, o))?)
    }
    /// `_gcd(self, other)`: torch.gcd of two tensors (the checks and `out=` in Python).
    fn _gcd(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let o = tensor_ref(other, "_gcd", "other", 2)?;
        let large = self.t.numel().max(o.numel()) >= RELEASE_GIL_AT;
        let (a, b) = (ops::Operand::T(&self.t), ops::Operand::T(o));
        wrap(py, run_if(py, large, || ops::gcd(a, b))?)
    }
    /// `_lcm(self, other)`: torch.lcm of two tensors.
    fn _lcm(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let o = tensor_ref(other, "_lcm", "other", 2)?;
        let large = self.t.numel().max(o.numel()) >= RELEASE_GIL_AT;
        let (a, b) = (ops::Operand::T(&self.t), ops::Operand::T(o));
        wrap(py, run_if(py, large, || ops::lcm(a, b))?)
    }
    /// `_pdist_forward(self, p)`: the distances between the rows of a contiguous 2-D
    /// tensor, pairs i < j in row-major order (PdistBackward0).
    fn _pdist_forward(&self, py: Python<'_>, p: f64) -> PyResult<Py<PyTensor>> {
        wrap(py, run(py, &self.t, || ops::pdist_forward(&self.t, p))?)
    }
    /// `searchsorted(self, input, right=..., sorter=...)` with `self` the boundaries.
    #[pyo3(signature = (input, right=false, sorter=None))]
    fn _searchsorted(
        &self,
        py: Python<'_>,
        input: &Bound<'_, PyAny>,
        right: bool,
        sorter: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let v = tensor_ref(input, "searchsorted", "input", 2)?;
        let s = match sorter {
            Some(s) => Some(tensor_ref(s, "searchsorted", "sorter", 5)?),
            None => None,
        };
        let large = v.numel() >= RELEASE_GIL_AT;
        wrap(
            py,
            run_if(py, large, || ops::searchsorted(&self.t, v, right, s))?,
        )
    }
    /// `unique(self, dim=...)` / `unique_consecutive(self, dim=...)`: (values, inverse,
    /// counts); the Python layer picks what torch returns.
    #[pyo3(signature = (dim=None, consecutive=false))]
    fn _unique(
        &self,
        py: Python<'_>,
        dim: Option<i64>,
        consecutive: bool,
    ) -> PyResult<(Py<PyTensor>, Py<PyTensor>, Py<PyTensor>)> {
        let (v, i, c) = run(py, &self.t, || ops::unique(&self.t, dim, consecutive))?;
        Ok((wrap(py, v)?, wrap(py, i)?, wrap(py, c)?))
    }
    /// `bincount(self, weights, minlength)`.
    #[pyo3(signature = (weights=None, minlength=0))]
    fn _bincount(
        &self,
        py: Python<'_>,
        weights: Option<&Bound<'_, PyAny>>,
        minlength: i64,
    ) -> PyResult<Py<PyTensor>> {
        let w = match weights {
            Some(w) => Some(tensor_ref(w, "bincount", "weights", 2)?),
            None => None,
        };
        wrap(
            py,
            run(py, &self.t, || ops::bincount(&self.t, w, minlength))?,
        )
    }
    /// `histc(self, bins, min, max)`.
    fn _histc(&self, py: Python<'_>, bins: i64, min: f64, max: f64) -> PyResult<Py<PyTensor>> {
        wrap(
            py,
            run(py, &self.t, || ops::histc(&self.t, bins, min, max))?,
        )
    }
    /// `norm(self, p, dim, keepdim)` over one dim, recording NormBackward1 (what
    /// `pairwise_distance` calls).
    fn _norm_dim(&self, py: Python<'_>, p: f64, dim: i64, keepdim: bool) -> PyResult<Py<PyTensor>> {
        wrap(
            py,
            run(py, &self.t, || {
                ops::norm_scalaropt_dim(&self.t, p, dim, keepdim)
            })?,
        )
    }
}

/// `block_diag(*tensors)`: the operands placed along the diagonal (BlockDiagBackward0).
#[pyfunction]
pub(super) fn _block_diag(py: Python<'_>, tensors: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
    let ts = super::tensor_list(tensors, "block_diag")?;
    wrap(py, run_if(py, false, || ops::block_diag(&ts))?)
}
