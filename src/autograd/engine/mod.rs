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
use crate::autograd::graph::{Edge, HookGrads, NodeRef, SavedTensor, ctx_for};
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
    /// A leaf's first gradient is stolen whatever its layout (`enforce_grad_layout_policy
    /// (False)`), taken from the calling thread at the start.
    pub relax_grad_layout: bool,
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
    /// torch's graph task id (`_current_graph_task_id`).
    id: u64,
    /// No inputs were given and the backward that runs this one (if any) could checkpoint
    /// too (torch's `can_checkpoint`, read by `_is_checkpoint_valid`).
    can_checkpoint: bool,
    /// The caller's saved-tensor hooks, which nodes run under (on any thread), as torch
    /// propagates its thread-local state to the threads that run the graph.
    saved_hooks: Option<crate::autograd::saved_hooks::HookState>,
    /// The caller's node-creation hooks, which nodes made in backward fire too.
    node_hooks: Option<crate::autograd::node_hooks::HookState>,
    /// The step recording of the caller (`replay`), which nodes run under on any thread.
    replay: Option<std::sync::Arc<crate::replay::Session>>,
    /// Callbacks queued during the pass (`queue_callback`), run in order once it is done.
    callbacks: Mutex<Vec<Callback>>,
    /// `grad(is_grads_batched=True)`: every gradient has a leading batch dim of this many
    /// samples, and formulas run batched (`Backward::apply_batched`, else one call per
    /// sample).
    batch: Option<usize>,
    /// The nodes of a batched pass that ran once per sample (no batching rule).
    fallbacks: Mutex<Vec<String>>,
}

/// What a gradient is wanted of (grad()'s `inputs`, backward()'s `inputs`), or where
/// backward starts: a tensor, or an edge of the graph (`GradientEdge`: a node's output,
/// or a leaf's AccumulateGrad).
#[derive(Clone)]
pub enum Input {
    Tensor(Tensor),
    Edge(Edge),
}

static TASK_IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

thread_local! {
    /// The backward call whose nodes this thread runs now (null: none).
    static CURRENT: std::cell::Cell<*const Task> = const { std::cell::Cell::new(std::ptr::null()) };
}

/// Makes `task` this thread's current one until dropped (the previous one comes back:
/// backward calls nest, and a worker waiting in one may run another's nodes).
struct Current(*const Task);

impl Current {
    fn enter(task: &Task) -> Current {
        Current(CURRENT.with(|c| c.replace(task as *const Task)))
    }
}

impl Drop for Current {
    fn drop(&mut self) {
        let _ = CURRENT.try_with(|c| c.set(self.0));
    }
}

/// Runs `f` with the backward call this thread is running nodes of, if any.
fn with_current<R>(f: impl FnOnce(Option<&Task>) -> R) -> R {
    let p = CURRENT.with(std::cell::Cell::get);
    // SAFETY: the pointer is set only by `Current::enter` from a live `&Task` and reset
    // when that guard drops; every guard lives within the `run_backward` call that owns
    // the task (in `run_backward` itself or in `work`, which runs inside its scope), so a
    // non-null pointer names a task that is alive for this call.
    f(unsafe { p.as_ref() })
}

/// torch's `_current_graph_task_id`: the id of the backward call this thread is running
/// (hooks, custom backwards), or -1.
pub fn current_task_id() -> i64 {
    with_current(|t| t.map_or(-1, |t| t.id as i64))
}

/// torch's `is_checkpoint_valid`: false inside a backward given `inputs` (grad(),
/// backward(inputs=...)) or nested in one.
pub fn is_checkpoint_valid() -> bool {
    with_current(|t| t.is_none_or(|t| t.can_checkpoint))
}

/// torch's `_will_engine_execute_node` for a graph node: whether the current backward
/// runs it (it is in the graph and needed).
pub fn will_execute_node(node: &NodeRef) -> Result<bool> {
    with_current(|t| {
        let t = t.ok_or_else(not_in_backward)?;
        Ok(t.node_index.get(node).is_some_and(|l| t.nodes[l].needed))
    })
}

/// `_will_engine_execute_node` for the AccumulateGrad node of `leaf`.
pub fn will_execute_leaf(leaf: &Tensor) -> Result<bool> {
    with_current(|t| {
        let t = t.ok_or_else(not_in_backward)?;
        match t.leaf_index.get(&leaf.id()) {
            Some(&l) if t.leaves[l].needed => {
                if t.leaves[l].capture.is_some() {
                    return Err(Error::runtime(
                        "A leaf node was passed to _will_engine_execute_node but we are currently running \
                         autograd.grad(). This is currently not supported.",
                    ));
                }
                Ok(true)
            }
            _ => Ok(false),
        }
    })
}

fn not_in_backward() -> Error {
    Error::runtime("_get_should_execute_nodes should only be called during the backward pass")
}

/// A callback queued with [`queue_callback`].
pub type Callback = std::sync::Arc<dyn Fn() -> Result<()> + Send + Sync>;

/// torch's `queue_callback` (`Variable._execution_engine.queue_callback`): `cb` runs on
/// the calling thread once the backward pass this thread is running nodes of has run
/// every node, in queueing order (a callback may queue more), with grad mode =
/// `create_graph`; not if the pass fails.
pub fn queue_callback(cb: Callback) -> Result<()> {
    with_current(|t| match t {
        Some(t) => {
            t.callbacks.lock().push(cb);
            Ok(())
        }
        None => Err(Error::runtime(
            "Final callbacks can only be installed during backward pass.",
        )),
    })
}

thread_local! {
    /// torch's `set_multithreading_enabled` (thread-local; on by default).
    static MULTITHREADING: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// `_set_multithreading_enabled`: off, this thread's backward calls run every node on the
/// thread itself (the pool is not used to run nodes; kernels still split). Returns the
/// previous setting.
pub fn set_multithreading_enabled(on: bool) -> bool {
    MULTITHREADING.with(|m| m.replace(on))
}

/// `_is_multithreading_enabled`.
pub fn is_multithreading_enabled() -> bool {
    MULTITHREADING.with(std::cell::Cell::get)
}

/// Runs backward from `outputs` seeded with `grad_outputs` (already validated by the
/// caller). `inputs`: for grad(), the tensors whose gradients are returned; for
/// backward(inputs=...), the tensors that accumulate (empty: every leaf).
pub fn run_backward(
    outputs: &[Tensor],
    grad_outputs: &[Tensor],
    inputs: &[Tensor],
    opts: Options,
) -> Result<Vec<Option<Tensor>>> {
    let outputs: Vec<Input> = outputs.iter().cloned().map(Input::Tensor).collect();
    let inputs: Vec<Input> = inputs.iter().cloned().map(Input::Tensor).collect();
    run_backward_from(&outputs, grad_outputs, &inputs, opts)
}

/// [`run_backward`] where outputs and inputs may also be edges of the graph
/// (`GradientEdge`s).
pub fn run_backward_from(
    outputs: &[Input],
    grad_outputs: &[Tensor],
    inputs: &[Input],
    opts: Options,
) -> Result<Vec<Option<Tensor>>> {
    Ok(run(outputs, grad_outputs, inputs, opts, None)?.0)
}

/// `grad(is_grads_batched=True)`: [`run_backward_from`] where every grad_output has a
/// leading batch dim of `batch` samples (the rest its output's shape); every gradient
/// the formulas compute keeps it, and so do the results. The same values as one
/// backward per sample: each node runs its batching rule (`Backward::apply_batched`)
/// or, without one, its formula once per sample. Returns the gradients and the names of
/// the nodes that ran once per sample (each once, for the binding's performance
/// warning). The graph's saved tensors are freed after the pass unless `retain_graph`,
/// as after an ordinary one.
pub fn run_backward_batched(
    outputs: &[Input],
    grad_outputs: &[Tensor],
    inputs: &[Input],
    opts: Options,
    batch: usize,
) -> Result<(Vec<Option<Tensor>>, Vec<String>)> {
    run(outputs, grad_outputs, inputs, opts, Some(batch))
}

/// One batched formula call: the node's batching rule, or its formula once per sample
/// with the samples' gradients stacked (an input that got no gradient from some samples
/// gets zeros there; none from any: none).
fn apply_batched(
    formula: &dyn crate::autograd::function::Backward,
    ctx: &crate::autograd::function::BackwardCtx<'_>,
    grads: &[Option<Tensor>],
    batch: usize,
    fallbacks: &Mutex<Vec<String>>,
) -> Result<Grads> {
    if let Some(r) = formula.apply_batched(ctx, grads, batch) {
        return r;
    }
    {
        let name = formula.name();
        let mut names = fallbacks.lock();
        if !names.iter().any(|n| *n == name) {
            names.push(name.into_owned());
        }
    }
    let mut per_sample: Vec<Grads> = Vec::with_capacity(batch);
    for b in 0..batch {
        let gb: SmallVec<[Option<Tensor>; 2]> = grads
            .iter()
            .map(|g| g.as_ref().map(|g| ops::select(g, 0, b as i64)).transpose())
            .collect::<Result<_>>()?;
        per_sample.push(formula.apply(ctx, &gb)?);
    }
    let n = per_sample.first().map_or(0, |r| r.len());
    let mut out = Grads::new();
    for i in 0..n {
        let like = per_sample.iter().find_map(|r| r[i].clone());
        out.push(match like {
            None => None,
            Some(like) => {
                let column = per_sample
                    .iter()
                    .map(|r| match &r[i] {
                        Some(g) => Ok(g.clone()),
                        None => ops::zeros_like(&like),
                    })
                    .collect::<Result<Vec<_>>>()?;
                Some(ops::stack(&column, 0)?)
            }
        });
    }
    Ok(out)
}

fn run(
    outputs: &[Input],
    grad_outputs: &[Tensor],
    inputs: &[Input],
    mut opts: Options,
    batch: Option<usize>,
) -> Result<(Vec<Option<Tensor>>, Vec<String>)> {
    // torch runs the backward under the caller's thread-local state: in inference mode
    // nothing is recorded, whatever create_graph says.
    if crate::autograd::grad_mode::is_inference_mode_enabled() {
        opts.create_graph = false;
    }
    opts.forward_ad_off |= !crate::autograd::forward_ad::is_enabled();
    opts.relax_grad_layout |= !crate::autograd::grad_mode::is_grad_layout_enforcement_enabled();
    for i in outputs.iter().chain(inputs) {
        if let Input::Tensor(t) = i {
            ops::refresh_view(t)?;
        }
    }
    let mut roots = Vec::with_capacity(outputs.len());
    for (i, out) in outputs.iter().enumerate() {
        let out = match out {
            Input::Edge(e) => {
                roots.push(e.clone());
                continue;
            }
            Input::Tensor(t) => t,
        };
        match out.grad_fn() {
            Some(node) => roots.push(Edge::Node {
                node,
                input_nr: out.output_nr(),
            }),
            None if out.requires_grad() => roots.push(Edge::Leaf(out.leaf_target())),
            None => return Err(Error::NoGradFn { index: i }),
        }
    }
    // A root gradient of another float dtype is cast to its output's (torch's engine
    // casts every gradient to the dtype its edge expects).
    let out_dtype = |o: &Input| match o {
        Input::Tensor(t) => Some(t.dtype()),
        Input::Edge(_) => None,
    };
    let needs_cast = |o: &Input, g: &Tensor| {
        out_dtype(o).is_some_and(|d| d != g.dtype() && d.is_float() && g.dtype().is_float())
    };
    let mut cast: Vec<Tensor> = Vec::new();
    let grad_outputs: &[Tensor] = if outputs
        .iter()
        .zip(grad_outputs)
        .any(|(o, g)| needs_cast(o, g))
    {
        for (o, g) in outputs.iter().zip(grad_outputs) {
            cast.push(match out_dtype(o) {
                Some(d) if needs_cast(o, g) => {
                    with_grad_mode(opts.create_graph, || ops::to_dtype(g, d))?
                }
                _ => g.clone(),
            });
        }
        &cast
    } else {
        grad_outputs
    };
    let mut task = Task::discover(&roots, inputs, opts)?;
    task.id = TASK_IDS.fetch_add(1, Ordering::Relaxed);
    task.can_checkpoint = inputs.is_empty() && is_checkpoint_valid();
    task.saved_hooks = crate::autograd::saved_hooks::capture();
    task.node_hooks = crate::autograd::node_hooks::capture();
    task.replay = crate::replay::capture();
    task.batch = batch;
    let pool = crate::runtime::pool()?;
    let seed = |ready: &mut Ready| {
        for (i, (edge, g)) in roots.iter().zip(grad_outputs).enumerate() {
            let target = task.resolve(edge);
            if let Err(e) = task.send(target, i as u64, Some(g.clone()), ready) {
                task.fail(e);
            }
        }
    };
    if !is_multithreading_enabled() {
        // every node on this thread, depth first
        let _current = Current::enter(&task);
        let mut ready = Ready::new();
        seed(&mut ready);
        while let Some(r) = ready.pop() {
            if !task.run_caught(r, &mut ready) {
                break;
            }
        }
    } else if rayon::current_thread_index().is_some() {
        // reentrant backward (from a node running on a worker): work-first on the pool
        pool.scope(|s| {
            let _current = Current::enter(&task);
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
                let _current = Current::enter(&task);
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
    task.run_callbacks()?;
    let mut result = Vec::with_capacity(inputs.len());
    for (i, slot) in task.captured.iter().enumerate() {
        let g = slot.lock().take();
        if opts.accumulate {
            // backward(inputs=[non-leaf]) accumulates into the non-leaf's .grad
            if let Some(g) = &g
                && let Input::Tensor(t) = &inputs[i]
                && !t.is_leaf()
            {
                accumulate_grad(t, g.clone(), &opts)?;
            }
        } else if g.is_none() && !opts.allow_unused {
            return Err(Error::runtime(format!(
                "The differentiated Tensor at index {i} appears to not have been used in the graph. Set \
                 allow_unused=True if this is the desired behavior."
            )));
        }
        result.push(g);
    }
    Ok((result, std::mem::take(&mut *task.fallbacks.lock())))
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

    /// The dtype of the gradient `target` takes (its node's output, or its leaf).
    fn input_dtype(&self, target: Target) -> crate::dtype::DType {
        match target {
            Target::Node { local, input_nr } => {
                let n = self.nodes[local].node.lock();
                n.outputs
                    .get(input_nr as usize)
                    .map_or(crate::dtype::DType::F32, |m| m.dtype)
            }
            Target::Leaf(l) => self.leaves[l].tensor.dtype(),
        }
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
        let _current = Current::enter(self);
        loop {
            let mut ready = Ready::new();
            if !self.run_caught(node, &mut ready) {
                return;
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

    /// Runs `node` (pushing the children it makes ready), unless the pass has failed; an
    /// error or a panic fails the pass. Returns whether the pass goes on.
    fn run_caught(&self, node: ReadyNode, ready: &mut Ready) -> bool {
        if self.failed.load(Ordering::Acquire) {
            return false;
        }
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run_node(node, ready)));
        let e = match result {
            Ok(Ok(())) => return true,
            Ok(Err(e)) => e,
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_string()))
                    .unwrap_or_else(|| "panic in backward".into());
                Error::Internal(msg)
            }
        };
        self.fail(e);
        false
    }

    /// Runs the callbacks queued during the pass, in order (those they queue too), on
    /// this thread, as the current pass and with grad mode = create_graph.
    fn run_callbacks(&self) -> Result<()> {
        let _current = Current::enter(self);
        let mut i = 0;
        loop {
            let cb = match self.callbacks.lock().get(i) {
                Some(cb) => cb.clone(),
                None => return Ok(()),
            };
            with_grad_mode(self.opts.create_graph, || cb())?;
            i += 1;
        }
    }

    /// Runs one node with grad mode = create_graph for all of it (summing, hooks, the
    /// backward formula), so that a double-backward graph is recorded exactly then.
    /// (the engine's `evaluate_function`, a range of the dispatch point's)
    fn run_node(&self, node: ReadyNode, ready: &mut Ready) -> Result<()> {
        let n = &self.nodes[node.0].node;
        let run = || {
            crate::dispatch::evaluate(n, || {
                with_grad_mode(self.opts.create_graph, || {
                    self.run_node_in_mode(node, ready)
                })
            })
        };
        // The forward-AD switch is the task's, set around each node: a worker waiting in
        // a nested backward (a tangent computed by transposition turns the switch off
        // on its thread) may steal this task's nodes meanwhile.
        let run = || {
            if crate::autograd::forward_ad::is_active() {
                crate::autograd::forward_ad::with_enabled(!self.opts.forward_ad_off, run)
            } else {
                run()
            }
        };
        let run = || match &self.saved_hooks {
            None => run(),
            Some(state) => crate::autograd::saved_hooks::with_state(state, run),
        };
        let run = || match &self.node_hooks {
            None => run(),
            Some(state) => crate::autograd::node_hooks::with_state(state, run),
        };
        crate::replay::with_session(&self.replay, run)
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
        // (a batched pass may run a formula once per sample: the saved tensors are copied
        // and the node released after it ran)
        let retain = self.opts.retain_graph || self.batch.is_some();
        // (with the output metadata when a saved output is kept by its storage alone, and
        // whether some were packed by saved-tensor hooks)
        let take_saved = |n: &mut crate::autograd::graph::NodeData| {
            if !execute {
                return (SmallVec::new(), n.released, SmallVec::new(), false);
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
            (saved, released, meta, n.packed && !released)
        };
        let (saved, released, meta, packed, node_hooks) = {
            let mut n = st.node.lock();
            if !n.has_engine_hooks() {
                let (saved, released, meta, packed) = take_saved(&mut n);
                (saved, released, meta, packed, None)
            } else {
                let (hooks, retains) = (n.pre_hooks().to_vec(), n.retains().to_vec());
                let node_hooks = n.node_hooks().map(|h| Box::new(h.clone()));
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
                let (saved, released, meta, packed) = take_saved(&mut st.node.lock());
                (saved, released, meta, packed, node_hooks)
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
        if node_hooks.is_some() || packed {
            let hooks = node_hooks.map(|h| *h).unwrap_or_default();
            return self
                .run_formula_hooked(local, grads, &saved, released, meta, packed, &hooks, ready);
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
                match self.batch {
                    None => formula.apply(&ctx, &grads),
                    Some(b) => apply_batched(formula, &ctx, &grads, b, &self.fallbacks),
                }
            })?
        };
        self.release_batched(local);
        self.check_count(local, &outs)?;
        // The incoming gradients and saved tensors go before the outputs move on: a leaf
        // may accumulate inside `send`, and steals its gradient only if nothing else holds
        // it, its storage or a base it views (a view's input, here, would).
        drop(grads);
        drop(saved);
        for (i, (t, g)) in st.targets().zip(outs).enumerate() {
            if let Some(t) = t {
                self.send(t, ((local as u64 + 1) << 16) | i as u64, g, ready)?;
            }
        }
        Ok(())
    }

    /// After a node ran in a batched pass that does not retain the graph: its saved
    /// tensors freed, as an ordinary pass frees them when it takes them.
    #[inline(always)]
    fn release_batched(&self, local: usize) {
        if self.batch.is_some() && !self.opts.retain_graph {
            let mut n = self.nodes[local].node.lock();
            n.saved = SmallVec::new();
            n.released = true;
        }
    }

    /// A formula returned one gradient per input of its op.
    #[inline(always)]
    fn check_count(&self, local: usize, outs: &Grads) -> Result<()> {
        let st = &self.nodes[local];
        if outs.len() != st.targets.len() {
            return Err(wrong_count(&st.node, outs.len(), st.targets.len()));
        }
        Ok(())
    }

    /// The rest of [`run_node_in_mode`](Self::run_node_in_mode) for a node with hooks of
    /// its own or saved tensors packed by saved-tensor hooks: its pre-hooks (after the
    /// tensor hooks and retain_grad, as torch's `call_function` runs them), the formula
    /// (packed tensors unpacked first, once each, as torch's generated formulas unpack
    /// every saved variable; a custom Function unpacks when its backward reads
    /// `saved_tensors`), the gradients cast to their inputs' dtypes where an unpack hook
    /// gave back another (torch's validate_outputs casts them), then its post-hooks.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn run_formula_hooked(
        &self,
        local: usize,
        mut grads: SmallVec<[Option<Tensor>; 1]>,
        saved: &[SavedTensor],
        released: bool,
        meta: SmallVec<[crate::autograd::graph::OutputMeta; 1]>,
        packed: bool,
        hooks: &crate::autograd::graph::NodeHooks,
        ready: &mut Ready,
    ) -> Result<()> {
        let st = &self.nodes[local];
        for (_, pre) in &hooks.pre {
            if let Some(new) = pre(&grads)? {
                grads = new.into_iter().collect();
            }
        }
        let op = st.node.op();
        let formula = op.as_backward();
        let builtin = formula.as_any().is_none();
        let unpack = packed && builtin;
        let mut outs: Grads = if grads.iter().all(Option::is_none) {
            smallvec::smallvec![None; st.targets.len()]
        } else {
            let needs: SmallVec<[bool; 4]> = st.targets().map(|t| t.is_some()).collect();
            crate::dispatch::backward(&st.node, || {
                let unpacked;
                let saved: &[SavedTensor] = if unpack {
                    unpacked = unpack_packed(&st.node, saved)?;
                    &unpacked
                } else {
                    saved
                };
                let ctx = ctx_for(&st.node, saved, released, needs, meta);
                if builtin {
                    ctx.check_saved_versions()?;
                }
                match self.batch {
                    None => formula.apply(&ctx, &grads),
                    Some(b) => apply_batched(formula, &ctx, &grads, b, &self.fallbacks),
                }
            })?
        };
        self.release_batched(local);
        self.check_count(local, &outs)?;
        if unpack {
            for (t, g) in st.targets().zip(outs.iter_mut()) {
                if let (Some(t), Some(grad)) = (t, g.as_ref()) {
                    let want = self.input_dtype(t);
                    if want != grad.dtype() {
                        *g = Some(ops::to_dtype(grad, want)?);
                    }
                }
            }
        }
        for (_, post) in &hooks.post {
            if let Some(new) = post(&outs, &grads)? {
                outs = new.into_iter().collect();
            }
        }
        drop(grads); // (as in `run_node_in_mode`)
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
        let run = || crate::dispatch::accumulate(|| self.accumulate_leaf(leaf, incoming));
        if crate::autograd::forward_ad::is_active() {
            crate::autograd::forward_ad::with_enabled(!self.opts.forward_ad_off, run)
        } else {
            run()
        }
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
                // the AccumulateGrad node's own hooks: pre-hooks, the accumulation, then
                // post-hooks with (grad_inputs=(), grad_outputs=(grad,))
                let acc_hooks = leaf
                    .tensor
                    .lock()
                    .cold()
                    .and_then(|c| c.acc_hooks.as_deref().cloned());
                let Some(acc_hooks) = acc_hooks else {
                    return accumulate_grad(&leaf.tensor, g, &self.opts);
                };
                let mut grads: HookGrads = smallvec::smallvec![Some(g)];
                for (_, pre) in &acc_hooks.pre {
                    if let Some(new) = pre(&grads)? {
                        grads = new;
                    }
                }
                if let Some(g) = grads.first().cloned().flatten() {
                    accumulate_grad(&leaf.tensor, g, &self.opts)?;
                }
                for (_, hook) in &acc_hooks.post_acc {
                    hook(&leaf.tensor)?;
                }
                for (_, post) in &acc_hooks.post {
                    post(&[], &grads)?;
                }
            }
            Ok(())
        })
    }
}

/// The saved tensors of a node about to run, those packed by hooks unpacked (each once).
fn unpack_packed(node: &NodeRef, saved: &[SavedTensor]) -> Result<SmallVec<[SavedTensor; 2]>> {
    saved
        .iter()
        .map(|s| {
            if s.is_packed() {
                let t = crate::autograd::function::unpack_saved(node, s, false)?;
                Ok(SavedTensor::unpacked(t))
            } else {
                Ok(s.clone())
            }
        })
        .collect()
}

#[cold]
fn wrong_count(node: &NodeRef, got: usize, inputs: usize) -> Error {
    Error::Internal(format!(
        "{} returned {got} gradients for {inputs} inputs",
        node.op().name()
    ))
}
