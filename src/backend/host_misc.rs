//! What the distance, search and counting ops (`ops/distance.rs`, `search.rs`,
//! `counting.rs`) run on the host whatever the device: a tensor's elements in row-major
//! order, and the pool's split of a kernel by output (fixed by the sizes alone). A device
//! tensor's buffer is copied down first (`host::read`); their results are uploaded back.

pub(crate) use super::cpu::reduce::par::per_output;
pub use super::cpu::strided::contiguous;
