//! The CUDA driver, found at run time: whether there is one (never a panic where there is
//! not: cudarc aborts on a missing library unless asked first), the devices, one primary
//! context per device made current on whichever thread calls, streams and events.
//!
//! Every entry point that touches a device goes through [`device`], which initialises the
//! driver once and the device's state on first use, and [`Dev::bind`], which makes the
//! device's context current on the calling thread (backward workers are other threads).

#![allow(clippy::collapsible_if)] // (nested steps read clearer than let-chains here)

use crate::{Error, Result};
use cudarc::driver::{result, sys};
use parking_lot::Mutex;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// torch's message where no driver can be loaded.
pub const NO_DRIVER: &str = "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx";

/// The driver's error as torch words a CUDA error (`CUDA error: <text>`).
pub fn cuda_error(e: result::DriverError) -> Error {
    let text = e
        .error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{e:?}"));
    Error::runtime(format!("CUDA error: {text}"))
}

pub(crate) trait OrCuda<T> {
    fn or_cuda(self) -> Result<T>;
}
impl<T> OrCuda<T> for std::result::Result<T, result::DriverError> {
    fn or_cuda(self) -> Result<T> {
        self.map_err(cuda_error)
    }
}

/// The driver as found once per process: the device count, or why there is none.
struct Driver {
    count: usize,
    devices: Vec<OnceLock<std::result::Result<Arc<Dev>, String>>>,
}

fn driver() -> std::result::Result<&'static Driver, &'static str> {
    static DRIVER: OnceLock<std::result::Result<Driver, String>> = OnceLock::new();
    DRIVER
        .get_or_init(|| {
            // SAFETY: only tries to dlopen the driver library by its usual names.
            if !unsafe { sys::is_culib_present() } {
                return Err(NO_DRIVER.to_string());
            }
            result::init().map_err(|e| match e.0 {
                sys::CUresult::CUDA_ERROR_NO_DEVICE => "No CUDA GPUs are available".to_string(),
                _ => cuda_error(e).to_string(),
            })?;
            let count = result::device::get_count().map_err(|e| cuda_error(e).to_string())?;
            let count = usize::try_from(count).unwrap_or(0);
            Ok(Driver {
                count,
                devices: (0..count).map(|_| OnceLock::new()).collect(),
            })
        })
        .as_ref()
        .map_err(|s| s.as_str())
}

/// Whether a driver and at least one device are present (never panics, never raises).
pub fn is_available() -> bool {
    driver().is_ok_and(|d| d.count > 0)
}

/// The number of devices (0 without a driver).
pub fn device_count() -> usize {
    driver().map_or(0, |d| d.count)
}

/// torch's error for a device request that cannot be met: no driver, or an ordinal past
/// the last device.
fn unavailable(ordinal: u32) -> Error {
    match driver() {
        Err(why) => Error::runtime(why.to_string()),
        Ok(d) if d.count == 0 => Error::runtime("No CUDA GPUs are available".to_string()),
        Ok(d) => Error::runtime(format!(
            "CUDA error: invalid device ordinal (device {ordinal} requested, {} available)",
            d.count
        )),
    }
}

/// Fails with torch's error unless the CUDA runtime can be used (`torch.cuda._lazy_init`).
pub fn lazy_init() -> Result<()> {
    match driver() {
        Ok(d) if d.count > 0 => Ok(()),
        _ => Err(unavailable(0)),
    }
}

/// A device's state: its context, its default stream, the allocator's pools, compiled
/// kernels and cuBLAS handle.
pub struct Dev {
    pub ordinal: u32,
    pub cu_dev: sys::CUdevice,
    ctx: sys::CUcontext,
    pub name: String,
    pub capability: (i32, i32),
    pub total_memory: usize,
    pub multi_processor_count: i32,
    pub l2_cache_size: i32,
    pub uuid: String,
    /// The stream a thread uses until it sets another (torch's default stream).
    pub default_stream: Arc<Stream>,
    pub alloc: super::alloc::Allocator,
    pub kernels: super::launch::KernelCache,
    pub blas: Mutex<Option<super::blas::Handle>>,
}

// SAFETY: the raw handles are process-wide driver objects, usable from any thread once
// the context is current there (`bind`).
unsafe impl Send for Dev {}
unsafe impl Sync for Dev {}

thread_local! {
    /// The context current on this thread (as `ctx as usize`), to skip the driver call.
    static BOUND: Cell<usize> = const { Cell::new(0) };
}

impl Dev {
    /// Makes this device's context current on the calling thread.
    pub fn bind(&self) -> Result<()> {
        if BOUND.with(|b| b.get()) == self.ctx as usize {
            return Ok(());
        }
        // SAFETY: `ctx` is the retained primary context of this device.
        unsafe { result::ctx::set_current(self.ctx) }.or_cuda()?;
        BOUND.with(|b| b.set(self.ctx as usize));
        Ok(())
    }
    /// Waits for every stream of the device.
    pub fn synchronize(&self) -> Result<()> {
        self.bind()?;
        result::ctx::synchronize().or_cuda()
    }
}

/// The state of device `ordinal`, made on first use; torch's errors where there is none.
pub fn device(ordinal: u32) -> Result<Arc<Dev>> {
    let d = driver().map_err(|_| unavailable(ordinal))?;
    let slot = d
        .devices
        .get(ordinal as usize)
        .ok_or_else(|| unavailable(ordinal))?;
    slot.get_or_init(|| open(ordinal).map(Arc::new).map_err(|e| e.to_string()))
        .clone()
        .map_err(Error::runtime)
}

fn open(ordinal: u32) -> Result<Dev> {
    use sys::CUdevice_attribute as A;
    let cu_dev = result::device::get(ordinal as i32).or_cuda()?;
    // SAFETY: `cu_dev` came from the driver; the primary context is retained for the
    // process's life (never released: tensors may outlive any owner of it).
    let ctx = unsafe { result::primary_ctx::retain(cu_dev) }.or_cuda()?;
    unsafe { result::ctx::set_current(ctx) }.or_cuda()?;
    BOUND.with(|b| b.set(ctx as usize));
    let attr = |a: A| unsafe { result::device::get_attribute(cu_dev, a) }.or_cuda();
    let capability = (
        attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
        attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
    );
    let uuid = result::device::get_uuid(cu_dev)
        .map(|u| {
            let b: Vec<u8> = u.bytes.iter().map(|&c| c as u8).collect();
            let h = |r: std::ops::Range<usize>| {
                b[r].iter().map(|x| format!("{x:02x}")).collect::<String>()
            };
            format!(
                "{}-{}-{}-{}-{}",
                h(0..4),
                h(4..6),
                h(6..8),
                h(8..10),
                h(10..16)
            )
        })
        .unwrap_or_default();
    let default_stream = Arc::new(Stream::create(ordinal, 0)?);
    Ok(Dev {
        ordinal,
        cu_dev,
        ctx,
        name: result::device::get_name(cu_dev).or_cuda()?,
        capability,
        total_memory: unsafe { result::device::total_mem(cu_dev) }.or_cuda()?,
        multi_processor_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        l2_cache_size: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
        uuid,
        default_stream,
        alloc: super::alloc::Allocator::new(ordinal),
        kernels: super::launch::KernelCache::default(),
        blas: Mutex::new(None),
    })
}

/// A CUDA stream of one device. Kernels, copies and the allocator's reuse are ordered on
/// it; `id` names it to Python (torch's `stream_id`).
pub struct Stream {
    pub raw: sys::CUstream,
    pub device: u32,
    pub id: u64,
    pub priority: i32,
}

// SAFETY: a stream handle is usable from any thread with its context current.
unsafe impl Send for Stream {}
unsafe impl Sync for Stream {}

impl Stream {
    fn create(device: u32, priority: i32) -> Result<Stream> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let raw =
            result::stream::create_with_priority(result::stream::StreamKind::NonBlocking, priority)
                .or_cuda()?;
        Ok(Stream {
            raw,
            device,
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            priority,
        })
    }
    /// A new stream on `device` (torch.cuda.Stream()).
    pub fn new(device: u32, priority: i32) -> Result<Arc<Stream>> {
        let d = self::device(device)?;
        d.bind()?;
        Ok(Arc::new(Stream::create(device, priority)?))
    }
    pub fn synchronize(&self) -> Result<()> {
        self::device(self.device)?.bind()?;
        // SAFETY: a live stream of a bound context.
        unsafe { result::stream::synchronize(self.raw) }.or_cuda()
    }
    /// Whether every piece of work queued on the stream is done.
    pub fn query(&self) -> Result<bool> {
        self::device(self.device)?.bind()?;
        match unsafe { sys::cuStreamQuery(self.raw) } {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            e => Err(cuda_error(result::DriverError(e))),
        }
    }
    /// Makes later work on this stream wait for `event`.
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        self::device(self.device)?.bind()?;
        unsafe {
            result::stream::wait_event(
                self.raw,
                event.raw,
                sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
        }
        .or_cuda()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if let Ok(d) = device(self.device) {
            if d.bind().is_ok() {
                // SAFETY: the stream is ours and no longer referenced.
                let _ = unsafe { result::stream::destroy(self.raw) };
            }
        }
    }
}

thread_local! {
    /// This thread's current stream per device, where set (torch's is per thread too).
    static CURRENT: std::cell::RefCell<Vec<Option<Arc<Stream>>>> = const { std::cell::RefCell::new(Vec::new()) };
    /// This thread's current device (torch.cuda.set_device).
    static CURRENT_DEVICE: Cell<u32> = const { Cell::new(0) };
}

/// The calling thread's current stream on `device`.
pub fn current_stream(device: u32) -> Result<Arc<Stream>> {
    if let Some(s) = CURRENT.with(|c| c.borrow().get(device as usize).cloned().flatten()) {
        return Ok(s);
    }
    Ok(self::device(device)?.default_stream.clone())
}

/// Sets the calling thread's current stream on the stream's device (None: the default).
pub fn set_current_stream(device: u32, s: Option<Arc<Stream>>) {
    CURRENT.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() <= device as usize {
            c.resize(device as usize + 1, None);
        }
        c[device as usize] = s;
    });
}

pub fn current_device() -> u32 {
    CURRENT_DEVICE.with(|c| c.get())
}

pub fn set_current_device(device: u32) -> Result<()> {
    self::device(device)?.bind()?;
    CURRENT_DEVICE.with(|c| c.set(device));
    Ok(())
}

/// A CUDA event (torch.cuda.Event).
pub struct Event {
    pub raw: sys::CUevent,
    pub device: u32,
}

unsafe impl Send for Event {}
unsafe impl Sync for Event {}

impl Event {
    pub fn new(device: u32, enable_timing: bool, blocking: bool) -> Result<Event> {
        self::device(device)?.bind()?;
        let mut flags = sys::CUevent_flags::CU_EVENT_DEFAULT as u32;
        if !enable_timing {
            flags |= sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
        }
        if blocking {
            flags |= sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC as u32;
        }
        // SAFETY: the flags are a valid combination of CUevent_flags bits.
        let raw =
            result::event::create(unsafe { std::mem::transmute::<u32, sys::CUevent_flags>(flags) })
                .or_cuda()?;
        Ok(Event { raw, device })
    }
    pub fn record(&self, stream: &Stream) -> Result<()> {
        self::device(self.device)?.bind()?;
        unsafe { result::event::record(self.raw, stream.raw) }.or_cuda()
    }
    pub fn synchronize(&self) -> Result<()> {
        self::device(self.device)?.bind()?;
        unsafe { result::event::synchronize(self.raw) }.or_cuda()
    }
    pub fn query(&self) -> Result<bool> {
        self::device(self.device)?.bind()?;
        match unsafe { sys::cuEventQuery(self.raw) } {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            e => Err(cuda_error(result::DriverError(e))),
        }
    }
    /// Milliseconds from `self` to `end` (both recorded, with timing on).
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        self::device(self.device)?.bind()?;
        unsafe { result::event::elapsed(self.raw, end.raw) }.or_cuda()
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if let Ok(d) = device(self.device) {
            if d.bind().is_ok() {
                let _ = unsafe { result::event::destroy(self.raw) };
            }
        }
    }
}
