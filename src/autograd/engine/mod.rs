//! The backward executor: discovers the graph below the roots, then runs each node when
//! its dependency count reaches zero, on the shared worker pool.
//!
//! Scheduling is work-first: a worker that finishes a node keeps one newly ready child
//! for itself and spawns the others, so a chain runs on one thread with no task
//! overhead while independent branches spread over the pool. A node with a single
//! dependency (a chain's link) receives its gradient together with the news that it is
//! ready; only nodes with several producers buffer theirs.
//!
//! Determinism: every gradient sent to a node is tagged with a key (the sender's
//! position in the discovery order, then the edge index) and a node sums its incoming
//! gradients in key order once all have arrived. The sum is therefore the same, bit for
//! bit, whatever the thread count or timing.
//!
//! Discovery (numbering, pruning, dependency counts) is `discover.rs`; storing into a
//! tensor's `.grad` (AccumulateGrad) is `accumulate.rs`.

use crate::autograd::function::Grads;
use crate::autograd::grad_mode::with_grad_mode;
use crate::autograd::graph::{Edge, NodeRef, SavedTensor, ctx_for};
use crate::ops::autograd_api as ops;
use crate::tensor::Tensor;
use crate::{Error, Result};
use accumulate::accumulate_retained;
use discover::{Chunked, IdMap, SlotMap};
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

mod accumulate;
mod discover;

pub use accumulate::accumulate_grad;

/// Options of one backward call (torch.autograd.backward / grad).
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    pub retain_graph: bool,
    pub create_graph: bool,
    /// backward(): accumulate into `.grad`; grad(): return the gradients instead.
    pub accumulate: bool,
    pub allow_unused: bool,
    /// Run with forward-mode AD off (`ops::jvp` differentiating a backward formula: the
    /// run computes a tangent and must not propagate tangents itself). Taken from the
    /// calling thread's switch at the start.
    pub forward_ad_off: bool,
}

#[derive(Clone, Copy)]
enum Target {
    Node { local: usize, input_nr: u32 },
    Leaf(usize),
}

/// An edge's target as a node's state keeps it: a [`Target`] or none, in 8 bytes (bit
/// 63: a leaf; else the node's local index in bits 32..63 and the input in bits 0..32).
#[derive(Clone, Copy)]
struct PackedTarget(u64);

impl PackedTarget {
    const NONE: PackedTarget = PackedTarget(u64::MAX);
    const LEAF: u64 = 1 << 63;

    fn new(t: Option<Target>) -> PackedTarget {
        match t {
            None => Self::NONE,
            Some(Target::Node { local, input_nr }) => {
                // (a call has fewer nodes than the arena's 2^26 slots)
                debug_assert!(local < 1 << 31);
                PackedTarget(((local as u64) << 32) | u64::from(input_nr))
            }
            Some(Target::Leaf(l)) => PackedTarget(Self::LEAF | l as u64),
        }
    }
    #[inline]
    fn get(self) -> Option<Target> {
        if self.0 == u64::MAX {
            None
        } else if self.0 & Self::LEAF != 0 {
            Some(Target::Leaf((self.0 & !Self::LEAF) as usize))
        } else {
            Some(Target::Node {
                local: (self.0 >> 32) as usize,
                input_nr: self.0 as u32,
            })
        }
    }
}

type Incoming = Mutex<SmallVec<[(u64, u32, Tensor); 1]>>;

/// A node that became ready, with its gradient when that was handed over directly (a
/// node with one dependency gets its one gradient this way: no buffer, no lock).
type ReadyNode = (usize, Option<(u32, Tensor)>);
type Ready = SmallVec<[ReadyNode; 4]>;

/// Per-node state of one backward call. Kept small (48 bytes): a 100,000-node graph has
/// 100,000.
struct NodeState {
    node: NodeRef,
    targets: SmallVec<[PackedTarget; 2]>,
    n_outputs: u32,
    deps: AtomicU32,
    /// Where gradients from several producers wait (an index into `Task::incoming`);
    /// `NO_BUFFER` for a node that gets its gradient directly or none at all.
    incoming: u32,
    /// Receives gradients (it is on a path to something wanted).
    needed: bool,
    /// Runs its backward (some child is needed).
    execute: bool,
    /// Some of its outputs are captured (grad() inputs): see `Task::captures`.
    captures: bool,
    /// Exactly one dependency (a chain's link): its gradient comes with the news that
    /// it is ready, not through `incoming`.
    direct: bool,
}

#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<NodeState>() == 48);

impl NodeState {
    fn targets(&self) -> impl Iterator<Item = Option<Target>> + '_ {
        self.targets.iter().map(|t| t.get())
    }
}

struct LeafState {
    tensor: Tensor,
    deps: AtomicU32,
    incoming: Incoming,
    needed: bool,
    accumulate: bool,
    capture: Option<usize>,
}

const NO_BUFFER: u32 = u32::MAX;

struct Task {
    nodes: Chunked<NodeState>,
    /// The gradient buffers of the nodes that have several producers.
    incoming: Vec<Incoming>,
    leaves: Vec<LeafState>,
    /// Node id -> local index, leaf tensor id -> local index (from discovery).
    node_index: SlotMap,
    leaf_index: IdMap<usize>,
    captured: Vec<Mutex<Option<Tensor>>>,
    /// (node local, output_nr, index into `captured`) for grad() inputs that are outputs
    /// of a node.
    captures: Vec<(usize, u32, usize)>,
    opts: Options,
    failed: AtomicBool,
    error: Mutex<Option<Error>>,
}

/// Runs backward from `outputs` seeded with `grad_outputs` (already validated by the
/// caller). `inputs`: for grad(), the tensors whose gradients are returned; for
/// backward(inputs=...), the tensors that accumulate (empty: every leaf).
pub fn run_backward(
    outputs: &[Tensor],
    grad_outputs: &[Tensor],
    inputs: &[Tensor],
    mut opts: Options,
) -> Result<Vec<Option<Tensor>>> {
    // torch runs the backward under the caller's thread-local state: in inference mode
    // nothing is recorded, whatever create_graph says.
    if crate::autograd::grad_mode::is_inference_mode_enabled() {
        opts.create_graph = false;
    }
    opts.forward_ad_off |= !crate::autograd::forward_ad::is_enabled();
    for t in outputs.iter().chain(inputs) {
        ops::refresh_view(t)?;
    }
    let mut roots = Vec::with_capacity(outputs.len());
    for (i, out) in outputs.iter().enumerate() {
        match out.grad_fn() {
            Some(node) => roots.push(Edge::Node {
                node,
                input_nr: out.output_nr(),
            }),
            None if out.requires_grad() => roots.push(Edge::Leaf(out.clone())),
            None => return Err(Error::NoGradFn { index: i }),
        }
    }
    // A root gradient of another float dtype is cast to its output's (torch's engine
    // casts every gradient to the dtype its edge expects).
    let mut cast: Vec<Tensor> = Vec::new();
    let grad_outputs: &[Tensor] = if outputs
        .iter()
        .zip(grad_outputs)
        .any(|(o, g)| o.dtype() != g.dtype() && o.dtype().is_float() && g.dtype().is_float())
    {
        for (o, g) in outputs.iter().zip(grad_outputs) {
            cast.push(
                if o.dtype() != g.dtype() && o.dtype().is_float() && g.dtype().is_float() {
                    with_grad_mode(opts.create_graph, || ops::to_dtype(g, o.dtype()))?
                } else {
                    g.clone()
                },
            );
        }
        &cast
    } else {
        grad_outputs
    };
    let task = Task::discover(&roots, inputs, opts)?;
    let pool = crate::runtime::pool()?;
    let seed = |ready: &mut Ready| {
        for (i, (edge, g)) in roots.iter().zip(grad_outputs).enumerate() {
            let target = task.resolve(edge);
            if let Err(e) = task.send(target, i as u64, Some(g.clone()), ready) {
                task.fail(e);
            }
        }
    };
    if rayon::current_thread_index().is_some() {
        // reentrant backward (from a node running on a worker): work-first on the pool
        pool.scope(|s| {
            let mut ready = Ready::new();
            seed(&mut ready);
            for r in ready {
                let t = &task;
                s.spawn(move |s| t.work(s, r, false));
            }
        });
    } else {
        // The calling thread runs the graph itself while it is a chain (no hand-off to
        // a worker, and gradients are freed by the thread that made them, as torch's CPU
        // engine does); at the first node with two ready children everything left goes
        // to the pool and this thread only waits, so no more than the pool's threads are
        // ever busy.
        crate::runtime::blocking(|| {
            pool.in_place_scope(|s| {
                let mut ready = Ready::new();
                seed(&mut ready);
                let t = &task;
                if ready.len() == 1 {
                    if let Some(r) = ready.pop() {
                        t.work(s, r, true);
                    }
                } else {
                    for r in ready {
                        s.spawn(move |s| t.work(s, r, false));
                    }
                }
            })
        });
    }
    if let Some(e) = task.error.lock().take() {
        return Err(e);
    }
    let mut result = Vec::with_capacity(inputs.len());
    for (i, slot) in task.captured.iter().enumerate() {
        let g = slot.lock().take();
        if opts.accumulate {
            // backward(inputs=[non-leaf]) accumulates into the non-leaf's .grad
            if let Some(g) = &g
                && !inputs[i].is_leaf()
            {
                accumulate_grad(&inputs[i], g.clone(), opts.create_graph)?;
            }
        } else if g.is_none() && !opts.allow_unused {
            return Err(Error::runtime(format!(
                "The differentiated Tensor at index {i} appears to not have been used in the graph. Set \
                 allow_unused=True if this is the desired behavior."
            )));
        }
        result.push(g);
    }
    Ok(result)
}

impl Task {
    /// The local target of a root edge (every root was discovered, so both maps hold it).
    fn resolve(&self, e: &Edge) -> Target {
        match e {
            Edge::Node { node, input_nr } => Target::Node {
                local: self.node_index.get(node).unwrap_or(0),
                input_nr: *input_nr,
            },
            Edge::Leaf(t) => Target::Leaf(self.leaf_index.get(&t.id()).copied().unwrap_or(0)),
        }
    }

    fn fail(&self, e: Error) {
        let mut g = self.error.lock();
        if g.is_none() {
            *g = Some(e);
        }
        self.failed.store(true, Ordering::Release);
    }

    /// Delivers one gradient (or the news that none is coming) to a target.
    fn send(
        &self,
        target: Target,
        key: u64,
        grad: Option<Tensor>,
        ready: &mut Ready,
    ) -> Result<()> {
        match target {
            Target::Node { local, input_nr } => {
                let n = &self.nodes[local];
                if !n.needed {
                    return Ok(());
                }
                if n.direct {
                    // its one dependency: the gradient goes along with the news
                    ready.push((local, grad.map(|g| (input_nr, g))));
                    return Ok(());
                }
                if let Some(g) = grad {
                    let buf = self.incoming.get(n.incoming as usize).ok_or_else(|| {
                        Error::Internal("a gradient for a node with no buffer".into())
                    })?;
                    buf.lock().push((key, input_nr, g));
                }
                if n.deps.fetch_sub(1, Ordering::AcqRel) == 1 {
                    ready.push((local, None));
                }
            }
            Target::Leaf(l) => {
                let leaf = &self.leaves[l];
                if !leaf.needed {
                    return Ok(());
                }
                if let Some(g) = grad {
                    leaf.incoming.lock().push((key, 0, g));
                }
                if leaf.deps.fetch_sub(1, Ordering::AcqRel) == 1 {
                    self.finish_leaf(leaf)?;
                }
            }
        }
        Ok(())
    }

    /// Worker loop: run `local`, keep one ready child, spawn the rest. `inline` (the
    /// calling thread): keep going only while exactly one child is ready; else spawn
    /// them all and return.
    fn work<'s>(&'s self, scope: &rayon::Scope<'s>, mut node: ReadyNode, inline: bool) {
        loop {
            if self.failed.load(Ordering::Acquire) {
                return;
            }
            let mut ready = Ready::new();
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.run_node(node, &mut ready)
            }));
            match result {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return self.fail(e),
                Err(p) => {
                    let msg = p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_string()))
                        .unwrap_or_else(|| "panic in backward".into());
                    return self.fail(Error::Internal(msg));
                }
            }
            if inline && ready.len() > 1 {
                for other in ready {
                    scope.spawn(move |s| self.work(s, other, false));
                }
                return;
            }
            let mut it = ready.into_iter();
            match it.next() {
                None => return,
                Some(first) => {
                    for other in it {
                        scope.spawn(move |s| self.work(s, other, false));
                    }
                    node = first;
                }
            }
        }
    }

    /// Runs one node with grad mode = create_graph for all of it (summing, hooks, the
    /// backward formula), so that a double-backward graph is recorded exactly then.
    /// (the engine's `evaluate_function`, a range of the dispatch point's)
    fn run_node(&self, node: ReadyNode, ready: &mut Ready) -> Result<()> {
        let n = &self.nodes[node.0].node;
        let run = || {
            with_grad_mode(self.opts.create_graph, || {
                self.run_node_in_mode(node, ready)
            })
        };
        crate::dispatch::evaluate(n, || {
            if self.opts.forward_ad_off {
                crate::autograd::forward_ad::with_enabled(false, run)
            } else {
                run()
            }
        })
    }

    fn run_node_in_mode(&self, (local, direct): ReadyNode, ready: &mut Ready) -> Result<()> {
        let st = &self.nodes[local];
        let mut grads: SmallVec<[Option<Tensor>; 1]> =
            smallvec::smallvec![None; st.n_outputs as usize];
        if st.direct {
            if let Some((slot, g)) = direct {
                grads[slot as usize] = Some(g);
            }
        } else {
            // gradients from several producers, summed in a fixed order (deterministic
            // whatever thread delivered them first)
            let mut incoming = match self.incoming.get(st.incoming as usize) {
                Some(buf) => std::mem::take(&mut *buf.lock()),
                None => SmallVec::new(),
            };
            incoming.sort_by_key(|x| x.0);
            for (_, slot, g) in incoming {
                let s = &mut grads[slot as usize];
                *s = Some(match s.take() {
                    None => g,
                    Some(acc) => ops::add(&acc, &g)?,
                });
            }
        }

        // Saved tensors are moved out (the graph not retained) or copied; the node is
        // marked released, as torch does after a node ran.
        let execute = st.execute;
        let retain = self.opts.retain_graph;
        // (with the output metadata when a saved output is kept by its storage alone)
        let take_saved = |n: &mut crate::autograd::graph::NodeData| {
            if !execute {
                return (SmallVec::new(), n.released, SmallVec::new());
            }
            let saved: SmallVec<[SavedTensor; 2]> = if retain {
                n.saved.clone()
            } else {
                std::mem::take(&mut n.saved)
            };
            let meta = if saved.iter().any(SavedTensor::needs_meta) {
                n.outputs.clone()
            } else {
                SmallVec::new()
            };
            let released = n.released;
            n.released = released || !retain;
            (saved, released, meta)
        };
        let (saved, released, meta) = {
            let mut n = st.node.lock();
            if n.pre_hooks().is_empty() && n.retains().is_empty() {
                take_saved(&mut n)
            } else {
                let (hooks, retains) = (n.pre_hooks().to_vec(), n.retains().to_vec());
                drop(n);
                // Tensor hooks of this node's outputs, then retain_grad.
                for (nr, _, hook) in &hooks {
                    if let Some(g) = &grads[*nr as usize]
                        && let Some(new) = hook(g)?
                    {
                        grads[*nr as usize] = Some(new);
                    }
                }
                for (nr, w) in &retains {
                    if let (Some(t), Some(g)) = (Tensor::upgrade(w), &grads[*nr as usize]) {
                        accumulate_retained(&t, g, self.opts.create_graph)?;
                    }
                }
                take_saved(&mut st.node.lock())
            }
        };
        if st.captures {
            for &(_, nr, idx) in self.captures.iter().filter(|c| c.0 == local) {
                if let Some(g) = &grads[nr as usize] {
                    *self.captured[idx].lock() = Some(g.clone());
                }
            }
        }
        if !execute {
            return Ok(());
        }

        let op = st.node.op();
        let outs: Grads = if grads.iter().all(Option::is_none) {
            smallvec::smallvec![None; st.targets.len()]
        } else {
            let needs: SmallVec<[bool; 4]> = st.targets().map(|t| t.is_some()).collect();
            let ctx = ctx_for(&st.node, &saved, released, needs, meta);
            let formula = op.as_backward();
            // (the one dispatch point of backward: a fused kernel runs inside its node)
            crate::dispatch::backward(&st.node, || {
                if formula.as_any().is_none() {
                    // a built-in formula (a custom Function checks what it unpacks itself)
                    ctx.check_saved_versions()?;
                }
                formula.apply(&ctx, &grads)
            })?
        };
        if outs.len() != st.targets.len() {
            return Err(Error::Internal(format!(
                "{} returned {} gradients for {} inputs",
                op.name(),
                outs.len(),
                st.targets.len()
            )));
        }
        for (i, (t, g)) in st.targets().zip(outs).enumerate() {
            if let Some(t) = t {
                self.send(t, ((local as u64 + 1) << 16) | i as u64, g, ready)?;
            }
        }
        Ok(())
    }

    fn finish_leaf(&self, leaf: &LeafState) -> Result<()> {
        let mut incoming = std::mem::take(&mut *leaf.incoming.lock());
        incoming.sort_by_key(|x| x.0);
        crate::dispatch::accumulate(|| self.accumulate_leaf(leaf, incoming))
    }

    fn accumulate_leaf(
        &self,
        leaf: &LeafState,
        incoming: SmallVec<[(u64, u32, Tensor); 1]>,
    ) -> Result<()> {
        with_grad_mode(self.opts.create_graph, || -> Result<()> {
            let mut acc: Option<Tensor> = None;
            for (_, _, g) in incoming {
                acc = Some(match acc {
                    None => g,
                    Some(a) => ops::add(&a, &g)?,
                });
            }
            let Some(mut g) = acc else { return Ok(()) };
            // Leaf hooks run before accumulation, as in torch.
            let hooks: Vec<_> = leaf
                .tensor
                .lock()
                .hooks()
                .iter()
                .map(|(_, h)| h.clone())
                .collect();
            for h in hooks {
                if let Some(new) = h(&g)? {
                    g = new;
                }
            }
            if let Some(i) = leaf.capture {
                *self.captured[i].lock() = Some(g);
            } else if leaf.accumulate {
                accumulate_grad(&leaf.tensor, g, self.opts.create_graph)?;
            }
            Ok(())
        })
    }
}
