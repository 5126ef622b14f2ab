//! Ops that pick elements along a dim by order: sort, topk, kthvalue, median. The indices
//! are chosen on the host in ATen's CPU order (`backend::cpu::sort`: ties and NaNs as
//! torch's), the values gathered with them; the gradient goes back to the chosen
//! positions (torch's `value_selecting_reduction_backward`). median without a dim shares
//! its gradient evenly among the elements equal to the result (`evenly_distribute_backward`).

use super::elementwise::{Saver, grad0};
use super::{apply, new_tensor};
use crate::autograd::function::{Backward, BackwardCtx, Grads, SavedField};

use crate::backend::host::Select;
use crate::backend::{self as k, BinaryOp, host};
use crate::dtype::DType;
use crate::layout::Layout;
use crate::ops::*;
use crate::shape::{Shape, wrap_dim};
use crate::storage::Buffer;
use crate::tensor::Tensor;
use crate::{Error, Result};
use std::borrow::Cow;

/// The node a selection along a dim records (they share one formula).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SelectNode {
    /// `sort(x, dim, descending)`.
    Sort0,
    /// `sort(x, stable=..., dim, descending)`.
    Sort1,
    Topk,
    Kthvalue,
    /// `median(x, dim, keepdim)`.
    Median1,
    /// `nanmedian(x, dim, keepdim)`.
    Nanmedian1,
    /// `mode(x, dim, keepdim)`.
    Mode,
}

impl SelectNode {
    fn name(self) -> &'static str {
        match self {
            SelectNode::Sort0 => "SortBackward0",
            SelectNode::Sort1 => "SortBackward1",
            SelectNode::Topk => "TopkBackward0",
            SelectNode::Kthvalue => "KthvalueBackward0",
            SelectNode::Median1 => "MedianBackward1",
            SelectNode::Nanmedian1 => "NanmedianBackward1",
            SelectNode::Mode => "ModeBackward0",
        }
    }
    fn op(self) -> &'static str {
        match self {
            SelectNode::Sort0 | SelectNode::Sort1 => "aten::sort",
            SelectNode::Topk => "aten::topk",
            SelectNode::Kthvalue => "aten::kthvalue",
            SelectNode::Median1 => "aten::median",
            SelectNode::Nanmedian1 => "aten::nanmedian",
            SelectNode::Mode => "aten::mode",
        }
    }
    /// Whether the node keeps (and torch shows) `keepdim`: the reductions.
    fn reduces(self) -> bool {
        matches!(
            self,
            SelectNode::Kthvalue | SelectNode::Median1 | SelectNode::Nanmedian1 | SelectNode::Mode
        )
    }
}

/// `x` (at least 1-D: a 0-d tensor as one element) and `dim` wrapped.
fn layout_1d(s: &crate::tensor::Snapshot) -> Layout {
    if s.layout.ndim() == 0 {
        Layout {
            shape: smallvec::smallvec![1],
            strides: smallvec::smallvec![1],
            offset: s.layout.offset,
        }
    } else {
        s.layout.clone()
    }
}

/// Runs a selection along `dim` (wrapped against x's rank, checked by the caller) and
/// records its node: (values, indices). A reduction's result drops `dim` unless
/// `keepdim`; a 0-d input gives 0-d results.
fn select_along(
    x: &Tensor,
    dim: i64,
    sel: Select,
    node: SelectNode,
    keepdim: bool,
) -> Result<(Tensor, Tensor)> {
    let d = wrap_dim(dim, x.ndim())?;
    let s = x.snapshot();
    let layout = layout_1d(&s);
    // (a 0-d input is its own result with index 0, whatever k: ATen's special case)
    let sel = if s.layout.ndim() == 0 {
        Select::Median
    } else {
        sel
    };
    let idx = host::select_indices(&s.storage.read(), &layout, d, sel)?;
    let mut kshape = layout.shape.clone();
    kshape[d] = sel.count(layout.shape[d]);
    let vals = k::gather(&s.storage.read(), &layout, d, &idx, &kshape)?;
    let oshape: Shape = if s.layout.ndim() == 0 {
        Shape::new()
    } else if node.reduces() && !keepdim {
        let mut o = kshape.clone();
        o.remove(d);
        o
    } else {
        kshape
    };
    let indices = super::new_tensor_on(Buffer::I64(idx.into()), &oshape, s.storage.device())?;
    let ind = indices.clone();
    let shape = s.layout.shape.clone();
    let values = apply(
        node.op(),
        &[x],
        || Ok(new_tensor(vals, &oshape)),
        |_| {
            let mut sv = Saver::default();
            sv.input_if(true, &ind);
            (
                SelectAlongBackward {
                    shape,
                    dim: d as u32,
                    arg_dim: dim as i32,
                    keepdim: keepdim || !node.reduces(),
                    node,
                },
                sv.list,
            )
        },
    )?;
    Ok((values, indices))
}

/// `sort(x, dim, descending, stable=...)`: `stable` None is torch's overload without it
/// (SortBackward0), where the sort is not stable (libstdc++'s introsort, as ATen's).
pub fn sort(
    x: &Tensor,
    dim: i64,
    descending: bool,
    stable: Option<bool>,
) -> Result<(Tensor, Tensor)> {
    let node = if stable.is_some() {
        SelectNode::Sort1
    } else {
        SelectNode::Sort0
    };
    let sel = Select::Sort {
        descending,
        stable: stable.unwrap_or(false),
    };
    select_along(x, dim, sel, node, true)
}

/// `topk(x, k, dim, largest, sorted)`.
pub fn topk(x: &Tensor, k: i64, dim: i64, largest: bool, sorted: bool) -> Result<(Tensor, Tensor)> {
    let d = wrap_dim(dim, x.ndim())?;
    let size = if x.ndim() == 0 { 1 } else { x.shape()[d] };
    if k < 0 || k as u64 > size as u64 {
        return Err(Error::runtime("selected index k out of range"));
    }
    if x.dtype() == DType::Bool {
        return Err(Error::not_implemented(
            "topk does not support bool dtypes on CPU",
        ));
    }
    let sel = Select::Topk {
        k: k as usize,
        largest,
        sorted,
    };
    select_along(x, dim, sel, SelectNode::Topk, true)
}

/// `kthvalue(x, k, dim, keepdim)`: the k-th smallest (1-based) and its index.
pub fn kthvalue(x: &Tensor, k: i64, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let d = wrap_dim(dim, x.ndim())?;
    let shape = x.shape();
    let size = if x.ndim() == 0 { 1 } else { shape[d] };
    if x.ndim() > 0 && size == 0 {
        return Err(Error::index(format!(
            "kthvalue(): Expected reduction dim {d} to have non-zero size."
        )));
    }
    if k < 1 || k as u64 > size as u64 {
        return Err(Error::runtime(format!(
            "kthvalue(): selected number k out of range for dimension {d}"
        )));
    }
    if x.dtype() == DType::Bool {
        return Err(Error::not_implemented(
            "\"kthvalue_cpu\" not implemented for 'Bool'",
        ));
    }
    select_along(
        x,
        dim,
        Select::Kth { k: k as usize },
        SelectNode::Kthvalue,
        keepdim,
    )
}

/// `median(x, dim, keepdim)`: the lower median of each slice and its index (the first
/// NaN's where a slice has one).
pub fn median_dim(x: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    median_along(x, dim, keepdim, false)
}

/// `nanmedian(x, dim, keepdim)`: the lower median of each slice's non-NaN elements and
/// its index (NaN where a slice has nothing else).
pub fn nanmedian_dim(x: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    median_along(x, dim, keepdim, true)
}

fn median_along(x: &Tensor, dim: i64, keepdim: bool, ignore_nan: bool) -> Result<(Tensor, Tensor)> {
    let d = wrap_dim(dim, x.ndim())?;
    if x.ndim() > 0 && x.shape()[d] == 0 {
        return Err(Error::index(format!(
            "median(): Expected reduction dim {d} to have non-zero size."
        )));
    }
    if x.dtype() == DType::Bool {
        return Err(Error::not_implemented(
            "\"median_out\" not implemented for 'Bool'",
        ));
    }
    let (sel, node) = if ignore_nan {
        (Select::NanMedian, SelectNode::Nanmedian1)
    } else {
        (Select::Median, SelectNode::Median1)
    };
    select_along(x, dim, sel, node, keepdim)
}

/// `mode(x, dim, keepdim)`: the most frequent value of each slice (the smallest of equally
/// frequent ones) and an index of it, the one ATen's CPU kernel reports.
pub fn mode(x: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let d = wrap_dim(dim, x.ndim())?;
    if x.ndim() > 0 && x.shape()[d] == 0 {
        return Err(Error::index(format!(
            "mode(): Expected reduction dim {d} to have non-zero size."
        )));
    }
    select_along(x, dim, Select::Mode, SelectNode::Mode, keepdim)
}

/// `median(x)`: the lower median of all elements (NaN if there is one; NaN for an empty
/// tensor), as a 0-d tensor.
pub fn median(x: &Tensor) -> Result<Tensor> {
    median_all(x, false)
}

/// `nanmedian(x)`: the lower median of the non-NaN elements (NaN if there are none), as a
/// 0-d tensor.
pub fn nanmedian(x: &Tensor) -> Result<Tensor> {
    median_all(x, true)
}

fn median_all(x: &Tensor, ignore_nan: bool) -> Result<Tensor> {
    if x.dtype() == DType::Bool {
        return Err(Error::not_implemented(
            "\"median_cpu\" not implemented for 'Bool'",
        ));
    }
    let flat = reshape(&x.detach(), &[-1])?;
    let s = flat.snapshot();
    let vals = if flat.numel() == 0 {
        if !x.dtype().is_float() {
            // (torch reads an uninitialised element here; rgrad refuses instead)
            return Err(Error::runtime(
                "median(): Expected a non-empty input for an integer dtype.",
            ));
        }
        k::on(s.storage.device())?.full(x.dtype(), 1, crate::dtype::Scalar::Float(f64::NAN))?
    } else {
        let sel = if ignore_nan {
            Select::NanMedian
        } else {
            Select::Median
        };
        let idx = host::select_indices(&s.storage.read(), &s.layout, 0, sel)?;
        k::gather(&s.storage.read(), &s.layout, 0, &idx, &[1])?
    };
    apply(
        if ignore_nan {
            "aten::nanmedian"
        } else {
            "aten::median"
        },
        &[x],
        || Ok(new_tensor(vals, &[])),
        |y| {
            let mut sv = Saver::default();
            sv.input_if(true, x);
            sv.output(y);
            (MedianBackward0 { nan: ignore_nan }, sv.list)
        },
    )
}

#[derive(Clone)]
pub struct SelectAlongBackward {
    shape: Shape,
    dim: u32,
    /// The dim as the caller gave it (torch's saved `dim`).
    arg_dim: i32,
    keepdim: bool,
    node: SelectNode,
}
impl Backward for SelectAlongBackward {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        let mut f = vec![
            ("dim", SavedField::Int(i64::from(self.arg_dim))),
            ("indices", SavedField::Tensor(Some(0))),
        ];
        if self.node.reduces() {
            f.push(("keepdim", SavedField::Bool(self.keepdim)));
        }
        f.push(("self_sym_sizes", SavedField::ints(&self.shape)));
        f
    }
    fn name(&self) -> Cow<'static, str> {
        self.node.name().into()
    }
    // the gradient goes to the chosen index of each slice
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let mut idx = ctx.saved(0)?;
        let mut g = grad0(g)?;
        if self.shape.is_empty() {
            return Ok(smallvec::smallvec![Some(g)]);
        }
        let dim = self.dim as usize;
        if !self.keepdim {
            idx = unsqueeze(&idx, dim as i64)?;
            g = unsqueeze(&g, dim as i64)?;
        }
        Ok(smallvec::smallvec![Some(scatter_add_zeros(
            &self.shape,
            dim,
            &idx,
            &g
        )?)])
    }
    // each sample scattered into its own slice (the indices expanded over the samples)
    fn apply_batched(
        &self,
        ctx: &BackwardCtx<'_>,
        g: &[Option<Tensor>],
        batch: usize,
    ) -> Option<Result<Grads>> {
        let run = || -> Result<Grads> {
            let mut idx = ctx.saved(0)?;
            let mut g = grad0(g)?;
            if self.shape.is_empty() {
                return Ok(smallvec::smallvec![Some(g)]);
            }
            let dim = self.dim as usize;
            if !self.keepdim {
                idx = unsqueeze(&idx, dim as i64)?;
                g = unsqueeze(&g, dim as i64 + 1)?;
            }
            let idx = expand(
                &unsqueeze(&idx, 0)?,
                &super::batched_shape(batch, &idx.shape()),
            )?;
            Ok(smallvec::smallvec![Some(scatter_add_zeros(
                &super::batched_shape(batch, &self.shape),
                dim + 1,
                &idx,
                &g
            )?)])
        };
        Some(run())
    }
}

/// `median()`'s node, or `nanmedian()`'s (NanmedianBackward0: the same formula).
#[derive(Clone)]
pub struct MedianBackward0 {
    nan: bool,
}
impl Backward for MedianBackward0 {
    fn saved_fields(&self) -> Vec<(&'static str, SavedField)> {
        vec![
            ("result", SavedField::Tensor(Some(1))),
            ("self", SavedField::Tensor(Some(0))),
        ]
    }
    fn name(&self) -> Cow<'static, str> {
        if self.nan {
            "NanmedianBackward0".into()
        } else {
            "MedianBackward0".into()
        }
    }
    // the gradient split evenly among the elements equal to the median (NaN: the NaNs)
    fn apply(&self, ctx: &BackwardCtx<'_>, g: &[Option<Tensor>]) -> Result<Grads> {
        let (x, y) = (ctx.saved(0)?, ctx.saved(1)?);
        let isnan = |t: &Tensor| compare(BinaryOp::Ne, Operand::T(t), Operand::T(t));
        let both_nan = logical_and(&isnan(&x)?, &isnan(&y)?)?;
        let mask = logical(BinaryOp::LogicalOr, &eq(&x, &y)?, &both_nan)?;
        let count = sum(&to_dtype(&mask, x.dtype())?, None, false)?;
        let share = div(&grad0(g)?, &count)?;
        let z = zeros_like(&x)?;
        Ok(smallvec::smallvec![Some(where_(&mask, &share, &z)?)])
    }
}
