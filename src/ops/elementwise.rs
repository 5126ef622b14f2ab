//! Elementwise arithmetic: what binary ops share (operands, promotion, broadcasting, the
//! output's layout, saving), the forwards of add/sub/mul/div with their fast paths (their
//! nodes are the arithmetic table's, `arith.rs`), and the short forms
//! backward formulas use. Powers are in `pow.rs`, division with rounding and remainders
//! in `division.rs`, comparisons, where and clamp in `select.rs`, casts and clones in
//! `copy.rs`, the table ops in `unary.rs` and `binary.rs`.

use super::arith::{self, ArithBackward, ArithOp};
use super::copy::*;
use super::pow::*;
use super::select::*;
use super::{Fresh, Read, apply_fresh, new_tensor, read_input};
use crate::autograd::function::BackwardCtx;
use crate::autograd::graph::SavedTensor;
use crate::backend::{self as k, BinaryOp};
use crate::dtype::{DType, ResultType, Scalar};
use crate::layout::Layout;
use crate::shape::broadcast_shapes;
use crate::storage::Buffer;
use crate::tensor::Tensor;
use crate::{Error, Result, saved};
use smallvec::SmallVec;

/// One operand of a binary op: a tensor, or a Python number (a "wrapped number" for
/// type promotion: it never widens a tensor's dtype within its category).
#[derive(Clone, Copy)]
pub enum Operand<'a> {
    T(&'a Tensor),
    S(Scalar),
}

/// `x`'s elements in row-major order, as a new host buffer of its dtype (what `numpy()`,
/// `tolist()` and `tensor(x)` copy out; a device tensor's are copied down).
pub fn contiguous_buffer(x: &Tensor) -> Result<Buffer> {
    let s = x.snapshot();
    let r = s.storage.read();
    let b = k::cast(&r, &s.layout, s.dtype)?;
    Ok(crate::backend::host::read(&b)?.into_owned())
}

/// A 0-d tensor holding `s` as `dtype`.
pub fn scalar_tensor(s: Scalar, dtype: DType) -> Tensor {
    let buf = Buffer::full(dtype, 1, s);
    crate::replay::const_born(&buf);
    new_tensor(buf, &[])
}

/// An elementwise op's output in the layout torch gives it (see
/// [`iter_output_order`](crate::layout::iter_output_order)): `kernel` writes a contiguous
/// buffer over the layouts it is given, the inputs' layouts broadcast to `shape`
/// (`expanded`), permuted into the output's memory order when that is not row-major.
/// `originals`: the inputs' own layouts, which decide that order.
pub(crate) fn elementwise_out(
    shape: &[usize],
    originals: &[&Layout],
    expanded: &[Layout],
    kernel: impl FnOnce(&[Layout]) -> Result<Buffer>,
) -> Result<Tensor> {
    match crate::layout::iter_output_order(shape, originals) {
        None => Ok(new_tensor(kernel(expanded)?, shape)),
        Some((order, strides)) => {
            let permuted = expanded
                .iter()
                .map(|l| l.permute(&order))
                .collect::<Result<Vec<_>>>()?;
            let buf = kernel(&permuted)?;
            crate::replay::born(&buf);
            let dtype = buf.dtype();
            let layout = Layout {
                shape: shape.iter().copied().collect(),
                strides,
                offset: 0,
            };
            Ok(Tensor::from_storage(
                std::sync::Arc::new(crate::storage::Storage::new(buf)),
                layout,
                dtype,
            ))
        }
    }
}

/// [`elementwise_out`] of one input.
pub(super) fn unary_out(
    layout: &Layout,
    kernel: impl FnOnce(&Layout) -> Result<Buffer>,
) -> Result<Tensor> {
    elementwise_out(
        &layout.shape,
        &[layout],
        std::slice::from_ref(layout),
        |l| kernel(&l[0]),
    )
}

/// `op` at each element of `x` as one backend pass (a fused activation kernel), or `None`
/// where the backend has no such kernel (the caller then composes the op from others).
/// A kernel's own error is returned, not taken for a missing kernel.
pub(super) fn fused_unary(x: &Tensor, op: crate::backend::ActFn) -> Result<Option<Tensor>> {
    let s = x.snapshot();
    let mut missing = false;
    let y = unary_out(&s.layout, |l| {
        crate::backend::activation(op, &s.storage.read(), l)?.ok_or_else(|| {
            missing = true;
            Error::Internal("no fused kernel".into())
        })
    });
    if missing { Ok(None) } else { y.map(Some) }
}

/// A copy of `layout`'s elements (`clone`, `to`) in torch's `preserve_format`: the input's
/// strides if it is dense, else dense strides in the input's memory order (torch's
/// `infer_dense_strides`, the one-operand case of `iter_output_order`). `kernel` as for
/// [`elementwise_out`].
pub(super) fn preserving_format(
    layout: &Layout,
    kernel: impl FnOnce(&Layout) -> Result<Buffer>,
) -> Result<Tensor> {
    unary_out(layout, kernel)
}

/// Tracks which tensors a backward formula needs, by index into the node's saved list.
#[derive(Default)]
pub(crate) struct Saver {
    pub list: SmallVec<[SavedTensor; 2]>,
}
impl Saver {
    pub fn input_if(&mut self, cond: bool, t: &Tensor) -> Option<u8> {
        cond.then(|| {
            self.list.push(SavedTensor::input(t));
            (self.list.len() - 1) as u8
        })
    }
    /// Saves input `t` as it was read by [`read_input`] (at that read's version).
    pub fn input_read(&mut self, cond: bool, t: &Tensor, version: u64) -> Option<u8> {
        cond.then(|| {
            self.list.push(SavedTensor::input_at(t, version));
            (self.list.len() - 1) as u8
        })
    }
    /// Saves the op's own output, not yet a tensor (see `apply_fresh`).
    pub fn output_fresh(&mut self, y: &Fresh) -> u8 {
        self.list.push(y.saved());
        (self.list.len() - 1) as u8
    }
    pub fn output(&mut self, t: &Tensor) -> u8 {
        self.list.push(SavedTensor::output(t, 0));
        (self.list.len() - 1) as u8
    }
}

pub(super) fn get(ctx: &BackwardCtx<'_>, i: Option<u8>) -> Result<Tensor> {
    ctx.saved(saved_index(i)?)
}

fn saved_index(i: Option<u8>) -> Result<usize> {
    i.map(usize::from)
        .ok_or_else(|| Error::Internal("saved tensor was not recorded".into()))
}

/// The gradient of a single-output node (always present: the engine does not run a
/// node that received nothing).
pub(crate) fn grad0(g: &[Option<Tensor>]) -> Result<Tensor> {
    g.first()
        .cloned()
        .flatten()
        .ok_or_else(|| Error::Internal("missing output gradient".into()))
}

// ---- binary ops -----------------------------------------------------------------------

/// Result dtype and tensors of both operands, scalars materialised as 0-d tensors.
pub(crate) fn promote(
    a: Operand<'_>,
    b: Operand<'_>,
    float_result: bool,
) -> Result<(Tensor, Tensor, DType)> {
    let mut rt = ResultType::default();
    for o in [a, b] {
        rt = match o {
            Operand::T(t) => rt.tensor(t.dtype(), t.ndim()),
            Operand::S(s) => rt.scalar(s),
        };
    }
    let mut dtype = rt.finish();
    if float_result && !dtype.is_float() {
        dtype = DType::default_float();
    }
    let conv = |o: Operand<'_>| match o {
        Operand::T(t) => {
            let c = to_dtype(t, dtype)?;
            if !c.same(t) {
                // what the op saves of the copy goes stale with t (see `Version`)
                c.share_version_of(t);
            }
            Ok(c)
        }
        Operand::S(s) => Ok(scalar_tensor(s, dtype)),
    };
    Ok((conv(a)?, conv(b)?, dtype))
}

/// `t op s` (or `s op t`) for a contiguous float tensor and a Python number: the number
/// keeps the tensor's dtype (torch's promotion), so it is applied straight from the
/// kernel instead of being materialised as a 0-d tensor and broadcast. Bitwise the same
/// result and gradients as the general path; `None` when the general path is needed.
/// The number gets no edge but keeps its position, as in torch (`(x * 2).grad_fn` has two
/// `next_functions`, the second `(None, 0)`); the node keeps it for the derivatives.
fn scalar_fast_path(
    op: ArithOp,
    t: &Tensor,
    s: Scalar,
    scalar_first: bool,
) -> Option<Result<Tensor>> {
    let Read {
        snap,
        requires_grad,
        edge,
        ..
    } = match read_input(t) {
        Ok(r) => r,
        Err(e) => return Some(Err(e)),
    };
    if !snap.dtype.is_float() || !snap.layout.is_contiguous() {
        return None;
    }
    Some(apply_fresh(
        op.aten(),
        &[t],
        requires_grad,
        || {
            if scalar_first {
                smallvec::smallvec![None, edge]
            } else {
                smallvec::smallvec![edge, None]
            }
        },
        || {
            let buf = k::binary_scalar(
                op.kernel(),
                &snap.storage.read(),
                &snap.layout,
                s.as_f64(),
                scalar_first,
            )?
            .ok_or_else(|| {
                Error::Internal("scalar kernel refused a contiguous float tensor".into())
            })?;
            Ok(Fresh::new(buf, &snap.layout.shape))
        },
        |_| {
            let number_at = if scalar_first { 0 } else { 1 };
            (ArithBackward::with_number(op, s, number_at, true), saved![])
        },
    ))
}

/// `x op y` for two contiguous float tensors of the same dtype and shape: no promotion,
/// no broadcasting, one read per input. Bitwise the same as the general path; `None`
/// when that is needed. The node saves what the row's derivatives read of the operands,
/// at the version each was read at.
fn same_shape_fast_path(op: ArithOp, x: &Tensor, y: &Tensor) -> Option<Result<Tensor>> {
    let (rx, ry) = match (read_input(x), read_input(y)) {
        (Ok(rx), Ok(ry)) => (rx, ry),
        (Err(e), _) | (_, Err(e)) => return Some(Err(e)),
    };
    let (sx, sy) = (&rx.snap, &ry.snap);
    if sx.dtype != sy.dtype
        || !sx.dtype.is_float()
        || sx.layout.shape != sy.layout.shape
        || !sx.layout.is_contiguous()
        || !sy.layout.is_contiguous()
    {
        return None;
    }
    let operands = [
        (x, rx.version, rx.requires_grad),
        (y, ry.version, ry.requires_grad),
    ];
    let kernel = op.kernel();
    Some(apply_fresh(
        op.aten(),
        &[x, y],
        rx.requires_grad || ry.requires_grad,
        || smallvec::smallvec![rx.edge, ry.edge],
        || {
            let buf = if std::sync::Arc::ptr_eq(&sx.storage, &sy.storage) {
                let r = sx.storage.read();
                k::binary(kernel, &r, &sx.layout, &r, &sy.layout)?
            } else {
                let (rx, ry) = (sx.storage.read(), sy.storage.read());
                k::binary(kernel, &rx, &sx.layout, &ry, &sy.layout)?
            };
            Ok(Fresh::new(buf, &sx.layout.shape))
        },
        |y| ArithBackward::same_shape(op, operands, y),
    ))
}

pub(super) fn binary_kernel(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    broadcast_kernel(a, b, |ra, la, rb, lb| k::binary(op, ra, la, rb, lb))
}

/// `kernel` over `a` and `b` broadcast to one shape (their dtypes already promoted to
/// one), the output in the layout torch gives it.
pub(crate) fn broadcast_kernel(
    a: &Tensor,
    b: &Tensor,
    kernel: impl FnOnce(&Buffer, &Layout, &Buffer, &Layout) -> Result<Buffer>,
) -> Result<Tensor> {
    let (sa, sb) = (a.snapshot(), b.snapshot());
    let shape = broadcast_shapes(&sa.layout.shape, &sb.layout.shape)?;
    super::creation::guard(&shape, sa.dtype)?;
    let expanded = [sa.layout.expand(&shape)?, sb.layout.expand(&shape)?];
    let (ra, rb) = (sa.storage.read(), sb.storage.read());
    k::check_same_device(&[&ra, &rb])?;
    elementwise_out(&shape, &[&sa.layout, &sb.layout], &expanded, |l| {
        kernel(&ra, &l[0], &rb, &l[1])
    })
}

/// `a + alpha * b` with broadcasting and type promotion.
pub fn add_op(a: Operand<'_>, b: Operand<'_>, alpha: Scalar) -> Result<Tensor> {
    add_sub(a, b, alpha, false)
}

/// `a - alpha * b`.
pub fn sub_op(a: Operand<'_>, b: Operand<'_>, alpha: Scalar) -> Result<Tensor> {
    add_sub(a, b, alpha, true)
}

/// torch refuses subtraction with any bool operand (tensor or Python bool).
pub(crate) fn check_sub_operands(a: Operand<'_>, b: Operand<'_>) -> Result<()> {
    let is_bool = |o: Operand<'_>| match o {
        Operand::T(t) => t.dtype() == DType::Bool,
        Operand::S(s) => matches!(s, Scalar::Bool(_)),
    };
    match (is_bool(a), is_bool(b)) {
        (true, true) if matches!((a, b), (Operand::T(_), Operand::T(_))) => {
            Err(Error::not_implemented(
                "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.",
            ))
        }
        (false, false) => Ok(()),
        _ => Err(Error::not_implemented(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
        )),
    }
}

fn add_sub(a: Operand<'_>, b: Operand<'_>, alpha: Scalar, subtract: bool) -> Result<Tensor> {
    if subtract {
        check_sub_operands(a, b)?;
    }
    let op = if subtract { ArithOp::Sub } else { ArithOp::Add };
    if let (Operand::T(x), Operand::T(y)) = (a, b)
        && alpha == Scalar::Int(1)
        && let Some(r) = same_shape_fast_path(op, x, y)
    {
        return r;
    }
    if let (Operand::T(t), Operand::S(s)) = (a, b)
        && alpha == Scalar::Int(1)
        && let Some(r) = scalar_fast_path(op, t, s, false)
    {
        return r;
    }
    let (a, b, dtype) = promote(a, b, false)?;
    // torch's alpha_check, on the result dtype
    if matches!(alpha, Scalar::Bool(_)) && dtype != DType::Bool {
        return Err(Error::runtime(
            "Boolean alpha only supported for Boolean results.",
        ));
    }
    if matches!(alpha, Scalar::Float(_)) && !dtype.is_float() {
        return Err(Error::runtime(
            "For integral input tensors, argument alpha must not be a floating point number.",
        ));
    }
    let b_scaled = if alpha.as_f64() == 1.0 {
        b.clone()
    } else {
        binary_kernel(BinaryOp::Mul, &b, &scalar_tensor(alpha, dtype))?
    };
    arith::record(op, &a, &b, alpha.as_f64(), || {
        binary_kernel(op.kernel(), &a, &b_scaled)
    })
}

/// `s - x` for a Python number s (torch's rsub; RsubBackward1).
pub fn rsub_scalar(x: &Tensor, s: Scalar) -> Result<Tensor> {
    check_sub_operands(Operand::S(s), Operand::T(x))?;
    let (sv, xt, _) = promote(Operand::S(s), Operand::T(x), false)?;
    let op = ArithOp::Rsub;
    arith::record_with_number(op, &xt, s, 1, || binary_kernel(op.kernel(), &sv, &xt))
}

/// `torch.rsub(x, other, alpha=α)`: `other - α·x` (RsubBackward0; a Python number
/// `other` is torch's Scalar overload, RsubBackward1, with no edge). torch's refusals of
/// bool operands and its alpha checks, as sub's.
pub fn rsub_op(x: &Tensor, other: Operand<'_>, alpha: Scalar) -> Result<Tensor> {
    check_sub_operands(other, Operand::T(x))?;
    if let Operand::S(s) = other
        && alpha == Scalar::Int(1)
    {
        return rsub_scalar(x, s);
    }
    let (a, b, dtype) = promote(Operand::T(x), other, false)?;
    if matches!(alpha, Scalar::Bool(_)) && dtype != DType::Bool {
        return Err(Error::runtime(
            "Boolean alpha only supported for Boolean results.",
        ));
    }
    if matches!(alpha, Scalar::Float(_)) && !dtype.is_float() {
        return Err(Error::runtime(
            "For integral input tensors, argument alpha must not be a floating point number.",
        ));
    }
    let a_scaled = || {
        if alpha.as_f64() == 1.0 {
            Ok(a.clone())
        } else {
            binary_kernel(BinaryOp::Mul, &a, &scalar_tensor(alpha, dtype))
        }
    };
    let op = ArithOp::Rsub;
    let forward = || {
        // a float tensor and a number: `s - x·alpha` in one pass (the same two roundings)
        if let Operand::S(s) = other
            && dtype.is_float()
            && a.dtype() == dtype
            && (matches!(s, Scalar::Float(_)) || s.as_f64().abs() < 9007199254740992.0)
        {
            let fused = crate::backend::ActFn::Rsub {
                s: s.as_f64(),
                alpha: alpha.as_f64(),
            };
            if let Some(y) = fused_unary(&a, fused)? {
                return Ok(y);
            }
        }
        binary_kernel(BinaryOp::Sub, &b, &a_scaled()?)
    };
    match other {
        Operand::T(_) => arith::record(op, &a, &b, alpha.as_f64(), forward),
        Operand::S(s) => arith::record_with_number_alpha(op, &a, s, 1, alpha.as_f64(), forward),
    }
}

/// `a * b`.
pub fn mul_op(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    let op = ArithOp::Mul;
    let fast = match (a, b) {
        (Operand::T(t), Operand::S(s)) => scalar_fast_path(op, t, s, false),
        (Operand::S(s), Operand::T(t)) => scalar_fast_path(op, t, s, true),
        (Operand::T(x), Operand::T(y)) => same_shape_fast_path(op, x, y),
        _ => None,
    };
    if let Some(r) = fast {
        return r;
    }
    let (a, b, _) = promote(a, b, false)?;
    arith::record(op, &a, &b, 1.0, || binary_kernel(op.kernel(), &a, &b))
}

/// `a / b` (true division: integer inputs give float32).
pub fn div_op(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    let op = ArithOp::Div;
    if let (Operand::T(t), Operand::S(s)) = (a, b)
        && let Some(r) = scalar_fast_path(op, t, s, false)
    {
        return r;
    }
    let (a, b, _) = promote(a, b, true)?;
    arith::record(op, &a, &b, 1.0, || binary_kernel(op.kernel(), &a, &b))
}

// ---- short forms used by backward formulas and the binding layer --------------------

pub fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    add_op(Operand::T(a), Operand::T(b), Scalar::Int(1))
}
pub fn sub(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    sub_op(Operand::T(a), Operand::T(b), Scalar::Int(1))
}
pub fn mul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    mul_op(Operand::T(a), Operand::T(b))
}
pub fn div(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    div_op(Operand::T(a), Operand::T(b))
}
pub fn pow(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    pow_op(Operand::T(a), Operand::T(b))
}
pub fn add_scalar(a: &Tensor, s: Scalar) -> Result<Tensor> {
    add_op(Operand::T(a), Operand::S(s), Scalar::Int(1))
}
pub fn sub_scalar(a: &Tensor, s: Scalar) -> Result<Tensor> {
    sub_op(Operand::T(a), Operand::S(s), Scalar::Int(1))
}
pub fn mul_scalar(a: &Tensor, s: Scalar) -> Result<Tensor> {
    mul_op(Operand::T(a), Operand::S(s))
}
/// `s / x` for a number `s` (Python's reflected `/`): torch computes it as
/// `reciprocal(x) * s`, and so records ReciprocalBackward0 and MulBackward0.
pub fn rdiv_scalar(x: &Tensor, s: Scalar) -> Result<Tensor> {
    mul_scalar(&super::reciprocal(x)?, s)
}
pub fn div_scalar(a: &Tensor, s: Scalar) -> Result<Tensor> {
    div_op(Operand::T(a), Operand::S(s))
}
pub fn pow_scalar(a: &Tensor, s: Scalar) -> Result<Tensor> {
    pow_op(Operand::T(a), Operand::S(s))
}
pub fn where_(c: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    where_op(c, Operand::T(a), Operand::T(b))
}
pub fn eq(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    compare(BinaryOp::Eq, Operand::T(a), Operand::T(b))
}
pub fn gt(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    compare(BinaryOp::Gt, Operand::T(a), Operand::T(b))
}
pub fn lt(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    compare(BinaryOp::Lt, Operand::T(a), Operand::T(b))
}
pub fn eq_scalar(a: &Tensor, v: f64) -> Result<Tensor> {
    compare(BinaryOp::Eq, Operand::T(a), Operand::S(Scalar::Float(v)))
}
pub fn gt_scalar(a: &Tensor, v: f64) -> Result<Tensor> {
    compare(BinaryOp::Gt, Operand::T(a), Operand::S(Scalar::Float(v)))
}
pub fn ge_scalar(a: &Tensor, v: f64) -> Result<Tensor> {
    compare(BinaryOp::Ge, Operand::T(a), Operand::S(Scalar::Float(v)))
}
pub fn lt_scalar(a: &Tensor, v: f64) -> Result<Tensor> {
    compare(BinaryOp::Lt, Operand::T(a), Operand::S(Scalar::Float(v)))
}
pub fn le_scalar(a: &Tensor, v: f64) -> Result<Tensor> {
    compare(BinaryOp::Le, Operand::T(a), Operand::S(Scalar::Float(v)))
}
pub fn ne_scalar(a: &Tensor, v: f64) -> Result<Tensor> {
    compare(BinaryOp::Ne, Operand::T(a), Operand::S(Scalar::Float(v)))
}
pub fn logical_and(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    logical(BinaryOp::LogicalAnd, a, b)
}
