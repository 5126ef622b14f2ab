//! `rgrad.cuda`'s native half (python/rgrad/cuda/ builds torch's API on it) and the
//! device arguments of tensors and factories.

use super::pytensor::{PyTensor, wrap};
use crate::backend::cuda::{alloc, blas, driver};
use crate::device::Device;
use crate::ops;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Arc;

/// A `device=` argument: None, an int (a CUDA ordinal, as torch reads it), a string or
/// an `rgrad.device` (parsed by the Python class, which has torch's errors).
pub fn device_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Device>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    let py = obj.py();
    // the common spellings without the Python parser (every `*_like` passes its input's
    // device string: parsing it there cost 3 us of a 5 us `zeros_like`)
    if let Ok(s) = obj.cast::<pyo3::types::PyString>() {
        match s.to_str()? {
            "cpu" => return Ok(Some(Device::Cpu)),
            "cuda" => return Ok(Some(Device::Cuda(driver::current_device()))),
            _ => {}
        }
    } else if let Ok(i) = obj.extract::<i64>() {
        if i < 0 {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "Device index must not be negative",
            ));
        }
        return Ok(Some(Device::Cuda(i as u32)));
    }
    let d = py.import("rgrad")?.getattr("device")?.call1((obj,))?;
    let ty: String = d.getattr("type")?.extract()?;
    let index: Option<u32> = d.getattr("index")?.extract()?;
    Ok(Some(match ty.as_str() {
        "cpu" => Device::Cpu,
        "cuda" => Device::Cuda(index.unwrap_or_else(driver::current_device)),
        // (rgrad.device names every type torch does; torch's words for one it lacks)
        _ => {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                "rgrad is not linked with support for {ty} devices"
            )));
        }
    }))
}

/// Runs a factory with `device=` as the place it allocates (the CPU when None).
pub fn on_device<R>(
    device: Option<&Bound<'_, PyAny>>,
    f: impl FnOnce() -> PyResult<R>,
) -> PyResult<R> {
    match device_arg(device)? {
        None => f(),
        Some(d) => {
            if let Device::Cuda(i) = d {
                driver::device(i)?;
            }
            crate::device::with_default_device(d, f)
        }
    }
}

/// A tensor made on the host (from data, or by the CPU generator) moved to `device=`.
pub fn place(
    t: crate::tensor::Tensor,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<crate::tensor::Tensor> {
    match device_arg(device)?.unwrap_or_else(crate::device::default_device) {
        Device::Cpu => Ok(t),
        d => Ok(crate::autograd::grad_mode::with_grad_mode(false, || {
            ops::to_device(&t, d)
        })?),
    }
}

/// Sets this thread's default device (None: the CPU).
#[pyfunction]
#[pyo3(signature = (device=None))]
pub fn _set_default_device(device: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    crate::device::set_default_device(device_arg(device)?.unwrap_or(Device::Cpu));
    Ok(())
}

/// This thread's default device, as torch prints it.
#[pyfunction]
pub fn _get_default_device() -> String {
    crate::device::default_device().to_string()
}

#[pymethods]
impl PyTensor {
    /// The device as torch prints it (`cpu`, `cuda:0`).
    #[getter]
    fn _device_str(&self) -> String {
        self.t.snapshot().storage.device().to_string()
    }
    /// `x.to(device)` (the device half of `to`; a copy recorded as ToCopyBackward0).
    fn _to_device(&self, py: Python<'_>, device: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let d = device_arg(Some(device))?.unwrap_or(Device::Cpu);
        let t = &self.t;
        if t.snapshot().storage.device() == d {
            return Py::new(py, PyTensor { t: t.clone() });
        }
        let out = super::gil::detach(py, || ops::to_device(t, d))?;
        wrap(py, out)
    }
}

#[pyfunction]
pub fn _cuda_is_available() -> bool {
    driver::is_available()
}

#[pyfunction]
pub fn _cuda_device_count() -> usize {
    driver::device_count()
}

/// Raises torch's error unless CUDA can be used (`torch.cuda._lazy_init`).
#[pyfunction]
pub fn _cuda_init() -> PyResult<()> {
    Ok(driver::lazy_init()?)
}

#[pyfunction]
pub fn _cuda_get_device_properties<'py>(
    py: Python<'py>,
    device: u32,
) -> PyResult<Bound<'py, PyDict>> {
    let d = driver::device(device)?;
    let p = PyDict::new(py);
    p.set_item("name", &d.name)?;
    p.set_item("major", d.capability.0)?;
    p.set_item("minor", d.capability.1)?;
    p.set_item("total_memory", d.total_memory)?;
    p.set_item("multi_processor_count", d.multi_processor_count)?;
    p.set_item("L2_cache_size", d.l2_cache_size)?;
    p.set_item("uuid", &d.uuid)?;
    Ok(p)
}

#[pyfunction]
pub fn _cuda_synchronize(py: Python<'_>, device: u32) -> PyResult<()> {
    let d = driver::device(device)?;
    Ok(super::gil::detach(py, || d.synchronize())?)
}

#[pyfunction]
pub fn _cuda_current_device() -> PyResult<u32> {
    driver::lazy_init()?;
    Ok(driver::current_device())
}

#[pyfunction]
pub fn _cuda_set_device(device: u32) -> PyResult<()> {
    Ok(driver::set_current_device(device)?)
}

/// torch.cuda.memory_stats' keys (the "all" pool; rgrad has one pool per device).
#[pyfunction]
pub fn _cuda_memory_stats<'py>(py: Python<'py>, device: u32) -> PyResult<Bound<'py, PyDict>> {
    let d = py.import("collections")?.getattr("OrderedDict")?.call0()?;
    let d = d.cast_into::<PyDict>()?;
    if !driver::is_available() {
        return Ok(d);
    }
    let s: alloc::Stats = driver::device(device)?.alloc.stats();
    for pool in ["all", "large_pool", "small_pool"] {
        // (one pool: its figures are "all"'s and "large_pool"'s; "small_pool" is empty)
        let z = pool == "small_pool";
        let v = |x: usize| if z { 0 } else { x };
        d.set_item(format!("allocated_bytes.{pool}.current"), v(s.allocated))?;
        d.set_item(format!("allocated_bytes.{pool}.peak"), v(s.allocated_peak))?;
        d.set_item(
            format!("allocated_bytes.{pool}.allocated"),
            v(s.allocated_total),
        )?;
        d.set_item(format!("allocated_bytes.{pool}.freed"), v(s.freed_total))?;
        d.set_item(format!("reserved_bytes.{pool}.current"), v(s.reserved))?;
        d.set_item(format!("reserved_bytes.{pool}.peak"), v(s.reserved_peak))?;
        d.set_item(format!("active.{pool}.current"), v(s.active_blocks))?;
        d.set_item(format!("segment.{pool}.current"), v(s.segments))?;
    }
    d.set_item("num_alloc_retries", s.num_alloc_retries)?;
    d.set_item("num_ooms", s.num_ooms)?;
    d.set_item("num_device_alloc", s.num_device_alloc)?;
    d.set_item("num_device_free", s.num_device_free)?;
    Ok(d)
}

#[pyfunction]
pub fn _cuda_reset_peak_memory_stats(device: u32) -> PyResult<()> {
    driver::device(device)?.alloc.reset_peak();
    Ok(())
}

#[pyfunction]
pub fn _cuda_empty_cache(py: Python<'_>) -> PyResult<()> {
    for i in 0..driver::device_count() as u32 {
        let d = driver::device(i)?;
        super::gil::detach(py, || d.alloc.empty_cache())?;
    }
    Ok(())
}

/// How many kernels ran on the host for CUDA tensors (ops without a GPU kernel yet).
#[pyfunction]
pub fn _cuda_host_fallbacks() -> u64 {
    crate::backend::cuda::backend::host_fallbacks()
}

#[pyfunction]
pub fn _cuda_set_allow_tf32(on: bool) {
    blas::ALLOW_TF32.store(on, std::sync::atomic::Ordering::Relaxed);
}

#[pyfunction]
pub fn _cuda_get_allow_tf32() -> bool {
    blas::ALLOW_TF32.load(std::sync::atomic::Ordering::Relaxed)
}

/// cuProfilerStart / cuProfilerStop (torch.cuda.profiler.start / stop).
#[pyfunction]
pub fn _cuda_profiler(on: bool) -> PyResult<()> {
    let d = driver::device(driver::current_device())?;
    d.bind()?;
    use cudarc::driver::sys;
    // SAFETY: plain driver calls on a bound context.
    let r = unsafe {
        if on {
            sys::cuProfilerStart()
        } else {
            sys::cuProfilerStop()
        }
    };
    r.result().map_err(driver::cuda_error)?;
    Ok(())
}

/// A CUDA stream (torch.cuda.Stream's native half).
#[pyclass(name = "_CudaStream", frozen)]
pub struct PyStream {
    pub s: Arc<driver::Stream>,
}

#[pymethods]
impl PyStream {
    #[new]
    #[pyo3(signature = (device, priority=0))]
    fn new(device: u32, priority: i32) -> PyResult<Self> {
        Ok(PyStream {
            s: driver::Stream::new(device, priority)?,
        })
    }
    #[getter]
    fn stream_id(&self) -> u64 {
        self.s.id
    }
    #[getter]
    fn device_index(&self) -> u32 {
        self.s.device
    }
    #[getter]
    fn priority(&self) -> i32 {
        self.s.priority
    }
    #[getter]
    fn cuda_stream(&self) -> usize {
        self.s.raw as usize
    }
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        let s = self.s.clone();
        Ok(super::gil::detach(py, move || s.synchronize())?)
    }
    fn query(&self) -> PyResult<bool> {
        Ok(self.s.query()?)
    }
    fn wait_event(&self, event: &PyEvent) -> PyResult<()> {
        Ok(self.s.wait_event(&event.e)?)
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyStream>()
            .is_ok_and(|o| Arc::ptr_eq(&o.get().s, &self.s))
    }
    fn __hash__(&self) -> u64 {
        self.s.id
    }
}

/// The calling thread's current stream on `device`.
#[pyfunction]
pub fn _cuda_current_stream(device: u32) -> PyResult<PyStream> {
    Ok(PyStream {
        s: driver::current_stream(device)?,
    })
}

/// Sets the calling thread's current stream (None: back to the default stream).
#[pyfunction]
#[pyo3(signature = (device, stream=None))]
pub fn _cuda_set_stream(device: u32, stream: Option<&PyStream>) -> PyResult<()> {
    driver::device(device)?;
    driver::set_current_stream(device, stream.map(|s| s.s.clone()));
    Ok(())
}

/// A CUDA event (torch.cuda.Event's native half).
#[pyclass(name = "_CudaEvent", frozen)]
pub struct PyEvent {
    pub e: driver::Event,
}

#[pymethods]
impl PyEvent {
    #[new]
    #[pyo3(signature = (device, enable_timing=false, blocking=false))]
    fn new(device: u32, enable_timing: bool, blocking: bool) -> PyResult<Self> {
        Ok(PyEvent {
            e: driver::Event::new(device, enable_timing, blocking)?,
        })
    }
    /// The CUevent handle (torch.cuda.Event.cuda_event).
    #[getter]
    fn cuda_event(&self) -> usize {
        self.e.raw as usize
    }
    fn record(&self, stream: &PyStream) -> PyResult<()> {
        Ok(self.e.record(&stream.s)?)
    }
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        Ok(super::gil::detach(py, || self.e.synchronize())?)
    }
    fn query(&self) -> PyResult<bool> {
        Ok(self.e.query()?)
    }
    fn elapsed_time(&self, end: &PyEvent) -> PyResult<f32> {
        Ok(self.e.elapsed_ms(&end.e)?)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyStream>()?;
    m.add_class::<PyEvent>()?;
    m.add(
        "OutOfMemoryError",
        m.py().get_type::<super::error::OutOfMemoryError>(),
    )?;
    m.add(
        "_LinAlgError",
        m.py().get_type::<super::error::_LinAlgError>(),
    )?;
    m.add_function(wrap_pyfunction!(_set_default_device, m)?)?;
    m.add_function(wrap_pyfunction!(_get_default_device, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_is_available, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_device_count, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_init, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_get_device_properties, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_current_device, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_set_device, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_reset_peak_memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_empty_cache, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_host_fallbacks, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_set_allow_tf32, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_get_allow_tf32, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_current_stream, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_profiler, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_set_stream, m)?)?;
    Ok(())
}
