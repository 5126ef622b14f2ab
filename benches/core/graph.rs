//! Autograd cost without Python: graph build, backward and free per node on long scalar
//! chains, the Rust floor of bench.py's W1/W2/W3, backward of wide graphs at 1 and N
//! threads, and arena reuse (slots and heap allocations per op in steady state).
//!
//! The graphs are those of benches/bench.py: the chain cycles add, mul, sin, exp, tanh
//! (tensor operands); the wide graph is 32 branches x 20 ops from one leaf, summed.
//! Throughput `elem/s` = nodes (or ops) per second.

use crate::alloc_count;
use crate::util::{
    backward, default_threads, f32_full, f32_leaf, f32_tensor, human, quick, sc, use_threads,
};
use criterion::{BatchSize, Criterion, Throughput};
use rgrad::autograd::grad_mode::with_grad_mode;
use rgrad::autograd::graph::{arena_capacity, live_nodes};
use rgrad::ops::{self, Operand, Reduction};
use rgrad::{Scalar, Tensor};
use std::hint::black_box;
use std::sync::Once;

const CHAIN_NODES: usize = 10_000;
const CHAIN_OPS: usize = 1_000;
/// Nodes of `wide`: 32 x 20 branch ops, 31 adds, the final sum.
const WIDE_NODES: usize = 32 * 20 + 31 + 1;

/// `n` ops cycling add, mul, sin, exp, tanh (bench.py's `chain`).
fn chain(x: &Tensor, n: usize, a: &Tensor, b: &Tensor) -> Tensor {
    let mut h = x.clone();
    for i in 0..n {
        h = match i % 5 {
            0 => ops::add(&h, a),
            1 => ops::mul(&h, b),
            2 => ops::sin(&h),
            3 => ops::exp(&h),
            _ => ops::tanh(&h),
        }
        .unwrap();
    }
    h
}

/// 32 branches of 20 elementwise ops from `x`, summed (bench.py's W4), then `.sum()`.
fn wide(x: &Tensor) -> Tensor {
    let branch = |bi: usize| {
        let mut h = ops::mul_scalar(x, sc(1.0 + bi as f64 / 32.0)).unwrap();
        for k in 0..19 {
            h = match (bi + k) % 5 {
                0 => ops::sin(&h),
                1 => ops::tanh(&h),
                2 => ops::mul(&h, x),
                3 => ops::add_scalar(&h, sc(0.01 * bi as f64)),
                _ => ops::exp(&h),
            }
            .unwrap();
        }
        h
    };
    let mut total = branch(0);
    for bi in 1..32 {
        total = ops::add(&total, &branch(bi)).unwrap();
    }
    ops::sum(&total, None, false).unwrap()
}

/// Operands of a chain on tensors of `shape`: (leaf, a, b).
fn chain_inputs(shape: &[usize]) -> (Tensor, Tensor, Tensor) {
    (f32_leaf(shape), f32_full(shape, 0.1), f32_full(shape, 0.9))
}

pub fn bench(c: &mut Criterion) {
    let nt = default_threads();
    use_threads(nt);
    let mut g = c.benchmark_group("graph");
    // milliseconds per iteration, plus an untimed setup (graph build) for most
    quick(&mut g, 10, 2.5);

    // ---- long scalar chains: per node -------------------------------------------------
    let (x, a, b) = chain_inputs(&[]); // 0-d, as bench.py's W5
    let nodes = human(CHAIN_NODES);
    g.throughput(Throughput::Elements(CHAIN_NODES as u64));
    g.bench_function(format!("chain_build/f32/scalar/{nodes}/cpu"), |bn| {
        bn.iter_batched(
            || (),
            |()| chain(&x, CHAIN_NODES, &a, &b),
            BatchSize::PerIteration, // the graph is dropped outside the timing
        );
    });
    g.bench_function(format!("chain_backward/f32/scalar/{nodes}/cpu"), |bn| {
        bn.iter_batched(
            || chain(&x, CHAIN_NODES, &a, &b),
            |y| {
                backward(&y);
                y
            },
            BatchSize::PerIteration,
        );
    });
    g.bench_function(format!("chain_free/f32/scalar/{nodes}/cpu"), |bn| {
        bn.iter_batched(
            || {
                let y = chain(&x, CHAIN_NODES, &a, &b);
                backward(&y);
                y
            },
            drop, // the last reference: releases CHAIN_NODES nodes
            BatchSize::PerIteration,
        );
    });

    // ---- W1 / W2 without Python: a 1,000-op chain, forward + backward, per op ---------
    g.throughput(Throughput::Elements(CHAIN_OPS as u64));
    for numel in [1usize, 4096] {
        let (x, a, b) = chain_inputs(&[numel]);
        g.bench_function(
            format!("chain_fwd_bwd/f32/{numel}x{}ops/cpu", human(CHAIN_OPS)),
            |bn| {
                bn.iter(|| {
                    let y = ops::sum(&chain(&x, CHAIN_OPS, &a, &b), None, false).unwrap();
                    backward(&y);
                    x.set_grad(None).unwrap();
                });
            },
        );
    }

    // ---- wide graphs: backward at 1 thread and at N threads, per node -----------------
    g.throughput(Throughput::Elements(WIDE_NODES as u64));
    for numel in [4096usize, 65536] {
        let x = f32_leaf(&[numel]);
        for threads in dedup([1, nt]) {
            g.bench_function(
                format!("wide_backward/f32/32x20x{}/cpu/{threads}t", human_k(numel)),
                |bn| {
                    use_threads(threads);
                    bn.iter_batched(
                        || wide(&x),
                        |y| {
                            backward(&y);
                            x.set_grad(None).unwrap();
                            y
                        },
                        BatchSize::PerIteration,
                    );
                },
            );
        }
        use_threads(nt);
    }

    // ---- arena reuse ------------------------------------------------------------------
    let x = f32_leaf(&[4096]);
    g.bench_function("arena_steady_state/f32/32x20x4K/cpu", |bn| {
        static REPORT: Once = Once::new();
        REPORT.call_once(arena_report);
        bn.iter(|| {
            backward(&wide(&x));
            x.set_grad(None).unwrap();
        });
    });

    // ---- W3 without Python: one MLP training step (last: it runs GEMMs, see matmul.rs) -
    g.throughput(Throughput::Elements(1));
    let mlp = Mlp::new();
    g.bench_function("mlp_step/f32/784-512-512-10/b128/cpu", |bn| {
        bn.iter(|| mlp.step());
    });
    g.finish();
}

fn dedup(v: [usize; 2]) -> Vec<usize> {
    if v[0] == v[1] { vec![v[0]] } else { v.to_vec() }
}

/// 4096 -> "4K", 65536 -> "64K".
fn human_k(n: usize) -> String {
    if n.is_multiple_of(1024) {
        format!("{}K", n / 1024)
    } else {
        n.to_string()
    }
}

/// Prints arena growth and heap allocations per op once the process is warm: building
/// and back-propagating the same graph again must take no new arena slot.
fn arena_report() {
    let x = f32_leaf(&[4096]);
    let step = || {
        backward(&wide(&x));
        x.set_grad(None).unwrap();
    };
    for _ in 0..5 {
        step();
    }
    let live0 = live_nodes();
    let per_step = {
        let y = wide(&x);
        let n = live_nodes() - live0;
        drop(y);
        n
    };
    let (cap0, steps) = (arena_capacity(), 50);
    for _ in 0..steps {
        step();
    }
    let grown = arena_capacity() - cap0;
    println!(
        "graph/arena: {grown} new slots over {steps} steps of {per_step} nodes \
         ({:.4} per op, expected 0); live nodes back to baseline: {}",
        grown as f64 / (steps * per_step) as f64,
        live_nodes() == live0
    );

    // Heap allocations per op on a scalar chain (tensor records, buffers, node contents):
    // forward (recording), backward (one node each), free.
    let (x, a, b) = chain_inputs(&[]);
    let y = chain(&x, CHAIN_OPS, &a, &b); // warm
    backward(&y);
    drop(y);
    for threads in dedup([1, default_threads()]) {
        use_threads(threads);
        let (y, fwd) = alloc_count::count(|| chain(&x, CHAIN_OPS, &a, &b));
        let ((), bwd) = alloc_count::count(|| backward(&y));
        let ((), free) = alloc_count::count(|| drop(y));
        let ((), nograd) = alloc_count::count(|| {
            with_grad_mode(false, || drop(chain(&x, CHAIN_OPS, &a, &b)));
        });
        let per = |n: u64| n as f64 / CHAIN_OPS as f64;
        println!(
            "graph/heap_allocs_per_op (scalar chain, {threads}t): forward {:.2}, backward {:.2}, \
             free {:.2}, forward under no_grad {:.2}",
            per(fwd),
            per(bwd),
            per(free),
            per(nograd)
        );
    }
    use_threads(default_threads());
    x.set_grad(None).unwrap();
}

/// bench.py's W3: 784-512-512-10, batch 128, relu, log_softmax + nll, SGD under no_grad.
struct Mlp {
    params: Vec<Tensor>,
    x: Tensor,
    y: Tensor,
}

impl Mlp {
    fn new() -> Mlp {
        let param = |shape: &[usize]| {
            let scale = 1.0 / (*shape.last().unwrap() as f64).sqrt();
            let t = ops::mul_scalar(&f32_tensor(shape), sc(scale)).unwrap();
            t.set_requires_grad(true).unwrap();
            t
        };
        let params = vec![
            param(&[512, 784]),
            param(&[512]),
            param(&[512, 512]),
            param(&[512]),
            param(&[10, 512]),
            param(&[10]),
        ];
        let labels = (0..128).map(|i| (i * 7) % 10).collect();
        Mlp {
            params,
            x: f32_tensor(&[128, 784]),
            y: rgrad::testing::tensor_i64(labels, &[128]),
        }
    }

    fn step(&self) {
        let p = &self.params;
        let h = ops::relu(&ops::linear(&self.x, &p[0], Some(&p[1])).unwrap()).unwrap();
        let h = ops::relu(&ops::linear(&h, &p[2], Some(&p[3])).unwrap()).unwrap();
        let logits = ops::linear(&h, &p[4], Some(&p[5])).unwrap();
        let logp = ops::softmax(&logits, 1, true).unwrap();
        let loss = ops::nll_loss(&logp, &self.y, Reduction::Mean, -100).unwrap();
        backward(black_box(&loss));
        with_grad_mode(false, || {
            for t in p {
                let g = t.grad().unwrap();
                ops::sub_(t, Operand::T(&g), Scalar::Float(0.01)).unwrap();
                t.set_grad(None).unwrap();
            }
        });
    }
}
