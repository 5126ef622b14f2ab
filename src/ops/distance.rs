//! Pairwise distances with nodes of their own, as torch's: `_cdist_forward`
//! (CdistBackward0), `_euclidean_dist` (EuclideanDistBackward0, the matrix-product form
//! `cdist` takes for p = 2 on many rows) and `_pdist_forward` (PdistBackward0). The
//! Python layer (`rgrad.cdist`, `rgrad.pdist`) makes the choices torch's composites
//! make (which form, the batch expansion, `contiguous`).
//!
//! The values come from one host kernel over the rows (split across the pool by
//! output); a CUDA tensor round-trips through the host (no device kernel yet). The
//! backward formulas are torch's `_cdist_backward` / `_pdist_backward` /
//! `_euclidean_dist_backward`, written with recorded ops so that they can be
//! differentiated again.

use super::elementwise::{Saver, grad0};
use super::*;
use crate::autograd::function::{Backward, BackwardCtx, Grads, SavedField};
use crate::autograd::grad_mode::with_grad_mode;
use crate::backend::host_misc::contiguous as host_contiguous;
use crate::backend::host_misc::{Kernel, per_output, wide_kernel};
use crate::dtype::{DType, Scalar};
use crate::shape::Shape;
use crate::storage::Buffer;
use crate::{Error, Result};
use std::borrow::Cow;
use std::mem::MaybeUninit;
use std::ops::Range;

/// The norm a distance takes (torch's kernels special-case these orders).
#[derive(Clone, Copy)]
enum Norm {
    Zero,
    One,
    Two,
    Inf,
    P(f64),
}

impl Norm {
    fn of(p: f64) -> Norm {
        if p == 0.0 {
            Norm::Zero
        } else if p == 1.0 {
            Norm::One
        } else if p == 2.0 {
            Norm::Two
        } else if p.is_infinite() {
            Norm::Inf
        } else {
            Norm::P(p)
        }
    }

    /// The distances from the row `xi` to the rows `js` of a matrix given by its columns
    /// (`cols[k * ld + j]`: element `k` of row `j`), into `out`, in the tensor's own
    /// precision as torch's kernel. The loops run across the rows, a block of them at a
    /// time, so they vectorise whatever the row length (a float64 pdist of 16-element rows
    /// took 45 cycles a pair when each pair was reduced on its own, in float64); each
    /// distance sums its terms in `k` order, so the bits do not depend on the block or
    /// the thread split. The infinity norm's max propagates NaN where `nan_max` (torch's
    /// vectorised pdist kernel) and skips it otherwise (its scalar cdist kernel's
    /// `std::max(agg, up)`, which keeps `agg` when `up` is NaN).
    #[inline(always)]
    fn dists_to<T: Real>(
        self,
        xi: &[T],
        cols: &[T],
        ld: usize,
        js: Range<usize>,
        out: &mut [MaybeUninit<T>],
        nan_max: bool,
    ) {
        /// Rows at a time: their accumulators stay in registers (four AVX2 vectors of
        /// float32, eight of float64; a slice of 64 accumulators was loaded and stored
        /// back every k: 512 x 16 float32 pdist 1.3-1.5x torch's time). Shorter runs
        /// (a pdist row's last pairs) in blocks of 8, the last few in a slice.
        const BLOCK: usize = 32;
        const SHORT: usize = 8;
        #[inline(always)]
        fn block_fixed<T: Real, const W: usize>(
            xi: &[T],
            cols: &[T],
            ld: usize,
            j0: usize,
            f: impl Fn(T) -> T,
            comb: impl Fn(T, T) -> T,
        ) -> [T; W] {
            let mut acc = [T::ZERO; W];
            for (k, &x) in xi.iter().enumerate() {
                let col = &cols[k * ld + j0..k * ld + j0 + W];
                for (s, &v) in acc.iter_mut().zip(col) {
                    *s = comb(*s, f(v - x));
                }
            }
            acc
        }
        #[inline(always)]
        fn block<T: Real>(
            xi: &[T],
            cols: &[T],
            ld: usize,
            j0: usize,
            acc: &mut [T],
            f: impl Fn(T) -> T,
            comb: impl Fn(T, T) -> T,
        ) {
            for (k, &x) in xi.iter().enumerate() {
                let col = &cols[k * ld + j0..k * ld + j0 + acc.len()];
                for (s, &v) in acc.iter_mut().zip(col) {
                    *s = comb(*s, f(v - x));
                }
            }
        }
        let add = |s: T, v: T| s + v;
        let max = |s: T, v: T| {
            if nan_max && (v.is_nan() || s.is_nan()) {
                T::NAN
            } else if s < v {
                v
            } else {
                s
            }
        };
        // torch's min(ceil(|d|), 1): 1 where the rows differ, NaN stays NaN
        let differs = |d: T| {
            if d.is_nan() {
                d
            } else if d != T::ZERO {
                T::ONE
            } else {
                T::ZERO
            }
        };
        let mut acc = [T::ZERO; BLOCK];
        let (mut j0, mut done) = (js.start, 0);
        macro_rules! each_norm {
            ($run:ident $(, $arg:expr)?) => {
                match self {
                    Norm::Zero => $run(xi, cols, ld, j0, $($arg,)? differs, add),
                    Norm::One => $run(xi, cols, ld, j0, $($arg,)? T::abs, add),
                    Norm::Two => $run(xi, cols, ld, j0, $($arg,)? |d| d * d, add),
                    Norm::Inf => $run(xi, cols, ld, j0, $($arg,)? T::abs, max),
                    Norm::P(p) => {
                        let p = T::from_f64(p);
                        $run(xi, cols, ld, j0, $($arg,)? |d| d.abs().powf(p), add)
                    }
                }
            };
        }
        while done < out.len() {
            let w = match out.len() - done {
                r if r >= BLOCK => BLOCK,
                r if r >= SHORT => SHORT,
                r => r,
            };
            if w == BLOCK {
                acc = each_norm!(block_fixed);
            } else if w == SHORT || j0 + SHORT <= ld {
                // (a run of fewer than 8 reads the 8 from j0 where the columns are padded
                // that far, and keeps its own: each lane's sum is its own)
                let a: [T; SHORT] = each_norm!(block_fixed);
                acc[..SHORT].copy_from_slice(&a);
            } else {
                acc[..w].fill(T::ZERO);
                each_norm!(block, &mut acc[..w]);
            }
            // (the norm chosen outside the loop, so that the square roots vectorise: one
            // scalar square root a pair was 45% of a 512 x 16 float32 pdist)
            let pairs = out[done..done + w].iter_mut().zip(&acc[..w]);
            match self {
                Norm::Two => pairs.for_each(|(o, &s)| {
                    o.write(s.sqrt());
                }),
                Norm::P(p) => {
                    let e = T::from_f64(1.0 / p);
                    pairs.for_each(|(o, &s)| {
                        o.write(s.powf(e));
                    })
                }
                _ => pairs.for_each(|(o, &s)| {
                    o.write(s);
                }),
            }
            j0 += w;
            done += w;
        }
    }
}

/// The float dtypes' arithmetic the distance kernels use (float32 and float64, each in
/// its own precision, as torch's kernels compute).
trait Real:
    Copy
    + Send
    + Sync
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
{
    const ZERO: Self;
    const ONE: Self;
    const NAN: Self;
    fn abs(self) -> Self;
    fn sqrt(self) -> Self;
    fn powf(self, p: Self) -> Self;
    fn is_nan(self) -> bool;
    fn from_f64(v: f64) -> Self;
    /// A tensor's elements in row-major order, read on the host (`None`: another dtype).
    fn host(t: &Tensor) -> Result<Option<Vec<Self>>>;
    fn into_buffer(v: Vec<Self>) -> Buffer;
}
macro_rules! real {
    ($t:ty, $variant:ident) => {
        impl Real for $t {
            const ZERO: $t = 0.0;
            const ONE: $t = 1.0;
            const NAN: $t = <$t>::NAN;
            #[inline(always)]
            fn abs(self) -> $t {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn sqrt(self) -> $t {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn powf(self, p: $t) -> $t {
                <$t>::powf(self, p)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn from_f64(v: f64) -> $t {
                v as $t
            }
            fn host(t: &Tensor) -> Result<Option<Vec<$t>>> {
                let s = t.snapshot();
                let guard = s.storage.read();
                let h = crate::backend::host::read(&guard)?;
                Ok(match &*h {
                    Buffer::$variant(v) => Some(host_contiguous(v, &s.layout).into_owned()),
                    _ => None,
                })
            }
            fn into_buffer(v: Vec<$t>) -> Buffer {
                Buffer::$variant(v.into())
            }
        }
    };
}
real!(f32, F32);
real!(f64, F64);

/// The rows of `t` (a float tensor) as `T`s, read on the host.
fn host_rows<T: Real>(t: &Tensor) -> Result<Vec<T>> {
    T::host(t)?.ok_or_else(|| Error::Internal("distance kernels take float tensors".into()))
}

/// `b` row-major `[rows, m]` matrices, one after another, as their transposes `[m, rows]`
/// (what [`Norm::dists_to`] reads).
/// [`columns`] of one matrix with `ld - rows` zeros after each column (`ld >= rows`):
/// what lets `dists_to` run a short last run of rows as a block of 8.
fn padded_columns<T: Real>(v: &[T], rows: usize, m: usize, ld: usize) -> Vec<T> {
    let mut out = vec![T::ZERO; ld * m];
    for (r, row) in v.chunks_exact(m).take(rows).enumerate() {
        for (k, &x) in row.iter().enumerate() {
            out[k * ld + r] = x;
        }
    }
    out
}

fn columns<T: Copy>(v: &[T], b: usize, rows: usize, m: usize) -> Vec<T> {
    let mut out = v.to_vec();
    for bb in 0..b {
        let (src, dst) = (&v[bb * rows * m..], &mut out[bb * rows * m..]);
        for r in 0..rows {
            for k in 0..m {
                dst[k * rows + r] = src[r * m + k];
            }
        }
    }
    out
}

fn checked_product(dims: &[usize]) -> Result<usize> {
    dims.iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| Error::runtime("cdist: the result's size overflows"))
}

/// torch's C++ name of a dtype, as its dtype-mismatch messages print it.
fn cpp_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "float",
        DType::F64 => "double",
        DType::I64 => "long",
        DType::Bool => "bool",
    }
}

fn dtype_name(d: DType) -> &'static str {
    d.scalar_type_name()
}

/// The shapes cdist works with: (batch shape, r1, r2, columns).
fn cdist_shapes(x1: &Tensor, x2: &Tensor) -> Result<(Shape, usize, usize, usize)> {
    if x1.ndim() < 2 {
        return Err(Error::runtime(format!(
            "cdist only supports at least 2D tensors, X1 got: {}D",
            x1.ndim()
        )));
    }
    if x2.ndim() < 2 {
        return Err(Error::runtime(format!(
            "cdist only supports at least 2D tensors, X2 got: {}D",
            x2.ndim()
        )));
    }
    let (s1, s2) = (x1.shape(), x2.shape());
    let (n1, n2) = (s1.len(), s2.len());
    if s1[n1 - 1] != s2[n2 - 1] {
        return Err(Error::runtime(format!(
            "X1 and X2 must have the same number of columns. X1: {} X2: {}",
            s1[n1 - 1],
            s2[n2 - 1]
        )));
    }
    Ok((
        crate::shape::broadcast_shapes(&s1[..n1 - 2], &s2[..n2 - 2])?,
        s1[n1 - 2],
        s2[n2 - 2],
        s1[n1 - 1],
    ))
}

/// cdist's checks of the dtypes, `p` and the mode (torch's `cdist_impl`, in its order).
pub fn cdist_checks(x1: &Tensor, x2: &Tensor, p: f64, compute_mode: Option<i64>) -> Result<()> {
    if !x1.dtype().is_float() {
        return Err(Error::runtime(format!(
            "cdist only supports floating-point dtypes, X1 got: {}",
            dtype_name(x1.dtype())
        )));
    }
    if !x2.dtype().is_float() {
        return Err(Error::runtime(format!(
            "cdist only supports floating-point dtypes, X2 got: {}",
            dtype_name(x2.dtype())
        )));
    }
    if p.is_nan() || p < 0.0 {
        return Err(Error::runtime("cdist only supports non-negative p values"));
    }
    let kind = |d: crate::device::Device| match d {
        crate::device::Device::Cpu => "cpu",
        crate::device::Device::Cuda(_) => "cuda",
    };
    if kind(x1.device()) != kind(x2.device()) {
        return Err(Error::runtime(format!(
            "X1 and X2 must have the same device type. X1: {} X2: {}",
            kind(x1.device()),
            kind(x2.device())
        )));
    }
    let mode = compute_mode.unwrap_or(0);
    if !(0..=2).contains(&mode) {
        return Err(Error::runtime(format!(
            "possible modes: 0, 1, 2, but was: {mode}"
        )));
    }
    Ok(())
}

/// Whether cdist takes the matrix-product form (`_euclidean_dist`): p = 2 and the mode
/// asks for it, or (by default) either operand has more than 25 rows.
pub fn cdist_uses_mm(p: f64, compute_mode: Option<i64>, r1: usize, r2: usize) -> bool {
    let mode = compute_mode.unwrap_or(0);
    p == 2.0 && (mode == 1 || (mode == 0 && (r1 > 25 || r2 > 25)))
}

/// `_cdist_forward(x1, x2, p, compute_mode)`: the p-norm distance between each row of
/// `x1` (`[*, r1, m]`) and each row of `x2` (`[*, r2, m]`), batch dims broadcast:
/// `[*, r1, r2]`, one node (CdistBackward0).
pub fn cdist_forward(
    x1: &Tensor,
    x2: &Tensor,
    p: f64,
    compute_mode: Option<i64>,
) -> Result<Tensor> {
    let (batch, r1, r2, m) = cdist_shapes(x1, x2)?;
    cdist_checks(x1, x2, p, compute_mode)?;
    let mut out_shape = batch.clone();
    out_shape.push(r1);
    out_shape.push(r2);
    let b = checked_product(&batch)?;
    let n_out = checked_product(&out_shape)?;
    let mm = cdist_uses_mm(p, compute_mode, r1, r2);
    let empty = r1 == 0 || r2 == 0 || b == 0;
    if !empty && m != 0 && x1.dtype() != x2.dtype() {
        return Err(if mm {
            Error::runtime(format!(
                "expected m1 and m2 to have the same dtype, but got: {} != {}",
                cpp_name(x1.dtype()),
                cpp_name(x2.dtype())
            ))
        } else {
            Error::runtime(format!(
                "expected scalar type {} but found {}",
                dtype_name(x1.dtype()),
                dtype_name(x2.dtype())
            ))
        });
    }
    let values = || -> Result<Tensor> {
        with_grad_mode(false, || {
            if empty || m == 0 {
                return zeros_on(&out_shape, x1.dtype(), x1.device());
            }
            if mm {
                let (e1, e2) = expanded(x1, x2, &batch, b, r1, r2, m)?;
                let d = euclidean_values(&e1, &e2)?;
                let shape: Vec<i64> = out_shape.iter().map(|&s| s as i64).collect();
                return reshape(&d, &shape);
            }
            let (e1, e2) = expanded(x1, x2, &batch, b, r1, r2, m)?;
            let norm = Norm::of(p);
            let buf = if x1.dtype() == DType::F32 {
                cdist_rows::<f32>(&e1, &e2, norm, (b, r1, r2, m), n_out)?
            } else {
                cdist_rows::<f64>(&e1, &e2, norm, (b, r1, r2, m), n_out)?
            };
            new_tensor_on(buf, &out_shape, x1.device())
        })
    };
    apply("aten::_cdist_forward", &[x1, x2], values, |y| {
        let mut s = Saver::default();
        let saved = [
            s.input_if(true, x1),
            s.input_if(true, x2),
            Some(s.output(y)),
        ];
        (CdistBackward0 { p, saved }, s.list)
    })
}

/// Zeros of `shape` on `device`.
fn zeros_on(shape: &[usize], dtype: DType, device: crate::device::Device) -> Result<Tensor> {
    let z = zeros(shape, dtype)?;
    match device {
        crate::device::Device::Cpu => Ok(z),
        d => to_device(&z, d),
    }
}

/// `x1` and `x2` expanded to the broadcast batch and flattened to `[b, r, m]`
/// (contiguous).
/// cdist's values by rows: each row of `a` (`[b, r1, m]`) against every row of its
/// batch's `c` (`[b, r2, m]`), `[b, r1, r2]` row-major.
fn cdist_rows<T: Real>(
    e1: &Tensor,
    e2: &Tensor,
    norm: Norm,
    (b, r1, r2, m): (usize, usize, usize, usize),
    n_out: usize,
) -> Result<Buffer> {
    let (a, c) = (host_rows::<T>(e1)?, host_rows::<T>(e2)?);
    let ct = columns(&c, b, r2, m);
    let out = per_output(n_out, m.max(1), |range, out| {
        wide_kernel(CdistPiece {
            a: &a,
            ct: &ct,
            norm,
            dims: (r1, r2, m),
            start: range.start,
            out,
        })
    });
    Ok(T::into_buffer(out))
}

/// cdist's outputs from position `start` on into `out`: x1's row (over the batch) of the
/// first pair and its first column, then the rest of each row of the output in one go.
/// A `wide` kernel, as [`PdistPiece`].
struct CdistPiece<'a, T> {
    a: &'a [T],
    ct: &'a [T],
    norm: Norm,
    dims: (usize, usize, usize),
    start: usize,
    out: &'a mut [MaybeUninit<T>],
}

impl<T: Real> Kernel for CdistPiece<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run(self) {
        let ((r1, r2, m), out) = (self.dims, self.out);
        let (mut row, mut j) = (self.start / r2, self.start % r2);
        let mut done = 0;
        while done < out.len() {
            let bb = row / r1;
            let run = (r2 - j).min(out.len() - done);
            self.norm.dists_to(
                &self.a[row * m..(row + 1) * m],
                &self.ct[bb * m * r2..(bb + 1) * m * r2],
                r2,
                j..j + run,
                &mut out[done..done + run],
                false,
            );
            done += run;
            row += 1;
            j = 0;
        }
    }
}

fn expanded(
    x1: &Tensor,
    x2: &Tensor,
    batch: &[usize],
    b: usize,
    r1: usize,
    r2: usize,
    m: usize,
) -> Result<(Tensor, Tensor)> {
    let one = |x: &Tensor, r: usize| -> Result<Tensor> {
        let mut full: Vec<usize> = batch.to_vec();
        full.push(r);
        full.push(m);
        let e = expand(x, &full)?;
        let e = contiguous(&e)?;
        view(&e, &[b as i64, r as i64, m as i64])
    };
    Ok((one(x1, r1)?, one(x2, r2)?))
}

/// CdistBackward0: torch's `_cdist_backward(grad, x1, x2, p, result)` for x1 and the
/// same with the operands swapped (and the gradient and result transposed) for x2,
/// each summed back over the broadcast batch dims.
#[derive(Clone)]
pub struct CdistBackward0 {
    p: f64,
    /// x1, x2, result
    saved: [Option<u8>; 3],
}
impl Backward for CdistBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("p", SavedField::Scalar(Scalar::Float(self.p))),
            ("result", SavedField::Tensor(self.saved[2])),
            ("x1", SavedField::Tensor(self.saved[0])),
            ("x2", SavedField::Tensor(self.saved[1])),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "CdistBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let x1 = elementwise::get(ctx, self.saved[0])?;
        let x2 = elementwise::get(ctx, self.saved[1])?;
        let y = elementwise::get(ctx, self.saved[2])?;
        let mut out = Grads::new();
        out.push(if ctx.needs_input_grad(0) {
            Some(cdist_grad(&g, &x1, &x2, self.p, &y)?)
        } else {
            None
        });
        out.push(if ctx.needs_input_grad(1) {
            let gt = transpose(&g, -1, -2)?;
            let yt = transpose(&y, -1, -2)?;
            Some(cdist_grad(&gt, &x2, &x1, self.p, &yt)?)
        } else {
            None
        });
        Ok(out)
    }
    fn jvp(&self, _ctx: &BackwardCtx<'_>, _t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        Some(Err(no_forward_ad("_cdist_forward")))
    }
}

/// torch's error for an op derivatives.yaml gives no forward derivative.
fn no_forward_ad(op: &str) -> Error {
    Error::not_implemented(format!(
        "Trying to use forward AD with {op} that does not support it because it has not been implemented yet.\n\
         Please file an issue to PyTorch at https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml \
         so that we can prioritize its implementation or submit a PR adding the implementation to derivatives.yaml"
    ))
}

/// The gradient of one distance w.r.t. the first row, given `diff` = a - b, the
/// distance `d` and the incoming gradient `g` (both broadcasting against `diff`):
/// torch's per-order formulas (`Distance` kernels), a zero distance giving zero, with
/// safe denominators so that the formula can be differentiated again.
fn pair_grad(diff: &Tensor, d: &Tensor, g: &Tensor, p: f64) -> Result<Tensor> {
    let zero_d = eq_scalar(d, 0.0)?;
    let safe_d = masked_fill(d, &zero_d, Scalar::Int(1))?;
    let t = match Norm::of(p) {
        Norm::Zero => return mul_scalar(&mul(diff, g)?, Scalar::Int(0)),
        Norm::One => return mul(&sign(diff)?, g),
        Norm::Two => {
            // g·diff/d
            let r = masked_fill(&div(g, &safe_d)?, &zero_d, Scalar::Int(0))?;
            return mul(diff, &r);
        }
        Norm::Inf => {
            // g·sign(diff) where |diff| is the maximum
            let at_max = to_dtype(&eq(&abs(diff)?, d)?, diff.dtype())?;
            return mul(&mul(&sign(diff)?, &at_max)?, g);
        }
        Norm::P(p) if p < 1.0 => {
            // sign(diff)·|diff|^(p-1)·g/d^(p-1), zero where diff or d is zero
            let zero_diff = eq_scalar(diff, 0.0)?;
            let ad = masked_fill(&abs(diff)?, &zero_diff, Scalar::Int(1))?;
            let num = mul(&sign(diff)?, &pow_scalar(&ad, Scalar::Float(p - 1.0))?)?;
            let r = div(g, &pow_scalar(&safe_d, Scalar::Float(p - 1.0))?)?;
            let t = mul(&num, &r)?;
            let t = masked_fill(&t, &zero_diff, Scalar::Int(0))?;
            return masked_fill(&t, &expand(&zero_d, &t.shape())?, Scalar::Int(0));
        }
        Norm::P(p) if p < 2.0 => {
            // sign(diff)·|diff|^(p-1)·g/d^(p-1)
            let num = mul(
                &sign(diff)?,
                &pow_scalar(&abs(diff)?, Scalar::Float(p - 1.0))?,
            )?;
            let r = div(g, &pow_scalar(&safe_d, Scalar::Float(p - 1.0))?)?;
            mul(&num, &r)?
        }
        Norm::P(p) => {
            // diff·|diff|^(p-2)·g/d^(p-1)
            let num = mul(diff, &pow_scalar(&abs(diff)?, Scalar::Float(p - 2.0))?)?;
            let r = div(g, &pow_scalar(&safe_d, Scalar::Float(p - 1.0))?)?;
            mul(&num, &r)?
        }
    };
    masked_fill(&t, &expand(&zero_d, &t.shape())?, Scalar::Int(0))
}

/// `_cdist_backward(g, a, b, p, d)`: the gradient w.r.t. `a` (`[*, r1, m]`) of the
/// distances `d` (`[*, r1, r2]`) to the rows of `b`, summed to `a`'s shape.
fn cdist_grad(g: &Tensor, a: &Tensor, b: &Tensor, p: f64, d: &Tensor) -> Result<Tensor> {
    let (sa, sb) = (a.shape(), b.shape());
    let (r1, m) = (sa[sa.len() - 2], sa[sa.len() - 1]);
    let r2 = sb[sb.len() - 2];
    if r1 == 0 || r2 == 0 || m == 0 || g.numel() == 0 {
        return zeros_like(a);
    }
    let full = if p == 2.0 {
        // the matrix-product form: a·Σⱼ r_ij - r·b with r = g/d
        let zero_d = eq_scalar(d, 0.0)?;
        let safe_d = masked_fill(d, &zero_d, Scalar::Int(1))?;
        let r = masked_fill(&div(g, &safe_d)?, &zero_d, Scalar::Int(0))?;
        sub(&mul(a, &sum(&r, Some(&[-1]), true)?)?, &matmul(&r, b)?)?
    } else {
        let diff = sub(&unsqueeze(a, -2)?, &unsqueeze(b, -3)?)?;
        let t = pair_grad(&diff, &unsqueeze(d, -1)?, &unsqueeze(g, -1)?, p)?;
        sum(&t, Some(&[-2]), false)?
    };
    if full.shape() == sa {
        Ok(full)
    } else {
        sum_to(&full, &sa)
    }
}

// ---- _euclidean_dist ------------------------------------------------------------------

/// The values of `_euclidean_dist` (torch's composition: the squared norms padded onto
/// the rows, one matrix product, clamped at zero and square-rooted).
fn euclidean_values(x1: &Tensor, x2: &Tensor) -> Result<Tensor> {
    let n1 = sum(&pow_scalar(x1, Scalar::Int(2))?, Some(&[-1]), true)?;
    let n2 = sum(&pow_scalar(x2, Scalar::Int(2))?, Some(&[-1]), true)?;
    let a = cat(
        &[
            mul_scalar(x1, Scalar::Int(-2))?,
            n1.clone(),
            ones_like(&n1)?,
        ],
        -1,
    )?;
    let b = cat(&[x2.clone(), ones_like(&n2)?, n2], -1)?;
    let r = matmul(&a, &transpose(&b, -2, -1)?)?;
    sqrt(&clamp(&r, Some(Scalar::Int(0)), None)?)
}

/// `_euclidean_dist(x1, x2)`: the Euclidean distances between the rows of `x1` and
/// `x2` by one matrix product (EuclideanDistBackward0).
pub fn euclidean_dist(x1: &Tensor, x2: &Tensor) -> Result<Tensor> {
    apply(
        "aten::_euclidean_dist",
        &[x1, x2],
        || with_grad_mode(false, || euclidean_values(x1, x2)),
        |y| {
            let mut s = Saver::default();
            let saved = [
                s.input_if(true, x1),
                s.input_if(true, x2),
                Some(s.output(y)),
            ];
            (EuclideanDistBackward0 { saved }, s.list)
        },
    )
}

/// EuclideanDistBackward0: torch's `_euclidean_dist_backward`, with r = g/d (zero
/// where d is): x1·Σⱼ r - r·x2 and x2·Σᵢ r - rᵀ·x1.
#[derive(Clone)]
pub struct EuclideanDistBackward0 {
    /// x1, x2, result
    saved: [Option<u8>; 3],
}
impl Backward for EuclideanDistBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("result", SavedField::Tensor(self.saved[2])),
            ("x1", SavedField::Tensor(self.saved[0])),
            ("x2", SavedField::Tensor(self.saved[1])),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "EuclideanDistBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let x1 = elementwise::get(ctx, self.saved[0])?;
        let x2 = elementwise::get(ctx, self.saved[1])?;
        let d = elementwise::get(ctx, self.saved[2])?;
        let zero_d = eq_scalar(&d, 0.0)?;
        let safe_d = masked_fill(&d, &zero_d, Scalar::Int(1))?;
        let r = masked_fill(&div(&g, &safe_d)?, &zero_d, Scalar::Int(0))?;
        let mut out = Grads::new();
        out.push(if ctx.needs_input_grad(0) {
            let v = sub(&mul(&x1, &sum(&r, Some(&[-1]), true)?)?, &matmul(&r, &x2)?)?;
            Some(fit(v, &x1.shape())?)
        } else {
            None
        });
        out.push(if ctx.needs_input_grad(1) {
            let col = unsqueeze(&sum(&r, Some(&[-2]), false)?, -1)?;
            let v = sub(&mul(&x2, &col)?, &matmul(&transpose(&r, -1, -2)?, &x1)?)?;
            Some(fit(v, &x2.shape())?)
        } else {
            None
        });
        Ok(out)
    }
    fn jvp(&self, _ctx: &BackwardCtx<'_>, _t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        Some(Err(no_forward_ad("_euclidean_dist")))
    }
}

/// `v` summed to `shape` if it is larger (a broadcast operand).
fn fit(v: Tensor, shape: &[usize]) -> Result<Tensor> {
    if v.shape().as_slice() == shape {
        Ok(v)
    } else {
        sum_to(&v, shape)
    }
}

// ---- _pdist_forward -------------------------------------------------------------------

/// The pair `(i, j)`, `i < j`, at position `k` of pdist's row-major order over `n` rows.
fn pair_at(mut k: usize, n: usize) -> (usize, usize) {
    let mut i = 0;
    while i + 1 < n && k >= n - 1 - i {
        k -= n - 1 - i;
        i += 1;
    }
    (i, i + 1 + k)
}

/// pdist's values: row i against rows i+1.. for each i, in that order.
fn pdist_rows<T: Real>(x: &Tensor, norm: Norm, n: usize, m: usize, pairs: usize) -> Result<Buffer> {
    let a = host_rows::<T>(x)?;
    // (padded: the short last runs of rows as blocks of 8)
    let ld = n + 8;
    let cols = padded_columns(&a, n, m, ld);
    let out = per_output(pairs, m, |range, out| {
        wide_kernel(PdistPiece {
            a: &a,
            cols: &cols,
            norm,
            n,
            ld,
            m,
            start: range.start,
            out,
        })
    });
    Ok(T::into_buffer(out))
}

/// pdist's pairs from position `start` on into `out`: the first pair, then the rest of
/// each row i's pairs (i, j..n) in one go. A `wide` kernel, so that its loops are built
/// for AVX2: as a closure passed to `wide` LLVM kept them out of line, compiled for SSE2
/// (a 512 x 16 float32 pdist 1.4-2.8x torch's time on a Zen 3).
struct PdistPiece<'a, T> {
    a: &'a [T],
    cols: &'a [T],
    norm: Norm,
    n: usize,
    /// the columns' stride (n and padding)
    ld: usize,
    m: usize,
    start: usize,
    out: &'a mut [MaybeUninit<T>],
}

impl<T: Real> Kernel for PdistPiece<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run(self) {
        let (n, m, out) = (self.n, self.m, self.out);
        let (mut i, mut j) = pair_at(self.start, n);
        let mut done = 0;
        while done < out.len() {
            let run = (n - j).min(out.len() - done);
            self.norm.dists_to(
                &self.a[i * m..(i + 1) * m],
                self.cols,
                self.ld,
                j..j + run,
                &mut out[done..done + run],
                true,
            );
            done += run;
            i += 1;
            j = i + 1;
        }
    }
}

/// `_pdist_forward(x, p)`: the p-norm distances between the rows of a contiguous 2-D
/// float `x` (`[n, m]`), the pairs `i < j` in row-major order: `[n(n-1)/2]`, one node
/// (PdistBackward0). `rgrad.pdist` checks the rank, dtype and `p` first.
pub fn pdist_forward(x: &Tensor, p: f64) -> Result<Tensor> {
    if !x.is_contiguous() {
        return Err(Error::runtime("_pdist_forward requires contiguous input"));
    }
    if x.ndim() != 2 || !x.dtype().is_float() || p.is_nan() || p < 0.0 {
        return Err(Error::runtime(
            "_pdist_forward takes a 2-D float tensor and p >= 0",
        ));
    }
    let (n, m) = (x.shape()[0], x.shape()[1]);
    let pairs = if n <= 1 {
        0
    } else {
        n.checked_mul(n - 1)
            .map(|v| v / 2)
            .ok_or_else(|| Error::runtime("pdist: the result's size overflows"))?
    };
    let values = || -> Result<Tensor> {
        if pairs == 0 || m == 0 {
            return zeros_on(&[pairs], x.dtype(), x.device());
        }
        let norm = Norm::of(p);
        let buf = if x.dtype() == DType::F32 {
            pdist_rows::<f32>(x, norm, n, m, pairs)?
        } else {
            pdist_rows::<f64>(x, norm, n, m, pairs)?
        };
        new_tensor_on(buf, &[pairs], x.device())
    };
    apply("aten::_pdist_forward", &[x], values, |y| {
        let mut s = Saver::default();
        let saved = [s.input_if(true, x), Some(s.output(y))];
        (PdistBackward0 { p, saved }, s.list)
    })
}

/// PdistBackward0: torch's `_pdist_backward(grad, self, p, result)`: each pair's
/// gradient added to its first row and subtracted from its second.
#[derive(Clone)]
pub struct PdistBackward0 {
    p: f64,
    /// self, result
    saved: [Option<u8>; 2],
}
impl Backward for PdistBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("p", SavedField::Scalar(Scalar::Float(self.p))),
            ("result", SavedField::Tensor(self.saved[1])),
            ("self", SavedField::Tensor(self.saved[0])),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "PdistBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let x = elementwise::get(ctx, self.saved[0])?;
        let d = elementwise::get(ctx, self.saved[1])?;
        let n = x.shape()[0];
        let pairs = d.numel();
        if pairs == 0 || x.shape()[1] == 0 {
            return Ok(smallvec::smallvec![Some(zeros_like(&x)?)]);
        }
        let (mut is, mut js) = (Vec::with_capacity(pairs), Vec::with_capacity(pairs));
        for i in 0..n {
            for j in i + 1..n {
                is.push(i as i64);
                js.push(j as i64);
            }
        }
        let dev = x.device();
        let ii = new_tensor_on(Buffer::I64(is.into()), &[pairs], dev)?;
        let jj = new_tensor_on(Buffer::I64(js.into()), &[pairs], dev)?;
        let diff = sub(&index_select(&x, 0, &ii)?, &index_select(&x, 0, &jj)?)?;
        let t = pair_grad(&diff, &unsqueeze(&d, -1)?, &unsqueeze(&g, -1)?, self.p)?;
        let z = zeros_like(&x)?;
        let plus = index_add(&z, 0, &ii, &t, Scalar::Int(1))?;
        let r = index_add(&plus, 0, &jj, &t, Scalar::Int(-1))?;
        Ok(smallvec::smallvec![Some(r)])
    }
    fn jvp(&self, _ctx: &BackwardCtx<'_>, _t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        Some(Err(no_forward_ad("_pdist_forward")))
    }
}

// ---- norm(x, p, dim, keepdim): NormBackward1 (pairwise_distance's norm) ---------------------

/// `norm(x, p, dim, keepdim)` (ATen's `norm.ScalarOpt_dim`, which pairwise_distance
/// calls): the vector p-norm over one dim, recording NormBackward1 (torch's node for it;
/// `Tensor.norm` records LinalgVectorNormBackward0).
pub fn norm_scalaropt_dim(x: &Tensor, p: f64, dim: i64, keepdim: bool) -> Result<Tensor> {
    let dims = [dim];
    let d = reduce::resolve_dims(x, Some(&dims))?;
    let shape = x.shape();
    apply(
        "aten::norm",
        &[x],
        || with_grad_mode(false, || norm(x, p, Some(&dims), keepdim)),
        |y| {
            let mut s = Saver::default();
            s.input_if(true, x);
            s.output(y);
            let node = NormBackward1 {
                r: reduce::ReduceDims::new(shape, &d, keepdim),
                dim,
                p,
            };
            (node, s.list)
        },
    )
}

/// NormBackward1: torch's `norm_backward(grad, self, p, result, dim, keepdim)`, the
/// vector norm's formula (p = 0: no gradient).
#[derive(Clone)]
pub struct NormBackward1 {
    r: Box<reduce::ReduceDims>,
    /// the dim as given (torch's `_saved_dim`)
    dim: i64,
    p: f64,
}
impl NormBackward1 {
    fn grads(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>], batched: bool) -> Result<Grads> {
        if self.p == 0.0 {
            return Ok(smallvec::smallvec![None]);
        }
        let (x, y) = (ctx.saved(0)?, ctx.saved(1)?);
        let d = reduce::norm_grad(&self.r, &x, &y, &grad0(g)?, self.p, batched)?;
        Ok(smallvec::smallvec![Some(d)])
    }
}
impl Backward for NormBackward1 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("dim", SavedField::Ints(vec![self.dim])),
            ("keepdim", SavedField::Bool(self.r.keepdim)),
            ("p", SavedField::Scalar(Scalar::Float(self.p))),
            ("result", SavedField::Tensor(Some(1))),
            ("self", SavedField::Tensor(Some(0))),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "NormBackward1".into()
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
}
