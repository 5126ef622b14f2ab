//! `rgrad.Tensor`'s arithmetic: operators, named binary ops and in-place ops.

use super::convert::{self, Arg, arg, scalar};
use super::gil;
use super::pytensor::*;
use crate::backend::BinaryOp;
use crate::dtype::Scalar;
use crate::ops::{self, Operand, RoundingMode};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

#[pymethods]
impl PyTensor {
    // ---- arithmetic operators --------------------------------------------------------
    /// `self + other`.
    fn __add__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, |a, b| ops::add_op(a, b, Scalar::Int(1)))
    }
    /// `other + self`, for a number or tensor on the left.
    fn __radd__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        // torch records `2 + x` as add(x, 2): x is the node's first input
        rbinop_commuted(py, &self.t, o, |a, b| ops::add_op(a, b, Scalar::Int(1)))
    }
    /// `self - other`.
    fn __sub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, |a, b| ops::sub_op(a, b, Scalar::Int(1)))
    }
    /// `other - self`, for a number or tensor on the left.
    fn __rsub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match arg(o) {
            Some(Arg::S(s)) => Ok(wrap(py, ops::rsub_scalar(&self.t, s)?)?.into_any()),
            Some(Arg::T(t)) => Ok(wrap(py, ops::sub(t, &self.t)?)?.into_any()),
            None => Ok(py.NotImplemented()),
        }
    }
    /// `self * other`.
    fn __mul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::mul_op)
    }
    /// `other * self`, for a number or tensor on the left.
    fn __rmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        // torch records `2 * x` as mul(x, 2): x is the node's first input
        rbinop_commuted(py, &self.t, o, ops::mul_op)
    }
    /// `self / other`.
    fn __truediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::div_op)
    }
    /// `other / self`, for a number or tensor on the left.
    fn __rtruediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match arg(o) {
            Some(Arg::S(s)) => Ok(wrap(py, ops::rdiv_scalar(&self.t, s)?)?.into_any()),
            Some(Arg::T(t)) => Ok(wrap(py, ops::div(t, &self.t)?)?.into_any()),
            None => Ok(py.NotImplemented()),
        }
    }
    /// `self ** other`.
    fn __pow__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::pow_op)
    }
    /// `other ** self`, for a number or tensor on the left.
    fn __rpow__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        rbinop(py, &self.t, o, ops::pow_op)
    }
    /// `self @ other`.
    fn __matmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match o.cast::<PyTensor>() {
            Ok(b) => {
                let b = b.get().t.clone();
                Ok(wrap(py, gil::detach(py, || ops::matmul(&self.t, &b))?)?.into_any())
            }
            Err(_) => Ok(py.NotImplemented()),
        }
    }
    /// `other @ self`, with `other` on the left.
    fn __rmatmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match o.cast::<PyTensor>() {
            Ok(b) => {
                let b = b.get().t.clone();
                Ok(wrap(py, gil::detach(py, || ops::matmul(&b, &self.t))?)?.into_any())
            }
            Err(_) => Ok(py.NotImplemented()),
        }
    }
    /// `-self`.
    fn __neg__(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        wrap(py, ops::neg(&self.t)?)
    }
    /// `+self`: returns this tensor.
    fn __pos__(slf: &Bound<'_, Self>) -> Py<PyTensor> {
        slf.clone().unbind()
    }
    /// `abs(self)`.
    fn __abs__(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        wrap(py, ops::abs(&self.t)?)
    }
    /// `~self`: logical NOT of a bool tensor, bitwise NOT of an integer one.
    fn __invert__(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        wrap(py, ops::invert(&self.t)?)
    }
    /// `self & other`: bitwise AND of integer or bool tensors (logical AND for bools).
    fn __and__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::bitwise_and)
    }
    /// `other & self`, for a number on the left.
    fn __rand__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        rbinop_commuted(py, &self.t, o, ops::bitwise_and)
    }
    /// `self | other`: bitwise OR of integer or bool tensors.
    fn __or__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::bitwise_or)
    }
    /// `other | self`, for a number on the left.
    fn __ror__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        rbinop_commuted(py, &self.t, o, ops::bitwise_or)
    }
    /// `self ^ other`: bitwise XOR of integer or bool tensors.
    fn __xor__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::bitwise_xor)
    }
    /// `other ^ self`, for a number on the left.
    fn __rxor__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        rbinop_commuted(py, &self.t, o, ops::bitwise_xor)
    }
    /// `==`, `!=`, `<`, `<=`, `>`, `>=`: element-wise comparisons giving bool tensors.
    fn __richcmp__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        op: pyo3::basic::CompareOp,
    ) -> PyResult<Py<PyAny>> {
        use pyo3::basic::CompareOp as C;
        let k = match op {
            C::Eq => BinaryOp::Eq,
            C::Ne => BinaryOp::Ne,
            C::Lt => BinaryOp::Lt,
            C::Le => BinaryOp::Le,
            C::Gt => BinaryOp::Gt,
            C::Ge => BinaryOp::Ge,
        };
        match arg(o) {
            Some(b) => Ok(wrap(py, ops::compare(k, Operand::T(&self.t), b.operand())?)?.into_any()),
            None if matches!(op, C::Eq) => {
                Ok(false.into_pyobject(py)?.to_owned().into_any().unbind())
            }
            None if matches!(op, C::Ne) => {
                Ok(true.into_pyobject(py)?.to_owned().into_any().unbind())
            }
            None => Ok(py.NotImplemented()),
        }
    }
    /// `self += other`, in place.
    fn __iadd__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        let b = other_arg(o, "iadd")?;
        ops::add_(&slf.get().t, b.operand(), Scalar::Int(1))?;
        Ok(())
    }
    /// `self -= other`, in place.
    fn __isub__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        let b = other_arg(o, "isub")?;
        ops::sub_(&slf.get().t, b.operand(), Scalar::Int(1))?;
        Ok(())
    }
    /// `self *= other`, in place.
    fn __imul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        let b = other_arg(o, "imul")?;
        ops::mul_(&slf.get().t, b.operand())?;
        Ok(())
    }
    /// `self /= other`, in place.
    fn __itruediv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        let b = other_arg(o, "itruediv")?;
        ops::div_(&slf.get().t, b.operand())?;
        Ok(())
    }
    /// `self **= other`, in place (as torch; without it Python rebinds to `self ** other`).
    fn __ipow__(
        slf: &Bound<'_, Self>,
        o: &Bound<'_, PyAny>,
        _modulo: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let b = other_arg(o, "ipow")?;
        ops::pow_(&slf.get().t, b.operand())?;
        Ok(())
    }

    // ---- named binary ops -------------------------------------------------------------
    /// Adds `other`, scaled by `alpha`, to this tensor.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast with this tensor.
    ///     alpha: The multiplier for `other` (1 by default).
    #[pyo3(signature = (other, *, alpha=None))]
    fn add(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let (b, a) = (other_arg(other, "add")?, alpha_arg(alpha)?);
        wrap(
            py,
            run2(py, &self.t, &b, || {
                ops::add_op(Operand::T(&self.t), b.operand(), a)
            })?,
        )
    }
    /// Subtracts `other`, scaled by `alpha`, from this tensor.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast with this tensor.
    ///     alpha: The multiplier for `other` (1 by default).
    #[pyo3(signature = (other, *, alpha=None))]
    fn sub(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let (b, a) = (other_arg(other, "sub")?, alpha_arg(alpha)?);
        wrap(
            py,
            run2(py, &self.t, &b, || {
                ops::sub_op(Operand::T(&self.t), b.operand(), a)
            })?,
        )
    }
    /// Python's `%`: the remainder with the sign of the divisor (torch.remainder).
    fn __mod__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::remainder_op)
    }
    /// `number % tensor`.
    fn __rmod__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match arg(o) {
            Some(Arg::S(s)) => Ok(wrap(py, ops::rremainder_scalar(&self.t, s)?)?.into_any()),
            _ => rbinop(py, &self.t, o, ops::remainder_op),
        }
    }
    /// Python's `//`: division rounded toward negative infinity.
    fn __floordiv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binop(py, &self.t, o, ops::floor_divide)
    }
    /// `number // tensor`.
    fn __rfloordiv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match arg(o) {
            Some(Arg::S(s)) => Ok(wrap(py, ops::rfloor_divide_scalar(&self.t, s)?)?.into_any()),
            _ => rbinop(py, &self.t, o, ops::floor_divide),
        }
    }
    /// Computes the remainder of division with the sign of the divisor (Python's `%`).
    ///
    /// Args:
    ///     other: The divisor, a tensor or number.
    fn remainder(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = other_arg(other, "remainder")?;
        wrap(py, ops::remainder_op(Operand::T(&self.t), b.operand())?)
    }
    /// Computes the remainder of division with the sign of the dividend (C's fmod).
    ///
    /// Args:
    ///     other: The divisor, a tensor or number.
    fn fmod(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = other_arg(other, "fmod")?;
        wrap(py, ops::fmod_op(Operand::T(&self.t), b.operand())?)
    }
    /// Divides and rounds the result toward negative infinity.
    ///
    /// Args:
    ///     other: The divisor, a tensor or number.
    fn floor_divide(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = other_arg(other, "floor_divide")?;
        wrap(py, ops::floor_divide(Operand::T(&self.t), b.operand())?)
    }
    /// Multiplies this tensor by `other`.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast with this tensor.
    fn mul(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = other_arg(other, "mul")?;
        wrap(
            py,
            run2(py, &self.t, &b, || {
                ops::mul_op(Operand::T(&self.t), b.operand())
            })?,
        )
    }
    /// Divides each element of this tensor by the corresponding element of `other`.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast with this tensor.
    ///     rounding_mode: None (true division), "trunc" or "floor" (zero gradient).
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn div(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        rounding_mode: Option<&str>,
    ) -> PyResult<Py<PyTensor>> {
        let b = other_arg(other, "div")?;
        match RoundingMode::parse(rounding_mode)? {
            RoundingMode::True => wrap(
                py,
                run2(py, &self.t, &b, || {
                    ops::div_op(Operand::T(&self.t), b.operand())
                })?,
            ),
            RoundingMode::Floor => wrap(
                py,
                ops::div_rounded(Operand::T(&self.t), b.operand(), true)?,
            ),
            RoundingMode::Trunc => wrap(
                py,
                ops::div_rounded(Operand::T(&self.t), b.operand(), false)?,
            ),
        }
    }

    /// Takes the power of each element with `exponent` and returns a tensor with the result.
    ///
    /// Args:
    ///     exponent: A tensor or number, broadcast with this tensor.
    fn pow(&self, py: Python<'_>, exponent: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = other_arg(exponent, "pow")?;
        wrap(
            py,
            run2(py, &self.t, &b, || {
                ops::pow_op(Operand::T(&self.t), b.operand())
            })?,
        )
    }
    /// Computes `self == other` element-wise, as a bool tensor.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast with this tensor.
    fn eq(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        self.compare(py, other, BinaryOp::Eq, "eq")
    }
    /// Computes `self != other` element-wise, as a bool tensor.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast with this tensor.
    fn ne(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        self.compare(py, other, BinaryOp::Ne, "ne")
    }
    /// Computes `self < other` element-wise, as a bool tensor.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast with this tensor.
    fn lt(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        self.compare(py, other, BinaryOp::Lt, "lt")
    }
    /// Computes `self <= other` element-wise, as a bool tensor.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast with this tensor.
    fn le(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        self.compare(py, other, BinaryOp::Le, "le")
    }
    /// Computes `self > other` element-wise, as a bool tensor.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast with this tensor.
    fn gt(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        self.compare(py, other, BinaryOp::Gt, "gt")
    }
    /// Computes `self >= other` element-wise, as a bool tensor.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast with this tensor.
    fn ge(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        self.compare(py, other, BinaryOp::Ge, "ge")
    }
    /// Computes the element-wise logical AND of this tensor and `other`.
    ///
    /// Args:
    ///     other: A tensor, broadcast with this tensor.
    fn logical_and(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        wrap(
            py,
            ops::logical(
                BinaryOp::LogicalAnd,
                &self.t,
                &convert::tensor_arg(other, "logical_and", "other", 1)?,
            )?,
        )
    }
    /// Computes the element-wise logical OR of this tensor and `other`.
    ///
    /// Args:
    ///     other: A tensor, broadcast with this tensor.
    fn logical_or(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        wrap(
            py,
            ops::logical(
                BinaryOp::LogicalOr,
                &self.t,
                &convert::tensor_arg(other, "logical_or", "other", 1)?,
            )?,
        )
    }
    /// Clamps all elements into the range [min, max].
    ///
    /// Args:
    ///     min: The lower bound, or None for no lower bound.
    ///     max: The upper bound, or None for no upper bound.
    #[pyo3(signature = (min=None, max=None))]
    fn clamp(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        if let Some((lo, hi)) = tensor_bounds(&self.t, min, max)? {
            return wrap(py, ops::clamp_tensor(&self.t, lo.as_ref(), hi.as_ref())?);
        }
        let (lo, hi) = (bound_arg(min)?, bound_arg(max)?);
        wrap(py, ops::clamp(&self.t, lo, hi)?)
    }
    /// Alias for `clamp()`.
    ///
    /// Args:
    ///     min: The lower bound, or None for no lower bound.
    ///     max: The upper bound, or None for no upper bound.
    #[pyo3(signature = (min=None, max=None))]
    fn clip(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        self.clamp(py, min, max)
    }

    // (the op table's unary methods: src/py/unary.rs)
    /// Computes the element-wise logical NOT of this tensor.
    fn logical_not(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        wrap(py, run(py, &self.t, || ops::logical_not(&self.t))?)
    }

    // ---- in-place ---------------------------------------------------------------------
    /// In-place version of `add()`.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast to this tensor's shape.
    ///     alpha: The multiplier for `other` (1 by default).
    ///
    /// Returns:
    ///     This tensor.
    #[pyo3(signature = (other, *, alpha=None))]
    fn add_(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let (b, a) = (other_arg(other, "add_")?, alpha_arg(alpha)?);
        ops::add_(&slf.get().t, b.operand(), a)?;
        Ok(slf.clone().unbind())
    }
    /// In-place version of `sub()`.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast to this tensor's shape.
    ///     alpha: The multiplier for `other` (1 by default).
    ///
    /// Returns:
    ///     This tensor.
    #[pyo3(signature = (other, *, alpha=None))]
    fn sub_(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let (b, a) = (other_arg(other, "sub_")?, alpha_arg(alpha)?);
        ops::sub_(&slf.get().t, b.operand(), a)?;
        Ok(slf.clone().unbind())
    }
    /// In-place version of `mul()`.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast to this tensor's shape.
    ///
    /// Returns:
    ///     This tensor.
    fn mul_(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = other_arg(other, "mul_")?;
        ops::mul_(&slf.get().t, b.operand())?;
        Ok(slf.clone().unbind())
    }
    /// In-place version of `div()`.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast to this tensor's shape.
    ///     rounding_mode: None (true division), "trunc" or "floor" (zero gradient).
    ///
    /// Returns:
    ///     This tensor.
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn div_(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        rounding_mode: Option<&str>,
    ) -> PyResult<Py<PyTensor>> {
        let b = other_arg(other, "div_")?;
        let x = &slf.get().t;
        match RoundingMode::parse(rounding_mode)? {
            RoundingMode::True => ops::div_(x, b.operand())?,
            RoundingMode::Floor => ops::div_rounded_(x, b.operand(), true)?,
            RoundingMode::Trunc => ops::div_rounded_(x, b.operand(), false)?,
        };
        Ok(slf.clone().unbind())
    }
    /// In-place version of `pow()`.
    ///
    /// Args:
    ///     other: A tensor or number, broadcast to this tensor's shape.
    ///
    /// Returns:
    ///     This tensor.
    fn pow_(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = other_arg(other, "pow_")?;
        ops::pow_(&slf.get().t, b.operand())?;
        Ok(slf.clone().unbind())
    }
    /// Fills this tensor with zeros. Returns this tensor.
    fn zero_(slf: &Bound<'_, Self>) -> PyResult<Py<PyTensor>> {
        ops::zero_(&slf.get().t)?;
        Ok(slf.clone().unbind())
    }
    /// Fills this tensor with the specified value.
    ///
    /// Args:
    ///     value: A number or a one-element tensor.
    ///
    /// Returns:
    ///     This tensor.
    fn fill_(slf: &Bound<'_, Self>, value: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let x = &slf.get().t;
        let v = match value.cast::<PyTensor>() {
            // a 0-d tensor value is cast to x's dtype; recorded as FillBackward3 (the
            // value gets the gradient, summed, when it requires grad)
            Ok(t) => {
                let t = &t.get().t;
                ops::check_fill_tensor_value(t)?;
                if crate::ops::wants_grad(x) || crate::ops::wants_grad(t) {
                    run(slf.py(), x, || ops::fill_tensor_(x, t))?;
                    return Ok(slf.clone().unbind());
                }
                ops::to_dtype(&t.detach(), x.dtype())?.item()?
            }
            Err(_) => scalar(value)
                .ok_or_else(|| PyTypeError::new_err("fill_(): argument 'value' must be Number"))?,
        };
        run(slf.py(), x, || ops::fill_(x, v))?;
        Ok(slf.clone().unbind())
    }
    /// In-place version of `clamp()`.
    ///
    /// Args:
    ///     min: The lower bound, or None for no lower bound.
    ///     max: The upper bound, or None for no upper bound.
    ///
    /// Returns:
    ///     This tensor.
    #[pyo3(signature = (min=None, max=None))]
    fn clamp_(
        slf: &Bound<'_, Self>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let t = &slf.get().t;
        match tensor_bounds(t, min, max)? {
            Some((lo, hi)) => ops::clamp_tensor_(t, lo.as_ref(), hi.as_ref())?,
            None => ops::clamp_(t, bound_arg(min)?, bound_arg(max)?)?,
        };
        Ok(slf.clone().unbind())
    }
    /// Copies the elements from `src` into this tensor and returns this tensor.
    ///
    /// Args:
    ///     src: A tensor broadcastable to this tensor's shape; its dtype may differ.
    ///     non_blocking: Accepted for torch compatibility and ignored.
    #[pyo3(signature = (src, non_blocking=false))]
    fn copy_(
        slf: &Bound<'_, Self>,
        src: &Bound<'_, PyAny>,
        non_blocking: bool,
    ) -> PyResult<Py<PyTensor>> {
        let _ = non_blocking;
        let s = match scalar(src) {
            Some(v) => ops::scalar_tensor(v, slf.get().t.dtype()),
            None => convert::tensor_arg(src, "copy_", "src", 1)?,
        };
        ops::copy_(&slf.get().t, &s)?;
        Ok(slf.clone().unbind())
    }
    /// Fills elements of this tensor with `value` where `mask` is True.
    ///
    /// Args:
    ///     mask: A bool tensor, broadcastable to this tensor's shape.
    ///     value: A number or a 0-d tensor.
    ///
    /// Returns:
    ///     This tensor.
    fn masked_fill_(
        slf: &Bound<'_, Self>,
        mask: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let m = convert::tensor_arg(mask, "masked_fill_", "mask", 1)?;
        let x = &slf.get().t;
        ops::check_inplace_fill_mask(x, &m)?;
        match grad_value(x, value) {
            Some(v) => {
                crate::ops::inplace::commit_checked(x, |x| ops::masked_fill_tensor(x, &m, &v))?
            }
            None => {
                let v = scalar_or_item(value)?;
                crate::ops::inplace::commit_checked(x, |x| ops::masked_fill(x, &m, v))?
            }
        };
        Ok(slf.clone().unbind())
    }
}
