//! Shared helpers: f32 tensors, backward, thread-count switching, group settings.

use criterion::{BenchmarkGroup, measurement::WallTime};
use rgrad::autograd::engine::{Options, run_backward};
use rgrad::storage::Buffer;
use rgrad::{Scalar, Tensor};
use std::time::Duration;

/// A float32 tensor of `shape` with deterministic values spread over [-1, 1).
pub fn f32_tensor(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let v = (0..n)
        .map(|i| ((i.wrapping_mul(2_654_435_761) % 2000) as f32) / 1000.0 - 1.0)
        .collect();
    Tensor::from_buffer(Buffer::F32(v), shape)
}

/// The same as float64.
pub fn f64_tensor(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let v = (0..n)
        .map(|i| ((i.wrapping_mul(2_654_435_761) % 2000) as f64) / 1000.0 - 1.0)
        .collect();
    Tensor::from_buffer(Buffer::F64(v), shape)
}

/// A float32 tensor filled with `v`.
pub fn f32_full(shape: &[usize], v: f32) -> Tensor {
    Tensor::from_buffer(Buffer::F32(vec![v; shape.iter().product()].into()), shape)
}

/// A float32 leaf that requires grad.
pub fn f32_leaf(shape: &[usize]) -> Tensor {
    let t = f32_tensor(shape);
    t.set_requires_grad(true).unwrap();
    t
}

pub fn sc(v: f64) -> Scalar {
    Scalar::Float(v)
}

/// `y.backward(ones)` (accumulates into the leaves' `.grad`, frees the graph's buffers).
pub fn backward(y: &Tensor) {
    let ones = f32_full(&y.shape(), 1.0);
    let opts = Options {
        accumulate: true,
        ..Options::default()
    };
    run_backward(std::slice::from_ref(y), &[ones], &[], opts).unwrap();
}

/// The pool size a run starts with (RGRAD_NUM_THREADS or the core count).
pub fn default_threads() -> usize {
    use std::sync::OnceLock;
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(rgrad::runtime::num_threads)
}

/// Resizes rgrad's pool (only when it changes: building a pool spawns threads).
pub fn use_threads(n: usize) {
    default_threads();
    if rgrad::runtime::num_threads() != n {
        rgrad::runtime::set_num_threads(n).unwrap();
    }
}

/// Short, uniform settings: the suite must finish in minutes on a 2-core machine.
pub fn quick(g: &mut BenchmarkGroup<'_, WallTime>, samples: usize, measure_s: f64) {
    g.sample_size(samples)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs_f64(measure_s));
}

/// `1000`, `10k`, `1M`... for ids.
pub fn human(n: usize) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

/// Clears the upper halves of the vector registers on every pool thread (`vzeroupper`),
/// undoing the state a GEMM kernel may leave behind (see matmul.rs).
pub fn clean_upper_state() {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx") {
        #[target_feature(enable = "avx")]
        #[allow(unused_unsafe)] // the intrinsic is safe inside target_feature fns on newer rustc
        unsafe fn zeroupper() {
            // SAFETY: AVX is enabled for this fn and was detected by the caller.
            unsafe { std::arch::x86_64::_mm256_zeroupper() }
        }
        let pool = rgrad::runtime::pool().unwrap();
        // SAFETY: AVX was detected above; every pool thread runs on this CPU.
        pool.broadcast(|_| unsafe { zeroupper() });
        // SAFETY: as above, for the calling thread.
        unsafe { zeroupper() };
    }
}
