//! Tensor hooks and `retain_grad` (torch's `VariableHooks` in csrc/autograd/variable.cpp,
//! and the check that python_hook.cpp makes of a hook's result). A leaf keeps its hooks
//! itself; a non-leaf's live on its `grad_fn` as pre-hooks of its output, as in torch, and
//! so does its retain_grad record.

use crate::autograd::graph::{Hook, NodePostHook, NodePreHook, NodeRef};
use crate::ops::autograd_api as ops;
use crate::tensor::Tensor;
use crate::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};

/// Ids of registered hooks, unique in the process (the handle's `remove()` names one).
static HOOK_IDS: AtomicU64 = AtomicU64::new(1);

/// `t.register_hook(hook)`: `hook` sees (and may replace) the gradient of `t` in every
/// backward. Returns the id that [`remove_hook`] takes. Only a tensor that requires grad
/// can have one.
pub fn register_hook(t: &Tensor, hook: Hook) -> Result<u64> {
    if !t.requires_grad() {
        return Err(Error::HookWithoutGrad);
    }
    ops::refresh_view(t)?;
    let id = HOOK_IDS.fetch_add(1, Ordering::Relaxed);
    match t.grad_fn() {
        Some(node) => node.lock().pre_hooks_mut().push((t.output_nr(), id, hook)),
        None => t.lock().cold_mut().hooks.push((id, hook)),
    }
    Ok(id)
}

/// Removes the hook `id` from `t` (nothing if it has none by that id).
pub fn remove_hook(t: &Tensor, id: u64) {
    if let Some(node) = t.grad_fn() {
        node.lock().pre_hooks_mut().retain(|h| h.1 != id);
    }
    if let Some(c) = t.lock().cold_mut_if_any() {
        c.hooks.retain(|h| h.0 != id);
    }
}

/// torch's check of what a hook returned for gradient `grad`: it may change the values,
/// not the dtype or the shape. `hook_name` names the hook in the message.
pub fn check_hook_result(
    grad: &Tensor,
    new: &Tensor,
    hook_name: impl Fn() -> String,
) -> Result<()> {
    if new.dtype() != grad.dtype() {
        return Err(Error::hook_changed_type(
            &hook_name(),
            grad.dtype().legacy_type_name(),
            new.dtype().legacy_type_name(),
        ));
    }
    if new.shape() != grad.shape() {
        return Err(Error::hook_changed_size(&hook_name()));
    }
    Ok(())
}

/// `t.retain_grad()`: a non-leaf's `.grad` is filled in by backward from now on (a no-op
/// for a leaf, and for a tensor that already retains it). A tensor that does not require
/// grad is an error.
pub fn retain_grad(t: &Tensor) -> Result<()> {
    ops::refresh_view(t)?;
    let Some(node) = t.grad_fn() else {
        if !t.requires_grad() {
            return Err(Error::RetainGradWithoutGrad);
        }
        return Ok(());
    };
    let nr = t.output_nr();
    let mut g = t.lock();
    if !g.cold().is_some_and(|c| c.retains_grad) {
        g.cold_mut().retains_grad = true;
        node.lock().retains_mut().push((nr, t.downgrade()));
    }
    Ok(())
}

// ---- node hooks ------------------------------------------------------------------------

/// `node.register_prehook(hook)`: runs before the node's formula, after the tensor hooks
/// of its outputs and retain_grad (torch's order). Returns the id [`remove_node_hook`]
/// takes.
pub fn register_node_prehook(node: &NodeRef, hook: NodePreHook) -> u64 {
    let id = HOOK_IDS.fetch_add(1, Ordering::Relaxed);
    node.lock().node_hooks_mut().pre.push((id, hook));
    id
}

/// `node.register_hook(hook)`: runs after the node's formula with (grad_inputs,
/// grad_outputs).
pub fn register_node_posthook(node: &NodeRef, hook: NodePostHook) -> u64 {
    let id = HOOK_IDS.fetch_add(1, Ordering::Relaxed);
    node.lock().node_hooks_mut().post.push((id, hook));
    id
}

/// Removes the node hook `id` (nothing if there is none).
pub fn remove_node_hook(node: &NodeRef, id: u64) {
    node.lock().node_hooks_mut().remove(id);
}

/// `register_prehook` on the AccumulateGrad node of `leaf`: runs (after the leaf's tensor
/// hooks) when backward accumulates into `leaf.grad`, not when grad() returns its
/// gradient. The hooks live with the leaf.
pub fn register_acc_prehook(leaf: &Tensor, hook: NodePreHook) -> u64 {
    let id = HOOK_IDS.fetch_add(1, Ordering::Relaxed);
    let mut g = leaf.lock();
    g.cold_mut()
        .acc_hooks
        .get_or_insert_with(Default::default)
        .pre
        .push((id, hook));
    id
}

/// `register_hook` on the AccumulateGrad node of `leaf`: runs after the accumulation with
/// (grad_inputs=(), grad_outputs=(grad,)).
pub fn register_acc_posthook(leaf: &Tensor, hook: NodePostHook) -> u64 {
    let id = HOOK_IDS.fetch_add(1, Ordering::Relaxed);
    let mut g = leaf.lock();
    g.cold_mut()
        .acc_hooks
        .get_or_insert_with(Default::default)
        .post
        .push((id, hook));
    id
}

/// `leaf.register_post_accumulate_grad_hook(hook)`: `hook(leaf)` after each accumulation
/// into `leaf.grad` by backward (after the tensor hooks and before the AccumulateGrad
/// node's post-hooks, as torch's order); torch's errors for a non-leaf and for a tensor
/// that does not require grad. Removed with [`remove_acc_hook`].
pub fn register_post_acc_hook(
    leaf: &Tensor,
    hook: crate::autograd::graph::PostAccHook,
) -> Result<u64> {
    if !leaf.requires_grad() {
        return Err(Error::runtime(
            "cannot register a hook on a tensor that doesn't require gradient",
        ));
    }
    if !leaf.is_leaf() {
        return Err(Error::runtime(
            "post accumulate grad hooks cannot be registered on non-leaf tensors",
        ));
    }
    let id = HOOK_IDS.fetch_add(1, Ordering::Relaxed);
    let mut g = leaf.lock();
    g.cold_mut()
        .acc_hooks
        .get_or_insert_with(Default::default)
        .post_acc
        .push((id, hook));
    Ok(id)
}

/// Removes the AccumulateGrad hook `id` of `leaf`.
pub fn remove_acc_hook(leaf: &Tensor, id: u64) {
    let mut g = leaf.lock();
    if let Some(c) = g.cold_mut_if_any()
        && let Some(h) = c.acc_hooks.as_mut()
    {
        h.remove(id);
        if h.is_empty() {
            c.acc_hooks = None;
        }
    }
}
