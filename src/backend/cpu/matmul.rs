//! Matrix multiply kernels for the CPU backend: `gemm` for floats, a blocked loop for integers.

use super::gemm;
use crate::dtype::DType;
use crate::layout::Layout;
use crate::storage::{Buffer, Element};
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
    /// user can never reach this panic; it guards the raw pointers the float GEMM reads.
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

/// What the product is added to.
#[derive(Clone, Copy, Debug)]
pub enum Start<'a, T> {
    /// Nothing: `out = a·b` (`out` need not be initialised).
    Zero,
    /// `out`'s values: `out += a·b`.
    Out,
    /// An `m x n` view (strides may be 0, a broadcast bias): `out = d + a·b`, with `d`
    /// never copied into `out` first.
    Matrix(MatView<'a, T>),
}

/// Element types the GEMM supports.
pub trait GemmElem: Copy + Send + Sync + 'static {
    /// Additive identity, written to `out` when the inner dimension is 0.
    const ZERO: Self;
    /// One element of a product with an inner dimension of 1, with the bits of the
    /// one-step chain from zero: `fma(a, b, 0)` for floats (which is `a * b + 0`: one
    /// rounding either way, and -0 becomes +0 as the chain makes it), a wrapping
    /// multiply for integers.
    fn outer(a: Self, b: Self) -> Self;
    /// `dst[j] = outer(a, b[j])` for a row of an outer product; with non-temporal stores
    /// when `stream` (floats on x86-64, see `super::stream`; integers store plainly).
    /// Follow a run of streamed rows with `stream::fence()`.
    #[inline(always)]
    fn outer_row(dst: &mut [MaybeUninit<Self>], a: Self, b: &[Self], stream: bool) {
        let _ = stream;
        for (o, &bj) in dst.iter_mut().zip(b) {
            o.write(Self::outer(a, bj));
        }
    }
    /// Kernel for non-degenerate shapes; views are bounds-checked and `out.len() == m*n`.
    /// Writes every element of `out`; reads none, unless `start` is `Out` (then `out`
    /// is initialised and the product is added to it).
    #[doc(hidden)]
    fn gemm_kernel(
        a: MatView<'_, Self>,
        b: MatView<'_, Self>,
        out: &mut [MaybeUninit<Self>],
        start: Start<'_, Self>,
        parallel: bool,
    );
}

macro_rules! float_elem {
    ($t:ty) => {
        impl GemmElem for $t {
            const ZERO: Self = 0.0;
            #[inline(always)]
            fn outer(a: Self, b: Self) -> Self {
                a * b + 0.0
            }
            #[inline(always)]
            fn outer_row(dst: &mut [MaybeUninit<Self>], a: Self, b: &[Self], stream: bool) {
                if stream {
                    <$t as super::stream::StreamElem>::scale_row(dst, a, b, super::vmath::level());
                } else {
                    for (o, &bj) in dst.iter_mut().zip(b) {
                        o.write(Self::outer(a, bj));
                    }
                }
            }
            fn gemm_kernel(
                a: MatView<'_, $t>,
                b: MatView<'_, $t>,
                out: &mut [MaybeUninit<$t>],
                start: Start<'_, $t>,
                parallel: bool,
            ) {
                float_gemm(gemm::level(), a, b, out, start, parallel);
            }
        }
    };
}
float_elem!(f32);
float_elem!(f64);

/// The float GEMM of `gemm_kernel` at a given level (tests force each one).
fn float_gemm<T: gemm::GemmFloat + GemmElem>(
    level: crate::backend::cpu::vmath::Level,
    a: MatView<'_, T>,
    b: MatView<'_, T>,
    out: &mut [MaybeUninit<T>],
    start: Start<'_, T>,
    parallel: bool,
) {
    let (m, n) = (a.rows, b.cols);
    a.check_bounds("a");
    b.check_bounds("b");
    // (`gemm_into` checked that `out` holds m*n)
    let Some(out) = out.get_mut(..m * n) else {
        return;
    };
    if out.is_empty() || a.cols == 0 {
        start_values(out, start, m, n);
        return;
    }
    let start = match start {
        Start::Zero => gemm::Start::Zero,
        Start::Out => gemm::Start::C,
        Start::Matrix(d) => {
            d.check_bounds("start");
            check_start_shape(&d, m, n);
            gemm::Start::Matrix {
                // in bounds: check_bounds passed and the view is non-empty
                p: d.data[d.offset..].as_ptr(),
                rs: d.row_stride,
                cs: d.col_stride,
            }
        }
    };
    let pr = gemm::Problem {
        m,
        n,
        k: a.cols,
        // in bounds: check_bounds passed and the views are non-empty, so offset < len
        a: a.data[a.offset..].as_ptr(),
        rsa: a.row_stride,
        csa: a.col_stride,
        b: b.data[b.offset..].as_ptr(),
        rsb: b.row_stride,
        csb: b.col_stride,
        c: out.as_mut_ptr().cast::<T>(),
        rsc: n,
        csc: 1,
        start,
    };
    // SAFETY: the views were bounds-checked (every element they address lies in their
    // slices; a start view is a shared borrow, so it cannot overlap `out`), `out` holds
    // m*n elements written row-major (distinct), initialised when it is the start (the
    // callers' contract), and borrowed mutably for the call; `level` comes from
    // `gemm::level()` or a test's list of the CPU's levels.
    unsafe {
        gemm::run(
            level.min(crate::backend::cpu::vmath::detected()),
            pr,
            parallel,
        )
    }
}

impl GemmElem for i64 {
    const ZERO: Self = 0;
    #[inline(always)]
    fn outer(a: Self, b: Self) -> Self {
        a.wrapping_mul(b)
    }
    fn gemm_kernel(
        a: MatView<'_, i64>,
        b: MatView<'_, i64>,
        out: &mut [MaybeUninit<i64>],
        start: Start<'_, i64>,
        parallel: bool,
    ) {
        let out = start_values(out, start, a.rows, b.cols);
        int_gemm(a, b, out, parallel);
    }
}

/// Panics (caller bug) unless a start view is `m x n`.
#[allow(clippy::panic)] // invariant: callers build the start view from the output's shape
fn check_start_shape<T>(d: &MatView<'_, T>, m: usize, n: usize) {
    if (d.rows, d.cols) != (m, n) {
        panic!("gemm: start is {}x{}, the product {m}x{n}", d.rows, d.cols);
    }
}

/// Writes the start's values to `out` (m x n, row-major): zeros, `out`'s
/// own (nothing to write), or the start matrix's; returns `out` as initialised.
fn start_values<'o, T: GemmElem>(
    out: &'o mut [MaybeUninit<T>],
    start: Start<'_, T>,
    m: usize,
    n: usize,
) -> &'o mut [T] {
    match start {
        Start::Zero => init_zero(out),
        // SAFETY: with `Start::Out` the caller guarantees `out` is initialised.
        Start::Out => unsafe { assume_init(out) },
        Start::Matrix(d) => {
            check_start_shape(&d, m, n);
            for (e, o) in out.iter_mut().enumerate() {
                *o = MaybeUninit::new(d.at(e / n, e % n));
            }
            // SAFETY: every element was just written.
            unsafe { assume_init(out) }
        }
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
    const IB: usize = 32; // rows per piece, at least
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
        // a fixed split of the rows (integer sums do not depend on it anyway)
        let pieces = crate::runtime::num_threads().min(out.len().div_ceil(IB * n));
        let (base, len) = (out.as_mut_ptr() as usize, out.len());
        let rows = len / n;
        gemm::for_each_piece(pieces, &|i| {
            let (r0, r1) = (i * rows / pieces, (i + 1) * rows / pieces);
            // SAFETY: piece i is rows [r0, r1) of `out`, disjoint from every other piece,
            // and each piece runs once while `out` stays mutably borrowed.
            let chunk = unsafe {
                std::slice::from_raw_parts_mut((base as *mut i64).add(r0 * n), (r1 - r0) * n)
            };
            block(r0, chunk);
        });
    } else {
        block(0, out);
    }
}

/// out (row-major contiguous, len rows_a*cols_b, overwritten, not accumulated) = a · b.
///
/// Only `out[..rows_a*cols_b]` is written. Panics only on a caller bug: inner dimensions
/// that differ, `out` too short, or a view addressing memory outside its slice (these
/// O(1) checks are real asserts, not debug-only, because the float path builds raw
/// pointers whose soundness depends on them).
///
/// `parallel` lets the product use the pool; products of fewer than 2^20 multiply-adds
/// always run on the calling thread (see [`splits`]). Float results are the same bits
/// whatever the thread count and at both FMA levels (each element is one multiply-add
/// chain along k: see `gemm`'s module docs for the exception, matrix-vector products,
/// and the portable level); i64 results are always identical.
pub fn gemm<T: GemmElem>(a: MatView<'_, T>, b: MatView<'_, T>, out: &mut [T], parallel: bool) {
    gemm_into(a, b, as_uninit(out), Start::Zero, parallel);
}

/// [`gemm`] into memory that need not be initialised (a fresh output's spare capacity):
/// every element of `out[..rows_a*cols_b]` is written, none is read.
pub fn gemm_uninit<T: GemmElem>(
    a: MatView<'_, T>,
    b: MatView<'_, T>,
    out: &mut [MaybeUninit<T>],
    parallel: bool,
) {
    gemm_into(a, b, out, Start::Zero, parallel);
}

/// Whether an `m x k` by `k x n` product is large enough to split across threads: from
/// 2^20 multiply-adds (about 12 µs on one core at 170 GFLOP/s). The split is our own
/// (`gemm::run`: the calling thread takes one piece, warm pool workers the others), so
/// it costs about what the pool's hand-off costs (a few µs), not faer's rayon join
/// (7.6 µs from outside the pool), which had kept this at 2^23.
pub fn splits(m: usize, n: usize, k: usize) -> bool {
    (m as u128) * (n as u128) * (k as u128) >= 1 << 20
}

/// `out += a · b` (torch's addmm with beta = alpha = 1: the bias is in `out` already),
/// with [`gemm`]'s checks and threading.
pub fn gemm_add<T: GemmElem>(a: MatView<'_, T>, b: MatView<'_, T>, out: &mut [T], parallel: bool) {
    gemm_into(a, b, as_uninit(out), Start::Out, parallel);
}

/// `out = d + a · b` (torch's addmm with beta = alpha = 1), `d` an `m x n` view (a bias
/// broadcast with stride 0), into memory that need not be initialised: every element
/// of `out[..m*n]` is written. Each element's chain starts from `d`'s value, so the bits
/// are those of copying `d` into `out` and calling [`gemm_add`], without the copy.
pub fn gemm_start<T: GemmElem>(
    d: MatView<'_, T>,
    a: MatView<'_, T>,
    b: MatView<'_, T>,
    out: &mut [MaybeUninit<T>],
    parallel: bool,
) {
    gemm_into(a, b, out, Start::Matrix(d), parallel);
}

/// `start`: what the product is added to (`Out`: `out` is initialised).
#[allow(clippy::panic)] // invariant: callers validate shapes first (see check_bounds)
fn gemm_into<T: GemmElem>(
    a: MatView<'_, T>,
    b: MatView<'_, T>,
    out: &mut [MaybeUninit<T>],
    start: Start<'_, T>,
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
    if let Start::Matrix(d) = &start {
        d.check_bounds("start");
        check_start_shape(d, m, n);
    }
    let out = &mut out[..len];
    if len == 0 {
        return;
    }
    if k == 0 {
        start_values(out, start, m, n);
        return;
    }
    T::gemm_kernel(a, b, out, start, parallel && splits(m, n, k));
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
            Buffer::Bool(vec![false; len].into())
        }
    }
}

/// Where product `i` of a batched (3-D) or single (2-D) product starts in A and in B.
fn batch_offsets(la: &Layout, lb: &Layout, i: usize) -> (usize, usize) {
    if la.ndim() == 3 {
        (i * la.strides[0], i * lb.strides[0])
    } else {
        (0, 0)
    }
}

fn batched<T: Element + GemmElem>(ra: &Buffer, la: &Layout, rb: &Buffer, lb: &Layout) -> Buffer {
    let nd = la.ndim();
    let (m, k, n) = (la.shape[nd - 2], la.shape[nd - 1], lb.shape[nd - 1]);
    let batch = if nd == 3 { la.shape[0] } else { 1 };
    let (da, db) = (T::slice(ra), T::slice(rb));
    let offsets = |i: usize| batch_offsets(la, lb, i);
    let len = batch * m * n;
    if k == 1 {
        // Outputs larger than the last-level cache (per-sample gradients: 51 MB for 128
        // examples of a 784 x 128 layer) bypass it: no read for ownership of each line.
        let stream = super::stream::worth_streaming(len.saturating_mul(std::mem::size_of::<T>()));
        return T::into_buffer(outer_products(da, la, db, lb, batch, len, stream));
    }
    // Not zeroed first: the GEMM writes every element (zeroing was 2.6% of a linear
    // layer's backward).
    let mut out: Vec<T> = Vec::with_capacity(len);
    let spare = &mut out.spare_capacity_mut()[..len];
    let parallel = crate::runtime::intra_op_parallel();
    let product = |i: usize, out: &mut [MaybeUninit<T>], parallel: bool| {
        let (oa, ob) = offsets(i);
        gemm_uninit(view_of(da, la, oa), view_of(db, lb, ob), out, parallel);
    };
    let whole = (batch as u128) * (m as u128) * (n as u128) * (k as u128);
    if parallel && batch > 1 && !splits(m, n, k) && whole >= 1 << 20 {
        // Products too small to split, many of them (per-sample gradients): whole
        // products to each thread. Each product's bits do not depend on where it runs.
        let pieces = crate::runtime::num_threads().min(batch);
        let base = spare.as_mut_ptr() as usize;
        gemm::for_each_piece(pieces, &|p| {
            for i in p * batch / pieces..(p + 1) * batch / pieces {
                // SAFETY: product i owns elements [i*m*n, (i+1)*m*n) of `spare`, and
                // each i belongs to one piece, run once while `spare` stays borrowed.
                let out = unsafe {
                    std::slice::from_raw_parts_mut(
                        (base as *mut MaybeUninit<T>).add(i * m * n),
                        m * n,
                    )
                };
                product(i, out, false);
            }
        });
    } else {
        for i in 0..batch {
            product(i, &mut spare[i * m * n..(i + 1) * m * n], parallel);
        }
    }
    // SAFETY: each batch's GEMM wrote all of its m*n elements, so all `len` are set.
    unsafe { out.set_len(len) };
    T::into_buffer(out)
}

/// `C[b] = A[b]·B[b]` with an inner dimension of 1 (the outer products of per-sample
/// weight gradients, `grad_out[b]ᵀ · x[b]`): element (b, i, j) is `A[b][i] · B[b][j]`, one
/// multiply, streamed into the output as an elementwise kernel is (parallel chunks, the
/// AVX2 build) rather than through GEMM tiles whose k loop has one step; with
/// non-temporal stores when `stream`. The bits are the GEMM's (see [`GemmElem::outer`]).
fn outer_products<T: Element + GemmElem>(
    da: &[T],
    la: &Layout,
    db: &[T],
    lb: &Layout,
    batch: usize,
    len: usize,
    stream: bool,
) -> Vec<T> {
    let nd = la.ndim();
    let (m, n) = (la.shape[nd - 2], lb.shape[nd - 1]);
    let at = |i: usize| batch_offsets(la, lb, i);
    if len == 0 {
        return Vec::new();
    }
    // B's row of product b starts at `bbase + b * bstep` of `brows` (packed first when
    // its elements are not contiguous: n per product)
    let packed: Vec<T>;
    let (brows, bbase, bstep) = if lb.strides[nd - 1] == 1 || n == 1 {
        (db, lb.offset, at(1).1)
    } else {
        packed = (0..batch)
            .flat_map(|b| {
                let v = view_of(db, lb, at(b).1);
                (0..n).map(move |j| v.at(0, j))
            })
            .collect();
        (&packed[..], 0, n)
    };
    let (ars, aoff) = (la.strides[nd - 2], la.offset);
    super::elementwise::fill_chunks(len, |start, chunk| {
        // the chunk starts at element `start`: row r (of batch*m), column j
        let (mut r, mut j) = (start / n, start % n);
        let mut done = 0;
        while done < chunk.len() {
            let (b, i) = (r / m, r % m);
            let ai = da[aoff + at(b).0 + i * ars];
            let row = bbase + b * bstep;
            let take = (n - j).min(chunk.len() - done);
            T::outer_row(
                &mut chunk[done..done + take],
                ai,
                &brows[row + j..row + j + take],
                stream,
            );
            done += take;
            r += 1;
            j = 0;
        }
        if stream {
            super::stream::fence();
        }
    })
}

/// `bias + a·b` for 2-D float or integer layouts of one dtype, the bias (over `lc`)
/// already expanded to the output's shape (strides 0 where broadcast): each element's
/// chain of multiply-adds starts from the bias's value, read in place (no copy of the
/// bias into the output first). `None` for bool (no kernel).
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
        let (va, vb) = (view_of(T::slice(a), la, 0), view_of(T::slice(b), lb, 0));
        let vc = view_of(T::slice(c), lc, 0);
        let len = va.rows * vb.cols;
        let mut out: Vec<T> = Vec::with_capacity(len);
        let spare = &mut out.spare_capacity_mut()[..len];
        gemm_start(vc, va, vb, spare, crate::runtime::intra_op_parallel());
        // SAFETY: gemm_start wrote all `len` elements.
        unsafe { out.set_len(len) };
        T::into_buffer(out)
    }
    match c.dtype() {
        DType::F32 => Some(go::<f32>(c, lc, a, la, b, lb)),
        DType::F64 => Some(go::<f64>(c, lc, a, la, b, lb)),
        DType::I64 => Some(go::<i64>(c, lc, a, la, b, lb)),
        DType::Bool => None,
    }
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

    /// The float GEMM's exact contract: every element of C is one chain of
    /// multiply-adds along k (fused at the FMA levels, a multiply then an add at the
    /// portable one), from zero or C's old value.
    trait Chain: TestElem + gemm::GemmFloat {
        fn step(a: Self, b: Self, c: Self, fused: bool) -> Self;
        fn bits(self) -> u64;
    }
    impl Chain for f32 {
        fn step(a: f32, b: f32, c: f32, fused: bool) -> f32 {
            if fused { a.mul_add(b, c) } else { a * b + c }
        }
        fn bits(self) -> u64 {
            u64::from(self.to_bits())
        }
    }
    impl Chain for f64 {
        fn step(a: f64, b: f64, c: f64, fused: bool) -> f64 {
            if fused { a.mul_add(b, c) } else { a * b + c }
        }
        fn bits(self) -> u64 {
            self.to_bits()
        }
    }

    /// Sizes the tests take m, n and k from.
    const SIZES: [usize; 14] = [0, 1, 2, 3, 7, 15, 16, 17, 31, 33, 64, 127, 129, 300];

    /// Whether this product runs as dot products (matrix-vector and thin products along
    /// a contiguous k), whose sums are reassociated (checked against the tolerance).
    fn is_dot<T>(
        level: crate::backend::cpu::vmath::Level,
        a: &MatView<'_, T>,
        b: &MatView<'_, T>,
    ) -> bool {
        gemm::reassociates(level, a.rows, b.cols, a.cols, a.col_stride, b.row_stride)
    }

    fn check_levels<T: Chain>() {
        use crate::backend::cpu::vmath::{Level, supported};
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        // every size for each dimension once with the others random, then random triples
        let mut shapes = vec![];
        for (d, &s) in (0..3).flat_map(|d| SIZES.iter().map(move |s| (d, s))) {
            let mut t = [0; 3].map(|_| SIZES[next() as usize % SIZES.len()]);
            t[d] = s;
            shapes.push(t);
        }
        for _ in 0..60 {
            shapes.push([0; 3].map(|_| SIZES[next() as usize % SIZES.len()]));
        }
        shapes.extend([[1, 300, 129], [129, 300, 1], [300, 1, 300], [10, 129, 300]]);
        // single dot products (their own chains), k with and without a tail
        shapes.extend([[1, 1000, 1], [1, 129, 1], [1, 64, 1], [1, 17, 1]]);
        for (case, &[m, k, n]) in shapes.iter().enumerate() {
            let (la, lb) = ((next() % 4) as u8, (next() % 4) as u8);
            // 0 from zero, 1 from out, 2 from a bias broadcast down the rows (addmm's),
            // 3 from one broadcast along the rows, 4 from a padded matrix
            let mode = next() % 5;
            let ((ad, ap), (bd, bp)) = (build::<T>(m, k, la, 1), build::<T>(k, n, lb, 2));
            let (a, b) = (view(&ad, m, k, ap), view(&bd, k, n, bp));
            let init: Vec<T> = (0..m * n).map(|i| T::sample(7 + i as u64)).collect();
            let dd: Vec<T> = (0..3 + m * (n + 2))
                .map(|i| T::sample(5 + i as u64))
                .collect();
            let dv = match mode {
                2 => view(&dd, m, n, [1, 0, 1]),
                3 => view(&dd, m, n, [2, 1, 0]),
                _ => view(&dd, m, n, [3, n + 2, 1]),
            };
            let start = match mode {
                0 => Start::Zero,
                1 => Start::Out,
                _ => Start::Matrix(dv),
            };
            let accumulate = mode > 0;
            let c0_at = |e: usize| {
                let (i, j) = (e / n.max(1), e % n.max(1));
                if mode == 1 { init[e] } else { dv.at(i, j) }
            };
            let mut first: Option<Vec<u64>> = None;
            for &level in &supported() {
                let fused = level != Level::Baseline;
                // the exact chain at this level
                let want: Vec<u64> = (0..m * n)
                    .map(|e| {
                        let (i, j) = (e / n.max(1), e % n.max(1));
                        let c0 = if accumulate {
                            c0_at(e)
                        } else {
                            <T as GemmElem>::ZERO
                        };
                        let c = (0..k).fold(c0, |c, p| T::step(a.at(i, p), b.at(p, j), c, fused));
                        c.bits()
                    })
                    .collect();
                for parallel in [false, true] {
                    let mut out = init.clone();
                    float_gemm(level, a, b, as_uninit(&mut out), start, parallel);
                    let mut again = init.clone();
                    float_gemm(level, a, b, as_uninit(&mut again), start, parallel);
                    let got: Vec<u64> = out.iter().map(|x| x.bits()).collect();
                    let ctx = format!(
                        "case {case}: {m}x{k}x{n} layouts {la}{lb} start {mode} {level:?} par {parallel}"
                    );
                    assert_eq!(
                        got,
                        again.iter().map(|x| x.bits()).collect::<Vec<_>>(),
                        "not deterministic: {ctx}"
                    );
                    if is_dot(level, &a, &b) {
                        for (e, &o) in out.iter().enumerate() {
                            let (i, j) = (e / n, e % n);
                            let c0 = if accumulate { c0_at(e).f() } else { 0.0 };
                            let terms = (0..k).map(|p| a.at(i, p).f() * b.at(p, j).f());
                            let (exact, mag) =
                                terms.fold((c0, c0.abs()), |(s, t), x| (s + x, t + x.abs()));
                            assert!(
                                (o.f() - exact).abs() <= T::TOL * mag,
                                "{ctx} ({i},{j}): {} vs {exact}",
                                o.f()
                            );
                        }
                        // the same bits serial and split, at every FMA level
                        if fused {
                            match &first {
                                None => first = Some(got),
                                Some(f) => assert_eq!(f, &got, "levels differ: {ctx}"),
                            }
                        }
                    } else {
                        assert!(got == want, "not the exact chain: {ctx}");
                    }
                }
            }
        }
    }

    #[test]
    fn float_gemm_is_the_exact_chain_at_every_level_and_split() {
        check_levels::<f32>();
        check_levels::<f64>();
    }

    #[test]
    fn long_dot_products_are_split_alike_at_every_level_and_thread_count() {
        // 1 x k by k x 1 past two pieces: the same bits serial and split, within the
        // dot tolerance of the exact sum, from zero and from C's old value
        use crate::backend::cpu::vmath::supported;
        fn go<T: Chain>() {
            for k in [2 * 65536, 3 * 65536 + 123] {
                let ((ad, ap), (bd, bp)) = (build::<T>(1, k, 0, 7), build::<T>(k, 1, 0, 8));
                let (a, b) = (view(&ad, 1, k, ap), view(&bd, k, 1, bp));
                let exact: f64 = (0..k).map(|q| a.at(0, q).f() * b.at(q, 0).f()).sum();
                let mag: f64 = (0..k)
                    .map(|q| (a.at(0, q).f() * b.at(q, 0).f()).abs())
                    .sum();
                let mut seen = None;
                for level in supported() {
                    for parallel in [false, true] {
                        let mut z = vec![<T as GemmElem>::ZERO; 1];
                        float_gemm(level, a, b, as_uninit(&mut z), Start::Zero, parallel);
                        let got = z[0];
                        assert!(
                            (got.f() - exact).abs() <= 2.0 * T::TOL * mag,
                            "{k} {level:?}"
                        );
                        let mut acc = z.clone();
                        float_gemm(level, a, b, as_uninit(&mut acc), Start::Out, parallel);
                        assert!((acc[0].f() - 2.0 * exact).abs() <= 4.0 * T::TOL * mag);
                        // a level's bits are its own (FMA or not), the split's are fixed
                        let key = (level, got.bits(), acc[0].bits());
                        if let Some((l, g, c)) = seen
                            && l == level
                        {
                            assert_eq!((g, c), (key.1, key.2), "serial and split differ");
                        }
                        seen = Some(key);
                    }
                }
            }
        }
        go::<f32>();
        go::<f64>();
    }

    #[test]
    fn float_gemm_at_splitting_sizes_matches_the_chain() {
        // products above the split threshold, every layout pair, both element types
        fn go<T: Chain>() {
            for (m, k, n) in [(256, 300, 257), (131, 200, 600), (600, 70, 9), (9, 64, 700)] {
                for (la, lb) in [(0, 0), (0, 1), (1, 0), (1, 1), (3, 3)] {
                    let ((ad, ap), (bd, bp)) = (build::<T>(m, k, la, 3), build::<T>(k, n, lb, 4));
                    let (a, b) = (view(&ad, m, k, ap), view(&bd, k, n, bp));
                    let level = gemm::level();
                    let fused = level != crate::backend::cpu::vmath::Level::Baseline;
                    let (mut s, mut p) = (
                        vec![<T as GemmElem>::ZERO; m * n],
                        vec![<T as GemmElem>::ZERO; m * n],
                    );
                    float_gemm(level, a, b, as_uninit(&mut s), Start::Zero, false);
                    float_gemm(level, a, b, as_uninit(&mut p), Start::Zero, true);
                    let dot = is_dot(level, &a, &b);
                    for (e, (x, y)) in s.iter().zip(&p).enumerate() {
                        let (i, j) = (e / n, e % n);
                        let c = (0..k).fold(<T as GemmElem>::ZERO, |c, q| {
                            T::step(a.at(i, q), b.at(q, j), c, fused)
                        });
                        let ctx = format!("{m}x{k}x{n} {la}{lb} ({i},{j})");
                        assert!(x.bits() == y.bits(), "serial and split differ: {ctx}");
                        if dot {
                            let mag: f64 = (0..k)
                                .map(|q| (a.at(i, q).f() * b.at(q, j).f()).abs())
                                .sum();
                            assert!((x.f() - c.f()).abs() <= 2.0 * T::TOL * mag, "{ctx}");
                        } else {
                            assert!(x.bits() == c.bits(), "not the exact chain: {ctx}");
                        }
                    }
                }
            }
        }
        go::<f32>();
        go::<f64>();
    }

    #[test]
    fn thin_products_along_k_have_the_bits_of_their_matrix_vector_products() {
        // A row-major, B transposed (both contiguous along k: x·Wᵀ), one side thin: each
        // element has the bits of its row in A times its column of B alone (a
        // matrix-vector product), at every level and thread count, with a bias; k with
        // and without a tail, odd counts for the register blocks. (Thin sides up to 12:
        // from 13 to 32 AVX2 runs the tiles, AVX-512 `dot`.)
        use crate::backend::cpu::vmath::{Level, supported};
        fn go<T: Chain>() {
            let shapes = [
                (300, 129, 7),
                (70, 64, 12),
                (5, 300, 200),
                (11, 97, 33),
                (12, 93, 40),
                (40, 784, 6),
                (10, 200, 45),
                (3, 1000, 9),
            ];
            for (m, k, n) in shapes {
                let ((ad, ap), (bd, bp)) = (build::<T>(m, k, 0, 5), build::<T>(k, n, 1, 6));
                let (a, b) = (view(&ad, m, k, ap), view(&bd, k, n, bp));
                for &level in &supported() {
                    assert!(
                        is_dot(level, &a, &b),
                        "{m}x{k}x{n} should run as dot products at {level:?}"
                    );
                }
                let bias: Vec<T> = (0..n).map(|j| T::sample(40 + j as u64)).collect();
                let bv = view(&bias, m, n, [0, 0, 1]);
                let mut first: Option<Vec<u64>> = None;
                for &level in &supported() {
                    for parallel in [false, true] {
                        let mut c = vec![<T as GemmElem>::ZERO; m * n];
                        float_gemm(level, a, b, as_uninit(&mut c), Start::Matrix(bv), parallel);
                        let got: Vec<u64> = c.iter().map(|x| x.bits()).collect();
                        let ctx = format!("{m}x{k}x{n} {level:?} par {parallel}");
                        // A times each column of B alone (a matrix-vector product)
                        let mvs: Vec<Vec<T>> = (0..n)
                            .map(|j| {
                                let mut mv = vec![<T as GemmElem>::ZERO; m];
                                let vb = MatView {
                                    cols: 1,
                                    offset: bp[0] + j * bp[2],
                                    ..b
                                };
                                let bj = view(&bias[j..], m, 1, [0, 0, 0]);
                                float_gemm(
                                    level,
                                    a,
                                    vb,
                                    as_uninit(&mut mv),
                                    Start::Matrix(bj),
                                    false,
                                );
                                mv
                            })
                            .collect();
                        for (e, &x) in c.iter().enumerate() {
                            let (i, j) = (e / n, e % n);
                            assert_eq!(x.bits(), mvs[j][i].bits(), "{ctx} ({i},{j})");
                            let terms = (0..k).map(|p| a.at(i, p).f() * b.at(p, j).f());
                            let c0 = bias[j].f();
                            let (exact, mag) =
                                terms.fold((c0, c0.abs()), |(s, t), x| (s + x, t + x.abs()));
                            assert!((x.f() - exact).abs() <= T::TOL * mag, "{ctx} ({i},{j})");
                        }
                        if level != Level::Baseline {
                            match &first {
                                None => first = Some(got),
                                Some(f) => assert_eq!(f, &got, "levels differ: {ctx}"),
                            }
                        }
                    }
                }
            }
        }
        go::<f32>();
        go::<f64>();
    }

    /// Products with an inner dimension of 1 (`outer_products`, per-sample weight
    /// gradients) have the bits of the GEMM chain from zero, element by element (zeros of
    /// either sign, strided and broadcast operands, batched or not, split or not).
    #[test]
    fn outer_products_have_the_bits_of_the_gemm_chain() {
        trait Raw {
            fn raw(self) -> u64;
        }
        impl Raw for f32 {
            fn raw(self) -> u64 {
                self.to_bits().into()
            }
        }
        impl Raw for f64 {
            fn raw(self) -> u64 {
                self.to_bits()
            }
        }
        impl Raw for i64 {
            fn raw(self) -> u64 {
                self as u64
            }
        }
        fn go<T: TestElem + Element + Raw>(special: &[T]) {
            let layout = |shape: &[usize], strides: &[usize], offset: usize| Layout {
                shape: crate::shape::copy(shape),
                strides: crate::shape::copy(strides),
                offset,
            };
            // (batch, m, n, b's column stride, b's batch stride, a's row stride)
            let cases = [
                (None, 5, 7, 1, 0, 1),
                (Some(3), 4, 9, 1, 9, 1),
                (Some(3), 4, 9, 2, 20, 1),
                (Some(2), 6, 5, 1, 0, 3),
                (Some(64), 128, 300, 1, 300, 1),
                (Some(1), 2049, 1030, 1, 1030, 1),
            ];
            for (batch, m, n, bcs, bbs, ars) in cases {
                let nb = batch.unwrap_or(1);
                let alen = 1 + nb * m * ars;
                let blen = 2 + nb.max(1) * (n * bcs + bbs);
                let mut ad: Vec<T> = (0..alen as u64).map(|i| T::sample(i * 7)).collect();
                let bd: Vec<T> = (0..blen as u64).map(|i| T::sample(i * 13 + 5)).collect();
                for (slot, &v) in ad.iter_mut().skip(1).zip(special) {
                    *slot = v;
                }
                let (la, lb) = match batch {
                    Some(b) => (
                        layout(&[b, m, 1], &[m * ars, ars, 1], 1),
                        layout(&[b, 1, n], &[bbs, n * bcs, bcs], 2),
                    ),
                    None => (
                        layout(&[m, 1], &[ars, 1], 1),
                        layout(&[1, n], &[n * bcs, bcs], 2),
                    ),
                };
                let (ab, bb) = (T::into_buffer(ad.clone()), T::into_buffer(bd.clone()));
                let got = bmm(&ab, &la, &bb, &lb);
                let got = T::slice(&got);
                assert_eq!(got.len(), nb * m * n);
                // both ways of storing (plain, and non-temporal as for outputs larger
                // than the last-level cache) give the same bits
                for stream in [false, true] {
                    let direct = outer_products(&ad, &la, &bd, &lb, nb, nb * m * n, stream);
                    assert!(
                        direct.iter().zip(got).all(|(x, y)| x.raw() == y.raw()),
                        "stream {stream}: {batch:?} x {m} x {n}"
                    );
                }
                for p in 0..nb {
                    let (oa, ob) = if batch.is_some() {
                        (p * la.strides[0], p * lb.strides[0])
                    } else {
                        (0, 0)
                    };
                    let mut want = vec![T::sample(1); m * n];
                    gemm(
                        view_of(&ad, &la, oa),
                        view_of(&bd, &lb, ob),
                        &mut want,
                        false,
                    );
                    let g = &got[p * m * n..(p + 1) * m * n];
                    assert!(
                        g.iter().zip(&want).all(|(x, y)| x.raw() == y.raw()),
                        "batch {p} of {batch:?} x {m} x {n}"
                    );
                }
            }
        }
        go::<f32>(&[-0.0, 0.0, -3.5, f32::MIN_POSITIVE, -1e30]);
        go::<f64>(&[-0.0, 0.0, -3.5, f64::MIN_POSITIVE, -1e300]);
        go::<i64>(&[i64::MIN, -1, 0, i64::MAX, 3]);
    }

    /// Many products too small to split (a batch of 64 of 16 x 40 x 32, 2^20
    /// multiply-adds in all) run whole products per thread, with each product's bits.
    #[test]
    fn small_batched_products_split_by_product_alike() {
        fn go<T: TestElem + Element + PartialEq + std::fmt::Debug>() {
            let (b, m, k, n) = (64, 16, 40, 32);
            let ad: Vec<T> = (0..(b * m * k) as u64).map(|i| T::sample(i * 3)).collect();
            // B transposed in each product
            let bd: Vec<T> = (0..(b * k * n) as u64)
                .map(|i| T::sample(i * 11 + 1))
                .collect();
            let la = Layout::contiguous(&[b, m, k]);
            let lb = Layout {
                shape: crate::shape::copy(&[b, k, n]),
                strides: crate::shape::copy(&[k * n, 1, k]),
                offset: 0,
            };
            let (ab, bb) = (T::into_buffer(ad.clone()), T::into_buffer(bd.clone()));
            let got = bmm(&ab, &la, &bb, &lb);
            let got = T::slice(&got);
            for p in 0..b {
                let mut want = vec![T::sample(1); m * n];
                gemm(
                    view_of(&ad, &la, p * m * k),
                    view_of(&bd, &lb, p * k * n),
                    &mut want,
                    false,
                );
                assert_eq!(&got[p * m * n..(p + 1) * m * n], &want[..], "product {p}");
            }
        }
        go::<f32>();
        go::<f64>();
        go::<i64>();
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
