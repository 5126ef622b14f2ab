//! Kernel backends. Kernels take buffers plus `Layout`s and never see the graph; the CPU
//! backend is the only one today (a CUDA backend behind a `cuda` feature comes later).

pub mod cpu;
