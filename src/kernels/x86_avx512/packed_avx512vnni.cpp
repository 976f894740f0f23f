// AVX-512 packed kernels (packed_api.h) over the layout of quant/packed.h. A 64-byte code
// block is one zmm: 16 int32 lanes = the 16 rows of a panel, each lane 4 consecutive k.
//   W4A8  vpdpbusd(u8 codes, s8 activations): lane r += sum of 4 code*q. The low nibbles
//         are k0..k0+3, the high nibbles k0+4..k0+7. Per group, sym subtracts 8*sum(q)
//         and asym adds min*sum(q) (sums from QuantizedActivations).
//   W8A8  vpdpbusd(u8 = q + 128, s8 codes) - 128 * stored row code sum.
//   W4A16 codes -> f32 with vpermps (16-entry table indexed by the nibble; vpermps reads
//         only the low 4 bits of an index, so a shift is all the unpacking needed), FMA.
//   W8A16 codes sign-extended by shifts, converted, FMA; scale applied per group.
//   W6A8  the W4A8 GEMM block (also for one token) with the top 2 bits of each code or-ed
//         in from the high plane (one zmm per 16 k), offset 32; W6A16 is the reference's
//         (or AVX2's, borrowed by the dispatch).
//   MXFP4 A8: the W4A8 GEMM block (also for one token) with each nibble plane looked up by
//         vpshufb (a 16-byte table per 128-bit lane) as the E2M1 value doubled + 12 (u8
//         0..24), offset 12, the E8M0 bytes' 2^(e - 128) as row scales; A16: the W4A16 tile
//         with the doubled values as its vpermps table.
// Prefill keeps each loaded code block in registers across a tile of up to 8 tokens; the
// loop nest around the tiles (cache blocks of panels, token tiles) is kernels/packed_blocking.h.
//
// Written once elsewhere: the loop nest and the activation quantiser
// (kernels/quantize_act.h, over this file's ActQuantPrims). The tiles stay AVX-512's own:
// one zmm per code block, 32 registers (panel pairs x up to 6 tokens of int32 dots beside
// their f32 sums), vpdpbusd, the vpermps nibble table and masked row stores have no
// counterpart of the same shape in the AVX2 tiles (two ymm halves, maddubs + madd, 16
// registers) or NEON's (widening multiplies over codes transposed to lanes of k).
//
// This file is compiled with AVX-512 flags: it must not instantiate inline functions or
// templates shared with portable code (the linker could keep this copy for everyone), so
// it uses only intrinsics and its own helpers in an anonymous namespace.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/check.h"
#include "kernels/packed_api.h"
#include "kernels/packed_blocking.h"
#include "kernels/quantize_act.h"
#include "kernels/x86_avx512/packed_avx512_common.h"

namespace edge {
namespace {

constexpr int kMaxTile = 8;  // tokens sharing one loaded code block
// The W4 / W6 block's tokens: its f32 sums stay in registers beside the int32 dots, 2 x P x T
// of the 32 zmm (see w4a8_block).
constexpr int kW4Tile = 6;

using packed::cell_bytes;

constexpr PackedKind a8_kind(bool asym, bool w6, bool mx = false) {
  return mx     ? PackedKind::kMxfp4
         : w6   ? PackedKind::kW6
         : asym ? PackedKind::kW4Asym
                : PackedKind::kW4Sym;
}

// 16 E8M0 bytes (MXFP4 rows) as the floats 2^(e - 128): (e - 1) << 23 is that float's bit
// pattern for e >= 2; e = 0 and 1 are the subnormals 2^-128 and 2^-127, bit patterns
// 0x200000 << e (quant/mxfp4.h).
inline __m512 load_e8m0_16(const uint8_t* p) {
  const __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
  const __m512i sub = _mm512_sllv_epi32(_mm512_set1_epi32(0x200000), e);
  const __mmask16 is_normal = _mm512_cmpgt_epi32_mask(e, _mm512_set1_epi32(1));
  return _mm512_castsi512_ps(_mm512_mask_blend_epi32(is_normal, sub, normal));
}

// MXFP4: E2M1 code (a nibble) -> its doubled value + 12 (u8 0..24), the table in each lane.
inline __m512i mxfp4_lut() {
  return _mm512_broadcast_i32x4(
      _mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
}

// ---- W4A8 GEMV (one token) ----------------------------------------------------------
// One panel at a time, its cells in storage order: one read stream per thread. (Two panels
// per pass shared each activation broadcast but read two streams a panel apart; measured
// on a Zen 5 VM, one thread streamed 28 GB/s that way and 38 GB/s this way, N=32000
// K=2048 g128, bench/packed_bench.cpp.) The high nibbles are not shifted down:
// (byte & 0xF0) = 16 * code, so the high-nibble dot is 16x the true one (exact in int32:
// |sum| <= 64 * 15 * 16 * 127) and is shifted back once per group. G is a template
// parameter so the block loop unrolls fully.
template <int G, bool kAsym>
void w4a8_gemv_panel(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p,
                     float* y) {
  constexpr int64_t cb = kAsym ? G * 8 + 64 : G * 8 + 32;
  const int64_t ng = w.k / G;
  const uint8_t* panel = w.data + p * ng * cb;
  const __m512i lo_mask = _mm512_set1_epi8(0x0F),
                hi_mask = _mm512_set1_epi8(static_cast<char>(0xF0));
  __m512 acc = _mm512_setzero_ps();
  for (int64_t g = 0; g < ng; ++g) {
    const int8_t* q = a.q + g * G;
    const uint8_t* c = panel + g * cb;
    __m512i dlo = _mm512_setzero_si512(), dhi = _mm512_setzero_si512();
    for (int b = 0; b < G / 8; ++b) {
      const __m512i v = _mm512_loadu_si512(c + b * 64);
      dlo = _mm512_dpbusd_epi32(dlo, _mm512_and_si512(v, lo_mask), bcast32(q + 8 * b));
      dhi = _mm512_dpbusd_epi32(dhi, _mm512_and_si512(v, hi_mask), bcast32(q + 8 * b + 4));
    }
    const float sa = a.scales[g];
    const int32_t qs = a.sums[g];
    __m512i d = _mm512_add_epi32(dlo, _mm512_srai_epi32(dhi, 4));
    if constexpr (kAsym) {
      acc = _mm512_fmadd_ps(load_half16(c + G * 8 + 32),
                            _mm512_set1_ps(sa * static_cast<float>(qs)), acc);
    } else {
      d = _mm512_sub_epi32(d, _mm512_set1_epi32(8 * qs));
    }
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d),
                          _mm512_mul_ps(load_half16(c + G * 8), _mm512_set1_ps(sa)), acc);
  }
  _mm512_mask_storeu_ps(y + p * 16, row_mask(w, p), acc);
}

template <int G, bool kAsym>
void w4a8_gemv(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
               float* y) {
  for (int64_t p = p0; p < p1; ++p) w4a8_gemv_panel<G, kAsym>(w, a, p, y);
}

// The GEMV for w's group, or null (then the generic tile path runs).
using A8Fn = void (*)(const PackedMatrixView&, const QuantizedActivations&, int64_t, int64_t,
                      float*);
A8Fn w4a8_gemv_for(const PackedMatrixView& w) {
  const bool asym = w.fmt.kind == PackedKind::kW4Asym;
  switch (w.fmt.group) {
    case 32:
      return asym ? w4a8_gemv<32, true> : w4a8_gemv<32, false>;
    case 64:
      return asym ? w4a8_gemv<64, true> : w4a8_gemv<64, false>;
    case 128:
      return asym ? w4a8_gemv<128, true> : w4a8_gemv<128, false>;
    default:
      return nullptr;
  }
}

// ---- W4A8 GEMM (prefill) --------------------------------------------------------------
// P panels x T tokens per pass: each nibble block is unpacked once for T tokens and each
// activation broadcast feeds P panels (P = 2 halves the broadcasts per vpdpbusd). The
// int32 dots live in registers for one group; the f32 accumulators are touched once per
// group, in registers too.
template <int G, int P, int T, bool kAsym, bool kW6, bool kMx = false>
void w4a8_block(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p, int64_t t0,
                float* y) {
  constexpr int64_t cb = cell_bytes(a8_kind(kAsym, kW6, kMx), G);
  constexpr int kScales = kW6 ? G * 12 : G * 8;
  constexpr int kOffset = kMx ? 12 : kW6 ? 32 : 8;
  const int64_t ng = w.k / G;
  const __m512i nib = _mm512_set1_epi8(0x0F);
  // The f32 sums in registers: P x T = 12 of them beside the 12 dots. At T = 8 (32 zmm for
  // both) they had to live in memory, and their load and store per group cost up to a
  // tenth of the tile (one thread, in cache, Zen 4, prefill of 64 tokens, T = 8 with the
  // sums in memory -> T = 6 in registers: g32 317 -> 358 GFLOP/s, g64 368 -> 400, g128
  // 410 -> 426; W6 g32 249 -> 297).
  __m512 acc[P][T];
  for (int i = 0; i < P; ++i)
    for (int t = 0; t < T; ++t) acc[i][t] = _mm512_setzero_ps();
  for (int64_t g = 0; g < ng; ++g) {
    const int8_t* q = a.q + t0 * a.k + g * G;
    __m512i dot[P][T];
    for (int i = 0; i < P; ++i)
      for (int t = 0; t < T; ++t) dot[i][t] = _mm512_setzero_si512();
        // Low nibbles (k 8b..8b+3) for every token, then high nibbles (8b+4..8b+7): one unpacked
        // block per panel is live at a time. The block loop is unrolled whole: with a rolled
        // loop GCC copied every dot register once per iteration (objdump: 19 moves and 3 stack
        // stores per 32 vpdpbusd). Measured on a Zen 5: pp512 x1.05 on g32 (Q4_0 repacked),
        // level on g128.
#pragma GCC unroll 16
    for (int b = 0; b < G / 8; ++b) {
      __m512i v[P], c[P];
      for (int i = 0; i < P; ++i) {
        v[i] = _mm512_loadu_si512(w.data + ((p + i) * ng + g) * cb + b * 64);
        c[i] = _mm512_and_si512(v[i], nib);
        if constexpr (kW6) {  // high block b/2: bit pairs 0-3 for even b, 4-7 for odd
          __m512i h = _mm512_loadu_si512(w.data + ((p + i) * ng + g) * cb + G * 8 + (b / 2) * 64);
          if (b % 2 == 0) h = _mm512_slli_epi16(h, 4);
          c[i] = _mm512_or_si512(c[i], _mm512_and_si512(h, _mm512_set1_epi8(0x30)));
        }
        if constexpr (kMx) c[i] = _mm512_shuffle_epi8(mxfp4_lut(), c[i]);
      }
      for (int t = 0; t < T; ++t) {
        const __m512i qa = bcast32(q + t * a.k + 8 * b);
        for (int i = 0; i < P; ++i) dot[i][t] = _mm512_dpbusd_epi32(dot[i][t], c[i], qa);
      }
      for (int i = 0; i < P; ++i) {
        c[i] = _mm512_and_si512(_mm512_srli_epi16(v[i], 4), nib);
        if constexpr (kW6) {
          __m512i h = _mm512_loadu_si512(w.data + ((p + i) * ng + g) * cb + G * 8 + (b / 2) * 64);
          if (b % 2 == 0) h = _mm512_slli_epi16(h, 4);
          c[i] = _mm512_or_si512(c[i],
                                 _mm512_and_si512(_mm512_srli_epi16(h, 2), _mm512_set1_epi8(0x30)));
        }
        if constexpr (kMx) c[i] = _mm512_shuffle_epi8(mxfp4_lut(), c[i]);
      }
      for (int t = 0; t < T; ++t) {
        const __m512i qb = bcast32(q + t * a.k + 8 * b + 4);
        for (int i = 0; i < P; ++i) dot[i][t] = _mm512_dpbusd_epi32(dot[i][t], c[i], qb);
      }
    }
    for (int i = 0; i < P; ++i) {
      const uint8_t* c = w.data + ((p + i) * ng + g) * cb;
      const __m512 s = kMx ? load_e8m0_16(c + kScales) : load_half16(c + kScales);
      for (int t = 0; t < T; ++t) {
        const int64_t ai = (t0 + t) * ng + g;
        const float sa = a.scales[ai];
        __m512i d = dot[i][t];
        __m512 r = acc[i][t];
        if constexpr (kAsym) {
          r = _mm512_fmadd_ps(load_half16(c + G * 8 + 32),
                              _mm512_set1_ps(sa * static_cast<float>(a.sums[ai])), r);
        } else {
          d = _mm512_sub_epi32(d, _mm512_set1_epi32(kOffset * a.sums[ai]));
        }
        acc[i][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(s, _mm512_set1_ps(sa)), r);
      }
    }
  }
  for (int i = 0; i < P; ++i)
    for (int t = 0; t < T; ++t)
      _mm512_mask_storeu_ps(y + (t0 + t) * w.n + (p + i) * 16, row_mask(w, p + i), acc[i][t]);
}

// The register tile for packed_blocking.h: panel pairs [pb, pe) x T tokens.
template <int G, bool kAsym, bool kW6, bool kMx = false>
struct W4A8Blocks {
  static constexpr int kTokens = kW4Tile;
  const PackedMatrixView& w;
  const QuantizedActivations& a;
  float* y;
  template <int T>
  void run(int64_t pb, int64_t pe, int64_t t0) const {
    // One token (W6's GEMV): a panel at a time, one read stream (see w4a8_gemv_panel).
    packed::over_panel_pairs<T>(pb, pe, [&]<int kPanels>(int64_t p) {
      w4a8_block<G, kPanels, T, kAsym, kW6, kMx>(w, a, p, t0, y);
    });
  }
};

template <int G, bool kAsym, bool kW6 = false, bool kMx = false>
void w4a8_gemm(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
               float* y) {
  packed::over_panels(W4A8Blocks<G, kAsym, kW6, kMx>{w, a, y}, w, a.n, p0, p1);
}

// MXFP4 (G = 32) with int8 activations: the GEMM block for any number of tokens.
void matmul_mxfp4_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0,
                     int64_t p1, float* y) {
  CHECK(w.fmt.group == 32 && a.group == 32);
  w4a8_gemm<32, false, false, true>(w, a, p0, p1, y);
}

// W6 with int8 activations: the GEMM block for any number of tokens (a GEMV at n = 1).
void matmul_w6_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
                  float* y) {
  switch (w.fmt.group) {
    case 32:
      return w4a8_gemm<32, false, true>(w, a, p0, p1, y);
    case 64:
      return w4a8_gemm<64, false, true>(w, a, p0, p1, y);
    default:
      return w4a8_gemm<128, false, true>(w, a, p0, p1, y);
  }
}

A8Fn w4a8_gemm_for(const PackedMatrixView& w) {
  const bool asym = w.fmt.kind == PackedKind::kW4Asym;
  switch (w.fmt.group) {
    case 32:
      return asym ? w4a8_gemm<32, true> : w4a8_gemm<32, false>;
    case 64:
      return asym ? w4a8_gemm<64, true> : w4a8_gemm<64, false>;
    case 128:
      return asym ? w4a8_gemm<128, true> : w4a8_gemm<128, false>;
    default:
      return nullptr;
  }
}

// ---- W8A8 -------------------------------------------------------------------------
// (Tiles without prefetch: no AVX-512 machine was at hand to measure one.)
struct W8A8Tile {
  static constexpr int kTokens = kMaxTile;
  template <int T>
  static void tile(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p, int64_t t0,
                   float* y, int64_t /*pf*/);
};

template <int T>
void W8A8Tile::tile(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p, int64_t t0,
                    float* y, int64_t) {
  constexpr int A = T == 1 ? 4 : (T == 2 ? 2 : 1);
  const int32_t G = w.fmt.group;
  const int64_t ng = w.k / G, cb = cell_bytes(w.fmt.kind, G);
  const uint8_t* panel = w.data + p * ng * cb;
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));  // s8 q -> u8 q + 128
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t g = 0; g < ng; ++g) {
    const uint8_t* c = panel + g * cb;
    const int8_t* q = a.q + t0 * a.k + g * G;
    __m512i dot[T][A];
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < A; ++i) dot[t][i] = _mm512_setzero_si512();
    for (int b = 0; b < G / 4; b += 4) {  // four 64-byte blocks (16 k) per step
      __m512i v[4];
      for (int j = 0; j < 4; ++j) v[j] = _mm512_loadu_si512(c + (b + j) * 64);
      for (int t = 0; t < T; ++t) {
        const int8_t* qt = q + t * a.k + b * 4;
        for (int j = 0; j < 4; ++j)
          dot[t][j % A] =
              _mm512_dpbusd_epi32(dot[t][j % A], _mm512_xor_si512(bcast32(qt + 4 * j), flip), v[j]);
      }
    }
    const __m512 s = load_half16(c + G * 16);
    const __m512i sum128 = _mm512_slli_epi32(
        _mm512_cvtepi16_epi32(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + G * 16 + 32))),
        7);
    for (int t = 0; t < T; ++t) {
      __m512i d = dot[t][0];
      for (int i = 1; i < A; ++i) d = _mm512_add_epi32(d, dot[t][i]);
      d = _mm512_sub_epi32(d, sum128);
      const float sa = a.scales[(t0 + t) * ng + g];
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(s, _mm512_set1_ps(sa)), acc[t]);
    }
  }
  const __mmask16 m = row_mask(w, p);
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + (t0 + t) * w.n + p * 16, m, acc[t]);
}

// ---- W4A16 ------------------------------------------------------------------------
// Sym: the table holds code - 8 and the row scale is applied once per group (acc_g).
// Asym: w = code * scale + min is formed in registers and accumulated directly.
// MXFP4 (kMx): as sym, the table holding the E2M1 values doubled, the scale 2^(e - 128).
template <bool kAsym, bool kMx = false>
struct W4A16Tile {
  static constexpr int kTokens = kMaxTile;
  template <int T>
  static void tile(const PackedMatrixView& w, const float* x, int64_t p, int64_t t0, float* y,
                   int64_t /*pf*/);
};

template <bool kAsym, bool kMx>
template <int T>
void W4A16Tile<kAsym, kMx>::tile(const PackedMatrixView& w, const float* x, int64_t p, int64_t t0,
                                 float* y, int64_t) {
  constexpr int A = T == 1 ? 4 : (T == 2 ? 2 : 1);
  const int32_t G = w.fmt.group;
  const int64_t ng = w.k / G, cb = cell_bytes(w.fmt.kind, G);
  const uint8_t* panel = w.data + p * ng * cb;
  const float off = kAsym ? 0.0f : -8.0f;
  const __m512 table = kMx ? _mm512_setr_ps(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12)
                           : _mm512_setr_ps(0 + off, 1 + off, 2 + off, 3 + off, 4 + off, 5 + off,
                                            6 + off, 7 + off, 8 + off, 9 + off, 10 + off, 11 + off,
                                            12 + off, 13 + off, 14 + off, 15 + off);
  __m512 acc[T][A];
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < A; ++i) acc[t][i] = _mm512_setzero_ps();
  for (int64_t g = 0; g < ng; ++g) {
    const uint8_t* c = panel + g * cb;
    const float* xg = x + t0 * w.k + g * G;
    const __m512 s = kMx ? load_e8m0_16(c + G * 8) : load_half16(c + G * 8);
    __m512 mn = _mm512_setzero_ps();
    if constexpr (kAsym) mn = load_half16(c + G * 8 + 32);
    __m512 ag[T][A];
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < A; ++i) ag[t][i] = _mm512_setzero_ps();
    for (int b = 0; b < G / 8; ++b) {
      const __m512i v = _mm512_loadu_si512(c + b * 64);
      for (int i = 0; i < 8; ++i) {  // k = 8b + i: byte i%4 of the lane, nibble i/4
        const int sh = (i % 4) * 8 + (i / 4) * 4;
        __m512 wv = _mm512_permutexvar_ps(sh == 0 ? v : _mm512_srli_epi32(v, sh), table);
        if constexpr (kAsym) {
          wv = _mm512_fmadd_ps(wv, s, mn);
          for (int t = 0; t < T; ++t)
            acc[t][i % A] =
                _mm512_fmadd_ps(wv, _mm512_set1_ps(xg[t * w.k + b * 8 + i]), acc[t][i % A]);
        } else {
          for (int t = 0; t < T; ++t)
            ag[t][i % A] =
                _mm512_fmadd_ps(wv, _mm512_set1_ps(xg[t * w.k + b * 8 + i]), ag[t][i % A]);
        }
      }
    }
    if constexpr (!kAsym) {
      for (int t = 0; t < T; ++t) {
        __m512 sg = ag[t][0];
        for (int i = 1; i < A; ++i) sg = _mm512_add_ps(sg, ag[t][i]);
        acc[t][0] = _mm512_fmadd_ps(sg, s, acc[t][0]);
      }
    }
  }
  const __mmask16 m = row_mask(w, p);
  for (int t = 0; t < T; ++t) {
    __m512 r = acc[t][0];
    for (int i = 1; i < A; ++i) r = _mm512_add_ps(r, acc[t][i]);
    _mm512_mask_storeu_ps(y + (t0 + t) * w.n + p * 16, m, r);
  }
}

// ---- W8A16 ------------------------------------------------------------------------
struct W8A16Tile {
  static constexpr int kTokens = kMaxTile;
  template <int T>
  static void tile(const PackedMatrixView& w, const float* x, int64_t p, int64_t t0, float* y,
                   int64_t /*pf*/);
};

template <int T>
void W8A16Tile::tile(const PackedMatrixView& w, const float* x, int64_t p, int64_t t0, float* y,
                     int64_t) {
  constexpr int A = T == 1 ? 4 : (T == 2 ? 2 : 1);
  const int32_t G = w.fmt.group;
  const int64_t ng = w.k / G, cb = cell_bytes(w.fmt.kind, G);
  const uint8_t* panel = w.data + p * ng * cb;
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t g = 0; g < ng; ++g) {
    const uint8_t* c = panel + g * cb;
    const float* xg = x + t0 * w.k + g * G;
    __m512 ag[T][A];
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < A; ++i) ag[t][i] = _mm512_setzero_ps();
    for (int b = 0; b < G / 4; ++b) {
      const __m512i v = _mm512_loadu_si512(c + b * 64);
      for (int i = 0; i < 4; ++i) {  // k = 4b + i: byte i of each lane, sign-extended
        __m512i ci = i == 3 ? v : _mm512_slli_epi32(v, 24 - 8 * i);
        const __m512 wv = _mm512_cvtepi32_ps(_mm512_srai_epi32(ci, 24));
        for (int t = 0; t < T; ++t)
          ag[t][i % A] = _mm512_fmadd_ps(wv, _mm512_set1_ps(xg[t * w.k + b * 4 + i]), ag[t][i % A]);
      }
    }
    const __m512 s = load_half16(c + G * 16);
    for (int t = 0; t < T; ++t) {
      __m512 sg = ag[t][0];
      for (int i = 1; i < A; ++i) sg = _mm512_add_ps(sg, ag[t][i]);
      acc[t] = _mm512_fmadd_ps(sg, s, acc[t]);
    }
  }
  const __mmask16 m = row_mask(w, p);
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + (t0 + t) * w.n + p * 16, m, acc[t]);
}

// ---- entries: the loop nest is kernels/packed_blocking.h ---------------------------
void matmul_w4_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
                  float* y) {
  if (A8Fn fn = a.n == 1 ? w4a8_gemv_for(w) : w4a8_gemm_for(w)) return fn(w, a, p0, p1, y);
  reference_packed_kernels().matmul_w4_a8(w, a, p0, p1, y);  // a group the layout lacks
}

void matmul_w8_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
                  float* y) {
  packed::over_panel_tiles<W8A8Tile>(w, a, a.n, p0, p1, y);
}

void matmul_w4_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
                   float* y) {
  if (w.fmt.kind == PackedKind::kW4Asym)
    packed::over_panel_tiles<W4A16Tile<true>>(w, x, n, p0, p1, y);
  else
    packed::over_panel_tiles<W4A16Tile<false>>(w, x, n, p0, p1, y);
}

void matmul_w8_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
                   float* y) {
  packed::over_panel_tiles<W8A16Tile>(w, x, n, p0, p1, y);
}

void matmul_mxfp4_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
                      float* y) {
  packed::over_panel_tiles<W4A16Tile<false, true>>(w, x, n, p0, p1, y);
}

// The activation quantiser's primitives (kernels/quantize_act.h): 16 floats a chunk, the
// codes rounded by vcvtps2dq (the default rounding mode: half to even), clamped as int32
// and narrowed by vpmovdb.
struct ActQuantPrims {
  static constexpr int kW = 16;
  using Max = __m512;
  using Codes = __m512i;
  using Sum = __m512i;
  static Max max_zero() { return _mm512_setzero_ps(); }
  static Sum sum_zero() { return _mm512_setzero_si512(); }
  static Max abs_max(Max m, const float* x) {
    return _mm512_max_ps(m, _mm512_andnot_ps(_mm512_set1_ps(-0.0f), _mm512_loadu_ps(x)));
  }
  static float hmax(Max m) { return _mm512_reduce_max_ps(m); }
  static Codes quantize(const float* x, float inv) {
    const __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x), _mm512_set1_ps(inv)));
    return _mm512_min_epi32(_mm512_max_epi32(q, _mm512_set1_epi32(-127)), _mm512_set1_epi32(127));
  }
  static Sum add(Sum s, Codes q) { return _mm512_add_epi32(s, q); }
  static void store(int8_t* p, Codes q) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(q));
  }
  static int32_t hsum(Sum s) { return _mm512_reduce_add_epi32(s); }
};

}  // namespace

void install_packed_avx512vnni(PackedKernels* t) {
  t->name = "avx512_vnni";
  t->quantize_act = packed::quantize_act<ActQuantPrims>;
  t->matmul_w4_a8 = matmul_w4_a8;
  t->matmul_w8_a8 = matmul_w8_a8;
  t->matmul_w4_a16 = matmul_w4_a16;
  t->matmul_w8_a16 = matmul_w8_a16;
  t->matmul_w6_a8 = matmul_w6_a8;
  t->matmul_mxfp4_a8 = matmul_mxfp4_a8;
  t->matmul_mxfp4_a16 = matmul_mxfp4_a16;
  install_packed_q4k_avx512vnni(
      t);  // its own file: Q4K and Q6K A8; their A16 are AVX2's (borrowed)
}

}  // namespace edge
