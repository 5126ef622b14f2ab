//! Reductions and softmax through `rgrad::ops`, float32, default pool size.
//!
//! Bytes counted: the input read once (the small outputs are ignored), softmax and
//! log_softmax also their full-size output.

use crate::floors::SIZES;
use crate::util::{f32_tensor, human, quick};
use criterion::{Criterion, Throughput};
use rgrad::ops;
use std::hint::black_box;

pub fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("reduce");
    for n in SIZES {
        // large sizes take milliseconds per call: fewer, longer samples
        let (samples, secs) = if n >= 1_000_000 { (10, 2.0) } else { (20, 1.0) };
        quick(&mut g, samples, secs);
        let x = f32_tensor(&[n]);
        g.throughput(Throughput::BytesDecimal(4 * n as u64));
        g.bench_function(format!("sum_all/f32/{}/cpu", human(n)), |bn| {
            bn.iter(|| ops::sum(black_box(&x), None, false).unwrap());
        });
    }

    quick(&mut g, 20, 1.5);
    let (r, k) = (1000, 1000);
    let x = f32_tensor(&[r, k]);
    let shape = format!("{r}x{k}");
    g.throughput(Throughput::BytesDecimal(4 * (r * k) as u64));
    for (name, dim) in [("sum_dim1", -1i64), ("sum_dim0", 0)] {
        g.bench_function(format!("{name}/f32/{shape}/cpu"), |bn| {
            bn.iter(|| ops::sum(black_box(&x), Some(&[dim]), false).unwrap());
        });
    }
    g.bench_function(format!("mean_dim1/f32/{shape}/cpu"), |bn| {
        bn.iter(|| ops::mean(black_box(&x), Some(&[-1]), false).unwrap());
    });
    g.bench_function(format!("amax_dim1/f32/{shape}/cpu"), |bn| {
        bn.iter(|| ops::amax(black_box(&x), Some(&[-1]), false, true, false).unwrap());
    });
    g.throughput(Throughput::BytesDecimal(8 * (r * k) as u64));
    for (name, log) in [("softmax_dim1", false), ("log_softmax_dim1", true)] {
        g.bench_function(format!("{name}/f32/{shape}/cpu"), |bn| {
            bn.iter(|| ops::softmax(black_box(&x), -1, log).unwrap());
        });
    }
    g.finish();
}
