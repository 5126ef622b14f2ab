//! The interpreter lock (GIL) around core work.
//!
//! Rule: a thread never waits for the worker pool while holding the GIL, because pool
//! workers take the GIL to run Python code (custom Function backwards, hooks); a thread
//! that held it while waiting for them would deadlock. Bindings release it up front for
//! big ops (`detach`); for everything else the core calls back here (the blocking hook)
//! just before a thread outside the pool waits on it.
//!
//! To know whether this thread holds the GIL, a thread-local flag marks the regions
//! where rgrad released it: rgrad's Rust code is entered from outside the pool only by
//! a Python call (which holds the GIL), so outside those regions the GIL is held.

use pyo3::prelude::*;
use std::cell::Cell;

thread_local! {
    static DETACHED: Cell<bool> = const { Cell::new(false) };
}

/// Sets the flag for the duration of `f` (restored even if `f` unwinds).
fn with_flag<R>(detached: bool, f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            DETACHED.with(|d| d.set(self.0));
        }
    }
    let _restore = Restore(DETACHED.with(|d| d.replace(detached)));
    f()
}

/// Runs `f` with the GIL released (pyo3's `detach`, recorded in the flag).
pub fn detach<T: Send, F: Send + FnOnce() -> T>(py: Python<'_>, f: F) -> T {
    py.detach(|| with_flag(true, f))
}

/// Runs `f` holding the GIL (pyo3's `attach`, recorded in the flag).
pub fn attach<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> R {
    keep_thread_state();
    Python::attach(|py| with_flag(false, || f(py)))
}

thread_local! {
    static PRIMED: Cell<bool> = const { Cell::new(false) };
}

/// On a pool worker, gives the thread a Python thread state that outlives each call.
///
/// Why: a thread that Python did not create gets a fresh thread state from every
/// outermost `PyGILState_Ensure` and loses it at the matching release, which costs
/// microseconds per custom-Function backward or hook. Taking one extra, never released
/// `PyGILState_Ensure` (then letting go of the GIL) keeps the state alive, so later
/// acquisitions only take the lock. The state lives as long as the worker thread.
fn keep_thread_state() {
    if rayon::current_thread_index().is_none() || PRIMED.with(Cell::get) {
        return;
    }
    PRIMED.with(|p| p.set(true));
    // SAFETY: this worker holds neither the GIL nor a pyo3 token here (pool workers
    // only enter Python through `attach`, and this runs before pyo3's attach); Ensure
    // takes the GIL with a thread state that we keep, SaveThread releases the GIL.
    unsafe {
        let _state = pyo3::ffi::PyGILState_Ensure();
        pyo3::ffi::PyEval_SaveThread();
    }
}

/// The blocking hook (see the module docs): releases the GIL while `wait` blocks.
fn release_while_blocked(wait: &mut dyn FnMut()) {
    if DETACHED.with(Cell::get) {
        wait();
        return;
    }
    struct AssertSend<'a>(&'a mut dyn FnMut());
    // SAFETY: the closure is core code that touches no Python object; it is only sent
    // "across" the GIL release, not to another thread.
    unsafe impl Send for AssertSend<'_> {}
    let wait = AssertSend(wait);
    // SAFETY: this thread is outside the pool and not in a region where rgrad released
    // the GIL, so it is inside a Python call that holds it (see the module docs).
    let py = unsafe { Python::assume_attached() };
    py.detach(move || {
        let wait = wait;
        with_flag(true, || (wait.0)());
    });
}

/// Installs the blocking hook in the core (at module import).
pub fn install() {
    crate::runtime::set_blocking_hook(release_while_blocked);
}
