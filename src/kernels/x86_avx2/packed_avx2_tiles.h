// AVX2 packed-kernel tiles shared by packed_avx2.cpp (plain AVX2: maddubs + madd) and
// packed_avxvnni.cpp (AVX-VNNI: vpdpbusd). Included only by those two files, each compiled
// with exactly the flags its runtime check guarantees (CMakeLists.txt, kernels/isa.h);
// everything here has internal linkage, so neither file's code can stand in for the other's.
// Layout and arithmetic: see packed_avx2.cpp.
#pragma once

#include <immintrin.h>

#include <climits>
#include <cstdint>
#include <cstring>

#include "kernels/packed_api.h"
#include "kernels/packed_blocking.h"

namespace edge {
namespace {

// Tokens per register tile of the f32-activation (A16) tiles.
constexpr int kMaxTile = 4;

using packed::cell_bytes;

// Prefetches the `bytes` that start `ahead` bytes past p: the cell a tile reads `ahead`
// bytes from now (cells are contiguous along a panel, panels along the matrix).
inline void prefetch_ahead(const uint8_t* p, int64_t ahead, int64_t bytes) {
  if (ahead <= 0) return;
  for (int64_t o = 0; o < bytes; o += 64)
    _mm_prefetch(reinterpret_cast<const char*>(p + ahead + o), _MM_HINT_T0);
}

inline __m256 load_half8(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// 8 E8M0 bytes (MXFP4 rows) as the floats 2^(e - 128): (e - 1) << 23 is that float's bit
// pattern for e >= 2; e = 0 and 1 are the subnormals 2^-128 and 2^-127, bit patterns
// 0x200000 << e (quant/mxfp4.h).
inline __m256 load_e8m0_8(const uint8_t* p) {
  const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
  const __m256i sub = _mm256_sllv_epi32(_mm256_set1_epi32(0x200000), e);
  const __m256i is_normal = _mm256_cmpgt_epi32(e, _mm256_set1_epi32(1));
  return _mm256_castsi256_ps(_mm256_blendv_epi8(sub, normal, is_normal));
}

// MXFP4 E2M1 code (int32 lanes, 0..15) -> its doubled value (-12..12) as f32: the magnitude
// from an 8-entry vpermps table (which reads the low 3 bits of the index), bit 3 to the sign.
inline __m256 mxfp4_values(__m256i code) {
  const __m256 mag = _mm256_permutevar8x32_ps(_mm256_setr_ps(0, 1, 2, 3, 4, 6, 8, 12), code);
  const __m256i sign = _mm256_and_si256(_mm256_slli_epi32(code, 28), _mm256_set1_epi32(INT32_MIN));
  return _mm256_xor_ps(mag, _mm256_castsi256_ps(sign));
}

inline __m256i bcast32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

inline __m256i load256(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// acc += per lane sum of 4 u8 x s8 products.
template <bool kVnni>
inline __m256i dot4(__m256i acc, __m256i u8, __m256i s8) {
  if constexpr (kVnni) {
#ifdef __AVXVNNI__
    return _mm256_dpbusd_avx_epi32(acc, u8, s8);
#else
    static_assert(!kVnni, "the AVX-VNNI tiles are built only in packed_avxvnni.cpp");
#endif
  } else {
    const __m256i pairs = _mm256_maddubs_epi16(u8, s8);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
  }
}

// Stores 8 rows (row0 .. row0 + 7) of token row yt, skipping rows >= n.
inline void store_rows(float* yt, int64_t row0, int64_t n, __m256 v) {
  if (row0 + 8 <= n) {
    _mm256_storeu_ps(yt + row0, v);
    return;
  }
  alignas(32) float tmp[8];
  _mm256_store_ps(tmp, v);
  for (int64_t r = row0; r < n; ++r) yt[r] = tmp[r - row0];
}

// Q4K and Q5K (G = 256): the f32 scale and offset of sub-block j for 8 rows (half h) of cell c,
// w = code * s + m with s = d * sc_j, m = -dmin * m_j (GGML's order up to the FMA).
inline void q4k_sub_scales(const uint8_t* c, int j, int h, __m256* s, __m256* m) {
  const __m256i sc =
      _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(c + 16 * j + 8 * h)));
  // Pair j/2 holds (m_2i, m_2i+1) per row: the low or the high 16 bits of each lane.
  __m256i mp = _mm256_cvtepu8_epi16(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(c + 128 + 32 * (j / 2) + 16 * h)));
  mp = j % 2 ? _mm256_srli_epi32(mp, 16) : _mm256_and_si256(mp, _mm256_set1_epi32(0xFFFF));
  *s = _mm256_mul_ps(load_half8(c + 256 + 16 * h), _mm256_cvtepi32_ps(sc));
  *m = _mm256_mul_ps(load_half8(c + 288 + 16 * h), _mm256_cvtepi32_ps(mp));
  *m = _mm256_sub_ps(_mm256_setzero_ps(), *m);
}

// Q6K (G = 256): the f32 scale of sub-block j (16 k) for 8 rows (half h) of cell c and its
// offset, w = code * s + m with s = d * sc_j, m = -32 * s.
inline void q6k_sub_scales(const uint8_t* c, int j, int h, __m256* s, __m256* m) {
  // Pair j/2 holds (sc_2i, sc_2i+1) per row as s8: the low or the high 16 bits of each lane.
  __m256i sp = _mm256_cvtepi8_epi16(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(c + 32 * (j / 2) + 16 * h)));
  sp = j % 2 ? _mm256_srai_epi32(sp, 16) : _mm256_srai_epi32(_mm256_slli_epi32(sp, 16), 16);
  *s = _mm256_mul_ps(load_half8(c + 256 + 16 * h), _mm256_cvtepi32_ps(sp));
  *m = _mm256_mul_ps(*s, _mm256_set1_ps(-32.0f));
}

// ---- W4A16 (K = kW4Sym: W4 sym or asym), W6A16, Q4K, Q5K, Q6K and MXFP4 -------------
template <PackedKind K>
struct W4A16Tile {
  static constexpr int kTokens = kMaxTile;
  template <int T>
  static void tile(const PackedMatrixView& w, const float* x, int64_t p, int64_t t0, float* y,
                   int64_t pf);
};

template <PackedKind K>
template <int T>
void W4A16Tile<K>::tile(const PackedMatrixView& w, const float* x, int64_t p, int64_t t0, float* y,
                        int64_t pf) {
  constexpr bool kW6 = K == PackedKind::kW6 || K == PackedKind::kQ6K;  // 2 high bits
  constexpr bool kQ4 = K == PackedKind::kQ4K, kQ5 = K == PackedKind::kQ5K;
  constexpr bool kQ6 = K == PackedKind::kQ6K;
  constexpr bool kMx = K == PackedKind::kMxfp4;                 // w = 2^(e - 128) * value(code)
  constexpr int64_t kCode0 = kQ4 || kQ5 ? 320 : kQ6 ? 288 : 0;  // the codes' offset in a cell
  constexpr int A = T == 1 ? 4 : (T == 2 ? 2 : 1);
  const int32_t G = w.fmt.group;
  const bool asym = K == PackedKind::kW4Sym && w.fmt.kind == PackedKind::kW4Asym;
  const int64_t ng = w.k / G, cb = cell_bytes(w.fmt.kind, G);
  const uint8_t* panel = w.data + p * ng * cb;
  const __m256i nib = _mm256_set1_epi32(15);
  for (int h = 0; h < 2; ++h) {
    const int64_t row0 = p * 16 + h * 8;
    if (row0 >= w.n) break;
    __m256 acc[T][A];
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < A; ++i) acc[t][i] = _mm256_setzero_ps();
    for (int64_t g = 0; g < ng; ++g) {
      const uint8_t* c = panel + g * cb;
      if (h == 0) prefetch_ahead(c, pf, cb);  // the second half reads the panel from L2
      const float* xg = x + t0 * w.k + g * G;
      __m256 s = _mm256_setzero_ps(), m = _mm256_setzero_ps();
      if constexpr (kMx) {
        s = load_e8m0_8(c + 256 + h * 8);
      } else if constexpr (!kQ4 && !kQ5 && !kQ6) {
        s = load_half8(c + G * (kW6 ? 12 : 8) + h * 16);
        m = asym ? load_half8(c + G * 8 + 32 + h * 16)
                 : _mm256_mul_ps(s, _mm256_set1_ps(kW6 ? -32.0f : -8.0f));
      }
      for (int b = 0; b < G / 8; ++b) {
        if constexpr (kQ4 || kQ5)
          if (b % 4 == 0) q4k_sub_scales(c, b / 4, h, &s, &m);
        if constexpr (kQ6)
          if (b % 2 == 0) q6k_sub_scales(c, b / 2, h, &s, &m);
        // Q6K: chunks of 192 bytes per 16 k, the high block after two nibble blocks; Q5K:
        // chunks of 320 bytes per 32 k, the high block after four.
        const int64_t lo = kQ6   ? kCode0 + (b / 2) * 192 + (b % 2) * 64
                           : kQ5 ? kCode0 + (b / 4) * 320 + (b % 4) * 64
                                 : kCode0 + b * 64;
        const int64_t hi = kQ6   ? kCode0 + (b / 2) * 192 + 128
                           : kQ5 ? kCode0 + (b / 4) * 320 + 256
                                 : kCode0 + G * 8 + (b / 2) * 64;
        const __m256i v = load256(c + lo + h * 32);
        __m256i vh = _mm256_setzero_si256();
        if constexpr (kW6 || kQ5) vh = load256(c + hi + h * 32);
        for (int i = 0; i < 8; ++i) {  // k = 8b + i: byte i%4 of the lane, nibble i/4
          const int sh = (i % 4) * 8 + (i / 4) * 4;
          __m256i code = _mm256_and_si256(sh == 0 ? v : _mm256_srli_epi32(v, sh), nib);
          if constexpr (kW6) {  // bit pair 2 * (b%2) + i/4 of the same byte -> bits 4-5
            const int hs = (i % 4) * 8 + 2 * (2 * (b % 2) + i / 4);
            const __m256i hb = _mm256_and_si256(_mm256_srli_epi32(vh, hs), _mm256_set1_epi32(3));
            code = _mm256_or_si256(code, _mm256_slli_epi32(hb, 4));
          }
          if constexpr (kQ5) {  // bit 2 * (b%4) + i/4 of the same byte -> bit 4
            const int hs = (i % 4) * 8 + 2 * (b % 4) + i / 4;
            const __m256i hb = _mm256_and_si256(_mm256_srli_epi32(vh, hs), _mm256_set1_epi32(1));
            code = _mm256_or_si256(code, _mm256_slli_epi32(hb, 4));
          }
          const __m256 wv = kMx ? _mm256_mul_ps(mxfp4_values(code), s)
                                : _mm256_fmadd_ps(_mm256_cvtepi32_ps(code), s, m);
          for (int t = 0; t < T; ++t)
            acc[t][i % A] =
                _mm256_fmadd_ps(wv, _mm256_set1_ps(xg[t * w.k + b * 8 + i]), acc[t][i % A]);
        }
      }
    }
    for (int t = 0; t < T; ++t) {
      __m256 r = acc[t][0];
      for (int i = 1; i < A; ++i) r = _mm256_add_ps(r, acc[t][i]);
      store_rows(y + (t0 + t) * w.n, row0, w.n, r);
    }
  }
}

// ---- W8A16 ------------------------------------------------------------------------
struct W8A16Tile {
  static constexpr int kTokens = kMaxTile;
  template <int T>
  static void tile(const PackedMatrixView& w, const float* x, int64_t p, int64_t t0, float* y,
                   int64_t pf);
};

template <int T>
void W8A16Tile::tile(const PackedMatrixView& w, const float* x, int64_t p, int64_t t0, float* y,
                     int64_t pf) {
  constexpr int A = T == 1 ? 4 : (T == 2 ? 2 : 1);
  const int32_t G = w.fmt.group;
  const int64_t ng = w.k / G, cb = cell_bytes(w.fmt.kind, G);
  const uint8_t* panel = w.data + p * ng * cb;
  for (int h = 0; h < 2; ++h) {
    const int64_t row0 = p * 16 + h * 8;
    if (row0 >= w.n) break;
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t g = 0; g < ng; ++g) {
      const uint8_t* c = panel + g * cb;
      if (h == 0) prefetch_ahead(c, pf, cb);  // the second half reads the panel from L2
      const float* xg = x + t0 * w.k + g * G;
      __m256 ag[T][A];
      for (int t = 0; t < T; ++t)
        for (int i = 0; i < A; ++i) ag[t][i] = _mm256_setzero_ps();
      for (int b = 0; b < G / 4; ++b) {
        const __m256i v = load256(c + b * 64 + h * 32);
        for (int i = 0; i < 4; ++i) {
          const __m256i ci = i == 3 ? v : _mm256_slli_epi32(v, 24 - 8 * i);
          const __m256 wv = _mm256_cvtepi32_ps(_mm256_srai_epi32(ci, 24));
          for (int t = 0; t < T; ++t)
            ag[t][i % A] =
                _mm256_fmadd_ps(wv, _mm256_set1_ps(xg[t * w.k + b * 4 + i]), ag[t][i % A]);
        }
      }
      const __m256 s = load_half8(c + G * 16 + h * 16);
      for (int t = 0; t < T; ++t) {
        __m256 sg = ag[t][0];
        for (int i = 1; i < A; ++i) sg = _mm256_add_ps(sg, ag[t][i]);
        acc[t] = _mm256_fmadd_ps(sg, s, acc[t]);
      }
    }
    for (int t = 0; t < T; ++t) store_rows(y + (t0 + t) * w.n, row0, w.n, acc[t]);
  }
}

}  // namespace
}  // namespace edge
