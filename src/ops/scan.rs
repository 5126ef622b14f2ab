//! Cumulative ops along one dim: cumsum and cumprod (the backend's `cumulative` kernel).

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
