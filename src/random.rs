//! torch's CPU random generator, bit for bit: mt19937, the `Generator` object around it,
//! its 5056-byte state blob, and the scalar distributions of ATen's `DistributionsHelper.h`.
//!
//! Everything here copies ATen on purpose (CPUGeneratorImpl.cpp, core/MT19937RNGEngine.h,
//! core/DistributionsHelper.h, core/TransformationHelper.h, native/cpu/avx_mathfun.h) so
//! that the same seed gives the same bits as torch. Where torch's compiler (GCC, with FMA
//! enabled in the AVX2 kernels and `-ffp-contract=fast`) fuses a multiply and an add, we
//! write `mul_add`; the fused sites were checked against torch 2.15's output.

use crate::{Error, Result};
use parking_lot::Mutex;
use std::sync::{Arc, OnceLock};

const MERSENNE_STATE_N: usize = 624;
const MERSENNE_STATE_M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UMASK: u32 = 0x8000_0000;
const LMASK: u32 = 0x7fff_ffff;

/// The seed of a `torch.Generator()` made without one (c10's `default_rng_seed_val`).
pub const DEFAULT_RNG_SEED: u64 = 67_280_421_310_721;

/// ATen's mt19937 (`at::mt19937`), including its bookkeeping fields, which are part of the
/// state blob.
#[derive(Clone)]
pub struct Mt19937 {
    seed: u64,
    left: i32,
    seeded: bool,
    next: u32,
    state: [u32; MERSENNE_STATE_N],
}

impl Mt19937 {
    pub fn new(seed: u64) -> Mt19937 {
        let mut state = [0u32; MERSENNE_STATE_N];
        state[0] = (seed & 0xffff_ffff) as u32;
        for j in 1..MERSENNE_STATE_N {
            let prev = state[j - 1];
            state[j] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(j as u32);
        }
        Mt19937 {
            seed,
            left: 1,
            seeded: true,
            next: 0,
            state,
        }
    }

    fn next_state(&mut self) {
        self.left = MERSENNE_STATE_N as i32;
        self.next = 0;
        let s = &mut self.state;
        let mix = |u: u32, v: u32| -> u32 {
            let y = (u & UMASK) | (v & LMASK);
            (y >> 1) ^ if v & 1 != 0 { MATRIX_A } else { 0 }
        };
        for i in 0..MERSENNE_STATE_N - MERSENNE_STATE_M {
            s[i] = s[i + MERSENNE_STATE_M] ^ mix(s[i], s[i + 1]);
        }
        for i in MERSENNE_STATE_N - MERSENNE_STATE_M..MERSENNE_STATE_N - 1 {
            s[i] = s[i + MERSENNE_STATE_M - MERSENNE_STATE_N] ^ mix(s[i], s[i + 1]);
        }
        s[MERSENNE_STATE_N - 1] = s[MERSENNE_STATE_M - 1] ^ mix(s[MERSENNE_STATE_N - 1], s[0]);
    }

    /// `out.len()` draws of [`Mt19937::next_u32`], in order, leaving the same state: the
    /// draws between two regenerations of the state are one tempering loop over the
    /// state words (vectorised), instead of a call, a counter check and a modulo each.
    pub fn fill_u32(&mut self, out: &mut [u32]) {
        let mut i = 0;
        while i < out.len() {
            let next = self.next as usize;
            if self.left <= 1 || next >= MERSENNE_STATE_N {
                // this draw regenerates the state (or a loaded state's odd position)
                out[i] = self.next_u32();
                i += 1;
                continue;
            }
            // draws that leave `left` at 1 or more do not regenerate
            let k = ((self.left - 1) as usize)
                .min(out.len() - i)
                .min(MERSENNE_STATE_N - next);
            for (o, &y) in out[i..i + k].iter_mut().zip(&self.state[next..next + k]) {
                *o = temper(y);
            }
            self.left -= k as i32;
            self.next += k as u32;
            i += k;
        }
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        self.left -= 1;
        if self.left <= 0 {
            self.next_state();
        }
        // `next` < 624 after next_state; a loaded state is validated in `set_state`.
        let y = self.state[self.next as usize % MERSENNE_STATE_N];
        self.next += 1;
        temper(y)
    }
}

/// mt19937's tempering of one state word.
#[inline(always)]
fn temper(mut y: u32) -> u32 {
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c_5680;
    y ^= (y << 15) & 0xefc6_0000;
    y ^ (y >> 18)
}

/// The state behind one `Generator`: the engine and the cached second Box-Muller samples
/// (`CPUGeneratorImpl::next_{float,double}_normal_sample_`).
#[derive(Clone)]
pub struct GeneratorState {
    engine: Mt19937,
    next_float_normal: Option<f32>,
    next_double_normal: Option<f64>,
}

/// Size of torch's legacy `THGeneratorState` (5048) and of `CPUGeneratorImplState` (5056).
pub const LEGACY_STATE_SIZE: usize = 5048;
pub const STATE_SIZE: usize = 5056;
// Byte offsets in the blob (x86-64 layout of the two C structs).
const OFF_STATE: usize = 24;
const OFF_NORMAL_X: usize = OFF_STATE + 8 * MERSENNE_STATE_N; // 5016
const OFF_NORMAL_Y: usize = OFF_NORMAL_X + 8;
const OFF_NORMAL_RHO: usize = OFF_NORMAL_Y + 8;
const OFF_NORMAL_VALID: usize = OFF_NORMAL_RHO + 8; // 5040
const OFF_FLOAT_NORMAL: usize = LEGACY_STATE_SIZE; // 5048
const OFF_FLOAT_VALID: usize = OFF_FLOAT_NORMAL + 4;

impl GeneratorState {
    pub fn new(seed: u64) -> GeneratorState {
        GeneratorState {
            engine: Mt19937::new(seed),
            next_float_normal: None,
            next_double_normal: None,
        }
    }

    /// `CPUGeneratorImpl::random()`.
    #[inline]
    pub fn random(&mut self) -> u32 {
        self.engine.next_u32()
    }
    /// `out.len()` calls of [`GeneratorState::random`], in bulk.
    #[inline]
    pub fn fill_random(&mut self, out: &mut [u32]) {
        self.engine.fill_u32(out);
    }
    /// `CPUGeneratorImpl::random64()`: the first draw is the high half.
    #[inline]
    pub fn random64(&mut self) -> u64 {
        let hi = u64::from(self.engine.next_u32());
        let lo = u64::from(self.engine.next_u32());
        (hi << 32) | lo
    }

    /// `uniform_real_distribution<float>(0, 1)`: 24 random bits.
    #[inline]
    pub fn uniform01_f32(&mut self) -> f32 {
        (self.random() & ((1 << 24) - 1)) as f32 * (1.0 / (1u32 << 24) as f32)
    }
    /// `uniform_real_distribution<double>(0, 1)`: 53 random bits of one `random64()`.
    #[inline]
    pub fn uniform01_f64(&mut self) -> f64 {
        (self.random64() & ((1u64 << 53) - 1)) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// `uniform_real_distribution<float>(from, to)`: `x * (to - from) + from` (fused), where
    /// a result rounded up to `to` becomes `from`, so the range stays [from, to) as in torch.
    #[inline]
    pub fn uniform_f32(&mut self, from: f32, to: f32) -> f32 {
        let v = self.uniform01_f32().mul_add(to - from, from);
        if v == to { from } else { v }
    }
    #[inline]
    pub fn uniform_f64(&mut self, from: f64, to: f64) -> f64 {
        let v = self.uniform01_f64().mul_add(to - from, from);
        if v == to { from } else { v }
    }

    /// `normal_distribution<double>(mean, std)`: Box-Muller on two uniform doubles, the
    /// second sample cached in the generator until the next call (or a reseed).
    pub fn normal_f64(&mut self, mean: f64, std: f64) -> f64 {
        if let Some(v) = self.next_double_normal.take() {
            return v.mul_add(std, mean);
        }
        let u1 = self.uniform01_f64();
        let u2 = self.uniform01_f64();
        let r = (-2.0 * (-u2).ln_1p()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u1;
        self.next_double_normal = Some(r * theta.sin());
        (r * theta.cos()).mul_add(std, mean)
    }

    /// The 5056-byte blob of `CPUGeneratorImpl::get_state()`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = vec![0u8; STATE_SIZE];
        let e = &self.engine;
        b[0..8].copy_from_slice(&e.seed.to_le_bytes());
        b[8..12].copy_from_slice(&e.left.to_le_bytes());
        b[12..16].copy_from_slice(&i32::from(e.seeded).to_le_bytes());
        b[16..24].copy_from_slice(&u64::from(e.next).to_le_bytes());
        for (i, &s) in e.state.iter().enumerate() {
            let o = OFF_STATE + 8 * i;
            b[o..o + 8].copy_from_slice(&u64::from(s).to_le_bytes());
        }
        if let Some(y) = self.next_double_normal {
            b[OFF_NORMAL_Y..OFF_NORMAL_Y + 8].copy_from_slice(&y.to_le_bytes());
            b[OFF_NORMAL_VALID..OFF_NORMAL_VALID + 4].copy_from_slice(&1i32.to_le_bytes());
        }
        if let Some(f) = self.next_float_normal {
            b[OFF_FLOAT_NORMAL..OFF_FLOAT_NORMAL + 4].copy_from_slice(&f.to_le_bytes());
            b[OFF_FLOAT_VALID] = 1;
        }
        b
    }

    /// `CPUGeneratorImpl::set_state()` from the 5056-byte layout.
    pub fn from_bytes(b: &[u8]) -> Result<GeneratorState> {
        // torch 2.15 accepts only the current layout (the legacy 5048-byte one is refused).
        if b.len() != STATE_SIZE {
            return Err(Error::runtime(format!(
                "Expected a CPUGeneratorImplState of size {STATE_SIZE} but found the input RNG state size to be {}",
                b.len()
            )));
        }
        let u64_at = |o: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[o..o + 8]);
            u64::from_le_bytes(a)
        };
        let i32_at = |o: usize| {
            let mut a = [0u8; 4];
            a.copy_from_slice(&b[o..o + 4]);
            i32::from_le_bytes(a)
        };
        let left = i32_at(8);
        let next = u64_at(16);
        // torch copies these unchecked; values outside them would index out of the state.
        if !(1..=MERSENNE_STATE_N as i32).contains(&left) || next > MERSENNE_STATE_N as u64 {
            return Err(Error::runtime("The input RNG state is invalid"));
        }
        let mut state = [0u32; MERSENNE_STATE_N];
        for (i, s) in state.iter_mut().enumerate() {
            *s = u64_at(OFF_STATE + 8 * i) as u32;
        }
        let engine = Mt19937 {
            seed: u64_at(0),
            left,
            seeded: i32_at(12) != 0,
            next: next as u32,
            state,
        };
        let next_double_normal =
            (i32_at(OFF_NORMAL_VALID) != 0).then(|| f64::from_bits(u64_at(OFF_NORMAL_Y)));
        let next_float_normal = if b[OFF_FLOAT_VALID] != 0 {
            let mut a = [0u8; 4];
            a.copy_from_slice(&b[OFF_FLOAT_NORMAL..OFF_FLOAT_NORMAL + 4]);
            Some(f32::from_le_bytes(a))
        } else {
            None
        };
        Ok(GeneratorState {
            engine,
            next_float_normal,
            next_double_normal,
        })
    }
}

/// A `torch.Generator` on the CPU. Clones share the state; every op locks it once for its
/// whole draw, as ATen locks `generator->mutex_`, so concurrent ops never interleave draws.
#[derive(Clone)]
pub struct Generator(Arc<Mutex<GeneratorState>>);

impl Default for Generator {
    fn default() -> Self {
        Generator::new(DEFAULT_RNG_SEED)
    }
}

impl Generator {
    pub fn new(seed: u64) -> Generator {
        Generator(Arc::new(Mutex::new(GeneratorState::new(seed))))
    }
    /// `manual_seed`: a fresh engine and no cached normal samples.
    pub fn manual_seed(&self, seed: u64) {
        *self.0.lock() = GeneratorState::new(seed);
    }
    /// `seed()`: reseeds from a non-deterministic source and returns the seed.
    pub fn seed(&self) -> u64 {
        let s = non_deterministic_seed();
        self.manual_seed(s);
        s
    }
    pub fn initial_seed(&self) -> u64 {
        self.0.lock().engine.seed
    }
    pub fn get_state(&self) -> Vec<u8> {
        self.0.lock().to_bytes()
    }
    pub fn set_state(&self, bytes: &[u8]) -> Result<()> {
        let s = GeneratorState::from_bytes(bytes)?;
        *self.0.lock() = s;
        Ok(())
    }
    /// Runs `f` with the state locked (one lock per op).
    pub fn with<R>(&self, f: impl FnOnce(&mut GeneratorState) -> R) -> R {
        f(&mut self.0.lock())
    }
    pub fn same(&self, other: &Generator) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// c10's `getNonDeterministicRandom()` for the CPU: 64 bits from the OS (torch.seed()
/// returns full 64-bit values too).
pub fn non_deterministic_seed() -> u64 {
    use std::io::Read;
    let mut a = [0u8; 8];
    let from_os = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut a));
    if from_os.is_ok() {
        u64::from_le_bytes(a)
    } else {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        // splitmix64 of time and pid: only a fallback where /dev/urandom is missing.
        let mut z = t ^ (u64::from(std::process::id()) << 32);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// `torch.default_generator`, seeded non-deterministically at first use.
pub fn default_generator() -> &'static Generator {
    static G: OnceLock<Generator> = OnceLock::new();
    G.get_or_init(|| Generator::new(non_deterministic_seed()))
}

/// The generator an op uses: the one passed, or the default.
pub fn or_default(g: Option<&Generator>) -> &Generator {
    crate::replay::random_used();
    g.unwrap_or_else(|| default_generator())
}

// ---- normal_fill: the vectorised Box-Muller of ATen's normal kernel ----------------------
//
// ATen's `normal_fill` draws all the uniforms first, then transforms them in blocks of 16
// (the first 8 values pair with the next 8); a length that is not a multiple of 16 then
// redraws the last 16 values and transforms them again. The draws are one sequential
// stream; the blocks are independent, so the CPU backend transforms them in parallel
// (and float32's with an AVX2 kernel of the same operations): `normal_fill_draws_*`
// below draw, `normal_block_*` transform one block, `normal_fill_*` do all of it on one
// thread (the reference).

/// `d.len()` draws of `uniform01_f32`, in order.
pub fn fill_uniform01_f32(g: &mut GeneratorState, d: &mut [f32]) {
    let mut buf = [0u32; 1024];
    for c in d.chunks_mut(buf.len()) {
        let b = &mut buf[..c.len()];
        g.fill_random(b);
        for (o, &u) in c.iter_mut().zip(b.iter()) {
            *o = (u & ((1 << 24) - 1)) as f32 * (1.0 / (1u32 << 24) as f32);
        }
    }
}

/// `d.len()` draws of `uniform01_f64` (two 32-bit draws each, the first the high half),
/// in order.
pub fn fill_uniform01_f64(g: &mut GeneratorState, d: &mut [f64]) {
    let mut buf = [0u32; 2048];
    for c in d.chunks_mut(buf.len() / 2) {
        let b = &mut buf[..2 * c.len()];
        g.fill_random(b);
        for (o, p) in c.iter_mut().zip(b.chunks_exact(2)) {
            let v = (u64::from(p[0]) << 32) | u64::from(p[1]);
            *o = (v & ((1u64 << 53) - 1)) as f64 * (1.0 / (1u64 << 53) as f64);
        }
    }
}

/// normal_fill's draws for `d` (`d.len() >= 16`): its uniforms, and the tail's 16
/// redrawn ones when the length is not a multiple of 16 (to be written over the last 16
/// values once the blocks are transformed).
pub fn normal_fill_draws_f32(g: &mut GeneratorState, d: &mut [f32]) -> Option<[f32; 16]> {
    fill_uniform01_f32(g, d);
    (!d.len().is_multiple_of(16)).then(|| {
        let mut t = [0f32; 16];
        fill_uniform01_f32(g, &mut t);
        t
    })
}

/// [`normal_fill_draws_f32`] for doubles.
pub fn normal_fill_draws_f64(g: &mut GeneratorState, d: &mut [f64]) -> Option<[f64; 16]> {
    fill_uniform01_f64(g, d);
    (!d.len().is_multiple_of(16)).then(|| {
        let mut t = [0f64; 16];
        fill_uniform01_f64(g, &mut t);
        t
    })
}

/// `normal_fill_16` for doubles (the scalar loop of DistributionTemplates.h): one block
/// of 16 uniforms made normal.
pub fn normal_block_f64(d: &mut [f64], mean: f64, std: f64) {
    for j in 0..8 {
        let u1 = 1.0 - d[j];
        let u2 = d[j + 8];
        let radius = (-2.0 * u1.ln()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u2;
        d[j] = (radius * theta.cos()).mul_add(std, mean);
        d[j + 8] = (radius * theta.sin()).mul_add(std, mean);
    }
}

/// `normal_fill`, all on this thread (callers guarantee `d.len() >= 16`).
pub fn normal_fill_f64(g: &mut GeneratorState, d: &mut [f64], mean: f64, std: f64) {
    let tail = normal_fill_draws_f64(g, d);
    for c in d.chunks_exact_mut(16) {
        normal_block_f64(c, mean, std);
    }
    if let Some(t) = tail {
        let n = d.len();
        d[n - 16..].copy_from_slice(&t);
        normal_block_f64(&mut d[n - 16..], mean, std);
    }
}

/// `normal_fill_AVX2`, which torch 2.15 runs for float32 on x86 CPUs with AVX2 (the normal
/// kernel is not built for AVX-512, so AVX-512 machines run this one too), all on this
/// thread and one lane at a time (the reference of the CPU backend's AVX2 kernel). Its
/// log and sincos are Cephes polynomials (avx_mathfun.h), reproduced lane by lane below.
pub fn normal_fill_f32(g: &mut GeneratorState, d: &mut [f32], mean: f32, std: f32) {
    let tail = normal_fill_draws_f32(g, d);
    for c in d.chunks_exact_mut(16) {
        normal_block_f32(c, mean, std);
    }
    if let Some(t) = tail {
        let n = d.len();
        d[n - 16..].copy_from_slice(&t);
        normal_block_f32(&mut d[n - 16..], mean, std);
    }
}

/// One block of [`normal_fill_f32`], one lane at a time. `mul_add` is exactly rounded
/// either way; without the FMA instruction it is a libm call per use (about 3x slower
/// here), so a block runs in an FMA build where the CPU has it.
pub fn normal_block_f32(d: &mut [f32], mean: f32, std: f32) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU supports FMA (checked just above).
        unsafe { normal_fill_16_f32_fma(d, mean, std) };
        return;
    }
    normal_fill_16_f32(d, mean, std);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn normal_fill_16_f32_fma(d: &mut [f32], mean: f32, std: f32) {
    normal_fill_16_f32(d, mean, std);
}

#[inline(always)]
fn normal_fill_16_f32(d: &mut [f32], mean: f32, std: f32) {
    let two_pi = (2.0 * std::f64::consts::PI) as f32;
    for j in 0..8 {
        let u1 = 1.0 - d[j];
        let u2 = d[j + 8];
        let radius = (-2.0 * cephes_logf(u1)).sqrt();
        let (s, c) = cephes_sincosf(two_pi * u2);
        d[j] = (radius * c).mul_add(std, mean);
        d[j + 8] = (radius * s).mul_add(std, mean);
    }
}

/// avx_mathfun.h's constants, as it writes them: double literals rounded to float.
#[allow(clippy::excessive_precision, clippy::approx_constant)]
pub(crate) mod cephes {
    pub const LOG_P: [f64; 9] = [
        7.0376836292E-2,
        -1.1514610310E-1,
        1.1676998740E-1,
        -1.2420140846E-1,
        1.4249322787E-1,
        -1.6668057665E-1,
        2.0000714765E-1,
        -2.4999993993E-1,
        3.3333331174E-1,
    ];
    pub const LOG_Q1: f32 = -2.12194440e-4_f64 as f32;
    pub const LOG_Q2: f32 = 0.693359375;
    pub const SQRTHF: f32 = 0.707106781186547524_f64 as f32;
    pub const DP: [f32; 3] = [
        -0.78515625,
        -2.4187564849853515625e-4_f64 as f32,
        -3.77489497744594108e-8_f64 as f32,
    ];
    pub const SIN: [f32; 3] = [
        -1.9515295891E-4_f64 as f32,
        8.3321608736E-3_f64 as f32,
        -1.6666654611E-1_f64 as f32,
    ];
    pub const COS: [f32; 3] = [
        2.443315711809948E-005_f64 as f32,
        -1.388731625493765E-003_f64 as f32,
        4.166664568298827E-002_f64 as f32,
    ];
    pub const FOPI: f32 = 1.27323954473516_f64 as f32;
}

/// `log256_ps` of avx_mathfun.h for one lane, with GCC's contractions (see module docs).
#[inline(always)]
#[allow(clippy::excessive_precision, clippy::approx_constant)] // the constants as avx_mathfun.h spells them
fn cephes_logf(x: f32) -> f32 {
    use cephes::{LOG_P as P, LOG_Q1 as Q1, LOG_Q2 as Q2, SQRTHF};
    let invalid = x <= 0.0 || x.is_nan();
    let x = x.max(f32::MIN_POSITIVE);
    let bits = x.to_bits();
    let mut e = ((bits >> 23) as i32 - 0x7f) as f32 + 1.0;
    let mut x = f32::from_bits((bits & !0x7f80_0000) | 0.5f32.to_bits());
    let small = x < SQRTHF;
    let tmp = if small { x } else { 0.0 };
    x -= 1.0;
    if small {
        e -= 1.0;
    }
    x += tmp;
    let z = x * x;
    let mut y = P[0] as f32;
    for &p in &P[1..] {
        y = y.mul_add(x, p as f32);
    }
    y *= x;
    y = y.mul_add(z, e * Q1);
    y = (-z).mul_add(0.5, y);
    let r = e.mul_add(Q2, x + y);
    if invalid { f32::NAN } else { r }
}

/// `sincos256_ps` of avx_mathfun.h for one lane: (sin, cos).
#[inline(always)]
#[allow(clippy::excessive_precision)] // the constants as avx_mathfun.h spells them
fn cephes_sincosf(x: f32) -> (f32, f32) {
    use cephes::{COS, DP, FOPI, SIN};
    let mut sign_sin = x.to_bits() & 0x8000_0000;
    let mut x = x.abs();
    // cvttps: truncation; out-of-range lanes give i32::MIN as the instruction does.
    let yf = x * FOPI;
    let mut j = if yf.is_finite() && yf < 2_147_483_648.0 {
        yf as i32
    } else {
        i32::MIN
    };
    j = j.wrapping_add(1) & !1;
    let y = j as f32;
    sign_sin ^= ((j & 4) as u32) << 29;
    let poly_sin = (j & 2) == 0;
    for dp in DP {
        x = y.mul_add(dp, x);
    }
    let sign_cos = ((!(j.wrapping_sub(2)) & 4) as u32) << 29;
    let z = x * x;
    let mut yc = COS[0].mul_add(z, COS[1]);
    yc = yc.mul_add(z, COS[2]);
    yc *= z;
    yc = yc.mul_add(z, -(z * 0.5));
    yc += 1.0;
    let mut ys = SIN[0].mul_add(z, SIN[1]);
    ys = ys.mul_add(z, SIN[2]);
    ys *= z;
    ys = ys.mul_add(x, x);
    let (ysin2, ysin1) = if poly_sin { (ys, 0.0) } else { (0.0, yc) };
    let ys_rest = ys - ysin2;
    let yc_rest = yc - ysin1;
    let s = ysin1 + ysin2;
    let c = yc_rest + ys_rest;
    (
        f32::from_bits(s.to_bits() ^ sign_sin),
        f32::from_bits(c.to_bits() ^ sign_cos),
    )
}

// ---- iteration order -------------------------------------------------------------------

/// The order in which ATen's TensorIterator visits the elements of one (output) tensor:
/// dims sorted by stride with its insertion sort (`reorder_dimensions`), innermost first.
/// Returns the logical dims from innermost to outermost.
pub fn iteration_perm(shape: &[usize], strides: &[usize]) -> Vec<usize> {
    let nd = shape.len();
    // perm[0] is the innermost dim; it starts as the reversed dims.
    let mut perm: Vec<usize> = (0..nd).rev().collect();
    let should_swap = |d0: usize, d1: usize| -> i32 {
        let (s0, s1) = (strides[d0], strides[d1]);
        if s0 == 0 || s1 == 0 {
            return 0;
        }
        if s0 < s1 {
            return -1;
        }
        if s0 > s1 {
            return 1;
        }
        if shape[d0] > shape[d1] {
            return 1;
        }
        0
    };
    for i in 1..nd {
        let mut dim1 = i;
        for dim0 in (0..i).rev() {
            let c = should_swap(perm[dim0], perm[dim1]);
            if c > 0 {
                perm.swap(dim0, dim1);
                dim1 = dim0;
            } else if c < 0 {
                break;
            }
        }
    }
    perm
}

/// The row-major (logical) index of each element in TensorIterator order.
pub fn iteration_order(shape: &[usize], strides: &[usize]) -> Vec<usize> {
    let n: usize = shape.iter().product();
    let perm = iteration_perm(shape, strides);
    let nd = shape.len();
    // Row-major strides of the logical index.
    let mut lstride = vec![1usize; nd];
    for d in (0..nd.saturating_sub(1)).rev() {
        lstride[d] = lstride[d + 1] * shape[d + 1];
    }
    let mut out = Vec::with_capacity(n);
    let mut counter = vec![0usize; nd];
    let mut idx = 0usize;
    for _ in 0..n {
        out.push(idx);
        for &d in &perm {
            counter[d] += 1;
            idx += lstride[d];
            if counter[d] < shape[d] {
                break;
            }
            idx -= lstride[d] * shape[d];
            counter[d] = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mt19937_default_seed_first_output() {
        let mut m = Mt19937::new(5489);
        assert_eq!(m.next_u32(), 3_499_211_612);
        // The 10000th output of std::mt19937 (C++11 [rand.predef]).
        let mut m = Mt19937::new(5489);
        let mut v = 0;
        for _ in 0..10_000 {
            v = m.next_u32();
        }
        assert_eq!(v, 4_123_659_995);
    }

    #[test]
    fn seed_zero_matches_torch_rand() {
        // torch.manual_seed(0); torch.rand(2) -> [0.49625659, 0.76822180]
        let mut g = GeneratorState::new(0);
        assert_eq!(g.uniform01_f32(), 0.496_256_6);
        assert_eq!(g.uniform01_f32(), 0.768_221_8);
        let mut g = GeneratorState::new(0);
        assert_eq!(g.uniform01_f64(), 0.970_053_001_806_553_1);
    }

    #[test]
    fn state_bytes_round_trip() {
        let mut g = GeneratorState::new(42);
        g.normal_f64(0.0, 1.0);
        let b = g.to_bytes();
        assert_eq!(b.len(), STATE_SIZE);
        let mut h = GeneratorState::from_bytes(&b).expect("valid blob");
        assert_eq!(h.to_bytes(), b);
        assert_eq!(
            h.normal_f64(0.0, 1.0).to_bits(),
            g.normal_f64(0.0, 1.0).to_bits()
        );
        assert_eq!(h.random(), g.random());
        assert!(GeneratorState::from_bytes(&b[..100]).is_err());
    }

    #[test]
    fn iteration_order_of_transposed_is_memory_order() {
        // A (2, 3) tensor stored transposed: strides (1, 2).
        assert_eq!(iteration_order(&[2, 3], &[1, 2]), vec![0, 3, 1, 4, 2, 5]);
        assert_eq!(iteration_order(&[2, 3], &[3, 1]), vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn cephes_matches_libm_closely() {
        for i in 1..1000 {
            let x = i as f32 / 1000.0;
            assert!((cephes_logf(x) - x.ln()).abs() < 1e-6);
            let (s, c) = cephes_sincosf(x * 6.0);
            assert!((s - (x * 6.0).sin()).abs() < 1e-6 && (c - (x * 6.0).cos()).abs() < 1e-6);
        }
    }
}
