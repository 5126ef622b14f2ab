//! `grad_fn` objects: a view of one graph node (its name and next_functions), and
//! `AccumulateGrad` for the leaves at the ends of the graph.

use super::pytensor::wrap_cached;
use crate::autograd::graph::{Edge, NodeRef, WeakNodeRef};
use crate::tensor::Tensor;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// A node of the autograd graph, as `tensor.grad_fn` shows it; its Python type is a
/// per-op subclass named after the op (`MulBackward0`).
#[pyclass(
    name = "Node",
    module = "rgrad.autograd.graph",
    frozen,
    weakref,
    subclass
)]
pub struct PyNode {
    handle: NodeHandle,
}

/// How a Python node object reaches its graph node. Built-in nodes' objects own their
/// node; a custom Function's ctx is owned *by* its node (the node calls its backward),
/// so it holds the node weakly, and only from the end of `apply` on.
enum NodeHandle {
    Strong(NodeRef),
    Weak(std::sync::OnceLock<WeakNodeRef>),
}

impl PyNode {
    /// The object of a custom Function's ctx, attached to its node later.
    pub fn unattached() -> PyNode {
        PyNode {
            handle: NodeHandle::Weak(std::sync::OnceLock::new()),
        }
    }
    /// The graph node, if attached and alive.
    pub fn node(&self) -> Option<NodeRef> {
        match &self.handle {
            NodeHandle::Strong(n) => Some(n.clone()),
            NodeHandle::Weak(w) => w.get().and_then(WeakNodeRef::upgrade),
        }
    }
    /// Attaches a ctx object to its node (once; later calls are ignored).
    pub fn attach(&self, node: &NodeRef) {
        if let NodeHandle::Weak(w) = &self.handle {
            let _ = w.set(node.downgrade());
        }
    }
}

/// The graph node at a leaf that requires grad: backward accumulates into the leaf's
/// `.grad`. One object per leaf while it is alive (`acc is acc`, as torch's node).
#[pyclass(
    name = "AccumulateGrad",
    module = "rgrad.autograd.graph",
    extends = PyNode,
    frozen
)]
pub struct PyAccumulateGrad {
    pub leaf: Tensor,
    /// `metadata`, made on first access.
    pub metadata: pyo3::sync::PyOnceLock<Py<pyo3::types::PyDict>>,
}

/// A weak reference from a leaf to its AccumulateGrad object.
struct AccBinding(Py<pyo3::types::PyWeakrefReference>);

/// The AccumulateGrad object of `leaf`: the live one if any, else a new one (remembered
/// weakly by the leaf).
pub fn accumulate_grad_object(py: Python<'_>, leaf: &Tensor) -> PyResult<Py<PyAny>> {
    Ok(accumulate_grad_object_made(py, leaf)?.0)
}

/// [`accumulate_grad_object`], and whether it was made now (none was alive).
pub fn accumulate_grad_object_made(py: Python<'_>, leaf: &Tensor) -> PyResult<(Py<PyAny>, bool)> {
    let cached = leaf.acc_binding();
    if let Some(obj) = cached
        .as_ref()
        .and_then(|b| b.downcast_ref::<AccBinding>())
        .and_then(|w| w.0.bind(py).upgrade())
    {
        return Ok((obj.unbind(), false));
    }
    // (a Node, as torch's AccumulateGrad is, whose graph-node handle stays empty)
    let init =
        pyo3::PyClassInitializer::from(PyNode::unattached()).add_subclass(PyAccumulateGrad {
            leaf: leaf.clone(),
            metadata: pyo3::sync::PyOnceLock::new(),
        });
    let obj = Bound::new(py, init)?;
    let weak = pyo3::types::PyWeakrefReference::new(&obj)?;
    leaf.set_acc_binding(std::sync::Arc::new(AccBinding(weak.unbind())));
    Ok((obj.into_any().unbind(), true))
}

static NODE_CLASS: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();

/// A Python object for `node` whose type is named after the op (`type(y.grad_fn).__name__
/// == "MulBackward0"`, as in torch): a per-name subclass of Node, made once in Python.
pub fn node_object(py: Python<'_>, node: NodeRef) -> PyResult<Py<PyAny>> {
    // A custom Function's node: its Python object is the ctx, which the node owns.
    if let Some(f) = custom_function(&node) {
        return Ok(f.ctx.clone_ref(py).into_any());
    }
    // One Python object per live node: reuse it while it is alive.
    let cached = node.lock().binding();
    if let Some(obj) = cached
        .as_ref()
        .and_then(|b| b.downcast_ref::<NodeBinding>())
        .and_then(|w| w.0.bind(py).upgrade())
    {
        return Ok(obj.unbind());
    }
    let name = node.name();
    let obj = Bound::new(
        py,
        PyNode {
            handle: NodeHandle::Strong(node.clone()),
        },
    )?;
    let class_for = NODE_CLASS.import(py, "rgrad.autograd.graph", "_node_class")?;
    obj.setattr("__class__", class_for.call1((name,))?)?;
    bind_node_object(&node, obj.as_any())?;
    Ok(obj.into_any().unbind())
}

/// Makes `obj` the Python object that `grad_fn` returns for `node` (held weakly).
pub fn bind_node_object(node: &NodeRef, obj: &Bound<'_, PyAny>) -> PyResult<()> {
    let weak = pyo3::types::PyWeakrefReference::new(obj)?;
    node.lock()
        .set_binding(Some(std::sync::Arc::new(NodeBinding(weak.unbind()))));
    Ok(())
}

/// A weak reference from a node to its Python object (no cycle: the object owns the node).
struct NodeBinding(Py<pyo3::types::PyWeakrefReference>);

/// A node's edges as torch lists them. rgrad's CopySlices takes the in-place op's node as
/// its second input, where torch keeps that node inside CopySlices and lists, after the
/// base's edge, the op node's edges but its first (the view's old history).
fn shown_edges(n: &NodeRef) -> Vec<Option<Edge>> {
    let next = n.lock().next.clone();
    if let Some(f) = custom_function(n) {
        // a custom Function's node: torch lists its tensor inputs' edges only
        return next
            .into_iter()
            .enumerate()
            .filter(|&(i, _)| f.tensor_input(i))
            .map(|(_, e)| e)
            .collect();
    }
    if n.name() == "torch::autograd::CopySlices"
        && let [base, Some(Edge::Node { node: op, .. })] = next.as_slice()
    {
        let mut shown = vec![base.clone()];
        shown.extend(op.lock().next.iter().skip(1).cloned());
        return shown;
    }
    next.to_vec()
}

fn edge_tuple(py: Python<'_>, e: &Option<Edge>) -> PyResult<Py<PyAny>> {
    let (obj, nr): (Py<PyAny>, u32) = match e {
        None => (py.None(), 0),
        Some(Edge::Node { node, input_nr }) => (node_object(py, node.clone())?, *input_nr),
        Some(Edge::Leaf(t)) => (accumulate_grad_object(py, t)?, 0),
    };
    Ok(
        PyTuple::new(py, [obj, nr.into_pyobject(py)?.into_any().unbind()])?
            .into_any()
            .unbind(),
    )
}

#[pymethods]
impl PyNode {
    /// The node's sequence number: the order in which its thread made it (torch's; the
    /// profiler's link from a forward op to this node).
    fn _sequence_nr(&self) -> u64 {
        self.node().map_or(u64::MAX, |n| n.sequence_nr())
    }
    /// Returns the name of this node, e.g. `MulBackward0`.
    fn name(slf: &Bound<'_, Self>) -> PyResult<String> {
        match slf.get().node() {
            Some(n) => Ok(n.name()),
            None => Ok(slf.get_type().name()?.to_string()),
        }
    }
    /// The `(node, input_nr)` pair for each input of the op: where its gradient goes next
    /// (`(None, 0)` for inputs that need no gradient).
    #[getter]
    fn next_functions(&self, py: Python<'_>) -> PyResult<Py<PyTuple>> {
        let next = match self.node() {
            Some(n) => shown_edges(&n),
            None => Default::default(),
        };
        let items: Vec<Py<PyAny>> = next
            .iter()
            .map(|e| edge_tuple(py, e))
            .collect::<PyResult<_>>()?;
        Ok(PyTuple::new(py, items)?.unbind())
    }
    /// `<MulBackward0 object at 0x...>`, as torch prints nodes.
    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        // the unqualified name, as torch prints `torch::autograd::Error` nodes
        let name = Self::name(slf)?;
        let short = name.rsplit("::").next().unwrap_or(&name);
        Ok(format!("<{short} object at {:#x}>", slf.as_ptr() as usize))
    }
    /// Nodes are equal when they view the same graph node.
    fn __eq__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> bool {
        if slf.is(other) {
            return true;
        }
        match (slf.get().node(), other.cast::<PyNode>()) {
            (Some(a), Ok(o)) => o.get().node().is_some_and(|b| b.ptr_eq(&a)),
            _ => false,
        }
    }
    /// Hashes by the node's identity, consistent with `__eq__`.
    fn __hash__(slf: &Bound<'_, Self>) -> u64 {
        match slf.get().node() {
            Some(n) => n.id(),
            None => slf.as_ptr() as u64,
        }
    }
    /// Identity of the underlying node (stable while it lives).
    fn _id(slf: &Bound<'_, Self>) -> u64 {
        Self::__hash__(slf)
    }
}

#[pymethods]
impl PyAccumulateGrad {
    /// Returns the name of this node, as torch names it.
    fn name(&self) -> &'static str {
        "torch::autograd::AccumulateGrad"
    }
    /// torch numbers no AccumulateGrad node: the largest u64.
    fn _sequence_nr(&self) -> u64 {
        u64::MAX
    }
    /// The leaf tensor whose `.grad` this node accumulates into.
    #[getter]
    fn variable(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap_cached(py, &self.leaf)
    }
    /// Always empty: a leaf's node has no inputs.
    #[getter]
    fn next_functions(&self, py: Python<'_>) -> PyResult<Py<PyTuple>> {
        Ok(PyTuple::empty(py).unbind())
    }
    /// `<AccumulateGrad object at 0x...>`, as torch prints it.
    fn __repr__(slf: &Bound<'_, Self>) -> String {
        format!("<AccumulateGrad object at {:#x}>", slf.as_ptr() as usize)
    }
}

/// The custom Function behind `node`, if it is one's node.
fn custom_function(node: &NodeRef) -> Option<&super::function::PyFunctionBackward> {
    let crate::ops::BackwardOp::Custom(op) = node.op() else {
        return None;
    };
    op.as_any()
        .and_then(|a| a.downcast_ref::<super::function::PyFunctionBackward>())
}

/// Whether `node` is the backward of an `autograd.Function` defined outside rgrad (its
/// class's module does not start with `rgrad.`).
fn user_function(py: Python<'_>, node: &NodeRef) -> PyResult<bool> {
    let Some(f) = custom_function(node) else {
        return Ok(false);
    };
    let ctx = f.ctx.bind(py);
    let Ok(cls) = ctx.getattr("_forward_cls") else {
        return Ok(false);
    };
    let module: String = cls.getattr("__module__")?.extract()?;
    Ok(!module.starts_with("rgrad."))
}

/// `_C._reaches_other_leaves(t, own, clean, user_functions)`: whether the graph of `t`
/// reaches a leaf that is not among `own`'s values (tensors), walking the edges that
/// `next_functions` lists (rgrad.func's test of whether a transform's result depends on
/// anything outside the transform). With `user_functions`, a user-defined
/// `autograd.Function` in the graph counts as such a leaf. `clean` (a set of node ids, as
/// `Node._id()`) holds nodes known to reach only `own` leaves: they are not walked again,
/// and a walk that finds no other leaf adds its nodes to it. A tensor without a graph
/// "reaches" itself.
#[pyfunction]
pub fn _reaches_other_leaves(
    py: Python<'_>,
    t: PyRef<'_, super::pytensor::PyTensor>,
    own: &Bound<'_, pyo3::types::PyDict>,
    clean: &Bound<'_, pyo3::types::PySet>,
    user_functions: bool,
) -> PyResult<bool> {
    let mut leaves: Vec<Tensor> = Vec::with_capacity(own.len());
    for v in own.values().iter() {
        leaves.push(v.cast::<super::pytensor::PyTensor>()?.get().t.clone());
    }
    let is_own = |leaf: &Tensor| leaves.iter().any(|o| o.same(leaf));
    crate::ops::refresh_view(&t.t)?;
    crate::autograd::node_hooks::fire_pending()?;
    let Some(root) = t.t.grad_fn() else {
        return Ok(!is_own(&t.t));
    };
    if clean.contains(root.id())? {
        return Ok(false);
    }
    if user_functions && user_function(py, &root)? {
        return Ok(true);
    }
    let mut seen: std::collections::HashSet<u64> = std::collections::HashSet::from([root.id()]);
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        for edge in shown_edges(&node).into_iter().flatten() {
            match edge {
                Edge::Leaf(leaf) => {
                    if !is_own(&leaf) {
                        return Ok(true);
                    }
                }
                Edge::Node { node: next, .. } => {
                    let id = next.id();
                    if seen.contains(&id) || clean.contains(id)? {
                        continue;
                    }
                    if user_functions && user_function(py, &next)? {
                        return Ok(true);
                    }
                    seen.insert(id);
                    stack.push(next);
                }
            }
        }
    }
    for id in seen {
        clean.add(id)?;
    }
    Ok(false)
}
