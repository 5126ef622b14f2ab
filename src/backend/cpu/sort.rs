//! The index choices of sort, topk, kthvalue and median along a dim, as ATen's CPU
//! kernels make them, ties and NaNs included: sort is libstdc++'s `std::sort` (introsort,
//! not stable) unless asked to be stable (or a 1-D integer sort large enough for ATen's
//! radix sort, which is stable); topk is `partial_sort` or `nth_element` + `sort`
//! (`topk.rs`); kthvalue is ATen's `quick_select_template`; median along a dim is
//! `nth_element` under (value, index) order, the first NaN if there is one (nanmedian: of
//! the non-NaN elements); mode is `std::sort` on the values and a scan for the longest
//! run. NaN sorts as the largest value. The op layer gathers the values with these
//! indices.

use super::scatter::Disjoint;
use super::strided::offsets;
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
    /// The index of the lower median of the non-NaN elements (nanmedian).
    NanMedian,
    /// The index of the most frequent value (the smallest of equally frequent ones), as
    /// ATen's CPU `mode` kernel picks it.
    Mode,
}

impl Select {
    /// How many indices a slice of `n` elements gives.
    pub fn count(self, n: usize) -> usize {
        match self {
            Select::Sort { .. } => n,
            Select::Topk { k, .. } => k,
            Select::Kth { .. } | Select::Median | Select::NanMedian | Select::Mode => 1,
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

/// A slice position as the sort keys carry it: 32 bits where the slice is short enough
/// (half the bytes each swap moves), else a full word.
trait Idx: Copy + Send + Sync {
    fn new(j: usize) -> Self;
    fn get(self) -> usize;
}
impl Idx for u32 {
    #[inline(always)]
    fn new(j: usize) -> u32 {
        j as u32
    }
    #[inline(always)]
    fn get(self) -> usize {
        self as usize
    }
}
impl Idx for usize {
    #[inline(always)]
    fn new(j: usize) -> usize {
        j
    }
    #[inline(always)]
    fn get(self) -> usize {
        self
    }
}

fn run<T: SortKey>(v: &[T], layout: &Layout, dim: usize, sel: Select) -> Vec<i64> {
    if layout.shape[dim] <= u32::MAX as usize {
        run_with::<T, u32>(v, layout, dim, sel)
    } else {
        run_with::<T, usize>(v, layout, dim, sel)
    }
}

/// Every slice's choice, the slices split across the pool in pieces of whole slices
/// (each slice's choice is its own: no bit depends on the split), each piece with one
/// set of scratch vectors.
fn run_with<T: SortKey, I: Idx>(v: &[T], layout: &Layout, dim: usize, sel: Select) -> Vec<i64> {
    let shape = &layout.shape;
    let n = shape[dim];
    let st = layout.strides[dim];
    let m = sel.count(n);
    let before = offsets(&shape[..dim], &layout.strides[..dim]);
    let after = offsets(&shape[dim + 1..], &layout.strides[dim + 1..]);
    let na = after.len();
    let slices = before.len() * na;
    let mut out = vec![0i64; slices * m];
    if m == 0 || slices == 0 {
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
    let o = Disjoint::new(&mut out);
    // (a sort costs about n log n, a selection a few n: either way more than the
    // elements, so pieces from the reductions' threshold of elements)
    let par = super::reduce::par::parallel(slices * n);
    let pieces = if par {
        slices.min(4 * crate::runtime::num_threads().max(1))
    } else {
        1
    };
    let per = slices.div_ceil(pieces);
    super::reduce::par::tasks(slices.div_ceil(per), par, &|t| {
        let mut scratch = Scratch::<T, I>::default();
        for s in t * per..((t + 1) * per).min(slices) {
            let (bi, ai) = (s / na, s % na);
            let base = layout.offset + before[bi] + after[ai];
            // the slice as a contiguous run: itself where it is one, else copied
            let vals: &[T] = if st == 1 {
                &v[base..base + n]
            } else {
                scratch.vals.clear();
                scratch.vals.extend((0..n).map(|j| v[base + j * st]));
                &scratch.vals
            };
            scratch.chosen.clear();
            slice::<T, I>(
                vals,
                sel,
                st == 0,
                radix,
                &mut scratch.work,
                &mut scratch.chosen,
            );
            for (j, &c) in scratch.chosen.iter().enumerate() {
                // SAFETY: slice s alone writes positions (bi * m + j) * na + ai.
                unsafe { *o.at((bi * m + j) * na + ai) = c as i64 };
            }
        }
    });
    out
}

/// Slices from this long are sorted by [`Radix`] first (below, introsort's insertion
/// sorts are as cheap as the radix sort's counts).
const RADIX_SORT_MIN: usize = 64;

/// An order-preserving unsigned key of a sortable dtype: `key(x) < key(y)` exactly when
/// `x < y` under ATen's ascending comparator (NaN above everything, every NaN one key;
/// -0.0 and 0.0 one key, as they compare equal), in the low `BYTES` bytes.
pub(crate) trait SortKey: Element {
    const BYTES: usize;
    fn key(self) -> u64;
}
impl SortKey for f32 {
    const BYTES: usize = 4;
    #[inline(always)]
    fn key(self) -> u64 {
        if self.is_nan() {
            return u64::from(u32::MAX);
        }
        let b = (self + 0.0).to_bits(); // (-0.0 + 0.0 is 0.0)
        u64::from(if b >> 31 == 1 { !b } else { b | 1 << 31 })
    }
}
impl SortKey for f64 {
    const BYTES: usize = 8;
    #[inline(always)]
    fn key(self) -> u64 {
        if self.is_nan() {
            return u64::MAX;
        }
        let b = (self + 0.0).to_bits();
        if b >> 63 == 1 { !b } else { b | 1 << 63 }
    }
}
impl SortKey for i64 {
    const BYTES: usize = 8;
    #[inline(always)]
    fn key(self) -> u64 {
        (self as u64) ^ (1 << 63)
    }
}
impl SortKey for bool {
    // (not radix sorted: `BYTES` 1 keeps bool on the comparison sorts)
    const BYTES: usize = 1;
    fn key(self) -> u64 {
        u64::from(self)
    }
}

/// A least-significant-digit radix sort of (key, position), a byte a pass (stable).
struct Radix<I> {
    keys: Vec<(u64, I)>,
    tmp: Vec<(u64, I)>,
}
impl<I> Default for Radix<I> {
    fn default() -> Self {
        Radix {
            keys: Vec::new(),
            tmp: Vec::new(),
        }
    }
}
impl<I: Idx> Radix<I> {
    /// `vals`' keys (inverted for `descending`: ties still in index order) sorted into
    /// `self.keys`, less the smallest key (an order-preserving shift: the passes over
    /// bytes every shifted key has zero in are skipped, so small integers of both signs
    /// take one or two passes, not eight).
    fn sort<T: SortKey>(&mut self, vals: &[T], descending: bool) {
        let n = vals.len();
        let flip = if descending { u64::MAX } else { 0 };
        self.keys.clear();
        self.keys.extend(
            vals.iter()
                .enumerate()
                .map(|(j, &x)| (x.key() ^ flip, I::new(j))),
        );
        let low = self.keys.iter().map(|e| e.0).min().unwrap_or(0);
        self.tmp.clear();
        self.tmp.resize(n, (0, I::new(0)));
        let mut counts = [[0u32; 256]; 8];
        for e in &mut self.keys {
            e.0 -= low;
            let k = e.0;
            for (b, c) in counts.iter_mut().enumerate().take(T::BYTES) {
                c[((k >> (8 * b)) & 255) as usize] += 1;
            }
        }
        for (b, c) in counts.iter_mut().enumerate().take(T::BYTES) {
            if c.iter().any(|&x| x as usize == n) {
                continue; // every key has this byte: the pass would move nothing
            }
            let mut at = 0u32;
            for x in c.iter_mut() {
                (*x, at) = (at, at + *x);
            }
            for &e in &self.keys {
                let d = &mut c[((e.0 >> (8 * b)) & 255) as usize];
                self.tmp[*d as usize] = e;
                *d += 1;
            }
            std::mem::swap(&mut self.keys, &mut self.tmp);
        }
    }
    /// Whether two sorted keys are equal.
    fn has_ties(&self) -> bool {
        self.keys.windows(2).any(|w| w[0].0 == w[1].0)
    }
}

/// The positions of `vals` in ascending order under ATen's comparator (NaN after
/// everything), equal values in position order (a stable sort: the radix sort's), each
/// with its key: two positions hold equal values (or both NaN) exactly when their keys
/// are equal.
pub(crate) fn stable_order<T: SortKey>(vals: &[T]) -> Vec<(u64, usize)> {
    let mut r = Radix::<usize>::default();
    r.sort(vals, false);
    r.keys
}

/// The positions of `vals` in the order ATen's CPU `sort(stable=False)` leaves them:
/// equal values and NaNs in the order its introsort (or, for a long int64 slice, its
/// radix sort) puts them.
pub(crate) fn aten_order<T: SortKey>(vals: &[T]) -> Vec<usize> {
    let layout = Layout::contiguous(&[vals.len()]);
    let sel = Select::Sort {
        descending: false,
        stable: false,
    };
    run::<T>(vals, &layout, 0, sel)
        .into_iter()
        .map(|i| i as usize)
        .collect()
}

/// One piece's scratch vectors, reused slice after slice.
struct Scratch<T, I> {
    /// a strided slice copied to a run
    vals: Vec<T>,
    work: Work<T, I>,
    chosen: Vec<usize>,
}
impl<T, I> Default for Scratch<T, I> {
    fn default() -> Self {
        Scratch {
            vals: Vec::new(),
            work: Work {
                keys: Vec::new(),
                radix: Radix::default(),
                values: Vec::new(),
            },
            chosen: Vec::new(),
        }
    }
}

/// What a slice's algorithm works in: (value, position) keys, the radix sort's, the
/// values alone (median).
struct Work<T, I> {
    keys: Vec<(T, I)>,
    radix: Radix<I>,
    values: Vec<T>,
}

#[inline]
fn nan<T: Element>(x: T) -> bool {
    #[allow(clippy::eq_op)]
    let r = x != x;
    r
}

/// Runs `$body` with `$c` bound to ATen's `KeyValueCompAsc` (NaN after everything) or,
/// with `$desc`, `KeyValueCompDesc` (NaN before everything): where the slice has no NaN
/// (`$nan` false), the plain `<` / `>` they reduce to, which answers every comparison
/// of that slice the same, so the algorithms leave the same order. Each is its own
/// closure type, so the algorithms inline it.
macro_rules! with_comp {
    ($T:ty, $I:ty, $desc:expr, $nan:expr, $c:ident => $body:expr) => {
        match ($desc, $nan) {
            (false, true) => {
                let $c = |a: &($T, $I), b: &($T, $I)| (!nan(a.0) && nan(b.0)) || a.0 < b.0;
                $body
            }
            (true, true) => {
                let $c = |a: &($T, $I), b: &($T, $I)| (nan(a.0) && !nan(b.0)) || a.0 > b.0;
                $body
            }
            (false, false) => {
                let $c = |a: &($T, $I), b: &($T, $I)| a.0 < b.0;
                $body
            }
            (true, false) => {
                let $c = |a: &($T, $I), b: &($T, $I)| a.0 > b.0;
                $body
            }
        }
    };
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
/// ATen's sort leaves in index order); `keys` and `work` are scratch.
fn slice<T: SortKey, I: Idx>(
    vals: &[T],
    sel: Select,
    expanded: bool,
    radix: bool,
    w: &mut Work<T, I>,
    out: &mut Vec<usize>,
) {
    let Work {
        keys,
        radix: rad,
        values: work,
    } = w;
    let n = vals.len();
    let has_nan = T::DTYPE.is_float() && vals.iter().any(|&x| nan(x));
    let fill_keys = |keys: &mut Vec<(T, I)>| {
        keys.clear();
        keys.extend(vals.iter().enumerate().map(|(j, &x)| (x, I::new(j))));
    };
    match sel {
        Select::Sort { descending, stable } => {
            if expanded {
                out.extend(0..n);
                return;
            }
            // A radix sort on order-preserving keys is stable, so it is the stable
            // order; where no two keys are equal, the only order there is, so also
            // introsort's (tested after the sort; a slice with ties is sorted again by
            // introsort). 256 x 256 float32 rows: 10 us a row by introsort.
            if n >= RADIX_SORT_MIN && T::BYTES > 1 && n <= u32::MAX as usize {
                rad.sort(vals, descending);
                if stable || radix || !rad.has_ties() {
                    out.extend(rad.keys.iter().map(|e| e.1.get()));
                    return;
                }
            }
            fill_keys(keys);
            with_comp!(T, I, descending, has_nan, comp => {
                if stable || radix {
                    // (any stable sort gives the one stable order)
                    keys.sort_by(ordering(comp));
                } else {
                    stl::sort(keys, 0, n, &comp);
                }
            });
            out.extend(keys.iter().map(|e| e.1.get()));
        }
        Select::Topk { k, largest, sorted } => {
            fill_keys(keys);
            with_comp!(T, I, largest, has_nan, comp => {
                if k * 64 <= n {
                    stl::partial_sort(keys, 0, k, n, &comp);
                } else {
                    stl::nth_element(keys, 0, k - 1, n, &comp);
                    if sorted {
                        stl::sort(keys, 0, k - 1, &comp);
                    }
                }
            });
            out.extend(keys[..k].iter().map(|e| e.1.get()));
        }
        Select::Kth { k } => {
            fill_keys(keys);
            if has_nan {
                quick_select(keys, k - 1, |x: T, y: T| (nan(x) && !nan(y)) || x > y);
            } else {
                quick_select(keys, k - 1, |x: T, y: T| x > y);
            }
            out.push(keys[k - 1].1.get());
        }
        Select::NanMedian if has_nan => {
            // ATen's median_with_indices_impl with ignore_nan: nth_element under (value,
            // index) order with NaN above everything, at rank (n - nans - 1) / 2 (C++'s
            // division: 0 when every element is NaN, which nth_element's moves decide)
            let nans = vals.iter().filter(|&&x| nan(x)).count();
            let r = (n - nans).saturating_sub(1) / 2;
            fill_keys(keys);
            let comp = |a: &(T, I), b: &(T, I)| {
                a.0 < b.0 || (a.0 == b.0 && a.1.get() < b.1.get()) || (nan(b.0) && !nan(a.0))
            };
            stl::nth_element(keys, 0, r, n, &comp);
            out.push(keys[r].1.get());
        }
        Select::Mode => {
            // ATen's mode kernel: std::sort of (value, index) pairs on the values alone
            // (`<`, NaN comparing false both ways, as in ATen), then the first longest run
            // of equal values; its last pair's index
            fill_keys(keys);
            stl::sort(keys, 0, n, &|a: &(T, I), b: &(T, I)| a.0 < b.0);
            let (mut best, mut freq, mut max) = (0, 0usize, 0usize);
            for i in 0..n {
                freq += 1;
                #[allow(clippy::float_cmp)]
                if i == n - 1 || keys[i].0 != keys[i + 1].0 {
                    if freq > max {
                        best = keys[i].1.get();
                        max = freq;
                    }
                    freq = 0;
                }
            }
            out.push(best);
        }
        Select::Median | Select::NanMedian => {
            if has_nan {
                out.extend(vals.iter().position(|&x| nan(x)));
                return;
            }
            // The element of rank r = (n - 1) / 2 under (value, index) order (a strict
            // total order: nth_element's answer whatever its algorithm). Its value v is
            // the r-th smallest value, found on the values alone; it is then the
            // (r - c)-th of the elements equal to v in index order, c the number below v
            // (no (value, index) pairs to move: 4M float32 sorted as pairs was 14x
            // torch's nth_element).
            let r = (n - 1) / 2;
            work.clear();
            work.extend_from_slice(vals);
            let (_, &mut v, _) = work.select_nth_unstable_by(r, |a, b| {
                a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal)
            });
            let below = vals.iter().filter(|&&x| x < v).count();
            out.extend(
                vals.iter()
                    .enumerate()
                    .filter(|&(_, &x)| x == v)
                    .nth(r - below)
                    .map(|(j, _)| j),
            );
        }
    }
}

/// ATen's `quick_select_template` (SortingUtils.h) with its `gt_or_nan` comparator
/// (`gt`; plain `>` for a slice without NaN): puts the k-th (0-based) smallest at `k`,
/// NaN counting as largest, moving the indices along.
fn quick_select<T: Element, I: Idx>(arr: &mut [(T, I)], k: usize, gt: impl Fn(T, T) -> bool) {
    // (signed, as ATen's: the right end may move to before the left)
    let k = k as isize;
    let (mut l, mut r) = (0isize, arr.len() as isize - 1);
    let at = |arr: &[(T, I)], i: isize| arr[i as usize].0;
    let swap = |arr: &mut [(T, I)], i: isize, j: isize| arr.swap(i as usize, j as usize);
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

    /// The radix sort (keys shifted by the smallest, passes skipped) against a stable
    /// comparison sort, on integers of both signs and spans that need 1, 2, 3 and 8
    /// bytes, floats with NaNs, signed zeros and infinities, and bools.
    #[test]
    fn stable_order_is_the_stable_comparison_order() {
        fn check<T: SortKey + PartialOrd>(v: &[T]) {
            let got: Vec<usize> = stable_order(v).iter().map(|e| e.1).collect();
            let mut want: Vec<usize> = (0..v.len()).collect();
            want.sort_by(|&a, &b| {
                let (x, y) = (v[a], v[b]);
                match (nan(x), nan(y)) {
                    (true, true) => std::cmp::Ordering::Equal,
                    (true, false) => std::cmp::Ordering::Greater,
                    (false, true) => std::cmp::Ordering::Less,
                    _ => x.partial_cmp(&y).unwrap(),
                }
            });
            assert_eq!(got, want);
            // equal keys exactly for equal values
            let keys = stable_order(v);
            for w in keys.windows(2) {
                let (x, y) = (v[w[0].1], v[w[1].1]);
                let same = x == y || (nan(x) && nan(y));
                assert_eq!(w[0].0 == w[1].0, same);
            }
        }
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for span in [3u64, 200, 60_000, 1 << 20, u64::MAX] {
            let v: Vec<i64> = (0..2000)
                .map(|_| {
                    let r = next();
                    if span == u64::MAX {
                        r as i64
                    } else {
                        (r % span) as i64 - (span / 2) as i64
                    }
                })
                .collect();
            check(&v);
        }
        check(&[i64::MIN, i64::MAX, 0, -1, i64::MIN, 1, i64::MAX]);
        let specials = [
            f64::NAN,
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1.5,
            -1.5,
            f64::MIN_POSITIVE,
        ];
        let v: Vec<f64> = (0..3000)
            .map(|i| specials[i % 8] * if i % 3 == 0 { 1.0 } else { (i % 17) as f64 })
            .collect();
        check(&v);
        let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        check(&v32);
        let b: Vec<bool> = (0..500).map(|_| next() % 3 == 0).collect();
        check(&b);
        check::<f32>(&[]);
    }
}
