//! Conversions between Python objects and core values: numbers, nested data, sizes,
//! dims, and tensors back to nested lists.

use super::pytensor::PyTensor;
use crate::dtype::{Category, DType, Scalar};
use crate::ops::Operand;
use crate::shape::Shape;
use crate::storage::{Buffer, Element};
use crate::tensor::Tensor;
use crate::with_dtype;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PySequence, PyTuple};

/// A Python number as a core scalar (bool before int: bool is an int subclass). Accepts
/// objects with `__index__` or `__float__` (NumPy scalars).
pub fn scalar(obj: &Bound<'_, PyAny>) -> Option<Scalar> {
    if obj.is_instance_of::<PyBool>() {
        return obj.extract::<bool>().ok().map(Scalar::Bool);
    }
    if obj.is_instance_of::<PyInt>() {
        return obj.extract::<i64>().ok().map(Scalar::Int);
    }
    if obj.is_instance_of::<PyFloat>() {
        return obj.extract::<f64>().ok().map(Scalar::Float);
    }
    if obj.is_instance_of::<PyTensor>() || obj.is_instance_of::<pyo3::types::PyString>() {
        return None;
    }
    let ty = obj.get_type();
    let tyname = ty.name().map(|n| n.to_string()).unwrap_or_default();
    if tyname.starts_with("bool") {
        return obj.extract::<bool>().ok().map(Scalar::Bool);
    }
    if obj.hasattr("__index__").unwrap_or(false) {
        return obj
            .call_method0("__index__")
            .ok()?
            .extract::<i64>()
            .ok()
            .map(Scalar::Int);
    }
    if obj.hasattr("__float__").unwrap_or(false) {
        return obj
            .call_method0("__float__")
            .ok()?
            .extract::<f64>()
            .ok()
            .map(Scalar::Float);
    }
    None
}

/// A tensor or a number, for binary ops (the tensor borrowed from its Python object:
/// no reference count moved per call).
#[derive(Clone, Copy)]
pub enum Arg<'a> {
    T(&'a Tensor),
    S(Scalar),
}
impl Arg<'_> {
    pub fn operand(&self) -> Operand<'_> {
        match *self {
            Arg::T(t) => Operand::T(t),
            Arg::S(s) => Operand::S(s),
        }
    }
}

pub fn arg<'a>(obj: &'a Bound<'_, PyAny>) -> Option<Arg<'a>> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Some(Arg::T(&t.get().t));
    }
    scalar(obj).map(Arg::S)
}

/// The argument as a tensor, or torch's TypeError.
pub fn tensor_arg(
    obj: &Bound<'_, PyAny>,
    fname: &str,
    pname: &str,
    pos: usize,
) -> PyResult<Tensor> {
    tensor_ref(obj, fname, pname, pos).cloned()
}

/// [`tensor_arg`], borrowed.
pub fn tensor_ref<'a>(
    obj: &'a Bound<'_, PyAny>,
    fname: &str,
    pname: &str,
    pos: usize,
) -> PyResult<&'a Tensor> {
    match obj.cast::<PyTensor>() {
        Ok(t) => Ok(&t.get().t),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{fname}(): argument '{pname}' (position {pos}) must be Tensor, not {}",
            type_name(obj)
        ))),
    }
}

pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".into())
}

/// Sizes given as varargs `f(2, 3)`, or one sequence `f((2, 3))` / `f([2, 3])` / `f(x.shape)`.
pub fn sizes(args: &Bound<'_, PyTuple>, fname: &str) -> PyResult<Vec<i64>> {
    if args.is_empty() {
        let what = match fname {
            "permute" => "dims",
            "repeat" => "repeats",
            "reshape" | "view" => "shape",
            _ => "size",
        };
        return Err(PyTypeError::new_err(format!(
            "{fname}() missing 1 required positional arguments: \"{what}\""
        )));
    }
    let seq: Bound<'_, PyAny> = if args.len() == 1 && !args.get_item(0)?.is_instance_of::<PyInt>() {
        args.get_item(0)?
    } else {
        args.clone().into_any()
    };
    let mut out = Vec::new();
    let items = seq.cast::<PySequence>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{fname}(): argument 'size' must be tuple of ints, but found element of type {}",
            type_name(&seq)
        ))
    })?;
    for i in 0..items.len()? {
        let it = items.get_item(i)?;
        if it.is_instance_of::<PyBool>() || it.is_instance_of::<PyFloat>() {
            return Err(PyTypeError::new_err(format!(
                "{fname}(): argument 'size' must be tuple of ints, but found element of type {} at pos {i}",
                type_name(&it)
            )));
        }
        let v: i64 = match it.extract::<i64>() {
            Ok(v) => v,
            Err(_) => match scalar(&it) {
                Some(Scalar::Int(v)) => v,
                _ => {
                    return Err(PyTypeError::new_err(format!(
                        "{fname}(): argument 'size' must be tuple of ints, but found element of type {} at pos {i}",
                        type_name(&it)
                    )));
                }
            },
        };
        out.push(v);
    }
    Ok(out)
}

/// `dim` given as an int or a sequence of ints (None handled by the caller).
pub fn dims(obj: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    if let Ok(d) = obj.extract::<i64>() {
        return Ok(vec![d]);
    }
    obj.extract::<Vec<i64>>().map_err(|_| {
        PyTypeError::new_err(format!(
            "dim must be int or tuple of ints, not {}",
            type_name(obj)
        ))
    })
}

/// Nested Python data → (flat scalars, shape).
fn walk(
    obj: &Bound<'_, PyAny>,
    depth: usize,
    shape: &mut Shape,
    flat: &mut Vec<Scalar>,
    cat: &mut Category,
) -> PyResult<()> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.get().t;
        if t.ndim() == 0 {
            let v = t.item()?;
            *cat = (*cat).max(v.category());
            flat.push(v);
            return check_leaf(depth, shape);
        }
    }
    if let Some(s) = scalar(obj) {
        *cat = (*cat).max(s.category());
        flat.push(s);
        return check_leaf(depth, shape);
    }
    let seq = obj.cast::<PySequence>().map_err(|_| {
        PyTypeError::new_err(format!("Could not infer dtype of {}", type_name(obj)))
    })?;
    if obj.is_instance_of::<pyo3::types::PyString>() {
        return Err(PyTypeError::new_err("new(): invalid data type 'str'"));
    }
    let n = seq.len()?;
    if depth == shape.len() {
        shape.push(n);
    } else if shape[depth] != n {
        return Err(PyValueError::new_err(format!(
            "expected sequence of length {} at dim {depth} (got {n})",
            shape[depth]
        )));
    }
    for i in 0..n {
        walk(&seq.get_item(i)?, depth + 1, shape, flat, cat)?;
    }
    Ok(())
}

fn check_leaf(depth: usize, shape: &Shape) -> PyResult<()> {
    if depth != shape.len() {
        return Err(PyValueError::new_err(format!(
            "expected sequence of length {} at dim {depth} (got scalar)",
            shape.get(depth).copied().unwrap_or(0)
        )));
    }
    Ok(())
}

/// Builds a buffer from nested Python data; the dtype is inferred like torch.tensor
/// (floats -> float32, ints -> int64, bools -> bool) unless given.
pub fn data_to_buffer(obj: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<(Buffer, Shape)> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = t.get().t.detach();
        let d = dtype.unwrap_or(t.dtype());
        let c = crate::ops::to_dtype(&t, d)?;
        return Ok((crate::ops::contiguous_buffer(&c)?, c.shape()));
    }
    let mut shape = Shape::new();
    let mut flat = Vec::new();
    let mut cat = Category::Bool;
    walk(obj, 0, &mut shape, &mut flat, &mut cat)?;
    if flat.is_empty() {
        cat = Category::Float;
    }
    let d = dtype.unwrap_or(DType::default_for(cat));
    let buf = match d {
        // exact: going through f64 would round integers beyond 2^53
        DType::I64 => Buffer::I64(
            flat.iter()
                .map(|s| {
                    if let Scalar::Int(i) = s {
                        *i
                    } else {
                        s.as_f64() as i64
                    }
                })
                .collect(),
        ),
        _ => {
            with_dtype!(d, T => T::into_buffer(flat.iter().map(|s| T::from_f64(s.as_f64())).collect()))
        }
    };
    Ok((buf, shape))
}

pub fn scalar_to_py(py: Python<'_>, s: Scalar) -> PyResult<Py<PyAny>> {
    Ok(match s {
        Scalar::Bool(b) => PyBool::new(py, b).to_owned().into_any().unbind(),
        Scalar::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Scalar::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
    })
}

/// Nested lists of Python numbers (a plain number for 0-d), as torch's tolist().
pub fn to_list(py: Python<'_>, t: &Tensor) -> PyResult<Py<PyAny>> {
    let s = t.snapshot();
    let r = s.storage.read();
    let r = crate::backend::host::read(&r)?;
    fn build<T: Copy>(
        py: Python<'_>,
        v: &[T],
        shape: &[usize],
        strides: &[usize],
        off: usize,
        f: &dyn Fn(Python<'_>, T) -> PyResult<Py<PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        if shape.is_empty() {
            return f(py, v[off]);
        }
        // A list the machine cannot hold is Python's MemoryError (as in torch), not an
        // abort: one pointer per item must at least be allocatable.
        let mut items = Vec::new();
        items
            .try_reserve_exact(shape[0])
            .map_err(|_| pyo3::exceptions::PyMemoryError::new_err(()))?;
        for i in 0..shape[0] {
            items.push(build(
                py,
                v,
                &shape[1..],
                &strides[1..],
                off + i * strides[0],
                f,
            )?);
        }
        Ok(PyList::new(py, items)?.into_any().unbind())
    }
    let (sh, st, o) = (&s.layout.shape, &s.layout.strides, s.layout.offset);
    // Every element becomes a Python object of at least 24 bytes.
    if !crate::storage::fits_in_memory(s.layout.numel().saturating_mul(24)) {
        return Err(pyo3::exceptions::PyMemoryError::new_err(()));
    }
    match &*r {
        Buffer::F32(v) => build(py, v, sh, st, o, &|py, x| {
            Ok(f64::from(x).into_pyobject(py)?.into_any().unbind())
        }),
        Buffer::F64(v) => build(py, v, sh, st, o, &|py, x| {
            Ok(x.into_pyobject(py)?.into_any().unbind())
        }),
        Buffer::I64(v) => build(py, v, sh, st, o, &|py, x| {
            Ok(x.into_pyobject(py)?.into_any().unbind())
        }),
        Buffer::Bool(v) => build(py, v, sh, st, o, &|py, x| {
            Ok(PyBool::new(py, x).to_owned().into_any().unbind())
        }),
        Buffer::Cuda(_) => crate::storage::not_host(),
    }
}
