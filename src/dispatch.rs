//! The one dispatch point. Every op's forward (`ops::apply`, `apply_fresh`,
//! `apply_nondiff`, which all end in [`forward`]), every node the engine evaluates
//! ([`evaluate`]) and every backward formula it runs ([`backward`]) pass through here,
//! under their torch names (`aten::mul`, `MulBackward0`); a fused backward kernel runs
//! inside its node's scope. Three observers can watch: the profiler (`crate::profiler`),
//! anomaly mode (`crate::autograd::anomaly`) and a [`Hook`] installed with [`set_hook`].
//! With none on, the cost is one relaxed atomic load per op.
//!
//! Nodes are numbered here too: [`node_origin`] gives each node its thread's next
//! sequence number (torch's `sequence_nr`, the profiler's link from a forward op to its
//! backward node) and, under anomaly mode, where in Python it was made.

use crate::autograd::graph::{NodeRef, Origin};
use crate::tensor::Tensor;
use crate::{Error, Result};
use parking_lot::RwLock;
use std::borrow::Cow;
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

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
    /// for a backward node: the sequence number of the forward op that recorded it
    pub sequence_nr: Option<u64>,
}

/// An observer of every op (installed with [`set_hook`]).
pub trait Hook: Send + Sync {
    /// `op` starts on this thread; the value returned comes back to [`Hook::end`].
    fn start(&self, op: &OpStart<'_>) -> u64;
    /// The op that [`Hook::start`] returned `token` for has ended: `outputs` are a backward
    /// node's gradients (empty for a forward op) or the op's error. An error returned here
    /// fails the op.
    fn end(
        &self,
        token: u64,
        outputs: std::result::Result<&[Option<Tensor>], &Error>,
    ) -> Result<()>;
}

/// The observers that are on, one bit each.
pub(crate) const HOOK: u8 = 1;
pub(crate) const PROFILER: u8 = 2;
pub(crate) const ANOMALY: u8 = 4;
pub(crate) const NVTX: u8 = 8;
/// Some thread has saved-tensor hooks (`autograd::saved_hooks`): ops collect the nodes
/// they make, whose saved tensors are packed when the op ends.
pub(crate) const SAVED_HOOKS: u8 = 16;
/// Some thread has node-creation hooks (`autograd::node_hooks`): ops collect the nodes
/// they make, whose hooks run when the op ends.
pub(crate) const NODE_HOOKS: u8 = 32;
/// The bits under which an op runs in an op scope (`saved_hooks::scope`).
pub(crate) const SCOPED: u8 = SAVED_HOOKS | NODE_HOOKS;

static OBSERVED: AtomicU8 = AtomicU8::new(0);
static HOOK_SLOT: RwLock<Option<Arc<dyn Hook>>> = RwLock::new(None);

/// Turns one observer's bit on or off.
pub(crate) fn observe(bit: u8, on: bool) {
    if on {
        OBSERVED.fetch_or(bit, Ordering::AcqRel);
    } else {
        OBSERVED.fetch_and(!bit, Ordering::AcqRel);
    }
}

/// The observers that are on (one relaxed load).
#[inline(always)]
pub(crate) fn observed() -> u8 {
    OBSERVED.load(Ordering::Relaxed)
}

/// Installs `hook` (or removes the current one), returning the previous one.
pub fn set_hook(hook: Option<Arc<dyn Hook>>) -> Option<Arc<dyn Hook>> {
    let mut h = HOOK_SLOT.write();
    observe(HOOK, hook.is_some());
    std::mem::replace(&mut *h, hook)
}

fn hook() -> Option<Arc<dyn Hook>> {
    HOOK_SLOT.read().clone()
}

// ---- node numbering --------------------------------------------------------------------

thread_local! {
    /// This thread's next sequence number, and its id (0 until first asked).
    static NEXT_SEQUENCE_NR: Cell<(u64, u32)> = const { Cell::new((0, 0)) };
}

/// The origin of a node being made on this thread: its sequence number (each thread
/// counts from 0, as torch's do), the thread, and what the observers that are on keep
/// (the Python traceback under anomaly mode, the user range under the profiler).
#[inline]
pub(crate) fn node_origin() -> Origin {
    let (seq, thread) = NEXT_SEQUENCE_NR.with(|c| {
        let (n, mut thread) = c.get();
        if thread == 0 {
            thread = crate::profiler::thread_id();
        }
        c.set((n + 1, thread));
        (n, thread)
    });
    let bits = observed();
    let extra = if bits & (PROFILER | ANOMALY) != 0 {
        origin_extra(bits, seq)
    } else {
        None
    };
    Origin { seq, thread, extra }
}

#[inline(never)]
fn origin_extra(bits: u8, seq: u64) -> Option<Arc<crate::autograd::graph::OriginExtra>> {
    let range = if bits & PROFILER != 0 {
        crate::profiler::node_made(seq)
    } else {
        None
    };
    let anomaly = if bits & ANOMALY != 0 {
        crate::autograd::anomaly::capture()
    } else {
        None
    };
    (range.is_some() || anomaly.is_some())
        .then(|| Arc::new(crate::autograd::graph::OriginExtra { anomaly, range }))
}

/// The sequence number the next node made on this thread will get.
pub fn peek_sequence_nr() -> u64 {
    NEXT_SEQUENCE_NR.with(|c| c.get().0)
}

// ---- the dispatch points ---------------------------------------------------------------

/// Runs the forward of the op `name` (`aten::mul`); `shapes` gives its tensor inputs'
/// shapes, asked for only by a profiler that records them.
#[inline]
pub fn forward<R>(
    name: &'static str,
    shapes: impl Fn() -> Vec<Box<[usize]>>,
    f: impl FnOnce() -> Result<R>,
) -> Result<R> {
    match observed() & (HOOK | PROFILER | NVTX | SCOPED) {
        0 => f(),
        bits => forward_observed(bits, name, shapes, f),
    }
}

#[inline(never)]
fn forward_observed<R>(
    bits: u8,
    name: &'static str,
    shapes: impl Fn() -> Vec<Box<[usize]>>,
    f: impl FnOnce() -> Result<R>,
) -> Result<R> {
    if bits & SCOPED == 0 {
        return forward_watched(bits, name, shapes, f);
    }
    // the nodes made by the op get their saved tensors packed, and are shown to the
    // node-creation hooks, when it ends
    crate::autograd::saved_hooks::scope(|| match bits & !SCOPED {
        0 => f(),
        rest => forward_watched(rest, name, shapes, f),
    })
}

fn forward_watched<R>(
    bits: u8,
    name: &'static str,
    shapes: impl Fn() -> Vec<Box<[usize]>>,
    f: impl FnOnce() -> Result<R>,
) -> Result<R> {
    let _nvtx = (bits & NVTX != 0).then(|| crate::profiler::nvtx::op(name, &shapes));
    let _range = if bits & PROFILER != 0 {
        crate::profiler::begin(
            Cow::Borrowed(name),
            crate::profiler::Scope::Function,
            &shapes,
        )
    } else {
        None
    };
    let hook = if bits & HOOK != 0 { hook() } else { None };
    let Some(h) = hook else { return f() };
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

/// Runs the forward of an op whose name is known only at run time (a custom Function:
/// its class name, as torch records it); `name` is asked for only by the profiler.
pub fn forward_named<R>(name: impl FnOnce() -> String, f: impl FnOnce() -> R) -> R {
    let _range = if observed() & PROFILER != 0 {
        crate::profiler::begin(
            Cow::Owned(name()),
            crate::profiler::Scope::Function,
            Vec::new,
        )
    } else {
        None
    };
    f()
}

/// Runs a user's range (`record_function`) or any named range of work: `f` inside it.
pub fn range<R>(name: Cow<'static, str>, f: impl FnOnce() -> R) -> R {
    let _range = if observed() & PROFILER != 0 {
        crate::profiler::begin(name, crate::profiler::Scope::UserScope, Vec::new)
    } else {
        None
    };
    f()
}

/// The engine's evaluation of `node` (its gradients summed, its hooks, its formula):
/// torch's `autograd::engine::evaluate_function` range. Under anomaly mode an error
/// raised in it carries where the node was made, and the nodes it makes remember it as
/// their parent.
#[inline]
pub fn evaluate<R>(node: &NodeRef, f: impl FnOnce() -> Result<R>) -> Result<R> {
    match observed() & (PROFILER | ANOMALY) {
        0 => f(),
        bits => evaluate_observed(bits, node, f),
    }
}

#[inline(never)]
fn evaluate_observed<R>(bits: u8, node: &NodeRef, f: impl FnOnce() -> Result<R>) -> Result<R> {
    let origin = node.origin();
    let user = origin.extra.as_ref().and_then(|e| e.range);
    let profiling = bits & PROFILER != 0;
    // a node made inside a `record_function` range is reported under it in backward too
    let _user = match user {
        Some(r) if profiling => crate::profiler::begin(
            Cow::Borrowed(r),
            crate::profiler::Scope::UserScope,
            Vec::new,
        ),
        _ => None,
    };
    let _range = if profiling {
        crate::profiler::begin_node(node.op().name(), true, origin.seq as i64, origin.thread)
    } else {
        None
    };
    if bits & ANOMALY == 0 {
        return f();
    }
    crate::autograd::anomaly::evaluating(node, f)
}

/// Runs the accumulation of a leaf's gradient into `.grad` (torch's `AccumulateGrad`
/// node, which rgrad's engine does without a node).
#[inline]
pub fn accumulate<R>(f: impl FnOnce() -> R) -> R {
    if observed() & PROFILER == 0 {
        return f();
    }
    const NAME: &str = "torch::autograd::AccumulateGrad";
    let _evaluate = crate::profiler::begin_node(Cow::Borrowed(NAME), true, -1, 0);
    let _node = crate::profiler::begin_node(Cow::Borrowed(NAME), false, -1, 0);
    f()
}

/// Runs the backward formula of `node`; `f` returns the gradients of its inputs. Under
/// anomaly mode (with its NaN check on) a NaN gradient fails the node.
#[inline]
pub fn backward(
    node: &NodeRef,
    f: impl FnOnce() -> Result<crate::autograd::function::Grads>,
) -> Result<crate::autograd::function::Grads> {
    match observed() {
        0 => f(),
        bits => backward_observed(bits, node, f),
    }
}

#[inline(never)]
fn backward_observed(
    bits: u8,
    node: &NodeRef,
    f: impl FnOnce() -> Result<crate::autograd::function::Grads>,
) -> Result<crate::autograd::function::Grads> {
    let origin = node.origin();
    let _nvtx = (bits & NVTX != 0)
        .then(|| crate::profiler::nvtx::node(&node.op().name(), origin.seq as i64));
    let _range = if bits & PROFILER != 0 {
        crate::profiler::begin_node(node.op().name(), false, origin.seq as i64, origin.thread)
    } else {
        None
    };
    let hook = if bits & HOOK != 0 { hook() } else { None };
    let grads = match hook {
        None => f()?,
        Some(h) => {
            let name = node.op().name();
            let token = h.start(&OpStart {
                name: &name,
                phase: Phase::Backward,
                sequence_nr: Some(origin.seq),
            });
            let r = f();
            match &r {
                Ok(g) => h.end(token, Ok(g))?,
                Err(e) => h.end(token, Err(e))?,
            }
            r?
        }
    };
    if bits & ANOMALY != 0 {
        crate::autograd::anomaly::check_outputs(node, &grads)?;
    }
    Ok(grads)
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
        // a backward node carries its forward op's sequence number
        assert!(seen.iter().any(|(name, ph, seq)| name == "MulBackward0"
            && *ph == Phase::Backward
            && seq.is_some()));
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
