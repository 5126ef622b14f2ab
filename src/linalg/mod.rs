//! Dense linear-algebra kernels on row-major float64 matrices: the numerical core of
//! `torch.linalg`'s factorizations, with no tensors, layouts or graph (the CPU backend's
//! `linalg` module reads buffers into these and writes the results back in the tensor's
//! dtype; `ops::decomp` builds the ops and their nodes on top).
//!
//! Every routine works in place on one matrix (a batch is a loop, or the pool, above
//! it), follows LAPACK's conventions where torch exposes them (1-based pivots, `info`
//! the first failing index) and never panics on NaN or infinite input: the loops run a
//! fixed number of steps.

pub mod cholesky;
pub mod expm;
pub mod lu;
pub mod triangular;
