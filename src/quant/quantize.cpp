// Panel quantiser: scale search per (row, group), code packing via cell.h. The candidate
// fits, the hot loop, are in quant_fit.{h,cpp}.
#include "quant/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "core/check.h"
#include "core/half.h"
#include "core/parallel_ranges.h"
#include "quant/cell.h"
#include "quant/gguf_blocks.h"
#include "quant/mxfp4.h"
#include "quant/quant_fit.h"

namespace edge {

namespace {

// One (row, group) encoding: codes[G] plus fp16 scale (and min for asym).
struct GroupCode {
  uint16_t scale = 0;
  uint16_t min = 0;
  uint8_t codes[128];
};

using quant_fit::asym_code;
using quant_fit::asym_fit;
using quant_fit::Fit;
using quant_fit::sym_code;
using quant_fit::sym_fit;

// Candidate divisors t of the signed absmax m (s = m / t) of the symmetric search: two
// ranges around the extreme codes -half and half - 1.
struct SymRange {
  int half;  // codes -half .. half - 1 (stored with +half)
  float neg0, neg1, pos0, pos1, step;
};
constexpr SymRange kW4Range{8, -10.0f, -6.5f, 6.0f, 8.5f, 0.5f};
// 6 bits: a step of 1 (each candidate is refitted by least squares, which moves it off the
// grid), 12 candidates; repacking Q6_K runs this at load time.
constexpr SymRange kW6Range{32, -35.0f, -30.0f, 28.0f, 33.0f, 1.0f};

// Searches the scale; returns the fp16 bits of the best one (0 if none beats zero).
uint16_t search_sym(const float* x, int g, float m, ScaleSearch search, const SymRange& rg) {
  float best = 0;
  for (int i = 0; i < g; ++i) best += x[i] * x[i];  // scale 0: every weight 0
  uint16_t best_h = 0;
  auto consider = [&](float d) -> Fit {
    const uint16_t h = f32_to_f16(d);
    const float d16 = f16_to_f32(h);
    if (!std::isfinite(d16) || d16 == 0.0f) return Fit{};
    const Fit f = sym_fit(x, g, d16, rg.half);
    if (f.err < best) {
      best = f.err;
      best_h = h;
    }
    return f;
  };
  consider(m / static_cast<float>(-rg.half));
  if (search == ScaleSearch::kAbsmax) return best_h;
  for (int side = 0; side < 2; ++side) {
    const float t0 = side == 0 ? rg.neg0 : rg.pos0, t1 = side == 0 ? rg.neg1 : rg.pos1;
    for (float t = t0; t <= t1 + 1e-6f; t += rg.step) {
      const Fit f = consider(m / t);
      if (f.sqq > 0) consider(f.sxq / f.sqq);  // least-squares scale for these codes
    }
  }
  return best_h;
}

// W4 sym (rg = kW4Range) and W6 (kW6Range): codes stored with +half.
void encode_sym(const float* x, int g, ScaleSearch search, const SymRange& rg, GroupCode* out) {
  float m = 0.0f;
  for (int i = 0; i < g; ++i)
    if (std::fabs(x[i]) > std::fabs(m)) m = x[i];
  out->scale = m == 0.0f ? 0 : search_sym(x, g, m, search, rg);
  const float d = f16_to_f32(out->scale);
  if (d == 0.0f) {  // all zero (or nothing better than zero): code half = 0
    for (int i = 0; i < g; ++i) out->codes[i] = static_cast<uint8_t>(rg.half);
    return;
  }
  const float inv = 1.0f / d;
  for (int i = 0; i < g; ++i)
    out->codes[i] = static_cast<uint8_t>(sym_code(x[i], inv, rg.half) + rg.half);
}

void encode_w4_asym(const float* x, int g, ScaleSearch search, GroupCode* out) {
  float lo = x[0], hi = x[0], sx = 0;
  for (int i = 0; i < g; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sx += x[i];
  }
  out->min = f32_to_f16(lo);
  out->scale = 0;
  float best = 0;
  for (int i = 0; i < g; ++i) best += (x[i] - f16_to_f32(out->min)) * (x[i] - f16_to_f32(out->min));
  auto consider = [&](float s, float mn) -> Fit {
    const uint16_t hs = f32_to_f16(s), hm = f32_to_f16(mn);
    const float s16 = f16_to_f32(hs), m16 = f16_to_f32(hm);
    if (!std::isfinite(s16) || !std::isfinite(m16) || s16 <= 0.0f) return Fit{};
    const Fit f = asym_fit(x, g, s16, m16);
    if (f.err < best) {
      best = f.err;
      out->scale = hs;
      out->min = hm;
    }
    return f;
  };
  if (hi > lo) {
    consider((hi - lo) / 15.0f, lo);
    for (float dd = -1.0f; search == ScaleSearch::kRmse && dd <= 2.0f + 1e-6f; dd += 0.5f) {
      const Fit f = consider((hi - lo) / (15.0f + dd), lo);
      // Least squares for x ~ q s + mn with these codes (2x2 normal equations).
      const float det = static_cast<float>(g) * f.sqq - f.sq * f.sq;
      if (det > 0)
        consider((static_cast<float>(g) * f.sxq - f.sq * sx) / det, (f.sqq * sx - f.sq * f.sxq) / det);
    }
  }
  const float s = f16_to_f32(out->scale), mn = f16_to_f32(out->min);
  const float inv = s > 0.0f ? 1.0f / s : 0.0f;
  for (int i = 0; i < g; ++i)
    out->codes[i] = static_cast<uint8_t>(s > 0.0f ? asym_code(x[i], mn, inv) : 0);
}

void encode_w8(const float* x, int g, GroupCode* out, int8_t* codes) {
  float amax = 0.0f;
  for (int i = 0; i < g; ++i) amax = std::max(amax, std::fabs(x[i]));
  out->scale = amax > 0.0f ? f16_round_up(amax / 127.0f) : 0;
  const float s = f16_to_f32(out->scale);
  const float inv = s > 0.0f ? 1.0f / s : 0.0f;
  for (int i = 0; i < g; ++i)
    codes[i] = static_cast<int8_t>(std::clamp(static_cast<int>(std::lround(x[i] * inv)), -127, 127));
}

// Scales and mins are fp16: a weight beyond its range (or NaN / Inf) cannot be stored.
bool in_fp16_range(const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!(std::fabs(x[i]) <= 65504.0f)) return false;
  return true;
}

// MXFP4 rows: GGML's block rule (quant/mxfp4.h) per group of 32, so a packed file holds the
// codes llama.cpp's quantiser would write for the same floats. Any finite value fits (the
// scale is a power of two up to 2^127).
Status quantize_mxfp4_panel(int64_t k, const float* rows, int64_t valid_rows, uint8_t* dst) {
  const PackedFormat f{PackedKind::kMxfp4, 32};
  uint8_t code[32];
  for (int64_t r = 0; r < valid_rows; ++r) {
    const float* row = rows + r * k;
    for (int64_t i = 0; i < k; ++i)
      if (!std::isfinite(row[i]))
        return Status::invalid_argument("row has a non-finite value at column " +
                                        std::to_string(i));
    for (int64_t gi = 0; gi < k / 32; ++gi) {
      uint8_t* cell = dst + gi * f.group_bytes();
      mxfp4_encode_block(row + gi * 32, cell + cell::kMxfp4ExpOffset + r, code);
      cell::put_w4_row(cell, static_cast<int>(r), code, 32);
    }
  }
  return {};
}

}  // namespace

uint16_t f16_round_up(float s) {
  uint16_t h = f32_to_f16(s);
  if (f16_to_f32(h) < s && h < 0x7bff) ++h;  // positive: next representable value up
  return h;
}

Status quantize_panel(const PackedFormat& f, int64_t k, const float* rows, int64_t valid_rows,
                      uint8_t* dst, ScaleSearch search) {
  const int g = f.group;
  const int64_t cb = f.group_bytes();
  std::memset(dst, 0, static_cast<size_t>((k / g) * cb));
  if (f.kind == PackedKind::kMxfp4) return quantize_mxfp4_panel(k, rows, valid_rows, dst);
  GroupCode gc;
  int8_t c8[128];
  for (int64_t r = 0; r < valid_rows; ++r) {
    const float* row = rows + r * k;
    if (!in_fp16_range(row, k))
      return Status::invalid_argument("row has a non-finite value or one beyond the fp16 "
                                      "range of the scales (|x| > 65504)");
    for (int64_t gi = 0; gi < k / g; ++gi) {
      const float* x = row + gi * g;
      uint8_t* cell = dst + gi * cb;
      const int ri = static_cast<int>(r);
      if (f.kind == PackedKind::kW8) {
        encode_w8(x, g, &gc, c8);
        int sum = 0;
        for (int i = 0; i < g; ++i) {
          cell::set_w8_code(cell, ri, i, c8[i]);
          sum += c8[i];
        }
        cell::set_u16(cell + cell::sums_offset(f), ri, static_cast<uint16_t>(static_cast<int16_t>(sum)));
      } else if (f.kind == PackedKind::kW6) {
        encode_sym(x, g, search, kW6Range, &gc);
        for (int i = 0; i < g; ++i) cell::set_w6_code(cell, f.group, ri, i, gc.codes[i]);
      } else {
        if (f.kind == PackedKind::kW4Sym) encode_sym(x, g, search, kW4Range, &gc);
        else encode_w4_asym(x, g, search, &gc);
        for (int i = 0; i < g; ++i) cell::set_w4_code(cell, ri, i, gc.codes[i]);
        if (f.kind == PackedKind::kW4Asym) cell::set_u16(cell + cell::mins_offset(f), ri, gc.min);
      }
      cell::set_u16(cell + cell::scales_offset(f), ri, gc.scale);
    }
  }
  return {};
}

Status quantize_matrix(const PackedFormat& f, int64_t n, int64_t k, const RowSource& src,
                       uint8_t* dst, uint64_t dst_bytes, int threads, ScaleSearch search) {
  if (!is_valid_format(f) || k <= 0 || n <= 0 || k % f.group != 0)
    return Status::invalid_argument("cannot pack [" + std::to_string(n) + ", " +
                                    std::to_string(k) + "] as " + f.name());
  if (dst_bytes != static_cast<uint64_t>(f.matrix_bytes(n, k)))
    return Status::invalid_argument(f.name() + " [" + std::to_string(n) + ", " +
                                    std::to_string(k) + "] needs " +
                                    std::to_string(f.matrix_bytes(n, k)) + " bytes, given " +
                                    std::to_string(dst_bytes));
  const int64_t panels = PackedFormat::panels(n);
  const int64_t panel_bytes = (k / f.group) * f.group_bytes();
  return parallel_ranges(threads, panels, [&](int64_t p0, int64_t p1, int) -> Status {
    std::vector<float> buf(static_cast<size_t>(kPanelRows * k));  // the only transient
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t valid = std::min(kPanelRows, n - p * kPanelRows);
      Status st;
      for (int64_t r = 0; r < valid && st.ok(); ++r)
        st = src(p * kPanelRows + r, buf.data() + r * k);
      if (st.ok()) st = quantize_panel(f, k, buf.data(), valid, dst + p * panel_bytes, search);
      if (!st.ok()) return st.with_context("panel " + std::to_string(p));
    }
    return Status();
  });
}

void dequantize_row(const PackedFormat& f, const uint8_t* matrix, int64_t n, int64_t k,
                    int64_t row, float* out) {
  CHECK_MSG(row >= 0 && row < n && k % f.group == 0, "dequantize_row: bad row or shape");
  const int64_t p = row / kPanelRows;
  const int r = static_cast<int>(row % kPanelRows);
  const int g = f.group;
  for (int64_t gi = 0; gi < k / g; ++gi) {
    const uint8_t* cell = matrix + f.cell_offset(p, gi, k);
    if (f.kind == PackedKind::kQ4K || f.kind == PackedKind::kQ5K) {
      // GGML's order: (d * sc) * q - dmin * m; Q5K's per-row fields are Q4K's.
      const float d = f16_to_f32(cell::get_u16(cell + cell::kQ4KDOffset, r));
      const float dmin = f16_to_f32(cell::get_u16(cell + cell::kQ4KDminOffset, r));
      for (int i = 0; i < g; ++i) {
        const float sc = cell[cell::q4k_sc_byte(i / 32, r)], mn = cell[cell::q4k_m_byte(i / 32, r)];
        const int q = f.kind == PackedKind::kQ4K
                          ? cell::w4_code(cell + cell::kQ4KCodes, r, i)
                          : cell::q5k_code(cell::q5k_chunk(cell, i), r, i % 32);
        out[gi * g + i] = d * sc * static_cast<float>(q) - dmin * mn;
      }
      continue;
    }
    if (f.kind == PackedKind::kQ6K) {  // GGML's order: (d * sc) * (q - 32)
      const float d = f16_to_f32(cell::get_u16(cell + cell::kQ6KDOffset, r));
      for (int i = 0; i < g; ++i) {
        const float sc = static_cast<int8_t>(cell[cell::q6k_sc_byte(i / 16, r)]);
        out[gi * g + i] =
            d * sc *
            static_cast<float>(cell::w6_code(cell::q6k_chunk(cell, i), 16, r, i % 16) - 32);
      }
      continue;
    }
    if (f.kind == PackedKind::kMxfp4) {  // GGML's order: 2^(e - 128) * doubled value
      const float d = mxfp4_scale(cell[cell::kMxfp4ExpOffset + r]);
      for (int i = 0; i < g; ++i)
        out[gi * g + i] = d * static_cast<float>(kMxfp4Doubled[cell::w4_code(cell, r, i)]);
      continue;
    }
    const float s = cell::scale(f, cell, r);
    float* y = out + gi * g;
    if (f.kind == PackedKind::kW8) {
      for (int i = 0; i < g; ++i) y[i] = static_cast<float>(cell::w8_code(cell, r, i)) * s;
    } else if (f.kind == PackedKind::kW4Sym) {
      for (int i = 0; i < g; ++i) y[i] = static_cast<float>(cell::w4_code(cell, r, i) - 8) * s;
    } else if (f.kind == PackedKind::kW6) {
      for (int i = 0; i < g; ++i) y[i] = static_cast<float>(cell::w6_code(cell, g, r, i) - 32) * s;
    } else {
      const float mn = cell::min(f, cell, r);
      for (int i = 0; i < g; ++i) y[i] = static_cast<float>(cell::w4_code(cell, r, i)) * s + mn;
    }
  }
}

std::vector<float> dequantize_matrix(const PackedFormat& f, const uint8_t* matrix, int64_t n,
                                     int64_t k) {
  std::vector<float> out(static_cast<size_t>(n * k));
  for (int64_t r = 0; r < n; ++r) dequantize_row(f, matrix, n, k, r, out.data() + r * k);
  return out;
}

Expected<RowSource> tensor_row_source(const TensorView& t) {
  if (t.shape.size() != 2 && t.shape.size() != 3)
    return Status::invalid_argument("tensor '" + t.name + "' " + t.shape_string() +
                                    " is neither a matrix nor experts [E, N, K]");
  if (!gguf_type_decodable(t.dtype))
    return Status::unsupported("tensor '" + t.name + "' has type " + dtype_name(t.dtype) +
                               ", which cannot be dequantised");
  RETURN_IF_ERROR(check_tensor_bytes(t));
  const TensorView* view = &t;
  return RowSource([view](int64_t row, float* out) { return dequantize_tensor_row(*view, row, out); });
}

}  // namespace edge
