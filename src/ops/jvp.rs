//! Forward-mode AD of the ops (derivatives.yaml's `result:` formulas): when an input of an
//! op has a tangent (`autograd::forward_ad`), the op builds its node, as it would for
//! reverse mode, and the tangents of its outputs come from that node:
//! - from the node's own rule (`Backward::jvp`), where it has one. An elementwise op's
//!   rule is its backward formula itself ([`elementwise`]): its Jacobian is diagonal, so
//!   the formula that maps an output gradient to an input's maps that input's tangent to
//!   its share of the output's;
//! - else by transposition ([`by_transposition`]): the backward formula maps an output
//!   gradient `g` to `Jᵀg`, linearly, so `J·t = ∂⟨Jᵀg, t⟩/∂g`, one more backward pass
//!   through the recorded formula. Correct for every op whose backward formula is
//!   differentiable (all built-in ones), at the price of that pass.
//!
//! Tangents are computed with recorded ops, with forward AD switched off on the thread:
//! differentiable in reverse mode (reverse-over-forward), never tangents of tangents.

use super::{BackwardOp, add, mul, ones, sum, to_dtype};
use crate::Result;
use crate::autograd::engine::{Options, run_backward};
use crate::autograd::forward_ad::{save_output_tangent, set_tangent, with_enabled};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::autograd::grad_mode::{is_grad_enabled, with_grad_mode};
use crate::autograd::graph::{NodeRef, OutputMeta, SavedTensor, ctx_for};
use crate::tensor::Tensor;
use smallvec::SmallVec;

/// Sets the tangents of `outputs`, the outputs of `node`, whose inputs (in edge order)
/// are `inputs`: called by the op layer when [`crate::autograd::forward_ad::any_dual`].
pub(crate) fn propagate(node: &NodeRef, inputs: &[&Tensor], outputs: &[&Tensor]) -> Result<()> {
    let tangents: Grads = inputs.iter().map(|t| t.tangent()).collect();
    propagate_slots(node, tangents, inputs, outputs)
}

/// [`propagate`] with the inputs' tangents given, one per input slot of the node (an
/// absent optional input has none); `inputs`: the inputs there are.
pub(crate) fn propagate_slots(
    node: &NodeRef,
    tangents: Grads,
    inputs: &[&Tensor],
    outputs: &[&Tensor],
) -> Result<()> {
    if tangents.iter().all(Option::is_none) {
        return Ok(());
    }
    let (saved, meta, forward_only) = {
        let n = node.lock();
        let forward_only = n.next.iter().all(Option::is_none);
        (n.saved.clone(), n.outputs.clone(), forward_only)
    };
    let view = view_tangents(inputs, &tangents, outputs);
    let is_view = view.is_some();
    let outs = match view {
        Some(outs) => outs,
        None => with_enabled(false, || {
            output_tangents(node, &saved, &meta, forward_only, &tangents)
        })?,
    };
    for (nr, (o, t)) in outputs.iter().zip(outs).enumerate() {
        if let Some(t) = t
            && o.dtype().is_float()
        {
            // A tangent is written in place by in-place ops on its tensor: unless the op
            // is a view, it must not be an input's (a formula that passes its gradient
            // through returns it as is).
            let t = if !is_view && tangents.iter().flatten().any(|i| shares_storage(i, &t)) {
                with_enabled(false, || super::clone_tensor(&t))?
            } else {
                t
            };
            let nr = nr as u32;
            if saved.iter().any(|s| s.output_nr() == Some(nr)) {
                save_output_tangent(node, nr, t.clone());
            }
            set_tangent(o, Some(t));
        }
    }
    Ok(())
}

fn shares_storage(a: &Tensor, b: &Tensor) -> bool {
    std::sync::Arc::ptr_eq(&a.storage(), &b.storage())
}

/// The tangents of a view op's outputs (they share the one input's storage): the same
/// view of the input's tangent, when that tangent is laid out as the input is, so that
/// an in-place op on a view updates its base's tangent, as torch's views of dual tensors
/// do. `None`: not a view op, or a tangent laid out otherwise (then computed afresh).
fn view_tangents(
    inputs: &[&Tensor],
    tangents: &[Option<Tensor>],
    outputs: &[&Tensor],
) -> Option<Grads> {
    let ([input], [Some(tangent)]) = (inputs, tangents) else {
        return None;
    };
    if !outputs.iter().all(|o| shares_storage(o, input)) {
        return None;
    }
    if tangent.requires_grad() && crate::autograd::grad_mode::is_grad_enabled() {
        // (an alias would drop the tangent's history: reverse-over-forward needs the
        // recorded rule, at the price of the aliasing)
        return None;
    }
    let (il, tl) = (input.layout(), tangent.layout());
    if il.strides != tl.strides || il.offset != tl.offset || tangent.dtype() != input.dtype() {
        return None;
    }
    // (an as_strided view may read storage outside its input's region: the tangent's
    // storage must hold it too)
    let len = tangent.storage().len();
    if outputs.iter().any(|o| o.layout().storage_span().1 > len) {
        return None;
    }
    Some(
        outputs
            .iter()
            .map(|o| Some(tangent.alias_with_layout(o.layout())))
            .collect(),
    )
}

fn output_tangents(
    node: &NodeRef,
    saved: &[SavedTensor],
    meta: &[OutputMeta],
    forward_only: bool,
    tangents: &[Option<Tensor>],
) -> Result<Grads> {
    let needs = tangents.iter().map(Option::is_some).collect();
    let mut ctx = ctx_for(node, saved, false, needs, meta.into());
    ctx.forward_only = forward_only;
    let op = node.op();
    let formula = op.as_backward();
    let rule = if is_elementwise(op) {
        elementwise(formula, &ctx, tangents)
    } else {
        formula.jvp(&ctx, tangents)
    };
    match rule {
        Some(r) => r,
        None => by_transposition(formula, &ctx, tangents, meta),
    }
}

/// The nodes of elementwise ops (the op tables' rows and the other pointwise ops): their
/// rule is [`elementwise`], derived from their backward formula.
fn is_elementwise(op: &BackwardOp) -> bool {
    use BackwardOp as B;
    if let B::BinaryFnBackward(b) = op
        && b.underived()
    {
        return false; // (its own jvp: torch's error)
    }
    matches!(
        op,
        B::ArithBackward(_)
            | B::UnaryBackward(_)
            | B::BinaryFnBackward(_)
            | B::PolygammaBackward(_)
            | B::TanhBackwardBackward0(_)
            | B::SelectBackward(_)
            | B::ToCopyBackward0(_)
            | B::CloneBackward0(_)
            | B::AddcBackward(_)
            | B::LerpBackward(_)
            | B::NanToNumBackward0(_)
    )
}

/// The rule of an elementwise op (see the module docs): `Σᵢ formula(tᵢ)ᵢ`, each
/// input's tangent passed as the output gradient with only that input asked for. `None`
/// (transposition instead) when a tangent has not the output's shape (a broadcast
/// operand: the formula would sum its share down to the operand's shape).
pub(crate) fn elementwise<B: Backward + ?Sized>(
    formula: &B,
    ctx: &BackwardCtx<'_>,
    tangents: &[Option<Tensor>],
) -> Option<Result<Grads>> {
    let out = ctx.outputs.first()?;
    if tangents.iter().flatten().any(|t| !t.has_shape(&out.shape)) {
        return None;
    }
    let run = || -> Result<Grads> {
        let mut total: Option<Tensor> = None;
        for (i, t) in tangents.iter().enumerate() {
            let Some(t) = t else { continue };
            let needs = (0..tangents.len()).map(|j| j == i).collect();
            let mut one = ctx_for(
                ctx.node,
                ctx.saved,
                ctx.released,
                needs,
                ctx.outputs.clone(),
            );
            one.forward_only = ctx.forward_only;
            let Some(share) = formula
                .apply(&one, &[Some(t.clone())])?
                .into_iter()
                .nth(i)
                .flatten()
            else {
                continue;
            };
            let share = if share.dtype() == out.dtype {
                share
            } else {
                to_dtype(&share, out.dtype)?
            };
            total = Some(match total {
                None => share,
                Some(s) => add(&s, &share)?,
            });
        }
        Ok(smallvec::smallvec![total])
    };
    Some(run())
}

/// The tangents by transposition (see the module docs). Grad mode is on for the formula
/// and the extra pass (they must record), and the result keeps a graph only if the
/// caller's grad mode was on.
fn by_transposition(
    formula: &dyn Backward,
    ctx: &BackwardCtx<'_>,
    tangents: &[Option<Tensor>],
    meta: &[OutputMeta],
) -> Result<Grads> {
    let create_graph = is_grad_enabled();
    with_grad_mode(true, || {
        let mut gs: SmallVec<[Option<Tensor>; 1]> = SmallVec::new();
        for m in meta {
            gs.push(if m.dtype.is_float() {
                let g = super::zeros_on(&m.shape, m.dtype, m.device.into())?;
                g.set_requires_grad(true)?;
                Some(g)
            } else {
                None
            });
        }
        let grads_in = formula.apply(ctx, &gs)?;
        let mut total: Option<Tensor> = None;
        for (g, t) in grads_in.iter().zip(tangents) {
            if let (Some(g), Some(t)) = (g, t) {
                let term = sum(&mul(g, t)?, None, false)?;
                total = Some(match total {
                    None => term,
                    Some(s) => add(&s, &term)?,
                });
            }
        }
        let wrt: Vec<Tensor> = gs.iter().flatten().cloned().collect();
        let found = match total {
            Some(total) if total.requires_grad() && !wrt.is_empty() => {
                let seed = crate::device::with_default_device(total.device(), || {
                    ones(&[], total.dtype())
                })?;
                let opts = Options {
                    create_graph,
                    allow_unused: true,
                    ..Options::default()
                };
                run_backward(&[total], &[seed], &wrt, opts)?
            }
            // no input's share depends on g: the tangents are zero
            _ => vec![None; wrt.len()],
        };
        let mut found = found.into_iter();
        let mut outs = Grads::new();
        for (m, g) in meta.iter().zip(&gs) {
            outs.push(match g {
                None => None,
                Some(_) => Some(match found.next().flatten() {
                    Some(t) => t,
                    None => super::zeros_on(&m.shape, m.dtype, m.device.into())?,
                }),
            });
        }
        Ok(outs)
    })
}

/// `make_dual(primal, tangent, level)`: a view of `primal` whose tangent is `tangent`, kept
/// as it is when it has the view's strides, else copied to a contiguous tensor (torch
/// copies to the primal's layout; for the dense tensors the checks let through that is
/// the same but for a transposed primal).
pub fn make_dual(primal: &Tensor, tangent: &Tensor, level: i64) -> Result<Tensor> {
    crate::autograd::forward_ad::check_make_dual(primal, tangent, level)?;
    let dims: Vec<i64> = primal.shape().iter().map(|&d| d as i64).collect();
    let dual = with_enabled(false, || super::view(primal, &dims))?;
    let tangent = if tangent.layout().strides == dual.layout().strides {
        tangent.clone()
    } else {
        with_enabled(false, || super::contiguous(tangent))?
    };
    set_tangent(&dual, Some(tangent));
    Ok(dual)
}

/// `unpack_dual(t, level)`: a view of `t` without its tangent, and the tangent.
pub fn unpack_dual(t: &Tensor, level: i64) -> Result<(Tensor, Option<Tensor>)> {
    let tangent = crate::autograd::forward_ad::tangent(t, level)?;
    let dims: Vec<i64> = t.shape().iter().map(|&d| d as i64).collect();
    let primal = with_enabled(false, || super::view(t, &dims))?;
    Ok((primal, tangent))
}
