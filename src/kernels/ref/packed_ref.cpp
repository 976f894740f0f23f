// Scalar reference for the packed kernels (packed_api.h): plain loops over the layout of
// quant/packed.h, one weight at a time. The tests hold every SIMD variant to these. The A8
// forms do the same integer-per-group arithmetic as the SIMD ones (int32 dot per group,
// then one float combine), so the two differ only by float summation order.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/half.h"
#include "kernels/packed_api.h"
#include "quant/mxfp4.h"

namespace edge {
namespace {

// One (panel, group) cell of a packed matrix, decoded weight by weight.
struct Cell {
  const uint8_t* p;
  int32_t group;

  // W4: row r (0..15), kk (0..group-1) -> code 0..15.
  int w4_code(int r, int kk) const {
    uint8_t byte = p[(kk / 8) * 64 + r * 4 + (kk % 4)];
    return (kk % 8) < 4 ? (byte & 15) : (byte >> 4);
  }
  // W6: code 0..63 = W4 nibble | top 2 bits from high block kk/16 (bit pair (kk%16)/4).
  int w6_code(int r, int kk) const {
    const uint8_t hb = p[int64_t{group} * 8 + (kk / 16) * 64 + r * 4 + (kk % 4)];
    return w4_code(r, kk) | (((hb >> (2 * ((kk % 16) / 4))) & 3) << 4);
  }
  // W8: int8 code.
  int w8_code(int r, int kk) const {
    return static_cast<int8_t>(p[(kk / 4) * 64 + r * 4 + (kk % 4)]);
  }
  float half_at(int64_t off, int r) const {
    uint16_t h;
    std::memcpy(&h, p + off + 2 * r, 2);
    return f16_to_f32(h);
  }
  float w4_scale(int r) const { return half_at(int64_t{group} * 8, r); }
  float w4_min(int r) const { return half_at(int64_t{group} * 8 + 32, r); }
  float w8_scale(int r) const { return half_at(int64_t{group} * 16, r); }
  float w6_scale(int r) const { return half_at(int64_t{group} * 12, r); }
  // Q4K (G = 256): sub-block scale and min of sub-block j (u8), d and dmin (fp16), then
  // the codes (W4 layout) from byte 320.
  int q4k_sc(int j, int r) const { return p[16 * j + r]; }
  int q4k_m(int j, int r) const { return p[128 + 32 * (j / 2) + 2 * r + j % 2]; }
  float q4k_d(int r) const { return half_at(256, r); }
  float q4k_dmin(int r) const { return half_at(288, r); }
  int q4k_code(int r, int kk) const { return Cell{p + 320, group}.w4_code(r, kk); }
  // Q5K (G = 256): Q4K's per-row fields, then the codes (0..31) from byte 320 in chunks of
  // 320 bytes per 32 k: the W4 layout of a group of 32, then a high block whose byte
  // 4 r + kk % 4 holds bit 4 of code (r, kk) in bit kk / 4 (kk within the chunk).
  int q5k_code(int r, int kk) const {
    const uint8_t* chunk = p + 320 + 320 * (kk / 32);
    const int k32 = kk % 32;
    return Cell{chunk, 32}.w4_code(r, k32) | ((chunk[256 + 4 * r + k32 % 4] >> (k32 / 4)) & 1) << 4;
  }
  // Q6K (G = 256): int8 scale of sub-block j (16 weights), d (fp16), then the codes (0..63)
  // from byte 288 in chunks of 192 bytes, each the W6 layout of a group of 16.
  int q6k_sc(int j, int r) const { return static_cast<int8_t>(p[32 * (j / 2) + 2 * r + j % 2]); }
  float q6k_d(int r) const { return half_at(256, r); }
  int q6k_code(int r, int kk) const {
    return Cell{p + 288 + 192 * (kk / 16), 16}.w6_code(r, kk % 16);
  }
  // MXFP4 (G = 32): the E2M1 code in the W4 layout as its doubled value (-12..12), and the
  // row's factor 2^(e - 128) from its E8M0 byte at 256 + r.
  int mxfp4_value(int r, int kk) const { return kMxfp4Doubled[w4_code(r, kk)]; }
  float mxfp4_scale_of(int r) const { return mxfp4_scale(p[256 + r]); }
  int w8_sum(int r) const {
    int16_t s;
    std::memcpy(&s, p + int64_t{group} * 16 + 32 + 2 * r, 2);
    return s;
  }
};

Cell cell_of(const PackedMatrixView& w, int64_t panel, int64_t g) {
  const int64_t cb = packed_cell_bytes(w.fmt.kind, w.fmt.group);
  return Cell{w.data + (panel * (w.k / w.fmt.group) + g) * cb, w.fmt.group};
}

// Weight (r, kk) of a cell as f32.
float weight(const Cell& c, PackedKind kind, int r, int kk) {
  switch (kind) {
    case PackedKind::kW4Sym:
      return static_cast<float>(c.w4_code(r, kk) - 8) * c.w4_scale(r);
    case PackedKind::kW4Asym:
      return static_cast<float>(c.w4_code(r, kk)) * c.w4_scale(r) + c.w4_min(r);
    case PackedKind::kW8:
      return static_cast<float>(c.w8_code(r, kk)) * c.w8_scale(r);
    case PackedKind::kW6:
      return static_cast<float>(c.w6_code(r, kk) - 32) * c.w6_scale(r);
    case PackedKind::kQ4K:    // GGML's order: (d * sc) * q - dmin * m, so a repack is exact
    case PackedKind::kQ5K: {  // the same fields, 5-bit codes
      const int j = kk / 32;
      const int q = kind == PackedKind::kQ4K ? c.q4k_code(r, kk) : c.q5k_code(r, kk);
      return c.q4k_d(r) * static_cast<float>(c.q4k_sc(j, r)) * static_cast<float>(q) -
             c.q4k_dmin(r) * static_cast<float>(c.q4k_m(j, r));
    }
    case PackedKind::kQ6K:  // GGML's order: (d * sc) * (q - 32)
      return c.q6k_d(r) * static_cast<float>(c.q6k_sc(kk / 16, r)) *
             static_cast<float>(c.q6k_code(r, kk) - 32);
    case PackedKind::kMxfp4:  // GGML's order: 2^(e - 128) * doubled value
      return c.mxfp4_scale_of(r) * static_cast<float>(c.mxfp4_value(r, kk));
  }
  return 0.0f;
}

void check_view(const PackedMatrixView& w) {
  if (w.fmt.kind == PackedKind::kQ4K || w.fmt.kind == PackedKind::kQ5K ||
      w.fmt.kind == PackedKind::kQ6K)
    CHECK(w.fmt.group == 256);
  else if (w.fmt.kind == PackedKind::kMxfp4)
    CHECK(w.fmt.group == 32);
  else
    CHECK(w.fmt.group == 32 || w.fmt.group == 64 || w.fmt.group == 128);
  CHECK(w.k % w.fmt.group == 0);
}

void quantize_act(const float* x, const QuantizedActivations& a, int64_t t0, int64_t t1) {
  CHECK(a.group > 0 && a.k % a.group == 0);
  const int64_t nb = a.k / a.group;
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t b = 0; b < nb; ++b) {
      const float* xb = x + t * a.k + b * a.group;
      int8_t* qb = a.q + t * a.k + b * a.group;
      float amax = 0.0f;
      for (int i = 0; i < a.group; ++i) amax = std::max(amax, std::fabs(xb[i]));
      const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
      int32_t sum = 0;
      for (int i = 0; i < a.group; ++i) {
        float v = std::nearbyint(xb[i] * inv);
        int q = static_cast<int>(std::min(127.0f, std::max(-127.0f, v)));
        qb[i] = static_cast<int8_t>(q);
        sum += q;
      }
      a.scales[t * nb + b] = amax / 127.0f;
      a.sums[t * nb + b] = sum;
    }
  }
}

// f32 activations: dequantise each weight and accumulate (double, as the gold standard).
void matmul_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
                float* y) {
  check_view(w);
  const int64_t ng = w.k / w.fmt.group;
  for (int64_t p = p0; p < p1; ++p) {
    for (int r = 0; r < kPanelRows; ++r) {
      const int64_t row = p * kPanelRows + r;
      if (row >= w.n) break;
      for (int64_t t = 0; t < n; ++t) {
        double acc = 0.0;
        for (int64_t g = 0; g < ng; ++g) {
          Cell c = cell_of(w, p, g);
          for (int kk = 0; kk < w.fmt.group; ++kk)
            acc += double{x[t * w.k + g * w.fmt.group + kk]} * weight(c, w.fmt.kind, r, kk);
        }
        y[t * w.n + row] = static_cast<float>(acc);
      }
    }
  }
}

void matmul_w4_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
                   float* y) {
  CHECK(w.fmt.is_w4());
  matmul_a16(w, x, n, p0, p1, y);
}

void matmul_w8_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
                   float* y) {
  CHECK(w.fmt.kind == PackedKind::kW8);
  matmul_a16(w, x, n, p0, p1, y);
}

void matmul_w6_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
                   float* y) {
  CHECK(w.fmt.kind == PackedKind::kW6);
  matmul_a16(w, x, n, p0, p1, y);
}

// Integer dot of one (row, group) with one token's block of activation codes, and its f32
// contribution: sym (code-8)*s*q*sa, asym (code*s + min)*q*sa, W8 code*s*q*sa, W6
// (code-32)*s*q*sa, MXFP4 value*2^(e-128)*q*sa. The unsigned W4/W6 codes are dotted as stored and
// the offset is taken off once per group (offset * qsum), as the SIMD kernels do.
int code_at(const Cell& c, PackedKind kind, int r, int kk) {
  switch (kind) {
    case PackedKind::kW8: return c.w8_code(r, kk);
    case PackedKind::kW6: return c.w6_code(r, kk);
    case PackedKind::kMxfp4:
      return c.mxfp4_value(r, kk);
    default: return c.w4_code(r, kk);
  }
}

float group_a8(const Cell& c, PackedKind kind, int r, const int8_t* q, float sa, int32_t qsum) {
  int32_t dot = 0;
  for (int kk = 0; kk < c.group; ++kk) dot += code_at(c, kind, r, kk) * q[kk];
  switch (kind) {
    case PackedKind::kW4Sym:
      return static_cast<float>(dot - 8 * qsum) * (c.w4_scale(r) * sa);
    case PackedKind::kW4Asym:
      return static_cast<float>(dot) * (c.w4_scale(r) * sa) + c.w4_min(r) * (sa * qsum);
    case PackedKind::kW8:
      return static_cast<float>(dot) * (c.w8_scale(r) * sa);
    case PackedKind::kW6:
      return static_cast<float>(dot - 32 * qsum) * (c.w6_scale(r) * sa);
    case PackedKind::kMxfp4:  // signed values: no offset (the x86 tiles add 12 and take it off)
      return static_cast<float>(dot) * (c.mxfp4_scale_of(r) * sa);
    case PackedKind::kQ4K:  // per super-block, not per group: matmul_q4k_a8
    case PackedKind::kQ5K:  // matmul_q5k_a8
    case PackedKind::kQ6K:  // matmul_q6k_a8
      CHECK_MSG(false, "group_a8: q4k, q5k and q6k cells go through their own matmuls");
  }
  return 0.0f;
}

// y[t, row] = the sum over the row's cells g of term(cell, r, t, g): the loop nest every A8
// form shares (per group, or per Q4K / Q6K super-block).
template <class Term>
void over_cells_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
                   float* y, Term term) {
  check_view(w);
  CHECK(a.k == w.k && a.group == w.fmt.group);
  const int64_t ng = w.k / w.fmt.group;
  for (int64_t p = p0; p < p1; ++p) {
    for (int r = 0; r < kPanelRows; ++r) {
      const int64_t row = p * kPanelRows + r;
      if (row >= w.n) break;
      for (int64_t t = 0; t < a.n; ++t) {
        float acc = 0.0f;
        for (int64_t g = 0; g < ng; ++g) acc += term(cell_of(w, p, g), r, t, g);
        y[t * w.n + row] = acc;
      }
    }
  }
}

void matmul_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
               float* y) {
  const int64_t ng = w.k / w.fmt.group;
  over_cells_a8(w, a, p0, p1, y, [&](const Cell& c, int r, int64_t t, int64_t g) {
    return group_a8(c, w.fmt.kind, r, a.q + t * a.k + g * a.group, a.scales[t * ng + g],
                    a.sums[t * ng + g]);
  });
}

void matmul_w4_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
                  float* y) {
  CHECK(w.fmt.is_w4());
  matmul_a8(w, a, p0, p1, y);
}

void matmul_w8_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
                  float* y) {
  CHECK(w.fmt.kind == PackedKind::kW8);
  matmul_a8(w, a, p0, p1, y);
}

void matmul_w6_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
                  float* y) {
  CHECK(w.fmt.kind == PackedKind::kW6);
  matmul_a8(w, a, p0, p1, y);
}

void matmul_q4k_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
                    float* y) {
  CHECK(w.fmt.kind == PackedKind::kQ4K);
  matmul_a16(w, x, n, p0, p1, y);
}

// Q4K (and Q5K: kind) with activations quantised per 256 (a.sums32: per 32): per
// super-block an int32 sum_j sc_j * dot_j and an int32 sum_j m_j * sums32_j, then two float
// terms, as the SIMD kernels do.
void matmul_q4k_q5k_a8(PackedKind kind, const PackedMatrixView& w, const QuantizedActivations& a,
                       int64_t p0, int64_t p1, float* y) {
  CHECK(w.fmt.kind == kind && a.sums32 != nullptr);
  const int64_t ng = w.k / 256;
  over_cells_a8(w, a, p0, p1, y, [&](const Cell& c, int r, int64_t t, int64_t g) {
    const int8_t* q = a.q + t * a.k + g * 256;
    const int16_t* s32 = a.sums32 + t * (a.k / 32) + g * 8;
    int32_t isum = 0, msum = 0;
    for (int j = 0; j < 8; ++j) {
      int32_t dot = 0;
      for (int kk = 32 * j; kk < 32 * j + 32; ++kk)
        dot += (kind == PackedKind::kQ4K ? c.q4k_code(r, kk) : c.q5k_code(r, kk)) * q[kk];
      isum += c.q4k_sc(j, r) * dot;
      msum += c.q4k_m(j, r) * s32[j];
    }
    const float sa = a.scales[t * ng + g];
    return static_cast<float>(isum) * (c.q4k_d(r) * sa) -
           static_cast<float>(msum) * (c.q4k_dmin(r) * sa);
  });
}

void matmul_q4k_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
                   float* y) {
  matmul_q4k_q5k_a8(PackedKind::kQ4K, w, a, p0, p1, y);
}

void matmul_q5k_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
                    float* y) {
  CHECK(w.fmt.kind == PackedKind::kQ5K);
  matmul_a16(w, x, n, p0, p1, y);
}

void matmul_q5k_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
                   float* y) {
  matmul_q4k_q5k_a8(PackedKind::kQ5K, w, a, p0, p1, y);
}

void matmul_q6k_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
                    float* y) {
  CHECK(w.fmt.kind == PackedKind::kQ6K);
  matmul_a16(w, x, n, p0, p1, y);
}

// Q6K with activations quantised per 256 (a.sums16: per 16): per super-block the int32
// sum_j sc_j * (dot_j - 32 * sums16_j), then one float term, as the SIMD kernels do.
void matmul_q6k_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
                   float* y) {
  CHECK(w.fmt.kind == PackedKind::kQ6K && a.sums16 != nullptr);
  const int64_t ng = w.k / 256;
  over_cells_a8(w, a, p0, p1, y, [&](const Cell& c, int r, int64_t t, int64_t g) {
    const int8_t* q = a.q + t * a.k + g * 256;
    const int16_t* s16 = a.sums16 + t * (a.k / 16) + g * 16;
    int32_t isum = 0;
    for (int j = 0; j < 16; ++j) {
      int32_t dot = 0;
      for (int kk = 16 * j; kk < 16 * j + 16; ++kk) dot += c.q6k_code(r, kk) * q[kk];
      isum += c.q6k_sc(j, r) * (dot - 32 * s16[j]);
    }
    return static_cast<float>(isum) * (c.q6k_d(r) * a.scales[t * ng + g]);
  });
}

void matmul_mxfp4_a16(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0, int64_t p1,
                      float* y) {
  CHECK(w.fmt.kind == PackedKind::kMxfp4);
  matmul_a16(w, x, n, p0, p1, y);
}

// Per block of 32: the int32 dot of the doubled values with the activation codes, then
// float(dot) * (2^(e - 128) * scale_a), as the SIMD kernels do.
void matmul_mxfp4_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0,
                     int64_t p1, float* y) {
  CHECK(w.fmt.kind == PackedKind::kMxfp4);
  matmul_a8(w, a, p0, p1, y);
}

void dequant_row(const PackedMatrixView& w, int64_t row, float* out) {
  check_view(w);
  CHECK(row >= 0 && row < w.n);
  const int64_t p = row / kPanelRows;
  const int r = static_cast<int>(row % kPanelRows);
  for (int64_t g = 0; g < w.k / w.fmt.group; ++g) {
    Cell c = cell_of(w, p, g);
    for (int kk = 0; kk < w.fmt.group; ++kk)
      out[g * w.fmt.group + kk] = weight(c, w.fmt.kind, r, kk);
  }
}

}  // namespace

const PackedKernels& reference_packed_kernels() {
  static const PackedKernels table = [] {
    PackedKernels t;
    t.name = "ref";
    t.quantize_act = quantize_act;
    t.matmul_w4_a16 = matmul_w4_a16;
    t.matmul_w4_a8 = matmul_w4_a8;
    t.matmul_w8_a16 = matmul_w8_a16;
    t.matmul_w8_a8 = matmul_w8_a8;
    t.matmul_w6_a16 = matmul_w6_a16;
    t.matmul_w6_a8 = matmul_w6_a8;
    t.matmul_q4k_a16 = matmul_q4k_a16;
    t.matmul_q4k_a8 = matmul_q4k_a8;
    t.matmul_q6k_a16 = matmul_q6k_a16;
    t.matmul_q6k_a8 = matmul_q6k_a8;
    t.matmul_q5k_a16 = matmul_q5k_a16;
    t.matmul_q5k_a8 = matmul_q5k_a8;
    t.dequant_row = dequant_row;
    t.matmul_mxfp4_a16 = matmul_mxfp4_a16;
    t.matmul_mxfp4_a8 = matmul_mxfp4_a8;
    return t;
  }();
  return table;
}

}  // namespace edge
