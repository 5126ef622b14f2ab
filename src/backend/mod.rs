//! Kernel backends: the seam between the ops (`ops/`: checks, dtypes, shapes, the graph)
//! and the kernels that compute. Kernels take buffers plus `Layout`s and return new
//! buffers; they never see the graph or a `Tensor`. `ops/` reaches them only through
//! [`Backend`], found from the operands' buffers by [`of`] (which refuses operands on two
//! devices with torch's error), and, for what always runs on the host (indices read to
//! plan an op, random draws from torch's CPU generator), through [`host`].
//!
//! The CPU backend (`cpu/`) is the only one today. The interface is shaped for the CUDA
//! one: a kernel allocates its own output (on its device), nothing assumes a host
//! pointer behind a `Buffer`, and nothing waits for a result (a device backend enqueues
//! on its stream). What reads values on the host (`host.rs`) reads host buffers, which
//! every buffer is today; a device backend adds the copy to the host there.

pub mod cpu;
pub mod cuda;
pub mod host;
pub mod host_misc;
pub mod linalg;

use crate::Result;
use crate::device::Device;
use crate::dtype::DType;
use crate::layout::Layout;
use crate::storage::Buffer;
pub use cpu::activation::ActFn;
pub use cpu::bessel::Bessel;
pub use cpu::fused::Fused3;

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

/// torch.scatter_reduce's `reduce=` (the kernel's join; "mean" is a sum the op layer
/// divides by the counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScatterReduce {
    Sum,
    Prod,
    Mean,
    Amax,
    Amin,
}

impl ScatterReduce {
    /// From torch's name; None for any other.
    pub fn parse(s: &str) -> Option<ScatterReduce> {
        Some(match s {
            "sum" => ScatterReduce::Sum,
            "prod" => ScatterReduce::Prod,
            "mean" => ScatterReduce::Mean,
            "amax" => ScatterReduce::Amax,
            "amin" => ScatterReduce::Amin,
            _ => return None,
        })
    }
    /// torch's name.
    pub fn name(self) -> &'static str {
        match self {
            ScatterReduce::Sum => "sum",
            ScatterReduce::Prod => "prod",
            ScatterReduce::Mean => "mean",
            ScatterReduce::Amax => "amax",
            ScatterReduce::Amin => "amin",
        }
    }
}

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
    /// The greatest common divisor of int64s (ATen's Euclid loop, wrapping as C's
    /// two's complement does: gcd(MIN, 0) = MIN); other dtypes are refused first.
    Gcd,
    /// The least common multiple of int64s: `|a / gcd(a, b) * b|`, 0 where the gcd is 0.
    Lcm,
}

impl BinaryOp {
    /// torch's name for the op (what the profiler shows).
    pub fn aten_name(self) -> &'static str {
        match self {
            BinaryOp::Add => "aten::add",
            BinaryOp::Sub => "aten::sub",
            BinaryOp::Mul => "aten::mul",
            BinaryOp::Div | BinaryOp::TruncDiv => "aten::div",
            BinaryOp::Pow => "aten::pow",
            BinaryOp::Maximum => "aten::maximum",
            BinaryOp::Minimum => "aten::minimum",
            BinaryOp::Remainder => "aten::remainder",
            BinaryOp::Fmod => "aten::fmod",
            BinaryOp::FloorDiv => "aten::floor_divide",
            BinaryOp::Eq => "aten::eq",
            BinaryOp::Ne => "aten::ne",
            BinaryOp::Lt => "aten::lt",
            BinaryOp::Le => "aten::le",
            BinaryOp::Gt => "aten::gt",
            BinaryOp::Ge => "aten::ge",
            BinaryOp::LogicalAnd => "aten::logical_and",
            BinaryOp::LogicalOr => "aten::logical_or",
            BinaryOp::BitAnd => "aten::bitwise_and",
            BinaryOp::BitOr => "aten::bitwise_or",
            BinaryOp::BitXor => "aten::bitwise_xor",
            BinaryOp::Gcd => "aten::gcd",
            BinaryOp::Lcm => "aten::lcm",
        }
    }
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

/// The reductions `reduce` computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    Sum,
    /// The sum with NaN counted as 0 (nansum; integers and bools: the sum).
    NanSum,
    /// The sum divided by the count, in the accumulator's precision.
    Mean,
    Prod,
    Max,
    Min,
    ArgMax,
    ArgMin,
    /// Whether every element is nonzero (bool).
    All,
    /// Whether some element is nonzero (bool).
    Any,
}

/// The right-hand side of an in-place arithmetic kernel: a buffer (broadcast to the
/// destination's layout), a number, or a buffer times a number (`add_(y, alpha=a)`:
/// `y * a` rounded to the dtype, then the op, as the two out-of-place ops would).
pub enum InPlaceRhs<'a> {
    Slice(&'a Buffer, &'a Layout),
    Number(f64),
    Scaled(&'a Buffer, &'a Layout, f64),
}

/// Declares [`Backend`] and its CPU implementation from one list: each kernel's signature
/// and the CPU function that implements it. A kernel marked `on x` also gets a free
/// function here that runs it on the backend of its buffer `x` (the op layer has checked
/// that every operand is on that device: [`check_same_device`]); the others (factories)
/// are called on [`on`]`(device)`.
macro_rules! backend_kernels {
    ($($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty => $cpu:path $(, on $($on:ident),+)?;)*) => {
        /// The kernels of one device. Every buffer handed to a backend is on its device
        /// (see [`of`]); the layouts say which of its elements an operand is.
        #[allow(clippy::too_many_arguments)] // (index_put's, as the op's)
        pub trait Backend: Send + Sync {
            fn device(&self) -> Device;
            $($(#[$doc])* fn $name(&self, $($arg: $ty),*) -> Result<$ret>;)*
        }

        #[allow(clippy::too_many_arguments)]
        impl Backend for cpu::Cpu {
            fn device(&self) -> Device {
                Device::Cpu
            }
            $(#[inline]
            fn $name(&self, $($arg: $ty),*) -> Result<$ret> {
                Ok($cpu($($arg),*))
            })*
        }

        $(backend_kernels!(@free $(#[$doc])* fn $name($($arg: $ty),*) -> $ret $(, on $($on),+)?);)*
    };
    (@free $(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty) => {};
    (@free $(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty, on $($on:ident),+) => {
        $(#[$doc])*
        #[inline]
        #[allow(clippy::too_many_arguments)]
        pub fn $name($($arg: $ty),*) -> Result<$ret> {
            // (the CPU's kernels are called statically, so they inline into the op)
            match device_backend_of_any(&[$(&*$on),+]) {
                Some(device) => {
                    crate::replay::refuse("a kernel on a CUDA tensor (CPU step replay only)")?;
                    device.$name($($arg),*)
                }
                // a thread recording a step (`replay`) runs the kernel and records it
                // (through a cold `dyn` call: the recording kernels stay out of the
                // inlined eager path)
                None if crate::replay::active() => crate::replay::record::backend().$name($($arg),*),
                None => cpu::Cpu.$name($($arg),*),
            }
        }
    };
}

backend_kernels! {
    // ---- elementwise
    /// The op table's unary op `op` (integers and bools as the row says).
    fn unary(op: UnaryOp, x: &Buffer, lx: &Layout) -> Buffer => cpu::unary::unary, on x;
    /// `g·f'(s)` of a table op in one pass (`s`: what its node saved), where it applies.
    fn unary_backward(op: UnaryOp, g: &Buffer, lg: &Layout, s: &Buffer, ls: &Layout) -> Option<Buffer> => cpu::unary::unary_backward, on g, s;
    fn polygamma(n: u32, x: &Buffer, lx: &Layout) -> Buffer => cpu::unary::polygamma, on x;
    /// The Bessel function `op` (i0, i0e, i1, i1e) of a float buffer.
    fn bessel(op: Bessel, x: &Buffer, lx: &Layout) -> Buffer => cpu::unary::bessel, on x;
    /// An activation of a float buffer in one pass (`None`: other dtypes).
    fn activation(op: ActFn, x: &Buffer, lx: &Layout) -> Option<Buffer> => cpu::activation::activation, on x;
    /// `g·op'(s)` in one pass (`s` the saved input, or the result where `result`).
    fn activation_backward(op: ActFn, result: bool, g: &Buffer, lg: &Layout, s: &Buffer, ls: &Layout) -> Option<Buffer> => cpu::activation::activation_backward, on g, s;
    /// igamma(a, x) (igammac where `upper`) of two float buffers of one dtype, laid out
    /// over the output's shape (broadcast).
    fn igamma(upper: bool, a: &Buffer, la: &Layout, x: &Buffer, lx: &Layout) -> Buffer => cpu::unary::igamma, on a, x;
    fn logical_not(x: &Buffer, lx: &Layout) -> Buffer => cpu::unary::logical_not, on x;
    fn clamp(x: &Buffer, lx: &Layout, lo: Option<f64>, hi: Option<f64>) -> Buffer => cpu::elementwise::clamp, on x;
    /// `a op b`, both laid out over the output's shape (broadcast), of one dtype.
    fn binary(op: BinaryOp, a: &Buffer, la: &Layout, b: &Buffer, lb: &Layout) -> Buffer => cpu::elementwise::binary, on a, b;
    /// `a op s` (or `s op a`) for a contiguous float `a`, where it applies.
    fn binary_scalar(op: BinaryOp, a: &Buffer, la: &Layout, s: f64, scalar_first: bool) -> Option<Buffer> => cpu::elementwise::binary_scalar, on a;
    /// The binary op table's function `op`.
    fn binary_fn(op: BinaryFn, a: &Buffer, la: &Layout, b: &Buffer, lb: &Layout) -> Buffer => cpu::binary::binary_fn, on a, b;
    /// `clamp(x, lo, hi)` with tensor bounds in one pass (the bits of maximum, then
    /// minimum); `None` where the kernel does not apply (the caller runs the two).
    fn clamp_between(x: &Buffer, lx: &Layout, lo: &Buffer, llo: &Layout, hi: &Buffer, lhi: &Layout) -> Option<Buffer> => cpu::binary::clamp_between, on x, lo, hi;
    /// `dst op= rhs` in place; false where the kernel does not apply.
    fn arith_in_place(op: BinaryOp, dst: &mut Buffer, ld: &Layout, rhs: InPlaceRhs<'_>) -> bool => cpu::elementwise::arith_in_place, on dst;
    fn where_(cond: &Buffer, lc: &Layout, a: &Buffer, la: &Layout, b: &Buffer, lb: &Layout) -> Buffer => cpu::elementwise::where_, on cond, a, b;
    /// addcmul, addcdiv, lerp with a tensor weight or addr (`op`) of three operands of one
    /// dtype, their layouts broadcast to the output's shape: a row-major buffer; `None`
    /// for a dtype the op has no kernel for.
    fn fused3(op: Fused3, a: &Buffer, la: &Layout, b: &Buffer, lb: &Layout, c: &Buffer, lc: &Layout) -> Option<Buffer> => cpu::fused::fused3, on a, b, c;
    /// lerp of two float operands of one dtype (broadcast layouts) with a number weight.
    fn lerp_scalar(a: &Buffer, la: &Layout, b: &Buffer, lb: &Layout, weight: crate::dtype::Scalar) -> Option<Buffer> => cpu::fused::lerp_scalar, on a, b;
    /// NaN, +inf and -inf of a float buffer replaced by the numbers (torch's nan_to_num);
    /// `None` for other dtypes.
    fn nan_to_num(x: &Buffer, lx: &Layout, nan: f64, posinf: f64, neginf: f64) -> Option<Buffer> => cpu::fused::nan_to_num, on x;
    /// `fused3` with `dst` as its first operand, written in place (`b` and `c` contiguous
    /// over dst's shape or one element); false, touching nothing, where it does not apply.
    fn fused3_in_place(op: Fused3, dst: &mut Buffer, ld: &Layout, b: &Buffer, lb: &Layout, c: &Buffer, lc: &Layout) -> bool => cpu::fused::fused3_in_place, on dst;
    /// `lerp_scalar` with `dst` as its first operand, written in place (as `fused3_in_place`).
    fn lerp_scalar_in_place(dst: &mut Buffer, ld: &Layout, b: &Buffer, lb: &Layout, weight: crate::dtype::Scalar) -> bool => cpu::fused::lerp_scalar_in_place, on dst;
    fn cast(x: &Buffer, lx: &Layout, to: DType) -> Buffer => cpu::elementwise::cast, on x;
    /// Writes `src` (cast to `dst`'s dtype) into the elements `ld` names of `dst`.
    fn copy_into(dst: &mut Buffer, ld: &Layout, src: &Buffer, ls: &Layout) -> () => cpu::elementwise::copy_into;
    /// Buffers of one dtype (each over its layout) side by side along `dim` (torch.cat).
    fn cat(parts: &[(&Buffer, &Layout)], dim: usize, out_shape: &[usize]) -> Buffer => cpu::elementwise::cat;
    /// `v` written into every element of `ld` (fill_, zero_).
    fn fill(dst: &mut Buffer, ld: &Layout, v: crate::dtype::Scalar) -> () => cpu::creation::fill, on dst;

    // ---- reductions
    /// `op` over `dims` (kept as size-1 dims of the result's layout order).
    fn reduce(op: ReduceOp, x: &Buffer, lx: &Layout, dims: &[usize]) -> Buffer => cpu::reduce::reduce, on x;
    /// max/min over `dims` and the index of each (first of equals).
    fn arg_reduce(x: &Buffer, lx: &Layout, dims: &[usize], is_max: bool) -> (Buffer, Vec<i64>) => cpu::reduce::arg_reduce, on x;
    fn sum_squares(x: &Buffer, lx: &Layout, dims: &[usize]) -> Option<Buffer> => cpu::reduce::sum_squares, on x;
    /// Σ(a - b)² (÷ the count for `mean`) of two contiguous buffers of one shape and
    /// float dtype, fused (mse_loss); `None` where it does not apply.
    fn sq_diff_sum(a: &Buffer, la: &Layout, b: &Buffer, lb: &Layout, mean: bool) -> Option<Buffer> => cpu::reduce::sq_diff_sum, on a, b;
    /// softmax (or log_softmax) along `dim`, fused, row-major; `None` where it does not apply.
    fn softmax(x: &Buffer, lx: &Layout, dim: usize, log: bool) -> Option<Buffer> => cpu::reduce::softmax, on x;
    /// softmax's (or log_softmax's) backward along the last dim from `g` and the output `y`.
    fn softmax_backward(g: &Buffer, lg: &Layout, y: &Buffer, ly: &Layout, log: bool) -> Option<Buffer> => cpu::reduce::softmax_backward, on g, y;
    /// `log Σ exp(x)` over `dims`; `None` where it does not apply.
    fn logsumexp(x: &Buffer, lx: &Layout, dims: &[usize]) -> Option<Buffer> => cpu::reduce::logsumexp, on x;
    /// var (or std) over `dims` with `correction`; `None` for non-float dtypes.
    fn var(x: &Buffer, lx: &Layout, dims: &[usize], correction: f64, sqrt: bool) -> Option<Buffer> => cpu::reduce::var, on x;
    fn any_nonzero(x: &Buffer, lx: &Layout) -> bool => cpu::reduce::any_nonzero, on x;
    /// Per row, the product of every other element (prod's gradient through zeros).
    fn exclusive_prod_rows(x: &Buffer, lx: &Layout) -> Option<Buffer> => cpu::reduce::exclusive_prod_rows, on x;
    /// The running sum (or product, `prod`) along `dim`, row-major, of x's dtype (cumsum,
    /// cumprod).
    fn cumulative(x: &Buffer, lx: &Layout, dim: usize, prod: bool) -> Buffer => cpu::scan::cumulative, on x;
    /// The running max (`is_max`) or min along `dim` and the index of each (int64),
    /// row-major, as torch's CPU kernel (the last of equal values; NaN propagates) (cummax,
    /// cummin).
    fn cum_extreme(x: &Buffer, lx: &Layout, dim: usize, is_max: bool) -> (Buffer, Buffer) => cpu::scan::cum_extreme, on x;
    /// The running `log Σ exp` along `dim`, row-major, of x's float dtype (logcumsumexp);
    /// `None` for other dtypes.
    fn logcumsumexp(x: &Buffer, lx: &Layout, dim: usize) -> Option<Buffer> => cpu::scan::logcumsumexp, on x;

    // ---- indexing (index lists are host data the op layer has checked)
    /// nll_loss's per-sample losses `-(x[i, idx[i]] * w[i])` (x [n, c], idx and w [n]);
    /// `None` where the kernel does not apply (the op gathers, multiplies, negates).
    fn nll_losses(x: &Buffer, lx: &Layout, idx: &Buffer, w: &Buffer) -> Option<Buffer> => cpu::nn::nll_losses, on x, idx, w;
    fn gather(x: &Buffer, lx: &Layout, dim: usize, index: &[i64], index_shape: &[usize]) -> Buffer => cpu::index::gather, on x;
    /// `gather` with index values the op layer has not checked, checked in the kernel's
    /// own pass; `None` where one is out of range or the backend does not check its own
    /// (the op layer then checks, for its error, and calls `gather`).
    fn gather_checking(x: &Buffer, lx: &Layout, dim: usize, index: &[i64], index_shape: &[usize]) -> Option<Buffer> => cpu::index::gather_checking, on x;
    fn scatter_add(shape: &[usize], dim: usize, index: &[i64], index_shape: &[usize], src: &Buffer, ls: &Layout) -> Buffer => cpu::index::scatter_add, on src;
    fn index_select(x: &Buffer, lx: &Layout, dim: usize, index: &[i64]) -> Buffer => cpu::index::index_select, on x;
    fn index_add(shape: &[usize], dim: usize, index: &[i64], src: &Buffer, ls: &Layout) -> Buffer => cpu::index::index_add, on src;
    fn index_put(x: &Buffer, lx: &Layout, dtype: DType, positions: &[i64], values: &Buffer, lv: &Layout,
        accumulate: bool) -> Buffer => cpu::index::index_put, on x;
    /// `x` copied row-major with `src` (over `ls`, of the index's shape) written along
    /// `dim` where `index` (row-major of `index_shape`, checked) says, `+=` with `add`,
    /// in index order (scatter, scatter_add; a number as one element under zero strides).
    fn scatter(x: &Buffer, lx: &Layout, dim: usize, index: &[i64], index_shape: &[usize], src: &Buffer, ls: &Layout,
        add: bool) -> Buffer => cpu::scatter::scatter, on x, src;
    /// `x` copied row-major with each `src` element joined by `reduce` into the element
    /// `index` names along `dim`, in index order (torch.scatter_reduce's kernel; "mean"
    /// sums, the op layer divides).
    fn scatter_reduce(x: &Buffer, lx: &Layout, dim: usize, index: &[i64], index_shape: &[usize], src: &Buffer,
        ls: &Layout, reduce: ScatterReduce) -> Buffer => cpu::scatter::scatter_reduce, on x, src;
    /// `x` copied row-major with slice `m` along `dim` of `src` (over `ls`) written at
    /// slice `index[m]` (checked), `+=` with `add`, in index order (index_copy /
    /// index_fill / index_add).
    fn index_write(x: &Buffer, lx: &Layout, dim: usize, index: &[i64], src: &Buffer, ls: &Layout,
        add: bool) -> Buffer => cpu::scatter::index_write, on x, src;
    /// `x` copied row-major with slice `m` along `dim` of `src` (over `ls`) joined by
    /// `reduce` into slice `index[m]` (checked), in index order (torch.index_reduce's
    /// kernel; "mean" sums, the op layer divides).
    fn index_reduce(x: &Buffer, lx: &Layout, dim: usize, index: &[i64], src: &Buffer, ls: &Layout,
        reduce: ScatterReduce) -> Buffer => cpu::scatter::index_reduce, on x, src;
    /// `x[before[i] + base[b] + after[j]] = values[i, b, j]` (`+=` with accumulate) in place,
    /// `values` read in the row-major order of `lv`; the offsets into x's buffer are the
    /// op layer's, checked. `false` where the backend has no such kernel (the op computes
    /// out of place).
    fn index_put_in_place(x: &mut Buffer, before: &[usize], base: &[usize], after: &[usize],
        values: &Buffer, lv: &Layout, accumulate: bool) -> bool => cpu::index::index_put_in_place, on x;

    // ---- data movement (flip, roll, triangles, masked_select)
    /// `x` copied row-major with the dims `flip` reversed and each `(dim, shift)` of `roll`
    /// rolled by `shift` places (`shift < size`; torch.flip, torch.roll); `None` where the
    /// kernel does not apply (the op copies with index_select / copy_into).
    fn reorder(x: &Buffer, lx: &Layout, flip: &[usize], roll: &[(usize, usize)]) -> Option<Buffer> => cpu::reorder::reorder, on x;
    /// tril (`upper`: triu) of the last two dims, row-major; `None` where it does not apply.
    fn triangle(x: &Buffer, lx: &Layout, diagonal: i64, upper: bool) -> Option<Buffer> => cpu::reorder::triangle, on x;
    /// tril_ / triu_: the elements of `ld` outside the triangle zeroed in place; `false`
    /// where the kernel does not apply (the op computes out of place).
    fn triangle_in_place(dst: &mut Buffer, ld: &Layout, diagonal: i64, upper: bool) -> bool => cpu::reorder::triangle_in_place, on dst;
    /// The elements of `x` where the bool `mask` is true (both over one shape), row-major,
    /// 1-D; `None` where it does not apply (the op indexes with the mask's coordinates).
    fn masked_select(x: &Buffer, lx: &Layout, mask: &Buffer, lm: &Layout) -> Option<Buffer> => cpu::compact::masked_select, on x, mask;

    // ---- products
    /// `C[b] = A[b]·B[b]` of 2-D or 3-D operands.
    fn bmm(a: &Buffer, la: &Layout, b: &Buffer, lb: &Layout) -> Buffer => cpu::matmul::bmm, on a, b;
    /// `c + A·B` (`c` laid out over the result); `None` for bool.
    fn addmm(c: &Buffer, lc: &Layout, a: &Buffer, la: &Layout, b: &Buffer, lb: &Layout) -> Option<Buffer> => cpu::matmul::addmm, on c, a, b;

    /// The sum of the diagonal of a matrix `(n, m)` as torch's CPU kernel adds it: in
    /// order, in float64 for floats (then rounded to x's dtype), wrapping int64 for
    /// integers; one element.
    fn trace(x: &Buffer, lx: &Layout) -> Buffer => cpu::linalg::trace, on x;

    // ---- factorizations and solves (backend::linalg, in float64; torch.linalg)
    /// `getrf` of every matrix of `x` `(*, m, n)`: the packed factors (x's dtype), the
    /// 1-based pivots (int64 `(*, min(m, n))`) and `info` (int64 `(*)`).
    fn lu_factor(x: &Buffer, lx: &Layout, pivot: bool) -> (Buffer, Buffer, Buffer) => cpu::linalg::lu_factor, on x;
    /// From square packed factors and pivots of one batch shape: each matrix's
    /// determinant, its sign and log |det| (`(*)`, the factors' dtype).
    fn lu_det(lu: &Buffer, llu: &Layout, piv: &Buffer, lp: &Layout) -> (Buffer, Buffer, Buffer) => cpu::linalg::lu_det, on lu, piv;
    /// `A X = B` (`Aᵀ X = B` with `transpose`) from A's packed factors and pivots, B
    /// `(*, n, k)` of their batch shape; the result in B's dtype.
    fn lu_solve(lu: &Buffer, llu: &Layout, piv: &Buffer, lp: &Layout, b: &Buffer, lb: &Layout,
        transpose: bool) -> Buffer => cpu::linalg::lu_solve, on lu, piv, b;
    /// `op(A) X = B` for the `upper` (or lower) triangle of every `A` `(*, n, n)` (unit
    /// diagonal with `unit`, `op` a transpose with `transpose`), B `(*, n, k)`.
    fn solve_triangular(a: &Buffer, la: &Layout, b: &Buffer, lb: &Layout, upper: bool, unit: bool,
        transpose: bool) -> Buffer => cpu::linalg::solve_triangular, on a, b;
    /// The lower Cholesky factor of every matrix `(*, n, n)` (its lower triangle read), and
    /// `info` (int64 `(*)`).
    fn cholesky(x: &Buffer, lx: &Layout) -> (Buffer, Buffer) => cpu::linalg::cholesky, on x;
    /// The matrix exponential of every matrix `(*, n, n)`, x's dtype.
    fn matrix_exp(x: &Buffer, lx: &Layout) -> Buffer => cpu::linalg::matrix_exp, on x;
    /// `(L Lᵀ)⁻¹` from Cholesky factors (`upper`: of `Uᵀ U`) and LAPACK's info per matrix.
    fn cholesky_inverse(x: &Buffer, lx: &Layout, upper: bool) -> (Buffer, Buffer) => cpu::linalg::cholesky_inverse, on x;
    /// `geqrf` of every matrix `(*, m, n)`: the packed factors (R and the Householder
    /// vectors, x's dtype) and `tau` (`(*, min(m, n))`), LAPACK's conventions.
    fn geqrf(x: &Buffer, lx: &Layout) -> (Buffer, Buffer) => cpu::linalg::geqrf, on x;
    /// `orgqr`: the first n columns of the product of the reflectors packed in every
    /// `a` `(*, m, n)` (m ≥ n) with the factors `tau` `(*, k)` (k ≤ n), a's dtype.
    fn householder_product(a: &Buffer, la: &Layout, tau: &Buffer, lt: &Layout) -> Buffer => cpu::linalg::householder_product, on a, tau;
    /// `ormqr`: Q·C (Qᵀ·C with `transpose`; C·Q, C·Qᵀ when not `left`), Q the product
    /// of the k reflectors packed in `a` `(*, mq, ·)` with `tau` `(*, k)`, C `c` of
    /// their batch shape; c's shape and dtype.
    fn ormqr(a: &Buffer, la: &Layout, tau: &Buffer, lt: &Layout, c: &Buffer, lc: &Layout, left: bool,
        transpose: bool) -> Buffer => cpu::linalg::ormqr, on a, tau, c;
    /// The Bunch-Kaufman `L·D·Lᵀ` (`sytrf`, lower) of every matrix `(*, n, n)`: LD (x's
    /// dtype), the 1-based pivots (int64 `(*, n)`) and `info` (int64 `(*)`).
    fn ldl_factor(x: &Buffer, lx: &Layout) -> (Buffer, Buffer, Buffer) => cpu::linalg::ldl_factor, on x;
    /// `A X = B` from LD `(*, n, n)` and its pivots `(*, n)` for B `(*, n, k)`, of one
    /// batch shape (`sytrs`); None for pivots out of range.
    fn ldl_solve(ld: &Buffer, lld: &Layout, piv: &Buffer, lp: &Layout, b: &Buffer, lb: &Layout) -> Option<Buffer> => cpu::linalg::ldl_solve, on ld, piv, b;

    // ---- factories
    fn arange(start: f64, step: f64, n: usize, dtype: DType) -> Option<Buffer> => cpu::creation::arange;
    fn linspace(start: f64, end: f64, n: usize, dtype: DType) -> Buffer => cpu::creation::linspace;
    fn eye(n: usize, m: usize, dtype: DType) -> Buffer => cpu::creation::eye;
    fn zeros(dtype: DType, n: usize) -> Buffer => cpu::creation::zeros;
    /// `n` elements whose values the caller will overwrite (`torch.empty`): whatever is
    /// cheapest to allocate (on the host, zeros from calloc, whose fresh pages are zero
    /// without a write; on a GPU, memory as the allocator hands it out).
    fn empty(dtype: DType, n: usize) -> Buffer => cpu::creation::empty;
    /// `n` copies of `v` (an integer stays exact beyond 2**53).
    fn full(dtype: DType, n: usize, v: crate::dtype::Scalar) -> Buffer => cpu::creation::full;
}

/// The backend a buffer's device has.
#[inline]
pub fn backend_of(buf: &Buffer) -> &'static dyn Backend {
    match buf {
        Buffer::Cuda(c) => cuda::backend::of(c.device()),
        _ if crate::replay::active() => &crate::replay::record::Rec,
        _ => &cpu::Cpu,
    }
}

/// Writes `src` (cast to `dst`'s dtype) into the elements `ld` names of `dst`, on `dst`'s
/// device; a source on another device is brought there first (torch's copy_ between
/// devices: a device tensor into a host one is copied down).
pub fn copy_into(dst: &mut Buffer, ld: &Layout, src: &Buffer, ls: &Layout) -> Result<()> {
    match (&*dst, src) {
        (Buffer::Cuda(_), _) => backend_of(dst).copy_into(dst, ld, src, ls),
        (_, Buffer::Cuda(_)) => {
            let h = host::read(src)?;
            cpu::Cpu.copy_into(dst, ld, &h, ls)
        }
        _ if crate::replay::active() => {
            crate::replay::record::backend().copy_into(dst, ld, src, ls)
        }
        _ => cpu::Cpu.copy_into(dst, ld, src, ls),
    }
}

/// The device backend of an op's operands, where one is on a device (a CPU scalar may
/// join a device op); `None`: all are host buffers.
#[inline]
pub fn device_backend_of_any(bufs: &[&Buffer]) -> Option<&'static dyn Backend> {
    bufs.iter().find_map(|b| match b {
        Buffer::Cuda(c) => Some(cuda::backend::of(c.device()) as &'static dyn Backend),
        _ => None,
    })
}

/// torch's device check of an op's operands (TensorIterator's, run before any kernel): one
/// device, except that one-element host buffers (CPU scalars, Python numbers made
/// tensors) may join an op on a device.
pub fn check_same_device(bufs: &[&Buffer]) -> Result<Device> {
    let on_device = bufs.iter().any(|b| matches!(b, Buffer::Cuda(_)));
    crate::device::common_device(
        bufs.iter()
            .filter(|b| !(on_device && !matches!(b, Buffer::Cuda(_)) && b.len() == 1))
            .map(|b| b.device()),
    )
}

/// The backend of `device` (where a factory allocates).
pub fn on(device: Device) -> Result<&'static dyn Backend> {
    match device {
        Device::Cpu if crate::replay::active() => Ok(&crate::replay::record::Rec),
        Device::Cpu => Ok(&cpu::Cpu),
        Device::Cuda(i) => {
            crate::replay::refuse("a CUDA tensor (CPU step replay only)")?;
            cuda::driver::device(i)?;
            Ok(cuda::backend::of(i))
        }
    }
}

/// The elementwise arithmetic the op table's derivatives (`df`) are written with. It is
/// implemented over tensors (`ops::unary`: recorded ops, so a backward can itself be
/// differentiated) and over single float elements (each backend's fused kernels), so one
/// formula gives both, with the same roundings.
pub trait Calc: Sized {
    fn mul(&self, o: &Self) -> Result<Self>;
    fn div(&self, o: &Self) -> Result<Self>;
    fn sub(&self, o: &Self) -> Result<Self>;
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
    /// `self`, with 0 where `m` is 0 (torch's `where(m == 0, 0, self)`).
    fn zero_where_zero(&self, m: &Self) -> Result<Self>;
}

/// The CPU's vector math build in use (`cpu::vmath`): "baseline", "avx2" or "avx512".
pub fn vmath_level() -> &'static str {
    cpu::vmath::level().name()
}

/// Whether torch would run its AVX-512 CPU kernels on this machine (ATen's CPU capability
/// "AVX512": AVX-512 F, BW, VL and DQ, and FMA). A few of torch's float32 results at
/// special values differ between its AVX-512 and AVX2 builds of one kernel (gelu of +∞ is
/// NaN in the first, +∞ in the second); rgrad gives the ones torch gives on the machine.
pub fn torch_cpu_avx512() -> bool {
    static AVX512: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVX512.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vl")
                && std::arch::is_x86_feature_detected!("avx512dq")
                && std::arch::is_x86_feature_detected!("fma")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}
