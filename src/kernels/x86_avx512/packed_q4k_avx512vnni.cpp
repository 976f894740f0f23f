// AVX-512 VNNI int8 matmul over Q4K cells (quant/packed.h: GGUF Q4_K super-blocks of 256,
// per-row fields first, then the codes in the W4 block layout). A 64-byte code block is one
// zmm: 16 int32 lanes = the 16 rows of a panel, each lane 4 consecutive k; vpdpbusd(u8
// codes, s8 activations) sums 4 products per lane.
//
// Per sub-block j (32 k = 4 blocks) the int32 dot of each row is multiplied by its 6-bit
// sc_j (vpmulld) into the super-block's int32 sum; per super-block the mins term
// sum_j m_j * sums32_j is 4 vpmaddwd per (panel, token) (m pairs widened from u8, the
// activations' sums of 32 codes as int16 pairs), and two FMAs apply d * sa and dmin * sa:
// one float step per 256 weights where w4a_g32 takes one per 32. The same arithmetic as the
// reference (ref/packed_ref.cpp), so the two differ only by float rounding.
//
// Prefill: P = 2 panels x T <= 8 tokens per pass (each unpacked code block feeds T tokens,
// each activation broadcast P panels), as the W4 block of packed_avx512vnni.cpp; decode:
// one panel, one token, cells in storage order (one read stream per thread). The loop nest
// around the tiles is kernels/packed_blocking.h.
//
// Compiled with AVX-512 flags: everything here has internal linkage (see
// packed_avx512vnni.cpp).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/packed_api.h"
#include "kernels/packed_blocking.h"
#include "kernels/x86_avx512/packed_avx512_common.h"

namespace edge {
namespace {

constexpr int kMaxTile = 8;      // tokens sharing one loaded code block
constexpr int64_t kCell = 2368;  // bytes of a Q4K cell (16 rows x 256)
constexpr int64_t kCodes = 320;  // the codes' offset in a cell
constexpr int64_t kMinPairs = 128, kD = 256, kDmin = 288;

// Panels [p, p + P) x tokens [t0, t0 + T): y rows of those panels.
template <int P, int T>
void q4k_block(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p, int64_t t0,
               float* y) {
  const int64_t ng = w.k / 256, ld32 = a.k / 32;
  const __m512i nib = _mm512_set1_epi8(0x0F);
  // Touched once per sub-block (isum) or super-block (acc): in memory, beside the P x T
  // dots the register allocator must keep (see w4a8_block).
  alignas(64) float acc[P][T][16] = {};
  alignas(64) int32_t isum[P][T][16];
  for (int64_t g = 0; g < ng; ++g) {
    const int8_t* q = a.q + t0 * a.k + g * 256;
    const uint8_t* cell[P];
    for (int i = 0; i < P; ++i) cell[i] = w.data + ((p + i) * ng + g) * kCell;
    for (int j = 0; j < 8; ++j) {
      __m512i dot[P][T];
      for (int i = 0; i < P; ++i)
        for (int t = 0; t < T; ++t) dot[i][t] = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int b = 4 * j; b < 4 * j + 4; ++b) {
        __m512i v[P], c[P];
        for (int i = 0; i < P; ++i) {
          v[i] = _mm512_loadu_si512(cell[i] + kCodes + b * 64);
          c[i] = _mm512_and_si512(v[i], nib);
        }
        for (int t = 0; t < T; ++t) {
          const __m512i qa = bcast32(q + t * a.k + 8 * b);
          for (int i = 0; i < P; ++i) dot[i][t] = _mm512_dpbusd_epi32(dot[i][t], c[i], qa);
        }
        for (int i = 0; i < P; ++i) c[i] = _mm512_and_si512(_mm512_srli_epi16(v[i], 4), nib);
        for (int t = 0; t < T; ++t) {
          const __m512i qb = bcast32(q + t * a.k + 8 * b + 4);
          for (int i = 0; i < P; ++i) dot[i][t] = _mm512_dpbusd_epi32(dot[i][t], c[i], qb);
        }
      }
      for (int i = 0; i < P; ++i) {
        const __m512i sc = _mm512_cvtepu8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(cell[i] + 16 * j)));
        for (int t = 0; t < T; ++t) {
          __m512i s = _mm512_mullo_epi32(dot[i][t], sc);
          if (j > 0) s = _mm512_add_epi32(s, _mm512_load_si512(isum[i][t]));
          _mm512_store_si512(isum[i][t], s);
        }
      }
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
        r = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(isum[i][t])),
                            _mm512_mul_ps(dv, sa), r);
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
struct Q4KBlocks {
  static constexpr int kTokens = kMaxTile;
  const PackedMatrixView& w;
  const QuantizedActivations& a;
  float* y;
  template <int T>
  void run(int64_t pb, int64_t pe, int64_t t0) const {
    int64_t p = pb;
    if constexpr (T == 1) {
      for (; p < pe; ++p) q4k_block<1, 1>(w, a, p, t0, y);
      return;
    }
    for (; p + 2 <= pe; p += 2) q4k_block<2, T>(w, a, p, t0, y);
    if (p < pe) q4k_block<1, T>(w, a, p, t0, y);
  }
};

void matmul_q4k_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
                   float* y) {
  packed::over_panels(Q4KBlocks{w, a, y}, w, a.n, p0, p1);
}

}  // namespace

void install_packed_q4k_avx512vnni(PackedKernels* t) {
  t->matmul_q4k_a8 = matmul_q4k_a8;
}

}  // namespace edge
