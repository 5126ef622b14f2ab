//! Typed buffers and the shared storage that tensors and their views point into.

mod host_vec;

pub use host_vec::{HostVec, Lender};

use crate::dtype::DType;
use parking_lot::RwLock;
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// A contiguous, typed buffer: host memory of one of four element types, or device
/// memory (`Cuda`, any dtype). Kernels take a buffer plus a `Layout` and never see the
/// graph; `backend::backend_of` picks the kernels of the buffer's device.
#[derive(Debug)]
pub enum Buffer {
    Bool(HostVec<bool>),
    I64(HostVec<i64>),
    F32(HostVec<f32>),
    F64(HostVec<f64>),
    /// (boxed: a host buffer stays three words, the size every op moves around)
    Cuda(Box<crate::backend::cuda::CudaBuf>),
}

// Every op moves buffers around: a host one is three words and a tag; and makes a
// storage, which fits a cache line.
const _: () = assert!(std::mem::size_of::<Buffer>() == 32);
const _: () = assert!(std::mem::size_of::<Storage>() == 64);

/// A copy (a device buffer: a device-to-device copy on the current stream).
impl Clone for Buffer {
    fn clone(&self) -> Self {
        match self {
            Buffer::Bool(v) => Buffer::Bool(v.clone()),
            Buffer::I64(v) => Buffer::I64(v.clone()),
            Buffer::F32(v) => Buffer::F32(v.clone()),
            Buffer::F64(v) => Buffer::F64(v.clone()),
            Buffer::Cuda(c) => match crate::backend::cuda::backend::upload(self, c.device()) {
                Ok(b) => b,
                // Only the CPU kernels clone buffers (their own host ones); the op layer
                // copies device buffers through the backend, which reports failures.
                #[allow(clippy::panic)]
                Err(e) => panic!("rgrad: copying a CUDA buffer failed: {e}"),
            },
        }
    }
}

impl Buffer {
    /// Where the buffer's memory is.
    pub fn device(&self) -> crate::device::Device {
        match self {
            Buffer::Cuda(c) => crate::device::Device::Cuda(c.device()),
            _ => crate::device::Device::Cpu,
        }
    }
    pub fn dtype(&self) -> DType {
        match self {
            Buffer::Bool(_) => DType::Bool,
            Buffer::I64(_) => DType::I64,
            Buffer::F32(_) => DType::F32,
            Buffer::F64(_) => DType::F64,
            Buffer::Cuda(c) => c.dtype,
        }
    }
    pub fn len(&self) -> usize {
        match self {
            Buffer::Bool(v) => v.len(),
            Buffer::I64(v) => v.len(),
            Buffer::F32(v) => v.len(),
            Buffer::F64(v) => v.len(),
            Buffer::Cuda(c) => c.len,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn zeros(dtype: DType, n: usize) -> Buffer {
        match dtype {
            DType::Bool => Buffer::Bool(vec![false; n].into()),
            DType::I64 => Buffer::I64(vec![0; n].into()),
            DType::F32 => Buffer::F32(vec![0.0; n].into()),
            DType::F64 => Buffer::F64(vec![0.0; n].into()),
        }
    }
    /// `n` copies of the number `v` in `dtype` (an int stays exact beyond 2**53).
    pub fn full(dtype: DType, n: usize, v: crate::dtype::Scalar) -> Buffer {
        use crate::dtype::Scalar;
        match (dtype, v) {
            (DType::Bool, Scalar::Bool(b)) => Buffer::Bool(vec![b; n].into()),
            (DType::Bool, Scalar::Int(i)) => Buffer::Bool(vec![i != 0; n].into()),
            (DType::I64, Scalar::Int(i)) => Buffer::I64(vec![i; n].into()),
            (DType::F32, Scalar::Int(i)) => Buffer::F32(vec![i as f32; n].into()),
            (_, v) => {
                let v = v.as_f64();
                match dtype {
                    DType::Bool => Buffer::Bool(vec![v != 0.0; n].into()),
                    DType::I64 => Buffer::I64(vec![v as i64; n].into()),
                    DType::F32 => Buffer::F32(vec![v as f32; n].into()),
                    DType::F64 => Buffer::F64(vec![v; n].into()),
                }
            }
        }
    }
}

/// Refuses, with torch's error type and message, a tensor of `sizes` whose byte count
/// overflows (torch's `computeStorageNbytesContiguous`: sizes multiplied left to right,
/// then by the item size, must fit an `i64`) or that the machine cannot provide, instead
/// of letting the allocator abort the process. Sizes a user controls (factories,
/// broadcasting, repeat, cat, matmul, indexing) pass through here before any kernel runs.
pub fn alloc_guard(sizes: &[usize], dtype: DType) -> crate::Result<()> {
    alloc_check(sizes, dtype, "")
}

/// [`alloc_guard`] for a tensor made like another (`clone`, `*_like`): torch allocates it
/// with explicit strides and names them in the message.
pub fn alloc_guard_strided(sizes: &[usize], dtype: DType) -> crate::Result<()> {
    alloc_check(
        sizes,
        dtype,
        &format!(
            " and strides={}",
            crate::shape::fmt_shape(&crate::shape::contiguous_strides(sizes))
        ),
    )
}

fn alloc_check(sizes: &[usize], dtype: DType, strides: &str) -> crate::Result<()> {
    let Some(bytes) = crate::shape::checked_product(sizes)
        .and_then(|n| n.checked_mul(dtype.size_in_bytes()))
        .filter(|&b| i64::try_from(b).is_ok())
    else {
        return Err(crate::Error::runtime(format!(
            "Storage size calculation overflowed with sizes={}{strides}",
            crate::shape::fmt_shape(sizes)
        )));
    };
    let ok = match bytes {
        b if b < (1 << 30) => true,
        // (device memory: the caching allocator reports what the device cannot hold)
        _ if crate::device::default_device() != crate::device::Device::Cpu => true,
        // Large requests: more than the machine's memory and swap can never be backed
        // (an allocator that reserves address space lazily would say yes and the process
        // would be killed on first touch); elsewhere ask the allocator once.
        b => match memory_limit() {
            Some(limit) => (b as u64) <= limit,
            None => Vec::<u8>::new().try_reserve_exact(b).is_ok(),
        },
    };
    if ok {
        Ok(())
    } else {
        Err(crate::Error::runtime(format!(
            "[enforce fail at alloc_cpu.cpp] DefaultCPUAllocator: can't allocate memory: you tried to allocate {bytes} bytes."
        )))
    }
}

/// Whether `bytes` could ever be backed by this machine's memory and swap (true where
/// that is unknown).
pub fn fits_in_memory(bytes: usize) -> bool {
    memory_limit().is_none_or(|limit| bytes as u64 <= limit)
}

/// RAM plus swap in bytes (Linux: /proc/meminfo), read once.
fn memory_limit() -> Option<u64> {
    static LIMIT: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        let info = std::fs::read_to_string("/proc/meminfo").ok()?;
        let field = |name: &str| -> Option<u64> {
            let line = info.lines().find(|l| l.starts_with(name))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        };
        Some((field("MemTotal:")? + field("SwapTotal:").unwrap_or(0)).saturating_mul(1024))
    })
}

/// Element types, for kernels written once and instantiated per dtype.
pub trait Element: Copy + Send + Sync + PartialOrd + Default + std::fmt::Debug + 'static {
    const DTYPE: DType;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    fn slice(buf: &Buffer) -> &[Self];
    fn slice_mut(buf: &mut Buffer) -> &mut [Self];
    fn into_buffer(v: Vec<Self>) -> Buffer;
}

macro_rules! element {
    ($t:ty, $variant:ident, $from:expr, $to:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$variant;
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                ($from)(v)
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                ($to)(self)
            }
            fn slice(buf: &Buffer) -> &[Self] {
                match buf {
                    Buffer::$variant(v) => v,
                    // Callers dispatch on the buffer's dtype before instantiating a kernel.
                    _ => unreachable_dtype(buf.dtype(), DType::$variant),
                }
            }
            fn slice_mut(buf: &mut Buffer) -> &mut [Self] {
                let d = buf.dtype();
                match buf {
                    Buffer::$variant(v) => v,
                    _ => unreachable_dtype(d, DType::$variant),
                }
            }
            fn into_buffer(v: Vec<Self>) -> Buffer {
                Buffer::$variant(v.into())
            }
        }
    };
}

/// A CPU kernel handed a device buffer: `backend_of` sends device buffers to their own
/// backend, so this is a broken invariant, not a user error.
#[cold]
#[allow(clippy::panic)]
pub fn not_host() -> ! {
    panic!("rgrad internal error: a CPU kernel was given a CUDA buffer")
}

#[cold]
#[allow(clippy::panic)]
fn unreachable_dtype(got: DType, want: DType) -> ! {
    // Invariant: every kernel is instantiated through `with_dtype!` on the buffer's own dtype.
    panic!(
        "rgrad internal error: kernel for {} called on a {} buffer",
        want.name(),
        got.name()
    )
}

element!(f32, F32, |v: f64| v as f32, |x: f32| f64::from(x));
element!(f64, F64, |v: f64| v, |x: f64| x);
element!(i64, I64, |v: f64| v as i64, |x: i64| x as f64);
element!(bool, Bool, |v: f64| v != 0.0, |x: bool| f64::from(
    u8::from(x)
));

/// Runs `$body` with `$T` bound to the Rust element type of `$dtype`.
#[macro_export]
macro_rules! with_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::dtype::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::dtype::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::dtype::DType::Bool => {
                type $T = bool;
                $body
            }
        }
    };
}

/// Shared storage: the buffer every view of a tensor points into, and the version
/// counter that the tensors on it share unless `.data` split them off (see
/// `tensor::Version`): one allocation for both, instead of one each per tensor.
///
/// The buffer sits behind a `RwLock` so that safe Rust can never observe a torn write:
/// kernels hold a read lock while they read inputs, in-place ops take the write lock only
/// to store a finished result (see `ops::inplace`), so one op never holds two locks of
/// the same storage and no lock is ever held while Python runs.
#[derive(Debug)]
pub struct Storage {
    buf: RwLock<Buffer>,
    /// The buffer's device (fixed: a storage's buffer is only ever replaced by one on the
    /// same device), read without the lock; one byte, so a storage stays 64 bytes.
    device: crate::device::DeviceCode,
    version: AtomicU64,
    /// Set when a tensor on this storage is given another one (`x.data = y`): it keeps
    /// its version counter, which its old views and aliases here must go on sharing, so
    /// the counter moves out to where both can reach it. Null until then; once set, it
    /// holds one strong count of an `Arc<AtomicU64>` (released in `drop`) and never
    /// changes. (A pointer rather than a `OnceLock<Arc<_>>`: one word less, so that a
    /// storage stays within a cache line.)
    moved_version: AtomicPtr<AtomicU64>,
}

impl Buffer {
    /// The address of a host buffer's first element (`None` for a device buffer), for
    /// sharing the memory with another library (see [`HostVec::data_ptr`]).
    pub fn host_ptr(&self) -> Option<*mut u8> {
        match self {
            Buffer::Bool(v) => Some(v.data_ptr().cast()),
            Buffer::I64(v) => Some(v.data_ptr().cast()),
            Buffer::F32(v) => Some(v.data_ptr().cast()),
            Buffer::F64(v) => Some(v.data_ptr().cast()),
            Buffer::Cuda(_) => None,
        }
    }
    /// Whether the memory is lent by another library (see [`HostVec`]).
    pub fn is_lent(&self) -> bool {
        match self {
            Buffer::Bool(v) => v.is_lent(),
            Buffer::I64(v) => v.is_lent(),
            Buffer::F32(v) => v.is_lent(),
            Buffer::F64(v) => v.is_lent(),
            Buffer::Cuda(_) => false,
        }
    }
    /// The buffer's size in bytes.
    pub fn nbytes(&self) -> usize {
        match self {
            Buffer::Bool(v) => v.len(),
            Buffer::I64(v) => v.len() * 8,
            Buffer::F32(v) => v.len() * 4,
            Buffer::F64(v) => v.len() * 8,
            Buffer::Cuda(c) => c.nbytes(),
        }
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        let buf = self.buf.get_mut();
        if !buf.is_lent() {
            crate::profiler::memory(-(buf.nbytes() as i64));
        }
        let p = *self.moved_version.get_mut();
        if !p.is_null() {
            // SAFETY: a non-null pointer is the strong count this storage took in
            // `version_moved_out` (`Arc::into_raw`), released once, here.
            drop(unsafe { Arc::from_raw(p) });
        }
    }
}

impl Storage {
    pub fn new(buf: Buffer) -> Self {
        // (the profiler counts what rgrad allocates, not memory another library lends)
        if !buf.is_lent() {
            crate::profiler::memory(buf.nbytes() as i64);
        }
        Storage {
            device: buf.device().into(),
            buf: RwLock::new(buf),
            version: AtomicU64::new(0),
            moved_version: AtomicPtr::new(std::ptr::null_mut()),
        }
    }
    /// The version counter of the tensors that use this storage's own.
    pub(crate) fn version(&self) -> &AtomicU64 {
        let p = self.moved_version.load(Ordering::Acquire);
        if p.is_null() {
            &self.version
        } else {
            // SAFETY: once set the pointer never changes and the storage holds a strong
            // count until it drops, so the counter outlives `&self`.
            unsafe { &*p }
        }
    }
    /// The same counter, moved out to the heap (see `moved_version`) for a tensor
    /// leaving this storage.
    pub(crate) fn version_moved_out(&self) -> Arc<AtomicU64> {
        let mut p = self.moved_version.load(Ordering::Acquire);
        if p.is_null() {
            let fresh = Arc::into_raw(Arc::new(AtomicU64::new(
                self.version.load(Ordering::Acquire),
            ))) as *mut AtomicU64;
            match self.moved_version.compare_exchange(
                std::ptr::null_mut(),
                fresh,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => p = fresh,
                Err(won) => {
                    // another thread moved it out first: ours was never shared
                    // SAFETY: `fresh` came from `Arc::into_raw` just above.
                    drop(unsafe { Arc::from_raw(fresh) });
                    p = won;
                }
            }
        }
        // SAFETY: `p` is the storage's counter (see `moved_version`), alive while `self`
        // is; the new count is the caller's.
        unsafe {
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
        }
    }
    /// Shared access. A wait for a writer goes through the runtime's blocking hook, so a
    /// Python thread lets go of the GIL while it waits (the writer may need the GIL
    /// before it can finish).
    pub fn read(&self) -> parking_lot::RwLockReadGuard<'_, Buffer> {
        match self.buf.try_read_recursive() {
            Some(g) => g,
            None => crate::runtime::blocking(|| self.buf.read_recursive()),
        }
    }
    /// Exclusive access (waits through the blocking hook, as `read`).
    pub fn write(&self) -> parking_lot::RwLockWriteGuard<'_, Buffer> {
        match self.buf.try_write() {
            Some(g) => g,
            None => crate::runtime::blocking(|| self.buf.write()),
        }
    }
    /// `src` shared and `dst` exclusive, two distinct storages locked together in address
    /// order, so that two threads doing `a op= b` and `b op= a` cannot wait on each other
    /// (every op that holds two storage locks takes them this way).
    pub fn read_and_write<'a>(
        src: &'a Storage,
        dst: &'a Storage,
    ) -> (
        parking_lot::RwLockReadGuard<'a, Buffer>,
        parking_lot::RwLockWriteGuard<'a, Buffer>,
    ) {
        if std::ptr::from_ref(src) < std::ptr::from_ref(dst) {
            let r = src.read();
            (r, dst.write())
        } else {
            let w = dst.write();
            (src.read(), w)
        }
    }
    /// `a` and `b` shared (one storage or two) and `dst` exclusive (distinct from both),
    /// all locked in address order as [`read_and_write`](Self::read_and_write) does.
    /// `b`'s guard is `None` when it is `a`'s storage.
    #[allow(clippy::type_complexity)]
    pub fn read2_and_write<'a>(
        a: &'a Storage,
        b: &'a Storage,
        dst: &'a Storage,
    ) -> (
        parking_lot::RwLockReadGuard<'a, Buffer>,
        Option<parking_lot::RwLockReadGuard<'a, Buffer>>,
        parking_lot::RwLockWriteGuard<'a, Buffer>,
    ) {
        if std::ptr::eq(a, b) {
            let (r, w) = Self::read_and_write(a, dst);
            return (r, None, w);
        }
        let (lo, hi, swapped) = if std::ptr::from_ref(a) < std::ptr::from_ref(b) {
            (a, b, false)
        } else {
            (b, a, true)
        };
        let d = std::ptr::from_ref(dst);
        // the three in address order: dst before, between or after the two sources
        let (rl, rh, w) = if d < std::ptr::from_ref(lo) {
            let w = dst.write();
            (lo.read(), hi.read(), w)
        } else if d < std::ptr::from_ref(hi) {
            let rl = lo.read();
            let w = dst.write();
            (rl, hi.read(), w)
        } else {
            let (rl, rh) = (lo.read(), hi.read());
            (rl, rh, dst.write())
        };
        if swapped {
            (rh, Some(rl), w)
        } else {
            (rl, Some(rh), w)
        }
    }
    pub fn len(&self) -> usize {
        self.read().len()
    }
    /// The device the data lives on (the buffer's).
    pub fn device(&self) -> crate::device::Device {
        self.device.into()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads moving a storage's version counter out at once all get the one counter
    /// (a lost race frees its own; the storage keeps one count): 8 threads, 200 trials.
    #[test]
    fn version_moved_out_concurrently_is_one_counter() {
        for _ in 0..200 {
            let st = Arc::new(Storage::new(Buffer::zeros(DType::F32, 4)));
            st.version().fetch_add(3, Ordering::AcqRel);
            let barrier = Arc::new(std::sync::Barrier::new(8));
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    let (st, barrier) = (st.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        st.version_moved_out()
                    })
                })
                .collect();
            let got: Vec<Arc<AtomicU64>> = handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| panic!("thread panicked")))
                .collect();
            assert!(got.iter().all(|c| Arc::ptr_eq(c, &got[0])));
            assert_eq!(got[0].load(Ordering::Acquire), 3);
            // the storage's own view is that counter now
            got[0].fetch_add(1, Ordering::AcqRel);
            assert_eq!(st.version().load(Ordering::Acquire), 4);
            // 8 callers' counts plus the storage's
            assert_eq!(Arc::strong_count(&got[0]), 9);
            drop(st);
            assert_eq!(Arc::strong_count(&got[0]), 8);
        }
    }

    #[test]
    fn alloc_guard_refuses_overflowing_and_impossible_sizes_with_torchs_messages() {
        let e = alloc_guard(&[1 << 62], DType::F32).unwrap_err().to_string();
        assert_eq!(
            e,
            "Storage size calculation overflowed with sizes=[4611686018427387904]"
        );
        let e = alloc_guard_strided(&[1 << 62], DType::F32)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "Storage size calculation overflowed with sizes=[4611686018427387904] and strides=[1]"
        );
        // 2^61 float32 elements = 2^63 bytes: one past i64::MAX
        assert!(alloc_guard(&[1 << 61], DType::F32).is_err());
        assert!(alloc_guard(&[16, 16], DType::F64).is_ok());
        assert!(alloc_guard(&[1 << 20, 0], DType::F64).is_ok());
    }
}
