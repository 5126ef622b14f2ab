//! Scatter-family kernels: the elements of a source written (or added) along a dim at
//! the positions an index gives (scatter, scatter_add, scatter with a number, gather's
//! backward), and whole slices along a dim (index_add, index_copy, index_fill,
//! index_select's backward). The result is a row-major copy of the destination (or
//! zeros) with the writes applied in the order of ATen's CPU loops: along the dim in
//! index order, so of repeated positions the last write wins and additions run in that
//! order. The pieces on the pool split the positions of the other dims, which no two
//! index elements along the dim share with another piece: no bit depends on the split.

use super::reduce::par;
use super::strided::offsets;
use crate::layout::Layout;
use crate::shape::contiguous_strides;
use crate::storage::{Buffer, Element};
use std::ops::Range;

/// How an added element joins the one there: the dtype's `+` in torch (integers wrap,
/// bools `or`). A float sum is rounded once, as before through f64 (two float32 summed
/// in f64 and rounded again give the float32 sum: 53 >= 2 x 24 + 2 bits).
pub(crate) trait Acc: Element {
    fn acc(a: Self, b: Self) -> Self;
    /// scatter_reduce's "prod": the dtype's `*` (integers wrap, bools `and`).
    fn prod(a: Self, b: Self) -> Self;
    /// "amax": the source where it is NaN, else `std::max(a, b)` (the first on a tie or
    /// where `a` is NaN: a NaN stays), as ATen's ReduceMaximum.
    fn amax(a: Self, b: Self) -> Self;
    /// "amin": as `amax`, `std::min(a, b)`.
    fn amin(a: Self, b: Self) -> Self;
}
macro_rules! float_acc {
    ($t:ty) => {
        impl Acc for $t {
            #[inline(always)]
            fn acc(a: $t, b: $t) -> $t {
                a + b
            }
            #[inline(always)]
            fn prod(a: $t, b: $t) -> $t {
                a * b
            }
            #[inline(always)]
            fn amax(a: $t, b: $t) -> $t {
                if b.is_nan() || a < b { b } else { a }
            }
            #[inline(always)]
            fn amin(a: $t, b: $t) -> $t {
                if b.is_nan() || b < a { b } else { a }
            }
        }
    };
}
float_acc!(f32);
float_acc!(f64);
impl Acc for i64 {
    #[inline(always)]
    fn acc(a: i64, b: i64) -> i64 {
        a.wrapping_add(b)
    }
    #[inline(always)]
    fn prod(a: i64, b: i64) -> i64 {
        a.wrapping_mul(b)
    }
    #[inline(always)]
    fn amax(a: i64, b: i64) -> i64 {
        a.max(b)
    }
    #[inline(always)]
    fn amin(a: i64, b: i64) -> i64 {
        a.min(b)
    }
}
impl Acc for bool {
    #[inline(always)]
    fn acc(a: bool, b: bool) -> bool {
        a | b
    }
    #[inline(always)]
    fn prod(a: bool, b: bool) -> bool {
        a & b
    }
    #[inline(always)]
    fn amax(a: bool, b: bool) -> bool {
        a | b
    }
    #[inline(always)]
    fn amin(a: bool, b: bool) -> bool {
        a & b
    }
}

/// How a scattered element joins the one there.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Join {
    Write,
    Add,
    Prod,
    Amax,
    Amin,
}

impl Join {
    #[inline(always)]
    fn apply<T: Acc>(self, e: T, v: T) -> T {
        match self {
            Join::Write => v,
            Join::Add => T::acc(e, v),
            Join::Prod => T::prod(e, v),
            Join::Amax => T::amax(e, v),
            Join::Amin => T::amin(e, v),
        }
    }
    fn of(add: bool) -> Join {
        if add { Join::Add } else { Join::Write }
    }
}

/// An output shared by a kernel's pieces, each writing only elements no other piece
/// touches (here: a position along the dim combined with other-dim positions of its
/// own; in `sort`, a slice's own positions).
pub(super) struct Disjoint<T> {
    ptr: *mut T,
    len: usize,
}

// SAFETY: pieces write disjoint elements (see `row`); the elements are `Send`.
unsafe impl<T: Send> Sync for Disjoint<T> {}

impl<T> Disjoint<T> {
    pub(super) fn new(v: &mut [T]) -> Disjoint<T> {
        Disjoint {
            ptr: v.as_mut_ptr(),
            len: v.len(),
        }
    }
    /// The elements `start..start + len`.
    ///
    /// # Safety
    /// No other piece reads or writes them while the slice lives.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn row(&self, start: usize, len: usize) -> &mut [T] {
        assert!(
            start <= self.len && len <= self.len - start,
            "a write lies in the output (indices checked by the op layer)"
        );
        // SAFETY: in bounds (checked above); exclusive (the caller's promise); the
        // vector outlives every piece.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(start), len) }
    }
    /// Element `i`.
    ///
    /// # Safety
    /// As [`Disjoint::row`].
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn at(&self, i: usize) -> &mut T {
        assert!(i < self.len, "a write lies in the output");
        // SAFETY: in bounds; exclusive (the caller's promise).
        unsafe { &mut *self.ptr.add(i) }
    }
}

/// Runs `f(outer range, inner range)` over pieces of `outer x inner` other-dim
/// positions (`size` along the dim), on the pool above `par::PAR_MIN` elements of
/// `work`: whole outer positions where there are enough of them, else runs of inner
/// ones (at least 16, and few enough that a piece's columns of the `size` rows stay in
/// L2: 64K elements).
fn split(
    outer: usize,
    size: usize,
    inner: usize,
    work: usize,
    f: &(dyn Fn(Range<usize>, Range<usize>) + Sync),
) {
    let want = 4 * crate::runtime::num_threads().max(1);
    if !par::parallel(work) || outer * inner < 2 {
        return super::wide::wide(|| f(0..outer, 0..inner));
    }
    if outer >= want || outer >= inner.div_ceil(64) {
        let per = outer.div_ceil(want);
        par::tasks(outer.div_ceil(per), true, &|t| {
            super::wide::wide(|| f(t * per..((t + 1) * per).min(outer), 0..inner))
        });
    } else {
        let per = inner
            .div_ceil(want)
            .max(64.min(inner))
            .min((65536 / size.max(1)).max(16));
        par::tasks(inner.div_ceil(per), true, &|t| {
            super::wide::wide(|| f(0..outer, t * per..((t + 1) * per).min(inner)))
        });
    }
}

/// Whether `v` is `0, 1, 2, ...` (a dense run of elements).
fn is_run(v: &[usize]) -> bool {
    v.iter().enumerate().all(|(j, &o)| o == j)
}

/// Copies outer position `a`'s columns `ri` of the `size` rows along the dim from
/// `init` (x, row-major, of the output's shape) into the output, just before the piece
/// writes them: the copy brings the lines in in order, and the writes then hit them in
/// cache (copying all of x first, then writing, left every row's lines cold: a 4M
/// scatter along rows took 9 ns an element, most of it stalled stores).
///
/// # Safety
/// As [`Disjoint::row`]: those elements are the piece's.
#[inline(always)]
unsafe fn copy_block<T: Copy>(
    o: &Disjoint<T>,
    init: &[T],
    a: usize,
    size: usize,
    inner: usize,
    ri: &Range<usize>,
) {
    if ri.len() == inner {
        let start = a * size * inner;
        // SAFETY: the piece's elements (the caller's promise).
        unsafe { o.row(start, size * inner) }.copy_from_slice(&init[start..start + size * inner]);
    } else {
        for k in 0..size {
            let start = (a * size + k) * inner + ri.start;
            // SAFETY: as above.
            unsafe { o.row(start, ri.len()) }.copy_from_slice(&init[start..start + ri.len()]);
        }
    }
}

/// `out` (row-major, shape `xshape`) with `src[k]` written (added with `add`) at index
/// element k's coordinates, `index[k]` along `dim` (`index`: row-major of `ishape`,
/// values checked; `src` over `ls`, of `ishape`; every dim no larger than x's but `dim`).
/// With `init`, `out` is first x (`init`, row-major), copied piece by piece; the index
/// then covers x's other dims (`ishape` is x's shape apart from `dim`).
#[allow(clippy::too_many_arguments)]
fn scatter_elems<T: Acc>(
    out: &mut [T],
    xshape: &[usize],
    dim: usize,
    index: &[i64],
    ishape: &[usize],
    src: &[T],
    ls: &Layout,
    how: Join,
    init: Option<&[T]>,
) {
    let xs = contiguous_strides(xshape);
    let n = ishape[dim];
    let outer_out = offsets(&ishape[..dim], &xs[..dim]);
    let outer_src = offsets(&ishape[..dim], &ls.strides[..dim]);
    let inner_out = offsets(&ishape[dim + 1..], &xs[dim + 1..]);
    let inner_src = offsets(&ishape[dim + 1..], &ls.strides[dim + 1..]);
    let (inner, step, sstep) = (inner_out.len(), xs[dim], ls.strides[dim]);
    let dense = is_run(&inner_out) && is_run(&inner_src);
    let size = xshape[dim];
    let o = Disjoint::new(out);
    split(
        outer_out.len(),
        size,
        inner,
        index.len() + init.map_or(0, <[T]>::len),
        &|ro, ri| {
            for a in ro {
                if let Some(init) = init {
                    // SAFETY: outer position a's columns ri are this piece's.
                    unsafe { copy_block(&o, init, a, size, inner, &ri) };
                }
                let (bo, bs) = (outer_out[a], ls.offset + outer_src[a]);
                if inner == 1 {
                    // along the innermost dim: one row of the index and of the source
                    // SAFETY: the output row of outer position a is this piece's.
                    let row = unsafe { o.row(bo, (size - 1) * step + 1) };
                    let irow = &index[a * n..(a + 1) * n];
                    if step == 1 && sstep == 1 {
                        // (dense rows, the common case: no stride products)
                        let srow = &src[bs..bs + n];
                        match how {
                            Join::Add => {
                                for (&i, &v) in irow.iter().zip(srow) {
                                    let e = &mut row[i as usize];
                                    *e = T::acc(*e, v);
                                }
                            }
                            Join::Write => {
                                for (&i, &v) in irow.iter().zip(srow) {
                                    row[i as usize] = v;
                                }
                            }
                            _ => {
                                for (&i, &v) in irow.iter().zip(srow) {
                                    let e = &mut row[i as usize];
                                    *e = how.apply(*e, v);
                                }
                            }
                        }
                        continue;
                    }
                    for (m, &i) in irow.iter().enumerate() {
                        let (e, v) = (&mut row[i as usize * step], src[bs + m * sstep]);
                        *e = how.apply(*e, v);
                    }
                    continue;
                }
                for m in 0..n {
                    let irow = &index[(a * n + m) * inner..(a * n + m + 1) * inner];
                    let s0 = bs + m * sstep;
                    for j in ri.clone() {
                        let (p, v) = if dense {
                            (bo + irow[j] as usize * step + j, src[s0 + j])
                        } else {
                            (
                                bo + irow[j] as usize * step + inner_out[j],
                                src[s0 + inner_src[j]],
                            )
                        };
                        // SAFETY: element p belongs to this piece's other-dim positions.
                        let e = unsafe { o.at(p) };
                        *e = how.apply(*e, v);
                    }
                }
            }
        },
    );
}

/// `out` (row-major, shape `xshape`) with slice `m` of `src` along `dim` joined by `how`
/// (written, added, ...) into slice `index[m]`, in index order (`src` over `ls`, x's shape with
/// `index.len()` along `dim`; values checked). With `init`, `out` is first x (`init`,
/// row-major), copied piece by piece.
#[allow(clippy::too_many_arguments)]
fn write_slices<T: Acc>(
    out: &mut [T],
    xshape: &[usize],
    dim: usize,
    index: &[i64],
    src: &[T],
    ls: &Layout,
    how: Join,
    init: Option<&[T]>,
) {
    let size = xshape[dim];
    let outer: usize = xshape[..dim].iter().product();
    let inner: usize = xshape[dim + 1..].iter().product();
    let work = outer * index.len() * inner + init.map_or(0, <[T]>::len);
    if outer == 1 && init.is_none() && inner >= 2 && par::parallel(work) {
        // One outer position (a write along dim 0; `index_write` had x copied first):
        // one wide block of columns a thread, every row written in index order. The
        // general split's narrow blocks (32 columns of 2048 rows) and their strided
        // copies made 2 threads 2.4x slower than one here (index_add of 2048 x 2048).
        let threads = crate::runtime::num_threads().max(1);
        let per = inner.div_ceil(threads).next_multiple_of(16).min(inner);
        let o = Disjoint::new(out);
        let body = slices_body(&o, size, inner, index, src, ls, how, None, dim);
        par::tasks(inner.div_ceil(per), true, &|t| {
            super::wide::wide(|| body(0..1, t * per..((t + 1) * per).min(inner)))
        });
        return;
    }
    let o = Disjoint::new(out);
    let body = slices_body(&o, size, inner, index, src, ls, how, init, dim);
    split(outer, size, inner, work, &body);
}

/// [`write_slices`]'s work on outer positions `ro` and other-dim columns `ri`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn slices_body<'a, T: Acc>(
    o: &'a Disjoint<T>,
    size: usize,
    inner: usize,
    index: &'a [i64],
    src: &'a [T],
    ls: &'a Layout,
    how: Join,
    init: Option<&'a [T]>,
    dim: usize,
) -> impl Fn(Range<usize>, Range<usize>) + Sync + 'a {
    let outer_src = offsets(&ls.shape[..dim], &ls.strides[..dim]);
    let inner_src = offsets(&ls.shape[dim + 1..], &ls.strides[dim + 1..]);
    let sstep = ls.strides[dim];
    // a dense source row, or one element for the whole row (a number's fill)
    let dense = is_run(&inner_src);
    let constant = ls.strides[dim + 1..].iter().all(|&s| s == 0);
    move |ro: Range<usize>, ri: Range<usize>| {
        for a in ro {
            if let Some(init) = init {
                // SAFETY: outer position a's columns ri are this piece's.
                unsafe { copy_block(o, init, a, size, inner, &ri) };
            }
            let bs = ls.offset + outer_src.get(a).copied().unwrap_or(0);
            for (m, &i) in index.iter().enumerate() {
                let s0 = bs + m * sstep;
                // SAFETY: the run lies in this piece's other-dim positions.
                let row = unsafe { o.row((a * size + i as usize) * inner + ri.start, ri.len()) };
                if dense {
                    join_row(row, &src[s0 + ri.start..s0 + ri.end], how);
                } else if constant {
                    let v = src[s0];
                    match how {
                        Join::Write => row.fill(v),
                        _ => row.iter_mut().for_each(|d| *d = how.apply(*d, v)),
                    }
                } else {
                    for (d, j) in row.iter_mut().zip(ri.clone()) {
                        *d = how.apply(*d, src[s0 + inner_src[j]]);
                    }
                }
            }
        }
    }
}

/// `row[j] = how(row[j], src[j])`, the join chosen outside the loop (so each loop
/// vectorises).
#[inline(always)]
fn join_row<T: Acc>(row: &mut [T], src: &[T], how: Join) {
    #[inline(always)]
    fn each<T: Copy>(row: &mut [T], src: &[T], f: impl Fn(T, T) -> T) {
        row.iter_mut().zip(src).for_each(|(d, &v)| *d = f(*d, v));
    }
    match how {
        Join::Write => row.copy_from_slice(src),
        Join::Add => each(row, src, T::acc),
        Join::Prod => each(row, src, T::prod),
        Join::Amax => each(row, src, T::amax),
        Join::Amin => each(row, src, T::amin),
    }
}

/// The output of a scatter into `x`: x copied by the kernel's pieces where x is
/// contiguous and `covered` (the writes cover x's other-dim positions), else copied
/// first; `f(out, init)` writes it.
fn with_copy_of<T: Acc>(
    x: &Buffer,
    lx: &Layout,
    covered: bool,
    f: impl FnOnce(&mut [T], Option<&[T]>),
) -> Buffer {
    let n = lx.numel();
    if covered && lx.is_contiguous() && n > 0 {
        let init = &T::slice(x)[lx.offset..lx.offset + n];
        // (zeroed pages: not touched before the pieces write them)
        let mut out = vec![T::default(); n];
        f(&mut out, Some(init));
        return T::into_buffer(out);
    }
    let mut out = super::elementwise::cast(x, lx, x.dtype());
    f(T::slice_mut(&mut out), None);
    out
}

/// `x` (over `lx`, at least 1-D) copied row-major, with `src` (over `ls`, of the index's
/// shape; x's dtype) written along `dim` at the positions `index` (row-major of
/// `index_shape`, values checked) gives: torch.scatter, `add`: scatter_add.
#[allow(clippy::too_many_arguments)]
pub fn scatter(
    x: &Buffer,
    lx: &Layout,
    dim: usize,
    index: &[i64],
    index_shape: &[usize],
    src: &Buffer,
    ls: &Layout,
    add: bool,
) -> Buffer {
    if index.is_empty() {
        return super::elementwise::cast(x, lx, x.dtype());
    }
    let covered = index_shape
        .iter()
        .zip(&lx.shape)
        .enumerate()
        .all(|(j, (a, b))| j == dim || a == b);
    crate::with_dtype!(x.dtype(), T => with_copy_of::<T>(x, lx, covered, |out, init| {
        scatter_elems(out, &lx.shape, dim, index, index_shape, T::slice(src), ls, Join::of(add), init)
    }))
}

/// torch.scatter_reduce's kernel: `x` copied row-major with each `src` element joined
/// into the element `index` names along `dim` by `reduce` ("sum" (also "mean"'s sum),
/// "prod", "amax", "amin"), in index order, as ATen's CPU loop: the same bits at any
/// thread count (see [`scatter`] for the layouts; the op layer has put the reduction's
/// identity where `include_self=False`).
#[allow(clippy::too_many_arguments)]
pub fn scatter_reduce(
    x: &Buffer,
    lx: &Layout,
    dim: usize,
    index: &[i64],
    index_shape: &[usize],
    src: &Buffer,
    ls: &Layout,
    reduce: crate::backend::ScatterReduce,
) -> Buffer {
    use crate::backend::ScatterReduce as R;
    if index.is_empty() {
        return super::elementwise::cast(x, lx, x.dtype());
    }
    let how = match reduce {
        R::Sum | R::Mean => Join::Add,
        R::Prod => Join::Prod,
        R::Amax => Join::Amax,
        R::Amin => Join::Amin,
    };
    let covered = index_shape
        .iter()
        .zip(&lx.shape)
        .enumerate()
        .all(|(j, (a, b))| j == dim || a == b);
    crate::with_dtype!(x.dtype(), T => with_copy_of::<T>(x, lx, covered, |out, init| {
        scatter_elems(out, &lx.shape, dim, index, index_shape, T::slice(src), ls, how, init)
    }))
}

/// `x` (over `lx`, at least 1-D) copied row-major, with slice `m` along `dim` of `src`
/// (over `ls`: x's shape with `index.len()` along `dim`; x's dtype) written at slice
/// `index[m]` (values checked), in index order: index_copy, index_fill (a number as one
/// element under zero strides), `add`: index_add.
pub fn index_write(
    x: &Buffer,
    lx: &Layout,
    dim: usize,
    index: &[i64],
    src: &Buffer,
    ls: &Layout,
    add: bool,
) -> Buffer {
    if index.is_empty() || lx.numel() == 0 {
        return super::elementwise::cast(x, lx, x.dtype());
    }
    // (along dim 0 the pieces are column blocks of every row: x is copied whole first,
    // in contiguous chunks, rather than by the pieces)
    let by_pieces = lx.shape[..dim].iter().product::<usize>() != 1;
    crate::with_dtype!(x.dtype(), T => with_copy_of::<T>(x, lx, by_pieces, |out, init| {
        write_slices(out, &lx.shape, dim, index, T::slice(src), ls, Join::of(add), init)
    }))
}

/// torch.index_reduce's kernel: `x` copied row-major with slice `m` along `dim` of `src`
/// (over `ls`, x's shape with `index.len()` along `dim`) joined by `reduce` into slice
/// `index[m]` (checked), in index order as ATen's CPU loop ("mean" sums: the op layer
/// divides, and puts the reduction's identity where `include_self=False`).
pub fn index_reduce(
    x: &Buffer,
    lx: &Layout,
    dim: usize,
    index: &[i64],
    src: &Buffer,
    ls: &Layout,
    reduce: crate::backend::ScatterReduce,
) -> Buffer {
    use crate::backend::ScatterReduce as R;
    if index.is_empty() || lx.numel() == 0 {
        return super::elementwise::cast(x, lx, x.dtype());
    }
    let how = match reduce {
        R::Sum | R::Mean => Join::Add,
        R::Prod => Join::Prod,
        R::Amax => Join::Amax,
        R::Amin => Join::Amin,
    };
    let by_pieces = lx.shape[..dim].iter().product::<usize>() != 1;
    crate::with_dtype!(x.dtype(), T => with_copy_of::<T>(x, lx, by_pieces, |out, init| {
        write_slices(out, &lx.shape, dim, index, T::slice(src), ls, how, init)
    }))
}

/// `zeros(shape)` with `src` (over `ls`, of `index_shape`) added along `dim` at the
/// positions `index` gives (gather's backward).
pub(super) fn scatter_add_zeros(
    shape: &[usize],
    dim: usize,
    index: &[i64],
    index_shape: &[usize],
    src: &Buffer,
    ls: &Layout,
) -> Buffer {
    let n = crate::shape::numel(shape);
    crate::with_dtype!(src.dtype(), T => {
        let mut out = vec![T::default(); n];
        if !index.is_empty() {
            scatter_elems(&mut out, shape, dim, index, index_shape, T::slice(src), ls, Join::Add, None);
        }
        T::into_buffer(out)
    })
}

/// `zeros(shape)` with slice `m` of `src` (over `ls`) added along `dim` at slice
/// `index[m]` (index_select's backward).
pub(super) fn index_add_zeros(
    shape: &[usize],
    dim: usize,
    index: &[i64],
    src: &Buffer,
    ls: &Layout,
) -> Buffer {
    let n = crate::shape::numel(shape);
    crate::with_dtype!(src.dtype(), T => {
        let mut out = vec![T::default(); n];
        if !index.is_empty() && n > 0 {
            write_slices(&mut out, shape, dim, index, T::slice(src), ls, Join::Add, None);
        }
        T::into_buffer(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plain loops over row-major positions: the reference.
    fn reference(
        x: &[f64],
        xshape: &[usize],
        dim: usize,
        target: impl Fn(&[usize]) -> Option<(Vec<usize>, f64)>,
        vshape: &[usize],
        add: bool,
    ) -> Vec<f64> {
        let mut out = x.to_vec();
        let xs = contiguous_strides(xshape);
        let n = crate::shape::numel(vshape);
        let vs = contiguous_strides(vshape);
        for k in 0..n {
            let c: Vec<usize> = (0..vshape.len()).map(|j| k / vs[j] % vshape[j]).collect();
            if let Some((t, v)) = target(&c) {
                let p: usize = t.iter().zip(&xs).map(|(a, b)| a * b).sum();
                out[p] = if add { out[p] + v } else { v };
            }
        }
        let _ = dim;
        out
    }

    #[test]
    fn scatter_and_index_write_match_plain_loops_on_both_sides_of_the_split() {
        for &(a, b, c) in &[(3usize, 4usize, 5usize), (40, 50, 30)] {
            let xshape = [a, b, c];
            let x: Vec<f64> = (0..a * b * c).map(|i| i as f64 * 0.5).collect();
            let xb = Buffer::F64(x.clone().into());
            let lx = Layout::contiguous(&xshape);
            for dim in 0..3 {
                for add in [false, true] {
                    // scatter: an index one smaller on the other dims, repeats included
                    let mut ishape = [a - 1, b - 1, c - 1];
                    ishape[dim] = xshape[dim] + 2;
                    let ni = crate::shape::numel(&ishape);
                    let index: Vec<i64> = (0..ni)
                        .map(|k| ((k * 7 + 3) % xshape[dim]) as i64)
                        .collect();
                    let src: Vec<f64> = (0..ni).map(|k| k as f64 + 0.25).collect();
                    let sb = Buffer::F64(src.clone().into());
                    let ls = Layout::contiguous(&ishape);
                    let Buffer::F64(got) = scatter(&xb, &lx, dim, &index, &ishape, &sb, &ls, add)
                    else {
                        unreachable!()
                    };
                    let is = contiguous_strides(&ishape);
                    let want = reference(
                        &x,
                        &xshape,
                        dim,
                        |c| {
                            let k: usize = c.iter().zip(&is).map(|(p, q)| p * q).sum();
                            let mut t = c.to_vec();
                            t[dim] = index[k] as usize;
                            Some((t, src[k]))
                        },
                        &ishape,
                        add,
                    );
                    assert_eq!(*got, *want, "scatter dim {dim} add {add}");
                    // index_write: slices, a transposed source
                    let n = xshape[dim] + 3;
                    let index: Vec<i64> =
                        (0..n).map(|m| ((m * 5 + 1) % xshape[dim]) as i64).collect();
                    let mut sshape = xshape;
                    sshape[dim] = n;
                    let ns = crate::shape::numel(&sshape);
                    let sv: Vec<f64> = (0..ns).map(|k| k as f64 - 7.0).collect();
                    let sb = Buffer::F64(sv.clone().into());
                    // the buffer read as its reverse-dims transpose
                    let rs = contiguous_strides(&[sshape[2], sshape[1], sshape[0]]);
                    let lt = Layout {
                        shape: sshape.iter().copied().collect(),
                        strides: smallvec::smallvec![rs[2], rs[1], rs[0]],
                        offset: 0,
                    };
                    let at = |c: &[usize]| sv[c[0] * rs[2] + c[1] * rs[1] + c[2] * rs[0]];
                    for (l, transposed) in [(Layout::contiguous(&sshape), false), (lt, true)] {
                        let Buffer::F64(got) = index_write(&xb, &lx, dim, &index, &sb, &l, add)
                        else {
                            unreachable!()
                        };
                        let ss = contiguous_strides(&sshape);
                        let want = reference(
                            &x,
                            &xshape,
                            dim,
                            |c| {
                                let v = if transposed {
                                    at(c)
                                } else {
                                    sv[c.iter().zip(&ss).map(|(p, q)| p * q).sum::<usize>()]
                                };
                                let mut t = c.to_vec();
                                t[dim] = index[c[dim]] as usize;
                                Some((t, v))
                            },
                            &sshape,
                            add,
                        );
                        assert_eq!(*got, *want, "index_write dim {dim} add {add} {transposed}");
                    }
                }
            }
        }
    }
}
