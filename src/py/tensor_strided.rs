//! `rgrad.Tensor`'s views of any region of its storage: `as_strided` and `unfold`
//! (`ops/strided.rs`).

use super::pytensor::*;
use crate::ops;
use pyo3::prelude::*;

#[pymethods]
impl PyTensor {
    /// Creates a view of this tensor's storage with the given size, stride and storage
    /// offset (elements may repeat; the view must stay inside the storage).
    ///
    /// Args:
    ///     size: The shape of the view.
    ///     stride: The stride of each dimension, in elements.
    ///     storage_offset: The offset of the view's first element in the storage, in
    ///         elements (None: this tensor's own offset).
    #[pyo3(signature = (size, stride, storage_offset=None))]
    fn as_strided(
        &self,
        py: Python<'_>,
        size: Vec<i64>,
        stride: Vec<i64>,
        storage_offset: Option<i64>,
    ) -> PyResult<Py<PyTensor>> {
        wrap(
            py,
            ops::as_strided_view(&self.t, &size, &stride, storage_offset)?,
        )
    }
    /// Returns a view of all the slices of `size` elements along `dimension`, `step`
    /// apart, in a new last dimension.
    ///
    /// Args:
    ///     dimension: The dimension to slide along.
    ///     size: The size of each slice.
    ///     step: The step between the slices' starts.
    fn unfold(
        &self,
        py: Python<'_>,
        dimension: i64,
        size: i64,
        step: i64,
    ) -> PyResult<Py<PyTensor>> {
        wrap(py, ops::unfold(&self.t, dimension, size, step)?)
    }
}
