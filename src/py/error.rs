//! The one place core errors become Python exceptions (exhaustive: a new variant must
//! be given a Python type here).

use crate::error::{Error, ExternalError};
use pyo3::exceptions::{
    PyIndexError, PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use std::sync::Arc;

pyo3::create_exception!(
    rgrad,
    OutOfMemoryError,
    pyo3::exceptions::PyRuntimeError,
    "Exception raised when device is out of memory"
);

pyo3::create_exception!(
    rgrad._C,
    _LinAlgError,
    pyo3::exceptions::PyRuntimeError,
    "Error raised by rgrad.linalg function when the cause of error is a numerical inconsistency in the data."
);

/// A Python exception raised by user code inside the engine (hook, custom Function),
/// carried through the core unchanged.
#[derive(Debug)]
pub struct PyErrBox(pub PyErr);

impl std::fmt::Display for PyErrBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}
impl ExternalError for PyErrBox {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Wraps a Python exception for transport through the core.
pub fn external(e: PyErr) -> Error {
    Error::External(Arc::new(PyErrBox(e)))
}

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        let msg = e.to_string();
        match e {
            Error::Anomaly(a) => {
                let warned = Python::attach(|py| super::profiler::warn_anomaly(py, &a));
                match warned {
                    Ok(()) => PyErr::from(a.inner),
                    Err(w) => w,
                }
            }
            Error::Runtime(_)
            | Error::BroadcastMismatch { .. }
            | Error::NoGradFn { .. }
            | Error::ImplicitGradNonScalar
            | Error::GraphFreed
            | Error::RequiresGradDtype(_)
            | Error::DirtyNotReturned
            | Error::DirtyLeafRequiresGrad
            | Error::HookWithoutGrad
            | Error::RetainGradWithoutGrad
            | Error::Internal(_) => PyRuntimeError::new_err(msg),
            Error::OutOfMemory(_) => OutOfMemoryError::new_err(msg),
            Error::LinAlg(_) => _LinAlgError::new_err(msg),
            Error::DimOutOfRange { .. } | Error::Index(_) => PyIndexError::new_err(msg),
            Error::Type(_) => PyTypeError::new_err(msg),
            Error::Value(_) => PyValueError::new_err(msg),
            Error::DerivativeNotImplemented { .. } | Error::NotImplemented(_) => {
                PyNotImplementedError::new_err(msg)
            }
            Error::External(ext) => match ext.as_any().downcast_ref::<PyErrBox>() {
                Some(b) => Python::attach(|py| b.0.clone_ref(py)),
                None => PyRuntimeError::new_err(msg),
            },
        }
    }
}
