//! Saved-tensor hooks (torch.autograd.graph.saved_tensors_hooks): a thread-local stack of
//! pack / unpack pairs. While one is on the stack, every tensor a recorded node saves is
//! handed to the top pair's `pack`, and the node keeps what it returned instead of the
//! tensor; `unpack` gives a tensor back when backward (or `ctx.saved_tensors`) reads it.
//! torch's SavedVariable with hooks (csrc/autograd/saved_variable.cpp), to the letter:
//!
//! - pack runs with grad mode off, on the tensor itself (an output of the node with the
//!   node as its grad_fn), and may not modify it in place;
//! - unpack's result gets the saved tensor's history back: an output's node, an input's
//!   grad_fn, or, for a leaf that requires grad, gradients that reach the leaf itself;
//! - no version check is made (the hooks own the data);
//! - `disable` makes pushing a pair (and saving under a pushed one) an error with the
//!   given message.
//!
//! Cost when no thread has a pair: none on saving. Whether any thread has one is a bit of
//! the dispatch point's one atomic (`dispatch::SAVED_HOOKS`), which every op reads anyway;
//! only then do the op scopes collect the nodes they make (`scope`, `register`), and the
//! tensors are packed when the outermost op ends (an in-place op's result first moves
//! into its destination, so the tensor packed is the one the node keeps, as in torch).

use crate::autograd::graph::NodeRef;
use crate::tensor::Tensor;
use crate::{Error, Result};
use parking_lot::Mutex;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// A pack / unpack pair (the binding's holds two Python callables).
pub trait SavedTensorHooks: Send + Sync {
    /// Packs `t` (called with grad mode off): what the node keeps instead of `t`.
    fn pack(&self, t: &Tensor) -> Result<Arc<dyn PackedTensor>>;
    /// For the binding: its own type (`_top_saved_tensors_default_hooks` gives the pair
    /// back).
    fn as_any(&self) -> &dyn std::any::Any;
}

/// What a pack hook returned: unpacking calls the pair's unpack hook on it.
pub trait PackedTensor: Send + Sync {
    fn unpack(&self) -> Result<Tensor>;
}

/// A thread's saved-tensor hook state (torch's `SavedTensorDefaultHooksTLS`): the stack of
/// pairs and, while disabled, the message of the error that pushing one raises.
#[derive(Clone, Default)]
pub struct HookState {
    stack: Vec<Arc<dyn SavedTensorHooks>>,
    disabled: Option<Arc<str>>,
}

thread_local! {
    static STATE: RefCell<HookState> = RefCell::new(HookState::default());
    /// Depth of op scopes on this thread (see [`scope`]).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Nodes made in the current outermost op scope whose saved tensors wait to be packed.
    static PENDING: RefCell<Vec<NodeRef>> = const { RefCell::new(Vec::new()) };
}

/// How many threads have a non-empty stack; the dispatch bit follows it (changed under
/// this lock, so two threads pushing and popping cannot leave it wrong).
static THREADS_WITH_HOOKS: Mutex<usize> = Mutex::new(0);

fn count_thread(delta: isize) {
    let mut n = THREADS_WITH_HOOKS.lock();
    *n = n.saturating_add_signed(delta);
    crate::dispatch::observe(crate::dispatch::SAVED_HOOKS, *n > 0);
}

/// Counts this thread in or out when its stack goes from empty to not or back.
fn recount(was: bool, now: bool) {
    if was != now {
        count_thread(if now { 1 } else { -1 });
    }
}

/// Some thread may have saved-tensor hooks (one relaxed load): the op scopes collect
/// nodes only then.
#[inline(always)]
pub(crate) fn maybe_active() -> bool {
    crate::dispatch::observed() & crate::dispatch::SAVED_HOOKS != 0
}

/// Ops run in op scopes ([`scope`]): some thread has saved-tensor or node-creation hooks.
#[inline(always)]
pub(crate) fn scoped() -> bool {
    crate::dispatch::observed() & crate::dispatch::SCOPED != 0
}

/// This thread is inside an op scope.
pub(crate) fn in_op() -> bool {
    DEPTH.with(Cell::get) > 0
}

/// `_push_saved_tensors_default_hooks`: an error while hooks are disabled.
pub fn push(hooks: Arc<dyn SavedTensorHooks>) -> Result<()> {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        if let Some(msg) = &s.disabled {
            return Err(Error::runtime(msg.to_string()));
        }
        let was = !s.stack.is_empty();
        s.stack.push(hooks);
        recount(was, true);
        Ok(())
    })
}

/// `_pop_saved_tensors_default_hooks`: the pair pushed last.
pub fn pop() -> Result<Arc<dyn SavedTensorHooks>> {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        let top = s.stack.pop();
        if top.is_some() {
            recount(true, !s.stack.is_empty());
        }
        top.ok_or_else(|| Error::runtime("no saved tensors default hooks to pop"))
    })
}

/// The pair a tensor saved now would be packed with (the top of the stack), if any.
pub fn top() -> Option<Arc<dyn SavedTensorHooks>> {
    STATE.with(|s| s.borrow().stack.last().cloned())
}

/// `_saved_tensors_hooks_disable(message, fail_if_non_empty)`: the message is set first;
/// then, with pairs on the stack and `fail_if_non_empty`, the error is raised.
pub fn disable(message: &str, fail_if_non_empty: bool) -> Result<()> {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.disabled = Some(Arc::from(message));
        if fail_if_non_empty && !s.stack.is_empty() {
            return Err(Error::runtime(message.to_string()));
        }
        Ok(())
    })
}

/// `_saved_tensors_hooks_enable`.
pub fn enable() {
    STATE.with(|s| s.borrow_mut().disabled = None);
}

/// `_saved_tensors_hooks_is_enabled`.
pub fn is_enabled() -> bool {
    STATE.with(|s| s.borrow().disabled.is_none())
}

/// `_saved_tensors_hooks_get_disabled_error_message`.
pub fn disabled_message() -> Option<String> {
    STATE.with(|s| s.borrow().disabled.as_deref().map(str::to_string))
}

/// This thread's state, for the engine to run a backward's nodes under (torch propagates
/// its thread-local state to the threads that run the graph): `None` when no thread has
/// hooks (the usual case, one relaxed load) or this one has none.
pub(crate) fn capture() -> Option<HookState> {
    capture_thread_state(&STATE, maybe_active(), |s| !s.stack.is_empty())
}

/// A copy of the thread-local `key` if some thread may have hooks (`active`, one relaxed
/// load) and this one has (`on`); else `None`.
pub(crate) fn capture_thread_state<S: Clone + 'static>(
    key: &'static std::thread::LocalKey<RefCell<S>>,
    active: bool,
    on: fn(&S) -> bool,
) -> Option<S> {
    if !active {
        return None;
    }
    key.with(|s| {
        let s = s.borrow();
        on(&s).then(|| s.clone())
    })
}

/// Runs `f` with `state` as this thread's hook state, then restores the thread's own.
pub(crate) fn with_state<R>(state: &HookState, f: impl FnOnce() -> R) -> R {
    with_thread_state(&STATE, state, |s| !s.stack.is_empty(), recount, f)
}

/// Runs `f` with `state` in the thread-local `key`, then puts the thread's own back (also
/// when `f` unwinds); `recount(was_on, now_on)` follows every swap (`on`: the state has
/// hooks). The engine runs a backward's nodes so under its caller's hook states.
pub(crate) fn with_thread_state<S: Clone + 'static, R>(
    key: &'static std::thread::LocalKey<RefCell<S>>,
    state: &S,
    on: fn(&S) -> bool,
    recount: fn(bool, bool),
    f: impl FnOnce() -> R,
) -> R {
    struct Restore<S: 'static> {
        key: &'static std::thread::LocalKey<RefCell<S>>,
        old: Option<S>,
        on: fn(&S) -> bool,
        recount: fn(bool, bool),
    }
    impl<S: 'static> Drop for Restore<S> {
        fn drop(&mut self) {
            if let Some(old) = self.old.take() {
                let _ = self.key.try_with(|s| {
                    let mut s = s.borrow_mut();
                    let was = (self.on)(&s);
                    *s = old;
                    (self.recount)(was, (self.on)(&s));
                });
            }
        }
    }
    let old = key.with(|s| {
        let mut s = s.borrow_mut();
        let old = std::mem::replace(&mut *s, state.clone());
        recount(on(&old), on(&s));
        old
    });
    let _restore = Restore {
        key,
        old: Some(old),
        on,
        recount,
    };
    f()
}

// ---- packing ---------------------------------------------------------------------------

/// Runs one op (or an in-place op's op and commit) with the nodes it makes collected, and
/// packs their saved tensors when the outermost scope ends, then shows them to the
/// node-creation hooks. Called only when [`scoped`].
pub(crate) fn scope<R>(f: impl FnOnce() -> Result<R>) -> Result<R> {
    /// Leaves the scope, also when `f` unwinds (an outermost scope left by a panic
    /// forgets the nodes it collected).
    struct Leave(u32);
    impl Drop for Leave {
        fn drop(&mut self) {
            let _ = DEPTH.try_with(|d| d.set(self.0 - 1));
            if self.0 == 1 && std::thread::panicking() {
                let _ = PENDING.try_with(|p| p.borrow_mut().clear());
            }
        }
    }
    let depth = DEPTH.with(|d| {
        let v = d.get() + 1;
        d.set(v);
        v
    });
    let leave = Leave(depth);
    let r = f();
    drop(leave);
    if depth != 1 {
        return r;
    }
    let pending = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
    if r.is_err() {
        // (the failed op's nodes are not shown to node-creation hooks)
        crate::autograd::node_hooks::discard_pending();
    }
    let r = r?;
    if !pending.is_empty()
        && let Some(hooks) = current_hooks()?
    {
        for node in &pending {
            pack_node(node, &hooks)?;
        }
    }
    crate::autograd::node_hooks::fire_pending()?;
    Ok(r)
}

/// A node with saved tensors was made while [`maybe_active`]: its tensors are packed when
/// the op ends, if this thread has hooks. (A node made outside any op scope, a custom
/// Function's, is packed by its maker with [`pack_list`].)
#[cold]
#[inline(never)]
pub(crate) fn register(node: &NodeRef) {
    if DEPTH.with(Cell::get) == 0 {
        return;
    }
    let has = STATE.with(|s| !s.borrow().stack.is_empty());
    if has {
        PENDING.with(|p| p.borrow_mut().push(node.clone()));
    }
}

/// The pair to pack with now: `None` without one; with one while disabled, none is used
/// (torch's SavedVariable asks for hooks only while enabled).
fn current_hooks() -> Result<Option<Arc<dyn SavedTensorHooks>>> {
    Ok(STATE.with(|s| {
        let s = s.borrow();
        if s.disabled.is_some() {
            None
        } else {
            s.stack.last().cloned()
        }
    }))
}

/// torch's message when a pack hook modified its input in place.
const PACK_MODIFIED: &str = "A saved tensor pack hook is modifying its input in place. Tensors provided as input to \
                             pack hook cannot be modified by in-place operations as this can lead to unexpected \
                             side-effects. Please open an issue if you need to perform in-place operations on the \
                             input to a pack hook.";

/// Packs `t` with `hooks` (grad mode off; the version must not move).
fn pack_one(hooks: &Arc<dyn SavedTensorHooks>, t: &Tensor) -> Result<Arc<dyn PackedTensor>> {
    let version = t.version();
    let p = crate::autograd::grad_mode::with_grad_mode(false, || hooks.pack(t))?;
    if t.version() != version {
        return Err(Error::runtime(PACK_MODIFIED));
    }
    Ok(p)
}

/// Packs every saved tensor of `node` that is not packed yet, in saved order. The node's
/// lock is not held while a hook runs.
fn pack_node(node: &NodeRef, hooks: &Arc<dyn SavedTensorHooks>) -> Result<()> {
    let todo: smallvec::SmallVec<[(usize, Tensor); 2]> = {
        let n = node.lock();
        let outputs = n.outputs.clone();
        n.saved
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.to_pack(node, &outputs).map(|t| t.map(|t| (i, t))))
            .collect::<Result<_>>()?
    };
    for (i, t) in todo {
        let packed = pack_one(hooks, &t)?;
        let s = crate::autograd::graph::SavedTensor::packed(&t, node, packed)?;
        let mut n = node.lock();
        if let Some(slot) = n.saved.get_mut(i) {
            *slot = s;
            n.packed = true;
        }
    }
    Ok(())
}

/// `node._raw_saved_<name>.register_hooks(pack, unpack)` (torch's
/// `SavedVariable::register_hooks`): saved tensor `i` of `node` is packed now with
/// `hooks`, and unpacked through them when read.
pub fn pack_saved_slot(
    node: &NodeRef,
    i: Option<u8>,
    hooks: Arc<dyn SavedTensorHooks>,
) -> Result<()> {
    const FREED: &str = "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate \
                         values of the graph are freed when you call .backward() or autograd.grad(). Specify \
                         retain_graph=True if you need to backward through the graph a second time or if you need \
                         to access saved variables after calling backward.";
    let Some(i) = i else {
        return Err(Error::runtime(
            "Calling register_hooks on a saved tensor with value None is forbidden",
        ));
    };
    let t = {
        let n = node.lock();
        if n.released {
            return Err(Error::runtime(FREED));
        }
        let outputs = n.outputs.clone();
        let slot = n
            .saved
            .get(usize::from(i))
            .ok_or_else(|| Error::runtime(FREED))?;
        match slot.to_pack(node, &outputs) {
            None => {
                return Err(Error::runtime(
                    "Calling register_hooks on a saved tensor whose hooks have already been set. Hint: only one \
                     pair of hooks is allowed at a time.",
                ));
            }
            Some(t) => t?,
        }
    };
    let packed = pack_one(&hooks, &t)?;
    let s = crate::autograd::graph::SavedTensor::packed(&t, node, packed)?;
    let mut n = node.lock();
    if let Some(slot) = n.saved.get_mut(usize::from(i)) {
        *slot = s;
        n.packed = true;
    }
    Ok(())
}

/// Packs a list of saved tensors about to be stored in `node` (a custom Function's
/// `save_for_backward`, whose outputs already carry the node), if this thread has hooks.
pub(crate) fn pack_list(
    node: &NodeRef,
    saved: &mut [crate::autograd::graph::SavedTensor],
) -> Result<()> {
    if !maybe_active() {
        return Ok(());
    }
    let Some(hooks) = current_hooks()? else {
        return Ok(());
    };
    let outputs = node.lock().outputs.clone();
    for s in saved.iter_mut() {
        if let Some(t) = s.to_pack(node, &outputs).transpose()? {
            let packed = pack_one(&hooks, &t)?;
            *s = crate::autograd::graph::SavedTensor::packed(&t, node, packed)?;
        }
    }
    Ok(())
}

/// torch's `_make_saved_tensor(tensor, is_output=False)`: a tensor saved outside any node
/// (checkpoint saves its inputs so), packed with the current hooks if any.
pub fn make_saved(t: &Tensor) -> Result<crate::autograd::graph::SavedTensor> {
    let s = crate::autograd::graph::SavedTensor::input(t);
    if maybe_active()
        && let Some(hooks) = current_hooks()?
    {
        let packed = pack_one(&hooks, t)?;
        return crate::autograd::graph::SavedTensor::packed_input(t, packed);
    }
    Ok(s)
}

// ---- mutation hooks (allow_mutation_on_saved_tensors) ----------------------------------

/// Called with a tensor an in-place op is about to write (torch runs
/// `allow_mutation_on_saved_tensors`' clone-before-mutate mode at that point).
pub type MutationHook = Arc<dyn Fn(&Tensor) -> Result<()> + Send + Sync>;

thread_local! {
    static MUTATION_HOOKS: RefCell<Vec<MutationHook>> = const { RefCell::new(Vec::new()) };
}

/// How many mutation hooks are installed on all threads (in-place ops read it: one
/// relaxed load when it is 0).
static MUTATION_HOOK_COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Installs `hook` on this thread (innermost last).
pub fn push_mutation_hook(hook: MutationHook) {
    MUTATION_HOOKS.with(|h| h.borrow_mut().push(hook));
    MUTATION_HOOK_COUNT.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
}

/// Removes this thread's innermost mutation hook.
pub fn pop_mutation_hook() -> Result<()> {
    let popped = MUTATION_HOOKS.with(|h| h.borrow_mut().pop());
    match popped {
        Some(_) => {
            MUTATION_HOOK_COUNT.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
            Ok(())
        }
        None => Err(Error::runtime("no mutation hook to pop")),
    }
}

/// An in-place op is about to write `t`: this thread's mutation hooks see it first.
#[inline]
pub(crate) fn before_mutation(t: &Tensor) -> Result<()> {
    if MUTATION_HOOK_COUNT.load(std::sync::atomic::Ordering::Relaxed) == 0 {
        return Ok(());
    }
    run_mutation_hooks(t)
}

#[cold]
fn run_mutation_hooks(t: &Tensor) -> Result<()> {
    let hooks = MUTATION_HOOKS.with(|h| h.borrow().clone());
    for h in hooks {
        h(t)?;
    }
    Ok(())
}
