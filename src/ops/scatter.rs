//! Writes along a dim: scatter (a tensor or a number), scatter_add, index_add,
//! index_copy, index_fill (out of place; their in-place forms commit these through
//! `inplace`), and masked_select. The scatter family reads its index in place (values
//! checked with torch's messages) and runs the backend's `scatter` / `index_write`,
//! which write in index order as ATen's CPU loops do (a number written as one element
//! under zero strides).

use super::elementwise::{Saver, grad0};
use super::{apply, new_tensor};
use crate::autograd::function::{Backward, BackwardCtx, Grads, SavedField};
use crate::backend::{self as k, host};
use crate::dtype::{DType, Scalar};
use crate::layout::Layout;
use crate::ops::*;
use crate::shape::{Shape, fmt_shape, wrap_dim};
use crate::storage::Buffer;
use crate::tensor::Tensor;
use crate::{Error, Result};
use std::borrow::Cow;

/// A layout of at least one dim (a 0-d tensor as one element).
fn at_least_1d(l: &Layout) -> Layout {
    if l.ndim() == 0 {
        Layout {
            shape: smallvec::smallvec![1],
            strides: smallvec::smallvec![1],
            offset: l.offset,
        }
    } else {
        l.clone()
    }
}

/// How an op reports (and whether it wraps) an index out of range.
#[derive(Clone, Copy, PartialEq)]
enum Bounds {
    /// scatter, index_add: RuntimeError, no wrapping.
    Runtime,
    /// index_copy: IndexError prefixed with its name, no wrapping.
    Copy,
    /// index_fill: negatives count from the end; IndexError.
    Wrap,
}

/// Runs `f` on an int64 index's values, row-major, each checked to lie in `[0, size)`
/// (torch's error naming the index, the dim and the size, by `rule`): the index's own
/// memory where it is contiguous and in range (its read lock held through `f`).
fn with_index<R>(
    index: &Tensor,
    size: usize,
    dim: usize,
    rule: Bounds,
    f: impl FnOnce(&[i64]) -> Result<R>,
) -> Result<R> {
    let s = index.snapshot();
    let r = s.storage.read();
    let h = host::read(&r)?;
    let Buffer::I64(v) = &*h else {
        return Err(Error::Internal("index buffer is not int64".into()));
    };
    let idx = host::index_values(v, &s.layout, size, rule == Bounds::Wrap).map_err(|i| {
        let msg = format!("index {i} is out of bounds for dimension {dim} with size {size}");
        match rule {
            Bounds::Runtime => Error::runtime(msg),
            Bounds::Copy => Error::index(format!("index_copy_(): {msg}")),
            Bounds::Wrap => Error::index(msg),
        }
    })?;
    f(&idx)
}

/// A number in `x`'s dtype on x's device as one element read under zero strides over
/// `shape` (what the kernels write for scatter's and index_fill's value).
fn number(x: &Tensor, shape: &[usize], v: Scalar) -> Result<(Buffer, Layout)> {
    let buf = k::on(x.device())?.full(x.dtype(), 1, v)?;
    let layout = Layout {
        shape: shape.iter().copied().collect(),
        strides: smallvec::smallvec![0; shape.len()],
        offset: 0,
    };
    Ok((buf, layout))
}

/// `x` with `values` written along `d` at the index's positions by the backend's
/// `scatter` (index elements) or, with `slices`, `index_write` (whole slices), `+=`
/// with `add`: a new contiguous tensor of x's shape.
fn write(
    x: &Tensor,
    d: usize,
    index: &Tensor,
    rule: Bounds,
    values: Source<'_>,
    slices: bool,
    add: bool,
) -> Result<Tensor> {
    let xs = x.snapshot();
    let lx = at_least_1d(&xs.layout);
    let ishape = shape1(index);
    let run = |idx: &[i64], vb: &Buffer, lv: &Layout| -> Result<Tensor> {
        let xb = xs.storage.read();
        let out = if slices {
            k::index_write(&xb, &lx, d, idx, vb, lv, add)?
        } else {
            k::scatter(&xb, &lx, d, idx, &ishape, vb, lv, add)?
        };
        Ok(new_tensor(out, &xs.layout.shape))
    };
    with_index(index, lx.shape[d], d, rule, |idx| match values {
        Source::Tensor(t, l) => {
            let vs = t.snapshot();
            let lv = l.unwrap_or_else(|| at_least_1d(&vs.layout));
            let vb = vs.storage.read();
            run(idx, &vb, &lv)
        }
        Source::Number(buf, lv) => run(idx, &buf, &lv),
    })
}

/// What a scatter-family op writes: a tensor (over a layout of its own, else its own,
/// at least 1-D), or a number (one element and its zero-stride layout).
enum Source<'a> {
    Tensor(&'a Tensor, Option<Layout>),
    Number(Buffer, Layout),
}

fn dims1(t: &Tensor) -> usize {
    t.ndim().max(1)
}

fn shape1(t: &Tensor) -> Shape {
    let s = t.shape();
    if s.is_empty() {
        smallvec::smallvec![1]
    } else {
        s
    }
}

/// torch's scatter/gather checks of `index` against `x` (and `src`): the index's dtype,
/// the ranks, and sizes no larger than x's apart from `d` (no larger than src's at all).
fn scatter_checks(
    name: &str,
    x: &Tensor,
    d: usize,
    index: &Tensor,
    src: Option<&Tensor>,
) -> Result<()> {
    if index.dtype() != DType::I64 {
        // (torch's message names scatter for scatter_add too)
        return Err(Error::runtime(
            "scatter(): Expected dtype int32/int64 for index",
        ));
    }
    if let Some(s) = src
        && s.dtype() != x.dtype()
    {
        return Err(Error::runtime(format!(
            "{name}(): Expected self.dtype to be equal to src.dtype"
        )));
    }
    if dims1(index) != dims1(x) {
        return Err(Error::runtime(
            "Index tensor must have the same number of dimensions as self tensor",
        ));
    }
    if let Some(s) = src {
        // (torch wraps the dim against src too)
        wrap_dim(d as i64, s.ndim())?;
    }
    if let Some(s) = src
        && dims1(index) != dims1(s)
    {
        return Err(Error::runtime(
            "Index tensor must have the same number of dimensions as src tensor",
        ));
    }
    if index.numel() == 0 {
        return Ok(());
    }
    let (is, xs) = (shape1(index), shape1(x));
    let bad_self = is
        .iter()
        .zip(&xs)
        .enumerate()
        .any(|(j, (&a, &b))| j != d && a > b);
    match src {
        Some(s) => {
            let ss = shape1(s);
            if bad_self || is.iter().zip(&ss).any(|(&a, &b)| a > b) {
                return Err(Error::runtime(format!(
                    "Expected index {} to be no larger than self {} apart from dimension {d} and to be no larger size than src {}",
                    fmt_shape(&index.shape()),
                    fmt_shape(&x.shape()),
                    fmt_shape(&s.shape())
                )));
            }
        }
        None if bad_self => {
            return Err(Error::runtime(format!(
                "Expected index {} to be no larger than self {} apart from dimension {d}",
                fmt_shape(&index.shape()),
                fmt_shape(&x.shape())
            )));
        }
        None => {}
    }
    Ok(())
}

/// `src` restricted to the index's shape (its first elements along every dim).
fn src_layout(src: &Tensor, index: &Tensor) -> Layout {
    let l = at_least_1d(&src.layout());
    Layout {
        shape: shape1(index),
        strides: l.strides,
        offset: l.offset,
    }
}

/// `x.scatter(dim, index, src)` (`add`: `scatter_add`).
pub fn scatter(x: &Tensor, dim: i64, index: &Tensor, src: &Tensor, add: bool) -> Result<Tensor> {
    let name = if add { "scatter_add" } else { "scatter" };
    let d = wrap_dim(dim, x.ndim())?;
    scatter_checks(name, x, d, index, Some(src))?;
    let lv = src_layout(src, index);
    let kind = if add {
        ScatterKind::ScatterAdd
    } else {
        ScatterKind::Scatter0
    };
    apply(
        if add {
            "aten::scatter_add"
        } else {
            "aten::scatter"
        },
        &[x, src],
        || {
            let src = Source::Tensor(src, Some(lv));
            write(x, d, index, Bounds::Runtime, src, false, add)
        },
        |_| {
            let mut sv = Saver::default();
            sv.input_if(true, index);
            (ScatterFamilyBackward::new(kind, d, x, src), sv.list)
        },
    )
}

/// `x.scatter_reduce(dim, index, src, reduce, include_self=)`: each `src` element joined
/// into the element `index` names along `dim` by `reduce` ("sum", "prod", "mean",
/// "amax", "amin"), in index order (ATen's CPU loop: torch's bits); without
/// `include_self` the positions written start from the reduction's identity (x's value
/// does not take part; "mean" does not count it). One node, ScatterReduceBackward0, with
/// torch's `scatter_reduce_backward`.
pub fn scatter_reduce(
    x: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    reduce: k::ScatterReduce,
    include_self: bool,
) -> Result<Tensor> {
    let d = wrap_dim(dim, dims1(x))?;
    // (torch's messages name scatter)
    scatter_checks("scatter", x, d, index, Some(src))?;
    let forward = || {
        crate::autograd::grad_mode::with_grad_mode(false, || {
            scatter_reduce_values(x, d, index, src, reduce, include_self)
        })
    };
    apply("aten::scatter_reduce", &[x, src], forward, |y| {
        let mut sv = Saver::default();
        let saved = [
            sv.input_if(true, index),
            sv.input_if(true, x),
            sv.input_if(true, src),
            Some(sv.output(y)),
        ];
        let node = ScatterReduceBackward0 {
            dim: d,
            reduce,
            include_self,
            saved,
        };
        (node, sv.list)
    })
}

/// scatter_reduce's values (nothing recorded).
fn scatter_reduce_values(
    x: &Tensor,
    d: usize,
    index: &Tensor,
    src: &Tensor,
    reduce: k::ScatterReduce,
    include_self: bool,
) -> Result<Tensor> {
    use k::ScatterReduce as R;
    let base = if include_self {
        x.clone()
    } else {
        scatter_value(x, d as i64, index, identity(reduce, x.dtype()))?
    };
    let bs = base.snapshot();
    let lx = at_least_1d(&bs.layout);
    let ishape = shape1(index);
    let lv = src_layout(src, index);
    let out = with_index(index, lx.shape[d], d, Bounds::Runtime, |idx| {
        let vs = src.snapshot();
        let xb = bs.storage.read();
        let vb = vs.storage.read();
        let out = k::scatter_reduce(&xb, &lx, d, idx, &ishape, &vb, &lv, reduce)?;
        Ok(new_tensor(out, &bs.layout.shape))
    })?;
    if reduce != R::Mean {
        return Ok(out);
    }
    // the sum divided by the count of what went in (1 where nothing did)
    let counts = scatter_reduce_counts(x, d, index, src, include_self)?;
    if out.dtype().is_float() {
        div(&out, &counts)
    } else {
        floor_divide(Operand::T(&out), Operand::T(&counts))
    }
}

/// The reduction's identity in `dtype`: what the positions written start from without
/// `include_self` (ATen's init values: infinities for float extrema, the integer limits).
fn identity(reduce: k::ScatterReduce, dtype: DType) -> Scalar {
    use k::ScatterReduce as R;
    let float = dtype.is_float();
    match reduce {
        R::Sum | R::Mean => Scalar::Int(0),
        R::Prod => Scalar::Int(1),
        R::Amax if float => Scalar::Float(f64::NEG_INFINITY),
        R::Amin if float => Scalar::Float(f64::INFINITY),
        R::Amax if dtype == DType::Bool => Scalar::Bool(false),
        R::Amin if dtype == DType::Bool => Scalar::Bool(true),
        R::Amax => Scalar::Int(i64::MIN),
        R::Amin => Scalar::Int(i64::MAX),
    }
}

/// `x.index_reduce(dim, index, source, reduce, include_self=)`'s values, nothing recorded
/// (torch's index_reduce_func_impl; the caller has made the checks and records the node):
/// `source`'s slices along `dim` joined into the slices `index` names, whole slices at a
/// time, in index order; without `include_self` those slices start from the reduction's
/// identity; "mean" divides by the count of what went in (x's own slice counted with
/// `include_self`; 1 where nothing did), floor division for integers.
pub fn index_reduce_values(
    x: &Tensor,
    dim: i64,
    index: &Tensor,
    source: &Tensor,
    reduce: k::ScatterReduce,
    include_self: bool,
) -> Result<Tensor> {
    crate::autograd::grad_mode::with_grad_mode(false, || {
        let d = wrap_dim(dim, dims1(x))?;
        if source.dtype() != x.dtype() || dims1(source) != dims1(x) {
            return Err(Error::runtime(
                "index_reduce_(): source must have self's dtype and number of dims",
            ));
        }
        let base = if include_self {
            x.clone()
        } else {
            index_fill(x, d as i64, index, identity(reduce, x.dtype()))?
        };
        let bs = base.snapshot();
        let lx = at_least_1d(&bs.layout);
        let size = lx.shape[d];
        let out = with_index(index, size, d, Bounds::Runtime, |idx| {
            let vs = source.snapshot();
            let lv = at_least_1d(&vs.layout);
            if lv.shape[d] != idx.len()
                || (0..lv.ndim()).any(|j| j != d && lv.shape[j] != lx.shape[j])
            {
                return Err(Error::runtime(
                    "index_reduce_(): source's shape must be self's with the index's length along dim",
                ));
            }
            let (xb, vb) = (bs.storage.read(), vs.storage.read());
            let out = k::index_reduce(&xb, &lx, d, idx, &vb, &lv, reduce)?;
            Ok(new_tensor(out, &bs.layout.shape))
        })?;
        if reduce != k::ScatterReduce::Mean {
            return Ok(out);
        }
        // the count along `dim` of what went in, 1 where nothing did, broadcast over the
        // other dims (recorded ops, so a replayed step recounts a new index)
        let (dtype, n) = (out.dtype(), index.numel());
        let (start, ones) = crate::device::with_default_device(out.device(), || {
            let start = full(&[size], Scalar::Int(i64::from(include_self)), dtype)?;
            Ok::<_, Error>((start, full(&[n], Scalar::Int(1), dtype)?))
        })?;
        let counts = index_add(&start, 0, &reshape(index, &[-1])?, &ones, Scalar::Int(1))?;
        let counts = masked_fill(&counts, &eq_scalar(&counts, 0.0)?, Scalar::Int(1))?;
        let mut shape = vec![1i64; out.ndim().max(1)];
        shape[d] = size as i64;
        let counts = reshape(&counts, &shape[..out.ndim()])?;
        if out.dtype().is_float() {
            div(&out, &counts)
        } else {
            floor_divide(Operand::T(&out), Operand::T(&counts))
        }
    })
}

/// How many values each position of "mean" averages (x's own when `include_self`), 1
/// where none (so x's value is kept), in x's dtype.
fn scatter_reduce_counts(
    x: &Tensor,
    d: usize,
    index: &Tensor,
    src: &Tensor,
    include_self: bool,
) -> Result<Tensor> {
    let start = if include_self {
        ones_like(x)?
    } else {
        zeros_like(x)?
    };
    let n = scatter(&start, d as i64, index, &ones_like(src)?, true)?;
    masked_fill(&n, &eq_scalar(&n, 0.0)?, Scalar::Int(1))
}

/// ScatterReduceBackward0: torch's `scatter_reduce_backward` for each reduction, over
/// recorded ops (so double backward works): "sum" passes the gradient (gathered for
/// src), "mean" divides it by the counts, "amax"/"amin" split it evenly among the
/// elements equal to the result, "prod" is the product of the others (zeros handled as
/// torch does); without `include_self`, self gets nothing where it was replaced.
#[derive(Clone)]
pub struct ScatterReduceBackward0 {
    dim: usize,
    reduce: k::ScatterReduce,
    include_self: bool,
    /// index, self, src, result
    saved: [Option<u8>; 4],
}
impl Backward for ScatterReduceBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("dim", SavedField::Int(self.dim as i64)),
            ("include_self", SavedField::Bool(self.include_self)),
            ("index", SavedField::Tensor(self.saved[0])),
            ("reduce", SavedField::Str(self.reduce.name())),
            ("result", SavedField::Tensor(self.saved[3])),
            ("self", SavedField::Tensor(self.saved[1])),
            ("src", SavedField::Tensor(self.saved[2])),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "ScatterReduceBackward0".into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        use k::ScatterReduce as R;
        let g = grad0(g)?;
        let get = |i: usize| super::elementwise::get(ctx, self.saved[i]);
        let (index, x, src, result) = (get(0)?, get(1)?, get(2)?, get(3)?);
        let d = self.dim as i64;
        let (mut gx, gs) = match self.reduce {
            R::Sum => (g.clone(), gather(&g, d, &index)?),
            R::Mean => {
                let n = scatter_reduce_counts(&x, self.dim, &index, &src, self.include_self)?;
                let gs = div(&gather(&g, d, &index)?, &gather(&n, d, &index)?)?;
                (div(&g, &n)?, gs)
            }
            R::Amax | R::Amin => {
                let value = gather(&result, d, &index)?;
                let self_is = to_dtype(&eq(&x, &result)?, x.dtype())?;
                let src_is = to_dtype(&eq(&src, &value)?, x.dtype())?;
                let count = scatter(&self_is, d, &index, &src_is, true)?;
                let spread = div(&g, &count)?;
                (
                    mul(&self_is, &spread)?,
                    mul(&src_is, &gather(&spread, d, &index)?)?,
                )
            }
            R::Prod => {
                // self: grad · (the product of the others), through self with its zeros
                // as 1; src: through the result, or (a single zero at its position) the
                // product of the others
                let one = Scalar::Int(1);
                let masked_self = masked_fill(&x, &eq_scalar(&x, 0.0)?, one)?;
                let masked_self_result =
                    scatter_reduce(&masked_self, d, &index, &src, R::Prod, self.include_self)?;
                let gx = div(&mul(&g, &masked_self_result)?, &masked_self)?;
                let src_zero = eq_scalar(&src, 0.0)?;
                let zeros_at = scatter(
                    &zeros_like(&x)?,
                    d,
                    &index,
                    &to_dtype(&src_zero, x.dtype())?,
                    true,
                )?;
                let src_num_zeros = gather(&zeros_at, d, &index)?;
                let single = logical_and(&src_zero, &eq_scalar(&src_num_zeros, 1.0)?)?;
                let masked_src = masked_fill(&src, &single, one)?;
                let masked_src_result =
                    scatter_reduce(&x, d, &index, &masked_src, R::Prod, self.include_self)?;
                let through_others = gather(&mul(&g, &masked_src_result)?, d, &index)?;
                let through_result = div(
                    &gather(&mul(&g, &result)?, d, &index)?,
                    &masked_fill(&src, &src_zero, one)?,
                )?;
                (gx, where_(&single, &through_others, &through_result)?)
            }
        };
        if !self.include_self {
            gx = scatter_value(&gx, d, &index, Scalar::Int(0))?;
        }
        let mut out = Grads::new();
        out.push(ctx.needs_input_grad(0).then_some(gx));
        out.push(ctx.needs_input_grad(1).then_some(gs));
        Ok(out)
    }
    // torch's scatter_reduce_jvp: "sum" and "mean" are linear; "amax"/"amin" average the
    // tangents of the elements equal to the result; "prod" has none (torch's gives none)
    fn jvp(&self, ctx: &BackwardCtx<'_>, t: &[Option<Tensor>]) -> Option<Result<Grads>> {
        use k::ScatterReduce as R;
        if self.reduce == R::Prod {
            return Some(Ok(smallvec::smallvec![None]));
        }
        Some((|| {
            let index = super::elementwise::get(ctx, self.saved[0])?;
            let x = super::elementwise::get(ctx, self.saved[1])?;
            let src = super::elementwise::get(ctx, self.saved[2])?;
            let tx = match t.first().and_then(Option::as_ref) {
                Some(tx) => tx.clone(),
                None => zeros_like(&x)?,
            };
            let ts = match t.get(1).and_then(Option::as_ref) {
                Some(ts) => ts.clone(),
                None => zeros_like(&src)?,
            };
            let d = self.dim as i64;
            if matches!(self.reduce, R::Sum | R::Mean) {
                let r = scatter_reduce(&tx, d, &index, &ts, self.reduce, self.include_self)?;
                return Ok(smallvec::smallvec![Some(r)]);
            }
            let result = super::elementwise::get(ctx, self.saved[3])?;
            let value = gather(&result, d, &index)?;
            let mut self_is = to_dtype(&eq(&x, &result)?, tx.dtype())?;
            if !self.include_self {
                self_is = scatter_value(&self_is, d, &index, Scalar::Int(0))?;
            }
            let src_is = to_dtype(&eq(&src, &value)?, tx.dtype())?;
            let n = scatter(&self_is, d, &index, &src_is, true)?;
            let sum = scatter(&mul(&self_is, &tx)?, d, &index, &mul(&src_is, &ts)?, true)?;
            Ok(smallvec::smallvec![Some(div(&sum, &n)?)])
        })())
    }
}

/// `x.scatter(dim, index, value)` with a number.
pub fn scatter_value(x: &Tensor, dim: i64, index: &Tensor, value: Scalar) -> Result<Tensor> {
    let d = wrap_dim(dim, x.ndim())?;
    scatter_checks("scatter", x, d, index, None)?;
    apply(
        "aten::scatter",
        &[x],
        || {
            let (buf, l) = number(x, &shape1(index), value)?;
            write(
                x,
                d,
                index,
                Bounds::Runtime,
                Source::Number(buf, l),
                false,
                false,
            )
        },
        |_| {
            let mut sv = Saver::default();
            sv.input_if(true, index);
            (
                ScatterFamilyBackward::new(ScatterKind::Scatter1, d, x, x),
                sv.list,
            )
        },
    )
}

/// The 1-D (or 0-d) index of index_add / index_copy / index_fill, checked against x's
/// size along `d` (torch's out-of-bounds RuntimeError).
fn vector_index(name: &str, index: &Tensor) -> Result<()> {
    if index.ndim() > 1 {
        return Err(Error::index(format!(
            "{name}(): Index is supposed to be a vector, but got dim: {} with type: {} and size: {}",
            index.ndim(),
            index.dtype().scalar_type_name(),
            fmt_shape(&index.shape())
        )));
    }
    if index.dtype() != DType::I64 {
        return Err(Error::runtime(format!(
            "{name}(): Expected dtype int32/int64 for index but got: {}",
            index.dtype().scalar_type_name()
        )));
    }
    Ok(())
}

/// index_add's and index_copy's checks of `source` against `x` along `d`.
fn source_checks(name: &str, x: &Tensor, d: usize, index: &Tensor, source: &Tensor) -> Result<()> {
    vector_index(name, index)?;
    if x.dtype() != source.dtype() {
        return Err(Error::runtime(format!(
            "{name}(): self ({}) and source ({}) must have the same scalar type",
            x.dtype().scalar_type_name(),
            source.dtype().scalar_type_name()
        )));
    }
    if !(d == 0 || d < source.ndim()) {
        return Err(Error::index(format!(
            "{name}(): Indexing dim {d} is out of bounds of the source tensor with dim {}",
            source.ndim()
        )));
    }
    let ss = source.shape();
    let n = if ss.is_empty() { 1 } else { ss[d] };
    if index.numel() != n {
        return Err(Error::runtime(format!(
            "{name}(): Number of indices ({}) should be equal to source.size(dim): ({n}), for dim: {d}",
            index.numel()
        )));
    }
    let xs = x.shape();
    let same = ss.len() == xs.len()
        && ss
            .iter()
            .zip(&xs)
            .enumerate()
            .all(|(j, (a, b))| j == d || a == b);
    if !(same || ss.is_empty() || xs.is_empty()) {
        return Err(Error::runtime(format!(
            "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = {} source.shape = {}",
            fmt_shape(&xs),
            fmt_shape(&ss)
        )));
    }
    Ok(())
}

/// `x.index_add(dim, index, source, alpha=alpha)`.
pub fn index_add(
    x: &Tensor,
    dim: i64,
    index: &Tensor,
    source: &Tensor,
    alpha: Scalar,
) -> Result<Tensor> {
    let d = wrap_dim(dim, x.ndim())?;
    source_checks("index_add_", x, d, index, source)?;
    // (an integer tensor takes alpha as an integer, as ATen's kernel does)
    let alpha = match (x.dtype().is_float(), alpha) {
        (false, Scalar::Float(f)) => Scalar::Int(f as i64),
        _ => alpha,
    };
    apply(
        "aten::index_add",
        &[x, source],
        || {
            let s = source.detach();
            let s = if alpha.as_f64() == 1.0 {
                s
            } else {
                mul_scalar(&s, alpha)?
            };
            let s = to_dtype(&s, x.dtype())?;
            write(
                x,
                d,
                index,
                Bounds::Runtime,
                Source::Tensor(&s, None),
                true,
                true,
            )
        },
        |_| {
            let mut sv = Saver::default();
            sv.input_if(true, index);
            let mut b = ScatterFamilyBackward::new(ScatterKind::IndexAdd, d, x, source);
            b.alpha = alpha;
            b.source_slot = sv.input_if(super::wants_grad(source), source);
            (b, sv.list)
        },
    )
}

/// `x.index_copy(dim, index, source)`.
pub fn index_copy(x: &Tensor, dim: i64, index: &Tensor, source: &Tensor) -> Result<Tensor> {
    let d = wrap_dim(dim, x.ndim())?;
    index_copy_checks(x, d, index, source)?;
    apply(
        "aten::index_copy",
        &[x, source],
        || {
            let src = Source::Tensor(source, None);
            write(x, d, index, Bounds::Copy, src, true, false)
        },
        |_| {
            let mut sv = Saver::default();
            sv.input_if(true, index);
            let mut b = ScatterFamilyBackward::new(ScatterKind::IndexCopy, d, x, source);
            b.source_slot = sv.input_if(super::wants_grad(source), source);
            (b, sv.list)
        },
    )
}

/// torch's index_copy checks (its own messages, not index_add's).
fn index_copy_checks(x: &Tensor, d: usize, index: &Tensor, source: &Tensor) -> Result<()> {
    if index.ndim() > 1 {
        return Err(Error::index(format!(
            "index_copy_(): Index should have dimension 1 or 0 (got {})",
            index.ndim()
        )));
    }
    let ss = shape1(source);
    let n = if source.ndim() == 0 {
        1
    } else {
        ss.get(d).copied().unwrap_or(1)
    };
    if index.numel() != n {
        return Err(Error::index(format!(
            "index_copy_(): Number of indices ({}) should be equal to source.size(dim) ({n})",
            index.numel()
        )));
    }
    if index.dtype() != DType::I64 {
        return Err(Error::runtime(format!(
            "index_copy_(): Expected a long tensor for index, but got {}",
            index.dtype().scalar_type_name()
        )));
    }
    if x.dtype() != source.dtype() {
        return Err(Error::runtime(format!(
            "index_copy_(): self and source expected to have the same dtype, but got (self) {} and (source) {}",
            x.dtype().scalar_type_name(),
            source.dtype().scalar_type_name()
        )));
    }
    let xs = shape1(x);
    // the slices (every dim but d) must match
    let xslice: Vec<usize> = xs
        .iter()
        .enumerate()
        .filter(|&(j, _)| j != d)
        .map(|(_, &v)| v)
        .collect();
    let sslice: Vec<usize> = if source.ndim() == 0 {
        Vec::new()
    } else {
        ss.iter()
            .enumerate()
            .filter(|&(j, _)| j != d)
            .map(|(_, &v)| v)
            .collect()
    };
    if xslice.len() != sslice.len() && !(source.ndim() == 0 && x.numel() <= 1) {
        return Err(Error::index(format!(
            "index_copy_(): When source and destination are not scalars, their dimensionality must match. Source dimensionality ({}), destination dimensionality ({})",
            source.ndim(),
            x.ndim()
        )));
    }
    if let Some(j) = (0..xslice.len().min(sslice.len())).find(|&j| xslice[j] != sslice[j]) {
        return Err(Error::runtime(format!(
            "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: {} at dimension {j} and source slice shape: {} at dimension {j}.",
            xslice[j], sslice[j]
        )));
    }
    Ok(())
}

/// index_fill's index checks.
fn index_fill_checks(index: &Tensor) -> Result<()> {
    if index.dtype() != DType::I64 {
        return Err(Error::index(
            "index_fill_(): Expected dtype int64 for index.",
        ));
    }
    if index.ndim() > 1 {
        return Err(Error::runtime("Index has to be a vector/scalar"));
    }
    Ok(())
}

/// `x.index_fill(dim, index, value)` with a 0-d tensor `value` (torch's
/// IndexFillBackward1: the value gets the sum of the filled positions' gradient).
pub fn index_fill_tensor(x: &Tensor, dim: i64, index: &Tensor, value: &Tensor) -> Result<Tensor> {
    let d = wrap_dim(dim, x.ndim())?;
    index_fill_checks(index)?;
    if value.ndim() != 0 {
        return Err(Error::runtime(format!(
            "index_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
            value.ndim()
        )));
    }
    let v = value.item()?;
    let mut vshape = shape1(x);
    vshape[d] = index.numel();
    apply(
        "aten::index_fill",
        &[x, value],
        || {
            let (buf, l) = number(x, &vshape, cast_scalar(v, x.dtype()))?;
            write(
                x,
                d,
                index,
                Bounds::Wrap,
                Source::Number(buf, l),
                true,
                false,
            )
        },
        |_| {
            let mut sv = Saver::default();
            sv.input_if(true, index);
            (
                ScatterFamilyBackward::new(ScatterKind::IndexFill1, d, x, value),
                sv.list,
            )
        },
    )
}

/// A number in `dtype`'s kind (a float cast to an integer truncates, as a copy does).
fn cast_scalar(v: Scalar, dtype: DType) -> Scalar {
    match (dtype, v) {
        (DType::I64, Scalar::Float(f)) => Scalar::Int(f as i64),
        (DType::Bool, v) => Scalar::Bool(v.as_f64() != 0.0),
        _ => v,
    }
}

/// `x.index_fill(dim, index, value)` with a number.
pub fn index_fill(x: &Tensor, dim: i64, index: &Tensor, value: Scalar) -> Result<Tensor> {
    let d = wrap_dim(dim, x.ndim())?;
    index_fill_checks(index)?;
    value.check_fits(x.dtype())?;
    let value = cast_scalar(value, x.dtype());
    let mut vshape = shape1(x);
    vshape[d] = index.numel();
    apply(
        "aten::index_fill",
        &[x],
        || {
            let (buf, l) = number(x, &vshape, value)?;
            write(
                x,
                d,
                index,
                Bounds::Wrap,
                Source::Number(buf, l),
                true,
                false,
            )
        },
        |_| {
            let mut sv = Saver::default();
            sv.input_if(true, index);
            (
                ScatterFamilyBackward::new(ScatterKind::IndexFill, d, x, x),
                sv.list,
            )
        },
    )
}

/// `x.masked_select(mask)`: the elements of x (broadcast with the mask) where the mask is
/// true, in row-major order, as a 1-D tensor.
pub fn masked_select(x: &Tensor, mask: &Tensor) -> Result<Tensor> {
    if mask.dtype() != DType::Bool {
        return Err(Error::runtime(
            "masked_select: expected BoolTensor for mask",
        ));
    }
    // (torch expands the mask against self: its message names the mask first)
    let shape = crate::shape::broadcast_shapes(&mask.shape(), &x.shape())?;
    // a 0-d result shape as one element
    let work: Vec<usize> = if shape.is_empty() {
        vec![1]
    } else {
        shape.to_vec()
    };
    let w: Vec<i64> = work.iter().map(|&n| n as i64).collect();
    let mb = reshape(&expand(mask, &shape)?, &w)?;
    let xshape = x.shape();
    apply(
        "aten::masked_select",
        &[x],
        || {
            let xb = reshape(&expand(&x.detach(), &shape)?, &w)?;
            // one kernel: the kept elements counted per chunk, then copied in place
            let (xs, ms) = (xb.snapshot(), mb.snapshot());
            let fast = crate::backend::masked_select(
                &xs.storage.read(),
                &xs.layout,
                &ms.storage.read(),
                &ms.layout,
            )?;
            if let Some(buf) = fast {
                let n = buf.len();
                return Ok(super::new_tensor(buf, &[n]));
            }
            // (a backend without the kernel: x indexed by the mask's coordinates)
            let coords = nonzero_indices(&mb)?;
            let idx: Vec<Option<Tensor>> = coords.iter().cloned().map(Some).collect();
            Ok(super::fresh_result(index(&xb, &idx)?))
        },
        |_| {
            let mut sv = Saver::default();
            sv.input_if(true, mask);
            sv.input_if(true, x);
            (
                MaskedSelectBackward0 {
                    shapes: Box::new([xshape, shape.clone()]),
                },
                sv.list,
            )
        },
    )
}

/// `x.nonzero()`: the coordinates of the nonzero elements, `[n, x.ndim()]`, in row-major
/// order, each coordinate's column contiguous (torch's layout).
pub fn nonzero(x: &Tensor) -> Result<Tensor> {
    super::apply_nondiff("aten::nonzero", || {
        let s = x.snapshot();
        let nd = s.layout.ndim();
        if nd == 0 {
            let n = i64::from(x.item()?.as_f64() != 0.0);
            return zeros(&[n as usize, 0], DType::I64);
        }
        // any dtype's elements tested against 0 as they are read, counted per chunk and
        // then written in place
        let coords = {
            let r = s.storage.read();
            crate::backend::host::nonzero_coords(&*crate::backend::host::read(&r)?, &s.layout)
        };
        let n = coords.len() / nd;
        // (laid out as torch's: [ndim, n] row-major, transposed)
        let t = super::new_tensor_on(Buffer::I64(coords.into()), &[nd, n], s.storage.device())?;
        Ok(t.alias_with_layout(Layout {
            shape: smallvec::smallvec![n, nd],
            strides: smallvec::smallvec![1, n],
            offset: 0,
        }))
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ScatterKind {
    Scatter0,
    Scatter1,
    ScatterAdd,
    IndexAdd,
    IndexCopy,
    IndexFill,
    IndexFill1,
}

#[derive(Clone)]
pub struct ScatterFamilyBackward {
    kind: ScatterKind,
    dim: u32,
    /// source's rank (index_add / index_copy: torch's `source_dim`)
    source_dim: u32,
    alpha: Scalar,
    /// index_add / index_copy: where `source` is saved (torch saves it when it needs a
    /// gradient; shown as `_saved_source`)
    source_slot: Option<u8>,
}

impl ScatterFamilyBackward {
    fn new(kind: ScatterKind, dim: usize, _x: &Tensor, src: &Tensor) -> Self {
        ScatterFamilyBackward {
            kind,
            dim: dim as u32,
            source_dim: src.ndim() as u32,
            alpha: Scalar::Int(1),
            source_slot: None,
        }
    }
}

impl Backward for ScatterFamilyBackward {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        let dim = ("dim", SavedField::Int(i64::from(self.dim)));
        let index = ("index", SavedField::Tensor(Some(0)));
        match self.kind {
            ScatterKind::IndexAdd => vec![
                ("alpha", SavedField::Scalar(self.alpha)),
                dim,
                index,
                ("source", SavedField::Tensor(self.source_slot)),
                ("source_dim", SavedField::Int(i64::from(self.source_dim))),
            ],
            ScatterKind::IndexCopy => vec![
                dim,
                index,
                ("source", SavedField::Tensor(self.source_slot)),
                ("source_dim", SavedField::Int(i64::from(self.source_dim))),
            ],
            _ => vec![dim, index],
        }
    }
    fn name(&self) -> Cow<'static, str> {
        match self.kind {
            ScatterKind::Scatter0 => "ScatterBackward0",
            ScatterKind::Scatter1 => "ScatterBackward1",
            ScatterKind::ScatterAdd => "ScatterAddBackward0",
            ScatterKind::IndexAdd => "IndexAddBackward0",
            ScatterKind::IndexCopy => "IndexCopyBackward0",
            ScatterKind::IndexFill => "IndexFillBackward0",
            ScatterKind::IndexFill1 => "IndexFillBackward1",
        }
        .into()
    }
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let index = ctx.saved(0)?;
        let dim = i64::from(self.dim);
        let zero = Scalar::Int(0);
        let gx = if ctx.needs_input_grad(0) {
            Some(match self.kind {
                ScatterKind::Scatter0 | ScatterKind::Scatter1 => {
                    scatter_value(&g, dim, &index, zero)?
                }
                ScatterKind::ScatterAdd | ScatterKind::IndexAdd => g.clone(),
                ScatterKind::IndexCopy | ScatterKind::IndexFill | ScatterKind::IndexFill1 => {
                    index_fill(&g, dim, &index, zero)?
                }
            })
        } else {
            None
        };
        let two = !matches!(self.kind, ScatterKind::Scatter1 | ScatterKind::IndexFill);
        if !two {
            return Ok(smallvec::smallvec![gx]);
        }
        let gs = if ctx.needs_input_grad(1) {
            Some(match self.kind {
                ScatterKind::Scatter0 | ScatterKind::ScatterAdd => gather(&g, dim, &index)?,
                ScatterKind::IndexFill1 => sum(&index_select(&g, dim, &index)?, None, false)?,
                _ => {
                    let r = if self.source_dim == 0 && g.ndim() > 0 {
                        // a 0-d source was one row
                        reshape(&index_select(&g, dim, &index)?, &[])?
                    } else {
                        index_select(&g, dim, &index)?
                    };
                    if self.kind == ScatterKind::IndexAdd && self.alpha.as_f64() != 1.0 {
                        mul_scalar(&r, self.alpha)?
                    } else {
                        r
                    }
                }
            })
        } else {
            None
        };
        Ok(smallvec::smallvec![gx, gs])
    }
}

#[derive(Clone)]
pub struct MaskedSelectBackward0 {
    /// the input's shape and the shape it broadcasts to with the mask (boxed: nodes
    /// keep 56 bytes inline)
    shapes: Box<[Shape; 2]>,
}
impl Backward for MaskedSelectBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("mask", SavedField::Tensor(Some(0))),
            ("self", SavedField::Tensor(Some(1))),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        "MaskedSelectBackward0".into()
    }
    // the gradient put back at the selected positions (of the broadcast shape), summed
    // back to the input's shape
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let g = grad0(g)?;
        let [shape, bshape] = &*self.shapes;
        let mask = expand(&ctx.saved(0)?, bshape)?;
        let z = zeros(bshape, g.dtype())?;
        let full = if bshape.is_empty() {
            // (a 0-d mask selects one element or none)
            where_(&mask, &sum(&g, None, false)?, &z)?
        } else {
            let idx: Vec<Option<Tensor>> = nonzero_indices(&mask)?.into_iter().map(Some).collect();
            index_put(&z, &idx, &g, false)?
        };
        Ok(smallvec::smallvec![Some(sum_to(&full, shape)?)])
    }
}

/// An in-place scatter-family op (`scatter_`, `index_add_`, ...): torch's checks of the
/// destination (autograd's, no internal overlap, no partial overlap with `operands`), then
/// the out-of-place op committed into `x`.
pub fn scatter_inplace(
    x: &Tensor,
    operands: &[Option<&Tensor>],
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    super::inplace::inplace_no_overlap_with(x, operands, f)
}
