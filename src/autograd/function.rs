//! What a backward op is: the `Backward` trait, the context it runs with, and the
//! `BackwardOp` enum that stores every built-in op inline in its arena slot.

use crate::autograd::graph::{NodeRef, OutputMeta, SavedTensor};
use crate::tensor::Tensor;
use crate::{Error, Result};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::sync::Arc;

/// Gradients w.r.t. a node's inputs, one per `next` edge (`None`: no gradient).
pub type Grads = SmallVec<[Option<Tensor>; 2]>;

/// A node's backward formula. `grads[i]` is the gradient of output `i` (`None` when no
/// gradient reached that output; single-output nodes always get `Some`).
pub trait Backward: Send + Sync {
    fn name(&self) -> Cow<'static, str>;
    fn apply(&self, ctx: &BackwardCtx<'_>, grads: &[Option<Tensor>]) -> Result<Grads>;
    /// The forward-mode derivative (derivatives.yaml's `result:`): the tangents of the
    /// node's outputs from its inputs' `tangents` (`None`: zero), computed with recorded
    /// ops. `None`: no rule of its own; `ops::jvp` then differentiates `apply` instead.
    fn jvp(&self, _ctx: &BackwardCtx<'_>, _tangents: &[Option<Tensor>]) -> Option<Result<Grads>> {
        None
    }
    /// The formula over a batch of gradients (`grad(is_grads_batched=True)`): every
    /// gradient in `grads` has a leading dim of `batch` samples, and so must every
    /// result (the same values as `apply` on each sample). `None`: no batching rule;
    /// the engine then runs `apply` once per sample.
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        _grads: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        None
    }
    /// For node types defined outside the core (the binding's custom Functions): the
    /// concrete value, so that its owner can reach its own data.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
    /// What torch's generated node of this op shows as `_saved_<name>` (its saved
    /// tensors and arguments), for the fields this node keeps, in name order.
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        Vec::new()
    }
}

/// One `_saved_<name>` field of a node (see [`Backward::saved_fields`]).
#[derive(Clone, Debug, PartialEq)]
pub enum SavedField {
    /// saved tensor `i` of the node; `None`: not saved (torch shows None)
    Tensor(Option<u8>),
    /// a Python number operand torch saved as a (wrapped-number) 0-dim tensor
    Number(crate::dtype::Scalar),
    /// a number argument (`alpha`, `exponent`)
    Scalar(crate::dtype::Scalar),
    Int(i64),
    /// an int64 argument as torch's getter shows it, its uint64 bits (a dim of -1 shows
    /// as 2**64 - 1)
    Int64Bits(i64),
    /// a tuple of ints (sizes, dims)
    Ints(Vec<i64>),
    Bool(bool),
    /// a string argument (scatter_reduce's `reduce`)
    Str(&'static str),
    /// an argument given as None
    None,
}

impl SavedField {
    /// A shape or list of dims as torch shows it (a tuple of ints).
    pub fn ints<T: Copy + TryInto<i64>>(v: &[T]) -> SavedField {
        SavedField::Ints(
            v.iter()
                .map(|&x| x.try_into().unwrap_or(i64::MAX))
                .collect(),
        )
    }
}

/// What a backward formula can see of its node.
pub struct BackwardCtx<'a> {
    pub(crate) node: &'a NodeRef,
    pub(crate) saved: &'a [SavedTensor],
    pub(crate) released: bool,
    pub(crate) needs_input_grad: SmallVec<[bool; 4]>,
    /// The node's output metadata when a saved output needs it to be unpacked (taken
    /// with the saved tensors, under the node's lock); else empty.
    pub(crate) outputs: SmallVec<[OutputMeta; 1]>,
    /// The node was made for forward AD alone (`ops::jvp`): no edges, so a saved output
    /// unpacked from it gets no history.
    pub(crate) forward_only: bool,
}

impl BackwardCtx<'_> {
    /// Whether input `i` of the forward op needs a gradient.
    pub fn needs_input_grad(&self, i: usize) -> bool {
        self.needs_input_grad.get(i).copied().unwrap_or(false)
    }

    /// For nodes that keep a number where torch saves it as a (wrapped-number) tensor:
    /// the same "backward through the graph a second time" error once it was freed.
    pub fn check_saved_number(&self) -> Result<()> {
        if self.released {
            return Err(Error::GraphFreed);
        }
        Ok(())
    }

    /// torch's generated backward functions unpack every saved tensor before their formula
    /// runs, so a node reports any saved tensor modified in place, whether or not its
    /// formula reads it for the gradients asked for.
    pub(crate) fn check_saved_versions(&self) -> Result<()> {
        if self.released {
            return Ok(()); // (the formula's own unpacking reports the freed graph)
        }
        for (i, s) in self.saved.iter().enumerate() {
            if s.is_stale() {
                self.saved_data(i)?;
            }
        }
        Ok(())
    }

    /// Saved tensor `i`'s entry: an error if the graph was freed by an earlier backward.
    fn saved_entry(&self, i: usize) -> Result<&SavedTensor> {
        if self.released {
            return Err(Error::GraphFreed);
        }
        self.saved
            .get(i)
            .ok_or_else(|| Error::Internal(format!("saved tensor {i} missing")))
    }

    /// The data of saved tensor `i`, for a formula that only reads it (nothing is
    /// recorded): the checks of [`saved`](Self::saved) and the snapshot under one lock.
    pub fn saved_data(&self, i: usize) -> Result<crate::tensor::Snapshot> {
        let s = self.saved_entry(i)?;
        let (snap, now) = s.snapshot_with_version(self.node, &self.outputs)?;
        check_version(self.node, s, now, &self.outputs)?;
        Ok(snap)
    }

    /// Unpacks saved tensor `i`: an error if the graph was freed by an earlier backward or
    /// if the tensor was modified in place since it was saved (torch's version check).
    pub fn saved(&self, i: usize) -> Result<Tensor> {
        let s = self.saved_entry(i)?;
        // When nothing is recorded a built-in formula only reads the values: a saved
        // output needs no alias carrying the node as grad_fn.
        // A node made for forward AD alone has no edges: its outputs get no history.
        let with_history = crate::autograd::grad_mode::is_grad_enabled() && !self.forward_only;
        let mut t = s.unpack(self.node, &self.outputs, with_history)?;
        check_version(self.node, s, t.version(), &self.outputs)?;
        // A saved output has the tangent its tensor had (forward-over-reverse reads it).
        if let Some(nr) = s.output_nr()
            && let Some(tangent) = crate::autograd::forward_ad::output_tangent(self.node, nr)
        {
            if !with_history {
                t = t.detach(); // (not the saved alias itself)
            }
            crate::autograd::forward_ad::set_tangent(&t, Some(tangent));
        }
        Ok(t)
    }
}

/// Unpacks a tensor that `node` saved: an error if the graph was freed by an earlier
/// backward or if the tensor was modified in place since it was saved (torch's version
/// check); a saved output of `node` gets `node` back as its `grad_fn`.
pub fn unpack_saved(node: &NodeRef, s: &SavedTensor, released: bool) -> Result<Tensor> {
    if released {
        return Err(Error::GraphFreed);
    }
    let t = s.unpack(node, &[], true)?;
    check_version(node, s, t.version(), &[])?;
    Ok(t)
}

/// The forward op's name of a node, as torch 2.15 names it in messages: `ExpBackward0` is
/// `Exp`, a custom `MyFnBackward` is `MyFn`; other names stay as they are.
pub(crate) fn forward_name(node: &str) -> &str {
    let base = node.trim_end_matches(|c: char| c.is_ascii_digit());
    base.strip_suffix("Backward").unwrap_or(node)
}

/// torch's check that a saved tensor was not modified in place since it was saved
/// (`now`: its version counter's value now; `meta` as for [`SavedTensor::unpack`]).
fn check_version(node: &NodeRef, s: &SavedTensor, now: u64, meta: &[OutputMeta]) -> Result<()> {
    // (through hooks, torch checks no version: the hooks own the data)
    if now != s.version && !s.is_packed() {
        let t = s.unpack(node, meta, false)?;
        let output_of = s.output_nr().map(|nr| (nr, node.name()));
        return Err(version_error(&t, output_of, now, s.version));
    }
    Ok(())
}

/// torch's error for a saved tensor `t` modified in place: at version `now`, saved at
/// `expected`; `output_of`: (output number, node name) when it is an output of the node
/// that saved it (else its own grad_fn, if any, is named).
pub(crate) fn version_error(
    t: &Tensor,
    output_of: Option<(u32, String)>,
    now: u64,
    expected: u64,
) -> Error {
    let dtype = t.dtype().legacy_type_name();
    let shape = crate::shape::fmt_shape(&t.shape());
    let origin = match (output_of, t.grad_fn()) {
        (Some((nr, name)), _) => format!(", which is output {nr} of {},", forward_name(&name)),
        (None, Some(f)) => {
            let name = f.name();
            format!(
                ", which is output {} of {},",
                t.output_nr(),
                forward_name(&name)
            )
        }
        // (a leaf, or a tensor without history: torch writes no comma then)
        (None, None) => String::new(),
    };
    Error::runtime(format!(
        "one of the variables needed for gradient computation has been modified by an inplace operation: \
         [rgrad.{dtype} {shape}]{origin} is at version {now}; expected version {expected} instead. Hint: enable anomaly \
         detection to find the operation that failed to compute its gradient, with \
         torch.autograd.set_detect_anomaly(True, check_nan=False)."
    ))
}

/// Declares the enum of built-in backward ops (stored inline in arena slots, no Box) and
/// its dispatch to each op's `Backward` impl. `Custom` holds user-defined functions.
#[macro_export]
macro_rules! backward_ops {
    ($($op:ident),* $(,)?) => {
        #[derive(Clone)]
        pub enum BackwardOp {
            $($op($op),)*
            Custom(std::sync::Arc<dyn $crate::autograd::function::Backward>),
        }
        impl BackwardOp {
            pub fn as_backward(&self) -> &dyn $crate::autograd::function::Backward {
                match self {
                    $(BackwardOp::$op(o) => o,)*
                    BackwardOp::Custom(o) => o.as_ref(),
                }
            }
            pub fn name(&self) -> std::borrow::Cow<'static, str> {
                self.as_backward().name()
            }
        }
        $(impl From<$op> for BackwardOp {
            fn from(o: $op) -> Self { BackwardOp::$op(o) }
        })*
    };
}

pub use crate::ops::autograd_api::BackwardOp;

impl From<Arc<dyn Backward>> for BackwardOp {
    fn from(o: Arc<dyn Backward>) -> Self {
        BackwardOp::Custom(o)
    }
}
