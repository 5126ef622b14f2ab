//! rgrad: torch.autograd semantics on a Rust core.
//!
//! Layers, bottom up: `dtype`/`shape`/`layout` (metadata), `storage` (buffers shared
//! by views), `backend::cpu` (kernels over buffer + layout, no graph), `tensor` (the
//! handle), `ops` (every op's forward and backward, one dispatch point), `autograd`
//! (arena graph, executor, grad mode), `runtime` (the shared worker pool). `py` is the
//! PyO3 binding layer, compiled only with the `python` feature.

// Tests may unwrap and panic freely; library code may not (see Cargo.toml [lints]).
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod autograd;
pub mod backend;
pub mod device;
pub mod dispatch;
pub mod dtype;
pub mod error;
pub mod layout;
pub mod ops;
pub mod profiler;
pub mod random;
pub mod replay;
pub mod runtime;
pub mod shape;
pub mod storage;
pub mod tensor;
pub mod testing;

#[cfg(feature = "python")]
mod py;

pub use dtype::{DType, Scalar};
pub use error::{Error, Result};
pub use tensor::Tensor;
