//! The computation graph: nodes live in one process-wide arena of fixed-size chunks and
//! are addressed by index + generation.
//!
//! Why an arena: torch allocates every node as its own reference-counted heap object,
//! which costs a malloc/free pair and scattered memory per op. Here a node is a slot in
//! a 1024-slot chunk; freed slots go on a free list and are reused, so a training loop
//! that builds the same graph every step allocates nothing for graph bookkeeping in
//! steady state. Chunks are never freed or moved, so a slot can be reached with one
//! atomic load and no global lock.
//!
//! Ownership follows torch: a tensor's `grad_fn` and every edge hold a strong
//! [`NodeRef`] (a count in the slot); a node dies when its count reaches zero, and its
//! edges are released *iteratively* (a thread-local work list), so dropping a
//! 100,000-node chain cannot overflow the stack.

use crate::autograd::function::{BackwardCtx, BackwardOp};
use crate::dtype::DType;
use crate::shape::Shape;
use crate::tensor::{Tensor, TensorImpl};
use crate::{Error, Result};
use parking_lot::{Mutex, MutexGuard};
use smallvec::SmallVec;
use std::cell::{Cell, RefCell, UnsafeCell};
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};

pub use crate::autograd::saved::{SavedTensor, unpack_unowned};

/// A gradient hook: may return a replacement gradient.
pub type Hook = Arc<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;

/// Gradients as node hooks see and replace them: one per output of the node (pre-hooks)
/// or per input of its op (post-hooks); `None`: no gradient.
pub type HookGrads = SmallVec<[Option<Tensor>; 2]>;

/// A node pre-hook (`Node.register_prehook`): sees the gradients of the node's outputs
/// before its formula runs; may return replacements (checked by its maker).
pub type NodePreHook = Arc<dyn Fn(&[Option<Tensor>]) -> Result<Option<HookGrads>> + Send + Sync>;

/// A node post-hook (`Node.register_hook`): sees (grad_inputs, grad_outputs), what the
/// formula returned and what it was given; may return replacement grad_inputs.
pub type NodePostHook =
    Arc<dyn Fn(&[Option<Tensor>], &[Option<Tensor>]) -> Result<Option<HookGrads>> + Send + Sync>;

/// A leaf's post-accumulate-grad hook (`Tensor.register_post_accumulate_grad_hook`):
/// called with the leaf once its `.grad` holds the new gradient.
pub type PostAccHook = Arc<dyn Fn(&Tensor) -> Result<()> + Send + Sync>;

/// A node's own hooks (a graph node's, or a leaf's AccumulateGrad's), by registration id;
/// a leaf's also keep its post-accumulate-grad hooks (`post_acc`, run before `post`).
#[derive(Default, Clone)]
pub struct NodeHooks {
    pub pre: Vec<(u64, NodePreHook)>,
    pub post: Vec<(u64, NodePostHook)>,
    pub post_acc: Vec<(u64, PostAccHook)>,
}

impl NodeHooks {
    pub fn is_empty(&self) -> bool {
        self.pre.is_empty() && self.post.is_empty() && self.post_acc.is_empty()
    }
    /// Removes the hook `id` (of any kind).
    pub fn remove(&mut self, id: u64) {
        self.pre.retain(|h| h.0 != id);
        self.post.retain(|h| h.0 != id);
        self.post_acc.retain(|h| h.0 != id);
    }
}

/// Where a gradient flows: into input `input_nr` of another node, or into a leaf's `.grad`.
#[derive(Clone)]
pub enum Edge {
    Node { node: NodeRef, input_nr: u32 },
    Leaf(Tensor),
}

/// Shape and dtype of one output of a node, to validate and zero-fill its gradient.
#[derive(Clone, Debug)]
pub struct OutputMeta {
    pub shape: Shape,
    pub dtype: DType,
    /// Where a gradient for this output lives (a zero one is made there).
    pub device: crate::device::DeviceCode,
}

/// A node as ops build it: the backward op plus its graph data. In the arena the op is
/// stored apart from the rest (it never changes while the node lives, so the engine and
/// `name()` read it without the node's lock or a copy).
pub struct Node {
    pub(crate) op: BackwardOp,
    pub(crate) saved: SmallVec<[SavedTensor; 2]>,
    /// One entry per differentiable input of the forward op (`None`: no grad needed).
    pub(crate) next: SmallVec<[Option<Edge>; 2]>,
    pub(crate) outputs: SmallVec<[OutputMeta; 1]>,
}

impl Node {
    pub fn new(
        op: BackwardOp,
        next: SmallVec<[Option<Edge>; 2]>,
        outputs: SmallVec<[OutputMeta; 1]>,
    ) -> Node {
        Node {
            op,
            saved: SmallVec::new(),
            next,
            outputs,
        }
    }
}

/// The mutable part of a live node, behind the slot's lock.
pub struct NodeData {
    pub(crate) saved: SmallVec<[SavedTensor; 2]>,
    /// Saved tensors were freed by a backward without retain_graph.
    pub(crate) released: bool,
    /// Some saved tensor was packed by a saved-tensor hook (backward unpacks them).
    pub(crate) packed: bool,
    /// One entry per differentiable input of the forward op (`None`: no grad needed).
    pub(crate) next: SmallVec<[Option<Edge>; 2]>,
    pub(crate) outputs: SmallVec<[OutputMeta; 1]>,
    /// What few nodes have (hooks, retain_grad, a Python object), boxed: one pointer in
    /// every node instead of 64 bytes.
    extra: Option<Box<NodeExtra>>,
}

/// The rarely used part of a node.
#[derive(Default)]
struct NodeExtra {
    /// Hooks of non-leaf tensors that are outputs of this node: (output_nr, id, hook).
    pre_hooks: Vec<(u32, u64, Hook)>,
    /// Non-leaf tensors that called retain_grad(): (output_nr, tensor).
    retains: Vec<(u32, Weak<TensorImpl>)>,
    /// Opaque slot for the binding layer (a weak reference to the node's Python object,
    /// so that `y.grad_fn is y.grad_fn`, as in torch).
    binding: Option<Arc<dyn std::any::Any + Send + Sync>>,
    /// The node's own hooks (`register_prehook`, `register_hook`).
    node_hooks: NodeHooks,
    /// The binding's `Node.metadata` dict (kept for the node's life, as in torch).
    metadata: Option<Arc<dyn std::any::Any + Send + Sync>>,
    /// What the binding keeps alive while the node lives (the AccumulateGrad objects
    /// of the leaves a node made under a node-creation hook is wired to).
    keep: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

impl NodeData {
    fn extra_mut(&mut self) -> &mut NodeExtra {
        self.extra.get_or_insert_with(Box::default)
    }
    /// Hooks of non-leaf tensors that are outputs of this node: (output_nr, id, hook).
    pub fn pre_hooks(&self) -> &[(u32, u64, Hook)] {
        self.extra.as_ref().map_or(&[], |e| &e.pre_hooks)
    }
    pub fn pre_hooks_mut(&mut self) -> &mut Vec<(u32, u64, Hook)> {
        &mut self.extra_mut().pre_hooks
    }
    /// Non-leaf tensors that called retain_grad(): (output_nr, tensor).
    pub fn retains(&self) -> &[(u32, Weak<TensorImpl>)] {
        self.extra.as_ref().map_or(&[], |e| &e.retains)
    }
    pub fn retains_mut(&mut self) -> &mut Vec<(u32, Weak<TensorImpl>)> {
        &mut self.extra_mut().retains
    }
    /// The binding layer's object for this node (see `NodeExtra::binding`).
    pub fn binding(&self) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        self.extra.as_ref().and_then(|e| e.binding.clone())
    }
    pub fn set_binding(&mut self, b: Option<Arc<dyn std::any::Any + Send + Sync>>) {
        self.extra_mut().binding = b;
    }
    /// The node's own hooks, if it has any.
    pub fn node_hooks(&self) -> Option<&NodeHooks> {
        self.extra
            .as_ref()
            .map(|e| &e.node_hooks)
            .filter(|h| !h.is_empty())
    }
    pub fn node_hooks_mut(&mut self) -> &mut NodeHooks {
        &mut self.extra_mut().node_hooks
    }
    /// The binding's metadata object for this node, if made.
    pub fn metadata(&self) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        self.extra.as_ref().and_then(|e| e.metadata.clone())
    }
    pub fn set_metadata(&mut self, m: Arc<dyn std::any::Any + Send + Sync>) {
        self.extra_mut().metadata = Some(m);
    }
    /// Keeps `k` alive as long as the node (see `NodeExtra::keep`).
    pub fn set_keep(&mut self, k: Arc<dyn std::any::Any + Send + Sync>) {
        self.extra_mut().keep = Some(k);
    }
    /// The leaves this node's edges reach (each once, in edge order).
    pub fn leaf_edges(&self) -> SmallVec<[Tensor; 2]> {
        let mut out: SmallVec<[Tensor; 2]> = SmallVec::new();
        for e in self.next.iter().flatten() {
            if let Edge::Leaf(t) = e
                && !out.iter().any(|o| o.same(t))
            {
                out.push(t.clone());
            }
        }
        out
    }
    /// Whether the engine has hooks to run for this node (tensor hooks of its outputs,
    /// retain_grad records, its own hooks).
    pub(crate) fn has_engine_hooks(&self) -> bool {
        self.extra.as_ref().is_some_and(|e| {
            !e.pre_hooks.is_empty() || !e.retains.is_empty() || !e.node_hooks.is_empty()
        })
    }
}

/// Where and when a node was made (see `dispatch::node_origin`): fixed for its life.
pub struct Origin {
    /// the making thread's sequence number for it (torch's `sequence_nr`)
    pub seq: u64,
    /// the making thread (the profiler's thread id)
    pub thread: u32,
    /// what an observer that was on kept (rare: boxed)
    pub extra: Option<Arc<OriginExtra>>,
}

/// What the observers keep of a node's making.
pub struct OriginExtra {
    /// anomaly mode: the Python traceback of the forward call, and the node whose
    /// backward made this one
    pub anomaly: Option<Arc<crate::autograd::anomaly::Made>>,
    /// the profiler: the name of the innermost `record_function` range it was made in,
    /// for its backward (`"<range> (backward)"`)
    pub range: Option<&'static str>,
}

// ---- the arena -------------------------------------------------------------------------

const CHUNK_BITS: u32 = 10;
const CHUNK: usize = 1 << CHUNK_BITS;
const MAX_CHUNKS: usize = 1 << 16; // 64M live nodes

struct Slot {
    refs: AtomicU32,
    generation: AtomicU32,
    /// Written only while no `NodeRef` to the slot exists (by `alloc` before the count
    /// is published, by the last `NodeRef`'s drop after it reached zero), so a `NodeRef`
    /// holder may read it without a lock.
    op: UnsafeCell<Option<BackwardOp>>,
    /// Written with `op`, under the same rule.
    origin: UnsafeCell<Origin>,
    node: Mutex<Option<NodeData>>,
}

// SAFETY: `op` is only written under the exclusive-access rule above; shared reads need
// `BackwardOp: Sync`, which the assertion below checks. Everything else is Sync.
unsafe impl Sync for Slot {}
// Every node of every graph pays for the largest backward op: an op with more to keep
// boxes it (see `OperandShapes`, `ReduceDims`).
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<BackwardOp>() <= 64);
const _: fn() = || {
    fn sync<T: Sync + Send>() {}
    sync::<BackwardOp>();
};

struct Arena {
    chunks: Box<[AtomicPtr<Slot>]>,
    next: AtomicUsize,
    free: Mutex<Vec<u32>>,
    grow: Mutex<()>,
    /// The length of every thread's cache of free slots (see `FreeCache`), for
    /// `live_nodes`.
    caches: Mutex<Vec<Arc<AtomicUsize>>>,
}

/// A thread's own stack of free slots: allocating and freeing a node takes no lock
/// (the shared list is visited once per `CACHE_BATCH` nodes). Its length is mirrored in
/// an atomic only its thread writes (a plain store), which `live_nodes` sums.
struct FreeCache {
    slots: Vec<u32>,
    len: Arc<AtomicUsize>,
}

const CACHE_BATCH: usize = 64;
const CACHE_MAX: usize = 4 * CACHE_BATCH;

impl FreeCache {
    fn new() -> FreeCache {
        let len = Arc::new(AtomicUsize::new(0));
        arena().caches.lock().push(len.clone());
        FreeCache {
            slots: Vec::with_capacity(CACHE_MAX + CACHE_BATCH),
            len,
        }
    }
    fn pop(&mut self) -> Option<u32> {
        if self.slots.is_empty() {
            let mut free = arena().free.lock();
            let n = free.len().min(CACHE_BATCH);
            let at = free.len() - n;
            self.slots.extend(free.drain(at..));
        }
        let i = self.slots.pop();
        self.len.store(self.slots.len(), Ordering::Relaxed);
        i
    }
    fn push_all(&mut self, freed: &[u32]) {
        self.slots.extend_from_slice(freed);
        if self.slots.len() > CACHE_MAX {
            let keep = CACHE_MAX - CACHE_BATCH;
            arena().free.lock().extend(self.slots.drain(keep..));
        }
        self.len.store(self.slots.len(), Ordering::Relaxed);
    }
}

impl Drop for FreeCache {
    // thread exit: the slots go back to the shared list
    fn drop(&mut self) {
        let mut free = arena().free.lock();
        free.append(&mut self.slots);
        self.len.store(0, Ordering::Relaxed);
        drop(free);
        arena().caches.lock().retain(|c| !Arc::ptr_eq(c, &self.len));
    }
}

thread_local! {
    static FREE_CACHE: RefCell<Option<FreeCache>> = const { RefCell::new(None) };
}

/// A free slot from this thread's cache (refilled from the shared list), if any.
fn pop_free() -> Option<u32> {
    FREE_CACHE
        .try_with(|c| {
            c.try_borrow_mut()
                .ok()
                .and_then(|mut c| c.get_or_insert_with(FreeCache::new).pop())
        })
        .ok()
        .flatten()
        .or_else(|| arena().free.lock().pop())
}

/// Returns freed slots: to this thread's cache, or the shared list once it is gone.
fn push_free(freed: &[u32]) {
    let cached = FREE_CACHE
        .try_with(|c| match c.try_borrow_mut() {
            Ok(mut c) => {
                c.get_or_insert_with(FreeCache::new).push_all(freed);
                true
            }
            Err(_) => false,
        })
        .unwrap_or(false);
    if !cached {
        arena().free.lock().extend_from_slice(freed);
    }
}

fn arena() -> &'static Arena {
    static ARENA: OnceLock<Arena> = OnceLock::new();
    ARENA.get_or_init(|| Arena {
        chunks: (0..MAX_CHUNKS)
            .map(|_| AtomicPtr::new(std::ptr::null_mut()))
            .collect(),
        next: AtomicUsize::new(0),
        free: Mutex::new(Vec::new()),
        grow: Mutex::new(()),
        caches: Mutex::new(Vec::new()),
    })
}

impl Arena {
    fn slot(&self, idx: u32) -> &Slot {
        let (c, i) = ((idx >> CHUNK_BITS) as usize, idx as usize & (CHUNK - 1));
        let p = self.chunks[c].load(Ordering::Acquire);
        // SAFETY: `idx` was handed out by `alloc`, which published chunk `c` (Release)
        // before returning any index in it; chunks are leaked, never freed or moved, and
        // hold exactly CHUNK slots, so `p.add(i)` is in bounds and valid for 'static.
        unsafe { &*p.add(i) }
    }

    /// A slot never used before (the free lists are empty), in a new chunk if needed.
    #[cold]
    fn fresh_slot(&self) -> Result<u32> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        let c = i >> CHUNK_BITS;
        if c >= MAX_CHUNKS {
            return Err(Error::runtime(
                "rgrad: too many live autograd nodes (limit 67108864)",
            ));
        }
        if self.chunks[c].load(Ordering::Acquire).is_null() {
            let _g = self.grow.lock();
            if self.chunks[c].load(Ordering::Acquire).is_null() {
                let chunk: Box<[Slot]> = (0..CHUNK)
                    .map(|_| Slot {
                        refs: AtomicU32::new(0),
                        generation: AtomicU32::new(0),
                        op: UnsafeCell::new(None),
                        origin: UnsafeCell::new(Origin {
                            seq: 0,
                            thread: 0,
                            extra: None,
                        }),
                        node: Mutex::new(None),
                    })
                    .collect();
                self.chunks[c].store(Box::leak(chunk).as_mut_ptr(), Ordering::Release);
            }
        }
        Ok(i as u32)
    }

    /// Inlined into every op that records, so the node is written into its slot from
    /// where the op built it (one copy, not three: W1 forward 0.246 -> 0.235 µs per op).
    #[inline(always)]
    fn alloc(&self, node: Node) -> Result<NodeRef> {
        let idx = match pop_free() {
            Some(i) => i,
            None => self.fresh_slot()?,
        };
        let slot = self.slot(idx);
        let Node {
            op,
            saved,
            next,
            outputs,
        } = node;
        // SAFETY: the slot is ours alone (fresh, or popped from the free list; its count
        // is 0, so no NodeRef reads `op` or locks `node`, and `WeakNodeRef::upgrade`
        // refuses a count of 0) until the count is published below (Release: the writes
        // are seen by whoever takes a count).
        let origin = crate::dispatch::node_origin();
        unsafe {
            *slot.op.get() = Some(op);
            *slot.origin.get() = origin;
            *slot.node.data_ptr() = Some(NodeData {
                saved,
                released: false,
                packed: false,
                next,
                outputs,
                extra: None,
            });
        }
        slot.refs.store(1, Ordering::Release);
        let node = NodeRef {
            idx,
            generation: slot.generation.load(Ordering::Acquire),
        };
        if crate::autograd::node_hooks::maybe_active() {
            crate::autograd::node_hooks::made(&node)?;
        }
        Ok(node)
    }
}

/// Number of arena slots ever created (live + free), for benchmarks and tests.
pub fn arena_capacity() -> usize {
    arena().next.load(Ordering::Relaxed)
}

/// Number of live nodes.
pub fn live_nodes() -> usize {
    // (exact when no other thread is allocating or freeing nodes meanwhile)
    let a = arena();
    let cached: usize = a
        .caches
        .lock()
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .sum();
    arena_capacity().saturating_sub(a.free.lock().len() + cached)
}

/// A strong reference to a node (like torch's `shared_ptr<Node>`).
pub struct NodeRef {
    idx: u32,
    generation: u32,
}

impl NodeRef {
    #[inline(always)]
    pub fn new(node: Node) -> Result<NodeRef> {
        arena().alloc(node)
    }
    fn slot(&self) -> &'static Slot {
        arena().slot(self.idx)
    }
    /// Locks the node. Never call Python or run a kernel while holding this.
    pub fn lock(&self) -> MappedNode<'_> {
        self.lock_unborrowed()
    }
    /// `lock` without borrowing `self` (arena slots are never freed): for a caller that
    /// keeps the node alive through another reference while it holds the guard.
    pub(crate) fn lock_unborrowed(&self) -> MappedNode<'static> {
        MappedNode {
            guard: self.slot().node.lock(),
        }
    }
    /// The node's arena slot (unique among live nodes).
    pub(crate) fn slot_index(&self) -> u32 {
        self.idx
    }
    /// A stable identity for the node while it lives.
    pub fn id(&self) -> u64 {
        (u64::from(self.generation) << 32) | u64::from(self.idx)
    }
    pub fn ptr_eq(&self, other: &NodeRef) -> bool {
        self.idx == other.idx && self.generation == other.generation
    }
    pub fn name(&self) -> String {
        self.op().name().into_owned()
    }
    /// The node's backward op (fixed for the node's life; no lock needed).
    pub fn op(&self) -> &BackwardOp {
        // SAFETY: `self` holds a count, so the slot is live and `op` is not written until
        // the count reaches zero (see `Slot`); `alloc` set it before publishing the count.
        match unsafe { &*self.slot().op.get() } {
            Some(op) => op,
            None => unreachable_dead_node(),
        }
    }
    /// Where and when the node was made (fixed for its life; no lock needed).
    pub fn origin(&self) -> &Origin {
        // SAFETY: as for `op`: written by `alloc` before the count was published.
        unsafe { &*self.slot().origin.get() }
    }
    /// torch's `sequence_nr` of the node.
    pub fn sequence_nr(&self) -> u64 {
        self.origin().seq
    }
    /// Gives up this reference without releasing the node: the slot index if this was
    /// the last one (the caller then clears the slot), else `None`.
    fn release_count(self) -> Option<u32> {
        let this = std::mem::ManuallyDrop::new(self);
        if this.slot().refs.fetch_sub(1, Ordering::Release) != 1 {
            return None;
        }
        std::sync::atomic::fence(Ordering::Acquire);
        Some(this.idx)
    }
    /// A reference that does not keep the node alive (a custom Function's ctx holds its
    /// node this way: the node owns the ctx, so a strong reference back would be a cycle).
    pub fn downgrade(&self) -> WeakNodeRef {
        WeakNodeRef {
            idx: self.idx,
            generation: self.generation,
        }
    }
}

/// A non-owning reference to a node; `upgrade` fails once the node is gone.
#[derive(Clone, Copy, Debug)]
pub struct WeakNodeRef {
    idx: u32,
    generation: u32,
}

impl WeakNodeRef {
    /// The node, if it is still alive.
    pub fn upgrade(&self) -> Option<NodeRef> {
        let slot = arena().slot(self.idx);
        // Take a count only while the slot is live (a count of 0 never comes back up
        // until the slot is reused by `alloc`).
        let mut n = slot.refs.load(Ordering::Relaxed);
        loop {
            if n == 0 {
                return None;
            }
            match slot
                .refs
                .compare_exchange_weak(n, n + 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => n = now,
            }
        }
        // We hold a count, so the slot cannot die now; it is ours if the generation
        // matches (a reused slot has a higher generation).
        let current = slot.generation.load(Ordering::Acquire);
        let strong = NodeRef {
            idx: self.idx,
            generation: current,
        };
        if current == self.generation {
            Some(strong)
        } else {
            drop(strong); // a count on someone else's node: give it back
            None
        }
    }
}

/// A locked node.
pub struct MappedNode<'a> {
    guard: MutexGuard<'a, Option<NodeData>>,
}

impl std::ops::Deref for MappedNode<'_> {
    type Target = NodeData;
    fn deref(&self) -> &NodeData {
        match self.guard.as_ref() {
            Some(n) => n,
            // Invariant: a slot holds a node for as long as any NodeRef to it exists.
            None => unreachable_dead_node(),
        }
    }
}
impl std::ops::DerefMut for MappedNode<'_> {
    fn deref_mut(&mut self) -> &mut NodeData {
        match self.guard.as_mut() {
            Some(n) => n,
            None => unreachable_dead_node(),
        }
    }
}

#[cold]
#[allow(clippy::panic)]
fn unreachable_dead_node() -> ! {
    panic!("rgrad internal error: a live NodeRef points at an empty arena slot")
}

impl Clone for NodeRef {
    fn clone(&self) -> Self {
        self.slot().refs.fetch_add(1, Ordering::Relaxed);
        NodeRef {
            idx: self.idx,
            generation: self.generation,
        }
    }
}

thread_local! {
    /// Slots whose count reached zero, waiting to have their contents dropped.
    static PENDING: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
    static DRAINING: Cell<bool> = const { Cell::new(false) };
}

impl Drop for NodeRef {
    fn drop(&mut self) {
        let slot = self.slot();
        if slot.refs.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        std::sync::atomic::fence(Ordering::Acquire);
        release_iteratively(self.idx);
    }
}

/// Drops a dead node's contents, whose edges and saved tensors may own long chains of
/// further nodes, with a work list of slot indices instead of recursion (a node dropped
/// while another is being cleared only queues its index). Contents are dropped in place
/// in the slot: nothing is moved out.
fn release_iteratively(idx: u32) {
    let queued = PENDING.try_with(|p| p.borrow_mut().push(idx));
    if queued.is_err() {
        // thread-local storage is gone (thread exit): clear it here, nodes it releases
        // one after another
        let mut dead: SmallVec<[u32; 16]> = smallvec::smallvec![idx];
        while let Some(i) = dead.pop() {
            clear_slot(i, &mut dead);
            arena().free.lock().push(i);
        }
        return;
    }
    if DRAINING.try_with(|d| d.replace(true)).unwrap_or(true) {
        return; // an outer call on this thread is already draining
    }
    // Freed slots go back to the free list together (one lock for a whole chain). Nodes
    // whose last reference was an edge of a cleared node go on a local stack (no
    // thread-local access per node); any other drop queues on PENDING.
    let mut freed: SmallVec<[u32; 8]> = SmallVec::new();
    let mut local: SmallVec<[u32; 16]> = SmallVec::new();
    loop {
        let next = match local.pop() {
            Some(i) => Some(i),
            None => PENDING.try_with(|p| p.borrow_mut().pop()).ok().flatten(),
        };
        let Some(i) = next else { break };
        clear_slot(i, &mut local);
        freed.push(i);
    }
    push_free(&freed);
    let _ = DRAINING.try_with(|d| d.set(false));
}

/// Drops the contents of a slot whose count reached zero (the caller then puts it on the
/// free list); nodes whose last reference was one of its edges are pushed on `dead`.
fn clear_slot(idx: u32, dead: &mut SmallVec<[u32; 16]>) {
    let slot = arena().slot(idx);
    // SAFETY: the count reached zero, so the slot is unreachable: no NodeRef reads `op`
    // or locks `node` any more, `WeakNodeRef::upgrade` refuses a count of 0, and the slot
    // is not reused before the caller puts it on the free list. Code run by the drops
    // (a custom Function's Python objects) can only queue further slots, never reach
    // this one.
    let data = unsafe { &mut *slot.node.data_ptr() };
    if let Some(d) = data.as_mut() {
        for e in d.next.drain(..).flatten() {
            match e {
                Edge::Node { node, .. } => dead.extend(node.release_count()),
                leaf => drop(leaf),
            }
        }
    }
    *data = None;
    // SAFETY: as above.
    unsafe {
        *slot.op.get() = None;
        (*slot.origin.get()).extra = None;
    }
    // (no other writer: a plain increment; upgrade's Acquire load pairs with the
    // Release store of the count that republishes the slot)
    let g = slot.generation.load(Ordering::Relaxed);
    slot.generation.store(g.wrapping_add(1), Ordering::Relaxed);
}

/// Builds the context a backward op sees when its node runs.
pub(crate) fn ctx_for<'a>(
    node: &'a NodeRef,
    saved: &'a [SavedTensor],
    released: bool,
    needs: SmallVec<[bool; 4]>,
    outputs: SmallVec<[OutputMeta; 1]>,
) -> BackwardCtx<'a> {
    BackwardCtx {
        node,
        saved,
        released,
        needs_input_grad: needs,
        outputs,
        forward_only: false,
    }
}

#[cfg(test)]
mod size_tests {
    /// A node is on every op's path: devices did not make it bigger.
    #[test]
    fn output_metadata_keeps_its_size() {
        assert_eq!(std::mem::size_of::<super::OutputMeta>(), 48);
    }
}
