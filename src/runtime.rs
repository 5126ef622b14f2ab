//! The one worker pool shared by the backward executor and intra-op kernel parallelism,
//! so a 2-core machine never runs more than 2 busy threads.

use parking_lot::RwLock;
use std::sync::Arc;

struct Pool {
    pool: Arc<rayon::ThreadPool>,
    threads: usize,
    /// The process that built the pool: a forked child builds its own (the parent's
    /// worker threads do not exist in the child).
    pid: u32,
}

static POOL: RwLock<Option<Pool>> = RwLock::new(None);

fn default_threads() -> usize {
    std::env::var("RGRAD_NUM_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn build(threads: usize) -> Pool {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("rgrad-worker-{i}"))
        .build()
        .map(Arc::new)
        // Building a pool only fails if the OS refuses threads; fall back to the global pool.
        .unwrap_or_else(|_| {
            Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .build()
                    .unwrap_or_else(|_| std::process::abort()),
            )
        });
    Pool {
        pool,
        threads,
        pid: std::process::id(),
    }
}

/// The shared pool, built on first use from `RGRAD_NUM_THREADS` (default: all cores).
pub fn pool() -> Arc<rayon::ThreadPool> {
    {
        let g = POOL.read();
        if let Some(p) = g.as_ref() {
            if p.pid == std::process::id() {
                return p.pool.clone();
            }
        }
    }
    let mut g = POOL.write();
    match g.as_ref() {
        Some(p) if p.pid == std::process::id() => p.pool.clone(),
        _ => {
            let threads = g.as_ref().map_or_else(default_threads, |p| p.threads);
            let p = build(threads);
            let pool = p.pool.clone();
            *g = Some(p);
            pool
        }
    }
}

/// Number of threads of the pool (torch.get_num_threads).
pub fn num_threads() -> usize {
    let _ = pool();
    POOL.read().as_ref().map_or(1, |p| p.threads)
}

/// Replaces the pool with one of `n` threads (torch.set_num_threads). Work already
/// running keeps its old pool until it finishes.
pub fn set_num_threads(n: usize) {
    *POOL.write() = Some(build(n.max(1)));
}

/// Whether kernels should split work across threads.
pub fn intra_op_parallel() -> bool {
    num_threads() > 1
}

/// Runs `f` inside the shared pool (directly, if already on one of its threads).
pub fn run<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        return f();
    }
    pool().install(f)
}
