//! The `rgrad._C` extension module: the only code that uses PyO3. It converts
//! arguments, calls the core, and converts results and errors back.

// (helper-45)
mod activation;
mod binary;
mod convert;
mod cuda;
mod error;
mod exchange;
mod forward_ad;
mod function;
mod gil;
mod graph_api;
mod node;
mod profiler;
mod pytensor;
mod random;
mod replay;
mod tensor_arith;
mod tensor_autograd;
mod tensor_decomp;
mod tensor_fused;
mod tensor_index;
mod tensor_linalg;
mod tensor_misc;
mod tensor_ops_a;
mod tensor_ops_b;
mod tensor_reduce;
mod tensor_shape;
mod tensor_spectral;
mod tensor_strided;
mod unary;

use crate::autograd::{engine, grad_mode};
use crate::dtype::{DType, Scalar};
use crate::ops;
use crate::tensor::Tensor;
use convert::scalar;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pytensor::{PyDType, PyTensor, dtype_arg, wrap};

fn finish(py: Python<'_>, t: Tensor, requires_grad: bool) -> PyResult<Py<PyTensor>> {
    if !requires_grad {
        return wrap(py, t);
    }
    t.set_requires_grad_by(true, crate::tensor::RequiresGradCall::Factory)?;
    let obj = Bound::new(py, PyTensor { t })?;
    pytensor::remember(&obj)?;
    Ok(obj.unbind())
}

/// Constructs a tensor with no autograd history (a "leaf tensor") by copying `data`.
///
/// Args:
///     data: A number, a Tensor, or a (nested) list or tuple of numbers, bools or 0-d tensors.
///     dtype: The desired dtype; inferred from `data` when None.
///     device: Accepted for torch compatibility and ignored (rgrad runs on the CPU).
///     requires_grad: Whether autograd records operations on the result.
#[pyfunction]
#[pyo3(signature = (data, *, dtype=None, device=None, requires_grad=false))]
fn tensor(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    let (buf, shape) = convert::data_to_buffer(data, dtype_arg(dtype)?)?;
    crate::replay::const_born(&buf);
    let t = cuda::place(Tensor::from_buffer(buf, &shape), device)?;
    finish(py, t, requires_grad)
}

/// Builds a tensor from raw native-endian bytes (the back end of `from_numpy`).
#[pyfunction]
fn _from_bytes(
    py: Python<'_>,
    data: &[u8],
    dtype: &Bound<'_, PyAny>,
    shape: Vec<usize>,
) -> PyResult<Py<PyTensor>> {
    let d = dtype_arg(Some(dtype))?.ok_or_else(|| PyTypeError::new_err("dtype required"))?;
    let n = crate::shape::checked_product(&shape).and_then(|n| n.checked_mul(d.size_in_bytes()));
    if n != Some(data.len()) {
        return Err(PyTypeError::new_err(
            "byte length does not match shape and dtype",
        ));
    }
    use crate::storage::Buffer;
    let buf = match d {
        DType::F32 => Buffer::F32(
            data.chunks_exact(4)
                .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        ),
        DType::F64 => Buffer::F64(
            data.chunks_exact(8)
                .map(|c| f64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
        ),
        DType::I64 => Buffer::I64(
            data.chunks_exact(8)
                .map(|c| i64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
        ),
        DType::Bool => Buffer::Bool(data.iter().map(|&b| b != 0).collect()),
    };
    crate::replay::const_born(&buf);
    wrap(py, Tensor::from_buffer(buf, &shape))
}

macro_rules! factory {
    ($name:ident, $default:expr, |$shape:ident, $dtype:ident| $body:expr) => {
        /// Returns a new tensor of the given size, filled as its name says: zeros, ones,
        /// or empty (values to be overwritten; zeros on the CPU).
        ///
        /// Args:
        ///     *size: The shape, as ints or as one list, tuple or Size.
        ///     dtype: The desired dtype; float32 when None.
        ///     device: Accepted for torch compatibility and ignored (rgrad runs on the CPU).
        ///     requires_grad: Whether autograd records operations on the result.
        #[pyfunction]
        #[pyo3(signature = (*size, dtype=None, device=None, requires_grad=false))]
        fn $name(
            py: Python<'_>,
            size: &Bound<'_, PyTuple>,
            dtype: Option<&Bound<'_, PyAny>>,
            device: Option<&Bound<'_, PyAny>>,
            requires_grad: bool,
        ) -> PyResult<Py<PyTensor>> {
            let $shape =
                ops::factory_shape(stringify!($name), &convert::sizes(size, stringify!($name))?)?;
            let $dtype = dtype_arg(dtype)?.unwrap_or($default);
            let t: Tensor = cuda::on_device(device, || Ok($body?))?;
            finish(py, t, requires_grad)
        }
    };
}
factory!(zeros, DType::default_float(), |s, d| ops::zeros(&s, d));
factory!(ones, DType::default_float(), |s, d| ops::ones(&s, d));
factory!(empty, DType::default_float(), |s, d| ops::empty(&s, d));

/// Creates a tensor of size `size` filled with `fill_value`.
///
/// Args:
///     size: The shape, as an int or a list, tuple or Size.
///     fill_value: The number to fill with; it sets the dtype when `dtype` is None.
///     dtype: The desired dtype.
///     device: Accepted for torch compatibility and ignored (rgrad runs on the CPU).
///     requires_grad: Whether autograd records operations on the result.
#[pyfunction]
#[pyo3(signature = (size, fill_value, *, dtype=None, device=None, requires_grad=false))]
fn full(
    py: Python<'_>,
    size: &Bound<'_, PyAny>,
    fill_value: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    let s = crate::shape::sizes_to_shape(&convert::sizes(&PyTuple::new(py, [size])?, "full")?)?;
    let v = scalar(fill_value)
        .ok_or_else(|| PyTypeError::new_err("full(): argument 'fill_value' must be Number"))?;
    let d = dtype_arg(dtype)?.unwrap_or_else(|| v.default_dtype());
    finish(
        py,
        cuda::on_device(device, || Ok(ops::full(&s, v, d)?))?,
        requires_grad,
    )
}

/// Returns a 1-D tensor with values from the interval [start, end) taken with common
/// difference `step` beginning from `start`. `arange(n)` counts from 0 to n - 1.
///
/// Args:
///     start: The first value (or the end, when `end` is None).
///     end: The exclusive upper bound.
///     step: The gap between neighbouring values (1 by default).
///     dtype: The desired dtype; int64 when all arguments are ints, else float32.
///     device: Accepted for torch compatibility and ignored (rgrad runs on the CPU).
///     requires_grad: Whether autograd records operations on the result.
#[pyfunction]
#[pyo3(signature = (start, end=None, step=None, *, dtype=None, device=None, requires_grad=false))]
fn arange(
    py: Python<'_>,
    start: &Bound<'_, PyAny>,
    end: Option<&Bound<'_, PyAny>>,
    step: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    let num = |o: &Bound<'_, PyAny>| {
        scalar(o).ok_or_else(|| PyTypeError::new_err("arange(): arguments must be numbers"))
    };
    let (a, b) = match end {
        Some(e) if !e.is_none() => (num(start)?, num(e)?),
        _ => (Scalar::Int(0), num(start)?),
    };
    let st = match step {
        Some(s) if !s.is_none() => num(s)?,
        _ => Scalar::Int(1),
    };
    let all_int = [a, b, st].iter().all(|s| !matches!(s, Scalar::Float(_)));
    let d = dtype_arg(dtype)?.unwrap_or(if all_int {
        DType::I64
    } else {
        DType::default_float()
    });
    finish(
        py,
        cuda::on_device(device, || {
            Ok(ops::arange(a.as_f64(), b.as_f64(), st.as_f64(), d)?)
        })?,
        requires_grad,
    )
}

/// Creates a one-dimensional tensor of size `steps` whose values are evenly spaced from
/// `start` to `end`, inclusive.
///
/// Args:
///     start: The first value.
///     end: The last value.
///     steps: The number of values.
///     dtype: The desired dtype; float32 when None.
///     device: Accepted for torch compatibility and ignored (rgrad runs on the CPU).
///     requires_grad: Whether autograd records operations on the result.
#[pyfunction]
#[pyo3(signature = (start, end, steps, *, dtype=None, device=None, requires_grad=false))]
fn linspace(
    py: Python<'_>,
    start: f64,
    end: f64,
    steps: i64,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    let d = dtype_arg(dtype)?.unwrap_or_else(DType::default_float);
    finish(
        py,
        cuda::on_device(device, || Ok(ops::linspace(start, end, steps, d)?))?,
        requires_grad,
    )
}

/// Returns a 2-D tensor with ones on the diagonal and zeros elsewhere.
///
/// Args:
///     n: The number of rows.
///     m: The number of columns; `n` when None.
///     dtype: The desired dtype; float32 when None.
///     device: Accepted for torch compatibility and ignored (rgrad runs on the CPU).
///     requires_grad: Whether autograd records operations on the result.
#[pyfunction]
#[pyo3(signature = (n, m=None, *, dtype=None, device=None, requires_grad=false))]
fn eye(
    py: Python<'_>,
    n: usize,
    m: Option<usize>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    let d = dtype_arg(dtype)?.unwrap_or_else(DType::default_float);
    finish(
        py,
        cuda::on_device(device, || Ok(ops::eye(n, m.unwrap_or(n), d)?))?,
        requires_grad,
    )
}

fn tensor_list(seq: &Bound<'_, PyAny>, fname: &str) -> PyResult<Vec<Tensor>> {
    let mut v = Vec::new();
    for (i, it) in seq.try_iter()?.enumerate() {
        let it = it?;
        v.push(convert::tensor_arg(&it, fname, "tensors", i).map_err(|_| {
            PyTypeError::new_err(format!(
                "expected Tensor as element {i} in argument 0, but got {}",
                convert::type_name(&it)
            ))
        })?);
    }
    Ok(v)
}

/// Concatenates the given sequence of tensors in the given dimension.
///
/// Args:
///     tensors: A sequence of tensors of the same shape except in dimension `dim`.
///     dim: The dimension along which they are joined.
#[pyfunction]
#[pyo3(signature = (tensors, dim=0))]
fn cat(py: Python<'_>, tensors: &Bound<'_, PyAny>, dim: i64) -> PyResult<Py<PyTensor>> {
    let ts = tensor_list(tensors, "cat")?;
    wrap(py, gil::detach(py, || ops::cat(&ts, dim))?)
}

/// Concatenates a sequence of tensors along a new dimension.
///
/// Args:
///     tensors: A sequence of tensors of the same shape.
///     dim: The index of the new dimension.
#[pyfunction]
#[pyo3(signature = (tensors, dim=0))]
fn stack(py: Python<'_>, tensors: &Bound<'_, PyAny>, dim: i64) -> PyResult<Py<PyTensor>> {
    let ts = tensor_list(tensors, "stack")?;
    wrap(py, gil::detach(py, || ops::stack(&ts, dim))?)
}

/// Returns a tensor of elements selected from either `input` or `other`, depending on
/// `condition`.
///
/// Args:
///     condition: A bool tensor: where True, yield `input`, otherwise `other`.
///     input: A tensor or number, broadcast with the others.
///     other: A tensor or number, broadcast with the others.
#[pyfunction]
#[pyo3(name = "where")]
fn where_(
    py: Python<'_>,
    condition: &Bound<'_, PyAny>,
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
) -> PyResult<Py<PyTensor>> {
    let c = convert::tensor_arg(condition, "where", "condition", 0)?;
    let a = convert::arg(input).ok_or_else(|| {
        PyTypeError::new_err("where(): argument 'input' must be Tensor or Number")
    })?;
    let b = convert::arg(other).ok_or_else(|| {
        PyTypeError::new_err("where(): argument 'other' must be Tensor or Number")
    })?;
    wrap(py, ops::where_op(&c, a.operand(), b.operand())?)
}

// ---- autograd -------------------------------------------------------------------------

/// A backward call's outputs or inputs: a Tensor, or a GradientEdge (node, output_nr).
fn engine_input(o: &Bound<'_, PyAny>) -> PyResult<engine::Input> {
    if let Ok(t) = o.cast::<PyTensor>() {
        return Ok(engine::Input::Tensor(t.get().t.clone()));
    }
    if o.cast::<pyo3::types::PyTuple>().is_ok() {
        return Ok(engine::Input::Edge(graph_api::gradient_edge(o)?));
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "all inputs have to be Tensors or GradientEdges, but got {}",
        convert::type_name(o)
    )))
}

type PyGrads = Vec<Option<Py<PyTensor>>>;

fn wrap_grads(py: Python<'_>, r: Vec<Option<Tensor>>) -> PyResult<PyGrads> {
    r.into_iter()
        .map(|g| g.map(|g| wrap(py, g)).transpose())
        .collect()
}

/// The engine entry point behind rgrad.autograd.backward / grad (argument checking and
/// implicit gradients are done in Python). Runs with the GIL released.
#[pyfunction]
#[pyo3(signature = (tensors, grad_tensors, retain_graph, create_graph, inputs, accumulate, allow_unused))]
#[allow(clippy::too_many_arguments)]
fn _run_backward(
    py: Python<'_>,
    tensors: Vec<Bound<'_, PyAny>>,
    grad_tensors: Vec<PyRef<'_, PyTensor>>,
    retain_graph: bool,
    create_graph: bool,
    inputs: Vec<Bound<'_, PyAny>>,
    accumulate: bool,
    allow_unused: bool,
) -> PyResult<PyGrads> {
    let outs: Vec<engine::Input> = tensors.iter().map(engine_input).collect::<PyResult<_>>()?;
    let grads: Vec<Tensor> = grad_tensors.iter().map(|t| t.t.clone()).collect();
    let ins: Vec<engine::Input> = inputs.iter().map(engine_input).collect::<PyResult<_>>()?;
    let opts = engine::Options {
        retain_graph,
        create_graph,
        accumulate,
        allow_unused,
        forward_ad_off: false,
        relax_grad_layout: false,
    };
    let r = gil::detach(py, || engine::run_backward_from(&outs, &grads, &ins, opts))?;
    wrap_grads(py, r)
}

/// `grad(..., is_grads_batched=True)`'s engine call: every grad_tensor has a leading batch
/// dim of `batch` samples. Returns the gradients and the names of the backward nodes that
/// ran once per sample (no batching rule), for vmap's performance warning.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _run_backward_batched(
    py: Python<'_>,
    tensors: Vec<Bound<'_, PyAny>>,
    grad_tensors: Vec<PyRef<'_, PyTensor>>,
    retain_graph: bool,
    create_graph: bool,
    inputs: Vec<Bound<'_, PyAny>>,
    allow_unused: bool,
    batch: usize,
) -> PyResult<(PyGrads, Vec<String>)> {
    let outs: Vec<engine::Input> = tensors.iter().map(engine_input).collect::<PyResult<_>>()?;
    let grads: Vec<Tensor> = grad_tensors.iter().map(|t| t.t.clone()).collect();
    let ins: Vec<engine::Input> = inputs.iter().map(engine_input).collect::<PyResult<_>>()?;
    let opts = engine::Options {
        retain_graph,
        create_graph,
        accumulate: false,
        allow_unused,
        forward_ad_off: false,
        relax_grad_layout: false,
    };
    let (r, fallbacks) = gil::detach(py, || {
        engine::run_backward_batched(&outs, &grads, &ins, opts, batch)
    })?;
    Ok((wrap_grads(py, r)?, fallbacks))
}

/// Returns True if grad mode is currently enabled (in this thread).
#[pyfunction]
fn is_grad_enabled() -> bool {
    grad_mode::is_grad_enabled()
}

/// Sets grad mode for this thread and returns the previous value.
#[pyfunction]
fn _set_grad_enabled(mode: bool) -> bool {
    grad_mode::set_grad_enabled(mode)
}

/// `_set_grad_layout_enforcement_enabled`: whether this thread's backward calls steal a
/// leaf's first gradient only when it obeys the gradient layout contract.
#[pyfunction]
fn _set_grad_layout_enforcement_enabled(enable: bool) {
    grad_mode::set_grad_layout_enforcement_enabled(enable);
}

/// `_is_grad_layout_enforcement_enabled`.
#[pyfunction]
fn _is_grad_layout_enforcement_enabled() -> bool {
    grad_mode::is_grad_layout_enforcement_enabled()
}

/// Returns True if inference mode is currently enabled (in this thread).
#[pyfunction]
fn is_inference_mode_enabled() -> bool {
    grad_mode::is_inference_mode_enabled()
}

/// Sets inference mode for this thread; returns the previous state for `_restore_inference_mode`.
#[pyfunction]
fn _set_inference_mode(mode: bool) -> (bool, bool) {
    grad_mode::set_inference_mode(mode)
}

/// Restores the thread's inference and grad mode saved by `_set_inference_mode`.
#[pyfunction]
fn _restore_inference_mode(prev: (bool, bool)) {
    grad_mode::restore_inference_mode(prev)
}

/// Sets the number of threads used for intraop parallelism on CPU.
///
/// rgrad starts at most 256 worker threads: a larger count is capped there.
///
/// Args:
///     n: A positive number of threads.
#[pyfunction]
fn set_num_threads(n: &Bound<'_, PyAny>) -> PyResult<()> {
    // torch reads a C int: anything wider is Python's OverflowError-like ValueError
    let n: i64 = n.extract()?;
    if i32::try_from(n).is_err() {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "Overflow when unpacking long",
        ));
    }
    // a negative count is refused as 0 is, with the core's message
    crate::runtime::set_num_threads(usize::try_from(n).unwrap_or(0))?;
    Ok(())
}

/// Sets the default float dtype (`rgrad.set_default_dtype`, which checks it is a float
/// dtype): float32 or float64, process-wide as torch's.
#[pyfunction]
fn _set_default_float(dtype: &Bound<'_, PyAny>) -> PyResult<()> {
    match dtype_arg(Some(dtype))? {
        Some(d) if d.is_float() => {
            DType::set_default_float(d);
            Ok(())
        }
        _ => Err(pyo3::exceptions::PyTypeError::new_err(
            "only floating-point types are supported as the default type",
        )),
    }
}

/// Whether the default float dtype is float64 (`rgrad.get_default_dtype`).
#[pyfunction]
fn _default_float_is_f64() -> bool {
    DType::default_float() == DType::F64
}

/// Returns the number of threads used for parallelizing CPU operations.
#[pyfunction]
fn get_num_threads() -> usize {
    crate::runtime::num_threads()
}

/// Live autograd nodes in the arena (for tests of graph freeing).
#[pyfunction]
fn _live_nodes() -> usize {
    crate::autograd::graph::live_nodes()
}

/// The build of the vector math kernels in use: "baseline", "avx2" or "avx512" (the
/// CPU's best, or lower where the environment variable RGRAD_VMATH_LEVEL caps it).
#[pyfunction]
fn _vmath_level() -> &'static str {
    crate::backend::vmath_level()
}

// ---- torch.nn.functional ----------------------------------------------------------------

/// Measures the element-wise mean squared error.
///
/// Args:
///     input: The prediction.
///     target: A tensor of the same shape as `input`.
///     reduction: 'none', 'mean' or 'sum'.
#[pyfunction]
#[pyo3(signature = (input, target, reduction="mean"))]
fn mse_loss(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    reduction: &str,
) -> PyResult<Py<PyTensor>> {
    let (x, t) = (
        convert::tensor_arg(input, "mse_loss", "input", 0)?,
        convert::tensor_arg(target, "mse_loss", "target", 1)?,
    );
    let reduction = ops::Reduction::parse(reduction)?;
    // (large inputs: the kernels run without the GIL, as the tensor methods' do)
    wrap(
        py,
        pytensor::run(py, &x, || ops::mse_loss(&x, &t, reduction))?,
    )
}

/// `torch.fill(input, value)`: a new tensor of `input`'s shape, dtype and device filled
/// with `value`, a number (FillBackward0) or a 0-d tensor cast to `input`'s dtype
/// (FillBackward1: the value gets the gradient's sum).
#[pyfunction]
fn _fill(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
) -> PyResult<Py<PyTensor>> {
    let x = convert::tensor_arg(input, "fill", "input", 0)?;
    match value.cast::<PyTensor>() {
        Ok(v) => {
            let v = v.get().t.clone();
            wrap(py, pytensor::run(py, &x, || ops::fill_tensor(&x, &v))?)
        }
        Err(_) => {
            let v = scalar(value).ok_or_else(|| {
                PyTypeError::new_err(format!(
                    "fill(): argument 'value' must be Number, not {}",
                    convert::type_name(value)
                ))
            })?;
            wrap(py, pytensor::run(py, &x, || ops::fill(&x, v))?)
        }
    }
}

/// Computes the negative log likelihood loss.
///
/// Args:
///     input: Log-probabilities of shape (N, C) or (C,).
///     target: Class indices (int64) of shape (N,) or ().
///     reduction: 'none', 'mean' or 'sum'.
///     ignore_index: A target value that is ignored and adds no gradient.
#[pyfunction]
#[pyo3(signature = (input, target, reduction="mean", ignore_index=-100))]
fn nll_loss(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    reduction: &str,
    ignore_index: i64,
) -> PyResult<Py<PyTensor>> {
    let (x, t) = (
        convert::tensor_arg(input, "nll_loss", "input", 0)?,
        convert::tensor_arg(target, "nll_loss", "target", 1)?,
    );
    let reduction = ops::Reduction::parse(reduction)?;
    wrap(
        py,
        pytensor::run(py, &x, || ops::nll_loss(&x, &t, reduction, ignore_index))?,
    )
}

/// Computes the cross entropy loss between input logits and target.
///
/// Args:
///     input: Unnormalised logits of shape (N, C) or (C,).
///     target: Class indices (int64) of shape (N,) or ().
///     reduction: 'none', 'mean' or 'sum'.
///     ignore_index: A target value that is ignored and adds no gradient.
#[pyfunction]
#[pyo3(signature = (input, target, reduction="mean", ignore_index=-100))]
fn cross_entropy(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    reduction: &str,
    ignore_index: i64,
) -> PyResult<Py<PyTensor>> {
    let (x, t) = (
        convert::tensor_arg(input, "cross_entropy", "input", 0)?,
        convert::tensor_arg(target, "cross_entropy", "target", 1)?,
    );
    wrap(
        py,
        gil::detach(py, || {
            ops::cross_entropy(&x, &t, ops::Reduction::parse(reduction)?, ignore_index)
        })?,
    )
}

/// Applies a linear transformation to the incoming data: y = x A^T + b.
///
/// Args:
///     input: A tensor of shape (*, in_features).
///     weight: A tensor of shape (out_features, in_features).
///     bias: An optional tensor of shape (out_features,).
#[pyfunction]
#[pyo3(signature = (input, weight, bias=None))]
fn linear(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    weight: &Bound<'_, PyAny>,
    bias: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    let (x, w) = (
        convert::tensor_arg(input, "linear", "input", 0)?,
        convert::tensor_arg(weight, "linear", "weight", 1)?,
    );
    let b = match bias {
        Some(b) if !b.is_none() => Some(convert::tensor_arg(b, "linear", "bias", 2)?),
        _ => None,
    };
    wrap(py, gil::detach(py, || ops::linear(&x, &w, b.as_ref()))?)
}

#[pymodule]
#[pyo3(name = "_C")]
fn rgrad_c(m: &Bound<'_, PyModule>) -> PyResult<()> {
    gil::install();
    m.add_class::<PyTensor>()?;
    m.add_class::<replay::PyStepProgram>()?;
    m.add_function(wrap_pyfunction!(replay::_step_record_begin, m)?)?;
    m.add_function(wrap_pyfunction!(replay::_step_record_abort, m)?)?;
    m.add_function(wrap_pyfunction!(replay::_step_record_end, m)?)?;
    m.add_function(wrap_pyfunction!(replay::_step_is_recording, m)?)?;
    cuda::register(m)?;
    m.add_class::<PyDType>()?;
    m.add_class::<node::PyNode>()?;
    m.add_class::<node::PyAccumulateGrad>()?;
    m.add_class::<function::PyFunctionBase>()?;
    m.add_function(wrap_pyfunction!(function::_delayed_error, m)?)?;
    m.add_function(wrap_pyfunction!(function::_undefined_grad, m)?)?;
    m.add_function(wrap_pyfunction!(function::_set_vmap_apply, m)?)?;
    for d in [DType::F32, DType::F64, DType::I64, DType::Bool] {
        m.add(d.name(), PyDType { d })?;
    }
    m.add("_UNARY_OPS", PyTuple::new(m.py(), unary::names())?)?;
    m.add("_BINARY_OPS", PyTuple::new(m.py(), binary::names())?)?;
    binary::register(m)?;
    m.add_function(wrap_pyfunction!(unary::polygamma, m)?)?;
    m.add_function(wrap_pyfunction!(tensor, m)?)?;
    exchange::register(m)?;
    m.add_function(wrap_pyfunction!(_from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(zeros, m)?)?;
    m.add_function(wrap_pyfunction!(ones, m)?)?;
    m.add_function(wrap_pyfunction!(empty, m)?)?;
    m.add_function(wrap_pyfunction!(full, m)?)?;
    m.add_function(wrap_pyfunction!(arange, m)?)?;
    m.add_function(wrap_pyfunction!(linspace, m)?)?;
    m.add_function(wrap_pyfunction!(eye, m)?)?;
    random::register(m)?;
    profiler::register(m)?;
    forward_ad::register(m)?;
    m.add_function(wrap_pyfunction!(cat, m)?)?;
    m.add_function(wrap_pyfunction!(stack, m)?)?;
    m.add_function(wrap_pyfunction!(where_, m)?)?;
    m.add_function(wrap_pyfunction!(_run_backward, m)?)?;
    m.add_function(wrap_pyfunction!(_run_backward_batched, m)?)?;
    m.add_class::<graph_api::PyNodeHookOwner>()?;
    m.add_class::<graph_api::PySavedTensor>()?;
    m.add_function(wrap_pyfunction!(
        graph_api::_push_saved_tensors_default_hooks,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(
        graph_api::_pop_saved_tensors_default_hooks,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(
        graph_api::_top_saved_tensors_default_hooks,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(
        graph_api::_saved_tensors_hooks_disable,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(graph_api::_saved_tensors_hooks_enable, m)?)?;
    m.add_function(wrap_pyfunction!(
        graph_api::_saved_tensors_hooks_is_enabled,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(
        graph_api::_saved_tensors_hooks_get_disabled_error_message,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(graph_api::_make_saved_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(graph_api::_current_graph_task_id, m)?)?;
    m.add_function(wrap_pyfunction!(graph_api::_node_saved_names, m)?)?;
    m.add_function(wrap_pyfunction!(graph_api::_node_saved_field, m)?)?;
    m.add_function(wrap_pyfunction!(node::_reaches_other_leaves, m)?)?;
    m.add_class::<graph_api::PyNodeSavedTensor>()?;
    m.add_function(wrap_pyfunction!(graph_api::_push_node_creation_hook, m)?)?;
    m.add_function(wrap_pyfunction!(graph_api::_pop_node_creation_hook, m)?)?;
    crate::autograd::node_hooks::set_firer(graph_api::fire_node_creation_hooks);
    m.add_function(wrap_pyfunction!(graph_api::_queue_callback, m)?)?;
    m.add_function(wrap_pyfunction!(graph_api::_set_multithreading_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(graph_api::_is_multithreading_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(graph_api::_will_engine_execute_node, m)?)?;
    m.add_function(wrap_pyfunction!(graph_api::_is_checkpoint_valid, m)?)?;
    m.add_function(wrap_pyfunction!(graph_api::_increment_version, m)?)?;
    m.add_function(wrap_pyfunction!(graph_api::_grad_accumulator, m)?)?;
    m.add_function(wrap_pyfunction!(graph_api::_push_mutation_hook, m)?)?;
    m.add_function(wrap_pyfunction!(graph_api::_pop_mutation_hook, m)?)?;
    m.add_function(wrap_pyfunction!(graph_api::_push_op_log, m)?)?;
    m.add_function(wrap_pyfunction!(graph_api::_pop_op_log, m)?)?;
    m.add_function(wrap_pyfunction!(is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_grad_layout_enforcement_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_is_grad_layout_enforcement_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_inference_mode_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_inference_mode, m)?)?;
    m.add_function(wrap_pyfunction!(_restore_inference_mode, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(get_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(_set_default_float, m)?)?;
    m.add_function(wrap_pyfunction!(_default_float_is_f64, m)?)?;
    m.add_function(wrap_pyfunction!(_live_nodes, m)?)?;
    m.add_function(wrap_pyfunction!(_vmath_level, m)?)?;
    m.add_function(wrap_pyfunction!(mse_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_fill, m)?)?;
    m.add_function(wrap_pyfunction!(nll_loss, m)?)?;
    m.add_function(wrap_pyfunction!(cross_entropy, m)?)?;
    m.add_function(wrap_pyfunction!(linear, m)?)?;
    // (helper-41)
    m.add_function(wrap_pyfunction!(tensor_misc::_block_diag, m)?)?;
    // (helper-45)
    m.add_function(wrap_pyfunction!(activation::_activation, m)?)?;
    m.add_function(wrap_pyfunction!(activation::_activation_, m)?)?;
    m.add_function(wrap_pyfunction!(activation::_prelu_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(activation::rsub, m)?)?;
    m.add_function(wrap_pyfunction!(activation::_igamma, m)?)?;
    m.add_function(wrap_pyfunction!(activation::_igamma_, m)?)?;
    m.add_function(wrap_pyfunction!(activation::_rrelu_with_noise, m)?)?;
    Ok(())
}

/// The extension's own allocations (tensor buffers above all) go to mimalloc, which
/// keeps freed pages for reuse: with the system allocator every large fresh buffer was
/// a new mapping and a page fault per 4 KiB, the largest single cost of elementwise ops
/// on 64K+ elements. Python's own allocations are not affected.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;
