//! The op table: every elementwise unary op, one row each, in the spirit of PyTorch's
//! derivatives.yaml. A row holds all there is to know about its op; nothing about a
//! table op is written anywhere else. The rows are read by:
//! - `backend` (the `UnaryOp` ids) and `backend::cpu::unary` (the forward kernel from
//!   `f`, the fused backward kernel from `df`);
//! - `ops::unary` (the `rgrad::ops::exp`-style functions, dtype rules, what the node
//!   saves, its name, and the recorded backward from `df`);
//! - `py::unary` (the `Tensor.exp` / `Tensor.exp_` methods and their docstrings) and,
//!   through `_C._unary_ops()`, the `rgrad.exp` functions; tests/test_op_table.py checks
//!   the stubs, the op test table and the docs against the same list.
//!
//! Each row:
//! ```text
//! name name_ Variant "TorchNode" {        (name_: the in-place method)
//!     ints: promote | keep(|a| i64 expr) | refuse("kernel"),  int64 inputs
//!     bool: None | Some("message"),                           bool inputs, when ints keep
//!     f: |x| expr,                       the value, for one float element (`Real` methods)
//!     df(input | output | none): |g, s| expr,
//!                                        the gradient g·f'(x), written once over `Calc`:
//!                                        `s` is what the node saves (the input x or the
//!                                        output y). Over tensors it is the recorded
//!                                        backward (double backward works); over single
//!                                        elements it is the fused kernel (bit for bit
//!                                        the same values);
//!     inplace: recorded | not_implemented("TorchNode1"),
//!                                        `x.name_()`: recorded as the row says, or (torch
//!                                        has no derivative for the in-place form, which
//!                                        overwrites the input `df` needs) a node whose
//!                                        backward raises;
//!     doc: "the Python docstring",
//! }
//! ```
//! Adding a unary op is one row here, plus a `Real` method if `f` needs a new scalar
//! function, plus its entry in tests/op_db.py.

/// Calls `$then! { rows }` with the table's rows (see the module docs for their form).
macro_rules! unary_op_table {
    ($then:ident) => {
        $then! {
            neg neg_ Neg "NegBackward0" {
                ints: keep(|a| a.wrapping_neg()),
                bool: Some("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."),
                f: |x| -x,
                df(none): |g| g.neg(),
                inplace: recorded,
                doc: "Returns a new tensor with the negative of the elements.",
            }
            abs abs_ Abs "AbsBackward0" {
                ints: keep(|a| a.wrapping_abs()),
                bool: Some("\"abs_cpu\" not implemented for 'Bool'"),
                f: |x| x.abs(),
                df(input): |g, x| g.mul(&x.sign()?),
                inplace: recorded,
                doc: "Computes the absolute value of each element.",
            }
            sign sign_ Sign "SignBackward0" {
                ints: keep(|a| i64::from(a > 0) - i64::from(a < 0)),
                bool: None,
                f: |x| x.sign(),
                df(none): |g| g.zeros_like(),
                inplace: recorded,
                doc: "Returns a new tensor with the signs (-1, 0 or 1) of the elements.",
            }
            relu relu_ Relu "ReluBackward0" {
                ints: keep(|a| a.max(0)),
                bool: Some("Boolean inputs not supported for relu"),
                f: |x| x.relu(),
                // torch's threshold_backward: 0 where y <= 0, so a NaN passes the gradient
                df(output): |g, y| g.threshold_backward(y),
                inplace: recorded,
                doc: "Applies the rectified linear unit function element-wise: max(x, 0).",
            }
            exp exp_ Exp "ExpBackward0" {
                ints: promote, bool: None,
                f: |x| x.exp(),
                df(output): |g, y| g.mul(y),
                inplace: recorded,
                doc: "Returns a new tensor with the exponential of the elements.",
            }
            log log_ Log "LogBackward0" {
                ints: promote, bool: None,
                f: |x| x.ln(),
                df(input): |g, x| g.div(x),
                inplace: recorded,
                doc: "Returns a new tensor with the natural logarithm of the elements.",
            }
            log1p log1p_ Log1p "Log1PBackward0" {
                ints: promote, bool: None,
                f: |x| x.ln_1p(),
                df(input): |g, x| g.div(&x.add_s(1.0)?),
                inplace: recorded,
                doc: "Returns a new tensor with the natural logarithm of (1 + the elements).",
            }
            expm1 expm1_ Expm1 "Expm1Backward0" {
                ints: promote, bool: None,
                f: |x| x.exp_m1(),
                df(output): |g, y| g.mul(&y.add_s(1.0)?),
                inplace: recorded,
                doc: "Computes the exponential of the elements minus 1.",
            }
            sqrt sqrt_ Sqrt "SqrtBackward0" {
                ints: promote, bool: None,
                f: |x| x.sqrt(),
                df(output): |g, y| g.div(&y.mul_s(2.0)?),
                inplace: recorded,
                doc: "Returns a new tensor with the square-root of the elements.",
            }
            rsqrt rsqrt_ Rsqrt "RsqrtBackward0" {
                ints: promote, bool: None,
                f: |x| x.rsqrt(),
                df(output): |g, y| g.mul(&y.pow_s(3.0)?.mul_s(-0.5)?),
                inplace: recorded,
                doc: "Returns a new tensor with the reciprocal of the square-root of each of the elements.",
            }
            sin sin_ Sin "SinBackward0" {
                ints: promote, bool: None,
                f: |x| x.sin(),
                df(input): |g, x| g.mul(&x.cos()?),
                inplace: recorded,
                doc: "Returns a new tensor with the sine of the elements.",
            }
            cos cos_ Cos "CosBackward0" {
                ints: promote, bool: None,
                f: |x| x.cos(),
                df(input): |g, x| g.mul(&x.sin()?)?.neg(),
                inplace: recorded,
                doc: "Returns a new tensor with the cosine of the elements.",
            }
            tan tan_ Tan "TanBackward0" {
                ints: promote, bool: None,
                f: |x| x.tan(),
                df(output): |g, y| g.mul(&y.mul(y)?.add_s(1.0)?),
                inplace: recorded,
                doc: "Returns a new tensor with the tangent of the elements.",
            }
            tanh tanh_ Tanh "TanhBackward0" {
                ints: promote, bool: None,
                f: |x| x.tanh(),
                // g·(1 - y²), as one recorded op (TanhBackwardBackward0)
                df(output): |g, y| g.tanh_backward(y),
                inplace: recorded,
                doc: "Returns a new tensor with the hyperbolic tangent of the elements.",
            }
            sigmoid sigmoid_ Sigmoid "SigmoidBackward0" {
                ints: promote, bool: None,
                f: |x| x.sigmoid(),
                df(output): |g, y| g.mul(&y.mul(&y.rsub_s(1.0)?)?),
                inplace: recorded,
                doc: "Computes the logistic sigmoid function of the elements.",
            }
            reciprocal reciprocal_ Reciprocal "ReciprocalBackward0" {
                ints: promote, bool: None,
                f: |x| x.recip(),
                df(output): |g, y| g.mul(&y.mul(y)?)?.neg(),
                inplace: recorded,
                doc: "Returns a new tensor with the reciprocal of the elements.",
            }
            sinh sinh_ Sinh "SinhBackward0" {
                ints: promote, bool: None,
                f: |x| x.sinh(),
                df(input): |g, x| g.mul(&x.cosh()?),
                inplace: recorded,
                doc: "Returns a new tensor with the hyperbolic sine of the elements.",
            }
            cosh cosh_ Cosh "CoshBackward0" {
                ints: promote, bool: None,
                f: |x| x.cosh(),
                df(input): |g, x| g.mul(&x.sinh()?),
                inplace: recorded,
                doc: "Returns a new tensor with the hyperbolic cosine of the elements.",
            }
            asin asin_ Asin "AsinBackward0" {
                ints: promote, bool: None,
                f: |x| x.asin(),
                // g·(1 - x²)^-1/2, as torch: (-x·x + 1).rsqrt()
                df(input): |g, x| g.mul(&x.neg()?.mul(x)?.add_s(1.0)?.rsqrt()?),
                inplace: recorded,
                doc: "Returns a new tensor with the arcsine of the elements.",
            }
            acos acos_ Acos "AcosBackward0" {
                ints: promote, bool: None,
                f: |x| x.acos(),
                df(input): |g, x| g.mul(&x.neg()?.mul(x)?.add_s(1.0)?.rsqrt()?.neg()?),
                inplace: recorded,
                doc: "Returns a new tensor with the inverse cosine of the elements.",
            }
            atan atan_ Atan "AtanBackward0" {
                ints: promote, bool: None,
                f: |x| x.atan(),
                df(input): |g, x| g.div(&x.mul(x)?.add_s(1.0)?),
                inplace: recorded,
                doc: "Returns a new tensor with the arctangent of the elements.",
            }
            asinh asinh_ Asinh "AsinhBackward0" {
                ints: promote, bool: None,
                f: |x| x.asinh(),
                df(input): |g, x| g.mul(&x.mul(x)?.add_s(1.0)?.rsqrt()?),
                inplace: not_implemented("AsinhBackward1"),
                doc: "Returns a new tensor with the inverse hyperbolic sine of the elements.",
            }
            acosh acosh_ Acosh "AcoshBackward0" {
                ints: promote, bool: None,
                f: |x| x.acosh(),
                df(input): |g, x| g.mul(&x.mul(x)?.add_s(-1.0)?.rsqrt()?),
                inplace: not_implemented("AcoshBackward1"),
                doc: "Returns a new tensor with the inverse hyperbolic cosine of the elements.",
            }
            atanh atanh_ Atanh "AtanhBackward0" {
                ints: promote, bool: None,
                f: |x| x.atanh(),
                df(input): |g, x| g.div(&x.mul(x)?.rsub_s(1.0)?),
                inplace: not_implemented("AtanhBackward1"),
                doc: "Returns a new tensor with the inverse hyperbolic tangent of the elements.",
            }
            erf erf_ Erf "ErfBackward0" {
                ints: promote, bool: None,
                f: |x| x.erf(),
                // 2/√π·exp(-x²)·g
                df(input): |g, x| x.mul(x)?.neg()?.exp()?.mul_s(std::f64::consts::FRAC_2_SQRT_PI)?.mul(g),
                inplace: recorded,
                doc: "Computes the error function of each element.",
            }
            erfc erfc_ Erfc "ErfcBackward0" {
                ints: promote, bool: None,
                f: |x| x.erfc(),
                df(input): |g, x| x.mul(x)?.neg()?.exp()?.mul_s(-std::f64::consts::FRAC_2_SQRT_PI)?.mul(g),
                inplace: recorded,
                doc: "Computes the complementary error function of each element.",
            }
            erfinv erfinv_ Erfinv "ErfinvBackward0" {
                ints: promote, bool: None,
                f: |x| x.erfinv(),
                // √π/2·exp(erfinv(x)²)·g: torch saves the input and computes erfinv again
                // (so writing the output in place does not spoil the gradient)
                df(input): |g, x| {
                    let y = x.erfinv()?;
                    y.mul(&y)?.exp()?.mul_s(0.886_226_925_452_758)?.mul(g)
                },
                inplace: recorded,
                doc: "Computes the inverse error function of each element.",
            }
            lgamma lgamma_ Lgamma "LgammaBackward0" {
                ints: promote, bool: None,
                f: |x| x.lgamma(),
                df(input): |g, x| g.mul(&x.digamma()?),
                inplace: recorded,
                doc: "Computes the natural logarithm of the absolute value of the gamma function of each element.",
            }
            digamma digamma_ Digamma "DigammaBackward0" {
                ints: promote, bool: None,
                f: |x| x.digamma(),
                df(input): |g, x| g.mul(&x.polygamma(1)?),
                inplace: recorded,
                doc: "Computes the logarithmic derivative of the gamma function of each element.",
            }
            trunc trunc_ Trunc "TruncBackward0" {
                ints: keep(|a| a),
                bool: Some("\"trunc_vml_cpu\" not implemented for 'Bool'"),
                f: |x| x.trunc(),
                df(none): |g| g.zeros_like(),
                inplace: recorded,
                doc: "Returns a new tensor with the truncated integer values of the elements.",
            }
            frac frac_ Frac "FracBackward0" {
                ints: refuse("frac_cpu"), bool: None,
                f: |x| x.frac(),
                df(none): |g| g.unchanged(),
                inplace: recorded,
                doc: "Computes the fractional portion of each element: x - trunc(x).",
            }
            floor floor_ Floor "FloorBackward0" {
                ints: keep(|a| a),
                bool: Some("\"floor_vml_cpu\" not implemented for 'Bool'"),
                f: |x| x.floor(),
                df(none): |g| g.zeros_like(),
                inplace: recorded,
                doc: "Returns a new tensor with the floor of the elements, the largest integer less than or equal to each element.",
            }
            ceil ceil_ Ceil "CeilBackward0" {
                ints: keep(|a| a),
                bool: Some("\"ceil_vml_cpu\" not implemented for 'Bool'"),
                f: |x| x.ceil(),
                df(none): |g| g.zeros_like(),
                inplace: recorded,
                doc: "Returns a new tensor with the ceil of the elements, the smallest integer greater than or equal to each element.",
            }
            round round_ Round "RoundBackward0" {
                ints: keep(|a| a),
                bool: Some("\"round_vml_cpu\" not implemented for 'Bool'"),
                f: |x| x.round_even(),
                df(none): |g| g.zeros_like(),
                inplace: recorded,
                doc: "Rounds elements of input to the nearest integer, halves to the nearest even integer.",
            }
            sgn sgn_ Sgn "SgnBackward0" {
                ints: keep(|a| i64::from(a > 0) - i64::from(a < 0)),
                bool: None,
                f: |x| x.sign(),
                // zero for real tensors; torch's node keeps the result (its complex
                // formula reads it), so writing to the result in place fails backward
                // there too
                df(output): |g, y| {
                    let _ = y;
                    g.zeros_like()
                },
                inplace: recorded,
                doc: "The sign of each element: for real tensors the same as sign.",
            }
            log2 log2_ Log2 "Log2Backward0" {
                ints: promote, bool: None,
                f: |x| x.log2(),
                df(input): |g, x| g.div(&x.mul_s(std::f64::consts::LN_2)?),
                inplace: recorded,
                doc: "Returns a new tensor with the logarithm to the base 2 of the elements.",
            }
            log10 log10_ Log10 "Log10Backward0" {
                ints: promote, bool: None,
                f: |x| x.log10(),
                df(input): |g, x| g.div(&x.mul_s(std::f64::consts::LN_10)?),
                inplace: recorded,
                doc: "Returns a new tensor with the logarithm to the base 10 of the elements.",
            }
            exp2 exp2_ Exp2 "Exp2Backward0" {
                ints: promote, bool: None,
                f: |x| x.exp2(),
                df(output): |g, y| g.mul(y)?.mul_s(std::f64::consts::LN_2),
                inplace: recorded,
                doc: "Computes the base two exponential function of each element.",
            }
            deg2rad deg2rad_ Deg2rad "Deg2RadBackward0" {
                ints: promote, bool: None,
                f: |x| x.deg2rad(),
                df(none): |g| g.mul_s(std::f64::consts::PI / 180.0),
                inplace: recorded,
                doc: "Returns a new tensor with each of the elements converted from angles in degrees to radians.",
            }
            rad2deg rad2deg_ Rad2deg "Rad2DegBackward0" {
                ints: promote, bool: None,
                f: |x| x.rad2deg(),
                df(none): |g| g.mul_s(180.0 / std::f64::consts::PI),
                inplace: recorded,
                doc: "Returns a new tensor with each of the elements converted from angles in radians to degrees.",
            }
            sinc sinc_ Sinc "SincBackward0" {
                ints: promote, bool: None,
                f: |x| x.sinc(),
                // torch's sinc_backward: g · ((πx·cos πx - sin πx) / (x·x·π)), 0 where
                // x·x·π is 0 (in this order: the same roundings)
                df(input): |g, x| {
                    let px = x.mul_s(std::f64::consts::PI)?;
                    let pxx = x.mul(x)?.mul_s(std::f64::consts::PI)?;
                    let d = px.mul(&px.cos()?)?.sub(&px.sin()?)?.div(&pxx)?;
                    g.mul(&d)?.zero_where_zero(&pxx)
                },
                inplace: recorded,
                doc: "Computes the normalized sinc of each element: sin(πx) / (πx), and 1 where x is 0.",
            }
        }
    };
}
pub(crate) use unary_op_table;

/// Calls `$then! { rows }` with the binary table's rows: the elementwise functions of two
/// tensors (`atan2(a, b)`), in the form of the unary table:
/// ```text
/// name name_ Variant "TorchNode" {
///     dtypes: float | floats("kernel") | any(|a, b| i64 expr, |a, b| bool expr),
///                                          float: integer and bool operands compute in
///                                          the default float dtype; floats: the promoted
///                                          dtype, refused unless float (torch's message
///                                          names the kernel); any: the promoted dtype,
///                                          whatever it is, with these int64 and bool
///                                          kernels
///     numbers: none | either("Node1", "Node2"),
///                                          whether a Python number may stand for either
///                                          operand (not both), and the node torch records
///                                          when it is the first or the second
///     inplace: recorded | none,            `a.name_(b)`, or no in-place form (as torch)
///     doc: "the Python docstring",
///     f: |a, b| expr,                      the value for one float element (`Float`)
///     da: |g, a, b| expr,                  the gradient of each operand, g·∂f/∂a and
///     db: |g, a, b| expr,                  g·∂f/∂b, over tensors with rgrad's ops (so a
///                                          backward is recorded and can be differentiated);
///                                          broadcasting is undone by the op layer. Each
///                                          names what it reads of `a`, `b` and the output
///                                          `y`: the node saves a value that both read, and
///                                          one that only one reads when that operand needs
///                                          a gradient (as torch's generated nodes save)
///     da_when_b_is_a_number: |g, a, b| expr,   (optional) `da` of the overload torch
///                                          records when `b` is a Python number, where its
///                                          formula differs
/// }
/// ```
macro_rules! binary_op_table {
    ($then:ident) => {
        $then! {
            maximum maximum_ Maximum "MaximumBackward0" {
                dtypes: any(|a, b| a.max(b), |a, b| a || b),
                numbers: none,
                inplace: none,
                doc: "Computes the element-wise maximum of input and other (NaN if either is NaN).",
                f: |a, b| a.max_nan(b),
                // derivatives.yaml: the winner gets the gradient, ties split it, a loser gets
                // 0 (even where the gradient is NaN), where either is NaN both get all of it
                da: |g, a, b| g.ties_halved(a, b)?.zero_where_less(a, b),
                db: |g, a, b| g.ties_halved(a, b)?.zero_where_less(b, a),
            }
            minimum minimum_ Minimum "MinimumBackward0" {
                dtypes: any(|a, b| a.min(b), |a, b| a && b),
                numbers: none,
                inplace: none,
                doc: "Computes the element-wise minimum of input and other (NaN if either is NaN).",
                f: |a, b| a.min_nan(b),
                da: |g, a, b| g.ties_halved(a, b)?.zero_where_less(b, a),
                db: |g, a, b| g.ties_halved(a, b)?.zero_where_less(a, b),
            }
            atan2 atan2_ Atan2 "Atan2Backward0" {
                dtypes: float,
                numbers: none,
                inplace: recorded,
                doc: "Element-wise arctangent of input / other, with the quadrant chosen by the signs of both.",
                f: |a, b| a.atan2(b),
                // torch's atan2_backward: 1/(a² + b²), 0 where a = b = 0, times b and -a
                da: |g, a, b| g.mul(b)?.mul(&a.mul(a)?.add(&b.mul(b)?)?.reciprocal_or_zero()?),
                db: |g, a, b| g.mul(&a.neg()?)?.mul(&a.mul(a)?.add(&b.mul(b)?)?.reciprocal_or_zero()?),
            }
            hypot hypot_ Hypot "HypotBackward0" {
                dtypes: floats("hypot_cpu"),
                numbers: none,
                inplace: recorded,
                doc: "Element-wise hypotenuse: sqrt(input² + other²), without undue overflow or underflow.",
                f: |a, b| a.hypot(b),
                da: |g, a, y| g.mul(a)?.div(y),
                db: |g, b, y| g.mul(b)?.div(y),
            }
            logaddexp logaddexp_ Logaddexp "LogaddexpBackward0" {
                dtypes: floats("logaddexp_cpu"),
                numbers: none,
                inplace: none,
                doc: "Logarithm of the sum of exponentiations of the inputs: log(exp(input) + exp(other)).",
                f: |a, b| a.logaddexp(b),
                da: |g, a, b| g.div(&b.sub(a)?.exp()?.add_s(1.0)?),
                db: |g, a, b| g.div(&a.sub(b)?.exp()?.add_s(1.0)?),
            }
            xlogy xlogy_ Xlogy "XlogyBackward0" {
                dtypes: float,
                numbers: either("XlogyBackward1", "XlogyBackward2"),
                inplace: recorded,
                doc: "Computes input * log(other), with 0 where input is 0 (unless other is NaN).",
                f: |a, b| a.xlogy(b),
                // 0 where a = 0 and b <= 0, where the value is the constant 0 (torch's mask)
                da: |g, a, b| g.xlogy(b)?.zero_where_zero_and_nonpositive(a, b),
                db: |g, a, b| g.mul(a)?.div(b),
                // torch's Scalar_Other overload: `other > 0 ? xlogy(grad, other) : ...
                // .masked_fill(self == 0, 0)`, which masks for a NaN number too
                da_when_b_is_a_number: |g, a, b| g.xlogy(b)?.zero_where_zero_unless_positive(a, b),
            }
            fmax fmax_ Fmax "FmaxBackward0" {
                dtypes: any(|a, b| a.max(b), |a, b| a || b),
                numbers: none,
                inplace: none,
                doc: "Computes the element-wise maximum of input and other, the number where one is NaN (NaN only where both are).",
                f: |a, b| a.fmax(b),
                // derivatives.yaml (torch 2.15): ties split the gradient; otherwise self gets
                // it where self > other or other is NaN (the value fmax returns), other
                // everywhere else
                da: |g, a, b| g.ties_halved(a, b)?.zero_unless(&a.cmp_or_nan(">=", b, b)?),
                db: |g, a, b| g.ties_halved(a, b)?.zero_where(&a.cmp_or_nan(">", b, b)?),
            }
            fmin fmin_ Fmin "FminBackward0" {
                dtypes: any(|a, b| a.min(b), |a, b| a && b),
                numbers: none,
                inplace: none,
                doc: "Computes the element-wise minimum of input and other, the number where one is NaN (NaN only where both are).",
                f: |a, b| a.fmin(b),
                da: |g, a, b| g.ties_halved(a, b)?.zero_unless(&a.cmp_or_nan("<=", b, b)?),
                db: |g, a, b| g.ties_halved(a, b)?.zero_where(&a.cmp_or_nan("<", b, b)?),
            }
            copysign copysign_ Copysign "CopysignBackward0" {
                dtypes: float,
                numbers: second("CopysignBackward1"),
                inplace: recorded,
                doc: "Returns input's magnitudes with other's signs (the sign bit: -0.0 and -NaN count as negative).",
                f: |a, b| a.copysign(b),
                // torch's copysign_tensor_self_backward: g · (result / self), 0 where self
                // is 0; other's gradient is zeros
                da: |g, a, y| g.mul(&y.div(a)?.zero_where_eq(a, 0.0)?),
                db: |g| g.zeros(),
            }
            logaddexp2 logaddexp2_ Logaddexp2 "Logaddexp2Backward0" {
                dtypes: floats("logaddexp2_cpu"),
                numbers: none,
                inplace: none,
                doc: "Logarithm in base 2 of the sum of powers of 2 of the inputs: log2(2^input + 2^other).",
                f: |a, b| a.logaddexp2(b),
                da: |g, a, b| g.div(&b.sub(a)?.exp2()?.add_s(1.0)?),
                db: |g, a, b| g.div(&a.sub(b)?.exp2()?.add_s(1.0)?),
            }
            heaviside heaviside_ Heaviside "NotImplemented" {
                dtypes: any(|a, b| if a == 0 { b } else { i64::from(a > 0) }, |a, b| if a { true } else { b }),
                numbers: none,
                inplace: recorded,
                doc: "Computes the Heaviside step function of input: 0 where it is negative, 1 where positive, values where 0.",
                f: |a, b| a.heaviside(b),
                // torch has no derivative (an autograd NotImplemented node)
                da: |g| g.not_implemented("aten::heaviside"),
                db: |g| g.not_implemented("aten::heaviside"),
            }
            nextafter nextafter_ Nextafter "NextafterBackward0" {
                dtypes: floats("nextafter_cpu"),
                numbers: none,
                inplace: recorded,
                doc: "Returns the next floating-point value after input towards other.",
                f: |a, b| a.nextafter(b),
                // derivatives.yaml: where(self != other, grad, 0); other's is zeros (the
                // node keeps both operands)
                da: |g, a, b| g.zero_where_equal(a, b),
                db: |g, a, b| g.zeros_keeping(&[a, b]),
            }
            ldexp ldexp_ Ldexp "LdexpBackward0" {
                dtypes: float,
                numbers: none,
                inplace: recorded,
                doc: "Multiplies input by 2 to the power of other.",
                f: |a, b| a.ldexp(b),
                // derivatives.yaml: g · 2^other, and g · result · ln 2
                da: |g, b| g.mul(&b.exp2()?),
                db: |g, y| g.mul(y)?.mul_s(std::f64::consts::LN_2),
            }
        }
    };
}
pub(crate) use binary_op_table;

/// Calls `$then! { rows }` with the arithmetic table's rows: torch's arithmetic operators
/// (`+ - * / % // **` and their named forms). Their kernels are the backend's
/// [`BinaryOp`]s (integer, bool and in-place kernels, number operands straight from the
/// kernel) and their forwards keep fast paths of their own (`ops/elementwise.rs`,
/// `ops/division.rs`, `ops/pow.rs`: checks, promotion, the fast paths and the in-place
/// forms); what the node is, what it saves and each operand's derivative are the row's,
/// read by `ops/arith.rs` for every path, so a derivative is written once.
/// ```text
/// name Variant "TorchNode" {
///     kernel: BinaryOp,                    the backend kernel (`backend::BinaryOp`)
///     aten: "aten::name",                  torch's op (what dispatch and profilers see)
///     inplace: name_ | none,               the in-place method (`ops/inplace.rs`)
///     numbers: (first, second),            what a Python number operand records, first
///                                          or second: `wrapped` (torch's wrapped number:
///                                          this node, the number an edge `(None, 0)`);
///                                          `"Node"` (torch's Scalar overload: that node,
///                                          the number no edge, the same formulas);
///                                          `not_implemented` (a Scalar overload torch
///                                          gives no derivative: a `NotImplemented` node
///                                          whose backward raises); `none` (no such form
///                                          here: `2 - x` is rsub, `2 / x` reciprocal)
///     saves: always,                       (optional) the node saves what the formulas
///                                          of its tensor operands read, whichever needs
///                                          a gradient (torch's PowBackward1); without
///                                          it, a value only a needed formula reads
///     da: |g, ..| expr,                    the gradient of each operand, g·∂f/∂a and
///     db: |g, ..| expr,                    g·∂f/∂b, over `ops::arith::Term`s with rgrad's
///                                          ops (so a backward is recorded and can be
///                                          differentiated); broadcasting is undone by
///                                          the op layer. Each names what it reads: `a`,
///                                          `b` (a saved operand, or a Python number the
///                                          node keeps: `x * 2`'s 2, torch's wrapped
///                                          number), the output `y`, add's `alpha`; the
///                                          node saves an operand that a needed
///                                          derivative reads (as torch's generated nodes).
///                                          `not_implemented`: torch has no derivative
///                                          (the node is `NotImplemented`; backward raises)
///     db_when_a_is_a_number: |g, ..| expr, (optional) `db` of the Scalar overload with a
///                                          number for `a`, where its formula differs
/// }
/// ```
///
/// [`BinaryOp`]: crate::backend::BinaryOp
macro_rules! arith_op_table {
    ($then:ident) => {
        $then! {
            add Add "AddBackward0" {
                kernel: Add,
                aten: "aten::add",
                inplace: add_,
                numbers: (wrapped, wrapped),
                // a + α·b
                da: |g| g.unchanged(),
                db: |g, alpha| g.scale(alpha),
            }
            sub Sub "SubBackward0" {
                kernel: Sub,
                aten: "aten::sub",
                inplace: sub_,
                numbers: (none, wrapped),
                // a - α·b (rgrad multiplies by -α where torch negates: the same values)
                da: |g| g.unchanged(),
                db: |g, alpha| g.scale(&alpha.neg()?),
            }
            rsub Rsub "RsubBackward0" {
                kernel: Sub,
                aten: "aten::rsub",
                inplace: none,
                numbers: (none, "RsubBackward1"),
                // rsub(a, b, alpha) = b - α·a (`torch.rsub`); a Python number b (`2 - x`,
                // torch's Scalar overload) has no edge and names the node RsubBackward1
                da: |g, alpha| g.scale(&alpha.neg()?),
                db: |g| g.unchanged(),
            }
            mul Mul "MulBackward0" {
                kernel: Mul,
                aten: "aten::mul",
                inplace: mul_,
                numbers: (wrapped, wrapped),
                da: |g, b| g.mul(b),
                db: |g, a| g.mul(a),
            }
            div Div "DivBackward0" {
                kernel: Div,
                aten: "aten::div",
                inplace: div_,
                numbers: (none, wrapped),
                // true division (integer operands give the default float dtype)
                da: |g, b| g.div(b),
                db: |g, a, b| g.mul(a)?.div(&b.mul(b)?)?.neg(),
            }
            remainder Remainder "RemainderBackward0" {
                kernel: Remainder,
                aten: "aten::remainder",
                inplace: none,
                numbers: (not_implemented, wrapped),
                // a - b·floor(a/b), with the sign of b (Python's `%`); the quotient is
                // piecewise constant. `2 % x` is remainder.Scalar_Tensor, underived
                da: |g| g.unchanged(),
                db: |g, a, b| g.mul(&a.floor_divide_constant(b)?)?.neg(),
            }
            fmod Fmod "FmodBackward0" {
                kernel: Fmod,
                aten: "aten::fmod",
                inplace: none,
                numbers: (none, wrapped),
                // a - b·trunc(a/b), with the sign of a (C's fmod)
                da: |g| g.unchanged(),
                db: |g, a, b| g.mul(&a.trunc_divide_constant(b)?)?.neg(),
            }
            div_floor DivFloor "DivBackward2" {
                kernel: FloorDiv,
                aten: "aten::div",
                inplace: div_,
                numbers: (none, wrapped),
                // div(a, b, rounding_mode="floor"): piecewise constant, a zero gradient;
                // torch's formulas name what they read (div_tensor_self_backward: b;
                // div_tensor_other_backward: a and b), so the node saves them and reports
                // them modified in place (b needing a gradient, then changed: an error)
                da: |g, b| g.zeros_naming(b),
                db: |g, a, b| {
                    b.tensor()?;
                    g.zeros_naming(a)
                },
            }
            div_trunc DivTrunc "DivBackward2" {
                kernel: TruncDiv,
                aten: "aten::div",
                inplace: div_,
                numbers: (none, wrapped),
                // div(a, b, rounding_mode="trunc"), as div_floor
                da: |g, b| g.zeros_naming(b),
                db: |g, a, b| {
                    b.tensor()?;
                    g.zeros_naming(a)
                },
            }
            floor_divide FloorDivide "NotImplemented" {
                kernel: FloorDiv,
                aten: "aten::floor_divide",
                inplace: none,
                numbers: (not_implemented, wrapped),
                // `a // b`: torch gives it no derivative (div(rounding_mode="floor") is the
                // differentiable form), so backward through it raises
                da: not_implemented,
                db: not_implemented,
            }
            pow Pow "PowBackward1" {
                kernel: Pow,
                aten: "aten::pow",
                inplace: pow_,
                // a Python number is torch's Scalar overload: `2 ** x` is pow.Scalar,
                // `x ** 2` pow.Tensor_Scalar (whose pow_backward is da with a number b)
                numbers: ("PowBackward2", "PowBackward0"),
                // torch's PowBackward1 saves a, b and the output whichever operand needs
                // a gradient (a's alone modified in place fails its backward too)
                saves: always,
                // torch's pow_backward_self: where(b == 0, 0, g·b·a^(b-1)), so 0⁰ gives 0,
                // not 0·inf; a number b that is 0 gives zeros without the rest (torch's
                // `exponent.equal(0)`, false for a Python bool). A bool b fails at `b - 1`,
                // as torch's does
                da: |g, a, b| g.zero_where_zero(b, |g| g.mul(&b.mul(&a.pow(&b.sub_s(1.0)?)?)?)),
                // torch's pow_backward_exponent: g·where(a == 0 and b >= 0, 0, y·ln a)
                db: |g, a, b, y| g.mul(&y.mul(&a.log()?)?.zero_where_zero_and_nonnegative(a, b)?),
                // pow.Scalar's (a number a): masked only where a is 0 (not a Python bool,
                // for torch), where b >= 0 is y finite (0 or 1; b < 0 gives ±inf, a NaN b
                // NaN), so the node needs no b
                db_when_a_is_a_number: |g, a, y| g.mul(&y.mul(&a.log()?)?.zero_where_zero_base(a, y)?),
            }
        }
    };
}
pub(crate) use arith_op_table;

/// Calls `$then! { rows }` with the selection table's rows: ops whose output picks each
/// element from one of their inputs (`where`, `clamp`), so that each derivative routes
/// the gradient by a mask. Their forwards keep their checks, promotion and kernels
/// (`ops/select.rs`); what the node is, what it saves and each input's derivative are
/// the row's, read by `ops/selection.rs`.
/// ```text
/// name Variant "TorchNode" {
///     aten: "aten::name",                  torch's op (what dispatch and profilers see)
///     input: |g, ..| expr,                 the gradient of each differentiable input, in
///                                          edge order (`self_`, `other`, `min`, `max`),
///                                          over tensors with rgrad's ops (so a backward
///                                          is recorded and can be differentiated);
///                                          broadcasting is undone by the op layer. Each
///                                          names what it reads: `condition`, `self_`
///                                          (tensors, as given), clamp's bounds `min`,
///                                          `max` (`Bound`s: a tensor, a Python number
///                                          the node keeps, or None); the node saves a
///                                          tensor that a needed derivative reads
/// }
/// ```
macro_rules! select_op_table {
    ($then:ident) => {
        $then! {
            where_ Where "WhereBackward0" {
                aten: "aten::where",
                // where(condition, self, other): the condition is a bool tensor, no edge
                self_: |g, condition| g.kept_where(condition),
                other: |g, condition| g.zeroed_where(condition),
            }
            clamp Clamp "ClampBackward1" {
                aten: "aten::clamp",
                // Python numbers for bounds (one may be None), kept in the node: the
                // gradient passes strictly inside them, 0 on a bound and at NaN (torch
                // 2.15's clamp_backward), recorded as a function of g and x
                self_: |g, self_, min, max| {
                    g.masked_grad(self_, &self_.strictly_between(min, max)?, "ClampBackwardBackward0")
                },
            }
            clamp_tensor ClampTensor "ClampBackward0" {
                aten: "aten::clamp",
                // tensor bounds (one may be None: its edge is `(None, 0)`), broadcast
                // with x. torch 2.15's clamp_backward / clamp_backward_min_max: with one
                // bound, maximum's / minimum's derivatives (ties halved, NaN passes to
                // both); with both, x's gradient passes where min <= x <= max and the
                // bound's where x is beyond it (min's only while min <= max; max's also
                // wherever max < min), halved on a tie when min < max (see selection.rs)
                self_: |g, self_, min, max| g.clamp_backward(self_, min, max),
                min: |g, self_, min, max| g.clamp_backward_min(self_, min, max),
                max: |g, self_, min, max| g.clamp_backward_max(self_, min, max),
            }
        }
    };
}
pub(crate) use select_op_table;
