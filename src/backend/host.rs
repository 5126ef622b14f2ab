//! What runs on the host whatever the device: the parts of an op that read values to plan
//! its work (index values and their checks, a mask's coordinates, one element, nll's
//! targets), random draws from torch's CPU generator (torch's CUDA generator is another
//! algorithm), and topk's tie order. They work on host buffers, which every buffer is
//! today; a device backend will copy its operand to the host for them.

pub use super::cpu::index::{element, index_values, nonzero};
pub use super::cpu::nn::nll_targets;
pub use super::cpu::random;
