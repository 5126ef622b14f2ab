//! The CUDA backend: kernel sources generated from the op tables (`source`) and NVRTC.
pub mod nvrtc;
pub mod source;
