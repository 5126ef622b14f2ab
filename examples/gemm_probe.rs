//! Times the float GEMM at a few shapes (GFLOP/s), for tuning: `cargo run --release
//! --example gemm_probe [threads]`. benches/gemm_bench.py compares with torch.

use rgrad::backend::cpu::matmul::{MatView, gemm};
use std::time::Instant;

/// Seconds for `iters` x 24 independent 16-lane FMAs (this core's peak, now).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn peak(iters: usize) -> f64 {
    use std::arch::x86_64::*;
    let mut acc = [_mm512_set1_ps(0.0); 24];
    let (x, y) = (_mm512_set1_ps(0.999_999), _mm512_set1_ps(1e-7));
    let t = Instant::now();
    for _ in 0..iters {
        for a in acc.iter_mut() {
            *a = _mm512_fmadd_ps(*a, x, y);
        }
    }
    let e = t.elapsed().as_secs_f64();
    std::hint::black_box(acc);
    e
}

fn main() {
    let threads: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    rgrad::runtime::set_num_threads(threads).ok();
    let shapes = [
        (128, 784, 512, "NT"),
        (128, 512, 512, "NT"),
        (128, 512, 10, "NT"),
        (128, 512, 512, "NN"),
        (512, 128, 784, "TN"),
        (512, 128, 512, "TN"),
        (10, 128, 512, "TN"),
        (1024, 1024, 1024, "NN"),
    ];
    let only = std::env::args().nth(2).unwrap_or_default();
    for (m, k, n, lay) in shapes {
        if !format!("{m}x{k}x{n} {lay}").contains(only.as_str()) {
            continue;
        }
        let a: Vec<f32> = (0..m * k).map(|i| (i % 13) as f32 * 0.1).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i % 7) as f32 * 0.1).collect();
        let va = if &lay[..1] == "N" {
            MatView {
                data: &a,
                offset: 0,
                rows: m,
                cols: k,
                row_stride: k,
                col_stride: 1,
            }
        } else {
            MatView {
                data: &a,
                offset: 0,
                rows: m,
                cols: k,
                row_stride: 1,
                col_stride: m,
            }
        };
        let vb = if &lay[1..] == "N" {
            MatView {
                data: &b,
                offset: 0,
                rows: k,
                cols: n,
                row_stride: n,
                col_stride: 1,
            }
        } else {
            MatView {
                data: &b,
                offset: 0,
                rows: k,
                cols: n,
                row_stride: 1,
                col_stride: k,
            }
        };
        let mut c = vec![0f32; m * n];
        let flops = 2.0 * (m * n * k) as f64;
        let reps = ((2e8 / flops) as usize).max(3);
        let mut best = f64::MAX;
        let mut peak_best = f64::MAX;
        // the peak loop does as many flops as `reps` products
        let iters = (flops * reps as f64 / (24.0 * 32.0)) as usize;
        for _ in 0..9 {
            let t = Instant::now();
            for _ in 0..reps {
                gemm(va, vb, &mut c, threads > 1);
            }
            best = best.min(t.elapsed().as_secs_f64() / reps as f64);
            // SAFETY: AVX-512 is present on the machines this probe is run on.
            peak_best = peak_best.min(unsafe { peak(iters) } / reps as f64);
        }
        println!(
            "{m}x{k}x{n} {lay}: {:8.1} us {:7.1} GFLOP/s  {:5.1}% of the FMA peak ({:.1})",
            best * 1e6,
            flops / best / 1e9,
            100.0 * peak_best / best,
            flops / peak_best / 1e9
        );
    }
}
