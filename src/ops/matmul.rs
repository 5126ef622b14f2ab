//! Matrix products: mm, bmm, dot, and matmul's 1-D/2-D/batched-broadcast dispatch.

use super::elementwise::{Saver, grad0};
use super::{apply, new_tensor};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::dtype::{DType, ResultType, Scalar};
use crate::ops::*;
use crate::shape::{Shape, broadcast_shapes};
use crate::tensor::Tensor;
use crate::{Error, Result};
use std::borrow::Cow;

fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "float",
        DType::F64 => "double",
        DType::I64 => "long int",
        DType::Bool => "bool",
    }
}

/// torch's dtype checks of a product: equal dtypes, and no bool kernel (`kernel` names
/// it) unless the product has nothing to multiply (`trivial`: an empty result or inner
/// dim, which torch returns before it dispatches on the dtype).
fn same_dtype(a: &Tensor, b: &Tensor, what: &str, kernel: &str, trivial: bool) -> Result<()> {
    let (da, db) = (a.dtype(), b.dtype());
    if da != db {
        return Err(Error::runtime(format!(
            "expected {what} to have the same dtype, but got: {} != {}",
            dtype_name(da),
            dtype_name(db)
        )));
    }
    if da == DType::Bool && !trivial {
        return Err(Error::not_implemented(format!(
            "\"{kernel}\" not implemented for 'Bool'"
        )));
    }
    Ok(())
}

/// A product of these shapes (`[.., m, k]`, `[.., k, n]`) multiplies nothing.
fn trivial_product(sa: &[usize], sb: &[usize]) -> bool {
    let k = sa[sa.len() - 1];
    k == 0 || sa.contains(&0) || sb.contains(&0)
}

/// `torch.mv(mat, vec)`: torch's argument checks, then the matrix-vector product (matmul
/// alone would also take batched or 1-D left operands).
pub fn mv(mat: &Tensor, vec: &Tensor) -> Result<Tensor> {
    if mat.ndim() == 0 {
        return Err(Error::index(
            "Dimension specified as 0 but tensor has no dimensions",
        ));
    }
    if mat.ndim() != 2 || vec.ndim() != 1 {
        return Err(Error::runtime(format!(
            "vector + matrix @ vector expected, got 1, {}, {}",
            mat.ndim(),
            vec.ndim()
        )));
    }
    matmul(mat, vec)
}

/// `C[b] = A[b]·B[b]` for 2-D (no batch) or 3-D inputs of matching batch size.
fn gemm_kernel(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (sa, sb) = (a.snapshot(), b.snapshot());
    let nd = sa.layout.ndim();
    let mut shape: Shape = sa.layout.shape.clone();
    shape[nd - 1] = sb.layout.shape[nd - 1];
    super::creation::guard(&shape, sa.dtype)?;
    let be = super::backend_for(&[&sa, &sb])?;
    // (the kernel splits a large product across the pool itself, this thread included)
    let (ra, rb) = (sa.storage.read(), sb.storage.read());
    // (`same_dtype` lets bool through only for a product of nothing: all false)
    let buf = be.bmm(&ra, &sa.layout, &rb, &sb.layout);
    drop((ra, rb));
    let buf = buf?;
    Ok(new_tensor(buf, &shape))
}

/// `torch.mm(a, b)` for 2-D tensors.
pub fn mm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (sa, sb) = (a.shape(), b.shape());
    if sa.len() != 2 {
        return Err(Error::runtime("self must be a matrix"));
    }
    if sb.len() != 2 {
        return Err(Error::runtime("mat2 must be a matrix"));
    }
    if sa[1] != sb[0] {
        return Err(Error::runtime(format!(
            "mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
            sa[0], sa[1], sb[0], sb[1]
        )));
    }
    same_dtype(
        a,
        b,
        "m1 and m2",
        "addmm_impl_cpu_",
        trivial_product(&sa, &sb),
    )?;
    apply(
        "aten::mm",
        &[a, b],
        || gemm_kernel(a, b),
        |_| {
            let mut s = Saver::default();
            let ai = s.input_if(crate::ops::wants_grad(b), a);
            let bi = s.input_if(crate::ops::wants_grad(a), b);
            (
                MmBackward0 {
                    a: ai,
                    b: bi,
                    batched: false,
                    a_col_major: col_major(a),
                    b_col_major: col_major(b),
                },
                s.list,
            )
        },
    )
}

/// `torch.addmm(input, a, b, beta=, alpha=)` = beta·input + alpha·(a·b), `input`
/// broadcast to the product's shape. `F.linear` with a bias is this one node, as in
/// torch: the bias is copied into the output and the GEMM adds the product to it, with
/// no separate pass over the output to add it.
pub fn addmm(
    input: &Tensor,
    a: &Tensor,
    b: &Tensor,
    beta: Scalar,
    alpha: Scalar,
) -> Result<Tensor> {
    let (sa, sb) = (a.shape(), b.shape());
    if sa.len() != 2 {
        // (torch's message names mat1 `self`)
        return Err(Error::runtime(format!(
            "addmm: self must be a matrix, got {}-D tensor",
            sa.len()
        )));
    }
    if sb.len() != 2 {
        return Err(Error::runtime(format!(
            "addmm: mat2 must be a matrix, got {}-D tensor",
            sb.len()
        )));
    }
    if sa[1] != sb[0] {
        return Err(Error::runtime(format!(
            "addmm: mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
            sa[0], sa[1], sb[0], sb[1]
        )));
    }
    for (what, x) in [("self", input), ("mat1", a)] {
        if x.dtype() != b.dtype() {
            return Err(Error::runtime(format!(
                "{what} and mat2 must have the same dtype, but got {} and {}",
                x.dtype().scalar_type_name(),
                b.dtype().scalar_type_name()
            )));
        }
    }
    if b.dtype() == DType::Bool {
        // (an empty result is returned before torch dispatches on the dtype)
        let out = broadcast_shapes(&input.shape(), &[sa[0], sb[1]])?;
        if crate::shape::numel(&out) == 0 && out.as_slice() == [sa[0], sb[1]] {
            return super::zeros_on(&out, DType::Bool, input.device());
        }
        if sa[1] == 0 && out.as_slice() == [sa[0], sb[1]] {
            // a product of nothing is beta * input, which a number beta promotes
            if beta.as_f64() == 0.0 {
                return super::zeros_on(&out, DType::Bool, input.device());
            }
            let promoted = ResultType::default()
                .tensor(DType::Bool, 1)
                .scalar(beta)
                .finish();
            if promoted != DType::Bool {
                return Err(Error::runtime(format!(
                    "result type {} can't be cast to the desired output type Bool",
                    promoted.scalar_type_name()
                )));
            }
        }
        return Err(Error::not_implemented(
            "\"addmm_impl_cpu_\" not implemented for 'Bool'",
        ));
    }
    // an integer product takes its scales as integers (torch truncates 0.5 to 0)
    let (beta, alpha) = match b.dtype() {
        DType::I64 => (
            Scalar::Int(beta.as_f64() as i64),
            Scalar::Int(alpha.as_f64() as i64),
        ),
        _ => (beta, alpha),
    };
    let out_shape = [sa[0], sb[1]];
    let bias = expand(&input.detach(), &out_shape)?;
    let unit = |s: Scalar| s.as_f64() == 1.0;
    let fused = unit(beta) && unit(alpha);
    apply(
        "aten::addmm",
        &[input, a, b],
        || {
            if fused {
                return gemm_add_kernel(&bias, a, b);
            }
            // general scales: the same values composed from plain ops
            crate::autograd::grad_mode::with_grad_mode(false, || {
                let mut r = mm(&a.detach(), &b.detach())?;
                if !unit(alpha) {
                    r = mul_scalar(&r, alpha)?;
                }
                if beta.as_f64() != 0.0 {
                    // (beta = 0 ignores `input`: its NaNs do not propagate, as in torch)
                    r = add(&r, &mul_scalar(&bias, beta)?)?;
                }
                Ok(r)
            })
        },
        |_| {
            let mut s = Saver::default();
            let ai = s.input_if(crate::ops::wants_grad(b), a);
            let bi = s.input_if(crate::ops::wants_grad(a), b);
            let in_shape = input.shape();
            (
                AddmmBackward0 {
                    mm: MmBackward0 {
                        a: ai,
                        b: bi,
                        batched: false,
                        a_col_major: col_major(a),
                        b_col_major: col_major(b),
                    },
                    input_shape: (in_shape.as_slice() != out_shape).then(|| Box::new(in_shape)),
                    scales: (!fused).then(|| Box::new([beta, alpha])),
                },
                s.list,
            )
        },
    )
}

/// `bias + a·b` for 2-D float or integer `a`, `b` and `bias` already expanded to the
/// output's shape: the bias is laid out row by row, then the GEMM adds the product.
fn gemm_add_kernel(bias: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (sc, sa, sb) = (bias.snapshot(), a.snapshot(), b.snapshot());
    let shape: Shape = sc.layout.shape.clone();
    let be = super::backend_for(&[&sc, &sa, &sb])?;
    let (rc, ra, rb) = (sc.storage.read(), sa.storage.read(), sb.storage.read());
    let buf = be
        .addmm(&rc, &sc.layout, &ra, &sa.layout, &rb, &sb.layout)
        .and_then(|b| b.ok_or_else(|| Error::Internal("addmm: bool reached the kernel".into())));
    drop((rc, ra, rb));
    let buf = buf?;
    Ok(new_tensor(buf, &shape))
}

#[derive(Clone)]
pub struct AddmmBackward0 {
    mm: MmBackward0,
    /// `input`'s shape, when it was broadcast (a bias).
    input_shape: Option<Box<Shape>>,
    /// beta and alpha, unless both are 1.
    scales: Option<Box<[Scalar; 2]>>,
}
impl Backward for AddmmBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        let (beta, alpha) = match &self.scales {
            Some(s) => (s[0], s[1]),
            None => (crate::dtype::Scalar::Int(1), crate::dtype::Scalar::Int(1)),
        };
        vec![
            ("alpha", F::Scalar(alpha)),
            ("beta", F::Scalar(beta)),
            ("mat1", F::Tensor(self.mm.a)),
            ("mat2", F::Tensor(self.mm.b)),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "AddmmBackward0".into()
    }
    // tangent: beta·t_input (broadcast) + alpha·(tA·B + A·tB)
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        let out = ctx.outputs.first()?;
        let run = || -> Result<Grads> {
            let scaled = |x: Tensor, i: usize| match &self.scales {
                Some(s) => mul_scalar(&x, s[i]),
                None => Ok(x),
            };
            let ti = match t.first().and_then(Option::as_ref) {
                Some(ti) => Some(scaled(expand(ti, &out.shape)?, 0)?),
                None => None,
            };
            let tm = self
                .mm
                .tangent(ctx, t, [1, 2])?
                .map(|x| scaled(x, 1))
                .transpose()?;
            Ok(smallvec::smallvec![match (ti, tm) {
                (Some(x), Some(y)) => Some(add(&x, &y)?),
                (x, y) => x.or(y),
            }])
        };
        Some(run())
    }
    // d input = sum_to(beta·G), dA = alpha·G·Bᵀ, dB = alpha·Aᵀ·G
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let scaled = |x: Tensor, i: usize| match &self.scales {
            Some(s) => mul_scalar(&x, s[i]),
            None => Ok(x),
        };
        let di = if ctx.needs_input_grad(0) {
            let d = scaled(g.clone(), 0)?;
            Some(match &self.input_shape {
                Some(shape) => sum_to(&d, shape)?,
                None => d,
            })
        } else {
            None
        };
        let (da, db) = self.mm.operand_grads(ctx, g, [1, 2])?;
        let da = da.map(|d| scaled(d, 1)).transpose()?;
        let db = db.map(|d| scaled(d, 1)).transpose()?;
        Ok(smallvec::smallvec![di, da, db])
    }
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        let run = || -> Result<Grads> {
            let g = grad0(g)?;
            let scaled = |x: Tensor, i: usize| match &self.scales {
                Some(s) => mul_scalar(&x, s[i]),
                None => Ok(x),
            };
            let di = if ctx.needs_input_grad(0) {
                let d = scaled(g.clone(), 0)?;
                Some(match &self.input_shape {
                    Some(shape) => super::sum_to_batched(&d, shape)?,
                    None => d,
                })
            } else {
                None
            };
            let (da, db) = self.mm.operand_grads_batched(ctx, &g, [1, 2])?;
            let da = da.map(|d| scaled(d, 1)).transpose()?;
            let db = db.map(|d| scaled(d, 1)).transpose()?;
            Ok(smallvec::smallvec![di, da, db])
        };
        Some(run())
    }
}

/// torch's error for a `bmm` of `[m, k]` by `[k, n]` matrices whose dtypes differ or are
/// bool, which depends on the path its CPU kernel takes: products under 400
/// multiply-adds a matrix run a loop dispatched on batch1's dtype (no bool kernel; batch2
/// read as that type), larger ones one `addmm` per batch, whose checks name the operands
/// in another order.
fn bmm_dtype_error(da: DType, db: DType, m: usize, k: usize, n: usize) -> Error {
    let small = (m as u128) * (k as u128) * (n as u128) < 400;
    let kernel = if small { "bmm" } else { "addmm_impl_cpu_" };
    if da == db || (small && da == DType::Bool) {
        return Error::not_implemented(format!("\"{kernel}\" not implemented for 'Bool'"));
    }
    if small {
        return Error::runtime(format!(
            "expected scalar type {} but found {}",
            da.scalar_type_name(),
            db.scalar_type_name()
        ));
    }
    if db.is_float() {
        return Error::runtime(format!(
            "expected scalar type {} but found {}",
            db.scalar_type_name(),
            da.scalar_type_name()
        ));
    }
    Error::runtime(format!(
        "expected m1 and m2 to have the same dtype, but got: {} != {}",
        dtype_name(da),
        dtype_name(db)
    ))
}

/// `torch.bmm(a, b)` for 3-D tensors of equal batch size.
pub fn bmm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (sa, sb) = (a.shape(), b.shape());
    if sa.len() != 3 || sb.len() != 3 {
        return Err(Error::runtime("batch1 must be a 3D tensor"));
    }
    if sa[0] != sb[0] || sa[2] != sb[1] {
        return Err(Error::runtime(format!(
            "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
            sa[0], sa[2], sb[0], sb[1]
        )));
    }
    let trivial = trivial_product(&sa, &sb);
    if trivial && a.dtype() != b.dtype() {
        // torch returns a product of nothing before it compares dtypes: the result has
        // batch2's dtype (and autograd refuses it if that is not a float dtype)
        if !b.dtype().is_float() && super::any_requires_grad(&[a, b]) {
            return Err(Error::runtime(format!(
                "Autograd not support dtype: {}",
                b.dtype().scalar_type_name()
            )));
        }
        return bmm(&to_dtype(a, b.dtype())?, b);
    }
    if !trivial && (a.dtype() != b.dtype() || a.dtype() == DType::Bool) {
        return Err(bmm_dtype_error(a.dtype(), b.dtype(), sa[1], sa[2], sb[2]));
    }
    apply(
        "aten::bmm",
        &[a, b],
        || gemm_kernel(a, b),
        |_| {
            let mut s = Saver::default();
            let ai = s.input_if(crate::ops::wants_grad(b), a);
            let bi = s.input_if(crate::ops::wants_grad(a), b);
            (
                BmmBackward0(MmBackward0 {
                    a: ai,
                    b: bi,
                    batched: true,
                    a_col_major: false,
                    b_col_major: false,
                }),
                s.list,
            )
        },
    )
}

#[derive(Clone)]
pub struct MmBackward0 {
    a: Option<u8>,
    b: Option<u8>,
    batched: bool,
    /// The operand was a transposed contiguous matrix (`w.t()` in a linear layer): its
    /// gradient is computed transposed, so that it comes out in the operand's layout and
    /// the parameter's `.grad` is contiguous without a strided copy (torch's
    /// mm_mat1/mat2_backward do the same).
    a_col_major: bool,
    b_col_major: bool,
}

/// A 2-D matrix stored column by column (strides `[1, rows]`), with more than one column.
fn col_major(x: &Tensor) -> bool {
    let l = x.layout();
    l.ndim() == 2
        && l.shape[1] > 1
        && l.shape[0] > 1
        && l.strides[0] == 1
        && l.strides[1] == l.shape[0]
}
impl MmBackward0 {
    fn tr(&self, x: &Tensor) -> Result<Tensor> {
        if self.batched {
            transpose(x, 1, 2)
        } else {
            t(x)
        }
    }
    fn prod(&self, x: &Tensor, y: &Tensor) -> Result<Tensor> {
        if self.batched { bmm(x, y) } else { mm(x, y) }
    }
    // dA = G·Bᵀ, dB = Aᵀ·G
    fn grads(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let (da, db) = self.operand_grads(ctx, grad0(g)?, [0, 1])?;
        Ok(smallvec::smallvec![da, db])
    }
    /// The gradients of A and B, which are inputs `at[0]` and `at[1]` of the node.
    fn operand_grads(
        &self,
        ctx: &BackwardCtx<'_>,
        g: Tensor,
        at: [usize; 2],
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let saved = |i: Option<u8>| {
            ctx.saved(i.ok_or_else(|| Error::Internal("mm operand not saved".into()))? as usize)
        };
        let da = if !ctx.needs_input_grad(at[0]) {
            None
        } else if self.a_col_major {
            // dA = (B·Gᵀ)ᵀ, in A's (column-major) layout
            Some(t(&mm(&saved(self.b)?, &t(&g)?)?)?)
        } else {
            Some(self.prod(&g, &self.tr(&saved(self.b)?)?)?)
        };
        let db = if !ctx.needs_input_grad(at[1]) {
            None
        } else if self.b_col_major {
            // dB = (Gᵀ·A)ᵀ, in B's (column-major) layout
            Some(t(&mm(&t(&g)?, &saved(self.a)?)?)?)
        } else {
            Some(self.prod(&self.tr(&saved(self.a)?)?, &g)?)
        };
        Ok((da, db))
    }
}
impl MmBackward0 {
    /// [`operand_grads`](Self::operand_grads) of every sample of a batch of gradients
    /// `g` (`[S, n, m]`): two products, the samples stacked as rows of one (`G·Bᵀ`) and
    /// side by side as columns of the other (`Aᵀ·G`). (bmm's: `matmul` broadcasting the
    /// saved operands over the samples.)
    fn operand_grads_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &Tensor,
        at: [usize; 2],
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let saved = |i: Option<u8>| {
            ctx.saved(i.ok_or_else(|| Error::Internal("mm operand not saved".into()))? as usize)
        };
        if self.batched {
            // bmm: matmul broadcasts the saved operands over the samples
            let da = if ctx.needs_input_grad(at[0]) {
                Some(matmul(g, &transpose(&saved(self.b)?, 1, 2)?)?)
            } else {
                None
            };
            let db = if ctx.needs_input_grad(at[1]) {
                Some(matmul(&transpose(&saved(self.a)?, 1, 2)?, g)?)
            } else {
                None
            };
            return Ok((da, db));
        }
        let gs = g.shape();
        let (s, n, m) = (gs[0] as i64, gs[1] as i64, gs[2] as i64);
        let da = if ctx.needs_input_grad(at[0]) {
            let b = saved(self.b)?;
            let k = b.shape()[0] as i64;
            let rows = reshape(g, &[s * n, m])?;
            Some(reshape(&mm(&rows, &t(&b)?)?, &[s, n, k])?)
        } else {
            None
        };
        let db = if ctx.needs_input_grad(at[1]) {
            let a = saved(self.a)?;
            let k = a.shape()[1] as i64;
            let columns = reshape(&permute(g, &[1, 0, 2])?, &[n, s * m])?;
            let r = mm(&t(&a)?, &columns)?;
            Some(permute(&reshape(&r, &[k, s, m])?, &[1, 0, 2])?)
        } else {
            None
        };
        Ok((da, db))
    }
    /// d(A·B) = dA·B + A·dB, A and B at inputs `at` of the node.
    fn tangent(
        &self,
        ctx: &BackwardCtx<'_>,
        t: &[Option<Tensor>],
        at: [usize; 2],
    ) -> Result<Option<Tensor>> {
        let saved = |i: Option<u8>| {
            ctx.saved(i.ok_or_else(|| Error::Internal("mm operand not saved".into()))? as usize)
        };
        let ta = match t.get(at[0]).and_then(Option::as_ref) {
            Some(ta) => Some(self.prod(ta, &saved(self.b)?)?),
            None => None,
        };
        let tb = match t.get(at[1]).and_then(Option::as_ref) {
            Some(tb) => Some(self.prod(&saved(self.a)?, tb)?),
            None => None,
        };
        Ok(match (ta, tb) {
            (Some(x), Some(y)) => Some(add(&x, &y)?),
            (x, y) => x.or(y),
        })
    }
}
impl Backward for MmBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![("mat2", F::Tensor(self.b)), ("self", F::Tensor(self.a))]
    }
    fn name(&self) -> Cow<'static, str> {
        "MmBackward0".into()
    }
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        Some(self.tangent(ctx, t, [0, 1]).map(|t| smallvec::smallvec![t]))
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.grads(ctx, g)
    }
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        let run = || -> Result<Grads> {
            let (da, db) = self.operand_grads_batched(ctx, &grad0(g)?, [0, 1])?;
            Ok(smallvec::smallvec![da, db])
        };
        Some(run())
    }
}

#[derive(Clone)]
pub struct BmmBackward0(MmBackward0);
impl Backward for BmmBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![("mat2", F::Tensor(self.0.b)), ("self", F::Tensor(self.0.a))]
    }
    fn name(&self) -> Cow<'static, str> {
        "BmmBackward0".into()
    }
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        Some(
            self.0
                .tangent(ctx, t, [0, 1])
                .map(|t| smallvec::smallvec![t]),
        )
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.0.grads(ctx, g)
    }
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        _batch: usize,
    ) -> Option<Result<Grads>> {
        let run = || -> Result<Grads> {
            let (da, db) = self.0.operand_grads_batched(ctx, &grad0(g)?, [0, 1])?;
            Ok(smallvec::smallvec![da, db])
        };
        Some(run())
    }
}

/// `torch.dot(a, b)` for 1-D tensors of equal length.
pub fn dot(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (sa, sb) = (a.shape(), b.shape());
    if sa.len() != 1 || sb.len() != 1 {
        return Err(Error::runtime(format!(
            "1D tensors expected, but got {}D and {}D tensors",
            sa.len(),
            sb.len()
        )));
    }
    if sa[0] != sb[0] {
        return Err(Error::runtime(format!(
            "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively",
            sa[0], sb[0], sa[0], sb[0]
        )));
    }
    same_dtype(a, b, "both vectors", "dot", false)?;
    apply(
        "aten::dot",
        &[a, b],
        || {
            let r = crate::autograd::grad_mode::with_grad_mode(false, || {
                mm(&unsqueeze(&a.detach(), 0)?, &unsqueeze(&b.detach(), 1)?)
            })?;
            reshape(&r, &[])
        },
        |_| {
            let mut s = Saver::default();
            let ai = s.input_if(crate::ops::wants_grad(b), a);
            let bi = s.input_if(crate::ops::wants_grad(a), b);
            (DotBackward0 { a: ai, b: bi }, s.list)
        },
    )
}

#[derive(Clone)]
pub struct DotBackward0 {
    a: Option<u8>,
    b: Option<u8>,
}
impl Backward for DotBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, crate::autograd::function::SavedField)> {
        use crate::autograd::function::SavedField as F;
        vec![("self", F::Tensor(self.a)), ("tensor", F::Tensor(self.b))]
    }
    fn name(&self) -> Cow<'static, str> {
        "DotBackward0".into()
    }
    // d(a·b)/da = g·b, /db = g·a
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        self.grads(ctx, grad0(g)?)
    }
    // (each sample's number times the saved vector: g as a column)
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        Some(grad0(g).and_then(|g| self.grads(ctx, reshape(&g, &[batch as i64, 1])?)))
    }
}

impl DotBackward0 {
    fn grads(&self, ctx: &BackwardCtx<'_>, g: Tensor) -> Result<Grads> {
        let saved = |i: Option<u8>| {
            ctx.saved(i.ok_or_else(|| Error::Internal("dot operand not saved".into()))? as usize)
        };
        let da = if ctx.needs_input_grad(0) {
            Some(mul(&g, &saved(self.b)?)?)
        } else {
            None
        };
        let db = if ctx.needs_input_grad(1) {
            Some(mul(&g, &saved(self.a)?)?)
        } else {
            None
        };
        Ok(smallvec::smallvec![da, db])
    }
}

/// `torch.outer(a, b)` = a[:, None] * b[None, :].
pub fn outer(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.ndim() != 1 || b.ndim() != 1 {
        return Err(Error::runtime(format!(
            "outer: Expected 1-D argument self, but got {}-D",
            a.ndim().max(b.ndim())
        )));
    }
    mul(&unsqueeze(a, 1)?, &unsqueeze(b, 0)?)
}

/// Whether torch's matmul folds this batched product into one `mm`/`mv` (its
/// `should_fold`): the bigger operand has 3+ dims and the other at most 2, and the other
/// requires grad, or the bigger one's leading dims flatten without a copy.
fn folds(a: &Tensor, b: &Tensor) -> bool {
    let (na, nb) = (a.ndim(), b.ndim());
    let a_larger = na >= nb;
    let (big, small_grad) = if a_larger {
        (a, crate::ops::wants_grad(b))
    } else {
        (b, crate::ops::wants_grad(a))
    };
    if !(big.ndim() >= 3 && na.min(nb) <= 2) {
        return false;
    }
    if small_grad {
        return true;
    }
    if na == 2 {
        return false;
    }
    let l = big.layout();
    if l.numel() == 0 {
        return true;
    }
    let (mut shape, mut strides) = (l.shape.clone(), l.strides.clone());
    if !a_larger {
        // (torch folds b.mT())
        let n = shape.len();
        shape.swap(n - 1, n - 2);
        strides.swap(n - 1, n - 2);
    }
    // the leading dims flatten as a view: each stride spans the next dim, ignoring dims
    // of size 1 (whose strides address nothing)
    let lead: Vec<usize> = (0..shape.len() - 1).filter(|&i| shape[i] != 1).collect();
    lead.windows(2)
        .all(|w| strides[w[0]] == strides[w[1]] * shape[w[1]])
}

/// torch's error for a batched `matmul` of two dtypes, by the path torch takes: folded
/// into one `mm` or `mv` (see [`folds`]), or a batched product, which checks the dtypes
/// unless it multiplies nothing (then the result takes the second operand's dtype, see
/// `bmm`).
fn matmul_dtype_error(
    a: &Tensor,
    b: &Tensor,
    batch: &[usize],
    m: usize,
    k: usize,
    n: usize,
) -> Result<()> {
    let (na, nb) = (a.ndim(), b.ndim());
    let (da, db) = (a.dtype(), b.dtype());
    let addmv = |v: DType, mat: DType| {
        Error::runtime(format!(
            "addmv input tensors must have the same dtype, but got {}, {}, and {}",
            v.scalar_type_name(),
            mat.scalar_type_name(),
            v.scalar_type_name()
        ))
    };
    if folds(a, b) {
        return Err(match (na >= nb, na.min(nb)) {
            (true, 1) => addmv(db, da),
            (false, 1) => addmv(da, db),
            (true, _) => Error::runtime(format!(
                "expected m1 and m2 to have the same dtype, but got: {} != {}",
                dtype_name(da),
                dtype_name(db)
            )),
            (false, _) => Error::runtime(format!(
                "expected m1 and m2 to have the same dtype, but got: {} != {}",
                dtype_name(db),
                dtype_name(da)
            )),
        });
    }
    let nothing = k == 0 || crate::shape::numel(batch) * m * n == 0;
    if !nothing {
        return Err(bmm_dtype_error(da, db, m, k, n));
    }
    Ok(())
}

/// `torch.matmul(a, b)` with torch's rank rules and batch broadcasting.
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (sa, sb) = (a.shape(), b.shape());
    let (na, nb) = (sa.len(), sb.len());
    if na == 0 || nb == 0 {
        return Err(Error::runtime(format!(
            "both arguments to matmul need to be at least 1D, but they are {na}D and {nb}D"
        )));
    }
    match (na, nb) {
        (1, 1) => dot(a, b),
        (2, 2) => mm(a, b),
        (1, 2) => {
            if sa[0] != sb[0] {
                return Err(Error::runtime(format!(
                    "mat1 and mat2 shapes cannot be multiplied (1x{} and {}x{})",
                    sa[0], sb[0], sb[1]
                )));
            }
            Ok(fresh_result(squeeze(
                &mm(&unsqueeze(a, 0)?, b)?,
                Some(&[0]),
            )?))
        }
        (2, 1) => {
            if sa[1] != sb[0] {
                return Err(Error::runtime(format!(
                    "size mismatch, got input ({}), mat ({}x{}), vec ({})",
                    sa[0], sa[0], sa[1], sb[0]
                )));
            }
            Ok(fresh_result(squeeze(
                &mm(a, &unsqueeze(b, 1)?)?,
                Some(&[1]),
            )?))
        }
        _ if na >= 3 && folds(a, b) => {
            // torch folds a batch times a matrix or vector into one mm/mv over the batch
            // flattened (a copy where the batch dims do not flatten as a view)
            let k = sa[na - 1];
            let rows: usize = sa[..na - 1].iter().product();
            let a2 = reshape(a, &[rows as i64, k as i64])?;
            let mut out: Vec<i64> = sa[..na - 1].iter().map(|&d| d as i64).collect();
            let r = if nb == 2 {
                out.push(sb[1] as i64);
                mm(&a2, b)?
            } else {
                if k == sb[0] && a.dtype() != b.dtype() {
                    matmul_dtype_error(a, b, &[], rows, k, 1)?;
                }
                mv(&a2, b)?
            };
            unsafe_view(&r, &out)
        }
        _ => {
            // Promote 1-D operands, broadcast batch dims, run bmm, and drop the added dims.
            let a2 = if na == 1 { unsqueeze(a, 0)? } else { a.clone() };
            let b2 = if nb == 1 { unsqueeze(b, 1)? } else { b.clone() };
            let (s2a, s2b) = (a2.shape(), b2.shape());
            let (m, ka) = (s2a[s2a.len() - 2], s2a[s2a.len() - 1]);
            let (kb, n) = (s2b[s2b.len() - 2], s2b[s2b.len() - 1]);
            if ka != kb {
                return Err(Error::runtime(format!(
                    "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
                    1, ka, 1, kb
                )));
            }
            let batch = broadcast_shapes(&s2a[..s2a.len() - 2], &s2b[..s2b.len() - 2])?;
            if a.dtype() != b.dtype() {
                matmul_dtype_error(a, b, &batch, m, ka, n)?;
            }
            let mut full: Shape = batch.clone();
            full.extend([m.max(1), n.max(ka).max(1)]);
            super::creation::guard(&full, a.dtype())?;
            let bn: usize = batch.iter().product();
            let mut ea: Shape = batch.clone();
            ea.extend([m, ka]);
            let mut eb: Shape = batch.clone();
            eb.extend([kb, n]);
            let a3 = reshape(&expand(&a2, &ea)?, &[bn as i64, m as i64, ka as i64])?;
            let b3 = reshape(&expand(&b2, &eb)?, &[bn as i64, kb as i64, n as i64])?;
            let r = bmm(&a3, &b3)?;
            let mut out: Vec<i64> = batch.iter().map(|&d| d as i64).collect();
            if na > 1 {
                out.push(m as i64);
            }
            if nb > 1 {
                out.push(n as i64);
            }
            unsafe_view(&r, &out)
        }
    }
}
