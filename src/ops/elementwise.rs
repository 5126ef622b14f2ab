//! Elementwise ops: broadcasting binary arithmetic, comparisons, where, clamp, casts and
//! clone (the unary ops are in `unary.rs`).

use super::creation::zeros_like;
use super::unary::{log, neg, unary_kernel};
use super::{Fresh, OperandShapes, Read, apply, apply_fresh, new_tensor, read_input};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::autograd::grad_mode::with_grad_mode;
use crate::autograd::graph::SavedTensor;
use crate::backend::UnaryOp;
use crate::backend::{self as k, BinaryOp};
use crate::dtype::{DType, ResultType, Scalar};
use crate::layout::Layout;
use crate::shape::broadcast_shapes;
use crate::storage::Buffer;
use crate::tensor::Tensor;
use crate::{Error, Result, saved};
use smallvec::SmallVec;
use std::borrow::Cow;

/// One operand of a binary op: a tensor, or a Python number (a "wrapped number" for
/// type promotion: it never widens a tensor's dtype within its category).
#[derive(Clone, Copy)]
pub enum Operand<'a> {
    T(&'a Tensor),
    S(Scalar),
}

/// `x`'s elements in row-major order, as a new buffer of its dtype (what `numpy()` and
/// `tensor(x)` copy out).
pub fn contiguous_buffer(x: &Tensor) -> Buffer {
    let s = x.snapshot();
    let r = s.storage.read();
    k::cast(&r, &s.layout, s.dtype)
}

/// A 0-d tensor holding `s` as `dtype`.
pub fn scalar_tensor(s: Scalar, dtype: DType) -> Tensor {
    new_tensor(Buffer::full(dtype, 1, s), &[])
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
    kernel: impl FnOnce(&[Layout]) -> Buffer,
) -> Result<Tensor> {
    match crate::layout::iter_output_order(shape, originals) {
        None => Ok(new_tensor(kernel(expanded), shape)),
        Some((order, strides)) => {
            let permuted = expanded
                .iter()
                .map(|l| l.permute(&order))
                .collect::<Result<Vec<_>>>()?;
            let buf = kernel(&permuted);
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
pub(super) fn unary_out(layout: &Layout, kernel: impl FnOnce(&Layout) -> Buffer) -> Result<Tensor> {
    elementwise_out(
        &layout.shape,
        &[layout],
        std::slice::from_ref(layout),
        |l| kernel(&l[0]),
    )
}

/// A copy of `layout`'s elements (`clone`, `to`) in torch's `preserve_format`: the input's
/// strides if it is dense, else dense strides in the input's memory order (torch's
/// `infer_dense_strides`, the one-operand case of `iter_output_order`). `kernel` as for
/// [`elementwise_out`].
fn preserving_format(layout: &Layout, kernel: impl FnOnce(&Layout) -> Buffer) -> Result<Tensor> {
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

/// `g * saved[i]`, as `mul` computes it; when nothing is recorded and both are
/// contiguous float tensors of one dtype and shape, straight from the kernel with the
/// saved data read under one lock (what `mul` would do, bit for bit).
fn mul_saved(ctx: &BackwardCtx<'_>, g: &Tensor, i: Option<u8>) -> Result<Tensor> {
    if !crate::autograd::grad_mode::is_grad_enabled() {
        let s = ctx.saved_data(saved_index(i)?)?;
        let sg = g.snapshot();
        if sg.dtype == s.dtype
            && sg.dtype.is_float()
            && sg.layout.shape == s.layout.shape
            && sg.layout.is_contiguous()
            && s.layout.is_contiguous()
        {
            let (rg, rs) = (sg.storage.read(), s.storage.read());
            let buf = k::binary(BinaryOp::Mul, &rg, &sg.layout, &rs, &s.layout);
            return Ok(new_tensor(buf, &sg.layout.shape));
        }
    }
    mul(g, &get(ctx, i)?)
}

// ---- casts and copies -----------------------------------------------------------------

/// `x.to(dtype)`: returns `x` itself when the dtype already matches, as torch does.
pub fn to_dtype(x: &Tensor, dtype: DType) -> Result<Tensor> {
    if x.dtype() == dtype {
        return Ok(x.clone());
    }
    let s = x.snapshot();
    let from = s.dtype;
    // (torch's `_to_copy` keeps the memory format)
    let fwd = || preserving_format(&s.layout, |l| k::cast(&s.storage.read(), l, dtype));
    if !dtype.is_float() {
        return super::apply_nondiff("aten::to", fwd);
    }
    apply("aten::to", &[x], fwd, |_| {
        (ToCopyBackward0 { from }, saved![])
    })
}

#[derive(Clone)]
pub struct ToCopyBackward0 {
    from: DType,
}
impl Backward for ToCopyBackward0 {
    fn name(&self) -> Cow<'static, str> {
        "ToCopyBackward0".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        Ok(smallvec::smallvec![Some(if self.from.is_float() {
            to_dtype(&g, self.from)?
        } else {
            g
        })])
    }
}

/// `x.clone()`: a contiguous copy with history (CloneBackward0).
pub fn clone_tensor(x: &Tensor) -> Result<Tensor> {
    clone_as(x, true)
}

/// A row-major copy of `x` (`contiguous()`), recorded as `clone`.
pub fn clone_row_major(x: &Tensor) -> Result<Tensor> {
    clone_as(x, false)
}

/// `clone()`: in x's memory format (torch's `preserve_format`) if `keep_format`.
fn clone_as(x: &Tensor, keep_format: bool) -> Result<Tensor> {
    let s = x.snapshot();
    crate::storage::alloc_guard_strided(&s.layout.shape, s.dtype)?;
    apply(
        "aten::clone",
        &[x],
        || {
            let copy = |l: &Layout| k::cast(&s.storage.read(), l, s.dtype);
            if keep_format {
                preserving_format(&s.layout, copy)
            } else {
                Ok(new_tensor(copy(&s.layout), &s.layout.shape))
            }
        },
        |_| (CloneBackward0, saved![]),
    )
}

/// A detached gradient for `var`'s `.grad`, in torch's "gradient layout contract": with
/// `var`'s strides if `var` is dense (row-major otherwise). `g` itself is reused when it is
/// the sole owner of its storage and already laid out so (torch's AccumulateGrad "steals"
/// such gradients too).
pub fn clone_detached_if_shared(g: Tensor, var: &Layout) -> Result<Tensor> {
    let keep =
        var.is_non_overlapping_and_dense() && !var.is_contiguous() && var.shape == g.layout().shape;
    let gl = g.layout();
    let laid_out = if keep {
        gl.strides == var.strides
    } else {
        gl.is_contiguous()
    };
    let sole =
        std::sync::Arc::strong_count(&g.0) == 1 && std::sync::Arc::strong_count(&g.storage()) == 1;
    if sole && laid_out && gl.offset == 0 && g.storage().len() == g.numel() {
        g.detach_();
        return Ok(g);
    }
    let s = g.snapshot();
    if !keep {
        return Ok(new_tensor(
            k::cast(&s.storage.read(), &s.layout, s.dtype),
            &s.layout.shape,
        ));
    }
    let mut order: Vec<i64> = (0..var.ndim() as i64).collect();
    order.sort_by(|&a, &b| var.strides[b as usize].cmp(&var.strides[a as usize]));
    let buf = k::cast(&s.storage.read(), &s.layout.permute(&order)?, s.dtype);
    let layout = Layout {
        shape: var.shape.clone(),
        strides: var.strides.clone(),
        offset: 0,
    };
    Ok(Tensor::from_storage(
        std::sync::Arc::new(crate::storage::Storage::new(buf)),
        layout,
        s.dtype,
    ))
}

#[derive(Clone)]
pub struct CloneBackward0;
impl Backward for CloneBackward0 {
    fn name(&self) -> Cow<'static, str> {
        "CloneBackward0".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(grad0(g)?)])
    }
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
        dtype = DType::F32;
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
/// The number gets no edge but keeps its position, as in torch (`(x * 2).grad_fn` has two `next_functions`, the
/// second `(None, 0)`).
fn scalar_fast_path<B: Into<super::BackwardOp>>(
    op: BinaryOp,
    t: &Tensor,
    s: Scalar,
    scalar_first: bool,
    node: impl FnOnce() -> B,
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
        op.aten_name(),
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
                op,
                &snap.storage.read(),
                &snap.layout,
                s.as_f64(),
                scalar_first,
            )
            .ok_or_else(|| {
                Error::Internal("scalar kernel refused a contiguous float tensor".into())
            })?;
            Ok(Fresh::new(buf, &snap.layout.shape))
        },
        |_| (node(), saved![]),
    ))
}

/// `x op y` for two contiguous float tensors of the same dtype and shape: no promotion,
/// no broadcasting, one read per input. Bitwise the same as the general path; `None`
/// when that is needed. `node` gets both operands with the version each was read at, and
/// which of them require grad.
fn same_shape_fast_path<B: Into<super::BackwardOp>>(
    op: BinaryOp,
    x: &Tensor,
    y: &Tensor,
    node: impl FnOnce([(&Tensor, u64, bool); 2]) -> (B, SmallVec<[SavedTensor; 2]>),
) -> Option<Result<Tensor>> {
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
    Some(apply_fresh(
        op.aten_name(),
        rx.requires_grad || ry.requires_grad,
        || smallvec::smallvec![rx.edge, ry.edge],
        || {
            let buf = if std::sync::Arc::ptr_eq(&sx.storage, &sy.storage) {
                let r = sx.storage.read();
                k::binary(op, &r, &sx.layout, &r, &sy.layout)
            } else {
                let (rx, ry) = (sx.storage.read(), sy.storage.read());
                k::binary(op, &rx, &sx.layout, &ry, &sy.layout)
            };
            Ok(Fresh::new(buf, &sx.layout.shape))
        },
        |_| node(operands),
    ))
}

/// Backward of `t * s` for a Python number `s` (torch's MulBackward0 with a number).
#[derive(Clone)]
pub struct MulScalarBackward {
    s: Scalar,
    /// Position of the tensor among the op's two operands.
    tensor_at: u8,
}
impl Backward for MulScalarBackward {
    fn name(&self) -> Cow<'static, str> {
        "MulBackward0".into()
    }
    // d(ts)/dt = s
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        ctx.check_saved_number()?; // torch saves s as a tensor
        let g = grad0(g)?;
        let at = usize::from(self.tensor_at);
        let gt = if ctx.needs_input_grad(at) {
            Some(mul_scalar(&g, self.s)?)
        } else {
            None
        };
        Ok(if at == 0 {
            smallvec::smallvec![gt, None]
        } else {
            smallvec::smallvec![None, gt]
        })
    }
}

/// Backward of `t / s` for a Python number `s` (torch's DivBackward0 with a number).
#[derive(Clone)]
pub struct DivScalarBackward {
    s: Scalar,
}
impl Backward for DivScalarBackward {
    fn name(&self) -> Cow<'static, str> {
        "DivBackward0".into()
    }
    // d(t/s)/dt = 1/s
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        ctx.check_saved_number()?; // torch saves s as a tensor
        let g = grad0(g)?;
        let gt = if ctx.needs_input_grad(0) {
            Some(div_scalar(&g, self.s)?)
        } else {
            None
        };
        Ok(smallvec::smallvec![gt, None])
    }
}

fn binary_kernel(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    broadcast_kernel(a, b, |ra, la, rb, lb| k::binary(op, ra, la, rb, lb))
}

/// `kernel` over `a` and `b` broadcast to one shape (their dtypes already promoted to
/// one), the output in the layout torch gives it.
pub(crate) fn broadcast_kernel(
    a: &Tensor,
    b: &Tensor,
    kernel: impl FnOnce(&Buffer, &Layout, &Buffer, &Layout) -> Buffer,
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
    if let (Operand::T(x), Operand::T(y)) = (a, b)
        && alpha == Scalar::Int(1)
    {
        let op = if subtract {
            BinaryOp::Sub
        } else {
            BinaryOp::Add
        };
        let node = |_: [(&Tensor, u64, bool); 2]| {
            (
                AddBackward0 {
                    shapes: OperandShapes::SAME,
                    alpha: if subtract { -1.0 } else { 1.0 },
                    subtract,
                },
                saved![],
            )
        };
        if let Some(r) = same_shape_fast_path(op, x, y, node) {
            return r;
        }
    }
    if let (Operand::T(t), Operand::S(s)) = (a, b)
        && alpha == Scalar::Int(1)
    {
        let op = if subtract {
            BinaryOp::Sub
        } else {
            BinaryOp::Add
        };
        let node = || AddBackward0 {
            shapes: OperandShapes::SAME,
            alpha: if subtract { -1.0 } else { 1.0 },
            subtract,
        };
        if let Some(r) = scalar_fast_path(op, t, s, false, node) {
            return r;
        }
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
    let op = if subtract {
        BinaryOp::Sub
    } else {
        BinaryOp::Add
    };
    apply(
        op.aten_name(),
        &[&a, &b],
        || binary_kernel(op, &a, &b_scaled),
        |out| {
            let alpha = if subtract {
                -alpha.as_f64()
            } else {
                alpha.as_f64()
            };
            (
                AddBackward0 {
                    shapes: OperandShapes::new(&a, &b, out),
                    alpha,
                    subtract,
                },
                saved![],
            )
        },
    )
}

/// Backward of `a + αb` and `a - αb` (SubBackward0 is the same node with α negated).
#[derive(Clone)]
pub struct AddBackward0 {
    shapes: OperandShapes,
    alpha: f64,
    subtract: bool,
}
impl Backward for AddBackward0 {
    fn name(&self) -> Cow<'static, str> {
        if self.subtract {
            "SubBackward0"
        } else {
            "AddBackward0"
        }
        .into()
    }
    // d(a + αb)/da = 1, /db = α
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let ga = if ctx.needs_input_grad(0) {
            Some(self.shapes.sum_to(&g, 0)?)
        } else {
            None
        };
        let gb = if ctx.needs_input_grad(1) {
            Some(self.shapes.sum_to(&scale(&g, self.alpha)?, 1)?)
        } else {
            None
        };
        Ok(smallvec::smallvec![ga, gb])
    }
}

/// `s - x` for a Python number s (torch's rsub; RsubBackward1).
pub fn rsub_scalar(x: &Tensor, s: Scalar) -> Result<Tensor> {
    check_sub_operands(Operand::S(s), Operand::T(x))?;
    let (sv, xt, _) = promote(Operand::S(s), Operand::T(x), false)?;
    apply(
        "aten::rsub",
        &[&xt],
        || binary_kernel(BinaryOp::Sub, &sv, &xt),
        |_| (RsubBackward1, saved![]),
    )
}

#[derive(Clone)]
pub struct RsubBackward1;
impl Backward for RsubBackward1 {
    fn name(&self) -> Cow<'static, str> {
        "RsubBackward1".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(neg(&grad0(g)?)?)])
    }
}

/// `g * alpha` (skips the op for alpha == 1).
fn scale(g: &Tensor, alpha: f64) -> Result<Tensor> {
    if alpha == 1.0 {
        Ok(g.clone())
    } else {
        mul_scalar(g, Scalar::Float(alpha))
    }
}

/// `a * b`.
pub fn mul_op(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    let fast = match (a, b) {
        (Operand::T(t), Operand::S(s)) => scalar_fast_path(BinaryOp::Mul, t, s, false, || {
            MulScalarBackward { s, tensor_at: 0 }
        }),
        (Operand::S(s), Operand::T(t)) => scalar_fast_path(BinaryOp::Mul, t, s, true, || {
            MulScalarBackward { s, tensor_at: 1 }
        }),
        (Operand::T(x), Operand::T(y)) => same_shape_fast_path(BinaryOp::Mul, x, y, |[x, y]| {
            let mut s = Saver::default();
            let sa = s.input_read(y.2, x.0, x.1);
            let sb = s.input_read(x.2, y.0, y.1);
            (
                MulBackward0 {
                    shapes: OperandShapes::SAME,
                    a: sa,
                    b: sb,
                },
                s.list,
            )
        }),
        _ => None,
    };
    if let Some(r) = fast {
        return r;
    }
    let (a, b, _) = promote(a, b, false)?;
    apply(
        "aten::mul",
        &[&a, &b],
        || binary_kernel(BinaryOp::Mul, &a, &b),
        |out| {
            let mut s = Saver::default();
            let sa = s.input_if(b.requires_grad(), &a);
            let sb = s.input_if(a.requires_grad(), &b);
            (
                MulBackward0 {
                    shapes: OperandShapes::new(&a, &b, out),
                    a: sa,
                    b: sb,
                },
                s.list,
            )
        },
    )
}

#[derive(Clone)]
pub struct MulBackward0 {
    shapes: OperandShapes,
    a: Option<u8>,
    b: Option<u8>,
}
impl Backward for MulBackward0 {
    fn name(&self) -> Cow<'static, str> {
        "MulBackward0".into()
    }
    // d(ab)/da = b, d(ab)/db = a
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let ga = if ctx.needs_input_grad(0) {
            Some(self.shapes.sum_to(&mul_saved(ctx, &g, self.b)?, 0)?)
        } else {
            None
        };
        let gb = if ctx.needs_input_grad(1) {
            Some(self.shapes.sum_to(&mul_saved(ctx, &g, self.a)?, 1)?)
        } else {
            None
        };
        Ok(smallvec::smallvec![ga, gb])
    }
}

/// `a / b` (true division: integer inputs give float32).
pub fn div_op(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    if let (Operand::T(t), Operand::S(s)) = (a, b)
        && let Some(r) = scalar_fast_path(BinaryOp::Div, t, s, false, || DivScalarBackward { s })
    {
        return r;
    }
    let (a, b, _) = promote(a, b, true)?;
    apply(
        "aten::div",
        &[&a, &b],
        || binary_kernel(BinaryOp::Div, &a, &b),
        |out| {
            let mut s = Saver::default();
            let sa = s.input_if(b.requires_grad(), &a);
            let sb = s.input_if(true, &b);
            (
                DivBackward0 {
                    shapes: OperandShapes::new(&a, &b, out),
                    a: sa,
                    b: sb,
                },
                s.list,
            )
        },
    )
}

#[derive(Clone)]
pub struct DivBackward0 {
    shapes: OperandShapes,
    a: Option<u8>,
    b: Option<u8>,
}
impl Backward for DivBackward0 {
    fn name(&self) -> Cow<'static, str> {
        "DivBackward0".into()
    }
    // d(a/b)/da = 1/b, d(a/b)/db = -a/b²
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let b = get(ctx, self.b)?;
        let ga = if ctx.needs_input_grad(0) {
            Some(self.shapes.sum_to(&div(&g, &b)?, 0)?)
        } else {
            None
        };
        let gb = if ctx.needs_input_grad(1) {
            let a = get(ctx, self.a)?;
            Some(
                self.shapes
                    .sum_to(&neg(&div(&mul(&g, &a)?, &mul(&b, &b)?)?)?, 1)?,
            )
        } else {
            None
        };
        Ok(smallvec::smallvec![ga, gb])
    }
}

/// `a ** b` for tensor/tensor, tensor/number and number/tensor.
pub fn pow_op(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    // torch: a bool tensor to the power of a bool tensor has no kernel (a Python bool
    // exponent is fine)
    let bool_tensor = |o: &Operand<'_>| matches!(o, Operand::T(t) if t.dtype() == DType::Bool);
    if let (Operand::T(x), Operand::T(y)) = (a, b) {
        // torch finds shapes that do not broadcast first
        broadcast_shapes(&x.shape(), &y.shape())?;
    }
    if bool_tensor(&a) && bool_tensor(&b) {
        return Err(Error::not_implemented("\"pow\" not implemented for 'Bool'"));
    }
    match (a, b) {
        (Operand::T(x), Operand::S(e)) => {
            if !x.dtype().is_float()
                && e.category() == crate::dtype::Category::Int
                && e.as_f64() < 0.0
            {
                return Err(Error::runtime(
                    "Integers to negative integer powers are not allowed.",
                ));
            }
            let (xt, et, _) = promote(a, b, false)?;
            // torch computes these powers with sqrt/rsqrt (so (-inf)^0.5 is nan, not C pow's inf)
            let special = match e.as_f64() {
                0.5 if xt.dtype().is_float() => Some(UnaryOp::Sqrt),
                -0.5 if xt.dtype().is_float() => Some(UnaryOp::Rsqrt),
                -1.0 if xt.dtype().is_float() => Some(UnaryOp::Reciprocal),
                _ => None,
            };
            apply(
                "aten::pow",
                &[&xt],
                || match special {
                    Some(op) => unary_kernel(op, &xt),
                    None => {
                        // a contiguous float base: the number kernel (small integer
                        // powers as products, as torch computes them)
                        let sx = xt.snapshot();
                        let row_major = crate::layout::iter_output_order(
                            &sx.layout.shape,
                            &[&sx.layout, &Layout::contiguous(&[])],
                        )
                        .is_none();
                        let buf = (sx.dtype.is_float() && row_major).then(|| {
                            k::binary_scalar(
                                BinaryOp::Pow,
                                &sx.storage.read(),
                                &sx.layout,
                                e.as_f64(),
                                false,
                            )
                        });
                        match buf.flatten() {
                            Some(buf) => Ok(new_tensor(buf, &sx.layout.shape)),
                            None => binary_kernel(BinaryOp::Pow, &xt, &et),
                        }
                    }
                },
                |_| {
                    let mut s = Saver::default();
                    let xi = s.input_if(true, &xt);
                    (
                        PowBackward0 {
                            exponent: e.as_f64(),
                            x: xi,
                            bool_exponent: matches!(e, Scalar::Bool(_)),
                        },
                        s.list,
                    )
                },
            )
        }
        (Operand::S(base), Operand::T(_)) => {
            let (bt, xt, _) = promote(a, b, false)?;
            apply(
                "aten::pow",
                &[&xt],
                || binary_kernel(BinaryOp::Pow, &bt, &xt),
                |y| {
                    let mut s = Saver::default();
                    let yi = s.output(y);
                    (
                        PowBackward2 {
                            base: base.as_f64(),
                            y: yi,
                        },
                        s.list,
                    )
                },
            )
        }
        _ => {
            let bool_exponent = matches!(b, Operand::T(t) if t.dtype() == DType::Bool);
            let (at, bt, _) = promote(a, b, false)?;
            apply(
                "aten::pow",
                &[&at, &bt],
                || binary_kernel(BinaryOp::Pow, &at, &bt),
                |y| {
                    let mut s = Saver::default();
                    let ai = s.input_if(true, &at);
                    let bi = s.input_if(true, &bt);
                    let yi = s.output(y);
                    (
                        PowBackward1 {
                            shapes: OperandShapes::new(&at, &bt, y),
                            a: ai,
                            b: bi,
                            y: yi,
                            bool_exponent,
                        },
                        s.list,
                    )
                },
            )
        }
    }
}

#[derive(Clone)]
pub struct PowBackward0 {
    exponent: f64,
    x: Option<u8>,
    /// The exponent was a Python bool: torch's `exponent == 0` test is false for a bool
    /// scalar, so `False` takes the general formula (0·x⁻¹, NaN at 0 and NaN).
    bool_exponent: bool,
}
impl Backward for PowBackward0 {
    fn name(&self) -> Cow<'static, str> {
        "PowBackward0".into()
    }
    // d xᵉ/dx = e·xᵉ⁻¹ (0 when e == 0)
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        if self.exponent == 0.0 && !self.bool_exponent {
            return Ok(smallvec::smallvec![Some(zeros_like(&g)?)]);
        }
        let x = get(ctx, self.x)?;
        let d = mul_scalar(
            &pow_scalar(&x, Scalar::Float(self.exponent - 1.0))?,
            Scalar::Float(self.exponent),
        )?;
        Ok(smallvec::smallvec![Some(mul(&g, &d)?)])
    }
}

#[derive(Clone)]
pub struct PowBackward1 {
    shapes: OperandShapes,
    a: Option<u8>,
    b: Option<u8>,
    y: u8,
    /// The exponent was a bool tensor: torch's formula computes `b - 1` with it, which
    /// refuses bool.
    bool_exponent: bool,
}
impl Backward for PowBackward1 {
    fn name(&self) -> Cow<'static, str> {
        "PowBackward1".into()
    }
    // d aᵇ/da = b·aᵇ⁻¹; d aᵇ/db = aᵇ·ln a (taken as 0 where a == 0 and b >= 0, as torch)
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let (a, b) = (get(ctx, self.a)?, get(ctx, self.b)?);
        let ga = if ctx.needs_input_grad(0) {
            // torch: where(b == 0, 0, g·b·aᵇ⁻¹), so 0⁰ (whose aᵇ⁻¹ is inf) gives 0, not NaN;
            // its `b - 1` refuses a bool exponent
            if self.bool_exponent {
                let bool_b = Tensor::from_buffer(Buffer::Bool(vec![]), &[0]);
                check_sub_operands(Operand::T(&bool_b), Operand::S(Scalar::Int(1)))?;
            }
            let d = mul(&b, &pow(&a, &sub_scalar(&b, Scalar::Float(1.0))?)?)?;
            let gd = mul(&g, &d)?;
            let gd = where_(&eq_scalar(&b, 0.0)?, &zeros_like(&gd)?, &gd)?;
            Some(self.shapes.sum_to(&gd, 0)?)
        } else {
            None
        };
        let gb = if ctx.needs_input_grad(1) {
            let y = ctx.saved(self.y as usize)?;
            let d = mul(&y, &log(&a)?)?;
            let zero_base = logical_and(&eq_scalar(&a, 0.0)?, &ge_scalar(&b, 0.0)?)?;
            let d = where_(&zero_base, &zeros_like(&d)?, &d)?;
            Some(self.shapes.sum_to(&mul(&g, &d)?, 1)?)
        } else {
            None
        };
        Ok(smallvec::smallvec![ga, gb])
    }
}

#[derive(Clone)]
pub struct PowBackward2 {
    base: f64,
    y: u8,
}
impl Backward for PowBackward2 {
    fn name(&self) -> Cow<'static, str> {
        "PowBackward2".into()
    }
    // d sˣ/dx = sˣ·ln s
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let y = ctx.saved(self.y as usize)?;
        Ok(smallvec::smallvec![Some(mul(
            &grad0(g)?,
            &mul_scalar(&y, Scalar::Float(self.base.ln()))?
        )?)])
    }
}

/// torch.maximum / torch.minimum.
pub fn extremum(a: &Tensor, b: &Tensor, is_max: bool) -> Result<Tensor> {
    let (a, b, _) = promote(Operand::T(a), Operand::T(b), false)?;
    let op = if is_max {
        BinaryOp::Maximum
    } else {
        BinaryOp::Minimum
    };
    apply(
        if is_max {
            "aten::maximum"
        } else {
            "aten::minimum"
        },
        &[&a, &b],
        || binary_kernel(op, &a, &b),
        |out| {
            let mut s = Saver::default();
            let ai = s.input_if(true, &a);
            let bi = s.input_if(true, &b);
            if is_max {
                (
                    MaximumBackward0 {
                        shapes: OperandShapes::new(&a, &b, out),
                        a: ai,
                        b: bi,
                    }
                    .into_op(),
                    s.list,
                )
            } else {
                (
                    MinimumBackward0(MaximumBackward0 {
                        shapes: OperandShapes::new(&a, &b, out),
                        a: ai,
                        b: bi,
                    })
                    .into_op(),
                    s.list,
                )
            }
        },
    )
}

#[derive(Clone)]
pub struct MaximumBackward0 {
    shapes: OperandShapes,
    a: Option<u8>,
    b: Option<u8>,
}
impl MaximumBackward0 {
    fn into_op(self) -> crate::autograd::function::BackwardOp {
        self.into()
    }
    // derivatives.yaml: each side gets `where(a == b, grad / 2, grad).masked_fill_(loses, 0)`:
    // the winner gets the gradient, ties split it, where either is NaN (no order) both get
    // all of it, and a loser gets 0 even where the gradient is NaN or infinite.
    fn grads(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>], is_max: bool) -> Result<Grads> {
        let g = grad0(g)?;
        let (a, b) = (get(ctx, self.a)?, get(ctx, self.b)?);
        let shared = where_(&eq(&a, &b)?, &mul_scalar(&g, Scalar::Float(0.5))?, &g)?;
        let side = |loses: Tensor, i: usize| -> Result<Tensor> {
            let gi = super::masked_fill(&shared, &loses, Scalar::Float(0.0))?;
            self.shapes.sum_to(&gi, i)
        };
        let ga = if ctx.needs_input_grad(0) {
            Some(side(if is_max { lt(&a, &b)? } else { gt(&a, &b)? }, 0)?)
        } else {
            None
        };
        let gb = if ctx.needs_input_grad(1) {
            Some(side(if is_max { gt(&a, &b)? } else { lt(&a, &b)? }, 1)?)
        } else {
            None
        };
        Ok(smallvec::smallvec![ga, gb])
    }
}
impl Backward for MaximumBackward0 {
    fn name(&self) -> Cow<'static, str> {
        "MaximumBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.grads(ctx, g, true)
    }
}

#[derive(Clone)]
pub struct MinimumBackward0(MaximumBackward0);
impl MinimumBackward0 {
    fn into_op(self) -> crate::autograd::function::BackwardOp {
        self.into()
    }
}
impl Backward for MinimumBackward0 {
    fn name(&self) -> Cow<'static, str> {
        "MinimumBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.0.grads(ctx, g, false)
    }
}

/// Integer division and remainder refuse a zero divisor, as torch does.
fn check_int_divisor(b: &Tensor) -> Result<()> {
    if b.dtype() == DType::I64 && super::any_true(&eq_scalar(b, 0.0)?)? {
        return Err(Error::runtime("ZeroDivisionError"));
    }
    Ok(())
}

fn division_operands(a: Operand<'_>, b: Operand<'_>, what: &str) -> Result<(Tensor, Tensor)> {
    if let (Operand::T(x), Operand::T(y)) = (a, b) {
        // torch finds shapes that do not broadcast before the dtype it has no kernel for
        broadcast_shapes(&x.shape(), &y.shape())?;
    }
    let (a, b, dtype) = promote(a, b, false)?;
    if dtype == DType::Bool {
        return Err(Error::not_implemented(format!(
            "\"{what}\" not implemented for 'Bool'"
        )));
    }
    // (torch's kernel raises on the first zero it divides by: an empty result has none)
    if crate::shape::numel(&broadcast_shapes(&a.shape(), &b.shape())?) > 0 {
        check_int_divisor(&b)?;
    }
    Ok((a, b))
}

/// `a % b` with the sign of `b` (torch.remainder; Python's `%`).
pub fn remainder_op(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    mod_op(a, b, true)
}

/// `fmod(a, b)`: C's remainder, with the sign of `a`.
pub fn fmod_op(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    mod_op(a, b, false)
}

fn mod_op(a: Operand<'_>, b: Operand<'_>, python_style: bool) -> Result<Tensor> {
    let (a, b) = division_operands(
        a,
        b,
        if python_style {
            "remainder_cpu"
        } else {
            "fmod_cpu"
        },
    )?;
    let op = if python_style {
        BinaryOp::Remainder
    } else {
        BinaryOp::Fmod
    };
    apply(
        op.aten_name(),
        &[&a, &b],
        || binary_kernel(op, &a, &b),
        |out| {
            let mut s = Saver::default();
            let ai = s.input_if(b.requires_grad(), &a);
            let bi = s.input_if(b.requires_grad(), &b);
            (
                RemainderBackward0 {
                    shapes: OperandShapes::new(&a, &b, out),
                    a: ai,
                    b: bi,
                    python_style,
                },
                s.list,
            )
        },
    )
}

#[derive(Clone)]
pub struct RemainderBackward0 {
    shapes: OperandShapes,
    a: Option<u8>,
    b: Option<u8>,
    python_style: bool,
}
impl Backward for RemainderBackward0 {
    fn name(&self) -> Cow<'static, str> {
        if self.python_style {
            "RemainderBackward0"
        } else {
            "FmodBackward0"
        }
        .into()
    }
    // r = a - b·q with q = floor(a/b) (remainder) or trunc(a/b) (fmod), piecewise constant:
    // dr/da = 1, dr/db = -q
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let ga = if ctx.needs_input_grad(0) {
            Some(self.shapes.sum_to(&g, 0)?)
        } else {
            None
        };
        let gb = if ctx.needs_input_grad(1) {
            let (a, b) = (get(ctx, self.a)?, get(ctx, self.b)?);
            let op = if self.python_style {
                BinaryOp::FloorDiv
            } else {
                BinaryOp::TruncDiv
            };
            let q = with_grad_mode(false, || binary_kernel(op, &a.detach(), &b.detach()))?;
            Some(self.shapes.sum_to(&neg(&mul(&g, &q)?)?, 1)?)
        } else {
            None
        };
        Ok(smallvec::smallvec![ga, gb])
    }
}

/// `div(a, b, rounding_mode="floor" | "trunc")` (`a // b` is the floor form). The result
/// is piecewise constant, so its gradient is zero, as in torch.
pub fn div_rounded(a: Operand<'_>, b: Operand<'_>, floor: bool) -> Result<Tensor> {
    let (a, b) = division_operands(a, b, "div_floor_cpu")?;
    let op = if floor {
        BinaryOp::FloorDiv
    } else {
        BinaryOp::TruncDiv
    };
    apply(
        "aten::div",
        &[&a, &b],
        || binary_kernel(op, &a, &b),
        |out| {
            // torch's formula names other (and self), so it saves them, and reports them
            // modified in place, though the gradient is zero
            let mut sv = Saver::default();
            sv.input_if(a.requires_grad(), &b);
            sv.input_if(b.requires_grad(), &a);
            (
                ZeroGradBackward {
                    shapes: OperandShapes::new(&a, &b, out),
                    name: "DivBackward2",
                },
                sv.list,
            )
        },
    )
}

/// `a // b` (torch.floor_divide): torch gives it no derivative, so its node raises when
/// backward reaches it (`div(..., rounding_mode="floor")` is the differentiable form).
pub fn floor_divide(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    let (a, b) = division_operands(a, b, "div_floor_cpu")?;
    apply(
        "aten::floor_divide",
        &[&a, &b],
        || binary_kernel(BinaryOp::FloorDiv, &a, &b),
        |_| {
            (
                NotImplementedBackward {
                    op: "aten::floor_divide",
                },
                saved![],
            )
        },
    )
}

/// `s // x` and `s % x` with a number on the left (Python's reflected `//` and `%`).
/// torch records these as the Scalar-Tensor overloads, whose derivative it does not
/// implement: a `NotImplemented` node over `x` alone, so that `1.7 % x` records a graph
/// and backward through it fails, as in torch.
pub fn rfloor_divide_scalar(x: &Tensor, s: Scalar) -> Result<Tensor> {
    reflected_not_differentiable(
        x,
        s,
        BinaryOp::FloorDiv,
        "div_floor_cpu",
        "aten::floor_divide",
    )
}

/// `s % x` (see [`rfloor_divide_scalar`]).
pub fn rremainder_scalar(x: &Tensor, s: Scalar) -> Result<Tensor> {
    reflected_not_differentiable(
        x,
        s,
        BinaryOp::Remainder,
        "remainder_cpu",
        "aten::remainder",
    )
}

fn reflected_not_differentiable(
    x: &Tensor,
    s: Scalar,
    op: BinaryOp,
    kernel: &str,
    aten: &'static str,
) -> Result<Tensor> {
    let (sv, xt) = division_operands(Operand::S(s), Operand::T(x), kernel)?;
    apply(
        op.aten_name(),
        &[&xt],
        || binary_kernel(op, &sv, &xt),
        |_| (NotImplementedBackward { op: aten }, saved![]),
    )
}

/// The node of an op torch does not differentiate: backward through it is an error.
#[derive(Clone)]
pub struct NotImplementedBackward {
    op: &'static str,
}
impl Backward for NotImplementedBackward {
    fn name(&self) -> Cow<'static, str> {
        "NotImplemented".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, _g: &[Option<Tensor>]) -> Result<Grads> {
        Err(Error::runtime(format!(
            "derivative for {} is not implemented",
            self.op
        )))
    }
}

/// A node whose inputs get zero gradients (piecewise-constant ops).
#[derive(Clone)]
pub struct ZeroGradBackward {
    shapes: OperandShapes,
    name: &'static str,
}
impl Backward for ZeroGradBackward {
    fn name(&self) -> Cow<'static, str> {
        self.name.into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let z = |i: usize| -> Result<Option<Tensor>> {
            if ctx.needs_input_grad(i) {
                Ok(Some(super::zeros(&self.shapes.shape(&g, i), g.dtype())?))
            } else {
                Ok(None)
            }
        };
        Ok(smallvec::smallvec![z(0)?, z(1)?])
    }
}

/// Comparison (no grad): returns a bool tensor.
pub fn compare(op: BinaryOp, a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    // (casts inside the kernel, as torch's TensorIterator: no autograd, so an input's
    // history is never read, nor a stale view's re-derived)
    let (a, b, _) = with_grad_mode(false, || promote(a, b, false))?;
    super::apply_nondiff(op.aten_name(), || binary_kernel(op, &a, &b))
}

/// Logical and/or of two tensors (no grad).
pub fn logical(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (a, b) = with_grad_mode(false, || {
        Ok::<_, Error>((to_dtype(a, DType::Bool)?, to_dtype(b, DType::Bool)?))
    })?;
    super::apply_nondiff(op.aten_name(), || binary_kernel(op, &a, &b))
}

/// `a & b`: bitwise AND of integer or bool tensors and numbers (torch.bitwise_and).
pub fn bitwise_and(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    bitwise(BinaryOp::BitAnd, a, b, "bitwise_and_cpu")
}
/// `a | b` (torch.bitwise_or).
pub fn bitwise_or(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    bitwise(BinaryOp::BitOr, a, b, "bitwise_or_cpu")
}
/// `a ^ b` (torch.bitwise_xor).
pub fn bitwise_xor(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    bitwise(BinaryOp::BitXor, a, b, "bitwise_xor_cpu")
}

fn bitwise(op: BinaryOp, a: Operand<'_>, b: Operand<'_>, kernel: &str) -> Result<Tensor> {
    let (a, b, dtype) = with_grad_mode(false, || promote(a, b, false))?;
    if dtype.is_float() {
        return Err(Error::not_implemented(format!(
            "\"{kernel}\" not implemented for 'Float'"
        )));
    }
    super::apply_nondiff(op.aten_name(), || binary_kernel(op, &a, &b))
}

/// `where(cond, a, b)`.
pub fn where_op(cond: &Tensor, a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    where_as(cond, a, b, true)
}

/// `where` with a row-major result (masked_fill's: torch's is not in the input's format).
pub(crate) fn where_row_major(c: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    where_as(c, Operand::T(a), Operand::T(b), false)
}

fn where_as(cond: &Tensor, a: Operand<'_>, b: Operand<'_>, keep_format: bool) -> Result<Tensor> {
    if cond.dtype() != DType::Bool {
        return Err(Error::runtime(format!(
            "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
            pretty_dtype(cond.dtype())
        )));
    }
    let (a, b, _) = promote(a, b, false)?;
    apply(
        "aten::where",
        &[&a, &b],
        || {
            let (sc, sa, sb) = (cond.snapshot(), a.snapshot(), b.snapshot());
            let shape = broadcast_shapes(
                &broadcast_shapes(&sc.layout.shape, &sa.layout.shape)?,
                &sb.layout.shape,
            )?;
            super::creation::guard(&shape, sa.dtype)?;
            let expanded = [
                sc.layout.expand(&shape)?,
                sa.layout.expand(&shape)?,
                sb.layout.expand(&shape)?,
            ];
            let (rc, ra, rb) = (sc.storage.read(), sa.storage.read(), sb.storage.read());
            if rc.dtype() != DType::Bool {
                return Err(Error::Internal("where: condition is not bool".into()));
            }
            k::check_same_device(&[&rc, &ra, &rb])?;
            let kernel = |l: &[Layout]| k::where_(&rc, &l[0], &ra, &l[1], &rb, &l[2]);
            if keep_format {
                elementwise_out(
                    &shape,
                    &[&sc.layout, &sa.layout, &sb.layout],
                    &expanded,
                    kernel,
                )
            } else {
                Ok(new_tensor(kernel(&expanded), &shape))
            }
        },
        |out| {
            let mut s = Saver::default();
            s.input_if(true, cond);
            (
                WhereBackward0 {
                    shapes: OperandShapes::new(&a, &b, out),
                },
                s.list,
            )
        },
    )
}

fn pretty_dtype(d: DType) -> String {
    let n = d.name();
    let mut c = n.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

#[derive(Clone)]
pub struct WhereBackward0 {
    shapes: OperandShapes,
}
impl Backward for WhereBackward0 {
    fn name(&self) -> Cow<'static, str> {
        "WhereBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let c = ctx.saved(0)?;
        let z = zeros_like(&g)?;
        let ga = if ctx.needs_input_grad(0) {
            Some(self.shapes.sum_to(&where_(&c, &g, &z)?, 0)?)
        } else {
            None
        };
        let gb = if ctx.needs_input_grad(1) {
            Some(self.shapes.sum_to(&where_(&c, &z, &g)?, 1)?)
        } else {
            None
        };
        Ok(smallvec::smallvec![ga, gb])
    }
}

/// `clamp(x, min, max)` with number bounds.
pub fn clamp(x: &Tensor, min: Option<Scalar>, max: Option<Scalar>) -> Result<Tensor> {
    if min.is_none() && max.is_none() {
        return Err(Error::runtime(
            "torch.clamp: At least one of 'min' or 'max' must not be None",
        ));
    }
    // The bounds take part in type promotion, as numbers do: an int tensor clamped to
    // 0.5 is float32, a bool tensor clamped to 0 is int64.
    let dtype = [min, max]
        .into_iter()
        .flatten()
        .fold(ResultType::default().tensor(x.dtype(), x.ndim()), |r, s| {
            r.scalar(s)
        })
        .finish();
    if dtype == DType::Bool {
        let kernel = match (min, max) {
            (Some(_), None) => "clamp_min_scalar_cpu",
            (None, Some(_)) => "clamp_max_scalar_cpu",
            _ => "clamp_scalar_cpu",
        };
        return Err(Error::not_implemented(format!(
            "\"{kernel}\" not implemented for 'Bool'"
        )));
    }
    let promoted;
    let x = if dtype == x.dtype() {
        x
    } else {
        promoted = to_dtype(x, dtype)?;
        &promoted
    };
    let (min, max) = (min.map(Scalar::as_f64), max.map(Scalar::as_f64));
    let s = x.snapshot();
    apply(
        "aten::clamp",
        &[x],
        || unary_out(&s.layout, |l| k::clamp(&s.storage.read(), l, min, max)),
        |_| {
            let mut sv = Saver::default();
            sv.input_if(true, x);
            (ClampBackward1 { min, max }, sv.list)
        },
    )
}

/// `clamp(x, min, max)` with tensor bounds (broadcast): `minimum(maximum(x, min), max)`,
/// which routes the gradient as torch 2.15 does: to x strictly inside, to a bound where
/// it was taken, split in half between x and a bound it equals.
pub fn clamp_tensor(x: &Tensor, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<Tensor> {
    if min.is_none() && max.is_none() {
        return Err(Error::runtime(
            "torch.clamp: At least one of 'min' or 'max' must not be None",
        ));
    }
    let mut r = x.clone();
    if let Some(lo) = min {
        r = maximum(&r, lo)?;
    }
    if let Some(hi) = max {
        r = minimum(&r, hi)?;
    }
    Ok(r)
}

#[derive(Clone)]
pub struct ClampBackward1 {
    min: Option<f64>,
    max: Option<f64>,
}
impl Backward for ClampBackward1 {
    fn name(&self) -> Cow<'static, str> {
        "ClampBackward1".into()
    }
    // gradient passes where min < x < max: torch 2.15 gives 0 on a bound (and at NaN)
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let x = ctx.saved(0)?;
        let mut mask: Option<Tensor> = None;
        if let Some(lo) = self.min {
            mask = Some(gt_scalar(&x, lo)?);
        }
        if let Some(hi) = self.max {
            let m = lt_scalar(&x, hi)?;
            mask = Some(match mask {
                Some(a) => logical_and(&a, &m)?,
                None => m,
            });
        }
        let mask = mask.ok_or_else(|| Error::Internal("clamp without bounds".into()))?;
        Ok(smallvec::smallvec![Some(masked_grad(
            &g,
            &x,
            &mask,
            "ClampBackwardBackward0"
        )?)])
    }
}

/// `g·mask` where `mask` was computed from `x` (relu's and clamp's backward). Like torch's
/// threshold_backward it is recorded as a function of both `g` and `x`, with a zero
/// derivative for `x`, so under create_graph the result requires grad whenever `x` does
/// (a second `grad()` then gives zeros instead of raising).
pub fn masked_grad(g: &Tensor, x: &Tensor, mask: &Tensor, name: &'static str) -> Result<Tensor> {
    let m = to_dtype(mask, g.dtype())?;
    apply(
        name,
        &[g, x],
        // a select, not a product, as torch's threshold_backward and clamp_backward: an
        // infinite gradient where the mask is off gives 0, not NaN
        || with_grad_mode(false, || where_(mask, &g.detach(), &zeros_like(g)?)),
        |_| {
            let mut s = Saver::default();
            s.input_if(true, &m);
            (MaskedGradBackward { name }, s.list)
        },
    )
}

#[derive(Clone)]
pub struct MaskedGradBackward {
    name: &'static str,
}
impl Backward for MaskedGradBackward {
    fn name(&self) -> Cow<'static, str> {
        self.name.into()
    }
    // d(g·m)/dg = m; d/dx = 0 (the mask is piecewise constant in x)
    fn apply(&self, ctx: &BackwardCtx<'_>, grads: &[Option<Tensor>]) -> Result<Grads> {
        let gg = grad0(grads)?;
        let dg = if ctx.needs_input_grad(0) {
            Some(mul(&gg, &ctx.saved(0)?)?)
        } else {
            None
        };
        let dx = if ctx.needs_input_grad(1) {
            Some(zeros_like(&gg)?)
        } else {
            None
        };
        Ok(smallvec::smallvec![dg, dx])
    }
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
pub fn logical_and(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    logical(BinaryOp::LogicalAnd, a, b)
}
pub fn maximum(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    extremum(a, b, true)
}
pub fn minimum(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    extremum(a, b, false)
}
