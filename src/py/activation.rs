//! Bindings of `ops::activation` (the parameterized activations, mvlgamma, angle and
//! prelu's kernel) and `torch.rsub`; python/rgrad/_composite5.py builds torch's
//! functions and Tensor methods on them.

use super::convert::{self, Arg, arg, scalar};
use super::pytensor::{PyTensor, alpha_arg, run, run2, wrap};
use crate::backend::Bessel;
use crate::dtype::Scalar;
use crate::ops::{self, Act, Operand};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// The [`Act`] named `kind`, its parameters from `p` (in the order of the variant's
/// fields).
fn act(kind: &str, p: &[f64]) -> PyResult<Act> {
    let at = |i: usize| {
        p.get(i).copied().ok_or_else(|| {
            PyValueError::new_err(format!("_activation: '{kind}' takes more parameters"))
        })
    };
    Ok(match kind {
        "threshold" => Act::Threshold {
            threshold: at(0)?,
            value: at(1)?,
        },
        "hardshrink" => Act::Hardshrink { lambd: at(0)? },
        "softshrink" => Act::Softshrink { lambd: at(0)? },
        "elu" => Act::Elu {
            alpha: at(0)?,
            scale: at(1)?,
            input_scale: at(2)?,
        },
        "celu" => Act::Celu { alpha: at(0)? },
        "hardtanh" => Act::Hardtanh {
            min: at(0)?,
            max: at(1)?,
        },
        "leaky_relu" => Act::LeakyRelu { slope: at(0)? },
        "gelu" => Act::Gelu {
            tanh: at(0)? != 0.0,
        },
        "silu" => Act::Silu,
        "mish" => Act::Mish,
        "softplus" => Act::Softplus {
            beta: at(0)?,
            threshold: at(1)?,
        },
        "hardsigmoid" => Act::Hardsigmoid,
        "hardswish" => Act::Hardswish,
        "log_sigmoid" => Act::LogSigmoid,
        "rrelu_eval" => Act::Rrelu {
            lower: at(0)?,
            upper: at(1)?,
            training: false,
        },
        "mvlgamma" => Act::Mvlgamma { p: at(0)? as i64 },
        "angle" => Act::Angle,
        "i0" => Act::Bessel(Bessel::I0),
        "i0e" => Act::Bessel(Bessel::I0e),
        "i1" => Act::Bessel(Bessel::I1),
        "i1e" => Act::Bessel(Bessel::I1e),
        _ => {
            return Err(PyValueError::new_err(format!(
                "_activation: unknown activation '{kind}'"
            )));
        }
    })
}

/// The parameters as numbers (bools, ints and floats), and their values.
fn numbers(kind: &str, params: &[Bound<'_, PyAny>]) -> PyResult<(Vec<Scalar>, Vec<f64>)> {
    let shown = params
        .iter()
        .map(|p| {
            scalar(p).ok_or_else(|| {
                PyTypeError::new_err(format!(
                    "{kind}(): a parameter must be a number, not {}",
                    convert::type_name(p)
                ))
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let values = shown.iter().map(|s| s.as_f64()).collect();
    Ok((shown, values))
}

/// `_C._activation(x, kind, params)`: the activation `kind` of `x` (see
/// `ops::activation::Act` for the kinds and their parameters, numbers given in the
/// order of the variant's fields; the node shows them as given).
#[pyfunction]
pub fn _activation(
    py: Python<'_>,
    x: PyRef<'_, PyTensor>,
    kind: &str,
    params: Vec<Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    let (shown, values) = numbers(kind, &params)?;
    let a = act(kind, &values)?;
    let t = x.t.clone();
    wrap(py, run(py, &t, || ops::activation(a, &shown, &t))?)
}

/// `_C._activation_(x, kind, params)`: the activation written into `x`; returns `x`.
#[pyfunction]
pub fn _activation_(
    x: &Bound<'_, PyTensor>,
    kind: &str,
    params: Vec<Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    let (shown, values) = numbers(kind, &params)?;
    let a = act(kind, &values)?;
    ops::activation_(a, &shown, &x.get().t)?;
    Ok(x.clone().unbind())
}

/// `_C._prelu_kernel(x, weight)`: torch's `_prelu_kernel` (`weight` broadcast to `x`).
#[pyfunction]
pub fn _prelu_kernel(
    py: Python<'_>,
    x: PyRef<'_, PyTensor>,
    weight: PyRef<'_, PyTensor>,
) -> PyResult<Py<PyTensor>> {
    let (t, w) = (x.t.clone(), weight.t.clone());
    wrap(py, run2(py, &t, &Arg::T(&w), || ops::prelu_kernel(&t, &w))?)
}

/// `torch.rsub(input, other, *, alpha=1)`: `other - alpha * input`.
#[pyfunction]
#[pyo3(signature = (input, other, *, alpha=None))]
pub fn rsub(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
    alpha: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    let (Ok(x), Some(o)) = (input.cast::<PyTensor>(), arg(other)) else {
        return Err(PyTypeError::new_err(format!(
            "rsub() received an invalid combination of arguments - got ({}, {}), but expected one of:\n * (Tensor input, Tensor other, *, Number alpha = 1)\n * (Tensor input, Number other, Number alpha = 1)\n",
            convert::type_name(input),
            convert::type_name(other)
        )));
    };
    let a = alpha_arg(alpha)?;
    let x = x.get().t.clone();
    let operand = match &o {
        Arg::T(t) => Operand::T(t),
        Arg::S(s) => Operand::S(*s),
    };
    wrap(py, run2(py, &x, &o, || ops::rsub_op(&x, operand, a))?)
}

/// `_C._igamma(a, x, upper)`: torch.igamma (torch.igammac where `upper`).
#[pyfunction]
pub fn _igamma(
    py: Python<'_>,
    a: PyRef<'_, PyTensor>,
    x: PyRef<'_, PyTensor>,
    upper: bool,
) -> PyResult<Py<PyTensor>> {
    let (a, x) = (a.t.clone(), x.t.clone());
    wrap(
        py,
        run2(py, &a, &Arg::T(&x), || {
            ops::activation::igamma(&a, &x, upper)
        })?,
    )
}

/// `_C._igamma_(a, x, upper)`: `a.igamma_(x)` (`a.igammac_(x)` where `upper`); returns `a`.
#[pyfunction]
pub fn _igamma_(
    a: &Bound<'_, PyTensor>,
    x: PyRef<'_, PyTensor>,
    upper: bool,
) -> PyResult<Py<PyTensor>> {
    ops::activation::igamma_(&a.get().t, &x.t, upper)?;
    Ok(a.clone().unbind())
}

/// `_C._rrelu_with_noise(x, noise, params, inplace)`: rrelu in training mode, `x·noise`
/// (params: lower, upper); returns `x` where `inplace`.
#[pyfunction]
pub fn _rrelu_with_noise(
    py: Python<'_>,
    x: &Bound<'_, PyTensor>,
    noise: PyRef<'_, PyTensor>,
    params: Vec<Bound<'_, PyAny>>,
    inplace: bool,
) -> PyResult<Py<PyTensor>> {
    let (shown, _) = numbers("rrelu", &params)?;
    let (t, n) = (x.get().t.clone(), noise.t.clone());
    let r = run(py, &t, || {
        ops::activation::rrelu_with_noise(&t, &n, &shown, inplace)
    })?;
    if inplace {
        Ok(x.clone().unbind())
    } else {
        wrap(py, r)
    }
}
