//! The matrix exponential by scaling and squaring with Padé approximants (Higham 2005,
//! "The scaling and squaring method for the matrix exponential revisited": the degree
//! 3, 5, 7, 9 or 13 the 1-norm allows, then as many squarings as the norm needs).

/// `C = A B` of row-major `n × n` matrices, on the project's GEMM (split across the
/// pool when the product is large enough and kernels may split).
fn matmul(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    use crate::backend::cpu::matmul::{MatView, gemm};
    let view = |data| MatView {
        data,
        offset: 0,
        rows: n,
        cols: n,
        row_stride: n,
        col_stride: 1,
    };
    let mut c = vec![0.0; n * n];
    gemm(
        view(a),
        view(b),
        &mut c,
        crate::runtime::intra_op_parallel(),
    );
    c
}

/// `Σ c_k M_k` (+ `c_id · I`) of row-major `n × n` matrices.
fn combine(terms: &[(f64, &[f64])], c_id: f64, n: usize) -> Vec<f64> {
    let mut out = vec![0.0; n * n];
    for &(c, m) in terms {
        for (x, &y) in out.iter_mut().zip(m) {
            *x += c * y;
        }
    }
    for i in 0..n {
        out[i * n + i] += c_id;
    }
    out
}

/// The largest absolute column sum.
fn norm1(a: &[f64], n: usize) -> f64 {
    (0..n)
        .map(|j| (0..n).map(|i| a[i * n + j].abs()).sum::<f64>())
        .fold(
            0.0,
            |m: f64, s| if s.is_nan() { f64::NAN } else { m.max(s) },
        )
}

const THETA: [f64; 4] = [
    1.495_585_217_958_292e-2,
    2.539_398_330_063_23e-1,
    9.504_178_996_162_932e-1,
    2.097_847_961_257_068,
];
const THETA13: f64 = 5.371_920_351_148_152;
const B3: [f64; 4] = [120.0, 60.0, 12.0, 1.0];
const B5: [f64; 6] = [30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0];
const B7: [f64; 8] = [
    17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0,
];
const B9: [f64; 10] = [
    17643225600.0,
    8821612800.0,
    2075673600.0,
    302702400.0,
    30270240.0,
    2162160.0,
    110880.0,
    3960.0,
    90.0,
    1.0,
];
const B13: [f64; 14] = [
    64764752532480000.0,
    32382376266240000.0,
    7771770303897600.0,
    1187353796428800.0,
    129060195264000.0,
    10559470521600.0,
    670442572800.0,
    33522128640.0,
    1323241920.0,
    40840800.0,
    960960.0,
    16380.0,
    182.0,
    1.0,
];

/// `exp(A)` of the row-major `n × n` matrix `a`. A NaN or infinite entry gives NaNs.
pub fn expm(a: &[f64], n: usize) -> Vec<f64> {
    if n == 0 {
        return Vec::new();
    }
    let norm = norm1(a, n);
    if !norm.is_finite() {
        return vec![f64::NAN; n * n];
    }
    let a2 = matmul(a, a, n);
    // U = A · Σ b_odd A^(k-1), V = Σ b_even A^k: the Padé approximant is (V - U)⁻¹ (V + U)
    let (u, v, squarings) = if let Some(m) = THETA.iter().position(|&t| norm <= t) {
        let b: &[f64] = [&B3[..], &B5[..], &B7[..], &B9[..]][m];
        let mut powers = vec![a2.clone()];
        while powers.len() < b.len() / 2 - 1 {
            let last = &powers[powers.len() - 1];
            powers.push(matmul(last, &a2, n));
        }
        let odd: Vec<(f64, &[f64])> = powers
            .iter()
            .enumerate()
            .map(|(i, p)| (b[2 * i + 3], &p[..]))
            .collect();
        let even: Vec<(f64, &[f64])> = powers
            .iter()
            .enumerate()
            .map(|(i, p)| (b[2 * i + 2], &p[..]))
            .collect();
        let inner = combine(&odd, b[1], n);
        (matmul(a, &inner, n), combine(&even, b[0], n), 0)
    } else {
        let s = (norm / THETA13).log2().ceil().max(0.0) as i32;
        let scale = 0.5f64.powi(s);
        let a1: Vec<f64> = a.iter().map(|x| x * scale).collect();
        let scale2 = scale * scale;
        let a2: Vec<f64> = a2.iter().map(|x| x * scale2).collect();
        let a4 = matmul(&a2, &a2, n);
        let a6 = matmul(&a4, &a2, n);
        let b = &B13;
        let high_u = combine(&[(b[13], &a6), (b[11], &a4), (b[9], &a2)], 0.0, n);
        let mut inner = matmul(&a6, &high_u, n);
        let low_u = combine(&[(b[7], &a6), (b[5], &a4), (b[3], &a2)], b[1], n);
        inner.iter_mut().zip(&low_u).for_each(|(x, y)| *x += y);
        let u = matmul(&a1, &inner, n);
        let high_v = combine(&[(b[12], &a6), (b[10], &a4), (b[8], &a2)], 0.0, n);
        let mut v = matmul(&a6, &high_v, n);
        let low_v = combine(&[(b[6], &a6), (b[4], &a4), (b[2], &a2)], b[0], n);
        v.iter_mut().zip(&low_v).for_each(|(x, y)| *x += y);
        (u, v, s)
    };
    let mut p: Vec<f64> = v.iter().zip(&u).map(|(v, u)| v + u).collect();
    let mut q: Vec<f64> = v.iter().zip(&u).map(|(v, u)| v - u).collect();
    let mut piv = vec![0i64; n];
    super::lu::factor(&mut q, n, n, &mut piv, true);
    super::lu::solve(&q, &piv, n, &mut p, n, false);
    for _ in 0..squarings {
        p = matmul(&p, &p, n);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_exponentials() {
        // a nilpotent matrix: exp = I + N + N²/2
        let nil = [0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 0.0, 0.0, 0.0];
        let e = expm(&nil, 3);
        let want = [1.0, 1.0, 3.5, 0.0, 1.0, 3.0, 0.0, 0.0, 1.0];
        for (x, y) in e.iter().zip(&want) {
            assert!((x - y).abs() < 1e-14);
        }
        // rotations, at every degree's norm and with squarings
        for &t in &[0.01, 0.2, 0.9, 2.0, 5.0, 40.0] {
            let e = expm(&[0.0, -t, t, 0.0], 2);
            let want = [t.cos(), -t.sin(), t.sin(), t.cos()];
            for (x, y) in e.iter().zip(&want) {
                assert!((x - y).abs() < 1e-12 * (1.0 + t), "t = {t}");
            }
        }
        // diagonal
        let e = expm(&[1.0, 0.0, 0.0, -30.0], 2);
        assert!((e[0] - 1f64.exp()).abs() < 1e-14 && (e[3] - (-30f64).exp()).abs() < 1e-25);
        assert!(
            expm(&[f64::NAN, 0.0, 0.0, 1.0], 2)
                .iter()
                .all(|x| x.is_nan())
        );
        assert!(expm(&[], 0).is_empty());
    }

    #[test]
    fn larger_matrices_on_the_gemm() {
        // exp(A) exp(-A) = I for a dense 70 × 70 A at each scale (degrees and squarings)
        let n = 70;
        let mut s = 5u64;
        let base: Vec<f64> = (0..n * n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
            })
            .collect();
        for scale in [1e-4, 0.01, 0.2] {
            let a: Vec<f64> = base.iter().map(|x| x * scale).collect();
            let neg: Vec<f64> = a.iter().map(|x| -x).collect();
            let p = matmul(&expm(&a, n), &expm(&neg, n), n);
            for i in 0..n {
                for j in 0..n {
                    let want = if i == j { 1.0 } else { 0.0 };
                    assert!((p[i * n + j] - want).abs() < 1e-11, "scale {scale}");
                }
            }
        }
        // a block diagonal of 2 × 2 rotations: exp is the rotations by each angle
        let mut a = vec![0.0; n * n];
        for b in 0..n / 2 {
            let t = 0.1 * b as f64;
            a[(2 * b) * n + 2 * b + 1] = -t;
            a[(2 * b + 1) * n + 2 * b] = t;
        }
        let e = expm(&a, n);
        for b in 0..n / 2 {
            let t = 0.1 * b as f64;
            let (i, j) = (2 * b, 2 * b + 1);
            assert!((e[i * n + i] - t.cos()).abs() < 1e-12);
            assert!((e[j * n + i] - t.sin()).abs() < 1e-12);
            assert!((e[i * n + j] + t.sin()).abs() < 1e-12);
        }
    }
}
