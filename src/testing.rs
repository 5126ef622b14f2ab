//! gradcheck (f64 central differences) and assert_close for Rust tests.
//!
//! Everything here goes through the public API only (`ops::*`, `Tensor`,
//! `storage::Buffer`, `autograd::engine::run_backward`), so integration tests can use it
//! exactly as an outside user of the crate would:
//!
//! - [`leaf`], [`tensor`], [`tensor_i64`], [`tensor_bool`] build tensors from values + shape;
//!   [`to_vec`] reads any tensor back (logical row-major order, as f64).
//! - [`numerical_jacobian`] / [`analytical_jacobian`]: one row-major matrix per input,
//!   rows = output elements, columns = input elements.
//! - [`gradcheck`] compares them; [`gradgradcheck`] does the same for the
//!   vector-Jacobian product `(x, v) -> grad(f(x), x, v, create_graph=true)`, i.e. it
//!   checks double backward.
//!
//! Inputs that are float leaves with `requires_grad` are differentiated; any other input
//! (an int64 index, a bool mask, a constant) is passed to `f` unchanged.

use crate::autograd::engine::{Options, run_backward};
use crate::autograd::grad_mode::with_grad_mode;
use crate::dtype::DType;
use crate::ops;
use crate::storage::Buffer;
use crate::tensor::Tensor;
use crate::{Error, Result};
use std::fmt::Write as _;

// ---- building and reading tensors ----------------------------------------------------

/// A float64 tensor (no grad) with `values` in row-major order.
pub fn tensor(values: Vec<f64>, shape: &[usize]) -> Tensor {
    assert_eq!(
        values.len(),
        crate::shape::numel(shape),
        "tensor(): {} values for shape {:?}",
        values.len(),
        shape
    );
    Tensor::from_buffer(Buffer::F64(values.into()), shape)
}

/// A float64 leaf that requires grad.
pub fn leaf(values: Vec<f64>, shape: &[usize]) -> Tensor {
    let t = tensor(values, shape);
    // A float leaf can always be made to require grad.
    let _ = t.set_requires_grad(true);
    t
}

/// A float64 0-d tensor (no grad).
pub fn scalar(v: f64) -> Tensor {
    tensor(vec![v], &[])
}

/// An int64 tensor (indices, class targets).
pub fn tensor_i64(values: Vec<i64>, shape: &[usize]) -> Tensor {
    assert_eq!(
        values.len(),
        crate::shape::numel(shape),
        "tensor_i64(): {} values for shape {:?}",
        values.len(),
        shape
    );
    Tensor::from_buffer(Buffer::I64(values.into()), shape)
}

/// A bool tensor (masks, `where` conditions).
pub fn tensor_bool(values: Vec<bool>, shape: &[usize]) -> Tensor {
    assert_eq!(
        values.len(),
        crate::shape::numel(shape),
        "tensor_bool(): {} values for shape {:?}",
        values.len(),
        shape
    );
    Tensor::from_buffer(Buffer::Bool(values.into()), shape)
}

/// Deterministic, well-spread values in roughly [lo, hi] (no two equal for n < 1000):
/// handy for inputs that must avoid ties and kinks.
pub fn spread(n: usize, lo: f64, hi: f64) -> Vec<f64> {
    (0..n)
        .map(|i| {
            // golden-ratio low-discrepancy sequence, shifted so no value sits on a bound
            let u = ((i as f64 + 1.0) * 0.618_033_988_749_895).fract();
            lo + (hi - lo) * (0.05 + 0.9 * u)
        })
        .collect()
}

/// The elements of `t` in logical row-major order, converted to f64 (any dtype, any
/// layout: views, expanded and 0-d tensors included). Does not record history.
pub fn to_vec(t: &Tensor) -> Vec<f64> {
    let c = match with_grad_mode(false, || ops::contiguous(&t.detach())) {
        Ok(c) => c,
        Err(e) => panic_msg(&format!("to_vec(): contiguous() failed: {e}")),
    };
    let s = c.snapshot();
    let n = s.layout.numel();
    let off = s.layout.offset;
    let buf = s.storage.read();
    let buf = match crate::backend::host::read(&buf) {
        Ok(b) => b,
        Err(e) => panic_msg(&format!("to_vec(): copy to the host failed: {e}")),
    };
    match &*buf {
        Buffer::F64(v) => v[off..off + n].to_vec(),
        Buffer::F32(v) => v[off..off + n].iter().map(|&x| f64::from(x)).collect(),
        Buffer::I64(v) => v[off..off + n].iter().map(|&x| x as f64).collect(),
        Buffer::Bool(v) => v[off..off + n]
            .iter()
            .map(|&x| f64::from(u8::from(x)))
            .collect(),
        Buffer::Cuda(_) => crate::storage::not_host(),
    }
}

/// The shape of `t` as a plain vector.
pub fn shape_of(t: &Tensor) -> Vec<usize> {
    t.shape().to_vec()
}

/// The `.grad` of `t` as values (`None` when it has no grad).
pub fn grad_vec(t: &Tensor) -> Option<Vec<f64>> {
    t.grad().map(|g| to_vec(&g))
}

#[cold]
#[allow(clippy::panic)]
fn panic_msg(msg: &str) -> ! {
    panic!("{msg}")
}

/// Whether `a` is within `atol + rtol·|b|` of `b` (equal infinities match; NaN never does).
pub fn is_close(a: f64, b: f64, atol: f64, rtol: f64) -> bool {
    if a == b {
        return true;
    }
    if a.is_nan() || b.is_nan() || a.is_infinite() || b.is_infinite() {
        return false;
    }
    (a - b).abs() <= atol + rtol * b.abs()
}

/// Panics with a readable report unless `a` and `b` have the same shape and every
/// element satisfies `|a - b| <= atol + rtol·|b|`.
#[track_caller]
pub fn assert_close(a: &Tensor, b: &Tensor, atol: f64, rtol: f64) {
    let (sa, sb) = (shape_of(a), shape_of(b));
    if sa != sb {
        panic_msg(&format!("assert_close: shapes differ: {sa:?} vs {sb:?}"));
    }
    assert_close_values(&to_vec(a), &to_vec(b), atol, rtol, &format!("shape {sa:?}"));
}

/// [`assert_close`] for a tensor against expected values (shape checked by element count).
#[track_caller]
pub fn assert_values(a: &Tensor, expected: &[f64], atol: f64, rtol: f64) {
    assert_close_values(
        &to_vec(a),
        expected,
        atol,
        rtol,
        &format!("shape {:?}", shape_of(a)),
    );
}

#[track_caller]
fn assert_close_values(a: &[f64], b: &[f64], atol: f64, rtol: f64, what: &str) {
    if a.len() != b.len() {
        panic_msg(&format!(
            "assert_close ({what}): {} elements vs {} expected\n  got:      {a:?}\n  expected: {b:?}",
            a.len(),
            b.len()
        ));
    }
    let bad: Vec<usize> = (0..a.len())
        .filter(|&i| !is_close(a[i], b[i], atol, rtol))
        .collect();
    if let Some(&first) = bad.first() {
        let worst = bad
            .iter()
            .map(|&i| (a[i] - b[i]).abs())
            .fold(0.0f64, f64::max);
        panic_msg(&format!(
            "assert_close ({what}): {} of {} elements differ (atol={atol:e}, rtol={rtol:e}); first at flat index {first}: \
             got {} expected {}; max abs diff {worst:e}\n  got:      {a:?}\n  expected: {b:?}",
            bad.len(),
            a.len(),
            a[first],
            b[first]
        ));
    }
}

// ---- Jacobians -------------------------------------------------------------------------

/// Whether an input is differentiated by the checks (a float tensor requiring grad).
fn is_diff(t: &Tensor) -> bool {
    t.requires_grad() && t.dtype().is_float()
}

/// A fresh tensor with `t`'s dtype, shape and `requires_grad`, holding `values`.
fn rebuild(t: &Tensor, values: Vec<f64>) -> Result<Tensor> {
    let shape = shape_of(t);
    let buf = match t.dtype() {
        DType::F64 => Buffer::F64(values.into()),
        DType::F32 => Buffer::F32(values.into_iter().map(|v| v as f32).collect()),
        d => {
            return Err(Error::runtime(format!(
                "gradcheck: cannot perturb a {} input",
                d.name()
            )));
        }
    };
    let r = Tensor::from_buffer(buf, &shape);
    if t.requires_grad() {
        r.set_requires_grad(true)?;
    }
    Ok(r)
}

/// Central-difference Jacobians of `f` at `inputs`: for each input, a row-major matrix
/// `J[r * n_in + c] = ∂ out[r] / ∂ in[c] ≈ (f(x + eps·e_c)[r] - f(x - eps·e_c)[r]) / 2eps`
/// (empty for inputs that are not differentiated). `f` runs in the current grad mode, on
/// fresh copies of the inputs, so it may itself call backward (see [`gradgradcheck`]).
pub fn numerical_jacobian(
    f: impl Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Tensor],
    eps: f64,
) -> Result<Vec<Vec<f64>>> {
    let n_out = f(inputs)?.numel();
    let mut out = Vec::with_capacity(inputs.len());
    for (i, x) in inputs.iter().enumerate() {
        if !is_diff(x) {
            out.push(Vec::new());
            continue;
        }
        let base = to_vec(x);
        let n_in = base.len();
        let mut jac = vec![0.0; n_out * n_in];
        for c in 0..n_in {
            let eval = |delta: f64| -> Result<Vec<f64>> {
                let mut v = base.clone();
                v[c] += delta;
                let mut args: Vec<Tensor> = inputs.to_vec();
                args[i] = rebuild(x, v)?;
                let y = f(&args)?;
                Ok(to_vec(&y))
            };
            let (hi, lo) = (eval(eps)?, eval(-eps)?);
            if hi.len() != n_out || lo.len() != n_out {
                return Err(Error::runtime(
                    "numerical_jacobian: f's output size changed under perturbation",
                ));
            }
            for r in 0..n_out {
                jac[r * n_in + c] = (hi[r] - lo[r]) / (2.0 * eps);
            }
        }
        out.push(jac);
    }
    Ok(out)
}

/// One-hot gradient for output element `r` of a tensor shaped like `y`.
fn one_hot(y: &Tensor, r: usize) -> Result<Tensor> {
    let n = y.numel();
    let mut v = vec![0.0; n];
    v[r] = 1.0;
    let t = tensor(v, &shape_of(y));
    with_grad_mode(false, || ops::to_dtype(&t, y.dtype()))
}

/// Backprop-built Jacobians of `f` at `inputs` (same layout as [`numerical_jacobian`]):
/// row `r` is `grad(f(x), x, e_r)`, computed with one `run_backward` per output element
/// (`accumulate: false, retain_graph: true`; an input the graph does not reach gives a
/// zero block). Also checks every returned gradient's shape and dtype.
pub fn analytical_jacobian(
    f: impl Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Tensor],
) -> Result<Vec<Vec<f64>>> {
    let y = f(inputs)?;
    jacobian_of(&y, inputs)
}

fn jacobian_of(y: &Tensor, inputs: &[Tensor]) -> Result<Vec<Vec<f64>>> {
    let n_out = y.numel();
    let diff: Vec<Tensor> = inputs.iter().filter(|t| is_diff(t)).cloned().collect();
    let mut out: Vec<Vec<f64>> = inputs
        .iter()
        .map(|x| {
            if is_diff(x) {
                vec![0.0; n_out * x.numel()]
            } else {
                Vec::new()
            }
        })
        .collect();
    if diff.is_empty() || !y.requires_grad() {
        // nothing to backprop: the Jacobian is zero (numerically it must be too)
        return Ok(out);
    }
    let opts = Options {
        retain_graph: true,
        create_graph: false,
        accumulate: false,
        allow_unused: true,
        forward_ad_off: false,
        relax_grad_layout: false,
    };
    for r in 0..n_out {
        let grads = run_backward(std::slice::from_ref(y), &[one_hot(y, r)?], &diff, opts)?;
        let mut k = 0;
        for (i, x) in inputs.iter().enumerate() {
            if !is_diff(x) {
                continue;
            }
            if let Some(g) = &grads[k] {
                if shape_of(g) != shape_of(x) {
                    return Err(Error::runtime(format!(
                        "analytical_jacobian: gradient for input {i} has shape {:?}, input has shape {:?}",
                        shape_of(g),
                        shape_of(x)
                    )));
                }
                if g.dtype() != x.dtype() {
                    return Err(Error::runtime(format!(
                        "analytical_jacobian: gradient for input {i} has dtype {}, input has dtype {}",
                        g.dtype().name(),
                        x.dtype().name()
                    )));
                }
                let n_in = x.numel();
                let gv = to_vec(g);
                out[i][r * n_in..(r + 1) * n_in].copy_from_slice(&gv);
            }
            k += 1;
        }
    }
    Ok(out)
}

fn fmt_matrix(m: &[f64], rows: usize, cols: usize) -> String {
    let mut s = String::new();
    for r in 0..rows {
        s.push_str("    [");
        for c in 0..cols {
            if c > 0 {
                s.push_str(", ");
            }
            let _ = write!(s, "{:>12.6e}", m[r * cols + c]);
        }
        s.push_str("]\n");
    }
    s
}

/// Compares the analytical and numerical Jacobians of `f` at `inputs` with the default
/// tolerances (eps = 1e-6, atol = 1e-5, rtol = 1e-3). See [`gradcheck_with`].
pub fn gradcheck(f: impl Fn(&[Tensor]) -> Result<Tensor>, inputs: &[Tensor]) -> Result<()> {
    gradcheck_with(f, inputs, 1e-6, 1e-5, 1e-3)
}

/// torch.autograd.gradcheck for f64 inputs: every element of every differentiated
/// input's analytical Jacobian must satisfy `|a - n| <= atol + rtol·|n|`. Also checks
/// that backward is reentrant (a second analytical pass gives bitwise the same
/// Jacobian) and that the checks did not touch any input's `.grad`. On mismatch the
/// error shows both Jacobians.
pub fn gradcheck_with(
    f: impl Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Tensor],
    eps: f64,
    atol: f64,
    rtol: f64,
) -> Result<()> {
    if !inputs.iter().any(is_diff) {
        return Err(Error::runtime("gradcheck: no input requires grad"));
    }
    for (i, x) in inputs.iter().enumerate() {
        if is_diff(x) && x.dtype() != DType::F64 {
            return Err(Error::runtime(format!(
                "gradcheck: input {i} is {}, expected float64",
                x.dtype().name()
            )));
        }
    }
    let grads_before: Vec<Option<Vec<f64>>> = inputs.iter().map(grad_vec).collect();
    let y = f(inputs)?;
    let n_out = y.numel();
    let analytical = jacobian_of(&y, inputs)?;
    let again = jacobian_of(&y, inputs)?;
    drop(y);
    let numerical = numerical_jacobian(&f, inputs, eps)?;

    for (i, x) in inputs.iter().enumerate() {
        if !is_diff(x) {
            continue;
        }
        let n_in = x.numel();
        let (a, n) = (&analytical[i], &numerical[i]);
        let bad: Vec<usize> = (0..a.len())
            .filter(|&k| !is_close(a[k], n[k], atol, rtol))
            .collect();
        if let Some(&k) = bad.first() {
            return Err(Error::runtime(format!(
                "Jacobian mismatch for output 0 with respect to input {i} (shape {:?}, output shape {:?}): {} of {} entries \
                 differ (eps={eps:e}, atol={atol:e}, rtol={rtol:e}); first at [out {}, in {}]: analytical {} vs numerical {}\n  \
                 numerical:\n{}  analytical:\n{}",
                shape_of(x),
                n_out_shape(&f, inputs),
                bad.len(),
                a.len(),
                k / n_in.max(1),
                k % n_in.max(1),
                a[k],
                n[k],
                fmt_matrix(n, n_out, n_in),
                fmt_matrix(a, n_out, n_in),
            )));
        }
        let a2 = &again[i];
        if let Some(k) = (0..a.len()).find(|&k| a[k].to_bits() != a2[k].to_bits()) {
            return Err(Error::runtime(format!(
                "Backward is not reentrant for input {i}: entry {k} was {} then {} for the same grad_output",
                a[k], a2[k]
            )));
        }
    }
    for (i, (x, before)) in inputs.iter().zip(&grads_before).enumerate() {
        if grad_vec(x) != *before {
            return Err(Error::runtime(format!(
                "gradcheck: input {i}'s .grad was modified by grad() (accumulate: false)"
            )));
        }
    }
    Ok(())
}

fn n_out_shape(f: &impl Fn(&[Tensor]) -> Result<Tensor>, inputs: &[Tensor]) -> Vec<usize> {
    with_grad_mode(false, || f(inputs))
        .map(|y| shape_of(&y))
        .unwrap_or_default()
}

/// Deterministic grad_outputs for [`gradgradcheck`]: distinct, non-zero, mixed signs.
fn probe_values(n: usize) -> Vec<f64> {
    spread(n, -1.0, 1.0)
        .into_iter()
        .map(|v| if v.abs() < 0.1 { v + 0.3 } else { v })
        .collect()
}

/// Double-backward check with the default tolerances. See [`gradgradcheck_with`].
pub fn gradgradcheck(f: impl Fn(&[Tensor]) -> Result<Tensor>, inputs: &[Tensor]) -> Result<()> {
    gradgradcheck_with(f, inputs, 1e-6, 1e-5, 1e-3)
}

/// torch.autograd.gradgradcheck: gradchecks the vector-Jacobian product
/// `g(x, v) = grad(f(x), x, v, create_graph=true)` (all input gradients flattened and
/// concatenated; an unused input contributes zeros) with respect to both `x` and `v`,
/// for a fixed, deterministic `v` shaped like `f(x)`.
pub fn gradgradcheck_with(
    f: impl Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Tensor],
    eps: f64,
    atol: f64,
    rtol: f64,
) -> Result<()> {
    let n = inputs.len();
    let y0 = f(inputs)?;
    let v = leaf(probe_values(y0.numel()), &shape_of(&y0));
    drop(y0);
    let vjp = |args: &[Tensor]| -> Result<Tensor> {
        let (xs, v) = (&args[..n], &args[n]);
        let y = f(xs)?;
        let diff: Vec<Tensor> = xs.iter().filter(|t| is_diff(t)).cloned().collect();
        let opts = Options {
            retain_graph: true,
            create_graph: true,
            accumulate: false,
            allow_unused: true,
            forward_ad_off: false,
            relax_grad_layout: false,
        };
        let grads = run_backward(
            std::slice::from_ref(&y),
            std::slice::from_ref(v),
            &diff,
            opts,
        )?;
        let mut parts = Vec::with_capacity(grads.len());
        for (g, x) in grads.into_iter().zip(&diff) {
            let g = match g {
                Some(g) => g,
                None => with_grad_mode(false, || ops::zeros(&shape_of(x), x.dtype()))?,
            };
            parts.push(ops::reshape(&g, &[-1])?);
        }
        ops::cat(&parts, 0)
    };
    let mut all: Vec<Tensor> = inputs.to_vec();
    all.push(v);
    gradcheck_with(vjp, &all, eps, atol, rtol)
        .map_err(|e| Error::runtime(format!("gradgradcheck (double backward): {e}")))
}

#[cfg(test)]
mod tests {
    //! Tests that need crate-private access (hooks live in `pub(crate)` fields).
    use super::*;
    use crate::autograd::graph::Hook;
    use crate::error::ExternalError;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Debug)]
    struct HookFailure(&'static str);
    impl std::fmt::Display for HookFailure {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "hook failure: {}", self.0)
        }
    }
    impl ExternalError for HookFailure {
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }

    fn ones_like(t: &Tensor) -> Tensor {
        tensor(vec![1.0; t.numel()], &shape_of(t))
    }
    fn backward(y: &Tensor, retain_graph: bool) -> Result<Vec<Option<Tensor>>> {
        run_backward(
            std::slice::from_ref(y),
            &[ones_like(y)],
            &[],
            Options {
                retain_graph,
                create_graph: false,
                accumulate: true,
                allow_unused: false,
                forward_ad_off: false,
                relax_grad_layout: false,
            },
        )
    }

    #[test]
    fn helpers_round_trip_views_and_dtypes() -> Result<()> {
        let x = tensor((0..6).map(f64::from).collect(), &[2, 3]);
        // transpose is a non-contiguous view: to_vec reads it in logical order
        assert_eq!(
            to_vec(&ops::transpose(&x, 0, 1)?),
            vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
        );
        // a contiguous slice with a non-zero storage offset
        assert_eq!(to_vec(&ops::select(&x, 0, 1)?), vec![3.0, 4.0, 5.0]);
        assert_eq!(to_vec(&tensor_i64(vec![3, -1], &[2])), vec![3.0, -1.0]);
        assert_eq!(
            to_vec(&tensor_bool(vec![true, false], &[2])),
            vec![1.0, 0.0]
        );
        assert_eq!(to_vec(&scalar(2.5)), vec![2.5]);
        assert!(is_close(1.0, 1.0 + 1e-9, 1e-8, 0.0) && !is_close(f64::NAN, f64::NAN, 1.0, 1.0));
        Ok(())
    }

    #[test]
    fn gradcheck_reports_a_wrong_derivative() -> Result<()> {
        // f(x) = x·stop_grad(x): the analytical Jacobian is diag(x) but the true one is
        // diag(2x), so gradcheck must fail and show both matrices.
        let x = leaf(vec![1.0, 2.0], &[2]);
        let err = gradcheck(
            |xs| ops::mul(&xs[0], &xs[0].detach()),
            std::slice::from_ref(&x),
        )
        .err();
        let msg = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("Jacobian mismatch"), "{msg}");
        assert!(
            msg.contains("numerical") && msg.contains("analytical"),
            "{msg}"
        );
        // numerical d(x0²)/dx0 = 2·x0 ≈ 2, analytical (wrong) = x0 = 1
        assert!(
            msg.contains("[out 0, in 0]: analytical 1 vs numerical 1.99")
                || msg.contains("[out 0, in 0]: analytical 1 vs numerical 2"),
            "{msg}"
        );
        // and passes for the honest x·x
        gradcheck(|xs| ops::mul(&xs[0], &xs[0]), &[x])
    }

    #[test]
    fn jacobians_have_output_rows_and_input_columns() -> Result<()> {
        // y = A·x for A 2x3: J = A (rows = outputs, columns = inputs)
        let a = tensor(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
        let x = leaf(vec![0.5, -1.0, 2.0], &[3]);
        let f = |xs: &[Tensor]| ops::matmul(&a, &xs[0]);
        let num = numerical_jacobian(f, std::slice::from_ref(&x), 1e-6)?;
        let ana = analytical_jacobian(f, std::slice::from_ref(&x))?;
        assert_eq!(ana, vec![vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]);
        for (n, a) in num[0].iter().zip(&ana[0]) {
            assert!((n - a).abs() < 1e-8, "{n} vs {a}");
        }
        // a non-differentiable input gets an empty matrix
        let idx = tensor_i64(vec![0], &[1]);
        let j = analytical_jacobian(
            |xs: &[Tensor]| ops::index_select(&xs[0], 0, &xs[1]),
            &[x.clone(), idx],
        )?;
        assert_eq!(j, vec![vec![1.0, 0.0, 0.0], vec![]]);
        Ok(())
    }

    /// (5) An error returned by a hook propagates out of run_backward, and the engine is
    /// usable afterwards (same retained graph once the hook is gone, and a fresh graph).
    #[test]
    fn hook_error_propagates_and_engine_recovers() -> Result<()> {
        let calls = Arc::new(AtomicUsize::new(0));
        let x = leaf(vec![1.0, 2.0, 3.0], &[3]);
        let c2 = calls.clone();
        let failing: Hook = Arc::new(move |_g: &Tensor| -> Result<Option<Tensor>> {
            c2.fetch_add(1, Ordering::SeqCst);
            Err(Error::External(Arc::new(HookFailure("leaf"))))
        });
        x.lock().cold_mut().hooks.push((1, failing));
        // y = sum(x²); dy/dx = 2x
        let y = ops::sum(&ops::mul(&x, &x)?, None, false)?;
        let err = backward(&y, true).err();
        assert_eq!(calls.load(Ordering::SeqCst), 1, "the leaf hook ran once");
        match &err {
            Some(Error::External(e)) => {
                assert_eq!(e.to_string(), "hook failure: leaf");
                assert!(e.as_any().downcast_ref::<HookFailure>().is_some());
            }
            other => panic_msg(&format!(
                "expected Error::External from the hook, got {other:?}"
            )),
        }
        assert!(x.grad().is_none(), "a failed backward must not accumulate");

        // remove the hook: the retained graph backprops fine
        x.lock().cold_mut().hooks.retain(|(id, _)| *id != 1);
        backward(&y, false)?;
        assert_values(
            &x.grad().ok_or_else(|| Error::runtime("no grad"))?,
            &[2.0, 4.0, 6.0],
            0.0,
            0.0,
        );

        // a hook on a non-leaf (a pre-hook of its grad_fn) failing mid-graph
        x.set_grad(None)?;
        let h = ops::mul_scalar(&x, crate::Scalar::Float(3.0))?;
        let out = ops::sum(&ops::exp(&h)?, None, false)?;
        let node = h
            .grad_fn()
            .ok_or_else(|| Error::runtime("h has no grad_fn"))?;
        let failing: Hook = Arc::new(|_g: &Tensor| -> Result<Option<Tensor>> {
            Err(Error::runtime("non-leaf hook failed"))
        });
        node.lock()
            .pre_hooks_mut()
            .push((h.output_nr(), 7, failing));
        match backward(&out, true) {
            Err(Error::Runtime(m)) => assert_eq!(m, "non-leaf hook failed"),
            other => panic_msg(&format!(
                "expected the hook's error, got {:?}",
                other.map(|_| ())
            )),
        }
        assert!(x.grad().is_none());
        node.lock().pre_hooks_mut().clear();
        drop(node);
        backward(&out, false)?;
        // out = Σ exp(3x); d/dx = 3·exp(3x)
        let want: Vec<f64> = [1.0f64, 2.0, 3.0]
            .iter()
            .map(|v| 3.0 * (3.0 * v).exp())
            .collect();
        assert_values(
            &x.grad().ok_or_else(|| Error::runtime("no grad"))?,
            &want,
            0.0,
            1e-12,
        );

        // a hook that replaces the gradient is honoured (sanity of the same mechanism)
        let z = leaf(vec![5.0], &[1]);
        let doubling: Hook = Arc::new(|g: &Tensor| -> Result<Option<Tensor>> {
            Ok(Some(ops::mul_scalar(g, crate::Scalar::Float(2.0))?))
        });
        z.lock().cold_mut().hooks.push((2, doubling));
        backward(&ops::sum(&z, None, false)?, false)?;
        assert_values(
            &z.grad().ok_or_else(|| Error::runtime("no grad"))?,
            &[2.0],
            0.0,
            0.0,
        );
        Ok(())
    }

    /// A panicking hook becomes an internal error instead of tearing down the pool, and
    /// the next backward works.
    #[test]
    fn hook_panic_is_caught() -> Result<()> {
        let x = leaf(vec![1.0, -1.0], &[2]);
        let h = ops::tanh(&x)?;
        let node = h
            .grad_fn()
            .ok_or_else(|| Error::runtime("h has no grad_fn"))?;
        let panicking: Hook =
            Arc::new(|_g: &Tensor| -> Result<Option<Tensor>> { panic_msg("boom in hook") });
        node.lock().pre_hooks_mut().push((0, 9, panicking));
        let y = ops::sum(&ops::mul(&h, &h)?, None, false)?;
        match backward(&y, true) {
            Err(Error::Internal(m)) => assert!(m.contains("boom in hook"), "{m}"),
            other => panic_msg(&format!(
                "expected Error::Internal, got {:?}",
                other.map(|_| ())
            )),
        }
        node.lock().pre_hooks_mut().clear();
        drop(node);
        backward(&y, false)?;
        // y = Σ tanh(x)²; dy/dx = 2·tanh(x)·(1 - tanh²(x))
        let want: Vec<f64> = [1.0f64, -1.0]
            .iter()
            .map(|v| 2.0 * v.tanh() * (1.0 - v.tanh() * v.tanh()))
            .collect();
        assert_values(
            &x.grad().ok_or_else(|| Error::runtime("no grad"))?,
            &want,
            1e-15,
            1e-12,
        );
        Ok(())
    }

    /// x³ with a hand-written backward `g·3x²`. With `honest`, x² is built from the
    /// saved x with history (so double backward sees it); otherwise from a detached x,
    /// which keeps the first derivative right but silently zeroes the second.
    #[derive(Clone)]
    struct CubeBackward {
        honest: bool,
    }
    impl crate::autograd::function::Backward for CubeBackward {
        fn name(&self) -> std::borrow::Cow<'static, str> {
            "CubeBackward".into()
        }
        fn apply(
            &self,
            ctx: &crate::autograd::function::BackwardCtx<'_>,
            g: &[Option<Tensor>],
        ) -> Result<crate::autograd::function::Grads> {
            let x = ctx.saved(0)?;
            let x = if self.honest { x } else { x.detach() };
            let g = g
                .first()
                .cloned()
                .flatten()
                .ok_or_else(|| Error::runtime("no grad"))?;
            let d = ops::mul_scalar(&ops::mul(&x, &x)?, crate::Scalar::Float(3.0))?;
            Ok(smallvec::smallvec![Some(ops::mul(&g, &d)?)])
        }
    }

    fn cube(x: &Tensor, honest: bool) -> Result<Tensor> {
        let y = with_grad_mode(false, || ops::mul(x, &ops::mul(x, x)?))?;
        let op: Arc<dyn crate::autograd::function::Backward> = Arc::new(CubeBackward { honest });
        let saved = smallvec::smallvec![crate::autograd::graph::SavedTensor::input(x)];
        crate::ops::attach(crate::ops::BackwardOp::from(op), &[x], saved, &[&y])?;
        Ok(y)
    }

    #[test]
    fn gradgradcheck_catches_a_wrong_double_backward() -> Result<()> {
        let x = leaf(vec![0.5, -1.25, 2.0], &[3]);
        // both versions have the right first derivative 3x²
        gradcheck(|xs| cube(&xs[0], true), std::slice::from_ref(&x))?;
        gradcheck(|xs| cube(&xs[0], false), std::slice::from_ref(&x))?;
        // only the honest one has the right second derivative 6x
        gradgradcheck(|xs| cube(&xs[0], true), std::slice::from_ref(&x))?;
        let msg = gradgradcheck(|xs| cube(&xs[0], false), std::slice::from_ref(&x))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            msg.starts_with("gradgradcheck (double backward): Jacobian mismatch"),
            "{msg}"
        );
        // the mismatch is w.r.t. input 0 (x), not v (input 1)
        assert!(msg.contains("with respect to input 0"), "{msg}");
        Ok(())
    }
}
