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
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma")]
        fn avx2<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        if super::vmath::level() >= super::vmath::Level::Avx2 {
            // SAFETY: vmath::level never reports a level above what the CPU runs (it is
            // the detected level, capped): AVX2 and FMA are present.
            return unsafe { avx2(f) };
        }
    }
    f()
}
