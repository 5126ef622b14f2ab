//! How a reduction walks its input: any layout and set of reduced dims brought to one
//! of two shapes, rows (each output's elements contiguous) or columns (the outputs
//! contiguous, the reduced elements one stride apart), without a copy where the
//! layout allows it.

use super::super::strided::contiguous;
use crate::layout::Layout;
use std::borrow::Cow;

/// A reduction over a strided 3-D view of the data: `outer` groups `os` apart, each
/// reducing `red` positions `rs` apart; at each position, `inner` contiguous outputs.
/// Output `o * inner + i` reduces `x[off + o*os + r*rs + i]` over `r`, in order of `r`.
/// Rows are `inner == 1 && rs == 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Block {
    pub off: usize,
    pub outer: usize,
    pub os: usize,
    pub red: usize,
    pub rs: usize,
    pub inner: usize,
}

impl Block {
    /// Each output's elements are contiguous.
    pub fn is_rows(&self) -> bool {
        self.inner == 1 && (self.rs == 1 || self.red <= 1)
    }
    /// The number of outputs.
    pub fn outputs(&self) -> usize {
        self.outer * self.inner
    }
    /// Row `o` (for [`Block::is_rows`] blocks).
    pub fn row<'a, T>(&self, x: &'a [T], o: usize) -> &'a [T] {
        let s = self.off + o * self.os;
        &x[s..s + self.red]
    }
}

/// One (size, stride) dim of the layout, and whether it is reduced.
#[derive(Clone, Copy)]
struct Dim {
    size: usize,
    stride: usize,
    red: bool,
}

/// The block of `layout` reducing `dims` (sorted, unique), if the layout's memory order
/// allows one: the dims sorted by stride (size-1 dims dropped) must keep the kept dims'
/// order and fall in runs that merge into at most [kept, reduced, kept-contiguous].
/// `None` for an empty input or another layout.
fn block_of(layout: &Layout, dims: &[usize]) -> Option<Block> {
    if layout.numel() == 0 {
        return None;
    }
    let mut v: Vec<(usize, Dim)> = layout
        .shape
        .iter()
        .zip(&layout.strides)
        .enumerate()
        .filter(|(_, (s, _))| **s != 1)
        .map(|(i, (&size, &stride))| {
            let red = dims.contains(&i);
            (i, Dim { size, stride, red })
        })
        .collect();
    // memory order: largest stride first (stable: equal strides keep their order)
    v.sort_by_key(|d| std::cmp::Reverse(d.1.stride));
    let kept: Vec<usize> = v.iter().filter(|d| !d.1.red).map(|d| d.0).collect();
    if kept.windows(2).any(|w| w[0] > w[1]) {
        return None; // the outputs would not come out in row-major order
    }
    let mut runs: Vec<Dim> = Vec::with_capacity(v.len());
    for (_, d) in v {
        match runs.last_mut() {
            Some(l) if l.red == d.red && l.stride == d.stride * d.size => {
                l.size *= d.size;
                l.stride = d.stride;
            }
            _ => runs.push(d),
        }
    }
    let one = |red| Dim {
        size: 1,
        stride: 0,
        red,
    };
    let (k, r, i) = match runs.as_slice() {
        [] => (one(false), one(true), one(false)),
        [r] if r.red => (one(false), *r, one(false)),
        [k] if k.stride == 1 => (one(false), one(true), *k),
        [k] => (*k, one(true), one(false)),
        [k, r] if !k.red && r.red => (*k, *r, one(false)),
        [r, i] if r.red && !i.red && i.stride == 1 => (one(false), *r, *i),
        [k, r, i] if !k.red && r.red && !i.red && i.stride == 1 => (*k, *r, *i),
        _ => return None,
    };
    Some(Block {
        off: layout.offset,
        outer: k.size,
        os: k.stride,
        red: r.size,
        rs: r.stride,
        inner: i.size,
    })
}

/// The data and block a reduction over `dims` (sorted, unique) of a non-empty input
/// reads: the input itself where its layout has a block, else a copy, in the kept dims'
/// order followed by the reduced dims' (rows).
pub(crate) fn plan<'a, T: Copy>(
    data: &'a [T],
    layout: &Layout,
    dims: &[usize],
) -> (Cow<'a, [T]>, Block) {
    if let Some(b) = block_of(layout, dims) {
        return (Cow::Borrowed(data), b);
    }
    let n = layout.shape.len();
    let order: Vec<usize> = (0..n)
        .filter(|d| !dims.contains(d))
        .chain(dims.iter().copied())
        .collect();
    let permuted = Layout {
        shape: order.iter().map(|&d| layout.shape[d]).collect(),
        strides: order.iter().map(|&d| layout.strides[d]).collect(),
        offset: layout.offset,
    };
    let copy = contiguous(data, &permuted).into_owned();
    let red: usize = dims.iter().map(|&d| layout.shape[d]).product();
    let outer = copy.len() / red.max(1);
    let b = Block {
        off: 0,
        outer,
        os: red,
        red,
        rs: 1,
        inner: 1,
    };
    (Cow::Owned(copy), b)
}

/// (outputs, reduced elements per output) of reducing `dims` of `shape`.
pub(crate) fn counts(shape: &[usize], dims: &[usize]) -> (usize, usize) {
    let red: usize = dims.iter().map(|&d| shape[d]).product();
    let out: usize = (0..shape.len())
        .filter(|d| !dims.contains(d))
        .map(|d| shape[d])
        .product();
    (out, red)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn b(l: &Layout, dims: &[usize]) -> Option<(usize, usize, usize, usize, usize)> {
        block_of(l, dims).map(|b| (b.outer, b.os, b.red, b.rs, b.inner))
    }

    #[test]
    fn contiguous_and_transposed_layouts_need_no_copy() {
        let c = Layout::contiguous(&[4, 5, 6]);
        assert_eq!(b(&c, &[2]), Some((20, 6, 6, 1, 1)));
        assert_eq!(b(&c, &[1]), Some((4, 30, 5, 6, 6)));
        assert_eq!(b(&c, &[0]), Some((1, 0, 4, 30, 30)));
        assert_eq!(b(&c, &[0, 1, 2]), Some((1, 0, 120, 1, 1)));
        assert_eq!(b(&c, &[1, 2]), Some((4, 30, 30, 1, 1)));
        assert_eq!(b(&c, &[0, 2]), None);
        // x.T reduced along its dim 0 reads x's rows
        let t = Layout::contiguous(&[5, 6]).transpose(0, 1).unwrap();
        assert_eq!(b(&t, &[0]), Some((5, 6, 6, 1, 1)));
        assert_eq!(b(&t, &[1]), Some((1, 0, 5, 6, 6)));
        // a slice: rows 8 apart
        let s = Layout {
            shape: [3, 4].into_iter().collect(),
            strides: [8, 1].into_iter().collect(),
            offset: 2,
        };
        assert_eq!(b(&s, &[1]), Some((3, 8, 4, 1, 1)));
        assert_eq!(b(&s, &[0]), Some((1, 0, 3, 8, 4)));
    }
}
