//! Forward-mode AD's state, as torch.autograd.forward_ad has it: one dual level at a time
//! (torch 2.15 refuses nested levels), tangents kept on the tensors that have one, and a
//! thread-local switch (`_set_fwd_grad_enabled`) that the computation of tangents turns
//! off for itself.
//!
//! What an op does with tangents is `ops::jvp`: an op whose input has a tangent builds its
//! node (even with nothing requiring grad) and computes its outputs' tangents from it.
//! This module only knows which tensors have a tangent: exiting the level clears them all.
//!
//! Cost when unused: `propagates()` is one relaxed load of a process-wide flag.

use crate::autograd::graph::NodeRef;
use crate::tensor::{Tensor, TensorImpl};
use crate::{Error, Result};
use parking_lot::Mutex;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Weak;
use std::sync::atomic::{AtomicBool, Ordering};

/// A dual level exists (torch's levels are process-wide).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The tensors given a tangent at the level, cleared when it exits; dead entries are
/// pruned whenever the list doubles.
struct Registry {
    tensors: Vec<Weak<TensorImpl>>,
    prune_at: usize,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    tensors: Vec::new(),
    prune_at: 1024,
});

/// The tangents of nodes' saved outputs, by (node id, output number): a saved output
/// keeps only its storage, and forward-over-reverse needs its tangent when the backward
/// formula unpacks it. Kept (strongly: a tangent may be the only reference to its graph)
/// until the level exits.
static SAVED_TANGENTS: Mutex<Option<HashMap<(u64, u32), Tensor>>> = Mutex::new(None);
static ANY_SAVED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// `torch._C._is_fwd_grad_enabled()`, per thread, on by default.
    static ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// The level `enter_dual_level` creates: torch 2.15 has one at a time, numbered 0.
pub const LEVEL: i64 = 0;

/// Enters the dual level (torch's error if one exists).
pub fn enter_dual_level() -> Result<i64> {
    if ACTIVE
        .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return Err(Error::runtime(
            "Nested forward mode AD is not supported at the moment",
        ));
    }
    Ok(LEVEL)
}

/// Exits the dual level: every tangent made at it is dropped.
pub fn exit_dual_level(level: i64) -> Result<()> {
    if level != LEVEL || !ACTIVE.load(Ordering::Acquire) {
        return Err(Error::runtime(
            "Trying to exit a forward AD level that was not the last one that was created. This is not supported.",
        ));
    }
    ACTIVE.store(false, Ordering::Release);
    ANY_SAVED.store(false, Ordering::Release);
    drop(SAVED_TANGENTS.lock().take());
    let tensors = std::mem::take(&mut REGISTRY.lock().tensors);
    for w in tensors {
        if let Some(t) = Tensor::upgrade(&w) {
            drop(t.replace_tangent(None));
        }
    }
    Ok(())
}

/// A dual level exists.
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Ops compute tangents on this thread now: a level exists and the thread's switch is on.
#[inline]
pub fn propagates() -> bool {
    is_active() && ENABLED.with(Cell::get)
}

/// `t` has a tangent that ops on this thread propagate.
#[inline]
pub fn is_dual(t: &Tensor) -> bool {
    propagates() && t.has_tangent()
}

/// Some input has a tangent that ops on this thread propagate.
#[inline]
pub fn any_dual(inputs: &[&Tensor]) -> bool {
    propagates() && inputs.iter().any(|t| t.has_tangent())
}

/// `torch._C._is_fwd_grad_enabled()`.
pub fn is_enabled() -> bool {
    ENABLED.with(Cell::get)
}

/// `torch._C._set_fwd_grad_enabled(on)`; returns the previous value.
pub fn set_enabled(on: bool) -> bool {
    ENABLED.with(|e| e.replace(on))
}

/// Runs `f` with the thread's switch set to `on`, restored afterwards (also on error).
pub fn with_enabled<R>(on: bool, f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            set_enabled(self.0);
        }
    }
    let _r = Restore(set_enabled(on));
    f()
}

/// Gives `t` the tangent `tangent` at the level (no checks: see [`make_dual`]); `None`
/// clears it.
pub fn set_tangent(t: &Tensor, tangent: Option<Tensor>) {
    let had = t.has_tangent();
    let is_some = tangent.is_some();
    drop(t.replace_tangent(tangent));
    if is_some && !had {
        let mut r = REGISTRY.lock();
        if r.tensors.len() >= r.prune_at {
            r.tensors.retain(|w| w.strong_count() > 0);
            r.prune_at = (r.tensors.len() * 2).max(1024);
        }
        r.tensors.push(t.downgrade());
    }
}

/// Keeps `tangent`, the tangent of output `nr` of `node`, which the node saved.
pub fn save_output_tangent(node: &NodeRef, nr: u32, tangent: Tensor) {
    let mut m = SAVED_TANGENTS.lock();
    m.get_or_insert_with(HashMap::new)
        .insert((node.id(), nr), tangent);
    ANY_SAVED.store(true, Ordering::Release);
}

/// The tangent output `nr` of `node` had when it was computed, if the node saved that
/// output and ops propagate tangents now.
pub fn output_tangent(node: &NodeRef, nr: u32) -> Option<Tensor> {
    if !ANY_SAVED.load(Ordering::Relaxed) || !propagates() {
        return None;
    }
    SAVED_TANGENTS
        .lock()
        .as_ref()?
        .get(&(node.id(), nr))
        .cloned()
}

/// The tangent of `t` at `level` (`unpack_dual`'s): none outside the level.
pub fn tangent(t: &Tensor, level: i64) -> Result<Option<Tensor>> {
    if level != LEVEL {
        return Err(Error::runtime("Invalid level given to _fw_primal"));
    }
    Ok(if is_active() { t.tangent() } else { None })
}

/// torch's checks of `make_dual(primal, tangent)` done in C++ (the dtype checks are the
/// Python function's): a level, no tangent yet, the same shape.
pub fn check_make_dual(primal: &Tensor, tangent: &Tensor, level: i64) -> Result<()> {
    if level < 0 || !is_active() {
        return Err(Error::runtime(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() first.",
        ));
    }
    if level != LEVEL {
        return Err(Error::runtime("Invalid level given to _make_dual"));
    }
    if primal.has_tangent() {
        return Err(Error::runtime(format!(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at the same level {level} is not supported."
        )));
    }
    let (ps, ts) = (primal.shape(), tangent.shape());
    if ps != ts {
        return Err(Error::runtime(format!(
            "Trying to set a forward gradient that has a different size than that of the original Tensor, this is not supported. Tensor is of size {} while the given forward gradient is of size {}.",
            crate::shape::fmt_shape(&ps),
            crate::shape::fmt_shape(&ts)
        )));
    }
    Ok(())
}
