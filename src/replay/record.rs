//! The recording backend: each kernel runs on the CPU as in eager mode, then is appended
//! to the thread's recording as a step that calls the same kernel with the same
//! non-tensor arguments. A kernel with no replay rule is refused with its name.

use super::{Outs, SlotId, record, record_one, refusal};
use crate::Error;
use crate::Result;
use crate::backend::{Backend, BinaryFn, BinaryOp, InPlaceRhs, ReduceOp, UnaryOp, cpu::Cpu};
use crate::device::Device;
use crate::dtype::{DType, Scalar};
use crate::layout::Layout;
use crate::storage::Buffer;

/// The backend ops get while their thread records (see `backend::on`).
pub struct Rec;

/// [`Rec`] as a trait object, for the free kernel functions: a call that is never inlined
/// into the eager path.
#[cold]
#[inline(never)]
pub fn backend() -> &'static dyn Backend {
    &Rec
}

/// Records a kernel with one new buffer, recomputed by `f` from the inputs.
fn one(
    name: &'static str,
    ins: &[&Buffer],
    out: &Buffer,
    f: impl Fn(&[&Buffer]) -> Result<Buffer> + Send + Sync + 'static,
) -> Result<()> {
    record_one(name, ins, &[], out, f)
}

/// The error of a kernel that applied while recording and not in a replay (it cannot
/// happen: applicability depends on layouts and dtypes, which a replay keeps).
fn gone(name: &str) -> Error {
    Error::Internal(format!(
        "step replay: the kernel '{name}' no longer applies"
    ))
}

/// Records a kernel that may decline (`None`): a declined call did nothing, so nothing is
/// recorded for it.
fn maybe(
    name: &'static str,
    ins: &[&Buffer],
    out: &Option<Buffer>,
    f: impl Fn(&[&Buffer]) -> Result<Option<Buffer>> + Send + Sync + 'static,
) -> Result<()> {
    match out {
        None => Ok(()),
        Some(o) => one(name, ins, o, move |i| f(i)?.ok_or_else(|| gone(name))),
    }
}

/// An index list: a host plan's slot (recomputed on every replay) or a constant.
enum Index {
    Slot(SlotId),
    Const(Vec<i64>),
}

fn index_arg(index: &[i64]) -> Index {
    match super::index_slot(index) {
        Some(s) => Index::Slot(s),
        None => Index::Const(index.to_vec()),
    }
}

impl Index {
    fn extra(&self) -> Vec<SlotId> {
        match self {
            Index::Slot(s) => vec![*s],
            Index::Const(_) => Vec::new(),
        }
    }
    /// The list at replay: the last input for a slot.
    fn get<'a>(&'a self, ins: &[&'a Buffer]) -> Result<&'a [i64]> {
        match self {
            Index::Const(v) => Ok(v),
            Index::Slot(_) => match ins.last() {
                Some(Buffer::I64(v)) => Ok(v),
                _ => Err(Error::Internal(
                    "step replay: index plan is not int64".into(),
                )),
            },
        }
    }
}

fn owned_dims(d: &[usize]) -> Vec<usize> {
    d.to_vec()
}

#[allow(clippy::too_many_arguments)]
impl Backend for Rec {
    fn device(&self) -> Device {
        Device::Cpu
    }

    fn unary(&self, op: UnaryOp, x: &Buffer, lx: &Layout) -> Result<Buffer> {
        let out = Cpu.unary(op, x, lx)?;
        let lx = lx.clone();
        one("unary", &[x], &out, move |i| Cpu.unary(op, i[0], &lx))?;
        Ok(out)
    }
    fn unary_backward(
        &self,
        op: UnaryOp,
        g: &Buffer,
        lg: &Layout,
        s: &Buffer,
        ls: &Layout,
    ) -> Result<Option<Buffer>> {
        let out = Cpu.unary_backward(op, g, lg, s, ls)?;
        let (lg, ls) = (lg.clone(), ls.clone());
        maybe("unary_backward", &[g, s], &out, move |i| {
            Cpu.unary_backward(op, i[0], &lg, i[1], &ls)
        })?;
        Ok(out)
    }
    fn polygamma(&self, n: u32, x: &Buffer, lx: &Layout) -> Result<Buffer> {
        let out = Cpu.polygamma(n, x, lx)?;
        let lx = lx.clone();
        one("polygamma", &[x], &out, move |i| {
            Cpu.polygamma(n, i[0], &lx)
        })?;
        Ok(out)
    }
    fn activation(
        &self,
        op: crate::backend::ActFn,
        x: &Buffer,
        lx: &Layout,
    ) -> Result<Option<Buffer>> {
        let out = Cpu.activation(op, x, lx)?;
        let lx = lx.clone();
        maybe("activation", &[x], &out, move |i| {
            Cpu.activation(op, i[0], &lx)
        })?;
        Ok(out)
    }
    fn activation_backward(
        &self,
        op: crate::backend::ActFn,
        result: bool,
        g: &Buffer,
        lg: &Layout,
        s: &Buffer,
        ls: &Layout,
    ) -> Result<Option<Buffer>> {
        let out = Cpu.activation_backward(op, result, g, lg, s, ls)?;
        let (lg, ls) = (lg.clone(), ls.clone());
        maybe("activation_backward", &[g, s], &out, move |i| {
            Cpu.activation_backward(op, result, i[0], &lg, i[1], &ls)
        })?;
        Ok(out)
    }
    fn bessel(&self, op: crate::backend::Bessel, x: &Buffer, lx: &Layout) -> Result<Buffer> {
        let out = Cpu.bessel(op, x, lx)?;
        let lx = lx.clone();
        one("bessel", &[x], &out, move |i| Cpu.bessel(op, i[0], &lx))?;
        Ok(out)
    }
    fn igamma(
        &self,
        upper: bool,
        a: &Buffer,
        la: &Layout,
        x: &Buffer,
        lx: &Layout,
    ) -> Result<Buffer> {
        let out = Cpu.igamma(upper, a, la, x, lx)?;
        let (la, lx) = (la.clone(), lx.clone());
        one("igamma", &[a, x], &out, move |i| {
            Cpu.igamma(upper, i[0], &la, i[1], &lx)
        })?;
        Ok(out)
    }
    fn logical_not(&self, x: &Buffer, lx: &Layout) -> Result<Buffer> {
        let out = Cpu.logical_not(x, lx)?;
        let lx = lx.clone();
        one("logical_not", &[x], &out, move |i| {
            Cpu.logical_not(i[0], &lx)
        })?;
        Ok(out)
    }
    fn clamp(&self, x: &Buffer, lx: &Layout, lo: Option<f64>, hi: Option<f64>) -> Result<Buffer> {
        let out = Cpu.clamp(x, lx, lo, hi)?;
        let lx = lx.clone();
        one("clamp", &[x], &out, move |i| Cpu.clamp(i[0], &lx, lo, hi))?;
        Ok(out)
    }
    fn binary(
        &self,
        op: BinaryOp,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
    ) -> Result<Buffer> {
        let out = Cpu.binary(op, a, la, b, lb)?;
        let (la, lb) = (la.clone(), lb.clone());
        one("binary", &[a, b], &out, move |i| {
            Cpu.binary(op, i[0], &la, i[1], &lb)
        })?;
        Ok(out)
    }
    fn binary_scalar(
        &self,
        op: BinaryOp,
        a: &Buffer,
        la: &Layout,
        s: f64,
        scalar_first: bool,
    ) -> Result<Option<Buffer>> {
        let out = Cpu.binary_scalar(op, a, la, s, scalar_first)?;
        let la = la.clone();
        maybe("binary_scalar", &[a], &out, move |i| {
            Cpu.binary_scalar(op, i[0], &la, s, scalar_first)
        })?;
        Ok(out)
    }
    fn binary_fn(
        &self,
        op: BinaryFn,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
    ) -> Result<Buffer> {
        let out = Cpu.binary_fn(op, a, la, b, lb)?;
        let (la, lb) = (la.clone(), lb.clone());
        one("binary_fn", &[a, b], &out, move |i| {
            Cpu.binary_fn(op, i[0], &la, i[1], &lb)
        })?;
        Ok(out)
    }
    fn arith_in_place(
        &self,
        op: BinaryOp,
        dst: &mut Buffer,
        ld: &Layout,
        rhs: InPlaceRhs<'_>,
    ) -> Result<bool> {
        // (what the step needs, taken before the kernel borrows `dst`)
        enum R {
            Slice(Layout),
            Number(f64),
            Scaled(Layout, f64),
        }
        let (r, src) = match &rhs {
            InPlaceRhs::Slice(b, l) => (R::Slice((*l).clone()), Some(*b)),
            InPlaceRhs::Number(v) => (R::Number(*v), None),
            InPlaceRhs::Scaled(b, l, a) => (R::Scaled((*l).clone(), *a), Some(*b)),
        };
        let done = Cpu.arith_in_place(op, dst, ld, rhs)?;
        if !done {
            return Ok(false);
        }
        let ld = ld.clone();
        let ins: Vec<&Buffer> = src.into_iter().collect();
        record(
            "arith_in_place",
            &ins,
            Some(dst),
            &[],
            Box::new(move |i, d| {
                let d = d.ok_or_else(|| gone("arith_in_place"))?;
                let rhs = match &r {
                    R::Slice(l) => InPlaceRhs::Slice(i[0], l),
                    R::Number(v) => InPlaceRhs::Number(*v),
                    R::Scaled(l, a) => InPlaceRhs::Scaled(i[0], l, *a),
                };
                if Cpu.arith_in_place(op, d, &ld, rhs)? {
                    Ok(Outs::new())
                } else {
                    Err(gone("arith_in_place"))
                }
            }),
        )?;
        Ok(true)
    }
    fn where_(
        &self,
        cond: &Buffer,
        lc: &Layout,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
    ) -> Result<Buffer> {
        let out = Cpu.where_(cond, lc, a, la, b, lb)?;
        let (lc, la, lb) = (lc.clone(), la.clone(), lb.clone());
        one("where", &[cond, a, b], &out, move |i| {
            Cpu.where_(i[0], &lc, i[1], &la, i[2], &lb)
        })?;
        Ok(out)
    }
    #[allow(clippy::too_many_arguments)]
    fn fused3(
        &self,
        op: crate::backend::Fused3,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
        c: &Buffer,
        lc: &Layout,
    ) -> Result<Option<Buffer>> {
        let out = Cpu.fused3(op, a, la, b, lb, c, lc)?;
        let (la, lb, lc) = (la.clone(), lb.clone(), lc.clone());
        maybe("fused3", &[a, b, c], &out, move |i| {
            Cpu.fused3(op, i[0], &la, i[1], &lb, i[2], &lc)
        })?;
        Ok(out)
    }
    #[allow(clippy::too_many_arguments)]
    fn fused3_in_place(
        &self,
        _op: crate::backend::Fused3,
        _dst: &mut Buffer,
        _ld: &Layout,
        _b: &Buffer,
        _lb: &Layout,
        _c: &Buffer,
        _lc: &Layout,
    ) -> Result<bool> {
        // (the op computes out of place, a recorded `fused3`, and commits it)
        Ok(false)
    }
    fn lerp_scalar_in_place(
        &self,
        _dst: &mut Buffer,
        _ld: &Layout,
        _b: &Buffer,
        _lb: &Layout,
        _weight: crate::dtype::Scalar,
    ) -> Result<bool> {
        Ok(false)
    }
    fn nan_to_num(
        &self,
        x: &Buffer,
        lx: &Layout,
        nan: f64,
        posinf: f64,
        neginf: f64,
    ) -> Result<Option<Buffer>> {
        let out = Cpu.nan_to_num(x, lx, nan, posinf, neginf)?;
        let lx = lx.clone();
        maybe("nan_to_num", &[x], &out, move |i| {
            Cpu.nan_to_num(i[0], &lx, nan, posinf, neginf)
        })?;
        Ok(out)
    }
    fn lerp_scalar(
        &self,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
        weight: crate::dtype::Scalar,
    ) -> Result<Option<Buffer>> {
        let out = Cpu.lerp_scalar(a, la, b, lb, weight)?;
        let (la, lb) = (la.clone(), lb.clone());
        maybe("lerp_scalar", &[a, b], &out, move |i| {
            Cpu.lerp_scalar(i[0], &la, i[1], &lb, weight)
        })?;
        Ok(out)
    }
    fn cast(&self, x: &Buffer, lx: &Layout, to: DType) -> Result<Buffer> {
        let out = Cpu.cast(x, lx, to)?;
        let lx = lx.clone();
        one("cast", &[x], &out, move |i| Cpu.cast(i[0], &lx, to))?;
        Ok(out)
    }
    fn copy_into(&self, dst: &mut Buffer, ld: &Layout, src: &Buffer, ls: &Layout) -> Result<()> {
        Cpu.copy_into(dst, ld, src, ls)?;
        let (ld, ls) = (ld.clone(), ls.clone());
        record(
            "copy_into",
            &[src],
            Some(dst),
            &[],
            Box::new(move |i, d| {
                Cpu.copy_into(d.ok_or_else(|| gone("copy_into"))?, &ld, i[0], &ls)?;
                Ok(Outs::new())
            }),
        )
    }
    fn cat(&self, parts: &[(&Buffer, &Layout)], dim: usize, out_shape: &[usize]) -> Result<Buffer> {
        let out = Cpu.cat(parts, dim, out_shape)?;
        let layouts: Vec<Layout> = parts.iter().map(|(_, l)| (*l).clone()).collect();
        let ins: Vec<&Buffer> = parts.iter().map(|(b, _)| *b).collect();
        let shape = owned_dims(out_shape);
        one("cat", &ins, &out, move |i| {
            let parts: Vec<(&Buffer, &Layout)> = i.iter().copied().zip(layouts.iter()).collect();
            Cpu.cat(&parts, dim, &shape)
        })?;
        Ok(out)
    }
    fn fill(&self, dst: &mut Buffer, ld: &Layout, v: Scalar) -> Result<()> {
        Cpu.fill(dst, ld, v)?;
        let ld = ld.clone();
        record(
            "fill",
            &[],
            Some(dst),
            &[],
            Box::new(move |_, d| {
                Cpu.fill(d.ok_or_else(|| gone("fill"))?, &ld, v)?;
                Ok(Outs::new())
            }),
        )
    }

    fn reduce(&self, op: ReduceOp, x: &Buffer, lx: &Layout, dims: &[usize]) -> Result<Buffer> {
        let out = Cpu.reduce(op, x, lx, dims)?;
        let (lx, dims) = (lx.clone(), owned_dims(dims));
        one("reduce", &[x], &out, move |i| {
            Cpu.reduce(op, i[0], &lx, &dims)
        })?;
        Ok(out)
    }
    fn arg_reduce(
        &self,
        _x: &Buffer,
        _lx: &Layout,
        _dims: &[usize],
        is_max: bool,
    ) -> Result<(Buffer, Vec<i64>)> {
        // (the indices come back to the op as host data)
        Err(refusal(if is_max {
            "max/argmax with indices"
        } else {
            "min/argmin with indices"
        }))
    }
    fn nll_losses(
        &self,
        x: &Buffer,
        lx: &Layout,
        idx: &Buffer,
        w: &Buffer,
    ) -> Result<Option<Buffer>> {
        let out = Cpu.nll_losses(x, lx, idx, w)?;
        let lx = lx.clone();
        maybe("nll_losses", &[x, idx, w], &out, move |i| {
            Cpu.nll_losses(i[0], &lx, i[1], i[2])
        })?;
        Ok(out)
    }
    fn sq_diff_sum(
        &self,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
        mean: bool,
    ) -> Result<Option<Buffer>> {
        let out = Cpu.sq_diff_sum(a, la, b, lb, mean)?;
        let (la, lb) = (la.clone(), lb.clone());
        maybe("sq_diff_sum", &[a, b], &out, move |i| {
            Cpu.sq_diff_sum(i[0], &la, i[1], &lb, mean)
        })?;
        Ok(out)
    }
    fn sum_squares(&self, x: &Buffer, lx: &Layout, dims: &[usize]) -> Result<Option<Buffer>> {
        let out = Cpu.sum_squares(x, lx, dims)?;
        let (lx, dims) = (lx.clone(), owned_dims(dims));
        maybe("sum_squares", &[x], &out, move |i| {
            Cpu.sum_squares(i[0], &lx, &dims)
        })?;
        Ok(out)
    }
    fn clamp_between(
        &self,
        x: &Buffer,
        lx: &Layout,
        lo: &Buffer,
        llo: &Layout,
        hi: &Buffer,
        lhi: &Layout,
    ) -> Result<Option<Buffer>> {
        let out = Cpu.clamp_between(x, lx, lo, llo, hi, lhi)?;
        let (lx, llo, lhi) = (lx.clone(), llo.clone(), lhi.clone());
        maybe("clamp_between", &[x, lo, hi], &out, move |i| {
            Cpu.clamp_between(i[0], &lx, i[1], &llo, i[2], &lhi)
        })?;
        Ok(out)
    }
    fn softmax(&self, x: &Buffer, lx: &Layout, dim: usize, log: bool) -> Result<Option<Buffer>> {
        let out = Cpu.softmax(x, lx, dim, log)?;
        let lx = lx.clone();
        maybe("softmax", &[x], &out, move |i| {
            Cpu.softmax(i[0], &lx, dim, log)
        })?;
        Ok(out)
    }
    fn softmax_backward(
        &self,
        g: &Buffer,
        lg: &Layout,
        y: &Buffer,
        ly: &Layout,
        log: bool,
    ) -> Result<Option<Buffer>> {
        let out = Cpu.softmax_backward(g, lg, y, ly, log)?;
        let (lg, ly) = (lg.clone(), ly.clone());
        maybe("softmax_backward", &[g, y], &out, move |i| {
            Cpu.softmax_backward(i[0], &lg, i[1], &ly, log)
        })?;
        Ok(out)
    }
    fn logsumexp(&self, x: &Buffer, lx: &Layout, dims: &[usize]) -> Result<Option<Buffer>> {
        let out = Cpu.logsumexp(x, lx, dims)?;
        let (lx, dims) = (lx.clone(), owned_dims(dims));
        maybe("logsumexp", &[x], &out, move |i| {
            Cpu.logsumexp(i[0], &lx, &dims)
        })?;
        Ok(out)
    }
    fn var(
        &self,
        x: &Buffer,
        lx: &Layout,
        dims: &[usize],
        correction: f64,
        sqrt: bool,
    ) -> Result<Option<Buffer>> {
        let out = Cpu.var(x, lx, dims, correction, sqrt)?;
        let (lx, dims) = (lx.clone(), owned_dims(dims));
        maybe("var", &[x], &out, move |i| {
            Cpu.var(i[0], &lx, &dims, correction, sqrt)
        })?;
        Ok(out)
    }
    fn any_nonzero(&self, _x: &Buffer, _lx: &Layout) -> Result<bool> {
        Err(refusal(
            "a test of a tensor's values on the host (any_nonzero)",
        ))
    }
    fn cumulative(&self, x: &Buffer, lx: &Layout, dim: usize, prod: bool) -> Result<Buffer> {
        let out = Cpu.cumulative(x, lx, dim, prod)?;
        let lx = lx.clone();
        one("cumulative", &[x], &out, move |i| {
            Cpu.cumulative(i[0], &lx, dim, prod)
        })?;
        Ok(out)
    }
    fn cum_extreme(
        &self,
        x: &Buffer,
        lx: &Layout,
        dim: usize,
        is_max: bool,
    ) -> Result<(Buffer, Buffer)> {
        let (v, i) = Cpu.cum_extreme(x, lx, dim, is_max)?;
        let lx = lx.clone();
        record(
            "cum_extreme",
            &[x],
            None,
            &[&v, &i],
            Box::new(move |ins, _| {
                let (v, i) = Cpu.cum_extreme(ins[0], &lx, dim, is_max)?;
                Ok(Outs::from_iter([v, i]))
            }),
        )?;
        Ok((v, i))
    }
    fn logcumsumexp(&self, x: &Buffer, lx: &Layout, dim: usize) -> Result<Option<Buffer>> {
        let out = Cpu.logcumsumexp(x, lx, dim)?;
        let lx = lx.clone();
        maybe("logcumsumexp", &[x], &out, move |i| {
            Cpu.logcumsumexp(i[0], &lx, dim)
        })?;
        Ok(out)
    }
    fn exclusive_prod_rows(&self, x: &Buffer, lx: &Layout) -> Result<Option<Buffer>> {
        let out = Cpu.exclusive_prod_rows(x, lx)?;
        let lx = lx.clone();
        maybe("exclusive_prod_rows", &[x], &out, move |i| {
            Cpu.exclusive_prod_rows(i[0], &lx)
        })?;
        Ok(out)
    }

    fn gather(
        &self,
        x: &Buffer,
        lx: &Layout,
        dim: usize,
        index: &[i64],
        index_shape: &[usize],
    ) -> Result<Buffer> {
        let out = Cpu.gather(x, lx, dim, index, index_shape)?;
        let (lx, ishape, idx) = (lx.clone(), owned_dims(index_shape), index_arg(index));
        let extra = idx.extra();
        record_one("gather", &[x], &extra, &out, move |i| {
            Cpu.gather(i[0], &lx, dim, idx.get(i)?, &ishape)
        })?;
        Ok(out)
    }
    fn gather_checking(
        &self,
        _: &Buffer,
        _: &Layout,
        _: usize,
        _: &[i64],
        _: &[usize],
    ) -> Result<Option<Buffer>> {
        // (a recorded step checks its index plan on every replay, then gathers: `gather`)
        Ok(None)
    }
    fn scatter_add(
        &self,
        shape: &[usize],
        dim: usize,
        index: &[i64],
        index_shape: &[usize],
        src: &Buffer,
        ls: &Layout,
    ) -> Result<Buffer> {
        let out = Cpu.scatter_add(shape, dim, index, index_shape, src, ls)?;
        let (shape, ishape, ls, idx) = (
            owned_dims(shape),
            owned_dims(index_shape),
            ls.clone(),
            index_arg(index),
        );
        let extra = idx.extra();
        record_one("scatter_add", &[src], &extra, &out, move |i| {
            Cpu.scatter_add(&shape, dim, idx.get(i)?, &ishape, i[0], &ls)
        })?;
        Ok(out)
    }
    fn index_select(&self, x: &Buffer, lx: &Layout, dim: usize, index: &[i64]) -> Result<Buffer> {
        let out = Cpu.index_select(x, lx, dim, index)?;
        let (lx, idx) = (lx.clone(), index_arg(index));
        let extra = idx.extra();
        record_one("index_select", &[x], &extra, &out, move |i| {
            Cpu.index_select(i[0], &lx, dim, idx.get(i)?)
        })?;
        Ok(out)
    }
    fn index_add(
        &self,
        shape: &[usize],
        dim: usize,
        index: &[i64],
        src: &Buffer,
        ls: &Layout,
    ) -> Result<Buffer> {
        let out = Cpu.index_add(shape, dim, index, src, ls)?;
        let (shape, ls, idx) = (owned_dims(shape), ls.clone(), index_arg(index));
        let extra = idx.extra();
        record_one("index_add", &[src], &extra, &out, move |i| {
            Cpu.index_add(&shape, dim, idx.get(i)?, i[0], &ls)
        })?;
        Ok(out)
    }
    fn scatter(
        &self,
        x: &Buffer,
        lx: &Layout,
        dim: usize,
        index: &[i64],
        index_shape: &[usize],
        src: &Buffer,
        ls: &Layout,
        add: bool,
    ) -> Result<Buffer> {
        let out = Cpu.scatter(x, lx, dim, index, index_shape, src, ls, add)?;
        let (lx, ishape, ls, idx) = (
            lx.clone(),
            owned_dims(index_shape),
            ls.clone(),
            index_arg(index),
        );
        let extra = idx.extra();
        record_one("scatter", &[x, src], &extra, &out, move |i| {
            Cpu.scatter(i[0], &lx, dim, idx.get(i)?, &ishape, i[1], &ls, add)
        })?;
        Ok(out)
    }
    fn scatter_reduce(
        &self,
        x: &Buffer,
        lx: &Layout,
        dim: usize,
        index: &[i64],
        index_shape: &[usize],
        src: &Buffer,
        ls: &Layout,
        reduce: crate::backend::ScatterReduce,
    ) -> Result<Buffer> {
        let out = Cpu.scatter_reduce(x, lx, dim, index, index_shape, src, ls, reduce)?;
        let (lx, ishape, ls, idx) = (
            lx.clone(),
            owned_dims(index_shape),
            ls.clone(),
            index_arg(index),
        );
        let extra = idx.extra();
        record_one("scatter_reduce", &[x, src], &extra, &out, move |i| {
            Cpu.scatter_reduce(i[0], &lx, dim, idx.get(i)?, &ishape, i[1], &ls, reduce)
        })?;
        Ok(out)
    }
    fn index_write(
        &self,
        x: &Buffer,
        lx: &Layout,
        dim: usize,
        index: &[i64],
        src: &Buffer,
        ls: &Layout,
        add: bool,
    ) -> Result<Buffer> {
        let out = Cpu.index_write(x, lx, dim, index, src, ls, add)?;
        let (lx, ls, idx) = (lx.clone(), ls.clone(), index_arg(index));
        let extra = idx.extra();
        record_one("index_write", &[x, src], &extra, &out, move |i| {
            Cpu.index_write(i[0], &lx, dim, idx.get(i)?, i[1], &ls, add)
        })?;
        Ok(out)
    }
    fn index_reduce(
        &self,
        x: &Buffer,
        lx: &Layout,
        dim: usize,
        index: &[i64],
        src: &Buffer,
        ls: &Layout,
        reduce: crate::backend::ScatterReduce,
    ) -> Result<Buffer> {
        let out = Cpu.index_reduce(x, lx, dim, index, src, ls, reduce)?;
        let (lx, ls, idx) = (lx.clone(), ls.clone(), index_arg(index));
        let extra = idx.extra();
        record_one("index_reduce", &[x, src], &extra, &out, move |i| {
            Cpu.index_reduce(i[0], &lx, dim, idx.get(i)?, i[1], &ls, reduce)
        })?;
        Ok(out)
    }
    fn index_put(
        &self,
        x: &Buffer,
        lx: &Layout,
        dtype: DType,
        positions: &[i64],
        values: &Buffer,
        lv: &Layout,
        accumulate: bool,
    ) -> Result<Buffer> {
        let out = Cpu.index_put(x, lx, dtype, positions, values, lv, accumulate)?;
        let (lx, lv, idx) = (lx.clone(), lv.clone(), index_arg(positions));
        let extra = idx.extra();
        record_one("index_put", &[x, values], &extra, &out, move |i| {
            Cpu.index_put(i[0], &lx, dtype, idx.get(i)?, i[1], &lv, accumulate)
        })?;
        Ok(out)
    }
    fn index_put_in_place(
        &self,
        _x: &mut Buffer,
        _before: &[usize],
        _base: &[usize],
        _after: &[usize],
        _values: &Buffer,
        _lv: &Layout,
        _accumulate: bool,
    ) -> Result<bool> {
        // (never reached: `ops::index_put_direct` computes out of place while recording,
        // where the positions are a recorded plan)
        Err(refusal("index_put_ written in place"))
    }

    fn reorder(
        &self,
        x: &Buffer,
        lx: &Layout,
        flip: &[usize],
        roll: &[(usize, usize)],
    ) -> Result<Option<Buffer>> {
        let out = Cpu.reorder(x, lx, flip, roll)?;
        let (lx, flip, roll) = (lx.clone(), flip.to_vec(), roll.to_vec());
        maybe("reorder", &[x], &out, move |i| {
            Cpu.reorder(i[0], &lx, &flip, &roll)
        })?;
        Ok(out)
    }
    fn triangle(
        &self,
        x: &Buffer,
        lx: &Layout,
        diagonal: i64,
        upper: bool,
    ) -> Result<Option<Buffer>> {
        let out = Cpu.triangle(x, lx, diagonal, upper)?;
        let lx = lx.clone();
        maybe("triangle", &[x], &out, move |i| {
            Cpu.triangle(i[0], &lx, diagonal, upper)
        })?;
        Ok(out)
    }
    fn triangle_in_place(
        &self,
        _dst: &mut Buffer,
        _ld: &Layout,
        _diagonal: i64,
        _upper: bool,
    ) -> Result<bool> {
        // (the op computes out of place, a recorded `triangle`, and commits it)
        Ok(false)
    }
    fn lu_factor(&self, x: &Buffer, lx: &Layout, pivot: bool) -> Result<(Buffer, Buffer, Buffer)> {
        let (f, p, i) = Cpu.lu_factor(x, lx, pivot)?;
        let lx = lx.clone();
        record(
            "lu_factor",
            &[x],
            None,
            &[&f, &p, &i],
            Box::new(move |ins, _| {
                let (f, p, i) = Cpu.lu_factor(ins[0], &lx, pivot)?;
                Ok(Outs::from_iter([f, p, i]))
            }),
        )?;
        Ok((f, p, i))
    }
    fn trace(&self, x: &Buffer, lx: &Layout) -> Result<Buffer> {
        let out = Cpu.trace(x, lx)?;
        let lx = lx.clone();
        record(
            "trace",
            &[x],
            None,
            &[&out],
            Box::new(move |ins, _| Ok(Outs::from_iter([Cpu.trace(ins[0], &lx)?]))),
        )?;
        Ok(out)
    }
    fn lu_det(
        &self,
        lu: &Buffer,
        llu: &Layout,
        piv: &Buffer,
        lp: &Layout,
    ) -> Result<(Buffer, Buffer, Buffer)> {
        let (d, s, l) = Cpu.lu_det(lu, llu, piv, lp)?;
        let (llu, lp) = (llu.clone(), lp.clone());
        record(
            "lu_det",
            &[lu, piv],
            None,
            &[&d, &s, &l],
            Box::new(move |ins, _| {
                let (d, s, l) = Cpu.lu_det(ins[0], &llu, ins[1], &lp)?;
                Ok(Outs::from_iter([d, s, l]))
            }),
        )?;
        Ok((d, s, l))
    }
    fn lu_solve(
        &self,
        lu: &Buffer,
        llu: &Layout,
        piv: &Buffer,
        lp: &Layout,
        b: &Buffer,
        lb: &Layout,
        transpose: bool,
    ) -> Result<Buffer> {
        let out = Cpu.lu_solve(lu, llu, piv, lp, b, lb, transpose)?;
        let (llu, lp, lb) = (llu.clone(), lp.clone(), lb.clone());
        one("lu_solve", &[lu, piv, b], &out, move |i| {
            Cpu.lu_solve(i[0], &llu, i[1], &lp, i[2], &lb, transpose)
        })?;
        Ok(out)
    }
    fn solve_triangular(
        &self,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
        upper: bool,
        unit: bool,
        transpose: bool,
    ) -> Result<Buffer> {
        let out = Cpu.solve_triangular(a, la, b, lb, upper, unit, transpose)?;
        let (la, lb) = (la.clone(), lb.clone());
        one("solve_triangular", &[a, b], &out, move |i| {
            Cpu.solve_triangular(i[0], &la, i[1], &lb, upper, unit, transpose)
        })?;
        Ok(out)
    }
    fn cholesky(&self, x: &Buffer, lx: &Layout) -> Result<(Buffer, Buffer)> {
        let (l, i) = Cpu.cholesky(x, lx)?;
        let lx = lx.clone();
        record(
            "cholesky",
            &[x],
            None,
            &[&l, &i],
            Box::new(move |ins, _| {
                let (l, i) = Cpu.cholesky(ins[0], &lx)?;
                Ok(Outs::from_iter([l, i]))
            }),
        )?;
        Ok((l, i))
    }
    fn matrix_exp(&self, x: &Buffer, lx: &Layout) -> Result<Buffer> {
        let out = Cpu.matrix_exp(x, lx)?;
        let lx = lx.clone();
        one("matrix_exp", &[x], &out, move |i| Cpu.matrix_exp(i[0], &lx))?;
        Ok(out)
    }
    fn cholesky_inverse(&self, x: &Buffer, lx: &Layout, upper: bool) -> Result<(Buffer, Buffer)> {
        let (inv, info) = Cpu.cholesky_inverse(x, lx, upper)?;
        let lx = lx.clone();
        record(
            "cholesky_inverse",
            &[x],
            None,
            &[&inv, &info],
            Box::new(move |ins, _| {
                let (inv, info) = Cpu.cholesky_inverse(ins[0], &lx, upper)?;
                Ok(Outs::from_iter([inv, info]))
            }),
        )?;
        Ok((inv, info))
    }
    fn geqrf(&self, x: &Buffer, lx: &Layout) -> Result<(Buffer, Buffer)> {
        let (f, t) = Cpu.geqrf(x, lx)?;
        let lx = lx.clone();
        record(
            "geqrf",
            &[x],
            None,
            &[&f, &t],
            Box::new(move |ins, _| {
                let (f, t) = Cpu.geqrf(ins[0], &lx)?;
                Ok(Outs::from_iter([f, t]))
            }),
        )?;
        Ok((f, t))
    }
    fn householder_product(
        &self,
        a: &Buffer,
        la: &Layout,
        tau: &Buffer,
        lt: &Layout,
    ) -> Result<Buffer> {
        let out = Cpu.householder_product(a, la, tau, lt)?;
        let (la, lt) = (la.clone(), lt.clone());
        one("householder_product", &[a, tau], &out, move |i| {
            Cpu.householder_product(i[0], &la, i[1], &lt)
        })?;
        Ok(out)
    }
    fn ormqr(
        &self,
        a: &Buffer,
        la: &Layout,
        tau: &Buffer,
        lt: &Layout,
        c: &Buffer,
        lc: &Layout,
        left: bool,
        transpose: bool,
    ) -> Result<Buffer> {
        let out = Cpu.ormqr(a, la, tau, lt, c, lc, left, transpose)?;
        let (la, lt, lc) = (la.clone(), lt.clone(), lc.clone());
        one("ormqr", &[a, tau, c], &out, move |i| {
            Cpu.ormqr(i[0], &la, i[1], &lt, i[2], &lc, left, transpose)
        })?;
        Ok(out)
    }
    fn ldl_factor(&self, x: &Buffer, lx: &Layout) -> Result<(Buffer, Buffer, Buffer)> {
        let (f, p, i) = Cpu.ldl_factor(x, lx)?;
        let lx = lx.clone();
        record(
            "ldl_factor",
            &[x],
            None,
            &[&f, &p, &i],
            Box::new(move |ins, _| {
                let (f, p, i) = Cpu.ldl_factor(ins[0], &lx)?;
                Ok(Outs::from_iter([f, p, i]))
            }),
        )?;
        Ok((f, p, i))
    }
    fn ldl_solve(
        &self,
        ld: &Buffer,
        lld: &Layout,
        piv: &Buffer,
        lp: &Layout,
        b: &Buffer,
        lb: &Layout,
    ) -> Result<Option<Buffer>> {
        let out = Cpu.ldl_solve(ld, lld, piv, lp, b, lb)?;
        let (lld, lp, lb) = (lld.clone(), lp.clone(), lb.clone());
        maybe("ldl_solve", &[ld, piv, b], &out, move |i| {
            Cpu.ldl_solve(i[0], &lld, i[1], &lp, i[2], &lb)
        })?;
        Ok(out)
    }
    fn masked_select(
        &self,
        _x: &Buffer,
        _lx: &Layout,
        _mask: &Buffer,
        _lm: &Layout,
    ) -> Result<Option<Buffer>> {
        // (its size depends on the mask's values: the op's host plan, which a recording
        // refuses, as before)
        Ok(None)
    }

    fn bmm(&self, a: &Buffer, la: &Layout, b: &Buffer, lb: &Layout) -> Result<Buffer> {
        let out = Cpu.bmm(a, la, b, lb)?;
        let (la, lb) = (la.clone(), lb.clone());
        one("bmm", &[a, b], &out, move |i| Cpu.bmm(i[0], &la, i[1], &lb))?;
        Ok(out)
    }
    fn addmm(
        &self,
        c: &Buffer,
        lc: &Layout,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
    ) -> Result<Option<Buffer>> {
        let out = Cpu.addmm(c, lc, a, la, b, lb)?;
        let (lc, la, lb) = (lc.clone(), la.clone(), lb.clone());
        maybe("addmm", &[c, a, b], &out, move |i| {
            Cpu.addmm(i[0], &lc, i[1], &la, i[2], &lb)
        })?;
        Ok(out)
    }

    fn arange(&self, start: f64, step: f64, n: usize, dtype: DType) -> Result<Option<Buffer>> {
        let out = Cpu.arange(start, step, n, dtype)?;
        maybe("arange", &[], &out, move |_| {
            Cpu.arange(start, step, n, dtype)
        })?;
        Ok(out)
    }
    fn linspace(&self, start: f64, end: f64, n: usize, dtype: DType) -> Result<Buffer> {
        let out = Cpu.linspace(start, end, n, dtype)?;
        one("linspace", &[], &out, move |_| {
            Cpu.linspace(start, end, n, dtype)
        })?;
        Ok(out)
    }
    fn eye(&self, n: usize, m: usize, dtype: DType) -> Result<Buffer> {
        let out = Cpu.eye(n, m, dtype)?;
        one("eye", &[], &out, move |_| Cpu.eye(n, m, dtype))?;
        Ok(out)
    }
    fn zeros(&self, dtype: DType, n: usize) -> Result<Buffer> {
        let out = Cpu.zeros(dtype, n)?;
        one("zeros", &[], &out, move |_| Cpu.zeros(dtype, n))?;
        Ok(out)
    }
    fn empty(&self, dtype: DType, n: usize) -> Result<Buffer> {
        let out = Cpu.empty(dtype, n)?;
        one("empty", &[], &out, move |_| Cpu.empty(dtype, n))?;
        Ok(out)
    }
    fn full(&self, dtype: DType, n: usize, v: Scalar) -> Result<Buffer> {
        let out = Cpu.full(dtype, n, v)?;
        one("full", &[], &out, move |_| Cpu.full(dtype, n, v))?;
        Ok(out)
    }
}
