//! `rgrad.Tensor`: the Python face of the core tensor. Every method converts its
//! arguments, calls one core op, and wraps the result; no math happens here.

use super::convert::{self, Arg, arg, scalar};
use super::gil;
use super::node::node_object;
use crate::Error;
use crate::autograd::graph::Hook;
use crate::backend::cpu::elementwise::BinaryOp;
use crate::dtype::{DType, ResultType, Scalar};
use crate::ops::{self, Operand};
use crate::tensor::Tensor;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyEllipsis, PyList, PySlice, PyTuple};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A multi-dimensional matrix containing elements of a single data type: `rgrad.Tensor`.
#[pyclass(name = "Tensor", module = "rgrad", subclass, frozen, weakref)]
pub struct PyTensor {
    pub t: Tensor,
}

/// Element count above which an op releases the GIL (its kernels may use the pool).
const RELEASE_GIL_AT: usize = 1 << 15;

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
struct PyBinding(Py<pyo3::types::PyWeakrefReference>);

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

fn run_if<R: Send>(
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
const NON_LEAF_GRAD_WARNING: &std::ffi::CStr = c"The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information.";

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

static HOOK_IDS: AtomicU64 = AtomicU64::new(1);

/// A Python callable as a core hook: called with the gradient under the GIL; `None`
/// keeps the gradient, a Tensor replaces it; an exception propagates out of backward.
fn py_hook(f: Py<PyAny>) -> Hook {
    Arc::new(move |g: &Tensor| {
        gil::attach(|py| {
            let r = f
                .call1(py, (wrap(py, g.clone()).map_err(super::error::external)?,))
                .map_err(super::error::external)?;
            let r = r.bind(py);
            if r.is_none() {
                return Ok(None);
            }
            let new = match r.cast::<PyTensor>() {
                Ok(t) => t.get().t.clone(),
                Err(_) => {
                    return Err(Error::Type(format!(
                        "expected Variable, but hook returned '{}'",
                        convert::type_name(r)
                    )));
                }
            };
            // torch's check: a hook may change the values, not the type or the size
            let name = || {
                f.bind(py)
                    .getattr("__name__")
                    .and_then(|n| n.extract::<String>())
                    .unwrap_or_else(|_| "<unknown>".into())
            };
            if new.dtype() != g.dtype() {
                return Err(Error::runtime(format!(
                    "hook '{}' has changed the type of value (was rgrad.{} got rgrad.{})",
                    name(),
                    g.dtype().legacy_type_name(),
                    new.dtype().legacy_type_name()
                )));
            }
            if new.shape() != g.shape() {
                return Err(Error::runtime(format!(
                    "hook '{}' has changed the size of value",
                    name()
                )));
            }
            Ok(Some(new))
        })
    })
}

fn binop(
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

fn rbinop(
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
fn rbinop_commuted(
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

fn other_arg<'a>(other: &'a Bound<'_, PyAny>, fname: &str) -> PyResult<Arg<'a>> {
    arg(other).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "{fname}(): argument 'other' (position 1) must be Tensor, not {}",
            convert::type_name(other)
        ))
    })
}

fn alpha_arg(alpha: Option<&Bound<'_, PyAny>>) -> PyResult<Scalar> {
    match alpha {
        None => Ok(Scalar::Int(1)),
        Some(a) => scalar(a).ok_or_else(|| PyTypeError::new_err("alpha must be a number")),
    }
}

fn opt_dims(dim: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<i64>>> {
    match dim {
        None => Ok(None),
        Some(d) if d.is_none() => Ok(None),
        Some(d) => convert::dims(d).map(Some),
    }
}

/// When either clamp bound is a tensor, both as tensors (a number becomes a 0-d tensor);
/// `None` when both bounds are numbers or absent.
#[allow(clippy::type_complexity)]
fn tensor_bounds(
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

fn bound_arg(b: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Scalar>> {
    match b {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => match scalar(o) {
            Some(s) => Ok(Some(s)),
            None => Err(PyTypeError::new_err("clamp(): min and max must be numbers")),
        },
    }
}

/// Index parsing shared by __getitem__ and __setitem__: applies basic indexing (ints,
/// slices, None, Ellipsis) as views and returns the advanced indices per remaining dim.
fn apply_index(
    py: Python<'_>,
    x: &Tensor,
    index: &Bound<'_, PyAny>,
) -> PyResult<(Tensor, Vec<Option<Tensor>>)> {
    let items: Vec<Bound<'_, PyAny>> = if let Ok(t) = index.cast::<PyTuple>() {
        t.iter().collect()
    } else {
        vec![index.clone()]
    };
    // Lists of numbers index like int64 tensors.
    let as_tensor = |it: &Bound<'_, PyAny>| -> PyResult<Option<Tensor>> {
        if let Ok(t) = it.cast::<PyTensor>() {
            return Ok(Some(t.get().t.clone()));
        }
        if it.is_instance_of::<PyList>() {
            let (buf, shape) = convert::data_to_buffer(it, None)?;
            let t = Tensor::from_buffer(buf, &shape);
            let t = if t.dtype().is_float() {
                return Err(pyo3::exceptions::PyIndexError::new_err(
                    "tensors used as indices must be long, int, byte or bool tensors",
                ));
            } else {
                t
            };
            return Ok(Some(t));
        }
        Ok(None)
    };
    let mut consumed = 0usize;
    for it in &items {
        if it.is_instance_of::<PyEllipsis>()
            || it.is_none()
            || it.is_instance_of::<pyo3::types::PyBool>()
        {
            continue;
        }
        match as_tensor(it)? {
            Some(t) if t.dtype() == DType::Bool => consumed += t.ndim(),
            _ => consumed += 1,
        }
    }
    let ndim = x.ndim();
    if consumed > ndim {
        return Err(pyo3::exceptions::PyIndexError::new_err(format!(
            "too many indices for tensor of dimension {ndim}"
        )));
    }
    let mut r = x.clone();
    let mut d = 0usize;
    let mut adv: Vec<(usize, Tensor)> = Vec::new();
    let mut removed = 0usize; // dims removed by integer indices, for torch's error numbering
    for it in &items {
        if it.is_instance_of::<PyEllipsis>() {
            // torch accepts several ellipses: each one skips the dims no other item takes
            // (so a second one skips past the end)
            d += ndim - consumed;
        } else if it.is_none() {
            r = ops::unsqueeze(&r, d as i64)?;
            d += 1;
        } else if it.is_instance_of::<pyo3::types::PyBool>() {
            // x[True] adds a dim of size 1; x[False] one of size 0
            r = ops::unsqueeze(&r, d as i64)?;
            if !it.extract::<bool>()? {
                r = ops::slice(&r, d as i64, Some(0), Some(0), 1)?;
            }
            d += 1;
        } else if let Ok(s) = it.cast::<PySlice>() {
            let start: Option<i64> = s.getattr("start")?.extract()?;
            let stop: Option<i64> = s.getattr("stop")?.extract()?;
            let step: Option<i64> = s.getattr("step")?.extract()?;
            // torch skips a slice that keeps the whole dim (no view is made: `x[:, i] = v`
            // writes x itself)
            let whole = |n: usize| {
                let clamp = |i: i64| {
                    if i < 0 {
                        (i + n as i64).max(0)
                    } else {
                        i.min(n as i64)
                    }
                };
                clamp(start.unwrap_or(0)) == 0 && clamp(stop.unwrap_or(i64::MAX)) == n as i64
            };
            let keeps_all = step.unwrap_or(1) == 1 && r.shape().get(d).is_some_and(|&n| whole(n));
            if !keeps_all {
                r = ops::slice(&r, d as i64, start, stop, step.unwrap_or(1))?;
            }
            d += 1;
        } else if let Some(t) = as_tensor(it)? {
            let n = if t.dtype() == DType::Bool {
                t.ndim()
            } else {
                1
            };
            if t.dtype() == DType::Bool && t.ndim() == 0 {
                r = ops::unsqueeze(&r, d as i64)?;
                adv.push((d, ops::reshape(&t, &[1])?));
                d += 1;
                continue;
            }
            adv.push((d, t));
            d += n;
        } else if let Some(Scalar::Int(i)) = scalar(it) {
            let size = r.shape().get(d).copied().unwrap_or(0) as i64;
            if i < -size || i >= size {
                return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                    "index {i} is out of bounds for dimension {} with size {size}",
                    d + removed
                )));
            }
            r = ops::select(&r, d as i64, i)?;
            removed += 1;
        } else {
            return Err(pyo3::exceptions::PyIndexError::new_err(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got ".to_string()
                    + &convert::type_name(it)
                    + ")",
            ));
        }
    }
    let _ = py;
    let mut indices: Vec<Option<Tensor>> = Vec::new();
    for (pos, t) in adv {
        while indices.len() < pos {
            indices.push(None);
        }
        indices.push(Some(t));
    }
    Ok((r, indices))
}

#[pymethods]
impl PyTensor {
    /// The legacy constructor `rgrad.Tensor(data)` / `rgrad.Tensor(*sizes)`: float32.
    #[new]
    #[pyo3(signature = (*args))]
    fn py_new(args: &Bound<'_, PyTuple>) -> PyResult<Self> {
        if args.is_empty() {
            return Ok(PyTensor {
                t: ops::zeros(&[0], DType::F32)?,
            });
        }
        let first = args.get_item(0)?;
        if first.is_instance_of::<pyo3::types::PyInt>()
            && !first.is_instance_of::<pyo3::types::PyBool>()
        {
            let s = convert::shape_of(&convert::sizes(args, "Tensor")?)?;
            return Ok(PyTensor {
                t: ops::zeros(&s, DType::F32)?,
            });
        }
        let (buf, shape) = convert::data_to_buffer(&first, Some(DType::F32))?;
        Ok(PyTensor {
            t: Tensor::from_buffer(buf, &shape),
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
    /// Returns the address of the first element of this tensor.
    fn data_ptr(&self) -> usize {
        Arc::as_ptr(&self.t.storage()) as usize
            + self.t.layout().offset * self.t.dtype().size_in_bytes()
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

    // ---- autograd attributes -------------------------------------------------------
    /// Is True if gradients need to be computed for this tensor, False otherwise.
    #[getter]
    fn requires_grad(&self) -> bool {
        self.t.requires_grad()
    }
    /// Sets `requires_grad`; only leaves may change it, as in torch.
    #[setter]
    fn set_requires_grad(slf: &Bound<'_, Self>, v: bool) -> PyResult<()> {
        slf.get().t.set_requires_grad_attr(v)?;
        if v {
            remember(slf)?;
        }
        Ok(())
    }
    /// Changes if autograd should record operations on this tensor: sets its
    /// `requires_grad` attribute in place.
    ///
    /// Args:
    ///     requires_grad: Whether autograd records operations on this tensor.
    ///
    /// Returns:
    ///     This tensor.
    #[pyo3(signature = (requires_grad=true))]
    fn requires_grad_(slf: &Bound<'_, Self>, requires_grad: bool) -> PyResult<Py<PyTensor>> {
        slf.get().t.set_requires_grad(requires_grad)?;
        if requires_grad && slf.get().t.is_leaf() {
            remember(slf)?;
        }
        Ok(slf.clone().unbind())
    }
    /// For a view, the tensor whose storage it views (None for a tensor that is not a view).
    #[getter]
    fn _base(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.t.base().map(|b| wrap_cached(py, &b)).transpose()
    }
    /// Legacy: always False, with a warning (volatile was replaced by `no_grad`).
    #[getter]
    fn volatile(&self, py: Python<'_>) -> PyResult<bool> {
        PyErr::warn(
            py,
            &py.get_type::<pyo3::exceptions::PyUserWarning>(),
            c"volatile was removed (Variable.volatile is always False)",
            1,
        )?;
        Ok(false)
    }
    /// Is True if this tensor is a leaf of the autograd graph: it does not require grad,
    /// or it was created by the user rather than by a recorded op.
    #[getter]
    fn is_leaf(&self) -> PyResult<bool> {
        ops::refresh_view(&self.t)?;
        Ok(self.t.is_leaf())
    }
    /// None by default; becomes a Tensor the first time a call to `backward()` computes
    /// gradients for this tensor.
    #[getter]
    fn grad(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let g = self.t.grad();
        if g.is_none() && !self.t.is_leaf() && !self.t.retains_grad() {
            PyErr::warn(
                py,
                &py.get_type::<pyo3::exceptions::PyUserWarning>(),
                NON_LEAF_GRAD_WARNING,
                1,
            )?;
        }
        g.map(|g| wrap_cached(py, &g)).transpose()
    }
    /// Sets `.grad` to a tensor or None.
    #[setter]
    fn set_grad(&self, g: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let g = match g {
            None => None,
            Some(o) if o.is_none() => None,
            Some(o) => Some(convert::tensor_arg(o, "grad", "grad", 0).map_err(|_| {
                PyTypeError::new_err(format!(
                    "assigned grad expected to be a Tensor or None but got grad of type {}",
                    convert::type_name(o)
                ))
            })?),
        };
        Ok(self.t.set_grad(g)?)
    }
    /// The autograd Node that created this tensor, or None for leaves.
    #[getter]
    fn grad_fn(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        ops::refresh_view(&self.t)?;
        self.t.grad_fn().map(|n| node_object(py, n)).transpose()
    }
    /// This tensor's position among the outputs of its `grad_fn`.
    #[getter]
    fn output_nr(&self) -> u32 {
        self.t.output_nr()
    }
    /// Is True if this tensor is non-leaf and its `.grad` is enabled to be populated during
    /// `backward()`, False otherwise.
    #[getter]
    fn retains_grad(&self) -> bool {
        self.t.retains_grad()
    }
    /// Enables this tensor to have its `.grad` populated during `backward()`. This is a no-op
    /// for leaf tensors.
    fn retain_grad(&self) -> PyResult<()> {
        ops::refresh_view(&self.t)?;
        let Some(node) = self.t.grad_fn() else {
            if !self.t.requires_grad() {
                return Err(PyRuntimeError::new_err(
                    "can't retain_grad on Tensor that has requires_grad=False",
                ));
            }
            return Ok(());
        };
        let nr = self.t.output_nr();
        let mut g = self.t.lock();
        if !g.cold().is_some_and(|c| c.retains_grad) {
            g.cold_mut().retains_grad = true;
            node.lock().retains_mut().push((nr, self.t.downgrade()));
        }
        Ok(())
    }
    /// This tensor's data without autograd history (a detached alias).
    #[getter]
    fn data(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        wrap(py, self.t.data())
    }
    /// Makes this tensor use the data of another tensor, without recording it for autograd.
    #[setter(data)]
    fn set_data(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        let o = convert::tensor_arg(other, "data", "data", 0)?;
        Ok(self.t.set_data(&o)?)
    }
    /// Returns a new tensor, detached from the current graph, that shares this tensor's data.
    fn detach(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        wrap(py, self.t.detach())
    }
    /// Detaches this tensor from the graph that created it, making it a leaf. Returns this
    /// tensor.
    fn detach_(slf: &Bound<'_, Self>) -> Py<PyTensor> {
        slf.get().t.detach_();
        slf.clone().unbind()
    }
    /// Registers a gradient hook; returns its id (the Python wrapper makes the handle).
    fn _register_hook(&self, f: Py<PyAny>) -> PyResult<u64> {
        if !self.t.requires_grad() {
            return Err(PyRuntimeError::new_err(
                "cannot register a hook on a tensor that doesn't require gradient",
            ));
        }
        ops::refresh_view(&self.t)?;
        let id = HOOK_IDS.fetch_add(1, Ordering::Relaxed);
        let hook = py_hook(f);
        match self.t.grad_fn() {
            Some(node) => node
                .lock()
                .pre_hooks_mut()
                .push((self.t.output_nr(), id, hook)),
            None => self.t.lock().cold_mut().hooks.push((id, hook)),
        }
        Ok(id)
    }
    /// Removes the hook with this id (called by the handle's `remove()`).
    fn _remove_hook(&self, id: u64) {
        if let Some(node) = self.t.grad_fn() {
            node.lock().pre_hooks_mut().retain(|h| h.1 != id);
        }
        if let Some(c) = self.t.lock().cold_mut_if_any() {
            c.hooks.retain(|h| h.0 != id);
        }
    }

    // ---- conversion ----------------------------------------------------------------
    /// Returns the tensor as a (nested) list of Python numbers; a number for a 0-d tensor.
    fn tolist(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        convert::to_list(py, &self.t)
    }
    /// Returns the value of this tensor as a standard Python number. This only works for
    /// tensors with one element.
    fn item(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        convert::scalar_to_py(py, convert::item(&self.t)?)
    }
    /// `float(x)` for a one-element tensor.
    fn __float__(&self) -> PyResult<f64> {
        Ok(convert::item(&self.t)?.as_f64())
    }
    /// `int(x)` for a one-element tensor (floats are truncated).
    fn __int__(&self) -> PyResult<i64> {
        Ok(match convert::item(&self.t)? {
            Scalar::Int(i) => i,
            Scalar::Bool(b) => i64::from(b),
            Scalar::Float(f) => f.trunc() as i64,
        })
    }
    /// Lets a one-element integer tensor be used as a Python index.
    fn __index__(&self) -> PyResult<i64> {
        match convert::item(&self.t) {
            Ok(Scalar::Int(i)) => Ok(i),
            Ok(Scalar::Bool(b)) => Ok(i64::from(b)),
            _ => Err(PyTypeError::new_err(
                "only integer tensors of a single element can be converted to an index",
            )),
        }
    }
    /// `bool(x)` for a one-element tensor; more elements are ambiguous, as in torch.
    fn __bool__(&self) -> PyResult<bool> {
        if self.t.numel() != 1 {
            return Err(PyRuntimeError::new_err(format!(
                "Boolean value of Tensor with {} values is ambiguous",
                if self.t.numel() == 0 {
                    "no"
                } else {
                    "more than one"
                }
            )));
        }
        Ok(convert::item(&self.t)?.as_f64() != 0.0)
    }
    /// Contiguous bytes of the data (for numpy()).
    fn _bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let s = self.t.snapshot();
        let r = s.storage.read();
        let c = crate::backend::cpu::elementwise::cast(&r, &s.layout, s.dtype);
        let bytes: Vec<u8> = match &c {
            crate::storage::Buffer::F32(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
            crate::storage::Buffer::F64(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
            crate::storage::Buffer::I64(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
            crate::storage::Buffer::Bool(v) => v.iter().map(|&x| u8::from(x)).collect(),
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

    // ---- arithmetic operators --------------------------------------------------------
    /// `self + other`.
    fn __add__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, |a, b| ops::add_op(a, b, Scalar::Int(1)))
    }
    /// `other + self`, for a number or tensor on the left.
    fn __radd__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        // torch records `2 + x` as add(x, 2): x is the node's first input
        rbinop_commuted(py, &self.t, o, |a, b| ops::add_op(a, b, Scalar::Int(1)))
    }
    /// `self - other`.
    fn __sub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, |a, b| ops::sub_op(a, b, Scalar::Int(1)))
    }
    /// `other - self`, for a number or tensor on the left.
    fn __rsub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match arg(o) {
            Some(Arg::S(s)) => Ok(wrap(py, ops::rsub_scalar(&self.t, s)?)?.into_any()),
            Some(Arg::T(t)) => Ok(wrap(py, ops::sub(t, &self.t)?)?.into_any()),
            None => Ok(py.NotImplemented()),
        }
    }
    /// `self * other`.
    fn __mul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::mul_op)
    }
    /// `other * self`, for a number or tensor on the left.
    fn __rmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        // torch records `2 * x` as mul(x, 2): x is the node's first input
        rbinop_commuted(py, &self.t, o, ops::mul_op)
    }
    /// `self / other`.
    fn __truediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::div_op)
    }
    /// `other / self`, for a number or tensor on the left.
    fn __rtruediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match arg(o) {
            // torch computes s / x as reciprocal(x) * s
            Some(Arg::S(s)) => {
                Ok(wrap(py, ops::mul_scalar(&ops::reciprocal(&self.t)?, s)?)?.into_any())
            }
            Some(Arg::T(t)) => Ok(wrap(py, ops::div(t, &self.t)?)?.into_any()),
            None => Ok(py.NotImplemented()),
        }
    }
    /// `self ** other`.
    fn __pow__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::pow_op)
    }
    /// `other ** self`, for a number or tensor on the left.
    fn __rpow__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        rbinop(py, &self.t, o, ops::pow_op)
    }
    /// `self @ other`.
    fn __matmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match o.cast::<PyTensor>() {
            Ok(b) => {
                let b = b.get().t.clone();
                Ok(wrap(py, gil::detach(py, || ops::matmul(&self.t, &b))?)?.into_any())
            }
            Err(_) => Ok(py.NotImplemented()),
        }
    }
    /// `other @ self`, with `other` on the left.
    fn __rmatmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match o.cast::<PyTensor>() {
            Ok(b) => {
                let b = b.get().t.clone();
                Ok(wrap(py, gil::detach(py, || ops::matmul(&b, &self.t))?)?.into_any())
            }
            Err(_) => Ok(py.NotImplemented()),
        }
    }
    /// `-self`.
    fn __neg__(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        wrap(py, ops::neg(&self.t)?)
    }
    /// `+self`: returns this tensor.
    fn __pos__(slf: &Bound<'_, Self>) -> Py<PyTensor> {
        slf.clone().unbind()
    }
    /// `abs(self)`.
    fn __abs__(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        wrap(py, ops::abs(&self.t)?)
    }
    /// `~self`: logical NOT of a bool tensor.
    fn __invert__(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        match self.t.dtype() {
            DType::Bool => wrap(py, ops::logical_not(&self.t)?),
            // two's complement: ~x == -x - 1
            DType::I64 => wrap(py, ops::sub_scalar(&ops::neg(&self.t)?, Scalar::Int(1))?),
            _ => Err(pyo3::exceptions::PyNotImplementedError::new_err(
                "\"bitwise_not_cpu\" not implemented for 'Float'",
            )),
        }
    }
    /// `self & other`: bitwise AND of integer or bool tensors (logical AND for bools).
    fn __and__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::bitwise_and)
    }
    /// `other & self`, for a number on the left.
    fn __rand__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        rbinop_commuted(py, &self.t, o, ops::bitwise_and)
    }
    /// `self | other`: bitwise OR of integer or bool tensors.
    fn __or__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::bitwise_or)
    }
    /// `other | self`, for a number on the left.
    fn __ror__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        rbinop_commuted(py, &self.t, o, ops::bitwise_or)
    }
    /// `self ^ other`: bitwise XOR of integer or bool tensors.
    fn __xor__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::bitwise_xor)
    }
    /// `other ^ self`, for a number on the left.
    fn __rxor__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        rbinop_commuted(py, &self.t, o, ops::bitwise_xor)
    }
    /// `==`, `!=`, `<`, `<=`, `>`, `>=`: element-wise comparisons giving bool tensors.
    fn __richcmp__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        op: pyo3::basic::CompareOp,
    ) -> PyResult<Py<PyAny>> {
        use pyo3::basic::CompareOp as C;
        let k = match op {
            C::Eq => BinaryOp::Eq,
            C::Ne => BinaryOp::Ne,
            C::Lt => BinaryOp::Lt,
            C::Le => BinaryOp::Le,
            C::Gt => BinaryOp::Gt,
            C::Ge => BinaryOp::Ge,
        };
        match arg(o) {
            Some(b) => Ok(wrap(py, ops::compare(k, Operand::T(&self.t), b.operand())?)?.into_any()),
            None if matches!(op, C::Eq) => {
                Ok(false.into_pyobject(py)?.to_owned().into_any().unbind())
            }
            None if matches!(op, C::Ne) => {
                Ok(true.into_pyobject(py)?.to_owned().into_any().unbind())
            }
            None => Ok(py.NotImplemented()),
        }
    }
    /// `self += other`, in place.
    fn __iadd__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        let b = other_arg(o, "iadd")?;
        ops::add_(&slf.get().t, b.operand(), Scalar::Int(1))?;
        Ok(())
    }
    /// `self -= other`, in place.
    fn __isub__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        let b = other_arg(o, "isub")?;
        ops::sub_(&slf.get().t, b.operand(), Scalar::Int(1))?;
        Ok(())
    }
    /// `self *= other`, in place.
    fn __imul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        let b = other_arg(o, "imul")?;
        ops::mul_(&slf.get().t, b.operand())?;
        Ok(())
    }
    /// `self /= other`, in place.
    fn __itruediv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        let b = other_arg(o, "itruediv")?;
        ops::div_(&slf.get().t, b.operand())?;
        Ok(())
    }
    /// `self **= other`, in place (as torch; without it Python rebinds to `self ** other`).
    fn __ipow__(
        slf: &Bound<'_, Self>,
        o: &Bound<'_, PyAny>,
        _modulo: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let b = other_arg(o, "ipow")?;
        ops::pow_(&slf.get().t, b.operand())?;
        Ok(())
    }

    // ---- named binary ops -------------------------------------------------------------
    /// Adds `other`, scaled by `alpha`, to this tensor.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast with this tensor.
    ///     alpha: The multiplier for `other` (1 by default).
    #[pyo3(signature = (other, *, alpha=None))]
    fn add(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let (b, a) = (other_arg(other, "add")?, alpha_arg(alpha)?);
        wrap(
            py,
            run2(py, &self.t, &b, || {
                ops::add_op(Operand::T(&self.t), b.operand(), a)
            })?,
        )
    }
    /// Subtracts `other`, scaled by `alpha`, from this tensor.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast with this tensor.
    ///     alpha: The multiplier for `other` (1 by default).
    #[pyo3(signature = (other, *, alpha=None))]
    fn sub(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let (b, a) = (other_arg(other, "sub")?, alpha_arg(alpha)?);
        wrap(
            py,
            run2(py, &self.t, &b, || {
                ops::sub_op(Operand::T(&self.t), b.operand(), a)
            })?,
        )
    }
    /// Python's `%`: the remainder with the sign of the divisor (torch.remainder).
    fn __mod__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::remainder_op)
    }
    /// `number % tensor`.
    fn __rmod__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match arg(o) {
            Some(Arg::S(s)) => Ok(wrap(py, ops::rremainder_scalar(&self.t, s)?)?.into_any()),
            _ => rbinop(py, &self.t, o, ops::remainder_op),
        }
    }
    /// Python's `//`: division rounded toward negative infinity.
    fn __floordiv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::floor_divide)
    }
    /// `number // tensor`.
    fn __rfloordiv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match arg(o) {
            Some(Arg::S(s)) => Ok(wrap(py, ops::rfloor_divide_scalar(&self.t, s)?)?.into_any()),
            _ => rbinop(py, &self.t, o, ops::floor_divide),
        }
    }
    /// Computes the remainder of division with the sign of the divisor (Python's `%`).
    ///
    /// Args:
    ///     other: The divisor, a tensor or number.
    fn remainder(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = other_arg(other, "remainder")?;
        wrap(py, ops::remainder_op(Operand::T(&self.t), b.operand())?)
    }
    /// Computes the remainder of division with the sign of the dividend (C's fmod).
    ///
    /// Args:
    ///     other: The divisor, a tensor or number.
    fn fmod(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = other_arg(other, "fmod")?;
        wrap(py, ops::fmod_op(Operand::T(&self.t), b.operand())?)
    }
    /// Divides and rounds the result toward negative infinity.
    ///
    /// Args:
    ///     other: The divisor, a tensor or number.
    fn floor_divide(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = other_arg(other, "floor_divide")?;
        wrap(py, ops::floor_divide(Operand::T(&self.t), b.operand())?)
    }
    /// Multiplies this tensor by `other`.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast with this tensor.
    fn mul(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = other_arg(other, "mul")?;
        wrap(
            py,
            run2(py, &self.t, &b, || {
                ops::mul_op(Operand::T(&self.t), b.operand())
            })?,
        )
    }
    /// Divides each element of this tensor by the corresponding element of `other`.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast with this tensor.
    ///     rounding_mode: None (true division), "trunc" or "floor" (zero gradient).
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn div(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        rounding_mode: Option<&str>,
    ) -> PyResult<Py<PyTensor>> {
        let b = other_arg(other, "div")?;
        match rounding_mode {
            None => wrap(
                py,
                run2(py, &self.t, &b, || {
                    ops::div_op(Operand::T(&self.t), b.operand())
                })?,
            ),
            Some("floor") => wrap(
                py,
                ops::div_rounded(Operand::T(&self.t), b.operand(), true)?,
            ),
            Some("trunc") => wrap(
                py,
                ops::div_rounded(Operand::T(&self.t), b.operand(), false)?,
            ),
            Some(m) => Err(PyRuntimeError::new_err(format!(
                "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{m}'"
            ))),
        }
    }

    /// Takes the power of each element with `exponent` and returns a tensor with the result.
    ///
    /// Args:
    ///     exponent: A tensor or number, broadcast with this tensor.
    fn pow(&self, py: Python<'_>, exponent: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = other_arg(exponent, "pow")?;
        wrap(
            py,
            run2(py, &self.t, &b, || {
                ops::pow_op(Operand::T(&self.t), b.operand())
            })?,
        )
    }
    /// Computes the element-wise maximum of this tensor and `other`.
    ///
    /// Args:
    ///     other: A tensor, broadcast with this tensor.
    fn maximum(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = convert::tensor_arg(other, "maximum", "other", 1)?;
        wrap(py, ops::maximum(&self.t, &b)?)
    }
    /// Computes the element-wise minimum of this tensor and `other`.
    ///
    /// Args:
    ///     other: A tensor, broadcast with this tensor.
    fn minimum(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = convert::tensor_arg(other, "minimum", "other", 1)?;
        wrap(py, ops::minimum(&self.t, &b)?)
    }
    /// Computes `self == other` element-wise, as a bool tensor.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast with this tensor.
    fn eq(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        self.compare(py, other, BinaryOp::Eq, "eq")
    }
    /// Computes `self != other` element-wise, as a bool tensor.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast with this tensor.
    fn ne(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        self.compare(py, other, BinaryOp::Ne, "ne")
    }
    /// Computes `self < other` element-wise, as a bool tensor.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast with this tensor.
    fn lt(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        self.compare(py, other, BinaryOp::Lt, "lt")
    }
    /// Computes `self <= other` element-wise, as a bool tensor.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast with this tensor.
    fn le(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        self.compare(py, other, BinaryOp::Le, "le")
    }
    /// Computes `self > other` element-wise, as a bool tensor.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast with this tensor.
    fn gt(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        self.compare(py, other, BinaryOp::Gt, "gt")
    }
    /// Computes `self >= other` element-wise, as a bool tensor.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast with this tensor.
    fn ge(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        self.compare(py, other, BinaryOp::Ge, "ge")
    }
    /// Computes the element-wise logical AND of this tensor and `other`.
    ///
    /// Args:
    ///     other: A tensor, broadcast with this tensor.
    fn logical_and(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        wrap(
            py,
            ops::logical(
                BinaryOp::LogicalAnd,
                &self.t,
                &convert::tensor_arg(other, "logical_and", "other", 1)?,
            )?,
        )
    }
    /// Computes the element-wise logical OR of this tensor and `other`.
    ///
    /// Args:
    ///     other: A tensor, broadcast with this tensor.
    fn logical_or(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        wrap(
            py,
            ops::logical(
                BinaryOp::LogicalOr,
                &self.t,
                &convert::tensor_arg(other, "logical_or", "other", 1)?,
            )?,
        )
    }
    /// Clamps all elements into the range [min, max].
    ///
    /// Args:
    ///     min: The lower bound, or None for no lower bound.
    ///     max: The upper bound, or None for no upper bound.
    #[pyo3(signature = (min=None, max=None))]
    fn clamp(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        if let Some((lo, hi)) = tensor_bounds(&self.t, min, max)? {
            return wrap(py, ops::clamp_tensor(&self.t, lo.as_ref(), hi.as_ref())?);
        }
        let (lo, hi) = (bound_arg(min)?, bound_arg(max)?);
        wrap(py, ops::clamp(&self.t, lo, hi)?)
    }
    /// Alias for `clamp()`.
    ///
    /// Args:
    ///     min: The lower bound, or None for no lower bound.
    ///     max: The upper bound, or None for no upper bound.
    #[pyo3(signature = (min=None, max=None))]
    fn clip(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        self.clamp(py, min, max)
    }

    // (the op table's unary methods: src/py/unary.rs)
    /// Computes the element-wise logical NOT of this tensor.
    fn logical_not(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        wrap(py, run(py, &self.t, || ops::logical_not(&self.t))?)
    }

    // ---- in-place ---------------------------------------------------------------------
    /// In-place version of `add()`.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast to this tensor's shape.
    ///     alpha: The multiplier for `other` (1 by default).
    ///
    /// Returns:
    ///     This tensor.
    #[pyo3(signature = (other, *, alpha=None))]
    fn add_(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let (b, a) = (other_arg(other, "add_")?, alpha_arg(alpha)?);
        ops::add_(&slf.get().t, b.operand(), a)?;
        Ok(slf.clone().unbind())
    }
    /// In-place version of `sub()`.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast to this tensor's shape.
    ///     alpha: The multiplier for `other` (1 by default).
    ///
    /// Returns:
    ///     This tensor.
    #[pyo3(signature = (other, *, alpha=None))]
    fn sub_(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let (b, a) = (other_arg(other, "sub_")?, alpha_arg(alpha)?);
        ops::sub_(&slf.get().t, b.operand(), a)?;
        Ok(slf.clone().unbind())
    }
    /// In-place version of `mul()`.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast to this tensor's shape.
    ///
    /// Returns:
    ///     This tensor.
    fn mul_(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = other_arg(other, "mul_")?;
        ops::mul_(&slf.get().t, b.operand())?;
        Ok(slf.clone().unbind())
    }
    /// In-place version of `div()`.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast to this tensor's shape.
    ///     rounding_mode: None (true division), "trunc" or "floor" (zero gradient).
    ///
    /// Returns:
    ///     This tensor.
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn div_(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        rounding_mode: Option<&str>,
    ) -> PyResult<Py<PyTensor>> {
        let b = other_arg(other, "div_")?;
        let x = &slf.get().t;
        match rounding_mode {
            None => ops::div_(x, b.operand())?,
            Some("floor") => ops::div_rounded_(x, b.operand(), true)?,
            Some("trunc") => ops::div_rounded_(x, b.operand(), false)?,
            Some(m) => {
                // torch's wording names div for div_ too
                return Err(PyRuntimeError::new_err(format!(
                    "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{m}'"
                )));
            }
        };
        Ok(slf.clone().unbind())
    }
    /// In-place version of `pow()`.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast to this tensor's shape.
    ///
    /// Returns:
    ///     This tensor.
    fn pow_(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = other_arg(other, "pow_")?;
        ops::pow_(&slf.get().t, b.operand())?;
        Ok(slf.clone().unbind())
    }
    /// Fills this tensor with zeros. Returns this tensor.
    fn zero_(slf: &Bound<'_, Self>) -> PyResult<Py<PyTensor>> {
        ops::zero_(&slf.get().t)?;
        Ok(slf.clone().unbind())
    }
    /// Fills this tensor with the specified value.
    ///
    /// Args:
    ///     value: A number or a one-element tensor.
    ///
    /// Returns:
    ///     This tensor.
    fn fill_(slf: &Bound<'_, Self>, value: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let v = match value.cast::<PyTensor>() {
            // a 0-d value that requires grad gets the gradient (summed)
            Ok(t) if t.get().t.ndim() == 0 && t.get().t.requires_grad() => {
                ops::fill_tensor_(&slf.get().t, &t.get().t)?;
                return Ok(slf.clone().unbind());
            }
            Ok(t) => convert::item(&t.get().t)?,
            Err(_) => scalar(value)
                .ok_or_else(|| PyTypeError::new_err("fill_(): argument 'value' must be Number"))?,
        };
        ops::fill_(&slf.get().t, v)?;
        Ok(slf.clone().unbind())
    }
    /// In-place version of `clamp()`.
    ///
    /// Args:
    ///     min: The lower bound, or None for no lower bound.
    ///     max: The upper bound, or None for no upper bound.
    ///
    /// Returns:
    ///     This tensor.
    #[pyo3(signature = (min=None, max=None))]
    fn clamp_(
        slf: &Bound<'_, Self>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let t = &slf.get().t;
        match tensor_bounds(t, min, max)? {
            Some((lo, hi)) => ops::clamp_tensor_(t, lo.as_ref(), hi.as_ref())?,
            None => ops::clamp_(t, bound_arg(min)?, bound_arg(max)?)?,
        };
        Ok(slf.clone().unbind())
    }
    /// Copies the elements from `src` into this tensor and returns this tensor.
    ///
    /// Args:
    ///     src: A tensor broadcastable to this tensor's shape; its dtype may differ.
    ///     non_blocking: Accepted for torch compatibility and ignored.
    #[pyo3(signature = (src, non_blocking=false))]
    fn copy_(
        slf: &Bound<'_, Self>,
        src: &Bound<'_, PyAny>,
        non_blocking: bool,
    ) -> PyResult<Py<PyTensor>> {
        let _ = non_blocking;
        let s = match scalar(src) {
            Some(v) => ops::scalar_tensor(v, slf.get().t.dtype()),
            None => convert::tensor_arg(src, "copy_", "src", 1)?,
        };
        ops::copy_(&slf.get().t, &s)?;
        Ok(slf.clone().unbind())
    }
    /// Fills elements of this tensor with `value` where `mask` is True.
    ///
    /// Args:
    ///     mask: A bool tensor, broadcastable to this tensor's shape.
    ///     value: A number or a 0-d tensor.
    ///
    /// Returns:
    ///     This tensor.
    fn masked_fill_(
        slf: &Bound<'_, Self>,
        mask: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let m = convert::tensor_arg(mask, "masked_fill_", "mask", 1)?;
        let x = &slf.get().t;
        match grad_value(value) {
            Some(v) => {
                crate::ops::inplace::commit_checked(x, |x| ops::masked_fill_tensor(x, &m, &v))?
            }
            None => {
                let v = scalar_or_item(value)?;
                crate::ops::inplace::commit_checked(x, |x| ops::masked_fill(x, &m, v))?
            }
        };
        Ok(slf.clone().unbind())
    }

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
        let x = self.cast_to(dtype)?;
        wrap(py, run(py, &x, || ops::sum(&x, d.as_deref(), keepdim))?)
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
                    match s.as_str() {
                        "fro" => 2.0,
                        _ => {
                            return Err(PyRuntimeError::new_err(format!(
                                "norm: unsupported p '{s}'"
                            )));
                        }
                    }
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
            if d != self.t.dtype() {
                return Err(PyRuntimeError::new_err(
                    "view(dtype) is not supported by rgrad",
                ));
            }
            return wrap(py, self.t.clone());
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
        wrap(py, ops::squeeze(&self.t, opt_dims(dim)?.as_deref())?)
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
        let s = convert::shape_of(&convert::sizes(sizes, "repeat")?)?;
        wrap(py, ops::repeat(&self.t, &s)?)
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
        let (_, len) = dim_size(&self.t, dim, "split")?;
        let (sizes, op) = match split_size_or_sections.extract::<usize>() {
            Ok(s) => (ops::split_sizes(len, s)?, "Split"),
            Err(_) => (
                split_size_or_sections.extract::<Vec<usize>>()?,
                "SplitWithSizes",
            ),
        };
        let parts = ops::split(&self.t, &sizes, dim, op)?;
        let objs: Vec<Py<PyTensor>> = parts
            .into_iter()
            .map(|p| wrap(py, p))
            .collect::<PyResult<_>>()?;
        Ok(PyTuple::new(py, objs)?.unbind())
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
        if chunks == 0 {
            return Err(PyRuntimeError::new_err(
                "chunk expects `chunks` to be greater than 0, got: 0",
            ));
        }
        let (_, len) = dim_size(&self.t, dim, "chunk")?;
        let (sizes, op) = if len == 0 {
            // torch: `chunks` empty pieces (split would give one), via split_with_sizes
            (vec![0; chunks], "SplitWithSizes")
        } else {
            (ops::split_sizes(len, len.div_ceil(chunks))?, "Split")
        };
        let parts = ops::split(&self.t, &sizes, dim, op)?;
        let objs: Vec<Py<PyTensor>> = parts
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
        match grad_value(value) {
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
        let (r, adv) = apply_index(py, &self.t, index)?;
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
        let py = index.py();
        let (r, adv) = apply_index(py, &self.t, index)?;
        let v = match value.cast::<PyTensor>() {
            Ok(t) => t.get().t.clone(),
            Err(_) => match scalar(value) {
                Some(s) => {
                    s.check_fits(self.t.dtype())?;
                    ops::scalar_tensor(s, self.t.dtype())
                }
                None => {
                    let (buf, shape) = convert::data_to_buffer(value, Some(self.t.dtype()))?;
                    Tensor::from_buffer(buf, &shape)
                }
            },
        };
        if adv.is_empty() && (r.shape() == v.shape() || v.ndim() == 0) {
            // torch's copy_to: the same sizes are a copy_, a 0-d value (a number) a fill_,
            // which may write an expanded tensor
            if v.ndim() == 0 {
                // a number may fill an expanded tensor, a 0-d tensor may not (torch's
                // fill_ with a tensor checks for shared memory)
                match scalar(value) {
                    Some(s) if value.cast::<PyTensor>().is_err() => ops::fill_(&r, s)?,
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

/// The size of `dim` of a tensor that must have at least one dimension.
fn dim_size(t: &Tensor, dim: i64, op: &str) -> PyResult<(usize, usize)> {
    let shape = t.shape();
    if shape.is_empty() {
        return Err(PyRuntimeError::new_err(format!(
            "{op} expects at least a 1-dimensional tensor"
        )));
    }
    let d = crate::shape::wrap_dim(dim, shape.len())?;
    Ok((d, shape[d]))
}

impl PyTensor {
    /// This tensor cast to an optional `dtype=` argument (reductions and softmax take one).
    fn cast_to(&self, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Tensor> {
        Ok(match dtype_arg(dtype)? {
            Some(d) => ops::to_dtype(&self.t, d)?,
            None => self.t.clone(),
        })
    }

    fn compare(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        op: BinaryOp,
        name: &str,
    ) -> PyResult<Py<PyTensor>> {
        let b = other_arg(other, name)?;
        wrap(py, ops::compare(op, Operand::T(&self.t), b.operand())?)
    }

    fn extremum(
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
fn same_or_cast(slf: &Bound<'_, PyTensor>, d: DType) -> PyResult<Py<PyTensor>> {
    let t = &slf.get().t;
    if t.dtype() == d {
        return Ok(slf.clone().unbind());
    }
    wrap(slf.py(), ops::to_dtype(t, d)?)
}

/// masked_fill's `value` when it is a tensor that requires grad (it then gets a gradient).
fn grad_value(value: &Bound<'_, PyAny>) -> Option<Tensor> {
    value
        .cast::<PyTensor>()
        .ok()
        .map(|t| t.get().t.clone())
        .filter(|t| t.requires_grad())
}

fn scalar_or_item(value: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    match value.cast::<PyTensor>() {
        Ok(t) => {
            let t = &t.get().t;
            if t.ndim() != 0 {
                return Err(PyRuntimeError::new_err(format!(
                    "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                    t.ndim()
                )));
            }
            convert::item(t)
        }
        Err(_) => scalar(value).ok_or_else(|| {
            PyTypeError::new_err(format!(
                "value must be a number, not {}",
                convert::type_name(value)
            ))
        }),
    }
}
