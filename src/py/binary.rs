//! The binary op table's Tensor methods (`x.atan2(y)`, `x.atan2_(y)`) and `rgrad.atan2`
//! functions, generated from its rows (`ops::table`). Only argument conversion is here.

use super::convert::{Arg, arg, tensor_ref, type_name};
use super::pytensor::{PyTensor, run_if, wrap};
use crate::backend::BinaryFn;
use crate::ops;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// Whether the op is large enough to release the GIL for.
fn large(a: &Arg<'_>, b: &Arg<'_>) -> bool {
    [a, b]
        .iter()
        .any(|o| matches!(o, Arg::T(t) if t.numel() >= super::pytensor::RELEASE_GIL_AT))
}

fn call(py: Python<'_>, op: BinaryFn, a: Arg<'_>, b: Arg<'_>) -> PyResult<Py<PyTensor>> {
    let r = run_if(py, large(&a, &b), || {
        ops::binary_fn(op, a.operand(), b.operand())
    })?;
    wrap(py, r)
}

/// The operands of `rgrad.<name>(input, other)` (`method`: of `x.<name>(other)`), with
/// torch's TypeErrors: tensors, or (where the row's `numbers` allows it: `either`,
/// `second`) a number for one of them.
fn operands<'a>(
    name: &str,
    numbers: &str,
    input: &'a Bound<'_, PyAny>,
    other: &'a Bound<'_, PyAny>,
    method: bool,
) -> PyResult<(Arg<'a>, Arg<'a>)> {
    if numbers == "none" {
        let a = tensor_ref(input, name, "input", 1)?;
        // (heaviside's second operand is torch's `values`)
        let second = if name.starts_with("heaviside") {
            "values"
        } else {
            "other"
        };
        let b = tensor_ref(other, name, second, 1 + usize::from(!method))?;
        return Ok((Arg::T(a), Arg::T(b)));
    }
    let either = numbers == "either";
    match (arg(input), arg(other)) {
        (Some(a @ Arg::T(_)), Some(b)) => Ok((a, b)),
        (Some(a @ Arg::S(_)), Some(b @ Arg::T(_))) if either => Ok((a, b)),
        _ => Err(PyTypeError::new_err(format!(
            "{name}() received an invalid combination of arguments - got ({}, {}), but expected one of:\n \
             * (Tensor input, Tensor other, *, Tensor out = None)\n{}\
             * (Tensor input, Number other, *, Tensor out = None)\n",
            type_name(input),
            type_name(other),
            if either {
                " * (Number self, Tensor other, *, Tensor out = None)\n "
            } else {
                " "
            },
        ))),
    }
}

/// A row's `_` method, where it has one.
macro_rules! py_inplace {
    (none, $name:ident, $name_:ident, $V:ident, $numbers:expr) => {};
    (recorded, $name:ident, $name_:ident, $V:ident, $numbers:expr) => {
        #[pymethods]
        impl PyTensor {
            #[doc = concat!("In-place version of `", stringify!($name), "()`. Returns this tensor.")]
            fn $name_(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
                let (_, b) = operands(stringify!($name_), $numbers, slf.as_any(), other, true)?;
                ops::binary_fn_inplace(BinaryFn::$V, &slf.get().t, b.operand())?;
                Ok(slf.clone().unbind())
            }
        }
    };
}

macro_rules! py_layer {
    ($($name:ident $name_:ident $V:ident $node:literal {
        dtypes: $dt:ident $(($($dtargs:tt)*))?,
        numbers: $num:ident $(($($nodes:literal),*))?,
        inplace: $inplace:ident,
        doc: $doc:literal,
        $($rest:tt)*
    })*) => {
        $(
        #[pymethods]
        impl PyTensor {
            #[doc = $doc]
            fn $name(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
                let numbers = stringify!($num);
                let (a, b) = operands(stringify!($name), numbers, slf.as_any(), other, true)?;
                call(slf.py(), BinaryFn::$V, a, b)
            }
        }
        py_inplace!($inplace, $name, $name_, $V, stringify!($num));
        )*

        /// `rgrad.<name>(input, other)` for every row.
        mod functions {
            use super::*;
            $(
            #[doc = $doc]
            #[pyfunction]
            pub fn $name(input: &Bound<'_, PyAny>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
                let numbers = stringify!($num);
                let (a, b) = operands(stringify!($name), numbers, input, other, false)?;
                call(input.py(), BinaryFn::$V, a, b)
            }
            )*

            pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
                $(m.add_function(wrap_pyfunction!($name, m)?)?;)*
                Ok(())
            }
        }
    };
}
crate::ops::table::binary_op_table!(py_layer);

/// Adds the `rgrad.<name>` functions of the binary table to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    functions::register(m)
}

/// The binary table ops' names (tests/test_op_table.py checks them against the table).
pub fn names() -> Vec<&'static str> {
    ops::BINARY_OPS.iter().map(|(name, ..)| *name).collect()
}
