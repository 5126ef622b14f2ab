//! The caching allocator, as torch's: device memory is never handed back to the driver
//! when a tensor dies; the block goes to a free list keyed by the stream it was used on
//! and its size, and the next request of that stream and about that size takes it
//! without a driver call (`cuMemAlloc` synchronizes the device; reuse does not). Work
//! on one stream runs in order, so a block freed by that stream's last kernel can be
//! handed out at once to the stream's next one. Sizes are rounded up to 512 bytes; a
//! free block serves a request when it is at most a quarter (small sizes: 2×) bigger.
//! When the driver is out of memory the cache is freed and the request tried once more;
//! then `OutOfMemory` with torch's message.
//!
//! Not yet: splitting one driver segment into blocks (torch's 2 MiB / 20 MiB segments)
//! and cross-stream use (`record_stream`), which the stream-capture issue needs.

use super::driver::{OrCuda, cuda_error, device};
use crate::{Error, Result};
use cudarc::driver::{result, sys};
use parking_lot::Mutex;
use std::collections::BTreeMap;

/// Sizes are multiples of this.
const ROUND: usize = 512;
/// Up to this size a free block twice as big may serve a request.
const SMALL: usize = 1 << 20;

/// One allocation from the driver, owned by a tensor's buffer; dropping it gives it back
/// to the cache.
pub struct Block {
    pub ptr: sys::CUdeviceptr,
    /// Rounded size (what the block holds).
    pub size: usize,
    /// What was asked for (the allocated-bytes statistics count this, as torch's).
    pub requested: usize,
    pub device: u32,
    /// The stream the block was allocated for (reused only there).
    pub stream: usize,
    /// Memory another library lends (DLPack): not the allocator's; dropping the block
    /// drops the lender, which gives the memory back to its owner.
    pub lender: Option<Box<dyn crate::storage::Lender>>,
}

impl Block {
    /// A block over `size` bytes of device memory at `ptr` on `device` that another
    /// library lends (see `lender`); the allocator's statistics do not count it.
    pub fn lent(
        ptr: sys::CUdeviceptr,
        size: usize,
        device: u32,
        lender: Box<dyn crate::storage::Lender>,
    ) -> Block {
        Block {
            ptr,
            size,
            requested: size,
            device,
            stream: 0,
            lender: Some(lender),
        }
    }
}

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Block(cuda:{}, {:#x}, {} bytes)",
            self.device, self.ptr, self.size
        )
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        if self.lender.take().is_some() {
            return; // (the lender, dropped, gave the memory back)
        }
        if let Ok(d) = device(self.device) {
            d.alloc
                .release(self.ptr, self.size, self.requested, self.stream);
        }
    }
}

/// torch's memory statistics (`torch.cuda.memory_stats`' "all" pool).
#[derive(Clone, Copy, Debug, Default)]
pub struct Stats {
    pub allocated: usize,
    pub allocated_peak: usize,
    pub allocated_total: usize,
    pub freed_total: usize,
    pub reserved: usize,
    pub reserved_peak: usize,
    pub active_blocks: usize,
    pub segments: usize,
    pub num_alloc_retries: usize,
    pub num_ooms: usize,
    pub num_device_alloc: usize,
    pub num_device_free: usize,
}

#[derive(Default)]
struct Inner {
    /// Free blocks: (stream, size, ptr).
    free: BTreeMap<(usize, usize, sys::CUdeviceptr), ()>,
    stats: Stats,
}

pub struct Allocator {
    device: u32,
    inner: Mutex<Inner>,
}

impl Allocator {
    pub fn new(device: u32) -> Allocator {
        Allocator {
            device,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// A block of at least `bytes` for work on `stream` (a raw stream handle).
    pub fn allocate(&self, bytes: usize, stream: sys::CUstream) -> Result<Block> {
        let stream = stream as usize;
        let size = bytes.max(1).div_ceil(ROUND) * ROUND;
        let limit = if size <= SMALL {
            size * 2
        } else {
            size + size / 4
        };
        {
            let mut g = self.inner.lock();
            let hit = g
                .free
                .range((stream, size, 0)..(stream, limit + 1, 0))
                .next()
                .map(|(k, _)| *k);
            if let Some(k) = hit {
                g.free.remove(&k);
                g.stats.note_alloc(bytes);
                return Ok(self.block(k.2, k.1, bytes, stream));
            }
        }
        let d = device(self.device)?;
        d.bind()?;
        // SAFETY: a plain device allocation on the bound context.
        let ptr = match unsafe { result::malloc_sync(size) } {
            Ok(p) => p,
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                self.inner.lock().stats.num_alloc_retries += 1;
                self.empty_cache()?;
                match unsafe { result::malloc_sync(size) } {
                    Ok(p) => p,
                    Err(e) if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                        self.inner.lock().stats.num_ooms += 1;
                        return Err(self.oom(bytes));
                    }
                    Err(e) => return Err(cuda_error(e)),
                }
            }
            Err(e) => return Err(cuda_error(e)),
        };
        let mut g = self.inner.lock();
        g.stats.reserved += size;
        g.stats.reserved_peak = g.stats.reserved_peak.max(g.stats.reserved);
        g.stats.segments += 1;
        g.stats.num_device_alloc += 1;
        g.stats.note_alloc(bytes);
        Ok(self.block(ptr, size, bytes, stream))
    }

    fn block(&self, ptr: sys::CUdeviceptr, size: usize, requested: usize, stream: usize) -> Block {
        Block {
            ptr,
            size,
            requested,
            device: self.device,
            stream,
            lender: None,
        }
    }

    fn release(&self, ptr: sys::CUdeviceptr, size: usize, requested: usize, stream: usize) {
        let mut g = self.inner.lock();
        g.stats.allocated -= requested;
        g.stats.freed_total += requested;
        g.stats.active_blocks -= 1;
        g.free.insert((stream, size, ptr), ());
    }

    /// Gives every cached (free) block back to the driver (torch.cuda.empty_cache).
    pub fn empty_cache(&self) -> Result<()> {
        let d = device(self.device)?;
        d.bind()?;
        // The blocks' last users may still be running.
        result::ctx::synchronize().or_cuda()?;
        let mut g = self.inner.lock();
        let free = std::mem::take(&mut g.free);
        for (_, size, ptr) in free.into_keys() {
            // SAFETY: a free block is referenced by no buffer.
            unsafe { result::free_sync(ptr) }.or_cuda()?;
            g.stats.reserved -= size;
            g.stats.segments -= 1;
            g.stats.num_device_free += 1;
        }
        Ok(())
    }

    pub fn stats(&self) -> Stats {
        self.inner.lock().stats
    }

    /// Peak statistics start again from the current values.
    pub fn reset_peak(&self) {
        let mut g = self.inner.lock();
        g.stats.allocated_peak = g.stats.allocated;
        g.stats.reserved_peak = g.stats.reserved;
    }

    fn oom(&self, bytes: usize) -> Error {
        let s = self.stats();
        let (free, total) = device(self.device)
            .and_then(|d| {
                d.bind()?;
                result::mem_get_info().or_cuda()
            })
            .unwrap_or((0, 0));
        let in_use = total.saturating_sub(free);
        // (torch's text, naming rgrad where it names PyTorch; its PYTORCH_CUDA_ALLOC_CONF
        // advice does not apply here)
        Error::OutOfMemory(format!(
            "CUDA out of memory. Tried to allocate {}. GPU {} has a total capacity of {} of which {} is free. \
             Including non-rgrad memory, this process has {} memory in use. Of the allocated memory {} is \
             allocated by rgrad, and {} is reserved by rgrad but unallocated.",
            format_size(bytes),
            self.device,
            format_size(total),
            format_size(free),
            format_size(in_use),
            format_size(s.allocated),
            format_size(s.reserved - s.allocated),
        ))
    }
}

impl Stats {
    fn note_alloc(&mut self, bytes: usize) {
        self.allocated += bytes;
        self.allocated_total += bytes;
        self.allocated_peak = self.allocated_peak.max(self.allocated);
        self.active_blocks += 1;
    }
}

/// torch's `format_size` (the OOM message's sizes).
pub fn format_size(bytes: usize) -> String {
    let b = bytes as f64;
    if bytes <= 1024 {
        format!("{bytes} bytes")
    } else if bytes <= 1048576 {
        format!("{:.2} KiB", b / 1024.0)
    } else if bytes <= 1073741824 {
        format!("{:.2} MiB", b / 1048576.0)
    } else {
        format!("{:.2} GiB", b / 1073741824.0)
    }
}

#[cfg(test)]
mod tests {
    use super::format_size;

    #[test]
    fn sizes_print_as_torchs_oom_message_prints_them() {
        assert_eq!(format_size(512), "512 bytes");
        assert_eq!(format_size(1048576), "1024.00 KiB");
        assert_eq!(format_size(3 << 20), "3.00 MiB");
        assert_eq!(format_size(5 << 30), "5.00 GiB");
    }
}
