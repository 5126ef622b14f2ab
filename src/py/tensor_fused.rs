//! `rgrad.Tensor`'s addcmul, addcdiv, lerp, addr, nan_to_num and their in-place forms,
//! and nansum (also `rgrad.<name>`, through `_METHOD_FUNCTIONS`).

use super::convert::{self, scalar};
use super::pytensor::*;
use crate::dtype::Scalar;
use crate::ops::{self, Weight};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// A keyword number argument (`value`, `beta`, `alpha`): 1 when absent, torch's TypeError
/// for anything but a number.
fn number(v: Option<&Bound<'_, PyAny>>, fname: &str, arg: &str) -> PyResult<Scalar> {
    match v {
        None => Ok(Scalar::Int(1)),
        Some(v) => scalar(v).ok_or_else(|| {
            PyTypeError::new_err(format!(
                "{fname}(): argument '{arg}' must be Number, not {}",
                convert::type_name(v)
            ))
        }),
    }
}

/// lerp's weight: a tensor or a number, or torch's TypeError naming both overloads.
fn weight<'a>(
    end: &Bound<'_, PyAny>,
    w: &'a Bound<'_, PyAny>,
    fname: &str,
) -> PyResult<Weight<'a>> {
    if let Ok(t) = w.cast::<PyTensor>() {
        return Ok(Weight::Tensor(&t.get().t));
    }
    if let Some(s) = scalar(w) {
        return Ok(Weight::Number(s));
    }
    let (e, w) = (convert::type_name(end), convert::type_name(w));
    Err(PyTypeError::new_err(format!(
        "{fname}() received an invalid combination of arguments - got ({e}, {w}), but expected one of:\n \
         * (Tensor end, Tensor weight)\n      didn't match because some of the arguments have invalid types: ({e}, !{w}!)\n \
         * (Tensor end, Number weight)\n      didn't match because some of the arguments have invalid types: ({e}, !{w}!)\n"
    )))
}

/// Whether any of the tensors is large enough for the op to run without the GIL (a small
/// operand broadcast against a large one computes a large result).
fn large(ts: &[&crate::tensor::Tensor]) -> bool {
    ts.iter().any(|t| t.numel() >= RELEASE_GIL_AT)
}

/// nan_to_num's `float?` arguments (`nan`, `posinf`, `neginf`), given by position
/// (`args`) or by keyword: each None or a number as a float; torch's TypeErrors (which
/// name the position only of an argument given by position).
fn nan_args(
    fname: &str,
    args: &Bound<'_, PyTuple>,
    kw: [Option<&Bound<'_, PyAny>>; 3],
) -> PyResult<[Option<f64>; 3]> {
    const NAMES: [&str; 3] = ["nan", "posinf", "neginf"];
    if args.len() > 3 {
        return Err(PyTypeError::new_err(format!(
            "{fname}() takes from 0 to 3 positional arguments but {} were given",
            args.len()
        )));
    }
    let mut out = [None; 3];
    for (i, slot) in out.iter_mut().enumerate() {
        let (v, pos) = match (args.get_item(i).ok(), kw[i]) {
            (Some(_), Some(_)) => {
                return Err(PyTypeError::new_err(format!(
                    "{fname}() got multiple values for argument '{}'",
                    NAMES[i]
                )));
            }
            (Some(v), None) => (v, Some(i + 1)),
            (None, Some(v)) => (v.clone(), None),
            (None, None) => continue,
        };
        if v.is_none() {
            continue;
        }
        *slot = Some(scalar(&v).map(Scalar::as_f64).ok_or_else(|| {
            let at = pos.map_or(String::new(), |p| format!(" (position {p})"));
            PyTypeError::new_err(format!(
                "{fname}(): argument '{}'{at} must be float, not {}",
                NAMES[i],
                convert::type_name(&v)
            ))
        })?);
    }
    Ok(out)
}

/// addcmul's and addcdiv's arguments (`fname`: the method, for torch's TypeErrors).
fn addc_args<'a>(
    fname: &str,
    tensor1: &'a Bound<'_, PyAny>,
    tensor2: &'a Bound<'_, PyAny>,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<(&'a crate::tensor::Tensor, &'a crate::tensor::Tensor, Scalar)> {
    Ok((
        convert::tensor_ref(tensor1, fname, "tensor1", 1)?,
        convert::tensor_ref(tensor2, fname, "tensor2", 2)?,
        number(value, fname, "value")?,
    ))
}

#[pymethods]
impl PyTensor {
    /// `self + value * tensor1 * tensor2`, broadcast (the last multiply and add fused, as
    /// torch's kernel fuses them).
    ///
    /// Args:
    ///     tensor1: The first factor.
    ///     tensor2: The second factor.
    ///     value: The multiplier (1 by default).
    #[pyo3(signature = (tensor1, tensor2, *, value=None))]
    fn addcmul(
        &self,
        py: Python<'_>,
        tensor1: &Bound<'_, PyAny>,
        tensor2: &Bound<'_, PyAny>,
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let (t1, t2, v) = addc_args("addcmul", tensor1, tensor2, value)?;
        wrap(
            py,
            run_if(py, large(&[&self.t, t1, t2]), || {
                ops::addcmul(&self.t, t1, t2, v)
            })?,
        )
    }
    /// In-place version of `addcmul`.
    ///
    /// Returns:
    ///     This tensor.
    #[pyo3(signature = (tensor1, tensor2, *, value=None))]
    fn addcmul_(
        slf: &Bound<'_, Self>,
        tensor1: &Bound<'_, PyAny>,
        tensor2: &Bound<'_, PyAny>,
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let x = &slf.get().t;
        let (t1, t2, v) = addc_args("addcmul_", tensor1, tensor2, value)?;
        run(slf.py(), x, || ops::addcmul_(x, t1, t2, v))?;
        Ok(slf.clone().unbind())
    }
    /// `self + value * tensor1 / tensor2`, broadcast.
    ///
    /// Args:
    ///     tensor1: The numerator.
    ///     tensor2: The denominator.
    ///     value: The multiplier (1 by default).
    #[pyo3(signature = (tensor1, tensor2, *, value=None))]
    fn addcdiv(
        &self,
        py: Python<'_>,
        tensor1: &Bound<'_, PyAny>,
        tensor2: &Bound<'_, PyAny>,
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let (t1, t2, v) = addc_args("addcdiv", tensor1, tensor2, value)?;
        wrap(
            py,
            run_if(py, large(&[&self.t, t1, t2]), || {
                ops::addcdiv(&self.t, t1, t2, v)
            })?,
        )
    }
    /// In-place version of `addcdiv`.
    ///
    /// Returns:
    ///     This tensor.
    #[pyo3(signature = (tensor1, tensor2, *, value=None))]
    fn addcdiv_(
        slf: &Bound<'_, Self>,
        tensor1: &Bound<'_, PyAny>,
        tensor2: &Bound<'_, PyAny>,
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let x = &slf.get().t;
        let (t1, t2, v) = addc_args("addcdiv_", tensor1, tensor2, value)?;
        run(slf.py(), x, || ops::addcdiv_(x, t1, t2, v))?;
        Ok(slf.clone().unbind())
    }
    /// Linear interpolation `self + weight * (end - self)`, broadcast, computed from the
    /// nearer end as torch's kernel does.
    ///
    /// Args:
    ///     end: The tensor to interpolate towards.
    ///     weight: A number, or a tensor of weights.
    fn lerp(
        &self,
        py: Python<'_>,
        end: &Bound<'_, PyAny>,
        weight: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let w = self::weight(end, weight, "lerp")?;
        let e = convert::tensor_ref(end, "lerp", "end", 1)?;
        wrap(
            py,
            run_if(py, large(&[&self.t, e]), || ops::lerp(&self.t, e, w))?,
        )
    }
    /// In-place version of `lerp`.
    ///
    /// Returns:
    ///     This tensor.
    fn lerp_(
        slf: &Bound<'_, Self>,
        end: &Bound<'_, PyAny>,
        weight: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let x = &slf.get().t;
        let w = self::weight(end, weight, "lerp_")?;
        let e = convert::tensor_ref(end, "lerp_", "end", 1)?;
        run(slf.py(), x, || ops::lerp_(x, e, w))?;
        Ok(slf.clone().unbind())
    }
    /// `beta * self + alpha * outer(vec1, vec2)`, this tensor broadcast to the product's
    /// shape.
    ///
    /// Args:
    ///     vec1: A 1-D tensor (the rows).
    ///     vec2: A 1-D tensor (the columns).
    ///     beta: The multiplier for this tensor (1 by default; 0 ignores it, NaNs included).
    ///     alpha: The multiplier for the product (1 by default).
    #[pyo3(signature = (vec1, vec2, *, beta=None, alpha=None))]
    fn addr(
        &self,
        py: Python<'_>,
        vec1: &Bound<'_, PyAny>,
        vec2: &Bound<'_, PyAny>,
        beta: Option<&Bound<'_, PyAny>>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let v1 = convert::tensor_ref(vec1, "addr", "vec1", 1)?;
        let v2 = convert::tensor_ref(vec2, "addr", "vec2", 2)?;
        let (b, a) = (
            number(beta, "addr", "beta")?,
            number(alpha, "addr", "alpha")?,
        );
        let big = v1.numel().saturating_mul(v2.numel()) >= RELEASE_GIL_AT;
        wrap(py, run_if(py, big, || ops::addr(&self.t, v1, v2, b, a))?)
    }
    /// In-place version of `addr` (this tensor has the product's shape).
    ///
    /// Returns:
    ///     This tensor.
    #[pyo3(signature = (vec1, vec2, *, beta=None, alpha=None))]
    fn addr_(
        slf: &Bound<'_, Self>,
        vec1: &Bound<'_, PyAny>,
        vec2: &Bound<'_, PyAny>,
        beta: Option<&Bound<'_, PyAny>>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let x = &slf.get().t;
        let v1 = convert::tensor_ref(vec1, "addr_", "vec1", 1)?;
        let v2 = convert::tensor_ref(vec2, "addr_", "vec2", 2)?;
        let (b, a) = (
            number(beta, "addr_", "beta")?,
            number(alpha, "addr_", "alpha")?,
        );
        run(slf.py(), x, || ops::addr_(x, v1, v2, b, a))?;
        Ok(slf.clone().unbind())
    }
    /// Replaces NaN, positive infinity and negative infinity with the given numbers.
    ///
    /// Args:
    ///     nan: The value for NaN (0 when None).
    ///     posinf: The value for +inf (the dtype's largest finite value when None).
    ///     neginf: The value for -inf (the dtype's lowest finite value when None).
    #[pyo3(signature = (*args, nan=None, posinf=None, neginf=None))]
    fn nan_to_num(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        nan: Option<&Bound<'_, PyAny>>,
        posinf: Option<&Bound<'_, PyAny>>,
        neginf: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let [n, p, m] = nan_args("nan_to_num", args, [nan, posinf, neginf])?;
        wrap(py, run(py, &self.t, || ops::nan_to_num(&self.t, n, p, m))?)
    }
    /// In-place version of `nan_to_num`.
    ///
    /// Returns:
    ///     This tensor.
    #[pyo3(signature = (*args, nan=None, posinf=None, neginf=None))]
    fn nan_to_num_(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        nan: Option<&Bound<'_, PyAny>>,
        posinf: Option<&Bound<'_, PyAny>>,
        neginf: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let x = &slf.get().t;
        let [n, p, m] = nan_args("nan_to_num_", args, [nan, posinf, neginf])?;
        run(slf.py(), x, || ops::nan_to_num_(x, n, p, m))?;
        Ok(slf.clone().unbind())
    }
    /// Returns the sum of all elements, or of each slice along the given dimension(s),
    /// with NaN counted as zero.
    ///
    /// Args:
    ///     dim: A dim or tuple of dims to reduce; all dims when None.
    ///     keepdim: Whether the reduced dims are kept with size 1.
    ///     dtype: If given, the tensor is cast to this dtype before the sum.
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn nansum(
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
            run(py, &x, || {
                super::tensor_reduce::bool_sum(ops::nansum(&x, d.as_deref(), keepdim), dt)
            })?,
        )
    }
}
