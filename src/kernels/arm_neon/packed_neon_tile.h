// What the aarch64 packed register tiles (arm_neon/, arm_dotprod/, arm_i8mm/) share: the
// unpacking of a (panel, group) cell into NEON registers, the per-group A8 combine, and the
// row-lane A8 tile written once over a per-ISA int8 dot primitive (plain NEON's widening
// multiplies, SDOT). Everything is in an anonymous namespace: each ISA file, compiled with
// its own -march, keeps its own copy (an inline function with external linkage could be
// merged across the files, one ISA's code for all).
//
// Layout recap (quant/packed.h): a 64-byte code block's 16-byte quarter q holds rows
// 4q..4q+3, a 32-bit lane per row over 4 consecutive k. W4: low nibbles k0..k0+3, high
// nibbles k0+4..k0+7 (block b: k0 = 8b). W6: the same nibbles plus bits 4-5 from high block
// b/2 (bit pairs 0-1 / 2-3 for an even b, 4-5 / 6-7 for an odd b). W8: one int8 plane,
// block b covering k 4b..4b+3. MXFP4: the W4 nibbles, each looked up (tbl) as its E2M1
// value doubled (int8 -12..12), the 16 E8M0 row bytes at G * 8 in place of fp16 scales.
#pragma once

#include <arm_neon.h>

#include <cstdint>

#include "core/check.h"
#include "kernels/arm_neon/neon_math.h"
#include "kernels/packed_api.h"
#include "kernels/packed_blocking.h"

namespace edge {
namespace {
namespace arm_packed {

using packed::cell_bytes;  // kernels/packed_blocking.h: internal linkage

// Byte offset of the 16 fp16 scales in a cell of `kind` (mins follow at +32 for W4 asym;
// MXFP4: its 16 E8M0 bytes, read by scales4).
constexpr int64_t scale_offset(PackedKind kind, int32_t group) {
  return kind == PackedKind::kW8   ? int64_t{group} * 16
         : kind == PackedKind::kW6 ? int64_t{group} * 12
                                   : int64_t{group} * 8;
}

// Planes (4 k each) per 64-byte code block: two nibble planes for W4/W6/Q4K/Q5K/MXFP4, one
// for W8.
constexpr int planes(PackedKind kind) {
  return kind == PackedKind::kW8 ? 1 : 2;
}

// The unsigned codes (as stored, no offset) of quarter q of code block b, one 16-byte
// vector per plane in the layout's lane order (W4 0..15, W6 0..63, W8 int8 bits; Q4K: the
// W4 nibbles, `cell` then pointing at its codes, byte 320; Q5K: 0..31, `cell` pointing at
// one 320-byte chunk, b = 0..3, its high block at +256).
template <PackedKind K>
inline void quarter(const uint8_t* cell, int32_t group, int b, int q, uint8x16_t* c) {
  const uint8x16_t raw = vld1q_u8(cell + 64 * b + 16 * q);
  if constexpr (K == PackedKind::kW8) {
    c[0] = raw;
  } else {
    const uint8x16_t mask = vdupq_n_u8(15);
    c[0] = vandq_u8(raw, mask);
    c[1] = vshrq_n_u8(raw, 4);
    if constexpr (K == PackedKind::kMxfp4) {  // E2M1 code -> doubled value, as int8 bits
      static constexpr int8_t kValues[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                             0, -1, -2, -3, -4, -6, -8, -12};
      const uint8x16_t lut = vreinterpretq_u8_s8(vld1q_s8(kValues));
      c[0] = vqtbl1q_u8(lut, c[0]);
      c[1] = vqtbl1q_u8(lut, c[1]);
    }
    if constexpr (K == PackedKind::kW6) {
      uint8x16_t hb = vld1q_u8(cell + 8 * group + 64 * (b / 2) + 16 * q);
      if (b % 2 == 1) hb = vshrq_n_u8(hb, 4);
      const uint8x16_t two = vdupq_n_u8(0x30);
      c[0] = vorrq_u8(c[0], vandq_u8(vshlq_n_u8(hb, 4), two));
      c[1] = vorrq_u8(c[1], vandq_u8(vshlq_n_u8(hb, 2), two));
    }
    if constexpr (K == PackedKind::kQ5K) {
      // Byte 4 r + i of the high block's quarter holds bit 4 of row 4q + r at k 4m + i in
      // bit m: the low plane of block b is m = 2b, the high plane 2b + 1. One shift by
      // 4 - 2b (right for b = 3) puts bit 2b at 4 and bit 2b + 1 at 5.
      const uint8x16_t hb = vshlq_u8(vld1q_u8(cell + 256 + 16 * q), vdupq_n_s8(4 - 2 * b));
      const uint8x16_t bit4 = vdupq_n_u8(0x10);
      c[0] = vorrq_u8(c[0], vandq_u8(hb, bit4));
      c[1] = vorrq_u8(c[1], vandq_u8(vshrq_n_u8(hb, 1), bit4));
    }
  }
}

// The offset the reference subtracts from a stored code (w = (code - offset) * scale; Q4K
// and Q5K have none: their mins are per sub-block, applied apart).
constexpr int offset(PackedKind kind) {
  return kind == PackedKind::kW4Sym ? 8 : kind == PackedKind::kW6 ? 32 : 0;
}

// Rows 4q..4q+3 of the cell's fp16 scales (or, at +16 halves, W4 asym mins) as f32.
inline float32x4_t halves4(const uint8_t* cell, int64_t off, int q) {
  return vcvt_f32_f16(vld1_f16(reinterpret_cast<const float16_t*>(cell + off) + 4 * q));
}

// Rows 4q..4q+3 of the cell's row scales as f32: fp16 at soff, or for MXFP4 the E8M0 bytes
// at soff as 2^(e - 128) ((e - 1) << 23 is its bit pattern for e >= 2; e = 0 and 1 are the
// subnormals 2^-128 and 2^-127, bit patterns 0x200000 << e: quant/mxfp4.h).
template <PackedKind K>
inline float32x4_t scales4(const uint8_t* cell, int64_t soff, int q) {
  if constexpr (K == PackedKind::kMxfp4) {
    uint32_t packed;
    __builtin_memcpy(&packed, cell + soff + 4 * q, 4);
    const uint32x4_t e = vmovl_u16(vget_low_u16(vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(packed)))));
    const uint32x4_t normal = vshlq_n_u32(vsubq_u32(e, vdupq_n_u32(1)), 23);
    const uint32x4_t sub = vshlq_u32(vdupq_n_u32(0x200000), vreinterpretq_s32_u32(e));
    return vreinterpretq_f32_u32(vbslq_u32(vcgtq_u32(e, vdupq_n_u32(1)), normal, sub));
  } else {
    return halves4(cell, soff, q);
  }
}

// Every vector of a register array [T][N] (f32 or int32 accumulators) set to zero.
template <class V, int T, int N>
inline void zero(V (&v)[T][N]) {
#pragma GCC unroll 16
  for (auto& vt : v)
#pragma GCC unroll 16
    for (V& x : vt) x = V{};
}

// The 4 int8 codes at q broadcast to every 32-bit lane (the activation operand of a row
// lane over 4 k).
inline int8x16_t broadcast4(const int8_t* q) {
  int32_t v;
  __builtin_memcpy(&v, q, 4);
  return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

// Prefetches the cell's bytes `ahead` further on in the weight stream (one line per 64
// bytes): the decode GEMV reads weights once, so DRAM latency is what it waits on.
inline void prefetch_cell(const uint8_t* cell, int64_t cell_bytes, int64_t ahead) {
  for (int64_t off = 0; off < cell_bytes; off += 64) __builtin_prefetch(cell + ahead + off);
}

// The loop of every aarch64 panel tile: per panel p in [pb, pe), y16 (tokens t0..t0+T-1 x
// the panel's 16 rows, 4 per vector) starts at zero, each (panel, group) cell of `cb` bytes
// adds its share through body(cell, g, y16), and the panel is stored to y [n, w.n]; `ahead`
// is the decode prefetch distance on the weight stream (0: none).
template <int T, class Body>
inline void each_cell(const PackedMatrixView& w, int64_t cb, int64_t pb, int64_t pe, int64_t t0,
                      int64_t ahead, float* y, const Body& body) {
  const int64_t ng = w.k / w.fmt.group;
  for (int64_t p = pb; p < pe; ++p) {
    float32x4_t y16[T][4];
    zero(y16);
    for (int64_t g = 0; g < ng; ++g) {
      const uint8_t* cell = w.data + (p * ng + g) * cb;
      if (ahead > 0) prefetch_cell(cell, cb, ahead);
      body(cell, g, y16);
    }
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) neon::store_panel(w, p, t0 + t, y16[t], y);
  }
}

// tile.panels<K, T>(pb, pe, t0) for the matrix's kind: a tile's run<T> (packed_blocking.h)
// reads the kind once per call, and the inner loops are compiled per kind.
template <int T, class Tile>
inline void panels_by_kind(const Tile& tile, int64_t pb, int64_t pe, int64_t t0) {
  switch (tile.w.fmt.kind) {
    case PackedKind::kW4Sym:
      return tile.template panels<PackedKind::kW4Sym, T>(pb, pe, t0);
    case PackedKind::kW4Asym:
      return tile.template panels<PackedKind::kW4Asym, T>(pb, pe, t0);
    case PackedKind::kW8:
      return tile.template panels<PackedKind::kW8, T>(pb, pe, t0);
    case PackedKind::kW6:
      return tile.template panels<PackedKind::kW6, T>(pb, pe, t0);
    case PackedKind::kMxfp4:
      return tile.template panels<PackedKind::kMxfp4, T>(pb, pe, t0);
    case PackedKind::kQ4K:  // super-blocks: tiles of their own (packed_kquant_tile.h)
    case PackedKind::kQ6K:
    case PackedKind::kQ5K:
      CHECK_MSG(false, "k-quant cells go through their own matmul entries");
  }
}

// y4 (rows 4q..4q+3) += one group's f32 contribution from its exact int32 dots d, as the
// reference's group_a8: sym (d - 8 qsum) s sa, asym d s sa + min sa qsum, W6 (d - 32 qsum)
// s sa, W8 and MXFP4 d s sa (codes are dotted as stored, MXFP4's as signed values; the
// offset comes off through the sums).
template <PackedKind K>
inline void combine_a8(const uint8_t* cell, int64_t soff, int q, int32x4_t d, float sa,
                       int32_t qsum, float32x4_t& y4) {
  if constexpr (offset(K) != 0) d = vsubq_s32(d, vdupq_n_s32(offset(K) * qsum));
  y4 = vfmaq_f32(y4, vcvtq_f32_s32(d), vmulq_n_f32(scales4<K>(cell, soff, q), sa));
  if constexpr (K == PackedKind::kW4Asym)
    y4 = vfmaq_n_f32(y4, halves4(cell, soff + 32, q), sa * static_cast<float>(qsum));
}

// acc[t][q] += code block b of `codes` (rows 4q..4q+3 of quarter q) x token t's
// activation codes from xq[t] (the group's first k): each quarter's planes (4 rows x 4 k, a
// 32-bit lane per row) are unpacked once and dotted with every token's 4 codes of those k
// broadcast to the lanes. Exact int32 (Dot below).
template <class Dot, PackedKind K, int T>
inline void dot_block(const uint8_t* codes, int32_t group, int b, const int8_t* const (&xq)[T],
                      typename Dot::Acc (&acc)[T][4]) {
  constexpr int kP = planes(K);
  int8x16_t act[T][kP];
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t)
#pragma GCC unroll 16
    for (int h = 0; h < kP; ++h) act[t][h] = broadcast4(xq[t] + 4 * (kP * b + h));
#pragma GCC unroll 16
  for (int q = 0; q < 4; ++q) {
    uint8x16_t c[kP];
    quarter<K>(codes, group, b, q, c);
#pragma GCC unroll 16
    for (int h = 0; h < kP; ++h)
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) Dot::add(acc[t][q], vreinterpretq_s8_u8(c[h]), act[t][h]);
  }
}

// The A8 register tile over row lanes: up to Dot::kTokens tokens x one 16-row panel, code
// block by code block through dot_block; per group the int32 dots (exact) go through
// combine_a8. Dot is the ISA's primitive:
//   struct Dot {
//     static constexpr int kTokens;  // tokens per tile (its accumulators must fit)
//     struct Acc;                    // one token's int32 partial dots of 4 rows
//     static Acc zero();
//     static void add(Acc&, int8x16_t codes, int8x16_t act);  // 4 rows x 4 k
//     static int32x4_t sum(const Acc&);                        // lane j = row 4q + j
//   };
template <class Dot>
struct RowA8Tile {
  static constexpr int kTokens = Dot::kTokens;
  const PackedMatrixView& w;
  const QuantizedActivations& a;
  float* y;       // [a.n, w.n]
  int64_t ahead;  // prefetch distance on the weight stream (decode only; 0: none)

  template <PackedKind K, int T>
  void panels(int64_t pb, int64_t pe, int64_t t0) const {
    constexpr int kP = planes(K);
    const int32_t G = w.fmt.group;
    const int64_t ng = w.k / G, soff = scale_offset(K, G);
    each_cell<T>(w, cell_bytes(K, G), pb, pe, t0, ahead, y,
                 [&](const uint8_t* cell, int64_t g, float32x4_t(&y16)[T][4]) {
                   typename Dot::Acc acc[T][4];
#pragma GCC unroll 16
                   for (auto& at : acc)
#pragma GCC unroll 16
                     for (auto& v : at) v = Dot::zero();
                   const int8_t* xq[T];
#pragma GCC unroll 16
                   for (int t = 0; t < T; ++t) xq[t] = a.q + (t0 + t) * a.k + g * G;
                   for (int b = 0; b < G / (4 * kP); ++b) dot_block<Dot, K, T>(cell, G, b, xq, acc);
#pragma GCC unroll 16
                   for (int t = 0; t < T; ++t)
#pragma GCC unroll 16
                     for (int q = 0; q < 4; ++q)
                       combine_a8<K>(cell, soff, q, Dot::sum(acc[t][q]),
                                     a.scales[(t0 + t) * ng + g], a.sums[(t0 + t) * ng + g],
                                     y16[t][q]);
                 });
  }

  template <int T>
  void run(int64_t pb, int64_t pe, int64_t t0) const {
    panels_by_kind<T>(*this, pb, pe, t0);
  }
};

}  // namespace arm_packed
}  // namespace
}  // namespace edge
