//! What runs on the host whatever the device: the parts of an op that read values to plan
//! its work (index values and their checks, a mask's coordinates, one element, nll's
//! targets), random draws from torch's CPU generator (torch's CUDA generator is another
//! algorithm), and topk's tie order. They work on host buffers, which every buffer is
//! today; a device backend will copy its operand to the host for them.

pub use super::cpu::index::{element, index_values, nonzero};
pub use super::cpu::nn::nll_targets;
pub use super::cpu::random;

/// Whether a float buffer's elements under `layout` hold a NaN, and an infinity (anomaly
/// mode's check of every backward output).
pub fn non_finite(buf: &crate::storage::Buffer, layout: &crate::layout::Layout) -> (bool, bool) {
    use super::cpu::strided::contiguous;
    use crate::storage::Buffer;
    match buf {
        Buffer::F32(v) => {
            let v = contiguous(v, layout);
            (
                v.iter().any(|x| x.is_nan()),
                v.iter().any(|x| x.is_infinite()),
            )
        }
        Buffer::F64(v) => {
            let v = contiguous(v, layout);
            (
                v.iter().any(|x| x.is_nan()),
                v.iter().any(|x| x.is_infinite()),
            )
        }
        Buffer::Bool(_) | Buffer::I64(_) => (false, false),
    }
}
