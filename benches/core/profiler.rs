//! The profiler's cost per recorded event (issue 16: ≤ 50 ns), and what it adds to an op.
//!
//! - `profiler/range/on`: one `begin` + end of a range while a session records (the
//!   recorder alone); `profiler/range/off`: the same call with no session.
//! - `profiler/op/mul/f32/1/{off,on}`: `mul` of two 1-element tensors that require grad
//!   (forward, node recorded), without and with a session: the difference is what
//!   profiling adds to a small op (its event plus numbering its node).
//!
//! A session's buffers grow while it records: each sample stops and restarts it.

use criterion::Criterion;
use rgrad::profiler::{self, Config, Scope};
use std::borrow::Cow;
use std::hint::black_box;

pub fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("profiler");
    g.bench_function("range/off", |b| {
        b.iter(|| {
            black_box(profiler::begin(
                Cow::Borrowed("aten::mul"),
                Scope::Function,
                Vec::new,
            ))
        })
    });
    g.bench_function("range/on", |b| {
        b.iter_custom(|iters| {
            profiler::start(Config::default()).unwrap();
            let t = std::time::Instant::now();
            for _ in 0..iters {
                black_box(profiler::begin(
                    Cow::Borrowed("aten::mul"),
                    Scope::Function,
                    Vec::new,
                ));
            }
            let d = t.elapsed();
            drop(profiler::stop().unwrap());
            d
        })
    });
    let x = rgrad::testing::leaf(vec![1.0], &[1]);
    let y = rgrad::testing::leaf(vec![2.0], &[1]);
    g.bench_function("op/mul/f32/1/off", |b| {
        b.iter(|| black_box(rgrad::ops::mul(&x, &y).unwrap()))
    });
    g.bench_function("op/mul/f32/1/on", |b| {
        b.iter_custom(|iters| {
            profiler::start(Config::default()).unwrap();
            let t = std::time::Instant::now();
            for _ in 0..iters {
                black_box(rgrad::ops::mul(&x, &y).unwrap());
            }
            let d = t.elapsed();
            drop(profiler::stop().unwrap());
            d
        })
    });
    g.finish();
}
