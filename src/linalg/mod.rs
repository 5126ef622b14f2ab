//! Dense linear-algebra kernels on row-major float64 matrices: the numerical core of
//! `torch.linalg`'s factorizations and decompositions, with no tensors, layouts or graph
//! (the CPU backend's `linalg` module reads buffers into the LU/Cholesky family and
//! writes the results back in the tensor's dtype; `ops::decomp` builds those ops and their
//! nodes on top; `ops::spectral` runs `eigh`, `svd` and `qr` over a batch).
//!
//! Every routine works on one matrix (a batch is a loop, or the pool, above it), follows
//! LAPACK's conventions where torch exposes them (1-based pivots, `info` the first
//! failing index, geqrf's reflector signs) and never panics or hangs on NaN or infinite
//! input: the loops run a bounded number of steps.

pub mod cholesky;
pub mod eigh;
pub mod expm;
pub mod lu;
pub mod qr;
pub(crate) mod reflect;
pub mod svd;
pub mod triangular;

/// Runs `f` over `count` matrices, on the pool when there is enough work, and returns the
/// results in order. `work` is an estimate of one matrix's flops.
pub(crate) fn map_batch<T: Send>(
    count: usize,
    work: usize,
    f: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    use rayon::prelude::*;
    let big =
        count > 1 && count.saturating_mul(work) >= 1 << 18 && crate::runtime::intra_op_parallel();
    if big {
        crate::runtime::run(|| (0..count).into_par_iter().map(&f).collect())
    } else {
        (0..count).map(f).collect()
    }
}
