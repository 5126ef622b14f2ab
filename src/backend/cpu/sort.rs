//! The index choices of sort, topk, kthvalue and median along a dim, as ATen's CPU
//! kernels make them, ties and NaNs included: sort is libstdc++'s `std::sort` (introsort,
//! not stable) unless asked to be stable (or a 1-D integer sort large enough for ATen's
//! radix sort, which is stable); topk is `partial_sort` or `nth_element` + `sort`
//! (`topk.rs`); kthvalue is ATen's `quick_select_template`; median along a dim is
//! `nth_element` under (value, index) order, the first NaN if there is one. NaN sorts as
//! the largest value. The op layer gathers the values with these indices.

use super::topk::stl;
use crate::layout::Layout;
use crate::storage::{Buffer, Element};

/// What to choose along the dim, per slice.
#[derive(Clone, Copy, Debug)]
pub enum Select {
    /// Every index, in sorted order.
    Sort { descending: bool, stable: bool },
    /// The first `k` of the sorted order (largest or smallest first).
    Topk {
        k: usize,
        largest: bool,
        sorted: bool,
    },
    /// The index of the k-th smallest (1-based).
    Kth { k: usize },
    /// The index of the lower median (the first NaN if any).
    Median,
}

impl Select {
    /// How many indices a slice of `n` elements gives.
    pub fn count(self, n: usize) -> usize {
        match self {
            Select::Sort { .. } => n,
            Select::Topk { k, .. } => k,
            Select::Kth { .. } | Select::Median => 1,
        }
    }
}

/// ATen's GRAIN_SIZE: a 1-D integer sort of at least this many elements (ascending) is
/// its radix sort, which is stable.
const RADIX_MIN: usize = 32768;

/// The chosen indices along `dim` of each slice of `buf` over `layout` (at least 1-D), in
/// the row-major order of the shape with `dim`'s size replaced by `sel.count(n)`.
pub fn select_indices(buf: &Buffer, layout: &Layout, dim: usize, sel: Select) -> Vec<i64> {
    crate::with_dtype!(buf.dtype(), T => run::<T>(T::slice(buf), layout, dim, sel))
}

/// The storage offsets of every row-major position of `shape` under `strides`.
fn offsets(shape: &[usize], strides: &[usize]) -> Vec<usize> {
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

fn run<T: Element>(v: &[T], layout: &Layout, dim: usize, sel: Select) -> Vec<i64> {
    let shape = &layout.shape;
    let n = shape[dim];
    let st = layout.strides[dim];
    let m = sel.count(n);
    let before = offsets(&shape[..dim], &layout.strides[..dim]);
    let after = offsets(&shape[dim + 1..], &layout.strides[dim + 1..]);
    let na = after.len();
    let mut out = vec![0i64; before.len() * m * na];
    if m == 0 {
        return out;
    }
    let radix = matches!(
        sel,
        Select::Sort {
            descending: false,
            ..
        }
    ) && shape.len() == 1
        && T::DTYPE == crate::dtype::DType::I64
        && n >= RADIX_MIN;
    let mut keys: Vec<(T, usize)> = Vec::with_capacity(n);
    let mut chosen: Vec<usize> = Vec::with_capacity(m);
    for (bi, &bo) in before.iter().enumerate() {
        for (ai, &ao) in after.iter().enumerate() {
            let base = layout.offset + bo + ao;
            keys.clear();
            keys.extend((0..n).map(|j| (v[base + j * st], j)));
            chosen.clear();
            slice::<T>(&mut keys, sel, st == 0, radix, &mut chosen);
            for (j, &c) in chosen.iter().enumerate() {
                out[(bi * m + j) * na + ai] = c as i64;
            }
        }
    }
    out
}

#[inline]
fn nan<T: Element>(x: T) -> bool {
    #[allow(clippy::eq_op)]
    let r = x != x;
    r
}

/// ATen's `KeyValueCompAsc`: NaN after everything.
fn asc<T: Element>(a: &(T, usize), b: &(T, usize)) -> bool {
    (!nan(a.0) && nan(b.0)) || a.0 < b.0
}

/// ATen's `KeyValueCompDesc`: NaN before everything.
fn desc<T: Element>(a: &(T, usize), b: &(T, usize)) -> bool {
    (nan(a.0) && !nan(b.0)) || a.0 > b.0
}

fn ordering<E>(comp: impl Fn(&E, &E) -> bool) -> impl Fn(&E, &E) -> std::cmp::Ordering {
    move |a, b| {
        if comp(a, b) {
            std::cmp::Ordering::Less
        } else if comp(b, a) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    }
}

/// One slice's choice into `out` (`expanded`: every element is the same memory, which
/// ATen's sort leaves in index order).
fn slice<T: Element>(
    keys: &mut [(T, usize)],
    sel: Select,
    expanded: bool,
    radix: bool,
    out: &mut Vec<usize>,
) {
    let n = keys.len();
    match sel {
        Select::Sort { descending, stable } => {
            if !expanded {
                let comp: fn(&(T, usize), &(T, usize)) -> bool =
                    if descending { desc::<T> } else { asc::<T> };
                if stable || radix {
                    keys.sort_by(ordering(comp));
                } else {
                    stl::sort(keys, 0, n, &comp);
                }
            }
            out.extend(keys.iter().map(|e| e.1));
        }
        Select::Topk { k, largest, sorted } => {
            let comp: fn(&(T, usize), &(T, usize)) -> bool =
                if largest { desc::<T> } else { asc::<T> };
            if k * 64 <= n {
                stl::partial_sort(keys, 0, k, n, &comp);
            } else {
                stl::nth_element(keys, 0, k - 1, n, &comp);
                if sorted {
                    stl::sort(keys, 0, k - 1, &comp);
                }
            }
            out.extend(keys[..k].iter().map(|e| e.1));
        }
        Select::Kth { k } => {
            quick_select(keys, k - 1);
            out.push(keys[k - 1].1);
        }
        Select::Median => {
            if let Some(i) = keys.iter().position(|e| nan(e.0)) {
                out.push(i);
                return;
            }
            // nth_element under a strict total order: the element of that rank
            let lex = |a: &(T, usize), b: &(T, usize)| a.0 < b.0 || (a.0 == b.0 && a.1 < b.1);
            keys.sort_by(ordering(lex));
            out.push(keys[(n - 1) / 2].1);
        }
    }
}

/// ATen's `quick_select_template` (SortingUtils.h) with its `gt_or_nan` comparator: puts
/// the k-th (0-based) smallest at `k`, NaN counting as largest, moving the indices along.
fn quick_select<T: Element>(arr: &mut [(T, usize)], k: usize) {
    let gt = |x: T, y: T| (nan(x) && !nan(y)) || x > y;
    // (signed, as ATen's: the right end may move to before the left)
    let k = k as isize;
    let (mut l, mut r) = (0isize, arr.len() as isize - 1);
    let at = |arr: &[(T, usize)], i: isize| arr[i as usize].0;
    let swap = |arr: &mut [(T, usize)], i: isize, j: isize| arr.swap(i as usize, j as usize);
    loop {
        if r <= l {
            return;
        }
        if r == l + 1 {
            if gt(at(arr, l), at(arr, r)) {
                swap(arr, l, r);
            }
            return;
        }
        let p = l + (r - l) / 2;
        swap(arr, p, l + 1);
        if gt(at(arr, l + 1), at(arr, r)) {
            swap(arr, l + 1, r);
        }
        if gt(at(arr, l), at(arr, r)) {
            swap(arr, l, r);
        }
        if gt(at(arr, l + 1), at(arr, l)) {
            swap(arr, l + 1, l);
        }
        let mut i = l + 1;
        let mut j = r;
        let piv = at(arr, l);
        loop {
            loop {
                i += 1;
                if !gt(piv, at(arr, i)) {
                    break;
                }
            }
            loop {
                j -= 1;
                if !gt(at(arr, j), piv) {
                    break;
                }
            }
            if j < i {
                break;
            }
            swap(arr, i, j);
        }
        swap(arr, l, j);
        if j <= k {
            l = i;
        }
        if j >= k {
            r = j - 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_and_selects() {
        let v: Vec<f64> = vec![3.0, f64::NAN, 1.0, 2.0, 1.0];
        let l = Layout::contiguous(&[5]);
        let b = Buffer::F64(v.into());
        let s = |sel| select_indices(&b, &l, 0, sel);
        assert_eq!(
            s(Select::Sort {
                descending: false,
                stable: true
            }),
            vec![2, 4, 3, 0, 1]
        );
        assert_eq!(
            s(Select::Sort {
                descending: true,
                stable: true
            }),
            vec![1, 0, 3, 2, 4]
        );
        assert_eq!(s(Select::Kth { k: 4 }), vec![0]);
        assert_eq!(s(Select::Median), vec![1]);
        assert_eq!(
            s(Select::Topk {
                k: 2,
                largest: false,
                sorted: true
            })
            .len(),
            2
        );
    }
}
