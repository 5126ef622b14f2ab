//! Custom autograd Functions, the part that is not Python (torch's
//! csrc/autograd/custom_function.cpp and the tensor side of python_function.cpp): what one
//! call of a user's Function does to the graph, and what is checked and reduced of the
//! gradients its backward returns. The binding (`src/py/function.rs`) runs the user's
//! `forward` and `backward` and converts their arguments and results; every decision
//! about tensors and the graph is made here.
//!
//! A call is recorded in two steps, as torch records it: [`InputFlags::new`] before
//! forward runs (which inputs need a gradient, and the node's edges), then
//! [`wrap_outputs`] after it (torch's `_wrap_outputs` and `_save_variables`: one node for
//! the call, each output wired to it, the saved tensors packed into the node's saved
//! list). In backward, [`materialize_grads`] prepares the gradients handed to the user's
//! backward, and [`validate_grads`] checks and reduces what it returned.

use crate::autograd::function::{Backward, Grads, unpack_saved};
use crate::autograd::grad_mode::is_grad_enabled;
use crate::autograd::graph::{Edge, Node, NodeRef, OutputMeta, SavedTensor};
use crate::dtype::DType;
use crate::ops::autograd_api::{self as ops, BackwardOp};
use crate::tensor::Tensor;
use crate::{Error, Result};
use smallvec::SmallVec;
use std::sync::Arc;

/// Shape and dtype of each tensor of `ts` (`None` stays `None`): what the Function's node
/// keeps of its inputs (to validate their gradients) and of its outputs (to materialize
/// theirs).
pub fn metas(ts: &[Option<Tensor>]) -> SmallVec<[Option<OutputMeta>; 2]> {
    ts.iter().map(|t| t.as_ref().map(meta)).collect()
}

fn meta(t: &Tensor) -> OutputMeta {
    OutputMeta {
        shape: t.shape(),
        dtype: t.dtype(),
        device: t.device().into(),
    }
}

// ---- forward: recording the call ---------------------------------------------------------

/// What a Function call knows of its inputs before forward runs (torch's `InputFlags`).
pub struct InputFlags {
    /// Grad mode is on and an input requires grad: the call records a node.
    pub is_executable: bool,
    /// Per input, a non-tensor one included: whether it needs a gradient
    /// (`ctx.needs_input_grad`).
    pub needs_input_grad: SmallVec<[bool; 4]>,
    /// The node's edges, one per input (`None` for one that needs no gradient); empty
    /// when the call is not executable.
    pub next_edges: SmallVec<[Option<Edge>; 2]>,
}

impl InputFlags {
    /// torch's `unpack_input`: `inputs` has one entry per positional input of forward,
    /// `None` for one that is not a tensor. The edges are taken now, before forward
    /// runs, as torch takes them: forward may modify an input in place.
    pub fn new(inputs: &[Option<Tensor>]) -> Result<InputFlags> {
        let is_executable = is_grad_enabled() && inputs.iter().flatten().any(Tensor::requires_grad);
        let needs_input_grad: SmallVec<[bool; 4]> = inputs
            .iter()
            .map(|t| is_executable && t.as_ref().is_some_and(Tensor::requires_grad))
            .collect();
        let next_edges = if is_executable {
            inputs
                .iter()
                .zip(&needs_input_grad)
                .map(|(t, &n)| match t {
                    Some(t) if n => ops::edge_of(t),
                    _ => Ok(None),
                })
                .collect::<Result<_>>()?
        } else {
            SmallVec::new()
        };
        Ok(InputFlags {
            is_executable,
            needs_input_grad,
            next_edges,
        })
    }
}

/// What forward left on its ctx: the tensors given to `mark_dirty`,
/// `mark_non_differentiable` and `save_for_backward`.
#[derive(Default)]
pub struct CtxMarks {
    /// Inputs that forward modified in place; each must also be an output.
    pub dirty: SmallVec<[Tensor; 1]>,
    /// Outputs that get no history (their gradient in backward is zeros, or None).
    pub non_differentiable: SmallVec<[Tensor; 1]>,
    /// What `save_for_backward` was given (`None` entries kept), if it was called.
    pub to_save: Option<SmallVec<[Option<Tensor>; 2]>>,
}

/// What [`wrap_outputs`] made of forward's outputs.
pub struct WrappedOutputs {
    /// The call's node (`None` when the call was not executable).
    pub node: Option<NodeRef>,
    /// Per output: the tensor the Function returns in place of the one forward returned
    /// (an input returned as is becomes a new view of it, as in torch), or `None` to
    /// return forward's own object.
    pub replaced: SmallVec<[Option<Tensor>; 2]>,
    /// With a node: for each tensor given to `save_for_backward`, its index in the
    /// node's saved list (`None` for a None); empty when nothing was saved.
    pub saved_slots: SmallVec<[Option<u32>; 2]>,
    /// Without a node: `save_for_backward`'s tensors, given back for the ctx to keep as
    /// they are (`ctx.saved_tensors` returns them unchecked, as torch does).
    pub unsaved: Option<SmallVec<[Option<Tensor>; 2]>>,
}

/// torch's `_wrap_outputs` and `_save_variables`: records the call's node and wires each
/// output of forward to it. `outputs` has one entry per output (`None` for one that is
/// not a tensor); `backward` builds the node's op, and is called only when the call is
/// executable and the marks are consistent.
///
/// Each tensor output is, in turn:
/// - dirty (an input modified in place): its version is bumped and, if differentiable,
///   its history rebased onto the node (through CopySlices for a view); a leaf that
///   requires grad is an error;
/// - an input returned as is: replaced by a new view of it with the node as history (a
///   detached alias if it is not differentiable), as torch does, so that the input keeps
///   its own history;
/// - any other: given the node as history if differentiable.
///
/// An output is differentiable when it is a float tensor not marked non-differentiable.
/// Saved tensors that are outputs of the node are saved as outputs (without history, so
/// no cycle), the others as inputs.
pub fn wrap_outputs(
    flags: InputFlags,
    inputs: &[Option<Tensor>],
    outputs: &[Option<Tensor>],
    marks: CtxMarks,
    backward: impl FnOnce() -> Result<Arc<dyn Backward>>,
) -> Result<WrappedOutputs> {
    let CtxMarks {
        dirty,
        non_differentiable,
        to_save,
    } = marks;
    if dirty
        .iter()
        .any(|d| !outputs.iter().flatten().any(|o| o.same(d)))
    {
        return Err(Error::DirtyNotReturned);
    }
    let is_dirty = |t: &Tensor| dirty.iter().any(|d| d.same(t));
    let mut replaced: SmallVec<[Option<Tensor>; 2]> = smallvec::smallvec![None; outputs.len()];
    if !flags.is_executable {
        for o in outputs.iter().flatten().filter(|o| is_dirty(o)) {
            o.bump_version();
        }
        return Ok(WrappedOutputs {
            node: None,
            replaced,
            saved_slots: SmallVec::new(),
            unsaved: to_save,
        });
    }

    // A non-tensor output still has a slot among the node's outputs (it never gets a
    // gradient): its metadata is a placeholder.
    let output_metas = outputs
        .iter()
        .map(|t| {
            t.as_ref().map(meta).unwrap_or(OutputMeta {
                shape: Default::default(),
                dtype: DType::F32,
                device: crate::device::Device::Cpu.into(),
            })
        })
        .collect();
    let node = NodeRef::new(Node::new(
        BackwardOp::Custom(backward()?),
        flags.next_edges,
        output_metas,
    ))?;

    // Per output: the tensor that now carries the node's history, if any.
    let mut history: SmallVec<[Option<Tensor>; 2]> = SmallVec::with_capacity(outputs.len());
    for (i, t) in outputs.iter().enumerate() {
        let nr = i as u32;
        let Some(t) = t else {
            history.push(None);
            continue;
        };
        let differentiable = t.dtype().is_float() && !non_differentiable.iter().any(|n| n.same(t));
        let is_input = inputs.iter().flatten().any(|x| x.same(t));
        if is_dirty(t) {
            if t.is_leaf() && t.requires_grad() {
                return Err(Error::DirtyLeafRequiresGrad);
            }
            t.bump_version();
            if differentiable {
                ops::rebase_history(t, node.clone(), nr)?;
            }
            history.push(differentiable.then(|| t.clone()));
        } else if is_input {
            let alias = if differentiable {
                let a = ops::view_of(t, t.layout());
                a.set_history(node.clone(), nr);
                a
            } else {
                t.detach()
            };
            history.push(differentiable.then(|| alias.clone()));
            replaced[i] = Some(alias);
        } else {
            if differentiable {
                t.set_history(node.clone(), nr);
            }
            history.push(differentiable.then(|| t.clone()));
        }
    }

    let mut saved_slots = SmallVec::new();
    if let Some(to_save) = to_save {
        let mut saved: SmallVec<[SavedTensor; 2]> = SmallVec::new();
        for t in to_save {
            saved_slots.push(t.map(|t| {
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
        // (under saved-tensor hooks, each is packed now: the outputs carry the node)
        crate::autograd::saved_hooks::pack_list(&node, &mut saved)?;
        let mut n = node.lock();
        n.packed = saved.iter().any(SavedTensor::is_packed);
        n.saved = saved;
    }
    Ok(WrappedOutputs {
        node: Some(node),
        replaced,
        saved_slots,
        unsaved: None,
    })
}

/// `ctx.saved_tensors` of a recorded call (torch's `unpack_saved_variables`): the tensor
/// of each slot of [`WrappedOutputs::saved_slots`], unpacked from `saved` (the node's
/// saved list, or the one handed to its running backward) and checked against in-place
/// changes since it was saved; an error once a backward freed them.
pub fn unpack_saved_slots(
    node: &NodeRef,
    saved: &[SavedTensor],
    released: bool,
    slots: &[Option<u32>],
) -> Result<SmallVec<[Option<Tensor>; 2]>> {
    if released && slots.iter().any(Option::is_some) {
        return Err(Error::GraphFreed);
    }
    slots
        .iter()
        .map(|slot| {
            slot.map(|i| {
                let s = saved
                    .get(i as usize)
                    .ok_or_else(|| Error::Internal("saved tensor missing".into()))?;
                unpack_saved(node, s, released)
            })
            .transpose()
        })
        .collect()
}

// ---- backward: the user's gradients ------------------------------------------------------

/// The gradients handed to the user's backward, one per output of forward: an output
/// that received no gradient gets zeros of its shape and dtype when `materialize` (the
/// default; `ctx.set_materialize_grads(False)` turns it off), else `None`; a non-tensor
/// output always `None`.
pub fn materialize_grads(
    grads: &[Option<Tensor>],
    outputs: &[Option<OutputMeta>],
    materialize: bool,
) -> Result<SmallVec<[Option<Tensor>; 2]>> {
    grads
        .iter()
        .zip(outputs)
        .map(|(g, meta)| match (g, meta) {
            (Some(g), _) => Ok(Some(g.clone())),
            (None, Some(m)) if materialize => {
                ops::zeros_on(&m.shape, m.dtype, m.device.into()).map(Some)
            }
            (None, _) => Ok(None),
        })
        .collect()
}

/// One value that a user's backward returned, as the binding read it.
pub enum ReturnedGrad {
    None,
    Tensor(Tensor),
    /// Anything else: the name of its type, for the message.
    Other(String),
}

/// Checks what the backward of Function `name` returned and makes it the node's input
/// gradients: torch's checks in `PyNode::apply` (one value per forward input, trailing
/// Nones beyond that ignored; a gradient only for a tensor input; a Tensor or None) and
/// the engine's `validate_outputs` (a gradient whose shape broadcasts to its input's is
/// summed down to it, one of another dtype cast to the input's). `inputs` has the shape
/// and dtype of each forward input (`None`: not a tensor); an input that needs no
/// gradient gets `None`, whatever was returned for it.
///
/// `batched`: the gradients have a leading dim of samples (a batched pass: the backward
/// ran under a vmap level), the shapes checked and reduced are those after it.
pub fn validate_grads(
    name: &str,
    inputs: &[Option<OutputMeta>],
    mut returned: SmallVec<[ReturnedGrad; 2]>,
    needs_input_grad: impl Fn(usize) -> bool,
    batched: bool,
) -> Result<Grads> {
    let expected = inputs.len();
    if returned.len() > expected
        && returned[expected..]
            .iter()
            .all(|r| matches!(r, ReturnedGrad::None))
    {
        returned.truncate(expected);
    }
    if returned.len() != expected {
        return Err(Error::wrong_grad_count(name, expected, returned.len()));
    }
    let mut grads: SmallVec<[Option<Tensor>; 2]> = SmallVec::with_capacity(expected);
    for (i, (r, meta)) in returned.into_iter().zip(inputs).enumerate() {
        grads.push(match (r, meta) {
            (ReturnedGrad::None, _) => None,
            (_, None) => return Err(Error::grad_for_non_tensor_input(name, i + 1)),
            (ReturnedGrad::Tensor(g), Some(_)) => Some(g),
            (ReturnedGrad::Other(type_name), Some(_)) => {
                return Err(Error::grad_not_tensor(&type_name));
            }
        });
    }
    let mut out = Grads::new();
    for (i, (g, meta)) in grads.into_iter().zip(inputs).enumerate() {
        let (Some(mut g), Some(m)) = (g, meta) else {
            out.push(None);
            continue;
        };
        if !needs_input_grad(i) {
            out.push(None);
            continue;
        }
        let shape = g.shape();
        let sample = if batched { &shape[1..] } else { &shape[..] };
        if *sample != *m.shape {
            if !expandable_to(&m.shape, sample) {
                return Err(Error::invalid_grad_shape(name, i, sample, &m.shape));
            }
            g = if batched {
                ops::sum_to_batched(&g, &m.shape)?
            } else {
                ops::sum_to(&g, &m.shape)?
            };
        }
        if g.dtype() != m.dtype {
            g = ops::to_dtype(&g, m.dtype)?;
        }
        out.push(Some(g));
    }
    Ok(out)
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::autograd::engine::{Options, run_backward};
    use crate::autograd::function::BackwardCtx;
    use crate::autograd::grad_mode::with_grad_mode;
    use crate::dtype::Scalar;
    use crate::ops::mul_scalar;
    use crate::testing::{leaf, tensor, to_vec};
    use std::borrow::Cow;

    /// A Function whose backward passes each output's gradient to the input of the same
    /// position.
    struct PassThrough;
    impl Backward for PassThrough {
        fn name(&self) -> Cow<'static, str> {
            "PassThroughBackward".into()
        }
        fn apply(&self, _ctx: &BackwardCtx<'_>, grads: &[Option<Tensor>]) -> Result<Grads> {
            Ok(grads.iter().cloned().collect())
        }
    }

    fn pass_through() -> Result<Arc<dyn Backward>> {
        Ok(Arc::new(PassThrough))
    }

    /// Records a call of `PassThrough` on `inputs` that returned `outputs`.
    fn call(
        inputs: &[Option<Tensor>],
        outputs: &[Option<Tensor>],
        marks: CtxMarks,
    ) -> Result<WrappedOutputs> {
        let flags = InputFlags::new(inputs)?;
        wrap_outputs(flags, inputs, outputs, marks, pass_through)
    }

    fn meta_of(shape: &[usize], dtype: DType) -> Option<OutputMeta> {
        Some(OutputMeta {
            shape: shape.into(),
            dtype,
            device: crate::device::Device::Cpu.into(),
        })
    }

    fn ones_like(t: &Tensor) -> Tensor {
        tensor(vec![1.0; t.numel()], &t.shape())
    }

    fn err<T>(r: Result<T>) -> String {
        match r {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn input_flags_follow_requires_grad_and_grad_mode() {
        let x = leaf(vec![1.0], &[1]);
        let c = tensor(vec![2.0], &[1]);
        let flags = InputFlags::new(&[Some(x.clone()), None, Some(c.clone())]).unwrap();
        assert!(flags.is_executable);
        assert_eq!(flags.needs_input_grad.as_slice(), &[true, false, false]);
        assert_eq!(flags.next_edges.len(), 3);
        assert!(flags.next_edges[0].is_some() && flags.next_edges[2].is_none());

        let flags = with_grad_mode(false, || InputFlags::new(&[Some(x)])).unwrap();
        assert!(!flags.is_executable);
        assert_eq!(flags.needs_input_grad.as_slice(), &[false]);
        assert!(flags.next_edges.is_empty());
    }

    #[test]
    fn a_dirty_tensor_not_returned_is_an_error() {
        let x = leaf(vec![1.0, 2.0], &[2]);
        let d = tensor(vec![0.0], &[1]);
        let out = tensor(vec![3.0], &[1]);
        let marks = CtxMarks {
            dirty: smallvec::smallvec![d],
            ..CtxMarks::default()
        };
        let e = err(call(&[Some(x)], &[Some(out)], marks));
        assert_eq!(
            e,
            "Some elements marked as dirty during the forward method were not returned as output. The inputs \
             that are modified inplace must all be outputs of the Function."
        );
    }

    #[test]
    fn a_dirty_leaf_that_requires_grad_is_an_error() {
        let x = leaf(vec![1.0, 2.0], &[2]);
        let marks = CtxMarks {
            dirty: smallvec::smallvec![x.clone()],
            ..CtxMarks::default()
        };
        let e = err(call(&[Some(x.clone())], &[Some(x)], marks));
        assert_eq!(
            e,
            "a leaf Variable that requires grad has been used in an in-place operation."
        );
    }

    #[test]
    fn a_dirty_non_leaf_is_rebased_onto_the_node() {
        let x = leaf(vec![1.0, 2.0], &[2]);
        let y = mul_scalar(&x, Scalar::Float(2.0)).unwrap();
        let before = y.version();
        let marks = CtxMarks {
            dirty: smallvec::smallvec![y.clone()],
            ..CtxMarks::default()
        };
        let w = call(&[Some(y.clone())], &[Some(y.clone())], marks).unwrap();
        let node = w.node.unwrap();
        assert!(w.replaced[0].is_none(), "a dirty output is returned as is");
        assert_eq!(y.version(), before + 1);
        assert!(y.grad_fn().unwrap().ptr_eq(&node));
    }

    #[test]
    fn without_a_node_dirty_outputs_are_bumped_and_saved_tensors_given_back() {
        let x = tensor(vec![1.0, 2.0], &[2]);
        let before = x.version();
        let marks = CtxMarks {
            dirty: smallvec::smallvec![x.clone()],
            to_save: Some(smallvec::smallvec![Some(x.clone()), None]),
            ..CtxMarks::default()
        };
        let w = call(&[Some(x.clone())], &[Some(x.clone())], marks).unwrap();
        assert!(w.node.is_none());
        assert_eq!(x.version(), before + 1);
        assert!(w.replaced.iter().all(Option::is_none));
        assert!(w.saved_slots.is_empty());
        let unsaved = w.unsaved.unwrap();
        assert!(unsaved[0].as_ref().unwrap().same(&x) && unsaved[1].is_none());
    }

    #[test]
    fn an_input_returned_as_is_becomes_a_new_view_with_history() {
        let x = leaf(vec![1.0, 2.0, 3.0], &[3]);
        let w = call(&[Some(x.clone())], &[Some(x.clone())], CtxMarks::default()).unwrap();
        let node = w.node.unwrap();
        let alias = w.replaced[0].clone().unwrap();
        assert!(!alias.same(&x));
        assert!(alias.is_view() && alias.base().unwrap().same(&x));
        assert!(alias.grad_fn().unwrap().ptr_eq(&node));
        assert!(
            x.is_leaf() && x.grad_fn().is_none(),
            "the input keeps its history"
        );
        // the gradient flows through the node to the input
        let g = run_backward(
            std::slice::from_ref(&alias),
            &[ones_like(&alias)],
            std::slice::from_ref(&x),
            Options::default(),
        )
        .unwrap();
        assert_eq!(to_vec(g[0].as_ref().unwrap()), vec![1.0, 1.0, 1.0]);
    }

    #[test]
    fn non_differentiable_outputs_get_no_history() {
        let x = leaf(vec![1.0, 2.0], &[2]);
        let (a, b, i) = with_grad_mode(false, || {
            (
                mul_scalar(&x, Scalar::Float(2.0)).unwrap(),
                mul_scalar(&x, Scalar::Float(3.0)).unwrap(),
                crate::testing::tensor_i64(vec![0, 1], &[2]),
            )
        });
        let marks = CtxMarks {
            non_differentiable: smallvec::smallvec![b.clone()],
            ..CtxMarks::default()
        };
        let outputs = [Some(a.clone()), Some(b.clone()), Some(i.clone()), None];
        let w = call(&[Some(x.clone())], &outputs, marks).unwrap();
        let node = w.node.unwrap();
        assert!(a.grad_fn().unwrap().ptr_eq(&node) && a.output_nr() == 0);
        for t in [&b, &i] {
            assert!(t.grad_fn().is_none() && !t.requires_grad());
        }
        assert!(w.replaced.iter().all(Option::is_none));
        // a non-differentiable input returned as is: a detached alias
        let marks = CtxMarks {
            non_differentiable: smallvec::smallvec![x.clone()],
            ..CtxMarks::default()
        };
        let w = call(&[Some(x.clone())], &[Some(x.clone())], marks).unwrap();
        let alias = w.replaced[0].clone().unwrap();
        assert!(!alias.same(&x) && !alias.requires_grad() && alias.grad_fn().is_none());
    }

    #[test]
    fn saved_outputs_are_saved_as_outputs_of_the_node() {
        let x = leaf(vec![1.0, 2.0], &[2]);
        let y = with_grad_mode(false, || mul_scalar(&x, Scalar::Float(2.0))).unwrap();
        let marks = CtxMarks {
            to_save: Some(smallvec::smallvec![Some(x.clone()), None, Some(y.clone())]),
            ..CtxMarks::default()
        };
        let w = call(&[Some(x.clone())], &[Some(y.clone())], marks).unwrap();
        let node = w.node.unwrap();
        assert_eq!(w.saved_slots.as_slice(), &[Some(0), None, Some(1)]);
        let saved = node.lock().saved.clone();
        assert_eq!(saved[0].output_nr(), None);
        assert_eq!(saved[1].output_nr(), Some(0));
        let back = unpack_saved_slots(&node, &saved, false, &w.saved_slots).unwrap();
        assert!(back[0].as_ref().unwrap().same(&x) && back[1].is_none());
        let y_back = back[2].as_ref().unwrap();
        assert!(y_back.grad_fn().unwrap().ptr_eq(&node));
        assert_eq!(to_vec(y_back), vec![2.0, 4.0]);
        // once freed, or modified in place since
        let e = err(unpack_saved_slots(&node, &saved, true, &w.saved_slots));
        assert!(e.starts_with("Trying to backward through the graph a second time"));
        x.bump_version();
        let e = err(unpack_saved_slots(&node, &saved, false, &w.saved_slots));
        assert!(e.starts_with("one of the variables needed for gradient computation"));
    }

    #[test]
    fn missing_gradients_are_materialized_as_zeros_unless_asked_not_to() {
        let g = tensor(vec![1.0], &[1]);
        let outputs = [meta_of(&[2], DType::F32), meta_of(&[1], DType::F64), None];
        let grads = [None, Some(g.clone()), None];
        let m = materialize_grads(&grads, &outputs, true).unwrap();
        let z = m[0].as_ref().unwrap();
        assert_eq!(
            (z.shape().as_slice(), z.dtype()),
            (&[2usize][..], DType::F32)
        );
        assert_eq!(to_vec(z), vec![0.0, 0.0]);
        assert!(m[1].as_ref().unwrap().same(&g) && m[2].is_none());
        let m = materialize_grads(&grads, &outputs, false).unwrap();
        assert!(m[0].is_none() && m[1].is_some() && m[2].is_none());
    }

    #[test]
    fn gradients_are_reduced_to_the_input_shape_and_cast_to_its_dtype() {
        let inputs = [
            meta_of(&[3], DType::F32),
            None,
            meta_of(&[2, 1], DType::F64),
        ];
        let g0 = tensor(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
        let g2 = tensor(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
        let returned = smallvec::smallvec![
            ReturnedGrad::Tensor(g0),
            ReturnedGrad::None,
            ReturnedGrad::Tensor(g2),
            ReturnedGrad::None, // trailing Nones past the inputs are ignored
        ];
        let out = validate_grads("FnBackward", &inputs, returned, |_| true, false).unwrap();
        assert_eq!(out.len(), 3);
        let a = out[0].as_ref().unwrap();
        assert_eq!(
            (a.shape().as_slice(), a.dtype()),
            (&[3usize][..], DType::F32)
        );
        assert_eq!(to_vec(a), vec![5.0, 7.0, 9.0]);
        assert!(out[1].is_none());
        assert_eq!(to_vec(out[2].as_ref().unwrap()), vec![3.0, 7.0]);
        // an input that needs no gradient gets none
        let returned = smallvec::smallvec![
            ReturnedGrad::Tensor(tensor(vec![1.0; 3], &[3])),
            ReturnedGrad::None,
            ReturnedGrad::None,
        ];
        let out = validate_grads("FnBackward", &inputs, returned, |i| i != 0, false).unwrap();
        assert!(out.iter().all(Option::is_none));
    }

    #[test]
    fn invalid_gradients_get_torchs_messages() {
        let inputs = [meta_of(&[3], DType::F64), None];
        let v = |n: usize| ReturnedGrad::Tensor(tensor(vec![1.0; n], &[n]));
        let check = |returned: SmallVec<[ReturnedGrad; 2]>| {
            err(validate_grads(
                "MyFnBackward",
                &inputs,
                returned,
                |_| true,
                false,
            ))
        };
        assert_eq!(
            check(smallvec::smallvec![v(4), ReturnedGrad::None]),
            "Function MyFnBackward returned an invalid gradient at index 0 - got [4] but expected shape \
             compatible with [3]"
        );
        assert_eq!(
            check(smallvec::smallvec![v(3)]),
            "function MyFnBackward returned an incorrect number of gradients (expected 2, got 1)"
        );
        assert_eq!(
            check(smallvec::smallvec![v(3), ReturnedGrad::None, v(3)]),
            "function MyFnBackward returned an incorrect number of gradients (expected 2, got 3)"
        );
        assert_eq!(
            check(smallvec::smallvec![v(3), v(3)]),
            "function MyFnBackward returned a gradient different than None at position 2, but the \
             corresponding forward input was not a Variable"
        );
        assert_eq!(
            check(smallvec::smallvec![
                ReturnedGrad::Other("int".into()),
                ReturnedGrad::None
            ]),
            "expected Variable or None (got int)"
        );
    }
}
