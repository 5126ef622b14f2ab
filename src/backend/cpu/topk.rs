//! Top-k indices in the order ATen's CPU `topk` returns them, ties included (multinomial
//! without replacement is a top-k of p / q, and zero probabilities tie).

/// The first `k` of `keys` largest first, as ATen's CPU `topk` picks them: `nth_element`
/// then `sort` of the first k-1, or `partial_sort` when `k * 64 <= n`, with libstdc++'s
/// algorithms (GCC 13), so that equal keys (zero probabilities) come out in torch's order.
pub(crate) fn topk_indices(keys: &[f64], k: usize) -> Vec<usize> {
    let mut v: Vec<(f64, usize)> = keys.iter().copied().zip(0..).collect();
    let n = v.len();
    // NaN counts as largest, as in ATen's comparator.
    let comp = |a: &(f64, usize), b: &(f64, usize)| (a.0.is_nan() && !b.0.is_nan()) || a.0 > b.0;
    if k * 64 <= n {
        stl::partial_sort(&mut v, 0, k, n, &comp);
    } else {
        stl::nth_element(&mut v, 0, k - 1, n, &comp);
        stl::sort(&mut v, 0, k - 1, &comp);
    }
    v[..k].iter().map(|e| e.1).collect()
}

/// libstdc++'s sorting algorithms (bits/stl_algo.h, stl_heap.h), index-based, for the tie
/// order of ATen's topk. Ranges are [first, last) of `v`.
pub(crate) mod stl {
    const THRESHOLD: usize = 16;

    pub(crate) fn lg(n: usize) -> usize {
        (usize::BITS - 1 - n.leading_zeros()) as usize
    }

    fn move_median_to_first<E: Copy, C: Fn(&E, &E) -> bool>(
        v: &mut [E],
        r: usize,
        a: usize,
        b: usize,
        c: usize,
        comp: &C,
    ) {
        let pick = if comp(&v[a], &v[b]) {
            if comp(&v[b], &v[c]) {
                b
            } else if comp(&v[a], &v[c]) {
                c
            } else {
                a
            }
        } else if comp(&v[a], &v[c]) {
            a
        } else if comp(&v[b], &v[c]) {
            c
        } else {
            b
        };
        v.swap(r, pick);
    }

    fn unguarded_partition<E: Copy, C: Fn(&E, &E) -> bool>(
        v: &mut [E],
        mut first: usize,
        mut last: usize,
        pivot: usize,
        comp: &C,
    ) -> usize {
        loop {
            while comp(&v[first], &v[pivot]) {
                first += 1;
            }
            last -= 1;
            while comp(&v[pivot], &v[last]) {
                last -= 1;
            }
            if first >= last {
                return first;
            }
            v.swap(first, last);
            first += 1;
        }
    }

    fn unguarded_partition_pivot<E: Copy, C: Fn(&E, &E) -> bool>(
        v: &mut [E],
        first: usize,
        last: usize,
        comp: &C,
    ) -> usize {
        let mid = first + (last - first) / 2;
        move_median_to_first(v, first, first + 1, mid, last - 1, comp);
        unguarded_partition(v, first + 1, last, first, comp)
    }

    fn unguarded_linear_insert<E: Copy, C: Fn(&E, &E) -> bool>(
        v: &mut [E],
        mut last: usize,
        comp: &C,
    ) {
        let val = v[last];
        let mut next = last - 1;
        while comp(&val, &v[next]) {
            v[last] = v[next];
            last = next;
            next -= 1;
        }
        v[last] = val;
    }

    fn insertion_sort<E: Copy, C: Fn(&E, &E) -> bool>(
        v: &mut [E],
        first: usize,
        last: usize,
        comp: &C,
    ) {
        if first == last {
            return;
        }
        for i in first + 1..last {
            if comp(&v[i], &v[first]) {
                let val = v[i];
                v.copy_within(first..i, first + 1);
                v[first] = val;
            } else {
                unguarded_linear_insert(v, i, comp);
            }
        }
    }

    fn final_insertion_sort<E: Copy, C: Fn(&E, &E) -> bool>(
        v: &mut [E],
        first: usize,
        last: usize,
        comp: &C,
    ) {
        if last - first > THRESHOLD {
            insertion_sort(v, first, first + THRESHOLD, comp);
            for i in first + THRESHOLD..last {
                unguarded_linear_insert(v, i, comp);
            }
        } else {
            insertion_sort(v, first, last, comp);
        }
    }

    fn introsort_loop<E: Copy, C: Fn(&E, &E) -> bool>(
        v: &mut [E],
        first: usize,
        mut last: usize,
        mut depth: usize,
        comp: &C,
    ) {
        while last - first > THRESHOLD {
            if depth == 0 {
                partial_sort(v, first, last, last, comp);
                return;
            }
            depth -= 1;
            let cut = unguarded_partition_pivot(v, first, last, comp);
            introsort_loop(v, cut, last, depth, comp);
            last = cut;
        }
    }

    pub fn sort<E: Copy, C: Fn(&E, &E) -> bool>(v: &mut [E], first: usize, last: usize, comp: &C) {
        if last > first {
            introsort_loop(v, first, last, 2 * lg(last - first), comp);
            final_insertion_sort(v, first, last, comp);
        }
    }

    pub fn nth_element<E: Copy, C: Fn(&E, &E) -> bool>(
        v: &mut [E],
        mut first: usize,
        nth: usize,
        mut last: usize,
        comp: &C,
    ) {
        if first == last || nth == last {
            return;
        }
        let mut depth = 2 * lg(last - first);
        while last - first > 3 {
            if depth == 0 {
                heap_select(v, first, nth + 1, last, comp);
                v.swap(first, nth);
                return;
            }
            depth -= 1;
            let cut = unguarded_partition_pivot(v, first, last, comp);
            if cut <= nth {
                first = cut;
            } else {
                last = cut;
            }
        }
        insertion_sort(v, first, last, comp);
    }

    fn push_heap<E: Copy, C: Fn(&E, &E) -> bool>(
        v: &mut [E],
        first: usize,
        mut hole: usize,
        top: usize,
        val: E,
        comp: &C,
    ) {
        while hole > top {
            let parent = (hole - 1) / 2;
            if !comp(&v[first + parent], &val) {
                break;
            }
            v[first + hole] = v[first + parent];
            hole = parent;
        }
        v[first + hole] = val;
    }

    fn adjust_heap<E: Copy, C: Fn(&E, &E) -> bool>(
        v: &mut [E],
        first: usize,
        mut hole: usize,
        len: usize,
        val: E,
        comp: &C,
    ) {
        let top = hole;
        let mut second = hole;
        while len > 0 && second < (len - 1) / 2 {
            second = 2 * (second + 1);
            if comp(&v[first + second], &v[first + second - 1]) {
                second -= 1;
            }
            v[first + hole] = v[first + second];
            hole = second;
        }
        if len & 1 == 0 && len >= 2 && second == (len - 2) / 2 {
            second = 2 * (second + 1);
            v[first + hole] = v[first + second - 1];
            hole = second - 1;
        }
        push_heap(v, first, hole, top, val, comp);
    }

    fn make_heap<E: Copy, C: Fn(&E, &E) -> bool>(v: &mut [E], first: usize, last: usize, comp: &C) {
        let len = last - first;
        if len < 2 {
            return;
        }
        let mut parent = (len - 2) / 2;
        loop {
            let val = v[first + parent];
            adjust_heap(v, first, parent, len, val, comp);
            if parent == 0 {
                return;
            }
            parent -= 1;
        }
    }

    fn pop_heap<E: Copy, C: Fn(&E, &E) -> bool>(
        v: &mut [E],
        first: usize,
        last: usize,
        result: usize,
        comp: &C,
    ) {
        let val = v[result];
        v[result] = v[first];
        adjust_heap(v, first, 0, last - first, val, comp);
    }

    fn heap_select<E: Copy, C: Fn(&E, &E) -> bool>(
        v: &mut [E],
        first: usize,
        middle: usize,
        last: usize,
        comp: &C,
    ) {
        make_heap(v, first, middle, comp);
        for i in middle..last {
            if comp(&v[i], &v[first]) {
                pop_heap(v, first, middle, i, comp);
            }
        }
    }

    pub fn partial_sort<E: Copy, C: Fn(&E, &E) -> bool>(
        v: &mut [E],
        first: usize,
        middle: usize,
        last: usize,
        comp: &C,
    ) {
        heap_select(v, first, middle, last, comp);
        let mut end = middle;
        while end - first > 1 {
            end -= 1;
            pop_heap(v, first, end, end, comp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topk_of_distinct_keys_is_sorted_largest_first() {
        // both of ATen's paths: nth_element + sort (k * 64 > n) and partial_sort
        let keys: Vec<f64> = (0..300).map(|i| f64::from((i * 7919) % 300)).collect();
        for k in [1, 2, 4, 5, 17, 100, 300] {
            let got = topk_indices(&keys, k);
            let mut want: Vec<usize> = (0..300).collect();
            want.sort_by(|&a, &b| keys[b].total_cmp(&keys[a]));
            assert_eq!(got, want[..k].to_vec(), "k = {k}");
        }
    }

    #[test]
    fn stl_sort_sorts() {
        let mut v: Vec<(f64, usize)> = (0..1000)
            .map(|i| (f64::from((i * 31) % 997), i as usize))
            .collect();
        let comp = |a: &(f64, usize), b: &(f64, usize)| a.0 < b.0;
        let n = v.len();
        stl::sort(&mut v, 0, n, &comp);
        assert!(v.windows(2).all(|w| w[0].0 <= w[1].0));
    }
}
