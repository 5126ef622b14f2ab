//! Kernel backends. Kernels take buffers plus `Layout`s and never see the graph; the CPU
//! backend is the only one today (a CUDA backend behind a `cuda` feature comes later).

pub mod cpu;

use crate::Result;

macro_rules! unary_op_ids {
    ($($name:ident $name_:ident $V:ident $node:literal { $($row:tt)* })*) => {
        /// The elementwise unary ops, one per row of the op table (`ops::table`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum UnaryOp {
            $($V,)*
        }
        impl UnaryOp {
            /// Every op, in table order.
            pub const ALL: &[UnaryOp] = &[$(UnaryOp::$V,)*];
        }
    };
}
crate::ops::table::unary_op_table!(unary_op_ids);

macro_rules! binary_fn_ids {
    ($($name:ident $name_:ident $V:ident $node:literal { $($row:tt)* })*) => {
        /// The binary op table's functions of two float tensors (`ops::table`), one per row.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum BinaryFn {
            $($V,)*
        }
        impl BinaryFn {
            /// Every op, in table order.
            pub const ALL: &[BinaryFn] = &[$(BinaryFn::$V,)*];
        }
    };
}
crate::ops::table::binary_op_table!(binary_fn_ids);

/// The elementwise binary ops (device-agnostic ids; each backend has their kernels).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Maximum,
    Minimum,
    /// Python's `%`: the result takes the divisor's sign (torch.remainder).
    Remainder,
    /// C's `fmod`: the result takes the dividend's sign (torch.fmod).
    Fmod,
    /// `a // b` (div with rounding_mode="floor").
    FloorDiv,
    /// div with rounding_mode="trunc".
    TruncDiv,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LogicalAnd,
    LogicalOr,
    /// Bitwise `&`, `|`, `^` of integers and bools (floats are refused before the kernel).
    BitAnd,
    BitOr,
    BitXor,
}

impl BinaryOp {
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
        )
    }
    pub fn is_logical(self) -> bool {
        matches!(self, BinaryOp::LogicalAnd | BinaryOp::LogicalOr)
    }
    pub fn is_bitwise(self) -> bool {
        matches!(self, BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor)
    }
}

/// The elementwise arithmetic the op table's derivatives (`df`) are written with. It is
/// implemented over tensors (`ops::unary`: recorded ops, so a backward can itself be
/// differentiated) and over single float elements (each backend's fused kernels), so one
/// formula gives both, with the same roundings.
pub trait Calc: Sized {
    fn mul(&self, o: &Self) -> Result<Self>;
    fn div(&self, o: &Self) -> Result<Self>;
    fn neg(&self) -> Result<Self>;
    /// `self + c`
    fn add_s(&self, c: f64) -> Result<Self>;
    /// `self * c`
    fn mul_s(&self, c: f64) -> Result<Self>;
    /// `c - self`
    fn rsub_s(&self, c: f64) -> Result<Self>;
    /// `self ** c`
    fn pow_s(&self, c: f64) -> Result<Self>;
    fn sign(&self) -> Result<Self>;
    fn sin(&self) -> Result<Self>;
    fn cos(&self) -> Result<Self>;
    fn sinh(&self) -> Result<Self>;
    fn cosh(&self) -> Result<Self>;
    fn exp(&self) -> Result<Self>;
    fn rsqrt(&self) -> Result<Self>;
    fn erfinv(&self) -> Result<Self>;
    fn digamma(&self) -> Result<Self>;
    /// ψ⁽ⁿ⁾(self)
    fn polygamma(&self, n: u32) -> Result<Self>;
    fn zeros_like(&self) -> Result<Self>;
    /// `self`, unchanged (a gradient passed on as it is).
    fn unchanged(&self) -> Result<Self>;
    /// `self` where `y > 0` (or is NaN), else 0: torch's threshold_backward at 0.
    fn threshold_backward(&self, y: &Self) -> Result<Self>;
    /// `self * (1 - y²)`: torch's tanh_backward.
    fn tanh_backward(&self, y: &Self) -> Result<Self>;
}
