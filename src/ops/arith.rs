//! The arithmetic table's nodes (`table::arith_op_table!`): for `add`, `sub`, `mul`...,
//! what the node saves, its name and each operand's derivative, from the op's row, for
//! every path its forward takes (the fast paths, the general one, a Python number
//! operand). The forwards themselves, with their checks and fast paths, are in
//! `elementwise.rs` and `division.rs`; they build their nodes here.

use super::elementwise::{Saver, binary_kernel, div, div_scalar, grad0, mul, mul_scalar};
use super::unary::neg;
use super::{Fresh, OperandShapes, apply, new_tensor};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::autograd::grad_mode::with_grad_mode;
use crate::autograd::graph::SavedTensor;
use crate::backend::{self as k, BinaryOp};
use crate::dtype::Scalar;
use crate::tensor::Tensor;
use crate::{Error, Result};
use smallvec::SmallVec;
use std::borrow::Cow;

/// The facts of one row the op layer needs.
struct Row {
    node: &'static str,
    aten: &'static str,
    kernel: BinaryOp,
    /// what each operand's derivative reads of `a`, `b`, the output `y` and `alpha`
    /// (a mask of [`A`], [`B`], [`Y`], [`ALPHA`])
    reads: [u8; 2],
}

impl Row {
    /// Whether the node saves `v` (`a`, `b` or `y`): when a derivative that reads it is
    /// needed (torch's generated nodes save a value read by one formula only when that
    /// formula's input needs a gradient).
    fn saves(&self, v: u8, needs: [bool; 2]) -> bool {
        (needs[0] && self.reads[0] & v != 0) || (needs[1] && self.reads[1] & v != 0)
    }
}

/// What the formulas may read, as bits of [`Row::reads`] (named in the rows `a`, `b`,
/// `y`, `alpha`).
const A: u8 = 1;
const B: u8 = 2;
const Y: u8 = 4;
const ALPHA: u8 = 8;
/// The operands' bits, by position.
const OPERANDS: [u8; 2] = [A, B];

macro_rules! bit {
    (a) => {
        A
    };
    (b) => {
        B
    };
    (y) => {
        Y
    };
    (alpha) => {
        ALPHA
    };
}

macro_rules! arith_layer {
    ($($name:ident $V:ident $node:literal {
        kernel: $kernel:ident,
        aten: $aten:literal,
        inplace: $inplace:ident,
        da: |$ga:ident $(, $da_args:ident)*| $da:expr,
        db: |$gb:ident $(, $db_args:ident)*| $db:expr,
    })*) => {
        /// The arithmetic table's ops, one per row.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum ArithOp {
            $($V,)*
        }

        impl ArithOp {
            /// Every op, in table order.
            pub const ALL: &[ArithOp] = &[$(ArithOp::$V,)*];

            /// The op's Python name (`add`).
            pub fn name(self) -> &'static str {
                match self {
                    $(ArithOp::$V => stringify!($name),)*
                }
            }

            /// Its in-place method, where it has one.
            pub fn inplace_name(self) -> Option<&'static str> {
                match self {
                    $(ArithOp::$V => inplace_name!($inplace),)*
                }
            }

            #[inline]
            fn row(self) -> Row {
                match self {
                    $(ArithOp::$V => Row {
                        node: $node,
                        aten: $aten,
                        kernel: BinaryOp::$kernel,
                        reads: [0 $(| bit!($da_args))*, 0 $(| bit!($db_args))*],
                    },)*
                }
            }
        }

        /// The row's gradient of operand `i` (0: `a`, 1: `b`); `v`: what the formulas read.
        fn derivative(op: ArithOp, i: usize, g: &Term<'_>, v: &Values<'_>) -> Result<Term<'static>> {
            match (op, i) {
                $((ArithOp::$V, 0) => {
                    let $ga = g;
                    $(let $da_args = &v.get(bit!($da_args))?;)*
                    $da
                }
                (ArithOp::$V, _) => {
                    let $gb = g;
                    $(let $db_args = &v.get(bit!($db_args))?;)*
                    $db
                })*
            }
        }
    };
}

macro_rules! inplace_name {
    (none) => {
        None
    };
    ($name_:ident) => {
        Some(stringify!($name_))
    };
}

super::table::arith_op_table!(arith_layer);

impl ArithOp {
    /// The backend kernel the op runs.
    pub fn kernel(self) -> BinaryOp {
        self.row().kernel
    }
    /// torch's name of the op (`aten::add`).
    pub fn aten(self) -> &'static str {
        self.row().aten
    }
}

/// A value the derivatives compute with: a tensor, a tensor the node saved (unpacked
/// where it is used: a product with it reads its data in place when nothing is
/// recorded), or a number (a Python number operand the node keeps, or `alpha`).
#[derive(Clone)]
pub enum Term<'c> {
    T(Tensor),
    Saved(&'c BackwardCtx<'c>, u8),
    N(Scalar),
}

impl Term<'_> {
    /// The tensor this term is (a number is not one: the formulas never ask for it).
    pub fn tensor(&self) -> Result<Tensor> {
        match self {
            Term::T(t) => Ok(t.clone()),
            Term::Saved(ctx, i) => ctx.saved(usize::from(*i)),
            Term::N(_) => Err(Error::Internal(
                "arithmetic backward: a number where a tensor is needed".into(),
            )),
        }
    }
    /// The tensor this term is, without a new reference where it holds one.
    fn into_tensor(self) -> Result<Tensor> {
        match self {
            Term::T(t) => Ok(t),
            t => t.tensor(),
        }
    }
    /// The number this term is.
    fn number(&self) -> Result<f64> {
        match self {
            Term::N(s) => Ok(s.as_f64()),
            _ => Err(Error::Internal(
                "arithmetic backward: a tensor where a number is needed".into(),
            )),
        }
    }
    /// This value, unchanged (a gradient passed on as it is).
    pub fn unchanged(&self) -> Result<Term<'static>> {
        Ok(Term::T(self.tensor()?))
    }
    pub fn neg(&self) -> Result<Term<'static>> {
        match self {
            Term::N(_) => Ok(Term::N(Scalar::Float(-self.number()?))),
            t => Ok(Term::T(neg(&t.tensor()?)?)),
        }
    }
    /// `self * alpha` for a number `alpha`, skipped where it is 1.
    pub fn scale(&self, alpha: &Term<'_>) -> Result<Term<'static>> {
        let alpha = alpha.number()?;
        let t = self.tensor()?;
        Ok(Term::T(if alpha == 1.0 {
            t
        } else {
            mul_scalar(&t, Scalar::Float(alpha))?
        }))
    }
    pub fn mul(&self, o: &Term<'_>) -> Result<Term<'static>> {
        Ok(Term::T(match (self, o) {
            (Term::T(x), Term::Saved(ctx, i)) => mul_saved(ctx, x, *i)?,
            (x, Term::N(s)) => mul_scalar(&x.tensor()?, *s)?,
            (x, y) => mul(&x.tensor()?, &y.tensor()?)?,
        }))
    }
    /// `floor(self / o)`, as a constant (no history, whatever grad mode is).
    pub fn floor_divide_constant(&self, o: &Term<'_>) -> Result<Term<'static>> {
        self.quotient(BinaryOp::FloorDiv, o)
    }
    /// `trunc(self / o)`, as a constant.
    pub fn trunc_divide_constant(&self, o: &Term<'_>) -> Result<Term<'static>> {
        self.quotient(BinaryOp::TruncDiv, o)
    }
    fn quotient(&self, rounded: BinaryOp, o: &Term<'_>) -> Result<Term<'static>> {
        let (a, b) = (self.tensor()?.detach(), o.tensor()?.detach());
        let q = with_grad_mode(false, || binary_kernel(rounded, &a, &b))?;
        Ok(Term::T(q))
    }
    pub fn div(&self, o: &Term<'_>) -> Result<Term<'static>> {
        Ok(Term::T(match (self, o) {
            (x, Term::N(s)) => div_scalar(&x.tensor()?, *s)?,
            (x, y) => div(&x.tensor()?, &y.tensor()?)?,
        }))
    }
}

/// `g * saved[i]`, as `mul` computes it; when nothing is recorded and both are
/// contiguous float tensors of one dtype and shape, straight from the kernel with the
/// saved data read under one lock (what `mul` would do, bit for bit).
fn mul_saved(ctx: &BackwardCtx<'_>, g: &Tensor, i: u8) -> Result<Tensor> {
    if crate::ops::unrecorded() {
        let s = ctx.saved_data(usize::from(i))?;
        let sg = g.snapshot();
        if sg.dtype == s.dtype
            && sg.dtype.is_float()
            && sg.layout.shape == s.layout.shape
            && sg.layout.is_contiguous()
            && s.layout.is_contiguous()
        {
            let (rg, rs) = (sg.storage.read(), s.storage.read());
            let buf = k::binary(BinaryOp::Mul, &rg, &sg.layout, &rs, &s.layout);
            return Ok(new_tensor(buf, &sg.layout.shape));
        }
    }
    mul(g, &ctx.saved(usize::from(i))?)
}

/// What a node's formulas may read, by name.
struct Values<'c> {
    ctx: &'c BackwardCtx<'c>,
    node: &'c ArithBackward,
}

impl<'c> Values<'c> {
    fn get(&self, v: u8) -> Result<Term<'c>> {
        let n = self.node;
        let at = match v {
            ALPHA => return Ok(Term::N(Scalar::Float(n.alpha))),
            A => 0,
            B => 1,
            _ => 2,
        };
        if at < 2
            && usize::from(n.number_at) == at
            && let Some(s) = n.number
        {
            return Ok(Term::N(s));
        }
        n.saved[at]
            .map(|i| Term::Saved(self.ctx, i))
            .ok_or_else(|| {
                Error::Internal(format!("arithmetic backward: operand {at} was not saved"))
            })
    }
}

/// No operand is a number the node keeps.
const NO_NUMBER: u8 = 2;

/// The node of every arithmetic table op: its name and derivatives come from the op's
/// row.
#[derive(Clone)]
pub struct ArithBackward {
    op: ArithOp,
    /// which operand is a Python number kept in `number` (`NO_NUMBER`: none; a number
    /// the general path turned into a 0-d tensor is an operand like any other)
    number_at: u8,
    /// whether that number has an edge (`None`): torch's wrapped number (`x * 2`) has
    /// one, a Scalar overload's number (`2 - x`, rsub) none
    number_edge: bool,
    /// a, b and the output, where saved
    saved: [Option<u8>; 3],
    number: Option<Scalar>,
    alpha: f64,
    shapes: OperandShapes,
}

impl ArithBackward {
    /// The node of `op` over two tensor operands (a number among them already a 0-d
    /// tensor), `alpha` the multiplier of add and sub.
    fn new(op: ArithOp, shapes: OperandShapes, saved: [Option<u8>; 3], alpha: f64) -> Self {
        ArithBackward {
            op,
            number_at: NO_NUMBER,
            number_edge: true,
            saved,
            number: None,
            alpha,
            shapes,
        }
    }

    /// The node of `op` whose operand `at` is the Python number `s`, kept in the node
    /// (with an edge, `None`, when `edge`); the other operand has the output's shape.
    pub(crate) fn with_number(op: ArithOp, s: Scalar, at: usize, edge: bool) -> Self {
        ArithBackward {
            number_at: at as u8,
            number_edge: edge,
            number: Some(s),
            ..Self::new(op, OperandShapes::SAME, [None; 3], 1.0)
        }
    }

    /// The node of `op` over two tensors of the output's shape, each given with the
    /// version it was read at and whether it requires grad, and what it saves.
    pub(crate) fn same_shape(
        op: ArithOp,
        operands: [(&Tensor, u64, bool); 2],
        y: &Fresh,
    ) -> (Self, SmallVec<[SavedTensor; 2]>) {
        let r = op.row();
        let needs = operands.map(|o| o.2);
        let mut s = Saver::default();
        let saved = [
            s.input_read(r.saves(A, needs), operands[0].0, operands[0].1),
            s.input_read(r.saves(B, needs), operands[1].0, operands[1].1),
            r.saves(Y, needs).then(|| s.output_fresh(y)),
        ];
        (Self::new(op, OperandShapes::SAME, saved, 1.0), s.list)
    }
}

/// Runs `forward` as `op` over tensors `a` and `b` (promoted, a number among them a 0-d
/// tensor), recording the row's node: `alpha` is add's and sub's multiplier.
pub(crate) fn record(
    op: ArithOp,
    a: &Tensor,
    b: &Tensor,
    alpha: f64,
    forward: impl FnOnce() -> Result<Tensor>,
) -> Result<Tensor> {
    apply(op.aten(), &[a, b], forward, |y| {
        let r = op.row();
        let needs = [crate::ops::wants_grad(a), crate::ops::wants_grad(b)];
        let mut s = Saver::default();
        let saved = [
            s.input_if(r.saves(A, needs), a),
            s.input_if(r.saves(B, needs), b),
            r.saves(Y, needs).then(|| s.output(y)),
        ];
        let shapes = OperandShapes::new(a, b, y);
        (ArithBackward::new(op, shapes, saved, alpha), s.list)
    })
}

/// Runs `forward` as `op` over the tensor `x` and the Python number `s` at position
/// `number_at`, which has no edge (torch's Scalar overloads: `2 - x`).
pub(crate) fn record_with_number(
    op: ArithOp,
    x: &Tensor,
    s: Scalar,
    number_at: usize,
    forward: impl FnOnce() -> Result<Tensor>,
) -> Result<Tensor> {
    apply(op.aten(), &[x], forward, |_| {
        let node = ArithBackward::with_number(op, s, number_at, false);
        (node, SmallVec::new())
    })
}

impl Backward for ArithBackward {
    fn name(&self) -> Cow<'static, str> {
        self.op.row().node.into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let number_at = usize::from(self.number_at);
        let number = self.number.is_some() && number_at < 2;
        if number && self.op.row().reads[1 - number_at] & OPERANDS[number_at] != 0 {
            ctx.check_saved_number()?; // torch saves the number as a tensor
        }
        let g = Term::T(grad0(g)?);
        let values = Values { ctx, node: self };
        let mut out = Grads::new();
        for i in 0..2 {
            let is_number = number && number_at == i;
            if is_number && !self.number_edge {
                continue; // (no edge)
            }
            let edge = if number && !self.number_edge { 0 } else { i };
            out.push(if !is_number && ctx.needs_input_grad(edge) {
                let d = derivative(self.op, i, &g, &values)?.into_tensor()?;
                Some(self.shapes.sum_to(&d, i)?)
            } else {
                None
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{add_op, div_op, fmod_op, mul_op, remainder_op, rsub_scalar, sub_op};
    use super::*;
    use crate::ops::Operand;
    use crate::testing::{gradcheck, gradgradcheck, leaf};

    /// Each row's op over tensors (`b` broadcast) and with a number for `b`, through the
    /// general path and the fast paths alike.
    fn call(op: ArithOp, a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
        let alpha = Scalar::Float(1.5);
        match op {
            ArithOp::Add => add_op(a, b, alpha),
            ArithOp::Sub => sub_op(a, b, alpha),
            ArithOp::Rsub => match (a, b) {
                (Operand::T(x), Operand::S(s)) => rsub_scalar(x, s),
                _ => sub_op(b, a, Scalar::Int(1)),
            },
            ArithOp::Mul => mul_op(a, b),
            ArithOp::Div => div_op(a, b),
            ArithOp::Remainder => remainder_op(a, b),
            ArithOp::Fmod => fmod_op(a, b),
        }
    }

    #[test]
    fn first_and_second_derivatives_match_finite_differences() {
        let a = leaf(vec![0.5, -1.2, 2.3, 0.7, 1.6, -0.3], &[2, 3]);
        let b = leaf(vec![1.1, 0.45, -0.8], &[3]);
        let same = leaf(vec![1.3, -0.45, 0.9, 2.2, -1.7, 0.35], &[2, 3]);
        for &op in ArithOp::ALL {
            let name = op.name();
            for other in [&b, &same] {
                let f = |x: &[Tensor]| call(op, Operand::T(&x[0]), Operand::T(&x[1]));
                let xs = [a.clone(), other.clone()];
                gradcheck(f, &xs).unwrap_or_else(|e| panic!("{name}: {e}"));
                gradgradcheck(f, &xs).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            let f = |x: &[Tensor]| call(op, Operand::T(&x[0]), Operand::S(Scalar::Float(0.75)));
            gradcheck(f, std::slice::from_ref(&a)).unwrap_or_else(|e| panic!("{name}: {e}"));
            gradgradcheck(f, std::slice::from_ref(&a)).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn a_number_kept_in_the_node_has_an_edge_only_where_torch_gives_it_one() {
        let x = leaf(vec![1.0, 2.0], &[2]);
        let y = mul_op(Operand::S(Scalar::Float(2.0)), Operand::T(&x)).unwrap();
        let node = y.grad_fn().unwrap();
        assert_eq!(node.name(), "MulBackward0");
        assert_eq!(node.lock().next.len(), 2);
        let y = rsub_scalar(&x, Scalar::Float(2.0)).unwrap();
        let node = y.grad_fn().unwrap();
        assert_eq!(node.name(), "RsubBackward1");
        assert_eq!(node.lock().next.len(), 1);
    }
}
