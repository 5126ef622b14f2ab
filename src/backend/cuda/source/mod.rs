//! CUDA C sources of the device kernels, generated from Rust: one module per (op, dtype),
//! each returned with its kernel's name, so the launcher never guesses either.
//!
//! The per-op formulas come from exhaustive `match`es over the backend's op ids
//! (`UnaryOp`, `BinaryOp`, `BinaryFn`, `ReduceOp`), and the fused unary backward from the
//! op table's `df` itself (instantiated over a `Calc` that writes CUDA statements), so a
//! new op-table row fails to compile until it has a GPU formula.
//!
//! The ABI every kernel shares (the launcher depends on it exactly):
//! - every module starts with [`prelude`]: `RgShape` (the output's shape, row-major) and
//!   `RgLay` (an operand: element offset and strides in elements, 0 = broadcast), and
//!   `rg_at(i, shape, lay)`, the element of an operand that output index `i` reads
//!   (mirrored by [`rg_at`] here, with its test);
//! - outputs are fresh contiguous buffers written at index `i`; elementwise kernels loop
//!   over `i64 i` in `[0, n)` with a grid-stride loop, so any launch size works;
//! - reductions and softmax run one block per output row (a grid-stride loop over rows),
//!   with [`BLOCK`] threads (any power of two up to it works), and fold in a fixed order
//!   (each thread its strided share, then a fixed tree in shared memory): the same bits
//!   on every run;
//! - dtypes: `float` (F32), `double` (F64), `long long` (I64), `bool` (Bool, one byte).
//!
//! Floating-point contraction (`--fmad`, NVRTC's default, as torch's CUDA build) is left
//! on for the forward formulas, which torch's kernels also contract; the fused backward
//! rounds every step (`__fmul_rn` and friends) so that it gives the bits of the recorded
//! formula, whose steps are separate kernels.

mod elementwise;
mod index;
mod reduce;
mod special;
mod unary;

pub use elementwise::{binary, binary_fn, binary_scalar, cast, clamp, copy_into, fill, where_};
pub use index::gather;
pub use reduce::{reduce, softmax, softmax_backward};
pub use unary::{logical_not, polygamma, unary, unary_backward};

use crate::backend::{BinaryFn, BinaryOp, ReduceOp, UnaryOp};
use crate::dtype::DType;

/// The most dims a kernel's shape and layouts take (`RG_MAXD`); the launcher collapses
/// or refuses more.
pub const MAX_DIMS: usize = 10;

/// Threads per block of the reductions and softmax (`RG_BLOCK`): the size of their
/// shared-memory tree. Launch them with exactly this many (a smaller power of two also
/// works; more does not).
pub const BLOCK: u32 = 256;

/// One kernel: its CUDA C module and the name of its `extern "C" __global__` function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSrc {
    pub name: String,
    pub source: String,
}

/// The output shape a kernel walks (C's `RgShape`: `int ndim; long long size[10]`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RgShape {
    pub ndim: i32,
    pub size: [i64; MAX_DIMS],
}

/// One operand's placement (C's `RgLay`): element offset and strides (0 = broadcast).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RgLay {
    pub off: i64,
    pub st: [i64; MAX_DIMS],
}

// SAFETY: both are `#[repr(C)]` plain data (integers only, no pointers or padding that
// the kernel reads), laid out as the prelude's C structs (checked by a test).
unsafe impl cudarc::driver::DeviceRepr for RgShape {}
// SAFETY: as above.
unsafe impl cudarc::driver::DeviceRepr for RgLay {}

impl RgShape {
    /// `None` for more than [`MAX_DIMS`] dims or a size beyond `i64`.
    pub fn new(shape: &[usize]) -> Option<Self> {
        if shape.len() > MAX_DIMS {
            return None;
        }
        let mut size = [1i64; MAX_DIMS];
        for (d, &n) in size.iter_mut().zip(shape) {
            *d = i64::try_from(n).ok()?;
        }
        Some(RgShape {
            ndim: shape.len() as i32,
            size,
        })
    }
    pub fn numel(&self) -> i64 {
        self.size[..self.ndim as usize].iter().product()
    }
}

impl RgLay {
    /// `None` for more than [`MAX_DIMS`] strides or a value beyond `i64`.
    pub fn new(offset: usize, strides: &[usize]) -> Option<Self> {
        if strides.len() > MAX_DIMS {
            return None;
        }
        let mut st = [0i64; MAX_DIMS];
        for (d, &s) in st.iter_mut().zip(strides) {
            *d = i64::try_from(s).ok()?;
        }
        Some(RgLay {
            off: i64::try_from(offset).ok()?,
            st,
        })
    }
}

/// The element of an operand laid out by `l` that linear (row-major) output index `i`
/// of shape `s` reads: the prelude's `rg_at`, step for step.
pub fn rg_at(mut i: i64, s: &RgShape, l: &RgLay) -> i64 {
    let mut o = l.off;
    for d in (0..s.ndim as usize).rev() {
        let sz = s.size[d];
        if sz != 1 {
            let q = i / sz;
            o += (i - q * sz) * l.st[d];
            i = q;
        }
    }
    o
}

/// The text every module starts with: the ABI's structs and `rg_at`, dtype-overloaded
/// math (`rg_exp(float)` is `expf`), correctly rounded arithmetic that is never
/// contracted (`rg_mul`...), wrapping int64 arithmetic, and the casts' helpers.
pub fn prelude() -> &'static str {
    PRELUDE
}

const PRELUDE: &str = r#"// rgrad CUDA kernel (generated by src/backend/cuda/source)
#define RG_MAXD 10
#define RG_BLOCK 256
typedef long long i64;
typedef unsigned long long u64;
struct RgShape { int ndim; i64 size[RG_MAXD]; };
struct RgLay { i64 off; i64 st[RG_MAXD]; };

// The element of an operand laid out by `l` that linear output index `i` reads.
__device__ __forceinline__ i64 rg_at(i64 i, const RgShape& s, const RgLay& l) {
  // one dim after merging (every contiguous operand): no division (64-bit division is
  // dozens of instructions on a GPU)
  if (s.ndim <= 1) return l.off + i * l.st[0];
  i64 o = l.off;
#pragma unroll
  for (int d = RG_MAXD - 1; d >= 0; --d) {
    if (d < s.ndim && s.size[d] != 1) {
      const i64 sz = s.size[d];
      const i64 q = i / sz;
      o += (i - q * sz) * l.st[d];
      i = q;
    }
  }
  return o;
}

#define RG_F1(F) \
  __device__ __forceinline__ float rg_##F(float x) { return F##f(x); } \
  __device__ __forceinline__ double rg_##F(double x) { return F(x); }
#define RG_F2(F) \
  __device__ __forceinline__ float rg_##F(float x, float y) { return F##f(x, y); } \
  __device__ __forceinline__ double rg_##F(double x, double y) { return F(x, y); }
RG_F1(fabs) RG_F1(exp) RG_F1(log) RG_F1(log1p) RG_F1(expm1) RG_F1(sqrt) RG_F1(rsqrt)
RG_F1(sin) RG_F1(cos) RG_F1(tan) RG_F1(tanh) RG_F1(sinh) RG_F1(cosh) RG_F1(asin)
RG_F1(acos) RG_F1(atan) RG_F1(asinh) RG_F1(acosh) RG_F1(atanh) RG_F1(erf) RG_F1(erfc)
RG_F1(erfinv) RG_F1(lgamma) RG_F1(trunc) RG_F1(floor) RG_F1(ceil) RG_F1(rint)
RG_F1(log2) RG_F1(log10) RG_F1(exp2)
RG_F2(pow) RG_F2(fmod) RG_F2(atan2) RG_F2(hypot) RG_F2(copysign) RG_F2(nextafter)
__device__ __forceinline__ float rg_scalbn(float x, int n) { return scalbnf(x, n); }
__device__ __forceinline__ double rg_scalbn(double x, int n) { return scalbn(x, n); }

// IEEE operations rounded to nearest, never fused into an FMA.
__device__ __forceinline__ float rg_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double rg_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float rg_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double rg_sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float rg_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double rg_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float rg_div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double rg_div(double a, double b) { return __ddiv_rn(a, b); }

template <typename T> __device__ __forceinline__ T rg_inf();
template <> __device__ __forceinline__ float rg_inf<float>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double rg_inf<double>() { return __longlong_as_double(0x7ff0000000000000LL); }
// the canonical quiet NaN (Rust's f32::NAN / f64::NAN)
template <typename T> __device__ __forceinline__ T rg_nan();
template <> __device__ __forceinline__ float rg_nan<float>() { return __int_as_float(0x7fc00000); }
template <> __device__ __forceinline__ double rg_nan<double>() { return __longlong_as_double(0x7ff8000000000000LL); }
template <typename T> __device__ __forceinline__ bool rg_isnan(T x) { return x != x; }

// int64 arithmetic that wraps (two's complement), as Rust's wrapping_* and torch's.
#define RG_I64_MIN ((i64)0x8000000000000000ULL)
#define RG_I64_MAX ((i64)0x7fffffffffffffffULL)
__device__ __forceinline__ i64 rg_wadd(i64 a, i64 b) { return (i64)((u64)a + (u64)b); }
__device__ __forceinline__ i64 rg_wsub(i64 a, i64 b) { return (i64)((u64)a - (u64)b); }
__device__ __forceinline__ i64 rg_wmul(i64 a, i64 b) { return (i64)((u64)a * (u64)b); }
__device__ __forceinline__ i64 rg_wneg(i64 a) { return (i64)(0ULL - (u64)a); }

// A float to int64 as torch's x86 build converts it: truncated toward zero; NaN and
// values outside the int64 range give INT64_MIN.
__device__ __forceinline__ i64 rg_f2i(double x) {
  return (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? (i64)x : RG_I64_MIN;
}
// A float to int64 as Rust's `as` converts it: saturating, NaN gives 0.
__device__ __forceinline__ i64 rg_f2i_sat(double x) {
  if (x != x) return 0;
  if (x >= 9223372036854775808.0) return RG_I64_MAX;
  if (x < -9223372036854775808.0) return RG_I64_MIN;
  return (i64)x;
}
"#;

/// The C type of a dtype's elements.
pub(crate) fn cty(dt: DType) -> &'static str {
    match dt {
        DType::Bool => "bool",
        DType::I64 => "i64",
        DType::F32 => "float",
        DType::F64 => "double",
    }
}

/// The dtype's suffix in kernel names (`exp_f32`).
pub(crate) fn sfx(dt: DType) -> &'static str {
    match dt {
        DType::Bool => "bool",
        DType::I64 => "i64",
        DType::F32 => "f32",
        DType::F64 => "f64",
    }
}

/// `LogicalAnd` -> `logical_and` (an op id's Debug name as a kernel-name part).
pub(crate) fn snake(id: impl std::fmt::Debug) -> String {
    let mut out = String::new();
    for (k, c) in format!("{id:?}").chars().enumerate() {
        if c.is_ascii_uppercase() {
            if k > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A C literal of exactly `c` (a double; the caller casts it to its type, which rounds
/// once, as Rust's `T::from_f64`).
pub(crate) fn lit(c: f64) -> String {
    if c.is_nan() {
        "__longlong_as_double(0x7ff8000000000000LL)".into()
    } else if c.is_infinite() {
        format!(
            "{}__longlong_as_double(0x7ff0000000000000LL)",
            if c < 0.0 { "-" } else { "" }
        )
    } else {
        // (Rust's shortest round-trip form: "1.0", "0.8862269254527579", "1e300")
        format!("({c:?})")
    }
}

const DTYPES: [DType; 4] = [DType::Bool, DType::I64, DType::F32, DType::F64];

/// Every `ReduceOp`, in declaration order. (The enum has no list of its own; each arm
/// names the next variant, so a new one fails to compile here until it joins the list.)
fn reduce_ops() -> Vec<ReduceOp> {
    use ReduceOp::*;
    let next = |op: &ReduceOp| match op {
        Sum => Some(NanSum),
        NanSum => Some(Mean),
        Mean => Some(Prod),
        Prod => Some(Max),
        Max => Some(Min),
        Min => Some(ArgMax),
        ArgMax => Some(ArgMin),
        ArgMin => Some(All),
        All => Some(Any),
        Any => None,
    };
    std::iter::successors(Some(Sum), next).collect()
}

/// Every `BinaryOp`, in declaration order (as [`reduce_ops`]).
fn binary_ops() -> Vec<BinaryOp> {
    use BinaryOp::*;
    let next = |op: &BinaryOp| match op {
        Add => Some(Sub),
        Sub => Some(Mul),
        Mul => Some(Div),
        Div => Some(Pow),
        Pow => Some(Maximum),
        Maximum => Some(Minimum),
        Minimum => Some(Remainder),
        Remainder => Some(Fmod),
        Fmod => Some(FloorDiv),
        FloorDiv => Some(TruncDiv),
        TruncDiv => Some(Eq),
        Eq => Some(Ne),
        Ne => Some(Lt),
        Lt => Some(Le),
        Le => Some(Gt),
        Gt => Some(Ge),
        Ge => Some(LogicalAnd),
        LogicalAnd => Some(LogicalOr),
        LogicalOr => Some(BitAnd),
        BitAnd => Some(BitOr),
        BitOr => Some(BitXor),
        BitXor => Some(Gcd),
        Gcd => Some(Lcm),
        Lcm => None,
    };
    std::iter::successors(Some(Add), next).collect()
}

/// Every kernel source the backend can ask for: each op × dtype combination (and
/// scalar side, cast pair, softmax kind) whose generator returns `Some`.
pub fn all() -> Vec<KernelSrc> {
    let mut out = Vec::new();
    for &dt in &DTYPES {
        for &op in UnaryOp::ALL {
            out.extend(unary(op, dt));
            out.extend(unary_backward(op, dt));
        }
        for op in binary_ops() {
            out.extend(binary(op, dt));
            for first in [false, true] {
                out.extend(binary_scalar(op, dt, first));
            }
        }
        for &op in BinaryFn::ALL {
            out.extend(binary_fn(op, dt));
        }
        for &to in &DTYPES {
            out.push(cast(dt, to));
            out.push(copy_into(dt, to));
        }
        out.push(fill(dt));
        out.push(where_(dt));
        out.push(gather(dt));
        out.extend(clamp(dt));
        out.extend(polygamma(dt));
        out.extend(logical_not(dt));
        for op in reduce_ops() {
            out.extend(reduce(op, dt));
        }
        for log in [false, true] {
            out.extend(softmax(dt, log));
            out.extend(softmax_backward(dt, log));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::strided::for_each_offset;
    use crate::layout::Layout;

    #[test]
    fn rg_at_walks_every_layout_as_the_cpu_does() {
        // contiguous, transposed, broadcast (stride 0), sliced with an offset, size-1
        // dims, 0-d, and the most dims the ABI takes
        let base = Layout::contiguous(&[2, 3, 4]);
        let cases = vec![
            base.clone(),
            base.transpose(0, 2).unwrap(),
            Layout::contiguous(&[3, 1])
                .expand(&[2, 3, 5])
                .unwrap()
                .transpose(1, 2)
                .unwrap(),
            base.narrow(2, 1, 2).unwrap().narrow(1, 1, 2).unwrap(),
            Layout::contiguous(&[1, 4, 1]),
            Layout::contiguous(&[]),
            Layout::contiguous(&[2, 1, 2, 1, 2, 1, 2, 1, 2, 3]),
        ];
        for l in cases {
            let s = RgShape::new(&l.shape).unwrap();
            let lay = RgLay::new(l.offset, &l.strides).unwrap();
            let mut want = Vec::new();
            for_each_offset(&l.shape, &l.strides, l.offset, |o| want.push(o as i64));
            let got: Vec<i64> = (0..s.numel()).map(|i| rg_at(i, &s, &lay)).collect();
            assert_eq!(got, want, "{l:?}");
        }
        assert!(RgShape::new(&[1; 11]).is_none() && RgLay::new(0, &[1; 11]).is_none());
    }

    #[test]
    fn abi_structs_have_the_c_layout() {
        // int (4) + padding (4) + 10 x 8; long long (8) + 10 x 8
        assert_eq!(std::mem::size_of::<RgShape>(), 88);
        assert_eq!(std::mem::align_of::<RgShape>(), 8);
        assert_eq!(std::mem::size_of::<RgLay>(), 88);
        assert!(PRELUDE.contains(&format!("#define RG_MAXD {MAX_DIMS}")));
        assert!(PRELUDE.contains(&format!("#define RG_BLOCK {BLOCK}")));
    }

    #[test]
    fn op_lists_name_each_variant_once() {
        let mut names: Vec<String> = binary_ops().into_iter().map(snake).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 24);
        let mut names: Vec<String> = reduce_ops().into_iter().map(snake).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 10);
    }

    #[test]
    fn every_kernel_is_named_once_and_defined_in_its_source() {
        let all = all();
        let mut by_name = std::collections::HashMap::new();
        for k in &all {
            assert!(k.source.starts_with(PRELUDE), "{}", k.name);
            let def = format!(" {}(", k.name);
            assert!(k.source.contains(&def), "{}: no `{def}`", k.name);
            assert_eq!(k.source.matches("extern \"C\" __global__ void").count(), 1);
            // a name names one source (binary's and the binary table's maximum are the
            // same kernel)
            if let Some(prev) = by_name.insert(k.name.clone(), &k.source) {
                assert_eq!(prev, &k.source, "{} names two sources", k.name);
            }
        }
        assert!(all.len() > 300, "{}", all.len());
    }

    #[test]
    fn literals_are_exact() {
        assert_eq!(lit(1.0), "(1.0)");
        assert_eq!(lit(-0.5), "(-0.5)");
        assert_eq!(
            lit(std::f64::consts::FRAC_2_SQRT_PI),
            "(1.1283791670955126)"
        );
        assert!(lit(f64::NEG_INFINITY).starts_with('-'));
        assert_eq!(snake(BinaryOp::LogicalAnd), "logical_and");
        assert_eq!(snake(UnaryOp::Log1p), "log1p");
    }
}
