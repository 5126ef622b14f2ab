//! The CUDA implementation of [`Backend`]: each kernel launches the generated source for
//! its op and dtype on the calling thread's current stream, and allocates its output
//! from the caching allocator. A kernel the GPU does not have yet (see `source`: those
//! answer `None`) runs on the host: operands copied down, the CPU kernel, the result
//! copied up. Those round trips are correct but synchronous; `host_fallbacks()` counts
//! them so tests and benchmarks can see which ops still take them.

// (each kernel tries the GPU source, then the launch, then falls back: nested `if let`s
// read as those steps; gemm takes the device, stream and both operands' layouts)
#![allow(clippy::collapsible_if, clippy::too_many_arguments)]

use super::driver::{self, Dev, OrCuda, Stream};
use super::launch::{self, Args, RgLay, RgShape, geometry};
use super::{CudaBuf, source};
use crate::backend::{Backend, BinaryFn, BinaryOp, InPlaceRhs, ReduceOp, UnaryOp, cpu};
use crate::device::Device;
use crate::dtype::{DType, Scalar};
use crate::layout::Layout;
use crate::storage::Buffer;
use crate::{Error, Result};
use cudarc::driver::result;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The CUDA backend of one device.
pub struct Cuda(pub u32);

const MAX_DEVICES: usize = 64;
static BACKENDS: [Cuda; MAX_DEVICES] = {
    let mut a = [const { Cuda(0) }; MAX_DEVICES];
    let mut i = 0;
    while i < MAX_DEVICES {
        a[i] = Cuda(i as u32);
        i += 1;
    }
    a
};

/// The backend of device `ordinal`.
pub fn of(ordinal: u32) -> &'static Cuda {
    &BACKENDS[(ordinal as usize).min(MAX_DEVICES - 1)]
}

static HOST_FALLBACKS: AtomicU64 = AtomicU64::new(0);

/// How many kernels have run on the host for a CUDA tensor in this process.
pub fn host_fallbacks() -> u64 {
    HOST_FALLBACKS.load(Ordering::Relaxed)
}

fn cuda_of(b: &Buffer) -> Result<&CudaBuf> {
    match b {
        Buffer::Cuda(c) => Ok(c),
        _ => Err(Error::Internal("a host buffer in a CUDA kernel".into())),
    }
}

/// A fresh device buffer of `n` elements of `dtype` on `dev`, for work on `stream`.
pub fn alloc(dev: &Dev, stream: &Stream, dtype: DType, n: usize) -> Result<CudaBuf> {
    let bytes = n
        .checked_mul(dtype.size_in_bytes())
        .ok_or_else(|| Error::runtime("Storage size calculation overflowed"))?;
    let block = dev.alloc.allocate(bytes, stream.raw)?;
    Ok(CudaBuf {
        dtype,
        len: n,
        block,
    })
}

/// A copy of a device buffer in host memory (waits for the stream).
pub fn to_host(c: &CudaBuf) -> Result<Buffer> {
    to_host_range(c, 0, c.len)
}

/// Elements `offset..offset + n` of a device buffer, in host memory (waits for the
/// calling thread's current stream, where the work that wrote them was queued).
pub fn to_host_range(c: &CudaBuf, offset: usize, n: usize) -> Result<Buffer> {
    if offset.checked_add(n).is_none_or(|end| end > c.len) {
        return Err(Error::Internal("a device read past its buffer".into()));
    }
    let dev = driver::device(c.device())?;
    let stream = driver::current_stream(c.device())?;
    dev.bind()?;
    fn down<T: Copy + Default>(c: &CudaBuf, offset: usize, n: usize, s: &Stream) -> Result<Vec<T>> {
        let mut v = vec![T::default(); n];
        if n > 0 {
            let src = c.ptr() + (offset * std::mem::size_of::<T>()) as u64;
            // SAFETY: the block holds `offset + n` elements of T (checked above); the
            // stream is waited for before the host reads `v`.
            unsafe {
                result::memcpy_dtoh_async(&mut v[..], src, s.raw).or_cuda()?;
                result::stream::synchronize(s.raw).or_cuda()?;
            }
        }
        Ok(v)
    }
    Ok(match c.dtype {
        DType::F32 => Buffer::F32((down(c, offset, n, &stream)?).into()),
        DType::F64 => Buffer::F64((down(c, offset, n, &stream)?).into()),
        DType::I64 => Buffer::I64((down(c, offset, n, &stream)?).into()),
        DType::Bool => Buffer::Bool((down(c, offset, n, &stream)?).into()),
    })
}

/// A host buffer copied to device `ordinal` (a device buffer: copied there).
pub fn upload(b: &Buffer, ordinal: u32) -> Result<Buffer> {
    let dev = driver::device(ordinal)?;
    let stream = driver::current_stream(ordinal)?;
    dev.bind()?;
    let out = alloc(&dev, &stream, b.dtype(), b.len())?;
    fn up<T>(v: &[T], out: &CudaBuf, s: &Stream) -> Result<()> {
        if !v.is_empty() {
            // SAFETY: `out` holds `v.len()` elements; a pageable source is copied before
            // the call returns.
            unsafe { result::memcpy_htod_async(out.ptr(), v, s.raw) }.or_cuda()?;
        }
        Ok(())
    }
    match b {
        Buffer::F32(v) => up(v, &out, &stream)?,
        Buffer::F64(v) => up(v, &out, &stream)?,
        Buffer::I64(v) => up(v, &out, &stream)?,
        Buffer::Bool(v) => up(v, &out, &stream)?,
        Buffer::Cuda(c) => {
            if c.len > 0 {
                // (device to device, also between devices: unified addressing)
                unsafe { result::memcpy_dtod_async(out.ptr(), c.ptr(), c.nbytes(), stream.raw) }
                    .or_cuda()?;
            }
        }
    }
    Ok(Buffer::Cuda(Box::new(out)))
}

/// Any buffer in host memory (a device one copied down).
pub fn host(b: &Buffer) -> Result<Buffer> {
    match b {
        Buffer::Cuda(c) => to_host(c),
        _ => Ok(b.clone()),
    }
}

impl Cuda {
    fn ctx(&self) -> Result<(Arc<Dev>, Arc<Stream>)> {
        let dev = driver::device(self.0)?;
        dev.bind()?;
        Ok((dev, driver::current_stream(self.0)?))
    }
    fn fallback(&self) {
        HOST_FALLBACKS.fetch_add(1, Ordering::Relaxed);
    }
    fn up(&self, b: Buffer) -> Result<Buffer> {
        upload(&b, self.0)
    }
    /// An elementwise kernel over `shape`: output `out_dt`, operands (buffer, layout), then
    /// `extra` arguments pushed by the caller after the operand pointers.
    fn elementwise(
        &self,
        k: &source::KernelSrc,
        shape: &[usize],
        ops: &[(&Buffer, &Layout)],
        out_dt: DType,
        extra: impl FnOnce(&mut Args),
    ) -> Result<Option<Buffer>> {
        // torch's device check (the op layer's rule: a one-element host buffer, a CPU
        // scalar, may join), then such a scalar's element copied up
        let bufs: Vec<&Buffer> = ops.iter().map(|(b, _)| *b).collect();
        crate::backend::check_same_device(&bufs)?;
        let up = ops
            .iter()
            .map(|(b, _)| match b {
                Buffer::Cuda(_) => Ok(None),
                _ => upload(b, self.0).map(Some),
            })
            .collect::<Result<Vec<_>>>()?;
        let ops: Vec<(&Buffer, &Layout)> = ops
            .iter()
            .zip(&up)
            .map(|((b, l), u)| (u.as_ref().unwrap_or(b), *l))
            .collect();
        let lays: Vec<&Layout> = ops.iter().map(|(_, l)| *l).collect();
        let Some((s, ls)) = geometry(shape, &lays) else {
            return Ok(None);
        };
        let (dev, stream) = self.ctx()?;
        let n = crate::shape::numel(shape);
        let out = alloc(&dev, &stream, out_dt, n)?;
        let mut a = Args::new();
        a.push(n as i64).push(s);
        for l in &ls {
            a.push(*l);
        }
        for (b, _) in ops {
            a.push(cuda_of(b)?.ptr());
        }
        extra(&mut a);
        a.push(out.ptr());
        launch::launch_n(&dev, &stream, k, n, &mut a)?;
        Ok(Some(Buffer::Cuda(Box::new(out))))
    }
    /// A contiguous copy of an operand (for the kernels that need one).
    fn contiguous(&self, b: &Buffer, l: &Layout) -> Result<(Buffer, Layout)> {
        let shape: Vec<usize> = l.shape.to_vec();
        let c = Layout::contiguous(&shape);
        if l.is_contiguous() && l.offset == 0 {
            return Ok((upload(b, self.0)?, c)); // (a device-to-device copy)
        }
        let dt = b.dtype();
        let k = memo1((7, dt as u32, dt as u32, 0), || source::cast(dt, dt));
        match self.elementwise(&k, &shape, &[(b, l)], dt, |_| {})? {
            Some(out) => Ok((out, c)),
            None => {
                self.fallback();
                let h = host(b)?;
                Ok((self.up(cpu::elementwise::cast(&h, l, dt))?, c))
            }
        }
    }
}

/// A kernel's source, generated once per process and key (kind, op, dtype, variant):
/// the generators format kilobytes of text, too much for every op call.
type MemoKey = (u8, u32, u32, u32);
fn memo(
    key: MemoKey,
    make: impl FnOnce() -> Option<source::KernelSrc>,
) -> Option<Arc<source::KernelSrc>> {
    use parking_lot::RwLock;
    use std::collections::HashMap;
    static MEMO: RwLock<Option<HashMap<MemoKey, Option<Arc<source::KernelSrc>>>>> =
        RwLock::new(None);
    if let Some(hit) = MEMO.read().as_ref().and_then(|m| m.get(&key)) {
        return hit.clone();
    }
    let made = make().map(Arc::new);
    MEMO.write()
        .get_or_insert_with(HashMap::new)
        .insert(key, made.clone());
    made
}

/// [`memo`] of a generator that always has a kernel.
fn memo1(key: MemoKey, make: impl Fn() -> source::KernelSrc) -> Arc<source::KernelSrc> {
    // (never None: a key is only ever made by one generator, and this one has a kernel)
    memo(key, || Some(make())).unwrap_or_else(|| Arc::new(make()))
}

/// A scalar as the kernel's C type of `dt` (fill's value).
fn push_scalar(a: &mut Args, dt: DType, v: Scalar) {
    match dt {
        DType::F32 => a.push(v.as_f64() as f32),
        DType::F64 => a.push(v.as_f64()),
        DType::I64 => a.push(match v {
            Scalar::Int(i) => i,
            Scalar::Bool(b) => i64::from(b),
            v => v.as_f64() as i64,
        }),
        DType::Bool => a.push(u8::from(match v {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            v => v.as_f64() != 0.0,
        })),
    };
}

#[allow(clippy::too_many_arguments)]
impl Backend for Cuda {
    fn device(&self) -> Device {
        Device::Cuda(self.0)
    }

    fn unary(&self, op: UnaryOp, x: &Buffer, lx: &Layout) -> Result<Buffer> {
        if let Some(k) = memo((0, op as u32, x.dtype() as u32, 0), || {
            source::unary(op, x.dtype())
        }) {
            let out_dt = x.dtype(); // (the op layer promotes first, as for the CPU's)
            if let Some(b) = self.elementwise(&k, &lx.shape, &[(x, lx)], out_dt, |_| {})? {
                return Ok(b);
            }
        }
        self.fallback();
        self.up(cpu::unary::unary(op, &host(x)?, lx))
    }
    fn unary_backward(
        &self,
        op: UnaryOp,
        g: &Buffer,
        lg: &Layout,
        s: &Buffer,
        ls: &Layout,
    ) -> Result<Option<Buffer>> {
        if lg.shape != ls.shape {
            return Ok(None);
        }
        match memo((1, op as u32, g.dtype() as u32, 0), || {
            source::unary_backward(op, g.dtype())
        }) {
            Some(k) if g.dtype() == s.dtype() => {
                self.elementwise(&k, &lg.shape, &[(g, lg), (s, ls)], g.dtype(), |_| {})
            }
            _ => Ok(None),
        }
    }
    fn polygamma(&self, n: u32, x: &Buffer, lx: &Layout) -> Result<Buffer> {
        if let Some(k) = memo((13, x.dtype() as u32, 0, 0), || {
            source::polygamma(x.dtype())
        }) {
            let order = i32::try_from(n).unwrap_or(i32::MAX);
            let extra = |a: &mut Args| {
                a.push(order);
            };
            if let Some(b) = self.elementwise(&k, &lx.shape, &[(x, lx)], x.dtype(), extra)? {
                return Ok(b);
            }
        }
        self.fallback();
        self.up(cpu::unary::polygamma(n, &host(x)?, lx))
    }
    // (helper-45) the Bessel functions and igamma have no device kernel yet: the host's,
    // through a round trip
    fn activation(
        &self,
        op: crate::backend::ActFn,
        x: &Buffer,
        lx: &Layout,
    ) -> Result<Option<Buffer>> {
        // (no device kernel yet: computed on the host)
        self.host_opt(|| Ok(cpu::activation::activation(op, &host(x)?, lx)))
    }
    fn activation_backward(
        &self,
        op: crate::backend::ActFn,
        result: bool,
        g: &Buffer,
        lg: &Layout,
        s: &Buffer,
        ls: &Layout,
    ) -> Result<Option<Buffer>> {
        crate::backend::check_same_device(&[g, s])?;
        self.host_opt(|| {
            Ok(cpu::activation::activation_backward(
                op,
                result,
                &host(g)?,
                lg,
                &host(s)?,
                ls,
            ))
        })
    }
    fn bessel(&self, op: crate::backend::Bessel, x: &Buffer, lx: &Layout) -> Result<Buffer> {
        self.fallback();
        self.up(cpu::unary::bessel(op, &host(x)?, lx))
    }
    fn igamma(
        &self,
        upper: bool,
        a: &Buffer,
        la: &Layout,
        x: &Buffer,
        lx: &Layout,
    ) -> Result<Buffer> {
        crate::backend::check_same_device(&[a, x])?;
        self.fallback();
        self.up(cpu::unary::igamma(upper, &host(a)?, la, &host(x)?, lx))
    }
    fn logical_not(&self, x: &Buffer, lx: &Layout) -> Result<Buffer> {
        // (bool only: the op layer converts other dtypes first, as for the CPU's kernel)
        if let Some(k) = memo((15, x.dtype() as u32, 0, 0), || {
            source::logical_not(x.dtype())
        }) {
            if let Some(b) = self.elementwise(&k, &lx.shape, &[(x, lx)], DType::Bool, |_| {})? {
                return Ok(b);
            }
        }
        self.fallback();
        self.up(cpu::unary::logical_not(&host(x)?, lx))
    }
    fn clamp(&self, x: &Buffer, lx: &Layout, lo: Option<f64>, hi: Option<f64>) -> Result<Buffer> {
        if let Some(k) = memo((2, x.dtype() as u32, 0, 0), || source::clamp(x.dtype())) {
            let extra = |a: &mut Args| {
                a.push(i32::from(lo.is_some()))
                    .push(lo.unwrap_or(0.0))
                    .push(i32::from(hi.is_some()))
                    .push(hi.unwrap_or(0.0));
            };
            if let Some(b) = self.elementwise(&k, &lx.shape, &[(x, lx)], x.dtype(), extra)? {
                return Ok(b);
            }
        }
        self.fallback();
        self.up(cpu::elementwise::clamp(&host(x)?, lx, lo, hi))
    }
    fn binary(
        &self,
        op: BinaryOp,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
    ) -> Result<Buffer> {
        crate::backend::check_same_device(&[a, b])?;
        if let Some(k) = memo((3, op as u32, a.dtype() as u32, 0), || {
            source::binary(op, a.dtype())
        }) {
            let out_dt = if op.is_comparison() || op.is_logical() {
                DType::Bool
            } else {
                a.dtype()
            };
            if let Some(r) = self.elementwise(&k, &la.shape, &[(a, la), (b, lb)], out_dt, |_| {})? {
                return Ok(r);
            }
        }
        self.fallback();
        self.up(cpu::elementwise::binary(op, &host(a)?, la, &host(b)?, lb))
    }
    fn binary_scalar(
        &self,
        op: BinaryOp,
        a: &Buffer,
        la: &Layout,
        s: f64,
        scalar_first: bool,
    ) -> Result<Option<Buffer>> {
        let Some(k) = memo(
            (4, op as u32, a.dtype() as u32, scalar_first as u32),
            || source::binary_scalar(op, a.dtype(), scalar_first),
        ) else {
            return Ok(None);
        };
        let out_dt = if op.is_comparison() || op.is_logical() {
            DType::Bool
        } else {
            a.dtype()
        };
        self.elementwise(&k, &la.shape, &[(a, la)], out_dt, |args| {
            args.push(s);
        })
    }
    fn clamp_between(
        &self,
        _x: &Buffer,
        _lx: &Layout,
        _lo: &Buffer,
        _llo: &Layout,
        _hi: &Buffer,
        _lhi: &Layout,
    ) -> Result<Option<Buffer>> {
        // (the two table kernels, maximum then minimum, run instead)
        Ok(None)
    }
    #[allow(clippy::too_many_arguments)]
    fn fused3(
        &self,
        op: crate::backend::Fused3,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
        c: &Buffer,
        lc: &Layout,
    ) -> Result<Option<Buffer>> {
        // (no device kernel yet: computed on the host)
        crate::backend::check_same_device(&[a, b, c])?;
        self.host_opt(|| {
            Ok(cpu::fused::fused3(
                op,
                &host(a)?,
                la,
                &host(b)?,
                lb,
                &host(c)?,
                lc,
            ))
        })
    }
    #[allow(clippy::too_many_arguments)]
    fn fused3_in_place(
        &self,
        _op: crate::backend::Fused3,
        _dst: &mut Buffer,
        _ld: &Layout,
        _b: &Buffer,
        _lb: &Layout,
        _c: &Buffer,
        _lc: &Layout,
    ) -> Result<bool> {
        // (the op computes out of place and commits)
        Ok(false)
    }
    fn lerp_scalar_in_place(
        &self,
        _dst: &mut Buffer,
        _ld: &Layout,
        _b: &Buffer,
        _lb: &Layout,
        _weight: Scalar,
    ) -> Result<bool> {
        Ok(false)
    }
    fn nan_to_num(
        &self,
        x: &Buffer,
        lx: &Layout,
        nan: f64,
        posinf: f64,
        neginf: f64,
    ) -> Result<Option<Buffer>> {
        // (no device kernel yet: computed on the host)
        self.host_opt(|| Ok(cpu::fused::nan_to_num(&host(x)?, lx, nan, posinf, neginf)))
    }
    fn lerp_scalar(
        &self,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
        weight: Scalar,
    ) -> Result<Option<Buffer>> {
        // (no device kernel yet: computed on the host)
        crate::backend::check_same_device(&[a, b])?;
        self.host_opt(|| {
            Ok(cpu::fused::lerp_scalar(
                &host(a)?,
                la,
                &host(b)?,
                lb,
                weight,
            ))
        })
    }
    fn binary_fn(
        &self,
        op: BinaryFn,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
    ) -> Result<Buffer> {
        crate::backend::check_same_device(&[a, b])?;
        if let Some(k) = memo((5, op as u32, a.dtype() as u32, 0), || {
            source::binary_fn(op, a.dtype())
        }) {
            if let Some(r) =
                self.elementwise(&k, &la.shape, &[(a, la), (b, lb)], a.dtype(), |_| {})?
            {
                return Ok(r);
            }
        }
        self.fallback();
        self.up(cpu::binary::binary_fn(op, &host(a)?, la, &host(b)?, lb))
    }
    fn reorder(
        &self,
        _x: &Buffer,
        _lx: &Layout,
        _flip: &[usize],
        _roll: &[(usize, usize)],
    ) -> Result<Option<Buffer>> {
        // (the op layer copies with index_select and copy_into, on the device)
        Ok(None)
    }
    fn triangle(
        &self,
        _x: &Buffer,
        _lx: &Layout,
        _diagonal: i64,
        _upper: bool,
    ) -> Result<Option<Buffer>> {
        // (the op layer selects with `where` over a mask, on the device)
        Ok(None)
    }
    fn triangle_in_place(
        &self,
        _dst: &mut Buffer,
        _ld: &Layout,
        _diagonal: i64,
        _upper: bool,
    ) -> Result<bool> {
        // (the op layer computes out of place and writes the result with `copy_into`)
        Ok(false)
    }
    // (no device factorizations yet: computed on the host, as torch's MAGMA paths
    // compute small matrices)
    fn lu_factor(&self, x: &Buffer, lx: &Layout, pivot: bool) -> Result<(Buffer, Buffer, Buffer)> {
        self.fallback();
        let (f, p, i) = cpu::linalg::lu_factor(&host(x)?, lx, pivot);
        Ok((self.up(f)?, self.up(p)?, self.up(i)?))
    }
    fn trace(&self, x: &Buffer, lx: &Layout) -> Result<Buffer> {
        // (the op layer sums a device matrix's diagonal on the device; this is for a
        // direct call)
        self.fallback();
        self.up(cpu::linalg::trace(&host(x)?, lx))
    }
    fn lu_det(
        &self,
        lu: &Buffer,
        llu: &Layout,
        piv: &Buffer,
        lp: &Layout,
    ) -> Result<(Buffer, Buffer, Buffer)> {
        self.fallback();
        let (d, s, l) = cpu::linalg::lu_det(&host(lu)?, llu, &host(piv)?, lp);
        Ok((self.up(d)?, self.up(s)?, self.up(l)?))
    }
    fn lu_solve(
        &self,
        lu: &Buffer,
        llu: &Layout,
        piv: &Buffer,
        lp: &Layout,
        b: &Buffer,
        lb: &Layout,
        transpose: bool,
    ) -> Result<Buffer> {
        self.fallback();
        let x = cpu::linalg::lu_solve(&host(lu)?, llu, &host(piv)?, lp, &host(b)?, lb, transpose);
        self.up(x)
    }
    fn solve_triangular(
        &self,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
        upper: bool,
        unit: bool,
        transpose: bool,
    ) -> Result<Buffer> {
        self.fallback();
        let x = cpu::linalg::solve_triangular(&host(a)?, la, &host(b)?, lb, upper, unit, transpose);
        self.up(x)
    }
    fn cholesky(&self, x: &Buffer, lx: &Layout) -> Result<(Buffer, Buffer)> {
        self.fallback();
        let (l, i) = cpu::linalg::cholesky(&host(x)?, lx);
        Ok((self.up(l)?, self.up(i)?))
    }
    fn matrix_exp(&self, x: &Buffer, lx: &Layout) -> Result<Buffer> {
        self.fallback();
        self.up(cpu::linalg::matrix_exp(&host(x)?, lx))
    }
    fn cholesky_inverse(&self, x: &Buffer, lx: &Layout, upper: bool) -> Result<(Buffer, Buffer)> {
        self.fallback();
        let (inv, info) = cpu::linalg::cholesky_inverse(&host(x)?, lx, upper);
        Ok((self.up(inv)?, self.up(info)?))
    }
    fn geqrf(&self, x: &Buffer, lx: &Layout) -> Result<(Buffer, Buffer)> {
        self.fallback();
        let (f, t) = cpu::linalg::geqrf(&host(x)?, lx);
        Ok((self.up(f)?, self.up(t)?))
    }
    fn householder_product(
        &self,
        a: &Buffer,
        la: &Layout,
        tau: &Buffer,
        lt: &Layout,
    ) -> Result<Buffer> {
        self.fallback();
        self.up(cpu::linalg::householder_product(
            &host(a)?,
            la,
            &host(tau)?,
            lt,
        ))
    }
    fn ormqr(
        &self,
        a: &Buffer,
        la: &Layout,
        tau: &Buffer,
        lt: &Layout,
        c: &Buffer,
        lc: &Layout,
        left: bool,
        transpose: bool,
    ) -> Result<Buffer> {
        self.fallback();
        let out = cpu::linalg::ormqr(
            &host(a)?,
            la,
            &host(tau)?,
            lt,
            &host(c)?,
            lc,
            left,
            transpose,
        );
        self.up(out)
    }
    fn ldl_factor(&self, x: &Buffer, lx: &Layout) -> Result<(Buffer, Buffer, Buffer)> {
        self.fallback();
        let (f, p, i) = cpu::linalg::ldl_factor(&host(x)?, lx);
        Ok((self.up(f)?, self.up(p)?, self.up(i)?))
    }
    fn ldl_solve(
        &self,
        ld: &Buffer,
        lld: &Layout,
        piv: &Buffer,
        lp: &Layout,
        b: &Buffer,
        lb: &Layout,
    ) -> Result<Option<Buffer>> {
        self.fallback();
        cpu::linalg::ldl_solve(&host(ld)?, lld, &host(piv)?, lp, &host(b)?, lb)
            .map(|x| self.up(x))
            .transpose()
    }
    fn masked_select(
        &self,
        _x: &Buffer,
        _lx: &Layout,
        _mask: &Buffer,
        _lm: &Layout,
    ) -> Result<Option<Buffer>> {
        // (the op layer indexes with the mask's coordinates)
        Ok(None)
    }
    fn index_put_in_place(
        &self,
        _x: &mut Buffer,
        _before: &[usize],
        _base: &[usize],
        _after: &[usize],
        _values: &Buffer,
        _lv: &Layout,
        _accumulate: bool,
    ) -> Result<bool> {
        // (the op layer computes out of place and writes the result with `copy_into`)
        Ok(false)
    }
    fn arith_in_place(
        &self,
        _op: BinaryOp,
        _dst: &mut Buffer,
        _ld: &Layout,
        _rhs: InPlaceRhs<'_>,
    ) -> Result<bool> {
        // (the op layer computes out of place and writes the result with `copy_into`)
        Ok(false)
    }
    fn where_(
        &self,
        cond: &Buffer,
        lc: &Layout,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
    ) -> Result<Buffer> {
        crate::backend::check_same_device(&[cond, a, b])?;
        let k = memo1((6, a.dtype() as u32, 0, 0), || source::where_(a.dtype()));
        if let Some(r) = self.elementwise(
            &k,
            &la.shape,
            &[(cond, lc), (a, la), (b, lb)],
            a.dtype(),
            |_| {},
        )? {
            return Ok(r);
        }
        self.fallback();
        self.up(cpu::elementwise::where_(
            &host(cond)?,
            lc,
            &host(a)?,
            la,
            &host(b)?,
            lb,
        ))
    }
    fn cast(&self, x: &Buffer, lx: &Layout, to: DType) -> Result<Buffer> {
        let k = memo1((7, x.dtype() as u32, to as u32, 0), || {
            source::cast(x.dtype(), to)
        });
        if let Some(r) = self.elementwise(&k, &lx.shape, &[(x, lx)], to, |_| {})? {
            return Ok(r);
        }
        self.fallback();
        self.up(cpu::elementwise::cast(&host(x)?, lx, to))
    }
    fn copy_into(&self, dst: &mut Buffer, ld: &Layout, src: &Buffer, ls: &Layout) -> Result<()> {
        let n = ld.numel();
        if n == 0 {
            return Ok(());
        }
        let (dev, stream) = self.ctx()?;
        // a source on the host (x.copy_(cpu_tensor)) or another device: brought here first
        let moved;
        let src = match src {
            Buffer::Cuda(c) if c.device() == self.0 => src,
            _ => {
                moved = upload(src, self.0)?;
                &moved
            }
        };
        let k = memo1((8, dst.dtype() as u32, src.dtype() as u32, 0), || {
            source::copy_into(dst.dtype(), src.dtype())
        });
        let Some((s, lays)) = geometry(&ld.shape, &[ld, ls]) else {
            return Err(Error::runtime(format!(
                "rgrad's CUDA kernels index at most {} dims (after merging)",
                launch::MAXD
            )));
        };
        let mut a = Args::new();
        a.push(n as i64)
            .push(s)
            .push(lays[0])
            .push(lays[1])
            .push(cuda_of(dst)?.ptr())
            .push(cuda_of(src)?.ptr());
        launch::launch_n(&dev, &stream, &k, n, &mut a)
    }
    fn cat(&self, parts: &[(&Buffer, &Layout)], dim: usize, out_shape: &[usize]) -> Result<Buffer> {
        let dt = parts.first().map_or(DType::F32, |(b, _)| b.dtype());
        let (dev, stream) = self.ctx()?;
        let mut out = Buffer::Cuda(Box::new(alloc(
            &dev,
            &stream,
            dt,
            crate::shape::numel(out_shape),
        )?));
        let full = Layout::contiguous(out_shape);
        let mut at = 0;
        for (b, l) in parts {
            let mut ld = full.clone();
            ld.shape[dim] = l.shape[dim];
            ld.offset = at * full.strides[dim];
            at += l.shape[dim];
            self.copy_into(&mut out, &ld, b, l)?;
        }
        Ok(out)
    }
    fn fill(&self, dst: &mut Buffer, ld: &Layout, v: Scalar) -> Result<()> {
        let n = ld.numel();
        if n == 0 {
            return Ok(());
        }
        let (dev, stream) = self.ctx()?;
        let dt = dst.dtype();
        let k = memo1((9, dt as u32, 0, 0), || source::fill(dt));
        let Some((s, lays)) = geometry(&ld.shape, &[ld]) else {
            return Err(Error::runtime("rgrad's CUDA kernels index at most 10 dims"));
        };
        let mut a = Args::new();
        a.push(n as i64)
            .push(s)
            .push(lays[0])
            .push(cuda_of(dst)?.ptr());
        push_scalar(&mut a, dt, v);
        launch::launch_n(&dev, &stream, &k, n, &mut a)
    }

    fn reduce(&self, op: ReduceOp, x: &Buffer, lx: &Layout, dims: &[usize]) -> Result<Buffer> {
        if let Some(k) = memo((10, op as u32, x.dtype() as u32, 0), || {
            source::reduce(op, x.dtype())
        }) {
            if let Some(r) = self.reduce_on_device(&k, op, x, lx, dims)? {
                return Ok(r);
            }
        }
        self.fallback();
        self.up(cpu::reduce::reduce(op, &host(x)?, lx, dims))
    }
    fn arg_reduce(
        &self,
        x: &Buffer,
        lx: &Layout,
        dims: &[usize],
        is_max: bool,
    ) -> Result<(Buffer, Vec<i64>)> {
        // the values and the first index of each on the GPU; the indices come to the host
        // (the op layer builds its index tensor there)
        let (vop, iop) = if is_max {
            (ReduceOp::Max, ReduceOp::ArgMax)
        } else {
            (ReduceOp::Min, ReduceOp::ArgMin)
        };
        let kv = memo((10, vop as u32, x.dtype() as u32, 0), || {
            source::reduce(vop, x.dtype())
        });
        let ki = memo((10, iop as u32, x.dtype() as u32, 0), || {
            source::reduce(iop, x.dtype())
        });
        if let (Some(kv), Some(ki)) = (kv, ki) {
            let v = self.reduce_on_device(&kv, vop, x, lx, dims)?;
            let i = self.reduce_on_device(&ki, iop, x, lx, dims)?;
            if let (Some(v), Some(Buffer::Cuda(i))) = (v, i) {
                if let Buffer::I64(idx) = to_host(&i)? {
                    return Ok((v, idx.into_vec()));
                }
            }
        }
        self.fallback();
        let (v, i) = cpu::reduce::arg_reduce(&host(x)?, lx, dims, is_max);
        Ok((self.up(v)?, i))
    }
    fn sum_squares(&self, _x: &Buffer, _lx: &Layout, _dims: &[usize]) -> Result<Option<Buffer>> {
        Ok(None) // (composed: x*x, then sum)
    }
    fn nll_losses(
        &self,
        _x: &Buffer,
        _lx: &Layout,
        _idx: &Buffer,
        _w: &Buffer,
    ) -> Result<Option<Buffer>> {
        Ok(None) // (composed: gather, mul, neg)
    }
    fn sq_diff_sum(
        &self,
        _a: &Buffer,
        _la: &Layout,
        _b: &Buffer,
        _lb: &Layout,
        _mean: bool,
    ) -> Result<Option<Buffer>> {
        Ok(None) // (composed: sub, mul, then sum or mean)
    }
    fn softmax(&self, x: &Buffer, lx: &Layout, dim: usize, log: bool) -> Result<Option<Buffer>> {
        let nd = lx.shape.len();
        if nd == 0 || dim != nd - 1 || lx.numel() == 0 || !x.dtype().is_float() {
            return self.host_opt(|| {
                cpu::reduce::softmax(&host(x)?, lx, dim, log)
                    .map(Ok)
                    .transpose()
            });
        }
        let Some(k) = memo((11, x.dtype() as u32, log as u32, 0), || {
            source::softmax(x.dtype(), log)
        }) else {
            return self.host_opt(|| {
                cpu::reduce::softmax(&host(x)?, lx, dim, log)
                    .map(Ok)
                    .transpose()
            });
        };
        let (xc, _) = self.contiguous(x, lx)?;
        let cols = lx.shape[nd - 1];
        self.rows_kernel(&k, lx.numel() / cols, cols, &[&xc], x.dtype())
            .map(Some)
    }
    fn softmax_backward(
        &self,
        g: &Buffer,
        lg: &Layout,
        y: &Buffer,
        ly: &Layout,
        log: bool,
    ) -> Result<Option<Buffer>> {
        let Some(&cols) = lg.shape.last() else {
            return Ok(None);
        };
        if lg.shape != ly.shape || cols == 0 || lg.numel() == 0 || !g.dtype().is_float() {
            return Ok(None);
        }
        let Some(k) = memo((12, g.dtype() as u32, log as u32, 0), || {
            source::softmax_backward(g.dtype(), log)
        }) else {
            return self.host_opt(|| {
                cpu::reduce::softmax_backward(&host(g)?, lg, &host(y)?, ly, log)
                    .map(Ok)
                    .transpose()
            });
        };
        let (gc, _) = self.contiguous(g, lg)?;
        let (yc, _) = self.contiguous(y, ly)?;
        self.rows_kernel(&k, lg.numel() / cols, cols, &[&gc, &yc], g.dtype())
            .map(Some)
    }
    fn logsumexp(&self, _x: &Buffer, _lx: &Layout, _dims: &[usize]) -> Result<Option<Buffer>> {
        Ok(None) // (composed on the GPU by the op layer: max, exp, sum, log)
    }
    fn var(
        &self,
        _x: &Buffer,
        _lx: &Layout,
        _dims: &[usize],
        _correction: f64,
        _sqrt: bool,
    ) -> Result<Option<Buffer>> {
        Ok(None) // (composed on the GPU by the op layer: mean, squares, sum)
    }
    fn any_nonzero(&self, x: &Buffer, lx: &Layout) -> Result<bool> {
        Ok(cpu::reduce::any_nonzero(&host(x)?, lx))
    }
    fn cumulative(&self, x: &Buffer, lx: &Layout, dim: usize, prod: bool) -> Result<Buffer> {
        // (no device kernel yet: computed on the host)
        self.fallback();
        self.up(cpu::scan::cumulative(&host(x)?, lx, dim, prod))
    }
    fn cum_extreme(
        &self,
        x: &Buffer,
        lx: &Layout,
        dim: usize,
        is_max: bool,
    ) -> Result<(Buffer, Buffer)> {
        // (no device kernel yet: computed on the host)
        self.fallback();
        let (v, i) = cpu::scan::cum_extreme(&host(x)?, lx, dim, is_max);
        Ok((self.up(v)?, self.up(i)?))
    }
    fn logcumsumexp(&self, x: &Buffer, lx: &Layout, dim: usize) -> Result<Option<Buffer>> {
        // (no device kernel yet: computed on the host)
        self.host_opt(|| Ok(cpu::scan::logcumsumexp(&host(x)?, lx, dim)))
    }
    fn exclusive_prod_rows(&self, x: &Buffer, lx: &Layout) -> Result<Option<Buffer>> {
        self.host_opt(|| {
            cpu::reduce::exclusive_prod_rows(&host(x)?, lx)
                .map(Ok)
                .transpose()
        })
    }

    fn gather(
        &self,
        x: &Buffer,
        lx: &Layout,
        dim: usize,
        index: &[i64],
        index_shape: &[usize],
    ) -> Result<Buffer> {
        if let Some(b) = self.gather_on_device(x, lx, dim, index.to_vec(), index_shape)? {
            return Ok(b);
        }
        self.fallback();
        self.up(cpu::index::gather(&host(x)?, lx, dim, index, index_shape))
    }
    fn gather_checking(
        &self,
        _: &Buffer,
        _: &Layout,
        _: usize,
        _: &[i64],
        _: &[usize],
    ) -> Result<Option<Buffer>> {
        // (the op layer checks the indices on the host, then `gather`)
        Ok(None)
    }
    fn scatter_add(
        &self,
        shape: &[usize],
        dim: usize,
        index: &[i64],
        index_shape: &[usize],
        src: &Buffer,
        ls: &Layout,
    ) -> Result<Buffer> {
        self.fallback();
        self.up(cpu::index::scatter_add(
            shape,
            dim,
            index,
            index_shape,
            &host(src)?,
            ls,
        ))
    }
    fn index_select(&self, x: &Buffer, lx: &Layout, dim: usize, index: &[i64]) -> Result<Buffer> {
        // the list expanded over the output, then a gather
        let mut shape: Vec<usize> = lx.shape.to_vec();
        shape[dim] = index.len();
        let outer: usize = shape[..dim].iter().product();
        let inner: usize = shape[dim + 1..].iter().product();
        let mut full = Vec::with_capacity(outer * index.len() * inner);
        for _ in 0..outer {
            for &j in index {
                full.extend(std::iter::repeat_n(j, inner));
            }
        }
        if let Some(b) = self.gather_on_device(x, lx, dim, full, &shape)? {
            return Ok(b);
        }
        self.fallback();
        self.up(cpu::index::index_select(&host(x)?, lx, dim, index))
    }
    fn index_add(
        &self,
        shape: &[usize],
        dim: usize,
        index: &[i64],
        src: &Buffer,
        ls: &Layout,
    ) -> Result<Buffer> {
        self.fallback();
        self.up(cpu::index::index_add(shape, dim, index, &host(src)?, ls))
    }
    fn scatter(
        &self,
        x: &Buffer,
        lx: &Layout,
        dim: usize,
        index: &[i64],
        index_shape: &[usize],
        src: &Buffer,
        ls: &Layout,
        add: bool,
    ) -> Result<Buffer> {
        self.fallback();
        self.up(cpu::scatter::scatter(
            &host(x)?,
            lx,
            dim,
            index,
            index_shape,
            &host(src)?,
            ls,
            add,
        ))
    }
    fn scatter_reduce(
        &self,
        x: &Buffer,
        lx: &Layout,
        dim: usize,
        index: &[i64],
        index_shape: &[usize],
        src: &Buffer,
        ls: &Layout,
        reduce: crate::backend::ScatterReduce,
    ) -> Result<Buffer> {
        self.fallback();
        self.up(cpu::scatter::scatter_reduce(
            &host(x)?,
            lx,
            dim,
            index,
            index_shape,
            &host(src)?,
            ls,
            reduce,
        ))
    }
    fn index_write(
        &self,
        x: &Buffer,
        lx: &Layout,
        dim: usize,
        index: &[i64],
        src: &Buffer,
        ls: &Layout,
        add: bool,
    ) -> Result<Buffer> {
        self.fallback();
        self.up(cpu::scatter::index_write(
            &host(x)?,
            lx,
            dim,
            index,
            &host(src)?,
            ls,
            add,
        ))
    }
    fn index_reduce(
        &self,
        x: &Buffer,
        lx: &Layout,
        dim: usize,
        index: &[i64],
        src: &Buffer,
        ls: &Layout,
        reduce: crate::backend::ScatterReduce,
    ) -> Result<Buffer> {
        self.fallback();
        self.up(cpu::scatter::index_reduce(
            &host(x)?,
            lx,
            dim,
            index,
            &host(src)?,
            ls,
            reduce,
        ))
    }
    fn index_put(
        &self,
        x: &Buffer,
        lx: &Layout,
        dtype: DType,
        positions: &[i64],
        values: &Buffer,
        lv: &Layout,
        accumulate: bool,
    ) -> Result<Buffer> {
        self.fallback();
        self.up(cpu::index::index_put(
            &host(x)?,
            lx,
            dtype,
            positions,
            &host(values)?,
            lv,
            accumulate,
        ))
    }

    fn bmm(&self, a: &Buffer, la: &Layout, b: &Buffer, lb: &Layout) -> Result<Buffer> {
        crate::backend::check_same_device(&[a, b])?;
        let nd = la.ndim();
        let (m, n) = (la.shape[nd - 2], lb.shape[nd - 1]);
        let batch = if nd == 3 { la.shape[0] } else { 1 };
        let (dev, stream) = self.ctx()?;
        let out = alloc(&dev, &stream, a.dtype(), batch * m * n)?;
        self.gemm(&dev, &stream, a, la, b, lb, &out, 0.0)?;
        Ok(Buffer::Cuda(Box::new(out)))
    }
    fn addmm(
        &self,
        c: &Buffer,
        lc: &Layout,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
    ) -> Result<Option<Buffer>> {
        crate::backend::check_same_device(&[c, a, b])?;
        if !a.dtype().is_float() {
            return Ok(None);
        }
        let (m, n) = (la.shape[0], lb.shape[1]);
        let (dev, stream) = self.ctx()?;
        let mut out = Buffer::Cuda(Box::new(alloc(&dev, &stream, a.dtype(), m * n)?));
        self.copy_into(&mut out, &Layout::contiguous(&[m, n]), c, lc)?;
        let o = cuda_of(&out)?;
        self.gemm(&dev, &stream, a, la, b, lb, o, 1.0)?;
        Ok(Some(out))
    }

    fn arange(&self, start: f64, step: f64, n: usize, dtype: DType) -> Result<Option<Buffer>> {
        cpu::creation::arange(start, step, n, dtype)
            .map(|b| self.up(b))
            .transpose()
    }
    fn linspace(&self, start: f64, end: f64, n: usize, dtype: DType) -> Result<Buffer> {
        self.up(cpu::creation::linspace(start, end, n, dtype))
    }
    fn eye(&self, n: usize, m: usize, dtype: DType) -> Result<Buffer> {
        let mut z = self.zeros(dtype, n * m)?;
        let k = n.min(m);
        if k > 0 {
            let diag = Layout {
                shape: [k].into_iter().collect(),
                strides: [m + 1].into_iter().collect(),
                offset: 0,
            };
            self.fill(&mut z, &diag, Scalar::Int(1))?;
        }
        Ok(z)
    }
    fn zeros(&self, dtype: DType, n: usize) -> Result<Buffer> {
        let (dev, stream) = self.ctx()?;
        let out = alloc(&dev, &stream, dtype, n)?;
        if n > 0 {
            // SAFETY: the block holds `nbytes` bytes.
            unsafe { result::memset_d8_async(out.ptr(), 0, out.nbytes(), stream.raw) }.or_cuda()?;
        }
        Ok(Buffer::Cuda(Box::new(out)))
    }
    fn empty(&self, dtype: DType, n: usize) -> Result<Buffer> {
        // (device memory as the caching allocator hands it out, as torch's empty)
        let (dev, stream) = self.ctx()?;
        Ok(Buffer::Cuda(Box::new(alloc(&dev, &stream, dtype, n)?)))
    }
    fn full(&self, dtype: DType, n: usize, v: Scalar) -> Result<Buffer> {
        let (dev, stream) = self.ctx()?;
        let mut out = Buffer::Cuda(Box::new(alloc(&dev, &stream, dtype, n)?));
        self.fill(&mut out, &Layout::contiguous(&[n]), v)?;
        Ok(out)
    }
}

/// The dtype of `op`'s result over `dt` (the CPU's `reduce`: sums and products of
/// integers and bools in int64, truth tests in bool, the rest in the input's dtype).
pub fn reduce_out_dtype(op: ReduceOp, dt: DType) -> DType {
    match (op, dt) {
        (ReduceOp::All | ReduceOp::Any, _) => DType::Bool,
        (ReduceOp::ArgMax | ReduceOp::ArgMin, _) => DType::I64,
        (ReduceOp::Sum | ReduceOp::NanSum | ReduceOp::Mean | ReduceOp::Prod, DType::Bool) => {
            DType::I64
        }
        (_, dt) => dt,
    }
}

/// How many equal parts to split `n` elements into for a two-stage reduction: a divisor
/// of `n` between `want / 2` and `want` (and at least 2), each part at least 4096 long;
/// `None` where there is none (the one-stage kernel then runs).
fn split_count(n: usize, want: usize) -> Option<usize> {
    let want = want.clamp(2, (n / 4096).max(2));
    (want.div_ceil(2).max(2)..=want)
        .rev()
        .find(|&k| n.is_multiple_of(k))
}

/// Stage 1 of a split reduction: the outer geometry with the part index appended as its
/// innermost dim (output `o * chunks + k`), and the inner one cut to one part. The inner
/// geometry must be one dim (`si.ndim == 1`) and the outer one below `MAXD` dims.
fn split_geometry(
    so: RgShape,
    lo: RgLay,
    si: RgShape,
    li: RgLay,
    chunks: usize,
) -> (RgShape, RgLay, RgShape) {
    let chunk = si.size[0] / chunks as i64;
    let (mut so1, mut lo1, mut si1) = (so, lo, si);
    so1.size[so.ndim as usize] = chunks as i64;
    lo1.st[so.ndim as usize] = chunk * li.st[0];
    so1.ndim += 1;
    si1.size[0] = chunk;
    (so1, lo1, si1)
}

/// Blocks for a one-block-per-row kernel (the grid's x limit is 2^31 - 1).
fn grid_rows(rows: usize) -> u32 {
    rows.min(i32::MAX as usize) as u32
}

impl Cuda {
    fn host_opt(&self, f: impl FnOnce() -> Result<Option<Buffer>>) -> Result<Option<Buffer>> {
        self.fallback();
        f()?.map(|b| self.up(b)).transpose()
    }

    fn reduce_on_device(
        &self,
        k: &source::KernelSrc,
        op: ReduceOp,
        x: &Buffer,
        lx: &Layout,
        dims: &[usize],
    ) -> Result<Option<Buffer>> {
        let nd = lx.shape.len();
        let red = |d: usize| dims.contains(&d);
        let keep_shape: Vec<usize> = (0..nd).filter(|&d| !red(d)).map(|d| lx.shape[d]).collect();
        let keep = Layout {
            shape: keep_shape.iter().copied().collect(),
            strides: (0..nd)
                .filter(|&d| !red(d))
                .map(|d| lx.strides[d])
                .collect(),
            offset: lx.offset,
        };
        let inner_shape: Vec<usize> = (0..nd).filter(|&d| red(d)).map(|d| lx.shape[d]).collect();
        let inner = Layout {
            shape: inner_shape.iter().copied().collect(),
            strides: (0..nd).filter(|&d| red(d)).map(|d| lx.strides[d]).collect(),
            offset: 0,
        };
        let (Some((so, lo)), Some((si, li))) = (
            geometry(&keep_shape, &[&keep]),
            geometry(&inner_shape, &[&inner]),
        ) else {
            return Ok(None);
        };
        let outer = crate::shape::numel(&keep_shape);
        let n_inner = crate::shape::numel(&inner_shape);
        let out_dt = reduce_out_dtype(op, x.dtype());
        let (dev, stream) = self.ctx()?;
        // Few outputs over many elements: one block each would leave the GPU idle. Split
        // each output's elements into `chunks` equal parts (a divisor, so every part has
        // the same count and the result is the same on every run), reduce the parts, then
        // the partial results (sums and means as sums; the mean divided at the end).
        let sms = dev.multi_processor_count.max(1) as usize;
        let splits = !matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin); // (indices do not combine)
        if splits
            && outer < 2 * sms
            && n_inner >= 1 << 16
            && si.ndim == 1
            && (so.ndim as usize) < launch::MAXD
        {
            if let Some(chunks) = split_count(n_inner, (8 * sms).div_ceil(outer.max(1))) {
                let part_op = if op == ReduceOp::Mean {
                    ReduceOp::Sum
                } else {
                    op
                };
                let chunk = n_inner / chunks;
                let (so1, lo1, si1) = split_geometry(so, lo[0], si, li[0], chunks);
                let k1 = memo((10, part_op as u32, x.dtype() as u32, 0), || {
                    source::reduce(part_op, x.dtype())
                })
                .ok_or_else(|| Error::Internal("a reduction without its partial kernel".into()))?;
                let part_dt = reduce_out_dtype(part_op, x.dtype());
                let parts = alloc(&dev, &stream, part_dt, outer * chunks)?;
                self.launch_reduce(
                    &dev,
                    &stream,
                    &k1,
                    outer * chunks,
                    chunk,
                    so1,
                    lo1,
                    si1,
                    li[0],
                    cuda_of(x)?.ptr(),
                    parts.ptr(),
                )?;
                // stage 2: the partials of each output, contiguous
                let (so2, lo2) = geometry(&[outer], &[&Layout::contiguous(&[outer])])
                    .ok_or_else(|| Error::Internal("reduce geometry".into()))?;
                let mut lo2 = lo2[0];
                lo2.st[0] = chunks as i64;
                let (si2, li2) = geometry(&[chunks], &[&Layout::contiguous(&[chunks])])
                    .ok_or_else(|| Error::Internal("reduce geometry".into()))?;
                let k2 = memo((10, part_op as u32, part_dt as u32, 0), || {
                    source::reduce(part_op, part_dt)
                })
                .ok_or_else(|| Error::Internal("a reduction without its partial kernel".into()))?;
                let out = alloc(&dev, &stream, reduce_out_dtype(part_op, part_dt), outer)?;
                self.launch_reduce(
                    &dev,
                    &stream,
                    &k2,
                    outer,
                    chunks,
                    so2,
                    lo2,
                    si2,
                    li2[0],
                    parts.ptr(),
                    out.ptr(),
                )?;
                let out = Buffer::Cuda(Box::new(out));
                if op == ReduceOp::Mean {
                    return self.binary_scalar(
                        BinaryOp::Div,
                        &out,
                        &Layout::contiguous(&[outer]),
                        n_inner as f64,
                        false,
                    );
                }
                return Ok(Some(out));
            }
        }
        let out = alloc(&dev, &stream, out_dt, outer)?;
        self.launch_reduce(
            &dev,
            &stream,
            k,
            outer,
            n_inner,
            so,
            lo[0],
            si,
            li[0],
            cuda_of(x)?.ptr(),
            out.ptr(),
        )?;
        Ok(Some(Buffer::Cuda(Box::new(out))))
    }

    /// A one-block-per-row kernel over contiguous `rows × cols` inputs (softmax's): params
    /// `(i64 rows, i64 cols, inputs..., out)`, a fresh `rows × cols` output of `dt`.
    fn rows_kernel(
        &self,
        k: &source::KernelSrc,
        rows: usize,
        cols: usize,
        inputs: &[&Buffer],
        dt: DType,
    ) -> Result<Buffer> {
        let (dev, stream) = self.ctx()?;
        let out = alloc(&dev, &stream, dt, rows * cols)?;
        let mut a = Args::new();
        a.push(rows as i64).push(cols as i64);
        for b in inputs {
            a.push(cuda_of(b)?.ptr());
        }
        a.push(out.ptr());
        let (grid, block) = ((grid_rows(rows), 1, 1), (launch::BLOCK, 1, 1));
        launch::launch(&dev, &stream, k, grid, block, 0, &mut a)?;
        Ok(Buffer::Cuda(Box::new(out)))
    }

    /// One launch of a reduction kernel (see `source::reduce` for the parameters).
    /// `out[p] = x[p with coordinate dim replaced by idx[p]]` over `shape` (`idx` row-major
    /// over it, bounds-checked by the op layer); `None` past the kernels' dims.
    fn gather_on_device(
        &self,
        x: &Buffer,
        lx: &Layout,
        dim: usize,
        idx: Vec<i64>,
        shape: &[usize],
    ) -> Result<Option<Buffer>> {
        let mut l = Layout {
            shape: shape.iter().copied().collect(),
            strides: lx.strides.clone(),
            offset: lx.offset,
        };
        l.strides[dim] = 0;
        let Some((s, ls)) = geometry(shape, &[&l]) else {
            return Ok(None);
        };
        let n = crate::shape::numel(shape);
        let dt = x.dtype();
        let (dev, stream) = self.ctx()?;
        let out = alloc(&dev, &stream, dt, n)?;
        if n > 0 {
            let ib = upload(&Buffer::I64(idx.into()), self.0)?;
            let k = memo1((14, dt as u32, 0, 0), || source::gather(dt));
            let mut a = Args::new();
            a.push(n as i64)
                .push(s)
                .push(ls[0])
                .push(lx.strides[dim] as i64)
                .push(cuda_of(&ib)?.ptr())
                .push(cuda_of(x)?.ptr())
                .push(out.ptr());
            launch::launch_n(&dev, &stream, &k, n, &mut a)?;
            // (`ib` goes back to the cache here: its block's next user is queued on the
            // same stream, after this kernel)
        }
        Ok(Some(Buffer::Cuda(Box::new(out))))
    }

    fn launch_reduce(
        &self,
        dev: &Dev,
        stream: &Stream,
        k: &source::KernelSrc,
        outer: usize,
        inner: usize,
        so: RgShape,
        lo: RgLay,
        si: RgShape,
        li: RgLay,
        x: cudarc::driver::sys::CUdeviceptr,
        y: cudarc::driver::sys::CUdeviceptr,
    ) -> Result<()> {
        if outer == 0 {
            return Ok(());
        }
        let mut a = Args::new();
        a.push(outer as i64)
            .push(inner as i64)
            .push::<RgShape>(so)
            .push::<RgLay>(lo)
            .push::<RgShape>(si)
            .push::<RgLay>(li)
            .push(x)
            .push(y);
        launch::launch(
            dev,
            stream,
            k,
            (grid_rows(outer), 1, 1),
            (launch::BLOCK, 1, 1),
            0,
            &mut a,
        )
    }

    fn gemm(
        &self,
        dev: &Dev,
        stream: &Stream,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
        out: &CudaBuf,
        beta: f64,
    ) -> Result<()> {
        use super::blas::{Operand, as_col_major_transpose, gemm};
        let readable = |l: &Layout| {
            let nd = l.ndim();
            as_col_major_transpose(
                l.shape[nd - 2],
                l.shape[nd - 1],
                l.strides[nd - 2],
                l.strides[nd - 1],
            )
            .is_some()
        };
        let (ca, cla);
        let (a, la) = if readable(la) {
            (a, la)
        } else {
            (ca, cla) = self.contiguous(a, la)?;
            (&ca, &cla)
        };
        let (cb, clb);
        let (b, lb) = if readable(lb) {
            (b, lb)
        } else {
            (cb, clb) = self.contiguous(b, lb)?;
            (&cb, &clb)
        };
        let done = gemm(
            dev,
            stream,
            Operand {
                buf: cuda_of(a)?,
                layout: la,
            },
            Operand {
                buf: cuda_of(b)?,
                layout: lb,
            },
            out,
            beta,
        )?;
        if done {
            Ok(())
        } else {
            Err(Error::Internal(
                "an operand cuBLAS cannot read after a copy".into(),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cuda::launch::rg_at;

    #[test]
    fn split_counts_divide_and_stay_near_the_target() {
        assert_eq!(split_count(1 << 26, 1056), Some(1024));
        assert_eq!(split_count(128 * 784, 300), Some(16)); // (parts of at least 4096)
        assert_eq!(split_count(65537, 64), None); // prime
        for n in [1 << 16, 100_000, 3 << 20] {
            if let Some(k) = split_count(n, 500) {
                assert_eq!(n % k, 0);
                assert!(n / k >= 4096 || k == 2);
            }
        }
    }

    /// Stage 1's (output, element) pairs cover each output's elements exactly once.
    #[test]
    fn split_geometry_visits_every_element_of_each_output_once() {
        // x: [3, 64] with the 64 reduced, strided by 2, outer stride 200, offset 5
        let (so, lo) = geometry(
            &[3],
            &[&Layout {
                shape: [3].into_iter().collect(),
                strides: [200].into_iter().collect(),
                offset: 5,
            }],
        )
        .unwrap();
        let (si, li) = geometry(
            &[64],
            &[&Layout {
                shape: [64].into_iter().collect(),
                strides: [2].into_iter().collect(),
                offset: 0,
            }],
        )
        .unwrap();
        let chunks = 8;
        let (so1, lo1, si1) = split_geometry(so, lo[0], si, li[0], chunks);
        for o in 0..3i64 {
            let mut got: Vec<i64> = Vec::new();
            for k in 0..chunks as i64 {
                let o1 = o * chunks as i64 + k;
                for r in 0..si1.size[0] {
                    got.push(rg_at(o1, &so1, &lo1) + rg_at(r, &si1, &li[0]) - li[0].off);
                }
            }
            got.sort_unstable();
            let want: Vec<i64> = (0..64).map(|r| 5 + o * 200 + 2 * r).collect();
            assert_eq!(got, want);
        }
    }
}
