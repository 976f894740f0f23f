// AVX-512 VNNI int8 matmuls over Q4K, Q5K and Q6K cells (quant/packed.h: GGUF Q4_K, Q5_K
// and Q6_K super-blocks of 256, per-row fields first, then the codes: Q4K in the W4 block
// layout, Q5K in chunks of 320 bytes per 32 k (four nibble blocks and their high block of
// bit 4), Q6K in chunks of 192 bytes per 16 k, two nibble blocks and their high block). A 64-byte
// code block is one zmm: 16 int32 lanes = the 16 rows of a panel, each lane 4 consecutive k;
// vpdpbusd(u8 codes, s8 activations) sums 4 products per lane.
//
// Q6K: per sub-block j (16 k = 2 blocks, codes 0..63 with bits 4-5 from the high block) the
// int32 dot is multiplied by its int8 sc_j (vpmulld); per super-block the -32 offset is
// 32 * sum_j sc_j * sums16_j, 8 vpmaddwd per (panel, token) (sc pairs widened from s8), and
// one FMA applies d * sa.
//
// Q4K and Q5K: per sub-block j (32 k = 4 blocks) the int32 dot of each row is multiplied by its
// 6-bit sc_j (vpmulld) into the super-block's int32 sum; per super-block the mins term sum_j m_j *
// sums32_j is 4 vpmaddwd per (panel, token) (m pairs widened from u8, the activations' sums of 32
// codes as int16 pairs), and two FMAs apply d * sa and dmin * sa: one float step per 256 weights
// where w4a_g32 takes one per 32. The same arithmetic as the reference (ref/packed_ref.cpp), so the
// two differ only by float rounding.
//
// Prefill: P = 2 panels x T <= 6 tokens per pass (each unpacked code block feeds T tokens,
// each activation broadcast P panels), as the W4 block of packed_avx512vnni.cpp; decode:
// one panel, one token, cells in storage order (one read stream per thread). The loop nest
// around the tiles is kernels/packed_blocking.h.
//
// Compiled with AVX-512 flags: everything here has internal linkage (see
// packed_avx512vnni.cpp).
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/packed_api.h"
#include "kernels/packed_blocking.h"
#include "kernels/x86_avx512/packed_avx512_common.h"

namespace edge {
namespace {

constexpr int kMaxTile = 6;  // tokens sharing one loaded code block (kquant_block: <= 6)
// Q4K: bytes of a cell (16 rows x 256), the codes' offset, the mins' pairs, d and dmin.
constexpr int64_t kCell = 2368, kCodes = 320, kMinPairs = 128, kD = 256, kDmin = 288;
// Q6K: bytes of a cell, the codes' offset (sc pairs at 0, d at 256 as Q4K's).
constexpr int64_t kCell6 = 3360, kCodes6 = 288;
// Q5K: bytes of a cell (Q4K's per-row fields, then chunks of 320 bytes per 32 k).
constexpr int64_t kCell5 = 2880;

// Q6K sub-block scales sc_j of the 16 rows as int32 lanes, from the pair layout.
inline __m512i q6k_scales(const uint8_t* cell, int j) {
  const __m512i sp = _mm512_cvtepi8_epi16(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cell + 32 * (j / 2))));
  return j % 2 ? _mm512_srai_epi32(sp, 16) : _mm512_srai_epi32(_mm512_slli_epi32(sp, 16), 16);
}

// Q6K: acc += sa * d * (isum - 32 * sum_j sc_j * sums16_j) for one (panel, token).
inline __m512 q6k_combine(const uint8_t* cell, __m512i isum, const int16_t* s16, float sa,
                          __m512 acc) {
  __m512i os = _mm512_setzero_si512();
  for (int i = 0; i < 8; ++i) {
    const __m512i sp =
        _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(cell + 32 * i)));
    os = _mm512_add_epi32(os, _mm512_madd_epi16(sp, bcast32(s16 + 2 * i)));
  }
  isum = _mm512_sub_epi32(isum, _mm512_slli_epi32(os, 5));
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum),
                         _mm512_mul_ps(load_half16(cell + kD), _mm512_set1_ps(sa)), acc);
}

// Bit M of each byte of h moved to bit 4 (and M + 1 to 5): 16-bit shifts; what crosses a
// byte border lands outside the bits the caller keeps.
template <int M>
inline __m512i bits_to_4(__m512i h) {
  if constexpr (M < 4)
    return _mm512_slli_epi16(h, 4 - M);
  else if constexpr (M > 4)
    return _mm512_srli_epi16(h, M - 4);
  else
    return h;
}

// x | (h & m) per byte in one vpternlogd (immediate 0xF8 = A | (B & C)).
inline __m512i or_masked(__m512i x, __m512i h, __m512i m) {
  return _mm512_ternarylogic_epi32(x, h, m, 0xF8);
}

// The unpacked codes of block b (8 k) of a cell: lo = k 8b..8b+3, hi = 8b+4..8b+7. M is b's
// place under its high block (b % 4 for Q5K, b % 2 for Q6K), a template argument so that the
// high bits' shifts are constants.
template <PackedKind K, int M>
inline void unpack_block(const uint8_t* cell, int b, __m512i* lo, __m512i* hi) {
  constexpr bool kQ6K = K == PackedKind::kQ6K;
  const __m512i nib = _mm512_set1_epi8(0x0F);
  const __m512i v =
      _mm512_loadu_si512(cell + (kQ6K                    ? kCodes6 + (b / 2) * 192 + M * 64
                                 : K == PackedKind::kQ5K ? kCodes + (b / 4) * 320 + M * 64
                                                         : kCodes + b * 64));
  *lo = _mm512_and_si512(v, nib);
  *hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
  if constexpr (K == PackedKind::kQ5K) {  // high block: bits 2M (lo), 2M + 1 (hi) -> bit 4
    const __m512i h = _mm512_loadu_si512(cell + kCodes + (b / 4) * 320 + 256);
    const __m512i m = _mm512_set1_epi8(0x10);
    *lo = or_masked(*lo, bits_to_4<2 * M>(h), m);
    *hi = or_masked(*hi, bits_to_4<2 * M + 1>(h), m);
  }
  if constexpr (kQ6K) {  // high block: bits 4M..4M+1 (lo), 4M+2..4M+3 (hi) -> bits 4-5
    const __m512i h = _mm512_loadu_si512(cell + kCodes6 + (b / 2) * 192 + 128);
    const __m512i m = _mm512_set1_epi8(0x30);
    *lo = or_masked(*lo, bits_to_4<4 * M>(h), m);
    *hi = or_masked(*hi, bits_to_4<4 * M + 2>(h), m);
  }
}

// dot[i][t] += block b's codes of panel i . token t's activations (M: b's place, as above).
template <PackedKind K, int P, int T, int M>
inline void block_dots(__m512i (&dot)[P][T], const uint8_t* const (&cell)[P], const int8_t* q,
                       int64_t ld, int b) {
  __m512i lo[P], hi[P];
  for (int i = 0; i < P; ++i) unpack_block<K, M>(cell[i], b, &lo[i], &hi[i]);
  for (int t = 0; t < T; ++t) {
    const __m512i qa = bcast32(q + t * ld + 8 * b);
    for (int i = 0; i < P; ++i) dot[i][t] = _mm512_dpbusd_epi32(dot[i][t], lo[i], qa);
  }
  for (int t = 0; t < T; ++t) {
    const __m512i qb = bcast32(q + t * ld + 8 * b + 4);
    for (int i = 0; i < P; ++i) dot[i][t] = _mm512_dpbusd_epi32(dot[i][t], hi[i], qb);
  }
}

// The blocks b0 + M of one sub-block, each with its place M known at compile time.
template <PackedKind K, int P, int T, int... M>
inline void sub_block_dots(__m512i (&dot)[P][T], const uint8_t* const (&cell)[P], const int8_t* q,
                           int64_t ld, int b0, std::integer_sequence<int, M...>) {
  (block_dots<K, P, T, M>(dot, cell, q, ld, b0 + M), ...);
}

// Panels [p, p + P) x tokens [t0, t0 + T): y rows of those panels (Q4K, Q5K or Q6K).
template <PackedKind K, int P, int T>
void kquant_block(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p, int64_t t0,
                  float* y) {
  constexpr bool kQ6K = K == PackedKind::kQ6K;
  constexpr int64_t cb = kQ6K ? kCell6 : K == PackedKind::kQ5K ? kCell5 : kCell;
  constexpr int kSubBlocks = kQ6K ? 16 : 8, kBlocksPerSub = kQ6K ? 2 : 4;
  const int64_t ng = w.k / 256, ld32 = a.k / 32;
  // The super-block's int32 sums (isum) are updated once per sub-block and stay in registers
  // beside the P x T dots: 2 x P x T of the 32 zmm, hence T <= 6. With T = 8 they lived in
  // memory, and their load and store per sub-block cost a fifth of the tile (one thread, in
  // cache, Zen 4: prefill of 64 tokens, Q4K 301 -> 345 GFLOP/s, Q6K 227 -> 269, Q5K 281 ->
  // 315). The f32 sums (acc) are touched once per super-block: in memory.
  alignas(64) float acc[P][T][16] = {};
  __m512i isum[P][T];
  for (int64_t g = 0; g < ng; ++g) {
    const int8_t* q = a.q + t0 * a.k + g * 256;
    const uint8_t* cell[P];
    for (int i = 0; i < P; ++i) cell[i] = w.data + ((p + i) * ng + g) * cb;
    for (int j = 0; j < kSubBlocks; ++j) {
      __m512i dot[P][T];
      for (int i = 0; i < P; ++i)
        for (int t = 0; t < T; ++t) dot[i][t] = _mm512_setzero_si512();
      if constexpr (K == PackedKind::kQ4K) {  // no high bits: a plain loop (measured faster)
#pragma GCC unroll 4
        for (int b = 4 * j; b < 4 * (j + 1); ++b) block_dots<K, P, T, 0>(dot, cell, q, a.k, b);
      } else {
        sub_block_dots<K, P, T>(dot, cell, q, a.k, kBlocksPerSub * j,
                                std::make_integer_sequence<int, kBlocksPerSub>{});
      }
      for (int i = 0; i < P; ++i) {
        const __m512i sc = kQ6K ? q6k_scales(cell[i], j)
                                : _mm512_cvtepu8_epi32(_mm_loadu_si128(
                                      reinterpret_cast<const __m128i*>(cell[i] + 16 * j)));
        for (int t = 0; t < T; ++t) {
          const __m512i s = _mm512_mullo_epi32(dot[i][t], sc);
          isum[i][t] = j > 0 ? _mm512_add_epi32(isum[i][t], s) : s;
        }
      }
    }
    if constexpr (kQ6K) {
      for (int i = 0; i < P; ++i)
        for (int t = 0; t < T; ++t)
          _mm512_store_ps(
              acc[i][t], q6k_combine(cell[i], isum[i][t], a.sums16 + (t0 + t) * (a.k / 16) + g * 16,
                                     a.scales[(t0 + t) * ng + g], _mm512_load_ps(acc[i][t])));
      continue;
    }
    for (int i = 0; i < P; ++i) {
      __m512i mp[4];  // lane r: (m_2k, m_2k+1) of row r
      for (int k = 0; k < 4; ++k)
        mp[k] = _mm512_cvtepu8_epi16(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cell[i] + kMinPairs + 32 * k)));
      const __m512 dv = load_half16(cell[i] + kD), dm = load_half16(cell[i] + kDmin);
      for (int t = 0; t < T; ++t) {
        const int16_t* s32 = a.sums32 + (t0 + t) * ld32 + g * 8;
        __m512i ms = _mm512_madd_epi16(mp[0], bcast32(s32));
        for (int k = 1; k < 4; ++k)
          ms = _mm512_add_epi32(ms, _mm512_madd_epi16(mp[k], bcast32(s32 + 2 * k)));
        const __m512 sa = _mm512_set1_ps(a.scales[(t0 + t) * ng + g]);
        __m512 r = _mm512_load_ps(acc[i][t]);
        r = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i][t]), _mm512_mul_ps(dv, sa), r);
        r = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(ms), _mm512_mul_ps(dm, sa), r);
        _mm512_store_ps(acc[i][t], r);
      }
    }
  }
  for (int i = 0; i < P; ++i)
    for (int t = 0; t < T; ++t)
      _mm512_mask_storeu_ps(y + (t0 + t) * w.n + (p + i) * 16, row_mask(w, p + i),
                            _mm512_load_ps(acc[i][t]));
}

// The register tile for packed_blocking.h: panel pairs [pb, pe) x T tokens; one token (the
// GEMV) a panel at a time, so each thread reads one stream.
template <PackedKind K>
struct KQuantBlocks {
  static constexpr int kTokens = kMaxTile;
  const PackedMatrixView& w;
  const QuantizedActivations& a;
  float* y;
  template <int T>
  void run(int64_t pb, int64_t pe, int64_t t0) const {
    packed::over_panel_pairs<T>(
        pb, pe, [&]<int kPanels>(int64_t p) { kquant_block<K, kPanels, T>(w, a, p, t0, y); });
  }
};

void matmul_q4k_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
                   float* y) {
  packed::over_panels(KQuantBlocks<PackedKind::kQ4K>{w, a, y}, w, a.n, p0, p1);
}

void matmul_q5k_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
                   float* y) {
  packed::over_panels(KQuantBlocks<PackedKind::kQ5K>{w, a, y}, w, a.n, p0, p1);
}

void matmul_q6k_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
                   float* y) {
  packed::over_panels(KQuantBlocks<PackedKind::kQ6K>{w, a, y}, w, a.n, p0, p1);
}

}  // namespace

void install_packed_q4k_avx512vnni(PackedKernels* t) {
  t->matmul_q4k_a8 = matmul_q4k_a8;
  t->matmul_q6k_a8 = matmul_q6k_a8;
  t->matmul_q5k_a8 = matmul_q5k_a8;
}

}  // namespace edge
