//! Float GEMM (f32, f64): `C = A·B` or `C += A·B` on strided operands, B packed into
//! panels, an MR x NR register tile per instruction-set level (AVX-512, AVX2+FMA,
//! portable), the output split across threads (docs/gemm.md has the design and the
//! measurements that chose it).
//!
//! Every element of C is one chain of multiply-adds in the order of k:
//! `c = fma(a[i][k-1], b[k-1][j], ... fma(a[i][0], b[0][j], c0))`, with `c0` zero, C's
//! old value when accumulating, or a start matrix's (addmm's bias, read in place). The k blocks continue the chain (a block loads
//! the previous block's partial sums back into the registers), tiles and thread pieces
//! only choose which elements are computed where, so the bits do not depend on the
//! thread count, the blocking, the tile shape or the level, AVX-512 and AVX2 alike.
//! The portable level rounds the product and the sum separately (a multiply, then an
//! add: a CPU without FMA would otherwise call libm's software fma per element), so its
//! bits differ from the two FMA levels in the last place. Products run as dot products
//! along a contiguous k (`dot`: matrix-vector products, and thin products whose
//! operands are both contiguous along k, such as a small batch times Wᵀ) are the one
//! exception: they keep 64 bytes of partial chains and then the partial sums
//! pairwise: a fixed order, the same at both FMA levels and for every thread count,
//! but not the GEMM's. Which products those are depends on the level in one band: a
//! thin side of 13-32 runs as `dot` at AVX-512 and as tiles at AVX2 ([`DOT_MAX_AVX2`]),
//! so there the two levels' bits differ.
//!
//! Forcing a level: `RGRAD_GEMM_LEVEL` (`baseline`, `avx2`, `avx512`), read once, caps
//! the level (never above what the CPU has); tests call [`gemm_at`] with each level.
//! A variable of its own, not vmath's: GEMM's levels do not all give the same bits,
//! so a user chasing a difference wants to move one without the other.

use super::vmath::Level;
use std::sync::atomic::{AtomicU8, Ordering};

/// The float element types.
pub(crate) trait Float:
    Copy + Send + Sync + 'static + std::ops::Mul<Output = Self> + std::ops::Add<Output = Self>
{
    const ZERO: Self;
}
impl Float for f32 {
    const ZERO: Self = 0.0;
}
impl Float for f64 {
    const ZERO: Self = 0.0;
}

/// Where each element's chain of multiply-adds starts.
#[derive(Clone, Copy)]
pub(crate) enum Start<T> {
    /// From zero: `C = A·B`.
    Zero,
    /// From C's old value: `C += A·B`.
    C,
    /// From element (i, j) of the m x n matrix at `p + i*rs + j*cs` (strides may be 0: a
    /// broadcast bias): `C = D + A·B` with no copy of D into C first (addmm's bias).
    Matrix { p: *const T, rs: usize, cs: usize },
}

/// One product: `C (m x n) = A (m x k) · B (k x n)`, `C += A·B` or `C = D + A·B` (see
/// [`Start`]). Element (i, j) of a matrix X is at `X.ptr + i*rs + j*cs`.
///
/// Invariant (checked by the safe caller before any kernel runs): every element of A,
/// B, C (and D) these describe lies in one live allocation, C's elements are distinct
/// (`cs = 1`, `rs >= n` or `rs = 1`, `cs >= m`), nothing else accesses C during the
/// call (D is only read and does not overlap C), and C is initialised when it is the
/// start.
#[derive(Clone, Copy)]
pub(crate) struct Problem<T> {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: *const T,
    pub rsa: usize,
    pub csa: usize,
    pub b: *const T,
    pub rsb: usize,
    pub csb: usize,
    pub c: *mut T,
    pub rsc: usize,
    pub csc: usize,
    pub start: Start<T>,
}
// SAFETY: a Problem is only a description; the kernels write disjoint parts of C from
// different threads (each thread its own rows or columns) and only read A and B.
unsafe impl<T: Send> Send for Problem<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for Problem<T> {}

impl<T> Problem<T> {
    /// The transposed problem, `Cᵀ = Bᵀ·Aᵀ` (same memory, roles swapped).
    fn transposed(self) -> Problem<T> {
        Problem {
            m: self.n,
            n: self.m,
            k: self.k,
            a: self.b,
            rsa: self.csb,
            csa: self.rsb,
            b: self.a,
            rsb: self.csa,
            csb: self.rsa,
            c: self.c,
            rsc: self.csc,
            csc: self.rsc,
            start: match self.start {
                Start::Matrix { p, rs, cs } => Start::Matrix { p, rs: cs, cs: rs },
                s => s,
            },
        }
    }
}

// ---- levels ------------------------------------------------------------------------

const UNSET: u8 = u8::MAX;
static LEVEL: AtomicU8 = AtomicU8::new(UNSET);

/// The level the GEMM uses: the CPU's best, capped by `RGRAD_GEMM_LEVEL` (read once).
pub(crate) fn level() -> Level {
    match LEVEL.load(Ordering::Relaxed) {
        UNSET => {
            let detected = super::vmath::detected();
            let cap = std::env::var("RGRAD_GEMM_LEVEL").ok().and_then(|v| {
                [Level::Baseline, Level::Avx2, Level::Avx512]
                    .into_iter()
                    .find(|l| l.name() == v.trim().to_ascii_lowercase())
            });
            let l = cap.map_or(detected, |c| c.min(detected));
            LEVEL.store(l as u8, Ordering::Relaxed);
            l
        }
        2 => Level::Avx512,
        1 => Level::Avx2,
        _ => Level::Baseline,
    }
}

// ---- vectors -----------------------------------------------------------------------

/// One level's vector of `T`: what the kernel and the packing need.
///
/// # Safety
/// The methods may only be called where the level's CPU features are present (inside
/// its `#[target_feature]` entry point), with pointers valid for `LANES` elements
/// (`splat`: one).
trait Simd {
    type T: Float;
    type V: Copy;
    const LANES: usize;
    unsafe fn zero() -> Self::V;
    unsafe fn load(p: *const Self::T) -> Self::V;
    unsafe fn store(p: *mut Self::T, v: Self::V);
    unsafe fn splat(p: *const Self::T) -> Self::V;
    /// `a·b + c` (one rounding at the FMA levels).
    unsafe fn fma(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `a + b`, lane by lane.
    unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
    /// The sum of the lanes, pairwise: lane q plus lane q + LANES/2, then the same on
    /// the first half, ... (the order of `dot`'s scalar reduction).
    unsafe fn hsum(v: Self::V) -> Self::T;
    /// Writes the transpose of the LANES x LANES block at `src` (rows `ld` apart) to
    /// `dst` (rows `ldd` apart).
    unsafe fn transpose(src: *const Self::T, ld: usize, dst: *mut Self::T, ldd: usize);
}

/// The portable level: arrays the compiler vectorises for the target's baseline.
struct Portable<T, const W: usize>(std::marker::PhantomData<T>);

macro_rules! portable {
    ($t:ty, $w:expr) => {
        impl Simd for Portable<$t, $w> {
            type T = $t;
            type V = [$t; $w];
            const LANES: usize = $w;
            #[inline(always)]
            unsafe fn zero() -> Self::V {
                [0.0; $w]
            }
            #[inline(always)]
            unsafe fn load(p: *const $t) -> Self::V {
                // SAFETY: the trait's contract (p valid for LANES elements).
                unsafe { p.cast::<[$t; $w]>().read_unaligned() }
            }
            #[inline(always)]
            unsafe fn store(p: *mut $t, v: Self::V) {
                // SAFETY: as in `load`.
                unsafe { p.cast::<[$t; $w]>().write_unaligned(v) }
            }
            #[inline(always)]
            unsafe fn splat(p: *const $t) -> Self::V {
                // SAFETY: the trait's contract.
                [unsafe { *p }; $w]
            }
            #[inline(always)]
            unsafe fn fma(a: Self::V, b: Self::V, c: Self::V) -> Self::V {
                std::array::from_fn(|l| a[l] * b[l] + c[l])
            }
            #[inline(always)]
            unsafe fn add(a: Self::V, b: Self::V) -> Self::V {
                std::array::from_fn(|l| a[l] + b[l])
            }
            #[inline(always)]
            unsafe fn hsum(mut v: Self::V) -> $t {
                let mut w = $w;
                while w > 1 {
                    w /= 2;
                    for q in 0..w {
                        v[q] += v[q + w];
                    }
                }
                v[0]
            }
            #[inline(always)]
            unsafe fn transpose(src: *const $t, ld: usize, dst: *mut $t, ldd: usize) {
                for r in 0..$w {
                    for c in 0..$w {
                        // SAFETY: the trait's contract (a LANES x LANES block each).
                        unsafe { *dst.add(c * ldd + r) = *src.add(r * ld + c) };
                    }
                }
            }
        }
    };
}
portable!(f32, 8);
portable!(f64, 4);

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Simd;
    use std::arch::x86_64::*;

    pub(super) struct Avx512F32;
    pub(super) struct Avx512F64;
    pub(super) struct Avx2F32;
    pub(super) struct Avx2F64;

    /// The pairwise sum of 8 float32 lanes (`Simd::hsum`'s order: halves, quarters,
    /// then the last pair).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn hsum256(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps::<1>(s, s)))
    }

    /// The pairwise sum of 4 float64 lanes (as [`hsum256`]).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn hsum256d(v: __m256d) -> f64 {
        let s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd::<1>(v));
        _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)))
    }

    // SAFETY (every method below): the `Simd` contract: the level's features are
    // present, pointers are valid for the elements read or written (unaligned access).
    impl Simd for Avx512F32 {
        type T = f32;
        type V = __m512;
        const LANES: usize = 16;
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn zero() -> __m512 {
            _mm512_setzero_ps()
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn load(p: *const f32) -> __m512 {
            unsafe { _mm512_loadu_ps(p) }
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn store(p: *mut f32, v: __m512) {
            unsafe { _mm512_storeu_ps(p, v) }
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn splat(p: *const f32) -> __m512 {
            unsafe { _mm512_set1_ps(*p) }
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn fma(a: __m512, b: __m512, c: __m512) -> __m512 {
            _mm512_fmadd_ps(a, b, c)
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn add(a: __m512, b: __m512) -> __m512 {
            _mm512_add_ps(a, b)
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn hsum(v: __m512) -> f32 {
            let lo = _mm512_castps512_ps256(v);
            let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v)));
            hsum256(_mm256_add_ps(lo, hi))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn transpose(src: *const f32, ld: usize, dst: *mut f32, ldd: usize) {
            unsafe {
                let mut r = [_mm512_setzero_ps(); 16];
                for (i, o) in r.iter_mut().enumerate() {
                    *o = _mm512_loadu_ps(src.add(i * ld));
                }
                // pairs of rows interleaved within 128-bit lanes
                let mut t = [_mm512_setzero_ps(); 16];
                for (i, o) in t.iter_mut().enumerate() {
                    *o = {
                        let (x, y) = (r[i & !1], r[i | 1]);
                        if i % 2 == 0 {
                            _mm512_unpacklo_ps(x, y)
                        } else {
                            _mm512_unpackhi_ps(x, y)
                        }
                    };
                }
                // groups of four rows: u[4g + c] holds column c (and c+4, c+8, c+12)
                let mut u = [_mm512_setzero_ps(); 16];
                for (i, o) in u.iter_mut().enumerate() {
                    *o = {
                        let g = i / 4 * 4;
                        let (x, y) = match i % 4 {
                            0 | 1 => (t[g], t[g + 2]),
                            _ => (t[g + 1], t[g + 3]),
                        };
                        let (x, y) = (_mm512_castps_pd(x), _mm512_castps_pd(y));
                        _mm512_castpd_ps(if i % 2 == 0 {
                            _mm512_unpacklo_pd(x, y)
                        } else {
                            _mm512_unpackhi_pd(x, y)
                        })
                    };
                }
                // 128-bit lanes across groups (0,1) and (2,3)
                let mut w = [_mm512_setzero_ps(); 16];
                for (i, o) in w.iter_mut().enumerate() {
                    *o = {
                        let (h, c) = (i / 8, i % 4);
                        let (x, y) = (u[8 * h + c], u[8 * h + 4 + c]);
                        if (i / 4) % 2 == 0 {
                            _mm512_shuffle_f32x4::<0x88>(x, y)
                        } else {
                            _mm512_shuffle_f32x4::<0xdd>(x, y)
                        }
                    };
                }
                for c in 0..16 {
                    let (x, y) = (w[c % 8], w[8 + c % 8]);
                    let col = if c < 8 {
                        _mm512_shuffle_f32x4::<0x88>(x, y)
                    } else {
                        _mm512_shuffle_f32x4::<0xdd>(x, y)
                    };
                    _mm512_storeu_ps(dst.add(c * ldd), col);
                }
            }
        }
    }

    impl Simd for Avx512F64 {
        type T = f64;
        type V = __m512d;
        const LANES: usize = 8;
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn zero() -> __m512d {
            _mm512_setzero_pd()
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn load(p: *const f64) -> __m512d {
            unsafe { _mm512_loadu_pd(p) }
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn store(p: *mut f64, v: __m512d) {
            unsafe { _mm512_storeu_pd(p, v) }
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn splat(p: *const f64) -> __m512d {
            unsafe { _mm512_set1_pd(*p) }
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn fma(a: __m512d, b: __m512d, c: __m512d) -> __m512d {
            _mm512_fmadd_pd(a, b, c)
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn add(a: __m512d, b: __m512d) -> __m512d {
            _mm512_add_pd(a, b)
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn hsum(v: __m512d) -> f64 {
            let lo = _mm512_castpd512_pd256(v);
            let hi = _mm512_extractf64x4_pd::<1>(v);
            hsum256d(_mm256_add_pd(lo, hi))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn transpose(src: *const f64, ld: usize, dst: *mut f64, ldd: usize) {
            unsafe {
                let mut r = [_mm512_setzero_pd(); 8];
                for (i, o) in r.iter_mut().enumerate() {
                    *o = _mm512_loadu_pd(src.add(i * ld));
                }
                let mut t = [_mm512_setzero_pd(); 8];
                for (i, o) in t.iter_mut().enumerate() {
                    *o = {
                        let (x, y) = (r[i & !1], r[i | 1]);
                        if i % 2 == 0 {
                            _mm512_unpacklo_pd(x, y)
                        } else {
                            _mm512_unpackhi_pd(x, y)
                        }
                    };
                }
                // u[4h + c]: rows 4h.. of columns c (and c + 4), from t[4h + c % 2]
                let mut u = [_mm512_setzero_pd(); 8];
                for (i, o) in u.iter_mut().enumerate() {
                    *o = {
                        let (h, c) = (i / 4, i % 4);
                        let (x, y) = (t[4 * h + c % 2], t[4 * h + 2 + c % 2]);
                        if c < 2 {
                            _mm512_shuffle_f64x2::<0x88>(x, y)
                        } else {
                            _mm512_shuffle_f64x2::<0xdd>(x, y)
                        }
                    };
                }
                for c in 0..8 {
                    let (x, y) = (u[c % 4], u[4 + c % 4]);
                    let col = if c < 4 {
                        _mm512_shuffle_f64x2::<0x88>(x, y)
                    } else {
                        _mm512_shuffle_f64x2::<0xdd>(x, y)
                    };
                    _mm512_storeu_pd(dst.add(c * ldd), col);
                }
            }
        }
    }

    impl Simd for Avx2F32 {
        type T = f32;
        type V = __m256;
        const LANES: usize = 8;
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn zero() -> __m256 {
            _mm256_setzero_ps()
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn load(p: *const f32) -> __m256 {
            unsafe { _mm256_loadu_ps(p) }
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn store(p: *mut f32, v: __m256) {
            unsafe { _mm256_storeu_ps(p, v) }
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn splat(p: *const f32) -> __m256 {
            unsafe { _mm256_broadcast_ss(&*p) }
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn fma(a: __m256, b: __m256, c: __m256) -> __m256 {
            _mm256_fmadd_ps(a, b, c)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn add(a: __m256, b: __m256) -> __m256 {
            _mm256_add_ps(a, b)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn hsum(v: __m256) -> f32 {
            hsum256(v)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn transpose(src: *const f32, ld: usize, dst: *mut f32, ldd: usize) {
            unsafe {
                let mut r = [_mm256_setzero_ps(); 8];
                for (i, o) in r.iter_mut().enumerate() {
                    *o = _mm256_loadu_ps(src.add(i * ld));
                }
                let mut t = [_mm256_setzero_ps(); 8];
                for (i, o) in t.iter_mut().enumerate() {
                    *o = {
                        let (x, y) = (r[i & !1], r[i | 1]);
                        if i % 2 == 0 {
                            _mm256_unpacklo_ps(x, y)
                        } else {
                            _mm256_unpackhi_ps(x, y)
                        }
                    };
                }
                // u[4h + c]: rows 4h..4h+4 of columns c and c + 4
                let mut u = [_mm256_setzero_ps(); 8];
                for (i, o) in u.iter_mut().enumerate() {
                    *o = {
                        let (h, c) = (i / 4, i % 4);
                        let (x, y) = (t[4 * h + c / 2], t[4 * h + 2 + c / 2]);
                        if c % 2 == 0 {
                            _mm256_shuffle_ps::<0x44>(x, y)
                        } else {
                            _mm256_shuffle_ps::<0xee>(x, y)
                        }
                    };
                }
                for c in 0..8 {
                    let (x, y) = (u[c % 4], u[4 + c % 4]);
                    let col = if c < 4 {
                        _mm256_permute2f128_ps::<0x20>(x, y)
                    } else {
                        _mm256_permute2f128_ps::<0x31>(x, y)
                    };
                    _mm256_storeu_ps(dst.add(c * ldd), col);
                }
            }
        }
    }

    impl Simd for Avx2F64 {
        type T = f64;
        type V = __m256d;
        const LANES: usize = 4;
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn zero() -> __m256d {
            _mm256_setzero_pd()
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn load(p: *const f64) -> __m256d {
            unsafe { _mm256_loadu_pd(p) }
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn store(p: *mut f64, v: __m256d) {
            unsafe { _mm256_storeu_pd(p, v) }
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn splat(p: *const f64) -> __m256d {
            unsafe { _mm256_broadcast_sd(&*p) }
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn fma(a: __m256d, b: __m256d, c: __m256d) -> __m256d {
            _mm256_fmadd_pd(a, b, c)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn add(a: __m256d, b: __m256d) -> __m256d {
            _mm256_add_pd(a, b)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn hsum(v: __m256d) -> f64 {
            hsum256d(v)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn transpose(src: *const f64, ld: usize, dst: *mut f64, ldd: usize) {
            unsafe {
                let mut r = [_mm256_setzero_pd(); 4];
                for (i, o) in r.iter_mut().enumerate() {
                    *o = _mm256_loadu_pd(src.add(i * ld));
                }
                let t0 = _mm256_unpacklo_pd(r[0], r[1]);
                let t1 = _mm256_unpackhi_pd(r[0], r[1]);
                let t2 = _mm256_unpacklo_pd(r[2], r[3]);
                let t3 = _mm256_unpackhi_pd(r[2], r[3]);
                _mm256_storeu_pd(dst, _mm256_permute2f128_pd::<0x20>(t0, t2));
                _mm256_storeu_pd(dst.add(ldd), _mm256_permute2f128_pd::<0x20>(t1, t3));
                _mm256_storeu_pd(dst.add(2 * ldd), _mm256_permute2f128_pd::<0x31>(t0, t2));
                _mm256_storeu_pd(dst.add(3 * ldd), _mm256_permute2f128_pd::<0x31>(t1, t3));
            }
        }
    }
}

// ---- the driver ----------------------------------------------------------------------

/// Depth of a k block: a B micro-panel (KC x NR, 128 bytes a row at every level's widest
/// tile) of 24 KiB stays in a 32 KiB L1 while the A rows stream past it.
const KC: usize = 256;
/// Rows of A per block (kept in L2 while the panels of a B block go by).
const MC: usize = 192;
/// Columns of a packed B block (KC x NC: 768 KiB of f32, in L2 / L3).
const NC: usize = 1024;
/// The largest tile any level uses (elements): the edge tile's scratch.
const MAX_TILE: usize = 12 * 32;

/// Runs the tile kernel for `mr` rows (<= MR) with a kernel compiled for exactly as
/// many rows, so a short edge tile does no wasted work.
macro_rules! with_rows {
    ($mr:expr, $MR:ident, $body:expr) => {{
        macro_rules! arm {
            ($n:literal) => {{
                const $MR: usize = $n;
                $body
            }};
        }
        match $mr {
            1 => arm!(1),
            2 => arm!(2),
            3 => arm!(3),
            4 => arm!(4),
            5 => arm!(5),
            6 => arm!(6),
            7 => arm!(7),
            8 => arm!(8),
            9 => arm!(9),
            10 => arm!(10),
            11 => arm!(11),
            _ => arm!(12),
        }
    }};
}

/// One MR x (NV·LANES) tile of C over `kc` steps of k: A's packed panel at `a` (rows
/// `KC` apart, k contiguous, if `AR`; else k steps `MR` apart, rows contiguous), B's
/// panel at `b` (k stride `rsb`, contiguous across the tile's columns, `NV·LANES` of
/// them readable), C's tile at `c` (`nr` valid columns, row stride `rsc`, column stride
/// `csc`). `start`: the tile's starting values (pointer, row and column stride: C's
/// partial sums, or a bias, strides possibly 0), else zero. The A strides are
/// constants so that each broadcast is one load at a fixed offset from one pointer.
///
/// # Safety
/// The level's features are present; A's `MR x kc`, B's `kc x NV·LANES` and C's
/// `MR x nr` elements addressed this way are valid (C's for writing), and so are the
/// start's (initialised).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn tile<S: Simd, const MR: usize, const NV: usize, const AR: bool>(
    kc: usize,
    a: *const S::T,
    b: *const S::T,
    rsb: usize,
    c: *mut S::T,
    rsc: usize,
    csc: usize,
    nr: usize,
    start: Option<(*const S::T, usize, usize)>,
) {
    let l = S::LANES;
    let (rsa, csa) = if AR { (KC, 1) } else { (1, MR) };
    // SAFETY: the function's contract covers every access below.
    unsafe {
        let direct = csc == 1 && nr == NV * l;
        let mut acc = [[S::zero(); NV]; MR];
        if let Some((d, rsd, csd)) = start {
            if csd == 1 && nr == NV * l {
                for (i, row) in acc.iter_mut().enumerate() {
                    for (v, x) in row.iter_mut().enumerate() {
                        *x = S::load(d.add(i * rsd + v * l));
                    }
                }
            } else {
                let mut scratch = [S::T::ZERO; MAX_TILE];
                for i in 0..MR {
                    for j in 0..nr {
                        scratch[i * NV * l + j] = *d.add(i * rsd + j * csd);
                    }
                }
                for (i, row) in acc.iter_mut().enumerate() {
                    for (v, x) in row.iter_mut().enumerate() {
                        *x = S::load(scratch.as_ptr().add(i * NV * l + v * l));
                    }
                }
            }
        }
        let (mut ap, mut bp) = (a, b);
        for _ in 0..kc {
            let mut bv = [S::zero(); NV];
            for (v, x) in bv.iter_mut().enumerate() {
                *x = S::load(bp.add(v * l));
            }
            for (i, row) in acc.iter_mut().enumerate() {
                let av = S::splat(ap.add(i * rsa));
                for (x, &bj) in row.iter_mut().zip(&bv) {
                    *x = S::fma(av, bj, *x);
                }
            }
            ap = ap.add(csa);
            bp = bp.add(rsb);
        }
        if direct {
            for (i, row) in acc.iter().enumerate() {
                for (v, &x) in row.iter().enumerate() {
                    S::store(c.add(i * rsc + v * l), x);
                }
            }
        } else {
            let mut scratch = [S::T::ZERO; MAX_TILE];
            for (i, row) in acc.iter().enumerate() {
                for (v, &x) in row.iter().enumerate() {
                    S::store(scratch.as_mut_ptr().add(i * NV * l + v * l), x);
                }
            }
            for i in 0..MR {
                for j in 0..nr {
                    *c.add(i * rsc + j * csc) = scratch[i * NV * l + j];
                }
            }
        }
    }
}

/// Packs A's rows `[i0, i0 + mc)` x k `[p0, p0 + kc)` into micro-panels of `mr_full`
/// rows, `mr_full * KC` elements apart: rows `KC` apart with k contiguous when `ar`
/// (A's rows are contiguous along k, or neither stride is 1), else each k step's `mr`
/// rows contiguous (A stored column-major). Both are copies of contiguous runs of the
/// source in the common layouts.
///
/// # Safety
/// A's block is readable; `dst` holds `mc.div_ceil(mr_full) * mr_full * KC` elements.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn pack_a<T: Float>(
    pr: &Problem<T>,
    i0: usize,
    mc: usize,
    p0: usize,
    kc: usize,
    mr_full: usize,
    ar: bool,
    dst: *mut T,
) {
    // SAFETY: the function's contract covers every access below.
    unsafe {
        for (t, ir) in (0..mc).step_by(mr_full).enumerate() {
            let mr = mr_full.min(mc - ir);
            let out = dst.add(t * mr_full * KC);
            let src = pr.a.add((i0 + ir) * pr.rsa + p0 * pr.csa);
            if ar {
                for i in 0..mr {
                    let row = src.add(i * pr.rsa);
                    if pr.csa == 1 {
                        std::ptr::copy_nonoverlapping(row, out.add(i * KC), kc);
                    } else {
                        for p in 0..kc {
                            *out.add(i * KC + p) = *row.add(p * pr.csa);
                        }
                    }
                }
            } else {
                for p in 0..kc {
                    std::ptr::copy_nonoverlapping(src.add(p * pr.csa), out.add(p * mr), mr);
                }
            }
        }
    }
}

/// Packs B's block `[p0, p0 + kc) x [j0, j0 + nc)` into panels of `nr_full` columns,
/// each `kc` rows of `nr_full` contiguous elements (zeros past the last column).
///
/// # Safety
/// As [`tile`]: B's block is readable, `dst` holds `kc * nc.div_ceil(nr_full) * nr_full`.
#[inline(always)]
unsafe fn pack_b<S: Simd>(
    pr: &Problem<S::T>,
    p0: usize,
    kc: usize,
    j0: usize,
    nc: usize,
    nr_full: usize,
    dst: *mut S::T,
) {
    let l = S::LANES;
    // SAFETY: the function's contract covers every access below.
    unsafe {
        let src = pr.b.add(p0 * pr.rsb + j0 * pr.csb);
        for (panel, jp) in (0..nc).step_by(nr_full).enumerate() {
            let nr = nr_full.min(nc - jp);
            let out = dst.add(panel * kc * nr_full);
            let s = src.add(jp * pr.csb);
            if pr.csb == 1 {
                for p in 0..kc {
                    let row = s.add(p * pr.rsb);
                    let o = out.add(p * nr_full);
                    std::ptr::copy_nonoverlapping(row, o, nr);
                    for j in nr..nr_full {
                        *o.add(j) = S::T::ZERO;
                    }
                }
            } else {
                // columns of B contiguous along k (a transposed operand) go through
                // LANES x LANES register transposes
                let mut p = 0;
                if pr.rsb == 1 {
                    while p + l <= kc {
                        let mut j = 0;
                        while j + l <= nr {
                            S::transpose(
                                s.add(j * pr.csb + p),
                                pr.csb,
                                out.add(p * nr_full + j),
                                nr_full,
                            );
                            j += l;
                        }
                        for jj in j..nr {
                            for q in p..p + l {
                                *out.add(q * nr_full + jj) = *s.add(jj * pr.csb + q);
                            }
                        }
                        p += l;
                    }
                }
                for q in p..kc {
                    for jj in 0..nr {
                        *out.add(q * nr_full + jj) = *s.add(q * pr.rsb + jj * pr.csb);
                    }
                }
                for q in 0..kc {
                    for jj in nr..nr_full {
                        *out.add(q * nr_full + jj) = S::T::ZERO;
                    }
                }
            }
        }
    }
}

thread_local! {
    /// Each thread's packing buffer, kept warm between calls (64-byte units, so any
    /// element type is aligned in it).
    static PACK: std::cell::RefCell<Vec<Align64>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Align64([u8; 64]);

/// Runs `f` with this thread's packing buffer, at least `elems` elements of `T`.
fn with_pack<T, R>(elems: usize, f: impl FnOnce(*mut T) -> R) -> R {
    let units = (elems * std::mem::size_of::<T>()).div_ceil(64);
    PACK.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            if buf.len() < units {
                buf.resize(units, Align64([0; 64]));
            }
            f(buf.as_mut_ptr().cast::<T>())
        }
        // re-entered on this thread (cannot happen: the kernels call nothing that packs)
        Err(_) => {
            let mut own = vec![Align64([0; 64]); units];
            f(own.as_mut_ptr().cast::<T>())
        }
    })
}

/// The packing buffer `block` needs for `cols` columns of a depth-`k` product with
/// panels of `nr` columns.
fn pack_elems(k: usize, cols: usize, nr: usize) -> usize {
    let kc = k.div_ceil(k.div_ceil(KC));
    kc * NC.min(cols).div_ceil(nr) * nr + MC * KC
}

/// Runs the level's `block` on this thread with this thread's packing buffer.
///
/// # Safety
/// As [`block`].
unsafe fn run_block<T>(ks: &Kernels<T>, pr: &Problem<T>, rows: Range, cols: Range) {
    let elems = pack_elems(pr.k, cols.len(), ks.nr);
    // SAFETY: the caller's; the buffer holds `pack_elems`.
    with_pack::<T, _>(elems, |pack| unsafe { (ks.block)(pr, rows, cols, pack) });
}

/// C's rows `rows` x columns `cols` of the problem, on this thread.
///
/// # Safety
/// `pr` satisfies [`Problem`]'s invariant and the level's features are present; no
/// other thread writes these elements of C meanwhile.
#[inline(always)]
unsafe fn block<S: Simd, const MR: usize, const NV: usize>(
    pr: &Problem<S::T>,
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
    pack: *mut S::T,
) {
    let nr_full = NV * S::LANES;
    let k = pr.k;
    let kblocks = k.div_ceil(KC);
    let kc_even = k.div_ceil(kblocks);
    // B read in place when its rows are contiguous and only a few tiles use each panel
    let in_place = pr.csb == 1 && rows.len() <= 2 * MR;
    // A packed with k contiguous, unless A is stored column-major
    let ar = pr.rsa != 1 || pr.csa == 1;
    // SAFETY: the caller's buffer holds `pack_elems`: the B block, then MC x KC for A.
    let apack = unsafe { pack.add(pack_elems(k, cols.len(), nr_full) - MC * KC) };
    {
        for jc in cols.clone().step_by(NC) {
            let nc = NC.min(cols.end - jc);
            for kb in 0..kblocks {
                let p0 = kb * kc_even;
                let kc = kc_even.min(k - p0);
                // where this k block's chains start: the previous block's partial
                // sums, C's old values, the start matrix, or zero
                let from = match pr.start {
                    _ if kb > 0 => Some((pr.c.cast_const(), pr.rsc, pr.csc)),
                    Start::C => Some((pr.c.cast_const(), pr.rsc, pr.csc)),
                    Start::Matrix { p, rs, cs } => Some((p, rs, cs)),
                    Start::Zero => None,
                };
                // SAFETY: the block lies inside B and `pack` holds `pack_elems` elements.
                unsafe {
                    if !in_place {
                        pack_b::<S>(pr, p0, kc, jc, nc, nr_full, pack);
                    } else if !nc.is_multiple_of(nr_full) {
                        let last = nc / nr_full * nr_full;
                        pack_b::<S>(pr, p0, kc, jc + last, nc - last, nr_full, pack);
                    }
                }
                for ic in rows.clone().step_by(MC) {
                    let mc = MC.min(rows.end - ic);
                    // SAFETY: A's block is inside A; `apack` holds MC * KC elements.
                    unsafe { pack_a(pr, ic, mc, p0, kc, MR, ar, apack) };
                    for (panel, jr) in (0..nc).step_by(nr_full).enumerate() {
                        let nr = nr_full.min(nc - jr);
                        let (b, rsb) = if !in_place {
                            // SAFETY: panel `panel` of the packed block
                            (
                                unsafe { pack.add(panel * kc * nr_full).cast_const() },
                                nr_full,
                            )
                        } else if nr == nr_full {
                            // SAFETY: inside B (the block's full panel)
                            (unsafe { pr.b.add(p0 * pr.rsb + jc + jr) }, pr.rsb)
                        } else {
                            (pack.cast_const(), nr_full)
                        };
                        for (t, ir) in (ic..ic + mc).step_by(MR).enumerate() {
                            let mr = MR.min(ic + mc - ir);
                            // SAFETY: A's packed micro-panel t (mr rows, kc deep), the
                            // B panel's kc rows, and C's mr x nr tile at (ir, jc + jr),
                            // inside the problem (Problem's invariant), this thread's.
                            unsafe {
                                let a = apack.add(t * MR * KC).cast_const();
                                let c = pr.c.add(ir * pr.rsc + (jc + jr) * pr.csc);
                                let (rsc, csc) = (pr.rsc, pr.csc);
                                // (wrapping: computed for every tile, used only if Some)
                                let start = from.map(|(d, rs, cs)| {
                                    (d.wrapping_add(ir * rs + (jc + jr) * cs), rs, cs)
                                });
                                with_rows!(mr, R, {
                                    if R > MR {
                                    } else if ar {
                                        tile::<S, R, NV, true>(
                                            kc, a, b, rsb, c, rsc, csc, nr, start,
                                        )
                                    } else {
                                        tile::<S, R, NV, false>(
                                            kc, a, b, rsb, c, rsc, csc, nr, start,
                                        )
                                    }
                                })
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Partial chains of a dot product along contiguous k: 64 bytes of them (16 float32, 8
/// float64), whatever the level's vector width: one AVX-512 vector, two AVX2 ones (128
/// bytes left AVX2 room for only 8 accumulators of its 16 registers, and its `dot` lost
/// to its tiles from 16 columns).
const CHAIN_BYTES: usize = 64;

/// `C (+)= A·B` as dot products along k, for A's rows and B's columns contiguous along
/// k (`csa = 1`; `rsb = 1`, or B a single column, copied): the matrix-vector product,
/// and a thin A·Wᵀ (a few columns, each a row of W), where packing B for the tiles
/// would cost as much as the product. Each output keeps `CHAIN_BYTES` of partial
/// chains (chain `q` takes the p with `p mod chains = q`), then sums them pairwise
/// (halves, then quarters, ...): the same order at both FMA levels (`G` vectors of the
/// level make the chains) and for every `R` (rows sharing each load of a column) and
/// `X` (columns sharing each load of a row), so a column's outputs have the bits of
/// its matrix-vector product.
///
/// # Safety
/// As [`block`], for a problem with `csa = 1` and `rsb = 1` (or `n = 1`), and `rows`
/// of C.
#[inline(always)]
unsafe fn dot<S: Simd, const G: usize, const R: usize, const X: usize>(
    pr: &Problem<S::T>,
    rows: Range,
) {
    let l = S::LANES;
    let chains = G * l;
    let (k, n) = (pr.k, pr.n);
    // SAFETY: the function's contract covers every access below.
    unsafe {
        let xbuf: Vec<S::T>;
        let (x, ldx) = if pr.rsb == 1 {
            (pr.b, pr.csb)
        } else {
            let mut v = Vec::with_capacity(k * n);
            for j in 0..n {
                for p in 0..k {
                    v.push(*pr.b.add(p * pr.rsb + j * pr.csb));
                }
            }
            xbuf = v;
            (xbuf.as_ptr(), k)
        };
        let mut i = rows.start;
        while i < rows.end {
            let nrow = R.min(rows.end - i);
            let mut rp = [pr.a; R];
            for (r, a) in rp.iter_mut().enumerate() {
                *a = pr.a.add((i + r.min(nrow - 1)) * pr.rsa);
            }
            let mut j = 0;
            while j < n {
                let ncol = X.min(n - j);
                let mut cp = [x; X];
                for (c, b) in cp.iter_mut().enumerate() {
                    *b = x.add((j + c.min(ncol - 1)) * ldx);
                }
                let mut acc = [[[S::zero(); G]; X]; R];
                let mut p = 0;
                while p + chains <= k {
                    dot_step::<S, G, R, X>(&mut acc, rp.map(|a| a.add(p)), cp.map(|b| b.add(p)), G);
                    p += chains;
                }
                if p < k {
                    // the tail continues the chains it falls in: its whole vectors from
                    // the operands, the rest of one through copies padded with zeros,
                    // whose products add exactly nothing (a chain starts at +0 and so is
                    // never -0, and x + 0 = x for every other x)
                    let (full, rest) = ((k - p) / l, (k - p) % l);
                    let (rt, ct) = (rp.map(|a| a.add(p)), cp.map(|b| b.add(p)));
                    dot_step::<S, G, R, X>(&mut acc, rt, ct, full);
                    if rest > 0 {
                        let at = |v: *const S::T| v.add(full * l);
                        dot_rest::<S, G, R, X>(&mut acc, rt.map(at), ct.map(at), full, rest);
                    }
                }
                // pairwise: chain q plus chain q + chains/2 (whole vectors while the
                // halves are), then within the vector; every loop has a constant count,
                // so the accumulators stay in registers
                for (r, row) in acc.iter().enumerate() {
                    for (c, o) in row.iter().enumerate() {
                        let mut v = *o;
                        let mut w = G;
                        while w > 1 {
                            w /= 2;
                            for g in 0..w {
                                v[g] = S::add(v[g], v[g + w]);
                            }
                        }
                        let sum = S::hsum(v[0]);
                        if r < nrow && c < ncol {
                            let (ii, jj) = (i + r, j + c);
                            let e = pr.c.add(ii * pr.rsc + jj * pr.csc);
                            *e = match pr.start {
                                Start::Zero => sum,
                                Start::C => *e + sum,
                                Start::Matrix { p, rs, cs } => *p.add(ii * rs + jj * cs) + sum,
                            };
                        }
                    }
                }
                j += ncol;
            }
            i += nrow;
        }
    }
}

/// One step of [`dot`]: the first `vecs` (<= G) vectors of each of `R` rows and `X`
/// columns, every row times every column into its chains. A function, not a closure:
/// a closure is compiled without the level's features, and its intrinsics stay calls
/// (2 GFLOP/s). Every loop has a constant count (`vecs` only masks), so that the
/// accumulators stay in registers.
///
/// # Safety
/// The level's features are present; each pointer is valid for `vecs·LANES` elements.
#[inline(always)]
unsafe fn dot_step<S: Simd, const G: usize, const R: usize, const X: usize>(
    acc: &mut [[[S::V; G]; X]; R],
    rows: [*const S::T; R],
    cols: [*const S::T; X],
    vecs: usize,
) {
    let l = S::LANES;
    // SAFETY: the function's contract.
    unsafe {
        let mut xv = [[S::zero(); G]; X];
        for (v, &b) in xv.iter_mut().zip(&cols) {
            for (g, e) in v.iter_mut().enumerate() {
                if g < vecs {
                    *e = S::load(b.add(g * l));
                }
            }
        }
        for (row, &a) in acc.iter_mut().zip(&rows) {
            for g in 0..G {
                if g < vecs {
                    let av = S::load(a.add(g * l));
                    for (o, v) in row.iter_mut().zip(&xv) {
                        o[g] = S::fma(av, v[g], o[g]);
                    }
                }
            }
        }
    }
}

/// The last `rest` (< LANES) elements of [`dot`]'s tail, into chain vector `g` of each
/// accumulator, through copies padded with zeros.
///
/// # Safety
/// The level's features are present; each pointer is valid for `rest` elements.
#[inline(always)]
unsafe fn dot_rest<S: Simd, const G: usize, const R: usize, const X: usize>(
    acc: &mut [[[S::V; G]; X]; R],
    rows: [*const S::T; R],
    cols: [*const S::T; X],
    g: usize,
    rest: usize,
) {
    // SAFETY: the function's contract (a vector is at most 16 elements).
    unsafe {
        let padded = |v: *const S::T| {
            let mut pad = [S::T::ZERO; 16];
            std::ptr::copy_nonoverlapping(v, pad.as_mut_ptr(), rest);
            pad
        };
        let xp = cols.map(padded);
        let mut xv = [S::zero(); X];
        for (v, x) in xv.iter_mut().zip(&xp) {
            *v = S::load(x.as_ptr());
        }
        for (row, &a) in acc.iter_mut().zip(&rows) {
            let av = S::load(padded(a).as_ptr());
            for (o, &x) in row.iter_mut().zip(&xv) {
                for (gg, e) in o.iter_mut().enumerate() {
                    if gg == g {
                        *e = S::fma(av, x, *e);
                    }
                }
            }
        }
    }
}

/// Products along a contiguous k with a thin side of at most this many columns (after
/// orienting: rows of A, or of Bᵀ, whichever are fewer) run as dot products ([`dot`]).
/// The thin side's limit at AVX-512 (and the portable level). Zen 4 (docs/gemm.md):
/// AVX-512's `dot` beats its tiles up to 32 columns (1.2-1.4x torch at 16-32, where the
/// tiles gave 0.75-0.87x) and loses at 64.
const DOT_MAX: usize = 32;
/// ... and at AVX2. Zen 4's AVX2 `dot` matched its tiles up to 32 columns, but a Zen 3's
/// (two 256-bit loads a cycle for `dot`'s one load per multiply-add) loses to them from
/// 16 (128x512x16 1.13x the tiles' time, 128x512x32 1.23x, 64x256x32 1.40x) and wins
/// at 12 and below (128x512x12 0.74x, 512x512x8 0.58x). So the two levels take
/// different paths for a thin side of 13-32, and their bits differ there (a dot
/// product's partial sums against the tiles' chains); at 12 and below they agree.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const DOT_MAX_AVX2: usize = 12;
/// ... and at least this deep (shallower, the chains are mostly tail).
const DOT_MIN_K: usize = 64;

/// The orientation of `pr` that runs as dot products along k ([`dot`]), if it does: a
/// matrix-vector product (one column, A's rows contiguous along k, or one row, B's
/// columns), or both operands contiguous along k with a thin side of at most
/// `dot_max` (the level's [`DOT_MAX`]; then C's columns are the thin side). These are
/// the products whose sums are reassociated (see the module docs).
fn dot_problem<T: Copy>(pr: &Problem<T>, dot_max: usize) -> Option<Problem<T>> {
    let both = pr.csa == 1 && pr.rsb == 1 && pr.k >= DOT_MIN_K;
    if pr.n == 1 && pr.csa == 1 {
        Some(*pr)
    } else if pr.m == 1 && pr.rsb == 1 {
        Some(pr.transposed())
    } else if both && pr.n <= dot_max && pr.n <= pr.m {
        Some(*pr)
    } else if both && pr.m <= dot_max {
        Some(pr.transposed())
    } else {
        None
    }
}

/// Whether an `m x k` by `k x n` float32 product with these strides runs as dot
/// products at `level`, whose sums are reassociated (the others are each element's
/// exact chain).
#[cfg(test)]
pub(crate) fn reassociates(
    level: Level,
    m: usize,
    n: usize,
    k: usize,
    csa: usize,
    rsb: usize,
) -> bool {
    let pr = Problem::<f32> {
        m,
        n,
        k,
        a: std::ptr::null(),
        rsa: 0,
        csa,
        b: std::ptr::null(),
        rsb,
        csb: 0,
        c: std::ptr::null_mut(),
        rsc: 0,
        csc: 0,
        start: Start::Zero,
    };
    m > 0 && n > 0 && k > 0 && dot_problem(&pr, f32::kernels(level).dot_max).is_some()
}

// ---- entry points per level ------------------------------------------------------------

type Range = std::ops::Range<usize>;

/// One level's compiled driver for one element type.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub(crate) struct Kernels<T> {
    /// Tile rows and columns.
    mr: usize,
    nr: usize,
    block: unsafe fn(&Problem<T>, Range, Range, *mut T),
    gemv: unsafe fn(&Problem<T>, Range),
    /// `dot` for several columns.
    dot: unsafe fn(&Problem<T>, Range),
    /// `dot` for a single output (m = n = 1), with [`SINGLE_DOT_CHAINS`] times the chains.
    dot1: unsafe fn(&Problem<T>, Range),
    /// The thin side up to which products along a contiguous k run as `dot`.
    dot_max: usize,
}

/// A single dot product (torch.dot, `a @ b` of two vectors) keeps this many times the
/// 64 bytes of chains of the others: 256 bytes, 64 float32 chains (four AVX-512 vectors,
/// eight AVX2 ones). With one output there is nothing else to overlap, and one vector
/// of chains waits on each multiply-add in turn: 65,536 float32 took 8.6 µs, 6.5 with
/// these chains, torch 6.4-8.2 (AMD EPYC, one thread). Its sums are associated
/// differently from a matrix-vector product's rows (as the long dots of [`split_dot`]
/// already were), and the same at every level.
const SINGLE_DOT_CHAINS: usize = 4;

/// Defines a level's entry points: `block`, `gemv` and `dot` compiled with its features
/// (`$g` vectors of chains, `$r` rows and `$x` columns per register block of `dot`).
macro_rules! entry {
    ($mod:ident, $s:ty, $mr:expr, $nv:expr, $g:expr, $r:expr, $x:expr $(, $feat:literal)?) => {
        mod $mod {
            #[allow(unused_imports)]
            use super::*;
            pub(super) const MR: usize = $mr;
            // 64 bytes of partial chains at every level (the order `dot` promises)
            const _: () = assert!(
                $g * <$s as Simd>::LANES * std::mem::size_of::<<$s as Simd>::T>() == CHAIN_BYTES
            );
            pub(super) const NR: usize = $nv * <$s as Simd>::LANES;
            $(#[target_feature(enable = $feat)])?
            pub(super) unsafe fn block(
                pr: &Problem<<$s as Simd>::T>,
                rows: Range,
                cols: Range,
                pack: *mut <$s as Simd>::T,
            ) {
                // SAFETY: the caller's (Problem's invariant, `pack` holds `pack_elems`;
                // the features, by dispatch).
                unsafe { super::block::<$s, $mr, $nv>(pr, rows, cols, pack) }
            }
            $(#[target_feature(enable = $feat)])?
            pub(super) unsafe fn gemv(pr: &Problem<<$s as Simd>::T>, rows: Range) {
                // SAFETY: as above.
                unsafe { super::dot::<$s, $g, $r, 1>(pr, rows) }
            }
            $(#[target_feature(enable = $feat)])?
            pub(super) unsafe fn dot(pr: &Problem<<$s as Simd>::T>, rows: Range) {
                // SAFETY: as above.
                unsafe { super::dot::<$s, $g, $r, $x>(pr, rows) }
            }
            $(#[target_feature(enable = $feat)])?
            pub(super) unsafe fn dot1(pr: &Problem<<$s as Simd>::T>, rows: Range) {
                // SAFETY: as above.
                unsafe { super::dot::<$s, { $g * SINGLE_DOT_CHAINS }, 1, 1>(pr, rows) }
            }
        }
    };
}
// (`dot`'s register blocks: AVX-512 4 rows x 2 columns x 1 vector, 8 accumulators, 6
// loads per 8 FMAs (4 x 4 x 1 spilled accumulators to the stack, 6 x 2 x 1 and 2 x 4 x 1
// were no faster); AVX2 2 x 2 x 2, 8 accumulators of 16 registers, 8 loads per 8 FMAs)
entry!(portable_f32, Portable<f32, 8>, 4, 1, 2, 1, 1);
entry!(portable_f64, Portable<f64, 4>, 4, 1, 2, 1, 1);
#[cfg(target_arch = "x86_64")]
entry!(avx2_f32, x86::Avx2F32, 6, 2, 2, 2, 2, "avx2,fma");
#[cfg(target_arch = "x86_64")]
entry!(avx2_f64, x86::Avx2F64, 6, 2, 2, 2, 2, "avx2,fma");
#[cfg(target_arch = "x86_64")]
entry!(avx512_f32, x86::Avx512F32, 8, 2, 1, 4, 2, "avx512f,fma");
#[cfg(target_arch = "x86_64")]
entry!(avx512_f64, x86::Avx512F64, 8, 2, 1, 4, 2, "avx512f,fma");

macro_rules! kernels {
    ($m:ident, $dot_max:expr) => {
        Kernels {
            mr: $m::MR,
            nr: $m::NR,
            block: $m::block,
            gemv: $m::gemv,
            dot: $m::dot,
            dot1: $m::dot1,
            dot_max: $dot_max,
        }
    };
}

/// The element types the driver runs on, each with its kernels per level.
pub(crate) trait GemmFloat: Float {
    /// The kernels of `level` (which the CPU must run: see [`run`]).
    #[doc(hidden)]
    fn kernels(level: Level) -> Kernels<Self>;
}
impl GemmFloat for f32 {
    fn kernels(level: Level) -> Kernels<f32> {
        match level {
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => kernels!(avx512_f32, DOT_MAX),
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => kernels!(avx2_f32, DOT_MAX_AVX2),
            _ => kernels!(portable_f32, DOT_MAX),
        }
    }
}
impl GemmFloat for f64 {
    fn kernels(level: Level) -> Kernels<f64> {
        match level {
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => kernels!(avx512_f64, DOT_MAX),
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => kernels!(avx2_f64, DOT_MAX_AVX2),
            _ => kernels!(portable_f64, DOT_MAX),
        }
    }
}

/// A single long dot product (torch.dot, a 1 x k by k x 1 product) is cut into pieces
/// of this many products, whose sums are added in order: fixed pieces, so that the
/// result is the same at every thread count, and across the pool when parallel (one
/// chain of `k` products ran on one thread: 4M float32 dot at 1.75x torch's time).
const DOT_PIECE: usize = 1 << 16;

/// `g` (m = n = 1) as [`DOT_PIECE`]-long dot products, each from zero, then
/// `start + p0 + p1 + ...` in order.
///
/// # Safety
/// `g` satisfies [`Problem`]'s invariant and `kernel` is the level's single-dot kernel (`dot1`).
unsafe fn split_dot<T: GemmFloat>(
    g: &Problem<T>,
    kernel: unsafe fn(&Problem<T>, Range),
    parallel: bool,
) {
    let pieces = g.k.div_ceil(DOT_PIECE);
    let mut partial = vec![T::ZERO; pieces];
    let out = partial.as_mut_ptr() as usize;
    let f = |i: usize| {
        let (k0, k1) = (i * DOT_PIECE, ((i + 1) * DOT_PIECE).min(g.k));
        let piece = Problem {
            k: k1 - k0,
            // SAFETY: offsets k0 of A's row and B's column: inside them (k0 < k).
            a: unsafe { g.a.add(k0 * g.csa) },
            b: unsafe { g.b.add(k0 * g.rsb) },
            c: (out as *mut T).wrapping_add(i),
            rsc: 1,
            csc: 1,
            start: Start::Zero,
            ..*g
        };
        // SAFETY: the caller's, for a part of A and B; C is this piece's own slot of
        // `partial`, which outlives the call.
        unsafe { kernel(&piece, 0..1) };
    };
    if parallel {
        for_each_piece(pieces, &f);
    } else {
        (0..pieces).for_each(f);
    }
    // SAFETY: element (0, 0) of C and of the start matrix (Problem's invariant).
    let c = unsafe { &mut *g.c };
    let mut acc = match g.start {
        Start::Zero => None,
        Start::C => Some(*c),
        Start::Matrix { p, .. } => Some(unsafe { *p }),
    };
    for v in partial {
        acc = Some(acc.map_or(v, |a| a + v));
    }
    *c = acc.unwrap_or(T::ZERO);
}

/// Runs `f(i)` for `i in 0..pieces`, in parallel when there is more than one: from
/// outside the pool with the calling thread taking part, inside it with rayon. Which
/// piece runs where changes no result (each piece is a fixed part of C).
pub(crate) fn for_each_piece(pieces: usize, f: &(dyn Fn(usize) + Sync)) {
    use rayon::prelude::*;
    if pieces <= 1 {
        (0..pieces).for_each(f);
    } else if rayon::current_thread_index().is_some() {
        (0..pieces).into_par_iter().for_each(f);
    } else {
        crate::runtime::for_each_index_with_caller(pieces, f);
    }
}

/// The `i`-th of `pieces` near-equal parts of `units` units of `size` elements, clipped
/// to `len` elements.
fn part(i: usize, pieces: usize, units: usize, size: usize, len: usize) -> Range {
    let (lo, hi) = (i * units / pieces, (i + 1) * units / pieces);
    (lo * size).min(len)..(hi * size).min(len)
}

/// A rough cost of running `pr` as it is oriented, in multiply-add lanes: the tile work
/// padded to whole tiles, B's packing (a copy of each element, or a register transpose
/// at about a quarter cycle an element), C written element by element in each k block
/// when its columns are not contiguous.
fn cost<T>(pr: &Problem<T>, mr: usize, nr: usize) -> u128 {
    let (m, n, k) = (pr.m as u128, pr.n as u128, pr.k as u128);
    let pad = |x: u128, t: usize| x.div_ceil(t as u128) * t as u128;
    let work = pad(m, mr) * pad(n, nr) * k;
    let pack = k * n * if pr.csb == 1 { 2 } else { 8 };
    let scatter = if pr.csc == 1 {
        0
    } else {
        m * n * k.div_ceil(KC as u128) * 64
    };
    work + pack + scatter
}

/// `C = A·B` or `C += A·B` at `level`, split across the pool when `parallel`.
///
/// # Safety
/// `pr` satisfies [`Problem`]'s invariant; `level` is one the CPU runs (at most
/// `vmath::detected()`).
pub(crate) unsafe fn run<T: GemmFloat>(level: Level, pr: Problem<T>, parallel: bool) {
    if pr.m == 0 || pr.n == 0 {
        return;
    }
    if pr.k == 0 {
        let init = |i: usize, j: usize| match pr.start {
            Start::Zero => Some(T::ZERO),
            Start::C => None,
            // SAFETY: element (i, j) of the start matrix (Problem's invariant).
            Start::Matrix { p, rs, cs } => Some(unsafe { *p.add(i * rs + j * cs) }),
        };
        for i in 0..pr.m {
            for j in 0..pr.n {
                if let Some(v) = init(i, j) {
                    // SAFETY: element (i, j) of C (Problem's invariant).
                    unsafe { *pr.c.add(i * pr.rsc + j * pr.csc) = v };
                }
            }
        }
        return;
    }
    let ks = T::kernels(level);
    let threads = if parallel {
        crate::runtime::num_threads()
    } else {
        1
    };
    // matrix-vector products and thin products along a contiguous k
    if let Some(g) = dot_problem(&pr, ks.dot_max) {
        let kernel = match (g.m, g.n) {
            (1, 1) => ks.dot1,
            (_, 1) => ks.gemv,
            _ => ks.dot,
        };
        if g.m == 1 && g.n == 1 && g.k >= 2 * DOT_PIECE {
            // SAFETY: the caller's.
            unsafe { split_dot(&g, kernel, parallel) };
            return;
        }
        let pieces = threads.min(g.m.div_ceil(64)).max(1);
        let f = |i: usize| {
            let rows = part(i, pieces, g.m.div_ceil(4), 4, g.m);
            // SAFETY: the caller's; each piece writes its own rows of C.
            unsafe { kernel(&g, rows) }
        };
        for_each_piece(pieces, &f);
        return;
    }
    // the orientation with less work: C, or Cᵀ = Bᵀ·Aᵀ (a thin n below a tile's width)
    let t = pr.transposed();
    let pr = if cost(&t, ks.mr, ks.nr) < cost(&pr, ks.mr, ks.nr) {
        t
    } else {
        pr
    };
    // a fixed split: columns (whole panels) when there are enough, else rows
    let (panels, tiles) = (pr.n.div_ceil(ks.nr), pr.m.div_ceil(ks.mr));
    let f_cols = |pieces: usize| {
        move |i: usize| {
            let cols = part(i, pieces, panels, ks.nr, pr.n);
            // SAFETY: the caller's; each piece writes its own columns of C.
            unsafe { run_block(&ks, &pr, 0..pr.m, cols) }
        }
    };
    if threads <= 1 {
        // SAFETY: the caller's.
        unsafe { run_block(&ks, &pr, 0..pr.m, 0..pr.n) };
    } else if panels >= threads || panels >= tiles {
        let pieces = threads.min(panels);
        for_each_piece(pieces, &f_cols(pieces));
    } else {
        let pieces = threads.min(tiles);
        let f = |i: usize| {
            let rows = part(i, pieces, tiles, ks.mr, pr.m);
            // SAFETY: the caller's; each piece writes its own rows of C.
            unsafe { run_block(&ks, &pr, rows, 0..pr.n) }
        };
        for_each_piece(pieces, &f);
    }
}
