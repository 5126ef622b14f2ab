//! Writes every CUDA kernel rgrad can generate to a folder: the sources, or with
//! `--cubin XY` the CUBINs NVRTC makes for `sm_XY` (for a GPU machine without NVRTC, or to
//! read with `cuobjdump`):
//!
//! `cargo run --example dump_cuda_kernels -- /tmp/k [--cubin 90]`

use rgrad::backend::cuda::{nvrtc, source};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = args
        .first()
        .cloned()
        .unwrap_or_else(|| "rgrad-kernels".into());
    let arch = args
        .iter()
        .position(|a| a == "--cubin")
        .and_then(|i| args.get(i + 1));
    std::fs::create_dir_all(&dir)?;
    let all = source::all();
    for k in &all {
        match arch {
            None => std::fs::write(format!("{dir}/{}.cu", k.name), &k.source)?,
            Some(xy) => {
                let (major, minor) = xy.split_at(xy.len().saturating_sub(1));
                let cubin = nvrtc::compile_cubin(&k.source, major.parse()?, minor.parse()?)?;
                std::fs::write(format!("{dir}/{}.sm_{xy}.cubin", k.name), cubin)?;
            }
        }
    }
    println!("{} kernels written to {dir}", all.len());
    Ok(())
}
