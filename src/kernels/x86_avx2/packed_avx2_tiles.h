// AVX2 packed-kernel tiles shared by packed_avx2.cpp (plain AVX2: maddubs + madd) and
// packed_avxvnni.cpp (AVX-VNNI: vpdpbusd). Included only by those two files, each compiled
// with exactly the flags its runtime check guarantees (CMakeLists.txt, kernels/isa.h);
// everything here has internal linkage, so neither file's code can stand in for the other's.
// Layout and arithmetic: see packed_avx2.cpp.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/packed_api.h"

namespace edge {
namespace {

constexpr int kMaxTile = 4;

// packed_cell_bytes spelled out here: this file's functions must have internal linkage.
constexpr int64_t cell_bytes(PackedKind kind, int32_t g) {
  return kind == PackedKind::kW8       ? g * 16 + 64
         : kind == PackedKind::kW4Asym ? g * 8 + 64
         : kind == PackedKind::kW6     ? g * 12 + 32
                                       : g * 8 + 32;
}

// W6: adds the top 2 bits of the codes to the 4 nibble planes of W4 blocks b and b+1 (b
// even), from the matching 32-byte half hv of their high block (quant/packed.h): bit
// pairs 0-1, 2-3, 4-5, 6-7 of each byte move to bits 4-5. 16-bit shifts are safe: the
// mask drops what crosses a byte.
inline void add_w6_high(__m256i (&w)[4], __m256i hv) {
  const __m256i m = _mm256_set1_epi8(0x30);
  w[0] = _mm256_or_si256(w[0], _mm256_and_si256(_mm256_slli_epi16(hv, 4), m));
  w[1] = _mm256_or_si256(w[1], _mm256_and_si256(_mm256_slli_epi16(hv, 2), m));
  w[2] = _mm256_or_si256(w[2], _mm256_and_si256(hv, m));
  w[3] = _mm256_or_si256(w[3], _mm256_and_si256(_mm256_srli_epi16(hv, 2), m));
}

inline __m256 load_half8(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
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

// ---- W4A8 (and W6A8: kW6, the W4 nibbles plus the high plane, offset 32) -----------
template <int T, bool kAsym, bool kVnni, bool kW6 = false>
void w4a8_tile(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p, int64_t t0,
               float* y) {
  static_assert(!(kAsym && kW6), "W6 is symmetric");
  constexpr int A = T == 1 ? 4 : (T == 2 ? 2 : 1);
  constexpr int kOffset = kW6 ? 32 : 8;
  const int32_t G = w.fmt.group;
  const int64_t ng = w.k / G, cb = cell_bytes(w.fmt.kind, G);
  const uint8_t* panel = w.data + p * ng * cb;
  const __m256i nib = _mm256_set1_epi8(0x0F);
  for (int h = 0; h < 2; ++h) {
    const int64_t row0 = p * 16 + h * 8;
    if (row0 >= w.n) break;
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t g = 0; g < ng; ++g) {
      const uint8_t* c = panel + g * cb;
      const int8_t* q = a.q + t0 * a.k + g * G;
      __m256i dot[T][A];
      for (int t = 0; t < T; ++t)
        for (int i = 0; i < A; ++i) dot[t][i] = _mm256_setzero_si256();
      for (int b = 0; b < G / 8; b += 2) {
        const __m256i v0 = load256(c + b * 64 + h * 32), v1 = load256(c + b * 64 + 64 + h * 32);
        __m256i wv[4] = {_mm256_and_si256(v0, nib), _mm256_and_si256(_mm256_srli_epi16(v0, 4), nib),
                         _mm256_and_si256(v1, nib), _mm256_and_si256(_mm256_srli_epi16(v1, 4), nib)};
        if constexpr (kW6) add_w6_high(wv, load256(c + G * 8 + b * 32 + h * 32));
        for (int t = 0; t < T; ++t) {
          const int8_t* qt = q + t * a.k + b * 8;
          dot[t][0] = dot4<kVnni>(dot[t][0], wv[0], bcast32(qt));
          dot[t][1 % A] = dot4<kVnni>(dot[t][1 % A], wv[1], bcast32(qt + 4));
          dot[t][2 % A] = dot4<kVnni>(dot[t][2 % A], wv[2], bcast32(qt + 8));
          dot[t][3 % A] = dot4<kVnni>(dot[t][3 % A], wv[3], bcast32(qt + 12));
        }
      }
      const __m256 s = load_half8(c + G * (kW6 ? 12 : 8) + h * 16);
      for (int t = 0; t < T; ++t) {
        __m256i d = dot[t][0];
        for (int i = 1; i < A; ++i) d = _mm256_add_epi32(d, dot[t][i]);
        const int64_t ai = (t0 + t) * ng + g;
        const float sa = a.scales[ai];
        const int32_t qs = a.sums[ai];
        if constexpr (kAsym) {
          const __m256 mins = load_half8(c + G * 8 + 32 + h * 16);
          acc[t] = _mm256_fmadd_ps(mins, _mm256_set1_ps(sa * static_cast<float>(qs)), acc[t]);
        } else {
          d = _mm256_sub_epi32(d, _mm256_set1_epi32(kOffset * qs));
        }
        acc[t] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_mul_ps(s, _mm256_set1_ps(sa)), acc[t]);
      }
    }
    for (int t = 0; t < T; ++t) store_rows(y + (t0 + t) * w.n, row0, w.n, acc[t]);
  }
}

// ---- W8A8 -------------------------------------------------------------------------
template <int T, bool kVnni>
void w8a8_tile(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p, int64_t t0,
               float* y) {
  constexpr int A = T == 1 ? 4 : (T == 2 ? 2 : 1);
  const int32_t G = w.fmt.group;
  const int64_t ng = w.k / G, cb = cell_bytes(w.fmt.kind, G);
  const uint8_t* panel = w.data + p * ng * cb;
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int h = 0; h < 2; ++h) {
    const int64_t row0 = p * 16 + h * 8;
    if (row0 >= w.n) break;
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t g = 0; g < ng; ++g) {
      const uint8_t* c = panel + g * cb;
      const int8_t* q = a.q + t0 * a.k + g * G;
      __m256i dot[T][A];
      for (int t = 0; t < T; ++t)
        for (int i = 0; i < A; ++i) dot[t][i] = _mm256_setzero_si256();
      for (int b = 0; b < G / 4; b += 4) {
        __m256i v[4], av[4];
        for (int j = 0; j < 4; ++j) {
          v[j] = load256(c + (b + j) * 64 + h * 32);
          if constexpr (!kVnni) av[j] = _mm256_abs_epi8(v[j]);
        }
        for (int t = 0; t < T; ++t) {
          const int8_t* qt = q + t * a.k + b * 4;
          for (int j = 0; j < 4; ++j) {
            const __m256i qb = bcast32(qt + 4 * j);
            if constexpr (kVnni)
              dot[t][j % A] = dot4<true>(dot[t][j % A], _mm256_xor_si256(qb, flip), v[j]);
            else
              dot[t][j % A] = dot4<false>(dot[t][j % A], av[j], _mm256_sign_epi8(qb, v[j]));
          }
        }
      }
      const __m256 s = load_half8(c + G * 16 + h * 16);
      __m256i sum128 = _mm256_setzero_si256();
      if constexpr (kVnni)
        sum128 = _mm256_slli_epi32(_mm256_cvtepi16_epi32(_mm_loadu_si128(
                                       reinterpret_cast<const __m128i*>(c + G * 16 + 32 + h * 16))),
                                   7);
      for (int t = 0; t < T; ++t) {
        __m256i d = dot[t][0];
        for (int i = 1; i < A; ++i) d = _mm256_add_epi32(d, dot[t][i]);
        if constexpr (kVnni) d = _mm256_sub_epi32(d, sum128);
        const float sa = a.scales[(t0 + t) * ng + g];
        acc[t] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_mul_ps(s, _mm256_set1_ps(sa)), acc[t]);
      }
    }
    for (int t = 0; t < T; ++t) store_rows(y + (t0 + t) * w.n, row0, w.n, acc[t]);
  }
}

// ---- W4A16 (and W6A16: kW6) --------------------------------------------------------
template <int T, bool kW6 = false>
void w4a16_tile(const PackedMatrixView& w, const float* x, int64_t p, int64_t t0, float* y) {
  constexpr int A = T == 1 ? 4 : (T == 2 ? 2 : 1);
  const int32_t G = w.fmt.group;
  const bool asym = !kW6 && w.fmt.kind == PackedKind::kW4Asym;
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
      const float* xg = x + t0 * w.k + g * G;
      const __m256 s = load_half8(c + G * (kW6 ? 12 : 8) + h * 16);
      const __m256 m = asym ? load_half8(c + G * 8 + 32 + h * 16)
                            : _mm256_mul_ps(s, _mm256_set1_ps(kW6 ? -32.0f : -8.0f));
      for (int b = 0; b < G / 8; ++b) {
        const __m256i v = load256(c + b * 64 + h * 32);
        __m256i vh = _mm256_setzero_si256();
        if constexpr (kW6) vh = load256(c + G * 8 + (b / 2) * 64 + h * 32);
        for (int i = 0; i < 8; ++i) {  // k = 8b + i: byte i%4 of the lane, nibble i/4
          const int sh = (i % 4) * 8 + (i / 4) * 4;
          __m256i code = _mm256_and_si256(sh == 0 ? v : _mm256_srli_epi32(v, sh), nib);
          if constexpr (kW6) {  // bit pair 2 * (b%2) + i/4 of the same byte -> bits 4-5
            const int hs = (i % 4) * 8 + 2 * (2 * (b % 2) + i / 4);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi32(vh, hs), _mm256_set1_epi32(3));
            code = _mm256_or_si256(code, _mm256_slli_epi32(hi, 4));
          }
          const __m256 wv = _mm256_fmadd_ps(_mm256_cvtepi32_ps(code), s, m);
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
template <int T>
void w8a16_tile(const PackedMatrixView& w, const float* x, int64_t p, int64_t t0, float* y) {
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

// ---- drivers: panels outer, token tiles inner --------------------------------------
// Panels in blocks of ~256 KB of weights: within a block, token tiles outer and panels
// inner, so the block stays in L2 while each tile's activations (up to kMaxTile rows of K)
// are read once per block rather than once per panel (f32 activations of 64 tokens x
// K = 6144 are 1.5 MB: per-panel re-reads would come from L3).
template <template <int> class Op, typename... Args>
void over_tiles(int64_t n, int64_t p0, int64_t p1, const PackedMatrixView& w, Args&... args) {
  const int64_t panel_bytes = (w.k / w.fmt.group) * cell_bytes(w.fmt.kind, w.fmt.group);
  const int64_t block = n <= kMaxTile ? p1 - p0 : (256 << 10) / panel_bytes + 1;
  for (int64_t pb = p0; pb < p1; pb += block) {
    const int64_t pe = pb + block < p1 ? pb + block : p1;
    for (int64_t t0 = 0; t0 < n; t0 += kMaxTile) {
      for (int64_t p = pb; p < pe; ++p) {
        switch (n - t0 < kMaxTile ? n - t0 : kMaxTile) {
          case 1:
            Op<1>::run(p, t0, w, args...);
            break;
          case 2:
            Op<2>::run(p, t0, w, args...);
            break;
          case 3:
            Op<3>::run(p, t0, w, args...);
            break;
          default:
            Op<kMaxTile>::run(p, t0, w, args...);
            break;
        }
      }
    }
  }
}

using QA = QuantizedActivations;
using PMV = PackedMatrixView;

// The integer tiles of one dot-product flavour (kVnni: vpdpbusd, else maddubs + madd).
template <bool kVnni>
struct Int8Tiles {
  template <int T>
  struct W4Sym {
    static void run(int64_t p, int64_t t0, const PMV& w, const QA& a, float* y) {
      w4a8_tile<T, false, kVnni>(w, a, p, t0, y);
    }
  };
  template <int T>
  struct W4Asym {
    static void run(int64_t p, int64_t t0, const PMV& w, const QA& a, float* y) {
      w4a8_tile<T, true, kVnni>(w, a, p, t0, y);
    }
  };
  template <int T>
  struct W8 {
    static void run(int64_t p, int64_t t0, const PMV& w, const QA& a, float* y) {
      w8a8_tile<T, kVnni>(w, a, p, t0, y);
    }
  };
  template <int T>
  struct W6 {
    static void run(int64_t p, int64_t t0, const PMV& w, const QA& a, float* y) {
      w4a8_tile<T, false, kVnni, true>(w, a, p, t0, y);
    }
  };
};

template <bool kVnni>
void w4_a8_tiles(const PMV& w, const QA& a, int64_t p0, int64_t p1, float* y) {
  if (w.fmt.kind == PackedKind::kW4Asym)
    over_tiles<Int8Tiles<kVnni>::template W4Asym>(a.n, p0, p1, w, a, y);
  else
    over_tiles<Int8Tiles<kVnni>::template W4Sym>(a.n, p0, p1, w, a, y);
}

template <bool kVnni>
void w8_a8_tiles(const PMV& w, const QA& a, int64_t p0, int64_t p1, float* y) {
  over_tiles<Int8Tiles<kVnni>::template W8>(a.n, p0, p1, w, a, y);
}

template <bool kVnni>
void w6_a8_tiles(const PMV& w, const QA& a, int64_t p0, int64_t p1, float* y) {
  over_tiles<Int8Tiles<kVnni>::template W6>(a.n, p0, p1, w, a, y);
}

}  // namespace
}  // namespace edge
