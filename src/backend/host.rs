//! What runs on the host whatever the device: the parts of an op that read values to plan
//! its work (index values and their checks, a mask's coordinates, one element, nll's
//! targets), random draws from torch's CPU generator (torch's CUDA generator is another
//! algorithm), and topk's tie order. They work on host buffers: a device buffer is
//! copied down first ([`read`]).

pub use super::cpu::compact::nonzero_coords;
pub use super::cpu::index::{index_list, index_values, nonzero};
pub use super::cpu::sort::Select;

/// `buf` in host memory: itself, or a device buffer's copy (which waits for its stream).
/// Refused while a step is recorded (`replay`): values read on the host plan work that a
/// replay could not redo; an op whose plan a replay recomputes uses [`read_planned`].
pub fn read(
    buf: &crate::storage::Buffer,
) -> crate::Result<std::borrow::Cow<'_, crate::storage::Buffer>> {
    crate::replay::refuse(
        "reading a tensor's values on the host (tolist(), printing, nonzero, a boolean mask, ...)",
    )?;
    read_planned(buf)
}

/// [`read`] for a host plan that the op records as a replay step of its own.
pub fn read_planned(
    buf: &crate::storage::Buffer,
) -> crate::Result<std::borrow::Cow<'_, crate::storage::Buffer>> {
    use std::borrow::Cow;
    match buf {
        crate::storage::Buffer::Cuda(c) => Ok(Cow::Owned(super::cuda::backend::to_host_range(
            c, 0, c.len,
        )?)),
        _ => Ok(Cow::Borrowed(buf)),
    }
}

/// The element at `offset`, as a number (a device buffer's one element copied down).
pub fn element(buf: &crate::storage::Buffer, offset: usize) -> crate::Result<crate::dtype::Scalar> {
    crate::replay::refuse(
        "reading one element of a tensor on the host (item(), bool(), int(), ...)",
    )?;
    match buf {
        crate::storage::Buffer::Cuda(c) => Ok(super::cpu::index::element(
            &super::cuda::backend::to_host_range(c, offset, 1)?,
            0,
        )),
        _ => Ok(super::cpu::index::element(buf, offset)),
    }
}
pub use super::cpu::nn::nll_targets;
pub use super::cpu::random;

/// Whether a float buffer's elements under `layout` hold a NaN, and an infinity (anomaly
/// mode's check of every backward output). One vectorizable pass (`x * 0` is NaN exactly
/// for a NaN or an infinity, summed in independent lanes); a second pass only when it
/// finds one.
pub fn non_finite(buf: &crate::storage::Buffer, layout: &crate::layout::Layout) -> (bool, bool) {
    use super::cpu::strided::contiguous;
    use crate::storage::Buffer;
    fn scan<
        T: Copy + Into<f64> + std::ops::Mul<Output = T> + std::ops::Add<Output = T> + Default,
    >(
        v: &[T],
    ) -> (bool, bool) {
        const LANES: usize = 16;
        let mut acc = [T::default(); LANES];
        let chunks = v.chunks_exact(LANES);
        let rest = chunks.remainder();
        for c in chunks {
            for (a, &x) in acc.iter_mut().zip(c) {
                *a = *a + x * T::default();
            }
        }
        let clean = acc
            .iter()
            .chain(rest)
            .all(|&a| (a * T::default()).into() == 0.0);
        if clean {
            return (false, false);
        }
        let nan = v.iter().any(|&x| x.into().is_nan());
        let inf = v.iter().any(|&x| x.into().is_infinite());
        (nan, inf)
    }
    // (a dense layout in any order, a transposed gradient say, is scanned in place: the
    // answer does not depend on the order)
    let dense = layout.is_non_overlapping_and_dense().then(|| {
        let (lo, hi) = layout.storage_span();
        lo..hi
    });
    match buf {
        Buffer::F32(v) => match dense.and_then(|r| v.get(r)) {
            Some(d) => scan(d),
            None => scan(&contiguous(v, layout)),
        },
        Buffer::F64(v) => match dense.and_then(|r| v.get(r)) {
            Some(d) => scan(d),
            None => scan(&contiguous(v, layout)),
        },
        Buffer::Bool(_) | Buffer::I64(_) => (false, false),
        Buffer::Cuda(_) => match read(buf) {
            Ok(h) => non_finite(&h, layout),
            Err(_) => (false, false),
        },
    }
}

/// The indices sort / topk / kthvalue / median choose along `dim` (ATen's CPU order, ties
/// and NaNs included; `cpu::sort`), read on the host whatever the device.
pub fn select_indices(
    buf: &crate::storage::Buffer,
    layout: &crate::layout::Layout,
    dim: usize,
    sel: Select,
) -> crate::Result<Vec<i64>> {
    let h = read(buf)?;
    Ok(super::cpu::sort::select_indices(&h, layout, dim, sel))
}
