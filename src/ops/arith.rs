//! The arithmetic table's nodes (`table::arith_op_table!`): for `add`, `sub`, `mul`,
//! `pow`..., what the node saves, its name and each operand's derivative, from the op's
//! row, for every path its forward takes (the fast paths, the general one, a Python
//! number operand). The forwards themselves, with their checks and fast paths, are in
//! `elementwise.rs`, `division.rs` and `pow.rs`; they build their nodes here.

use super::creation::zeros_like;
use super::elementwise::{
    Saver, binary_kernel, div, div_scalar, eq_scalar, ge_scalar, grad0, le_scalar, logical_and,
    mul, mul_scalar, pow, pow_scalar, sub_scalar, where_,
};
use super::unary::{abs, log, neg};
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
use std::cell::OnceCell;

/// The facts of one row the op layer needs.
struct Row {
    node: &'static str,
    aten: &'static str,
    kernel: BinaryOp,
    /// what a Python number operand records, first or second
    numbers: [Number; 2],
    /// torch gives the op no derivative (`da: not_implemented`)
    underived: bool,
    /// the node saves what its tensor operands' formulas read, needed or not (`saves:
    /// always`)
    saves_always: bool,
    /// what each operand's derivative reads of `a`, `b`, the output `y` and `alpha`
    /// (a mask of [`A`], [`B`], [`Y`], [`ALPHA`])
    reads: [u8; 2],
    /// what `b`'s reads when `a` is a Python number (`db_when_a_is_a_number`)
    reads_b_when_a_is_a_number: u8,
}

/// What a Python number operand records (a row's `numbers`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Number {
    /// torch's wrapped number: the row's node, the number an edge `(None, 0)`
    Wrapped,
    /// torch's Scalar overload: this node, the number no edge
    Scalar(&'static str),
    /// a Scalar overload without a derivative: `NotImplemented`, whose backward raises
    NotImplemented,
    /// no such form
    None,
}

macro_rules! number {
    (wrapped) => {
        Number::Wrapped
    };
    (not_implemented) => {
        Number::NotImplemented
    };
    (none) => {
        Number::None
    };
    ($node:literal) => {
        Number::Scalar($node)
    };
}

impl Row {
    /// Whether the node saves `v` (`a`, `b` or `y`): when a derivative that reads it is
    /// needed (torch's generated nodes save a value read by one formula only when that
    /// formula's input needs a gradient), or, `saves: always`, when the operand of one
    /// that reads it is a tensor (`operands`: which are).
    fn saves(&self, v: u8, needs: [bool; 2], operands: [bool; 2]) -> bool {
        let needs = if self.saves_always { operands } else { needs };
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
        numbers: ($n0:tt, $n1:tt),
        $(saves: $saves:ident,)?
        da: $($da_none:ident)? $(|$ga:ident $(, $da_args:ident)*| $da:expr)?,
        db: $($db_none:ident)? $(|$gb:ident $(, $db_args:ident)*| $db:expr)?,
        $(db_when_a_is_a_number: |$gn:ident $(, $dn_args:ident)*| $dn:expr,)?
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
                        numbers: [number!($n0), number!($n1)],
                        saves_always: false $(|| saves_always!($saves))?,
                        underived: false $(|| underived!($da_none))?,
                        reads: [0 $($(| bit!($da_args))*)?, 0 $($(| bit!($db_args))*)?],
                        reads_b_when_a_is_a_number: or_else!(
                            0 $($(| bit!($db_args))*)? $(, 0 $(| bit!($dn_args))*)?
                        ),
                    },)*
                }
            }
        }

        /// The row's gradient of operand `i` (0: `a`, 1: `b`); `v`: what the formulas read.
        fn derivative(op: ArithOp, i: usize, g: &Term<'_>, v: &Values<'_>) -> Result<Term<'static>> {
            match (op, i) {
                $($((ArithOp::$V, 1) if v.a_is_a_number() => {
                    let $gn = g;
                    $(let $dn_args = &v.get(bit!($dn_args))?;)*
                    $dn
                })?
                (ArithOp::$V, 0) => {
                    $(underived!($da_none);
                    return Err(not_implemented(op));)?
                    $(let $ga = g;
                    $(let $da_args = &v.get(bit!($da_args))?;)*
                    $da)?
                }
                (ArithOp::$V, _) => {
                    $(underived!($db_none);
                    return Err(not_implemented(op));)?
                    $(let $gb = g;
                    $(let $db_args = &v.get(bit!($db_args))?;)*
                    $db)?
                })*
            }
        }
    };
}

/// The second expression where there is one, else the first.
macro_rules! or_else {
    ($default:expr) => {
        $default
    };
    ($default:expr, $instead:expr) => {
        $instead
    };
}

/// `true` for a row's `saves: always` (any other word is a typo).
macro_rules! saves_always {
    (always) => {
        true
    };
}

/// `true` for a row's `da: not_implemented` (any other word is a typo).
macro_rules! underived {
    (not_implemented) => {
        true
    };
}

/// torch's error for an op it does not differentiate.
fn not_implemented(op: ArithOp) -> Error {
    Error::runtime(format!("derivative for {} is not implemented", op.aten()))
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
/// where it is first used, once for all the node's formulas: a product with it reads
/// its data in place when nothing is recorded), or a number (a Python number operand
/// the node keeps, or `alpha`).
#[derive(Clone)]
pub enum Term<'c> {
    T(Tensor),
    Saved(&'c BackwardCtx<'c>, u8, &'c OnceCell<Tensor>),
    N(Scalar),
}

impl Term<'_> {
    /// The tensor this term is (a number is not one: the formulas never ask for it).
    pub fn tensor(&self) -> Result<&Tensor> {
        match self {
            Term::T(t) => Ok(t),
            Term::Saved(ctx, i, unpacked) => match unpacked.get() {
                Some(t) => Ok(t),
                None => {
                    let t = ctx.saved(usize::from(*i))?;
                    Ok(unpacked.get_or_init(|| t))
                }
            },
            Term::N(_) => Err(Error::Internal(
                "arithmetic backward: a number where a tensor is needed".into(),
            )),
        }
    }
    /// The tensor this term is, without a new reference where it holds one.
    fn into_tensor(self) -> Result<Tensor> {
        match self {
            Term::T(t) => Ok(t),
            t => t.tensor().cloned(),
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
        Ok(Term::T(self.tensor()?.clone()))
    }
    pub fn neg(&self) -> Result<Term<'static>> {
        match self {
            Term::N(_) => Ok(Term::N(Scalar::Float(-self.number()?))),
            t => Ok(Term::T(neg(t.tensor()?)?)),
        }
    }
    /// `self * alpha` for a number `alpha`, skipped where it is 1.
    pub fn scale(&self, alpha: &Term<'_>) -> Result<Term<'static>> {
        let alpha = alpha.number()?;
        let t = self.tensor()?;
        Ok(Term::T(if alpha == 1.0 {
            t.clone()
        } else {
            mul_scalar(t, Scalar::Float(alpha))?
        }))
    }
    pub fn mul(&self, o: &Term<'_>) -> Result<Term<'static>> {
        Ok(Term::T(match (self, o) {
            (Term::T(x), s @ Term::Saved(ctx, i, _)) => mul_saved(ctx, x, *i, s)?,
            (x, Term::N(s)) | (Term::N(s), x) => mul_scalar(x.tensor()?, *s)?,
            (x, y) => mul(x.tensor()?, y.tensor()?)?,
        }))
    }
    /// `self - c`.
    pub fn sub_s(&self, c: f64) -> Result<Term<'static>> {
        Ok(match self {
            Term::N(_) => Term::N(Scalar::Float(self.number()? - c)),
            t => Term::T(sub_scalar(t.tensor()?, Scalar::Float(c))?),
        })
    }
    /// `self ** o` (a tensor to a tensor or a number power).
    pub fn pow(&self, o: &Term<'_>) -> Result<Term<'static>> {
        Ok(Term::T(match o {
            Term::N(s) => pow_scalar(self.tensor()?, *s)?,
            e => pow(self.tensor()?, e.tensor()?)?,
        }))
    }
    /// The natural logarithm (of a number: a number).
    pub fn log(&self) -> Result<Term<'static>> {
        Ok(match self {
            Term::N(_) => Term::N(Scalar::Float(self.number()?.ln())),
            t => Term::T(log(t.tensor()?)?),
        })
    }
    /// Whether this is a number torch's `Scalar::equal(0)` finds 0: not a bool.
    fn is_zero_number(&self) -> bool {
        matches!(self, Term::N(s @ (Scalar::Int(_) | Scalar::Float(_))) if s.as_f64() == 0.0)
    }
    /// `where(b == 0, 0, f(self))`; for a number `b`, zeros (where it is 0: see
    /// [`Term::is_zero_number`]) or `f(self)`, `f` not run for zeros.
    pub fn zero_where_zero(
        &self,
        b: &Term<'_>,
        f: impl FnOnce(&Self) -> Result<Term<'static>>,
    ) -> Result<Term<'static>> {
        if let Term::N(_) = b {
            return if b.is_zero_number() {
                Ok(Term::T(zeros_like(self.tensor()?)?))
            } else {
                f(self)
            };
        }
        let v = f(self)?.into_tensor()?;
        let z = zeros_like(&v)?;
        Ok(Term::T(where_(&eq_scalar(b.tensor()?, 0.0)?, &z, &v)?))
    }
    /// `self`, with 0 where `a == 0` and `b >= 0` (torch's pow_backward_exponent).
    pub fn zero_where_zero_and_nonnegative(
        &self,
        a: &Term<'_>,
        b: &Term<'_>,
    ) -> Result<Term<'static>> {
        let v = self.tensor()?;
        let mask = logical_and(&eq_scalar(a.tensor()?, 0.0)?, &ge_scalar(b.tensor()?, 0.0)?)?;
        Ok(Term::T(where_(&mask, &zeros_like(v)?, v)?))
    }
    /// `self`, with 0 where the power `y` is finite if the number `a`, its base, is 0
    /// (see [`Term::is_zero_number`]): there the exponent was >= 0 (0 or 1, where a
    /// negative exponent gives ±inf and a NaN one NaN). Another `a` masks nothing.
    pub fn zero_where_zero_base(&self, a: &Term<'_>, y: &Term<'_>) -> Result<Term<'static>> {
        let v = self.tensor()?;
        if !a.is_zero_number() {
            return Ok(Term::T(v.clone()));
        }
        // |y| <= 1: 0, -0 and 1 are, ±inf and NaN are not (a comparison: not recorded)
        let finite = le_scalar(&abs(&y.tensor()?.detach())?, 1.0)?;
        Ok(Term::T(where_(&finite, &zeros_like(v)?, v)?))
    }
    /// A zero gradient (a piecewise-constant op's), of this gradient's shape and dtype.
    /// `named`: what torch's formula names, though the result does not depend on it;
    /// naming it makes the node save it, and it is unpacked as torch's formula unpacks
    /// it (a second backward through a freed graph raises).
    pub fn zeros_naming(&self, named: &Term<'_>) -> Result<Term<'static>> {
        named.tensor()?;
        Ok(Term::T(zeros_like(self.tensor()?)?))
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
            (x, Term::N(s)) => div_scalar(x.tensor()?, *s)?,
            (x, y) => div(x.tensor()?, y.tensor()?)?,
        }))
    }
}

/// `g * saved[i]`, as `mul` computes it; when nothing is recorded and both are
/// contiguous float tensors of one dtype and shape, straight from the kernel with the
/// saved data read under one lock (what `mul` would do, bit for bit).
fn mul_saved(ctx: &BackwardCtx<'_>, g: &Tensor, i: u8, saved: &Term<'_>) -> Result<Tensor> {
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
            let buf = k::binary(BinaryOp::Mul, &rg, &sg.layout, &rs, &s.layout)?;
            return Ok(new_tensor(buf, &sg.layout.shape));
        }
    }
    mul(g, saved.tensor()?)
}

/// What a node's formulas may read, by name.
struct Values<'c> {
    ctx: &'c BackwardCtx<'c>,
    node: &'c ArithBackward,
    /// a, b and the output, once unpacked
    unpacked: [OnceCell<Tensor>; 3],
}

impl<'c> Values<'c> {
    /// `a` is a Python number the node keeps (a row's `db_when_a_is_a_number`).
    fn a_is_a_number(&self) -> bool {
        self.node.number_at == 0 && self.node.number.is_some()
    }
    fn get(&'c self, v: u8) -> Result<Term<'c>> {
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
            .map(|i| Term::Saved(self.ctx, i, &self.unpacked[at]))
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
    /// one, a Scalar overload's number (`2 - x`, rsub; `2 ** x`) none: the row's
    /// `numbers` then name the node
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
        debug_assert!(!edge || op.row().numbers[at] == Number::Wrapped);
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
            s.input_read(r.saves(A, needs, [true; 2]), operands[0].0, operands[0].1),
            s.input_read(r.saves(B, needs, [true; 2]), operands[1].0, operands[1].1),
            r.saves(Y, needs, [true; 2]).then(|| s.output_fresh(y)),
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
            s.input_if(r.saves(A, needs, [true; 2]), a),
            s.input_if(r.saves(B, needs, [true; 2]), b),
            r.saves(Y, needs, [true; 2]).then(|| s.output(y)),
        ];
        let shapes = if r.underived {
            OperandShapes::SAME // (its backward raises: no gradient to bring back)
        } else {
            OperandShapes::new(a, b, y)
        };
        (ArithBackward::new(op, shapes, saved, alpha), s.list)
    })
}

/// Runs `forward` as `op` over the tensor `x` and the Python number `s` at position
/// `number_at`, which has no edge (torch's Scalar overloads, named by the row's
/// `numbers`: `2 - x`, `2 ** x`); the node saves what the tensor's derivative reads.
pub(crate) fn record_with_number(
    op: ArithOp,
    x: &Tensor,
    s: Scalar,
    number_at: usize,
    forward: impl FnOnce() -> Result<Tensor>,
) -> Result<Tensor> {
    record_with_number_alpha(op, x, s, number_at, 1.0, forward)
}

/// [`record_with_number`] with add's, sub's and rsub's multiplier `alpha`
/// (`torch.rsub(x, 2, alpha=3)`).
pub(crate) fn record_with_number_alpha(
    op: ArithOp,
    x: &Tensor,
    s: Scalar,
    number_at: usize,
    alpha: f64,
    forward: impl FnOnce() -> Result<Tensor>,
) -> Result<Tensor> {
    apply(op.aten(), &[x], forward, |y| {
        let mut r = op.row();
        if number_at == 0 {
            r.reads[1] = r.reads_b_when_a_is_a_number;
        }
        debug_assert!(matches!(
            r.numbers[number_at],
            Number::Scalar(_) | Number::NotImplemented
        ));
        let mut node = ArithBackward::with_number(op, s, number_at, false);
        node.alpha = alpha;
        // (a node without a derivative reads nothing)
        let mut needs = [!node.underived(); 2];
        needs[number_at] = false;
        let mut saver = Saver::default();
        node.saved = [
            saver.input_if(number_at != 0 && r.saves(A, needs, needs), x),
            saver.input_if(number_at != 1 && r.saves(B, needs, needs), x),
            r.saves(Y, needs, needs).then(|| saver.output(y)),
        ];
        (node, saver.list)
    })
}

impl ArithBackward {
    /// torch's Scalar overload without a derivative (`2 % x`), or an op without one.
    fn underived(&self) -> bool {
        let r = self.op.row();
        let at = usize::from(self.number_at);
        r.underived || (at < 2 && !self.number_edge && r.numbers[at] == Number::NotImplemented)
    }
}

impl Backward for ArithBackward {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        let number = |at: u8| (self.number_at == at).then_some(self.number).flatten();
        let operand = |at: u8| match number(at) {
            Some(n) => F::Number(n),
            None => F::Tensor(self.saved[at as usize]),
        };
        let alpha = if self.alpha.fract() == 0.0 && self.alpha.abs() < 9.0e15 {
            crate::dtype::Scalar::Int(self.alpha as i64)
        } else {
            crate::dtype::Scalar::Float(self.alpha)
        };
        match &*self.name() {
            "AddBackward0" | "SubBackward0" | "RsubBackward0" | "RsubBackward1" => {
                vec![("alpha", F::Scalar(alpha))]
            }
            "MulBackward0" | "DivBackward0" => vec![("other", operand(1)), ("self", operand(0))],
            "PowBackward0" => vec![
                ("exponent", number(1).map_or(F::None, F::Scalar)),
                ("self", F::Tensor(self.saved[0])),
            ],
            "PowBackward1" => vec![
                ("exponent", F::Tensor(self.saved[1])),
                ("result", F::Tensor(self.saved[2])),
                ("self", F::Tensor(self.saved[0])),
            ],
            // (torch saves the exponent too; rgrad's formula reads the result alone, so
            // the field is shown only when the node kept it)
            "PowBackward2" => {
                let mut f = Vec::with_capacity(3);
                if self.saved[1].is_some() {
                    f.push(("exponent", F::Tensor(self.saved[1])));
                }
                f.push(("result", F::Tensor(self.saved[2])));
                f.push(("self", number(0).map_or(F::None, F::Scalar)));
                f
            }
            _ => Vec::new(),
        }
    }
    fn name(&self) -> Cow<'static, str> {
        let r = self.op.row();
        let at = usize::from(self.number_at);
        if self.underived() {
            return "NotImplemented".into();
        }
        match r.numbers.get(at) {
            Some(Number::Scalar(node)) if !self.number_edge => (*node).into(),
            _ => r.node.into(),
        }
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.grads(ctx, g, false)
    }
    // The formulas broadcast each sample's gradient against the saved operands; the
    // results are summed to the operands' shapes sample by sample.
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        Some(self.grads(ctx, g, true))
    }
}

impl ArithBackward {
    fn grads(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>], batched: bool) -> Result<Grads> {
        // (an op torch does not differentiate raises from its formulas; a Scalar overload
        // it does not differentiate, here)
        if !self.number_edge && self.underived() {
            return Err(not_implemented(self.op));
        }
        let number_at = usize::from(self.number_at);
        let number = self.number.is_some() && number_at < 2;
        if number
            && self.number_edge
            && self.op.row().reads[1 - number_at] & OPERANDS[number_at] != 0
        {
            ctx.check_saved_number()?; // torch saves a wrapped number as a tensor
        }
        let g = Term::T(grad0(g)?);
        let values = Values {
            ctx,
            node: self,
            unpacked: Default::default(),
        };
        let mut out = Grads::new();
        for i in 0..2 {
            let is_number = number && number_at == i;
            if is_number && !self.number_edge {
                continue; // (no edge)
            }
            let edge = if number && !self.number_edge { 0 } else { i };
            out.push(if !is_number && ctx.needs_input_grad(edge) {
                let d = derivative(self.op, i, &g, &values)?.into_tensor()?;
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
    use super::super::{
        add_op, div_op, div_rounded, floor_divide, fmod_op, mul_op, pow_op, remainder_op,
        rsub_scalar, sub_op,
    };
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
            ArithOp::Rsub => match a {
                Operand::T(x) => super::super::rsub_op(x, b, alpha),
                Operand::S(_) => sub_op(b, a, Scalar::Int(1)),
            },
            ArithOp::Mul => mul_op(a, b),
            ArithOp::Div => div_op(a, b),
            ArithOp::Remainder => remainder_op(a, b),
            ArithOp::Fmod => fmod_op(a, b),
            ArithOp::DivFloor => div_rounded(a, b, true),
            ArithOp::DivTrunc => div_rounded(a, b, false),
            ArithOp::FloorDivide => floor_divide(a, b),
            // (a positive base: a fractional power of a negative one is NaN)
            ArithOp::Pow => match a {
                Operand::T(x) => pow_op(Operand::T(&super::super::exp(x)?), b),
                s => pow_op(s, b),
            },
        }
    }

    #[test]
    fn first_and_second_derivatives_match_finite_differences() {
        let a = leaf(vec![0.5, -1.2, 2.3, 0.7, 1.6, -0.3], &[2, 3]);
        let b = leaf(vec![1.1, 0.45, -0.8], &[3]);
        let same = leaf(vec![1.3, -0.45, 0.9, 2.2, -1.7, 0.35], &[2, 3]);
        for &op in ArithOp::ALL {
            let name = op.name();
            if op == ArithOp::FloorDivide {
                continue; // (no derivative: below)
            }
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

    /// (node name, edges, saved tensors) of `y`'s node.
    fn node_of(y: &Tensor) -> (String, usize, usize) {
        let node = y.grad_fn().unwrap();
        let g = node.lock();
        (node.name(), g.next.len(), g.saved.len())
    }

    #[test]
    fn pow_overloads_record_torchs_nodes_and_save_what_their_formulas_read() {
        let x = leaf(vec![1.5, 2.0], &[2]);
        let e = leaf(vec![0.5, 3.0], &[2]);
        let c = crate::testing::tensor(vec![0.5, 3.0], &[2]);
        let (t, s) = (Operand::T, Operand::S);
        let two = Scalar::Float(2.0);
        let node = |y: Result<Tensor>| node_of(&y.unwrap());
        // x ** e: x, e and the output, whichever needs a gradient (as torch's)
        assert_eq!(node(pow_op(t(&x), t(&e))), ("PowBackward1".into(), 2, 3));
        assert_eq!(node(pow_op(t(&x), t(&c))), ("PowBackward1".into(), 2, 3));
        assert_eq!(node(pow_op(t(&c), t(&e))), ("PowBackward1".into(), 2, 3));
        // x ** 2: x; 2 ** e: the output
        assert_eq!(node(pow_op(t(&x), s(two))), ("PowBackward0".into(), 1, 1));
        assert_eq!(node(pow_op(s(two), t(&e))), ("PowBackward2".into(), 1, 1));
    }

    #[test]
    fn ops_torch_does_not_differentiate_record_a_node_that_raises() {
        let x = leaf(vec![1.5, 2.0], &[2]);
        let y = crate::testing::tensor(vec![0.5, 3.0], &[2]);
        for (r, edges) in [
            (floor_divide(Operand::T(&x), Operand::T(&y)), 2),
            (
                super::super::rfloor_divide_scalar(&x, Scalar::Float(2.0)),
                1,
            ),
            (super::super::rremainder_scalar(&x, Scalar::Float(1.7)), 1),
        ] {
            let r = r.unwrap();
            assert_eq!(node_of(&r), ("NotImplemented".into(), edges, 0));
            let opts = crate::autograd::engine::Options {
                allow_unused: true,
                ..Default::default()
            };
            let ones = super::super::ones_like(&r).unwrap();
            let e = crate::autograd::engine::run_backward(
                &[r],
                &[ones],
                std::slice::from_ref(&x),
                opts,
            );
            assert!(e.unwrap_err().to_string().contains("is not implemented"));
        }
        let y = div_rounded(Operand::T(&x), Operand::T(&y), true).unwrap();
        assert_eq!(node_of(&y), ("DivBackward2".into(), 2, 1));
    }
}
