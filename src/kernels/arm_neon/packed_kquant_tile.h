// The aarch64 register tiles' view of the k-quant cells (quant/packed.h, "Q4K group", "Q5K
// group" and "Q6K group": GGUF Q4_K's, Q5_K's and Q6_K's super-blocks of 256, kept as they
// are) and their A8
// tile, written once over the row-lane dot primitive of arm_neon/packed_neon_tile.h (plain
// NEON's widening multiplies, SDOT). In an anonymous namespace, as packed_neon_tile.h: each
// ISA file keeps its own copy.
//
// Q4K cell (16 rows x 256 k, 2368 bytes): sc [8 sub-blocks j][16 rows] u8 at byte 0; m pairs
// [4 i][16 rows][2] u8 at 128 (byte 32 i + 2 r + e = m_{2i+e} of row r); d [16] fp16 at 256;
// dmin [16] fp16 at 288; codes at 320 in the W4 block layout (32 blocks of 64 bytes, block b
// = k 8b..8b+7, so sub-block j = k 32j..32j+31 is blocks 4j..4j+3). A weight is
// w = d sc_j code - dmin m_j.
//
// Q5K cell (16 rows x 256 k, 2880 bytes): Q4K's fields (bytes 0..319, same weight formula),
// then codes 0..31 at 320 in 8 chunks of 320 bytes, chunk j = sub-block j: its four W4
// blocks of 8 k, then a high block whose byte 4 r + i holds bit 4 of row r at k 32j + 4m + i
// in bit m (packed_neon_tile.h's quarter<kQ5K> merges it).
//
// Q6K cell (16 rows x 256 k, 3360 bytes): sc pairs [8 i][16 rows][2] s8 at byte 0 (byte
// 32 i + 2 r + e = sc_{2i+e} of row r); d [16] fp16 at 256; codes at 288 in 16 chunks of 192
// bytes, chunk j = sub-block j = k 16j..16j+15 in the W6 layout of a group of 16 (W4 blocks
// 0 and 1, their high block at +128). A weight is w = d sc_j (code - 32), code 0..63.
//
// Both A8 tiles dot each sub-block exactly in int32 (codes as stored, unsigned), fold the
// dot into one int32 sum per (token, row) with the sub-block's integer scale, and apply the
// float scales once per 256 (Q4K / Q5K: d and dmin with the mins through the activations'
// sums of 32; Q6K: d with the -32 offset through the sums of 16), as the reference and the x86
// kernels do.
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

constexpr int kQ4KMins = 128, kQ4KD = 256, kQ4KDmin = 288, kQ4KCodes = 320;
constexpr int64_t kQ6KCellBytes = 3360;
constexpr int kQ6KD = 256, kQ6KCodes = 288, kQ6KChunk = 192;

// ---- shared ------------------------------------------------------------------------------

// sum_j p_j * s_j for rows 4q..4q+3 of one token, exact int32, where pair(i) gives the
// per-row s16 pairs (p_2i, p_2i+1) of the 4 rows (32-bit lane r' = row 4q + r') and s the
// token's N pairs of s16 sums: per pair i they multiply (s_2i, s_2i+1) put in every 32-bit
// lane, so a lane pair adds to one row (the x86 kernels' madd, by vmlal + vpadd). Q4K: the
// mins against the sums of 32; Q6K: the int8 scales against the sums of 16.
template <int N, class Pair>
inline int32x4_t pair_dot(const Pair& pair, const int16_t* s) {
  int32x4_t lo = vdupq_n_s32(0), hi = vdupq_n_s32(0);
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) {
    const int16x8_t m = pair(i);
    int32_t two;
    __builtin_memcpy(&two, s + 2 * i, 4);
    const int16x8_t sv = vreinterpretq_s16_s32(vdupq_n_s32(two));
    lo = vmlal_s16(lo, vget_low_s16(m), vget_low_s16(sv));
    hi = vmlal_high_s16(hi, m, sv);
  }
  return vpaddq_s32(lo, hi);
}

// dq[t][q] += sc[q] * (token t's exact int32 dot over code blocks [b0, b1) of `codes`,
// rows 4q..4q+3): one sub-block of a k-quant cell, xq[t] token t's codes at the blocks'
// group's first k (dot_block's operands), its dot scaled by the rows' sub-block scales.
template <class Dot, PackedKind K, int T>
inline void fold_blocks(const uint8_t* codes, int32_t group, int b0, int b1,
                        const int8_t* const (&xq)[T], const int32x4_t (&sc)[4],
                        int32x4_t (&dq)[T][4]) {
  typename Dot::Acc acc[T][4];
#pragma GCC unroll 16
  for (auto& at : acc)
#pragma GCC unroll 16
    for (auto& v : at) v = Dot::zero();
#pragma GCC unroll 4
  for (int b = b0; b < b1; ++b) dot_block<Dot, K, T>(codes, group, b, xq, acc);
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t)
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) dq[t][q] = vmlaq_s32(dq[t][q], Dot::sum(acc[t][q]), sc[q]);
}

// ---- Q4K ---------------------------------------------------------------------------------

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
// super-block), exact int32 (<= 8 * 63 * 32 * 127).
inline int32x4_t q4k_min_dot(const uint8_t* cell, int q, const int16_t* s32) {
  return pair_dot<4>([&](int i) { return vreinterpretq_s16_u16(q4k_min_pair(cell, i, q)); }, s32);
}

// Q4K and Q5K (the same per-row fields) for KQuantA8Tile: 8 sub-blocks of 32 k,
// activation sums per 32. Sub-block j's codes are 4 blocks of 8 k from chunk(cell, j):
// Q4K's W4 nibbles (256 bytes per sub-block), Q5K's nibbles with bit 4 from the chunk's
// high block (320 bytes), both unsigned as stored (quarter<K>).
template <PackedKind K>
struct Q4KFieldCells {
  static_assert(K == PackedKind::kQ4K || K == PackedKind::kQ5K);
  static constexpr PackedKind kKind = K;
  static constexpr int64_t kChunk = K == PackedKind::kQ5K ? 320 : 256;
  static constexpr int64_t kCellBytes = kQ4KCodes + 8 * kChunk;  // 2368 / 2880
  static constexpr int kSubBlocks = 8;
  static const int16_t* sums(const QuantizedActivations& a) { return a.sums32; }
  static const uint8_t* chunk(const uint8_t* cell, int j) { return cell + kQ4KCodes + kChunk * j; }

  // dq[t][q] += sc_j * (token t's int32 dot over sub-block j's 4 code blocks). The largest
  // folded sum, 8 * 63 * 32 * 31 * 127 (Q5K), is far inside int32.
  template <class Dot, int T>
  static void sub_block(const uint8_t* cell, int j, const int8_t* const (&xq)[T],
                        int32x4_t (&dq)[T][4]) {
    const int8_t* xj[T];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) xj[t] = xq[t] + 32 * j;
    int32x4_t sc[4];
    q4k_scales(cell, j, sc);
    fold_blocks<Dot, K, T>(chunk(cell, j), 256, 0, 4, xj, sc, dq);
  }

  // y4 (rows 4q..4q+3 of one token) += sa (d isum - dmin msum), the reference's two float
  // terms per super-block: isum = sum_j sc_j dot_j (dq), msum from the token's sums of 32
  // (s32) and the cell's mins.
  static void combine(const uint8_t* cell, const int32x4_t (&dq)[4], const int16_t* s32, float sa,
                      float32x4_t (&y4)[4]) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const float32x4_t d = vmulq_n_f32(halves4(cell, kQ4KD, q), sa);
      const float32x4_t dmin = vmulq_n_f32(halves4(cell, kQ4KDmin, q), sa);
      y4[q] = vfmaq_f32(y4[q], vcvtq_f32_s32(dq[q]), d);
      y4[q] = vfmsq_f32(y4[q], vcvtq_f32_s32(q4k_min_dot(cell, q, s32)), dmin);
    }
  }
};
using Q4KCells = Q4KFieldCells<PackedKind::kQ4K>;
using Q5KCells = Q4KFieldCells<PackedKind::kQ5K>;

// ---- Q6K ---------------------------------------------------------------------------------

// The int8 scales sc_j of the 16 rows as int32, sc[q] = rows 4q..4q+3. Pair j / 2's 32
// bytes alternate (sc_2i, sc_2i+1) row by row, so their even (odd) bytes are sub-block 2i's
// (2i+1's) 16 rows in order: one unzip.
inline void q6k_scales(const uint8_t* cell, int j, int32x4_t (&sc)[4]) {
  const int8_t* p = reinterpret_cast<const int8_t*>(cell) + 32 * (j / 2);
  const int8x16_t r0 = vld1q_s8(p), r8 = vld1q_s8(p + 16);  // rows 0-7, 8-15
  const int8x16_t v = j % 2 ? vuzp2q_s8(r0, r8) : vuzp1q_s8(r0, r8);
  const int16x8_t lo = vmovl_s8(vget_low_s8(v)), hi = vmovl_high_s8(v);
  sc[0] = vmovl_s16(vget_low_s16(lo));
  sc[1] = vmovl_high_s16(lo);
  sc[2] = vmovl_s16(vget_low_s16(hi));
  sc[3] = vmovl_high_s16(hi);
}

// Sub-block j's codes: a W6 group of 16 (quarter<kW6>(chunk, 16, b, q) for b = 0, 1 gives
// the 6-bit codes as stored, the high block at +128 being where W6 keeps it for G = 16).
inline const uint8_t* q6k_chunk(const uint8_t* cell, int j) {
  return cell + kQ6KCodes + kQ6KChunk * j;
}

// sum_j sc_j * sums16_j for rows 4q..4q+3 of one token (s16: its 16 sums of 16 codes in
// this super-block), exact int32 (<= 16 * 128 * 16 * 127): the scale pairs sign-extended
// (8 bytes at 32 i + 8 q).
inline int32x4_t q6k_offset_dot(const uint8_t* cell, int q, const int16_t* s16) {
  const int8_t* sc = reinterpret_cast<const int8_t*>(cell);
  return pair_dot<8>([&](int i) { return vmovl_s8(vld1_s8(sc + 32 * i + 8 * q)); }, s16);
}

// Q6K for KQuantA8Tile: 16 sub-blocks of 16 k, activation sums per 16.
struct Q6KCells {
  static constexpr PackedKind kKind = PackedKind::kQ6K;
  static constexpr int64_t kCellBytes = kQ6KCellBytes;
  static constexpr int kSubBlocks = 16;
  static const int16_t* sums(const QuantizedActivations& a) { return a.sums16; }

  // dq[t][q] += sc_j * (token t's int32 dot of the unsigned codes 0..63 over sub-block j).
  // The largest folded sum, 16 * 128 * 16 * 63 * 127, is inside int32 (2.6e8).
  template <class Dot, int T>
  static void sub_block(const uint8_t* cell, int j, const int8_t* const (&xq)[T],
                        int32x4_t (&dq)[T][4]) {
    const int8_t* xj[T];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) xj[t] = xq[t] + 16 * j;
    int32x4_t sc[4];
    q6k_scales(cell, j, sc);
    fold_blocks<Dot, PackedKind::kW6, T>(q6k_chunk(cell, j), 16, 0, 2, xj, sc, dq);
  }

  // y4 (rows 4q..4q+3 of one token) += sa d (dq - 32 sum_j sc_j sums16_j): the reference's
  // isum = sum_j sc_j (dot_j - 32 sums16_j), then one float term per super-block.
  static void combine(const uint8_t* cell, const int32x4_t (&dq)[4], const int16_t* s16, float sa,
                      float32x4_t (&y4)[4]) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const int32x4_t isum = vsubq_s32(dq[q], vshlq_n_s32(q6k_offset_dot(cell, q, s16), 5));
      y4[q] = vfmaq_f32(y4[q], vcvtq_f32_s32(isum), vmulq_n_f32(halves4(cell, kQ6KD, q), sa));
    }
  }
};

// ---- the A8 tile -------------------------------------------------------------------------

// The k-quant A8 register tile: up to Dot::kTokens tokens x one 16-row panel, activations
// quantised per 256 with the sums per sub-block (Cells::sums: sums32 for Q4K / Q5K, sums16
// for Q6K). Per sub-block j Cells::sub_block folds the exact int32 dots into dq with the
// integer scales sc_j, one multiply-add per (token, quarter); Cells::combine applies the
// float scales once per super-block. Dot: see RowA8Tile.
template <class Dot, class Cells>
struct KQuantA8Tile {
  static constexpr int kTokens = Dot::kTokens;
  const PackedMatrixView& w;
  const QuantizedActivations& a;  // group 256, Cells::sums(a) set
  float* y;                       // [a.n, w.n]
  int64_t ahead;                  // prefetch distance on the weight stream (decode; 0: none)

  template <int T>
  void run(int64_t pb, int64_t pe, int64_t t0) const {
    constexpr int kJ = Cells::kSubBlocks;
    const int64_t ng = w.k / 256;
    each_cell<T>(w, Cells::kCellBytes, pb, pe, t0, ahead, y,
                 [&](const uint8_t* cell, int64_t g, float32x4_t(&y16)[T][4]) {
                   const int8_t* xq[T];
#pragma GCC unroll 16
                   for (int t = 0; t < T; ++t) xq[t] = a.q + (t0 + t) * a.k + g * 256;
                   int32x4_t dq[T][4];  // sum_j sc_j dot_j, rows 4q..4q+3 of token t
                   zero(dq);
                   for (int j = 0; j < kJ; ++j) Cells::template sub_block<Dot, T>(cell, j, xq, dq);
#pragma GCC unroll 16
                   for (int t = 0; t < T; ++t) {
                     const int64_t tg = (t0 + t) * ng + g;  // [token, super-block]
                     Cells::combine(cell, dq[t], Cells::sums(a) + tg * kJ, a.scales[tg], y16[t]);
                   }
                 });
  }
};

// y[a.n, w.n] (panels [p0, p1)) for Cells' k-quant cells through Dot's tile; decode
// prefetches.
template <class Dot, class Cells>
void kquant_matmul_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0,
                      int64_t p1, float* y) {
  CHECK(w.fmt.kind == Cells::kKind && w.fmt.group == 256 && w.k % 256 == 0);
  CHECK(a.k == w.k && a.group == 256 && Cells::sums(a) != nullptr);
  const int64_t ahead = a.n <= Dot::kTokens ? packed_tiling().prefetch_bytes : 0;
  packed::over_panels(KQuantA8Tile<Dot, Cells>{w, a, y, ahead}, w, a.n, p0, p1);
}

}  // namespace arm_packed
}  // namespace
}  // namespace edge
