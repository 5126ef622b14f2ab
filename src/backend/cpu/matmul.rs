//! Matrix multiply kernels for the CPU backend: faer for floats, a blocked loop for integers.

use crate::dtype::DType;
use crate::layout::Layout;
use crate::storage::{Buffer, Element};
use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// A read-only strided 2-D matrix view into a slice: element (i, j) is at `data[offset + i*row_stride + j*col_stride]`.
/// Strides are in elements and are >= 0 (0 is allowed: broadcast rows/cols).
#[derive(Clone, Copy, Debug)]
pub struct MatView<'a, T> {
    pub data: &'a [T],
    pub offset: usize,
    pub rows: usize,
    pub cols: usize,
    pub row_stride: usize,
    pub col_stride: usize,
}

impl<T: Copy> MatView<'_, T> {
    /// Panics (caller bug) unless every element the view addresses lies inside `data`.
    /// Invariant: `ops::matmul` validates shapes and builds views from real layouts, so a
    /// user can never reach this panic; it guards the `unsafe` faer views below.
    #[allow(clippy::panic)]
    fn check_bounds(&self, name: &str) {
        if self.rows == 0 || self.cols == 0 {
            return;
        }
        let last = (self.rows - 1)
            .checked_mul(self.row_stride)
            .zip((self.cols - 1).checked_mul(self.col_stride))
            .and_then(|(r, c)| r.checked_add(c)?.checked_add(self.offset));
        match last {
            Some(last) if last < self.data.len() => {}
            _ => panic!("gemm: view `{name}` reaches past the end of its slice"),
        }
    }

    #[inline]
    fn at(&self, i: usize, j: usize) -> T {
        self.data[self.offset + i * self.row_stride + j * self.col_stride]
    }
}

/// Element types the GEMM supports.
pub trait GemmElem: Copy + Send + Sync + 'static {
    /// Additive identity, written to `out` when the inner dimension is 0.
    const ZERO: Self;
    /// Kernel for non-degenerate shapes; views are bounds-checked and `out.len() == m*n`.
    /// Writes every element of `out`; reads none, unless `accumulate` (then `out` is
    /// initialised and the product is added to it).
    #[doc(hidden)]
    fn gemm_kernel(
        a: MatView<'_, Self>,
        b: MatView<'_, Self>,
        out: &mut [MaybeUninit<Self>],
        accumulate: bool,
        parallel: bool,
    );
}

/// faer wants isize strides. A stride along a dimension of size 1 is never used to
/// address memory, so it is normalised to 1 (keeps faer's contiguity fast paths and
/// avoids a wrapping cast of an arbitrary unused stride). Any other stride `s` was
/// bounds-checked: `s * (dim - 1) < data.len() <= isize::MAX`, so the cast is lossless.
fn faer_stride(stride: usize, dim: usize) -> isize {
    if dim <= 1 { 1 } else { stride as isize }
}

/// Safe wrapper building a faer view of a (non-empty) `MatView`.
fn faer_ref<T: Copy>(v: MatView<'_, T>) -> MatRef<'_, T> {
    v.check_bounds("faer");
    let rs = faer_stride(v.row_stride, v.rows);
    let cs = faer_stride(v.col_stride, v.cols);
    // SAFETY: check_bounds passed and the view is non-empty (callers skip empty shapes),
    // so `offset < data.len()`: the pointer stays inside `data`'s allocation, and every
    // element addressed through the (normalised, losslessly cast) strides lies in `data`.
    // The MatRef is read-only (zero strides are allowed for MatRef) and borrows `v.data`
    // immutably for its lifetime, so nothing can write to the elements it reads.
    unsafe { MatRef::from_raw_parts(v.data.as_ptr().add(v.offset), v.rows, v.cols, rs, cs) }
}

macro_rules! faer_elem {
    ($t:ty) => {
        impl GemmElem for $t {
            const ZERO: Self = 0.0;
            fn gemm_kernel(
                a: MatView<'_, $t>,
                b: MatView<'_, $t>,
                out: &mut [MaybeUninit<$t>],
                accumulate: bool,
                parallel: bool,
            ) {
                let (m, n) = (a.rows, b.cols);
                // SAFETY: `out` holds m*n elements (checked by `gemm_into`), row-major
                // with row stride n. With `Accum::Replace` faer writes every element and
                // reads none (its documented contract), so uninitialised memory is never
                // read; with `Accum::Add` the caller guarantees `out` is initialised.
                // Nothing else refers to `out` while the view lives.
                let dst = unsafe {
                    MatMut::from_raw_parts_mut(out.as_mut_ptr().cast::<$t>(), m, n, n as isize, 1)
                };
                let par = if parallel { Par::rayon(0) } else { Par::Seq };
                let accum = if accumulate {
                    Accum::Add
                } else {
                    Accum::Replace
                };
                matmul(dst, accum, faer_ref(a), faer_ref(b), 1.0, par);
                clear_upper_vector_state(parallel);
            }
        }
    };
}
faer_elem!(f32);
faer_elem!(f64);

/// faer's AVX/AVX-512 kernels leave the upper halves of the vector registers dirty on
/// the threads that ran them (no `vzeroupper` on return). Until something clears them,
/// every SSE instruction on those threads (our elementwise kernels, libm) pays an
/// AVX-SSE transition penalty: measured 2-4x slower elementwise ops after any GEMM.
/// Clears them on this thread, and on every pool thread after a parallel GEMM.
fn clear_upper_vector_state(all_threads: bool) {
    #[cfg(target_arch = "x86_64")]
    {
        if !std::arch::is_x86_feature_detected!("avx") {
            return;
        }
        #[target_feature(enable = "avx")]
        fn zeroupper() {
            std::arch::x86_64::_mm256_zeroupper();
        }
        // SAFETY: the CPU supports AVX (checked above).
        let clear = || unsafe { zeroupper() };
        if all_threads && rayon::current_thread_index().is_some() {
            rayon::broadcast(|_| clear());
        }
        clear();
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = all_threads;
}

impl GemmElem for i64 {
    const ZERO: Self = 0;
    fn gemm_kernel(
        a: MatView<'_, i64>,
        b: MatView<'_, i64>,
        out: &mut [MaybeUninit<i64>],
        accumulate: bool,
        parallel: bool,
    ) {
        let out = if accumulate {
            // SAFETY: with `accumulate` the caller guarantees `out` is initialised.
            unsafe { assume_init(out) }
        } else {
            init_zero(out)
        };
        int_gemm(a, b, out, parallel);
    }
}

/// Writes zeros to every element of `out` and returns it as initialised.
fn init_zero<T: GemmElem>(out: &mut [MaybeUninit<T>]) -> &mut [T] {
    out.fill(MaybeUninit::new(T::ZERO));
    // SAFETY: every element was just written.
    unsafe { assume_init(out) }
}

/// `out` as initialised values.
///
/// # Safety
/// Every element of `out` must be initialised (MaybeUninit<T> has T's layout).
unsafe fn assume_init<T>(out: &mut [MaybeUninit<T>]) -> &mut [T] {
    // SAFETY: the caller's guarantee.
    unsafe { &mut *(std::ptr::from_mut(out) as *mut [T]) }
}

/// `out` as possibly uninitialised memory (only ever written with valid values).
fn as_uninit<T>(out: &mut [T]) -> &mut [MaybeUninit<T>] {
    // SAFETY: MaybeUninit<T> has T's layout, and every value is a valid MaybeUninit<T>.
    unsafe { &mut *(std::ptr::from_mut(out) as *mut [MaybeUninit<T>]) }
}

/// Blocked i-k-j loop with wrapping arithmetic (torch's integer matmul overflow behaviour).
/// Integer addition is associative, so the result never depends on threading.
fn int_gemm(a: MatView<'_, i64>, b: MatView<'_, i64>, out: &mut [i64], parallel: bool) {
    const KB: usize = 128; // k-block: a KB x JB tile of b (256 KiB) stays in L2
    const JB: usize = 256; // j-block: one output row segment (2 KiB) stays in L1
    const IB: usize = 32; // rows per rayon task
    let (k, n) = (a.cols, b.cols);
    // Rows of b must be contiguous for the vectorisable inner loop; pack if they are not.
    let packed: Vec<i64>;
    let (bdata, boff, brs) = if b.col_stride == 1 || n == 1 {
        (b.data, b.offset, b.row_stride)
    } else {
        packed = (0..k)
            .flat_map(|p| (0..n).map(move |j| b.at(p, j)))
            .collect();
        (&packed[..], 0, n)
    };
    // `out` arrives zeroed, or holding the bias to accumulate onto (addmm): no fill here
    let block = |i0: usize, chunk: &mut [i64]| {
        let rows = chunk.len() / n;
        for j0 in (0..n).step_by(JB) {
            let j1 = (j0 + JB).min(n);
            for p0 in (0..k).step_by(KB) {
                for r in 0..rows {
                    let orow = &mut chunk[r * n + j0..r * n + j1];
                    for p in p0..(p0 + KB).min(k) {
                        let aip = a.at(i0 + r, p);
                        let start = boff + p * brs;
                        for (o, &bv) in orow.iter_mut().zip(&bdata[start + j0..start + j1]) {
                            *o = o.wrapping_add(aip.wrapping_mul(bv));
                        }
                    }
                }
            }
        }
    };
    if parallel {
        out.par_chunks_mut(IB.saturating_mul(n))
            .enumerate()
            .for_each(|(c, chunk)| block(c * IB, chunk));
    } else {
        block(0, out);
    }
}

/// out (row-major contiguous, len rows_a*cols_b, overwritten, not accumulated) = a · b.
///
/// Only `out[..rows_a*cols_b]` is written. Panics only on a caller bug: inner dimensions
/// that differ, `out` too short, or a view addressing memory outside its slice (these
/// O(1) checks are real asserts, not debug-only, because the float path builds raw
/// faer views whose soundness depends on them).
///
/// `parallel` lets faer (or the integer loop) use the global rayon pool; problems with
/// m*n*k below 2^23 always run sequentially (see [`splits`]). Results are deterministic run to run for
/// the same inputs, `parallel` flag and rayon thread count. For f32/f64 the sequential
/// and threaded paths (and different thread counts or CPUs, since faer picks its
/// kernel by CPU features) may differ in the last bits because the summation order
/// changes; i64 results are always identical.
pub fn gemm<T: GemmElem>(a: MatView<'_, T>, b: MatView<'_, T>, out: &mut [T], parallel: bool) {
    gemm_into(a, b, as_uninit(out), false, parallel);
}

/// [`gemm`] into memory that need not be initialised (a fresh output's spare capacity):
/// every element of `out[..rows_a*cols_b]` is written, none is read.
pub fn gemm_uninit<T: GemmElem>(
    a: MatView<'_, T>,
    b: MatView<'_, T>,
    out: &mut [MaybeUninit<T>],
    parallel: bool,
) {
    gemm_into(a, b, out, false, parallel);
}

/// Whether an `m x k` by `k x n` product is large enough to split across threads: from
/// 2^23 multiply-adds (a 203^3 cube). Measured on 2 cores, square f32: one thread takes
/// 17 µs at 128^3 and 33 at 160^3, two take 17 and 41 (waking the second thread and
/// faer's split cost more than they save); at 192^3 two begin to win (51 against 55),
/// at 256^3 clearly (78 against 131).
pub fn splits(m: usize, n: usize, k: usize) -> bool {
    (m as u128) * (n as u128) * (k as u128) >= 1 << 23
}

/// `out += a · b` (torch's addmm with beta = alpha = 1: the bias is in `out` already),
/// with [`gemm`]'s checks and threading.
pub fn gemm_add<T: GemmElem>(a: MatView<'_, T>, b: MatView<'_, T>, out: &mut [T], parallel: bool) {
    gemm_into(a, b, as_uninit(out), true, parallel);
}

/// `accumulate`: `out` is initialised and the product is added to it.
#[allow(clippy::panic)] // invariant: callers validate shapes first (see check_bounds)
fn gemm_into<T: GemmElem>(
    a: MatView<'_, T>,
    b: MatView<'_, T>,
    out: &mut [MaybeUninit<T>],
    accumulate: bool,
    parallel: bool,
) {
    let (m, k, n, kb) = (a.rows, a.cols, b.cols, b.rows);
    assert!(
        k == kb,
        "gemm: inner dims differ: a is {m}x{k}, b is {kb}x{n}"
    );
    let len = match m.checked_mul(n) {
        Some(len) if len <= out.len() => len,
        _ => panic!("gemm: out has len {}, need {m}*{n}", out.len()),
    };
    a.check_bounds("a");
    b.check_bounds("b");
    let out = &mut out[..len];
    if len == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            init_zero(out);
        }
        return;
    }
    T::gemm_kernel(a, b, out, accumulate, parallel && splits(m, n, k));
}

// ---- over buffers and layouts (the kernels `ops::matmul` calls) -----------------------

/// The matrix in the last two dims of `l`, `batch_offset` elements further on.
fn view_of<'a, T>(data: &'a [T], l: &Layout, batch_offset: usize) -> MatView<'a, T> {
    let n = l.ndim();
    MatView {
        data,
        offset: l.offset + batch_offset,
        rows: l.shape[n - 2],
        cols: l.shape[n - 1],
        row_stride: l.strides[n - 2],
        col_stride: l.strides[n - 1],
    }
}

/// `C[b] = A[b]·B[b]` for 2-D (no batch) or 3-D layouts of matching batch size and one
/// dtype, into a fresh row-major buffer. Bool has no kernel (torch's checks let it
/// through only for a product of nothing): all false.
pub fn bmm(a: &Buffer, la: &Layout, b: &Buffer, lb: &Layout) -> Buffer {
    match a.dtype() {
        DType::F32 => batched::<f32>(a, la, b, lb),
        DType::F64 => batched::<f64>(a, la, b, lb),
        DType::I64 => batched::<i64>(a, la, b, lb),
        DType::Bool => {
            let nd = la.ndim();
            let len = la.shape[..nd - 1].iter().product::<usize>() * lb.shape[nd - 1];
            Buffer::Bool(vec![false; len])
        }
    }
}

fn batched<T: Element + GemmElem>(ra: &Buffer, la: &Layout, rb: &Buffer, lb: &Layout) -> Buffer {
    let nd = la.ndim();
    let (m, n) = (la.shape[nd - 2], lb.shape[nd - 1]);
    let batch = if nd == 3 { la.shape[0] } else { 1 };
    // Not zeroed first: the GEMM writes every element (zeroing was 2.6% of a linear
    // layer's backward).
    let len = batch * m * n;
    let mut out: Vec<T> = Vec::with_capacity(len);
    let spare = &mut out.spare_capacity_mut()[..len];
    let (da, db) = (T::slice(ra), T::slice(rb));
    let parallel = crate::runtime::intra_op_parallel();
    for i in 0..batch {
        let (oa, ob) = if nd == 3 {
            (i * la.strides[0], i * lb.strides[0])
        } else {
            (0, 0)
        };
        gemm_uninit(
            view_of(da, la, oa),
            view_of(db, lb, ob),
            &mut spare[i * m * n..(i + 1) * m * n],
            parallel,
        );
    }
    // SAFETY: each batch's GEMM wrote all of its m*n elements, so all `len` are set.
    unsafe { out.set_len(len) };
    T::into_buffer(out)
}

/// `bias + a·b` for 2-D float or integer layouts of one dtype, the bias (over `lc`)
/// already expanded to the output's shape: the bias is laid out row by row, then the
/// GEMM adds the product. `None` for bool (no kernel).
pub fn addmm(
    c: &Buffer,
    lc: &Layout,
    a: &Buffer,
    la: &Layout,
    b: &Buffer,
    lb: &Layout,
) -> Option<Buffer> {
    fn go<T: Element + GemmElem>(
        c: &Buffer,
        lc: &Layout,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
    ) -> Buffer {
        let mut out = rows_of(T::slice(c), lc);
        let (va, vb) = (view_of(T::slice(a), la, 0), view_of(T::slice(b), lb, 0));
        gemm_add(va, vb, &mut out, crate::runtime::intra_op_parallel());
        T::into_buffer(out)
    }
    match c.dtype() {
        DType::F32 => Some(go::<f32>(c, lc, a, la, b, lb)),
        DType::F64 => Some(go::<f64>(c, lc, a, la, b, lb)),
        DType::I64 => Some(go::<i64>(c, lc, a, la, b, lb)),
        DType::Bool => None,
    }
}

/// A 2-D (possibly broadcast) layout's elements in row-major order: a bias broadcast
/// down the rows is copied a row at a time.
fn rows_of<T: Copy>(data: &[T], l: &Layout) -> Vec<T> {
    let (rows, cols) = (l.shape[0], l.shape[1]);
    if cols > 0 && l.strides[0] == 0 && l.strides[1] == 1 {
        let row = &data[l.offset..l.offset + cols];
        let mut out = Vec::with_capacity(rows * cols);
        for _ in 0..rows {
            out.extend_from_slice(row);
        }
        return out;
    }
    super::strided::contiguous(data, l).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    trait TestElem: GemmElem + PartialEq + std::fmt::Debug {
        const TOL: f64;
        fn sample(seed: u64) -> Self;
        fn f(self) -> f64;
    }
    macro_rules! test_elem {
        ($t:ty, $tol:expr, $div:expr) => {
            impl TestElem for $t {
                const TOL: f64 = $tol;
                fn sample(s: u64) -> Self {
                    let s = (s + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    ((s >> 40) as i64 % 101 - 50) as $t / $div
                }
                fn f(self) -> f64 {
                    self as f64
                }
            }
        };
    }
    test_elem!(f32, 1e-5, 37.0);
    test_elem!(f64, 1e-12, 37.0);
    test_elem!(i64, 0.0, 1);

    /// rows x cols matrix in layout 0 row-major, 1 transposed, 2 broadcast (row_stride 0),
    /// 3 offset 7 with padded rows; returns the data and the view parameters.
    fn build<T: TestElem>(r: usize, c: usize, layout: u8, seed: u64) -> (Vec<T>, [usize; 3]) {
        let (len, p) = match layout {
            0 => (r * c, [0, c, 1]),
            1 => (r * c, [0, 1, r]),
            2 => (c, [0, 0, 1]),
            _ => (7 + r * (c + 3), [7, c + 3, 1]),
        };
        let data = (0..len as u64).map(|i| T::sample(seed * 1_000_003 + i));
        (data.collect(), p)
    }

    fn view<T>(data: &[T], r: usize, c: usize, p: [usize; 3]) -> MatView<'_, T> {
        let [offset, row_stride, col_stride] = p;
        MatView {
            data,
            offset,
            rows: r,
            cols: c,
            row_stride,
            col_stride,
        }
    }

    fn check_all<T: TestElem>() {
        let shapes = [(1, 1, 1), (3, 4, 5), (17, 33, 9), (70, 1, 80)];
        let edges = [(0, 3, 4), (3, 0, 4), (3, 4, 0), (128, 128, 128)];
        let cases = |&s| (0..32).map(move |i| (s, i % 4, i / 4 % 4, i >= 16));
        // 2^23 multiply-adds, the smallest product that splits: two layouts, both ways
        let split = [
            ((256, 128, 256), 0, 0, false),
            ((256, 128, 256), 3, 2, true),
        ];
        let all = shapes.iter().chain(&edges).flat_map(cases).chain(split);
        for ((m, k, n), la, lb, par) in all {
            let ((ad, ap), (bd, bp)) = (build::<T>(m, k, la, 1), build::<T>(k, n, lb, 2));
            let (a, b) = (view(&ad, m, k, ap), view(&bd, k, n, bp));
            let (mut out, mut again) = (vec![T::sample(99); m * n], vec![T::sample(98); m * n]);
            gemm(a, b, &mut out, par);
            gemm(a, b, &mut again, par);
            assert_eq!(out, again, "not deterministic");
            for (i, j) in (0..m).flat_map(|i| (0..n).map(move |j| (i, j))) {
                let terms = (0..k).map(|p| a.at(i, p).f() * b.at(p, j).f());
                let (exact, mag) = terms.fold((0.0, 0.0), |(s, t), x: f64| (s + x, t + x.abs()));
                let got = out[i * n + j].f();
                let ok = (got - exact).abs() <= T::TOL * mag;
                assert!(ok, "{m},{k},{n} {la}{lb}{par} ({i},{j}): {got} vs {exact}");
            }
        }
    }

    #[test]
    fn matches_naive_f32_f64_i64() {
        check_all::<f32>();
        check_all::<f64>();
        check_all::<i64>();
    }

    #[test]
    fn i64_wraps_on_overflow() {
        let (a, b, mut out) = ([i64::MAX, 2], [2i64, i64::MAX], [0i64]);
        let (va, vb) = (view(&a, 1, 2, [0, 2, 1]), view(&b, 2, 1, [0, 1, 1]));
        gemm(va, vb, &mut out, false);
        assert_eq!(out[0], i64::MAX.wrapping_mul(2).wrapping_mul(2));
    }

    #[test]
    #[should_panic(expected = "reaches past the end")]
    fn out_of_bounds_view_panics() {
        let d = [1.0f64; 5];
        let (va, vb) = (view(&d, 2, 3, [0, 3, 1]), view(&d, 3, 2, [0, 1, 0]));
        gemm(va, vb, &mut [0.0; 4], false);
    }
}
