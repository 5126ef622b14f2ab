//! Batched matrix factorizations and solves (torch.linalg's LU, Cholesky and triangular
//! solves) over buffers: each matrix of the batch (the leading dims) is read row-major
//! into float64, factored or solved by `crate::backend::linalg`, and written back in the
//! operand's dtype (the Householder family reads and writes each matrix column by column,
//! as its kernels store them). Computing in float64 makes the float32 results at least as accurate
//! as LAPACK's single precision (they are not its bits). Batches run on the pool when
//! there is enough work; each matrix is computed alone, so the split changes no bit.

use super::reduce::par;
use super::strided;
use crate::backend::linalg::{
    Real, cholesky, expm, householder, ldl, lu, map_batch, potri, triangular,
};
use crate::layout::Layout;
use crate::storage::Buffer;

/// The sum of the diagonal of the matrix `lx` over `x`, in order, in float64 for floats
/// (rounded to x's dtype at the end) and wrapping int64 otherwise: torch's CPU `trace`
/// (its accumulate type, one element at a time), so the bits are its. A bool matrix is
/// refused by the op layer.
pub fn trace(x: &Buffer, lx: &Layout) -> Buffer {
    let n = lx.shape[0].min(lx.shape[1]);
    let step = lx.strides[0] + lx.strides[1];
    let at = |i: usize| lx.offset + i * step;
    match x {
        Buffer::F32(v) => {
            let s: f64 = (0..n).map(|i| f64::from(v[at(i)])).fold(0.0, |a, b| a + b);
            Buffer::F32(vec![s as f32].into())
        }
        Buffer::F64(v) => {
            Buffer::F64(vec![(0..n).map(|i| v[at(i)]).fold(0.0, |a, b| a + b)].into())
        }
        Buffer::I64(v) => {
            Buffer::I64(vec![(0..n).map(|i| v[at(i)]).fold(0i64, i64::wrapping_add)].into())
        }
        Buffer::Bool(v) => Buffer::I64(vec![(0..n).filter(|&i| v[at(i)]).count() as i64].into()),
        // (the CPU's kernels see host buffers only)
        Buffer::Cuda(_) => Buffer::I64(vec![0].into()),
    }
}

/// The elements of `layout` over `buf`, row-major, as float64 (floats only: the op layer
/// refuses other dtypes before a kernel runs).
fn read_f64(buf: &Buffer, layout: &Layout) -> Vec<f64> {
    match buf {
        Buffer::F64(v) => strided::to_vec(v, layout),
        Buffer::F32(v) => strided::to_vec(v, layout)
            .into_iter()
            .map(f64::from)
            .collect(),
        Buffer::I64(v) => strided::to_vec(v, layout)
            .into_iter()
            .map(|x| x as f64)
            .collect(),
        Buffer::Bool(v) => strided::to_vec(v, layout)
            .into_iter()
            .map(|x| f64::from(u8::from(x)))
            .collect(),
        Buffer::Cuda(_) => Vec::new(),
    }
}

/// `v` in the float dtype of `like` (float32: rounded to nearest).
fn write_like(like: &Buffer, v: Vec<f64>) -> Buffer {
    match like {
        Buffer::F32(_) => Buffer::F32(v.into_iter().map(|x| x as f32).collect::<Vec<_>>().into()),
        _ => Buffer::F64(v.into()),
    }
}

/// The matrix dims `(rows, cols)` of a layout of rank ≥ 2 and the count of matrices.
fn dims(layout: &Layout) -> (usize, usize, usize) {
    let r = layout.ndim();
    let (m, n) = (layout.shape[r - 2], layout.shape[r - 1]);
    let batch = layout.shape[..r - 2].iter().product();
    (batch, m, n)
}

/// Runs `f(b, outs)` for every matrix `b < batch`, where `outs[i]` is matrix b's slice
/// (of `sizes[i]` elements) of output i; on the pool when the batch holds `flops` of
/// work in all above the pool's threshold.
fn per_matrix<const N: usize>(
    batch: usize,
    sizes: [usize; N],
    flops: usize,
    f: impl Fn(usize, &mut [&mut [f64]; N]) + Sync,
) -> [Vec<f64>; N] {
    let parallel = batch > 1 && par::parallel(flops);
    let mut outs: [Vec<f64>; N] = std::array::from_fn(|i| vec![0.0; batch * sizes[i]]);
    let shared: [Shared; N] = std::array::from_fn(|i| Shared(outs[i].as_mut_ptr()));
    par::tasks(batch, parallel, &|b| {
        // SAFETY: matrix b's ranges of the outputs are disjoint from every other
        // matrix's, and the vectors outlive the tasks (joined before `tasks` returns)
        let mut slices: [&mut [f64]; N] = std::array::from_fn(|i| unsafe {
            std::slice::from_raw_parts_mut(shared[i].0.add(b * sizes[i]), sizes[i])
        });
        f(b, &mut slices);
    });
    outs
}

/// A raw output pointer shared by the tasks of [`per_matrix`] (each writes its own range).
#[derive(Clone, Copy)]
struct Shared(*mut f64);
// SAFETY: see `per_matrix`: the tasks write disjoint ranges
unsafe impl Sync for Shared {}
unsafe impl Send for Shared {}

fn ints(v: Vec<f64>) -> Buffer {
    Buffer::I64(v.into_iter().map(|x| x as i64).collect::<Vec<_>>().into())
}

/// `getrf` of every matrix of `x` (`(*, m, n)`): the packed factors (x's dtype, `(*, m,
/// n)`), the 1-based pivots (int64, `(*, min(m, n))`) and LAPACK's `info` (int64, `(*)`).
pub fn lu_factor(x: &Buffer, lx: &Layout, pivot: bool) -> (Buffer, Buffer, Buffer) {
    let (batch, m, n) = dims(lx);
    let k = m.min(n);
    let a = read_f64(x, lx);
    let [f, p, i] = per_matrix(batch, [m * n, k, 1], batch * m * n * k, |b, out| {
        let [f, p, i] = out;
        f.copy_from_slice(&a[b * m * n..(b + 1) * m * n]);
        let mut piv = vec![0i64; k];
        i[0] = lu::factor(f, m, n, &mut piv, pivot) as f64;
        p.iter_mut().zip(&piv).for_each(|(d, &s)| *d = s as f64);
    });
    (write_like(x, f), ints(p), ints(i))
}

/// From packed square factors and their pivots (as [`lu_factor`] gives them, of one
/// batch shape): each matrix's determinant, its sign and log |det| (torch's slogdet:
/// sign 0 and -inf when singular), in the factors' dtype, each `(*)`.
pub fn lu_det(
    lu_buf: &Buffer,
    llu: &Layout,
    piv: &Buffer,
    lp: &Layout,
) -> (Buffer, Buffer, Buffer) {
    let (batch, n, _) = dims(llu);
    let f = read_f64(lu_buf, llu);
    let p: Vec<i64> = read_f64(piv, lp).into_iter().map(|x| x as i64).collect();
    let [d, s, l] = per_matrix(batch, [1, 1, 1], 0, |b, out| {
        let (fb, pb) = (&f[b * n * n..(b + 1) * n * n], &p[b * n..(b + 1) * n]);
        out[0][0] = lu::det(fb, pb, n);
        let (sign, log) = lu::slogdet(fb, pb, n);
        out[1][0] = sign;
        out[2][0] = log;
    });
    (
        write_like(lu_buf, d),
        write_like(lu_buf, s),
        write_like(lu_buf, l),
    )
}

/// `A X = B` (`Aᵀ X = B` with `transpose`) for every matrix, from A's packed factors
/// (`(*, n, n)`) and pivots (`(*, n)`), `B` `(*, n, k)`, all of one batch shape (the op
/// layer broadcasts); the result is `(*, n, k)` in B's dtype.
pub fn lu_solve(
    lu_buf: &Buffer,
    llu: &Layout,
    piv: &Buffer,
    lp: &Layout,
    b: &Buffer,
    lb: &Layout,
    transpose: bool,
) -> Buffer {
    let (batch, n, _) = dims(llu);
    let (_, _, k) = dims(lb);
    let f = read_f64(lu_buf, llu);
    let p: Vec<i64> = read_f64(piv, lp).into_iter().map(|x| x as i64).collect();
    let rhs = read_f64(b, lb);
    let [x] = per_matrix(batch, [n * k], batch * n * n * k, |bi, out| {
        out[0].copy_from_slice(&rhs[bi * n * k..(bi + 1) * n * k]);
        lu::solve(
            &f[bi * n * n..(bi + 1) * n * n],
            &p[bi * n..(bi + 1) * n],
            n,
            out[0],
            k,
            transpose,
        );
    });
    write_like(b, x)
}

/// `op(A) X = B` for every triangular `A` (`(*, n, n)`: its `upper` or lower triangle,
/// the diagonal taken as ones with `unit`; `op` transposes with `transpose`) and `B`
/// (`(*, n, k)`, of A's batch shape): `(*, n, k)` in B's dtype.
pub fn solve_triangular(
    a: &Buffer,
    la: &Layout,
    b: &Buffer,
    lb: &Layout,
    upper: bool,
    unit: bool,
    transpose: bool,
) -> Buffer {
    let (batch, n, _) = dims(la);
    let (_, _, k) = dims(lb);
    let t = read_f64(a, la);
    let rhs = read_f64(b, lb);
    let [x] = per_matrix(batch, [n * k], batch * n * n * k / 2, |bi, out| {
        out[0].copy_from_slice(&rhs[bi * n * k..(bi + 1) * n * k]);
        triangular::solve_in_place(
            &t[bi * n * n..(bi + 1) * n * n],
            n,
            out[0],
            k,
            upper,
            unit,
            transpose,
        );
    });
    write_like(b, x)
}

/// The lower Cholesky factor of every matrix of `x` (`(*, n, n)`, its lower triangle
/// read) in x's dtype, and LAPACK's `info` (int64, `(*)`).
pub fn cholesky(x: &Buffer, lx: &Layout) -> (Buffer, Buffer) {
    let (batch, n, _) = dims(lx);
    if let Buffer::F32(v) = x {
        // float32 in float32, as LAPACK's spotrf (torch's): twice the GEMM's lanes
        let a = strided::to_vec(v, lx);
        let per = map_batch(batch, n * n * n / 3, |b| {
            let mut l = a[b * n * n..(b + 1) * n * n].to_vec();
            let info = cholesky::factor_lower(&mut l, n);
            (l, info as f64)
        });
        let mut l = Vec::with_capacity(batch * n * n);
        let mut info = Vec::with_capacity(batch);
        for (m, i) in per {
            l.extend_from_slice(&m);
            info.push(i);
        }
        return (Buffer::F32(l.into()), ints(info));
    }
    let a = read_f64(x, lx);
    let [l, i] = per_matrix(batch, [n * n, 1], batch * n * n * n / 3, |b, out| {
        let [l, i] = out;
        l.copy_from_slice(&a[b * n * n..(b + 1) * n * n]);
        i[0] = cholesky::factor_lower(l, n) as f64;
    });
    (write_like(x, l), ints(i))
}

/// `(L Lᵀ)⁻¹` of every Cholesky factor of `x` (`(*, n, n)`; its lower triangle, or with
/// `upper` its upper one as `Lᵀ`) in x's dtype, and LAPACK's `info` per matrix (int64:
/// the 1-based index of the first zero on the diagonal, where the inverse is zeros).
pub fn cholesky_inverse(x: &Buffer, lx: &Layout, upper: bool) -> (Buffer, Buffer) {
    /// Every matrix's inverse (in `a`'s precision: float32 as LAPACK's spotri) and info.
    fn run<T: Real>(a: &[T], batch: usize, n: usize) -> (Vec<T>, Vec<f64>) {
        let per = map_batch(batch, n * n * n * 2 / 3, |b| {
            potri::inverse_lower(&a[b * n * n..(b + 1) * n * n], n, true)
        });
        let mut inv = Vec::with_capacity(batch * n * n);
        let mut info = Vec::with_capacity(batch);
        for (m, i) in per {
            inv.extend_from_slice(&m);
            info.push(i as f64);
        }
        (inv, info)
    }
    let (batch, n, _) = dims(lx);
    let l = if upper { transposed(lx) } else { lx.clone() };
    match x {
        Buffer::F32(v) => {
            let (inv, info) = run(&strided::to_vec(v, &l), batch, n);
            (Buffer::F32(inv.into()), ints(info))
        }
        _ => {
            let (inv, info) = run(&read_f64(x, &l), batch, n);
            (Buffer::F64(inv.into()), ints(info))
        }
    }
}

/// The matrix exponential of every matrix of `x` (`(*, n, n)`) in x's dtype.
pub fn matrix_exp(x: &Buffer, lx: &Layout) -> Buffer {
    let (batch, n, _) = dims(lx);
    let a = read_f64(x, lx);
    let [e] = per_matrix(batch, [n * n], batch * n * n * n * 8, |b, out| {
        out[0].copy_from_slice(&expm::expm(&a[b * n * n..(b + 1) * n * n], n));
    });
    write_like(x, e)
}

/// The layout of the matrices of `layout` transposed: read row-major, each matrix comes
/// out column-major.
fn transposed(layout: &Layout) -> Layout {
    let mut t = layout.clone();
    let r = t.ndim();
    t.shape.swap(r - 2, r - 1);
    t.strides.swap(r - 2, r - 1);
    t
}

/// The first `cols` columns of every matrix of `layout`.
fn first_cols(layout: &Layout, cols: usize) -> Layout {
    let mut t = layout.clone();
    let r = t.ndim();
    t.shape[r - 1] = cols;
    t
}

/// The column-major `m × n` matrix `src` written row-major into `dst`.
fn to_row_major(src: &[f64], m: usize, n: usize, dst: &mut [f64]) {
    for i in 0..m {
        for j in 0..n {
            dst[i * n + j] = src[j * m + i];
        }
    }
}

/// `geqrf` of every matrix of `x` (`(*, m, n)`): the packed factors (R on and above the
/// diagonal, the Householder vectors below it; x's dtype, `(*, m, n)`) and `tau`
/// (`(*, min(m, n))`), LAPACK's conventions.
pub fn geqrf(x: &Buffer, lx: &Layout) -> (Buffer, Buffer) {
    let (batch, m, n) = dims(lx);
    let k = m.min(n);
    let a = read_f64(x, &transposed(lx));
    let flops = batch * m * n * k * 2;
    let [f, t] = per_matrix(batch, [m * n, k], flops, |b, out| {
        let [f, t] = out;
        let mut w = a[b * m * n..(b + 1) * m * n].to_vec();
        householder::geqrf(&mut w, m, n, t, true);
        to_row_major(&w, m, n, f);
    });
    (write_like(x, f), write_like(x, t))
}

/// `orgqr` (torch's `householder_product`) of every matrix of `a` (`(*, m, n)`, m ≥ n)
/// with the factors `tau` (`(*, k)`, k ≤ n, of a's batch shape): the first n columns of
/// the product of the k reflectors, `(*, m, n)` in a's dtype.
pub fn householder_product(a: &Buffer, la: &Layout, tau: &Buffer, lt: &Layout) -> Buffer {
    let (batch, m, n) = dims(la);
    let k = lt.shape[lt.ndim() - 1];
    let v = read_f64(a, &transposed(la));
    let ts = read_f64(tau, lt);
    let [q] = per_matrix(batch, [m * n], batch * m * n * k * 2, |b, out| {
        let mut w = v[b * m * n..(b + 1) * m * n].to_vec();
        householder::orgqr(&mut w, m, n, &ts[b * k..(b + 1) * k], true);
        to_row_major(&w, m, n, out[0]);
    });
    write_like(a, q)
}

/// `ormqr` of every matrix: Q·C, Qᵀ·C (`transpose`), or with `left == false` C·Q, C·Qᵀ,
/// where Q (`mq × mq`, mq = a's rows) is the product of the `k` reflectors packed in
/// the first k columns of `a` (`(*, mq, ·)`) with the factors `tau` (`(*, k)`), and C is
/// `c` (`(*, mq, nc)`, or `(*, mc, mq)` from the right), all of one batch shape; the
/// result has c's shape and dtype.
#[allow(clippy::too_many_arguments)]
pub fn ormqr(
    a: &Buffer,
    la: &Layout,
    tau: &Buffer,
    lt: &Layout,
    c: &Buffer,
    lc: &Layout,
    left: bool,
    transpose: bool,
) -> Buffer {
    let (batch, mq, _) = dims(la);
    let k = lt.shape[lt.ndim() - 1];
    let (_, cm, cn) = dims(lc);
    let v = read_f64(a, &transposed(&first_cols(la, k)));
    let ts = read_f64(tau, lt);
    // C·Q = (Qᵀ·Cᵀ)ᵀ: from the right, the kernel works on Cᵀ column-major, which is C
    // row-major
    let (x, trans) = if left {
        (read_f64(c, &transposed(lc)), transpose)
    } else {
        (read_f64(c, lc), !transpose)
    };
    let nc = if left { cn } else { cm };
    let size = cm * cn;
    let [out] = per_matrix(batch, [size], batch * mq * nc * k * 4, |b, out| {
        let mut vb = v[b * mq * k..(b + 1) * mq * k].to_vec();
        let tb = &ts[b * k..(b + 1) * k];
        if left {
            let mut w = x[b * size..(b + 1) * size].to_vec();
            householder::ormqr_left(&mut vb, mq, tb, &mut w, nc, trans, true);
            to_row_major(&w, cm, cn, out[0]);
        } else {
            out[0].copy_from_slice(&x[b * size..(b + 1) * size]);
            householder::ormqr_left(&mut vb, mq, tb, out[0], nc, trans, true);
        }
    });
    write_like(c, out)
}

/// The Bunch–Kaufman factorization (`sytrf`, lower) of every matrix of `x` (`(*, n, n)`,
/// its lower triangle read): LD (x's dtype, the strict upper triangle zero), the 1-based
/// pivots (int64 `(*, n)`, negative for a 2×2 block) and `info` (int64 `(*)`).
pub fn ldl_factor(x: &Buffer, lx: &Layout) -> (Buffer, Buffer, Buffer) {
    let (batch, n, _) = dims(lx);
    let a = read_f64(x, lx);
    let [f, p, i] = per_matrix(batch, [n * n, n, 1], batch * n * n * n / 3, |b, out| {
        let [f, p, i] = out;
        f.copy_from_slice(&a[b * n * n..(b + 1) * n * n]);
        let mut piv = vec![0i64; n];
        i[0] = ldl::sytf2_lower(f, n, &mut piv) as f64;
        for r in 0..n {
            f[r * n + r + 1..(r + 1) * n].fill(0.0);
        }
        p.iter_mut().zip(&piv).for_each(|(d, &s)| *d = s as f64);
    });
    (write_like(x, f), ints(p), ints(i))
}

/// `A·X = B` from `ldl_factor`'s LD (`(*, n, n)`) and pivots (`(*, n)`, int64) for B
/// (`(*, n, k)`), all of one batch shape (`sytrs`, lower): X in B's dtype, or None when
/// the pivots of a matrix are out of range.
pub fn ldl_solve(
    ld: &Buffer,
    lld: &Layout,
    piv: &Buffer,
    lp: &Layout,
    b: &Buffer,
    lb: &Layout,
) -> Option<Buffer> {
    let (batch, n, _) = dims(lld);
    let (_, _, k) = dims(lb);
    let f = read_f64(ld, lld);
    let p: Vec<i64> = match piv {
        Buffer::I64(v) => strided::to_vec(v, lp),
        _ => read_f64(piv, lp).into_iter().map(|x| x as i64).collect(),
    };
    let rhs = read_f64(b, lb);
    let bad = std::sync::atomic::AtomicBool::new(false);
    let [x] = per_matrix(batch, [n * k], batch * n * n * k * 2, |bi, out| {
        out[0].copy_from_slice(&rhs[bi * n * k..(bi + 1) * n * k]);
        let solved = ldl::sytrs_lower(
            &f[bi * n * n..(bi + 1) * n * n],
            n,
            &p[bi * n..(bi + 1) * n],
            out[0],
            k,
        );
        if solved.is_err() {
            bad.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    });
    (!bad.into_inner()).then(|| write_like(b, x))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// trace adds the diagonal in order in float64 (rounded once for float32), over any
    /// strides and offset, of tall and wide matrices; integers wrap, bools count.
    #[test]
    fn trace_adds_the_diagonal_in_order_in_float64() {
        let vals: Vec<f32> = (0..400u32)
            .map(|i| ((i.wrapping_mul(2_654_435_761) >> 8) as f32 / 1e5) - 80.0)
            .collect();
        for (shape, strides, offset) in [
            ([12, 7], [7, 1], 0),
            ([7, 12], [1, 7], 3),
            ([10, 10], [20, 2], 5),
            ([0, 4], [4, 1], 0),
        ] {
            let l = Layout {
                shape: crate::shape::copy(&shape),
                strides: crate::shape::copy(&strides),
                offset,
            };
            let n = shape[0].min(shape[1]);
            let diag = |i: usize| offset + i * (strides[0] + strides[1]);
            let want: f64 = (0..n)
                .map(|i| f64::from(vals[diag(i)]))
                .fold(0.0, |a, b| a + b);
            let Buffer::F32(got) = trace(&Buffer::F32(vals.clone().into()), &l) else {
                panic!("float32 in, float32 out");
            };
            assert_eq!(got[0].to_bits(), (want as f32).to_bits());
            let v64: Vec<f64> = vals.iter().map(|&v| f64::from(v) * 1.1).collect();
            let want: f64 = (0..n).map(|i| v64[diag(i)]).fold(0.0, |a, b| a + b);
            let Buffer::F64(got) = trace(&Buffer::F64(v64.clone().into()), &l) else {
                panic!("float64 in, float64 out");
            };
            assert_eq!(got[0].to_bits(), want.to_bits());
        }
        let l = Layout::contiguous(&[2, 2]);
        let ints = Buffer::I64(vec![i64::MAX, 0, 0, 1].into());
        assert!(matches!(trace(&ints, &l), Buffer::I64(v) if v[0] == i64::MIN));
        let bools = Buffer::Bool(vec![true, false, false, true].into());
        assert!(matches!(trace(&bools, &l), Buffer::I64(v) if v[0] == 2));
    }
}
