//! The one dispatch point. Every op's forward (`ops::apply`, `apply_fresh`,
//! `apply_nondiff`, which all end in [`forward`]) and every backward node the engine
//! runs ([`backward`]) pass through here, under their torch names (`aten::mul`,
//! `MulBackward0`); a fused backward kernel runs inside its node's scope. A [`Hook`] (the
//! profiler, anomaly mode) sees each op start and end. Without a hook the cost is one
//! relaxed atomic load per op.

use crate::tensor::Tensor;
use crate::{Error, Result};
use parking_lot::RwLock;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Which pass an op runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// an op called by user code, or by another op (a composite, a backward formula)
    Forward,
    /// a node of the graph, run by the engine
    Backward,
}

/// What a hook is told when an op starts.
#[derive(Clone, Copy, Debug)]
pub struct OpStart<'a> {
    /// torch's name for it: `aten::mul` for an op, the node's name (`MulBackward0`) for
    /// a backward node
    pub name: &'a str,
    pub phase: Phase,
    /// for a backward node: the sequence number of the forward op that recorded it (the
    /// profiler's link between the two; not numbered yet: `None`)
    pub sequence_nr: Option<u64>,
}

/// An observer of every op (installed with [`set_hook`]).
pub trait Hook: Send + Sync {
    /// `op` starts on this thread; the value returned comes back to [`Hook::end`].
    fn start(&self, op: &OpStart<'_>) -> u64;
    /// The op that [`Hook::start`] returned `token` for has ended: `outputs` are a backward
    /// node's gradients (empty for a forward op) or the op's error. An error returned here
    /// fails the op (anomaly mode's check for NaN gradients).
    fn end(
        &self,
        token: u64,
        outputs: std::result::Result<&[Option<Tensor>], &Error>,
    ) -> Result<()>;
}

static ENABLED: AtomicBool = AtomicBool::new(false);
static HOOK: RwLock<Option<Arc<dyn Hook>>> = RwLock::new(None);

/// Installs `hook` (or removes the current one), returning the previous one.
pub fn set_hook(hook: Option<Arc<dyn Hook>>) -> Option<Arc<dyn Hook>> {
    let mut h = HOOK.write();
    ENABLED.store(hook.is_some(), Ordering::Release);
    std::mem::replace(&mut *h, hook)
}

/// The hook to call, if one is installed (one relaxed load when none is).
#[inline(always)]
fn hook() -> Option<Arc<dyn Hook>> {
    if !ENABLED.load(Ordering::Relaxed) {
        return None;
    }
    HOOK.read().clone()
}

/// Runs the forward of the op `name` (`aten::mul`).
#[inline]
pub fn forward<R>(name: &'static str, f: impl FnOnce() -> Result<R>) -> Result<R> {
    match hook() {
        None => f(),
        Some(h) => forward_hooked(&*h, name, f),
    }
}

#[inline(never)]
fn forward_hooked<R>(h: &dyn Hook, name: &'static str, f: impl FnOnce() -> Result<R>) -> Result<R> {
    let token = h.start(&OpStart {
        name,
        phase: Phase::Forward,
        sequence_nr: None,
    });
    let r = f();
    match &r {
        Ok(_) => h.end(token, Ok(&[]))?,
        Err(e) => h.end(token, Err(e))?,
    }
    r
}

/// Runs the backward node `name`; `f` returns the gradients of its inputs.
#[inline]
pub fn backward(
    name: impl FnOnce() -> std::borrow::Cow<'static, str>,
    f: impl FnOnce() -> Result<crate::autograd::function::Grads>,
) -> Result<crate::autograd::function::Grads> {
    let Some(h) = hook() else { return f() };
    let name = name();
    let token = h.start(&OpStart {
        name: &name,
        phase: Phase::Backward,
        sequence_nr: None,
    });
    let r = f();
    match &r {
        Ok(g) => h.end(token, Ok(g))?,
        Err(e) => h.end(token, Err(e))?,
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    /// A hook that writes down what it saw.
    #[derive(Default)]
    struct Recorder {
        seen: Mutex<Vec<(String, Phase, Option<u64>)>>,
        ended: Mutex<Vec<(u64, usize)>>,
    }
    impl Hook for Recorder {
        fn start(&self, op: &OpStart<'_>) -> u64 {
            let mut s = self.seen.lock();
            s.push((op.name.to_string(), op.phase, op.sequence_nr));
            s.len() as u64
        }
        fn end(
            &self,
            token: u64,
            outputs: std::result::Result<&[Option<Tensor>], &Error>,
        ) -> Result<()> {
            self.ended
                .lock()
                .push((token, outputs.map(|o| o.len()).unwrap_or(usize::MAX)));
            Ok(())
        }
    }

    #[test]
    fn every_forward_op_and_backward_node_passes_the_hook() {
        use crate::ops;
        use crate::testing::leaf;
        let rec = Arc::new(Recorder::default());
        let prev = set_hook(Some(rec.clone()));
        let x = leaf(vec![1.0, 2.0, 3.0], &[3]);
        let y = ops::exp(&ops::mul(&x, &x).unwrap()).unwrap();
        let s = ops::sum(&y, None, false).unwrap();
        let g = crate::autograd::engine::run_backward(
            std::slice::from_ref(&s),
            &[ops::ones(&[], s.dtype()).unwrap()],
            &[],
            Default::default(),
        );
        set_hook(prev);
        g.unwrap();
        let seen = rec.seen.lock().clone();
        // (other tests run beside this one and may show up too: only what must be there)
        let has = |n: &str, p: Phase| seen.iter().any(|(name, ph, _)| name == n && *ph == p);
        for op in ["aten::mul", "aten::exp", "aten::sum", "aten::ones"] {
            assert!(has(op, Phase::Forward), "{op} not seen: {seen:?}");
        }
        for node in ["SumBackward0", "ExpBackward0", "MulBackward0"] {
            assert!(has(node, Phase::Backward), "{node} not seen: {seen:?}");
        }
        // each start has its end, and a backward node ends with its gradients
        let ended = rec.ended.lock().clone();
        assert!(ended.len() >= 7);
        assert!(ended.iter().any(|&(_, n)| n == 2)); // MulBackward0: two inputs
    }
}
