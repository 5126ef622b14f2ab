//! NVRTC: CUDA C source to CUBIN, with the library found and loaded at run time.
//!
//! cudarc opens NVRTC by name (`libnvrtc.so.13` and other candidates) on first use and
//! panics when it cannot. So [`load`] makes sure it can first: if the by-name open fails,
//! it opens the library by absolute path from a list of directories (`RGRAD_NVRTC_DIR`,
//! `CUDA_HOME`/`CUDA_PATH`, `/usr/local/cuda`, and any the caller names, such as a pip
//! wheel's `site-packages/nvidia/cu13/lib`), with `RTLD_GLOBAL`, and keeps it open; the
//! dynamic linker then answers cudarc's by-name open with the library already loaded
//! (it matches a loaded library's soname). NVRTC finds its builtins library next to
//! itself.

use cudarc::nvrtc::{result, sys};
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Whether NVRTC has been found (only success is remembered, so a later call with more
/// directories can still succeed).
static LOADED: Mutex<bool> = Mutex::new(false);

/// The directories searched besides the caller's.
fn default_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = std::env::var_os("RGRAD_NVRTC_DIR") {
        dirs.push(PathBuf::from(d));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(d) = std::env::var_os(var) {
            dirs.push(Path::new(&d).join("lib64"));
            dirs.push(Path::new(&d).join("lib"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    dirs
}

/// The NVRTC libraries in `dir` (`libnvrtc.so`, `libnvrtc.so.13`..., not the builtins),
/// the most specific name first.
fn libraries_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libnvrtc.so"))
        })
        .collect();
    found.sort_by_key(|p| std::cmp::Reverse(p.as_os_str().len()));
    found
}

/// Opens a shared library by absolute path, globally, and never closes it.
#[cfg(target_os = "linux")]
fn open_global(path: &Path) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: `c` is a NUL-terminated path; dlopen runs the library's initialisers, which
    // for NVRTC only set up its own state. The handle is deliberately leaked: the library
    // stays loaded for the process, as cudarc's own handle keeps it.
    let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if handle.is_null() {
        // SAFETY: dlerror returns null or a NUL-terminated message owned by libc.
        let err = unsafe { libc::dlerror() };
        let msg = if err.is_null() {
            "unknown error".to_string()
        } else {
            // SAFETY: as above; copied before any other dl call.
            unsafe { std::ffi::CStr::from_ptr(err) }
                .to_string_lossy()
                .into_owned()
        };
        return Err(format!("{}: {msg}", path.display()));
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn open_global(path: &Path) -> Result<(), String> {
    Err(format!(
        "{}: loading NVRTC by path is implemented for Linux only",
        path.display()
    ))
}

/// Whether cudarc's by-name open of NVRTC succeeds now.
fn present() -> bool {
    // SAFETY: opening (and closing again) a library by name, as cudarc does on first use.
    unsafe { sys::is_culib_present() }
}

/// Makes NVRTC loadable: by name (`LD_LIBRARY_PATH`, the system's directories), else from
/// `extra_dirs` and the default directories (see the module docs). Call before the first
/// [`compile_cubin`] if NVRTC lives somewhere the process cannot know of (a pip wheel).
pub fn load(extra_dirs: &[PathBuf]) -> Result<(), String> {
    let mut loaded = LOADED.lock().unwrap_or_else(|p| p.into_inner());
    if *loaded {
        return Ok(());
    }
    if present() {
        *loaded = true;
        return Ok(());
    }
    let mut tried = Vec::new();
    for dir in extra_dirs.iter().cloned().chain(default_dirs()) {
        let libs = libraries_in(&dir);
        if libs.is_empty() {
            tried.push(format!("{}: no libnvrtc.so*", dir.display()));
        }
        for lib in libs {
            match open_global(&lib) {
                Ok(()) if present() => {
                    *loaded = true;
                    return Ok(());
                }
                Ok(()) => tried.push(format!(
                    "{}: loaded, but not under a name cudarc opens",
                    lib.display()
                )),
                Err(e) => tried.push(e),
            }
        }
    }
    Err(format!(
        "NVRTC (libnvrtc.so.13) was not found: not by name (LD_LIBRARY_PATH), nor in {}. \
         Install it with `pip install nvidia-cuda-nvrtc` (then its `nvidia/cu13/lib` \
         directory is searched when passed, or set RGRAD_NVRTC_DIR to it) or a CUDA toolkit",
        tried.join("; ")
    ))
}

/// Compiles one module of CUDA C (`src`) to a CUBIN for `sm_{major}{minor}`, with
/// `-default-device` (functions are device code unless marked) and C++17. On failure the
/// error holds NVRTC's log.
pub fn compile_cubin(src: &str, arch_major: i32, arch_minor: i32) -> Result<Vec<u8>, String> {
    load(&[])?;
    let csrc = CString::new(src).map_err(|e| format!("kernel source has a NUL byte: {e}"))?;
    let prog = result::create_program(&csrc, Some(c"rgrad.cu"))
        .map_err(|e| format!("nvrtcCreateProgram: {e:?}"))?;
    let opts = [
        format!("--gpu-architecture=sm_{arch_major}{arch_minor}"),
        "-default-device".to_string(),
        "--std=c++17".to_string(),
    ];
    // SAFETY: `prog` was created above and is destroyed once, at the end; `csrc`, which
    // it may reference, lives until then.
    let compiled = unsafe { result::compile_program(prog, &opts) };
    let out = match compiled {
        Ok(()) => cubin(prog),
        Err(e) => {
            // SAFETY: as above.
            let log = unsafe { result::get_program_log(prog) }
                .map(|l| {
                    let bytes: Vec<u8> =
                        l.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
                    String::from_utf8_lossy(&bytes).into_owned()
                })
                .unwrap_or_default();
            Err(format!(
                "NVRTC ({e:?}) for sm_{arch_major}{arch_minor}:\n{log}"
            ))
        }
    };
    // SAFETY: as above; nothing uses `prog` after this.
    let _ = unsafe { result::destroy_program(prog) };
    out
}

/// The CUBIN of a compiled program.
fn cubin(prog: sys::nvrtcProgram) -> Result<Vec<u8>, String> {
    let mut size = 0usize;
    // SAFETY: `prog` is a live, compiled program (the caller's); `size` is written.
    unsafe { sys::nvrtcGetCUBINSize(prog, &mut size) }
        .result()
        .map_err(|e| format!("nvrtcGetCUBINSize: {e:?}"))?;
    let mut buf = vec![0u8; size];
    // SAFETY: `buf` holds the `size` bytes NVRTC writes.
    unsafe { sys::nvrtcGetCUBIN(prog, buf.as_mut_ptr().cast()) }
        .result()
        .map_err(|e| format!("nvrtcGetCUBIN: {e:?}"))?;
    Ok(buf)
}
