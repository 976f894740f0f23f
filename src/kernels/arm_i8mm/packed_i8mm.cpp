// aarch64 int8 matrix-multiply (Armv8.6 I8MM SMMLA, hwcap2 i8mm) packed kernels: W4A8 and
// W8A8 over two tokens at a time. The rest of the table is the dot-product variant's.
//
// SMMLA (vmmlaq_s32) multiplies a 2x8 int8 matrix by the transpose of another 2x8 one into
// a 2x2 int32 tile: rows (r, r+1) x tokens (t, t+1) = [r t, r t+1, r+1 t, r+1 t+1]. The
// packed layout gives 2 rows x 8 k by zipping 32-bit lanes: for W4, the low nibbles of a
// 16-byte quarter are rows 4q..4q+3 over k0..k0+3 and the high nibbles the same rows over
// k0+4..k0+7, so zip1(lo, hi) = rows (4q, 4q+1) over k0..k0+7 and zip2 = rows (4q+2, 4q+3);
// for W8 the two 4-k blocks 2c and 2c+1 play lo and hi. Two tokens' 8 codes side by side
// are the other operand. Each SMMLA does 32 multiply-adds, twice an SDOT; a lone last
// token is paired with itself (decode pays the same instructions as with SDOT).
#include <arm_neon.h>

#include <algorithm>

#include "core/check.h"
#include "kernels/packed_api.h"

namespace edge {
namespace {

// Integer 2x2 tiles of one (panel, group) cell: acc[p] = rows (2p, 2p+1) x tokens (q0, q1).
void cell_tiles(const uint8_t* cell, PackedKind kind, int32_t group, const int8_t* q0,
                const int8_t* q1, int32x4_t* acc) {
  for (int p = 0; p < 8; ++p) acc[p] = vdupq_n_s32(0);
  const uint8x16_t mask = vdupq_n_u8(15);
  for (int c = 0; c < group / 8; ++c) {  // k = 8c .. 8c+7
    const int8x16_t a = vcombine_s8(vld1_s8(q0 + 8 * c), vld1_s8(q1 + 8 * c));
    for (int q = 0; q < 4; ++q) {
      int32x4_t lo, hi;
      if (kind == PackedKind::kW8) {
        lo = vreinterpretq_s32_u8(vld1q_u8(cell + 128 * c + 16 * q));
        hi = vreinterpretq_s32_u8(vld1q_u8(cell + 128 * c + 64 + 16 * q));
      } else {
        const uint8x16_t raw = vld1q_u8(cell + 64 * c + 16 * q);
        lo = vreinterpretq_s32_u8(vandq_u8(raw, mask));
        hi = vreinterpretq_s32_u8(vshrq_n_u8(raw, 4));
      }
      acc[2 * q] = vmmlaq_s32(acc[2 * q], vreinterpretq_s8_s32(vzip1q_s32(lo, hi)), a);
      acc[2 * q + 1] = vmmlaq_s32(acc[2 * q + 1], vreinterpretq_s8_s32(vzip2q_s32(lo, hi)), a);
    }
  }
}

// Per-token operands of a group, laid out as a tile's lanes [t0, t1, t0, t1].
struct TokenPair {
  float32x4_t sa;    // activation scales
  int32x4_t qsum;    // activation code sums
};

// y[p] += the cell's f32 contribution of tile p (the reference's group_a8): sym
// (dot - 8 qsum) s sa, asym dot s sa + min sa qsum, W8 dot s sa.
void combine(const uint8_t* cell, PackedKind kind, int32_t group, const TokenPair& tp,
             const int32x4_t* acc, float32x4_t* y) {
  const int64_t scale_off = kind == PackedKind::kW8 ? group * 16 : group * 8;
  const float16_t* scales = reinterpret_cast<const float16_t*>(cell + scale_off);
  const float32x4_t sa_qsum = vmulq_f32(tp.sa, vcvtq_f32_s32(tp.qsum));
  for (int q = 0; q < 4; ++q) {
    const float32x4_t s4 = vcvt_f32_f16(vld1_f16(scales + 4 * q));
    const float32x4_t s[2] = {vzip1q_f32(s4, s4), vzip2q_f32(s4, s4)};  // [r r r+1 r+1]
    for (int h = 0; h < 2; ++h) {
      int32x4_t d = acc[2 * q + h];
      if (kind == PackedKind::kW4Sym) d = vsubq_s32(d, vshlq_n_s32(tp.qsum, 3));
      y[2 * q + h] = vfmaq_f32(y[2 * q + h], vcvtq_f32_s32(d), vmulq_f32(s[h], tp.sa));
      if (kind == PackedKind::kW4Asym) {
        const float32x4_t m4 = vcvt_f32_f16(vld1_f16(scales + 16 + 4 * q));
        const float32x4_t m = h ? vzip2q_f32(m4, m4) : vzip1q_f32(m4, m4);
        y[2 * q + h] = vfmaq_f32(y[2 * q + h], m, sa_qsum);
      }
    }
  }
}

// Writes the 16 rows of tokens t0 and (if t1 != t0) t1, leaving padded rows alone.
void store_pair(const PackedMatrixView& w, int64_t p, int64_t t0, int64_t t1, const float32x4_t* y,
                float* out) {
  float rows[2][16];
  for (int q = 0; q < 4; ++q) {
    vst1q_f32(rows[0] + 4 * q, vuzp1q_f32(y[2 * q], y[2 * q + 1]));
    vst1q_f32(rows[1] + 4 * q, vuzp2q_f32(y[2 * q], y[2 * q + 1]));
  }
  const int64_t r0 = p * kPanelRows, n = std::min<int64_t>(kPanelRows, w.n - r0);
  for (int64_t r = 0; r < n; ++r) out[t0 * w.n + r0 + r] = rows[0][r];
  if (t1 != t0)
    for (int64_t r = 0; r < n; ++r) out[t1 * w.n + r0 + r] = rows[1][r];
}

// W4 (sym/asym) and W8 alike: the cell's kind picks the unpacking and the combine.
void matmul_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
               float* y) {
  CHECK(a.k == w.k && a.group == w.fmt.group && w.k % w.fmt.group == 0);
  const int64_t ng = w.k / w.fmt.group, cb = packed_cell_bytes(w.fmt.kind, w.fmt.group);
  for (int64_t p = p0; p < p1; ++p)
    for (int64_t t0 = 0; t0 < a.n; t0 += 2) {
      const int64_t t1 = std::min(t0 + 1, a.n - 1);
      float32x4_t acc_f[8];
      for (float32x4_t& v : acc_f) v = vdupq_n_f32(0.0f);
      for (int64_t g = 0; g < ng; ++g) {
        const uint8_t* cell = w.data + (p * ng + g) * cb;
        int32x4_t acc[8];
        cell_tiles(cell, w.fmt.kind, w.fmt.group, a.q + t0 * a.k + g * a.group,
                   a.q + t1 * a.k + g * a.group, acc);
        const float sa[4] = {a.scales[t0 * ng + g], a.scales[t1 * ng + g], a.scales[t0 * ng + g],
                             a.scales[t1 * ng + g]};
        const int32_t qs[4] = {a.sums[t0 * ng + g], a.sums[t1 * ng + g], a.sums[t0 * ng + g],
                               a.sums[t1 * ng + g]};
        combine(cell, w.fmt.kind, w.fmt.group, TokenPair{vld1q_f32(sa), vld1q_s32(qs)}, acc, acc_f);
      }
      store_pair(w, p, t0, t1, acc_f, y);
    }
}

}  // namespace

void install_packed_i8mm(PackedKernels* t) {
  install_packed_dotprod(t);
  t->name = "neon_i8mm";
  t->matmul_w4_a8 = matmul_a8;
  t->matmul_w8_a8 = matmul_a8;
}

}  // namespace edge
