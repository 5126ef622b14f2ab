//! `rgrad.Tensor`: the Python face of the core tensor. Every method converts its
//! arguments, calls one core op, and wraps the result; no math happens here.

use super::convert::{self, Arg, arg, scalar};
use super::gil;
use crate::backend::BinaryOp;
use crate::dtype::{DType, ResultType, Scalar};
use crate::ops::{self, Operand};
use crate::tensor::Tensor;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::sync::Arc;

/// A multi-dimensional matrix containing elements of a single data type: `rgrad.Tensor`.
#[pyclass(name = "Tensor", module = "rgrad", subclass, frozen, weakref)]
pub struct PyTensor {
    pub t: Tensor,
}

/// Element count above which an op releases the GIL (its kernels may use the pool).
pub(super) const RELEASE_GIL_AT: usize = 1 << 15;

pub fn wrap(py: Python<'_>, t: Tensor) -> PyResult<Py<PyTensor>> {
    Py::new(py, PyTensor { t })
}

/// The Python object of `t` if one is alive (see `remember`), else a new one that is
/// remembered: used where torch guarantees identity (`x.grad is x.grad`).
pub fn wrap_cached(py: Python<'_>, t: &Tensor) -> PyResult<Py<PyAny>> {
    if let Some(b) = t.binding()
        && let Some(w) = b.downcast_ref::<PyBinding>()
        && let Some(obj) = w.0.bind(py).upgrade()
    {
        return Ok(obj.unbind());
    }
    let obj = Bound::new(py, PyTensor { t: t.clone() })?;
    remember(&obj)?;
    Ok(obj.into_any().unbind())
}

/// A weak reference from a core tensor to its Python object.
pub(super) struct PyBinding(Py<pyo3::types::PyWeakrefReference>);

/// Records `obj` as the Python object of its tensor (weakly: no reference cycle).
pub fn remember(obj: &Bound<'_, PyTensor>) -> PyResult<()> {
    let w = pyo3::types::PyWeakrefReference::new(obj)?;
    obj.get()
        .t
        .set_binding(Some(Arc::new(PyBinding(w.unbind()))));
    Ok(())
}

/// Runs an op, releasing the GIL when the input is large enough for pool parallelism.
pub fn run<R: Send>(
    py: Python<'_>,
    x: &Tensor,
    f: impl FnOnce() -> crate::Result<R> + Send,
) -> PyResult<R> {
    run_if(py, x.numel() >= RELEASE_GIL_AT, f)
}

/// `run` for a matrix factorization or decomposition: its cost grows as the cube of the
/// matrix size, not with the element count, so the GIL is released by an estimate of the
/// flops (`numel` times the larger of the last two dims) rather than by `numel` alone. A
/// 100 x 100 LU has only 10K elements but a millisecond of work; other Python threads run
/// meanwhile.
pub fn run_matrix<R: Send>(
    py: Python<'_>,
    x: &Tensor,
    f: impl FnOnce() -> crate::Result<R> + Send,
) -> PyResult<R> {
    let shape = x.shape();
    let n = shape.iter().rev().take(2).copied().max().unwrap_or(1);
    run_if(py, x.numel().saturating_mul(n) >= RELEASE_MATRIX_GIL_AT, f)
}

/// The flop estimate above which [`run_matrix`] releases the GIL (a 40 x 40 matrix: tens of
/// microseconds of work against the release's one).
const RELEASE_MATRIX_GIL_AT: usize = 1 << 16;

/// `run` for a binary op: the GIL is released when either operand is large (a small
/// tensor broadcast against a big one computes a big result).
pub fn run2<R: Send>(
    py: Python<'_>,
    x: &Tensor,
    other: &Arg,
    f: impl FnOnce() -> crate::Result<R> + Send,
) -> PyResult<R> {
    let big = |t: &Tensor| t.numel() >= RELEASE_GIL_AT;
    run_if(py, big(x) || matches!(other, Arg::T(t) if big(t)), f)
}

pub(super) fn run_if<R: Send>(
    py: Python<'_>,
    release: bool,
    f: impl FnOnce() -> crate::Result<R> + Send,
) -> PyResult<R> {
    if release {
        Ok(gil::detach(py, f)?)
    } else {
        Ok(f()?)
    }
}

/// An object that represents the data type of a Tensor: `rgrad.float32` and its kin.
#[pyclass(name = "dtype", module = "rgrad", frozen, eq, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDType {
    pub d: DType,
}

/// torch's warning on reading `.grad` of a non-leaf that does not retain it.
pub(super) const NON_LEAF_GRAD_WARNING: &std::ffi::CStr = c"The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information.";

#[pymethods]
impl PyDType {
    /// Returns `rgrad.<name>`, e.g. `rgrad.float32`, as torch prints dtypes.
    fn __repr__(&self) -> String {
        format!("rgrad.{}", self.d.name())
    }
    /// Is True if this dtype is a floating point type.
    #[getter]
    fn is_floating_point(&self) -> bool {
        self.d.is_float()
    }
    /// The size in bytes of one element of this dtype.
    #[getter]
    fn itemsize(&self) -> usize {
        self.d.size_in_bytes()
    }
}

pub fn dtype_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<DType>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => {
            if let Ok(d) = o.cast::<PyDType>() {
                return Ok(Some(d.get().d));
            }
            // Python's builtin types, as torch accepts them
            let name = convert::type_name(o);
            if name == "type" {
                let n: String = o.getattr("__name__")?.extract()?;
                return match n.as_str() {
                    "float" => Ok(Some(DType::F64)),
                    "int" => Ok(Some(DType::I64)),
                    "bool" => Ok(Some(DType::Bool)),
                    _ => Err(PyTypeError::new_err(format!(
                        "cannot convert {n} to a dtype"
                    ))),
                };
            }
            Err(PyTypeError::new_err(format!(
                "dtype must be rgrad.dtype, not {name}"
            )))
        }
    }
}

pub(super) fn binop(
    py: Python<'_>,
    a: &Tensor,
    other: &Bound<'_, PyAny>,
    f: impl FnOnce(Operand<'_>, Operand<'_>) -> crate::Result<Tensor> + Send,
) -> PyResult<Py<PyAny>> {
    match arg(other) {
        Some(b) => Ok(wrap(py, run2(py, a, &b, || f(Operand::T(a), b.operand()))?)?.into_any()),
        None => Ok(py.NotImplemented()),
    }
}

pub(super) fn rbinop(
    py: Python<'_>,
    a: &Tensor,
    other: &Bound<'_, PyAny>,
    f: impl FnOnce(Operand<'_>, Operand<'_>) -> crate::Result<Tensor> + Send,
) -> PyResult<Py<PyAny>> {
    match arg(other) {
        Some(b) => Ok(wrap(py, run2(py, a, &b, || f(b.operand(), Operand::T(a)))?)?.into_any()),
        None => Ok(py.NotImplemented()),
    }
}

/// A commutative op with a number on the left, recorded with the tensor first, as torch
/// does (`2 * x` is `mul(x, 2)`); a tensor on the left keeps its place.
pub(super) fn rbinop_commuted(
    py: Python<'_>,
    a: &Tensor,
    other: &Bound<'_, PyAny>,
    f: impl FnOnce(Operand<'_>, Operand<'_>) -> crate::Result<Tensor> + Send,
) -> PyResult<Py<PyAny>> {
    match arg(other) {
        Some(b @ Arg::S(_)) => {
            Ok(wrap(py, run2(py, a, &b, || f(Operand::T(a), b.operand()))?)?.into_any())
        }
        _ => rbinop(py, a, other, f),
    }
}

pub(super) fn other_arg<'a>(other: &'a Bound<'_, PyAny>, fname: &str) -> PyResult<Arg<'a>> {
    arg(other).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "{fname}(): argument 'other' (position 1) must be Tensor, not {}",
            convert::type_name(other)
        ))
    })
}

pub(super) fn alpha_arg(alpha: Option<&Bound<'_, PyAny>>) -> PyResult<Scalar> {
    match alpha {
        None => Ok(Scalar::Int(1)),
        Some(a) => scalar(a).ok_or_else(|| PyTypeError::new_err("alpha must be a number")),
    }
}

pub(super) fn opt_dims(dim: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<i64>>> {
    match dim {
        None => Ok(None),
        Some(d) if d.is_none() => Ok(None),
        Some(d) => convert::dims(d).map(Some),
    }
}

/// When either clamp bound is a tensor, both as tensors (a number becomes a 0-d tensor);
/// `None` when both bounds are numbers or absent.
#[allow(clippy::type_complexity)]
pub(super) fn tensor_bounds(
    x: &Tensor,
    min: Option<&Bound<'_, PyAny>>,
    max: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<(Option<Tensor>, Option<Tensor>)>> {
    let is_tensor = |b: Option<&Bound<'_, PyAny>>| b.is_some_and(|o| o.cast::<PyTensor>().is_ok());
    if !is_tensor(min) && !is_tensor(max) {
        return Ok(None);
    }
    let conv = |b: Option<&Bound<'_, PyAny>>| -> PyResult<Option<Tensor>> {
        match b {
            None => Ok(None),
            Some(o) if o.is_none() => Ok(None),
            Some(o) => match o.cast::<PyTensor>() {
                Ok(t) => Ok(Some(t.get().t.clone())),
                Err(_) => match scalar(o) {
                    // (the dtype the number gives with x alone: it then promotes as a
                    // wrapped number would, and keeps its value)
                    Some(s) => {
                        let dtype = ResultType::default()
                            .tensor(x.dtype(), x.ndim())
                            .scalar(s)
                            .finish();
                        Ok(Some(ops::scalar_tensor(s, dtype)))
                    }
                    None => Err(PyTypeError::new_err(
                        "clamp(): min and max must be numbers or tensors",
                    )),
                },
            },
        }
    };
    Ok(Some((conv(min)?, conv(max)?)))
}

pub(super) fn bound_arg(b: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Scalar>> {
    match b {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => match scalar(o) {
            Some(s) => Ok(Some(s)),
            None => Err(PyTypeError::new_err("clamp(): min and max must be numbers")),
        },
    }
}

#[pymethods]
impl PyTensor {
    /// The legacy constructor `rgrad.Tensor(data)` / `rgrad.Tensor(*sizes)`: the default
    /// float dtype (float32 unless `set_default_dtype` chose float64).
    #[new]
    #[pyo3(signature = (*args))]
    fn py_new(args: &Bound<'_, PyTuple>) -> PyResult<Self> {
        if args.is_empty() {
            return Ok(PyTensor {
                t: ops::zeros(&[0], DType::default_float())?,
            });
        }
        let first = args.get_item(0)?;
        if first.is_instance_of::<pyo3::types::PyInt>()
            && !first.is_instance_of::<pyo3::types::PyBool>()
        {
            let s = crate::shape::sizes_to_shape(&convert::sizes(args, "Tensor")?)?;
            return Ok(PyTensor {
                t: ops::zeros(&s, DType::default_float())?,
            });
        }
        let (buf, shape) = convert::data_to_buffer(&first, Some(DType::default_float()))?;
        Ok(PyTensor {
            t: {
                crate::replay::const_born(&buf);
                Tensor::from_buffer(buf, &shape)
            },
        })
    }

    // ---- metadata ------------------------------------------------------------------
    /// The data type of this tensor.
    #[getter]
    fn dtype(&self) -> PyDType {
        PyDType { d: self.t.dtype() }
    }
    /// The shape as a plain tuple; the Python `shape` property wraps it in a Size.
    #[getter(_shape)]
    fn shape_tuple(&self) -> Vec<usize> {
        self.t.shape().to_vec()
    }
    /// Returns the number of dimensions of this tensor.
    fn dim(&self) -> usize {
        self.t.ndim()
    }
    /// Alias for `dim()`.
    #[getter]
    fn ndim(&self) -> usize {
        self.t.ndim()
    }
    /// Returns the total number of elements in this tensor.
    fn numel(&self) -> usize {
        self.t.numel()
    }
    /// Alias for `numel()`.
    fn nelement(&self) -> usize {
        self.t.numel()
    }
    /// Returns the size in bytes of an individual element.
    fn element_size(&self) -> usize {
        self.t.dtype().size_in_bytes()
    }
    /// Returns True if this tensor is contiguous in memory (row-major).
    fn is_contiguous(&self) -> bool {
        self.t.is_contiguous()
    }
    /// Returns True if the data type of this tensor is a floating point data type.
    fn is_floating_point(&self) -> bool {
        self.t.dtype().is_float()
    }
    /// Returns the stride of this tensor: the step, in elements, of each dimension.
    #[pyo3(signature = (dim=None))]
    fn stride(&self, py: Python<'_>, dim: Option<i64>) -> PyResult<Py<PyAny>> {
        let strides = self.t.layout().strides;
        match dim {
            None => Ok(PyTuple::new(py, strides.iter())?.into_any().unbind()),
            Some(d) => {
                let d = crate::shape::wrap_dim(d, strides.len())?;
                Ok(strides
                    .get(d)
                    .copied()
                    .unwrap_or(1)
                    .into_pyobject(py)?
                    .into_any()
                    .unbind())
            }
        }
    }
    /// Returns this tensor's offset in the underlying storage in number of elements
    /// (not bytes).
    fn storage_offset(&self) -> usize {
        self.t.layout().offset
    }
    /// Returns the address of the first element of this tensor: host memory, or the
    /// device address of a CUDA tensor; 0 for a storage of no elements (as torch).
    fn data_ptr(&self) -> usize {
        let storage = self.t.storage();
        let buf = storage.read();
        let base = match &*buf {
            crate::storage::Buffer::Cuda(c) => c.ptr() as usize,
            host => host.host_ptr().map_or(0, |p| p as usize),
        };
        if base == 0 || buf.is_empty() {
            return 0;
        }
        base + self.t.layout().offset * self.t.dtype().size_in_bytes()
    }
    /// The version counter, bumped by each in-place op (checked by backward).
    #[getter]
    fn _version(&self) -> u64 {
        self.t.version()
    }
    /// The size of the first dimension; a 0-d tensor has no len().
    fn __len__(&self) -> PyResult<usize> {
        let s = self.t.shape();
        s.first()
            .copied()
            .ok_or_else(|| PyTypeError::new_err("len() of a 0-d tensor"))
    }
    /// Hashes by identity, as torch does.
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }

    // ---- conversion ----------------------------------------------------------------
    /// Returns the tensor as a (nested) list of Python numbers; a number for a 0-d tensor.
    fn tolist(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        convert::to_list(py, &self.t)
    }
    /// Returns the value of this tensor as a standard Python number. This only works for
    /// tensors with one element.
    fn item(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        convert::scalar_to_py(py, self.t.item()?)
    }
    /// `float(x)` for a one-element tensor.
    fn __float__(&self) -> PyResult<f64> {
        Ok(self.t.item()?.as_f64())
    }
    /// `int(x)` for a one-element tensor (floats are truncated).
    fn __int__(&self) -> PyResult<i64> {
        Ok(match self.t.item()? {
            Scalar::Int(i) => i,
            Scalar::Bool(b) => i64::from(b),
            Scalar::Float(f) => f.trunc() as i64,
        })
    }
    /// Lets a one-element integer tensor be used as a Python index.
    fn __index__(&self) -> PyResult<i64> {
        match self.t.item() {
            Ok(Scalar::Int(i)) => Ok(i),
            Ok(Scalar::Bool(b)) => Ok(i64::from(b)),
            _ => Err(PyTypeError::new_err(
                "only integer tensors of a single element can be converted to an index",
            )),
        }
    }
    /// `bool(x)` for a one-element tensor; more elements are ambiguous, as in torch.
    fn __bool__(&self) -> PyResult<bool> {
        Ok(self.t.is_nonzero()?)
    }
    /// Contiguous bytes of the data (for numpy()).
    fn _bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let c = ops::contiguous_buffer(&self.t)?;
        let bytes: Vec<u8> = match &c {
            crate::storage::Buffer::F32(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
            crate::storage::Buffer::F64(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
            crate::storage::Buffer::I64(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
            crate::storage::Buffer::Bool(v) => v.iter().map(|&x| u8::from(x)).collect(),
            crate::storage::Buffer::Cuda(_) => crate::storage::not_host(),
        };
        Ok(pyo3::types::PyBytes::new(py, &bytes))
    }
    /// The dtype half of `to()`: a cast, or this tensor itself when nothing changes and
    /// `copy` is false.
    #[pyo3(signature = (dtype, copy=false))]
    fn _to_dtype(
        &self,
        py: Python<'_>,
        dtype: &Bound<'_, PyAny>,
        copy: bool,
    ) -> PyResult<Py<PyTensor>> {
        let d = dtype_arg(Some(dtype))?.ok_or_else(|| {
            PyTypeError::new_err("to() received an invalid combination of arguments")
        })?;
        if d == self.t.dtype() && !copy {
            return Py::new(py, PyTensor { t: self.t.clone() });
        }
        let r = ops::to_dtype(&self.t, d)?;
        if copy && r.same(&self.t) {
            return wrap(py, ops::clone_tensor(&self.t)?);
        }
        wrap(py, r)
    }
    /// `self.float()` is equivalent to `self.to(rgrad.float32)`.
    fn float(slf: &Bound<'_, Self>) -> PyResult<Py<PyTensor>> {
        same_or_cast(slf, DType::F32)
    }
    /// `self.double()` is equivalent to `self.to(rgrad.float64)`.
    fn double(slf: &Bound<'_, Self>) -> PyResult<Py<PyTensor>> {
        same_or_cast(slf, DType::F64)
    }
    /// `self.long()` is equivalent to `self.to(rgrad.int64)`.
    fn long(slf: &Bound<'_, Self>) -> PyResult<Py<PyTensor>> {
        same_or_cast(slf, DType::I64)
    }
    /// `self.int()` is equivalent to `self.to(rgrad.int64)` (rgrad has no int32).
    fn int(slf: &Bound<'_, Self>) -> PyResult<Py<PyTensor>> {
        same_or_cast(slf, DType::I64)
    }
    /// `self.bool()` is equivalent to `self.to(rgrad.bool)`.
    fn bool(slf: &Bound<'_, Self>) -> PyResult<Py<PyTensor>> {
        same_or_cast(slf, DType::Bool)
    }
    /// Returns a copy of this tensor; the copy records autograd history back to it.
    fn clone(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        wrap(py, run(py, &self.t, || ops::clone_tensor(&self.t))?)
    }
    /// Returns a contiguous in memory tensor containing the same data as this tensor; this
    /// tensor itself when it is already contiguous.
    fn contiguous(slf: &Bound<'_, Self>) -> PyResult<Py<PyTensor>> {
        let t = &slf.get().t;
        if t.is_contiguous() {
            return Ok(slf.clone().unbind());
        }
        wrap(slf.py(), ops::contiguous(t)?)
    }
}

impl PyTensor {
    /// This tensor cast to an optional `dtype=` argument (reductions and softmax take one).
    pub(super) fn cast_to(&self, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Tensor> {
        Ok(match dtype_arg(dtype)? {
            Some(d) => ops::to_dtype(&self.t, d)?,
            None => self.t.clone(),
        })
    }

    pub(super) fn compare(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        op: BinaryOp,
        name: &str,
    ) -> PyResult<Py<PyTensor>> {
        let b = other_arg(other, name)?;
        wrap(py, ops::compare(op, Operand::T(&self.t), b.operand())?)
    }

    pub(super) fn extremum(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        is_max: bool,
    ) -> PyResult<Py<PyAny>> {
        match dim {
            None => Ok(wrap(py, ops::amax(&self.t, None, false, is_max, true)?)?.into_any()),
            Some(d) if d.is_none() => {
                Ok(wrap(py, ops::amax(&self.t, None, false, is_max, true)?)?.into_any())
            }
            Some(d) => {
                if let Ok(o) = d.cast::<PyTensor>() {
                    let r = ops::extremum(&self.t, &o.get().t, is_max)?;
                    return Ok(wrap(py, r)?.into_any());
                }
                let dim: i64 = d.extract()?;
                let (v, i) = ops::max_dim(&self.t, dim, keepdim, is_max)?;
                Ok(PyTuple::new(py, [wrap(py, v)?, wrap(py, i)?])?
                    .into_any()
                    .unbind())
            }
        }
    }
}

/// `x` itself when it already has dtype `d` (torch returns self), else a cast.
pub(super) fn same_or_cast(slf: &Bound<'_, PyTensor>, d: DType) -> PyResult<Py<PyTensor>> {
    let t = &slf.get().t;
    if t.dtype() == d {
        return Ok(slf.clone().unbind());
    }
    wrap(slf.py(), ops::to_dtype(t, d)?)
}

/// masked_fill's `value` when it is a tensor and `x` or the value requires grad or has a
/// tangent: torch then records MaskedFillBackward1 (the value gets a gradient when it
/// requires one, or passes its tangent on).
pub(super) fn grad_value(x: &Tensor, value: &Bound<'_, PyAny>) -> Option<Tensor> {
    value
        .cast::<PyTensor>()
        .ok()
        .map(|t| t.get().t.clone())
        .filter(|v| crate::ops::wants_grad(x) || crate::ops::wants_grad(v))
}

pub(super) fn scalar_or_item(value: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    match value.cast::<PyTensor>() {
        Ok(t) => Ok(ops::masked_fill_value(&t.get().t)?),
        Err(_) => scalar(value).ok_or_else(|| {
            PyTypeError::new_err(format!(
                "value must be a number, not {}",
                convert::type_name(value)
            ))
        }),
    }
}
