//! Triangular solves (LAPACK's `trsm` from the left) on row-major matrices.

/// Solves `op(A) X = B` in place for the `n × k` row-major `b`, where `A` is the `n × n`
/// row-major triangle of `a` (`upper`, or lower; the other triangle is never read) and
/// `op(A)` is `A` or, with `transpose`, `Aᵀ`. With `unit` the diagonal is taken as ones
/// (and not read). Every update is a whole-row axpy of `b`, contiguous in row-major.
/// A zero on the diagonal gives infinities and NaNs, as LAPACK's (no check here).
pub fn solve_in_place(
    a: &[f64],
    n: usize,
    b: &mut [f64],
    k: usize,
    upper: bool,
    unit: bool,
    transpose: bool,
) {
    if n == 0 || k == 0 {
        return;
    }
    // op(A) lower: rows solved first to last; upper: last to first
    let forward = upper == transpose;
    let order: Box<dyn Iterator<Item = usize>> = if forward {
        Box::new(0..n)
    } else {
        Box::new((0..n).rev())
    };
    for i in order {
        if !transpose {
            // row i of A: x_i = (b_i - Σ_j A[i, j] x_j) / A[i, i] over the solved j
            let js = if forward { 0..i } else { i + 1..n };
            let (solved_lo, rest) = b.split_at_mut(i * k);
            let (bi, solved_hi) = rest.split_at_mut(k);
            for j in js {
                let c = a[i * n + j];
                if c == 0.0 {
                    continue;
                }
                let xj = if j < i {
                    &solved_lo[j * k..(j + 1) * k]
                } else {
                    &solved_hi[(j - i - 1) * k..(j - i) * k]
                };
                for (x, &y) in bi.iter_mut().zip(xj) {
                    *x -= c * y;
                }
            }
            if !unit {
                let d = a[i * n + i];
                bi.iter_mut().for_each(|x| *x /= d);
            }
        } else {
            // Aᵀ: x_i is final once the earlier rows' updates are in; it then updates
            // the rows still to solve with column i of Aᵀ, which is row i of A
            let (lo, rest) = b.split_at_mut(i * k);
            let (bi, hi) = rest.split_at_mut(k);
            if !unit {
                let d = a[i * n + i];
                bi.iter_mut().for_each(|x| *x /= d);
            }
            let targets = if forward { i + 1..n } else { 0..i };
            for j in targets {
                let c = a[i * n + j];
                if c == 0.0 {
                    continue;
                }
                let bj = if j < i {
                    &mut lo[j * k..(j + 1) * k]
                } else {
                    &mut hi[(j - i - 1) * k..(j - i) * k]
                };
                for (x, &y) in bj.iter_mut().zip(bi.iter()) {
                    *x -= c * y;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_four_cases() {
        let n = 4;
        let k = 3;
        // a dense matrix: each case reads only its triangle
        let a: Vec<f64> = (0..n * n)
            .map(|i| 1.0 + (i as f64) * 0.37 % 2.0 + if i % (n + 1) == 0 { 3.0 } else { 0.0 })
            .collect();
        let x: Vec<f64> = (0..n * k).map(|i| (i as f64).sin()).collect();
        for upper in [false, true] {
            for transpose in [false, true] {
                for unit in [false, true] {
                    // op(T) with T the triangle
                    let t = |i: usize, j: usize| -> f64 {
                        let (r, c) = if transpose { (j, i) } else { (i, j) };
                        if r == c {
                            if unit { 1.0 } else { a[r * n + c] }
                        } else if (c > r) == upper {
                            a[r * n + c]
                        } else {
                            0.0
                        }
                    };
                    let mut b = vec![0.0; n * k];
                    for i in 0..n {
                        for j in 0..n {
                            for c in 0..k {
                                b[i * k + c] += t(i, j) * x[j * k + c];
                            }
                        }
                    }
                    solve_in_place(&a, n, &mut b, k, upper, unit, transpose);
                    for (p, q) in b.iter().zip(&x) {
                        assert!(
                            (p - q).abs() < 1e-12,
                            "upper {upper} transpose {transpose} unit {unit}"
                        );
                    }
                }
            }
        }
    }
}
