//! CPU step replay (issue 19): one training step recorded at the backend seam as a
//! program of kernel calls, and replayed without Python, graph building or op checks.
//!
//! Recording: while a thread records (`begin` … `end`), every kernel the ops and the
//! autograd engine call on the host goes to [`record::Rec`] (`backend::on`, the free kernel
//! functions), which runs the CPU kernel and appends a [`Step`]: a boxed closure holding
//! the kernel's non-tensor arguments (layouts, dims, numbers), with its buffers named by
//! slot. Buffers are recognised by their data address, which a `Vec` keeps while it moves
//! from a kernel into a storage:
//! - `Intermediate`: made by a step during the recording (kernel outputs, random draws,
//!   host plans such as index lists read from a tensor);
//! - `Extern`: a storage that existed before the recording (parameters, their `.grad`,
//!   the static inputs), seen when an op takes a snapshot of its tensor; the program holds
//!   it and reads or writes it in place;
//! - `Const`: a buffer made during the recording without a kernel (a tensor built from
//!   Python numbers): copied at its birth and reused by every replay.
//!
//! What the program cannot reproduce is refused while recording, with the op named: a
//! value read on the host to plan Python's control flow (`item()`, `tolist()`, printing,
//! `nonzero`, a boolean mask), a random op other than `rand`, a kernel without a replay
//! rule (`arg_reduce`, `any_nonzero`), a custom Python Function, a CUDA buffer. Index
//! lists read from tensors (`gather`, `index_select`, index_put's positions, nll_loss's
//! targets) are host *plans*: a step recomputes them from the index tensor's slot on
//! every replay, and a plan whose shape of work would change (nll_loss's count of
//! targets not ignored) makes the replay fail with a clear error.
//!
//! Replay ([`Program::run`]): the steps in recorded order, on the calling thread or, for a
//! program with big kernels, on a pool thread (a kernel's result does not depend on how it
//! splits, so results are eager's bits);
//! an intermediate buffer is dropped after its last use (mimalloc hands the pages back to
//! the next replay's kernels). The frame of buffers by slot belongs to the program and
//! keeps only the constants between replays; each step carries what a replay reads for it
//! (input slots, its outputs' sizes, what to drop after it), so the common path touches
//! the steps, the frame and the kernels' memory, nothing else. A program that writes no
//! extern in place and replays on the calling thread read-locks its externs once for the
//! whole replay instead of once per step that reads them (the W1 chain's `h + a`). Then
//! the finish: storages whose buffer was swapped get the new one, version counters move
//! as eager moved them, leaves get their final `.grad`, and the outputs are returned as
//! fresh tensors without history. Replays of one program are serialised by its frame's
//! lock.
//!
//! A CUDA-graph capture can sit beside this: the same begin/end protocol and the same
//! program of slots, with steps that enqueue on a captured stream instead of calling the
//! CPU kernels.

pub mod record;

use crate::dtype::DType;
use crate::layout::Layout;
use crate::storage::{Buffer, Storage};
use crate::tensor::Tensor;
use crate::{Error, Result};
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A slot's index in its program.
pub type SlotId = u32;
/// What a step returns: its new buffers, in the order of its `outs`.
pub type Outs = SmallVec<[Buffer; 1]>;
/// A recorded kernel call: its input buffers (in slot order), the buffer it writes in place
/// (if any); returns its new buffers.
pub type StepFn = Box<dyn Fn(&[&Buffer], Option<&mut Buffer>) -> Result<Outs> + Send + Sync>;
/// A recorded kernel call that makes one new buffer and writes nothing in place (most of
/// them): its input buffers, in slot order, and its slot, which it fills. The buffer goes
/// straight into the frame, not back through the caller: reading a just-written buffer
/// to move it stalls on store forwarding, ~5 ns a move in the W1 chain.
type StepFn1 = Box<dyn Fn(&[&Buffer], &mut Option<Buffer>) -> Result<()> + Send + Sync>;

enum Kernel {
    One(StepFn1),
    Any(StepFn),
}

impl Kernel {
    fn call(&self, ins: &[&Buffer], dst: Option<&mut Buffer>) -> Result<Outs> {
        match self {
            Kernel::One(f) => {
                let mut out = None;
                f(ins, &mut out)?;
                Ok(out.into_iter().collect())
            }
            Kernel::Any(f) => f(ins, dst),
        }
    }
}

enum Kind {
    Intermediate,
    /// the buffer while recording; a program moves it into its frame (this one is empty)
    Const(Buffer),
    Extern(Arc<Storage>),
}

struct Slot {
    kind: Kind,
    dtype: DType,
    len: usize,
}

/// A new buffer a step makes: its slot, and what it must be (checked as it is stored).
#[derive(Clone, Copy)]
struct Out {
    slot: SlotId,
    dtype: DType,
    len: usize,
}

/// One kernel call of the program. A replay walks these in order, so what it reads per
/// step is here, inline (the slots' table is not touched on the common path).
struct Step {
    f: Kernel,
    ins: SmallVec<[SlotId; 3]>,
    outs: SmallVec<[Out; 1]>,
    /// intermediates whose last use is this step (dropped after it)
    free_after: SmallVec<[SlotId; 2]>,
    dst: Option<SlotId>,
    /// no destination, and inputs in the frame or pinned externs: read straight from there
    plain: bool,
    /// the kernel (what errors and `describe` name)
    name: &'static str,
}

/// What a leaf's `.grad` must be when a replay starts, for the program to be the step
/// eager mode would run.
enum LeafGuard {
    /// the step assigned `.grad` before reading it: anything
    Any,
    /// the engine stored the first gradient: `.grad` is None
    IsNone,
    /// the engine accumulated into this tensor (or the step read it): the same tensor
    Same(Tensor),
}

struct Leaf {
    t: Tensor,
    guard: LeafGuard,
}

#[derive(Default)]
struct Recording {
    slots: Vec<Slot>,
    by_ptr: HashMap<usize, SlotId>,
    /// kernel outputs not yet wrapped in a storage
    pending: HashSet<usize>,
    /// extern storages by address: their slot and their version when first seen
    externs: HashMap<usize, (SlotId, u64)>,
    steps: Vec<Step>,
    leaves: Vec<Leaf>,
    /// the first refusal raised where no error could be returned
    error: Option<Error>,
}

/// One thread's recording (shared with the engine's workers while it runs a backward).
pub struct Session(Mutex<Recording>);

static RECORDING: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static CURRENT: RefCell<Option<Arc<Session>>> = const { RefCell::new(None) };
    /// set around the draws of a random op that records its own step (`rand`)
    static RANDOM_OK: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread is recording a step (one relaxed load when no thread is).
#[inline(always)]
pub fn active() -> bool {
    RECORDING.load(Ordering::Relaxed) != 0 && active_here()
}

#[inline(never)]
fn active_here() -> bool {
    CURRENT.with(|c| c.borrow().is_some())
}

fn session() -> Option<Arc<Session>> {
    if RECORDING.load(Ordering::Relaxed) == 0 {
        return None;
    }
    CURRENT.with(|c| c.borrow().clone())
}

/// The recording this thread is part of (for the engine to carry to its workers).
pub fn capture() -> Option<Arc<Session>> {
    session()
}

/// Runs `f` as part of `s` (a worker running a backward's node: the recording of the
/// thread that started the backward, or none), then restores the thread's own state. A
/// worker that runs another task's node while it waits inside a recorded node must not
/// record that node, so `None` is installed too while any thread records.
#[inline]
pub fn with_session<R>(s: &Option<Arc<Session>>, f: impl FnOnce() -> R) -> R {
    if s.is_none() && RECORDING.load(Ordering::Relaxed) == 0 {
        return f();
    }
    struct Restore(Option<Arc<Session>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = prev);
        }
    }
    let prev = CURRENT.with(|c| std::mem::replace(&mut *c.borrow_mut(), s.clone()));
    let _restore = Restore(prev);
    f()
}

fn refusal(what: &str) -> Error {
    Error::runtime(format!(
        "compile_step: {what} cannot be recorded: a replayed step runs the recorded kernels \
         without Python, so it cannot reproduce it (see rgrad.compile_step)"
    ))
}

/// Refuses `what` (an op that reads values on the host, an unsupported kernel) while this
/// thread records.
#[inline]
pub fn refuse(what: &str) -> Result<()> {
    if active() { Err(refusal(what)) } else { Ok(()) }
}

/// Where no error can be returned: the recording fails when it ends.
fn poison(what: &str) {
    if let Some(s) = session() {
        let mut r = s.0.lock();
        if r.error.is_none() {
            r.error = Some(refusal(what));
        }
    }
}

/// Starts recording on this thread.
pub fn begin() -> Result<()> {
    if active() {
        return Err(Error::runtime(
            "compile_step: this thread is already recording a step",
        ));
    }
    CURRENT.with(|c| *c.borrow_mut() = Some(Arc::new(Session(Mutex::new(Recording::default())))));
    RECORDING.fetch_add(1, Ordering::AcqRel);
    Ok(())
}

fn take_session() -> Option<Arc<Session>> {
    let s = CURRENT.with(|c| c.borrow_mut().take());
    if s.is_some() {
        RECORDING.fetch_sub(1, Ordering::AcqRel);
    }
    s
}

/// Stops recording on this thread and drops what was recorded.
pub fn abort() {
    drop(take_session());
}

/// The data address that names a host buffer (`None`: empty, or on a device).
fn addr(buf: &Buffer) -> Option<usize> {
    if buf.is_empty() {
        return None;
    }
    match buf {
        Buffer::Bool(v) => Some(v.as_ptr() as usize),
        Buffer::I64(v) => Some(v.as_ptr() as usize),
        Buffer::F32(v) => Some(v.as_ptr() as usize),
        Buffer::F64(v) => Some(v.as_ptr() as usize),
        Buffer::Cuda(_) => None,
    }
}

impl Recording {
    fn new_slot(&mut self, kind: Kind, dtype: DType, len: usize) -> SlotId {
        self.slots.push(Slot { kind, dtype, len });
        (self.slots.len() - 1) as SlotId
    }
    /// The slot of a buffer a kernel reads or writes.
    fn resolve(&mut self, buf: &Buffer, kernel: &str) -> Result<SlotId> {
        if matches!(buf, Buffer::Cuda(_)) {
            return Err(refusal(&format!(
                "the kernel '{kernel}' on a CUDA tensor (CPU step replay only; CUDA graphs are a separate part)"
            )));
        }
        let Some(a) = addr(buf) else {
            // an empty buffer carries no data: a constant
            return Ok(self.new_slot(Kind::Const(Buffer::zeros(buf.dtype(), 0)), buf.dtype(), 0));
        };
        match self.by_ptr.get(&a) {
            Some(&s)
                if self.slots[s as usize].len == buf.len()
                    && self.slots[s as usize].dtype == buf.dtype() =>
            {
                Ok(s)
            }
            _ => Err(Error::runtime(format!(
                "compile_step: the kernel '{kernel}' read a buffer the recorder cannot name \
                 (made outside the kernels and not seen as a tensor); please report"
            ))),
        }
    }
    fn output(&mut self, buf: &Buffer) -> Result<SlotId> {
        if matches!(buf, Buffer::Cuda(_)) {
            return Err(refusal("a CUDA buffer"));
        }
        let s = self.new_slot(Kind::Intermediate, buf.dtype(), buf.len());
        if let Some(a) = addr(buf) {
            self.by_ptr.insert(a, s);
            self.pending.insert(a);
        }
        Ok(s)
    }
}

/// Appends a step: `f` recomputes `outs` from `ins` (and writes `dst` in place). Called
/// after the eager kernel ran, with its buffers.
pub fn record(
    name: &'static str,
    ins: &[&Buffer],
    dst: Option<&Buffer>,
    outs: &[&Buffer],
    f: StepFn,
) -> Result<()> {
    push_step(name, ins, &[], dst, outs, Kernel::Any(f))
}

/// Appends a step that makes the one new buffer `out` from `ins`, then the slots `extra`
/// (host plans: index lists).
pub(crate) fn record_one(
    name: &'static str,
    ins: &[&Buffer],
    extra: &[SlotId],
    out: &Buffer,
    f: impl Fn(&[&Buffer]) -> Result<Buffer> + Send + Sync + 'static,
) -> Result<()> {
    let f: StepFn1 = Box::new(move |i, out| {
        *out = Some(f(i)?);
        Ok(())
    });
    push_step(name, ins, extra, None, &[out], Kernel::One(f))
}

fn push_step(
    name: &'static str,
    ins: &[&Buffer],
    extra: &[SlotId],
    dst: Option<&Buffer>,
    outs: &[&Buffer],
    f: Kernel,
) -> Result<()> {
    let Some(s) = session() else { return Ok(()) };
    let mut r = s.0.lock();
    let mut ins = ins
        .iter()
        .map(|b| r.resolve(b, name))
        .collect::<Result<SmallVec<[SlotId; 3]>>>()?;
    ins.extend_from_slice(extra);
    let dst = match dst {
        Some(d) => Some(r.resolve(d, name)?),
        None => None,
    };
    let outs = outs
        .iter()
        .map(|b| {
            Ok(Out {
                slot: r.output(b)?,
                dtype: b.dtype(),
                len: b.len(),
            })
        })
        .collect::<Result<SmallVec<[Out; 1]>>>()?;
    r.steps.push(Step {
        name,
        ins,
        dst,
        outs,
        f,
        free_after: SmallVec::new(),
        plain: false,
    });
    Ok(())
}

/// A buffer is being wrapped in a new storage: a kernel output stays its step's slot;
/// anything else (a tensor built from host numbers) becomes a constant of the program.
#[inline]
pub fn born(buf: &Buffer) {
    if active() {
        born_slow(buf);
    }
}

#[inline(never)]
fn born_slow(buf: &Buffer) {
    let Some(s) = session() else { return };
    let Some(a) = addr(buf) else { return };
    let mut r = s.0.lock();
    if r.pending.remove(&a)
        && let Some(&slot) = r.by_ptr.get(&a)
        && r.slots[slot as usize].len == buf.len()
        && r.slots[slot as usize].dtype == buf.dtype()
    {
        return;
    }
    let slot = r.new_slot(Kind::Const(buf.clone()), buf.dtype(), buf.len());
    r.by_ptr.insert(a, slot);
}

/// A buffer built on the host from numbers (a Python literal, a scalar operand) is made
/// a tensor: always a constant, also where its address is that of a freed kernel output
/// that was never wrapped in a storage (which `born` would take for that output).
#[inline]
pub fn const_born(buf: &Buffer) {
    if active() {
        if let Some(s) = session()
            && let Some(a) = addr(buf)
        {
            s.0.lock().pending.remove(&a);
        }
        born_slow(buf);
    }
}

/// An op took a snapshot of a tensor on `storage`: a storage from before the recording
/// becomes an extern slot.
#[inline]
pub fn seen(storage: &Arc<Storage>) {
    if active() {
        seen_slow(storage);
    }
}

#[inline(never)]
fn seen_slow(storage: &Arc<Storage>) {
    let Some(s) = session() else { return };
    let key = Arc::as_ptr(storage) as usize;
    let (a, dtype, len) = {
        let b = storage.read();
        (addr(&b), b.dtype(), b.len())
    };
    let Some(a) = a else { return };
    let mut r = s.0.lock();
    if r.externs.contains_key(&key) || r.by_ptr.contains_key(&a) {
        return;
    }
    let version = storage.version().load(Ordering::Acquire);
    let slot = r.new_slot(Kind::Extern(storage.clone()), dtype, len);
    r.by_ptr.insert(a, slot);
    r.externs.insert(key, (slot, version));
}

/// The slot of `index` (a kernel's host index list), if it is a recorded host plan
/// (`plan_index`); `None`: a constant list.
pub(crate) fn index_slot(index: &[i64]) -> Option<SlotId> {
    let s = session()?;
    if index.is_empty() {
        return None;
    }
    let r = s.0.lock();
    let &slot = r.by_ptr.get(&(index.as_ptr() as usize))?;
    let sl = &r.slots[slot as usize];
    (sl.dtype == DType::I64 && sl.len == index.len()).then_some(slot)
}

/// Records a host plan: `values`, read from `src` (a tensor's buffer), recomputed by `f`
/// on every replay. The list becomes a slot that index kernels name.
pub(crate) fn plan_index(
    src: &Buffer,
    values: &[i64],
    f: impl Fn(&Buffer) -> Result<Vec<i64>> + Send + Sync + 'static,
) -> Result<()> {
    if values.is_empty() {
        return Ok(());
    }
    let Some(s) = session() else { return Ok(()) };
    let mut r = s.0.lock();
    let src = r.resolve(src, "index plan")?;
    let slot = r.new_slot(Kind::Intermediate, DType::I64, values.len());
    let a = values.as_ptr() as usize;
    r.by_ptr.insert(a, slot);
    r.pending.insert(a);
    r.steps.push(Step {
        name: "index plan",
        ins: smallvec::smallvec![src],
        dst: None,
        outs: smallvec::smallvec![Out {
            slot,
            dtype: DType::I64,
            len: values.len(),
        }],
        f: Kernel::One(Box::new(move |i, out| {
            *out = Some(Buffer::I64(f(i[0])?.into()));
            Ok(())
        })),
        free_after: SmallVec::new(),
        plain: false,
    });
    Ok(())
}

/// Runs `f` (a random op's draws, recorded by the op itself) without the refusal that any
/// other use of a generator meets while recording.
pub fn random_ok<R>(f: impl FnOnce() -> R) -> R {
    let prev = RANDOM_OK.with(|c| c.replace(true));
    let r = f();
    RANDOM_OK.with(|c| c.set(prev));
    r
}

/// A generator is used: refused while recording, except inside [`random_ok`].
#[inline]
pub fn random_used() {
    if active() && !RANDOM_OK.with(|c| c.get()) {
        poison("a random op other than rand / rand_like (use `rand(...) < p` for dropout masks)");
    }
}

/// A leaf's `.grad` is about to be assigned (`assign`) or accumulated into by the engine.
pub fn note_grad(t: &Tensor, assign: bool) {
    if !active() {
        return;
    }
    let Some(s) = session() else { return };
    let mut r = s.0.lock();
    if r.leaves.iter().any(|l| l.t.same(t)) {
        return;
    }
    let guard = if assign {
        LeafGuard::Any
    } else {
        match t.grad() {
            None => LeafGuard::IsNone,
            Some(g) => LeafGuard::Same(g),
        }
    };
    r.leaves.push(Leaf {
        t: t.clone(),
        guard,
    });
}

// ---- the program --------------------------------------------------------------------

/// Where a leaf's `.grad` ends up after a replay.
enum GradOut {
    None,
    /// the tensor it had before (updated in place)
    Keep,
    New(OutSpec),
}

struct OutSpec {
    slot: SlotId,
    layout: Layout,
    dtype: DType,
    /// moved out of the frame (its only use at the finish) rather than copied
    take: bool,
}

/// A recorded step, ready to replay.
pub struct Program {
    slots: Vec<Slot>,
    steps: Vec<Step>,
    /// constants written in place by some step, as recorded: copied into the frame before
    /// each replay
    pristine: Vec<(SlotId, Buffer)>,
    /// intermediates the finish reads without taking them: dropped after it
    finish_reads: Vec<SlotId>,
    /// the externs read-locked for a whole replay (none if some step writes an extern in
    /// place, or if the program replays on the pool), in storage address order: the lock
    /// order
    pinned: Vec<Arc<Storage>>,
    /// (slot, its index in `pinned`), sorted by slot
    pin_of_slot: Vec<(SlotId, usize)>,
    rebinds: Vec<(Arc<Storage>, OutSpec)>,
    bumps: Vec<(Arc<Storage>, u64)>,
    leaves: Vec<(Leaf, GradOut)>,
    outputs: Vec<OutSpec>,
    /// replay on a pool thread (some kernel is big enough to split: [`SPLIT_ELEMENTS`])
    in_pool: bool,
    /// The buffers by slot. It outlives a replay, so that its memory is not allocated and
    /// first touched again by each replay, and the constants stay in it. Between replays
    /// it holds only the constants. Its lock serialises the replays of the program.
    frame: Mutex<Vec<Option<Buffer>>>,
}

/// A program with a buffer of this many elements or more replays on the pool (the
/// elementwise kernels split from 64K elements, products from 2^20 multiply-adds).
const SPLIT_ELEMENTS: usize = 16 * 1024;

/// Stops recording on this thread and turns what was recorded into a program whose
/// outputs are `outputs` (the step function's results).
pub fn end(outputs: &[Tensor]) -> Result<Program> {
    // (a result the step returns untouched, an input say, is named like any extern)
    for t in outputs {
        t.storage();
    }
    let Some(s) = take_session() else {
        return Err(Error::runtime("compile_step: this thread is not recording"));
    };
    let mut r = std::mem::take(&mut *s.0.lock());
    if let Some(e) = r.error.take() {
        return Err(e);
    }
    // finish uses of each slot (a slot used more than once there is copied)
    let mut finish_uses: HashMap<SlotId, usize> = HashMap::new();
    let slot_of = |r: &Recording, t: &Tensor| -> Result<(SlotId, Layout, DType)> {
        let sn = t.snapshot();
        let b = sn.storage.read();
        let slot = match addr(&b) {
            Some(a) => *r.by_ptr.get(&a).ok_or_else(|| {
                Error::runtime(
                    "compile_step: a result of the step is not made by the step's kernels nor \
                     seen by them; please report",
                )
            })?,
            None => {
                return Err(Error::runtime(
                    "compile_step: an empty result is not supported",
                ));
            }
        };
        Ok((slot, sn.layout.clone(), sn.dtype))
    };
    let mut outs = Vec::new();
    for t in outputs {
        let (slot, layout, dtype) = slot_of(&r, t)?;
        *finish_uses.entry(slot).or_default() += 1;
        outs.push(OutSpec {
            slot,
            layout,
            dtype,
            take: false,
        });
    }
    let mut leaves = Vec::new();
    for leaf in std::mem::take(&mut r.leaves) {
        let out = match leaf.t.grad() {
            None => GradOut::None,
            Some(g) if matches!(&leaf.guard, LeafGuard::Same(old) if old.same(&g)) => GradOut::Keep,
            Some(g) => {
                let (slot, layout, dtype) = slot_of(&r, &g)?;
                *finish_uses.entry(slot).or_default() += 1;
                GradOut::New(OutSpec {
                    slot,
                    layout,
                    dtype,
                    take: false,
                })
            }
        };
        leaves.push((leaf, out));
    }
    // extern storages: a swapped buffer is put back at the finish; versions move on
    let mut rebinds = Vec::new();
    let mut bumps = Vec::new();
    for slot in 0..r.slots.len() {
        let Kind::Extern(st) = &r.slots[slot].kind else {
            continue;
        };
        let st = st.clone();
        let (now, dtype, len) = {
            let b = st.read();
            (addr(&b), b.dtype(), b.len())
        };
        if let Some(a) = now
            && let Some(&cur) = r.by_ptr.get(&a)
            && cur as usize != slot
        {
            *finish_uses.entry(cur).or_default() += 1;
            let layout = Layout::contiguous(&[len]);
            rebinds.push((
                st.clone(),
                OutSpec {
                    slot: cur,
                    layout,
                    dtype,
                    take: false,
                },
            ));
        }
        let key = Arc::as_ptr(&st) as usize;
        if let Some(&(_, v0)) = r.externs.get(&key) {
            let v1 = st.version().load(Ordering::Acquire);
            if v1 > v0 {
                bumps.push((st, v1 - v0));
            }
        }
    }
    let take_ok = |slot: SlotId, r: &Recording| {
        finish_uses.get(&slot) == Some(&1)
            && matches!(r.slots[slot as usize].kind, Kind::Intermediate)
    };
    for o in &mut outs {
        o.take = take_ok(o.slot, &r);
    }
    for (_, g) in &mut leaves {
        if let GradOut::New(o) = g {
            o.take = take_ok(o.slot, &r);
        }
    }
    for (_, o) in &mut rebinds {
        o.take = take_ok(o.slot, &r);
    }
    // last uses: an intermediate not needed at the finish is dropped after its last step
    let mut last: Vec<Option<usize>> = vec![None; r.slots.len()];
    for (i, st) in r.steps.iter().enumerate() {
        let outs = st.outs.iter().map(|o| o.slot);
        for s in st.ins.iter().copied().chain(st.dst).chain(outs) {
            last[s as usize] = Some(i);
        }
    }
    for (s, l) in last.iter().enumerate() {
        if let Some(i) = l
            && matches!(r.slots[s].kind, Kind::Intermediate)
            && !finish_uses.contains_key(&(s as SlotId))
        {
            r.steps[*i].free_after.push(s as SlotId);
        }
    }
    let in_pool =
        crate::runtime::num_threads() > 1 && r.slots.iter().any(|s| s.len >= SPLIT_ELEMENTS);
    // A small program (its kernels do not split) that writes no extern in place
    // read-locks its externs for a whole replay, on the calling thread: all of them, in
    // storage address order, before any other lock. It then holds only read locks until
    // its finish and waits for no other thread, so it cannot close a cycle with the locks
    // of eager ops elsewhere. Its steps read them like frame buffers. (A program that
    // replays on the pool does not: waiting for the pool while holding a lock that a pool
    // job may need to write could deadlock; its kernels are big, so a lock per step costs
    // nothing there.)
    let is_extern = |s: SlotId| matches!(r.slots[s as usize].kind, Kind::Extern(_));
    let writes_extern = r.steps.iter().any(|st| st.dst.is_some_and(is_extern));
    let pins = !writes_extern && !in_pool;
    let mut pinned: Vec<(SlotId, Arc<Storage>)> = Vec::new();
    if pins {
        for (i, slot) in r.slots.iter().enumerate() {
            if let Kind::Extern(st) = &slot.kind {
                pinned.push((i as SlotId, st.clone()));
            }
        }
    }
    pinned.sort_by_key(|(_, st)| Arc::as_ptr(st) as usize);
    let mut pin_of_slot: Vec<(SlotId, usize)> = pinned
        .iter()
        .enumerate()
        .map(|(k, (s, _))| (*s, k))
        .collect();
    pin_of_slot.sort_unstable();
    for i in 0..r.steps.len() {
        let st = &r.steps[i];
        let plain = st.dst.is_none() && (pins || !st.ins.iter().any(|&s| is_extern(s)));
        r.steps[i].plain = plain;
    }
    let mut mutated: Vec<SlotId> = r
        .steps
        .iter()
        .filter_map(|s| s.dst)
        .filter(|&d| matches!(r.slots[d as usize].kind, Kind::Const(_)))
        .collect();
    mutated.sort_unstable();
    mutated.dedup();
    // The constants move into the frame; a mutated one keeps its recorded contents in
    // `pristine`, to start each replay from.
    let mut frame: Vec<Option<Buffer>> = (0..r.slots.len()).map(|_| None).collect();
    let mut pristine = Vec::new();
    for (i, slot) in r.slots.iter_mut().enumerate() {
        if let Kind::Const(b) = &mut slot.kind {
            let b = std::mem::replace(b, Buffer::zeros(slot.dtype, 0));
            if mutated.binary_search(&(i as SlotId)).is_ok() {
                pristine.push((i as SlotId, b.clone()));
            }
            frame[i] = Some(b);
        }
    }
    let mut finish_reads: Vec<SlotId> = finish_uses
        .keys()
        .copied()
        .filter(|&s| matches!(r.slots[s as usize].kind, Kind::Intermediate))
        .collect();
    finish_reads.sort_unstable();
    Ok(Program {
        in_pool,
        slots: r.slots,
        steps: r.steps,
        pristine,
        finish_reads,
        pinned: pinned.into_iter().map(|(_, st)| st).collect(),
        pin_of_slot,
        rebinds,
        bumps,
        leaves,
        outputs: outs,
        frame: Mutex::new(frame),
    })
}

/// A slot's buffer during a replay.
enum Held<'a> {
    Ref(&'a Buffer),
    Guard(parking_lot::RwLockReadGuard<'a, Buffer>),
    Owned(Buffer),
}

impl std::ops::Deref for Held<'_> {
    type Target = Buffer;
    fn deref(&self) -> &Buffer {
        match self {
            Held::Ref(b) => b,
            Held::Guard(g) => g,
            Held::Owned(b) => b,
        }
    }
}

fn resized(step: &Step) -> Error {
    Error::Internal(format!(
        "step replay: '{}' made a buffer of another size than recorded",
        step.name
    ))
}

fn missing(slot: SlotId) -> Error {
    Error::Internal(format!("step replay: slot {slot} has no buffer"))
}

impl Program {
    /// Number of recorded kernel calls.
    pub fn num_steps(&self) -> usize {
        self.steps.len()
    }
    /// Number of buffers the program names.
    pub fn num_slots(&self) -> usize {
        self.slots.len()
    }
    /// Counts of slots by kind: (intermediate, extern, const).
    pub fn slot_kinds(&self) -> (usize, usize, usize) {
        let mut c = (0, 0, 0);
        for s in &self.slots {
            match s.kind {
                Kind::Intermediate => c.0 += 1,
                Kind::Extern(_) => c.1 += 1,
                Kind::Const(_) => c.2 += 1,
            }
        }
        c
    }
    /// The recorded kernels' names, in order.
    pub fn kernel_names(&self) -> Vec<&'static str> {
        self.steps.iter().map(|s| s.name).collect()
    }

    /// Whether the state the step was recorded against still holds (each leaf's `.grad`
    /// as the program expects it). When it does not, the caller records the step again.
    pub fn guards_hold(&self) -> bool {
        self.leaves.iter().all(|(l, _)| match &l.guard {
            LeafGuard::Any => true,
            LeafGuard::IsNone => l.t.grad().is_none(),
            LeafGuard::Same(g) => l.t.grad().is_some_and(|now| now.same(g)),
        })
    }

    /// Replays the step: `None` when the guards fail (record again), else the outputs.
    pub fn run(&self) -> Result<Option<Vec<Tensor>>> {
        if active() {
            return Err(Error::runtime(
                "compile_step: a recorded step cannot be replayed while a step is being recorded",
            ));
        }
        let mut frame = match self.frame.try_lock() {
            Some(g) => g,
            None => crate::runtime::blocking(|| self.frame.lock()),
        };
        if !self.guards_hold() {
            return Ok(None);
        }
        for s in &self.slots {
            if let Kind::Extern(st) = &s.kind {
                let b = st.read();
                if b.len() != s.len || b.dtype() != s.dtype {
                    return Err(Error::runtime(
                        "compile_step: a tensor the step reads was resized or retyped since it was \
                         recorded; compile the step again",
                    ));
                }
            }
        }
        let frame: &mut [Option<Buffer>] = &mut frame;
        let ran = {
            let guards: SmallVec<[_; 8]> = self.pinned.iter().map(|st| st.read()).collect();
            let pins: SmallVec<[&Buffer; 8]> = guards.iter().map(|g| &**g).collect();
            let pins = &pins[..];
            let mut exec = || {
                for (c, b) in &self.pristine {
                    frame[*c as usize] = Some(b.clone());
                }
                for step in &self.steps {
                    self.run_step(step, frame, pins)?;
                }
                Ok(())
            };
            // Kernels big enough to split run on a pool thread, where a split is rayon's
            // (the other workers steal the pieces): from outside the pool the caller takes
            // the pieces no woken worker has taken yet, and back to back kernels leave no
            // time for a sleeping worker to join (W3 replayed at one core's speed). Eager
            // mode gets the same for its backward, which the engine runs on the pool.
            if self.in_pool {
                crate::runtime::run(exec)
            } else {
                exec()
            }
        };
        // (the pinned externs are unlocked: the finish may rebind them)
        let result = ran.and_then(|()| self.finish(frame));
        // Only the constants stay: what the finish copied, and after a failed step every
        // intermediate still held, goes now.
        match &result {
            Ok(_) => {
                for &s in &self.finish_reads {
                    frame[s as usize] = None;
                }
            }
            Err(_) => {
                for (b, slot) in frame.iter_mut().zip(&self.slots) {
                    if matches!(slot.kind, Kind::Intermediate) {
                        *b = None;
                    }
                }
            }
        }
        result.map(Some)
    }

    /// A pinned extern's buffer (`pins`: the read-locked buffers of `self.pinned`).
    fn pinned<'a>(&self, slot: SlotId, pins: &[&'a Buffer]) -> Result<&'a Buffer> {
        match self.pin_of_slot.binary_search_by_key(&slot, |&(s, _)| s) {
            Ok(i) => Ok(pins[self.pin_of_slot[i].1]),
            Err(_) => Err(missing(slot)),
        }
    }

    fn run_step(&self, step: &Step, frame: &mut [Option<Buffer>], pins: &[&Buffer]) -> Result<()> {
        if !step.plain {
            let outs = self.run_general(step, frame)?;
            return self.store(step, outs, frame);
        }
        // (most steps: inputs in the frame or pinned, nothing written in place)
        let (out, ins_of) = match (&step.f, step.outs.as_slice()) {
            // A new slot comes after every slot its step reads, so the inputs are
            // borrowed from the frame before it while the kernel writes the slot itself.
            (Kernel::One(_), [o]) => {
                let (head, tail) = frame.split_at_mut(o.slot as usize);
                (Some((o, &mut tail[0])), &*head)
            }
            _ => (None, &*frame),
        };
        let mut ins: SmallVec<[&Buffer; 4]> = SmallVec::new();
        for &s in &step.ins {
            ins.push(match ins_of.get(s as usize) {
                Some(Some(b)) => b,
                Some(None) => self.pinned(s, pins)?,
                None => return Err(missing(s)),
            });
        }
        match (&step.f, out) {
            (Kernel::One(f), Some((o, slot))) => {
                f(&ins, slot)?;
                drop(ins);
                if !slot
                    .as_ref()
                    .is_some_and(|b| b.len() == o.len && b.dtype() == o.dtype)
                {
                    return Err(resized(step));
                }
                for &s in &step.free_after {
                    frame[s as usize] = None;
                }
                Ok(())
            }
            (f, _) => {
                let outs = f.call(&ins, None)?;
                drop(ins);
                self.store(step, outs, frame)
            }
        }
    }

    /// A step that writes in place or reads an extern (under its storage's lock).
    fn run_general(&self, step: &Step, frame: &mut [Option<Buffer>]) -> Result<Outs> {
        // the buffer written in place: out of the frame (or its storage's write lock)
        let mut dst_owned: Option<Buffer> = None;
        let mut dst_guard = None;
        let mut pre_inputs: SmallVec<[(usize, Buffer); 1]> = SmallVec::new();
        if let Some(d) = step.dst {
            // an input that is the destination itself is read as it was before the step
            for (i, &s) in step.ins.iter().enumerate() {
                if s == d {
                    let copy = match &self.slots[d as usize].kind {
                        Kind::Extern(st) => st.read().clone(),
                        _ => frame[d as usize]
                            .as_ref()
                            .ok_or_else(|| missing(d))?
                            .clone(),
                    };
                    pre_inputs.push((i, copy));
                }
            }
            if !matches!(self.slots[d as usize].kind, Kind::Extern(_)) {
                dst_owned = Some(frame[d as usize].take().ok_or_else(|| missing(d))?);
            }
        }
        // An extern destination's write lock and the inputs' read locks are taken in
        // storage address order, as eager in-place ops take theirs (`ops::inplace`), so a
        // replay and an eager op on another thread cannot wait on each other.
        let dst_store = step.dst.and_then(|d| match &self.slots[d as usize].kind {
            Kind::Extern(st) => Some(st),
            _ => None,
        });
        let addr_of = |st: &Arc<Storage>| Arc::as_ptr(st) as usize;
        let outs = {
            let mut held: SmallVec<[Option<Held<'_>>; 3]> = SmallVec::new();
            for (i, &s) in step.ins.iter().enumerate() {
                if let Some(pos) = pre_inputs.iter().position(|(j, _)| *j == i) {
                    held.push(Some(Held::Owned(pre_inputs.remove(pos).1)));
                    continue;
                }
                held.push(match &self.slots[s as usize].kind {
                    Kind::Intermediate | Kind::Const(_) => Some(Held::Ref(
                        frame[s as usize].as_ref().ok_or_else(|| missing(s))?,
                    )),
                    Kind::Extern(st) => match dst_store {
                        Some(d) if addr_of(st) > addr_of(d) => None,
                        _ => Some(Held::Guard(st.read())),
                    },
                });
            }
            if let Some(st) = dst_store {
                dst_guard = Some(st.write());
                for (h, &s) in held.iter_mut().zip(step.ins.iter()) {
                    if h.is_none()
                        && let Kind::Extern(st) = &self.slots[s as usize].kind
                    {
                        *h = Some(Held::Guard(st.read()));
                    }
                }
            }
            let ins = held
                .iter()
                .map(|h| h.as_deref().ok_or_else(|| missing(0)))
                .collect::<Result<SmallVec<[&Buffer; 3]>>>()?;
            let dst: Option<&mut Buffer> = match (&mut dst_guard, &mut dst_owned) {
                (Some(g), _) => Some(&mut **g),
                (None, Some(b)) => Some(b),
                _ => None,
            };
            step.f.call(&ins, dst)
        };
        if let (Some(d), Some(b)) = (step.dst, dst_owned) {
            frame[d as usize] = Some(b);
        }
        drop(dst_guard);
        outs
    }

    /// Puts a step's new buffers in the frame and drops what it used last.
    fn store(&self, step: &Step, outs: Outs, frame: &mut [Option<Buffer>]) -> Result<()> {
        if outs.len() != step.outs.len() {
            return Err(Error::Internal(format!(
                "step replay: '{}' made {} buffers, {} recorded",
                step.name,
                outs.len(),
                step.outs.len()
            )));
        }
        for (o, b) in step.outs.iter().zip(outs) {
            if b.len() != o.len || b.dtype() != o.dtype {
                return Err(resized(step));
            }
            frame[o.slot as usize] = Some(b);
        }
        for &s in &step.free_after {
            frame[s as usize] = None;
        }
        Ok(())
    }

    fn buffer_for(&self, o: &OutSpec, frame: &mut [Option<Buffer>]) -> Result<Buffer> {
        let s = o.slot as usize;
        match &self.slots[s].kind {
            Kind::Intermediate if o.take => frame[s].take().ok_or_else(|| missing(o.slot)),
            Kind::Intermediate | Kind::Const(_) => frame[s].clone().ok_or_else(|| missing(o.slot)),
            Kind::Extern(st) => Ok(st.read().clone()),
        }
    }

    fn tensor_for(&self, o: &OutSpec, frame: &mut [Option<Buffer>]) -> Result<Tensor> {
        let b = self.buffer_for(o, frame)?;
        Ok(Tensor::from_storage(
            Arc::new(Storage::new(b)),
            o.layout.clone(),
            o.dtype,
        ))
    }

    fn finish(&self, frame: &mut [Option<Buffer>]) -> Result<Vec<Tensor>> {
        // outputs first: they may read an extern before a rebind replaces its buffer (as
        // the eager step's results were computed before the storage changed)
        let outs = self
            .outputs
            .iter()
            .map(|o| self.tensor_for(o, frame))
            .collect::<Result<Vec<_>>>()?;
        for (leaf, g) in &self.leaves {
            match g {
                GradOut::Keep => {}
                GradOut::None => leaf.t.set_grad(None)?,
                GradOut::New(o) => {
                    let t = self.tensor_for(o, frame)?;
                    leaf.t.set_grad(Some(t))?;
                }
            }
        }
        for (st, o) in &self.rebinds {
            let b = self.buffer_for(o, frame)?;
            *st.write() = b;
        }
        for (st, d) in &self.bumps {
            st.version().fetch_add(*d, Ordering::AcqRel);
        }
        Ok(outs)
    }
}

#[cfg(test)]
mod tests;
