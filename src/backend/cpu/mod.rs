//! The CPU backend: strided walks, elementwise maps (`elementwise`, the op tables'
//! `unary` and `binary`, the gamma family in `special`, float32 transcendentals in
//! `vmath`), reductions, index kernels (`index`; the scatter family in `scatter`), the
//! AVX2 builds of plain loops (`wide`), GEMM (`matmul`; the float kernels in `gemm`),
//! factories (`creation`), nll's target pass (`nn`), flip / roll / tril / triu copies
//! (`reorder`), addcmul / addcdiv / lerp / addr in one pass (`fused`), nonzero and masked_select (`compact`), random draws (`random`, torch's
//! generator) and topk's tie
//! order (`topk`). `Cpu` implements `backend::Backend` with these functions.

/// The CPU backend (see `backend::Backend`).
pub struct Cpu;

// (helper-45) i0, i0e, i1, i1e, igamma, igammac
pub mod activation;
pub mod bessel;
pub mod binary;
pub mod compact;
pub mod creation;
pub mod elementwise;
pub mod fused;
pub mod gemm;
pub mod index;
pub mod linalg;
pub mod matmul;
pub mod nn;
pub mod random;
pub mod reduce;
pub mod reorder;
pub mod scan;
pub mod scatter;
pub mod sort;
pub mod special;
pub mod stream;
pub mod strided;
pub mod topk;
pub mod unary;
pub mod vmath;
pub mod wide;
