//! `rgrad.Tensor`'s ordering ops (sort, topk, kthvalue, median: the native halves, each
//! returning (values, indices); the Python methods (`python/rgrad/_ops_b.py`) parse
//! torch's overloads and wrap the pair in its `return_types` named tuple) and the scatter
//! family (scatter, scatter_add, index_add, index_copy, index_fill and their in-place
//! forms, masked_select, nonzero).

use super::convert::{self, scalar};
use super::pytensor::*;
use crate::dtype::Scalar;
use crate::ops;
use crate::tensor::Tensor;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// scatter's third argument: a tensor `src`, or a number `value` (a 0-d tensor that
/// needs no gradient counts as a tensor, as in torch).
enum Src {
    T(Tensor),
    S(Scalar),
}

fn src_arg(
    src: Option<&Bound<'_, PyAny>>,
    value: Option<&Bound<'_, PyAny>>,
    name: &str,
) -> PyResult<Src> {
    match (src, value) {
        (Some(s), None) => match s.cast::<PyTensor>() {
            Ok(t) => Ok(Src::T(t.get().t.clone())),
            Err(_) => scalar(s).map(Src::S).ok_or_else(|| {
                PyTypeError::new_err(format!(
                    "{name}(): argument 'src' (position 3) must be Tensor, not {}",
                    convert::type_name(s)
                ))
            }),
        },
        (None, Some(v)) => scalar(v).map(Src::S).ok_or_else(|| {
            PyTypeError::new_err(format!(
                "{name}(): argument 'value' must be Number, not {}",
                convert::type_name(v)
            ))
        }),
        _ => Err(PyTypeError::new_err(format!(
            "{name}() received an invalid combination of arguments: expected (dim, index, src) or (dim, index, value)"
        ))),
    }
}

fn alpha_arg(alpha: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Scalar> {
    match alpha {
        None => Ok(Scalar::Int(1)),
        Some(a) => scalar(a).ok_or_else(|| {
            PyTypeError::new_err(format!(
                "{name}(): argument 'alpha' must be Number, not {}",
                convert::type_name(a)
            ))
        }),
    }
}

/// index_fill with a number, or a 0-d tensor (IndexFillBackward1, as torch's overload).
/// index_fill's value: a tensor (a 0-d one, IndexFillBackward1) or a number.
enum Fill {
    T(Tensor),
    S(Scalar),
}

fn fill_arg(value: &Bound<'_, PyAny>) -> PyResult<Fill> {
    match value.cast::<PyTensor>() {
        Ok(v) => Ok(Fill::T(v.get().t.clone())),
        Err(_) => Ok(Fill::S(scalar_or_item(value)?)),
    }
}

fn fill_of(x: &Tensor, dim: i64, index: &Tensor, value: &Fill) -> crate::Result<Tensor> {
    match value {
        Fill::T(v) => ops::index_fill_tensor(x, dim, index, v),
        Fill::S(n) => ops::index_fill(x, dim, index, *n),
    }
}

fn scatter_of(x: &Tensor, dim: i64, index: &Tensor, src: &Src, add: bool) -> crate::Result<Tensor> {
    match src {
        Src::T(s) => ops::scatter(x, dim, index, s, add),
        Src::S(v) => ops::scatter_value(x, dim, index, *v),
    }
}

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
    fn _kthvalue(&self, py: Python<'_>, k: i64, dim: i64, keepdim: bool) -> PyResult<Py<PyTuple>> {
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
    /// nanmedian's native half: the median of the non-NaN elements, or (values, indices)
    /// along `dim`.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn _nanmedian(&self, py: Python<'_>, dim: Option<i64>, keepdim: bool) -> PyResult<Py<PyAny>> {
        let x = &self.t;
        match dim {
            None => Ok(wrap(py, run(py, x, || ops::nanmedian(x))?)?.into_any()),
            Some(d) => Ok(pair(py, run(py, x, || ops::nanmedian_dim(x, d, keepdim))?)?.into_any()),
        }
    }
    /// mode's native half: (values, indices) of the most frequent value along `dim`.
    #[pyo3(signature = (dim=-1, keepdim=false))]
    fn _mode(&self, py: Python<'_>, dim: i64, keepdim: bool) -> PyResult<Py<PyTuple>> {
        let x = &self.t;
        pair(py, run(py, x, || ops::mode(x, dim, keepdim))?)
    }

    /// Writes `src` (or `value`) into a copy of this tensor at the positions `index`
    /// gives along `dim`.
    #[pyo3(signature = (dim, index, src=None, *, value=None))]
    fn scatter(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyAny>,
        src: Option<&Bound<'_, PyAny>>,
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let i = convert::tensor_arg(index, "scatter", "index", 2)?;
        let s = src_arg(src, value, "scatter")?;
        wrap(
            py,
            run(py, &self.t, || scatter_of(&self.t, dim, &i, &s, false))?,
        )
    }
    /// In-place version of `scatter()`.
    #[pyo3(signature = (dim, index, src=None, *, value=None))]
    fn scatter_(
        slf: &Bound<'_, Self>,
        dim: i64,
        index: &Bound<'_, PyAny>,
        src: Option<&Bound<'_, PyAny>>,
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let i = convert::tensor_arg(index, "scatter_", "index", 2)?;
        let s = src_arg(src, value, "scatter_")?;
        let other = match &s {
            Src::T(t) => Some(t),
            Src::S(_) => None,
        };
        ops::scatter_inplace(&slf.get().t, &[other, Some(&i)], |x| {
            scatter_of(x, dim, &i, &s, false)
        })?;
        Ok(slf.clone().unbind())
    }
    /// Adds the elements of `src` into a copy of this tensor at the positions `index`
    /// gives along `dim`.
    fn scatter_add(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyAny>,
        src: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let i = convert::tensor_arg(index, "scatter_add", "index", 2)?;
        let s = convert::tensor_arg(src, "scatter_add", "src", 3)?;
        wrap(
            py,
            run(py, &self.t, || ops::scatter(&self.t, dim, &i, &s, true))?,
        )
    }
    /// In-place version of `scatter_add()`.
    fn scatter_add_(
        slf: &Bound<'_, Self>,
        dim: i64,
        index: &Bound<'_, PyAny>,
        src: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let i = convert::tensor_arg(index, "scatter_add_", "index", 2)?;
        let s = convert::tensor_arg(src, "scatter_add_", "src", 3)?;
        ops::scatter_inplace(&slf.get().t, &[Some(&s), Some(&i)], |x| {
            ops::scatter(x, dim, &i, &s, true)
        })?;
        Ok(slf.clone().unbind())
    }
    /// Reduces the elements of `src` into a copy of this tensor at the positions `index`
    /// gives along `dim`.
    ///
    /// Args:
    ///     dim: The dim along which to index.
    ///     index: The positions (int64, the shape of the elements of `src` used).
    ///     src: The values.
    ///     reduce: "sum", "prod", "mean", "amax" or "amin".
    ///     include_self: Whether this tensor's values at the positions written take part.
    #[pyo3(signature = (dim, index, src, reduce, *, include_self=true))]
    fn scatter_reduce(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyAny>,
        src: &Bound<'_, PyAny>,
        reduce: &str,
        include_self: bool,
    ) -> PyResult<Py<PyTensor>> {
        let i = convert::tensor_arg(index, "scatter_reduce", "index", 2)?;
        let s = convert::tensor_arg(src, "scatter_reduce", "src", 3)?;
        let r = scatter_reduction(reduce)?;
        wrap(
            py,
            run(py, &self.t, || {
                ops::scatter_reduce(&self.t, dim, &i, &s, r, include_self)
            })?,
        )
    }
    /// index_reduce's values (nothing recorded; `rgrad.index_reduce` makes the checks
    /// and records IndexReduceBackward0): `reduce` one of "prod", "mean", "amax", "amin".
    fn _index_reduce_values(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyAny>,
        source: &Bound<'_, PyAny>,
        reduce: &str,
        include_self: bool,
    ) -> PyResult<Py<PyTensor>> {
        let i = convert::tensor_arg(index, "index_reduce", "index", 2)?;
        let s = convert::tensor_arg(source, "index_reduce", "source", 3)?;
        let r = scatter_reduction(reduce)?;
        let large = self.t.numel().max(s.numel()) >= RELEASE_GIL_AT;
        wrap(
            py,
            run_if(py, large, || {
                ops::index_reduce_values(&self.t, dim, &i, &s, r, include_self)
            })?,
        )
    }
    /// In-place version of `scatter_reduce()`.
    #[pyo3(signature = (dim, index, src, reduce, *, include_self=true))]
    fn scatter_reduce_(
        slf: &Bound<'_, Self>,
        dim: i64,
        index: &Bound<'_, PyAny>,
        src: &Bound<'_, PyAny>,
        reduce: &str,
        include_self: bool,
    ) -> PyResult<Py<PyTensor>> {
        let i = convert::tensor_arg(index, "scatter_reduce_", "index", 2)?;
        let s = convert::tensor_arg(src, "scatter_reduce_", "src", 3)?;
        let r = scatter_reduction(reduce)?;
        ops::scatter_inplace(&slf.get().t, &[Some(&s), Some(&i)], |x| {
            ops::scatter_reduce(x, dim, &i, &s, r, include_self)
        })?;
        Ok(slf.clone().unbind())
    }
    /// Adds `alpha` times the rows of `source` into a copy of this tensor at the indices
    /// `index` gives along `dim`.
    #[pyo3(signature = (dim, index, source, *, alpha=None))]
    fn index_add(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyAny>,
        source: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let i = convert::tensor_arg(index, "index_add", "index", 2)?;
        let s = convert::tensor_arg(source, "index_add", "source", 3)?;
        let a = alpha_arg(alpha, "index_add")?;
        wrap(
            py,
            run(py, &self.t, || ops::index_add(&self.t, dim, &i, &s, a))?,
        )
    }
    /// In-place version of `index_add()`.
    #[pyo3(signature = (dim, index, source, *, alpha=None))]
    fn index_add_(
        slf: &Bound<'_, Self>,
        dim: i64,
        index: &Bound<'_, PyAny>,
        source: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let i = convert::tensor_arg(index, "index_add_", "index", 2)?;
        let s = convert::tensor_arg(source, "index_add_", "source", 3)?;
        let a = alpha_arg(alpha, "index_add_")?;
        ops::scatter_inplace(&slf.get().t, &[Some(&s), Some(&i)], |x| {
            ops::index_add(x, dim, &i, &s, a)
        })?;
        Ok(slf.clone().unbind())
    }
    /// Copies the rows of `source` into a copy of this tensor at the indices `index`
    /// gives along `dim`.
    fn index_copy(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyAny>,
        source: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let i = convert::tensor_arg(index, "index_copy", "index", 2)?;
        let s = convert::tensor_arg(source, "index_copy", "source", 3)?;
        wrap(
            py,
            run(py, &self.t, || ops::index_copy(&self.t, dim, &i, &s))?,
        )
    }
    /// In-place version of `index_copy()`.
    fn index_copy_(
        slf: &Bound<'_, Self>,
        dim: i64,
        index: &Bound<'_, PyAny>,
        source: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let i = convert::tensor_arg(index, "index_copy_", "index", 2)?;
        let s = convert::tensor_arg(source, "index_copy_", "source", 3)?;
        ops::scatter_inplace(&slf.get().t, &[Some(&s), Some(&i)], |x| {
            ops::index_copy(x, dim, &i, &s)
        })?;
        Ok(slf.clone().unbind())
    }
    /// Fills a copy of this tensor with `value` at the indices `index` gives along `dim`.
    fn index_fill(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let i = convert::tensor_arg(index, "index_fill", "index", 2)?;
        let v = fill_arg(value)?;
        wrap(py, run(py, &self.t, || fill_of(&self.t, dim, &i, &v))?)
    }
    /// In-place version of `index_fill()`.
    fn index_fill_(
        slf: &Bound<'_, Self>,
        dim: i64,
        index: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let i = convert::tensor_arg(index, "index_fill_", "index", 2)?;
        let v = fill_arg(value)?;
        ops::scatter_inplace(&slf.get().t, &[Some(&i)], |x| fill_of(x, dim, &i, &v))?;
        Ok(slf.clone().unbind())
    }
    /// The elements where `mask` (broadcast with this tensor) is true, as a 1-D tensor.
    fn masked_select(&self, py: Python<'_>, mask: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let m = convert::tensor_arg(mask, "masked_select", "mask", 2)?;
        wrap(py, run(py, &self.t, || ops::masked_select(&self.t, &m))?)
    }
    /// nonzero's native half: the coordinates of the nonzero elements, `[n, ndim]`.
    fn _nonzero(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        wrap(py, run(py, &self.t, || ops::nonzero(&self.t))?)
    }
}

/// scatter_reduce's `reduce` (torch also takes "max" and "min"), torch's error otherwise.
fn scatter_reduction(reduce: &str) -> PyResult<crate::backend::ScatterReduce> {
    let name = match reduce {
        "max" => "amax",
        "min" => "amin",
        r => r,
    };
    crate::backend::ScatterReduce::parse(name).ok_or_else(|| {
        pyo3::exceptions::PyRuntimeError::new_err(format!(
            "reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
        ))
    })
}
