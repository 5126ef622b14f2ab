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

/// The elements of a layout in row-major order: borrowed when already contiguous,
/// gathered otherwise.
pub fn contiguous<'a, T: Copy>(data: &'a [T], layout: &Layout) -> Cow<'a, [T]> {
    let n = layout.numel();
    if n == 0 {
        return Cow::Borrowed(&[]);
    }
    if layout.is_contiguous() {
        return Cow::Borrowed(&data[layout.offset..layout.offset + n]);
    }
    let mut out = Vec::with_capacity(n);
    for_each_offset(&layout.shape, &layout.strides, layout.offset, |o| {
        out.push(data[o])
    });
    Cow::Owned(out)
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

    #[test]
    fn walks_scalar_and_empty_layouts() {
        let mut seen = vec![];
        for_each_offset(&[], &[], 7, |o| seen.push(o));
        assert_eq!(seen, vec![7]);
        for_each_offset(&[0, 3], &[3, 1], 0, |o| seen.push(o));
        assert_eq!(seen, vec![7]);
    }
}
