//! `rgrad.Tensor`'s addcmul, addcdiv, lerp, addr, nan_to_num and their in-place forms,
//! and nansum (also `rgrad.<name>`, through `_METHOD_FUNCTIONS`).

use super::convert::{self, scalar};
use super::pytensor::*;
use crate::dtype::Scalar;
use crate::ops::{self, Weight};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PySequence, PyTuple};

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

/// An argument as given: its value, and its position when given by position.
type Given<'py> = Option<(Bound<'py, PyAny>, Option<usize>)>;

/// A method's arguments as torch's parser takes them: `args` by position (at most
/// `positional` of them, the first names in order), the others by keyword from `kwargs`
/// (`names` only). Each given one with its position (counted from 1 after `self`, as
/// torch's messages for the method count; None for a keyword); None for one not given.
/// torch's TypeErrors for too many positions, a name given twice or an unknown keyword.
fn method_args<'py, const N: usize>(
    fname: &str,
    names: [&str; N],
    positional: usize,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<[Given<'py>; N]> {
    if args.len() > positional {
        return Err(PyTypeError::new_err(format!(
            "{fname}() takes from 0 to {positional} positional arguments but {} were given",
            args.len()
        )));
    }
    let mut out: [Given<'py>; N] = std::array::from_fn(|_| None);
    for (i, v) in args.iter().enumerate() {
        out[i] = Some((v, Some(i + 1)));
    }
    for (k, v) in kwargs.into_iter().flat_map(|d| d.iter()) {
        let k: String = k.extract()?;
        let Some(i) = names.iter().position(|n| *n == k) else {
            return Err(PyTypeError::new_err(format!(
                "{fname}() got an unexpected keyword argument '{k}'"
            )));
        };
        if out[i].is_some() {
            return Err(PyTypeError::new_err(format!(
                "{fname}() got multiple values for argument '{k}'"
            )));
        }
        out[i] = Some((v, None));
    }
    Ok(out)
}

/// " (position p)" for an argument given by position, as torch's messages name it.
fn at(pos: Option<usize>) -> String {
    pos.map_or(String::new(), |p| format!(" (position {p})"))
}

/// A `float` argument as torch's parser reads one: a Python float, int or bool (an int
/// too large for a float is Python's OverflowError), a NumPy number, or a 0-d tensor that
/// does not require grad; torch's TypeError for anything else.
fn float_arg(v: &Bound<'_, PyAny>, fname: &str, arg: &str, pos: Option<usize>) -> PyResult<f64> {
    if v.is_instance_of::<PyFloat>() || v.is_instance_of::<PyInt>() {
        return v.extract::<f64>();
    }
    if let Ok(t) = v.cast::<PyTensor>() {
        let t = &t.get().t;
        if t.ndim() == 0 && !t.requires_grad() {
            return Ok(t.item()?.as_f64());
        }
    } else if is_numpy_number(v) {
        return v.call_method0("__float__")?.extract::<f64>();
    }
    Err(PyTypeError::new_err(format!(
        "{fname}(): argument '{arg}'{} must be float, not {}",
        at(pos),
        convert::type_name(v)
    )))
}

/// Whether `v` is a NumPy scalar (an instance of `numpy.generic`: np.float32(1), np.int64(2),
/// np.bool_(True)), which torch's parser takes for a number; a 0-d array is not one.
fn is_numpy_number(v: &Bound<'_, PyAny>) -> bool {
    v.get_type().mro().iter().any(|t| {
        t.getattr("__module__")
            .is_ok_and(|m| m.extract::<String>().is_ok_and(|m| m == "numpy"))
            && t.getattr("__name__")
                .is_ok_and(|n| n.extract::<String>().is_ok_and(|n| n == "generic"))
    })
}

/// An index as torch's parser checks one (an int or anything with `__index__`, a bool
/// not): None when `v` is not one; its value, or torch's error past int64.
fn index_of(v: &Bound<'_, PyAny>) -> Option<PyResult<i64>> {
    if v.is_instance_of::<PyBool>() {
        return None;
    }
    let i = if v.is_instance_of::<PyInt>() {
        v.clone()
    } else {
        v.call_method0("__index__").ok()?
    };
    Some(
        i.extract::<i64>()
            .map_err(|_| PyValueError::new_err("Overflow when unpacking long long")),
    )
}

/// A `int[1]?` argument (nansum's `dim`): None, an index, or a tuple or list whose first
/// element is an index (each element then read as one, a bool as its int); torch's
/// TypeErrors otherwise.
fn dims_arg(
    v: &Bound<'_, PyAny>,
    fname: &str,
    arg: &str,
    pos: Option<usize>,
) -> PyResult<Option<Vec<i64>>> {
    if v.is_none() {
        return Ok(None);
    }
    let bad = |what: String| {
        PyTypeError::new_err(format!(
            "{fname}(): argument '{arg}'{} must be tuple of ints, {what}",
            at(pos)
        ))
    };
    if !(v.is_instance_of::<PyTuple>() || v.is_instance_of::<PyList>()) {
        return match index_of(v) {
            Some(i) => Ok(Some(vec![i?])),
            None => Err(bad(format!("not {}", convert::type_name(v)))),
        };
    }
    let seq = v.cast::<PySequence>()?;
    let n = seq.len()?;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let it = seq.get_item(i)?;
        let value = if it.is_instance_of::<PyBool>() && i > 0 {
            Some(Ok(i64::from(it.extract::<bool>()?)))
        } else {
            index_of(&it)
        };
        let failed = |e: String| {
            PyTypeError::new_err(format!(
                "{fname}(): argument '{arg}' failed to unpack the object at pos {} with error \"{e}\"",
                i + 1
            ))
        };
        out.push(match value {
            Some(Ok(d)) => d,
            None if i == 0 => {
                let t = convert::type_name(&it);
                return Err(bad(format!("but found element of type {t} at pos 0")));
            }
            None => {
                let t = convert::type_name(&it);
                return Err(failed(format!("type must be tuple of ints,but got {t}")));
            }
            Some(Err(_)) => return Err(failed("Overflow when unpacking long long".into())),
        });
    }
    Ok(Some(out))
}

/// A `bool` argument: a Python bool only (torch refuses an int, a NumPy bool, a tensor).
fn bool_arg(v: &Bound<'_, PyAny>, fname: &str, arg: &str, pos: Option<usize>) -> PyResult<bool> {
    if v.is_instance_of::<PyBool>() {
        return v.extract::<bool>();
    }
    Err(PyTypeError::new_err(format!(
        "{fname}(): argument '{arg}'{} must be bool, not {}",
        at(pos),
        convert::type_name(v)
    )))
}

/// nan_to_num's `float?` arguments (`nan`, `posinf`, `neginf`), by position or keyword:
/// each None or a float (torch's parsing and messages).
fn nan_args(
    fname: &str,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<[Option<f64>; 3]> {
    const NAMES: [&str; 3] = ["nan", "posinf", "neginf"];
    let given = method_args(fname, NAMES, 3, args, kwargs)?;
    let mut out = [None; 3];
    for ((slot, g), name) in out.iter_mut().zip(given).zip(NAMES) {
        if let Some((v, pos)) = g
            && !v.is_none()
        {
            *slot = Some(float_arg(&v, fname, name, pos)?);
        }
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
    #[pyo3(signature = (*args, **kwargs))]
    fn nan_to_num(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyTensor>> {
        let [n, p, m] = nan_args("nan_to_num", args, kwargs)?;
        wrap(py, run(py, &self.t, || ops::nan_to_num(&self.t, n, p, m))?)
    }
    /// In-place version of `nan_to_num`.
    ///
    /// Returns:
    ///     This tensor.
    #[pyo3(signature = (*args, **kwargs))]
    fn nan_to_num_(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyTensor>> {
        let x = &slf.get().t;
        let [n, p, m] = nan_args("nan_to_num_", args, kwargs)?;
        run(slf.py(), x, || ops::nan_to_num_(x, n, p, m))?;
        Ok(slf.clone().unbind())
    }
    /// Returns the sum of all elements, or of each slice along the given dimension(s),
    /// with NaN counted as zero.
    ///
    /// Args:
    ///     dim: A dim or tuple of dims to reduce; all dims when None.
    ///     keepdim: Whether the reduced dims are kept with size 1.
    ///     dtype: If given, the result's dtype: the tensor is cast to it before the sum
    ///         (to an integer or bool dtype, each NaN is 0 first).
    #[pyo3(signature = (*args, **kwargs))]
    fn nansum(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyTensor>> {
        const F: &str = "nansum";
        let [dim, keepdim, dtype] = method_args(F, ["dim", "keepdim", "dtype"], 2, args, kwargs)?;
        let d = match &dim {
            Some((v, pos)) => dims_arg(v, F, "dim", *pos)?,
            None => None,
        };
        let keepdim = match &keepdim {
            Some((v, pos)) => bool_arg(v, F, "keepdim", *pos)?,
            None => false,
        };
        let dt = dtype_arg(dtype.as_ref().map(|(v, _)| v))?;
        let x = &self.t;
        wrap(
            py,
            run(py, x, || {
                super::tensor_reduce::bool_sum(ops::nansum(x, d.as_deref(), keepdim, dt), dt)
            })?,
        )
    }
}
