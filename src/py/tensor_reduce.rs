//! `rgrad.Tensor`'s reductions and linear algebra.

use super::convert::{self, scalar};
use super::gil;
use super::pytensor::*;
use crate::dtype::Scalar;
use crate::ops;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// A sum asked for in bool (`dtype`: the argument, `rgrad.bool`): torch adds in bool,
/// which is `or`, so the result is a bool telling whether any element is nonzero
/// (rgrad's int64 count, cast). Any other sum as it is.
pub(super) fn bool_sum(
    sum: crate::Result<crate::tensor::Tensor>,
    dtype: Option<crate::dtype::DType>,
) -> crate::Result<crate::tensor::Tensor> {
    let s = sum?;
    if dtype == Some(crate::dtype::DType::Bool) {
        ops::to_dtype(&s, crate::dtype::DType::Bool)
    } else {
        Ok(s)
    }
}

#[pymethods]
impl PyTensor {
    // ---- reductions -------------------------------------------------------------------
    /// Returns the sum of all elements, or of each slice along the given dimension(s).
    ///
    /// Args:
    ///     dim: A dim or tuple of dims to reduce; all dims when None.
    ///     keepdim: Whether the reduced dims are kept with size 1.
    ///     dtype: If given, the tensor is cast to this dtype before the sum.
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn sum(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let d = opt_dims(dim)?;
        let dt = dtype_arg(dtype)?;
        let x = self.cast_to(dtype)?;
        wrap(
            py,
            run(py, &x, || bool_sum(ops::sum(&x, d.as_deref(), keepdim), dt))?,
        )
    }
    /// Returns the mean value of all elements, or of each slice along the given dimension(s).
    ///
    /// Args:
    ///     dim: A dim or tuple of dims to reduce; all dims when None.
    ///     keepdim: Whether the reduced dims are kept with size 1.
    ///     dtype: If given, the tensor is cast to this dtype before the mean.
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn mean(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let d = opt_dims(dim)?;
        let x = self.cast_to(dtype)?;
        wrap(py, run(py, &x, || ops::mean(&x, d.as_deref(), keepdim))?)
    }
    /// Tests if all elements evaluate to True (along `dim`, when given).
    ///
    /// Args:
    ///     dim: The dimension or dimensions to reduce; all of them when None.
    ///     keepdim: Whether the output keeps the reduced dimensions with size 1.
    ///
    /// Returns:
    ///     A bool tensor.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn all(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyTensor>> {
        let d = opt_dims(dim)?;
        let x = &self.t;
        wrap(
            py,
            run(py, x, || ops::all_any(x, d.as_deref(), keepdim, true))?,
        )
    }
    /// Tests if any element evaluates to True (along `dim`, when given).
    ///
    /// Args:
    ///     dim: The dimension or dimensions to reduce; all of them when None.
    ///     keepdim: Whether the output keeps the reduced dimensions with size 1.
    ///
    /// Returns:
    ///     A bool tensor.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn any(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyTensor>> {
        let d = opt_dims(dim)?;
        let x = &self.t;
        wrap(
            py,
            run(py, x, || ops::all_any(x, d.as_deref(), keepdim, false))?,
        )
    }
    /// Returns the product of all elements, or of each slice along dimension `dim`.
    ///
    /// Args:
    ///     dim: The dim to reduce; all dims when None.
    ///     keepdim: Whether the reduced dims are kept with size 1.
    ///     dtype: If given, the tensor is cast to this dtype before the product.
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn prod(
        &self,
        py: Python<'_>,
        dim: Option<i64>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let x = self.cast_to(dtype)?;
        wrap(py, ops::prod(&x, dim, keepdim)?)
    }
    /// Calculates the variance over the dimensions specified by `dim`.
    ///
    /// Args:
    ///     dim: A dim or tuple of dims to reduce; all dims when None.
    ///     unbiased: Whether to use Bessel's correction (N - 1); True by default.
    ///     keepdim: Whether the reduced dims are kept with size 1.
    ///     correction: The difference between N and the divisor; overrides `unbiased`.
    #[pyo3(signature = (dim=None, unbiased=None, keepdim=false, *, correction=None))]
    fn var(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<bool>,
        keepdim: bool,
        correction: Option<f64>,
    ) -> PyResult<Py<PyTensor>> {
        let c = correction.unwrap_or(if unbiased.unwrap_or(true) { 1.0 } else { 0.0 });
        wrap(
            py,
            ops::var_std(&self.t, opt_dims(dim)?.as_deref(), c, keepdim, false)?,
        )
    }
    /// Calculates the standard deviation over the dimensions specified by `dim`.
    ///
    /// Args:
    ///     dim: A dim or tuple of dims to reduce; all dims when None.
    ///     unbiased: Whether to use Bessel's correction (N - 1); True by default.
    ///     keepdim: Whether the reduced dims are kept with size 1.
    ///     correction: The difference between N and the divisor; overrides `unbiased`.
    #[pyo3(signature = (dim=None, unbiased=None, keepdim=false, *, correction=None))]
    fn std(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<bool>,
        keepdim: bool,
        correction: Option<f64>,
    ) -> PyResult<Py<PyTensor>> {
        let c = correction.unwrap_or(if unbiased.unwrap_or(true) { 1.0 } else { 0.0 });
        wrap(
            py,
            ops::var_std(&self.t, opt_dims(dim)?.as_deref(), c, keepdim, true)?,
        )
    }
    /// Returns the vector p-norm of this tensor (the Frobenius norm by default).
    ///
    /// Args:
    ///     p: The order of the norm, a number or 'fro' (2 by default).
    ///     dim: A dim or tuple of dims to reduce; all dims when None.
    ///     keepdim: Whether the reduced dims are kept with size 1.
    #[pyo3(signature = (p=None, dim=None, keepdim=false))]
    fn norm(
        &self,
        py: Python<'_>,
        p: Option<&Bound<'_, PyAny>>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyTensor>> {
        let p = match p {
            None => 2.0,
            Some(o) if o.is_none() => 2.0,
            Some(o) => {
                if let Ok(s) = o.extract::<String>() {
                    ops::norm_order(&s)?
                } else {
                    scalar(o)
                        .map(Scalar::as_f64)
                        .ok_or_else(|| PyTypeError::new_err("norm(): p must be a number"))?
                }
            }
        };
        wrap(
            py,
            ops::norm(&self.t, p, opt_dims(dim)?.as_deref(), keepdim)?,
        )
    }
    /// max(): full reduction, along a dim (values, indices), or elementwise with a tensor;
    /// the Python `max` wraps the pair in `return_types.max`.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn _max(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        self.extremum(py, dim, keepdim, true)
    }
    /// min(): full reduction, along a dim (values, indices), or elementwise with a tensor;
    /// the Python `min` wraps the pair in `return_types.min`.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn _min(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        self.extremum(py, dim, keepdim, false)
    }
    /// Returns the maximum value of each slice along the given dimension(s).
    ///
    /// Args:
    ///     dim: A dim or tuple of dims to reduce; all dims when None.
    ///     keepdim: Whether the reduced dims are kept with size 1.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn amax(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyTensor>> {
        wrap(
            py,
            ops::amax(&self.t, opt_dims(dim)?.as_deref(), keepdim, true, false)?,
        )
    }
    /// Returns the minimum value of each slice along the given dimension(s).
    ///
    /// Args:
    ///     dim: A dim or tuple of dims to reduce; all dims when None.
    ///     keepdim: Whether the reduced dims are kept with size 1.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn amin(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyTensor>> {
        wrap(
            py,
            ops::amax(&self.t, opt_dims(dim)?.as_deref(), keepdim, false, false)?,
        )
    }
    /// Returns the indices of the maximum values, over all elements or along `dim`.
    ///
    /// Args:
    ///     dim: The dim to reduce; when None, the index is into the flattened tensor.
    ///     keepdim: Whether the reduced dims are kept with size 1.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmax(&self, py: Python<'_>, dim: Option<i64>, keepdim: bool) -> PyResult<Py<PyTensor>> {
        wrap(py, ops::argmax(&self.t, dim, keepdim, true)?)
    }
    /// Returns the indices of the minimum values, over all elements or along `dim`.
    ///
    /// Args:
    ///     dim: The dim to reduce; when None, the index is into the flattened tensor.
    ///     keepdim: Whether the reduced dims are kept with size 1.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmin(&self, py: Python<'_>, dim: Option<i64>, keepdim: bool) -> PyResult<Py<PyTensor>> {
        wrap(py, ops::argmax(&self.t, dim, keepdim, false)?)
    }
    /// Returns the log of summed exponentials of each slice along the given dimension(s).
    ///
    /// Args:
    ///     dim: A dim or tuple of dims to reduce.
    ///     keepdim: Whether the reduced dims are kept with size 1.
    #[pyo3(signature = (dim, keepdim=false))]
    fn logsumexp(
        &self,
        py: Python<'_>,
        dim: &Bound<'_, PyAny>,
        keepdim: bool,
    ) -> PyResult<Py<PyTensor>> {
        wrap(py, ops::logsumexp(&self.t, &convert::dims(dim)?, keepdim)?)
    }
    /// Applies a softmax function along dimension `dim`.
    ///
    /// Args:
    ///     dim: The dimension along which the values sum to 1.
    ///     dtype: If given, the tensor is cast to this dtype first.
    #[pyo3(signature = (dim, dtype=None))]
    fn softmax(
        &self,
        py: Python<'_>,
        dim: i64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let x = self.cast_to(dtype)?;
        wrap(py, run(py, &x, || ops::softmax(&x, dim, false))?)
    }
    /// Applies a softmax followed by a logarithm along dimension `dim`.
    ///
    /// Args:
    ///     dim: The dimension along which softmax is computed.
    ///     dtype: If given, the tensor is cast to this dtype first.
    #[pyo3(signature = (dim, dtype=None))]
    fn log_softmax(
        &self,
        py: Python<'_>,
        dim: i64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let x = self.cast_to(dtype)?;
        wrap(py, run(py, &x, || ops::softmax(&x, dim, true))?)
    }

    // ---- linear algebra -----------------------------------------------------------------
    /// Matrix product of this tensor and `other`, with torch's rules for 1-D and batched
    /// operands.
    ///
    /// Args:
    ///     other: A tensor.
    fn matmul(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = convert::tensor_arg(other, "matmul", "other", 1)?;
        wrap(py, gil::detach(py, || ops::matmul(&self.t, &b))?)
    }
    /// Performs a matrix multiplication of this matrix and `mat2`.
    ///
    /// Args:
    ///     mat2: A 2-D tensor.
    fn mm(&self, py: Python<'_>, mat2: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = convert::tensor_arg(mat2, "mm", "mat2", 1)?;
        wrap(py, gil::detach(py, || ops::mm(&self.t, &b))?)
    }
    /// `beta * self + alpha * (mat1 @ mat2)`, this tensor broadcast to the product's shape
    /// (the bias of a linear layer).
    ///
    /// Args:
    ///     mat1: A 2-D tensor.
    ///     mat2: A 2-D tensor.
    ///     beta: The multiplier for this tensor (1 by default; 0 ignores it, NaNs included).
    ///     alpha: The multiplier for the product (1 by default).
    #[pyo3(signature = (mat1, mat2, *, beta=None, alpha=None))]
    fn addmm(
        &self,
        py: Python<'_>,
        mat1: &Bound<'_, PyAny>,
        mat2: &Bound<'_, PyAny>,
        beta: Option<&Bound<'_, PyAny>>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let a = convert::tensor_arg(mat1, "addmm", "mat1", 1)?;
        let b = convert::tensor_arg(mat2, "addmm", "mat2", 2)?;
        let number = |v: Option<&Bound<'_, PyAny>>, name: &str| match v {
            None => Ok(Scalar::Int(1)),
            Some(v) => scalar(v).ok_or_else(|| {
                PyTypeError::new_err(format!(
                    "addmm(): argument '{name}' must be Number, not {}",
                    convert::type_name(v)
                ))
            }),
        };
        let (beta, alpha) = (number(beta, "beta")?, number(alpha, "alpha")?);
        wrap(
            py,
            gil::detach(py, || ops::addmm(&self.t, &a, &b, beta, alpha))?,
        )
    }
    /// Performs a batch matrix-matrix product of the matrices in this tensor and `mat2`.
    ///
    /// Args:
    ///     mat2: A 3-D tensor with the same batch size.
    fn bmm(&self, py: Python<'_>, mat2: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = convert::tensor_arg(mat2, "bmm", "mat2", 1)?;
        wrap(py, gil::detach(py, || ops::bmm(&self.t, &b))?)
    }
    /// Performs a matrix-vector product of this matrix and the vector `vec`.
    ///
    /// Args:
    ///     vec: A 1-D tensor.
    fn mv(&self, py: Python<'_>, vec: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = convert::tensor_arg(vec, "mv", "vec", 1)?;
        wrap(py, ops::mv(&self.t, &b)?)
    }
    /// Computes the dot product of two 1-D tensors.
    ///
    /// Args:
    ///     other: A 1-D tensor with as many elements as this one.
    fn dot(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = convert::tensor_arg(other, "dot", "tensor", 1)?;
        wrap(py, ops::dot(&self.t, &b)?)
    }
    /// Outer product of this 1-D tensor and `vec2`.
    ///
    /// Args:
    ///     vec2: A 1-D tensor.
    fn outer(&self, py: Python<'_>, vec2: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = convert::tensor_arg(vec2, "outer", "vec2", 1)?;
        wrap(py, ops::outer(&self.t, &b)?)
    }
}
