//! Layouts (shape, strides, offset) and the view transformations that only change them.
//!
//! Every view op in rgrad (transpose, permute, slicing, expand, view, squeeze...) is a
//! pure function from one `Layout` to another over the same storage: no data moves.

use crate::shape::{Shape, checked_numel, contiguous_strides, fmt_shape, numel, wrap_dim};
use crate::{Error, Result};

#[derive(Debug, PartialEq, Eq)]
pub struct Layout {
    pub shape: Shape,
    /// In elements; 0 for broadcast (expanded) dims. Never negative, as in torch.
    pub strides: Shape,
    /// Offset of element [0, 0, ...] in the storage, in elements.
    pub offset: usize,
}

/// By hand: `SmallVec::clone` goes through an iterator; `from_slice` is one copy (layouts
/// are cloned on every op's hot path).
impl Clone for Layout {
    #[inline]
    fn clone(&self) -> Self {
        Layout {
            shape: crate::shape::copy(&self.shape),
            strides: crate::shape::copy(&self.strides),
            offset: self.offset,
        }
    }
}

impl Layout {
    #[inline]
    pub fn contiguous(shape: &[usize]) -> Self {
        Layout {
            shape: crate::shape::copy(shape),
            strides: contiguous_strides(shape),
            offset: 0,
        }
    }
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }
    /// torch's is_contiguous: dims of size 1 may have any stride, and an empty tensor is
    /// contiguous whatever its strides.
    /// torch's `is_non_overlapping_and_dense`: the elements fill a block of memory
    /// exactly, in some order of the dims.
    pub fn is_non_overlapping_and_dense(&self) -> bool {
        if self.is_contiguous() {
            return true;
        }
        if let ([d], [s]) = (&self.shape[..], &self.strides[..]) {
            return *d < 2 || *s == 1;
        }
        let mut perm: Vec<usize> = (0..self.shape.len())
            .filter(|&i| self.shape[i] >= 2)
            .collect();
        perm.sort_by_key(|&i| self.strides[i]);
        let mut expected = 1usize;
        for i in perm {
            if self.strides[i] != expected {
                return false;
            }
            expected *= self.shape[i];
        }
        true
    }
    pub fn is_contiguous(&self) -> bool {
        if self.shape.contains(&0) {
            return true;
        }
        let mut expected = 1usize;
        for (&d, &s) in self.shape.iter().zip(&self.strides).rev() {
            if d == 0 {
                return true;
            }
            if d != 1 {
                if s != expected {
                    return false;
                }
                expected *= d;
            }
        }
        true
    }
    /// The storage range [start, end) the layout touches (empty tensors touch nothing).
    pub fn storage_span(&self) -> (usize, usize) {
        if self.numel() == 0 {
            return (self.offset, self.offset);
        }
        let last: usize = self
            .shape
            .iter()
            .zip(&self.strides)
            .map(|(&d, &s)| (d - 1) * s)
            .sum();
        (self.offset, self.offset + last + 1)
    }

    pub fn transpose(&self, d0: i64, d1: i64) -> Result<Layout> {
        let (a, b) = (wrap_dim(d0, self.ndim())?, wrap_dim(d1, self.ndim())?);
        let mut l = self.clone();
        if self.ndim() > 0 {
            l.shape.swap(a, b);
            l.strides.swap(a, b);
        }
        Ok(l)
    }

    pub fn permute(&self, dims: &[i64]) -> Result<Layout> {
        if dims.len() != self.ndim() {
            return Err(Error::runtime(format!(
                "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {} is not equal to len(dims) = {}",
                self.ndim(),
                dims.len()
            )));
        }
        let wrapped = crate::shape::wrap_dims(dims, self.ndim()).map_err(|e| {
            if let Error::Runtime(_) = e {
                Error::runtime("permute(): duplicate dims are not allowed.")
            } else {
                e
            }
        })?;
        Ok(Layout {
            shape: wrapped.iter().map(|&d| self.shape[d]).collect(),
            strides: wrapped.iter().map(|&d| self.strides[d]).collect(),
            offset: self.offset,
        })
    }

    /// `start:stop:step` along `dim`, with Python's clamping of out-of-range bounds.
    pub fn slice(
        &self,
        dim: usize,
        start: Option<i64>,
        stop: Option<i64>,
        step: i64,
    ) -> Result<Layout> {
        if step <= 0 {
            return Err(Error::value("step must be greater than zero"));
        }
        let size = self.shape[dim] as i64;
        let clamp = |v: i64| {
            if v < 0 {
                (v + size).max(0)
            } else {
                v.min(size)
            }
        };
        let start = start.map_or(0, clamp);
        let stop = stop.map_or(size, clamp).max(start);
        let len = (stop - start + step - 1) / step;
        let mut l = self.clone();
        l.offset += start as usize * self.strides[dim];
        l.shape[dim] = len as usize;
        l.strides[dim] *= step as usize;
        Ok(l)
    }

    /// `narrow(dim, start, length)` with torch's checks.
    pub fn narrow(&self, dim: usize, start: usize, length: usize) -> Result<Layout> {
        if start + length > self.shape[dim] {
            return Err(Error::runtime(format!(
                "start ({start}) + length ({length}) exceeds dimension size ({}).",
                self.shape[dim]
            )));
        }
        let mut l = self.clone();
        l.offset += start * self.strides[dim];
        l.shape[dim] = length;
        Ok(l)
    }

    /// Indexes `dim` with an integer, removing the dim.
    pub fn select(&self, dim: usize, index: i64) -> Result<Layout> {
        let size = self.shape[dim] as i64;
        if index < -size || index >= size {
            return Err(Error::index(format!(
                "index {index} is out of bounds for dimension {dim} with size {size}"
            )));
        }
        let i = if index < 0 { index + size } else { index } as usize;
        let mut l = self.clone();
        l.offset += i * self.strides[dim];
        l.shape.remove(dim);
        l.strides.remove(dim);
        Ok(l)
    }

    pub fn unsqueeze(&self, dim: usize) -> Layout {
        let mut l = self.clone();
        let stride = if dim < self.ndim() {
            self.shape[dim] * self.strides[dim]
        } else {
            1
        };
        l.shape.insert(dim, 1);
        l.strides.insert(dim, stride); // torch: may be 0 (after a size-0 or expanded dim)
        l
    }

    /// Removes the given dims if they have size 1 (others are kept, as in torch).
    pub fn squeeze(&self, dims: &[usize]) -> Layout {
        let mut l = Layout {
            shape: Shape::new(),
            strides: Shape::new(),
            offset: self.offset,
        };
        for (i, (&d, &s)) in self.shape.iter().zip(&self.strides).enumerate() {
            if !(d == 1 && dims.contains(&i)) {
                l.shape.push(d);
                l.strides.push(s);
            }
        }
        l
    }

    /// Broadcasts to `shape` (torch.expand): expanded dims get stride 0.
    pub fn expand(&self, shape: &[usize]) -> Result<Layout> {
        let n = shape.len();
        if n < self.ndim() {
            return Err(Error::runtime(format!(
                "expand(torch.FloatTensor{{[{}]}}, size=[{}]): the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
                self.shape
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                shape
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                n,
                self.ndim()
            )));
        }
        checked_numel(shape)?;
        let lead = n - self.ndim();
        let mut strides: Shape = smallvec::smallvec![0; n];
        // right to left, as torch's inferExpandGeometry: a new leading dim of size 1 gets the
        // stride it would have in a contiguous layout over the dims to its right, so that
        // `stride()` matches torch (size-1 strides never move through memory anyway)
        for i in (0..n).rev() {
            if i < lead {
                if shape[i] == 1 && i + 1 < n {
                    strides[i] = shape[i + 1].saturating_mul(strides[i + 1]);
                }
            } else {
                let (d, s) = (self.shape[i - lead], self.strides[i - lead]);
                if d == shape[i] {
                    strides[i] = s;
                } else if d == 1 {
                    strides[i] = 0;
                } else {
                    return Err(Error::runtime(format!(
                        "The expanded size of the tensor ({}) must match the existing size ({d}) at non-singleton dimension {i}.  Target sizes: {}.  Tensor sizes: {}",
                        shape[i],
                        fmt_shape(shape),
                        fmt_shape(&self.shape)
                    )));
                }
            }
        }
        Ok(Layout {
            shape: Shape::from_slice(shape),
            strides,
            offset: self.offset,
        })
    }

    /// A view with a new shape of the same numel, if the strides allow it without a copy
    /// (torch's computeStride); `None` means the data must be copied (reshape) or it is an
    /// error (view).
    pub fn view(&self, shape: &[usize]) -> Option<Layout> {
        // Strides exactly row-major (not merely `is_contiguous`, which lets size-1 dims have
        // any stride): the walk below would give the new shape's row-major strides too.
        if self.ndim() == 0 || self.strides == contiguous_strides(&self.shape) {
            return Some(Layout {
                shape: Shape::from_slice(shape),
                strides: contiguous_strides(shape),
                offset: self.offset,
            });
        }
        if self.numel() == 0 {
            // torch: the same shape keeps its strides, another gets row-major ones
            let strides = if self.shape.as_slice() == shape {
                self.strides.clone()
            } else {
                contiguous_strides(shape)
            };
            return Some(Layout {
                shape: Shape::from_slice(shape),
                strides,
                offset: self.offset,
            });
        }
        // Walk chunks of old dims that are mutually contiguous and match them to new dims.
        let mut new_strides: Shape = smallvec::smallvec![0; shape.len()];
        let mut view_d = shape.len() as isize - 1;
        let mut chunk_base_stride = *self.strides.last()?;
        let mut tensor_numel = 1usize;
        let mut view_numel = 1usize;
        for tensor_d in (0..self.ndim()).rev() {
            tensor_numel *= self.shape[tensor_d];
            if tensor_d == 0
                || (self.shape[tensor_d - 1] != 1
                    && self.strides[tensor_d - 1] != tensor_numel * chunk_base_stride)
            {
                while view_d >= 0 && (view_numel < tensor_numel || shape[view_d as usize] == 1) {
                    new_strides[view_d as usize] = view_numel * chunk_base_stride;
                    view_numel *= shape[view_d as usize];
                    view_d -= 1;
                }
                if view_numel != tensor_numel {
                    return None;
                }
                if tensor_d > 0 {
                    chunk_base_stride = self.strides[tensor_d - 1];
                    tensor_numel = 1;
                    view_numel = 1;
                }
            }
        }
        if view_d != -1 {
            return None;
        }
        Some(Layout {
            shape: Shape::from_slice(shape),
            strides: new_strides,
            offset: self.offset,
        })
    }
}

/// The memory layout torch's TensorIterator gives the output of an elementwise op (and of
/// `clone`, `to`) over `inputs`, whose shapes broadcast to `shape`: `None` for row-major;
/// else the dims from outermost to innermost (a kernel that writes a contiguous buffer
/// over the inputs permuted into that order writes the output's memory order) and the
/// output's strides. torch keeps the inputs' memory format:
/// - inputs of the output's shape: row-major if all are contiguous; the inputs' strides
///   if all are dense (no gaps, no overlap) with the same strides;
/// - otherwise the dims are ordered by the inputs' strides, the first input that tells
///   two dims apart deciding (broadcast dims ignored; equal strides put the smaller dim
///   inside), and the output is dense in that order.
pub fn iter_output_order(shape: &[usize], inputs: &[&Layout]) -> Option<(Vec<i64>, Shape)> {
    let n = shape.len();
    if n < 2 || inputs.is_empty() {
        return None;
    }
    let outer_first = |strides: &[usize]| -> Vec<i64> {
        let mut order: Vec<usize> = (0..n).collect();
        // (a stable sort: dims of size 1, whose strides may tie, keep their order)
        order.sort_by(|&a, &b| strides[b].cmp(&strides[a]));
        order.into_iter().map(|d| d as i64).collect()
    };
    if inputs.iter().all(|l| l.shape.as_slice() == shape) {
        if inputs.iter().all(|l| l.is_contiguous()) {
            return None;
        }
        if inputs.iter().all(|l| l.is_non_overlapping_and_dense())
            && inputs.windows(2).all(|w| w[0].strides == w[1].strides)
        {
            let strides = inputs[0].strides.clone();
            return Some((outer_first(&strides), strides));
        }
    }
    // each input's strides over the output's dims (0 where it is broadcast)
    let strides: Vec<Shape> = inputs
        .iter()
        .map(|l| {
            let lead = n - l.ndim();
            (0..n)
                .map(|i| match i.checked_sub(lead) {
                    Some(j) if !(l.shape[j] == 1 && shape[i] != 1) => l.strides[j],
                    _ => 0,
                })
                .collect()
        })
        .collect();
    // >0: dim0 goes inside dim1 (torch's `should_swap`)
    let should_swap = |d0: usize, d1: usize| -> i32 {
        for st in &strides {
            let (s0, s1) = (st[d0], st[d1]);
            if s0 == 0 || s1 == 0 {
                continue;
            }
            if s0 != s1 {
                return if s0 < s1 { -1 } else { 1 };
            }
            if shape[d0] > shape[d1] {
                return 1;
            }
        }
        0
    };
    // innermost first, starting from row-major; torch's insertion sort
    let mut perm: Vec<usize> = (0..n).rev().collect();
    for i in 1..n {
        let mut d1 = i;
        for d0 in (0..i).rev() {
            match should_swap(perm[d0], perm[d1]) {
                c if c > 0 => {
                    perm.swap(d0, d1);
                    d1 = d0;
                }
                c if c < 0 => break,
                _ => {}
            }
        }
    }
    if perm.iter().enumerate().all(|(j, &d)| d == n - 1 - j) {
        return None;
    }
    let mut out: Shape = smallvec::smallvec![0; n];
    let mut next = 1usize;
    for &d in &perm {
        out[d] = next;
        next = next.saturating_mul(shape[d]);
    }
    Some((perm.iter().rev().map(|&d| d as i64).collect(), out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(shape: &[usize], strides: &[usize]) -> Layout {
        Layout {
            shape: shape.iter().copied().collect(),
            strides: strides.iter().copied().collect(),
            offset: 0,
        }
    }

    /// The strides torch 2.15 gives (checked there) the output of an elementwise op.
    #[test]
    fn elementwise_outputs_keep_the_inputs_memory_format() {
        let strides = |shape: &[usize], inputs: &[&Layout]| {
            iter_output_order(shape, inputs).map(|(_, s)| s.to_vec())
        };
        let xt = l(&[3, 2], &[1, 3]); // arange(6).reshape(2, 3).t()
        assert_eq!(strides(&[3, 2], &[&xt]), Some(vec![1, 3]));
        assert_eq!(strides(&[3, 2], &[&xt, &xt]), Some(vec![1, 3]));
        let c = Layout::contiguous(&[3, 2]);
        assert_eq!(strides(&[3, 2], &[&xt, &c]), Some(vec![1, 3])); // x + contiguous
        assert_eq!(strides(&[3, 2], &[&c, &xt]), None); // contiguous + x
        let scalar = Layout::contiguous(&[]);
        assert_eq!(strides(&[3, 2], &[&xt, &scalar]), Some(vec![1, 3])); // x + 1
        let row = Layout::contiguous(&[2]);
        assert_eq!(strides(&[3, 2], &[&xt, &row]), Some(vec![1, 3]));
        // permute(2, 0, 1) of a (2, 3, 4) tensor
        let y = l(&[4, 2, 3], &[1, 12, 4]);
        assert_eq!(strides(&[4, 2, 3], &[&y, &scalar]), Some(vec![1, 12, 4]));
        // a size-1 dim: reshape(3, 1).t()
        let s1 = l(&[1, 3], &[1, 1]);
        assert_eq!(strides(&[1, 3], &[&s1]), None); // (contiguous: unary keeps row-major)
        assert_eq!(strides(&[1, 3], &[&s1, &scalar]), Some(vec![1, 1]));
        // permute of a (1, 2, 3) tensor to (3, 1, 2)
        let z = l(&[3, 1, 2], &[1, 6, 3]);
        assert_eq!(strides(&[3, 1, 2], &[&z, &scalar]), Some(vec![1, 6, 3]));
        // not dense: row-major
        let w = l(&[2, 2], &[3, 2]);
        assert_eq!(strides(&[2, 2], &[&w]), None);
        // empty: zeros(0, 3).t() + 1
        let e = l(&[3, 0], &[1, 3]);
        assert_eq!(strides(&[3, 0], &[&e, &scalar]), Some(vec![1, 3]));
    }

    #[test]
    fn transpose_and_contiguity() {
        let l = Layout::contiguous(&[2, 3]);
        assert!(l.is_contiguous());
        let t = l.transpose(0, 1).unwrap();
        assert_eq!(t.shape.as_slice(), &[3, 2]);
        assert_eq!(t.strides.as_slice(), &[1, 3]);
        assert!(!t.is_contiguous());
    }

    #[test]
    fn slicing_with_steps_moves_offset_and_strides() {
        let l = Layout::contiguous(&[10]);
        let s = l.slice(0, Some(1), None, 3).unwrap();
        assert_eq!((s.shape[0], s.strides[0], s.offset), (3, 3, 1));
        let s = l.slice(0, Some(-3), Some(100), 1).unwrap();
        assert_eq!((s.shape[0], s.offset), (3, 7));
    }

    #[test]
    fn view_of_non_contiguous_follows_compute_stride() {
        let t = Layout::contiguous(&[2, 3, 4]).transpose(0, 1).unwrap(); // [3,2,4] strides [4,12,1]
        let v = t.view(&[3, 2, 2, 2]).unwrap();
        assert_eq!(v.strides.as_slice(), &[4, 12, 2, 1]);
        assert!(t.view(&[6, 4]).is_none());
    }

    #[test]
    fn expand_sets_zero_strides() {
        let l = Layout::contiguous(&[3, 1]);
        let e = l.expand(&[2, 3, 4]).unwrap();
        assert_eq!(e.strides.as_slice(), &[0, 1, 0]);
        assert!(l.expand(&[3, 2, 4]).is_err());
    }
}
