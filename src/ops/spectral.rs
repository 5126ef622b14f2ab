//! The spectral decompositions as ops with nodes of their own, as torch's:
//! `linalg.eigh` / `eigvalsh` (LinalgEighBackward0), `linalg.svd` / `svdvals` /
//! `torch.svd` (LinalgSvdBackward0) and `linalg.qr` (LinalgQrBackward0). The forwards
//! run `crate::backend::linalg`'s float64 kernels on the host, matrix by matrix (a CUDA input is
//! copied to the host and its results back); the backward and forward-AD formulas are
//! torch's (FunctionsManual.cpp's `linalg_eig_backward` / `linalg_eig_jvp` for a
//! Hermitian input, `svd_backward` / `linalg_svd_jvp`, `linalg_qr_backward` /
//! `linalg_qr_jvp`), written with recorded ops so that they can be differentiated again.

use super::*;
use crate::autograd::function::{Backward, BackwardCtx, Grads, SavedField};
use crate::autograd::grad_mode::with_grad_mode;
use crate::autograd::saved::SavedTensor;
use crate::dtype::{DType, Scalar};
use crate::storage::Buffer;
use crate::{Error, Result};
use std::borrow::Cow;

/// `(batch, m, n)` of a `(*, m, n)` input (its rank checked by the caller).
fn dims(a: &Tensor) -> (Vec<usize>, usize, usize) {
    let sh = a.shape();
    let nd = sh.len();
    let (m, n) = (
        sh.get(nd.wrapping_sub(2)).copied().unwrap_or(0),
        sh.get(nd.wrapping_sub(1)).copied().unwrap_or(0),
    );
    (
        sh.iter().take(nd.saturating_sub(2)).copied().collect(),
        m,
        n,
    )
}

/// The input's elements as float64, row-major, on the host.
fn host_f64(a: &Tensor) -> Result<Vec<f64>> {
    let c = contiguous(&to_dtype(&a.detach(), DType::F64)?)?;
    let s = c.snapshot();
    let (off, len) = (s.layout.offset, s.layout.numel());
    let buf = s.storage.read();
    let buf = crate::backend::host::read(&buf)?;
    match &*buf {
        Buffer::F64(v) => v
            .get(off..off + len)
            .map(<[f64]>::to_vec)
            .ok_or_else(|| Error::Internal("spectral: input out of its storage".into())),
        _ => Err(Error::Internal("spectral: a float64 copy expected".into())),
    }
}

/// A result tensor of `shape` from float64 values, rounded to `dtype`, on `device`.
fn result(
    data: Vec<f64>,
    shape: &[usize],
    dtype: DType,
    device: crate::device::Device,
) -> Result<Tensor> {
    let buf = match dtype {
        DType::F32 => Buffer::F32(data.iter().map(|&x| x as f32).collect::<Vec<f32>>().into()),
        _ => Buffer::F64(data.into()),
    };
    new_tensor_on(buf, shape, device)
}

/// `batch` followed by `tail`, checked to be allocatable in `dtype`.
fn shape_of(batch: &[usize], tail: &[usize], dtype: DType) -> Result<Vec<usize>> {
    let s: Vec<usize> = batch.iter().chain(tail).copied().collect();
    crate::storage::alloc_guard(&s, dtype)?;
    Ok(s)
}

/// torch's prefix naming the failing matrix of a batch ("" for one matrix).
fn batch_element(batch: &[usize], b: usize) -> String {
    if batch.is_empty() {
        String::new()
    } else {
        format!("(Batch element {b}): ")
    }
}

fn not_float(a: &Tensor, op: &str) -> Error {
    Error::not_implemented(format!(
        "{op}: Expected a floating point or complex tensor as input. Got {}",
        a.dtype().scalar_type_name()
    ))
}

fn at_least_2d(a: &Tensor, op: &str) -> Result<()> {
    if a.ndim() < 2 {
        return Err(Error::runtime(format!(
            "{op}: The input tensor A must have at least 2 dimensions."
        )));
    }
    Ok(())
}

/// The last two dims swapped (torch's `mT`).
fn mt(x: &Tensor) -> Result<Tensor> {
    transpose(x, -2, -1)
}

fn diag(x: &Tensor) -> Result<Tensor> {
    diagonal(x, 0, -2, -1)
}

fn diag_mat(x: &Tensor) -> Result<Tensor> {
    diag_embed(x, 0, -2, -1)
}

/// The n×n identity in `like`'s dtype, on its device.
fn eye_like(n: usize, like: &Tensor) -> Result<Tensor> {
    let e = eye(n, n, like.dtype())?;
    if e.device() == like.device() {
        Ok(e)
    } else {
        to_device(&e, like.device())
    }
}

/// `x.unsqueeze(-2) - x.unsqueeze(-1)` (E_ij = x_j − x_i) with ones on the diagonal
/// (torch fills them in place; adding the identity gives the same values and gradients,
/// as the diagonal differences are exactly zero).
fn gap_matrix(x: &Tensor) -> Result<Tensor> {
    let n = x.shape().last().copied().unwrap_or(0);
    let e = sub(&unsqueeze(x, -2)?, &unsqueeze(x, -1)?)?;
    add(&e, &eye_like(n, x)?)
}

fn half(x: &Tensor) -> Result<Tensor> {
    mul_scalar(x, Scalar::Float(0.5))
}

// ---------------------------------------------------------------------------------
// eigh
// ---------------------------------------------------------------------------------

/// `linalg.eigh(A, UPLO)` (and `eigvalsh`, `compute_v` false when nothing needs the
/// eigenvectors): (eigenvalues ascending, eigenvectors as columns) of the symmetric
/// matrices whose `UPLO` triangle is A's; eigenvectors is an empty tensor without
/// `compute_v`. One node, LinalgEighBackward0, for both results.
pub fn linalg_eigh(a: &Tensor, uplo: &str, compute_v: bool) -> Result<(Tensor, Tensor)> {
    at_least_2d(a, "linalg.eigh")?;
    let (batch, m, n) = dims(a);
    if m != n {
        return Err(Error::runtime(format!(
            "linalg.eigh: A must be batches of square matrices, but they are {m} by {n} matrices"
        )));
    }
    let lower = match uplo {
        "L" | "l" => true,
        "U" | "u" => false,
        _ => {
            return Err(Error::runtime(format!(
                "Expected UPLO argument to be 'L' or 'U', but got {uplo}"
            )));
        }
    };
    if !a.dtype().is_float() {
        return Err(Error::not_implemented(format!(
            "\"linalg_eigh_cpu\" not implemented for '{}'",
            a.dtype().scalar_type_name()
        )));
    }
    // the eigenvectors are needed by the backward and forward-AD formulas
    let compute_v = compute_v || records(&[a]);
    let (dtype, device) = (a.dtype(), a.device());
    let outs = apply_multi(
        "aten::_linalg_eigh",
        &[a],
        || {
            with_grad_mode(false, || {
                let data = host_f64(a)?;
                let count: usize = batch.iter().product();
                let per = n * n;
                let results = crate::backend::linalg::map_batch(count, per * n * 8, |b| {
                    crate::backend::linalg::eigh::eigh(
                        &data[b * per..(b + 1) * per],
                        n,
                        lower,
                        compute_v,
                    )
                });
                let mut w = Vec::with_capacity(count * n);
                let mut v = Vec::with_capacity(if compute_v { count * per } else { 0 });
                for (b, r) in results.into_iter().enumerate() {
                    let Some((wb, vb)) = r else {
                        return Err(Error::LinAlg(format!(
                            "linalg.eigh: {}The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated eigenvalues (error code: {}).",
                            batch_element(&batch, b),
                            n.saturating_sub(1)
                        )));
                    };
                    w.extend(wb);
                    v.extend(vb);
                }
                let values = result(w, &shape_of(&batch, &[n], dtype)?, dtype, device)?;
                let vectors = if compute_v {
                    result(v, &shape_of(&batch, &[n, n], dtype)?, dtype, device)?
                } else {
                    result(Vec::new(), &[0], dtype, device)?
                };
                Ok(vec![values, vectors])
            })
        },
        |outs| {
            let list = smallvec::smallvec![
                SavedTensor::output(&outs[0], 0),
                SavedTensor::output(&outs[1], 1)
            ];
            (LinalgEighBackward0, list)
        },
    )?;
    let mut it = outs.into_iter();
    match (it.next(), it.next()) {
        (Some(l), Some(v)) => Ok((l, v)),
        _ => Err(Error::Internal("linalg_eigh: two outputs".into())),
    }
}

/// LinalgEighBackward0: torch's `linalg_eig_backward` for a Hermitian input:
/// gA = V·(skew(VᵀgV)/2 / E + diag(gL))·Vᵀ, E_ij = L_j − L_i (1 on the diagonal);
/// with no gradient for the eigenvectors, V·diag(gL)·Vᵀ.
#[derive(Clone)]
pub struct LinalgEighBackward0;
impl Backward for LinalgEighBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("eigenvalues", SavedField::Tensor(Some(0))),
            ("eigenvectors", SavedField::Tensor(Some(1))),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "LinalgEighBackward0".into()
    }
    // the formulas act on the last two dims and broadcast the rest, so a leading dim of
    // gradients runs through them as it is
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.apply(ctx, g))
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let gl = g.first().and_then(Option::as_ref);
        let gv = g.get(1).and_then(Option::as_ref);
        if gl.is_none() && gv.is_none() {
            return Ok(smallvec::smallvec![None]);
        }
        let l = ctx.saved(0)?;
        let v = ctx.saved(1)?;
        let ga = match (gl, gv) {
            (Some(gl), None) => matmul(&mul(&v, &unsqueeze(gl, -2)?)?, &mt(&v)?)?,
            (gl, Some(gv)) => {
                let vhgv = matmul(&mt(&v)?, gv)?;
                let skew = half(&sub(&vhgv, &mt(&vhgv)?)?)?;
                let mut ret = div(&skew, &gap_matrix(&l)?)?;
                if let Some(gl) = gl {
                    // ret's diagonal is zero (a skew matrix over ones): add gL there
                    ret = add(&ret, &diag_mat(gl)?)?;
                }
                matmul(&v, &matmul(&ret, &mt(&v)?)?)?
            }
            (None, None) => return Ok(smallvec::smallvec![None]),
        };
        Ok(smallvec::smallvec![Some(ga)])
    }
    // linalg_eig_jvp (Hermitian): dP = Vᵀ·dA·V, dL = diag(dP), dV = V·(dP / E with a
    // zero diagonal)
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let ta = t.first()?.as_ref()?;
        Some((|| {
            let l = ctx.saved(0)?;
            let v = ctx.saved(1)?;
            let n = l.shape().last().copied().unwrap_or(0);
            let dp = matmul(&matmul(&mt(&v)?, ta)?, &v)?;
            let dl = diag(&dp)?;
            let off = sub(&ones_like(&dp)?, &eye_like(n, &dp)?)?;
            let dv = matmul(&v, &mul(&div(&dp, &gap_matrix(&l)?)?, &off)?)?;
            Ok(smallvec::smallvec![Some(dl), Some(dv)])
        })())
    }
}

fn ones_like(x: &Tensor) -> Result<Tensor> {
    let o = full(&x.shape(), Scalar::Int(1), x.dtype())?;
    if o.device() == x.device() {
        Ok(o)
    } else {
        to_device(&o, x.device())
    }
}

// ---------------------------------------------------------------------------------
// svd
// ---------------------------------------------------------------------------------

/// `linalg.svd(A, full_matrices)` (and `svdvals`, `compute_uv` false when nothing needs
/// the vectors): (U, S descending, Vh); U and Vh are empty tensors without `compute_uv`.
/// One node, LinalgSvdBackward0, for the three results.
pub fn linalg_svd(
    a: &Tensor,
    full_matrices: bool,
    compute_uv: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    at_least_2d(a, "linalg.svd")?;
    if !a.dtype().is_float() {
        return Err(not_float(a, "linalg.svd"));
    }
    let (batch, m, n) = dims(a);
    let k = m.min(n);
    let compute_uv = compute_uv || records(&[a]);
    let (dtype, device) = (a.dtype(), a.device());
    let (uc, vr) = if full_matrices { (m, n) } else { (k, k) };
    let outs = apply_multi(
        "aten::_linalg_svd",
        &[a],
        || {
            with_grad_mode(false, || {
                let data = host_f64(a)?;
                let count: usize = batch.iter().product();
                let per = m * n;
                let results = crate::backend::linalg::map_batch(count, per * k * 8, |b| {
                    crate::backend::linalg::svd::svd(
                        &data[b * per..(b + 1) * per],
                        m,
                        n,
                        full_matrices,
                        compute_uv,
                    )
                });
                let (mut u, mut s, mut vh) =
                    (Vec::new(), Vec::with_capacity(count * k), Vec::new());
                for (b, r) in results.into_iter().enumerate() {
                    let Some(f) = r else {
                        // LAPACK's two failures: a NaN, or (inf) no convergence
                        let nan = data[b * per..(b + 1) * per].iter().any(|x| x.is_nan());
                        let why = if nan {
                            "contained non-finite values.".to_string()
                        } else {
                            format!(
                                "is ill-conditioned or has too many repeated singular values (error code: {}).",
                                k.saturating_sub(1)
                            )
                        };
                        return Err(Error::LinAlg(format!(
                            "linalg.svd: {}The algorithm failed to converge because the input matrix {why}",
                            batch_element(&batch, b)
                        )));
                    };
                    u.extend(f.u);
                    s.extend(f.s);
                    vh.extend(f.vh);
                }
                let empty = |_: ()| result(Vec::new(), &[0], dtype, device);
                let u = if compute_uv {
                    result(u, &shape_of(&batch, &[m, uc], dtype)?, dtype, device)?
                } else {
                    empty(())?
                };
                let vh = if compute_uv {
                    result(vh, &shape_of(&batch, &[vr, n], dtype)?, dtype, device)?
                } else {
                    empty(())?
                };
                let s = result(s, &shape_of(&batch, &[k], dtype)?, dtype, device)?;
                Ok(vec![u, s, vh])
            })
        },
        |outs| {
            let list = smallvec::smallvec![
                SavedTensor::output(&outs[0], 0),
                SavedTensor::output(&outs[1], 1),
                SavedTensor::output(&outs[2], 2),
            ];
            (
                LinalgSvdBackward0 {
                    full_matrices,
                    m,
                    n,
                    k,
                },
                list,
            )
        },
    )?;
    let mut it = outs.into_iter();
    match (it.next(), it.next(), it.next()) {
        (Some(u), Some(s), Some(vh)) => Ok((u, s, vh)),
        _ => Err(Error::Internal("linalg_svd: three outputs".into())),
    }
}

/// LinalgSvdBackward0: torch's `svd_backward` (with full_matrices, the gradients and
/// vectors narrowed to the first k = min(m, n) columns of U and rows of Vh, as
/// derivatives.yaml does).
#[derive(Clone)]
pub struct LinalgSvdBackward0 {
    full_matrices: bool,
    m: usize,
    n: usize,
    k: usize,
}
impl LinalgSvdBackward0 {
    /// U narrowed to k columns (full_matrices), likewise a gradient of U.
    fn cols(&self, x: &Tensor) -> Result<Tensor> {
        if self.full_matrices && x.shape().last().copied() != Some(self.k) {
            narrow(x, -1, 0, self.k as i64)
        } else {
            Ok(x.clone())
        }
    }
    /// Vh narrowed to k rows (full_matrices), likewise a gradient of Vh.
    fn rows(&self, x: &Tensor) -> Result<Tensor> {
        let nd = x.ndim();
        if self.full_matrices && nd >= 2 && x.shape().get(nd - 2).copied() != Some(self.k) {
            narrow(x, -2, 0, self.k as i64)
        } else {
            Ok(x.clone())
        }
    }
}
impl Backward for LinalgSvdBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("S", SavedField::Tensor(Some(1))),
            ("S_sym_argsize_minus_1", SavedField::Int(self.k as i64)),
            ("U", SavedField::Tensor(Some(0))),
            ("Vh", SavedField::Tensor(Some(2))),
            ("full_matrices", SavedField::Bool(self.full_matrices)),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "LinalgSvdBackward0".into()
    }
    // the formulas act on the last two dims and broadcast the rest, so a leading dim of
    // gradients runs through them as it is
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.apply(ctx, g))
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let gu = g
            .first()
            .and_then(Option::as_ref)
            .map(|x| self.cols(x))
            .transpose()?;
        let gs = g.get(1).and_then(Option::as_ref);
        let gvh = g
            .get(2)
            .and_then(Option::as_ref)
            .map(|x| self.rows(x))
            .transpose()?;
        if gu.is_none() && gs.is_none() && gvh.is_none() {
            return Ok(smallvec::smallvec![None]);
        }
        let u = self.cols(&ctx.saved(0)?)?;
        let s = ctx.saved(1)?;
        let vh = self.rows(&ctx.saved(2)?)?;
        let (m, n) = (self.m, self.n);
        if gu.is_none() && gvh.is_none() {
            let gs = gs.ok_or_else(|| Error::Internal("svd_backward: gS".into()))?;
            let ga = if m >= n {
                matmul(&u, &mul(&unsqueeze(gs, -1)?, &vh)?)?
            } else {
                matmul(&mul(&u, &unsqueeze(gs, -2)?)?, &vh)?
            };
            return Ok(smallvec::smallvec![Some(ga)]);
        }
        let skew = |x: &Tensor| -> Result<Tensor> { sub(x, &mt(x)?) };
        let e = gap_matrix(&mul(&s, &s)?)?;
        let s_row = unsqueeze(&s, -2)?;
        let s_col = unsqueeze(&s, -1)?;
        let mut ga = match (&gu, &gvh) {
            (Some(gu), Some(gvh)) => {
                let uhgu = skew(&matmul(&mt(&u)?, gu)?)?;
                let vhgv = skew(&matmul(&vh, &mt(gvh)?)?)?;
                div(&add(&mul(&uhgu, &s_row)?, &mul(&s_col, &vhgv)?)?, &e)?
            }
            (Some(gu), None) => {
                let uhgu = skew(&matmul(&mt(&u)?, gu)?)?;
                mul(&div(&uhgu, &e)?, &s_row)?
            }
            (None, Some(gvh)) => {
                let vhgv = skew(&matmul(&vh, &mt(gvh)?)?)?;
                mul(&s_col, &div(&vhgv, &e)?)?
            }
            (None, None) => return Ok(smallvec::smallvec![None]),
        };
        if let Some(gs) = gs {
            ga = add(&ga, &diag_mat(gs)?)?;
        }
        let ga = match (&gu, &gvh) {
            (Some(gu), _) if m > n => {
                // [U·gA + (I − UUᵀ)·gU·S⁻¹]·Vh
                let uga = matmul(&u, &ga)?;
                let gu_sinv = div(gu, &s_row)?;
                let proj = matmul(&u, &matmul(&mt(&u)?, &gu_sinv)?)?;
                matmul(&sub(&add(&uga, &gu_sinv)?, &proj)?, &vh)?
            }
            (_, Some(gvh)) if m < n => {
                // U·[gA·Vh + S⁻¹·gVh·(I − VVᵀ)]
                let gavh = matmul(&ga, &vh)?;
                let sinv_gvh = div(gvh, &s_col)?;
                let proj = matmul(&matmul(&sinv_gvh, &mt(&vh)?)?, &vh)?;
                matmul(&u, &sub(&add(&gavh, &sinv_gvh)?, &proj)?)?
            }
            _ => {
                if m >= n {
                    matmul(&u, &matmul(&ga, &vh)?)?
                } else {
                    matmul(&matmul(&u, &ga)?, &vh)?
                }
            }
        };
        Ok(smallvec::smallvec![Some(ga)])
    }
    // linalg_svd_jvp
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let da = t.first()?.as_ref()?;
        Some((|| {
            let (m, n, k) = (self.m, self.n, self.k);
            let u = self.cols(&ctx.saved(0)?)?;
            let s = ctx.saved(1)?;
            let vh = self.rows(&ctx.saved(2)?)?;
            let v = mt(&vh)?;
            let dp = if m < n {
                matmul(&mt(&u)?, &matmul(da, &v)?)?
            } else {
                matmul(&matmul(&mt(&u)?, da)?, &v)?
            };
            let ds = diag(&dp)?;
            let dp = sub(&dp, &diag_mat(&ds)?)?;
            let e = gap_matrix(&mul(&s, &s)?)?;
            let sym = |x: &Tensor| -> Result<Tensor> { add(x, &mt(x)?) };
            let mut du = matmul(&u, &div(&sym(&mul(&dp, &unsqueeze(&s, -2)?)?)?, &e)?)?;
            if m > n {
                let davsinv = matmul(da, &div(&v, &unsqueeze(&s, -2)?)?)?;
                du = sub(
                    &add(&du, &davsinv)?,
                    &matmul(&u, &matmul(&mt(&u)?, &davsinv)?)?,
                )?;
                if self.full_matrices {
                    let mut shape = du.shape().to_vec();
                    if let Some(last) = shape.last_mut() {
                        *last = m - n;
                    }
                    du = cat(&[du.clone(), zeros_on(&shape, &du)?], -1)?;
                }
            }
            let negs = unsqueeze(&neg(&s)?, -1)?;
            let mut dvh = matmul(&div(&sym(&mul(&dp, &negs)?)?, &e)?, &vh)?;
            if m < n {
                let uhdasinv = matmul(&div(&mt(&u)?, &unsqueeze(&s, -1)?)?, da)?;
                dvh = sub(
                    &add(&dvh, &uhdasinv)?,
                    &matmul(&matmul(&uhdasinv, &v)?, &vh)?,
                )?;
                if self.full_matrices {
                    let mut shape = dvh.shape().to_vec();
                    let nd = shape.len();
                    if nd >= 2 {
                        shape[nd - 2] = n - m;
                    }
                    dvh = cat(&[dvh.clone(), zeros_on(&shape, &dvh)?], -2)?;
                }
            }
            let _ = k;
            Ok(smallvec::smallvec![Some(du), Some(ds), Some(dvh)])
        })())
    }
}

/// Zeros of `shape` in `like`'s dtype, on its device.
fn zeros_on(shape: &[usize], like: &Tensor) -> Result<Tensor> {
    let z = zeros(shape, like.dtype())?;
    if z.device() == like.device() {
        Ok(z)
    } else {
        to_device(&z, like.device())
    }
}

// ---------------------------------------------------------------------------------
// qr
// ---------------------------------------------------------------------------------

/// `linalg.qr(A, mode)`: (Q, R) of the Householder QR; mode 'reduced' (Q m×k, R k×n),
/// 'complete' (Q m×m, R m×n) or 'r' (R k×n, Q an empty tensor). One node,
/// LinalgQrBackward0.
pub fn linalg_qr(a: &Tensor, mode: &str) -> Result<(Tensor, Tensor)> {
    at_least_2d(a, "linalg.qr")?;
    if !a.dtype().is_float() {
        return Err(not_float(a, "linalg.qr"));
    }
    let (want_q, complete, mode) = match mode {
        "reduced" => (true, false, "reduced"),
        "complete" => (true, true, "complete"),
        "r" => (false, false, "r"),
        _ => {
            return Err(Error::runtime(format!(
                "qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or 'complete'"
            )));
        }
    };
    let (batch, m, n) = dims(a);
    let k = m.min(n);
    let (dtype, device) = (a.dtype(), a.device());
    let qc = if complete { m } else { k };
    let outs = apply_multi(
        "aten::linalg_qr",
        &[a],
        || {
            with_grad_mode(false, || {
                let data = host_f64(a)?;
                let count: usize = batch.iter().product();
                let per = m * n;
                let results = crate::backend::linalg::map_batch(count, per * k * 4, |b| {
                    crate::backend::linalg::qr::qr(
                        &data[b * per..(b + 1) * per],
                        m,
                        n,
                        complete,
                        want_q,
                    )
                });
                let (mut q, mut r) = (Vec::new(), Vec::new());
                for f in results {
                    q.extend(f.q.unwrap_or_default());
                    r.extend(f.r);
                }
                let q = if want_q {
                    result(q, &shape_of(&batch, &[m, qc], dtype)?, dtype, device)?
                } else {
                    result(Vec::new(), &[0], dtype, device)?
                };
                let r = result(r, &shape_of(&batch, &[qc, n], dtype)?, dtype, device)?;
                Ok(vec![q, r])
            })
        },
        |outs| {
            let list = smallvec::smallvec![
                SavedTensor::output(&outs[0], 0),
                SavedTensor::output(&outs[1], 1)
            ];
            (LinalgQrBackward0 { mode, m, n }, list)
        },
    )?;
    let mut it = outs.into_iter();
    match (it.next(), it.next()) {
        (Some(q), Some(r)) => Ok((q, r)),
        _ => Err(Error::Internal("linalg_qr: two outputs".into())),
    }
}

/// `linalg.lstsq(A, B)`'s solution and rank by torch's default CPU driver, LAPACK's
/// `dgelsy` (`backend::linalg::gelsy`: a QR with column pivoting, its rank estimated
/// incrementally against `rcond`), matrix by matrix in float64, with no graph: the
/// Python layer checks and broadcasts the operands (A `(*, m, n)`, B `(*, m, k)` of one
/// batch shape and dtype) and records the node. (solution `(*, n, k)`, rank `(*)` int64.)
pub fn lstsq_gelsy(a: &Tensor, b: &Tensor, rcond: f64) -> Result<(Tensor, Tensor)> {
    let (batch, m, n) = dims(a);
    let (bbatch, bm, k) = dims(b);
    if a.ndim() < 2 || b.ndim() != a.ndim() || bbatch != batch || bm != m {
        return Err(Error::runtime(format!(
            "_lstsq_gelsy: expected A (*, m, n) and B (*, m, k) of one batch shape, got {:?} and {:?}",
            a.shape(),
            b.shape()
        )));
    }
    if !a.dtype().is_float() || b.dtype() != a.dtype() {
        return Err(not_float(a, "linalg.lstsq"));
    }
    let (dtype, device) = (a.dtype(), a.device());
    with_grad_mode(false, || {
        let (da, db) = (host_f64(a)?, host_f64(b)?);
        let count: usize = batch.iter().product();
        let (pa, pb) = (m * n, m * k);
        let results = crate::backend::linalg::map_batch(count, pa * m.min(n) * 4, |i| {
            // (column-major copies: a column is what every reflector reads)
            let (ar, br) = (&da[i * pa..(i + 1) * pa], &db[i * pb..(i + 1) * pb]);
            let mut ac: Vec<f64> = (0..pa).map(|e| ar[(e % m) * n + e / m]).collect();
            let bc: Vec<f64> = (0..pb).map(|e| br[(e % m) * k + e / m]).collect();
            crate::backend::linalg::gelsy::gelsy(&mut ac, m, n, &bc, k, rcond)
        });
        let mut x = Vec::with_capacity(count * n * k);
        let mut ranks = Vec::with_capacity(count);
        for r in results {
            x.extend((0..n * k).map(|e| r.x[(e % k) * n + e / k]));
            ranks.push(r.rank as i64);
        }
        let x = result(x, &shape_of(&batch, &[n, k], dtype)?, dtype, device)?;
        let rank = new_tensor_on(Buffer::I64(ranks.into()), &batch, device)?;
        Ok((x, rank))
    })
}

/// LinalgQrBackward0: torch's `linalg_qr_backward` (m ≥ n: gA = (gQ +
/// Q·syminvadj(triu(gR·Rᵀ − QᵀgQ)))·R⁻ᵀ; m < n: Q·trilImInvAdjSkew(−(gR·Rᵀ − QᵀgQ))
/// through R₁⁻ᵀ, padded with zero columns, plus Q·gR).
#[derive(Clone)]
pub struct LinalgQrBackward0 {
    mode: &'static str,
    m: usize,
    n: usize,
}
impl LinalgQrBackward0 {
    fn check(&self) -> Result<()> {
        if self.mode == "r" {
            return Err(Error::runtime(
                "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.",
            ));
        }
        if self.mode == "complete" && self.m > self.n {
            return Err(Error::runtime(
                "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.",
            ));
        }
        Ok(())
    }
}
impl Backward for LinalgQrBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("Q", SavedField::Tensor(Some(0))),
            ("R", SavedField::Tensor(Some(1))),
            ("mode", SavedField::Str(self.mode)),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "LinalgQrBackward0".into()
    }
    // the formulas act on the last two dims and broadcast the rest, so a leading dim of
    // gradients runs through them as it is
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.apply(ctx, g))
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.check()?;
        let gq = g.first().and_then(Option::as_ref);
        let gr = g.get(1).and_then(Option::as_ref);
        if gq.is_none() && gr.is_none() {
            return Ok(smallvec::smallvec![None]);
        }
        let q = ctx.saved(0)?;
        let r = ctx.saved(1)?;
        let (m, n) = (self.m, self.n);
        let mut ga = match (gq, gr) {
            (Some(gq), Some(gr)) => sub(&matmul(gr, &mt(&r)?)?, &matmul(&mt(&q)?, gq)?)?,
            (Some(gq), None) => neg(&matmul(&mt(&q)?, gq)?)?,
            (None, Some(gr)) => matmul(gr, &mt(&r)?)?,
            (None, None) => return Ok(smallvec::smallvec![None]),
        };
        if m >= n {
            // syminvadj(X) = X + Xᵀ with the diagonal halved
            let t = triu(&ga, 0)?;
            let sym = add(&t, &mt(&t)?)?;
            let adj = sub(&sym, &half(&diag_mat(&diag(&sym)?)?)?)?;
            ga = matmul(&q, &adj)?;
            if let Some(gq) = gq {
                ga = add(&ga, gq)?;
            }
            ga = solve_triangular(&mt(&r)?, &ga, false, false, false)?;
        } else {
            let x = neg(&ga)?;
            let adj = tril(&sub(&x, &mt(&x)?)?, 0)?;
            ga = matmul(&q, &adj)?;
            let r1 = narrow(&r, -1, 0, m as i64)?;
            ga = solve_triangular(&mt(&r1)?, &ga, false, false, false)?;
            // (ga's shape, not R's: a batch of gradients has a leading dim more)
            let mut shape = ga.shape().to_vec();
            if let Some(last) = shape.last_mut() {
                *last = n - m;
            }
            ga = cat(&[ga.clone(), zeros_on(&shape, &ga)?], -1)?;
            if let Some(gr) = gr {
                ga = add(&ga, &matmul(&q, gr)?)?;
            }
        }
        Ok(smallvec::smallvec![Some(ga)])
    }
    // linalg_qr_jvp
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let da = t.first()?.as_ref()?;
        Some((|| {
            self.check()?;
            let q = ctx.saved(0)?;
            let r = ctx.saved(1)?;
            let (m, n) = (self.m, self.n);
            if m >= n {
                let da_rinv = solve_triangular(&r, da, true, false, false)?;
                let x = matmul(&mt(&q)?, &da_rinv)?;
                let sym = add(&x, &mt(&x)?)?;
                let t = triu(&sym, 0)?;
                let dr = sub(&t, &half(&diag_mat(&diag(&t)?)?)?)?;
                let dq = sub(&da_rinv, &matmul(&q, &dr)?)?;
                let dr = matmul(&dr, &r)?;
                Ok(smallvec::smallvec![Some(dq), Some(dr)])
            } else {
                let qhda = matmul(&mt(&q)?, da)?;
                let x = solve_triangular(
                    &narrow(&r, -1, 0, m as i64)?,
                    &narrow(&qhda, -1, 0, m as i64)?,
                    true,
                    false,
                    false,
                )?;
                let low = tril(&x, -1)?;
                let dq = sub(&low, &mt(&low)?)?;
                let dr = sub(&qhda, &matmul(&dq, &r)?)?;
                let dq = matmul(&q, &dq)?;
                Ok(smallvec::smallvec![Some(dq), Some(dr)])
            }
        })())
    }
}

/// torch's `linalg_solve_triangular(A, B, upper, left, unitriangular)`, recorded (QR's
/// formulas solve with R).
fn solve_triangular(a: &Tensor, b: &Tensor, upper: bool, left: bool, unit: bool) -> Result<Tensor> {
    super::decomp::linalg_solve_triangular(a, b, upper, left, unit)
}

// ---------------------------------------------------------------------------------
// pinv
// ---------------------------------------------------------------------------------

/// `linalg.pinv(A, *, atol, rtol, hermitian)`: the pseudo-inverse, as torch computes it
/// (without recording: the op has its own node, LinalgPinvBackward0): from the SVD,
/// `V·diag(S⁺)·Uᵀ` (from `eigh` with hermitian, `V·diag(L⁺)·Vᵀ`), where S⁺ inverts the
/// values above `max(atol, rtol·σ_max)` and zeroes the others. The tolerances broadcast
/// against the batch (0-d, or one per matrix); rtol defaults to eps·max(m, n) (to 0
/// where a positive atol is given), atol to 0.
pub fn linalg_pinv(
    a: &Tensor,
    atol: Option<&Tensor>,
    rtol: Option<&Tensor>,
    hermitian: bool,
) -> Result<Tensor> {
    if a.ndim() < 2 || !a.dtype().is_float() {
        let sizes: Vec<String> = a.shape().iter().map(ToString::to_string).collect();
        return Err(Error::runtime(format!(
            "linalg.pinv({}{{[{}]}}): expected a tensor with 2 or more dimensions of float, double, cfloat or cdouble types",
            a.dtype().scalar_type_name(),
            sizes.join(", ")
        )));
    }
    let (batch, m, n) = dims(a);
    let eps = if a.dtype() == DType::F32 {
        f64::from(f32::EPSILON)
    } else {
        f64::EPSILON
    };
    let default_rtol = eps * m.max(n) as f64;
    let dev = a.device();
    let on_dev = |t: Tensor| -> Result<Tensor> {
        if t.device() == dev {
            Ok(t)
        } else {
            to_device(&t, dev)
        }
    };
    let forward = || -> Result<Tensor> {
        // the decomposition without history (nor a tangent): this op's node is the only one
        let a = &a.detach();
        with_grad_mode(false, || {
            let zero = on_dev(scalar_tensor(Scalar::Float(0.0), DType::F64))?;
            let atol_t = match atol {
                Some(t) => t.clone(),
                None => zero.clone(),
            };
            let rtol_t = match (rtol, atol) {
                (Some(t), _) => t.clone(),
                (None, Some(at)) => {
                    let d = on_dev(scalar_tensor(Scalar::Float(default_rtol), DType::F64))?;
                    where_(&gt(at, &zero)?, &zero, &d)?
                }
                (None, None) => on_dev(scalar_tensor(Scalar::Float(default_rtol), DType::F64))?,
            };
            if m.min(n) == 0 {
                let shape = shape_of(&batch, &[n, m], a.dtype())?;
                return on_dev(zeros(&shape, a.dtype())?);
            }
            let cutoff = |sv: &Tensor, max_val: &Tensor| -> Result<Tensor> {
                let scaled = mul(&unsqueeze(&rtol_t, -1)?, max_val)?;
                let tol = maximum(Operand::T(&unsqueeze(&atol_t, -1)?), Operand::T(&scaled))?;
                gt(sv, &tol)
            };
            if hermitian {
                let (l, v) = linalg_eigh(a, "L", true)?;
                let labs = abs(&l)?;
                let max_val = amax(&labs, Some(&[-1]), true, true, false)?;
                let keep = cutoff(&labs, &max_val)?;
                let inv = where_(&keep, &reciprocal(&l)?, &zeros_like(&l)?)?;
                let inv = to_dtype(&inv, a.dtype())?;
                matmul(&mul(&v, &unsqueeze(&inv, -2)?)?, &mt(&v)?)
            } else {
                let (u, s, vh) = linalg_svd(a, false, true)?;
                let max_val = narrow(&s, -1, 0, 1)?;
                let keep = cutoff(&s, &max_val)?;
                let inv = where_(&keep, &reciprocal(&s)?, &zeros_like(&s)?)?;
                let inv = to_dtype(&inv, a.dtype())?;
                matmul(&mul(&mt(&vh)?, &unsqueeze(&inv, -2)?)?, &mt(&u)?)
            }
        })
    };
    apply("aten::linalg_pinv", &[a], forward, |y| {
        let mut s = super::elementwise::Saver::default();
        let x = s.input_if(true, a);
        let r = s.output(y);
        (
            LinalgPinvBackward0 {
                saved: [x, Some(r)],
            },
            s.list,
        )
    })
}

/// LinalgPinvBackward0: torch's `pinv_backward(grad, result, self)` (the products
/// arranged for the smaller of m and n, as torch); forward: `pinv_jvp`.
#[derive(Clone)]
pub struct LinalgPinvBackward0 {
    /// self, result
    saved: [Option<u8>; 2],
}
impl Backward for LinalgPinvBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("result", SavedField::Tensor(self.saved[1])),
            ("self", SavedField::Tensor(self.saved[0])),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "LinalgPinvBackward0".into()
    }
    // the formulas act on the last two dims and broadcast the rest, so a leading dim of
    // gradients runs through them as it is
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.apply(ctx, g))
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let Some(grad) = g.first().and_then(Option::as_ref) else {
            return Ok(smallvec::smallvec![None]);
        };
        let a = super::elementwise::get(ctx, self.saved[0])?;
        let p = super::elementwise::get(ctx, self.saved[1])?;
        let (_, m, n) = dims(&a);
        let ph = mt(&p)?;
        let gh = mt(grad)?;
        let ga = if m <= n {
            let k = matmul(&gh, &p)?;
            let kph = matmul(&k, &ph)?;
            let t1 = neg(&mt(&matmul(&p, &k)?)?)?;
            let t3 = matmul(&matmul(&a, &p)?, &kph)?;
            let t4 = matmul(&matmul(&ph, &p)?, &sub(&gh, &matmul(&k, &a)?)?)?;
            add(&sub(&add(&t1, &kph)?, &t3)?, &t4)?
        } else {
            let k = matmul(&p, &gh)?;
            let phk = matmul(&ph, &k)?;
            let t1 = neg(&mt(&matmul(&k, &p)?)?)?;
            let t2 = matmul(&matmul(&sub(&gh, &matmul(&a, &k)?)?, &p)?, &ph)?;
            let t4 = matmul(&matmul(&phk, &p)?, &a)?;
            sub(&add(&add(&t1, &t2)?, &phk)?, &t4)?
        };
        Ok(smallvec::smallvec![Some(ga)])
    }
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let da = t.first()?.as_ref()?;
        Some((|| {
            let a = super::elementwise::get(ctx, self.saved[0])?;
            let p = super::elementwise::get(ctx, self.saved[1])?;
            let (_, m, n) = dims(&a);
            let dah = mt(da)?;
            let ph = mt(&p)?;
            let r = if m <= n {
                let k = matmul(&ph, &dah)?;
                let inner = sub(&sub(&k, &mt(&k)?)?, &matmul(&k, &matmul(&a, &p)?)?)?;
                let left = matmul(&p, &inner)?;
                let proj = sub(&dah, &matmul(&p, &matmul(&a, &dah)?)?)?;
                add(&left, &matmul(&proj, &matmul(&ph, &p)?)?)?
            } else {
                let k = matmul(&p, da)?;
                let kh = mt(&k)?;
                let inner = sub(&sub(&kh, &k)?, &matmul(&matmul(&p, &a)?, &kh)?)?;
                let left = matmul(&inner, &p)?;
                let proj = sub(&dah, &matmul(&matmul(&dah, &a)?, &p)?)?;
                add(&left, &matmul(&matmul(&p, &ph)?, &proj)?)?
            };
            Ok(smallvec::smallvec![Some(r)])
        })())
    }
}
