//! Random ops with torch's CPU streams: factories (rand, randn, randint, randperm), the
//! in-place fills (uniform_, normal_, bernoulli_, random_, exponential_, cauchy_,
//! geometric_, log_normal_) and bernoulli / multinomial.
//!
//! Each op locks its generator once and draws exactly what ATen's kernel draws, in the
//! same order: elements in TensorIterator order (`random::iteration_order`), and for
//! `normal_` the same switch between the vectorised fill (contiguous, 16 elements or more)
//! and the scalar Box-Muller with its cached second sample.

use super::{apply_nondiff, contiguous, expand, new_tensor};
use crate::backend::host::random as rk;
use crate::dtype::DType;
use crate::random::{self, Generator, GeneratorState};
use crate::storage::Buffer;
use crate::tensor::Tensor;
use crate::{Error, Result};

fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "Float",
        DType::F64 => "Double",
        DType::I64 => "Long",
        DType::Bool => "Bool",
    }
}

fn not_float(kernel: &str, d: DType) -> Error {
    Error::not_implemented(format!(
        "\"{kernel}\" not implemented for '{}'",
        dtype_name(d)
    ))
}

/// Writes freshly drawn values into `x`: `draw(generator, n, contiguous)` returns them in
/// TensorIterator order of `x`'s layout.
fn fill_in_place(
    x: &Tensor,
    generator: Option<&Generator>,
    draw: impl FnOnce(&mut GeneratorState, usize, bool) -> Result<Buffer>,
) -> Result<Tensor> {
    let layout = x.layout();
    let n = layout.numel();
    let is_contig = layout.is_contiguous();
    let order = (!is_contig).then(|| random::iteration_order(&layout.shape, &layout.strides));
    let shape = layout.shape.clone();
    super::inplace::commit_checked(x, |_| {
        let buf = random::or_default(generator).with(|g| draw(g, n, is_contig))?;
        Ok(new_tensor(rk::to_logical(buf, order.as_deref()), &shape))
    })?;
    Ok(x.clone())
}

// ---- uniform ---------------------------------------------------------------------------

fn check_uniform(from: f64, to: f64, dtype: DType) -> Result<()> {
    if !dtype.is_float() {
        return Err(not_float("check_uniform_bounds", dtype));
    }
    let (lo, hi) = if dtype == DType::F32 {
        (f64::from(f32::MIN), f64::from(f32::MAX))
    } else {
        (f64::MIN, f64::MAX)
    };
    let name = if dtype == DType::F32 {
        "float"
    } else {
        "double"
    };
    if !(lo..=hi).contains(&from) {
        return Err(Error::runtime(format!("from is out of bounds for {name}")));
    }
    if !(lo..=hi).contains(&to) {
        return Err(Error::runtime(format!("to is out of bounds for {name}")));
    }
    if from > to {
        return Err(Error::runtime(format!(
            "uniform_ expects to return a [from, to) range, but found from={} > to={}",
            fmt_num(from),
            fmt_num(to)
        )));
    }
    if to - from > hi {
        return Err(Error::runtime(format!(
            "uniform_ expects to-from <= std::numeric_limits<{name}>::max(), but found to={} and from={} which \
             result in to-from to exceed the limit",
            fmt_num(to),
            fmt_num(from)
        )));
    }
    Ok(())
}

/// A double as C++ streams print it (`%g` with 6 significant digits).
fn fmt_num(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    if v == v.trunc() && v.abs() < 1e6 {
        return format!("{v:.0}");
    }
    let s = format!("{v:.6e}");
    let r: f64 = s.parse().unwrap_or(v);
    if r.abs() >= 1e-5 && r.abs() < 1e6 {
        let mut t = format!("{r:.6}");
        let digits_before = t.find('.').unwrap_or(t.len()) - usize::from(r < 0.0);
        let keep = 6usize.saturating_sub(digits_before);
        t = format!("{r:.keep$}");
        if t.contains('.') {
            t = t.trim_end_matches('0').trim_end_matches('.').to_string();
        }
        t
    } else {
        format!("{r:e}")
    }
}

/// `x.uniform_(from, to, generator=)`.
pub fn uniform_(x: &Tensor, from: f64, to: f64, generator: Option<&Generator>) -> Result<Tensor> {
    let dtype = x.dtype();
    check_uniform(from, to, dtype)?;
    if crate::replay::active() {
        return uniform_recorded(x, from, to, dtype, generator);
    }
    fill_in_place(x, generator, |g, n, _| {
        rk::uniform(g, n, dtype, from, to).ok_or_else(|| not_float("check_uniform_bounds", dtype))
    })
}

/// `uniform_` while a step is recorded (`replay`): the draws are a step of their own, so
/// that a replay draws again from the same generator, in step order.
fn uniform_recorded(
    x: &Tensor,
    from: f64,
    to: f64,
    dtype: DType,
    generator: Option<&Generator>,
) -> Result<Tensor> {
    let layout = x.layout();
    if !layout.is_contiguous() {
        crate::replay::refuse("uniform_ on a non-contiguous tensor")?;
    }
    let n = layout.numel();
    let shape = layout.shape.clone();
    let gen_ = crate::replay::random_ok(|| random::or_default(generator).clone());
    let draw = move || {
        gen_.with(|g| rk::uniform(g, n, dtype, from, to))
            .ok_or_else(|| not_float("check_uniform_bounds", dtype))
    };
    let buf = draw()?;
    crate::replay::record(
        "uniform_",
        &[],
        None,
        &[&buf],
        Box::new(move |_, _| Ok(smallvec::smallvec![draw()?])),
    )?;
    super::inplace::commit_checked(x, |_| Ok(new_tensor(buf, &shape)))?;
    Ok(x.clone())
}

/// `torch.rand(size, dtype=, generator=)`.
pub fn rand(shape: &[usize], dtype: DType, generator: Option<&Generator>) -> Result<Tensor> {
    check_uniform(0.0, 1.0, dtype)?;
    super::creation::guard(shape, dtype)?;
    apply_nondiff("aten::rand", || {
        let n = crate::shape::numel(shape);
        let gen_ = crate::replay::random_ok(|| random::or_default(generator).clone());
        let draw = move || {
            gen_.with(|g| rk::uniform(g, n, dtype, 0.0, 1.0))
                .ok_or_else(|| not_float("check_uniform_bounds", dtype))
        };
        let buf = draw()?;
        // recording a step: a replay draws again from the same generator, in step order
        if crate::replay::active() {
            crate::replay::record(
                "rand",
                &[],
                None,
                &[&buf],
                Box::new(move |_, _| Ok(smallvec::smallvec![draw()?])),
            )?;
        }
        Ok(new_tensor(buf, shape))
    })
}

// ---- normal ----------------------------------------------------------------------------

fn check_std(std: f64) -> Result<()> {
    // `!(std >= 0)` also refuses NaN, as torch's TORCH_CHECK(std >= 0.0) does.
    if std >= 0.0 {
        Ok(())
    } else {
        Err(Error::runtime(format!(
            "normal expects std >= 0.0, but found std {}",
            fmt_num(std)
        )))
    }
}

/// `x.normal_(mean, std, generator=)`.
pub fn normal_(x: &Tensor, mean: f64, std: f64, generator: Option<&Generator>) -> Result<Tensor> {
    check_std(std)?;
    let dtype = x.dtype();
    if !dtype.is_float() {
        return Err(not_float("normal_kernel_cpu", dtype));
    }
    fill_in_place(x, generator, |g, n, c| {
        rk::normal(g, n, c, dtype, mean, std).ok_or_else(|| not_float("normal_kernel_cpu", dtype))
    })
}

/// `torch.randn(size, dtype=, generator=)` (and `torch.normal(mean, std, size)`).
pub fn randn(
    shape: &[usize],
    dtype: DType,
    mean: f64,
    std: f64,
    generator: Option<&Generator>,
) -> Result<Tensor> {
    check_std(std)?;
    if !dtype.is_float() {
        return Err(not_float("normal_kernel_cpu", dtype));
    }
    super::creation::guard(shape, dtype)?;
    apply_nondiff("aten::randn", || {
        let n = crate::shape::numel(shape);
        let buf = random::or_default(generator)
            .with(|g| rk::normal(g, n, true, dtype, mean, std))
            .ok_or_else(|| not_float("normal_kernel_cpu", dtype))?;
        Ok(new_tensor(buf, shape))
    })
}

/// Checks a tensor of standard deviations (`torch.normal(mean, std_tensor)`).
pub fn check_std_tensor(std: &Tensor) -> Result<()> {
    let v = values_f64(std)?;
    if v.iter().all(|&s| s >= 0.0) {
        Ok(())
    } else {
        Err(Error::runtime("normal expects all elements of std >= 0.0"))
    }
}

// ---- integers --------------------------------------------------------------------------

/// ATen's `update_from` / `update_to`: for float outputs, bounds that the dtype cannot
/// represent move inwards to values it can (so every draw is representable).
fn update_from(from: i64, digits: u32, round: impl Fn(i64) -> i64) -> i64 {
    let from_plus_1 = round(from + 1);
    if from_plus_1 < from {
        let mut f = (from + 1).unsigned_abs();
        let mut n = 0u32;
        while {
            f >>= 1;
            f != 0
        } {
            n += 1;
        }
        return from_plus_1 + (1i64 << (n + 1).saturating_sub(digits));
    }
    from
}
fn update_to(to: i64, digits: u32, round: impl Fn(i64) -> i64) -> i64 {
    let to_minus_1 = round(to - 1);
    if to_minus_1 >= to {
        let mut t = (to - 1).unsigned_abs();
        let mut n = 0u32;
        while {
            t >>= 1;
            t != 0
        } {
            n += 1;
        }
        return to_minus_1 - (1i64 << (n + 1).saturating_sub(digits));
    }
    to
}

/// Checks `[from, to)` for `random_`/`randint` and returns the bounds ATen draws between.
fn check_from_to(from: i64, to: i64, dtype: DType) -> Result<(i64, i64)> {
    if from >= to {
        return Err(Error::runtime(format!(
            "random_ expects 'from' to be less than 'to', but got from={from} >= to={to}"
        )));
    }
    let (from, to) = match dtype {
        DType::F32 => {
            let r = |v: i64| v as f32 as i64;
            (update_from(from, 24, r), update_to(to, 24, r))
        }
        DType::F64 => {
            let r = |v: i64| v as f64 as i64;
            (update_from(from, 53, r), update_to(to, 53, r))
        }
        _ => (from, to),
    };
    if from >= to {
        return Err(Error::runtime(format!(
            "random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but got from={from} >= to={to}"
        )));
    }
    if dtype == DType::Bool {
        if !(0..=1).contains(&from) {
            return Err(Error::runtime("from is out of bounds for bool"));
        }
        if !(0..=1).contains(&(to - 1)) {
            return Err(Error::runtime("to - 1 is out of bounds for bool"));
        }
    }
    Ok((from, to))
}

/// `x.random_(from, to, generator=)`: integers in [from, to).
pub fn random_(x: &Tensor, from: i64, to: i64, generator: Option<&Generator>) -> Result<Tensor> {
    let dtype = x.dtype();
    let (from, to) = check_from_to(from, to, dtype)?;
    fill_in_place(x, generator, |g, n, _| {
        Ok(rk::random(g, n, dtype, from, to))
    })
}

/// `torch.randint(low, high, size, dtype=, generator=)`.
pub fn randint(
    low: i64,
    high: i64,
    shape: &[usize],
    dtype: DType,
    generator: Option<&Generator>,
) -> Result<Tensor> {
    let (low, high) = check_from_to(low, high, dtype)?;
    super::creation::guard(shape, dtype)?;
    apply_nondiff("aten::randint", || {
        let n = crate::shape::numel(shape);
        let buf = random::or_default(generator).with(|g| rk::random(g, n, dtype, low, high));
        Ok(new_tensor(buf, shape))
    })
}

/// `torch.randperm(n, dtype=, generator=)`: ATen's `randperm_cpu` (a Fisher-Yates shuffle
/// of 0..n with 32-bit draws, or the inside-out variant with 64-bit draws for huge n).
pub fn randperm(n: i64, dtype: DType, generator: Option<&Generator>) -> Result<Tensor> {
    if n < 0 {
        return Err(Error::runtime(format!(
            "Trying to create tensor with negative dimension {n}: [{n}]"
        )));
    }
    if dtype == DType::Bool && n > 2 {
        return Err(Error::runtime(format!(
            "n must be less than or equal to 2 for bool dtype, but got {n}"
        )));
    }
    let len = n as usize;
    super::creation::guard(&[len], DType::I64)?;
    apply_nondiff("aten::randperm", || {
        let r = random::or_default(generator).with(|g| rk::randperm(g, len));
        Ok(new_tensor(rk::from_i64(dtype, r), &[len]))
    })
}

// ---- exponential_, cauchy_, geometric_, log_normal_, random_() ---------------------------

/// A distribution an in-place sampler draws from, with its parameters.
#[derive(Clone, Copy, Debug)]
pub enum Distribution {
    Exponential { lambda: f64 },
    Cauchy { median: f64, sigma: f64 },
    Geometric { p: f64 },
    LogNormal { mean: f64, std: f64 },
}

impl Distribution {
    /// torch's check of the parameters (before anything else, an empty tensor included).
    fn check(self) -> Result<()> {
        let bad = match self {
            Distribution::Exponential { lambda } if lambda.is_nan() || lambda <= 0.0 => {
                format!(
                    "exponential_ expects lambda > 0.0, but found lambda={}",
                    fmt_num(lambda)
                )
            }
            Distribution::Cauchy { sigma, .. } if sigma.is_nan() || sigma <= 0.0 => {
                format!(
                    "cauchy_ expects sigma > 0.0, but found sigma={}",
                    fmt_num(sigma)
                )
            }
            Distribution::Geometric { p } if p.is_nan() || p <= 0.0 || p >= 1.0 => {
                format!(
                    "geometric_ expects p to be in (0, 1), but got p={}",
                    fmt_num(p)
                )
            }
            Distribution::LogNormal { std, .. } if std.is_nan() || std <= 0.0 => {
                format!(
                    "log_normal_ expects std > 0.0, but found std={}",
                    fmt_num(std)
                )
            }
            _ => return Ok(()),
        };
        Err(Error::runtime(bad))
    }

    /// torch's check of the tensor's dtype (its kernels' messages differ).
    fn check_dtype(self, d: DType) -> Result<()> {
        let continuous = |name: &str, spelled: &str| {
            Err(Error::runtime(format!(
                "{name} distribution is a continuous probability distribution. dtype must be a floating point but \
                 you specified {spelled}"
            )))
        };
        match (self, d) {
            (_, DType::F32 | DType::F64) => Ok(()),
            (Distribution::Exponential { .. }, _) => continuous("Exponential", dtype_name(d)),
            (Distribution::Cauchy { .. }, DType::I64) => continuous("Cauchy", "long int"),
            (Distribution::Cauchy { .. }, _) => continuous("Cauchy", "bool"),
            (Distribution::Geometric { .. }, DType::I64) => Ok(()),
            (Distribution::Geometric { .. }, _) => Err(not_float("geometric_cpu", d)),
            (Distribution::LogNormal { .. }, _) => Err(not_float("log_normal_cpu", d)),
        }
    }
}

/// `x.exponential_(lambd)`, `x.cauchy_(median, sigma)`, `x.geometric_(p)`,
/// `x.log_normal_(mean, std)`: one draw per element in TensorIterator order, as ATen's CPU
/// kernels (a uniform double transformed, or a double normal exponentiated).
pub fn sample_(x: &Tensor, d: Distribution, generator: Option<&Generator>) -> Result<Tensor> {
    d.check()?;
    if x.numel() == 0 {
        return Ok(x.clone());
    }
    let dtype = x.dtype();
    d.check_dtype(dtype)?;
    fill_in_place(x, generator, |g, n, _| {
        Ok(match d {
            Distribution::Exponential { lambda } => rk::exponential(g, n, dtype, lambda),
            Distribution::Cauchy { median, sigma } => rk::cauchy(g, n, dtype, median, sigma),
            Distribution::Geometric { p } => rk::geometric(g, n, dtype, p),
            Distribution::LogNormal { mean, std } => rk::log_normal(g, n, dtype, mean, std),
        })
    })
}

/// `x.random_()` without bounds: integers from 0 to the largest the dtype holds exactly
/// (2^24 for float32, 2^53 for float64, 2^63 - 1 for int64; 0 or 1 for bool).
pub fn random_full_(x: &Tensor, generator: Option<&Generator>) -> Result<Tensor> {
    let dtype = x.dtype();
    fill_in_place(x, generator, |g, n, _| Ok(rk::random_full(g, n, dtype)))
}

// ---- bernoulli -------------------------------------------------------------------------

/// `x.bernoulli_(p)` for a number p: one uniform double per element, `u < p`.
pub fn bernoulli_scalar_(x: &Tensor, p: f64, generator: Option<&Generator>) -> Result<Tensor> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::runtime(format!(
            "bernoulli_ expects p to be in [0, 1], but got p={}",
            fmt_num(p)
        )));
    }
    let dtype = x.dtype();
    fill_in_place(x, generator, |g, n, _| {
        Ok(rk::bernoulli_scalar(g, n, p, dtype))
    })
}

/// A tensor's values as f64 in row-major order.
fn values_f64(t: &Tensor) -> Result<Vec<f64>> {
    let c = contiguous(&t.detach())?;
    let s = c.snapshot();
    Ok(rk::values_f64(&s.storage.read(), &s.layout))
}

/// `x.bernoulli_(p)` for a tensor p (broadcast to x): `u < p` with a float uniform for
/// float32 p and a double uniform for float64 p, as ATen does.
pub fn bernoulli_tensor_(x: &Tensor, p: &Tensor, generator: Option<&Generator>) -> Result<Tensor> {
    let pd = p.dtype();
    if !pd.is_float() {
        return Err(not_float("bernoulli_tensor_cpu_p_", pd));
    }
    let shape = x.shape();
    let pe = expand(&p.detach(), &shape)?;
    let pv = values_f64(&pe)?;
    if !pv.iter().all(|&v| (0.0..=1.0).contains(&v)) {
        return Err(Error::runtime(
            "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be improved?  \
             If so, please report an enhancement request to PyTorch.)",
        ));
    }
    let layout = x.layout();
    let order =
        (!layout.is_contiguous()).then(|| random::iteration_order(&layout.shape, &layout.strides));
    let dtype = x.dtype();
    fill_in_place(x, generator, |g, n, _| {
        Ok(rk::bernoulli_tensor(g, n, &pv, pd, order.as_deref(), dtype))
    })
}

/// `torch.bernoulli(p)`: a new tensor shaped and typed like `p`.
pub fn bernoulli(p: &Tensor, generator: Option<&Generator>) -> Result<Tensor> {
    if !p.dtype().is_float() {
        return Err(not_float("bernoulli_tensor_cpu_p_", p.dtype()));
    }
    let out = super::creation::zeros_like(p)?;
    bernoulli_tensor_(&out, p, generator)
}

// ---- multinomial -----------------------------------------------------------------------

/// `torch.multinomial(input, num_samples, replacement=False, generator=)` (ATen's
/// `multinomial_out`: without replacement, or for one sample, `argmax`/`topk` of p / q
/// with q ~ Exp(1); with replacement, a binary search of the normalised cumulative sums).
pub fn multinomial(
    p: &Tensor,
    n_sample: i64,
    replacement: bool,
    generator: Option<&Generator>,
) -> Result<Tensor> {
    let shape = p.shape();
    if shape.is_empty() || shape.len() > 2 {
        return Err(Error::runtime("prob_dist must be 1 or 2 dim"));
    }
    let dtype = p.dtype();
    if !dtype.is_float() {
        return Err(Error::runtime(format!(
            "multinomial only supports floating-point dtypes for input, got: {}",
            dtype_name(dtype)
        )));
    }
    if n_sample <= 0 {
        return Err(Error::runtime("cannot sample n_sample <= 0 samples"));
    }
    let n_cat = shape[shape.len() - 1];
    let k = n_sample as usize;
    if !replacement && k > n_cat {
        return Err(Error::runtime(
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement",
        ));
    }
    if n_cat > 1 << 24 {
        return Err(Error::runtime("number of categories cannot exceed 2^24"));
    }
    let n_dist = if shape.len() == 2 { shape[0] } else { 1 };
    let out_shape: Vec<usize> = if shape.len() == 2 {
        vec![n_dist, k]
    } else {
        vec![k]
    };
    super::creation::guard(&out_shape, DType::I64)?;
    if n_dist * k == 0 {
        return super::creation::zeros_on(&out_shape, DType::I64, p.device());
    }
    let pv = values_f64(p)?;
    let mut out = vec![0i64; n_dist * k];
    if !replacement || k == 1 {
        if !pv.iter().all(|v| (0.0..f64::INFINITY).contains(v)) {
            return Err(Error::runtime(
                "probability tensor contains either `inf`, `nan` or element < 0",
            ));
        }
        let row_sum_zero = pv.chunks(n_cat.max(1)).any(|r| rk::sum_in(dtype, r) == 0.0);
        if n_cat == 0 || row_sum_zero {
            return Err(Error::runtime(
                "invalid multinomial distribution (sum of probabilities <= 0)",
            ));
        }
        // q = empty_like(p).exponential_(1): one uniform double per element, in p's order.
        let order = {
            let l = p.layout();
            (!l.is_contiguous()).then(|| random::iteration_order(&l.shape, &l.strides))
        };
        let keys = random::or_default(generator)
            .with(|g| rk::exponential_keys(g, &pv, dtype, order.as_deref()));
        rk::top_k_rows(&keys, n_cat, k, &mut out);
        return super::new_tensor_on(Buffer::I64(out.into()), &out_shape, p.device());
    }
    random::or_default(generator)
        .with(|g| rk::multinomial_with_replacement(g, &pv, dtype, n_cat, k, &mut out))
        .map_err(|bad| {
            Error::runtime(match bad {
                rk::BadDistribution::Negative => {
                    "invalid multinomial distribution (encountering probability entry < 0)"
                }
                rk::BadDistribution::NotFinite => {
                    "invalid multinomial distribution (encountering probability entry = infinity or NaN)"
                }
                rk::BadDistribution::SumNotPositive => {
                    "invalid multinomial distribution (sum of probabilities <= 0)"
                }
            })
        })?;
    super::new_tensor_on(Buffer::I64(out.into()), &out_shape, p.device())
}
