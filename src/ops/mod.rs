//! Every differentiable op: its forward and, right next to it, its backward.
//!
//! Vocabulary (after the header of PyTorch's derivatives.yaml):
//! - `grad` / `g`: the gradient of the loss w.r.t. an op's output, same shape as it.
//! - saved values: tensors a backward formula needs, stored as [`SavedTensor`]s on the
//!   node. Prefer saving the output when the derivative is cheaper from it (exp, tanh,
//!   sigmoid, sqrt); unpacking checks the version counter and that the graph was not freed.
//! - `needs_input_grad(i)`: input `i` has an edge; formulas skip work for inputs that
//!   don't need a gradient.
//! - non-differentiable inputs (indices, masks, Python numbers) get no edge.
//! - views (transpose, slicing, expand, view...) share storage with their input and
//!   remember it as their `base`; in-place ops on them rebase the base's history
//!   (`inplace.rs`, `rebase.rs`).
//! - Backward formulas are written with these same ops, never raw kernels, so that with
//!   `create_graph=True` they are recorded and can be differentiated again.
//! - Every broadcasting op reduces its gradients to the input shape with [`sum_to`].
//!
//! Every op, forward and backward, passes through [`apply`]: the one place where the
//! profiler and anomaly mode will hook in. Adding an op = its kernel in `backend/cpu`, a
//! forward fn + a `Backward` struct here, a line in `backward_ops!`, a method in
//! `src/py/`, and an entry in `tests/op_db.py`.

pub mod advanced_indexing;
pub mod arith;
pub mod autograd_api;
pub mod binary;
pub mod concat;
pub mod copy;
pub mod creation;
pub mod decomp;
pub mod division;
pub mod elementwise;
pub mod fused;
pub mod householder;
pub mod indexing;
pub mod inplace;
pub mod jvp;
pub mod linalg;
pub mod matmul;
pub mod minmax;
pub mod nn;
pub mod pow;
pub mod random;
pub mod rebase;
pub mod reduce;
pub mod reorder;
pub mod scan;
pub mod scatter;
pub mod select;
pub mod selection;
pub mod shape;
pub mod softmax;
pub mod sort;
pub mod special;
pub mod spectral;
pub mod subscript;
pub(crate) mod table;
pub mod triangle;
pub mod unary;
// (helper-41: distances, searches)
pub mod blockdiag;
pub mod counting;
pub mod distance;
pub mod search;
pub mod strided;
// (helper-45) parameterized activations, mvlgamma, angle, prelu
pub mod activation;

pub use activation::{Act, activation, activation_, prelu_kernel};
pub use advanced_indexing::*;
pub use arith::{ArithBackward, ArithOp};
pub use binary::*;
pub use concat::*;
pub use copy::*;
pub use creation::*;
pub use decomp::*;
pub use division::*;
pub use elementwise::*;
pub use fused::*;
pub use householder::*;
pub use indexing::*;
pub use inplace::*;
pub use linalg::*;
pub use matmul::*;
pub use minmax::*;
pub use nn::*;
pub use pow::*;
pub use rebase::*;
pub use reduce::*;
pub use reorder::*;
pub use scan::*;
pub use scatter::*;
pub use select::*;
pub use selection::{SelectBackward, SelectOp};
pub use shape::*;
pub use softmax::*;
pub use sort::*;
pub use special::*;
pub use spectral::*;
pub use strided::{AsStridedViewBackward, UnfoldBackward0, as_strided_view, unfold};
pub use subscript::*;
pub use triangle::*;
pub use unary::*;
// (helper-41)
pub use blockdiag::*;
pub use counting::*;
pub use distance::*;
pub use search::*;

use crate::Result;
use crate::autograd::function::Grads;
use crate::autograd::grad_mode::is_grad_enabled;
use crate::autograd::graph::{Edge, Node, NodeRef, OutputMeta, SavedTensor};
use crate::storage::Buffer;
use crate::tensor::Tensor;
use smallvec::SmallVec;

crate::backward_ops! {
    // arith.rs (the arithmetic table: elementwise.rs, division.rs, pow.rs)
    ArithBackward,
    // selection.rs (the selection table: select.rs's where and clamp)
    SelectBackward,
    // select.rs
    MaskedGradBackward,
    // copy.rs
    ToCopyBackward0, CloneBackward0,
    // unary.rs, binary.rs (the op tables)
    UnaryBackward, InplaceNotImplemented, PolygammaBackward, RoundDecimalsBackward, TanhBackwardBackward0, BinaryFnBackward,
    // reduce.rs
    SumBackward0, SumBackward1, NansumBackward0, MeanBackward0, MeanBackward1, ProdBackward0, ProdBackward1, LogsumexpBackward0,
    VarBackward0, StdBackward0, NormBackward0,
    // minmax.rs
    MaxBackward0, AmaxBackward0,
    // linalg.rs
    LinalgCrossBackward0, DistBackward0, AminmaxBackward0,
    LinalgEighBackward0, LinalgSvdBackward0, LinalgQrBackward0, LinalgPinvBackward0,
    // decomp.rs
    LinalgLuFactorExBackward0, LinalgDetBackward0, LinalgSlogdetBackward0, LinalgInvExBackward0,
    LinalgSolveExBackward0, LinalgLuSolveBackward0, LinalgSolveTriangularBackward0, LinalgCholeskyExBackward0,
    CholeskySolveBackward0, CholeskyInverseBackward0, LinalgMatrixExpBackward0, LinalgLuBackward0, LuUnpackBackward0,
    // scatter.rs
    ScatterFamilyBackward, MaskedSelectBackward0, ScatterReduceBackward0,
    // sort.rs
    SelectAlongBackward, MedianBackward0,
    // softmax.rs
    SoftmaxBackward0, LogSoftmaxBackward0,
    // shape.rs
    ViewBackward, ExpandBackward0, PermuteBackward0, TransposeBackward0, SliceBackward0, SelectBackward0, SplitBackward,
    SqueezeBackward, UnsqueezeBackward0, AsStridedBackward0, AsStridedScatterBackward0,
    // concat.rs
    CatBackward0, StackBackward0, RepeatBackward0,
    // matmul.rs
    MmBackward0, AddmmBackward0, BmmBackward0, DotBackward0,
    // indexing.rs
    GatherBackward0, ScatterAddBackward0, IndexSelectBackward0, IndexAddBackward0, MaskedFillBackward0,
    MaskedFillBackward1,
    // advanced_indexing.rs
    IndexBackward0, IndexPutBackward0,
    // inplace.rs
    CopyBackwards, FillBackward,
    // rebase.rs
    CopySlices,
    // nn.rs
    MseLossBackward0, NllLossBackward0,
    // special.rs
    DelayedError, UndefinedGradBackward,
    // reorder.rs
    FlipBackward0, RollBackward0, Rot90Backward0,
    // triangle.rs
    TriangleBackward, DiagonalBackward, DiagEmbedBackward0, TraceBackward0,
    // scan.rs
    CumsumBackward0, CumprodBackward0, CumExtremeBackward0, LogcumsumexpBackward0,
    // fused.rs
    AddcBackward, LerpBackward, AddrBackward0, NanToNumBackward0,
    // distance.rs
    CdistBackward0, EuclideanDistBackward0, PdistBackward0, NormBackward1,
    // counting.rs
    UniqueBackward, BincountBackward,
    // blockdiag.rs
    BlockDiagBackward0,
    // strided.rs
    AsStridedViewBackward, UnfoldBackward0,
}

/// Who needs to record: grad mode is on and some input requires grad.
pub(crate) fn any_requires_grad(inputs: &[&Tensor]) -> bool {
    is_grad_enabled() && inputs.iter().any(|t| t.requires_grad())
}

/// An op on `inputs` records a node: for reverse mode, or for forward AD (an input has
/// a tangent it propagates).
pub(crate) fn records(inputs: &[&Tensor]) -> bool {
    any_requires_grad(inputs) || crate::autograd::forward_ad::any_dual(inputs)
}

/// Nothing this thread computes now is recorded, for either mode: grad mode is off and
/// no dual level propagates tangents. A backward formula may then use a fused kernel
/// where, else, it must run recorded ops.
pub(crate) fn unrecorded() -> bool {
    !is_grad_enabled() && !crate::autograd::forward_ad::propagates()
}

/// Whether an op's node must be able to compute `t`'s share: `t` requires grad, or has a
/// tangent forward AD propagates (what a node saves for input `i` is what the
/// derivatives of `i` read, whichever mode runs them).
pub(crate) fn wants_grad(t: &Tensor) -> bool {
    t.requires_grad() || crate::autograd::forward_ad::is_dual(t)
}

/// The edge a gradient for `t` flows along.
pub(crate) fn edge_of(t: &Tensor) -> Result<Option<Edge>> {
    if t.is_plain() {
        return Ok(None);
    }
    if t.is_view() {
        // a view whose base moved on gets its history re-derived first
        refresh_view(t)?;
    }
    Ok(edge_in(&t.lock(), t))
}

/// The edge of `t`, from its locked record `g`.
fn edge_in(g: &crate::tensor::Inner, t: &Tensor) -> Option<Edge> {
    match &g.grad_fn {
        Some(node) => Some(Edge::Node {
            node: node.clone(),
            input_nr: g.output_nr,
        }),
        None if g.requires_grad => Some(Edge::Leaf(g.leaf_target(t))),
        None => None,
    }
}

/// What an op reads from one differentiable input, under one lock: the data to compute
/// with, the version to save it at, and (grad mode on) where its gradient goes.
pub(crate) struct Read {
    pub snap: crate::tensor::Snapshot,
    pub version: u64,
    /// The op's node needs this input's share: grad mode is on and the input requires
    /// grad, or it has a tangent that forward AD propagates.
    pub requires_grad: bool,
    pub edge: Option<Edge>,
}

/// Reads `t` for an op (see [`Read`]): one lock where a snapshot, `requires_grad()`,
/// `edge_of` and a saved version would take four.
pub(crate) fn read_input(t: &Tensor) -> Result<Read> {
    let record = is_grad_enabled();
    if record && t.is_view() {
        // a view: its history may need re-deriving and its requires_grad may come from
        // its base (the general path)
        let edge = edge_of(t)?;
        let requires_grad = t.requires_grad() || crate::autograd::forward_ad::is_dual(t);
        let (snap, version) = t.snapshot_with_version();
        return Ok(Read {
            snap,
            version,
            requires_grad,
            edge,
        });
    }
    let g = t.lock();
    let snap = crate::tensor::Snapshot {
        storage: g.storage.clone(),
        layout: g.layout.clone(),
        dtype: g.dtype,
    };
    crate::replay::seen(&snap.storage);
    let version = g.version();
    if !record {
        drop(g);
        return Ok(Read {
            snap,
            version,
            requires_grad: crate::autograd::forward_ad::is_dual(t),
            edge: None,
        });
    }
    let edge = edge_in(&g, t);
    drop(g);
    Ok(Read {
        snap,
        version,
        requires_grad: edge.is_some() || crate::autograd::forward_ad::is_dual(t),
        edge,
    })
}

/// A kernel's result before it is a tensor: a fresh storage, its (contiguous) layout and
/// dtype. An op that records builds its node first and then the tensor with its history
/// in place (no lock taken on the output, no reference count moved).
pub(crate) struct Fresh {
    pub storage: std::sync::Arc<crate::storage::Storage>,
    pub layout: crate::layout::Layout,
    pub dtype: crate::dtype::DType,
}

impl Fresh {
    pub fn new(buf: Buffer, shape: &[usize]) -> Fresh {
        debug_assert_eq!(buf.len(), crate::shape::numel(shape));
        crate::replay::born(&buf);
        Fresh {
            dtype: buf.dtype(),
            storage: std::sync::Arc::new(crate::storage::Storage::new(buf)),
            layout: crate::layout::Layout::contiguous(shape),
        }
    }
    /// This output saved for backward: by its storage alone (its shape is the node's
    /// output metadata), with no alias record.
    pub fn saved(&self) -> SavedTensor {
        SavedTensor::fresh_output(self.storage.clone(), 0)
    }
    pub fn into_tensor(self) -> Tensor {
        Tensor::from_storage(self.storage, self.layout, self.dtype)
    }
}

/// `apply` for inputs already read with [`read_input`] and a forward that returns a
/// [`Fresh`] result: records when `record` (some input requires grad), with `edges`
/// taken from the reads.
pub(crate) fn apply_fresh<B, F, G>(
    name: &'static str,
    inputs: &[&Tensor],
    record: bool,
    edges: impl FnOnce() -> SmallVec<[Option<Edge>; 2]>,
    forward: F,
    backward: G,
) -> Result<Tensor>
where
    B: Into<BackwardOp>,
    F: FnOnce() -> Result<Fresh>,
    G: FnOnce(&Fresh) -> (B, SmallVec<[SavedTensor; 2]>),
{
    // (the op's range covers its recording, as torch's does: the node made here carries
    // the op's sequence number)
    crate::dispatch::forward(
        name,
        || shapes_of(inputs),
        || {
            let out = forward()?;
            if !record {
                return Ok(out.into_tensor());
            }
            let (op, saved) = backward(&out);
            let meta = OutputMeta {
                shape: crate::shape::copy(&out.layout.shape),
                dtype: out.dtype,
                device: out.storage.device().into(),
            };
            let any_saved = !saved.is_empty();
            let mut node = Node::new(op.into(), edges(), smallvec::smallvec![meta]);
            node.saved = saved;
            let node = NodeRef::new(node)?;
            let dual = crate::autograd::forward_ad::any_dual(inputs);
            // (forward AD alone: no edges, the node is dropped once the tangent is made,
            // and its saved tensors are not packed, as torch makes no node then)
            let reverse = !dual || node.lock().next.iter().any(Option::is_some);
            if reverse && any_saved && crate::autograd::saved_hooks::maybe_active() {
                crate::autograd::saved_hooks::register(&node);
            }
            if !dual {
                return Ok(Tensor::with_history(
                    out.storage,
                    out.layout,
                    out.dtype,
                    node,
                ));
            }
            // forward AD: the node gives the output's tangent, and becomes its history
            // only if some input has an edge (else it was recorded for forward AD alone)
            let out = if reverse {
                Tensor::with_history(out.storage, out.layout, out.dtype, node.clone())
            } else {
                out.into_tensor()
            };
            jvp::propagate(&node, inputs, &[&out])?;
            Ok(out)
        },
    )
}

/// The one dispatch point. Runs `forward`; if grad mode is on and an input requires
/// grad, calls `backward` to build the node (op + saved tensors) and attaches it to the
/// output. Inputs listed in `inputs` are the differentiable ones, in edge order.
pub(crate) fn apply<B, F, G>(
    name: &'static str,
    inputs: &[&Tensor],
    forward: F,
    backward: G,
) -> Result<Tensor>
where
    B: Into<BackwardOp>,
    F: FnOnce() -> Result<Tensor>,
    G: FnOnce(&Tensor) -> (B, SmallVec<[SavedTensor; 2]>),
{
    let edges = || inputs.iter().map(|t| edge_of(t)).collect();
    let tangents = || inputs.iter().map(|t| t.tangent()).collect();
    recorded(
        name,
        || shapes_of(inputs),
        inputs,
        edges,
        tangents,
        forward,
        backward,
    )
}

/// [`apply`] for an op whose inputs may be absent (clamp's None bound): an absent input
/// has the edge `(None, 0)` (and, for a profiler, the shape `[]`).
pub(crate) fn apply_optional<B, F, G>(
    name: &'static str,
    inputs: &[Option<&Tensor>],
    forward: F,
    backward: G,
) -> Result<Tensor>
where
    B: Into<BackwardOp>,
    F: FnOnce() -> Result<Tensor>,
    G: FnOnce(&Tensor) -> (B, SmallVec<[SavedTensor; 2]>),
{
    let present: SmallVec<[&Tensor; 3]> = inputs.iter().flatten().copied().collect();
    let shapes = || {
        let shape = |t: &Option<&Tensor>| {
            t.map_or_else(
                || Box::new([]) as Box<[usize]>,
                |t| t.shape().to_vec().into(),
            )
        };
        inputs.iter().map(shape).collect()
    };
    let edges = || {
        let edge = |t: &Option<&Tensor>| Ok(t.map(edge_of).transpose()?.flatten());
        inputs.iter().map(edge).collect()
    };
    let tangents = || inputs.iter().map(|t| t.and_then(Tensor::tangent)).collect();
    recorded(name, shapes, &present, edges, tangents, forward, backward)
}

/// What [`apply`] does, its inputs' shapes (for a profiler), edges and tangents (one per
/// input slot, absent inputs included) given by `shapes`, `edges` and `tangents`,
/// `present`: the inputs there are.
fn recorded<B, F, G>(
    name: &'static str,
    shapes: impl Fn() -> Vec<Box<[usize]>>,
    present: &[&Tensor],
    edges: impl FnOnce() -> Result<SmallVec<[Option<Edge>; 2]>>,
    tangents: impl FnOnce() -> Grads,
    forward: F,
    backward: G,
) -> Result<Tensor>
where
    B: Into<BackwardOp>,
    F: FnOnce() -> Result<Tensor>,
    G: FnOnce(&Tensor) -> (B, SmallVec<[SavedTensor; 2]>),
{
    crate::dispatch::forward(name, shapes, || {
        let out = forward()?;
        own_result(&out, present);
        let reverse = any_requires_grad(present);
        if reverse || crate::autograd::forward_ad::any_dual(present) {
            let (op, saved) = backward(&out);
            let node = record_edges(op.into(), edges()?, saved, &[&out], reverse)?;
            if crate::autograd::forward_ad::any_dual(present) {
                jvp::propagate_slots(&node, tangents(), present, &[&out])?;
            }
        }
        Ok(out)
    })
}

/// [`apply`] for an op with several outputs that all get one node (split and unbind's
/// views): the node has an output per tensor `forward` returns, in order. Nothing is
/// recorded for an op that returns no tensor.
pub(crate) fn apply_multi<B, F, G>(
    name: &'static str,
    inputs: &[&Tensor],
    forward: F,
    backward: G,
) -> Result<Vec<Tensor>>
where
    B: Into<BackwardOp>,
    F: FnOnce() -> Result<Vec<Tensor>>,
    G: FnOnce(&[Tensor]) -> (B, SmallVec<[SavedTensor; 2]>),
{
    crate::dispatch::forward(
        name,
        || shapes_of(inputs),
        || {
            let outs = forward()?;
            let reverse = any_requires_grad(inputs);
            let dual = crate::autograd::forward_ad::any_dual(inputs);
            if outs.is_empty() || !(reverse || dual) {
                return Ok(outs);
            }
            let (op, saved) = backward(&outs);
            {
                let refs: SmallVec<[&Tensor; 4]> = outs.iter().collect();
                let edges = inputs.iter().map(|t| edge_of(t)).collect::<Result<_>>()?;
                let node = record_edges(op.into(), edges, saved, &refs, reverse)?;
                if dual {
                    let tangents = inputs.iter().map(|t| t.tangent()).collect();
                    jvp::propagate_slots(&node, tangents, inputs, &refs)?;
                }
            }
            Ok(outs)
        },
    )
}

/// A forward that built its result as a view of one of its own temporaries (a keepdim
/// reduction squeezed, a product reshaped) returns, to the user, a tensor of its own, as
/// torch's kernels do: it forgets that base, so that in-place ops on it neither rebase
/// a temporary nor count as writing through a view. A view op's result keeps its base,
/// which shares an input's storage.
fn own_result(out: &Tensor, inputs: &[&Tensor]) {
    if !out.is_view() {
        return;
    }
    let Some(base) = out.base() else { return };
    let storage = base.storage();
    if !inputs
        .iter()
        .any(|t| std::sync::Arc::ptr_eq(&t.storage(), &storage))
    {
        out.set_base(None);
    }
}

/// A composite op's result that is a view of the op's own temporary (`squeeze(mm(..))`):
/// see [`own_result`].
pub(crate) fn fresh_result(t: Tensor) -> Tensor {
    t.set_base(None);
    t
}

/// The dispatch point of ops that have no derivative (comparisons, logical ops, integer
/// casts, arg-reductions, factories): they run through the same forward path as `apply`.
pub(crate) fn apply_nondiff(
    name: &'static str,
    forward: impl FnOnce() -> Result<Tensor>,
) -> Result<Tensor> {
    crate::dispatch::forward(name, Vec::new, forward)
}

/// The shapes of an op's tensor inputs, for a profiler that records them.
fn shapes_of(inputs: &[&Tensor]) -> Vec<Box<[usize]>> {
    inputs.iter().map(|t| t.shape().to_vec().into()).collect()
}

/// The backend of the operands' device (torch's error if they are on two).
pub(crate) fn backend_for(
    operands: &[&crate::tensor::Snapshot],
) -> Result<&'static dyn crate::backend::Backend> {
    let bufs: SmallVec<[_; 3]> = operands.iter().map(|s| s.storage.read()).collect();
    let refs: SmallVec<[&Buffer; 3]> = bufs.iter().map(|b| &**b).collect();
    crate::backend::check_same_device(&refs)?;
    Ok(crate::backend::backend_of(refs[0]))
}

/// Records a node with `inputs` as edges and `outputs` as its outputs.
pub(crate) fn attach(
    op: BackwardOp,
    inputs: &[&Tensor],
    saved: SmallVec<[SavedTensor; 2]>,
    outputs: &[&Tensor],
) -> Result<NodeRef> {
    let next = inputs.iter().map(|t| edge_of(t)).collect::<Result<_>>()?;
    attach_edges(op, next, saved, outputs)
}

/// Records a node with the edges `next` (one per input slot) → `outputs`: attached to the
/// outputs when `reverse` (reverse mode needs it); else a node with no edges that serves
/// forward AD alone (it computes the outputs' tangents).
fn record_edges(
    op: BackwardOp,
    next: SmallVec<[Option<Edge>; 2]>,
    saved: SmallVec<[SavedTensor; 2]>,
    outputs: &[&Tensor],
    reverse: bool,
) -> Result<NodeRef> {
    if reverse {
        return attach_edges(op, next, saved, outputs);
    }
    let metas = outputs.iter().map(|o| {
        let (shape, dtype) = o.shape_and_dtype();
        OutputMeta {
            shape,
            dtype,
            device: o.device().into(),
        }
    });
    let mut node = Node::new(op, smallvec::smallvec![None; next.len()], metas.collect());
    node.saved = saved;
    NodeRef::new(node)
}

/// Records a node with the given edges and `outputs` as its outputs.
pub(crate) fn attach_edges(
    op: BackwardOp,
    next: SmallVec<[Option<Edge>; 2]>,
    saved: SmallVec<[SavedTensor; 2]>,
    outputs: &[&Tensor],
) -> Result<NodeRef> {
    let any_saved = !saved.is_empty();
    let node = attach_edges_unpacked(op, next, saved, outputs)?;
    if any_saved && crate::autograd::saved_hooks::maybe_active() {
        crate::autograd::saved_hooks::register(&node);
    }
    Ok(node)
}

#[inline(always)]
fn attach_edges_unpacked(
    op: BackwardOp,
    next: SmallVec<[Option<Edge>; 2]>,
    saved: SmallVec<[SavedTensor; 2]>,
    outputs: &[&Tensor],
) -> Result<NodeRef> {
    if let [o] = outputs {
        // One output (most ops): its metadata read and its history set under one lock.
        // Allocating the node takes only arena locks, never a tensor's, so holding the
        // output's lock meanwhile cannot deadlock.
        let mut g = o.lock();
        let meta = OutputMeta {
            shape: crate::shape::copy(&g.layout.shape),
            dtype: g.dtype,
            device: g.storage.device().into(),
        };
        let mut node = Node::new(op, next, smallvec::smallvec![meta]);
        node.saved = saved;
        let node = NodeRef::new(node)?;
        let old = g.grad_fn.replace(node.clone());
        g.output_nr = 0;
        drop(g);
        drop(old); // (may release a graph: not under the lock)
        return Ok(node);
    }
    let metas = outputs.iter().map(|o| {
        let (shape, dtype) = o.shape_and_dtype();
        OutputMeta {
            shape,
            dtype,
            device: o.device().into(),
        }
    });
    let mut node = Node::new(op, next, metas.collect());
    node.saved = saved;
    let node = NodeRef::new(node)?;
    for (i, o) in outputs.iter().enumerate() {
        o.set_history(node.clone(), i as u32);
    }
    Ok(node)
}

/// Shorthand for a list of saved tensors.
#[macro_export]
macro_rules! saved {
    ($($e:expr),* $(,)?) => { smallvec::smallvec![$($e),*] };
}

/// Sums `g` down to `shape` (the gradient of broadcasting `shape` up to `g`'s shape).
pub fn sum_to(g: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if g.has_shape(shape) {
        return Ok(g.clone());
    }
    let gs = g.shape();
    let lead = gs.len() - shape.len();
    let mut dims: Vec<i64> = (0..lead as i64).collect();
    for (i, &d) in shape.iter().enumerate() {
        if d == 1 && gs[lead + i] != 1 {
            dims.push((lead + i) as i64);
        }
    }
    let r = if dims.is_empty() {
        g.clone()
    } else {
        sum_dims(g, &dims, true)?
    };
    if lead > 0 || r.shape().as_slice() != shape {
        reshape(&r, &shape.iter().map(|&d| d as i64).collect::<Vec<_>>())
    } else {
        Ok(r)
    }
}

/// `[batch, *shape]`: a shape with a batched gradient's leading dim.
pub(crate) fn batched_shape(batch: usize, shape: &[usize]) -> Vec<usize> {
    let mut s = Vec::with_capacity(shape.len() + 1);
    s.push(batch);
    s.extend_from_slice(shape);
    s
}

/// [`sum_to`] for a batched gradient (`grad(is_grads_batched=True)`): `g` (`[B, *s]`)
/// summed down to `[B, *shape]`, the batch dim kept.
pub(crate) fn sum_to_batched(g: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let gs = g.shape();
    let target = batched_shape(gs[0], shape);
    if gs.as_slice() == target.as_slice() {
        return Ok(g.clone());
    }
    // the operand's shape padded with leading ones to g's rank, after the batch dim
    let mut padded = vec![gs[0]];
    padded.resize(gs.len() - shape.len(), 1);
    padded.extend_from_slice(shape);
    let r = sum_to(g, &padded)?;
    if r.shape().as_slice() == target.as_slice() {
        Ok(r)
    } else {
        reshape(&r, &target.iter().map(|&d| d as i64).collect::<Vec<_>>())
    }
}

/// The shapes of a broadcasting op's two tensor operands, for bringing their gradients
/// back to them. Kept (boxed) only when one differs from the output's: the gradient
/// arriving at the node has the output's shape, so the common case needs nothing, and
/// two shapes inline would make every node 80 bytes bigger.
#[derive(Clone)]
pub struct OperandShapes(Option<Box<[crate::shape::Shape; 2]>>);

impl OperandShapes {
    /// Both operands have the output's shape.
    pub const SAME: OperandShapes = OperandShapes(None);

    pub fn new(a: &Tensor, b: &Tensor, out: &Tensor) -> OperandShapes {
        let (sa, sb) = (a.shape(), b.shape());
        if out.has_shape(&sa) && out.has_shape(&sb) {
            Self::SAME
        } else {
            OperandShapes(Some(Box::new([sa, sb])))
        }
    }
    /// `g`, the gradient of the output, summed down to operand `i`'s shape.
    pub fn sum_to(&self, g: &Tensor, i: usize) -> Result<Tensor> {
        match &self.0 {
            None => Ok(g.clone()),
            Some(s) => sum_to(g, &s[i]),
        }
    }
    /// [`sum_to`](Self::sum_to) for a batched gradient (`[B, *output]` to `[B, *operand]`).
    pub fn sum_to_batched(&self, g: &Tensor, i: usize) -> Result<Tensor> {
        match &self.0 {
            None => Ok(g.clone()),
            Some(s) => sum_to_batched(g, &s[i]),
        }
    }
    /// Operand `i`'s shape (`g`: the gradient of the output).
    pub fn shape(&self, g: &Tensor, i: usize) -> crate::shape::Shape {
        match &self.0 {
            None => g.shape(),
            Some(s) => s[i].clone(),
        }
    }
}

/// div's `rounding_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundingMode {
    /// No rounding: true division (`rounding_mode=None`).
    True,
    /// Rounded toward zero (`"trunc"`).
    Trunc,
    /// Rounded down (`"floor"`).
    Floor,
}

impl RoundingMode {
    /// torch's `rounding_mode` argument: None, "trunc" or "floor"; torch's message for
    /// another value names `div`, for `div_` too.
    pub fn parse(mode: Option<&str>) -> Result<RoundingMode> {
        match mode {
            None => Ok(RoundingMode::True),
            Some("trunc") => Ok(RoundingMode::Trunc),
            Some("floor") => Ok(RoundingMode::Floor),
            Some(m) => Err(crate::Error::runtime(format!(
                "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{m}'"
            ))),
        }
    }
}

/// A fresh tensor for a kernel's output buffer.
/// [`new_tensor`] of a host buffer, moved to `device` (index results an op computed on
/// the host for a device input).
pub(crate) fn new_tensor_on(
    buf: Buffer,
    shape: &[usize],
    device: crate::device::Device,
) -> Result<Tensor> {
    Ok(match device {
        crate::device::Device::Cpu => new_tensor(buf, shape),
        crate::device::Device::Cuda(i) => {
            new_tensor(crate::backend::cuda::backend::upload(&buf, i)?, shape)
        }
    })
}

pub(crate) fn new_tensor(buf: Buffer, shape: &[usize]) -> Tensor {
    Tensor::from_buffer(buf, shape)
}
