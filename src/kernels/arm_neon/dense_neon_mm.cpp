// aarch64 Advanced SIMD dense matmuls (F32 / F16 / BF16 weights, F32 activations) and
// attention over every KV element type. 4 f32 lanes per vector; the matmul is the shared
// register tile (kernels/dense_tile.h: 4 weight rows x 2 tokens, 8 accumulators of the 32
// vector registers, the tail of a row one element at a time) in the shared loop nest
// (kernels/dense_blocking.h); attention is the shared flash tiling
// (kernels/attention_blocking.h: GQA tiles, online softmax, 4-key blocks). This file holds
// the vector primitives both run on.
// Tested against the reference by tests/kernels/dense_simd_test.cpp (under qemu-aarch64).
#include <arm_neon.h>

#include <cstring>

#include "core/half.h"
#include "kernels/arm_neon/neon_math.h"
#include "kernels/attention_blocking.h"
#include "kernels/dense_isa.h"
#include "kernels/dense_tile.h"

namespace edge {
namespace {

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

// ---- matmul -------------------------------------------------------------------------

// The register tile's primitives (kernels/dense_tile.h): the attention's, 2 tokens x 4 rows
// (8 of the 32 vector registers accumulate; the x rows of a token block, half the L2, stay
// there); the last in % 4 elements one at a time.
struct MatmulPrims : AttnPrims {
  static constexpr int kTokens = 2;
  static constexpr bool kMaskedTail = false;
  [[gnu::always_inline]] static V load_f16_full(const uint16_t* p) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
  }
  [[gnu::always_inline]] static V load_bf16_full(const uint16_t* p) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
  }
  static float f16_to_f32(uint16_t h) { return edge::f16_to_f32(h); }
  static float bf16_to_f32(uint16_t h) { return edge::bf16_to_f32(h); }
};

}  // namespace

void install_dense_neon_matmul_attention(KernelTable* t) {
  dense::install_matmuls<MatmulPrims>(t);
  t->attention = attn::Flash<AttnPrims>::attention;
}

}  // namespace edge
