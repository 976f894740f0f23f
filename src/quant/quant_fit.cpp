// Scalar reference and AVX2 variant of the quantiser's candidate fits (see quant_fit.h for
// why they agree bit for bit).
//
// The scalar loops are written for GCC to if-convert the clamps; that needs non-trapping
// FP, which changes no value, rounding or order.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include "quant/quant_fit.h"

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace edge::quant_fit {

Fit sym_fit_scalar(const float* x, int g, float d) {
  const float inv = 1.0f / d;
  float err[8] = {}, sxq[8] = {}, sqq[8] = {};
  for (int i = 0; i < g; i += 8) {
    for (int j = 0; j < 8; ++j) {
      const float c = static_cast<float>(sym_code(x[i + j], inv));
      const float e = x[i + j] - c * d;
      err[j] += e * e;
      sxq[j] += x[i + j] * c;
      sqq[j] += c * c;
    }
  }
  Fit f;
  for (int j = 0; j < 8; ++j) {
    f.err += err[j];
    f.sxq += sxq[j];
    f.sqq += sqq[j];
  }
  return f;
}

Fit asym_fit_scalar(const float* x, int g, float s, float mn) {
  const float inv = 1.0f / s;
  float err[8] = {}, sq[8] = {}, sqq[8] = {}, sxq[8] = {};
  for (int i = 0; i < g; i += 8) {
    for (int j = 0; j < 8; ++j) {
      const float q = static_cast<float>(asym_code(x[i + j], mn, inv));
      const float e = x[i + j] - (q * s + mn);
      err[j] += e * e;
      sq[j] += q;
      sqq[j] += q * q;
      sxq[j] += x[i + j] * q;
    }
  }
  Fit f;
  for (int j = 0; j < 8; ++j) {
    f.err += err[j];
    f.sq += sq[j];
    f.sqq += sqq[j];
    f.sxq += sxq[j];
  }
  return f;
}

#if defined(__x86_64__)
namespace {
// Lanes 0..7 added in order, as the scalar reference does.
__attribute__((target("avx2"))) float lane_sum(__m256 v) {
  alignas(32) float a[8];
  _mm256_store_ps(a, v);
  float s = 0;
  for (float x : a) s += x;
  return s;
}
}  // namespace

__attribute__((target("avx2"))) Fit sym_fit_avx2(const float* x, int g, float d) {
  const float inv_s = 1.0f / d;
  const __m256 inv = _mm256_set1_ps(inv_s), vd = _mm256_set1_ps(d);
  const __m256 zero = _mm256_setzero_ps(), fifteen = _mm256_set1_ps(15.0f);
  const __m256 eight = _mm256_set1_ps(8.0f), half = _mm256_set1_ps(0.5f);
  const __m256i eight_i = _mm256_set1_epi32(8);
  __m256 err = zero, sxq = zero, sqq = zero;
  for (int i = 0; i < g; i += 8) {
    const __m256 xv = _mm256_loadu_ps(x + i);
    __m256 v = _mm256_add_ps(_mm256_mul_ps(xv, inv), eight);
    v = _mm256_min_ps(_mm256_max_ps(v, zero), fifteen);
    const __m256i ci = _mm256_sub_epi32(_mm256_cvttps_epi32(_mm256_add_ps(v, half)), eight_i);
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

__attribute__((target("avx2"))) Fit asym_fit_avx2(const float* x, int g, float s, float mn) {
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

bool avx2_available() { return __builtin_cpu_supports("avx2"); }
#else
Fit sym_fit_avx2(const float* x, int g, float d) { return sym_fit_scalar(x, g, d); }
Fit asym_fit_avx2(const float* x, int g, float s, float mn) { return asym_fit_scalar(x, g, s, mn); }
bool avx2_available() { return false; }
#endif

namespace {
bool use_avx2() {
  static const bool chosen = [] {
    const char* env = std::getenv("EDGE_QUANT_FIT");
    if (env != nullptr && std::strcmp(env, "scalar") == 0) return false;
    return avx2_available();
  }();
  return chosen;
}
}  // namespace

Fit sym_fit(const float* x, int g, float d) {
  return use_avx2() ? sym_fit_avx2(x, g, d) : sym_fit_scalar(x, g, d);
}
Fit asym_fit(const float* x, int g, float s, float mn) {
  return use_avx2() ? asym_fit_avx2(x, g, s, mn) : asym_fit_scalar(x, g, s, mn);
}

}  // namespace edge::quant_fit
