//! `torch._C`'s forward-mode AD functions, which `rgrad.autograd.forward_ad` wraps.

use super::pytensor::{PyTensor, wrap};
use crate::autograd::forward_ad;
use pyo3::prelude::*;

#[pyfunction]
fn _enter_dual_level() -> PyResult<i64> {
    Ok(forward_ad::enter_dual_level()?)
}

#[pyfunction]
#[pyo3(signature = (*, level))]
fn _exit_dual_level(level: i64) -> PyResult<()> {
    Ok(forward_ad::exit_dual_level(level)?)
}

#[pyfunction]
#[pyo3(signature = (tensor, tangent, *, level))]
fn _make_dual(
    py: Python<'_>,
    tensor: PyRef<'_, PyTensor>,
    tangent: PyRef<'_, PyTensor>,
    level: i64,
) -> PyResult<Py<PyTensor>> {
    wrap(
        py,
        crate::ops::jvp::make_dual(&tensor.t, &tangent.t, level)?,
    )
}

#[pyfunction]
#[pyo3(signature = (tensor, *, level))]
fn _unpack_dual(
    py: Python<'_>,
    tensor: PyRef<'_, PyTensor>,
    level: i64,
) -> PyResult<(Py<PyTensor>, Option<Py<PyTensor>>)> {
    let (primal, tangent) = crate::ops::jvp::unpack_dual(&tensor.t, level)?;
    Ok((wrap(py, primal)?, tangent.map(|t| wrap(py, t)).transpose()?))
}

/// Gives `tensor` the tangent a custom Function's `jvp` returned for it.
#[pyfunction]
fn _set_fw_grad(tensor: PyRef<'_, PyTensor>, tangent: PyRef<'_, PyTensor>) -> PyResult<()> {
    let (t, tan) = (&tensor.t, &tangent.t);
    if t.shape() != tan.shape() {
        return Err(crate::Error::runtime(format!(
            "Trying to set a forward gradient that has a different size than that of the original Tensor, this is not supported. Tensor is of size {} while the given forward gradient is of size {}.",
            crate::shape::fmt_shape(&t.shape()),
            crate::shape::fmt_shape(&tan.shape())
        ))
        .into());
    }
    if forward_ad::is_active() && t.dtype().is_float() {
        forward_ad::set_tangent(t, Some(tan.clone()));
    }
    Ok(())
}

#[pyfunction]
fn _is_fwd_grad_enabled() -> bool {
    forward_ad::is_enabled()
}

#[pyfunction]
fn _set_fwd_grad_enabled(enabled: bool) {
    forward_ad::set_enabled(enabled);
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_enter_dual_level, m)?)?;
    m.add_function(wrap_pyfunction!(_exit_dual_level, m)?)?;
    m.add_function(wrap_pyfunction!(_make_dual, m)?)?;
    m.add_function(wrap_pyfunction!(_unpack_dual, m)?)?;
    m.add_function(wrap_pyfunction!(_set_fw_grad, m)?)?;
    m.add_function(wrap_pyfunction!(_is_fwd_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_fwd_grad_enabled, m)?)?;
    Ok(())
}
