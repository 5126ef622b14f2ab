//! The selection table's nodes (`table::select_op_table!`): for `where` and `clamp`, ops
//! whose output picks each element from one of their inputs, what the node saves, its
//! name and each input's derivative, from the op's row. The forwards (checks, promotion,
//! kernels) are in `select.rs`; they build their nodes here.

use super::elementwise::{Operand, grad0, logical_and, lt, mul_scalar, where_};
use super::select::{compare, logical, masked_grad, where_op};
use super::unary::logical_not;
use super::{apply, apply_optional, masked_fill, sum_to};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::autograd::graph::SavedTensor;
use crate::backend::BinaryOp;
use crate::dtype::Scalar;
use crate::shape::Shape;
use crate::tensor::Tensor;
use crate::{Error, Result};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::cell::OnceCell;

/// What the formulas may read, as bits of [`Row::reads`] (named in the rows `condition`,
/// `self_`, `min`, `max`), and their places in [`SelectBackward::saved`].
const CONDITION: u8 = 1;
const SELF: u8 = 2;
const MIN: u8 = 4;
const MAX: u8 = 8;
const VALUES: [u8; 4] = [CONDITION, SELF, MIN, MAX];

macro_rules! bit {
    (condition) => {
        CONDITION
    };
    (self_) => {
        SELF
    };
    (min) => {
        MIN
    };
    (max) => {
        MAX
    };
}

/// The facts of one row the op layer needs.
struct Row {
    node: &'static str,
    aten: &'static str,
    /// what each input's derivative reads, in edge order (a mask of [`CONDITION`],
    /// [`SELF`], [`MIN`], [`MAX`])
    reads: &'static [u8],
}

macro_rules! select_layer {
    ($($name:ident $V:ident $node:literal {
        aten: $aten:literal,
        $($input:ident: |$g:ident $(, $arg:ident)*| $d:expr,)+
    })*) => {
        /// The selection table's ops, one per row.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum SelectOp {
            $($V,)*
        }

        impl SelectOp {
            /// Every op, in table order.
            pub const ALL: &[SelectOp] = &[$(SelectOp::$V,)*];

            /// The row's name (`clamp_tensor`).
            pub fn name(self) -> &'static str {
                match self {
                    $(SelectOp::$V => stringify!($name),)*
                }
            }

            fn row(self) -> Row {
                match self {
                    $(SelectOp::$V => Row {
                        node: $node,
                        aten: $aten,
                        reads: &[$(0 $(| bit!($arg))*),+],
                    },)*
                }
            }
        }

        /// The row's gradient of input `i` (in edge order); `v`: what the formulas read.
        fn derivative(op: SelectOp, i: usize, g: &Tensor, v: &Values<'_>) -> Result<Tensor> {
            match op {
                $(SelectOp::$V => {
                    let mut at = 0;
                    $(
                        if i == at {
                            let $g = g;
                            $(let $arg = &v.$arg()?;)*
                            return $d;
                        }
                        at += 1;
                    )+
                    Err(Error::Internal(format!("{}: no input {i} of {at}", $node)))
                })*
            }
        }
    };
}

super::table::select_op_table!(select_layer);

/// A clamp bound as the formulas see it.
pub enum Bound {
    None,
    Number(f64),
    Tensor(Tensor),
}

/// A clamp bound given to [`record`]: a tensor (as given: saved where read), a Python
/// number (kept in the node) or None.
#[derive(Clone, Copy)]
pub(crate) enum BoundArg<'a> {
    None,
    Number(f64),
    Tensor(&'a Tensor),
}

/// What the formulas of a recorded op may read: the tensors as given (torch's saved
/// `condition`, `self`, `min`, `max`) and clamp's bounds.
#[derive(Clone, Copy)]
pub(crate) struct Reads<'a> {
    pub condition: Option<&'a Tensor>,
    pub self_: Option<&'a Tensor>,
    pub min: BoundArg<'a>,
    pub max: BoundArg<'a>,
}

impl<'a> Reads<'a> {
    pub const NONE: Reads<'static> = Reads {
        condition: None,
        self_: None,
        min: BoundArg::None,
        max: BoundArg::None,
    };
    /// The tensor of value `v` (a bit), if it is one.
    fn tensor(&self, v: u8) -> Option<&'a Tensor> {
        let bound = |b: BoundArg<'a>| match b {
            BoundArg::Tensor(t) => Some(t),
            _ => None,
        };
        match v {
            CONDITION => self.condition,
            SELF => self.self_,
            MIN => bound(self.min),
            _ => bound(self.max),
        }
    }
}

/// Runs `forward` as `op` over its differentiable inputs `edges` (promoted; None: an
/// absent bound, whose edge is `(None, 0)`), recording the row's node, which saves what
/// a needed derivative reads of `reads`.
pub(crate) fn record(
    op: SelectOp,
    edges: &[Option<&Tensor>],
    reads: Reads<'_>,
    forward: impl FnOnce() -> Result<Tensor>,
) -> Result<Tensor> {
    let r = op.row();
    debug_assert_eq!(edges.len(), r.reads.len());
    let node = |y: &Tensor| {
        let needed = edges
            .iter()
            .zip(r.reads)
            .filter(|(t, _)| t.is_some_and(crate::ops::wants_grad))
            .fold(0, |m, (_, reads)| m | reads);
        let mut list = SmallVec::<[SavedTensor; 2]>::new();
        let saved = VALUES.map(|v| {
            let t = reads.tensor(v).filter(|_| needed & v != 0)?;
            list.push(SavedTensor::input(t));
            Some((list.len() - 1) as u8)
        });
        let number = |b: BoundArg<'_>| match b {
            BoundArg::Number(n) => Some(n),
            _ => None,
        };
        let node = SelectBackward {
            op,
            saved,
            numbers: [number(reads.min), number(reads.max)],
            shapes: InputShapes::new(edges, y),
        };
        (node, list)
    };
    // (every input there: `apply`, which needs no list of the present ones)
    match edges {
        [Some(x)] => apply(r.aten, &[x], forward, node),
        [Some(a), Some(b)] => apply(r.aten, &[a, b], forward, node),
        _ => apply_optional(r.aten, edges, forward, node),
    }
}

/// The shapes of a node's inputs, for bringing their gradients back to them: kept
/// (boxed) only when one differs from the output's (see `OperandShapes`).
#[derive(Clone)]
struct InputShapes(Option<Box<[Shape; 3]>>);

impl InputShapes {
    fn new(inputs: &[Option<&Tensor>], out: &Tensor) -> InputShapes {
        if let [Some(_)] = inputs {
            return InputShapes(None); // (one input: the op is elementwise in it, clamp)
        }
        let shape = out.shape();
        if inputs.iter().flatten().all(|t| t.has_shape(&shape)) {
            return InputShapes(None);
        }
        let mut shapes: [Shape; 3] = Default::default();
        for (s, t) in shapes.iter_mut().zip(inputs) {
            if let Some(t) = t {
                *s = t.shape();
            }
        }
        InputShapes(Some(Box::new(shapes)))
    }
    /// `g`, the gradient of the output, summed down to input `i`'s shape.
    fn sum_to(&self, g: Tensor, i: usize) -> Result<Tensor> {
        match &self.0 {
            None => Ok(g),
            Some(s) => sum_to(&g, &s[i]),
        }
    }
    /// [`sum_to`](Self::sum_to) for a batched gradient (`[B, *output]` to `[B, *input]`).
    fn sum_to_batched(&self, g: Tensor, i: usize) -> Result<Tensor> {
        match &self.0 {
            None => Ok(g),
            Some(s) => super::sum_to_batched(&g, &s[i]),
        }
    }
}

/// What a node's formulas may read, by name.
struct Values<'c> {
    ctx: &'c BackwardCtx<'c>,
    node: &'c SelectBackward,
    /// condition, self, min and max, once unpacked (for all the formulas)
    unpacked: [OnceCell<Tensor>; 4],
}

impl Values<'_> {
    fn saved(&self, at: usize) -> Result<Tensor> {
        if let Some(t) = self.unpacked[at].get() {
            return Ok(t.clone());
        }
        let i = self.node.saved[at].ok_or_else(|| {
            Error::Internal(format!("{}: value {at} was not saved", self.node.name()))
        })?;
        let t = self.ctx.saved(usize::from(i))?;
        Ok(self.unpacked[at].get_or_init(|| t).clone())
    }
    fn condition(&self) -> Result<Tensor> {
        self.saved(0)
    }
    fn self_(&self) -> Result<Tensor> {
        self.saved(1)
    }
    fn min(&self) -> Result<Bound> {
        self.bound(0)
    }
    fn max(&self) -> Result<Bound> {
        self.bound(1)
    }
    fn bound(&self, j: usize) -> Result<Bound> {
        Ok(match (self.node.saved[2 + j], self.node.numbers[j]) {
            (Some(_), _) => Bound::Tensor(self.saved(2 + j)?),
            (None, Some(n)) => Bound::Number(n),
            // (a tensor bound is read by every formula of its op: saved when recorded)
            (None, None) => Bound::None,
        })
    }
}

/// The node of every selection table op: its name and derivatives come from the op's
/// row.
#[derive(Clone)]
pub struct SelectBackward {
    op: SelectOp,
    /// condition, self, min and max, where saved
    saved: [Option<u8>; 4],
    /// clamp's number bounds
    numbers: [Option<f64>; 2],
    shapes: InputShapes,
}

impl Backward for SelectBackward {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        let bound = |i: usize| match self.numbers[i] {
            Some(v) => F::Scalar(crate::dtype::Scalar::Float(v)),
            None => F::None,
        };
        match &*self.name() {
            "WhereBackward0" => vec![("condition", F::Tensor(self.saved[0]))],
            "ClampBackward1" => vec![
                ("max", bound(1)),
                ("min", bound(0)),
                ("self", F::Tensor(self.saved[1])),
            ],
            "ClampBackward0" => vec![
                ("max", F::Tensor(self.saved[3])),
                ("min", F::Tensor(self.saved[2])),
                ("self", F::Tensor(self.saved[1])),
            ],
            _ => Vec::new(),
        }
    }
    fn name(&self) -> Cow<'static, str> {
        self.op.row().node.into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.grads(ctx, g, false)
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

impl SelectBackward {
    fn grads(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>], batched: bool) -> Result<Grads> {
        let g = grad0(g)?;
        let values = Values {
            ctx,
            node: self,
            unpacked: Default::default(),
        };
        let mut out = Grads::new();
        for i in 0..self.op.row().reads.len() {
            out.push(if ctx.needs_input_grad(i) {
                let d = derivative(self.op, i, &g, &values)?;
                Some(if batched {
                    self.shapes.sum_to_batched(d, i)?
                } else {
                    self.shapes.sum_to(d, i)?
                })
            } else {
                None
            });
        }
        Ok(out)
    }
}

/// The tensor operations the rows' derivatives are written with.
trait SelectCalc: Sized {
    /// `where(c, self, 0)`.
    fn kept_where(&self, c: &Self) -> Result<Self>;
    /// `where(c, 0, self)`.
    fn zeroed_where(&self, c: &Self) -> Result<Self>;
    /// `self` masked by `mask`, recorded as a function of `self` and `x` (select.rs's
    /// [`masked_grad`], torch's threshold_backward-style node `name`).
    fn masked_grad(&self, x: &Self, mask: &Self, name: &'static str) -> Result<Self>;
    /// `min < self < max` for number bounds (a None bound: no condition; NaN: false).
    fn strictly_between(&self, min: &Bound, max: &Bound) -> Result<Self>;
    /// x's gradient of clamp with tensor bounds (torch's clamp_backward).
    fn clamp_backward(&self, x: &Self, min: &Bound, max: &Bound) -> Result<Self>;
    /// min's (torch's clamp_backward_min_max).
    fn clamp_backward_min(&self, x: &Self, min: &Bound, max: &Bound) -> Result<Self>;
    /// max's.
    fn clamp_backward_max(&self, x: &Self, min: &Bound, max: &Bound) -> Result<Self>;
    /// `self / 2` where `mask`, else `self` (torch's `where(tie, grad / 2, grad)`).
    fn halved_where(&self, mask: &Self) -> Result<Self>;
    /// `self`, with 0 where `mask`.
    fn zero_where(&self, mask: &Self) -> Result<Self>;
}

fn cmp(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    compare(op, Operand::T(a), Operand::T(b))
}
fn or(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    logical(BinaryOp::LogicalOr, a, b)
}

/// Where x ties a bound of clamp's two, counted only while `min < max` (torch 2.15):
/// (x == min, x == max).
fn clamp_ties(x: &Tensor, lo: &Tensor, hi: &Tensor) -> Result<(Tensor, Tensor)> {
    let ordered = lt(lo, hi)?;
    Ok((
        logical_and(&cmp(BinaryOp::Eq, x, lo)?, &ordered)?,
        logical_and(&cmp(BinaryOp::Eq, x, hi)?, &ordered)?,
    ))
}

fn no_bounds() -> Error {
    Error::Internal("clamp: tensor bounds expected".into())
}

impl SelectCalc for Tensor {
    fn halved_where(&self, mask: &Self) -> Result<Self> {
        where_(mask, &mul_scalar(self, Scalar::Float(0.5))?, self)
    }
    fn zero_where(&self, mask: &Self) -> Result<Self> {
        masked_fill(self, mask, Scalar::Float(0.0))
    }
    fn kept_where(&self, c: &Self) -> Result<Self> {
        where_op(c, Operand::T(self), Operand::S(Scalar::Float(0.0)))
    }
    fn zeroed_where(&self, c: &Self) -> Result<Self> {
        where_op(c, Operand::S(Scalar::Float(0.0)), Operand::T(self))
    }
    fn masked_grad(&self, x: &Self, mask: &Self, name: &'static str) -> Result<Self> {
        masked_grad(self, x, mask, name)
    }
    fn strictly_between(&self, min: &Bound, max: &Bound) -> Result<Self> {
        let side = |b: &Bound, op| match b {
            Bound::Number(n) => {
                compare(op, Operand::T(self), Operand::S(Scalar::Float(*n))).map(Some)
            }
            Bound::None => Ok(None),
            Bound::Tensor(_) => Err(no_bounds()),
        };
        match (side(min, BinaryOp::Gt)?, side(max, BinaryOp::Lt)?) {
            (Some(a), Some(b)) => logical_and(&a, &b),
            (Some(m), None) | (None, Some(m)) => Ok(m),
            (None, None) => Err(Error::Internal("clamp without bounds".into())),
        }
    }
    fn clamp_backward(&self, x: &Self, min: &Bound, max: &Bound) -> Result<Self> {
        match (min, max) {
            // maximum's: ties halved, 0 where x < min (so NaN passes)
            (Bound::Tensor(lo), Bound::None) => self
                .halved_where(&cmp(BinaryOp::Eq, x, lo)?)?
                .zero_where(&lt(x, lo)?),
            // minimum's
            (Bound::None, Bound::Tensor(hi)) => self
                .halved_where(&cmp(BinaryOp::Eq, x, hi)?)?
                .zero_where(&lt(hi, x)?),
            // 0 outside [min, max]
            (Bound::Tensor(lo), Bound::Tensor(hi)) => {
                let (tie_lo, tie_hi) = clamp_ties(x, lo, hi)?;
                let outside = or(&lt(x, lo)?, &cmp(BinaryOp::Gt, x, hi)?)?;
                self.halved_where(&or(&tie_lo, &tie_hi)?)?
                    .zero_where(&outside)
            }
            _ => Err(no_bounds()),
        }
    }
    fn clamp_backward_min(&self, x: &Self, min: &Bound, max: &Bound) -> Result<Self> {
        match (min, max) {
            // maximum's: 0 where min < x
            (Bound::Tensor(lo), Bound::None) => self
                .halved_where(&cmp(BinaryOp::Eq, x, lo)?)?
                .zero_where(&lt(lo, x)?),
            // min is taken where x < min <= max, halved on a tie
            (Bound::Tensor(lo), Bound::Tensor(hi)) => {
                let (tie_lo, _) = clamp_ties(x, lo, hi)?;
                let below = logical_and(&lt(x, lo)?, &cmp(BinaryOp::Le, lo, hi)?)?;
                let taken = or(&below, &tie_lo)?;
                self.halved_where(&tie_lo)?
                    .zero_where(&logical_not(&taken)?)
            }
            _ => Err(no_bounds()),
        }
    }
    fn clamp_backward_max(&self, x: &Self, min: &Bound, max: &Bound) -> Result<Self> {
        match (min, max) {
            // minimum's: 0 where x < max
            (Bound::None, Bound::Tensor(hi)) => self
                .halved_where(&cmp(BinaryOp::Eq, x, hi)?)?
                .zero_where(&lt(x, hi)?),
            // max is taken where min <= max < x, and wherever max < min
            (Bound::Tensor(lo), Bound::Tensor(hi)) => {
                let (_, tie_hi) = clamp_ties(x, lo, hi)?;
                let above = logical_and(&cmp(BinaryOp::Gt, x, hi)?, &cmp(BinaryOp::Le, lo, hi)?)?;
                let taken = or(&or(&above, &lt(hi, lo)?)?, &tie_hi)?;
                self.halved_where(&tie_hi)?
                    .zero_where(&logical_not(&taken)?)
            }
            _ => Err(no_bounds()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{clamp, clamp_tensor};
    use super::*;
    use crate::testing::{gradcheck, gradgradcheck, leaf, tensor_bool};

    /// Each row's op through its forward, its first and second derivatives against
    /// finite differences (x away from the bounds, where the gradient jumps).
    #[test]
    fn first_and_second_derivatives_match_finite_differences() {
        let x = leaf(vec![0.3, -1.2, 2.3, 0.7, 1.6, -0.4], &[2, 3]);
        let lo = leaf(vec![-0.5, 0.5, 1.0], &[3]);
        let hi = leaf(vec![1.5], &[1]);
        let c = tensor_bool(vec![true, false, true], &[3]);
        type F = fn(&[Tensor], &Tensor) -> Result<Tensor>;
        let cases: [(SelectOp, F, Vec<Tensor>); 6] = [
            (
                SelectOp::Where,
                |x, c| super::super::where_(c, &x[0], &x[1]),
                vec![x.clone(), lo.clone()],
            ),
            (
                SelectOp::Clamp,
                |x, _| clamp(&x[0], Some(Scalar::Float(-0.5)), Some(Scalar::Float(1.0))),
                vec![x.clone()],
            ),
            (
                SelectOp::Clamp,
                |x, _| clamp(&x[0], None, Some(Scalar::Float(1.0))),
                vec![x.clone()],
            ),
            (
                SelectOp::ClampTensor,
                |x, _| clamp_tensor(&x[0], Some(&x[1]), Some(&x[2])),
                vec![x.clone(), lo.clone(), hi.clone()],
            ),
            (
                SelectOp::ClampTensor,
                |x, _| clamp_tensor(&x[0], Some(&x[1]), None),
                vec![x.clone(), lo.clone()],
            ),
            // min > max: max everywhere
            (
                SelectOp::ClampTensor,
                |x, _| clamp_tensor(&x[0], Some(&x[2]), Some(&x[1])),
                vec![x.clone(), lo.clone(), hi.clone()],
            ),
        ];
        for op in SelectOp::ALL {
            assert!(cases.iter().any(|c| c.0 == *op), "{}: no case", op.name());
        }
        for (op, f, xs) in cases {
            let name = op.name();
            let g = |t: &[Tensor]| f(t, &c);
            assert_eq!(g(&xs).unwrap().grad_fn().unwrap().name(), op.row().node);
            gradcheck(g, &xs).unwrap_or_else(|e| panic!("{name}: {e}"));
            gradgradcheck(g, &xs).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn nodes_have_an_edge_per_input_and_save_what_a_needed_formula_reads() {
        let x = leaf(vec![0.3, -1.2], &[2]);
        let lo = leaf(vec![-0.5, 0.5], &[2]);
        let c = tensor_bool(vec![true, false], &[2]);
        let node = |y: Tensor| {
            let n = y.grad_fn().unwrap();
            let g = n.lock();
            (
                g.next.iter().map(Option::is_some).collect::<Vec<_>>(),
                g.saved.len(),
            )
        };
        let w = super::super::where_(&c, &x, &lo.detach()).unwrap();
        assert_eq!(node(w), (vec![true, false], 1));
        let k = clamp(&x, Some(Scalar::Int(0)), None).unwrap();
        assert_eq!(node(k), (vec![true], 1));
        // x, min; max None: its edge (None, 0)
        let t = clamp_tensor(&x, Some(&lo), None).unwrap();
        assert_eq!(node(t), (vec![true, true, false], 2));
        let t = clamp_tensor(&x.detach(), None, Some(&lo)).unwrap();
        assert_eq!(node(t), (vec![false, false, true], 2));
    }
}
