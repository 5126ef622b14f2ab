//! Vectorised math functions over slices, float32 (`float32`) and float64 (`float64`):
//! exp, expm1, log, log1p, tanh, sigmoid, sin, cos and the other unary functions of the
//! op table that libm would evaluate one element at a time, and functions of two slices
//! (atan2, hypot, logaddexp, pow, fmod, remainder, floor division: `slice_fns2!`); see
//! docs/kernels.md for the list, the designs and the measurements that chose them.
//!
//! Each function is written once, as a branch-free formula for one element (range
//! reduction, then a polynomial fitted by `tools/fit_vmath.py`, with the few steps that
//! need more than the working precision carried as unevaluated sums of two floats), in
//! the tensor's own precision. The slice functions run that formula in a loop the
//! compiler vectorises, compiled three times (baseline, AVX2+FMA, AVX-512F+FMA) and
//! picked at run time from the CPU's features ([`level`]).
//!
//! Accuracy: within 1 ulp of the exact value for every input (float32: checked
//! exhaustively by `examples/vmath_ulp.rs`, the figures in docs/kernels.md; float64: on
//! samples against a double-double reference), as torch's SLEEF and MKL kernels are;
//! not always the correctly rounded value.
//!
//! Determinism: each element's result is a fixed sequence of IEEE operations, fused
//! multiply-adds included (`mul_add` is exactly rounded whether it is one instruction or
//! libm's software fma on a CPU without FMA), so it is the same bit for bit at every
//! level, in every SIMD width, in a loop's scalar tail and on every thread split. The
//! per-element forms (`exp1`, ...), which the fused backward kernels and other scalar
//! code call, give the same bits again.
//!
//! Forcing a level: the environment variable `RGRAD_VMATH_LEVEL` (`baseline`, `avx2`
//! or `avx512`), read once, caps the level picked (never above what the CPU has); tests
//! and tools call a slice function's `at(level, ..)` form, or [`set_level`].

// The split constants are written with all their digits on purpose.
#![allow(clippy::excessive_precision)]

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU8, Ordering};

pub mod float32;
pub mod float64;
pub(crate) mod fmod;
#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests2;
#[cfg(test)]
mod tests_erf64;
#[cfg(test)]
mod tests_gamma;

pub use float32::{
    cos, cos1, exp, exp1, expm1, expm11, log, log1, log1p, log1p1, sigmoid, sigmoid1, sin, sin1,
    tanh, tanh1,
};

/// A slice function: `dst[i] = f(src[i])`, initialising all of `dst` (`src` as long).
pub type SliceFn<T = f32> = fn(&[T], &mut [MaybeUninit<T>]);
/// A slice function at a given level (tests and tools force each one).
pub type AtFn<T> = fn(Level, &[T], &mut [MaybeUninit<T>]);

/// One function of the module, as tests and tools list them.
pub struct Func<T: 'static> {
    pub name: &'static str,
    /// The slice function at a given level.
    pub at: AtFn<T>,
    /// The per-element form (the same bits).
    pub one: fn(T) -> T,
}

/// The builds of the slice functions, in increasing order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// SSE2 (every x86-64 CPU), or the target's own baseline elsewhere; fused
    /// multiply-adds in software where the CPU has no FMA.
    Baseline = 0,
    /// AVX2 and FMA.
    Avx2 = 1,
    /// AVX-512F and FMA.
    Avx512 = 2,
}

impl Level {
    /// The level's name, as `RGRAD_VMATH_LEVEL` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Level::Baseline => "baseline",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
        }
    }

    fn from_u8(v: u8) -> Level {
        match v {
            2 => Level::Avx512,
            1 => Level::Avx2,
            _ => Level::Baseline,
        }
    }
}

const UNSET: u8 = u8::MAX;
static LEVEL: AtomicU8 = AtomicU8::new(UNSET);

static DETECTED: AtomicU8 = AtomicU8::new(UNSET);

/// The highest level this CPU runs (found once: every slice call caps its level by it).
#[inline]
pub fn detected() -> Level {
    match DETECTED.load(Ordering::Relaxed) {
        UNSET => {
            let l = detect();
            DETECTED.store(l as u8, Ordering::Relaxed);
            l
        }
        v => Level::from_u8(v),
    }
}

#[cold]
fn detect() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        let fma = std::arch::is_x86_feature_detected!("fma");
        if fma && std::arch::is_x86_feature_detected!("avx512f") {
            return Level::Avx512;
        }
        if fma && std::arch::is_x86_feature_detected!("avx2") {
            return Level::Avx2;
        }
    }
    Level::Baseline
}

/// Every level this CPU runs, lowest first.
pub fn supported() -> Vec<Level> {
    [Level::Baseline, Level::Avx2, Level::Avx512]
        .into_iter()
        .filter(|&l| l <= detected())
        .collect()
}

/// The level the slice functions use: the CPU's, capped by `RGRAD_VMATH_LEVEL` (read on
/// the first call) or by [`set_level`].
#[inline]
pub fn level() -> Level {
    match LEVEL.load(Ordering::Relaxed) {
        UNSET => first_level(),
        v => Level::from_u8(v),
    }
}

#[cold]
fn first_level() -> Level {
    let cap = std::env::var("RGRAD_VMATH_LEVEL").ok().and_then(|v| {
        [Level::Baseline, Level::Avx2, Level::Avx512]
            .into_iter()
            .find(|l| l.name() == v.trim().to_ascii_lowercase())
    });
    let l = cap.map_or(detected(), |c| c.min(detected()));
    LEVEL.store(l as u8, Ordering::Relaxed);
    l
}

/// The level in use, for kernels already dispatched by [`level`]: one load, without
/// `level`'s first-call path (the baseline while the level is unset), cheap enough to
/// read per row.
#[inline(always)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) fn level_in_use() -> Level {
    Level::from_u8(LEVEL.load(Ordering::Relaxed))
}

/// Sets the level the slice functions use (capped by what the CPU runs) and returns the
/// level set. For tests and tools: results are the same at every level, only the speed
/// differs.
#[doc(hidden)]
pub fn set_level(l: Level) -> Level {
    let l = l.min(detected());
    LEVEL.store(l as u8, Ordering::Relaxed);
    l
}

/// Elements per block, where a function checks its block for a fast path or a fixup.
pub(crate) const BLOCK: usize = 1024;

/// Defines each slice function: a module `name` with `at(level, src, dst)` (the body
/// compiled per level) and the function `name(src, dst)` at [`level`].
///
/// `fast(|x| cond => expr)`, where given, is the same function on the common part of its
/// domain without the steps only the rest needs (clamps, two-step scaling into the
/// subnormals, special values): a block whose inputs all satisfy `cond` (a vectorised
/// and-reduction over data then in L1) runs it. It must give the same bits as the body
/// wherever `cond` holds (the tests and `examples/vmath_ulp.rs` compare them).
///
/// `fixup(limit, fix)`, where given, recomputes the elements the body's reduction does
/// not cover (`|x|` above the limit, or not finite: found by a vectorised scan of each
/// block, so a rare such input costs a scalar pass over its block only).
macro_rules! slice_fns {
    ($t:ty; $($name:ident: |$x:ident| $body:expr
        $(, fast(|$fx:ident| $fcond:expr => $fbody:expr))?
        $(, fixup($limit:expr, $fix:expr))?;)*) => {$(
        pub mod $name {
            #[allow(unused_imports)]
            use super::*;
            use crate::backend::cpu::vmath::Level;
            use std::mem::MaybeUninit;

            /// `dst[i] = f(src[i])` for a block; returns whether some input needs the
            /// fixup, found in the same pass.
            #[inline(always)]
            fn body(src: &[$t], dst: &mut [MaybeUninit<$t>]) -> bool {
                $(
                    if src.iter().fold(true, |all, &$fx| all & ($fcond)) {
                        for (d, &$fx) in dst.iter_mut().zip(src) {
                            d.write($fbody);
                        }
                        return false;
                    }
                )?
                for (d, &$x) in dst.iter_mut().zip(src) {
                    d.write($body);
                }
                $(
                    // a branch-free or-reduction of compares (NaN fails `<=`, so it is
                    // flagged too)
                    #[allow(clippy::neg_cmp_op_on_partial_ord)]
                    let needs_fix = |x: $t| !(x.abs() <= $limit);
                    return src.iter().fold(false, |acc, &x| acc | needs_fix(x));
                )?
                #[allow(unreachable_code)]
                false
            }

            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,fma")]
            fn wide(src: &[$t], dst: &mut [MaybeUninit<$t>]) -> bool {
                body(src, dst)
            }

            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            fn mid(src: &[$t], dst: &mut [MaybeUninit<$t>]) -> bool {
                body(src, dst)
            }

            fn run(level: Level, src: &[$t], dst: &mut [MaybeUninit<$t>]) -> bool {
                #[cfg(target_arch = "x86_64")]
                match level.min(crate::backend::cpu::vmath::detected()) {
                    // SAFETY: the CPU has AVX-512F and FMA (the level is capped by
                    // what it has).
                    Level::Avx512 => return unsafe { wide(src, dst) },
                    // SAFETY: the CPU has AVX2 and FMA (as above).
                    Level::Avx2 => return unsafe { mid(src, dst) },
                    Level::Baseline => {}
                }
                let _ = level;
                body(src, dst)
            }

            /// `dst[i] = f(src[i])` with the build of `level` (capped by the CPU's);
            /// initialises all of `dst` (`src` must be as long).
            pub fn at(level: Level, src: &[$t], dst: &mut [MaybeUninit<$t>]) {
                assert_eq!(src.len(), dst.len());
                let fix: Option<fn($t) -> Option<$t>> = None $(.or(Some($fix)))?;
                let blocks = fix.is_some() $(|| { let _ = stringify!($fcond); true })?;
                if !blocks {
                    run(level, src, dst);
                    return;
                }
                for (s, d) in src
                    .chunks(crate::backend::cpu::vmath::BLOCK)
                    .zip(dst.chunks_mut(crate::backend::cpu::vmath::BLOCK))
                {
                    if run(level, s, d) {
                        if let Some(fix) = fix {
                            for (d, &x) in d.iter_mut().zip(s) {
                                if let Some(v) = fix(x) {
                                    d.write(v);
                                }
                            }
                        }
                    }
                }
            }
        }

        /// `dst[i] = f(src[i])` at the current [`level`](crate::backend::cpu::vmath::level);
        /// initialises all of `dst` (`src` must be as long).
        pub fn $name(src: &[$t], dst: &mut [std::mem::MaybeUninit<$t>]) {
            $name::at(crate::backend::cpu::vmath::level(), src, dst)
        }
    )*};
}
pub(crate) use slice_fns;

/// Defines per-element functions that run a formula with hardware FMA where the CPU
/// has it (the same bits as without: `mul_add` is exact either way, only slower in
/// software), for scalar callers.
macro_rules! scalar_fns {
    ($t:ty; $($(#[$doc:meta])* $name:ident = $core:expr;)*) => {$(
        $(#[$doc])*
        #[inline]
        pub fn $name(x: $t) -> $t {
            #[cfg(target_arch = "x86_64")]
            if crate::backend::cpu::vmath::level() >= crate::backend::cpu::vmath::Level::Avx2 {
                #[target_feature(enable = "fma")]
                fn with_fma(x: $t) -> $t {
                    ($core)(x)
                }
                // SAFETY: levels from Avx2 up are only picked on CPUs with FMA.
                return unsafe { with_fma(x) };
            }
            ($core)(x)
        }
    )*};
}
pub(crate) use scalar_fns;

/// A two-input slice function: `dst[i] = f(a[i], b[i])`, initialising all of `dst`.
pub type SliceFn2<T> = fn(&[T], &[T], &mut [MaybeUninit<T>]);
/// A two-input slice function at a given level.
pub type AtFn2<T> = fn(Level, &[T], &[T], &mut [MaybeUninit<T>]);

/// One two-input function of the module, as tests and tools list them.
pub struct Func2<T: 'static> {
    pub name: &'static str,
    pub at: AtFn2<T>,
    /// The per-element form (the same bits).
    pub one: fn(T, T) -> T,
}

/// [`slice_fns!`] for functions of two slices (`atan2: |y, x| ...`), with the same
/// levels. `fixup(|a, b| cond, fix)`, where given: after a block, if `cond` held for
/// some pair (a vectorised or-reduction), `fix(a, b)` recomputes that block's pairs
/// where `cond` holds (returning the value), one at a time.
macro_rules! slice_fns2 {
    ($t:ty; $($name:ident: |$a:ident, $b:ident| $body:expr
        $(, fixup(|$fa:ident, $fb:ident| $fcond:expr, $fix:expr))?;)*) => {$(
        pub mod $name {
            #[allow(unused_imports)]
            use super::*;
            use crate::backend::cpu::vmath::Level;
            use std::mem::MaybeUninit;

            #[inline(always)]
            fn body(a: &[$t], b: &[$t], dst: &mut [MaybeUninit<$t>]) -> bool {
                for ((d, &$a), &$b) in dst.iter_mut().zip(a).zip(b) {
                    d.write($body);
                }
                $(
                    #[allow(clippy::neg_cmp_op_on_partial_ord)]
                    return a.iter().zip(b).fold(false, |acc, (&$fa, &$fb)| acc | ($fcond));
                )?
                #[allow(unreachable_code)]
                false
            }

            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,fma")]
            fn wide(a: &[$t], b: &[$t], dst: &mut [MaybeUninit<$t>]) -> bool {
                body(a, b, dst)
            }

            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            fn mid(a: &[$t], b: &[$t], dst: &mut [MaybeUninit<$t>]) -> bool {
                body(a, b, dst)
            }

            fn run(level: Level, a: &[$t], b: &[$t], dst: &mut [MaybeUninit<$t>]) -> bool {
                #[cfg(target_arch = "x86_64")]
                match level.min(crate::backend::cpu::vmath::detected()) {
                    // SAFETY: the CPU has AVX-512F and FMA (the level is capped by
                    // what it has).
                    Level::Avx512 => return unsafe { wide(a, b, dst) },
                    // SAFETY: the CPU has AVX2 and FMA (as above).
                    Level::Avx2 => return unsafe { mid(a, b, dst) },
                    Level::Baseline => {}
                }
                let _ = level;
                body(a, b, dst)
            }

            /// `dst[i] = f(a[i], b[i])` with the build of `level` (capped by the
            /// CPU's); initialises all of `dst` (`a` and `b` must be as long).
            pub fn at(level: Level, a: &[$t], b: &[$t], dst: &mut [MaybeUninit<$t>]) {
                assert!(a.len() == dst.len() && b.len() == dst.len());
                let blocks = false $(|| { let _ = stringify!($fcond); true })?;
                if !blocks {
                    run(level, a, b, dst);
                    return;
                }
                let n = crate::backend::cpu::vmath::BLOCK;
                for ((sa, sb), d) in a.chunks(n).zip(b.chunks(n)).zip(dst.chunks_mut(n)) {
                    #[allow(unused_variables)]
                    if run(level, sa, sb, d) {
                        $(
                            for ((d, &$fa), &$fb) in d.iter_mut().zip(sa).zip(sb) {
                                #[allow(clippy::neg_cmp_op_on_partial_ord)]
                                if $fcond {
                                    d.write($fix);
                                }
                            }
                        )?
                    }
                }
            }
        }

        /// `dst[i] = f(a[i], b[i])` at the current
        /// [`level`](crate::backend::cpu::vmath::level).
        pub fn $name(a: &[$t], b: &[$t], dst: &mut [std::mem::MaybeUninit<$t>]) {
            $name::at(crate::backend::cpu::vmath::level(), a, b, dst)
        }
    )*};
}
pub(crate) use slice_fns2;

/// [`scalar_fns!`] for functions of two elements.
macro_rules! scalar_fns2 {
    ($t:ty; $($(#[$doc:meta])* $name:ident = $core:expr;)*) => {$(
        $(#[$doc])*
        #[inline]
        pub fn $name(a: $t, b: $t) -> $t {
            #[cfg(target_arch = "x86_64")]
            if crate::backend::cpu::vmath::level() >= crate::backend::cpu::vmath::Level::Avx2 {
                #[target_feature(enable = "fma")]
                fn with_fma(a: $t, b: $t) -> $t {
                    ($core)(a, b)
                }
                // SAFETY: levels from Avx2 up are only picked on CPUs with FMA.
                return unsafe { with_fma(a, b) };
            }
            ($core)(a, b)
        }
    )*};
}
pub(crate) use scalar_fns2;

/// `dst[i] = f(a[i], c)` (or `f(c, a[i])` when `first`) with a two-input slice function
/// and a number, through a block of copies of the number on the stack.
pub fn with_number<T: Copy>(
    f: SliceFn2<T>,
    a: &[T],
    c: T,
    first: bool,
    dst: &mut [MaybeUninit<T>],
) {
    let cs = [c; BLOCK];
    for (s, d) in a.chunks(BLOCK).zip(dst.chunks_mut(BLOCK)) {
        let k = &cs[..s.len()];
        if first { f(k, s, d) } else { f(s, k, d) }
    }
}
