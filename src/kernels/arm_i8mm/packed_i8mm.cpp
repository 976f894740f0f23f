// aarch64 int8 matrix-multiply (Armv8.6 I8MM SMMLA, hwcap2 i8mm) packed kernels: W4A8, W6A8
// and W8A8 over two token pairs at a time (the loop nest is kernels/packed_blocking.h). The
// rest of the table is the dot-product variant's, Q4K, Q5K and Q6K A8 included: the SDOT
// row-lane tile of arm_neon/packed_kquant_tile.h, borrowed as it is. An SMMLA k-quant tile
// would be the W4 / W6 one below with its int32 tiles folded per sub-block (32 k for Q4K
// and Q5K, 16 for Q6K) by sc_j (lanes [r r r+1 r+1]) and the per-256 combine of
// packed_kquant_tile.h; not written yet (prefill would gain what SMMLA gains for W4, decode
// nothing).
//
// SMMLA (vmmlaq_s32) multiplies a 2x8 int8 matrix by the transpose of another 2x8 one into
// a 2x2 int32 tile: rows (r, r+1) x tokens (t, t+1) = [r t, r t+1, r+1 t, r+1 t+1]. The
// packed layout gives 2 rows x 8 k by zipping 32-bit lanes: for W4, the low nibbles of a
// 16-byte quarter are rows 4q..4q+3 over k0..k0+3 and the high nibbles the same rows over
// k0+4..k0+7, so zip1(lo, hi) = rows (4q, 4q+1) over k0..k0+7 and zip2 = rows (4q+2, 4q+3);
// for W8 the two 4-k blocks 2c and 2c+1 play lo and hi; W6 codes are the W4 nibbles with
// bits 4-5 from the high plane (offset 32). Two tokens' 8 codes side by side
// are the other operand. Each SMMLA does 32 multiply-adds, twice an SDOT; a lone last
// token is paired with itself (decode pays the same instructions as with SDOT).
#include <arm_neon.h>

#include <algorithm>

#include "core/check.h"
#include "kernels/arm_neon/packed_neon_tile.h"
#include "kernels/packed_api.h"
#include "kernels/packed_blocking.h"

namespace edge {
namespace {

// Writes the 16 rows of tokens t0 and (if t1 != t0) t1 from the 2x2 tiles y[2q + h] (rows
// 4q + 2h, 4q + 2h + 1 x tokens t0, t1), leaving padded rows alone.
void store_pair(const PackedMatrixView& w, int64_t p, int64_t t0, int64_t t1, const float32x4_t* y,
                float* out) {
  float rows[2][16];
#pragma GCC unroll 16
  for (int q = 0; q < 4; ++q) {
    vst1q_f32(rows[0] + 4 * q, vuzp1q_f32(y[2 * q], y[2 * q + 1]));
    vst1q_f32(rows[1] + 4 * q, vuzp2q_f32(y[2 * q], y[2 * q + 1]));
  }
  const int64_t r0 = p * kPanelRows, n = std::min<int64_t>(kPanelRows, w.n - r0);
  for (int64_t r = 0; r < n; ++r) out[t0 * w.n + r0 + r] = rows[0][r];
  if (t1 != t0)
    for (int64_t r = 0; r < n; ++r) out[t1 * w.n + r0 + r] = rows[1][r];
}

// Two token pairs x one 16-row panel (a lone last token is paired with itself). Per 8 k,
// each quarter's two 4-k planes (W4/W6 nibbles, W8 blocks 2c and 2c+1) are zipped into
// row pairs once and multiplied with every pair's codes: acc[u][2q + h] = rows (4q + 2h,
// 4q + 2h + 1) x the pair's tokens, exact int32 per group; then the reference's combine.
struct MmlaTile {
  static constexpr int kTokens = 4;
  const PackedMatrixView& w;
  const QuantizedActivations& a;
  float* y;       // [a.n, w.n]
  int64_t ahead;  // prefetch distance on the weight stream (decode only; 0: none)

  template <PackedKind K, int T>
  void panels(int64_t pb, int64_t pe, int64_t t0) const {
    constexpr int kPairs = (T + 1) / 2;
    const int32_t G = w.fmt.group;
    const int64_t ng = w.k / G, cb = arm_packed::cell_bytes(K, G);
    const int64_t soff = arm_packed::scale_offset(K, G);
    int64_t tok[kPairs][2];  // the pair's tokens (the second = the first when T is odd)
#pragma GCC unroll 16
    for (int u = 0; u < kPairs; ++u) {
      tok[u][0] = t0 + 2 * u;
      tok[u][1] = 2 * u + 1 < T ? t0 + 2 * u + 1 : t0 + 2 * u;
    }
    for (int64_t p = pb; p < pe; ++p) {
      float32x4_t yt[kPairs][8];
      arm_packed::zero(yt);
      for (int64_t g = 0; g < ng; ++g) {
        const uint8_t* cell = w.data + (p * ng + g) * cb;
        if (ahead > 0) arm_packed::prefetch_cell(cell, cb, ahead);
        int32x4_t acc[kPairs][8];
        arm_packed::zero(acc);
        for (int c = 0; c < G / 8; ++c) {  // k = 8c .. 8c+7
          int8x16_t act[kPairs];
#pragma GCC unroll 16
          for (int u = 0; u < kPairs; ++u)
            act[u] = vcombine_s8(vld1_s8(a.q + tok[u][0] * a.k + g * G + 8 * c),
                                 vld1_s8(a.q + tok[u][1] * a.k + g * G + 8 * c));
#pragma GCC unroll 16
          for (int q = 0; q < 4; ++q) {
            uint8x16_t pl[2];
            if constexpr (K == PackedKind::kW8) {
              arm_packed::quarter<K>(cell, G, 2 * c, q, pl);
              arm_packed::quarter<K>(cell, G, 2 * c + 1, q, pl + 1);
            } else {
              arm_packed::quarter<K>(cell, G, c, q, pl);
            }
            const int32x4_t lo = vreinterpretq_s32_u8(pl[0]), hi = vreinterpretq_s32_u8(pl[1]);
            const int8x16_t r01 = vreinterpretq_s8_s32(vzip1q_s32(lo, hi));
            const int8x16_t r23 = vreinterpretq_s8_s32(vzip2q_s32(lo, hi));
#pragma GCC unroll 16
            for (int u = 0; u < kPairs; ++u) {
              acc[u][2 * q] = vmmlaq_s32(acc[u][2 * q], r01, act[u]);
              acc[u][2 * q + 1] = vmmlaq_s32(acc[u][2 * q + 1], r23, act[u]);
            }
          }
        }
#pragma GCC unroll 16
        for (int u = 0; u < kPairs; ++u) combine<K>(cell, soff, g, ng, tok[u], acc[u], yt[u]);
      }
#pragma GCC unroll 16
      for (int u = 0; u < kPairs; ++u) store_pair(w, p, tok[u][0], tok[u][1], yt[u], y);
    }
  }

  // y[2q + h] += the group's f32 contribution of tile 2q + h (lanes [r t0, r t1, r+1 t0,
  // r+1 t1]): sym (dot - 8 qsum) s sa, asym dot s sa + min sa qsum, W6 (dot - 32 qsum)
  // s sa, W8 and MXFP4 dot s sa.
  template <PackedKind K>
  void combine(const uint8_t* cell, int64_t soff, int64_t g, int64_t ng, const int64_t* tok,
               const int32x4_t* acc, float32x4_t* y) const {
    const float sa_l[4] = {a.scales[tok[0] * ng + g], a.scales[tok[1] * ng + g],
                           a.scales[tok[0] * ng + g], a.scales[tok[1] * ng + g]};
    const int32_t qs_l[4] = {a.sums[tok[0] * ng + g], a.sums[tok[1] * ng + g],
                             a.sums[tok[0] * ng + g], a.sums[tok[1] * ng + g]};
    const float32x4_t sa = vld1q_f32(sa_l);
    const int32x4_t qsum = vld1q_s32(qs_l);
#pragma GCC unroll 16
    for (int q = 0; q < 4; ++q) {
      const float32x4_t s4 = arm_packed::scales4<K>(cell, soff, q);
      const float32x4_t s[2] = {vzip1q_f32(s4, s4), vzip2q_f32(s4, s4)};  // [r r r+1 r+1]
#pragma GCC unroll 16
      for (int h = 0; h < 2; ++h) {
        int32x4_t d = acc[2 * q + h];
        if constexpr (arm_packed::offset(K) != 0)
          d = vsubq_s32(d, vmulq_n_s32(qsum, arm_packed::offset(K)));
        y[2 * q + h] = vfmaq_f32(y[2 * q + h], vcvtq_f32_s32(d), vmulq_f32(s[h], sa));
        if constexpr (K == PackedKind::kW4Asym) {
          const float32x4_t m4 = arm_packed::halves4(cell, soff + 32, q);
          const float32x4_t m = h ? vzip2q_f32(m4, m4) : vzip1q_f32(m4, m4);
          y[2 * q + h] = vfmaq_f32(y[2 * q + h], m, vmulq_f32(sa, vcvtq_f32_s32(qsum)));
        }
      }
    }
  }

  template <int T>
  void run(int64_t pb, int64_t pe, int64_t t0) const {
    arm_packed::panels_by_kind<T>(*this, pb, pe, t0);
  }
};

// W4 (sym/asym), W6 and W8 alike: the tile reads the kind once per call.
void matmul_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
               float* y) {
  CHECK(a.k == w.k && a.group == w.fmt.group && w.k % w.fmt.group == 0);
  const int64_t ahead = a.n <= MmlaTile::kTokens ? packed_tiling().prefetch_bytes : 0;
  packed::over_panels(MmlaTile{w, a, y, ahead}, w, a.n, p0, p1);
}

}  // namespace

void install_packed_i8mm(PackedKernels* t) {
  install_packed_dotprod(t);
  t->name = "neon_i8mm";
  t->matmul_w4_a8 = matmul_a8;
  t->matmul_w8_a8 = matmul_a8;
  t->matmul_w6_a8 = matmul_a8;
  t->matmul_mxfp4_a8 = matmul_a8;
}

}  // namespace edge
