//! How a reduction's pieces run: the SIMD build picked at run time (`leveled!`), the
//! split across the pool in pieces fixed by the sizes alone (never by the thread
//! count), and outputs written by the pieces in place.

use std::mem::MaybeUninit;
use std::ops::Range;

/// From this many elements a reduction is split across the pool (torch's grain size is
/// 32K elements too; measured in docs/kernels.md, "Reductions").
pub(crate) const PAR_MIN: usize = 1 << 15;
/// About this many elements per piece of parallel work.
pub(crate) const TASK: usize = 1 << 14;

/// Whether `elements` of work are split across the pool.
pub(crate) fn parallel(elements: usize) -> bool {
    elements >= PAR_MIN && crate::runtime::intra_op_parallel()
}

/// Runs `f(t)` for every `t` in `0..n`, on the pool when `par` (the calling thread
/// takes part; inside the pool, rayon's own split).
pub(crate) fn tasks(n: usize, par: bool, f: &(dyn Fn(usize) + Sync)) {
    if !par || n < 2 {
        (0..n).for_each(f);
    } else if rayon::current_thread_index().is_some() {
        use rayon::prelude::*;
        (0..n).into_par_iter().for_each(f);
    } else {
        crate::runtime::for_each_index_with_caller(n, f);
    }
}

/// An output vector the pieces of a parallel kernel write into, each its own range.
pub(crate) struct Parts<U> {
    ptr: *mut MaybeUninit<U>,
    len: usize,
}

// SAFETY: `Parts` only hands out the ranges its callers promise are disjoint (see
// `get`), so sharing it across threads shares no element; the elements are `Send`.
unsafe impl<U: Send> Sync for Parts<U> {}

impl<U> Parts<U> {
    /// The elements `r` of the output.
    ///
    /// # Safety
    /// No two calls alive at the same time may overlap: each piece of a kernel takes
    /// the range only it writes.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn get(&self, r: Range<usize>) -> &mut [MaybeUninit<U>] {
        assert!(
            r.start <= r.end && r.end <= self.len,
            "a piece's range lies in its output"
        );
        // SAFETY: in bounds (checked above), and no other reference to these elements
        // exists (the caller's promise); the vector outlives every piece (`build`).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(r.start), r.len()) }
    }
}

/// A vector of `n` elements, every one written by `fill` (through [`Parts::get`]).
pub(crate) fn build<U>(n: usize, fill: impl FnOnce(&Parts<U>)) -> Vec<U> {
    let mut out: Vec<U> = Vec::with_capacity(n);
    let parts = Parts {
        ptr: out.spare_capacity_mut().as_mut_ptr(),
        len: n,
    };
    fill(&parts);
    // SAFETY: `fill` wrote all n elements (each caller covers 0..n with its pieces).
    unsafe { out.set_len(n) };
    out
}

/// `n` outputs, `f(range, out)` writing those of a range, in parallel above
/// [`PAR_MIN`] elements of work (`cost` per output): pieces of at least [`TASK`]
/// elements, and about four a thread (each thread then streams long runs, and claims a
/// piece a few times a call rather than every 16K elements: row sums of 2048 x 2048
/// float32 on 2 threads 1.34x torch's time with 256 pieces). Each output is computed on
/// its own, so the split never changes a bit.
pub(crate) fn per_output<U: Send>(
    n: usize,
    cost: usize,
    f: impl Fn(Range<usize>, &mut [MaybeUninit<U>]) + Sync,
) -> Vec<U> {
    let par = parallel(n.saturating_mul(cost));
    let mut per = (TASK / cost.max(1)).max(1);
    if par {
        per = per.max(n.div_ceil(4 * crate::runtime::num_threads().max(1)));
    }
    build(n, |parts| {
        tasks(n.div_ceil(per), par, &|t| {
            let r = t * per..((t + 1) * per).min(n);
            // SAFETY: the pieces' ranges are disjoint.
            let out = unsafe { parts.get(r.clone()) };
            f(r, out);
        });
    })
}

/// Combines `s` pairwise, in a fixed tree (halves split at a power of two, so the
/// shape depends on the length alone); `id` if empty.
pub(crate) fn tree<A: Copy>(s: &[A], id: A, comb: &impl Fn(A, A) -> A) -> A {
    match s {
        [] => id,
        [a] => *a,
        _ => {
            let (l, r) = s.split_at(s.len().next_power_of_two() / 2);
            comb(tree(l, id, comb), tree(r, id, comb))
        }
    }
}

/// Defines `fn name<G: Bound, ..>(args) -> R` that runs `body(args)` (an
/// `#[inline(always)]` function) compiled for the vmath level in use: AVX-512F,
/// AVX2 or the baseline (`RGRAD_VMATH_LEVEL` caps it, as for the vector math).
macro_rules! leveled {
    ($(#[$m:meta])* $vis:vis fn $name:ident<$($g:ident: $bound:path),*>($($a:ident: $t:ty),* $(,)?)
        $(-> $r:ty)? = $body:path;) => {
        $(#[$m])*
        #[allow(clippy::too_many_arguments)]
        $vis fn $name<$($g: $bound),*>($($a: $t),*) $(-> $r)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,fma")]
                #[allow(clippy::too_many_arguments)]
                fn wide<$($g: $bound),*>($($a: $t),*) $(-> $r)? {
                    $body($($a),*)
                }
                #[target_feature(enable = "avx2,fma")]
                #[allow(clippy::too_many_arguments)]
                fn mid<$($g: $bound),*>($($a: $t),*) $(-> $r)? {
                    $body($($a),*)
                }
                use crate::backend::cpu::vmath::Level;
                match crate::backend::cpu::vmath::level() {
                    // SAFETY: the level is never above what the CPU has (vmath::level
                    // caps it by the detected features): AVX-512F and FMA here.
                    Level::Avx512 => return unsafe { wide($($a),*) },
                    // SAFETY: as above, AVX2 and FMA.
                    Level::Avx2 => return unsafe { mid($($a),*) },
                    Level::Baseline => {}
                }
            }
            $body($($a),*)
        }
    };
}
pub(crate) use leveled;
