//! Factory kernels: zeros, full and fill (split across the pool when large), ranges
//! and eye.

use crate::dtype::{DType, Scalar};
use crate::layout::Layout;
use crate::storage::{Buffer, Element};

/// `v` as one element of `dtype` (`Buffer::full`'s conversion: an integer stays exact
/// beyond 2**53).
fn element_of<T: Element>(v: Scalar) -> T {
    let one = Buffer::full(T::DTYPE, 1, v);
    T::slice(&one).first().copied().unwrap_or_default()
}

/// `n` zeros of `dtype`: calloc below the parallel threshold; above it, written in
/// parallel chunks, since calloc's fresh pages would be faulted in and zeroed by one
/// thread (zeros_like at 4M: 650 us on 1 or 2 threads; torch fills in parallel).
pub fn zeros(dtype: DType, n: usize) -> Buffer {
    if n < super::elementwise::PAR_MIN || !crate::runtime::intra_op_parallel() {
        return Buffer::zeros(dtype, n);
    }
    full(dtype, n, Scalar::Int(0))
}

/// `n` elements for `torch.empty`: zeros from calloc, never written here (Rust has no
/// uninitialised floats; calloc's fresh pages cost nothing until the caller writes
/// them, as torch's uninitialised memory does).
pub fn empty(dtype: DType, n: usize) -> Buffer {
    Buffer::zeros(dtype, n)
}

/// `n` copies of `v` in `dtype`, written in parallel chunks for large `n`.
pub fn full(dtype: DType, n: usize, v: Scalar) -> Buffer {
    crate::with_dtype!(dtype, T => {
        let x: T = element_of(v);
        T::into_buffer(super::elementwise::fill_chunks(n, |_, chunk| {
            for o in chunk {
                o.write(x);
            }
        }))
    })
}

/// `fill_`: `v` written into every element of `ld` in `dst` (a dense destination in
/// parallel rows; one that writes an element twice, an expanded view, in row-major
/// order: `strided::copy_layout` from a broadcast source).
pub fn fill(dst: &mut Buffer, ld: &Layout, v: Scalar) {
    crate::with_dtype!(dst.dtype(), T => {
        let x: [T; 1] = [element_of(v)];
        let src = Layout { shape: ld.shape.clone(), strides: smallvec::smallvec![0; ld.ndim()], offset: 0 };
        super::strided::copy_layout(T::slice_mut(dst), ld, &x, &src);
    })
}

/// arange's `n` values `start + i·step`, computed in double and cast to `dtype`; `None`
/// for bool (torch has no kernel).
pub fn arange(start: f64, step: f64, n: usize, dtype: DType) -> Option<Buffer> {
    Some(match dtype {
        DType::F32 => Buffer::F32((0..n).map(|i| (start + i as f64 * step) as f32).collect()),
        DType::F64 => Buffer::F64((0..n).map(|i| start + i as f64 * step).collect()),
        DType::I64 => Buffer::I64((0..n).map(|i| (start + i as f64 * step) as i64).collect()),
        DType::Bool => return None,
    })
}

/// linspace's `n` values from `start` to `end`, computed in double and cast to `dtype`:
/// the first half counted up from `start`, the rest down from `end` (torch's symmetric
/// fill, so both ends are exact).
pub fn linspace(start: f64, end: f64, n: usize, dtype: DType) -> Buffer {
    if n == 1 {
        // torch fills a single step with `start` (the symmetric fill below would give `end`)
        return cast_f64(vec![start], dtype);
    }
    let step = if n > 1 {
        (end - start) / (n - 1) as f64
    } else {
        0.0
    };
    let half = n / 2;
    let vals: Vec<f64> = (0..n)
        .map(|i| {
            if i < half {
                start + step * i as f64
            } else {
                end - step * (n - 1 - i) as f64
            }
        })
        .collect();
    cast_f64(vals, dtype)
}

fn cast_f64(vals: Vec<f64>, dtype: DType) -> Buffer {
    match dtype {
        DType::F32 => Buffer::F32(vals.iter().map(|&v| v as f32).collect()),
        DType::F64 => Buffer::F64(vals.into()),
        DType::I64 => Buffer::I64(vals.iter().map(|&v| v as i64).collect()),
        DType::Bool => Buffer::Bool(vals.iter().map(|&v| v != 0.0).collect()),
    }
}

/// An `n` x `m` identity matrix of `dtype`, row-major.
pub fn eye(n: usize, m: usize, dtype: DType) -> Buffer {
    let mut b = Buffer::zeros(dtype, n * m);
    crate::with_dtype!(dtype, T => {
        let s = T::slice_mut(&mut b);
        for i in 0..n.min(m) {
            s[i * m + i] = T::from_f64(1.0);
        }
    });
    b
}
