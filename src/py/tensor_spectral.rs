//! `rgrad.Tensor`'s spectral decompositions, as private methods that `rgrad.linalg`
//! (`python/rgrad/linalg.py`) wraps in torch's functions and return types.

use super::pytensor::*;
use crate::ops;
use pyo3::prelude::*;

#[pymethods]
impl PyTensor {
    /// `linalg.eigh(self, UPLO)`: (eigenvalues, eigenvectors); eigenvectors is empty
    /// when `compute_v` is false and nothing needs a gradient (eigvalsh).
    #[pyo3(signature = (uplo="L", compute_v=true))]
    fn _linalg_eigh(
        &self,
        py: Python<'_>,
        uplo: &str,
        compute_v: bool,
    ) -> PyResult<(Py<PyTensor>, Py<PyTensor>)> {
        let (l, v) = run_matrix(py, &self.t, || ops::linalg_eigh(&self.t, uplo, compute_v))?;
        Ok((wrap(py, l)?, wrap(py, v)?))
    }
    /// `linalg.svd(self, full_matrices)`: (U, S, Vh); U and Vh are empty when
    /// `compute_uv` is false and nothing needs a gradient (svdvals).
    #[pyo3(signature = (full_matrices=true, compute_uv=true))]
    fn _linalg_svd(
        &self,
        py: Python<'_>,
        full_matrices: bool,
        compute_uv: bool,
    ) -> PyResult<(Py<PyTensor>, Py<PyTensor>, Py<PyTensor>)> {
        let (u, s, vh) = run_matrix(py, &self.t, || {
            ops::linalg_svd(&self.t, full_matrices, compute_uv)
        })?;
        Ok((wrap(py, u)?, wrap(py, s)?, wrap(py, vh)?))
    }
    /// `linalg.pinv(self, atol=, rtol=, hermitian=)` (the tolerances as tensors: 0-d or one
    /// per matrix; None: torch's defaults).
    #[pyo3(signature = (atol=None, rtol=None, hermitian=false))]
    fn _linalg_pinv(
        &self,
        py: Python<'_>,
        atol: Option<PyRef<'_, PyTensor>>,
        rtol: Option<PyRef<'_, PyTensor>>,
        hermitian: bool,
    ) -> PyResult<Py<PyTensor>> {
        let (atol, rtol) = (atol.map(|t| t.t.clone()), rtol.map(|t| t.t.clone()));
        let p = run_matrix(py, &self.t, || {
            ops::linalg_pinv(&self.t, atol.as_ref(), rtol.as_ref(), hermitian)
        })?;
        wrap(py, p)
    }
    /// `linalg.qr(self, mode)`: (Q, R); Q is empty with mode 'r'.
    #[pyo3(signature = (mode="reduced"))]
    fn _linalg_qr(&self, py: Python<'_>, mode: &str) -> PyResult<(Py<PyTensor>, Py<PyTensor>)> {
        let (q, r) = run_matrix(py, &self.t, || ops::linalg_qr(&self.t, mode))?;
        Ok((wrap(py, q)?, wrap(py, r)?))
    }
}
