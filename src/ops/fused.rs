//! addcmul, addcdiv, lerp and addr (and their in-place forms): one kernel each (the
//! backend's `fused3` / `lerp_scalar`, one pass, rounded as ATen rounds), one node each
//! with torch's name, saved fields and derivatives.yaml formulas.

use super::elementwise::{Saver, elementwise_out, get, grad0};
use super::{apply, to_dtype};
use crate::autograd::function::{Backward, BackwardCtx, Grads, SavedField};
use crate::backend::{self as k, Fused3};
use crate::dtype::{DType, ResultType, Scalar};
use crate::layout::Layout;
use crate::shape::{Shape, broadcast_shapes};
use crate::tensor::Tensor;
use crate::{Error, Result};
use std::borrow::Cow;

// ---- what the ops share ---------------------------------------------------------------

/// The shapes of a node's tensor inputs, for bringing gradients back to them; kept
/// (boxed) only when one differs from the output's.
#[derive(Clone)]
struct Shapes(Option<Box<[Shape]>>);

impl Shapes {
    fn new(inputs: &[&Tensor], out: &Tensor) -> Shapes {
        if inputs.iter().all(|t| out.has_shape(&t.shape())) {
            Shapes(None)
        } else {
            Shapes(Some(inputs.iter().map(|t| t.shape()).collect()))
        }
    }
    /// `d` (of the output's shape; with a leading batch dim when `batched`) summed down
    /// to input `i`'s shape.
    fn sum_to(&self, d: Tensor, i: usize, batched: bool) -> Result<Tensor> {
        match &self.0 {
            None => Ok(d),
            Some(s) if batched => super::sum_to_batched(&d, &s[i]),
            Some(s) => super::sum_to(&d, &s[i]),
        }
    }
}

/// torch's C++ name of a dtype, as its dtype-mismatch messages print it.
fn cpp_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "float",
        DType::F64 => "double",
        DType::I64 => "long",
        DType::Bool => "bool",
    }
}

/// The result type of tensor operands (torch's promotion: 0-d tensors rank below
/// dimensioned ones).
fn result_type(ts: &[&Tensor]) -> DType {
    ts.iter()
        .fold(ResultType::default(), |r, t| r.tensor(t.dtype(), t.ndim()))
        .finish()
}

/// `t` converted to `dtype` (a recorded cast when it differs), following `t`'s version
/// counter as the binary ops' promoted operands do.
fn promoted(t: &Tensor, dtype: DType) -> Result<Tensor> {
    let c = to_dtype(t, dtype)?;
    if !c.same(t) {
        c.share_version_of(t);
    }
    Ok(c)
}

/// The broadcast shape of some tensors, or torch's error.
fn broadcast_all(ts: &[&Tensor]) -> Result<Shape> {
    let mut shape = Shape::new();
    for t in ts {
        shape = broadcast_shapes(&shape, &t.shape())?;
    }
    Ok(shape)
}

/// `value` as the kernel of `dtype` takes it: an integer kernel truncates a float, and
/// refuses one beyond int64 with torch's message.
fn value_for(value: Scalar, dtype: DType) -> Result<Scalar> {
    value.check_fits(dtype)?;
    Ok(match (value, dtype) {
        (Scalar::Float(f), DType::I64) => Scalar::Int(f as i64),
        _ => value,
    })
}

/// Runs `kernel` over the operands broadcast to `shape`, the output in the layout torch
/// gives it (`elementwise_out`); `views`: each operand's layout as the kernel reads it
/// before broadcasting (addr's vectors as a column and a row).
fn forward(
    shape: &[usize],
    operands: &[&Tensor],
    views: impl Fn(usize, &Layout) -> Result<Layout>,
    kernel: impl FnOnce(&[&crate::storage::Buffer], &[Layout]) -> Result<Option<crate::storage::Buffer>>,
    what: &str,
) -> Result<Tensor> {
    let snaps: Vec<_> = operands.iter().map(|t| t.snapshot()).collect();
    super::creation::guard(shape, snaps[0].dtype)?;
    let originals = snaps
        .iter()
        .enumerate()
        .map(|(i, s)| views(i, &s.layout))
        .collect::<Result<Vec<_>>>()?;
    let expanded = originals
        .iter()
        .map(|l| l.expand(shape))
        .collect::<Result<Vec<_>>>()?;
    let reads: Vec<_> = snaps.iter().map(|s| s.storage.read()).collect();
    let bufs: Vec<&crate::storage::Buffer> = reads.iter().map(|r| &**r).collect();
    k::check_same_device(&bufs)?;
    let refs: Vec<&Layout> = originals.iter().collect();
    elementwise_out(shape, &refs, &expanded, |l| {
        kernel(&bufs, l)?.ok_or_else(|| Error::Internal(format!("{what}: no kernel for the dtype")))
    })
}

/// The operands as they are (the ops' own broadcasting does the rest).
fn as_is(_: usize, l: &Layout) -> Result<Layout> {
    Ok(l.clone())
}

// ---- addcmul, addcdiv -------------------------------------------------------------------

/// `torch.addcmul(x, t1, t2, value=value)`: `x + value * t1 * t2`, broadcast.
pub fn addcmul(x: &Tensor, t1: &Tensor, t2: &Tensor, value: Scalar) -> Result<Tensor> {
    addc(x, t1, t2, value, false)
}

/// `torch.addcdiv(x, t1, t2, value=value)`: `x + value * t1 / t2`, broadcast.
pub fn addcdiv(x: &Tensor, t1: &Tensor, t2: &Tensor, value: Scalar) -> Result<Tensor> {
    addc(x, t1, t2, value, true)
}

fn addc(x: &Tensor, t1: &Tensor, t2: &Tensor, value: Scalar, div: bool) -> Result<Tensor> {
    if div && !t1.dtype().is_float() && !t2.dtype().is_float() {
        return Err(Error::runtime(
            "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.",
        ));
    }
    let shape = broadcast_all(&[x, t1, t2])?;
    let dtype = result_type(&[x, t1, t2]);
    if dtype == DType::Bool {
        let kernel = if div {
            "addcdiv_cpu_out"
        } else {
            "addcmul_cpu_out"
        };
        return Err(Error::not_implemented(format!(
            "\"{kernel}\" not implemented for 'Bool'"
        )));
    }
    let v = value_for(value, dtype)?;
    let (a, b, c) = (
        promoted(x, dtype)?,
        promoted(t1, dtype)?,
        promoted(t2, dtype)?,
    );
    let op = if div {
        Fused3::Addcdiv(v)
    } else {
        Fused3::Addcmul(v)
    };
    let run = || {
        forward(
            &shape,
            &[&a, &b, &c],
            as_is,
            |x, l| k::fused3(op, x[0], &l[0], x[1], &l[1], x[2], &l[2]),
            if div { "addcdiv" } else { "addcmul" },
        )
    };
    let aten = if div {
        "aten::addcdiv"
    } else {
        "aten::addcmul"
    };
    apply(aten, &[&a, &b, &c], run, |y| {
        let needs = [&b, &c].map(super::wants_grad);
        let mut s = Saver::default();
        // Each factor is read by the other's derivative; torch's AddcdivBackward0 keeps
        // tensor2 whatever needs a gradient (as its generated node does).
        let t1 = s.input_if(needs[1], &b);
        let t2 = s.input_if(div || needs[0], &c);
        let node = AddcBackward {
            div,
            value,
            shapes: Shapes::new(&[&a, &b, &c], y),
            saved: [t1, t2],
        };
        (node, s.list)
    })
}

/// `x.addcmul_(t1, t2, value=value)`.
pub fn addcmul_(x: &Tensor, t1: &Tensor, t2: &Tensor, value: Scalar) -> Result<Tensor> {
    if x.dtype().is_float()
        && let Some(r) = one_pass(x, [t1, t2], |d, ld, [(b, lb), (c, lc)]| {
            k::fused3_in_place(Fused3::Addcmul(value), d, ld, b, lb, c, lc)
        })
    {
        return r;
    }
    in_place(x, &[t1, t2], |x| addcmul(x, t1, t2, value))
}

/// `x.addcdiv_(t1, t2, value=value)`.
pub fn addcdiv_(x: &Tensor, t1: &Tensor, t2: &Tensor, value: Scalar) -> Result<Tensor> {
    if x.dtype().is_float()
        && let Some(r) = one_pass(x, [t1, t2], |d, ld, [(b, lb), (c, lc)]| {
            k::fused3_in_place(Fused3::Addcdiv(value), d, ld, b, lb, c, lc)
        })
    {
        return r;
    }
    in_place(x, &[t1, t2], |x| addcdiv(x, t1, t2, value))
}

/// An in-place form in one pass over `x` (an optimiser's step: no graph, same dtypes):
/// nothing records (no operand needs a gradient or has a tangent), `x` a contiguous float
/// tensor, `others` of its dtype and outside its storage, each broadcast to its shape
/// (the kernel takes a contiguous operand or a single element, and says false for
/// anything else). The same bits as the out-of-place op committed. `None`: the general
/// path (which also raises every error).
fn one_pass(
    x: &Tensor,
    others: [&Tensor; 2],
    kernel: impl FnOnce(
        &mut crate::storage::Buffer,
        &Layout,
        [(&crate::storage::Buffer, &Layout); 2],
    ) -> Result<bool>,
) -> Option<Result<Tensor>> {
    use crate::autograd::grad_mode::is_grad_enabled;
    if is_grad_enabled() && (x.requires_grad() || others.iter().any(|t| t.requires_grad())) {
        return None;
    }
    if crate::autograd::forward_ad::any_dual(&[x, others[0], others[1]]) {
        return None;
    }
    let sx = x.snapshot();
    if !sx.layout.is_contiguous() {
        return None;
    }
    let so = others.map(|t| t.snapshot());
    let mut layouts = Vec::with_capacity(2);
    for s in &so {
        if s.dtype != sx.dtype || std::sync::Arc::ptr_eq(&s.storage, &sx.storage) {
            return None;
        }
        layouts.push(s.layout.expand(&sx.layout.shape).ok()?);
    }
    if let Err(e) = crate::autograd::saved_hooks::before_mutation(x) {
        return Some(Err(e));
    }
    let done = {
        let (rb, rc, mut w) =
            crate::storage::Storage::read2_and_write(&so[0].storage, &so[1].storage, &sx.storage);
        let c = rc.as_deref().unwrap_or(&rb);
        kernel(&mut w, &sx.layout, [(&rb, &layouts[0]), (c, &layouts[1])])
    };
    match done {
        Ok(true) => {
            x.bump_version();
            Some(Ok(x.clone()))
        }
        Ok(false) => None,
        Err(e) => Some(Err(e)),
    }
}

/// An in-place form: the operands must broadcast to `x`'s shape (torch's message
/// otherwise); the op runs out of place and is committed into `x`.
fn in_place(
    x: &Tensor,
    others: &[&Tensor],
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let mut shape = x.shape();
    for t in others {
        shape = broadcast_shapes(&shape, &t.shape())?;
    }
    super::inplace::broadcasts_to(&x.shape(), &shape)?;
    let operands: Vec<Option<&Tensor>> = others.iter().map(|t| Some(*t)).collect();
    super::inplace::inplace_no_overlap_with(x, &operands, f)
}

/// AddcmulBackward0 / AddcdivBackward0.
#[derive(Clone)]
pub struct AddcBackward {
    div: bool,
    /// as given
    value: Scalar,
    shapes: Shapes,
    /// tensor1, tensor2
    saved: [Option<u8>; 2],
}

impl Backward for AddcBackward {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("tensor1", SavedField::Tensor(self.saved[0])),
            ("tensor2", SavedField::Tensor(self.saved[1])),
            ("value", SavedField::Scalar(self.value)),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        if self.div {
            "AddcdivBackward0".into()
        } else {
            "AddcmulBackward0".into()
        }
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

impl AddcBackward {
    fn grads(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>], batched: bool) -> Result<Grads> {
        let g = grad0(g)?;
        let v = self.value;
        let saved = |i: usize| get(ctx, self.saved[i]);
        let mut out = Grads::new();
        out.push(if ctx.needs_input_grad(0) {
            Some(self.shapes.sum_to(g.clone(), 0, batched)?)
        } else {
            None
        });
        // derivatives.yaml: tensor1: grad * (tensor2 * value) (addcdiv: grad * (value /
        // tensor2)); tensor2: grad * (tensor1 * value) (addcdiv: -grad * (value * tensor1
        // / (tensor2 * tensor2)))
        out.push(if ctx.needs_input_grad(1) {
            let t2 = saved(1)?;
            let d = if self.div {
                let num = super::scalar_tensor(v, t2.dtype());
                super::mul(&g, &super::div(&num, &t2)?)?
            } else {
                super::mul(&g, &super::mul_scalar(&t2, v)?)?
            };
            Some(self.shapes.sum_to(d, 1, batched)?)
        } else {
            None
        });
        out.push(if ctx.needs_input_grad(2) {
            let t1 = saved(0)?;
            let d = if self.div {
                let t2 = saved(1)?;
                let q = super::div(&super::mul_scalar(&t1, v)?, &super::mul(&t2, &t2)?)?;
                super::mul(&super::neg(&g)?, &q)?
            } else {
                super::mul(&g, &super::mul_scalar(&t1, v)?)?
            };
            Some(self.shapes.sum_to(d, 2, batched)?)
        } else {
            None
        });
        Ok(out)
    }
}

// ---- lerp ---------------------------------------------------------------------------------

/// lerp's weight: a number (`lerp.Scalar`) or a tensor (`lerp.Tensor`).
#[derive(Clone, Copy)]
pub enum Weight<'a> {
    Number(Scalar),
    Tensor(&'a Tensor),
}

/// `torch.lerp(x, end, weight)`: `x + weight * (end - x)`, broadcast.
pub fn lerp(x: &Tensor, end: &Tensor, weight: Weight<'_>) -> Result<Tensor> {
    let dtype = x.dtype();
    if end.dtype() != dtype {
        return Err(Error::runtime(format!(
            "expected dtype {} for `end` but got dtype {}",
            cpp_name(dtype),
            cpp_name(end.dtype())
        )));
    }
    match weight {
        Weight::Number(w) => {
            let shape = broadcast_all(&[x, end])?;
            if !dtype.is_float() {
                return Err(Error::not_implemented(format!(
                    "\"lerp_kernel_scalar\" not implemented for '{}'",
                    dtype.scalar_type_name()
                )));
            }
            let run = || {
                forward(
                    &shape,
                    &[x, end],
                    as_is,
                    |b, l| k::lerp_scalar(b[0], &l[0], b[1], &l[1], w),
                    "lerp",
                )
            };
            apply("aten::lerp", &[x, end], run, |y| {
                let node = LerpBackward {
                    weight: LerpWeight::Number(w),
                    shapes: Shapes::new(&[x, end], y),
                    saved: [None; 3],
                };
                (node, crate::saved![])
            })
        }
        Weight::Tensor(w) => {
            // (a 0-d weight of another dtype is converted, as a CPU scalar is)
            if w.ndim() > 0 && w.dtype() != dtype {
                return Err(Error::runtime(format!(
                    "expected dtype {} for `weight` but got dtype {}",
                    cpp_name(dtype),
                    cpp_name(w.dtype())
                )));
            }
            let shape = broadcast_all(&[x, end, w])?;
            if !dtype.is_float() {
                return Err(Error::not_implemented(format!(
                    "\"lerp_kernel_tensor\" not implemented for '{}'",
                    dtype.scalar_type_name()
                )));
            }
            let w = promoted(w, dtype)?;
            let run = || {
                forward(
                    &shape,
                    &[x, end, &w],
                    as_is,
                    |b, l| k::fused3(Fused3::Lerp, b[0], &l[0], b[1], &l[1], b[2], &l[2]),
                    "lerp",
                )
            };
            apply("aten::lerp", &[x, end, &w], run, |y| {
                let weight_needs = super::wants_grad(&w);
                let mut s = Saver::default();
                // self and end: read by weight's derivative; weight: by theirs, and kept
                // whatever needs a gradient, as torch's generated node keeps it
                let saved = [
                    s.input_if(weight_needs, x),
                    s.input_if(weight_needs, end),
                    s.input_if(true, &w),
                ];
                let node = LerpBackward {
                    weight: LerpWeight::Tensor,
                    shapes: Shapes::new(&[x, end, &w], y),
                    saved,
                };
                (node, s.list)
            })
        }
    }
}

/// `x.lerp_(end, weight)`.
pub fn lerp_(x: &Tensor, end: &Tensor, weight: Weight<'_>) -> Result<Tensor> {
    if x.dtype().is_float() {
        let fast = match weight {
            Weight::Number(w) => one_pass(x, [end, end], |d, ld, [(b, lb), _]| {
                k::lerp_scalar_in_place(d, ld, b, lb, w)
            }),
            Weight::Tensor(w) => one_pass(x, [end, w], |d, ld, [(b, lb), (c, lc)]| {
                k::fused3_in_place(Fused3::Lerp, d, ld, b, lb, c, lc)
            }),
        };
        if let Some(r) = fast {
            return r;
        }
    }
    match weight {
        Weight::Number(_) => in_place(x, &[end], |x| lerp(x, end, weight)),
        Weight::Tensor(w) => in_place(x, &[end, w], |x| lerp(x, end, weight)),
    }
}

#[derive(Clone, Copy)]
enum LerpWeight {
    /// LerpBackward0: the number, as given
    Number(Scalar),
    /// LerpBackward1: the weight is the node's third input
    Tensor,
}

/// LerpBackward0 (a number weight) / LerpBackward1 (a tensor weight).
#[derive(Clone)]
pub struct LerpBackward {
    weight: LerpWeight,
    shapes: Shapes,
    /// self, end, weight (LerpBackward1)
    saved: [Option<u8>; 3],
}

impl Backward for LerpBackward {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        match self.weight {
            LerpWeight::Number(w) => vec![("weight", SavedField::Scalar(w))],
            LerpWeight::Tensor => vec![
                ("end", SavedField::Tensor(self.saved[1])),
                ("self", SavedField::Tensor(self.saved[0])),
                ("weight", SavedField::Tensor(self.saved[2])),
            ],
        }
    }
    fn name(&self) -> Cow<'static, str> {
        match self.weight {
            LerpWeight::Number(_) => "LerpBackward0".into(),
            LerpWeight::Tensor => "LerpBackward1".into(),
        }
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

impl LerpBackward {
    fn grads(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>], batched: bool) -> Result<Grads> {
        let g = grad0(g)?;
        let saved = |i: usize| get(ctx, self.saved[i]);
        let mut out = Grads::new();
        // derivatives.yaml: self: grad * (1 - weight); end: grad * weight; weight (a
        // tensor): grad * (end - self)
        let w = match self.weight {
            LerpWeight::Tensor if ctx.needs_input_grad(0) || ctx.needs_input_grad(1) => {
                Some(saved(2)?)
            }
            _ => None,
        };
        out.push(if ctx.needs_input_grad(0) {
            let d = match (self.weight, &w) {
                // (1 - weight in double, as torch's `1 - weight.toDouble()`)
                (LerpWeight::Number(n), _) => {
                    super::mul_scalar(&g, Scalar::Float(1.0 - n.as_f64()))?
                }
                (_, Some(w)) => super::mul(&g, &super::rsub_scalar(w, Scalar::Int(1))?)?,
                (_, None) => return Err(Error::Internal("lerp: weight not saved".into())),
            };
            Some(self.shapes.sum_to(d, 0, batched)?)
        } else {
            None
        });
        out.push(if ctx.needs_input_grad(1) {
            let d = match (self.weight, &w) {
                (LerpWeight::Number(n), _) => super::mul_scalar(&g, n)?,
                (_, Some(w)) => super::mul(&g, w)?,
                (_, None) => return Err(Error::Internal("lerp: weight not saved".into())),
            };
            Some(self.shapes.sum_to(d, 1, batched)?)
        } else {
            None
        });
        if let LerpWeight::Tensor = self.weight {
            out.push(if ctx.needs_input_grad(2) {
                let diff = super::sub(&saved(1)?, &saved(0)?)?;
                Some(self.shapes.sum_to(super::mul(&g, &diff)?, 2, batched)?)
            } else {
                None
            });
        }
        Ok(out)
    }
}

// ---- addr ---------------------------------------------------------------------------------

/// torch's checks of addr's numbers against the result's dtype.
fn check_addr_scalar(dtype: DType, s: Scalar, name: &str) -> Result<()> {
    if matches!(s, Scalar::Bool(_)) && dtype != DType::Bool {
        return Err(Error::runtime(format!(
            "Boolean {name} only supported for Boolean results."
        )));
    }
    if !dtype.is_float() && matches!(s, Scalar::Float(_)) {
        return Err(Error::runtime(format!(
            "For integral input tensors, argument {name} must not be a floating point number."
        )));
    }
    s.check_fits(dtype)
}

fn check_1d(t: &Tensor, arg: &str) -> Result<()> {
    if t.ndim() != 1 {
        return Err(Error::runtime(format!(
            "addr: Expected 1-D argument {arg}, but got {}-D",
            t.ndim()
        )));
    }
    Ok(())
}

/// `torch.addr(x, vec1, vec2, beta=beta, alpha=alpha)`: `beta * x + alpha * outer(vec1,
/// vec2)`, `x` broadcast to the product's shape; beta 0 ignores `x` (NaN and inf too).
pub fn addr(x: &Tensor, v1: &Tensor, v2: &Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    check_1d(v1, "vec1")?;
    check_1d(v2, "vec2")?;
    let shape: Shape = smallvec::smallvec![v1.shape()[0], v2.shape()[0]];
    // (torch expands self to the product's shape first, with expand's messages)
    x.layout().expand(&shape)?;
    let dtype = result_type(&[x, v1, v2]);
    check_addr_scalar(dtype, beta, "beta")?;
    check_addr_scalar(dtype, alpha, "alpha")?;
    let (a, b, c) = (
        promoted(x, dtype)?,
        promoted(v1, dtype)?,
        promoted(v2, dtype)?,
    );
    let op = Fused3::Addr { beta, alpha };
    // vec1 is read as a column (each row one element of it), vec2 as a row
    let views = |i: usize, l: &Layout| -> Result<Layout> {
        Ok(match i {
            1 => Layout {
                shape: smallvec::smallvec![l.shape[0], 1],
                strides: smallvec::smallvec![l.strides[0], 1],
                offset: l.offset,
            },
            _ => l.clone(),
        })
    };
    let run = || {
        forward(
            &shape,
            &[&a, &b, &c],
            views,
            |x, l| k::fused3(op, x[0], &l[0], x[1], &l[1], x[2], &l[2]),
            "addr",
        )
    };
    apply("aten::addr", &[&a, &b, &c], run, |y| {
        let needs = [&b, &c].map(super::wants_grad);
        let mut s = Saver::default();
        let saved = [s.input_if(needs[1], &b), s.input_if(needs[0], &c)];
        let node = AddrBackward0 {
            beta,
            alpha,
            self_shape: Shapes::new(&[&a], y),
            saved,
        };
        (node, s.list)
    })
}

/// `x.addr_(vec1, vec2, beta=beta, alpha=alpha)`: `x` must have the product's shape.
pub fn addr_(x: &Tensor, v1: &Tensor, v2: &Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    check_1d(v1, "vec1")?;
    check_1d(v2, "vec2")?;
    let xs = x.shape();
    if xs.len() != 2 {
        return Err(Error::runtime(format!(
            "2D tensor expected, got {}D tensor for input",
            xs.len()
        )));
    }
    let (n, m) = (v1.shape()[0], v2.shape()[0]);
    if xs[0] != n || xs[1] != m {
        return Err(Error::runtime(format!(
            "size mismatch, input: [{}, {}], v1: [{n}], v2: [{m}]",
            xs[0], xs[1]
        )));
    }
    super::inplace::inplace_no_overlap_with(x, &[Some(v1), Some(v2)], |x| {
        addr(x, v1, v2, beta, alpha)
    })
}

/// AddrBackward0.
#[derive(Clone)]
pub struct AddrBackward0 {
    beta: Scalar,
    alpha: Scalar,
    /// self's (where it is not the product's)
    self_shape: Shapes,
    /// vec1, vec2
    saved: [Option<u8>; 2],
}

impl Backward for AddrBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("alpha", SavedField::Scalar(self.alpha)),
            ("beta", SavedField::Scalar(self.beta)),
            ("vec1", SavedField::Tensor(self.saved[0])),
            ("vec2", SavedField::Tensor(self.saved[1])),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "AddrBackward0".into()
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

impl AddrBackward0 {
    /// derivatives.yaml: self: maybe_multiply(grad, beta); vec1: grad.mv(vec2) * alpha;
    /// vec2: grad.t().mv(vec1) * alpha. A batched `g` is `[B, n, m]`.
    fn grads(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>], batched: bool) -> Result<Grads> {
        let g = grad0(g)?;
        let mut out = Grads::new();
        out.push(if ctx.needs_input_grad(0) {
            let d = if self.beta.as_f64() == 1.0 {
                g.clone()
            } else {
                super::mul_scalar(&g, self.beta)?
            };
            Some(self.self_shape.sum_to(d, 0, batched)?)
        } else {
            None
        });
        out.push(if ctx.needs_input_grad(1) {
            let v2 = get(ctx, self.saved[1])?;
            let p = if batched {
                super::matmul(&g, &v2)?
            } else {
                super::mv(&g, &v2)?
            };
            Some(super::mul_scalar(&p, self.alpha)?)
        } else {
            None
        });
        out.push(if ctx.needs_input_grad(2) {
            let v1 = get(ctx, self.saved[0])?;
            let p = if batched {
                super::matmul(&super::transpose(&g, 1, 2)?, &v1)?
            } else {
                super::mv(&super::t(&g)?, &v1)?
            };
            Some(super::mul_scalar(&p, self.alpha)?)
        } else {
            None
        });
        Ok(out)
    }
}

// ---- nan_to_num -----------------------------------------------------------------------------

/// Which elements are finite (neither NaN nor infinite): `x == x & |x| != inf`.
fn isfinite(x: &Tensor) -> Result<Tensor> {
    use crate::backend::BinaryOp;
    use crate::ops::Operand;
    let not_nan = super::eq(x, x)?;
    let abs = super::abs(x)?;
    let not_inf = super::compare(
        BinaryOp::Ne,
        Operand::T(&abs),
        Operand::S(Scalar::Float(f64::INFINITY)),
    )?;
    super::logical_and(&not_nan, &not_inf)
}

/// `torch.nan_to_num(x, nan, posinf, neginf)`: NaN, +inf and -inf replaced by `nan` (0
/// when absent) and `posinf` / `neginf` (the dtype's largest / lowest when absent); an
/// integer or bool tensor is copied.
pub fn nan_to_num(
    x: &Tensor,
    nan: Option<f64>,
    posinf: Option<f64>,
    neginf: Option<f64>,
) -> Result<Tensor> {
    let dtype = x.dtype();
    if !dtype.is_float() {
        return super::clone_tensor(x);
    }
    let max = if dtype == DType::F32 {
        f64::from(f32::MAX)
    } else {
        f64::MAX
    };
    let (nan, posinf, neginf) = (
        nan.unwrap_or(0.0),
        posinf.unwrap_or(max),
        neginf.unwrap_or(-max),
    );
    let run = || {
        let s = x.snapshot();
        let r = s.storage.read();
        super::elementwise::unary_out(&s.layout, |l| {
            k::nan_to_num(&r, l, nan, posinf, neginf)?
                .ok_or_else(|| Error::Internal("nan_to_num: no kernel for the dtype".into()))
        })
    };
    apply("aten::nan_to_num", &[x], run, |_| {
        let mut s = Saver::default();
        let saved = s.input_if(true, x);
        (NanToNumBackward0 { saved }, s.list)
    })
}

/// `x.nan_to_num_(nan, posinf, neginf)` (an integer or bool tensor is left as it is).
pub fn nan_to_num_(
    x: &Tensor,
    nan: Option<f64>,
    posinf: Option<f64>,
    neginf: Option<f64>,
) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return Ok(x.clone());
    }
    super::inplace::inplace_no_overlap(x, |x| nan_to_num(x, nan, posinf, neginf))
}

/// NanToNumBackward0: `grad * isfinite(self)` (a multiply, as torch's: a NaN or infinite
/// gradient where the input was not finite gives NaN).
#[derive(Clone)]
pub struct NanToNumBackward0 {
    saved: Option<u8>,
}

impl Backward for NanToNumBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![("self", SavedField::Tensor(self.saved))]
    }
    fn name(&self) -> Cow<'static, str> {
        "NanToNumBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let finite = isfinite(&get(ctx, self.saved)?)?;
        Ok(smallvec::smallvec![Some(super::mul(&g, &finite)?)])
    }
    // (the formula broadcasts each sample's gradient against the saved input)
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.apply(ctx, g))
    }
}
