//! `rgrad.Tensor`'s cross product, `dist` and `aminmax` (the Python layer gives
//! `torch.cross`'s default dim, `rgrad.linalg` and `return_types.aminmax`).

use super::convert::{scalar, tensor_ref};
use super::pytensor::*;
use crate::dtype::Scalar;
use crate::ops;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

#[pymethods]
impl PyTensor {
    /// `linalg.cross(self, other, dim)`: the cross product of 3-vectors along `dim` (the
    /// operands broadcast; `Tensor.cross` / `rgrad.linalg.cross` choose the dim).
    fn _linalg_cross(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        dim: i64,
    ) -> PyResult<Py<PyTensor>> {
        let o = tensor_ref(other, "linalg_cross", "other", 2)?;
        let large = self.t.numel().max(o.numel()) >= RELEASE_GIL_AT;
        wrap(py, run_if(py, large, || ops::cross(&self.t, o, dim))?)
    }
    /// Returns the p-norm of `self - other` (broadcast).
    ///
    /// Args:
    ///     other: The other tensor.
    ///     p: The norm's order (2 by default; inf, -inf and 0 too).
    #[pyo3(signature = (other, p=None))]
    fn dist(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        p: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let o = tensor_ref(other, "dist", "other", 1)?;
        let p = match p {
            None => 2.0,
            Some(v) => scalar(v).map(Scalar::as_f64).ok_or_else(|| {
                PyTypeError::new_err(format!(
                    "dist(): argument 'p' (position 2) must be Number, not {}",
                    super::convert::type_name(v)
                ))
            })?,
        };
        let large = self.t.numel().max(o.numel()) >= RELEASE_GIL_AT;
        wrap(py, run_if(py, large, || ops::dist(&self.t, o, p))?)
    }
    /// The min and the max (over everything, or along `dim`) as a pair; the Python
    /// `aminmax` wraps it in `return_types.aminmax`.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn _aminmax(
        &self,
        py: Python<'_>,
        dim: Option<i64>,
        keepdim: bool,
    ) -> PyResult<(Py<PyTensor>, Py<PyTensor>)> {
        let (lo, hi) = run(py, &self.t, || ops::aminmax(&self.t, dim, keepdim))?;
        Ok((wrap(py, lo)?, wrap(py, hi)?))
    }
}
