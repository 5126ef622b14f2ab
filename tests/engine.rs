//! Engine tests: determinism across pool sizes, very deep graphs, freed graphs,
//! unused inputs, and concurrent use from many threads.
//!
//! (The hook error-path test needs crate-private access and lives in
//! `src/testing.rs`'s test module.)
//!
//! Every test here takes `SERIAL`: `live_nodes()` counts nodes process-wide and
//! `set_num_threads` swaps the shared pool, so these tests must not overlap.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may fail loudly

use rgrad::autograd::engine::{Options, run_backward};
use rgrad::autograd::graph::live_nodes;
use rgrad::ops;
use rgrad::testing::{assert_values, leaf, spread, tensor, to_vec};
use rgrad::{Error, Result, Scalar, Tensor};
use std::sync::{Mutex, MutexGuard};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn sc(v: f64) -> Scalar {
    Scalar::Float(v)
}

fn ones_like(t: &Tensor) -> Tensor {
    tensor(vec![1.0; t.numel()], &t.shape())
}

/// `y.backward(ones, retain_graph)`: accumulates into every leaf's `.grad`.
fn backward(y: &Tensor, retain_graph: bool) -> Result<()> {
    let opts = Options {
        retain_graph,
        create_graph: false,
        accumulate: true,
        allow_unused: false,
        ..Options::default()
    };
    run_backward(std::slice::from_ref(y), &[ones_like(y)], &[], opts).map(|_| ())
}

/// `torch.autograd.grad(y, inputs, ones)` with the given flags.
fn grad(y: &Tensor, inputs: &[Tensor], allow_unused: bool) -> Result<Vec<Option<Tensor>>> {
    let opts = Options {
        retain_graph: false,
        create_graph: false,
        accumulate: false,
        allow_unused,
        ..Options::default()
    };
    run_backward(std::slice::from_ref(y), &[ones_like(y)], inputs, opts)
}

fn grad_values(t: &Tensor) -> Result<Vec<f64>> {
    t.grad()
        .map(|g| to_vec(&g))
        .ok_or_else(|| Error::runtime("tensor has no .grad"))
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

// ---- (1) determinism whatever the pool size ----------------------------------------

/// 32 branches of 20 elementwise ops each from one 4096-element leaf, summed; the
/// branches also multiply by `x` again, so `x` receives many gradients whose float sum
/// depends on the order they are added in.
fn wide_graph_grad() -> Result<Vec<f64>> {
    let x = leaf(spread(4096, -1.0, 1.0), &[4096]);
    let mut total: Option<Tensor> = None;
    for b in 0..32usize {
        let mut h = ops::mul_scalar(&x, sc(1.0 + b as f64 / 32.0))?;
        for k in 0..19usize {
            h = match (b + k) % 7 {
                0 => ops::sin(&h)?,
                1 => ops::tanh(&h)?,
                2 => ops::mul(&h, &x)?,
                3 => ops::add_scalar(&h, sc(0.01 * b as f64))?,
                4 => ops::sigmoid(&h)?,
                5 => ops::mul(&h, &h)?,
                _ => ops::sub(&h, &ops::mul_scalar(&x, sc(0.5))?)?,
            };
        }
        total = Some(match total {
            None => h,
            Some(t) => ops::add(&t, &h)?,
        });
    }
    let total = total.ok_or_else(|| Error::runtime("no branches"))?;
    backward(&ops::sum(&total, None, false)?, false)?;
    grad_values(&x)
}

#[test]
fn wide_graph_gradients_are_bitwise_identical_for_any_pool_size() -> Result<()> {
    let _g = serial();
    let before = rgrad::runtime::num_threads();
    let mut results = Vec::new();
    for threads in [1usize, 2, 4] {
        rgrad::runtime::set_num_threads(threads).unwrap();
        assert_eq!(rgrad::runtime::num_threads(), threads);
        results.push((threads, wide_graph_grad()));
    }
    rgrad::runtime::set_num_threads(before).unwrap();
    let mut reference: Option<Vec<f64>> = None;
    for (threads, r) in results {
        let g = r?;
        assert_eq!(g.len(), 4096);
        assert!(
            g.iter().all(|v| v.is_finite()),
            "non-finite gradient with {threads} threads"
        );
        assert!(g.iter().any(|&v| v != 0.0));
        match &reference {
            None => reference = Some(g),
            Some(r1) => {
                let diff = bits(r1)
                    .iter()
                    .zip(bits(&g))
                    .filter(|(a, b)| **a != *b)
                    .count();
                assert_eq!(
                    diff, 0,
                    "{diff} of 4096 gradient elements differ in their bits between 1 and {threads} threads"
                );
            }
        }
    }
    Ok(())
}

// ---- (2) a 100,000-node chain --------------------------------------------------------

#[test]
fn deep_chain_builds_backprops_and_drops_without_overflow() -> Result<()> {
    let _g = serial();
    const N: usize = 100_000;
    let start = live_nodes();
    let x = leaf(vec![1.0], &[]);
    // y = sin(sin(...sin(x))) N times; every node saves its input, whose grad_fn is the
    // previous node, so the chain is held both by edges and by saved tensors.
    let mut y = x.clone();
    let mut xs = Vec::with_capacity(N);
    let mut v = 1.0f64;
    for _ in 0..N {
        xs.push(v);
        v = v.sin();
        y = ops::sin(&y)?;
    }
    assert!(
        live_nodes() >= start + N,
        "live nodes {} after building {N} from {start}",
        live_nodes()
    );
    assert_eq!(to_vec(&y), vec![v]);
    backward(&y, false)?;
    // d sinᴺ(x)/dx = Π_k cos(x_k), multiplied in the order backward does (from the top)
    let mut want = 1.0f64;
    for &xk in xs.iter().rev() {
        want *= xk.cos();
    }
    let got = grad_values(&x)?[0];
    assert!(got.is_finite() && got > 0.0);
    assert!(
        (got - want).abs() <= 1e-12 * want.abs(),
        "grad {got} vs Π cos = {want}"
    );
    drop(y);
    assert_eq!(
        live_nodes(),
        start,
        "every node is freed once the chain is dropped"
    );

    // the same chain dropped without ever running backward (saved tensors still held)
    let mut y = x.clone();
    for _ in 0..N {
        y = ops::sin(&y)?;
    }
    assert!(live_nodes() >= start + N);
    drop(y);
    assert_eq!(live_nodes(), start);
    Ok(())
}

#[test]
fn slots_freed_on_another_thread_are_counted_and_reused() -> Result<()> {
    // Each thread keeps a cache of free slots: nodes built on one thread and dropped on
    // another, or by a thread that then exits, still count as freed and are reused.
    let _g = serial();
    use rgrad::autograd::graph::arena_capacity;
    let start = live_nodes();
    let x = leaf(vec![0.5], &[]);
    let build = |x: &Tensor| -> Result<Tensor> {
        let mut y = x.clone();
        for _ in 0..1000 {
            y = ops::sin(&y)?;
        }
        Ok(y)
    };
    // built here, dropped by another thread
    let y = build(&x)?;
    assert!(live_nodes() >= start + 1000);
    std::thread::spawn(move || drop(y)).join().unwrap();
    assert_eq!(live_nodes(), start);
    // built by a thread that exits, dropped here
    let x2 = x.clone();
    let y = std::thread::spawn(move || build(&x2)).join().unwrap()?;
    assert_eq!(live_nodes(), start + 1000);
    drop(y);
    assert_eq!(live_nodes(), start);
    // and the slots are reused: building again does not grow the arena
    let cap = arena_capacity();
    for _ in 0..3 {
        let y = std::thread::spawn({
            let x = x.clone();
            move || build(&x)
        })
        .join()
        .unwrap()?;
        drop(build(&x)?);
        drop(y);
    }
    assert_eq!(live_nodes(), start);
    assert!(
        arena_capacity() <= cap + 2 * 1000,
        "arena grew from {cap} to {}",
        arena_capacity()
    );
    Ok(())
}

// ---- (3) backward twice ----------------------------------------------------------------

#[test]
fn second_backward_without_retain_graph_is_graph_freed() -> Result<()> {
    let _g = serial();
    let x = leaf(vec![1.0, -2.0, 3.0], &[3]);
    // y = Σ x·x saves x; dy/dx = 2x
    let y = ops::sum(&ops::mul(&x, &x)?, None, false)?;
    backward(&y, false)?;
    assert_eq!(grad_values(&x)?, vec![2.0, -4.0, 6.0]);
    let err = backward(&y, false).err();
    assert!(
        matches!(err, Some(Error::GraphFreed)),
        "expected GraphFreed, got {err:?}"
    );
    let msg = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        msg.starts_with("Trying to backward through the graph a second time"),
        "{msg}"
    );
    assert_eq!(
        grad_values(&x)?,
        vec![2.0, -4.0, 6.0],
        "the failed backward accumulated nothing"
    );

    // with retain_graph=true it works, and .grad accumulates: 2x, then 4x, then 6x
    let z = leaf(vec![1.0, -2.0, 3.0], &[3]);
    let y = ops::sum(&ops::mul(&z, &z)?, None, false)?;
    backward(&y, true)?;
    backward(&y, true)?;
    assert_eq!(grad_values(&z)?, vec![4.0, -8.0, 12.0]);
    backward(&y, false)?; // the last one may free the graph
    assert_eq!(grad_values(&z)?, vec![6.0, -12.0, 18.0]);
    assert!(matches!(backward(&y, false), Err(Error::GraphFreed)));

    // a graph that saved nothing can be walked again (as in torch): y = Σ (x + 1)
    let w = leaf(vec![0.5, 0.25], &[2]);
    let y = ops::sum(&ops::add_scalar(&w, sc(1.0))?, None, false)?;
    backward(&y, false)?;
    backward(&y, false)?;
    assert_eq!(grad_values(&w)?, vec![2.0, 2.0]);
    Ok(())
}

// ---- an error inside a backward formula ----------------------------------------------

#[test]
fn modified_saved_tensor_errors_and_the_engine_recovers() -> Result<()> {
    let _g = serial();
    let x = leaf(vec![0.5, 1.5], &[2]);
    // z = Σ sin(y) saves y; y is then modified in place, so backward must refuse
    let y = ops::mul_scalar(&x, sc(1.0))?;
    let z = ops::sum(&ops::sin(&y)?, None, false)?;
    ops::mul_(&y, ops::Operand::S(sc(2.0)))?;
    let msg = backward(&z, false)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        msg.starts_with("one of the variables needed for gradient computation has been modified by an inplace operation"),
        "{msg}"
    );
    assert!(
        msg.contains("is at version 1; expected version 0 instead"),
        "{msg}"
    );
    assert!(x.grad().is_none());
    // the same through a view: sin saved a row of y, and y was modified as a whole
    let y = ops::mul_scalar(&ops::unsqueeze(&x, 0)?, sc(1.0))?;
    let z = ops::sum(&ops::sin(&ops::select(&y, 0, 0)?)?, None, false)?;
    ops::mul_(&y, ops::Operand::S(sc(2.0)))?;
    assert!(
        matches!(backward(&z, false), Err(Error::Runtime(m)) if m.contains("modified by an inplace operation"))
    );
    // the engine is fine afterwards: z = Σ sin(x); dz/dx = cos(x)
    backward(&ops::sum(&ops::sin(&x)?, None, false)?, false)?;
    assert_values(
        &x.grad().ok_or_else(|| Error::runtime("no grad"))?,
        &[0.5f64.cos(), 1.5f64.cos()],
        0.0,
        1e-15,
    );
    Ok(())
}

// ---- (4) grad of an unused input -------------------------------------------------------

#[test]
fn grad_of_unused_input_needs_allow_unused() -> Result<()> {
    let _g = serial();
    let x = leaf(vec![1.0, 2.0], &[2]);
    let unused = leaf(vec![5.0], &[1]);
    let build = || -> Result<Tensor> { ops::sum(&ops::mul_scalar(&x, sc(3.0))?, None, false) };

    let err = grad(&build()?, &[x.clone(), unused.clone()], false)
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some(
            "The differentiated Tensor at index 1 appears to not have been used in the graph. Set allow_unused=True \
             if this is the desired behavior."
        )
    );
    let r = grad(&build()?, &[x.clone(), unused.clone()], true)?;
    assert_eq!(r.len(), 2);
    // y = Σ 3x: dy/dx = 3
    assert_eq!(r[0].as_ref().map(to_vec), Some(vec![3.0, 3.0]));
    assert!(r[1].is_none(), "the unused input's gradient is None");
    // grad() never writes .grad
    assert!(x.grad().is_none() && unused.grad().is_none());

    // an input that does not require grad at all is a different error
    let plain = tensor(vec![1.0], &[1]);
    let err = grad(&build()?, &[x.clone(), plain], true)
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("One of the differentiated Tensors does not require grad")
    );
    // and an output with no grad_fn that does not require grad
    let err = grad(&tensor(vec![1.0], &[1]), std::slice::from_ref(&x), true).err();
    assert!(matches!(err, Some(Error::NoGradFn { index: 0 })), "{err:?}");
    Ok(())
}

// ---- (6) many threads at once ----------------------------------------------------------

/// A small graph exercising matmul, softmax, reductions and broadcasting; returns the
/// bits of (dL/dx, dL/dw).
fn small_graph_grads(seed: usize) -> Result<(Vec<u64>, Vec<u64>)> {
    let x = leaf(
        spread(16, -1.0 - seed as f64 * 0.1, 1.0 + seed as f64 * 0.05),
        &[4, 4],
    );
    let w = leaf(spread(12, -0.8, 0.9 + seed as f64 * 0.01), &[4, 3]);
    let h = ops::tanh(&ops::matmul(&x, &w)?)?;
    let p = ops::softmax(&h, 1, false)?;
    let q = ops::mul(&p, &ops::sum(&x, Some(&[1]), true)?)?;
    let l = ops::add(
        &ops::sum(&q, None, false)?,
        &ops::norm(&w, 2.0, None, false)?,
    )?;
    backward(&l, false)?;
    Ok((bits(&grad_values(&x)?), bits(&grad_values(&w)?)))
}

#[test]
fn concurrent_backward_from_eight_threads_matches_single_threaded() -> Result<()> {
    let _g = serial();
    let start = live_nodes();
    let reference: Vec<(Vec<u64>, Vec<u64>)> =
        (0..8).map(small_graph_grads).collect::<Result<_>>()?;
    // distinct seeds give distinct gradients (so a mix-up between threads would show)
    assert_ne!(reference[0], reference[1]);
    let handles: Vec<_> = (0..8usize)
        .map(|t| {
            std::thread::spawn(move || -> Result<Vec<(Vec<u64>, Vec<u64>)>> {
                (0..50).map(|_| small_graph_grads(t)).collect()
            })
        })
        .collect();
    for (t, h) in handles.into_iter().enumerate() {
        let runs = h
            .join()
            .map_err(|_| Error::runtime(format!("thread {t} panicked")))??;
        assert_eq!(runs.len(), 50);
        for (i, r) in runs.iter().enumerate() {
            assert!(
                *r == reference[t],
                "thread {t}, iteration {i}: gradients differ from the single-threaded run"
            );
        }
    }
    assert_eq!(
        live_nodes(),
        start,
        "all graphs built by the threads were freed"
    );
    Ok(())
}

/// Sanity check of the helpers above on a hand-computed graph.
#[test]
fn hand_computed_backward() -> Result<()> {
    let _g = serial();
    // y = x^2 + 5x + 4; dy/dx = 2x + 5
    let x = leaf(vec![-1.0, 0.0, 2.5], &[3]);
    let y = ops::add_scalar(
        &ops::add(&ops::mul(&x, &x)?, &ops::mul_scalar(&x, sc(5.0))?)?,
        sc(4.0),
    )?;
    backward(&y, false)?;
    assert_values(
        &x.grad().ok_or_else(|| Error::runtime("no grad"))?,
        &[3.0, 5.0, 10.0],
        0.0,
        0.0,
    );
    Ok(())
}

#[test]
fn weak_node_refs_upgrade_only_while_the_node_lives() -> Result<()> {
    let _g = serial();
    let x = leaf(vec![1.0, 2.0], &[2]);
    let y = ops::exp(&x)?;
    let node = y.grad_fn().expect("exp of a leaf has a node");
    let weak = node.downgrade();
    assert!(weak.upgrade().is_some_and(|n| n.ptr_eq(&node)));
    drop(node);
    drop(y); // the last owner: the slot is freed
    assert!(weak.upgrade().is_none());
    // the slot is reused by a new node: the old weak reference must not reach it
    let others: Vec<Tensor> = (0..64).map(|_| ops::exp(&x)).collect::<Result<_>>()?;
    assert!(weak.upgrade().is_none());
    drop(others);
    Ok(())
}

// ---- (7) concurrent accumulation into shared leaves ------------------------------------

/// Many threads run many backward passes into the same leaves at once; every gradient
/// arrives exactly once. Values are integers, so the expected sums are exact in float64.
/// A small leaf (first gradient stored, later ones added in place) and one large enough
/// that the in-place add would split across the pool (rayon work stealing inside the
/// accumulation) are both covered, as is a graph whose two branches reach the same leaf.
#[test]
fn concurrent_backward_into_shared_leaves_loses_no_gradient() -> Result<()> {
    let _g = serial();
    const THREADS: usize = 8;
    const CALLS: usize = 40;
    for trial in 0..10 {
        let small = leaf(vec![0.0; 3], &[3]);
        let large = leaf(vec![0.0; 1 << 17], &[1 << 17]);
        std::thread::scope(|s| -> Result<()> {
            let handles: Vec<_> = (0..THREADS)
                .map(|_| {
                    s.spawn(|| -> Result<()> {
                        for _ in 0..CALLS {
                            // d/dsmall sum(2*small + small*3) = 5
                            let a = ops::mul_scalar(&small, sc(2.0))?;
                            let b = ops::mul_scalar(&small, sc(3.0))?;
                            backward(&ops::sum(&ops::add(&a, &b)?, None, false)?, false)?;
                            // d/dlarge sum(large) = 1
                            backward(&ops::sum(&large, None, false)?, false)?;
                        }
                        Ok(())
                    })
                })
                .collect();
            for h in handles {
                h.join()
                    .map_err(|_| Error::runtime("a backward thread panicked"))??;
            }
            Ok(())
        })?;
        let n = (THREADS * CALLS) as f64;
        assert!(
            grad_values(&small)?.iter().all(|&v| v == 5.0 * n),
            "trial {trial}: small leaf lost gradients: {:?}",
            grad_values(&small)?
        );
        let lg = grad_values(&large)?;
        assert!(
            lg.iter().all(|&v| v == n),
            "trial {trial}: large leaf lost gradients (first bad value {:?})",
            lg.iter().find(|&&v| v != n)
        );
    }
    Ok(())
}

// ---- batched backward (grad(is_grads_batched=True)) ---------------------------------

/// A node type without a batching rule (as a custom Function's): `2 x`, recorded through
/// the custom-Function path.
struct Double;
impl rgrad::autograd::function::Backward for Double {
    fn name(&self) -> std::borrow::Cow<'static, str> {
        "DoubleBackward".into()
    }
    fn apply(
        &self,
        _ctx: &rgrad::autograd::function::BackwardCtx<'_>,
        g: &[Option<Tensor>],
    ) -> Result<rgrad::autograd::function::Grads> {
        let g = g[0].as_ref().unwrap();
        Ok(std::iter::once(Some(ops::mul_scalar(g, sc(2.0))?)).collect())
    }
}

fn double(x: &Tensor) -> Tensor {
    use rgrad::autograd::custom_function::{CtxMarks, InputFlags, wrap_outputs};
    let inputs = [Some(x.clone())];
    let flags = InputFlags::new(&inputs).unwrap();
    let out = ops::mul_scalar(&x.detach(), sc(2.0)).unwrap();
    let marks = CtxMarks {
        dirty: Default::default(),
        non_differentiable: Default::default(),
        to_save: None,
    };
    let wrapped = wrap_outputs(flags, &inputs, &[Some(out.clone())], marks, || {
        Ok(std::sync::Arc::new(Double))
    })
    .unwrap();
    wrapped.replaced[0].clone().unwrap_or(out)
}

/// One batched pass over a batch of grad_outputs gives the stacked results of one pass per
/// sample; a node without a batching rule runs once per sample and is reported, the others
/// (mm, tanh, mul, sum, prod) are not; the graph is freed after the pass.
#[test]
fn a_batched_pass_equals_one_pass_per_sample() {
    use rgrad::autograd::engine::{Input, run_backward_batched};
    let _g = serial();
    let x = leaf(spread(6, -1.0, 1.0), &[2, 3]);
    let w = leaf(spread(12, -0.7, 0.9), &[3, 4]);
    let h = ops::tanh(&ops::mm(&x, &w).unwrap()).unwrap();
    let with_prod = ops::prod(&double(&h), Some(1), false).unwrap();
    let with_rules = ops::sum(&ops::mul(&h, &h).unwrap(), Some(&[1]), false).unwrap();
    let batch = 3;
    let gos = tensor(spread(6, -2.0, 2.0), &[batch, 2]);
    let opts = |retain_graph| Options {
        retain_graph,
        create_graph: false,
        accumulate: false,
        allow_unused: false,
        ..Options::default()
    };
    let inputs = [Input::Tensor(x.clone()), Input::Tensor(w.clone())];
    for (out, looped) in [
        (&with_prod, vec!["DoubleBackward".to_string()]),
        (&with_rules, vec![]),
    ] {
        let (batched, names) = run_backward_batched(
            &[Input::Tensor(out.clone())],
            std::slice::from_ref(&gos),
            &inputs,
            opts(true),
            batch,
        )
        .unwrap();
        assert_eq!(names, looped);
        for (k, input) in [&x, &w].into_iter().enumerate() {
            let per_sample: Vec<Tensor> = (0..batch)
                .map(|b| {
                    let g = ops::select(&gos, 0, b as i64).unwrap();
                    let r = run_backward(
                        std::slice::from_ref(out),
                        &[g],
                        &[x.clone(), w.clone()],
                        opts(true),
                    );
                    r.unwrap()[k].clone().unwrap()
                })
                .collect();
            let expected = ops::stack(&per_sample, 0).unwrap();
            let got = batched[k].clone().unwrap();
            let mut shape = vec![batch];
            shape.extend(input.shape().iter().copied());
            assert_eq!(got.shape().as_slice(), shape.as_slice());
            assert_values(&got, &to_vec(&expected), 1e-13, 1e-13);
        }
    }
    // without retain_graph the pass frees the graph, as an ordinary one does
    run_backward_batched(
        &[Input::Tensor(with_rules.clone())],
        std::slice::from_ref(&gos),
        &inputs,
        opts(false),
        batch,
    )
    .unwrap();
    let again = run_backward_batched(
        &[Input::Tensor(with_rules)],
        &[gos],
        &inputs,
        opts(false),
        batch,
    );
    assert!(matches!(again, Err(Error::GraphFreed)), "{:?}", again.err());
}

/// The nodes a batched pass ran once per sample belong to that pass (not to a list shared
/// by the process that another thread could take): two threads, one running a graph with
/// a node without a batching rule, one a graph without.
#[test]
fn each_batched_pass_reports_its_own_fallbacks_across_threads() {
    use rgrad::autograd::engine::{Input, run_backward_batched};
    let _g = serial();
    let x = leaf(spread(6, -1.0, 1.0), &[2, 3]);
    let looping = ops::sum(&double(&x), Some(&[1]), false).unwrap();
    let batched = ops::sum(&ops::exp(&x).unwrap(), Some(&[1]), false).unwrap();
    let g = tensor(vec![1.0; 8], &[4, 2]);
    let barrier = std::sync::Barrier::new(2);
    let run = |out: &Tensor| {
        barrier.wait();
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..50 {
            let (_, names) = run_backward_batched(
                &[Input::Tensor(out.clone())],
                std::slice::from_ref(&g),
                &[Input::Tensor(x.clone())],
                Options {
                    retain_graph: true,
                    ..Options::default()
                },
                4,
            )
            .unwrap();
            seen.insert(names);
        }
        seen
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| run(&looping));
        let b = s.spawn(|| run(&batched));
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_eq!(
        a.into_iter().collect::<Vec<_>>(),
        vec![vec!["DoubleBackward".to_string()]]
    );
    assert_eq!(
        b.into_iter().collect::<Vec<_>>(),
        vec![Vec::<String>::new()]
    );
}

/// The batching rules of prod (along a dim and over everything, with zeros among the
/// factors and without), polygamma, scatter_add, index_add, index_put (accumulating or
/// not) and advanced indexing by indices that are not adjacent: one batched pass gives
/// the stacked results of one pass per sample, and no node runs once per sample.
#[test]
fn batched_rules_of_prod_polygamma_and_indexing_equal_one_pass_per_sample() {
    use rgrad::autograd::engine::{Input, run_backward_batched};
    use rgrad::testing::tensor_i64;
    let _g = serial();
    let x = leaf(spread(12, -1.0, 1.0), &[3, 4]);
    let v = leaf(spread(8, 0.2, 0.9), &[2, 4]);
    let zeros = tensor(
        vec![1., 0., 1., 1., 0., 0., 1., 1., 1., 1., 1., 0.],
        &[3, 4],
    );
    let with_zeros = ops::mul(&x, &zeros).unwrap();
    let rows = tensor_i64(vec![2, 0], &[2]);
    let repeated = tensor_i64(vec![1, 1], &[2]);
    let x3 = ops::reshape(&x, &[3, 2, 2]).unwrap();
    let graphs: Vec<(&str, Tensor)> = vec![
        ("prod(1)", ops::prod(&x, Some(1), false).unwrap()),
        ("prod(0, keepdim)", ops::prod(&x, Some(0), true).unwrap()),
        ("prod()", ops::prod(&x, None, false).unwrap()),
        (
            "prod(1) with zeros",
            ops::prod(&with_zeros, Some(1), false).unwrap(),
        ),
        (
            "prod() with zeros",
            ops::prod(&with_zeros, None, false).unwrap(),
        ),
        (
            "polygamma",
            ops::polygamma(1, &ops::exp(&x).unwrap()).unwrap(),
        ),
        (
            "scatter_add",
            ops::scatter_add_zeros(&[3, 4], 1, &tensor_i64(vec![0, 0, 3, 1], &[2, 2]), &v).unwrap(),
        ),
        (
            "index_add",
            ops::index_add_zeros(&[3, 4], 0, &repeated, &v).unwrap(),
        ),
        (
            "index_put",
            ops::index_put(&x, &[Some(rows.clone())], &v, false).unwrap(),
        ),
        (
            "index_put accumulate",
            ops::index_put(&x, &[Some(repeated.clone())], &v, true).unwrap(),
        ),
        (
            "index not adjacent",
            ops::index(
                &x3,
                &[Some(rows.clone()), None, Some(tensor_i64(vec![1, 0], &[2]))],
            )
            .unwrap(),
        ),
        (
            "index_put not adjacent",
            ops::index_put(
                &x3,
                &[Some(rows.clone()), None, Some(tensor_i64(vec![1, 1], &[2]))],
                &ops::select(&v, 1, 0).unwrap(),
                true,
            )
            .unwrap(),
        ),
    ];
    let batch = 3;
    let opts = Options {
        retain_graph: true,
        ..Options::default()
    };
    let inputs = [Input::Tensor(x.clone()), Input::Tensor(v.clone())];
    for (name, out) in &graphs {
        let mut shape = vec![batch];
        shape.extend(out.shape().iter().copied());
        let n: usize = shape.iter().product();
        let gos = tensor(spread(n, -2.0, 2.0), &shape);
        let (batched, names) = run_backward_batched(
            &[Input::Tensor(out.clone())],
            std::slice::from_ref(&gos),
            &inputs,
            Options {
                allow_unused: true,
                ..opts
            },
            batch,
        )
        .unwrap();
        assert!(names.is_empty(), "{name}: {names:?}");
        for (k, input) in [&x, &v].into_iter().enumerate() {
            let per_sample: Vec<Option<Tensor>> = (0..batch)
                .map(|b| {
                    let g = ops::select(&gos, 0, b as i64).unwrap();
                    let r = run_backward(
                        std::slice::from_ref(out),
                        &[g],
                        &[x.clone(), v.clone()],
                        Options {
                            allow_unused: true,
                            ..opts
                        },
                    );
                    r.unwrap()[k].clone()
                })
                .collect();
            match &batched[k] {
                None => assert!(per_sample.iter().all(Option::is_none), "{name}"),
                Some(got) => {
                    let expected: Vec<Tensor> = per_sample
                        .into_iter()
                        .map(|g| g.unwrap_or_else(|| ops::zeros_like(input).unwrap()))
                        .collect();
                    let expected = ops::stack(&expected, 0).unwrap();
                    assert_eq!(got.shape(), expected.shape(), "{name}");
                    assert_values(got, &to_vec(&expected), 1e-12, 1e-12);
                }
            }
        }
    }
}
