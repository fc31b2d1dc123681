// exp and log for float vectors (Cephes polynomials, as in sse_mathfun), written once over the
// vector traits of vec_avx2.h / vec_avx512.h and shared by every kernel family (KDA, attention,
// layer ops).
//
// exp: inputs are clamped to [-87, 88.3] and exp(x) for x < -87 returns 0 (the true value is
// below 1.7e-38); relative error about 2 ulp elsewhere. log: positive normal inputs only,
// about 2 ulp. Written over the traits' integer helpers so both ISAs share the algorithm.
// Include only from ISA translation units (internal linkage).
#pragma once

namespace recur::simd {
namespace {

// V needs: R, I (int vector), the float ops of kda_ops_impl.h, round_nearest, to_int,
// int_as_float, float_as_int, int_add, int_sub, int_and, int_or, shl23, shr23,
// int_to_float, lt(a, b) -> mask M, blend(M, x_if_false, x_if_true).
template <class V>
inline typename V::R vec_exp(typename V::R x0) {
  using R = typename V::R;
  R x = V::max(V::min(x0, V::set1(88.3f)), V::set1(-87.0f));
  R fx = V::round_nearest(V::mul(x, V::set1(1.44269504088896341f)));
  R r = V::sub(V::sub(x, V::mul(fx, V::set1(0.693359375f))),
               V::mul(fx, V::set1(-2.12194440e-4f)));
  R y = V::set1(1.9875691500e-4f);
  y = V::fma(y, r, V::set1(1.3981999507e-3f));
  y = V::fma(y, r, V::set1(8.3334519073e-3f));
  y = V::fma(y, r, V::set1(4.1665795894e-2f));
  y = V::fma(y, r, V::set1(1.6666665459e-1f));
  y = V::fma(y, r, V::set1(5.0000001201e-1f));
  y = V::fma(y, V::mul(r, r), V::add(r, V::set1(1.0f)));
  R pow2n = V::int_as_float(V::shl23(V::int_add(V::to_int(fx), V::set1i(127))));
  R out = V::mul(y, pow2n);
  return V::blend(V::lt(x0, V::set1(-87.0f)), out, V::zero());
}

template <class V>
inline typename V::R vec_log(typename V::R x) {
  using R = typename V::R;
  auto bits = V::float_as_int(x);
  R e = V::int_to_float(V::int_sub(V::shr23(bits), V::set1i(126)));
  R m = V::int_as_float(V::int_or(V::int_and(bits, V::set1i(0x007FFFFF)), V::set1i(0x3F000000)));
  auto small = V::lt(m, V::set1(0.707106781186547524f));
  e = V::blend(small, e, V::sub(e, V::set1(1.0f)));
  R xm = V::sub(V::add(m, V::blend(small, V::zero(), m)), V::set1(1.0f));
  R z = V::mul(xm, xm);
  R p = V::set1(7.0376836292e-2f);
  p = V::fma(p, xm, V::set1(-1.1514610310e-1f));
  p = V::fma(p, xm, V::set1(1.1676998740e-1f));
  p = V::fma(p, xm, V::set1(-1.2420140846e-1f));
  p = V::fma(p, xm, V::set1(1.4249322787e-1f));
  p = V::fma(p, xm, V::set1(-1.6668057665e-1f));
  p = V::fma(p, xm, V::set1(2.0000714765e-1f));
  p = V::fma(p, xm, V::set1(-2.4999993993e-1f));
  p = V::fma(p, xm, V::set1(3.3333331174e-1f));
  R y = V::mul(V::mul(p, xm), z);
  y = V::fma(e, V::set1(-2.12194440e-4f), y);
  y = V::fma(z, V::set1(-0.5f), y);
  return V::fma(e, V::set1(0.693359375f), V::add(xm, y));
}

}  // namespace
}  // namespace recur::simd
