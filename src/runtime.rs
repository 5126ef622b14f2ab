//! The one worker pool shared by the backward executor and intra-op kernel parallelism,
//! so a 2-core machine never runs more than 2 busy threads.

use crate::{Error, Result};
use parking_lot::RwLock;
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

struct Pool {
    pool: Arc<rayon::ThreadPool>,
    /// Its helpers that stay awake between kernels (see [`Warm`]).
    warm: Arc<Warm>,
    /// The process that built the pool: a forked child builds its own (the parent's
    /// worker threads do not exist in the child).
    pid: u32,
}

static POOL: RwLock<Option<Pool>> = RwLock::new(None);
/// The configured size (0 = not decided yet), readable without a lock on hot paths.
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// The most workers the pool will have: `set_num_threads` and `RGRAD_NUM_THREADS` ask for
/// more in vain (each worker is an OS thread, and a count from a typo or an overflow
/// would otherwise start threads until the machine stalls).
pub const MAX_THREADS: usize = 256;

/// `RGRAD_NUM_THREADS` if it is a positive integer (capped at [`MAX_THREADS`]); otherwise,
/// and when unset, the number of CPUs.
fn default_threads() -> usize {
    std::env::var("RGRAD_NUM_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&n| n > 0)
        .map_or_else(
            || std::thread::available_parallelism().map_or(1, |n| n.get()),
            |n| usize::try_from(n).unwrap_or(MAX_THREADS),
        )
        .min(MAX_THREADS)
}

/// Builds a pool of `threads` workers; the OS refusing threads is an error, not a crash.
/// With one worker per CPU the process may use, worker `i` is pinned to the `i`-th of
/// those CPUs (see [`affinity`]).
fn build(threads: usize) -> Result<Pool> {
    let plan = affinity::Plan::new(threads);
    let warm = Warm {
        pinned: plan.pin,
        ..Warm::default()
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("rgrad-worker-{i}"))
        .start_handler(move |i| plan.apply(i))
        .build()
        .map_err(|e| Error::runtime(format!("rgrad could not start its worker threads: {e}")))?;
    Ok(Pool {
        pool: Arc::new(pool),
        warm: Arc::new(warm),
        pid: std::process::id(),
    })
}

/// Pinning the pool's workers to distinct CPUs.
///
/// Why: the calling thread sleeps while the workers run a GEMM or a backward, so the
/// process has one thread more than the machine has cores, and the scheduler sometimes
/// stacks two workers on one core while the other core idles. Both stay busy there (a
/// GEMM, then a warm helper's spin), so the load balancer, which does not move tasks that
/// ran in the last half millisecond, leaves them stacked for seconds: every parallel
/// kernel then runs at one core's speed (W3 in docs/benchmarks.md: 2.4 ms a step instead
/// of 1.5). torch's OpenMP team avoids it because its calling thread is one of the team.
/// Pinned only when the pool has exactly one worker per CPU the process may use, so that
/// processes sharing a machine still spread evenly; the calling thread is never pinned.
/// `RGRAD_PIN_THREADS=0` turns it off.
///
/// The calling thread can still land on a pinned helper's CPU (the scheduler often wakes
/// it where the worker that woke it runs), and a kernel split between the two then runs
/// at one core's speed while another core idles: a checkpoint's recomputed `addmm` took
/// 5.8 ms instead of 2.9. So a pinned helper that joins a job and finds the caller on its
/// own CPU moves the caller off it for the rest of the job ([`Job::avoid_caller`]).
mod affinity {
    /// Where the workers of a new pool run.
    pub(super) struct Plan {
        /// The process's CPUs (its main thread's), in order; empty if unknown.
        process: Vec<usize>,
        /// Worker `i` pinned to `process[i]`.
        pub(super) pin: bool,
    }

    thread_local! {
        /// The CPU this thread is pinned to, if it is a pinned pool worker.
        static PINNED: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
        /// This thread's id (0: not read yet).
        static TID: std::cell::Cell<i32> = const { std::cell::Cell::new(0) };
    }

    /// The CPU this pool worker is pinned to (`None` off the pool, or unpinned).
    pub(super) fn pinned_cpu() -> Option<usize> {
        PINNED.get()
    }

    /// Marks this thread as a worker pinned to `cpu` (tests of what such workers do).
    #[cfg(test)]
    pub(super) fn mark_pinned(cpu: usize) {
        PINNED.set(Some(cpu));
    }

    /// The CPU the calling thread runs on now, and its thread id (`None` if unknown).
    pub(super) fn where_now() -> Option<(usize, i32)> {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: neither call has preconditions (sched_getcpu reads the vDSO or rseq
            // area: tens of nanoseconds, once per job of a pinned pool).
            let cpu = usize::try_from(unsafe { libc::sched_getcpu() }).ok()?;
            let tid = match TID.get() {
                0 => {
                    // SAFETY: as above.
                    let t = unsafe { libc::gettid() };
                    TID.set(t);
                    t
                }
                t => t,
            };
            Some((cpu, tid))
        }
        #[cfg(not(target_os = "linux"))]
        None
    }

    impl Plan {
        pub(super) fn new(threads: usize) -> Plan {
            let enabled = std::env::var("RGRAD_PIN_THREADS").map_or(true, |v| v.trim() != "0");
            let process = process_cpus();
            let pin = enabled && threads > 1 && process.len() == threads;
            Plan { process, pin }
        }

        /// Run by worker `i` as it starts: its own CPU when pinning, else every CPU of
        /// the process (a thread starts with its creator's set, and a pool rebuilt from
        /// a pinned worker, `set_num_threads` in a backward hook, would otherwise have
        /// all its workers on that worker's one CPU).
        pub(super) fn apply(&self, i: usize) {
            match self.process.get(i) {
                Some(&cpu) if self.pin => {
                    set_current_thread(&[cpu]);
                    PINNED.set(Some(cpu));
                }
                _ if !self.process.is_empty() => set_current_thread(&self.process),
                _ => {}
            }
        }
    }

    /// The CPUs the process's main thread may run on: the process's set, as `taskset`
    /// or a container gives it.
    fn process_cpus() -> Vec<usize> {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: getpid has no preconditions; for a thread group's id,
            // sched_getaffinity reports its main thread.
            get(unsafe { libc::getpid() })
        }
        #[cfg(not(target_os = "linux"))]
        Vec::new()
    }

    /// The CPUs the calling thread may run on.
    #[cfg(test)]
    pub(super) fn current_cpus() -> Vec<usize> {
        #[cfg(target_os = "linux")]
        {
            get(0)
        }
        #[cfg(not(target_os = "linux"))]
        Vec::new()
    }

    /// The affinity set of thread `tid` (0: the caller), in order; empty if unknown.
    #[cfg(target_os = "linux")]
    fn get(tid: libc::pid_t) -> Vec<usize> {
        // SAFETY: cpu_set_t is plain bits, zeroed is the empty set; sched_getaffinity
        // writes at most `size_of::<cpu_set_t>()` bytes into it, and CPU_ISSET reads it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
                return Vec::new(); // e.g. more CPUs than a cpu_set_t holds: left alone
            }
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect()
        }
    }

    /// Restricts the calling thread to `cpus` (best effort: a refusal changes nothing).
    pub(super) fn set_current_thread(cpus: &[usize]) {
        set_thread(0, cpus);
    }

    /// The CPUs thread `tid` of this process may run on (empty if unknown).
    pub(super) fn thread_cpus(tid: i32) -> Vec<usize> {
        #[cfg(target_os = "linux")]
        {
            get(tid)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = tid;
            Vec::new()
        }
    }

    /// Restricts thread `tid` of this process (0: the caller) to `cpus`; false if refused.
    /// A running thread moved off its CPU this way migrates at once.
    pub(super) fn set_thread(tid: i32, cpus: &[usize]) -> bool {
        #[cfg(target_os = "linux")]
        // SAFETY: as in `get`. Every cpu comes from a set `get` read, so it is below
        // CPU_SETSIZE (CPU_SET would panic on a bounds check otherwise, not write out of
        // bounds).
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &cpu in cpus {
                libc::CPU_SET(cpu, &mut set);
            }
            libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (tid, cpus);
            false
        }
    }
}

/// Number of threads of the pool (torch.get_num_threads).
pub fn num_threads() -> usize {
    match THREADS.load(Ordering::Relaxed) {
        0 => {
            let n = default_threads();
            let _ = THREADS.compare_exchange(0, n, Ordering::Relaxed, Ordering::Relaxed);
            THREADS.load(Ordering::Relaxed)
        }
        n => n,
    }
}

/// The shared pool, built on first use with `num_threads()` workers (and rebuilt in a
/// forked child).
pub fn pool() -> Result<Arc<rayon::ThreadPool>> {
    Ok(pool_and_warm()?.0)
}

fn pool_and_warm() -> Result<(Arc<rayon::ThreadPool>, Arc<Warm>)> {
    let pid = std::process::id();
    let get = |p: &Pool| (p.pool.clone(), p.warm.clone());
    if let Some(p) = POOL.read().as_ref().filter(|p| p.pid == pid) {
        return Ok(get(p));
    }
    let mut g = POOL.write();
    if let Some(p) = g.as_ref().filter(|p| p.pid == pid) {
        return Ok(get(p));
    }
    let p = build(num_threads())?;
    let r = get(&p);
    *g = Some(p);
    Ok(r)
}

/// Replaces the pool with one of `n` threads, at most [`MAX_THREADS`] (torch.set_num_threads;
/// 0 is an error, as in torch). Work already running keeps its old pool until it finishes.
pub fn set_num_threads(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::runtime("set_num_threads expects a positive integer"));
    }
    let n = n.min(MAX_THREADS);
    let p = build(n)?;
    THREADS.store(n, Ordering::Relaxed);
    *POOL.write() = Some(p);
    Ok(())
}

/// Whether kernels should split work across threads: not with one thread, nor inside
/// [`serial`].
pub fn intra_op_parallel() -> bool {
    num_threads() > 1 && !SERIAL.with(Cell::get)
}

thread_local! {
    static SERIAL: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with every kernel it starts on this thread unsplit, if this thread is a pool
/// worker. Why: a worker that splits a kernel with rayon runs other pool jobs while it
/// waits for the pieces (work stealing), so code that holds a lock one of those jobs may
/// take (gradient accumulation) must not split, or the job would wait on a lock its own
/// thread holds. Outside the pool the caller only spins on its own job (see
/// [`for_each_index_with_caller`]), so kernels there may still split.
pub(crate) fn serial<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            SERIAL.with(|s| s.set(self.0));
        }
    }
    if rayon::current_thread_index().is_none() {
        return f();
    }
    let _restore = Restore(SERIAL.with(|s| s.replace(true)));
    f()
}

/// Runs `f` inside the shared pool (directly, if already on a pool thread or if no pool
/// can be had: the work is then done on the calling thread).
pub fn run<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        return f();
    }
    match pool() {
        Ok(p) => blocking(|| p.install(f)),
        Err(_) => f(),
    }
}

/// What a thread does around a wait that another thread must end (pool work, a storage
/// lock): the Python binding sets it to release the interpreter lock (GIL) for the wait,
/// if this thread holds it. The other thread may need the GIL to finish (pool workers
/// run custom Functions and hooks; a thread that took a storage lock before waiting for
/// the pool takes the GIL back before it lets go of the lock), so waiting with the GIL
/// held could deadlock.
pub type BlockingHook = fn(&mut dyn FnMut());

static BLOCKING_HOOK: std::sync::OnceLock<BlockingHook> = std::sync::OnceLock::new();

/// Installs the blocking hook (once; later calls are ignored).
pub fn set_blocking_hook(hook: BlockingHook) {
    let _ = BLOCKING_HOOK.set(hook);
}

/// Runs `wait` (which may block this thread on another) through the hook.
pub(crate) fn blocking<R>(wait: impl FnOnce() -> R) -> R {
    let Some(hook) = BLOCKING_HOOK.get() else {
        return wait();
    };
    let mut wait = Some(wait);
    let mut out = None;
    hook(&mut || {
        if let Some(w) = wait.take() {
            out = Some(w());
        }
    });
    match (out, wait) {
        (Some(r), _) => r,
        // a hook that did not call its closure: do the work here
        (None, Some(w)) => w(),
        (None, None) => unreachable!("the closure ran but produced no value"),
    }
}

/// One call of [`for_each_index_with_caller`]: indices claimed from both ends of the
/// range `0..n` (see [`Job::claim`]).
struct Job {
    /// The indices not yet claimed, `lo..hi`, as `lo | hi << 32` (`n` fits 32 bits).
    left: AtomicU64,
    done: AtomicUsize,
    panicked: AtomicBool,
    /// The caller's `f`, lifetime erased: dereferenced only for a claimed index < n, and
    /// the caller does not return before every such call has finished.
    f: *const (dyn Fn(usize) + Sync),
    /// Where the caller ran when it posted the job (CPU, thread id), if the pool's workers
    /// are pinned: see [`Job::avoid_caller`].
    caller: Option<(usize, i32)>,
    /// The caller's CPUs before a helper moved it, for the caller to restore when the job
    /// is done (`moved` says whether to look, so the lock is taken only then).
    moved_from: parking_lot::Mutex<Option<Vec<usize>>>,
    moved: AtomicBool,
}
// SAFETY: `f` is Sync (callable from any thread) and only used under the protocol above;
// the counters are atomics.
unsafe impl Send for Job {}
unsafe impl Sync for Job {}

impl Job {
    fn new(n: usize, f: *const (dyn Fn(usize) + Sync), caller: Option<(usize, i32)>) -> Job {
        Job {
            left: AtomicU64::new((n as u64) << 32),
            done: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            f,
            caller,
            moved_from: parking_lot::Mutex::new(None),
            moved: AtomicBool::new(false),
        }
    }

    /// The next unclaimed index, from the front (the caller: 0, 1, 2, ...) or from the
    /// back (the helpers: n - 1, n - 2, ...), or `None` when all are claimed. Pieces are
    /// consecutive runs of memory in the kernels that use this, so the caller and a
    /// helper each walk their half in order and meet where the work balances: with one
    /// shared counter the two took turns (0, 2, 4, .. and 1, 3, 5, ..), each jumping a
    /// piece ahead every time (in-place `mul_` of 4M float32 on 2 threads: 111 to 91 us).
    fn claim(&self, from_back: bool) -> Option<usize> {
        let mut cur = self.left.load(Ordering::Acquire);
        loop {
            let (lo, hi) = (cur & 0xFFFF_FFFF, cur >> 32);
            if lo >= hi {
                return None;
            }
            let (next, i) = if from_back {
                (lo | (hi - 1) << 32, hi - 1)
            } else {
                ((lo + 1) | hi << 32, lo)
            };
            match self
                .left
                .compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(i as usize),
                Err(seen) => cur = seen,
            }
        }
    }

    /// Run by a helper once it holds an index: if it is pinned to the CPU the caller was
    /// on when it posted the job, the two would share that CPU for the whole job (the
    /// helper cannot move, and the scheduler leaves a thread that ran in the last half
    /// millisecond where it is), so the helper moves the caller to the caller's other
    /// CPUs. The caller restores its CPUs when the job is done ([`Job::restore_caller`]);
    /// it stays where it went. Costs two reads when there is nothing to do.
    fn avoid_caller(&self) {
        let (Some((cpu, tid)), Some(mine)) = (self.caller, affinity::pinned_cpu()) else {
            return;
        };
        if cpu != mine {
            return;
        }
        let before = affinity::thread_cpus(tid);
        let elsewhere: Vec<usize> = before.iter().copied().filter(|&c| c != mine).collect();
        if elsewhere.is_empty() || elsewhere.len() == before.len() {
            return; // the caller may only run here (or not here at all)
        }
        let mut saved = self.moved_from.lock();
        if saved.is_none() && affinity::set_thread(tid, &elsewhere) {
            *saved = Some(before);
            self.moved.store(true, Ordering::Release);
        }
    }

    /// Run by the caller when every index is done: gives it back the CPUs a helper took
    /// from it ([`Job::avoid_caller`]).
    fn restore_caller(&self) {
        if self.moved.load(Ordering::Acquire)
            && let Some(before) = self.moved_from.lock().take()
        {
            affinity::set_current_thread(&before);
        }
    }

    fn work(&self, from_back: bool) {
        let mut first = from_back;
        while let Some(i) = self.claim(from_back) {
            if std::mem::take(&mut first) {
                // after a claim: the caller is still in the job (it waits for index i)
                self.avoid_caller();
            }
            // SAFETY: i < n was claimed by this thread alone, so the caller is still
            // waiting in `for_each_index_with_caller` and `f` is alive.
            let f = unsafe { &*self.f };
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(i))).is_err() {
                self.panicked.store(true, Ordering::Release);
            }
            self.done.fetch_add(1, Ordering::AcqRel);
        }
    }
}

/// How long a helper stays awake after its last kernel.
const WARM_FOR: std::time::Duration = std::time::Duration::from_micros(100);

/// Helpers that stay awake between kernels. A helper that finished its part of a kernel
/// spins for [`WARM_FOR`] (running any other pool work that turns up meanwhile) and
/// takes the next kernel's job as soon as it is posted, so the ops of a forward pass,
/// a few microseconds apart, find it awake instead of waking a sleeping thread each time
/// (10-20 µs here, about as long as a 64K-element kernel). torch's OpenMP threads spin
/// the same way between parallel regions. At most `num_threads() - 1` helpers spin, so
/// with the calling thread no more than `num_threads()` threads are ever busy.
#[derive(Default)]
struct Warm {
    /// The pool's workers are pinned (jobs then say where their caller runs).
    pinned: bool,
    /// The job posted last, and a counter bumped at every post.
    job: parking_lot::Mutex<Option<Arc<Job>>>,
    posted: AtomicU64,
    spinning: AtomicUsize,
}

thread_local! {
    /// This thread is a warm helper now (so a helper task it runs meanwhile does not
    /// start a second spin inside the first).
    static WARM_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl Warm {
    fn post(&self, job: &Arc<Job>) {
        *self.job.lock() = Some(job.clone());
        self.posted.fetch_add(1, Ordering::SeqCst);
    }
    /// Forgets `job` once its caller is done with it (a helper arriving later would find
    /// nothing to do in it anyway).
    fn retire(&self, job: &Arc<Job>) {
        let mut g = self.job.lock();
        if g.as_ref().is_some_and(|j| Arc::ptr_eq(j, job)) {
            *g = None;
        }
    }
    fn take_posted(&self) {
        let job = self.job.lock().clone();
        if let Some(j) = job {
            j.work(true);
        }
    }
    /// Run by a helper after its kernel: spins for jobs (see [`Warm`]).
    fn stay_warm(&self, max_spinning: usize) {
        if WARM_HERE.get() {
            return;
        }
        if self.spinning.fetch_add(1, Ordering::SeqCst) >= max_spinning {
            self.spinning.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        WARM_HERE.set(true);
        let mut seen = self.posted.load(Ordering::SeqCst);
        let mut until = std::time::Instant::now() + WARM_FOR;
        loop {
            let now = self.posted.load(Ordering::Acquire);
            if now != seen {
                seen = now;
                self.take_posted();
                until = std::time::Instant::now() + WARM_FOR;
            } else if matches!(rayon::yield_now(), Some(rayon::Yield::Executed)) {
                // other pool work (a backward's nodes): done, keep watching
            } else if std::time::Instant::now() >= until {
                break;
            } else {
                std::hint::spin_loop();
            }
        }
        WARM_HERE.set(false);
        self.spinning.fetch_sub(1, Ordering::SeqCst);
        // A caller that saw this helper still spinning spawned no task for its job; the
        // SeqCst pair (post, then read `spinning` / leave `spinning`, then read `posted`)
        // guarantees that one side sees the other, so no job goes without its helper.
        if self.posted.load(Ordering::SeqCst) != seen {
            self.take_posted();
        }
    }
}

/// Runs `f(i)` for every `i` in `0..n`, each exactly once, on the calling thread (outside
/// the pool) and up to `num_threads() - 1` pool workers, and returns when all are done.
/// `f` must be callable concurrently for distinct indices.
///
/// Why not `pool.install(|| par_iter)`: that hands all the work to the pool and parks
/// the caller until a worker has woken (10-20 µs on a VM) and finished. Here the caller
/// claims indices itself (from the front; helpers from the back: [`Job::claim`]);
/// workers join in when they wake (or at once, if they are still warm from the last
/// call: see [`Warm`]), and the caller only waits for indices a worker has already
/// claimed. A worker that starts after everything was claimed finds nothing and touches
/// nothing but the counter, which it co-owns, so `f` (a borrow of the caller's stack) is
/// never used after this returns.
pub(crate) fn for_each_index_with_caller(n: usize, f: &(dyn Fn(usize) + Sync)) {
    let helpers = num_threads().saturating_sub(1);
    let (pool, warm) = match pool_and_warm() {
        Ok(p)
            if helpers > 0
                && n > 1
                && n <= u32::MAX as usize
                && rayon::current_thread_index().is_none() =>
        {
            p
        }
        _ => {
            (0..n).for_each(f);
            return;
        }
    };
    // SAFETY: only the lifetime is erased; see `Job::f`.
    let f_static: *const (dyn Fn(usize) + Sync + 'static) = unsafe {
        std::mem::transmute::<
            *const (dyn Fn(usize) + Sync + '_),
            *const (dyn Fn(usize) + Sync + 'static),
        >(f)
    };
    let caller = if warm.pinned {
        affinity::where_now()
    } else {
        None
    };
    let job = Arc::new(Job::new(n, f_static, caller));
    // Warm helpers take the job from the post; sleeping ones are woken with a task.
    warm.post(&job);
    let awake = warm.spinning.load(Ordering::SeqCst).min(helpers);
    for _ in awake..helpers.min(n - 1).max(awake) {
        let (j, w) = (job.clone(), warm.clone());
        pool.spawn(move || {
            j.work(true);
            w.stay_warm(helpers);
        });
    }
    // Through the blocking hook: a Python thread that entered holding the GIL lets other
    // Python threads (and workers running Python backwards) go on meanwhile, as it would
    // while waiting for the pool.
    blocking(|| {
        job.work(false);
        // Every index is claimed; wait for those a worker is still running (at most one
        // call per worker).
        while job.done.load(Ordering::Acquire) < n {
            std::hint::spin_loop();
            std::thread::yield_now();
        }
    });
    warm.retire(&job);
    job.restore_caller();
    if job.panicked.load(Ordering::Acquire) {
        // a kernel bug: surface it like a panic on this thread
        #[allow(clippy::panic)]
        {
            panic!("rgrad internal error: a parallel kernel panicked");
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn job_indices_are_claimed_once_from_both_ends() {
        let f: &(dyn Fn(usize) + Sync) = &|_| {};
        // SAFETY: the job's `f` is never called here.
        let f = unsafe {
            std::mem::transmute::<
                *const (dyn Fn(usize) + Sync + '_),
                *const (dyn Fn(usize) + Sync + 'static),
            >(f)
        };
        let job = Job::new(5, f, None);
        let order: Vec<_> = [false, true, false, true, false, true, false]
            .iter()
            .map(|&back| job.claim(back))
            .collect();
        assert_eq!(
            order,
            [Some(0), Some(4), Some(1), Some(3), Some(2), None, None]
        );
        // many threads at once: every index exactly once
        let job = Job::new(100_000, f, None);
        let seen: Vec<AtomicU32> = (0..100_000).map(|_| AtomicU32::new(0)).collect();
        std::thread::scope(|s| {
            for t in 0..8 {
                let (job, seen) = (&job, &seen);
                s.spawn(move || {
                    while let Some(i) = job.claim(t % 2 == 1) {
                        seen[i].fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
        assert!(seen.iter().all(|c| c.load(Ordering::Relaxed) == 1));
    }

    #[test]
    fn workers_are_pinned_to_distinct_cpus_only_with_one_per_cpu() {
        let cpus = affinity::current_cpus();
        let n = cpus.len().max(1);
        let one_per_cpu = build(n).unwrap();
        let seen = one_per_cpu.pool.broadcast(|_| affinity::current_cpus());
        if affinity::Plan::new(n).pin {
            let want: Vec<Vec<usize>> = cpus.iter().map(|&c| vec![c]).collect();
            assert_eq!(seen, want);
        } else {
            // one CPU, pinning turned off, or not Linux: workers keep the process's set
            assert!(seen.iter().all(|s| *s == cpus), "{seen:?}");
        }
        // more workers than CPUs: nobody is pinned
        let oversubscribed = build(n + 1).unwrap();
        let seen = oversubscribed.pool.broadcast(|_| affinity::current_cpus());
        assert!(seen.iter().all(|s| *s == cpus), "{seen:?}");
        // a pool built from a thread pinned to one CPU (a worker calling
        // set_num_threads) still gets the process's CPUs
        if let [first, _, ..] = cpus.as_slice() {
            let first = *first;
            let seen = std::thread::spawn(move || {
                affinity::set_current_thread(&[first]);
                let p = build(n + 1).unwrap();
                p.pool.broadcast(|_| affinity::current_cpus())
            })
            .join()
            .unwrap();
            assert!(seen.iter().all(|s| *s == cpus), "{seen:?}");
        }
    }

    #[test]
    fn a_pinned_helper_on_the_callers_cpu_moves_the_caller_for_the_job() {
        let cpus = affinity::current_cpus();
        let Some((cpu, tid)) = affinity::where_now() else {
            return; // not Linux: nothing is pinned
        };
        let f: &(dyn Fn(usize) + Sync) = &|_| {};
        // SAFETY: the job's `f` is never called here.
        let f = unsafe {
            std::mem::transmute::<
                *const (dyn Fn(usize) + Sync + '_),
                *const (dyn Fn(usize) + Sync + 'static),
            >(f)
        };
        let helper_on = |helper_cpu: usize, job: &Job| {
            std::thread::scope(|s| {
                s.spawn(|| {
                    affinity::mark_pinned(helper_cpu);
                    job.avoid_caller();
                });
            });
        };
        // a helper pinned elsewhere leaves the caller alone
        let other = cpus.iter().copied().find(|&c| c != cpu);
        if let Some(other) = other {
            let job = Job::new(2, f, Some((cpu, tid)));
            helper_on(other, &job);
            assert_eq!(affinity::current_cpus(), cpus);
            job.restore_caller();
            assert_eq!(affinity::current_cpus(), cpus);
        }
        // a helper pinned to the caller's CPU moves it off that CPU at once, and the
        // caller gets its CPUs back when the job is done
        let job = Job::new(2, f, Some((cpu, tid)));
        helper_on(cpu, &job);
        let during = affinity::current_cpus();
        if other.is_some() {
            let want: Vec<usize> = cpus.iter().copied().filter(|&c| c != cpu).collect();
            assert_eq!(during, want);
            assert_ne!(affinity::where_now().map(|w| w.0), Some(cpu));
        } else {
            assert_eq!(during, cpus, "a caller with one CPU cannot be moved");
        }
        job.restore_caller();
        assert_eq!(affinity::current_cpus(), cpus);
    }

    #[test]
    fn every_index_runs_exactly_once() {
        for n in [0usize, 1, 2, 3, 17, 1000] {
            let hits: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
            for_each_index_with_caller(n, &|i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
            assert!(
                hits.iter().all(|h| h.load(Ordering::Relaxed) == 1),
                "n = {n}"
            );
        }
    }

    #[test]
    fn the_caller_finishes_alone_when_every_worker_is_busy() {
        // occupy all workers until the call has returned: it must not wait for them
        let p = pool().unwrap();
        let release = Arc::new(std::sync::Barrier::new(num_threads() + 1));
        for _ in 0..num_threads() {
            let r = release.clone();
            p.spawn(move || {
                r.wait();
            });
        }
        let hits = AtomicU32::new(0);
        for_each_index_with_caller(64, &|_| {
            hits.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(hits.load(Ordering::Relaxed), 64);
        release.wait();
    }

    #[test]
    fn concurrent_callers_each_run_every_index_once_and_helpers_go_back_to_sleep() {
        // several threads posting jobs at once (each replaces the others' post): every
        // job still runs each of its indices exactly once, warm helpers or not
        std::thread::scope(|s| {
            for t in 0..4usize {
                s.spawn(move || {
                    for round in 0..200usize {
                        let n = 1 + (t * 7 + round * 13) % 40;
                        let hits: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
                        for_each_index_with_caller(n, &|i| {
                            hits[i].fetch_add(1, Ordering::Relaxed);
                        });
                        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
                    }
                });
            }
        });
        // and no helper spins on for longer than WARM_FOR after the last job
        let (_, warm) = pool_and_warm().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while warm.spinning.load(Ordering::SeqCst) > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "a helper never stopped spinning"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    #[test]
    fn a_panicking_index_is_reported_not_hung() {
        let r = std::panic::catch_unwind(|| {
            for_each_index_with_caller(32, &|i| {
                if i == 20 {
                    panic!("boom");
                }
            })
        });
        assert!(r.is_err());
    }
}
