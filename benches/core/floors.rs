//! Physical floors: what the machine can do at best, to read the other figures against.
//!
//! - `floor/copy`, `floor/triad`: STREAM-like loops on plain `Vec<f32>`s (copy `a = b`,
//!   triad `a = b + s·c`), 1 thread and N threads (rgrad's pool), preallocated output.
//!   `triad_fresh` allocates its output every time, as an op must (page faults included
//!   at large sizes): the honest floor for an out-of-place elementwise op.
//! - `floor/fma_peak`: the core's FMA throughput, 12 independent accumulators, with
//!   256-bit (AVX2+FMA) and, where the CPU has it, 512-bit (AVX-512F) vectors: the
//!   ceiling for GEMM GFLOP/s. The 512-bit figure is 2x the 256-bit one on cores with
//!   full-width AVX-512 FMA units (Intel server parts, AMD Zen 5), the same on AMD Zen 4.
//!
//! Bytes counted: copy 8 B/elem, triad 12 B/elem (reads + writes, no write-allocate).

use crate::util::{default_threads, human, quick};
use criterion::{Criterion, Throughput};
use rayon::prelude::*;
use std::hint::black_box;

pub const SIZES: [usize; 5] = [1_000, 10_000, 100_000, 1_000_000, 10_000_000];

pub fn bench(c: &mut Criterion) {
    let nt = default_threads();
    let pool = rgrad::runtime::pool().unwrap();
    let mut g = c.benchmark_group("floor");
    for n in SIZES {
        let (samples, secs) = if n >= 1_000_000 { (10, 2.0) } else { (20, 1.0) };
        quick(&mut g, samples, secs);
        let b = vec![1.0f32; n];
        let cc = vec![2.0f32; n];
        let mut a = vec![0.0f32; n];
        let s = 0.5f32;
        let chunk = n.div_ceil(nt).max(1);

        g.throughput(Throughput::BytesDecimal(8 * n as u64));
        g.bench_function(format!("copy/f32/{}/cpu/1t", human(n)), |bn| {
            bn.iter(|| a.copy_from_slice(black_box(&b)));
        });

        g.throughput(Throughput::BytesDecimal(12 * n as u64));
        g.bench_function(format!("triad/f32/{}/cpu/1t", human(n)), |bn| {
            bn.iter(|| {
                for ((x, y), z) in a.iter_mut().zip(black_box(&b)).zip(black_box(&cc)) {
                    *x = y + s * z;
                }
            });
        });
        g.bench_function(format!("triad/f32/{}/cpu/{nt}t", human(n)), |bn| {
            bn.iter(|| {
                pool.install(|| {
                    a.par_chunks_mut(chunk)
                        .zip(b.par_chunks(chunk))
                        .zip(cc.par_chunks(chunk))
                        .for_each(|((x, y), z)| {
                            for ((x, y), z) in x.iter_mut().zip(y).zip(z) {
                                *x = y + s * z;
                            }
                        });
                });
            });
        });
        g.bench_function(format!("triad_fresh/f32/{}/cpu/{nt}t", human(n)), |bn| {
            bn.iter(|| {
                pool.install(|| {
                    let mut out = Vec::new();
                    b.par_iter()
                        .with_min_len(chunk)
                        .zip(cc.par_iter())
                        .map(|(y, z)| y + s * z)
                        .collect_into_vec(&mut out);
                    out
                })
            });
        });
        black_box(&a);
    }

    quick(&mut g, 20, 1.0);
    fma_peak(&mut g, nt, &pool);
    g.finish();
}

/// One FMA loop: `(name, flops per thread per iteration, fn(iters) -> checksum)`.
#[cfg(target_arch = "x86_64")]
type FmaLoop = (&'static str, u64, unsafe fn(u64) -> f64);

#[cfg(target_arch = "x86_64")]
fn fma_peak(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    nt: usize,
    pool: &rayon::ThreadPool,
) {
    const ITERS: u64 = 1 << 20;
    // 12 accumulators x lanes x 2 flops per iteration and thread
    let mut loops: Vec<FmaLoop> = Vec::new();
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        loops.push(("f32/avx2", 12 * 8 * 2, fma_f32));
        loops.push(("f64/avx2", 12 * 4 * 2, fma_f64));
    }
    if is_x86_feature_detected!("avx512f") {
        loops.push(("f32/avx512", 12 * 16 * 2, fma512_f32));
        loops.push(("f64/avx512", 12 * 8 * 2, fma512_f64));
    }
    if loops.is_empty() {
        println!("floor/fma_peak: skipped (no AVX2+FMA on this CPU)");
    }
    for (name, flops, run) in loops {
        g.throughput(Throughput::Elements(ITERS * flops));
        g.bench_function(format!("fma_peak/{name}/cpu/1t"), |bn| {
            // SAFETY: the loop's CPU features were detected above.
            bn.iter(|| unsafe { run(black_box(ITERS)) });
        });
        g.throughput(Throughput::Elements(ITERS * flops * nt as u64));
        g.bench_function(format!("fma_peak/{name}/cpu/{nt}t"), |bn| {
            // SAFETY: as above (every pool thread runs on this CPU).
            bn.iter(|| pool.broadcast(|_| unsafe { run(black_box(ITERS)) }));
        });
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn fma_peak(
    _g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    _nt: usize,
    _pool: &rayon::ThreadPool,
) {
    println!("floor/fma_peak: only written for x86_64");
}

macro_rules! fma_loop {
    ($name:ident, $vec:ident, $set1:ident, $fmadd:ident, $store:ident, $elem:ty, $lanes:expr) => {
        /// `iters` rounds of 12 independent `acc = acc·a + b` FMAs (enough in flight to
        /// cover FMA latency x ports on current cores); returns a checksum.
        ///
        /// # Safety
        /// The CPU must support AVX2 and FMA.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        #[allow(unused_unsafe)] // intrinsics are safe inside target_feature fns on newer rustc
        unsafe fn $name(iters: u64) -> f64 {
            use std::arch::x86_64::*;
            // SAFETY: the caller guarantees AVX2+FMA; stores go to a local array of
            // exactly one vector's width.
            unsafe {
                let a = $set1(0.999_999);
                let b = $set1(1e-7);
                let mut acc: [$vec; 12] = [$set1(1.0); 12];
                for _ in 0..iters {
                    for x in acc.iter_mut() {
                        *x = $fmadd(*x, a, b);
                    }
                }
                let mut sum = 0.0f64;
                for x in acc {
                    let mut lanes = [0.0 as $elem; $lanes];
                    $store(lanes.as_mut_ptr(), x);
                    sum += lanes.iter().map(|&v| v as f64).sum::<f64>();
                }
                sum
            }
        }
    };
}
fma_loop!(
    fma_f32,
    __m256,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    _mm256_storeu_ps,
    f32,
    8
);
fma_loop!(
    fma_f64,
    __m256d,
    _mm256_set1_pd,
    _mm256_fmadd_pd,
    _mm256_storeu_pd,
    f64,
    4
);

// AVX-512 loops in inline assembly: the AVX-512 intrinsics and `target_feature(enable =
// "avx512f")` need Rust 1.89, above our rust-version (1.85). They use only zmm16..zmm31,
// which code compiled without AVX-512 (all of this binary outside runtime-dispatched
// kernels) never holds values in, and which every caller treats as clobbered by a call
// (all vector registers are caller-saved in the SysV ABI); hence `inline(never)`. Dirty
// zmm16..zmm31 do not slow later SSE code the way dirty ymm/zmm0..15 do, so no
// `vzeroupper` is needed (measured on the Zen 5 machine of docs/benchmarks.md).
macro_rules! fma512_loop {
    ($name:ident, $elem:ty, $bcast:literal, $fma:literal) => {
        /// `iters` (>= 1) rounds of 12 independent 512-bit FMAs; returns 0.
        ///
        /// # Safety
        /// The CPU must support AVX-512F.
        #[cfg(target_arch = "x86_64")]
        #[inline(never)]
        unsafe fn $name(iters: u64) -> f64 {
            let (one, small): ($elem, $elem) = (1.0, 1e-4);
            // SAFETY: the caller guarantees AVX-512F; the asm reads the two locals through
            // valid pointers, touches only zmm16..zmm31 (see above) and the loop counter,
            // and uses no stack.
            unsafe {
                std::arch::asm!(
                    concat!($bcast, " zmm16, [{one}]"),
                    concat!($bcast, " zmm30, [{small}]"),
                    "vmovaps zmm31, zmm30",
                    "vmovaps zmm17, zmm16", "vmovaps zmm18, zmm16", "vmovaps zmm19, zmm16",
                    "vmovaps zmm20, zmm16", "vmovaps zmm21, zmm16", "vmovaps zmm22, zmm16",
                    "vmovaps zmm23, zmm16", "vmovaps zmm24, zmm16", "vmovaps zmm25, zmm16",
                    "vmovaps zmm26, zmm16", "vmovaps zmm27, zmm16",
                    "2:",
                    concat!($fma, " zmm16, zmm30, zmm31"), concat!($fma, " zmm17, zmm30, zmm31"),
                    concat!($fma, " zmm18, zmm30, zmm31"), concat!($fma, " zmm19, zmm30, zmm31"),
                    concat!($fma, " zmm20, zmm30, zmm31"), concat!($fma, " zmm21, zmm30, zmm31"),
                    concat!($fma, " zmm22, zmm30, zmm31"), concat!($fma, " zmm23, zmm30, zmm31"),
                    concat!($fma, " zmm24, zmm30, zmm31"), concat!($fma, " zmm25, zmm30, zmm31"),
                    concat!($fma, " zmm26, zmm30, zmm31"), concat!($fma, " zmm27, zmm30, zmm31"),
                    "dec {n}",
                    "jnz 2b",
                    one = in(reg) &one,
                    small = in(reg) &small,
                    n = inout(reg) iters.max(1) => _,
                    options(nostack, readonly),
                );
            }
            0.0
        }
    };
}
fma512_loop!(fma512_f32, f32, "vbroadcastss", "vfmadd231ps");
fma512_loop!(fma512_f64, f64, "vbroadcastsd", "vfmadd231pd");
