//! Non-temporal ("streaming") stores, for write-only outputs larger than the last-level
//! cache.
//!
//! A plain store to a line that is not in cache first reads the line from DRAM (read for
//! ownership), so a kernel writing an output too large to stay in cache moves each of its
//! bytes twice. A non-temporal store writes whole lines to memory through the CPU's
//! write-combining buffers without reading them; the price is that the output is not in
//! cache afterwards, which costs nothing when it would not have fit anyway. glibc's
//! `memcpy` and MKL switch to them above a size of the same order.
//!
//! Used by the outer products of per-sample weight gradients (`matmul::outer_products`:
//! 128 products of 128 x 784 float32 in a `vmap(grad)` step, 51 MB, written once).
//!
//! Bits: each element is computed as the plain loop computes it (`a * b + 0`, one
//! rounding, at every width); only the way it reaches memory differs.

use super::vmath::Level;
use std::mem::MaybeUninit;
use std::sync::OnceLock;

/// Size of the largest cache the CPU reports (Linux sysfs), or 32 MiB where it says
/// nothing (the L3 of one Zen 4 CCD; Intel server parts have more, then the threshold is
/// theirs).
pub(crate) fn last_level_cache_bytes() -> usize {
    static LLC: OnceLock<usize> = OnceLock::new();
    *LLC.get_or_init(|| read_llc().unwrap_or(32 << 20))
}

fn read_llc() -> Option<usize> {
    let mut best: Option<(u32, usize)> = None;
    for i in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let Ok(level) = std::fs::read_to_string(format!("{dir}/level")) else {
            break;
        };
        let (Ok(level), Some(size)) = (
            level.trim().parse::<u32>(),
            std::fs::read_to_string(format!("{dir}/size"))
                .ok()
                .and_then(|s| parse_size(s.trim())),
        ) else {
            continue;
        };
        if best.is_none_or(|(l, _)| level > l) {
            best = Some((level, size));
        }
    }
    best.map(|(_, size)| size)
}

/// "32768K" / "1M" / "512" as bytes.
fn parse_size(s: &str) -> Option<usize> {
    let (digits, unit) = match s.as_bytes().last()? {
        b'K' => (&s[..s.len() - 1], 1 << 10),
        b'M' => (&s[..s.len() - 1], 1 << 20),
        b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.parse::<usize>().ok()?.checked_mul(unit)
}

/// Whether an output of `bytes`, written once, should bypass the cache: when it is
/// larger than the last-level cache (it would be evicted before anything reads it).
pub(crate) fn worth_streaming(bytes: usize) -> bool {
    bytes >= last_level_cache_bytes()
}

/// Orders this thread's non-temporal stores before its later stores (the pool's
/// completion signal among them): call once after a run of `scale_row` calls, before
/// the output is handed to another thread.
#[inline]
pub(crate) fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE (sfence) is part of the x86-64 baseline.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    }
}

/// Float types with streaming row kernels.
pub(crate) trait StreamElem: Copy {
    /// `dst[j] = a * b[j] + 0` for every j < `dst.len()` (`b` at least as long), the
    /// aligned middle of the row with non-temporal stores at `level` (AVX2: 32 bytes a
    /// store; the baseline: SSE's 16). Follow a run of calls with [`fence`].
    fn scale_row(dst: &mut [MaybeUninit<Self>], a: Self, b: &[Self], level: Level);
}

macro_rules! stream_elem {
    ($t:ty, $lanes128:expr, $lanes256:expr, $set1_128:ident, $loadu128:ident,
     $mul128:ident, $add128:ident, $zero128:ident, $stream128:ident,
     $set1_256:ident, $loadu256:ident, $mul256:ident, $add256:ident, $zero256:ident,
     $stream256:ident) => {
        impl StreamElem for $t {
            fn scale_row(dst: &mut [MaybeUninit<$t>], a: $t, b: &[$t], level: Level) {
                let n = dst.len();
                let b = &b[..n];
                #[cfg(target_arch = "x86_64")]
                {
                    use std::arch::x86_64::*;
                    // The scalar head up to the first `align`-byte boundary of `dst`.
                    fn head(dst: &mut [MaybeUninit<$t>], a: $t, b: &[$t], align: usize) -> usize {
                        let addr = dst.as_ptr() as usize;
                        let skip = (align - addr % align) % align / std::mem::size_of::<$t>();
                        let skip = skip.min(dst.len());
                        for (o, &x) in dst[..skip].iter_mut().zip(b) {
                            o.write(a * x + 0.0);
                        }
                        skip
                    }
                    #[target_feature(enable = "avx2")]
                    fn avx2(dst: &mut [MaybeUninit<$t>], a: $t, b: &[$t]) -> usize {
                        let mut j = head(dst, a, b, 32);
                        let (va, z) = ($set1_256(a), $zero256());
                        while j + $lanes256 <= dst.len() {
                            // SAFETY: j + lanes <= n elements of both slices; dst + j is
                            // 32-byte aligned (`head`), as the stream store requires.
                            unsafe {
                                let v = $add256($mul256(va, $loadu256(b.as_ptr().add(j))), z);
                                $stream256(dst.as_mut_ptr().add(j).cast::<$t>(), v);
                            }
                            j += $lanes256;
                        }
                        j
                    }
                    fn sse(dst: &mut [MaybeUninit<$t>], a: $t, b: &[$t]) -> usize {
                        let mut j = head(dst, a, b, 16);
                        // SAFETY: SSE2 is part of the x86-64 baseline.
                        let (va, z) = unsafe { ($set1_128(a), $zero128()) };
                        while j + $lanes128 <= dst.len() {
                            // SAFETY: j + lanes <= n elements of both slices; dst + j is
                            // 16-byte aligned (`head`), as the stream store requires.
                            unsafe {
                                let v = $add128($mul128(va, $loadu128(b.as_ptr().add(j))), z);
                                $stream128(dst.as_mut_ptr().add(j).cast::<$t>(), v);
                            }
                            j += $lanes128;
                        }
                        j
                    }
                    let done = if level >= Level::Avx2 && super::vmath::detected() >= Level::Avx2 {
                        // SAFETY: the CPU has AVX2 (detected).
                        unsafe { avx2(dst, a, b) }
                    } else {
                        sse(dst, a, b)
                    };
                    for (o, &x) in dst[done..].iter_mut().zip(&b[done..]) {
                        o.write(a * x + 0.0);
                    }
                }
                #[cfg(not(target_arch = "x86_64"))]
                {
                    let _ = level;
                    for (o, &x) in dst.iter_mut().zip(b) {
                        o.write(a * x + 0.0);
                    }
                }
            }
        }
    };
}
stream_elem!(
    f32,
    4,
    8,
    _mm_set1_ps,
    _mm_loadu_ps,
    _mm_mul_ps,
    _mm_add_ps,
    _mm_setzero_ps,
    _mm_stream_ps,
    _mm256_set1_ps,
    _mm256_loadu_ps,
    _mm256_mul_ps,
    _mm256_add_ps,
    _mm256_setzero_ps,
    _mm256_stream_ps
);
stream_elem!(
    f64,
    2,
    4,
    _mm_set1_pd,
    _mm_loadu_pd,
    _mm_mul_pd,
    _mm_add_pd,
    _mm_setzero_pd,
    _mm_stream_pd,
    _mm256_set1_pd,
    _mm256_loadu_pd,
    _mm256_mul_pd,
    _mm256_add_pd,
    _mm256_setzero_pd,
    _mm256_stream_pd
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("32768K"), Some(32 << 20));
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
        assert!(last_level_cache_bytes() >= 1 << 10);
    }

    /// Every level, every alignment of the row's start and every length around the
    /// vector widths gives the plain loop's bits (zeros' signs, subnormals included).
    #[test]
    fn rows_have_the_plain_loops_bits_at_every_level() {
        fn go<T: StreamElem + Default + PartialEq + std::fmt::Debug>(
            vals: &[T],
            bits: impl Fn(T) -> u64,
            plain: impl Fn(T, T) -> T,
        ) {
            let b: Vec<T> = (0..80).map(|i| vals[i * 7 % vals.len()]).collect();
            for level in [Level::Baseline, Level::Avx2, Level::Avx512] {
                for &a in vals {
                    for start in 0..9 {
                        for n in [0, 1, 3, 7, 8, 9, 15, 16, 17, 33, 64, 70] {
                            let mut out = [MaybeUninit::new(T::default()); 80];
                            T::scale_row(&mut out[start..start + n], a, &b, level);
                            fence();
                            for j in 0..n {
                                // SAFETY: scale_row wrote element start + j (and the
                                // vector was initialised anyway).
                                let got = unsafe { out[start + j].assume_init() };
                                assert_eq!(
                                    bits(got),
                                    bits(plain(a, b[j])),
                                    "{level:?} {start} {n} {j}"
                                );
                            }
                        }
                    }
                }
            }
        }
        go::<f32>(
            &[1.5, -0.0, 0.0, -3.25, f32::MIN_POSITIVE / 4.0, 1e30, 7.0e-3],
            |x| x.to_bits().into(),
            |a, b| a * b + 0.0,
        );
        go::<f64>(
            &[
                1.5,
                -0.0,
                0.0,
                -3.25,
                f64::MIN_POSITIVE / 4.0,
                1e300,
                7.0e-3,
            ],
            |x| x.to_bits(),
            |a, b| a * b + 0.0,
        );
    }
}
