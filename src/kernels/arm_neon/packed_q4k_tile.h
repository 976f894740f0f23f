// The aarch64 register tiles' view of a Q4K cell (quant/packed.h, "Q4K group": GGUF Q4_K's
// super-block of 256, kept as it is) and the Q4K A8 tile, written once over the row-lane
// dot primitive of arm_neon/packed_neon_tile.h (plain NEON's widening multiplies, SDOT).
// In an anonymous namespace, as packed_neon_tile.h: each ISA file keeps its own copy.
//
// Cell (16 rows x 256 k, 2368 bytes): sc [8 sub-blocks j][16 rows] u8 at byte 0; m pairs
// [4 i][16 rows][2] u8 at 128 (byte 32 i + 2 r + e = m_{2i+e} of row r); d [16] fp16 at 256;
// dmin [16] fp16 at 288; codes at 320 in the W4 block layout (32 blocks of 64 bytes, block b
// = k 8b..8b+7, so sub-block j = k 32j..32j+31 is blocks 4j..4j+3). A weight is
// w = d sc_j code - dmin m_j.
#pragma once

#include <arm_neon.h>

#include <cstdint>

#include "core/check.h"
#include "kernels/arm_neon/neon_math.h"
#include "kernels/arm_neon/packed_neon_tile.h"
#include "kernels/packed_api.h"
#include "kernels/packed_blocking.h"

namespace edge {
namespace {
namespace arm_packed {

constexpr int64_t kQ4KCellBytes = 2368;
constexpr int kQ4KMins = 128, kQ4KD = 256, kQ4KDmin = 288, kQ4KCodes = 320;

// The 6-bit sub-scales sc_j of the 16 rows as int32, sc[q] = rows 4q..4q+3.
inline void q4k_scales(const uint8_t* cell, int j, int32x4_t (&sc)[4]) {
  const uint8x16_t v = vld1q_u8(cell + 16 * j);
  const uint16x8_t lo = vmovl_u8(vget_low_u8(v)), hi = vmovl_high_u8(v);
  sc[0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(lo)));
  sc[1] = vreinterpretq_s32_u32(vmovl_high_u16(lo));
  sc[2] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(hi)));
  sc[3] = vreinterpretq_s32_u32(vmovl_high_u16(hi));
}

// Pair i of the mins for rows 4q..4q+3 widened: 32-bit lane r' = m_2i | m_2i+1 << 16 of
// row 4q + r' (8 bytes at 128 + 32 i + 8 q).
inline uint16x8_t q4k_min_pair(const uint8_t* cell, int i, int q) {
  return vmovl_u8(vld1_u8(cell + kQ4KMins + 32 * i + 8 * q));
}

// The mins m_j of rows 4q..4q+3 as f32 (the A16 tile's offset of sub-block j).
inline float32x4_t q4k_mins_f32(const uint8_t* cell, int j, int q) {
  const uint32x4_t pair = vreinterpretq_u32_u16(q4k_min_pair(cell, j / 2, q));
  const uint32x4_t m = j % 2 ? vshrq_n_u32(pair, 16) : vandq_u32(pair, vdupq_n_u32(0xFFFF));
  return vcvtq_f32_u32(m);
}

// sum_j m_j * sums32_j for rows 4q..4q+3 of one token (s32: its 8 sums of 32 codes in this
// super-block), exact int32 (<= 8 * 63 * 32 * 127): per pair i the s16 mins (m_2i, m_2i+1)
// of each row times the token's (sums_2i, sums_2i+1) in every 32-bit lane, so a lane pair
// adds to one row (the x86 kernels' madd, by vmlal + vpadd).
inline int32x4_t q4k_min_dot(const uint8_t* cell, int q, const int16_t* s32) {
  int32x4_t lo = vdupq_n_s32(0), hi = vdupq_n_s32(0);
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    const int16x8_t m = vreinterpretq_s16_u16(q4k_min_pair(cell, i, q));
    int32_t pair;
    __builtin_memcpy(&pair, s32 + 2 * i, 4);
    const int16x8_t s = vreinterpretq_s16_s32(vdupq_n_s32(pair));
    lo = vmlal_s16(lo, vget_low_s16(m), vget_low_s16(s));
    hi = vmlal_high_s16(hi, m, s);
  }
  return vpaddq_s32(lo, hi);
}

// y4 (rows 4q..4q+3 of one token) += sa (d isum - dmin msum), the reference's two float
// terms per super-block: isum = sum_j sc_j dot_j (dq, folded per sub-block), msum from the
// token's sums of 32 (s32) and the cell's mins.
inline void q4k_combine_a8(const uint8_t* cell, const int32x4_t (&dq)[4], const int16_t* s32,
                           float sa, float32x4_t (&y4)[4]) {
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    const float32x4_t d = vmulq_n_f32(halves4(cell, kQ4KD, q), sa);
    const float32x4_t dmin = vmulq_n_f32(halves4(cell, kQ4KDmin, q), sa);
    y4[q] = vfmaq_f32(y4[q], vcvtq_f32_s32(dq[q]), d);
    y4[q] = vfmsq_f32(y4[q], vcvtq_f32_s32(q4k_min_dot(cell, q, s32)), dmin);
  }
}

// The Q4K A8 register tile: up to Dot::kTokens tokens x one 16-row panel, activations
// quantised per 256 with sums per 32 (QuantizedActivations::sums32). Per sub-block j its 4
// code blocks go through dot_block (exact int32 dots, the W4 nibbles as stored) and are
// folded into dq with one multiply-add by the 6-bit scales sc_j per (token, quarter); d
// and dmin apply once per super-block (q4k_combine_a8), as the x86 kernels do. Dot: see
// RowA8Tile.
template <class Dot>
struct Q4KA8Tile {
  static constexpr int kTokens = Dot::kTokens;
  const PackedMatrixView& w;
  const QuantizedActivations& a;  // group 256, sums32 set
  float* y;                       // [a.n, w.n]
  int64_t ahead;                  // prefetch distance on the weight stream (decode; 0: none)

  template <int T>
  void run(int64_t pb, int64_t pe, int64_t t0) const {
    const int64_t ng = w.k / 256;
    each_cell<T>(w, kQ4KCellBytes, pb, pe, t0, ahead, y,
                 [&](const uint8_t* cell, int64_t g, float32x4_t(&y16)[T][4]) {
                   const int8_t* xq[T];
#pragma GCC unroll 16
                   for (int t = 0; t < T; ++t) xq[t] = a.q + (t0 + t) * a.k + g * 256;
                   int32x4_t dq[T][4];  // sum_j sc_j dot_j, rows 4q..4q+3 of token t
                   zero(dq);
                   for (int j = 0; j < 8; ++j) sub_block<T>(cell, j, xq, dq);
#pragma GCC unroll 16
                   for (int t = 0; t < T; ++t)
                     q4k_combine_a8(cell, dq[t], a.sums32 + (t0 + t) * (a.k / 32) + g * 8,
                                    a.scales[(t0 + t) * ng + g], y16[t]);
                 });
  }

  // dq[t][q] += sc_j * (token t's int32 dot over sub-block j, rows 4q..4q+3). The largest
  // folded sum, 8 * 63 * 32 * 15 * 127, is far inside int32.
  template <int T>
  static void sub_block(const uint8_t* cell, int j, const int8_t* const (&xq)[T],
                        int32x4_t (&dq)[T][4]) {
    typename Dot::Acc acc[T][4];
#pragma GCC unroll 16
    for (auto& at : acc)
#pragma GCC unroll 16
      for (auto& v : at) v = Dot::zero();
#pragma GCC unroll 4
    for (int b = 4 * j; b < 4 * j + 4; ++b)
      dot_block<Dot, PackedKind::kQ4K, T>(cell + kQ4KCodes, 256, b, xq, acc);
    int32x4_t sc[4];
    q4k_scales(cell, j, sc);
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t)
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) dq[t][q] = vmlaq_s32(dq[t][q], Dot::sum(acc[t][q]), sc[q]);
  }
};

// y[a.n, w.n] (panels [p0, p1)) for Q4K cells through Dot's tile; decode prefetches.
template <class Dot>
void q4k_matmul_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
                   float* y) {
  CHECK(w.fmt.kind == PackedKind::kQ4K && w.fmt.group == 256 && w.k % 256 == 0);
  CHECK(a.k == w.k && a.group == 256 && a.sums32 != nullptr);
  const int64_t ahead = a.n <= Dot::kTokens ? packed_tiling().prefetch_bytes : 0;
  packed::over_panels(Q4KA8Tile<Dot>{w, a, y, ahead}, w, a.n, p0, p1);
}

}  // namespace arm_packed
}  // namespace
}  // namespace edge
