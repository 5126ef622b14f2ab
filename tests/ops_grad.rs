//! First- and second-order gradient checks (float64 central differences, see
//! `rgrad::testing`) for a representative op of every family, plus hand-computed
//! gradients where the math is short enough to state.

use rgrad::autograd::engine::{Options, run_backward};
use rgrad::ops::{self, Operand, Reduction};
use rgrad::testing::{
    assert_values, gradcheck, gradgradcheck, leaf, spread, tensor, tensor_bool, tensor_i64, to_vec,
};
use rgrad::{DType, Error, Result, Scalar, Tensor};

/// gradcheck and gradgradcheck.
fn both(f: impl Fn(&[Tensor]) -> Result<Tensor>, inputs: &[Tensor]) -> Result<()> {
    gradcheck(&f, inputs)?;
    gradgradcheck(&f, inputs)
}

/// Gradients of `sum(y)` (i.e. grad_output = ones) w.r.t. `xs`, as values; `accumulate:
/// false`, so nothing is written into `.grad`.
fn grads_of(y: &Tensor, xs: &[&Tensor]) -> Result<Vec<Vec<f64>>> {
    let ones = ops::ones(&y.shape(), y.dtype())?;
    let inputs: Vec<Tensor> = xs.iter().map(|t| (*t).clone()).collect();
    let opts = Options {
        retain_graph: false,
        create_graph: false,
        accumulate: false,
        allow_unused: false,
        ..Options::default()
    };
    let gs = run_backward(std::slice::from_ref(y), &[ones], &inputs, opts)?;
    gs.into_iter()
        .map(|g| {
            g.map(|g| to_vec(&g))
                .ok_or_else(|| Error::runtime("missing gradient"))
        })
        .collect()
}

fn sc(v: f64) -> Scalar {
    Scalar::Float(v)
}

// ==== binary arithmetic, broadcasting (3,1) x (1,4) =====================================

fn a31() -> Tensor {
    leaf(vec![0.6, 1.3, 2.1], &[3, 1])
}
fn b14() -> Tensor {
    leaf(vec![0.7, -1.3, 1.9, -0.6], &[1, 4])
}

#[test]
fn add_broadcast() -> Result<()> {
    both(|x| ops::add(&x[0], &x[1]), &[a31(), b14()])?;
    // add with alpha: a + 2.5·b
    both(
        |x| ops::add_op(Operand::T(&x[0]), Operand::T(&x[1]), sc(2.5)),
        &[a31(), b14()],
    )?;
    // y = a + b broadcast to (3,4): each a_i is used 4 times, each b_j 3 times
    let (a, b) = (a31(), b14());
    let g = grads_of(&ops::add(&a, &b)?, &[&a, &b])?;
    assert_eq!(g[0], vec![4.0; 3]);
    assert_eq!(g[1], vec![3.0; 4]);
    // y = a + 2.5·b: dy/db = 2.5 per use, 3 uses
    let g = grads_of(
        &ops::add_op(Operand::T(&a), Operand::T(&b), sc(2.5))?,
        &[&b],
    )?;
    assert_eq!(g[0], vec![7.5; 4]);
    Ok(())
}

#[test]
fn sub_broadcast() -> Result<()> {
    both(|x| ops::sub(&x[0], &x[1]), &[a31(), b14()])?;
    both(
        |x| ops::sub_op(Operand::T(&x[0]), Operand::T(&x[1]), sc(0.5)),
        &[a31(), b14()],
    )?;
    // s - x (rsub)
    both(|x| ops::rsub_scalar(&x[0], sc(3.0)), &[b14()])?;
    // y = a - b: dy/da = +1 per use (4), dy/db = -1 per use (3)
    let (a, b) = (a31(), b14());
    let g = grads_of(&ops::sub(&a, &b)?, &[&a, &b])?;
    assert_eq!(g, vec![vec![4.0; 3], vec![-3.0; 4]]);
    Ok(())
}

#[test]
fn mul_broadcast() -> Result<()> {
    both(|x| ops::mul(&x[0], &x[1]), &[a31(), b14()])?;
    both(|x| ops::mul_scalar(&x[0], sc(-1.5)), &[b14()])?;
    // x·x: both operands are the same tensor
    both(|x| ops::mul(&x[0], &x[0]), &[b14()])?;
    // y = a_i·b_j summed: dy/da_i = Σ_j b_j, dy/db_j = Σ_i a_i
    let (a, b) = (a31(), b14());
    let g = grads_of(&ops::mul(&a, &b)?, &[&a, &b])?;
    let sb: f64 = [0.7, -1.3, 1.9, -0.6].iter().sum();
    let sa: f64 = [0.6, 1.3, 2.1].iter().sum();
    assert_values(&tensor(g[0].clone(), &[3]), &[sb; 3], 1e-15, 0.0);
    assert_values(&tensor(g[1].clone(), &[4]), &[sa; 4], 1e-15, 0.0);
    Ok(())
}

#[test]
fn div_broadcast() -> Result<()> {
    // divisor b14 is bounded away from zero
    both(|x| ops::div(&x[0], &x[1]), &[a31(), b14()])?;
    both(|x| ops::div(&x[1], &x[0]), &[a31(), b14()])?;
    both(|x| ops::div_scalar(&x[0], sc(4.0)), &[b14()])?;
    // y = a/b, a = 3, b = 2: dy/da = 1/b = 0.5, dy/db = -a/b² = -0.75
    let (a, b) = (leaf(vec![3.0], &[1]), leaf(vec![2.0], &[1]));
    let g = grads_of(&ops::div(&a, &b)?, &[&a, &b])?;
    assert_eq!(g, vec![vec![0.5], vec![-0.75]]);
    Ok(())
}

#[test]
fn pow_broadcast_and_scalar_forms() -> Result<()> {
    // positive base (3,1) ** exponent (1,4) with mixed signs
    both(|x| ops::pow(&x[0], &x[1]), &[a31(), b14()])?;
    // x ** 3, x ** 0.5 (sqrt path), x ** -0.5 (rsqrt path), x ** 0 (zero gradient)
    for e in [3.0, 0.5, -0.5, 0.0, 2.5] {
        both(|x| ops::pow_scalar(&x[0], sc(e)), &[a31()])?;
    }
    // 2 ** x
    both(
        |x| ops::pow_op(Operand::S(sc(2.0)), Operand::T(&x[0])),
        &[b14()],
    )?;

    // y = x^2 + 5x + 4; dy/dx = 2x + 5
    let x = leaf(vec![-3.0, 0.5, 2.0], &[3]);
    let y = ops::add_scalar(
        &ops::add(
            &ops::pow_scalar(&x, sc(2.0))?,
            &ops::mul_scalar(&x, sc(5.0))?,
        )?,
        sc(4.0),
    )?;
    assert_eq!(to_vec(&y), vec![-2.0, 6.75, 18.0]);
    assert_eq!(grads_of(&y, &[&x])?[0], vec![-1.0, 6.0, 9.0]);

    // y = a^b at a = 0, b = 2: dy/da = b·a^(b-1) = 0; dy/db = a^b·ln a, taken as 0 (not nan)
    let (a, b) = (leaf(vec![0.0], &[1]), leaf(vec![2.0], &[1]));
    assert_eq!(
        grads_of(&ops::pow(&a, &b)?, &[&a, &b])?,
        vec![vec![0.0], vec![0.0]]
    );
    // y = 2^x; dy/dx = 2^x·ln 2
    let x = leaf(vec![3.0], &[1]);
    assert_values(
        &tensor(
            grads_of(&ops::pow_op(Operand::S(sc(2.0)), Operand::T(&x))?, &[&x])?[0].clone(),
            &[1],
        ),
        &[8.0 * 2f64.ln()],
        1e-14,
        0.0,
    );
    Ok(())
}

// ==== unary ops ========================================================================

macro_rules! unary_checks {
    ($($name:ident: $op:path, $vals:expr;)*) => {$(
        #[test]
        fn $name() -> Result<()> {
            let x = leaf($vals, &[2, 3]);
            both(|xs| $op(&xs[0]), &[x])
        }
    )*};
}

fn mixed() -> Vec<f64> {
    // signs mixed, all at least 0.1 away from 0 (kinks of relu/abs)
    vec![-1.7, 0.4, 1.1, -0.35, 2.2, -0.9]
}

unary_checks! {
    unary_exp: ops::exp, spread(6, -2.0, 2.0);
    unary_log: ops::log, spread(6, 0.3, 3.0);
    unary_log1p: ops::log1p, spread(6, -0.5, 2.0);
    unary_expm1: ops::expm1, spread(6, -2.0, 2.0);
    unary_sqrt: ops::sqrt, spread(6, 0.3, 3.0);
    unary_rsqrt: ops::rsqrt, spread(6, 0.3, 3.0);
    unary_sin: ops::sin, spread(6, -3.0, 3.0);
    unary_cos: ops::cos, spread(6, -3.0, 3.0);
    unary_tan: ops::tan, spread(6, -1.2, 1.2);
    unary_tanh: ops::tanh, spread(6, -2.0, 2.0);
    unary_sigmoid: ops::sigmoid, spread(6, -3.0, 3.0);
    unary_relu: ops::relu, mixed();
    unary_abs: ops::abs, mixed();
    unary_sign: ops::sign, mixed();
    unary_reciprocal: ops::reciprocal, mixed();
    unary_neg: ops::neg, mixed();
}

#[test]
fn unary_hand_values() -> Result<()> {
    type Op = fn(&Tensor) -> Result<Tensor>;
    // (op, x, d op/dx at x)
    let table: Vec<(&str, Op, f64, f64)> = vec![
        ("exp", ops::exp, 0.5, 0.5f64.exp()),    // (eˣ)' = eˣ
        ("log", ops::log, 2.0, 0.5),             // (ln x)' = 1/x
        ("log1p", ops::log1p, 1.0, 0.5),         // (ln(1+x))' = 1/(1+x)
        ("expm1", ops::expm1, 1.0, 1f64.exp()),  // (eˣ - 1)' = eˣ
        ("sqrt", ops::sqrt, 4.0, 0.25),          // (√x)' = 1/(2√x)
        ("rsqrt", ops::rsqrt, 4.0, -1.0 / 16.0), // (x^-1/2)' = -1/2·x^-3/2
        ("sin", ops::sin, 1.0, 1f64.cos()),      // sin' = cos
        ("cos", ops::cos, 1.0, -(1f64.sin())),   // cos' = -sin
        ("tan", ops::tan, 0.5, 1.0 / (0.5f64.cos() * 0.5f64.cos())), // tan' = 1/cos²
        ("tanh", ops::tanh, 0.5, 1.0 - 0.5f64.tanh() * 0.5f64.tanh()), // tanh' = 1 - tanh²
        ("sigmoid", ops::sigmoid, 0.0, 0.25),    // σ' = σ(1-σ) = 1/4 at 0
        ("relu", ops::relu, -0.5, 0.0),          // relu' = [x > 0]
        ("relu+", ops::relu, 0.5, 1.0),
        ("abs", ops::abs, -2.0, -1.0),               // |x|' = sign(x)
        ("sign", ops::sign, 3.0, 0.0),               // sign' = 0
        ("reciprocal", ops::reciprocal, 2.0, -0.25), // (1/x)' = -1/x²
        ("neg", ops::neg, 2.0, -1.0),                // (-x)' = -1
    ];
    for (name, op, x0, want) in table {
        let x = leaf(vec![x0], &[1]);
        let g = grads_of(&op(&x)?, &[&x])?;
        assert!(
            (g[0][0] - want).abs() <= 1e-14 * want.abs().max(1.0),
            "{name}'({x0}): got {} want {want}",
            g[0][0]
        );
    }
    Ok(())
}

// ==== maximum / minimum / where / clamp =================================================

#[test]
fn maximum_minimum_without_ties() -> Result<()> {
    // a (3,1) = [0.6, 1.3, 2.1], b (1,4) = [0.7, -1.3, 1.9, -0.6]: no equal pairs
    both(|x| ops::extremum(&x[0], &x[1], true), &[a31(), b14()])?;
    both(|x| ops::extremum(&x[0], &x[1], false), &[a31(), b14()])?;
    // max(a, b) elementwise: the larger operand gets the gradient; ties split it in half
    let (a, b) = (
        leaf(vec![1.0, 5.0, 3.0], &[3]),
        leaf(vec![2.0, 4.0, 3.0], &[3]),
    );
    assert_eq!(
        grads_of(&ops::extremum(&a, &b, true)?, &[&a, &b])?,
        vec![vec![0.0, 1.0, 0.5], vec![1.0, 0.0, 0.5]]
    );
    assert_eq!(
        grads_of(&ops::extremum(&a, &b, false)?, &[&a, &b])?,
        vec![vec![1.0, 0.0, 0.5], vec![0.0, 1.0, 0.5]]
    );
    Ok(())
}

#[test]
fn where_broadcast() -> Result<()> {
    let cond = tensor_bool(
        vec![
            true, false, false, true, false, true, true, false, true, true, false, false,
        ],
        &[3, 4],
    );
    let a = leaf(spread(12, -2.0, 2.0), &[3, 4]);
    both(|x| ops::where_(&cond, &x[0], &x[1]), &[a.clone(), b14()])?;
    // d where(c, a, b)/da = c, /db = !c summed over the broadcast rows
    let b = b14();
    let g = grads_of(&ops::where_(&cond, &a, &b)?, &[&a, &b])?;
    assert_eq!(g[0], to_vec(&cond));
    // !c per column: [F,T,F] [T,F,F] [T,F,T] [F,T,T] -> false counts [1, 1, 2, 2]
    assert_eq!(g[1], vec![1.0, 1.0, 2.0, 2.0]);
    Ok(())
}

#[test]
fn clamp_away_from_bounds() -> Result<()> {
    // spread(8, -2, 2) = 0.425, -0.950, 1.275, -0.101, -1.476, 0.749, -0.626, 1.599: none within 0.04 of ±1
    let x = leaf(spread(8, -2.0, 2.0), &[2, 4]);
    both(
        |x| ops::clamp(&x[0], Some(Scalar::Float(-1.0)), Some(Scalar::Float(1.0))),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| ops::clamp(&x[0], Some(Scalar::Float(0.0)), None),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| ops::clamp(&x[0], None, Some(Scalar::Float(0.5))),
        std::slice::from_ref(&x),
    )?;
    // d clamp(x, -1, 1)/dx = [-1 <= x <= 1]
    let want: Vec<f64> = to_vec(&x)
        .iter()
        .map(|&v| if (-1.0..=1.0).contains(&v) { 1.0 } else { 0.0 })
        .collect();
    assert_eq!(want, vec![1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0]);
    assert_eq!(
        grads_of(
            &ops::clamp(&x, Some(Scalar::Float(-1.0)), Some(Scalar::Float(1.0)))?,
            &[&x]
        )?[0],
        want
    );
    Ok(())
}

// ==== reductions =======================================================================

fn x232() -> Tensor {
    leaf(spread(12, -2.0, 2.0), &[2, 3, 2])
}

#[test]
fn sum_all_and_dims() -> Result<()> {
    let x = x232();
    both(|x| ops::sum(&x[0], None, false), std::slice::from_ref(&x))?;
    both(
        |x| ops::sum(&x[0], Some(&[1]), false),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| ops::sum(&x[0], Some(&[0, 2]), true),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| ops::sum(&x[0], Some(&[-1]), true),
        std::slice::from_ref(&x),
    )?;
    // d Σx/dx = 1
    assert_eq!(
        grads_of(&ops::sum(&x, Some(&[1]), false)?, &[&x])?[0],
        vec![1.0; 12]
    );
    Ok(())
}

#[test]
fn mean_all_and_dims() -> Result<()> {
    let x = x232();
    both(|x| ops::mean(&x[0], None, false), std::slice::from_ref(&x))?;
    both(
        |x| ops::mean(&x[0], Some(&[1]), false),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| ops::mean(&x[0], Some(&[0, 2]), true),
        std::slice::from_ref(&x),
    )?;
    // d mean_{dim 1}(x)/dx = 1/3 (summed over the kept outputs: one each)
    assert_values(
        &tensor(
            grads_of(&ops::mean(&x, Some(&[1]), true)?, &[&x])?[0].clone(),
            &[12],
        ),
        &[1.0 / 3.0; 12],
        1e-16,
        0.0,
    );
    // full mean: 1/12
    assert_values(
        &tensor(
            grads_of(&ops::mean(&x, None, false)?, &[&x])?[0].clone(),
            &[12],
        ),
        &[1.0 / 12.0; 12],
        1e-16,
        0.0,
    );
    Ok(())
}

#[test]
fn prod_without_zeros() -> Result<()> {
    let x = leaf(vec![0.8, -1.2, 1.5, 0.6, -0.7, 1.1], &[2, 3]);
    both(|x| ops::prod(&x[0], None, false), std::slice::from_ref(&x))?;
    both(
        |x| ops::prod(&x[0], Some(1), false),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| ops::prod(&x[0], Some(0), true),
        std::slice::from_ref(&x),
    )?;
    // d Πx/dx_i = Π_{j≠i} x_j
    let x = leaf(vec![2.0, 3.0, 4.0], &[3]);
    assert_eq!(
        grads_of(&ops::prod(&x, None, false)?, &[&x])?[0],
        vec![12.0, 8.0, 6.0]
    );
    Ok(())
}

#[test]
fn prod_with_one_zero_first_order() -> Result<()> {
    // exactly one zero: only the zero's position gets Π of the others
    // x = [2, 0, 3, -1.5]: d/dx = [0, 2·3·(-1.5), 0, 0] = [0, -9, 0, 0]
    let x = leaf(vec![2.0, 0.0, 3.0, -1.5], &[4]);
    assert_eq!(
        grads_of(&ops::prod(&x, None, false)?, &[&x])?[0],
        vec![0.0, -9.0, 0.0, 0.0]
    );
    gradcheck(|x| ops::prod(&x[0], None, false), std::slice::from_ref(&x))?;
    // along a dim: row 0 has one zero, row 1 none
    let x2 = leaf(vec![1.5, 0.0, 2.0, 0.5, -1.0, 3.0], &[2, 3]);
    gradcheck(
        |x| ops::prod(&x[0], Some(1), false),
        std::slice::from_ref(&x2),
    )?;
    // row 0: [0, 1.5·2, 0] = [0, 3, 0]; row 1: [-3, 1.5, -0.5]
    assert_eq!(
        grads_of(&ops::prod(&x2, Some(1), false)?, &[&x2])?[0],
        vec![0.0, 3.0, 0.0, -3.0, 1.5, -0.5]
    );
    // two zeros: every partial product contains a zero
    let x3 = leaf(vec![0.0, 2.0, 0.0], &[3]);
    assert_eq!(
        grads_of(&ops::prod(&x3, None, false)?, &[&x3])?[0],
        vec![0.0, 0.0, 0.0]
    );
    gradcheck(|x| ops::prod(&x[0], None, false), &[x3])
}

#[test]
fn prod_with_one_zero_second_order() -> Result<()> {
    // x = [2, 0, 3]: f = Πx; the Hessian is H[i][j] = Π_{k∉{i,j}} x_k (i≠j), 0 on the
    // diagonal: H = [[0, 3, 0], [3, 0, 2], [0, 2, 0]]. Check the double backward.
    let x = leaf(vec![2.0, 0.0, 3.0], &[3]);
    let y = ops::prod(&x, None, false)?;
    let opts = Options {
        retain_graph: true,
        create_graph: true,
        accumulate: false,
        allow_unused: false,
        ..Options::default()
    };
    let g = run_backward(
        std::slice::from_ref(&y),
        &[ops::ones(&[], DType::F64)?],
        std::slice::from_ref(&x),
        opts,
    )?;
    let g = g
        .into_iter()
        .next()
        .flatten()
        .ok_or_else(|| Error::runtime("no grad"))?;
    assert_eq!(to_vec(&g), vec![0.0, 6.0, 0.0]);
    // row 1 of H: d(∂f/∂x1)/dx = [3, 0, 2]
    let e1 = tensor(vec![0.0, 1.0, 0.0], &[3]);
    let opts2 = Options {
        retain_graph: true,
        create_graph: false,
        accumulate: false,
        allow_unused: true,
        ..Options::default()
    };
    let h1 = run_backward(
        std::slice::from_ref(&g),
        &[e1],
        std::slice::from_ref(&x),
        opts2,
    )?;
    let h1 = h1.into_iter().next().flatten().map(|t| to_vec(&t));
    assert_eq!(
        h1,
        Some(vec![3.0, 0.0, 2.0]),
        "row 1 of the Hessian of prod at [2, 0, 3]"
    );
    gradgradcheck(|x| ops::prod(&x[0], None, false), &[x])
}

#[test]
fn var_std_all_and_dims() -> Result<()> {
    let x = leaf(spread(12, -2.0, 2.0), &[3, 4]);
    both(
        |x| ops::var_std(&x[0], None, 1.0, false, false),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| ops::var_std(&x[0], Some(&[1]), 1.0, true, false),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| ops::var_std(&x[0], Some(&[0]), 0.0, false, false),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| ops::var_std(&x[0], None, 1.0, false, true),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| ops::var_std(&x[0], Some(&[1]), 1.0, false, true),
        std::slice::from_ref(&x),
    )?;
    // var(x) = Σ(x - m)²/(N-1); d var/dx = 2(x - m)/(N-1). x = [1, 2, 6]: m = 3 -> [-2, -1, 3]
    let v = leaf(vec![1.0, 2.0, 6.0], &[3]);
    assert_eq!(
        to_vec(&ops::var_std(&v, None, 1.0, false, false)?),
        vec![7.0]
    );
    assert_eq!(
        grads_of(&ops::var_std(&v, None, 1.0, false, false)?, &[&v])?[0],
        vec![-2.0, -1.0, 3.0]
    );
    // d std/dx = (x - m)/((N-1)·std), std = √7
    let s7 = 7f64.sqrt();
    let g = grads_of(&ops::var_std(&v, None, 1.0, false, true)?, &[&v])?;
    assert_values(
        &tensor(g[0].clone(), &[3]),
        &[-2.0 / (2.0 * s7), -1.0 / (2.0 * s7), 3.0 / (2.0 * s7)],
        1e-15,
        1e-14,
    );
    Ok(())
}

#[test]
fn norm_p2_p1_and_general() -> Result<()> {
    let x = leaf(vec![-1.7, 0.4, 1.1, -0.35, 2.2, -0.9], &[2, 3]);
    both(
        |x| ops::norm(&x[0], 2.0, None, false),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| ops::norm(&x[0], 2.0, Some(&[1]), true),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| ops::norm(&x[0], 1.0, None, false),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| ops::norm(&x[0], 1.0, Some(&[0]), false),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| ops::norm(&x[0], 3.0, Some(&[1]), false),
        std::slice::from_ref(&x),
    )?;
    gradcheck(
        |x| ops::norm(&x[0], f64::INFINITY, Some(&[1]), false),
        std::slice::from_ref(&x),
    )?;
    // ‖x‖₂ for x = [3, -4] is 5; d/dx = x/‖x‖ = [0.6, -0.8]; ‖x‖₁' = sign(x)
    let v = leaf(vec![3.0, -4.0], &[2]);
    assert_eq!(to_vec(&ops::norm(&v, 2.0, None, false)?), vec![5.0]);
    assert_eq!(
        grads_of(&ops::norm(&v, 2.0, None, false)?, &[&v])?[0],
        vec![0.6, -0.8]
    );
    assert_eq!(
        grads_of(&ops::norm(&v, 1.0, None, false)?, &[&v])?[0],
        vec![1.0, -1.0]
    );
    // the 2-norm's gradient at 0 is taken as 0 (torch's subgradient), not nan
    let z = leaf(vec![0.0, 0.0], &[2]);
    assert_eq!(
        grads_of(&ops::norm(&z, 2.0, None, false)?, &[&z])?[0],
        vec![0.0, 0.0]
    );
    Ok(())
}

#[test]
fn logsumexp_dims() -> Result<()> {
    let x = leaf(spread(8, -2.0, 2.0), &[2, 4]);
    both(
        |x| ops::logsumexp(&x[0], &[1], false),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| ops::logsumexp(&x[0], &[0, 1], true),
        std::slice::from_ref(&x),
    )?;
    // d lse(x)/dx = softmax(x); x = [0, ln 3]: softmax = [1/4, 3/4]
    let v = leaf(vec![0.0, 3f64.ln()], &[2]);
    let g = grads_of(&ops::logsumexp(&v, &[0], false)?, &[&v])?;
    assert_values(&tensor(g[0].clone(), &[2]), &[0.25, 0.75], 1e-15, 0.0);
    Ok(())
}

#[test]
fn softmax_and_log_softmax() -> Result<()> {
    let x = leaf(spread(8, -2.0, 2.0), &[2, 4]);
    both(|x| ops::softmax(&x[0], 1, false), std::slice::from_ref(&x))?;
    both(|x| ops::softmax(&x[0], 0, false), std::slice::from_ref(&x))?;
    both(|x| ops::softmax(&x[0], 1, true), std::slice::from_ref(&x))?;
    both(|x| ops::softmax(&x[0], -2, true), std::slice::from_ref(&x))?;
    // Σ softmax = 1 is constant: d Σ softmax / dx = 0
    let g = grads_of(&ops::softmax(&x, 1, false)?, &[&x])?;
    assert_values(&tensor(g[0].clone(), &[8]), &[0.0; 8], 1e-15, 0.0);
    // Σ_j log_softmax_j over C classes: d/dx_i = 1 - C·softmax_i; x = [0, ln 3]: [1 - 2/4, 1 - 6/4]
    let v = leaf(vec![0.0, 3f64.ln()], &[2]);
    let g = grads_of(&ops::softmax(&v, 0, true)?, &[&v])?;
    assert_values(&tensor(g[0].clone(), &[2]), &[0.5, -0.5], 1e-15, 0.0);
    Ok(())
}

#[test]
fn amax_and_max_dim() -> Result<()> {
    // no ties anywhere in the inputs
    let x = leaf(spread(8, -2.0, 2.0), &[2, 4]);
    both(
        |x| ops::amax(&x[0], None, false, true, true),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| ops::amax(&x[0], Some(&[1]), false, true, false),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| ops::amax(&x[0], Some(&[0]), true, false, false),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| Ok(ops::max_dim(&x[0], 1, false, true)?.0),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| Ok(ops::max_dim(&x[0], 0, true, false)?.0),
        std::slice::from_ref(&x),
    )?;
    // amax with ties: the gradient is split evenly among the maxima
    let v = leaf(vec![1.0, 3.0, 3.0], &[3]);
    assert_eq!(
        grads_of(&ops::amax(&v, None, false, true, false)?, &[&v])?[0],
        vec![0.0, 0.5, 0.5]
    );
    // max(dim): the whole gradient goes to the returned index
    let (vals, idx) = ops::max_dim(&v, 0, false, true)?;
    let i = to_vec(&idx)[0] as usize;
    assert!(i == 1 || i == 2, "argmax of [1, 3, 3] is {i}");
    let mut want = vec![0.0; 3];
    want[i] = 1.0;
    assert_eq!(grads_of(&vals, &[&v])?[0], want);
    Ok(())
}

// ==== matmul ===========================================================================

#[test]
fn matmul_2d() -> Result<()> {
    let a = leaf(spread(6, -1.0, 1.0), &[2, 3]);
    let b = leaf(spread(12, -1.5, 1.0), &[3, 4]);
    both(|x| ops::matmul(&x[0], &x[1]), &[a.clone(), b.clone()])?;
    both(|x| ops::mm(&x[0], &x[1]), &[a.clone(), b.clone()])?;
    // d Σ(AB)/dA = 1·Bᵀ: each A[i][k] gets Σ_j B[k][j]
    let g = grads_of(&ops::matmul(&a, &b)?, &[&a])?;
    let bv = to_vec(&b);
    let rows: Vec<f64> = (0..3).map(|k| bv[k * 4..k * 4 + 4].iter().sum()).collect();
    assert_values(
        &tensor(g[0].clone(), &[2, 3]),
        &[rows.clone(), rows].concat(),
        1e-14,
        0.0,
    );
    Ok(())
}

#[test]
fn matmul_batched_broadcast() -> Result<()> {
    // (2,1,3,4) @ (5,4,2) -> (2,5,3,2)
    let a = leaf(spread(24, -1.0, 1.0), &[2, 1, 3, 4]);
    let b = leaf(spread(40, -1.0, 1.0), &[5, 4, 2]);
    assert_eq!(ops::matmul(&a, &b)?.shape().to_vec(), vec![2, 5, 3, 2]);
    both(|x| ops::matmul(&x[0], &x[1]), &[a, b])?;
    // bmm itself
    let c = leaf(spread(12, -1.0, 1.0), &[2, 2, 3]);
    let d = leaf(spread(12, -0.5, 1.5), &[2, 3, 2]);
    both(|x| ops::bmm(&x[0], &x[1]), &[c, d])
}

#[test]
fn matmul_1d_cases_and_dot() -> Result<()> {
    let v3 = leaf(vec![0.5, -1.0, 2.0], &[3]);
    let w3 = leaf(vec![1.5, 0.25, -0.75], &[3]);
    let m34 = leaf(spread(12, -1.0, 1.0), &[3, 4]);
    let m23 = leaf(spread(6, -1.0, 1.0), &[2, 3]);
    let t234 = leaf(spread(24, -1.0, 1.0), &[2, 3, 4]);
    both(|x| ops::matmul(&x[0], &x[1]), &[v3.clone(), w3.clone()])?; // 1-D @ 1-D = dot
    both(|x| ops::matmul(&x[0], &x[1]), &[v3.clone(), m34.clone()])?; // 1-D @ 2-D
    both(|x| ops::matmul(&x[0], &x[1]), &[m23.clone(), v3.clone()])?; // 2-D @ 1-D
    both(|x| ops::matmul(&x[0], &x[1]), &[v3.clone(), t234.clone()])?; // 1-D @ 3-D
    both(
        |x| ops::matmul(&x[0], &x[1]),
        &[t234.clone(), leaf(vec![1.0, -0.5, 0.25, 2.0], &[4])],
    )?; // 3-D @ 1-D
    both(|x| ops::dot(&x[0], &x[1]), &[v3.clone(), w3.clone()])?;
    // d(v·w)/dv = w, /dw = v
    let g = grads_of(&ops::dot(&v3, &w3)?, &[&v3, &w3])?;
    assert_eq!(g, vec![to_vec(&w3), to_vec(&v3)]);
    assert_eq!(ops::matmul(&v3, &t234)?.shape().to_vec(), vec![2, 4]);
    Ok(())
}

// ==== shape ops ========================================================================

#[test]
fn transpose_permute_reshape_view() -> Result<()> {
    let x = x232();
    both(|x| ops::transpose(&x[0], 0, 2), std::slice::from_ref(&x))?;
    both(
        |x| ops::permute(&x[0], &[2, 0, 1]),
        std::slice::from_ref(&x),
    )?;
    both(|x| ops::reshape(&x[0], &[3, -1]), std::slice::from_ref(&x))?; // a view
    both(
        |x| ops::reshape(&ops::transpose(&x[0], 0, 1)?, &[-1]),
        std::slice::from_ref(&x),
    )?; // needs a copy
    both(|x| ops::view(&x[0], &[6, 2]), std::slice::from_ref(&x))?;
    both(|x| ops::flatten(&x[0], 1, 2), std::slice::from_ref(&x))?;
    let m = leaf(spread(6, -1.0, 1.0), &[2, 3]);
    both(|x| ops::t(&x[0]), &[m])?;
    // a permutation moves each gradient back to its element: weights w through a permute
    let w = tensor((0..12).map(f64::from).collect(), &[2, 3, 2]);
    let y = ops::mul(
        &ops::permute(&x, &[2, 0, 1])?,
        &ops::permute(&w, &[2, 0, 1])?,
    )?;
    assert_eq!(grads_of(&y, &[&x])?[0], to_vec(&w));
    Ok(())
}

#[test]
fn expand_and_repeat() -> Result<()> {
    let x = leaf(vec![0.5, -1.0, 2.0], &[3, 1]);
    both(|x| ops::expand(&x[0], &[2, 3, 4]), std::slice::from_ref(&x))?;
    both(
        |x| ops::expand_sizes(&x[0], &[-1, 5]),
        std::slice::from_ref(&x),
    )?;
    both(|x| ops::repeat(&x[0], &[2, 1, 3]), std::slice::from_ref(&x))?;
    // each element is used 2·4 = 8 times by expand(2,3,4), 2·3 = 6 times by repeat
    assert_eq!(
        grads_of(&ops::expand(&x, &[2, 3, 4])?, &[&x])?[0],
        vec![8.0; 3]
    );
    assert_eq!(
        grads_of(&ops::repeat(&x, &[2, 1, 3])?, &[&x])?[0],
        vec![6.0; 3]
    );
    Ok(())
}

#[test]
fn slice_step_select_narrow() -> Result<()> {
    let x = leaf(spread(20, -2.0, 2.0), &[4, 5]);
    both(
        |x| ops::slice(&x[0], 1, Some(1), Some(5), 2),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| ops::slice(&x[0], 0, Some(-3), None, 2),
        std::slice::from_ref(&x),
    )?;
    both(|x| ops::select(&x[0], 0, -1), std::slice::from_ref(&x))?;
    both(|x| ops::select(&x[0], 1, 2), std::slice::from_ref(&x))?;
    both(|x| ops::narrow(&x[0], 1, 1, 3), std::slice::from_ref(&x))?;
    // x[:, 1:5:2] picks columns 1 and 3 of every row
    let g = grads_of(&ops::slice(&x, 1, Some(1), Some(5), 2)?, &[&x])?;
    let row = [0.0, 1.0, 0.0, 1.0, 0.0];
    assert_eq!(g[0], [row, row, row, row].concat());
    // x[-1] picks the last row
    let g = grads_of(&ops::select(&x, 0, -1)?, &[&x])?;
    assert_eq!(g[0], [vec![0.0; 15], vec![1.0; 5]].concat());
    Ok(())
}

#[test]
fn squeeze_unsqueeze() -> Result<()> {
    let x = leaf(spread(6, -1.0, 1.0), &[3, 1, 2]);
    both(|x| ops::squeeze(&x[0], None), std::slice::from_ref(&x))?;
    both(
        |x| ops::squeeze(&x[0], Some(&[1])),
        std::slice::from_ref(&x),
    )?;
    both(|x| ops::unsqueeze(&x[0], -1), std::slice::from_ref(&x))?;
    both(|x| ops::unsqueeze(&x[0], 0), std::slice::from_ref(&x))?;
    assert_eq!(ops::squeeze(&x, None)?.shape().to_vec(), vec![3, 2]);
    assert_eq!(grads_of(&ops::unsqueeze(&x, 1)?, &[&x])?[0], vec![1.0; 6]);
    Ok(())
}

#[test]
fn cat_and_stack() -> Result<()> {
    let (a, b, c) = (
        leaf(spread(6, -1.0, 1.0), &[2, 3]),
        leaf(spread(3, 0.0, 2.0), &[1, 3]),
        leaf(spread(12, -2.0, 0.0), &[4, 3]),
    );
    both(|x| ops::cat(x, 0), &[a.clone(), b.clone(), c.clone()])?;
    let (d, e) = (
        leaf(spread(4, -1.0, 1.0), &[2, 2]),
        leaf(spread(2, 0.5, 1.5), &[2, 1]),
    );
    both(|x| ops::cat(x, 1), &[a.clone(), d.clone(), e])?;
    let s = leaf(spread(6, 1.0, 2.0), &[2, 3]);
    both(|x| ops::stack(x, 0), &[a.clone(), s.clone()])?;
    both(|x| ops::stack(x, 2), &[a.clone(), s.clone()])?;
    // cat routes each block of the gradient to its input: weights 0..N along the output
    let w = tensor((0..21).map(f64::from).collect(), &[7, 3]);
    let y = ops::mul(&ops::cat(&[a.clone(), b.clone(), c.clone()], 0)?, &w)?;
    let g = grads_of(&y, &[&a, &b, &c])?;
    let wv = to_vec(&w);
    assert_eq!(
        g,
        vec![wv[0..6].to_vec(), wv[6..9].to_vec(), wv[9..21].to_vec()]
    );
    Ok(())
}

// ==== indexing =========================================================================

#[test]
fn gather_index_select_masked_fill() -> Result<()> {
    let x = leaf(spread(12, -2.0, 2.0), &[3, 4]);
    let idx = tensor_i64(vec![0, 3, 1, 1, 2, 0], &[3, 2]);
    both(|x| ops::gather(&x[0], 1, &idx), std::slice::from_ref(&x))?;
    // gather's gradient scatter-adds: row 1 picks column 1 twice
    assert_eq!(
        grads_of(&ops::gather(&x, 1, &idx)?, &[&x])?[0],
        vec![1.0, 0.0, 0.0, 1.0, 0.0, 2.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    );

    let sel = tensor_i64(vec![2, 0, 2], &[3]);
    both(
        |x| ops::index_select(&x[0], 0, &sel),
        std::slice::from_ref(&x),
    )?;
    both(
        |x| ops::index_select(&x[0], 1, &sel),
        std::slice::from_ref(&x),
    )?;
    // rows 2, 0, 2: row 2 twice, row 0 once, row 1 never
    assert_eq!(
        grads_of(&ops::index_select(&x, 0, &sel)?, &[&x])?[0],
        [vec![1.0; 4], vec![0.0; 4], vec![2.0; 4]].concat()
    );

    let mask = tensor_bool(
        vec![
            true, false, false, true, false, true, false, false, true, true, false, false,
        ],
        &[3, 4],
    );
    both(
        |x| ops::masked_fill(&x[0], &mask, sc(7.5)),
        std::slice::from_ref(&x),
    )?;
    let mask_row = tensor_bool(vec![false, true, true, false], &[1, 4]);
    both(
        |x| ops::masked_fill(&x[0], &mask_row, sc(-1.0)),
        std::slice::from_ref(&x),
    )?;
    // filled positions get no gradient
    let want: Vec<f64> = to_vec(&mask).iter().map(|&m| 1.0 - m).collect();
    assert_eq!(
        grads_of(&ops::masked_fill(&x, &mask, sc(7.5))?, &[&x])?[0],
        want
    );
    Ok(())
}

#[test]
fn advanced_indexing() -> Result<()> {
    let x = leaf(spread(12, -2.0, 2.0), &[4, 3]);
    let rows = tensor_i64(vec![2, 0, 2], &[3]);
    both(
        |x| ops::index(&x[0], &[Some(rows.clone())]),
        std::slice::from_ref(&x),
    )?;
    // x[[0, 3, 1], [2, 2, 0]]: one element per pair
    let (i, j) = (
        tensor_i64(vec![0, 3, 1], &[3]),
        tensor_i64(vec![2, 2, 0], &[3]),
    );
    both(
        |x| ops::index(&x[0], &[Some(i.clone()), Some(j.clone())]),
        std::slice::from_ref(&x),
    )?;
    // x[:, [2, 0]]
    let cols = tensor_i64(vec![2, 0], &[2]);
    both(
        |x| ops::index(&x[0], &[None, Some(cols.clone())]),
        std::slice::from_ref(&x),
    )?;
    // a 2-D index tensor, negative entries: x[[[3, -1], [0, 1]]] -> (2, 2, 3)
    let i2 = tensor_i64(vec![3, -1, 0, 1], &[2, 2]);
    assert_eq!(
        ops::index(&x, &[Some(i2.clone())])?.shape().to_vec(),
        vec![2, 2, 3]
    );
    both(
        |x| ops::index(&x[0], &[Some(i2.clone())]),
        std::slice::from_ref(&x),
    )?;
    // non-adjacent index dims on a 3-D tensor: y[[1, 0], :, [3, 1]] -> (2, 3)
    let y = leaf(spread(24, -1.0, 1.0), &[2, 3, 4]);
    let (p, q) = (tensor_i64(vec![1, 0], &[2]), tensor_i64(vec![3, 1], &[2]));
    assert_eq!(
        ops::index(&y, &[Some(p.clone()), None, Some(q.clone())])?
            .shape()
            .to_vec(),
        vec![2, 3]
    );
    both(
        |x| ops::index(&x[0], &[Some(p.clone()), None, Some(q.clone())]),
        &[y],
    )?;
    // repeated rows accumulate: x[[2, 0, 2]] -> row 2 twice
    assert_eq!(
        grads_of(&ops::index(&x, &[Some(rows)])?, &[&x])?[0],
        [vec![1.0; 3], vec![0.0; 3], vec![2.0; 3], vec![0.0; 3]].concat()
    );
    // index_put (x[i] = v, out of place): overwritten positions get no gradient for x
    let v = leaf(vec![0.5, -0.5, 1.5], &[3]);
    both(
        |x| ops::index_put(&x[0], &[Some(i.clone()), Some(j.clone())], &x[1], false),
        &[x.clone(), v.clone()],
    )?;
    let g = grads_of(
        &ops::index_put(&x, &[Some(i), Some(j)], &v, false)?,
        &[&x, &v],
    )?;
    // positions (0,2), (3,2), (1,0) -> flat 2, 11, 3
    let mut want = vec![1.0; 12];
    for k in [2, 11, 3] {
        want[k] = 0.0;
    }
    assert_eq!(g, vec![want, vec![1.0; 3]]);
    Ok(())
}

// ==== losses ===========================================================================

#[test]
fn mse_loss_reductions() -> Result<()> {
    let x = leaf(spread(6, -1.0, 1.0), &[2, 3]);
    let t = leaf(spread(6, -0.5, 2.0), &[2, 3]);
    for r in [Reduction::Mean, Reduction::Sum, Reduction::None] {
        both(|a| ops::mse_loss(&a[0], &a[1], r), &[x.clone(), t.clone()])?;
    }
    // mean((x - t)²): d/dx = 2(x - t)/N, d/dt = -2(x - t)/N; x = [1, 2], t = [0, 4]
    let (x, t) = (leaf(vec![1.0, 2.0], &[2]), leaf(vec![0.0, 4.0], &[2]));
    assert_eq!(to_vec(&ops::mse_loss(&x, &t, Reduction::Mean)?), vec![2.5]);
    assert_eq!(
        grads_of(&ops::mse_loss(&x, &t, Reduction::Mean)?, &[&x, &t])?,
        vec![vec![1.0, -2.0], vec![-1.0, 2.0]]
    );
    Ok(())
}

#[test]
fn nll_loss_reductions_and_ignore_index() -> Result<()> {
    let lp = leaf(spread(12, -3.0, -0.1), &[3, 4]);
    let target = tensor_i64(vec![1, 0, 3], &[3]);
    for r in [Reduction::Mean, Reduction::Sum, Reduction::None] {
        both(
            |a| ops::nll_loss(&a[0], &target, r, -100),
            std::slice::from_ref(&lp),
        )?;
    }
    // mean of -lp[i, t_i]: d/dlp[i, t_i] = -1/N
    let g = grads_of(&ops::nll_loss(&lp, &target, Reduction::Mean, -100)?, &[&lp])?;
    let third = -1.0 / 3.0;
    assert_eq!(
        g[0],
        vec![
            0.0, third, 0.0, 0.0, third, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, third
        ]
    );
    // an ignored target contributes nothing and is left out of the mean's count
    let t_ign = tensor_i64(vec![1, -100, 3], &[3]);
    both(
        |a| ops::nll_loss(&a[0], &t_ign, Reduction::Mean, -100),
        std::slice::from_ref(&lp),
    )?;
    let g = grads_of(&ops::nll_loss(&lp, &t_ign, Reduction::Mean, -100)?, &[&lp])?;
    assert_eq!(
        g[0],
        vec![0.0, -0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.5]
    );
    // 1-D input with a 0-d target
    let lp1 = leaf(vec![-1.0, -0.5, -2.0], &[3]);
    let t0 = tensor_i64(vec![2], &[]);
    both(|a| ops::nll_loss(&a[0], &t0, Reduction::Mean, -100), &[lp1])?;
    Ok(())
}

#[test]
fn cross_entropy_and_linear() -> Result<()> {
    let logits = leaf(spread(12, -2.0, 2.0), &[3, 4]);
    let target = tensor_i64(vec![2, 0, 3], &[3]);
    both(
        |a| ops::cross_entropy(&a[0], &target, Reduction::Mean, -100),
        std::slice::from_ref(&logits),
    )?;
    both(
        |a| ops::cross_entropy(&a[0], &target, Reduction::Sum, -100),
        std::slice::from_ref(&logits),
    )?;
    // d CE_mean/dlogits = (softmax(logits) - onehot(target))/N
    let sm = to_vec(&ops::softmax(&logits.detach(), 1, false)?);
    let mut want: Vec<f64> = sm.iter().map(|p| p / 3.0).collect();
    for (row, &c) in [2usize, 0, 3].iter().enumerate() {
        want[row * 4 + c] -= 1.0 / 3.0;
    }
    let g = grads_of(
        &ops::cross_entropy(&logits, &target, Reduction::Mean, -100)?,
        &[&logits],
    )?;
    assert_values(&tensor(g[0].clone(), &[12]), &want, 1e-15, 1e-12);
    // linear: x·Wᵀ + b
    let (x, w, b) = (
        leaf(spread(6, -1.0, 1.0), &[2, 3]),
        leaf(spread(12, -1.0, 1.0), &[4, 3]),
        leaf(spread(4, -0.5, 0.5), &[4]),
    );
    both(|a| ops::linear(&a[0], &a[1], Some(&a[2])), &[x, w, b])
}

// ==== in-place ops =====================================================================

#[test]
fn mul_inplace_on_nonleaf_clone() -> Result<()> {
    let x = leaf(spread(6, -2.0, 2.0), &[2, 3]);
    let w = leaf(vec![1.5, -0.5, 2.0], &[3]);
    let f = |a: &[Tensor]| -> Result<Tensor> {
        let y = ops::clone_tensor(&a[0])?;
        ops::mul_(&y, Operand::T(&a[1]))?;
        Ok(y)
    };
    both(f, &[x.clone(), w.clone()])?;
    // y = clone(x); y *= w; y *= 3: d Σy/dx = 3w (per row), d Σy/dw = 3·Σ_rows x
    let y = ops::clone_tensor(&x)?;
    let v0 = y.version();
    ops::mul_(&y, Operand::T(&w))?;
    ops::mul_(&y, Operand::S(sc(3.0)))?;
    assert_eq!(
        y.version(),
        v0 + 2,
        "each in-place op bumps the version counter"
    );
    assert_eq!(
        y.grad_fn().map(|n| n.name()),
        Some("MulBackward0".to_string())
    );
    let xv = to_vec(&x);
    let g = grads_of(&y, &[&x, &w])?;
    assert_eq!(g[0], vec![4.5, -1.5, 6.0, 4.5, -1.5, 6.0]);
    let colsum: Vec<f64> = (0..3).map(|j| 3.0 * (xv[j] + xv[3 + j])).collect();
    assert_values(&tensor(g[1].clone(), &[3]), &colsum, 1e-14, 0.0);
    // in place on a leaf that requires grad is refused
    let err = ops::mul_(&x, Operand::S(sc(2.0)))
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("a leaf Variable that requires grad is being used in an in-place operation.")
    );
    Ok(())
}

#[test]
fn mul_inplace_on_view_of_nonleaf() -> Result<()> {
    // y = clone(x); y[1] *= w  (CopySlices on y)
    let x = leaf(spread(6, -2.0, 2.0), &[2, 3]);
    let w = leaf(vec![1.5, -0.5, 2.0], &[3]);
    let f = |a: &[Tensor]| -> Result<Tensor> {
        let y = ops::clone_tensor(&a[0])?;
        let row = ops::select(&y, 0, 1)?;
        ops::mul_(&row, Operand::T(&a[1]))?;
        Ok(y)
    };
    both(f, &[x.clone(), w.clone()])?;
    let y = f(&[x.clone(), w.clone()])?;
    assert_eq!(
        y.grad_fn().map(|n| n.name()),
        Some("torch::autograd::CopySlices".to_string())
    );
    // d Σy/dx = [1, 1, 1, w...], d Σy/dw = x[1]
    let g = grads_of(&y, &[&x, &w])?;
    assert_eq!(g[0], vec![1.0, 1.0, 1.0, 1.5, -0.5, 2.0]);
    assert_eq!(g[1], to_vec(&x)[3..6].to_vec());
    Ok(())
}

#[test]
fn copy_into_slice_of_nonleaf() -> Result<()> {
    let x = leaf(spread(12, -2.0, 2.0), &[4, 3]);
    let src = leaf(spread(6, 0.5, 1.5), &[2, 3]);
    let wts = tensor((1..=12).map(f64::from).collect(), &[4, 3]);
    // y = clone(x); y[1:3] = src; out = y·wts
    let f = |a: &[Tensor]| -> Result<Tensor> {
        let y = ops::clone_tensor(&a[0])?;
        let view = ops::slice(&y, 0, Some(1), Some(3), 1)?;
        ops::copy_(&view, &a[1])?;
        ops::mul(&y, &wts)
    };
    both(f, &[x.clone(), src.clone()])?;
    let out = f(&[x.clone(), src.clone()])?;
    // forward: rows 1..3 now hold src
    let yv: Vec<f64> = to_vec(&out)
        .iter()
        .zip(to_vec(&wts))
        .map(|(o, w)| o / w)
        .collect();
    assert_values(
        &tensor(yv[3..9].to_vec(), &[6]),
        &to_vec(&src),
        1e-15,
        1e-15,
    );
    // the overwritten region's gradient w.r.t. x is zero; src gets the weights of rows 1..3
    let g = grads_of(&out, &[&x, &src])?;
    let w = to_vec(&wts);
    assert_eq!(
        g[0],
        [w[0..3].to_vec(), vec![0.0; 6], w[9..12].to_vec()].concat()
    );
    assert_eq!(g[1], w[3..9].to_vec());
    Ok(())
}

#[test]
fn copy_into_strided_slice_with_broadcast_and_constant() -> Result<()> {
    let x = leaf(spread(12, -2.0, 2.0), &[3, 4]);
    let src = leaf(vec![0.25, -0.75, 1.25], &[3, 1]);
    // y = x·1 (non-leaf); y[:, ::2] = src (broadcast over the 2 selected columns)
    let f = |a: &[Tensor]| -> Result<Tensor> {
        let y = ops::mul_scalar(&a[0], sc(1.0))?;
        ops::copy_(&ops::slice(&y, 1, Some(0), None, 2)?, &a[1])?;
        Ok(y)
    };
    both(f, &[x.clone(), src.clone()])?;
    let g = grads_of(&f(&[x.clone(), src.clone()])?, &[&x, &src])?;
    assert_eq!(g[0], [0.0, 1.0, 0.0, 1.0].repeat(3));
    // each src element was broadcast to 2 positions
    assert_eq!(g[1], vec![2.0; 3]);
    // writing a constant (no history) into the view: the region's gradient is zero
    let y = ops::mul_scalar(&x, sc(1.0))?;
    ops::copy_(
        &ops::slice(&y, 1, Some(0), None, 2)?,
        &tensor(vec![9.0; 6], &[3, 2]),
    )?;
    assert_eq!(to_vec(&y)[0], 9.0);
    assert_eq!(grads_of(&y, &[&x])?[0], [0.0, 1.0, 0.0, 1.0].repeat(3));
    Ok(())
}

#[test]
fn inplace_on_view_of_view_and_transposed_view() -> Result<()> {
    let x = leaf(spread(24, -2.0, 2.0), &[4, 6]);
    let src = leaf(spread(6, 0.5, 1.5), &[2, 3]);
    // y = clone(x); y[:, ::2][1:3] = src  (a view of a view; base is y)
    let f = |a: &[Tensor]| -> Result<Tensor> {
        let y = ops::clone_tensor(&a[0])?;
        let v1 = ops::slice(&y, 1, Some(0), None, 2)?;
        let v2 = ops::slice(&v1, 0, Some(1), Some(3), 1)?;
        ops::copy_(&v2, &a[1])?;
        Ok(y)
    };
    both(f, &[x.clone(), src.clone()])?;
    // overwritten: rows 1, 2 at columns 0, 2, 4
    let g = grads_of(&f(&[x.clone(), src.clone()])?, &[&x, &src])?;
    let mut want = vec![1.0; 24];
    for r in 1..3 {
        for c in [0, 2, 4] {
            want[r * 6 + c] = 0.0;
        }
    }
    assert_eq!(g, vec![want, vec![1.0; 6]]);
    // y = clone(x); yᵀ *= w (in place through a transposed view)
    let m = leaf(spread(6, -1.0, 1.0), &[2, 3]);
    let w = leaf(vec![1.5, -2.0], &[2]);
    let f = |a: &[Tensor]| -> Result<Tensor> {
        let y = ops::clone_tensor(&a[0])?;
        ops::mul_(&ops::transpose(&y, 0, 1)?, Operand::T(&a[1]))?;
        Ok(y)
    };
    both(f, &[m.clone(), w.clone()])?;
    // yᵀ[j][i] *= w[i]  <=>  y[i][j] *= w[i]: d Σy/dm = w per row
    assert_eq!(
        grads_of(&f(&[m.clone(), w.clone()])?, &[&m])?[0],
        vec![1.5, 1.5, 1.5, -2.0, -2.0, -2.0]
    );
    Ok(())
}

#[test]
fn more_layouts_and_broadcasts() -> Result<()> {
    // rank-mismatched broadcasting: (4,) + (2,3,4), (3,1) * 0-d
    let a = leaf(spread(4, -1.0, 1.0), &[4]);
    let b = leaf(spread(24, -1.0, 1.0), &[2, 3, 4]);
    both(|x| ops::add(&x[0], &x[1]), &[a.clone(), b.clone()])?;
    assert_eq!(grads_of(&ops::add(&a, &b)?, &[&a])?[0], vec![6.0; 4]);
    let s = leaf(vec![1.75], &[]);
    both(|x| ops::mul(&x[0], &x[1]), &[a31(), s.clone()])?;
    // non-contiguous inputs: matmul of transposes, softmax of a transpose, cat of slices
    let m = leaf(spread(12, -1.0, 1.0), &[4, 3]);
    let n = leaf(spread(8, -1.0, 1.0), &[2, 4]);
    both(
        |x| ops::matmul(&ops::t(&x[0])?, &ops::t(&x[1])?),
        &[m.clone(), n.clone()],
    )?;
    both(
        |x| ops::softmax(&ops::t(&x[0])?, 1, false),
        std::slice::from_ref(&m),
    )?;
    both(
        |x| {
            ops::cat(
                &[ops::slice(&x[0], 1, Some(0), None, 2)?, ops::t(&x[1])?],
                1,
            )
        },
        &[m.clone(), n.clone()],
    )?;
    both(
        |x| ops::repeat(&ops::t(&x[0])?, &[2, 1]),
        std::slice::from_ref(&m),
    )?;
    both(
        |x| {
            ops::sum(
                &ops::expand(&ops::t(&x[0])?, &[2, 3, 4])?,
                Some(&[0, 2]),
                false,
            )
        },
        std::slice::from_ref(&m),
    )?;
    // bool-mask advanced indexing: x[mask] picks the true positions in row-major order
    let mask = tensor_bool(
        vec![
            true, false, true, false, false, true, true, false, false, false, false, true,
        ],
        &[4, 3],
    );
    both(
        |x| ops::index(&x[0], &[Some(mask.clone())]),
        std::slice::from_ref(&m),
    )?;
    assert_eq!(
        grads_of(&ops::index(&m, &[Some(mask.clone())])?, &[&m])?[0],
        to_vec(&mask)
    );
    // index_put with accumulate and a repeated index: both copies add into x's position
    let v = leaf(vec![0.5, -0.5, 1.5], &[3]);
    let i = tensor_i64(vec![1, 1, 3], &[3]);
    both(
        |x| ops::index_put(&x[0], &[Some(i.clone())], &x[1], true),
        &[a.clone(), v.clone()],
    )?;
    assert_eq!(
        to_vec(&ops::index_put(&a, &[Some(i.clone())], &v, true)?)[1],
        to_vec(&a)[1] + 0.5 - 0.5
    );
    Ok(())
}

#[test]
fn views_taken_before_an_inplace_op_see_its_history() -> Result<()> {
    // torch regenerates the grad_fn of a view whose base was modified in place, so the
    // gradient of every view matches its (modified) value.
    let x = leaf(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    // y = clone(x); b = y[0] (taken first); y *= 3; b now holds 3·x[0], so db/dx[0] = 3
    let f = |a: &[Tensor]| -> Result<Tensor> {
        let y = ops::clone_tensor(&a[0])?;
        let b = ops::select(&y, 0, 0)?;
        ops::mul_(&y, Operand::S(sc(3.0)))?;
        Ok(b)
    };
    assert_eq!(to_vec(&f(std::slice::from_ref(&x))?), vec![3.0, 6.0]);
    assert_eq!(
        grads_of(&f(std::slice::from_ref(&x))?, &[&x])?[0],
        vec![3.0, 3.0, 0.0, 0.0]
    );
    gradcheck(f, std::slice::from_ref(&x))
}

#[test]
fn sibling_view_sees_inplace_through_another_view() -> Result<()> {
    let x = leaf(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    // y = clone(x); a = y[0]; b = y[0]; a *= 2: b shares a's storage and now holds 2·x[0]
    let f = |v: &[Tensor]| -> Result<Tensor> {
        let y = ops::clone_tensor(&v[0])?;
        let a = ops::select(&y, 0, 0)?;
        let b = ops::select(&y, 0, 0)?;
        ops::mul_(&a, Operand::S(sc(2.0)))?;
        Ok(b)
    };
    assert_eq!(to_vec(&f(std::slice::from_ref(&x))?), vec![2.0, 4.0]);
    assert_eq!(
        grads_of(&f(std::slice::from_ref(&x))?, &[&x])?[0],
        vec![2.0, 2.0, 0.0, 0.0]
    );
    gradcheck(f, std::slice::from_ref(&x))
}

#[test]
fn mixed_grad_and_constant_inputs() -> Result<()> {
    let x = leaf(spread(6, -1.0, 1.0), &[2, 3]);
    let c = tensor(spread(3, 2.0, 3.0), &[1, 3]);
    // only some inputs of a multi-input op require grad
    both(
        |a| ops::cat(&[a[0].clone(), c.clone()], 0),
        std::slice::from_ref(&x),
    )?;
    both(
        |a| ops::stack(&[c.clone(), ops::slice(&a[0], 0, Some(0), Some(1), 1)?], 1),
        std::slice::from_ref(&x),
    )?;
    both(
        |a| ops::matmul(&ops::t(&c)?, &ops::slice(&a[0], 0, Some(0), Some(1), 1)?),
        std::slice::from_ref(&x),
    )?;
    both(|a| ops::mul(&c, &a[0]), std::slice::from_ref(&x))?;
    both(|a| ops::div(&c, &a[0]), std::slice::from_ref(&x))?;
    both(|a| ops::pow(&c, &a[0]), std::slice::from_ref(&x))?;
    // where with a number operand; expand of a 0-d tensor
    let cond = tensor_bool(vec![true, false, true, true, false, false], &[2, 3]);
    both(
        |a| ops::where_op(&cond, Operand::T(&a[0]), Operand::S(sc(0.5))),
        std::slice::from_ref(&x),
    )?;
    let s = leaf(vec![0.75], &[]);
    both(|a| ops::expand(&a[0], &[2, 3]), std::slice::from_ref(&s))?;
    assert_eq!(grads_of(&ops::expand(&s, &[2, 3])?, &[&s])?[0], vec![6.0]);
    // large logits: logsumexp / cross_entropy stay finite and correct
    let big = leaf(vec![1000.0, 1000.5, 999.0, -1000.0], &[1, 4]);
    gradcheck(
        |a| ops::logsumexp(&a[0], &[1], false),
        std::slice::from_ref(&big),
    )?;
    let t = tensor_i64(vec![1], &[1]);
    both(
        |a| ops::cross_entropy(&a[0], &t, Reduction::Mean, -100),
        std::slice::from_ref(&big),
    )?;
    // cross_entropy with an ignored row, second order
    let logits = leaf(spread(12, -2.0, 2.0), &[3, 4]);
    let t_ign = tensor_i64(vec![2, -100, 0], &[3]);
    both(
        |a| ops::cross_entropy(&a[0], &t_ign, Reduction::Mean, -100),
        std::slice::from_ref(&logits),
    )?;
    // inf-norm, second order (no ties in |x|)
    both(
        |a| ops::norm(&a[0], f64::INFINITY, None, false),
        std::slice::from_ref(&x),
    )?;
    // var/std over a non-contiguous input
    both(
        |a| ops::var_std(&ops::t(&a[0])?, Some(&[1]), 1.0, false, true),
        std::slice::from_ref(&x),
    )?;
    Ok(())
}
