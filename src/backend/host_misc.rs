//! What the distance, search and counting ops (`ops/distance.rs`, `search.rs`,
//! `counting.rs`) run on the host whatever the device: a tensor's elements in row-major
//! order, and the pool's split of a kernel by output (fixed by the sizes alone). A device
//! tensor's buffer is copied down first (`host::read`); their results are uploaded back.

pub(crate) use super::cpu::reduce::par::per_output;
pub(crate) use super::cpu::sort::{SortKey, aten_order, stable_order};
pub use super::cpu::strided::contiguous;
pub(crate) use super::cpu::wide::{Kernel, wide_kernel};

/// Sorts `v` by `cmp` (rayon's parallel unstable sort on the shared pool from 32K
/// elements; a total `cmp` makes the result unique, whatever the split).
pub fn par_sort_by<T: Send, F: Fn(&T, &T) -> std::cmp::Ordering + Sync + Send>(
    v: &mut [T],
    cmp: F,
) {
    if v.len() >= super::cpu::reduce::par::PAR_MIN && crate::runtime::intra_op_parallel() {
        use rayon::prelude::*;
        crate::runtime::run(|| v.par_sort_unstable_by(cmp));
    } else {
        v.sort_unstable_by(cmp);
    }
}

/// Folds `v` in chunks of `chunk` elements (on the shared pool from 32K elements),
/// each chunk into its own accumulator (`init`, `fold`), the accumulators then combined
/// by `merge`: for results that do not depend on the combining order (integer counts).
pub fn par_fold_chunks<T: Sync, A: Send>(
    v: &[T],
    chunk: usize,
    init: impl Fn() -> A + Sync + Send,
    fold: impl Fn(&mut A, &[T]) + Sync + Send,
    merge: impl Fn(A, A) -> A + Sync + Send,
) -> A {
    if v.len() >= super::cpu::reduce::par::PAR_MIN && crate::runtime::intra_op_parallel() {
        use rayon::prelude::*;
        crate::runtime::run(|| {
            v.par_chunks(chunk.max(1))
                .map(|c| {
                    let mut a = init();
                    fold(&mut a, c);
                    a
                })
                .reduce(&init, &merge)
        })
    } else {
        let mut a = init();
        fold(&mut a, v);
        a
    }
}
