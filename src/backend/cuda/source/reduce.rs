//! Reduction and softmax kernel sources: one block per output (a grid-stride loop over
//! outputs), `RG_BLOCK` threads, each folding its strided share of the reduced elements
//! in order, then a fixed tree in shared memory: no atomics, the same bits on every run.

use super::{KernelSrc, cty, prelude, sfx, snake};
use crate::backend::ReduceOp;
use crate::dtype::DType;

/// A reduction's C pieces: the accumulator's C type (with `pre`, definitions it needs)
/// and the output dtype, and `init`, `load` (of an element `v`, the `r`-th reduced one),
/// `comb` (of accumulators `a`, `b`) and `fin` (of the total `a`, with the reduced count
/// `inner`) as expressions.
struct Fold {
    acc: &'static str,
    pre: &'static str,
    out: DType,
    init: &'static str,
    load: &'static str,
    comb: &'static str,
    fin: &'static str,
}

/// argmax / argmin's accumulator: the extreme so far and its index (`RG_NONE` before the
/// first element). NaN wins; of equal values (and of NaNs) the smaller index, so the tree
/// gives the first index whatever the order it meets them in, as the CPU's.
const ARG: &str = r#"
#define RG_NONE RG_I64_MAX
struct RgArg { T v; i64 i; };
template <bool MAX> __device__ __forceinline__ RgArg rg_arg_comb(RgArg a, RgArg b) {
  if (b.i == RG_NONE) return a;
  if (a.i == RG_NONE) return b;
  const bool an = rg_isnan(a.v), bn = rg_isnan(b.v);
  if (an || bn) return (an && bn) ? (a.i < b.i ? a : b) : (an ? a : b);
  if (MAX ? b.v > a.v : b.v < a.v) return b;
  if (MAX ? a.v > b.v : a.v < b.v) return a;
  return a.i < b.i ? a : b;
}
"#;

/// Every op's fold per dtype (one exhaustive match); `None` where the op layer never
/// asks (it refuses or converts first).
fn fold(op: ReduceOp, dt: DType) -> Option<Fold> {
    use DType::{Bool, F32, F64, I64};
    let float = dt.is_float();
    let plain = |acc: DType, out: DType, init, load, comb, fin| Fold {
        acc: cty(acc),
        pre: "",
        out,
        init,
        load,
        comb,
        fin,
    };
    // float32 accumulates in float and float64 in double (torch's CUDA accumulate
    // types; the CPU sums float32 in float64), int64 and bool in int64, wrapping
    let (acc, load) = match dt {
        F32 | F64 => (dt, "v"),
        I64 => (I64, "v"),
        Bool => (I64, "(i64)(v ? 1 : 0)"),
    };
    let sum = |fin| {
        let comb = if float { "a + b" } else { "rg_wadd(a, b)" };
        plain(acc, acc, "(Acc)0", load, comb, fin)
    };
    // NaN wins (a NaN accumulator stays: `b > NaN` is false); bool is any / all
    let extreme = |max: bool| -> Fold {
        let (init, comb) = match (dt, max) {
            (F32 | F64, true) => ("-rg_inf<Acc>()", "(rg_isnan(b) || b > a) ? b : a"),
            (F32 | F64, false) => ("rg_inf<Acc>()", "(rg_isnan(b) || b < a) ? b : a"),
            (I64, true) => ("RG_I64_MIN", "b > a ? b : a"),
            (I64, false) => ("RG_I64_MAX", "b < a ? b : a"),
            (Bool, true) => ("false", "a || b"),
            (Bool, false) => ("true", "a && b"),
        };
        plain(dt, dt, init, "v", comb, "a")
    };
    // the index (in row-major order over the reduced dims) of the first extreme; 0 for
    // an empty extent (the op layer refuses one first), as the CPU's
    let arg = |max: bool| Fold {
        acc: "RgArg",
        pre: ARG,
        out: I64,
        init: "RgArg{(T)0, RG_NONE}",
        load: "RgArg{v, r}",
        comb: if max {
            "rg_arg_comb<true>(a, b)"
        } else {
            "rg_arg_comb<false>(a, b)"
        },
        fin: "a.i == RG_NONE ? 0 : a.i",
    };
    // (NaN is nonzero)
    let truth = |all: bool| {
        let (init, comb) = if all {
            ("true", "a && b")
        } else {
            ("false", "a || b")
        };
        plain(Bool, Bool, init, "v != 0", comb, "a")
    };
    Some(match op {
        ReduceOp::Sum => sum("a"),
        // (NaN loaded as 0; integers and bools have none)
        ReduceOp::NanSum if float => Fold {
            load: "(rg_isnan(v) ? (Acc)0 : (Acc)v)",
            ..sum("a")
        },
        ReduceOp::NanSum => sum("a"),
        // the sum divided by the count in the accumulator's type (0 / 0 = NaN when empty);
        // torch refuses the mean of integers ("could not infer output dtype")
        ReduceOp::Mean if float => sum("a / (Acc)inner"),
        ReduceOp::Mean => return None,
        ReduceOp::Prod => Fold {
            init: "(Acc)1",
            comb: if float { "a * b" } else { "rg_wmul(a, b)" },
            ..sum("a")
        },
        ReduceOp::Max => extreme(true),
        ReduceOp::Min => extreme(false),
        ReduceOp::ArgMax => arg(true),
        ReduceOp::ArgMin => arg(false),
        ReduceOp::All => truth(true),
        ReduceOp::Any => truth(false),
    })
}

/// `op` over the inner extent of an input viewed as `[outer, inner]`: params `(i64 outer,
/// i64 inner, RgShape so, RgLay lo, RgShape si, RgLay li, const T* x, Tout* y)`, element
/// `(o, r)` at `rg_at(o, so, lo) + rg_at(r, si, li) - li.off`. One block per output,
/// `RG_BLOCK` threads. `None` for the mean of int64 or bool.
pub fn reduce(op: ReduceOp, dt: DType) -> Option<KernelSrc> {
    let f = fold(op, dt)?;
    let name = format!("reduce_{}_{}", snake(op), sfx(dt));
    let mut source = String::from(prelude());
    source.push_str(&format!(
        "typedef {t} T;\n{pre}typedef {acc} Acc;\ntypedef {to} To;\n\
         struct RgFold {{\n  \
         __device__ __forceinline__ Acc init() const {{ return {init}; }}\n  \
         __device__ __forceinline__ Acc load(T v, i64 r) const {{ return {load}; }}\n  \
         __device__ __forceinline__ Acc comb(Acc a, Acc b) const {{ return {comb}; }}\n  \
         __device__ __forceinline__ To fin(Acc a, i64 inner) const {{ return {fin}; }}\n}};\n",
        t = cty(dt),
        pre = f.pre,
        acc = f.acc,
        to = cty(f.out),
        init = f.init,
        load = f.load,
        comb = f.comb,
        fin = f.fin,
    ));
    source.push_str(&format!(
        r#"extern "C" __global__ void __launch_bounds__(RG_BLOCK) {name}(i64 outer, i64 inner, RgShape so, RgLay lo, RgShape si, RgLay li, const T* __restrict__ x, To* __restrict__ y) {{
  __shared__ Acc sh[RG_BLOCK];
  const RgFold f;
  const unsigned t = threadIdx.x;
  for (i64 o = blockIdx.x; o < outer; o += gridDim.x) {{
    const i64 base = rg_at(o, so, lo) - li.off;
    Acc acc = f.init();
    for (i64 r = t; r < inner; r += blockDim.x) acc = f.comb(acc, f.load(x[base + rg_at(r, si, li)], r));
    sh[t] = acc;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w >>= 1) {{
      if (t < w) sh[t] = f.comb(sh[t], sh[t + w]);
      __syncthreads();
    }}
    if (t == 0) y[o] = f.fin(sh[0], inner);
    __syncthreads();
  }}
}}
"#
    ));
    Some(KernelSrc { name, source })
}

/// The block-wide folds of the softmax kernels: every thread gets the result; `sh` is
/// free again on return.
const BLOCK_FOLDS: &str = r#"
struct RgSum { __device__ __forceinline__ T operator()(T a, T b) const { return a + b; } };
// NaN wins, as the CPU's max
struct RgMax { __device__ __forceinline__ T operator()(T a, T b) const { return (rg_isnan(b) || b > a) ? b : a; } };
template <typename F> __device__ __forceinline__ T rg_block_fold(T v, T* sh, F f) {
  const unsigned t = threadIdx.x;
  sh[t] = v;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w >>= 1) {
    if (t < w) sh[t] = f(sh[t], sh[t + w]);
    __syncthreads();
  }
  const T r = sh[0];
  __syncthreads();
  return r;
}
"#;

/// A row kernel of `rows x cols` (contiguous): `params`, then `body` for each row with
/// `row`, `t` (the thread) and `sh` (shared memory for `rg_block_fold`) in scope.
fn row_kernel(name: String, dt: DType, params: &str, body: &str) -> KernelSrc {
    let mut source = String::from(prelude());
    source.push_str(&format!("typedef {} T;\n", cty(dt)));
    source.push_str(BLOCK_FOLDS);
    source.push_str(&format!(
        "extern \"C\" __global__ void __launch_bounds__(RG_BLOCK) {name}(i64 rows, i64 cols, {params}) {{\n  \
         __shared__ T sh[RG_BLOCK];\n  \
         const unsigned t = threadIdx.x;\n  \
         for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {{\n{body}  }}\n}}\n"
    ));
    KernelSrc { name, source }
}

/// softmax (or log_softmax) along the last dim of a contiguous `[rows, cols]` float
/// input, one block per row: the max (NaN wins; not shifted when infinite, so such rows
/// are NaN, as torch's), the sum of `exp(x - max)` (in `T`, as torch's CUDA accumulate
/// type), then `exp(x - max) / sum` or `(x - max) - log(sum)`. Params `(i64 rows, i64
/// cols, const T* x, T* y)`. `None` for non-float dtypes.
pub fn softmax(dt: DType, log: bool) -> Option<KernelSrc> {
    if !dt.is_float() {
        return None;
    }
    let kind = if log { "log_softmax" } else { "softmax" };
    let (keep, write) = if log {
        (
            "",
            "    const T ls = rg_log(sum);\n    \
             for (i64 c = t; c < cols; c += blockDim.x) yr[c] = (xr[c] - m) - ls;\n",
        )
    } else {
        (
            "      yr[c] = e;\n",
            "    for (i64 c = t; c < cols; c += blockDim.x) yr[c] = yr[c] / sum;\n",
        )
    };
    let body = format!(
        "    const T* xr = x + row * cols;\n    T* yr = y + row * cols;\n    \
         T m = -rg_inf<T>();\n    \
         for (i64 c = t; c < cols; c += blockDim.x) m = RgMax()(m, xr[c]);\n    \
         m = rg_block_fold(m, sh, RgMax());\n    \
         T sum = (T)0;\n    \
         for (i64 c = t; c < cols; c += blockDim.x) {{\n      \
         const T e = rg_exp(xr[c] - m);\n{keep}      sum += e;\n    }}\n    \
         sum = rg_block_fold(sum, sh, RgSum());\n{write}"
    );
    Some(row_kernel(
        format!("{kind}_{}", sfx(dt)),
        dt,
        "const T* __restrict__ x, T* __restrict__ y",
        &body,
    ))
}

/// The backward of [`softmax`] along the last dim from `g` and the output `y`, one block
/// per row: `y·(g - Σ g·y)`, or log_softmax's `g - exp(y)·Σ g`. Params `(i64 rows, i64
/// cols, const T* g, const T* y, T* out)`. `None` for non-float dtypes.
pub fn softmax_backward(dt: DType, log: bool) -> Option<KernelSrc> {
    if !dt.is_float() {
        return None;
    }
    let kind = if log { "log_softmax" } else { "softmax" };
    let (term, write) = if log {
        ("gr[c]", "gr[c] - rg_exp(yr[c]) * sum")
    } else {
        ("gr[c] * yr[c]", "yr[c] * (gr[c] - sum)")
    };
    let body = format!(
        "    const T* gr = g + row * cols;\n    const T* yr = y + row * cols;\n    \
         T* outr = out + row * cols;\n    \
         T sum = (T)0;\n    \
         for (i64 c = t; c < cols; c += blockDim.x) sum += {term};\n    \
         sum = rg_block_fold(sum, sh, RgSum());\n    \
         for (i64 c = t; c < cols; c += blockDim.x) outr[c] = {write};\n"
    );
    Some(row_kernel(
        format!("{kind}_bwd_{}", sfx(dt)),
        dt,
        "const T* __restrict__ g, const T* __restrict__ y, T* __restrict__ out",
        &body,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reductions_cover_every_dtype_but_the_documented_gaps() {
        for dt in [DType::Bool, DType::I64, DType::F32, DType::F64] {
            for op in super::super::reduce_ops() {
                let got = reduce(op, dt).is_some();
                let want = match op {
                    ReduceOp::Mean => dt.is_float(),
                    _ => true,
                };
                assert_eq!(got, want, "{op:?} {dt:?}");
            }
        }
        let k = reduce(ReduceOp::Sum, DType::Bool).unwrap();
        assert_eq!(k.name, "reduce_sum_bool");
        assert!(
            k.source
                .contains("typedef bool T;\ntypedef i64 Acc;\ntypedef i64 To;")
        );
        let k = reduce(ReduceOp::Any, DType::F32).unwrap();
        assert!(
            k.source
                .contains("typedef float T;\ntypedef bool Acc;\ntypedef bool To;")
        );
    }
}
