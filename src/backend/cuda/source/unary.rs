//! The op table's unary ops as CUDA kernels: the forward from one exhaustive match over
//! `UnaryOp`, the fused backward from each row's `df` itself, and polygamma and
//! logical_not. Semantics are the CPU's (`backend::cpu::unary`): NaN through relu and
//! sign, wrapping int64 negation and abs. The transcendental functions are libdevice's
//! (`expf`, `erfinvf`, `lgammaf`...), within the ulps of torch's CUDA kernels, which call
//! the same functions; the gamma family is the CPU's Cephes port (`special`).

use super::elementwise::kernel;
use super::{KernelSrc, lit, sfx};
use crate::Result;
use crate::backend::{Calc, UnaryOp};
use crate::dtype::DType;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// What the op table (`ops::table::unary_op_table!`) says of a row that the kernels need.
struct Row {
    /// torch's name (`log1p`): the kernel's name.
    name: &'static str,
    /// `ints: keep(..)`: int64 inputs keep their dtype (else they are promoted or refused
    /// before a kernel runs).
    keeps_ints: bool,
    /// `bool: None` on a row that keeps ints: a bool input passes unchanged (sign).
    bool_passes: bool,
}

macro_rules! table_rows {
    ($($name:ident $name_:ident $V:ident $node:literal {
        ints: $ints:ident $(($($iargs:tt)*))?, bool: $bool:expr,
        f: |$x:ident| $f:expr,
        df($saves:ident): |$g:ident $(, $s:ident)?| $df:expr,
        inplace: $inplace:ident $(($inode:literal))?,
        doc: $doc:literal,
    })*) => {
        fn row(op: UnaryOp) -> Row {
            match op {
                $(UnaryOp::$V => {
                    let keeps_ints = stringify!($ints) == "keep";
                    let refusal: Option<&str> = $bool;
                    Row { name: stringify!($name), keeps_ints, bool_passes: keeps_ints && refusal.is_none() }
                })*
            }
        }

        /// The row's `df` over CUDA values (`None` for rows that save nothing: their
        /// recorded backward is one op already, as on the CPU).
        fn fused_df(op: UnaryOp, g: &Cv, s: &Cv) -> Option<Result<Cv>> {
            match op {
                $(UnaryOp::$V => df_row!($saves, g, s, |$g $(, $s)?| $df),)*
            }
        }
    };
}

macro_rules! df_row {
    (none, $g:ident, $s:ident, |$gv:ident| $df:expr) => {{
        let _ = ($g, $s);
        None
    }};
    ($saves:ident, $g:ident, $s:ident, |$gv:ident, $sv:ident| $df:expr) => {{
        let df = |$gv: &Cv, $sv: &Cv| -> Result<Cv> { $df };
        Some(df($g, $s))
    }};
}

crate::ops::table::unary_op_table!(table_rows);

/// A unary op's CUDA forms: `float`, of the float value named `v` (the math is
/// overloaded, `rg_exp(float)` being `expf`, so one text serves float and double); `int`,
/// of an int64 `v`, for the rows that keep int64 inputs.
struct UnaryForm {
    float: String,
    int: Option<&'static str>,
}

/// Every op's forms: one exhaustive match, so a new op-table row fails to compile here
/// until it has a GPU formula.
fn unary_form(op: UnaryOp, v: &str) -> UnaryForm {
    let call = |f: &str| format!("rg_{f}({v})");
    let (float, int) = match op {
        UnaryOp::Neg => (format!("-{v}"), Some("rg_wneg(v)")),
        UnaryOp::Abs => (call("fabs"), Some("(v < 0 ? rg_wneg(v) : v)")),
        // torch's sign: (0 < x) - (x < 0), so +0 for both zeros and for NaN
        UnaryOp::Sign => (
            format!("(T)(({v} > (T)0) - ({v} < (T)0))"),
            Some("(i64)((v > 0) - (v < 0))"),
        ),
        // as torch's: NaN and -0 stay (both fail `< 0`)
        UnaryOp::Relu => (
            format!("({v} < (T)0 ? (T)0 : {v})"),
            Some("(v < 0 ? (i64)0 : v)"),
        ),
        UnaryOp::Exp => (call("exp"), None),
        UnaryOp::Log => (call("log"), None),
        UnaryOp::Log1p => (call("log1p"), None),
        UnaryOp::Expm1 => (call("expm1"), None),
        UnaryOp::Sqrt => (call("sqrt"), None),
        // libdevice's rsqrt (torch's CUDA kernel calls it too; the CPU's is 1 / sqrt)
        UnaryOp::Rsqrt => (call("rsqrt"), None),
        UnaryOp::Sin => (call("sin"), None),
        UnaryOp::Cos => (call("cos"), None),
        UnaryOp::Tan => (call("tan"), None),
        UnaryOp::Tanh => (call("tanh"), None),
        // torch's CUDA sigmoid: 1 / (1 + exp(-x))
        UnaryOp::Sigmoid => (format!("(T)1 / ((T)1 + rg_exp(-{v}))"), None),
        UnaryOp::Reciprocal => (format!("(T)1 / {v}"), None),
        UnaryOp::Sinh => (call("sinh"), None),
        UnaryOp::Cosh => (call("cosh"), None),
        UnaryOp::Asin => (call("asin"), None),
        UnaryOp::Acos => (call("acos"), None),
        UnaryOp::Atan => (call("atan"), None),
        UnaryOp::Asinh => (call("asinh"), None),
        UnaryOp::Acosh => (call("acosh"), None),
        UnaryOp::Atanh => (call("atanh"), None),
        UnaryOp::Erf => (call("erf"), None),
        UnaryOp::Erfc => (call("erfc"), None),
        UnaryOp::Erfinv => (call("erfinv"), None),
        UnaryOp::Lgamma => (call("lgamma"), None),
        // the CPU's Cephes port (special.rs), not torch's CUDA one: same poles and signs
        UnaryOp::Digamma => (format!("rg_digamma<T>({v})"), None),
        UnaryOp::Trunc => (call("trunc"), Some("v")),
        // x - trunc(x), as torch computes it
        UnaryOp::Frac => (format!("({v} - rg_trunc({v}))"), None),
        UnaryOp::Floor => (call("floor"), Some("v")),
        UnaryOp::Ceil => (call("ceil"), Some("v")),
        // to nearest, halves to even (torch's CUDA round calls nearbyint)
        UnaryOp::Round => (call("rint"), Some("v")),
        UnaryOp::Sgn => (
            format!("(T)(({v} > (T)0) - ({v} < (T)0))"),
            Some("(i64)((v > 0) - (v < 0))"),
        ),
        UnaryOp::Log2 => (call("log2"), None),
        UnaryOp::Log10 => (call("log10"), None),
        UnaryOp::Exp2 => (call("exp2"), None),
        // a product with the factor rounded to the dtype, as torch's
        UnaryOp::Deg2rad => (format!("({v} * (T)0.017453292519943295)"), None),
        UnaryOp::Rad2deg => (format!("({v} * (T)57.29577951308232)"), None),
        // torch's: sin(πx) / (πx), 1 at 0
        UnaryOp::Sinc => (
            format!(
                "({v} == (T)0 ? (T)1 : rg_sin((T)3.141592653589793 * {v}) / ((T)3.141592653589793 * {v}))"
            ),
            None,
        ),
    };
    UnaryForm { float, int }
}

const UNARY_PARAMS: &str = "RgLay lx, const T* __restrict__ x, T* __restrict__ y";

/// `y[i] = op(x[rg_at(i)])`; params `(i64 n, RgShape s, RgLay lx, const T* x, T* y)`.
/// Floats for every op; int64 for the rows that keep int64 inputs; bool where such a
/// row lets a bool pass unchanged (sign). `None` elsewhere: the op layer promotes or
/// refuses those inputs before any kernel runs.
pub fn unary(op: UnaryOp, dt: DType) -> Option<KernelSrc> {
    let row = row(op);
    let expr = match dt {
        DType::F32 | DType::F64 => unary_form(op, "v").float,
        DType::I64 if row.keeps_ints => unary_form(op, "v").int?.to_string(),
        DType::Bool if row.bool_passes => "v".to_string(),
        DType::I64 | DType::Bool => return None,
    };
    Some(kernel(
        format!("{}_{}", row.name, sfx(dt)),
        "",
        &[("T", dt)],
        UNARY_PARAMS,
        &format!("    const T v = x[rg_at(i, s, lx)];\n    y[i] = {expr};\n"),
    ))
}

/// `polygamma(n, x)` of a float tensor: params `(i64 n, RgShape s, RgLay lx, const T* x,
/// int order, T* y)`. `None` for other dtypes (the op layer promotes them).
pub fn polygamma(dt: DType) -> Option<KernelSrc> {
    if !dt.is_float() {
        return None;
    }
    Some(kernel(
        format!("polygamma_{}", sfx(dt)),
        "",
        &[("T", dt)],
        "RgLay lx, const T* __restrict__ x, int order, T* __restrict__ y",
        "    y[i] = rg_polygamma<T>(order, x[rg_at(i, s, lx)]);\n",
    ))
}

/// `!x` of a bool tensor, as the unary kernels (`logical_not_bool`). `None` for other
/// dtypes (the op layer converts them to bool first).
pub fn logical_not(dt: DType) -> Option<KernelSrc> {
    if dt != DType::Bool {
        return None;
    }
    Some(kernel(
        "logical_not_bool".into(),
        "",
        &[("T", dt)],
        UNARY_PARAMS,
        "    y[i] = !x[rg_at(i, s, lx)];\n",
    ))
}

/// The statements of a fused backward, written by [`Cv`]'s `Calc` methods.
struct Emit {
    lines: RefCell<String>,
    next: Cell<usize>,
}

/// A float value in a fused backward: the name of a C variable of type `T`.
#[derive(Clone)]
struct Cv {
    e: Rc<Emit>,
    v: String,
}

impl Cv {
    /// A new variable holding `expr`.
    fn let_(&self, expr: String) -> Result<Cv> {
        let k = self.e.next.get();
        self.e.next.set(k + 1);
        let v = format!("t{k}");
        self.e
            .lines
            .borrow_mut()
            .push_str(&format!("    const T {v} = {expr};\n"));
        Ok(Cv {
            e: self.e.clone(),
            v,
        })
    }
    /// The forward formula of a unary op (the kernel the recorded formula would run).
    fn op(&self, op: UnaryOp) -> Result<Cv> {
        self.let_(unary_form(op, &self.v).float)
    }
}

/// `T`'s value of the number `c` (rounded once, as the CPU's `T::from_f64`).
fn tc(c: f64) -> String {
    format!("((T){})", lit(c))
}

/// The table's `df` over single CUDA values: each step is the kernel the recorded formula
/// runs for it (a binary op, a number operand rounded to the dtype, a unary forward),
/// rounded on its own (`rg_mul` is `__fmul_rn`: never fused into an FMA), so the fused
/// kernel gives the recorded formula's bits.
impl Calc for Cv {
    fn mul(&self, o: &Self) -> Result<Self> {
        self.let_(format!("rg_mul({}, {})", self.v, o.v))
    }
    fn div(&self, o: &Self) -> Result<Self> {
        self.let_(format!("rg_div({}, {})", self.v, o.v))
    }
    fn sub(&self, o: &Self) -> Result<Self> {
        self.let_(format!("rg_sub({}, {})", self.v, o.v))
    }
    fn neg(&self) -> Result<Self> {
        self.op(UnaryOp::Neg)
    }
    fn add_s(&self, c: f64) -> Result<Self> {
        self.let_(format!("rg_add({}, {})", self.v, tc(c)))
    }
    fn mul_s(&self, c: f64) -> Result<Self> {
        self.let_(format!("rg_mul({}, {})", self.v, tc(c)))
    }
    fn rsub_s(&self, c: f64) -> Result<Self> {
        self.let_(format!("rg_sub({}, {})", tc(c), self.v))
    }
    fn pow_s(&self, c: f64) -> Result<Self> {
        // the binary kernel's powers of a number (`rg_pow_scalar`): small ones as products
        match c {
            1.0 => Ok(self.clone()),
            2.0 => self.mul(self),
            3.0 => self.mul(self)?.mul(self),
            -2.0 => {
                let sq = self.mul(self)?;
                self.let_(format!("rg_div((T)1, {})", sq.v))
            }
            _ => self.let_(format!("rg_pow({}, {})", self.v, tc(c))),
        }
    }
    fn sign(&self) -> Result<Self> {
        self.op(UnaryOp::Sign)
    }
    fn sin(&self) -> Result<Self> {
        self.op(UnaryOp::Sin)
    }
    fn cos(&self) -> Result<Self> {
        self.op(UnaryOp::Cos)
    }
    fn sinh(&self) -> Result<Self> {
        self.op(UnaryOp::Sinh)
    }
    fn cosh(&self) -> Result<Self> {
        self.op(UnaryOp::Cosh)
    }
    fn exp(&self) -> Result<Self> {
        self.op(UnaryOp::Exp)
    }
    fn rsqrt(&self) -> Result<Self> {
        self.op(UnaryOp::Rsqrt)
    }
    fn erfinv(&self) -> Result<Self> {
        self.op(UnaryOp::Erfinv)
    }
    fn digamma(&self) -> Result<Self> {
        self.op(UnaryOp::Digamma)
    }
    fn polygamma(&self, n: u32) -> Result<Self> {
        self.let_(format!("rg_polygamma<T>({n}, {})", self.v))
    }
    fn zeros_like(&self) -> Result<Self> {
        self.let_("(T)0".into())
    }
    fn unchanged(&self) -> Result<Self> {
        Ok(self.clone())
    }
    fn threshold_backward(&self, y: &Self) -> Result<Self> {
        // 0 where y <= 0, so a NaN passes the gradient (torch's threshold_backward)
        self.let_(format!("({} <= (T)0 ? (T)0 : {})", y.v, self.v))
    }
    fn tanh_backward(&self, y: &Self) -> Result<Self> {
        self.let_(format!(
            "rg_mul({}, rg_sub((T)1, rg_mul({}, {})))",
            self.v, y.v, y.v
        ))
    }
    fn zero_where_zero(&self, m: &Self) -> Result<Self> {
        self.let_(format!("({} == (T)0 ? (T)0 : {})", m.v, self.v))
    }
}

/// `g·f'(s)` of a table op in one pass, from its row's `df` (`s`: what the node saved,
/// the input or the output): params `(i64 n, RgShape s, RgLay lg, RgLay ls, const T* g,
/// const T* sv, T* out)`. `None` for non-float dtypes and for rows that save nothing, as
/// the CPU's `unary_backward`.
pub fn unary_backward(op: UnaryOp, dt: DType) -> Option<KernelSrc> {
    if !dt.is_float() {
        return None;
    }
    let e = Rc::new(Emit {
        lines: RefCell::new(String::new()),
        next: Cell::new(0),
    });
    let var = |v: &str| Cv {
        e: e.clone(),
        v: v.into(),
    };
    let r = fused_df(op, &var("gi"), &var("si"))?.ok()?;
    let body = format!(
        "    const T gi = g[rg_at(i, s, lg)];\n    const T si = sv[rg_at(i, s, ls)];\n{}    out[i] = {};\n",
        e.lines.borrow(),
        r.v
    );
    Some(kernel(
        format!("{}_bwd_{}", row(op).name, sfx(dt)),
        "",
        &[("T", dt)],
        "RgLay lg, RgLay ls, const T* __restrict__ g, const T* __restrict__ sv, T* __restrict__ out",
        &body,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_forms_are_the_table_rows_that_keep_ints() {
        for &op in UnaryOp::ALL {
            let r = row(op);
            assert_eq!(unary_form(op, "v").int.is_some(), r.keeps_ints, "{op:?}");
            assert_eq!(unary(op, DType::I64).is_some(), r.keeps_ints, "{op:?}");
            assert_eq!(unary(op, DType::Bool).is_some(), r.bool_passes, "{op:?}");
            assert!(unary(op, DType::F32).is_some() && unary(op, DType::F64).is_some());
        }
        assert!(unary(UnaryOp::Sign, DType::Bool).is_some());
        assert!(unary(UnaryOp::Neg, DType::Bool).is_none());
        assert!(unary(UnaryOp::Exp, DType::I64).is_none());
    }
    #[test]
    fn fused_backward_exists_where_the_cpus_does() {
        use crate::backend::cpu::unary::unary_backward as cpu;
        use crate::layout::Layout;
        use crate::storage::Buffer;
        let l = Layout::contiguous(&[2]);
        let b = Buffer::F64(vec![0.25, 0.5].into());
        for &op in UnaryOp::ALL {
            let want = cpu(op, &b, &l, &b, &l).is_some();
            assert_eq!(unary_backward(op, DType::F64).is_some(), want, "{op:?}");
            assert_eq!(unary_backward(op, DType::F32).is_some(), want, "{op:?}");
            assert!(unary_backward(op, DType::I64).is_none());
        }
    }
    #[test]
    fn fused_backward_rounds_each_step_of_df() {
        // tan: g·(y·y + 1), as three rounded steps
        let k = unary_backward(UnaryOp::Tan, DType::F32).unwrap();
        assert_eq!(k.name, "tan_bwd_f32");
        assert!(k.source.contains("const T t0 = rg_mul(si, si);"));
        assert!(k.source.contains("const T t1 = rg_add(t0, ((T)(1.0)));"));
        assert!(k.source.contains("const T t2 = rg_mul(gi, t1);"));
        assert!(k.source.contains("out[i] = t2;"));
        // digamma's backward calls polygamma(1): the gamma family comes with it
        let k = unary_backward(UnaryOp::Digamma, DType::F64).unwrap();
        assert!(k.source.contains("rg_polygamma<T>(1, si)") && k.source.contains("rg_zeta"));
        assert!(
            !unary(UnaryOp::Exp, DType::F32)
                .unwrap()
                .source
                .contains("rg_zeta")
        );
    }
}
