// aarch64 Advanced SIMD packed kernels (packed_api.h over the layout of quant/packed.h):
// activation quantisation (bit-exact with the reference), the A16 matmul of every kind
// (W4 sym/asym, W8, W6; Q4K, Q5K and Q6K through their own tile, shared by every aarch64
// table) and A8 matmuls by widening multiplies for CPUs without the dot product
// (arm_dotprod/ and arm_i8mm/ replace them where they run). The loop nest is
// kernels/packed_blocking.h; this file holds the A16 register tiles and the A8 tiles'
// widening-multiply primitive (the tiles and the cell unpacking: arm_neon/packed_neon_tile.h,
// packed_kquant_tile.h).
#include <arm_neon.h>

#include "core/check.h"
#include "kernels/arm_neon/neon_math.h"
#include "kernels/arm_neon/packed_kquant_tile.h"
#include "kernels/arm_neon/packed_neon_tile.h"
#include "kernels/packed_api.h"
#include "kernels/packed_blocking.h"
#include "kernels/quantize_act.h"

namespace edge {
namespace {

using arm_packed::zero;
using neon::store_panel;

// The activation quantiser's primitives (kernels/quantize_act.h): 8 floats a chunk (two
// vectors, one 8-byte store), rounded half to even in float (vrndnq = nearbyint in the
// default rounding mode), clamped in float, then converted.
struct ActQuantPrims {
  static constexpr int kW = 8;
  using Max = float32x4_t;
  using Codes = int32x4x2_t;
  using Sum = int32x4_t;
  static Max max_zero() { return vdupq_n_f32(0.0f); }
  static Sum sum_zero() { return vdupq_n_s32(0); }
  static Max abs_max(Max m, const float* x) {
    m = vmaxq_f32(m, vabsq_f32(vld1q_f32(x)));
    return vmaxq_f32(m, vabsq_f32(vld1q_f32(x + 4)));
  }
  static float hmax(Max m) { return vmaxvq_f32(m); }
  static Codes quantize(const float* x, float inv) {
    const float32x4_t lo = vdupq_n_f32(-127.0f), hi = vdupq_n_f32(127.0f);
    Codes q;
#pragma GCC unroll 16
    for (int h = 0; h < 2; ++h) {
      const float32x4_t v = vrndnq_f32(vmulq_n_f32(vld1q_f32(x + 4 * h), inv));
      q.val[h] = vcvtq_s32_f32(vminq_f32(hi, vmaxq_f32(lo, v)));
    }
    return q;
  }
  static Sum add(Sum s, Codes q) {
    return vaddq_s32(vaddq_s32(s, q.val[0]), q.val[1]);
  }
  static void store(int8_t* p, Codes q) {
    vst1_s8(p, vmovn_s16(vcombine_s16(vmovn_s32(q.val[0]), vmovn_s32(q.val[1]))));
  }
  static int32_t hsum(Sum s) {
    return vaddvq_s32(s);
  }
};

void quantize_act(const float* x, const QuantizedActivations& a, int64_t t0, int64_t t1) {
  CHECK(a.group > 0 && a.k % a.group == 0 && a.group % 16 == 0);
  packed::quantize_act<ActQuantPrims>(x, a, t0, t1);
}

// Quarter codes transposed from lanes of rows (byte 4j + i = row j, k i) to lanes of k
// (byte 4i + j): widened, vector i is then rows 4q..4q+3 at k i, which multiplies one lane
// of x, so a token needs 4 accumulators per panel rather than 16 (and no row reduction).
inline int8x16_t by_k(uint8x16_t c, int8x16_t offset, uint8x16_t perm) {
  return vsubq_s8(vreinterpretq_s8_u8(vqtbl1q_u8(c, perm)), offset);
}

// dot += the 4 k of plane c (transposed, offset removed) times xv = x at those k.
inline void fma_by_k(int8x16_t c, float32x4_t xv, float32x4_t& dot) {
  const int16x8_t lo = vmovl_s8(vget_low_s8(c)), hi = vmovl_s8(vget_high_s8(c));
  dot = vfmaq_laneq_f32(dot, vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), xv, 0);
  dot = vfmaq_laneq_f32(dot, vcvtq_f32_s32(vmovl_s16(vget_high_s16(lo))), xv, 1);
  dot = vfmaq_laneq_f32(dot, vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), xv, 2);
  dot = vfmaq_laneq_f32(dot, vcvtq_f32_s32(vmovl_s16(vget_high_s16(hi))), xv, 3);
}

// dot[t][q] (rows 4q..4q+3 of token t) += the integer-valued weights (code - offset) of
// code blocks [b0, b1) of `codes` times x in f32, xg[t] token t's x at the group's first k.
// Each weight quarter is unpacked once and used for every token.
template <PackedKind K, int T>
inline void dot_blocks_a16(const uint8_t* codes, int32_t group, int b0, int b1,
                           const float* const (&xg)[T], float32x4_t (&dot)[T][4]) {
  constexpr int kP = arm_packed::planes(K);
  const int8x16_t off = vdupq_n_s8(static_cast<int8_t>(arm_packed::offset(K)));
  static constexpr uint8_t kPerm[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
  const uint8x16_t perm = vld1q_u8(kPerm);
  for (int b = b0; b < b1; ++b)
#pragma GCC unroll 16
    for (int q = 0; q < 4; ++q) {
      uint8x16_t c[kP];
      arm_packed::quarter<K>(codes, group, b, q, c);
#pragma GCC unroll 16
      for (int h = 0; h < kP; ++h) {
        const int8x16_t ck = by_k(c[h], off, perm);
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) fma_by_k(ck, vld1q_f32(xg[t] + 4 * (kP * b + h)), dot[t][q]);
      }
    }
}

// f32 activations, every kind: per group, dot[t][q] = the integer-valued weights (code -
// offset) times x in f32, then y += dot * scale (+ min * sum(x) for W4 asym), the same
// per-group arithmetic as the reference's dequantised sum up to f32 rounding. Each weight
// quarter is unpacked once and used for every token of the tile.
struct A16Tile {
  static constexpr int kTokens = 4;
  const PackedMatrixView& w;
  const float* x;  // [n, w.k]
  float* y;        // [n, w.n]
  int64_t ahead;   // prefetch distance on the weight stream (decode only; 0: none)

  template <PackedKind K, int T>
  void panels(int64_t pb, int64_t pe, int64_t t0) const {
    arm_packed::each_cell<T>(w, arm_packed::cell_bytes(K, w.fmt.group), pb, pe, t0, ahead, y,
                             [&](const uint8_t* cell, int64_t g, float32x4_t(&y16)[T][4]) {
                               group<K, T>(cell, g, t0, y16);
                             });
  }

  // y16 (tokens t0.., the panel's rows) += group g's share from its cell.
  template <PackedKind K, int T>
  void group(const uint8_t* cell, int64_t g, int64_t t0, float32x4_t (&y16)[T][4]) const {
    constexpr int kP = arm_packed::planes(K);
    const int32_t G = w.fmt.group;
    const int64_t soff = arm_packed::scale_offset(K, G);
    const float* xg[T];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) xg[t] = x + (t0 + t) * w.k + g * G;
    float32x4_t dot[T][4];
    zero(dot);
    dot_blocks_a16<K, T>(cell, G, 0, G / (4 * kP), xg, dot);
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) {
      float xsum = 0.0f;
      if constexpr (K == PackedKind::kW4Asym) {
        float32x4_t xs = vdupq_n_f32(0.0f);
        for (int i = 0; i < G; i += 4) xs = vaddq_f32(xs, vld1q_f32(xg[t] + i));
        xsum = vaddvq_f32(xs);
      }
#pragma GCC unroll 16
      for (int q = 0; q < 4; ++q) {
        y16[t][q] = vfmaq_f32(y16[t][q], dot[t][q], arm_packed::scales4<K>(cell, soff, q));
        if constexpr (K == PackedKind::kW4Asym)
          y16[t][q] = vfmaq_n_f32(y16[t][q], arm_packed::halves4(cell, soff + 32, q), xsum);
      }
    }
  }

  template <int T>
  void run(int64_t pb, int64_t pe, int64_t t0) const {
    arm_packed::panels_by_kind<T>(*this, pb, pe, t0);
  }
};

void matmul_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
                float* y) {
  CHECK(w.k % w.fmt.group == 0);
  const int64_t ahead = n <= A16Tile::kTokens ? packed_tiling().prefetch_bytes : 0;
  packed::over_panels(A16Tile{w, x, y, ahead}, w, n, p0, p1);
}

// The k-quant cells (arm_neon/packed_kquant_tile.h) with f32 activations, every aarch64
// table's (the integer variants have no better f32 form): per super-block, sub-block by
// sub-block through Sub::run (Q4KFieldA16 / Q6KA16 below), each of those as A16Tile per
// group.
template <class Sub>
struct KQuantA16Tile {
  static constexpr int kTokens = A16Tile::kTokens;
  const PackedMatrixView& w;
  const float* x;  // [n, w.k]
  float* y;        // [n, w.n]
  int64_t ahead;   // prefetch distance on the weight stream (decode only; 0: none)

  template <int T>
  void run(int64_t pb, int64_t pe, int64_t t0) const {
    arm_packed::each_cell<T>(w, Sub::Cells::kCellBytes, pb, pe, t0, ahead, y,
                             [&](const uint8_t* cell, int64_t g, float32x4_t(&y16)[T][4]) {
                               const float* xg[T];
#pragma GCC unroll 16
                               for (int t = 0; t < T; ++t) xg[t] = x + (t0 + t) * w.k + g * 256;
                               for (int j = 0; j < Sub::Cells::kSubBlocks; ++j)
                                 Sub::template run<T>(cell, j, xg, y16);
                             });
  }
};

// Q4K and Q5K, per sub-block j of 32 k (Cells::chunk's 4 code blocks): dot = codes times x
// in f32, then y += dot * (d sc_j) - (dmin m_j) * sum(x over the 32 k), which is
// w = d sc_j code - dmin m_j summed, up to f32 rounding.
template <PackedKind K>
struct Q4KFieldA16 {
  using Cells = arm_packed::Q4KFieldCells<K>;

  // y16[t][q] += sub-block j's share, rows 4q..4q+3; xg[t] token t's x at the cell's k 0.
  template <int T>
  static void run(const uint8_t* cell, int j, const float* const (&xg)[T],
                  float32x4_t (&y16)[T][4]) {
    using namespace arm_packed;
    const float* xj[T];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) xj[t] = xg[t] + 32 * j;
    float32x4_t dot[T][4];
    zero(dot);
    dot_blocks_a16<K, T>(Cells::chunk(cell, j), 256, 0, 4, xj, dot);
    int32x4_t sc[4];
    q4k_scales(cell, j, sc);
    float xsum[T];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) {
      float32x4_t xs = vld1q_f32(xj[t]);
#pragma GCC unroll 8
      for (int i = 4; i < 32; i += 4) xs = vaddq_f32(xs, vld1q_f32(xj[t] + i));
      xsum[t] = vaddvq_f32(xs);
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const float32x4_t s = vmulq_f32(halves4(cell, kQ4KD, q), vcvtq_f32_s32(sc[q]));
      const float32x4_t m = vmulq_f32(halves4(cell, kQ4KDmin, q), q4k_mins_f32(cell, j, q));
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) {
        y16[t][q] = vfmaq_f32(y16[t][q], dot[t][q], s);
        y16[t][q] = vfmsq_f32(y16[t][q], m, vdupq_n_f32(xsum[t]));
      }
    }
  }
};

// Q6K, per sub-block j of 16 k (its chunk: a W6 group of 16): dot = (code - 32) times x in
// f32, then y += dot * (d sc_j), which is w = d sc_j (code - 32) summed, up to f32 rounding.
struct Q6KA16 {
  using Cells = arm_packed::Q6KCells;

  // y16[t][q] += sub-block j's share, rows 4q..4q+3; xg[t] token t's x at the cell's k 0.
  template <int T>
  static void run(const uint8_t* cell, int j, const float* const (&xg)[T],
                  float32x4_t (&y16)[T][4]) {
    using namespace arm_packed;
    const float* xj[T];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) xj[t] = xg[t] + 16 * j;
    float32x4_t dot[T][4];
    zero(dot);
    dot_blocks_a16<PackedKind::kW6, T>(q6k_chunk(cell, j), 16, 0, 2, xj, dot);
    int32x4_t sc[4];
    q6k_scales(cell, j, sc);
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const float32x4_t s = vmulq_f32(halves4(cell, kQ6KD, q), vcvtq_f32_s32(sc[q]));
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) y16[t][q] = vfmaq_f32(y16[t][q], dot[t][q], s);
    }
  }
};

// y[n, w.n] (panels [p0, p1)) for k-quant cells of kind Sub::Cells::kKind, f32 activations.
template <class Sub>
void kquant_matmul_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
                       float* y) {
  CHECK(w.fmt.kind == Sub::Cells::kKind && w.fmt.group == 256 && w.k % 256 == 0);
  const int64_t ahead = n <= A16Tile::kTokens ? packed_tiling().prefetch_bytes : 0;
  packed::over_panels(KQuantA16Tile<Sub>{w, x, y, ahead}, w, n, p0, p1);
}

// int8 activations without the dot product, the row-lane A8 tile's primitive
// (packed_neon_tile.h) by widening multiplies: vmull_s8 gives int16 products (at most
// 127 * 127), vpadal sums them pairwise into int32, so the per-group dot is exact as in the
// reference. Two accumulators per 4 rows (rows 4q, 4q+1 and 4q+2, 4q+3; two k-pair lanes
// each), so 2 tokens a tile.
struct WideningDot {
  static constexpr int kTokens = 2;
  struct Acc {
    int32x4_t lo, hi;
  };
  static Acc zero() { return Acc{vdupq_n_s32(0), vdupq_n_s32(0)}; }
  static void add(Acc& acc, int8x16_t codes, int8x16_t act) {
    acc.lo = vpadalq_s16(acc.lo, vmull_s8(vget_low_s8(codes), vget_low_s8(act)));
    acc.hi = vpadalq_s16(acc.hi, vmull_high_s8(codes, act));
  }
  static int32x4_t sum(const Acc& acc) { return vpaddq_s32(acc.lo, acc.hi); }
};

void matmul_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
               float* y) {
  CHECK(a.k == w.k && a.group == w.fmt.group && w.k % w.fmt.group == 0);
  const int64_t ahead = a.n <= WideningDot::kTokens ? packed_tiling().prefetch_bytes : 0;
  packed::over_panels(arm_packed::RowA8Tile<WideningDot>{w, a, y, ahead}, w, a.n, p0, p1);
}

}  // namespace

void install_packed_neon(PackedKernels* t) {
  t->name = "neon";
  t->quantize_act = quantize_act;
  t->matmul_w4_a16 = matmul_a16;
  t->matmul_w8_a16 = matmul_a16;
  t->matmul_w6_a16 = matmul_a16;
  t->matmul_w4_a8 = matmul_a8;
  t->matmul_w8_a8 = matmul_a8;
  t->matmul_w6_a8 = matmul_a8;
  t->matmul_q4k_a16 = kquant_matmul_a16<Q4KFieldA16<PackedKind::kQ4K>>;
  t->matmul_q4k_a8 = arm_packed::kquant_matmul_a8<WideningDot, arm_packed::Q4KCells>;
  t->matmul_q5k_a16 = kquant_matmul_a16<Q4KFieldA16<PackedKind::kQ5K>>;
  t->matmul_q5k_a8 = arm_packed::kquant_matmul_a8<WideningDot, arm_packed::Q5KCells>;
  t->matmul_q6k_a16 = kquant_matmul_a16<Q6KA16>;
  t->matmul_q6k_a8 = arm_packed::kquant_matmul_a8<WideningDot, arm_packed::Q6KCells>;
  t->matmul_mxfp4_a16 = matmul_a16;
  t->matmul_mxfp4_a8 = matmul_a8;
}

}  // namespace edge
