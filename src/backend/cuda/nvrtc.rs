//! NVRTC, loaded at run time: kernel source to a CUBIN for one compute capability.

use cudarc::nvrtc::{result, sys};

/// Compiles `src` for `sm_<major><minor>`; the error carries NVRTC's log.
pub fn compile_cubin(src: &str, major: i32, minor: i32) -> Result<Vec<u8>, String> {
    // SAFETY: only tries to dlopen NVRTC by its usual names (cudarc panics on first use
    // of a library it cannot find, so ask first).
    if !unsafe { sys::is_culib_present() } {
        return Err(
            "rgrad could not load NVRTC (libnvrtc.so), which compiles its CUDA kernels: \
                    install the CUDA toolkit or `pip install nvidia-cuda-nvrtc`"
                .to_string(),
        );
    }
    let csrc = std::ffi::CString::new(src).map_err(|e| e.to_string())?;
    let prog = result::create_program(&csrc, None).map_err(|e| format!("NVRTC: {e:?}"))?;
    let opts = [
        format!("--gpu-architecture=sm_{major}{minor}"),
        "-default-device".to_string(),
        "--std=c++17".to_string(),
    ];
    // SAFETY: `prog` is live until destroyed below; buffers are sized by NVRTC.
    unsafe {
        let compiled = result::compile_program(prog, &opts);
        let out = match compiled {
            Ok(()) => {
                let mut n = 0usize;
                sys::nvrtcGetCUBINSize(prog, &mut n)
                    .result()
                    .map_err(|e| format!("NVRTC: {e:?}"))?;
                let mut buf = vec![0u8; n];
                sys::nvrtcGetCUBIN(prog, buf.as_mut_ptr() as *mut std::ffi::c_char)
                    .result()
                    .map_err(|e| format!("NVRTC: {e:?}"))?;
                Ok(buf)
            }
            Err(e) => {
                let log = result::get_program_log(prog)
                    .map(|l| {
                        let bytes: Vec<u8> =
                            l.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
                        String::from_utf8_lossy(&bytes).into_owned()
                    })
                    .unwrap_or_default();
                Err(format!("NVRTC failed to compile a kernel ({e:?}):\n{log}"))
            }
        };
        let _ = result::destroy_program(prog);
        out
    }
}
