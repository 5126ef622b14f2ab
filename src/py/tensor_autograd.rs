//! `rgrad.Tensor`'s autograd attributes and methods: grad, requires_grad, grad_fn, hooks,
//! retain_grad, backward's entry, detach.

use super::convert::{self};
use super::gil;
use super::node::node_object;
use super::pytensor::*;
use crate::Error;
use crate::autograd::graph::Hook;
use crate::autograd::hooks;
use crate::ops;
use crate::tensor::Tensor;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use std::sync::Arc;

/// A Python callable as a core hook: called with the gradient under the GIL; `None`
/// keeps the gradient, a Tensor replaces it; an exception propagates out of backward.
fn py_hook(f: Py<PyAny>) -> Hook {
    Arc::new(move |g: &Tensor| {
        gil::attach(|py| {
            let r = f
                .call1(py, (wrap(py, g.clone()).map_err(super::error::external)?,))
                .map_err(super::error::external)?;
            let r = r.bind(py);
            if r.is_none() {
                return Ok(None);
            }
            let new = match r.cast::<PyTensor>() {
                Ok(t) => t.get().t.clone(),
                Err(_) => {
                    return Err(Error::Type(format!(
                        "expected Variable, but hook returned '{}'",
                        convert::type_name(r)
                    )));
                }
            };
            hooks::check_hook_result(g, &new, || {
                f.bind(py)
                    .getattr("__name__")
                    .and_then(|n| n.extract::<String>())
                    .unwrap_or_else(|_| "<unknown>".into())
            })?;
            Ok(Some(new))
        })
    })
}

#[pymethods]
impl PyTensor {
    // ---- autograd attributes -------------------------------------------------------
    /// Is True if gradients need to be computed for this tensor, False otherwise.
    #[getter]
    fn requires_grad(&self) -> bool {
        self.t.requires_grad()
    }
    /// Sets `requires_grad`; only leaves may change it, as in torch.
    #[setter]
    fn set_requires_grad(slf: &Bound<'_, Self>, v: bool) -> PyResult<()> {
        slf.get().t.set_requires_grad_attr(v)?;
        if v {
            remember(slf)?;
        }
        Ok(())
    }
    /// Changes if autograd should record operations on this tensor: sets its
    /// `requires_grad` attribute in place.
    ///
    /// Args:
    ///     requires_grad: Whether autograd records operations on this tensor.
    ///
    /// Returns:
    ///     This tensor.
    #[pyo3(signature = (requires_grad=true))]
    fn requires_grad_(slf: &Bound<'_, Self>, requires_grad: bool) -> PyResult<Py<PyTensor>> {
        slf.get().t.set_requires_grad(requires_grad)?;
        if requires_grad && slf.get().t.is_leaf() {
            remember(slf)?;
        }
        Ok(slf.clone().unbind())
    }
    /// For a view, the tensor whose storage it views (None for a tensor that is not a view).
    #[getter]
    fn _base(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.t.base().map(|b| wrap_cached(py, &b)).transpose()
    }
    /// Legacy: always False, with a warning (volatile was replaced by `no_grad`).
    #[getter]
    fn volatile(&self, py: Python<'_>) -> PyResult<bool> {
        PyErr::warn(
            py,
            &py.get_type::<pyo3::exceptions::PyUserWarning>(),
            c"volatile was removed (Variable.volatile is always False)",
            1,
        )?;
        Ok(false)
    }
    /// Is True if this tensor is a leaf of the autograd graph: it does not require grad,
    /// or it was created by the user rather than by a recorded op.
    #[getter]
    fn is_leaf(&self) -> PyResult<bool> {
        ops::refresh_view(&self.t)?;
        Ok(self.t.is_leaf())
    }
    /// None by default; becomes a Tensor the first time a call to `backward()` computes
    /// gradients for this tensor.
    #[getter]
    fn grad(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let g = self.t.grad();
        if g.is_none() && !self.t.is_leaf() && !self.t.retains_grad() {
            PyErr::warn(
                py,
                &py.get_type::<pyo3::exceptions::PyUserWarning>(),
                NON_LEAF_GRAD_WARNING,
                1,
            )?;
        }
        g.map(|g| wrap_cached(py, &g)).transpose()
    }
    /// Sets `.grad` to a tensor or None.
    #[setter]
    fn set_grad(&self, g: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let g = match g {
            None => None,
            Some(o) if o.is_none() => None,
            Some(o) => Some(convert::tensor_arg(o, "grad", "grad", 0).map_err(|_| {
                PyTypeError::new_err(format!(
                    "assigned grad expected to be a Tensor or None but got grad of type {}",
                    convert::type_name(o)
                ))
            })?),
        };
        Ok(self.t.set_grad(g)?)
    }
    /// The autograd Node that created this tensor, or None for leaves.
    #[getter]
    fn grad_fn(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        ops::refresh_view(&self.t)?;
        // (a view's history re-derived now is shown to the node-creation hooks)
        crate::autograd::node_hooks::fire_pending()?;
        self.t.grad_fn().map(|n| node_object(py, n)).transpose()
    }
    /// This tensor's position among the outputs of its `grad_fn`.
    #[getter]
    fn output_nr(&self) -> u32 {
        self.t.output_nr()
    }
    /// Is True if this tensor is non-leaf and its `.grad` is enabled to be populated during
    /// `backward()`, False otherwise.
    #[getter]
    fn retains_grad(&self) -> bool {
        self.t.retains_grad()
    }
    /// Enables this tensor to have its `.grad` populated during `backward()`. This is a no-op
    /// for leaf tensors.
    fn retain_grad(&self) -> PyResult<()> {
        Ok(hooks::retain_grad(&self.t)?)
    }
    /// This tensor's data without autograd history (a detached alias).
    #[getter]
    fn data(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        wrap(py, self.t.data())
    }
    /// Makes this tensor use the data of another tensor, without recording it for autograd.
    #[setter(data)]
    fn set_data(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        let o = convert::tensor_arg(other, "data", "data", 0)?;
        Ok(self.t.set_data(&o)?)
    }
    /// Returns a new tensor, detached from the current graph, that shares this tensor's data.
    fn detach(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        wrap(py, self.t.detach())
    }
    /// Detaches this tensor from the graph that created it, making it a leaf. Returns this
    /// tensor.
    fn detach_(slf: &Bound<'_, Self>) -> Py<PyTensor> {
        slf.get().t.detach_();
        slf.clone().unbind()
    }
    /// Registers a gradient hook; returns its id (the Python wrapper makes the handle).
    fn _register_hook(&self, f: Py<PyAny>) -> PyResult<u64> {
        Ok(hooks::register_hook(&self.t, py_hook(f))?)
    }
    /// Registers a post-accumulate-grad hook; returns its id (the Python wrapper makes
    /// the handle).
    fn _register_post_accumulate_grad_hook(&self, f: Py<PyAny>) -> PyResult<u64> {
        Ok(hooks::register_post_acc_hook(&self.t, py_post_acc_hook(f))?)
    }
    /// Removes the hook with this id (called by the handle's `remove()`): a gradient hook
    /// or a post-accumulate-grad hook (ids are unique in the process).
    fn _remove_hook(&self, id: u64) {
        hooks::remove_hook(&self.t, id);
        hooks::remove_acc_hook(&self.t, id);
    }
}

/// A Python callable as a post-accumulate-grad hook: called under the GIL with the leaf
/// (its own Python object); it must return None (torch's errors otherwise).
fn py_post_acc_hook(f: Py<PyAny>) -> crate::autograd::graph::PostAccHook {
    Arc::new(move |t: &Tensor| {
        gil::attach(|py| {
            let obj = wrap_cached(py, t).map_err(super::error::external)?;
            let r = f.call1(py, (obj,)).map_err(super::error::external)?;
            let r = r.bind(py);
            if r.is_none() {
                return Ok(());
            }
            if r.cast::<PyTensor>().is_ok() {
                return Err(Error::runtime(
                    "Tensor post accumulate grad hooks should return None.",
                ));
            }
            Err(Error::Type(format!(
                "expected Variable, but hook returned '{}'",
                convert::type_name(r)
            )))
        })
    })
}
