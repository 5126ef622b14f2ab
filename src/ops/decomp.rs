//! torch.linalg's LU and Cholesky families as ops with torch's nodes: `det`, `slogdet`,
//! `inv_ex`, `solve_ex`, `lu_factor_ex`, `lu_solve`, `solve_triangular`,
//! `cholesky_ex`, `cholesky_solve`, `cholesky_inverse`, `triangular_solve`,
//! `lu_unpack` and `lu`.
//!
//! The factorizations run as backend kernels (`backend::cpu::linalg`, float64 inside);
//! every backward and forward formula is torch's (`derivatives.yaml`,
//! `FunctionsManual.cpp`), written with recorded ops so that double backward and
//! forward-over-reverse work. Where torch's formulas reuse the saved LU factors outside
//! grad mode and re-solve with `A` inside it, these always solve with `A` (or the saved
//! factors of a non-differentiable input), which gives the same values and keeps every
//! formula differentiable.
//!
//! Pivots and `info` are int64 (rgrad has no int32), with torch's values.

use super::*;
use crate::autograd::function::{Backward, BackwardCtx, Grads, SavedField};
use crate::autograd::grad_mode::with_grad_mode;
use crate::dtype::{DType, Scalar};
use crate::{Error, Result};
use std::borrow::Cow;

// ---- checks (torch's, in its order and words) -------------------------------------------

fn check_float(name: &str, a: &Tensor) -> Result<()> {
    if !a.dtype().is_float() {
        return Err(Error::not_implemented(format!(
            "{name}: Expected a floating point or complex tensor as input. Got {}",
            a.dtype().scalar_type_name()
        )));
    }
    Ok(())
}

fn check_matrix(name: &str, a: &Tensor, arg: &str) -> Result<()> {
    if a.ndim() < 2 {
        return Err(Error::runtime(format!(
            "{name}: The input tensor {arg} must have at least 2 dimensions."
        )));
    }
    Ok(())
}

fn check_square(name: &str, a: &Tensor) -> Result<()> {
    check_matrix(name, a, "A")?;
    let s = a.shape();
    let (m, n) = (s[s.len() - 2], s[s.len() - 1]);
    if m != n {
        return Err(Error::runtime(format!(
            "{name}: A must be batches of square matrices, but they are {m} by {n} matrices"
        )));
    }
    Ok(())
}

/// The first nonzero `info` of the batch, as a LinAlgError built by `msg(info)`, with
/// torch's "(Batch element b): " for a batched input.
fn check_info(name: &str, info: &Tensor, batched: bool, msg: impl Fn(i64) -> String) -> Result<()> {
    check_info_as(name, info, batched, msg, Error::LinAlg)
}

/// [`check_info`] raising the error `kind` makes (lu_factor's is a plain RuntimeError).
fn check_info_as(
    name: &str,
    info: &Tensor,
    batched: bool,
    msg: impl Fn(i64) -> String,
    kind: fn(String) -> Error,
) -> Result<()> {
    let values = host_ints(info)?;
    if let Some((b, &i)) = values.iter().enumerate().find(|(_, i)| **i != 0) {
        let at = if batched {
            format!("(Batch element {b}): ")
        } else {
            String::new()
        };
        return Err(kind(format!("{name}: {at}{}", msg(i))));
    }
    Ok(())
}

fn host_ints(t: &Tensor) -> Result<Vec<i64>> {
    let c = with_grad_mode(false, || to_dtype(&contiguous(&t.detach())?, DType::I64))?;
    let s = c.snapshot();
    let buf = crate::backend::host::read(&s.storage.read())?.into_owned();
    match buf {
        crate::storage::Buffer::I64(v) => {
            Ok(v[s.layout.offset..s.layout.offset + s.layout.numel()].to_vec())
        }
        _ => Err(Error::Internal("info: int64".into())),
    }
}

// ---- shapes -------------------------------------------------------------------------------

fn mat_dims(s: &[usize]) -> (usize, usize) {
    (s[s.len() - 2], s[s.len() - 1])
}

fn with_matrix(batch: &[usize], m: usize, n: usize) -> Vec<usize> {
    let mut v = batch.to_vec();
    v.extend([m, n]);
    v
}

/// `a` `(*a, ., .)` and `b` `(*b, ., .)` expanded to their broadcast batch.
fn broadcast_batch(a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor, Vec<usize>)> {
    let (sa, sb) = (a.shape(), b.shape());
    let batch = crate::shape::broadcast_shapes(&sa[..sa.len() - 2], &sb[..sb.len() - 2])?.to_vec();
    let (am, an) = mat_dims(&sa);
    let (bm, bn) = mat_dims(&sb);
    Ok((
        expand(a, &with_matrix(&batch, am, an))?,
        expand(b, &with_matrix(&batch, bm, bn))?,
        batch,
    ))
}

fn mt(x: &Tensor) -> Result<Tensor> {
    transpose(x, -2, -1)
}

/// `a - b`, or `-b` without `a` (a right-hand side's tangent less the matrix's term).
fn minus(a: Option<Tensor>, b: &Tensor) -> Result<Tensor> {
    match a {
        Some(a) => sub(&a, b),
        None => neg(b),
    }
}

/// `g` summed to `shape` when the input needs a gradient.
fn summed_if(needed: bool, g: &Tensor, shape: &[usize]) -> Result<Option<Tensor>> {
    needed.then(|| super::sum_to(g, shape)).transpose()
}

fn add_opt(a: Option<Tensor>, b: Tensor) -> Result<Tensor> {
    match a {
        Some(a) => add(&a, &b),
        None => Ok(b),
    }
}

// ---- raw kernels (no history) -------------------------------------------------------------

/// The packed LU factors, 1-based pivots and info of every matrix of `a`.
fn raw_lu_factor(a: &Tensor, pivot: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let shape = a.shape();
    let (m, n) = mat_dims(&shape);
    let batch = &shape[..shape.len() - 2];
    let s = a.snapshot();
    let (f, p, i) = crate::backend::lu_factor(&s.storage.read(), &s.layout, pivot)?;
    let mut ps = batch.to_vec();
    ps.push(m.min(n));
    Ok((
        new_tensor(f, &shape),
        new_tensor(p, &ps),
        new_tensor(i, batch),
    ))
}

/// `A X = B` from A's factors (`transpose`: `Aᵀ X = B`); `left == false`: `X A = B`
/// (`X Aᵀ = B`). `b` is `(*, n, k)` (`(*, k, n)` when not `left`), batches broadcast.
fn raw_lu_solve(
    lu: &Tensor,
    piv: &Tensor,
    b: &Tensor,
    left: bool,
    transpose_a: bool,
) -> Result<Tensor> {
    let b = if left { b.clone() } else { mt(b)? };
    // X op(A) = B  ⇔  op(A)ᵀ Xᵀ = Bᵀ
    let transpose_kernel = if left { transpose_a } else { !transpose_a };
    let (lu_e, b_e, batch) = broadcast_batch(lu, &b)?;
    let n = mat_dims(&lu.shape()).0;
    let mut pshape = batch.clone();
    pshape.push(n);
    let piv_e = expand(piv, &pshape)?;
    let (sl, sp, sb) = (lu_e.snapshot(), piv_e.snapshot(), b_e.snapshot());
    let x = crate::backend::lu_solve(
        &sl.storage.read(),
        &sl.layout,
        &sp.storage.read(),
        &sp.layout,
        &sb.storage.read(),
        &sb.layout,
        transpose_kernel,
    )?;
    let x = new_tensor(x, &b_e.shape());
    if left { Ok(x) } else { mt(&x) }
}

/// `op(T) X = B` (`left`) or `X op(T) = B` for the `upper` (or lower) triangle T of `a`.
fn raw_tri_solve(
    a: &Tensor,
    b: &Tensor,
    upper: bool,
    left: bool,
    unit: bool,
    transpose_a: bool,
) -> Result<Tensor> {
    let b = if left { b.clone() } else { mt(b)? };
    let transpose_kernel = if left { transpose_a } else { !transpose_a };
    let (a_e, b_e, _) = broadcast_batch(a, &b)?;
    let (sa, sb) = (a_e.snapshot(), b_e.snapshot());
    let x = crate::backend::solve_triangular(
        &sa.storage.read(),
        &sa.layout,
        &sb.storage.read(),
        &sb.layout,
        upper,
        unit,
        transpose_kernel,
    )?;
    let x = new_tensor(x, &b_e.shape());
    if left { Ok(x) } else { mt(&x) }
}

/// The lower Cholesky factor of `a` (its lower triangle read) and info.
fn raw_cholesky(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let shape = a.shape();
    let s = a.snapshot();
    let (l, i) = crate::backend::cholesky(&s.storage.read(), &s.layout)?;
    Ok((
        new_tensor(l, &shape),
        new_tensor(i, &shape[..shape.len() - 2]),
    ))
}

fn same_dtype(name: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.dtype() != b.dtype() {
        return Err(Error::runtime(format!(
            "{name}: Expected A and B to have the same dtype, but found A of type {} and B of type {} instead",
            a.dtype().scalar_type_name(),
            b.dtype().scalar_type_name()
        )));
    }
    Ok(())
}

// ---- lu_factor ----------------------------------------------------------------------------

/// `linalg.lu_factor_ex(A, pivot, check_errors)`: `(LU, pivots, info)`, LU recorded
/// (LinalgLuFactorExBackward0).
pub fn linalg_lu_factor_ex(
    a: &Tensor,
    pivot: bool,
    check_errors: bool,
    name: &str,
) -> Result<(Tensor, Tensor, Tensor)> {
    if a.ndim() < 2 {
        return Err(Error::runtime(format!(
            "torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: {:?} instead",
            a.shape().as_slice()
        )));
    }
    if !a.dtype().is_float() {
        return Err(Error::not_implemented(format!(
            "\"lu_cpu\" not implemented for '{}'",
            a.dtype().scalar_type_name()
        )));
    }
    if !pivot && a.device() == crate::device::Device::Cpu {
        return Err(Error::runtime(format!(
            "{}: LU without pivoting is not implemented on the CPU",
            name.trim_start_matches("torch.")
        )));
    }
    let (lu, piv, info) = with_grad_mode(false, || raw_lu_factor(&a.detach(), pivot))?;
    if check_errors {
        check_info_as(
            name,
            &info,
            a.ndim() > 2,
            |i| {
                format!(
                    "U[{i},{i}] is zero and using it on lu_solve would result in a division by zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"
                )
            },
            Error::Runtime,
        )?;
    }
    let p = piv.clone();
    let lu = apply(
        "aten::linalg_lu_factor_ex",
        &[a],
        || Ok(lu),
        |out| {
            let list = smallvec::smallvec![
                crate::autograd::saved::SavedTensor::output(out, 0),
                crate::autograd::saved::SavedTensor::input(&p),
            ];
            (LinalgLuFactorExBackward0 { pivot }, list)
        },
    )?;
    Ok((lu, piv, info))
}

/// The unit lower L (`(*, m, k)`) and upper U (`(*, k, n)`) packed in `lu`.
fn unpack_lu(lu: &Tensor) -> Result<(Tensor, Tensor)> {
    let (m, n) = mat_dims(&lu.shape());
    let k = m.min(n);
    let l = tril(&narrow(lu, -1, 0, k as i64)?, -1)?;
    let eye = eye(m, k, lu.dtype())?;
    let eye = to_device(&eye, lu.device())?;
    let l = add(&l, &eye)?;
    let u = triu(&narrow(lu, -2, 0, k as i64)?, 0)?;
    Ok((l, u))
}

/// The permutation matrices `P` (`(*, m, m)`, `A = P L U`) of 1-based pivots.
fn permutation(piv: &Tensor, m: usize, dtype: DType) -> Result<Tensor> {
    let ps = piv.shape();
    let batch = &ps[..ps.len() - 1];
    let k = ps[ps.len() - 1];
    let count: usize = batch.iter().product();
    let pv = host_ints(piv)?;
    let mut out = vec![0.0f64; count * m * m];
    for b in 0..count {
        let mut perm: Vec<usize> = (0..m).collect();
        for i in 0..k {
            let p = (pv[b * k + i] - 1).clamp(0, m as i64 - 1) as usize;
            perm.swap(i, p);
        }
        // row perm[j] of A is row j of L U: P[perm[j], j] = 1
        for (j, &r) in perm.iter().enumerate() {
            out[b * m * m + r * m + j] = 1.0;
        }
    }
    let t = new_tensor(
        crate::storage::Buffer::F64(out.into()),
        &with_matrix(batch, m, m),
    );
    to_device(&to_dtype(&t, dtype)?, piv.device())
}

/// torch's `linalg_lu_backward`: A's gradient from L's and U's (`A = P L U`).
fn lu_backward(
    gl: Option<&Tensor>,
    gu: Option<&Tensor>,
    p: Option<&Tensor>,
    l: &Tensor,
    u: &Tensor,
) -> Result<Tensor> {
    let (m, _) = mat_dims(&l.shape());
    let (k, n) = mat_dims(&u.shape());
    let lh = mt(l)?;
    let uh = mt(u)?;
    let ga = if m == n {
        // P L^{-H} [L^H gL ∘ 1_L + gU U^H ∘ 1_U] U^{-H}
        let mut g: Option<Tensor> = None;
        if let Some(gl) = gl {
            g = Some(tril(&matmul(&lh, gl)?, -1)?);
        }
        if let Some(gu) = gu {
            g = Some(add_opt(g, triu(&matmul(gu, &uh)?, 0)?)?);
        }
        let g = g.ok_or_else(|| Error::Internal("lu_backward: no gradient".into()))?;
        let g = linalg_solve_triangular(&uh, &g, false, false, false)?;
        linalg_solve_triangular(&lh, &g, true, true, true)?
    } else if m < n {
        // wide: A1 = L U1, A2 = L U2
        let u1 = narrow(u, -1, 0, k as i64)?;
        let mut g: Option<Tensor> = None;
        if let Some(gl) = gl {
            g = Some(matmul(&lh, gl)?);
        }
        if let Some(gu) = gu {
            let t = matmul(&triu(gu, 0)?, &uh)?;
            g = Some(minus(g, &t)?);
        }
        let g = g.ok_or_else(|| Error::Internal("lu_backward: no gradient".into()))?;
        let mut g = linalg_solve_triangular(&mt(&u1)?, &tril(&g, -1)?, false, false, false)?;
        if let Some(gu) = gu {
            let gu1 = narrow(gu, -1, 0, k as i64)?;
            let gu2 = narrow(gu, -1, k as i64, (n - k) as i64)?;
            g = cat(&[add(&g, &triu(&gu1, 0)?)?, gu2], -1)?;
        }
        let g = linalg_solve_triangular(&lh, &g, true, true, true)?;
        if gu.is_none() {
            let z = zeros_like(&narrow(u, -1, k as i64, (n - k) as i64)?)?;
            cat(&[g, z], -1)?
        } else {
            g
        }
    } else {
        // tall: A1 = L1 U, A2 = L2 U. With X = L1⁻¹ dA1 U⁻¹ (dL1 = L1 tril(X, -1), dU =
        // triu(X) U, dL2 = (dA2 - L2 dU) U⁻¹), X's gradient is
        // G = tril(L1ᴴ gL1, -1) + triu(gU Uᴴ - L2ᴴ gL2); then gA1 = L1^{-H} G U^{-H} and
        // gA2 = gL2 U^{-H}
        let l1 = narrow(l, -2, 0, k as i64)?;
        let l2 = narrow(l, -2, k as i64, (m - k) as i64)?;
        let mut upper_part: Option<Tensor> = gu.map(|gu| matmul(gu, &uh)).transpose()?;
        let mut lower_part: Option<Tensor> = None;
        let mut bottom: Option<Tensor> = None;
        if let Some(gl) = gl {
            let gl1 = narrow(gl, -2, 0, k as i64)?;
            let gl2 = narrow(gl, -2, k as i64, (m - k) as i64)?;
            lower_part = Some(tril(&matmul(&mt(&l1)?, &gl1)?, -1)?);
            let t = matmul(&mt(&l2)?, &gl2)?;
            upper_part = Some(minus(upper_part, &t)?);
            bottom = Some(linalg_solve_triangular(&uh, &gl2, false, false, false)?);
        }
        let g = match (lower_part, upper_part) {
            (Some(lo), Some(up)) => add(&lo, &triu(&up, 0)?)?,
            (Some(lo), None) => lo,
            (None, Some(up)) => triu(&up, 0)?,
            (None, None) => return Err(Error::Internal("lu_backward: no gradient".into())),
        };
        let top = linalg_solve_triangular(&mt(&l1)?, &g, true, true, true)?;
        let top = linalg_solve_triangular(&uh, &top, false, false, false)?;
        let bottom = match bottom {
            Some(b) => b,
            None => zeros_like(&narrow(l, -2, k as i64, (m - k) as i64)?)?,
        };
        cat(&[top, bottom], -2)?
    };
    match p {
        Some(p) => matmul(p, &ga),
        None => Ok(ga),
    }
}

/// torch's `linalg_lu_jvp`: the tangents of L and U from A's (`A = P L U`).
fn lu_jvp(da: &Tensor, p: &Tensor, l: &Tensor, u: &Tensor) -> Result<(Tensor, Tensor)> {
    let (m, _) = mat_dims(&l.shape());
    let (k, n) = mat_dims(&u.shape());
    let pt_da = matmul(&mt(p)?, da)?;
    if m == n {
        // dK = L^{-1} P^T dA U^{-1}; dL = L (dK ∘ 1_L), dU = (dK ∘ 1_U) U
        let dk = linalg_solve_triangular(l, &pt_da, false, true, true)?;
        let dk = linalg_solve_triangular(u, &dk, true, false, false)?;
        let dl = matmul(l, &tril(&dk, -1)?)?;
        let du = matmul(&triu(&dk, 0)?, u)?;
        Ok((dl, du))
    } else if m < n {
        let u1 = narrow(u, -1, 0, k as i64)?;
        let da1 = narrow(&pt_da, -1, 0, k as i64)?;
        let da2 = narrow(&pt_da, -1, k as i64, (n - k) as i64)?;
        let dk = linalg_solve_triangular(l, &da1, false, true, true)?;
        let dk = linalg_solve_triangular(&u1, &dk, true, false, false)?;
        let dl = matmul(l, &tril(&dk, -1)?)?;
        let du1 = matmul(&triu(&dk, 0)?, &u1)?;
        // dU2 = L^{-1} (dA2 - dL U2)
        let u2 = narrow(u, -1, k as i64, (n - k) as i64)?;
        let du2 = linalg_solve_triangular(l, &sub(&da2, &matmul(&dl, &u2)?)?, false, true, true)?;
        Ok((dl, cat(&[du1, du2], -1)?))
    } else {
        let l1 = narrow(l, -2, 0, k as i64)?;
        let da1 = narrow(&pt_da, -2, 0, k as i64)?;
        let da2 = narrow(&pt_da, -2, k as i64, (m - k) as i64)?;
        let dk = linalg_solve_triangular(&l1, &da1, false, true, true)?;
        let dk = linalg_solve_triangular(u, &dk, true, false, false)?;
        let dl1 = matmul(&l1, &tril(&dk, -1)?)?;
        let du = matmul(&triu(&dk, 0)?, u)?;
        // dL2 = (dA2 - L2 dU) U^{-1}
        let l2 = narrow(l, -2, k as i64, (m - k) as i64)?;
        let dl2 = linalg_solve_triangular(u, &sub(&da2, &matmul(&l2, &du)?)?, true, false, false)?;
        Ok((cat(&[dl1, dl2], -2)?, du))
    }
}

/// LinalgLuFactorExBackward0: the packed factors' gradient split into L's (strictly
/// below the diagonal) and U's, then `linalg_lu_backward`.
#[derive(Clone)]
pub struct LinalgLuFactorExBackward0 {
    pivot: bool,
}
impl Backward for LinalgLuFactorExBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("LU", SavedField::Tensor(Some(0))),
            ("pivot", SavedField::Bool(self.pivot)),
            ("pivots", SavedField::Tensor(Some(1))),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "LinalgLuFactorExBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let Some(g) = g.first().and_then(Option::as_ref) else {
            return Ok(smallvec::smallvec![None]);
        };
        let (lu, piv) = (ctx.saved(0)?, ctx.saved(1)?);
        let (m, n) = mat_dims(&lu.shape());
        let k = m.min(n) as i64;
        let (l, u) = unpack_lu(&lu)?;
        let gl = tril(&narrow(g, -1, 0, k)?, -1)?;
        let gu = triu(&narrow(g, -2, 0, k)?, 0)?;
        let p = self
            .pivot
            .then(|| permutation(&piv, m, lu.dtype()))
            .transpose()?;
        Ok(smallvec::smallvec![Some(lu_backward(
            Some(&gl),
            Some(&gu),
            p.as_ref(),
            &l,
            &u
        )?)])
    }
    // lu_factor_ex_jvp: dLU = dL + dU from linalg_lu_jvp
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let da = t.first()?.as_ref()?;
        Some((|| {
            let (lu, piv) = (ctx.saved(0)?, ctx.saved(1)?);
            let (m, _) = mat_dims(&lu.shape());
            let (l, u) = unpack_lu(&lu)?;
            let p = permutation(&piv, m, lu.dtype())?;
            let (dl, du) = lu_jvp(da, &p, &l, &u)?;
            let (mm, nn) = mat_dims(&lu.shape());
            let k = mm.min(nn);
            // the packed tangent: dL strictly below the diagonal, dU on and above
            let dl_full = if nn > k {
                cat(
                    &[
                        dl.clone(),
                        zeros(
                            &with_matrix(&lu.shape()[..lu.ndim() - 2], mm, nn - k),
                            lu.dtype(),
                        )?,
                    ],
                    -1,
                )?
            } else {
                dl
            };
            let du_full = if mm > k {
                cat(
                    &[
                        du.clone(),
                        zeros(
                            &with_matrix(&lu.shape()[..lu.ndim() - 2], mm - k, nn),
                            lu.dtype(),
                        )?,
                    ],
                    -2,
                )?
            } else {
                du
            };
            Ok(smallvec::smallvec![Some(add(
                &tril(&dl_full, -1)?,
                &triu(&du_full, 0)?
            )?)])
        })())
    }
}

// ---- det / slogdet -------------------------------------------------------------------------

fn square_float(name: &str, a: &Tensor) -> Result<()> {
    check_matrix(name, a, "A")?;
    check_float(name, a)?;
    check_square(name, a)
}

/// Factors and determinant pieces of `a` (no history).
fn raw_det(a: &Tensor) -> Result<[Tensor; 5]> {
    with_grad_mode(false, || {
        let a = a.detach();
        let (lu, piv, _) = raw_lu_factor(&a, true)?;
        let batch = &a.shape()[..a.ndim() - 2];
        let (sl, sp) = (lu.snapshot(), piv.snapshot());
        let (d, s, l) = crate::backend::lu_det(
            &sl.storage.read(),
            &sl.layout,
            &sp.storage.read(),
            &sp.layout,
        )?;
        Ok([
            lu,
            piv,
            new_tensor(d, batch),
            new_tensor(s, batch),
            new_tensor(l, batch),
        ])
    })
}

/// `diag_embed(g)` of the per-matrix values `g` `(*)` as `(*, n, n)`.
fn diag_of(g: &Tensor, n: usize) -> Result<Tensor> {
    let mut shape = g.shape().to_vec();
    shape.push(n);
    diag_embed(&expand(&unsqueeze(g, -1)?, &shape)?, 0, -2, -1)
}

/// `tr(A⁻¹ dA)` per matrix (the derivative of log |det A| along dA).
fn trace_solve(a: &Tensor, da: &Tensor) -> Result<Tensor> {
    let x = linalg_solve(a, da, true)?;
    sum(&diagonal(&x, 0, -2, -1)?, Some(&[-1]), false)
}

/// `linalg.det(A)` (LinalgDetBackward0).
pub fn linalg_det(a: &Tensor) -> Result<Tensor> {
    square_float("linalg.det", a)?;
    let [lu, piv, d, _, _] = raw_det(a)?;
    apply(
        "aten::linalg_det",
        &[a],
        || Ok(d),
        |out| {
            use crate::autograd::saved::SavedTensor;
            let list = smallvec::smallvec![
                SavedTensor::input(a),
                SavedTensor::input(&lu),
                SavedTensor::input(&piv),
                SavedTensor::output(out, 0),
            ];
            (LinalgDetBackward0, list)
        },
    )
}

/// LinalgDetBackward0: torch's `linalg_det_backward` ([`det_grad`]), solved with `A`
/// (not the saved factors) so that it is differentiable again.
#[derive(Clone)]
pub struct LinalgDetBackward0;
impl Backward for LinalgDetBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("A", SavedField::Tensor(Some(0))),
            ("LU", SavedField::Tensor(Some(1))),
            ("pivots", SavedField::Tensor(Some(2))),
            ("result", SavedField::Tensor(Some(3))),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "LinalgDetBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let Some(g) = g.first().and_then(Option::as_ref) else {
            return Ok(smallvec::smallvec![None]);
        };
        let (a, det) = (ctx.saved(0)?, ctx.saved(3)?);
        if a.numel() == 0 {
            return Ok(smallvec::smallvec![Some(zeros_like(&a)?)]);
        }
        Ok(smallvec::smallvec![Some(det_grad(&a, &det, g)?)])
    }
    // linalg_det_jvp: det · tr(A⁻¹ dA)
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let da = t.first()?.as_ref()?;
        Some((|| {
            let (a, det) = (ctx.saved(0)?, ctx.saved(3)?);
            Ok(smallvec::smallvec![Some(mul(&det, &trace_solve(&a, da)?)?)])
        })())
    }
}

/// det's gradient `(g det) A^{-H}`, the cofactor matrix scaled by `g`, as torch's
/// `linalg_det_backward`: when the gradient will itself be differentiated (grad mode on,
/// `create_graph`), the cofactors through the SVD for every matrix, a formula smooth
/// at singular matrices too; otherwise a solve with `Aᴴ`, and the SVD's only for the
/// matrices that are singular (`|det| < eps` of the dtype).
fn det_grad(a: &Tensor, det: &Tensor, g: &Tensor) -> Result<Tensor> {
    let n = mat_dims(&a.shape()).0;
    let singular = || -> Result<Tensor> {
        // A = U S Vh: det = det U det Vh prod(S), so the gradient is
        // U diag(∂prod(S)) Vh · det U det Vh · g
        let (u, s, vh) = super::spectral::linalg_svd(a, true, true)?;
        let alpha = mul(&mul(&linalg_det(&u)?, &linalg_det(&vh)?)?, g)?;
        let d = prod_safe_zeros_backward(&unsqueeze(&alpha, -1)?, &s)?;
        matmul(&mul(&u, &unsqueeze(&d, -2)?)?, &vh)
    };
    if crate::autograd::grad_mode::is_grad_enabled() {
        return singular();
    }
    let nonsingular = || linalg_solve(&mt(a)?, &diag_of(&mul(g, det)?, n)?, true);
    let eps = if a.dtype() == DType::F32 {
        f64::from(f32::EPSILON)
    } else {
        f64::EPSILON
    };
    let singular_mask = lt_scalar(&abs(det)?, eps)?;
    let count = host_ints(&singular_mask)?
        .iter()
        .filter(|&&v| v != 0)
        .count();
    if count == 0 {
        return nonsingular();
    }
    if count == singular_mask.numel() {
        return singular();
    }
    let mask = unsqueeze(&unsqueeze(&singular_mask, -1)?, -1)?;
    where_(&mask, &singular()?, &nonsingular()?)
}

/// torch's `prod_safe_zeros_backward` along the last dim: `g` times the product of
/// every other element (exclusive cumulative products from both ends, no division).
fn prod_safe_zeros_backward(g: &Tensor, x: &Tensor) -> Result<Tensor> {
    let k = *x.shape().last().unwrap_or(&0) as i64;
    if k == 0 {
        return expand(g, &x.shape());
    }
    let mut ones_shape = x.shape().to_vec();
    if let Some(last) = ones_shape.last_mut() {
        *last = 1;
    }
    let ones = to_device(
        &full(&ones_shape, Scalar::Float(1.0), x.dtype())?,
        x.device(),
    )?;
    let before = cumprod(
        &cat(&[ones.clone(), narrow(x, -1, 0, k - 1)?], -1)?,
        -1,
        None,
    )?;
    let after_rev = cat(&[ones, flip(&narrow(x, -1, 1, k - 1)?, &[-1])?], -1)?;
    let after = flip(&cumprod(&after_rev, -1, None)?, &[-1])?;
    mul(g, &mul(&before, &after)?)
}

/// `linalg.slogdet(A)`: `(sign, logabsdet)`, one LinalgSlogdetBackward0 for both.
pub fn linalg_slogdet(a: &Tensor) -> Result<(Tensor, Tensor)> {
    square_float("linalg.slogdet", a)?;
    let [lu, piv, _, sign, logabs] = raw_det(a)?;
    let outs = apply_multi(
        "aten::linalg_slogdet",
        &[a],
        || Ok(vec![sign, logabs]),
        |outs| {
            use crate::autograd::saved::SavedTensor;
            let list = smallvec::smallvec![
                SavedTensor::input(a),
                SavedTensor::input(&lu),
                SavedTensor::input(&piv),
                SavedTensor::output(&outs[0], 0),
            ];
            (LinalgSlogdetBackward0, list)
        },
    )?;
    let mut it = outs.into_iter();
    match (it.next(), it.next()) {
        (Some(s), Some(l)) => Ok((s, l)),
        _ => Err(Error::Internal("slogdet: two outputs".into())),
    }
}

/// LinalgSlogdetBackward0: torch's `slogdet_backward` for real input: the sign is
/// piecewise constant (no gradient); log |det|'s is `g A^{-H}`.
#[derive(Clone)]
pub struct LinalgSlogdetBackward0;
impl Backward for LinalgSlogdetBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("A", SavedField::Tensor(Some(0))),
            ("LU", SavedField::Tensor(Some(1))),
            ("pivots", SavedField::Tensor(Some(2))),
            ("sign", SavedField::Tensor(Some(3))),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "LinalgSlogdetBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let Some(g) = g.get(1).and_then(Option::as_ref) else {
            return Ok(smallvec::smallvec![None]);
        };
        let a = ctx.saved(0)?;
        if a.numel() == 0 {
            return Ok(smallvec::smallvec![Some(zeros_like(&a)?)]);
        }
        let n = mat_dims(&a.shape()).0;
        Ok(smallvec::smallvec![Some(linalg_solve(
            &mt(&a)?,
            &diag_of(g, n)?,
            true
        )?)])
    }
    // slogdet_jvp: sign's tangent 0, log |det|'s tr(A⁻¹ dA)
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let da = t.first()?.as_ref()?;
        Some((|| {
            let (a, sign) = (ctx.saved(0)?, ctx.saved(3)?);
            Ok(smallvec::smallvec![
                Some(zeros_like(&sign)?),
                Some(trace_solve(&a, da)?)
            ])
        })())
    }
}

// ---- inv / solve ---------------------------------------------------------------------------

/// `linalg.inv_ex(A, check_errors)`: `(inverse, info)` (LinalgInvExBackward0); `name`
/// is the function named in errors (`linalg.inv` raises through this).
pub fn linalg_inv_ex(a: &Tensor, check_errors: bool, name: &str) -> Result<(Tensor, Tensor)> {
    // (torch checks the input as linalg.inv's, whichever function it is)
    square_float("linalg.inv", a)?;
    let (inv, info) = with_grad_mode(false, || -> Result<_> {
        let a = a.detach();
        let (lu, piv, info) = raw_lu_factor(&a, true)?;
        let n = mat_dims(&a.shape()).0;
        let eye = to_device(&eye(n, n, a.dtype())?, a.device())?;
        Ok((raw_lu_solve(&lu, &piv, &eye, true, false)?, info))
    })?;
    if check_errors {
        check_info(name, &info, a.ndim() > 2, |i| {
            format!(
                "The diagonal element {i} is zero, the inversion could not be completed because the input matrix is singular."
            )
        })?;
    }
    let inv = apply(
        "aten::linalg_inv_ex",
        &[a],
        || Ok(inv),
        |out| {
            let list = smallvec::smallvec![crate::autograd::saved::SavedTensor::output(out, 0)];
            (LinalgInvExBackward0, list)
        },
    )?;
    Ok((inv, info))
}

/// LinalgInvExBackward0: `-A^{-H} g A^{-H}`; forward `-A⁻¹ dA A⁻¹`.
#[derive(Clone)]
pub struct LinalgInvExBackward0;
impl Backward for LinalgInvExBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![("inverse", SavedField::Tensor(Some(0)))]
    }
    fn name(&self) -> Cow<'static, str> {
        "LinalgInvExBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let Some(g) = g.first().and_then(Option::as_ref) else {
            return Ok(smallvec::smallvec![None]);
        };
        let ih = mt(&ctx.saved(0)?)?;
        Ok(smallvec::smallvec![Some(neg(&matmul(
            &ih,
            &matmul(g, &ih)?
        )?)?)])
    }
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let da = t.first()?.as_ref()?;
        Some((|| {
            let inv = ctx.saved(0)?;
            Ok(smallvec::smallvec![Some(neg(&matmul(
                &matmul(&inv, da)?,
                &inv
            )?)?)])
        })())
    }
}

/// torch's `linalg_solve_is_vector_rhs`: B is a vector (or a batch of vectors of A's
/// batch shape).
fn is_vector_rhs(a: &Tensor, b: &Tensor) -> bool {
    let (sa, sb) = (a.shape(), b.shape());
    b.ndim() == 1 || (b.ndim() + 1 == a.ndim() && sb[..] == sa[..sa.len() - 1])
}

/// `linalg.solve(A, B, left)` without the error check: the solution, recorded.
pub fn linalg_solve(a: &Tensor, b: &Tensor, left: bool) -> Result<Tensor> {
    Ok(linalg_solve_ex(a, b, left, false, "torch.linalg.solve_ex")?.0)
}

/// `linalg.solve_ex(A, B, left, check_errors)`: `(result, info)`
/// (LinalgSolveExBackward0); `name`: the function named in a singular matrix's error.
pub fn linalg_solve_ex(
    a: &Tensor,
    b: &Tensor,
    left: bool,
    check_errors: bool,
    name: &str,
) -> Result<(Tensor, Tensor)> {
    check_matrix("linalg.solve", a, "A")?;
    check_float("linalg.solve", a)?;
    check_square("linalg.solve", a)?;
    same_dtype("linalg.solve", a, b)?;
    let vector = is_vector_rhs(a, b);
    let b_ = if vector { unsqueeze(b, -1)? } else { b.clone() };
    let n = mat_dims(&a.shape()).0;
    let (bm, bn) = mat_dims(&b_.shape());
    if (left && bm != n) || (!left && bn != n) {
        let eq = if left { "AX = B" } else { "XA = B" };
        return Err(Error::runtime(format!(
            "linalg.solve: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and {bm}x{bn})"
        )));
    }
    let (lu, piv, info, x) = with_grad_mode(false, || -> Result<_> {
        let (lu, piv, info) = raw_lu_factor(&a.detach(), true)?;
        let x = raw_lu_solve(&lu, &piv, &b_.detach(), left, false)?;
        let x = if vector { squeeze(&x, Some(&[-1]))? } else { x };
        Ok((lu, piv, info, x))
    })?;
    if check_errors {
        check_info(name, &info, a.ndim() > 2, |_| {
            "The solver failed because the input matrix is singular.".to_string()
        })?;
    }
    let shapes = Box::new([a.shape(), b.shape()]);
    let x = apply(
        "aten::linalg_solve_ex",
        &[a, b],
        || Ok(x),
        |out| {
            use crate::autograd::saved::SavedTensor;
            let list = smallvec::smallvec![
                SavedTensor::input(a),
                SavedTensor::input(&lu),
                SavedTensor::input(&piv),
                SavedTensor::output(out, 0),
            ];
            (
                LinalgSolveExBackward0 {
                    left,
                    vector,
                    shapes,
                },
                list,
            )
        },
    )?;
    Ok((x, info))
}

/// LinalgSolveExBackward0: torch's `linalg_solve_backward`: `gB = A^{-H} gX` (solved
/// from the right when not `left`), `gA = -gB Xᴴ` (`-Xᴴ gB`), each summed to its
/// operand's shape.
#[derive(Clone)]
pub struct LinalgSolveExBackward0 {
    left: bool,
    vector: bool,
    shapes: Box<[crate::shape::Shape; 2]>,
}
impl LinalgSolveExBackward0 {
    fn as_matrix(&self, t: &Tensor) -> Result<Tensor> {
        if self.vector {
            unsqueeze(t, -1)
        } else {
            Ok(t.clone())
        }
    }
}
impl Backward for LinalgSolveExBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("A", SavedField::Tensor(Some(0))),
            ("LU", SavedField::Tensor(Some(1))),
            ("left", SavedField::Bool(self.left)),
            ("pivots", SavedField::Tensor(Some(2))),
            ("result", SavedField::Tensor(Some(3))),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "LinalgSolveExBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let Some(g) = g.first().and_then(Option::as_ref) else {
            return Ok(smallvec::smallvec![None, None]);
        };
        let (a, x) = (ctx.saved(0)?, ctx.saved(3)?);
        let gb = linalg_solve(&mt(&a)?, &self.as_matrix(g)?, self.left)?;
        let ga = if ctx.needs_input_grad(0) {
            let x = self.as_matrix(&x)?;
            let ga = if self.left {
                matmul(&gb, &mt(&x)?)?
            } else {
                matmul(&mt(&x)?, &gb)?
            };
            Some(super::sum_to(&neg(&ga)?, &self.shapes[0])?)
        } else {
            None
        };
        let gb = if ctx.needs_input_grad(1) {
            let gb = if self.vector {
                squeeze(&gb, Some(&[-1]))?
            } else {
                gb
            };
            Some(super::sum_to(&gb, &self.shapes[1])?)
        } else {
            None
        };
        Ok(smallvec::smallvec![ga, gb])
    }
    // linalg_solve_jvp: dX = A⁻¹ (dB - dA X) (from the right when not `left`)
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let (da, db) = (t.first()?.as_ref(), t.get(1).and_then(Option::as_ref));
        Some((|| {
            let (a, x) = (ctx.saved(0)?, ctx.saved(3)?);
            let x = self.as_matrix(&x)?;
            let mut rhs: Option<Tensor> = db.map(|d| self.as_matrix(d)).transpose()?;
            if let Some(da) = da {
                let r = if self.left {
                    matmul(da, &x)?
                } else {
                    matmul(&x, da)?
                };
                rhs = Some(minus(rhs, &r)?);
            }
            let Some(rhs) = rhs else {
                return Ok(smallvec::smallvec![None]);
            };
            let dx = linalg_solve(&a, &rhs, self.left)?;
            let dx = if self.vector {
                squeeze(&dx, Some(&[-1]))?
            } else {
                dx
            };
            Ok(smallvec::smallvec![Some(dx)])
        })())
    }
}

// ---- lu_solve ------------------------------------------------------------------------------

/// `linalg.lu_solve(LU, pivots, B, left, adjoint)` (LinalgLuSolveBackward0).
pub fn linalg_lu_solve(
    lu: &Tensor,
    piv: &Tensor,
    b: &Tensor,
    left: bool,
    adjoint: bool,
) -> Result<Tensor> {
    check_matrix("linalg.lu_solve", b, "B")?;
    check_matrix("linalg.lu_solve", lu, "LU")?;
    check_float("linalg.lu_solve", lu)?;
    check_square("linalg.lu_solve", lu)?;
    same_dtype("linalg.lu_solve", lu, b)?;
    let n = mat_dims(&lu.shape()).0;
    let (bm, bn) = mat_dims(&b.shape());
    if (left && bm != n) || (!left && bn != n) {
        let eq = if left { "AX = B" } else { "XA = B" };
        return Err(Error::runtime(format!(
            "linalg.lu_solve: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and {bm}x{bn})"
        )));
    }
    if piv.shape().last() != Some(&n) || piv.dtype() != DType::I64 {
        return Err(Error::runtime(format!(
            "linalg.lu_solve: Expected LU and pivots to be compatible, got pivots of shape {:?}",
            piv.shape().as_slice()
        )));
    }
    let x = with_grad_mode(false, || {
        raw_lu_solve(&lu.detach(), piv, &b.detach(), left, adjoint)
    })?;
    let shapes = Box::new([lu.shape(), b.shape()]);
    apply(
        "aten::linalg_lu_solve",
        &[lu, b],
        || Ok(x),
        |out| {
            use crate::autograd::saved::SavedTensor;
            let list = smallvec::smallvec![
                SavedTensor::input(lu),
                SavedTensor::input(piv),
                SavedTensor::output(out, 0),
            ];
            (
                LinalgLuSolveBackward0 {
                    left,
                    adjoint,
                    shapes,
                },
                list,
            )
        },
    )
}

/// LinalgLuSolveBackward0: B's gradient is `lu_solve(LU, pivots, g, left, !adjoint)`;
/// LU's, the adjoint of `dX = lu_solve(dB - op(dA) X)` with `dA = P (dL U + L dU)`:
/// `-(tril(M Uᴴ, -1) + triu(Lᴴ M))` for `M = Pᵀ (gB Xᴴ)` (the product in the order
/// `left` and `adjoint` put it).
#[derive(Clone)]
pub struct LinalgLuSolveBackward0 {
    left: bool,
    adjoint: bool,
    shapes: Box<[crate::shape::Shape; 2]>,
}
impl LinalgLuSolveBackward0 {
    /// `M`'s product (before Pᵀ) of the solution and the right-hand side's gradient or
    /// tangent-side operand.
    fn outer(&self, x: &Tensor, gb: &Tensor) -> Result<Tensor> {
        match (self.left, self.adjoint) {
            (true, false) => matmul(gb, &mt(x)?),
            (true, true) => matmul(x, &mt(gb)?),
            (false, false) => matmul(&mt(x)?, gb),
            (false, true) => matmul(&mt(gb)?, x),
        }
    }
}
impl Backward for LinalgLuSolveBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("LU", SavedField::Tensor(Some(0))),
            ("adjoint", SavedField::Bool(self.adjoint)),
            ("left", SavedField::Bool(self.left)),
            ("pivots", SavedField::Tensor(Some(1))),
            ("result", SavedField::Tensor(Some(2))),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "LinalgLuSolveBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let Some(g) = g.first().and_then(Option::as_ref) else {
            return Ok(smallvec::smallvec![None, None]);
        };
        let (lu, piv, x) = (ctx.saved(0)?, ctx.saved(1)?, ctx.saved(2)?);
        let gb = linalg_lu_solve(&lu, &piv, g, self.left, !self.adjoint)?;
        let glu = if ctx.needs_input_grad(0) {
            let n = mat_dims(&lu.shape()).0;
            let (l, u) = unpack_lu(&lu)?;
            let p = permutation(&piv, n, lu.dtype())?;
            let m = matmul(&mt(&p)?, &self.outer(&x, &gb)?)?;
            let glu = add(
                &tril(&matmul(&m, &mt(&u)?)?, -1)?,
                &triu(&matmul(&mt(&l)?, &m)?, 0)?,
            )?;
            Some(super::sum_to(&neg(&glu)?, &self.shapes[0])?)
        } else {
            None
        };
        let gb = summed_if(ctx.needs_input_grad(1), &gb, &self.shapes[1])?;
        Ok(smallvec::smallvec![glu, gb])
    }
    // linalg_lu_solve_jvp: dX = lu_solve(dB - op(dA) X), dA = P (dL U + L dU)
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let (dlu, db) = (t.first()?.as_ref(), t.get(1).and_then(Option::as_ref));
        Some((|| {
            let (lu, piv, x) = (ctx.saved(0)?, ctx.saved(1)?, ctx.saved(2)?);
            let mut rhs = db.cloned();
            if let Some(dlu) = dlu {
                let n = mat_dims(&lu.shape()).0;
                let (l, u) = unpack_lu(&lu)?;
                let p = permutation(&piv, n, lu.dtype())?;
                let dk = add(&matmul(&tril(dlu, -1)?, &u)?, &matmul(&l, &triu(dlu, 0)?)?)?;
                let da = matmul(&p, &dk)?;
                let da = if self.adjoint { mt(&da)? } else { da };
                let r = if self.left {
                    matmul(&da, &x)?
                } else {
                    matmul(&x, &da)?
                };
                rhs = Some(minus(rhs, &r)?);
            }
            let Some(rhs) = rhs else {
                return Ok(smallvec::smallvec![None]);
            };
            Ok(smallvec::smallvec![Some(linalg_lu_solve(
                &lu,
                &piv,
                &rhs,
                self.left,
                self.adjoint
            )?)])
        })())
    }
}

// ---- solve_triangular -----------------------------------------------------------------------

/// `linalg.solve_triangular(A, B, *, upper, left, unitriangular)`
/// (LinalgSolveTriangularBackward0).
pub fn linalg_solve_triangular(
    a: &Tensor,
    b: &Tensor,
    upper: bool,
    left: bool,
    unitriangular: bool,
) -> Result<Tensor> {
    let name = "linalg.solve_triangular";
    check_matrix(name, b, "B")?;
    check_matrix(name, a, "A")?;
    check_square(name, a)?;
    check_float(name, a)?;
    let n = mat_dims(&a.shape()).0;
    let (bm, bn) = mat_dims(&b.shape());
    if (left && bm != n) || (!left && bn != n) {
        let eq = if left { "AX = B" } else { "XA = B" };
        return Err(Error::runtime(format!(
            "{name}: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and {bm}x{bn})"
        )));
    }
    // (torch promotes the operands to one dtype)
    let dt = DType::promote(a.dtype(), b.dtype());
    let (ac, bc) = (to_dtype(a, dt)?, to_dtype(b, dt)?);
    let x = with_grad_mode(false, || {
        raw_tri_solve(
            &ac.detach(),
            &bc.detach(),
            upper,
            left,
            unitriangular,
            false,
        )
    })?;
    let shapes = Box::new([ac.shape(), bc.shape()]);
    apply(
        "aten::linalg_solve_triangular",
        &[&ac, &bc],
        || Ok(x),
        |out| {
            use crate::autograd::saved::SavedTensor;
            let list = smallvec::smallvec![SavedTensor::input(&ac), SavedTensor::output(out, 0)];
            (
                LinalgSolveTriangularBackward0 {
                    upper,
                    left,
                    unitriangular,
                    shapes,
                },
                list,
            )
        },
    )
}

/// The triangle a triangular solve reads (without the diagonal when `unit`).
fn triangle_of(x: &Tensor, upper: bool, unit: bool) -> Result<Tensor> {
    if upper {
        triu(x, i64::from(unit))
    } else {
        tril(x, -i64::from(unit))
    }
}

/// LinalgSolveTriangularBackward0: `gB = A^{-H} g` (a triangular solve with the other
/// triangle), `gA = -gB Xᴴ` (`-Xᴴ gB` when not `left`) cut to A's triangle.
#[derive(Clone)]
pub struct LinalgSolveTriangularBackward0 {
    upper: bool,
    left: bool,
    unitriangular: bool,
    shapes: Box<[crate::shape::Shape; 2]>,
}
impl Backward for LinalgSolveTriangularBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("left", SavedField::Bool(self.left)),
            ("result", SavedField::Tensor(Some(1))),
            ("self", SavedField::Tensor(Some(0))),
            ("unitriangular", SavedField::Bool(self.unitriangular)),
            ("upper", SavedField::Bool(self.upper)),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "LinalgSolveTriangularBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let Some(g) = g.first().and_then(Option::as_ref) else {
            return Ok(smallvec::smallvec![None, None]);
        };
        let (a, x) = (ctx.saved(0)?, ctx.saved(1)?);
        let gb = linalg_solve_triangular(&mt(&a)?, g, !self.upper, self.left, self.unitriangular)?;
        let ga = if ctx.needs_input_grad(0) {
            let ga = if self.left {
                matmul(&gb, &mt(&x)?)?
            } else {
                matmul(&mt(&x)?, &gb)?
            };
            let ga = triangle_of(&neg(&ga)?, self.upper, self.unitriangular)?;
            Some(super::sum_to(&ga, &self.shapes[0])?)
        } else {
            None
        };
        let gb = summed_if(ctx.needs_input_grad(1), &gb, &self.shapes[1])?;
        Ok(smallvec::smallvec![ga, gb])
    }
    // linalg_solve_triangular_forward_AD: A⁻¹ (dB - tri(dA) X)
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let (da, db) = (t.first()?.as_ref(), t.get(1).and_then(Option::as_ref));
        Some((|| {
            let (a, x) = (ctx.saved(0)?, ctx.saved(1)?);
            let mut rhs = db.cloned();
            if let Some(da) = da {
                let da = triangle_of(da, self.upper, self.unitriangular)?;
                let r = if self.left {
                    matmul(&da, &x)?
                } else {
                    matmul(&x, &da)?
                };
                rhs = Some(minus(rhs, &r)?);
            }
            let Some(rhs) = rhs else {
                return Ok(smallvec::smallvec![None]);
            };
            Ok(smallvec::smallvec![Some(linalg_solve_triangular(
                &a,
                &rhs,
                self.upper,
                self.left,
                self.unitriangular
            )?)])
        })())
    }
}

// ---- Cholesky ------------------------------------------------------------------------------

/// `linalg.cholesky_ex(A, upper, check_errors)`: `(L, info)`
/// (LinalgCholeskyExBackward0); `name`: the function named in errors.
pub fn linalg_cholesky_ex(
    a: &Tensor,
    upper: bool,
    check_errors: bool,
    name: &str,
) -> Result<(Tensor, Tensor)> {
    // (torch checks the input as linalg.cholesky's, whichever function it is)
    square_float("linalg.cholesky", a)?;
    let (l, info) = with_grad_mode(false, || -> Result<_> {
        let a = a.detach();
        // the upper factor reads A's upper triangle: the lower factor of Aᵀ, transposed
        if upper {
            let (l, info) = raw_cholesky(&mt(&a)?)?;
            Ok((contiguous(&mt(&l)?)?, info))
        } else {
            raw_cholesky(&a)
        }
    })?;
    if check_errors {
        check_info(name, &info, a.ndim() > 2, |i| {
            format!(
                "The factorization could not be completed because the input is not positive-definite (the leading minor of order {i} is not positive-definite)."
            )
        })?;
    }
    let l = apply(
        "aten::linalg_cholesky_ex",
        &[a],
        || Ok(l),
        |out| {
            let list = smallvec::smallvec![crate::autograd::saved::SavedTensor::output(out, 0)];
            (LinalgCholeskyExBackward0 { upper }, list)
        },
    )?;
    Ok((l, info))
}

/// LinalgCholeskyExBackward0: torch's `cholesky_backward` (Murray 2016):
/// `A^{-H}`-free: `gA = L^{-H} Φ(Lᴴ gL) L^{-1}` symmetrised, with two triangular solves.
#[derive(Clone)]
pub struct LinalgCholeskyExBackward0 {
    upper: bool,
}
impl Backward for LinalgCholeskyExBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("L", SavedField::Tensor(Some(0))),
            ("upper", SavedField::Bool(self.upper)),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "LinalgCholeskyExBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let Some(g) = g.first().and_then(Option::as_ref) else {
            return Ok(smallvec::smallvec![None]);
        };
        let mut l = ctx.saved(0)?;
        let mut gl = g.clone();
        if self.upper {
            l = mt(&l)?;
            gl = mt(&gl)?;
        }
        // tril(Lᴴ gL), then 0.5 (X + tril(X, -1)ᴴ): the symmetric part's lower half
        let x = tril(&matmul(&mt(&l)?, &gl)?, 0)?;
        let x = mul_scalar(&add(&x, &mt(&tril(&x, -1)?)?)?, Scalar::Float(0.5))?;
        let x = linalg_solve_triangular(&mt(&l)?, &x, true, true, false)?;
        let x = linalg_solve_triangular(&l, &x, false, false, false)?;
        Ok(smallvec::smallvec![Some(x)])
    }
    // cholesky_jvp: dL = L Φ(L⁻¹ dA L^{-H}), Φ = strict lower + half the diagonal
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let da = t.first()?.as_ref()?;
        Some((|| {
            let l0 = ctx.saved(0)?;
            let l = if self.upper { mt(&l0)? } else { l0 };
            let x = linalg_solve_triangular(&l, da, false, true, false)?;
            let x = linalg_solve_triangular(&mt(&l)?, &x, true, false, false)?;
            let half_diag = diag_embed(
                &mul_scalar(&diagonal(&x, 0, -2, -1)?, Scalar::Float(0.5))?,
                0,
                -2,
                -1,
            )?;
            let phi = sub(&tril(&x, 0)?, &half_diag)?;
            let dl = matmul(&l, &phi)?;
            Ok(smallvec::smallvec![Some(if self.upper {
                mt(&dl)?
            } else {
                dl
            })])
        })())
    }
}

fn check_cholesky_solve(b: &Tensor, l: &Tensor) -> Result<()> {
    if b.ndim() < 2 {
        return Err(Error::runtime(format!(
            "b should have at least 2 dimensions, but has {} dimensions instead",
            b.ndim()
        )));
    }
    if l.ndim() < 2 {
        return Err(Error::runtime(format!(
            "u should have at least 2 dimensions, but has {} dimensions instead",
            l.ndim()
        )));
    }
    let (m, n) = mat_dims(&l.shape());
    let (bm, bn) = mat_dims(&b.shape());
    if m != n || bm != m {
        return Err(Error::runtime(format!(
            "Incompatible matrix sizes for cholesky_solve: each A matrix is {m} by {n} but each b matrix is {bm} by {bn}"
        )));
    }
    if b.dtype() != l.dtype() {
        return Err(Error::runtime(format!(
            "Expected b and A to have the same dtype, but found b of type {} and A of type {} instead.",
            b.dtype().scalar_type_name(),
            l.dtype().scalar_type_name()
        )));
    }
    if !b.dtype().is_float() {
        return Err(Error::not_implemented(format!(
            "\"cholesky_solve_cpu\" not implemented for '{}'",
            b.dtype().scalar_type_name()
        )));
    }
    Ok(())
}

/// `(L Lᴴ)⁻¹ B` (`(Uᴴ U)⁻¹ B` with `upper`), no history.
fn raw_cholesky_solve(b: &Tensor, l: &Tensor, upper: bool) -> Result<Tensor> {
    // L Y = B, Lᴴ X = Y (upper: Uᴴ Y = B, U X = Y)
    let y = raw_tri_solve(l, b, upper, true, false, upper)?;
    raw_tri_solve(l, &y, upper, true, false, !upper)
}

/// `cholesky_solve(B, L, upper=False)` (CholeskySolveBackward0).
pub fn cholesky_solve(b: &Tensor, l: &Tensor, upper: bool) -> Result<Tensor> {
    check_cholesky_solve(b, l)?;
    let x = with_grad_mode(false, || {
        raw_cholesky_solve(&b.detach(), &l.detach(), upper)
    })?;
    let shapes = Box::new([b.shape(), l.shape()]);
    apply(
        "aten::cholesky_solve",
        &[b, l],
        || Ok(x),
        |out| {
            use crate::autograd::saved::SavedTensor;
            let list = smallvec::smallvec![
                SavedTensor::input(l),
                SavedTensor::output(out, 0),
                SavedTensor::input(b),
            ];
            (CholeskySolveBackward0 { upper, shapes }, list)
        },
    )
}

/// CholeskySolveBackward0: torch's `cholesky_solve_backward`: `gB = A⁻¹ g`, and with
/// `C = gB Xᴴ + X gBᴴ`, `gL = -C L` (`-U C` with `upper`).
#[derive(Clone)]
pub struct CholeskySolveBackward0 {
    upper: bool,
    shapes: Box<[crate::shape::Shape; 2]>,
}
impl Backward for CholeskySolveBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("input2", SavedField::Tensor(Some(0))),
            ("result", SavedField::Tensor(Some(1))),
            ("self", SavedField::Tensor(Some(2))),
            ("upper", SavedField::Bool(self.upper)),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "CholeskySolveBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let Some(g) = g.first().and_then(Option::as_ref) else {
            return Ok(smallvec::smallvec![None, None]);
        };
        let (l, x) = (ctx.saved(0)?, ctx.saved(1)?);
        let gb = cholesky_solve(g, &l, self.upper)?;
        let gl = if ctx.needs_input_grad(1) {
            let c = matmul(&gb, &mt(&x)?)?;
            let c = add(&c, &mt(&c)?)?;
            let gl = if self.upper {
                matmul(&l, &c)?
            } else {
                matmul(&c, &l)?
            };
            Some(super::sum_to(&neg(&gl)?, &self.shapes[1])?)
        } else {
            None
        };
        let gb = summed_if(ctx.needs_input_grad(0), &gb, &self.shapes[0])?;
        Ok(smallvec::smallvec![gb, gl])
    }
    // cholesky_solve_jvp: dK = dL Lᴴ (dUᴴ U), dA = dK + dKᴴ, dX = A⁻¹ (dB - dA X)
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let (db, dl) = (t.first()?.as_ref(), t.get(1).and_then(Option::as_ref));
        Some((|| {
            let (l, x) = (ctx.saved(0)?, ctx.saved(1)?);
            let mut rhs = db.cloned();
            if let Some(dl) = dl {
                let dk = if self.upper {
                    matmul(&mt(dl)?, &l)?
                } else {
                    matmul(dl, &mt(&l)?)?
                };
                let da = add(&dk, &mt(&dk)?)?;
                let r = matmul(&da, &x)?;
                rhs = Some(minus(rhs, &r)?);
            }
            let Some(rhs) = rhs else {
                return Ok(smallvec::smallvec![None]);
            };
            Ok(smallvec::smallvec![Some(cholesky_solve(
                &rhs, &l, self.upper
            )?)])
        })())
    }
}

/// `cholesky_inverse(L, upper=False)`: `(L Lᴴ)⁻¹` (CholeskyInverseBackward0).
pub fn cholesky_inverse(l: &Tensor, upper: bool) -> Result<Tensor> {
    let name = "cholesky_inverse";
    check_matrix(name, l, "A")?;
    check_square(name, l)?;
    check_float(name, l)?;
    // LAPACK's potri (trtri, then lauum: 2n³/3 flops, where two triangular solves
    // against the identity take 2n³), raising on a zero on the diagonal as torch does
    let shape = l.shape();
    let (x, info) = {
        let s = l.snapshot();
        let (x, i) = crate::backend::cholesky_inverse(&s.storage.read(), &s.layout, upper)?;
        (
            new_tensor(x, &shape),
            new_tensor(i, &shape[..shape.len() - 2]),
        )
    };
    check_info(name, &info, shape.len() > 2, |i| {
        format!(
            "The diagonal element {i} is zero, the inversion could not be completed because the input matrix is singular."
        )
    })?;
    apply(
        "aten::cholesky_inverse",
        &[l],
        || Ok(x),
        |out| {
            use crate::autograd::saved::SavedTensor;
            let list = smallvec::smallvec![SavedTensor::output(out, 0), SavedTensor::input(l)];
            (CholeskyInverseBackward0 { upper }, list)
        },
    )
}

/// CholeskyInverseBackward0: torch's `cholesky_inverse_backward`: with `C = X (g + gᴴ)
/// X`, `gL = -C L` (`-U C` with `upper`).
#[derive(Clone)]
pub struct CholeskyInverseBackward0 {
    upper: bool,
}
impl Backward for CholeskyInverseBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("result", SavedField::Tensor(Some(0))),
            ("self", SavedField::Tensor(Some(1))),
            ("upper", SavedField::Bool(self.upper)),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "CholeskyInverseBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let Some(g) = g.first().and_then(Option::as_ref) else {
            return Ok(smallvec::smallvec![None]);
        };
        let (x, l) = (ctx.saved(0)?, ctx.saved(1)?);
        let c = matmul(&x, &matmul(&add(g, &mt(g)?)?, &x)?)?;
        let gl = if self.upper {
            matmul(&l, &c)?
        } else {
            matmul(&c, &l)?
        };
        Ok(smallvec::smallvec![Some(neg(&gl)?)])
    }
    // cholesky_inverse_jvp: dX = -X dA X with dA = dL Lᴴ + L dLᴴ (dUᴴ U + Uᴴ dU)
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let dl = t.first()?.as_ref()?;
        Some((|| {
            let (x, l) = (ctx.saved(0)?, ctx.saved(1)?);
            let dk = if self.upper {
                matmul(&mt(dl)?, &l)?
            } else {
                matmul(dl, &mt(&l)?)?
            };
            let da = add(&dk, &mt(&dk)?)?;
            Ok(smallvec::smallvec![Some(neg(&matmul(
                &matmul(&x, &da)?,
                &x
            )?)?)])
        })())
    }
}

// ---- matrix_exp ----------------------------------------------------------------------------

/// `linalg.matrix_exp(A)` (LinalgMatrixExpBackward0): scaling and squaring with Padé
/// approximants, in float64.
pub fn linalg_matrix_exp(a: &Tensor) -> Result<Tensor> {
    square_float("linalg.matrix_exp", a)?;
    let e = with_grad_mode(false, || -> Result<_> {
        let s = a.snapshot();
        Ok(new_tensor(
            crate::backend::matrix_exp(&s.storage.read(), &s.layout)?,
            &a.shape(),
        ))
    })?;
    apply(
        "aten::linalg_matrix_exp",
        &[a],
        || Ok(e),
        |_| {
            let list = smallvec::smallvec![crate::autograd::saved::SavedTensor::input(a)];
            (LinalgMatrixExpBackward0, list)
        },
    )
}

/// torch's `linalg_matrix_exp_differential`: the derivative of exp at `a` along `g`
/// (along `gᴴ`'s adjoint with `adjoint`) is the upper right block of
/// `exp([[Aᴴ, G], [0, Aᴴ]])` (`A` itself when not `adjoint`), recorded.
fn matrix_exp_differential(a: &Tensor, g: &Tensor, adjoint: bool) -> Result<Tensor> {
    let a = if adjoint { mt(a)? } else { a.clone() };
    let n = mat_dims(&a.shape()).0 as i64;
    let z = zeros_like(&a)?;
    let top = cat(&[a.clone(), expand(g, &a.shape())?], -1)?;
    let bottom = cat(&[z, a], -1)?;
    let big = cat(&[top, bottom], -2)?;
    narrow(&narrow(&linalg_matrix_exp(&big)?, -2, 0, n)?, -1, n, n)
}

/// LinalgMatrixExpBackward0: `matrix_exp_differential(A, g, adjoint)`; forward: the same
/// along the tangent.
#[derive(Clone)]
pub struct LinalgMatrixExpBackward0;
impl Backward for LinalgMatrixExpBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![("self", SavedField::Tensor(Some(0)))]
    }
    fn name(&self) -> Cow<'static, str> {
        "LinalgMatrixExpBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let Some(g) = g.first().and_then(Option::as_ref) else {
            return Ok(smallvec::smallvec![None]);
        };
        Ok(smallvec::smallvec![Some(matrix_exp_differential(
            &ctx.saved(0)?,
            g,
            true
        )?)])
    }
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let da = t.first()?.as_ref()?;
        Some((|| {
            Ok(smallvec::smallvec![Some(matrix_exp_differential(
                &ctx.saved(0)?,
                da,
                false
            )?)])
        })())
    }
}

// ---- linalg.lu / lu_unpack ----------------------------------------------------------------

/// `linalg.lu(A, *, pivot=True)`: `(P, L, U)`, one LinalgLuBackward0 for L and U (P
/// has no gradient, as torch's).
pub fn linalg_lu(a: &Tensor, pivot: bool) -> Result<(Tensor, Tensor, Tensor)> {
    if a.ndim() < 2 {
        return Err(Error::runtime(format!(
            "linalg.lu: Expected tensor with 2 or more dimensions. Got size: {:?} instead",
            a.shape().as_slice()
        )));
    }
    let (lu, piv, _) = linalg_lu_factor_ex(&a.detach(), pivot, false, "linalg.lu_factor")?;
    let (m, _) = mat_dims(&a.shape());
    let (p, l, u) = with_grad_mode(false, || -> Result<_> {
        let (l, u) = unpack_lu(&lu)?;
        Ok((
            permutation(&piv, m, a.dtype())?,
            contiguous(&l)?,
            contiguous(&u)?,
        ))
    })?;
    let pp = p.clone();
    let outs = apply_multi(
        "aten::linalg_lu",
        &[a],
        || Ok(vec![l, u]),
        |outs| {
            use crate::autograd::saved::SavedTensor;
            let list = smallvec::smallvec![
                SavedTensor::output(&outs[0], 0),
                SavedTensor::input(&pp),
                SavedTensor::output(&outs[1], 1),
            ];
            (LinalgLuBackward0 { pivot }, list)
        },
    )?;
    let mut it = outs.into_iter();
    match (it.next(), it.next()) {
        (Some(l), Some(u)) => Ok((p, l, u)),
        _ => Err(Error::Internal("linalg.lu: two outputs".into())),
    }
}

/// LinalgLuBackward0: torch's `linalg_lu_backward`; forward: `linalg_lu_jvp`.
#[derive(Clone)]
pub struct LinalgLuBackward0 {
    pivot: bool,
}
impl Backward for LinalgLuBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("L", SavedField::Tensor(Some(0))),
            ("P", SavedField::Tensor(Some(1))),
            ("U", SavedField::Tensor(Some(2))),
            ("pivot", SavedField::Bool(self.pivot)),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "LinalgLuBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let (gl, gu) = (
            g.first().and_then(Option::as_ref),
            g.get(1).and_then(Option::as_ref),
        );
        if gl.is_none() && gu.is_none() {
            return Ok(smallvec::smallvec![None]);
        }
        let (l, p, u) = (ctx.saved(0)?, ctx.saved(1)?, ctx.saved(2)?);
        let p = self.pivot.then_some(&p);
        Ok(smallvec::smallvec![Some(lu_backward(gl, gu, p, &l, &u)?)])
    }
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let da = t.first()?.as_ref()?;
        Some((|| {
            let (l, p, u) = (ctx.saved(0)?, ctx.saved(1)?, ctx.saved(2)?);
            let (dl, du) = lu_jvp(da, &p, &l, &u)?;
            Ok(smallvec::smallvec![Some(dl), Some(du)])
        })())
    }
}

/// `lu_unpack(LU, pivots, unpack_data=True, unpack_pivots=True)`: `(P, L, U)` from the
/// packed factors (LuUnpackBackward0 for L and U); what is not unpacked is empty.
pub fn lu_unpack(
    lu: &Tensor,
    piv: &Tensor,
    unpack_data: bool,
    unpack_pivots: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    if lu.ndim() < 2 {
        return Err(Error::runtime(format!(
            "torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: {:?} instead",
            lu.shape().as_slice()
        )));
    }
    let (m, n) = mat_dims(&lu.shape());
    let k = m.min(n);
    if unpack_pivots {
        if piv.dtype() != DType::I64 {
            return Err(Error::runtime(
                "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of rgrad.int64 dtype.\nNote: this function is intended to be used with the output produced by torch.linalg.lu_factor",
            ));
        }
        let mut want = lu.shape()[..lu.ndim() - 2].to_vec();
        want.push(k);
        if piv.shape().as_slice() != want.as_slice() {
            return Err(Error::value(format!(
                "Expected LU_pivots to have shape {:?} but got {:?} instead.",
                want,
                piv.shape().as_slice()
            )));
        }
    }
    let empty = || zeros(&[0], lu.dtype()).and_then(|z| to_device(&z, lu.device()));
    let p = if unpack_pivots {
        with_grad_mode(false, || permutation(piv, m, lu.dtype()))?
    } else {
        empty()?
    };
    if !unpack_data {
        let (l, u) = (empty()?, empty()?);
        return Ok((p, l, u));
    }
    let (l, u) = with_grad_mode(false, || -> Result<_> {
        let (l, u) = unpack_lu(&lu.detach())?;
        Ok((contiguous(&l)?, contiguous(&u)?))
    })?;
    let outs = apply_multi(
        "aten::lu_unpack",
        &[lu],
        || Ok(vec![l, u]),
        |_| (LuUnpackBackward0 { m, n }, smallvec::SmallVec::new()),
    )?;
    let mut it = outs.into_iter();
    match (it.next(), it.next()) {
        (Some(l), Some(u)) => Ok((p, l, u)),
        _ => Err(Error::Internal("lu_unpack: two outputs".into())),
    }
}

/// LuUnpackBackward0: torch's `lu_unpack_backward`: L's gradient below the diagonal and
/// U's on and above it, placed in the packed matrix; forward: the packed tangent's parts.
#[derive(Clone)]
pub struct LuUnpackBackward0 {
    m: usize,
    n: usize,
}
impl Backward for LuUnpackBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            (
                "LU_data_sym_argsize_minus_1",
                SavedField::Int(self.n as i64),
            ),
            (
                "LU_data_sym_argsize_minus_2",
                SavedField::Int(self.m as i64),
            ),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "LuUnpackBackward0".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let (gl, gu) = (
            g.first().and_then(Option::as_ref),
            g.get(1).and_then(Option::as_ref),
        );
        let (m, n) = (self.m, self.n);
        let pad = |x: Tensor, rows: usize, cols: usize| -> Result<Tensor> {
            // x (*, r, c) placed at the top left of (*, rows, cols)
            let s = x.shape();
            let (r, c) = mat_dims(&s);
            let batch = &s[..s.len() - 2];
            let x = if cols > c {
                cat(
                    &[
                        x.clone(),
                        zeros(&with_matrix(batch, r, cols - c), x.dtype())?,
                    ],
                    -1,
                )?
            } else {
                x
            };
            if rows > r {
                cat(
                    &[
                        x.clone(),
                        zeros(&with_matrix(batch, rows - r, cols), x.dtype())?,
                    ],
                    -2,
                )
            } else {
                Ok(x)
            }
        };
        let mut total: Option<Tensor> = None;
        if let Some(gl) = gl {
            total = Some(pad(tril(gl, -1)?, m, n)?);
        }
        if let Some(gu) = gu {
            total = Some(add_opt(total, pad(triu(gu, 0)?, m, n)?)?);
        }
        Ok(smallvec::smallvec![total])
    }
    fn jvp(&self, _ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let dlu = t.first()?.as_ref()?;
        Some((|| {
            let k = self.m.min(self.n) as i64;
            let dl = tril(&narrow(dlu, -1, 0, k)?, -1)?;
            let du = triu(&narrow(dlu, -2, 0, k)?, 0)?;
            Ok(smallvec::smallvec![Some(dl), Some(du)])
        })())
    }
}
