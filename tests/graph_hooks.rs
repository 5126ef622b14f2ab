//! The core's graph hooks without Python: saved-tensor hooks (what is packed, unpacked,
//! and the gradients through them), a node's own pre- and post-hooks, an AccumulateGrad
//! node's hooks, gradient edges as grad()'s inputs, and the engine's current task.
//!
//! Every test takes `SERIAL`: the saved-hook bit and the pool are process-wide.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may fail loudly

use rgrad::autograd::engine::{Input, Options, current_task_id, run_backward, run_backward_from};
use rgrad::autograd::graph::{Edge, HookGrads};
use rgrad::autograd::hooks;
use rgrad::autograd::saved_hooks::{self, PackedTensor, SavedTensorHooks};
use rgrad::ops;
use rgrad::testing::{leaf, tensor, to_vec};
use rgrad::{Result, Tensor};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn ones_like(t: &Tensor) -> Tensor {
    tensor(vec![1.0; t.numel()], &t.shape())
}

fn backward(y: &Tensor) -> Result<()> {
    let opts = Options {
        accumulate: true,
        ..Options::default()
    };
    run_backward(std::slice::from_ref(y), &[ones_like(y)], &[], opts).map(|_| ())
}

/// Packs a copy of each tensor, counting packs and unpacks.
#[derive(Default)]
struct Counting {
    packs: AtomicUsize,
    unpacks: Arc<AtomicUsize>,
}

struct Copy(Tensor, Arc<AtomicUsize>);

impl PackedTensor for Copy {
    fn unpack(&self) -> Result<Tensor> {
        self.1.fetch_add(1, Ordering::SeqCst);
        Ok(self.0.clone())
    }
}

impl SavedTensorHooks for Counting {
    fn pack(&self, t: &Tensor) -> Result<Arc<dyn PackedTensor>> {
        assert!(
            !rgrad::autograd::grad_mode::is_grad_enabled(),
            "pack runs with grad mode off"
        );
        self.packs.fetch_add(1, Ordering::SeqCst);
        Ok(Arc::new(Copy(
            ops::clone_tensor(&t.detach())?,
            self.unpacks.clone(),
        )))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[test]
fn saved_tensors_go_through_the_hooks_and_gradients_are_unchanged() -> Result<()> {
    let _g = serial();
    let hooks = Arc::new(Counting::default());
    let x = leaf(vec![0.5, 1.5, -2.0], &[3]);
    saved_hooks::push(hooks.clone())?;
    // mul saves both operands, exp its result, sin its input
    let y = ops::sum(&ops::sin(&ops::exp(&ops::mul(&x, &x)?)?)?, None, false)?;
    saved_hooks::pop()?;
    assert_eq!(hooks.packs.load(Ordering::SeqCst), 4);
    backward(&y)?;
    assert_eq!(hooks.unpacks.load(Ordering::SeqCst), 4);
    let plain = leaf(vec![0.5, 1.5, -2.0], &[3]);
    backward(&ops::sum(
        &ops::sin(&ops::exp(&ops::mul(&plain, &plain)?)?)?,
        None,
        false,
    )?)?;
    assert_eq!(to_vec(&x.grad().unwrap()), to_vec(&plain.grad().unwrap()));

    // popped: nothing is packed any more
    let z = ops::exp(&x)?;
    backward(&ops::sum(&z, None, false)?)?;
    assert_eq!(hooks.packs.load(Ordering::SeqCst), 4);
    assert!(saved_hooks::pop().is_err(), "nothing left to pop");
    Ok(())
}

#[test]
fn disabled_hooks_refuse_a_push_with_the_message() -> Result<()> {
    let _g = serial();
    saved_hooks::disable("no hooks here", true)?;
    let err = saved_hooks::push(Arc::new(Counting::default())).err();
    assert_eq!(err.map(|e| e.to_string()).as_deref(), Some("no hooks here"));
    assert_eq!(
        saved_hooks::disabled_message().as_deref(),
        Some("no hooks here")
    );
    saved_hooks::enable();
    assert!(saved_hooks::is_enabled());
    Ok(())
}

#[test]
fn node_hooks_see_and_replace_gradients_in_order() -> Result<()> {
    let _g = serial();
    let x = leaf(vec![1.0, 2.0], &[2]);
    let y = ops::mul_scalar(&x, rgrad::Scalar::Float(3.0))?;
    let node = y.grad_fn().unwrap();
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let l = log.clone();
    hooks::register_node_prehook(
        &node,
        Arc::new(move |g: &[Option<Tensor>]| {
            l.lock()
                .unwrap()
                .push(format!("pre {:?}", to_vec(g[0].as_ref().unwrap())));
            let doubled = ops::mul_scalar(g[0].as_ref().unwrap(), rgrad::Scalar::Float(2.0))?;
            Ok(Some(HookGrads::from_iter([Some(doubled)])))
        }),
    );
    let l = log.clone();
    let id = hooks::register_node_posthook(
        &node,
        Arc::new(move |gi: &[Option<Tensor>], go: &[Option<Tensor>]| {
            l.lock().unwrap().push(format!(
                "post {:?} {:?} task {}",
                to_vec(gi[0].as_ref().unwrap()),
                to_vec(go[0].as_ref().unwrap()),
                current_task_id() >= 0
            ));
            Ok(None)
        }),
    );
    let l = log.clone();
    hooks::register_acc_prehook(
        &x,
        Arc::new(move |g: &[Option<Tensor>]| {
            l.lock()
                .unwrap()
                .push(format!("acc {:?}", to_vec(g[0].as_ref().unwrap())));
            Ok(None)
        }),
    );
    let z = ops::sum(&y, None, false)?;
    let opts = Options {
        accumulate: true,
        retain_graph: true,
        ..Options::default()
    };
    run_backward(std::slice::from_ref(&z), &[ones_like(&z)], &[], opts)?;
    assert_eq!(
        *log.lock().unwrap(),
        vec![
            "pre [1.0, 1.0]".to_string(),
            "post [6.0, 6.0] [2.0, 2.0] task true".to_string(),
            "acc [6.0, 6.0]".to_string(),
        ]
    );
    assert_eq!(to_vec(&x.grad().unwrap()), vec![6.0, 6.0]);
    assert_eq!(current_task_id(), -1, "no task outside backward");
    hooks::remove_node_hook(&node, id);
    log.lock().unwrap().clear();
    run_backward(std::slice::from_ref(&z), &[ones_like(&z)], &[], opts)?;
    assert_eq!(log.lock().unwrap().len(), 2, "the post-hook was removed");
    Ok(())
}

#[test]
fn gradient_edges_are_inputs_of_grad() -> Result<()> {
    let _g = serial();
    let x = leaf(vec![1.0, 2.0], &[2]);
    let h = ops::exp(&x)?;
    let y = ops::sum(&ops::mul(&h, &h)?, None, false)?;
    let opts = Options {
        retain_graph: true,
        ..Options::default()
    };
    let inputs = [
        Input::Edge(Edge::Node {
            node: h.grad_fn().unwrap(),
            input_nr: 0,
        }),
        Input::Edge(Edge::Leaf(x.clone())),
    ];
    let by_edge = run_backward_from(&[Input::Tensor(y.clone())], &[ones_like(&y)], &inputs, opts)?;
    let by_tensor = run_backward(std::slice::from_ref(&y), &[ones_like(&y)], &[h, x], opts)?;
    for (a, b) in by_edge.iter().zip(&by_tensor) {
        assert_eq!(to_vec(a.as_ref().unwrap()), to_vec(b.as_ref().unwrap()));
    }
    Ok(())
}
