//! softmax and log_softmax along any dim, their backward, and logsumexp: fused, one
//! read of the input per pass and no temporaries, along rows (the last dim) or down
//! columns (any other dim: a tile of columns at a time, copied to a contiguous stage
//! when large, so the later passes find the tile in cache).
//!
//! The max is exact, the exponentials are vmath's (the same bits at every level), and
//! each row's or column's sum is in a fixed order: along a row as `Sum::row` (32 lanes
//! then pairwise in float64; float32 rows add in float32 lanes within 512-element
//! chunks first), in order in float64 down a column. So the bits depend on the sizes
//! alone, not on the thread count or the SIMD level.

use super::super::unary::Float;
use super::super::vmath;
use super::fold::{Extreme, Op, Sum, TILE, for_each_tile};
use super::par::{Parts, build, leveled, parallel, per_output, tasks};
use super::plan::Block;
use crate::storage::Element;
use std::mem::MaybeUninit;

/// The float types: vmath's exp over a slice.
pub(crate) trait Real: Element + Float {
    fn exp_slice(src: &[Self], dst: &mut [MaybeUninit<Self>]);
}
impl Real for f32 {
    fn exp_slice(src: &[f32], dst: &mut [MaybeUninit<f32>]) {
        vmath::float32::exp(src, dst);
    }
}
impl Real for f64 {
    fn exp_slice(src: &[f64], dst: &mut [MaybeUninit<f64>]) {
        vmath::float64::exp(src, dst);
    }
}

/// Elements exponentiated at a time (the shifted inputs wait on the stack).
const CHUNK: usize = 512;

/// The max to shift by: 0 where the max is infinite or NaN (as torch: an infinite max
/// would give inf - inf = NaN).
#[inline(always)]
fn shift<T: Real>(m: T) -> T {
    if m.to_f64().is_finite() {
        m
    } else {
        T::default()
    }
}

/// `dst[i] = exp(x[i] - m)`, through `z` (scratch the caller keeps across rows, so
/// that no row pays for clearing it).
#[inline(always)]
fn exp_shifted<T: Real>(x: &[T], m: T, z: &mut [T; CHUNK], dst: &mut [MaybeUninit<T>]) {
    for (xs, ds) in x.chunks(CHUNK).zip(dst.chunks_mut(CHUNK)) {
        let z = &mut z[..xs.len()];
        for (zi, &v) in z.iter_mut().zip(xs) {
            *zi = v - m;
        }
        T::exp_slice(z, ds);
    }
}

/// The rows `first..` of a softmax (or log_softmax) over rows of length `red`.
#[inline(always)]
fn softmax_rows_body<T: Real>(
    x: &[T],
    red: usize,
    first: usize,
    out: &mut [MaybeUninit<T>],
    log: bool,
) {
    let mut z = [T::default(); CHUNK];
    for (k, o) in out.chunks_exact_mut(red).enumerate() {
        let row = &x[(first + k) * red..(first + k + 1) * red];
        // (no shift to 0 for an infinite max: torch's softmax gives NaN rows there)
        let m = Extreme::<true>.row(row, 0);
        exp_shifted(row, m, &mut z, o);
        // SAFETY: `exp_shifted` initialised the whole row.
        let e = unsafe { &mut *(std::ptr::from_mut(o) as *mut [T]) };
        let s = T::from_f64(Sum.row(e, 0));
        if log {
            let ls = s.ln();
            for (oi, &v) in e.iter_mut().zip(row) {
                *oi = (v - m) - ls;
            }
        } else {
            // times the reciprocal, as torch (a division per element cost a sixth of
            // the time)
            let r = s.recip();
            for oi in e.iter_mut() {
                *oi = *oi * r;
            }
        }
    }
}
leveled! {
    fn softmax_rows_task<T: Real>(x: &[T], red: usize, first: usize, out: &mut [MaybeUninit<T>], log: bool) = softmax_rows_body;
}

/// Most bytes of a tile's columns copied to a contiguous stage (see [`tile_max_and_stage`]).
const STAGE_BYTES: usize = 1 << 20;
/// The fewest: softmax goes down its tile three times, and staging paid from tiles of
/// 32 KiB (256 x 256 float32, 4 tiles of 64 columns: 56 -> 39 µs on 2 threads); below,
/// the copy costs about what it saves.
const SOFTMAX_MIN_STAGE: usize = 32 << 10;
/// logsumexp goes down twice: staging paid for tiles of 512 KiB (2048 x 2048 float32:
/// 5.0 -> 4.0 ms) and cost 5-10% on tiles of 32-128 KiB (128 x 64 x 512 down dim 0:
/// 2.40 -> 2.62 ms).
const LSE_MIN_STAGE: usize = 256 << 10;

/// The rows of a tile of columns (`w` of them, from `i0`) of group `o`.
#[inline(always)]
fn tile_row<'a, T>(x: &'a [T], b: &Block, o: usize, i0: usize, w: usize, r: usize) -> &'a [T] {
    let s = b.off + o * b.os + r * b.rs + i0;
    &x[s..s + w]
}

/// The tile's max per column; the tile's rows are also copied into `stage`, one after
/// the other, when they take `min_stage` to [`STAGE_BYTES`] bytes (returns whether).
///
/// Why a stage: the later passes go down the tile again, and down columns the tile's
/// rows are `rs` elements apart: a few cache lines of each row, with a large stride, and
/// rows that fall into the same cache sets (a 2048 x 2048 float32 tensor's rows are 8
/// KiB apart). A tile sized to stay in cache then does not, and each pass reads memory
/// again: softmax(0) of 2048 x 2048 took 7.3 ms on 2 threads (torch about 6), 4.2 ms
/// staged (2000 x 2000: 7.8 -> 4.2 ms, 4096 x 1024: 16.4 -> 8.6 ms; AMD EPYC, the modes
/// alternated in one process). Copied once to consecutive addresses, the tile stays in
/// cache for the other passes. The order of every operation, and so every bit, is the
/// same either way.
#[inline(always)]
fn tile_max_and_stage<T: Real>(
    x: &[T],
    b: &Block,
    o: usize,
    i0: usize,
    m: &mut [T],
    stage: &mut Vec<T>,
    min_stage: usize,
) -> bool {
    let w = m.len();
    let bytes = b.red * w * std::mem::size_of::<T>();
    let staged = (min_stage..=STAGE_BYTES).contains(&bytes);
    if staged {
        stage.reserve_exact(b.red * w);
    }
    let ext = Extreme::<true>;
    for r in 0..b.red {
        let v = tile_row(x, b, o, i0, w, r);
        if staged {
            stage.extend_from_slice(v);
        }
        for (a, &v) in m.iter_mut().zip(v) {
            *a = ext.comb(*a, v);
        }
    }
    staged
}

/// Elements of a tile exponentiated by one vmath call: whole rows of the tile, so that
/// a narrow tile (64 columns) does not pay a call per row (a quarter of softmax(0)'s
/// time on 256 x 256 float32, one thread).
const GROUP: usize = 2048;

/// Down a tile of `w` columns and `red` rows: `s[c] += exp(x[r][c] - m[c])` for each row
/// `r` in order (float64 sums), the rows taken from `stage` (the tile copied, rows one
/// after the other) where it is not empty, else from `row(r)`. Each row's exponentials
/// go to `keep(r, e)`, or back into `stage` in place of its inputs with `to_stage`.
#[inline(always)]
fn exp_sums_down<'a, T: Real>(
    red: usize,
    m: &[T],
    s: &mut [f64],
    stage: &mut [T],
    to_stage: bool,
    row: impl Fn(usize) -> &'a [T],
    mut keep: impl FnMut(usize, &[T]),
) {
    let w = m.len();
    let per = (GROUP / w).max(1);
    let mut z = [T::default(); GROUP];
    let mut e = [MaybeUninit::<T>::uninit(); GROUP];
    for r0 in (0..red).step_by(per) {
        let k = per.min(red - r0);
        for (j, z) in z[..k * w].chunks_exact_mut(w).enumerate() {
            let src = if stage.is_empty() {
                row(r0 + j)
            } else {
                &stage[(r0 + j) * w..(r0 + j + 1) * w]
            };
            for ((zi, &v), &mi) in z.iter_mut().zip(src).zip(m) {
                *zi = v - mi;
            }
        }
        T::exp_slice(&z[..k * w], &mut e[..k * w]);
        // SAFETY: `exp_slice` initialised the first `k * w`.
        let e = unsafe { &*(std::ptr::from_ref(&e[..k * w]) as *const [T]) };
        for (j, ej) in e.chunks_exact(w).enumerate() {
            for (a, &v) in s.iter_mut().zip(ej) {
                *a += v.to_f64();
            }
            if to_stage {
                stage[(r0 + j) * w..(r0 + j + 1) * w].copy_from_slice(ej);
            } else {
                keep(r0 + j, ej);
            }
        }
    }
}

/// A tile of columns of a softmax down columns: `x` and `out` from the block's group
/// `o`, columns `i0..i0 + w`. Three passes down the tile (the max, the exponentials and
/// their sums, the products by the sums' reciprocals), on a contiguous copy of the tile
/// where it fits ([`tile_max_and_stage`]).
#[inline(always)]
fn softmax_cols_body<T: Real>(
    x: &[T],
    b: &Block,
    o: usize,
    i0: usize,
    w: usize,
    out: &Parts<T>,
    log: bool,
) {
    let row = |r: usize| tile_row(x, b, o, i0, w, r);
    let mut m = [T::from_f64(f64::NEG_INFINITY); TILE];
    let m = &mut m[..w];
    let mut stage = Vec::new();
    let staged = tile_max_and_stage(x, b, o, i0, m, &mut stage, SOFTMAX_MIN_STAGE);
    let mut s = [0.0f64; TILE];
    let s = &mut s[..w];
    let at = |r: usize| o * b.red * b.inner + r * b.inner + i0;
    // the exponentials: in place of the staged inputs (softmax, staged), or in the
    // output (softmax, not staged); log_softmax only sums them
    exp_sums_down(b.red, m, s, &mut stage, staged && !log, row, |r, e| {
        if !log {
            // SAFETY: tile (o, i0) alone writes these outputs.
            let dst = unsafe { out.get(at(r)..at(r) + w) };
            for (d, &v) in dst.iter_mut().zip(e) {
                d.write(v);
            }
        }
    });
    let mut f = [T::default(); TILE];
    let f = &mut f[..w];
    for (fi, &si) in f.iter_mut().zip(s.iter()) {
        *fi = if log {
            T::from_f64(si).ln()
        } else {
            // times the reciprocal, as along rows
            T::from_f64(si).recip()
        };
    }
    for r in 0..b.red {
        // SAFETY: as above (unstaged: written in the previous pass).
        let dst = unsafe { out.get(at(r)..at(r) + w) };
        let src = if staged {
            &stage[r * w..(r + 1) * w]
        } else {
            row(r)
        };
        if log {
            for (((d, &v), &mi), &fi) in dst.iter_mut().zip(src).zip(m.iter()).zip(f.iter()) {
                d.write((v - mi) - fi);
            }
        } else if staged {
            for ((d, &v), &fi) in dst.iter_mut().zip(src).zip(f.iter()) {
                d.write(v * fi);
            }
        } else {
            // SAFETY: initialised by the previous pass.
            let e = unsafe { &mut *(std::ptr::from_mut(dst) as *mut [T]) };
            for (d, &fi) in e.iter_mut().zip(f.iter()) {
                *d = *d * fi;
            }
        }
    }
}
leveled! {
    fn softmax_cols_task<T: Real>(x: &[T], b: &Block, o: usize, i0: usize, w: usize, out: &Parts<T>, log: bool) = softmax_cols_body;
}

/// Columns a tile takes so that its rows (`red` of them) stay in about 512 KB of cache
/// between passes: 16 to [`TILE`].
fn cache_tile<T>(red: usize) -> usize {
    let per_row = (512 * 1024 / (red.max(1) * std::mem::size_of::<T>())).max(16);
    (per_row / 16 * 16).clamp(16, TILE)
}

/// softmax (or log_softmax) along `dim` of a contiguous `shape` (non-empty), row-major.
pub(crate) fn softmax<T: Real>(x: &[T], shape: &[usize], dim: usize, log: bool) -> Vec<T> {
    let red = shape[dim];
    let outer: usize = shape[..dim].iter().product();
    let inner: usize = shape[dim + 1..].iter().product();
    let n = outer * red * inner;
    if inner == 1 {
        let per = (super::par::TASK / red).max(1);
        let par = parallel(n);
        return build(n, |parts| {
            tasks(outer.div_ceil(per), par, &|t| {
                let rs = t * per..((t + 1) * per).min(outer);
                // SAFETY: each piece owns its rows' outputs.
                let out = unsafe { parts.get(rs.start * red..rs.end * red) };
                softmax_rows_task(x, red, rs.start, out, log);
            });
        });
    }
    let b = Block {
        off: 0,
        outer,
        os: red * inner,
        red,
        rs: inner,
        inner,
    };
    let tw = cache_tile::<T>(red).min(super::fold::tile_width(inner));
    let nt = inner.div_ceil(tw);
    build(n, |parts| {
        tasks(outer * nt, parallel(n), &|t| {
            let (o, i0) = (t / nt, (t % nt) * tw);
            softmax_cols_task(x, &b, o, i0, tw.min(inner - i0), parts, log);
        });
    })
}

/// `log Σ exp(x)` of each row `first..` of a rows block.
#[inline(always)]
fn lse_rows_body<T: Real>(x: &[T], b: &Block, first: usize, out: &mut [MaybeUninit<T>]) {
    let mut e = [MaybeUninit::<T>::uninit(); CHUNK];
    let mut z = [T::default(); CHUNK];
    for (k, slot) in out.iter_mut().enumerate() {
        let row = b.row(x, first + k);
        let m = shift(Extreme::<true>.row(row, 0));
        let mut s = 0.0;
        for c in row.chunks(CHUNK) {
            let e = &mut e[..c.len()];
            exp_shifted(c, m, &mut z, e);
            // SAFETY: `exp_shifted` initialised `e`.
            s += Sum.row(unsafe { &*(std::ptr::from_ref(e) as *const [T]) }, 0);
        }
        slot.write(T::from_f64(s).ln() + m);
    }
}
leveled! {
    fn lse_rows_task<T: Real>(x: &[T], b: &Block, first: usize, out: &mut [MaybeUninit<T>]) = lse_rows_body;
}

/// `log Σ exp(x)` of the columns `i0..` of group `o` (as many as `out` holds): two
/// passes down the tile, the second on its staged copy where it fits (see
/// [`tile_max_and_stage`]).
#[inline(always)]
fn lse_cols_body<T: Real>(x: &[T], b: &Block, o: usize, i0: usize, out: &mut [MaybeUninit<T>]) {
    let w = out.len();
    let mut m = [T::from_f64(f64::NEG_INFINITY); TILE];
    let m = &mut m[..w];
    let mut stage = Vec::new();
    // (the stage, where filled, is what the second pass reads)
    tile_max_and_stage(x, b, o, i0, m, &mut stage, LSE_MIN_STAGE);
    for a in m.iter_mut() {
        *a = shift(*a);
    }
    let mut s = [0.0f64; TILE];
    let row = |r: usize| tile_row(x, b, o, i0, w, r);
    exp_sums_down(b.red, m, &mut s[..w], &mut stage, false, row, |_, _| {});
    for ((slot, &si), &mi) in out.iter_mut().zip(s.iter()).zip(m.iter()) {
        slot.write(T::from_f64(si).ln() + mi);
    }
}
leveled! {
    fn lse_cols_task<T: Real>(x: &[T], b: &Block, o: usize, i0: usize, out: &mut [MaybeUninit<T>]) = lse_cols_body;
}

/// Per output of a block (non-empty), `log Σ exp(x)`: around the max (shifted by 0
/// where the max is infinite, as torch), the sum of exponentials as `Sum::row` (rows) or
/// in float64 (columns).
pub(crate) fn logsumexp<T: Real>(x: &[T], b: &Block) -> Vec<T> {
    if b.is_rows() {
        return per_output(b.outer, b.red, |r, out| lse_rows_task(x, b, r.start, out));
    }
    let tw = cache_tile::<T>(b.red).min(super::fold::tile_width(b.inner));
    for_each_tile(b, tw, |o, i0, out| lse_cols_task(x, b, o, i0, out))
}

/// Σ a·b, the products rounded to the dtype, summed in float64 in [`lanes`]' order.
#[inline(always)]
fn dot<T: Real>(a: &[T], b: &[T]) -> f64 {
    const L: usize = 32;
    let mut acc = [0.0f64; L];
    let (ca, cb) = (a.chunks_exact(L), b.chunks_exact(L));
    let tail: f64 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .fold(0.0, |s, (&x, &y)| s + (x * y).to_f64());
    for (xa, xb) in ca.zip(cb) {
        for ((s, &x), &y) in acc.iter_mut().zip(xa).zip(xb) {
            *s += (x * y).to_f64();
        }
    }
    let mut w = L;
    while w > 1 {
        w /= 2;
        let (lo, hi) = acc.split_at_mut(w);
        for (s, &h) in lo.iter_mut().zip(&hi[..w]) {
            *s += h;
        }
    }
    acc[0] + tail
}

/// The rows `first..` of softmax's (`!log`: `y (g - Σ g y)`) or log_softmax's
/// (`g - exp(y) Σ g`) backward.
#[inline(always)]
fn backward_rows_body<T: Real>(
    g: &[T],
    y: &[T],
    red: usize,
    first: usize,
    out: &mut [MaybeUninit<T>],
    log: bool,
) {
    for (k, o) in out.chunks_exact_mut(red).enumerate() {
        let span = (first + k) * red..(first + k + 1) * red;
        let (gr, yr) = (&g[span.clone()], &y[span]);
        if log {
            let s = T::from_f64(Sum.row(gr, 0));
            T::exp_slice(yr, o);
            for (oi, &gi) in o.iter_mut().zip(gr) {
                // SAFETY: `exp_slice` initialised the row.
                let e = unsafe { oi.assume_init() };
                oi.write(gi - e * s);
            }
        } else {
            let s = T::from_f64(dot(gr, yr));
            for ((oi, &gi), &yi) in o.iter_mut().zip(gr).zip(yr) {
                oi.write(yi * (gi - s));
            }
        }
    }
}
leveled! {
    fn backward_rows_task<T: Real>(g: &[T], y: &[T], red: usize, first: usize, out: &mut [MaybeUninit<T>], log: bool) = backward_rows_body;
}

/// The backward of softmax (or log_softmax) along the last dim of contiguous `g` and
/// `y` (`red` a row, non-empty).
pub(crate) fn softmax_backward_rows<T: Real>(g: &[T], y: &[T], red: usize, log: bool) -> Vec<T> {
    let n = g.len().min(y.len()) / red * red;
    let rows = n / red;
    let per = (super::par::TASK / red).max(1);
    build(n, |parts| {
        tasks(rows.div_ceil(per), parallel(n), &|t| {
            let rs = t * per..((t + 1) * per).min(rows);
            // SAFETY: each piece owns its rows' outputs.
            let out = unsafe { parts.get(rs.start * red..rs.end * red) };
            backward_rows_task(g, y, red, rs.start, out, log);
        });
    })
}
