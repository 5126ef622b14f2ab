//! The elementwise unary ops, all from the op table (`table.rs`): dtype rules, what the
//! node saves, its name, and the recorded backward from the row's `df` written over
//! tensors. Nothing here is specific to one op but `logical_not` (not differentiable,
//! no row) and the derivative helpers that torch records as one op (`tanh_backward`).

use super::elementwise::{Saver, get, grad0, unary_out};
use super::{Fresh, Read, apply, apply_fresh, new_tensor, read_input};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::backend as k;
use crate::backend::{Calc, UnaryOp};
use crate::dtype::{DType, Scalar};
use crate::tensor::{Snapshot, Tensor};
use crate::{Error, Result};
use std::borrow::Cow;

/// What a row's node saves for its derivative.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Saves {
    Input,
    Output,
    None,
}

/// How a row treats int64 (and bool) inputs.
#[derive(Clone, Copy)]
enum Ints {
    /// computed in float32
    Promote,
    /// kept: an integer kernel (bool inputs: the identity, unless `bool` refuses them)
    Keep,
    /// refused: torch has no such kernel (`"kernel" not implemented for 'Long'`)
    Refuse(&'static str),
}

/// The facts of one row the op layer needs, by op.
struct Row {
    name: &'static str,
    /// torch's op name (`aten::exp`)
    aten: &'static str,
    node: &'static str,
    ints: Ints,
    bool_msg: Option<&'static str>,
    saves: Saves,
    /// the node of the in-place form when torch has no derivative for it
    inplace_not_implemented: Option<&'static str>,
}

macro_rules! inplace_rule {
    (recorded) => {
        None
    };
    (not_implemented($node:literal)) => {
        Some($node)
    };
}

macro_rules! ints_rule {
    (promote) => {
        Ints::Promote
    };
    (keep $args:tt) => {
        Ints::Keep
    };
    (refuse($k:literal)) => {
        Ints::Refuse($k)
    };
}

macro_rules! saves_rule {
    (input) => {
        Saves::Input
    };
    (output) => {
        Saves::Output
    };
    (none) => {
        Saves::None
    };
}

/// `df` over tensors: the arm of a row, given the gradient and the saved tensor.
macro_rules! recorded_df {
    (none, $g:ident, $s:ident, |$gv:ident| $df:expr) => {{
        let _ = $s;
        let $gv = $g;
        $df
    }};
    ($saves:ident, $g:ident, $s:ident, |$gv:ident, $sv:ident| $df:expr) => {{
        let $gv = $g;
        let $sv =
            &$s.ok_or_else(|| Error::Internal("unary backward: saved value missing".into()))?;
        $df
    }};
}

macro_rules! op_layer {
    ($($name:ident $name_:ident $V:ident $node:literal {
        ints: $ints:ident $(($($iargs:tt)*))?, bool: $bool:expr,
        f: |$x:ident| $f:expr,
        df($saves:ident): |$g:ident $(, $s:ident)?| $df:expr,
        inplace: $inplace:ident $(($inode:literal))?,
        doc: $doc:literal,
    })*) => {
        fn row(op: UnaryOp) -> Row {
            match op {
                $(UnaryOp::$V => Row {
                    name: stringify!($name),
                    aten: concat!("aten::", stringify!($name)),
                    node: $node,
                    inplace_not_implemented: inplace_rule!($inplace $(($inode))?),
                    ints: ints_rule!($ints $(($($iargs)*))?),
                    bool_msg: $bool,
                    saves: saves_rule!($saves),
                },)*
            }
        }

        /// The row's `df` over tensors: the recorded gradient `g·f'(x)` (`s` is the saved
        /// input or output).
        fn recorded(op: UnaryOp, g: &Tensor, s: Option<Tensor>) -> Result<Tensor> {
            match op {
                $(UnaryOp::$V => recorded_df!($saves, g, s, |$g $(, $s)?| $df),)*
            }
        }

        $(#[doc = concat!("`torch.", stringify!($name), "`: ", $doc)]
        pub fn $name(x: &Tensor) -> Result<Tensor> {
            unary(UnaryOp::$V, x)
        })*

        /// The Python name of each op (`Tensor.exp`, `Tensor.exp_`, `rgrad.exp`), in table
        /// order, with its docstring.
        pub const UNARY_OPS: &[(&str, UnaryOp, &str)] = &[$((stringify!($name), UnaryOp::$V, $doc),)*];
    };
}
super::table::unary_op_table!(op_layer);

impl Calc for Tensor {
    fn mul(&self, o: &Self) -> Result<Self> {
        super::mul(self, o)
    }
    fn div(&self, o: &Self) -> Result<Self> {
        super::div(self, o)
    }
    fn sub(&self, o: &Self) -> Result<Self> {
        super::sub(self, o)
    }
    fn neg(&self) -> Result<Self> {
        neg(self)
    }
    fn add_s(&self, c: f64) -> Result<Self> {
        super::add_scalar(self, Scalar::Float(c))
    }
    fn mul_s(&self, c: f64) -> Result<Self> {
        super::mul_scalar(self, Scalar::Float(c))
    }
    fn rsub_s(&self, c: f64) -> Result<Self> {
        super::rsub_scalar(self, Scalar::Float(c))
    }
    fn pow_s(&self, c: f64) -> Result<Self> {
        super::pow_scalar(self, Scalar::Float(c))
    }
    fn sign(&self) -> Result<Self> {
        sign(self)
    }
    fn sin(&self) -> Result<Self> {
        sin(self)
    }
    fn cos(&self) -> Result<Self> {
        cos(self)
    }
    fn sinh(&self) -> Result<Self> {
        sinh(self)
    }
    fn cosh(&self) -> Result<Self> {
        cosh(self)
    }
    fn exp(&self) -> Result<Self> {
        exp(self)
    }
    fn rsqrt(&self) -> Result<Self> {
        rsqrt(self)
    }
    fn erfinv(&self) -> Result<Self> {
        erfinv(self)
    }
    fn digamma(&self) -> Result<Self> {
        digamma(self)
    }
    fn polygamma(&self, n: u32) -> Result<Self> {
        polygamma(i64::from(n), self)
    }
    fn zeros_like(&self) -> Result<Self> {
        super::zeros_like(self)
    }
    fn unchanged(&self) -> Result<Self> {
        Ok(self.clone())
    }
    fn threshold_backward(&self, y: &Self) -> Result<Self> {
        // a function of y too, with a zero derivative (torch's ThresholdBackwardBackward0)
        let pass = logical_not(&super::le_scalar(y, 0.0)?)?;
        super::masked_grad(self, y, &pass, "ThresholdBackwardBackward0")
    }
    fn tanh_backward(&self, y: &Self) -> Result<Self> {
        tanh_backward(self, y)
    }
    fn zero_where_zero(&self, m: &Self) -> Result<Self> {
        use super::elementwise::Operand;
        let zero = super::eq_scalar(m, 0.0)?;
        super::where_op(&zero, Operand::S(Scalar::Float(0.0)), Operand::T(self))
    }
}

/// torch's refusals of inputs an op has no kernel for: bool inputs to the ops that keep
/// integers but refuse bools, and integers to the ops that refuse them.
fn unary_dtype_check(op: UnaryOp, dtype: DType) -> Result<()> {
    let r = row(op);
    if let Ints::Refuse(kernel) = r.ints
        && !dtype.is_float()
    {
        return Err(Error::not_implemented(format!(
            "\"{kernel}\" not implemented for '{}'",
            dtype.scalar_type_name()
        )));
    }
    match (dtype, r.bool_msg) {
        (DType::Bool, Some(m)) => Err(Error::not_implemented(m)),
        _ => Ok(()),
    }
}

/// The refusal of a bool input that torch makes before it builds its TensorIterator (so
/// before the in-place overlap check): the ops whose own meta function checks (`neg`,
/// `relu`: messages of their own). A kernel's `"abs_cpu" not implemented` comes from the
/// dispatch after it, as [`unary_dtype_check`] gives it.
pub(crate) fn refuse_bool_first(op: UnaryOp, dtype: DType) -> Result<()> {
    match (dtype, row(op).bool_msg) {
        (DType::Bool, Some(m)) if !m.starts_with('"') => Err(Error::not_implemented(m)),
        _ => Ok(()),
    }
}

/// The op's kernel on `x`, with no node (for ops computed as a table op, as `pow(x, 0.5)`).
pub(crate) fn unary_kernel(op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    let s = x.snapshot();
    unary_dtype_check(op, s.dtype)?;
    unary_out(&s.layout, |l| k::unary(op, &s.storage.read(), l))
}

fn unary_kernel_on(op: UnaryOp, s: Snapshot) -> Result<Fresh> {
    unary_dtype_check(op, s.dtype)?;
    Ok(Fresh::new(
        k::unary(op, &s.storage.read(), &s.layout)?,
        &s.layout.shape,
    ))
}

/// `!x` as bool (`torch.logical_not`): not differentiable.
pub fn logical_not(x: &Tensor) -> Result<Tensor> {
    let b = super::to_dtype(x, DType::Bool)?;
    super::apply_nondiff("aten::logical_not", || {
        let s = b.snapshot();
        unary_out(&s.layout, |l| k::logical_not(&s.storage.read(), l))
    })
}

/// Applies a unary op (promoting integer inputs to float32 where its row says so).
pub fn unary(op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    let promoted;
    let x = if matches!(row(op).ints, Ints::Promote) && !x.dtype().is_float() {
        // (the cast keeps a permuted input's memory format, and so does the result)
        promoted = super::to_dtype(x, DType::default_float())?;
        &promoted
    } else {
        x
    };
    let r = read_input(x)?;
    if crate::layout::iter_output_order(&r.snap.layout.shape, &[&r.snap.layout]).is_some() {
        return unary_keeping_format(op, x);
    }
    unary_on(op, x, r)
}

/// [`unary`] of a permuted (dense, not row-major) input: the output keeps its layout.
fn unary_keeping_format(op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    let s = x.snapshot();
    unary_dtype_check(op, s.dtype)?;
    apply(
        row(op).aten,
        &[x],
        || unary_out(&s.layout, |l| k::unary(op, &s.storage.read(), l)),
        |y| {
            let mut sv = Saver::default();
            let saved = match row(op).saves {
                Saves::None => None,
                Saves::Input => sv.input_if(true, x),
                Saves::Output => Some(sv.output(y)),
            };
            (UnaryBackward { op, saved }, sv.list)
        },
    )
}

fn unary_on(op: UnaryOp, x: &Tensor, r: Read) -> Result<Tensor> {
    let Read {
        snap,
        version,
        requires_grad,
        edge,
    } = r;
    apply_fresh(
        row(op).aten,
        &[x],
        requires_grad,
        || smallvec::smallvec![edge],
        || unary_kernel_on(op, snap),
        |y| {
            let mut s = Saver::default();
            let saved = match row(op).saves {
                Saves::None => None,
                Saves::Input => s.input_read(true, x, version),
                Saves::Output => Some(s.output_fresh(y)),
            };
            (UnaryBackward { op, saved }, s.list)
        },
    )
}

/// What `x.op_()` computes before it is committed into `x` (`ops::unary_`): the op, or,
/// for the rows whose in-place form torch does not differentiate, the op under a node
/// whose backward raises torch's error.
pub(crate) fn unary_for_inplace(op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    let r = row(op);
    let Some(node) = r.inplace_not_implemented else {
        return unary(op, x);
    };
    if !x.dtype().is_float() {
        return unary(op, x); // (an int input: the cast back to it fails first)
    }
    apply(
        r.aten,
        &[x],
        || unary_kernel(op, x),
        |_| (InplaceNotImplemented { node, op: r.name }, crate::saved![]),
    )
}

/// The node of an in-place table op torch has no derivative for.
#[derive(Clone)]
pub struct InplaceNotImplemented {
    node: &'static str,
    op: &'static str,
}
impl Backward for InplaceNotImplemented {
    fn name(&self) -> Cow<'static, str> {
        self.node.into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, _g: &[Option<Tensor>]) -> Result<Grads> {
        Err(Error::not_implemented(format!(
            "the derivative for 'inplace version of {}' is not implemented.",
            self.op
        )))
    }
}

/// The node of every table op: its name and derivative come from the op's row.
#[derive(Clone)]
pub struct UnaryBackward {
    op: UnaryOp,
    /// what the row saves (the input or the output), if anything
    saved: Option<u8>,
}
impl Backward for UnaryBackward {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        match row(self.op).saves {
            Saves::Input => vec![("self", F::Tensor(self.saved))],
            Saves::Output => vec![("result", F::Tensor(self.saved))],
            Saves::None => Vec::new(),
        }
    }
    fn name(&self) -> Cow<'static, str> {
        row(self.op).node.into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        if crate::ops::unrecorded()
            && let Some(i) = self.saved
        {
            // nothing recorded: the fused kernel straight from the saved data
            let s = ctx.saved_data(i as usize)?;
            if let Some(r) = unary_backward_kernel(self.op, &g.snapshot(), &s) {
                return Ok(smallvec::smallvec![Some(r)]);
            }
        }
        let s = self.saved.map(|i| get(ctx, Some(i))).transpose()?;
        if let Some(s) = &s
            && let Some(r) = fused_unary_grad(self.op, &g, s)
        {
            return Ok(smallvec::smallvec![Some(r)]);
        }
        Ok(smallvec::smallvec![Some(recorded(self.op, &g, s)?)])
    }
    // The row's formula over tensors broadcasts the saved tensor against each sample's
    // gradient: the same values as the fused kernel per sample.
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        let run = || -> Result<Grads> {
            let g = grad0(g)?;
            let s = self.saved.map(|i| get(ctx, Some(i))).transpose()?;
            Ok(smallvec::smallvec![Some(recorded(self.op, &g, s)?)])
        };
        Some(run())
    }
}

/// `torch.polygamma(n, x)`: ψ⁽ⁿ⁾(x), the n-th derivative of digamma (integer and bool
/// inputs compute in float32).
pub fn polygamma(n: i64, x: &Tensor) -> Result<Tensor> {
    polygamma_as(n, x, "PolygammaBackward0")
}

/// `x.polygamma_(n)` (torch records it as the in-place overload, `PolygammaBackward1`).
pub fn polygamma_(x: &Tensor, n: i64) -> Result<Tensor> {
    super::inplace::inplace_no_overlap(x, |x| polygamma_as(n, x, "PolygammaBackward1"))
}

fn polygamma_as(n: i64, x: &Tensor, node: &'static str) -> Result<Tensor> {
    if n < 0 {
        return Err(Error::runtime(
            "polygamma(n, x) does not support negative n.",
        ));
    }
    // (an order beyond u32 is far past where ψ⁽ⁿ⁾ is representable: infinite or zero)
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    let promoted;
    let x = if x.dtype().is_float() {
        x
    } else {
        promoted = super::to_dtype(x, DType::default_float())?;
        &promoted
    };
    let s = x.snapshot();
    apply(
        "aten::polygamma",
        &[x],
        || unary_out(&s.layout, |l| k::polygamma(n, &s.storage.read(), l)),
        |_| {
            let mut sv = Saver::default();
            let xi = sv.input_if(true, x);
            (PolygammaBackward { n, node, x: xi }, sv.list)
        },
    )
}

/// `torch.round(x, decimals=d)`: to the nearest multiple of 10⁻ᵈ, halves to even, as
/// torch's kernel computes it: `nearbyint(x · 10ᵈ) / 10ᵈ`, or `nearbyint(x / 10⁻ᵈ) · 10⁻ᵈ`
/// for d < 0, the power rounded to the dtype, each step rounded as a tensor op rounds
/// (so the same bits). `d = 0` is the table's `round` (RoundBackward0); any other
/// records RoundBackward1, a zero gradient. Floats only (torch's `round_cpu`).
pub fn round_decimals(x: &Tensor, decimals: i64) -> Result<Tensor> {
    if decimals == 0 {
        return unary(UnaryOp::Round, x);
    }
    round_decimals_as(x, decimals)
}

/// `x.round_(decimals=d)`.
pub fn round_decimals_(x: &Tensor, decimals: i64) -> Result<Tensor> {
    if decimals == 0 {
        return super::unary_(x, UnaryOp::Round);
    }
    super::inplace::inplace_no_overlap(x, |x| round_decimals_as(x, decimals))
}

fn round_decimals_as(x: &Tensor, decimals: i64) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return Err(Error::not_implemented(format!(
            "\"round_cpu\" not implemented for '{}'",
            x.dtype().scalar_type_name()
        )));
    }
    let power = Scalar::Float(10f64.powf(decimals.unsigned_abs() as f64));
    apply(
        "aten::round",
        &[x],
        || {
            // one pass where the backend has it (the same bits as the steps below)
            let op = crate::backend::ActFn::RoundDecimals { decimals };
            if let Some(y) = super::elementwise::fused_unary(x, op)? {
                return Ok(y);
            }
            // the steps as ops of their own, recording nothing and no tangents
            crate::autograd::grad_mode::with_grad_mode(false, || {
                crate::autograd::forward_ad::with_enabled(false, || {
                    if decimals > 0 {
                        super::div_scalar(
                            &unary(UnaryOp::Round, &super::mul_scalar(x, power)?)?,
                            power,
                        )
                    } else {
                        super::mul_scalar(
                            &unary(UnaryOp::Round, &super::div_scalar(x, power)?)?,
                            power,
                        )
                    }
                })
            })
        },
        |_| (RoundDecimalsBackward, smallvec::SmallVec::new()),
    )
}

/// Backward of `round(x, decimals=d)` (d ≠ 0): zero.
#[derive(Clone)]
pub struct RoundDecimalsBackward;
impl Backward for RoundDecimalsBackward {
    fn name(&self) -> Cow<'static, str> {
        "RoundBackward1".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(super::zeros_like(&grad0(g)?)?)])
    }
}

/// Backward of `polygamma(n, x)`: g·ψ⁽ⁿ⁺¹⁾(x).
#[derive(Clone)]
pub struct PolygammaBackward {
    n: u32,
    node: &'static str,
    x: Option<u8>,
}
impl Backward for PolygammaBackward {
    fn name(&self) -> Cow<'static, str> {
        self.node.into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let x = get(ctx, self.x)?;
        let d = polygamma(i64::from(self.n.saturating_add(1)), &x)?;
        Ok(smallvec::smallvec![Some(super::mul(&g, &d)?)])
    }
    // ψ⁽ⁿ⁺¹⁾(x) has x's shape: the product broadcasts it against each sample's gradient
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.apply(ctx, g))
    }
}

/// torch's `tanh_backward(grad, y)` = grad·(1 - y²) as one op with a derivative of its
/// own (`TanhBackwardBackward0`, as in torch), so that a recorded tanh backward (double
/// backward) is one node and one kernel instead of three of each.
pub fn tanh_backward(g: &Tensor, y: &Tensor) -> Result<Tensor> {
    let (sg, sy) = (g.snapshot(), y.snapshot());
    if sg.dtype != sy.dtype || !sg.dtype.is_float() || sg.layout.shape != sy.layout.shape {
        return super::mul(
            g,
            &super::rsub_scalar(&super::mul(y, y)?, Scalar::Float(1.0))?,
        );
    }
    apply(
        "aten::tanh_backward",
        &[g, y],
        || match unary_backward_kernel(UnaryOp::Tanh, &sg, &sy) {
            Some(t) => Ok(t),
            // (a kernel that declines, a device's, say: the same formula in three ops)
            None => crate::autograd::grad_mode::with_grad_mode(false, || {
                super::mul(
                    g,
                    &super::rsub_scalar(&super::mul(y, y)?, Scalar::Float(1.0))?,
                )
            }),
        },
        |_| {
            let mut s = Saver::default();
            let gi = s.input_if(crate::ops::wants_grad(y), g);
            let yi = s.input_if(true, y);
            (TanhBackwardBackward0 { g: gi, y: yi }, s.list)
        },
    )
}

#[derive(Clone)]
pub struct TanhBackwardBackward0 {
    g: Option<u8>,
    y: Option<u8>,
}
impl Backward for TanhBackwardBackward0 {
    fn name(&self) -> Cow<'static, str> {
        "TanhBackwardBackward0".into()
    }
    // d/dg = 1 - y² (so: tanh_backward(gg, y)); d/dy = -2·y·g
    fn apply(&self, ctx: &BackwardCtx<'_>, grads: &[Option<Tensor>]) -> Result<Grads> {
        let gg = grad0(grads)?;
        let y = get(ctx, self.y)?;
        let dg = if ctx.needs_input_grad(0) {
            Some(tanh_backward(&gg, &y)?)
        } else {
            None
        };
        let dy = if ctx.needs_input_grad(1) {
            let g = get(ctx, self.g)?;
            Some(super::mul(
                &gg,
                &super::mul(&super::mul_scalar(&y, Scalar::Float(-2.0))?, &g)?,
            )?)
        } else {
            None
        };
        Ok(smallvec::smallvec![dg, dy])
    }
    // (g and y have the output's shape: the formulas broadcast them against each sample)
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        grads: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.apply(ctx, grads))
    }
}

/// The row's `df` in one kernel when nothing is to be recorded (the usual backward,
/// without `create_graph`): same values bit for bit, one tensor instead of two to four.
fn fused_unary_grad(op: UnaryOp, g: &Tensor, s: &Tensor) -> Option<Tensor> {
    if crate::ops::records(&[g, s]) {
        return None;
    }
    unary_backward_kernel(op, &g.snapshot(), &s.snapshot())
}

/// `g·f'(x)` by the fused kernel (`s`: what the op saved), or `None` where the kernel
/// does not apply (dtypes or shapes that differ, non-float buffers).
fn unary_backward_kernel(op: UnaryOp, sg: &Snapshot, ss: &Snapshot) -> Option<Tensor> {
    if sg.dtype != ss.dtype {
        return None;
    }
    let buf = k::unary_backward(
        op,
        &sg.storage.read(),
        &sg.layout,
        &ss.storage.read(),
        &ss.layout,
    )
    // (a device error here reappears, reported, on the composed path)
    .ok()??;
    Some(new_tensor(buf, &sg.layout.shape))
}
