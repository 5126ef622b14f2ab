//! Data-movement kernels at memory bandwidth: flip and roll (one row-major copy whose dims
//! may run backwards or start part-way round), and tril / triu (each row a copied prefix
//! or suffix, the rest zeros, or in place only the zeros).
//!
//! Every output row splits into at most two runs of consecutive source elements (a roll's
//! wrap point cuts it once), each copied as a plain loop: forwards (a memcpy), backwards
//! (a flipped innermost dim: reversed loads, which LLVM vectorises with lane permutes in
//! the AVX2 build `fill_chunks` runs), or strided. The output is written in fixed chunks
//! of its elements, split across the pool for large tensors (`elementwise::fill_chunks`);
//! each element is a copy, so the split never changes a bit.

use super::elementwise::fill_chunks;
use crate::layout::Layout;
use crate::storage::{Buffer, Element};
use crate::with_dtype;
use std::mem::MaybeUninit;

/// One dim of a reordering copy as the source is read: output index `i` reads source
/// index `(i - shift) mod n`, at `stride` (negative: the dim runs backwards).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Dim {
    n: usize,
    stride: isize,
    shift: usize,
}

/// A copy's dims, outermost first (size-1 dims dropped, runs of plain dims merged), and
/// the source offset of index 0 of every dim.
#[derive(Debug, PartialEq)]
struct Plan {
    dims: smallvec::SmallVec<[Dim; 6]>,
    base: isize,
}

/// The plan of `l`'s elements (in a buffer of `len`) with the dims `flip` reversed and
/// each `(dim, shift)` of `roll` rolled (shifts of one dim add up, as rolls in turn do);
/// `None` when the layout leaves the buffer or an offset does not fit an `isize` (never
/// for a layout the op layer built).
fn plan(l: &Layout, flip: &[usize], roll: &[(usize, usize)], len: usize) -> Option<Plan> {
    let mut base = isize::try_from(l.offset).ok()?;
    let mut last = l.offset;
    let mut dims = smallvec::SmallVec::<[Dim; 6]>::new();
    for (d, (&n, &s)) in l.shape.iter().zip(&l.strides).enumerate() {
        if n == 0 {
            return Some(Plan {
                dims: smallvec::smallvec![Dim {
                    n: 0,
                    stride: 1,
                    shift: 0
                }],
                base: 0,
            });
        }
        let span = (n - 1).checked_mul(s)?;
        last = last.checked_add(span)?;
        let (mut stride, span) = (isize::try_from(s).ok()?, isize::try_from(span).ok()?);
        if flip.contains(&d) {
            base = base.checked_add(span)?;
            stride = -stride;
        }
        let shift = roll
            .iter()
            .filter(|r| r.0 == d)
            .fold(0, |a, r| (a + r.1 % n) % n);
        if n == 1 {
            continue;
        }
        let dim = Dim { n, stride, shift };
        match dims.last_mut() {
            // (a plain dim that steps over the whole of the next one: one dim of both)
            Some(o)
                if o.shift == 0
                    && shift == 0
                    && Some(o.stride) == stride.checked_mul(n as isize) =>
            {
                *o = Dim {
                    n: o.n * n,
                    stride,
                    shift: 0,
                };
            }
            _ => dims.push(dim),
        }
    }
    (last < len).then_some(Plan { dims, base })
}

/// Writes `out[k] = src[first + k * stride]`: a memcpy, a reversed copy, a broadcast, or
/// a strided gather (the plan keeps every offset in `src`).
/// `out[k] = src[len - 1 - k]`: a reversed run (flip's innermost dim).
struct Reversed<'a, T> {
    out: &'a mut [MaybeUninit<T>],
    src: &'a [T],
}
impl<T: Copy> super::wide::Kernel for Reversed<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run(self) {
        for (d, &v) in self.out.iter_mut().zip(self.src.iter().rev()) {
            d.write(v);
        }
    }
}

#[inline(always)]
fn run<T: Copy>(out: &mut [MaybeUninit<T>], src: &[T], first: isize, stride: isize) {
    let m = out.len();
    if m == 0 {
        return;
    }
    match stride {
        1 => {
            let s = &src[first as usize..first as usize + m];
            // SAFETY: `s` and `out` are m elements each, in different allocations;
            // MaybeUninit<T> has T's layout.
            unsafe { copy_run(s.as_ptr(), out.as_mut_ptr().cast::<T>(), m) };
        }
        -1 => {
            let l = first as usize;
            // (a kernel, so that the reversal is built for AVX2 too: 8 lanes a permute
            // instead of SSE2's 4; LLVM left it out of `fill_chunks`' AVX2 build)
            super::wide::wide_kernel(Reversed {
                out,
                src: &src[l + 1 - m..=l],
            });
        }
        0 => {
            let v = src[first as usize];
            out.iter_mut().for_each(|d| {
                d.write(v);
            });
        }
        _ => {
            for (k, d) in out.iter_mut().enumerate() {
                d.write(src[(first + k as isize * stride) as usize]);
            }
        }
    }
}

/// Copies `m` elements from `s` to `d` (not overlapping). Long runs go through 16-byte
/// vector moves of our own: a `memcpy` here (glibc's `rep movsb` for runs of kilobytes)
/// took 5 ms on one thread for roll(3, 1) of 2048 x 2048 float32, whose rows' source and
/// destination are 12 bytes apart in their alignment, against 0.9 ms for roll(8, 1)
/// (AMD EPYC Zen 4).
///
/// # Safety
/// `s` readable and `d` writable for `m` elements, not overlapping.
#[inline(always)]
unsafe fn copy_run<T: Copy>(s: *const T, d: *mut T, m: usize) {
    let bytes = m * std::mem::size_of::<T>();
    #[cfg(target_arch = "x86_64")]
    if bytes >= 256 {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_storeu_si128};
        let (s8, d8) = (s.cast::<u8>(), d.cast::<u8>());
        let mut k = 0;
        // SAFETY: every 16-byte block lies within the run's `bytes` (the caller's
        // promise); SSE2 is part of x86-64.
        unsafe {
            while k + 64 <= bytes {
                let a = _mm_loadu_si128(s8.add(k).cast::<__m128i>());
                let b = _mm_loadu_si128(s8.add(k + 16).cast::<__m128i>());
                let c = _mm_loadu_si128(s8.add(k + 32).cast::<__m128i>());
                let e = _mm_loadu_si128(s8.add(k + 48).cast::<__m128i>());
                _mm_storeu_si128(d8.add(k).cast::<__m128i>(), a);
                _mm_storeu_si128(d8.add(k + 16).cast::<__m128i>(), b);
                _mm_storeu_si128(d8.add(k + 32).cast::<__m128i>(), c);
                _mm_storeu_si128(d8.add(k + 48).cast::<__m128i>(), e);
                k += 64;
            }
            std::ptr::copy_nonoverlapping(s8.add(k), d8.add(k), bytes - k);
        }
        return;
    }
    // SAFETY: as above.
    unsafe { std::ptr::copy_nonoverlapping(s, d, m) };
}

/// The source offset of row `r` (row-major over the outer dims).
#[inline]
fn row_offset(outer: &[Dim], base: isize, mut r: usize) -> isize {
    let mut off = base;
    for d in outer.iter().rev() {
        let k = r % d.n;
        r /= d.n;
        let i = if k >= d.shift {
            k - d.shift
        } else {
            k + d.n - d.shift
        };
        off += i as isize * d.stride;
    }
    off
}

/// Calls `f(row, c0, out)` for each row-run of output elements `start..start +
/// out.len()` (rows of `len` elements), `out` the run's slice and `c0` its first column.
#[inline(always)]
fn row_runs<T>(
    start: usize,
    out: &mut [MaybeUninit<T>],
    len: usize,
    mut f: impl FnMut(usize, usize, &mut [MaybeUninit<T>]),
) {
    let mut e = start;
    let mut rest = out;
    while !rest.is_empty() {
        let (r, c0) = (e / len, e % len);
        let take = (len - c0).min(rest.len());
        let (head, tail) = rest.split_at_mut(take);
        f(r, c0, head);
        rest = tail;
        e += take;
    }
}

fn reorder_typed<T: Element>(src: &[T], p: &Plan, n: usize) -> Vec<T> {
    let Some((inner, outer)) = p.dims.split_last() else {
        // (a single element)
        return vec![src[p.base as usize]];
    };
    let Dim {
        n: len,
        stride,
        shift,
    } = *inner;
    fill_chunks(n, |start, out| {
        row_runs(start, out, len, |r, c0, out| {
            let row = row_offset(outer, p.base, r);
            // columns before the wrap point read the source's tail, the others its head
            let wrap = shift.saturating_sub(c0).min(out.len());
            let (head, tail) = out.split_at_mut(wrap);
            if !head.is_empty() {
                run(
                    head,
                    src,
                    row + (c0 + len - shift) as isize * stride,
                    stride,
                );
            }
            if !tail.is_empty() {
                // (past the wrap point: column c0 + wrap >= shift)
                run(
                    tail,
                    src,
                    row + (c0 + wrap - shift) as isize * stride,
                    stride,
                );
            }
        })
    })
}

/// `x` (over `lx`) copied row-major with the dims `flip` reversed and each `(dim, shift)`
/// of `roll` rolled by `shift` places (torch.flip, torch.roll); `None` where the layout
/// leaves the buffer (never for the op layer's layouts).
pub fn reorder(x: &Buffer, lx: &Layout, flip: &[usize], roll: &[(usize, usize)]) -> Option<Buffer> {
    let n = lx.numel();
    let p = plan(lx, flip, roll, x.len())?;
    Some(with_dtype!(x.dtype(), T => {
        if n == 0 {
            return Some(T::into_buffer(Vec::new()));
        }
        T::into_buffer(reorder_typed(T::slice(x), &p, n))
    }))
}

/// The kept columns `lo..hi` of row `i` of a `cols`-wide matrix: tril keeps `j <= i + k`,
/// triu `j >= i + k`.
#[inline]
fn kept(i: usize, cols: usize, k: i64, upper: bool) -> (usize, usize) {
    let clamp = |v: i128| v.clamp(0, cols as i128) as usize;
    let edge = i as i128 + k as i128;
    if upper {
        (clamp(edge), cols)
    } else {
        (0, clamp(edge + 1))
    }
}

/// `x.tril(diagonal)` (`upper`: `x.triu(diagonal)`) of `x` over `lx` (2 or more dims),
/// row-major: each row its kept run copied and zeros around it. `None` where the layout
/// leaves the buffer.
pub fn triangle(x: &Buffer, lx: &Layout, diagonal: i64, upper: bool) -> Option<Buffer> {
    let nd = lx.ndim();
    if nd < 2 {
        return None;
    }
    let (rows, cols) = (lx.shape[nd - 2], lx.shape[nd - 1]);
    let n = lx.numel();
    // the rows as a copy plan of the outer dims (the columns are read below)
    let row_layout = Layout {
        shape: lx.shape[..nd - 1].into(),
        strides: lx.strides[..nd - 1].into(),
        offset: lx.offset,
    };
    // (the whole layout in the buffer, then the rows' plan)
    plan(lx, &[], &[], x.len())?;
    let p = plan(&row_layout, &[], &[], x.len())?;
    let cs = isize::try_from(lx.strides[nd - 1]).ok()?;
    // (`plan` dropped size-1 dims and merged others: rows are walked over its dims)
    Some(with_dtype!(x.dtype(), T => {
        if n == 0 {
            return Some(T::into_buffer(Vec::new()));
        }
        let src = T::slice(x);
        let zero = T::default();
        T::into_buffer(fill_chunks(n, |start, out| {
            row_runs(start, out, cols, |r, c0, out| {
                let (lo, hi) = kept(r % rows, cols, diagonal, upper);
                let row = row_offset(&p.dims, p.base, r);
                let c1 = c0 + out.len();
                let (a, b) = (lo.clamp(c0, c1), hi.clamp(c0, c1).max(lo.clamp(c0, c1)));
                let (before, rest) = out.split_at_mut(a - c0);
                let (mid, after) = rest.split_at_mut(b - a);
                before.iter_mut().chain(after).for_each(|d| {
                    d.write(zero);
                });
                run(mid, src, row + a as isize * cs, cs);
            })
        }))
    }))
}

/// tril_ / triu_ in place: the elements of `ld` (2 or more dims) outside the triangle set
/// to zero, the others untouched. Only zeros are written, so a layout that names an
/// element twice (an expanded tensor) ends as torch's in-place kernel leaves it: zero
/// wherever some row zeroes it (such a layout runs on one thread). `false` where the
/// layout leaves the buffer.
pub fn triangle_in_place(dst: &mut Buffer, ld: &Layout, diagonal: i64, upper: bool) -> bool {
    let nd = ld.ndim();
    if nd < 2 {
        return false;
    }
    let (rows, cols) = (ld.shape[nd - 2], ld.shape[nd - 1]);
    let n = ld.numel();
    if n == 0 {
        return true;
    }
    let row_layout = Layout {
        shape: ld.shape[..nd - 1].into(),
        strides: ld.strides[..nd - 1].into(),
        offset: ld.offset,
    };
    let len = dst.len();
    let (Some(_), Some(p)) = (plan(ld, &[], &[], len), plan(&row_layout, &[], &[], len)) else {
        return false;
    };
    let cs = ld.strides[nd - 1];
    let total_rows = n / cols;
    with_dtype!(dst.dtype(), T => {
        let d = T::slice_mut(dst);
        let zero = T::default();
        // rows in fixed runs; each row's elements are its own (distinct offsets)
        let per = (PIECE / cols).max(1);
        let pieces = total_rows.div_ceil(per);
        // (small ones stay on this thread: 256 x 256 float32 tril_ took 27 us on one
        // thread and 34 on two, element loop; a memset row is cheaper still)
        let par = n >= IN_PLACE_PAR_MIN
            && crate::runtime::intra_op_parallel()
            && distinct(ld);
        let ptr = RowPtr(d.as_mut_ptr());
        let piece = |t: usize| {
            let ptr = &ptr;
            for r in t * per..((t + 1) * per).min(total_rows) {
                let (lo, hi) = kept(r % rows, cols, diagonal, upper);
                let row = row_offset(&p.dims, p.base, r) as usize;
                for (j0, j1) in [(0, lo), (hi.max(lo), cols)] {
                    if j1 <= j0 {
                        continue;
                    }
                    // SAFETY: `row + j * cs` for j in j0..j1 is an element of `ld`, in the
                    // buffer (checked above); on the pool `ld` names each element once, so
                    // this row's elements are written by this piece alone while `d` is
                    // borrowed for the call (a layout that repeats one runs on this thread
                    // alone).
                    unsafe {
                        let at = ptr.0.add(row + j0 * cs);
                        if cs == 1 {
                            // (a memset of the row's run)
                            std::slice::from_raw_parts_mut(at, j1 - j0).fill(zero);
                        } else {
                            for j in 0..j1 - j0 {
                                *at.add(j * cs) = zero;
                            }
                        }
                    }
                }
            }
        };
        super::strided::for_each_piece(pieces, par, &piece);
    });
    true
}

/// Whether `l` names each of its elements at its own offset (each stride, taken
/// innermost first, steps over everything inside it).
fn distinct(l: &Layout) -> bool {
    let mut dims: Vec<(usize, usize)> = l
        .shape
        .iter()
        .zip(&l.strides)
        .filter(|&(&n, _)| n != 1)
        .map(|(&n, &s)| (s, n))
        .collect();
    if dims.iter().any(|&(_, n)| n == 0) {
        return true;
    }
    dims.sort_unstable();
    let mut span = 0usize;
    for (s, n) in dims {
        if s <= span {
            return false;
        }
        match (n - 1).checked_mul(s).and_then(|e| span.checked_add(e)) {
            Some(v) => span = v,
            None => return false,
        }
    }
    true
}

/// Elements from which an in-place triangle is split across the pool.
const IN_PLACE_PAR_MIN: usize = 1 << 18;

/// About this many elements per piece of an in-place triangle.
const PIECE: usize = 1 << 15;

/// The destination of [`triangle_in_place`], shared by its pieces (each writes rows no
/// other piece writes).
struct RowPtr<T>(*mut T);
// SAFETY: the pieces write disjoint elements (see `triangle_in_place`), `T` is a plain
// `Copy` element with no drop.
unsafe impl<T> Sync for RowPtr<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(shape: &[usize], strides: &[usize], offset: usize) -> Layout {
        Layout {
            shape: shape.into(),
            strides: strides.into(),
            offset,
        }
    }

    /// The reference: every element through the index maps, one at a time.
    fn naive(src: &[f32], l: &Layout, flip: &[usize], roll: &[(usize, usize)]) -> Vec<f32> {
        let n = l.numel();
        let mut out = Vec::with_capacity(n);
        for e in 0..n {
            let mut rem = e;
            let mut off = l.offset;
            for d in (0..l.ndim()).rev() {
                let m = l.shape[d];
                let mut i = rem % m;
                rem /= m;
                let s: usize = roll.iter().filter(|r| r.0 == d).map(|r| r.1).sum::<usize>() % m;
                i = (i + m - s) % m;
                if flip.contains(&d) {
                    i = m - 1 - i;
                }
                off += i * l.strides[d];
            }
            out.push(src[off]);
        }
        out
    }

    #[test]
    fn reorder_matches_the_index_maps() {
        let src: Vec<f32> = (0..400).map(|v| v as f32).collect();
        let buf = Buffer::F32(src.clone().into());
        // (layout, flipped dims, rolls)
        type Case = (Layout, Vec<usize>, Vec<(usize, usize)>);
        let cases: Vec<Case> = vec![
            (Layout::contiguous(&[5, 7]), vec![1], vec![]),
            (Layout::contiguous(&[5, 7]), vec![0, 1], vec![]),
            (Layout::contiguous(&[5, 7]), vec![], vec![(1, 3)]),
            (Layout::contiguous(&[5, 7]), vec![], vec![(0, 2), (1, 6)]),
            (Layout::contiguous(&[35]), vec![], vec![(0, 4)]),
            (Layout::contiguous(&[3, 1, 4, 5]), vec![0, 3], vec![(2, 1)]),
            (layout(&[4, 6], &[1, 8], 3), vec![1], vec![]),
            (layout(&[4, 6], &[20, 3], 5), vec![0, 1], vec![(1, 5)]),
            (layout(&[4, 6], &[0, 1], 2), vec![1], vec![]),
            (layout(&[3, 4], &[4, 1], 0), vec![], vec![(0, 1), (0, 1)]),
        ];
        for (l, flip, roll) in cases {
            let Some(Buffer::F32(got)) = reorder(&buf, &l, &flip, &roll) else {
                panic!("no result");
            };
            assert_eq!(
                &got[..],
                &naive(&src, &l, &flip, &roll)[..],
                "{l:?} {flip:?} {roll:?}"
            );
        }
    }

    /// Reversed rows (the innermost dim flipped) at every vector level the CPU runs, rows
    /// of lengths around the vector widths, starting at every alignment.
    #[test]
    fn reversed_rows_at_every_level() {
        use super::super::vmath;
        let src: Vec<f32> = (0..2000).map(|v| v as f32).collect();
        let buf = Buffer::F32(src.clone().into());
        let restore = vmath::level();
        for level in vmath::supported() {
            vmath::set_level(level);
            for cols in [1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100] {
                for offset in 0..4 {
                    let l = layout(&[5, cols], &[cols + 1, 1], offset);
                    let Some(Buffer::F32(got)) = reorder(&buf, &l, &[1], &[]) else {
                        panic!("no result");
                    };
                    assert_eq!(&got[..], &naive(&src, &l, &[1], &[])[..], "{level:?} {l:?}");
                }
            }
        }
        vmath::set_level(restore);
    }

    #[test]
    fn reorder_refuses_a_layout_outside_its_buffer() {
        let buf = Buffer::F32(vec![0.0; 10].into());
        assert!(reorder(&buf, &Layout::contiguous(&[11]), &[0], &[]).is_none());
    }

    #[test]
    fn triangle_keeps_each_rows_run() {
        let src: Vec<f32> = (1..=60).map(|v| v as f32).collect();
        let buf = Buffer::F32(src.clone().into());
        for (l, k) in [
            (Layout::contiguous(&[2, 5, 6]), 0),
            (Layout::contiguous(&[2, 5, 6]), -2),
            (Layout::contiguous(&[2, 5, 6]), 9),
            (layout(&[6, 5], &[1, 6], 0), 1),
        ] {
            for upper in [false, true] {
                let Some(Buffer::F32(got)) = triangle(&buf, &l, k, upper) else {
                    panic!("no result");
                };
                let all = naive(&src, &l, &[], &[]);
                let (rows, cols) = (l.shape[l.ndim() - 2], l.shape[l.ndim() - 1]);
                for (e, (&g, &a)) in got.iter().zip(&all).enumerate() {
                    let (i, j) = ((e / cols % rows) as i64, (e % cols) as i64);
                    let keep = if upper { j - i >= k } else { j - i <= k };
                    assert_eq!(g, if keep { a } else { 0.0 });
                }
                let mut d = Buffer::F32(src.clone().into());
                assert!(triangle_in_place(&mut d, &l, k, upper));
                let Buffer::F32(d) = d else { unreachable!() };
                assert_eq!(naive(&d, &l, &[], &[]), got.to_vec());
            }
        }
    }
}
