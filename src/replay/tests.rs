//! Rust tests of step replay: a recorded step replays to eager's bits.
use super::*;
use crate::ops;
use crate::testing::leaf;

/// y = sum(exp(x * x)); recording the forward + backward and replaying gives the same
/// gradient as another eager step would (grads accumulate: x.grad = k · 2x·exp(x²)).
#[test]
fn replayed_forward_backward_accumulates_like_eager() {
    let x = leaf(vec![0.5, -1.0, 2.0], &[3]);
    let eager = leaf(vec![0.5, -1.0, 2.0], &[3]);
    let step = |x: &Tensor| -> Result<Tensor> {
        let y = ops::sum(&ops::exp(&ops::mul(x, x)?)?, None, false)?;
        crate::autograd::engine::run_backward(
            std::slice::from_ref(&y),
            &[ops::ones(&[], y.dtype())?],
            &[],
            Default::default(),
        )?;
        Ok(y)
    };
    // first call records (and is an eager step); the second records again (grad was None
    // when recorded, is set now); the third and later replay
    let mut prog = None;
    for k in 0..5 {
        let e = step(&eager).unwrap();
        let out = match prog.as_ref().and_then(|p: &Program| p.run().unwrap()) {
            Some(outs) => outs[0].clone(),
            None => {
                begin().unwrap();
                let y = step(&x);
                let y = match y {
                    Ok(y) => y,
                    Err(e) => {
                        abort();
                        panic!("{e}");
                    }
                };
                prog = Some(end(std::slice::from_ref(&y)).unwrap());
                y
            }
        };
        assert_eq!(crate::testing::to_vec(&out), crate::testing::to_vec(&e), "step {k}");
        assert_eq!(
            crate::testing::grad_vec(&x).unwrap(),
            crate::testing::grad_vec(&eager).unwrap(),
            "grad at step {k}"
        );
    }
    assert!(prog.unwrap().num_steps() > 3);
}

/// item() is refused while recording, with the op named.
#[test]
fn item_is_refused_while_recording() {
    let x = leaf(vec![1.5], &[1]);
    begin().unwrap();
    let e = x.item().unwrap_err().to_string();
    abort();
    assert!(e.contains("item()"), "{e}");
    assert!(!active());
}
