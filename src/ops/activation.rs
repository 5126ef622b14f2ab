//! The activation functions of torch.nn.functional that take parameters (threshold,
//! hardshrink, softshrink, elu / celu / selu, hardtanh, leaky_relu, gelu, silu, mish,
//! softplus, hardsigmoid, hardswish, logsigmoid, rrelu in eval mode) and the pointwise
//! ops with a parameter or a node of their own (mvlgamma, angle of a real tensor), plus
//! prelu (two inputs), the Bessel functions (i0, special.i0e / i1 / i1e) and the
//! regularized incomplete gamma functions (igamma, igammac).
//!
//! Each is one [`Act`]: its value is computed from existing ops, recording nothing, in
//! the order torch's CPU kernel computes it; its node ([`ActBackward`]) carries torch's
//! name and `_saved_*` fields, and its derivative is torch's formula (derivatives.yaml,
//! ATen's `*_backward` kernels) written with recorded ops, so that double backward and
//! forward AD (by transposition, `ops::jvp`) work.

use super::apply;
use super::elementwise::{Saver, get, grad0};
use super::{Operand, where_op};
use crate::autograd::function::{Backward, BackwardCtx, Grads, SavedField};
use crate::backend::{ActFn, Bessel};
use crate::dtype::{DType, Scalar};
use crate::tensor::Tensor;
use crate::{Error, Result};
use std::borrow::Cow;

/// One activation and its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Act {
    /// `x <= threshold ? value : x` (ThresholdBackward0)
    Threshold { threshold: f64, value: f64 },
    /// `|x| <= lambd ? 0 : x` (HardshrinkBackward0)
    Hardshrink { lambd: f64 },
    /// `x > l ? x - l : x < -l ? x + l : 0` (SoftshrinkBackward0)
    Softshrink { lambd: f64 },
    /// `x <= 0 ? expm1(x·input_scale)·alpha·scale : x·scale` (EluBackward0; selu is
    /// elu with torch's constants)
    Elu {
        alpha: f64,
        scale: f64,
        input_scale: f64,
    },
    /// elu(x, alpha, 1, 1/alpha) (CeluBackward0)
    Celu { alpha: f64 },
    /// `clamp(x, min, max)` (HardtanhBackward0; relu6 is hardtanh(0, 6))
    Hardtanh { min: f64, max: f64 },
    /// `x > 0 ? x : x·slope` (LeakyReluBackward0)
    LeakyRelu { slope: f64 },
    /// `x·Φ(x)`, or its tanh approximation (GeluBackward0)
    Gelu { tanh: bool },
    /// `x·sigmoid(x)` (SiluBackward0)
    Silu,
    /// `x·tanh(softplus(x))` (MishBackward0)
    Mish,
    /// `x·beta > threshold ? x : log1p(exp(x·beta)) / beta` (SoftplusBackward0)
    Softplus { beta: f64, threshold: f64 },
    /// `clamp(x + 3, 0, 6) / 6` (HardsigmoidBackward0)
    Hardsigmoid,
    /// `x·clamp(x + 3, 0, 6) / 6` (HardswishBackward0)
    Hardswish,
    /// `min(x, 0) - log1p(exp(-|x|))` (LogSigmoidBackward0)
    LogSigmoid,
    /// rrelu (RreluWithNoiseBackward0): with `training=False` leaky_relu with the slope
    /// `(lower + upper) / 2`; with `training=True` `x·noise`, the noise (the slopes drawn
    /// for the elements <= 0, 1 elsewhere) given by the caller ([`rrelu_with_noise`])
    Rrelu {
        lower: f64,
        upper: f64,
        training: bool,
    },
    /// the multivariate log-gamma function of order p (MvlgammaBackward0)
    Mvlgamma { p: i64 },
    /// the angle of a real number: π for x < 0, else 0 (NaN kept) (AngleBackward0)
    Angle,
    /// a modified Bessel function of the first kind: i0 (I0Backward0), special.i0e
    /// (SpecialI0EBackward0), special.i1 (SpecialI1Backward0), special.i1e
    /// (SpecialI1EBackward0); the backend's `bessel` kernel
    Bessel(Bessel),
}

/// The kernel name torch's dtype check reports (`"gelu_cpu" not implemented for 'Long'`),
/// where the op takes floats only.
fn float_kernel(act: Act) -> Option<&'static str> {
    Some(match act {
        Act::Threshold { .. }
        | Act::Hardtanh { .. }
        | Act::Mvlgamma { .. }
        | Act::Angle
        | Act::Bessel(_) => {
            return None;
        }
        Act::Hardshrink { .. } => "hardshrink_cpu",
        Act::Softshrink { .. } => "softshrink_check",
        Act::Elu { .. } | Act::Celu { .. } => "elu_cpu",
        Act::LeakyRelu { .. } | Act::Rrelu { .. } => "leaky_relu_cpu",
        Act::Gelu { .. } => "GeluKernelImpl",
        Act::Silu => "silu_cpu",
        Act::Mish => "mish_cpu",
        Act::Softplus { .. } => "softplus_cpu",
        Act::Hardsigmoid => "hardsigmoid_cpu",
        Act::Hardswish => "hardswish_cpu",
        Act::LogSigmoid => "log_sigmoid_cpu",
    })
}

/// Whether the node of the in-place form saves the result instead of the input (torch's
/// `*Backward1` nodes: elu_, celu_, selu_, leaky_relu_, rrelu_).
fn inplace_saves_result(act: Act) -> bool {
    matches!(
        act,
        Act::Elu { .. } | Act::Celu { .. } | Act::LeakyRelu { .. } | Act::Rrelu { .. }
    )
}

fn f(v: f64) -> Scalar {
    Scalar::Float(v)
}

/// Runs `body` recording nothing and computing no tangents (a forward made of ops).
fn quietly<T>(body: impl FnOnce() -> Result<T>) -> Result<T> {
    crate::autograd::grad_mode::with_grad_mode(false, || {
        crate::autograd::forward_ad::with_enabled(false, body)
    })
}

/// `cond ? a : b` with number branches.
fn pick(cond: &Tensor, a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    where_op(cond, a, b)
}

/// The `p - 1, …, 1, 0` halves subtracted from x in mvlgamma: torch's
/// `arange(-p/2 + 0.5, 0.5, 0.5)` added to `x.unsqueeze(-1)`.
fn mvlgamma_args(x: &Tensor, p: i64) -> Result<Tensor> {
    let offsets = super::arange(-(p as f64) * 0.5 + 0.5, 0.5, 0.5, x.dtype())?;
    super::add(&super::unsqueeze(x, -1)?, &offsets)
}

/// The value of `act` at `x` (a float tensor, or an integer one where the op takes it);
/// `noise`: rrelu's in training mode.
fn value(act: Act, x: &Tensor, noise: Option<&Tensor>) -> Result<Tensor> {
    use Operand::{S, T};
    let int = !x.dtype().is_float();
    if !int
        && let Some(op) = fused_fn(act)
        && let Some(y) = super::elementwise::fused_unary(x, op)?
    {
        return Ok(y);
    }
    match act {
        Act::Threshold { threshold, value } => {
            let v = if int {
                Scalar::Int(value as i64)
            } else {
                f(value)
            };
            pick(&super::le_scalar(x, threshold)?, S(v), T(x))
        }
        Act::Hardshrink { lambd } => {
            let inside =
                super::logical_and(&super::ge_scalar(x, -lambd)?, &super::le_scalar(x, lambd)?)?;
            pick(&inside, S(f(0.0)), T(x))
        }
        Act::Softshrink { lambd } => {
            let lo = pick(
                &super::lt_scalar(x, -lambd)?,
                T(&super::add_scalar(x, f(lambd))?),
                T(&super::mul_scalar(x, f(0.0))?),
            )?;
            pick(
                &super::gt_scalar(x, lambd)?,
                T(&super::sub_scalar(x, f(lambd))?),
                T(&lo),
            )
        }
        Act::Elu {
            alpha,
            scale,
            input_scale,
        } => elu_value(x, alpha, scale, input_scale),
        Act::Celu { alpha } => elu_value(x, alpha, 1.0, 1.0 / alpha),
        Act::Hardtanh { min, max } => {
            let (lo, hi) = if int {
                (Scalar::Int(min as i64), Scalar::Int(max as i64))
            } else {
                (f(min), f(max))
            };
            super::clamp(x, Some(lo), Some(hi))
        }
        Act::LeakyRelu { slope } => leaky(x, slope),
        Act::Rrelu { training: true, .. } => match noise {
            Some(n) => super::mul(x, n),
            None => Err(Error::Internal(
                "rrelu in training mode without its noise".into(),
            )),
        },
        Act::Rrelu { lower, upper, .. } => leaky(x, (lower + upper) / 2.0),
        Act::Gelu { tanh: false } => {
            // x · 0.5 · (1 + erf(x / √2))
            let e = super::erf(&super::mul_scalar(x, f(std::f64::consts::FRAC_1_SQRT_2))?)?;
            let y = super::mul(
                &super::mul_scalar(x, f(0.5))?,
                &super::add_scalar(&e, f(1.0))?,
            )?;
            if x.dtype() == DType::F32 && crate::backend::torch_cpu_avx512() {
                // torch's AVX-512 float32 kernel gives NaN at +∞ (its AVX2 one +∞)
                pick(&super::eq_scalar(x, f64::INFINITY)?, S(f(f64::NAN)), T(&y))
            } else {
                Ok(y)
            }
        }
        Act::Gelu { tanh: true } => {
            // 0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³)))
            let cube = super::mul(&super::mul(x, x)?, x)?;
            let inner = super::mul_scalar(
                &super::add(x, &super::mul_scalar(&cube, f(GELU_KAPPA))?)?,
                f(GELU_BETA),
            )?;
            super::mul(
                &super::mul_scalar(x, f(0.5))?,
                &super::add_scalar(&super::tanh(&inner)?, f(1.0))?,
            )
        }
        Act::Silu => super::div(
            x,
            &super::add_scalar(&super::exp(&super::neg(x)?)?, f(1.0))?,
        ),
        Act::Mish => super::mul(x, &super::tanh(&super::log1p(&super::exp(x)?)?)?),
        Act::Softplus { beta, threshold } => {
            let xb = super::mul_scalar(x, f(beta))?;
            let soft = super::div_scalar(&super::log1p(&super::exp(&xb)?)?, f(beta))?;
            pick(&super::gt_scalar(&xb, threshold)?, T(x), T(&soft))
        }
        Act::Hardsigmoid => super::div_scalar(
            &super::clamp(&super::add_scalar(x, f(3.0))?, Some(f(0.0)), Some(f(6.0)))?,
            f(6.0),
        ),
        Act::Hardswish => super::div_scalar(
            &super::mul(
                x,
                &super::clamp(&super::add_scalar(x, f(3.0))?, Some(f(0.0)), Some(f(6.0)))?,
            )?,
            f(6.0),
        ),
        Act::LogSigmoid => {
            let z = log_sigmoid_buffer(x)?;
            let min = super::clamp(x, None, Some(f(0.0)))?;
            super::sub(&min, &super::log1p(&z)?)
        }
        Act::Mvlgamma { p } => {
            let c = (p * (p - 1)) as f64 * std::f64::consts::PI.ln() / 4.0;
            let s = super::sum(&super::lgamma(&mvlgamma_args(x, p)?)?, Some(&[-1]), false)?;
            super::add_scalar(&s, f(c))
        }
        Act::Angle => {
            // π where x < 0, x itself where NaN (x·0 elsewhere keeps the NaN), else 0
            let nan = super::logical_not(&super::eq(x, x)?)?;
            let a = pick(
                &super::lt_scalar(x, 0.0)?,
                S(f(std::f64::consts::PI)),
                T(&super::zeros_like(x)?),
            )?;
            pick(&nan, T(x), T(&a))
        }
        Act::Bessel(op) => bessel_kernel(op, x),
    }
}

/// The backend's one-pass kernel for `act` (the same bits as the composite below), where
/// it has one.
fn fused_fn(act: Act) -> Option<ActFn> {
    Some(match act {
        Act::Threshold { threshold, value } => ActFn::Threshold { threshold, value },
        Act::Hardshrink { lambd } => ActFn::Hardshrink { lambd },
        Act::Softshrink { lambd } => ActFn::Softshrink { lambd },
        Act::Elu {
            alpha,
            scale,
            input_scale,
        } => ActFn::Elu {
            alpha,
            scale,
            input_scale,
        },
        Act::Celu { alpha } => ActFn::Elu {
            alpha,
            scale: 1.0,
            input_scale: 1.0 / alpha,
        },
        Act::LeakyRelu { slope } => ActFn::LeakyRelu { slope },
        Act::Rrelu {
            lower,
            upper,
            training: false,
        } => ActFn::LeakyRelu {
            slope: (lower + upper) / 2.0,
        },
        Act::Gelu { tanh } => ActFn::Gelu { tanh },
        Act::Silu => ActFn::Silu,
        Act::Hardsigmoid => ActFn::Hardsigmoid,
        Act::Hardswish => ActFn::Hardswish,
        Act::Angle => ActFn::Angle,
        _ => return None,
    })
}

/// The backend's Bessel kernel over a float tensor (recording nothing).
fn bessel_kernel(op: Bessel, x: &Tensor) -> Result<Tensor> {
    let s = x.snapshot();
    super::elementwise::unary_out(&s.layout, |l| {
        crate::backend::bessel(op, &s.storage.read(), l)
    })
}

/// √(2/π) and the cubic coefficient of gelu's tanh approximation (ATen's kBeta, kKappa).
const GELU_BETA: f64 = std::f64::consts::SQRT_2 * std::f64::consts::FRAC_2_SQRT_PI * 0.5;
const GELU_KAPPA: f64 = 0.044715;

fn elu_value(x: &Tensor, alpha: f64, scale: f64, input_scale: f64) -> Result<Tensor> {
    let neg = super::mul_scalar(
        &super::expm1(&super::mul_scalar(x, f(input_scale))?)?,
        f(alpha * scale),
    )?;
    pick(
        &super::le_scalar(x, 0.0)?,
        Operand::T(&neg),
        Operand::T(&super::mul_scalar(x, f(scale))?),
    )
}

fn leaky(x: &Tensor, slope: f64) -> Result<Tensor> {
    pick(
        &super::gt_scalar(x, 0.0)?,
        Operand::T(x),
        Operand::T(&super::mul_scalar(x, f(slope))?),
    )
}

/// `exp(-|x|)`: what torch's log_sigmoid_forward keeps as its `buffer`.
fn log_sigmoid_buffer(x: &Tensor) -> Result<Tensor> {
    super::exp(&super::neg(&super::abs(x)?)?)
}

/// Checks torch makes before computing `act` on `x`.
fn check(act: Act, x: &Tensor) -> Result<()> {
    let dt = x.dtype();
    if dt == DType::Bool {
        match act {
            Act::Hardtanh { .. } => {
                return Err(Error::not_implemented(
                    "Bool inputs not supported for hardtanh",
                ));
            }
            Act::Threshold { .. } => {
                return Err(Error::not_implemented(
                    "\"threshold_cpu\" not implemented for 'Bool'",
                ));
            }
            Act::Mvlgamma { .. } => {
                return Err(Error::runtime(
                    "The input tensor may not be a boolean tensor.",
                ));
            }
            _ => {}
        }
    }
    if !dt.is_float()
        && let Some(k) = float_kernel(act)
    {
        return Err(Error::not_implemented(format!(
            "\"{k}\" not implemented for '{}'",
            dt.scalar_type_name()
        )));
    }
    match act {
        Act::Softshrink { lambd }
            if !(0.0..=f32::MAX as f64).contains(&lambd) || lambd.is_nan() =>
        {
            let (max, name) = if dt == DType::F64 {
                ("1.79769e+308", "Double")
            } else {
                ("3.40282e+38", "Float")
            };
            Err(Error::runtime(format!(
                "lambda must be in range [0, {max}] for input dtype {name}, but found {}",
                fmt_g(lambd)
            )))
        }
        Act::Hardtanh { min, max } if min > max => {
            Err(Error::value("min_val cannot be greater than max_val"))
        }
        Act::Mvlgamma { p } if p < 1 => {
            Err(Error::runtime("p has to be greater than or equal to 1"))
        }
        _ => Ok(()),
    }
}

/// A number as C++'s `<<` prints a double (`-1`, `0.5`).
fn fmt_g(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e16 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// `act(x)`, recorded as torch records it (`node` names the node: the in-place forms
/// have names of their own).
fn act_as(
    act: Act,
    shown: &[Scalar],
    x: &Tensor,
    inplace: bool,
    noise: Option<&Tensor>,
) -> Result<Tensor> {
    check(act, x)?;
    let promoted;
    let x = if matches!(act, Act::Mvlgamma { .. } | Act::Angle | Act::Bessel(_))
        && !x.dtype().is_float()
    {
        promoted = super::to_dtype(x, DType::default_float())?;
        &promoted
    } else {
        x
    };
    let saves_result = inplace && inplace_saves_result(act);
    apply(
        aten_name(act),
        &[x],
        || quietly(|| value(act, x, noise)),
        |y| {
            let mut sv = Saver::default();
            let saved = if saves_result {
                Some(sv.output(y))
            } else {
                sv.input_if(true, x)
            };
            // logsigmoid's buffer and rrelu's noise (eval mode: unused, zeros), saved as
            // torch's are; special.i0e, i1, i1e save their result too
            let extra = match act {
                Act::Bessel(Bessel::I0e | Bessel::I1 | Bessel::I1e) => Some(sv.output(y)),
                Act::LogSigmoid => quietly(|| log_sigmoid_buffer(x))
                    .ok()
                    .and_then(|b| sv.input_if(true, &b)),
                Act::Rrelu { .. } => match noise {
                    Some(n) => sv.input_if(true, n),
                    None => super::zeros_like(x)
                        .ok()
                        .and_then(|b| sv.input_if(true, &b)),
                },
                _ => None,
            };
            (
                std::sync::Arc::new(ActBackward {
                    act,
                    inplace,
                    saved,
                    saves_result,
                    extra,
                    shown: shown.iter().copied().collect(),
                }) as std::sync::Arc<dyn Backward>,
                sv.list,
            )
        },
    )
}

fn aten_name(act: Act) -> &'static str {
    match act {
        Act::Threshold { .. } => "aten::threshold",
        Act::Hardshrink { .. } => "aten::hardshrink",
        Act::Softshrink { .. } => "aten::softshrink",
        Act::Elu { .. } => "aten::elu",
        Act::Celu { .. } => "aten::celu",
        Act::Hardtanh { .. } => "aten::hardtanh",
        Act::LeakyRelu { .. } => "aten::leaky_relu",
        Act::Gelu { .. } => "aten::gelu",
        Act::Silu => "aten::silu",
        Act::Mish => "aten::mish",
        Act::Softplus { .. } => "aten::softplus",
        Act::Hardsigmoid => "aten::hardsigmoid",
        Act::Hardswish => "aten::hardswish",
        Act::LogSigmoid => "aten::log_sigmoid_forward",
        Act::Rrelu { .. } => "aten::rrelu_with_noise",
        Act::Mvlgamma { .. } => "aten::mvlgamma",
        Act::Angle => "aten::angle",
        Act::Bessel(Bessel::I0) => "aten::i0",
        Act::Bessel(Bessel::I0e) => "aten::special_i0e",
        Act::Bessel(Bessel::I1) => "aten::special_i1",
        Act::Bessel(Bessel::I1e) => "aten::special_i1e",
    }
}

/// The Bessel function `op` of `x` (torch.i0, torch.special.i0e / i1 / i1e), recorded.
pub fn bessel(op: Bessel, x: &Tensor) -> Result<Tensor> {
    act_as(Act::Bessel(op), &[], x, false, None)
}

/// `act(x)` (see [`Act`]); `shown`: its parameters as the caller gave them (a Python int
/// or float), as the node's `_saved_*` fields show them.
pub fn activation(act: Act, shown: &[Scalar], x: &Tensor) -> Result<Tensor> {
    act_as(act, shown, x, false, None)
}

/// torch's `rrelu_with_noise(x, noise, lower, upper, training=True)`: `x·noise`, the
/// noise drawn by the caller from the generator (python/rgrad/_composite5.py: torch's
/// uniform stream, one double per element <= 0, in order), saved for the backward
/// (`g·noise`); written into `x` where `inplace` (RreluWithNoiseBackward1).
pub fn rrelu_with_noise(
    x: &Tensor,
    noise: &Tensor,
    shown: &[Scalar],
    inplace: bool,
) -> Result<Tensor> {
    let (lower, upper) = match shown {
        [l, u, ..] => (l.as_f64(), u.as_f64()),
        _ => return Err(Error::Internal("rrelu_with_noise: lower and upper".into())),
    };
    let act = Act::Rrelu {
        lower,
        upper,
        training: true,
    };
    if x.shape() != noise.shape() || x.dtype() != noise.dtype() {
        return Err(Error::runtime(
            "rrelu_with_noise: the noise must have the input's shape and dtype",
        ));
    }
    if inplace {
        super::inplace::inplace_no_overlap(x, |x| act_as(act, shown, x, true, Some(noise)))
    } else {
        act_as(act, shown, x, false, Some(noise))
    }
}

/// `act(x)` written into `x` (torch's in-place form: `elu_`, `threshold_`, ...).
pub fn activation_(act: Act, shown: &[Scalar], x: &Tensor) -> Result<Tensor> {
    if let Act::Mvlgamma { .. } | Act::Angle | Act::Bessel(_) = act
        && !x.dtype().is_float()
    {
        check(act, x)?;
        let name = x.dtype().scalar_type_name();
        return Err(Error::runtime(if let Act::Mvlgamma { .. } = act {
            // (torch's message names the types the other way round)
            format!("mvlgamma: result type {name} can't be cast to the desired output type Float")
        } else {
            format!("result type Float can't be cast to the desired output type {name}")
        }));
    }
    super::inplace::inplace_no_overlap(x, |x| act_as(act, shown, x, true, None))
}

/// The node of an [`Act`].
#[derive(Clone)]
pub struct ActBackward {
    act: Act,
    /// the in-place form (torch's `*Backward1` names, where it has them)
    inplace: bool,
    /// the input, or the result where `saves_result`
    saved: Option<u8>,
    saves_result: bool,
    /// logsigmoid's buffer, rrelu's noise
    extra: Option<u8>,
    /// the parameters as given, in the order of the variant's fields
    shown: smallvec::SmallVec<[Scalar; 3]>,
}

impl Backward for ActBackward {
    fn name(&self) -> Cow<'static, str> {
        let one = self.inplace;
        match self.act {
            Act::Threshold { .. } if one => "ThresholdBackward1",
            Act::Threshold { .. } => "ThresholdBackward0",
            Act::Hardshrink { .. } => "HardshrinkBackward0",
            Act::Softshrink { .. } => "SoftshrinkBackward0",
            Act::Elu { .. } if one => "EluBackward1",
            Act::Elu { .. } => "EluBackward0",
            Act::Celu { .. } if one => "CeluBackward1",
            Act::Celu { .. } => "CeluBackward0",
            Act::Hardtanh { .. } => "HardtanhBackward0",
            Act::LeakyRelu { .. } if one => "LeakyReluBackward1",
            Act::LeakyRelu { .. } => "LeakyReluBackward0",
            Act::Gelu { .. } => "GeluBackward0",
            Act::Silu => "SiluBackward0",
            Act::Mish => "MishBackward0",
            Act::Softplus { .. } => "SoftplusBackward0",
            Act::Hardsigmoid => "HardsigmoidBackward0",
            Act::Hardswish => "HardswishBackward0",
            Act::LogSigmoid => "LogSigmoidBackward0",
            Act::Rrelu { .. } if one => "RreluWithNoiseBackward1",
            Act::Rrelu { .. } => "RreluWithNoiseBackward0",
            // (mvlgamma_ too: torch's in-place mvlgamma records MvlgammaBackward0)
            Act::Mvlgamma { .. } => "MvlgammaBackward0",
            Act::Angle => "AngleBackward0",
            Act::Bessel(Bessel::I0) => "I0Backward0",
            Act::Bessel(Bessel::I0e) => "SpecialI0EBackward0",
            Act::Bessel(Bessel::I1) => "SpecialI1Backward0",
            Act::Bessel(Bessel::I1e) => "SpecialI1EBackward0",
        }
        .into()
    }

    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        // parameter `i` as given (or the value, where the caller gave none)
        let shown = |i: usize, v: f64| {
            SavedField::Scalar(self.shown.get(i).copied().unwrap_or(Scalar::Float(v)))
        };
        let s = SavedField::Tensor(self.saved);
        let me = if self.saves_result { "result" } else { "self" };
        match self.act {
            Act::Threshold { threshold, .. } => {
                vec![("self", s), ("threshold", shown(0, threshold))]
            }
            Act::Hardshrink { lambd } | Act::Softshrink { lambd } => {
                vec![("lambd", shown(0, lambd)), ("self", s)]
            }
            Act::Elu {
                alpha,
                scale,
                input_scale,
            } => vec![
                ("alpha", shown(0, alpha)),
                ("input_scale", shown(2, input_scale)),
                (me, s),
                ("scale", shown(1, scale)),
            ],
            Act::Celu { alpha } => vec![("alpha", shown(0, alpha)), (me, s)],
            Act::Hardtanh { min, max } => {
                vec![
                    ("max_val", shown(1, max)),
                    ("min_val", shown(0, min)),
                    ("self", s),
                ]
            }
            Act::LeakyRelu { slope } => vec![("negative_slope", shown(0, slope)), (me, s)],
            Act::Gelu { tanh } => vec![
                (
                    "approximate",
                    SavedField::Str(if tanh { "tanh" } else { "none" }),
                ),
                ("self", s),
            ],
            Act::Softplus { beta, threshold } => vec![
                ("beta", shown(0, beta)),
                ("self", s),
                ("threshold", shown(1, threshold)),
            ],
            Act::LogSigmoid => vec![("buffer", SavedField::Tensor(self.extra)), ("self", s)],
            Act::Rrelu {
                lower,
                upper,
                training,
            } => vec![
                ("lower", shown(0, lower)),
                ("noise", SavedField::Tensor(self.extra)),
                (me, s),
                ("training", SavedField::Bool(training)),
                ("upper", shown(1, upper)),
            ],
            Act::Mvlgamma { p } => vec![("p", SavedField::Int(p)), ("self", s)],
            Act::Silu
            | Act::Mish
            | Act::Hardsigmoid
            | Act::Hardswish
            | Act::Angle
            | Act::Bessel(Bessel::I0) => vec![("self", s)],
            Act::Bessel(_) => vec![("result", SavedField::Tensor(self.extra)), ("self", s)],
        }
    }

    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let s = get(ctx, self.saved)?;
        let y = match self.act {
            Act::Bessel(Bessel::I0e | Bessel::I1 | Bessel::I1e)
            | Act::Rrelu { training: true, .. } => Some(get(ctx, self.extra)?),
            _ => None,
        };
        Ok(smallvec::smallvec![Some(self.derivative(
            &g,
            &s,
            y.as_ref()
        )?)])
    }

    // every formula is elementwise in g, broadcasting the saved tensor against each
    // sample's gradient
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.apply(ctx, g))
    }
}

impl ActBackward {
    /// `g·f'(x)`, from the saved input (or result, where the node saves that instead),
    /// with recorded ops; `y`: the result where the node saves it besides the input
    /// (special.i0e, i1, i1e), rrelu's noise in training mode.
    fn derivative(&self, g: &Tensor, s: &Tensor, y: Option<&Tensor>) -> Result<Tensor> {
        use Operand::{S, T};
        if let Some(d) = self.fused_derivative(g, s) {
            return Ok(d);
        }
        let zero = S(f(0.0));
        match self.act {
            // threshold_backward: 0 where x <= threshold
            Act::Threshold { threshold, .. } => pick(&super::le_scalar(s, threshold)?, zero, T(g)),
            // hardshrink_backward / softshrink_backward: 0 where -l <= x <= l
            Act::Hardshrink { lambd } | Act::Softshrink { lambd } => {
                let inside = super::logical_and(
                    &super::ge_scalar(s, -lambd)?,
                    &super::le_scalar(s, lambd)?,
                )?;
                pick(&inside, zero, T(g))
            }
            Act::Elu {
                alpha,
                scale,
                input_scale,
            } => self.elu_backward(g, s, alpha, scale, input_scale),
            Act::Celu { alpha } => self.elu_backward(g, s, alpha, 1.0, 1.0 / alpha),
            // hardtanh_backward: 0 where x <= min or x >= max
            Act::Hardtanh { min, max } => {
                let inner = pick(&super::ge_scalar(s, max)?, zero, T(g))?;
                pick(&super::le_scalar(s, min)?, zero, T(&inner))
            }
            Act::LeakyRelu { slope } => self.leaky_backward(g, s, slope),
            Act::Rrelu {
                lower,
                upper,
                training: true,
            } if upper - lower > 1e-6 => {
                // rrelu_with_noise_backward: g·noise
                let noise = y.ok_or_else(|| {
                    Error::Internal(format!("{}: the noise was not saved", self.name()))
                })?;
                super::mul(g, noise)
            }
            Act::Rrelu { lower, upper, .. } => self.leaky_backward(g, s, (lower + upper) / 2.0),
            Act::Gelu { tanh: false } => {
                // g·(Φ(x) + x·φ(x))
                let cdf = super::mul_scalar(
                    &super::add_scalar(
                        &super::erf(&super::mul_scalar(s, f(std::f64::consts::FRAC_1_SQRT_2))?)?,
                        f(1.0),
                    )?,
                    f(0.5),
                )?;
                let k = std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2 * 0.5;
                let pdf = super::mul_scalar(
                    &super::exp(&super::mul_scalar(&super::mul(s, s)?, f(-0.5))?)?,
                    f(k),
                )?;
                super::mul(g, &super::add(&cdf, &super::mul(s, &pdf)?)?)
            }
            Act::Gelu { tanh: true } => {
                let x_sq = super::mul(s, s)?;
                let x_cube = super::mul(&x_sq, s)?;
                let inner = super::mul_scalar(
                    &super::add(s, &super::mul_scalar(&x_cube, f(GELU_KAPPA))?)?,
                    f(GELU_BETA),
                )?;
                let t = super::tanh(&inner)?;
                let left = super::mul_scalar(s, f(0.5))?;
                let right = super::add_scalar(&t, f(1.0))?;
                let left_d = super::mul_scalar(&right, f(0.5))?;
                let tanh_d = super::rsub_scalar(&super::mul(&t, &t)?, f(1.0))?;
                let inner_d = super::mul_scalar(
                    &super::add_scalar(&super::mul_scalar(&x_sq, f(3.0 * GELU_KAPPA))?, f(1.0))?,
                    f(GELU_BETA),
                )?;
                let right_d = super::mul(&super::mul(&left, &tanh_d)?, &inner_d)?;
                super::mul(g, &super::add(&left_d, &right_d)?)
            }
            Act::Silu => {
                // g·σ(x)·(1 + x·(1 - σ(x)))
                let sig = super::sigmoid(s)?;
                let d = super::mul(
                    &sig,
                    &super::add_scalar(
                        &super::mul(s, &super::rsub_scalar(&sig, f(1.0))?)?,
                        f(1.0),
                    )?,
                )?;
                super::mul(g, &d)
            }
            Act::Mish => {
                // g·(tanh(sp(x)) + x·σ(x)·(1 - tanh(sp(x))²))
                let sig = super::sigmoid(s)?;
                let t = super::tanh(&super::log1p(&super::exp(s)?)?)?;
                let d = super::add(
                    &t,
                    &super::mul(
                        &super::mul(s, &sig)?,
                        &super::rsub_scalar(&super::mul(&t, &t)?, f(1.0))?,
                    )?,
                )?;
                super::mul(g, &d)
            }
            Act::Softplus { beta, threshold } => {
                // z = exp(x·β); x·β > threshold ? g : g·z / (z + 1)
                let xb = super::mul_scalar(s, f(beta))?;
                let z = super::exp(&xb)?;
                let soft = super::div(&super::mul(g, &z)?, &super::add_scalar(&z, f(1.0))?)?;
                pick(&super::gt_scalar(&xb, threshold)?, T(g), T(&soft))
            }
            Act::Hardsigmoid => {
                let inside =
                    super::logical_and(&super::gt_scalar(s, -3.0)?, &super::lt_scalar(s, 3.0)?)?;
                // (torch multiplies by 1/6 rounded to float32, in float64 too)
                let sixth = f64::from(1.0f32 / 6.0f32);
                pick(&inside, T(&super::mul_scalar(g, f(sixth))?), zero)
            }
            Act::Hardswish => {
                // x < -3: 0; x <= 3: g·(x/3 + 0.5); else g
                let mid = super::mul(
                    g,
                    &super::add_scalar(&super::div_scalar(s, f(3.0))?, f(0.5))?,
                )?;
                let upper = pick(&super::le_scalar(s, 3.0)?, T(&mid), T(g))?;
                pick(&super::lt_scalar(s, -3.0)?, zero, T(&upper))
            }
            Act::LogSigmoid => {
                // log_sigmoid_backward: z = exp(-|x|);
                // g·((x < 0 ? 1 : 0) - (x < 0 ? 1 : -1)·z / (1 + z))
                let neg = super::lt_scalar(s, 0.0)?;
                let z = log_sigmoid_buffer(s)?;
                let frac = super::div(&z, &super::add_scalar(&z, f(1.0))?)?;
                let d = pick(&neg, T(&super::rsub_scalar(&frac, f(1.0))?), T(&frac))?;
                super::mul(g, &d)
            }
            Act::Mvlgamma { p } => {
                // g·Σⱼ ψ(x - j/2)
                let d = super::sum(&super::digamma(&mvlgamma_args(s, p)?)?, Some(&[-1]), false)?;
                super::mul(g, &d)
            }
            // a real number's angle is piecewise constant
            Act::Angle => super::zeros_like(g),
            // i0' = i1
            Act::Bessel(Bessel::I0) => super::mul(g, &bessel(Bessel::I1, s)?),
            Act::Bessel(op) => {
                let y = y.ok_or_else(|| {
                    Error::Internal(format!("{}: the result was not saved", self.name()))
                })?;
                self.bessel_backward(op, g, s, y)
            }
        }
    }

    /// The derivative by the backend's one-pass kernel when nothing is to be recorded
    /// (the usual backward, without `create_graph`): the composite's values bit for bit.
    fn fused_derivative(&self, g: &Tensor, s: &Tensor) -> Option<Tensor> {
        let op = match self.act {
            Act::Rrelu { training: true, .. } | Act::Angle => return None,
            // (the in-place elu with a negative alpha raises on the composed path)
            Act::Elu { alpha, .. } | Act::Celu { alpha } if self.saves_result && alpha < 0.0 => {
                return None;
            }
            Act::LeakyRelu { slope } if self.saves_result && slope < 0.0 => return None,
            Act::Rrelu { lower, upper, .. } if self.saves_result && (lower + upper) / 2.0 < 0.0 => {
                return None;
            }
            act => fused_fn(act)?,
        };
        if g.dtype() != s.dtype() || !g.dtype().is_float() || crate::ops::records(&[g, s]) {
            return None;
        }
        let (sg, ss) = (g.snapshot(), s.snapshot());
        let buf = crate::backend::activation_backward(
            op,
            self.saves_result,
            &sg.storage.read(),
            &sg.layout,
            &ss.storage.read(),
            &ss.layout,
        )
        .ok()??;
        Some(super::new_tensor(buf, &sg.layout.shape))
    }

    /// torch's formulas for special.i0e, i1 (`i1_backward`) and i1e (`i1e_backward`),
    /// `y` the saved result: away from 0 (|x| > the dtype's epsilon), and 0.5 at it.
    fn bessel_backward(&self, op: Bessel, g: &Tensor, x: &Tensor, y: &Tensor) -> Result<Tensor> {
        use Operand::{S, T};
        if op == Bessel::I0e {
            // g·(i1e(x) - sgn(x)·y)
            let d = super::sub(&bessel(Bessel::I1e, x)?, &super::mul(&super::sign(x)?, y)?)?;
            return super::mul(g, &d);
        }
        let eps = if x.dtype() == DType::F64 {
            f64::EPSILON
        } else {
            f64::from(f32::EPSILON)
        };
        let not_tiny = super::gt_scalar(&super::abs(x)?, eps)?;
        let safe = pick(&not_tiny, T(x), S(f(eps)))?;
        let recip = super::reciprocal(&safe)?;
        let d = if op == Bessel::I1 {
            // i0(x) - y / x
            super::sub(&bessel(Bessel::I0, &safe)?, &super::mul(y, &recip)?)?
        } else {
            // i0e(x) - y·(sgn(x) + 1/x)
            super::sub(
                &bessel(Bessel::I0e, &safe)?,
                &super::mul(y, &super::add(&super::sign(&safe)?, &recip)?)?,
            )?
        };
        super::mul(g, &pick(&not_tiny, T(&d), S(f(0.5)))?)
    }

    /// elu_backward(g, alpha, scale, input_scale, is_result, s).
    fn elu_backward(
        &self,
        g: &Tensor,
        s: &Tensor,
        alpha: f64,
        scale: f64,
        input_scale: f64,
    ) -> Result<Tensor> {
        use Operand::T;
        let neg = if self.saves_result {
            if alpha < 0.0 {
                return Err(Error::runtime(
                    "In-place elu backward calculation is triggered with a negative slope which is not supported. This is caused by calling in-place forward function with a negative slope, please call out-of-place version instead.",
                ));
            }
            // g·input_scale·(y + alpha·scale)
            super::mul(
                g,
                &super::mul_scalar(&super::add_scalar(s, f(alpha * scale))?, f(input_scale))?,
            )?
        } else {
            // g·input_scale·alpha·scale·exp(x·input_scale)
            super::mul(
                g,
                &super::mul_scalar(
                    &super::exp(&super::mul_scalar(s, f(input_scale))?)?,
                    f(input_scale * alpha * scale),
                )?,
            )?
        };
        pick(
            &super::le_scalar(s, 0.0)?,
            T(&neg),
            T(&super::mul_scalar(g, f(scale))?),
        )
    }

    /// leaky_relu_backward(g, s, slope, is_result).
    fn leaky_backward(&self, g: &Tensor, s: &Tensor, slope: f64) -> Result<Tensor> {
        if self.saves_result && slope < 0.0 {
            return Err(Error::runtime(
                "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. This is caused by calling in-place forward function with a negative slope, please call out-of-place version instead. File an issue at https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu backward calculation with negative slope",
            ));
        }
        pick(
            &super::gt_scalar(s, 0.0)?,
            Operand::T(g),
            Operand::T(&super::mul_scalar(g, f(slope))?),
        )
    }
}

// ---- prelu -----------------------------------------------------------------------------

/// torch's `_prelu_kernel(x, w)`: `x > 0 ? x : w·x`, `w` broadcast against `x` (the
/// caller, `torch.prelu`, views the weight to `[1, C, 1, …]`). PreluKernelBackward0.
pub fn prelu_kernel(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    for t in [x, w] {
        if !t.dtype().is_float() {
            return Err(Error::not_implemented(format!(
                "\"prelu_cpu\" not implemented for '{}'",
                t.dtype().scalar_type_name()
            )));
        }
    }
    if x.dtype() != w.dtype() {
        return Err(Error::runtime(format!(
            "prelu: Type promoting not supported. Got {} and {}",
            x.dtype().scalar_type_name(),
            w.dtype().scalar_type_name()
        )));
    }
    apply(
        "aten::_prelu_kernel",
        &[x, w],
        || {
            // one weight on the CPU: leaky_relu's one-pass kernel with the weight as the
            // slope (`x·w`, the same bits)
            if w.numel() == 1
                && !crate::replay::active()
                && x.device() == crate::device::Device::Cpu
                && w.device() == crate::device::Device::Cpu
                && let Ok(Scalar::Float(slope)) = w.item()
                && let Some(y) = super::elementwise::fused_unary(x, ActFn::LeakyRelu { slope })?
            {
                return Ok(y);
            }
            quietly(|| {
                pick(
                    &super::gt_scalar(x, 0.0)?,
                    Operand::T(x),
                    Operand::T(&super::mul(w, x)?),
                )
            })
        },
        |_| {
            let mut sv = Saver::default();
            let xs = sv.input_if(true, x);
            let ws = sv.input_if(true, w);
            (
                std::sync::Arc::new(PreluBackward {
                    x: xs,
                    w: ws,
                    x_shape: x.shape().to_vec(),
                    w_shape: w.shape().to_vec(),
                }) as std::sync::Arc<dyn Backward>,
                sv.list,
            )
        },
    )
}

/// The node of [`prelu_kernel`]: `dx = x > 0 ? g : w·g`, `dw = x > 0 ? 0 : x·g`
/// (torch's `_prelu_kernel_backward`), each summed to its operand's shape.
#[derive(Clone)]
pub struct PreluBackward {
    x: Option<u8>,
    w: Option<u8>,
    x_shape: Vec<usize>,
    w_shape: Vec<usize>,
}

impl Backward for PreluBackward {
    fn name(&self) -> Cow<'static, str> {
        "PreluKernelBackward0".into()
    }
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("self", SavedField::Tensor(self.x)),
            ("weight", SavedField::Tensor(self.w)),
        ]
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let (x, w) = (get(ctx, self.x)?, get(ctx, self.w)?);
        let pos = super::gt_scalar(&x, 0.0)?;
        let dx = if ctx.needs_input_grad(0) {
            let d = pick(&pos, Operand::T(&g), Operand::T(&super::mul(&w, &g)?))?;
            Some(super::sum_to(&d, &self.x_shape)?)
        } else {
            None
        };
        let dw = if ctx.needs_input_grad(1) {
            let d = pick(&pos, Operand::S(f(0.0)), Operand::T(&super::mul(&x, &g)?))?;
            Some(super::sum_to(&d, &self.w_shape)?)
        } else {
            None
        };
        Ok(smallvec::smallvec![dx, dw])
    }
}

// ---- igamma, igammac --------------------------------------------------------------------

/// `torch.igamma(a, x)` (the regularized lower incomplete gamma function P(a, x); `upper`:
/// `torch.igammac`, Q(a, x)), the operands promoted and broadcast. IgammaBackward0 /
/// IgammacBackward0: a derivative for `x` alone, torch's error for `a`.
pub fn igamma(a: &Tensor, x: &Tensor, upper: bool) -> Result<Tensor> {
    let (a, x, dtype) = super::elementwise::promote(Operand::T(a), Operand::T(x), false)?;
    if !dtype.is_float() {
        return Err(Error::not_implemented(format!(
            "\"{}_cpu\" not implemented for '{}'",
            if upper { "igammac" } else { "igamma" },
            dtype.scalar_type_name()
        )));
    }
    apply(
        if upper {
            "aten::igammac"
        } else {
            "aten::igamma"
        },
        &[&a, &x],
        || {
            super::elementwise::broadcast_kernel(&a, &x, |ra, la, rx, lx| {
                crate::backend::igamma(upper, ra, la, rx, lx)
            })
        },
        |_| {
            let mut sv = Saver::default();
            let ai = sv.input_if(true, &a);
            let xi = sv.input_if(true, &x);
            (
                std::sync::Arc::new(IgammaBackward {
                    upper,
                    a: ai,
                    x: xi,
                    x_shape: x.shape().to_vec(),
                }) as std::sync::Arc<dyn Backward>,
                sv.list,
            )
        },
    )
}

/// `a.igamma_(x)` / `a.igammac_(x)`.
pub fn igamma_(a: &Tensor, x: &Tensor, upper: bool) -> Result<Tensor> {
    if !a.dtype().is_float() {
        let (_, _, dtype) = super::elementwise::promote(Operand::T(a), Operand::T(x), false)?;
        if dtype.is_float() {
            return Err(Error::runtime(format!(
                "result type {} can't be cast to the desired output type {}",
                dtype.scalar_type_name(),
                a.dtype().scalar_type_name()
            )));
        }
    }
    super::inplace::inplace_no_overlap_with(a, &[Some(x)], |a| igamma(a, x, upper))
}

/// The node of [`igamma`].
#[derive(Clone)]
pub struct IgammaBackward {
    upper: bool,
    a: Option<u8>,
    x: Option<u8>,
    x_shape: Vec<usize>,
}

impl Backward for IgammaBackward {
    fn name(&self) -> Cow<'static, str> {
        if self.upper {
            "IgammacBackward0"
        } else {
            "IgammaBackward0"
        }
        .into()
    }
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("other", SavedField::Tensor(self.x)),
            ("self", SavedField::Tensor(self.a)),
        ]
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let name = if self.upper { "igammac" } else { "igamma" };
        if ctx.needs_input_grad(0) {
            return Err(Error::not_implemented(format!(
                "the derivative for '{name}: input' is not implemented."
            )));
        }
        let g = grad0(g)?;
        let dx = if ctx.needs_input_grad(1) {
            let (a, x) = (get(ctx, self.a)?, get(ctx, self.x)?);
            // ±g·exp((a - 1)·log(x) - x - lgamma(a))
            let e = super::exp(&super::sub(
                &super::sub(
                    &super::mul(&super::sub_scalar(&a, f(1.0))?, &super::log(&x)?)?,
                    &x,
                )?,
                &super::lgamma(&a)?,
            )?)?;
            let d = super::mul(&if self.upper { super::neg(&g)? } else { g }, &e)?;
            Some(super::sum_to(&d, &self.x_shape)?)
        } else {
            None
        };
        Ok(smallvec::smallvec![None, dx])
    }
    fn jvp(&self, _ctx: &BackwardCtx<'_>, _t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        Some(Err(Error::not_implemented(format!(
            "Trying to use forward AD with {} that does not support it because it has not been implemented yet.\n\
             Please file an issue to PyTorch at https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml \
             so that we can prioritize its implementation or submit a PR adding the implementation to derivatives.yaml",
            if self.upper { "igammac" } else { "igamma" }
        ))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{gradcheck, gradgradcheck, leaf};

    /// Every activation's recorded derivative against finite differences, first and
    /// second order, away from its kinks.
    #[test]
    fn derivatives_match_finite_differences() {
        let x = leaf(vec![-2.7, -1.3, -0.2, 0.4, 1.1, 2.6], &[2, 3]);
        let acts = [
            Act::Threshold {
                threshold: 0.1,
                value: 2.0,
            },
            Act::Hardshrink { lambd: 0.5 },
            Act::Softshrink { lambd: 0.3 },
            Act::Elu {
                alpha: 0.7,
                scale: 1.2,
                input_scale: 0.9,
            },
            Act::Celu { alpha: 1.5 },
            Act::Hardtanh {
                min: -1.5,
                max: 2.0,
            },
            Act::LeakyRelu { slope: 0.2 },
            Act::Gelu { tanh: false },
            Act::Gelu { tanh: true },
            Act::Silu,
            Act::Mish,
            Act::Softplus {
                beta: 2.0,
                threshold: 3.0,
            },
            Act::Hardsigmoid,
            Act::Hardswish,
            Act::LogSigmoid,
            Act::Rrelu {
                lower: 0.1,
                upper: 0.3,
                training: false,
            },
            Act::Angle,
            Act::Bessel(Bessel::I0),
            Act::Bessel(Bessel::I0e),
            Act::Bessel(Bessel::I1),
            Act::Bessel(Bessel::I1e),
        ];
        for act in acts {
            let f = |t: &[Tensor]| activation(act, &[], &t[0]);
            let xs = std::slice::from_ref(&x);
            gradcheck(f, xs).unwrap_or_else(|e| panic!("{act:?}: {e}"));
            gradgradcheck(f, xs).unwrap_or_else(|e| panic!("{act:?}: {e}"));
        }
        let pos = leaf(vec![1.7, 2.3, 3.1, 4.4], &[4]);
        let f = |t: &[Tensor]| activation(Act::Mvlgamma { p: 3 }, &[], &t[0]);
        gradcheck(f, std::slice::from_ref(&pos)).unwrap();
        gradgradcheck(f, std::slice::from_ref(&pos)).unwrap();
    }

    #[test]
    fn prelu_and_igamma_derivatives_match_finite_differences() {
        let x = leaf(vec![-2.7, -1.3, 0.4, 1.1, -0.6, 2.6], &[2, 3]);
        let w = leaf(vec![0.25, -0.5, 0.75], &[3]);
        let f = |t: &[Tensor]| prelu_kernel(&t[0], &t[1]);
        gradcheck(f, &[x.clone(), w.clone()]).unwrap();
        gradgradcheck(f, &[x, w]).unwrap();
        let a = crate::testing::tensor(vec![0.5, 2.5, 4.0], &[3]);
        let xs = leaf(vec![1.5, 0.7, 3.0], &[3]);
        for upper in [false, true] {
            let f = |t: &[Tensor]| igamma(&a, &t[0], upper);
            gradcheck(f, std::slice::from_ref(&xs)).unwrap();
            gradgradcheck(f, std::slice::from_ref(&xs)).unwrap();
        }
    }

    #[test]
    fn bad_parameters_raise_torch_errors() {
        let x = leaf(vec![1.0, 2.0], &[2]);
        let e = activation(Act::Hardtanh { min: 2.0, max: 1.0 }, &[], &x).unwrap_err();
        assert!(
            e.to_string()
                .contains("min_val cannot be greater than max_val")
        );
        let e = activation(Act::Mvlgamma { p: 0 }, &[], &x).unwrap_err();
        assert!(
            e.to_string()
                .contains("p has to be greater than or equal to 1")
        );
    }
}
