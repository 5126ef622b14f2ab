//! Custom autograd Functions: `Function.apply` and the graph node whose backward calls
//! the user's Python `backward` (python/rgrad/autograd/function.py has the Python side).
//!
//! One `apply` is one call into Rust: it builds the ctx, runs `forward` with grad mode
//! off, records ONE node and wires the outputs to it. The ctx object is also the node's
//! Python face (`y.grad_fn is ctx`, type `<Name>Backward`, as in torch). The node owns
//! the ctx (its backward needs it); the ctx reaches the node through a weak reference.
//!
//! What a call does to the graph, and the checks on what backward returns, are the core's
//! (`autograd::custom_function`): this file calls the user's code and converts.
//!
//! Threads: the engine runs the node on a worker thread with the GIL released; the
//! node takes the GIL only around the Python call, and validates and reduces the
//! returned gradients after letting it go.

use super::convert;
use super::error::external;
use super::node::PyNode;
use super::pytensor::{PyTensor, wrap, wrap_cached};
use crate::Result;
use crate::autograd::custom_function::{
    self as custom, CtxMarks, InputFlags, ReturnedGrad, WrappedOutputs,
};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::autograd::grad_mode::with_grad_mode;
use crate::autograd::graph::{OutputMeta, SavedTensor};
use crate::ops;
use crate::tensor::Tensor;
use parking_lot::Mutex;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use pyo3::{IntoPyObjectExt, PyClassInitializer, intern};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::sync::Arc;

/// The base of every custom Function and of its ctx/node objects (torch's
/// `torch._C._FunctionBase`). The ctx methods live here so that a Function call costs
/// no Python-level attribute traffic.
#[pyclass(name = "_FunctionBase", module = "rgrad._C", extends = PyNode, subclass, dict, frozen)]
pub struct PyFunctionBase {
    st: Mutex<CtxState>,
}

struct CtxState {
    /// What `mark_dirty`, `mark_non_differentiable` and `save_for_backward` were given
    /// (until `apply` hands them to the core; `to_save` is given back when the call
    /// recorded no node).
    marks: CtxMarks,
    /// After `apply`: for each saved slot, its index in the node's saved list.
    saved_slots: SmallVec<[Option<u32>; 2]>,
    materialize_grads: bool,
    needs_input_grad: Option<Py<PyTuple>>,
    /// While the node's backward runs: the saved tensors the engine handed it (the node's
    /// own list may already be cleared when the graph is not retained).
    in_backward: Option<(SmallVec<[SavedTensor; 2]>, bool)>,
    /// While the Function's `jvp` runs: what `save_for_forward` kept, which
    /// `saved_tensors` then returns (as torch's does).
    in_jvp: Option<Py<PyTuple>>,
}

impl Default for CtxState {
    fn default() -> Self {
        CtxState {
            marks: CtxMarks::default(),
            saved_slots: SmallVec::new(),
            materialize_grads: true,
            needs_input_grad: None,
            in_backward: None,
            in_jvp: None,
        }
    }
}

fn tensors_of(args: &Bound<'_, PyTuple>, what: &str) -> PyResult<SmallVec<[Tensor; 1]>> {
    args.iter()
        .enumerate()
        .map(|(i, a)| match a.cast::<PyTensor>() {
            Ok(t) => Ok(t.get().t.clone()),
            Err(_) => Err(PyTypeError::new_err(format!(
                "{what} can only accept variables, but argument {i} is of type {}",
                convert::type_name(&a)
            ))),
        })
        .collect()
}

#[pymethods]
impl PyFunctionBase {
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(
        _args: &Bound<'_, PyTuple>,
        _kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyClassInitializer<Self> {
        PyClassInitializer::from(PyNode::unattached()).add_subclass(PyFunctionBase {
            st: Mutex::new(CtxState::default()),
        })
    }

    /// Saves tensors (or None) for backward; read them back with `saved_tensors`.
    /// Call it at most once, in `forward` (or `setup_context`).
    #[pyo3(signature = (*tensors))]
    fn save_for_backward(&self, tensors: &Bound<'_, PyTuple>) -> PyResult<()> {
        let mut out = SmallVec::with_capacity(tensors.len());
        for (i, a) in tensors.iter().enumerate() {
            if a.is_none() {
                out.push(None);
            } else if let Ok(t) = a.cast::<PyTensor>() {
                out.push(Some(t.get().t.clone()));
            } else {
                return Err(PyTypeError::new_err(format!(
                    "save_for_backward can only save variables, but argument {i} is of type {}",
                    convert::type_name(&a)
                )));
            }
        }
        self.st.lock().marks.to_save = Some(out);
        Ok(())
    }

    /// For `rgrad.autograd.function._forward_ad_jvp`: what `saved_tensors` returns while
    /// the Function's `jvp` runs (`None` afterwards).
    fn _set_jvp_saved(&self, saved: Option<Py<PyTuple>>) {
        self.st.lock().in_jvp = saved;
    }

    /// The tensors given to `save_for_backward`, checked against in-place changes since.
    #[getter]
    fn saved_tensors(slf: &Bound<'_, Self>) -> PyResult<Py<PyTuple>> {
        let py = slf.py();
        let me = slf.get();
        if let Some(saved) = &me.st.lock().in_jvp {
            return Ok(saved.clone_ref(py));
        }
        let node = slf.as_super().get().node();
        let st = me.st.lock();
        let out: SmallVec<[Option<Tensor>; 2]> = match (&node, &st.marks.to_save) {
            // before apply has packed them (inside forward / setup_context), or when the
            // call recorded no node
            (_, Some(ts)) => ts.clone(),
            (Some(node), None) => {
                let from_node;
                let (saved, released): (&[SavedTensor], bool) = match &st.in_backward {
                    Some((s, r)) => (s, *r),
                    None => {
                        let n = node.lock();
                        from_node = (n.saved.clone(), n.released);
                        (&from_node.0, from_node.1)
                    }
                };
                custom::unpack_saved_slots(node, saved, released, &st.saved_slots)?
            }
            (None, None) => SmallVec::new(),
        };
        drop(st);
        let items: Vec<Py<PyAny>> = out
            .into_iter()
            .map(|t| match t {
                None => Ok(py.None()),
                Some(t) => wrap_cached(py, &t),
            })
            .collect::<PyResult<_>>()?;
        Ok(PyTuple::new(py, items)?.unbind())
    }

    /// Deprecated alias of `saved_tensors`.
    #[getter]
    fn saved_variables(slf: &Bound<'_, Self>) -> PyResult<Py<PyTuple>> {
        let py = slf.py();
        PyErr::warn(
            py,
            &py.get_type::<pyo3::exceptions::PyDeprecationWarning>(),
            c"'saved_variables' is deprecated; use 'saved_tensors'",
            1,
        )?;
        Self::saved_tensors(slf)
    }

    /// For each positional input of `forward`: whether it needs a gradient.
    #[getter]
    fn needs_input_grad(&self, py: Python<'_>) -> Py<PyAny> {
        match &self.st.lock().needs_input_grad {
            Some(t) => t.clone_ref(py).into_any(),
            None => py.None(),
        }
    }

    /// Marks inputs that `forward` modified in place (they must also be returned).
    #[pyo3(signature = (*args))]
    fn mark_dirty(&self, args: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.st.lock().marks.dirty = tensors_of(args, "mark_dirty")?;
        Ok(())
    }

    /// Marks outputs as not differentiable: they won't require grad, and their gradient
    /// in backward is zeros (or None without materialized grads).
    #[pyo3(signature = (*args))]
    fn mark_non_differentiable(&self, args: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.st.lock().marks.non_differentiable = tensors_of(args, "mark_non_differentiable")?;
        Ok(())
    }

    /// Whether backward gets zeros (True, the default) or None for outputs that
    /// received no gradient.
    fn set_materialize_grads(&self, value: bool) {
        self.st.lock().materialize_grads = value;
    }

    /// Whether undefined output gradients are materialized as zeros in backward.
    #[getter]
    fn materialize_grads(&self) -> bool {
        self.st.lock().materialize_grads
    }

    /// Applies the Function: runs `forward` with grad mode off and, when an input
    /// requires grad, records one node whose backward is the class's `backward`.
    #[classmethod]
    #[pyo3(signature = (*args, **kwargs))]
    fn apply(
        cls: &Bound<'_, PyType>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        if let Some(out) = vmap_apply(cls, args, kwargs)? {
            return Ok(out);
        }
        let name = || cls.name().map(|n| n.to_string()).unwrap_or_default();
        crate::dispatch::forward_named(name, || function_apply(cls, args, kwargs))
    }
}

/// While a vmap runs, the function `rgrad.func._vmap` installs here with
/// [`_set_vmap_apply`]: `apply` offers it every call first, and it runs the Function on
/// BatchedTensors (returning NotImplemented when no argument is batched). A `MyFn.apply`
/// bound before the vmap started reaches it too, which swapping the class attribute
/// would miss. Outside a vmap this costs one relaxed load.
static VMAP_APPLY: parking_lot::Mutex<Option<Py<PyAny>>> = parking_lot::Mutex::new(None);
static VMAP_APPLY_SET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn vmap_apply(
    cls: &Bound<'_, PyType>,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Option<Py<PyAny>>> {
    if !VMAP_APPLY_SET.load(std::sync::atomic::Ordering::Acquire) {
        return Ok(None);
    }
    let py = cls.py();
    let Some(hook) = VMAP_APPLY.lock().as_ref().map(|h| h.clone_ref(py)) else {
        return Ok(None);
    };
    let out = hook.bind(py).call1((cls, args, kwargs))?;
    Ok((!out.is(py.NotImplemented().bind(py))).then(|| out.unbind()))
}

/// Installs (or, with None, removes) the function custom Functions' `apply` offers its
/// calls to while a vmap runs (see `VMAP_APPLY`).
#[pyfunction]
pub fn _set_vmap_apply(hook: Option<Py<PyAny>>) {
    let set = hook.is_some();
    *VMAP_APPLY.lock() = hook;
    VMAP_APPLY_SET.store(set, std::sync::atomic::Ordering::Release);
}

static BIND_ARGS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn function_apply(
    cls: &Bound<'_, PyType>,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyAny>> {
    let py = cls.py();
    if crate::replay::active() {
        let name: String = cls.getattr(intern!(py, "__name__"))?.extract()?;
        crate::replay::refuse(&format!(
            "the custom autograd.Function '{name}' (Python code)"
        ))?;
    }
    let backward_cls = cls.getattr(intern!(py, "_backward_cls"))?;
    let forward = cls.getattr(intern!(py, "forward"))?;
    let setup_ctx = cls
        .getattr(intern!(py, "_setup_ctx_defined"))?
        .is_truthy()?;
    // New style: inputs are the bound arguments of forward, defaults included.
    let (args, kwargs) = if setup_ctx {
        let bind = BIND_ARGS.import(py, "rgrad.autograd.function", "_bind_default_args")?;
        let bound = bind.call1((&forward, args, kwargs))?;
        (bound.cast_into::<PyTuple>()?, None)
    } else {
        (args.clone(), kwargs.cloned())
    };
    let ctx_obj = backward_cls.call0()?;
    let ctx = ctx_obj.cast::<PyFunctionBase>().map_err(|_| {
        PyTypeError::new_err("a Function's _backward_cls must derive from _FunctionBase")
    })?;

    let inputs: SmallVec<[Option<Tensor>; 4]> = args
        .iter()
        .map(|a| a.cast::<PyTensor>().ok().map(|t| t.get().t.clone()))
        .collect();
    let flags = InputFlags::new(&inputs)?;
    ctx.get().st.lock().needs_input_grad =
        Some(PyTuple::new(py, &flags.needs_input_grad)?.unbind());

    // forward runs with grad mode and forward AD off: its outputs' tangents are jvp's
    let dual = crate::autograd::forward_ad::propagates()
        && inputs.iter().flatten().any(Tensor::has_tangent);
    let output = with_fw_grad(false, || {
        with_grad_mode(false, || -> PyResult<Bound<'_, PyAny>> {
            if setup_ctx {
                let out = forward.call(&args, kwargs.as_ref())?;
                cls.getattr(intern!(py, "setup_context"))?
                    .call1((&ctx_obj, &args, &out))?;
                Ok(out)
            } else {
                let mut full: SmallVec<[Bound<'_, PyAny>; 4]> =
                    SmallVec::with_capacity(args.len() + 1);
                full.push(ctx_obj.clone());
                full.extend(args.iter());
                let full = PyTuple::new(py, full)?;
                forward.call(full, kwargs.as_ref())
            }
        })
    })?;
    let result = wrap_function_outputs(py, cls, &backward_cls, ctx, &inputs, flags, output)?;
    if dual {
        static JVP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        JVP.import(py, "rgrad.autograd.function", "_forward_ad_jvp")?
            .call1((cls, &ctx_obj, &args, result.bind(py)))?;
    }
    Ok(result)
}

fn with_fw_grad<R>(on: bool, f: impl FnOnce() -> R) -> R {
    crate::autograd::forward_ad::with_enabled(on, f)
}

/// What `apply` returns: forward's outputs wired into the graph by `custom::wrap_outputs`.
fn wrap_function_outputs(
    py: Python<'_>,
    cls: &Bound<'_, PyType>,
    backward_cls: &Bound<'_, PyAny>,
    ctx: &Bound<'_, PyFunctionBase>,
    inputs: &[Option<Tensor>],
    flags: InputFlags,
    output: Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    let is_tuple = output.is_instance_of::<PyTuple>();
    let items: SmallVec<[Bound<'_, PyAny>; 2]> = if is_tuple {
        output.cast::<PyTuple>()?.iter().collect()
    } else {
        smallvec::smallvec![output.clone()]
    };
    let out_tensors: SmallVec<[Option<Tensor>; 2]> = items
        .iter()
        .map(|o| o.cast::<PyTensor>().ok().map(|t| t.get().t.clone()))
        .collect();
    let marks = std::mem::take(&mut ctx.get().st.lock().marks);
    let backward = || -> Result<Arc<dyn Backward>> {
        Ok(Arc::new(PyFunctionBackward {
            ctx: ctx.clone().unbind(),
            name: backward_cls
                .cast::<PyType>()
                .map_err(|e| external(e.into()))?
                .name()
                .map_err(external)?
                .to_string(),
            backward_fn: cls
                .getattr(intern!(py, "_user_backward"))
                .map_err(external)?
                .unbind(),
            inputs: custom::metas(inputs),
            outputs: custom::metas(&out_tensors),
        }))
    };
    let WrappedOutputs {
        node,
        replaced,
        saved_slots,
        unsaved,
    } = custom::wrap_outputs(flags, inputs, &out_tensors, marks, backward)?;
    let Some(node) = node else {
        // no node: forward's outputs as they are, its saved tensors kept by the ctx
        ctx.get().st.lock().marks.to_save = unsaved;
        return Ok(output.unbind());
    };
    ctx.as_super().get().attach(&node);
    ctx.get().st.lock().saved_slots = saved_slots;
    // (the node is whole now: the node-creation hooks see it, ctx attached)
    crate::autograd::node_hooks::fire_pending()?;

    let mut results: SmallVec<[Py<PyAny>; 2]> = SmallVec::with_capacity(items.len());
    for (obj, new) in items.iter().zip(replaced) {
        results.push(match new {
            Some(t) => wrap(py, t)?.into_any(),
            None => obj.clone().unbind(),
        });
    }
    if is_tuple {
        Ok(PyTuple::new(py, results)?.into_any().unbind())
    } else {
        Ok(results.into_iter().next().unwrap_or_else(|| py.None()))
    }
}

/// The node of one custom Function call: its backward is the user's Python backward.
pub(crate) struct PyFunctionBackward {
    /// The ctx, which is also what `grad_fn` returns for this node.
    pub(crate) ctx: Py<PyFunctionBase>,
    backward_fn: Py<PyAny>,
    name: String,
    /// Per positional input of forward: shape and dtype if it was a tensor.
    inputs: SmallVec<[Option<OutputMeta>; 2]>,
    /// Per output of forward: shape and dtype if it was a tensor (to materialize zeros).
    outputs: SmallVec<[Option<OutputMeta>; 2]>,
}

impl Backward for PyFunctionBackward {
    fn name(&self) -> Cow<'static, str> {
        Cow::Owned(self.name.clone())
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn apply(&self, ctx: &BackwardCtx<'_>, grads: &[Option<Tensor>]) -> Result<Grads> {
        let state = &self.ctx.get().st;
        let materialize = state.lock().materialize_grads;
        let grad_args = custom::materialize_grads(grads, &self.outputs, materialize)?;
        let returned = super::gil::attach(|py| -> Result<SmallVec<[ReturnedGrad; 2]>> {
            state.lock().in_backward = Some((ctx.saved.iter().cloned().collect(), ctx.released));
            let result = self.call_backward(py, &grad_args);
            state.lock().in_backward = None;
            result
        })?;
        // checked, reduced and cast with the GIL released
        custom::validate_grads(
            &self.name,
            &self.inputs,
            returned,
            |i| ctx.needs_input_grad(i),
            false,
        )
    }

    // A batched pass (grad(is_grads_batched=True), jacobian(vectorize=True), vmap(vjp)):
    // the user's backward runs once, under a vmap level of the batch, as torch runs it
    // (`rgrad.func._vmap._function_backward_batched`): it sees each gradient's shape as
    // one sample's, its ops batch by their rules, and an op that cannot (`.item()`)
    // raises, as in torch. What it returns comes back with the batch dim first.
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        grads: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        let run = || -> Result<Grads> {
            let state = &self.ctx.get().st;
            let materialize = state.lock().materialize_grads;
            // (zeros for an output that got no gradient: one sample's, for each)
            let batched_outputs: SmallVec<[Option<OutputMeta>; 2]> = self
                .outputs
                .iter()
                .map(|m| {
                    m.as_ref().map(|m| OutputMeta {
                        shape: ops::batched_shape(batch, &m.shape).as_slice().into(),
                        ..m.clone()
                    })
                })
                .collect();
            let grad_args = custom::materialize_grads(grads, &batched_outputs, materialize)?;
            let returned = super::gil::attach(|py| -> Result<SmallVec<[ReturnedGrad; 2]>> {
                state.lock().in_backward =
                    Some((ctx.saved.iter().cloned().collect(), ctx.released));
                let result = self.call_backward_batched(py, &grad_args, batch);
                state.lock().in_backward = None;
                result
            })?;
            custom::validate_grads(
                &self.name,
                &self.inputs,
                returned,
                |i| ctx.needs_input_grad(i),
                true,
            )
        };
        Some(run())
    }
}

impl PyFunctionBackward {
    /// Whether forward's positional input `i` was a tensor (torch's node has an edge for
    /// each tensor input only; rgrad's has one for every input, `None` for the others).
    pub(crate) fn tensor_input(&self, i: usize) -> bool {
        self.inputs.get(i).is_some_and(Option::is_some)
    }
    /// Calls the user's backward under the GIL; what it returned, as core values (a
    /// tuple's items, or the one value).
    fn call_backward(
        &self,
        py: Python<'_>,
        grads: &[Option<Tensor>],
    ) -> Result<SmallVec<[ReturnedGrad; 2]>> {
        let args = self.backward_args(py, grads, &[])?;
        let r = self.backward_fn.bind(py).call1(args).map_err(external)?;
        Ok(Self::returned(r))
    }

    /// [`call_backward`](Self::call_backward) over a batch of gradients (`[B, *shape]`):
    /// through the vmap hook, which gives back what backward returned with the batch dim
    /// first.
    fn call_backward_batched(
        &self,
        py: Python<'_>,
        grads: &[Option<Tensor>],
        batch: usize,
    ) -> Result<SmallVec<[ReturnedGrad; 2]>> {
        let lead = [
            self.backward_fn.clone_ref(py),
            batch.into_py_any(py).map_err(external)?,
        ];
        let args = self.backward_args(py, grads, &lead)?;
        let hook = py
            .import(intern!(py, "rgrad.func._vmap"))
            .and_then(|m| m.getattr(intern!(py, "_function_backward_batched")))
            .map_err(external)?;
        let r = hook.call1(args).map_err(external)?;
        Ok(Self::returned(r))
    }

    /// `(*lead, ctx, *grads)` for a call of backward (None for a missing gradient).
    fn backward_args<'py>(
        &self,
        py: Python<'py>,
        grads: &[Option<Tensor>],
        lead: &[Py<PyAny>],
    ) -> Result<Bound<'py, PyTuple>> {
        let mut args: SmallVec<[Py<PyAny>; 5]> = lead.iter().map(|o| o.clone_ref(py)).collect();
        args.push(self.ctx.clone_ref(py).into_any());
        for g in grads {
            args.push(match g {
                Some(g) => wrap(py, g.clone()).map_err(external)?.into_any(),
                None => py.None(),
            });
        }
        PyTuple::new(py, args).map_err(external)
    }

    /// What backward returned, as core values (a tuple's items, or the one value).
    fn returned(r: Bound<'_, PyAny>) -> SmallVec<[ReturnedGrad; 2]> {
        let returned = |item: Bound<'_, PyAny>| {
            if item.is_none() {
                ReturnedGrad::None
            } else {
                match item.cast::<PyTensor>() {
                    Ok(t) => ReturnedGrad::Tensor(t.get().t.clone()),
                    Err(_) => ReturnedGrad::Other(convert::type_name(&item)),
                }
            }
        };
        match r.cast::<PyTuple>() {
            Ok(t) => t.iter().map(returned).collect(),
            Err(_) => smallvec::smallvec![returned(r)],
        }
    }
}

/// `_C._delayed_error(msg, tensors)`: aliases whose backward raises `msg`
/// (`once_differentiable`).
#[pyfunction]
pub fn _delayed_error(
    py: Python<'_>,
    msg: &str,
    tensors: Vec<PyRef<'_, PyTensor>>,
) -> PyResult<Py<PyTuple>> {
    let ts: Vec<Tensor> = tensors.iter().map(|t| t.t.clone()).collect();
    let outs = ops::delayed_error(msg, &ts)?;
    let objs: Vec<Py<PyTensor>> = outs
        .into_iter()
        .map(|t| wrap(py, t))
        .collect::<PyResult<_>>()?;
    Ok(PyTuple::new(py, objs)?.unbind())
}

/// `_C._undefined_grad(t)`: an alias of `t` whose backward passes no gradient on.
#[pyfunction]
pub fn _undefined_grad(py: Python<'_>, t: PyRef<'_, PyTensor>) -> PyResult<Py<PyTensor>> {
    wrap(py, ops::undefined_grad(&t.t)?)
}
