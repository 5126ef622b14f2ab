//! The CUDA backend: device buffers from a caching allocator, kernels compiled at run time
//! by NVRTC from the sources in `source`, products through cuBLAS, all enqueued on the
//! calling thread's current stream of the buffer's device and never waited for, except
//! where a value must reach the host (`to_host`).
//!
//! Nothing here links against CUDA: cudarc loads the driver, NVRTC and cuBLAS when first
//! asked, and `driver::is_available` answers false (never panics) where they are absent.

pub mod alloc;
pub mod backend;
pub mod blas;
pub mod driver;
pub mod launch;
pub mod nvrtc;
pub mod source;

use crate::dtype::DType;

/// A device buffer: `len` elements of `dtype` in a block of the caching allocator.
#[derive(Debug)]
pub struct CudaBuf {
    pub dtype: DType,
    pub len: usize,
    pub block: alloc::Block,
}

impl CudaBuf {
    pub fn device(&self) -> u32 {
        self.block.device
    }
    pub fn ptr(&self) -> cudarc::driver::sys::CUdeviceptr {
        self.block.ptr
    }
    pub fn nbytes(&self) -> usize {
        self.len * self.dtype.size_in_bytes()
    }
}
