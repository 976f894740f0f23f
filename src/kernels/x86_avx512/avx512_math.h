// Vector math shared by the AVX-512 kernel files (dense_avx512.cpp,
// delta_net_avx512.cpp, snake_avx512.cpp).
// Included only by files compiled for that level; the helpers sit in an anonymous
// namespace, so each file keeps its own copy (kernels/isa.h: no code compiled with one
// level's flags may be shared by name).
#pragma once

// GCC 12's AVX-512 intrinsics start their masked forms from a self-initialised "undefined"
// register (__Y = __Y), which -Wuninitialized reports wherever they are inlined into a
// function of a header of ours (the value is never read: the mask is full). Quiet for the
// files that include this one, all AVX-512 kernel files.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cstdint>

namespace edge {
namespace {

// Lanes [0, min(rem, 16)).
inline __mmask16 tail_mask(int64_t rem) {
  return rem >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << rem) - 1);
}

// exp(x) to ~1 ulp: x = n ln2 + r, |r| <= ln2/2, exp(r) by its degree-7 Taylor polynomial
// (truncation < 1e-8 relative), 2^n applied by vscalefps (underflows cleanly to 0).
inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));
  x = _mm512_min_ps(x, _mm512_set1_ps(88.7f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);  // ln2 high part
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-06f), r);     // ln2 low part
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// The float-vector primitives the templates over one ISA's vectors share (kernels/
// delta_net_blocking.h, snake_blocking.h): 16 lanes, masked loads and stores for tails.
struct F32x16 {
  using V = __m512;
  static constexpr int kW = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V load_n(const float* p, int64_t rem) {
    return rem >= 16 ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(tail_mask(rem), p);
  }
  static void store_n(float* p, int64_t rem, V v) {
    if (rem >= 16)
      _mm512_storeu_ps(p, v);
    else
      _mm512_mask_storeu_ps(p, tail_mask(rem), v);
  }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V round(V x) {
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  static float hsum(V v) { return _mm512_reduce_add_ps(v); }
};

}  // namespace
}  // namespace edge
