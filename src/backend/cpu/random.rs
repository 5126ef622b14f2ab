//! Random kernels: ATen's CPU distribution kernels drawing from a generator's state
//! (`random::GeneratorState`, locked by the op) into buffers, in the order ATen draws:
//! uniform, normal, integers, randperm's shuffle, bernoulli, and multinomial's sampling.
//! Values are drawn in TensorIterator order; [`to_logical`] lays them out row-major.

use super::elementwise::for_each_chunk_of;
use super::strided::contiguous;
use super::topk::topk_indices;
use super::vmath::Level;
use crate::dtype::DType;
use crate::layout::Layout;
use crate::random::{self, GeneratorState};
use crate::storage::{Buffer, Element};
use std::cmp::Ordering;

/// Lays out values drawn in TensorIterator order as a row-major buffer of `x`'s shape.
pub fn to_logical(buf: Buffer, order: Option<&[usize]>) -> Buffer {
    let Some(order) = order else { return buf };
    crate::with_dtype!(buf.dtype(), T => {
        let src = T::slice(&buf);
        let mut out = vec![T::default(); src.len()];
        for (&pos, &v) in order.iter().zip(src) {
            out[pos] = v;
        }
        T::into_buffer(out)
    })
}

/// `n` uniform values in [from, to) (uniform_, rand); `None` for a dtype that is not
/// float. The 32- or 64-bit draws come in bulk (`Mt19937::fill_u32`) and are scaled a
/// chunk at a time by a loop built per vector level (the fused multiply-add is one
/// instruction there, a libm call in a baseline build): `uniform_f32`/`uniform_f64`'s
/// operations, so the generator's values, bit for bit.
pub fn uniform(
    g: &mut GeneratorState,
    n: usize,
    dtype: DType,
    from: f64,
    to: f64,
) -> Option<Buffer> {
    Some(match dtype {
        DType::F32 => {
            let mut v = vec![0f32; n];
            uniform_fill_f32(level(), g, &mut v, from as f32, to as f32);
            Buffer::F32(v.into())
        }
        DType::F64 => {
            let mut v = vec![0f64; n];
            uniform_fill_f64(level(), g, &mut v, from, to);
            Buffer::F64(v.into())
        }
        _ => return None,
    })
}

/// `d.len()` values of `g.uniform_f32(from, to)`, in order, at `level`.
pub fn uniform_fill_f32(level: Level, g: &mut GeneratorState, d: &mut [f32], from: f32, to: f32) {
    let mut buf = [0u32; 1024];
    for c in d.chunks_mut(buf.len()) {
        let b = &mut buf[..c.len()];
        g.fill_random(b);
        scale::f32_at(level, b, c, from, to);
    }
}

/// `d.len()` values of `g.uniform_f64(from, to)`, in order, at `level`.
pub fn uniform_fill_f64(level: Level, g: &mut GeneratorState, d: &mut [f64], from: f64, to: f64) {
    let mut buf = [0u32; 2048];
    for c in d.chunks_mut(buf.len() / 2) {
        let b = &mut buf[..2 * c.len()];
        g.fill_random(b);
        scale::f64_at(level, b, c, from, to);
    }
}

mod scale {
    //! The uniform values of raw draws, built per vector level.
    use super::Level;

    /// `uniform_real_distribution<float>(from, to)` of each draw (`uniform_f32`).
    #[inline(always)]
    fn f32_body(b: &[u32], d: &mut [f32], from: f32, to: f32) {
        let w = to - from;
        for (o, &u) in d.iter_mut().zip(b) {
            let x = (u & ((1 << 24) - 1)) as f32 * (1.0 / (1u32 << 24) as f32);
            let v = x.mul_add(w, from);
            *o = if v == to { from } else { v };
        }
    }

    /// `uniform_real_distribution<double>(from, to)` of each pair of draws
    /// (`uniform_f64`: the first draw the high half).
    #[inline(always)]
    fn f64_body(b: &[u32], d: &mut [f64], from: f64, to: f64) {
        let w = to - from;
        for (o, p) in d.iter_mut().zip(b.chunks_exact(2)) {
            let r = (u64::from(p[0]) << 32) | u64::from(p[1]);
            let x = (r & ((1u64 << 53) - 1)) as f64 * (1.0 / (1u64 << 53) as f64);
            let v = x.mul_add(w, from);
            *o = if v == to { from } else { v };
        }
    }

    macro_rules! at_levels {
        ($at:ident, $body:ident, $t:ty) => {
            pub fn $at(level: Level, b: &[u32], d: &mut [$t], from: $t, to: $t) {
                #[cfg(target_arch = "x86_64")]
                {
                    #[target_feature(enable = "avx512f,fma")]
                    fn wide(b: &[u32], d: &mut [$t], from: $t, to: $t) {
                        $body(b, d, from, to)
                    }
                    #[target_feature(enable = "avx2,fma")]
                    fn mid(b: &[u32], d: &mut [$t], from: $t, to: $t) {
                        $body(b, d, from, to)
                    }
                    match level.min(crate::backend::cpu::vmath::detected()) {
                        // SAFETY: the CPU has AVX-512F and FMA (the level is capped by
                        // what it has).
                        Level::Avx512 => return unsafe { wide(b, d, from, to) },
                        // SAFETY: the CPU has AVX2 and FMA (as above).
                        Level::Avx2 => return unsafe { mid(b, d, from, to) },
                        Level::Baseline => {}
                    }
                }
                let _ = level;
                $body(b, d, from, to)
            }
        };
    }
    at_levels!(f32_at, f32_body, f32);
    at_levels!(f64_at, f64_body, f64);
}

/// `n` normal values (normal_, randn): ATen's vectorised fill for a contiguous output of
/// 16 elements or more, else the scalar Box-Muller with its cached second sample; `None`
/// for a dtype that is not float.
///
/// The fill draws its uniforms in one sequential pass (bulk mt19937, see
/// `Mt19937::fill_u32`), then transforms its blocks of 16, which are independent, in
/// fixed chunks across the pool (float32's with the AVX2 kernel below): each block is
/// the same operations whoever runs it, so the values are torch's bits at every thread
/// count and level.
pub fn normal(
    g: &mut GeneratorState,
    n: usize,
    contiguous: bool,
    dtype: DType,
    mean: f64,
    std: f64,
) -> Option<Buffer> {
    let vectorised = contiguous && n >= 16;
    Some(match dtype {
        DType::F32 => {
            let mut v = vec![0f32; n];
            if vectorised {
                normal_fill_f32(level(), g, &mut v, mean as f32, std as f32);
            } else {
                v.iter_mut()
                    .for_each(|x| *x = g.normal_f64(mean, std) as f32);
            }
            Buffer::F32(v.into())
        }
        DType::F64 => {
            let mut v = vec![0f64; n];
            if vectorised {
                normal_fill_f64(g, &mut v, mean, std);
            } else {
                v.iter_mut().for_each(|x| *x = g.normal_f64(mean, std));
            }
            Buffer::F64(v.into())
        }
        _ => return None,
    })
}

/// Blocks of 16 per parallel chunk (2048 values: about a microsecond of work).
const NORMAL_CHUNK: usize = 16 * 128;

/// `random::normal_fill_f32` with its blocks transformed across the pool at `level`
/// (`d.len() >= 16`).
pub fn normal_fill_f32(level: Level, g: &mut GeneratorState, d: &mut [f32], mean: f32, std: f32) {
    let tail = random::normal_fill_draws_f32(g, d);
    let whole = d.len() / 16 * 16;
    let blocks = |_: usize, c: &mut [f32]| normal_blocks_f32(level, c, mean, std);
    if whole >= PAR_MIN_NORMAL && crate::runtime::intra_op_parallel() {
        for_each_chunk_of(&mut d[..whole], NORMAL_CHUNK, &blocks);
    } else {
        blocks(0, &mut d[..whole]);
    }
    if let Some(t) = tail {
        let n = d.len();
        d[n - 16..].copy_from_slice(&t);
        normal_blocks_f32(level, &mut d[n - 16..], mean, std);
    }
}

/// `random::normal_fill_f64` with its blocks transformed across the pool.
pub fn normal_fill_f64(g: &mut GeneratorState, d: &mut [f64], mean: f64, std: f64) {
    let tail = random::normal_fill_draws_f64(g, d);
    let whole = d.len() / 16 * 16;
    let blocks = |_: usize, c: &mut [f64]| {
        for b in c.chunks_exact_mut(16) {
            random::normal_block_f64(b, mean, std);
        }
    };
    if whole >= PAR_MIN_NORMAL && crate::runtime::intra_op_parallel() {
        for_each_chunk_of(&mut d[..whole], NORMAL_CHUNK, &blocks);
    } else {
        blocks(0, &mut d[..whole]);
    }
    if let Some(t) = tail {
        let n = d.len();
        d[n - 16..].copy_from_slice(&t);
        random::normal_block_f64(&mut d[n - 16..], mean, std);
    }
}

/// Values from which a normal fill splits its blocks across the pool (the transform
/// costs about a nanosecond a value with AVX2, several without).
const PAR_MIN_NORMAL: usize = 1 << 13;

/// The vector level the random kernels use (`vmath`'s: the CPU's, capped by
/// `RGRAD_VMATH_LEVEL`).
fn level() -> Level {
    super::vmath::level()
}

/// Every block of 16 of `d` (a multiple of 16 long) made normal: ATen's
/// `normal_fill_16_AVX2`, eight lanes at a time where the CPU has AVX2 and FMA (the
/// AVX-512 level runs it too, as torch does), else `random::normal_block_f32` one lane at
/// a time. Both are the same operations in the same order (avx_mathfun.h's, with GCC's
/// contractions), so they give the same bits.
pub fn normal_blocks_f32(level: Level, d: &mut [f32], mean: f32, std: f32) {
    #[cfg(target_arch = "x86_64")]
    if level.min(super::vmath::detected()) >= Level::Avx2 {
        // SAFETY: the CPU has AVX2 and FMA (the level is capped by what it has).
        unsafe { avx2::normal_blocks(d, mean, std) };
        return;
    }
    let _ = level;
    for b in d.chunks_exact_mut(16) {
        random::normal_block_f32(b, mean, std);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! avx_mathfun.h's `log256_ps` and `sincos256_ps` and ATen's `normal_fill_16_AVX2`,
    //! instruction for instruction as `random::cephes_logf` / `cephes_sincosf` write
    //! them lane by lane (a `mul_add` there is an FMA here).
    use crate::random::cephes::*;
    use std::arch::x86_64::*;

    #[inline(always)]
    fn ps(v: f32) -> __m256 {
        // SAFETY: AVX is enabled in every caller (they are `avx2,fma` functions).
        unsafe { _mm256_set1_ps(v) }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn log(x: __m256) -> __m256 {
        let zero = _mm256_setzero_ps();
        let one = ps(1.0);
        // x <= 0, or NaN: NaN (as the lane-by-lane form gives)
        let invalid = _mm256_or_ps(
            _mm256_cmp_ps::<_CMP_LE_OQ>(x, zero),
            _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x),
        );
        let x = _mm256_max_ps(x, ps(f32::MIN_POSITIVE));
        let bits = _mm256_castps_si256(x);
        let e = _mm256_sub_epi32(_mm256_srli_epi32::<23>(bits), _mm256_set1_epi32(0x7f));
        let mut e = _mm256_add_ps(_mm256_cvtepi32_ps(e), one);
        let m = _mm256_and_si256(bits, _mm256_set1_epi32(!0x7f80_0000));
        let mut x = _mm256_or_ps(_mm256_castsi256_ps(m), ps(0.5));
        let small = _mm256_cmp_ps::<_CMP_LT_OQ>(x, ps(SQRTHF));
        let tmp = _mm256_and_ps(x, small);
        x = _mm256_sub_ps(x, one);
        e = _mm256_sub_ps(e, _mm256_and_ps(one, small));
        x = _mm256_add_ps(x, tmp);
        let z = _mm256_mul_ps(x, x);
        let mut y = ps(LOG_P[0] as f32);
        for &p in &LOG_P[1..] {
            y = _mm256_fmadd_ps(y, x, ps(p as f32));
        }
        y = _mm256_mul_ps(y, x);
        y = _mm256_fmadd_ps(y, z, _mm256_mul_ps(e, ps(LOG_Q1)));
        // (-z) * 0.5 + y
        y = _mm256_fnmadd_ps(z, ps(0.5), y);
        let r = _mm256_fmadd_ps(e, ps(LOG_Q2), _mm256_add_ps(x, y));
        _mm256_blendv_ps(r, ps(f32::NAN), invalid)
    }

    /// (sin, cos)
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn sincos(x: __m256) -> (__m256, __m256) {
        let sign_bit = _mm256_set1_epi32(i32::MIN);
        let xi = _mm256_castps_si256(x);
        let mut sign_sin = _mm256_and_si256(xi, sign_bit);
        let mut x = _mm256_castsi256_ps(_mm256_andnot_si256(sign_bit, xi));
        // truncation; out-of-range lanes give i32::MIN, as the lane-by-lane form
        let mut j = _mm256_cvttps_epi32(_mm256_mul_ps(x, ps(FOPI)));
        j = _mm256_and_si256(
            _mm256_add_epi32(j, _mm256_set1_epi32(1)),
            _mm256_set1_epi32(!1),
        );
        let y = _mm256_cvtepi32_ps(j);
        let four = _mm256_set1_epi32(4);
        sign_sin = _mm256_xor_si256(sign_sin, _mm256_slli_epi32::<29>(_mm256_and_si256(j, four)));
        let poly_sin = _mm256_castsi256_ps(_mm256_cmpeq_epi32(
            _mm256_and_si256(j, _mm256_set1_epi32(2)),
            _mm256_setzero_si256(),
        ));
        for dp in DP {
            x = _mm256_fmadd_ps(y, ps(dp), x);
        }
        let sign_cos = _mm256_slli_epi32::<29>(_mm256_andnot_si256(
            _mm256_sub_epi32(j, _mm256_set1_epi32(2)),
            four,
        ));
        let z = _mm256_mul_ps(x, x);
        let mut yc = _mm256_fmadd_ps(ps(COS[0]), z, ps(COS[1]));
        yc = _mm256_fmadd_ps(yc, z, ps(COS[2]));
        yc = _mm256_mul_ps(yc, z);
        let half_z = _mm256_mul_ps(z, ps(0.5));
        yc = _mm256_fmadd_ps(yc, z, _mm256_xor_ps(half_z, ps(-0.0)));
        yc = _mm256_add_ps(yc, ps(1.0));
        let mut ys = _mm256_fmadd_ps(ps(SIN[0]), z, ps(SIN[1]));
        ys = _mm256_fmadd_ps(ys, z, ps(SIN[2]));
        ys = _mm256_mul_ps(ys, z);
        ys = _mm256_fmadd_ps(ys, x, x);
        let ysin2 = _mm256_and_ps(poly_sin, ys);
        let ysin1 = _mm256_andnot_ps(poly_sin, yc);
        let ys_rest = _mm256_sub_ps(ys, ysin2);
        let yc_rest = _mm256_sub_ps(yc, ysin1);
        let s = _mm256_add_ps(ysin1, ysin2);
        let c = _mm256_add_ps(yc_rest, ys_rest);
        (
            _mm256_xor_ps(s, _mm256_castsi256_ps(sign_sin)),
            _mm256_xor_ps(c, _mm256_castsi256_ps(sign_cos)),
        )
    }

    /// Every block of 16 of `d` (whole blocks only; a shorter rest is left alone).
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn normal_blocks(d: &mut [f32], mean: f32, std: f32) {
        let two_pi = ps((2.0 * std::f64::consts::PI) as f32);
        let (mean, std) = (ps(mean), ps(std));
        for c in d.chunks_exact_mut(16) {
            let p = c.as_mut_ptr();
            // SAFETY: `c` holds 16 floats: [p, p + 8) and [p + 8, p + 16) are in it.
            unsafe {
                let u1 = _mm256_sub_ps(ps(1.0), _mm256_loadu_ps(p));
                let u2 = _mm256_loadu_ps(p.add(8));
                let radius = _mm256_sqrt_ps(_mm256_mul_ps(ps(-2.0), log(u1)));
                let (s, c) = sincos(_mm256_mul_ps(two_pi, u2));
                _mm256_storeu_ps(p, _mm256_fmadd_ps(_mm256_mul_ps(radius, c), std, mean));
                _mm256_storeu_ps(
                    p.add(8),
                    _mm256_fmadd_ps(_mm256_mul_ps(radius, s), std, mean),
                );
            }
        }
    }
}

/// `n` integers in [from, to) (random_, randint), the bounds already checked: 32-bit
/// draws, or 64-bit ones for a range of 2^32 or more.
pub fn random(g: &mut GeneratorState, n: usize, dtype: DType, from: i64, to: i64) -> Buffer {
    let range = to.wrapping_sub(from) as u64;
    let wide = range >= 1 << 32 && dtype != DType::Bool;
    if let Ok(d) = u32::try_from(range) {
        // 32-bit draws in bulk, each reduced by one multiply instead of a 64-bit
        // division (`Remainder`)
        let rem = Remainder::new(d);
        let value = |v: u32| u64::from(rem.of(v)).wrapping_add(from as u64) as i64;
        return match dtype {
            DType::I64 => Buffer::I64(draws32(g, n, value).into()),
            DType::F32 => Buffer::F32(draws32(g, n, |v| value(v) as f32).into()),
            DType::F64 => Buffer::F64(draws32(g, n, |v| value(v) as f64).into()),
            DType::Bool => Buffer::Bool(draws32(g, n, |v| value(v) != 0).into()),
        };
    }
    let mut draw = || -> i64 {
        let v = if wide {
            g.random64()
        } else {
            u64::from(g.random())
        };
        (v % range).wrapping_add(from as u64) as i64
    };
    match dtype {
        DType::I64 => Buffer::I64((0..n).map(|_| draw()).collect()),
        DType::F32 => Buffer::F32((0..n).map(|_| draw() as f32).collect()),
        DType::F64 => Buffer::F64((0..n).map(|_| draw() as f64).collect()),
        DType::Bool => Buffer::Bool((0..n).map(|_| draw() != 0).collect()),
    }
}

/// `v % d` for 32-bit `v` by one multiply (Lemire, Kaser and Kurz, "Faster remainder by
/// direct computation", 2019: exact for every 32-bit `v` and `d` with a 64-bit `m`).
#[derive(Clone, Copy)]
struct Remainder {
    d: u32,
    m: u64,
}

impl Remainder {
    fn new(d: u32) -> Remainder {
        // d = 1 gives m = 0, so every remainder 0 (d = 0 too, where `%` would panic)
        let m = (u64::MAX / u64::from(d.max(1))).wrapping_add(1);
        Remainder { d, m }
    }
    #[inline(always)]
    fn of(self, v: u32) -> u32 {
        ((u128::from(self.m.wrapping_mul(u64::from(v))) * u128::from(self.d)) >> 64) as u32
    }
}

/// `n` values `f(draw)` of 32-bit draws, in the generator's order.
fn draws32<T: Default + Copy>(g: &mut GeneratorState, n: usize, f: impl Fn(u32) -> T) -> Vec<T> {
    let mut out = vec![T::default(); n];
    let mut buf = [0u32; 1024];
    for c in out.chunks_mut(buf.len()) {
        let b = &mut buf[..c.len()];
        g.fill_random(b);
        for (o, &v) in c.iter_mut().zip(b.iter()) {
            *o = f(v);
        }
    }
    out
}

/// One value per element from a uniform double `u` in [0, 1) (ATen's
/// `uniform_real_distribution<double>`, then a transformation computed in double), cast
/// to `dtype` (an integer dtype takes the truncated value, bool its non-zeroness).
fn from_uniform(g: &mut GeneratorState, n: usize, dtype: DType, f: impl Fn(f64) -> f64) -> Buffer {
    let mut draw = || f(g.uniform01_f64());
    match dtype {
        DType::F32 => Buffer::F32((0..n).map(|_| draw() as f32).collect()),
        DType::F64 => Buffer::F64((0..n).map(|_| draw()).collect()),
        DType::I64 => Buffer::I64((0..n).map(|_| draw() as i64).collect()),
        DType::Bool => Buffer::Bool((0..n).map(|_| draw() != 0.0).collect()),
    }
}

/// exponential_(lambda): ATen's CPU transformation `-1/lambda * log1p(-u)`.
pub fn exponential(g: &mut GeneratorState, n: usize, dtype: DType, lambda: f64) -> Buffer {
    from_uniform(g, n, dtype, |u| (-1.0 / lambda) * (-u).ln_1p())
}

/// cauchy_(median, sigma): `median + sigma * tan(pi * (u - 0.5))`, the multiply-add fused
/// as the compiler fuses ATen's (its CPU kernels are built for FMA machines).
pub fn cauchy(g: &mut GeneratorState, n: usize, dtype: DType, median: f64, sigma: f64) -> Buffer {
    from_uniform(g, n, dtype, |u| {
        sigma.mul_add((std::f64::consts::PI * (u - 0.5)).tan(), median)
    })
}

/// geometric_(p): `ceil(log(u) / log1p(-p))`.
pub fn geometric(g: &mut GeneratorState, n: usize, dtype: DType, p: f64) -> Buffer {
    from_uniform(g, n, dtype, |u| (u.ln() / (-p).ln_1p()).ceil())
}

/// log_normal_(mean, std): `exp` of `normal_distribution<double>(mean, std)` (with the
/// generator's cached second sample), element by element.
pub fn log_normal(g: &mut GeneratorState, n: usize, dtype: DType, mean: f64, std: f64) -> Buffer {
    let v = (0..n).map(|_| g.normal_f64(mean, std).exp());
    match dtype {
        DType::F32 => Buffer::F32(v.map(|x| x as f32).collect()),
        _ => Buffer::F64(v.collect()),
    }
}

/// random_() without bounds: ATen's `uniform_int_distribution<T>`: a 64-bit draw for
/// double and int64, else a 32-bit one, reduced to the integers T represents exactly
/// (`% (2^digits + 1)` for floats, `% 2^63` for int64, the low bit for bool).
pub fn random_full(g: &mut GeneratorState, n: usize, dtype: DType) -> Buffer {
    match dtype {
        DType::F32 => Buffer::F32(
            (0..n)
                .map(|_| (u64::from(g.random()) % ((1u64 << 24) + 1)) as f32)
                .collect(),
        ),
        DType::F64 => Buffer::F64(
            (0..n)
                .map(|_| (g.random64() % ((1u64 << 53) + 1)) as f64)
                .collect(),
        ),
        DType::I64 => Buffer::I64(
            (0..n)
                .map(|_| (g.random64() % (i64::MAX as u64 + 1)) as i64)
                .collect(),
        ),
        DType::Bool => Buffer::Bool((0..n).map(|_| g.random() & 1 == 1).collect()),
    }
}

/// ATen's `randperm_cpu`: a Fisher-Yates shuffle of 0..len with 32-bit draws, or the
/// inside-out variant with 64-bit draws for huge lengths.
pub fn randperm(g: &mut GeneratorState, len: usize) -> Vec<i64> {
    let n = len as i64;
    let mut r: Vec<i64> = Vec::with_capacity(len);
    if n < i64::from(u32::MAX / 20) {
        r.extend(0..n);
        for i in 0..len.saturating_sub(1) {
            let z = (u64::from(g.random()) % (len - i) as u64) as usize;
            r.swap(i, z + i);
        }
    } else {
        r.resize(len, 0);
        for i in 0..len {
            let z = (g.random64() % (i as u64 + 1)) as usize;
            r[i] = r[z];
            r[z] = i as i64;
        }
    }
    r
}

/// Integers as a buffer of `dtype`.
pub fn from_i64(dtype: DType, r: Vec<i64>) -> Buffer {
    match dtype {
        DType::I64 => Buffer::I64(r.into()),
        DType::F32 => Buffer::F32(r.iter().map(|&v| v as f32).collect()),
        DType::F64 => Buffer::F64(r.iter().map(|&v| v as f64).collect()),
        DType::Bool => Buffer::Bool(r.iter().map(|&v| v != 0).collect()),
    }
}

fn from_bool(dtype: DType, v: Vec<bool>) -> Buffer {
    match dtype {
        DType::Bool => Buffer::Bool(v.into()),
        DType::I64 => Buffer::I64(v.into_iter().map(i64::from).collect()),
        DType::F32 => Buffer::F32(v.into_iter().map(|b| f32::from(u8::from(b))).collect()),
        DType::F64 => Buffer::F64(v.into_iter().map(|b| f64::from(u8::from(b))).collect()),
    }
}

/// bernoulli_ with a number `p`: one uniform double per element, `u < p`.
pub fn bernoulli_scalar(g: &mut GeneratorState, n: usize, p: f64, dtype: DType) -> Buffer {
    from_bool(dtype, (0..n).map(|_| g.uniform01_f64() < p).collect())
}

/// bernoulli_ with a tensor of probabilities `pv` (row-major, of dtype `pd`; element `k`
/// drawn is the output's `order[k]`): `u < p` with a float uniform for float32 p and a
/// double uniform for float64 p, as ATen does.
pub fn bernoulli_tensor(
    g: &mut GeneratorState,
    n: usize,
    pv: &[f64],
    pd: DType,
    order: Option<&[usize]>,
    dtype: DType,
) -> Buffer {
    let at = |k: usize| order.map_or(k, |o| o[k]);
    let v: Vec<bool> = if pd == DType::F64 {
        (0..n).map(|k| g.uniform01_f64() < pv[at(k)]).collect()
    } else {
        (0..n)
            .map(|k| g.uniform01_f32() < pv[at(k)] as f32)
            .collect()
    };
    from_bool(dtype, v)
}

/// A layout's values as f64, in row-major order.
pub fn values_f64(buf: &Buffer, layout: &Layout) -> Vec<f64> {
    crate::with_dtype!(buf.dtype(), T => contiguous(T::slice(buf), layout).iter().map(|v| v.to_f64()).collect())
}

/// Multinomial without replacement's keys `p / q` with q ~ Exp(1) (ATen's
/// `empty_like(p).exponential_(1)`: one uniform double per element, in p's TensorIterator
/// `order`), each computed in p's `dtype`; `pv` is p row-major.
pub fn exponential_keys(
    g: &mut GeneratorState,
    pv: &[f64],
    dtype: DType,
    order: Option<&[usize]>,
) -> Vec<f64> {
    let mut keys = vec![0f64; pv.len()];
    for j in 0..pv.len() {
        let e = -(-g.uniform01_f64()).ln_1p();
        let pos = order.map_or(j, |o| o[j]);
        // p / q in p's dtype.
        keys[pos] = if dtype == DType::F32 {
            f64::from(pv[pos] as f32 / e as f32)
        } else {
            pv[pos] / e
        };
    }
    keys
}

/// The `k` largest keys of each row of `n_cat` (argmax for one, else ATen's topk order)
/// into `out`, `k` per row.
pub fn top_k_rows(keys: &[f64], n_cat: usize, k: usize, out: &mut [i64]) {
    for (ks, o) in keys.chunks(n_cat).zip(out.chunks_mut(k)) {
        if k == 1 {
            // argmax: the first maximum (NaN counts as the maximum).
            let mut best = 0;
            for (i, &x) in ks.iter().enumerate() {
                if x.is_nan() || x > ks[best] {
                    best = i;
                    if x.is_nan() {
                        break;
                    }
                }
            }
            o[0] = best as i64;
        } else {
            for (dst, i) in o.iter_mut().zip(topk_indices(ks, k)) {
                *dst = i as i64;
            }
        }
    }
}

/// Why a row of probabilities is no distribution (found by multinomial with replacement
/// as it goes, as ATen's kernel checks each row before drawing its samples).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadDistribution {
    /// An entry below 0, or NaN.
    Negative,
    /// An infinite entry.
    NotFinite,
    /// The row sums to 0 or less.
    SumNotPositive,
}

/// Multinomial with replacement: for each row of `n_cat` probabilities (`pv` row-major, of
/// `dtype`), `k` samples into `out`, each a binary search of the normalised cumulative
/// sums for one uniform double. A bad row stops it there, the rows before it drawn.
pub fn multinomial_with_replacement(
    g: &mut GeneratorState,
    pv: &[f64],
    dtype: DType,
    n_cat: usize,
    k: usize,
    out: &mut [i64],
) -> Result<(), BadDistribution> {
    for (row, o) in pv.chunks(n_cat).zip(out.chunks_mut(k)) {
        let cum = cumulative(dtype, row)?;
        for dst in o.iter_mut() {
            let u = g.uniform01_f64();
            let (mut left, mut right) = (0usize, n_cat);
            while right > left {
                let mid = left + (right - left) / 2;
                if cum[mid] < u {
                    left = mid + 1;
                } else {
                    right = mid;
                }
            }
            *dst = left as i64;
        }
    }
    Ok(())
}

/// A row's sum accumulated in its dtype, as ATen's `self.sum(1) == 0` sees it (only its
/// zero-ness matters).
pub fn sum_in(dtype: DType, row: &[f64]) -> f64 {
    if dtype == DType::F32 {
        f64::from(row.iter().map(|&v| v as f32).sum::<f32>())
    } else {
        row.iter().sum()
    }
}

/// The normalised cumulative distribution of one row, summed and divided in the row's
/// dtype; its last entry is set to 1 (multinomial_with_replacement_apply).
fn cumulative(dtype: DType, row: &[f64]) -> Result<Vec<f64>, BadDistribution> {
    fn run<T: Element + std::ops::AddAssign + std::ops::Div<Output = T>>(
        row: &[f64],
    ) -> Result<Vec<f64>, BadDistribution> {
        let mut sum = T::from_f64(0.0);
        let mut cum = Vec::with_capacity(row.len());
        for &v in row {
            // `!(v >= 0)` as ATen writes it: NaN is refused here too.
            if !matches!(
                v.partial_cmp(&0.0),
                Some(Ordering::Greater | Ordering::Equal)
            ) {
                return Err(BadDistribution::Negative);
            }
            if !v.is_finite() {
                return Err(BadDistribution::NotFinite);
            }
            sum += T::from_f64(v);
            cum.push(sum);
        }
        if sum.to_f64().partial_cmp(&0.0) != Some(Ordering::Greater) {
            return Err(BadDistribution::SumNotPositive);
        }
        let mut out: Vec<f64> = cum.into_iter().map(|c| (c / sum).to_f64()).collect();
        if let Some(last) = out.last_mut() {
            *last = 1.0;
        }
        Ok(out)
    }
    if dtype == DType::F32 {
        run::<f32>(row)
    } else {
        run::<f64>(row)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::backend::cpu::vmath;

    /// Every level this CPU runs (each forced in turn).
    fn levels() -> Vec<Level> {
        vmath::supported()
    }

    #[test]
    fn bulk_draws_are_the_single_draws_and_leave_the_same_state() {
        // from a fresh state, and after odd numbers of draws (across regenerations)
        for skip in [0usize, 1, 5, 623, 624, 625, 1000] {
            for len in [0usize, 1, 7, 623, 624, 625, 3000] {
                let mut a = GeneratorState::new(skip as u64 + 11);
                for _ in 0..skip {
                    a.random();
                }
                let mut b = a.clone();
                let one: Vec<u32> = (0..len).map(|_| a.random()).collect();
                let mut bulk = vec![0u32; len];
                b.fill_random(&mut bulk);
                assert_eq!(one, bulk, "skip {skip} len {len}");
                assert_eq!(a.to_bytes(), b.to_bytes());
            }
        }
    }

    #[test]
    fn uniform_fills_are_the_generators_values_at_every_level() {
        for level in levels() {
            for (n, from, to) in [
                (0usize, 0.0, 1.0),
                (5, -2.5, 7.25),
                (3001, 3.0, 3.5),
                (1 << 15, 0.0, 1.0),
            ] {
                let mut g = GeneratorState::new(7);
                let mut h = g.clone();
                let mut d = vec![0f32; n];
                uniform_fill_f32(level, &mut g, &mut d, from as f32, to as f32);
                let want: Vec<u32> = (0..n)
                    .map(|_| h.uniform_f32(from as f32, to as f32).to_bits())
                    .collect();
                assert_eq!(
                    d.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    want,
                    "{level:?}"
                );
                let mut d = vec![0f64; n];
                uniform_fill_f64(level, &mut g, &mut d, from, to);
                let want: Vec<u64> = (0..n).map(|_| h.uniform_f64(from, to).to_bits()).collect();
                assert_eq!(
                    d.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    want,
                    "{level:?}"
                );
                assert_eq!(g.to_bytes(), h.to_bytes());
            }
        }
    }

    #[test]
    fn normal_blocks_give_the_lane_by_lane_bits_at_every_level() {
        // uniforms as drawn, plus the edges of both polynomials' reductions: 0 and 1
        // (log of 1 - u), values around sqrt(1/2), multiples of pi/4 (sincos's octants)
        let mut g = GeneratorState::new(3);
        let mut u = vec![0f32; 16 * 4096];
        random::fill_uniform01_f32(&mut g, &mut u);
        let edges = [
            0.0f32,
            1.0 - f32::EPSILON / 2.0,
            1.0,
            0.5,
            1.0 - 0.707_106_77,
            1.0 - std::f32::consts::FRAC_1_SQRT_2,
            0.125,
            0.25,
            0.375,
            0.625,
            0.75,
            0.875,
            1e-7,
            0.999_999,
            0.3,
            0.7,
        ];
        for (i, &e) in edges.iter().enumerate() {
            for j in 0..16 {
                u[i * 16 + j] = edges[(i + j) % edges.len()];
            }
            u[16 * 100 + i] = e;
        }
        for (mean, std) in [(0.0f32, 1.0f32), (0.5, 3.0), (-2.0, 0.1)] {
            let mut want = u.clone();
            for b in want.chunks_exact_mut(16) {
                random::normal_block_f32(b, mean, std);
            }
            for level in levels() {
                let mut got = u.clone();
                normal_blocks_f32(level, &mut got, mean, std);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{level:?}");
            }
        }
    }

    #[test]
    fn parallel_normal_fills_are_the_serial_fills() {
        // below and above the split, whole blocks and a redrawn tail
        for n in [16usize, 17, 31, 1000, PAR_MIN_NORMAL + 5, 100_003] {
            for level in levels() {
                let mut g = GeneratorState::new(n as u64);
                let mut h = g.clone();
                let mut got = vec![0f32; n];
                normal_fill_f32(level, &mut g, &mut got, 0.5, 2.0);
                let mut want = vec![0f32; n];
                random::normal_fill_f32(&mut h, &mut want, 0.5, 2.0);
                assert!(
                    got.iter()
                        .zip(&want)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{n} {level:?}"
                );
                assert_eq!(g.to_bytes(), h.to_bytes());
            }
            let mut g = GeneratorState::new(n as u64);
            let mut h = g.clone();
            let mut got = vec![0f64; n];
            normal_fill_f64(&mut g, &mut got, 0.5, 2.0);
            let mut want = vec![0f64; n];
            random::normal_fill_f64(&mut h, &mut want, 0.5, 2.0);
            assert!(
                got.iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{n}"
            );
        }
    }

    #[test]
    fn integers_are_each_draw_modulo_the_range_plus_from() {
        // the bulk path (Lemire's remainder) against one draw and one `%` at a time, for
        // ranges from 1 to 2^32 - 1, every dtype, and a 64-bit range (two draws each)
        let ranges: [(i64, i64); 9] = [
            (0, 1),
            (0, 2),
            (-3, 7),
            (5, 6 + 1000),
            (0, 1 << 31),
            (-(1 << 31), (1 << 31) - 1),
            (0, (1 << 32) - 1),
            (i64::MIN, i64::MIN + 1_000_003),
            (0, 1 << 40),
        ];
        for (k, &(from, to)) in ranges.iter().enumerate() {
            for dtype in [DType::I64, DType::F32, DType::F64, DType::Bool] {
                if dtype == DType::Bool && (from, to) != (0, 2) {
                    continue;
                }
                let n = 3000 + k;
                let mut g = GeneratorState::new(k as u64 + 11);
                let mut h = g.clone();
                let got = random(&mut g, n, dtype, from, to);
                let range = to.wrapping_sub(from) as u64;
                let want: Vec<i64> = (0..n)
                    .map(|_| {
                        let v = if range >= 1 << 32 {
                            h.random64()
                        } else {
                            u64::from(h.random())
                        };
                        (v % range).wrapping_add(from as u64) as i64
                    })
                    .collect();
                let as_i64: Vec<i64> = match &got {
                    Buffer::I64(v) => v.to_vec(),
                    Buffer::F32(v) => {
                        assert!(v.iter().zip(&want).all(|(a, &b)| *a == b as f32));
                        want.clone()
                    }
                    Buffer::F64(v) => {
                        assert!(v.iter().zip(&want).all(|(a, &b)| *a == b as f64));
                        want.clone()
                    }
                    Buffer::Bool(v) => v.iter().map(|&b| i64::from(b)).collect(),
                    _ => panic!("unexpected buffer"),
                };
                assert_eq!(as_i64, want, "[{from}, {to}) {dtype:?}");
                assert_eq!(g.to_bytes(), h.to_bytes(), "the generator moved as far");
            }
        }
        // and the remainder itself, exhaustively over the low and high values of v
        for d in [
            1u32,
            2,
            3,
            7,
            10,
            641,
            65_537,
            1 << 31,
            u32::MAX - 1,
            u32::MAX,
        ] {
            let rem = Remainder::new(d);
            for v in (0..100_000u32).chain(u32::MAX - 100_000..=u32::MAX) {
                assert_eq!(rem.of(v), v % d, "{v} % {d}");
            }
        }
    }
}
