//! The CPU backend: strided walks, elementwise maps, reductions, index kernels, GEMM.

pub mod binary;
pub mod elementwise;
pub mod matmul;
pub mod reduce;
pub mod special;
pub mod strided;
pub mod unary;
pub mod vmath;
