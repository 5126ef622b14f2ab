//! Tensors saved for backward (torch's SavedVariable): an op's inputs as they are, its
//! outputs without history (they get the node back when unpacked, so double backward
//! flows through them), and what saved-tensor pack hooks returned; each checked against
//! its version counter when unpacked.

use crate::autograd::graph::{NodeRef, OutputMeta};
use crate::dtype::DType;
use crate::storage::Storage;
use crate::tensor::{Tensor, TensorImpl};
use crate::{Error, Result};
use std::sync::{Arc, Weak};

/// A tensor saved for backward. Outputs of the node itself are stored without history
/// (otherwise output -> node -> output would be a cycle) and get the node back as their
/// `grad_fn` when unpacked, so double backward flows through them.
#[derive(Clone)]
pub struct SavedTensor {
    value: SavedValue,
    /// The version counter's value when it was saved (torch's check at unpacking).
    pub(crate) version: u64,
}

#[derive(Clone)]
enum SavedValue {
    /// An input of the op, as it is (history included).
    Input(Tensor),
    /// Output `nr` of the node: an alias without history.
    Output(Tensor, u32),
    /// Output `nr` of the node, a fresh contiguous result: only its storage is kept (its
    /// shape and dtype are the node's output metadata), so no alias record exists until
    /// it is unpacked. Most saved outputs are these (exp, tanh, sigmoid, pow...).
    Fresh(Arc<Storage>, u32),
    /// What a saved-tensor pack hook returned for it (`autograd::saved_hooks`).
    Packed(Arc<Packed>),
}

/// A tensor saved through a pack hook: what the hook returned, and the history its
/// unpacked tensor gets back (torch's SavedVariable with hooks keeps the same).
pub(crate) struct Packed {
    data: Arc<dyn crate::autograd::saved_hooks::PackedTensor>,
    history: PackedHistory,
}

enum PackedHistory {
    /// Output `nr` of the node that saved it (held by the node: no reference back).
    Output(u32),
    /// An input with history: its grad_fn and output number, as they were when saved.
    NonLeaf(NodeRef, u32),
    /// A leaf: whether it required grad, and the leaf (weakly) whose `.grad` gradients of
    /// the unpacked tensor reach, as torch's saved grad accumulator.
    Leaf {
        requires_grad: bool,
        leaf: Option<Weak<TensorImpl>>,
    },
}

impl SavedTensor {
    pub fn input(t: &Tensor) -> SavedTensor {
        Self::input_at(t, t.version())
    }
    /// Input `t` as it was read at `version`.
    pub fn input_at(t: &Tensor, version: u64) -> SavedTensor {
        SavedTensor {
            value: SavedValue::Input(t.clone()),
            version,
        }
    }
    pub fn output(t: &Tensor, output_nr: u32) -> SavedTensor {
        let (tensor, version) = t.detach_with_version();
        SavedTensor {
            value: SavedValue::Output(tensor, output_nr),
            version,
        }
    }
    /// Output `output_nr`, a fresh contiguous tensor of the node's output shape, by its
    /// storage (at that storage's own version counter, as every fresh result has).
    pub fn fresh_output(storage: Arc<Storage>, output_nr: u32) -> SavedTensor {
        let version = storage.version().load(std::sync::atomic::Ordering::Acquire);
        SavedTensor {
            value: SavedValue::Fresh(storage, output_nr),
            version,
        }
    }
    /// Which output of its node this is (`None`: an input).
    pub fn output_nr(&self) -> Option<u32> {
        match &self.value {
            SavedValue::Input(_) => None,
            SavedValue::Output(_, nr) | SavedValue::Fresh(_, nr) => Some(*nr),
            SavedValue::Packed(p) => match p.history {
                PackedHistory::Output(nr) => Some(nr),
                _ => None,
            },
        }
    }
    /// A tensor an unpack hook gave back, for the formula that runs now (checked against
    /// nothing: torch checks no version through hooks).
    pub(crate) fn unpacked(t: Tensor) -> SavedTensor {
        let version = t.version();
        SavedTensor {
            value: SavedValue::Input(t),
            version,
        }
    }
    /// Was packed by a saved-tensor hook.
    pub(crate) fn is_packed(&self) -> bool {
        matches!(self.value, SavedValue::Packed(_))
    }
    /// The tensor a pack hook is given for this entry (`None`: packed already): an input
    /// as it is, an output of `node` with `node` as its grad_fn (`outputs`: the node's
    /// output metadata).
    pub(crate) fn to_pack(&self, node: &NodeRef, outputs: &[OutputMeta]) -> Option<Result<Tensor>> {
        match &self.value {
            SavedValue::Packed(_) => None,
            _ => Some(self.unpack(node, outputs, true)),
        }
    }
    /// `t` (this entry's tensor, as [`to_pack`](Self::to_pack) gave it) saved as what a
    /// pack hook returned for it.
    pub(crate) fn packed(
        t: &Tensor,
        node: &NodeRef,
        data: Arc<dyn crate::autograd::saved_hooks::PackedTensor>,
    ) -> Result<SavedTensor> {
        let (grad_fn, nr) = {
            let g = t.lock();
            (g.grad_fn.clone(), g.output_nr)
        };
        let history = match grad_fn {
            Some(f) if f.ptr_eq(node) => PackedHistory::Output(nr),
            _ => return Self::packed_input(t, data),
        };
        Ok(SavedTensor {
            value: SavedValue::Packed(Arc::new(Packed { data, history })),
            version: t.version(),
        })
    }
    /// Input `t` saved as what a pack hook returned for it.
    pub(crate) fn packed_input(
        t: &Tensor,
        data: Arc<dyn crate::autograd::saved_hooks::PackedTensor>,
    ) -> Result<SavedTensor> {
        crate::ops::autograd_api::refresh_view(t)?;
        let (grad_fn, nr) = {
            let g = t.lock();
            (g.grad_fn.clone(), g.output_nr)
        };
        let history = match grad_fn {
            Some(f) => PackedHistory::NonLeaf(f, nr),
            None => {
                let requires_grad = t.requires_grad();
                PackedHistory::Leaf {
                    requires_grad,
                    leaf: requires_grad.then(|| t.leaf_target().downgrade()),
                }
            }
        };
        Ok(SavedTensor {
            value: SavedValue::Packed(Arc::new(Packed { data, history })),
            version: t.version(),
        })
    }
    /// The saved input, if this is one.
    pub(crate) fn input_tensor(&self) -> Option<&Tensor> {
        match &self.value {
            SavedValue::Input(t) => Some(t),
            _ => None,
        }
    }
    /// Replaces a saved input by `t` (at `t`'s version now).
    pub(crate) fn replace_input(&mut self, t: Tensor) {
        self.version = t.version();
        self.value = SavedValue::Input(t);
    }
    /// Whether the saved tensor was modified in place since it was saved (its version
    /// counter moved on).
    pub(crate) fn is_stale(&self) -> bool {
        let now = match &self.value {
            SavedValue::Input(t) | SavedValue::Output(t, _) => t.version(),
            SavedValue::Fresh(s, _) => s.version().load(std::sync::atomic::Ordering::Acquire),
            // (torch checks no version through hooks)
            SavedValue::Packed(_) => return false,
        };
        now != self.version
    }
    /// Is a saved output held in `storage`.
    pub(crate) fn is_output_in(&self, storage: &Arc<Storage>) -> bool {
        match &self.value {
            SavedValue::Input(_) | SavedValue::Packed(_) => false,
            SavedValue::Output(t, _) => Arc::ptr_eq(&t.storage(), storage),
            SavedValue::Fresh(s, _) => Arc::ptr_eq(s, storage),
        }
    }
    /// A saved output now held by `t` (an in-place op wrote its result into `t`): saved
    /// as `t` at `t`'s version now, so that modifying `t` again is detected, as torch
    /// detects it (its in-place result is `self`).
    pub(crate) fn move_output_to(&mut self, t: &Tensor) {
        if let Some(nr) = self.output_nr() {
            let (alias, version) = t.detach_with_version();
            self.value = SavedValue::Output(alias, nr);
            self.version = version;
        }
    }
    /// Whether the node's output metadata is needed to unpack this.
    pub(crate) fn needs_meta(&self) -> bool {
        matches!(self.value, SavedValue::Fresh(..))
    }
    /// The saved tensor: an input as it is; an output without history, or with `node`
    /// back as its grad_fn when `with_history` (a fresh alias then, so that double
    /// backward flows through it). `meta`: the node's output metadata (looked up in
    /// `node` when not given).
    pub(crate) fn unpack(
        &self,
        node: &NodeRef,
        meta: &[OutputMeta],
        with_history: bool,
    ) -> Result<Tensor> {
        Ok(match &self.value {
            SavedValue::Input(t) => t.clone(),
            SavedValue::Output(t, nr) => {
                if with_history {
                    let a = t.detach();
                    a.set_history(node.clone(), *nr);
                    a
                } else {
                    t.clone()
                }
            }
            SavedValue::Fresh(storage, nr) => {
                let (layout, dtype) = fresh_layout(node, meta, *nr)?;
                let a = Tensor::from_storage(storage.clone(), layout, dtype);
                if with_history {
                    a.set_history(node.clone(), *nr);
                }
                a
            }
            SavedValue::Packed(p) => p.unpack(Some(node))?,
        })
    }
    /// The saved data and the version counter's value now.
    pub(crate) fn snapshot_with_version(
        &self,
        node: &NodeRef,
        meta: &[OutputMeta],
    ) -> Result<(crate::tensor::Snapshot, u64)> {
        Ok(match &self.value {
            SavedValue::Input(t) | SavedValue::Output(t, _) => t.snapshot_with_version(),
            SavedValue::Fresh(storage, nr) => {
                let (layout, dtype) = fresh_layout(node, meta, *nr)?;
                let now = storage.version().load(std::sync::atomic::Ordering::Acquire);
                let snap = crate::tensor::Snapshot {
                    storage: storage.clone(),
                    layout,
                    dtype,
                };
                (snap, now)
            }
            SavedValue::Packed(p) => {
                let t = p.unpack(Some(node))?;
                (t.snapshot(), self.version)
            }
        })
    }
}

impl Packed {
    /// torch's `SavedVariable::unpack` with hooks: the unpack hook's tensor with the saved
    /// history (`node`: the node that saved it, for an output).
    fn unpack(&self, node: Option<&NodeRef>) -> Result<Tensor> {
        let data = self.data.unpack()?;
        let (grad_fn, requires_grad) = match &self.history {
            PackedHistory::Output(nr) => {
                let node =
                    node.ok_or_else(|| Error::Internal("a saved output without its node".into()))?;
                (Some((node.clone(), *nr)), false)
            }
            PackedHistory::NonLeaf(f, nr) => (Some((f.clone(), *nr)), false),
            PackedHistory::Leaf { requires_grad, .. } => (None, *requires_grad),
        };
        if grad_fn.is_none() && !requires_grad && !data.requires_grad() {
            return Ok(data);
        }
        // (a new tensor on the same data and version counter, not a view)
        let var = data.detach();
        match grad_fn {
            Some((f, nr)) => var.set_history(f, nr),
            None if requires_grad => {
                let leaf = match &self.history {
                    PackedHistory::Leaf { leaf, .. } => leaf.clone(),
                    _ => None,
                };
                var.set_leaf_requires_grad(leaf);
            }
            None => {}
        }
        Ok(var)
    }
}

/// A tensor saved outside any node (`_make_saved_tensor`): `unpack` gives it back with
/// torch's checks (freed, modified in place), through the unpack hook if it was packed.
pub fn unpack_unowned(s: &SavedTensor) -> Result<Tensor> {
    match &s.value {
        SavedValue::Input(t) => {
            let now = t.version();
            if now != s.version {
                return Err(crate::autograd::function::version_error(
                    t, None, now, s.version,
                ));
            }
            Ok(t.clone())
        }
        SavedValue::Packed(p) => p.unpack(None),
        _ => Err(Error::Internal("an unowned saved output".into())),
    }
}

/// The layout and dtype of output `nr` of `node` (from `meta`, else from the node).
fn fresh_layout(
    node: &NodeRef,
    meta: &[OutputMeta],
    nr: u32,
) -> Result<(crate::layout::Layout, DType)> {
    let of = |m: &[OutputMeta]| {
        m.get(nr as usize)
            .map(|m| (crate::layout::Layout::contiguous(&m.shape), m.dtype))
            .ok_or_else(|| Error::Internal(format!("saved output {nr} has no metadata")))
    };
    if meta.is_empty() {
        of(&node.lock().outputs)
    } else {
        of(meta)
    }
}
