//! The binary op table's forward kernels (`ops::table::binary_op_table!`): each row's `f`
//! over two float buffers broadcast to one shape. No op's math is written here.

use super::elementwise::{BinaryOp, PAR_MIN_VMATH, fill_chunks_from, zip};
use super::strided::contiguous;
use super::unary::Float;
use super::vmath::{self, SliceFn2, float32 as v32, float64 as v64};
use crate::backend::BinaryFn;
use crate::layout::Layout;
use crate::storage::{Buffer, Element};

/// A two-input `vmath` slice function over two buffers broadcast to one shape, in fixed
/// chunks on the pool for large outputs (no element's value depends on the split). A
/// broadcast number runs against copies of itself on the stack; other layouts that are
/// not contiguous are gathered first (one pass, against a transcendental per element).
pub(super) fn zip_slices<T: Element>(
    a: &[T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
    f: SliceFn2<T>,
) -> Vec<T> {
    let n = la.numel();
    if n == 0 {
        return Vec::new();
    }
    let number = |l: &Layout| l.strides.iter().all(|&s| s == 0);
    if number(lb) && la.is_contiguous() {
        let (x, c) = (&a[la.offset..la.offset + n], b[lb.offset]);
        return fill_chunks_from(PAR_MIN_VMATH, n, |start, out| {
            vmath::with_number(f, &x[start..start + out.len()], c, false, out)
        });
    }
    if number(la) && lb.is_contiguous() {
        let (c, y) = (a[la.offset], &b[lb.offset..lb.offset + n]);
        return fill_chunks_from(PAR_MIN_VMATH, n, |start, out| {
            vmath::with_number(f, &y[start..start + out.len()], c, true, out)
        });
    }
    let (xa, xb) = (contiguous(a, la), contiguous(b, lb));
    fill_chunks_from(PAR_MIN_VMATH, n, |start, out| {
        let end = start + out.len();
        f(&xa[start..end], &xb[start..end], out)
    })
}

/// The `vmath` kernels of the binary table's rows and of the arithmetic ops that have
/// one, per float dtype (their per-element forms, which the table's `f` and `Num` use,
/// give the same bits).
pub(super) trait Slices2: Sized {
    fn table_fn(op: BinaryFn) -> Option<SliceFn2<Self>>;
    fn arith_fn(op: BinaryOp) -> Option<SliceFn2<Self>>;
}

/// float64 logaddexp2 over slices in blocks: each step of `Float::logaddexp2`
/// (`vmath::float64::logaddexp21`) as one vmath slice kernel over the block (exp2, then
/// log1p), so vectorised and the same bits as the per-element form. (float32 has its
/// own fused kernel, `vmath::float32::logaddexp2`.)
macro_rules! logaddexp2_slices {
    ($name:ident, $t:ty) => {
        fn $name(a: &[$t], b: &[$t], out: &mut [std::mem::MaybeUninit<$t>]) {
            const BLOCK: usize = 512;
            /// An initialised buffer as the destination of a slice kernel.
            fn dst(s: &mut [f64]) -> &mut [std::mem::MaybeUninit<f64>] {
                // SAFETY: MaybeUninit<f64> has f64's layout; the kernel only writes f64s.
                unsafe { &mut *(s as *mut [f64] as *mut [std::mem::MaybeUninit<f64>]) }
            }
            let (mut d, mut e, mut l) = ([0.0f64; BLOCK], [0.0f64; BLOCK], [0.0f64; BLOCK]);
            for ((a, b), out) in a
                .chunks(BLOCK)
                .zip(b.chunks(BLOCK))
                .zip(out.chunks_mut(BLOCK))
            {
                let n = a.len();
                for ((d, &x), &y) in d.iter_mut().zip(a).zip(b) {
                    *d = -(f64::from(x) - f64::from(y)).abs();
                }
                v64::exp2(&d[..n], dst(&mut e[..n]));
                v64::log1p(&e[..n], dst(&mut l[..n]));
                for (((o, &x), &y), &l) in out.iter_mut().zip(a).zip(b).zip(&l[..n]) {
                    o.write(if x.is_infinite() && x == y {
                        x
                    } else {
                        let (p, q) = (f64::from(x), f64::from(y));
                        let m = if p < q { q } else { p };
                        (m + l * std::f64::consts::LOG2_E) as $t
                    });
                }
            }
        }
    };
}
logaddexp2_slices!(logaddexp2_f64, f64);

macro_rules! slices2 {
    ($t:ty, $m:ident, $la2:path, $($extra:ident => $f:ident),*) => {
        impl Slices2 for $t {
            fn table_fn(op: BinaryFn) -> Option<SliceFn2<$t>> {
                Some(match op {
                    BinaryFn::Atan2 => $m::atan2,
                    BinaryFn::Hypot => $m::hypot,
                    BinaryFn::Logaddexp => $m::logaddexp,
                    BinaryFn::Xlogy => $m::xlogy,
                    BinaryFn::Logaddexp2 => $la2,
                    _ => return None,
                })
            }
            fn arith_fn(op: BinaryOp) -> Option<SliceFn2<$t>> {
                Some(match op {
                    BinaryOp::Remainder => $m::remainder,
                    BinaryOp::Fmod => $m::fmod,
                    BinaryOp::FloorDiv => $m::floor_divide,
                    $(BinaryOp::$extra => $m::$f,)*
                    _ => return None,
                })
            }
        }
    };
}
// (float64 pow stays libm's: a vector form within 1 ulp needs ln x to about 2^-70)
slices2!(f32, v32, v32::logaddexp2, Pow => pow);
slices2!(f64, v64, logaddexp2_f64,);

/// `op(a, b)` with a `vmath` kernel for float buffers, where there is one.
pub(super) fn vmath_arith(
    op: BinaryOp,
    a: &Buffer,
    la: &Layout,
    b: &Buffer,
    lb: &Layout,
) -> Option<Buffer> {
    let number = la.numel() > 0 && la.strides.iter().all(|&s| s == 0);
    Some(match (a, b) {
        (Buffer::F32(x), Buffer::F32(y)) if op == BinaryOp::Pow && number && lb.is_contiguous() => {
            Buffer::F32(base_pow_f32(x[la.offset], &y[lb.offset..lb.offset + lb.numel()]).into())
        }
        (Buffer::F32(x), Buffer::F32(y)) => {
            Buffer::F32(zip_slices(x, la, y, lb, f32::arith_fn(op)?).into())
        }
        (Buffer::F64(x), Buffer::F64(y)) => {
            Buffer::F64(zip_slices(x, la, y, lb, f64::arith_fn(op)?).into())
        }
        _ => return None,
    })
}

/// `c^y` for a float32 number c (ln |c| computed once: the bits of `pow1(c, y)`).
pub(super) fn base_pow_f32(c: f32, y: &[f32]) -> Vec<f32> {
    fill_chunks_from(PAR_MIN_VMATH, y.len(), |start, out| {
        v32::powb(c, &y[start..start + out.len()], out)
    })
}

/// `op(x, c)` (or `op(c, x)`) over a float slice and a number in its dtype with a
/// `vmath` kernel, where there is one.
pub(super) fn vmath_scalar<T: Element + Slices2>(
    op: BinaryOp,
    x: &[T],
    c: T,
    first: bool,
) -> Option<Vec<T>> {
    let f = T::arith_fn(op)?;
    Some(fill_chunks_from(PAR_MIN_VMATH, x.len(), |start, out| {
        vmath::with_number(f, &x[start..start + out.len()], c, first, out)
    }))
}

/// `f` of two float buffers whose layouts are already broadcast to the output's shape.
/// (`f` is a function item, not a pointer: inlined into the loop, which then vectorises
/// where `f` does: maximum and minimum, 2.4 -> 0.15 ns an element.)
fn map2<T: Float>(
    a: &Buffer,
    la: &Layout,
    b: &Buffer,
    lb: &Layout,
    f: impl Fn(T, T) -> T + Sync + Send,
) -> Vec<T> {
    zip(T::slice(a), la, T::slice(b), lb, f)
}

/// The integer and bool kernels of an `any` row (other rows compute floats only).
macro_rules! int_kernels {
    ($a:ident, $la:ident, $b:ident, $lb:ident, any(|$ia:ident, $ib:ident| $fi:expr, |$ba:ident, $bb:ident| $fb:expr)) => {
        match $a {
            Buffer::I64(x) => {
                return Buffer::I64(
                    zip(x, $la, i64::slice($b), $lb, |$ia: i64, $ib: i64| $fi).into(),
                );
            }
            Buffer::Bool(x) => {
                return Buffer::Bool(
                    zip(x, $la, bool::slice($b), $lb, |$ba: bool, $bb: bool| $fb).into(),
                );
            }
            _ => {}
        }
    };
    ($a:ident, $la:ident, $b:ident, $lb:ident, $($other:tt)*) => {};
}

macro_rules! kernels {
    ($($name:ident $name_:ident $V:ident $node:literal {
        dtypes: $dt:ident $(($($dtargs:tt)*))?,
        numbers: $num:ident $(($($nodes:literal),*))?,
        inplace: $inplace:ident,
        doc: $doc:literal,
        f: |$a:ident, $b:ident| $f:expr,
        $($rest:tt)*
    })*) => {
        /// The forward kernel of `op` (the op layer has promoted both operands to one
        /// float dtype).
        pub fn binary_fn(op: BinaryFn, a: &Buffer, la: &Layout, b: &Buffer, lb: &Layout) -> Buffer {
            match (a, b) {
                (Buffer::F32(x), Buffer::F32(y)) => {
                    if let Some(f) = f32::table_fn(op) {
                        return Buffer::F32(zip_slices(x, la, y, lb, f).into());
                    }
                }
                (Buffer::F64(x), Buffer::F64(y)) => {
                    if let Some(f) = f64::table_fn(op) {
                        return Buffer::F64(zip_slices(x, la, y, lb, f).into());
                    }
                }
                _ => {}
            }
            match op {
                $(BinaryFn::$V => {
                    fn f<T: Float>($a: T, $b: T) -> T {
                        $f
                    }
                    int_kernels!(a, la, b, lb, $dt $(($($dtargs)*))?);
                    match a {
                        Buffer::F32(_) => Buffer::F32(map2(a, la, b, lb, f::<f32>).into()),
                        Buffer::F64(_) => Buffer::F64(map2(a, la, b, lb, f::<f64>).into()),
                        other => other.clone(),
                    }
                })*
            }
        }
    };
}
crate::ops::table::binary_op_table!(kernels);

/// `clamp(x, lo, hi)` with tensor bounds in one pass: `min(max(x, lo), hi)` with the
/// binary table's maximum and minimum (NaN if either is NaN), the bits of the two passes
/// it replaces, without the intermediate. Float buffers whose three layouts are
/// contiguous and of one size (bounds broadcast to x's shape are not); `None` otherwise.
pub fn clamp_between(
    x: &Buffer,
    lx: &Layout,
    lo: &Buffer,
    llo: &Layout,
    hi: &Buffer,
    lhi: &Layout,
) -> Option<Buffer> {
    fn run<T: Float>(x: &[T], lo: &[T], hi: &[T]) -> Vec<T> {
        super::elementwise::fill_chunks(x.len(), |start, out| {
            let end = start + out.len();
            let (x, lo, hi) = (&x[start..end], &lo[start..end], &hi[start..end]);
            for (((o, &v), &l), &h) in out.iter_mut().zip(x).zip(lo).zip(hi) {
                o.write(v.max_nan(l).min_nan(h));
            }
        })
    }
    let n = lx.numel();
    if [lx, llo, lhi]
        .iter()
        .any(|l| !l.is_contiguous() || l.numel() != n)
    {
        return None;
    }
    let at = |l: &Layout| l.offset..l.offset + n;
    Some(match (x, lo, hi) {
        (Buffer::F32(x), Buffer::F32(lo), Buffer::F32(hi)) => {
            Buffer::F32(run(&x[at(lx)], &lo[at(llo)], &hi[at(lhi)]).into())
        }
        (Buffer::F64(x), Buffer::F64(lo), Buffer::F64(hi)) => {
            Buffer::F64(run(&x[at(lx)], &lo[at(llo)], &hi[at(lhi)]).into())
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamp_between_is_maximum_then_minimum_bit_for_bit() {
        let vals = [
            0.0,
            -0.0,
            1.5,
            -2.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.25,
            3.0,
        ];
        // every (x, lo, hi) triple of the values, lo > hi included, over the parallel
        // threshold so that chunks split it
        let mut x = vec![];
        let (mut lo, mut hi) = (vec![], vec![]);
        while x.len() < (1 << 17) {
            for &a in &vals {
                for &b in &vals {
                    for &c in &vals {
                        x.push(a);
                        lo.push(b);
                        hi.push(c);
                    }
                }
            }
        }
        let l = Layout::contiguous(&[x.len()]);
        for f32_ in [false, true] {
            let buf = |v: &[f64]| {
                if f32_ {
                    Buffer::F32(v.iter().map(|&x| x as f32).collect::<Vec<_>>().into())
                } else {
                    Buffer::F64(v.to_vec().into())
                }
            };
            let (bx, bl, bh) = (buf(&x), buf(&lo), buf(&hi));
            let got = clamp_between(&bx, &l, &bl, &l, &bh, &l).unwrap();
            let two = binary_fn(
                BinaryFn::Minimum,
                &binary_fn(BinaryFn::Maximum, &bx, &l, &bl, &l),
                &l,
                &bh,
                &l,
            );
            let bits = |b: &Buffer| -> Vec<u64> {
                match b {
                    Buffer::F32(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
                    Buffer::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
                    _ => unreachable!(),
                }
            };
            assert_eq!(bits(&got), bits(&two), "float32: {f32_}");
        }
        // strided or broadcast bounds: not this kernel's
        let t = Layout::contiguous(&[2, 2]).transpose(0, 1).unwrap();
        let b4 = Buffer::F32(vec![1.0f32; 4].into());
        let c = Layout::contiguous(&[2, 2]);
        assert!(clamp_between(&b4, &c, &b4, &t, &b4, &c).is_none());
        let i4 = Buffer::I64(vec![1i64; 4].into());
        assert!(clamp_between(&i4, &c, &i4, &c, &i4, &c).is_none());
    }
}

#[cfg(test)]
mod logaddexp2_tests {
    use super::*;
    use std::mem::MaybeUninit;

    /// The slice kernel and the per-element form (strided operands, fused backward) give
    /// the same bits, specials included.
    #[test]
    fn slices_match_the_per_element_form() {
        let mut v: Vec<f64> = (0..3000i32)
            .map(|i| (f64::from(i) * 0.7311).sin() * 10f64.powi(i % 9 - 3))
            .collect();
        v.extend([
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            0.0,
            -0.0,
            1e308,
            -1e308,
        ]);
        let w: Vec<f64> = v.iter().rev().copied().collect();
        let mut out = vec![MaybeUninit::<f64>::uninit(); v.len()];
        logaddexp2_f64(&v, &w, &mut out);
        for ((o, &a), &b) in out.iter().zip(&v).zip(&w) {
            // SAFETY: the kernel wrote every element.
            let o = unsafe { o.assume_init() };
            assert_eq!(
                o.to_bits(),
                Float::logaddexp2(a, b).to_bits(),
                "{a:e} {b:e}"
            );
        }
        let (v, w): (Vec<f32>, Vec<f32>) = (
            v.iter().map(|&x| x as f32).collect(),
            w.iter().map(|&x| x as f32).collect(),
        );
        let mut out = vec![MaybeUninit::<f32>::uninit(); v.len()];
        v32::logaddexp2(&v, &w, &mut out);
        for ((o, &a), &b) in out.iter().zip(&v).zip(&w) {
            // SAFETY: as above.
            let o = unsafe { o.assume_init() };
            assert_eq!(
                o.to_bits(),
                Float::logaddexp2(a, b).to_bits(),
                "{a:e} {b:e}"
            );
        }
    }
}
