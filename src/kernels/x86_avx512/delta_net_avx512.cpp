// AVX-512 primitives of the Gated DeltaNet kernels (kernels/delta_net_blocking.h): 16 lanes,
// masked loads and stores for tails; the decode step keeps 2 vectors (32 columns of d_v) of
// recall and read-out sums in registers, so a [d_k = 128, 32] block of the state (16 KiB)
// is still in L1 when it is written back. Compiled with AVX-512 flags: the helpers are in
// an anonymous namespace (kernels/x86_avx512/avx512_math.h) and the template is
// instantiated over them (internal linkage).
#include <immintrin.h>

#include <cstdint>

#include "kernels/delta_net_blocking.h"
#include "kernels/dense_isa.h"
#include "kernels/x86_avx512/avx512_math.h"

namespace edge {
namespace {

struct DeltaPrims {
  using V = __m512;
  static constexpr int kW = 16;
  static constexpr int kDecodeVecs = 2;
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
  static V silu(V x) {
    const V e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), x));
    return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
  }
  static float hsum(V v) { return _mm512_reduce_add_ps(v); }
};

}  // namespace

void install_delta_net_avx512(KernelTable* t) {
  delta::Kernels<DeltaPrims>::install(t);
}

}  // namespace edge
