// aarch64 Advanced SIMD dense matmuls (F32 / F16 / BF16 weights, F32 activations) and
// attention over every KV element type. 4 f32 lanes per vector; the matmul is a register
// tile of 4 weight rows x 2 tokens (8 accumulators of the 32 vector registers) run by the
// shared loop nest (kernels/dense_blocking.h); attention is the shared flash tiling
// (kernels/attention_blocking.h: GQA tiles, online softmax, 4-key blocks) on this file's
// vector primitives.
// Tested against the reference by tests/kernels/dense_simd_test.cpp (under qemu-aarch64).
#include <arm_neon.h>

#include <cstring>

#include "core/half.h"
#include "kernels/arm_neon/neon_math.h"
#include "kernels/attention_blocking.h"
#include "kernels/dense_blocking.h"
#include "kernels/dense_isa.h"

namespace edge {
namespace {

enum Kind { kF32, kF16, kBF16 };

// Elements [i, i + 4) of a row of kind K as f32.
template <int K>
inline float32x4_t load4(const uint8_t* row, int64_t i) {
  if constexpr (K == kF32) return vld1q_f32(reinterpret_cast<const float*>(row) + i);
  const uint16x4_t h = vld1_u16(reinterpret_cast<const uint16_t*>(row) + i);
  if constexpr (K == kF16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
  return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
}

// Element i as f32 (the tails shorter than a vector).
template <int K>
inline float load1(const uint8_t* row, int64_t i) {
  if constexpr (K == kF32) return reinterpret_cast<const float*>(row)[i];
  uint16_t h;
  std::memcpy(&h, row + 2 * i, 2);
  if constexpr (K == kF16) return f16_to_f32(h);
  return bf16_to_f32(h);
}

// ---- matmul -------------------------------------------------------------------------

// y[t, r] for R weight rows x T tokens (x rows `in` apart, y rows `out` apart).
template <int K, int R, int T>
void mm_tile(const float* x, int64_t in, const uint8_t* const* w, float* y, int64_t out) {
  float32x4_t acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = vdupq_n_f32(0.0f);
  int64_t i = 0;
  for (; i + 4 <= in; i += 4) {
    float32x4_t wv[R];
    for (int r = 0; r < R; ++r) wv[r] = load4<K>(w[r], i);
    for (int t = 0; t < T; ++t) {
      const float32x4_t xv = vld1q_f32(x + t * in + i);
      for (int r = 0; r < R; ++r) acc[r][t] = vfmaq_f32(acc[r][t], wv[r], xv);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) {
      float s = vaddvq_f32(acc[r][t]);
      for (int64_t j = i; j < in; ++j) s += load1<K>(w[r], j) * x[t * in + j];
      y[t * out + r] = s;
    }
}

// The register tile the shared loop nest (kernels/dense_blocking.h) runs; 2 tokens x 4 rows:
// 8 of the 32 vector registers accumulate, the x rows of a token block (half the L2) stay there.
template <int K>
struct Tile {
  static constexpr int kTokens = 2;
  template <int R, int T>
  static void run(const float* x, int64_t in, const uint8_t* const* w, float* y, int64_t out) {
    mm_tile<K, R, T>(x, in, w, y, out);
  }
};

// ---- attention ----------------------------------------------------------------------

// The vector primitives the shared flash-attention tiling (kernels/attention_blocking.h)
// runs on: 4 keys per block (one vector of scores); p.V keeps 16 of the 32 vector registers
// as output accumulators (64 floats of the head per pass). Every query head of a GQA group
// reads the block's K/V rows converted once.
struct AttnPrims {
  using V = float32x4_t;
  using Tail = int64_t;  // lanes [0, rem): no masked loads, the short tail is copied
  using Lanes = uint32x4_t;
  static constexpr int kW = 4;
  static constexpr int kPvChunks = 16;
  static constexpr bool kRowLanes = false;
  static constexpr int kTileRows =
      16;  // (query, head) rows per tile  // the rows-in-lanes prefill path: not measured here
  static V zero() { return vdupq_n_f32(0.0f); }
  static V set1(float x) { return vdupq_n_f32(x); }
  static V load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, V v) { vst1q_f32(p, v); }
  static Tail tail(int64_t rem) { return rem < 4 ? rem : 4; }
  static V load_tail(Tail n, const float* p) {
    if (n == 4) return vld1q_f32(p);
    float b[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t i = 0; i < n; ++i) b[i] = p[i];
    return vld1q_f32(b);
  }
  static void store_tail(Tail n, float* p, V v) {
    if (n == 4) return vst1q_f32(p, v);
    float b[4];
    vst1q_f32(b, v);
    for (int64_t i = 0; i < n; ++i) p[i] = b[i];
  }
  static V fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
  static V mul(V a, V b) { return vmulq_f32(a, b); }
  static V sub(V a, V b) { return vsubq_f32(a, b); }
  static V exp(V x) { return neon::exp4(x); }
  static float exp1(float x) { return vgetq_lane_f32(neon::exp4(vdupq_n_f32(x)), 0); }
  static float hsum(V v) { return vaddvq_f32(v); }
  static Lanes lanes(int j0, int j1) {
    const uint32_t i[4] = {0, 1, 2, 3};
    const uint32x4_t idx = vld1q_u32(i);
    return vandq_u32(vcltq_u32(idx, vdupq_n_u32(static_cast<uint32_t>(j1))),
                     vcgeq_u32(idx, vdupq_n_u32(static_cast<uint32_t>(j0))));
  }
  static float hmax(Lanes m, V v) {
    return vmaxvq_f32(vbslq_f32(m, v, vdupq_n_f32(-__builtin_inff())));
  }
  static V keep(Lanes m, V v) {
    return vreinterpretq_f32_u32(vandq_u32(m, vreinterpretq_u32_f32(v)));
  }
  // Lane j = sum of a[j]'s lanes: two rounds of pairwise adds.
  static V transpose_sum(const V* a) {
    return vpaddq_f32(vpaddq_f32(a[0], a[1]), vpaddq_f32(a[2], a[3]));
  }
  static uint16x4_t load16x4(const uint16_t* p, int64_t rem) {
    if (rem >= 4) return vld1_u16(p);
    uint16_t b[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < rem; ++i) b[i] = p[i];
    return vld1_u16(b);
  }
  static V load_f16(const uint16_t* p, int64_t rem) {
    return vcvt_f32_f16(vreinterpret_f16_u16(load16x4(p, rem)));
  }
  static V load_bf16(const uint16_t* p, int64_t rem) {
    return vreinterpretq_f32_u32(vshll_n_u16(load16x4(p, rem), 16));
  }
  static V load_i8(const int8_t* p, int64_t rem) {
    int8_t b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::memcpy(b, p, static_cast<size_t>(rem < 4 ? rem : 4));
    return vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(vld1_s8(b)))));
  }
};

}  // namespace

void install_dense_neon_matmul_attention(KernelTable* t) {
  t->matmul_f32 = dense::matmul_rows<Tile<kF32>>;
  t->matmul_f16 = dense::matmul_rows<Tile<kF16>>;
  t->matmul_bf16 = dense::matmul_rows<Tile<kBF16>>;
  t->attention = attn::Flash<AttnPrims>::attention;
}

}  // namespace edge
