//! `rgrad.Tensor`'s flip, roll, rot90, triangle, diagonal and cumulative methods (also
//! `rgrad.<name>`, through `_METHOD_FUNCTIONS`).

use super::convert::type_name;
use super::pytensor::*;
use crate::ops;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PySequence, PyTuple};

/// An int list argument (torch's IntArrayRef): an int, or a sequence of ints; torch's
/// TypeError otherwise.
fn int_list(obj: &Bound<'_, PyAny>, fname: &str, arg: &str, pos: usize) -> PyResult<Vec<i64>> {
    if !obj.is_instance_of::<PyBool>()
        && let Ok(v) = obj.extract::<i64>()
    {
        return Ok(vec![v]);
    }
    let seq = obj.cast::<PySequence>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{fname}(): argument '{arg}' (position {pos}) must be tuple of ints, not {}",
            type_name(obj)
        ))
    })?;
    let mut out = Vec::new();
    for i in 0..seq.len()? {
        let it = seq.get_item(i)?;
        let bad = || {
            PyTypeError::new_err(format!(
                "{fname}(): argument '{arg}' (position {pos}) must be tuple of ints, but found element of type {} at pos {i}",
                type_name(&it)
            ))
        };
        if it.is_instance_of::<PyBool>() || it.is_instance_of::<PyFloat>() {
            return Err(bad());
        }
        out.push(it.extract::<i64>().map_err(|_| bad())?);
    }
    Ok(out)
}

/// torch's TypeError for a required argument not given.
fn missing(fname: &str, arg: &str) -> PyErr {
    PyTypeError::new_err(format!(
        "{fname}() missing 1 required positional arguments: \"{arg}\""
    ))
}

#[pymethods]
impl PyTensor {
    /// Reverses the order of the elements along the given dims (a copy).
    ///
    /// Args:
    ///     *dims: The dims to flip, as ints or as one list or tuple.
    #[pyo3(signature = (*args, dims=None))]
    fn flip(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        dims: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let d = match (dims, args.len()) {
            (Some(d), 0) => int_list(d, "flip", "dims", 2)?,
            (None, 0) => return Err(missing("flip", "dims")),
            (None, 1) => int_list(&args.get_item(0)?, "flip", "dims", 2)?,
            (None, _) => int_list(args.as_any(), "flip", "dims", 2)?,
            (Some(_), _) => {
                return Err(PyTypeError::new_err(
                    "flip() got multiple values for argument 'dims'",
                ));
            }
        };
        wrap(py, run(py, &self.t, || ops::flip(&self.t, &d))?)
    }
    /// Flips the tensor left to right (along dim 1; the tensor must have 2 or more dims).
    fn fliplr(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        wrap(py, run(py, &self.t, || ops::fliplr(&self.t))?)
    }
    /// Flips the tensor up to down (along dim 0; the tensor must have a dim).
    fn flipud(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        wrap(py, run(py, &self.t, || ops::flipud(&self.t))?)
    }
    /// Rolls the elements along the given dims: an element shifted past the last position
    /// comes back at the first. Without dims, the tensor is rolled as if flattened.
    ///
    /// Args:
    ///     shifts: The places each dim is shifted by (an int or a tuple of ints).
    ///     dims: The dims to roll (an int or a tuple of ints), or None.
    #[pyo3(signature = (shifts=None, dims=None))]
    fn roll(
        &self,
        py: Python<'_>,
        shifts: Option<&Bound<'_, PyAny>>,
        dims: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let s = int_list(
            shifts.ok_or_else(|| missing("roll", "shifts"))?,
            "roll",
            "shifts",
            2,
        )?;
        let d = match dims {
            Some(d) => int_list(d, "roll", "dims", 3)?,
            None => Vec::new(),
        };
        wrap(py, run(py, &self.t, || ops::roll(&self.t, &s, &d))?)
    }
    /// Rotates the tensor by 90 degrees `k` times in the plane of `dims`, from the first
    /// dim towards the second.
    ///
    /// Args:
    ///     k: The number of quarter turns (negative: the other way).
    ///     dims: The two dims of the plane of rotation.
    #[pyo3(signature = (k=1, dims=None))]
    fn rot90(
        &self,
        py: Python<'_>,
        k: i64,
        dims: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let d = match dims {
            Some(d) => int_list(d, "rot90", "dims", 3)?,
            None => vec![0, 1],
        };
        wrap(py, run(py, &self.t, || ops::rot90(&self.t, k, &d))?)
    }
    /// Returns the lower triangle of each matrix of the last two dims (the elements on and
    /// below the `diagonal`-th diagonal), the other elements zero.
    ///
    /// Args:
    ///     diagonal: Which diagonal bounds the triangle (0: the main one; positive: above).
    #[pyo3(signature = (diagonal=0))]
    fn tril(&self, py: Python<'_>, diagonal: i64) -> PyResult<Py<PyTensor>> {
        wrap(py, run(py, &self.t, || ops::tril(&self.t, diagonal))?)
    }
    /// Returns the upper triangle of each matrix of the last two dims (the elements on and
    /// above the `diagonal`-th diagonal), the other elements zero.
    ///
    /// Args:
    ///     diagonal: Which diagonal bounds the triangle (0: the main one; positive: above).
    #[pyo3(signature = (diagonal=0))]
    fn triu(&self, py: Python<'_>, diagonal: i64) -> PyResult<Py<PyTensor>> {
        wrap(py, run(py, &self.t, || ops::triu(&self.t, diagonal))?)
    }
    /// In-place version of `tril`.
    ///
    /// Returns:
    ///     This tensor.
    #[pyo3(signature = (diagonal=0))]
    fn tril_(slf: &Bound<'_, Self>, diagonal: i64) -> PyResult<Py<PyTensor>> {
        let x = &slf.get().t;
        run(slf.py(), x, || ops::tril_(x, diagonal))?;
        Ok(slf.clone().unbind())
    }
    /// In-place version of `triu`.
    ///
    /// Returns:
    ///     This tensor.
    #[pyo3(signature = (diagonal=0))]
    fn triu_(slf: &Bound<'_, Self>, diagonal: i64) -> PyResult<Py<PyTensor>> {
        let x = &slf.get().t;
        run(slf.py(), x, || ops::triu_(x, diagonal))?;
        Ok(slf.clone().unbind())
    }
    /// Returns a view of the `offset`-th diagonal of the dims `dim1` and `dim2`, as a new
    /// last dim.
    ///
    /// Args:
    ///     offset: Which diagonal (0: the main one; positive: above it).
    ///     dim1: The first dim of the matrices.
    ///     dim2: The second dim of the matrices.
    #[pyo3(signature = (offset=0, dim1=0, dim2=1))]
    fn diagonal(
        &self,
        py: Python<'_>,
        offset: i64,
        dim1: i64,
        dim2: i64,
    ) -> PyResult<Py<PyTensor>> {
        wrap(py, ops::diagonal(&self.t, offset, dim1, dim2)?)
    }
    /// Returns a tensor whose `offset`-th diagonals in the dims `dim1` and `dim2` (added)
    /// hold this tensor's last dim, the other elements zero.
    ///
    /// Args:
    ///     offset: Which diagonal (0: the main one; positive: above it).
    ///     dim1: The first new dim.
    ///     dim2: The second new dim.
    #[pyo3(signature = (offset=0, dim1=-2, dim2=-1))]
    fn diag_embed(
        &self,
        py: Python<'_>,
        offset: i64,
        dim1: i64,
        dim2: i64,
    ) -> PyResult<Py<PyTensor>> {
        wrap(
            py,
            run(py, &self.t, || ops::diag_embed(&self.t, offset, dim1, dim2))?,
        )
    }
    /// Of a vector, the square matrix with it on the `diagonal`-th diagonal; of a matrix,
    /// its `diagonal`-th diagonal (a copy).
    ///
    /// Args:
    ///     diagonal: Which diagonal (0: the main one; positive: above it).
    #[pyo3(signature = (diagonal=0))]
    fn diag(&self, py: Python<'_>, diagonal: i64) -> PyResult<Py<PyTensor>> {
        wrap(py, run(py, &self.t, || ops::diag(&self.t, diagonal))?)
    }
    /// Returns the sum of the elements of the main diagonal of this matrix.
    fn trace(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        wrap(py, run(py, &self.t, || ops::trace(&self.t))?)
    }
    /// Returns the cumulative sums of the elements along `dim`.
    ///
    /// Args:
    ///     dim: The dim to sum along.
    ///     dtype: If given, the elements are cast to this dtype first (integers and bools
    ///         give int64 by default).
    #[pyo3(signature = (dim=None, *, dtype=None))]
    fn cumsum(
        &self,
        py: Python<'_>,
        dim: Option<i64>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let dim = dim.ok_or_else(|| missing("cumsum", "dim"))?;
        let dt = dtype_arg(dtype)?;
        wrap(py, run(py, &self.t, || ops::cumsum(&self.t, dim, dt))?)
    }
    /// Returns the cumulative products of the elements along `dim`.
    ///
    /// Args:
    ///     dim: The dim to multiply along.
    ///     dtype: If given, the elements are cast to this dtype first (integers and bools
    ///         give int64 by default).
    #[pyo3(signature = (dim=None, *, dtype=None))]
    fn cumprod(
        &self,
        py: Python<'_>,
        dim: Option<i64>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let dim = dim.ok_or_else(|| missing("cumprod", "dim"))?;
        let dt = dtype_arg(dtype)?;
        wrap(py, run(py, &self.t, || ops::cumprod(&self.t, dim, dt))?)
    }
    /// cummax's native half: (values, indices) of the running max along `dim` (the
    /// Python method parses torch's arguments and wraps the pair in
    /// `return_types.cummax`).
    fn _cummax(&self, py: Python<'_>, dim: i64) -> PyResult<Py<PyTuple>> {
        let x = &self.t;
        let (v, i) = run(py, x, || ops::cummax(x, dim))?;
        Ok(PyTuple::new(py, [wrap(py, v)?, wrap(py, i)?])?.unbind())
    }
    /// cummin's native half: (values, indices) of the running min along `dim`.
    fn _cummin(&self, py: Python<'_>, dim: i64) -> PyResult<Py<PyTuple>> {
        let x = &self.t;
        let (v, i) = run(py, x, || ops::cummin(x, dim))?;
        Ok(PyTuple::new(py, [wrap(py, v)?, wrap(py, i)?])?.unbind())
    }
    /// logcumsumexp's native half: the running `log Σ exp` along `dim`.
    fn _logcumsumexp(&self, py: Python<'_>, dim: i64) -> PyResult<Py<PyTensor>> {
        wrap(py, run(py, &self.t, || ops::logcumsumexp(&self.t, dim))?)
    }
}
