//! Criterion benches of the Rust core, no Python: physical floors, elementwise, reduce,
//! matmul, graph (build / backward / free, wide backward at 1 and N threads, arena reuse),
//! the profiler's cost per event.
//!
//! Ids follow STYLE.md §9: `family/op/dtype/shape/device`, with a `/1t` or `/Nt` suffix
//! where the thread count is part of the question. Throughputs: GB/s (decimal) for
//! memory-bound kernels, `Gelem/s` = GFLOP/s for GEMM and the FMA peak, `elem/s` = nodes
//! (or ops) per second for graph work.
//!
//! ```text
//! cargo bench --bench core                     # everything (a few minutes on 2 cores)
//! cargo bench --bench core -- --quick          # shorter, noisier
//! cargo bench --bench core -- elementwise/add  # a filter (regex on the id)
//! ```
//! One binary rather than one per family: each bench binary is a fat-LTO link of the
//! whole crate, so one target keeps `cargo bench` builds short.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // benches may fail loudly

mod alloc_count;
mod elementwise;
mod floors;
mod graph;
mod matmul;
mod profiler;
mod reduce;
mod util;

use criterion::{criterion_group, criterion_main};

// matmul last: a GEMM leaves rgrad's pool threads in a state that slows the SSE code run
// on them afterwards (see matmul.rs), which would distort every group after it.
criterion_group!(
    benches,
    floors::bench,
    elementwise::bench,
    reduce::bench,
    graph::bench,
    profiler::bench,
    matmul::bench
);
criterion_main!(benches);
