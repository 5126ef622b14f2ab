//! The `Tensor` handle: shared storage + layout + autograd metadata.
//!
//! A `Tensor` is an `Arc` to one small record. Why one `Mutex` around all mutable state
//! rather than finer locks: an op needs the storage, layout, `requires_grad` and
//! `grad_fn` of each input together, so one uncontended lock per input (~10 ns with
//! parking_lot) is the cheapest consistent read; `.data = ...`, in-place history
//! rewrites and `.grad` updates are the only writers. Two facts are also kept outside the
//! lock, republished whenever it is let go: a hint byte (requires grad, has history, is a
//! view), which lets most inputs of most ops (constants) skip the lock, and the element
//! count. No lock here is ever held while a kernel runs or while Python code runs:
//! `snapshot()` copies out what an op needs.

use crate::autograd::graph::{Hook, NodeRef};
use crate::dtype::{DType, Scalar};
use crate::layout::Layout;
use crate::shape::Shape;
use crate::storage::{Buffer, Storage};
use crate::{Error, Result};
use parking_lot::{Mutex, MutexGuard};
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

#[derive(Clone)]
pub struct Tensor(pub(crate) Arc<TensorImpl>);

/// How a tensor was asked to require grad: torch 2.15 refuses a non-float dtype with a
/// different message for each.
#[derive(Clone, Copy, Debug)]
pub enum RequiresGradCall {
    /// `x.requires_grad_()`
    Method,
    /// `x.requires_grad = True`
    Attribute,
    /// `requires_grad=True` given to a factory or the tensor constructor
    Factory,
}

impl RequiresGradCall {
    fn message(self) -> &'static str {
        match self {
            RequiresGradCall::Method => {
                "only Tensors of floating point dtype can require gradients"
            }
            RequiresGradCall::Attribute => {
                "only Tensors of floating point and complex dtype can require gradients"
            }
            RequiresGradCall::Factory => {
                "Only Tensors of floating point and complex dtype can require gradients"
            }
        }
    }
}

pub struct TensorImpl {
    inner: Mutex<Inner>,
    /// What `requires_grad` and `edge_of` ask of every input of every op, readable
    /// without the lock: bits `HINT_*`, republished by [`Locked`] whenever the lock is let
    /// go, so it is never stale to the thread that wrote it. Most inputs of most ops are
    /// constants with none of the bits set, and cost no lock round trip.
    hint: AtomicU8,
    /// The element count, for the binding's decision to release the GIL (only
    /// `set_data` changes it).
    numel: AtomicUsize,
}

const HINT_REQUIRES_GRAD: u8 = 1;
const HINT_GRAD_FN: u8 = 2;
const HINT_BASE: u8 = 4;
/// Has a forward-mode tangent (`autograd::forward_ad`); says nothing about reverse mode.
const HINT_TANGENT: u8 = 8;
/// The bits that give a tensor an edge in the reverse-mode graph.
const HINT_REVERSE: u8 = HINT_REQUIRES_GRAD | HINT_GRAD_FN | HINT_BASE;

impl Inner {
    fn hint(&self) -> u8 {
        let bit = |on: bool, bit: u8| if on { bit } else { 0 };
        bit(self.requires_grad, HINT_REQUIRES_GRAD)
            | bit(self.grad_fn.is_some(), HINT_GRAD_FN)
            | bit(self.base().is_some(), HINT_BASE)
            | bit(self.has_tangent, HINT_TANGENT)
    }
}

/// A tensor's lock held: derefs to its [`Inner`]; on release it republishes the
/// lock-free hint (a write through the guard can have changed it).
pub(crate) struct Locked<'a> {
    g: MutexGuard<'a, Inner>,
    hint: &'a AtomicU8,
}

impl std::ops::Deref for Locked<'_> {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.g
    }
}
impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut Inner {
        &mut self.g
    }
}
impl Drop for Locked<'_> {
    fn drop(&mut self) {
        let h = self.g.hint();
        if self.hint.load(Ordering::Relaxed) != h {
            self.hint.store(h, Ordering::Release);
        }
    }
}

pub(crate) struct Inner {
    pub storage: Arc<Storage>,
    /// The version counter, shared by a tensor, its views and `detach()`ed aliases, and
    /// bumped by every in-place op on any of them (see [`Version`]).
    pub version: Version,
    pub layout: Layout,
    pub dtype: DType,
    /// Set on leaves by the user; derived for non-leaves (grad_fn.is_some()).
    pub requires_grad: bool,
    /// `cold.tangent` is set (kept here so that republishing the hint reads no cold part).
    has_tangent: bool,
    pub grad_fn: Option<NodeRef>,
    /// Which output of `grad_fn` this tensor is.
    pub output_nr: u32,
    /// What few tensors have, boxed: one pointer in every tensor instead of 72 bytes.
    cold: Option<Box<Cold>>,
}

/// The rarely used part of a tensor's record.
#[derive(Default)]
pub(crate) struct Cold {
    pub grad: Option<Tensor>,
    pub retains_grad: bool,
    /// Hooks of a leaf (a non-leaf's hooks live on its grad_fn node, as in torch).
    pub hooks: Vec<(u64, Hook)>,
    /// The tensor this one is a view of (for in-place ops on views: `CopySlices`).
    pub base: Option<Tensor>,
    /// Storage version at which a view's history was last derived from its base; when
    /// the version moves on (an in-place op on the base or a sibling view), the view's
    /// `grad_fn` is regenerated from the base (`ops::refresh_view`), as torch does.
    pub view_version: u64,
    /// Set on the outputs of an op that returns several views (split, chunk, unbind) and
    /// on views of them: torch forbids modifying them in place with autograd on.
    pub multi_output: Option<MultiOutput>,
    /// The forward-mode tangent at the dual level (`autograd::forward_ad`), of this
    /// tensor's shape and dtype.
    pub tangent: Option<Tensor>,
    /// Opaque slot for the binding layer (a weak reference to the Python object, so that
    /// `x.grad is x.grad` and `AccumulateGrad.variable is x` hold, as in torch).
    pub binding: Option<Arc<dyn std::any::Any + Send + Sync>>,
    /// A leaf unpacked from a saved-tensor hook: the leaf whose `.grad` its gradients
    /// reach (torch gives it the saved leaf's grad accumulator).
    pub grad_leaf: Option<Weak<TensorImpl>>,
    /// Hooks of this leaf's AccumulateGrad node (`register_prehook` / `register_hook` on
    /// `next_functions`' AccumulateGrad): they live with the leaf.
    pub acc_hooks: Option<Box<crate::autograd::graph::NodeHooks>>,
    /// The binding's object for this leaf's AccumulateGrad node (held weakly).
    acc_binding: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

/// A view that comes from an op returning several views (torch's
/// `CreationMeta::MULTI_OUTPUT_NODE`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct MultiOutput {
    /// The op, as torch's messages name it (`Unbind`), and which of its outputs this is;
    /// `None` for a view of such an output, which messages name by its own `grad_fn`.
    pub op: Option<(&'static str, u32)>,
}

impl Inner {
    pub(crate) fn cold(&self) -> Option<&Cold> {
        self.cold.as_deref()
    }
    pub(crate) fn cold_mut(&mut self) -> &mut Cold {
        self.cold.get_or_insert_with(Box::default)
    }
    pub(crate) fn cold_mut_if_any(&mut self) -> Option<&mut Cold> {
        self.cold.as_deref_mut()
    }
    pub(crate) fn base(&self) -> Option<&Tensor> {
        self.cold()?.base.as_ref()
    }
    /// The forward-mode tangent, if any.
    pub(crate) fn tangent(&self) -> Option<&Tensor> {
        self.cold()?.tangent.as_ref()
    }
    /// A leaf's hooks.
    pub(crate) fn hooks(&self) -> &[(u64, Hook)] {
        self.cold().map_or(&[], |c| &c.hooks)
    }
    /// See [`Tensor::leaf_target`] (`t`: the tensor this is the record of).
    pub(crate) fn leaf_target(&self, t: &Tensor) -> Tensor {
        match self.cold().and_then(|c| c.grad_leaf.as_ref()) {
            Some(w) => Tensor::upgrade(w).unwrap_or_else(|| t.clone()),
            None => t.clone(),
        }
    }
}

/// Where a tensor's version counter lives. Usually in its storage (no allocation of its
/// own: every op output is a fresh storage). `.data` gets a counter of its own, so that
/// writes through `.data` are invisible to autograd's checks, as in torch; its views and
/// aliases share that one. So does a tensor given new data by `x.data = y`, which
/// keeps its counter (see `Storage::version_moved_out`).
///
/// A copy that an op makes of an input to promote its dtype shares the input's counter
/// (`Of`, by the input's storage, or `Own`), so that what the op saves of the copy is
/// known to be stale once the input is modified, as torch (which saves the input itself)
/// knows it.
#[derive(Clone)]
pub(crate) enum Version {
    Storage,
    Own(Arc<AtomicU64>),
    Of(Arc<Storage>),
}

impl Inner {
    fn version_counter(&self) -> &AtomicU64 {
        match &self.version {
            Version::Storage => self.storage.version(),
            Version::Own(v) => v,
            Version::Of(storage) => storage.version(),
        }
    }
    /// The version counter's value.
    pub(crate) fn version(&self) -> u64 {
        self.version_counter().load(Ordering::Acquire)
    }
}

/// What an op reads from an input, copied out under the lock.
#[derive(Clone)]
pub struct Snapshot {
    pub storage: Arc<Storage>,
    pub layout: Layout,
    pub dtype: DType,
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.snapshot();
        write!(
            f,
            "Tensor(shape={:?}, dtype={}, requires_grad={})",
            s.layout.shape.as_slice(),
            s.dtype.name(),
            self.requires_grad()
        )
    }
}

fn leaf_only_error(flag: bool) -> Error {
    let mut msg = String::from("you can only change requires_grad flags of leaf variables.");
    if !flag {
        msg.push_str(
            " If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().",
        );
    }
    Error::runtime(msg)
}

impl Tensor {
    fn from_parts(storage: Arc<Storage>, layout: Layout, dtype: DType, version: Version) -> Tensor {
        Tensor::new_record(storage, layout, dtype, version, None)
    }
    /// The one constructor of a tensor record; `grad_fn`: output 0 of that node.
    #[inline(always)]
    fn new_record(
        storage: Arc<Storage>,
        layout: Layout,
        dtype: DType,
        version: Version,
        grad_fn: Option<NodeRef>,
    ) -> Tensor {
        // (built in place: a record assembled first and then moved costs a memcpy per op)
        let hint = if grad_fn.is_some() { HINT_GRAD_FN } else { 0 };
        Tensor(Arc::new(TensorImpl {
            hint: AtomicU8::new(hint),
            numel: AtomicUsize::new(layout.numel()),
            inner: Mutex::new(Inner {
                storage,
                version,
                layout,
                dtype,
                requires_grad: false,
                has_tangent: false,
                grad_fn,
                output_nr: 0,
                cold: None,
            }),
        }))
    }

    /// A tensor on a fresh storage (its version counter at 0).
    pub(crate) fn from_storage(storage: Arc<Storage>, layout: Layout, dtype: DType) -> Tensor {
        Tensor::from_parts(storage, layout, dtype, Version::Storage)
    }
    /// A tensor on a fresh storage that is output 0 of `node`: its history set as it is
    /// made, with no lock taken.
    pub(crate) fn with_history(
        storage: Arc<Storage>,
        layout: Layout,
        dtype: DType,
        node: NodeRef,
    ) -> Tensor {
        Tensor::new_record(storage, layout, dtype, Version::Storage, Some(node))
    }
    /// A new contiguous tensor owning `buf` with the given shape.
    pub fn from_buffer(buf: Buffer, shape: &[usize]) -> Tensor {
        debug_assert_eq!(
            buf.len(),
            crate::shape::numel(shape),
            "buffer length must match shape"
        );
        let dtype = buf.dtype();
        crate::replay::born(&buf);
        Tensor::from_storage(
            Arc::new(Storage::new(buf)),
            Layout::contiguous(shape),
            dtype,
        )
    }

    /// A tensor sharing `self`'s storage with another layout (a view). No autograd.
    pub(crate) fn alias_with_layout(&self, layout: Layout) -> Tensor {
        let (storage, dtype, version) = {
            let g = self.lock();
            (g.storage.clone(), g.dtype, g.version.clone())
        };
        Tensor::from_parts(storage, layout, dtype, version)
    }
    /// A tensor sharing `self`'s storage with another layout and a version counter of its
    /// own, which is not a view (torch's `unsafe_split` pieces: a write to one is not seen
    /// by autograd as a write to `self`). No autograd.
    pub(crate) fn alias_unsafe(&self, layout: Layout) -> Tensor {
        let (storage, dtype) = {
            let g = self.lock();
            (g.storage.clone(), g.dtype)
        };
        Tensor::from_parts(storage, layout, dtype, Version::Own(Arc::default()))
    }
    /// Records an in-place modification (torch's `_version` += 1).
    pub fn bump_version(&self) {
        self.lock().version_counter().fetch_add(1, Ordering::AcqRel);
    }

    pub fn snapshot(&self) -> Snapshot {
        let g = self.lock();
        let s = Snapshot {
            storage: g.storage.clone(),
            layout: g.layout.clone(),
            dtype: g.dtype,
        };
        drop(g);
        crate::replay::seen(&s.storage);
        s
    }

    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
    pub fn same(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
    pub fn downgrade(&self) -> Weak<TensorImpl> {
        Arc::downgrade(&self.0)
    }
    pub fn upgrade(w: &Weak<TensorImpl>) -> Option<Tensor> {
        w.upgrade().map(Tensor)
    }

    // ---- metadata --------------------------------------------------------------------
    pub fn shape(&self) -> Shape {
        crate::shape::copy(&self.lock().layout.shape)
    }
    /// `self.shape() == shape`, without copying the shape out.
    pub fn has_shape(&self, shape: &[usize]) -> bool {
        self.lock().layout.shape.as_slice() == shape
    }
    pub fn layout(&self) -> Layout {
        self.lock().layout.clone()
    }
    pub fn dtype(&self) -> DType {
        self.lock().dtype
    }
    /// The device of the tensor's storage.
    pub fn device(&self) -> crate::device::Device {
        self.storage().device()
    }
    pub fn ndim(&self) -> usize {
        self.lock().layout.ndim()
    }
    pub fn numel(&self) -> usize {
        self.0.numel.load(Ordering::Relaxed)
    }
    pub fn is_contiguous(&self) -> bool {
        self.lock().layout.is_contiguous()
    }
    pub fn storage(&self) -> Arc<Storage> {
        let s = self.lock().storage.clone();
        crate::replay::seen(&s);
        s
    }
    pub fn version(&self) -> u64 {
        self.lock().version()
    }

    // ---- values --------------------------------------------------------------------
    /// The single element of a one-element tensor (torch's `item()`).
    pub fn item(&self) -> Result<Scalar> {
        let n = self.numel();
        if n != 1 {
            return Err(Error::runtime(format!(
                "a Tensor with {n} elements cannot be converted to Scalar"
            )));
        }
        crate::replay::refuse("item() (a tensor's value read by Python)")?;
        let s = self.snapshot();
        let r = s.storage.read();
        crate::backend::host::element(&r, s.layout.offset)
    }
    /// Whether a one-element tensor's element is not zero (torch's `is_nonzero`, what
    /// `bool(x)` asks); with no element or several the answer is ambiguous: an error.
    pub fn is_nonzero(&self) -> Result<bool> {
        let n = self.numel();
        if n != 1 {
            return Err(Error::runtime(format!(
                "Boolean value of Tensor with {} is ambiguous",
                if n == 0 {
                    "no values"
                } else {
                    "more than one value"
                }
            )));
        }
        Ok(self.item()?.as_f64() != 0.0)
    }

    // ---- autograd metadata -----------------------------------------------------------
    pub fn requires_grad(&self) -> bool {
        match self.0.hint.load(Ordering::Acquire) & HINT_REVERSE {
            0 => return false,
            HINT_BASE => {}
            _ => return true,
        }
        let g = self.lock();
        if g.requires_grad || g.grad_fn.is_some() {
            return true;
        }
        // a view of a tensor that came to require grad through an in-place op
        let base = g.base().cloned();
        drop(g);
        base.is_some_and(|b| b.requires_grad())
    }
    pub fn is_leaf(&self) -> bool {
        self.0.hint.load(Ordering::Acquire) & HINT_GRAD_FN == 0
    }
    /// Is a view of another tensor (read without the lock).
    pub(crate) fn is_view(&self) -> bool {
        self.0.hint.load(Ordering::Acquire) & HINT_BASE != 0
    }
    /// Neither requires grad, nor has history, nor is a view: such a tensor has no edge
    /// (read without the lock).
    pub(crate) fn is_plain(&self) -> bool {
        self.0.hint.load(Ordering::Acquire) & HINT_REVERSE == 0
    }
    /// Has a forward-mode tangent (read without the lock).
    pub(crate) fn has_tangent(&self) -> bool {
        self.0.hint.load(Ordering::Acquire) & HINT_TANGENT != 0
    }
    /// The forward-mode tangent (`autograd::forward_ad` sets it).
    pub fn tangent(&self) -> Option<Tensor> {
        if !self.has_tangent() {
            return None;
        }
        self.lock().tangent().cloned()
    }
    /// Sets or clears the tangent, returning the old one (dropped by the caller, not
    /// under the lock).
    pub(crate) fn replace_tangent(&self, t: Option<Tensor>) -> Option<Tensor> {
        let mut g = self.lock();
        g.has_tangent = t.is_some();
        match t {
            Some(t) => g.cold_mut().tangent.replace(t),
            None => g.cold_mut_if_any().and_then(|c| c.tangent.take()),
        }
    }
    pub fn grad_fn(&self) -> Option<NodeRef> {
        self.lock().grad_fn.clone()
    }
    pub fn output_nr(&self) -> u32 {
        self.lock().output_nr
    }
    /// `requires_grad_(flag)` with torch's checks (floating point only; a non-leaf may
    /// only be asked to keep requiring grad).
    pub fn set_requires_grad(&self, flag: bool) -> Result<()> {
        self.set_requires_grad_by(flag, RequiresGradCall::Method)
    }
    /// [`Tensor::set_requires_grad`], refused with the wording torch uses for `call`.
    pub fn set_requires_grad_by(&self, flag: bool, call: RequiresGradCall) -> Result<()> {
        let mut g = self.lock();
        if g.grad_fn.is_some() {
            if flag {
                return Ok(());
            }
            return Err(leaf_only_error(false));
        }
        if flag && !g.dtype.is_float() {
            return Err(Error::RequiresGradDtype(call.message()));
        }
        g.requires_grad = flag;
        Ok(())
    }
    /// The `requires_grad = flag` attribute setter: torch refuses it on any non-leaf.
    pub fn set_requires_grad_attr(&self, flag: bool) -> Result<()> {
        if !self.is_leaf() {
            return Err(leaf_only_error(flag));
        }
        self.set_requires_grad_by(flag, RequiresGradCall::Attribute)
    }
    pub fn grad(&self) -> Option<Tensor> {
        self.lock().cold().and_then(|c| c.grad.clone())
    }
    pub fn set_grad(&self, grad: Option<Tensor>) -> Result<()> {
        crate::replay::note_grad(self, true);
        if let Some(gr) = &grad {
            let (gs, gd) = (gr.shape(), gr.dtype());
            let g = self.lock();
            if gd != g.dtype {
                return Err(Error::runtime("assigned grad has data of a different type"));
            }
            if gs != g.layout.shape {
                return Err(Error::runtime("assigned grad has data of a different size"));
            }
        }
        let mut g = self.lock();
        if grad.is_some() || g.cold().is_some() {
            g.cold_mut().grad = grad;
        }
        Ok(())
    }
    pub fn retains_grad(&self) -> bool {
        let g = self.lock();
        g.grad_fn.is_some() && g.cold().is_some_and(|c| c.retains_grad)
    }
    pub(crate) fn set_history(&self, node: NodeRef, output_nr: u32) {
        let mut g = self.lock();
        let old = g.grad_fn.replace(node);
        g.output_nr = output_nr;
        drop(g);
        drop(old); // releasing the old history may run arbitrary drops: not under the lock
    }
    pub fn base(&self) -> Option<Tensor> {
        self.lock().base().cloned()
    }
    pub(crate) fn set_base(&self, base: Option<Tensor>) {
        let mut g = self.lock();
        if base.is_none() && g.cold().is_none() {
            return;
        }
        let now = g.version();
        let c = g.cold_mut();
        c.view_version = now;
        c.base = base;
    }

    /// See [`MultiOutput`]; only views can have one.
    pub(crate) fn multi_output(&self) -> Option<MultiOutput> {
        if !self.is_view() {
            return None;
        }
        self.lock().cold().and_then(|c| c.multi_output)
    }
    pub(crate) fn set_multi_output(&self, m: MultiOutput) {
        self.lock().cold_mut().multi_output = Some(m);
    }

    /// Makes this tensor (a fresh alias, no history) a leaf that requires grad whose
    /// gradients reach `leaf` (when it is still alive), as torch's unpacked saved leaf.
    pub(crate) fn set_leaf_requires_grad(&self, leaf: Option<Weak<TensorImpl>>) {
        let mut g = self.lock();
        g.requires_grad = true;
        if leaf.is_some() {
            g.cold_mut().grad_leaf = leaf;
        }
    }
    /// The leaf whose `.grad` this leaf's gradients reach: itself, or the leaf it was
    /// unpacked from (see `Cold::grad_leaf`).
    pub fn leaf_target(&self) -> Tensor {
        let g = self.lock();
        g.leaf_target(self)
    }

    /// `detach()`: a new leaf sharing storage (and version counter), no history.
    pub fn detach(&self) -> Tensor {
        self.detach_with_version().0
    }
    /// `detach()` and the version counter's value, read under one lock (what saving a
    /// tensor for backward needs).
    pub(crate) fn detach_with_version(&self) -> (Tensor, u64) {
        let (storage, layout, dtype, version, now) = {
            let g = self.lock();
            (
                g.storage.clone(),
                g.layout.clone(),
                g.dtype,
                g.version.clone(),
                g.version(),
            )
        };
        (Tensor::from_parts(storage, layout, dtype, version), now)
    }
    /// A snapshot and the version counter's value under one lock.
    pub(crate) fn snapshot_with_version(&self) -> (Snapshot, u64) {
        let g = self.lock();
        let s = Snapshot {
            storage: g.storage.clone(),
            layout: g.layout.clone(),
            dtype: g.dtype,
        };
        let v = g.version();
        drop(g);
        crate::replay::seen(&s.storage);
        (s, v)
    }
    /// Shape and dtype under one lock.
    pub(crate) fn shape_and_dtype(&self) -> (Shape, DType) {
        let g = self.lock();
        (crate::shape::copy(&g.layout.shape), g.dtype)
    }
    /// `x.data`: like `detach()`, but with a version counter of its own.
    pub fn data(&self) -> Tensor {
        let s = self.snapshot();
        let own = Version::Own(Arc::default());
        Tensor::from_parts(s.storage, s.layout, s.dtype, own)
    }
    /// `detach_()`: drops history in place.
    pub fn detach_(&self) {
        let mut g = self.lock();
        g.grad_fn = None;
        g.requires_grad = false;
        g.output_nr = 0;
        if let Some(c) = g.cold_mut_if_any() {
            c.base = None;
        }
    }
    /// Makes this tensor (a promoted copy of `source`, made by an op) count its versions
    /// with `source`'s counter (see [`Version`]).
    pub(crate) fn share_version_of(&self, source: &Tensor) {
        let v = {
            let g = source.lock();
            match &g.version {
                Version::Storage => Version::Of(g.storage.clone()),
                other => other.clone(),
            }
        };
        self.lock().version = v;
    }
    /// Whether this tensor counts its versions with `other`'s counter (an alias of it, or
    /// a promoted copy made of it by [`share_version_of`](Self::share_version_of)).
    pub(crate) fn counts_versions_of(&self, other: &Tensor) -> bool {
        let a: *const AtomicU64 = self.lock().version_counter();
        let b: *const AtomicU64 = other.lock().version_counter();
        std::ptr::eq(a, b)
    }
    /// The same data and history with a version counter of its own (a promoted copy that
    /// no longer follows its source: see [`Version`]).
    pub(crate) fn with_own_version(&self) -> Tensor {
        let (storage, layout, dtype, grad_fn, output_nr, requires_grad) = {
            let g = self.lock();
            (
                g.storage.clone(),
                g.layout.clone(),
                g.dtype,
                g.grad_fn.clone(),
                g.output_nr,
                g.requires_grad,
            )
        };
        let t = Tensor::from_parts(storage, layout, dtype, Version::Storage);
        match grad_fn {
            Some(f) => t.set_history(f, output_nr),
            None if requires_grad => t.lock().requires_grad = true,
            None => {}
        }
        t
    }
    /// `x.data = other` (torch's set_data): adopt other's storage, layout and dtype while
    /// keeping this tensor's identity and autograd metadata.
    /// Gives the tensor a new geometry over the same storage (the in-place view ops:
    /// `squeeze_`, `transpose_`, ...); the caller checked that it lies in the storage.
    pub(crate) fn set_layout(&self, layout: Layout) {
        self.0.numel.store(layout.numel(), Ordering::Relaxed);
        self.lock().layout = layout;
    }
    pub fn set_data(&self, other: &Tensor) -> Result<()> {
        let s = other.snapshot();
        let mut g = self.lock();
        if g.requires_grad && !s.dtype.is_float() {
            return Err(Error::RequiresGradDtype(
                RequiresGradCall::Attribute.message(),
            ));
        }
        if let Version::Storage = g.version {
            // torch's set_data keeps the tensor's version counter, still shared with the
            // old storage's other tensors (its views, detached aliases)
            g.version = Version::Own(g.storage.version_moved_out());
        }
        g.storage = s.storage;
        self.0.numel.store(s.layout.numel(), Ordering::Relaxed);
        g.layout = s.layout;
        g.dtype = s.dtype;
        Ok(())
    }
    pub fn binding(&self) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        self.lock().cold().and_then(|c| c.binding.clone())
    }
    /// The binding layer's object for this leaf's AccumulateGrad node, if set.
    pub fn acc_binding(&self) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        self.lock().cold().and_then(|c| c.acc_binding.clone())
    }
    pub fn set_acc_binding(&self, b: Arc<dyn std::any::Any + Send + Sync>) {
        self.lock().cold_mut().acc_binding = Some(b);
    }
    pub fn set_binding(&self, b: Option<Arc<dyn std::any::Any + Send + Sync>>) {
        let mut g = self.lock();
        if b.is_some() || g.cold().is_some() {
            g.cold_mut().binding = b;
        }
    }
    pub(crate) fn lock(&self) -> Locked<'_> {
        Locked {
            g: self.0.inner.lock(),
            hint: &self.0.hint,
        }
    }
}
