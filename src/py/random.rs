//! `rgrad.Generator` and the native random functions: argument conversion only; the
//! streams live in `crate::random` and `crate::ops::random`.

use super::convert;
use super::pytensor::{PyTensor, dtype_arg, wrap};
use crate::dtype::DType;
use crate::ops::random as r;
use crate::random::{self, Generator};
use crate::storage::Buffer;
use crate::tensor::Tensor;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyTuple};

/// Creates and returns a generator object that manages the state of the algorithm which
/// produces pseudo random numbers (torch's CPU mt19937, bit for bit).
///
/// Args:
///     device: Accepted for torch compatibility; only 'cpu' exists in rgrad.
#[pyclass(name = "Generator", module = "rgrad", frozen)]
pub struct PyGenerator {
    pub g: Generator,
}

/// `int(seed)` as an unsigned 64-bit number (negative seeds wrap, as torch's do).
fn seed_arg(seed: &Bound<'_, PyAny>) -> PyResult<u64> {
    let i = seed
        .py()
        .import("builtins")?
        .getattr("int")?
        .call1((seed,))?;
    if let Ok(v) = i.extract::<i64>() {
        return Ok(v as u64);
    }
    i.extract::<u64>()
        .map_err(|_| PyValueError::new_err("Overflow when unpacking long long"))
}

/// The bytes of a state tensor (values 0..=255; rgrad has no uint8 dtype, so the state is
/// an int64 tensor of byte values) or of a bytes-like object.
fn state_bytes(state: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = state.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(b) = state.cast::<PyByteArray>() {
        return Ok(b.to_vec());
    }
    let Ok(t) = state.cast::<PyTensor>() else {
        return Err(PyTypeError::new_err(format!(
            "expected a torch.ByteTensor, but got {}",
            state.get_type().name()?
        )));
    };
    let t = &t.get().t;
    if t.dtype() != DType::I64 {
        return Err(PyTypeError::new_err("RNG state must be a torch.ByteTensor"));
    }
    let c = crate::ops::contiguous(&t.detach())?;
    let s = c.snapshot();
    let buf = s.storage.read();
    let Buffer::I64(v) = &*buf else {
        return Err(PyTypeError::new_err("RNG state must be a torch.ByteTensor"));
    };
    let o = s.layout.offset;
    v[o..o + s.layout.numel()]
        .iter()
        .map(|&x| {
            u8::try_from(x)
                .map_err(|_| PyValueError::new_err("RNG state values must be bytes (0..=255)"))
        })
        .collect()
}

#[pymethods]
impl PyGenerator {
    #[new]
    #[pyo3(signature = (device=None))]
    fn new(device: Option<&Bound<'_, PyAny>>) -> Self {
        let _ = device;
        PyGenerator {
            g: Generator::default(),
        }
    }
    /// Sets the seed for generating random numbers. Returns the generator.
    fn manual_seed<'py>(
        slf: &Bound<'py, Self>,
        seed: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        slf.get().g.manual_seed(seed_arg(seed)?);
        Ok(slf.clone())
    }
    /// Gets a non-deterministic random number from the OS and seeds the generator with it.
    fn seed(&self) -> u64 {
        self.g.seed()
    }
    /// Returns the initial seed for generating random numbers.
    fn initial_seed(&self) -> u64 {
        self.g.initial_seed()
    }
    /// Returns the generator state: torch's 5056 state bytes, as an int64 tensor.
    fn get_state(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        let b = self.g.get_state();
        let n = b.len();
        wrap(
            py,
            Tensor::from_buffer(Buffer::I64(b.into_iter().map(i64::from).collect()), &[n]),
        )
    }
    /// The state as the 5056 bytes themselves (for `random._rng_state_bytes`: checkpoint
    /// and `fork_rng` keep one per call, and an int64 tensor of them, then a list, took
    /// 55 us to make where this takes well under one).
    fn _get_state_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyBytes> {
        pyo3::types::PyBytes::new(py, &self.g.get_state())
    }
    /// Sets the generator state from what `get_state` (or torch's) returned.
    fn set_state<'py>(
        slf: &Bound<'py, Self>,
        new_state: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let b = state_bytes(new_state)?;
        slf.get().g.set_state(&b)?;
        Ok(slf.clone())
    }
    #[getter]
    fn device<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("rgrad")?.getattr("device")?.call1(("cpu",))
    }
}

type Gen<'a> = Option<PyRef<'a, PyGenerator>>;

fn g<'a>(gen_: &'a Gen<'_>) -> Option<&'a Generator> {
    gen_.as_ref().map(|p| &p.g)
}

fn finish(py: Python<'_>, t: Tensor, requires_grad: bool) -> PyResult<Py<PyTensor>> {
    super::finish(py, t, requires_grad)
}

/// Element count from which a draw runs with the GIL released (as big ops do elsewhere).
const RELEASE_GIL_AT: usize = 1 << 15;

/// Runs `f` with the GIL released when it will touch `n` elements or more. `f` takes the
/// generator's lock, which no thread ever holds while it waits for the GIL.
fn run<R: Send>(py: Python<'_>, n: usize, f: impl FnOnce() -> R + Send) -> R {
    if n >= RELEASE_GIL_AT {
        super::gil::detach(py, f)
    } else {
        f()
    }
}

fn owned(gen_: &Gen<'_>) -> Option<Generator> {
    gen_.as_ref().map(|p| p.g.clone())
}

fn float_dtype(dtype: Option<&Bound<'_, PyAny>>) -> PyResult<DType> {
    Ok(dtype_arg(dtype)?.unwrap_or_else(DType::default_float))
}

/// Returns a tensor of random numbers from the uniform distribution on [0, 1).
///
/// Args:
///     *size: The shape, as ints or as one list, tuple or Size.
///     generator: The generator to draw from (the default generator when None).
///     dtype: The desired dtype; float32 when None.
///     device: Accepted for torch compatibility and ignored.
///     requires_grad: Whether autograd records operations on the result.
#[pyfunction]
#[pyo3(signature = (*size, generator=None, dtype=None, device=None, requires_grad=false))]
pub fn rand(
    py: Python<'_>,
    size: &Bound<'_, PyTuple>,
    generator: Gen<'_>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    let s = crate::shape::sizes_to_shape(&convert::sizes(size, "rand")?)?;
    let (d, gen_) = (float_dtype(dtype)?, owned(&generator));
    let t = run(py, crate::shape::numel(&s), || {
        r::rand(&s, d, gen_.as_ref())
    })?;
    let t = super::cuda::place(t, device)?;
    finish(py, t, requires_grad)
}

/// Returns a tensor of random numbers from the standard normal distribution.
///
/// Args:
///     *size: The shape, as ints or as one list, tuple or Size.
///     generator: The generator to draw from (the default generator when None).
///     dtype: The desired dtype; float32 when None.
///     device: Accepted for torch compatibility and ignored.
///     requires_grad: Whether autograd records operations on the result.
#[pyfunction]
#[pyo3(signature = (*size, generator=None, dtype=None, device=None, requires_grad=false))]
pub fn randn(
    py: Python<'_>,
    size: &Bound<'_, PyTuple>,
    generator: Gen<'_>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    let s = crate::shape::sizes_to_shape(&convert::sizes(size, "randn")?)?;
    let (d, gen_) = (float_dtype(dtype)?, owned(&generator));
    let t = run(py, crate::shape::numel(&s), || {
        r::randn(&s, d, 0.0, 1.0, gen_.as_ref())
    })?;
    let t = super::cuda::place(t, device)?;
    finish(py, t, requires_grad)
}

/// `torch.normal(mean, std, size)` for numbers: `empty(size).normal_(mean, std)`.
#[pyfunction]
#[pyo3(signature = (mean, std, size, *, generator=None, dtype=None, device=None, requires_grad=false))]
#[allow(clippy::too_many_arguments)] // (torch's keyword arguments)
pub fn _normal_sized(
    py: Python<'_>,
    mean: f64,
    std: f64,
    size: Vec<i64>,
    generator: Gen<'_>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    let s = crate::shape::sizes_to_shape(&size)?;
    let (d, gen_) = (float_dtype(dtype)?, owned(&generator));
    let t = run(py, crate::shape::numel(&s), || {
        r::randn(&s, d, mean, std, gen_.as_ref())
    })?;
    let t = super::cuda::place(t, device)?;
    finish(py, t, requires_grad)
}

/// Uniform integers in [low, high) of shape `size`: `rgrad.randint` normalises its two call
/// forms to this one.
#[pyfunction]
#[pyo3(signature = (low, high, size, *, generator=None, dtype=None, device=None, requires_grad=false))]
#[allow(clippy::too_many_arguments)] // (torch's keyword arguments)
pub fn _randint(
    py: Python<'_>,
    low: i64,
    high: i64,
    size: Vec<i64>,
    generator: Gen<'_>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    let s = crate::shape::sizes_to_shape(&size)?;
    let (d, gen_) = (dtype_arg(dtype)?.unwrap_or(DType::I64), owned(&generator));
    let t = run(py, crate::shape::numel(&s), || {
        r::randint(low, high, &s, d, gen_.as_ref())
    })?;
    let t = super::cuda::place(t, device)?;
    finish(py, t, requires_grad)
}

/// Returns a random permutation of integers from 0 to n - 1.
///
/// Args:
///     n: The upper bound (exclusive).
///     generator: The generator to draw from (the default generator when None).
///     dtype: The desired dtype; int64 when None.
///     device: Accepted for torch compatibility and ignored.
///     requires_grad: Whether autograd records operations on the result.
#[pyfunction]
#[pyo3(signature = (n, *, generator=None, dtype=None, device=None, requires_grad=false))]
pub fn randperm(
    py: Python<'_>,
    n: i64,
    generator: Gen<'_>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    let (d, gen_) = (dtype_arg(dtype)?.unwrap_or(DType::I64), owned(&generator));
    let t = run(py, usize::try_from(n).unwrap_or(0), || {
        r::randperm(n, d, gen_.as_ref())
    })?;
    let t = super::cuda::place(t, device)?;
    finish(py, t, requires_grad)
}

/// `x.uniform_(from, to, generator=)` (the Tensor method is installed from Python).
#[pyfunction]
#[pyo3(signature = (x, low, high, generator=None))]
pub fn _uniform_(
    py: Python<'_>,
    x: &Bound<'_, PyTensor>,
    low: f64,
    high: f64,
    generator: Gen<'_>,
) -> PyResult<()> {
    let (t, gen_) = (x.get().t.clone(), owned(&generator));
    run(py, t.numel(), || r::uniform_(&t, low, high, gen_.as_ref()))?;
    Ok(())
}

/// `x.normal_(mean, std, generator=)`.
#[pyfunction]
#[pyo3(signature = (x, mean, std, generator=None))]
pub fn _normal_(
    py: Python<'_>,
    x: &Bound<'_, PyTensor>,
    mean: f64,
    std: f64,
    generator: Gen<'_>,
) -> PyResult<()> {
    let (t, gen_) = (x.get().t.clone(), owned(&generator));
    run(py, t.numel(), || r::normal_(&t, mean, std, gen_.as_ref()))?;
    Ok(())
}

/// Checks a tensor of standard deviations for `torch.normal`.
#[pyfunction]
pub fn _check_normal_std(std: &Bound<'_, PyTensor>) -> PyResult<()> {
    Ok(r::check_std_tensor(&std.get().t)?)
}

/// `x.random_(from, to, generator=)`.
#[pyfunction]
#[pyo3(signature = (x, low, high, generator=None))]
pub fn _random_(
    py: Python<'_>,
    x: &Bound<'_, PyTensor>,
    low: i64,
    high: i64,
    generator: Gen<'_>,
) -> PyResult<()> {
    let (t, gen_) = (x.get().t.clone(), owned(&generator));
    run(py, t.numel(), || r::random_(&t, low, high, gen_.as_ref()))?;
    Ok(())
}

/// `x.random_()` without bounds.
#[pyfunction]
#[pyo3(signature = (x, generator=None))]
pub fn _random_full_(py: Python<'_>, x: &Bound<'_, PyTensor>, generator: Gen<'_>) -> PyResult<()> {
    let (t, gen_) = (x.get().t.clone(), owned(&generator));
    run(py, t.numel(), || r::random_full_(&t, gen_.as_ref()))?;
    Ok(())
}

/// `x.exponential_(lambd)`, `x.cauchy_(median, sigma)`, `x.geometric_(p)`,
/// `x.log_normal_(mean, std)`: `name` is the distribution, `a` and `b` its parameters in
/// that order (`b` unused by the one-parameter ones).
#[pyfunction]
#[pyo3(signature = (x, name, a, b, generator=None))]
pub fn _sample_(
    py: Python<'_>,
    x: &Bound<'_, PyTensor>,
    name: &str,
    a: f64,
    b: f64,
    generator: Gen<'_>,
) -> PyResult<()> {
    use crate::ops::random::Distribution as D;
    let d = match name {
        "exponential" => D::Exponential { lambda: a },
        "cauchy" => D::Cauchy {
            median: a,
            sigma: b,
        },
        "geometric" => D::Geometric { p: a },
        "log_normal" => D::LogNormal { mean: a, std: b },
        _ => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "unknown distribution {name}"
            )));
        }
    };
    let (t, gen_) = (x.get().t.clone(), owned(&generator));
    run(py, t.numel(), || r::sample_(&t, d, gen_.as_ref()))?;
    Ok(())
}

/// `x.bernoulli_(p, generator=)` for a number p.
#[pyfunction]
#[pyo3(signature = (x, p, generator=None))]
pub fn _bernoulli_scalar_(
    py: Python<'_>,
    x: &Bound<'_, PyTensor>,
    p: f64,
    generator: Gen<'_>,
) -> PyResult<()> {
    let (t, gen_) = (x.get().t.clone(), owned(&generator));
    run(py, t.numel(), || r::bernoulli_scalar_(&t, p, gen_.as_ref()))?;
    Ok(())
}

/// `x.bernoulli_(p, generator=)` for a tensor p.
#[pyfunction]
#[pyo3(signature = (x, p, generator=None))]
pub fn _bernoulli_tensor_(
    py: Python<'_>,
    x: &Bound<'_, PyTensor>,
    p: &Bound<'_, PyTensor>,
    generator: Gen<'_>,
) -> PyResult<()> {
    let (t, p, gen_) = (x.get().t.clone(), p.get().t.clone(), owned(&generator));
    run(py, t.numel(), || {
        r::bernoulli_tensor_(&t, &p, gen_.as_ref())
    })?;
    Ok(())
}

/// `torch.bernoulli(p, generator=)`: 0/1 draws with probabilities `p`, shaped and typed like it.
#[pyfunction]
#[pyo3(signature = (input, generator=None))]
pub fn _bernoulli(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    generator: Gen<'_>,
) -> PyResult<Py<PyTensor>> {
    wrap(py, r::bernoulli(&input.get().t, g(&generator))?)
}

/// `torch.multinomial(input, num_samples, replacement=False, generator=)`.
#[pyfunction]
#[pyo3(signature = (input, num_samples, replacement=false, *, generator=None))]
pub fn multinomial(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    num_samples: i64,
    replacement: bool,
    generator: Gen<'_>,
) -> PyResult<Py<PyTensor>> {
    wrap(
        py,
        r::multinomial(&input.get().t, num_samples, replacement, g(&generator))?,
    )
}

/// Registers the generator class, `default_generator` and the random functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGenerator>()?;
    m.add(
        "default_generator",
        PyGenerator {
            g: random::default_generator().clone(),
        },
    )?;
    m.add_function(wrap_pyfunction!(rand, m)?)?;
    m.add_function(wrap_pyfunction!(randn, m)?)?;
    m.add_function(wrap_pyfunction!(_normal_sized, m)?)?;
    m.add_function(wrap_pyfunction!(_randint, m)?)?;
    m.add_function(wrap_pyfunction!(randperm, m)?)?;
    m.add_function(wrap_pyfunction!(_uniform_, m)?)?;
    m.add_function(wrap_pyfunction!(_normal_, m)?)?;
    m.add_function(wrap_pyfunction!(_check_normal_std, m)?)?;
    m.add_function(wrap_pyfunction!(_random_, m)?)?;
    m.add_function(wrap_pyfunction!(_random_full_, m)?)?;
    m.add_function(wrap_pyfunction!(_sample_, m)?)?;
    m.add_function(wrap_pyfunction!(_bernoulli_scalar_, m)?)?;
    m.add_function(wrap_pyfunction!(_bernoulli_tensor_, m)?)?;
    m.add_function(wrap_pyfunction!(_bernoulli, m)?)?;
    m.add_function(wrap_pyfunction!(multinomial, m)?)?;
    Ok(())
}
