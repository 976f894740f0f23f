// Vector math shared by the AVX2 kernel files (dense_avx2.cpp, delta_net_avx2.cpp,
// snake_avx2.cpp).
// Included only by files compiled for that level; the helpers sit in an anonymous
// namespace, so each file keeps its own copy (kernels/isa.h: no code compiled with one
// level's flags may be shared by name).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace edge {
namespace {

// Lanes [0, rem) set (rem clamped to [0, 8]).
inline __m256i tail_mask(int64_t rem) {
  const int32_t r = static_cast<int32_t>(rem < 0 ? 0 : (rem > 8 ? 8 : rem));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// 8 floats from p, lanes >= rem zero: a plain load for a whole chunk, vmaskmovps only for
// the tail (on AMD cores a masked load or store on every chunk stalls the loop).
inline __m256 load8(const float* p, int64_t rem) {
  return rem >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, tail_mask(rem));
}
inline void store8(float* p, int64_t rem, __m256 v) {
  if (rem >= 8)
    _mm256_storeu_ps(p, v);
  else
    _mm256_maskstore_ps(p, tail_mask(rem), v);
}

inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// exp(x): x = n ln2 + r, degree-7 Taylor polynomial of exp(r), 2^n built in the exponent
// field (x clamped so that n stays in [-126, 127]).
inline __m256 exp8(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.3f));
  x = _mm256_min_ps(x, _mm256_set1_ps(88.3f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187e-06f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

// The float-vector primitives the templates over one ISA's vectors share (kernels/
// delta_net_blocking.h, snake_blocking.h): 8 lanes, masked loads and stores for tails.
struct F32x8 {
  using V = __m256;
  static constexpr int kW = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V load_n(const float* p, int64_t rem) { return load8(p, rem); }
  static void store_n(float* p, int64_t rem, V v) { store8(p, rem, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V round(V x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static float hsum(V v) { return hsum8(v); }
};

}  // namespace
}  // namespace edge
