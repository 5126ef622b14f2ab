//! Row-major walks over strided layouts: the one place that turns (shape, strides,
//! offset) into storage offsets, shared by every CPU kernel.

use crate::layout::Layout;
use std::borrow::Cow;

/// Calls `f(offset)` for every element of `(shape, strides, offset)` in row-major order.
/// The innermost dim runs as a tight loop; outer dims advance like an odometer.
#[inline]
pub fn for_each_offset(
    shape: &[usize],
    strides: &[usize],
    offset: usize,
    mut f: impl FnMut(usize),
) {
    let n = shape.len();
    if n == 0 {
        f(offset);
        return;
    }
    if shape.contains(&0) {
        return;
    }
    let (inner, inner_stride) = (shape[n - 1], strides[n - 1]);
    let mut idx = [0usize; 16];
    let mut idx_heap;
    let idx: &mut [usize] = if n <= 16 {
        &mut idx[..n]
    } else {
        idx_heap = vec![0usize; n];
        &mut idx_heap
    };
    let mut base = offset;
    loop {
        let mut o = base;
        for _ in 0..inner {
            f(o);
            o += inner_stride;
        }
        // odometer over dims 0..n-1
        let mut d = n - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            base += strides[d];
            if idx[d] < shape[d] {
                break;
            }
            base -= strides[d] * shape[d];
            idx[d] = 0;
        }
    }
}

/// Two layouts of the same shape walked together: `f(offset_a, offset_b)`.
#[inline]
pub fn for_each_offset2(
    shape: &[usize],
    a: (&[usize], usize),
    b: (&[usize], usize),
    mut f: impl FnMut(usize, usize),
) {
    let n = shape.len();
    if n == 0 {
        f(a.1, b.1);
        return;
    }
    if shape.contains(&0) {
        return;
    }
    let (inner, sa, sb) = (shape[n - 1], a.0[n - 1], b.0[n - 1]);
    let mut idx = vec![0usize; n];
    let (mut base_a, mut base_b) = (a.1, b.1);
    loop {
        let (mut oa, mut ob) = (base_a, base_b);
        for _ in 0..inner {
            f(oa, ob);
            oa += sa;
            ob += sb;
        }
        let mut d = n - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            base_a += a.0[d];
            base_b += b.0[d];
            if idx[d] < shape[d] {
                break;
            }
            base_a -= a.0[d] * shape[d];
            base_b -= b.0[d] * shape[d];
            idx[d] = 0;
        }
    }
}

/// The storage offsets of every row-major position of `shape` under `strides`.
pub(crate) fn offsets(shape: &[usize], strides: &[usize]) -> Vec<usize> {
    let mut out = vec![0usize];
    for (&n, &s) in shape.iter().zip(strides) {
        let mut next = Vec::with_capacity(out.len() * n);
        for &o in &out {
            for j in 0..n {
                next.push(o + j * s);
            }
        }
        out = next;
    }
    out
}

/// The elements of a layout in row-major order: borrowed when already contiguous,
/// gathered otherwise (by [`to_vec`]).
pub fn contiguous<'a, T: Copy>(data: &'a [T], layout: &Layout) -> Cow<'a, [T]> {
    let n = layout.numel();
    if n == 0 {
        return Cow::Borrowed(&[]);
    }
    if layout.is_contiguous() {
        return Cow::Borrowed(&data[layout.offset..layout.offset + n]);
    }
    Cow::Owned(to_vec(data, layout))
}

// ---- copies between layouts --------------------------------------------------------------
//
// Every copy that moves data (clone, contiguous, casts' gathers, cat and stack, repeat and
// expand copies, narrow and slice copies, in-place commits) ends in one kernel: a copy
// between two layouts of one shape. It is memory-bound, so what matters is touching each
// cache line once and using every core:
// - the dims are normalised first: size-1 dims dropped, the rest ordered by the
//   destination's strides (outermost first) and neighbours that walk memory as one dim
//   merged, so a clone is one long row, a narrow or a cat part a few long rows, and a
//   repeat rows of a broadcast source;
// - the innermost dim then runs as a memcpy (source stride 1), a fill (stride 0: a
//   broadcast) or a strided loop; when the source's stride-1 dim is another one (a
//   transpose), the two dims are walked in square tiles, so that each source line read
//   is used whole while it is in L1 (element by element, a 2048x2048 transpose missed the
//   cache on every read: 15 ns an element);
// - the work is split in fixed pieces of the destination (runs of rows, or strips of
//   tiles) claimed by the calling thread and the pool's helpers; each element is written
//   by exactly one piece, so the result never depends on the split.

/// Elements below which a copy runs on the calling thread alone.
const COPY_PAR_MIN: usize = 1 << 16;
/// Tile side of a transposing copy: 64 bytes of elements (a cache line).
const fn tile<T>() -> usize {
    let s = std::mem::size_of::<T>();
    if s == 0 || s >= 64 { 1 } else { 64 / s }
}

/// A copy's dims after normalisation: `(size, dst stride, src stride)`, outermost first.
type Dims = smallvec::SmallVec<[(usize, usize, usize); 6]>;

/// Normalises a copy of `shape` (see the section comment); `None` when the destination
/// writes some memory twice (its strides cannot tell its elements apart), where the
/// copy must keep the row-major order of writes.
fn plan(shape: &[usize], ds: &[usize], ss: &[usize]) -> Option<Dims> {
    let mut dims: Dims = shape
        .iter()
        .zip(ds.iter().zip(ss))
        .filter(|&(&n, _)| n != 1)
        .map(|(&n, (&d, &s))| (n, d, s))
        .collect();
    // outermost (largest destination stride) first; stable, so row-major stays as it is
    dims.sort_by_key(|d| std::cmp::Reverse(d.1));
    // the destination is injective if each stride steps over everything inside it
    let mut span = 0usize;
    for &(n, d, _) in dims.iter().rev() {
        if d <= span {
            return None;
        }
        span = span.checked_add((n - 1).checked_mul(d)?)?;
    }
    let mut out = Dims::new();
    for (n, d, s) in dims {
        match out.last_mut() {
            Some(last) if Some(last.1) == d.checked_mul(n) && Some(last.2) == s.checked_mul(n) => {
                *last = (last.0 * n, d, s);
            }
            _ => out.push((n, d, s)),
        }
    }
    Some(out)
}

/// Whether every element of `(shape, strides, offset)` lies in a buffer of `len`.
fn in_bounds(len: usize, shape: &[usize], strides: &[usize], offset: usize) -> bool {
    if shape.contains(&0) {
        return true;
    }
    let mut last = Some(offset);
    for (&n, &s) in shape.iter().zip(strides) {
        last = last.and_then(|l| (n - 1).checked_mul(s).and_then(|e| l.checked_add(e)));
    }
    last.is_some_and(|l| l < len)
}

/// A pointer that pieces of one copy share (each writes elements no other piece writes).
#[derive(Clone, Copy)]
struct Raw<T>(*mut T);
// SAFETY: only used by [`copy_planned`], whose pieces only read the source and write
// disjoint destination elements, bitwise: `T: Copy` has no interior mutability
// (`UnsafeCell` is not `Copy`) and no drop, and no piece uses a value it moves (the
// copies are the caller's once the call returns), so no `T` is shared or used on
// another thread, whatever `T` is.
unsafe impl<T> Send for Raw<T> {}
unsafe impl<T> Sync for Raw<T> {}

impl<T> Raw<T> {
    /// The pointer (a method, so that closures capture the `Raw`, not the field).
    #[inline(always)]
    fn at(self, i: usize) -> *mut T {
        // (callers stay within the buffer: see `copy_planned`)
        self.0.wrapping_add(i)
    }
}

/// Runs `f(i)` for every `i < n`: on the pool when `parallel`, else in order here.
pub(crate) fn for_each_piece(n: usize, parallel: bool, f: &(dyn Fn(usize) + Sync)) {
    if !parallel || n < 2 {
        (0..n).for_each(f);
    } else if rayon::current_thread_index().is_some() {
        use rayon::prelude::*;
        (0..n).into_par_iter().for_each(f);
    } else {
        crate::runtime::for_each_index_with_caller(n, f);
    }
}

/// One row of a copy: `len` elements, destination stride `ds`, source stride `ss`.
///
/// # Safety
/// `d` and `s` must be valid for the `len` strided elements, and not overlap.
#[inline(always)]
unsafe fn copy_row<T: Copy>(d: *mut T, ds: usize, s: *const T, ss: usize, len: usize) {
    // SAFETY: the caller's guarantee, element by element.
    unsafe {
        match (ds, ss) {
            (1, 1) => std::ptr::copy_nonoverlapping(s, d, len),
            // (a short row stays inline: the AVX2 build is a call, per row)
            (1, 0) if len >= 64 => {
                let v = *s;
                super::wide::wide(|| std::slice::from_raw_parts_mut(d, len).fill(v))
            }
            (1, 0) => std::slice::from_raw_parts_mut(d, len).fill(*s),
            (1, 2) if len >= 16 && registers::available::<T>() => registers::every_other(d, s, len),
            _ => strided_row(d, ds, s, ss, len),
        }
    }
}

/// `rows` rows of [`copy_row`], the `t`-th at `d + t * dm` and `s + t * sm`; a short
/// contiguous row (up to 8 elements) is one fixed-size move, not a `memcpy` call.
///
/// # Safety
/// As [`copy_row`], for every row.
#[inline(never)]
unsafe fn copy_rows<T: Copy>(
    d: *mut T,
    dm: usize,
    s: *const T,
    sm: usize,
    rows: usize,
    (ds, ss, len): (usize, usize, usize),
) {
    /// The rows of `N` contiguous elements each.
    #[inline(always)]
    unsafe fn fixed<T: Copy, const N: usize>(
        d: *mut T,
        dm: usize,
        s: *const T,
        sm: usize,
        rows: usize,
    ) {
        for t in 0..rows {
            // SAFETY: the caller's guarantee: N elements in bounds at both, apart.
            unsafe {
                let v = s.add(t * sm).cast::<[T; N]>().read();
                d.add(t * dm).cast::<[T; N]>().write(v);
            }
        }
    }
    // SAFETY: the caller's guarantee, row by row.
    unsafe {
        match (ds, ss, len) {
            (1, 1, 1) => fixed::<T, 1>(d, dm, s, sm, rows),
            (1, 1, 2) => fixed::<T, 2>(d, dm, s, sm, rows),
            (1, 1, 3) => fixed::<T, 3>(d, dm, s, sm, rows),
            (1, 1, 4) => fixed::<T, 4>(d, dm, s, sm, rows),
            (1, 1, 5) => fixed::<T, 5>(d, dm, s, sm, rows),
            (1, 1, 6) => fixed::<T, 6>(d, dm, s, sm, rows),
            (1, 1, 7) => fixed::<T, 7>(d, dm, s, sm, rows),
            (1, 1, 8) => fixed::<T, 8>(d, dm, s, sm, rows),
            _ => {
                for t in 0..rows {
                    copy_row(d.add(t * dm), ds, s.add(t * sm), ss, len);
                }
            }
        }
    }
}

/// [`copy_row`]'s element loop, kept out of line: inlined into the copy's piece closure
/// it reloaded its destination pointer from the stack every element (a 2048² float32
/// `x[:, ::3]` copy: about 2 cycles an element).
///
/// # Safety
/// As [`copy_row`].
#[inline(never)]
unsafe fn strided_row<T: Copy>(d: *mut T, ds: usize, s: *const T, ss: usize, len: usize) {
    // SAFETY: the caller's guarantee, element by element.
    unsafe {
        if ds == 1 {
            for j in 0..len {
                *d.add(j) = *s.add(j * ss);
            }
        } else {
            for j in 0..len {
                *d.add(j * ds) = *s.add(j * ss);
            }
        }
    }
}

/// The offsets (destination, source) of outer index `i` over `dims`, row-major.
#[inline]
fn outer_offsets(dims: &[(usize, usize, usize)], mut i: usize) -> (usize, usize) {
    let (mut od, mut os) = (0, 0);
    for &(n, d, s) in dims.iter().rev() {
        let k = i % n;
        i /= n;
        od += k * d;
        os += k * s;
    }
    (od, os)
}

/// The copy of a plan: `dst` and `src` point at the first element of each layout.
///
/// # Safety
/// Every offset the plan reaches from `dst` / `src` must lie in their buffers, the
/// destination offsets must be distinct (as [`plan`] checks) and the buffers must not
/// overlap.
unsafe fn copy_planned<T: Copy>(dst: *mut T, src: *const T, dims: &[(usize, usize, usize)]) {
    let n: usize = dims.iter().map(|d| d.0).product();
    if n == 0 {
        return;
    }
    let parallel = n >= COPY_PAR_MIN && crate::runtime::intra_op_parallel();
    let (dp, sp) = (Raw(dst), Raw(src.cast_mut()));
    let Some(&(inner, ds_in, ss_in)) = dims.last() else {
        // SAFETY: a 0-d copy: one element, in bounds (the caller's guarantee).
        unsafe { *dst = *src };
        return;
    };
    let b = tile::<T>();
    // A transpose: the source's stride-1 dim is not the innermost one. (A narrow one too:
    // `movedim` of a few channels to the innermost dim, 4 x 64 x 256 -> 64 x 256 x 4, ran
    // as 16K rows of 4 strided elements, a row's call and offset divisions each: 2.3 ns
    // an element, 3.1x torch's time; the strips read its few source rows in step.)
    let tk = (ss_in > 1 && ds_in == 1 && inner >= 2)
        .then(|| {
            dims[..dims.len() - 1]
                .iter()
                .rposition(|&(m, _, s)| s == 1 && m >= b)
        })
        .flatten();
    if let Some(k) = tk {
        let (rows, ds_k, _) = dims[k];
        let mut outer: Dims = dims[..dims.len() - 1].iter().copied().collect();
        outer.remove(k);
        let n_outer: usize = outer.iter().map(|d| d.0).product();
        // square tiles of b x b; strips of as many elements where the inner dim is narrow
        let h = if inner < b { b * (b / inner) } else { b };
        let strips = rows.div_ceil(h);
        let regs = registers::available::<T>();
        let piece = |p: usize| {
            let (o, strip) = (p / strips, p % strips);
            let (od, os) = outer_offsets(&outer, o);
            let (i0, i1) = (strip * h, (strip * h + h).min(rows));
            let mut j0 = 0;
            while j0 < inner {
                let j1 = (j0 + b).min(inner);
                if i1 - i0 == b && j1 - j0 == b && regs {
                    // SAFETY: a whole tile of the copy's shape: every offset below is
                    // one of its elements (in bounds), written by this piece alone.
                    unsafe {
                        registers::tile::<T>(
                            dp.at(od + i0 * ds_k + j0),
                            ds_k,
                            sp.at(os + i0 + j0 * ss_in),
                            ss_in,
                        )
                    };
                    j0 = j1;
                    continue;
                }
                for i in i0..i1 {
                    // SAFETY: (o, i, j) is an index of the copy's shape, so both offsets
                    // are in bounds; this piece alone writes destination row i's tile.
                    unsafe {
                        let d = dp.at(od + i * ds_k);
                        let s = sp.at(os + i);
                        for j in j0..j1 {
                            *d.add(j) = *s.add(j * ss_in);
                        }
                    }
                }
                j0 = j1;
            }
        };
        for_each_piece(n_outer * strips, parallel, &piece);
        return;
    }
    // Runs of rows: pieces of about `unit` elements, whole rows where rows are short.
    let rows = n / inner;
    // (about four pieces a thread: long contiguous runs per thread, which the hardware
    // prefetchers follow; n/64 pieces claimed in turn made fill_ at 4M slower on two
    // threads than on one. A copy's result never depends on its split.)
    let unit = n
        .div_ceil(4 * crate::runtime::num_threads().max(1))
        .max(1 << 14);
    let rows_per = (unit / inner).max(1);
    let splits_row = inner > unit;
    let outer = &dims[..dims.len() - 1];
    let (pieces, per_row) = if splits_row {
        let per_row = inner.div_ceil(unit);
        (rows * per_row, per_row)
    } else {
        (rows.div_ceil(rows_per), 0)
    };
    let piece = |p: usize| {
        if splits_row {
            let (r, c) = (p / per_row, p % per_row);
            let (od, os) = outer_offsets(outer, r);
            let (j0, j1) = (c * unit, (c * unit + unit).min(inner));
            // SAFETY: elements j0..j1 of row r: in bounds, written by this piece alone.
            unsafe {
                copy_row(
                    dp.at(od + j0 * ds_in),
                    ds_in,
                    sp.at(os + j0 * ss_in),
                    ss_in,
                    j1 - j0,
                );
            }
            return;
        }
        let (r0, r1) = (p * rows_per, (p * rows_per + rows_per).min(rows));
        let Some((&(m, dm, sm), outer2)) = outer.split_last() else {
            // SAFETY: the only row (no outer dim): in bounds, this piece's alone.
            unsafe { copy_row(dp.at(0), ds_in, sp.at(0), ss_in, inner) };
            return;
        };
        // Rows r0..r1 in runs along the next dim out, whose offsets step by (dm, sm):
        // one offset computation a run, not a row (rows of 4 elements, `unfold(1, 4, 2)`
        // of 2048², had spent two divisions and a call a row: 3x torch's time).
        let mut r = r0;
        while r < r1 {
            let (q, k) = (r / m, r % m);
            let run = (m - k).min(r1 - r);
            let (od, os) = outer_offsets(outer2, q);
            // SAFETY: rows r..r + run of the copy's shape: in bounds, this piece's alone.
            unsafe {
                copy_rows(
                    dp.at(od + k * dm),
                    dm,
                    sp.at(os + k * sm),
                    sm,
                    run,
                    (ds_in, ss_in, inner),
                )
            };
            r += run;
        }
    };
    for_each_piece(pieces, parallel, &piece);
}

/// Whole tiles of a transposing copy through AVX2 registers: eight rows loaded, the 8x8
/// block of 4-byte elements (4x4 of 8-byte ones) transposed by unpacks and lane
/// permutes, eight rows stored. Each cache line of the tile is read or written in one
/// go, where the element loop revisited the tile's 16 source and 16 destination lines
/// 16 times each; with row strides a multiple of 4 KiB those 32 lines share one L1 set
/// and evicted each other (1024x1024 float32 `t().contiguous()`: 2.5x torch's time).
/// The elements are moved as bits (no arithmetic), so every dtype of the size is exact.
mod registers {
    /// Whether [`tile`] runs here: AVX2 (within `RGRAD_VMATH_LEVEL`'s cap), 4- or 8-byte
    /// elements.
    #[inline]
    pub(super) fn available<T>() -> bool {
        let size = std::mem::size_of::<T>();
        cfg!(target_arch = "x86_64")
            && (size == 4 || size == 8)
            && super::super::vmath::level() >= super::super::vmath::Level::Avx2
    }

    /// dst[i * ds + j] = src[i + j * ss] for i, j < `super::tile::<T>()` (16 elements
    /// of 4 bytes, 8 of 8 bytes).
    ///
    /// # Safety
    /// [`available`] must have said yes for `T`, and every offset named must lie in its
    /// buffer, the two not overlapping.
    #[inline]
    pub(super) unsafe fn tile<T>(dst: *mut T, ds: usize, src: *const T, ss: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: the caller's guarantees; AVX2 is present (`available`).
            unsafe {
                if std::mem::size_of::<T>() == 4 {
                    let (d, s) = (dst.cast::<f32>(), src.cast::<f32>());
                    for (a, b) in [(0, 0), (0, 8), (8, 0), (8, 8)] {
                        x86::block_32(d.add(a * ds + b), ds, s.add(a + b * ss), ss);
                    }
                } else {
                    let (d, s) = (dst.cast::<f64>(), src.cast::<f64>());
                    for (a, b) in [(0, 0), (0, 4), (4, 0), (4, 4)] {
                        x86::block_64(d.add(a * ds + b), ds, s.add(a + b * ss), ss);
                    }
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (dst, ds, src, ss);
            unreachable!("registers::available is false off x86-64");
        }
    }

    /// d[j] = s[2 j] for j < `len` (a row of `x[..., ::2]`): two vectors of the source
    /// per vector of the destination, their even elements picked by shuffles, where the
    /// element loop took about 2 cycles an element (2048² float32 `x[::2, ::2]`, one
    /// thread: 1.5x torch's time).
    ///
    /// # Safety
    /// [`available`] must have said yes for `T`; `d` valid for `len` elements, `s` for
    /// `2 len - 1`, not overlapping.
    #[inline]
    pub(super) unsafe fn every_other<T>(d: *mut T, s: *const T, len: usize) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller's guarantees; AVX2 is present (`available`).
        unsafe {
            if std::mem::size_of::<T>() == 4 {
                x86::every_other_32(d.cast(), s.cast(), len)
            } else {
                x86::every_other_64(d.cast(), s.cast(), len)
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (d, s, len);
            unreachable!("registers::available is false off x86-64");
        }
    }

    #[cfg(target_arch = "x86_64")]
    mod x86 {
        use std::arch::x86_64::*;

        /// [`every_other`](super::every_other) for 4-byte elements.
        ///
        /// # Safety
        /// AVX2; `d` valid for `len` elements, `s` for `2 len - 1`.
        #[target_feature(enable = "avx2")]
        pub(super) unsafe fn every_other_32(d: *mut f32, s: *const f32, len: usize) {
            // SAFETY: the caller's guarantee: a vector at j reads source elements up
            // to 2 j + 15, which is at most 2 len - 2, the last one named, while j + 8
            // < len (the odd element after the last even one may lie past the buffer);
            // the rest element by element.
            unsafe {
                let mut j = 0;
                while j + 8 < len {
                    let a = _mm256_loadu_ps(s.add(2 * j));
                    let b = _mm256_loadu_ps(s.add(2 * j + 8));
                    // even elements of each 128-bit lane: a0 a2 b0 b2 | a4 a6 b4 b6
                    let e = _mm256_shuffle_ps::<0b10_00_10_00>(a, b);
                    // in order: a0 a2 a4 a6 b0 b2 b4 b6
                    let o = _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(
                        _mm256_castps_pd(e),
                    ));
                    _mm256_storeu_ps(d.add(j), o);
                    j += 8;
                }
                for j in j..len {
                    *d.add(j) = *s.add(2 * j);
                }
            }
        }

        /// [`every_other`](super::every_other) for 8-byte elements.
        ///
        /// # Safety
        /// AVX2; `d` valid for `len` elements, `s` for `2 len - 1`.
        #[target_feature(enable = "avx2")]
        pub(super) unsafe fn every_other_64(d: *mut f64, s: *const f64, len: usize) {
            // SAFETY: as in `every_other_32`, four elements a vector (reads up to
            // 2 j + 7 <= 2 len - 2 while j + 4 < len).
            unsafe {
                let mut j = 0;
                while j + 4 < len {
                    let a = _mm256_loadu_pd(s.add(2 * j));
                    let b = _mm256_loadu_pd(s.add(2 * j + 4));
                    // a0 b0 | a2 b2
                    let e = _mm256_unpacklo_pd(a, b);
                    // a0 a2 b0 b2
                    let o = _mm256_permute4x64_pd::<0b11_01_10_00>(e);
                    _mm256_storeu_pd(d.add(j), o);
                    j += 4;
                }
                for j in j..len {
                    *d.add(j) = *s.add(2 * j);
                }
            }
        }

        /// d[k * ds + m] = s[m * ss + k] for k, m < 8 (4-byte elements): row k of the
        /// output is column k of the eight source rows `s + m * ss`.
        ///
        /// # Safety
        /// AVX2; 8 elements at each of the 8 rows of both, in bounds.
        #[target_feature(enable = "avx2")]
        pub(super) unsafe fn block_32(d: *mut f32, ds: usize, s: *const f32, ss: usize) {
            // SAFETY: the caller's guarantee (unaligned loads and stores).
            unsafe {
                let r: [__m256; 8] = std::array::from_fn(|k| _mm256_loadu_ps(s.add(k * ss)));
                let t0 = _mm256_unpacklo_ps(r[0], r[1]);
                let t1 = _mm256_unpackhi_ps(r[0], r[1]);
                let t2 = _mm256_unpacklo_ps(r[2], r[3]);
                let t3 = _mm256_unpackhi_ps(r[2], r[3]);
                let t4 = _mm256_unpacklo_ps(r[4], r[5]);
                let t5 = _mm256_unpackhi_ps(r[4], r[5]);
                let t6 = _mm256_unpacklo_ps(r[6], r[7]);
                let t7 = _mm256_unpackhi_ps(r[6], r[7]);
                let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
                let u1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
                let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
                let u3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
                let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
                let u5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
                let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
                let u7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
                let o = [
                    _mm256_permute2f128_ps::<0x20>(u0, u4),
                    _mm256_permute2f128_ps::<0x20>(u1, u5),
                    _mm256_permute2f128_ps::<0x20>(u2, u6),
                    _mm256_permute2f128_ps::<0x20>(u3, u7),
                    _mm256_permute2f128_ps::<0x31>(u0, u4),
                    _mm256_permute2f128_ps::<0x31>(u1, u5),
                    _mm256_permute2f128_ps::<0x31>(u2, u6),
                    _mm256_permute2f128_ps::<0x31>(u3, u7),
                ];
                for (k, v) in o.into_iter().enumerate() {
                    _mm256_storeu_ps(d.add(k * ds), v);
                }
            }
        }

        /// [`block_32`] for 4x4 blocks of 8-byte elements.
        ///
        /// # Safety
        /// AVX2; 4 elements at each of the 4 rows of both, in bounds.
        #[target_feature(enable = "avx2")]
        pub(super) unsafe fn block_64(d: *mut f64, ds: usize, s: *const f64, ss: usize) {
            // SAFETY: the caller's guarantee (unaligned loads and stores).
            unsafe {
                let r: [__m256d; 4] = std::array::from_fn(|k| _mm256_loadu_pd(s.add(k * ss)));
                let t0 = _mm256_unpacklo_pd(r[0], r[1]);
                let t1 = _mm256_unpackhi_pd(r[0], r[1]);
                let t2 = _mm256_unpacklo_pd(r[2], r[3]);
                let t3 = _mm256_unpackhi_pd(r[2], r[3]);
                let o = [
                    _mm256_permute2f128_pd::<0x20>(t0, t2),
                    _mm256_permute2f128_pd::<0x20>(t1, t3),
                    _mm256_permute2f128_pd::<0x31>(t0, t2),
                    _mm256_permute2f128_pd::<0x31>(t1, t3),
                ];
                for (k, v) in o.into_iter().enumerate() {
                    _mm256_storeu_pd(d.add(k * ds), v);
                }
            }
        }
    }
}

/// Copies `src` (over `ls`) into `dst`'s positions of `ld` (the same shape): the
/// normalised, tiled and split copy above, or a plain row-major walk where the
/// destination writes some memory twice or a layout leaves its buffer (which then
/// panics on the bad index, as before: the op layer never builds such layouts).
pub fn copy_layout<T: Copy>(dst: &mut [T], ld: &Layout, src: &[T], ls: &Layout) {
    if ld.numel() == 0 {
        return;
    }
    let planned = in_bounds(dst.len(), &ld.shape, &ld.strides, ld.offset)
        && in_bounds(src.len(), &ls.shape, &ls.strides, ls.offset)
        && ld.shape == ls.shape;
    if planned && let Some(dims) = plan(&ld.shape, &ld.strides, &ls.strides) {
        // SAFETY: both layouts lie in their buffers (checked above), so every offset the
        // plan reaches does; the plan's destination offsets are distinct; `dst` is a
        // unique borrow, so it does not overlap `src`.
        unsafe {
            copy_planned(
                dst.as_mut_ptr().add(ld.offset),
                src.as_ptr().add(ls.offset),
                &dims,
            );
        }
        return;
    }
    for_each_offset2(
        &ld.shape,
        (&ld.strides, ld.offset),
        (&ls.strides, ls.offset),
        |od, os| {
            dst[od] = src[os];
        },
    );
}

/// `cat`: the parts (each over its layout, all of `out_shape` but along `dim`, where
/// their sizes add up to `out_shape[dim]`) copied side by side along `dim` into a new
/// row-major buffer. Each part is one planned copy into its slab of the output (rows of
/// a memcpy each, split across the pool when large), written straight into fresh memory:
/// the parts cover every element, so no zeroing pass is needed.
pub fn cat<T: Copy + Default>(
    parts: &[(&[T], &Layout)],
    dim: usize,
    out_shape: &[usize],
) -> Vec<T> {
    let n = crate::shape::numel(out_shape);
    let out_l = Layout::contiguous(out_shape);
    let mut at = 0usize;
    let mut slabs = Vec::with_capacity(parts.len());
    let mut planned = dim < out_shape.len();
    for &(data, l) in parts {
        let len = if l.ndim() == 0 {
            1
        } else {
            l.shape.get(dim).copied().unwrap_or(0)
        };
        let dst = out_l.narrow(dim, at, len).ok();
        planned &= dst.as_ref().is_some_and(|d| d.shape == l.shape)
            && in_bounds(data.len(), &l.shape, &l.strides, l.offset);
        slabs.push(dst);
        at += len;
    }
    if !planned || Some(&at) != out_shape.get(dim) {
        // (a shape the op layer never builds: the checked copies, into zeros)
        let mut out = vec![T::default(); n];
        for (&(data, l), dst) in parts.iter().zip(&slabs) {
            if let Some(dst) = dst.as_ref().filter(|d| d.shape == l.shape) {
                copy_layout(&mut out, dst, data, l);
            }
        }
        return out;
    }
    let mut out: Vec<T> = Vec::with_capacity(n);
    for (&(data, l), dst) in parts.iter().zip(&slabs) {
        let Some(dst) = dst else { continue };
        if dst.numel() == 0 {
            continue;
        }
        match plan(&dst.shape, &dst.strides, &l.strides) {
            // SAFETY: the slab is a narrow of the row-major output, so its offsets are
            // distinct and lie in `out`'s capacity of `n`; the part's layout lies in its
            // buffer (checked above); `out` is a fresh allocation, overlapping nothing.
            Some(dims) => unsafe {
                copy_planned(
                    out.as_mut_ptr().add(dst.offset),
                    data.as_ptr().add(l.offset),
                    &dims,
                );
            },
            // (a narrow of a row-major layout always plans; kept for safety)
            None => {
                let mut z = vec![T::default(); n];
                for (&(data, l), dst) in parts.iter().zip(&slabs) {
                    if let Some(dst) = dst.as_ref().filter(|d| d.shape == l.shape) {
                        copy_layout(&mut z, dst, data, l);
                    }
                }
                return z;
            }
        }
    }
    // SAFETY: the slabs partition the output along `dim` (their sizes add up to
    // `out_shape[dim]`, checked above), and each was written whole, so all `n` elements
    // are initialised.
    unsafe { out.set_len(n) };
    out
}

/// A row-major copy of `layout`'s elements of `data` (see [`copy_layout`]).
pub fn to_vec<T: Copy>(data: &[T], layout: &Layout) -> Vec<T> {
    let n = layout.numel();
    if n == 0 {
        return Vec::new();
    }
    if !in_bounds(data.len(), &layout.shape, &layout.strides, layout.offset) {
        // (a bad layout: index as before, which panics on the bad offset)
        let mut out = Vec::with_capacity(n);
        for_each_offset(&layout.shape, &layout.strides, layout.offset, |o| {
            out.push(data[o])
        });
        return out;
    }
    let ld = crate::shape::contiguous_strides(&layout.shape);
    let dims = plan(&layout.shape, &ld, &layout.strides);
    let mut out: Vec<T> = Vec::with_capacity(n);
    if let Some(dims) = dims {
        // SAFETY: the source layout lies in `data` (checked above); the destination is the
        // row-major layout of `n` elements, whose offsets are distinct and lie in `out`'s
        // capacity, a fresh allocation. Every element of it is written exactly once (the
        // plan covers the whole shape), so all `n` are initialised before `set_len`.
        unsafe {
            copy_planned(out.as_mut_ptr(), data.as_ptr().add(layout.offset), &dims);
            out.set_len(n);
        }
    } else {
        // (row-major strides are always distinct: unreachable, kept for safety)
        for_each_offset(&layout.shape, &layout.strides, layout.offset, |o| {
            out.push(data[o])
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_transposed_layout_in_row_major_order() {
        let l = Layout::contiguous(&[2, 3]).transpose(0, 1).unwrap();
        let data = [0, 1, 2, 3, 4, 5];
        assert_eq!(&*contiguous(&data, &l), &[0, 3, 1, 4, 2, 5]);
    }

    /// The reference: a row-major walk, element by element.
    fn walk<T: Copy>(data: &[T], l: &Layout) -> Vec<T> {
        let mut out = vec![];
        for_each_offset(&l.shape, &l.strides, l.offset, |o| out.push(data[o]));
        out
    }

    /// Layouts over a buffer of `len` elements that every copy path meets: contiguous,
    /// transposed and permuted (tiled), narrowed and stepped (strided rows), expanded
    /// (fills), 0-d, empty, and sizes around the tile and the parallel threshold.
    fn layouts() -> Vec<(usize, Layout)> {
        let c = |s: &[usize]| Layout::contiguous(s);
        let mut v = vec![];
        for &(n, m) in &[
            (1, 1),
            (3, 5),
            (17, 33),
            (64, 64),
            (300, 257),
            (1024, 100),
            (517, 1031),
            // transposed: narrow inner dims (a few channels moved innermost)
            (2, 1000),
            (5, 40),
            (15, 100),
        ] {
            v.push((n * m, c(&[n, m])));
            v.push((n * m, c(&[n, m]).transpose(0, 1).unwrap()));
            v.push((n * m, c(&[n, m]).narrow(1, m / 3, m - m / 3).unwrap()));
            v.push((
                n * m,
                c(&[n, m])
                    .narrow(0, n / 2, n - n / 2)
                    .unwrap()
                    .transpose(0, 1)
                    .unwrap(),
            ));
            let stepped = Layout {
                shape: smallvec::smallvec![n.div_ceil(2), m.div_ceil(2)],
                strides: smallvec::smallvec![2 * m, 2],
                offset: 0,
            };
            v.push((n * m, stepped));
            v.push((m, c(&[m]).unsqueeze(0).expand(&[n, m]).unwrap()));
            v.push((n, c(&[n, 1]).expand(&[n, m]).unwrap()));
        }
        // unfold's windows (overlapping short rows: `copy_rows`' fixed-size moves), over
        // the parallel threshold with pieces that end inside a run, and in 3-d
        for &(n, m, w, st) in &[
            (17, 33, 4, 2),
            (300, 257, 3, 1),
            (64, 64, 8, 8),
            (5, 40, 9, 3),
            (1024, 100, 4, 2),
            (700, 130, 1, 3),
            (40, 90, 7, 5),
        ] {
            let windows = (m - w) / st + 1;
            v.push((
                n * m,
                Layout {
                    shape: smallvec::smallvec![n, windows, w],
                    strides: smallvec::smallvec![m, st, 1],
                    offset: 0,
                },
            ));
            v.push((
                n * m,
                Layout {
                    shape: smallvec::smallvec![2, n / 2, windows, w],
                    strides: smallvec::smallvec![(n / 2) * m, m, st, 1],
                    offset: n % 2,
                },
            ));
        }
        for &(a, b, d) in &[(4, 64, 48), (2, 3, 4), (8, 128, 96), (3, 70, 300)] {
            let l = c(&[a, b, d]);
            for p in [[2, 0, 1], [1, 2, 0], [0, 2, 1], [2, 1, 0]] {
                v.push((a * b * d, l.permute(&p).unwrap()));
            }
            // a repeat's view: [r, a, 1, b, d] from [a, b, d] broadcast along r
            let e = Layout {
                shape: smallvec::smallvec![3, a, 2, b, d],
                strides: smallvec::smallvec![0, b * d, 0, d, 1],
                offset: 0,
            };
            v.push((a * b * d, e));
        }
        v.push((
            1,
            Layout {
                shape: smallvec::smallvec![],
                strides: smallvec::smallvec![],
                offset: 0,
            },
        ));
        v.push((
            10,
            Layout {
                shape: smallvec::smallvec![],
                strides: smallvec::smallvec![],
                offset: 7,
            },
        ));
        v.push((0, c(&[0, 5])));
        v.push((6, c(&[2, 0, 3])));
        v
    }

    #[test]
    fn to_vec_matches_the_walk_for_every_layout_and_dtype() {
        for (len, l) in layouts() {
            let f: Vec<f32> = (0..len).map(|i| i as f32 * 0.5).collect();
            assert_eq!(to_vec(&f, &l), walk(&f, &l), "{l:?}");
            let d: Vec<f64> = (0..len).map(|i| i as f64 - 3.0).collect();
            assert_eq!(to_vec(&d, &l), walk(&d, &l), "{l:?}");
            let i: Vec<i64> = (0..len as i64).collect();
            assert_eq!(to_vec(&i, &l), walk(&i, &l), "{l:?}");
            let b: Vec<bool> = (0..len).map(|i| i % 3 == 0).collect();
            assert_eq!(to_vec(&b, &l), walk(&b, &l), "{l:?}");
        }
    }

    #[test]
    fn transposing_copies_are_the_walk_at_every_level() {
        // whole tiles go through registers at the AVX2 level and above, the element loop
        // below it; NaN payloads and -0.0 are moved as bits
        use crate::backend::cpu::vmath;
        let restore = vmath::level();
        for level in vmath::supported() {
            vmath::set_level(level);
            for (len, l) in layouts() {
                let f: Vec<f32> = (0..len)
                    .map(|i| match i % 7 {
                        0 => f32::from_bits(0x7fc0_0000 | i as u32),
                        1 => -0.0,
                        _ => i as f32,
                    })
                    .collect();
                let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
                assert_eq!(bits(to_vec(&f, &l)), bits(walk(&f, &l)), "{level:?} {l:?}");
                let d: Vec<f64> = (0..len).map(|i| i as f64 - 3.0).collect();
                assert_eq!(to_vec(&d, &l), walk(&d, &l), "{level:?} {l:?}");
            }
        }
        vmath::set_level(restore);
    }

    #[test]
    fn copy_layout_writes_what_the_walk_writes() {
        // every layout as the source, into a row-major, a transposed and a narrowed
        // destination of the same shape
        for (len, ls) in layouts() {
            let src: Vec<f32> = (0..len).map(|i| i as f32).collect();
            let shape = ls.shape.clone();
            let n = ls.numel();
            let mut dests = vec![(n, Layout::contiguous(&shape))];
            if shape.len() == 2 {
                let t = Layout::contiguous(&[shape[1], shape[0]])
                    .transpose(0, 1)
                    .unwrap();
                dests.push((n, t));
                let wide = Layout::contiguous(&[shape[0], shape[1] + 3])
                    .narrow(1, 2, shape[1])
                    .unwrap();
                dests.push((shape[0] * (shape[1] + 3), wide));
            }
            for (dlen, ld) in dests {
                let mut got = vec![-1.0f32; dlen];
                copy_layout(&mut got, &ld, &src, &ls);
                let mut want = vec![-1.0f32; dlen];
                for_each_offset2(
                    &shape,
                    (&ld.strides, ld.offset),
                    (&ls.strides, ls.offset),
                    |od, os| want[od] = src[os],
                );
                assert_eq!(got, want, "{ld:?} <- {ls:?}");
            }
        }
    }

    #[test]
    fn copy_layout_into_an_overlapping_destination_keeps_row_major_order() {
        // a destination that writes one element many times (an expanded dim): the last
        // write wins, as in the row-major walk
        let ld = Layout::contiguous(&[4])
            .unsqueeze(0)
            .expand(&[3, 4])
            .unwrap();
        let src: Vec<i64> = (0..12).collect();
        let mut got = vec![0i64; 4];
        copy_layout(&mut got, &ld, &src, &Layout::contiguous(&[3, 4]));
        assert_eq!(got, vec![8, 9, 10, 11]);
    }

    #[test]
    fn walks_scalar_and_empty_layouts() {
        let mut seen = vec![];
        for_each_offset(&[], &[], 7, |o| seen.push(o));
        assert_eq!(seen, vec![7]);
        for_each_offset(&[0, 3], &[3, 1], 0, |o| seen.push(o));
        assert_eq!(seen, vec![7]);
    }
}
