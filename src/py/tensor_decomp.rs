//! `rgrad.Tensor`'s factorizations and solves (`src/ops/decomp.rs`), as private methods
//! the Python layer (`rgrad.linalg`, `torch.*` forms, `return_types`) names and checks.

use super::convert::tensor_ref;
use super::pytensor::*;
use crate::ops;
use pyo3::prelude::*;

type Pair = (Py<PyTensor>, Py<PyTensor>);
type Triple = (Py<PyTensor>, Py<PyTensor>, Py<PyTensor>);

fn pair(py: Python<'_>, (a, b): (crate::Tensor, crate::Tensor)) -> PyResult<Pair> {
    Ok((wrap(py, a)?, wrap(py, b)?))
}

#[pymethods]
impl PyTensor {
    fn _linalg_det(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        wrap(py, run_matrix(py, &self.t, || ops::linalg_det(&self.t))?)
    }
    fn _linalg_slogdet(&self, py: Python<'_>) -> PyResult<Pair> {
        pair(
            py,
            run_matrix(py, &self.t, || ops::linalg_slogdet(&self.t))?,
        )
    }
    fn _linalg_inv_ex(&self, py: Python<'_>, check_errors: bool, name: &str) -> PyResult<Pair> {
        pair(
            py,
            run_matrix(py, &self.t, || {
                ops::linalg_inv_ex(&self.t, check_errors, name)
            })?,
        )
    }
    fn _linalg_solve_ex(
        &self,
        py: Python<'_>,
        b: &Bound<'_, PyAny>,
        left: bool,
        check_errors: bool,
        name: &str,
    ) -> PyResult<Pair> {
        let b = tensor_ref(b, "linalg_solve", "B", 2)?;
        pair(
            py,
            run_matrix(py, &self.t, || {
                ops::linalg_solve_ex(&self.t, b, left, check_errors, name)
            })?,
        )
    }
    fn _linalg_lu_factor_ex(
        &self,
        py: Python<'_>,
        pivot: bool,
        check_errors: bool,
        name: &str,
    ) -> PyResult<Triple> {
        let (lu, p, i) = run_matrix(py, &self.t, || {
            ops::linalg_lu_factor_ex(&self.t, pivot, check_errors, name)
        })?;
        Ok((wrap(py, lu)?, wrap(py, p)?, wrap(py, i)?))
    }
    fn _linalg_lu_solve(
        &self,
        py: Python<'_>,
        pivots: &Bound<'_, PyAny>,
        b: &Bound<'_, PyAny>,
        left: bool,
        adjoint: bool,
    ) -> PyResult<Py<PyTensor>> {
        let p = tensor_ref(pivots, "linalg_lu_solve", "pivots", 2)?;
        let b = tensor_ref(b, "linalg_lu_solve", "B", 3)?;
        wrap(
            py,
            run_matrix(py, &self.t, || {
                ops::linalg_lu_solve(&self.t, p, b, left, adjoint)
            })?,
        )
    }
    fn _linalg_solve_triangular(
        &self,
        py: Python<'_>,
        b: &Bound<'_, PyAny>,
        upper: bool,
        left: bool,
        unitriangular: bool,
    ) -> PyResult<Py<PyTensor>> {
        let b = tensor_ref(b, "linalg_solve_triangular", "B", 2)?;
        wrap(
            py,
            run_matrix(py, &self.t, || {
                ops::linalg_solve_triangular(&self.t, b, upper, left, unitriangular)
            })?,
        )
    }
    fn _linalg_cholesky_ex(
        &self,
        py: Python<'_>,
        upper: bool,
        check_errors: bool,
        name: &str,
    ) -> PyResult<Pair> {
        pair(
            py,
            run_matrix(py, &self.t, || {
                ops::linalg_cholesky_ex(&self.t, upper, check_errors, name)
            })?,
        )
    }
    fn _cholesky_solve(
        &self,
        py: Python<'_>,
        input2: &Bound<'_, PyAny>,
        upper: bool,
    ) -> PyResult<Py<PyTensor>> {
        let l = tensor_ref(input2, "cholesky_solve", "input2", 2)?;
        wrap(
            py,
            run_matrix(py, &self.t, || ops::cholesky_solve(&self.t, l, upper))?,
        )
    }
    /// (solution, rank) of `linalg.lstsq(self, b)` by LAPACK's dgelsy, no graph
    /// (rgrad._linalg_more checks, broadcasts and records).
    fn _lstsq_gelsy(&self, py: Python<'_>, b: &Bound<'_, PyAny>, rcond: f64) -> PyResult<Pair> {
        let b = tensor_ref(b, "linalg_lstsq", "b", 2)?;
        pair(
            py,
            run_matrix(py, &self.t, || ops::lstsq_gelsy(&self.t, b, rcond))?,
        )
    }
    fn _cholesky_inverse(&self, py: Python<'_>, upper: bool) -> PyResult<Py<PyTensor>> {
        wrap(
            py,
            run_matrix(py, &self.t, || ops::cholesky_inverse(&self.t, upper))?,
        )
    }
    fn _linalg_matrix_exp(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        wrap(
            py,
            run_matrix(py, &self.t, || ops::linalg_matrix_exp(&self.t))?,
        )
    }
    // (values only, no graph: rgrad._linalg_more checks the arguments and records the nodes)
    fn _geqrf(&self, py: Python<'_>) -> PyResult<Pair> {
        pair(py, run_matrix(py, &self.t, || ops::geqrf(&self.t))?)
    }
    fn _householder_product(
        &self,
        py: Python<'_>,
        tau: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let tau = tensor_ref(tau, "linalg_householder_product", "tau", 2)?;
        wrap(
            py,
            run_matrix(py, &self.t, || ops::householder_product(&self.t, tau))?,
        )
    }
    fn _ormqr(
        &self,
        py: Python<'_>,
        tau: &Bound<'_, PyAny>,
        other: &Bound<'_, PyAny>,
        left: bool,
        transpose: bool,
    ) -> PyResult<Py<PyTensor>> {
        let tau = tensor_ref(tau, "ormqr", "input2", 2)?;
        let other = tensor_ref(other, "ormqr", "input3", 3)?;
        wrap(
            py,
            run_matrix(py, &self.t, || {
                ops::ormqr(&self.t, tau, other, left, transpose)
            })?,
        )
    }
    fn _ldl_factor_ex(&self, py: Python<'_>) -> PyResult<Triple> {
        let (f, p, i) = run_matrix(py, &self.t, || ops::ldl_factor_ex(&self.t))?;
        Ok((wrap(py, f)?, wrap(py, p)?, wrap(py, i)?))
    }
    fn _ldl_solve(
        &self,
        py: Python<'_>,
        pivots: &Bound<'_, PyAny>,
        b: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let p = tensor_ref(pivots, "linalg_ldl_solve", "pivots", 2)?;
        let b = tensor_ref(b, "linalg_ldl_solve", "B", 3)?;
        wrap(
            py,
            run_matrix(py, &self.t, || ops::ldl_solve(&self.t, p, b))?,
        )
    }
    fn _linalg_lu(&self, py: Python<'_>, pivot: bool) -> PyResult<Triple> {
        let (p, l, u) = run_matrix(py, &self.t, || ops::linalg_lu(&self.t, pivot))?;
        Ok((wrap(py, p)?, wrap(py, l)?, wrap(py, u)?))
    }
    fn _lu_unpack(
        &self,
        py: Python<'_>,
        pivots: &Bound<'_, PyAny>,
        unpack_data: bool,
        unpack_pivots: bool,
    ) -> PyResult<Triple> {
        let p = tensor_ref(pivots, "lu_unpack", "LU_pivots", 2)?;
        let (p, l, u) = run_matrix(py, &self.t, || {
            ops::lu_unpack(&self.t, p, unpack_data, unpack_pivots)
        })?;
        Ok((wrap(py, p)?, wrap(py, l)?, wrap(py, u)?))
    }
}
