//! The gamma family in CUDA C: digamma, trigamma, polygamma and the Hurwitz zeta
//! function, ported step for step from the CPU's (`backend::cpu::special`, Cephes'
//! algorithms as ATen's Math.h writes them), so values at and near the poles are the
//! CPU's. A module gets this text when its kernel calls one of them.

// (Cephes' constants as published, digits beyond float64's included)

/// Whether a kernel body calls a function defined here.
pub(super) fn needed(body: &str) -> bool {
    ["rg_digamma", "rg_trigamma", "rg_polygamma", "rg_zeta"]
        .iter()
        .any(|f| body.contains(f))
}

pub(super) const SOURCE: &str = r#"
// psi(x) for x > 0: pushed to 10 or more (psi(x) = psi(x + 1) - 1/x), then the asymptotic series
template <typename T> __device__ T rg_digamma_pos(T x) {
  const double A[7] = {
    8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
    -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
    8.33333333333333333333E-2};
  T result = (T)0;
  while (x < (T)10) {
    result = result - (T)1 / x;
    x = x + (T)1;
  }
  if (x == (T)10) return result + (T)2.25175258906672110764;
  T y = (T)0;
  if (x < (T)1.0e17) {
    const T z = (T)1 / (x * x);
    T p = (T)0;
    for (int k = 0; k < 7; ++k) p = p * z + (T)A[k];
    y = z * p;
  }
  return result + rg_log(x) - (T)0.5 / x - y;
}

// psi(x) = Gamma'(x)/Gamma(x): -inf at +0, +inf at -0, NaN at the negative integers and -inf
template <typename T> __device__ T rg_digamma(T x) {
  const double PI = 3.14159265358979323846;
  const double xf = (double)x;
  if (xf == 0.0) return (T)copysign(__longlong_as_double(0x7ff0000000000000LL), -xf);
  if (xf < 0.0) {
    if (xf == trunc(xf)) return rg_nan<T>();
    // psi(1 - x) - psi(x) = pi cot(pi x), cot of the fractional part (exact in double)
    const double r = xf - trunc(xf);
    return rg_digamma_pos<T>((T)1 - x) - (T)(PI / tan(PI * r));
  }
  return rg_digamma_pos<T>(x);
}

// psi'(x): reflection below 1/2, six recurrence steps and a short asymptotic series
template <typename T> __device__ T rg_trigamma(T x) {
  T sign = (T)1, result = (T)0;
  if (x < (T)0.5) {
    sign = (T)-1;
    const T pi = (T)3.14159265358979323846;
    const T s = rg_sin(pi * x);
    result = result - (pi * pi) / (s * s);
    x = (T)1 - x;
  }
  for (int k = 0; k < 6; ++k) {
    result = result + (T)1 / (x * x);
    x = x + (T)1;
  }
  const T ixx = (T)1 / (x * x);
  const T series =
      ((T)1 + (T)1 / ((T)2 * x) + ixx * ((T)1 / (T)6 - ixx * ((T)1 / (T)30 - ixx * ((T)1 / (T)42)))) / x;
  return sign * (result + series);
}

// The Hurwitz zeta function zeta(s, q) = sum_k (k + q)^-s (Cephes: direct summation, then
// Euler-Maclaurin), in double for both dtypes
__device__ double rg_zeta(double s, double q) {
  const double MACHEP = 1.11022302462515654042E-16;
  const double A[12] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
    7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
    1.8152105401943546773e17, -7.1661652561756670113e18};
  if (s == 1.0) return __longlong_as_double(0x7ff0000000000000LL);
  if (s < 1.0) return __longlong_as_double(0x7ff8000000000000LL);
  if (q <= 0.0) {
    if (q == floor(q)) return __longlong_as_double(0x7ff0000000000000LL);
    if (s != floor(s)) return __longlong_as_double(0x7ff8000000000000LL);
  }
  double sum = pow(q, -s);
  double a = q, b = 0.0;
  int i = 0;
  while (i < 9 || a <= 9.0) {
    i += 1;
    a += 1.0;
    b = pow(a, -s);
    sum += b;
    if (-MACHEP * sum < b && b < MACHEP * sum) return sum;
  }
  const double w = a;
  sum += b * w / (s - 1.0);
  sum -= 0.5 * b;
  a = 1.0;
  double k = 0.0;
  for (int j = 0; j < 12; ++j) {
    a *= s + k;
    b /= w;
    const double t = a * b / A[j];
    sum += t;
    if (fabs(t / sum) < MACHEP) return sum;
    k += 1.0;
    a *= s + k;
    b /= w;
    k += 1.0;
  }
  return sum;
}

// psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x); n >= 0 (the op layer refuses negative orders)
template <typename T> __device__ T rg_polygamma(int n, T x) {
  if (n == 0) return rg_digamma<T>(x);
  if (n == 1) return rg_trigamma<T>(x);
  const T sign = (n % 2 == 1) ? (T)1 : (T)-1;
  const T factorial = rg_exp((T)lgamma((double)n + 1.0));
  return sign * factorial * (T)rg_zeta((double)n + 1.0, (double)x);
}
"#;
