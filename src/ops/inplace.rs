//! In-place ops: each computes its out-of-place result, then `commit` writes it into
//! the destination's storage, bumps the version counter and rewrites history.
//!
//! Why compute-then-write: no kernel ever reads and writes the same storage, so a
//! storage lock is never taken twice by one op (`x.add_(x)` is safe) and in-place ops
//! reuse every out-of-place kernel and derivative unchanged. The price is one temporary
//! buffer per in-place op.
//!
//! History rules (torch's): an in-place op on a tensor with history makes the op's node
//! its new `grad_fn`; on a view of a tensor with history, the base gets a `CopySlices`
//! node (the gradient for the overwritten region goes to the op, the rest to the base's
//! old history) and the view is re-derived from the base (`rebase.rs`). Leaves that
//! require grad may only be modified under `no_grad`.

use super::elementwise::{Operand, grad0};
use super::rebase::{check_multi_output_view, rebase_view};
use super::{apply, new_tensor, sum_to};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::autograd::grad_mode::{is_grad_enabled, with_grad_mode};
use crate::backend as k;
use crate::dtype::{DType, Scalar};
use crate::layout::Layout;
use crate::ops::*;
use crate::shape::Shape;
use crate::tensor::Tensor;
use crate::{Error, Result, saved};
use std::borrow::Cow;
use std::sync::Arc;

pub(crate) fn check_writable(x: &Tensor) -> Result<()> {
    if !is_grad_enabled() {
        return Ok(());
    }
    if x.requires_grad() {
        check_multi_output_view(x)?;
    }
    // torch's check_inplace: a view that requires grad, of a leaf (whether or not the
    // leaf itself requires grad: `b.reshape(2, 2).requires_grad_()` is such a view)
    if x.requires_grad()
        && let Some(b) = x.base()
        && b.is_leaf()
    {
        return Err(Error::runtime(
            "a view of a leaf Variable that requires grad is being used in an in-place operation.",
        ));
    }
    if x.is_leaf() && x.requires_grad() {
        return Err(Error::runtime(
            "a leaf Variable that requires grad is being used in an in-place operation.",
        ));
    }
    Ok(())
}

/// `x` or `other` has a tangent to propagate (an in-place fast path would lose it).
fn any_dual_operand(x: &Tensor, other: Operand<'_>) -> bool {
    crate::autograd::forward_ad::any_dual(&[x])
        || tensor_of(other).is_some_and(crate::autograd::forward_ad::is_dual)
}

/// Forward AD of an in-place op: `x` takes the tangent of the value written into it
/// (in `x`'s dtype and shape), or a zero tangent if it had one and the value has none.
fn commit_tangent(x: &Tensor, result: &Tensor, xs: &crate::tensor::Snapshot) -> Result<()> {
    if !xs.dtype.is_float() {
        return Ok(());
    }
    let tangent = match result.tangent() {
        Some(t) => crate::autograd::forward_ad::with_enabled(false, || -> Result<Tensor> {
            let t = if t.dtype() == xs.dtype {
                t
            } else {
                to_dtype(&t, xs.dtype)?
            };
            if t.has_shape(&xs.layout.shape) {
                Ok(t)
            } else {
                contiguous(&expand(&t, &xs.layout.shape)?)
            }
        })?,
        None if x.has_tangent() => {
            super::zeros_on(&xs.layout.shape, xs.dtype, xs.storage.device())?
        }
        None => return Ok(()),
    };
    // x's tangent is written in place, so that its views' tangents (views of it) and its
    // base's see the new values, as torch's do
    let target = match x.tangent() {
        Some(old) if old.dtype() == xs.dtype => Some(old),
        Some(_) => None,
        None => tangent_through_base(x, xs)?,
    };
    match target {
        Some(t) => {
            crate::autograd::forward_ad::with_enabled(false, || copy_(&t, &tangent))?;
        }
        None => crate::autograd::forward_ad::set_tangent(x, Some(tangent)),
    }
    Ok(())
}

/// A view without a tangent, written with a value that has one: its tangent becomes the
/// same view of its base's (a zero tangent given to the base if it has none), so that the
/// base sees the write, as in torch. `None` where the base's layout does not allow it (its
/// tangent then stays its own).
fn tangent_through_base(x: &Tensor, xs: &crate::tensor::Snapshot) -> Result<Option<Tensor>> {
    let Some(base) = x.base() else {
        return Ok(None);
    };
    let bl = base.layout();
    if base.dtype() != xs.dtype || bl.offset != 0 {
        return Ok(None);
    }
    let bt = match base.tangent() {
        Some(t)
            if t.dtype() == xs.dtype
                && t.layout().strides == bl.strides
                && t.layout().offset == 0 =>
        {
            t
        }
        Some(_) => return Ok(None),
        None => {
            // zeros laid out as the base is (a clone keeps a dense tensor's strides)
            let z = with_grad_mode(false, || {
                crate::autograd::forward_ad::with_enabled(false, || clone_tensor(&base.detach()))
            })?;
            if z.layout().strides != bl.strides {
                return Ok(None);
            }
            with_grad_mode(false, || fill_(&z, Scalar::Int(0)))?;
            crate::autograd::forward_ad::set_tangent(&base, Some(z.clone()));
            z
        }
    };
    let t = bt.alias_with_layout(xs.layout.clone());
    crate::autograd::forward_ad::set_tangent(x, Some(t.clone()));
    Ok(Some(t))
}

fn can_cast(from: DType, to: DType) -> bool {
    from.category() <= to.category()
}

/// Writes `result` into `x` and moves `x`'s history onto it (see the module docs).
/// Contract: `result` was produced by an op for this commit, so its storage is private
/// (no other thread can hold its lock); it may alias `x` itself, which is handled.
pub fn commit(x: &Tensor, result: &Tensor) -> Result<()> {
    if is_grad_enabled() && result.requires_grad() {
        // (an operand that requires grad, written into a multi-output view)
        check_multi_output_view(x)?;
    }
    // A value with no history written into a tensor that requires grad: the overwritten
    // elements get a zero gradient, which `where(true, result, x)` expresses as a node.
    let constant;
    let result = if is_grad_enabled() && x.requires_grad() && !result.requires_grad() {
        let all =
            super::creation::host_tensor(crate::storage::Buffer::Bool(vec![true].into()), &[]);
        constant = where_(
            &all,
            &with_grad_mode(false, || to_dtype(result, x.dtype()))?,
            x,
        )?;
        &constant
    } else {
        result
    };
    let xs = x.snapshot();
    let rdt = result.dtype();
    if !can_cast(rdt, xs.dtype) {
        return Err(Error::runtime(format!(
            "result type {} can't be cast to the desired output type {}",
            rdt.scalar_type_name(),
            xs.dtype.scalar_type_name()
        )));
    }
    let r = with_grad_mode(false, || -> Result<Tensor> {
        let r = to_dtype(&result.detach(), xs.dtype)?;
        expand(&r, &xs.layout.shape)
    })?;
    // Keep what the new node saved of x's old value alive under a private copy, so that
    // overwriting x does not corrupt it (torch saves `original_self` the same way).
    let old_history = x.grad_fn().map(|f| (f, x.output_nr()));
    if let Some(node) = result.grad_fn() {
        let saves_x = |s: &crate::autograd::graph::SavedTensor| {
            s.input_tensor()
                .is_some_and(|t| Arc::ptr_eq(&t.storage(), &xs.storage) && t.same(x))
        };
        // x's `self`, promoted to another dtype by the op: a private copy already, which
        // only has to stop following x's version counter
        let promoted_x = |s: &crate::autograd::graph::SavedTensor| {
            s.input_tensor()
                .is_some_and(|t| !Arc::ptr_eq(&t.storage(), &xs.storage) && t.counts_versions_of(x))
        };
        let mut g = node.lock();
        if let Some(s) = g.saved.iter_mut().find(|s| promoted_x(s)) {
            let own = s.input_tensor().map(Tensor::with_own_version);
            if let Some(t) = own {
                s.replace_input(t);
            }
        }
        let any_x = g.saved.iter().any(saves_x);
        drop(g);
        // The copy is made without the node's lock held (reading storage may wait).
        if any_x {
            let c = new_tensor(
                k::cast(&xs.storage.read(), &xs.layout, xs.dtype)?,
                &xs.layout.shape,
            );
            if let Some((f, nr)) = &old_history {
                c.set_history(f.clone(), *nr);
            }
            if crate::autograd::forward_ad::propagates()
                && let Some(t) = x.tangent()
            {
                // (x's old value keeps its old tangent: x's is about to be overwritten)
                let t = crate::autograd::forward_ad::with_enabled(false, || clone_tensor(&t))?;
                crate::autograd::forward_ad::set_tangent(&c, Some(t));
            }
            // Only the first slot: the op's `self`. Where x is also saved as the other
            // operand (`x *= x`), that slot keeps x, and backward reports it modified, as
            // torch's (which saves `original_self` alone) does.
            if let Some(s) = node.lock().saved.iter_mut().find(|s| saves_x(s)) {
                s.replace_input(c);
            }
        }
    }
    let rs = r.snapshot();
    if Arc::ptr_eq(&rs.storage, &xs.storage) {
        // the result aliases x (e.g. `x.copy_(x)`): copy it out before writing
        let private = k::cast(&rs.storage.read(), &rs.layout, rs.dtype)?;
        let mut w = xs.storage.write();
        k::copy_into(
            &mut w,
            &xs.layout,
            &private,
            &Layout::contiguous(&rs.layout.shape),
        )?;
    } else {
        // The result's storage is private to this op (fresh from a kernel), so holding its
        // read lock while taking x's write lock cannot form a cycle with another thread.
        let src = rs.storage.read();
        let mut w = xs.storage.write();
        k::copy_into(&mut w, &xs.layout, &src, &rs.layout)?;
    }
    x.bump_version();
    if crate::autograd::forward_ad::propagates() {
        commit_tangent(x, result, &xs)?;
    }
    if let Some(node) = result.grad_fn()
        && result.has_shape(&xs.layout.shape)
    {
        // what the node saved of its result now lives in x
        let storage = result.storage();
        for s in node.lock().saved.iter_mut() {
            if s.is_output_in(&storage) {
                s.move_output_to(x);
            }
        }
    }

    // (an int or bool tensor never requires grad: a value with history written into
    // one leaves it without history, as in torch)
    if !result.requires_grad() || !is_grad_enabled() || !xs.dtype.is_float() {
        return Ok(());
    }
    let (node, nr) = match result.grad_fn() {
        Some(f) => (f, result.output_nr()),
        None => return Ok(()),
    };
    match x.base() {
        None => {
            x.set_history(node, nr);
            Ok(())
        }
        Some(base) => rebase_view(x, &base, result),
    }
}

/// Runs an out-of-place op on `x` and commits it into `x`.
fn inplace(x: &Tensor, f: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
    inplace_checked(x, false, &[], f)
}

/// [`inplace`] for the ops torch runs through its TensorIterator (arithmetic, unary
/// functions, clamp, copy_): they refuse to write a tensor whose elements share memory
/// (an expanded dim), as torch's `assert_no_internal_overlap` does. fill_, zero_,
/// masked_fill_ and index_put_ write such tensors, as in torch.
pub(crate) fn inplace_no_overlap(
    x: &Tensor,
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    inplace_checked(x, true, &[], f)
}

/// [`inplace_no_overlap`] with tensor operands, which may not partly overlap `x` either.
pub(crate) fn inplace_no_overlap_with(
    x: &Tensor,
    operands: &[Option<&Tensor>],
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    inplace_checked(x, true, operands, f)
}

/// The tensor of an operand, if it is one.
fn tensor_of<'a>(o: Operand<'a>) -> Option<&'a Tensor> {
    match o {
        Operand::T(t) => Some(t),
        Operand::S(_) => None,
    }
}

/// torch's `assert_no_partial_overlap(out, input)` (TensorIterator's check): an input
/// that covers some of the destination's memory, but not exactly as the destination
/// does, would be read after parts of it were written. Layouts that are not dense are
/// "too hard" to judge and pass, as in torch.
fn check_no_partial_overlap(out: &Tensor, input: &Tensor) -> Result<()> {
    if out.same(input) {
        return Ok(());
    }
    let (a, b) = (out.snapshot(), input.snapshot());
    if !Arc::ptr_eq(&a.storage, &b.storage) {
        return Ok(());
    }
    let (la, lb) = (&a.layout, &b.layout);
    if la.numel() == 0
        || lb.numel() == 0
        || !la.is_non_overlapping_and_dense()
        || !lb.is_non_overlapping_and_dense()
    {
        return Ok(());
    }
    let (a0, a1) = (la.offset, la.offset + la.numel());
    let (b0, b1) = (lb.offset, lb.offset + lb.numel());
    let partial = if (a0, a1) == (b0, b1) {
        la.strides != lb.strides
    } else {
        a0 < b1 && b0 < a1
    };
    if partial {
        return Err(Error::runtime(
            "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single \
             memory location. Please clone() the tensor before performing the operation.",
        ));
    }
    Ok(())
}

/// torch's `assert_no_overlap(out, input)`: `input` may not share any of `out`'s memory
/// (the same tensor, or dense layouts on one storage whose element ranges meet; other
/// layouts are "too hard" to judge and pass, as in torch).
fn check_no_overlap(out: &Tensor, input: &Tensor) -> Result<()> {
    let (a, b) = (out.snapshot(), input.snapshot());
    let overlap = out.same(input)
        || (Arc::ptr_eq(&a.storage, &b.storage) && {
            let (la, lb) = (&a.layout, &b.layout);
            let ((a0, a1), (b0, b1)) = (la.storage_span(), lb.storage_span());
            la.is_non_overlapping_and_dense()
                && lb.is_non_overlapping_and_dense()
                && a0 < b1
                && b0 < a1
        });
    if overlap {
        return Err(Error::runtime(
            "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single \
             memory location. Please clone() the tensor before performing the operation.",
        ));
    }
    Ok(())
}

/// torch's internal-overlap check of a tensor about to be written: no expanded dim (an
/// element another element shares memory with would be written twice).
fn check_no_internal_overlap(x: &Tensor) -> Result<()> {
    let l = x.layout();
    // (an empty tensor has no elements to share)
    let shared = |(&d, &s): (&usize, &usize)| d > 1 && s == 0;
    if l.numel() > 0 && l.shape.iter().zip(&l.strides).any(shared) {
        return Err(Error::runtime(
            "unsupported operation: more than one element of the written-to tensor refers to a single \
             memory location. Please clone() the tensor before performing the operation.",
        ));
    }
    Ok(())
}

/// The autograd checks (first, as torch's autograd layer runs before its kernel), the
/// overlap check if asked, then the op and the commit.
fn inplace_checked(
    x: &Tensor,
    no_overlap: bool,
    operands: &[Option<&Tensor>],
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    check_writable(x)?;
    for t in operands.iter().flatten() {
        check_no_partial_overlap(x, t)?;
    }
    if no_overlap {
        check_no_internal_overlap(x)?;
    }
    crate::autograd::saved_hooks::before_mutation(x)?;
    if crate::autograd::saved_hooks::scoped() {
        // what the op's node saves is packed after the commit: the tensors it keeps then
        crate::autograd::saved_hooks::scope(|| {
            let r = f(x)?;
            commit(x, &r)
        })?;
    } else {
        let r = f(x)?;
        commit(x, &r)?;
    }
    Ok(x.clone())
}

/// Runs an out-of-place op on `x` and commits it into `x` (for the binding layer).
pub fn commit_checked(x: &Tensor, f: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<()> {
    inplace(x, f).map(|_| ())
}

pub fn add_(x: &Tensor, other: Operand<'_>, alpha: Scalar) -> Result<Tensor> {
    if let Some(r) = scaled_arith_in_place(x, k::BinaryOp::Add, other, alpha) {
        return r;
    }
    inplace_no_overlap_with(x, &[tensor_of(other)], |x| {
        add_op(Operand::T(x), other, alpha)
    })
}
pub fn sub_(x: &Tensor, other: Operand<'_>, alpha: Scalar) -> Result<Tensor> {
    // after autograd's checks (as in torch), before the fast path, which would take
    // `x.sub_(False)` on a float tensor
    check_writable(x)?;
    if is_grad_enabled() && tensor_of(other).is_some_and(Tensor::requires_grad) {
        // (torch's check_inplace looks at every input)
        check_multi_output_view(x)?;
    }
    super::elementwise::check_sub_operands(Operand::T(x), other)?;
    if let Some(r) = scaled_arith_in_place(x, k::BinaryOp::Sub, other, alpha) {
        return r;
    }
    inplace_no_overlap_with(x, &[tensor_of(other)], |x| {
        sub_op(Operand::T(x), other, alpha)
    })
}

/// [`arith_in_place`] for `x op= alpha * other` (an optimiser's `p.add_(g, alpha=-lr)`):
/// `other * alpha` first, rounded as the out-of-place op rounds it, then one in-place
/// pass. `None` where the general path is needed.
fn scaled_arith_in_place(
    x: &Tensor,
    op: k::BinaryOp,
    other: Operand<'_>,
    alpha: Scalar,
) -> Option<Result<Tensor>> {
    if alpha == Scalar::Int(1) {
        return arith_in_place(x, op, other);
    }
    let (Operand::T(t), Scalar::Int(_) | Scalar::Float(_)) = (other, alpha) else {
        return None;
    };
    let records = is_grad_enabled() && (x.requires_grad() || t.requires_grad());
    if records
        || any_dual_operand(x, other)
        || t.dtype() != x.dtype()
        || !x.dtype().is_float()
        || !t.has_shape(&x.shape())
    {
        return None;
    }
    // `alpha * other` and the op in one pass (no temporary for the product); where the
    // kernel does not take it, the product first, rounded as the out-of-place op rounds
    // it, then one in-place pass.
    if let Some(r) = arith_in_place_with(x, op, Operand::T(t), Some(alpha.as_f64())) {
        return Some(r);
    }
    match with_grad_mode(false, || mul_scalar(t, alpha)) {
        Ok(scaled) => arith_in_place(x, op, Operand::T(&scaled)),
        Err(e) => Some(Err(e)),
    }
}
pub fn mul_(x: &Tensor, other: Operand<'_>) -> Result<Tensor> {
    if let Some(r) = arith_in_place(x, k::BinaryOp::Mul, other) {
        return r;
    }
    inplace_no_overlap_with(x, &[tensor_of(other)], |x| mul_op(Operand::T(x), other))
}
pub fn div_(x: &Tensor, other: Operand<'_>) -> Result<Tensor> {
    if let Some(r) = arith_in_place(x, k::BinaryOp::Div, other) {
        return r;
    }
    inplace_no_overlap_with(x, &[tensor_of(other)], |x| div_op(Operand::T(x), other))
}
/// `x.div_(other, rounding_mode="floor" | "trunc")` (zero gradient, as out of place).
pub fn div_rounded_(x: &Tensor, other: Operand<'_>, floor: bool) -> Result<Tensor> {
    inplace_no_overlap_with(x, &[tensor_of(other)], |x| {
        crate::ops::div_rounded(Operand::T(x), other, floor)
    })
}

/// `x op= other` written straight into x's storage when there is nothing to record
/// (grad mode off, as in an optimiser step, or nothing requires grad) and no promotion,
/// broadcasting or aliasing is involved: one pass instead of compute-then-copy. The
/// values are those of the general path (same float operation per element).
fn arith_in_place(x: &Tensor, op: k::BinaryOp, other: Operand<'_>) -> Option<Result<Tensor>> {
    arith_in_place_with(x, op, other, None)
}

/// [`arith_in_place`], the tensor operand scaled by `alpha` if given.
fn arith_in_place_with(
    x: &Tensor,
    op: k::BinaryOp,
    other: Operand<'_>,
    alpha: Option<f64>,
) -> Option<Result<Tensor>> {
    let other_grad = matches!(other, Operand::T(t) if t.requires_grad());
    if is_grad_enabled() && (x.requires_grad() || other_grad) || any_dual_operand(x, other) {
        return None;
    }
    let sx = x.snapshot();
    if !sx.dtype.is_float() {
        return None;
    }
    if let Err(e) = crate::autograd::saved_hooks::before_mutation(x) {
        return Some(Err(e));
    }
    let done = match other {
        // a float tensor and a number: the number is rounded to the tensor's dtype
        Operand::S(s) => k::arith_in_place(
            op,
            &mut sx.storage.write(),
            &sx.layout,
            k::InPlaceRhs::Number(s.as_f64()),
        ),
        Operand::T(t) => {
            let st = t.snapshot();
            if st.dtype != sx.dtype
                || st.layout.shape != sx.layout.shape
                || Arc::ptr_eq(&st.storage, &sx.storage)
            {
                return None;
            }
            let (src, mut dst) = crate::storage::Storage::read_and_write(&st.storage, &sx.storage);
            let rhs = match alpha {
                Some(a) => k::InPlaceRhs::Scaled(&src, &st.layout, a),
                None => k::InPlaceRhs::Slice(&src, &st.layout),
            };
            k::arith_in_place(op, &mut dst, &sx.layout, rhs)
        }
    };
    let done = match done {
        Ok(d) => d,
        Err(e) => return Some(Err(e)),
    };
    if !done {
        return None;
    }
    x.bump_version();
    Some(Ok(x.clone()))
}
pub fn pow_(x: &Tensor, other: Operand<'_>) -> Result<Tensor> {
    if let Operand::T(o) = other {
        // before pow's dtype checks, as torch's TensorIterator finds it first
        broadcasts_to(&x.shape(), &o.shape())?;
    }
    inplace_no_overlap_with(x, &[tensor_of(other)], |x| pow_op(Operand::T(x), other))
}
pub fn clamp_(x: &Tensor, min: Option<Scalar>, max: Option<Scalar>) -> Result<Tensor> {
    inplace_no_overlap(x, |x| clamp(x, min, max))
}
pub fn clamp_tensor_(x: &Tensor, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<Tensor> {
    inplace_no_overlap_with(x, &[min, max], |x| clamp_tensor(x, min, max))
}
pub fn relu_(x: &Tensor) -> Result<Tensor> {
    inplace_no_overlap(x, relu)
}
pub fn unary_(x: &Tensor, op: crate::backend::UnaryOp) -> Result<Tensor> {
    super::unary::refuse_bool_first(op, x.dtype())?;
    inplace_no_overlap(x, |x| super::unary::unary_for_inplace(op, x))
}

/// `x.fill_(v)`: the old value gets a zero gradient (FillBackward2).
pub fn fill_(x: &Tensor, v: Scalar) -> Result<Tensor> {
    fill_recorded_as(x, v, "FillBackward2")
}

/// `x.zero_()` (ZeroBackward0).
pub fn zero_(x: &Tensor) -> Result<Tensor> {
    fill_recorded_as(x, Scalar::Int(0), "ZeroBackward0")
}

fn fill_recorded_as(x: &Tensor, v: Scalar, node: &'static str) -> Result<Tensor> {
    let records = is_grad_enabled() && x.requires_grad();
    if !records && !crate::autograd::forward_ad::any_dual(&[x]) {
        // Nothing to record: written straight into x's storage, one pass and no
        // temporary (the general path below builds the filled tensor, then copies it).
        check_writable(x)?;
        v.check_fits(x.dtype())?;
        crate::autograd::saved_hooks::before_mutation(x)?;
        crate::dispatch::forward(
            "aten::fill_",
            || vec![x.shape().to_vec().into()],
            || {
                let s = x.snapshot();
                k::fill(&mut s.storage.write(), &s.layout, v)?;
                Ok(())
            },
        )?;
        x.bump_version();
        return Ok(x.clone());
    }
    inplace(x, |x| filled(x, v, node))
}

/// `x.fill_(value)` with a 0-d tensor `value` (FillBackward3): cast to x's dtype (no
/// overflow check, as a tensor is cast), the value gets the gradient's sum.
pub fn fill_tensor_(x: &Tensor, value: &Tensor) -> Result<Tensor> {
    check_fill_tensor_value(value)?;
    if is_grad_enabled() && value.requires_grad() {
        check_multi_output_view(x)?;
    }
    inplace_no_overlap(x, |x| filled_tensor(x, value, "FillBackward3"))
}

/// `torch.fill(x, v)`: a new tensor of x's shape, dtype and device, filled with `v`
/// (FillBackward0: x gets a zero gradient).
pub fn fill(x: &Tensor, v: Scalar) -> Result<Tensor> {
    filled(x, v, "FillBackward0")
}

/// `torch.fill(x, value)` with a 0-d tensor `value` (FillBackward1).
pub fn fill_tensor(x: &Tensor, value: &Tensor) -> Result<Tensor> {
    check_fill_tensor_value(value)?;
    filled_tensor(x, value, "FillBackward1")
}

/// `fill_`'s check of a tensor value: 0-d (torch's message).
pub fn check_fill_tensor_value(value: &Tensor) -> Result<()> {
    if value.ndim() != 0 {
        return Err(Error::runtime(format!(
            "fill_ only supports 0-dimension value tensor but got tensor with {} dimensions.",
            value.ndim()
        )));
    }
    Ok(())
}

/// x's shape filled with `v`, recorded as the node `name`.
fn filled(x: &Tensor, v: Scalar, name: &'static str) -> Result<Tensor> {
    v.check_fits(x.dtype())?;
    apply(
        "aten::fill",
        &[x],
        || crate::device::with_default_device(x.device(), || full(&x.shape(), v, x.dtype())),
        |_| {
            (
                FillBackward {
                    name,
                    value_dtype: None,
                },
                saved![],
            )
        },
    )
}

/// x's shape filled with the 0-d `value` cast to x's dtype (on x's device), recorded as
/// the node `name` with `value` as its second input.
fn filled_tensor(x: &Tensor, value: &Tensor, name: &'static str) -> Result<Tensor> {
    apply(
        "aten::fill",
        &[x, value],
        || {
            with_grad_mode(false, || {
                let mut v = to_dtype(&value.detach(), x.dtype())?;
                if v.device() != x.device() {
                    v = to_device(&v, x.device())?;
                }
                contiguous(&expand(&v, &x.shape())?)
            })
        },
        |_| {
            (
                FillBackward {
                    name,
                    value_dtype: Some(value.dtype()),
                },
                saved![],
            )
        },
    )
}

/// torch's fill nodes: FillBackward0 (`fill(x, number)`), 1 (`fill(x, tensor)`), 2
/// (`x.fill_(number)`), 3 (`x.fill_(tensor)`) and ZeroBackward0 (`x.zero_()`). The
/// filled tensor's old values get a zero gradient, a tensor value the gradient's sum
/// (in the value's dtype).
#[derive(Clone)]
pub struct FillBackward {
    name: &'static str,
    value_dtype: Option<DType>,
}
impl FillBackward {
    /// (`batched`: `g` has a leading batch dim; the value's gradient is summed per sample)
    fn grads(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>], batched: bool) -> Result<Grads> {
        let g = grad0(g)?;
        let gx = if ctx.needs_input_grad(0) {
            Some(zeros_like(&g)?)
        } else {
            None
        };
        let mut out: Grads = smallvec::smallvec![gx];
        if let Some(d) = self.value_dtype {
            out.push(if ctx.needs_input_grad(1) {
                Some(to_dtype(&super::reduce::sum_per_sample(&g, batched)?, d)?)
            } else {
                None
            });
        }
        Ok(out)
    }
}
impl Backward for FillBackward {
    fn name(&self) -> Cow<'static, str> {
        self.name.into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.grads(ctx, g, false)
    }
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.grads(ctx, g, true))
    }
}

/// An in-place op's operand of shape `other` broadcasts to its destination's shape `xs`
/// (torch's message otherwise).
pub(crate) fn broadcasts_to(xs: &[usize], other: &[usize]) -> Result<()> {
    let s = crate::shape::broadcast_shapes(xs, other)?;
    if s.as_slice() == xs {
        Ok(())
    } else {
        Err(Error::runtime(format!(
            "output with shape {} doesn't match the broadcast shape {}",
            crate::shape::fmt_shape(xs),
            crate::shape::fmt_shape(&s)
        )))
    }
}

/// `x.copy_(src)`: src is broadcast to x's shape and cast to its dtype (CopyBackwards).
pub fn copy_(x: &Tensor, src: &Tensor) -> Result<Tensor> {
    if is_grad_enabled() && !x.dtype().is_float() {
        // torch's copy_ records nothing, and so checks nothing, for an int or bool
        // destination (it is not differentiable), whatever src is
        return with_grad_mode(false, || copy_(x, src));
    }
    let xs = x.shape();
    broadcasts_to(&xs, &src.shape())?;
    if let Some(r) = copy_in_place(x, src) {
        return r;
    }
    let src_shape = src.shape();
    let dtype = x.dtype();
    // (copying a tensor onto itself is no write that could overlap: torch returns early)
    inplace_checked(x, !x.same(src), &[Some(src)], |_| {
        // x's old history is an input too, as in torch: it gets a zero gradient
        apply(
            "aten::copy_",
            &[x, src],
            || {
                // Always a fresh buffer: `commit` relies on results never aliasing a
                // storage someone else can lock.
                let e = with_grad_mode(false, || expand(&to_dtype(&src.detach(), dtype)?, &xs))?;
                let s = e.snapshot();
                Ok(new_tensor(
                    k::cast(&s.storage.read(), &s.layout, dtype)?,
                    &xs,
                ))
            },
            |_| {
                (
                    CopyBackwards {
                        src_shape,
                        src_dtype: src.dtype(),
                    },
                    saved![],
                )
            },
        )
    })
}

/// `x.copy_(src)` straight into x's storage when there is nothing to record (grad mode
/// off or nothing requires grad, no tangents) and src is another storage of x's dtype:
/// one copy (`copy_into`: parallel, tiled for transposes, a broadcast src as fills)
/// instead of a copy into a temporary and a second one into x. `None` where the general
/// path is needed.
fn copy_in_place(x: &Tensor, src: &Tensor) -> Option<Result<Tensor>> {
    let records = is_grad_enabled() && (x.requires_grad() || src.requires_grad());
    if records || any_dual_operand(x, Operand::T(src)) || src.dtype() != x.dtype() {
        return None;
    }
    let (sx, ss) = (x.snapshot(), src.snapshot());
    if Arc::ptr_eq(&sx.storage, &ss.storage) {
        return None;
    }
    let run = || -> Result<Tensor> {
        // torch's checks, in its order: the destination's own overlap first
        check_writable(x)?;
        let l = &sx.layout;
        if l.numel() > 0
            && l.shape
                .iter()
                .zip(&l.strides)
                .any(|(&d, &s)| d > 1 && s == 0)
        {
            return Err(Error::runtime(
                "unsupported operation: more than one element of the written-to tensor refers to a single \
                 memory location. Please clone() the tensor before performing the operation.",
            ));
        }
        crate::autograd::saved_hooks::before_mutation(x)?;
        let from = ss.layout.expand(&l.shape)?;
        crate::dispatch::forward(
            "aten::copy_",
            || vec![l.shape.to_vec().into(), ss.layout.shape.to_vec().into()],
            || {
                let (r, mut w) = crate::storage::Storage::read_and_write(&ss.storage, &sx.storage);
                k::copy_into(&mut w, l, &r, &from)?;
                Ok(())
            },
        )?;
        x.bump_version();
        Ok(x.clone())
    };
    Some(run())
}

#[derive(Clone)]
pub struct CopyBackwards {
    src_shape: Shape,
    src_dtype: DType,
}
impl Backward for CopyBackwards {
    fn name(&self) -> Cow<'static, str> {
        "torch::autograd::CopyBackwards".into()
    }
    // d(self)/d(old self) = 0 (overwritten); d(self)/d(src) = 1, summed to src's shape
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.grads(ctx, g, false)
    }
    // (src's part summed per sample)
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.grads(ctx, g, true))
    }
}

impl CopyBackwards {
    fn grads(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>], batched: bool) -> Result<Grads> {
        let g = grad0(g)?;
        let old = if ctx.needs_input_grad(0) {
            Some(super::zeros_like(&g)?)
        } else {
            None
        };
        let src = if batched {
            super::sum_to_batched(&g, &self.src_shape)?
        } else {
            sum_to(&g, &self.src_shape)?
        };
        Ok(smallvec::smallvec![
            old,
            Some(if self.src_dtype.is_float() {
                to_dtype(&src, self.src_dtype)?
            } else {
                src
            })
        ])
    }
}

/// `x[indices] = values` for advanced indices (index_put_).
pub fn index_put_(
    x: &Tensor,
    indices: &[Option<Tensor>],
    values: &Tensor,
    accumulate: bool,
    kind: super::PutValues,
) -> Result<Tensor> {
    if is_grad_enabled() && values.requires_grad() {
        // (torch's check_inplace looks at every input)
        check_multi_output_view(x)?;
    }
    // (torch's _index_put_impl_, after the autograd checks: the values and the indices
    // may not overlap x's memory)
    let no_overlap = || -> Result<()> {
        check_no_overlap(x, values)?;
        indices
            .iter()
            .flatten()
            .try_for_each(|i| check_no_overlap(x, i))
    };
    let records = is_grad_enabled() && (x.requires_grad() || values.requires_grad());
    if !records
        && !any_dual_operand(x, Operand::T(values))
        && !crate::autograd::saved_hooks::maybe_active()
        && !Arc::ptr_eq(&x.storage(), &values.storage())
        && x.device() == crate::device::Device::Cpu
        && !crate::replay::active()
    {
        // nothing to record: written straight into x, no out-of-place copy to commit
        check_writable(x)?;
        no_overlap()?;
        crate::autograd::saved_hooks::before_mutation(x)?;
        if super::index_put_direct(x, indices, values, accumulate, kind)? {
            return Ok(x.clone());
        }
    }
    inplace(x, |x| {
        no_overlap()?;
        super::index_put_checked(x, indices, values, accumulate, kind)
    })
}

/// Gradient accumulation (`grad += new`) with no autograd and no checks.
pub fn inplace_add(x: &Tensor, g: &Tensor) -> Result<()> {
    // (a `.grad` the user set to an expanded tensor, or one stolen under a relaxed layout
    // policy: torch's add_ refuses it)
    check_no_internal_overlap(x)?;
    let r = with_grad_mode(false, || add(x, g))?;
    commit(x, &r)
}
