// aarch64 Advanced SIMD dense matmuls (F32 / F16 / BF16 weights, F32 activations) and
// attention over every KV element type. 4 f32 lanes per vector; the matmul is a register
// tile of 4 weight rows x 2 tokens (8 accumulators of the 32 vector registers), the tokens
// blocked so their rows stay in L2 while the row tiles pass; attention runs one (query,
// head) task at a time: scores with vector dots, an exact softmax, then P.V accumulated
// with vector FMAs, each K/V head slice read in its stored type (no conversion pass).
// Tested against the reference by tests/kernels/dense_simd_test.cpp (under qemu-aarch64).
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "kernels/dense_blocking.h"
#include "kernels/dense_isa.h"

namespace edge {
namespace {

enum Kind { kF32, kF16, kBF16, kQ8 };

// Elements [i, i + 4) of a row of kind K as f32 (Q8: the codes, unscaled).
template <int K>
inline float32x4_t load4(const uint8_t* row, int64_t i) {
  if constexpr (K == kF32) return vld1q_f32(reinterpret_cast<const float*>(row) + i);
  if constexpr (K == kQ8) {
    int8_t b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::memcpy(b, row + i, 4);
    return vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(vld1_s8(b)))));
  }
  const uint16x4_t h = vld1_u16(reinterpret_cast<const uint16_t*>(row) + i);
  if constexpr (K == kF16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
  return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
}

// Element i as f32 (the tails shorter than a vector).
template <int K>
inline float load1(const uint8_t* row, int64_t i) {
  if constexpr (K == kF32) return reinterpret_cast<const float*>(row)[i];
  if constexpr (K == kQ8) return static_cast<float>(reinterpret_cast<const int8_t*>(row)[i]);
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
// 8 of the 32 vector registers accumulate, the x rows of a token block (~256 KiB) stay in L2.
template <int K>
struct Tile {
  static constexpr int kTokens = 2;
  static constexpr int64_t kL2Bytes = 262144;
  template <int R, int T>
  static void run(const float* x, int64_t in, const uint8_t* const* w, float* y, int64_t out) {
    mm_tile<K, R, T>(x, in, w, y, out);
  }
};

// ---- attention ----------------------------------------------------------------------

// One kv head's slice of a cache row: its elements and the factor they carry (Q8: the
// head's scale, stored after the row's codes; otherwise 1).
struct HeadSlice {
  const uint8_t* data;
  float scale;
};

template <int K>
inline HeadSlice head_slice(const uint8_t* row, const AttentionArgs& a, int32_t hk) {
  const int64_t off = static_cast<int64_t>(hk) * a.head_dim;
  if constexpr (K == kF32) return {row + 4 * off, 1.0f};
  if constexpr (K == kQ8) {
    float s;
    std::memcpy(&s, row + static_cast<int64_t>(a.n_head_kv) * a.head_dim + 4 * hk, 4);
    return {row + off, s};
  }
  return {row + 2 * off, 1.0f};
}

template <int K>
inline float dot_head(const float* q, HeadSlice k, int64_t hd) {
  float32x4_t a0 = vdupq_n_f32(0.0f), a1 = vdupq_n_f32(0.0f);
  int64_t d = 0;
  for (; d + 8 <= hd; d += 8) {
    a0 = vfmaq_f32(a0, vld1q_f32(q + d), load4<K>(k.data, d));
    a1 = vfmaq_f32(a1, vld1q_f32(q + d + 4), load4<K>(k.data, d + 4));
  }
  for (; d + 4 <= hd; d += 4) a0 = vfmaq_f32(a0, vld1q_f32(q + d), load4<K>(k.data, d));
  float s = vaddvq_f32(vaddq_f32(a0, a1));
  for (; d < hd; ++d) s += q[d] * load1<K>(k.data, d);
  return s * k.scale;
}

// o[0, hd) += p * v.
template <int K>
inline void axpy_head(float* o, float p, HeadSlice v, int64_t hd) {
  const float f = p * v.scale;
  const float32x4_t pv = vdupq_n_f32(f);
  int64_t d = 0;
  for (; d + 4 <= hd; d += 4) vst1q_f32(o + d, vfmaq_f32(vld1q_f32(o + d), pv, load4<K>(v.data, d)));
  for (; d < hd; ++d) o[d] += f * load1<K>(v.data, d);
}

template <int K>
void attention_kind(const AttentionArgs& a, int64_t t0, int64_t t1, float* scratch) {
  const int64_t q_stride = static_cast<int64_t>(a.n_head) * a.head_dim;
  const int32_t group = a.n_head / a.n_head_kv;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t qi = t / a.n_head;
    const int32_t h = static_cast<int32_t>(t % a.n_head);
    const int32_t hk = h / group;
    const int64_t pos = a.pos0 + qi;
    const int64_t lo = a.window > 0 ? std::max<int64_t>(0, pos - a.window + 1) : 0;
    const float* q = a.q + qi * q_stride + static_cast<int64_t>(h) * a.head_dim;
    float* scores = scratch;  // [pos - lo + 1]: keys lo..pos
    float m = -3.0e38f;
    for (int64_t j = lo; j <= pos; ++j) {
      scores[j - lo] = dot_head<K>(q, head_slice<K>(a.k_row(j), a, hk), a.head_dim) * a.scale;
      m = std::max(m, scores[j - lo]);
    }
    // Softmax with the max subtracted; the normalisation is applied once to the output.
    float sum = 0.0f;
    for (int64_t j = lo; j <= pos; ++j) sum += scores[j - lo] = std::exp(scores[j - lo] - m);
    float* o = a.out + qi * q_stride + static_cast<int64_t>(h) * a.head_dim;
    std::fill(o, o + a.head_dim, 0.0f);
    for (int64_t j = lo; j <= pos; ++j)
      axpy_head<K>(o, scores[j - lo], head_slice<K>(a.v_row(j), a, hk), a.head_dim);
    const float32x4_t inv = vdupq_n_f32(1.0f / sum);
    int64_t d = 0;
    for (; d + 4 <= a.head_dim; d += 4) vst1q_f32(o + d, vmulq_f32(vld1q_f32(o + d), inv));
    for (; d < a.head_dim; ++d) o[d] /= sum;
  }
}

void attention(const AttentionArgs& a, int64_t t0, int64_t t1, float* scratch) {
  switch (a.kv_type) {
    case KvType::kF32: return attention_kind<kF32>(a, t0, t1, scratch);
    case KvType::kF16: return attention_kind<kF16>(a, t0, t1, scratch);
    case KvType::kBF16: return attention_kind<kBF16>(a, t0, t1, scratch);
    case KvType::kQ8: return attention_kind<kQ8>(a, t0, t1, scratch);
  }
}

}  // namespace

void install_dense_neon_matmul_attention(KernelTable* t) {
  t->matmul_f32 = dense::matmul_rows<Tile<kF32>>;
  t->matmul_f16 = dense::matmul_rows<Tile<kF16>>;
  t->matmul_bf16 = dense::matmul_rows<Tile<kBF16>>;
  t->attention = attention;
}

}  // namespace edge
