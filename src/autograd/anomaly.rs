//! Anomaly mode (torch's `detect_anomaly`): while it is on, every node keeps where in
//! Python it was made ([`Made`]), an error raised while the engine evaluates a node
//! carries that place to the user ([`AnomalyError`]: the binding warns "Error detected
//! in XBackward0. Traceback of forward call that caused the error: ..." before raising),
//! and every backward output is checked for NaN ("Function 'XBackward0' returned nan
//! values in its 0th output."), and, beyond torch, for infinities when asked.
//!
//! The switch is process-wide, as torch's is: a backward started on another thread, or
//! run by the engine's worker threads, sees it too.
//!
//! The traceback is captured by a function the binding installs ([`set_capture`]); it
//! keeps code objects and line numbers and formats them only when an error is reported.

use super::function::Grads;
use super::graph::NodeRef;
use crate::{Error, Result};
use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

static ENABLED: AtomicBool = AtomicBool::new(false);
static CHECK_NAN: AtomicBool = AtomicBool::new(true);
static CHECK_INF: AtomicBool = AtomicBool::new(false);

/// torch's `set_detect_anomaly(mode, check_nan)`.
pub fn set(enabled: bool, check_nan: bool) {
    CHECK_NAN.store(check_nan, Ordering::Relaxed);
    ENABLED.store(enabled, Ordering::Relaxed);
    crate::dispatch::observe(crate::dispatch::ANOMALY, enabled);
}

/// rgrad's own check, beyond torch's: an infinite backward output fails its node too.
pub fn set_check_inf(on: bool) {
    CHECK_INF.store(on, Ordering::Relaxed);
}

pub fn is_enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

pub fn is_check_nan_enabled() -> bool {
    CHECK_NAN.load(Ordering::Relaxed)
}

pub fn is_check_inf_enabled() -> bool {
    CHECK_INF.load(Ordering::Relaxed)
}

/// A captured Python traceback, formatted only when needed (also the profiler's
/// `with_stack`).
pub trait Traceback: Send + Sync {
    /// anomaly mode's form, torch's: `traceback.format_list` of the stack, outermost
    /// frame first, one string per frame.
    fn format(&self) -> Vec<String>;
    /// the profiler's form, torch's: `file(line): function`, innermost frame first.
    fn entries(&self) -> Vec<String>;
}

/// The binding's capture of the current Python stack.
pub type Capture = fn() -> Option<Arc<dyn Traceback>>;

static CAPTURE: OnceLock<Capture> = OnceLock::new();

/// Installs the traceback capture (the binding does, once).
pub fn set_capture(f: Capture) {
    let _ = CAPTURE.set(f);
}

/// The Python stack of this thread now, if it runs Python (the binding's capture).
pub fn capture_traceback() -> Option<Arc<dyn Traceback>> {
    CAPTURE.get().and_then(|f| f())
}

/// Where a node was made: the traceback of the forward call, and, for a node made by
/// another node's backward (create_graph), that node's name and its own `Made`.
pub struct Made {
    pub trace: Option<Arc<dyn Traceback>>,
    pub parent: Option<(Cow<'static, str>, Arc<Made>)>,
}

/// A node being evaluated: its name and where it was made.
type Evaluating = (Cow<'static, str>, Option<Arc<Made>>);

thread_local! {
    /// The nodes this thread is evaluating, innermost last (a hook may run a backward
    /// of its own).
    static EVALUATING: RefCell<Vec<Evaluating>> =
        const { RefCell::new(Vec::new()) };
}

/// What a node made now keeps (called by `dispatch::node_origin` under anomaly mode).
pub(crate) fn capture() -> Option<Arc<Made>> {
    let trace = capture_traceback();
    let parent = EVALUATING.with(|e| {
        e.borrow()
            .last()
            .and_then(|(name, made)| Some((name.clone(), made.clone()?)))
    });
    if trace.is_none() && parent.is_none() {
        return None;
    }
    Some(Arc::new(Made { trace, parent }))
}

/// Runs the evaluation of `node` (see `dispatch::evaluate`): the nodes it makes know it
/// as their parent, and its error carries where it was made.
pub(crate) fn evaluating<R>(node: &NodeRef, f: impl FnOnce() -> Result<R>) -> Result<R> {
    let name = node.op().name();
    let made = node.origin().extra.as_ref().and_then(|e| e.anomaly.clone());
    EVALUATING.with(|e| e.borrow_mut().push((name.clone(), made.clone())));
    let r = f();
    EVALUATING.with(|e| e.borrow_mut().pop());
    r.map_err(|inner| match inner {
        // (an error of a nested backward was reported there)
        Error::Anomaly(_) => inner,
        inner => Error::Anomaly(Box::new(AnomalyError {
            node: name,
            made,
            inner,
        })),
    })
}

/// An error raised while the engine evaluated a node under anomaly mode.
#[derive(Debug, Clone)]
pub struct AnomalyError {
    /// the node's name (`MulBackward0`)
    pub node: Cow<'static, str>,
    /// where it was made, if anomaly mode was on then
    pub made: Option<Arc<Made>>,
    /// the error itself, raised to the user as it would be without anomaly mode
    pub inner: Error,
}

impl std::fmt::Debug for Made {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Made")
            .field("parent", &self.parent.as_ref().map(|p| &p.0))
            .finish_non_exhaustive()
    }
}

impl AnomalyError {
    /// torch's warnings, in order: the failing node's forward traceback, then one per
    /// node up the chain of nodes whose backward made it.
    pub fn warnings(&self) -> Vec<String> {
        let Some(made) = &self.made else {
            return vec![format!(
                "Error detected in {}. No forward pass information available. Enable detect anomaly during \
                 forward pass for more information.",
                self.node
            )];
        };
        let stack = |m: &Made| {
            m.trace
                .as_ref()
                .map(|t| t.format().concat())
                .unwrap_or_default()
        };
        let mut out = vec![format!(
            "Error detected in {}. Traceback of forward call that caused the error:\n{}",
            self.node,
            stack(made)
        )];
        let mut parent = made.parent.as_ref();
        while let Some((name, m)) = parent {
            out.push(format!(
                "\n\nPrevious calculation was induced by {name}. Traceback of forward call that induced the \
                 previous calculation:\n{}",
                stack(m)
            ));
            parent = m.parent.as_ref();
        }
        out
    }
}

/// The check of a node's outputs (torch's, in `call_function`).
pub(crate) fn check_outputs(node: &NodeRef, grads: &Grads) -> Result<()> {
    let (nan, inf) = (is_check_nan_enabled(), is_check_inf_enabled());
    if !nan && !inf {
        return Ok(());
    }
    for (i, g) in grads.iter().enumerate() {
        let Some(g) = g else { continue };
        let s = g.snapshot();
        let (has_nan, has_inf) = crate::backend::host::non_finite(&s.storage.read(), &s.layout);
        let what = if nan && has_nan {
            "nan"
        } else if inf && has_inf {
            "inf"
        } else {
            continue;
        };
        return Err(Error::Runtime(format!(
            "Function '{}' returned {what} values in its {i}th output.",
            node.op().name()
        )));
    }
    Ok(())
}
