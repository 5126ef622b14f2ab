//! Binary search into sorted boundaries: `searchsorted` (and `bucketize`, its form with
//! the operands swapped and 1-D boundaries). No gradient (an integer result). The
//! searches run on the host, split across the pool by value; a CUDA tensor round-trips
//! through the host (no device kernel yet).

use super::*;
use crate::backend::host_misc::contiguous as host_contiguous;
use crate::backend::host_misc::per_output;
use crate::dtype::DType;
use crate::storage::Buffer;
use crate::{Error, Result};

fn sizes(s: &[usize]) -> String {
    let parts: Vec<String> = s.iter().map(usize::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// torch's lower (`right` false: the first position whose boundary is `>= v`) or upper
/// (the first `> v`) bound in `row`, read through `sorter` when given; written with
/// negated comparisons, as ATen's, so that NaNs land where torch puts them. ATen's
/// probes in ATen's order (boundaries with NaNs in them need the same midpoints), the
/// step taken by selects, not a branch: which way a search goes is a coin toss the
/// branch predictor loses half the time (65536 searches in 256 boundaries: 40 ns each).
#[inline]
fn bound<T: PartialOrd + Copy>(row: &[T], sorter: Option<&[i64]>, v: T, right: bool) -> i64 {
    let (mut lo, mut hi) = (0usize, row.len());
    while lo < hi {
        let mid = lo + ((hi - lo) >> 1);
        let at = match sorter {
            Some(s) => row[s[mid] as usize],
            None => row[mid],
        };
        // (ATen's `!(at > v)` / `!(at >= v)`: an incomparable NaN goes right)
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        let go_right = if right { !(at > v) } else { !(at >= v) };
        let next = mid + 1;
        lo = std::hint::select_unpredictable(go_right, next, lo);
        hi = std::hint::select_unpredictable(go_right, hi, mid);
    }
    lo as i64
}

/// The searches of every value in `vals` (row-major, rows of `inner` values) in its
/// row of `bd` (rows of `len` boundaries; one row for all when `shared`).
fn search_all<T: PartialOrd + Copy + Send + Sync>(
    bd: &[T],
    vals: &[T],
    sorter: Option<&[i64]>,
    len: usize,
    inner: usize,
    shared: bool,
    right: bool,
) -> Vec<i64> {
    let cost = (usize::BITS - len.leading_zeros()).max(1) as usize;
    per_output(vals.len(), cost * 4, |range, out| {
        for (k, slot) in range.zip(out.iter_mut()) {
            let row = if shared { 0 } else { k / inner.max(1) };
            let r = &bd[row * len..(row + 1) * len];
            let s = sorter.map(|s| &s[row * len..(row + 1) * len]);
            slot.write(bound(r, s, vals[k], right));
        }
    })
}

/// A tensor's elements in row-major order as a host buffer of its own dtype.
fn host_values(t: &Tensor) -> Result<Buffer> {
    let s = t.snapshot();
    let guard = s.storage.read();
    let h = crate::backend::host::read(&guard)?;
    Ok(match &*h {
        Buffer::F64(v) => Buffer::F64(host_contiguous(v, &s.layout).into_owned().into()),
        Buffer::F32(v) => Buffer::F32(host_contiguous(v, &s.layout).into_owned().into()),
        Buffer::I64(v) => Buffer::I64(host_contiguous(v, &s.layout).into_owned().into()),
        Buffer::Bool(v) => Buffer::Bool(host_contiguous(v, &s.layout).into_owned().into()),
        Buffer::Cuda(_) => return Err(Error::Internal("host read gave a device buffer".into())),
    })
}

/// `searchsorted(boundaries, input, right=..., sorter=...)`: for each value of `input`,
/// the index in its row of `boundaries` (the last dim; a 1-D `boundaries` serves every
/// value) where it would be inserted to keep the row sorted: before equal boundaries,
/// or after them when `right`. The operands compare in their promoted dtype; int64
/// indices of `input`'s shape. `sorter` holds, per row, the indices that sort an
/// unsorted `boundaries`.
pub fn searchsorted(
    boundaries: &Tensor,
    input: &Tensor,
    right: bool,
    sorter: Option<&Tensor>,
) -> Result<Tensor> {
    let bshape = boundaries.shape();
    let ishape = input.shape();
    if let Some(s) = sorter {
        if s.shape() != bshape {
            return Err(Error::runtime(format!(
                "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor {}and got sorter tensor {}",
                sizes(&bshape),
                sizes(&s.shape())
            )));
        }
        if s.dtype() != DType::I64 {
            return Err(Error::runtime(format!(
                "torch.searchsorted(): sorter must be a tensor of long dtype but got dtype {}",
                s.dtype().scalar_type_name()
            )));
        }
    }
    if input.ndim() == 0 && boundaries.ndim() != 1 {
        return Err(Error::runtime(format!(
            "torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension is 1, but we got boundaries tensor dim({}) and input value's dim(0) numel(1)",
            boundaries.ndim()
        )));
    }
    if boundaries.ndim() == 0 {
        return Err(Error::runtime(
            "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension",
        ));
    }
    let nb = bshape.len();
    let shared = nb == 1;
    if !shared && (ishape.len() != nb || ishape[..nb - 1] != bshape[..nb - 1]) {
        return Err(Error::runtime(format!(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor {} and input value tensor {}",
            sizes(&bshape),
            sizes(&ishape)
        )));
    }
    let dtype = DType::promote(boundaries.dtype(), input.dtype());
    if dtype == DType::Bool {
        return Err(Error::not_implemented(
            "\"searchsorted_out_cpu\" not implemented for 'Bool'",
        ));
    }
    let len = bshape[nb - 1];
    let inner = if ishape.is_empty() {
        1
    } else {
        ishape[ishape.len() - 1]
    };
    let sorter_vals: Option<Vec<i64>> = match sorter {
        Some(s) => match host_values(s)? {
            Buffer::I64(v) => {
                if v.iter().any(|&i| i < 0 || i as u64 >= len as u64) {
                    return Err(Error::runtime(
                        "torch.searchsorted(): sorter index out of range",
                    ));
                }
                Some(v.to_vec())
            }
            _ => None,
        },
        None => None,
    };
    let device = input.device();
    let (bd, vals) = crate::autograd::grad_mode::with_grad_mode(false, || {
        Ok::<_, Error>((
            host_values(&to_dtype(boundaries, dtype)?)?,
            host_values(&to_dtype(input, dtype)?)?,
        ))
    })?;
    let s = sorter_vals.as_deref();
    let out = match (&bd, &vals) {
        (Buffer::F64(b), Buffer::F64(v)) => search_all(b, v, s, len, inner, shared, right),
        (Buffer::F32(b), Buffer::F32(v)) => search_all(b, v, s, len, inner, shared, right),
        (Buffer::I64(b), Buffer::I64(v)) => search_all(b, v, s, len, inner, shared, right),
        _ => return Err(Error::Internal("searchsorted: operand dtypes".into())),
    };
    new_tensor_on(Buffer::I64(out.into()), &ishape, device)
}
