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

/// Runs `f(i)` for every `i` in `0..n`, each exactly once, on the calling thread (outside
/// the pool) and up to `num_threads() - 1` pool workers, and returns when all are done.
/// `f` must be callable concurrently for distinct indices.
///
/// Why not `pool.install(|| par_iter)`: that hands all the work to the pool and parks
/// the caller until a worker has woken (10-20 µs on a VM) and finished. Here the caller
/// claims indices itself from a shared counter; workers join in when they wake, and the
/// caller only waits for indices a worker has already claimed. A worker that starts
/// after everything was claimed finds nothing and touches nothing but the counter, which
/// it co-owns, so `f` (a borrow of the caller's stack) is never used after this returns.
pub(crate) fn for_each_index_with_caller(n: usize, f: &(dyn Fn(usize) + Sync)) {
    use std::sync::atomic::AtomicBool;
    struct Job {
        next: AtomicUsize,
        done: AtomicUsize,
        panicked: AtomicBool,
        n: usize,
        /// The caller's `f`, lifetime erased: dereferenced only for a claimed index < n,
        /// and the caller does not return before every such call has finished.
        f: *const (dyn Fn(usize) + Sync),
    }
    // SAFETY: `f` is Sync (callable from any thread) and only used under the protocol
    // above; the counters are atomics.
    unsafe impl Send for Job {}
    unsafe impl Sync for Job {}
    impl Job {
        fn work(&self) {
            loop {
                let i = self.next.fetch_add(1, Ordering::AcqRel);
                if i >= self.n {
                    return;
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
    let helpers = num_threads().saturating_sub(1).min(n.saturating_sub(1));
    let pool = match pool() {
        Ok(p) if helpers > 0 && rayon::current_thread_index().is_none() => p,
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
    let job = Arc::new(Job {
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        panicked: AtomicBool::new(false),
        n,
        f: f_static,
    });
    for _ in 0..helpers {
        let j = job.clone();
        pool.spawn(move || j.work());
    }
    // Through the blocking hook: a Python thread that entered holding the GIL lets other
    // Python threads (and workers running Python backwards) go on meanwhile, as it would
    // while waiting for the pool.
    blocking(|| {
        job.work();
        // Every index is claimed; wait for those a worker is still running (at most one
        // call per worker).
        while job.done.load(Ordering::Acquire) < n {
            std::hint::spin_loop();
            std::thread::yield_now();
        }
    });
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
