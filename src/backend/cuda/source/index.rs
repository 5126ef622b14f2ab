//! Index kernel sources: a gather by host-checked int64 positions, which serves
//! torch.gather and index_select (the backend expands an index_select's list over the
//! output first).

use super::{KernelSrc, cty, prelude, sfx};
use crate::dtype::DType;

/// `y[i] = x[rg_at(i, s, lx) + idx[i] * step]`: params `(i64 n, RgShape s, RgLay lx, i64
/// step, const i64* idx, const T* x, T* y)`, `idx` contiguous over the output (`s`), `lx`
/// the input's layout over the output with the gathered dim's stride 0 and `step` that
/// dim's stride. The positions were bounds-checked on the host.
pub fn gather(dt: DType) -> KernelSrc {
    let name = format!("gather_{}", sfx(dt));
    let mut source = String::from(prelude());
    source.push_str(&format!(
        "typedef {t} T;\n\
         extern \"C\" __global__ void {name}(i64 n, RgShape s, RgLay lx, i64 step, const i64* __restrict__ idx, \
         const T* __restrict__ x, T* __restrict__ y) {{\n  \
         for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x)\n    \
         y[i] = x[rg_at(i, s, lx) + idx[i] * step];\n}}\n",
        t = cty(dt)
    ));
    KernelSrc { name, source }
}
