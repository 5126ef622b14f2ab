//! Cumulative ops along one dim: cumsum and cumprod (the backend's `cumulative` kernel),
//! cummax and cummin (`cum_extreme`: the running value and its index) and logcumsumexp.

use super::elementwise::{Saver, grad0};
use super::{apply, new_tensor};
use crate::autograd::function::{Backward, BackwardCtx, Grads, SavedField};
use crate::backend as k;
use crate::dtype::DType;
use crate::shape::wrap_dim;
use crate::tensor::Tensor;
use crate::{Error, Result, saved};
use std::borrow::Cow;

/// `torch.cumsum(x, dim, dtype=dtype)`: running sums along `dim`. Integers and bools give
/// int64 unless `dtype` says otherwise.
pub fn cumsum(x: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    cumulative(x, dim, dtype, false)
}

/// `torch.cumprod(x, dim, dtype=dtype)`: running products along `dim`.
pub fn cumprod(x: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    cumulative(x, dim, dtype, true)
}

fn cumulative(x: &Tensor, dim: i64, dtype: Option<DType>, prod: bool) -> Result<Tensor> {
    let s = x.snapshot();
    let d = wrap_dim(dim, s.layout.ndim())?;
    let in_dtype = s.dtype;
    let out_dtype = dtype.unwrap_or(if in_dtype.is_float() {
        in_dtype
    } else {
        DType::I64
    });
    if out_dtype == DType::Bool {
        let kernel = if prod {
            "cumprod_out_cpu"
        } else {
            "cumsum_out_cpu"
        };
        return Err(Error::not_implemented(format!(
            "\"{kernel}\" not implemented for 'Bool'"
        )));
    }
    if !out_dtype.is_float() && super::any_requires_grad(&[x]) {
        return Err(Error::runtime(format!(
            "Autograd not support dtype: {}",
            out_dtype.scalar_type_name()
        )));
    }
    let shape = s.layout.shape.clone();
    let forward = || {
        let buf = if in_dtype == out_dtype {
            k::cumulative(&s.storage.read(), &s.layout, d, prod)?
        } else {
            let cast = k::cast(&s.storage.read(), &s.layout, out_dtype)?;
            k::cumulative(&cast, &crate::layout::Layout::contiguous(&shape), d, prod)?
        };
        Ok(new_tensor(buf, &shape))
    };
    if prod {
        apply("aten::cumprod", &[x], forward, |y| {
            let mut sv = Saver::default();
            sv.input_if(true, x);
            sv.output(y);
            (CumprodBackward0 { dim, in_dtype }, sv.list)
        })
    } else {
        apply("aten::cumsum", &[x], forward, |_| {
            (
                CumsumBackward0 {
                    dim,
                    in_dtype,
                    out_dtype,
                },
                saved![],
            )
        })
    }
}

/// `g` in the input's dtype (torch's `grad.to(self.scalar_type())`).
fn grad_as(g: Tensor, dtype: DType) -> Result<Tensor> {
    if g.dtype() == dtype {
        Ok(g)
    } else {
        super::to_dtype(&g, dtype)
    }
}

/// The sums from each position to the end along `dim` (torch's `reversed_cumsum`).
fn reversed_cumsum(w: &Tensor, dim: usize) -> Result<Tensor> {
    let d = [dim as i64];
    super::flip(&cumsum(&super::flip(w, &d)?, dim as i64, None)?, &d)
}

/// torch's `cumsum_backward`: `g` summed from each position to the end along `dim`.
fn cumsum_backward(g: &Tensor, dim: usize) -> Result<Tensor> {
    let shape = g.shape();
    if g.numel() <= 1 || shape.get(dim).is_none_or(|&n| n == 1) {
        return Ok(g.clone());
    }
    reversed_cumsum(g, dim)
}

#[derive(Clone)]
pub struct CumsumBackward0 {
    /// as given
    dim: i64,
    in_dtype: DType,
    out_dtype: DType,
}
impl Backward for CumsumBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![("dim", SavedField::Int(self.dim))]
    }
    fn name(&self) -> Cow<'static, str> {
        "CumsumBackward0".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad_as(grad0(g)?, self.in_dtype)?;
        let d = wrap_dim(self.dim, g.ndim())?;
        Ok(smallvec::smallvec![Some(cumsum_backward(&g, d)?)])
    }
    fn jvp(&self, _ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let t = t.first()?.as_ref()?;
        Some(cumsum(t, self.dim, Some(self.out_dtype)).map(|r| smallvec::smallvec![Some(r)]))
    }
    fn apply_batched(
        &self,
        _ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| {
            let g = grad_as(g, self.in_dtype)?;
            let rank = g.ndim() - 1;
            if rank == 0 {
                return Ok(smallvec::smallvec![Some(g)]);
            }
            let d = wrap_dim(self.dim, rank)? + 1;
            if g.shape()[d] <= 1 {
                return Ok(smallvec::smallvec![Some(g)]);
            }
            Ok(smallvec::smallvec![Some(reversed_cumsum(&g, d)?)])
        }))
    }
}

#[derive(Clone)]
pub struct CumprodBackward0 {
    /// as given
    dim: i64,
    in_dtype: DType,
}

/// Whether `x` has an element equal to zero.
fn has_zero(x: &Tensor) -> Result<bool> {
    let z = super::eq_scalar(x, 0.0)?;
    let s = z.snapshot();
    k::any_nonzero(&s.storage.read(), &s.layout)
}

/// torch's `cumprod_backward`: `Σ_{j≥k} g_j ∂y_j/∂x_k` along `dim`. Without zeros in
/// `x`, `reversed_cumsum(y·g) / x`; with zeros, the explicit formula (each position's
/// products with it left out: the product of what comes before it times the running
/// products of what comes after), which needs no division and is itself differentiable,
/// as torch's formula for double backward is. `lead`: batch dims in front of `g` (a
/// batched backward: `x` and `y` broadcast against the samples).
fn cumprod_backward(g: &Tensor, x: &Tensor, dim: usize, y: &Tensor, lead: usize) -> Result<Tensor> {
    let shape = x.shape();
    let Some(&n) = shape.get(dim) else {
        return Ok(g.clone());
    };
    if x.numel() <= 1 || n == 1 {
        return Ok(g.clone());
    }
    if n == 0 {
        return super::zeros_like(g);
    }
    let gd = dim + lead;
    if !has_zero(x)? {
        return super::div(&reversed_cumsum(&super::mul(y, g)?, gd)?, x);
    }
    let (di, gdi) = (dim as i64, gd as i64);
    let mut parts = Vec::with_capacity(n);
    for kk in 0..n {
        let before = super::prod(&super::narrow(x, di, 0, kk as i64)?, Some(di), true)?;
        let after = cumprod(
            &super::narrow(x, di, kk as i64 + 1, (n - kk - 1) as i64)?,
            di,
            None,
        )?;
        let omitted = super::mul(
            &before,
            &super::cat(&[super::ones_like(&before)?, after], di)?,
        )?;
        let gk = super::narrow(g, gdi, kk as i64, (n - kk) as i64)?;
        parts.push(super::sum_dims(&super::mul(&gk, &omitted)?, &[gdi], true)?);
    }
    super::cat(&parts, gdi)
}

impl CumprodBackward0 {
    fn run(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>], lead: usize) -> Result<Grads> {
        let x = ctx.saved(0)?;
        let y = ctx.saved(1)?;
        let g = grad_as(grad0(g)?, self.in_dtype)?;
        let d = wrap_dim(self.dim, x.ndim())?;
        // (the result in the input's dtype, as the gradient is)
        let y = grad_as(y, self.in_dtype)?;
        Ok(smallvec::smallvec![Some(cumprod_backward(
            &g, &x, d, &y, lead
        )?)])
    }
}

impl Backward for CumprodBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("dim", SavedField::Int(self.dim)),
            ("result", SavedField::Tensor(Some(1))),
            ("self", SavedField::Tensor(Some(0))),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "CumprodBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.run(ctx, g, 0)
    }
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.run(ctx, g, 1))
    }
}

/// `torch.cummax(x, dim)` (`is_max`) or `torch.cummin(x, dim)`: the running max (min)
/// along `dim` and the index of each (int64; of equal values the last, a NaN once seen
/// kept). A 0-d input is its own result with index 0.
pub fn cum_extreme(x: &Tensor, dim: i64, is_max: bool) -> Result<(Tensor, Tensor)> {
    let name = if is_max { "cummax" } else { "cummin" };
    let s = x.snapshot();
    if s.layout.ndim() == 0 && dim != 0 && dim != -1 {
        return Err(Error::index(format!(
            "{name}(): Expected reduction dim -1 or 0 for scalar but got {dim}"
        )));
    }
    let d = wrap_dim(dim, s.layout.ndim())?;
    let shape = s.layout.shape.clone();
    let (vals, idx) = k::cum_extreme(&s.storage.read(), &s.layout, d, is_max)?;
    let indices = new_tensor(idx, &shape);
    let ind = indices.clone();
    let values = apply(
        if is_max {
            "aten::cummax"
        } else {
            "aten::cummin"
        },
        &[x],
        || Ok(new_tensor(vals, &shape)),
        |_| {
            let mut sv = Saver::default();
            sv.input_if(true, x);
            sv.input_if(true, &ind);
            (
                CumExtremeBackward0 {
                    dim,
                    is_max,
                    shape: shape.to_vec(),
                },
                sv.list,
            )
        },
    )?;
    Ok((values, indices))
}

/// `torch.cummax(x, dim)`.
pub fn cummax(x: &Tensor, dim: i64) -> Result<(Tensor, Tensor)> {
    cum_extreme(x, dim, true)
}

/// `torch.cummin(x, dim)`.
pub fn cummin(x: &Tensor, dim: i64) -> Result<(Tensor, Tensor)> {
    cum_extreme(x, dim, false)
}

/// CummaxBackward0 / CumminBackward0: torch's `cummaxmin_backward`, the gradient
/// scatter-added into zeros at the saved indices along `dim`.
#[derive(Clone)]
pub struct CumExtremeBackward0 {
    /// as given
    dim: i64,
    is_max: bool,
    shape: Vec<usize>,
}

impl CumExtremeBackward0 {
    /// `batch`: the samples in front of `g` in a batched backward (the indices expanded
    /// over them, the scatter one dim further in).
    fn run(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: Option<usize>,
    ) -> Result<Grads> {
        let x = ctx.saved(0)?;
        let idx = ctx.saved(1)?;
        let g = grad0(g)?;
        if x.numel() == 0 {
            // (torch returns the empty input itself)
            return Ok(smallvec::smallvec![Some(match batch {
                None => x.detach(),
                Some(_) => super::zeros_like(&g)?,
            })]);
        }
        if self.shape.is_empty() {
            return Ok(smallvec::smallvec![Some(g)]);
        }
        let d = wrap_dim(self.dim, self.shape.len())?;
        let r = match batch {
            None => super::scatter_add_zeros(&self.shape, d, &idx, &g)?,
            Some(b) => {
                let bshape = super::batched_shape(b, &self.shape);
                let idx = super::expand(&super::unsqueeze(&idx, 0)?, &bshape)?;
                super::scatter_add_zeros(&bshape, d + 1, &idx, &g)?
            }
        };
        Ok(smallvec::smallvec![Some(r)])
    }
}

impl Backward for CumExtremeBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("dim", SavedField::Int(self.dim)),
            ("indices", SavedField::Tensor(Some(1))),
            ("self", SavedField::Tensor(Some(0))),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        if self.is_max {
            "CummaxBackward0".into()
        } else {
            "CumminBackward0".into()
        }
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.run(ctx, g, None)
    }
    // values: self_t.gather(dim, indices)
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let t = t.first()?.as_ref()?;
        let run = || -> Result<Grads> {
            let idx = ctx.saved(1)?;
            if self.shape.is_empty() {
                return Ok(smallvec::smallvec![Some(t.clone())]);
            }
            Ok(smallvec::smallvec![Some(super::gather(t, self.dim, &idx)?)])
        };
        Some(run())
    }
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.run(ctx, g, Some(batch)))
    }
}

/// `torch.logcumsumexp(x, dim)`: the running `log Σ exp` along `dim` (float dtypes).
pub fn logcumsumexp(x: &Tensor, dim: i64) -> Result<Tensor> {
    let s = x.snapshot();
    let d = wrap_dim(dim, s.layout.ndim())?;
    if !s.dtype.is_float() {
        return Err(Error::not_implemented(format!(
            "\"logcumsumexp_out_cpu\" not implemented for '{}'",
            s.dtype.scalar_type_name()
        )));
    }
    let shape = s.layout.shape.clone();
    apply(
        "aten::logcumsumexp",
        &[x],
        || {
            let buf = k::logcumsumexp(&s.storage.read(), &s.layout, d)?
                .ok_or_else(|| Error::Internal("logcumsumexp: a float buffer".into()))?;
            Ok(new_tensor(buf, &shape))
        },
        |y| {
            let mut sv = Saver::default();
            sv.input_if(true, x);
            sv.output(y);
            (LogcumsumexpBackward0 { dim }, sv.list)
        },
    )
}

/// The running `logcumsumexp` from each position to the end along `dim`.
fn reverse_logcumsumexp(x: &Tensor, dim: usize) -> Result<Tensor> {
    let d = [dim as i64];
    super::flip(&logcumsumexp(&super::flip(x, &d)?, dim as i64)?, &d)
}

/// torch's `logcumsumexp_backward`: with `G⁺ = log g` where g > 0 (else the dtype's
/// lowest), `G⁻ = log(-g)` where g < 0, the gradient
/// `exp(rlcse(G⁺ - y) + x) - exp(rlcse(G⁻ - y) + x)` (rlcse: the reversed
/// logcumsumexp along `dim`). `dim`: in g's dims (a batched backward: past the samples').
fn logcumsumexp_backward(g: &Tensor, x: &Tensor, y: &Tensor, dim: usize) -> Result<Tensor> {
    if g.ndim() == 0 || g.numel() == 0 {
        return Ok(g.clone());
    }
    let lowest = if g.dtype() == DType::F32 {
        f64::from(f32::MIN)
    } else {
        f64::MIN
    };
    let min = super::scalar_tensor(crate::dtype::Scalar::Float(lowest), g.dtype());
    let log_abs = super::log(&super::abs(g)?)?;
    let pos = super::where_(&super::gt_scalar(g, 0.0)?, &log_abs, &min)?;
    let neg = super::where_(&super::lt_scalar(g, 0.0)?, &log_abs, &min)?;
    let out_pos = super::exp(&super::add(
        &reverse_logcumsumexp(&super::sub(&pos, y)?, dim)?,
        x,
    )?)?;
    let out_neg = super::exp(&super::add(
        &reverse_logcumsumexp(&super::sub(&neg, y)?, dim)?,
        x,
    )?)?;
    super::sub(&out_pos, &out_neg)
}

#[derive(Clone)]
pub struct LogcumsumexpBackward0 {
    /// as given
    dim: i64,
}

impl Backward for LogcumsumexpBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("dim", SavedField::Int(self.dim)),
            ("result", SavedField::Tensor(Some(1))),
            ("self", SavedField::Tensor(Some(0))),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "LogcumsumexpBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let (x, y) = (ctx.saved(0)?, ctx.saved(1)?);
        let g = grad0(g)?;
        let d = wrap_dim(self.dim, x.ndim())?;
        Ok(smallvec::smallvec![Some(logcumsumexp_backward(
            &g, &x, &y, d
        )?)])
    }
    // torch's logcumsumexp_jvp: e = exp(x - max(x, dim, keepdim)),
    // cumsum(e·t) / (cumsum(e) + 1e-13)
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let t = t.first()?.as_ref()?;
        let run = || -> Result<Grads> {
            let x = ctx.saved(0)?;
            if x.numel() == 0 {
                return Ok(smallvec::smallvec![Some(t.clone())]);
            }
            let (m, _) = super::max_dim(&x, self.dim, true, true)?;
            let e = super::exp(&super::sub(&x, &m)?)?;
            let num = cumsum(&super::mul(&e, t)?, self.dim, None)?;
            let den = super::add_scalar(
                &cumsum(&e, self.dim, None)?,
                crate::dtype::Scalar::Float(1e-13),
            )?;
            Ok(smallvec::smallvec![Some(super::div(&num, &den)?)])
        };
        Some(run())
    }
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        let run = || -> Result<Grads> {
            let (x, y) = (ctx.saved(0)?, ctx.saved(1)?);
            let g = grad0(g)?;
            if x.ndim() == 0 || x.numel() == 0 {
                return Ok(smallvec::smallvec![Some(g)]);
            }
            let d = wrap_dim(self.dim, x.ndim())? + 1;
            Ok(smallvec::smallvec![Some(logcumsumexp_backward(
                &g, &x, &y, d
            )?)])
        };
        Some(run())
    }
}
