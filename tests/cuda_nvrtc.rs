//! Every CUDA kernel source compiles with NVRTC, for sm_80 (A100) and sm_90 (H100). Needs
//! NVRTC, not a GPU: `pip install nvidia-cuda-nvrtc` provides it (found through Python's
//! `nvidia` package, `RGRAD_NVRTC_DIR` or `LD_LIBRARY_PATH`). Without it the test fails
//! and says how to install it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may fail loudly

use rgrad::backend::cuda::{nvrtc, source};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The library directories of the pip wheels of the Python on PATH (`nvidia/*/lib`).
fn python_nvidia_dirs() -> Vec<PathBuf> {
    let script = "import os, nvidia\n\
                  for p in nvidia.__path__:\n    \
                  for d in sorted(os.listdir(p)):\n        \
                  print(os.path.join(p, d, 'lib'))";
    ["python3", "python"]
        .iter()
        .find_map(|py| {
            std::process::Command::new(py)
                .args(["-c", script])
                .output()
                .ok()
        })
        .filter(|o| o.status.success())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn every_kernel_source_compiles_for_sm80_and_sm90() {
    if let Err(e) = nvrtc::load(&python_nvidia_dirs()) {
        panic!(
            "{e}\n\nThis test needs NVRTC (no GPU): `pip install nvidia-cuda-nvrtc` into the \
             python3 on PATH, or set RGRAD_NVRTC_DIR to the directory holding libnvrtc.so.13"
        );
    }
    let kernels = source::all();
    let archs = [(8, 0), (9, 0)];
    let jobs: Vec<(usize, (i32, i32))> = (0..kernels.len())
        .flat_map(|k| archs.iter().map(move |&a| (k, a)))
        .collect();
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let start = std::time::Instant::now();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let j = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(k, (major, minor))) = jobs.get(j) else {
                        break;
                    };
                    let kernel = &kernels[k];
                    match nvrtc::compile_cubin(&kernel.source, major, minor) {
                        Ok(cubin) if cubin.len() > 4 && cubin[..4] == *b"\x7fELF" => {}
                        Ok(cubin) => failures.lock().unwrap().push(format!(
                            "{} (sm_{major}{minor}): {} bytes, not an ELF CUBIN",
                            kernel.name,
                            cubin.len()
                        )),
                        Err(log) => failures.lock().unwrap().push(format!(
                            "{} (sm_{major}{minor}): {log}\n--- source ---\n{}",
                            kernel.name, kernel.source
                        )),
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    eprintln!(
        "compiled {} kernels x {} archs in {:.1} s ({threads} threads)",
        kernels.len(),
        archs.len(),
        start.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} of {} compilations failed; the first:\n{}",
        failures.len(),
        jobs.len(),
        failures[0]
    );
}

#[test]
fn compile_errors_carry_nvrtcs_log() {
    if nvrtc::load(&python_nvidia_dirs()).is_err() {
        // (the test above fails with the instructions)
        return;
    }
    let err = nvrtc::compile_cubin(
        "extern \"C\" __global__ void k() { undefined_thing(); }",
        8,
        0,
    )
    .unwrap_err();
    assert!(err.contains("undefined_thing"), "{err}");
}

/// Writes every source to `$RGRAD_DUMP_DIR/<name>.cu`, to read or compile by hand:
/// `RGRAD_DUMP_DIR=/tmp/k cargo test --test cuda_nvrtc dump_sources -- --ignored`.
#[test]
#[ignore]
fn dump_sources() {
    let dir = std::env::var("RGRAD_DUMP_DIR").unwrap();
    for k in source::all() {
        std::fs::write(format!("{dir}/{}.cu", k.name), &k.source).unwrap();
    }
}

/// Writes every kernel's CUBIN for one arch to `$RGRAD_CUBIN_DIR/<name>.sm_<XY>.cubin`
/// (`RGRAD_CUBIN_ARCH=XY`, default 90), for `cuda_kernels` on a GPU machine without NVRTC.
#[test]
#[ignore]
fn dump_cubins() {
    nvrtc::load(&python_nvidia_dirs()).unwrap();
    let dir = std::env::var("RGRAD_CUBIN_DIR").unwrap();
    let arch = std::env::var("RGRAD_CUBIN_ARCH").unwrap_or_else(|_| "90".into());
    let (major, minor) = arch.split_at(arch.len() - 1);
    let (major, minor): (i32, i32) = (major.parse().unwrap(), minor.parse().unwrap());
    std::fs::create_dir_all(&dir).unwrap();
    for k in source::all() {
        let cubin = nvrtc::compile_cubin(&k.source, major, minor).unwrap();
        std::fs::write(format!("{dir}/{}.sm_{arch}.cubin", k.name), cubin).unwrap();
    }
}
