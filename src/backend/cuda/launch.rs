//! Kernels from source to launch: NVRTC compiles a kernel's source (from `source`) to a
//! CUBIN for the device's own compute capability the first time a process asks for it
//! (a PTX from an NVRTC newer than the driver would not load), keeps it on disk under
//! `$RGRAD_CACHE_DIR` (default `~/.cache/rgrad/kernels`) for the next process, loads it
//! and remembers the function per device. A launch is one grid-stride kernel over the
//! output's elements on the calling thread's current stream.

#![allow(clippy::collapsible_if)] // (nested steps read clearer than let-chains here)

use super::driver::{Dev, OrCuda, Stream};
use super::source::KernelSrc;
use crate::layout::Layout;
use crate::{Error, Result};
use cudarc::driver::{result, sys};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::c_void;

/// Most dims a kernel indexes (`RG_MAXD` in the sources' prelude), after merging.
pub const MAXD: usize = super::source::MAX_DIMS;

pub use super::source::{RgLay, RgShape};

/// The shape and operand layouts of an elementwise kernel over `shape`, with size-1 dims
/// dropped and neighbouring dims merged where every operand walks them as one (a
/// contiguous operand becomes one dim); `None` past `MAXD` dims after merging.
pub fn geometry(shape: &[usize], lays: &[&Layout]) -> Option<(RgShape, Vec<RgLay>)> {
    // dims innermost first: (size, strides per operand)
    let mut dims: Vec<(usize, Vec<i64>)> = Vec::new();
    for d in (0..shape.len()).rev() {
        if shape[d] == 1 {
            continue;
        }
        let st: Vec<i64> = lays.iter().map(|l| l.strides[d] as i64).collect();
        if let Some((size, inner)) = dims.last_mut() {
            if st
                .iter()
                .zip(inner.iter())
                .all(|(&s, &i)| s == i * *size as i64)
            {
                *size *= shape[d];
                continue;
            }
        }
        dims.push((shape[d], st));
    }
    if dims.len() > MAXD {
        return None;
    }
    dims.reverse();
    let mut s = RgShape {
        ndim: dims.len() as i32,
        ..Default::default()
    };
    for (k, (size, _)) in dims.iter().enumerate() {
        s.size[k] = *size as i64;
    }
    let out = lays
        .iter()
        .enumerate()
        .map(|(j, l)| {
            let mut r = RgLay {
                off: l.offset as i64,
                ..Default::default()
            };
            for (k, (_, st)) in dims.iter().enumerate() {
                r.st[k] = st[j];
            }
            r
        })
        .collect();
    Some((s, out))
}

pub use super::source::rg_at;

/// The functions compiled for one device, by kernel name.
#[derive(Default)]
pub struct KernelCache {
    funcs: Mutex<HashMap<String, usize>>,
}

impl KernelCache {
    /// The loaded function of `k` on `dev`, compiled (or read from the disk cache) on
    /// first use.
    pub fn get(&self, dev: &Dev, k: &KernelSrc) -> Result<sys::CUfunction> {
        if let Some(&f) = self.funcs.lock().get(&k.name) {
            return Ok(f as sys::CUfunction);
        }
        let cubin = cubin(dev.capability, k)?;
        dev.bind()?;
        // SAFETY: a CUBIN NVRTC made for this device; the module stays loaded for the
        // process's life (functions are cached).
        let f = unsafe {
            let m = result::module::load_data(cubin.as_ptr() as *const c_void).or_cuda()?;
            let name = std::ffi::CString::new(k.name.clone())
                .map_err(|_| Error::Internal("kernel name with a NUL".into()))?;
            result::module::get_function(m, name).or_cuda()?
        };
        self.funcs.lock().insert(k.name.clone(), f as usize);
        Ok(f)
    }
}

fn cache_dir() -> Option<std::path::PathBuf> {
    if let Some(d) = std::env::var_os("RGRAD_CACHE_DIR") {
        return Some(std::path::PathBuf::from(d).join("kernels"));
    }
    let home = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache")))?;
    Some(home.join("rgrad").join("kernels"))
}

/// The CUBIN of `k` for compute capability `cc`: from the disk cache, else NVRTC.
fn cubin(cc: (i32, i32), k: &KernelSrc) -> Result<Vec<u8>> {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (env!("CARGO_PKG_VERSION"), &k.source, cc).hash(&mut h);
    let file = cache_dir().map(|d| {
        d.join(format!(
            "{}-sm{}{}-{:016x}.cubin",
            k.name,
            cc.0,
            cc.1,
            h.finish()
        ))
    });
    if let Some(bytes) = file.as_ref().and_then(|f| std::fs::read(f).ok()) {
        return Ok(bytes);
    }
    let bytes = super::nvrtc::compile_cubin(&k.source, cc.0, cc.1).map_err(Error::runtime)?;
    if let Some(f) = file {
        // (best effort: a read-only home only costs the next process a compile)
        if let Some(dir) = f.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let tmp = f.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, &bytes).is_ok() {
            let _ = std::fs::rename(&tmp, &f);
        }
    }
    Ok(bytes)
}

/// A kernel's arguments, packed in one 8-byte-aligned buffer (one allocation per launch);
/// the driver reads each through a pointer into it.
#[derive(Default)]
pub struct Args {
    words: Vec<u64>,
    /// Where each argument starts, in words.
    starts: Vec<usize>,
}

impl Args {
    pub fn new() -> Args {
        Args {
            words: Vec::with_capacity(64),
            starts: Vec::with_capacity(12),
        }
    }
    /// Adds a plain value (a number, a pointer, an `RgShape`).
    pub fn push<T: Copy>(&mut self, v: T) -> &mut Args {
        let at = self.words.len();
        let words = std::mem::size_of::<T>().div_ceil(8).max(1);
        self.words.resize(at + words, 0);
        // SAFETY: words `at..at + words` hold `size_of::<T>()` bytes and are 8-byte
        // aligned, as every kernel parameter type here needs at most.
        unsafe { std::ptr::write_unaligned(self.words.as_mut_ptr().add(at) as *mut T, v) };
        self.starts.push(at);
        self
    }
    /// The arguments' addresses (valid until the next `push`).
    fn ptrs(&mut self) -> Vec<*mut c_void> {
        let base = self.words.as_mut_ptr();
        self.starts
            // SAFETY: every start is inside `words`.
            .iter()
            .map(|&at| unsafe { base.add(at) } as *mut c_void)
            .collect()
    }
}

/// Threads per block of the elementwise kernels.
pub const BLOCK: u32 = 256;

/// Launches `k` over `n` elements (grid-stride) on `stream`.
pub fn launch_n(
    dev: &Dev,
    stream: &Stream,
    k: &KernelSrc,
    n: usize,
    args: &mut Args,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let blocks = n
        .div_ceil(BLOCK as usize)
        .min(dev.multi_processor_count.max(1) as usize * 32)
        .max(1) as u32;
    launch(dev, stream, k, (blocks, 1, 1), (BLOCK, 1, 1), 0, args)
}

/// Launches `k` with an explicit grid (reductions: one block per output).
pub fn launch(
    dev: &Dev,
    stream: &Stream,
    k: &KernelSrc,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared: u32,
    args: &mut Args,
) -> Result<()> {
    let f = dev.kernels.get(dev, k)?;
    dev.bind()?;
    let mut ptrs = args.ptrs();
    // SAFETY: `f` takes exactly these parameters (the source's ABI, see `source`), and
    // every pointer among them is a live device block of the right dtype and extent.
    unsafe { result::launch_kernel(f, grid, block, shared, stream.raw, &mut ptrs) }.or_cuda()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each argument reads back, through its pointer, as pushed.
    #[test]
    fn arguments_read_back_through_their_pointers() {
        let shape = RgShape {
            ndim: 3,
            size: [7; MAXD],
        };
        let mut a = Args::new();
        a.push(5i64)
            .push(shape)
            .push(2.5f32)
            .push(u8::from(true))
            .push(0xdead_beefu64);
        let p = a.ptrs();
        assert_eq!(p.len(), 5);
        // SAFETY: each pointer was made for the type pushed there.
        unsafe {
            assert_eq!(*(p[0] as *const i64), 5);
            assert_eq!(*(p[1] as *const RgShape), shape);
            assert_eq!(*(p[2] as *const f32), 2.5);
            assert_eq!(*(p[3] as *const u8), 1);
            assert_eq!(*(p[4] as *const u64), 0xdead_beef);
            assert_eq!(p[1] as usize % 8, 0);
        }
    }

    fn lay(shape: &[usize], strides: &[usize], offset: usize) -> Layout {
        Layout {
            shape: shape.iter().copied().collect(),
            strides: strides.iter().copied().collect(),
            offset,
        }
    }

    /// Every output index maps to the element the layout names, after merging.
    #[test]
    fn geometry_merges_dims_and_indexes_as_the_layout() {
        let cases = [
            lay(&[2, 3, 4], &[12, 4, 1], 0),
            lay(&[2, 3, 4], &[1, 2, 6], 5),
            lay(&[2, 1, 4], &[4, 4, 1], 3),
            lay(&[3, 4], &[0, 1], 0),
            lay(&[4, 3], &[1, 0], 2),
            lay(&[2, 3, 4, 5], &[60, 20, 5, 1], 0),
            lay(&[2, 3, 4, 5], &[0, 20, 0, 1], 7),
        ];
        for l in &cases {
            let contig = crate::layout::Layout::contiguous(&l.shape);
            let (s, ls) = geometry(&l.shape, &[l, &contig]).unwrap();
            let n: usize = l.shape.iter().product();
            for i in 0..n {
                // the layout's own index arithmetic, row-major
                let mut rem = i;
                let mut want = l.offset;
                for d in (0..l.shape.len()).rev() {
                    want += (rem % l.shape[d]) * l.strides[d];
                    rem /= l.shape[d];
                }
                assert_eq!(rg_at(i as i64, &s, &ls[0]), want as i64, "{l:?} at {i}");
                assert_eq!(rg_at(i as i64, &s, &ls[1]), i as i64);
            }
        }
        // a contiguous operand alone is one dim
        let c = crate::layout::Layout::contiguous(&[2, 3, 4, 5]);
        assert_eq!(geometry(&c.shape, &[&c]).unwrap().0.ndim, 1);
    }
}
