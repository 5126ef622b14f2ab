//! Factory functions: zeros/ones/full, ranges and eye (random tensors: `random.rs`).

use super::new_tensor;
use crate::backend;
use crate::device::default_device;
use crate::dtype::{DType, Scalar};
use crate::shape::Shape;
use crate::storage::alloc_guard;

/// A tensor of `shape` and `dtype` can be allocated (see [`alloc_guard`]).
pub(crate) fn guard(shape: &[usize], dtype: DType) -> Result<()> {
    alloc_guard(shape, dtype)
}
use crate::tensor::Tensor;
use crate::{Error, Result};

/// The shape of factory `name`'s result, given as sizes (none negative); torch 2.15's
/// `zeros` words a negative size its own way.
pub fn factory_shape(name: &str, sizes: &[i64]) -> Result<Shape> {
    if name == "zeros" && sizes.iter().any(|&s| s < 0) {
        return Err(Error::runtime(
            "zeros: Dimension size must be non-negative.",
        ));
    }
    crate::shape::sizes_to_shape(sizes)
}

pub fn full(shape: &[usize], v: Scalar, dtype: DType) -> Result<Tensor> {
    full_as("aten::full", shape, v, dtype)
}

/// [`full`] under the name of the factory that asked (`aten::ones`).
fn full_as(name: &'static str, shape: &[usize], v: Scalar, dtype: DType) -> Result<Tensor> {
    guard(shape, dtype)?;
    v.check_fits(dtype)?;
    super::apply_nondiff(name, || {
        let buf = backend::on(default_device())?.full(dtype, crate::shape::numel(shape), v)?;
        Ok(new_tensor(buf, shape))
    })
}
pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
    super::apply_nondiff("aten::zeros", || zeros_impl(shape, dtype))
}

fn zeros_impl(shape: &[usize], dtype: DType) -> Result<Tensor> {
    guard(shape, dtype)?;
    let buf = backend::on(default_device())?.zeros(dtype, crate::shape::numel(shape))?;
    Ok(new_tensor(buf, shape))
}
/// `torch.empty`: a tensor whose values the caller will overwrite (zeros on the host).
pub fn empty(shape: &[usize], dtype: DType) -> Result<Tensor> {
    super::apply_nondiff("aten::empty", || {
        guard(shape, dtype)?;
        let buf = backend::on(default_device())?.empty(dtype, crate::shape::numel(shape))?;
        Ok(new_tensor(buf, shape))
    })
}
pub fn ones(shape: &[usize], dtype: DType) -> Result<Tensor> {
    full_as("aten::ones", shape, Scalar::Int(1), dtype)
}
/// Zeros of `shape` on `device` (a gradient materialised where its tensor lives).
pub fn zeros_on(shape: &[usize], dtype: DType, device: crate::device::Device) -> Result<Tensor> {
    crate::device::with_default_device(device, || zeros(shape, dtype))
}
/// Zeros shaped like `x`, of its dtype, on its device.
pub fn zeros_like(x: &Tensor) -> Result<Tensor> {
    zeros_on(&x.shape(), x.dtype(), x.device())
}
/// Ones shaped like `x`, of its dtype, on its device.
pub fn ones_like(x: &Tensor) -> Result<Tensor> {
    crate::device::with_default_device(x.device(), || ones(&x.shape(), x.dtype()))
}

/// `torch.arange(start, end, step)`; the dtype is int64 when all arguments are integers.
pub fn arange(start: f64, end: f64, step: f64, dtype: DType) -> Result<Tensor> {
    super::apply_nondiff("aten::arange", || arange_impl(start, end, step, dtype))
}

fn arange_impl(start: f64, end: f64, step: f64, dtype: DType) -> Result<Tensor> {
    if step == 0.0 {
        return Err(Error::runtime("step must be nonzero"));
    }
    if !(start.is_finite() && end.is_finite()) {
        return Err(Error::runtime(format!(
            "unsupported range: {start} -> {end}"
        )));
    }
    if (step > 0.0 && end < start) || (step < 0.0 && end > start) {
        return Err(Error::runtime(
            "upper bound and lower bound inconsistent with step sign",
        ));
    }
    let n = ((end - start) / step).ceil().max(0.0);
    // torch's check, in doubles: 2^63 itself is refused
    if n >= i64::MAX as f64 {
        return Err(Error::runtime("invalid size, possible overflow?"));
    }
    let n = n as usize;
    alloc_guard(&[n], dtype)?;
    let buf = backend::on(default_device())?
        .arange(start, step, n, dtype)?
        .ok_or_else(|| Error::not_implemented("\"arange_cpu\" not implemented for 'Bool'"))?;
    Ok(new_tensor(buf, &[n]))
}

/// `torch.linspace(start, end, steps)` (symmetric fill, as torch does, so both ends are exact).
pub fn linspace(start: f64, end: f64, steps: i64, dtype: DType) -> Result<Tensor> {
    super::apply_nondiff("aten::linspace", || linspace_impl(start, end, steps, dtype))
}

fn linspace_impl(start: f64, end: f64, steps: i64, dtype: DType) -> Result<Tensor> {
    if steps < 0 {
        return Err(Error::runtime("number of steps must be non-negative"));
    }
    let n = steps as usize;
    alloc_guard(&[n], dtype)?;
    let buf = backend::on(default_device())?.linspace(start, end, n, dtype)?;
    Ok(new_tensor(buf, &[n]))
}

pub fn eye(n: usize, m: usize, dtype: DType) -> Result<Tensor> {
    super::apply_nondiff("aten::eye", || eye_impl(n, m, dtype))
}

fn eye_impl(n: usize, m: usize, dtype: DType) -> Result<Tensor> {
    guard(&[n, m], dtype)?;
    let buf = backend::on(default_device())?.eye(n, m, dtype)?;
    Ok(new_tensor(buf, &[n, m]))
}

/// A tensor over a buffer built on the host from numbers (not by a kernel): a constant of
/// a step being recorded (`replay::const_born`).
pub(crate) fn host_tensor(buf: crate::storage::Buffer, shape: &[usize]) -> Tensor {
    crate::replay::const_born(&buf);
    super::new_tensor(buf, shape)
}
