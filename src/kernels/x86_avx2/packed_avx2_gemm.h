// AVX2 int8 matmuls over the packed layout of quant/packed.h, shared by packed_avx2.cpp
// (plain AVX2: maddubs) and packed_avxvnni.cpp (AVX-VNNI: vpdpbusd): the prefill GEMM and,
// with a tile of one token, the decode GEMV. The loop nest around the tiles is
// kernels/packed_blocking.h.
//
// Decode reads each 64-byte block once, whole (both half-panels), in storage order, and
// prefetches PackedTiling::prefetch_bytes ahead: measured on the Zen 3 against the earlier
// half-panel GEMV (rows 0-7 over all of K, then rows 8-15): +12% tokens/s from the single
// pass, +15% more from the prefetch (1.54B W4A8 g128, 2 threads).
//
// Register tile: T <= 4 tokens x one whole 16-row panel. A 64-byte code block (8 k) is two
// ymm halves, rows 0-7 and rows 8-15 (8 int32 lanes = 8 rows x 4 consecutive k); each half
// is unpacked once (low nibbles = k0..k0+3, high nibbles = k0+4..k0+7) and feeds all T
// tokens, and each broadcast activation quad feeds both halves. Per 8 k: 2 loads, 6 unpack
// ops, 2T broadcasts, 4T multiplies — T x 2 accumulators of 8 lanes.
//
// Plain AVX2 (maddubs + madd): maddubs(u8 code, s8 q) adds two products into an s16 pair
// without saturating (|pair| <= 2 * 15 * 127 = 3810, and the quantiser clamps q to
// [-127, 127]). The pairs are summed in s16 (vpaddw) over a round of 32 k — 16 products per
// s16 lane, |sum| <= 16 * 15 * 127 = 30480 < 32767, so the sum is exact for any codes and
// activations — then widened to int32 by one madd with ones per round: one madd per 8
// maddubs instead of one per maddubs (madd runs on the same multiply ports as maddubs).
// AVX-VNNI: vpdpbusd accumulates in int32 directly; a round is the whole group.
//
// Per (token, group): sym subtracts 8 * sum(q) from the int32 dot, asym adds
// min * scale_a * sum(q); one float FMA applies scale_w * scale_a (as the reference does).
//
// W6 runs the same tile (kW6): each nibble plane gets bits 4-5 from the high plane (as
// add_w6_high does for the GEMV), and the dot is corrected by 32 * sum(q). Codes reach 63, so
// maddubs pairs reach 2 * 63 * 127 = 16002 and only two of them fit an s16 lane (32004): with
// maddubs the round is one 64-byte block (2 maddubs per lane) before the widening madd.
//
// Q4K, Q5K and Q6K (G = 256, GGUF's super-blocks kept as they are) fold their integer
// sub-block scales into the widening: maddubs' madd takes the scales in place of ones (Q4K:
// 6-bit per 32 k; Q5K: the same, codes 0..31 with bit 4 from its high block, so its maddubs
// rounds are two blocks: 4 pairs of <= 2 * 31 * 127 = 7874 per s16 lane; Q6K: int8 per 16 k,
// its rounds of one block), vpdpbusd's int32 sums take one vpmulld per sub-block. One float
// step per 256 applies d (and the Q4K / Q5K dmin term).
//
// MXFP4 (G = 32) runs the W4 tile with one vpshufb per nibble plane turning each E2M1 code
// into its doubled value + 12 (u8 0..24), so the dot is corrected by 12 * sum(q) as sym W4's
// is by 8; its scale is the E8M0 byte's 2^(e - 128). maddubs pairs reach 2 * 24 * 127 = 6096:
// rounds of two blocks (8 products per s16 lane, <= 24384) before the widening madd.
#pragma once

#include <cstdlib>

#include "core/check.h"
#include "kernels/packed_blocking.h"
#include "kernels/x86_avx2/packed_avx2_tiles.h"

namespace edge {
namespace {

// Tokens per register tile: 4 x 2 accumulators + 2 unpacked halves + broadcast + product +
// nibble mask = 13 of the 16 ymm registers (6 tokens measured within 1%, with spills).
constexpr int kGemmTokens = 4;

// One 4-k step: the two weight halves (u8 codes, 8 rows x 4 k each) against the activation
// quads q[t * ld .. +3] of T tokens. s: s16 pairs (maddubs) or int32 (VNNI), [T][2 halves].
template <int T, bool kVnni>
inline void gemm_step(__m256i (&s)[T][2], __m256i w0, __m256i w1, const int8_t* q, int64_t ld) {
  for (int t = 0; t < T; ++t) {
    const __m256i qb = bcast32(q + t * ld);
    if constexpr (kVnni) {
      s[t][0] = dot4<true>(s[t][0], w0, qb);
      s[t][1] = dot4<true>(s[t][1], w1, qb);
    } else {
      s[t][0] = _mm256_add_epi16(s[t][0], _mm256_maddubs_epi16(w0, qb));
      s[t][1] = _mm256_add_epi16(s[t][1], _mm256_maddubs_epi16(w1, qb));
    }
    // Keep each running sum in a register: left free, GCC reassociates the chain of adds
    // into a tree whose products (8 per step) spill to the stack.
    asm("" : "+x"(s[t][0]), "+x"(s[t][1]));
  }
}

// acc[t][h] += the group's contribution, from the int32 dots d[t][h] of cell c.
// off (kOff): per (token, group) the offset term's activation factor, precomputed once per
// call (w4a8_gemm_pre): sym -8 * sa * sum(q), so acc += sw * (dot * sa + off), one FMA
// fewer per (token, half) and no scalar multiply + broadcast per token; asym sa * sum(q).
template <int G, int T, bool kAsym, bool kW6, bool kOff = false, bool kMx = false>
inline void w4_group_epilogue(__m256 (&acc)[T][2], const __m256i (&d)[T][2], const uint8_t* c,
                              const float* sa, const int32_t* qs, int64_t ng,
                              const float* off = nullptr) {
  constexpr int kScales = kW6 ? G * 12 : G * 8;
  constexpr int kOffset = kMx ? 12 : kW6 ? 32 : 8;
  // MXFP4: the rows' E8M0 bytes at G * 8 (8 per half) instead of fp16 scales.
  const __m256 sw[2] = {kMx ? load_e8m0_8(c + kScales) : load_half8(c + kScales),
                        kMx ? load_e8m0_8(c + kScales + 8) : load_half8(c + kScales + 16)};
  __m256 mins[2];
  if constexpr (kAsym) mins[0] = load_half8(c + G * 8 + 32), mins[1] = load_half8(c + G * 8 + 48);
  for (int t = 0; t < T; ++t) {
    const __m256 sat = _mm256_set1_ps(sa[t * ng]);
    if constexpr (kOff) {
      const __m256 o = _mm256_broadcast_ss(off + t * ng);
      for (int h = 0; h < 2; ++h) {
        const __m256 dt = _mm256_cvtepi32_ps(d[t][h]);
        if constexpr (kAsym) {
          acc[t][h] = _mm256_fmadd_ps(mins[h], o, acc[t][h]);
          acc[t][h] = _mm256_fmadd_ps(dt, _mm256_mul_ps(sw[h], sat), acc[t][h]);
        } else {
          acc[t][h] = _mm256_fmadd_ps(sw[h], _mm256_fmadd_ps(dt, sat, o), acc[t][h]);
        }
      }
      continue;
    }
    for (int h = 0; h < 2; ++h) {
      __m256i dt = d[t][h];
      if constexpr (kAsym) {
        acc[t][h] = _mm256_fmadd_ps(
            mins[h], _mm256_set1_ps(sa[t * ng] * static_cast<float>(qs[t * ng])), acc[t][h]);
      } else {
        dt = _mm256_sub_epi32(dt, _mm256_set1_epi32(kOffset * qs[t * ng]));
      }
      acc[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dt), _mm256_mul_ps(sw[h], sat), acc[t][h]);
    }
  }
}

// Q4K (G = 256): acc[t][h] += sa * (d * dot - dmin * sum_j m_j * sums32_j) per super-block,
// dot = sum_j sc_j * dot_j already folded in (kquant_fold). The mins' integer sum is 4
// madds per (token, half): lane = row, (m_2i, m_2i+1) . (sums32_2i, sums32_2i+1).
template <int T>
inline void q4k_epilogue(__m256 (&acc)[T][2], const __m256i (&d)[T][2], const uint8_t* c,
                         const float* sa, const int16_t* s32, int64_t ng, int64_t ld32) {
  const __m256 dv[2] = {load_half8(c + 256), load_half8(c + 272)};
  const __m256 dm[2] = {load_half8(c + 288), load_half8(c + 304)};
  __m256i mp[4][2];
  for (int i = 0; i < 4; ++i)
    for (int h = 0; h < 2; ++h)
      mp[i][h] = _mm256_cvtepu8_epi16(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(c + 128 + 32 * i + 16 * h)));
  for (int t = 0; t < T; ++t) {
    const __m256 sat = _mm256_set1_ps(sa[t * ng]);
    __m256i ms[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    for (int i = 0; i < 4; ++i) {
      int32_t pair;
      std::memcpy(&pair, s32 + t * ld32 + 2 * i, 4);
      const __m256i bp = _mm256_set1_epi32(pair);
      for (int h = 0; h < 2; ++h) ms[h] = _mm256_add_epi32(ms[h], _mm256_madd_epi16(mp[i][h], bp));
    }
    for (int h = 0; h < 2; ++h) {
      acc[t][h] =
          _mm256_fmadd_ps(_mm256_cvtepi32_ps(d[t][h]), _mm256_mul_ps(dv[h], sat), acc[t][h]);
      acc[t][h] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(ms[h]), _mm256_mul_ps(dm[h], sat), acc[t][h]);
    }
  }
}

// Q4K / Q5K: the 6-bit scales sc_j of sub-block j (32 k) of cell c for 8 rows (half h) as
// int32 lanes. VNNI: s is int32, one vpmulld (kquant_fold). maddubs: s holds s16 pairs, so
// the scale goes to both halves of each lane and one madd both widens and scales (it
// replaces the madd with ones: no extra op). The 16 rows' scales are broadcast to both
// 128-bit lanes (a load, no ALU op) and one vpshufb per half writes row 8h + r's scale to
// bytes 0 and 2 of lane r, zeros to 1 and 3: 2 ALU ops per sub-block instead of 6 (widen,
// shift, or per half). In packed_bench (Zen 4) the best Q4K prefill figure moved from 241
// to 247 GFLOP/s; the medians stayed within the host's noise.
template <bool kVnni>
inline void q4k_scales(const uint8_t* c, int j, __m256i (&sc)[2]) {
  if constexpr (kVnni) {
    for (int h = 0; h < 2; ++h)
      sc[h] = _mm256_cvtepu8_epi32(
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(c + 16 * j + 8 * h)));
  } else {
    const __m256i all =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c + 16 * j)));
    const char z = static_cast<char>(0x80);  // vpshufb: index with bit 7 set writes zero
    sc[0] =
        _mm256_shuffle_epi8(all, _mm256_setr_epi8(0, z, 0, z, 1, z, 1, z, 2, z, 2, z, 3, z, 3, z, 4,
                                                  z, 4, z, 5, z, 5, z, 6, z, 6, z, 7, z, 7, z));
    sc[1] = _mm256_shuffle_epi8(
        all, _mm256_setr_epi8(8, z, 8, z, 9, z, 9, z, 10, z, 10, z, 11, z, 11, z, 12, z, 12, z, 13,
                              z, 13, z, 14, z, 14, z, 15, z, 15, z));
  }
}

// Q6K: the int8 scales sc_j of sub-block j (16 k) of cell c for 8 rows from the pair layout
// (lane = row: (sc_2i, sc_2i+1) as s16). maddubs: the scale goes to both s16 halves of the
// lane (one vpshufb); VNNI: the scale sign-extended to int32.
template <bool kVnni>
inline void q6k_scales(const uint8_t* c, int j, __m256i (&sc)[2]) {
  for (int h = 0; h < 2; ++h) {
    const __m256i sp = _mm256_cvtepi8_epi16(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(c + 32 * (j / 2) + 16 * h)));
    if constexpr (kVnni) {
      sc[h] = j % 2 ? _mm256_srai_epi32(sp, 16) : _mm256_srai_epi32(_mm256_slli_epi32(sp, 16), 16);
    } else {  // s16 word 2r (j even) or 2r + 1 (j odd) into both words of lane r
      const __m256i even = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13, 0,
                                            1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13);
      const __m256i odd = _mm256_add_epi8(even, _mm256_set1_epi8(2));
      sc[h] = _mm256_shuffle_epi8(sp, j % 2 ? odd : even);
    }
  }
}

// K-quants: d[t][h] += sc_j * s[t][h], the sub-block's scales prepared once (q4k_scales /
// q6k_scales) and kept in registers for its rounds (preparing them every maddubs round
// made the Q6K tile slower than W6's).
template <int T, bool kVnni>
inline void kquant_fold(__m256i (&d)[T][2], const __m256i (&s)[T][2], const __m256i (&sc)[2]) {
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < 2; ++h)
      d[t][h] = _mm256_add_epi32(
          d[t][h], kVnni ? _mm256_mullo_epi32(s[t][h], sc[h]) : _mm256_madd_epi16(s[t][h], sc[h]));
}

// Q6K (G = 256): acc[t][h] += sa * d * (dot - 32 * sum_j sc_j * sums16_j) per super-block,
// dot = sum_j sc_j * dot_j already folded in (kquant_fold). The offset's integer sum is 8
// madds per (token, half): lane = row, (sc_2i, sc_2i+1) . (sums16_2i, sums16_2i+1).
template <int T>
inline void q6k_epilogue(__m256 (&acc)[T][2], const __m256i (&d)[T][2], const uint8_t* c,
                         const float* sa, const int16_t* s16, int64_t ng, int64_t ld16) {
  const __m256 dv[2] = {load_half8(c + 256), load_half8(c + 272)};
  __m256i sp[8][2];
  for (int i = 0; i < 8; ++i)
    for (int h = 0; h < 2; ++h)
      sp[i][h] = _mm256_cvtepi8_epi16(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(c + 32 * i + 16 * h)));
  for (int t = 0; t < T; ++t) {
    __m256i os[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    for (int i = 0; i < 8; ++i) {
      int32_t pair;
      std::memcpy(&pair, s16 + t * ld16 + 2 * i, 4);
      const __m256i bp = _mm256_set1_epi32(pair);
      for (int h = 0; h < 2; ++h) os[h] = _mm256_add_epi32(os[h], _mm256_madd_epi16(sp[i][h], bp));
    }
    const __m256 sat = _mm256_set1_ps(sa[t * ng]);
    for (int h = 0; h < 2; ++h) {
      const __m256i dt = _mm256_sub_epi32(d[t][h], _mm256_slli_epi32(os[h], 5));
      acc[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dt), _mm256_mul_ps(dv[h], sat), acc[t][h]);
    }
  }
}

// MXFP4: E2M1 code (a nibble, 0..15) -> its doubled value + 12 (u8 0..24), for vpshufb.
inline __m256i mxfp4_lut() {
  return _mm256_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0, 12, 13, 14, 15,
                          16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0);
}

// What a packed kind means to the int8 tile: its codes' offset in a cell, where 64-byte code
// block b (8 k) and its high bits lie, and how a round of blocks is summed before widening.
template <int G, PackedKind K>
struct GemmKind {
  static constexpr bool kAsym = K == PackedKind::kW4Asym;
  static constexpr bool kW6 = K == PackedKind::kW6 || K == PackedKind::kQ6K;  // 2 high bits
  static constexpr bool kQ5 = K == PackedKind::kQ5K;                          // 1 high bit
  static constexpr bool kQ4Fields = K == PackedKind::kQ4K || kQ5;  // sc, m, d, dmin: Q4K's
  static constexpr bool kQ6 = K == PackedKind::kQ6K;
  static constexpr bool kSuper = kQ4Fields || kQ6;  // G = 256, sub-block scales folded in
  static constexpr bool kMx = K == PackedKind::kMxfp4;  // W4 nibbles through mxfp4_lut()
  static constexpr int64_t kCode0 = kQ4Fields ? 320 : kQ6 ? 288 : 0;
  static constexpr int64_t kCellBytes = cell_bytes(K, G);
  // Blocks of 8 k per sub-block (the scale folded by kquant_fold).
  static constexpr int kSubBlock = kQ6 ? 2 : 4;
  // Blocks summed in s16 (maddubs) or int32 (VNNI) before widening / folding, see the
  // header comment: maddubs pairs of codes <= 15 take 4 blocks (32 k), <= 31 two, <= 63 one.
  static constexpr int round(bool vnni) {
    return kSuper ? (vnni || K == PackedKind::kQ4K ? kSubBlock
                     : kQ5                         ? 2
                                                   : 1)
                  : (vnni  ? G / 8
                     : kW6 ? 1
                     : kMx ? 2
                           : 4);
  }
  // W6 keeps the high plane after the G * 8 nibble bytes; Q6K interleaves chunks of 192
  // bytes per 16 k (two nibble blocks, their high block), Q5K chunks of 320 bytes per 32 k
  // (four nibble blocks, their high block): quant/packed.h.
  static constexpr int64_t low_block(int b) {
    return kQ6   ? kCode0 + (b / 2) * 192 + (b % 2) * 64
           : kQ5 ? kCode0 + (b / 4) * 320 + (b % 4) * 64
                 : kCode0 + b * 64;
  }
  static constexpr int64_t high_block(int b) {
    return kQ6   ? kCode0 + (b / 2) * 192 + 128
           : kQ5 ? kCode0 + (b / 4) * 320 + 256
                 : kCode0 + G * 8 + (b / 2) * 64;
  }
};

// Block b's high bits (the 32 bytes of half h at hp) or-ed into its two nibble planes lo
// (k 8b .. 8b+3) and hi (8b+4 .. 8b+7). W6 / Q6K: bit pairs 0-3 of an even block, 4-7 of an
// odd one, to bits 4-5. Q5K: bits 2 (b % 4) and 2 (b % 4) + 1 to bit 4 (16-bit shifts whose
// bits crossing a byte border are masked off). The prefill unpack's (unpack_panel, once per
// cache block); the in-register tile has constant shifts instead (w6_pair, q5k_sub_block).
template <class KK>
inline void merge_high(const uint8_t* hp, int b, __m256i* lo, __m256i* hi) {
  __m256i h = load256(hp);
  if constexpr (KK::kQ5) {
    if (b % 4 >= 2) h = _mm256_srli_epi16(h, 4);
    h = b % 2 ? _mm256_slli_epi16(h, 2) : _mm256_slli_epi16(h, 4);  // lo's bit -> 4, hi's -> 5
    const __m256i m = _mm256_set1_epi8(0x10);
    *lo = _mm256_or_si256(*lo, _mm256_and_si256(h, m));
    *hi = _mm256_or_si256(*hi, _mm256_and_si256(_mm256_srli_epi16(h, 1), m));
  } else {
    if (b % 2 == 0) h = _mm256_slli_epi16(h, 4);
    const __m256i m = _mm256_set1_epi8(0x30);
    *lo = _mm256_or_si256(*lo, _mm256_and_si256(h, m));
    *hi = _mm256_or_si256(*hi, _mm256_and_si256(_mm256_srli_epi16(h, 2), m));
  }
}

// Bit M of each byte of h moved to bit 4 (and M + 1 to 5): 16-bit shifts, what crosses a byte
// border lands outside bits 4-5 and is masked off by the caller.
template <int M>
inline __m256i bits_to_4(__m256i h) {
  if constexpr (M < 4)
    return _mm256_slli_epi16(h, 4 - M);
  else if constexpr (M > 4)
    return _mm256_srli_epi16(h, M - 4);
  else
    return h;
}

// Q5K code block M (0..3) of a 320-byte chunk cc (32 k, quant/packed.h) against T tokens:
// nibble planes with bits 2M (lo) and 2M + 1 (hi) of the chunk's high block hb as bit 4,
// the shifts known at compile time (merge_high's depend on a run-time block position).
template <int M, int T, bool kVnni>
inline void q5k_block(__m256i (&s)[T][2], const uint8_t* cc, const __m256i (&hb)[2],
                      const int8_t* q, int64_t ld) {
  const __m256i nib = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10);
  __m256i lo[2], hi[2];
  for (int x = 0; x < 2; ++x) {
    const __m256i v = load256(cc + 64 * M + 32 * x);
    lo[x] =
        _mm256_or_si256(_mm256_and_si256(v, nib), _mm256_and_si256(bits_to_4<2 * M>(hb[x]), bit4));
    hi[x] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), nib),
                            _mm256_and_si256(bits_to_4<2 * M + 1>(hb[x]), bit4));
  }
  gemm_step<T, kVnni>(s, lo[0], lo[1], q + 8 * M, ld);
  gemm_step<T, kVnni>(s, hi[0], hi[1], q + 8 * M + 4, ld);
}

// Q5K sub-block (32 k = one chunk, its 6-bit scales sc) in rounds of kRound blocks (2 with
// maddubs, 4 with VNNI: GemmKind::round), folded into d. The high block is loaded once for
// the four blocks. Used by decode and small batches; prefill unpacks (unpack_panel).
template <int T, bool kVnni, int kRound>
inline void q5k_sub_block(__m256i (&d)[T][2], const uint8_t* cc, const int8_t* q, int64_t ld,
                          const __m256i (&sc)[2]) {
  const __m256i hb[2] = {load256(cc + 256), load256(cc + 288)};
  __m256i s[T][2];
  for (int t = 0; t < T; ++t) s[t][0] = s[t][1] = _mm256_setzero_si256();
  q5k_block<0, T, kVnni>(s, cc, hb, q, ld);
  q5k_block<1, T, kVnni>(s, cc, hb, q, ld);
  if constexpr (kRound == 2) {
    kquant_fold<T, kVnni>(d, s, sc);
    for (int t = 0; t < T; ++t) s[t][0] = s[t][1] = _mm256_setzero_si256();
  }
  q5k_block<2, T, kVnni>(s, cc, hb, q, ld);
  q5k_block<3, T, kVnni>(s, cc, hb, q, ld);
  kquant_fold<T, kVnni>(d, s, sc);
}

// W6 / Q6K code block M (0: even, 1: odd) of a pair sharing one high block hb (32 bytes per
// half): bits 4M, 4M + 1 (lo) and 4M + 2, 4M + 3 (hi) of each byte as bits 4-5.
template <int M, int T, bool kVnni>
inline void w6_block(__m256i (&s)[T][2], const uint8_t* cc, const __m256i (&hb)[2], const int8_t* q,
                     int64_t ld) {
  const __m256i nib = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
  __m256i lo[2], hi[2];
  for (int x = 0; x < 2; ++x) {
    const __m256i v = load256(cc + 32 * x);
    lo[x] = _mm256_or_si256(_mm256_and_si256(v, nib),
                            _mm256_and_si256(bits_to_4<4 * M>(hb[x]), bits45));
    hi[x] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), nib),
                            _mm256_and_si256(bits_to_4<4 * M + 2>(hb[x]), bits45));
  }
  gemm_step<T, kVnni>(s, lo[0], lo[1], q, ld);
  gemm_step<T, kVnni>(s, hi[0], hi[1], q + 4, ld);
}

// d += the round sums s: K-quants scaled by the sub-block's scales sc (kquant_fold), the others
// widened (maddubs) or added (VNNI).
template <class KK, int T, bool kVnni>
inline void add_round(__m256i (&d)[T][2], const __m256i (&s)[T][2], const __m256i (&sc)[2]) {
  if constexpr (KK::kSuper) {
    kquant_fold<T, kVnni>(d, s, sc);
  } else {
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < 2; ++h)
        d[t][h] = kVnni
                      ? _mm256_add_epi32(d[t][h], s[t][h])
                      : _mm256_add_epi32(d[t][h], _mm256_madd_epi16(s[t][h], _mm256_set1_epi16(1)));
  }
}

// W6 / Q6K blocks r (even) and r + 1 of cell c, which share a high block (loaded once here,
// the shifts constants). Rounds (GemmKind::round): maddubs one block (two pairs of <= 63 * 127
// fill an s16 lane), VNNI the pair (W6's group-long rounds summed a pair at a time).
template <class KK, int T, bool kVnni>
inline void w6_pair(__m256i (&d)[T][2], const uint8_t* c, int r, const int8_t* q, int64_t ld,
                    const __m256i (&sc)[2]) {
  const uint8_t* hp = c + KK::high_block(r);
  const __m256i hb[2] = {load256(hp), load256(hp + 32)};
  __m256i s[T][2];
  for (int t = 0; t < T; ++t) s[t][0] = s[t][1] = _mm256_setzero_si256();
  w6_block<0, T, kVnni>(s, c + KK::low_block(r), hb, q, ld);
  if constexpr (!kVnni) {
    add_round<KK, T, kVnni>(d, s, sc);
    for (int t = 0; t < T; ++t) s[t][0] = s[t][1] = _mm256_setzero_si256();
  }
  w6_block<1, T, kVnni>(s, c + KK::low_block(r + 1), hb, q + 8, ld);
  add_round<KK, T, kVnni>(d, s, sc);
}

// y[t0 .. t0+T, rows of panel p] for W4 (sym or asym), W6, Q4K, Q5K or Q6K (G = 256) with
// int8 activations.
template <int G, PackedKind K, bool kVnni>
struct W4A8Gemm {
  static constexpr int kTokens = kGemmTokens;
  // kPre: the panel's codes come unpacked from u (see w4a8_gemm_pre), the cells supply
  // only the scales.
  template <int T, bool kPre = false>
  static void tile(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p, int64_t t0,
                   float* y, int64_t pf, const uint8_t* u = nullptr, const float* off = nullptr);
};

template <int G, PackedKind K, bool kVnni>
template <int T, bool kPre>
void W4A8Gemm<G, K, kVnni>::tile(const PackedMatrixView& w, const QuantizedActivations& a,
                                 int64_t p, int64_t t0, float* y, int64_t pf, const uint8_t* u,
                                 const float* off) {
  using KK = GemmKind<G, K>;
  static_assert(!KK::kSuper || G == 256);
  constexpr int64_t cb = KK::kCellBytes;
  constexpr int kRound = KK::round(kVnni);
  const int64_t ng = w.k / G;
  const uint8_t* c = w.data + p * ng * cb;
  const int8_t* q = a.q + t0 * a.k;
  const __m256i nib = _mm256_set1_epi8(0x0F);
  __m256 acc[T][2];
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  __m256i sc[2] = {};  // K-quants: the current sub-block's scales (q4k_scales / q6k_scales)
  for (int64_t g = 0; g < ng; ++g, c += cb, q += G, u += kPre ? G * 16 : 0) {
    if constexpr (!kPre) prefetch_ahead(c, pf, cb);
    __m256i d[T][2];
    for (int t = 0; t < T; ++t) d[t][0] = d[t][1] = _mm256_setzero_si256();
    // Decode and small batches of W6, Q5K and Q6K: the high blocks' bits at constant shifts.
    if constexpr (KK::kQ5 && !kPre) {
      static_assert(kRound == 2 || kRound == 4);
      for (int j = 0; j < G / 32; ++j) {
        q4k_scales<kVnni>(c, j, sc);
        q5k_sub_block<T, kVnni, kRound>(d, c + KK::low_block(4 * j), q + 32 * j, a.k, sc);
      }
    } else if constexpr (KK::kW6 && !kPre) {
      static_assert(KK::round(false) == 1 && (!KK::kSuper || KK::kSubBlock == 2));
      for (int r = 0; r < G / 8; r += 2) {
        if constexpr (KK::kSuper) q6k_scales<kVnni>(c, r / 2, sc);
        w6_pair<KK, T, kVnni>(d, c, r, q + 8 * r, a.k, sc);
      }
    } else {  // W4, Q4K; every kind over unpacked codes (kPre)
      for (int r = 0; r < G / 8; r += kRound) {
        __m256i s[T][2];
        for (int t = 0; t < T; ++t) s[t][0] = s[t][1] = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int b = r; b < r + kRound; ++b) {
          __m256i lo0, lo1, hi0, hi1;
          if constexpr (kPre) {
            lo0 = load256(u + b * 128), lo1 = load256(u + b * 128 + 32);
            hi0 = load256(u + b * 128 + 64), hi1 = load256(u + b * 128 + 96);
          } else {
            const uint8_t* cc = c + KK::low_block(b);
            const __m256i v0 = load256(cc), v1 = load256(cc + 32);
            lo0 = _mm256_and_si256(v0, nib), lo1 = _mm256_and_si256(v1, nib);
            hi0 = _mm256_and_si256(_mm256_srli_epi16(v0, 4), nib);
            hi1 = _mm256_and_si256(_mm256_srli_epi16(v1, 4), nib);
          }
          if constexpr (KK::kMx && !kPre) {
            const __m256i lut = mxfp4_lut();
            lo0 = _mm256_shuffle_epi8(lut, lo0), lo1 = _mm256_shuffle_epi8(lut, lo1);
            hi0 = _mm256_shuffle_epi8(lut, hi0), hi1 = _mm256_shuffle_epi8(lut, hi1);
          }
          gemm_step<T, kVnni>(s, lo0, lo1, q + 8 * b, a.k);
          gemm_step<T, kVnni>(s, hi0, hi1, q + 8 * b + 4, a.k);
        }
        if constexpr (KK::kSuper) {
          if (r % KK::kSubBlock == 0) {
            if constexpr (KK::kQ6)
              q6k_scales<kVnni>(c, r / 2, sc);
            else
              q4k_scales<kVnni>(c, r / 4, sc);
          }
        }
        add_round<KK, T, kVnni>(d, s, sc);
      }
    }
    if constexpr (KK::kQ4Fields)
      q4k_epilogue<T>(acc, d, c, a.scales + t0 * ng + g, a.sums32 + t0 * (a.k / 32) + g * 8, ng,
                      a.k / 32);
    else if constexpr (KK::kQ6)
      q6k_epilogue<T>(acc, d, c, a.scales + t0 * ng + g, a.sums16 + t0 * (a.k / 16) + g * 16, ng,
                      a.k / 16);
    else
      w4_group_epilogue<G, T, KK::kAsym, KK::kW6, kPre, KK::kMx>(
          acc, d, c, a.scales + t0 * ng + g, a.sums + t0 * ng + g, ng,
          kPre ? off + t0 * ng + g : nullptr);
  }
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < 2; ++h) store_rows(y + (t0 + t) * w.n, p * 16 + h * 8, w.n, acc[t][h]);
}

// ---- W4A8 / W6A8 prefill over codes unpacked once per cache block ----------------------
// The tile spends 6 of its ~44 vector ALU ops per 64-byte block splitting nibbles, and on
// plain AVX2 the ALU ports are what bound it (../../bench/results/2026-12-02-tile-ports):
// prefill unpacks each cache block of panels once into u8 code planes (lo0 lo1 hi0 hi1, 32
// bytes each, per 64-byte block: K * 16 bytes per panel) that every token tile then reads
// with plain loads. The block is sized so the planes take PackedTiling::block_bytes (half
// the L2); the scales stay in the cells. Per-thread scratch, kept between calls.
// Plain AVX2 only: pp512 of the 1.54B model (Zen 5 VM, EDGE_MAX_ISA=avx2, interleaved)
// W4A8 g128 x1.05, Q4_0 x1.04, a Q6_K file (all W6, bits 4-5 merged in the planes too)
// x1.32, Q4_K_M x1.00-1.07 over W4 alone; with AVX-VNNI's vpdpbusd the ALU ports are not the bound
// and the planes' doubled L2 footprint measured 0.97x, so that tile keeps its in-register unpack.
constexpr int64_t kPreUnpackFromTokens = 16;  // fewer tokens: too few tiles to repay it

class UnpackScratch {
 public:
  ~UnpackScratch() { std::free(p_); }
  uint8_t* get(size_t bytes) {
    if (bytes > n_) {
      std::free(p_);
      n_ = (bytes + 63) / 64 * 64;
      p_ = static_cast<uint8_t*>(std::aligned_alloc(64, n_));
      CHECK_MSG(p_ != nullptr, "packed gemm: no memory for the unpacked code block");
    }
    return p_;
  }

 private:
  uint8_t* p_ = nullptr;
  size_t n_ = 0;
};

// Panel cells (ng of KK::kCellBytes) -> planes [ng * G / 8][4][32] of u8 codes; W6 / Q6K
// codes (0..63) and Q5K codes (0..31) get their high bits by merge_high.
template <class KK, int G>
inline void unpack_panel(const uint8_t* c, int64_t ng, uint8_t* out) {
  const __m256i nib = _mm256_set1_epi8(0x0F);
  for (int64_t g = 0; g < ng; ++g, c += KK::kCellBytes)
    for (int b = 0; b < G / 8; ++b, out += 128)
      for (int h = 0; h < 2; ++h) {
        const __m256i v = load256(c + KK::low_block(b) + h * 32);
        __m256i lo = _mm256_and_si256(v, nib), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nib);
        if constexpr (KK::kW6 || KK::kQ5)
          merge_high<KK>(c + KK::high_block(b) + h * 32, b, &lo, &hi);
        if constexpr (KK::kMx)
          lo = _mm256_shuffle_epi8(mxfp4_lut(), lo), hi = _mm256_shuffle_epi8(mxfp4_lut(), hi);
        _mm256_store_si256(reinterpret_cast<__m256i*>(out + h * 32), lo);
        _mm256_store_si256(reinterpret_cast<__m256i*>(out + 64 + h * 32), hi);
      }
}

template <class Gemm, int T>
inline void pre_rest(const PackedMatrixView& w, const QuantizedActivations& a, int64_t pb,
                     int64_t pe, int64_t t0, float* y, const uint8_t* buf, int64_t panel_codes,
                     const float* off) {
  if constexpr (T > 0) {
    if (a.n - t0 == T) {
      for (int64_t p = pb; p < pe; ++p)
        Gemm::template tile<T, true>(w, a, p, t0, y, 0, buf + (p - pb) * panel_codes, off);
      return;
    }
    pre_rest<Gemm, T - 1>(w, a, pb, pe, t0, y, buf, panel_codes, off);
  }
}

template <int G, PackedKind K, bool kVnni>
void w4a8_gemm_pre(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
                   float* y) {
  using Gemm = W4A8Gemm<G, K, kVnni>;
  using KK = GemmKind<G, K>;
  constexpr int kT = Gemm::kTokens;
  thread_local UnpackScratch scratch, off_scratch;
  const int64_t ng = w.k / G;
  // The epilogue's offset factors [a.n, ng] (w4_group_epilogue; the K-quants have their own).
  auto* off = reinterpret_cast<float*>(off_scratch.get(static_cast<size_t>(a.n * ng) * 4));
  if constexpr (!KK::kSuper)
    for (int64_t i = 0; i < a.n * ng; ++i)
      off[i] = (KK::kAsym ? 1.0f
                : KK::kW6 ? -32.0f
                : KK::kMx ? -12.0f
                          : -8.0f) *
               a.scales[i] * static_cast<float>(a.sums[i]);
  const int64_t panel_codes = w.k * 16;
  const int64_t fit = packed_tiling().block_bytes / panel_codes;
  const int64_t block = fit > 1 ? fit : 1;
  uint8_t* buf = scratch.get(static_cast<size_t>(block * panel_codes));
  for (int64_t pb = p0; pb < p1; pb += block) {
    const int64_t pe = pb + block < p1 ? pb + block : p1;
    for (int64_t p = pb; p < pe; ++p)
      unpack_panel<KK, G>(w.data + p * ng * KK::kCellBytes, ng, buf + (p - pb) * panel_codes);
    int64_t t0 = 0;
    for (; t0 + kT <= a.n; t0 += kT)
      for (int64_t p = pb; p < pe; ++p)
        Gemm::template tile<kT, true>(w, a, p, t0, y, 0, buf + (p - pb) * panel_codes, off);
    pre_rest<Gemm, kT - 1>(w, a, pb, pe, t0, y, buf, panel_codes, off);
  }
}

template <int G, PackedKind K, bool kVnni>
void w4a8_gemm(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
               float* y) {
  if constexpr (!kVnni) {
    if (a.n >= kPreUnpackFromTokens) return w4a8_gemm_pre<G, K, kVnni>(w, a, p0, p1, y);
  }
  packed::over_panel_tiles<W4A8Gemm<G, K, kVnni>>(w, a, a.n, p0, p1, y);
}

using A8Fn = void (*)(const PackedMatrixView&, const QuantizedActivations&, int64_t, int64_t,
                      float*);

// W4 (sym, asym) and W6 over the groups the layout allows (32, 64 and 128).
template <PackedKind K, bool kVnni>
A8Fn w4a8_gemm_for_group(int32_t group) {
  switch (group) {
    case 32:
      return w4a8_gemm<32, K, kVnni>;
    case 64:
      return w4a8_gemm<64, K, kVnni>;
    default:
      return w4a8_gemm<128, K, kVnni>;
  }
}

template <bool kVnni>
A8Fn w4a8_gemm_for(const PackedMatrixView& w) {
  return w.fmt.kind == PackedKind::kW4Asym
             ? w4a8_gemm_for_group<PackedKind::kW4Asym, kVnni>(w.fmt.group)
             : w4a8_gemm_for_group<PackedKind::kW4Sym, kVnni>(w.fmt.group);
}

template <bool kVnni>
A8Fn w6a8_gemm_for(const PackedMatrixView& w) {
  return w4a8_gemm_for_group<PackedKind::kW6, kVnni>(w.fmt.group);
}

// ---- W8A8 ------------------------------------------------------------------------
// The same tile over W8 cells: a 64-byte block is 16 rows x 4 k of s8 codes (two halves).
// Plain AVX2: maddubs(|code|, q * sign(code)): |pair| <= 2 * 127 * 127 = 32258, exact, but
// two such pairs can exceed s16, so each product is widened at once (madd with ones).
// AVX-VNNI: vpdpbusd(u8 = q + 128, s8 code) - 128 * the stored row sum of the group's codes.
template <int T, bool kVnni>
inline void w8_step(__m256i (&d)[T][2], __m256i v0, __m256i v1, const int8_t* q, int64_t ld) {
  if constexpr (kVnni) {
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
    for (int t = 0; t < T; ++t) {
      const __m256i qb = _mm256_xor_si256(bcast32(q + t * ld), flip);
      d[t][0] = dot4<true>(d[t][0], qb, v0);
      d[t][1] = dot4<true>(d[t][1], qb, v1);
    }
  } else {
    const __m256i a0 = _mm256_abs_epi8(v0), a1 = _mm256_abs_epi8(v1);
    for (int t = 0; t < T; ++t) {
      const __m256i qb = bcast32(q + t * ld);
      d[t][0] = dot4<false>(d[t][0], a0, _mm256_sign_epi8(qb, v0));
      d[t][1] = dot4<false>(d[t][1], a1, _mm256_sign_epi8(qb, v1));
      asm("" : "+x"(d[t][0]), "+x"(d[t][1]));  // see gemm_step
    }
  }
}

template <int G, bool kVnni>
struct W8A8Gemm {
  static constexpr int kTokens = kGemmTokens;
  template <int T>
  static void tile(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p, int64_t t0,
                   float* y, int64_t pf);
};

template <int G, bool kVnni>
template <int T>
void W8A8Gemm<G, kVnni>::tile(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p,
                              int64_t t0, float* y, int64_t pf) {
  constexpr int64_t cb = G * 16 + 64;
  const int64_t ng = w.k / G;
  const uint8_t* c = w.data + p * ng * cb;
  const int8_t* q = a.q + t0 * a.k;
  __m256 acc[T][2];
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (int64_t g = 0; g < ng; ++g, c += cb, q += G) {
    prefetch_ahead(c, pf, cb);
    __m256i d[T][2];
    for (int t = 0; t < T; ++t) d[t][0] = d[t][1] = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int b = 0; b < G / 4; ++b)
      w8_step<T, kVnni>(d, load256(c + b * 64), load256(c + b * 64 + 32), q + 4 * b, a.k);
    const float* sa = a.scales + t0 * ng + g;
    for (int h = 0; h < 2; ++h) {
      const __m256 sw = load_half8(c + G * 16 + h * 16);
      __m256i sum128 = _mm256_setzero_si256();  // 128 * row code sums [8 rows] (VNNI)
      if constexpr (kVnni)
        sum128 = _mm256_slli_epi32(_mm256_cvtepi16_epi32(_mm_loadu_si128(
                                       reinterpret_cast<const __m128i*>(c + G * 16 + 32 + h * 16))),
                                   7);
      for (int t = 0; t < T; ++t) {
        const __m256i dt = kVnni ? _mm256_sub_epi32(d[t][h], sum128) : d[t][h];
        acc[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dt),
                                    _mm256_mul_ps(sw, _mm256_set1_ps(sa[t * ng])), acc[t][h]);
      }
    }
  }
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < 2; ++h) store_rows(y + (t0 + t) * w.n, p * 16 + h * 8, w.n, acc[t][h]);
}

template <int G, bool kVnni>
void w8a8_gemm(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
               float* y) {
  packed::over_panel_tiles<W8A8Gemm<G, kVnni>>(w, a, a.n, p0, p1, y);
}

template <bool kVnni>
A8Fn w8a8_gemm_for(const PackedMatrixView& w) {
  switch (w.fmt.group) {
    case 32:
      return w8a8_gemm<32, kVnni>;
    case 64:
      return w8a8_gemm<64, kVnni>;
    default:  // 128: the layout allows groups of 32, 64 and 128 only
      return w8a8_gemm<128, kVnni>;
  }
}

// ---- entries: one register-blocked tile for prefill (4 tokens) and decode (1) ---------
// The layout allows groups of 32, 64 and 128 only (quant/packed.h), all instantiated.
template <bool kVnni>
void w8_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
           float* y) {
  w8a8_gemm_for<kVnni>(w)(w, a, p0, p1, y);
}

template <bool kVnni>
void w4_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
           float* y) {
  w4a8_gemm_for<kVnni>(w)(w, a, p0, p1, y);
}

template <bool kVnni>
void w6_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
           float* y) {
  w6a8_gemm_for<kVnni>(w)(w, a, p0, p1, y);
}

// Q4K cells are always G = 256 (quant/packed.h); activations per 256 with sums32.
template <bool kVnni>
void q4k_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
            float* y) {
  CHECK(w.fmt.group == 256 && a.group == 256 && a.sums32 != nullptr);
  w4a8_gemm<256, PackedKind::kQ4K, kVnni>(w, a, p0, p1, y);
}

// Q6K cells are always G = 256 (quant/packed.h); activations per 256 with sums16.
template <bool kVnni>
void q6k_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
            float* y) {
  CHECK(w.fmt.group == 256 && a.group == 256 && a.sums16 != nullptr);
  w4a8_gemm<256, PackedKind::kQ6K, kVnni>(w, a, p0, p1, y);
}

// MXFP4 cells are always G = 32 (quant/packed.h); activations per 32 with their sums.
template <bool kVnni>
void mxfp4_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
              float* y) {
  CHECK(w.fmt.group == 32 && a.group == 32);
  w4a8_gemm<32, PackedKind::kMxfp4, kVnni>(w, a, p0, p1, y);
}

// Q5K cells are always G = 256 (quant/packed.h); activations per 256 with sums32.
template <bool kVnni>
void q5k_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
            float* y) {
  CHECK(w.fmt.group == 256 && a.group == 256 && a.sums32 != nullptr);
  w4a8_gemm<256, PackedKind::kQ5K, kVnni>(w, a, p0, p1, y);
}

}  // namespace
}  // namespace edge
