//! Random kernels: ATen's CPU distribution kernels drawing from a generator's state
//! (`random::GeneratorState`, locked by the op) into buffers, in the order ATen draws:
//! uniform, normal, integers, randperm's shuffle, bernoulli, and multinomial's sampling.
//! Values are drawn in TensorIterator order; [`to_logical`] lays them out row-major.

use super::strided::contiguous;
use super::topk::topk_indices;
use crate::dtype::DType;
use crate::layout::Layout;
use crate::random::{self, GeneratorState};
use crate::storage::{Buffer, Element};
use std::cmp::Ordering;

/// Lays out values drawn in TensorIterator order as a row-major buffer of `x`'s shape.
pub fn to_logical(buf: Buffer, order: Option<&[usize]>) -> Buffer {
    let Some(order) = order else { return buf };
    crate::with_dtype!(buf.dtype(), T => {
        let src = T::slice(&buf);
        let mut out = vec![T::default(); src.len()];
        for (&pos, &v) in order.iter().zip(src) {
            out[pos] = v;
        }
        T::into_buffer(out)
    })
}

/// `n` uniform values in [from, to) (uniform_, rand); `None` for a dtype that is not
/// float.
pub fn uniform(
    g: &mut GeneratorState,
    n: usize,
    dtype: DType,
    from: f64,
    to: f64,
) -> Option<Buffer> {
    Some(match dtype {
        DType::F32 => {
            let (f, t) = (from as f32, to as f32);
            Buffer::F32((0..n).map(|_| g.uniform_f32(f, t)).collect())
        }
        DType::F64 => Buffer::F64((0..n).map(|_| g.uniform_f64(from, to)).collect()),
        _ => return None,
    })
}

/// `n` normal values (normal_, randn): ATen's vectorised fill for a contiguous output of
/// 16 elements or more, else the scalar Box-Muller with its cached second sample; `None`
/// for a dtype that is not float.
pub fn normal(
    g: &mut GeneratorState,
    n: usize,
    contiguous: bool,
    dtype: DType,
    mean: f64,
    std: f64,
) -> Option<Buffer> {
    let vectorised = contiguous && n >= 16;
    Some(match dtype {
        DType::F32 => {
            let mut v = vec![0f32; n];
            if vectorised {
                random::normal_fill_f32(g, &mut v, mean as f32, std as f32);
            } else {
                v.iter_mut()
                    .for_each(|x| *x = g.normal_f64(mean, std) as f32);
            }
            Buffer::F32(v)
        }
        DType::F64 => {
            let mut v = vec![0f64; n];
            if vectorised {
                random::normal_fill_f64(g, &mut v, mean, std);
            } else {
                v.iter_mut().for_each(|x| *x = g.normal_f64(mean, std));
            }
            Buffer::F64(v)
        }
        _ => return None,
    })
}

/// `n` integers in [from, to) (random_, randint), the bounds already checked: 32-bit
/// draws, or 64-bit ones for a range of 2^32 or more.
pub fn random(g: &mut GeneratorState, n: usize, dtype: DType, from: i64, to: i64) -> Buffer {
    let range = to.wrapping_sub(from) as u64;
    let wide = range >= 1 << 32 && dtype != DType::Bool;
    let mut draw = || -> i64 {
        let v = if wide {
            g.random64()
        } else {
            u64::from(g.random())
        };
        (v % range).wrapping_add(from as u64) as i64
    };
    match dtype {
        DType::I64 => Buffer::I64((0..n).map(|_| draw()).collect()),
        DType::F32 => Buffer::F32((0..n).map(|_| draw() as f32).collect()),
        DType::F64 => Buffer::F64((0..n).map(|_| draw() as f64).collect()),
        DType::Bool => Buffer::Bool((0..n).map(|_| draw() != 0).collect()),
    }
}

/// One value per element from a uniform double `u` in [0, 1) (ATen's
/// `uniform_real_distribution<double>`, then a transformation computed in double), cast
/// to `dtype` (an integer dtype takes the truncated value, bool its non-zeroness).
fn from_uniform(g: &mut GeneratorState, n: usize, dtype: DType, f: impl Fn(f64) -> f64) -> Buffer {
    let mut draw = || f(g.uniform01_f64());
    match dtype {
        DType::F32 => Buffer::F32((0..n).map(|_| draw() as f32).collect()),
        DType::F64 => Buffer::F64((0..n).map(|_| draw()).collect()),
        DType::I64 => Buffer::I64((0..n).map(|_| draw() as i64).collect()),
        DType::Bool => Buffer::Bool((0..n).map(|_| draw() != 0.0).collect()),
    }
}

/// exponential_(lambda): ATen's CPU transformation `-1/lambda * log1p(-u)`.
pub fn exponential(g: &mut GeneratorState, n: usize, dtype: DType, lambda: f64) -> Buffer {
    from_uniform(g, n, dtype, |u| (-1.0 / lambda) * (-u).ln_1p())
}

/// cauchy_(median, sigma): `median + sigma * tan(pi * (u - 0.5))`, the multiply-add fused
/// as the compiler fuses ATen's (its CPU kernels are built for FMA machines).
pub fn cauchy(g: &mut GeneratorState, n: usize, dtype: DType, median: f64, sigma: f64) -> Buffer {
    from_uniform(g, n, dtype, |u| {
        sigma.mul_add((std::f64::consts::PI * (u - 0.5)).tan(), median)
    })
}

/// geometric_(p): `ceil(log(u) / log1p(-p))`.
pub fn geometric(g: &mut GeneratorState, n: usize, dtype: DType, p: f64) -> Buffer {
    from_uniform(g, n, dtype, |u| (u.ln() / (-p).ln_1p()).ceil())
}

/// log_normal_(mean, std): `exp` of `normal_distribution<double>(mean, std)` (with the
/// generator's cached second sample), element by element.
pub fn log_normal(g: &mut GeneratorState, n: usize, dtype: DType, mean: f64, std: f64) -> Buffer {
    let v = (0..n).map(|_| g.normal_f64(mean, std).exp());
    match dtype {
        DType::F32 => Buffer::F32(v.map(|x| x as f32).collect()),
        _ => Buffer::F64(v.collect()),
    }
}

/// random_() without bounds: ATen's `uniform_int_distribution<T>`: a 64-bit draw for
/// double and int64, else a 32-bit one, reduced to the integers T represents exactly
/// (`% (2^digits + 1)` for floats, `% 2^63` for int64, the low bit for bool).
pub fn random_full(g: &mut GeneratorState, n: usize, dtype: DType) -> Buffer {
    match dtype {
        DType::F32 => Buffer::F32(
            (0..n)
                .map(|_| (u64::from(g.random()) % ((1u64 << 24) + 1)) as f32)
                .collect(),
        ),
        DType::F64 => Buffer::F64(
            (0..n)
                .map(|_| (g.random64() % ((1u64 << 53) + 1)) as f64)
                .collect(),
        ),
        DType::I64 => Buffer::I64(
            (0..n)
                .map(|_| (g.random64() % (i64::MAX as u64 + 1)) as i64)
                .collect(),
        ),
        DType::Bool => Buffer::Bool((0..n).map(|_| g.random() & 1 == 1).collect()),
    }
}

/// ATen's `randperm_cpu`: a Fisher-Yates shuffle of 0..len with 32-bit draws, or the
/// inside-out variant with 64-bit draws for huge lengths.
pub fn randperm(g: &mut GeneratorState, len: usize) -> Vec<i64> {
    let n = len as i64;
    let mut r: Vec<i64> = Vec::with_capacity(len);
    if n < i64::from(u32::MAX / 20) {
        r.extend(0..n);
        for i in 0..len.saturating_sub(1) {
            let z = (u64::from(g.random()) % (len - i) as u64) as usize;
            r.swap(i, z + i);
        }
    } else {
        r.resize(len, 0);
        for i in 0..len {
            let z = (g.random64() % (i as u64 + 1)) as usize;
            r[i] = r[z];
            r[z] = i as i64;
        }
    }
    r
}

/// Integers as a buffer of `dtype`.
pub fn from_i64(dtype: DType, r: Vec<i64>) -> Buffer {
    match dtype {
        DType::I64 => Buffer::I64(r),
        DType::F32 => Buffer::F32(r.iter().map(|&v| v as f32).collect()),
        DType::F64 => Buffer::F64(r.iter().map(|&v| v as f64).collect()),
        DType::Bool => Buffer::Bool(r.iter().map(|&v| v != 0).collect()),
    }
}

fn from_bool(dtype: DType, v: Vec<bool>) -> Buffer {
    match dtype {
        DType::Bool => Buffer::Bool(v),
        DType::I64 => Buffer::I64(v.into_iter().map(i64::from).collect()),
        DType::F32 => Buffer::F32(v.into_iter().map(|b| f32::from(u8::from(b))).collect()),
        DType::F64 => Buffer::F64(v.into_iter().map(|b| f64::from(u8::from(b))).collect()),
    }
}

/// bernoulli_ with a number `p`: one uniform double per element, `u < p`.
pub fn bernoulli_scalar(g: &mut GeneratorState, n: usize, p: f64, dtype: DType) -> Buffer {
    from_bool(dtype, (0..n).map(|_| g.uniform01_f64() < p).collect())
}

/// bernoulli_ with a tensor of probabilities `pv` (row-major, of dtype `pd`; element `k`
/// drawn is the output's `order[k]`): `u < p` with a float uniform for float32 p and a
/// double uniform for float64 p, as ATen does.
pub fn bernoulli_tensor(
    g: &mut GeneratorState,
    n: usize,
    pv: &[f64],
    pd: DType,
    order: Option<&[usize]>,
    dtype: DType,
) -> Buffer {
    let at = |k: usize| order.map_or(k, |o| o[k]);
    let v: Vec<bool> = if pd == DType::F64 {
        (0..n).map(|k| g.uniform01_f64() < pv[at(k)]).collect()
    } else {
        (0..n)
            .map(|k| g.uniform01_f32() < pv[at(k)] as f32)
            .collect()
    };
    from_bool(dtype, v)
}

/// A layout's values as f64, in row-major order.
pub fn values_f64(buf: &Buffer, layout: &Layout) -> Vec<f64> {
    crate::with_dtype!(buf.dtype(), T => contiguous(T::slice(buf), layout).iter().map(|v| v.to_f64()).collect())
}

/// Multinomial without replacement's keys `p / q` with q ~ Exp(1) (ATen's
/// `empty_like(p).exponential_(1)`: one uniform double per element, in p's TensorIterator
/// `order`), each computed in p's `dtype`; `pv` is p row-major.
pub fn exponential_keys(
    g: &mut GeneratorState,
    pv: &[f64],
    dtype: DType,
    order: Option<&[usize]>,
) -> Vec<f64> {
    let mut keys = vec![0f64; pv.len()];
    for j in 0..pv.len() {
        let e = -(-g.uniform01_f64()).ln_1p();
        let pos = order.map_or(j, |o| o[j]);
        // p / q in p's dtype.
        keys[pos] = if dtype == DType::F32 {
            f64::from(pv[pos] as f32 / e as f32)
        } else {
            pv[pos] / e
        };
    }
    keys
}

/// The `k` largest keys of each row of `n_cat` (argmax for one, else ATen's topk order)
/// into `out`, `k` per row.
pub fn top_k_rows(keys: &[f64], n_cat: usize, k: usize, out: &mut [i64]) {
    for (ks, o) in keys.chunks(n_cat).zip(out.chunks_mut(k)) {
        if k == 1 {
            // argmax: the first maximum (NaN counts as the maximum).
            let mut best = 0;
            for (i, &x) in ks.iter().enumerate() {
                if x.is_nan() || x > ks[best] {
                    best = i;
                    if x.is_nan() {
                        break;
                    }
                }
            }
            o[0] = best as i64;
        } else {
            for (dst, i) in o.iter_mut().zip(topk_indices(ks, k)) {
                *dst = i as i64;
            }
        }
    }
}

/// Why a row of probabilities is no distribution (found by multinomial with replacement
/// as it goes, as ATen's kernel checks each row before drawing its samples).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadDistribution {
    /// An entry below 0, or NaN.
    Negative,
    /// An infinite entry.
    NotFinite,
    /// The row sums to 0 or less.
    SumNotPositive,
}

/// Multinomial with replacement: for each row of `n_cat` probabilities (`pv` row-major, of
/// `dtype`), `k` samples into `out`, each a binary search of the normalised cumulative
/// sums for one uniform double. A bad row stops it there, the rows before it drawn.
pub fn multinomial_with_replacement(
    g: &mut GeneratorState,
    pv: &[f64],
    dtype: DType,
    n_cat: usize,
    k: usize,
    out: &mut [i64],
) -> Result<(), BadDistribution> {
    for (row, o) in pv.chunks(n_cat).zip(out.chunks_mut(k)) {
        let cum = cumulative(dtype, row)?;
        for dst in o.iter_mut() {
            let u = g.uniform01_f64();
            let (mut left, mut right) = (0usize, n_cat);
            while right > left {
                let mid = left + (right - left) / 2;
                if cum[mid] < u {
                    left = mid + 1;
                } else {
                    right = mid;
                }
            }
            *dst = left as i64;
        }
    }
    Ok(())
}

/// A row's sum accumulated in its dtype, as ATen's `self.sum(1) == 0` sees it (only its
/// zero-ness matters).
pub fn sum_in(dtype: DType, row: &[f64]) -> f64 {
    if dtype == DType::F32 {
        f64::from(row.iter().map(|&v| v as f32).sum::<f32>())
    } else {
        row.iter().sum()
    }
}

/// The normalised cumulative distribution of one row, summed and divided in the row's
/// dtype; its last entry is set to 1 (multinomial_with_replacement_apply).
fn cumulative(dtype: DType, row: &[f64]) -> Result<Vec<f64>, BadDistribution> {
    fn run<T: Element + std::ops::AddAssign + std::ops::Div<Output = T>>(
        row: &[f64],
    ) -> Result<Vec<f64>, BadDistribution> {
        let mut sum = T::from_f64(0.0);
        let mut cum = Vec::with_capacity(row.len());
        for &v in row {
            // `!(v >= 0)` as ATen writes it: NaN is refused here too.
            if !matches!(
                v.partial_cmp(&0.0),
                Some(Ordering::Greater | Ordering::Equal)
            ) {
                return Err(BadDistribution::Negative);
            }
            if !v.is_finite() {
                return Err(BadDistribution::NotFinite);
            }
            sum += T::from_f64(v);
            cum.push(sum);
        }
        if sum.to_f64().partial_cmp(&0.0) != Some(Ordering::Greater) {
            return Err(BadDistribution::SumNotPositive);
        }
        let mut out: Vec<f64> = cum.into_iter().map(|c| (c / sum).to_f64()).collect();
        if let Some(last) = out.last_mut() {
            *last = 1.0;
        }
        Ok(out)
    }
    if dtype == DType::F32 {
        run::<f32>(row)
    } else {
        run::<f64>(row)
    }
}
