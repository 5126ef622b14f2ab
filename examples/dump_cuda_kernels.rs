//! Writes every CUDA kernel source rgrad can generate to a folder, to read or compile by
//! hand: `cargo run --example dump_cuda_kernels -- /tmp/k` (then `nvcc -cubin` or NVRTC).

fn main() -> std::io::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "rgrad-kernels".to_string());
    std::fs::create_dir_all(&dir)?;
    let all = rgrad::backend::cuda::source::all();
    for k in &all {
        std::fs::write(format!("{dir}/{}.cu", k.name), &k.source)?;
    }
    println!("{} kernel sources written to {dir}", all.len());
    Ok(())
}
