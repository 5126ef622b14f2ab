//! Factory functions: zeros/ones/full, ranges, eye, and seeded random tensors.

use super::new_tensor;
use crate::dtype::{DType, Scalar};
use crate::storage::{Buffer, alloc_guard};

/// Checked element count of a shape (a product that overflows is refused like OOM).
pub(crate) fn guard(shape: &[usize], dtype: DType) -> Result<()> {
    let n = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .unwrap_or(usize::MAX);
    alloc_guard(n, dtype)
}
use crate::tensor::Tensor;
use crate::{Error, Result};
use parking_lot::Mutex;

pub fn full(shape: &[usize], v: Scalar, dtype: DType) -> Result<Tensor> {
    guard(shape, dtype)?;
    super::apply_nondiff(|| {
        Ok(new_tensor(
            Buffer::full(dtype, crate::shape::numel(shape), v.as_f64()),
            shape,
        ))
    })
}
pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
    super::apply_nondiff(|| zeros_impl(shape, dtype))
}

fn zeros_impl(shape: &[usize], dtype: DType) -> Result<Tensor> {
    guard(shape, dtype)?;
    Ok(new_tensor(
        Buffer::zeros(dtype, crate::shape::numel(shape)),
        shape,
    ))
}
pub fn ones(shape: &[usize], dtype: DType) -> Result<Tensor> {
    full(shape, Scalar::Int(1), dtype)
}
pub fn zeros_like(x: &Tensor) -> Result<Tensor> {
    zeros(&x.shape(), x.dtype())
}
pub fn ones_like(x: &Tensor) -> Result<Tensor> {
    ones(&x.shape(), x.dtype())
}

/// `torch.arange(start, end, step)`; the dtype is int64 when all arguments are integers.
pub fn arange(start: f64, end: f64, step: f64, dtype: DType) -> Result<Tensor> {
    super::apply_nondiff(|| arange_impl(start, end, step, dtype))
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
            "upper bound and larger bound inconsistent with step sign",
        ));
    }
    let n = ((end - start) / step).ceil().max(0.0);
    if n >= usize::MAX as f64 {
        return Err(Error::runtime(format!(
            "unsupported range: {start} -> {end}"
        )));
    }
    let n = n as usize;
    alloc_guard(n, dtype)?;
    let buf = match dtype {
        DType::F32 => Buffer::F32((0..n).map(|i| (start + i as f64 * step) as f32).collect()),
        DType::F64 => Buffer::F64((0..n).map(|i| start + i as f64 * step).collect()),
        DType::I64 => Buffer::I64((0..n).map(|i| (start + i as f64 * step) as i64).collect()),
        DType::Bool => {
            return Err(Error::not_implemented(
                "\"arange_cpu\" not implemented for 'Bool'",
            ));
        }
    };
    Ok(new_tensor(buf, &[n]))
}

/// `torch.linspace(start, end, steps)` (symmetric fill, as torch does, so both ends are exact).
pub fn linspace(start: f64, end: f64, steps: i64, dtype: DType) -> Result<Tensor> {
    super::apply_nondiff(|| linspace_impl(start, end, steps, dtype))
}

fn linspace_impl(start: f64, end: f64, steps: i64, dtype: DType) -> Result<Tensor> {
    if steps < 0 {
        return Err(Error::runtime("number of steps must be non-negative"));
    }
    let n = steps as usize;
    alloc_guard(n, dtype)?;
    if n == 1 {
        // torch fills a single step with `start` (the symmetric fill below would give `end`)
        return Ok(new_tensor(cast_f64(vec![start], dtype), &[1]));
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
    Ok(new_tensor(cast_f64(vals, dtype), &[n]))
}

fn cast_f64(vals: Vec<f64>, dtype: DType) -> Buffer {
    match dtype {
        DType::F32 => Buffer::F32(vals.iter().map(|&v| v as f32).collect()),
        DType::F64 => Buffer::F64(vals),
        DType::I64 => Buffer::I64(vals.iter().map(|&v| v as i64).collect()),
        DType::Bool => Buffer::Bool(vals.iter().map(|&v| v != 0.0).collect()),
    }
}

pub fn eye(n: usize, m: usize, dtype: DType) -> Result<Tensor> {
    super::apply_nondiff(|| eye_impl(n, m, dtype))
}

fn eye_impl(n: usize, m: usize, dtype: DType) -> Result<Tensor> {
    guard(&[n, m], dtype)?;
    let mut b = Buffer::zeros(dtype, n * m);
    crate::with_dtype!(dtype, T => {
        use crate::storage::Element;
        let s = T::slice_mut(&mut b);
        for i in 0..n.min(m) {
            s[i * m + i] = T::from_f64(1.0);
        }
    });
    Ok(new_tensor(b, &[n, m]))
}

// ---- random numbers ---------------------------------------------------------------------

/// xoshiro256** seeded by splitmix64: small, fast, and reproducible under manual_seed.
/// (rgrad does not reproduce torch's mt19937 streams; only reproducibility is promised.)
struct Rng {
    s: [u64; 4],
}

impl Rng {
    fn seeded(seed: u64) -> Rng {
        let mut z = seed;
        let mut next = || {
            z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut x = z;
            x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            x ^ (x >> 31)
        };
        Rng {
            s: [next(), next(), next(), next()],
        }
    }
    fn next_u64(&mut self) -> u64 {
        let r = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        r
    }
    /// Uniform in [0, 1) with 53 random bits.
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    fn normal(&mut self) -> f64 {
        // Box-Muller
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

static RNG: Mutex<Option<Rng>> = Mutex::new(None);

fn with_rng<R>(f: impl FnOnce(&mut Rng) -> R) -> R {
    let mut g = RNG.lock();
    let rng = g.get_or_insert_with(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Rng::seeded(t ^ u64::from(std::process::id()))
    });
    f(rng)
}

/// `torch.manual_seed(seed)`.
pub fn manual_seed(seed: u64) {
    *RNG.lock() = Some(Rng::seeded(seed));
}

fn float_buf(dtype: DType, n: usize, mut f: impl FnMut() -> f64) -> Result<Buffer> {
    Ok(match dtype {
        DType::F32 => Buffer::F32((0..n).map(|_| f() as f32).collect()),
        DType::F64 => Buffer::F64((0..n).map(|_| f()).collect()),
        _ => {
            return Err(Error::runtime(format!(
                "\"check_uniform_bounds\" not implemented for '{}'",
                if dtype == DType::I64 { "Long" } else { "Bool" }
            )));
        }
    })
}

pub fn rand(shape: &[usize], dtype: DType) -> Result<Tensor> {
    super::apply_nondiff(|| rand_impl(shape, dtype))
}

fn rand_impl(shape: &[usize], dtype: DType) -> Result<Tensor> {
    guard(shape, dtype)?;
    let n = crate::shape::numel(shape);
    let b = with_rng(|r| float_buf(dtype, n, || r.uniform()))?;
    Ok(new_tensor(b, shape))
}

pub fn randn(shape: &[usize], dtype: DType) -> Result<Tensor> {
    super::apply_nondiff(|| randn_impl(shape, dtype))
}

fn randn_impl(shape: &[usize], dtype: DType) -> Result<Tensor> {
    guard(shape, dtype)?;
    let n = crate::shape::numel(shape);
    let b = with_rng(|r| float_buf(dtype, n, || r.normal()))?;
    Ok(new_tensor(b, shape))
}

/// `torch.randint(low, high, size)`: uniform integers in [low, high).
pub fn randint(low: i64, high: i64, shape: &[usize], dtype: DType) -> Result<Tensor> {
    super::apply_nondiff(|| randint_impl(low, high, shape, dtype))
}

fn randint_impl(low: i64, high: i64, shape: &[usize], dtype: DType) -> Result<Tensor> {
    if high <= low {
        return Err(Error::runtime(format!(
            "random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )));
    }
    guard(shape, DType::I64)?;
    let n = crate::shape::numel(shape);
    let span = (high as i128 - low as i128).min(u64::MAX as i128) as u64;
    let vals: Vec<i64> = with_rng(|r| (0..n).map(|_| low + (r.next_u64() % span) as i64).collect());
    let t = new_tensor(Buffer::I64(vals), shape);
    if dtype == DType::I64 {
        Ok(t)
    } else {
        super::to_dtype(&t, dtype)
    }
}
