//! Dense matrix decompositions computed on the host in float64 (rgrad links no LAPACK):
//! the symmetric eigendecomposition (`eigh`), the singular value decomposition (`svd`) and
//! the Householder QR decomposition (`qr`). Each works on one row-major matrix; the op
//! layer (`ops::spectral`) runs them over a batch.

pub mod eigh;
pub mod qr;
pub mod svd;

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
