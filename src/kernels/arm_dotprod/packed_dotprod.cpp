// aarch64 dot-product (Armv8.2 SDOT, hwcap asimddp) packed kernels: W4A8, W6A8, W8A8. The
// rest of the table is the NEON variant's (arm_neon/packed_neon.cpp), which every CPU with
// SDOT also runs.
//
// The layout of quant/packed.h is already SDOT's operand layout: a 16-byte quarter of a
// code block holds rows 4q..4q+3, lane (4 bytes) = one row over 4 consecutive k. SDOT
// multiplies it lane by lane with the 4 activation codes of those k broadcast to every
// lane, so one instruction adds 4 k of 4 rows. W4 codes (0..15, low nibbles k0..k0+3,
// high nibbles k0+4..k0+7) are used unsigned-as-signed; the -8 offset / asymmetric min
// comes back per group through the activation block's code sum, as in the reference. W6
// codes (0..63) are the W4 nibbles with bits 4-5 from the high plane, offset 32.
#include <arm_neon.h>

#include "core/check.h"
#include "kernels/arm_neon/neon_math.h"
#include "kernels/packed_api.h"

namespace edge {
namespace {

using neon::store_panel;

inline int8x16_t broadcast4(const int8_t* q) {
  int32_t v;
  __builtin_memcpy(&v, q, 4);
  return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

// Integer dots of one W4 (panel, group) cell with one token's group of codes: dot[q] lane j
// = row 4q + j.
inline void w4_cell_dots(const uint8_t* cell, int32_t group, const int8_t* q, int32x4_t* dot) {
  for (int r = 0; r < 4; ++r) dot[r] = vdupq_n_s32(0);
  const uint8x16_t mask = vdupq_n_u8(15);
  for (int b = 0; b < group / 8; ++b) {
    const int8x16_t a_lo = broadcast4(q + 8 * b), a_hi = broadcast4(q + 8 * b + 4);
    for (int r = 0; r < 4; ++r) {
      const uint8x16_t raw = vld1q_u8(cell + 64 * b + 16 * r);
      dot[r] = vdotq_s32(dot[r], vreinterpretq_s8_u8(vandq_u8(raw, mask)), a_lo);
      dot[r] = vdotq_s32(dot[r], vreinterpretq_s8_u8(vshrq_n_u8(raw, 4)), a_hi);
    }
  }
}

// The same for a W6 cell: the W4 nibbles, plus bits 4-5 from high block b/2 (bit pairs
// 0-1 / 2-3 for an even b's low / high nibbles, 4-5 / 6-7 for an odd b's; packed.h).
inline void w6_cell_dots(const uint8_t* cell, int32_t group, const int8_t* q, int32x4_t* dot) {
  for (int r = 0; r < 4; ++r) dot[r] = vdupq_n_s32(0);
  const uint8x16_t mask = vdupq_n_u8(15), two = vdupq_n_u8(3);
  for (int b = 0; b < group / 8; ++b) {
    const int8x16_t a_lo = broadcast4(q + 8 * b), a_hi = broadcast4(q + 8 * b + 4);
    for (int r = 0; r < 4; ++r) {
      const uint8x16_t raw = vld1q_u8(cell + 64 * b + 16 * r);
      uint8x16_t hb = vld1q_u8(cell + 8 * group + 64 * (b / 2) + 16 * r);
      if (b % 2 == 1) hb = vshrq_n_u8(hb, 4);
      const uint8x16_t lo = vorrq_u8(vandq_u8(raw, mask), vshlq_n_u8(vandq_u8(hb, two), 4));
      const uint8x16_t hi =
          vorrq_u8(vshrq_n_u8(raw, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 2), two), 4));
      dot[r] = vdotq_s32(dot[r], vreinterpretq_s8_u8(lo), a_lo);
      dot[r] = vdotq_s32(dot[r], vreinterpretq_s8_u8(hi), a_hi);
    }
  }
}

// The same for a W8 cell (int8 codes, a block of 64 bytes per 4 k).
inline void w8_cell_dots(const uint8_t* cell, int32_t group, const int8_t* q, int32x4_t* dot) {
  for (int r = 0; r < 4; ++r) dot[r] = vdupq_n_s32(0);
  for (int b = 0; b < group / 4; ++b) {
    const int8x16_t a = broadcast4(q + 4 * b);
    for (int r = 0; r < 4; ++r)
      dot[r] = vdotq_s32(dot[r], vld1q_s8(reinterpret_cast<const int8_t*>(cell + 64 * b + 16 * r)), a);
  }
}

// y16 += the cell's f32 contribution (the reference's group_a8 per row): sym
// (dot - 8 qsum) s sa, asym dot s sa + min sa qsum, W6 (dot - 32 qsum) s sa, W8 dot s sa.
void a8_cell(const uint8_t* cell, PackedKind kind, int32_t group, const int8_t* q, float sa,
             int32_t qsum, float32x4_t* y16) {
  int32x4_t dot[4];
  if (kind == PackedKind::kW8)
    w8_cell_dots(cell, group, q, dot);
  else if (kind == PackedKind::kW6)
    w6_cell_dots(cell, group, q, dot);
  else
    w4_cell_dots(cell, group, q, dot);
  const int64_t scale_off = kind == PackedKind::kW8   ? group * 16
                            : kind == PackedKind::kW6 ? group * 12
                                                      : group * 8;
  const float16_t* scales = reinterpret_cast<const float16_t*>(cell + scale_off);
  for (int r = 0; r < 4; ++r) {
    int32x4_t d = dot[r];
    if (kind == PackedKind::kW4Sym) d = vsubq_s32(d, vdupq_n_s32(8 * qsum));
    if (kind == PackedKind::kW6) d = vsubq_s32(d, vdupq_n_s32(32 * qsum));
    const float32x4_t s = vmulq_n_f32(vcvt_f32_f16(vld1_f16(scales + 4 * r)), sa);
    y16[r] = vfmaq_f32(y16[r], vcvtq_f32_s32(d), s);
    if (kind == PackedKind::kW4Asym) {
      const float32x4_t mn = vcvt_f32_f16(vld1_f16(scales + 16 + 4 * r));
      y16[r] = vfmaq_n_f32(y16[r], mn, sa * static_cast<float>(qsum));
    }
  }
}

// W4 (sym/asym), W6 and W8 alike: a8_cell reads the kind.
void matmul_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
               float* y) {
  CHECK(a.k == w.k && a.group == w.fmt.group && w.k % w.fmt.group == 0);
  const int64_t ng = w.k / w.fmt.group, cb = packed_cell_bytes(w.fmt.kind, w.fmt.group);
  for (int64_t p = p0; p < p1; ++p)
    for (int64_t t = 0; t < a.n; ++t) {
      float32x4_t y16[4];
      for (float32x4_t& v : y16) v = vdupq_n_f32(0.0f);
      for (int64_t g = 0; g < ng; ++g)
        a8_cell(w.data + (p * ng + g) * cb, w.fmt.kind, w.fmt.group, a.q + t * a.k + g * a.group,
                a.scales[t * ng + g], a.sums[t * ng + g], y16);
      store_panel(w, p, t, y16, y);
    }
}

}  // namespace

void install_packed_dotprod(PackedKernels* t) {
  install_packed_neon(t);
  t->name = "neon_dotprod";
  t->matmul_w4_a8 = matmul_a8;
  t->matmul_w8_a8 = matmul_a8;
  t->matmul_w6_a8 = matmul_a8;
}

}  // namespace edge
