//! `rgrad.autograd.graph`'s native half: node hooks (`Node.register_hook` /
//! `register_prehook`, also on AccumulateGrad), `Node.metadata`, saved-tensor hooks
//! (`_push_saved_tensors_default_hooks` and the rest of torch's `torch._C._autograd`
//! functions, `_make_saved_tensor` / `SavedTensor`), the engine queries that
//! `register_multi_grad_hook` and checkpoint use (`_current_graph_task_id`,
//! `_will_engine_execute_node`, `_is_checkpoint_valid`), `_increment_version`, and the
//! clone-before-mutate hook of `allow_mutation_on_saved_tensors`.
//!
//! Python hooks are called from whatever thread runs the node, with the GIL taken only
//! around the call (`gil::attach`); what they return is checked here with torch's
//! messages (python_hook.cpp's `check_result`), and the core only swaps the gradients.

use super::convert;
use super::error::external;
use super::gil;
use super::node::{PyAccumulateGrad, PyNode};
use super::pytensor::{PyTensor, wrap_cached};
use crate::autograd::function::SavedField;
use crate::autograd::graph::{HookGrads, NodePostHook, NodePreHook, NodeRef, WeakNodeRef};
use crate::autograd::hooks;
use crate::autograd::saved_hooks::{self, PackedTensor, SavedTensorHooks};
use crate::dtype::Scalar;
use crate::tensor::{Tensor, TensorImpl};
use crate::{Error, Result};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::sync::{Arc, Weak};

// ---- node hooks ------------------------------------------------------------------------

/// torch's `hook_name`: the hook's `__name__`, else `<unknown>`.
fn hook_name(py: Python<'_>, f: &Py<PyAny>) -> String {
    f.bind(py)
        .getattr("__name__")
        .and_then(|n| n.extract::<String>())
        .unwrap_or_else(|_| "<unknown>".into())
}

/// Gradients as the tuple a node hook is given (None for a missing one).
fn grads_tuple<'py>(py: Python<'py>, grads: &[Option<Tensor>]) -> PyResult<Bound<'py, PyTuple>> {
    let items: Vec<Py<PyAny>> = grads
        .iter()
        .map(|g| match g {
            Some(t) => Ok(super::pytensor::wrap(py, t.clone())?.into_any()),
            None => Ok(py.None()),
        })
        .collect::<PyResult<_>>()?;
    PyTuple::new(py, items)
}

/// torch's `check_result` of what a node hook returned in place of `prev`: `None` (or
/// `prev` itself) keeps the gradients; else a tuple as long as `prev` whose items are
/// None or tensors of each gradient's dtype and shape.
fn hook_result(
    py: Python<'_>,
    f: &Py<PyAny>,
    prev: &Bound<'_, PyTuple>,
    prev_grads: &[Option<Tensor>],
    res: &Bound<'_, PyAny>,
) -> Result<Option<HookGrads>> {
    if res.is_none() || res.is(prev) {
        return Ok(None);
    }
    let Ok(tuple) = res.cast::<PyTuple>() else {
        return Err(Error::Type(format!(
            "expected tuple, but hook returned '{}'",
            convert::type_name(res)
        )));
    };
    if tuple.len() != prev.len() {
        return Err(Error::runtime(format!(
            "hook '{}' has returned an incorrect number of values (got {}, but expected {})",
            hook_name(py, f),
            tuple.len(),
            prev.len()
        )));
    }
    let mut out = HookGrads::with_capacity(tuple.len());
    for (item, old) in tuple.iter().zip(prev_grads) {
        if item.is_none() {
            out.push(None);
            continue;
        }
        let Some(old) = old else {
            return Err(Error::runtime(
                "can't replace a None gradient with a non-None value",
            ));
        };
        let new = match item.cast::<PyTensor>() {
            Ok(t) => t.get().t.clone(),
            Err(_) => {
                return Err(Error::Type(format!(
                    "expected Variable, but hook returned '{}'",
                    convert::type_name(&item)
                )));
            }
        };
        hooks::check_hook_result(old, &new, || hook_name(py, f))?;
        out.push(Some(new));
    }
    Ok(Some(out))
}

/// A Python callable as a node pre-hook: `f(grad_outputs)`.
fn py_prehook(f: Py<PyAny>) -> NodePreHook {
    Arc::new(move |grads: &[Option<Tensor>]| {
        gil::attach(|py| {
            let args = grads_tuple(py, grads).map_err(external)?;
            let res = f.call1(py, (args.clone(),)).map_err(external)?;
            hook_result(py, &f, &args, grads, res.bind(py))
        })
    })
}

/// A Python callable as a node post-hook: `f(grad_inputs, grad_outputs)`.
fn py_posthook(f: Py<PyAny>) -> NodePostHook {
    Arc::new(
        move |grad_inputs: &[Option<Tensor>], grad_outputs: &[Option<Tensor>]| {
            gil::attach(|py| {
                let gi = grads_tuple(py, grad_inputs).map_err(external)?;
                let go = grads_tuple(py, grad_outputs).map_err(external)?;
                let res = f.call1(py, (gi.clone(), go)).map_err(external)?;
                hook_result(py, &f, &gi, grad_inputs, res.bind(py))
            })
        },
    )
}

/// What a hook handle removes its hook from, held weakly (a handle does not keep a graph
/// or a leaf alive, as torch's handle holds its hooks' dict weakly).
#[pyclass(name = "_NodeHookOwner", module = "rgrad._C", frozen)]
pub struct PyNodeHookOwner {
    owner: HookOwner,
}

enum HookOwner {
    Node(WeakNodeRef),
    Leaf(Weak<TensorImpl>),
}

#[pymethods]
impl PyNodeHookOwner {
    /// Removes the hook `id` (a no-op once it is gone, or its node is).
    fn _remove_hook(&self, id: u64) {
        match &self.owner {
            HookOwner::Node(w) => {
                if let Some(n) = w.upgrade() {
                    hooks::remove_node_hook(&n, id);
                }
            }
            HookOwner::Leaf(w) => {
                if let Some(t) = Tensor::upgrade(w) {
                    hooks::remove_acc_hook(&t, id);
                }
            }
        }
    }
}

static HANDLE_CLASS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// A `RemovableHandle` for hook `id` of `owner`.
fn handle(py: Python<'_>, owner: HookOwner, id: u64) -> PyResult<Py<PyAny>> {
    let cls = HANDLE_CLASS.import(py, "rgrad.utils.hooks", "RemovableHandle")?;
    let owner = Py::new(py, PyNodeHookOwner { owner })?;
    Ok(cls.call1((owner, id))?.unbind())
}

/// The Python dict of `Node.metadata`, kept in the node for its life.
struct NodeMetadata(Py<PyDict>);

fn node_of(slf: &Bound<'_, PyNode>) -> PyResult<NodeRef> {
    slf.get().node().ok_or_else(|| {
        pyo3::exceptions::PyRuntimeError::new_err(
            "rgrad: this node is not (or no longer) part of a graph",
        )
    })
}

static INPUT_METADATA: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `_input_metadata`: one entry per output of the node (its gradient's shape and dtype).
fn input_metadata(
    py: Python<'_>,
    metas: &[(Vec<usize>, crate::dtype::DType)],
) -> PyResult<Py<PyList>> {
    let make = INPUT_METADATA.import(py, "rgrad.autograd.graph", "_input_metadata")?;
    let items: Vec<Py<PyAny>> = metas
        .iter()
        .map(|(shape, dtype)| {
            let d = super::pytensor::PyDType { d: *dtype };
            Ok(make.call1((PyTuple::new(py, shape)?, d))?.unbind())
        })
        .collect::<PyResult<_>>()?;
    Ok(PyList::new(py, items)?.unbind())
}

#[pymethods]
impl PyNode {
    /// Registers a backward hook, called with `(grad_inputs, grad_outputs)` every time
    /// the node's gradients are computed; it may return new grad_inputs. Returns a handle
    /// whose `remove()` removes it.
    fn register_hook(slf: &Bound<'_, Self>, hook: Py<PyAny>) -> PyResult<Py<PyAny>> {
        let node = node_of(slf)?;
        let id = hooks::register_node_posthook(&node, py_posthook(hook));
        handle(slf.py(), HookOwner::Node(node.downgrade()), id)
    }
    /// Registers a backward pre-hook, called with `grad_outputs` before the node's
    /// gradients are computed; it may return new grad_outputs. Returns a handle whose
    /// `remove()` removes it.
    fn register_prehook(slf: &Bound<'_, Self>, hook: Py<PyAny>) -> PyResult<Py<PyAny>> {
        let node = node_of(slf)?;
        let id = hooks::register_node_prehook(&node, py_prehook(hook));
        handle(slf.py(), HookOwner::Node(node.downgrade()), id)
    }
    /// A dict kept with the node for its life (the same dict on every access).
    #[getter]
    fn metadata(slf: &Bound<'_, Self>) -> PyResult<Py<PyDict>> {
        let py = slf.py();
        let node = node_of(slf)?;
        let existing = node.lock().metadata();
        if let Some(m) = existing
            .as_ref()
            .and_then(|m| m.downcast_ref::<NodeMetadata>())
        {
            return Ok(m.0.clone_ref(py));
        }
        let d = PyDict::new(py).unbind();
        node.lock()
            .set_metadata(Arc::new(NodeMetadata(d.clone_ref(py))));
        Ok(d)
    }
    /// The shape and dtype of each output's gradient.
    #[getter]
    fn _input_metadata(slf: &Bound<'_, Self>) -> PyResult<Py<PyList>> {
        let node = node_of(slf)?;
        let metas: Vec<_> = node
            .lock()
            .outputs
            .iter()
            .map(|m| (m.shape.to_vec(), m.dtype))
            .collect();
        input_metadata(slf.py(), &metas)
    }
}

#[pymethods]
impl PyAccumulateGrad {
    /// Registers a hook called after the gradient is accumulated into the leaf's `.grad`,
    /// with `(grad_inputs=(), grad_outputs=(grad,))`. Returns a removable handle.
    fn register_hook(&self, py: Python<'_>, hook: Py<PyAny>) -> PyResult<Py<PyAny>> {
        let id = hooks::register_acc_posthook(&self.leaf, py_posthook(hook));
        handle(py, HookOwner::Leaf(self.leaf.downgrade()), id)
    }
    /// Registers a hook called with `(grad,)` before the gradient is accumulated; it may
    /// return a new `(grad,)`. Returns a removable handle.
    fn register_prehook(&self, py: Python<'_>, hook: Py<PyAny>) -> PyResult<Py<PyAny>> {
        let id = hooks::register_acc_prehook(&self.leaf, py_prehook(hook));
        handle(py, HookOwner::Leaf(self.leaf.downgrade()), id)
    }
    /// A dict kept with this node object (the same dict on every access).
    #[getter]
    fn metadata(&self, py: Python<'_>) -> Py<PyDict> {
        self.metadata
            .get_or_init(py, || PyDict::new(py).unbind())
            .clone_ref(py)
    }
    /// The shape and dtype of the leaf's gradient.
    #[getter]
    fn _input_metadata(&self, py: Python<'_>) -> PyResult<Py<PyList>> {
        let (shape, dtype) = (self.leaf.shape().to_vec(), self.leaf.dtype());
        input_metadata(py, &[(shape, dtype)])
    }
}

// ---- saved-tensor hooks ----------------------------------------------------------------

/// A pack / unpack pair of Python callables.
struct PyHooks {
    pack: Py<PyAny>,
    unpack: Py<PyAny>,
}

/// What a Python pack hook returned, with the unpack hook to give it to.
struct PyPacked {
    data: Py<PyAny>,
    unpack: Py<PyAny>,
}

impl SavedTensorHooks for PyHooks {
    fn pack(&self, t: &Tensor) -> Result<Arc<dyn PackedTensor>> {
        gil::attach(|py| {
            let arg = wrap_cached(py, t).map_err(external)?;
            let data = self.pack.call1(py, (arg,)).map_err(external)?;
            Ok(Arc::new(PyPacked {
                data,
                unpack: self.unpack.clone_ref(py),
            }) as Arc<dyn PackedTensor>)
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl PackedTensor for PyPacked {
    fn unpack(&self) -> Result<Tensor> {
        gil::attach(|py| {
            let r = self
                .unpack
                .call1(py, (self.data.clone_ref(py),))
                .map_err(external)?;
            match r.bind(py).cast::<PyTensor>() {
                Ok(t) => Ok(t.get().t.clone()),
                Err(_) => Err(Error::Type(format!(
                    "Output of saved tensor unpack_hook expected to be a Tensor but got result of type {}",
                    convert::type_name(r.bind(py))
                ))),
            }
        })
    }
}

/// Pushes a pack / unpack pair on this thread's stack of saved-tensor hooks.
#[pyfunction]
pub fn _push_saved_tensors_default_hooks(
    pack_hook: Py<PyAny>,
    unpack_hook: Py<PyAny>,
) -> PyResult<()> {
    Ok(saved_hooks::push(Arc::new(PyHooks {
        pack: pack_hook,
        unpack: unpack_hook,
    }))?)
}

/// Pops this thread's innermost pair of saved-tensor hooks.
#[pyfunction]
pub fn _pop_saved_tensors_default_hooks() -> PyResult<()> {
    saved_hooks::pop()?;
    Ok(())
}

/// The innermost `(pack_hook, unpack_hook)` pair of this thread, or None.
#[pyfunction]
#[pyo3(signature = (ignore_is_tracing=false))]
pub fn _top_saved_tensors_default_hooks(
    py: Python<'_>,
    ignore_is_tracing: bool,
) -> Option<(Py<PyAny>, Py<PyAny>)> {
    let _ = ignore_is_tracing;
    let top = saved_hooks::top()?;
    let h = top.as_any().downcast_ref::<PyHooks>()?;
    Some((h.pack.clone_ref(py), h.unpack.clone_ref(py)))
}

/// Disables saved-tensor hooks on this thread: pushing a pair raises `error_message`
/// (as does disabling while a pair is pushed, with `fail_if_non_empty`).
#[pyfunction]
#[pyo3(signature = (error_message, fail_if_non_empty=true))]
pub fn _saved_tensors_hooks_disable(error_message: &str, fail_if_non_empty: bool) -> PyResult<()> {
    Ok(saved_hooks::disable(error_message, fail_if_non_empty)?)
}

/// Enables saved-tensor hooks on this thread again.
#[pyfunction]
pub fn _saved_tensors_hooks_enable() {
    saved_hooks::enable()
}

/// Whether saved-tensor hooks are enabled on this thread.
#[pyfunction]
pub fn _saved_tensors_hooks_is_enabled() -> bool {
    saved_hooks::is_enabled()
}

/// The message saved-tensor hooks were disabled with, or None.
#[pyfunction]
pub fn _saved_tensors_hooks_get_disabled_error_message() -> Option<String> {
    saved_hooks::disabled_message()
}

/// A tensor saved for backward outside any node (torch's `SavedVariable`): `unpack()`
/// gives it back, checked against in-place changes (or through the unpack hook it was
/// packed with).
#[pyclass(name = "SavedTensor", module = "rgrad._C", frozen)]
pub struct PySavedTensor {
    saved: crate::autograd::graph::SavedTensor,
}

#[pymethods]
impl PySavedTensor {
    /// The saved tensor.
    fn unpack(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let s = &self.saved;
        let t = gil::detach(py, || crate::autograd::graph::unpack_unowned(s))?;
        wrap_cached(py, &t)
    }
}

/// Saves `tensor` as a node would (through the current saved-tensor hooks, if any).
#[pyfunction]
#[pyo3(signature = (tensor, is_output))]
pub fn _make_saved_tensor(tensor: PyRef<'_, PyTensor>, is_output: bool) -> PyResult<PySavedTensor> {
    if is_output {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(
            "rgrad: _make_saved_tensor supports is_output=False only",
        ));
    }
    let t = tensor.t.clone();
    let saved = saved_hooks::make_saved(&t)?;
    Ok(PySavedTensor { saved })
}

// ---- a node's saved fields (`grad_fn._saved_self`) ---------------------------------------

/// The `_saved_<name>` fields of `node`'s op, as torch's generated node has them.
fn saved_fields(node: &NodeRef) -> Vec<(&'static str, SavedField)> {
    node.op().as_backward().saved_fields()
}

/// The names of `node`'s saved fields, each with whether it is a tensor (which also has a
/// `_raw_saved_<name>`).
#[pyfunction]
pub fn _node_saved_names(node: &Bound<'_, PyNode>) -> PyResult<Vec<(String, bool)>> {
    let n = node_of(node)?;
    Ok(saved_fields(&n)
        .into_iter()
        .map(|(k, f)| (k.to_string(), matches!(f, SavedField::Tensor(_))))
        .collect())
}

/// `node._saved_<name>` (`raw`: `node._raw_saved_<name>`, a SavedTensor).
#[pyfunction]
pub fn _node_saved_field(
    py: Python<'_>,
    node: &Bound<'_, PyNode>,
    name: &str,
    raw: bool,
) -> PyResult<Py<PyAny>> {
    let n = node_of(node)?;
    let field = saved_fields(&n).into_iter().find(|(k, _)| *k == name);
    let no_such = || {
        let tn = node
            .get_type()
            .name()
            .map(|s| s.to_string())
            .unwrap_or_default();
        let prefix = if raw { "_raw_saved_" } else { "_saved_" };
        pyo3::exceptions::PyAttributeError::new_err(format!(
            "'{tn}' object has no attribute '{prefix}{name}'"
        ))
    };
    let Some((_, field)) = field else {
        return Err(no_such());
    };
    let number = |s: Scalar| -> PyResult<Py<PyAny>> {
        Ok(match s {
            Scalar::Bool(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
            Scalar::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
            Scalar::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
        })
    };
    match field {
        SavedField::Tensor(i) if raw => Ok(Py::new(
            py,
            PyNodeSavedTensor {
                node: n.clone(),
                index: i,
            },
        )?
        .into_any()),
        _ if raw => Err(no_such()),
        SavedField::Tensor(None) | SavedField::None => Ok(py.None()),
        SavedField::Tensor(Some(i)) => {
            let (slot, released) = {
                let g = n.lock();
                (g.saved.get(usize::from(i)).cloned(), g.released)
            };
            let t = match slot {
                Some(s) if !released => gil::detach(py, || {
                    crate::autograd::function::unpack_saved(&n, &s, released)
                })?,
                _ => return Err(Error::GraphFreed.into()),
            };
            wrap_cached(py, &t)
        }
        // (torch's wrapped number: a 0-dim tensor of the number's own type)
        SavedField::Number(s) => {
            let t = match s {
                Scalar::Bool(b) => {
                    crate::ops::full(&[], Scalar::Bool(b), crate::dtype::DType::Bool)
                }
                Scalar::Int(i) => crate::ops::full(&[], Scalar::Int(i), crate::dtype::DType::I64),
                Scalar::Float(f) => {
                    crate::ops::full(&[], Scalar::Float(f), crate::dtype::DType::F64)
                }
            }?;
            Ok(super::pytensor::wrap(py, t)?.into_any())
        }
        SavedField::Scalar(s) => number(s),
        SavedField::Int(i) => Ok(i.into_pyobject(py)?.into_any().unbind()),
        SavedField::Int64Bits(i) => Ok((i as u64).into_pyobject(py)?.into_any().unbind()),
        SavedField::Bool(b) => Ok(b.into_pyobject(py)?.to_owned().into_any().unbind()),
        SavedField::Str(s) => Ok(s.into_pyobject(py)?.into_any().unbind()),
        SavedField::Ints(v) => Ok(PyTuple::new(py, v)?.into_any().unbind()),
    }
}

/// `node._raw_saved_<name>`: torch's `SavedTensor` of a node's saved tensor, whose
/// `register_hooks(pack_hook, unpack_hook)` packs it now and unpacks it through the
/// hooks when it is read (by backward or `_saved_<name>`).
#[pyclass(name = "_NodeSavedTensor", module = "rgrad._C", frozen)]
pub struct PyNodeSavedTensor {
    node: NodeRef,
    index: Option<u8>,
}

#[pymethods]
impl PyNodeSavedTensor {
    /// Packs the saved tensor with `pack_hook` now; `unpack_hook` gives it back when read.
    fn register_hooks(
        &self,
        py: Python<'_>,
        pack_hook: Py<PyAny>,
        unpack_hook: Py<PyAny>,
    ) -> PyResult<()> {
        for (f, what) in [(&pack_hook, "pack_hook"), (&unpack_hook, "unpack_hook")] {
            if !f.bind(py).is_callable() {
                return Err(PyTypeError::new_err(format!(
                    "register_hooks(): {what} must be callable, got {}",
                    convert::type_name(f.bind(py))
                )));
            }
        }
        let hooks = Arc::new(PyHooks {
            pack: pack_hook,
            unpack: unpack_hook,
        });
        let (node, index) = (&self.node, self.index);
        Ok(gil::detach(py, || {
            saved_hooks::pack_saved_slot(node, index, hooks)
        })?)
    }
}

// ---- node-creation hooks ------------------------------------------------------------------

/// A hook of `node_creation_hook`: a Python callable given each node made.
struct PyNodeCreationHook(Py<PyAny>);

/// The AccumulateGrad objects a node made under a node-creation hook keeps alive (as
/// torch's graph holds its AccumulateGrad nodes): a leaf's shows up again only once the
/// graphs made under hooks that reach it are gone, and the user holds none of it.
struct KeptAccumulators(#[allow(dead_code)] Vec<Py<PyAny>>);

/// The core's firer (`node_hooks::set_firer`): for each leaf `node` is wired to whose
/// AccumulateGrad object is made now, every hook with that object; then every hook with
/// the node's object (outermost first, as torch).
pub fn fire_node_creation_hooks(
    hooks: &[crate::autograd::node_hooks::Hook],
    node: &NodeRef,
) -> Result<()> {
    let leaves = node.lock().leaf_edges();
    gil::attach(|py| {
        let call = |obj: &Py<PyAny>| -> Result<()> {
            for h in hooks {
                if let Some(h) = h.downcast_ref::<PyNodeCreationHook>() {
                    h.0.call1(py, (obj.clone_ref(py),)).map_err(external)?;
                }
            }
            Ok(())
        };
        let mut kept = Vec::with_capacity(leaves.len());
        for leaf in leaves.iter().filter(|l| l.requires_grad()) {
            let (acc, made) =
                super::node::accumulate_grad_object_made(py, leaf).map_err(external)?;
            if made {
                call(&acc)?;
            }
            kept.push(acc);
        }
        if !kept.is_empty() {
            node.lock().set_keep(Arc::new(KeptAccumulators(kept)));
        }
        let obj = super::node::node_object(py, node.clone()).map_err(external)?;
        call(&obj)
    })
}

/// Pushes a hook on this thread's stack of node-creation hooks.
#[pyfunction]
pub fn _push_node_creation_hook(hook: Py<PyAny>) {
    crate::autograd::node_hooks::push(Arc::new(PyNodeCreationHook(hook)));
}

/// Pops this thread's innermost node-creation hook.
#[pyfunction]
pub fn _pop_node_creation_hook() -> PyResult<()> {
    crate::autograd::node_hooks::pop()?;
    Ok(())
}

// ---- final callbacks and the executor's threads ---------------------------------------------

/// `queue_callback`: `callback` runs once the backward this thread is running a node of
/// has run them all (torch's `Variable._execution_engine.queue_callback`).
#[pyfunction]
pub fn _queue_callback(callback: Py<PyAny>) -> PyResult<()> {
    let cb: crate::autograd::engine::Callback =
        Arc::new(move || gil::attach(|py| callback.call0(py).map(drop).map_err(external)));
    Ok(crate::autograd::engine::queue_callback(cb)?)
}

/// `_set_multithreading_enabled`: off, this thread's backward calls run on it alone.
#[pyfunction]
pub fn _set_multithreading_enabled(mode: bool) {
    crate::autograd::engine::set_multithreading_enabled(mode);
}

/// `_is_multithreading_enabled`.
#[pyfunction]
pub fn _is_multithreading_enabled() -> bool {
    crate::autograd::engine::is_multithreading_enabled()
}

// ---- engine queries ---------------------------------------------------------------------

/// The id of the backward call this thread is running (inside hooks and custom
/// backwards), or -1.
#[pyfunction]
pub fn _current_graph_task_id() -> i64 {
    crate::autograd::engine::current_task_id()
}

/// Whether the running backward will execute `node` (a grad_fn or AccumulateGrad).
#[pyfunction]
pub fn _will_engine_execute_node(node: &Bound<'_, PyAny>) -> PyResult<bool> {
    // (an AccumulateGrad is a Node too: asked first)
    if let Ok(a) = node.cast::<PyAccumulateGrad>() {
        return Ok(crate::autograd::engine::will_execute_leaf(&a.get().leaf)?);
    }
    if let Ok(n) = node.cast::<PyNode>() {
        let Some(n) = n.get().node() else {
            return Ok(false);
        };
        return Ok(crate::autograd::engine::will_execute_node(&n)?);
    }
    Err(PyTypeError::new_err(format!(
        "_will_engine_execute_node expects an grad_fn, got {}",
        convert::type_name(node)
    )))
}

/// Whether a reentrant checkpoint may run here (not inside a backward given `inputs`).
#[pyfunction]
pub fn _is_checkpoint_valid() -> bool {
    crate::autograd::engine::is_checkpoint_valid()
}

/// Bumps each tensor's version counter (as an in-place op would).
#[pyfunction]
pub fn _increment_version(tensors: &Bound<'_, PyAny>) -> PyResult<()> {
    for t in tensors.try_iter()? {
        let t = t?;
        let t = convert::tensor_arg(&t, "_increment_version", "tensor", 0)?;
        t.bump_version();
    }
    Ok(())
}

/// The AccumulateGrad node of a leaf that requires grad.
#[pyfunction]
pub fn _grad_accumulator(
    py: Python<'_>,
    tensor: PyRef<'_, PyTensor>,
) -> PyResult<Option<Py<PyAny>>> {
    let t = &tensor.t;
    if !t.is_leaf() || !t.requires_grad() {
        return Ok(None);
    }
    Ok(Some(super::node::accumulate_grad_object(
        py,
        &t.leaf_target(),
    )?))
}

// ---- allow_mutation_on_saved_tensors ----------------------------------------------------

/// Installs `fn(tensor)` on this thread, called before any in-place op writes a tensor.
#[pyfunction]
pub fn _push_mutation_hook(hook: Py<PyAny>) {
    saved_hooks::push_mutation_hook(Arc::new(move |t: &Tensor| {
        gil::attach(|py| {
            let arg = wrap_cached(py, t).map_err(external)?;
            hook.call1(py, (arg,)).map_err(external)?;
            Ok(())
        })
    }));
}

/// Removes this thread's innermost mutation hook.
#[pyfunction]
pub fn _pop_mutation_hook() -> PyResult<()> {
    Ok(saved_hooks::pop_mutation_hook()?)
}

/// Parses a `GradientEdge` (node, output_nr) into a graph edge.
pub(crate) fn gradient_edge(obj: &Bound<'_, PyAny>) -> PyResult<crate::autograd::graph::Edge> {
    let node = obj.get_item(0)?;
    let nr: u32 = obj.get_item(1)?.extract()?;
    if let Ok(a) = node.cast::<PyAccumulateGrad>() {
        return Ok(crate::autograd::graph::Edge::Leaf(a.get().leaf.clone()));
    }
    if let Ok(n) = node.cast::<PyNode>() {
        let n = n.get().node().ok_or_else(|| {
            pyo3::exceptions::PyRuntimeError::new_err("GradientEdge's node is no longer alive")
        })?;
        return Ok(crate::autograd::graph::Edge::Node {
            node: n,
            input_nr: nr,
        });
    }
    Err(PyTypeError::new_err(format!(
        "GradientEdge's first object must be an autograd.graph.Node but got {}",
        convert::type_name(&node)
    )))
}

// ---- op log (checkpoint's debug mode) ---------------------------------------------------

thread_local! {
    /// This thread's op loggers (innermost last), and whether one is running now.
    static OP_LOGS: std::cell::RefCell<Vec<Arc<Py<PyAny>>>> = const { std::cell::RefCell::new(Vec::new()) };
    static OP_LOG_BUSY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// How many op loggers are pushed (all threads), and whether the dispatch hook slot is
/// ours (installed by the first push into an empty slot).
static OP_LOG_STATE: parking_lot::Mutex<(usize, bool)> = parking_lot::Mutex::new((0, false));

/// The dispatch point's observer behind `_push_op_log`: every forward op started on a
/// thread with a logger is reported to it by name.
struct OpLog;

impl crate::dispatch::Hook for OpLog {
    fn start(&self, op: &crate::dispatch::OpStart<'_>) -> u64 {
        if op.phase != crate::dispatch::Phase::Forward {
            return 0;
        }
        let Some(f) = OP_LOGS.with(|l| l.borrow().last().cloned()) else {
            return 0;
        };
        if OP_LOG_BUSY.with(|b| b.replace(true)) {
            return 0;
        }
        gil::attach(|py| {
            if let Err(e) = f.call1(py, (op.name,)) {
                e.write_unraisable(py, None);
            }
        });
        OP_LOG_BUSY.with(|b| b.set(false));
        0
    }
    fn end(
        &self,
        _token: u64,
        _outputs: std::result::Result<&[Option<Tensor>], &Error>,
    ) -> Result<()> {
        Ok(())
    }
}

/// Calls `record(op_name)` for every op run on this thread until `_pop_op_log`.
#[pyfunction]
pub fn _push_op_log(record: Py<PyAny>) {
    OP_LOGS.with(|l| l.borrow_mut().push(Arc::new(record)));
    let mut st = OP_LOG_STATE.lock();
    if st.0 == 0 {
        // (the slot is taken only if free: another observer keeps its place)
        let prev = crate::dispatch::set_hook(Some(Arc::new(OpLog)));
        if let Some(p) = prev {
            crate::dispatch::set_hook(Some(p));
            st.1 = false;
        } else {
            st.1 = true;
        }
    }
    st.0 += 1;
}

/// Removes this thread's innermost op logger.
#[pyfunction]
pub fn _pop_op_log() -> PyResult<()> {
    let popped = OP_LOGS.with(|l| l.borrow_mut().pop());
    if popped.is_none() {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(
            "no op log to pop",
        ));
    }
    let mut st = OP_LOG_STATE.lock();
    st.0 = st.0.saturating_sub(1);
    if st.0 == 0 && st.1 {
        crate::dispatch::set_hook(None);
        st.1 = false;
    }
    Ok(())
}
