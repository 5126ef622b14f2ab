//! The one worker pool shared by the backward executor and intra-op kernel parallelism,
//! so a 2-core machine never runs more than 2 busy threads.

use crate::{Error, Result};
use parking_lot::RwLock;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Pool {
    pool: Arc<rayon::ThreadPool>,
    /// The process that built the pool: a forked child builds its own (the parent's
    /// worker threads do not exist in the child).
    pid: u32,
}

static POOL: RwLock<Option<Pool>> = RwLock::new(None);
/// The configured size (0 = not decided yet), readable without a lock on hot paths.
static THREADS: AtomicUsize = AtomicUsize::new(0);

fn default_threads() -> usize {
    std::env::var("RGRAD_NUM_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Builds a pool of `threads` workers; the OS refusing threads is an error, not a crash.
fn build(threads: usize) -> Result<Pool> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("rgrad-worker-{i}"))
        .build()
        .map_err(|e| Error::runtime(format!("rgrad could not start its worker threads: {e}")))?;
    Ok(Pool {
        pool: Arc::new(pool),
        pid: std::process::id(),
    })
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
    let pid = std::process::id();
    if let Some(p) = POOL.read().as_ref().filter(|p| p.pid == pid) {
        return Ok(p.pool.clone());
    }
    let mut g = POOL.write();
    if let Some(p) = g.as_ref().filter(|p| p.pid == pid) {
        return Ok(p.pool.clone());
    }
    let p = build(num_threads())?;
    let pool = p.pool.clone();
    *g = Some(p);
    Ok(pool)
}

/// Replaces the pool with one of `n` threads (torch.set_num_threads). Work already
/// running keeps its old pool until it finishes.
pub fn set_num_threads(n: usize) -> Result<()> {
    let p = build(n.max(1))?;
    THREADS.store(n.max(1), Ordering::Relaxed);
    *POOL.write() = Some(p);
    Ok(())
}

/// Whether kernels should split work across threads.
pub fn intra_op_parallel() -> bool {
    num_threads() > 1
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
