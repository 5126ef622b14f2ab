//! `rgrad.Tensor`'s indexing: `__getitem__`, `__setitem__` and the index ops.

use super::convert::{self, scalar};
use super::pytensor::*;
use crate::dtype::{DType, Scalar};
use crate::ops::{self, TensorIndex};
use crate::tensor::Tensor;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyEllipsis, PyList, PySlice, PyTuple};

/// The items of a Python subscript as the core's `TensorIndex`es (lists of numbers index
/// like int64 tensors), then the core's indexing algorithm (`ops::apply_subscript`).
fn apply_index(x: &Tensor, index: &Bound<'_, PyAny>) -> PyResult<(Tensor, Vec<Option<Tensor>>)> {
    let items: Vec<Bound<'_, PyAny>> = if let Ok(t) = index.cast::<PyTuple>() {
        t.iter().collect()
    } else {
        vec![index.clone()]
    };
    let items = items
        .iter()
        .map(subscript_item)
        .collect::<PyResult<Vec<_>>>()?;
    // torch's own words for a lone number or slice on a 0-dim tensor (inside a tuple,
    // or as a tensor, they are "too many indices" as for any tensor)
    if x.ndim() == 0 && !index.is_instance_of::<PyTuple>() {
        match items.as_slice() {
            [TensorIndex::Int(0)] => {
                return Err(pyo3::exceptions::PyIndexError::new_err(
                    "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or \
                     `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number",
                ));
            }
            [TensorIndex::Int(i)] => {
                return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                    "index {i} is out of bounds for dimension 0 with size 0"
                )));
            }
            [TensorIndex::Slice { .. }] => {
                return Err(pyo3::exceptions::PyIndexError::new_err(
                    "slice() cannot be applied to a 0-dim tensor.",
                ));
            }
            _ => {}
        }
    }
    Ok(ops::apply_subscript(x, &items)?)
}

/// One item of a subscript.
fn subscript_item(it: &Bound<'_, PyAny>) -> PyResult<TensorIndex> {
    if it.is_instance_of::<PyEllipsis>() {
        return Ok(TensorIndex::Ellipsis);
    }
    if it.is_none() {
        return Ok(TensorIndex::None);
    }
    if it.is_instance_of::<pyo3::types::PyBool>() {
        return Ok(TensorIndex::Bool(it.extract()?));
    }
    if let Ok(s) = it.cast::<PySlice>() {
        return Ok(TensorIndex::Slice {
            start: s.getattr("start")?.extract()?,
            stop: s.getattr("stop")?.extract()?,
            step: s.getattr("step")?.extract()?,
        });
    }
    if let Ok(t) = it.cast::<PyTensor>() {
        return Ok(TensorIndex::Tensor(t.get().t.clone()));
    }
    if it.is_instance_of::<PyList>() {
        let (buf, shape) = convert::data_to_buffer(it, None)?;
        crate::replay::const_born(&buf);
        let t = Tensor::from_buffer(buf, &shape);
        if t.dtype().is_float() {
            return Err(pyo3::exceptions::PyIndexError::new_err(
                "tensors used as indices must be long, int, byte or bool tensors",
            ));
        }
        return Ok(TensorIndex::Tensor(t));
    }
    if let Some(Scalar::Int(i)) = scalar(it) {
        return Ok(TensorIndex::Int(i));
    }
    Err(pyo3::exceptions::PyIndexError::new_err(
        "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got "
            .to_string()
            + &convert::type_name(it)
            + ")",
    ))
}

/// A tensor's values for index_put: cast on masked_fill's path, else of x's dtype.
fn put_kind(indices: &[Option<Tensor>], v: &Tensor, accumulate: bool) -> ops::PutValues {
    if masked_fill_path(indices, v, accumulate) {
        ops::PutValues::Cast
    } else {
        ops::PutValues::SameDtype
    }
}

/// torch's index_put_ sends one bool mask (after basic indexing) with a one-element value
/// and no accumulation to masked_fill_, which casts the value.
fn masked_fill_path(indices: &[Option<Tensor>], v: &Tensor, accumulate: bool) -> bool {
    let mut adv = indices.iter().flatten();
    matches!((adv.next(), adv.next()), (Some(m), None) if m.dtype() == DType::Bool)
        && v.numel() == 1
        && !accumulate
}

/// The `indices` tuple (tensors or None) and `values` tensor of index_put.
fn index_put_args(
    indices: &Bound<'_, PyAny>,
    values: &Bound<'_, PyAny>,
    op: &str,
) -> PyResult<(Vec<Option<Tensor>>, Tensor)> {
    let seq = indices.cast::<PyTuple>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{op}(): argument 'indices' must be tuple of Tensors, not {}",
            convert::type_name(indices)
        ))
    })?;
    let mut idx = Vec::with_capacity(seq.len());
    for (i, item) in seq.iter().enumerate() {
        if item.is_none() {
            idx.push(None);
        } else {
            idx.push(Some(convert::tensor_arg(&item, op, "indices", i + 1)?));
        }
    }
    let v = convert::tensor_arg(values, op, "values", 2)?;
    Ok((idx, v))
}

#[pymethods]
impl PyTensor {
    // ---- indexing -------------------------------------------------------------------------
    /// Gathers values along an axis specified by `dim`.
    ///
    /// Args:
    ///     dim: The axis along which to index.
    ///     index: An int64 tensor of indices, with as many dims as this tensor.
    fn gather(&self, py: Python<'_>, dim: i64, index: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let i = convert::tensor_arg(index, "gather", "index", 2)?;
        wrap(py, ops::gather(&self.t, dim, &i)?)
    }
    /// Returns a new tensor which indexes this tensor along dimension `dim` using the
    /// entries in `index`.
    ///
    /// Args:
    ///     dim: The dimension in which to index.
    ///     index: A 1-D int64 tensor of indices.
    fn index_select(
        &self,
        py: Python<'_>,
        dim: i64,
        index: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let i = convert::tensor_arg(index, "index_select", "index", 2)?;
        wrap(py, ops::index_select(&self.t, dim, &i)?)
    }
    /// Out-of-place version of `masked_fill_()`.
    ///
    /// Args:
    ///     mask: A bool tensor, broadcastable to this tensor's shape.
    ///     value: A number or a 0-d tensor.
    fn masked_fill(
        &self,
        py: Python<'_>,
        mask: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let m = convert::tensor_arg(mask, "masked_fill", "mask", 1)?;
        match grad_value(&self.t, value) {
            Some(v) => wrap(py, ops::masked_fill_tensor(&self.t, &m, &v)?),
            None => wrap(py, ops::masked_fill(&self.t, &m, scalar_or_item(value)?)?),
        }
    }
    /// Puts `values` at `indices` (a tuple of index tensors, one per leading dimension;
    /// None skips a dimension), in place; `accumulate=True` adds instead of writing.
    #[pyo3(signature = (indices, values, accumulate = false))]
    fn index_put_(
        slf: &Bound<'_, Self>,
        indices: &Bound<'_, PyAny>,
        values: &Bound<'_, PyAny>,
        accumulate: bool,
    ) -> PyResult<Py<PyAny>> {
        let me = slf.get();
        let (idx, v) = index_put_args(indices, values, "index_put_")?;
        ops::index_put_(&me.t, &idx, &v, accumulate, put_kind(&idx, &v, accumulate))?;
        Ok(slf.clone().into_any().unbind())
    }
    /// Out-of-place `index_put_`: a copy of this tensor with `values` put at `indices`.
    #[pyo3(signature = (indices, values, accumulate = false))]
    fn index_put(
        &self,
        py: Python<'_>,
        indices: &Bound<'_, PyAny>,
        values: &Bound<'_, PyAny>,
        accumulate: bool,
    ) -> PyResult<Py<PyTensor>> {
        let (idx, v) = index_put_args(indices, values, "index_put")?;
        let kind = put_kind(&idx, &v, accumulate);
        wrap(
            py,
            ops::index_put_checked(&self.t, &idx, &v, accumulate, kind)?,
        )
    }
    /// `self[index]`: ints, slices, None, Ellipsis and bool give views; int or bool
    /// tensors and lists index as in torch (a copy).
    fn __getitem__(&self, py: Python<'_>, index: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let (r, adv) = apply_index(&self.t, index)?;
        if adv.is_empty() {
            // x[...] and x[:] still return a new view object, as in torch
            if r.same(&self.t) {
                // a 0-d tensor has no dim to slice: a differentiable 0-d view keeps its
                // history (torch: AliasBackward0; a bare alias lost requires_grad)
                let v = if self.t.ndim() == 0 {
                    ops::view(&self.t, &[])?
                } else {
                    ops::slice(&self.t, 0, None, None, 1)?
                };
                return wrap(py, v);
            }
            return wrap(py, r);
        }
        wrap(py, ops::index(&r, &adv)?)
    }
    /// `self[index] = value`: writes a number, tensor or nested list in place.
    fn __setitem__(&self, index: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let (r, adv) = apply_index(&self.t, index)?;
        let v = match value.cast::<PyTensor>() {
            Ok(t) => t.get().t.clone(),
            Err(_) => match scalar(value) {
                Some(s) => {
                    if let Err(e) = s.check_fits(self.t.dtype()) {
                        if !adv.is_empty() {
                            // torch converts the number after its leading-mask check and
                            // autograd's checks of the target (the index tensors' dtypes
                            // come later)
                            ops::check_leading_masks(&r.shape(), &adv)?;
                            ops::check_writable(&r)?;
                        }
                        return Err(e.into());
                    }
                    ops::scalar_tensor(s, self.t.dtype())
                }
                None => {
                    let (buf, shape) = convert::data_to_buffer(value, Some(self.t.dtype()))?;
                    {
                        crate::replay::const_born(&buf);
                        Tensor::from_buffer(buf, &shape)
                    }
                }
            },
        };
        // (a number or list written into a device tensor is copied there first)
        let v = match self.t.device() {
            d @ crate::device::Device::Cuda(_) if v.device() != d => ops::to_device(&v, d)?,
            _ => v,
        };
        if adv.is_empty() && (r.shape() == v.shape() || v.ndim() == 0) {
            // torch's copy_to: the same sizes are a copy_, a 0-d value (a number) a fill_,
            // which may write an expanded tensor
            let number = value.cast::<PyTensor>().is_err();
            if !number && r.shape() == v.shape() {
                // (a tensor of the same sizes is a copy_ even when 0-d: copy_ does not
                // check an int or bool target, fill_ does)
                ops::copy_(&r, &v)?;
            } else if v.ndim() == 0 {
                // a number may fill an expanded tensor, a 0-d tensor may not (torch's
                // fill_ with a tensor checks for shared memory)
                match scalar(value) {
                    Some(s) if number => ops::fill_(&r, s)?,
                    _ => ops::fill_tensor_(&r, &v)?,
                };
            } else {
                ops::copy_(&r, &v)?;
            }
            return Ok(());
        }
        // torch strips the value's leading size-1 dims first (slicePrefix1sDims)
        let lead = v.shape().iter().take_while(|&&d| d == 1).count();
        let v = if lead > 0 {
            let rest: Vec<i64> = v.shape()[lead..].iter().map(|&d| d as i64).collect();
            ops::reshape(&v, &rest)?
        } else {
            v
        };
        if adv.is_empty() {
            ops::copy_(&r, &v)?;
        } else {
            // torch checks the number of indices before autograd checks the write, and,
            // writing a number, the leading bool mask too
            ops::check_index_count(&r.shape(), &adv)?;
            if value.cast::<PyTensor>().is_err() {
                ops::check_leading_masks(&r.shape(), &adv)?;
            }
            let kind = if value.cast::<PyTensor>().is_err() {
                ops::PutValues::Number
            } else {
                put_kind(&adv, &v, false)
            };
            ops::index_put_(&r, &adv, &v, false, kind)?;
        }
        Ok(())
    }
}
