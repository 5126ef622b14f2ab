//! Ops that count values: `unique` / `unique_consecutive` (whole tensor or slices along
//! a dim), `bincount` and `histc`. None has a derivative in torch: unique's value
//! output records a node whose backward raises torch's "not implemented" error
//! (Unique2Backward0, UniqueDimBackward0, UniqueConsecutiveBackward0), bincount's
//! weighted result torch's `NotImplemented` node, histc none (not differentiable).
//! They run on the host; a CUDA tensor round-trips through it (no device kernel yet).

use super::*;
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::autograd::grad_mode::with_grad_mode;
use crate::backend::host_misc::contiguous as host_contiguous;
use crate::backend::host_misc::{SortKey, aten_order, stable_order};
use crate::dtype::DType;
use crate::shape::wrap_dim;
use crate::storage::Buffer;
use crate::{Error, Result};
use std::borrow::Cow;
use std::cmp::Ordering;

/// A tensor's elements in row-major order as a host buffer of its own dtype.
fn host_values(t: &Tensor) -> Result<Buffer> {
    let s = t.snapshot();
    let guard = s.storage.read();
    let h = crate::backend::host::read(&guard)?;
    Ok(match &*h {
        Buffer::F64(v) => Buffer::F64(host_contiguous(v, &s.layout).into_owned().into()),
        Buffer::F32(v) => Buffer::F32(host_contiguous(v, &s.layout).into_owned().into()),
        Buffer::I64(v) => Buffer::I64(host_contiguous(v, &s.layout).into_owned().into()),
        Buffer::Bool(v) => Buffer::Bool(host_contiguous(v, &s.layout).into_owned().into()),
        Buffer::Cuda(_) => return Err(Error::Internal("host read gave a device buffer".into())),
    })
}

/// An int64 tensor on `device`.
fn longs(v: Vec<i64>, shape: &[usize], device: crate::device::Device) -> Result<Tensor> {
    new_tensor_on(Buffer::I64(v.into()), shape, device)
}

/// Values unique compares: a total order with NaNs last (every NaN its own value), and
/// an equality under which NaN equals nothing (torch's).
trait Key: Copy + PartialOrd {
    fn is_nan(self) -> bool {
        false
    }
}
impl Key for f64 {
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
}
impl Key for f32 {
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
}
impl Key for i64 {}
impl Key for bool {}

fn order<T: Key>(a: T, b: T) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// Rows `a` and `b` compared lexicographically under [`order`].
fn order_rows<T: Key>(a: &[T], b: &[T]) -> Ordering {
    for (&x, &y) in a.iter().zip(b) {
        let o = order(x, y);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Whether rows `a` and `b` are equal (NaN equals nothing).
fn same_rows<T: Key>(a: &[T], b: &[T]) -> bool {
    a.iter().zip(b).all(|(&x, &y)| x == y)
}

/// The groups of `n` rows of length `len` in `v`: (the first row of each group, in
/// output order; each row's group; each group's size). Sorted (stably) unless
/// `consecutive`, which groups runs of equal neighbours.
fn groups<T: Key + SortKey + Send + Sync>(
    v: &[T],
    n: usize,
    len: usize,
    consecutive: bool,
) -> (Vec<usize>, Vec<i64>, Vec<i64>) {
    if len == 1 && !consecutive {
        return groups_sorted(v);
    }
    let row = |i: usize| &v[i * len..(i + 1) * len];
    let mut idx: Vec<usize> = (0..n).collect();
    if !consecutive {
        // (the index breaks ties: the stable order, from a parallel unstable sort)
        crate::backend::host_misc::par_sort_by(&mut idx, |&a, &b| {
            order_rows(row(a), row(b)).then(a.cmp(&b))
        });
    }
    let mut firsts = Vec::new();
    let mut inverse = vec![0i64; n];
    let mut counts: Vec<i64> = Vec::new();
    for (k, &i) in idx.iter().enumerate() {
        let new = k == 0 || !same_rows(row(idx[k - 1]), row(i));
        if new {
            firsts.push(i);
            counts.push(0);
        }
        let g = firsts.len() - 1;
        inverse[i] = g as i64;
        if let Some(c) = counts.last_mut() {
            *c += 1;
        }
    }
    (firsts, inverse, counts)
}

/// [`groups`] of single elements, sorted, then one pass. torch's CPU unique groups
/// the order of its unstable sort, which matters for floats: every NaN is a group of
/// its own, numbered in that order, and a group's value is its first element's (0.0 or
/// -0.0); so floats take that order ([`aten_order`]). Integers and bools take the
/// stable order of a radix sort on order-preserving keys (the order of equal values
/// changes nothing there).
fn groups_sorted<T: Key + SortKey>(v: &[T]) -> (Vec<usize>, Vec<i64>, Vec<i64>) {
    let sorted: Vec<usize> = if T::DTYPE.is_float() {
        aten_order(v)
    } else {
        stable_order(v).into_iter().map(|e| e.1).collect()
    };
    let mut firsts = Vec::new();
    let mut inverse = vec![0i64; v.len()];
    let mut counts: Vec<i64> = Vec::new();
    for (k, &i) in sorted.iter().enumerate() {
        #[allow(clippy::float_cmp)] // (NaN != NaN: a group of its own)
        if k == 0 || v[sorted[k - 1]] != v[i] {
            firsts.push(i);
            counts.push(0);
        }
        inverse[i] = (firsts.len() - 1) as i64;
        if let Some(c) = counts.last_mut() {
            *c += 1;
        }
    }
    (firsts, inverse, counts)
}

/// Which unique op (its node, and its name in torch's messages).
#[derive(Clone, Copy)]
pub enum UniqueKind {
    /// `_unique2` (torch.unique without dim)
    Whole,
    /// `unique_dim`
    Dim,
    /// `unique_consecutive` (with or without dim)
    Consecutive,
}
impl UniqueKind {
    fn op(self) -> &'static str {
        match self {
            UniqueKind::Whole => "_unique2",
            UniqueKind::Dim => "unique_dim",
            UniqueKind::Consecutive => "unique_consecutive",
        }
    }
    fn node(self) -> &'static str {
        match self {
            UniqueKind::Whole => "Unique2Backward0",
            UniqueKind::Dim => "UniqueDimBackward0",
            UniqueKind::Consecutive => "UniqueConsecutiveBackward0",
        }
    }
}

/// `unique(x, dim=...)` / `unique_consecutive(x, dim=...)`: (the unique values, or
/// slices along `dim`; each element's (slice's) index among them, of x's shape (of
/// `[x.size(dim)]`); each one's count). Sorted unless consecutive (torch's CPU unique
/// sorts whatever `sorted` says). The values record the op's node, whose backward
/// raises torch's error.
pub fn unique(x: &Tensor, dim: Option<i64>, consecutive: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let kind = match (dim, consecutive) {
        (_, true) => UniqueKind::Consecutive,
        (None, false) => UniqueKind::Whole,
        (Some(_), false) => UniqueKind::Dim,
    };
    let device = x.device();
    let shape = x.shape();
    let (values, inverse, counts) = match dim {
        None => {
            let n = x.numel();
            let buf = host_values(x)?;
            macro_rules! whole {
                ($v:expr, $variant:ident) => {{
                    let (firsts, inv, cnt) = groups(&$v[..], n, 1, consecutive);
                    let vals: Vec<_> = firsts.iter().map(|&i| $v[i]).collect();
                    let len = vals.len();
                    (
                        new_tensor_on(Buffer::$variant(vals.into()), &[len], device)?,
                        inv,
                        cnt,
                    )
                }};
            }
            let (values, inv, cnt) = match &buf {
                Buffer::F64(v) => whole!(v, F64),
                Buffer::F32(v) => whole!(v, F32),
                Buffer::I64(v) => whole!(v, I64),
                Buffer::Bool(v) => whole!(v, Bool),
                Buffer::Cuda(_) => return Err(Error::Internal("unique: device buffer".into())),
            };
            let nc = cnt.len();
            (
                values,
                longs(inv, &shape, device)?,
                longs(cnt, &[nc], device)?,
            )
        }
        Some(d) => {
            if x.ndim() == 0 {
                return Err(Error::index(format!(
                    "Dimension specified as {d} but tensor has no dimensions"
                )));
            }
            let d = wrap_dim(d, x.ndim())?;
            if x.numel() == 0 {
                let zeros = shape.iter().filter(|&&s| s == 0).count();
                if zeros != 1 {
                    return Err(Error::runtime(
                        "Number of zero sized dimensions is more than one, so unique cannot be applied ",
                    ));
                }
                if shape[d] != 0 {
                    return Err(Error::runtime(
                        "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied",
                    ));
                }
                let e = with_grad_mode(false, || contiguous(x))?;
                (
                    e,
                    longs(Vec::new(), &[0], device)?,
                    longs(Vec::new(), &[0], device)?,
                )
            } else {
                let n = shape[d];
                let len = x.numel() / n;
                let moved = with_grad_mode(false, || contiguous(&movedim0(x, d)?))?;
                let buf = host_values(&moved)?;
                let (firsts, inv, cnt) = match &buf {
                    Buffer::F64(v) => groups(&v[..], n, len, consecutive),
                    Buffer::F32(v) => groups(&v[..], n, len, consecutive),
                    Buffer::I64(v) => groups(&v[..], n, len, consecutive),
                    Buffer::Bool(v) => groups(&v[..], n, len, consecutive),
                    Buffer::Cuda(_) => return Err(Error::Internal("unique: device buffer".into())),
                };
                let nf = firsts.len();
                let pick = longs(firsts.iter().map(|&i| i as i64).collect(), &[nf], device)?;
                let vals = with_grad_mode(false, || index_select(x, d as i64, &pick))?;
                let nc = cnt.len();
                (vals, longs(inv, &[n], device)?, longs(cnt, &[nc], device)?)
            }
        }
    };
    let out = apply(
        match kind {
            UniqueKind::Whole => "aten::_unique2",
            UniqueKind::Dim => "aten::unique_dim",
            UniqueKind::Consecutive => "aten::unique_consecutive",
        },
        &[x],
        || Ok(values),
        |_| (UniqueBackward { kind }, crate::saved![]),
    )?;
    Ok((out, inverse, counts))
}

/// `x` with dim `d` moved to the front (a view).
fn movedim0(x: &Tensor, d: usize) -> Result<Tensor> {
    let mut order: Vec<i64> = vec![d as i64];
    order.extend((0..x.ndim()).filter(|&i| i != d).map(|i| i as i64));
    permute(x, &order)
}

/// The node of a unique op: torch has no derivative for it.
#[derive(Clone)]
pub struct UniqueBackward {
    kind: UniqueKind,
}
impl Backward for UniqueBackward {
    fn name(&self) -> Cow<'static, str> {
        self.kind.node().into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, _g: &[Option<Tensor>]) -> Result<Grads> {
        Err(Error::not_implemented(format!(
            "the derivative for '{}' is not implemented.",
            self.kind.op()
        )))
    }
    fn jvp(&self, _ctx: &BackwardCtx<'_>, _t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        Some(Err(Error::not_implemented(format!(
            "Trying to use forward AD with {} that does not support it because it has not been implemented yet.\n\
             Please file an issue to PyTorch at https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml \
             so that we can prioritize its implementation or submit a PR adding the implementation to derivatives.yaml",
            self.kind.op()
        ))))
    }
}

// ---- bincount ---------------------------------------------------------------------------

/// `n` zeros, or torch's allocator error when that much memory cannot be had (a huge
/// bin count must not abort the process).
fn zeroed<T: Copy + Default>(n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        Error::runtime(format!(
            "DefaultCPUAllocator: can't allocate memory: you tried to allocate {} bytes.",
            n.saturating_mul(std::mem::size_of::<T>())
        ))
    })?;
    v.resize(n, T::default());
    Ok(v)
}

/// `bincount(x, weights=None, minlength=0)`: how often each value of the 1-D
/// non-negative int64 `x` occurs (int64), or the sum of its `weights` (float weights
/// keep their dtype, others give float64), over `max(max(x) + 1, minlength)` bins. A
/// weighted result that requires grad records torch's `NotImplemented` node.
pub fn bincount(x: &Tensor, weights: Option<&Tensor>, minlength: i64) -> Result<Tensor> {
    if matches!(x.dtype(), DType::F32 | DType::F64 | DType::Bool) {
        return Err(Error::not_implemented(format!(
            "\"bincount_cpu\" not implemented for '{}'",
            x.dtype().scalar_type_name()
        )));
    }
    if x.ndim() != 1 {
        return Err(Error::runtime(
            "bincount only supports 1-d non-negative integral inputs.",
        ));
    }
    // (read in place: a copy, then a pass for negatives and another for the largest,
    // in SSE2's emulated 64-bit compares, were two thirds of a 64K-element bincount)
    let s = x.snapshot();
    let guard = s.storage.read();
    let h = crate::backend::host::read(&guard)?;
    let Buffer::I64(all) = &*h else {
        return Err(Error::Internal("bincount: int64 input".into()));
    };
    let v = host_contiguous(all, &s.layout);
    let extremes = min_max(&v);
    if extremes.is_some_and(|(lo, _)| lo < 0) {
        return Err(Error::runtime(
            "bincount only supports 1-d non-negative integral inputs.",
        ));
    }
    if minlength < 0 {
        return Err(Error::runtime("minlength should be >= 0"));
    }
    if let Some(w) = weights
        && (w.ndim() != 1 || w.numel() != x.numel())
    {
        return Err(Error::runtime(
            "weights should be 1-d and have the same length as input",
        ));
    }
    let top = extremes.map_or(0, |(_, m)| m.saturating_add(1));
    let bins = usize::try_from(top.max(minlength))
        .map_err(|_| Error::runtime("bincount: too many bins"))?;
    let device = x.device();
    match weights {
        None => {
            let mut c = zeroed::<i64>(bins)?;
            if v.len() >= 4096 && bins <= v.len() / 4 {
                // four interleaved histograms: neighbours falling in the same bin do not
                // wait on each other's increments
                let mut parts = [zeroed::<i64>(bins)?, zeroed(bins)?, zeroed(bins)?];
                let chunks = v.chunks_exact(4);
                let rest = chunks.remainder();
                for q in chunks {
                    c[q[0] as usize] += 1;
                    parts[0][q[1] as usize] += 1;
                    parts[1][q[2] as usize] += 1;
                    parts[2][q[3] as usize] += 1;
                }
                for &i in rest {
                    c[i as usize] += 1;
                }
                for p in &parts {
                    for (a, b) in c.iter_mut().zip(p) {
                        *a += b;
                    }
                }
            } else {
                for &i in v.iter() {
                    c[i as usize] += 1;
                }
            }
            longs(c, &[bins], device)
        }
        Some(w) => {
            let dtype = if w.dtype().is_float() {
                w.dtype()
            } else {
                DType::F64
            };
            let wv = with_grad_mode(false, || to_dtype(w, DType::F64))?;
            let Buffer::F64(wv) = host_values(&wv)? else {
                return Err(Error::Internal("bincount: float64 weights".into()));
            };
            let mut c = zeroed::<f64>(bins)?;
            for (&i, &wi) in v.iter().zip(wv.iter()) {
                c[i as usize] += wi;
            }
            let buf = match dtype {
                DType::F32 => {
                    Buffer::F32(c.into_iter().map(|s| s as f32).collect::<Vec<_>>().into())
                }
                _ => Buffer::F64(c.into()),
            };
            let out = new_tensor_on(buf, &[bins], device)?;
            apply(
                "aten::bincount",
                &[w],
                || Ok(out),
                |_| (BincountBackward, crate::saved![]),
            )
        }
    }
}

/// The smallest and largest of `v` (None when empty) in one pass, built for AVX2 (SSE2
/// has no 64-bit compare).
fn min_max(v: &[i64]) -> Option<(i64, i64)> {
    use crate::backend::host_misc::{Kernel, wide_kernel};
    struct MinMax<'a>(&'a [i64]);
    impl Kernel for MinMax<'_> {
        type Out = Option<(i64, i64)>;
        #[inline(always)]
        fn run(self) -> Self::Out {
            let v = self.0;
            let (mut lo, mut hi) = ([i64::MAX; 4], [i64::MIN; 4]);
            let chunks = v.chunks_exact(4);
            let rest = chunks.remainder();
            for c in chunks {
                for l in 0..4 {
                    lo[l] = lo[l].min(c[l]);
                    hi[l] = hi[l].max(c[l]);
                }
            }
            for &x in rest {
                lo[0] = lo[0].min(x);
                hi[0] = hi[0].max(x);
            }
            (!v.is_empty()).then(|| {
                (
                    lo.into_iter().fold(i64::MAX, i64::min),
                    hi.into_iter().fold(i64::MIN, i64::max),
                )
            })
        }
    }
    wide_kernel(MinMax(v))
}

/// The node of a weighted bincount: torch's `NotImplemented`, whose backward raises.
#[derive(Clone)]
pub struct BincountBackward;
impl Backward for BincountBackward {
    fn name(&self) -> Cow<'static, str> {
        "NotImplemented".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, _g: &[Option<Tensor>]) -> Result<Grads> {
        Err(Error::runtime(
            "derivative for aten::bincount is not implemented",
        ))
    }
    fn jvp(&self, _ctx: &BackwardCtx<'_>, _t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        Some(Err(Error::not_implemented(
            "Trying to use forward AD with aten::bincount that does not support it.",
        )))
    }
}

// ---- histc ------------------------------------------------------------------------------

/// `histc(x, bins, min, max)`: a histogram of the float `x` over `bins` equal bins
/// between `min` and `max` (both 0: x's own min and max; an empty range widened by 1
/// either side), values outside ignored, `max` itself in the last bin. x's dtype, no
/// gradient.
pub fn histc(x: &Tensor, bins: i64, min: f64, max: f64) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return Err(Error::not_implemented(format!(
            "\"histogram_cpu\" not implemented for '{}'",
            x.dtype().scalar_type_name()
        )));
    }
    if bins <= 0 {
        return Err(Error::runtime(format!(
            "torch.histogram(): bins must be > 0, but got {bins} for dimension 0"
        )));
    }
    let nb = usize::try_from(bins).map_err(|_| Error::runtime("histc: too many bins"))?;
    let vals = with_grad_mode(false, || to_dtype(x, DType::F64))?;
    let Buffer::F64(v) = host_values(&vals)? else {
        return Err(Error::Internal("histc: float64 values".into()));
    };
    let (mut lo, mut hi) = (min, max);
    if lo == hi && !v.is_empty() {
        // ATen reduces with min/max, which propagate a NaN
        let nan = v.iter().any(|a| a.is_nan());
        lo = if nan {
            f64::NAN
        } else {
            v.iter().copied().fold(f64::INFINITY, f64::min)
        };
        hi = if nan {
            f64::NAN
        } else {
            v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        };
    }
    if lo == hi {
        lo -= 1.0;
        hi += 1.0;
    }
    if !(lo.is_finite() && hi.is_finite()) {
        let show = |a: f64| {
            if a.is_nan() {
                "-nan".to_string()
            } else if a.is_infinite() {
                if a > 0.0 { "inf".into() } else { "-inf".into() }
            } else {
                format!("{a}")
            }
        };
        return Err(Error::runtime(format!(
            "torch.histc: range of [{}, {}] is not finite",
            show(lo),
            show(hi)
        )));
    }
    if lo > hi {
        return Err(Error::runtime("torch.histc: max must be larger than min"));
    }
    let mut h = zeroed::<f64>(nb)?;
    // ATen's bin, in the input's dtype: (a - lo) * bins / (hi - lo), the top edge in
    // the last bin
    let f32_math = x.dtype() == DType::F32;
    let bin = |a: f64| -> usize {
        if f32_math {
            let (a, l, u) = (a as f32, lo as f32, hi as f32);
            ((a - l) * nb as f32 / (u - l)) as usize
        } else {
            ((a - lo) * nb as f64 / (hi - lo)) as usize
        }
    };
    let count = |h: &mut Vec<f64>, part: &[f64]| {
        for &a in part {
            if !(a >= lo && a <= hi) {
                continue;
            }
            h[bin(a).min(nb - 1)] += 1.0;
        }
    };
    if nb <= 1 << 16 {
        // (counts are integers: the sum over the pieces does not depend on their order)
        let merge = |mut a: Vec<f64>, b: Vec<f64>| {
            for (x, y) in a.iter_mut().zip(&b) {
                *x += y;
            }
            a
        };
        h = crate::backend::host_misc::par_fold_chunks(
            &v,
            1 << 16,
            || vec![0f64; nb],
            count,
            merge,
        );
    } else {
        count(&mut h, &v);
    }
    let buf = match x.dtype() {
        DType::F32 => Buffer::F32(h.into_iter().map(|s| s as f32).collect::<Vec<_>>().into()),
        _ => Buffer::F64(h.into()),
    };
    new_tensor_on(buf, &[nb], x.device())
}
