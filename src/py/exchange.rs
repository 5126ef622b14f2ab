//! Memory shared with other libraries, without copies, on the CPU: NumPy arrays
//! (`from_numpy`, `Tensor.numpy()`) and DLPack capsules (`Tensor.__dlpack__`,
//! `from_dlpack`, both the versioned v1.x capsules and the legacy ones).
//!
//! Imported memory becomes a storage whose buffer is lent ([`HostVec::lent`]): its lender
//! (the NumPy array, or the DLPack producer's deleter) is released when the last tensor on
//! it goes. Exported memory keeps the tensor's storage alive until the consumer is done:
//! NumPy holds a [`HostMemory`] as the array's base, a DLPack consumer calls the deleter
//! of the `DLManagedTensor` it took (or the capsule's destructor does, when nobody took
//! it). The live counts of both are kept for the leak tests (`_dlpack_live`).

use super::pytensor::{PyTensor, wrap};
use crate::backend::cuda::CudaBuf;
use crate::backend::cuda::alloc::Block;
use crate::dtype::DType;
use crate::layout::Layout;
use crate::shape::Shape;
use crate::storage::{Buffer, HostVec, Lender, Storage};
use crate::tensor::Tensor;
use pyo3::exceptions::{PyAssertionError, PyBufferError, PyRuntimeError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::ffi::{CStr, c_void};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

// ---- DLPack's C ABI (dlpack.h, v1.x; the legacy struct is v0.x's) ---------------------

#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    /// In elements; null for a compact row-major tensor.
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

/// The two kinds of managed tensor (legacy and versioned): what the code shared by both
/// needs of each.
trait Managed: Sized + 'static {
    /// The capsule's name, and the name a consumer gives it when it takes the tensor.
    const NAME: &'static CStr;
    const USED: &'static CStr;
    /// A managed tensor handing out `dl_tensor`, to be freed by `deleter`.
    fn new(dl_tensor: DLTensor, flags: u64, deleter: unsafe extern "C" fn(*mut Self)) -> Self;
    fn deleter(&self) -> Option<unsafe extern "C" fn(*mut Self)>;
    fn set_context(&mut self, ctx: *mut c_void);
    fn dl_tensor(&self) -> &DLTensor;
    /// The DLPack version it was made by (`None`: a legacy one, which has none).
    fn version(&self) -> Option<DLPackVersion>;
}

impl Managed for DLManagedTensor {
    const NAME: &'static CStr = c"dltensor";
    const USED: &'static CStr = c"used_dltensor";
    fn new(dl_tensor: DLTensor, _flags: u64, deleter: unsafe extern "C" fn(*mut Self)) -> Self {
        DLManagedTensor {
            dl_tensor,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(deleter),
        }
    }
    fn deleter(&self) -> Option<unsafe extern "C" fn(*mut Self)> {
        self.deleter
    }
    fn set_context(&mut self, ctx: *mut c_void) {
        self.manager_ctx = ctx;
    }
    fn dl_tensor(&self) -> &DLTensor {
        &self.dl_tensor
    }
    fn version(&self) -> Option<DLPackVersion> {
        None
    }
}

impl Managed for DLManagedTensorVersioned {
    const NAME: &'static CStr = c"dltensor_versioned";
    const USED: &'static CStr = c"used_dltensor_versioned";
    fn new(dl_tensor: DLTensor, flags: u64, deleter: unsafe extern "C" fn(*mut Self)) -> Self {
        DLManagedTensorVersioned {
            version: VERSION,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(deleter),
            flags,
            dl_tensor,
        }
    }
    fn deleter(&self) -> Option<unsafe extern "C" fn(*mut Self)> {
        self.deleter
    }
    fn set_context(&mut self, ctx: *mut c_void) {
        self.manager_ctx = ctx;
    }
    fn dl_tensor(&self) -> &DLTensor {
        &self.dl_tensor
    }
    fn version(&self) -> Option<DLPackVersion> {
        Some(self.version)
    }
}

const KDL_CPU: i32 = 1;
const KDL_CUDA: i32 = 2;
const KDL_CUDA_HOST: i32 = 3;
const KDL_INT: u8 = 0;
const KDL_UINT: u8 = 1;
const KDL_FLOAT: u8 = 2;
const KDL_BFLOAT: u8 = 4;
const KDL_COMPLEX: u8 = 5;
const KDL_BOOL: u8 = 6;
const FLAG_READ_ONLY: u64 = 1;
const FLAG_IS_COPIED: u64 = 2;
/// What we write: everything we use is in DLPack 1.0.
const VERSION: DLPackVersion = DLPackVersion { major: 1, minor: 0 };

/// Exports not yet released by their consumer, and imports whose producer's deleter has
/// not run yet (for the leak tests).
static LIVE_EXPORTS: AtomicI64 = AtomicI64::new(0);
static LIVE_IMPORTS: AtomicI64 = AtomicI64::new(0);

fn dl_dtype(d: DType) -> DLDataType {
    let (code, bits) = match d {
        DType::Bool => (KDL_BOOL, 8),
        DType::I64 => (KDL_INT, 64),
        DType::F32 => (KDL_FLOAT, 32),
        DType::F64 => (KDL_FLOAT, 64),
    };
    DLDataType {
        code,
        bits,
        lanes: 1,
    }
}

fn from_dl_dtype(t: DLDataType) -> PyResult<DType> {
    let d = match (t.code, t.bits, t.lanes) {
        (KDL_BOOL, 8, 1) => DType::Bool,
        (KDL_INT, 64, 1) => DType::I64,
        (KDL_FLOAT, 32, 1) => DType::F32,
        (KDL_FLOAT, 64, 1) => DType::F64,
        (code, bits, lanes) => {
            let kind = match code {
                KDL_INT => "int".to_string(),
                KDL_UINT => "uint".to_string(),
                KDL_FLOAT => "float".to_string(),
                KDL_BFLOAT => "bfloat".to_string(),
                KDL_COMPLEX => "complex".to_string(),
                KDL_BOOL => "bool".to_string(),
                _ => format!("code {code} of "),
            };
            let lanes = if lanes == 1 {
                String::new()
            } else {
                format!(" with {lanes} lanes")
            };
            return Err(PyTypeError::new_err(format!(
                "rgrad.from_dlpack: unsupported dtype {kind}{bits}{lanes}. The only supported \
                 types are: float64, float32, int64 and bool."
            )));
        }
    };
    Ok(d)
}

// ---- the tensor behind an array or a DLTensor -----------------------------------------

/// The number of elements from the first to the last one that `shape` and `strides`
/// (in elements) reach, or `None` if that overflows (`Layout::storage_span`, checked: the
/// sizes come from another library).
fn span(shape: &[usize], strides: &[usize]) -> Option<usize> {
    if shape.contains(&0) {
        return Some(0);
    }
    let mut last = 0usize;
    for (&n, &s) in shape.iter().zip(strides) {
        last = last.checked_add((n - 1).checked_mul(s)?)?;
    }
    last.checked_add(1)
}

/// Where memory another library lends lives.
#[derive(Clone, Copy)]
enum Place {
    Host,
    Cuda(u32),
}

/// A tensor on memory another library lends: `shape` and `strides` (in elements) from
/// `ptr` (a device address for `Place::Cuda`), kept alive by `lender`.
///
/// # Safety
/// `ptr` must be aligned for `dtype` and valid for every element the layout reaches, with
/// values valid for `dtype`, until `lender` drops.
unsafe fn lent_tensor(
    place: Place,
    dtype: DType,
    ptr: *mut u8,
    shape: Shape,
    strides: Shape,
    lender: Box<dyn Lender>,
) -> PyResult<Tensor> {
    // (a replay could not know that the memory is another library's, nor get it again)
    crate::replay::refuse("from_numpy / from_dlpack (memory another library lends)")?;
    let item = dtype.size_in_bytes();
    let len = span(&shape, &strides)
        .filter(|&n| {
            n.checked_mul(item)
                .is_some_and(|b| b <= isize::MAX as usize)
        })
        .ok_or_else(|| PyRuntimeError::new_err("rgrad: the shared memory's size overflows"))?;
    let buf = match place {
        // SAFETY: the caller's promise, for the `len` elements the layout spans.
        Place::Host => unsafe {
            match dtype {
                DType::Bool => Buffer::Bool(HostVec::lent(ptr.cast(), len, lender)),
                DType::I64 => Buffer::I64(HostVec::lent(ptr.cast(), len, lender)),
                DType::F32 => Buffer::F32(HostVec::lent(ptr.cast(), len, lender)),
                DType::F64 => Buffer::F64(HostVec::lent(ptr.cast(), len, lender)),
            }
        },
        Place::Cuda(device) => {
            // (the device must exist here, its context made, before kernels run on it)
            crate::backend::cuda::driver::device(device)?;
            Buffer::Cuda(Box::new(CudaBuf {
                dtype,
                len,
                block: Block::lent(ptr.addr() as u64, len * item, device, lender),
            }))
        }
    };
    let layout = Layout {
        shape,
        strides,
        offset: 0,
    };
    Ok(Tensor::from_storage(
        Arc::new(Storage::new(buf)),
        layout,
        dtype,
    ))
}

/// A well-aligned address for an empty tensor whose producer gave none (null).
fn dangling(dtype: DType) -> *mut u8 {
    match dtype {
        DType::Bool => std::ptr::NonNull::<bool>::dangling().as_ptr().cast(),
        DType::I64 => std::ptr::NonNull::<i64>::dangling().as_ptr().cast(),
        DType::F32 => std::ptr::NonNull::<f32>::dangling().as_ptr().cast(),
        DType::F64 => std::ptr::NonNull::<f64>::dangling().as_ptr().cast(),
    }
}

// ---- NumPy ----------------------------------------------------------------------------

/// The NumPy array a tensor from `from_numpy` shares memory with: dropping it releases the
/// tensor's hold on the array (`Py::drop` defers the decref when the GIL is not held).
struct ArrayLender(#[allow(dead_code)] Py<PyAny>);

/// The element type of a buffer-protocol format string, if it is one rgrad shares: native
/// byte order only (`@`, `=` or `<`: the machines rgrad runs on are little-endian).
fn buffer_dtype(format: &[u8], itemsize: isize) -> Option<DType> {
    let code = match format {
        [c] | [b'@' | b'=' | b'<', c] => *c,
        _ => return None,
    };
    match (code, itemsize) {
        (b'f', 4) => Some(DType::F32),
        (b'd', 8) => Some(DType::F64),
        (b'l' | b'q', 8) => Some(DType::I64),
        (b'?', 1) => Some(DType::Bool),
        _ => None,
    }
}

/// Shares the memory of the NumPy array `array` (through the buffer protocol: one call
/// gives its address, shape, strides and element type), holding a reference to it.
/// `None` when the array cannot be shared as it is (another dtype, a byte order, negative
/// or uneven strides, data not aligned to its elements, no buffer): `from_numpy` then
/// raises torch's error or copies.
#[pyfunction]
fn _share_numpy(py: Python<'_>, array: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyTensor>>> {
    let mut view = ffi::Py_buffer::new();
    // SAFETY: `view` is ours to fill; on success it is released below, once.
    if unsafe { ffi::PyObject_GetBuffer(array.as_ptr(), &mut view, ffi::PyBUF_RECORDS_RO) } != 0 {
        PyErr::take(py); // (from_numpy's own checks say what is wrong, in torch's words)
        return Ok(None);
    }
    // SAFETY: a successful export: `format` is a C string, `shape` and `strides` hold
    // `ndim` entries each (PyBUF_STRIDES asked for them), until the release below.
    let parsed = unsafe {
        let ndim = usize::try_from(view.ndim).unwrap_or(0);
        let format = if view.format.is_null() {
            &b"B"[..]
        } else {
            CStr::from_ptr(view.format).to_bytes()
        };
        let (dims, steps): (&[isize], &[isize]) = if ndim == 0 {
            (&[], &[])
        } else {
            (
                std::slice::from_raw_parts(view.shape, ndim),
                std::slice::from_raw_parts(view.strides, ndim),
            )
        };
        buffer_dtype(format, view.itemsize).and_then(|dtype| {
            let item = dtype.size_in_bytes() as isize;
            let mut shape = Shape::with_capacity(ndim);
            let mut strides = Shape::with_capacity(ndim);
            for (&n, &s) in dims.iter().zip(steps) {
                if s < 0 || s % item != 0 {
                    return None;
                }
                shape.push(n as usize);
                strides.push((s / item) as usize);
            }
            Some((dtype, view.buf.cast::<u8>(), shape, strides))
        })
    };
    // SAFETY: the export made above, released once; the array itself stays alive (the
    // lender holds it), so its memory does.
    unsafe { ffi::PyBuffer_Release(&mut view) };
    let Some((dtype, ptr, shape, mut strides)) = parsed else {
        return Ok(None);
    };
    let empty = shape.contains(&0);
    if empty {
        // The buffer protocol gives an empty array row-major strides; torch keeps the
        // array's own (NumPy 2 makes them all 0).
        let own: Vec<isize> = array.getattr("strides")?.extract()?;
        let item = dtype.size_in_bytes() as isize;
        if own.len() != strides.len() || own.iter().any(|&s| s < 0 || s % item != 0) {
            return Ok(None);
        }
        strides = own.iter().map(|&s| (s / item) as usize).collect();
    }
    let ptr = if empty { dangling(dtype) } else { ptr };
    if ptr.addr() % dtype.size_in_bytes() != 0 {
        return Ok(None);
    }
    // SAFETY: the array's own memory, shape and strides, alive as long as the array,
    // which the lender holds; NumPy's bools are bytes 0 and 1.
    let t = unsafe {
        lent_tensor(
            Place::Host,
            dtype,
            ptr,
            shape,
            strides,
            Box::new(ArrayLender(array.clone().unbind())),
        )?
    };
    wrap(py, t).map(Some)
}

/// A tensor's memory as NumPy sees it: an object with `__array_interface__`, which the
/// array `np.asarray` makes of it keeps as its base, and which keeps the storage alive.
#[pyclass(module = "rgrad._C", frozen)]
pub struct HostMemory {
    /// (held only to keep the memory alive)
    _storage: Arc<Storage>,
    interface: Py<PyDict>,
}

#[pymethods]
impl HostMemory {
    #[getter]
    fn __array_interface__(&self, py: Python<'_>) -> Py<PyDict> {
        self.interface.clone_ref(py)
    }
}

/// The memory of the CPU tensor `t`, for `Tensor.numpy()` (the checks are in Python).
#[pyfunction]
fn _host_memory(py: Python<'_>, t: &PyTensor) -> PyResult<HostMemory> {
    crate::replay::refuse("numpy() (the tensor's values read on the host)")?;
    let t = &t.t;
    let storage = t.storage();
    let Some(base) = storage.read().host_ptr() else {
        return Err(PyTypeError::new_err(
            "can't convert a device tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
        ));
    };
    let layout = t.layout();
    let dtype = t.dtype();
    let item = dtype.size_in_bytes();
    let addr = base.wrapping_add(layout.offset * item).addr();
    let typestr = match dtype {
        DType::Bool => "|b1",
        DType::I64 => "<i8",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
    };
    let d = PyDict::new(py);
    d.set_item("data", (addr, false))?;
    d.set_item("shape", PyTuple::new(py, layout.shape.iter())?)?;
    d.set_item(
        "strides",
        PyTuple::new(py, layout.strides.iter().map(|s| s * item))?,
    )?;
    d.set_item("typestr", typestr)?;
    d.set_item("version", 3)?;
    Ok(HostMemory {
        _storage: storage,
        interface: d.unbind(),
    })
}

// ---- DLPack export --------------------------------------------------------------------

/// What a DLPack export holds: the managed tensor handed out (first, so that the deleter's
/// pointer is this struct's), the shape and strides it points to, and the storage.
#[repr(C)]
struct Export<M> {
    managed: M,
    shape: Box<[i64]>,
    strides: Box<[i64]>,
    _storage: Arc<Storage>,
}

unsafe extern "C" fn delete_export<M: Managed>(p: *mut M) {
    if !p.is_null() {
        // SAFETY: `p` is the first field of a boxed `Export` made by `export`, and a
        // deleter runs once (the consumer's call or the unconsumed capsule's destructor).
        drop(unsafe { Box::from_raw(p.cast::<Export<M>>()) });
        LIVE_EXPORTS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A capsule nobody consumed frees what it holds; a consumed one was renamed and its
/// consumer calls the deleter.
unsafe extern "C" fn destroy_capsule<M: Managed>(cap: *mut ffi::PyObject) {
    // SAFETY: called by Python with the capsule, the GIL held; a capsule still under its
    // name holds the managed tensor it was made with.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, M::NAME.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(cap, M::NAME.as_ptr()).cast::<M>();
            if let Some(d) = (*p).deleter() {
                d(p);
            }
        }
    }
}

fn dl_device_of(t: &Tensor) -> DLDevice {
    match t.device() {
        crate::device::Device::Cpu => DLDevice {
            device_type: KDL_CPU,
            device_id: 0,
        },
        crate::device::Device::Cuda(i) => DLDevice {
            device_type: KDL_CUDA,
            device_id: i as i32,
        },
    }
}

/// A DLPack capsule of `t`'s memory (versioned or legacy), sharing it, or of a copy.
fn export<'py>(
    py: Python<'py>,
    t: &Tensor,
    versioned: bool,
    copy: bool,
    read_only: bool,
) -> PyResult<Bound<'py, PyAny>> {
    crate::replay::refuse("a DLPack export (the tensor's memory handed to another library)")?;
    let t = if copy {
        crate::autograd::grad_mode::with_grad_mode(false, || crate::ops::clone_row_major(t))?
    } else {
        t.clone()
    };
    let storage = t.storage();
    let layout = t.layout();
    let dtype = t.dtype();
    let skip = layout.offset * dtype.size_in_bytes();
    let data: *mut u8 = match &*storage.read() {
        Buffer::Cuda(c) => std::ptr::without_provenance_mut((c.ptr() as usize).wrapping_add(skip)),
        host => host
            .host_ptr()
            .unwrap_or(std::ptr::null_mut())
            .wrapping_add(skip),
    };
    let shape: Box<[i64]> = layout.shape.iter().map(|&n| n as i64).collect();
    let strides: Box<[i64]> = layout.strides.iter().map(|&s| s as i64).collect();
    let dl_tensor = DLTensor {
        data: data.cast(),
        device: dl_device_of(&t),
        ndim: layout.shape.len() as i32,
        dtype: dl_dtype(dtype),
        shape: shape.as_ptr().cast_mut(),
        strides: strides.as_ptr().cast_mut(),
        byte_offset: 0,
    };
    let flags = if read_only { FLAG_READ_ONLY } else { 0 } | if copy { FLAG_IS_COPIED } else { 0 };
    let managed = (dl_tensor, flags, shape, strides, storage);
    if versioned {
        capsule::<DLManagedTensorVersioned>(py, managed)
    } else {
        capsule::<DLManagedTensor>(py, managed)
    }
}

/// What an export hands out and holds: the `DLTensor`, its flags, the shape and strides
/// it points to, and the storage.
type Exported = (DLTensor, u64, Box<[i64]>, Box<[i64]>, Arc<Storage>);

/// A capsule of kind `M` owning an export.
fn capsule<'py, M: Managed>(
    py: Python<'py>,
    (dl_tensor, flags, shape, strides, storage): Exported,
) -> PyResult<Bound<'py, PyAny>> {
    let p = Box::into_raw(Box::new(Export {
        managed: M::new(dl_tensor, flags, delete_export::<M>),
        shape,
        strides,
        _storage: storage,
    }));
    LIVE_EXPORTS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: just made; the context points to the export itself.
    unsafe { (*p).managed.set_context(p.cast()) };
    // SAFETY: a valid pointer and a static name; the capsule owns the export from here.
    let cap = unsafe { ffi::PyCapsule_New(p.cast(), M::NAME.as_ptr(), Some(destroy_capsule::<M>)) };
    if cap.is_null() {
        // SAFETY: the capsule was not made, so the export is still ours to free.
        unsafe { delete_export::<M>(p.cast()) };
    }
    // SAFETY: a new reference, or null with the error set.
    unsafe { Bound::from_owned_ptr_or_err(py, cap) }
}

/// Makes the consumer's `stream` (a raw `CUstream`; 1 is the legacy default stream) wait
/// for the work queued so far on this thread's current stream of `device`, which may
/// still be writing the exported memory.
fn consumer_waits(device: u32, stream: i64) -> PyResult<()> {
    use crate::backend::cuda::driver::{Event, current_stream};
    use cudarc::driver::{result, sys};
    let ours = current_stream(device)?;
    let theirs = stream as usize as sys::CUstream;
    if ours.raw == theirs {
        return Ok(());
    }
    let done = Event::new(device, false, false)?;
    done.record(&ours)?;
    // SAFETY: a live event of the bound context and the consumer's stream handle, which
    // DLPack requires to be valid on this device.
    unsafe {
        result::stream::wait_event(
            theirs,
            done.raw,
            sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
        )
    }
    .map_err(|e| PyErr::from(crate::backend::cuda::driver::cuda_error(e)))
}

#[pymethods]
impl PyTensor {
    /// Creates a DLPack capsule of the tensor's memory (shared, not copied), for another
    /// library's `from_dlpack`.
    ///
    /// Args:
    ///     stream: The consumer's stream (an int), for a CUDA tensor; on the CPU it must be
    ///         None or -1.
    ///     max_version: The highest DLPack version (major, minor) the consumer reads; the
    ///         versioned capsule when it is (1, 0) or higher, else the legacy one.
    ///     dl_device: The DLPack device to export to; only the tensor's own.
    ///     copy: True exports a copy; False or None share the memory.
    ///     read_only: Marks the export read-only (versioned capsules only).
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None, read_only=false))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<(i64, i64)>,
        dl_device: Option<(i64, i64)>,
        copy: Option<bool>,
        read_only: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let t = &self.t;
        if t.requires_grad() {
            return Err(PyBufferError::new_err(
                "Can't export tensors that require gradient, use tensor.detach()",
            ));
        }
        let stream = match stream {
            Some(s) if !s.is_none() => {
                if !s.is_exact_instance_of::<pyo3::types::PyInt>() {
                    return Err(PyTypeError::new_err("stream must be ``int`` or ``none``"));
                }
                Some(s.extract::<i64>()?)
            }
            _ => None,
        };
        let own = dl_device_of(t);
        if own.device_type == KDL_CPU && stream.is_some_and(|s| s != -1) {
            return Err(PyAssertionError::new_err("stream should be None on cpu."));
        }
        if own.device_type == KDL_CUDA {
            if own.device_id as u32 != crate::backend::cuda::driver::current_device() {
                return Err(PyBufferError::new_err(format!(
                    "Can't export tensors on a different CUDA device index. Expected: {}. Current device: {}.",
                    own.device_id,
                    crate::backend::cuda::driver::current_device()
                )));
            }
            // DLPack's stream values: None or 1 the legacy default stream, 2 the
            // per-thread one (refused, as torch does), -1 no synchronization, 0 invalid.
            match stream {
                Some(-1) => {}
                Some(0) => {
                    return Err(PyAssertionError::new_err("unsupported stream on CUDA: 0."));
                }
                Some(2) => {
                    return Err(PyBufferError::new_err(
                        "per-thread default stream is not supported.",
                    ));
                }
                s => consumer_waits(own.device_id as u32, s.unwrap_or(1))?,
            }
        }
        if let Some((ty, id)) = dl_device
            && (ty != i64::from(own.device_type) || id != i64::from(own.device_id))
        {
            return Err(PyBufferError::new_err(format!(
                "rgrad: can't export a tensor on {} to DLPack device ({ty}, {id}); \
                 move it there first (tensor.to(...))",
                t.device()
            )));
        }
        let versioned = max_version.is_some_and(|(major, _)| major >= 1);
        if read_only && !versioned {
            return Err(PyBufferError::new_err(
                "read_only export requires the versioned DLPack protocol; pass max_version=(1, 0) or higher",
            ));
        }
        export(py, t, versioned, copy == Some(true), read_only)
    }

    /// The DLPack device of the tensor: `(DLDeviceType.kDLCPU, 0)` on the CPU,
    /// `(DLDeviceType.kDLCUDA, index)` on a GPU.
    fn __dlpack_device__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let d = dl_device_of(&self.t);
        let kind = py
            .import("rgrad.utils.dlpack")?
            .getattr("DLDeviceType")?
            .call1((d.device_type,))?;
        PyTuple::new(py, [kind, d.device_id.into_pyobject(py)?.into_any()])
    }
}

/// The legacy capsule of `t`, for `rgrad.utils.dlpack.to_dlpack` (torch's `_C._to_dlpack`).
#[pyfunction]
fn _to_dlpack<'py>(py: Python<'py>, t: &PyTensor) -> PyResult<Bound<'py, PyAny>> {
    if t.t.requires_grad() {
        return Err(PyBufferError::new_err(
            "Can't export tensors that require gradient, use tensor.detach()",
        ));
    }
    export(py, &t.t, false, false, false)
}

// ---- DLPack import --------------------------------------------------------------------

/// A producer's managed tensor, taken from its capsule: dropping it calls its deleter.
struct Taken<M: Managed>(*mut M);

// SAFETY: DLPack requires a deleter that may be called from any thread; the pointer is
// used for nothing else.
unsafe impl<M: Managed> Send for Taken<M> {}
// SAFETY: as above; shared references never touch the pointer.
unsafe impl<M: Managed> Sync for Taken<M> {}

impl<M: Managed> Drop for Taken<M> {
    fn drop(&mut self) {
        // SAFETY: the producer's managed tensor, taken once from its capsule (renamed so
        // that nobody else frees it); its deleter is called once, here.
        unsafe {
            if let Some(d) = (*self.0).deleter() {
                d(self.0);
            }
        }
        LIVE_IMPORTS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Reads a producer's `DLTensor` into what `lent_tensor` needs, refusing what rgrad
/// cannot share.
///
/// # Safety
/// `t` must be a valid `DLTensor` (shape and strides arrays of `ndim` entries).
unsafe fn read_dl_tensor(t: &DLTensor) -> PyResult<(Place, DType, *mut u8, Shape, Shape)> {
    let place = match t.device.device_type {
        KDL_CPU | KDL_CUDA_HOST => Place::Host,
        KDL_CUDA => Place::Cuda(u32::try_from(t.device.device_id).map_err(|_| {
            PyBufferError::new_err("rgrad.from_dlpack: negative CUDA device index")
        })?),
        other => {
            return Err(PyBufferError::new_err(format!(
                "rgrad.from_dlpack: unsupported DLPack device type {other}"
            )));
        }
    };
    let dtype = from_dl_dtype(t.dtype)?;
    let ndim = usize::try_from(t.ndim)
        .map_err(|_| PyBufferError::new_err("rgrad.from_dlpack: negative ndim"))?;
    let dims: &[i64] = if ndim == 0 {
        &[]
    } else {
        // SAFETY: the caller's promise: `shape` holds `ndim` entries.
        unsafe { std::slice::from_raw_parts(t.shape, ndim) }
    };
    let mut shape = Shape::with_capacity(ndim);
    for &n in dims {
        shape.push(
            usize::try_from(n)
                .map_err(|_| PyBufferError::new_err("rgrad.from_dlpack: negative size"))?,
        );
    }
    let strides: Shape = if t.strides.is_null() || ndim == 0 {
        crate::shape::contiguous_strides(&shape)
    } else {
        // SAFETY: as above, for `strides`.
        let s = unsafe { std::slice::from_raw_parts(t.strides, ndim) };
        let mut out = Shape::with_capacity(ndim);
        for (&v, &n) in s.iter().zip(&shape) {
            // (a stride of a dimension of size 1 or 0 is never used: torch takes any)
            out.push(match usize::try_from(v) {
                Ok(v) => v,
                Err(_) if n <= 1 => 0,
                Err(_) => {
                    return Err(PyBufferError::new_err(
                        "rgrad.from_dlpack: negative strides are not supported",
                    ));
                }
            });
        }
        out
    };
    let empty = shape.contains(&0);
    let ptr = if t.data.is_null() {
        if !empty {
            return Err(PyBufferError::new_err(
                "rgrad.from_dlpack: null data pointer",
            ));
        }
        dangling(dtype)
    } else {
        t.data.cast::<u8>().wrapping_add(t.byte_offset as usize)
    };
    let ptr = if empty && ptr.addr() % dtype.size_in_bytes() != 0 {
        dangling(dtype)
    } else {
        ptr
    };
    if ptr.addr() % dtype.size_in_bytes() != 0 {
        return Err(PyBufferError::new_err(format!(
            "rgrad.from_dlpack: the data is not aligned to its {}-byte elements",
            dtype.size_in_bytes()
        )));
    }
    Ok((place, dtype, ptr, shape, strides))
}

const INVALID_CAPSULE: &str = "from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed only once, so you might have already constructed a tensor from it once.";

/// A tensor on the memory of a DLPack capsule (consuming it: the capsule is renamed
/// `used_dltensor[_versioned]` and the tensor's storage calls the producer's deleter).
#[pyfunction]
fn _from_dlpack(py: Python<'_>, capsule: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
    let raw = capsule.as_ptr();
    // SAFETY: `raw` is a live object; `PyCapsule_IsValid` only reads it.
    unsafe {
        if ffi::PyCapsule_IsValid(raw, DLManagedTensorVersioned::NAME.as_ptr()) == 1 {
            take::<DLManagedTensorVersioned>(py, raw)
        } else if ffi::PyCapsule_IsValid(raw, DLManagedTensor::NAME.as_ptr()) == 1 {
            take::<DLManagedTensor>(py, raw)
        } else {
            Err(PyRuntimeError::new_err(INVALID_CAPSULE))
        }
    }
}

/// Takes the managed tensor of kind `M` out of the capsule `raw` (renamed, so that its
/// destructor leaves it to us), as a tensor whose storage calls the producer's deleter.
/// Nothing is taken when the tensor is refused.
///
/// # Safety
/// `raw` must be a valid capsule of kind `M`, holding a managed tensor as DLPack defines.
unsafe fn take<M: Managed>(py: Python<'_>, raw: *mut ffi::PyObject) -> PyResult<Py<PyTensor>> {
    // SAFETY: the caller's promise; the pointer read from the capsule is its producer's.
    unsafe {
        let p = ffi::PyCapsule_GetPointer(raw, M::NAME.as_ptr()).cast::<M>();
        if p.is_null() {
            return Err(PyErr::fetch(py));
        }
        if let Some(v) = (*p).version()
            && v.major != VERSION.major
        {
            return Err(PyBufferError::new_err(format!(
                "rgrad.from_dlpack: DLPack version {}.{} is not supported (rgrad reads 1.x)",
                v.major, v.minor
            )));
        }
        let (place, dtype, ptr, shape, strides) = read_dl_tensor((*p).dl_tensor())?;
        if ffi::PyCapsule_SetName(raw, M::USED.as_ptr()) != 0 {
            return Err(PyErr::fetch(py));
        }
        LIVE_IMPORTS.fetch_add(1, Ordering::Relaxed);
        let t = lent_tensor(place, dtype, ptr, shape, strides, Box::new(Taken(p)))?;
        wrap(py, t)
    }
}

/// `(exports not yet released, imports not yet released)`, for the leak tests.
#[pyfunction]
fn _dlpack_live() -> (i64, i64) {
    (
        LIVE_EXPORTS.load(Ordering::Relaxed),
        LIVE_IMPORTS.load(Ordering::Relaxed),
    )
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<HostMemory>()?;
    m.add_function(wrap_pyfunction!(_share_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(_host_memory, m)?)?;
    m.add_function(wrap_pyfunction!(_to_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(_from_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(_dlpack_live, m)?)?;
    Ok(())
}
