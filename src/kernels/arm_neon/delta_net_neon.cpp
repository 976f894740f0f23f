// NEON primitives of the Gated DeltaNet kernels (kernels/delta_net_blocking.h): 4 lanes,
// tails through a zero-padded buffer; the decode step keeps 8 vectors (32 columns of d_v)
// of recall and read-out sums in registers (16 of the 32 q registers), so a [d_k = 128, 32]
// block of the state (16 KiB) is still in L1 when it is written back.
#include <arm_neon.h>

#include <cstdint>

#include "kernels/arm_neon/neon_math.h"
#include "kernels/delta_net_blocking.h"
#include "kernels/dense_isa.h"

namespace edge {
namespace {

struct DeltaPrims {
  using V = float32x4_t;
  static constexpr int kW = 4;
  static constexpr int kDecodeVecs = 8;
  static V zero() { return vdupq_n_f32(0.0f); }
  static V set1(float x) { return vdupq_n_f32(x); }
  static V load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, V v) { vst1q_f32(p, v); }
  static V load_n(const float* p, int64_t rem) {
    if (rem >= 4) return vld1q_f32(p);
    float buf[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < rem; ++i) buf[i] = p[i];
    return vld1q_f32(buf);
  }
  static void store_n(float* p, int64_t rem, V v) {
    if (rem >= 4) return vst1q_f32(p, v);
    float buf[4];
    vst1q_f32(buf, v);
    for (int64_t i = 0; i < rem; ++i) p[i] = buf[i];
  }
  static V fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
  static V mul(V a, V b) { return vmulq_f32(a, b); }
  static V sub(V a, V b) { return vsubq_f32(a, b); }
  static V silu(V x) {
    return vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), neon::exp4(vnegq_f32(x))));
  }
  static float hsum(V v) { return vaddvq_f32(v); }
};

}  // namespace

void install_delta_net_neon(KernelTable* t) {
  delta::Kernels<DeltaPrims>::install(t);
}

}  // namespace edge
