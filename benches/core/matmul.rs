//! Square `mm` (f32 and f64, n = 128..2048) at the pool's default size. Throughput is
//! 2n³ flops per product: criterion's `Gelem/s` reads as GFLOP/s; compare with
//! `floor/fma_peak/<dtype>/avx512/cpu/Nt` (or `avx2` on CPUs without AVX-512).
//!
//! Also a printed check, run before any product: the time of an elementwise op on the
//! pool threads before and after one GEMM. A GEMM kernel that returns with the upper
//! halves of the vector registers dirty (no `vzeroupper`) leaves its thread in a state
//! where every later SSE instruction (rgrad's kernels are compiled for baseline x86-64,
//! and libm) is slowed, on some CPUs several times over, until the next `vzeroupper`.

use crate::util::{clean_upper_state, default_threads, f32_tensor, f64_tensor, quick};
use criterion::{Criterion, SamplingMode, Throughput};
use rgrad::ops;
use std::hint::black_box;
use std::sync::Once;
use std::time::Instant;

pub fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("matmul");
    quick(&mut g, 20, 1.0);
    // compare with elementwise/tanh/f32/100k/cpu (same op, before any GEMM ran)
    let x = f32_tensor(&[100_000]);
    g.throughput(Throughput::BytesDecimal(8 * 100_000));
    g.bench_function("tanh_after_gemm/f32/100k/cpu", |bn| {
        static REPORT: Once = Once::new();
        REPORT.call_once(upper_state_check); // runs a GEMM
        bn.iter(|| ops::tanh(black_box(&x)).unwrap());
    });
    for n in [128usize, 256, 512, 1024, 2048] {
        if n >= 1024 {
            // ~0.1-1 s per product: a fixed count of single runs
            quick(&mut g, 10, 4.0);
            g.sampling_mode(SamplingMode::Flat);
        } else {
            quick(&mut g, 20, 1.5);
            g.sampling_mode(SamplingMode::Auto);
        }
        g.throughput(Throughput::Elements(2 * (n as u64).pow(3)));
        let (a, b) = (f32_tensor(&[n, n]), f32_tensor(&[n, n]));
        g.bench_function(format!("mm/f32/{n}x{n}/cpu"), |bn| {
            bn.iter(|| ops::mm(black_box(&a), black_box(&b)).unwrap());
        });
        let (a, b) = (f64_tensor(&[n, n]), f64_tensor(&[n, n]));
        g.bench_function(format!("mm/f64/{n}x{n}/cpu"), |bn| {
            bn.iter(|| ops::mm(black_box(&a), black_box(&b)).unwrap());
        });
    }
    g.finish();
}

/// Prints the median time of `tanh` and `exp` on 100k float32 elements (split over the
/// pool's threads) before and after one 128x784x512 GEMM.
fn upper_state_check() {
    let x = f32_tensor(&[100_000]);
    let median = |f: &dyn Fn() -> rgrad::Result<rgrad::Tensor>| {
        let mut t: Vec<f64> = (0..101)
            .map(|_| {
                let s = Instant::now();
                black_box(f().unwrap());
                s.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    };
    let tanh = || ops::tanh(black_box(&x));
    let exp = || ops::exp(black_box(&x));
    clean_upper_state(); // earlier benches (graph/mlp_step) ran GEMMs too
    let before = (median(&tanh), median(&exp));
    let (a, b) = (f32_tensor(&[128, 784]), f32_tensor(&[784, 512]));
    black_box(ops::mm(&a, &b).unwrap());
    let after = (median(&tanh), median(&exp));
    println!(
        "matmul/upper_state_check ({}t): tanh/f32/100k {:.1} us before a GEMM, {:.1} us after \
         ({:.2}x); exp/f32/100k {:.1} us, {:.1} us ({:.2}x)",
        default_threads(),
        before.0,
        after.0,
        after.0 / before.0,
        before.1,
        after.1,
        after.1 / before.1
    );
}
