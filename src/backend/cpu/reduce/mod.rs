//! Reduction kernels over any set of dims: sum, mean, prod, Σx² (norm), var/std, max/min
//! with or without indices, all/any, logsumexp, softmax/log_softmax and its backward
//! (the index kernels gather, scatter-add and index_select are in `index.rs`).
//!
//! `plan` brings a layout to a block of rows or columns, `fold` folds blocks (the
//! associative reductions and the arg-reductions), `softmax` has the fused softmax and
//! logsumexp kernels, `par` the SIMD-level dispatch and the fixed split across the pool.
//! Float inputs take these paths; integer and bool sums and products take the general
//! strided fold below. The design and its measurements: docs/kernels.md, "Reductions".

mod fold;
pub(crate) mod par;
mod plan;
#[cfg(target_arch = "x86_64")]
mod simd;
mod softmax;
#[cfg(test)]
mod tests;

use super::strided::{contiguous, for_each_offset};
use crate::dtype::DType;
use crate::layout::Layout;
use crate::shape::Shape;
use crate::storage::{Buffer, Element};
use crate::with_dtype;
use fold::{Extreme, NanSum, Prod, SqDev, Sum, SumSq, Truth};
use plan::{Block, counts, plan};
pub(crate) use softmax::Real;
use std::borrow::Cow;

pub use crate::backend::ReduceOp;

/// Splits a layout into (kept dims, reduced dims) sub-layouts.
fn split(layout: &Layout, dims: &[usize]) -> ((Shape, Shape), (Shape, Shape)) {
    let (mut ks, mut kst, mut rs, mut rst) =
        (Shape::new(), Shape::new(), Shape::new(), Shape::new());
    for (i, (&d, &s)) in layout.shape.iter().zip(&layout.strides).enumerate() {
        if dims.contains(&i) {
            rs.push(d);
            rst.push(s);
        } else {
            ks.push(d);
            kst.push(s);
        }
    }
    ((ks, kst), (rs, rst))
}

/// Folds the reduced dims for every position of the kept dims, in row-major order (the
/// general path, for integer and bool inputs).
fn fold<T: Copy, A: Copy>(
    data: &[T],
    layout: &Layout,
    dims: &[usize],
    init: A,
    f: impl Fn(A, T, usize) -> A,
) -> Vec<A> {
    // (everything reduced on a contiguous input is the block with outer = inner = 1)
    if let Some((outer, red, inner)) = contiguous_block(layout, dims) {
        let n = outer * red * inner;
        // an empty view's offset may lie past the end of its buffer
        let block = if n == 0 {
            &data[..0]
        } else {
            &data[layout.offset..layout.offset + n]
        };
        return fold_block(block, (outer, red, inner), init, f);
    }
    let ((ks, kst), (rs, rst)) = split(layout, dims);
    let mut out = Vec::with_capacity(crate::shape::numel(&ks));
    for_each_offset(&ks, &kst, layout.offset, |base| {
        let mut acc = init;
        let mut i = 0;
        for_each_offset(&rs, &rst, base, |o| {
            acc = f(acc, data[o], i);
            i += 1;
        });
        out.push(acc);
    });
    out
}

/// For a contiguous input whose reduced dims are one run `d0..=d1` (a bias gradient's
/// sum over the batch, a softmax's over the last dim): (outer, reduced, inner) sizes.
fn contiguous_block(layout: &Layout, dims: &[usize]) -> Option<(usize, usize, usize)> {
    let (&d0, &d1) = (dims.iter().min()?, dims.iter().max()?);
    if d1 - d0 + 1 != dims.len() || !layout.is_contiguous() {
        return None;
    }
    let sh = &layout.shape;
    let p = |r: std::ops::Range<usize>| sh[r].iter().product::<usize>();
    Some((p(0..d0), p(d0..d1 + 1), p(d1 + 1..sh.len())))
}

/// [`fold`] over a contiguous `[outer, red, inner]` block, reducing the middle: each
/// output folds its elements in the same order as the general path (so the result is
/// the same bit for bit), but the inner positions advance together, which vectorises.
fn fold_block<T: Copy, A: Copy>(
    data: &[T],
    (outer, red, inner): (usize, usize, usize),
    init: A,
    f: impl Fn(A, T, usize) -> A,
) -> Vec<A> {
    let mut out = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        let block = &data[o * red * inner..(o + 1) * red * inner];
        if inner == 1 {
            let mut acc = init;
            for (r, &x) in block.iter().enumerate() {
                acc = f(acc, x, r);
            }
            out.push(acc);
            continue;
        }
        let start = out.len();
        out.resize(start + inner, init);
        if inner == 0 {
            continue;
        }
        let acc = &mut out[start..];
        for (r, row) in block.chunks_exact(inner).enumerate() {
            for (a, &x) in acc.iter_mut().zip(row) {
                *a = f(*a, x, r);
            }
        }
    }
    out
}

/// The data a block reads (the input, or a copy) and the block.
type Planned<'a, T> = (Cow<'a, [T]>, Block);

/// A fold over `dims` of a layout: the block and the data it reads; `Err((outputs,
/// reduced))` where nothing is reduced over or there is no output (the caller fills
/// the outputs, if any, with the empty fold's value).
fn float_block<'a, T: Copy>(
    data: &'a [T],
    layout: &Layout,
    dims: &[usize],
) -> Result<Planned<'a, T>, (usize, usize)> {
    let (n_out, n_red) = counts(&layout.shape, dims);
    if n_out == 0 || n_red == 0 {
        return Err((n_out, n_red));
    }
    Ok(plan(data, layout, dims))
}

/// sum, mean, prod (float64 accumulators; float32 rows sum in float32 within short
/// chunks first, `fold::Sum`), max or min of a float input over `dims`.
fn float_reduce<T: Real>(op: ReduceOp, v: &[T], layout: &Layout, dims: &[usize]) -> Vec<T> {
    let (x, b) = match float_block(v, layout, dims) {
        Ok(p) => p,
        Err((n_out, n_red)) => {
            let e = match op {
                ReduceOp::Prod => 1.0,
                ReduceOp::Mean => f64::NAN, // 0 / 0, as torch
                ReduceOp::Max => f64::NEG_INFINITY,
                ReduceOp::Min => f64::INFINITY,
                _ => 0.0,
            };
            return vec![T::from_f64(e); if n_red == 0 { n_out } else { 0 }];
        }
    };
    let to =
        |a: Vec<f64>, k: f64| -> Vec<T> { a.into_iter().map(|a| T::from_f64(a / k)).collect() };
    match op {
        ReduceOp::Prod => to(fold::run(&x, &b, &Prod), 1.0),
        ReduceOp::Mean => to(fold::run(&x, &b, &Sum), b.red as f64),
        ReduceOp::Max => fold::run(&x, &b, &Extreme::<true>),
        ReduceOp::Min => fold::run(&x, &b, &Extreme::<false>),
        ReduceOp::NanSum => to(fold::run(&x, &b, &NanSum), 1.0),
        _ => to(fold::run(&x, &b, &Sum), 1.0),
    }
}

/// Whether all (`all`) or any of the elements over `dims` are nonzero: bool.
fn truth<T: Element>(v: &[T], layout: &Layout, dims: &[usize], all: bool) -> Vec<bool> {
    match float_block(v, layout, dims) {
        Ok((x, b)) => fold::run(&x, &b, &Truth(all)),
        Err((n_out, n_red)) => vec![all; if n_red == 0 { n_out } else { 0 }],
    }
}

/// Reduces `dims` (wrapped, unique, sorted). The result is contiguous with the kept dims'
/// sizes in order (callers reshape for keepdim). Float sums, means and products
/// accumulate in float64 (rounded once at the end; float32 rows add 16 elements a lane in
/// float32 before, `fold::Sum`); sums of bool/int64 give int64, as in torch; all/any
/// give bool.
pub fn reduce(op: ReduceOp, buf: &Buffer, layout: &Layout, dims: &[usize]) -> Buffer {
    match (op, buf) {
        (ReduceOp::All | ReduceOp::Any, _) => {
            let all = op == ReduceOp::All;
            with_dtype!(buf.dtype(), T => Buffer::Bool(truth(T::slice(buf), layout, dims, all).into()))
        }
        (ReduceOp::ArgMax | ReduceOp::ArgMin, _) => Buffer::I64(
            arg_reduce(buf, layout, dims, op == ReduceOp::ArgMax)
                .1
                .into(),
        ),
        (_, Buffer::F32(v)) => Buffer::F32(float_reduce(op, v, layout, dims).into()),
        (_, Buffer::F64(v)) => Buffer::F64(float_reduce(op, v, layout, dims).into()),
        (ReduceOp::Max | ReduceOp::Min, _) => arg_reduce(buf, layout, dims, op == ReduceOp::Max).0,
        (_, Buffer::Cuda(_)) => crate::storage::not_host(),
        (_, Buffer::I64(v)) => {
            let prod = op == ReduceOp::Prod;
            Buffer::I64(
                fold(v, layout, dims, i64::from(prod), |a: i64, x, _| {
                    if prod {
                        a.wrapping_mul(x)
                    } else {
                        a.wrapping_add(x)
                    }
                })
                .into(),
            )
        }
        (_, Buffer::Bool(v)) => {
            let prod = op == ReduceOp::Prod;
            Buffer::I64(
                fold(v, layout, dims, i64::from(prod), |a: i64, x: bool, _| {
                    if prod {
                        a * i64::from(x)
                    } else {
                        a + i64::from(x)
                    }
                })
                .into(),
            )
        }
    }
}

/// Σ x² over `dims` of a float input (the 2-norm's sum), in float64 (float32 rows square
/// and add in float32 within short chunks first, `fold::SumSq`), rounded once.
/// `None` for other dtypes.
pub fn sum_squares(buf: &Buffer, layout: &Layout, dims: &[usize]) -> Option<Buffer> {
    fn go<T: Real>(v: &[T], layout: &Layout, dims: &[usize]) -> Vec<T> {
        match float_block(v, layout, dims) {
            Ok((x, b)) => fold::run(&x, &b, &SumSq)
                .into_iter()
                .map(T::from_f64)
                .collect(),
            Err((n_out, n_red)) => vec![T::default(); if n_red == 0 { n_out } else { 0 }],
        }
    }
    match buf {
        Buffer::F32(v) => Some(Buffer::F32(go(v, layout, dims).into())),
        Buffer::F64(v) => Some(Buffer::F64(go(v, layout, dims).into())),
        _ => None,
    }
}

/// mse_loss's forward: Σ(a - b)² (divided by the count for `mean`) of two float buffers
/// of one dtype, laid out alike and contiguously, as a 0-d buffer; the bits of `sum` (or
/// `mean`) of `(a - b) * (a - b)` (`fold::sq_diff_sum`). `None` where it does not apply.
pub fn sq_diff_sum(a: &Buffer, la: &Layout, b: &Buffer, lb: &Layout, mean: bool) -> Option<Buffer> {
    fn go<T: Real>(a: &[T], la: &Layout, b: &[T], lb: &Layout, mean: bool) -> Vec<T> {
        let n = la.numel();
        let (a, b) = (&a[la.offset..la.offset + n], &b[lb.offset..lb.offset + n]);
        let k = if mean { n as f64 } else { 1.0 };
        vec![T::from_f64(fold::sq_diff_sum(a, b) / k)]
    }
    if la.shape != lb.shape || la.numel() == 0 || !la.is_contiguous() || !lb.is_contiguous() {
        return None;
    }
    match (a, b) {
        (Buffer::F32(x), Buffer::F32(y)) => Some(Buffer::F32(go(x, la, y, lb, mean).into())),
        (Buffer::F64(x), Buffer::F64(y)) => Some(Buffer::F64(go(x, la, y, lb, mean).into())),
        _ => None,
    }
}

/// var (or std, `sqrt`) over `dims` of a float input with `correction`: two passes (the
/// mean as `mean`'s sum, then Σ(x - mean)² in float64), divided by
/// `max(N - correction, 0)` and rounded once. `None` for other dtypes.
pub fn var(
    buf: &Buffer,
    layout: &Layout,
    dims: &[usize],
    correction: f64,
    sqrt: bool,
) -> Option<Buffer> {
    fn go<T: Real>(v: &[T], layout: &Layout, dims: &[usize], c: f64, sqrt: bool) -> Vec<T> {
        let (x, b) = match float_block(v, layout, dims) {
            Ok(p) => p,
            Err((n_out, n_red)) => {
                return vec![T::from_f64(f64::NAN); if n_red == 0 { n_out } else { 0 }];
            }
        };
        let n = b.red as f64;
        let mean: Vec<f64> = fold::run(&x, &b, &Sum).into_iter().map(|s| s / n).collect();
        let Some(dev) = SqDev::new(&mean, &b) else {
            return vec![];
        };
        let d = f64::max(n - c, 0.0);
        fold::run(&x, &b, &dev)
            .into_iter()
            .map(|s| {
                let v = s / d;
                T::from_f64(if sqrt { v.sqrt() } else { v })
            })
            .collect()
    }
    match buf {
        Buffer::F32(v) => Some(Buffer::F32(go(v, layout, dims, correction, sqrt).into())),
        Buffer::F64(v) => Some(Buffer::F64(go(v, layout, dims, correction, sqrt).into())),
        _ => None,
    }
}

/// `log Σ exp(x)` over `dims` of a float input (`None` for other dtypes and empty
/// reductions: the op composes those).
pub fn logsumexp(buf: &Buffer, layout: &Layout, dims: &[usize]) -> Option<Buffer> {
    fn go<T: Real>(v: &[T], layout: &Layout, dims: &[usize]) -> Option<Vec<T>> {
        let (x, b) = float_block(v, layout, dims).ok()?;
        Some(softmax::logsumexp(&x, &b))
    }
    match buf {
        Buffer::F32(v) => go(v, layout, dims).map(|v| Buffer::F32(v.into())),
        Buffer::F64(v) => go(v, layout, dims).map(|v| Buffer::F64(v.into())),
        _ => None,
    }
}

/// softmax (or log_softmax) along `dim` of a non-empty float input, fused (max, exp,
/// sum, scale: one pass each over a row or a tile of columns), as a row-major result.
/// `None` for other dtypes and empty inputs.
pub fn softmax(buf: &Buffer, layout: &Layout, dim: usize, log: bool) -> Option<Buffer> {
    fn go<T: Real>(v: &[T], layout: &Layout, dim: usize, log: bool) -> Option<Vec<T>> {
        if layout.numel() == 0 || dim >= layout.shape.len() {
            return None;
        }
        let x = contiguous(v, layout);
        Some(softmax::softmax(&x, &layout.shape, dim, log))
    }
    match buf {
        Buffer::F32(v) => go(v, layout, dim, log).map(|v| Buffer::F32(v.into())),
        Buffer::F64(v) => go(v, layout, dim, log).map(|v| Buffer::F64(v.into())),
        _ => None,
    }
}

/// softmax's (`y·(g - Σ g·y)`) or log_softmax's (`g - exp(y)·Σ g`) backward along the
/// last dim of `g` and `y` (one float dtype, one shape), fused, row-major. `None` where
/// it does not apply (the op composes those).
pub fn softmax_backward(
    g: &Buffer,
    lg: &Layout,
    y: &Buffer,
    ly: &Layout,
    log: bool,
) -> Option<Buffer> {
    fn go<T: Real>(g: &[T], lg: &Layout, y: &[T], ly: &Layout, log: bool) -> Option<Vec<T>> {
        let red = *lg.shape.last()?;
        if lg.shape != ly.shape || red == 0 || lg.numel() == 0 {
            return None;
        }
        let (g, y) = (contiguous(g, lg), contiguous(y, ly));
        Some(softmax::softmax_backward_rows(&g, &y, red, log))
    }
    match (g, y) {
        (Buffer::F32(g), Buffer::F32(y)) => go(g, lg, y, ly, log).map(|v| Buffer::F32(v.into())),
        (Buffer::F64(g), Buffer::F64(y)) => go(g, lg, y, ly, log).map(|v| Buffer::F64(v.into())),
        _ => None,
    }
}

/// (values, indices) of the max (or min) over `dims`; NaN wins, as in torch; ties keep
/// the first index. Indices count in row-major order over the reduced dims.
pub fn arg_reduce(
    buf: &Buffer,
    layout: &Layout,
    dims: &[usize],
    is_max: bool,
) -> (Buffer, Vec<i64>) {
    fn go<T: Element>(
        v: &[T],
        layout: &Layout,
        dims: &[usize],
        is_max: bool,
    ) -> Option<(Vec<T>, Vec<i64>)> {
        let (x, b) = float_block(v, layout, dims).ok()?;
        Some(fold::arg(&x, &b, is_max).into_iter().unzip())
    }
    // indices count the reduced elements in the block's (memory) order, which is their
    // row-major order for one dim, or for a run of dims of a contiguous input
    let single_run =
        dims.len() == 1 || (layout.is_contiguous() && dims.windows(2).all(|w| w[1] == w[0] + 1));
    match buf {
        Buffer::F32(v) if single_run => {
            if let Some((vals, idx)) = go(v, layout, dims, is_max) {
                return (Buffer::F32(vals.into()), idx);
            }
        }
        Buffer::F64(v) if single_run => {
            if let Some((vals, idx)) = go(v, layout, dims, is_max) {
                return (Buffer::F64(vals.into()), idx);
            }
        }
        _ => {}
    }
    with_dtype!(buf.dtype(), T => {
        let data = T::slice(buf);
        // Accumulator: (best value, best index, seen any). Values are compared through f64
        // for NaN handling; int64 beyond 2^53 compares exactly via PartialOrd below.
        let r = fold(data, layout, dims, (T::default(), -1i64), |(best, bi), x, i| {
            if bi < 0 {
                return (x, i as i64);
            }
            let (bf, xf) = (best.to_f64(), x.to_f64());
            if bf.is_nan() {
                return (best, bi);
            }
            #[allow(clippy::bool_comparison)] // generic over all element types, bool included
            let better = xf.is_nan() || if is_max { x > best } else { x < best };
            if better { (x, i as i64) } else { (best, bi) }
        });
        let vals: Vec<T> = r.iter().map(|p| p.0).collect();
        (T::into_buffer(vals), r.iter().map(|p| p.1.max(0)).collect())
    })
}

/// Whether any element (over `layout`) is nonzero (torch's `any()`, as a Rust bool).
pub fn any_nonzero(buf: &Buffer, layout: &Layout) -> bool {
    let dims: Vec<usize> = (0..layout.shape.len()).collect();
    matches!(reduce(ReduceOp::Any, buf, layout, &dims), Buffer::Bool(v) if v.first() == Some(&true))
}

/// `E[r, i] = Π_{j≠i} x[r, j]` along the rows of a [rows, n] float64 layout (prod's
/// gradient where the input has zeros), by prefix and suffix products: no division.
/// `None` for another dtype.
pub fn exclusive_prod_rows(buf: &Buffer, layout: &Layout) -> Option<Buffer> {
    let Buffer::F64(data) = buf else {
        return None;
    };
    let v = contiguous(data, layout);
    let (rows, n) = (layout.shape[0], layout.shape[1]);
    let mut out = vec![0.0f64; rows * n];
    for r in 0..rows {
        let row = &v[r * n..(r + 1) * n];
        let mut acc = 1.0;
        for i in 0..n {
            out[r * n + i] = acc;
            acc *= row[i];
        }
        acc = 1.0;
        for i in (0..n).rev() {
            out[r * n + i] *= acc;
            acc *= row[i];
        }
    }
    Some(Buffer::F64(out.into()))
}

/// The dtype a sum of `d` produces (torch: integral and bool sums give int64).
pub fn sum_dtype(d: DType) -> DType {
    if d.is_float() { d } else { DType::I64 }
}

/// Element as f64, for index validation and `.item()`.
pub fn element_f64(buf: &Buffer, offset: usize) -> f64 {
    with_dtype!(buf.dtype(), T => T::slice(buf)[offset].to_f64())
}
