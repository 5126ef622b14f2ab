//! Cholesky factorization (LAPACK's `potrf`, lower) on row-major matrices.

/// Overwrites the lower triangle of the `n × n` row-major `a` with `L`, `A = L Lᵀ`,
/// reading only A's lower triangle, and zeroes the strict upper triangle. Returns
/// `info`: 0, or the 1-based order of the first leading minor that is not positive
/// definite (a pivot `≤ 0` or NaN), where it stops, as LAPACK (the rest is left as is).
pub fn factor_lower(a: &mut [f64], n: usize) -> i64 {
    for j in 0..n {
        let rest = &mut a[j * n..];
        let row_j = &mut rest[..n];
        // the diagonal: a_jj - Σ_k L_jk²
        let mut d = row_j[j];
        for &l in &row_j[..j] {
            d -= l * l;
        }
        // (`!(d > 0)` also catches NaN)
        if d.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            row_j[j] = d;
            zero_upper(a, n);
            return j as i64 + 1;
        }
        let ljj = d.sqrt();
        row_j[j] = ljj;
        // the column below: L_ij = (a_ij - Σ_k L_ik L_jk) / L_jj, row i against row j
        let (head, tail) = a.split_at_mut((j + 1) * n);
        let lj = &head[j * n..j * n + j];
        for row_i in tail.chunks_exact_mut(n) {
            let mut s = row_i[j];
            for (&x, &y) in row_i[..j].iter().zip(lj) {
                s -= x * y;
            }
            row_i[j] = s / ljj;
        }
    }
    zero_upper(a, n);
    0
}

/// Zeroes the strict upper triangle (what torch returns there, whether or not the
/// factorization completed).
fn zero_upper(a: &mut [f64], n: usize) {
    for i in 0..n {
        a[i * n + i + 1..(i + 1) * n]
            .iter_mut()
            .for_each(|x| *x = 0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_and_refuses() {
        let n = 4;
        let b: Vec<f64> = (0..n * n).map(|i| ((i * 7 % 5) as f64) - 2.0).collect();
        // A = B Bᵀ + n I, with garbage in the strict upper triangle (never read)
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                a[i * n + j] = (0..n).map(|p| b[i * n + p] * b[j * n + p]).sum::<f64>()
                    + if i == j { n as f64 } else { 0.0 };
            }
        }
        let full = a.clone();
        for i in 0..n {
            for j in i + 1..n {
                a[i * n + j] = f64::NAN;
            }
        }
        assert_eq!(factor_lower(&mut a, n), 0);
        for i in 0..n {
            for j in 0..n {
                let v: f64 = (0..n).map(|p| a[i * n + p] * a[j * n + p]).sum();
                assert!((v - full[i * n + j]).abs() < 1e-12);
            }
        }
        let mut bad = vec![1.0, 2.0, 2.0, 1.0];
        assert_eq!(factor_lower(&mut bad, 2), 2);
        let mut nan = vec![f64::NAN, 0.0, 0.0, 1.0];
        assert_eq!(factor_lower(&mut nan, 2), 1);
    }
}
