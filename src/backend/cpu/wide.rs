//! Plain loops at the CPU's vector width.
//!
//! The crate is compiled for the x86-64 baseline (SSE2), so a loop LLVM vectorises moves
//! 16 bytes an instruction. [`wide`] runs a closure inside a function compiled with AVX2
//! (and FMA) when the CPU has it and `RGRAD_VMATH_LEVEL` does not cap it: the closure and
//! what it calls are inlined there, and their loops are vectorised again, 32 bytes an
//! instruction. The elementwise chunk runners (`elementwise::fill_chunks`, the in-place
//! ops) and the copy kernel's rows go through it, so every map, zip, cast, fill and copy
//! row is built twice and picks its build per call.
//!
//! Why AVX2 and not AVX-512 on a CPU that has both: for these streaming loops (a load, an
//! operation, a store) the 64-byte build was slower on Zen 4, which splits each 512-bit
//! access in two (64K float32 in L2, aligned, one thread: `x * s` in place 2.4 us at AVX2
//! against 3.2 us at AVX-512, a fill 2.3 against 3.0; the baseline 4.8 and 4.5), and
//! Intel's cores issue two 32-byte stores a cycle against one 64-byte one. The vector
//! math (`vmath`), whose loops are arithmetic-bound, keeps its own AVX-512 build.
//!
//! Results are the same bits at both builds: Rust never contracts a multiply and an add,
//! IEEE operations round the same at every width, and `mul_add` is exactly rounded
//! whether it is one instruction or libm's software fma.

/// `f()`, compiled for AVX2 and FMA where the CPU has them (see the module doc). Only
/// for closures that are cheap to build twice: the loop bodies of elementwise kernels.
#[inline(always)]
pub(crate) fn wide<R>(f: impl FnOnce() -> R) -> R {
    /// A closure as a [`Kernel`] (its body is inlined into the AVX2 build only where
    /// LLVM chooses to).
    struct Call<F>(F);
    impl<R, F: FnOnce() -> R> Kernel for Call<F> {
        type Out = R;
        #[inline(always)]
        fn run(self) -> R {
            (self.0)()
        }
    }
    wide_kernel(Call(f))
}

/// A loop for [`wide_kernel`]: its `run` must be `#[inline(always)]`, so that it is
/// inlined into the AVX2 build. [`wide`]'s closure is inlined there only when LLVM
/// chooses to, and a loop-sized closure with several call sites stays out of line,
/// compiled for the baseline: `zip`'s broadcast-row loop ran on SSE2's 16-byte registers
/// although its chunk runner goes through [`wide`] (a 256 x 256 outer product 6.4 us,
/// 4.0 as a kernel; one thread, AMD EPYC Zen 4).
pub(crate) trait Kernel {
    type Out;
    fn run(self) -> Self::Out;
}

/// `k.run()`, compiled for AVX2 and FMA where the CPU has them (see the module doc: the
/// AVX-512 build of these loops measured slower again, a 4M multiply 2.0-2.15 ms against
/// 1.67-1.86 on one thread).
#[inline(always)]
pub(crate) fn wide_kernel<K: Kernel>(k: K) -> K::Out {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma")]
        fn avx2<K: Kernel>(k: K) -> K::Out {
            k.run()
        }
        if super::vmath::level() >= super::vmath::Level::Avx2 {
            // SAFETY: vmath::level never reports a level above what the CPU runs (it is
            // the detected level, capped): AVX2 and FMA are present.
            return unsafe { avx2(k) };
        }
    }
    k.run()
}
