//! The activation functions of `ops::activation` in one pass (issue 15: they were
//! composed of four to ten tensor ops, each a pass over memory with a temporary).
//!
//! Each map is the composite's sequence of IEEE operations on one element, in the
//! composite's order (each number rounded to the dtype first, as the scalar ops round
//! it), so the values are the same bits. The transcendental step (exp, expm1, erf, tanh,
//! sigmoid) is the `vmath` slice function the composite's tensor op runs, applied to a
//! block of [`BLOCK`] arguments in an L1-resident buffer between the two plain loops
//! around it; those loops run in `fill_chunks`' AVX2 build. One exception: float32 gelu
//! (erf form) is `vmath::float32::gelu`, a kernel of its own held to what (x/2)(1 + erf)
//! needs rather than erf's 1 ulp (docs/kernels.md), not the composite's bits.

use super::elementwise::{PAR_MIN, PAR_MIN_VMATH, fill_chunks_from};
use super::strided::contiguous;
use super::unary::VmathSlices;
use super::vmath::{BLOCK, SliceFn};
use crate::backend::UnaryOp;
use crate::layout::Layout;
use crate::storage::{Buffer, Element};
use std::mem::MaybeUninit;

/// An activation with a fused kernel (see `ops::activation::Act` for each formula).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ActFn {
    /// `x <= threshold ? value : x`
    Threshold { threshold: f64, value: f64 },
    /// `-l <= x <= l ? 0 : x`
    Hardshrink { lambd: f64 },
    /// `x > l ? x - l : x < -l ? x + l : x·0`
    Softshrink { lambd: f64 },
    /// `x <= 0 ? expm1(x·input_scale)·(alpha·scale) : x·scale` (celu, selu too)
    Elu {
        alpha: f64,
        scale: f64,
        input_scale: f64,
    },
    /// `x > 0 ? x : x·slope` (rrelu in eval mode too)
    LeakyRelu { slope: f64 },
    /// `x·0.5·(1 + erf(x/√2))` or its tanh approximation
    Gelu { tanh: bool },
    /// `x / (exp(-x) + 1)`
    Silu,
    /// `clamp(x + 3, 0, 6) / 6`
    Hardsigmoid,
    /// `x·clamp(x + 3, 0, 6) / 6`
    Hardswish,
    /// the angle of a real number: NaN kept, π below 0, else 0
    Angle,
    /// `round(x, decimals=d)` (d ≠ 0): `nearbyint(x·10ᵈ) / 10ᵈ`, or `nearbyint(x / 10⁻ᵈ)
    /// · 10⁻ᵈ` for d < 0, the power rounded to the dtype (forward only: its gradient is 0)
    RoundDecimals { decimals: i64 },
    /// `torch.rsub(x, s, alpha)` for a number `s`: `s - x·alpha`, both numbers rounded to
    /// the dtype, two roundings (forward only: the arithmetic table's node differentiates)
    Rsub { s: f64, alpha: f64 },
}

/// √(2/π) and the cubic coefficient of gelu's tanh approximation (ATen's kBeta, kKappa).
const GELU_BETA: f64 = std::f64::consts::SQRT_2 * std::f64::consts::FRAC_2_SQRT_PI * 0.5;
const GELU_KAPPA: f64 = 0.044715;

/// The float element types the kernels run on.
trait F: Element + VmathSlices + PartialOrd + Default + Send + Sync + std::fmt::Debug {
    fn c(v: f64) -> Self;
    fn neg(self) -> Self;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn is_nan(self) -> bool;
    /// to the nearest integer, halves to even (`unary::Float::round_even`'s exact form,
    /// the values of the rounding instruction `round` runs)
    fn round_even(self) -> Self;
    /// float32 (gelu's +∞ is NaN there on AVX-512 machines, as torch's AVX-512 kernel gives)
    const F32: bool;
    /// gelu's erf form as one vmath slice function, where the dtype has one (float32:
    /// `vmath::float32::gelu`, its own kernel).
    fn gelu_slice() -> Option<SliceFn<Self>>;
}
macro_rules! f_impl {
    ($t:ty, $f32:expr, $gelu:expr) => {
        impl F for $t {
            const F32: bool = $f32;
            fn gelu_slice() -> Option<SliceFn<Self>> {
                $gelu
            }
            #[inline(always)]
            fn c(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn neg(self) -> Self {
                -self
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self - o
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self * o
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                self / o
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                self.is_nan()
            }
            #[inline(always)]
            fn round_even(self) -> Self {
                const BIG: $t = (1u64 << (<$t>::MANTISSA_DIGITS - 1)) as $t;
                let a = self.abs();
                if a < BIG {
                    ((a + BIG) - BIG).copysign(self)
                } else {
                    self
                }
            }
        }
    };
}
f_impl!(f32, true, Some(super::vmath::float32::gelu));
f_impl!(f64, false, None);

/// `out[i] = f(x[i])`, one plain loop.
fn plain<T: F>(x: &[T], f: impl Fn(T) -> T + Sync + Send) -> Vec<T> {
    fill_chunks_from(PAR_MIN, x.len(), |start, out| {
        let end = start + out.len();
        for (o, &v) in out.iter_mut().zip(&x[start..end]) {
            o.write(f(v));
        }
    })
}

/// The initialised prefix of a block buffer.
///
/// SAFETY (callers): the first `n` elements of `b` were written.
#[inline(always)]
unsafe fn init<T>(b: &[MaybeUninit<T>], n: usize) -> &[T] {
    // SAFETY: the caller wrote b[..n]; MaybeUninit<T> has T's layout.
    unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<T>(), n) }
}

/// `out[i] = post(x[i], f(pre(x[i])))`, `f` a vmath slice function, block by block.
fn staged<T: F>(
    x: &[T],
    f: SliceFn<T>,
    pre: impl Fn(T) -> T + Sync + Send,
    post: impl Fn(T, T) -> T + Sync + Send,
) -> Vec<T> {
    fill_chunks_from(PAR_MIN_VMATH, x.len(), |start, out| {
        let src = &x[start..start + out.len()];
        let mut a = [const { MaybeUninit::<T>::uninit() }; BLOCK];
        let mut b = [const { MaybeUninit::<T>::uninit() }; BLOCK];
        for (s, o) in src.chunks(BLOCK).zip(out.chunks_mut(BLOCK)) {
            let n = s.len();
            for (d, &v) in a[..n].iter_mut().zip(s) {
                d.write(pre(v));
            }
            // SAFETY: a[..n] was written just above.
            f(unsafe { init(&a, n) }, &mut b[..n]);
            // SAFETY: the slice function initialises all of b[..n].
            let e = unsafe { init(&b, n) };
            for ((d, &v), &e) in o.iter_mut().zip(s).zip(e) {
                d.write(post(v, e));
            }
        }
    })
}

/// `out[i] = post(g[i], s[i], f(pre(s[i])))` (a backward: `g` the gradient, `s` the saved
/// input), `f` a vmath slice function, block by block.
fn staged2<T: F>(
    g: &[T],
    s: &[T],
    f: SliceFn<T>,
    pre: impl Fn(T) -> T + Sync + Send,
    post: impl Fn(T, T, T) -> T + Sync + Send,
) -> Vec<T> {
    fill_chunks_from(PAR_MIN_VMATH, s.len(), |start, out| {
        let end = start + out.len();
        let (gs, ss) = (&g[start..end], &s[start..end]);
        let mut a = [const { MaybeUninit::<T>::uninit() }; BLOCK];
        let mut b = [const { MaybeUninit::<T>::uninit() }; BLOCK];
        for ((gc, sc), o) in gs
            .chunks(BLOCK)
            .zip(ss.chunks(BLOCK))
            .zip(out.chunks_mut(BLOCK))
        {
            let n = sc.len();
            for (d, &v) in a[..n].iter_mut().zip(sc) {
                d.write(pre(v));
            }
            // SAFETY: a[..n] was written just above.
            f(unsafe { init(&a, n) }, &mut b[..n]);
            // SAFETY: the slice function initialises all of b[..n].
            let e = unsafe { init(&b, n) };
            for (((d, &gv), &sv), &e) in o.iter_mut().zip(gc).zip(sc).zip(e) {
                d.write(post(gv, sv, e));
            }
        }
    })
}

/// `out[i] = f(g[i], s[i])`, one plain loop.
fn plain2<T: F>(g: &[T], s: &[T], f: impl Fn(T, T) -> T + Sync + Send) -> Vec<T> {
    fill_chunks_from(PAR_MIN, s.len(), |start, out| {
        let end = start + out.len();
        for ((o, &gv), &sv) in out.iter_mut().zip(&g[start..end]).zip(&s[start..end]) {
            o.write(f(gv, sv));
        }
    })
}

fn slice_fn<T: F>(op: UnaryOp) -> Option<SliceFn<T>> {
    T::slice_fn(op)
}

fn forward<T: F>(op: ActFn, x: &[T]) -> Option<Vec<T>> {
    let c = T::c;
    let (zero, one, half) = (c(0.0), c(1.0), c(0.5));
    Some(match op {
        ActFn::Threshold { threshold, value } => {
            let (t, v) = (c(threshold), c(value));
            plain(x, move |x| if x <= t { v } else { x })
        }
        ActFn::Hardshrink { lambd } => {
            let (lo, hi) = (c(-lambd), c(lambd));
            plain(x, move |x| if x >= lo && x <= hi { zero } else { x })
        }
        ActFn::Softshrink { lambd } => {
            let (lo, l) = (c(-lambd), c(lambd));
            plain(x, move |x| {
                let below = if x < lo { x.add(l) } else { x.mul(zero) };
                if x > l { x.sub(l) } else { below }
            })
        }
        ActFn::Elu {
            alpha,
            scale,
            input_scale,
        } => {
            let (is, a, s) = (c(input_scale), c(alpha * scale), c(scale));
            staged(
                x,
                slice_fn::<T>(UnaryOp::Expm1)?,
                move |x| x.mul(is),
                move |x, e| if x <= zero { e.mul(a) } else { x.mul(s) },
            )
        }
        ActFn::LeakyRelu { slope } => {
            let k = c(slope);
            plain(x, move |x| if x > zero { x } else { x.mul(k) })
        }
        ActFn::Gelu { tanh: false } => {
            let k = c(std::f64::consts::FRAC_1_SQRT_2);
            let (inf, nan) = (c(f64::INFINITY), c(f64::NAN));
            let inf_is_nan = T::F32 && crate::backend::torch_cpu_avx512();
            if let Some(g) = T::gelu_slice() {
                // one pass (float32), then torch's AVX-512 NaN at +∞ where it applies
                let mut y = fill_chunks_from(PAR_MIN_VMATH, x.len(), |start, out| {
                    g(&x[start..start + out.len()], out)
                });
                if inf_is_nan {
                    for (y, &v) in y.iter_mut().zip(x) {
                        if v == inf {
                            *y = nan;
                        }
                    }
                }
                return Some(y);
            }
            staged(
                x,
                slice_fn::<T>(UnaryOp::Erf)?,
                move |x| x.mul(k),
                move |x, e| {
                    let y = x.mul(half).mul(e.add(one));
                    if inf_is_nan && x == inf { nan } else { y }
                },
            )
        }
        ActFn::Gelu { tanh: true } => {
            let (kappa, beta) = (c(GELU_KAPPA), c(GELU_BETA));
            staged(
                x,
                slice_fn::<T>(UnaryOp::Tanh)?,
                move |x| x.add(x.mul(x).mul(x).mul(kappa)).mul(beta),
                move |x, t| x.mul(half).mul(t.add(one)),
            )
        }
        ActFn::Silu => staged(
            x,
            slice_fn::<T>(UnaryOp::Exp)?,
            |x| x.neg(),
            move |x, e| x.div(e.add(one)),
        ),
        ActFn::Hardsigmoid => {
            let (three, six) = (c(3.0), c(6.0));
            plain(x, move |x| {
                let a = x.add(three);
                let a = if a < zero { zero } else { a };
                let a = if a > six { six } else { a };
                a.div(six)
            })
        }
        ActFn::Hardswish => {
            let (three, six) = (c(3.0), c(6.0));
            plain(x, move |x| {
                let a = x.add(three);
                let a = if a < zero { zero } else { a };
                let a = if a > six { six } else { a };
                x.mul(a).div(six)
            })
        }
        ActFn::Angle => {
            // π times 0 or 1 (exact either way): as a select of two constants LLVM made a
            // two-entry lookup table, gathered lane by lane (4x torch's time at 256x256)
            let pi = c(std::f64::consts::PI);
            plain(x, move |x| {
                let a = pi.mul(c(f64::from(u8::from(x < zero))));
                if x.is_nan() { x } else { a }
            })
        }
        ActFn::Rsub { s, alpha } => {
            let (s, alpha) = (c(s), c(alpha));
            plain(x, move |x| s.sub(x.mul(alpha)))
        }
        ActFn::RoundDecimals { decimals } => {
            let p = c(10f64.powf(decimals.unsigned_abs() as f64));
            if decimals > 0 {
                plain(x, move |x| x.mul(p).round_even().div(p))
            } else {
                plain(x, move |x| x.div(p).round_even().mul(p))
            }
        }
    })
}

fn backward<T: F>(op: ActFn, result: bool, g: &[T], s: &[T]) -> Option<Vec<T>> {
    let c = T::c;
    let (zero, one, half) = (c(0.0), c(1.0), c(0.5));
    Some(match op {
        ActFn::Threshold { threshold, .. } => {
            let t = c(threshold);
            plain2(g, s, move |g, s| if s <= t { zero } else { g })
        }
        ActFn::Hardshrink { lambd } | ActFn::Softshrink { lambd } => {
            let (lo, hi) = (c(-lambd), c(lambd));
            plain2(g, s, move |g, s| if s >= lo && s <= hi { zero } else { g })
        }
        ActFn::Elu {
            alpha,
            scale,
            input_scale,
        } if result => {
            // g·input_scale·(y + alpha·scale) (the in-place form saves the result)
            let (a, is, sc) = (c(alpha * scale), c(input_scale), c(scale));
            plain2(g, s, move |g, s| {
                if s <= zero {
                    g.mul(s.add(a).mul(is))
                } else {
                    g.mul(sc)
                }
            })
        }
        ActFn::Elu {
            alpha,
            scale,
            input_scale,
        } => {
            // g·(exp(x·input_scale)·(input_scale·alpha·scale))
            let (is, k, sc) = (c(input_scale), c(input_scale * alpha * scale), c(scale));
            staged2(
                g,
                s,
                slice_fn::<T>(UnaryOp::Exp)?,
                move |s| s.mul(is),
                move |g, s, e| {
                    if s <= zero {
                        g.mul(e.mul(k))
                    } else {
                        g.mul(sc)
                    }
                },
            )
        }
        ActFn::LeakyRelu { slope } => {
            let k = c(slope);
            plain2(g, s, move |g, s| if s > zero { g } else { g.mul(k) })
        }
        ActFn::Gelu { tanh: false } => {
            // g·(cdf + x·pdf), cdf = (erf(x/√2) + 1)·0.5, pdf = exp(x²·-0.5)·k: both
            // slice functions on each block
            let k = c(std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2 * 0.5);
            let (r, m) = (c(std::f64::consts::FRAC_1_SQRT_2), c(-0.5));
            let (exp, erf) = (slice_fn::<T>(UnaryOp::Exp)?, slice_fn::<T>(UnaryOp::Erf)?);
            fill_chunks_from(PAR_MIN_VMATH, s.len(), |start, out| {
                let end = start + out.len();
                let (gs, ss) = (&g[start..end], &s[start..end]);
                let mut a = [const { MaybeUninit::<T>::uninit() }; BLOCK];
                let mut b = [const { MaybeUninit::<T>::uninit() }; BLOCK];
                let mut p = [const { MaybeUninit::<T>::uninit() }; BLOCK];
                for ((gc, sc), o) in gs
                    .chunks(BLOCK)
                    .zip(ss.chunks(BLOCK))
                    .zip(out.chunks_mut(BLOCK))
                {
                    let n = sc.len();
                    for (d, &v) in a[..n].iter_mut().zip(sc) {
                        d.write(v.mul(v).mul(m));
                    }
                    // SAFETY: a[..n] was written just above.
                    exp(unsafe { init(&a, n) }, &mut p[..n]);
                    for (d, &v) in a[..n].iter_mut().zip(sc) {
                        d.write(v.mul(r));
                    }
                    // SAFETY: as above.
                    erf(unsafe { init(&a, n) }, &mut b[..n]);
                    // SAFETY: the slice functions initialise all of b[..n] and p[..n].
                    let (e, pe) = unsafe { (init(&b, n), init(&p, n)) };
                    for ((((d, &gv), &sv), &pv), &e) in o.iter_mut().zip(gc).zip(sc).zip(pe).zip(e)
                    {
                        let cdf = e.add(one).mul(half);
                        d.write(gv.mul(cdf.add(sv.mul(pv.mul(k)))));
                    }
                }
            })
        }
        ActFn::Gelu { tanh: true } => {
            let (kappa, beta) = (c(GELU_KAPPA), c(GELU_BETA));
            let three_kappa = c(3.0 * GELU_KAPPA);
            staged2(
                g,
                s,
                slice_fn::<T>(UnaryOp::Tanh)?,
                move |s| {
                    let x_cube = s.mul(s).mul(s);
                    s.add(x_cube.mul(kappa)).mul(beta)
                },
                move |g, s, t| {
                    let x_sq = s.mul(s);
                    let left = s.mul(half);
                    let right = t.add(one);
                    let left_d = right.mul(half);
                    let tanh_d = one.sub(t.mul(t));
                    let inner_d = x_sq.mul(three_kappa).add(one).mul(beta);
                    let right_d = left.mul(tanh_d).mul(inner_d);
                    g.mul(left_d.add(right_d))
                },
            )
        }
        ActFn::Silu => staged2(
            g,
            s,
            slice_fn::<T>(UnaryOp::Sigmoid)?,
            |s| s,
            move |g, s, sig| g.mul(sig.mul(s.mul(one.sub(sig)).add(one))),
        ),
        ActFn::Hardsigmoid => {
            // (torch multiplies by 1/6 rounded to float32, in float64 too)
            let (lo, hi, sixth) = (c(-3.0), c(3.0), c(f64::from(1.0f32 / 6.0f32)));
            plain2(
                g,
                s,
                move |g, s| {
                    if s > lo && s < hi { g.mul(sixth) } else { zero }
                },
            )
        }
        ActFn::Hardswish => {
            let (lo, hi) = (c(-3.0), c(3.0));
            plain2(g, s, move |g, s| {
                let mid = g.mul(s.div(hi).add(half));
                let upper = if s <= hi { mid } else { g };
                if s < lo { zero } else { upper }
            })
        }
        ActFn::Angle | ActFn::RoundDecimals { .. } | ActFn::Rsub { .. } => return None,
    })
}

/// `op(x)` of a float buffer; `None` for other dtypes (the op layer composes those).
pub fn activation(op: ActFn, x: &Buffer, lx: &Layout) -> Option<Buffer> {
    Some(match x {
        Buffer::F32(v) => Buffer::F32(forward(op, &contiguous(v, lx))?.into()),
        Buffer::F64(v) => Buffer::F64(forward(op, &contiguous(v, lx))?.into()),
        _ => return None,
    })
}

/// `g·op'(s)` of two float buffers of one dtype and shape (`s` the saved input, or the
/// result where `result`: elu's in-place form); `None` where the kernel does not apply.
pub fn activation_backward(
    op: ActFn,
    result: bool,
    g: &Buffer,
    lg: &Layout,
    s: &Buffer,
    ls: &Layout,
) -> Option<Buffer> {
    if lg.shape != ls.shape {
        return None;
    }
    Some(match (g, s) {
        (Buffer::F32(gv), Buffer::F32(sv)) => {
            Buffer::F32(backward(op, result, &contiguous(gv, lg), &contiguous(sv, ls))?.into())
        }
        (Buffer::F64(gv), Buffer::F64(sv)) => {
            Buffer::F64(backward(op, result, &contiguous(gv, lg), &contiguous(sv, ls))?.into())
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::vmath::float32 as v32;

    /// Values around every boundary the maps test, the special values and a sweep.
    fn inputs() -> Vec<f32> {
        let mut xs = vec![
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            1e-45,
            -1e-45,
            f32::MAX,
            f32::MIN,
        ];
        for b in [0.1f32, 0.5, 3.0, 6.0, 1.0, 20.0, 88.0] {
            for v in [b, -b] {
                xs.extend([v, v.next_up(), v.next_down()]);
            }
        }
        xs.extend((0..5000).map(|i| (i as f32 - 2500.0) * 0.0049));
        xs
    }

    fn same(a: &[f32], b: &[f32], what: &str) {
        assert_eq!(a.len(), b.len());
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            assert!(
                x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
                "{what}: element {i}: {x} against {y}"
            );
        }
    }

    #[test]
    fn forward_maps_are_the_composites_steps() {
        let xs = inputs();
        let check = |op: ActFn, f: &dyn Fn(f32) -> f32| {
            let want: Vec<f32> = xs.iter().map(|&x| f(x)).collect();
            same(
                &forward(op, &xs).unwrap_or_default(),
                &want,
                &format!("{op:?}"),
            );
        };
        check(ActFn::Softshrink { lambd: 0.5 }, &|x| {
            let lo = if x < -0.5 { x + 0.5 } else { x * 0.0 };
            if x > 0.5 { x - 0.5 } else { lo }
        });
        check(
            ActFn::Threshold {
                threshold: 0.1,
                value: 2.0,
            },
            &|x| if x <= 0.1f32 { 2.0 } else { x },
        );
        check(ActFn::Hardswish, &|x| x * (x + 3.0).clamp(0.0, 6.0) / 6.0);
        check(ActFn::Silu, &|x| x / (v32::exp1(-x) + 1.0));
        // (float32 gelu is its own vmath kernel, held to what (x/2)(1 + erf) needs: its
        // bits are `gelu1`'s, its error against float64 is vmath's test)
        check(ActFn::Gelu { tanh: false }, &|x| {
            let y = v32::gelu1(x);
            let nan_at_inf = crate::backend::torch_cpu_avx512();
            if nan_at_inf && x == f32::INFINITY {
                f32::NAN
            } else {
                y
            }
        });
        check(
            ActFn::Elu {
                alpha: 1.0,
                scale: 1.0,
                input_scale: 1.0,
            },
            &|x| if x <= 0.0 { v32::expm11(x) } else { x },
        );
        check(ActFn::RoundDecimals { decimals: 2 }, &|x| {
            (x * 100.0).round_ties_even() / 100.0
        });
        check(ActFn::Rsub { s: 2.0, alpha: 3.0 }, &|x| 2.0 - x * 3.0);
    }

    #[test]
    fn backward_maps_are_the_composites_steps() {
        let xs = inputs();
        let gs: Vec<f32> = (0..xs.len()).map(|i| (i % 7) as f32 - 3.25).collect();
        let check = |op: ActFn, f: &dyn Fn(f32, f32) -> f32| {
            let want: Vec<f32> = gs.iter().zip(&xs).map(|(&g, &s)| f(g, s)).collect();
            same(
                &backward(op, false, &gs, &xs).unwrap_or_default(),
                &want,
                &format!("{op:?}"),
            );
        };
        check(ActFn::Silu, &|g, s| {
            let sig = v32::sigmoid1(s);
            g * (sig * (s * (1.0 - sig) + 1.0))
        });
        check(ActFn::Gelu { tanh: false }, &|g, s| {
            let cdf = (v32::erf1(s * std::f32::consts::FRAC_1_SQRT_2) + 1.0) * 0.5;
            let k =
                (std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2 * 0.5) as f32;
            let pdf = v32::exp1(s * s * -0.5) * k;
            g * (cdf + s * pdf)
        });
        check(ActFn::Hardswish, &|g, s| {
            let mid = g * (s / 3.0 + 0.5);
            let upper = if s <= 3.0 { mid } else { g };
            if s < -3.0 { 0.0 } else { upper }
        });
    }
}
