//! `x[index]` and `x[index] = v`: torch's indexing algorithm (at::indexing). Basic items
//! (integers, slices, None, Ellipsis, bools) become views of `x`; index tensors are left
//! for advanced indexing (`ops::index`, `ops::index_put`), one per remaining dim.

use crate::dtype::DType;
use crate::tensor::Tensor;
use crate::{Error, Result};

/// One item of a subscript (torch's `at::indexing::TensorIndex`).
#[derive(Clone)]
pub enum TensorIndex {
    /// `x[i]`: selects, removing the dim.
    Int(i64),
    /// `x[start:stop:step]`.
    Slice {
        start: Option<i64>,
        stop: Option<i64>,
        step: Option<i64>,
    },
    /// `x[None]`: a new dim of size 1.
    None,
    /// `x[...]`: the dims no other item takes.
    Ellipsis,
    /// `x[True]` / `x[False]`: a new dim of size 1 / 0.
    Bool(bool),
    /// An index tensor (int64) or mask (bool): advanced indexing.
    Tensor(Tensor),
}

/// The view of `x` that the basic items give, and the advanced indices (one entry per
/// remaining dim, `None` where no tensor indexes it; a bool mask covers as many dims as
/// it has).
pub fn apply_subscript(x: &Tensor, items: &[TensorIndex]) -> Result<(Tensor, Vec<Option<Tensor>>)> {
    // dims the items take (an Ellipsis takes the rest)
    let consumed: usize = items
        .iter()
        .map(|it| match it {
            TensorIndex::Ellipsis | TensorIndex::None | TensorIndex::Bool(_) => 0,
            TensorIndex::Tensor(t) if t.dtype() == DType::Bool => t.ndim(),
            _ => 1,
        })
        .sum();
    let ndim = x.ndim();
    if consumed > ndim {
        return Err(Error::index(format!(
            "too many indices for tensor of dimension {ndim}"
        )));
    }
    let mut r = x.clone();
    let mut d = 0usize;
    let mut adv: Vec<(usize, Tensor)> = Vec::new();
    let mut removed = 0usize; // dims removed by integer indices, for torch's error numbering
    for it in items {
        match it {
            // torch accepts several ellipses: each one skips the dims no other item takes
            // (so a second one skips past the end)
            TensorIndex::Ellipsis => d += ndim - consumed,
            TensorIndex::None => {
                r = super::unsqueeze(&r, d as i64)?;
                d += 1;
            }
            TensorIndex::Bool(b) => {
                // x[True] adds a dim of size 1; x[False] one of size 0
                r = super::unsqueeze(&r, d as i64)?;
                if !b {
                    r = super::slice(&r, d as i64, Some(0), Some(0), 1)?;
                }
                d += 1;
            }
            TensorIndex::Slice { start, stop, step } => {
                // torch skips a slice that keeps the whole dim (no view is made: `x[:, i] = v`
                // writes x itself)
                let whole = |n: usize| {
                    let clamp = |i: i64| {
                        if i < 0 {
                            (i + n as i64).max(0)
                        } else {
                            i.min(n as i64)
                        }
                    };
                    clamp(start.unwrap_or(0)) == 0 && clamp(stop.unwrap_or(i64::MAX)) == n as i64
                };
                let keeps_all =
                    step.unwrap_or(1) == 1 && r.shape().get(d).is_some_and(|&n| whole(n));
                if !keeps_all {
                    r = super::slice(&r, d as i64, *start, *stop, step.unwrap_or(1))?;
                }
                d += 1;
            }
            TensorIndex::Tensor(t) if t.dtype() == DType::Bool && t.ndim() == 0 => {
                // a 0-d mask: a new dim of size 1, indexed by the mask as one element
                r = super::unsqueeze(&r, d as i64)?;
                adv.push((d, super::reshape(t, &[1])?));
                d += 1;
            }
            TensorIndex::Tensor(t) => {
                adv.push((d, t.clone()));
                d += if t.dtype() == DType::Bool {
                    t.ndim()
                } else {
                    1
                };
            }
            TensorIndex::Int(i) => {
                let size = r.shape().get(d).copied().unwrap_or(0) as i64;
                if *i < -size || *i >= size {
                    return Err(Error::index(format!(
                        "index {i} is out of bounds for dimension {} with size {size}",
                        d + removed
                    )));
                }
                r = super::select(&r, d as i64, *i)?;
                removed += 1;
            }
        }
    }
    let mut indices: Vec<Option<Tensor>> = Vec::new();
    for (pos, t) in adv {
        indices.resize(pos, None);
        indices.push(Some(t));
    }
    Ok((r, indices))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::TensorIndex as I;
    use super::*;
    use crate::storage::Buffer;

    fn arange(shape: &[usize]) -> Tensor {
        let n: usize = shape.iter().product();
        Tensor::from_buffer(Buffer::F64((0..n).map(|v| v as f64).collect()), shape)
    }

    fn slice(start: Option<i64>, stop: Option<i64>, step: Option<i64>) -> I {
        I::Slice { start, stop, step }
    }

    #[test]
    fn basic_items_make_views() {
        let x = arange(&[2, 3, 4]);
        let (r, adv) =
            apply_subscript(&x, &[I::Int(1), I::Ellipsis, slice(None, None, Some(2))]).unwrap();
        assert_eq!(r.shape().as_slice(), &[3, 2]);
        assert!(adv.is_empty());
        assert!(r.is_view());
        let (r, _) = apply_subscript(&x, &[I::None, I::Bool(false), I::Int(-1)]).unwrap();
        assert_eq!(r.shape().as_slice(), &[1, 0, 3, 4]);
    }

    #[test]
    fn a_whole_dim_slice_makes_no_view() {
        let x = arange(&[2, 3]);
        let (r, _) = apply_subscript(&x, &[slice(None, None, None), I::Int(0)]).unwrap();
        assert_eq!(r.shape().as_slice(), &[2]);
        let (r, _) = apply_subscript(&x, &[slice(Some(-5), Some(9), Some(1))]).unwrap();
        assert!(r.same(&x));
    }

    #[test]
    fn index_tensors_are_left_for_advanced_indexing() {
        let x = arange(&[2, 3, 4]);
        let i = Tensor::from_buffer(Buffer::I64(vec![1, 0].into()), &[2]);
        let m = Tensor::from_buffer(Buffer::Bool(vec![true, false, true, true].into()), &[4]);
        let (r, adv) = apply_subscript(&x, &[I::Tensor(i), I::Int(0), I::Tensor(m)]).unwrap();
        assert_eq!(r.shape().as_slice(), &[2, 4]);
        assert_eq!(adv.len(), 2);
        assert!(adv[0].is_some() && adv[1].is_some());
        let m2 = Tensor::from_buffer(Buffer::Bool(vec![true; 6].into()), &[2, 3]);
        let (_, adv) = apply_subscript(&x, &[I::Ellipsis, I::Tensor(m2.clone())]).unwrap();
        assert!(adv[0].is_none() && adv[1].as_ref().is_some_and(|t| t.same(&m2)));
    }

    #[test]
    fn errors_are_torchs() {
        let x = arange(&[2, 3]);
        let e = apply_subscript(&x, &[I::Int(0), I::Int(0), I::Int(0)])
            .err()
            .unwrap();
        assert_eq!(e.to_string(), "too many indices for tensor of dimension 2");
        let e = apply_subscript(&x, &[I::Int(0), I::Int(3)]).err().unwrap();
        assert_eq!(
            e.to_string(),
            "index 3 is out of bounds for dimension 1 with size 3"
        );
    }
}
