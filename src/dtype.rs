//! Element types, scalars, and torch's type-promotion rules for them.

/// The element types rgrad supports: torch's float32 (default float), float64, int64
/// (default integer) and bool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    I64,
    F32,
    F64,
}

/// The category a dtype belongs to; promotion across categories moves up this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    Bool,
    Int,
    Float,
}

impl DType {
    /// torch's ScalarType name, as its error messages spell it ("Float", "Long"...).
    pub const fn scalar_type_name(self) -> &'static str {
        match self {
            DType::F32 => "Float",
            DType::F64 => "Double",
            DType::I64 => "Long",
            DType::Bool => "Bool",
        }
    }
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }
    pub const fn category(self) -> Category {
        match self {
            DType::Bool => Category::Bool,
            DType::I64 => Category::Int,
            DType::F32 | DType::F64 => Category::Float,
        }
    }
    pub const fn size_in_bytes(self) -> usize {
        match self {
            DType::Bool => 1,
            DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }
    /// torch's name, e.g. "float32".
    pub const fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I64 => "int64",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }
    /// torch's legacy tensor type name, as used in error messages ("FloatTensor").
    pub const fn legacy_type_name(self) -> &'static str {
        match self {
            DType::Bool => "BoolTensor",
            DType::I64 => "LongTensor",
            DType::F32 => "FloatTensor",
            DType::F64 => "DoubleTensor",
        }
    }
    /// The default dtype of a category (floats: [`DType::default_float`]).
    pub fn default_for(c: Category) -> DType {
        match c {
            Category::Bool => DType::Bool,
            Category::Int => DType::I64,
            Category::Float => DType::default_float(),
        }
    }
    /// torch's default float dtype (`get_default_dtype()`): float32 unless
    /// [`set_default_float`](DType::set_default_float) chose float64. What a float Python
    /// number, a factory without `dtype=` and an integer promoted to float become.
    pub fn default_float() -> DType {
        if DEFAULT_FLOAT_IS_F64.load(std::sync::atomic::Ordering::Relaxed) {
            DType::F64
        } else {
            DType::F32
        }
    }
    /// `set_default_dtype(d)`: process-wide, as torch's (a float dtype; the caller checks).
    pub fn set_default_float(d: DType) {
        DEFAULT_FLOAT_IS_F64.store(d == DType::F64, std::sync::atomic::Ordering::Relaxed);
    }
    /// Promotion of two dtypes of the same priority class (torch.promote_types).
    pub fn promote(a: DType, b: DType) -> DType {
        a.max(b)
    }
}

/// Whether the default float dtype is float64 (torch.set_default_dtype; float32 else).
static DEFAULT_FLOAT_IS_F64: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// A Python number on its way into an op: it keeps its kind so that it promotes
/// like torch's "wrapped numbers" (it never widens a tensor's dtype within a category).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Scalar {
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => f64::from(u8::from(b)),
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }
    pub fn category(self) -> Category {
        match self {
            Scalar::Bool(_) => Category::Bool,
            Scalar::Int(_) => Category::Int,
            Scalar::Float(_) => Category::Float,
        }
    }
    /// Refuses, as torch's `checked_convert` does, a number that `dtype` cannot hold: a
    /// float that is NaN, infinite or out of range for int64, or finite beyond float32's
    /// range. (A float's infinity and NaN fit a float; anything fits a bool.)
    pub fn check_fits(self, dtype: DType) -> crate::Result<()> {
        // 2**63: the first float past int64's range (i64::MAX as f64 rounds up to it)
        const TWO_63: f64 = 9_223_372_036_854_775_808.0;
        let (overflows, name) = match (self, dtype) {
            (Scalar::Float(f), DType::I64) => (!(-TWO_63..TWO_63).contains(&f), "int64_t"),
            (Scalar::Float(f), DType::F32) => {
                (f.is_finite() && f.abs() > f64::from(f32::MAX), "float")
            }
            _ => (false, ""),
        };
        if overflows {
            return Err(crate::Error::runtime(format!(
                "value cannot be converted to type {name} without overflow"
            )));
        }
        Ok(())
    }
    /// The dtype torch gives a tensor built from this number alone.
    pub fn default_dtype(self) -> DType {
        DType::default_for(self.category())
    }
}

/// One operand's contribution to the result type of an op (torch's ResultTypeState):
/// dimensioned tensors outrank 0-d tensors, which outrank wrapped Python numbers; within
/// a lower class, only a higher category can change the result.
#[derive(Clone, Copy, Debug, Default)]
pub struct ResultType {
    dim: Option<DType>,
    zero_dim: Option<DType>,
    wrapped: Option<DType>,
}

impl ResultType {
    pub fn tensor(mut self, dtype: DType, ndim: usize) -> Self {
        let slot = if ndim == 0 {
            &mut self.zero_dim
        } else {
            &mut self.dim
        };
        *slot = Some(slot.map_or(dtype, |d| DType::promote(d, dtype)));
        self
    }
    pub fn scalar(mut self, s: Scalar) -> Self {
        let d = s.default_dtype();
        self.wrapped = Some(self.wrapped.map_or(d, |w| DType::promote(w, d)));
        self
    }
    pub fn finish(self) -> DType {
        let combine = |higher: Option<DType>, lower: Option<DType>| match (higher, lower) {
            (None, l) => l,
            (h, None) => h,
            (Some(h), Some(l)) => Some(if l.category() > h.category() {
                // A lower-priority operand of a higher category moves the result to that
                // category's default dtype... unless it is a float tensor, whose own width
                // torch keeps (e.g. int tensor + 0-d float64 tensor -> float64).
                l
            } else {
                h
            }),
        };
        let lower = combine(
            self.zero_dim,
            self.wrapped.map(|w| DType::default_for(w.category())),
        );
        combine(self.dim, lower).unwrap_or_else(DType::default_float)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_numbers_do_not_widen_within_a_category() {
        let r = ResultType::default()
            .tensor(DType::F32, 1)
            .scalar(Scalar::Float(2.5))
            .finish();
        assert_eq!(r, DType::F32);
        let r = ResultType::default()
            .tensor(DType::I64, 1)
            .scalar(Scalar::Float(2.5))
            .finish();
        assert_eq!(r, DType::F32);
        let r = ResultType::default()
            .tensor(DType::I64, 1)
            .scalar(Scalar::Bool(true))
            .finish();
        assert_eq!(r, DType::I64);
        let r = ResultType::default()
            .tensor(DType::Bool, 1)
            .scalar(Scalar::Int(3))
            .finish();
        assert_eq!(r, DType::I64);
    }

    #[test]
    fn tensors_promote_by_width_and_category() {
        let r = ResultType::default()
            .tensor(DType::F32, 1)
            .tensor(DType::F64, 2)
            .finish();
        assert_eq!(r, DType::F64);
        let r = ResultType::default()
            .tensor(DType::I64, 1)
            .tensor(DType::F32, 1)
            .finish();
        assert_eq!(r, DType::F32);
        // a 0-d float64 tensor does not widen a 1-d float32 tensor
        let r = ResultType::default()
            .tensor(DType::F32, 1)
            .tensor(DType::F64, 0)
            .finish();
        assert_eq!(r, DType::F32);
        // but it does move an int tensor to float64
        let r = ResultType::default()
            .tensor(DType::I64, 1)
            .tensor(DType::F64, 0)
            .finish();
        assert_eq!(r, DType::F64);
    }
}
