// SnakeBeta (the Qwen3-TTS 12 Hz codec's activation, BigVGAN's "SnakeBeta"):
//   y[r][c] = x[r][c] + inv_beta[c] * sin(alpha[c] * x[r][c])^2
// written once over a struct of vector primitives P; each ISA file (x86_avx2/,
// x86_avx512/, arm_neon/) supplies P and installs Kernels<P>::snake_beta. The reference
// (ref/elementwise_ref.cpp) uses std::sin.
//
// sin(v)^2 here: v = n pi + r with n = round(v / pi) and |r| <= pi/2 (pi in two parts,
// each product taken by one FMA), then sin(r) by its odd Taylor polynomial to degree 13
// (truncation below 7e-10 at |r| = pi/2); sin(v)^2 = sin(r)^2 whatever n's parity, so no
// sign is tracked. Against a double-precision sin(v)^2 over |v| <= 1e4 the absolute error
// is below 2.5e-7 (measured 1.98e-7; std::sin in float then squared: 8.8e-8), checked by
// tests/kernels/snake_beta_test.cpp. The codec's arguments (alpha * activation) stay far
// inside that range.
//
//   struct P {
//     using V; static constexpr int kW;       // lanes
//     V set1(float); V load(const float*); void store(float*, V);
//     V load_n(const float*, int64_t rem);    // lanes >= rem zero (reads only those < rem)
//     void store_n(float*, int64_t rem, V);   // writes only lanes < rem; rem >= kW: all
//     V fma(V a, V b, V c);                   // a * b + c
//     V mul(V, V);
//     V round(V);                             // to the nearest integer, ties to even
//   };
//
// Everything is a member of a template over P, so an ISA file's instantiation has internal
// linkage (P lives in its anonymous namespace).
#pragma once

#include <cstdint>

#include "kernels/api.h"

namespace edge::snake {

template <class P>
struct Kernels {
  using V = typename P::V;
  static constexpr int kW = P::kW;

  [[gnu::always_inline]] static V sin_sq(V v) {
    const V n = P::round(P::mul(v, P::set1(0.318309886183790672f)));  // 1 / pi
    V r = P::fma(n, P::set1(-3.14159274101257324f), v);               // float(pi)
    r = P::fma(n, P::set1(8.74227766e-8f), r);                        // float(pi) - pi
    const V z = P::mul(r, r);
    V p = P::set1(1.60590438368216146e-10f);              // 1/13!
    p = P::fma(p, z, P::set1(-2.50521083854417188e-8f));  // -1/11!
    p = P::fma(p, z, P::set1(2.75573192239858907e-6f));   // 1/9!
    p = P::fma(p, z, P::set1(-1.98412698412698413e-4f));  // -1/7!
    p = P::fma(p, z, P::set1(8.33333333333333333e-3f));   // 1/5!
    p = P::fma(p, z, P::set1(-1.66666666666666667e-1f));  // -1/3!
    const V s = P::fma(P::mul(p, z), r, r);
    return P::mul(s, s);
  }

  // One row of c channels (y may alias x).
  static void row(const float* x, int64_t c, const float* alpha, const float* inv_beta, float* y) {
    int64_t i = 0;
    for (; i + kW <= c; i += kW) {
      const V v = P::load(x + i);
      P::store(y + i, P::fma(P::load(inv_beta + i), sin_sq(P::mul(v, P::load(alpha + i))), v));
    }
    if (i < c) {
      const int64_t rem = c - i;
      const V v = P::load_n(x + i, rem);
      const V s = sin_sq(P::mul(v, P::load_n(alpha + i, rem)));
      P::store_n(y + i, rem, P::fma(P::load_n(inv_beta + i, rem), s, v));
    }
  }

  // api.h KernelTable::snake_beta.
  static void snake_beta(const float* x, int64_t rows, int64_t c, const float* alpha,
                         const float* inv_beta, float* y) {
    for (int64_t r = 0; r < rows; ++r) row(x + r * c, c, alpha, inv_beta, y + r * c);
  }

  static void install(KernelTable* t) { t->snake_beta = snake_beta; }
};

}  // namespace edge::snake
