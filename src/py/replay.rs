//! Bindings of CPU step replay (`crate::replay`): begin / end a recording on this thread,
//! and the recorded program, which `rgrad.compile_step` drives.

use super::gil;
use super::pytensor::{PyTensor, wrap};
use crate::replay::{self, Program};
use pyo3::prelude::*;

/// A recorded training step (see `rgrad.compile_step`).
#[pyclass(name = "_StepProgram", module = "rgrad._C", frozen)]
pub struct PyStepProgram(Program);

#[pymethods]
impl PyStepProgram {
    /// Replays the step with the GIL released; None when the recorded state no longer
    /// holds (a leaf's `.grad` changed), so the step must be recorded again.
    fn run(&self, py: Python<'_>) -> PyResult<Option<Vec<Py<PyTensor>>>> {
        let outs = gil::detach(py, || self.0.run())?;
        match outs {
            None => Ok(None),
            Some(ts) => Ok(Some(
                ts.into_iter()
                    .map(|t| wrap(py, t))
                    .collect::<PyResult<Vec<_>>>()?,
            )),
        }
    }
    /// Whether the state the step was recorded against still holds.
    fn guards_hold(&self) -> bool {
        self.0.guards_hold()
    }
    /// Number of recorded kernel calls.
    #[getter]
    fn num_steps(&self) -> usize {
        self.0.num_steps()
    }
    /// Number of buffers the program names.
    #[getter]
    fn num_slots(&self) -> usize {
        self.0.num_slots()
    }
    /// (intermediate, extern, const) slot counts.
    #[getter]
    fn slot_kinds(&self) -> (usize, usize, usize) {
        self.0.slot_kinds()
    }
    /// The recorded kernels' names, in order.
    fn kernel_names(&self) -> Vec<&'static str> {
        self.0.kernel_names()
    }
}

/// Starts recording a step on this thread.
#[pyfunction]
pub fn _step_record_begin() -> PyResult<()> {
    Ok(replay::begin()?)
}

/// Stops recording on this thread and drops the recording.
#[pyfunction]
pub fn _step_record_abort() {
    replay::abort();
}

/// Stops recording on this thread; the program returns `outputs`.
#[pyfunction]
pub fn _step_record_end(outputs: Vec<PyRef<'_, PyTensor>>) -> PyResult<PyStepProgram> {
    let ts: Vec<crate::tensor::Tensor> = outputs.iter().map(|p| p.t.clone()).collect();
    Ok(PyStepProgram(replay::end(&ts)?))
}

/// Whether this thread is recording a step.
#[pyfunction]
pub fn _step_is_recording() -> bool {
    replay::active()
}
