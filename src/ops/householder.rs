//! The values of `geqrf`, `linalg.householder_product` (`orgqr`), `ormqr`,
//! `linalg.ldl_factor_ex` and `linalg.ldl_solve`: the backend's Householder and
//! Bunch–Kaufman kernels (`backend::linalg::{householder, ldl}`, float64 inside), with no
//! graph. The Python layer (`rgrad._linalg_more`) checks the arguments in torch's order
//! and words, records torch's nodes (GeqrfBackward0, the NotImplemented nodes of the LDL
//! functions) and keeps householder_product's and ormqr's differentiable compositions
//! for when a gradient is wanted; these checks only keep a direct call from reaching a
//! kernel with shapes it cannot take.

use super::*;
use crate::dtype::DType;
use crate::{Error, Result};

fn mat(name: &str, t: &Tensor, what: &str) -> Result<(Vec<usize>, usize, usize)> {
    let s = t.shape();
    if s.len() < 2 {
        return Err(Error::runtime(format!(
            "{name}: {what} must have at least 2 dimensions."
        )));
    }
    if !t.dtype().is_float() {
        return Err(Error::not_implemented(format!(
            "{name}: expected a floating point {what}, got {}",
            t.dtype().scalar_type_name()
        )));
    }
    Ok((s[..s.len() - 2].to_vec(), s[s.len() - 2], s[s.len() - 1]))
}

fn same_dtype(name: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.dtype() != b.dtype() {
        return Err(Error::runtime(format!(
            "{name}: expected tensors of one dtype, got {} and {}",
            a.dtype().scalar_type_name(),
            b.dtype().scalar_type_name()
        )));
    }
    Ok(())
}

/// `tau`'s shape `(*batch, k)` with `k ≤ max_k`: k.
fn tau_len(name: &str, tau: &Tensor, batch: &[usize], max_k: usize) -> Result<usize> {
    let s = tau.shape();
    let ok = s.len() == batch.len() + 1 && s[..batch.len()] == *batch && s[batch.len()] <= max_k;
    if !ok {
        return Err(Error::runtime(format!(
            "{name}: tau of shape {:?} does not fit the input's batch {batch:?} and {max_k} reflectors",
            s.as_slice()
        )));
    }
    Ok(s[batch.len()])
}

fn with(batch: &[usize], tail: &[usize]) -> Vec<usize> {
    let mut v = batch.to_vec();
    v.extend_from_slice(tail);
    v
}

/// `geqrf(A)`: `(a, tau)`, LAPACK's packed QR of every matrix of `a` (`(*, m, n)`): R on
/// and above the diagonal, the Householder vectors below it (their leading 1 implicit),
/// `tau` `(*, min(m, n))`.
pub fn geqrf(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let (batch, m, n) = mat("geqrf", a, "input")?;
    crate::dispatch::forward("aten::geqrf", Vec::new, || {
        let s = a.snapshot();
        let (f, t) = crate::backend::geqrf(&s.storage.read(), &s.layout)?;
        Ok((
            new_tensor(f, &with(&batch, &[m, n])),
            new_tensor(t, &with(&batch, &[m.min(n)])),
        ))
    })
}

/// `linalg.householder_product(A, tau)`: the first n columns of H₀ ⋯ H_{k−1},
/// Hᵢ = I − τᵢ·vᵢ·vᵢᵀ, vᵢ column i of `a` (`(*, m, n)`, m ≥ n) below the diagonal with
/// a leading 1, `tau` `(*, k)`, k ≤ n.
pub fn householder_product(a: &Tensor, tau: &Tensor) -> Result<Tensor> {
    let name = "householder_product";
    let (batch, m, n) = mat(name, a, "input")?;
    if m < n {
        return Err(Error::runtime(format!(
            "{name}: input.shape[-2] must be greater than or equal to input.shape[-1]"
        )));
    }
    tau_len(name, tau, &batch, n)?;
    same_dtype(name, a, tau)?;
    crate::dispatch::forward("aten::linalg_householder_product", Vec::new, || {
        let (sa, st) = (a.snapshot(), tau.snapshot());
        let q = crate::backend::householder_product(
            &sa.storage.read(),
            &sa.layout,
            &st.storage.read(),
            &st.layout,
        )?;
        Ok(new_tensor(q, &with(&batch, &[m, n])))
    })
}

/// `ormqr(A, tau, C, left, transpose)`: Q·C (Qᵀ·C with `transpose`; C·Q, C·Qᵀ when not
/// `left`) for Q = H₀ ⋯ H_{k−1} (`mq × mq`) of the reflectors packed in `a` (`(*, mq,
/// ·)`) and `tau` (`(*, k)`, k ≤ mq); `c` of a's batch, `(*, mq, ·)` (`(*, ·, mq)` when
/// not `left`).
pub fn ormqr(a: &Tensor, tau: &Tensor, c: &Tensor, left: bool, transpose: bool) -> Result<Tensor> {
    let name = "ormqr";
    let (batch, mq, na) = mat(name, a, "input")?;
    let (cbatch, cm, cn) = mat(name, c, "other")?;
    if cbatch != batch || (if left { cm } else { cn }) != mq {
        return Err(Error::runtime(format!(
            "{name}: other of shape {:?} does not fit the input's {:?}",
            c.shape().as_slice(),
            a.shape().as_slice()
        )));
    }
    tau_len(name, tau, &batch, mq.min(na))?;
    same_dtype(name, a, tau)?;
    same_dtype(name, a, c)?;
    crate::dispatch::forward("aten::ormqr", Vec::new, || {
        let (sa, st, sc) = (a.snapshot(), tau.snapshot(), c.snapshot());
        let out = crate::backend::ormqr(
            &sa.storage.read(),
            &sa.layout,
            &st.storage.read(),
            &st.layout,
            &sc.storage.read(),
            &sc.layout,
            left,
            transpose,
        )?;
        Ok(new_tensor(out, &with(&batch, &[cm, cn])))
    })
}

/// `linalg.ldl_factor_ex(A)`'s values: `(LD, pivots, info)`, the Bunch–Kaufman
/// factorization (`sytrf`, lower) of every matrix of `a` (`(*, n, n)`, its lower triangle
/// read): L and D packed in LD (its strict upper triangle zero), 1-based int64 pivots
/// (negative for a 2×2 block), int64 info (the first zero pivot).
pub fn ldl_factor_ex(a: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    let name = "ldl_factor";
    let (batch, m, n) = mat(name, a, "A")?;
    if m != n {
        return Err(Error::runtime(format!(
            "{name}: A must be batches of square matrices, but they are {m} by {n} matrices"
        )));
    }
    crate::dispatch::forward("aten::linalg_ldl_factor_ex", Vec::new, || {
        let s = a.snapshot();
        let (f, p, i) = crate::backend::ldl_factor(&s.storage.read(), &s.layout)?;
        Ok((
            new_tensor(f, &with(&batch, &[n, n])),
            new_tensor(p, &with(&batch, &[n])),
            new_tensor(i, &batch),
        ))
    })
}

/// `linalg.ldl_solve(LD, pivots, B)`'s value: `A·X = B` from [`ldl_factor_ex`]'s LD
/// (`(*, n, n)`) and pivots (`(*, n)`, int64) for B (`(*, n, k)`); the batches broadcast.
pub fn ldl_solve(ld: &Tensor, pivots: &Tensor, b: &Tensor) -> Result<Tensor> {
    let name = "ldl_solve";
    let (lbatch, n, n2) = mat(name, ld, "LD")?;
    let (bbatch, bn, k) = mat(name, b, "B")?;
    if n != n2 || bn != n || pivots.shape().as_slice() != with(&lbatch, &[n]).as_slice() {
        return Err(Error::runtime(format!(
            "{name}: shapes LD {:?}, pivots {:?} and B {:?} do not fit",
            ld.shape().as_slice(),
            pivots.shape().as_slice(),
            b.shape().as_slice()
        )));
    }
    if pivots.dtype() != DType::I64 {
        return Err(Error::runtime(format!(
            "{name}: expected int64 pivots, got {}",
            pivots.dtype().scalar_type_name()
        )));
    }
    same_dtype(name, ld, b)?;
    let batch = crate::shape::broadcast_shapes(&lbatch, &bbatch)?.to_vec();
    crate::dispatch::forward("aten::linalg_ldl_solve", Vec::new, || {
        let ld = expand(&ld.detach(), &with(&batch, &[n, n]))?;
        let pivots = expand(&pivots.detach(), &with(&batch, &[n]))?;
        let b = expand(&b.detach(), &with(&batch, &[n, k]))?;
        let (sl, sp, sb) = (ld.snapshot(), pivots.snapshot(), b.snapshot());
        let x = crate::backend::ldl_solve(
            &sl.storage.read(),
            &sl.layout,
            &sp.storage.read(),
            &sp.layout,
            &sb.storage.read(),
            &sb.layout,
        )?
        .ok_or_else(|| {
            Error::runtime(format!(
                "{name}: the pivots do not describe a factorization (out of range, or a 2x2 block past the end)"
            ))
        })?;
        Ok(new_tensor(x, &with(&batch, &[n, k])))
    })
}
