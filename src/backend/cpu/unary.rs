//! Unary CPU kernels, derived from the op table (`ops::table`): each row's `f` becomes
//! the forward map and its `df` the fused backward, so no op's math is written here.
//! What is CPU-specific: the float32 slice functions of `vmath` for the ops that have
//! one (same bits as their per-element forms, which `Float` uses).

use super::elementwise::{
    BinaryOp, PAR_MIN_VMATH, fill_chunks, fill_chunks_from, float_scalar_map, float_zip, map,
};
use super::strided::contiguous;
use super::vmath;
use crate::Result;
use crate::backend::{Calc, UnaryOp};
use crate::layout::Layout;
use crate::storage::Buffer;

/// The scalar functions the table's `f` column is written with, for one float element.
/// float32's transcendental functions are `vmath`'s per-element forms, so a scalar
/// evaluation (a fused backward) gives the bits the slice kernels give.
pub trait Float: super::elementwise::Num + std::ops::Neg<Output = Self> {
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn ln_1p(self) -> Self;
    fn exp_m1(self) -> Self;
    fn sqrt(self) -> Self;
    fn rsqrt(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tan(self) -> Self;
    fn tanh(self) -> Self;
    fn sigmoid(self) -> Self;
    fn recip(self) -> Self;
    /// torch's sign: (0 < x) - (x < 0), so +0 for both zeros and for NaN.
    fn sign(self) -> Self;
    /// As torch's relu: NaN and -0 stay (one compare: both fail `< 0`).
    fn relu(self) -> Self;
    fn sinh(self) -> Self;
    fn cosh(self) -> Self;
    fn asin(self) -> Self;
    fn acos(self) -> Self;
    fn atan(self) -> Self;
    fn asinh(self) -> Self;
    fn acosh(self) -> Self;
    fn atanh(self) -> Self;
    fn erf(self) -> Self;
    fn erfc(self) -> Self;
    fn trunc(self) -> Self;
    /// `x - trunc(x)`, as torch computes it.
    fn frac(self) -> Self;
    /// The forward kernel of `op` over a contiguous slice.
    fn unary_slice(op: UnaryOp, x: &[Self]) -> Vec<Self>;
}

macro_rules! float_impl {
    ($t:ty, $slice:expr, $($name:ident: $f:expr),* $(,)?) => {
        impl Float for $t {
            fn unary_slice(op: UnaryOp, x: &[Self]) -> Vec<Self> {
                let f: fn(UnaryOp, &[$t]) -> Vec<$t> = $slice;
                f(op, x)
            }
            $(#[inline(always)]
            fn $name(self) -> Self {
                let f: fn($t) -> $t = $f;
                f(self)
            })*
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn rsqrt(self) -> Self {
                1.0 / <$t>::sqrt(self)
            }
            #[inline(always)]
            fn tan(self) -> Self {
                <$t>::tan(self)
            }
            #[inline(always)]
            fn recip(self) -> Self {
                1.0 / self
            }
            #[inline(always)]
            fn sign(self) -> Self {
                if self > 0.0 {
                    1.0
                } else if self < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            }
            #[inline(always)]
            fn relu(self) -> Self {
                if self < 0.0 { 0.0 } else { self }
            }
            #[inline(always)]
            fn trunc(self) -> Self {
                <$t>::trunc(self)
            }
            #[inline(always)]
            fn frac(self) -> Self {
                self - <$t>::trunc(self)
            }
        }
    };
}
float_impl!(f32, |op, x| match vmath_fn(op) {
        Some(f) => map_slices(x, f),
        None => float_map(op, x),
    },
    // (evaluated in float64 and rounded once: the correctly rounded value nearly always)
    sinh: |x| f64::from(x).sinh() as f32, cosh: |x| f64::from(x).cosh() as f32,
    asin: |x| f64::from(x).asin() as f32, acos: |x| f64::from(x).acos() as f32,
    atan: |x| f64::from(x).atan() as f32, asinh: |x| libm::asinh(f64::from(x)) as f32,
    acosh: |x| libm::acosh(f64::from(x)) as f32, atanh: |x| libm::atanh(f64::from(x)) as f32,
    erf: |x| libm::erf(f64::from(x)) as f32, erfc: |x| libm::erfc(f64::from(x)) as f32,
    exp: vmath::exp1, ln: vmath::log1, ln_1p: vmath::log1p1, exp_m1: vmath::expm11,
    sin: vmath::sin1, cos: vmath::cos1, tanh: vmath::tanh1, sigmoid: vmath::sigmoid1,
);
float_impl!(f64, float_map,
    sinh: f64::sinh, cosh: f64::cosh, asin: f64::asin, acos: f64::acos, atan: f64::atan,
    // (libm's pure-Rust asinh/acosh/atanh: std's call glibc's hypot@GLIBC_2.35, which
    // would raise the wheel's manylinux floor)
    asinh: libm::asinh, acosh: libm::acosh, atanh: libm::atanh, erf: libm::erf, erfc: libm::erfc,
    exp: f64::exp, ln: f64::ln, ln_1p: f64::ln_1p, exp_m1: f64::exp_m1, sin: f64::sin,
    cos: f64::cos, tanh: f64::tanh,
    // stable for large |x|
    sigmoid: |x| if x >= 0.0 { 1.0 / (1.0 + (-x).exp()) } else { let e = x.exp(); e / (1.0 + e) },
);

/// A block of contiguous elements: the table's `df` evaluated over blocks is the fused
/// backward kernel. Each `Calc` step is one loop over a block that stays in L1, and
/// the transcendental functions run the forward kernels (float32: `vmath`'s slice
/// functions), so every element takes the roundings of the recorded formula. Never fails.
struct Block<T>(Vec<T>);

impl<T: Float> Block<T> {
    /// Runs the binary kernels the tensor ops run (`float_zip`, `float_scalar_map`), so
    /// each step rounds exactly as the recorded formula's op does.
    fn zip(&self, o: &Self, op: BinaryOp) -> Result<Self> {
        let l = Layout::contiguous(&[self.0.len()]);
        Ok(Block(float_zip(op, &self.0, &l, &o.0, &l)))
    }
    fn scalar(&self, op: BinaryOp, c: f64, scalar_first: bool) -> Result<Self> {
        Ok(Block(float_scalar_map(
            op,
            &self.0,
            T::from_f64(c),
            scalar_first,
        )))
    }
    fn map(&self, f: impl Fn(T) -> T) -> Result<Self> {
        Ok(Block(self.0.iter().map(|&a| f(a)).collect()))
    }
    fn unary(&self, op: UnaryOp) -> Result<Self> {
        Ok(Block(T::unary_slice(op, &self.0)))
    }
}

impl<T: Float> Calc for Block<T> {
    fn mul(&self, o: &Self) -> Result<Self> {
        self.zip(o, BinaryOp::Mul)
    }
    fn div(&self, o: &Self) -> Result<Self> {
        self.zip(o, BinaryOp::Div)
    }
    fn neg(&self) -> Result<Self> {
        self.unary(UnaryOp::Neg)
    }
    fn add_s(&self, c: f64) -> Result<Self> {
        self.scalar(BinaryOp::Add, c, false)
    }
    fn mul_s(&self, c: f64) -> Result<Self> {
        self.scalar(BinaryOp::Mul, c, false)
    }
    fn rsub_s(&self, c: f64) -> Result<Self> {
        self.scalar(BinaryOp::Sub, c, true)
    }
    fn pow_s(&self, c: f64) -> Result<Self> {
        self.scalar(BinaryOp::Pow, c, false)
    }
    fn sign(&self) -> Result<Self> {
        self.unary(UnaryOp::Sign)
    }
    fn sin(&self) -> Result<Self> {
        self.unary(UnaryOp::Sin)
    }
    fn cos(&self) -> Result<Self> {
        self.unary(UnaryOp::Cos)
    }
    fn sinh(&self) -> Result<Self> {
        self.unary(UnaryOp::Sinh)
    }
    fn cosh(&self) -> Result<Self> {
        self.unary(UnaryOp::Cosh)
    }
    fn exp(&self) -> Result<Self> {
        self.unary(UnaryOp::Exp)
    }
    fn rsqrt(&self) -> Result<Self> {
        self.unary(UnaryOp::Rsqrt)
    }
    fn zeros_like(&self) -> Result<Self> {
        self.map(|_| T::from_f64(0.0))
    }
    fn unchanged(&self) -> Result<Self> {
        Ok(Block(self.0.clone()))
    }
    fn threshold_backward(&self, y: &Self) -> Result<Self> {
        let zero = T::from_f64(0.0);
        Ok(Block(
            self.0
                .iter()
                .zip(&y.0)
                .map(|(&g, &y)| if y <= zero { zero } else { g })
                .collect(),
        ))
    }
    fn tanh_backward(&self, y: &Self) -> Result<Self> {
        let one = T::from_f64(1.0);
        Ok(Block(
            self.0
                .iter()
                .zip(&y.0)
                .map(|(&g, &y)| g * (one - y * y))
                .collect(),
        ))
    }
}

/// Elements per block of the fused backward (16 KiB of float64: the operands and a few
/// temporaries stay in L1).
const BLOCK: usize = 2048;

/// `df(g, s)` block by block into a new vector (in parallel chunks for large inputs).
fn fused_blocks<T: Float>(
    g: &[T],
    lg: &Layout,
    s: &[T],
    ls: &Layout,
    df: impl Fn(&Block<T>, &Block<T>) -> Result<Block<T>> + Sync + Send,
) -> Vec<T> {
    let (g, s) = (contiguous(g, lg), contiguous(s, ls));
    fill_chunks(g.len(), |start, out| {
        for (i, o) in out.chunks_mut(BLOCK).enumerate() {
            let a = start + i * BLOCK;
            let b = a + o.len();
            let r = df(&Block(g[a..b].to_vec()), &Block(s[a..b].to_vec()));
            // (a block never fails; should one, its elements stay g, never uninitialised)
            let r = r.map_or_else(|_| g[a..b].to_vec(), |r| r.0);
            for (o, v) in o.iter_mut().zip(r) {
                o.write(v);
            }
        }
    })
}

/// A float32 slice function of `vmath` for the op, where there is one.
fn vmath_fn(op: UnaryOp) -> Option<vmath::SliceFn> {
    Some(match op {
        UnaryOp::Exp => vmath::exp,
        UnaryOp::Expm1 => vmath::expm1,
        UnaryOp::Log => vmath::log,
        UnaryOp::Log1p => vmath::log1p,
        UnaryOp::Tanh => vmath::tanh,
        UnaryOp::Sigmoid => vmath::sigmoid,
        UnaryOp::Sin => vmath::sin,
        UnaryOp::Cos => vmath::cos,
        _ => return None,
    })
}

/// A slice function over `src` into a new vector, in fixed-size chunks on the pool for
/// large inputs (each element's value does not depend on the split).
fn map_slices(src: &[f32], f: vmath::SliceFn) -> Vec<f32> {
    fill_chunks_from(PAR_MIN_VMATH, src.len(), |start, out| {
        let end = start + out.len();
        f(&src[start..end], out)
    })
}

macro_rules! kernels {
    ($($name:ident $name_:ident $V:ident $node:literal {
        ints: $ints:ident $(($($iargs:tt)*))?, bool: $bool:expr,
        f: |$x:ident| $f:expr,
        df($saves:ident): |$g:ident $(, $s:ident)?| $df:expr,
        inplace: $inplace:ident $(($inode:literal))?,
        doc: $doc:literal,
    })*) => {
        /// `f(x)` for every element of a float slice: one loop per op, with the op a
        /// constant in it (the branch-free ones vectorise).
        fn float_map<T: Float>(op: UnaryOp, x: &[T]) -> Vec<T> {
            match op {
                $(UnaryOp::$V => map(x, move |$x: T| $f),)*
            }
        }

        /// The integer kernel of an op whose row keeps int64 inputs.
        fn int_fn(op: UnaryOp) -> Option<fn(i64) -> i64> {
            match op {
                $(UnaryOp::$V => int_kernel!($ints $(($($iargs)*))?),)*
            }
        }

        /// `df` over `g` and the saved value `s` (None for rows that save nothing).
        fn fused<T: Float>(op: UnaryOp, g: &[T], lg: &Layout, s: &[T], ls: &Layout) -> Option<Vec<T>> {
            match op {
                $(UnaryOp::$V => fused_row!($saves, g, lg, s, ls, |$g $(, $s)?| $df),)*
            }
        }
    };
}

/// The int64 kernel of a row's `ints` column.
macro_rules! int_kernel {
    (promote) => {
        None
    };
    (refuse($k:literal)) => {
        None
    };
    (keep(|$a:ident| $e:expr)) => {
        Some(|$a: i64| $e)
    };
}

/// The fused kernel of a row: `df` over `g` and the saved value, or nothing for rows
/// that save nothing (their recorded backward is a single op already).
macro_rules! fused_row {
    (none, $g:ident, $lg:ident, $s:ident, $ls:ident, |$gv:ident| $df:expr) => {{
        let _ = ($g, $lg, $s, $ls);
        None
    }};
    ($saves:ident, $g:ident, $lg:ident, $s:ident, $ls:ident, |$gv:ident, $sv:ident| $df:expr) => {
        Some(fused_blocks($g, $lg, $s, $ls, |$gv, $sv| $df))
    };
}

crate::ops::table::unary_op_table!(kernels);

/// Unary map producing a contiguous buffer. Float ops require a float buffer; int64
/// buffers take the ops whose row keeps them, bool buffers the identity (sign); the op
/// layer promotes or refuses everything else first.
pub fn unary(op: UnaryOp, buf: &Buffer, layout: &Layout) -> Buffer {
    match buf {
        Buffer::F32(v) => Buffer::F32(f32::unary_slice(op, &contiguous(v, layout))),
        Buffer::F64(v) => Buffer::F64(f64::unary_slice(op, &contiguous(v, layout))),
        Buffer::I64(v) => {
            let x = contiguous(v, layout);
            match int_fn(op) {
                Some(f) => Buffer::I64(map(&x, f)),
                None => Buffer::I64(x.into_owned()),
            }
        }
        Buffer::Bool(v) => Buffer::Bool(contiguous(v, layout).into_owned()),
    }
}

/// `!x` of a bool buffer (the op layer converts other dtypes first).
pub fn logical_not(buf: &Buffer, layout: &Layout) -> Buffer {
    match buf {
        Buffer::Bool(v) => Buffer::Bool(map(&contiguous(v, layout), |a: bool| !a)),
        other => other.clone(),
    }
}

/// The gradient of a unary op, `g·f'(x)`, in one pass instead of the one to four tensor
/// ops of the recorded formula: the table's `df` evaluated per element, with the same
/// roundings, so the two paths agree bit for bit. `s` is what the op saved (the input or
/// the output) with `g`'s shape and dtype. `None` where it does not apply: dtypes that
/// differ or are not float, shapes that differ, rows that save nothing.
pub fn unary_backward(
    op: UnaryOp,
    g: &Buffer,
    lg: &Layout,
    s: &Buffer,
    ls: &Layout,
) -> Option<Buffer> {
    if lg.shape != ls.shape {
        return None;
    }
    match (g, s) {
        (Buffer::F32(gv), Buffer::F32(sv)) => fused(op, gv, lg, sv, ls).map(Buffer::F32),
        (Buffer::F64(gv), Buffer::F64(sv)) => fused(op, gv, lg, sv, ls).map(Buffer::F64),
        _ => None,
    }
}
