//! Custom autograd Functions: `Function.apply` and the graph node whose backward calls
//! the user's Python `backward` (python/rgrad/autograd/function.py has the Python side).
//!
//! One `apply` is one call into Rust: it builds the ctx, runs `forward` with grad mode
//! off, records ONE node and wires the outputs to it. The ctx object is also the node's
//! Python face (`y.grad_fn is ctx`, type `<Name>Backward`, as in torch). The node owns
//! the ctx (its backward needs it); the ctx reaches the node through a weak reference.
//!
//! Threads: the engine runs the node on a worker thread with the GIL released; the
//! node takes the GIL only around the Python call, and validates and reduces the
//! returned gradients after letting it go.

use super::convert;
use super::error::external;
use super::node::PyNode;
use super::pytensor::{PyTensor, wrap, wrap_cached};
use crate::autograd::function::{Backward, BackwardCtx, Grads, unpack_saved};
use crate::autograd::grad_mode::{is_grad_enabled, with_grad_mode};
use crate::autograd::graph::{Edge, Node, NodeRef, OutputMeta, SavedTensor};
use crate::ops::{self, BackwardOp};
use crate::shape::fmt_shape;
use crate::tensor::Tensor;
use crate::{Error, Result};
use parking_lot::Mutex;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use pyo3::{PyClassInitializer, intern};
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
    /// What `save_for_backward` was given (until `apply` packs it into the node).
    to_save: Option<SmallVec<[Option<Tensor>; 2]>>,
    /// After `apply`: for each saved slot, its index in the node's saved list.
    saved_slots: SmallVec<[Option<u32>; 2]>,
    dirty: SmallVec<[Tensor; 1]>,
    non_differentiable: SmallVec<[Tensor; 1]>,
    materialize_grads: bool,
    needs_input_grad: Option<Py<PyTuple>>,
    /// While the node's backward runs: the saved tensors the engine handed it (the node's
    /// own list may already be cleared when the graph is not retained).
    in_backward: Option<(SmallVec<[SavedTensor; 2]>, bool)>,
}

impl Default for CtxState {
    fn default() -> Self {
        CtxState {
            to_save: None,
            saved_slots: SmallVec::new(),
            dirty: SmallVec::new(),
            non_differentiable: SmallVec::new(),
            materialize_grads: true,
            needs_input_grad: None,
            in_backward: None,
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
        self.st.lock().to_save = Some(out);
        Ok(())
    }

    /// The tensors given to `save_for_backward`, checked against in-place changes since.
    #[getter]
    fn saved_tensors(slf: &Bound<'_, Self>) -> PyResult<Py<PyTuple>> {
        let py = slf.py();
        let me = slf.get();
        let node = slf.as_super().get().node();
        let st = me.st.lock();
        let mut out: SmallVec<[Option<Tensor>; 2]> = SmallVec::new();
        match (&node, &st.to_save) {
            // before apply has packed them (inside forward / setup_context)
            (_, Some(ts)) => out.extend(ts.iter().cloned()),
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
                if released && st.saved_slots.iter().any(Option::is_some) {
                    return Err(Error::GraphFreed.into());
                }
                for slot in &st.saved_slots {
                    out.push(match slot {
                        None => None,
                        Some(i) => {
                            let s = saved
                                .get(*i as usize)
                                .ok_or_else(|| Error::Internal("saved tensor missing".into()))?;
                            Some(unpack_saved(node, s, released)?)
                        }
                    });
                }
            }
            (None, None) => {}
        }
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
        self.st.lock().dirty = tensors_of(args, "mark_dirty")?;
        Ok(())
    }

    /// Marks outputs as not differentiable: they won't require grad, and their gradient
    /// in backward is zeros (or None without materialized grads).
    #[pyo3(signature = (*args))]
    fn mark_non_differentiable(&self, args: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.st.lock().non_differentiable = tensors_of(args, "mark_non_differentiable")?;
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
        function_apply(cls, args, kwargs)
    }
}

static BIND_ARGS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn function_apply(
    cls: &Bound<'_, PyType>,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyAny>> {
    let py = cls.py();
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
    let executable = is_grad_enabled() && inputs.iter().flatten().any(Tensor::requires_grad);
    let needs: SmallVec<[bool; 4]> = inputs
        .iter()
        .map(|t| executable && t.as_ref().is_some_and(Tensor::requires_grad))
        .collect();
    ctx.get().st.lock().needs_input_grad = Some(PyTuple::new(py, &needs)?.unbind());
    // Edges are taken before forward runs, as torch does (forward may modify inputs).
    let next: SmallVec<[Option<Edge>; 2]> = if executable {
        inputs
            .iter()
            .zip(&needs)
            .map(|(t, &n)| match t {
                Some(t) if n => ops::edge_of(t),
                _ => Ok(None),
            })
            .collect::<crate::Result<_>>()?
    } else {
        SmallVec::new()
    };

    let output = with_grad_mode(false, || -> PyResult<Bound<'_, PyAny>> {
        if setup_ctx {
            let out = forward.call(&args, kwargs.as_ref())?;
            cls.getattr(intern!(py, "setup_context"))?
                .call1((&ctx_obj, &args, &out))?;
            Ok(out)
        } else {
            let mut full: SmallVec<[Bound<'_, PyAny>; 4]> = SmallVec::with_capacity(args.len() + 1);
            full.push(ctx_obj.clone());
            full.extend(args.iter());
            let full = PyTuple::new(py, full)?;
            forward.call(full, kwargs.as_ref())
        }
    })?;

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
    let (dirty, non_diff, to_save) = {
        let mut st = ctx.get().st.lock();
        (
            std::mem::take(&mut st.dirty),
            std::mem::take(&mut st.non_differentiable),
            st.to_save.take(),
        )
    };
    if dirty
        .iter()
        .any(|d| !out_tensors.iter().flatten().any(|o| o.same(d)))
    {
        return Err(PyRuntimeError::new_err(
            "Some elements marked as dirty during the forward method were not returned as output. The inputs that are \
             modified inplace must all be outputs of the Function.",
        ));
    }
    let is_dirty = |t: &Tensor| dirty.iter().any(|d| d.same(t));
    if !executable {
        for o in out_tensors.iter().flatten().filter(|o| is_dirty(o)) {
            o.bump_version();
        }
        ctx.get().st.lock().to_save = to_save;
        return Ok(output.unbind());
    }

    let meta = |t: &Tensor| OutputMeta {
        shape: t.shape(),
        dtype: t.dtype(),
    };
    let name = backward_cls.cast::<PyType>()?.name()?.to_string();
    let backward_fn = cls.getattr(intern!(py, "_user_backward"))?.unbind();
    let op = PyFunctionBackward {
        ctx: ctx.clone().unbind(),
        backward_fn,
        name,
        inputs: inputs.iter().map(|t| t.as_ref().map(meta)).collect(),
        outputs: out_tensors.iter().map(|t| t.as_ref().map(meta)).collect(),
    };
    let metas = out_tensors
        .iter()
        .map(|t| {
            t.as_ref().map(meta).unwrap_or(OutputMeta {
                shape: Default::default(),
                dtype: crate::dtype::DType::F32,
            })
        })
        .collect();
    let node = NodeRef::new(Node::new(BackwardOp::Custom(Arc::new(op)), next, metas))?;
    ctx.as_super().get().attach(&node);

    // Wire each output to the node (torch's _wrap_outputs).
    let mut results: SmallVec<[Py<PyAny>; 2]> = SmallVec::new();
    let mut history: SmallVec<[Option<Tensor>; 2]> = SmallVec::new();
    for (i, (obj, t)) in items.iter().zip(&out_tensors).enumerate() {
        let nr = i as u32;
        let Some(t) = t else {
            results.push(obj.clone().unbind());
            history.push(None);
            continue;
        };
        let differentiable = t.dtype().is_float() && !non_diff.iter().any(|n| n.same(t));
        let is_input = inputs.iter().flatten().any(|x| x.same(t));
        if is_dirty(t) {
            if t.is_leaf() && t.requires_grad() {
                return Err(PyRuntimeError::new_err(
                    "a leaf Variable that requires grad has been used in an in-place operation.",
                ));
            }
            t.bump_version();
            if differentiable {
                ops::rebase_history(t, node.clone(), nr)?;
            }
            results.push(obj.clone().unbind());
            history.push(differentiable.then(|| t.clone()));
        } else if is_input {
            // An input returned as is: the output is a new view of it, as in torch.
            let alias = if differentiable {
                let a = ops::view_of(t, t.layout());
                a.set_history(node.clone(), nr);
                a
            } else {
                t.detach()
            };
            results.push(wrap(py, alias.clone())?.into_any());
            history.push(differentiable.then_some(alias));
        } else {
            if differentiable {
                t.set_history(node.clone(), nr);
            }
            results.push(obj.clone().unbind());
            history.push(differentiable.then(|| t.clone()));
        }
    }

    // Saved tensors: outputs of this node are saved without history (no cycle).
    if let Some(to_save) = to_save {
        let mut saved: SmallVec<[SavedTensor; 2]> = SmallVec::new();
        let mut slots: SmallVec<[Option<u32>; 2]> = SmallVec::new();
        for t in to_save {
            slots.push(t.map(|t| {
                let out_nr = history
                    .iter()
                    .position(|h| h.as_ref().is_some_and(|h| h.same(&t)));
                saved.push(match out_nr {
                    Some(nr) => SavedTensor::output(&t, nr as u32),
                    None => SavedTensor::input(&t),
                });
                (saved.len() - 1) as u32
            }));
        }
        node.lock().saved = saved;
        ctx.get().st.lock().saved_slots = slots;
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
        let mut grad_args: SmallVec<[Option<Tensor>; 2]> = SmallVec::new();
        for (g, meta) in grads.iter().zip(&self.outputs) {
            grad_args.push(match (g, meta) {
                (Some(g), _) => Some(g.clone()),
                (None, Some(m)) if materialize => Some(ops::zeros(&m.shape, m.dtype)?),
                (None, _) => None,
            });
        }
        let returned = super::gil::attach(|py| -> Result<SmallVec<[Option<Tensor>; 2]>> {
            state.lock().in_backward = Some((ctx.saved.iter().cloned().collect(), ctx.released));
            let result = self.call_backward(py, &grad_args);
            state.lock().in_backward = None;
            result
        })?;
        // Validate like any node's outputs: reduce broadcast gradients to the input's
        // shape, cast to its dtype (GIL released here).
        let mut out = Grads::new();
        for (i, (g, meta)) in returned.into_iter().zip(&self.inputs).enumerate() {
            let (Some(g), Some(m)) = (g, meta) else {
                out.push(None);
                continue;
            };
            if !ctx.needs_input_grad(i) {
                out.push(None);
                continue;
            }
            let mut g = g;
            if g.shape() != m.shape {
                if !expandable_to(&m.shape, &g.shape()) {
                    return Err(Error::runtime(format!(
                        "Function {} returned an invalid gradient at index {i} - got {} but expected shape \
                         compatible with {}",
                        self.name,
                        fmt_shape(&g.shape()),
                        fmt_shape(&m.shape)
                    )));
                }
                g = ops::sum_to(&g, &m.shape)?;
            }
            if g.dtype() != m.dtype {
                g = ops::to_dtype(&g, m.dtype)?;
            }
            out.push(Some(g));
        }
        Ok(out)
    }
}

impl PyFunctionBackward {
    /// Calls the user's backward under the GIL and checks what it returned: one
    /// gradient (Tensor or None) per forward input, None for non-tensor inputs.
    fn call_backward(
        &self,
        py: Python<'_>,
        grads: &[Option<Tensor>],
    ) -> Result<SmallVec<[Option<Tensor>; 2]>> {
        let mut args: SmallVec<[Py<PyAny>; 3]> = SmallVec::new();
        args.push(self.ctx.clone_ref(py).into_any());
        for g in grads {
            args.push(match g {
                Some(g) => wrap(py, g.clone()).map_err(external)?.into_any(),
                None => py.None(),
            });
        }
        let args = PyTuple::new(py, args).map_err(external)?;
        let r = self.backward_fn.bind(py).call1(args).map_err(external)?;
        let mut items: SmallVec<[Bound<'_, PyAny>; 2]> = match r.cast::<PyTuple>() {
            Ok(t) => t.iter().collect(),
            Err(_) => smallvec::smallvec![r],
        };
        let expected = self.inputs.len();
        if items.len() > expected && items[expected..].iter().all(|x| x.is_none()) {
            items.truncate(expected);
        }
        if items.len() != expected {
            return Err(Error::runtime(format!(
                "function {} returned an incorrect number of gradients (expected {expected}, got {})",
                self.name,
                items.len()
            )));
        }
        let mut out = SmallVec::new();
        for (i, (item, meta)) in items.iter().zip(&self.inputs).enumerate() {
            if item.is_none() {
                out.push(None);
            } else if meta.is_none() {
                return Err(Error::runtime(format!(
                    "function {} returned a gradient different than None at position {}, but the corresponding \
                     forward input was not a Variable",
                    self.name,
                    i + 1
                )));
            } else {
                match item.cast::<PyTensor>() {
                    Ok(t) => out.push(Some(t.get().t.clone())),
                    Err(_) => {
                        return Err(Error::runtime(format!(
                            "expected Variable or None (got {})",
                            convert::type_name(item)
                        )));
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Whether `shape` broadcasts to `target` (torch's is_expandable_to).
fn expandable_to(shape: &[usize], target: &[usize]) -> bool {
    if shape.len() > target.len() {
        return false;
    }
    shape
        .iter()
        .rev()
        .zip(target.iter().rev())
        .all(|(&s, &t)| s == t || s == 1)
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
