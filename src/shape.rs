//! Shapes, dimension wrapping and torch's broadcasting rules.

use crate::{Error, Result};
use smallvec::SmallVec;

/// Sizes of a tensor, outermost first. Inline up to 4 dims (no heap allocation for the
/// shapes most code uses; more spill to the heap). Every tensor holds two (sizes and
/// strides) and most nodes one or two, so each inline dim costs memory and copying on
/// every op: 4 makes a shape 40 bytes instead of 56 for 6.
pub type Shape = SmallVec<[usize; 4]>;

/// `Shape::from_slice` without a call to `memcpy` for the usual few dims (tensor records,
/// nodes and layouts copy shapes on every op).
#[inline]
pub fn copy(s: &[usize]) -> Shape {
    let buf = match *s {
        [] => [0; 4],
        [a] => [a, 0, 0, 0],
        [a, b] => [a, b, 0, 0],
        [a, b, c] => [a, b, c, 0],
        [a, b, c, d] => [a, b, c, d],
        _ => return Shape::from_slice(s),
    };
    Shape::from_buf_and_len(buf, s.len())
}

/// The element count. Every shape a tensor holds passed [`checked_numel`] (or came
/// from one that did), so this product cannot overflow.
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// The product of `sizes` multiplied left to right, `None` if a step overflows 64 bits
/// (a later 0 does not undo it, as in torch's `safe_multiplies_u64`).
pub fn checked_product(sizes: &[usize]) -> Option<usize> {
    sizes.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
}

/// The element count of a shape a user asked for, checked as torch's
/// `safe_compute_numel` does: it must fit an `i64`.
pub fn checked_numel(shape: &[usize]) -> Result<usize> {
    checked_product(shape)
        .filter(|&n| i64::try_from(n).is_ok())
        .ok_or_else(|| Error::runtime("numel: integer multiplication overflow"))
}

/// Row-major (C-contiguous) strides for a shape, in elements.
#[inline]
pub fn contiguous_strides(shape: &[usize]) -> Shape {
    if shape.len() <= 4 {
        // the usual case, without SmallVec's general constructor
        let mut buf = [0usize; 4];
        let mut acc = 1usize;
        for i in (0..shape.len()).rev() {
            buf[i] = acc;
            acc *= shape[i].max(1);
        }
        return Shape::from_buf_and_len(buf, shape.len());
    }
    let mut strides: Shape = smallvec::smallvec![0; shape.len()];
    let mut acc = 1usize;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc *= d.max(1);
    }
    strides
}

/// Wraps a possibly negative dim into `0..ndim` (a 0-d tensor accepts dims -1 and 0, as
/// in torch).
pub fn wrap_dim(dim: i64, ndim: usize) -> Result<usize> {
    let n = ndim.max(1) as i64;
    if dim < -n || dim >= n {
        return Err(Error::DimOutOfRange {
            dim,
            lo: -n,
            hi: n - 1,
        });
    }
    Ok(if dim < 0 {
        (dim + n) as usize
    } else {
        dim as usize
    })
}

/// Wraps a list of dims, rejecting repeats as torch does.
pub fn wrap_dims(dims: &[i64], ndim: usize) -> Result<Shape> {
    let mut out = SmallVec::new();
    for &d in dims {
        let w = wrap_dim(d, ndim)?;
        if out.contains(&w) {
            return Err(Error::runtime(format!(
                "dim {w} appears multiple times in the list of dims"
            )));
        }
        out.push(w);
    }
    Ok(out)
}

/// The broadcast shape of two shapes (torch.broadcast_shapes). Dims are matched from the
/// last, as torch's `infer_size` does, so that a mismatch is reported at the dim torch
/// names when several differ.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Shape> {
    let n = a.len().max(b.len());
    let mut out: Shape = smallvec::smallvec![0; n];
    for i in (0..n).rev() {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::BroadcastMismatch {
                a: da,
                b: db,
                dim: i,
            });
        };
    }
    Ok(out)
}

/// Formats a shape as torch prints sizes in messages: `[2, 3]`.
pub fn fmt_shape(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// The shape of a new tensor given as sizes (torch's check_size_nonnegative): none may be
/// negative.
pub fn sizes_to_shape(sizes: &[i64]) -> Result<Shape> {
    sizes
        .iter()
        .map(|&s| {
            usize::try_from(s).map_err(|_| {
                Error::runtime(format!(
                    "Trying to create tensor with negative dimension {s}: {sizes:?}"
                ))
            })
        })
        .collect()
}

/// Resolves a `view`/`reshape` size list with at most one `-1`.
pub fn infer_size(sizes: &[i64], numel: usize) -> Result<Shape> {
    let mut out: Shape = Shape::with_capacity(sizes.len());
    let mut infer = None;
    for (i, &s) in sizes.iter().enumerate() {
        if s == -1 {
            if infer.is_some() {
                return Err(Error::runtime("only one dimension can be inferred"));
            }
            infer = Some(i);
            out.push(1);
        } else if s < 0 {
            return Err(Error::runtime(format!("invalid shape dimension {s}")));
        } else {
            out.push(s as usize);
        }
    }
    // As torch's infer_size_impl: the product wraps like its int64 (a shape whose count
    // overflows is then refused when the view is made, by `checked_numel`).
    let known = out.iter().fold(1i64, |a, &d| a.wrapping_mul(d as i64));
    let n = numel as i64;
    let invalid = || {
        let parts: Vec<String> = sizes.iter().map(|d| d.to_string()).collect();
        Error::runtime(format!(
            "shape '[{}]' is invalid for input of size {numel}",
            parts.join(", ")
        ))
    };
    if !(n == known || (infer.is_some() && known > 0 && n % known == 0)) {
        return Err(invalid());
    }
    if let Some(i) = infer {
        if known == 0 {
            let parts: Vec<String> = sizes.iter().map(|d| d.to_string()).collect();
            return Err(Error::runtime(format!(
                "cannot reshape tensor of 0 elements into shape [{}] because the unspecified dimension size -1 can be any value and is ambiguous",
                parts.join(", ")
            )));
        }
        out[i] = (n / known) as usize;
    }
    checked_numel(&out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_follows_torch_rules() {
        assert_eq!(
            broadcast_shapes(&[3, 1], &[1, 4]).unwrap().as_slice(),
            &[3, 4]
        );
        assert_eq!(broadcast_shapes(&[2, 3], &[3]).unwrap().as_slice(), &[2, 3]);
        assert_eq!(broadcast_shapes(&[], &[2]).unwrap().as_slice(), &[2]);
        assert_eq!(broadcast_shapes(&[0], &[1]).unwrap().as_slice(), &[0]);
        let e = broadcast_shapes(&[3], &[4]).unwrap_err().to_string();
        assert_eq!(
            e,
            "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"
        );
    }

    #[test]
    fn dims_wrap_like_torch() {
        assert_eq!(wrap_dim(-1, 2).unwrap(), 1);
        assert_eq!(wrap_dim(0, 0).unwrap(), 0);
        let e = wrap_dim(2, 2).unwrap_err().to_string();
        assert_eq!(
            e,
            "Dimension out of range (expected to be in range of [-2, 1], but got 2)"
        );
    }

    #[test]
    fn infer_size_handles_minus_one() {
        assert_eq!(infer_size(&[-1, 3], 6).unwrap().as_slice(), &[2, 3]);
        assert!(
            infer_size(&[4], 6)
                .unwrap_err()
                .to_string()
                .contains("shape '[4]' is invalid for input of size 6")
        );
        assert_eq!(contiguous_strides(&[2, 3, 4]).as_slice(), &[12, 4, 1]);
    }

    #[test]
    fn sizes_that_overflow_are_refused_like_torch() {
        let big = 1usize << 32;
        let e = checked_numel(&[big, big]).unwrap_err().to_string();
        assert_eq!(e, "numel: integer multiplication overflow");
        // fits u64 but not i64
        assert!(checked_numel(&[1 << 62, 2]).is_err());
        assert_eq!(checked_numel(&[1 << 62, 0]).unwrap(), 0);
        // an overflow before a 0 stays an overflow, as in torch
        assert!(checked_numel(&[big, big, 0]).is_err());
        // view: the product wraps as torch's int64 does, then the shape is checked
        let e = infer_size(&[1 << 32, 1 << 32], 6).unwrap_err().to_string();
        assert!(e.starts_with("shape '[4294967296, 4294967296]' is invalid for input of size 6"));
        let e = infer_size(&[1 << 62, 1 << 62, 0], 0)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "numel: integer multiplication overflow");
        let e = infer_size(&[-1, 0], 0).unwrap_err().to_string();
        assert!(e.starts_with("cannot reshape tensor of 0 elements into shape [-1, 0]"));
    }
}
