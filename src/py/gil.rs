//! The interpreter lock (GIL) around core work.
//!
//! Rule: a thread never waits for another thread while holding the GIL, because the
//! other thread may need the GIL to finish: pool workers take it to run Python code
//! (custom Function backwards, hooks), and a thread that holds a storage lock while it
//! waits for the pool takes the GIL back before it releases that lock. Bindings release
//! the GIL up front for big ops (`detach`); for every other wait (pool work, a contended
//! storage lock) the core calls back here (the blocking hook) just before blocking.
//!
//! To know whether this thread holds the GIL, a thread-local state records the regions
//! where rgrad released it (`detach`) or took it (`attach`). Outside both: a thread
//! outside the pool entered rgrad through a Python call, so it holds the GIL; a pool
//! worker does not.

use pyo3::prelude::*;
use std::cell::Cell;

#[derive(Clone, Copy, PartialEq)]
enum Gil {
    /// Not set by rgrad: held on a Python thread, not held on a pool worker.
    Default,
    Held,
    Released,
}

thread_local! {
    static STATE: Cell<Gil> = const { Cell::new(Gil::Default) };
}

pub(crate) fn holds_gil() -> bool {
    match STATE.with(Cell::get) {
        Gil::Held => true,
        Gil::Released => false,
        Gil::Default => rayon::current_thread_index().is_none(),
    }
}

/// Sets the state for the duration of `f` (restored even if `f` unwinds).
fn with_state<R>(state: Gil, f: impl FnOnce() -> R) -> R {
    struct Restore(Gil);
    impl Drop for Restore {
        fn drop(&mut self) {
            STATE.with(|d| d.set(self.0));
        }
    }
    let _restore = Restore(STATE.with(|d| d.replace(state)));
    f()
}

/// Runs `f` with the GIL released (pyo3's `detach`, recorded in the flag).
pub fn detach<T: Send, F: Send + FnOnce() -> T>(py: Python<'_>, f: F) -> T {
    py.detach(|| with_state(Gil::Released, f))
}

/// Runs `f` holding the GIL (pyo3's `attach`, recorded in the flag).
pub fn attach<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> R {
    keep_thread_state();
    Python::attach(|py| with_state(Gil::Held, || f(py)))
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
    if !holds_gil() {
        wait();
        return;
    }
    struct AssertSend<'a>(&'a mut dyn FnMut());
    // SAFETY: the closure is core code that touches no Python object; it is only sent
    // "across" the GIL release, not to another thread.
    unsafe impl Send for AssertSend<'_> {}
    let wait = AssertSend(wait);
    // SAFETY: `holds_gil` says this thread holds the GIL (see the module docs).
    let py = unsafe { Python::assume_attached() };
    py.detach(move || {
        let wait = wait;
        with_state(Gil::Released, || (wait.0)());
    });
}

/// Installs the blocking hook in the core (at module import).
pub fn install() {
    crate::runtime::set_blocking_hook(release_while_blocked);
}
