//! Cumulative sums and products along one dim (torch.cumsum / torch.cumprod).

use super::strided::contiguous;
use crate::layout::Layout;
use crate::storage::Buffer;

/// The running sum (or product, `prod`) of `x` along `dim`, row-major, of x's dtype
/// (the op layer casts first: bools become int64). As torch's CPU kernel, float32 is
/// accumulated in float64 (its `acc_type`) and each partial result rounded; int64 wraps.
pub fn cumulative(buf: &Buffer, layout: &Layout, dim: usize, prod: bool) -> Buffer {
    #[allow(clippy::too_many_arguments)]
    fn run<T: Copy, A: Copy>(
        v: &[T],
        shape: &[usize],
        dim: usize,
        zero: A,
        one: A,
        up: impl Fn(T) -> A,
        step: impl Fn(A, A) -> A,
        down: impl Fn(A) -> T,
        prod: bool,
    ) -> Vec<T> {
        let n = shape.get(dim).copied().unwrap_or(1);
        let inner: usize = shape.get(dim + 1..).map_or(1, |s| s.iter().product());
        let outer: usize = shape.get(..dim).map_or(1, |s| s.iter().product());
        let mut out = v.to_vec();
        for o in 0..outer {
            for i in 0..inner {
                let base = o * n * inner + i;
                let mut acc = if prod { one } else { zero };
                for k in 0..n {
                    let at = base + k * inner;
                    acc = step(acc, up(v[at]));
                    out[at] = down(acc);
                }
            }
        }
        out
    }
    let shape = &layout.shape;
    let dim = if shape.is_empty() { 0 } else { dim };
    macro_rules! go {
        ($v:expr, $zero:expr, $one:expr, $up:expr, $down:expr, $add:expr, $mul:expr) => {{
            let v = contiguous($v, layout);
            if prod {
                run(&v, shape, dim, $zero, $one, $up, $mul, $down, true)
            } else {
                run(&v, shape, dim, $zero, $one, $up, $add, $down, false)
            }
        }};
    }
    match buf {
        Buffer::F32(v) => Buffer::F32(
            go!(
                v,
                0.0f64,
                1.0f64,
                f64::from,
                |a: f64| a as f32,
                |a, b| a + b,
                |a, b| a * b
            )
            .into(),
        ),
        Buffer::F64(v) => {
            Buffer::F64(go!(v, 0.0f64, 1.0f64, |x| x, |a| a, |a, b| a + b, |a, b| a * b).into())
        }
        Buffer::I64(v) => Buffer::I64(
            go!(
                v,
                0i64,
                1i64,
                |x| x,
                |a| a,
                |a: i64, b: i64| a.wrapping_add(b),
                |a: i64, b: i64| a.wrapping_mul(b)
            )
            .into(),
        ),
        Buffer::Bool(v) => {
            // (not reached: the op casts bools to int64) the running or / and
            let v = contiguous(v, layout);
            Buffer::Bool(
                run(
                    &v,
                    shape,
                    dim,
                    false,
                    true,
                    |x| x,
                    move |a, b| if prod { a && b } else { a || b },
                    |a| a,
                    prod,
                )
                .into(),
            )
        }
        // (a device buffer never reaches the CPU's kernels)
        Buffer::Cuda(_) => Buffer::F32(Vec::new().into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cumsum_and_cumprod_along_each_dim() {
        let l = Layout::contiguous(&[2, 3]);
        let b = Buffer::F64(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0].into());
        let Buffer::F64(s) = cumulative(&b, &l, 1, false) else {
            panic!()
        };
        assert_eq!(&s[..], &[1.0, 3.0, 6.0, 4.0, 9.0, 15.0]);
        let Buffer::F64(p) = cumulative(&b, &l, 0, true) else {
            panic!()
        };
        assert_eq!(&p[..], &[1.0, 2.0, 3.0, 4.0, 10.0, 18.0]);
        let t = l.transpose(0, 1).unwrap();
        let Buffer::F64(s) = cumulative(&b, &t, 0, false) else {
            panic!()
        };
        assert_eq!(&s[..], &[1.0, 4.0, 3.0, 9.0, 6.0, 15.0]);
    }
}
