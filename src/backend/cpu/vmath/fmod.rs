//! fmod, remainder and floor division of two floats, the same macro for float32 and
//! float64 (`fmod_fns!`): C's fmod is exact, and so is this form of it, so the values
//! are those of the scalar `%` (and of torch's `Sleef_fmod`) bit for bit.
//!
//! fmod a b = a - q b with q = trunc(a / b): where |a / b| < 2^(digits - 2) the
//! quotient's rounding can only push q one step away from zero (a true quotient just
//! below an integer rounding up to it), which leaves a - q b, computed exactly by one fma
//! (its exact value is a multiple of the finer of the two ulps below |b| in magnitude,
//! so it is a float), with the sign opposite to a's; adding b back, towards a's sign, is
//! exact again. Other pairs (b zero, infinite or tiny against a; a infinite; NaN) are
//! recomputed with the scalar `%` in a fixup pass over their block only.

/// Defines `fmod_v`, `remainder_v` and `floor_div_v` (the vector forms, valid where
/// `fmod_ok` holds) and `remainder_s`, `floor_div_s` (the scalar forms, torch's CPU
/// formulas over `%`, valid everywhere) for `$t`.
macro_rules! fmod_fns {
    ($t:ty) => {
        /// Below this |a / b| the vector form is exact.
        const FMOD_LIMIT: $t = (1u64 << (<$t>::MANTISSA_DIGITS - 2)) as $t;

        /// trunc x, exact and branch-free for every x (as `Float::trunc`; an x86-64
        /// baseline build has no rounding instruction).
        #[inline(always)]
        fn trunc_exact(x: $t) -> $t {
            const BIG: $t = (1u64 << (<$t>::MANTISSA_DIGITS - 1)) as $t;
            let a = x.abs();
            let r = (a + BIG) - BIG;
            let r = if r > a { r - 1.0 } else { r };
            if a < BIG { r.copysign(x) } else { x }
        }

        #[inline(always)]
        fn floor_exact(x: $t) -> $t {
            let t = trunc_exact(x);
            if t > x { t - 1.0 } else { t }
        }

        /// Whether the vector form is exact for (a, b): |a| < |b| 2^(digits-2) (the
        /// product is exact or overflows to inf) and b finite (NaN fails both).
        #[inline(always)]
        pub(crate) fn fmod_ok(a: $t, b: $t) -> bool {
            a.abs() < b.abs() * FMOD_LIMIT && b.abs() <= <$t>::MAX
        }

        #[inline(always)]
        pub(crate) fn fmod_v(a: $t, b: $t) -> $t {
            let q = trunc_exact(a / b);
            let r = (-q).mul_add(b, a);
            // q one step too far: r has the sign opposite to a's; the result, zero
            // included, has a's sign
            let r = if r != 0.0 && ((r < 0.0) != (a < 0.0)) {
                r + b.abs().copysign(a)
            } else {
                r
            };
            r.abs().copysign(a)
        }

        // torch's CPU kernels: fmod, then moved into the divisor's sign
        #[inline(always)]
        fn remainder_from(m: $t, b: $t) -> $t {
            if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
                m + b
            } else {
                m
            }
        }

        #[inline(always)]
        pub(crate) fn remainder_v(a: $t, b: $t) -> $t {
            remainder_from(fmod_v(a, b), b)
        }

        pub(crate) fn remainder_s(a: $t, b: $t) -> $t {
            remainder_from(a % b, b)
        }

        // torch's div_floor_floating: exact for values whose quotient is an integer
        #[inline(always)]
        fn floor_div_from(a: $t, b: $t, m: $t) -> $t {
            let div = (a - m) / b;
            let div = if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
                div - 1.0
            } else {
                div
            };
            let f = floor_exact(div);
            let f = if div - f > 0.5 { f + 1.0 } else { f };
            if b == 0.0 {
                a / b
            } else if div == 0.0 {
                (0.0 as $t).copysign(a / b)
            } else {
                f
            }
        }

        #[inline(always)]
        pub(crate) fn floor_div_v(a: $t, b: $t) -> $t {
            floor_div_from(a, b, fmod_v(a, b))
        }

        pub(crate) fn floor_div_s(a: $t, b: $t) -> $t {
            floor_div_from(a, b, a % b)
        }
    };
}
pub(crate) use fmod_fns;
