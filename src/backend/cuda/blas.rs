//! Products through cuBLAS (loaded at run time). Row-major `C = A·B` is column-major
//! `Cᵀ = Bᵀ·Aᵀ`: each operand is passed as it lies in memory, transposed or not, so a
//! transposed view (a linear layer's `Wᵀ`) costs no copy; an operand cuBLAS cannot read
//! in place (neither dim of unit stride) is copied to a contiguous one first.

use super::CudaBuf;
use super::driver::{Dev, Stream};
use crate::layout::Layout;
use crate::{Error, Result};
use cudarc::cublas::{result, sys};
use std::sync::atomic::{AtomicBool, Ordering};

/// `rgrad.backends.cuda.matmul.allow_tf32` (torch's default: False).
pub static ALLOW_TF32: AtomicBool = AtomicBool::new(false);

/// A cuBLAS handle of one device (used under the device's lock).
pub struct Handle {
    raw: sys::cublasHandle_t,
    tf32: bool,
}

// SAFETY: used by one thread at a time (behind `Dev::blas`'s mutex).
unsafe impl Send for Handle {}

fn blas_error(e: result::CublasError) -> Error {
    Error::runtime(format!("CUDA error: {e:?} when calling cuBLAS"))
}

/// How cuBLAS reads a row-major `rows × cols` matrix with strides `(rs, cs)` as the
/// column-major transpose it wants: `(transpose, ld)`, or `None` where it cannot.
pub fn as_col_major_transpose(
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
) -> Option<(bool, usize)> {
    // Row-major with unit column stride: memory holds Xᵀ column-major, leading dim rs.
    if cs == 1 || cols == 1 {
        let ld = if rows > 1 { rs } else { cols.max(1) };
        if ld >= cols.max(1) {
            return Some((false, ld));
        }
    }
    // Column-major (unit row stride): memory holds X column-major; Xᵀ is its transpose.
    if rs == 1 || rows == 1 {
        let ld = if cols > 1 { cs } else { rows.max(1) };
        if ld >= rows.max(1) {
            return Some((true, ld));
        }
    }
    None
}

fn op(t: bool) -> sys::cublasOperation_t {
    if t {
        sys::cublasOperation_t::CUBLAS_OP_T
    } else {
        sys::cublasOperation_t::CUBLAS_OP_N
    }
}

/// One operand as cuBLAS takes it.
pub struct Operand<'a> {
    pub buf: &'a CudaBuf,
    pub layout: &'a Layout,
}

/// `out[b] = beta·out[b] + A[b]·B[b]` for 2-D or 3-D layouts; `out` is a fresh contiguous
/// `[batch,] m × n` buffer. The operands must be readable in place (see
/// [`as_col_major_transpose`]; the caller copies those that are not).
pub fn gemm(
    dev: &Dev,
    stream: &Stream,
    a: Operand<'_>,
    b: Operand<'_>,
    out: &CudaBuf,
    beta: f64,
) -> Result<bool> {
    let (la, lb) = (a.layout, b.layout);
    let nd = la.ndim();
    let (m, k, n) = (la.shape[nd - 2], la.shape[nd - 1], lb.shape[nd - 1]);
    let batch = if nd == 3 { la.shape[0] } else { 1 };
    let Some((ta, lda)) = as_col_major_transpose(m, k, la.strides[nd - 2], la.strides[nd - 1])
    else {
        return Ok(false);
    };
    let Some((tb, ldb)) = as_col_major_transpose(k, n, lb.strides[nd - 2], lb.strides[nd - 1])
    else {
        return Ok(false);
    };
    if m == 0 || n == 0 || batch == 0 {
        return Ok(true);
    }
    if k == 0 {
        // a product of nothing: `beta·out` (cuBLAS refuses k = 0)
        if beta == 0.0 {
            dev.bind()?;
            // SAFETY: `out` holds `batch·m·n` elements.
            unsafe {
                cudarc::driver::result::memset_d8_async(out.ptr(), 0, out.nbytes(), stream.raw)
            }
            .map_err(super::driver::cuda_error)?;
        }
        return Ok(true);
    }
    let (sa, sb) = if nd == 3 {
        (la.strides[0] as i64, lb.strides[0] as i64)
    } else {
        (0, 0)
    };
    let too_big = |v: usize| i32::try_from(v).is_err();
    if [m, n, k, lda, ldb, batch].into_iter().any(too_big) {
        return Err(Error::runtime(
            "CUDA error: a matrix dimension past 2**31-1 in a cuBLAS product",
        ));
    }
    let esize = out.dtype.size_in_bytes() as u64;
    let pa = a.buf.ptr() + la.offset as u64 * esize;
    let pb = b.buf.ptr() + lb.offset as u64 * esize;
    let k_eff = k as i32;
    dev.bind()?;
    let mut g = dev.blas.lock();
    if g.is_none() {
        // SAFETY: only dlopens cuBLAS by its usual names.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::runtime(
                "rgrad could not load cuBLAS (libcublas.so): install the CUDA toolkit or `pip install nvidia-cublas`",
            ));
        }
        let raw = result::create_handle().map_err(blas_error)?;
        *g = Some(Handle { raw, tf32: false });
    }
    let Some(h) = g.as_mut() else {
        return Err(Error::Internal("cuBLAS handle".into()));
    };
    let tf32 = ALLOW_TF32.load(Ordering::Relaxed);
    // SAFETY: the handle is ours (under the lock); pointers are live device blocks of the
    // extents the layouts give; the output is `batch·m·n` contiguous elements.
    unsafe {
        if h.tf32 != tf32 {
            let mode = if tf32 {
                sys::cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH
            } else {
                sys::cublasMath_t::CUBLAS_DEFAULT_MATH
            };
            sys::cublasSetMathMode(h.raw, mode)
                .result()
                .map_err(blas_error)?;
            h.tf32 = tf32;
        }
        result::set_stream(h.raw, stream.raw as _).map_err(blas_error)?;
        // Cᵀ (n × m, ld n) = Bᵀ (n × k) · Aᵀ (k × m)
        match out.dtype {
            crate::dtype::DType::F32 => {
                let (one, beta) = (1f32, beta as f32);
                result::sgemm_strided_batched(
                    h.raw,
                    op(tb),
                    op(ta),
                    n as i32,
                    m as i32,
                    k_eff,
                    &one,
                    pb as *const f32,
                    ldb as i32,
                    sb,
                    pa as *const f32,
                    lda as i32,
                    sa,
                    &beta,
                    out.ptr() as *mut f32,
                    n as i32,
                    (m * n) as i64,
                    batch as i32,
                )
                .map_err(blas_error)?;
            }
            crate::dtype::DType::F64 => {
                let one = 1f64;
                result::dgemm_strided_batched(
                    h.raw,
                    op(tb),
                    op(ta),
                    n as i32,
                    m as i32,
                    k_eff,
                    &one,
                    pb as *const f64,
                    ldb as i32,
                    sb,
                    pa as *const f64,
                    lda as i32,
                    sa,
                    &beta,
                    out.ptr() as *mut f64,
                    n as i32,
                    (m * n) as i64,
                    batch as i32,
                )
                .map_err(blas_error)?;
            }
            d => {
                return Err(Error::not_implemented(format!(
                    "\"addmm_cuda\" not implemented for '{}'",
                    d.scalar_type_name()
                )));
            }
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::as_col_major_transpose as t;

    #[test]
    fn operands_are_read_in_place_where_one_dim_has_unit_stride() {
        assert_eq!(t(3, 4, 4, 1), Some((false, 4))); // row-major
        assert_eq!(t(3, 4, 1, 3), Some((true, 3))); // a transposed view
        assert_eq!(t(3, 4, 8, 1), Some((false, 8))); // a slice of wider rows
        assert_eq!(t(3, 4, 2, 6), None); // neither stride 1
        assert_eq!(t(1, 4, 0, 1), Some((false, 4))); // one row: any row stride
        assert_eq!(t(3, 1, 1, 0), Some((false, 1))); // one column
    }
}
