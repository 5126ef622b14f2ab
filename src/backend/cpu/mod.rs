//! The CPU backend: strided walks, elementwise maps, reductions, index kernels, GEMM.

pub mod binary;
pub mod creation;
pub mod elementwise;
pub mod index;
pub mod matmul;
pub mod nn;
pub mod random;
pub mod reduce;
pub mod special;
pub mod strided;
pub mod topk;
pub mod unary;
pub mod vmath;
