//! Index kernels: gather / scatter-add, index_select / index_add, and advanced
//! indexing's pieces (checking and wrapping index values, a mask's nonzero coordinates,
//! index_put's writes).

use super::strided::{contiguous, for_each_offset};
use crate::dtype::{DType, Scalar};
use crate::layout::Layout;
use crate::storage::{Buffer, Element};
use crate::with_dtype;

/// An int64 index's values (`v` over `layout`, row-major), negative ones counting from
/// the end when `wrap` (advanced indexing's rule; gather and index_select take none),
/// each checked against `size`: `Err` holds the first one out of range. A contiguous
/// index with every value already in range is the index itself, checked in one read-only
/// pass (no copy to write: at 4M indices that copy, 32 MB of fresh memory, cost more than
/// the gather it fed).
pub fn index_values<'a>(
    v: &'a [i64],
    layout: &Layout,
    size: usize,
    wrap: bool,
) -> Result<std::borrow::Cow<'a, [i64]>, i64> {
    let vals = contiguous(v, layout);
    let n = size as i64;
    // (the largest value as unsigned: any negative one is huge)
    if vals.is_empty() || largest_unsigned(&vals) < size as u64 {
        return Ok(vals);
    }
    let first_bad = |lo: i64| {
        vals.iter()
            .copied()
            .find(|&i| i < lo || i >= n)
            .unwrap_or_default()
    };
    if !wrap {
        return Err(first_bad(0));
    }
    // One branch-free pass: a negative index wraps once, and [-n, n) is exactly what
    // lands in [0, n).
    let mut bad = false;
    let out: Vec<i64> = vals
        .iter()
        .map(|&i| {
            let w = i.wrapping_add(n & (i >> 63));
            bad |= w as u64 >= size as u64;
            w
        })
        .collect();
    if bad {
        return Err(first_bad(-n));
    }
    Ok(std::borrow::Cow::Owned(out))
}

/// An int64 index's values (`v` over `layout`, row-major), unchecked: borrowed where the
/// index is contiguous (for kernels that check them in their own pass).
pub fn index_list<'a>(v: &'a [i64], layout: &Layout) -> std::borrow::Cow<'a, [i64]> {
    contiguous(v, layout)
}

/// The largest of `v` read as unsigned (0 when empty), split across the pool for long
/// indices (the check is a pass of its own before the kernel: 4M indices, 32 MB, took
/// 2 ms on one thread while the gather it guards ran on two; a maximum is the same
/// whatever the split).
fn largest_unsigned(v: &[i64]) -> u64 {
    const PIECE: usize = 1 << 16;
    if v.len() >= 2 * PIECE && crate::runtime::intra_op_parallel() {
        use std::sync::atomic::{AtomicU64, Ordering};
        let per = v
            .len()
            .div_ceil(4 * crate::runtime::num_threads().max(1))
            .max(PIECE);
        let largest = AtomicU64::new(0);
        super::reduce::par::tasks(v.len().div_ceil(per), true, &|t| {
            let piece = &v[t * per..((t + 1) * per).min(v.len())];
            largest.fetch_max(largest_in(piece), Ordering::Relaxed);
        });
        return largest.into_inner();
    }
    largest_in(v)
}

/// [`largest_unsigned`] of one piece, in the widest vectors the CPU has: SSE2 has no
/// 64-bit compare, so the baseline loop is several times slower.
fn largest_in(v: &[i64]) -> u64 {
    #[inline(always)]
    fn fold(v: &[i64]) -> u64 {
        v.iter().fold(0u64, |m, &i| m.max(i as u64))
    }
    #[cfg(target_arch = "x86_64")]
    {
        use super::vmath::{Level, level};
        #[target_feature(enable = "avx512f")]
        fn avx512(v: &[i64]) -> u64 {
            fold(v)
        }
        #[target_feature(enable = "avx2")]
        fn avx2(v: &[i64]) -> u64 {
            fold(v)
        }
        match level() {
            // SAFETY: `level` reports what the CPU supports.
            Level::Avx512 => return unsafe { avx512(v) },
            // SAFETY: as above.
            Level::Avx2 => return unsafe { avx2(v) },
            Level::Baseline => {}
        }
    }
    fold(v)
}

/// `mask.nonzero()`: the coordinates of a bool mask's true elements (`v` over `layout`,
/// row-major), one column per dim.
pub fn nonzero(v: &[bool], layout: &Layout) -> Vec<Vec<i64>> {
    let vals = contiguous(v, layout);
    let shape = &layout.shape;
    let strides = crate::shape::contiguous_strides(shape);
    let mut cols: Vec<Vec<i64>> = vec![Vec::new(); shape.len()];
    for (i, &b) in vals.iter().enumerate() {
        if b {
            for (d, c) in cols.iter_mut().enumerate() {
                c.push(((i / strides[d]) % shape[d]) as i64);
            }
        }
    }
    cols
}

/// The element at `offset`, as a number.
pub fn element(buf: &Buffer, offset: usize) -> Scalar {
    let i = offset;
    match buf {
        Buffer::F32(v) => Scalar::Float(f64::from(v[i])),
        Buffer::F64(v) => Scalar::Float(v[i]),
        Buffer::I64(v) => Scalar::Int(v[i]),
        Buffer::Bool(v) => Scalar::Bool(v[i]),
        Buffer::Cuda(_) => crate::storage::not_host(),
    }
}

/// index_put: `x` (over `lx`) copied row-major as `dtype`, with the element at each
/// row-major position `positions[k]` set to (`accumulate`: increased by) `values[k]`
/// (`values` over `lv`, of `dtype`, row-major). Positions are written in order: of
/// repeated ones the last value wins, or all add up.
pub fn index_put(
    x: &Buffer,
    lx: &Layout,
    dtype: DType,
    positions: &[i64],
    values: &Buffer,
    lv: &Layout,
    accumulate: bool,
) -> Buffer {
    let mut out = super::elementwise::cast(x, lx, dtype);
    with_dtype!(dtype, T => {
        let o = T::slice_mut(&mut out);
        let s = contiguous(T::slice(values), lv);
        for (k, &p) in positions.iter().enumerate() {
            let v = s[k];
            o[p as usize] = if accumulate { T::from_f64(o[p as usize].to_f64() + v.to_f64()) } else { v };
        }
    });
    out
}

/// `x[before[i] + base[b] + after[j]] = values[i, b, j]` (`+=` with accumulate) in place,
/// `values` read in the row-major order of `lv` (the offsets into x's buffer checked by the
/// op layer): one pass over the written elements, as torch's index_put_ kernel, with a
/// run of contiguous elements (a row) copied at once.
pub fn index_put_in_place(
    x: &mut Buffer,
    before: &[usize],
    base: &[usize],
    after: &[usize],
    values: &Buffer,
    lv: &Layout,
    accumulate: bool,
) -> bool {
    fn put<T: Element>(
        o: &mut [T],
        (before, base, after): (&[usize], &[usize], &[usize]),
        v: &[T],
        add: Option<fn(T, T) -> T>,
    ) {
        debug_assert_eq!(v.len(), before.len() * base.len() * after.len());
        let run = after.len();
        let contiguous = after.iter().enumerate().all(|(j, &a)| a == j);
        let mut rows = v.chunks_exact(run.max(1));
        for &i in before {
            for &b in base {
                let (Some(src), start) = (rows.next(), i + b) else {
                    return;
                };
                match add {
                    None if contiguous => o[start..start + run].copy_from_slice(src),
                    None => after.iter().zip(src).for_each(|(&a, &v)| o[start + a] = v),
                    Some(add) => after
                        .iter()
                        .zip(src)
                        .for_each(|(&a, &v)| o[start + a] = add(o[start + a], v)),
                }
            }
        }
    }
    if values.dtype() != x.dtype() {
        return false;
    }
    let (acc, at) = (accumulate, (before, base, after));
    // (integers wrap on overflow and bools add as `or`, as in torch)
    match x {
        Buffer::F32(o) => put(
            o,
            at,
            &contiguous(f32::slice(values), lv),
            acc.then_some(|a, b| a + b),
        ),
        Buffer::F64(o) => put(
            o,
            at,
            &contiguous(f64::slice(values), lv),
            acc.then_some(|a, b| a + b),
        ),
        Buffer::I64(o) => put(
            o,
            at,
            &contiguous(i64::slice(values), lv),
            acc.then_some(i64::wrapping_add),
        ),
        Buffer::Bool(o) => put(
            o,
            at,
            &contiguous(bool::slice(values), lv),
            acc.then_some(|a, b| a | b),
        ),
        Buffer::Cuda(_) => return false,
    }
    true
}

/// `out[..., i, ...] = src[..., index[..., i, ...], ...]` along `dim` (torch.gather).
/// `index` is contiguous with the output's shape; bounds are checked by the caller.
/// Asks for every cache line of `s` to be brought into L1 (a hint: no effect on results).
#[inline(always)]
fn prefetch_lines<T>(s: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let (p, bytes) = (s.as_ptr().cast::<i8>(), std::mem::size_of_val(s));
        for o in (0..bytes).step_by(64) {
            // SAFETY: `p + o` lies inside `s`; a prefetch never faults or writes.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.add(o)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = s;
}

/// Whether a gather takes [`gather_rows`]: along the last dim of a contiguous input, the
/// index of the same outer shape and non-empty.
fn along_rows(layout: &Layout, dim: usize, index_shape: &[usize]) -> bool {
    let last = layout.ndim().saturating_sub(1);
    dim == last
        && layout.is_contiguous()
        && index_shape.len() == layout.ndim()
        && index_shape[..last] == layout.shape[..last]
        && index_shape[last] > 0
}

/// A gather along the rows of a contiguous input (a loss picking each row's targets, a
/// permutation of each row): output element k reads row k / kc at its index, in
/// parallel chunks of the output. With `CHECK`, the indices are checked here, in the
/// same pass (`None` if one is out of range); without, they were checked before (an
/// index out of range still panics on the row's bounds, never reads outside it).
fn gather_rows<T: Element, const CHECK: bool>(
    data: &[T],
    layout: &Layout,
    index: &[i64],
    index_shape: &[usize],
) -> Option<Vec<T>> {
    let last = layout.ndim() - 1;
    let (cols, kc, off) = (layout.shape[last], index_shape[last], layout.offset);
    // With about one read per cache line of a row or more (a permutation of each row),
    // the reads hit the row's lines in random order, which the hardware prefetchers
    // cannot follow: each row's lines are asked for ahead, the next row's while this one
    // is read (2048 x 2048 float32 with 2048 indices a row, one thread: 8.1 to 7.2 ms,
    // the index check's 2 ms included).
    let ahead = kc * 16 >= cols && cols * std::mem::size_of::<T>() >= 1024;
    let bad = std::sync::atomic::AtomicBool::new(false);
    let out = super::elementwise::fill_chunks(index.len(), |start, out| {
        // a row's piece at a time: the row's slice bounds each read (one division per
        // chunk, not per row: with one index a row, nll_loss's case, a division per
        // element was most of the kernel)
        let (mut k, mut r, mut c0) = (start, start / kc, start % kc);
        let mut rest = out;
        let mut out_of_range = false;
        if ahead {
            prefetch_lines(&data[off + r * cols..off + (r + 1) * cols]);
        }
        while !rest.is_empty() {
            let len = (kc - c0).min(rest.len());
            let row = &data[off + r * cols..off + (r + 1) * cols];
            if ahead
                && len < rest.len()
                && let Some(next) = data.get(off + (r + 1) * cols..off + (r + 2) * cols)
            {
                prefetch_lines(next);
            }
            let (head, tail) = rest.split_at_mut(len);
            for (o, &j) in head.iter_mut().zip(&index[k..k + len]) {
                if CHECK {
                    // (a negative index is huge as unsigned: out of range too)
                    o.write(match row.get(j as usize) {
                        Some(&v) => v,
                        None => {
                            out_of_range = true;
                            T::from_f64(0.0)
                        }
                    });
                } else {
                    o.write(row[j as usize]);
                }
            }
            rest = tail;
            k += len;
            r += 1;
            c0 = 0;
        }
        if out_of_range {
            bad.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    });
    (!bad.into_inner()).then_some(out)
}

/// [`gather`] with index values not yet checked against the input's size along `dim`,
/// checked in the kernel's own pass where it can (along rows: the separate check read
/// all the indices once more, 32 MB at 4M, about a fifth of the op). `None` where an
/// index is out of range or the kernel does not check its own: the op layer checks (for
/// its error) and calls [`gather`].
pub fn gather_checking(
    buf: &Buffer,
    layout: &Layout,
    dim: usize,
    index: &[i64],
    index_shape: &[usize],
) -> Option<Buffer> {
    // (no element along `dim`: every index is out of range, and the rows may start past
    // the buffer's end)
    if index.is_empty() || !along_rows(layout, dim, index_shape) || layout.shape[dim] == 0 {
        return None;
    }
    with_dtype!(buf.dtype(), T => {
        gather_rows::<T, true>(T::slice(buf), layout, index, index_shape).map(T::into_buffer)
    })
}

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
        if index.is_empty() {
            // nothing to read (rows of an empty input may start past its buffer's end)
            return T::into_buffer(out);
        }
        let last = layout.ndim().saturating_sub(1);
        if along_rows(layout, dim, index_shape)
            && let Some(out) = gather_rows::<T, false>(data, layout, index, index_shape)
        {
            return T::into_buffer(out);
        }
        if dim == last && layout.strides.get(last) == Some(&1) && index_shape.len() == layout.ndim() {
            // along contiguous rows (a loss picking each row's target): a row at a time
            let (cols, k) = (layout.shape[last], index_shape[last]);
            let mut outer = layout.clone();
            outer.shape.truncate(last);
            outer.strides.truncate(last);
            outer.shape.clone_from_slice(&index_shape[..last]);
            let mut rows = index.chunks_exact(k.max(1));
            for_each_offset(&outer.shape, &outer.strides, layout.offset, |base| {
                let row = &data[base..base + cols];
                if let Some(ix) = rows.next() {
                    out.extend(ix.iter().map(|&j| row[j as usize]));
                }
            });
            return T::into_buffer(out);
        }
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
    super::scatter::scatter_add_zeros(shape, dim, index, index_shape, src, src_layout)
}

/// Selects entries `index` along `dim` (torch.index_select), contiguous result.
pub fn index_select(buf: &Buffer, layout: &Layout, dim: usize, index: &[i64]) -> Buffer {
    with_dtype!(buf.dtype(), T => {
        let data = T::slice(buf);
        let slab: usize = layout.shape[dim + 1..].iter().product();
        let n_out = layout.numel() / layout.shape[dim].max(1) * index.len();
        if layout.is_contiguous() && slab > 0 && n_out > 0 && layout.shape[dim] > 0 {
            // A contiguous input: the output is outer x index x slab, each slab a run of
            // the input; written in parallel chunks of the output, a run at a time.
            let (ni, step, off) = (index.len(), layout.shape[dim] * slab, layout.offset);
            if slab == 1 {
                // the innermost dim (flip's reversed positions, a column pick): one element
                // a step, the row and the index position counted, not divided out
                return T::into_buffer(super::elementwise::fill_chunks(n_out, |start, out| {
                    let (mut o, mut i) = (start / ni, start % ni);
                    for d in out.iter_mut() {
                        d.write(data[off + o * step + index[i] as usize]);
                        i += 1;
                        if i == ni {
                            i = 0;
                            o += 1;
                        }
                    }
                }));
            }
            return T::into_buffer(super::elementwise::fill_chunks(n_out, |start, out| {
                let mut e = start;
                let mut rest = out;
                while !rest.is_empty() {
                    let (o, r) = (e / (ni * slab), e % (ni * slab));
                    let (i, j) = (r / slab, r % slab);
                    let len = (slab - j).min(rest.len());
                    let from = off + o * step + index[i] as usize * slab + j;
                    let (head, tail) = rest.split_at_mut(len);
                    for (d, &v) in head.iter_mut().zip(&data[from..from + len]) {
                        d.write(v);
                    }
                    rest = tail;
                    e += len;
                }
            }));
        }
        let mut out = Vec::with_capacity(layout.numel() / layout.shape[dim].max(1) * index.len());
        let mut sub = layout.clone();
        sub.shape.drain(..=dim);
        sub.strides.drain(..=dim);
        let mut outer_l = layout.clone();
        outer_l.shape.truncate(dim);
        outer_l.strides.truncate(dim);
        // the selected slabs (dims after `dim`) are copied whole when dense
        let slab = sub.is_contiguous().then(|| sub.numel());
        for_each_offset(&outer_l.shape, &outer_l.strides, layout.offset, |base| {
            for &i in index {
                let start = base + i as usize * layout.strides[dim];
                match slab {
                    // an empty slab may start past the end of an empty buffer
                    Some(0) => {}
                    Some(len) => out.extend_from_slice(&data[start..start + len]),
                    None => for_each_offset(&sub.shape, &sub.strides, start, |o| out.push(data[o])),
                }
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
    super::scatter::index_add_zeros(shape, dim, index, src, src_layout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_values_borrow_what_is_in_range_and_wrap_or_refuse_the_rest() {
        use std::borrow::Cow;
        let l = |n: usize| Layout::contiguous(&[n]);
        let v = [2i64, 0, 1];
        assert!(matches!(index_values(&v, &l(3), 3, false), Ok(Cow::Borrowed(s)) if s == v));
        // an empty index is in range of anything, a dim of size 0 included
        assert!(matches!(index_values(&[], &l(0), 0, false), Ok(c) if c.is_empty()));
        let w = [-1i64, 2, -3];
        assert_eq!(
            index_values(&w, &l(3), 3, true).unwrap().into_owned(),
            vec![2, 2, 0]
        );
        assert_eq!(index_values(&w, &l(3), 3, false).unwrap_err(), -1);
        assert_eq!(index_values(&[0, 3, -4], &l(3), 3, true).unwrap_err(), 3);
        assert_eq!(index_values(&[0, -4, 3], &l(3), 3, true).unwrap_err(), -4);
        assert_eq!(
            index_values(&[i64::MAX], &l(1), 5, false).unwrap_err(),
            i64::MAX
        );
    }

    #[test]
    fn contiguous_fast_paths_match_plain_loops() {
        // small and past the parallel threshold; every dim of a 3-d input
        for &(a, b, c) in &[(4usize, 3usize, 5usize), (70, 40, 30)] {
            let v: Vec<f64> = (0..a * b * c).map(|i| i as f64 * 0.25).collect();
            let buf = Buffer::F64(v.clone().into());
            let l = Layout::contiguous(&[a, b, c]);
            let at = |i: usize, j: usize, k: usize| v[(i * b + j) * c + k];
            for dim in 0..3 {
                let size = [a, b, c][dim];
                let index: Vec<i64> = (0..size + 3).map(|i| ((i * 7 + 1) % size) as i64).collect();
                let Buffer::F64(got) = index_select(&buf, &l, dim, &index) else {
                    unreachable!()
                };
                let mut want = vec![];
                let dims = |d: usize| if d == dim { index.len() } else { [a, b, c][d] };
                for i in 0..dims(0) {
                    for j in 0..dims(1) {
                        for k in 0..dims(2) {
                            let mut p = [i, j, k];
                            p[dim] = index[p[dim]] as usize;
                            want.push(at(p[0], p[1], p[2]));
                        }
                    }
                }
                assert_eq!(got, want, "index_select dim {dim}");
            }
            // gather along the last dim, k indices per row
            let k = 9;
            let index: Vec<i64> = (0..a * b * k).map(|i| ((i * 5 + 2) % c) as i64).collect();
            let Buffer::F64(got) = gather(&buf, &l, 2, &index, &[a, b, k]) else {
                unreachable!()
            };
            let want: Vec<f64> = (0..a * b * k)
                .map(|e| at(e / k / b, e / k % b, index[e] as usize))
                .collect();
            assert_eq!(got, want, "gather");
        }
    }

    #[test]
    fn gather_and_scatter_add_are_adjoint() {
        let l = Layout::contiguous(&[2, 3]);
        let src = Buffer::F64(vec![1., 2., 3., 4., 5., 6.].into());
        let idx = [2i64, 0, 1, 1];
        let Buffer::F64(g) = gather(&src, &l, 1, &idx, &[2, 2]) else {
            unreachable!()
        };
        assert_eq!(g, vec![3., 1., 5., 5.]);
        let ones = Buffer::F64(vec![1.; 4].into());
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
