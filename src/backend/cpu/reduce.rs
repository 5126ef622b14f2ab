//! Reduction kernels (sum, prod, max/min with indices) over any set of dims, plus the
//! index kernels (gather, scatter-add, index_select) that reductions' backwards need.

use super::strided::{contiguous, for_each_offset};
use crate::dtype::DType;
use crate::layout::Layout;
use crate::shape::Shape;
use crate::storage::{Buffer, Element};
use crate::with_dtype;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    Sum,
    Prod,
    Max,
    Min,
    ArgMax,
    ArgMin,
}

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

/// Folds the reduced dims for every position of the kept dims, in row-major order.
fn fold<T: Copy, A: Copy>(
    data: &[T],
    layout: &Layout,
    dims: &[usize],
    init: A,
    f: impl Fn(A, T, usize) -> A,
) -> Vec<A> {
    // Fast path: everything reduced, contiguous input.
    if dims.len() == layout.ndim() && layout.is_contiguous() {
        let n = layout.numel();
        if n == 0 {
            return vec![init];
        }
        let mut acc = init;
        for (i, &x) in data[layout.offset..layout.offset + n].iter().enumerate() {
            acc = f(acc, x, i);
        }
        return vec![acc];
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

/// Reduces `dims` (wrapped, unique). The result is contiguous with the kept dims' sizes
/// in order (callers reshape for keepdim). Sums of float32 accumulate in float64; sums
/// of bool/int64 give int64, as in torch.
pub fn reduce(op: ReduceOp, buf: &Buffer, layout: &Layout, dims: &[usize]) -> Buffer {
    match op {
        ReduceOp::Sum | ReduceOp::Prod => {
            let is_sum = op == ReduceOp::Sum;
            match buf {
                Buffer::F32(v) => {
                    let init = if is_sum { 0.0 } else { 1.0 };
                    let r = fold(v, layout, dims, init, |a: f64, x: f32, _| {
                        if is_sum {
                            a + f64::from(x)
                        } else {
                            a * f64::from(x)
                        }
                    });
                    Buffer::F32(r.into_iter().map(|x| x as f32).collect())
                }
                Buffer::F64(v) => {
                    let init = if is_sum { 0.0 } else { 1.0 };
                    Buffer::F64(fold(v, layout, dims, init, |a, x, _| {
                        if is_sum { a + x } else { a * x }
                    }))
                }
                Buffer::I64(v) => {
                    let init = i64::from(!is_sum);
                    Buffer::I64(fold(v, layout, dims, init, |a: i64, x, _| {
                        if is_sum {
                            a.wrapping_add(x)
                        } else {
                            a.wrapping_mul(x)
                        }
                    }))
                }
                Buffer::Bool(v) => {
                    let init = i64::from(!is_sum);
                    Buffer::I64(fold(v, layout, dims, init, |a: i64, x: bool, _| {
                        if is_sum {
                            a + i64::from(x)
                        } else {
                            a * i64::from(x)
                        }
                    }))
                }
            }
        }
        ReduceOp::Max | ReduceOp::Min => {
            let (vals, _) = arg_reduce(buf, layout, dims, op == ReduceOp::Max);
            vals
        }
        ReduceOp::ArgMax | ReduceOp::ArgMin => {
            let (_, idx) = arg_reduce(buf, layout, dims, op == ReduceOp::ArgMax);
            Buffer::I64(idx)
        }
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

/// `out[..., i, ...] = src[..., index[..., i, ...], ...]` along `dim` (torch.gather).
/// `index` is contiguous with the output's shape; bounds are checked by the caller.
pub fn gather(
    buf: &Buffer,
    layout: &Layout,
    dim: usize,
    index: &[i64],
    index_shape: &[usize],
) -> Buffer {
    with_dtype!(buf.dtype(), T => {
        let data = T::slice(buf);
        let mut out = Vec::with_capacity(index.len());
        // walk the index positions using the source strides for all dims but `dim`
        let mut strides = layout.strides.clone();
        strides[dim] = 0;
        let mut k = 0;
        for_each_offset(index_shape, &strides, layout.offset, |o| {
            out.push(data[o + index[k] as usize * layout.strides[dim]]);
            k += 1;
        });
        T::into_buffer(out)
    })
}

/// `out = zeros(shape); out[..., index[..., i, ...], ...] += src[..., i, ...]` along `dim`
/// (torch.scatter_add on a fresh zero tensor). Accumulates in index order: deterministic.
pub fn scatter_add(
    shape: &[usize],
    dim: usize,
    index: &[i64],
    index_shape: &[usize],
    src: &Buffer,
    src_layout: &Layout,
) -> Buffer {
    let out_layout = Layout::contiguous(shape);
    with_dtype!(src.dtype(), T => {
        let s = contiguous(T::slice(src), src_layout);
        let mut out = vec![T::default(); out_layout.numel()];
        let mut strides = out_layout.strides.clone();
        strides[dim] = 0;
        let mut k = 0;
        for_each_offset(index_shape, &strides, 0, |o| {
            let t = o + index[k] as usize * out_layout.strides[dim];
            out[t] = T::from_f64(out[t].to_f64() + s[k].to_f64());
            k += 1;
        });
        T::into_buffer(out)
    })
}

/// Selects entries `index` along `dim` (torch.index_select), contiguous result.
pub fn index_select(buf: &Buffer, layout: &Layout, dim: usize, index: &[i64]) -> Buffer {
    with_dtype!(buf.dtype(), T => {
        let data = T::slice(buf);
        let mut out = Vec::with_capacity(layout.numel() / layout.shape[dim].max(1) * index.len());
        let mut sub = layout.clone();
        sub.shape.drain(..=dim);
        sub.strides.drain(..=dim);
        let mut outer_l = layout.clone();
        outer_l.shape.truncate(dim);
        outer_l.strides.truncate(dim);
        for_each_offset(&outer_l.shape, &outer_l.strides, layout.offset, |base| {
            for &i in index {
                for_each_offset(&sub.shape, &sub.strides, base + i as usize * layout.strides[dim], |o| out.push(data[o]));
            }
        });
        T::into_buffer(out)
    })
}

/// Zero-filled buffer of `n` elements with `index`-selected rows accumulated from
/// `src` (the backward of index_select: index_add on zeros). Deterministic order.
pub fn index_add(
    shape: &[usize],
    dim: usize,
    index: &[i64],
    src: &Buffer,
    src_layout: &Layout,
) -> Buffer {
    let out_layout = Layout::contiguous(shape);
    with_dtype!(src.dtype(), T => {
        let s = contiguous(T::slice(src), src_layout);
        let mut out = vec![T::default(); out_layout.numel()];
        let outer: usize = shape[..dim].iter().product();
        let inner: usize = shape[dim + 1..].iter().product();
        let mut k = 0;
        for o in 0..outer {
            for &i in index {
                let base = o * shape[dim] * inner + i as usize * inner;
                for j in 0..inner {
                    out[base + j] = T::from_f64(out[base + j].to_f64() + s[k].to_f64());
                    k += 1;
                }
            }
        }
        T::into_buffer(out)
    })
}

/// The dtype a sum of `d` produces (torch: integral and bool sums give int64).
pub fn sum_dtype(d: DType) -> DType {
    if d.is_float() { d } else { DType::I64 }
}

/// Element as f64, for index validation and `.item()`.
pub fn element_f64(buf: &Buffer, offset: usize) -> f64 {
    with_dtype!(buf.dtype(), T => T::slice(buf)[offset].to_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sum_over_middle_dim_matches_loop() {
        // x[i,j,k] = i*100 + j*10 + k, shape [2,3,2]
        let v: Vec<f64> = (0..2)
            .flat_map(|i| {
                (0..3).flat_map(move |j| (0..2).map(move |k| (i * 100 + j * 10 + k) as f64))
            })
            .collect();
        let l = Layout::contiguous(&[2, 3, 2]);
        let Buffer::F64(out) = reduce(ReduceOp::Sum, &Buffer::F64(v), &l, &[1]) else {
            unreachable!()
        };
        assert_eq!(out, vec![30.0, 33.0, 330.0, 333.0]); // Σ_j (100i + 10j + k) = 300i + 30 + 3k
    }

    #[test]
    fn argmax_takes_first_of_ties_and_nan_wins() {
        let l = Layout::contiguous(&[4]);
        let (_, idx) = arg_reduce(&Buffer::F32(vec![1.0, 3.0, 3.0, 0.0]), &l, &[0], true);
        assert_eq!(idx, vec![1]);
        let (_, idx) = arg_reduce(&Buffer::F32(vec![1.0, f32::NAN, 3.0, 0.0]), &l, &[0], true);
        assert_eq!(idx, vec![1]);
    }

    #[test]
    fn gather_and_scatter_add_are_adjoint() {
        let l = Layout::contiguous(&[2, 3]);
        let src = Buffer::F64(vec![1., 2., 3., 4., 5., 6.]);
        let idx = [2i64, 0, 1, 1];
        let Buffer::F64(g) = gather(&src, &l, 1, &idx, &[2, 2]) else {
            unreachable!()
        };
        assert_eq!(g, vec![3., 1., 5., 5.]);
        let ones = Buffer::F64(vec![1.; 4]);
        let Buffer::F64(s) = scatter_add(
            &[2, 3],
            1,
            &idx,
            &[2, 2],
            &ones,
            &Layout::contiguous(&[2, 2]),
        ) else {
            unreachable!()
        };
        assert_eq!(s, vec![1., 0., 1., 0., 2., 0.]);
    }
}
