//! Tensor hooks and `retain_grad` (torch's `VariableHooks` in csrc/autograd/variable.cpp,
//! and the check that python_hook.cpp makes of a hook's result). A leaf keeps its hooks
//! itself; a non-leaf's live on its `grad_fn` as pre-hooks of its output, as in torch, and
//! so does its retain_grad record.

use crate::autograd::graph::Hook;
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
