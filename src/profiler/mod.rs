//! The profiler's recorder: what `rgrad.autograd.profiler.profile` and `rgrad.profiler`
//! read. While a session is on, every op's forward, every backward node the engine
//! evaluates, each gradient accumulation and each user range (`record_function`) is one
//! [`Event`] in its thread's own buffer; allocations and frees are [`MemRecord`]s.
//!
//! Cost: off, one relaxed atomic load per op (in `dispatch`). On, an event is two reads
//! of the time-stamp counter and a few plain stores into the thread's own log (no locked
//! instruction: see [`log`]); names are `&'static str` for built-in ops and nodes (a
//! run-time name, a custom Function's or a user range's, is interned once). Nesting is kept on a thread-local stack, so each event knows its
//! parent without the reader re-deriving it from times. [`stop`] gathers every thread's
//! buffer (backward worker threads included) into one [`Recording`], which converts the
//! counter ticks to nanoseconds since the start and averages by key without building an
//! object per event.

use parking_lot::Mutex;
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

mod log;
pub mod nvtx;
mod recording;
use log::{Cursor, Log};
pub use recording::{Average, Events, Recording};

/// What a session records beyond names and times.
#[derive(Clone, Copy, Debug, Default)]
pub struct Config {
    /// the shapes of each op's tensor inputs
    pub record_shapes: bool,
    /// allocations and frees, attributed to the ops that made them
    pub profile_memory: bool,
    /// floating-point operation counts of the ops that have a formula (mm, mul, ...)
    pub with_flops: bool,
    /// the Python stack of each op called from Python
    pub with_stack: bool,
}

/// torch's `RecordScope` values that rgrad records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Scope {
    /// an op, or the engine's evaluation of a node
    Function = 0,
    /// a backward node's own formula
    BackwardFunction = 1,
    /// a user's `record_function` range
    UserScope = 7,
}

/// One recorded range.
#[derive(Clone, Debug)]
pub struct Event {
    /// unique in the session, ≥ 1
    pub id: u64,
    /// the enclosing event on the same thread, 0 for none
    pub parent: u64,
    pub name: &'static str,
    /// the engine's evaluation of a node: its name reads
    /// `autograd::engine::evaluate_function: <name>`
    pub evaluate: bool,
    /// the recording thread (1 = the first thread that ever recorded or made a node)
    pub thread: u32,
    /// nanoseconds since the session started (ticks until [`stop`] converts them)
    pub start: u64,
    pub end: u64,
    /// the sequence number of the node this forward op made, or of the node this
    /// backward event ran; -1 for none
    pub seq: i64,
    /// the thread that made that node, 0 for none
    pub fwd_thread: u32,
    pub scope: Scope,
    /// what only some sessions record (one pointer in every event)
    extra: Option<Box<EventExtra>>,
}

/// The parts of an event that only some sessions record.
#[derive(Clone, Debug, Default)]
struct EventExtra {
    /// the op's tensor inputs' shapes (`record_shapes`)
    shapes: Option<Box<[Box<[usize]>]>>,
    /// floating-point operations (`with_flops`, ops with a formula)
    flops: Option<u64>,
    /// the Python stack it was called from (`with_stack`)
    stack: Option<Arc<dyn crate::autograd::anomaly::Traceback>>,
}

// 1,000,000 events must fit in 100 MB while recorded
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Event>() <= 80);

impl Event {
    /// The op's tensor inputs' shapes (`record_shapes`).
    pub fn shapes(&self) -> Option<&[Box<[usize]>]> {
        self.extra.as_ref()?.shapes.as_deref()
    }
    /// Floating-point operations (`with_flops`, ops with a formula).
    pub fn flops(&self) -> Option<u64> {
        self.extra.as_ref()?.flops
    }
    /// The Python stack it was called from (`with_stack`).
    pub fn stack(&self) -> Option<&Arc<dyn crate::autograd::anomaly::Traceback>> {
        self.extra.as_ref()?.stack.as_ref()
    }
}

/// A name as a `&'static str`: built-in names are; a run-time name (a custom Function's,
/// a user range's) is interned once per distinct name for the life of the process.
#[inline]
fn intern(name: Cow<'static, str>) -> &'static str {
    match name {
        Cow::Borrowed(s) => s,
        Cow::Owned(s) => intern_owned(s),
    }
}

#[cold]
fn intern_owned(s: String) -> &'static str {
    static NAMES: Mutex<Option<std::collections::HashSet<&'static str>>> = Mutex::new(None);
    let mut names = NAMES.lock();
    let names = names.get_or_insert_with(Default::default);
    match names.get(s.as_str()) {
        Some(&n) => n,
        None => {
            let n: &'static str = Box::leak(s.into_boxed_str());
            names.insert(n);
            n
        }
    }
}

impl std::fmt::Debug for dyn crate::autograd::anomaly::Traceback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Traceback")
    }
}

/// One allocation (`bytes > 0`) or free (`bytes < 0`).
#[derive(Clone, Copy, Debug)]
pub struct MemRecord {
    /// nanoseconds since the session started (ticks until [`stop`])
    pub at: u64,
    pub bytes: i64,
    pub thread: u32,
}

// ---- the clock ---------------------------------------------------------------------------

/// A cheap monotonic tick: the time-stamp counter on x86-64 (invariant on every CPU we
/// run on; ~10 ns against ~27 ns for `Instant::now`), nanoseconds elsewhere. Ticks are
/// converted to nanoseconds at [`stop`], by the rate measured over the session.
#[inline(always)]
fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions on x86-64.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        ORIGIN.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

// ---- thread ids and sequence numbers -----------------------------------------------------

static NEXT_THREAD: AtomicU32 = AtomicU32::new(1);

thread_local! {
    static THREAD_ID: u32 = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
}

/// This thread's small id (torch's `RecordFunction::currentThreadId`: 1, 2, ... in order
/// of first use).
pub fn thread_id() -> u32 {
    THREAD_ID.with(|t| *t)
}

// ---- the session -------------------------------------------------------------------------

static ACTIVE: AtomicBool = AtomicBool::new(false);
static MEMORY: AtomicBool = AtomicBool::new(false);
/// Bumped by every [`start`], so a thread notices its buffer belongs to an old session.
static GENERATION: AtomicU64 = AtomicU64::new(0);
static NEXT_EVENT: AtomicU64 = AtomicU64::new(1);

struct Session {
    config: Config,
    started: Instant,
    start_ticks: u64,
    buffers: Vec<Arc<ThreadBuffer>>,
}

/// A thread's records: written by that thread alone through its cursors (in [`Local`]),
/// read by [`stop`] (see [`log`]).
struct ThreadBuffer {
    events: Log<Event, CHUNK_EVENTS>,
    memory: Log<MemRecord, MEMORY_CHUNK>,
}

/// Events per chunk: a chunk never moves once written, and no doubling leaves half of one
/// unused.
const CHUNK_EVENTS: usize = 8192;
const MEMORY_CHUNK: usize = 4096;

/// Emptied chunks kept for the next sessions (a fresh chunk costs a page fault per 51
/// events on first touch); at most `POOL_CHUNKS` of them (5 MB).
static CHUNK_POOL: Mutex<Vec<Vec<Event>>> = Mutex::new(Vec::new());
const POOL_CHUNKS: usize = 8;

/// Where event chunks come from: the pool, else new memory.
struct EventPool;
impl log::Chunks<Event> for EventPool {
    fn fresh(&self) -> Vec<Event> {
        CHUNK_POOL.lock().pop().unwrap_or_default()
    }
}

struct NewChunks;
impl<T> log::Chunks<T> for NewChunks {
    fn fresh(&self) -> Vec<T> {
        Vec::new()
    }
}

static SESSION: Mutex<Option<Session>> = Mutex::new(None);

/// An event begun and not yet ended: all of it but its end time. It owns nothing beside
/// its event (`end_on` moves the event out and forgets the rest).
struct Open {
    event: Event,
    /// a user range's name for the backward of the nodes made inside it, made on first use
    backward: Option<&'static str>,
}

struct Local {
    generation: u64,
    config: Config,
    buffer: Option<Arc<ThreadBuffer>>,
    /// where this thread writes in `buffer`'s logs
    events: Cursor<Event>,
    memory: Cursor<MemRecord>,
    /// this thread's id (see [`thread_id`])
    thread: u32,
    open: Vec<Open>,
    /// ids are taken from the global counter in blocks, so that threads do not share a
    /// cache line per event
    next_id: u64,
    last_id: u64,
}

thread_local! {
    /// This thread's recorder state, made on its first event. A type without a destructor
    /// here keeps each access a plain load: a thread-local with one (a `RefCell<Local>`)
    /// checks its registration state on every access, which the hot path pays per event.
    static LOCAL: Cell<*const RefCell<Local>> = const { Cell::new(std::ptr::null()) };
    /// Frees that state when the thread exits.
    static LOCAL_OWNER: LocalOwner = const { LocalOwner(Cell::new(std::ptr::null())) };
}

struct LocalOwner(Cell<*const RefCell<Local>>);

impl Drop for LocalOwner {
    fn drop(&mut self) {
        let p = self.0.replace(std::ptr::null());
        if !p.is_null() {
            // (an event begun after this, by another thread-local's destructor, makes a
            // new state that is not freed)
            let _ = LOCAL.try_with(|l| l.set(std::ptr::null()));
            // SAFETY: `p` came from `Box::into_raw` in `with_local`, and no Range of this
            // thread is left (the thread's stack is gone).
            drop(unsafe { Box::from_raw(p.cast_mut()) });
        }
    }
}

/// Runs `f` on this thread's recorder state.
#[inline]
fn with_local<R>(f: impl FnOnce(&RefCell<Local>) -> R) -> R {
    let mut p = LOCAL.get();
    if p.is_null() {
        p = new_local();
    }
    // SAFETY: `p` is this thread's state, freed only when the thread exits.
    f(unsafe { &*p })
}

#[cold]
#[inline(never)]
fn new_local() -> *const RefCell<Local> {
    let p = Box::into_raw(Box::new(RefCell::new(Local {
        generation: 0,
        config: Config::default(),
        buffer: None,
        events: Cursor::new(),
        memory: Cursor::new(),
        thread: 0,
        open: Vec::new(),
        next_id: 0,
        last_id: 0,
    })))
    .cast_const();
    LOCAL.set(p);
    // (a thread already past its thread-locals' destruction keeps the state)
    let _ = LOCAL_OWNER.try_with(|o| o.0.set(p));
    p
}

const ID_BLOCK: u64 = 1024;

impl Local {
    /// This thread's buffer in the current session (registered on first use), or `None`
    /// when no session is on.
    #[inline]
    fn attach(&mut self) -> bool {
        let generation = GENERATION.load(Ordering::Acquire);
        if self.generation == generation && self.buffer.is_some() {
            return true;
        }
        self.attach_to(generation)
    }
    #[cold]
    #[inline(never)]
    fn attach_to(&mut self, generation: u64) -> bool {
        let mut s = SESSION.lock();
        let Some(session) = s.as_mut() else {
            return false;
        };
        let buffer = Arc::new(ThreadBuffer {
            events: Log::new(),
            memory: Log::new(),
        });
        session.buffers.push(buffer.clone());
        self.config = session.config;
        // (the cursors are the old buffer's until here: it goes, with what this thread
        // wrote after its session stopped)
        self.buffer = Some(buffer);
        self.events = Cursor::new();
        self.memory = Cursor::new();
        self.thread = thread_id();
        self.generation = generation;
        self.open.clear();
        self.next_id = 0;
        self.last_id = 0;
        true
    }
    fn new_id(&mut self) -> u64 {
        if self.next_id == self.last_id {
            self.next_id = NEXT_EVENT.fetch_add(ID_BLOCK, Ordering::Relaxed);
            self.last_id = self.next_id + ID_BLOCK;
        }
        let id = self.next_id;
        self.next_id += 1;
        id
    }
}

/// Whether a session is on (one relaxed load).
#[inline(always)]
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Starts a session. torch allows one profiler at a time per process.
pub fn start(config: Config) -> crate::Result<()> {
    let mut s = SESSION.lock();
    if s.is_some() {
        return Err(crate::Error::Runtime(
            "Profiler is already enabled on this thread".into(),
        ));
    }
    *s = Some(Session {
        config,
        started: Instant::now(),
        start_ticks: ticks(),
        buffers: Vec::new(),
    });
    GENERATION.fetch_add(1, Ordering::AcqRel);
    MEMORY.store(config.profile_memory, Ordering::Relaxed);
    ACTIVE.store(true, Ordering::Release);
    crate::dispatch::observe(crate::dispatch::PROFILER, true);
    Ok(())
}

/// Ends the session and gathers what every thread recorded (events still open, such as
/// the ranges around this call, are left out, as torch leaves them).
pub fn stop() -> crate::Result<Recording> {
    let mut s = SESSION.lock();
    let Some(session) = s.take() else {
        return Err(crate::Error::Runtime(
            "Can't disable the profiler when it's not running".into(),
        ));
    };
    ACTIVE.store(false, Ordering::Release);
    MEMORY.store(false, Ordering::Relaxed);
    crate::dispatch::observe(crate::dispatch::PROFILER, false);
    GENERATION.fetch_add(1, Ordering::SeqCst);
    drop(s);
    let (end_ticks, elapsed) = (ticks(), session.started.elapsed());
    let span = end_ticks.saturating_sub(session.start_ticks).max(1);
    let ns_per_tick = elapsed.as_nanos() as f64 / span as f64;
    let to_ns = |t: u64| (t.saturating_sub(session.start_ticks) as f64 * ns_per_tick) as u64;
    // the full chunks move here (no second copy of a million events); an index gives
    // the order
    let mut chunks = Vec::new();
    let mut memory = Vec::new();
    for b in &session.buffers {
        let (full, current) = b.events.take();
        for mut chunk in full.into_iter().chain([current]) {
            for e in &mut chunk {
                e.start = to_ns(e.start);
                e.end = to_ns(e.end);
            }
            if !chunk.is_empty() {
                chunks.push(chunk);
            }
        }
        let (full, current) = b.memory.take();
        for chunk in full.into_iter().chain([current]) {
            memory.extend(chunk.into_iter().map(|mut m| {
                m.at = to_ns(m.at);
                m
            }));
        }
    }
    let mut order: Vec<(u32, u32)> = chunks
        .iter()
        .enumerate()
        .flat_map(|(c, chunk)| (0..chunk.len()).map(move |i| (c as u32, i as u32)))
        .collect();
    // torch's order: by start, the longer (the parent) first
    let at = |&(c, i): &(u32, u32)| &chunks[c as usize][i as usize];
    order.sort_by(|x, y| {
        let (a, b) = (at(x), at(y));
        a.start
            .cmp(&b.start)
            .then(b.end.cmp(&a.end))
            .then(a.id.cmp(&b.id))
    });
    memory.sort_by_key(|m| m.at);
    Ok(Recording {
        config: session.config,
        events: Events::new(chunks, order),
        memory,
    })
}

/// An open range, ended when dropped (on every path out of the op, errors included).
#[must_use]
pub struct Range {
    /// the state of the thread that began it (a Range is not `Send`): its end needs no
    /// second thread-local look-up, which costs a call in a shared library
    local: *const RefCell<Local>,
}

impl Drop for Range {
    #[inline]
    fn drop(&mut self) {
        let end = ticks();
        // SAFETY: `local` is this thread's `LOCAL` (a Range stays on the thread that made
        // it), which lives until the thread exits, after every Range on its stack.
        end_on(unsafe { &*self.local }, end);
    }
}

/// Begins an event on this thread, or returns `None` when no session is on.
pub fn begin(
    name: Cow<'static, str>,
    scope: Scope,
    shapes: impl FnOnce() -> Vec<Box<[usize]>>,
) -> Option<Range> {
    begin_full(name, false, scope, -1, 0, shapes)
}

/// Begins the event of a backward node (`evaluate`: the engine's evaluation around it).
pub fn begin_node(
    name: Cow<'static, str>,
    evaluate: bool,
    seq: i64,
    fwd_thread: u32,
) -> Option<Range> {
    let scope = if evaluate {
        Scope::Function
    } else {
        Scope::BackwardFunction
    };
    begin_full(name, evaluate, scope, seq, fwd_thread, Vec::new)
}

fn begin_full(
    name: Cow<'static, str>,
    evaluate: bool,
    scope: Scope,
    seq: i64,
    fwd_thread: u32,
    shapes: impl FnOnce() -> Vec<Box<[usize]>>,
) -> Option<Range> {
    with_local(|cell| {
        let mut l = cell.borrow_mut();
        if !l.attach() {
            return None;
        }
        let shapes = (l.config.record_shapes).then(|| shapes().into_boxed_slice());
        let stack = if l.config.with_stack && scope != Scope::BackwardFunction && !evaluate {
            crate::autograd::anomaly::capture_traceback()
        } else {
            None
        };
        let flops = if l.config.with_flops {
            shapes.as_deref().and_then(|s| flops(&name, s))
        } else {
            None
        };
        let extra = (shapes.is_some() || flops.is_some() || stack.is_some()).then(|| {
            Box::new(EventExtra {
                shapes,
                flops,
                stack,
            })
        });
        let event = Event {
            id: l.new_id(),
            // (ranges nest on a thread: the innermost open one is the parent until the end)
            parent: l.open.last().map_or(0, |p| p.event.id),
            name: intern(name),
            evaluate,
            thread: l.thread,
            start: 0,
            end: 0,
            seq,
            fwd_thread,
            scope,
            extra,
        };
        l.open.push(Open {
            event,
            backward: None,
        });
        // (the clock is read last, so the bookkeeping above is not counted in the op)
        if let Some(o) = l.open.last_mut() {
            o.event.start = ticks();
        }
        Some(Range { local: cell })
    })
}

/// Ends the innermost event open on this thread (what dropping its [`Range`] does; for
/// a binding whose range ends in another call, such as a `with` block's exit).
pub fn end() {
    let end = ticks();
    with_local(|l| end_on(l, end));
}

#[inline]
fn end_on(local: &RefCell<Local>, end: u64) {
    let l = &mut *local.borrow_mut();
    let Some(open) = l.open.last_mut() else {
        return;
    };
    open.event.end = end;
    let Some(b) = &l.buffer else {
        l.open.pop();
        return;
    };
    let last = l.open.len() - 1;
    let event: *const Event = &l.open[last].event;
    // SAFETY: this thread alone writes its buffer's logs, through its cursors; the event
    // moves from the open stack to the log: copied into the slot here, then forgotten by
    // the stack (`set_len`; the rest of an `Open` owns nothing).
    unsafe {
        b.events.push_with(&mut l.events, &EventPool, |slot| {
            std::ptr::copy_nonoverlapping(event, slot, 1)
        });
        l.open.set_len(last);
    }
}

/// The op running on this thread made the node numbered `seq`: its event carries the
/// number (torch's link from a forward op to its backward node). Returns the name under
/// which the node's backward is reported too when it was made inside a user range
/// (`record_function`): `"<range> (backward)"`.
pub fn node_made(seq: u64) -> Option<&'static str> {
    with_local(|l| {
        let mut l = l.borrow_mut();
        if let Some(o) = l.open.last_mut()
            && o.event.scope == Scope::Function
            && o.event.seq < 0
        {
            // (torch gives a forward op no fwd_thread: that field marks backward events)
            o.event.seq = seq as i64;
        }
        let range = l
            .open
            .iter_mut()
            .rev()
            .find(|o| o.event.scope == Scope::UserScope)?;
        let name = range.event.name;
        Some(
            *range
                .backward
                .get_or_insert_with(|| intern(Cow::Owned(format!("{name} (backward)")))),
        )
    })
}

/// An allocation (`bytes > 0`) or free (`bytes < 0`) of tensor memory.
#[inline]
pub fn memory(bytes: i64) {
    if !MEMORY.load(Ordering::Relaxed) {
        return;
    }
    memory_slow(bytes);
}

#[inline(never)]
fn memory_slow(bytes: i64) {
    let at = ticks();
    with_local(|l| {
        let l = &mut *l.borrow_mut();
        if !l.attach() {
            return;
        }
        let record = MemRecord {
            at,
            bytes,
            thread: l.thread,
        };
        if let Some(b) = &l.buffer {
            // SAFETY: this thread alone writes its buffer's logs, through its cursors.
            unsafe { b.memory.push(&mut l.memory, record, &NewChunks) };
        }
    })
}

/// torch's flop formulas for the ops that have one, from the input shapes.
fn flops(name: &str, shapes: &[Box<[usize]>]) -> Option<u64> {
    let numel = |s: &[usize]| s.iter().product::<usize>() as u64;
    match (name, shapes) {
        ("aten::mm", [a, b, ..]) if a.len() == 2 && b.len() == 2 => {
            Some(2 * a[0] as u64 * a[1] as u64 * b[1] as u64)
        }
        ("aten::addmm", [_, a, b, ..]) if a.len() == 2 && b.len() == 2 => {
            Some(2 * a[0] as u64 * a[1] as u64 * b[1] as u64)
        }
        ("aten::bmm", [a, b, ..]) if a.len() == 3 && b.len() == 3 => {
            Some(2 * a[0] as u64 * a[1] as u64 * a[2] as u64 * b[2] as u64)
        }
        ("aten::mul" | "aten::add", [a, ..]) => Some(numel(a)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // One session at a time: these tests share the process-wide profiler.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn nested_ranges_know_their_parent_and_time() {
        let _g = SERIAL.lock();
        start(Config::default()).unwrap();
        {
            let _outer = begin("outer".into(), Scope::UserScope, Vec::new);
            let _inner = begin("aten::mul".into(), Scope::Function, Vec::new);
            assert_eq!(node_made(7), Some("outer (backward)"));
        }
        let r = stop().unwrap();
        let outer = r.events.iter().find(|e| e.name == "outer").unwrap();
        let inner = r.events.iter().find(|e| e.name == "aten::mul").unwrap();
        assert_eq!(inner.parent, outer.id);
        assert_eq!(outer.parent, 0);
        assert!(outer.start <= inner.start && inner.end <= outer.end);
        assert_eq!(inner.seq, 7);
        assert_eq!(inner.fwd_thread, 0);
        let avg = r.averages(false);
        let o = avg.iter().find(|a| a.key == "outer").unwrap();
        assert!(o.self_us <= o.total_us);
        assert_eq!(o.count, 1);
        assert!(o.user);
        let m = avg.iter().find(|a| a.key == "aten::mul").unwrap();
        assert_eq!(m.parent.as_ref().map(|p| p.1.as_str()), Some("outer"));
    }

    #[test]
    fn a_second_session_refuses_and_off_records_nothing() {
        let _g = SERIAL.lock();
        assert!(begin("x".into(), Scope::Function, Vec::new).is_none());
        start(Config::default()).unwrap();
        assert!(start(Config::default()).is_err());
        let r = stop().unwrap();
        assert!(r.events.is_empty());
        assert!(stop().is_err());
    }

    #[test]
    fn sessions_start_and_stop_while_other_threads_record() {
        let _g = SERIAL.lock();
        let stop_flag = Arc::new(AtomicBool::new(false));
        let running = Arc::new(AtomicU32::new(0));
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let (stop_flag, running) = (stop_flag.clone(), running.clone());
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    running.fetch_add(1, Ordering::SeqCst);
                    while !stop_flag.load(Ordering::Relaxed) {
                        let _outer = begin("outer".into(), Scope::UserScope, Vec::new);
                        let _inner = begin("inner".into(), Scope::Function, Vec::new);
                        memory(4);
                        n += 1;
                        if n.is_multiple_of(64) {
                            std::thread::sleep(std::time::Duration::from_micros(50));
                        }
                    }
                    n
                })
            })
            .collect();
        while running.load(Ordering::SeqCst) < 4 {
            std::thread::yield_now();
        }
        let mut recorded = 0;
        for _ in 0..100 {
            start(Config {
                profile_memory: true,
                ..Config::default()
            })
            .unwrap();
            std::thread::sleep(std::time::Duration::from_micros(100));
            let r = stop().unwrap();
            recorded += r.events.len();
            let ids: std::collections::HashSet<u64> = r.events.iter().map(|e| e.id).collect();
            assert_eq!(ids.len(), r.events.len());
            for e in &r.events {
                assert!(e.start <= e.end);
                // (a parent still open at `stop` is left out: its child is then top-level)
                if e.name == "inner"
                    && let Some(p) = r.events.iter().find(|p| p.id == e.parent)
                {
                    assert_eq!(p.name, "outer");
                    assert_eq!(p.thread, e.thread);
                    assert!(p.start <= e.start && e.end <= p.end);
                }
            }
        }
        stop_flag.store(true, Ordering::Relaxed);
        for w in workers {
            assert!(w.join().unwrap() > 0);
        }
        assert!(recorded > 0);
    }

    #[test]
    fn memory_is_attributed_to_the_enclosing_event() {
        let _g = SERIAL.lock();
        start(Config {
            profile_memory: true,
            ..Config::default()
        })
        .unwrap();
        memory(8); // outside any event
        {
            let _r = begin("op".into(), Scope::Function, Vec::new);
            memory(64);
            memory(-16);
        }
        let r = stop().unwrap();
        let (total, used) = r.memory_usage();
        let i = r.events.iter().position(|e| e.name == "op").unwrap();
        assert_eq!(total[i], 48);
        assert_eq!(used, vec![false, true, true]);
    }
}
