// AVX2 packed kernels (packed_api.h) over the layout of quant/packed.h. A 64-byte code
// block is read as two 32-byte halves: rows 0-7 and rows 8-15 of the panel (8 int32 lanes,
// each lane one row x 4 consecutive k). The int8 matmuls keep a whole panel x up to 4
// tokens in registers (packed_avx2_gemm.h; decode is its 1-token tile); the A16 paths take
// each half-panel on its own (packed_avx2_tiles.h). The loop nest around the tiles is
// kernels/packed_blocking.h.
//   W4A8  u8 codes x s8 activations: vpdpbusd (AVX-VNNI) or maddubs + madd (plain AVX2;
//         no saturation: |pair| <= 2 * 15 * 127; the GEMM sums pairs in s16 over 32 k).
//   W8A8  AVX-VNNI: vpdpbusd(u8 = q + 128, s8 codes) - 128 * stored row sums. Plain AVX2:
//         maddubs(|code|, q * sign(code)) (|pair| <= 2 * 128 * 127 < 32768).
//   W4A16 nibble -> int -> f32, w = code * scale + m (m = min, or -8 * scale), FMA.
//   W8A16 sign-extend by shifts, FMA, scale per group.
//   W6A8  the W4 sym tiles with the high plane or-ed into each nibble plane (u8 codes
//         0..63; pairs <= 2 * 63 * 127), offset 32 instead of 8.
//   W6A16 the W4A16 tile with the 2 high bits added per k.
//   MXFP4 (A8) the W4 sym tile with each nibble plane looked up (vpshufb) as the E2M1 value
//         doubled + 12, offset 12, E8M0 scales; (A16) the W4A16 tile, values by vpermps.
//   Q4K, Q5K, Q6K (A8) the W4 / W6 tiles with the sub-block scales folded into the
//         widening (Q5K: bit 4 of each code from its high block); (A16) the W4A16 / W6A16
//         tiles with a float scale per sub-block.
//
// Written once elsewhere: the loop nest (kernels/packed_blocking.h) and the activation
// quantiser (kernels/quantize_act.h, over this file's ActQuantPrims). The register tiles
// stay per ISA because their instruction mix differs, not just their width: here a code
// block is two ymm halves (16 ymm in all, so T <= 4 tokens), int8 products go through
// maddubs + madd with s16 pair sums bounded as above (or VEX vpdpbusd), and nibbles widen
// through shuffles; AVX-512 takes a block as one zmm (32 registers, panel pairs x 6-8
// tokens), vpdpbusd, a 16-entry vpermps table and masked row stores; NEON widens with
// vmull / SDOT / SMMLA over codes transposed to lanes of k.
//
// Compiled with -mavx2 -mfma -mf16c only (kernels/isa.h): the AVX-VNNI variant lives in
// packed_avxvnni.cpp. Like the AVX-512 file, it instantiates nothing shared with portable
// code (intrinsics and anonymous-namespace helpers only).
#include "kernels/quantize_act.h"
#include "kernels/x86_avx2/packed_avx2_gemm.h"

namespace edge {
namespace {

void w4_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
            float* y) {
  packed::over_panel_tiles<W4A16Tile<PackedKind::kW4Sym>>(w, x, n, p0, p1, y);
}
void w8_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
            float* y) {
  packed::over_panel_tiles<W8A16Tile>(w, x, n, p0, p1, y);
}
void w6_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
            float* y) {
  packed::over_panel_tiles<W4A16Tile<PackedKind::kW6>>(w, x, n, p0, p1, y);
}
void q4k_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
             float* y) {
  packed::over_panel_tiles<W4A16Tile<PackedKind::kQ4K>>(w, x, n, p0, p1, y);
}
void q6k_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
             float* y) {
  packed::over_panel_tiles<W4A16Tile<PackedKind::kQ6K>>(w, x, n, p0, p1, y);
}
void q5k_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
             float* y) {
  packed::over_panel_tiles<W4A16Tile<PackedKind::kQ5K>>(w, x, n, p0, p1, y);
}
void mxfp4_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
               float* y) {
  packed::over_panel_tiles<W4A16Tile<PackedKind::kMxfp4>>(w, x, n, p0, p1, y);
}

// The activation quantiser's primitives (kernels/quantize_act.h): 8 floats a chunk, the
// codes rounded by vcvtps2dq (the default rounding mode: half to even) and clamped as int32.
struct ActQuantPrims {
  static constexpr int kW = 8;
  using Max = __m256;
  using Codes = __m256i;
  using Sum = __m256i;
  static Max max_zero() { return _mm256_setzero_ps(); }
  static Sum sum_zero() { return _mm256_setzero_si256(); }
  static Max abs_max(Max m, const float* x) {
    return _mm256_max_ps(m, _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_loadu_ps(x)));
  }
  static float hmax(Max m) {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, m);
    float amax = 0.0f;
    for (float l : lanes) amax = l > amax ? l : amax;
    return amax;
  }
  static Codes quantize(const float* x, float inv) {
    const __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), _mm256_set1_ps(inv)));
    return _mm256_min_epi32(_mm256_max_epi32(q, _mm256_set1_epi32(-127)), _mm256_set1_epi32(127));
  }
  static Sum add(Sum s, Codes q) { return _mm256_add_epi32(s, q); }
  static void store(int8_t* p, Codes q) {
    alignas(32) int32_t qi[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(qi), q);
    for (int j = 0; j < 8; ++j) p[j] = static_cast<int8_t>(qi[j]);
  }
  static int32_t hsum(Sum s) {
    alignas(32) int32_t si[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(si), s);
    return si[0] + si[1] + si[2] + si[3] + si[4] + si[5] + si[6] + si[7];
  }
};

}  // namespace

void install_packed_avx2(PackedKernels* t) {
  t->name = "avx2";
  t->quantize_act = packed::quantize_act<ActQuantPrims>;
  t->matmul_w4_a8 = w4_a8<false>;
  t->matmul_w8_a8 = w8_a8<false>;
  t->matmul_w4_a16 = w4_a16;
  t->matmul_w8_a16 = w8_a16;
  t->matmul_w6_a8 = w6_a8<false>;
  t->matmul_w6_a16 = w6_a16;
  t->matmul_q4k_a8 = q4k_a8<false>;
  t->matmul_q4k_a16 = q4k_a16;
  t->matmul_q6k_a8 = q6k_a8<false>;
  t->matmul_q6k_a16 = q6k_a16;
  t->matmul_q5k_a8 = q5k_a8<false>;
  t->matmul_q5k_a16 = q5k_a16;
  t->matmul_mxfp4_a8 = mxfp4_a8<false>;
  t->matmul_mxfp4_a16 = mxfp4_a16;
}

}  // namespace edge
