//! `rgrad.Tensor`'s ordering ops (sort, topk, kthvalue, median): the native halves, each
//! returning (values, indices); the Python methods (`python/rgrad/_ops_b.py`) parse
//! torch's overloads and wrap the pair in its `return_types` named tuple.

use super::pytensor::*;
use crate::ops;
use crate::tensor::Tensor;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

fn pair(py: Python<'_>, (v, i): (Tensor, Tensor)) -> PyResult<Py<PyTuple>> {
    Ok(PyTuple::new(py, [wrap(py, v)?, wrap(py, i)?])?.unbind())
}

#[pymethods]
impl PyTensor {
    /// sort's native half: (values, indices) along `dim`; `stable` None is torch's
    /// overload without it.
    #[pyo3(signature = (dim=-1, descending=false, stable=None))]
    fn _sort(
        &self,
        py: Python<'_>,
        dim: i64,
        descending: bool,
        stable: Option<bool>,
    ) -> PyResult<Py<PyTuple>> {
        let x = &self.t;
        pair(py, run(py, x, || ops::sort(x, dim, descending, stable))?)
    }
    /// topk's native half: (values, indices) of the `k` largest (smallest) along `dim`.
    #[pyo3(signature = (k, dim=-1, largest=true, sorted=true))]
    fn _topk(
        &self,
        py: Python<'_>,
        k: i64,
        dim: i64,
        largest: bool,
        sorted: bool,
    ) -> PyResult<Py<PyTuple>> {
        let x = &self.t;
        pair(py, run(py, x, || ops::topk(x, k, dim, largest, sorted))?)
    }
    /// kthvalue's native half: (values, indices) of the k-th smallest along `dim`.
    #[pyo3(signature = (k, dim=-1, keepdim=false))]
    fn _kthvalue(
        &self,
        py: Python<'_>,
        k: i64,
        dim: i64,
        keepdim: bool,
    ) -> PyResult<Py<PyTuple>> {
        let x = &self.t;
        pair(py, run(py, x, || ops::kthvalue(x, k, dim, keepdim))?)
    }
    /// median's native half: the median of all elements, or (values, indices) along `dim`.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn _median(&self, py: Python<'_>, dim: Option<i64>, keepdim: bool) -> PyResult<Py<PyAny>> {
        let x = &self.t;
        match dim {
            None => Ok(wrap(py, run(py, x, || ops::median(x))?)?.into_any()),
            Some(d) => Ok(pair(py, run(py, x, || ops::median_dim(x, d, keepdim))?)?.into_any()),
        }
    }
}
