//! `grad_fn` objects: a view of one graph node (its name and next_functions), and
//! `AccumulateGrad` for the leaves at the ends of the graph.

use super::pytensor::wrap_cached;
use crate::autograd::graph::{Edge, NodeRef};
use crate::tensor::Tensor;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

#[pyclass(
    name = "Node",
    module = "rgrad.autograd.graph",
    frozen,
    weakref,
    subclass
)]
pub struct PyNode {
    pub node: NodeRef,
}

#[pyclass(name = "AccumulateGrad", module = "rgrad.autograd.graph", frozen)]
pub struct PyAccumulateGrad {
    pub leaf: Tensor,
}

static NODE_CLASS: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();

/// A Python object for `node` whose type is named after the op (`type(y.grad_fn).__name__
/// == "MulBackward0"`, as in torch): a per-name subclass of Node, made once in Python.
pub fn node_object(py: Python<'_>, node: NodeRef) -> PyResult<Py<PyAny>> {
    let name = node.name();
    let obj = Bound::new(py, PyNode { node })?;
    let class_for = NODE_CLASS.import(py, "rgrad.autograd.graph", "_node_class")?;
    obj.setattr("__class__", class_for.call1((name,))?)?;
    Ok(obj.into_any().unbind())
}

fn edge_tuple(py: Python<'_>, e: &Option<Edge>) -> PyResult<Py<PyAny>> {
    let (obj, nr): (Py<PyAny>, u32) = match e {
        None => (py.None(), 0),
        Some(Edge::Node { node, input_nr }) => (node_object(py, node.clone())?, *input_nr),
        Some(Edge::Leaf(t)) => (
            Py::new(py, PyAccumulateGrad { leaf: t.clone() })?.into_any(),
            0,
        ),
    };
    Ok(
        PyTuple::new(py, [obj, nr.into_pyobject(py)?.into_any().unbind()])?
            .into_any()
            .unbind(),
    )
}

#[pymethods]
impl PyNode {
    fn name(&self) -> String {
        self.node.name()
    }
    #[getter]
    fn next_functions(&self, py: Python<'_>) -> PyResult<Py<PyTuple>> {
        let next = self.node.lock().next.clone();
        let items: Vec<Py<PyAny>> = next
            .iter()
            .map(|e| edge_tuple(py, e))
            .collect::<PyResult<_>>()?;
        Ok(PyTuple::new(py, items)?.unbind())
    }
    fn __repr__(slf: &Bound<'_, Self>) -> String {
        format!(
            "<{} object at {:#x}>",
            slf.get().node.name(),
            slf.as_ptr() as usize
        )
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyNode>()
            .is_ok_and(|o| o.get().node.ptr_eq(&self.node))
    }
    fn __hash__(&self) -> u64 {
        self.node.id()
    }
    /// Identity of the underlying node (stable while it lives).
    fn _id(&self) -> u64 {
        self.node.id()
    }
}

#[pymethods]
impl PyAccumulateGrad {
    fn name(&self) -> &'static str {
        "torch::autograd::AccumulateGrad"
    }
    #[getter]
    fn variable(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap_cached(py, &self.leaf)
    }
    #[getter]
    fn next_functions(&self, py: Python<'_>) -> PyResult<Py<PyTuple>> {
        Ok(PyTuple::empty(py).unbind())
    }
    fn __repr__(slf: &Bound<'_, Self>) -> String {
        format!("<AccumulateGrad object at {:#x}>", slf.as_ptr() as usize)
    }
}
