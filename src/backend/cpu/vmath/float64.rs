//! The float64 functions, evaluated in float64.

use super::Func;

/// Every float64 function, for tests and tools.
pub const FUNCS: &[Func<f64>] = &[];
