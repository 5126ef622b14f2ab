//! Elementwise CPU kernels: unary maps, broadcasting binary maps, casts, where.

use super::strided::{contiguous, copy_layout, for_each_offset2, to_vec};
use super::wide::{Kernel, wide_kernel};
pub use crate::backend::InPlaceRhs;
use crate::dtype::DType;
use crate::layout::Layout;
use crate::storage::{Buffer, Element};
use crate::with_dtype;
use rayon::prelude::*;
use std::borrow::Cow;
use std::hint::select_unpredictable;
use std::mem::MaybeUninit;

/// Above this many elements a map (one input or two) is split across the worker pool:
/// the calling thread takes part and claims chunks itself, helpers join when awake
/// (`runtime::Warm`), so splitting pays from 64K elements (W4 64K: 24 -> 18 ms with the
/// warm helpers; a relu after a GEMM, where the helper may be asleep, is not slower).
pub(crate) const PAR_MIN: usize = 1 << 16;
/// The same for the vectorised transcendental functions (about 1 ns per element instead
/// of 0.1): worth splitting from 16K elements.
pub(super) const PAR_MIN_VMATH: usize = 1 << 14;

pub use crate::backend::BinaryOp;

/// Arithmetic every non-bool element type supports.
pub trait Num:
    Element + std::ops::Add<Output = Self> + std::ops::Sub<Output = Self> + std::ops::Mul<Output = Self>
{
    fn div(self, o: Self) -> Self;
    fn pow(self, o: Self) -> Self;
    fn neg(self) -> Self;
    fn abs(self) -> Self;
    fn max_nan(self, o: Self) -> Self;
    fn min_nan(self, o: Self) -> Self;
    fn is_nan(self) -> bool;
    /// `self % o` with the divisor's sign; `fmod` with the dividend's.
    fn remainder(self, o: Self) -> Self;
    fn fmod(self, o: Self) -> Self;
    fn floor_div(self, o: Self) -> Self;
    fn trunc_div(self, o: Self) -> Self;
}

macro_rules! float_num {
    ($t:ty, $pow:expr) => {
        impl Num for $t {
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                self / o
            }
            #[inline(always)]
            fn pow(self, o: Self) -> Self {
                $pow(self, o)
            }
            #[inline(always)]
            fn neg(self) -> Self {
                -self
            }
            #[inline(always)]
            fn abs(self) -> Self {
                self.abs()
            }
            // torch.maximum/minimum propagate NaN. Written as selects, with no
            // short-circuit, so that the loops vectorise (branches on random data took
            // 2.4 ns an element); of two equal values (0.0 and -0.0) the second, as
            // torch's vectorised kernel (`_mm256_max_ps`) gives.
            #[inline(always)]
            fn max_nan(self, o: Self) -> Self {
                let m = if self > o { self } else { o };
                if self.is_nan() | o.is_nan() {
                    Self::NAN
                } else {
                    m
                }
            }
            #[inline(always)]
            fn min_nan(self, o: Self) -> Self {
                let m = if self < o { self } else { o };
                if self.is_nan() | o.is_nan() {
                    Self::NAN
                } else {
                    m
                }
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                self.is_nan()
            }
            // torch's CPU kernels: fmod, then move into the divisor's sign
            fn remainder(self, o: Self) -> Self {
                let m = self % o;
                if m != 0.0 && ((o < 0.0) != (m < 0.0)) {
                    m + o
                } else {
                    m
                }
            }
            fn fmod(self, o: Self) -> Self {
                self % o
            }
            // torch's div_floor_floating: exact for values whose quotient is an integer
            fn floor_div(self, o: Self) -> Self {
                if o == 0.0 {
                    return self / o;
                }
                let m = self % o;
                let mut div = (self - m) / o;
                if m != 0.0 && ((o < 0.0) != (m < 0.0)) {
                    div -= 1.0;
                }
                if div == 0.0 {
                    return (0.0 as Self).copysign(self / o);
                }
                let f = div.floor();
                if div - f > 0.5 { f + 1.0 } else { f }
            }
            fn trunc_div(self, o: Self) -> Self {
                (self / o).trunc()
            }
        }
    };
}
float_num!(f32, super::vmath::float32::pow1); // (float64 ln and exp: see vmath)
float_num!(f64, f64::powf);

impl Num for i64 {
    fn div(self, o: Self) -> Self {
        // Callers promote integer true division to float; this is floor division's kernel.
        if o == 0 { 0 } else { self.wrapping_div(o) }
    }
    fn pow(self, o: Self) -> Self {
        if o < 0 {
            // torch raises for a negative scalar exponent (the op layer checks first); with a
            // tensor exponent it computes powi: 1 and -1 keep their magnitude, the rest give 0
            match self {
                1 => 1,
                -1 => {
                    if o % 2 == 0 {
                        1
                    } else {
                        -1
                    }
                }
                _ => 0,
            }
        } else {
            // torch's powi_impl: square-and-multiply over every bit of the exponent, wrapping
            let (mut r, mut base, mut e) = (1i64, self, o as u64);
            while e > 0 {
                if e & 1 == 1 {
                    r = r.wrapping_mul(base);
                }
                base = base.wrapping_mul(base);
                e >>= 1;
            }
            r
        }
    }
    fn neg(self) -> Self {
        self.wrapping_neg()
    }
    fn abs(self) -> Self {
        self.wrapping_abs()
    }
    fn max_nan(self, o: Self) -> Self {
        self.max(o)
    }
    fn min_nan(self, o: Self) -> Self {
        self.min(o)
    }
    fn is_nan(self) -> bool {
        false
    }
    // integer division by zero is refused by the op layer before any kernel runs
    fn remainder(self, o: Self) -> Self {
        if o == 0 {
            return 0;
        }
        let m = self.wrapping_rem(o);
        if m != 0 && ((o < 0) != (m < 0)) {
            m + o
        } else {
            m
        }
    }
    fn fmod(self, o: Self) -> Self {
        if o == 0 { 0 } else { self.wrapping_rem(o) }
    }
    fn floor_div(self, o: Self) -> Self {
        if o == 0 {
            return 0;
        }
        let q = self.wrapping_div(o);
        if self.wrapping_rem(o) != 0 && ((self < 0) != (o < 0)) {
            q - 1
        } else {
            q
        }
    }
    fn trunc_div(self, o: Self) -> Self {
        if o == 0 { 0 } else { self.wrapping_div(o) }
    }
}

pub(super) fn map<T: Copy + Sync, U: Send>(src: &[T], f: impl Fn(T) -> U + Sync + Send) -> Vec<U> {
    fill_chunks(src.len(), |start, out| {
        let end = start + out.len();
        for (o, &x) in out.iter_mut().zip(&src[start..end]) {
            o.write(f(x));
        }
    })
}

/// [`map`] with its loop built for AVX2 (a [`Kernel`]): for element functions whose
/// SSE2 form is slow, such as int64 compares (`signum`: 2.8x torch's time in SSE2).
pub(super) fn map_wide<T: Copy + Sync, U: Send>(
    src: &[T],
    f: impl Fn(T) -> U + Sync + Send,
) -> Vec<U> {
    struct Loop<'a, T, U, F> {
        x: &'a [T],
        out: &'a mut [MaybeUninit<U>],
        f: &'a F,
    }
    impl<T: Copy, U, F: Fn(T) -> U> Kernel for Loop<'_, T, U, F> {
        type Out = ();
        #[inline(always)]
        fn run(self) {
            for (o, &x) in self.out.iter_mut().zip(self.x) {
                o.write((self.f)(x));
            }
        }
    }
    fill_chunks(src.len(), |start, out| {
        let end = start + out.len();
        wide_kernel(Loop {
            x: &src[start..end],
            out,
            f: &f,
        })
    })
}

/// A chunk of `zip`'s rows whose last dim is contiguous or broadcast in each operand
/// (`sa`, `sb` its strides, 0 or 1): the chunk starts at element `start`, rows of
/// `inner` elements begin at `rows[r]` in `a` and `b`. A [`Kernel`], so that its loops
/// are built for AVX2 (see `wide::Kernel`).
struct RowsLoop<'a, T, U, F> {
    out: &'a mut [MaybeUninit<U>],
    start: usize,
    inner: usize,
    rows: &'a [(usize, usize)],
    a: &'a [T],
    b: &'a [T],
    strides: (usize, usize),
    f: &'a F,
}
impl<T: Copy, U, F: Fn(T, T) -> U> Kernel for RowsLoop<'_, T, U, F> {
    type Out = ();
    #[inline(always)]
    fn run(self) {
        let Self {
            out,
            start,
            inner,
            rows,
            a,
            b,
            strides,
            f,
        } = self;
        let mut done = 0;
        while done < out.len() {
            let i = start + done;
            let (c0, (oa, ob)) = (i % inner, rows[i / inner]);
            let len = (inner - c0).min(out.len() - done);
            let dst = &mut out[done..done + len];
            let (ra, rb) = (oa + c0..oa + c0 + len, ob + c0..ob + c0 + len);
            match strides {
                (0, _) => {
                    let x = a[oa];
                    for (d, &y) in dst.iter_mut().zip(&b[rb]) {
                        d.write(f(x, y));
                    }
                }
                (_, 0) => {
                    let y = b[ob];
                    for (d, &x) in dst.iter_mut().zip(&a[ra]) {
                        d.write(f(x, y));
                    }
                }
                _ => {
                    for ((d, &x), &y) in dst.iter_mut().zip(&a[ra]).zip(&b[rb]) {
                        d.write(f(x, y));
                    }
                }
            }
            done += len;
        }
    }
}

/// Smallest chunk of parallel elementwise work.
const CHUNK: usize = 1 << 13;

/// The chunk size for `n` elements: about four chunks a thread, at least [`CHUNK`], a
/// multiple of 1024 elements (the vector math's block). Each thread then walks long
/// contiguous runs, which the hardware prefetchers follow; 8K-element chunks claimed in
/// turn had each thread jump every 32 KiB and scaled in-place `mul_` at 4M by 1.29x on 2
/// threads where torch's halves scale 2.4x. No elementwise result depends on the split
/// (each element is computed alone; `vmath`'s blocks give the same bits wherever they
/// start).
fn chunk_for(n: usize) -> usize {
    let per = n.div_ceil(4 * crate::runtime::num_threads().max(1));
    per.next_multiple_of(1024).max(CHUNK)
}

/// A new vector of `n` elements, each chunk written by `fill(start, chunk)` (which must
/// initialise every element of its chunk), in parallel for large `n`. Writing straight
/// into uninitialised memory avoids a zeroing pass, and plain per-chunk loops vectorise.
pub(super) fn fill_chunks<U: Send>(
    n: usize,
    fill: impl Fn(usize, &mut [std::mem::MaybeUninit<U>]) + Sync + Send,
) -> Vec<U> {
    fill_chunks_from(PAR_MIN, n, fill)
}

/// [`fill_chunks`], split across the pool from `par_min` elements.
pub(super) fn fill_chunks_from<U: Send>(
    par_min: usize,
    n: usize,
    fill: impl Fn(usize, &mut [std::mem::MaybeUninit<U>]) + Sync + Send,
) -> Vec<U> {
    let mut out: Vec<U> = Vec::with_capacity(n);
    let spare = &mut out.spare_capacity_mut()[..n];
    if n >= par_min && crate::runtime::intra_op_parallel() {
        for_each_chunk_of(spare, chunk_for(n), &|start, chunk| {
            super::wide::wide(|| fill(start, chunk))
        });
    } else {
        super::wide::wide(|| fill(0, spare));
    }
    // SAFETY: `fill` initialised every element of every chunk, i.e. all n elements.
    unsafe { out.set_len(n) };
    out
}

/// Runs `f(start, chunk)` on every `size`-long piece of `d` (the last may be shorter),
/// in parallel: inside the pool with rayon, from outside it with the calling thread
/// taking part (see `runtime::for_each_index_with_caller`: no wait for a sleeping
/// worker to wake).
pub(crate) fn for_each_chunk_of<U: Send>(
    d: &mut [U],
    size: usize,
    f: &(impl Fn(usize, &mut [U]) + Sync),
) {
    let size = size.max(1);
    if rayon::current_thread_index().is_some() {
        d.par_chunks_mut(size)
            .enumerate()
            .for_each(|(i, chunk)| f(i * size, chunk));
        return;
    }
    let n = d.len();
    let base = d.as_mut_ptr() as usize;
    let run_chunk = |i: usize| {
        let start = i * size;
        let len = size.min(n - start);
        // SAFETY: chunk i is [start, start + len) of `d`, disjoint from every other
        // chunk, and each index is run exactly once, so this is the only reference to
        // it; `d` is borrowed mutably for the whole call.
        let chunk = unsafe { std::slice::from_raw_parts_mut((base as *mut U).add(start), len) };
        f(start, chunk);
    };
    crate::runtime::for_each_index_with_caller(n.div_ceil(size), &run_chunk);
}

/// `x.clamp(lo, hi)` for float/int buffers (bounds already in the buffer's type domain).
/// As torch: `min(max(x, lo), hi)` (so `hi` wins when `lo > hi`), NaN inputs stay NaN,
/// and a NaN bound makes every element NaN.
pub fn clamp(buf: &Buffer, layout: &Layout, lo: Option<f64>, hi: Option<f64>) -> Buffer {
    // A missing bound is the type's extreme, so the loop is two compare-and-selects with
    // no branch on the bounds (NaN fails both compares and stays).
    fn go<T: Num>(v: &[T], layout: &Layout, l: T, h: T, nan: Option<T>) -> Vec<T> {
        let x = contiguous(v, layout);
        if let Some(nan) = nan {
            return map(&x, move |_| nan);
        }
        map(&x, move |a| {
            let a = if a < l { l } else { a };
            if a > h { h } else { a }
        })
    }
    let nan_bound = lo.is_some_and(f64::is_nan) || hi.is_some_and(f64::is_nan);
    let (l, h) = (lo.unwrap_or(f64::NEG_INFINITY), hi.unwrap_or(f64::INFINITY));
    match buf {
        Buffer::F32(v) => {
            Buffer::F32(go(v, layout, l as f32, h as f32, nan_bound.then_some(f32::NAN)).into())
        }
        Buffer::F64(v) => Buffer::F64(go(v, layout, l, h, nan_bound.then_some(f64::NAN)).into()),
        Buffer::I64(v) => {
            let l = lo.map_or(i64::MIN, |x| x as i64);
            let h = hi.map_or(i64::MAX, |x| x as i64);
            Buffer::I64(go(v, layout, l, h, None).into())
        }
        Buffer::Bool(v) => Buffer::Bool(contiguous(v, layout).into_owned().into()),
        Buffer::Cuda(_) => crate::storage::not_host(),
    }
}

#[inline(always)]
fn arith<T: Num>(op: BinaryOp, a: T, b: T) -> T {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a.div(b),
        BinaryOp::Pow => a.pow(b),
        BinaryOp::Maximum => a.max_nan(b),
        BinaryOp::Minimum => a.min_nan(b),
        BinaryOp::Remainder => a.remainder(b),
        BinaryOp::Fmod => a.fmod(b),
        BinaryOp::FloorDiv => a.floor_div(b),
        BinaryOp::TruncDiv => a.trunc_div(b),
        _ => a,
    }
}

#[inline(always)]
fn compare<T: PartialOrd>(op: BinaryOp, a: T, b: T) -> bool {
    match op {
        BinaryOp::Eq => a == b,
        BinaryOp::Ne => a != b,
        BinaryOp::Lt => a < b,
        BinaryOp::Le => a <= b,
        BinaryOp::Gt => a > b,
        BinaryOp::Ge => a >= b,
        _ => false,
    }
}

/// Applies `f` to two same-dtype inputs broadcast to `out_shape` (layouts already expanded).
pub(super) fn zip<T: Element, U: Element>(
    a: &[T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
    f: impl Fn(T, T) -> U + Sync + Send,
) -> Vec<U> {
    let n = la.numel();
    if n == 0 {
        return Vec::new();
    }
    if la.is_contiguous() && lb.is_contiguous() {
        let (xa, xb) = (&a[la.offset..la.offset + n], &b[lb.offset..lb.offset + n]);
        return fill_chunks_from(PAR_MIN, n, |start, out| {
            let end = start + out.len();
            for ((o, &x), &y) in out.iter_mut().zip(&xa[start..end]).zip(&xb[start..end]) {
                o.write(f(x, y));
            }
        });
    }
    if lb.strides.iter().all(|&s| s == 0) && la.is_contiguous() {
        let y = b[lb.offset];
        return map(&a[la.offset..la.offset + n], move |x| f(x, y));
    }
    if la.strides.iter().all(|&s| s == 0) && lb.is_contiguous() {
        let x = a[la.offset];
        return map(&b[lb.offset..lb.offset + n], move |y| f(x, y));
    }
    // Broadcasting where each operand's last dim is contiguous or broadcast (a bias added
    // to every row, a column scaling every row): a plain loop per row, which vectorises,
    // instead of an offset computation per element (128x512 + 512: 80 -> 6 µs).
    if let Some(last) = la.ndim().checked_sub(1) {
        let (inner, sa, sb) = (la.shape[last], la.strides[last], lb.strides[last]);
        if inner >= 8 && sa <= 1 && sb <= 1 && sa + sb > 0 {
            // each row's first offsets, then the output in fixed chunks (split across the
            // pool for large outputs; a chunk may start and end inside a row)
            let mut rows = Vec::with_capacity(n / inner);
            let outer = (&la.shape[..last], &la.strides[..last], &lb.strides[..last]);
            for_each_offset2(
                outer.0,
                (outer.1, la.offset),
                (outer.2, lb.offset),
                |oa, ob| rows.push((oa, ob)),
            );
            return fill_chunks(n, |start, out| {
                wide_kernel(RowsLoop {
                    out,
                    start,
                    inner,
                    rows: &rows,
                    a,
                    b,
                    strides: (sa, sb),
                    f: &f,
                });
            });
        }
    }
    let mut out = Vec::with_capacity(n);
    for_each_offset2(
        &la.shape,
        (&la.strides, la.offset),
        (&lb.strides, lb.offset),
        |oa, ob| out.push(f(a[oa], b[ob])),
    );
    out
}

/// Binary op on two buffers of the same dtype whose layouts are already broadcast to the
/// output shape. Comparisons and logical ops give bool; arithmetic keeps the dtype.
/// `op(a, s)` (or `op(s, a)` when `scalar_first`) for a contiguous float tensor and a
/// number, without materialising the number as a tensor. The number is first rounded to
/// the tensor's dtype, as it would be as a 0-d tensor of that dtype, so results are
/// bitwise those of [`binary`]. `None` for other dtypes or strided inputs.
pub fn binary_scalar(
    op: BinaryOp,
    a: &Buffer,
    la: &Layout,
    s: f64,
    scalar_first: bool,
) -> Option<Buffer> {
    if !la.is_contiguous() || op.is_comparison() || op.is_logical() {
        return None;
    }
    let n = la.numel();
    // an empty view's offset may lie past the end of its (empty) buffer
    let range = if n == 0 {
        0..0
    } else {
        la.offset..la.offset + n
    };
    Some(match a {
        Buffer::F32(v) => {
            Buffer::F32(super::unary::scalar_map_f32(op, &v[range], s, scalar_first).into())
        }
        Buffer::F64(v) => {
            let v = &v[range];
            Buffer::F64(
                super::binary::vmath_scalar(op, v, s, scalar_first)
                    .unwrap_or_else(|| float_scalar_map(op, v, s, scalar_first))
                    .into(),
            )
        }
        // int64 squared and cubed: wrapping products, powi's bits (a product mod 2^64 is
        // associative), a loop that vectorises instead of square-and-multiply per element
        Buffer::I64(v) if op == BinaryOp::Pow && !scalar_first && (s == 2.0 || s == 3.0) => {
            let v = &v[range];
            Buffer::I64(
                if s == 2.0 {
                    map(v, |x: i64| x.wrapping_mul(x))
                } else {
                    map(v, |x: i64| x.wrapping_mul(x).wrapping_mul(x))
                }
                .into(),
            )
        }
        _ => return None,
    })
}

/// Arithmetic with the op fixed outside the loop (one instantiation per common op, so
/// the loops vectorise): floats and int64.
pub(super) fn float_zip<T: Num>(
    op: BinaryOp,
    a: &[T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
) -> Vec<T> {
    match op {
        BinaryOp::Add => zip(a, la, b, lb, move |x, y| x + y),
        BinaryOp::Sub => zip(a, la, b, lb, move |x, y| x - y),
        BinaryOp::Mul => zip(a, la, b, lb, move |x, y| x * y),
        BinaryOp::Div => zip(a, la, b, lb, move |x: T, y: T| x.div(y)),
        BinaryOp::Maximum => zip(a, la, b, lb, move |x: T, y: T| x.max_nan(y)),
        BinaryOp::Minimum => zip(a, la, b, lb, move |x: T, y: T| x.min_nan(y)),
        _ => zip(a, la, b, lb, move |x, y| arith(op, x, y)),
    }
}

/// `op(x, s)` or `op(s, x)` over a slice, with the op fixed outside the loop.
pub(super) fn float_scalar_map<T: Num>(op: BinaryOp, v: &[T], s: T, scalar_first: bool) -> Vec<T> {
    match (op, scalar_first) {
        (BinaryOp::Add, _) => map(v, move |x| x + s),
        (BinaryOp::Mul, _) => map(v, move |x| x * s),
        (BinaryOp::Sub, false) => map(v, move |x| x - s),
        (BinaryOp::Div, false) => map(v, move |x: T| x.div(s)),
        // torch's pow_tensor_scalar_optimized_kernel: small integer powers as products
        // (bit for bit what torch computes, and no libm call per element)
        (BinaryOp::Pow, false) if s == T::from_f64(1.0) => map(v, move |x| x),
        (BinaryOp::Pow, false) if s == T::from_f64(2.0) => map(v, move |x| x * x),
        (BinaryOp::Pow, false) if s == T::from_f64(3.0) => map(v, move |x| x * x * x),
        (BinaryOp::Pow, false) if s == T::from_f64(-2.0) => {
            let one = T::from_f64(1.0);
            map(v, move |x: T| one.div(x * x))
        }
        (_, true) => map(v, move |x| arith(op, s, x)),
        (_, false) => map(v, move |x| arith(op, x, s)),
    }
}

/// `dst op= rhs` in place, elementwise over contiguous slices of the same float dtype
/// (`rhs`: a slice of the same length, or one number already in dst's dtype). Returns
/// false, touching nothing, when the case is not one of those.
pub fn arith_in_place(op: BinaryOp, dst: &mut Buffer, ld: &Layout, rhs: InPlaceRhs<'_>) -> bool {
    if !ld.is_contiguous()
        || !matches!(
            op,
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div
        )
    {
        return false;
    }
    let n = ld.numel();
    if n == 0 {
        return true; // nothing to write; an empty view's offset may lie past its buffer's end
    }
    let range = ld.offset..ld.offset + n;
    match (dst, rhs) {
        (Buffer::F32(d), InPlaceRhs::Slice(Buffer::F32(r), lr))
            if lr.is_contiguous() && lr.numel() == n =>
        {
            zip_in_place(op, &mut d[range], &r[lr.offset..lr.offset + n]);
        }
        (Buffer::F64(d), InPlaceRhs::Slice(Buffer::F64(r), lr))
            if lr.is_contiguous() && lr.numel() == n =>
        {
            zip_in_place(op, &mut d[range], &r[lr.offset..lr.offset + n]);
        }
        (Buffer::F32(d), InPlaceRhs::Scaled(Buffer::F32(r), lr, a))
            if lr.is_contiguous()
                && lr.numel() == n
                && matches!(op, BinaryOp::Add | BinaryOp::Sub) =>
        {
            zip_scaled_in_place(op, &mut d[range], &r[lr.offset..lr.offset + n], a as f32);
        }
        (Buffer::F64(d), InPlaceRhs::Scaled(Buffer::F64(r), lr, a))
            if lr.is_contiguous()
                && lr.numel() == n
                && matches!(op, BinaryOp::Add | BinaryOp::Sub) =>
        {
            zip_scaled_in_place(op, &mut d[range], &r[lr.offset..lr.offset + n], a);
        }
        (Buffer::F32(d), InPlaceRhs::Number(s)) => scalar_in_place(op, &mut d[range], s as f32),
        (Buffer::F64(d), InPlaceRhs::Number(s)) => scalar_in_place(op, &mut d[range], s),
        _ => return false,
    }
    true
}

pub(super) fn for_chunks_in_place<T: Send>(d: &mut [T], f: impl Fn(usize, &mut [T]) + Sync + Send) {
    if d.len() >= PAR_MIN && crate::runtime::intra_op_parallel() {
        for_each_chunk_of(d, chunk_for(d.len()), &|start, chunk| {
            super::wide::wide(|| f(start, chunk))
        });
    } else {
        super::wide::wide(|| f(0, d));
    }
}

fn zip_in_place<T: Num>(op: BinaryOp, d: &mut [T], r: &[T]) {
    macro_rules! go {
        (|$x:ident, $y:ident| $e:expr) => {
            for_chunks_in_place(d, |start, c| {
                let end = start + c.len();
                for (o, &$y) in c.iter_mut().zip(&r[start..end]) {
                    let $x = *o;
                    *o = $e;
                }
            })
        };
    }
    match op {
        BinaryOp::Add => go!(|x, y| x + y),
        BinaryOp::Sub => go!(|x, y| x - y),
        BinaryOp::Mul => go!(|x, y| x * y),
        _ => go!(|x, y| x.div(y)),
    }
}

/// `d = d ± r·a`, the product rounded before the add (Rust never fuses a multiply and an
/// add: the bits are those of `r * a` as a tensor, then the in-place op), in one pass
/// with no temporary for the product.
fn zip_scaled_in_place<T: Num>(op: BinaryOp, d: &mut [T], r: &[T], a: T) {
    let sub = op == BinaryOp::Sub;
    for_chunks_in_place(d, |start, c| {
        let r = &r[start..start + c.len()];
        if sub {
            for (o, &y) in c.iter_mut().zip(r) {
                *o = *o - y * a;
            }
        } else {
            for (o, &y) in c.iter_mut().zip(r) {
                *o = *o + y * a;
            }
        }
    });
}

fn scalar_in_place<T: Num>(op: BinaryOp, d: &mut [T], s: T) {
    macro_rules! go {
        (|$x:ident| $e:expr) => {
            for_chunks_in_place(d, |_, c| {
                for o in c.iter_mut() {
                    let $x = *o;
                    *o = $e;
                }
            })
        };
    }
    match op {
        BinaryOp::Add => go!(|x| x + s),
        BinaryOp::Sub => go!(|x| x - s),
        BinaryOp::Mul => go!(|x| x * s),
        _ => go!(|x| x.div(s)),
    }
}

/// A comparison with the op fixed outside the loop (one instantiation per op: the op
/// matched per element kept the loop from vectorising, 1.5-3 ns an element).
fn compare_zip<T: Element>(op: BinaryOp, a: &[T], la: &Layout, b: &[T], lb: &Layout) -> Vec<bool> {
    match op {
        BinaryOp::Eq => zip(a, la, b, lb, |x: T, y: T| x == y),
        BinaryOp::Ne => zip(a, la, b, lb, |x: T, y: T| x != y),
        BinaryOp::Lt => zip(a, la, b, lb, |x: T, y: T| x < y),
        BinaryOp::Le => zip(a, la, b, lb, |x: T, y: T| x <= y),
        BinaryOp::Gt => zip(a, la, b, lb, |x: T, y: T| x > y),
        BinaryOp::Ge => zip(a, la, b, lb, |x: T, y: T| x >= y),
        _ => zip(a, la, b, lb, |x: T, y: T| compare(op, x, y)),
    }
}

pub fn binary(op: BinaryOp, a: &Buffer, la: &Layout, b: &Buffer, lb: &Layout) -> Buffer {
    if op.is_comparison() {
        return with_dtype!(a.dtype(), T => Buffer::Bool(compare_zip(op, T::slice(a), la, T::slice(b), lb).into()));
    }
    if op.is_logical() {
        let and = op == BinaryOp::LogicalAnd;
        if let (Buffer::Bool(x), Buffer::Bool(y)) = (a, b) {
            // (bools directly, without the short circuit: the loops vectorise)
            return Buffer::Bool(if and {
                zip(x, la, y, lb, |p: bool, q: bool| p & q).into()
            } else {
                zip(x, la, y, lb, |p: bool, q: bool| p | q).into()
            });
        }
        return with_dtype!(a.dtype(), T => Buffer::Bool(zip(T::slice(a), la, T::slice(b), lb, move |x: T, y: T| {
            let (x, y) = (x.to_f64() != 0.0, y.to_f64() != 0.0);
            if and { x && y } else { x || y }
        }).into()));
    }
    if matches!(op, BinaryOp::Gcd | BinaryOp::Lcm) {
        // (the op layer refuses every dtype but int64)
        let f = if op == BinaryOp::Gcd {
            gcd_i64
        } else {
            lcm_i64
        };
        return Buffer::I64(zip(i64::slice(a), la, i64::slice(b), lb, f).into());
    }
    if op.is_bitwise() {
        fn bits<
            T: std::ops::BitAnd<Output = T>
                + std::ops::BitOr<Output = T>
                + std::ops::BitXor<Output = T>,
        >(
            op: BinaryOp,
            x: T,
            y: T,
        ) -> T {
            match op {
                BinaryOp::BitAnd => x & y,
                BinaryOp::BitOr => x | y,
                _ => x ^ y,
            }
        }
        match a.dtype() {
            DType::I64 => {
                return Buffer::I64(
                    zip(i64::slice(a), la, i64::slice(b), lb, move |x, y| {
                        bits(op, x, y)
                    })
                    .into(),
                );
            }
            DType::Bool => {
                return Buffer::Bool(
                    zip(bool::slice(a), la, bool::slice(b), lb, move |x, y| {
                        bits(op, x, y)
                    })
                    .into(),
                );
            }
            // the op layer refuses floats with torch's message
            DType::F32 | DType::F64 => {}
        }
    }
    if let Some(out) = super::binary::vmath_arith(op, a, la, b, lb) {
        return out;
    }
    match a.dtype() {
        DType::F32 => Buffer::F32(float_zip(op, f32::slice(a), la, f32::slice(b), lb).into()),
        DType::F64 => Buffer::F64(float_zip(op, f64::slice(a), la, f64::slice(b), lb).into()),
        // (the op fixed outside the loop, as for floats: add, sub, mul vectorise)
        DType::I64 => Buffer::I64(float_zip(op, i64::slice(a), la, i64::slice(b), lb).into()),
        // bool arithmetic: add is or, mul is and, max/min likewise (torch semantics)
        DType::Bool => Buffer::Bool(
            zip(bool::slice(a), la, bool::slice(b), lb, |x, y| match op {
                BinaryOp::Add | BinaryOp::Maximum => x || y,
                BinaryOp::Mul | BinaryOp::Minimum => x && y,
                // x^0 = 1, x^1 = x
                BinaryOp::Pow => x || !y,
                _ => x,
            })
            .into(),
        ),
    }
}

/// ATen's `calc_gcd` for int64: Euclid's loop on the absolute values, in two's
/// complement (|MIN| is MIN, so gcd(MIN, 0) = MIN and gcd(MIN, 6) = -2, as torch gives).
/// The remainders never divide MIN by -1; wrapping keeps that a value, not a panic.
#[inline]
pub(crate) fn gcd_i64(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.wrapping_abs(), b.wrapping_abs());
    while a != 0 {
        let c = a;
        a = b.wrapping_rem(a);
        b = c;
    }
    b
}

/// ATen's `calc_lcm` for int64: `|a / gcd(a, b) * b|`, 0 where the gcd is 0 (wrapping
/// on overflow, as C's arithmetic does in torch's kernel).
#[inline]
pub(crate) fn lcm_i64(a: i64, b: i64) -> i64 {
    let g = gcd_i64(a, b);
    if g == 0 {
        0
    } else {
        a.wrapping_div(g).wrapping_mul(b).wrapping_abs()
    }
}

/// `where(cond, a, b)` with all three layouts broadcast to the output shape.
pub fn where_(
    cond: &Buffer,
    lc: &Layout,
    a: &Buffer,
    la: &Layout,
    b: &Buffer,
    lb: &Layout,
) -> Buffer {
    // (the op layer casts the condition to bool)
    let c = contiguous(bool::slice(cond), lc);
    with_dtype!(a.dtype(), T => T::into_buffer(select(&c, Choice::of(T::slice(a), la), Choice::of(T::slice(b), lb))))
}

/// One side of a `where`: every element, or one value broadcast everywhere (a number,
/// `zeros_like(...).expand`), which is then never materialised.
enum Choice<'a, T: Clone> {
    Each(Cow<'a, [T]>),
    All(T),
}

impl<'a, T: Copy> Choice<'a, T> {
    fn of(data: &'a [T], layout: &Layout) -> Self {
        match data.get(layout.offset) {
            Some(&v) if layout.strides.iter().all(|&s| s == 0) => Choice::All(v),
            _ => Choice::Each(contiguous(data, layout)),
        }
    }
}

/// `cond[i] ? a[i] : b[i]` over contiguous operands: a plain loop per chunk, split
/// across the pool like the other maps. A mask is as good as random (`x > 0`), so the
/// choice must be a select, not a branch: branching took 2.7 ns per element here.
fn select<T: Element>(c: &[bool], a: Choice<'_, T>, b: Choice<'_, T>) -> Vec<T> {
    use Choice::{All, Each};
    let n = c.len();
    match (a, b) {
        (Each(xa), Each(xb)) => fill_chunks_from(PAR_MIN, n, |s, out| {
            let (c, xa, xb) = (&c[s..], &xa[s..], &xb[s..]);
            for ((o, &k), (&x, &y)) in out.iter_mut().zip(c).zip(xa.iter().zip(xb)) {
                o.write(select_unpredictable(k, x, y));
            }
        }),
        (Each(xa), All(y)) => fill_chunks_from(PAR_MIN, n, |s, out| {
            for ((o, &k), &x) in out.iter_mut().zip(&c[s..]).zip(&xa[s..]) {
                o.write(select_unpredictable(k, x, y));
            }
        }),
        (All(x), Each(xb)) => fill_chunks_from(PAR_MIN, n, |s, out| {
            for ((o, &k), &y) in out.iter_mut().zip(&c[s..]).zip(&xb[s..]) {
                o.write(select_unpredictable(k, x, y));
            }
        }),
        (All(x), All(y)) => fill_chunks_from(PAR_MIN, n, |s, out| {
            for (o, &k) in out.iter_mut().zip(&c[s..]) {
                o.write(select_unpredictable(k, x, y));
            }
        }),
    }
}

/// Converts a strided buffer into a contiguous buffer of `to` (torch's casting rules:
/// float->int truncates toward zero, anything->bool is `!= 0`).
/// A float to int64 as torch's x86 build converts it (`cvttsd2si`): truncated toward zero,
/// and NaN or a value outside the int64 range gives INT64_MIN (Rust's `as` would saturate,
/// and give 0 for NaN).
#[cfg(test)]
fn float_to_i64(x: f64) -> i64 {
    // 2^63 is exact in f64; NaN fails both comparisons
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&x) {
        x as i64
    } else {
        i64::MIN
    }
}

/// The vector level of the kernels built per level here (`vmath`'s).
fn level() -> super::vmath::Level {
    super::vmath::level()
}

mod to_i64 {
    //! Float to int64 casts as torch's x86 build does them (`float_to_i64`), branch-free
    //! and built per vector level: with AVX-512DQ the conversion is one vector
    //! instruction (`vcvttps2qq`, whose out-of-range result is torch's INT64_MIN too).
    use super::super::vmath::Level;
    use std::mem::MaybeUninit;

    /// A float type the cast takes.
    pub(super) trait Src: Copy + Send + Sync + PartialOrd {
        const LO: Self;
        const HI: Self;
        const ZERO: Self;
        /// # Safety
        /// `self` must be finite and within (-2^63 - 1, 2^63).
        unsafe fn trunc_unchecked(self) -> i64;
    }
    macro_rules! src {
        ($t:ty) => {
            impl Src for $t {
                // -2^63 and 2^63, both exact in the type
                const LO: Self = -9_223_372_036_854_775_808.0;
                const HI: Self = 9_223_372_036_854_775_808.0;
                const ZERO: Self = 0.0;
                #[inline(always)]
                unsafe fn trunc_unchecked(self) -> i64 {
                    // SAFETY: the caller's guarantee.
                    unsafe { self.to_int_unchecked::<i64>() }
                }
            }
        };
    }
    src!(f32);
    src!(f64);

    #[inline(always)]
    fn body<S: Src>(src: &[S], out: &mut [MaybeUninit<i64>]) {
        for (o, &x) in out.iter_mut().zip(src) {
            // NaN fails both comparisons
            let ok = x >= S::LO && x < S::HI;
            let y = if ok { x } else { S::ZERO };
            // SAFETY: `y` is in range (or 0).
            let i = unsafe { y.trunc_unchecked() };
            o.write(if ok { i } else { i64::MIN });
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512dq")]
    fn wide<S: Src>(src: &[S], out: &mut [MaybeUninit<i64>]) {
        body(src, out)
    }

    /// AVX2 has no float-to-int64 conversion: four lanes at a time in float64, truncated
    /// (`vroundpd`) and read from the low bits after adding 1.5 * 2^52, exact where |x| <
    /// 2^51; a group of four with a lane beyond (or NaN) goes element by element. The
    /// element loop it replaces converted one scalar at a time (256x256 float32 `to(int64)`
    /// at the AVX2 level 36.7 µs, 4x the AVX-512 build's 9.0; AMD EPYC Zen 4).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn mid<S: Src>(src: &[S], out: &mut [MaybeUninit<i64>]) {
        use std::arch::x86_64::*;
        let n = src.len().min(out.len());
        let mut j = 0;
        let magic = _mm256_set1_pd(6_755_399_441_055_744.0);
        let limit = _mm256_set1_pd(2_251_799_813_685_248.0); // 2^51
        let abs = _mm256_castsi256_pd(_mm256_set1_epi64x(i64::MAX));
        while j + 4 <= n {
            // SAFETY: elements j..j + 4 of both slices exist (j + 4 <= n); `S` is f32 or
            // f64 (the trait's two types), read as its size says.
            unsafe {
                let p = src.as_ptr().add(j);
                let x = if std::mem::size_of::<S>() == 4 {
                    _mm256_cvtps_pd(_mm_loadu_ps(p.cast::<f32>()))
                } else {
                    _mm256_loadu_pd(p.cast::<f64>())
                };
                let small = _mm256_cmp_pd::<_CMP_LT_OQ>(_mm256_and_pd(x, abs), limit);
                if _mm256_movemask_pd(small) == 0xF {
                    let t = _mm256_round_pd::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(x);
                    let i = _mm256_sub_epi64(
                        _mm256_castpd_si256(_mm256_add_pd(t, magic)),
                        _mm256_castpd_si256(magic),
                    );
                    _mm256_storeu_si256(out.as_mut_ptr().add(j).cast::<__m256i>(), i);
                } else {
                    body(&src[j..j + 4], &mut out[j..j + 4]);
                }
            }
            j += 4;
        }
        body(&src[j..n], &mut out[j..n]);
    }

    /// One chunk at `level` (capped by what the CPU has).
    pub(super) fn at<S: Src>(level: Level, src: &[S], out: &mut [MaybeUninit<i64>]) {
        #[cfg(target_arch = "x86_64")]
        {
            let l = level.min(super::super::vmath::detected());
            if l == Level::Avx512 && std::arch::is_x86_feature_detected!("avx512dq") {
                // SAFETY: the CPU has AVX-512F and AVX-512DQ (checked).
                return unsafe { wide(src, out) };
            }
            if l >= Level::Avx2 {
                // SAFETY: the CPU has AVX2 (the level is capped by what it has).
                return unsafe { mid(src, out) };
            }
        }
        let _ = level;
        body(src, out)
    }

    /// The cast of a contiguous slice, split across the pool when large.
    pub(super) fn run<S: Src>(level: Level, src: &[S]) -> Vec<i64> {
        super::fill_chunks(src.len(), |start, out| {
            at(level, &src[start..start + out.len()], out)
        })
    }
}

pub fn cast(buf: &Buffer, layout: &Layout, to: DType) -> Buffer {
    fn conv<S: Element, D: Element>(
        src: &[S],
        layout: &Layout,
        f: impl Fn(S) -> D + Sync + Send,
    ) -> Vec<D> {
        map(&contiguous(src, layout), f)
    }
    match (buf, to) {
        (Buffer::F32(v), DType::F64) => Buffer::F64(conv(v, layout, f64::from).into()),
        (Buffer::F64(v), DType::F32) => Buffer::F32(conv(v, layout, |x| x as f32).into()),
        (Buffer::I64(v), DType::F32) => Buffer::F32(conv(v, layout, |x| x as f32).into()),
        (Buffer::I64(v), DType::F64) => Buffer::F64(conv(v, layout, |x| x as f64).into()),
        (Buffer::F32(v), DType::I64) => {
            Buffer::I64(to_i64::run(level(), &contiguous(v, layout)).into())
        }
        (Buffer::F64(v), DType::I64) => {
            Buffer::I64(to_i64::run(level(), &contiguous(v, layout)).into())
        }
        (Buffer::Bool(v), _) => {
            with_dtype!(to, T => T::into_buffer(conv(v, layout, |x| T::from_f64(f64::from(u8::from(x))))))
        }
        // (compared in the source type: the same as through f64, and the loops vectorise)
        (Buffer::F32(v), DType::Bool) => Buffer::Bool(conv(v, layout, |x| x != 0.0).into()),
        (Buffer::F64(v), DType::Bool) => Buffer::Bool(conv(v, layout, |x| x != 0.0).into()),
        (Buffer::I64(v), DType::Bool) => Buffer::Bool(conv(v, layout, |x| x != 0).into()),
        // the same dtype: a copy (parallel, and tiled for a transpose)
        _ => with_dtype!(to, T => T::into_buffer(to_vec(T::slice(buf), layout))),
    }
}

/// `torch.cat`'s copy: buffers of one dtype (each over its layout) side by side along
/// `dim` in a new row-major buffer of `out_shape` (`strided::cat`).
pub fn cat(parts: &[(&Buffer, &Layout)], dim: usize, out_shape: &[usize]) -> Buffer {
    let Some(&(first, _)) = parts.first() else {
        return Buffer::F32(Vec::new().into());
    };
    with_dtype!(first.dtype(), T => {
        let typed: Vec<(&[T], &Layout)> = parts.iter().map(|&(b, l)| (T::slice(b), l)).collect();
        T::into_buffer(super::strided::cat(&typed, dim, out_shape))
    })
}

/// Copies `src` (already broadcast to `dst`'s shape, same dtype) into `dst`'s strided
/// positions (`strided::copy_layout`: parallel, tiled for transposes). Sources are always
/// private buffers (see `ops::inplace`), never `dst` itself.
pub fn copy_into(dst: &mut Buffer, ld: &Layout, src: &Buffer, ls: &Layout) {
    with_dtype!(dst.dtype(), T => copy_layout(T::slice_mut(dst), ld, T::slice(src), ls))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::UnaryOp;

    #[test]
    fn broadcast_add_matches_scalar_loop() {
        let a = Buffer::F32(vec![1.0, 2.0, 3.0].into()); // shape [3,1]
        let b = Buffer::F32(vec![10.0, 20.0].into()); // shape [2]
        let la = Layout::contiguous(&[3, 1]).expand(&[3, 2]).unwrap();
        let lb = Layout::contiguous(&[2]).expand(&[3, 2]).unwrap();
        let Buffer::F32(out) = binary(BinaryOp::Add, &a, &la, &b, &lb) else {
            unreachable!()
        };
        assert_eq!(out, vec![11.0, 21.0, 12.0, 22.0, 13.0, 23.0]);
    }

    #[test]
    fn broadcast_rows_split_across_chunks_match_the_strided_walk() {
        // rows of 1000 (not a divisor of the 8K chunks) and more elements than PAR_MIN, so
        // chunks start and end inside rows, on the pool; a bias along the last dim and a
        // column along the first, each on either side
        let (rows, cols) = (100usize, 1000usize);
        let m: Vec<f32> = (0..rows * cols)
            .map(|i| (i % 977) as f32 * 0.5 - 3.0)
            .collect();
        let bias: Vec<f32> = (0..cols).map(|i| i as f32 * 0.25).collect();
        let col: Vec<f32> = (0..rows).map(|i| 1.0 + i as f32).collect();
        let lm = Layout::contiguous(&[rows, cols]);
        let lbias = Layout::contiguous(&[cols]).expand(&[rows, cols]).unwrap();
        let lcol = Layout::contiguous(&[rows, 1])
            .expand(&[rows, cols])
            .unwrap();
        let cases: [(&[f32], &Layout, &[f32], &Layout); 4] = [
            (&m, &lm, &bias, &lbias),
            (&bias, &lbias, &m, &lm),
            (&m, &lm, &col, &lcol),
            (&col, &lcol, &m, &lm),
        ];
        for (a, la, b, lb) in cases {
            let got = zip(a, la, b, lb, |x, y| x * 3.0 - y);
            let mut want = Vec::new();
            for_each_offset2(
                &la.shape,
                (&la.strides, la.offset),
                (&lb.strides, lb.offset),
                |oa, ob| want.push(a[oa] * 3.0 - b[ob]),
            );
            assert_eq!(got, want);
        }
    }

    #[test]
    fn map_and_zip_give_the_walks_bits_at_every_level() {
        // `map` and `zip`'s loops have a baseline and an AVX2 build (`wide`,
        // `wide_kernel`), picked by the level: contiguous, a broadcast row or column on
        // either side, and a broadcast number, with NaN, -0
        // and infinities among the values, for float32 and float64 ops whose SIMD forms
        // could differ (min/max with NaN, division, a fused-looking a * b + c)
        use crate::backend::cpu::vmath;
        fn check<T: Num + std::fmt::Debug>(bits: impl Fn(T) -> u64) {
            let (rows, cols) = (37usize, 203usize);
            let special = [f64::NAN, -0.0, 0.0, f64::INFINITY, -f64::INFINITY, 1e-310];
            let val = |i: usize| {
                T::from_f64(if i.is_multiple_of(11) {
                    special[i / 11 % special.len()]
                } else {
                    (i % 97) as f64 * 0.37 - 9.0
                })
            };
            let m: Vec<T> = (0..rows * cols).map(val).collect();
            let m2: Vec<T> = (0..rows * cols).map(|i| val(i * 7 + 3)).collect();
            let bias: Vec<T> = (0..cols).map(|i| val(i + 5)).collect();
            let col: Vec<T> = (0..rows).map(|i| val(i * 3 + 1)).collect();
            let lm = Layout::contiguous(&[rows, cols]);
            let lbias = Layout::contiguous(&[cols]).expand(&[rows, cols]).unwrap();
            let lcol = Layout::contiguous(&[rows, 1])
                .expand(&[rows, cols])
                .unwrap();
            let lone = Layout::contiguous(&[1, 1]).expand(&[rows, cols]).unwrap();
            let cases: [(&[T], &Layout, &[T], &Layout); 6] = [
                (&m, &lm, &m2, &lm),
                (&m, &lm, &bias, &lbias),
                (&bias, &lbias, &m, &lm),
                (&m, &lm, &col, &lcol),
                (&col, &lcol, &m, &lm),
                (&m, &lm, &col[..1], &lone),
            ];
            let ops = [
                BinaryOp::Add,
                BinaryOp::Sub,
                BinaryOp::Mul,
                BinaryOp::Div,
                BinaryOp::Maximum,
                BinaryOp::Minimum,
            ];
            let restore = vmath::level();
            for level in vmath::supported() {
                vmath::set_level(level);
                for (a, la, b, lb) in cases {
                    for op in ops {
                        let got = float_zip(op, a, la, b, lb);
                        let mut want = Vec::new();
                        for_each_offset2(
                            &la.shape,
                            (&la.strides, la.offset),
                            (&lb.strides, lb.offset),
                            |oa, ob| want.push(arith(op, a[oa], b[ob])),
                        );
                        let (got, want): (Vec<u64>, Vec<u64>) = (
                            got.into_iter().map(&bits).collect(),
                            want.into_iter().map(&bits).collect(),
                        );
                        assert_eq!(got, want, "{op:?} at {level:?}");
                    }
                }
                let c = T::from_f64(2.5);
                let got = map(&m, |x| x * c + c);
                let want: Vec<T> = m.iter().map(|&x| x * c + c).collect();
                assert!(
                    got.iter().zip(&want).all(|(&g, &w)| bits(g) == bits(w)),
                    "map at {level:?}"
                );
            }
            vmath::set_level(restore);
        }
        check::<f32>(|x| u64::from(x.to_bits()));
        check::<f64>(f64::to_bits);
    }

    #[test]
    fn unary_kernels_match_std() {
        let x = Buffer::F64(vec![-1.5, 0.0, 2.0].into());
        let l = Layout::contiguous(&[3]);
        let Buffer::F64(out) = super::super::unary::unary(UnaryOp::Sigmoid, &x, &l) else {
            unreachable!()
        };
        for (o, v) in out.iter().zip([-1.5f64, 0.0, 2.0]) {
            assert!((o - 1.0 / (1.0 + (-v).exp())).abs() < 1e-15);
        }
        let Buffer::F64(out) = super::super::unary::unary(UnaryOp::Relu, &x, &l) else {
            unreachable!()
        };
        assert_eq!(out, vec![0.0, 0.0, 2.0]);
    }

    #[test]
    fn float_to_int64_casts_are_torchs_at_every_level() {
        // around zero, fractions, the int64 range's ends, beyond, infinities and NaN
        let mut xs: Vec<f64> = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.9,
            -1.9,
            2.5,
            -2.5,
            1e18,
            -1e18,
            9.2e18,
            -9.2e18,
            9_223_372_036_854_775_808.0,
            -9_223_372_036_854_775_808.0,
            1.8e19,
            -1.8e19,
            1e300,
            -1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
        ];
        xs.extend((0..3000).map(|i| (i as f64 - 1500.0) * 1.37e15));
        // around the AVX2 build's 2^51 (exact below it, element by element from it) and
        // small fractions, in groups of four and alone
        let p51 = 2_251_799_813_685_248.0f64;
        for x in [
            p51 - 1.5,
            p51 - 0.5,
            p51,
            p51 + 1.0,
            2.0 * p51 - 1.0,
            2.0 * p51,
        ] {
            xs.extend([x, -x, 0.25, -0.75]);
        }
        xs.extend((0..3001).map(|i| (i as f64 - 1500.0) * 0.37));
        for level in super::super::vmath::supported() {
            let n = xs.len();
            let mut out = vec![std::mem::MaybeUninit::uninit(); n];
            to_i64::at(level, &xs, &mut out);
            // SAFETY: `at` initialises every element.
            let got: Vec<i64> = out.iter().map(|v| unsafe { v.assume_init() }).collect();
            let want: Vec<i64> = xs.iter().map(|&x| float_to_i64(x)).collect();
            assert_eq!(got, want, "{level:?}");
            let xf: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
            let mut out = vec![std::mem::MaybeUninit::uninit(); n];
            to_i64::at(level, &xf, &mut out);
            // SAFETY: as above.
            let got: Vec<i64> = out.iter().map(|v| unsafe { v.assume_init() }).collect();
            let want: Vec<i64> = xf.iter().map(|&x| float_to_i64(f64::from(x))).collect();
            assert_eq!(got, want, "{level:?}");
        }
    }

    #[test]
    fn branch_free_trunc_is_libms_and_extrema_propagate_nan() {
        use super::super::unary::Float;
        let mut xs: Vec<f64> = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            0.49999999999999994,
            1.0,
            -1.0,
            1.5,
            -2.5,
            2.5,
            4503599627370495.5,
            -4503599627370495.5,
            4503599627370496.0,
            9007199254740993.0,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            8388607.5,
            -8388607.5,
            8388608.0,
            16777215.0,
            1e-40,
        ];
        xs.extend((0..20000).map(|i| (i as f64 - 10000.0) * 0.0137));
        for &x in &xs {
            let (t, f) = (Float::trunc(x), Float::frac(x));
            assert!(
                t.to_bits() == x.trunc().to_bits() || (t.is_nan() && x.is_nan()),
                "{x}"
            );
            assert!(
                f.to_bits() == (x - x.trunc()).to_bits() || f.is_nan(),
                "{x}"
            );
            let y = x as f32;
            let t = Float::trunc(y);
            assert!(
                t.to_bits() == y.trunc().to_bits() || (t.is_nan() && y.is_nan()),
                "{y}"
            );
        }
        assert!(Num::max_nan(f32::NAN, 1.0).is_nan() && Num::min_nan(1.0, f32::NAN).is_nan());
        assert_eq!(
            (Num::max_nan(1.0f64, 2.0), Num::min_nan(1.0f64, 2.0)),
            (2.0, 1.0)
        );
    }

    #[test]
    fn cat_matches_copies_into_zeros() {
        // parts contiguous, transposed and expanded, along each dim; an empty part
        let a: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let b: Vec<f32> = (100..112).map(|i| i as f32).collect();
        let la = Layout::contiguous(&[3, 4]);
        let lb = Layout::contiguous(&[4, 3]).transpose(0, 1).unwrap();
        let one = [7.0f32];
        let lc = Layout {
            shape: smallvec::smallvec![3, 4],
            strides: smallvec::smallvec![0, 0],
            offset: 0,
        };
        let le = Layout::contiguous(&[3, 0]);
        for dim in 0..2 {
            let parts: Vec<(&[f32], &Layout)> = if dim == 0 {
                vec![(&a, &la), (&b, &lb), (&one, &lc)]
            } else {
                vec![(&a, &la), (&[], &le), (&b, &lb), (&one, &lc)]
            };
            let mut shape = vec![3, 4];
            shape[dim] = parts.iter().map(|p| p.1.shape[dim]).sum();
            let got = super::super::strided::cat(&parts, dim, &shape);
            let mut want = vec![0f32; shape[0] * shape[1]];
            let out_l = Layout::contiguous(&shape);
            let mut at = 0;
            for (d, l) in &parts {
                let len = l.shape[dim];
                copy_layout(&mut want, &out_l.narrow(dim, at, len).unwrap(), d, l);
                at += len;
            }
            assert_eq!(got, want);
        }
    }

    #[test]
    fn casts_follow_torch() {
        let x = Buffer::F32(vec![-1.7, 0.0, 2.9].into());
        let l = Layout::contiguous(&[3]);
        let Buffer::I64(out) = cast(&x, &l, DType::I64) else {
            unreachable!()
        };
        assert_eq!(out, vec![-1, 0, 2]);
        let Buffer::Bool(out) = cast(&x, &l, DType::Bool) else {
            unreachable!()
        };
        assert_eq!(out, vec![true, false, true]);
    }
}
