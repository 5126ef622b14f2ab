//! The generated CUDA kernels run on a GPU and agree with the CPU kernels: every unary,
//! binary, cast, copy, fill, where, clamp, reduction and softmax kernel, on special
//! values (±0, ±inf, NaN, int64's extremes, zero divisors), strided and broadcast
//! operands, and launches smaller than the output (the grid-stride loops).
//!
//! Needs a GPU, so it is ignored by default: `cargo test --test cuda_kernels -- --ignored`.
//! Kernels are compiled with NVRTC where it loads; else they are read from
//! `$RGRAD_CUBIN_DIR/<name>.sm_<XY>.cubin` (written on a machine with NVRTC by
//! `cargo run --example dump_cuda_kernels -- DIR --cubin 90`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may fail loudly

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchArgs, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use rgrad::backend::cpu;
use rgrad::backend::cuda::source::{self, KernelSrc, RgLay, RgShape};
use rgrad::backend::cuda::{nvrtc, source::BLOCK};
use rgrad::backend::{BinaryFn, BinaryOp, ReduceOp, UnaryOp};
use rgrad::dtype::{DType, Scalar};
use rgrad::layout::Layout;
use rgrad::storage::Buffer;
use std::path::PathBuf;
use std::sync::Arc;

const DTYPES: [DType; 4] = [DType::Bool, DType::I64, DType::F32, DType::F64];

enum Dev {
    Bool(CudaSlice<bool>),
    I64(CudaSlice<i64>),
    F32(CudaSlice<f32>),
    F64(CudaSlice<f64>),
}

/// Pushes a device buffer as a kernel's pointer argument.
fn arg<'a>(b: &mut LaunchArgs<'a>, d: &'a Dev) {
    match d {
        Dev::Bool(s) => b.arg(s),
        Dev::I64(s) => b.arg(s),
        Dev::F32(s) => b.arg(s),
        Dev::F64(s) => b.arg(s),
    };
}

struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    arch: (i32, i32),
    cubins: Option<PathBuf>,
    failures: Vec<String>,
    checked: usize,
}

impl Gpu {
    fn function(&self, k: &KernelSrc) -> CudaFunction {
        let (major, minor) = self.arch;
        let cubin = match &self.cubins {
            Some(dir) => {
                let p = dir.join(format!("{}.sm_{major}{minor}.cubin", k.name));
                std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            }
            None => nvrtc::compile_cubin(&k.source, major, minor).unwrap(),
        };
        let module = self.ctx.load_module(Ptx::from_binary(cubin)).unwrap();
        module.load_function(&k.name).unwrap()
    }
    fn up(&self, b: &Buffer) -> Dev {
        let s = &self.stream;
        // (a buffer of one element stands for an empty one: nothing reads it)
        match b {
            Buffer::Bool(v) if v.is_empty() => Dev::Bool(s.clone_htod(&[false]).unwrap()),
            Buffer::I64(v) if v.is_empty() => Dev::I64(s.clone_htod(&[0i64]).unwrap()),
            Buffer::F32(v) if v.is_empty() => Dev::F32(s.clone_htod(&[0f32]).unwrap()),
            Buffer::F64(v) if v.is_empty() => Dev::F64(s.clone_htod(&[0f64]).unwrap()),
            Buffer::Bool(v) => Dev::Bool(s.clone_htod(&**v).unwrap()),
            Buffer::I64(v) => Dev::I64(s.clone_htod(&**v).unwrap()),
            Buffer::F32(v) => Dev::F32(s.clone_htod(&**v).unwrap()),
            Buffer::F64(v) => Dev::F64(s.clone_htod(&**v).unwrap()),
            Buffer::Cuda(_) => panic!("a host buffer was expected"),
        }
    }
    fn zeros(&self, dt: DType, n: usize) -> Dev {
        let (s, n) = (&self.stream, n.max(1));
        match dt {
            DType::Bool => Dev::Bool(s.alloc_zeros(n).unwrap()),
            DType::I64 => Dev::I64(s.alloc_zeros(n).unwrap()),
            DType::F32 => Dev::F32(s.alloc_zeros(n).unwrap()),
            DType::F64 => Dev::F64(s.alloc_zeros(n).unwrap()),
        }
    }
    fn down(&self, d: &Dev, n: usize) -> Buffer {
        let s = &self.stream;
        match d {
            Dev::Bool(x) => Buffer::Bool(s.clone_dtoh(x).unwrap()[..n].to_vec().into()),
            Dev::I64(x) => Buffer::I64(s.clone_dtoh(x).unwrap()[..n].to_vec().into()),
            Dev::F32(x) => Buffer::F32(s.clone_dtoh(x).unwrap()[..n].to_vec().into()),
            Dev::F64(x) => Buffer::F64(s.clone_dtoh(x).unwrap()[..n].to_vec().into()),
        }
    }
    /// Compares a GPU result with the CPU's: int64 and bool exactly, floats within
    /// `rtol` (relative, and absolute below 1), NaN where NaN, infinities exactly.
    fn check(&mut self, what: &str, got: &Buffer, want: &Buffer, rtol: f64) {
        self.checked += 1;
        let bad: Vec<String> = match (got, want) {
            (Buffer::Bool(g), Buffer::Bool(w)) => diff(g, w, |a, b| a == b),
            (Buffer::I64(g), Buffer::I64(w)) => diff(g, w, |a, b| a == b),
            (Buffer::F32(g), Buffer::F32(w)) => {
                diff(g, w, |a, b| close(f64::from(*a), f64::from(*b), rtol))
            }
            (Buffer::F64(g), Buffer::F64(w)) => diff(g, w, |a, b| close(*a, *b, rtol)),
            _ => vec![format!("dtypes {:?} vs {:?}", got.dtype(), want.dtype())],
        };
        if !bad.is_empty() {
            self.failures.push(format!(
                "{what}: {} wrong, e.g. {}",
                bad.len(),
                bad[..bad.len().min(4)].join("; ")
            ));
        }
    }
}

fn close(a: f64, b: f64, rtol: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= rtol * b.abs().max(1.0)
}

fn diff<T: PartialEq + std::fmt::Debug>(
    g: &[T],
    w: &[T],
    ok: impl Fn(&T, &T) -> bool,
) -> Vec<String> {
    if g.len() != w.len() {
        return vec![format!("{} elements vs {}", g.len(), w.len())];
    }
    g.iter()
        .zip(w)
        .enumerate()
        .filter(|(_, (a, b))| !ok(a, b))
        .map(|(i, (a, b))| format!("[{i}] gpu {a:?} cpu {b:?}"))
        .collect()
}

/// A launch smaller than most outputs, so the grid-stride loops wrap.
fn small() -> LaunchConfig {
    LaunchConfig {
        grid_dim: (3, 1, 1),
        block_dim: (64, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Fewer blocks than rows (the row loops wrap), `BLOCK` threads each.
fn rows(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.clamp(1, 5) as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn shape_of(l: &Layout) -> RgShape {
    RgShape::new(&l.shape).unwrap()
}
fn lay(l: &Layout) -> RgLay {
    RgLay::new(l.offset, &l.strides).unwrap()
}

/// Deterministic pseudo-random numbers in [0, 1).
fn rand(n: usize, seed: u64) -> Vec<f64> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        })
        .collect()
}

const N: usize = 2 * 125;

/// `N` values of a dtype (specials first), laid out as the transpose of a [125, 2]
/// buffer: a non-contiguous [2, 125] operand.
fn values(dt: DType, seed: u64) -> (Buffer, Layout) {
    let specials = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.5,
        -2.5,
        1.5,
        -1.5,
        1e-3,
        1e3,
        1e30,
        -1e30,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        3.7,
        -3.7,
        10.0,
        -10.0,
        1e-40,
        0.9999,
        -0.9999,
        2.0,
        -2.0,
        3.0,
        -3.0,
        1.4616321449683622,
        7.0,
        -7.0,
        1e19,
        -1e19,
        0.25,
    ];
    let r = rand(N, seed);
    let f: Vec<f64> = (0..N)
        .map(|i| {
            specials
                .get((i + seed as usize * 5) % (N + 7))
                .copied()
                .unwrap_or(r[i] * 12.0 - 6.0)
        })
        .collect();
    let b = match dt {
        DType::F32 => Buffer::F32(f.iter().map(|&x| x as f32).collect()),
        DType::F64 => Buffer::F64(f.into()),
        DType::I64 => {
            let sp = [
                0,
                1,
                -1,
                2,
                -2,
                3,
                -3,
                7,
                -7,
                i64::MIN,
                i64::MAX,
                62,
                63,
                64,
                -64,
            ];
            Buffer::I64(
                (0..N)
                    .map(|i| {
                        sp.get((i + seed as usize * 3) % (N + 5))
                            .copied()
                            .unwrap_or((r[i] * 41.0) as i64 - 20)
                    })
                    .collect(),
            )
        }
        DType::Bool => Buffer::Bool(r.iter().map(|&x| x < 0.5).collect()),
    };
    (b, Layout::contiguous(&[125, 2]).transpose(0, 1).unwrap())
}

/// `N / 2` values broadcast along the first dim of [2, 125].
fn row_values(dt: DType, seed: u64) -> (Buffer, Layout) {
    let (b, _) = values(dt, seed);
    let b = match b {
        Buffer::Bool(v) => Buffer::Bool(v[..125].to_vec().into()),
        Buffer::I64(v) => Buffer::I64(v[..125].to_vec().into()),
        Buffer::F32(v) => Buffer::F32(v[..125].to_vec().into()),
        Buffer::F64(v) => Buffer::F64(v[..125].to_vec().into()),
        Buffer::Cuda(_) => panic!("a host buffer was expected"),
    };
    (b, Layout::contiguous(&[125]).expand(&[2, 125]).unwrap())
}

fn rtol(dt: DType, exact: bool) -> f64 {
    match (exact, dt) {
        (true, _) => 0.0,
        (false, DType::F32) => 4e-6,
        (false, _) => 1e-13,
    }
}

fn unary_ops(g: &mut Gpu) {
    for &op in UnaryOp::ALL {
        for dt in DTYPES {
            let Some(k) = source::unary(op, dt) else {
                continue;
            };
            let f = g.function(&k);
            let (x, lx) = values(dt, 1);
            let want = cpu::unary::unary(op, &x, &lx);
            let (dx, dy) = (g.up(&x), g.zeros(dt, N));
            let (n, s, l) = (N as i64, shape_of(&lx), lay(&lx));
            let mut b = g.stream.launch_builder(&f);
            b.arg(&n).arg(&s).arg(&l);
            arg(&mut b, &dx);
            arg(&mut b, &dy);
            unsafe { b.launch(small()) }.unwrap();
            let got = g.down(&dy, N);
            let exact = matches!(
                op,
                UnaryOp::Neg
                    | UnaryOp::Abs
                    | UnaryOp::Sign
                    | UnaryOp::Relu
                    | UnaryOp::Trunc
                    | UnaryOp::Frac
                    | UnaryOp::Reciprocal
                    | UnaryOp::Sqrt
            );
            // (the gamma family: steep near poles and zeros)
            let loose = matches!(op, UnaryOp::Lgamma | UnaryOp::Digamma);
            let tol = if loose {
                rtol(dt, false) * 100.0
            } else {
                rtol(dt, exact)
            };
            g.check(&k.name, &got, &want, tol);
        }
    }
    for dt in [DType::F32, DType::F64] {
        let k = source::polygamma(dt).unwrap();
        let f = g.function(&k);
        for order in 0..4 {
            let (x, lx) = values(dt, 2);
            let want = cpu::unary::polygamma(order as u32, &x, &lx);
            let (dx, dy) = (g.up(&x), g.zeros(dt, N));
            let (n, s, l) = (N as i64, shape_of(&lx), lay(&lx));
            let mut b = g.stream.launch_builder(&f);
            b.arg(&n).arg(&s).arg(&l);
            arg(&mut b, &dx);
            b.arg(&order);
            arg(&mut b, &dy);
            unsafe { b.launch(small()) }.unwrap();
            let got = g.down(&dy, N);
            g.check(
                &format!("{} n={order}", k.name),
                &got,
                &want,
                rtol(dt, false) * 100.0,
            );
        }
    }
    let k = source::logical_not(DType::Bool).unwrap();
    let f = g.function(&k);
    let (x, lx) = values(DType::Bool, 3);
    let want = cpu::unary::logical_not(&x, &lx);
    let (dx, dy) = (g.up(&x), g.zeros(DType::Bool, N));
    let (n, s, l) = (N as i64, shape_of(&lx), lay(&lx));
    let mut b = g.stream.launch_builder(&f);
    b.arg(&n).arg(&s).arg(&l);
    arg(&mut b, &dx);
    arg(&mut b, &dy);
    unsafe { b.launch(small()) }.unwrap();
    let got = g.down(&dy, N);
    g.check(&k.name, &got, &want, 0.0);
}

fn unary_backward(g: &mut Gpu) {
    for &op in UnaryOp::ALL {
        for dt in [DType::F32, DType::F64] {
            let Some(k) = source::unary_backward(op, dt) else {
                continue;
            };
            let f = g.function(&k);
            let (gr, lg) = values(dt, 4);
            let (sv, ls) = values(dt, 5);
            let Some(want) = cpu::unary::unary_backward(op, &gr, &lg, &sv, &ls) else {
                g.failures
                    .push(format!("{}: the CPU has no fused backward", k.name));
                continue;
            };
            let (dg, ds, dout) = (g.up(&gr), g.up(&sv), g.zeros(dt, N));
            let (n, s, l1, l2) = (N as i64, shape_of(&lg), lay(&lg), lay(&ls));
            let mut b = g.stream.launch_builder(&f);
            b.arg(&n).arg(&s).arg(&l1).arg(&l2);
            arg(&mut b, &dg);
            arg(&mut b, &ds);
            arg(&mut b, &dout);
            unsafe { b.launch(small()) }.unwrap();
            let got = g.down(&dout, N);
            let loose = matches!(op, UnaryOp::Lgamma | UnaryOp::Digamma);
            let tol = if loose {
                rtol(dt, false) * 100.0
            } else {
                rtol(dt, false)
            };
            g.check(&k.name, &got, &want, tol);
        }
    }
}

fn launch_binary(
    g: &mut Gpu,
    k: &KernelSrc,
    a: (&Buffer, &Layout),
    b2: (&Buffer, &Layout),
    out_dt: DType,
) -> Buffer {
    let f = g.function(k);
    let (da, db, dout) = (g.up(a.0), g.up(b2.0), g.zeros(out_dt, N));
    let (n, s, la, lb) = (N as i64, shape_of(a.1), lay(a.1), lay(b2.1));
    let mut b = g.stream.launch_builder(&f);
    b.arg(&n).arg(&s).arg(&la).arg(&lb);
    arg(&mut b, &da);
    arg(&mut b, &db);
    arg(&mut b, &dout);
    unsafe { b.launch(small()) }.unwrap();
    g.down(&dout, N)
}

fn binary_ops(g: &mut Gpu) {
    let ops = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Pow,
        BinaryOp::Maximum,
        BinaryOp::Minimum,
        BinaryOp::Remainder,
        BinaryOp::Fmod,
        BinaryOp::FloorDiv,
        BinaryOp::TruncDiv,
        BinaryOp::Eq,
        BinaryOp::Ne,
        BinaryOp::Lt,
        BinaryOp::Le,
        BinaryOp::Gt,
        BinaryOp::Ge,
        BinaryOp::LogicalAnd,
        BinaryOp::LogicalOr,
        BinaryOp::BitAnd,
        BinaryOp::BitOr,
        BinaryOp::BitXor,
        BinaryOp::Gcd,
        BinaryOp::Lcm,
    ];
    for op in ops {
        for dt in DTYPES {
            let Some(k) = source::binary(op, dt) else {
                continue;
            };
            let (a, la) = values(dt, 6);
            let (b, lb) = row_values(dt, 7);
            let want = cpu::elementwise::binary(op, &a, &la, &b, &lb);
            let got = launch_binary(g, &k, (&a, &la), (&b, &lb), want.dtype());
            let exact = op != BinaryOp::Pow;
            g.check(&k.name, &got, &want, rtol(dt, exact));
        }
        for dt in [DType::F32, DType::F64] {
            for first in [false, true] {
                let Some(k) = source::binary_scalar(op, dt, first) else {
                    continue;
                };
                let f = g.function(&k);
                for scalar in [2.0, -2.0, 3.0, 1.0, 0.5, 0.0, -1.5, f64::NAN, 1e30] {
                    let (a, _) = values(dt, 8);
                    let la = Layout::contiguous(&[2, 125]);
                    let want = cpu::elementwise::binary_scalar(op, &a, &la, scalar, first).unwrap();
                    let (da, dout) = (g.up(&a), g.zeros(dt, N));
                    let (n, s, l) = (N as i64, shape_of(&la), lay(&la));
                    let mut b = g.stream.launch_builder(&f);
                    b.arg(&n).arg(&s).arg(&l);
                    arg(&mut b, &da);
                    b.arg(&scalar);
                    arg(&mut b, &dout);
                    unsafe { b.launch(small()) }.unwrap();
                    let got = g.down(&dout, N);
                    let exact = op != BinaryOp::Pow;
                    g.check(
                        &format!("{} c={scalar}", k.name),
                        &got,
                        &want,
                        rtol(dt, exact),
                    );
                }
            }
        }
    }
    for &op in BinaryFn::ALL {
        for dt in DTYPES {
            let Some(k) = source::binary_fn(op, dt) else {
                continue;
            };
            let (a, la) = values(dt, 9);
            let (b, lb) = row_values(dt, 10);
            let want = cpu::binary::binary_fn(op, &a, &la, &b, &lb);
            let got = launch_binary(g, &k, (&a, &la), (&b, &lb), want.dtype());
            let exact = matches!(op, BinaryFn::Maximum | BinaryFn::Minimum);
            g.check(&k.name, &got, &want, rtol(dt, exact));
        }
    }
}

fn zeros_buffer(dt: DType, n: usize) -> Buffer {
    match dt {
        DType::Bool => Buffer::Bool(vec![false; n].into()),
        DType::I64 => Buffer::I64(vec![0; n].into()),
        DType::F32 => Buffer::F32(vec![0.0; n].into()),
        DType::F64 => Buffer::F64(vec![0.0; n].into()),
    }
}

fn casts_copies_fill_where_clamp(g: &mut Gpu) {
    for from in DTYPES {
        for to in DTYPES {
            let k = source::cast(from, to);
            let f = g.function(&k);
            let (x, lx) = values(from, 11);
            let want = cpu::elementwise::cast(&x, &lx, to);
            let (dx, dy) = (g.up(&x), g.zeros(to, N));
            let (n, s, l) = (N as i64, shape_of(&lx), lay(&lx));
            let mut b = g.stream.launch_builder(&f);
            b.arg(&n).arg(&s).arg(&l);
            arg(&mut b, &dx);
            arg(&mut b, &dy);
            unsafe { b.launch(small()) }.unwrap();
            let got = g.down(&dy, N);
            g.check(&k.name, &got, &want, 0.0);

            // copy a broadcast row into the transposed view of a [125, 2] buffer
            let k = source::copy_into(to, from);
            let f = g.function(&k);
            let (src, ls) = row_values(from, 12);
            let ld = Layout::contiguous(&[125, 2]).transpose(0, 1).unwrap();
            let mut want = zeros_buffer(to, N);
            let cast_src = cpu::elementwise::cast(&src, &ls, to);
            cpu::elementwise::copy_into(&mut want, &ld, &cast_src, &Layout::contiguous(&[2, 125]));
            let (dsrc, ddst) = (g.up(&src), g.zeros(to, N));
            let (n, s, l1, l2) = (N as i64, shape_of(&ld), lay(&ld), lay(&ls));
            let mut b = g.stream.launch_builder(&f);
            b.arg(&n).arg(&s).arg(&l1).arg(&l2);
            arg(&mut b, &ddst);
            arg(&mut b, &dsrc);
            unsafe { b.launch(small()) }.unwrap();
            let got = g.down(&ddst, N);
            g.check(&k.name, &got, &want, 0.0);
        }
    }
    for dt in DTYPES {
        // fill every other column of a [2, 125] buffer
        let k = source::fill(dt);
        let f = g.function(&k);
        let ld = Layout {
            shape: smallvec::smallvec![2, 62],
            strides: smallvec::smallvec![125, 2],
            offset: 1,
        };
        let v = match dt {
            DType::Bool => Scalar::Bool(true),
            DType::I64 => Scalar::Int(-5),
            DType::F32 | DType::F64 => Scalar::Float(-2.5),
        };
        let mut want = zeros_buffer(dt, N);
        cpu::creation::fill(&mut want, &ld, v);
        let ddst = g.zeros(dt, N);
        let (n, s, l) = (124i64, shape_of(&ld), lay(&ld));
        let (vb, vi, vf, vd) = (true, -5i64, -2.5f32, -2.5f64);
        let mut b = g.stream.launch_builder(&f);
        b.arg(&n).arg(&s).arg(&l);
        arg(&mut b, &ddst);
        match dt {
            DType::Bool => b.arg(&vb),
            DType::I64 => b.arg(&vi),
            DType::F32 => b.arg(&vf),
            DType::F64 => b.arg(&vd),
        };
        unsafe { b.launch(small()) }.unwrap();
        let got = g.down(&ddst, N);
        g.check(&k.name, &got, &want, 0.0);

        let k = source::where_(dt);
        let f = g.function(&k);
        let (c, lc) = values(DType::Bool, 13);
        let (a, la) = values(dt, 14);
        let (b2, lb) = row_values(dt, 15);
        let want = cpu::elementwise::where_(&c, &lc, &a, &la, &b2, &lb);
        let (dc, da, db, dout) = (g.up(&c), g.up(&a), g.up(&b2), g.zeros(dt, N));
        let (n, s, l1, l2, l3) = (N as i64, shape_of(&la), lay(&lc), lay(&la), lay(&lb));
        let mut b = g.stream.launch_builder(&f);
        b.arg(&n).arg(&s).arg(&l1).arg(&l2).arg(&l3);
        arg(&mut b, &dc);
        arg(&mut b, &da);
        arg(&mut b, &db);
        arg(&mut b, &dout);
        unsafe { b.launch(small()) }.unwrap();
        let got = g.down(&dout, N);
        g.check(&k.name, &got, &want, 0.0);

        let Some(k) = source::clamp(dt) else {
            continue;
        };
        let f = g.function(&k);
        let bounds = [
            (None, Some(1.5)),
            (Some(-1.0), Some(2.0)),
            (Some(f64::NAN), None),
            (Some(3.0), Some(1.0)),
            (Some(-1e300), None),
            (None, None),
        ];
        for (lo, hi) in bounds {
            let (x, lx) = values(dt, 16);
            let want = cpu::elementwise::clamp(&x, &lx, lo, hi);
            let (dx, dy) = (g.up(&x), g.zeros(dt, N));
            let (n, s, l) = (N as i64, shape_of(&lx), lay(&lx));
            let (has_lo, lov) = (i32::from(lo.is_some()), lo.unwrap_or(0.0));
            let (has_hi, hiv) = (i32::from(hi.is_some()), hi.unwrap_or(0.0));
            let mut b = g.stream.launch_builder(&f);
            b.arg(&n).arg(&s).arg(&l);
            arg(&mut b, &dx);
            b.arg(&has_lo).arg(&lov).arg(&has_hi).arg(&hiv);
            arg(&mut b, &dy);
            unsafe { b.launch(small()) }.unwrap();
            let got = g.down(&dy, N);
            g.check(&format!("{} {lo:?} {hi:?}", k.name), &got, &want, 0.0);
        }
    }
}

fn reductions(g: &mut Gpu) {
    // (shape, reduced dims, whether the input is permuted)
    let cases: [(&[usize], &[usize], bool); 4] = [
        (&[3, 5, 300], &[0, 2], true),
        (&[7, 5000], &[1], false),
        (&[4, 0], &[1], false),
        (&[6, 1], &[0, 1], false),
    ];
    let ops = [
        ReduceOp::Sum,
        ReduceOp::Mean,
        ReduceOp::Prod,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::All,
        ReduceOp::Any,
        ReduceOp::ArgMax,
        ReduceOp::ArgMin,
    ];
    for op in ops {
        for dt in DTYPES {
            let Some(k) = source::reduce(op, dt) else {
                continue;
            };
            let f = g.function(&k);
            for (shape, dims, permute) in cases {
                // (torch refuses the max and min of an empty extent; the CPU's int64 and
                // bool answers there are placeholders, floats give -inf and inf)
                let extreme = matches!(op, ReduceOp::Max | ReduceOp::Min);
                if shape.contains(&0) && extreme && !dt.is_float() {
                    continue;
                }
                let n: usize = shape.iter().product();
                // (permuted: the transpose of a contiguous [300, 5, 3], strides [1, 3, 15])
                let l = if permute {
                    let rev: Vec<usize> = shape.iter().rev().copied().collect();
                    Layout::contiguous(&rev).transpose(0, 2).unwrap()
                } else {
                    Layout::contiguous(shape)
                };
                // values near 1 so that products stay finite; a NaN in one row
                let r = rand(n, 17);
                let near_one = |i: usize, v: f64| if i == 7 { f64::NAN } else { 0.995 + v * 0.01 };
                let x = match dt {
                    DType::F32 => Buffer::F32(
                        r.iter()
                            .enumerate()
                            .map(|(i, &v)| near_one(i, v) as f32)
                            .collect(),
                    ),
                    DType::F64 => {
                        Buffer::F64(r.iter().enumerate().map(|(i, &v)| near_one(i, v)).collect())
                    }
                    DType::I64 => Buffer::I64(r.iter().map(|&v| (v * 7.0) as i64 - 3).collect()),
                    DType::Bool => Buffer::Bool(r.iter().map(|&v| v < 0.97).collect()),
                };
                let want = cpu::reduce::reduce(op, &x, &l, dims);
                let kept: Vec<usize> = (0..shape.len()).filter(|d| !dims.contains(d)).collect();
                let pick = |ds: &[usize]| -> (Vec<usize>, Vec<usize>) {
                    (
                        ds.iter().map(|&d| l.shape[d]).collect(),
                        ds.iter().map(|&d| l.strides[d]).collect(),
                    )
                };
                let (ks, kst) = pick(&kept);
                let (rs, rst) = pick(dims);
                let outer: usize = ks.iter().product();
                let inner: usize = rs.iter().product();
                let (so, lo) = (
                    RgShape::new(&ks).unwrap(),
                    RgLay::new(l.offset, &kst).unwrap(),
                );
                let (si, li) = (RgShape::new(&rs).unwrap(), RgLay::new(0, &rst).unwrap());
                let (dx, dy) = (g.up(&x), g.zeros(want.dtype(), outer));
                let (o, i) = (outer as i64, inner as i64);
                let mut b = g.stream.launch_builder(&f);
                b.arg(&o).arg(&i).arg(&so).arg(&lo).arg(&si).arg(&li);
                arg(&mut b, &dx);
                arg(&mut b, &dy);
                unsafe { b.launch(rows(outer)) }.unwrap();
                let got = g.down(&dy, outer);
                let exact = matches!(
                    op,
                    ReduceOp::Max
                        | ReduceOp::Min
                        | ReduceOp::All
                        | ReduceOp::Any
                        | ReduceOp::ArgMax
                        | ReduceOp::ArgMin
                );
                let tol = match (exact, dt) {
                    (true, _) => 0.0,
                    (false, DType::F32) => 1e-5,
                    (false, _) => rtol(dt, false),
                };
                g.check(
                    &format!("{} {shape:?} over {dims:?}", k.name),
                    &got,
                    &want,
                    tol,
                );
            }
        }
    }
    // the same bits on every run
    let k = source::reduce(ReduceOp::Sum, DType::F32).unwrap();
    let f = g.function(&k);
    let x = Buffer::F32(rand(1 << 20, 3).iter().map(|&v| v as f32 - 0.5).collect());
    let (so, lo) = (RgShape::new(&[1]).unwrap(), RgLay::new(0, &[0]).unwrap());
    let (si, li) = (
        RgShape::new(&[1 << 20]).unwrap(),
        RgLay::new(0, &[1]).unwrap(),
    );
    let dx = g.up(&x);
    let mut runs = Vec::new();
    for _ in 0..5 {
        let dy = g.zeros(DType::F32, 1);
        let (o, i) = (1i64, 1i64 << 20);
        let mut b = g.stream.launch_builder(&f);
        b.arg(&o).arg(&i).arg(&so).arg(&lo).arg(&si).arg(&li);
        arg(&mut b, &dx);
        arg(&mut b, &dy);
        unsafe { b.launch(rows(1)) }.unwrap();
        let Buffer::F32(v) = g.down(&dy, 1) else {
            unreachable!()
        };
        runs.push(v[0].to_bits());
    }
    g.checked += 1;
    if runs.windows(2).any(|w| w[0] != w[1]) {
        g.failures.push(format!("{}: runs differ", k.name));
    }
}

fn float_buffer(dt: DType, v: impl Iterator<Item = f64>) -> Buffer {
    if dt == DType::F32 {
        Buffer::F32(v.map(|x| x as f32).collect())
    } else {
        Buffer::F64(v.collect())
    }
}

fn softmaxes(g: &mut Gpu) {
    for dt in [DType::F32, DType::F64] {
        for log in [false, true] {
            for (r, c) in [(37usize, 300usize), (3, 1000), (5, 1)] {
                let n = r * c;
                let v = rand(n, 19);
                // a row with -inf, one with NaN, one with +inf
                let x = float_buffer(
                    dt,
                    v.iter().enumerate().map(|(i, &x)| match i {
                        3 => f64::NEG_INFINITY,
                        _ if i == c + 1 => f64::NAN,
                        _ if i == 2 * c + 2 => f64::INFINITY,
                        _ => x * 20.0 - 10.0,
                    }),
                );
                let l = Layout::contiguous(&[r, c]);
                let want = cpu::reduce::softmax(&x, &l, 1, log).unwrap();
                let k = source::softmax(dt, log).unwrap();
                let f = g.function(&k);
                let (dx, dy) = (g.up(&x), g.zeros(dt, n));
                let (ri, ci) = (r as i64, c as i64);
                let mut b = g.stream.launch_builder(&f);
                b.arg(&ri).arg(&ci);
                arg(&mut b, &dx);
                arg(&mut b, &dy);
                unsafe { b.launch(rows(r)) }.unwrap();
                let got = g.down(&dy, n);
                let tol = rtol(dt, false) * 10.0;
                g.check(&format!("{} [{r}, {c}]", k.name), &got, &want, tol);

                // the backward, from the output of a finite input
                let gr = float_buffer(dt, rand(n, 21).into_iter().map(|x| x - 0.5));
                let xf = float_buffer(dt, v.iter().copied());
                let y = cpu::reduce::softmax(&xf, &l, 1, log).unwrap();
                let want = cpu::reduce::softmax_backward(&gr, &l, &y, &l, log).unwrap();
                let k = source::softmax_backward(dt, log).unwrap();
                let f = g.function(&k);
                let (dg, dyv, dout) = (g.up(&gr), g.up(&y), g.zeros(dt, n));
                let mut b = g.stream.launch_builder(&f);
                b.arg(&ri).arg(&ci);
                arg(&mut b, &dg);
                arg(&mut b, &dyv);
                arg(&mut b, &dout);
                unsafe { b.launch(rows(r)) }.unwrap();
                let got = g.down(&dout, n);
                g.check(&format!("{} [{r}, {c}]", k.name), &got, &want, tol);
            }
        }
    }
}

#[test]
#[ignore = "needs a GPU: cargo test --test cuda_kernels -- --ignored"]
fn kernels_agree_with_the_cpu() {
    let cubins = std::env::var_os("RGRAD_CUBIN_DIR").map(PathBuf::from);
    if cubins.is_none() {
        nvrtc::load(&[]).unwrap();
    }
    let ctx = CudaContext::new(0).unwrap();
    let arch = ctx.compute_capability().unwrap();
    let stream = ctx.default_stream();
    let mut g = Gpu {
        ctx,
        stream,
        arch,
        cubins,
        failures: Vec::new(),
        checked: 0,
    };
    let t = std::time::Instant::now();
    unary_ops(&mut g);
    unary_backward(&mut g);
    binary_ops(&mut g);
    casts_copies_fill_where_clamp(&mut g);
    reductions(&mut g);
    softmaxes(&mut g);
    eprintln!(
        "{} checks on sm_{}{} in {:.1} s, {} failed",
        g.checked,
        arch.0,
        arch.1,
        t.elapsed().as_secs_f64(),
        g.failures.len()
    );
    for f in &g.failures {
        eprintln!("FAIL {f}");
    }
    assert!(
        g.failures.is_empty(),
        "{} of {} checks failed (listed above)",
        g.failures.len(),
        g.checked
    );
}
