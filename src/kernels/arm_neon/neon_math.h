// Small NEON helpers shared by the aarch64 kernel files (arm_neon/, arm_dotprod/): an
// f32 exp good to ~2 ulp over the range the elementwise ops use, a packed panel's store.
// Header-only and inline, included only by files compiled for an aarch64 level (Advanced SIMD is in
// every one).
#pragma once

#include <arm_neon.h>

#include <algorithm>
#include <cstdint>

#include "kernels/packed_api.h"

namespace edge::neon {

// e^x for 4 lanes: x = n ln2 + r (|r| <= ln2/2, ln2 split in two for exactness), e^r by a
// degree-6 Taylor polynomial (error < 2e-7 relative), then 2^n through the exponent bits.
// x is clamped to [-87, 88]: large inputs give a finite ~1.6e38, tiny ones ~1.6e-38.
inline float32x4_t exp4(float32x4_t x) {
  x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.0f)), vdupq_n_f32(88.0f));
  const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
  r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
  float32x4_t p = vdupq_n_f32(1.0f / 720);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 120), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 24), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 6), p, r);
  p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  // 2^n: n in [-126, 127] after the clamp, so n + 127 is a valid biased exponent.
  const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
  return vmulq_f32(p, vreinterpretq_f32_s32(e));
}

// Writes a packed panel's 16 results (4 vectors, rows 4q..4q+3) for token t into y [n, w.n],
// leaving the padded rows past w.n alone.
inline void store_panel(const PackedMatrixView& w, int64_t p, int64_t t, const float32x4_t* y16,
                        float* y) {
  float out[16];
  for (int q = 0; q < 4; ++q) vst1q_f32(out + 4 * q, y16[q]);
  const int64_t r0 = p * kPanelRows, rows = std::min<int64_t>(kPanelRows, w.n - r0);
  for (int64_t r = 0; r < rows; ++r) y[t * w.n + r0 + r] = out[r];
}

namespace {  // internal linkage: each file compiled for its own level keeps its own copy

// The float-vector primitives the templates over one ISA's vectors share (kernels/
// delta_net_blocking.h, snake_blocking.h): 4 lanes, tails through a zero-padded buffer.
struct F32x4 {
  using V = float32x4_t;
  static constexpr int kW = 4;
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
  static V round(V x) { return vrndnq_f32(x); }
  static float hsum(V v) { return vaddvq_f32(v); }
};

}  // namespace
}  // namespace edge::neon
