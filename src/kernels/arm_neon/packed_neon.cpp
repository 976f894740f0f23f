// aarch64 Advanced SIMD packed kernels (packed_api.h over the layout of quant/packed.h):
// activation quantisation (bit-exact with the reference) and the W4A16 / W8A16 matmuls.
// The int8 dot-product paths are in arm_dotprod/ and arm_i8mm/.
//
// W4 layout recap: a 64-byte block holds k0..k0+7 of the panel's 16 rows; its 16-byte
// quarter q holds rows 4q..4q+3, lane (4 bytes) = one row, low nibbles k0..k0+3, high
// nibbles k0+4..k0+7. So one quarter widened to f32 gives four row vectors over 4 k that
// multiply the same x[k0..k0+3] vector.
#include <arm_neon.h>

#include "core/check.h"
#include "kernels/arm_neon/neon_math.h"
#include "kernels/packed_api.h"

namespace edge {
namespace {

using neon::store_panel;

// Per block: amax, inv = 127 / amax, q = round-half-even(x * inv) clamped to +-127, exactly
// the reference's operations (vrndnq = nearbyint in the default rounding mode).
void quantize_act(const float* x, const QuantizedActivations& a, int64_t t0, int64_t t1) {
  CHECK(a.group > 0 && a.k % a.group == 0 && a.group % 16 == 0);
  const int64_t nb = a.k / a.group;
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t b = 0; b < nb; ++b) {
      const float* xb = x + t * a.k + b * a.group;
      int8_t* qb = a.q + t * a.k + b * a.group;
      float32x4_t m = vdupq_n_f32(0.0f);
      for (int i = 0; i < a.group; i += 4) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(xb + i)));
      const float amax = vmaxvq_f32(m);
      const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
      const float32x4_t lo = vdupq_n_f32(-127.0f), hi = vdupq_n_f32(127.0f);
      int32x4_t sum = vdupq_n_s32(0);
      for (int i = 0; i < a.group; i += 8) {
        int32x4_t q[2];
        for (int h = 0; h < 2; ++h) {
          const float32x4_t v = vrndnq_f32(vmulq_n_f32(vld1q_f32(xb + i + 4 * h), inv));
          q[h] = vcvtq_s32_f32(vminq_f32(hi, vmaxq_f32(lo, v)));
          sum = vaddq_s32(sum, q[h]);
        }
        const int16x8_t q16 = vcombine_s16(vmovn_s32(q[0]), vmovn_s32(q[1]));
        vst1_s8(qb + i, vmovn_s16(q16));
      }
      a.scales[t * nb + b] = amax / 127.0f;
      a.sums[t * nb + b] = vaddvq_s32(sum);
    }
  }
}

// Row sums of 16 vectors r[0..15] as 4 vectors: out[q] lane j = sum of r[4q + j].
inline void reduce16(const float32x4_t* r, float32x4_t* out) {
  for (int q = 0; q < 4; ++q)
    out[q] = vpaddq_f32(vpaddq_f32(r[4 * q], r[4 * q + 1]), vpaddq_f32(r[4 * q + 2], r[4 * q + 3]));
}

// acc4[j] += row j of c (16 int8 = 4 rows x 4 k) widened to f32, times x (those 4 k).
inline void fma_rows(int8x16_t c, float32x4_t xv, float32x4_t* acc4) {
  const int16x8_t w01 = vmovl_s8(vget_low_s8(c)), w23 = vmovl_s8(vget_high_s8(c));
  acc4[0] = vfmaq_f32(acc4[0], vcvtq_f32_s32(vmovl_s16(vget_low_s16(w01))), xv);
  acc4[1] = vfmaq_f32(acc4[1], vcvtq_f32_s32(vmovl_s16(vget_high_s16(w01))), xv);
  acc4[2] = vfmaq_f32(acc4[2], vcvtq_f32_s32(vmovl_s16(vget_low_s16(w23))), xv);
  acc4[3] = vfmaq_f32(acc4[3], vcvtq_f32_s32(vmovl_s16(vget_high_s16(w23))), xv);
}

// Integer-weight dots of one (panel, group) cell with one token's x[g*G .. g*G+G), as f32:
// dot[q] lane j = row 4q + j. W4 codes are offset by -8 when symmetric (exact in int8);
// *xsum gets the sum of x (the asymmetric min's term).
void a16_cell_dots(const uint8_t* cell, PackedKind kind, int32_t group, const float* x,
                   float32x4_t* dot, float* xsum) {
  float32x4_t acc[16];
  for (float32x4_t& v : acc) v = vdupq_n_f32(0.0f);
  float32x4_t xs = vdupq_n_f32(0.0f);
  if (kind == PackedKind::kW8) {
    for (int b = 0; b < group / 4; ++b) {
      const float32x4_t xv = vld1q_f32(x + 4 * b);
      for (int q = 0; q < 4; ++q)
        fma_rows(vld1q_s8(reinterpret_cast<const int8_t*>(cell + 64 * b + 16 * q)), xv, acc + 4 * q);
    }
  } else {
    const int8x16_t off = vdupq_n_s8(kind == PackedKind::kW4Asym ? 0 : 8);
    for (int b = 0; b < group / 8; ++b) {
      const float32x4_t x_lo = vld1q_f32(x + 8 * b), x_hi = vld1q_f32(x + 8 * b + 4);
      xs = vaddq_f32(xs, vaddq_f32(x_lo, x_hi));
      for (int q = 0; q < 4; ++q) {
        const uint8x16_t raw = vld1q_u8(cell + 64 * b + 16 * q);
        fma_rows(vsubq_s8(vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(15))), off), x_lo, acc + 4 * q);
        fma_rows(vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(raw, 4)), off), x_hi, acc + 4 * q);
      }
    }
  }
  reduce16(acc, dot);
  *xsum = vaddvq_f32(xs);
}

// y16 += the cell's contribution: dot * scale, plus min * sum(x) when asymmetric.
void a16_cell(const uint8_t* cell, PackedKind kind, int32_t group, const float* x, float32x4_t* y16) {
  float32x4_t dot[4];
  float xsum = 0.0f;
  a16_cell_dots(cell, kind, group, x, dot, &xsum);
  const int64_t scale_off = kind == PackedKind::kW8 ? group * 16 : group * 8;
  const float16_t* scales = reinterpret_cast<const float16_t*>(cell + scale_off);
  for (int q = 0; q < 4; ++q) {
    y16[q] = vfmaq_f32(y16[q], dot[q], vcvt_f32_f16(vld1_f16(scales + 4 * q)));
    if (kind == PackedKind::kW4Asym)
      y16[q] = vfmaq_n_f32(y16[q], vcvt_f32_f16(vld1_f16(scales + 16 + 4 * q)), xsum);
  }
}

// W4 (sym/asym) and W8 alike: the cell's kind picks the unpacking.
void matmul_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
                float* y) {
  CHECK(w.k % w.fmt.group == 0);
  const int64_t ng = w.k / w.fmt.group, cb = packed_cell_bytes(w.fmt.kind, w.fmt.group);
  for (int64_t p = p0; p < p1; ++p)
    for (int64_t t = 0; t < n; ++t) {
      float32x4_t y16[4];
      for (float32x4_t& v : y16) v = vdupq_n_f32(0.0f);
      for (int64_t g = 0; g < ng; ++g)
        a16_cell(w.data + (p * ng + g) * cb, w.fmt.kind, w.fmt.group, x + t * w.k + g * w.fmt.group,
                 y16);
      store_panel(w, p, t, y16, y);
    }
}

}  // namespace

void install_packed_neon(PackedKernels* t) {
  t->name = "neon";
  t->quantize_act = quantize_act;
  t->matmul_w4_a16 = matmul_a16;
  t->matmul_w8_a16 = matmul_a16;
}

}  // namespace edge
