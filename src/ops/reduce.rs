//! Reductions: sum, mean, prod, var/std, norm, logsumexp, and the pieces every reduction
//! shares (dims, output shapes, bringing a gradient back); max/min and the
//! arg-reductions are `minmax.rs`, softmax and log_softmax `softmax.rs`.

use super::elementwise::{Saver, grad0};
use super::{apply, new_tensor};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::autograd::grad_mode::with_grad_mode;
use crate::backend::{self as k, BinaryOp, ReduceOp};
use crate::dtype::{DType, Scalar};
use crate::ops::BackwardOp;
use crate::ops::*;
use crate::shape::{Shape, wrap_dims};
use crate::tensor::Tensor;
use crate::{Error, Result, saved};
use std::borrow::Cow;

/// Wrapped, sorted dims; an empty list means all dims (torch's `dim=None`).
pub(super) fn resolve_dims(x: &Tensor, dims: Option<&[i64]>) -> Result<Vec<usize>> {
    let n = x.ndim();
    let mut d: Vec<usize> = match dims {
        None => (0..n).collect(),
        Some([]) => (0..n).collect(),
        Some(ds) => wrap_dims(ds, n)?.to_vec(),
    };
    d.sort_unstable();
    if n == 0 {
        d.clear();
    }
    Ok(d)
}

pub(super) fn out_shape(shape: &[usize], dims: &[usize], keepdim: bool) -> Shape {
    let mut s = Shape::new();
    for (i, &d) in shape.iter().enumerate() {
        if dims.contains(&i) {
            if keepdim {
                s.push(1);
            }
        } else {
            s.push(d);
        }
    }
    s
}

pub(super) fn reduce_kernel(
    op: ReduceOp,
    x: &Tensor,
    dims: &[usize],
    keepdim: bool,
) -> Result<Tensor> {
    let s = x.snapshot();
    let buf = k::reduce(op, &s.storage.read(), &s.layout, dims)?;
    Ok(new_tensor(buf, &out_shape(&s.layout.shape, dims, keepdim)))
}

/// What a reduction's backward needs to bring a gradient back to its input: the input's
/// shape, the reduced dims, and keepdim. Boxed in the node (one pointer instead of 72
/// bytes in every node of the arena; a reduction allocates its output anyway).
#[derive(Clone)]
pub struct ReduceDims {
    pub(super) shape: Shape,
    pub(super) dims: Shape,
    pub(super) keepdim: bool,
}

impl ReduceDims {
    /// torch's `_saved_dim` and `_saved_keepdim`, then `rest` (the node's other fields,
    /// in name order).
    pub(super) fn saved_fields<const N: usize>(
        &self,
        rest: [(&'static str, crate::autograd::function::SavedField); N],
    ) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        let mut v = vec![
            ("dim", F::ints(&self.dims)),
            ("keepdim", F::Bool(self.keepdim)),
        ];
        v.extend(rest);
        v
    }
    pub(super) fn new(shape: Shape, dims: &[usize], keepdim: bool) -> Box<ReduceDims> {
        Box::new(ReduceDims {
            shape,
            dims: crate::shape::copy(dims),
            keepdim,
        })
    }
    /// The sum of `t` (of the input's shape) over the reduced dims: the reduction's
    /// forward derivative.
    pub(super) fn reduce(&self, t: &Tensor) -> Result<Tensor> {
        let dims: Vec<i64> = self.dims.iter().map(|&d| d as i64).collect();
        sum(t, Some(&dims), self.keepdim)
    }
    /// A gradient (or saved output) of the reduction's shape, brought back to the input's.
    pub(super) fn expand_back(&self, g: &Tensor) -> Result<Tensor> {
        expand_back(g, &self.shape, &self.dims, self.keepdim)
    }
    /// [`expand_back`](Self::expand_back), of a batched gradient (`[B, *reduced]`) when
    /// `batched`.
    pub(super) fn expand_back_maybe_batched(&self, g: &Tensor, batched: bool) -> Result<Tensor> {
        if batched {
            self.expand_back_batched(g)
        } else {
            self.expand_back(g)
        }
    }
    /// [`expand_back`](Self::expand_back) for a batched gradient (`[B, *reduced]`).
    pub(super) fn expand_back_batched(&self, g: &Tensor) -> Result<Tensor> {
        let dims: Vec<usize> = self.dims.iter().map(|d| d + 1).collect();
        let shape = super::batched_shape(g.shape()[0], &self.shape);
        expand_back(g, &shape, &dims, self.keepdim)
    }
}

/// Brings a reduced gradient back to the input's rank (re-inserting reduced dims) and
/// broadcasts it to the input shape.
fn expand_back(g: &Tensor, shape: &[usize], dims: &[usize], keepdim: bool) -> Result<Tensor> {
    let mut g = g.clone();
    if !keepdim {
        for &d in dims {
            g = unsqueeze(&g, d as i64)?;
        }
    }
    expand(&g, shape)
}

/// A full reduction's batched gradient (`[B]`) brought to every element of `[B, *shape]`.
fn expand_all_batched(g: &Tensor, shape: &[usize], batch: usize) -> Result<Tensor> {
    let mut dims = vec![batch as i64];
    dims.resize(shape.len() + 1, 1);
    expand(&reshape(g, &dims)?, &super::batched_shape(batch, shape))
}

/// The gradient of one number that went into every element of `g`'s forward (a fill
/// value, a masked fill's value): the sum of `g`, per sample in a batched backward (over
/// every dim but the batch dim, which stays).
pub(crate) fn sum_per_sample(g: &Tensor, batched: bool) -> Result<Tensor> {
    if !batched {
        return sum(g, None, false);
    }
    if g.ndim() <= 1 {
        return Ok(g.clone());
    }
    let dims: Vec<i64> = (1..g.ndim() as i64).collect();
    sum(g, Some(&dims), false)
}

/// `x.sum()` / `x.sum(dims, keepdim)`; integer and bool inputs sum to int64.
pub fn sum(x: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    let d = resolve_dims(x, dims)?;
    let shape = x.shape();
    let full = dims.is_none();
    apply(
        "aten::sum",
        &[x],
        || reduce_kernel(ReduceOp::Sum, x, &d, keepdim),
        |_| {
            if full {
                (
                    BackwardOp::from(SumBackward0 {
                        shape: shape.clone(),
                    }),
                    saved![],
                )
            } else {
                (
                    BackwardOp::from(SumBackward1 {
                        r: ReduceDims::new(shape.clone(), &d, keepdim),
                    }),
                    saved![],
                )
            }
        },
    )
}

pub fn sum_dims(x: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    sum(x, Some(dims), keepdim)
}

#[derive(Clone)]
pub struct SumBackward0 {
    shape: Shape,
}
impl Backward for SumBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![("self_sym_sizes", F::ints(&self.shape))]
    }
    fn name(&self) -> Cow<'static, str> {
        "SumBackward0".into()
    }
    // d sum(x)/dx = 1 everywhere
    fn jvp(&self, _ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let t = t.first()?.as_ref()?;
        Some(sum(t, None, false).map(|s| smallvec::smallvec![Some(s)]))
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(expand(&grad0(g)?, &self.shape)?)])
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| {
            Ok(smallvec::smallvec![Some(expand_all_batched(
                &g,
                &self.shape,
                batch
            )?)])
        }))
    }
}

#[derive(Clone)]
pub struct SumBackward1 {
    r: Box<ReduceDims>,
}
impl Backward for SumBackward1 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        self.r
            .saved_fields([("self_sym_sizes", F::ints(&self.r.shape))])
    }
    fn name(&self) -> Cow<'static, str> {
        "SumBackward1".into()
    }
    fn jvp(&self, _ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let t = t.first()?.as_ref()?;
        Some(self.r.reduce(t).map(|s| smallvec::smallvec![Some(s)]))
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![Some(self.r.expand_back(&grad0(g)?)?)])
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| Ok(smallvec::smallvec![Some(self.r.expand_back_batched(&g)?)])))
    }
}

/// `x.nansum()` / `x.nansum(dims, keepdim, dtype)`: the sum with NaN counted as 0, in one
/// pass (the bits of `sum(where(isnan(x), 0, x))`); integers and bools: the sum.
///
/// `dtype` as torch's: a float input is cast first (its NaNs stay NaN and count as 0),
/// except to an integer or bool dtype, where each NaN is 0 before the cast (torch's
/// `nansum([1.5, nan], dtype=int64)` is 1); the node keeps the input as it was given and
/// casts the gradient back (NansumBackward0 straight onto the input, no cast node), and
/// an integer result of an input that requires grad is torch's error.
pub fn nansum(
    x: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    let from = x.dtype();
    if !from.is_float() {
        let x = match dtype {
            Some(dt) => to_dtype(x, dt)?,
            None => x.clone(),
        };
        return sum(&x, dims, keepdim);
    }
    let to = dtype.unwrap_or(from);
    if !to.is_float() && super::any_requires_grad(&[x]) {
        return Err(Error::runtime(format!(
            "Autograd not support dtype: {}",
            to.scalar_type_name()
        )));
    }
    let d = resolve_dims(x, dims)?;
    let shape = x.shape();
    // (what is summed: the input, or a cast of it that records nothing)
    let data = if to == from {
        x.clone()
    } else if to.is_float() {
        to_dtype(&x.detach(), to)?
    } else {
        let inf = f64::INFINITY;
        let zeroed = nan_to_num(&x.detach(), Some(0.0), Some(inf), Some(-inf))?;
        return sum(&to_dtype(&zeroed, to)?, dims, keepdim);
    };
    apply(
        "aten::nansum",
        &[x],
        || reduce_kernel(ReduceOp::NanSum, &data, &d, keepdim),
        |_| {
            let mut s = super::elementwise::Saver::default();
            let saved = s.input_if(true, x);
            let node = NansumBackward0 {
                r: ReduceDims::new(shape.clone(), &d, keepdim),
                given: dims.map(<[i64]>::to_vec),
                to,
                saved,
            };
            (BackwardOp::from(node), s.list)
        },
    )
}

/// NansumBackward0: `grad` (in the input's dtype) brought back to the input's shape,
/// times `!isnan(self)` (a multiply by the mask, as torch's `nansum_backward`).
#[derive(Clone)]
pub struct NansumBackward0 {
    r: Box<ReduceDims>,
    /// the dims as given, unwrapped (None: all of them; torch's `_saved_dim`, which shows
    /// a negative dim as its uint64 bits)
    given: Option<Vec<i64>>,
    /// the result's dtype (`dtype=`, else the input's): the forward derivative's
    to: DType,
    saved: Option<u8>,
}
impl Backward for NansumBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![
            (
                "dim",
                self.given.as_ref().map_or(F::None, |g| F::Ints(g.clone())),
            ),
            ("keepdim", F::Bool(self.r.keepdim)),
            ("self", F::Tensor(self.saved)),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "NansumBackward0".into()
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
    // derivatives.yaml: result: at::where(self_p.isnan(), 0, self_t).sum(dim, keepdim, dtype)
    // (a select, not a multiply: a NaN or infinite tangent where the input is NaN counts
    // as 0, as torch's)
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let t = t.first()?.as_ref()?;
        Some((|| {
            let x = super::elementwise::get(ctx, self.saved)?;
            let isnan = compare(BinaryOp::Ne, Operand::T(&x), Operand::T(&x))?;
            let kept = where_op(&isnan, Operand::S(Scalar::Float(0.0)), Operand::T(t))?;
            let kept = to_dtype(&kept, self.to)?;
            Ok(smallvec::smallvec![Some(self.r.reduce(&kept)?)])
        })())
    }
}
impl NansumBackward0 {
    fn grads(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>], batched: bool) -> Result<Grads> {
        let g = grad0(g)?;
        let x = super::elementwise::get(ctx, self.saved)?;
        let g = if g.dtype() == x.dtype() {
            g
        } else {
            to_dtype(&g, x.dtype())?
        };
        let back = self.r.expand_back_maybe_batched(&g, batched)?;
        Ok(smallvec::smallvec![Some(mul(&back, &eq(&x, &x)?)?)])
    }
}

fn require_float(x: &Tensor, op: &str) -> Result<()> {
    if x.dtype().is_float() {
        return Ok(());
    }
    let name = match x.dtype() {
        DType::I64 => "Long",
        DType::Bool => "Bool",
        _ => "Float",
    };
    Err(Error::not_implemented(match op {
        "std" | "var" => "std and var only support floating point and complex dtypes".to_string(),
        "linalg.vector_norm" => format!(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {name}"
        ),
        _ => format!(
            "{op}(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {name}"
        ),
    }))
}

/// `x.mean()` / `x.mean(dims, keepdim)`.
pub fn mean(x: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    require_float(x, "mean")?;
    let d = resolve_dims(x, dims)?;
    let shape = x.shape();
    let n: usize = d.iter().map(|&i| shape[i]).product();
    let full = dims.is_none();
    apply(
        "aten::mean",
        &[x],
        || reduce_kernel(ReduceOp::Mean, x, &d, keepdim),
        |_| {
            if full {
                (
                    BackwardOp::from(MeanBackward0 {
                        shape: shape.clone(),
                        n,
                    }),
                    saved![],
                )
            } else {
                (
                    BackwardOp::from(MeanBackward1 {
                        r: ReduceDims::new(shape.clone(), &d, keepdim),
                        n,
                    }),
                    saved![],
                )
            }
        },
    )
}

#[derive(Clone)]
pub struct MeanBackward0 {
    shape: Shape,
    n: usize,
}
impl Backward for MeanBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![
            ("self_sym_numel", F::Int(self.n as i64)),
            ("self_sym_sizes", F::ints(&self.shape)),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "MeanBackward0".into()
    }
    // d mean(x)/dx = 1/N
    fn jvp(&self, _ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let t = t.first()?.as_ref()?;
        let m = sum(t, None, false).and_then(|s| div_scalar(&s, Scalar::Int(self.n as i64)));
        Some(m.map(|m| smallvec::smallvec![Some(m)]))
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = div_scalar(&grad0(g)?, Scalar::Float(self.n as f64))?;
        Ok(smallvec::smallvec![Some(expand(&g, &self.shape)?)])
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| {
            let g = div_scalar(&g, Scalar::Float(self.n as f64))?;
            Ok(smallvec::smallvec![Some(expand_all_batched(
                &g,
                &self.shape,
                batch
            )?)])
        }))
    }
}

#[derive(Clone)]
pub struct MeanBackward1 {
    r: Box<ReduceDims>,
    n: usize,
}
impl Backward for MeanBackward1 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        self.r.saved_fields([
            (
                "self_sym_numel",
                F::Int(self.r.shape.iter().product::<usize>() as i64),
            ),
            ("self_sym_sizes", F::ints(&self.r.shape)),
        ])
    }
    fn name(&self) -> Cow<'static, str> {
        "MeanBackward1".into()
    }
    fn jvp(&self, _ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let t = t.first()?.as_ref()?;
        let m = self
            .r
            .reduce(t)
            .and_then(|s| div_scalar(&s, Scalar::Int(self.n as i64)));
        Some(m.map(|m| smallvec::smallvec![Some(m)]))
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = div_scalar(&grad0(g)?, Scalar::Float(self.n as f64))?;
        Ok(smallvec::smallvec![Some(self.r.expand_back(&g)?)])
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| {
            let g = div_scalar(&g, Scalar::Float(self.n as f64))?;
            Ok(smallvec::smallvec![Some(self.r.expand_back_batched(&g)?)])
        }))
    }
}

/// `x.prod()` / `x.prod(dim, keepdim)`.
pub fn prod(x: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
    let dl = dim.map(|d| [d]);
    let d = resolve_dims(x, dl.as_ref().map(|a| a.as_slice()))?;
    let shape = x.shape();
    apply(
        "aten::prod",
        &[x],
        || reduce_kernel(ReduceOp::Prod, x, &d, keepdim),
        |y| {
            let mut s = Saver::default();
            s.input_if(true, x);
            s.output(y);
            if dim.is_none() {
                (
                    BackwardOp::from(ProdBackward0(ProdGrad {
                        r: ReduceDims::new(shape.clone(), &d, false),
                    })),
                    s.list,
                )
            } else {
                (
                    BackwardOp::from(ProdBackward1(ProdGrad {
                        r: ReduceDims::new(shape.clone(), &d, keepdim),
                    })),
                    s.list,
                )
            }
        },
    )
}

#[derive(Clone)]
pub struct ProdGrad {
    r: Box<ReduceDims>,
}
impl ProdGrad {
    // d prod(x)/dx_i = Π_{j≠i} x_j. Without zeros that is y/x_i (cheap, and y carries
    // history for double backward). With zeros in the input it is the exclusive product,
    // computed in O(n) when only values are needed and, under create_graph, with a
    // differentiable O(n²) construction so that second derivatives are exact (torch makes
    // the same value-dependent choice in prod_backward).
    //
    // `batched`: `g` has a leading dim of samples (`apply_batched`). The factor `d` is
    // the same for every sample (it depends on x alone), so it is computed once and
    // broadcast against `[B, *x.shape]`; the zero test is over x, as per sample.
    fn grad(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>], batched: bool) -> Result<Grads> {
        let (x, y) = (ctx.saved(0)?, ctx.saved(1)?);
        let g = self.r.expand_back_maybe_batched(&grad0(g)?, batched)?;
        let any_zero = with_grad_mode(false, || any_true(&eq_scalar(&x, 0.0)?))?;
        let d = if !any_zero {
            let y = self.r.expand_back(&y)?;
            div(&y, &x)?
        } else {
            exclusive_prod(&x, &self.r.dims)?
        };
        Ok(smallvec::smallvec![Some(mul(&g, &d)?)])
    }
}

/// Maps a [rows, n] working tensor back to the input's layout.
type Restore = Box<dyn Fn(&Tensor) -> Result<Tensor>>;

/// `E_i = Π_{j≠i} x_j` over the reduced `dims` (all of them, or one), same shape as x.
fn exclusive_prod(x: &Tensor, dims: &[usize]) -> Result<Tensor> {
    let shape = x.shape();
    let full = dims.len() != 1 || shape.len() <= 1;
    // Work on [rows, n] with the reduced elements along the last axis.
    let (work, back): (Tensor, Restore) = if full {
        let dims_i: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        (
            reshape(x, &[1, -1])?,
            Box::new(move |e: &Tensor| reshape(e, &dims_i)),
        )
    } else {
        let d = dims[0] as i64;
        let m = transpose(x, d, -1)?;
        let ms: Vec<i64> = m.shape().iter().map(|&v| v as i64).collect();
        let n = *ms.last().unwrap_or(&1);
        (
            reshape(&contiguous(&m)?, &[-1, n])?,
            Box::new(move |e: &Tensor| transpose(&reshape(e, &ms)?, d, -1)),
        )
    };
    let ws = work.shape();
    let (rows, n) = (ws[0], ws[1]);
    let e = if !crate::ops::unrecorded() {
        // M[r, i, j] = x[r, j] with the diagonal set to 1; E = Π_j M[r, i, j]
        let a = expand(&unsqueeze(&work, 1)?, &[rows, n, n])?;
        let eye_mask = to_dtype(&eye(n, n, DType::F64)?, DType::Bool)?;
        let one = scalar_tensor(Scalar::Float(1.0), x.dtype());
        let m = where_(&eye_mask, &expand(&one, &[rows, n, n])?, &a)?;
        prod(&m, Some(-1), false)?
    } else {
        // prefix and suffix products, in f64
        let w = to_dtype(&contiguous(&work)?, DType::F64)?;
        let s = w.snapshot();
        let out = k::exclusive_prod_rows(&s.storage.read(), &s.layout)?
            .ok_or_else(|| Error::Internal("exclusive_prod: expected float64 values".into()))?;
        to_dtype(&new_tensor(out, &[rows, n]), x.dtype())?
    };
    back(&e)
}

/// `x.all(dims, keepdim)` (`all`) or `x.any(dims, keepdim)`: whether every (some)
/// element along `dims` (all of them when `None`) is nonzero, as a bool tensor.
pub fn all_any(x: &Tensor, dims: Option<&[i64]>, keepdim: bool, all: bool) -> Result<Tensor> {
    let d = resolve_dims(x, dims)?;
    let op = if all { ReduceOp::All } else { ReduceOp::Any };
    super::apply_nondiff(if all { "aten::all" } else { "aten::any" }, || {
        reduce_kernel(op, &x.detach(), &d, keepdim)
    })
}

/// Whether any element of a tensor is nonzero (torch's `any()`, as a Rust bool).
pub fn any_true(t: &Tensor) -> Result<bool> {
    let s = t.snapshot();
    k::any_nonzero(&s.storage.read(), &s.layout)
}

#[derive(Clone)]
pub struct ProdBackward0(ProdGrad);
impl Backward for ProdBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![("result", F::Tensor(Some(1))), ("self", F::Tensor(Some(0)))]
    }
    fn name(&self) -> Cow<'static, str> {
        "ProdBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.0.grad(ctx, g, false)
    }
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.0.grad(ctx, g, true))
    }
}
#[derive(Clone)]
pub struct ProdBackward1(ProdGrad);
impl Backward for ProdBackward1 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        let dim = self.0.r.dims.first().map_or(F::None, |&d| F::Int(d as i64));
        vec![
            ("dim", dim),
            ("keepdim", F::Bool(self.0.r.keepdim)),
            ("result", F::Tensor(Some(1))),
            ("self", F::Tensor(Some(0))),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "ProdBackward1".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.0.grad(ctx, g, false)
    }
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.0.grad(ctx, g, true))
    }
}

/// `var` / `std` over `dims` with `correction` (torch's default: 1, unbiased).
pub fn var_std(
    x: &Tensor,
    dims: Option<&[i64]>,
    correction: f64,
    keepdim: bool,
    is_std: bool,
) -> Result<Tensor> {
    require_float(x, if is_std { "std" } else { "var" })?;
    let d = resolve_dims(x, dims)?;
    let shape = x.shape();
    let n: usize = d.iter().map(|&i| shape[i]).product();
    let di: Vec<i64> = d.iter().map(|&i| i as i64).collect();
    apply(
        if is_std { "aten::std" } else { "aten::var" },
        &[x],
        || {
            let sx = x.snapshot();
            let fused = k::var(&sx.storage.read(), &sx.layout, &d, correction, is_std)?;
            if let Some(buf) = fused {
                return Ok(new_tensor(buf, &out_shape(&sx.layout.shape, &d, keepdim)));
            }
            with_grad_mode(false, || {
                let m = mean(x, Some(&di), true)?;
                let c = sub(x, &m)?;
                let ss = sum(&mul(&c, &c)?, Some(&di), keepdim)?;
                let v = div_scalar(&ss, Scalar::Float((n as f64 - correction).max(0.0)))?;
                if is_std { sqrt(&v) } else { Ok(v) }
            })
        },
        |y| {
            // (what torch saves: var's formula reads x, std's also its result)
            let mut s = Saver::default();
            s.input_if(true, x);
            if is_std {
                s.output(y);
            }
            let g = VarGrad {
                r: ReduceDims::new(shape.clone(), &d, keepdim),
                correction,
                n,
            };
            if is_std {
                (BackwardOp::from(StdBackward0(g)), s.list)
            } else {
                (BackwardOp::from(VarBackward0(g)), s.list)
            }
        },
    )
}

#[derive(Clone)]
pub struct VarGrad {
    r: Box<ReduceDims>,
    correction: f64,
    n: usize,
}
impl VarGrad {
    // d var/dx = 2(x - mean)/(N - c);  d std/dx = d var/dx / (2 std), taken as 0 where
    // std = 0 (torch's std_backward masks it, so equal values give 0, not 0/0). Computed
    // in torch's order: the std's gradient becomes a variance gradient first.
    /// (`batched`: `g` has a leading batch dim; the saved tensors broadcast against it)
    fn grad(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        is_std: bool,
        batched: bool,
    ) -> Result<Grads> {
        let x = ctx.saved(0)?;
        let di: Vec<i64> = self.r.dims.iter().map(|&i| i as i64).collect();
        let c = sub(&x, &mean(&x, Some(&di), true)?)?;
        let mut g = grad0(g)?;
        if is_std {
            let y = ctx.saved(1)?;
            let gv = div(&g, &mul_scalar(&y, Scalar::Float(2.0))?)?;
            g = super::masked_fill(&gv, &super::eq_scalar(&y, 0.0)?, Scalar::Float(0.0))?;
        }
        let g = self.r.expand_back_maybe_batched(&g, batched)?;
        let denom = self.n as f64 - self.correction;
        let r = mul(&mul_scalar(&g, Scalar::Float(2.0 / denom))?, &c)?;
        Ok(smallvec::smallvec![Some(r)])
    }
}
#[derive(Clone)]
pub struct VarBackward0(VarGrad);
impl Backward for VarBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![("self", F::Tensor(Some(0)))]
    }
    fn name(&self) -> Cow<'static, str> {
        "VarBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.0.grad(ctx, g, false, false)
    }
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.0.grad(ctx, g, false, true))
    }
}
#[derive(Clone)]
pub struct StdBackward0(VarGrad);
impl Backward for StdBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![("result", F::Tensor(Some(1))), ("self", F::Tensor(Some(0)))]
    }
    fn name(&self) -> Cow<'static, str> {
        "StdBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.0.grad(ctx, g, true, false)
    }
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.0.grad(ctx, g, true, true))
    }
}

/// norm's `p` given as a string: "fro", the Frobenius norm (the 2-norm of the elements),
/// is the one rgrad has.
pub fn norm_order(p: &str) -> Result<f64> {
    match p {
        "fro" => Ok(2.0),
        _ => Err(Error::runtime(format!("norm: unsupported p '{p}'"))),
    }
}

/// Vector p-norm over `dims` (torch.norm / linalg.vector_norm) for p in {1, 2, other
/// finite p, inf}.
pub fn norm(x: &Tensor, p: f64, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    require_float(x, "linalg.vector_norm")?;
    let d = resolve_dims(x, dims)?;
    let di: Vec<i64> = d.iter().map(|&i| i as i64).collect();
    let shape = x.shape();
    apply(
        "aten::linalg_vector_norm",
        &[x],
        || {
            with_grad_mode(false, || {
                if p == 2.0 {
                    // Σ|x|² in one pass (|x|² is x·x, as pow 2 computes it)
                    let sx = x.snapshot();
                    if let Some(buf) = k::sum_squares(&sx.storage.read(), &sx.layout, &d)? {
                        let s = new_tensor(buf, &out_shape(&sx.layout.shape, &d, keepdim));
                        return pow_scalar(&s, Scalar::Float(0.5));
                    }
                }
                let a = abs(x)?;
                if p.is_infinite() {
                    return amax(&a, Some(&di), keepdim, p > 0.0, false);
                }
                if p == 0.0 {
                    // the number of nonzero elements, in x's dtype (torch's ord=0)
                    let nz = to_dtype(&ne_scalar(&a, 0.0)?, x.dtype())?;
                    return sum(&nz, Some(&di), keepdim);
                }
                if p == 1.0 {
                    return sum(&a, Some(&di), keepdim);
                }
                let s = sum(&pow_scalar(&a, Scalar::Float(p))?, Some(&di), keepdim)?;
                pow_scalar(&s, Scalar::Float(1.0 / p))
            })
        },
        |y| {
            let mut s = Saver::default();
            s.input_if(true, x);
            s.output(y);
            (
                NormBackward0 {
                    r: ReduceDims::new(shape, &d, keepdim),
                    p,
                },
                s.list,
            )
        },
    )
}

#[derive(Clone)]
pub struct NormBackward0 {
    r: Box<ReduceDims>,
    p: f64,
}
impl Backward for NormBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![("result", F::Tensor(Some(1))), ("self", F::Tensor(Some(0)))]
    }
    fn name(&self) -> Cow<'static, str> {
        "LinalgVectorNormBackward0".into()
    }
    // p=1: sign(x); p=2: x/‖x‖ (0 where ‖x‖ = 0); general: x·|x|^(p-2)/‖x‖^(p-1)
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

impl NormBackward0 {
    fn grads(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>], batched: bool) -> Result<Grads> {
        if self.p == 0.0 {
            // torch's norm_backward gives no gradient for ord = 0 (a count)
            return Ok(smallvec::smallvec![None]);
        }
        let (x, y) = (ctx.saved(0)?, ctx.saved(1)?);
        let d = norm_grad(&self.r, &x, &y, &grad0(g)?, self.p, batched)?;
        Ok(smallvec::smallvec![Some(d)])
    }
}

/// The gradient of the vector p-norm `y` of `x` over `r`'s dims, for the gradient `g`
/// of `y` (torch's `norm_backward`): p=0: zeros; p=1: sign(x); p=∞: sign(x) at the
/// elements whose |x| is the norm, split evenly; p=2: x/‖x‖; other p:
/// x·|x|^(p-2)/‖x‖^(p-1); 0 where the norm is 0.
pub(super) fn norm_grad(
    r: &ReduceDims,
    x: &Tensor,
    y: &Tensor,
    g: &Tensor,
    p: f64,
    batched: bool,
) -> Result<Tensor> {
    let g = r.expand_back_maybe_batched(g, batched)?;
    if p == 0.0 {
        return mul(&g, &zeros_like(x)?);
    }
    let y = r.expand_back(y)?;
    let d = if p == 1.0 {
        sign(x)?
    } else if p.is_infinite() {
        let mask = to_dtype(&eq(&abs(x)?, &y)?, x.dtype())?;
        let di: Vec<i64> = r.dims.iter().map(|&i| i as i64).collect();
        let count = expand(&sum(&mask, Some(&di), true)?, &r.shape)?;
        div(&mul(&sign(x)?, &mask)?, &count)?
    } else {
        let num = if p == 2.0 {
            x.clone()
        } else {
            mul(x, &pow_scalar(&abs(x)?, Scalar::Float(p - 2.0))?)?
        };
        let den = if p == 2.0 {
            y.clone()
        } else {
            pow_scalar(&y, Scalar::Float(p - 1.0))?
        };
        let q = div(&num, &den)?;
        let zero = eq_scalar(&y, 0.0)?;
        where_(&zero, &zeros_like(&q)?, &q)?
    };
    mul(&g, &d)
}

/// `logsumexp(x, dims, keepdim)`, computed stably around the max.
pub fn logsumexp(x: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    let x = if x.dtype().is_float() {
        x.clone()
    } else {
        to_dtype(x, DType::default_float())?
    };
    let d = resolve_dims(&x, Some(dims))?;
    let di: Vec<i64> = d.iter().map(|&i| i as i64).collect();
    let shape = x.shape();
    apply(
        "aten::logsumexp",
        &[&x],
        || {
            with_grad_mode(false, || {
                if x.numel() == 0 {
                    return log(&sum(&exp(&x)?, Some(&di), keepdim)?);
                }
                let sx = x.snapshot();
                if let Some(buf) = k::logsumexp(&sx.storage.read(), &sx.layout, &d)? {
                    return Ok(new_tensor(buf, &out_shape(&sx.layout.shape, &d, keepdim)));
                }
                let m = amax(&x, Some(&di), true, true, false)?;
                // keep infinities of the max from producing nan (torch does the same)
                let finite = eq(&m, &m)?;
                let m = where_(
                    &logical_and(
                        &finite,
                        &lt(
                            &abs(&m)?,
                            &scalar_tensor(Scalar::Float(f64::INFINITY), m.dtype()),
                        )?,
                    )?,
                    &m,
                    &zeros_like(&m)?,
                )?;
                let s = sum(&exp(&sub(&x, &m)?)?, Some(&di), true)?;
                let r = add(&log(&s)?, &m)?;
                if keepdim {
                    Ok(r)
                } else {
                    squeeze_dims(&r, &di)
                }
            })
        },
        |y| {
            let mut s = Saver::default();
            s.input_if(true, &x);
            s.output(y);
            (
                LogsumexpBackward0 {
                    r: ReduceDims::new(shape, &d, keepdim),
                },
                s.list,
            )
        },
    )
}

#[derive(Clone)]
pub struct LogsumexpBackward0 {
    r: Box<ReduceDims>,
}
impl Backward for LogsumexpBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        self.r
            .saved_fields([("result", F::Tensor(Some(1))), ("self", F::Tensor(Some(0)))])
    }
    fn name(&self) -> Cow<'static, str> {
        "LogsumexpBackward0".into()
    }
    // d lse/dx = exp(x - lse) = softmax(x)
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

impl LogsumexpBackward0 {
    fn grads(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>], batched: bool) -> Result<Grads> {
        let (x, y) = (ctx.saved(0)?, ctx.saved(1)?);
        let g = self.r.expand_back_maybe_batched(&grad0(g)?, batched)?;
        let y = self.r.expand_back(&y)?;
        Ok(smallvec::smallvec![Some(mul(&g, &exp(&sub(&x, &y)?)?)?)])
    }
}
