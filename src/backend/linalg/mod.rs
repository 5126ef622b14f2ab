//! Dense linear-algebra kernels on row-major float64 matrices: the numerical core of
//! `torch.linalg`'s factorizations and decompositions, with no tensors, layouts or graph
//! (the CPU backend's `linalg` module reads buffers into the LU/Cholesky family and
//! writes the results back in the tensor's dtype; `ops::decomp` builds those ops and their
//! nodes on top; `ops::spectral` runs `eigh`, `svd` and `qr` over a batch).
//!
//! Every routine works on one matrix (a batch is a loop, or the pool, above it), follows
//! LAPACK's conventions where torch exposes them (1-based pivots, `info` the first
//! failing index, geqrf's reflector signs) and never panics or hangs on NaN or infinite
//! input: the loops run a bounded number of steps.
//!
//! They live under `backend/` because they are host kernels: they run on the pool and
//! the CPU GEMM (`backend::cpu::gemm`), and every backend reaches them through the host
//! (the CUDA and replay backends copy the operands there).

pub mod cholesky;
pub mod eigh;
pub mod expm;
pub mod gelsy;
pub mod householder;
pub mod ldl;
pub mod lu;
pub mod potri;
pub mod qr;
pub(crate) mod reflect;
pub mod svd;
pub mod triangular;

/// The element types of the routines that run in the input's own precision (float32
/// as LAPACK's s-routines, as torch's; the rest of this module works in float64):
/// potri, potrf and the triangular solves under them.
pub(crate) trait Real:
    gemm::GemmFloat
    + PartialEq
    + PartialOrd
    + std::fmt::Debug
    + std::ops::Neg<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::SubAssign
    + std::ops::DivAssign
{
    /// 1
    const ONE: Self;
    /// `self * a + b`, rounded once.
    fn fma(self, a: Self, b: Self) -> Self;
    /// The square root.
    fn sqrt(self) -> Self;
    /// `out = D + A·B` on the GEMM (`matmul::gemm_start` for this type).
    fn gemm_start(
        d: crate::backend::cpu::matmul::MatView<'_, Self>,
        a: crate::backend::cpu::matmul::MatView<'_, Self>,
        b: crate::backend::cpu::matmul::MatView<'_, Self>,
        out: &mut [std::mem::MaybeUninit<Self>],
        parallel: bool,
    );
}
macro_rules! real {
    ($t:ty) => {
        impl Real for $t {
            const ONE: Self = 1.0;
            #[inline(always)]
            fn fma(self, a: Self, b: Self) -> Self {
                self.mul_add(a, b)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            fn gemm_start(
                d: crate::backend::cpu::matmul::MatView<'_, Self>,
                a: crate::backend::cpu::matmul::MatView<'_, Self>,
                b: crate::backend::cpu::matmul::MatView<'_, Self>,
                out: &mut [std::mem::MaybeUninit<Self>],
                parallel: bool,
            ) {
                crate::backend::cpu::matmul::gemm_start(d, a, b, out, parallel);
            }
        }
    };
}
real!(f32);
real!(f64);

/// Runs `f` over `count` matrices, on the pool when there is enough work, and returns the
/// results in order. `work` is an estimate of one matrix's flops.
pub(crate) fn map_batch<T: Send>(
    count: usize,
    work: usize,
    f: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    use rayon::prelude::*;
    let big =
        count > 1 && count.saturating_mul(work) >= 1 << 18 && crate::runtime::intra_op_parallel();
    if big {
        crate::runtime::run(|| (0..count).into_par_iter().map(&f).collect())
    } else {
        (0..count).map(f).collect()
    }
}

// ---- products on the project's GEMM -----------------------------------------------------
//
// The blocked factorizations spend nearly all their work in updates `C -= A·B` whose
// blocks live inside the matrix being factored (LU's trailing update reads L21 and U12
// from the same buffer it writes A22 in) or inside the right-hand sides being solved.
// `matmul`'s safe entry points write a contiguous output of their own, so these helpers
// describe the blocks to `gemm::run` directly, after checking that every block lies in
// its buffer and that the written block overlaps nothing that is read. The GEMM only
// adds (`C += A·B`), so a subtraction negates one operand first: in place and back again
// (negation is exact, NaN payloads included), or into a scratch copy.

use crate::backend::cpu::gemm;
use crate::backend::cpu::matmul::{MatView, splits};

/// A block of a row-major matrix of `ld` columns stored in a buffer: `rows × cols`
/// elements from row `row`, column `col`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rect {
    pub row: usize,
    pub col: usize,
    pub rows: usize,
    pub cols: usize,
}

impl Rect {
    /// The block at (`row`, `col`) of `rows × cols`.
    pub(crate) fn new(row: usize, col: usize, rows: usize, cols: usize) -> Rect {
        Rect {
            row,
            col,
            rows,
            cols,
        }
    }

    fn is_empty(&self) -> bool {
        self.rows == 0 || self.cols == 0
    }

    /// Whether every element lies in a buffer of `len` elements, `ld` to a row.
    fn fits(&self, ld: usize, len: usize) -> bool {
        if self.is_empty() {
            return true;
        }
        let end = (self.row + self.rows - 1)
            .checked_mul(ld)
            .and_then(|r| r.checked_add(self.col + self.cols));
        self.col + self.cols <= ld && end.is_some_and(|e| e <= len)
    }

    /// Whether the two blocks share no element (of one matrix: `fits` holds for both).
    fn disjoint(&self, o: &Rect) -> bool {
        self.is_empty()
            || o.is_empty()
            || self.row + self.rows <= o.row
            || o.row + o.rows <= self.row
            || self.col + self.cols <= o.col
            || o.col + o.cols <= self.col
    }
}

/// Negates every element of block `r` of the `ld`-wide row-major `buf`.
fn negate(buf: &mut [f64], ld: usize, r: Rect) {
    for i in r.row..r.row + r.rows {
        buf[i * ld + r.col..i * ld + r.col + r.cols]
            .iter_mut()
            .for_each(|x| *x = -*x);
    }
}

/// `C -= A·B` for blocks of one row-major matrix of `ld` columns in `buf` (LU's trailing
/// update and its triangular solve with L11). `C` must overlap neither `A` nor `B`, and
/// `A` not `B` (real asserts: the raw pointers' soundness depends on them). The smaller
/// of `A` and `B` is negated in place for the product and restored after it, so the
/// buffer ends with only `C` changed. `parallel` lets a product large enough to split
/// (`matmul::splits`) use the pool.
pub(crate) fn gemm_sub_within(
    buf: &mut [f64],
    ld: usize,
    c: Rect,
    a: Rect,
    b: Rect,
    parallel: bool,
) {
    assert!(
        a.rows == c.rows && b.cols == c.cols && a.cols == b.rows,
        "gemm_sub_within: shapes {a:?} · {b:?} into {c:?}"
    );
    let len = buf.len();
    assert!(
        [c, a, b].iter().all(|r| r.fits(ld, len)),
        "gemm_sub_within: a block lies outside the buffer"
    );
    assert!(
        c.disjoint(&a) && c.disjoint(&b) && a.disjoint(&b),
        "gemm_sub_within: overlapping blocks"
    );
    if c.is_empty() || a.cols == 0 {
        return;
    }
    let neg = if a.rows * a.cols <= b.rows * b.cols {
        a
    } else {
        b
    };
    negate(buf, ld, neg);
    let base = buf.as_mut_ptr();
    let at = |r: Rect| r.row * ld + r.col;
    // SAFETY: the three blocks lie in `buf` (checked above), C's elements are distinct
    // (column stride 1, row stride ld ≥ its columns) and overlap neither operand, which
    // are only read; `buf` is borrowed mutably for the whole call, and every pointer is
    // derived from that one borrow.
    unsafe {
        accumulate(
            (c.rows, c.cols, a.cols),
            (base.add(at(a)).cast_const(), ld, 1),
            (base.add(at(b)).cast_const(), ld, 1),
            (base.add(at(c)), ld),
            parallel,
        );
    }
    negate(buf, ld, neg);
}

/// `C += A·B` where `C` is the `a.rows × b.cols` block at the start of `c` with row
/// stride `rsc` (column stride 1), and `A`, `B` are views of other slices (any strides:
/// a transposed triangle reads with a column stride). Panics (caller bug) on shapes that
/// do not match or a block outside its slice.
pub(crate) fn gemm_add_to<T: gemm::GemmFloat>(
    c: &mut [T],
    rsc: usize,
    a: MatView<'_, T>,
    b: MatView<'_, T>,
    parallel: bool,
) {
    let (m, n, k) = (a.rows, b.cols, a.cols);
    assert!(k == b.rows, "gemm_add_to: inner dims {k} and {}", b.rows);
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    assert!(
        view_fits(&a) && view_fits(&b) && rsc >= n && (m - 1) * rsc + n <= c.len(),
        "gemm_add_to: a block lies outside its slice"
    );
    // SAFETY: the views' elements lie in their slices (checked above; shared borrows, so
    // they cannot overlap `c`, borrowed mutably for the call), and C's m × n elements lie
    // in `c` and are distinct (column stride 1, row stride ≥ n).
    unsafe {
        accumulate(
            (m, n, k),
            (a.data[a.offset..].as_ptr(), a.row_stride, a.col_stride),
            (b.data[b.offset..].as_ptr(), b.row_stride, b.col_stride),
            (c.as_mut_ptr(), rsc),
            parallel,
        );
    }
}

/// Whether every element of a non-empty view lies in its slice.
fn view_fits<T>(v: &MatView<'_, T>) -> bool {
    (v.rows - 1)
        .checked_mul(v.row_stride)
        .zip((v.cols - 1).checked_mul(v.col_stride))
        .and_then(|(r, c)| r.checked_add(c)?.checked_add(v.offset))
        .is_some_and(|last| last < v.data.len())
}

/// `C += A·B` on the GEMM for `(m, n, k)`, `A` and `B` as (pointer, row stride, column
/// stride), `C` as (pointer, row stride) with column stride 1; split across the pool
/// when `parallel`, kernels may split and the product is large enough.
///
/// # Safety
/// `gemm::Problem`'s invariant: every element described lies in one live allocation,
/// C's elements are distinct and overlap neither operand, and nothing else accesses C
/// during the call.
unsafe fn accumulate<T: gemm::GemmFloat>(
    (m, n, k): (usize, usize, usize),
    (a, rsa, csa): (*const T, usize, usize),
    (b, rsb, csb): (*const T, usize, usize),
    (c, rsc): (*mut T, usize),
    parallel: bool,
) {
    let pr = gemm::Problem {
        m,
        n,
        k,
        a,
        rsa,
        csa,
        b,
        rsb,
        csb,
        c,
        rsc,
        csc: 1,
        start: gemm::Start::C,
    };
    let split = parallel && splits(m, n, k) && crate::runtime::intra_op_parallel();
    let level = gemm::level().min(crate::backend::cpu::vmath::detected());
    // SAFETY: the caller's; `level` is at most what the CPU runs.
    unsafe { gemm::run(level, pr, split) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(len: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..len)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn gemm_sub_within_subtracts_and_leaves_the_operands() {
        // a (k + rows) × 300 matrix: B at rows 0..k, columns 100..; A at rows k.., columns
        // 0..k; C at rows k.., columns 100.. (60 · 100 · 200 multiply-adds split across
        // the pool, the others do not)
        for &(rows, k, cols) in &[(60, 100, 200), (50, 60, 50), (3, 2, 5), (50, 60, 1)] {
            let (ld, total) = (300, k + rows);
            let orig = sample(total * ld, 1);
            let mut buf = orig.clone();
            let c = Rect::new(k, 100, rows, cols);
            let a = Rect::new(k, 0, rows, k);
            let b = Rect::new(0, 100, k, cols);
            gemm_sub_within(&mut buf, ld, c, a, b, true);
            for i in 0..total {
                for j in 0..ld {
                    let in_c = (k..k + rows).contains(&i) && (100..100 + cols).contains(&j);
                    let want = if in_c {
                        orig[i * ld + j]
                            - (0..k)
                                .map(|p| orig[i * ld + p] * orig[p * ld + j])
                                .sum::<f64>()
                    } else {
                        orig[i * ld + j]
                    };
                    let got = buf[i * ld + j];
                    assert!((got - want).abs() < 1e-12, "({i}, {j})");
                    if !in_c {
                        assert_eq!(got.to_bits(), want.to_bits());
                    }
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "overlapping blocks")]
    fn gemm_sub_within_refuses_overlaps() {
        let mut buf = vec![0.0; 100];
        let r = Rect::new(0, 0, 5, 5);
        gemm_sub_within(
            &mut buf,
            10,
            r,
            Rect::new(4, 4, 5, 5),
            Rect::new(0, 5, 5, 5),
            false,
        );
    }

    #[test]
    #[should_panic(expected = "outside")]
    fn gemm_sub_within_refuses_blocks_outside() {
        let mut buf = vec![0.0; 100];
        let c = Rect::new(5, 5, 5, 6);
        gemm_sub_within(
            &mut buf,
            10,
            c,
            Rect::new(5, 0, 5, 5),
            Rect::new(0, 5, 5, 6),
            false,
        );
    }
}
