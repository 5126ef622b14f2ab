//! Fused elementwise maps of three operands (`fused3`: addcmul, addcdiv, lerp with a
//! tensor weight, addr), lerp with a number weight (`lerp_scalar`) and `nan_to_num`: one
//! pass, one rounding where torch's kernels round once.
//!
//! What each computes, as ATen's CPU kernels do (checked bit for bit against torch 2.15
//! on float32 and float64; `v` is the number rounded to the dtype first, as ATen's
//! `value.to<scalar_t>()`):
//! - addcmul: `fma(v * b, c, a)` (ATen writes `self + value * t1 * t2`, which GCC
//!   contracts: its vector and scalar loops both fuse the last multiply and add);
//! - addcdiv: `a + (v * b) / c` (a division does not contract);
//! - lerp: `|w| < 0.5 ? fma(w, b - a, a) : fma(w - 1, b - a, b)` (ATen's `lerp_vec`);
//! - addr: `fma(alpha * b, c, beta * a)`, and `(alpha * b) * c` when beta is 0 (`a`, NaN
//!   and inf included, ignored). ATen's vector loop fuses; its scalar loop, which it runs
//!   for the last `n % 32` elements of each row on an AVX-512 build, does not, so those
//!   elements may differ from torch's in the last bit. One formula everywhere here keeps
//!   the result independent of the SIMD width and of how rows split across threads.
//!
//! Integer addcmul and addr wrap as ATen's do; bool addr is `(beta && a) || (alpha && b
//! && c)`.
//!
//! Operands come with layouts already broadcast to the output's shape (and permuted into
//! its memory order by the op layer). The output is written in blocks of [`BLOCK`]
//! elements, each chunk of blocks on the pool: a contiguous operand is read in place, any
//! other (a broadcast vector of addr, a transposed operand) is gathered block by block
//! into an L1-resident buffer first, so the one loop of each op runs over plain slices,
//! vectorised at the CPU's width (`wide::Kernel`; the fused multiply-add needs the FMA
//! build: the baseline's `mul_add` is a libm call).

use super::elementwise::fill_chunks;
use super::wide::{Kernel, wide_kernel};
use crate::dtype::Scalar;
use crate::layout::Layout;
use crate::storage::{Buffer, Element};
use std::mem::MaybeUninit;

/// The map `fused3` computes (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fused3 {
    /// `a + value * b * c`
    Addcmul(Scalar),
    /// `a + value * b / c` (floats only)
    Addcdiv(Scalar),
    /// `lerp(a, b, c)`: `a + c * (b - a)` (floats only)
    Lerp,
    /// `beta * a + alpha * b * c`
    Addr { beta: Scalar, alpha: Scalar },
}

/// Elements per block: three float64 operand buffers stay in L1.
const BLOCK: usize = 512;

/// One operand over the output's row-major positions.
enum Src<'a, T> {
    /// contiguous: position `i` is element `i`
    Run(&'a [T]),
    /// any other layout: gathered per block
    Strided(&'a [T], &'a Layout),
}

impl<'a, T: Copy> Src<'a, T> {
    fn of(data: &'a [T], l: &'a Layout) -> Self {
        if l.is_contiguous() {
            Src::Run(&data[l.offset..l.offset + l.numel()])
        } else {
            Src::Strided(data, l)
        }
    }

    /// The operand's elements at positions `start..start + buf.len()`: borrowed, or
    /// gathered into `buf`.
    #[inline(always)]
    fn block<'b>(&'b self, start: usize, buf: &'b mut [T]) -> &'b [T] {
        match *self {
            Src::Run(s) => &s[start..start + buf.len()],
            Src::Strided(data, l) => {
                gather(data, l, start, buf);
                buf
            }
        }
    }
}

/// `out[k]` = the element of `l` at row-major position `start + k`: whole runs of the
/// innermost dim at a time (a fill for a broadcast dim, a copy for a contiguous one).
fn gather<T: Copy>(data: &[T], l: &Layout, start: usize, out: &mut [T]) {
    let nd = l.shape.len();
    if nd == 0 {
        out.fill(data[l.offset]);
        return;
    }
    let (shape, strides) = (&l.shape[..], &l.strides[..]);
    let mut idx: smallvec::SmallVec<[usize; 8]> = smallvec::smallvec![0; nd];
    let mut rem = start;
    let mut off = l.offset;
    for d in (0..nd).rev() {
        idx[d] = rem % shape[d];
        rem /= shape[d];
        off += idx[d] * strides[d];
    }
    let (n_in, s_in) = (shape[nd - 1], strides[nd - 1]);
    let mut pos = 0;
    while pos < out.len() {
        let take = (n_in - idx[nd - 1]).min(out.len() - pos);
        let dst = &mut out[pos..pos + take];
        match s_in {
            0 => dst.fill(data[off]),
            1 => dst.copy_from_slice(&data[off..off + take]),
            s => {
                for (k, o) in dst.iter_mut().enumerate() {
                    *o = data[off + k * s];
                }
            }
        }
        pos += take;
        idx[nd - 1] += take;
        off += take * s_in;
        if idx[nd - 1] < n_in {
            continue;
        }
        // the row is done: carry into the outer dims
        off -= n_in * s_in;
        idx[nd - 1] = 0;
        for d in (0..nd - 1).rev() {
            idx[d] += 1;
            off += strides[d];
            if idx[d] < shape[d] {
                break;
            }
            off -= shape[d] * strides[d];
            idx[d] = 0;
        }
    }
}

/// An elementwise function of three elements, inlined into [`run`]'s loop (lerp with a
/// number weight ignores the third).
trait Map<T, const N: usize>: Copy + Sync {
    fn f(self, x: [T; N]) -> T;
}

/// How [`run`] reads one operand along a run of the output: element by element, or one
/// element throughout (a dim broadcast along the run). A type each, so that each pattern
/// is its own loop, which vectorises as the plain one does.
trait Lane<'a, T: Copy>: Copy {
    /// The operand's run of `len` elements from column `col` of its row at `data[row]`
    /// (`One`: the row's one element, `data[row]`).
    fn new(data: &'a [T], row: usize, col: usize, len: usize) -> Self;
    /// The run cut to `n` elements (so that the loop's bound is the slice's length, and
    /// its index checks go).
    fn fit(self, n: usize) -> Self;
    fn get(self, k: usize) -> T;
}

#[derive(Clone, Copy)]
struct Each<'a, T>(&'a [T]);
impl<'a, T: Copy> Lane<'a, T> for Each<'a, T> {
    #[inline(always)]
    fn new(data: &'a [T], row: usize, col: usize, len: usize) -> Self {
        Each(&data[row + col..row + col + len])
    }
    #[inline(always)]
    fn fit(self, n: usize) -> Self {
        Each(&self.0[..n])
    }
    #[inline(always)]
    fn get(self, k: usize) -> T {
        self.0[k]
    }
}

#[derive(Clone, Copy)]
struct One<T>(T);
impl<'a, T: Copy> Lane<'a, T> for One<T> {
    #[inline(always)]
    fn new(data: &'a [T], row: usize, _col: usize, _len: usize) -> Self {
        One(data[row])
    }
    #[inline(always)]
    fn fit(self, _n: usize) -> Self {
        self
    }
    #[inline(always)]
    fn get(self, _k: usize) -> T {
        self.0
    }
}

/// `out[k] = m.f([a[k], b[k], c[k]])`: the one loop of every path.
#[inline(always)]
fn run<'a, T: Copy, M: Map<T, 3>, A: Lane<'a, T>, B: Lane<'a, T>, C: Lane<'a, T>>(
    out: &mut [MaybeUninit<T>],
    (a, b, c): (A, B, C),
    m: M,
) {
    let n = out.len();
    let (a, b, c) = (a.fit(n), b.fit(n), c.fit(n));
    for (k, o) in out.iter_mut().enumerate() {
        o.write(m.f([a.get(k), b.get(k), c.get(k)]));
    }
}

/// [`run`] over three slices, built for the CPU's width.
struct Slices<'a, T, M> {
    out: &'a mut [MaybeUninit<T>],
    x: [&'a [T]; 3],
    m: M,
}

impl<T: Copy, M: Map<T, 3>> Kernel for Slices<'_, T, M> {
    type Out = ();
    #[inline(always)]
    fn run(self) {
        let [a, b, c] = self.x;
        run(self.out, (Each(a), Each(b), Each(c)), self.m);
    }
}

/// Rows at least this long take the row path (below, per-row bookkeeping costs more than
/// gathering).
const MIN_ROW: usize = 8;
/// Outer dims the row path walks (more: the block path).
const MAX_OUTER: usize = 7;

/// `m` over three operands (layouts broadcast to one shape of `n` elements), row-major:
/// - every operand contiguous: one loop over plain slices per chunk;
/// - every operand contiguous or broadcast along the innermost dim (a bias, addr's
///   vectors): row by row, each operand a slice or one element of its row
///   ([`ChunkRows`]): gathering addr's two vectors per block cost as much as the
///   arithmetic (a 2048² float32 addr: 1.31 ms against torch's 0.44 on 2 threads);
/// - else blocks, the other operands gathered.
fn map<T: Element, M: Map<T, 3>>(m: M, srcs: [Src<'_, T>; 3], n: usize) -> Vec<T> {
    if srcs.iter().all(|s| matches!(s, Src::Run(_))) {
        return fill_chunks(n, |start, out| {
            let x = std::array::from_fn(|j| match srcs[j] {
                Src::Run(d) => &d[start..start + out.len()],
                Src::Strided(..) => &[][..],
            });
            wide_kernel(Slices { out, x, m });
        });
    }
    if n > 0
        && let Some(rows) = Rows::of(&srcs, n)
    {
        return rows.map(m, n);
    }
    fill_chunks(n, |start, out| {
        let mut bufs = [[T::default(); BLOCK]; 3];
        for (k, o) in out.chunks_mut(BLOCK).enumerate() {
            let s = start + k * BLOCK;
            let len = o.len();
            let mut it = bufs.iter_mut();
            let x: [&[T]; 3] = std::array::from_fn(|j| {
                let buf = it.next().map_or(&mut [][..], |b| &mut b[..len]);
                srcs[j].block(s, buf)
            });
            wide_kernel(Slices { out: o, x, m });
        }
    })
}

/// Operands walked row by row (see [`map`]): the innermost dim is the row; each operand
/// is read along it contiguously, or is one element repeated (stride 0).
struct Rows<'a, T> {
    data: [&'a [T]; 3],
    /// each operand's first element
    offset: [usize; 3],
    /// each operand's strides over the outer dims (the first `nd`)
    strides: [[usize; MAX_OUTER]; 3],
    /// the outer dims' sizes (the first `nd`)
    outer: [usize; MAX_OUTER],
    nd: usize,
    /// bit `j`: operand `j` has stride 0 along the row
    splat: u8,
    inner: usize,
}

impl<'a, T: Element> Rows<'a, T> {
    /// `None` where every operand is contiguous (the block path reads them in place), a
    /// row is short, or some operand's innermost stride is neither 0 nor 1.
    fn of(srcs: &[Src<'a, T>; 3], n: usize) -> Option<Self> {
        let shape = srcs.iter().find_map(|s| match s {
            Src::Strided(_, l) => Some(&l.shape),
            Src::Run(_) => None,
        })?;
        let constant = |l: &Layout| l.strides.iter().all(|&s| s == 0);
        if srcs.iter().all(|s| match s {
            Src::Strided(_, l) => constant(l),
            Src::Run(_) => true,
        }) {
            // contiguous operands and numbers (lerp's weight): one row of everything
            let mut splat = 0u8;
            let mut data: [&[T]; 3] = [&[]; 3];
            let mut offset = [0; 3];
            for (j, s) in srcs.iter().enumerate() {
                match *s {
                    Src::Run(d) => data[j] = d,
                    Src::Strided(d, l) => {
                        splat |= 1 << j;
                        data[j] = d;
                        offset[j] = l.offset;
                    }
                }
            }
            return Some(Rows {
                data,
                offset,
                strides: [[0; MAX_OUTER]; 3],
                outer: [0; MAX_OUTER],
                nd: 0,
                splat,
                inner: n,
            });
        }
        let (&inner, outer) = shape.split_last()?;
        if outer.len() > MAX_OUTER {
            return None;
        }
        if inner < MIN_ROW {
            return None;
        }
        let nd = outer.len();
        // a contiguous operand's strides over the outer dims
        let mut row_major = [0; MAX_OUTER];
        let mut step = inner;
        for d in (0..nd).rev() {
            row_major[d] = step;
            step *= outer[d];
        }
        let mut splat = 0u8;
        let mut data: [&[T]; 3] = [&[]; 3];
        let mut offset = [0; 3];
        let mut strides = [[0; MAX_OUTER]; 3];
        for (j, s) in srcs.iter().enumerate() {
            match *s {
                Src::Run(d) => {
                    data[j] = d;
                    strides[j] = row_major;
                }
                Src::Strided(d, l) => {
                    let (&s_in, s_out) = l.strides.split_last()?;
                    if s_in > 1 {
                        return None;
                    }
                    if s_in == 0 {
                        splat |= 1 << j;
                    }
                    data[j] = d;
                    offset[j] = l.offset;
                    strides[j][..nd].copy_from_slice(s_out);
                }
            }
        }
        let mut sizes = [0; MAX_OUTER];
        sizes[..nd].copy_from_slice(outer);
        Some(Rows {
            data,
            offset,
            strides,
            outer: sizes,
            nd,
            splat,
            inner,
        })
    }

    /// The output, in chunks on the pool; each chunk from a row's middle to another's,
    /// walked by one [`ChunkRows`] (the loop built for the chunk's broadcast pattern).
    fn map<M: Map<T, 3>>(&self, m: M, n: usize) -> Vec<T> {
        fill_chunks(n, |start, out| {
            macro_rules! go {
                ($a:ident, $b:ident, $c:ident) => {
                    wide_kernel(ChunkRows::<T, M, $a<_>, $b<_>, $c<_>> {
                        rows: self,
                        out,
                        start,
                        m,
                        lanes: std::marker::PhantomData,
                    })
                };
            }
            match self.splat {
                0 => go!(Each, Each, Each),
                1 => go!(One, Each, Each),
                2 => go!(Each, One, Each),
                3 => go!(One, One, Each),
                4 => go!(Each, Each, One),
                5 => go!(One, Each, One),
                6 => go!(Each, One, One),
                _ => go!(One, One, One),
            }
        })
    }
}

/// The rows of one chunk of the output (`out`, from position `start`), each operand read
/// as its lane type `A`, `B`, `C` says: per row only the operands' offsets advance (a
/// call per row cost more than the arithmetic of a 256-element row).
struct ChunkRows<'r, 'a, T, M, A, B, C> {
    rows: &'r Rows<'a, T>,
    out: &'r mut [MaybeUninit<T>],
    start: usize,
    m: M,
    lanes: std::marker::PhantomData<(A, B, C)>,
}

impl<'r, 'a: 'r, T: Element, M: Map<T, 3>, A: Lane<'r, T>, B: Lane<'r, T>, C: Lane<'r, T>> Kernel
    for ChunkRows<'r, 'a, T, M, A, B, C>
{
    type Out = ();
    #[inline(always)]
    fn run(self) {
        let Rows {
            data,
            offset,
            strides,
            outer,
            nd,
            inner,
            ..
        } = self.rows;
        let (inner, nd, m) = (*inner, *nd, self.m);
        // the multi-index of the chunk's first row over the outer dims, and each
        // operand's offset of that row
        let mut idx = [0usize; MAX_OUTER];
        let mut r = self.start / inner;
        for d in (0..nd).rev() {
            idx[d] = r % outer[d];
            r /= outer[d];
        }
        let mut offs: [usize; 3] = std::array::from_fn(|j| {
            offset[j] + (0..nd).map(|d| idx[d] * strides[j][d]).sum::<usize>()
        });
        // the innermost outer dim's steps, taken every row
        let last = nd.wrapping_sub(1);
        let step: [usize; 3] = std::array::from_fn(|j| if nd > 0 { strides[j][last] } else { 0 });
        let mut col = self.start % inner;
        let out = self.out;
        let mut done = 0;
        while done < out.len() {
            let take = (inner - col).min(out.len() - done);
            let lanes = (
                A::new(data[0], offs[0], col, take),
                B::new(data[1], offs[1], col, take),
                C::new(data[2], offs[2], col, take),
            );
            run(&mut out[done..done + take], lanes, m);
            done += take;
            col = 0;
            if done == out.len() || nd == 0 {
                break;
            }
            // the next row: a step along the last outer dim, a carry at its end
            idx[last] += 1;
            for j in 0..3 {
                offs[j] += step[j];
            }
            let mut d = last;
            while idx[d] == outer[d] && d > 0 {
                for j in 0..3 {
                    offs[j] = offs[j] - outer[d] * strides[j][d] + strides[j][d - 1];
                }
                idx[d] = 0;
                d -= 1;
                idx[d] += 1;
            }
        }
    }
}

/// A number as the kernel's dtype (`Scalar::to<scalar_t>()`: floats round, integers
/// truncate toward zero; the op layer has refused what does not fit).
trait FromScalar: Sized {
    fn from_scalar(s: Scalar) -> Self;
}
impl FromScalar for f32 {
    fn from_scalar(s: Scalar) -> f32 {
        match s {
            Scalar::Int(i) => i as f32,
            _ => s.as_f64() as f32,
        }
    }
}
impl FromScalar for f64 {
    fn from_scalar(s: Scalar) -> f64 {
        match s {
            Scalar::Int(i) => i as f64,
            _ => s.as_f64(),
        }
    }
}
impl FromScalar for i64 {
    fn from_scalar(s: Scalar) -> i64 {
        match s {
            Scalar::Int(i) => i,
            Scalar::Bool(b) => i64::from(b),
            _ => s.as_f64() as i64,
        }
    }
}
impl FromScalar for bool {
    fn from_scalar(s: Scalar) -> bool {
        s.as_f64() != 0.0
    }
}

macro_rules! float_maps {
    ($($t:ty),*) => {$(
        impl Map<$t, 3> for Addcmul<$t> {
            #[inline(always)]
            fn f(self, [a, b, c]: [$t; 3]) -> $t {
                (self.0 * b).mul_add(c, a)
            }
        }
        impl Map<$t, 3> for Addcdiv<$t> {
            #[inline(always)]
            fn f(self, [a, b, c]: [$t; 3]) -> $t {
                a + (self.0 * b) / c
            }
        }
        impl Map<$t, 3> for LerpW {
            #[inline(always)]
            fn f(self, [a, b, w]: [$t; 3]) -> $t {
                let low = w.abs() < 0.5;
                let coeff = if low { w } else { w - 1.0 };
                let base = if low { a } else { b };
                coeff.mul_add(b - a, base)
            }
        }
        impl Map<$t, 3> for Addr<$t> {
            #[inline(always)]
            fn f(self, [a, b, c]: [$t; 3]) -> $t {
                (self.alpha * b).mul_add(c, self.beta * a)
            }
        }
        impl Map<$t, 3> for AddrNoSelf<$t> {
            #[inline(always)]
            fn f(self, [_a, b, c]: [$t; 3]) -> $t {
                (self.0 * b) * c
            }
        }
    )*};
}

#[derive(Clone, Copy)]
struct Addcmul<T>(T);
#[derive(Clone, Copy)]
struct Addcdiv<T>(T);
#[derive(Clone, Copy)]
struct LerpW;
#[derive(Clone, Copy)]
struct Addr<T> {
    beta: T,
    alpha: T,
}
#[derive(Clone, Copy)]
struct AddrNoSelf<T>(T);

float_maps!(f32, f64);

impl Map<i64, 3> for Addcmul<i64> {
    #[inline(always)]
    fn f(self, [a, b, c]: [i64; 3]) -> i64 {
        a.wrapping_add(self.0.wrapping_mul(b).wrapping_mul(c))
    }
}
impl Map<i64, 3> for Addr<i64> {
    #[inline(always)]
    fn f(self, [a, b, c]: [i64; 3]) -> i64 {
        self.beta
            .wrapping_mul(a)
            .wrapping_add(self.alpha.wrapping_mul(b).wrapping_mul(c))
    }
}
impl Map<i64, 3> for AddrNoSelf<i64> {
    #[inline(always)]
    fn f(self, [_a, b, c]: [i64; 3]) -> i64 {
        self.0.wrapping_mul(b).wrapping_mul(c)
    }
}
impl Map<bool, 3> for Addr<bool> {
    #[inline(always)]
    fn f(self, [a, b, c]: [bool; 3]) -> bool {
        (self.beta & a) | (self.alpha & b & c)
    }
}

/// The three operands of one dtype, broadcast to one shape.
fn srcs<'a, T: Element>(ops: [(&'a Buffer, &'a Layout); 3]) -> [Src<'a, T>; 3] {
    ops.map(|(b, l)| Src::of(T::slice(b), l))
}

/// `op` over `a`, `b` and `c` (one dtype; layouts broadcast to the output's shape),
/// row-major. `None` for a dtype `op` has no kernel for (the op layer refuses those with
/// torch's messages first).
pub fn fused3(
    op: Fused3,
    a: &Buffer,
    la: &Layout,
    b: &Buffer,
    lb: &Layout,
    c: &Buffer,
    lc: &Layout,
) -> Option<Buffer> {
    let n = la.numel();
    let ops = [(a, la), (b, lb), (c, lc)];
    macro_rules! float {
        ($t:ty, $wrap:ident) => {{
            let [sa, sb, sc] = srcs::<$t>(ops);
            let v = match op {
                Fused3::Addcmul(v) => map(Addcmul(<$t>::from_scalar(v)), [sa, sb, sc], n),
                Fused3::Addcdiv(v) => map(Addcdiv(<$t>::from_scalar(v)), [sa, sb, sc], n),
                Fused3::Lerp => map(LerpW, [sa, sb, sc], n),
                Fused3::Addr { beta, alpha } => {
                    let (beta, alpha) = (<$t>::from_scalar(beta), <$t>::from_scalar(alpha));
                    if beta == 0.0 {
                        map(AddrNoSelf(alpha), [sa, sb, sc], n)
                    } else {
                        map(Addr { beta, alpha }, [sa, sb, sc], n)
                    }
                }
            };
            Buffer::$wrap(v.into())
        }};
    }
    Some(match (a, op) {
        (Buffer::F32(_), _) => float!(f32, F32),
        (Buffer::F64(_), _) => float!(f64, F64),
        (Buffer::I64(_), Fused3::Addcmul(v)) => {
            let [sa, sb, sc] = srcs::<i64>(ops);
            Buffer::I64(map(Addcmul(i64::from_scalar(v)), [sa, sb, sc], n).into())
        }
        (Buffer::I64(_), Fused3::Addr { beta, alpha }) => {
            let [sa, sb, sc] = srcs::<i64>(ops);
            let (beta, alpha) = (i64::from_scalar(beta), i64::from_scalar(alpha));
            Buffer::I64(
                if beta == 0 {
                    map(AddrNoSelf(alpha), [sa, sb, sc], n)
                } else {
                    map(Addr { beta, alpha }, [sa, sb, sc], n)
                }
                .into(),
            )
        }
        (Buffer::Bool(_), Fused3::Addr { beta, alpha }) => {
            let [sa, sb, sc] = srcs::<bool>(ops);
            let (beta, alpha) = (bool::from_scalar(beta), bool::from_scalar(alpha));
            Buffer::Bool(map(Addr { beta, alpha }, [sa, sb, sc], n).into())
        }
        _ => return None,
    })
}

/// `fma(coeff, b - a, a)` (`LOW`) or `fma(coeff, b - a, b)`.
#[derive(Clone, Copy)]
struct LerpS<T, const LOW: bool>(T);
macro_rules! lerp_maps {
    ($($t:ty),*) => {$(
        impl<const LOW: bool> Map<$t, 3> for LerpS<$t, LOW> {
            #[inline(always)]
            fn f(self, [a, b, _]: [$t; 3]) -> $t {
                self.0.mul_add(b - a, if LOW { a } else { b })
            }
        }
    )*};
}
lerp_maps!(f32, f64);

/// `lerp(a, b, weight)` with a number weight (rounded to the dtype): the end to start
/// from is chosen once. Float buffers of one dtype, layouts broadcast to the output's
/// shape; `None` otherwise.
pub fn lerp_scalar(
    a: &Buffer,
    la: &Layout,
    b: &Buffer,
    lb: &Layout,
    weight: Scalar,
) -> Option<Buffer> {
    let n = la.numel();
    let nothing = Layout {
        shape: la.shape.clone(),
        strides: smallvec::smallvec![0; la.shape.len()],
        offset: 0,
    };
    macro_rules! go {
        ($t:ty, $wrap:ident) => {{
            let w = <$t>::from_scalar(weight);
            // (the third operand, unused: one element broadcast, read by no loop)
            let unused = [w];
            let srcs = [
                Src::of(<$t>::slice(a), la),
                Src::of(<$t>::slice(b), lb),
                Src::Strided(&unused[..], &nothing),
            ];
            let v = if w.abs() < 0.5 {
                map(LerpS::<$t, true>(w), srcs, n)
            } else {
                map(LerpS::<$t, false>(w - 1.0), srcs, n)
            };
            Buffer::$wrap(v.into())
        }};
    }
    Some(match (a, b) {
        (Buffer::F32(_), Buffer::F32(_)) => go!(f32, F32),
        (Buffer::F64(_), Buffer::F64(_)) => go!(f64, F64),
        _ => return None,
    })
}

// ---- nan_to_num -------------------------------------------------------------------------

/// `nan_to_num`'s map: NaN, +inf and -inf replaced (the other two operands unused).
#[derive(Clone, Copy)]
struct NanToNum<T> {
    nan: T,
    posinf: T,
    neginf: T,
}

macro_rules! nan_to_num_map {
    ($($t:ty),*) => {$(
        impl Map<$t, 3> for NanToNum<$t> {
            #[inline(always)]
            fn f(self, [x, _, _]: [$t; 3]) -> $t {
                // (selects, so that the loop vectorises)
                let y = if x == <$t>::INFINITY { self.posinf } else { x };
                let y = if x == <$t>::NEG_INFINITY { self.neginf } else { y };
                if x.is_nan() { self.nan } else { y }
            }
        }
    )*};
}
nan_to_num_map!(f32, f64);

/// `nan_to_num(x)`: NaN, +inf and -inf replaced by the numbers (rounded to the dtype, as
/// torch converts them; a float32 beyond its range is inf), every other element kept.
/// Float buffers; `None` otherwise.
pub fn nan_to_num(x: &Buffer, lx: &Layout, nan: f64, posinf: f64, neginf: f64) -> Option<Buffer> {
    let n = lx.numel();
    let nothing = Layout {
        shape: lx.shape.clone(),
        strides: smallvec::smallvec![0; lx.shape.len()],
        offset: 0,
    };
    macro_rules! go {
        ($t:ty, $wrap:ident, $d:expr) => {{
            let m = NanToNum {
                nan: nan as $t,
                posinf: posinf as $t,
                neginf: neginf as $t,
            };
            let unused = [m.nan];
            let srcs = [
                Src::of(&$d[..], lx),
                Src::Strided(&unused[..], &nothing),
                Src::Strided(&unused[..], &nothing),
            ];
            Buffer::$wrap(map(m, srcs, n).into())
        }};
    }
    Some(match x {
        Buffer::F32(d) => go!(f32, F32, d),
        Buffer::F64(d) => go!(f64, F64, d),
        _ => return None,
    })
}

// ---- in place -------------------------------------------------------------------------

/// One chunk of an in-place map: `out[k] = m.f([out[k], b[k], c[k]])`.
struct InPlace<'a, T, M, B, C> {
    out: &'a mut [T],
    b: B,
    c: C,
    m: M,
}

impl<'a, T: Copy, M: Map<T, 3>, B: Lane<'a, T>, C: Lane<'a, T>> Kernel for InPlace<'a, T, M, B, C> {
    type Out = ();
    #[inline(always)]
    fn run(self) {
        let n = self.out.len();
        let (b, c, m) = (self.b.fit(n), self.c.fit(n), self.m);
        for (k, o) in self.out.iter_mut().enumerate() {
            *o = m.f([*o, b.get(k), c.get(k)]);
        }
    }
}

/// An operand of an in-place map over `n` positions: contiguous (`Some(false)`), one
/// element broadcast everywhere (`Some(true)`), or neither (`None`).
fn in_place_kind(l: &Layout, n: usize) -> Option<bool> {
    if l.strides.iter().all(|&s| s == 0) {
        Some(true)
    } else if l.is_contiguous() && l.numel() == n {
        Some(false)
    } else {
        None
    }
}

/// `m` over `dst` (contiguous) in place, `b` and `c` each contiguous or one element.
fn map_in_place<T: Element, M: Map<T, 3>>(
    m: M,
    dst: &mut [T],
    (b, lb): (&[T], &Layout),
    (c, lc): (&[T], &Layout),
) -> bool {
    let n = dst.len();
    let (Some(kb), Some(kc)) = (in_place_kind(lb, n), in_place_kind(lc, n)) else {
        return false;
    };
    super::elementwise::for_chunks_in_place(dst, |start, out| {
        let len = out.len();
        macro_rules! go {
            ($b:ident, $c:ident) => {
                wide_kernel(InPlace {
                    out,
                    b: $b::new(b, lb.offset, start, len),
                    c: $c::new(c, lc.offset, start, len),
                    m,
                })
            };
        }
        match (kb, kc) {
            (false, false) => go!(Each, Each),
            (true, false) => go!(One, Each),
            (false, true) => go!(Each, One),
            (true, true) => go!(One, One),
        }
    });
    true
}

/// `dst = op(dst, b, c)` in place (an optimiser's `v.addcmul_(g, g, value=...)`), one
/// pass where the out-of-place op and the copy back took three: `dst` contiguous, `b`
/// and `c` of its dtype, each contiguous over `dst`'s shape or one element broadcast
/// (the same bits as [`fused3`]). False, touching nothing, in any other case.
pub fn fused3_in_place(
    op: Fused3,
    dst: &mut Buffer,
    ld: &Layout,
    b: &Buffer,
    lb: &Layout,
    c: &Buffer,
    lc: &Layout,
) -> bool {
    if !ld.is_contiguous() {
        return false;
    }
    let n = ld.numel();
    if n == 0 {
        return true;
    }
    let range = ld.offset..ld.offset + n;
    macro_rules! float {
        ($t:ty, $d:expr, $b:expr, $c:expr) => {{
            let (d, b, c) = (&mut $d[range], ($b, lb), ($c, lc));
            match op {
                Fused3::Addcmul(v) => map_in_place(Addcmul(<$t>::from_scalar(v)), d, b, c),
                Fused3::Addcdiv(v) => map_in_place(Addcdiv(<$t>::from_scalar(v)), d, b, c),
                Fused3::Lerp => map_in_place(LerpW, d, b, c),
                // (addr's self is the product's shape, its vectors are not)
                Fused3::Addr { .. } => false,
            }
        }};
    }
    match (dst, b, c) {
        (Buffer::F32(d), Buffer::F32(b), Buffer::F32(c)) => float!(f32, d, &b[..], &c[..]),
        (Buffer::F64(d), Buffer::F64(b), Buffer::F64(c)) => float!(f64, d, &b[..], &c[..]),
        _ => false,
    }
}

/// [`lerp_scalar`] in place: `dst` contiguous, `b` of its dtype contiguous over `dst`'s
/// shape or one element. False, touching nothing, otherwise.
pub fn lerp_scalar_in_place(
    dst: &mut Buffer,
    ld: &Layout,
    b: &Buffer,
    lb: &Layout,
    weight: Scalar,
) -> bool {
    if !ld.is_contiguous() {
        return false;
    }
    let n = ld.numel();
    if n == 0 {
        return true;
    }
    let range = ld.offset..ld.offset + n;
    let nothing = Layout {
        shape: ld.shape.clone(),
        strides: smallvec::smallvec![0; ld.shape.len()],
        offset: 0,
    };
    macro_rules! go {
        ($t:ty, $d:expr, $b:expr) => {{
            let w = <$t>::from_scalar(weight);
            let unused = [w];
            let (d, b, c) = (&mut $d[range], (&$b[..], lb), (&unused[..], &nothing));
            if w.abs() < 0.5 {
                map_in_place(LerpS::<$t, true>(w), d, b, c)
            } else {
                map_in_place(LerpS::<$t, false>(w - 1.0), d, b, c)
            }
        }};
    }
    match (dst, b) {
        (Buffer::F32(d), Buffer::F32(b)) => go!(f32, d, b),
        (Buffer::F64(d), Buffer::F64(b)) => go!(f64, d, b),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::strided::to_vec;

    /// Layouts over a buffer of 4 * 5 * 6 elements: contiguous, transposed, narrowed,
    /// broadcast (stride-0 dims) and offset.
    fn layouts() -> Vec<Layout> {
        let base = Layout::contiguous(&[4, 5, 6]);
        let mut v = vec![
            base.clone(),
            base.transpose(0, 2).unwrap(),
            base.permute(&[1, 2, 0]).unwrap(),
            base.narrow(2, 1, 4).unwrap(),
            base.narrow(0, 1, 2).unwrap().transpose(1, 2).unwrap(),
        ];
        let row = Layout::contiguous(&[6]);
        v.push(row.expand(&[4, 5, 6]).unwrap());
        let col = Layout {
            shape: smallvec::smallvec![4, 1, 1],
            strides: smallvec::smallvec![7, 1, 1],
            offset: 3,
        };
        v.push(col.expand(&[4, 5, 6]).unwrap());
        v.push(Layout {
            shape: smallvec::smallvec![],
            strides: smallvec::smallvec![],
            offset: 11,
        });
        v
    }

    #[test]
    fn gather_walks_any_layout_from_any_start() {
        let data: Vec<f64> = (0..120).map(f64::from).collect();
        for l in layouts() {
            let want = to_vec(&data, &l);
            let n = want.len();
            for start in 0..n {
                for len in [1, 2, 5, 6, 7, 13, n - start] {
                    let len = len.min(n - start);
                    let mut out = vec![-1.0; len];
                    gather(&data, &l, start, &mut out);
                    assert_eq!(out, want[start..start + len], "{l:?} {start} {len}");
                }
            }
        }
    }

    #[test]
    fn every_layout_gives_the_contiguous_bits() {
        // the same values laid out differently give the same result, at sizes across
        // blocks and the parallel threshold
        for &n in &[1usize, 511, 512, 513, 70_001] {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let c: Vec<f32> = (0..n)
                .map(|i| 0.5 + (i as f32 * 0.07).sin() * 0.6)
                .collect();
            let l = Layout::contiguous(&[n]);
            // b stored reversed-interleaved: every element at twice its index
            let mut b2 = vec![0.0f32; 2 * n];
            for (i, &v) in b.iter().enumerate() {
                b2[2 * i] = v;
            }
            let l2 = Layout {
                shape: smallvec::smallvec![n],
                strides: smallvec::smallvec![2],
                offset: 0,
            };
            let (ba, bb, bc) = (
                Buffer::F32(a.clone().into()),
                Buffer::F32(b.clone().into()),
                Buffer::F32(c.clone().into()),
            );
            let bb2 = Buffer::F32(b2.into());
            for op in [
                Fused3::Addcmul(Scalar::Float(0.3)),
                Fused3::Addcdiv(Scalar::Int(-2)),
                Fused3::Lerp,
                Fused3::Addr {
                    beta: Scalar::Float(0.5),
                    alpha: Scalar::Int(3),
                },
            ] {
                let x = fused3(op, &ba, &l, &bb, &l, &bc, &l).unwrap();
                let y = fused3(op, &ba, &l, &bb2, &l2, &bc, &l).unwrap();
                let (Buffer::F32(x), Buffer::F32(y)) = (&x, &y) else {
                    panic!("dtype")
                };
                assert!(
                    x.iter()
                        .zip(y.iter())
                        .all(|(p, q)| p.to_bits() == q.to_bits())
                );
                // and each element is the formula's
                for i in (0..n).step_by(97) {
                    let (p, q, r) = (a[i], b[i], c[i]);
                    let want = match op {
                        Fused3::Addcmul(_) => (0.3f32 * q).mul_add(r, p),
                        Fused3::Addcdiv(_) => p + (-2.0f32 * q) / r,
                        Fused3::Lerp if r.abs() < 0.5 => r.mul_add(q - p, p),
                        Fused3::Lerp => (r - 1.0).mul_add(q - p, q),
                        Fused3::Addr { .. } => (3.0f32 * q).mul_add(r, 0.5 * p),
                    };
                    assert_eq!(x[i].to_bits(), want.to_bits(), "{op:?} {i}");
                }
            }
            let w = lerp_scalar(&ba, &l, &bb, &l, Scalar::Float(0.75)).unwrap();
            let Buffer::F32(w) = &w else { panic!("dtype") };
            for i in 0..n {
                let want = (0.75f32 - 1.0).mul_add(b[i] - a[i], b[i]);
                assert_eq!(w[i].to_bits(), want.to_bits());
            }
        }
    }

    #[test]
    fn broadcast_rows_give_the_materialised_bits() {
        // operands broadcast along the row (stride 0), along the outer dims, or both, over
        // shapes whose rows are short (the gather path) or long (the row path), the output
        // split mid-row across chunks
        for shape in [
            vec![300usize, 257],
            vec![3, 5, 7],
            vec![2, 300, 129],
            vec![40, 4],
        ] {
            let n: usize = shape.iter().product();
            let nd = shape.len();
            let full = Layout::contiguous(&shape);
            let vals = |seed: f64, len: usize| -> Vec<f64> {
                (0..len)
                    .map(|i| ((i as f64 + seed) * 0.7316).sin())
                    .collect()
            };
            // a column (one element per row) and a row (one element per column), offset
            let col = Layout {
                shape: shape[..nd - 1].iter().copied().chain([1]).collect(),
                strides: Layout::contiguous(&shape[..nd - 1])
                    .strides
                    .iter()
                    .copied()
                    .chain([1])
                    .collect(),
                offset: 2,
            };
            let row = Layout {
                shape: smallvec::smallvec![shape[nd - 1]],
                strides: smallvec::smallvec![1],
                offset: 1,
            };
            let (lc, lr) = (col.expand(&shape).unwrap(), row.expand(&shape).unwrap());
            let a = Buffer::F64(vals(0.0, n).into());
            let c_data = vals(1.0, n / shape[nd - 1] + 2);
            let r_data = vals(2.0, shape[nd - 1] + 1);
            let (bc, br) = (
                Buffer::F64(c_data.clone().into()),
                Buffer::F64(r_data.clone().into()),
            );
            let mat = |data: &[f64], l: &Layout| Buffer::F64(to_vec(data, l).into());
            let (mc, mr) = (mat(&c_data, &lc), mat(&r_data, &lr));
            for op in [
                Fused3::Addcmul(Scalar::Float(0.3)),
                Fused3::Addr {
                    beta: Scalar::Float(0.5),
                    alpha: Scalar::Int(3),
                },
                Fused3::Lerp,
            ] {
                for (x, y) in [
                    (
                        fused3(op, &a, &full, &bc, &lc, &br, &lr),
                        fused3(op, &a, &full, &mc, &full, &mr, &full),
                    ),
                    (
                        fused3(op, &br, &lr, &a, &full, &bc, &lc),
                        fused3(op, &mr, &full, &a, &full, &mc, &full),
                    ),
                    (
                        fused3(op, &bc, &lc, &br, &lr, &bc, &lc),
                        fused3(op, &mc, &full, &mr, &full, &mc, &full),
                    ),
                ] {
                    let (Some(Buffer::F64(x)), Some(Buffer::F64(y))) = (x, y) else {
                        panic!("dtype")
                    };
                    assert!(
                        x.iter()
                            .zip(y.iter())
                            .all(|(p, q)| p.to_bits() == q.to_bits()),
                        "{op:?} {shape:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn integer_and_bool_kernels_wrap_and_refuse_what_torch_refuses() {
        let l = Layout::contiguous(&[2]);
        let x = Buffer::I64(vec![i64::MAX, 3].into());
        let y = Buffer::I64(vec![2, -4].into());
        let Some(Buffer::I64(v)) =
            fused3(Fused3::Addcmul(Scalar::Float(1.9)), &x, &l, &y, &l, &y, &l)
        else {
            panic!("no int kernel")
        };
        assert_eq!(&v[..], &[i64::MAX.wrapping_add(4), 19]);
        assert!(fused3(Fused3::Lerp, &x, &l, &y, &l, &y, &l).is_none());
        assert!(fused3(Fused3::Addcdiv(Scalar::Int(1)), &x, &l, &y, &l, &y, &l).is_none());
        let b = Buffer::Bool(vec![true, false].into());
        let Some(Buffer::Bool(v)) = fused3(
            Fused3::Addr {
                beta: Scalar::Bool(false),
                alpha: Scalar::Bool(true),
            },
            &b,
            &l,
            &b,
            &l,
            &b,
            &l,
        ) else {
            panic!("no bool kernel")
        };
        assert_eq!(&v[..], &[true, false]);
        assert!(fused3(Fused3::Addcmul(Scalar::Int(1)), &b, &l, &b, &l, &b, &l).is_none());
    }
}
