//! Node-creation hooks (torch.autograd.graph.node_creation_hook): a thread-local stack of
//! hooks, each called with every graph node made on the thread while it is on the stack
//! (outermost hook first), once the node is whole: its edges, outputs and saved tensors
//! (packed by saved-tensor hooks, if any) in place.
//!
//! - Nodes are collected as they are allocated (`made`) and the hooks run when the
//!   outermost op that made them ends (`saved_hooks::scope`, which packs first), or, for
//!   nodes made outside any op (a custom Function's, a view's history re-derived when
//!   its `grad_fn` is read), when their maker calls [`fire_pending`]. Never under a lock.
//! - A node made while a hook runs on the thread is an error (torch's message): hooks
//!   observe nodes, they do not make them.
//! - The stack follows the thread's work into the backward executor: nodes made by a
//!   backward under `create_graph` fire the caller's hooks on whatever thread runs them.
//! - What calling a hook means is the binding's (`set_firer`): its hooks are Python
//!   callables, and it shows a leaf's AccumulateGrad node, which rgrad's graph does not
//!   hold, as a Python object the first time a leaf is wired in.
//!
//! Cost with no hook on any thread: one relaxed load of the dispatch bits per node made.

use crate::autograd::graph::NodeRef;
use crate::{Error, Result};
use parking_lot::{Mutex, RwLock};
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// One pushed hook (opaque to the core: the firer knows what it is).
pub type Hook = Arc<dyn Any + Send + Sync>;

/// Calls `hooks` (outermost first) with `node`, a node made while they were on.
pub type Firer = fn(hooks: &[Hook], node: &NodeRef) -> Result<()>;

static FIRER: RwLock<Option<Firer>> = RwLock::new(None);

/// Installs what calls the hooks (the binding does, once).
pub fn set_firer(f: Firer) {
    *FIRER.write() = Some(f);
}

/// A thread's node-creation hooks, as the engine carries them to the threads that run
/// a backward.
#[derive(Clone, Default)]
pub struct HookState {
    stack: Vec<Hook>,
}

thread_local! {
    static STATE: RefCell<HookState> = RefCell::new(HookState::default());
    /// A hook runs on this thread now.
    static FIRING: Cell<bool> = const { Cell::new(false) };
    /// Nodes made on this thread whose hooks have not run yet, in order.
    static PENDING: RefCell<Vec<NodeRef>> = const { RefCell::new(Vec::new()) };
}

/// How many threads have hooks; the dispatch bit follows it.
static THREADS_WITH_HOOKS: Mutex<usize> = Mutex::new(0);

fn recount(was: bool, now: bool) {
    if was != now {
        let mut n = THREADS_WITH_HOOKS.lock();
        *n = if now { *n + 1 } else { n.saturating_sub(1) };
        crate::dispatch::observe(crate::dispatch::NODE_HOOKS, *n > 0);
    }
}

/// Some thread may have node-creation hooks (one relaxed load).
#[inline(always)]
pub(crate) fn maybe_active() -> bool {
    crate::dispatch::observed() & crate::dispatch::NODE_HOOKS != 0
}

/// `_push_node_creation_hook`.
pub fn push(hook: Hook) {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        let was = !s.stack.is_empty();
        s.stack.push(hook);
        recount(was, true);
    });
}

/// `_pop_node_creation_hook`: the hook pushed last.
pub fn pop() -> Result<Hook> {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        let top = s.stack.pop();
        if top.is_some() {
            recount(true, !s.stack.is_empty());
        }
        top.ok_or_else(|| Error::runtime("no node creation hook to pop"))
    })
}

/// This thread's hooks, for the engine (`None` when it has none: the usual case costs
/// one relaxed load).
pub(crate) fn capture() -> Option<HookState> {
    crate::autograd::saved_hooks::capture_thread_state(&STATE, maybe_active(), |s| {
        !s.stack.is_empty()
    })
}

/// Runs `f` with `state` as this thread's hooks, then restores the thread's own (also
/// when `f` unwinds).
pub(crate) fn with_state<R>(state: &HookState, f: impl FnOnce() -> R) -> R {
    crate::autograd::saved_hooks::with_thread_state(
        &STATE,
        state,
        |s| !s.stack.is_empty(),
        recount,
        f,
    )
}

/// A node was just allocated while some thread has hooks (called by the arena, which
/// holds no lock of the node's then): kept for this thread's hooks, if it has any. An
/// error while one of them runs.
#[cold]
#[inline(never)]
pub(crate) fn made(node: &NodeRef) -> Result<()> {
    if FIRING.with(Cell::get) {
        return Err(Error::runtime(format!(
            "Creating a new autograd node from inside a node creation hook is not supported. Node creation \
             hooks should only observe the node (e.g. record it, stash metadata, or register backward hooks \
             on it); got a new node of type {} while a hook was running.",
            node.name()
        )));
    }
    if STATE.with(|s| !s.borrow().stack.is_empty()) {
        PENDING.with(|p| p.borrow_mut().push(node.clone()));
    }
    Ok(())
}

/// Runs this thread's hooks on the nodes made since the last call, in the order they
/// were made (each node: every hook, outermost first). Called where no lock is held and
/// the nodes are whole: the end of the outermost op, and by makers of nodes outside ops.
/// A hook's error is returned (the nodes not reached yet are not shown).
pub fn fire_pending() -> Result<()> {
    // (inside an op, its outermost scope fires when the op ends)
    if !maybe_active() || crate::autograd::saved_hooks::in_op() {
        return Ok(());
    }
    let pending = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
    if pending.is_empty() {
        return Ok(());
    }
    let hooks = STATE.with(|s| s.borrow().stack.clone());
    let Some(fire) = *FIRER.read() else {
        return Ok(());
    };
    if hooks.is_empty() {
        return Ok(());
    }
    struct Firing(bool);
    impl Drop for Firing {
        fn drop(&mut self) {
            let _ = FIRING.try_with(|f| f.set(self.0));
        }
    }
    let _firing = Firing(FIRING.with(|f| f.replace(true)));
    pending.iter().try_for_each(|n| fire(&hooks, n))
}

/// Forgets the nodes made since the last [`fire_pending`] (their op failed).
pub(crate) fn discard_pending() {
    let _ = PENDING.try_with(|p| p.borrow_mut().clear());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops;

    thread_local! {
        static SEEN: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    }

    /// A hook here is a label; the firer records "label:node".
    fn record(hooks: &[Hook], node: &NodeRef) -> Result<()> {
        for h in hooks {
            let label = h.downcast_ref::<&str>().copied().unwrap_or("?");
            SEEN.with(|s| s.borrow_mut().push(format!("{label}:{}", node.name())));
        }
        Ok(())
    }

    fn seen() -> Vec<String> {
        SEEN.with(|s| std::mem::take(&mut *s.borrow_mut()))
    }

    #[test]
    fn hooks_see_each_node_once_after_its_op_outermost_first() {
        set_firer(record);
        let x = crate::testing::leaf(vec![1.0, 2.0], &[2]);
        push(Arc::new("outer"));
        push(Arc::new("inner"));
        let y = ops::mul(&x, &x).unwrap();
        let _z = ops::sum(&y, None, false).unwrap();
        pop().unwrap();
        pop().unwrap();
        assert_eq!(
            seen(),
            [
                "outer:MulBackward0",
                "inner:MulBackward0",
                "outer:SumBackward0",
                "inner:SumBackward0"
            ]
        );
        // off again: nothing collected
        let _w = ops::mul(&x, &x).unwrap();
        fire_pending().unwrap();
        assert!(seen().is_empty());
        assert!(pop().is_err());
    }
}
