//! Elementwise kernel sources (the op table's unary ops are in `unary`): binary ops of
//! two tensors or of a tensor and a number, the binary table's functions, casts, strided
//! copies, fill, where and clamp.
//!
//! Semantics are the CPU kernels' (`backend::cpu::{elementwise, binary}`): remainder with
//! the divisor's sign, floor division and integer division by zero as the CPU computes
//! them, wrapping int64 arithmetic, NaN-propagating extrema, torch's casts.

use super::{KernelSrc, cty, prelude, sfx, snake, special};
use crate::backend::{BinaryFn, BinaryOp};
use crate::dtype::DType;

/// An elementwise kernel `name(i64 n, RgShape s, params)`: the prelude, `helpers`, the
/// module's type names (`typedef float T;`), then a grid-stride loop running `body` for
/// each output index `i`. The gamma family's text is added where the body calls it.
pub(super) fn kernel(
    name: String,
    helpers: &str,
    types: &[(&str, DType)],
    params: &str,
    body: &str,
) -> KernelSrc {
    let mut source = String::from(prelude());
    source.push_str(helpers);
    if special::needed(body) {
        source.push_str(special::SOURCE);
    }
    for (alias, dt) in types {
        source.push_str(&format!("typedef {} {alias};\n", cty(*dt)));
    }
    source.push_str(&format!(
        "extern \"C\" __global__ void {name}(i64 n, RgShape s, {params}) {{\n  \
         for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; \
         i += (i64)blockDim.x * gridDim.x) {{\n{body}  }}\n}}\n"
    ));
    KernelSrc { name, source }
}

// ---- binary ops

/// The binary kernels' helpers: torch's (and the CPU's) definitions where C's operators
/// differ or are undefined (int64 overflow and division, NaN-propagating extrema,
/// Python's remainder, floor division), and the binary table's functions.
const ARITH: &str = r#"
// int64 division and remainder for a nonzero divisor, wrapping (MIN / -1 = MIN, MIN % -1 = 0)
__device__ __forceinline__ i64 rg_wdiv(i64 a, i64 b) { return b == -1 ? rg_wneg(a) : a / b; }
__device__ __forceinline__ i64 rg_wrem(i64 a, i64 b) { return b == -1 ? 0 : a % b; }
// a zero divisor gives 0 (the op layer refuses integer division by zero first)
__device__ __forceinline__ i64 rg_trunc_div(i64 a, i64 b) { return b == 0 ? 0 : rg_wdiv(a, b); }
__device__ __forceinline__ i64 rg_fmod(i64 a, i64 b) { return b == 0 ? 0 : rg_wrem(a, b); }
__device__ __forceinline__ i64 rg_remainder(i64 a, i64 b) {
  if (b == 0) return 0;
  const i64 m = rg_wrem(a, b);
  return (m != 0 && ((b < 0) != (m < 0))) ? m + b : m;
}
// ATen's calc_gcd / calc_lcm on int64, in two's complement (|MIN| is MIN)
__device__ __forceinline__ i64 rg_gcd(i64 a, i64 b) {
  a = a < 0 ? rg_wneg(a) : a;
  b = b < 0 ? rg_wneg(b) : b;
  while (a != 0) { const i64 c = a; a = rg_wrem(b, a); b = c; }
  return b;
}
__device__ __forceinline__ i64 rg_lcm(i64 a, i64 b) {
  const i64 g = rg_gcd(a, b);
  if (g == 0) return 0;
  const i64 m = (i64)((u64)rg_wdiv(a, g) * (u64)b);
  return m < 0 ? rg_wneg(m) : m;
}
__device__ __forceinline__ i64 rg_floor_div(i64 a, i64 b) {
  if (b == 0) return 0;
  const i64 q = rg_wdiv(a, b);
  return (rg_wrem(a, b) != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
// torch's powi: a negative exponent gives 0 but for bases 1 and -1; else square and
// multiply over every bit of the exponent, wrapping
__device__ __forceinline__ i64 rg_powi(i64 a, i64 b) {
  if (b < 0) {
    if (a == 1) return 1;
    if (a == -1) return (b % 2 == 0) ? 1 : -1;
    return 0;
  }
  u64 r = 1, base = (u64)a, e = (u64)b;
  while (e > 0) {
    if (e & 1) r *= base;
    base *= base;
    e >>= 1;
  }
  return (i64)r;
}
// NaN if either is NaN; of two equal values (0.0 and -0.0) the second
template <typename T> __device__ __forceinline__ T rg_max_nan(T a, T b) {
  const T m = a > b ? a : b;
  return (rg_isnan(a) | rg_isnan(b)) ? rg_nan<T>() : m;
}
template <typename T> __device__ __forceinline__ T rg_min_nan(T a, T b) {
  const T m = a < b ? a : b;
  return (rg_isnan(a) | rg_isnan(b)) ? rg_nan<T>() : m;
}
// fmod, then moved into the divisor's sign (Python's %)
template <typename T> __device__ __forceinline__ T rg_remainder(T a, T b) {
  const T m = rg_fmod(a, b);
  return (m != (T)0 && ((b < (T)0) != (m < (T)0))) ? m + b : m;
}
// torch's div_floor_floating: exact for values whose quotient is an integer
template <typename T> __device__ __forceinline__ T rg_floor_div(T a, T b) {
  if (b == (T)0) return a / b;
  const T m = rg_fmod(a, b);
  T div = (a - m) / b;
  if (m != (T)0 && ((b < (T)0) != (m < (T)0))) div -= (T)1;
  if (div == (T)0) return rg_copysign((T)0, a / b);
  const T f = rg_floor(div);
  return (div - f > (T)0.5) ? f + (T)1 : f;
}
// a ** c for a number c: torch's small integer powers as products, else pow
template <typename T> __device__ __forceinline__ T rg_pow_scalar(T a, T c) {
  if (c == (T)1) return a;
  if (c == (T)2) return a * a;
  if (c == (T)3) return a * a * a;
  if (c == (T)-2) return (T)1 / (a * a);
  return rg_pow(a, c);
}
// ln(e^a + e^b): the larger plus log1p(e^-|a - b|); an infinity of both signs' own value
template <typename T> __device__ __forceinline__ T rg_logaddexp(T a, T b) {
  if (a == b && rg_fabs(a) == rg_inf<T>()) return a;
  const T m = a < b ? b : a;
  return m + rg_log1p(rg_exp(-rg_fabs(a - b)));
}
// log2(2^a + 2^b): the larger plus log1p(2^-|a - b|) / ln 2; an infinity of both signs'
// own value (torch's)
template <typename T> __device__ __forceinline__ T rg_logaddexp2(T a, T b) {
  if (a == b && rg_fabs(a) == rg_inf<T>()) return a;
  const T m = a < b ? b : a;
  return m + rg_log1p(rg_exp2(-rg_fabs(a - b))) * (T)1.4426950408889634;
}
// a * 2^b: exact scaling for an integer b (C's ldexp), else a * exp2(b)
template <typename T> __device__ __forceinline__ T rg_ldexp(T a, T b) {
  if (rg_fabs(b) < rg_inf<T>() && rg_trunc(b) == b) {
    const T c = b < (T)-4200 ? (T)-4200 : (b > (T)4200 ? (T)4200 : b);
    return rg_scalbn(a, (int)c);
  }
  return a * rg_exp2(b);
}
// a * ln(b), +0 where a is 0 unless b is NaN
template <typename T> __device__ __forceinline__ T rg_xlogy(T a, T b) {
  if (rg_isnan(b)) return b;
  if (a == (T)0) return (T)0;
  return a * rg_log(b);
}
"#;

/// A binary op's CUDA forms over the values `p` and `q`, per dtype kind (`None`: the op
/// layer refuses or converts that dtype first), and whether the result is bool.
struct BinForm {
    float: Option<&'static str>,
    int: Option<&'static str>,
    boolean: Option<&'static str>,
    to_bool: bool,
}

/// Every op's forms: one exhaustive match (see [`unary_form`]).
fn binary_form(op: BinaryOp) -> BinForm {
    let arith = |float, int, boolean| BinForm {
        float: Some(float),
        int: Some(int),
        boolean,
        to_bool: false,
    };
    let test = |float, int, boolean| BinForm {
        float: Some(float),
        int: Some(int),
        boolean: Some(boolean),
        to_bool: true,
    };
    let bits = |int, boolean| BinForm {
        float: None, // refused with torch's message before any kernel
        int: Some(int),
        boolean: Some(boolean),
        to_bool: false,
    };
    let ints = |int| BinForm {
        float: None, // int64 only: the op layer refuses the rest first
        int: Some(int),
        boolean: None,
        to_bool: false,
    };
    // Bool arithmetic as the CPU's: add and maximum are `or`, mul and minimum `and`, pow
    // `p || !q` (x^0 = 1, x^1 = x); the others (sub, divisions) are refused or promoted
    // by the op layer.
    match op {
        BinaryOp::Add => arith("p + q", "rg_wadd(p, q)", Some("p || q")),
        BinaryOp::Sub => arith("p - q", "rg_wsub(p, q)", None),
        BinaryOp::Mul => arith("p * q", "rg_wmul(p, q)", Some("p && q")),
        // the CPU's int64 div (the op layer promotes true division; this is what it
        // computes if asked): truncating, 0 for a zero divisor
        BinaryOp::Div => arith("p / q", "rg_trunc_div(p, q)", None),
        BinaryOp::Pow => arith("rg_pow(p, q)", "rg_powi(p, q)", Some("p || !q")),
        BinaryOp::Maximum => arith("rg_max_nan(p, q)", "(p > q ? p : q)", Some("p || q")),
        BinaryOp::Minimum => arith("rg_min_nan(p, q)", "(p < q ? p : q)", Some("p && q")),
        BinaryOp::Remainder => arith("rg_remainder(p, q)", "rg_remainder(p, q)", None),
        BinaryOp::Fmod => arith("rg_fmod(p, q)", "rg_fmod(p, q)", None),
        BinaryOp::FloorDiv => arith("rg_floor_div(p, q)", "rg_floor_div(p, q)", None),
        BinaryOp::TruncDiv => arith("rg_trunc(p / q)", "rg_trunc_div(p, q)", None),
        // (NaN compares unequal to everything, as IEEE and the CPU)
        BinaryOp::Eq => test("p == q", "p == q", "p == q"),
        BinaryOp::Ne => test("p != q", "p != q", "p != q"),
        BinaryOp::Lt => test("p < q", "p < q", "p < q"),
        BinaryOp::Le => test("p <= q", "p <= q", "p <= q"),
        BinaryOp::Gt => test("p > q", "p > q", "p > q"),
        BinaryOp::Ge => test("p >= q", "p >= q", "p >= q"),
        // nonzero is true (NaN too)
        BinaryOp::LogicalAnd => test("(p != 0) && (q != 0)", "(p != 0) && (q != 0)", "p && q"),
        BinaryOp::LogicalOr => test("(p != 0) || (q != 0)", "(p != 0) || (q != 0)", "p || q"),
        BinaryOp::BitAnd => bits("p & q", "(p & q) != 0"),
        BinaryOp::BitOr => bits("p | q", "(p | q) != 0"),
        BinaryOp::BitXor => bits("p ^ q", "(p ^ q) != 0"),
        BinaryOp::Gcd => ints("rg_gcd(p, q)"),
        BinaryOp::Lcm => ints("rg_lcm(p, q)"),
    }
}

fn dtype_form(f: &BinForm, dt: DType) -> Option<&'static str> {
    match dt {
        DType::F32 | DType::F64 => f.float,
        DType::I64 => f.int,
        DType::Bool => f.boolean,
    }
}

/// `out[i] = expr(a[rg_at(i, la)], b[rg_at(i, lb)])`.
fn binary_kernel(name: String, dt: DType, expr: &str, to_bool: bool) -> KernelSrc {
    let to = if to_bool { DType::Bool } else { dt };
    kernel(
        name,
        ARITH,
        &[("T", dt), ("To", to)],
        "RgLay la, RgLay lb, const T* __restrict__ a, const T* __restrict__ b, To* __restrict__ out",
        &format!(
            "    const T p = a[rg_at(i, s, la)];\n    const T q = b[rg_at(i, s, lb)];\n    out[i] = {expr};\n"
        ),
    )
}

/// `out[i] = a op b`: params `(i64 n, RgShape s, RgLay la, RgLay lb, const T* a, const
/// T* b, Tout* out)`, `Tout` bool for comparisons and logical ops. `None` for the dtypes
/// the op layer refuses or converts first (bitwise floats, bool sub and divisions).
pub fn binary(op: BinaryOp, dt: DType) -> Option<KernelSrc> {
    let f = binary_form(op);
    let expr = dtype_form(&f, dt)?;
    Some(binary_kernel(
        format!("{}_{}", snake(op), sfx(dt)),
        dt,
        expr,
        f.to_bool,
    ))
}

/// `a op c` (or `c op a` when `scalar_first`) for a float tensor and a number `c`, the
/// number first rounded to the dtype (as a 0-d tensor of it would be), so the bits are
/// [`binary`]'s; a number power is the CPU's (small integer powers as products): params
/// `(i64 n, RgShape s, RgLay la, const T* a, double scalar, T* out)`. `None` where the
/// CPU's `binary_scalar` does not apply either (non-float dtypes, comparisons, logical
/// and bitwise ops).
pub fn binary_scalar(op: BinaryOp, dt: DType, scalar_first: bool) -> Option<KernelSrc> {
    let f = binary_form(op);
    if !dt.is_float() || f.to_bool {
        return None;
    }
    let expr = match op {
        BinaryOp::Pow if !scalar_first => "rg_pow_scalar(p, q)",
        _ => f.float?,
    };
    let (load, side) = if scalar_first {
        (
            "    const T p = (T)scalar;\n    const T q = a[rg_at(i, s, la)];\n",
            "rscalar",
        )
    } else {
        (
            "    const T p = a[rg_at(i, s, la)];\n    const T q = (T)scalar;\n",
            "scalar",
        )
    };
    Some(kernel(
        format!("{}_{side}_{}", snake(op), sfx(dt)),
        ARITH,
        &[("T", dt)],
        "RgLay la, const T* __restrict__ a, double scalar, T* __restrict__ out",
        &format!("{load}    out[i] = {expr};\n"),
    ))
}

/// What the binary table (`ops::table::binary_op_table!`) says of a row: torch's name,
/// and whether it computes int64 and bool (`dtypes: any`) or floats only.
fn fn_row(op: BinaryFn) -> (&'static str, bool) {
    macro_rules! rows {
        ($($name:ident $name_:ident $V:ident $node:literal {
            dtypes: $dt:ident $(($($dtargs:tt)*))?, $($rest:tt)*
        })*) => {
            match op {
                $(BinaryFn::$V => (stringify!($name), stringify!($dt) == "any"),)*
            }
        };
    }
    crate::ops::table::binary_op_table!(rows)
}

/// The binary table's `f` per op (one exhaustive match): the float form, and the int64
/// and bool ones of the rows that compute every dtype.
fn binary_fn_form(op: BinaryFn) -> BinForm {
    let float = |f| BinForm {
        float: Some(f),
        int: None,
        boolean: None,
        to_bool: false,
    };
    match op {
        // the same kernels as the arithmetic ops' (and so the same names)
        BinaryFn::Maximum => binary_form(BinaryOp::Maximum),
        BinaryFn::Minimum => binary_form(BinaryOp::Minimum),
        // libdevice's atan2f / hypotf, as torch's CUDA kernels (the CPU rounds float64's)
        BinaryFn::Atan2 => float("rg_atan2(p, q)"),
        BinaryFn::Hypot => float("rg_hypot(p, q)"),
        BinaryFn::Logaddexp => float("rg_logaddexp(p, q)"),
        BinaryFn::Xlogy => float("rg_xlogy(p, q)"),
        // NaN only where both are; `p` on a tie (the CPU's)
        BinaryFn::Fmax => BinForm {
            float: Some("(rg_isnan(p) || q > p ? q : p)"),
            int: Some("(p > q ? p : q)"),
            boolean: Some("p || q"),
            to_bool: false,
        },
        BinaryFn::Fmin => BinForm {
            float: Some("(rg_isnan(p) || q < p ? q : p)"),
            int: Some("(p < q ? p : q)"),
            boolean: Some("p && q"),
            to_bool: false,
        },
        BinaryFn::Copysign => float("rg_copysign(p, q)"),
        BinaryFn::Logaddexp2 => float("rg_logaddexp2(p, q)"),
        BinaryFn::Heaviside => BinForm {
            float: Some("(p == (T)0 ? q : (T)(p > (T)0))"),
            int: Some("(p == 0 ? q : (i64)(p > 0))"),
            boolean: Some("p || q"),
            to_bool: false,
        },
        BinaryFn::Nextafter => float("rg_nextafter(p, q)"),
        BinaryFn::Ldexp => float("rg_ldexp(p, q)"),
    }
}

/// The binary table's function `op`: params as [`binary`]'s. Floats for every row; int64
/// and bool for the rows that take them (maximum, minimum).
pub fn binary_fn(op: BinaryFn, dt: DType) -> Option<KernelSrc> {
    let f = binary_fn_form(op);
    let expr = dtype_form(&f, dt)?;
    Some(binary_kernel(
        format!("{}_{}", fn_row(op).0, sfx(dt)),
        dt,
        expr,
        f.to_bool,
    ))
}

// ---- casts, copies, fill, where, clamp

/// `v` (a C expression of `from`'s type) as `to`, with torch's (the CPU's) semantics:
/// float to int64 truncates (NaN and out of range give INT64_MIN, as torch's x86 build),
/// anything to bool is `!= 0` (NaN is true), bool is 0 or 1.
fn cast_expr(from: DType, to: DType, v: &str) -> String {
    use DType::{Bool, F32, F64, I64};
    match (from, to) {
        (Bool, Bool) | (I64, I64) | (F32, F32) | (F64, F64) => v.to_string(),
        (I64 | F32 | F64, Bool) => format!("({v} != 0)"),
        (Bool, I64 | F32 | F64) => format!("(({})({v} ? 1 : 0))", cty(to)),
        (F32 | F64, I64) => format!("rg_f2i((double){v})"),
        // (int64 and float64 to float32 round to nearest, as Rust's `as`)
        (I64 | F64, F32) | (I64 | F32, F64) => format!("(({}){v})", cty(to)),
    }
}

/// `y[i] = (To) x[rg_at(i)]`: params `(i64 n, RgShape s, RgLay lx, const Tfrom* x, Tto* y)`.
pub fn cast(from: DType, to: DType) -> KernelSrc {
    kernel(
        format!("cast_{}_{}", sfx(from), sfx(to)),
        "",
        &[("Tf", from), ("Tt", to)],
        "RgLay lx, const Tf* __restrict__ x, Tt* __restrict__ y",
        &format!(
            "    const Tf v = x[rg_at(i, s, lx)];\n    y[i] = {};\n",
            cast_expr(from, to, "v")
        ),
    )
}

/// The strided write `dst[rg_at(i, s, ld)] = (Tdst) src[rg_at(i, s, ls)]`: params
/// `(i64 n, RgShape s, RgLay ld, RgLay ls, Tdst* dst, const Tsrc* src)`.
pub fn copy_into(dst: DType, src: DType) -> KernelSrc {
    kernel(
        format!("copy_{}_{}", sfx(dst), sfx(src)),
        "",
        &[("Td", dst), ("Ts", src)],
        "RgLay ld, RgLay ls, Td* dst, const Ts* src",
        &format!(
            "    const Ts v = src[rg_at(i, s, ls)];\n    dst[rg_at(i, s, ld)] = {};\n",
            cast_expr(src, dst, "v")
        ),
    )
}

/// `dst[rg_at(i, s, ld)] = v`: params `(i64 n, RgShape s, RgLay ld, T* dst, T v)`.
pub fn fill(dt: DType) -> KernelSrc {
    kernel(
        format!("fill_{}", sfx(dt)),
        "",
        &[("T", dt)],
        "RgLay ld, T* dst, T v",
        "    dst[rg_at(i, s, ld)] = v;\n",
    )
}

/// `where(cond, a, b)`: params `(i64 n, RgShape s, RgLay lc, RgLay la, RgLay lb, const
/// bool* c, const T* a, const T* b, T* out)`.
pub fn where_(dt: DType) -> KernelSrc {
    kernel(
        format!("where_{}", sfx(dt)),
        "",
        &[("T", dt)],
        "RgLay lc, RgLay la, RgLay lb, const bool* __restrict__ c, const T* __restrict__ a, \
         const T* __restrict__ b, T* __restrict__ out",
        "    out[i] = c[rg_at(i, s, lc)] ? a[rg_at(i, s, la)] : b[rg_at(i, s, lb)];\n",
    )
}

/// `clamp(x, lo, hi)` with optional bounds, as the CPU's: `min(max(x, lo), hi)` (so `hi`
/// wins when `lo > hi`), NaN stays NaN, and a NaN bound makes every float element NaN;
/// int64 bounds are the numbers converted as Rust's `as` (saturating). Params `(i64 n,
/// RgShape s, RgLay lx, const T* x, int has_lo, double lo, int has_hi, double hi, T* y)`.
/// `None` for bool (the op layer refuses it).
pub fn clamp(dt: DType) -> Option<KernelSrc> {
    let body = match dt {
        DType::F32 | DType::F64 => {
            "    if ((has_lo && rg_isnan(lo)) || (has_hi && rg_isnan(hi))) {\n      \
             y[i] = rg_nan<T>();\n      continue;\n    }\n    \
             const T l = has_lo ? (T)lo : -rg_inf<T>();\n    \
             const T h = has_hi ? (T)hi : rg_inf<T>();\n"
        }
        DType::I64 => {
            "    const T l = has_lo ? rg_f2i_sat(lo) : RG_I64_MIN;\n    \
             const T h = has_hi ? rg_f2i_sat(hi) : RG_I64_MAX;\n"
        }
        DType::Bool => return None,
    };
    Some(kernel(
        format!("clamp_{}", sfx(dt)),
        "",
        &[("T", dt)],
        "RgLay lx, const T* __restrict__ x, int has_lo, double lo, int has_hi, double hi, \
         T* __restrict__ y",
        &format!(
            "{body}    const T v = x[rg_at(i, s, lx)];\n    const T a = v < l ? l : v;\n    \
             y[i] = a > h ? h : a;\n"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_table_int_forms_are_its_any_rows() {
        for &op in BinaryFn::ALL {
            let f = binary_fn_form(op);
            let any = fn_row(op).1;
            assert_eq!(f.int.is_some(), any, "{op:?}");
            assert_eq!(f.boolean.is_some(), any, "{op:?}");
        }
    }
    #[test]
    fn casts_name_both_dtypes() {
        let k = cast(DType::F32, DType::I64);
        assert_eq!(k.name, "cast_f32_i64");
        assert!(k.source.contains("y[i] = rg_f2i((double)v);"));
        assert_eq!(
            cast_expr(DType::Bool, DType::F64, "v"),
            "((double)(v ? 1 : 0))"
        );
        assert_eq!(binary(BinaryOp::Lt, DType::F64).unwrap().name, "lt_f64");
        assert_eq!(
            binary_scalar(BinaryOp::Sub, DType::F32, true).unwrap().name,
            "sub_rscalar_f32"
        );
        assert!(binary(BinaryOp::BitAnd, DType::F32).is_none());
        assert!(binary_scalar(BinaryOp::Eq, DType::F32, false).is_none());
    }
}
