//! `rgrad.Tensor`'s shape and view methods.

use super::convert::{self};
use super::pytensor::*;
use crate::ops;
use pyo3::prelude::*;
use pyo3::types::{PyInt, PyTuple};

#[pymethods]
impl PyTensor {
    // ---- shape ----------------------------------------------------------------------------
    /// Expects this tensor to be <= 2-D and transposes dimensions 0 and 1.
    fn t(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        wrap(py, ops::t(&self.t)?)
    }
    /// Returns a view of this tensor with its dimensions reversed.
    #[getter(T)]
    fn big_t(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        let n = self.t.ndim() as i64;
        let dims: Vec<i64> = (0..n).rev().collect();
        wrap(py, ops::permute(&self.t, &dims)?)
    }
    /// Returns a view in which the dimensions `dim0` and `dim1` are swapped.
    ///
    /// Args:
    ///     dim0: The first dimension.
    ///     dim1: The second dimension.
    fn transpose(&self, py: Python<'_>, dim0: i64, dim1: i64) -> PyResult<Py<PyTensor>> {
        wrap(py, ops::transpose(&self.t, dim0, dim1)?)
    }
    /// Returns a view of this tensor with its dimensions permuted.
    ///
    /// Args:
    ///     *dims: The new order of the dimensions, as ints or as one list or tuple.
    #[pyo3(signature = (*dims))]
    fn permute(&self, py: Python<'_>, dims: &Bound<'_, PyTuple>) -> PyResult<Py<PyTensor>> {
        wrap(
            py,
            ops::permute(&self.t, &convert::sizes(dims, "permute")?)?,
        )
    }
    /// Returns a tensor with the same data and number of elements, but with the specified
    /// shape: a view when possible, else a copy.
    ///
    /// Args:
    ///     *shape: The new shape, as ints or as one list or tuple; one entry may be -1.
    #[pyo3(signature = (*shape))]
    fn reshape(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<Py<PyTensor>> {
        wrap(
            py,
            ops::reshape(&self.t, &convert::sizes(shape, "reshape")?)?,
        )
    }
    /// Returns a new tensor with the same data as this tensor but of a different shape.
    ///
    /// Args:
    ///     *shape: The new shape, as ints or as one list or tuple; one entry may be -1.
    #[pyo3(signature = (*shape))]
    fn view(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<Py<PyTensor>> {
        if shape.len() == 1
            && let Some(d) = dtype_arg(Some(&shape.get_item(0)?)).ok().flatten()
        {
            return wrap(py, ops::view_dtype(&self.t, d)?);
        }
        wrap(py, ops::view(&self.t, &convert::sizes(shape, "view")?)?)
    }
    /// Views this tensor as the same size as `other`.
    ///
    /// Args:
    ///     other: A tensor whose shape is used.
    fn view_as(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let o = convert::tensor_arg(other, "view_as", "other", 1)?;
        let s: Vec<i64> = o.shape().iter().map(|&d| d as i64).collect();
        wrap(py, ops::view(&self.t, &s)?)
    }
    /// Returns this tensor as the same shape as `other`.
    ///
    /// Args:
    ///     other: A tensor whose shape is used.
    fn reshape_as(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let o = convert::tensor_arg(other, "reshape_as", "other", 1)?;
        let s: Vec<i64> = o.shape().iter().map(|&d| d as i64).collect();
        wrap(py, ops::reshape(&self.t, &s)?)
    }
    /// Flattens dimensions `start_dim` to `end_dim` into one dimension.
    ///
    /// Args:
    ///     start_dim: The first dim to flatten.
    ///     end_dim: The last dim to flatten.
    #[pyo3(signature = (start_dim=0, end_dim=-1))]
    fn flatten(&self, py: Python<'_>, start_dim: i64, end_dim: i64) -> PyResult<Py<PyTensor>> {
        wrap(py, ops::flatten(&self.t, start_dim, end_dim)?)
    }
    /// Returns a tensor with the specified dimensions of size 1 removed.
    ///
    /// Args:
    ///     dim: A dim or tuple of dims; all dims of size 1 when None.
    #[pyo3(signature = (dim=None))]
    fn squeeze(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyTensor>> {
        match opt_dims(dim)? {
            Some(d) if is_sequence(dim) => wrap(py, ops::squeeze_tuple(&self.t, &d)?),
            d => wrap(py, ops::squeeze(&self.t, d.as_deref())?),
        }
    }
    /// In-place version of `squeeze`: this tensor's size-1 dims are removed (its data
    /// untouched); returns this tensor.
    ///
    /// Args:
    ///     dim: A dim or tuple of dims; all dims of size 1 when None.
    #[pyo3(signature = (dim=None))]
    fn squeeze_(slf: &Bound<'_, Self>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyTensor>> {
        let d = opt_dims(dim)?;
        ops::squeeze_(&slf.get().t, d.as_deref(), is_sequence(dim))?;
        Ok(slf.clone().unbind())
    }
    /// In-place version of `unsqueeze`; returns this tensor.
    ///
    /// Args:
    ///     dim: The index at which to insert the dimension.
    fn unsqueeze_(slf: &Bound<'_, Self>, dim: i64) -> PyResult<Py<PyTensor>> {
        ops::unsqueeze_(&slf.get().t, dim)?;
        Ok(slf.clone().unbind())
    }
    /// In-place version of `transpose`; returns this tensor.
    ///
    /// Args:
    ///     dim0: The first dimension.
    ///     dim1: The second dimension.
    fn transpose_(slf: &Bound<'_, Self>, dim0: i64, dim1: i64) -> PyResult<Py<PyTensor>> {
        ops::transpose_(&slf.get().t, dim0, dim1)?;
        Ok(slf.clone().unbind())
    }
    /// In-place version of `swapdims` (`transpose_`); returns this tensor.
    ///
    /// Args:
    ///     dim0: The first dimension.
    ///     dim1: The second dimension.
    fn swapdims_(slf: &Bound<'_, Self>, dim0: i64, dim1: i64) -> PyResult<Py<PyTensor>> {
        Self::transpose_(slf, dim0, dim1)
    }
    /// In-place version of `swapaxes` (`transpose_`); returns this tensor.
    ///
    /// Args:
    ///     axis0: The first dimension.
    ///     axis1: The second dimension.
    fn swapaxes_(slf: &Bound<'_, Self>, axis0: i64, axis1: i64) -> PyResult<Py<PyTensor>> {
        Self::transpose_(slf, axis0, axis1)
    }
    /// In-place version of `t`; returns this tensor.
    fn t_(slf: &Bound<'_, Self>) -> PyResult<Py<PyTensor>> {
        ops::t_(&slf.get().t)?;
        Ok(slf.clone().unbind())
    }
    /// Returns a new tensor with a dimension of size one inserted at the specified position.
    ///
    /// Args:
    ///     dim: The index at which to insert the dimension.
    fn unsqueeze(&self, py: Python<'_>, dim: i64) -> PyResult<Py<PyTensor>> {
        wrap(py, ops::unsqueeze(&self.t, dim)?)
    }
    /// Returns a new view of this tensor with singleton dimensions expanded to a larger size.
    ///
    /// Args:
    ///     *sizes: The desired size, as ints or as one list or tuple; -1 keeps a dimension.
    #[pyo3(signature = (*sizes))]
    fn expand(&self, py: Python<'_>, sizes: &Bound<'_, PyTuple>) -> PyResult<Py<PyTensor>> {
        wrap(
            py,
            ops::expand_sizes(&self.t, &convert::sizes(sizes, "expand")?)?,
        )
    }
    /// Expands this tensor to the same size as `other`.
    ///
    /// Args:
    ///     other: A tensor whose shape is used.
    fn expand_as(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let o = convert::tensor_arg(other, "expand_as", "other", 1)?;
        wrap(py, ops::expand_view(&self.t, &o.shape())?)
    }
    /// Repeats this tensor along the specified dimensions (copying the data).
    ///
    /// Args:
    ///     *sizes: The number of times to repeat along each dimension.
    #[pyo3(signature = (*sizes))]
    fn repeat(&self, py: Python<'_>, sizes: &Bound<'_, PyTuple>) -> PyResult<Py<PyTensor>> {
        wrap(py, ops::repeat(&self.t, &convert::sizes(sizes, "repeat")?)?)
    }
    /// Splits the tensor into chunks, each a view of this tensor.
    ///
    /// Args:
    ///     split_size_or_sections: The size of each chunk (the last may be smaller), or a
    ///         list of sizes.
    ///     dim: The dimension along which to split.
    ///
    /// Returns:
    ///     A tuple of tensors.
    #[pyo3(signature = (split_size_or_sections, dim=0))]
    fn split(
        &self,
        py: Python<'_>,
        split_size_or_sections: &Bound<'_, PyAny>,
        dim: i64,
    ) -> PyResult<Py<PyTuple>> {
        self.split_pieces(py, split_size_or_sections, dim, ["Split", "SplitWithSizes"])
    }
    /// torch's `unsafe_split` (an int) / `unsafe_split_with_sizes` (a list): the pieces of
    /// `split`, sharing this tensor's storage but not views of it (UnsafeSplitBackward0,
    /// UnsafeSplitWithSizesBackward0).
    #[pyo3(signature = (split_size_or_sections, dim=0))]
    fn _unsafe_split(
        &self,
        py: Python<'_>,
        split_size_or_sections: &Bound<'_, PyAny>,
        dim: i64,
    ) -> PyResult<Py<PyTuple>> {
        self.split_pieces(
            py,
            split_size_or_sections,
            dim,
            ["UnsafeSplit", "UnsafeSplitWithSizes"],
        )
    }
    /// torch's `clone_preserve_strides` (what its `*_scatter` ops write into): a copy of
    /// this tensor's whole storage with its sizes, strides and offset, not a view; a
    /// row-major copy when its elements overlap. No autograd.
    fn _clone_preserve_strides(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        wrap(py, ops::clone_preserve_strides(&self.t)?)
    }
    /// Attempts to split a tensor into the specified number of chunks.
    ///
    /// Args:
    ///     chunks: The number of chunks; fewer may be returned.
    ///     dim: The dimension along which to split.
    ///
    /// Returns:
    ///     A tuple of tensors.
    #[pyo3(signature = (chunks, dim=0))]
    fn chunk(&self, py: Python<'_>, chunks: usize, dim: i64) -> PyResult<Py<PyTuple>> {
        let objs: Vec<Py<PyTensor>> = ops::chunk(&self.t, chunks, dim)?
            .into_iter()
            .map(|p| wrap(py, p))
            .collect::<PyResult<_>>()?;
        Ok(PyTuple::new(py, objs)?.unbind())
    }
    /// Removes a tensor dimension.
    ///
    /// Args:
    ///     dim: The dimension to remove.
    ///
    /// Returns:
    ///     A tuple of all slices along `dim`, without it.
    #[pyo3(signature = (dim=0))]
    fn unbind(&self, py: Python<'_>, dim: i64) -> PyResult<Py<PyTuple>> {
        let objs: Vec<Py<PyTensor>> = ops::unbind(&self.t, dim)?
            .into_iter()
            .map(|p| wrap(py, p))
            .collect::<PyResult<_>>()?;
        Ok(PyTuple::new(py, objs)?.unbind())
    }
    /// Returns a new tensor that is a narrowed version of this tensor (a view).
    ///
    /// Args:
    ///     dim: The dimension along which to narrow.
    ///     start: The index of the first element kept.
    ///     length: The number of elements kept.
    fn narrow(&self, py: Python<'_>, dim: i64, start: i64, length: i64) -> PyResult<Py<PyTensor>> {
        wrap(py, ops::narrow(&self.t, dim, start, length)?)
    }
    /// Slices this tensor along the selected dimension at the given index (a view).
    ///
    /// Args:
    ///     dim: The dimension to slice.
    ///     index: The index to select.
    fn select(&self, py: Python<'_>, dim: i64, index: i64) -> PyResult<Py<PyTensor>> {
        wrap(py, ops::select(&self.t, dim, index)?)
    }
}

/// A dims argument given as a tuple or list (not one int): squeeze's node differs.
fn is_sequence(dim: Option<&Bound<'_, PyAny>>) -> bool {
    dim.is_some_and(|d| d.cast::<PyTuple>().is_ok() || d.cast::<pyo3::types::PyList>().is_ok())
}

impl PyTensor {
    /// `split`'s and `unsafe_split`'s pieces along `dim`: `arg` an int (each piece's size,
    /// the last smaller; negative refused with torch's message) or a list of sizes; `kinds`
    /// the two forms' node kinds (`ops::split`).
    fn split_pieces(
        &self,
        py: Python<'_>,
        arg: &Bound<'_, PyAny>,
        dim: i64,
        kinds: [&'static str; 2],
    ) -> PyResult<Py<PyTuple>> {
        // (torch's order of checks: a 0-d tensor, a negative size, the dim's range)
        if self.t.ndim() == 0 {
            return Err(
                crate::Error::runtime("split expects at least a 1-dimensional tensor").into(),
            );
        }
        // (an int is told from a list by its type: a failed extraction makes an exception)
        let (sizes, kind) = if arg.is_instance_of::<PyInt>() {
            let s = arg.extract::<i64>()?;
            if s < 0 {
                return Err(crate::Error::runtime(format!(
                    "split expects split_size be non-negative, but got split_size={s}"
                ))
                .into());
            }
            let len = ops::split_dim_size(&self.t, dim, "split")?;
            (ops::split_sizes(len, s as usize)?, kinds[0])
        } else {
            ops::split_dim_size(&self.t, dim, "split")?;
            (split_sizes_arg(arg, kinds[1])?, kinds[1])
        };
        let parts = ops::split(&self.t, &sizes, dim, kind)?;
        let objs: Vec<Py<PyTensor>> = parts
            .into_iter()
            .map(|p| wrap(py, p))
            .collect::<PyResult<_>>()?;
        Ok(PyTuple::new(py, objs)?.unbind())
    }
}

/// A list or tuple of split sizes, with torch's errors (its argument parser's for what is
/// not a sequence of ints, split_with_sizes' for a negative size).
fn split_sizes_arg(arg: &Bound<'_, PyAny>, kind: &str) -> PyResult<Vec<usize>> {
    let f = if kind == "SplitWithSizes" {
        "split_with_sizes"
    } else {
        "unsafe_split_with_sizes"
    };
    let items: Vec<Bound<'_, PyAny>> =
        if arg.is_instance_of::<pyo3::types::PyList>() || arg.is_instance_of::<PyTuple>() {
            arg.try_iter()?.collect::<PyResult<_>>()?
        } else {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "{f}(): argument 'split_sizes' (position 2) must be tuple of ints, not {}",
                convert::type_name(arg)
            )));
        };
    let mut sizes = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if !item.is_instance_of::<PyInt>() {
            let t = convert::type_name(item);
            return Err(pyo3::exceptions::PyTypeError::new_err(if i == 0 {
                format!(
                    "{f}(): argument 'split_sizes' (position 2) must be tuple of ints, but found element of type {t} at pos 0"
                )
            } else {
                format!(
                    "{f}(): argument 'split_sizes' failed to unpack the object at pos 2 with error \"type must be tuple of ints,but got {t}\""
                )
            }));
        }
        sizes.push(item.extract::<i64>()?);
    }
    if sizes.iter().any(|&s| s < 0) {
        let shown: Vec<String> = sizes.iter().map(i64::to_string).collect();
        return Err(crate::Error::runtime(format!(
            "{f} expects split_sizes have only non-negative entries, but got split_sizes=[{}]",
            shown.join(", ")
        ))
        .into());
    }
    Ok(sizes.into_iter().map(|s| s as usize).collect())
}
