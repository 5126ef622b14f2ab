//! Elementwise ops through `rgrad::ops` (the real path: dispatch, output allocation,
//! kernel, intra-op threads above the kernels' parallel threshold), inputs that do not
//! require grad, 1e3..1e7 float32 elements, at the pool's default size.
//!
//! Bytes counted per element: binary 12 (two reads, one write), unary and tensor·scalar
//! 8. Compare with `floor/triad_fresh` (same bytes per element as `add`).

use crate::floors::SIZES;
use crate::util::{f32_tensor, human, quick, sc};
use criterion::{Criterion, Throughput};
use rgrad::{Tensor, ops};
use std::hint::black_box;

type UnaryFn = fn(&Tensor) -> rgrad::Result<Tensor>;

pub fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("elementwise");
    for n in SIZES {
        // large sizes take milliseconds per call: fewer, longer samples
        let (samples, secs) = if n >= 1_000_000 { (10, 2.0) } else { (20, 1.0) };
        quick(&mut g, samples, secs);
        let (a, b) = (f32_tensor(&[n]), f32_tensor(&[n]));
        g.throughput(Throughput::BytesDecimal(12 * n as u64));
        g.bench_function(format!("add/f32/{}/cpu", human(n)), |bn| {
            bn.iter(|| ops::add(black_box(&a), black_box(&b)).unwrap());
        });
        g.throughput(Throughput::BytesDecimal(8 * n as u64));
        g.bench_function(format!("mul_scalar/f32/{}/cpu", human(n)), |bn| {
            bn.iter(|| ops::mul_scalar(black_box(&a), sc(0.5)).unwrap());
        });
        for (name, f) in [("exp", ops::exp as UnaryFn), ("tanh", ops::tanh as UnaryFn)] {
            g.bench_function(format!("{name}/f32/{}/cpu", human(n)), |bn| {
                bn.iter(|| f(black_box(&a)).unwrap());
            });
        }
    }
    g.finish();
}
