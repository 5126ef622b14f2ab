//! The binary op table's ops (`table::binary_op_table!`): dtype rules, number operands,
//! what the node saves, its name, and the recorded backward from the row's `da` / `db`.
//! Nothing here is specific to one op; the arithmetic operators, with fast paths of
//! their own, are the arithmetic table's (`arith.rs`; their forwards in `elementwise.rs`
//! and `division.rs`), powers are `pow.rs`.

use super::OperandShapes;
use super::elementwise::{Operand, Saver, get, grad0, promote};
use super::{apply, apply_nondiff};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::backend as k;
use crate::backend::{BinaryFn, BinaryOp, Calc};
#[cfg(test)]
use crate::dtype::DType;
use crate::dtype::Scalar;
use crate::tensor::Tensor;
use crate::{Error, Result};
use std::borrow::Cow;

/// The facts of one row the op layer needs.
struct Row {
    name: &'static str,
    /// torch's op name (`aten::atan2`)
    aten: &'static str,
    node: &'static str,
    /// integer and bool operands compute in the default float dtype
    float_result: bool,
    /// else: the kernel torch names when it refuses a non-float dtype
    kernel: &'static str,
    /// the nodes torch records when a number stands for the first or the second operand
    number_nodes: Option<(&'static str, &'static str)>,
    /// what each derivative reads of `a`, `b` and the output `y`
    da_reads: &'static [&'static str],
    db_reads: &'static [&'static str],
}

impl Row {
    /// Whether the node saves `v` (`a`, `b` or `y`): when a derivative that reads it is
    /// needed (torch's generated nodes save a value read by one formula only when that
    /// formula's input needs a gradient).
    fn saves(&self, v: &str, needs: [bool; 2]) -> bool {
        (needs[0] && self.da_reads.contains(&v)) || (needs[1] && self.db_reads.contains(&v))
    }
}

/// The tensor operations the rows' derivatives use besides [`Calc`]'s.
trait BinaryCalc: Sized {
    fn add(&self, o: &Self) -> Result<Self>;
    fn exp2(&self) -> Result<Self>;
    /// Zeros of `self`'s shape and dtype (a gradient torch gives as `zeros_like`).
    fn zeros(&self) -> Result<Self>;
    /// `self`, with 0 where the bool `mask` is false (torch's
    /// `masked_fill(mask.logical_not(), 0)`).
    fn zero_unless(&self, mask: &Self) -> Result<Self>;
    /// `self`, with 0 where the bool `mask` is true.
    fn zero_where(&self, mask: &Self) -> Result<Self>;
    /// `self`, with 0 where `a == c`.
    fn zero_where_eq(&self, a: &Self, c: f64) -> Result<Self>;
    /// The mask `(self <op> o) | isnan(n)` (fmax's and fmin's; `op`: ">", ">=", "<", "<=").
    fn cmp_or_nan(&self, op: &str, o: &Self, n: &Self) -> Result<Self>;
    /// `self`, with 0 where `a == b` (torch's `where(a != b, self, 0)`).
    fn zero_where_equal(&self, a: &Self, b: &Self) -> Result<Self>;
    /// [`zeros`](BinaryCalc::zeros), for a node that keeps `_kept` though this formula
    /// does not read them (torch's NextafterBackward0 saves both operands).
    fn zeros_keeping(&self, _kept: &[&Self]) -> Result<Self>;
    /// torch's error for an op without a derivative (`op`: its aten name).
    fn not_implemented(&self, op: &str) -> Result<Self>;
    /// `1 / self`, 0 where `self` is 0.
    fn reciprocal_or_zero(&self) -> Result<Self>;
    fn xlogy(&self, o: &Self) -> Result<Self>;
    /// `self`, with 0 where `a == 0` and `b <= 0` (broadcast).
    fn zero_where_zero_and_nonpositive(&self, a: &Self, b: &Self) -> Result<Self>;
    /// `self / 2` where `a == b`, else `self` (torch's `where(a == b, grad / 2, grad)`).
    fn ties_halved(&self, a: &Self, b: &Self) -> Result<Self>;
    /// `self`, with 0 where `a < b`.
    fn zero_where_less(&self, a: &Self, b: &Self) -> Result<Self>;
    /// `self`, with 0 where `a == 0` unless `b > 0` (so also where `b` is NaN).
    fn zero_where_zero_unless_positive(&self, a: &Self, b: &Self) -> Result<Self>;
}

impl BinaryCalc for Tensor {
    fn add(&self, o: &Self) -> Result<Self> {
        super::add(self, o)
    }
    fn exp2(&self) -> Result<Self> {
        super::exp2(self)
    }
    fn zeros(&self) -> Result<Self> {
        super::zeros_like(self)
    }
    fn zero_unless(&self, mask: &Self) -> Result<Self> {
        super::masked_fill(self, &super::logical_not(mask)?, Scalar::Float(0.0))
    }
    fn zero_where(&self, mask: &Self) -> Result<Self> {
        super::masked_fill(self, mask, Scalar::Float(0.0))
    }
    fn zero_where_eq(&self, a: &Self, c: f64) -> Result<Self> {
        super::masked_fill(self, &super::eq_scalar(a, c)?, Scalar::Float(0.0))
    }
    fn cmp_or_nan(&self, op: &str, o: &Self, n: &Self) -> Result<Self> {
        let op = match op {
            ">" => BinaryOp::Gt,
            ">=" => BinaryOp::Ge,
            "<" => BinaryOp::Lt,
            _ => BinaryOp::Le,
        };
        let c = super::compare(op, Operand::T(self), Operand::T(o))?;
        let nan = super::compare(BinaryOp::Ne, Operand::T(n), Operand::T(n))?;
        super::logical(BinaryOp::LogicalOr, &c, &nan)
    }
    fn zero_where_equal(&self, a: &Self, b: &Self) -> Result<Self> {
        super::masked_fill(self, &super::eq(a, b)?, Scalar::Float(0.0))
    }
    fn zeros_keeping(&self, _kept: &[&Self]) -> Result<Self> {
        self.zeros()
    }
    fn not_implemented(&self, op: &str) -> Result<Self> {
        Err(Error::runtime(format!(
            "derivative for {op} is not implemented"
        )))
    }
    fn reciprocal_or_zero(&self) -> Result<Self> {
        let r = super::reciprocal(self)?;
        super::masked_fill(&r, &super::eq_scalar(self, 0.0)?, Scalar::Float(0.0))
    }
    fn xlogy(&self, o: &Self) -> Result<Self> {
        binary_fn(BinaryFn::Xlogy, Operand::T(self), Operand::T(o))
    }
    fn zero_where_zero_and_nonpositive(&self, a: &Self, b: &Self) -> Result<Self> {
        let mask = super::logical(
            BinaryOp::LogicalAnd,
            &super::eq_scalar(a, 0.0)?,
            &super::le_scalar(b, 0.0)?,
        )?;
        super::masked_fill(self, &mask, Scalar::Float(0.0))
    }
    fn ties_halved(&self, a: &Self, b: &Self) -> Result<Self> {
        super::where_(
            &super::eq(a, b)?,
            &super::mul_scalar(self, Scalar::Float(0.5))?,
            self,
        )
    }
    fn zero_where_less(&self, a: &Self, b: &Self) -> Result<Self> {
        super::masked_fill(self, &super::lt(a, b)?, Scalar::Float(0.0))
    }
    fn zero_where_zero_unless_positive(&self, a: &Self, b: &Self) -> Result<Self> {
        let mask = super::logical(
            BinaryOp::LogicalAnd,
            &super::eq_scalar(a, 0.0)?,
            &super::logical_not(&super::gt_scalar(b, 0.0)?)?,
        )?;
        super::masked_fill(self, &mask, Scalar::Float(0.0))
    }
}

macro_rules! dtype_rule {
    (float) => {
        (true, "")
    };
    (any $kernels:tt) => {
        (false, "")
    };
    (floats($k:literal)) => {
        (false, $k)
    };
}

/// The nodes torch records with a number for the first or the second operand ("": the
/// number is refused there).
macro_rules! numbers_rule {
    (none) => {
        None::<(&'static str, &'static str)>
    };
    (either($n1:literal, $n2:literal)) => {
        Some(($n1, $n2))
    };
    (second($n2:literal)) => {
        Some(("", $n2))
    };
}

macro_rules! op_layer {
    ($($name:ident $name_:ident $V:ident $node:literal {
        dtypes: $dt:ident $(($($dtargs:tt)*))?,
        numbers: $num:ident $(($($nodes:literal),*))?,
        inplace: $inplace:ident,
        doc: $doc:literal,
        f: |$fa:ident, $fb:ident| $f:expr,
        da: |$ga:ident $(, $da_args:ident)*| $da:expr,
        db: |$gb:ident $(, $db_args:ident)*| $db:expr,
        $(da_when_b_is_a_number: |$gn:ident $(, $dn_args:ident)*| $dn:expr,)?
    })*) => {
        fn row(op: BinaryFn) -> Row {
            match op {
                $(BinaryFn::$V => {
                    let (float_result, kernel) = dtype_rule!($dt $(($($dtargs)*))?);
                    Row {
                        name: stringify!($name),
                        aten: concat!("aten::", stringify!($name)),
                        node: $node,
                        float_result,
                        kernel,
                        number_nodes: numbers_rule!($num $(($($nodes),*))?),
                        da_reads: &[$(stringify!($da_args),)* $($(stringify!($dn_args),)*)?],
                        db_reads: &[$(stringify!($db_args)),*],
                    }
                })*
            }
        }

        /// The row's gradient of operand `i` (0: `a`, 1: `b`) over tensors; `saved`: what
        /// the node saved of `a`, `b` and the output `y`.
        fn recorded(op: BinaryFn, i: usize, g: &Tensor, saved: &Saved) -> Result<Tensor> {
            match (op, i) {
                $($((BinaryFn::$V, 0) if saved.b_is_number => {
                    let $gn = g;
                    $(let $dn_args = saved.get(stringify!($dn_args))?;)*
                    $dn
                })?
                (BinaryFn::$V, 0) => {
                    let $ga = g;
                    $(let $da_args = saved.get(stringify!($da_args))?;)*
                    $da
                }
                (BinaryFn::$V, _) => {
                    let $gb = g;
                    $(let $db_args = saved.get(stringify!($db_args))?;)*
                    $db
                })*
            }
        }

        $(#[doc = concat!("`torch.", stringify!($name), "`: ", $doc)]
        pub fn $name(a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
            binary_fn(BinaryFn::$V, a, b)
        })*

        /// Each op's Python name, id, whether it has an in-place form, whether a number
        /// may stand for an operand, and its docstring, in table order.
        pub const BINARY_OPS: &[(&str, BinaryFn, bool, bool, &str)] = &[$((
            stringify!($name),
            BinaryFn::$V,
            stringify!($inplace).len() != 4, // (not `none`)
            numbers_rule!($num $(($($nodes),*))?).is_some(),
            $doc,
        ),)*];
    };
}
super::table::binary_op_table!(op_layer);

/// Applies a binary table op: type promotion (Python numbers as wrapped numbers),
/// broadcasting, the dtype rule, and the node.
pub fn binary_fn(op: BinaryFn, a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    let r = row(op);
    let number_node = match (a, b) {
        (Operand::T(_), Operand::T(_)) => None,
        (Operand::S(_), Operand::T(_)) => r.number_nodes.map(|n| n.0).filter(|n| !n.is_empty()),
        (Operand::T(_), Operand::S(_)) => r.number_nodes.map(|n| n.1),
        (Operand::S(_), Operand::S(_)) => None,
    };
    if number_node.is_none() && !matches!((a, b), (Operand::T(_), Operand::T(_))) {
        return Err(Error::Internal(format!("{}: a number operand", r.name)));
    }
    if let (Operand::T(x), Operand::T(y)) = (a, b) {
        // torch finds shapes that do not broadcast before the dtype it has no kernel for
        crate::shape::broadcast_shapes(&x.shape(), &y.shape())?;
        if op == BinaryFn::Heaviside && x.dtype() != y.dtype() {
            return Err(Error::runtime(
                "heaviside is not yet implemented for tensors with different dtypes.",
            ));
        }
    }
    let (ta, tb, dtype) = promote(a, b, r.float_result)?;
    if !dtype.is_float() && !r.kernel.is_empty() {
        return Err(Error::not_implemented(format!(
            "\"{}\" not implemented for '{}'",
            r.kernel,
            dtype.scalar_type_name()
        )));
    }
    let forward = || {
        super::elementwise::broadcast_kernel(&ta, &tb, |ra, la, rb, lb| {
            k::binary_fn(op, ra, la, rb, lb)
        })
    };
    // A number is no input of the node (torch records the Scalar overload).
    let inputs: &[&Tensor] = match (a, b) {
        (Operand::S(_), _) => &[&tb],
        (_, Operand::S(_)) => &[&ta],
        _ => &[&ta, &tb],
    };
    if inputs.iter().all(|t| !crate::ops::wants_grad(t)) {
        return apply_nondiff(r.aten, forward);
    }
    // The node saves the operands as they were given (torch's `self` and `other`, before
    // promotion: a bool operand makes the formula fail as torch's does), a number as
    // its 0-d tensor.
    let given = |o: Operand<'_>, promoted: &Tensor| match o {
        Operand::T(t) => t.clone(),
        Operand::S(_) => promoted.clone(),
    };
    let (ga, gb) = (given(a, &ta), given(b, &tb));
    let number_at = match (a, b) {
        (Operand::S(_), _) => Some(0),
        (_, Operand::S(_)) => Some(1),
        _ => None,
    };
    let needs = [0, 1].map(|i| number_at != Some(i) && crate::ops::wants_grad([&ta, &tb][i]));
    apply(r.aten, inputs, forward, |y| {
        let mut s = Saver::default();
        let saved = [
            s.input_if(r.saves("a", needs), &ga),
            s.input_if(r.saves("b", needs), &gb),
            r.saves("y", needs).then(|| s.output(y)),
        ];
        let node = BinaryFnBackward {
            op,
            node: number_node.unwrap_or(r.node),
            number_at,
            shapes: OperandShapes::new(&ta, &tb, y),
            saved,
        };
        (node, s.list)
    })
}

/// `x.op_(other)`: the op computed and written into `x`.
pub fn binary_fn_inplace(op: BinaryFn, x: &Tensor, other: Operand<'_>) -> Result<Tensor> {
    if let Operand::T(o) = other {
        // before the dtype checks, as torch's TensorIterator finds it first
        super::inplace::broadcasts_to(&x.shape(), &o.shape())?;
    }
    let o = match other {
        Operand::T(t) => Some(t),
        Operand::S(_) => None,
    };
    super::inplace::inplace_no_overlap_with(x, &[o], |x| binary_fn(op, Operand::T(x), other))
}

/// What a binary table node saved, unpacked for its derivatives.
struct Saved {
    a: Option<Tensor>,
    b: Option<Tensor>,
    y: Option<Tensor>,
    /// `b` was a Python number (torch records the Scalar overload, whose formula may
    /// differ: the row's `da_when_b_is_a_number`)
    b_is_number: bool,
}

impl Saved {
    /// The saved `a`, `b` or `y` (a derivative reads only what the node saved for it).
    fn get(&self, v: &str) -> Result<&Tensor> {
        let t = match v {
            "a" => &self.a,
            "b" => &self.b,
            _ => &self.y,
        };
        t.as_ref()
            .ok_or_else(|| Error::Internal(format!("binary backward: `{v}` was not saved")))
    }
}

/// The node of every binary table op: its name and derivatives come from the op's row.
#[derive(Clone)]
pub struct BinaryFnBackward {
    op: BinaryFn,
    node: &'static str,
    /// which operand was a Python number (it has no edge)
    number_at: Option<usize>,
    shapes: OperandShapes,
    /// a, b and the output, where saved
    saved: [Option<u8>; 3],
}
impl Backward for BinaryFnBackward {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        let operand = |at: usize| match self.number_at {
            Some(n) if n == at => F::None,
            _ => F::Tensor(self.saved[at]),
        };
        // what the row's derivatives read, in torch's (alphabetical) order
        let r = row(self.op);
        let reads = |v| r.da_reads.contains(&v) || r.db_reads.contains(&v);
        let mut fields = Vec::with_capacity(3);
        if reads("b") {
            fields.push(("other", operand(1)));
        }
        if reads("y") {
            fields.push(("result", F::Tensor(self.saved[2])));
        }
        if reads("a") {
            fields.push(("self", operand(0)));
        }
        fields
    }
    fn name(&self) -> Cow<'static, str> {
        self.node.into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.grads(ctx, g, false)
    }
    // (only for an op without a derivative: the others' forward derivative is the
    // elementwise rule, `ops::jvp`)
    fn jvp(&self, _ctx: &BackwardCtx<'_>, _t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        self.underived().then(|| {
            Err(Error::not_implemented(format!(
                "Trying to use forward AD with {} that does not support it.",
                row(self.op).aten
            )))
        })
    }
    // (the formulas broadcast each sample's gradient against the saved tensors)
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.grads(ctx, g, true))
    }
}

impl BinaryFnBackward {
    /// Whether torch gives the op no derivative (its node is `NotImplemented`).
    pub(crate) fn underived(&self) -> bool {
        self.node == "NotImplemented"
    }

    fn grads(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>], batched: bool) -> Result<Grads> {
        let g = grad0(g)?;
        let [a, b, y] = self.saved.map(|i| i.map(|i| get(ctx, Some(i))).transpose());
        let saved = Saved {
            a: a?,
            b: b?,
            y: y?,
            b_is_number: self.number_at == Some(1),
        };
        let mut out = Grads::new();
        for i in 0..2 {
            if self.number_at == Some(i) {
                continue; // (no edge)
            }
            let edge = if self.number_at.is_some() { 0 } else { i };
            out.push(if ctx.needs_input_grad(edge) {
                let d = recorded(self.op, i, &g, &saved)?;
                Some(if batched {
                    self.shapes.sum_to_batched(&d, i)?
                } else {
                    self.shapes.sum_to(&d, i)?
                })
            } else {
                None
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{assert_values, gradcheck, gradgradcheck, leaf, tensor, tensor_i64};

    #[test]
    fn values_and_dtypes_follow_the_rows() {
        let a = tensor(vec![1.0, -1.0, 0.0], &[3]);
        let b = tensor(vec![1.0, 1.0, 0.5], &[3]);
        let y = atan2(Operand::T(&a), Operand::T(&b)).unwrap();
        let q = std::f64::consts::FRAC_PI_4;
        assert_values(&y, &[q, -q, 0.0], 1e-15, 0.0);
        let i = tensor_i64(vec![0, 1, 2], &[3]);
        assert_eq!(
            atan2(Operand::T(&i), Operand::T(&i)).unwrap().dtype(),
            DType::F32
        );
        let e = hypot(Operand::T(&i), Operand::T(&i)).unwrap_err();
        assert_eq!(e.to_string(), "\"hypot_cpu\" not implemented for 'Long'");
        let z = xlogy(Operand::S(Scalar::Float(0.0)), Operand::T(&b)).unwrap();
        assert_values(&z, &[0.0, 0.0, 0.0], 0.0, 0.0);
        let l = logaddexp(Operand::T(&a), Operand::T(&b)).unwrap();
        assert_values(
            &l,
            &[
                1.0 + 2f64.ln(),
                1.0 + (-2f64).exp().ln_1p(),
                0.5 + (-0.5f64).exp().ln_1p(),
            ],
            1e-15,
            1e-15,
        );
    }

    #[test]
    fn first_and_second_derivatives_match_finite_differences() {
        let a = leaf(vec![0.5, -1.2, 2.0, 0.7, 1.5, -0.3], &[2, 3]);
        let b = leaf(vec![1.1, 0.4, -0.8], &[3]);
        for &(name, op, ..) in BINARY_OPS {
            if op == BinaryFn::Heaviside {
                // torch gives it no derivative: its node raises torch's error
                let y = heaviside(Operand::T(&a), Operand::T(&b)).unwrap();
                assert_eq!(y.grad_fn().unwrap().name(), "NotImplemented");
                let f = |x: &[Tensor]| heaviside(Operand::T(&x[0]), Operand::T(&x[1]));
                let e = gradcheck(f, &[a.clone(), b.clone()]).unwrap_err();
                assert!(
                    e.to_string()
                        .contains("derivative for aten::heaviside is not implemented"),
                    "{e}"
                );
                continue;
            }
            let f = |x: &[Tensor]| {
                let b = if op == BinaryFn::Xlogy {
                    super::super::abs(&x[1])?
                } else {
                    x[1].clone()
                };
                binary_fn(op, Operand::T(&x[0]), Operand::T(&b))
            };
            gradcheck(f, &[a.clone(), b.clone()]).unwrap_or_else(|e| panic!("{name}: {e}"));
            gradgradcheck(f, &[a.clone(), b.clone()]).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        // a number operand has no edge and no gradient
        let y = xlogy(Operand::T(&a), Operand::S(Scalar::Float(2.0))).unwrap();
        assert_eq!(y.grad_fn().unwrap().name(), "XlogyBackward2");
        let f = |x: &[Tensor]| {
            xlogy(
                Operand::S(Scalar::Float(1.5)),
                Operand::T(&super::super::abs(&x[0])?),
            )
        };
        gradcheck(f, std::slice::from_ref(&b)).unwrap();
    }
}
