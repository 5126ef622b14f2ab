//! Cumulative sums and products along one dim (torch.cumsum / torch.cumprod), and the
//! running max / min with their indices and the running log-sum-exp (torch.cummax /
//! torch.cummin / torch.logcumsumexp, [`cum_extreme`] and [`logcumsumexp`]).
//!
//! Every output element is one sequential chain along the dim, in torch's order (never
//! a tree or a blocked scan), so how the work is split changes no bit. Two loops:
//! - along the innermost dim (`inner == 1`), rows are independent chains: a piece runs
//!   [`ROWS`] of them side by side, so that the add's latency is hidden by the other
//!   rows' adds instead of one chain waiting on itself;
//! - along an outer dim, the chains of one slab are its columns: a piece keeps a block
//!   of columns' running values and adds whole input rows to it (vectorised across the
//!   inner dim), instead of walking one column at a time with a stride.
//!
//! Pieces are fixed by the sizes (rows, or slabs and column blocks) and run on the pool
//! from `reduce::par::PAR_MIN` elements.

use super::reduce::par;
use super::strided::contiguous;
use super::wide::{Kernel, wide_kernel};
use crate::layout::Layout;
use crate::storage::Buffer;
use std::mem::MaybeUninit;

/// Rows of the innermost-dim loop run together, a tile of each in turn: the rows'
/// chains are independent, so the core overlaps one row's tile with the next's. Why
/// tiles and not one element of each row in turn: rows of a multiple of 4 KiB (2048
/// float32) put every row's element in one L1 set, and 8 rows' loads and stores
/// interleaved element by element thrashed it (cumsum(1) of 2048 x 2048, one thread:
/// 50 ms against 2.3 ms for rows of 2056); a tile uses each cache line whole before
/// the next row's.
const ROWS: usize = 8;
/// Elements of one row taken at a time (a 64-byte line of float32).
const TILE: usize = 16;
/// The most columns a piece of the outer-dim loop keeps running values of.
const COLUMNS: usize = 512;

/// One kind of element: its accumulator, how an element enters and leaves it, and the
/// step (a sum's or a product's).
#[derive(Clone, Copy)]
struct Chain<A, U, S, D> {
    init: A,
    up: U,
    step: S,
    down: D,
}

/// The running values of `rows` whole rows of `n` (`src` and `dst` hold exactly them).
struct RowsLoop<'a, T, A, U, S, D> {
    c: Chain<A, U, S, D>,
    src: &'a [T],
    dst: &'a mut [MaybeUninit<T>],
    n: usize,
}

impl<T, A, U, S, D> Kernel for RowsLoop<'_, T, A, U, S, D>
where
    T: Copy,
    A: Copy,
    U: Fn(T) -> A,
    S: Fn(A, A) -> A,
    D: Fn(A) -> T,
{
    type Out = ();
    #[inline(always)]
    fn run(self) {
        let Self { c, src, dst, n } = self;
        let group = ROWS * n;
        let mut dg = dst.chunks_exact_mut(group);
        let mut sg = src.chunks_exact(group);
        for (s, d) in (&mut sg).zip(&mut dg) {
            let mut acc = [c.init; ROWS];
            for k0 in (0..n).step_by(TILE) {
                let k1 = (k0 + TILE).min(n);
                for (r, a) in acc.iter_mut().enumerate() {
                    let row = r * n;
                    for (x, o) in s[row + k0..row + k1].iter().zip(&mut d[row + k0..row + k1]) {
                        *a = (c.step)(*a, (c.up)(*x));
                        o.write((c.down)(*a));
                    }
                }
            }
        }
        for (s, d) in sg
            .remainder()
            .chunks_exact(n)
            .zip(dg.into_remainder().chunks_exact_mut(n))
        {
            let mut a = c.init;
            for (x, o) in s.iter().zip(d) {
                a = (c.step)(a, (c.up)(*x));
                o.write((c.down)(a));
            }
        }
    }
}

/// The running values of columns `c0..c0 + w` of the slab starting at `base` (`n` rows
/// of `inner`), written through `parts`.
struct ColumnsLoop<'a, T, A, U, S, D> {
    c: Chain<A, U, S, D>,
    src: &'a [T],
    parts: &'a par::Parts<T>,
    base: usize,
    n: usize,
    inner: usize,
    w: usize,
}

impl<T, A, U, S, D> Kernel for ColumnsLoop<'_, T, A, U, S, D>
where
    T: Copy,
    A: Copy,
    U: Fn(T) -> A,
    S: Fn(A, A) -> A,
    D: Fn(A) -> T,
{
    type Out = ();
    #[inline(always)]
    fn run(self) {
        let Self {
            c,
            src,
            parts,
            base,
            n,
            inner,
            w,
        } = self;
        let mut acc = [c.init; COLUMNS];
        let acc = &mut acc[..w];
        for k in 0..n {
            let at = base + k * inner;
            // SAFETY: each piece writes its own slab's own columns (see `cumulative`):
            // no two pieces' rows overlap.
            let d = unsafe { parts.get(at..at + w) };
            for ((a, x), o) in acc.iter_mut().zip(&src[at..at + w]).zip(d) {
                *a = (c.step)(*a, (c.up)(*x));
                o.write((c.down)(*a));
            }
        }
    }
}

/// The running values along `dim` of `v` (row-major, of `shape`), row-major.
fn run<T, A, U, S, D>(v: &[T], shape: &[usize], dim: usize, c: Chain<A, U, S, D>) -> Vec<T>
where
    T: Copy + Send + Sync,
    A: Copy + Send + Sync,
    U: Fn(T) -> A + Copy + Sync,
    S: Fn(A, A) -> A + Copy + Sync,
    D: Fn(A) -> T + Copy + Sync,
{
    let n = shape.get(dim).copied().unwrap_or(1);
    let inner: usize = shape.get(dim + 1..).map_or(1, |s| s.iter().product());
    let outer: usize = shape.get(..dim).map_or(1, |s| s.iter().product());
    let total = v.len();
    if total == 0 || n == 0 {
        return v.to_vec();
    }
    let par = par::parallel(total);
    let threads = crate::runtime::num_threads().max(1);
    par::build(total, |parts| {
        if inner == 1 {
            // pieces of whole rows: about TASK elements, a multiple of ROWS rows, and
            // about four a thread when split
            let mut per = (par::TASK / n).max(1);
            if par {
                per = per.max(outer.div_ceil(4 * threads));
            }
            let per = per.next_multiple_of(ROWS);
            par::tasks(outer.div_ceil(per), par, &|t| {
                let rows = t * per..((t + 1) * per).min(outer);
                let r = rows.start * n..rows.end * n;
                // SAFETY: the pieces' row ranges are disjoint.
                let dst = unsafe { parts.get(r.clone()) };
                wide_kernel(RowsLoop {
                    c,
                    src: &v[r],
                    dst,
                    n,
                });
            });
        } else {
            // pieces of (slab, column block); narrower blocks when there are too few
            // slabs to give each thread several pieces
            let mut w = inner.min(COLUMNS);
            if par && outer < 4 * threads {
                let blocks = (4 * threads).div_ceil(outer);
                w = w.min(inner.div_ceil(blocks).next_multiple_of(16)).max(16);
            }
            let blocks = inner.div_ceil(w);
            par::tasks(outer * blocks, par, &|t| {
                let (o, b) = (t / blocks, t % blocks);
                let c0 = b * w;
                wide_kernel(ColumnsLoop {
                    c,
                    src: v,
                    parts,
                    base: o * n * inner + c0,
                    n,
                    inner,
                    w: w.min(inner - c0),
                });
            });
        }
    })
}

/// The running sum (or product, `prod`) of `x` along `dim`, row-major, of x's dtype
/// (the op layer casts first: bools become int64). As torch's CPU kernel, float32 is
/// accumulated in float64 (its `acc_type`; torch 2.15's results match this bit for bit)
/// and each partial result rounded; int64 wraps.
pub fn cumulative(buf: &Buffer, layout: &Layout, dim: usize, prod: bool) -> Buffer {
    let shape = &layout.shape;
    let dim = if shape.is_empty() { 0 } else { dim };
    macro_rules! go {
        ($v:expr, $zero:expr, $one:expr, $up:expr, $down:expr, $add:expr, $mul:expr) => {{
            let v = contiguous($v, layout);
            if prod {
                let c = Chain {
                    init: $one,
                    up: $up,
                    step: $mul,
                    down: $down,
                };
                run(&v, shape, dim, c)
            } else {
                let c = Chain {
                    init: $zero,
                    up: $up,
                    step: $add,
                    down: $down,
                };
                run(&v, shape, dim, c)
            }
        }};
    }
    match buf {
        Buffer::F32(v) => Buffer::F32(
            go!(
                v,
                0.0f64,
                1.0f64,
                f64::from,
                |a: f64| a as f32,
                |a: f64, b: f64| a + b,
                |a: f64, b: f64| a * b
            )
            .into(),
        ),
        Buffer::F64(v) => Buffer::F64(
            go!(
                v,
                0.0f64,
                1.0f64,
                |x: f64| x,
                |a: f64| a,
                |a: f64, b: f64| a + b,
                |a: f64, b: f64| a * b
            )
            .into(),
        ),
        Buffer::I64(v) => Buffer::I64(
            go!(
                v,
                0i64,
                1i64,
                |x: i64| x,
                |a: i64| a,
                |a: i64, b: i64| a.wrapping_add(b),
                |a: i64, b: i64| a.wrapping_mul(b)
            )
            .into(),
        ),
        // (not reached: the op casts bools to int64) the running or / and
        Buffer::Bool(v) => Buffer::Bool(
            go!(
                v,
                false,
                true,
                |x: bool| x,
                |a: bool| a,
                |a: bool, b: bool| a || b,
                |a: bool, b: bool| a && b
            )
            .into(),
        ),
        // (a device buffer never reaches the CPU's kernels)
        Buffer::Cuda(_) => Buffer::F32(Vec::new().into()),
    }
}

/// Runs `step` along every line of `v` (row-major, of `shape`) along `dim`, in order, with
/// a state made by `init` from the line's first element; `step(state, x, k)` gives the
/// two outputs of position `k` (the second may be `()`). Lines are independent chains,
/// so the split (as [`run`]'s: rows, or a slab's columns in blocks) changes no bit.
fn scan_lines<T, St, V, I, N, S>(
    v: &[T],
    shape: &[usize],
    dim: usize,
    init: N,
    step: S,
) -> (Vec<V>, Vec<I>)
where
    T: Copy + Send + Sync,
    V: Send,
    I: Send,
    N: Fn(T) -> St + Sync,
    S: Fn(&mut St, T, usize) -> (V, I) + Sync,
{
    let n = shape.get(dim).copied().unwrap_or(1);
    let inner: usize = shape.get(dim + 1..).map_or(1, |s| s.iter().product());
    let outer: usize = shape.get(..dim).map_or(1, |s| s.iter().product());
    let total = v.len();
    if total == 0 || n == 0 {
        return (Vec::new(), Vec::new());
    }
    let par = par::parallel(total);
    let threads = crate::runtime::num_threads().max(1);
    let mut second = Vec::new();
    let first = par::build(total, |pv| {
        second = par::build(total, |pi| {
            if inner == 1 {
                let mut per = (par::TASK / n).max(1);
                if par {
                    per = per.max(outer.div_ceil(4 * threads));
                }
                par::tasks(outer.div_ceil(per), par, &|t| {
                    let rows = t * per..((t + 1) * per).min(outer);
                    let r = rows.start * n..rows.end * n;
                    // SAFETY: the pieces' row ranges are disjoint.
                    let (dv, di) = unsafe { (pv.get(r.clone()), pi.get(r.clone())) };
                    for ((s, ov), oi) in v[r]
                        .chunks_exact(n)
                        .zip(dv.chunks_exact_mut(n))
                        .zip(di.chunks_exact_mut(n))
                    {
                        let mut st = init(s[0]);
                        for (k, ((x, a), b)) in s.iter().zip(ov).zip(oi).enumerate() {
                            let (y, j) = step(&mut st, *x, k);
                            a.write(y);
                            b.write(j);
                        }
                    }
                });
            } else {
                let mut w = inner.min(COLUMNS);
                if par && outer < 4 * threads {
                    let blocks = (4 * threads).div_ceil(outer);
                    w = w.min(inner.div_ceil(blocks).next_multiple_of(16)).max(16);
                }
                let blocks = inner.div_ceil(w);
                par::tasks(outer * blocks, par, &|t| {
                    let (o, b) = (t / blocks, t % blocks);
                    let c0 = b * w;
                    let w = w.min(inner - c0);
                    let base = o * n * inner + c0;
                    let mut st: Vec<St> = v[base..base + w].iter().map(|x| init(*x)).collect();
                    for k in 0..n {
                        let at = base + k * inner;
                        // SAFETY: each piece writes its own slab's own columns: no two
                        // pieces' ranges overlap.
                        let (dv, di) = unsafe { (pv.get(at..at + w), pi.get(at..at + w)) };
                        for (((s, x), a), bb) in st.iter_mut().zip(&v[at..at + w]).zip(dv).zip(di) {
                            let (y, j) = step(s, *x, k);
                            a.write(y);
                            bb.write(j);
                        }
                    }
                });
            }
        });
    });
    (first, second)
}

/// The running max (`is_max`) or min of `x` along `dim` and the index of each, row-major
/// (values of x's dtype, indices int64), as torch's CPU kernel: an element replaces the
/// running one when it is NaN or (the running one not NaN) `>=` it (`<=` for min), so of
/// equal values the last index wins and a NaN, once seen, stays (each later NaN taking
/// its index).
pub fn cum_extreme(buf: &Buffer, layout: &Layout, dim: usize, is_max: bool) -> (Buffer, Buffer) {
    let shape = &layout.shape;
    let dim = if shape.is_empty() { 0 } else { dim };
    macro_rules! go {
        ($v:expr, $isnan:expr, $ge:expr, $le:expr) => {{
            let v = contiguous($v, layout);
            let isnan = $isnan;
            let better = |x, y| if is_max { $ge(x, y) } else { $le(x, y) };
            let (vals, idx) = scan_lines(
                &v,
                shape,
                dim,
                |x| (x, 0i64),
                |st: &mut (_, i64), x, k| {
                    if isnan(x) || (!isnan(st.0) && better(x, st.0)) {
                        *st = (x, k as i64);
                    }
                    *st
                },
            );
            (vals.into(), Buffer::I64(idx.into()))
        }};
    }
    match buf {
        Buffer::F32(v) => {
            let (a, i) = go!(
                v,
                |x: f32| x.is_nan(),
                |x: f32, y: f32| x >= y,
                |x: f32, y: f32| x <= y
            );
            (Buffer::F32(a), i)
        }
        Buffer::F64(v) => {
            let (a, i) = go!(
                v,
                |x: f64| x.is_nan(),
                |x: f64, y: f64| x >= y,
                |x: f64, y: f64| x <= y
            );
            (Buffer::F64(a), i)
        }
        Buffer::I64(v) => {
            let (a, i) = go!(
                v,
                |_: i64| false,
                |x: i64, y: i64| x >= y,
                |x: i64, y: i64| x <= y
            );
            (Buffer::I64(a), i)
        }
        Buffer::Bool(v) => {
            let (a, i) = go!(
                v,
                |_: bool| false,
                |x: bool, y: bool| x >= y,
                |x: bool, y: bool| x <= y
            );
            (Buffer::Bool(a), i)
        }
        // (a device buffer never reaches the CPU's kernels)
        Buffer::Cuda(_) => (
            Buffer::F32(Vec::new().into()),
            Buffer::I64(Vec::new().into()),
        ),
    }
}

/// torch's `_log_add_exp_helper`: `log(exp(x) + exp(y))` as `log1p(exp(min - max)) + max`,
/// NaN propagated, and `x` itself where both are the same infinity.
#[inline]
fn log_add_exp(x: f64, y: f64) -> f64 {
    // (std::min / std::max: the first argument where either is NaN)
    let (lo, hi) = if y.is_nan() {
        (y, y)
    } else {
        (if y < x { y } else { x }, if x < y { y } else { x })
    };
    if lo != hi || lo.is_finite() {
        (lo - hi).exp().ln_1p() + hi
    } else {
        x
    }
}

/// The running `log Σ exp` of `x` along `dim`, row-major, of x's dtype, as torch's CPU
/// kernel: one chain from -inf through [`log_add_exp`], float32 accumulated in float64
/// (its `acc_type`) and each partial result rounded. `None` for non-float dtypes.
pub fn logcumsumexp(buf: &Buffer, layout: &Layout, dim: usize) -> Option<Buffer> {
    let shape = &layout.shape;
    let dim = if shape.is_empty() { 0 } else { dim };
    macro_rules! go {
        ($v:expr, $up:expr, $down:expr) => {{
            let v = contiguous($v, layout);
            let (vals, _) = scan_lines(
                &v,
                shape,
                dim,
                |_| f64::NEG_INFINITY,
                |acc: &mut f64, x, _| {
                    *acc = log_add_exp($up(x), *acc);
                    ($down(*acc), ())
                },
            );
            vals.into()
        }};
    }
    match buf {
        Buffer::F32(v) => Some(Buffer::F32(go!(v, f64::from, |a: f64| a as f32))),
        Buffer::F64(v) => Some(Buffer::F64(go!(v, |x: f64| x, |a: f64| a))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cumsum_and_cumprod_along_each_dim() {
        let l = Layout::contiguous(&[2, 3]);
        let b = Buffer::F64(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0].into());
        let Buffer::F64(s) = cumulative(&b, &l, 1, false) else {
            panic!()
        };
        assert_eq!(&s[..], &[1.0, 3.0, 6.0, 4.0, 9.0, 15.0]);
        let Buffer::F64(p) = cumulative(&b, &l, 0, true) else {
            panic!()
        };
        assert_eq!(&p[..], &[1.0, 2.0, 3.0, 4.0, 10.0, 18.0]);
        let t = l.transpose(0, 1).unwrap();
        let Buffer::F64(s) = cumulative(&b, &t, 0, false) else {
            panic!()
        };
        assert_eq!(&s[..], &[1.0, 4.0, 3.0, 9.0, 6.0, 15.0]);
    }

    /// The plain scalar chain each element must equal.
    fn reference(v: &[f32], outer: usize, n: usize, inner: usize) -> Vec<f32> {
        let mut out = v.to_vec();
        for o in 0..outer {
            for i in 0..inner {
                let mut acc = 0.0f64;
                for k in 0..n {
                    let at = (o * n + k) * inner + i;
                    acc += f64::from(v[at]);
                    out[at] = acc as f32;
                }
            }
        }
        out
    }

    #[test]
    fn every_loop_and_split_gives_the_scalar_chain() {
        // rows fewer than / not a multiple of ROWS, column blocks wider than COLUMNS,
        // both sides of the parallel threshold, on 1 and 2 threads
        for &(outer, n, inner) in &[
            (1, 1, 1),
            (3, 5, 1),
            (13, 7, 1),
            (300, 257, 1),
            (1, 9, 3),
            (2, 33, 700),
            (1, 300, 300),
            (5, 4, 1030),
        ] {
            let shape = [outer, n, inner];
            let len = outer * n * inner;
            let v: Vec<f32> = (0..len)
                .map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 37.0)
                .collect();
            let want = reference(&v, outer, n, inner);
            let b = Buffer::F32(v.into());
            for threads in [1, 2] {
                crate::runtime::set_num_threads(threads).unwrap();
                let Buffer::F32(got) = cumulative(&b, &Layout::contiguous(&shape), 1, false) else {
                    panic!()
                };
                assert_eq!(
                    got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    want.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    "{shape:?} on {threads} threads"
                );
            }
        }
    }

    #[test]
    fn cummax_cummin_ties_nans_and_columns() {
        let l = Layout::contiguous(&[6]);
        let b = Buffer::F64(vec![1.0, 3.0, 3.0, f64::NAN, 5.0, f64::NAN].into());
        let (Buffer::F64(v), Buffer::I64(i)) = cum_extreme(&b, &l, 0, true) else {
            panic!()
        };
        assert_eq!(&i[..], &[0, 1, 2, 3, 3, 5]);
        assert_eq!(v[2], 3.0);
        assert!(v[3].is_nan() && v[5].is_nan());
        let b = Buffer::I64(vec![3, 1, 1, 2, 0, 5].into());
        let (Buffer::I64(v), Buffer::I64(i)) =
            cum_extreme(&b, &Layout::contiguous(&[2, 3]), 0, false)
        else {
            panic!()
        };
        assert_eq!(&v[..], &[3, 1, 1, 2, 0, 1]);
        assert_eq!(&i[..], &[0, 0, 0, 1, 1, 0]);
    }

    #[test]
    fn logcumsumexp_infinities_and_splits() {
        let l = Layout::contiguous(&[5]);
        let b = Buffer::F64(
            vec![
                f64::NEG_INFINITY,
                f64::NEG_INFINITY,
                0.0,
                f64::INFINITY,
                1.0,
            ]
            .into(),
        );
        let Some(Buffer::F64(v)) = logcumsumexp(&b, &l, 0) else {
            panic!()
        };
        assert_eq!(
            &v[..],
            &[
                f64::NEG_INFINITY,
                f64::NEG_INFINITY,
                0.0,
                f64::INFINITY,
                f64::INFINITY
            ]
        );
        for &(outer, n, inner) in &[(3, 5, 1), (300, 257, 1), (2, 33, 700), (1, 300, 300)] {
            let shape = [outer, n, inner];
            let len = outer * n * inner;
            let v: Vec<f32> = (0..len)
                .map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 37.0)
                .collect();
            let b = Buffer::F32(v.clone().into());
            let mut want = v.clone();
            for o in 0..outer {
                for c in 0..inner {
                    let mut acc = f64::NEG_INFINITY;
                    for k in 0..n {
                        let at = (o * n + k) * inner + c;
                        acc = log_add_exp(f64::from(v[at]), acc);
                        want[at] = acc as f32;
                    }
                }
            }
            for threads in [1, 2] {
                crate::runtime::set_num_threads(threads).unwrap();
                let Some(Buffer::F32(got)) = logcumsumexp(&b, &Layout::contiguous(&shape), 1)
                else {
                    panic!()
                };
                assert_eq!(
                    got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    want.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
                );
                let (_, Buffer::I64(i)) = cum_extreme(&b, &Layout::contiguous(&shape), 1, true)
                else {
                    panic!()
                };
                assert_eq!(i.len(), len);
            }
        }
    }
}
