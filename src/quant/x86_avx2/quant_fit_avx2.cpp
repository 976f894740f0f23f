// AVX2 variant of the quantiser's candidate fits (quant_fit.h), compiled with exactly the
// avx2 level's flags (-mavx2 -mfma -mf16c). With FMA available GCC would fuse a multiply
// and an add into one rounding; contraction is off here so the result stays bit-identical
// to the scalar reference. Run only where quant_fit_x86.cpp's avx2_available() says the
// CPU has that level.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include <immintrin.h>

#include "quant/quant_fit.h"

namespace edge::quant_fit {

namespace {
// Lanes 0..7 added in order, as the scalar reference does.
float lane_sum(__m256 v) {
  alignas(32) float a[8];
  _mm256_store_ps(a, v);
  float s = 0;
  for (float x : a) s += x;
  return s;
}
}  // namespace

Fit sym_fit_avx2(const float* x, int g, float d, int half_codes) {
  const float inv_s = 1.0f / d;
  const __m256 inv = _mm256_set1_ps(inv_s), vd = _mm256_set1_ps(d);
  const __m256 zero = _mm256_setzero_ps();
  const __m256 top = _mm256_set1_ps(static_cast<float>(2 * half_codes - 1));
  const __m256 offset = _mm256_set1_ps(static_cast<float>(half_codes)), half = _mm256_set1_ps(0.5f);
  const __m256i offset_i = _mm256_set1_epi32(half_codes);
  __m256 err = zero, sxq = zero, sqq = zero;
  for (int i = 0; i < g; i += 8) {
    const __m256 xv = _mm256_loadu_ps(x + i);
    __m256 v = _mm256_add_ps(_mm256_mul_ps(xv, inv), offset);
    v = _mm256_min_ps(_mm256_max_ps(v, zero), top);
    const __m256i ci = _mm256_sub_epi32(_mm256_cvttps_epi32(_mm256_add_ps(v, half)), offset_i);
    const __m256 c = _mm256_cvtepi32_ps(ci);
    const __m256 e = _mm256_sub_ps(xv, _mm256_mul_ps(c, vd));
    err = _mm256_add_ps(err, _mm256_mul_ps(e, e));
    sxq = _mm256_add_ps(sxq, _mm256_mul_ps(xv, c));
    sqq = _mm256_add_ps(sqq, _mm256_mul_ps(c, c));
  }
  Fit f;
  f.err = lane_sum(err);
  f.sxq = lane_sum(sxq);
  f.sqq = lane_sum(sqq);
  return f;
}

Fit asym_fit_avx2(const float* x, int g, float s, float mn) {
  const float inv_s = 1.0f / s;
  const __m256 inv = _mm256_set1_ps(inv_s), vs = _mm256_set1_ps(s), vmn = _mm256_set1_ps(mn);
  const __m256 zero = _mm256_setzero_ps(), fifteen = _mm256_set1_ps(15.0f);
  const __m256 half = _mm256_set1_ps(0.5f);
  __m256 err = zero, sq = zero, sqq = zero, sxq = zero;
  for (int i = 0; i < g; i += 8) {
    const __m256 xv = _mm256_loadu_ps(x + i);
    __m256 v = _mm256_mul_ps(_mm256_sub_ps(xv, vmn), inv);
    v = _mm256_min_ps(_mm256_max_ps(v, zero), fifteen);
    const __m256 q = _mm256_cvtepi32_ps(_mm256_cvttps_epi32(_mm256_add_ps(v, half)));
    const __m256 e = _mm256_sub_ps(xv, _mm256_add_ps(_mm256_mul_ps(q, vs), vmn));
    err = _mm256_add_ps(err, _mm256_mul_ps(e, e));
    sq = _mm256_add_ps(sq, q);
    sqq = _mm256_add_ps(sqq, _mm256_mul_ps(q, q));
    sxq = _mm256_add_ps(sxq, _mm256_mul_ps(xv, q));
  }
  Fit f;
  f.err = lane_sum(err);
  f.sq = lane_sum(sq);
  f.sqq = lane_sum(sqq);
  f.sxq = lane_sum(sxq);
  return f;
}

}  // namespace edge::quant_fit
