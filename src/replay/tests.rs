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
        assert_eq!(
            crate::testing::to_vec(&out),
            crate::testing::to_vec(&e),
            "step {k}"
        );
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

/// A recorded `rand` draws again from its generator on each replay: replay k gives the
/// numbers of the k-th eager call after the same seed (a generator of the test's own, so
/// that tests running beside it cannot move it).
#[test]
fn replayed_rand_draws_the_next_numbers_of_its_generator() {
    let g = crate::random::Generator::new(7);
    let eager: Vec<Vec<f64>> = (0..4)
        .map(|_| crate::testing::to_vec(&ops::random::rand(&[5], DType::F32, Some(&g)).unwrap()))
        .collect();
    g.manual_seed(7);
    begin().unwrap();
    let first = ops::random::rand(&[5], DType::F32, Some(&g)).unwrap();
    let doubled = ops::mul(&first, &first).unwrap();
    let prog = end(&[first.clone(), doubled]).unwrap();
    assert_eq!(crate::testing::to_vec(&first), eager[0]);
    for want in &eager[1..] {
        let outs = prog.run().unwrap().unwrap();
        assert_eq!(&crate::testing::to_vec(&outs[0]), want);
        let sq: Vec<f64> = want
            .iter()
            .map(|v| ((*v as f32) * (*v as f32)) as f64)
            .collect();
        assert_eq!(crate::testing::to_vec(&outs[1]), sq);
    }
}

/// A parameter updated in place (`p -= 0.5 * g`) is an extern slot: each replay updates
/// the same storage, as an eager step would.
#[test]
fn extern_storage_is_updated_in_place_on_each_replay() {
    let p = crate::testing::tensor(vec![1.0, 2.0], &[2]);
    let g = crate::testing::tensor(vec![0.25, -1.0], &[2]);
    let step = || -> Result<()> {
        let d = ops::mul_scalar(&g, crate::dtype::Scalar::Float(0.5))?;
        ops::inplace::sub_(&p, ops::Operand::T(&d), crate::dtype::Scalar::Int(1))?;
        Ok(())
    };
    begin().unwrap();
    step().unwrap();
    let prog = end(&[]).unwrap();
    assert_eq!(prog.slot_kinds().1, 2); // p and g
    for k in 2..5 {
        prog.run().unwrap().unwrap();
        let k = k as f64;
        assert_eq!(
            crate::testing::to_vec(&p),
            vec![1.0 - k * 0.125, 2.0 + k * 0.5]
        );
    }
    assert_eq!(p.version(), 4);
}
