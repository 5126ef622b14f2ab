//! Compaction: nonzero (the coordinates of a tensor's nonzero elements) and masked_select
//! (the elements under a mask), each in two passes over fixed chunks of the row-major
//! elements: the kept ones counted per chunk (in parallel, a vectorised sum), then each
//! chunk written at the offset the counts before it give. The result is the row-major
//! order whatever the split and the thread count.
//!
//! The writing pass has no branch on the data (a random half-true mask mispredicted a
//! branch every other element): masked_select writes each element at the next free
//! position, which advances by one when the element is kept, and stops at its chunk's
//! last kept element, so no write leaves its part of the output; nonzero gathers the kept
//! positions of a block the same way, then writes their coordinates.

use super::reduce::par;
use super::strided::contiguous;
use crate::layout::Layout;
use crate::storage::{Buffer, Element};
use crate::with_dtype;
use std::mem::MaybeUninit;

/// Elements per chunk (the unit of both passes).
const CHUNK: usize = 1 << 15;

/// Whether an element counts as nonzero: `x != 0` (a NaN is nonzero, `-0.0` is zero).
trait Nonzero: Copy + Send + Sync {
    fn nonzero(self) -> bool;
}
impl Nonzero for f32 {
    #[inline(always)]
    fn nonzero(self) -> bool {
        self != 0.0
    }
}
impl Nonzero for f64 {
    #[inline(always)]
    fn nonzero(self) -> bool {
        self != 0.0
    }
}
impl Nonzero for i64 {
    #[inline(always)]
    fn nonzero(self) -> bool {
        self != 0
    }
}
impl Nonzero for bool {
    #[inline(always)]
    fn nonzero(self) -> bool {
        self
    }
}

/// The number of nonzero elements of each chunk of `v`, and where each chunk's start in
/// the output (their running sum), and the total.
fn counts<T: Nonzero>(v: &[T]) -> (Vec<usize>, Vec<usize>, usize) {
    let chunks = v.len().div_ceil(CHUNK);
    let per = par::build(chunks, |parts| {
        par::tasks(chunks, par::parallel(v.len()), &|c| {
            let piece = &v[c * CHUNK..((c + 1) * CHUNK).min(v.len())];
            // (u32 lanes: a chunk holds fewer than 2^32 elements)
            let n =
                super::wide::wide(|| piece.iter().map(|&x| u32::from(x.nonzero())).sum::<u32>());
            // SAFETY: chunk c writes count c alone.
            let out = unsafe { parts.get(c..c + 1) };
            out[0].write(n as usize);
        })
    });
    let mut at = Vec::with_capacity(chunks);
    let mut total = 0usize;
    for &n in &per {
        at.push(total);
        total += n;
    }
    (per, at, total)
}

/// Runs `fill(c, out)` for every chunk `c` with kept elements, `out` its `count * width`
/// elements of a new output (in parallel for large inputs).
fn write_chunks<U: Send>(
    n: usize,
    (per, at, total): &(Vec<usize>, Vec<usize>, usize),
    width: usize,
    fill: impl Fn(usize, &mut [MaybeUninit<U>]) + Sync,
) -> Vec<U> {
    par::build(total * width, |parts| {
        par::tasks(per.len(), par::parallel(n), &|c| {
            if per[c] > 0 {
                // SAFETY: the chunks' ranges are disjoint (running sums of the counts) and
                // cover the output (the total).
                let out = unsafe { parts.get(at[c] * width..(at[c] + per[c]) * width) };
                super::wide::wide(|| fill(c, out));
            }
        })
    })
}

/// Elements a nonzero block gathers the kept positions of before writing them out.
const BLOCK: usize = 1024;

fn nonzero_typed<T: Nonzero>(v: &[T], shape: &[usize]) -> Vec<i64> {
    let nd = shape.len();
    let len = shape[nd - 1];
    let (per, at, total) = counts(v);
    par::build(total * nd, |parts| {
        par::tasks(per.len(), par::parallel(v.len()), &|chunk| {
            if per[chunk] == 0 {
                return;
            }
            // this chunk's stretch of each coordinate's column
            let mut cols: smallvec::SmallVec<[&mut [MaybeUninit<i64>]; 6]> = (0..nd)
                .map(|d| {
                    let from = d * total + at[chunk];
                    // SAFETY: the chunks' stretches are disjoint (running sums of the
                    // counts) within each column, and the columns are disjoint.
                    unsafe { parts.get(from..from + per[chunk]) }
                })
                .collect();
            super::wide::wide(|| {
                nonzero_chunk(v, shape, len, chunk, &mut cols);
            });
        })
    })
}

/// Writes the coordinates of chunk `chunk`'s nonzero elements of `v` (rows of `len`)
/// into `cols` (one column per dim, as long as the chunk's count).
#[inline(always)]
fn nonzero_chunk<T: Nonzero>(
    v: &[T],
    shape: &[usize],
    len: usize,
    chunk: usize,
    cols: &mut [&mut [MaybeUninit<i64>]],
) {
    let nd = shape.len();
    let (a, b) = (chunk * CHUNK, ((chunk + 1) * CHUNK).min(v.len()));
    let want = cols[0].len();
    let mut k = 0;
    // the kept positions of a block, gathered branch-free (one store an element)
    let mut idx = [0u32; BLOCK];
    let mut e = a;
    while e < b {
        let (r, c0) = (e / len, e % len);
        let c1 = (c0 + (b - e)).min(len);
        let k0 = k;
        let last = &mut cols[nd - 1];
        for (blk, start) in v[e..e + (c1 - c0)].chunks(BLOCK).zip((c0..).step_by(BLOCK)) {
            let mut h = 0;
            for (i, &x) in blk.iter().enumerate() {
                // (h <= i < BLOCK: the mask only tells the compiler so)
                idx[h & (BLOCK - 1)] = i as u32;
                h += usize::from(x.nonzero());
            }
            for (o, &i) in last[k..k + h].iter_mut().zip(&idx[..h]) {
                o.write((start + i as usize) as i64);
            }
            k += h;
        }
        // the row's outer coordinates, for each of its kept elements
        let mut rr = r;
        for d in (0..nd - 1).rev() {
            let i = (rr % shape[d]) as i64;
            rr /= shape[d];
            for o in &mut cols[d][k0..k] {
                o.write(i);
            }
        }
        e += c1 - c0;
        if k == want {
            return;
        }
    }
}

/// `x.nonzero()` of `buf` over `layout` (1 or more dims): the coordinates of its nonzero
/// elements in row-major order, `[ndim, count]` row-major (torch's result is its
/// transpose: each coordinate's column contiguous).
pub fn nonzero_coords(buf: &Buffer, layout: &Layout) -> Vec<i64> {
    if layout.numel() == 0 || layout.ndim() == 0 {
        return Vec::new();
    }
    with_dtype!(buf.dtype(), T => {
        let v = contiguous(T::slice(buf), layout);
        nonzero_typed(&v, &layout.shape)
    })
}

fn select_typed<T: Element>(x: &[T], m: &[bool]) -> Vec<T> {
    let c = counts(m);
    write_chunks(m.len(), &c, 1, |chunk, out| {
        let want = out.len();
        let r = chunk * CHUNK..((chunk + 1) * CHUNK).min(m.len());
        let mut k = 0;
        for (&v, &keep) in x[r.clone()].iter().zip(&m[r]) {
            out[k].write(v);
            k += usize::from(keep);
            if k == want {
                return;
            }
        }
    })
}

/// `x.masked_select(mask)`: the elements of `x` (over `lx`) where `mask` (bool, over `lm`,
/// the same shape: both broadcast by the op) is true, in row-major order; `None` where
/// the shapes differ or the mask is not bool.
pub fn masked_select(x: &Buffer, lx: &Layout, mask: &Buffer, lm: &Layout) -> Option<Buffer> {
    if lx.shape != lm.shape {
        return None;
    }
    let Buffer::Bool(mv) = mask else {
        return None;
    };
    let m = contiguous(&mv[..], lm);
    Some(with_dtype!(x.dtype(), T => {
        let v = contiguous(T::slice(x), lx);
        T::into_buffer(select_typed(&v, &m))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonzero_coords_are_row_major_across_chunks() {
        // three chunks and a bit, rows of 7 (rows straddle the chunk edges)
        let n = 3 * CHUNK + 11;
        let v: Vec<f32> = (0..n)
            .map(|i| if (i * 7919) % 5 < 2 { 1.5 } else { 0.0 })
            .collect();
        let buf = Buffer::F32(v.clone().into());
        let shape = [n / 7, 7];
        let l = Layout::contiguous(&shape);
        let got = nonzero_coords(
            &buf,
            &Layout {
                shape: shape[..].into(),
                ..l.clone()
            },
        );
        let (mut rows, mut cols) = (Vec::new(), Vec::new());
        for (i, &x) in v[..n / 7 * 7].iter().enumerate() {
            if x != 0.0 {
                rows.push((i / 7) as i64);
                cols.push((i % 7) as i64);
            }
        }
        rows.extend(cols);
        assert_eq!(got, rows);
        let m: Vec<bool> = v.iter().map(|&x| x != 0.0).collect();
        let x: Vec<i64> = (0..n as i64).collect();
        let Some(Buffer::I64(sel)) = masked_select(
            &Buffer::I64(x.into()),
            &Layout::contiguous(&[n]),
            &Buffer::Bool(m.clone().into()),
            &Layout::contiguous(&[n]),
        ) else {
            panic!("no result");
        };
        let want: Vec<i64> = (0..n as i64).filter(|&i| m[i as usize]).collect();
        assert_eq!(&sel[..], &want[..]);
    }
}
