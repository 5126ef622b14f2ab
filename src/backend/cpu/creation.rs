//! Factory kernels: ranges and eye (zeros and full are `Buffer::zeros` / `Buffer::full`).

use crate::dtype::DType;
use crate::storage::{Buffer, Element};

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
        DType::F64 => Buffer::F64(vals),
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
