//! The op table's Tensor methods (`x.exp()`, `x.exp_()`), generated from its rows
//! (`ops::table`), and the list of their names the `rgrad.exp` functions come from.

use super::pytensor::{PyTensor, run, wrap};
use crate::backend::UnaryOp;
use crate::ops;
use pyo3::prelude::*;

macro_rules! py_methods {
    ($($name:ident $name_:ident $V:ident $node:literal {
        ints: $ints:ident $(($($iargs:tt)*))?, bool: $bool:expr,
        f: |$x:ident| $f:expr,
        df($saves:ident): |$g:ident $(, $s:ident)?| $df:expr,
        inplace: $inplace:ident $(($inode:literal))?,
        doc: $doc:literal,
    })*) => {
        #[pymethods]
        impl PyTensor {
            $(
            #[doc = $doc]
            fn $name(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
                wrap(py, run(py, &self.t, || ops::unary(UnaryOp::$V, &self.t))?)
            }
            #[doc = concat!("In-place version of `", stringify!($name), "()`. Returns this tensor.")]
            fn $name_(slf: &Bound<'_, Self>) -> PyResult<Py<PyTensor>> {
                ops::unary_(&slf.get().t, UnaryOp::$V)?;
                Ok(slf.clone().unbind())
            }
            )*
        }
    };
}
crate::ops::table::unary_op_table!(py_methods);

/// The table ops' names, for `rgrad.<name>` (python/rgrad/__init__.py).
pub fn names() -> Vec<&'static str> {
    ops::UNARY_OPS.iter().map(|(name, _, _)| *name).collect()
}

#[pymethods]
impl PyTensor {
    /// Computes the n-th derivative of the digamma function of each element.
    fn polygamma(&self, py: Python<'_>, n: i64) -> PyResult<Py<PyTensor>> {
        wrap(py, run(py, &self.t, || ops::polygamma(n, &self.t))?)
    }
    /// In-place version of `polygamma()`. Returns this tensor.
    fn polygamma_(slf: &Bound<'_, Self>, n: i64) -> PyResult<Py<PyTensor>> {
        ops::polygamma_(&slf.get().t, n)?;
        Ok(slf.clone().unbind())
    }
}

#[pymethods]
impl PyTensor {
    /// `round(decimals=d)` for d ≠ 0 (python/rgrad/_tensor.py's `round`).
    fn _round_decimals(&self, py: Python<'_>, decimals: i64) -> PyResult<Py<PyTensor>> {
        wrap(
            py,
            run(py, &self.t, || ops::round_decimals(&self.t, decimals))?,
        )
    }
    /// `round_(decimals=d)`.
    fn _round_decimals_(slf: &Bound<'_, Self>, decimals: i64) -> PyResult<Py<PyTensor>> {
        ops::round_decimals_(&slf.get().t, decimals)?;
        Ok(slf.clone().unbind())
    }
}

/// `rgrad.polygamma(n, input)`: the n-th derivative of the digamma function.
#[pyfunction]
pub fn polygamma(py: Python<'_>, n: i64, input: PyRef<'_, PyTensor>) -> PyResult<Py<PyTensor>> {
    input.polygamma(py, n)
}
